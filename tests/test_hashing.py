import numpy as np
import pytest
from click.testing import CliRunner

from hsvm_cli.cli.main import cli
from hsvm_cli.errors import ModelFormatError, ModelMismatchError
from hsvm_cli.gaussian import standard_normal
from hsvm_cli.hamming import hamming_distances
from hsvm_cli.hashmodel import (classifier_angles, hash_model, load_hash_model, pack_signs,
                                projection_matrix, save_hash_model, thresholds)
from hsvm_cli.hashpredict import HashFilter, HashPredictor
from hsvm_cli.model import save_model
from hsvm_cli.predict import predict_exact, prepare
from hsvm_cli.ranking import rank_classes, top_classes

from conftest import BUNDLED, shared_set


def test_gaussian_stream_is_pinned_by_its_own_code():
    # These values pin the generator: a change here changes every hash model's
    # projection and must come with a new generator name.
    g = standard_normal(4, seed=1)
    assert g.tolist() == standard_normal(4, seed=1).tolist()
    np.testing.assert_allclose(g, [-0.46300023, -0.66207632, -2.00472946, -0.56719959], atol=1e-8)


def test_gaussian_stream_prefixes_agree_and_moments_are_normal():
    long = standard_normal(200_000, seed=7)
    assert np.array_equal(standard_normal(1001, seed=7), long[:1001])
    assert abs(long.mean()) < 0.01 and abs(long.std() - 1) < 0.01
    assert abs(np.mean(long ** 4) - 3) < 0.05
    assert not np.array_equal(standard_normal(10, seed=8), long[:10])


def test_projection_prefix_rows_are_the_shorter_projection():
    assert np.array_equal(projection_matrix(128, 5, seed=3)[:64], projection_matrix(64, 5, seed=3))


def test_pack_signs_bit_layout_is_little_endian_words():
    v = -np.ones((1, 128))
    v[0, [0, 63, 64, 127]] = 1.0
    c = pack_signs(v)
    assert c.dtype == np.uint64 and c.shape == (1, 2)
    assert c[0, 0] == (1 | (1 << 63)) and c[0, 1] == (1 | (1 << 63))


def test_angles_are_clamped_for_constant_classifiers():
    W = np.array([[3.0, 4.0], [3.0, 4.0], [3.0, 4.0], [3.0, 4.0], [0.0, 0.0], [0.0, 0.0]], np.float32)
    b = np.array([0.0, 5.0, 7.0, -6.0, 1.0, -1.0], np.float32)
    th = classifier_angles(W, b)
    assert th[0] == pytest.approx(0.5)
    assert th[1:].tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]
    thr = thresholds(th, 256)
    assert thr.tolist() == [128, 257, 257, 0, 257, 0]


def test_threshold_implements_strict_range_query():
    th = np.array([0.3, 0.25], np.float32)
    # d_H < rho: with rho = 76.8 distances up to 76 are positive; with rho = 64 up to 63.
    assert thresholds(th, 256).tolist() == [77, 64]


@pytest.fixture(scope="module")
def reuters():
    from hsvm_cli.svmlight import load_svmlight
    from hsvm_cli.trainer import train_model
    root = shared_set("reuters-r52")
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=11698)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=11698)
    return train_model(X, y, C=1.0, seed=1), Xt, yt


def _trained(request, name):
    return request.getfixturevalue(name)


@pytest.mark.parametrize("name", ["omniglot", "reuters"])
def test_hash_classifier_agrees_with_exact_more_as_bits_grow(request, name):
    model, Xt, _ = _trained(request, name)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(model.n_classifiers, min(400, model.n_classifiers), replace=False))
    Xn = prepare("l2", Xt[:600])
    exact = (np.asarray(Xn @ model.W[rows].T) + model.b[rows]) > 0
    h = hash_model(model, bits=4096, seed=5)
    xcodes = HashFilter(h, bits=4096).hash_samples(Xn)
    agreement = []
    for bits in (256, 1024, 4096):
        d = hamming_distances(xcodes, np.ascontiguousarray(h.codes[rows]), bits=bits)
        agreement.append(float(((d < thresholds(h.theta[rows], bits)) == exact).mean()))
    assert agreement[0] < agreement[1] < agreement[2]
    assert agreement[0] >= 0.78 and agreement[1] >= 0.88 and agreement[2] >= 0.94, agreement


@pytest.mark.parametrize("name, k", [("omniglot", 24), ("reuters", 5)])
def test_filter_and_refine_keeps_exact_accuracy(request, name, k):
    model, Xt, yt = _trained(request, name)
    exact = predict_exact(model, Xt)[0]
    h = hash_model(model, bits=1024, seed=1)
    hp = HashPredictor(model, h, bits=1024, filter_k=k)
    block = hp.predict_block(Xt, y=yt)
    acc_exact = float((exact == yt).mean())
    acc_hash = float((block.labels == yt).mean())
    hf = hp.filter
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xt)))
    survives = float(np.mean((model.classes[top_classes(v, m, k)] == exact[:, None]).any(axis=1)))
    print("%s: exact %.4f, filter-and-refine %.4f, exact label survives the filter %.4f"
          % (name, acc_exact, acc_hash, survives))
    assert acc_hash >= acc_exact - 0.005, (acc_hash, acc_exact)
    assert survives >= 0.9


def test_filter_keeping_every_class_equals_exact_prediction(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    hp = HashPredictor(digits_model, h, bits=128, filter_k=digits_model.n_classes)
    assert np.array_equal(hp.predict_block(Xt).labels, predict_exact(digits_model, Xt)[0])


def test_refine_among_all_classes_by_the_sampled_product_equals_exact(digits_model, digits):
    from hsvm_cli.refine import PairLookup, refine_votes
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    K = digits_model.n_classes
    kept = np.tile(np.arange(K, dtype=np.int32)[::-1], (Xt.shape[0], 1))
    lookup = PairLookup(digits_model.pair_a, digits_model.pair_b, K)
    import scipy.sparse as sp
    for X in (np.asarray(Xn), sp.csr_matrix(Xn)):
        v, c = refine_votes(digits_model, X, kept, lookup=lookup, threads=2)
        _, ev, ec = predict_exact(digits_model, Xt)
        assert np.array_equal(v, ev)
        assert np.allclose(c, ec, atol=1e-4)


def test_filter_k1_is_the_pure_hash_classifier(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=512, seed=0)
    hp = HashPredictor(digits_model, h, bits=512, filter_k=1)
    hf = HashFilter(h, bits=512)
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xt)))
    assert np.array_equal(hp.predict_block(Xt).labels, digits_model.classes[rank_classes(v, m)[:, 0]])


def test_hash_model_file_round_trip_and_size(digits_model, tmp_path):
    h = hash_model(digits_model, bits=256, seed=4)
    p = tmp_path / "m.hbm"
    save_hash_model(h, p)
    g = load_hash_model(p)
    assert np.array_equal(g.codes, h.codes) and np.array_equal(g.theta, h.theta)
    assert g.bits == 256 and g.seed == 4 and g.model_sha256 == digits_model.content_sha256()
    per_classifier = (p.stat().st_size - 2048) / h.codes.shape[0]
    assert per_classifier <= 256 / 8 + 8


def test_hash_model_refuses_a_different_exact_model(digits_model, digits, tmp_path):
    from hsvm_cli.trainer import train_model
    X, y, _, _ = digits
    other = train_model(X, y, C=0.5, seed=0)
    h = hash_model(digits_model, bits=128, seed=0)
    with pytest.raises(ModelMismatchError):
        HashPredictor(other, h, filter_k=3)


def test_bits_must_be_a_multiple_of_64_within_the_hashed_length(digits_model):
    h = hash_model(digits_model, bits=256, seed=0)
    for bad in (100, 320, 0):
        with pytest.raises(ValueError, match="multiple of 64"):
            HashFilter(h, bits=bad)


def test_stored_projection_equals_derived_projection(digits_model):
    a = hash_model(digits_model, bits=128, seed=2, store_projection=True)
    b = hash_model(digits_model, bits=128, seed=2)
    assert np.array_equal(a.projection(64), b.projection(64))


def _run(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def digits_files(digits_model, tmp_path_factory):
    d = tmp_path_factory.mktemp("hcli")
    model = d / "d.hsvm"
    save_model(digits_model, model)
    hbm = d / "d.hbm"
    r = _run(["hash-model", "-m", str(model), "--bits", "512", "--seed", "3", "-o", str(hbm), "-q"])
    assert r.exit_code == 0, r.output
    return str(model), str(hbm), d


TEST = str(BUNDLED / "digits" / "test.svm.gz")


def test_cli_hashed_prediction_with_k_equal_K_matches_exact(digits_files):
    model, hbm, _ = digits_files
    exact = _run(["predict", "--exact", "-m", model, TEST, "-q"]).stdout
    hashed = _run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "10", TEST, "-q"]).stdout
    assert hashed == exact


def test_cli_codes_file_gives_the_same_predictions_as_hashing_on_the_fly(digits_files):
    model, hbm, d = digits_files
    codes = str(d / "t.codes")
    assert _run(["hash-data", "-H", hbm, TEST, "-o", codes]).exit_code == 0
    a = _run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", TEST, "-q"]).stdout
    b = _run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", "--codes", codes, TEST, "-q"]).stdout
    c = _run(["predict", "-m", model, "-H", hbm, "--bits", "256", "--no-refine", "--codes", codes, "-q"]).stdout
    d1 = _run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "1", TEST, "-q"]).stdout
    assert a == b and c == d1 and len(a.splitlines()) == 450


def test_cli_hash_data_svm_format_writes_plus_minus_one_bits(digits_files):
    _, hbm, _ = digits_files
    r = _run(["hash-data", "-H", hbm, "--bits", "64", "--format", "svm", TEST])
    first = r.stdout.splitlines()[0].split()
    assert len(first) == 65 and first[1].startswith("1:") and all(t.split(":")[1] in ("1", "-1") for t in first[1:])


def test_cli_hashed_timings_report_phases_and_refined_classes(digits_files):
    model, hbm, _ = digits_files
    r = _run(["predict", "-m", model, "-H", hbm, "-k", "4", TEST, "--timings", "-q"])
    import json
    t = json.loads(r.stderr.strip().splitlines()[-1])
    assert {"hash", "filter", "refine", "parse"} <= set(t) and t["mean_refined_classes"] == 4


def test_cli_rejects_bits_beyond_the_hash_model(digits_files):
    model, hbm, _ = digits_files
    r = _run(["predict", "-m", model, "-H", hbm, "--bits", "1024", TEST])
    assert r.exit_code == 2 and "multiple of 64" in r.stderr


def test_cli_refuses_mismatched_model_and_hash_model(digits_files, tmp_path):
    model, hbm, _ = digits_files
    other = tmp_path / "o.hsvm"
    assert _run(["train-ovo", str(BUNDLED / "digits" / "train.svm.gz"), "-c", "0.3", "-o", str(other), "-q"]).exit_code == 0
    r = _run(["predict", "-m", str(other), "-H", hbm, TEST])
    assert r.exit_code == 65 and "was made from another model" in r.stderr


def test_damaged_hash_model_is_refused(digits_files, tmp_path):
    _, hbm, _ = digits_files
    bad = tmp_path / "bad.hbm"
    bad.write_bytes(open(hbm, "rb").read()[:-8])
    with pytest.raises(ModelFormatError):
        load_hash_model(bad)


@pytest.mark.parametrize("d", [1, 7, 8, 64, 785])
def test_refine_product_is_bit_identical_on_every_path_and_matches_float64(d):
    from hsvm_cli.refine import sddmm
    rng = np.random.default_rng(d)
    X = rng.standard_normal((20, d)).astype(np.float32)
    W = rng.standard_normal((30, d)).astype(np.float32)
    bias = rng.standard_normal(30).astype(np.float32)
    cx = rng.integers(0, 20, 500)
    cw = np.sort(rng.integers(0, 30, 500))
    ref = np.einsum("ij,ij->i", X[cx].astype(np.float64), W[cw].astype(np.float64)) + bias[cw]
    from hsvm_cli.hamming import available_kernels
    paths = ["portable"] + [k for k in ("avx2",) if k in available_kernels()]
    outs = [sddmm(X, W, bias, cx, cw, kernel=k, threads=t) for k in paths for t in (1, 3)]
    for o in outs[1:]:
        assert o.tobytes() == outs[0].tobytes()
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)


def test_refine_sub_blocks_give_the_same_result_as_one_block(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    hp = HashPredictor(digits_model, h, bits=256, filter_k=4)
    whole = hp.predict_block(Xt)
    hp.MAX_CELLS = 6 * 64  # forces sub-blocks of 64 rows
    split = hp.predict_block(Xt)
    assert np.array_equal(whole.labels, split.labels) and np.array_equal(whole.votes, split.votes)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_hash_and_vote_per_thread_equals_hashing_then_voting(digits_model, digits, threads):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    hf = HashFilter(h, bits=192, threads=threads)
    Xn = prepare("l2", Xt)
    v1, m1 = hf.votes(hf.hash_samples(Xn))
    v2, m2 = hf.hash_and_vote(Xn)
    assert np.array_equal(v1, v2) and np.array_equal(m1, m2)


@pytest.mark.parametrize("sparse", [False, True])
def test_codes_do_not_depend_on_the_projection_summation_order(sparse):
    import scipy.sparse as sp
    from hsvm_cli.signs import SignProjector
    rng = np.random.default_rng(3)
    d, D, n = 300, 128, 64
    R = projection_matrix(D, d, seed=9)
    X = rng.standard_normal((n, d))
    support = np.ones(d)
    if sparse:
        support[::3] = 0.0
    X *= support
    # Make many entries land within float32 rounding of zero: remove the
    # component along r_j (on the sample's support) from sample j.
    Rd = R.astype(np.float64)
    for i in range(n // 2):
        r = Rd[i % D] * support
        X[i] -= (X[i] @ r) / (r @ r) * r
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    Xin = sp.csr_matrix(X) if sparse else X
    exact = np.sign(X.astype(np.float64) @ Rd.T)
    p = SignProjector(R)
    orders = [X @ R.T,                                    # BLAS
              X[:, ::-1] @ R[:, ::-1].T,                  # reversed order
              sum(X[:, s:s + 7] @ R[:, s:s + 7].T for s in range(0, d, 7)).astype(np.float32)]  # blocked
    codes = [pack_signs(p.fix_signs(Xin, q)) for q in orders]
    assert all(np.array_equal(c, codes[0]) for c in codes[1:])
    assert np.array_equal(codes[0], pack_signs(exact))
    # The constructed near-zero entries are ones float32 gets wrong: without the
    # fix some order disagrees with the exact signs.
    assert any(not np.array_equal(pack_signs(q), pack_signs(exact)) for q in orders)
