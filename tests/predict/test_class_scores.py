"""The class-score first stage: each class's summed normalised pair margins,
exact (one K x d product) or estimated from codes."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli import OptionError
from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
from hsvm_cli.models.ovo import bag_mean
from hsvm_cli.predict.class_scores import ClassScoreFilter, class_score_weights
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import prepare
from hsvm_cli.train.ovo import train_ovo

from conftest import DIGITS_TEST, run


def _scores_by_definition(model, Xn):
    """Σ over each class's pairs of the bag-mean of ±(w·x + b)/‖w‖."""
    dec = ExactScorer(model).decision(Xn).astype(np.float64)
    norms = np.linalg.norm(np.asarray(model.W, dtype=np.float64), axis=1)
    margins = bag_mean(dec / norms, model.bags)
    S = np.zeros((Xn.shape[0], model.n_classes))
    for p in range(model.n_pairs):
        S[:, model.pair_a[p]] += margins[:, p]
        S[:, model.pair_b[p]] -= margins[:, p]
    return S


@pytest.mark.parametrize("bags", [1, 3])
def test_class_scores_are_the_summed_normalised_margins(digits, bags):
    X, y, Xt, _ = digits
    model = train_ovo(X, y, bags=bags, seed=2) if bags > 1 else train_ovo(X, y, seed=2)
    Xn = prepare("l2", Xt[:60])
    U, beta = class_score_weights(model)
    got = ClassScoreFilter(U, beta).scores(Xn)
    assert np.allclose(got, _scores_by_definition(model, Xn), atol=1e-4)


def test_scores_first_stage_keeping_every_class_is_exact_prediction(digits_model, digits):
    _, _, Xt, _ = digits
    exact = Predictor(digits_model).predict(Xt)
    assert np.array_equal(Predictor(digits_model, first_stage="scores", filter_k=10).predict(Xt), exact)


def test_scores_rank_the_exact_label_among_few_classes(digits_model, digits):
    _, _, Xt, _ = digits
    exact = Predictor(digits_model).predict(Xt)
    labels = Predictor(digits_model, first_stage="scores", filter_k=3).predict(Xt)
    assert (labels == exact).mean() >= 0.99


def test_hashed_scores_estimate_the_scores(digits_model, digits):
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    h = hash_model(digits_model, bits=2048, seed=1)
    exact_f = ClassScoreFilter(*class_score_weights(digits_model))
    hashed = ClassScoreFilter(*class_score_weights(digits_model), encoder=h.encoder(2048))
    s, e = exact_f.scores(Xn), hashed.scores(Xn)
    # The same ordering for most samples' top class, and the estimate from
    # codes is what scoring the codes gives.
    assert (s.argmax(axis=1) == e.argmax(axis=1)).mean() > 0.9
    assert np.array_equal(e, hashed.scores_of_codes(h.encoder(2048).codes(Xn)))


def test_hashed_scores_of_a_sample_without_features_are_the_exact_ones(digits_model):
    # its all-zero code says nothing of its angles; u.0 + beta = beta
    h = hash_model(digits_model, bits=256, seed=1)
    U, beta = class_score_weights(digits_model)
    hashed = ClassScoreFilter(U, beta, encoder=h.encoder(256))
    Z = sp.csr_matrix((2, digits_model.n_features))
    got = hashed.scores(prepare("l2", Z))
    assert np.array_equal(got, np.tile(beta, (2, 1)))
    assert np.array_equal(ClassScoreFilter(U, beta).scores(prepare("l2", Z)), got)


def test_stored_class_scores_give_the_same_predictions(digits_model, digits, tmp_path):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=128, seed=0, class_scores=True)
    save_hash_model(h, tmp_path / "d.hbm")
    back = load_hash_model(tmp_path / "d.hbm")
    assert back.class_W.shape == (10, 64) and np.array_equal(back.class_W, h.class_W)
    a = Predictor(digits_model, back, first_stage="scores", filter_k=2).predict(Xt)
    b = Predictor(digits_model, first_stage="scores", filter_k=2).predict(Xt)
    assert np.array_equal(a, b)


def test_first_stages_that_need_codes_need_a_hash_model(digits_model):
    for stage in ("votes", "hashed-scores"):
        with pytest.raises(OptionError, match="needs a hash model"):
            Predictor(digits_model, first_stage=stage)
    with pytest.raises(OptionError, match="one of"):
        Predictor(digits_model, first_stage="tree")


def test_cli_scores_first_stage_without_a_hash_model(digits_files):
    model, hbm, _ = digits_files
    exact = run(["predict", "-q", "-m", model, DIGITS_TEST]).stdout
    got = run(["predict", "-q", "-m", model, "--first-stage", "scores", "-k", "10", DIGITS_TEST]).stdout
    assert got == exact
    r = run(["predict", "-m", model, "--first-stage", "votes", "-k", "3", DIGITS_TEST], exit_code=2)
    assert "needs a hash model" in r.stderr
    run(["predict", "-q", "-m", model, "-H", hbm, "--first-stage", "hashed-scores", "--bits", "256", "-k", "3",
         DIGITS_TEST])


def _summaries_by_definition(model):
    """u_c, β_c in float64 by the formula, row by row (the order of the
    native sums, so equal to within float32 rounding of the result)."""
    W = np.asarray(model.W, dtype=np.float64)
    b = np.asarray(model.b, dtype=np.float64)
    U = np.zeros((model.n_classes, model.n_features))
    beta = np.zeros(model.n_classes)
    for j in range(W.shape[0]):
        norm = np.sqrt(np.sum(W[j] * W[j]))
        scale = (1.0 / norm) / model.bags if norm > 0 else 0.0
        p = j // model.bags
        U[model.pair_a[p]] += W[j] * scale
        U[model.pair_b[p]] -= W[j] * scale
        beta[model.pair_a[p]] += b[j] * scale
        beta[model.pair_b[p]] -= b[j] * scale
    return U, beta


@pytest.mark.parametrize("bags", [1, 3])
def test_class_summaries_follow_their_definition_and_not_how_rows_are_split(digits, bags):
    from hsvm_cli.models.class_weights import ClassWeightAccumulator, compute_class_weights
    X, y, _, _ = digits
    model = train_ovo(X[:600], y[:600], bags=bags, seed=3, per_class=40)
    U, beta = compute_class_weights(model)
    U_ref, beta_ref = _summaries_by_definition(model)
    np.testing.assert_allclose(U, U_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(beta, beta_ref, rtol=1e-6, atol=1e-6)
    rng = np.random.default_rng(bags)
    cuts = np.sort(rng.choice(np.arange(1, model.n_classifiers), 7, replace=False))
    acc = ClassWeightAccumulator(model.pair_a, model.pair_b, n_classes=model.n_classes,
                                 n_features=model.n_features, bags=model.bags)
    for s, e in zip(np.r_[0, cuts], np.r_[cuts, model.n_classifiers]):
        acc.add(model.W[s:e], model.b[s:e])
    U2, beta2 = acc.result()
    assert U2.tobytes() == U.tobytes() and beta2.tobytes() == beta.tobytes()


def test_a_saved_model_stores_its_class_summaries_and_a_file_without_them_computes_the_same(digits_model, digits,
                                                                                            tmp_path):
    from hsvm_cli.io.container import read_container, write_container
    from hsvm_cli.models.class_weights import compute_class_weights
    from hsvm_cli.models.ovo import MODEL_KIND, MODEL_VERSION, load_model, save_model
    path = tmp_path / "m.hsvm"
    save_model(digits_model, path)
    m = load_model(path)
    U, beta = compute_class_weights(m)
    assert m.class_W.tobytes() == U.tobytes() and m.class_b.tobytes() == beta.tobytes()
    # a file from before they were stored: the same arrays, computed when needed
    c = read_container(str(path), kind=MODEL_KIND, versions={MODEL_VERSION})
    arrays = {k: np.asarray(v) for k, v in c.arrays.items() if k not in ("class_W", "class_b")}
    old = tmp_path / "old.hsvm"
    write_container(old, arrays, kind=MODEL_KIND, version=MODEL_VERSION, meta=c.meta)
    m_old = load_model(old)
    assert m_old.class_W is None and m_old.content_sha256() == m.content_sha256()
    U_old, beta_old = class_score_weights(m_old)
    assert U_old.tobytes() == U.tobytes() and beta_old.tobytes() == beta.tobytes()
    _, _, Xt, _ = digits
    a = Predictor(m, first_stage="scores", filter_k=3).predict_block(Xt)
    b = Predictor(m_old, first_stage="scores", filter_k=3).predict_block(Xt)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.votes, b.votes)


def test_class_summaries_of_the_wrong_shape_are_refused(digits_model, tmp_path):
    from hsvm_cli.errors import ModelFormatError
    from hsvm_cli.io.container import read_container, write_container
    from hsvm_cli.models.ovo import MODEL_KIND, MODEL_VERSION, load_model, save_model
    path = tmp_path / "m.hsvm"
    save_model(digits_model, path)
    c = read_container(str(path), kind=MODEL_KIND, versions={MODEL_VERSION})
    arrays = {k: np.asarray(v) for k, v in c.arrays.items()}
    for change, message in (({"class_W": arrays["class_W"][:-1]}, "class_W must be float32"),
                            ({"class_b": None}, "go together")):
        bad = {k: v for k, v in dict(arrays, **change).items() if v is not None}
        out = tmp_path / "bad.hsvm"
        write_container(out, bad, kind=MODEL_KIND, version=MODEL_VERSION, meta=c.meta)
        with pytest.raises(ModelFormatError, match=message):
            load_model(out)
