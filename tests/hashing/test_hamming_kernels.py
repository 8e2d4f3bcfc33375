"""Hamming voting / distance kernels against the numpy reference, at every SIMD
level the machine has (levels it lacks are skipped, not faked)."""
import functools

import numpy as np
import pytest

from hsvm_cli.hashing.hamming import (
    HammingCodes,
    HammingVoter,
    hamming_distances,
    hamming_vote,
)
from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.support.kernels import available_kernels

from conftest import kernel_params
from oracles.hamming_ref import (
    hamming_distances_ref,
    hamming_vote_ref,
    popcount64,
    popcount64_table,
)

AVAILABLE = available_kernels()
KERNEL_PARAMS = kernel_params()
BITS = (64, 128, 192, 256, 1024, 4096)


def codes(rng, rows, words):
    return rng.integers(0, 2**64, size=(rows, words), dtype=np.uint64, endpoint=False)


def pairs(rng, n_classes, order):
    """canonical: a < b, a-major (hsvm's models); shuffled: the same set in
    random order and orientation; random: arbitrary pairs with repeats and a == b
    (fragmented blocks, the lane-by-lane path)."""
    if order == "random":
        n_pairs = int(rng.integers(20, 60))
        return (rng.integers(0, n_classes, n_pairs).astype(np.int32),
                rng.integers(0, n_classes, n_pairs).astype(np.int32))
    a, b = canonical_pairs(n_classes)
    if order == "shuffled":
        perm = rng.permutation(a.size)
        a, b = a[perm], b[perm]
        flip = rng.random(a.size) < 0.5
        a, b = np.where(flip, b, a), np.where(flip, a, b)
    return a.astype(np.int32), b.astype(np.int32)


def thresholds(rng, m, bits):
    """Around the distance distribution of random codes (both outcomes, and
    even bag splits on both sides of the D < T tie-break) plus the edges."""
    spread = max(2, int(np.sqrt(bits)) // 2)
    thr = rng.integers(bits // 2 - spread, bits // 2 + spread + 1, size=m)
    edges = rng.random(m)
    thr[edges < 0.08] = 0
    thr[(edges >= 0.08) & (edges < 0.16)] = bits
    thr[(edges >= 0.16) & (edges < 0.24)] = bits + 1
    return thr.astype(np.int32)


def assert_votes_equal(got, want):
    assert got[0].dtype == np.int32 and got[1].dtype == np.int32
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_reference_by_hand():
    # 2 bags per pair, 3 classes, 64-bit codes.  x = 0, so d = popcount(c).
    x = np.zeros((1, 1), dtype=np.uint64)
    c = np.array([[0b1], [0b111],        # pair 0 (0 vs 1): d = 1, 3
                  [0b11], [0b1111],      # pair 1 (0 vs 2): d = 2, 4
                  [0b111], [0b11111]],   # pair 2 (1 vs 2): d = 3, 5
                 dtype=np.uint64)
    thr = np.array([2, 2,                # cnt 1 of 2, D = 4 == T = 4 -> b (class 1)
                    3, 4,                # cnt 1 of 2, D = 6 <  T = 7 -> a (class 0)
                    4, 6], dtype=np.int32)  # cnt 2 of 2 -> a (class 1)
    pa = np.array([0, 0, 1], dtype=np.int32)
    pb = np.array([1, 2, 2], dtype=np.int32)
    want_votes = np.array([[1, 2, 0]], dtype=np.int32)
    want_dsum = np.array([[4 + 6, -4 + 8, -6 - 8]], dtype=np.int32)
    votes, dsum = hamming_vote_ref(x, c, thr, pa, pb, bags=2, n_classes=3, bits=64)
    np.testing.assert_array_equal(votes, want_votes)
    np.testing.assert_array_equal(dsum, want_dsum)
    for kernel in AVAILABLE:
        for packed in (True, False):
            voter = HammingVoter(c, thr, pa, pb, bags=2, n_classes=3, bits=64, _packed=packed)
            assert_votes_equal(voter.vote(x, kernel=kernel), (want_votes, want_dsum))


def test_popcount_table_matches_builtin():
    rng = np.random.default_rng(1)
    words = codes(rng, 50, 7)
    want = np.array([[bin(int(v)).count("1") for v in row] for row in words])
    np.testing.assert_array_equal(popcount64_table(words), want)
    np.testing.assert_array_equal(popcount64(words), want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("bags", (1, 2, 3, 4))
def test_vote_matches_reference(kernel, bits, bags):
    rng = np.random.default_rng([bits, bags])
    for order in ("canonical", "shuffled", "random"):
        pa, pb = pairs(rng, int(rng.integers(7, 12)), order)
        n_classes = int(max(pa.max(), pb.max())) + 1 + int(rng.integers(0, 2))
        m = pa.size * bags
        n = int(rng.choice([1, 7, 33]))
        words = bits // 64
        # Wider rows than `bits` needs: only the prefix may count.
        x = codes(rng, n, words + int(rng.integers(0, 2)))
        c = codes(rng, m, words + int(rng.integers(0, 3)))
        thr = thresholds(rng, m, bits)
        want = hamming_vote_ref(x, c, thr, pa, pb, bags=bags, n_classes=n_classes, bits=bits)
        for packed in (True, False):
            voter = HammingVoter(c, thr, pa, pb, bags=bags, n_classes=n_classes, bits=bits,
                                 _packed=packed)
            assert voter.packed == packed  # these sizes always fit the packing bound
            assert_votes_equal(voter.vote(x, kernel=kernel, threads=1), want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bags", (1, 2, 3))
def test_vote_long_runs(kernel, bags):
    # 40 classes: runs of one class a longer than a block, so whole 16-lane
    # (and 8-lane) segments take the vector path, next to partial ones.
    rng = np.random.default_rng(bags + 20)
    for order in ("canonical", "shuffled"):
        pa, pb = pairs(rng, 40, order)
        x = codes(rng, 13, 2)
        c = codes(rng, pa.size * bags, 2)
        thr = thresholds(rng, pa.size * bags, 128)
        want = hamming_vote_ref(x, c, thr, pa, pb, bags=bags, n_classes=40, bits=128)
        for packed in (True, False):
            voter = HammingVoter(c, thr, pa, pb, bags=bags, n_classes=40, bits=128,
                                 _packed=packed)
            assert_votes_equal(voter.vote(x, kernel=kernel, threads=1), want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bits,n_classes,n", [(256, 70, 450), (4096, 20, 40)])
def test_vote_spans_chunks_and_groups(kernel, bits, n_classes, n):
    # Enough pairs for several classifier chunks (runs of class a cut at chunk
    # ends) and, at 256 bits, enough samples for two sample groups.
    rng = np.random.default_rng(bits)
    pa, pb = pairs(rng, n_classes, "canonical")
    x = codes(rng, n, bits // 64)
    c = codes(rng, pa.size, bits // 64)
    thr = thresholds(rng, pa.size, bits)
    want = hamming_vote_ref(x, c, thr, pa, pb, bags=1, n_classes=n_classes, bits=bits)
    got = hamming_vote(x, c, thr, pa, pb, bags=1, n_classes=n_classes, bits=bits,
                       kernel=kernel, threads=1)
    assert_votes_equal(got, want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_vote_unpacked_when_sums_could_not_share_int32(kernel):
    # One class in 3000 pairs: vote counts and distance sums cannot share an
    # int32, so the plan must fall back to two accumulators by itself.
    rng = np.random.default_rng(5)
    n_pairs, bits = 3000, 512
    pa = np.zeros(n_pairs, dtype=np.int32)
    pb = rng.integers(1, 40, n_pairs).astype(np.int32)
    pb[:1500] = np.sort(pb[:1500])          # long segments and fragments
    x = codes(rng, 6, bits // 64)
    c = codes(rng, n_pairs, bits // 64)
    thr = thresholds(rng, n_pairs, bits)
    voter = HammingVoter(c, thr, pa, pb, bags=1, n_classes=40, bits=bits)
    assert not voter.packed
    want = hamming_vote_ref(x, c, thr, pa, pb, bags=1, n_classes=40, bits=bits)
    assert_votes_equal(voter.vote(x, kernel=kernel), want)


def bagged_voter(seed):
    """A voter of 13 classes' pairs, 3 bags each, at 256 bits, 37 sample
    codes, and the voter's operands (codes, thresholds, pair_a, pair_b)."""
    rng = np.random.default_rng(seed)
    pa, pb = pairs(rng, 13, "canonical")
    x = codes(rng, 37, 4)
    c = codes(rng, pa.size * 3, 4)
    thr = thresholds(rng, pa.size * 3, 256)
    return HammingVoter(c, thr, pa, pb, bags=3, n_classes=13, bits=256), x, (c, thr, pa, pb)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_vote_threads_give_identical_results(kernel):
    voter, x, (c, thr, pa, pb) = bagged_voter(7)
    first = voter.vote(x, threads=1, kernel=kernel)
    for threads in (2, 3, "3", None):
        assert_votes_equal(voter.vote(x, threads=threads, kernel=kernel), first)
    assert_votes_equal(first, hamming_vote_ref(x, c, thr, pa, pb, bags=3, n_classes=13, bits=256))


def test_vote_empty_inputs():
    rng = np.random.default_rng(8)
    pa, pb = pairs(rng, 5, "canonical")
    c = codes(rng, pa.size, 1)
    thr = thresholds(rng, pa.size, 64)
    votes, dsum = hamming_vote(np.zeros((0, 1), np.uint64), c, thr, pa, pb,
                               bags=1, n_classes=5, bits=64)
    assert votes.shape == dsum.shape == (0, 5)
    none = np.zeros(0, dtype=np.int32)
    votes, dsum = hamming_vote(codes(rng, 3, 1), np.zeros((0, 1), np.uint64), none, none, none,
                               bags=1, n_classes=5, bits=64)
    assert not votes.any() and not dsum.any() and votes.shape == (3, 5)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bits", BITS)
def test_distances_match_reference(kernel, bits):
    rng = np.random.default_rng(bits + 1)
    words = bits // 64
    for n, m in ((1, 1), (7, 33), (33, 70)):
        x = codes(rng, n, words + 1)
        c = codes(rng, m, words + 2)
        want = hamming_distances_ref(x, c, bits=bits)
        got = hamming_distances(x, c, bits=bits, kernel=kernel)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    out = np.full((n, m), -1, dtype=np.int32)
    assert HammingCodes(c, bits=bits).distances(x, kernel=kernel, out=out) is out
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_distances_threads_give_identical_results(kernel):
    rng = np.random.default_rng(9)
    x, c = codes(rng, 41, 8), codes(rng, 50, 8)
    prepared = HammingCodes(c, bits=512)
    first = prepared.distances(x, threads=1, kernel=kernel)
    for threads in (2, 3):
        np.testing.assert_array_equal(prepared.distances(x, threads=threads, kernel=kernel), first)
    np.testing.assert_array_equal(first, hamming_distances_ref(x, c, bits=512))


def _valid_vote_args():
    rng = np.random.default_rng(12)
    pa, pb = pairs(rng, 4, "canonical")
    return dict(xcodes=codes(rng, 3, 2), ccodes=codes(rng, pa.size * 2, 2),
                thresholds=np.full(pa.size * 2, 60, np.int32), pair_a=pa, pair_b=pb,
                bags=2, n_classes=4, bits=128)


@pytest.mark.parametrize("change,match", [
    (dict(xcodes=np.zeros((3, 2), np.int64)), "uint64"),
    (dict(xcodes=np.zeros(6, np.uint64)), "2-D"),
    (dict(xcodes=np.zeros((2, 3), np.uint64).T), "contiguous"),
    (dict(xcodes=[[1, 2]]), "numpy array"),
    (dict(ccodes=np.zeros((12, 2), np.uint32)), "uint64"),
    (dict(bits=0), "multiple of 64"),
    (dict(bits=100), "multiple of 64"),
    (dict(bits=192), "words"),
    (dict(bits=128.0), "integer"),
    (dict(bags=0), "bags"),
    (dict(bags=5), "multiple of bags"),
    (dict(n_classes=0), "n_classes"),
    (dict(n_classes=3), "pair_b"),
    (dict(thresholds=np.full(12, 130, np.int32)), r"\[0, 129\]"),
    (dict(thresholds=np.full(12, -1, np.int32)), "thresholds"),
    (dict(thresholds=np.full(11, 5, np.int32)), "shape"),
    (dict(thresholds=np.full(12, 5.0)), "integer"),
    (dict(pair_a=np.array([0, 0, 0, 1, 1, -1])), "pair_a"),
    (dict(pair_b=np.array([1, 2, 3])), "shape"),
    (dict(threads=-1), "threads"),
    (dict(threads="many"), "threads"),
    (dict(threads=1.5), "threads"),
    (dict(kernel="neon"), "kernel"),
])
def test_vote_rejects_invalid_input(change, match):
    args = _valid_vote_args()
    args.update(change)
    with pytest.raises(ValueError, match=match):
        hamming_vote(args.pop("xcodes"), args.pop("ccodes"), args.pop("thresholds"),
                     args.pop("pair_a"), args.pop("pair_b"), **args)


def test_vote_rejects_sums_that_could_overflow():
    # Class 0 in 300000 pairs x 2 bags x 4096 bits > 2^31.  np.zeros pages are
    # never touched, validation fails before packing.
    n_pairs = 300000
    pa = np.zeros(n_pairs, np.int32)
    pb = np.ones(n_pairs, np.int32)
    c = np.zeros((n_pairs * 2, 64), np.uint64)
    with pytest.raises(ValueError, match="overflow"):
        HammingVoter(c, np.zeros(n_pairs * 2, np.int32), pa, pb, bags=2, n_classes=2, bits=4096)


def test_distances_reject_invalid_input():
    rng = np.random.default_rng(13)
    x, c = codes(rng, 3, 2), codes(rng, 4, 2)
    with pytest.raises(ValueError, match="words"):
        hamming_distances(x, c, bits=192)
    with pytest.raises(ValueError, match="out"):
        HammingCodes(c, bits=128).distances(x, out=np.zeros((3, 4), np.int64))
    with pytest.raises(ValueError, match="out"):
        HammingCodes(c, bits=128).distances(x, out=np.zeros((4, 3), np.int32))
    with pytest.raises(ValueError, match="uint64"):
        hamming_distances(x.astype(np.float64), c, bits=64)


@functools.lru_cache(maxsize=None)
def _large_k_case(bits):
    # K = 1,000: 499,500 pairs, runs of one class a up to 999 pairs long (62
    # whole blocks), cut by every chunk and group boundary.
    rng = np.random.default_rng(1000 + bits)
    K = 1000
    pa, pb = canonical_pairs(K)
    x = codes(rng, 11, bits // 64)
    c = codes(rng, pa.size, bits // 64)
    thr = thresholds(rng, pa.size, bits)
    want = hamming_vote_ref(x, c, thr, pa, pb, bags=1, n_classes=K, bits=bits)
    return HammingVoter(c, thr, pa, pb, bags=1, n_classes=K, bits=bits), x, want


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bits", (256, 1024))
def test_vote_large_k_matches_reference_for_any_blocking_and_threads(kernel, bits):
    voter, x, want = _large_k_case(bits)
    assert voter.packed
    assert_votes_equal(voter.vote(x, kernel=kernel, threads=1), want)
    for threads in (2, 3):
        assert_votes_equal(voter.vote(x, kernel=kernel, threads=threads), want)
    # Groups of 1 and 3 samples (partial register tiles), chunks of 1 and 37
    # blocks (runs and whole-block stretches cut anywhere).
    for blocking in ((1, 37), (3, 1), (8, 4096)):
        assert_votes_equal(voter.vote(x, kernel=kernel, threads=1, _blocking=blocking), want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
@pytest.mark.parametrize("bags", (1, 2))
@pytest.mark.parametrize("packed", (True, False))
def test_vote_blocking_boundaries(kernel, bags, packed):
    # Every combination of group and chunk edges: groups that are not a
    # multiple of the register tile, one sample, all samples; chunks of one
    # block, of an odd count, of the whole plan and beyond.
    rng = np.random.default_rng([bags, packed])
    pa, pb = pairs(rng, 70, "canonical")     # 2,415 pairs: 151 blocks
    n = 37
    x = codes(rng, n, 4)
    c = codes(rng, pa.size * bags, 4)
    thr = thresholds(rng, pa.size * bags, 256)
    want = hamming_vote_ref(x, c, thr, pa, pb, bags=bags, n_classes=70, bits=256)
    voter = HammingVoter(c, thr, pa, pb, bags=bags, n_classes=70, bits=256, _packed=packed)
    nb = -(-pa.size // 16)
    for group in (1, 3, 8, 13, n, 1000):
        for chunk in (1, 7, nb - 1, nb, 5000):
            got = voter.vote(x, kernel=kernel, threads=1, _blocking=(group, chunk))
            assert_votes_equal(got, want)


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_vote_whole_blocks_containing_their_own_class(kernel):
    # Class 5 against b = 0..47: whole 16-lane blocks of one class a whose b
    # range holds a itself (the pair (5, 5) adds and subtracts its distance,
    # and votes for 5 either way).
    rng = np.random.default_rng(55)
    pa = np.full(48, 5, np.int32)
    pb = np.arange(48, dtype=np.int32)
    x = codes(rng, 9, 2)
    c = codes(rng, 48, 2)
    thr = thresholds(rng, 48, 128)
    want = hamming_vote_ref(x, c, thr, pa, pb, bags=1, n_classes=48, bits=128)
    for packed in (True, False):
        voter = HammingVoter(c, thr, pa, pb, bags=1, n_classes=48, bits=128, _packed=packed)
        assert_votes_equal(voter.vote(x, kernel=kernel, threads=1), want)


def test_automatic_blocking_keeps_a_group_within_the_l2_share():
    from hsvm_cli.support.native import lib
    l2 = lib.hsvm_cache_bytes(2)
    assert l2 >= 4096
    for K, bits in ((1000, 256), (1000, 1024), (60, 256), (4000, 512)):
        pa, pb = canonical_pairs(K)
        if pa.size > 2_000_000:
            pa, pb = pa[:2_000_000], pb[:2_000_000]
        voter = HammingVoter(np.zeros((pa.size, bits // 64), np.uint64), np.zeros(pa.size, np.int32),
                             pa, pb, bags=1, n_classes=K, bits=bits)
        group, chunk = voter.blocking()
        rows = bits // 8 + (1 if voter.packed else 2) * 4 * K
        assert group % 8 == 0 and 8 <= group <= 1024 and chunk >= 1
        assert group == 8 or group * rows <= l2


@pytest.mark.parametrize("kernel", KERNEL_PARAMS)
def test_votes_written_into_a_callers_rows_are_the_fresh_arrays_bits(kernel):
    voter, x, _ = bagged_voter(11)
    fresh = voter.vote(x, kernel=kernel)
    whole = np.full((50, 13), -7, dtype=np.int32)          # stale values must not survive
    out = whole[5:42]
    got = voter.vote(x, kernel=kernel, out=out)
    assert got[0] is out
    assert_votes_equal(got, fresh)
    assert (whole[:5] == -7).all() and (whole[42:] == -7).all()
    for bad in (np.zeros((37, 12), np.int32), np.zeros((37, 13), np.int64), np.zeros((13, 37), np.int32).T):
        with pytest.raises(ValueError, match="C-contiguous int32"):
            voter.vote(x, out=bad)


def test_hash_votes_and_margins_into_a_callers_rows_are_the_fresh_arrays_bits():
    from hsvm_cli.hashing.voting import HashVoter
    rng = np.random.default_rng(12)
    pa, pb = pairs(rng, 9, "canonical")
    c = codes(rng, pa.size * 2, 4)
    theta = rng.uniform(0, 1, pa.size * 2)
    voter = HashVoter(c, theta, pa, pb, bags=2, n_classes=9, bits=256)
    x = codes(rng, 20, 4)
    x[3] = 0                                    # a sample without features: voted at right angles
    votes, margins = voter.votes(x)
    v_all = np.full((24, 9), 5, dtype=np.int32)
    m_all = np.full((24, 9), np.nan)
    got = voter.votes(x, out=(v_all[2:22], m_all[2:22]))
    assert got[0].base is v_all and got[1].base is m_all
    np.testing.assert_array_equal(v_all[2:22], votes)
    assert m_all[2:22].tobytes() == margins.tobytes()
    assert (v_all[[0, 1, 22, 23]] == 5).all() and np.isnan(m_all[[0, 1, 22, 23]]).all()
