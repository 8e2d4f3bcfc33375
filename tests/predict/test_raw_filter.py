"""The hash filter of models on unnormalised features (imported LIBSVM models):
per-sample thresholds against their definition, against the fixed-threshold
filter on unit samples, and filter-and-refine in LIBSVM's pair orientation."""
from dataclasses import replace

import numpy as np
import pytest

from hsvm_cli.errors import OptionError
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.imported import import_model
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import top_classes
from hsvm_cli.predict.raw_filter import RawHashFilter, make_filter
from hsvm_cli.predict.ties import first_max
from hsvm_cli.preprocess import l2_normalize

from conftest import tool_run


@pytest.fixture(scope="module")
def digits_libsvm(tools, dataset_files, tmp_path_factory):
    train, test = dataset_files("digits")
    model = tmp_path_factory.mktemp("dl") / "d.model"
    tool_run("svm-train", "-q", "-t", "0", "-c", "1", train, model)
    m = import_model(str(model)).model
    X, y = load_svmlight(test, n_features=m.n_features, extra_features="ignore")
    return m, X, y


def test_make_filter_takes_per_sample_thresholds_for_unnormalised_models(digits_model):
    h = hash_model(digits_model, bits=128, seed=1)
    assert isinstance(make_filter(digits_model, h), HashFilter)
    raw = replace(digits_model, normalize="none", content_digest=None)
    assert isinstance(make_filter(raw, hash_model(raw, bits=128, seed=1)), RawHashFilter)


def test_imported_model_hashes_and_k_equal_K_is_exact(digits_libsvm):
    m, X, y = digits_libsvm
    exact = Predictor(m).predict(X)
    h = hash_model(m, bits=256, seed=4)
    assert h.normalize == "none"
    assert np.array_equal(Predictor(m, h, filter_k=m.n_classes).predict(X), exact)


def test_filter_and_refine_on_imported_pairs_uses_libsvm_orientation_and_tie_order(digits_libsvm):
    # Refining k < K classes looks pairs up in LIBSVM's (non-canonical) order:
    # each label must be LIBSVM's winner among the kept classes.
    m, X, y = digits_libsvm
    p = Predictor(m, hash_model(m, bits=512, seed=4), filter_k=4)
    labels = p.predict(X)
    Xd = X.astype(np.float32).toarray()
    dec = ExactScorer(m).decision(Xd)
    K = m.n_classes
    hv, hm = p.filter.hash_and_vote(Xd)
    top = top_classes(hv, hm, 4)
    refs = []
    for i in range(X.shape[0]):
        S = set(top[i].tolist())
        votes = np.full(K, -1)
        votes[list(S)] = 0
        for q in range(m.n_pairs):
            a, b = int(m.pair_a[q]), int(m.pair_b[q])
            if a in S and b in S:
                votes[a if dec[i, q] > 0 else b] += 1
        refs.append(m.classes[first_max(votes[None], m.tie_order)[0]])
    assert np.array_equal(labels, np.array(refs))


def test_per_sample_thresholds_match_their_definition(digits_libsvm):
    # Classifier j votes for pair_a iff d_H < D' arccos(-b/(||x|| ||w||))/pi.
    m, X, y = digits_libsvm
    h = hash_model(m, bits=256, seed=2)
    f = RawHashFilter(m, h, bits=192)
    Xd = X.astype(np.float32).toarray()
    votes, _ = f.hash_and_vote(Xd)
    dist = hamming_distances(f.hash_samples(Xd), np.ascontiguousarray(h.codes), bits=192)
    xn = np.linalg.norm(Xd.astype(np.float64), axis=1)
    wn = np.linalg.norm(np.asarray(m.W, dtype=np.float64), axis=1)
    c = -np.asarray(m.b, dtype=np.float64) / (xn[:, None] * wn[None, :])
    theta = np.arccos(np.clip(c, -1, 1)) / np.pi
    pos = np.where(c <= -1, True, np.where(c >= 1, False, dist < 192 * theta))
    ref = np.zeros_like(votes)
    for q in range(m.n_pairs):
        ref[:, m.pair_a[q]] += pos[:, q]
        ref[:, m.pair_b[q]] += ~pos[:, q]
    assert np.array_equal(votes, ref)


def test_cosine_margins_are_the_float64_formula_rounded_once():
    # native/raw_margins.c against the numpy expression it replaced, bit for
    # bit, with zero sample and classifier norms (the constant classifiers).
    from hsvm_cli.predict.raw_filter import cosine_margins
    rng = np.random.default_rng(4)
    bits, n, m = 192, 37, 53
    dist = rng.integers(0, bits + 1, size=(n, m)).astype(np.int32)
    xn = rng.uniform(0.1, 30, n)
    xn[[3, 20]] = 0.0
    wn = rng.uniform(0.01, 5, m)
    wn[7] = 0.0
    b = rng.normal(0, 2, m)
    b[[7, 11]] = [0.0, 0.0]
    cos = np.cos(np.pi * np.arange(bits + 1, dtype=np.float64) / bits)
    s = xn[:, None] * wn[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = cos[dist] + b[None, :] / s
    ref = np.where(s > 0, ref, np.where(b[None, :] > 0, 1.0, -1.0)).astype(np.float32)
    mu = cosine_margins(dist, bits, xn, wn, b)
    assert mu.dtype == np.float32 and np.array_equal(mu.view(np.int32), ref.view(np.int32))
    assert cosine_margins(dist[:0], bits, xn[:0], wn, b).shape == (0, m)
    dist[5, 9] = bits + 1
    with pytest.raises(ValueError, match="outside 0..192"):
        cosine_margins(dist, bits, xn, wn, b)


def test_raw_filter_votes_do_not_depend_on_pieces_or_threads(digits_libsvm, monkeypatch):
    m, X, y = digits_libsvm
    h = hash_model(m, bits=256, seed=2)
    Xd = X.astype(np.float32).toarray()
    runs = []
    monkeypatch.setattr(RawHashFilter, "MIN_PIECE_ROWS", 1)
    for cells, threads in ((1 << 18, 1), (3 * m.n_pairs, 3), (1, 2)):
        monkeypatch.setattr(RawHashFilter, "PIECE_CELLS", cells)
        votes, conf = RawHashFilter(m, h, bits=192, threads=threads).hash_and_vote(Xd)
        runs.append((votes, conf))
    for votes, conf in runs[1:]:
        assert np.array_equal(votes, runs[0][0]) and np.array_equal(conf.view(np.int64), runs[0][1].view(np.int64))


def test_per_sample_thresholds_equal_the_unit_norm_rule_for_unit_samples(digits_model, digits):
    _, _, Xt, _ = digits
    raw = replace(digits_model, normalize="none", content_digest=None)
    h = hash_model(digits_model, bits=512, seed=9)
    h_raw = replace(h, normalize="none", model_sha256=raw.content_sha256())
    Xn = l2_normalize(Xt.astype(np.float32)).toarray()
    fixed, _ = HashFilter(h, bits=512).hash_and_vote(Xn)
    per_sample, _ = RawHashFilter(raw, h_raw, bits=512).hash_and_vote(Xn)
    # Only the float32 rounding of the stored theta can move a threshold.
    assert np.mean(fixed == per_sample) > 0.999


def test_per_sample_thresholds_find_the_exact_class_where_fixed_ones_do_not(digits_libsvm):
    # The fixed threshold assumes ||x|| = 1; digits samples have norms near 3.6.
    m, X, y = digits_libsvm
    exact = np.searchsorted(m.classes, Predictor(m).predict(X))
    h = hash_model(m, bits=2048, seed=6)
    Xd = X.astype(np.float32).toarray()
    recall = {}
    for name, f in (("fixed", HashFilter(h, bits=2048)), ("per_sample", RawHashFilter(m, h, bits=2048))):
        hv, hm = f.hash_and_vote(Xd)
        recall[name] = float((top_classes(hv, hm, 1)[:, 0] == exact).mean())
    assert recall["per_sample"] > recall["fixed"]
    assert recall["per_sample"] > 0.9


def test_codes_alone_cannot_be_voted_for_unnormalised_models(digits_libsvm):
    m, X, _ = digits_libsvm
    f = RawHashFilter(m, hash_model(m, bits=128, seed=1))
    Xd = X.astype(np.float32).toarray()
    codes = f.hash_samples(Xd)
    with pytest.raises(OptionError, match="depends on the sample's norm"):
        f.votes(codes)
    assert np.array_equal(f.votes(codes, Xn=Xd)[0], f.hash_and_vote(Xd)[0])


def test_margins_beyond_float32_are_its_largest_value_not_infinite():
    # a sample of norm 1e-41 (raw features of 1e-43): b / (|x| |w|) ~ 1e40
    # rounded to an infinity, and --proba's margin sums refused it with a
    # traceback; the largest float32 of the same sign keeps the vote's side
    from hsvm_cli.predict.raw_filter import cosine_margins
    dist = np.array([[3, 3, 0]], dtype=np.int32)
    mu = cosine_margins(dist, 64, np.array([1e-41]), np.array([1.0, 1.0, 2.0]), np.array([0.5, -0.5, 1e-300]))
    big = np.finfo(np.float32).max
    assert mu[0, 0] == big and mu[0, 1] == -big and np.isfinite(mu).all()
    assert mu[0, 2] == np.float32(np.cos(0.0) + 1e-300 / 2e-41)
