"""Platt sigmoids shrunk toward the pooled sigmoid, the choice of the prior
strength, and the sharpness factor (proba/shrinkage.py), against their
definitions and the unshrunk fit."""
import numpy as np
import pytest

from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.proba import estimators as est
from hsvm_cli.proba.mass_coupling import PairTable, couple_mass
from hsvm_cli.proba.shrinkage import (
    choose_prior_samples,
    fit_platt_shrunk,
    fit_sharpness,
    pooled_sigmoid,
    sample_halves,
)


def _pairs_data(rng, sizes, thetas):
    """Decision values and labels of pairs with true sigmoids thetas[p] = (A, B)."""
    dec, pair, target = [], [], []
    for p, (m, (A, B)) in enumerate(zip(sizes, thetas)):
        f = rng.normal(scale=2.0, size=m)
        t = (rng.random(m) < 1 / (1 + np.exp(A * f + B))).astype(np.int64)
        dec.append(f)
        pair.append(np.full(m, p))
        target.append(t)
    return np.concatenate(dec), np.concatenate(pair), np.concatenate(target)


def _map_gradient(A, B, f, t, theta0, H, n0):
    z = A * f + B
    s = 1 / (1 + np.exp(z))
    d1 = t - s
    g = np.array([np.sum(f * d1), np.sum(d1)])
    return g + n0 * H @ (np.array([A, B]) - np.asarray(theta0))


def test_each_pair_is_the_map_estimate_of_its_samples_and_the_prior():
    rng = np.random.default_rng(0)
    dec, pair, target = _pairs_data(rng, [5, 40, 400], [(-1.5, 0.2), (-0.7, -0.3), (-2.5, 0.5)])
    pooled = pooled_sigmoid(dec, target)
    A, B = fit_platt_shrunk(dec, pair, target, 3, prior_samples=20.0, pooled=pooled)
    for p in range(3):
        m = pair == p
        g = _map_gradient(A[p], B[p], dec[m], target[m], pooled[0], pooled[1], 20.0)
        assert np.abs(g).max() < 1e-4


def test_shrinkage_follows_the_sample_count():
    # Ten pairs each of 4, 40 and 400 samples share a steep true sigmoid far
    # from the pooled one (30 large background pairs set it): the more
    # samples, the further a pair moves from the pooled sigmoid toward its own.
    rng = np.random.default_rng(1)
    sizes = [4] * 10 + [40] * 10 + [400] * 10 + [300] * 30
    thetas = [(-4.0, 1.0)] * 30 + [(-0.5, 0.0)] * 30
    dec, pair, target = _pairs_data(rng, sizes, thetas)
    (A0, _), _ = pooled_sigmoid(dec, target)
    A, _ = fit_platt_shrunk(dec, pair, target, len(sizes), prior_samples=30.0)
    moved = [float(np.mean(np.abs(A[g * 10:(g + 1) * 10] - A0))) for g in range(3)]
    assert moved[0] < moved[1] < moved[2]
    assert moved[0] < 0.5
    # (The weights are Fisher information, not raw counts: a steep sigmoid's
    # samples carry less of it each, so these pairs stay nearer the pool than
    # 400/(400 + 30) would say.)


def test_a_huge_prior_gives_the_pooled_sigmoid_and_none_the_pairs_own_fit():
    rng = np.random.default_rng(2)
    dec, pair, target = _pairs_data(rng, [200, 300, 250], [(-1.0, 0.5), (-2.0, -0.5), (-0.5, 0.0)])
    pooled = pooled_sigmoid(dec, target)
    A, B = fit_platt_shrunk(dec, pair, target, 3, prior_samples=1e9, pooled=pooled)
    assert np.allclose(A, pooled[0][0], atol=1e-4) and np.allclose(B, pooled[0][1], atol=1e-4)
    A, B = fit_platt_shrunk(dec, pair, target, 3, prior_samples=0.0)
    ref_A, ref_B = est.fit_platt(dec, pair, target, 3, prior_counts=False)
    assert np.allclose(A, ref_A, atol=1e-3) and np.allclose(B, ref_B, atol=1e-3)


def test_pairs_without_samples_get_the_pooled_sigmoid():
    rng = np.random.default_rng(3)
    dec, pair, target = _pairs_data(rng, [100, 0, 80], [(-1.0, 0.0), (0, 0), (-1.5, 0.3)])
    pooled = pooled_sigmoid(dec, target)
    A, B = fit_platt_shrunk(dec, pair, target, 3, prior_samples=5.0, pooled=pooled)
    assert (A[1], B[1]) == pytest.approx(pooled[0])


def test_cross_fitting_picks_a_strong_prior_for_shared_sigmoids_and_a_weak_one_for_distinct_ones():
    rng = np.random.default_rng(4)
    P = 200
    same = [(-1.2, 0.1)] * P
    dec, pair, target = _pairs_data(rng, [6] * P, same)
    sample = np.arange(dec.shape[0])
    strong, scores = choose_prior_samples(dec, pair, target, sample, P)
    assert strong >= 100 and min(scores, key=scores.get) == strong
    distinct = [(-rng.uniform(0.3, 5.0), rng.normal()) for _ in range(40)]
    dec, pair, target = _pairs_data(rng, [400] * 40, distinct)
    weak, _ = choose_prior_samples(dec, pair, target, np.arange(dec.shape[0]), 40)
    assert weak <= 10


def test_halves_split_samples_not_values():
    sample = np.repeat(np.arange(50), 9)
    first = sample_halves(sample, seed=3)
    assert first.shape == (50,) and 20 <= first.sum() <= 30
    assert np.array_equal(first, sample_halves(sample, seed=3))


def test_sharpness_recovers_the_factor_that_made_the_labels():
    # Labels drawn from the coupled distribution of sigma(gamma* z): the
    # fitted gamma is near gamma*.
    rng = np.random.default_rng(5)
    K, n = 12, 1500
    pa, pb = canonical_pairs(K)
    table = PairTable(pa, pb, K)
    s = rng.normal(size=(n, K))
    z = -(s[:, pa] - s[:, pb])                        # r = 1/(1 + e^{gamma z})
    true_gamma = 1.7

    def couple(r, winner):
        return couple_mass(r, winner, table)
    P = couple(1 / (1 + np.exp(true_gamma * z)), np.argmax(s, axis=1))
    y = np.array([rng.choice(K, p=row) for row in P])
    gamma = fit_sharpness(z, np.argmax(s, axis=1), y, couple)
    assert abs(gamma - true_gamma) < 0.25
