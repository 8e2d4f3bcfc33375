"""Prediction with a circulant hash model: the hash filter, filter-and-refine
and the hashed class-score first stage hash samples with the circulant
projection; its accuracy is the Gaussian projection's, and the votes are the
same bits on every kernel path and thread count."""
import numpy as np
import pytest

from hsvm_cli.hashing.angles import thresholds
from hsvm_cli.hashing.circulant import CirculantProjection
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.class_scores import ClassScoreFilter, class_score_weights
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import prepare

from conftest import kernel_params


@pytest.fixture(scope="module")
def omniglot_hashed(omniglot):
    model, _, _ = omniglot
    return {kind: hash_model(model, bits=1024, seed=1, projection=kind) for kind in ("gaussian", "circulant")}


def test_filter_hashes_samples_with_the_circulant_projection(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=512, seed=4, projection="circulant")
    Xn = prepare("l2", Xt)
    hf = HashFilter(h, bits=256)
    want = CirculantProjection.from_seed(bits=512, n_features=64, seed=4).codes(Xn, 256)
    assert np.array_equal(hf.hash_samples(Xn), want)
    # the votes are the range queries of those codes
    votes, _ = hf.votes(want)
    dist = hamming_distances(want, h.codes, bits=256)
    positive = dist < thresholds(h.theta, 256)
    a, b = digits_model.pair_a, digits_model.pair_b
    ref = np.zeros_like(votes)
    for j in range(a.shape[0]):
        ref[:, a[j]] += positive[:, j]
        ref[:, b[j]] += ~positive[:, j]
    assert np.array_equal(votes, ref)


def test_single_classifier_agreement_is_the_gaussian_projections(omniglot, omniglot_hashed):
    model, Xt, _ = omniglot
    rows = np.sort(np.random.default_rng(0).choice(model.n_classifiers, 400, replace=False))
    Xn = prepare("l2", Xt[:600])
    exact = (np.asarray(Xn @ model.W[rows].T) + model.b[rows]) > 0
    agreement = {}
    for kind, h in omniglot_hashed.items():
        xcodes = HashFilter(h, bits=1024).hash_samples(Xn)
        dist = hamming_distances(xcodes, np.ascontiguousarray(h.codes[rows]), bits=1024)
        agreement[kind] = float(((dist < thresholds(h.theta[rows], 1024)) == exact).mean())
    assert agreement["circulant"] >= 0.88 and abs(agreement["circulant"] - agreement["gaussian"]) <= 0.01, agreement


def test_filter_and_refine_with_a_circulant_hash_model_keeps_exact_accuracy(omniglot, omniglot_hashed):
    model, Xt, yt = omniglot
    exact = float((Predictor(model).predict(Xt) == yt).mean())
    acc = {kind: float((Predictor(model, h, bits=1024, filter_k=24).predict(Xt) == yt).mean())
           for kind, h in omniglot_hashed.items()}
    assert acc["circulant"] >= exact - 0.005 and abs(acc["circulant"] - acc["gaussian"]) <= 0.01, (exact, acc)


def test_keeping_every_class_is_exact_prediction(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=0, projection="circulant")
    hp = Predictor(digits_model, h, bits=128, filter_k=digits_model.n_classes)
    assert np.array_equal(hp.predict(Xt), Predictor(digits_model).predict(Xt))


@pytest.mark.parametrize("kernel", kernel_params())
def test_votes_and_labels_are_the_same_on_every_kernel_path_and_thread_count(omniglot, omniglot_hashed, kernel):
    model, Xt, _ = omniglot
    h = omniglot_hashed["circulant"]
    X = Xt[:300]
    ref = Predictor(model, h, bits=512, filter_k=5, threads=1, kernel="portable").predict_block(X)
    for threads in (1, 2):
        got = Predictor(model, h, bits=512, filter_k=5, threads=threads, kernel=kernel).predict_block(X)
        assert np.array_equal(got.labels, ref.labels) and np.array_equal(got.votes, ref.votes)


def test_hashed_class_scores_hash_the_summaries_and_samples_with_the_circulant_projection(digits_model, digits):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=1024, seed=3, projection="circulant", class_scores=True)
    p = CirculantProjection.from_seed(bits=1024, n_features=64, seed=3)
    U, beta = class_score_weights(digits_model)
    Xn = prepare("l2", Xt)
    f = ClassScoreFilter(h.class_W, h.class_b, encoder=h.encoder(1024))
    dist = hamming_distances(p.codes(Xn), p.codes(U), bits=1024)
    want = np.sqrt(np.einsum("ij,ij->i", U, U, dtype=np.float64)) * np.cos(np.pi * dist / 1024) + beta
    assert np.array_equal(f.scores(Xn), want)
    hp = Predictor(digits_model, h, first_stage="hashed-scores", filter_k=3)
    assert (hp.predict(Xt) == Predictor(digits_model).predict(Xt)).mean() >= 0.97
