"""One-vs-rest scoring: exact argmax against scikit-learn and brute force, and
the hashed filter's estimators against their definitions."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import ModelFormatError, ModelMismatchError, OptionError
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.hashing.projection import SignProjector
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.ovr import OvrModel, hash_ovr_model, load_ovr_hash_model, save_ovr_hash_model
from hsvm_cli.predict.ovr import OvrPredictor, estimated_margins, estimated_scores, ovr_scores
from hsvm_cli.predict.raw_filter import sample_norms
from hsvm_cli.predict.ties import first_max


@pytest.fixture(scope="module")
def digits_ovr(digits):
    """A LinearSVC one-vs-rest model of digits on raw features, as an OvrModel."""
    from sklearn.svm import LinearSVC
    X, y, Xt, yt = digits
    clf = LinearSVC(C=1.0, dual=True, max_iter=20000, random_state=0).fit(X, y)
    model = OvrModel(classes=clf.classes_.astype(np.int64), W=clf.coef_.astype(np.float32),
                     b=clf.intercept_.astype(np.float32), normalize="none")
    return model, clf, Xt, yt


def test_exact_scores_and_labels_match_scikit_learn(digits_ovr):
    model, clf, Xt, _ = digits_ovr
    ref = clf.decision_function(Xt)
    block = OvrPredictor(model).predict_block(Xt)
    assert np.allclose(block.votes, ref, rtol=1e-5, atol=1e-5)
    srt = np.sort(ref, axis=1)
    clear = srt[:, -1] - srt[:, -2] > 1e-4
    assert np.array_equal(block.labels[clear], clf.predict(Xt)[clear])
    assert clear.mean() > 0.99


def test_sparse_and_dense_samples_score_alike(digits_ovr):
    model, _, Xt, _ = digits_ovr
    Xf = Xt.astype(np.float32)
    assert np.allclose(ovr_scores(model.W, model.b, Xf), ovr_scores(model.W, model.b, Xf.toarray()),
                       rtol=1e-6, atol=1e-5)


def test_l2_model_normalises_before_scoring(digits_ovr):
    from hsvm_cli.preprocess import l2_normalize
    model, _, Xt, _ = digits_ovr
    l2 = OvrModel(classes=model.classes, W=model.W, b=model.b, normalize="l2")
    scores = OvrPredictor(l2).predict_block(Xt).votes
    Xn = l2_normalize(Xt.astype(np.float64)).toarray()
    assert np.allclose(scores, Xn @ model.W.T.astype(np.float64) + model.b, atol=1e-5)


def _brute_first_max(values, tie_order, candidates=None):
    out = []
    for i, row in enumerate(values):
        cand = list(range(len(row))) if candidates is None else list(candidates[i])
        best = None
        for j, c in enumerate(cand):
            v = row[j]
            if best is None or v > best[0] or (v == best[0] and tie_order[c] < tie_order[best[1]]):
                best = (v, c)
        out.append(best[1])
    return np.array(out)


def test_first_max_breaks_ties_by_tie_order():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 3, size=(300, 7)).astype(np.float32)  # many ties
    tie = rng.permutation(7)
    assert np.array_equal(first_max(values, tie), _brute_first_max(values, tie))
    cand = np.stack([rng.permutation(7)[:4] for _ in range(300)])
    sub = np.take_along_axis(values, cand, axis=1)
    assert np.array_equal(first_max(sub, tie, candidates=cand), _brute_first_max(sub, tie, cand))


def test_ovr_model_checks_its_arrays():
    W = np.zeros((3, 2), np.float32)
    with pytest.raises(ModelFormatError, match="sorted and unique"):
        OvrModel(classes=np.array([3, 1, 2]), W=W, b=np.zeros(3, np.float32))
    with pytest.raises(ModelFormatError, match="one row per class"):
        OvrModel(classes=np.array([1, 2, 3]), W=W[:2], b=np.zeros(3, np.float32))
    with pytest.raises(ModelFormatError, match="permutation"):
        OvrModel(classes=np.array([1, 2, 3]), W=W, b=np.zeros(3, np.float32), tie_order=np.array([0, 0, 1]))
    with pytest.raises(ModelFormatError, match="finite"):
        OvrModel(classes=np.array([1, 2, 3]), W=W + np.nan, b=np.zeros(3, np.float32))


def test_class_codes_are_the_ovo_hash_of_the_same_normals(digits_ovr, digits_model):
    # One projection for both kinds of model: for the same seed, the code of a
    # normal does not depend on whether it belongs to a pair or to a class.
    from dataclasses import replace
    model, _, _, _ = digits_ovr
    h = hash_ovr_model(model, bits=256, seed=7)
    P = digits_model.n_pairs
    rows = np.resize(model.W, (P, model.n_features))      # the class normals as pair normals
    ovo = replace(digits_model, W=rows, b=np.zeros(P, np.float32), content_digest=None, container=None)
    codes = hash_model(ovo, bits=256, seed=7).codes
    assert np.array_equal(h.codes, codes[:model.n_classes])


def test_estimators_follow_their_formulas(digits_ovr):
    model, _, Xt, _ = digits_ovr
    h = hash_ovr_model(model, bits=512, seed=3)
    hp = OvrPredictor(model, h, bits=320, filter_k=3, estimator="score")
    Xd = Xt.astype(np.float32).toarray()
    codes = SignProjector(h.projection(320)).codes(Xd)
    dist = hamming_distances(codes, np.ascontiguousarray(h.codes), bits=320)
    xn = np.linalg.norm(Xd.astype(np.float64), axis=1)
    wn = np.linalg.norm(model.W.astype(np.float64), axis=1)
    b = model.b.astype(np.float64)
    assert np.allclose(sample_norms(Xd), xn) and np.allclose(sample_norms(sp.csr_matrix(Xd)), xn)
    score = estimated_scores(dist, 320, xn, wn, b)
    assert np.allclose(score, xn[:, None] * wn * np.cos(np.pi * dist / 320) + b)
    margin = estimated_margins(dist, 320, xn, wn, b)
    theta = np.arccos(np.clip(-b / (xn[:, None] * wn), -1, 1)) / np.pi
    assert np.allclose(margin, theta - dist / 320)
    # Both say the same about each class's own decision s_c(x) > 0 (away from the clamp).
    inside = np.abs(b / (xn[:, None] * wn)) < 1
    assert np.array_equal((score > 0)[inside], (margin > 0)[inside])
    assert np.allclose(hp.estimates(Xd), score)
    assert np.allclose(OvrPredictor(model, h, bits=320).estimates(Xd), margin)   # the default


def test_score_estimate_converges_to_the_exact_score(digits_ovr):
    model, _, Xt, _ = digits_ovr
    Xd = Xt.astype(np.float32).toarray()
    exact = ovr_scores(model.W, model.b, Xd).astype(np.float64)
    scale = sample_norms(Xd)[:, None] * np.linalg.norm(model.W.astype(np.float64), axis=1)
    err = {}
    h = hash_ovr_model(model, bits=4096, seed=11)
    for bits in (256, 4096):
        est = OvrPredictor(model, h, bits=bits, estimator="score").estimates(Xd)
        err[bits] = float(np.mean(np.abs(est - exact) / scale))
    # Sign random projections: the angle error shrinks like 1/sqrt(D').
    assert err[4096] < err[256] / 2.5
    assert err[4096] < 0.03


def test_k_equal_K_is_exact_and_refine_scores_the_kept_classes(digits_ovr):
    model, _, Xt, _ = digits_ovr
    h = hash_ovr_model(model, bits=256, seed=5)
    exact = OvrPredictor(model).predict_block(Xt)
    assert np.array_equal(OvrPredictor(model, h, filter_k=model.n_classes).predict(Xt), exact.labels)
    for estimator in ("score", "margin"):
        hp = OvrPredictor(model, h, bits=192, filter_k=3, estimator=estimator)
        block = hp.predict_block(Xt)
        kept = block.votes
        est = hp.estimates(Xt.astype(np.float32).toarray())
        # kept: the 3 best estimates, best first (equal estimates: lower class index).
        order = np.lexsort((np.arange(model.n_classes)[None, :].repeat(len(est), 0), -est), axis=1)[:, :3]
        assert np.array_equal(kept, order)
        sub = np.take_along_axis(exact.votes, kept, axis=1)
        assert np.array_equal(block.labels, model.classes[_brute_first_max(sub, model.tie_order, kept)])


def test_filter_recall_grows_with_bits(digits_ovr):
    model, _, Xt, _ = digits_ovr
    exact = np.searchsorted(model.classes, OvrPredictor(model).predict(Xt))
    h = hash_ovr_model(model, bits=2048, seed=2)
    recall = []
    for bits in (64, 2048):
        kept = OvrPredictor(model, h, bits=bits, filter_k=3).predict_block(Xt).votes
        recall.append(float((kept == exact[:, None]).any(axis=1).mean()))
    assert recall[1] > recall[0]


def test_hash_predictor_refuses_bad_settings(digits_ovr):
    model, _, _, _ = digits_ovr
    h = hash_ovr_model(model, bits=128, seed=0)
    with pytest.raises(OptionError, match="estimator"):
        OvrPredictor(model, h, estimator="votes")
    with pytest.raises(OptionError, match="multiple of 64"):
        OvrPredictor(model, h, bits=192)
    with pytest.raises(OptionError, match="at least 1"):
        OvrPredictor(model, h, filter_k=0)
    other = OvrModel(classes=model.classes, W=model.W * 2, b=model.b)
    with pytest.raises(ModelMismatchError, match="another model"):
        OvrPredictor(other, h)


def test_ovr_hash_model_survives_save_and_load(digits_ovr, tmp_path):
    model, _, Xt, _ = digits_ovr
    h = hash_ovr_model(model, bits=192, seed=4)
    save_ovr_hash_model(h, tmp_path / "o.hbm")
    back = load_ovr_hash_model(tmp_path / "o.hbm")
    assert np.array_equal(back.codes, h.codes) and back.seed == 4 and back.bits == 192
    a = OvrPredictor(model, h, filter_k=3).predict(Xt)
    assert np.array_equal(OvrPredictor(model, back, filter_k=3).predict(Xt), a)
    stored = hash_ovr_model(model, bits=192, seed=4, store_projection=True)
    save_ovr_hash_model(stored, tmp_path / "s.hbm")
    assert np.array_equal(load_ovr_hash_model(tmp_path / "s.hbm").projection(128), h.projection(128))


def test_an_ovo_hash_model_is_not_an_ovr_one(digits_model, digits_ovr):
    model, _, _, _ = digits_ovr
    with pytest.raises(ModelMismatchError, match="one-vs-one hash model"):
        OvrPredictor(model, hash_model(digits_model, bits=64))


def test_a_sample_without_features_is_ranked_by_its_exact_scores(digits_ovr):
    # w.0 + b = b; its all-zero code says nothing, whatever the seed
    model, _, Xt, _ = digits_ovr
    Z = sp.vstack([sp.csr_matrix((1, Xt.shape[1])), Xt[:2]]).tocsr()
    exact = OvrPredictor(model).predict_block(Z)
    for seed in range(4):
        h = hash_ovr_model(model, bits=128, seed=seed)
        for estimator in ("score", "margin"):
            hp = OvrPredictor(model, h, filter_k=1, estimator=estimator)
            est = hp.estimates(Z.astype(np.float32).toarray())
            assert np.array_equal(est[0], model.b.astype(np.float64)), (seed, estimator)
            assert hp.predict(Z)[0] == exact.labels[0], (seed, estimator)
