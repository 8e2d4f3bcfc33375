import numpy as np

from hsvm_cli.models.ovo import load_model
from hsvm_cli.predict.predictor import Predictor


def test_saved_model_predicts_like_the_trained_one(digits_model, digits_model_file, digits):
    _, _, Xt, yt = digits
    loaded = load_model(digits_model_file)
    assert loaded.content_sha256() == digits_model.content_sha256()
    assert np.array_equal(Predictor(loaded).predict(Xt), Predictor(digits_model).predict(Xt))
