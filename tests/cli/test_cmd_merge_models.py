"""train-ovo --pairs i/N and merge-models: the parts of a run, merged, are the
file a single train-ovo run writes byte for byte (through the real `hsvm`
command, whose recorded command line is part of the file); parts that do not
make up one model are refused with one line and nothing written."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DIGITS_TRAIN, run

HSVM = str(Path(sys.executable).parent / "hsvm")


def hsvm(*args, cwd):
    res = subprocess.run([HSVM, *map(str, args)], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    return res


@pytest.mark.parametrize("weights", [[], ["-w", "2:3", "-w", "9:0.25"]])
def test_merged_parts_are_the_single_run_file_byte_for_byte(tmp_path, weights):
    single, blocks = tmp_path / "single", tmp_path / "blocks"
    for d in (single, blocks):
        d.mkdir()
        shutil.copy(DIGITS_TRAIN, d / "train.svm.gz")
    hsvm("train-ovo", "train.svm.gz", "-c", "0.5", "--seed", "3", "--bags", "2", "--per-class", "90", *weights,
         "-o", "model.hsvm", cwd=single)
    # --pairs, --jobs and --quiet in the spellings click accepts, anywhere
    spellings = [(["--pairs", "0/3"], ["-j2"]), (["--pairs=1/3", "--jobs=2"], ["-q"]),
                 (["-q"], ["--jobs", "1", "--pairs", "2/3"])]
    logs = []
    for i, (before, after) in enumerate(spellings):
        res = hsvm("train-ovo", *before, "train.svm.gz", *after, "-c", "0.5", "--seed", "3", "--bags", "2",
                   "--per-class", "90", *weights, "-o", "part.%d" % i, cwd=blocks)
        logs.append(res.stderr)
    assert logs[0].splitlines()[0].startswith("hsvm: train-ovo: block 0/3: pairs 0..")
    assert logs[0].splitlines()[-1].startswith("hsvm: train-ovo: block 0/3: ") and "-> part.0" in logs[0]
    assert logs[1] == ""
    res = hsvm("merge-models", "part.2", "part.0", "part.1", "-o", "model.hsvm", cwd=blocks)
    assert res.stderr.startswith("hsvm: merge-models: 3 parts, 45 pairs, 90 classifiers -> model.hsvm")
    assert (blocks / "model.hsvm").read_bytes() == (single / "model.hsvm").read_bytes()


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    d = tmp_path_factory.mktemp("parts")
    out = {}
    for seed in (3, 4):
        for i in range(3):
            p = d / ("s%d.part.%d" % (seed, i))
            run(["train-ovo", DIGITS_TRAIN, "--pairs", "%d/3" % i, "--seed", seed, "-q", "-o", p])
            out[seed, i] = str(p)
    return out


def test_a_missing_block_is_named_and_nothing_written(parts, tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["merge-models", parts[3, 0], parts[3, 2], "-o", out], exit_code=65)
    assert r.stderr.startswith("hsvm: pairs ") and r.stderr.endswith(" of 45 are in no part (missing block 1/3)\n")
    assert not out.exists()


def test_parts_of_another_seed_or_a_doubled_block_are_refused(parts, tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["merge-models", parts[3, 0], parts[4, 1], parts[3, 2], "-o", out], exit_code=65)
    assert r.stderr == "hsvm: %s and %s are not parts of one model: different parameters (seed 3 vs 4)\n" % (
        parts[3, 0], parts[4, 1])
    r = run(["merge-models", parts[3, 0], parts[3, 1], parts[3, 1], parts[3, 2], "-o", out], exit_code=65)
    assert "both hold pairs" in r.stderr
    assert not out.exists()


def test_a_model_or_a_missing_file_is_not_a_part(parts, tmp_path, digits_model_file):
    r = run(["merge-models", str(digits_model_file), "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr == "hsvm: %s: an hsvm model file, not an hsvm model-part file\n" % digits_model_file
    r = run(["merge-models", str(tmp_path / "nope"), "-o", tmp_path / "m.hsvm"], exit_code=66)
    assert r.stderr == "hsvm: %s: no such file\n" % (tmp_path / "nope")


def test_pairs_and_dask_are_exclusive_and_checked(tmp_path):
    r = run(["train-ovo", DIGITS_TRAIN, "--pairs", "0/2", "--dask", "local:2", "-o", tmp_path / "x"], exit_code=2)
    assert "--pairs and --dask are exclusive" in r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "--pairs", "2/2", "-o", tmp_path / "x"], exit_code=2)
    assert "shards count from 0" in r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "--dask", "local:0", "-o", tmp_path / "x"], exit_code=2)
    assert r.stderr == ("hsvm train-ovo: --dask local:N needs a positive worker count, not 'local:0' "
                        "(see 'hsvm train-ovo --help')\n")
    assert not (tmp_path / "x").exists()


def test_an_empty_block_given_twice_missing_or_from_another_split_is_refused(tmp_path):
    # 45 pairs in 50 blocks leave some blocks empty: the pairs are covered
    # whatever happens to those, but the split must still add up
    from conftest import DIGITS_TRAIN, run
    parts = [str(tmp_path / ("q%d.part" % i)) for i in range(50)]
    for i, p in enumerate(parts):
        run(["train-ovo", DIGITS_TRAIN, "--pairs", "%d/50" % i, "-q", "-o", p])
    from hsvm_cli.models.parts import read_part
    empty = next(p for p in parts if read_part(p).pair_start == read_part(p).pair_stop)
    i = parts.index(empty)
    r = run(["merge-models"] + parts + [empty, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert "block %d/50 is given twice" % i in r.stderr
    r = run(["merge-models"] + [p for p in parts if p != empty] + ["-o", tmp_path / "m.hsvm"], exit_code=65)
    assert "missing block %d/50 of the split" % i in r.stderr
    thirds = [str(tmp_path / ("r%d.part" % i)) for i in range(3)]
    for i, p in enumerate(thirds):
        run(["train-ovo", DIGITS_TRAIN, "--pairs", "%d/3" % i, "-q", "-o", p])
    r = run(["merge-models"] + thirds + [empty, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert "splits into different numbers of blocks (%s (block 0/3), %s (block %d/50))" % (thirds[0], empty, parts.index(empty)) \
        in r.stderr
    # a part of another split that overlaps: the split is named, not the pairs it doubles
    r = run(["merge-models"] + thirds + [parts[9], "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert "splits into different numbers of blocks (%s (block 0/3), %s (block 9/50))" % (thirds[0], parts[9]) \
        in r.stderr
    assert not (tmp_path / "m.hsvm").exists()
    run(["merge-models"] + parts + ["-o", tmp_path / "m.hsvm", "-q"])
    run(["merge-models"] + thirds + ["-o", tmp_path / "t.hsvm", "-q"])
    assert (tmp_path / "m.hsvm").read_bytes() == (tmp_path / "t.hsvm").read_bytes()
