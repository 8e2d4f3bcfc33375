"""Exact vote counting (native/votes.c and its instruction-set files) against
the numpy oracle, bit for bit, on every code path the machine has, for every
pair order and bag count: the confidences break vote ties, so the order of
their double additions is part of the output."""
import functools

import numpy as np
import pytest

from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.predict.exact import ovo_votes
from hsvm_cli.support.kernels import available_kernels

from conftest import kernel_params
from oracles.votes_ref import ovo_votes_ref

KERNEL_PARAMS = kernel_params()


def decisions(rng, n, cols):
    """Decision values whose sums depend on their order (magnitudes from 1e-6
    to 1e6), with exact zeros of both signs, subnormals, infinities, NaNs."""
    d = rng.standard_normal((n, cols)) * 10.0 ** rng.integers(-6, 7, size=(n, cols))
    d = d.astype(np.float32)
    u = rng.random((n, cols))
    d[u < 0.04] = 0.0
    d[(u >= 0.04) & (u < 0.06)] = -0.0
    d[(u >= 0.06) & (u < 0.07)] = np.float32(1e-40)
    d[(u >= 0.07) & (u < 0.075)] = np.inf
    d[(u >= 0.075) & (u < 0.08)] = -np.inf
    d[(u >= 0.08) & (u < 0.085)] = np.nan
    return d


def pair_list(rng, K, order):
    a, b = canonical_pairs(K)
    if order == "canonical":
        return a, b
    if order == "flipped":            # every pair as (b, a): runs with a above its b range
        return b.copy(), a.copy()
    if order == "shuffled":
        perm = rng.permutation(a.size)
        a, b = a[perm], b[perm]
        flip = rng.random(a.size) < 0.5
        return np.where(flip, b, a).astype(np.int32), np.where(flip, a, b).astype(np.int32)
    if order == "self":               # (a, a) pairs inside would-be runs, and repeats
        pa = np.repeat(np.arange(K), K).astype(np.int32)
        pb = np.tile(np.arange(K), K).astype(np.int32)
        keep = rng.random(pa.size) < 0.8
        pa, pb = pa[keep], pb[keep]
        dup = rng.integers(0, pa.size, size=pa.size // 5)
        return np.concatenate([pa, pa[dup]]), np.concatenate([pb, pb[dup]])
    raise AssertionError(order)


def assert_bits_equal(got, want):
    assert got[0].dtype == np.int32 and got[1].dtype == np.float64
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].shape == want[1].shape
    # Bytes, not values: -0.0 against 0.0 and NaN payloads count too.
    assert got[1].tobytes() == want[1].tobytes()


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bags", (1, 2, 3, 4))
@pytest.mark.parametrize("order", ("canonical", "flipped", "shuffled", "self"))
def test_votes_match_oracle_bit_for_bit(kernel, bags, order):
    rng = np.random.default_rng([bags, len(order)])
    K = int(rng.integers(9, 24))
    pa, pb = pair_list(rng, K, order)
    for n in (1, 2, 3, 4, 5, 11):
        dec = decisions(rng, n, pa.size * bags)
        want = ovo_votes_ref(dec, pa, pb, bags=bags, n_classes=K)
        assert_bits_equal(ovo_votes(dec, pa, pb, bags=bags, n_classes=K, kernel=kernel), want)


@functools.lru_cache(maxsize=None)
def _k300_case():
    rng = np.random.default_rng(300)
    K = 300
    pa, pb = canonical_pairs(K)
    dec = decisions(rng, 6, pa.size)
    return K, pa, pb, dec, ovo_votes_ref(dec, pa, pb, bags=1, n_classes=K)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_runs_longer_than_a_chunk_are_exact(kernel):
    # K = 300: class 0's run of 299 pairs spans two b-side passes of 256
    # pairs, and the tails of later runs take every length below 16.
    K, pa, pb, dec, want = _k300_case()
    assert_bits_equal(ovo_votes(dec, pa, pb, bags=1, n_classes=K, kernel=kernel), want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_every_run_length_and_offset(kernel):
    # Runs of every length 1..40 at every alignment of their first b, one
    # after another (class a = 0 throughout, b restarting at 1 + shift).
    rng = np.random.default_rng(41)
    pa, pb = [], []
    for length in range(1, 41):
        shift = length % 17
        pa += [0] * length
        pb += list(range(1 + shift, 1 + shift + length))
    pa, pb = np.array(pa, np.int32), np.array(pb, np.int32)
    K = int(pb.max()) + 1
    dec = decisions(rng, 7, pa.size)
    want = ovo_votes_ref(dec, pa, pb, bags=1, n_classes=K)
    assert_bits_equal(ovo_votes(dec, pa, pb, bags=1, n_classes=K, kernel=kernel), want)


def test_oracle_data_make_the_order_of_additions_visible():
    # The bit-for-bit tests could not see a reordered sum if these decision
    # values summed alike in any order: reversing the pair list must change
    # some confidence bits (the votes stay the same).
    rng = np.random.default_rng(3)
    K = 30
    pa, pb = canonical_pairs(K)
    dec = decisions(rng, 8, pa.size)
    fwd = ovo_votes_ref(dec, pa, pb, bags=1, n_classes=K)
    rev = ovo_votes_ref(dec[:, ::-1], pa[::-1], pb[::-1], bags=1, n_classes=K)
    np.testing.assert_array_equal(fwd[0], rev[0])
    assert fwd[1].tobytes() != rev[1].tobytes()


def test_every_kernel_gives_the_same_bits_as_the_default(monkeypatch):
    rng = np.random.default_rng(5)
    K = 50
    pa, pb = canonical_pairs(K)
    dec = decisions(rng, 9, pa.size)
    first = ovo_votes(dec, pa, pb, bags=1, n_classes=K)
    for kernel in available_kernels():
        monkeypatch.setenv("HSVM_KERNEL", kernel)
        assert_bits_equal(ovo_votes(dec, pa, pb, bags=1, n_classes=K), first)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_no_pairs_give_zero_votes_and_confidences(kernel):
    none = np.zeros(0, np.int32)
    votes, conf = ovo_votes(np.zeros((3, 0), np.float32), none, none, bags=2, n_classes=4, kernel=kernel)
    assert votes.shape == conf.shape == (3, 4)
    assert not votes.any() and conf.tobytes() == bytes(3 * 4 * 8)


def test_votes_reject_bad_kernel_and_classes():
    pa, pb = canonical_pairs(4)
    dec = np.zeros((2, pa.size), np.float32)
    with pytest.raises(ValueError, match="kernel"):
        ovo_votes(dec, pa, pb, bags=1, n_classes=4, kernel="neon")
    with pytest.raises(ValueError, match="outside"):
        ovo_votes(dec, pa, pb, bags=1, n_classes=3)
    with pytest.raises(ValueError, match="columns"):
        ovo_votes(dec[:, 1:], pa, pb, bags=1, n_classes=4)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bags", (1, 2, 3))
@pytest.mark.parametrize("order", ("canonical", "self"))
def test_bias_added_by_the_kernel_gives_the_bits_of_adding_it_first(kernel, bags, order):
    rng = np.random.default_rng([7, bags])
    K = 21
    pa, pb = pair_list(rng, K, order)
    prod = decisions(rng, 6, pa.size * bags)
    bias = decisions(rng, 1, pa.size * bags)[0]
    with np.errstate(invalid="ignore"):
        dec = prod + bias
    want = ovo_votes_ref(dec, pa, pb, bags=bags, n_classes=K)
    got = ovo_votes(prod, pa, pb, bags=bags, n_classes=K, bias=bias, kernel=kernel)
    assert_bits_equal(got, want)
    assert not np.shares_memory(got[1], prod)
    with pytest.raises(ValueError, match="bias"):
        ovo_votes(prod, pa, pb, bags=bags, n_classes=K, bias=bias[1:], kernel=kernel)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_exact_scorer_votes_as_on_its_decision_values(digits_model, digits, kernel):
    # The scorer adds the bias inside the vote kernel and reuses one product
    # buffer across blocks: the bits of voting on decision() of the same
    # blocks (BLAS may round a product differently with the block's height),
    # dense or sparse.
    import scipy.sparse as sp

    from hsvm_cli.predict.exact import ExactScorer
    from hsvm_cli.preprocess import prepare
    m = digits_model
    Xs = prepare(m.normalize, digits[2])
    X = Xs.toarray() if hasattr(Xs, "toarray") else Xs
    scorer = ExactScorer(m)
    for rows in (scorer.block_rows(), 37):
        scorer.block_rows = lambda: rows
        for A in (X, sp.csr_matrix(X)):
            dec = np.concatenate([scorer.decision(A[s:s + rows]) for s in range(0, X.shape[0], rows)])
            want = ovo_votes_ref(dec, m.pair_a, m.pair_b, bags=m.bags, n_classes=m.n_classes)
            assert_bits_equal(scorer.votes(A, kernel=kernel), want)
