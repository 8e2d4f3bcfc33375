import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.hashing.angles import thresholds
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.ovo import OvoModel
from hsvm_cli.models.pairs import PairLookup
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import rank_classes, top_classes
from hsvm_cli.predict.refine import refine_decisions, sddmm
from hsvm_cli.preprocess import prepare

from conftest import DIGITS_TEST, shared_set


@pytest.fixture(scope="module")
def reuters():
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.train.ovo import train_ovo
    root = shared_set("reuters-r52")
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=11698)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=11698)
    return train_ovo(X, y, C=1.0, seed=1), Xt, yt


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
    exact = Predictor(model).predict(Xt)
    h = hash_model(model, bits=1024, seed=1)
    hp = Predictor(model, h, bits=1024, filter_k=k)
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
    hp = Predictor(digits_model, h, bits=128, filter_k=digits_model.n_classes)
    assert np.array_equal(hp.predict_block(Xt).labels, Predictor(digits_model).predict(Xt))


def test_refine_among_all_classes_by_the_sampled_product_equals_exact(digits_model, digits):
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    K = digits_model.n_classes
    kept = np.tile(np.arange(K, dtype=np.int32)[::-1], (Xt.shape[0], 1))
    lookup = PairLookup(digits_model.pair_a, digits_model.pair_b, K)
    exact = Predictor(digits_model).predict_block(Xt)
    for X in (np.asarray(Xn), sp.csr_matrix(Xn)):
        v, c = refine_decisions(digits_model, X, kept, lookup=lookup, threads=2).votes(K)
        assert np.array_equal(v, exact.votes)
        assert np.allclose(c, exact.confidence, atol=1e-4)


def test_a_prediction_refined_by_votes_reports_the_kept_classes_votes_and_zero_elsewhere(digits_model, digits):
    from hsvm_cli.predict.ties import winners
    _, _, Xt, _ = digits
    Xn = np.asarray(prepare("l2", Xt))
    K = digits_model.n_classes
    h = hash_model(digits_model, bits=256, seed=0)
    # k = 3: 3 cells per sample cost less than scoring all 45 classifiers at d = 64 (refine.cell_cost)
    hp = Predictor(digits_model, h, bits=256, filter_k=3)
    got = hp.predict_block(Xt)
    hv, hm = hp.filter.hash_and_vote(Xn)
    kept = top_classes(hv, hm, 3)
    lookup = PairLookup(digits_model.pair_a, digits_model.pair_b, K)
    v, c = refine_decisions(digits_model, Xn, kept, lookup=lookup).votes(K)
    mask = np.zeros(v.shape, dtype=bool)
    np.put_along_axis(mask, kept, True, axis=1)
    assert np.array_equal(got.labels, digits_model.classes[winners(digits_model, np.where(mask, v, -1), c)])
    assert np.array_equal(got.votes, np.where(mask, v, 0)) and got.confidence.tobytes() == c.tobytes()


def test_filter_k1_is_the_pure_hash_classifier(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=512, seed=0)
    hp = Predictor(digits_model, h, bits=512, filter_k=1)
    hf = HashFilter(h, bits=512)
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xt)))
    assert np.array_equal(hp.predict_block(Xt).labels, digits_model.classes[rank_classes(v, m)[:, 0]])


@pytest.mark.parametrize("d", [1, 7, 8, 64, 785])
def test_refine_product_is_bit_identical_on_every_path_and_matches_float64(d):
    rng = np.random.default_rng(d)
    X = rng.standard_normal((20, d)).astype(np.float32)
    W = rng.standard_normal((30, d)).astype(np.float32)
    bias = rng.standard_normal(30).astype(np.float32)
    cx = rng.integers(0, 20, 500)
    cw = np.sort(rng.integers(0, 30, 500))
    ref = np.einsum("ij,ij->i", X[cx].astype(np.float64), W[cw].astype(np.float64)) + bias[cw]
    from hsvm_cli.support.kernels import available_kernels
    paths = ["portable"] + [k for k in ("avx2",) if k in available_kernels()]
    outs = [sddmm(X, W, bias, cx, cw, kernel=k, threads=t) for k in paths for t in (1, 3)]
    for o in outs[1:]:
        assert o.tobytes() == outs[0].tobytes()
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-4)


def _kept_sets(rng, n, K, k, ragged):
    """Sorted kept classes [n, k] and how many are in use (None: all)."""
    S = np.sort(np.argsort(rng.random((n, K)), axis=1)[:, :k], axis=1).astype(np.int64)
    if not ragged:
        return S, None
    nvalid = rng.integers(1, k + 1, n).astype(np.int64)
    S = np.where(np.arange(k)[None, :] < nvalid[:, None], S, 0)
    return S, nvalid


@pytest.mark.parametrize("d,bags,reordered,ragged", [(1, 1, False, False), (31, 2, True, True),
                                                      (64, 1, True, False), (785, 2, False, True)])
def test_kept_refine_gives_the_cell_products_bits_and_votes_on_every_path_order_and_thread(d, bags, reordered,
                                                                                         ragged):
    from hsvm_cli.models.pairs import canonical_pairs
    from hsvm_cli.predict.refine import KeptVotes, RefinedPairs, refine_kept
    from hsvm_cli.support.kernels import available_kernels

    from conftest import reorder_and_flip_pairs
    rng = np.random.default_rng(d + bags)
    K, k, n = 13, 6, 300                       # 300 samples: three tiles of up to 128
    a, b = canonical_pairs(K)
    if reordered:
        a, b = reorder_and_flip_pairs(rng, a, b)
    W = rng.standard_normal((a.shape[0] * bags, d)).astype(np.float32)
    model = OvoModel(classes=np.arange(K), pair_a=a, pair_b=b, W=W,
                     b=rng.standard_normal(a.shape[0] * bags).astype(np.float32), bags=bags)
    lookup = PairLookup(a, b, K)
    X = rng.standard_normal((n, d)).astype(np.float32)
    S, nvalid = _kept_sets(rng, n, K, k, ragged)
    # The reference: each used cell through the one-cell-at-a-time product.
    iu, ju = canonical_pairs(k)
    A, B = S[:, iu], S[:, ju]
    pmask = ju[None, :] < (np.full((n, 1), k) if nvalid is None else nvalid[:, None])
    rows_i, pairs_i = np.nonzero(pmask)
    pid, sign = lookup.lookup(A[rows_i, pairs_i], B[rows_i, pairs_i])
    cw = (pid[:, None] * bags + np.arange(bags)).reshape(-1)
    cx = np.repeat(rows_i, bags)
    ref = np.zeros((n, iu.shape[0], bags), np.float32)
    ref[rows_i, pairs_i] = sddmm(X, W, model.b, cx, cw, kernel="portable").reshape(-1, bags)
    cell_sign = None
    if sign is not None:
        cell_sign = np.ones(pmask.shape, np.int8)
        cell_sign[rows_i, pairs_i] = sign
    ref_votes, ref_conf = RefinedPairs(A, B, ref, pmask, S, nvalid, cell_sign).votes(K)
    paths = ["portable"] + [p for p in ("avx2", "avx512") if p in available_kernels()]
    for kernel in paths:
        for first in (None, rng.integers(0, K, n)):
            # chunks of W from one row (1 byte) to all of it (0: a megabyte)
            for threads, tile, chunk in ((1, None, 0), (3, None, 1), (1, 1, 0), (2, 5, 7 * d * 4 * bags),
                                         (3, 64, 1), (1, 128, 0)):
                v, c, dec = refine_kept(model, X, S, nvalid, lookup=lookup, first=first, threads=threads,
                                        decisions=True, kernel=kernel, tile=tile, chunk_bytes=chunk)
                assert dec.tobytes() == ref.tobytes(), (kernel, threads, tile, chunk)
                assert np.array_equal(v, ref_votes) and c.tobytes() == ref_conf.tobytes(), (kernel, threads, tile,
                                                                                            chunk)
                # By position among the kept classes: the same numbers, spread back.
                pv, pc, _ = refine_kept(model, X, S, nvalid, lookup=lookup, first=first, threads=threads,
                                        kernel=kernel, tile=tile, chunk_bytes=chunk, by_position=True)
                kept = KeptVotes(S, np.full(n, k) if nvalid is None else nvalid, pv, pc, K)
                fv, fc = kept.full()
                assert np.array_equal(fv, ref_votes) and fc.tobytes() == ref_conf.tobytes(), (kernel, threads, tile)


def test_kept_refine_refuses_unsorted_classes_and_pairs_the_model_lacks():
    from hsvm_cli.predict.refine import refine_kept
    def model(n_pairs):
        return OvoModel(classes=np.arange(3), pair_a=np.array([0, 0, 1][:n_pairs], np.int32),
                        pair_b=np.array([1, 2, 2][:n_pairs], np.int32), W=np.ones((n_pairs, 4), np.float32),
                        b=np.zeros(n_pairs, np.float32), bags=1)
    full = model(3)
    lookup = PairLookup(full.pair_a, full.pair_b, 3)
    X = np.ones((2, 4), np.float32)
    for S in ([[1, 0], [0, 1]], [[0, 3], [0, 1]], [[0, 0], [0, 1]]):
        with pytest.raises(ValueError, match="sorted, distinct"):
            refine_kept(full, X, np.array(S), None, lookup=lookup)
    lacking = model(2)
    with pytest.raises(ValueError, match="no classifier"):
        refine_kept(lacking, X, np.array([[0, 1], [1, 2]]), None, lookup=PairLookup(lacking.pair_a, lacking.pair_b, 3))


def test_refine_sub_blocks_give_the_same_result_as_one_block(digits_model, digits):
    _, _, Xt, _ = digits
    # two features a row: sparse enough to stay sparse, so the refine builds cell lists
    Xt = sp.csr_matrix(Xt)
    keep = np.zeros(Xt.shape, dtype=bool)
    keep[np.arange(Xt.shape[0]), np.asarray(Xt.argmax(axis=1)).ravel()] = True
    keep[:, 20] = True
    Xt = sp.csr_matrix(Xt.toarray() * keep)
    h = hash_model(digits_model, bits=256, seed=0)
    hp = Predictor(digits_model, h, bits=256, filter_k=4)
    whole = hp.predict_block(Xt)
    hp.MAX_CELLS = 6 * 64  # forces sub-blocks of 64 rows where the refine builds cell lists
    split = hp.predict_block(Xt)
    assert sp.issparse(Xt) and hp._refine_has_cells(Xt, False)
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


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_filter_ranking_by_groups_equals_ranking_all_votes(digits_model, digits, threads, monkeypatch):
    import hsvm_cli.predict.filter as filter_module
    monkeypatch.setattr(filter_module, "MIN_GROUP", 1)
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    hf = HashFilter(h, bits=128, threads=threads)
    monkeypatch.setattr(hf.voter, "blocking", lambda: (37, 1))   # groups end inside each thread's rows
    Xn = prepare("l2", Xt.toarray().astype(np.float32))
    Xn[[0, 40, 41]] = 0.0      # samples without features: voted at right angles
    for k in (1, 3, h.n_classes + 2):
        expected = top_classes(*hf.hash_and_vote(Xn), k)
        assert np.array_equal(hf.top_classes(Xn, k), expected)


def test_predictor_ranking_in_the_filter_gives_the_labels_of_ranking_after_it(digits_model, digits, monkeypatch):
    _, _, Xt, yt = digits
    h = hash_model(digits_model, bits=256, seed=0)
    p = Predictor(digits_model, h, filter_k=3, threads=2)
    dense = Xt.toarray()       # the refine by votes of dense samples: its kept classes are the prediction's
    calls = []
    ranked = HashFilter.top_classes
    monkeypatch.setattr(HashFilter, "top_classes", lambda self, *a, **kw: calls.append(1) or ranked(self, *a, **kw))
    fused = p.predict_block(dense, y=yt)
    assert calls
    monkeypatch.setattr(Predictor, "_ranks_only", lambda self, *a: False)
    apart = p.predict_block(dense, y=yt)
    assert np.array_equal(fused.labels, apart.labels)
    assert np.array_equal(fused.votes, apart.votes) and np.array_equal(fused.confidence, apart.confidence)


@pytest.mark.parametrize("first_stage", [None, "scores"])
@pytest.mark.parametrize("rule", ["vote", "dag"])
def test_hashed_predictor_gives_an_empty_prediction_of_no_samples(digits_model, digits, first_stage, rule):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    p = Predictor(digits_model, h, filter_k=3, first_stage=first_stage, rule=rule)
    for X in (Xt[:0], Xt[:0].toarray()):
        assert p.predict(X).shape == (0,)
        assert p.predict_block(X).labels.shape == (0,)


def test_a_thresholded_predictor_gives_an_empty_prediction_of_no_samples(digits_model, digits):
    from hsvm_cli.errors import OptionError
    from hsvm_cli.tune import calibrate
    _, _, Xt, yt = digits
    h = hash_model(digits_model, bits=256, seed=0)
    cal = calibrate(digits_model, h, Xt[:200], yt[:200], repeat=1, timing_budget=0)
    p = Predictor(digits_model, h, calibration=cal, epsilon=0.01)
    assert "threshold 0.01" in repr(p)
    for X in (Xt[:0], Xt[:0].toarray()):
        assert p.predict(X).shape == (0,)
        assert p.predict_block(X, proba=True).proba.shape == (0, digits_model.n_classes)
    with pytest.raises(OptionError, match="threads must be a positive integer"):
        Predictor(digits_model, h, threads=-1)


def test_a_hash_model_whose_codes_are_not_the_models_under_its_seed_is_refused(digits_model, digits, tmp_path):
    # a seed edited into the header (its checksum made anew) passes every
    # checksum and the model digest: the codes of a few classifiers hashed
    # again with the filter's projection say it
    import subprocess
    import sys

    from hsvm_cli.errors import ModelMismatchError
    from hsvm_cli.models.hashed import save_hash_model
    from hsvm_cli.models.ovo import save_model
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    assert Predictor(digits_model, h, filter_k=3).predict(Xt).shape == (Xt.shape[0],)
    h.seed, h._projection = 1, None
    with pytest.raises(ModelMismatchError, match="its classifier codes are not .* under its projection .seed 1."):
        Predictor(digits_model, h, filter_k=3).predict(Xt)
    model_path, hbm_path = tmp_path / "m.hsvm", tmp_path / "m.hbm"
    save_model(digits_model, model_path)
    save_hash_model(h, hbm_path)
    r = subprocess.run([sys.executable, "-m", "hsvm_cli", "predict", "-m", str(model_path), "-H", str(hbm_path),
                        "-k", "3", DIGITS_TEST], capture_output=True, text=True)
    assert r.returncode == 65 and r.stderr.count("\n") == 1 and "hash the model again" in r.stderr, r.stderr


def test_refine_applies_the_vote_rule_in_the_models_own_pair_orientation(digits_model, digits):
    # A model storing some pairs as (b, a), one of them a zero classifier
    # whose decision is exactly 0: the refine must send it where exact voting
    # does (to the model's second class of the pair).
    m = digits_model
    flip = np.arange(m.n_pairs) % 3 == 0
    W = np.where(flip[:, None], -np.asarray(m.W), np.asarray(m.W)).astype(np.float32)
    b = np.where(flip, -np.asarray(m.b), np.asarray(m.b)).astype(np.float32)
    W[0], b[0] = 0.0, 0.0
    model = OvoModel(classes=m.classes, pair_a=np.where(flip, m.pair_b, m.pair_a).astype(np.int32),
                     pair_b=np.where(flip, m.pair_a, m.pair_b).astype(np.int32), W=W, b=b, normalize="l2")
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    K = model.n_classes
    exact = Predictor(model).predict_block(Xt)
    kept = np.tile(np.arange(K, dtype=np.int32), (Xt.shape[0], 1))
    lookup = PairLookup(model.pair_a, model.pair_b, K)
    v, c = refine_decisions(model, Xn, kept, lookup=lookup).votes(K)
    assert np.array_equal(v, exact.votes)
    assert np.allclose(c, exact.confidence, atol=1e-4)
    valid = np.ones(kept.shape, dtype=bool)
    v2, _ = refine_decisions(model, Xn, kept, lookup=lookup, valid=valid).votes(K)
    assert np.array_equal(v2, exact.votes)


def test_refine_from_exact_scoring_equals_the_sampled_product(digits_model, digits):
    from hsvm_cli.predict.exact import ExactScorer
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    K = digits_model.n_classes
    rng = np.random.default_rng(4)
    kept = np.argsort(rng.random((Xt.shape[0], K)), axis=1)[:, :6].astype(np.int32)
    lookup = PairLookup(digits_model.pair_a, digits_model.pair_b, K)
    sampled = refine_decisions(digits_model, Xn, kept, lookup=lookup)
    dense = refine_decisions(digits_model, Xn, kept, lookup=lookup,
                             decisions=ExactScorer(digits_model).decision(Xn))
    assert np.allclose(sampled.dec, dense.dec, atol=1e-5)
    assert np.array_equal(sampled.votes(K)[0], dense.votes(K)[0])


def test_a_refine_of_almost_every_class_scores_every_classifier(digits_model, digits):
    from hsvm_cli.predict.refine import dense_is_cheaper
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0)
    p = Predictor(digits_model, h, filter_k=9)
    assert dense_is_cheaper(9, digits_model)
    labels = p.predict(Xt)
    assert p._all_pairs is not None
    assert (labels == Predictor(digits_model).predict(Xt)).mean() > 0.99


@pytest.mark.parametrize("orientation", ["canonical", "flipped"])
@pytest.mark.parametrize("with_valid", [False, True])
def test_votes_read_from_exact_scores_are_bit_identical_to_the_gathered_cells(digits_model, digits, orientation,
                                                                               with_valid):
    from hsvm_cli.predict.exact import ExactScorer
    from hsvm_cli.predict.refine import kept_votes
    m = digits_model
    if orientation == "flipped":
        # pairs stored as (b, a) and in a shuffled order, as an imported model may store them
        flip = np.arange(m.n_pairs) % 3 == 0
        order = np.random.default_rng(1).permutation(m.n_pairs)
        W = np.where(flip[:, None], -np.asarray(m.W), np.asarray(m.W)).astype(np.float32)[order]
        b = np.where(flip, -np.asarray(m.b), np.asarray(m.b)).astype(np.float32)[order]
        m = OvoModel(classes=m.classes, pair_a=np.where(flip, m.pair_b, m.pair_a).astype(np.int32)[order],
                     pair_b=np.where(flip, m.pair_a, m.pair_b).astype(np.int32)[order], W=W, b=b, normalize="l2")
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    K = m.n_classes
    rng = np.random.default_rng(7)
    kept = np.argsort(rng.random((Xt.shape[0], K)), axis=1)[:, :7].astype(np.int32)
    valid = None
    if with_valid:
        valid = rng.random(kept.shape) < 0.7
        valid[:, 0] = True
    lookup = PairLookup(m.pair_a, m.pair_b, K)
    dense = ExactScorer(m).decision(Xn)
    gathered = refine_decisions(m, Xn, kept, lookup=lookup, valid=valid, decisions=dense)
    v0, c0 = gathered.votes(K)
    v1, c1, nvalid = kept_votes(dense, kept, lookup=lookup, bags=m.bags, valid=valid)
    assert np.array_equal(v0, v1) and np.array_equal(c0, c1) and np.array_equal(nvalid, gathered.nvalid)
    # from the products, the bias added as the votes read them, in blocks of 50 rows; against the
    # decision values of the same blocks (a BLAS may round a row differently in another block:
    # OpenBLAS's Haswell kernels do)
    scorer = ExactScorer(m)
    scorer.block_rows = lambda: 50
    v2, c2, n2 = scorer.kept_votes(Xn, kept, lookup=lookup, valid=valid)
    dense50 = np.vstack([ExactScorer(m).decision(Xn[s:s + 50]) for s in range(0, Xn.shape[0], 50)])
    v3, c3, n3 = kept_votes(dense50, kept, lookup=lookup, bags=m.bags, valid=valid)
    assert np.array_equal(v3, v2) and np.array_equal(c3, c2) and np.array_equal(n3, n2)


def test_votes_read_from_exact_scores_refuse_a_missing_pair(digits_model):
    from hsvm_cli.predict.refine import kept_votes
    lookup = PairLookup(digits_model.pair_a, digits_model.pair_b, digits_model.n_classes)
    ids, signs = lookup.table()
    lookup._table = (np.where(np.arange(ids.shape[0]) == ids.argmax(), -1, ids), signs)
    lookup.canonical = False       # a canonical model's ids are computed, not read from the table
    kept = np.tile(np.arange(digits_model.n_classes, dtype=np.int32), (2, 1))
    with pytest.raises(ValueError, match="no classifier"):
        kept_votes(np.zeros((2, digits_model.n_classifiers), np.float32), kept, lookup=lookup, bags=1)


def test_votes_read_from_exact_scores_follow_the_bag_majority(digits):
    from hsvm_cli.predict.exact import ExactScorer
    from hsvm_cli.predict.refine import kept_votes
    from hsvm_cli.train.ovo import train_ovo
    X, y, Xt, _ = digits
    m = train_ovo(X[:400], y[:400], C=1.0, seed=0, bags=3, per_class=30)
    Xn = prepare("l2", Xt)
    K = m.n_classes
    kept = np.argsort(np.random.default_rng(2).random((Xt.shape[0], K)), axis=1)[:, :8].astype(np.int32)
    lookup = PairLookup(m.pair_a, m.pair_b, K)
    dense = ExactScorer(m).decision(Xn)
    v0, c0 = refine_decisions(m, Xn, kept, lookup=lookup, decisions=dense).votes(K)
    v1, c1, _ = kept_votes(dense, kept, lookup=lookup, bags=m.bags)
    assert m.bags == 3 and np.array_equal(v0, v1) and np.array_equal(c0, c1)
    v2, c2, _ = ExactScorer(m).kept_votes(Xn, kept, lookup=lookup)
    assert np.array_equal(v0, v2) and np.array_equal(c0, c2)


@pytest.mark.parametrize("bags", [1, 3])
@pytest.mark.parametrize("canonical", [True, False])
def test_the_rows_a_refine_checks_hold_every_row_it_reads(bags, canonical):
    from hsvm_cli.models.pairs import canonical_pairs
    from hsvm_cli.predict.refine import kept_pair_rows, sorted_kept
    K = 12
    a, b = canonical_pairs(K)
    if not canonical:       # pairs stored in another order and orientation, as imported models do
        order = np.random.default_rng(1).permutation(a.shape[0])
        a, b = b[order], a[order]
    lookup = PairLookup(a, b, K)
    rng = np.random.default_rng(7)
    for n, k in ((3, 4), (40, 6)):     # few cells: each row's own pairs; many: every pair of the kept classes
        kept = np.array([rng.choice(K, k, replace=False) for _ in range(n)])
        valid = rng.random((n, k)) < 0.8
        valid[:, 0] = True
        S, nvalid = sorted_kept(kept, valid)
        rows = set(kept_pair_rows(S, nvalid, lookup, bags).tolist())
        for i in range(n):
            classes = sorted(kept[i][valid[i]])
            for x in range(len(classes)):
                for y in range(x + 1, len(classes)):
                    pid = lookup.table()[0][classes[x] * K + classes[y]]
                    assert {pid * bags + g for g in range(bags)} <= rows
        if n * k * (k - 1) // 2 <= 2 * K * (K - 1):
            # the per-row branch names nothing beyond the rows' own pairs
            assert len(rows) <= bags * sum(v * (v - 1) // 2 for v in valid.sum(axis=1))


def test_at_small_d_a_refine_cell_s_fixed_part_makes_large_k_score_every_classifier():
    # Measured (K = 1,000, d = 64): k = 500 refined in 3.2 s what scoring
    # every classifier did in 2.2 s; k = 250 refined in 1.0 s against 1.2.
    # At d = 784 (omniglot-242, where the fit was made) k = K/2 still refines.
    from types import SimpleNamespace

    from hsvm_cli.predict.refine import dense_is_cheaper

    def model(K, d):
        return SimpleNamespace(n_classes=K, n_features=d, n_classifiers=K * (K - 1) // 2, bags=1)
    assert dense_is_cheaper(500, model(1000, 64)) and not dense_is_cheaper(250, model(1000, 64))
    assert not dense_is_cheaper(121, model(242, 784)) and not dense_is_cheaper(90, model(242, 784))


def _blank_rows_model(bags=1):
    from hsvm_cli.train.ovo import train_ovo
    rng = np.random.default_rng(4)
    centres = rng.normal(size=(5, 6)) * 3
    y = np.repeat(np.arange(5), 12)
    X = centres[y] + rng.normal(size=(60, 6))
    return train_ovo(X, y, seed=1, bags=bags) if bags > 1 else train_ovo(X, y, seed=1)


def test_samples_without_features_are_voted_as_exact_prediction_votes_them():
    # A zero sample hashes to the all-zero code, whose distances to the codes
    # say nothing (its votes had followed the seed); w.0 + b = b decides, and
    # the filter now votes it so for every seed and prefix.
    model = _blank_rows_model()
    Z = sp.csr_matrix((3, model.n_features))
    exact = Predictor(model).predict_block(Z)
    for seed in range(6):
        h = hash_model(model, bits=256, seed=seed)
        for bits in (64, 256):
            f = HashFilter(h, bits=bits)
            votes, _ = f.hash_and_vote(prepare("l2", Z))
            assert np.array_equal(votes, exact.votes), (seed, bits)
            got = Predictor(model, h, bits=bits, filter_k=1).predict(Z)
            assert np.array_equal(got, exact.labels), (seed, bits)
    # codes given instead of samples: the same
    codes = np.zeros((3, 4), dtype=np.uint64)
    assert np.array_equal(HashFilter(h).votes(codes)[0], exact.votes)


def test_a_zero_code_among_others_changes_only_its_own_row():
    model = _blank_rows_model(bags=2)
    h = hash_model(model, bits=128, seed=3)
    f = HashFilter(h, bits=128)
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 2 ** 63, size=(5, 2), dtype=np.int64).astype(np.uint64)
    before_v, before_m = f.votes(codes)
    codes[2] = 0
    after_v, after_m = f.votes(codes)
    keep = [0, 1, 3, 4]
    assert np.array_equal(after_v[keep], before_v[keep]) and np.array_equal(after_m[keep], before_m[keep])
    # the blank row: every classifier at distance D'/2, as the definition votes it
    thr = thresholds(h.theta, 128).astype(np.int64).reshape(-1, 2)
    cnt = (64 < thr).sum(axis=1)
    a_wins = (2 * cnt > 2) | ((2 * cnt == 2) & (128 < thr.sum(axis=1)))
    want = np.bincount(np.where(a_wins, h.pair_a, h.pair_b), minlength=model.n_classes)
    assert np.array_equal(after_v[2], want)
    assert after_v[2].sum() == model.n_classes * (model.n_classes - 1) // 2


@pytest.mark.parametrize("bags", [1, 3])
@pytest.mark.parametrize("dense", [True, False])
def test_keeping_every_class_votes_with_exact_predictions_kernel_bit_for_bit(bags, dense):
    # -k K is exact prediction's path: its votes and confidences from the
    # all-pairs vote kernel equal the kept-class kernel's, sums and all
    from hsvm_cli import load_svmlight, train_ovo
    from hsvm_cli.predict.exact import ExactScorer
    from hsvm_cli.predict.refine import kept_votes
    from hsvm_cli.preprocess import prepare

    from conftest import DIGITS_TEST, DIGITS_TRAIN
    X, y = load_svmlight(DIGITS_TRAIN)
    Xt, _ = load_svmlight(DIGITS_TEST, n_features=X.shape[1])
    m = train_ovo(X, y, bags=bags, seed=1)
    Xn = prepare(m.normalize, Xt if not dense else Xt.toarray())
    lookup = PairLookup(m.pair_a, m.pair_b, m.n_classes)
    assert lookup.canonical
    kept = np.tile(np.arange(m.n_classes)[::-1], (Xn.shape[0], 1))
    scorer = ExactScorer(m)
    votes, conf, nvalid = scorer.kept_votes(Xn, kept, lookup=lookup)
    want_votes, want_conf, want_n = kept_votes(scorer.products(Xn), kept, lookup=lookup, bags=m.bags, bias=scorer.b)
    assert np.array_equal(votes, want_votes) and np.array_equal(nvalid, want_n)
    assert np.array_equal(conf.view(np.uint64), want_conf.view(np.uint64))
