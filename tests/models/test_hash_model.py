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
    with pytest.raises(ModelMismatchError, match="its pairs differ from the model's"):
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


@pytest.mark.parametrize("dense", [False, True])
def test_hash_data_reads_float32_and_writes_the_codes_of_the_float64_samples(digits_model, tmp_path, dense):
    # prepare() and the fingerprints round samples to float32 first: read so,
    # the codes, labels and fingerprints are those of the samples read as float64
    from hsvm_cli.io.svmlight import load_svmlight, write_svmlight
    from hsvm_cli.models.codes import hash_data, read_codes, sample_fingerprints
    from hsvm_cli.preprocess import prepare

    from conftest import DIGITS_TEST
    source = DIGITS_TEST
    if dense:
        X, y = load_svmlight(DIGITS_TEST, n_features=digits_model.n_features)
        Xd = X.toarray() + 1.0 / 3.0        # every column stored, values with float64 digits
        source = tmp_path / "dense.svm"
        with open(source, "wb") as fh:
            write_svmlight(fh, Xd, y)
    hm = hash_model(digits_model, bits=256, seed=2)
    hash_data(hm, str(source), tmp_path / "c.codes")
    got = read_codes(tmp_path / "c.codes")
    X, y = load_svmlight(str(source), n_features=digits_model.n_features)
    assert X.dtype == np.float64
    assert np.array_equal(got.codes, hm.encoder(256).codes(prepare(hm.normalize, X)))
    assert np.array_equal(got.labels, y) and np.array_equal(got.fingerprints, sample_fingerprints(X))
