"""Coupling over the classes that carry mass (proba/mass_coupling.py) against
coupling all classes (Wu, Lin & Weng's method 2, proba/estimators.couple)."""
import numpy as np

from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.proba import estimators as est
from hsvm_cli.proba.mass_coupling import K_MAX, PairTable, couple_mass


def _random_problem(rng, K, n, *, flip=0.3, noise=0.5):
    a, b = canonical_pairs(K)
    turn = rng.random(a.shape[0]) < flip
    pa, pb = np.where(turn, b, a), np.where(turn, a, b)
    score = rng.normal(scale=3.0, size=(n, K))
    logit = score[:, pa] - score[:, pb] + noise * rng.normal(size=(n, pa.shape[0]))
    r = 1 / (1 + np.exp(-logit))                      # P(pair_a | pair)
    R = np.full((n, K, K), 0.5)
    R[:, pa, pb] = r
    R[:, pb, pa] = 1 - r
    return pa, pb, r, R, np.argmax(score, axis=1)


def test_up_to_k_max_classes_it_is_method_2_over_all_classes():
    rng = np.random.default_rng(0)
    pa, pb, r, R, win = _random_problem(rng, K_MAX, 5)
    assert np.array_equal(couple_mass(r, win, PairTable(pa, pb, K_MAX)), est.couple(R))


def test_with_many_classes_it_is_close_to_coupling_all_of_them():
    rng = np.random.default_rng(1)
    pa, pb, r, R, win = _random_problem(rng, 150, 12)
    P = couple_mass(r, win, PairTable(pa, pb, 150))
    full = est.couple(R)
    assert np.allclose(P.sum(axis=1), 1.0) and (P >= 0).all()
    # The classes left out of the exact coupling get a one-step value that
    # underestimates small probabilities a little: small total variation.
    assert np.abs(P - full).max() < 1e-2 and np.abs(P - full).sum(axis=1).max() < 0.06
    assert np.array_equal(P.argmax(axis=1), full.argmax(axis=1))


def test_pair_orientation_does_not_matter():
    rng = np.random.default_rng(2)
    pa, pb, r, R, win = _random_problem(rng, 90, 6, flip=0.0)
    turned = couple_mass(1 - r, win, PairTable(pb, pa, 90))
    assert np.allclose(couple_mass(r, win, PairTable(pa, pb, 90)), turned, atol=1e-12)


def test_classes_outside_the_coupled_set_get_the_one_step_value():
    rng = np.random.default_rng(3)
    K = 100
    pa, pb, r, R, win = _random_problem(rng, K, 1, noise=0.0)
    P = couple_mass(r, win, PairTable(pa, pb, K), k_max=10)
    Rm = R[0]
    S = np.argsort(-P[0])[:10]
    rest = np.setdiff1d(np.arange(K), S)
    # Up to the final normalisation: p_c = sum_S r_sc r_cs p_s / sum_{s != c} r_sc^2.
    off = ~np.eye(K, dtype=bool)
    one_step = (Rm[np.ix_(S, rest)] * Rm[np.ix_(rest, S)].T * P[0, S][:, None]).sum(0) / \
        ((Rm ** 2) * off).sum(0)[rest]
    assert np.allclose(P[0, rest], one_step, rtol=1e-9)


def _incidence_den(r, pa, pb, K):
    # the class-by-pair incidence products the C loop replaced, in pair order
    import scipy.sparse as sp
    P = pa.shape[0]
    inc_a = sp.csr_matrix((np.ones(P), (np.arange(P), pa)), shape=(P, K))
    inc_b = sp.csr_matrix((np.ones(P), (np.arange(P), pb)), shape=(P, K))
    return np.asarray((inc_a.T @ ((1.0 - r) ** 2).T + inc_b.T @ (r ** 2).T).T)


def test_the_step_s_denominators_are_the_incidence_products_bit_for_bit():
    rng = np.random.default_rng(4)
    for K, flip, shuffle in ((70, 0.0, False), (70, 0.3, False), (70, 0.0, True), (2, 0.0, False)):
        pa, pb, r, _, _ = _random_problem(rng, K, 3, flip=flip)
        if shuffle:     # not train-ovo's order: the general loop
            order = rng.permutation(pa.shape[0])
            pa, pb, r = pa[order], pb[order], r[:, order]
        got = PairTable(pa, pb, K).den(r)
        assert got.tobytes() == _incidence_den(r, pa, pb, K).tobytes(), (K, flip, shuffle)


def test_the_cached_pair_table_keeps_no_model_array_alive():
    # a two-class model's pair arrays are views of its memory-mapped file: the class-level cache kept up
    # to nine replaced or deleted model files mapped after their models were dropped
    import gc
    import weakref
    pa, pb = np.array([0, 0, 1], dtype=np.int64), np.array([1, 2, 2], dtype=np.int64)
    table = PairTable.cached(pa, pb, 3)
    assert PairTable.cached(pa, pb, 3) is table
    alive = weakref.ref(pa)
    del pa, pb
    gc.collect()
    assert alive() is None and table.a.tolist() == [0, 0, 1]
