import numpy as np
import pytest

from hsvm_cli.errors import ModelMismatchError
from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor


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
    from hsvm_cli.train.ovo import train_ovo
    X, y, _, _ = digits
    other = train_ovo(X, y, C=0.5, seed=0)
    h = hash_model(digits_model, bits=128, seed=0)
    with pytest.raises(ModelMismatchError):
        Predictor(other, h, filter_k=3)


def test_hash_model_whose_pairs_differ_under_the_models_digest_says_so(digits_model):
    # the digest names the model, the hash model's own pairs do not: not "another model"
    h = hash_model(digits_model, bits=64, seed=0)
    h.pair_a, h.pair_b = h.pair_b.copy(), h.pair_a.copy()
    with pytest.raises(ModelMismatchError, match="its classes, pairs or bags differ from the model's"):
        h.check_model(digits_model)


def test_bits_must_be_a_multiple_of_64_within_the_hashed_length(digits_model):
    h = hash_model(digits_model, bits=256, seed=0)
    for bad in (100, 320, 0):
        with pytest.raises(ValueError, match="multiple of 64"):
            HashFilter(h, bits=bad)


def test_stored_projection_equals_derived_projection(digits_model):
    a = hash_model(digits_model, bits=128, seed=2, store_projection=True)
    b = hash_model(digits_model, bits=128, seed=2)
    assert np.array_equal(a.projection(64), b.projection(64))
