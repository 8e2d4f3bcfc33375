import numpy as np

from hsvm_cli.models.ovo import load_model
from hsvm_cli.predict.predictor import Predictor


def test_saved_model_predicts_like_the_trained_one(digits_model, digits_model_file, digits):
    _, _, Xt, yt = digits
    loaded = load_model(digits_model_file)
    assert loaded.content_sha256() == digits_model.content_sha256()
    assert np.array_equal(Predictor(loaded).predict(Xt), Predictor(digits_model).predict(Xt))


def test_models_show_their_shape_not_their_arrays(digits_model, digits):
    from hsvm_cli.models.hashed import hash_model
    from hsvm_cli.tune import calibrate
    _, _, Xt, yt = digits
    assert repr(digits_model) == "OvoModel(10 classes, 45 pairs x 1 bag, 64 features, normalize='l2', C=1)"
    h = hash_model(digits_model, bits=128, seed=2)
    assert repr(h) == "HashModel(10 classes, 45 pairs x 1 bag, 128 bits, seed 2, normalize='l2')"
    cal = calibrate(digits_model, h, Xt, yt, repeat=1, timing_budget=0)
    assert repr(cal).startswith("Calibration(45 pairs, first stage at bits ") and len(repr(cal)) < 300


def test_saving_what_is_not_a_model_is_a_type_error_naming_it(tmp_path):
    import pytest

    from hsvm_cli.models.ovo import save_model
    for thing in (None, "model.hsvm"):
        with pytest.raises(TypeError, match="model must be an OvoModel .*, not %s" % type(thing).__name__):
            save_model(thing, tmp_path / "m.hsvm")
    assert not (tmp_path / "m.hsvm").exists()
