"""The numpy definition of hsvm's Gaussian stream (hsvm_cli/hashing/generator.py
documents it): the reference its C implementation (native/normals.c) is tested
against bit for bit."""
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476


def _splitmix64(counter):
    with np.errstate(over="ignore"):
        z = counter * _GOLDEN + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _key(seed, stream):
    """Mix seed and stream id into a 64-bit key (distinct streams never overlap
    in practice: counters are offset by a hashed key)."""
    s = np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
    k = _splitmix64(s ^ _splitmix64(np.array([stream], dtype=np.uint64)))
    return k[0]


def _uniform_pm1(counter, key):
    """Uniform doubles in (-1, 1) with 53 random bits."""
    with np.errstate(over="ignore"):
        bits = _splitmix64(counter + key) >> np.uint64(11)
    return bits.astype(np.float64) * (2.0 / 9007199254740992.0) - 1.0


def _log(s):
    """Natural log of positive doubles using only exactly rounded operations."""
    m, e = np.frexp(s)                      # s = m * 2**e, m in [0.5, 1)
    low = m < _SQRT_HALF
    m = np.where(low, m * 2.0, m)           # m in [sqrt(1/2), sqrt(2))
    e = np.where(low, e - 1, e).astype(np.float64)
    z = (m - 1.0) / (m + 1.0)               # |z| <= 0.1716
    z2 = z * z
    # 2*atanh(z) = 2 (z + z^3/3 + z^5/5 + ...); 14 terms reach double precision.
    acc = np.full_like(z, 1.0 / 27.0)
    for k in range(25, 0, -2):
        acc = acc * z2 + 1.0 / k
    return 2.0 * z * acc + e * _LN2


def standard_normal(count, *, seed, stream=0):
    """``count`` N(0, 1) doubles, a pure function of (seed, stream, count)."""
    count = int(count)
    out = np.empty(count, dtype=np.float64)
    key = _key(int(seed), int(stream))
    filled = 0
    pair_index = 0
    while filled < count:
        need = (count - filled + 1) // 2
        batch = int(need * 1.3) + 64        # acceptance rate is pi/4
        idx = np.arange(pair_index, pair_index + batch, dtype=np.uint64)
        pair_index += batch
        u = _uniform_pm1(idx * np.uint64(2), key)
        v = _uniform_pm1(idx * np.uint64(2) + np.uint64(1), key)
        s = u * u + v * v
        ok = (s > 0.0) & (s < 1.0)
        u, v, s = u[ok], v[ok], s[ok]
        f = np.sqrt(-2.0 * _log(s) / s)
        g = np.empty(2 * u.shape[0])
        g[0::2] = u * f
        g[1::2] = v * f
        take = min(g.shape[0], count - filled)
        out[filled:filled + take] = g[:take]
        filled += take
    return out
