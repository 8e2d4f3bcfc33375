"""Pair-block training and the merge (train/pair_blocks.py, train/merge.py,
models/parts.py, models/model_stream.py): blocks cover every pair once and are
balanced; a block's classifiers are the full run's; merged parts are the
single run's file byte for byte, checksums and identity included; parts that do
not belong together, or are damaged, are refused."""
import os
import sys
import threading

import numpy as np
import pytest

from hsvm_cli.errors import ModelFormatError, ModelMismatchError
from hsvm_cli.io.container import read_container, write_container
from hsvm_cli.models.ovo import load_model, save_model
from hsvm_cli.models.parts import read_part, save_part
from hsvm_cli.models.provenance import recorded_command
from hsvm_cli.train.liblinear import train_pairs
from hsvm_cli.train.merge import merge_models
from hsvm_cli.train.ovo import read_training_file, train_ovo
from hsvm_cli.train.pair_blocks import block_bounds, pair_block, pair_costs, part_command, train_pair_block

from conftest import BUNDLED

DIGITS = str(BUNDLED / "digits" / "train.svm.gz")
SINGLE_ARGV = ["hsvm", "train-ovo", "digits.svm", "-c", "0.5", "--seed", "3", "-o", "out/model.hsvm"]


def part_argv(i, n):
    # --pairs, --jobs and --quiet wherever the user put them; output elsewhere
    return ["hsvm", "train-ovo", "digits.svm", "--pairs", "%d/%d" % (i, n), "-c", "0.5", "-j", "2",
            "--seed", "3", "-q", "-o", "parts/p%d.part" % i]


@pytest.fixture(scope="module")
def digits_data():
    return read_training_file(DIGITS)


@pytest.fixture(scope="module")
def single_model_bytes(digits_data, tmp_path_factory):
    X, y, sha = digits_data
    argv = sys.argv
    sys.argv = SINGLE_ARGV
    try:
        model = train_ovo(X, y, C=0.5, seed=3, train_path="digits.svm", train_sha256=sha)
    finally:
        sys.argv = argv
    path = tmp_path_factory.mktemp("single") / "model.hsvm"
    save_model(model, path)
    return path.read_bytes()


def write_parts(tmp_path, X, y, sha, n, *, argv=part_argv, **kw):
    kw.setdefault("C", 0.5)
    kw.setdefault("seed", 3)
    paths = []
    for i in range(n):
        part = train_pair_block(X, y, block=(i, n), train_path="digits.svm", train_sha256=sha,
                                argv=argv(i, n), **kw)
        path = tmp_path / ("p%d.part" % i)
        save_part(part, path)
        paths.append(str(path))
    return paths


# ------------------------------------------------------------------ partition

def nearest_cut_oracle(costs, n):
    """Cut i at the boundary p minimising |prefix(p) - i*T/N|, ties to the
    smaller p, by brute force in exact integers (|prefix*N - i*T|)."""
    prefix = [0]
    for c in costs:
        prefix.append(prefix[-1] + int(c))
    total = prefix[-1]
    return [min(range(len(prefix)), key=lambda p: (abs(prefix[p] * n - i * total), p)) for i in range(n + 1)]


def test_blocks_cover_every_pair_once_balanced_and_as_the_nearest_cut_oracle():
    rng = np.random.default_rng(0)
    for _ in range(60):
        K = int(rng.integers(2, 30))
        counts = rng.integers(1, 50, K)
        costs = pair_costs(counts)
        for n in (1, 2, 3, 7, int(rng.integers(1, len(costs) + 5))):
            bounds = block_bounds(costs, n)
            assert bounds.tolist() == nearest_cut_oracle(costs, n)
            assert bounds[0] == 0 and bounds[-1] == len(costs) and np.all(np.diff(bounds) >= 0)
            covered = np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in range(n)])
            assert covered.tolist() == list(range(len(costs)))
            block_cost = np.add.reduceat(np.append(costs, 0), bounds[:-1])[:n] * (np.diff(bounds) > 0)
            assert block_cost.max() <= costs.sum() / n + costs.max()
            assert np.array_equal(bounds, block_bounds(costs.copy(), n))  # deterministic


def test_pair_costs_are_rows_per_pair_capped_by_per_class():
    counts = [5, 1, 30, 12]
    assert pair_costs(counts).tolist() == [6, 35, 17, 31, 13, 42]
    assert pair_costs(counts, per_class=10).tolist() == [6, 15, 15, 11, 11, 20]
    with pytest.raises(ValueError):
        pair_costs([3])
    with pytest.raises(ValueError):
        block_bounds([1, 2], 0)


def test_blocks_of_equal_pairs_are_equal_sized():
    costs = pair_costs(np.full(21, 10))   # 210 pairs of equal cost
    for n in (2, 3, 5, 7, 10):
        assert set(np.diff(block_bounds(costs, n)).tolist()) <= {210 // n, -(-210 // n)}


def test_pair_block_takes_a_shard_spec():
    counts = np.full(10, 3)
    assert pair_block(counts, "1/3") == pair_block(counts, (1, 3)) == (15, 30)


def test_one_block_is_cut_as_all_blocks_are_whatever_their_number():
    # pair_block cuts only its own block: --pairs 0/4294967296 had made every
    # block's cut (32 GiB), and 0/2^63 - 1 overflowed the exact arithmetic
    rng = np.random.default_rng(1)
    for _ in range(40):
        counts = rng.integers(1, 60, int(rng.integers(2, 25)))
        costs = pair_costs(counts)
        for n in (1, 2, 3, 7, len(costs) - 1, len(costs), len(costs) + 3):
            bounds = block_bounds(costs, max(1, n))
            assert [pair_block(counts, (i, max(1, n))) for i in range(max(1, n))] == \
                [(int(bounds[i]), int(bounds[i + 1])) for i in range(max(1, n))]
    counts = np.full(10, 3)
    for n in (2**32, 2**63 - 1, 10**30):
        blocks = [pair_block(counts, (i, n)) for i in (0, 1, n // 2, n - 1)]
        assert all(0 <= a <= b <= min(a + 1, 45) for a, b in blocks) and blocks[0] == (0, 0)


# ------------------------------------------------------------------ training

@pytest.mark.parametrize("kw", [{}, {"bags": 2, "per_class": 60}])
def test_a_pair_subset_trains_bit_identical_classifiers(digits_data, kw):
    X, y, _ = digits_data
    Xn = X.astype(np.float64)
    full = train_pairs(Xn, y, C=0.5, seed=3, **kw)
    chosen = np.array([0, 7, 8, 30, 44])
    sub = train_pairs(Xn, y, C=0.5, seed=3, pairs=chosen, **kw)
    bags = full.bags
    rows = (chosen[:, None] * bags + np.arange(bags)).reshape(-1)
    assert np.array_equal(sub.pair_a, full.pair_a[chosen]) and np.array_equal(sub.pair_b, full.pair_b[chosen])
    assert sub.W.tobytes() == full.W[rows].tobytes() and sub.b.tobytes() == full.b[rows].tobytes()
    assert np.array_equal(sub.training.solver_seeds, full.training.solver_seeds[rows])
    assert np.array_equal(sub.training.counts, full.training.counts[rows])
    assert sub.params == full.params
    jobs2 = train_pairs(Xn, y, C=0.5, seed=3, pairs=chosen, jobs=2, **kw)
    assert jobs2.W.tobytes() == sub.W.tobytes()
    empty = train_pairs(Xn, y, C=0.5, seed=3, pairs=[], jobs=2, **kw)
    assert empty.W.shape == (0, X.shape[1])


@pytest.mark.parametrize("pairs", [[3, 2], [-1], [45], [[1, 2]], ["a"]])
def test_bad_pair_subsets_are_refused(digits_data, pairs):
    X, y, _ = digits_data
    with pytest.raises(ValueError):
        train_pairs(X, y, pairs=pairs)


# --------------------------------------------------------------------- merge

@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_merged_parts_are_the_single_run_file_byte_for_byte_in_any_order(digits_data, single_model_bytes,
                                                                         tmp_path, n):
    X, y, sha = digits_data
    paths = write_parts(tmp_path, X, y, sha, n)
    rng = np.random.default_rng(n)
    for trial in range(3):
        order = rng.permutation(n).tolist() if trial else list(range(n))
        out = tmp_path / ("merged%d.hsvm" % trial)
        report = merge_models([paths[k] for k in order], out, recorded_output="out/model.hsvm")
        assert out.read_bytes() == single_model_bytes
        assert report.n_pairs == 45 and report.n_parts == n
    model = load_model(out)
    assert model.provenance["command"] == recorded_command(SINGLE_ARGV)
    assert model.content_sha256() == report.content_sha256


def test_merge_with_bags_per_class_jobs_and_more_blocks_than_pairs(digits_data, tmp_path):
    X, y, sha = digits_data
    kw = dict(C=0.5, seed=3, bags=3, per_class=50)
    argv = sys.argv
    sys.argv = SINGLE_ARGV
    try:
        single = train_ovo(X, y, train_path="digits.svm", train_sha256=sha, **kw)
    finally:
        sys.argv = argv
    save_model(single, tmp_path / "single.hsvm")
    paths = write_parts(tmp_path, X, y, sha, 50, jobs=2, **kw)   # 45 pairs: some blocks are empty
    assert sum(read_part(p).pair_stop == read_part(p).pair_start for p in paths) == 5
    merge_models(paths, tmp_path / "merged.hsvm", recorded_output="out/model.hsvm")
    assert (tmp_path / "merged.hsvm").read_bytes() == (tmp_path / "single.hsvm").read_bytes()


def test_merge_to_a_pipe_gives_the_same_bytes(digits_data, single_model_bytes, tmp_path):
    X, y, sha = digits_data
    paths = write_parts(tmp_path, X, y, sha, 3)
    r, w = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(r, "rb").read()))
    reader.start()
    try:
        merge_models(paths, "/dev/fd/%d" % w, recorded_output="out/model.hsvm")
    finally:
        os.close(w)
        reader.join()
    assert got[0] == single_model_bytes


def test_merge_names_its_output_where_the_part_command_named_the_part(digits_data, tmp_path):
    X, y, sha = digits_data
    paths = write_parts(tmp_path, X, y, sha, 2)
    merge_models(paths, tmp_path / "m.hsvm")
    command = load_model(tmp_path / "m.hsvm").provenance["command"]
    assert command == "hsvm train-ovo digits.svm -c 0.5 --seed 3 -o %s" % (tmp_path / "m.hsvm")


def test_part_files_hold_their_block_and_what_must_match(digits_data, tmp_path):
    X, y, sha = digits_data
    paths = write_parts(tmp_path, X, y, sha, 3)
    c = read_container(paths[1], kind="hsvm-model-part", versions={1})
    part = c.meta["part"]
    assert (part["block"], part["blocks"], part["n_pairs"]) == (1, 3, 45)
    assert (part["pair_start"], part["pair_stop"]) == pair_block(np.unique(y, return_counts=True)[1], "1/3")
    assert c.meta["provenance"]["train_sha256"] == sha and c.meta["params"]["seed"] == 3
    assert c.arrays["W"].shape == ((part["pair_stop"] - part["pair_start"]), 64)
    with pytest.raises(ModelFormatError, match="an hsvm model-part file, not an hsvm model file"):
        load_model(paths[1])     # a part is never mistaken for a model


def test_parts_that_do_not_belong_together_are_refused(digits_data, tmp_path):
    X, y, sha = digits_data
    (tmp_path / "good").mkdir()
    good = write_parts(tmp_path / "good", X, y, sha, 3)

    def other(name, **kw):
        d = tmp_path / name
        d.mkdir()
        args = dict(kw)
        XX, yy, ss = args.pop("data", (X, y, sha))
        return write_parts(d, XX, yy, ss, 3, **args)

    cases = [
        (other("seed", seed=4), "different parameters (seed 3 vs 4)"),
        (other("C", C=1.0), "different parameters (C 0.5 vs 1.0)"),
        (other("sha", data=(X, y, "0" * 64)), "different training input digest (train_sha256) ("),
        (other("sha2", data=(X, y, "1" * 64)),
         "the same data compressed and uncompressed, or compressed otherwise, differ"),
        (other("bags", bags=2), "different parameters (bags 1 vs 2)"),
        # a parameter not given, in a user's words: it had been Python's None
        (other("per_class", per_class=60), "different parameters (per_class (not given) vs 60)"),
        # the first differing entry of a long record, not both cut short at its start
        (other("weights", class_weight={int(c): 1.0 if c != 7 else 0.25 for c in np.unique(y)}),
         "different parameters (class_weight (none) vs given (7: 0.25))"),
    ]
    for others, words in cases:
        with pytest.raises(ModelMismatchError) as info:
            merge_models([good[0], others[1], good[2]], tmp_path / "m.hsvm")
        assert words in str(info.value) and "are not parts of one model" in str(info.value)
    weights = {int(c): 1.0 for c in np.unique(y)}
    heavy = write_parts(tmp_path / "weights", X, y, sha, 3, class_weight=weights)
    (tmp_path / "lighter").mkdir()
    lighter = write_parts(tmp_path / "lighter", X, y, sha, 3, class_weight={**weights, 7: 0.25})
    with pytest.raises(ModelMismatchError) as info:
        merge_models([heavy[0], lighter[1], heavy[2]], tmp_path / "m.hsvm")
    assert "different parameters (class_weight['weights'][6] [7, 1.0] vs [7, 0.25])" in str(info.value)
    keep = y != y.max()
    fewer = other("classes", data=(X[keep], y[keep], sha))
    with pytest.raises(ModelMismatchError, match="different classes"):
        merge_models([good[0], fewer[1]], tmp_path / "m.hsvm")
    with pytest.raises(ModelMismatchError, match=r"pairs \d+\.\.\d+ of 45 are in no part \(missing block 1/3\)"):
        merge_models([good[0], good[2]], tmp_path / "m.hsvm")
    with pytest.raises(ModelMismatchError, match="both hold pairs"):
        merge_models(good + [good[1]], tmp_path / "m.hsvm")
    assert not (tmp_path / "m.hsvm").exists()
    with pytest.raises(ValueError, match="no model parts"):
        merge_models([], tmp_path / "m.hsvm")


def test_a_failed_merge_leaves_an_existing_output_untouched(digits_data, tmp_path):
    X, y, sha = digits_data
    paths = write_parts(tmp_path, X, y, sha, 2)
    out = tmp_path / "m.hsvm"
    out.write_bytes(b"old")
    with pytest.raises(ModelMismatchError):
        merge_models(paths[:1], out)
    assert out.read_bytes() == b"old"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_a_model_file_or_a_damaged_part_is_not_a_part(digits_data, single_model_bytes, tmp_path):
    X, y, sha = digits_data
    model = tmp_path / "model.hsvm"
    model.write_bytes(single_model_bytes)
    with pytest.raises(ModelFormatError, match="an hsvm model file, not an hsvm model-part file"):
        merge_models([model], tmp_path / "m.hsvm")
    paths = write_parts(tmp_path, X, y, sha, 2)
    c = read_container(paths[0], kind="hsvm-model-part", versions={1})
    meta = dict(c.meta, part=dict(c.meta["part"], pair_stop=c.meta["part"]["pair_stop"] + 1))
    write_container(tmp_path / "bad.part", {k: np.array(v) for k, v in c.arrays.items()},
                    kind="hsvm-model-part", version=1, meta=meta)
    with pytest.raises(ModelFormatError, match="pairs are not the canonical pairs"):
        merge_models([tmp_path / "bad.part", paths[1]], tmp_path / "m.hsvm")


# ------------------------------------------------------- recorded commands

@pytest.mark.parametrize("argv, command, output", [
    (["hsvm", "train-ovo", "t.svm", "--pairs", "1/3", "-o", "p1"], "hsvm train-ovo t.svm -o p1", "p1"),
    (["/usr/bin/hsvm", "train-ovo", "t.svm", "--pairs=1/3", "--output=p 1", "-j", "4"],
     "hsvm train-ovo t.svm --output='p 1'", "p 1"),
    (["hsvm", "train-ovo", "my data.svm", "-o", "it's", "HSVM_OUTPUT_MARK"],
     "hsvm train-ovo 'my data.svm' -o 'it'\"'\"'s' HSVM_OUTPUT_MARK", "it's"),
    (["hsvm", "train-ovo", "-op 1", "t.svm"], "hsvm train-ovo -o'p 1' t.svm", "p 1"),
    (["hsvm", "train-ovo", "-op1", "--dask", "local:2", "t.svm", "--quiet"], "hsvm train-ovo -op1 t.svm", "p1"),
    (["hsvm", "train-ovo", "t.svm", "--output", "x", "-c", "1"], "hsvm train-ovo t.svm --output x -c 1", "x"),
    (["pytest", "-o", "x", "tests"], "pytest -o x tests", None),
])
def test_part_command_drops_split_options_and_locates_the_output(argv, command, output):
    # the output located as quoted in the command, which a shell splits back
    # into the arguments kept
    import shlex
    got, span = part_command(argv)
    assert got == command
    if output is None:
        assert span is None
    else:
        assert got[span[0]:span[1]] == shlex.quote(output)
        assert output in shlex.split(got) or any(w.endswith(output) for w in shlex.split(got))


# ------------------------------------------- models larger than one block

def synthetic_model(K, d, bags=1, seed=0):
    from hsvm_cli.models.ovo import OvoModel
    from hsvm_cli.models.pairs import canonical_pairs
    pa, pb = canonical_pairs(K)
    rng = np.random.default_rng(seed)
    P = pa.shape[0] * bags
    return OvoModel(classes=np.arange(10, 10 + 3 * K, 3, dtype=np.int64), pair_a=pa, pair_b=pb,
                    W=rng.standard_normal((P, d), dtype=np.float32), b=rng.standard_normal(P, dtype=np.float32),
                    bags=bags, normalize="l2", params={"seed": seed, "C": 1.0},
                    provenance={"command": "synthetic", "train_sha256": "f" * 64, "hsvm_version": "x"})


def synthetic_parts(model, n, tmp_path):
    from hsvm_cli.io.shard import Shard
    from hsvm_cli.models.ovo import OvoModel
    from hsvm_cli.models.parts import ModelPart
    bounds = block_bounds(pair_costs(np.full(model.n_classes, 7)), n)
    B = model.bags
    paths = []
    for i in range(n):
        s, e = int(bounds[i]), int(bounds[i + 1])
        m = OvoModel(classes=model.classes, pair_a=model.pair_a[s:e], pair_b=model.pair_b[s:e],
                     W=model.W[s * B:e * B], b=model.b[s * B:e * B], bags=B, normalize=model.normalize,
                     params=model.params, provenance=model.provenance)
        path = tmp_path / ("syn%d.part" % i)
        save_part(ModelPart(model=m, block=Shard(i, n), pair_start=s, pair_stop=e, n_pairs=model.n_pairs), path)
        paths.append(path)
    return paths


def test_a_merge_across_many_checksum_blocks_gives_save_models_bytes_and_identity(tmp_path):
    # 30 classes x 2 bags x 10,000 features: W is 34.8 MB, three 16 MiB blocks,
    # whose boundaries fall inside parts and pieces
    model = synthetic_model(30, 10000, bags=2)
    save_model(model, tmp_path / "single.hsvm")
    paths = synthetic_parts(model, 3, tmp_path)
    report = merge_models(paths[::-1], tmp_path / "merged.hsvm")
    assert (tmp_path / "merged.hsvm").read_bytes() == (tmp_path / "single.hsvm").read_bytes()
    merged = load_model(tmp_path / "merged.hsvm")
    assert len(merged.container.digests["W"]) == 3
    assert report.content_sha256 == merged.content_sha256() == model.content_sha256()
    assert report.bytes_written == (tmp_path / "single.hsvm").stat().st_size


def test_a_damaged_part_is_refused_and_nothing_is_written(tmp_path):
    model = synthetic_model(30, 5000)
    paths = synthetic_parts(model, 2, tmp_path)
    data = bytearray(paths[1].read_bytes())
    data[-5000] ^= 0x10            # a bit of W's last block
    paths[1].write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="syn1.part: array 'W' is corrupt: checksum mismatch"):
        merge_models(paths, tmp_path / "m.hsvm")
    assert not (tmp_path / "m.hsvm").exists()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_a_part_with_non_canonical_pairs_cannot_be_saved(digits_data, tmp_path):
    X, y, sha = digits_data
    part = train_pair_block(X, y, block="1/3", C=0.5, seed=3, argv=part_argv(1, 3))
    part.pair_start += 1
    with pytest.raises(ModelFormatError, match="not the canonical pairs"):
        save_part(part, tmp_path / "p.part")
    part.pair_start -= 1
    with pytest.raises(ModelFormatError, match="expected every pair once"):
        save_model(part.model, tmp_path / "m.hsvm")   # an incomplete model is no model


def test_a_block_trained_with_an_empty_argv_records_the_program_alone(digits_data):
    X, y = digits_data[:2]
    part = train_pair_block(X, y, block="0/3", argv=[])
    assert part.model.provenance["command"] == "hsvm"
