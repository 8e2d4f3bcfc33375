"""Random circulant projections (hsvm_cli.hashing.circulant): the product
against the explicit matrix, the bit layout, exact machine-independent signs,
the collision probability, stored parameters."""
import math

import numpy as np
import pytest
import scipy.fft
import scipy.sparse as sp

from hsvm_cli.hashing.circulant import (
    STREAM_R,
    STREAM_SIGNS,
    CirculantBlocks,
    CirculantProjection,
    fast_length,
    prime_factors,
    stride_order,
)
from hsvm_cli.hashing.generator import standard_normal
from hsvm_cli.hashing.projection import pack_signs


def explicit_rows(proj):
    """The D x d matrix of a projection, built entry by entry from its stored
    parameters: block b, bit t is row rho(t) of circ(r_b) diag(s_b)."""
    arrays = proj.to_arrays()
    r = arrays["circulant_r"].astype(np.float64)
    neg = np.unpackbits(arrays["circulant_signs"], axis=1, bitorder="little")[:, :proj.n_features]
    s = np.where(neg == 1, -1.0, 1.0)
    n, d = r.shape[1], proj.n_features
    rho = stride_order(n)
    out = []
    for b in range(r.shape[0]):
        C = np.array([[r[b, (i - j) % n] for j in range(d)] for i in range(n)]) * s[b]
        out.append(C[rho])
    return np.concatenate(out)[:proj.bits]


def canonical(x, r, s, i):
    """The canonical value of row i: terms in column order, summed left to right in double."""
    n = r.shape[0]
    acc = 0.0
    for j in range(x.shape[0]):
        acc += (float(s[j]) * float(x[j])) * float(r[(i - j) % n])
    return acc


def exact_sign(x, r, s, i):
    n = r.shape[0]
    terms = [(float(s[j]) * float(x[j])) * float(r[(i - j) % n]) for j in range(x.shape[0])]
    return float(np.sign(math.fsum(terms)))   # products are exact, fsum is correctly rounded


def unit_rows(rng, n, d, density=1.0):
    X = rng.standard_normal((n, d))
    if density < 1:
        X *= rng.random((n, d)) < density
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.where(norms > 0, norms, 1)).astype(np.float32)


# --------------------------------------------------------------------- layout

def test_fast_length_is_the_smallest_5_smooth_length_scipy_also_picks():
    for d in list(range(1, 3000)) + [11698, 16383, 65537]:
        n = fast_length(d)
        assert n >= d and set(prime_factors(n)) <= {2, 3, 5}
        assert all(not set(prime_factors(m)) <= {2, 3, 5} for m in range(d, n)) if n - d < 200 else True
        assert n == scipy.fft.next_fast_len(d, real=True)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 12, 30, 49, 800, 1009, 12000])
def test_stride_order_prefixes_lie_in_the_smallest_stride_set(n):
    rho = stride_order(n)
    assert sorted(rho.tolist()) == list(range(n))
    factors = prime_factors(n)
    for c in sorted({1, 2, 3, n // 7 + 1, n // 3 + 1, n // 2 + 1, n} - {0}):
        if c > n:
            continue
        Q = 1
        for f in factors:
            if n // (Q * f) < c:
                break
            Q *= f
        assert n // Q >= c
        assert np.all(rho[:c] % Q == 0), (n, c, Q)


def test_parameters_come_from_the_projects_generator_in_blocks():
    p = CirculantProjection.from_seed(bits=300, n_features=50, seed=9)
    n = fast_length(50)
    assert p.n_fft == n == 50 and p.n_blocks == 6
    a = p.to_arrays()
    r = standard_normal(6 * n, seed=9, stream=STREAM_R).astype(np.float32).reshape(6, n)
    g = standard_normal(6 * 50, seed=9, stream=STREAM_SIGNS).reshape(6, 50)
    assert np.array_equal(a["circulant_r"], r)
    assert np.array_equal(np.unpackbits(a["circulant_signs"], axis=1, bitorder="little")[:, :50], (g < 0))


# -------------------------------------------------------------------- product

@pytest.mark.parametrize("d, bits", [(7, 24), (30, 30), (50, 128), (64, 200), (13, 13)])
def test_circulant_product_equals_the_explicit_matrix_product(d, bits):
    rng = np.random.default_rng(d)
    p = CirculantProjection.from_seed(bits=bits, n_features=d, seed=3)
    M = explicit_rows(p)
    X = unit_rows(rng, 11, d, density=0.6)
    want = X.astype(np.float64) @ M.T
    for XX in (X, sp.csr_matrix(X)):
        got = p.project(XX)
        assert got.shape == (11, bits)
        assert np.allclose(got, want, atol=1e-12)
    for method in ("fft", "direct"):
        assert np.allclose(p.engine.project(sp.csr_matrix(X), bits, method=method), want, atol=1e-12)


def test_first_bits_of_a_longer_projection_are_the_shorter_projection():
    rng = np.random.default_rng(0)
    X = unit_rows(rng, 40, 200)
    long = CirculantProjection.from_seed(bits=1024, n_features=200, seed=5)
    for bits in (64, 192, 256, 640):
        short = CirculantProjection.from_seed(bits=bits, n_features=200, seed=5)
        assert np.array_equal(long.codes(X, bits), short.codes(X))
        assert np.array_equal(long.codes(X)[:, :bits // 64], short.codes(X))
        assert np.array_equal(long.prefix(bits).to_arrays()["circulant_r"], short.to_arrays()["circulant_r"])


def test_codes_are_packed_like_the_gaussian_codes():
    rng = np.random.default_rng(1)
    X = unit_rows(rng, 5, 100)
    p = CirculantProjection.from_seed(bits=128, n_features=100, seed=0)
    assert np.array_equal(p.codes(X), pack_signs(p.project(X)))
    with pytest.raises(ValueError, match="multiple of 64"):
        p.codes(X, 100)


# -------------------------------------------------------------- exact signs

def test_signs_equal_exact_signs_of_direct_sums_on_random_inputs():
    rng = np.random.default_rng(2)
    d = 90
    p = CirculantProjection.from_seed(bits=200, n_features=d, seed=11)
    e = p.engine
    X = unit_rows(rng, 12, d, density=0.5)
    rho = stride_order(e.n)
    for XX in (X, sp.csr_matrix(X)):
        v = p.project(XX)
        for i in range(X.shape[0]):
            for t in range(0, 200, 7):
                b, tb = divmod(t, e.n)
                assert np.sign(v[i, t]) == exact_sign(X[i], e.r[b], e.s[b], rho[tb])


def _cancelling_sample(rng, e, b, row, tiny_sign, pairs=20):
    """A float32 sample whose entry `row` (block b) is, exactly, a tiny term of
    sign tiny_sign: `pairs` pairs of adjacent columns whose products cancel
    exactly, then one tiny product last.  Its canonical value is the tiny term
    (each pair brings the running sum back to 0), its exact value too, and the
    FFT's error (~1e-16 |x|) swamps it, so only the canonical recomputation
    gets its sign right."""
    n, d = e.n, e.d
    r, s = e.r32[b], e.s[b]
    x = np.zeros(d, dtype=np.float32)
    cols = rng.choice(np.arange(0, d - 2, 2), size=pairs, replace=False)
    for j in cols:
        a1, a2 = r[(row - j) % n], r[(row - j - 1) % n]
        # s_j x_j a1 + s_j+1 x_j+1 a2 = 0 exactly: x_j = s_j a2 q, x_j+1 = -s_j+1 a1 q
        q = np.float32(rng.choice([0.5, 1.0, 2.0]))
        x[j] = np.float32(s[j]) * a2 * q
        x[j + 1] = -np.float32(s[j + 1]) * a1 * q
    last = d - 1
    assert last not in cols and last - 1 not in cols
    coeff = r[(row - last) % n] * s[last]
    x[last] = np.float32(tiny_sign * 1e-30 * np.sign(coeff))
    return x


@pytest.mark.parametrize("d, bits", [(96, 96), (800, 256), (1000, 2048)])
def test_near_zero_entries_get_their_exact_sign_on_every_path(d, bits):
    rng = np.random.default_rng(d)
    p = CirculantProjection.from_seed(bits=bits, n_features=d, seed=4)
    e = p.engine
    rho = stride_order(e.n)
    where = {int(row): t for t, row in enumerate(rho)}
    cases = []
    for k in range(24):
        b = int(rng.integers(0, e.B))
        c = min(e.n, bits - b * e.n)
        t = int(rng.integers(0, c))
        sign = [1.0, -1.0, 0.0][k % 3]
        x = _cancelling_sample(rng, e, b, int(rho[t]), sign)
        assert canonical(x, e.r32[b], e.s[b], int(rho[t])) * sign >= 0
        cases.append((x, b * e.n + where[int(rho[t])], sign))
    X = np.stack([c[0] for c in cases])
    for XX, method in ((X, "auto"), (sp.csr_matrix(X), "fft"), (sp.csr_matrix(X), "direct")):
        v = e.project(XX, bits, method=method)
        for i, (x, t, sign) in enumerate(cases):
            assert np.sign(v[i, t]) == sign, (method, i, v[i, t])
            if method != "direct":
                # recomputed inside the band: replaced by the sign itself
                assert v[i, t] in (-1.0, 0.0, 1.0)


@pytest.mark.parametrize("n", [7, 64, 800, 1009, 4096, 12000])
def test_fft_round_off_is_far_inside_the_band(n):
    rng = np.random.default_rng(n)
    d = n
    r = rng.standard_normal((1, n)).astype(np.float32)
    s = np.where(rng.random((1, d)) < 0.5, -1, 1)
    e = CirculantBlocks(r, s, order="stride")
    X = unit_rows(rng, 3, d)
    bits = min(n, 300)
    v = e.project(X, bits)
    rows = stride_order(n)[:bits]
    C = r[0].astype(np.longdouble)[(rows[:, None] - np.arange(d)[None, :]) % n] * s[0].astype(np.longdouble)
    ref = X.astype(np.longdouble) @ C.T
    err = np.abs(v - ref).max(axis=1).astype(np.float64)
    band = e.band_coefficient(e.plan(bits)) * e.rnorm[0] * np.linalg.norm(X.astype(np.float64), axis=1)
    assert np.all(err < 0.01 * band), (err, band)
    assert np.all(band < 1e-6)       # and the band itself is tiny: recomputations are rare


def test_codes_do_not_depend_on_threads_or_input_form():
    rng = np.random.default_rng(3)
    X = unit_rows(rng, 301, 120, density=0.3)
    p = CirculantProjection.from_seed(bits=512, n_features=120, seed=1)
    c1 = p.codes(X)
    assert np.array_equal(p.codes(X, threads=2), c1)
    assert np.array_equal(p.codes(sp.csr_matrix(X)), c1)
    assert np.array_equal(p.codes(sp.csr_matrix(X), threads=3), c1)


def test_narrower_samples_are_zero_padded():
    rng = np.random.default_rng(4)
    X = unit_rows(rng, 6, 40)
    p = CirculantProjection.from_seed(bits=64, n_features=50, seed=2)
    wide = np.hstack([X, np.zeros((6, 10), np.float32)])
    assert np.array_equal(p.codes(X), p.codes(wide))
    assert np.array_equal(p.codes(sp.csr_matrix(X)), p.codes(wide))


# -------------------------------------------------------------- statistics

@pytest.mark.parametrize("theta", [0.3, 1.2, 2.5])
def test_single_bit_collision_probability_is_angle_over_pi(theta):
    # A fixed row a and random pairs (x, y) at angle theta drawn rotation
    # invariantly: P(sgn a.x != sgn a.y) = theta/pi exactly, independently per
    # pair, so the count of differing bit t over the pairs is binomial.
    rng = np.random.default_rng(int(theta * 10))
    d, N = 64, 4000
    u = rng.standard_normal((N, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = rng.standard_normal((N, d))
    w -= np.sum(w * u, axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    x = u.astype(np.float32)
    y = (np.cos(theta) * u + np.sin(theta) * w).astype(np.float32)
    p = CirculantProjection.from_seed(bits=256, n_features=d, seed=7)
    differ = (p.project(x) > 0) != (p.project(y) > 0)
    q = theta / np.pi
    sd = math.sqrt(q * (1 - q) / N)
    for t in (0, 1, 63, 64, 200):
        assert abs(differ[:, t].mean() - q) < 4.5 * sd, (t, differ[:, t].mean(), q)
    assert abs(differ.mean() - q) < 4.5 * sd


# -------------------------------------------------------------- storage

def test_stored_parameters_round_trip_and_stay_small():
    rng = np.random.default_rng(5)
    for d, bits in ((784, 4096), (4096, 1024), (100, 64), (11698, 256)):
        p = CirculantProjection.from_seed(bits=bits, n_features=d, seed=3)
        arrays = p.to_arrays()
        assert p.stored_bytes() <= d * -(-bits // d) * 8
        q = CirculantProjection.from_arrays(arrays, n_features=d, bits=bits, seed=3)
        X = unit_rows(rng, 4, d)
        assert np.array_equal(p.project(X), q.project(X))


def test_malformed_stored_parameters_are_refused():
    p = CirculantProjection.from_seed(bits=128, n_features=100, seed=3)
    a = p.to_arrays()
    with pytest.raises(ValueError):
        CirculantProjection.from_arrays({"circulant_r": a["circulant_r"]}, n_features=100, bits=128)
    with pytest.raises(ValueError):
        CirculantProjection.from_arrays({**a, "circulant_r": a["circulant_r"].astype(np.float64)},
                                        n_features=100, bits=128)
    with pytest.raises(ValueError):
        CirculantProjection.from_arrays(a, n_features=100, bits=128 + 100)
    with pytest.raises(ValueError):
        CirculantProjection.from_arrays(a, n_features=99, bits=128)
    bad = a["circulant_r"].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        CirculantProjection.from_arrays({**a, "circulant_r": bad}, n_features=100, bits=128)


def test_bad_arguments_raise_clear_errors():
    p = CirculantProjection.from_seed(bits=128, n_features=10, seed=0)
    with pytest.raises(ValueError, match="features"):
        p.project(np.zeros((2, 11), np.float32))
    with pytest.raises(ValueError, match="NaN"):
        p.project(np.full((2, 10), np.nan, np.float32))
    with pytest.raises(ValueError, match="NaN"):
        p.project(sp.csr_matrix(np.full((2, 10), np.inf, np.float32)))
    with pytest.raises(ValueError, match="bits"):
        p.project(np.zeros((2, 10), np.float32), 129)
    with pytest.raises(ValueError):
        CirculantProjection.from_seed(bits=0, n_features=10, seed=0)
    with pytest.raises(ValueError):
        CirculantProjection.from_seed(bits=64, n_features=0, seed=0)


def test_restore_uses_stored_parameters_or_the_seed_and_refuses_other_layouts():
    p = CirculantProjection.from_seed(bits=256, n_features=70, seed=8)
    a = p.to_arrays()
    q = CirculantProjection.restore(bits=256, n_features=70, seed=8, arrays=a)
    r = CirculantProjection.restore(bits=256, n_features=70, seed=8, layout=p.meta()["projection_layout"])
    X = np.random.default_rng(0).standard_normal((3, 70)).astype(np.float32)
    assert np.array_equal(q.codes(X), p.codes(X)) and np.array_equal(r.codes(X), p.codes(X))
    with pytest.raises(ValueError, match="layout"):
        CirculantProjection.restore(bits=256, n_features=70, seed=8, layout="circulant-stride-v0")
    with pytest.raises(ValueError, match="missing array"):
        CirculantProjection.restore(bits=256, n_features=70, seed=8, arrays={"circulant_signs": a["circulant_signs"]})


def test_encoder_gives_the_prefix_codes_and_other_streams_give_another_projection():
    rng = np.random.default_rng(6)
    X = unit_rows(rng, 9, 300)
    p = CirculantProjection.from_seed(bits=1024, n_features=300, seed=2)
    enc = p.encoder(256)
    assert enc.bits == 256
    assert np.array_equal(enc.codes(X), p.codes(X)[:, :4])
    assert np.array_equal(enc.project(X), p.project(X)[:, :256])
    with pytest.raises(ValueError, match="bits"):
        p.encoder(1088)
    other = CirculantProjection.from_seed(bits=1024, n_features=300, seed=2, streams=(1105, 1106))
    assert not np.array_equal(other.to_arrays()["circulant_r"], p.to_arrays()["circulant_r"])
    r = standard_normal(other.n_blocks * other.n_fft, seed=2, stream=1105).astype(np.float32)
    assert np.array_equal(other.to_arrays()["circulant_r"].ravel(), r)
