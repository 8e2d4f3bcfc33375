"""The class-score first stage: each class's summed normalised pair margins,
exact (one K x d product) or estimated from codes."""
import numpy as np
import pytest

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
