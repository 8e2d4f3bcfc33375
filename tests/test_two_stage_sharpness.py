"""The two-stage probabilities' second-stage sharpness (tune._fit_two_stage):
fitted for the setting predict -C --proba uses, stored in the calibration,
applied by that setting's predictor only, and better on held-out data."""
import pytest
from test_tune import _split

from hsvm_cli.evaluation.calibration_metrics import nll
from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.support.labels import class_index
from hsvm_cli.tune import calibrate


@pytest.fixture(scope="module")
def omniglot_two_stage(omniglot):
    model, Xt, yt = omniglot
    Xv, yv, Xs, ys = _split(Xt, yt)
    h = hash_model(model, bits=1024, seed=1)
    cal = calibrate(model, h, Xv, yv, bits_grid=[1024], k_grid=[24], epsilons=[], rules=["vote"],
                    first_stages=["votes"], repeat=1, timing_budget=0.0)
    cal.setting = Setting("hash", 1024, 24)
    from hsvm_cli.tune import _fit_two_stage
    cal.two_stage = None
    _fit_two_stage(cal, model, h, Xv, class_index(model.classes, yv), 1)
    return model, h, cal, Xv, yv, Xs, ys


def test_the_sharpness_is_fitted_for_the_proba_path_and_applied_there_only(omniglot_two_stage):
    model, h, cal, *_ = omniglot_two_stage
    t = cal.two_stage
    assert (t["bits"], t["k"], t["epsilon"]) == (1024, 24, None) and t["sharpness"] != 1.0
    assert Predictor.from_calibration(model, cal, h, proba=True).second_stage_sharpness == t["sharpness"]
    assert Predictor(model, h, bits=1024, filter_k=24, calibration=cal).second_stage_sharpness == t["sharpness"]
    assert Predictor(model, h, bits=1024, filter_k=8, calibration=cal).second_stage_sharpness == 1.0
    assert cal.second_stage_sharpness(512, 24, None) == 1.0
    assert cal.second_stage_sharpness(1024, 24, 0.01) == 1.0


def test_the_fitted_sharpness_minimises_validation_nll_and_lowers_held_out_nll(omniglot_two_stage):
    model, h, cal, Xv, yv, Xs, ys = omniglot_two_stage
    p = Predictor.from_calibration(model, cal, h, proba=True)
    g = p.second_stage_sharpness

    def score(X, y, sharpness):
        p.second_stage_sharpness = sharpness
        return nll(p.predict_proba(X), class_index(model.classes, y))

    val = {s: score(Xv, yv, s) for s in (1.0, g / 1.5, g, g * 1.5)}
    assert val[g] <= min(val.values())
    assert score(Xs, ys, g) < score(Xs, ys, 1.0)


def test_the_two_stage_sharpness_survives_the_file(omniglot_two_stage, tmp_path):
    _, _, cal, *_ = omniglot_two_stage
    save_calibration(cal, tmp_path / "c.cal")
    assert load_calibration(tmp_path / "c.cal").two_stage == cal.two_stage
    cal2 = load_calibration(tmp_path / "c.cal")
    cal2.two_stage = None
    save_calibration(cal2, tmp_path / "d.cal")
    assert load_calibration(tmp_path / "d.cal").two_stage is None


def test_an_exact_proba_path_fits_no_two_stage_sharpness(digits_model, digits):
    _, _, Xt, yt = digits
    cal = calibrate(digits_model, None, Xt[:100], yt[:100], repeat=1, rules=["vote"], first_stages=[])
    assert cal.two_stage is None
