"""LIBLINEAR's probabilities of its logistic-regression models
(hsvm_cli/predict/logistic.py)."""
import numpy as np
import pytest

from hsvm_cli.models.ovo import OvoModel
from hsvm_cli.predict.logistic import logistic_proba, logistic_solver, two_class_as_ovr
from hsvm_cli.predict.ovr import OvrPredictor


def test_probabilities_are_liblinears_quotient_of_logistics():
    s = np.random.default_rng(0).normal(scale=4, size=(50, 7))
    sigma = 1 / (1 + np.exp(-s))
    assert np.allclose(logistic_proba(s), sigma / sigma.sum(axis=1, keepdims=True), rtol=1e-13, atol=0)


def test_every_class_far_below_zero_still_gives_a_distribution():
    # LIBLINEAR's own quotient is 0/0 there (every logistic underflows)
    p = logistic_proba(np.array([[-1000.0, -1001.0, -2000.0]]))
    assert np.isfinite(p).all() and abs(p.sum() - 1) < 1e-15 and p[0, 0] > p[0, 1] > p[0, 2] >= 0


def _two_class(first_is_larger_label):
    pair = (1, 0) if first_is_larger_label else (0, 1)
    return OvoModel(classes=np.array([3, 8]), pair_a=np.array([pair[0]], dtype=np.int32),
                    pair_b=np.array([pair[1]], dtype=np.int32), W=np.array([[1.0, -2.0]], dtype=np.float32),
                    b=np.array([0.5], dtype=np.float32), bags=1, normalize="none",
                    params={"imported": "liblinear", "solver_type": "L2R_LR", "bias": 1.0})


def test_two_class_model_gives_its_first_label_the_logistic_and_a_zero_decision_to_the_second():
    for larger_first in (False, True):
        model = _two_class(larger_first)
        assert logistic_solver(model) == "L2R_LR"
        first, second = (8, 3) if larger_first else (3, 8)
        X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], dtype=np.float32)   # w.x + b = 1.5, -1.5, 0
        pred = OvrPredictor(two_class_as_ovr(model)).predict_block(X, proba=True)
        assert pred.labels.tolist() == [first, second, second]
        col = {3: 0, 8: 1}
        assert np.allclose(pred.proba[:, col[first]], 1 / (1 + np.exp(-np.array([1.5, -1.5, 0.0]))), rtol=1e-7)
        assert np.allclose(pred.proba.sum(axis=1), 1)


def test_models_of_other_solvers_have_no_logistic_probabilities():
    model = _two_class(False)
    model.params = dict(model.params, solver_type="L2R_L2LOSS_SVC_DUAL")
    assert logistic_solver(model) is None
    model.params = {"imported": "libsvm", "solver_type": "L2R_LR"}
    assert logistic_solver(model) is None


def test_the_python_api_gives_the_commands_probabilities(tmp_path):
    from hsvm_cli import import_model, load_svmlight, logistic_predictor
    from hsvm_cli.errors import OptionError

    from conftest import TOOL_FIXTURES
    X, _ = load_svmlight(str(TOOL_FIXTURES / "digits3.test.svm"))
    for name in ("liblinear_lr3", "liblinear_lr2"):
        model = import_model(TOOL_FIXTURES / (name + ".model")).model
        p = logistic_predictor(model)
        P = p.predict_proba(X)
        lines = (TOOL_FIXTURES / (name + ".proba")).read_text().split("\n")
        order = [int(v) for v in lines[0].split()[1:]]
        want = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:] if line])
        cols = np.searchsorted(model.classes, order)
        assert np.abs(P[:, cols] - want).max() < 2e-6
        top2 = np.sort(P, axis=1)[:, -2:]
        clear = top2[:, 1] > top2[:, 0]          # the blank last row ties: the label is LIBLINEAR's first
        assert np.array_equal(p.predict(X)[clear], model.classes[P.argmax(axis=1)][clear])
    svm = import_model(TOOL_FIXTURES / "liblinear_ovr3.model").model
    with pytest.raises(OptionError, match="logistic regression"):
        logistic_predictor(svm)
    with pytest.raises(OptionError, match="logistic regression"):
        OvrPredictor(svm).predict_proba(X)
