"""A Gaussian random generator whose output is fixed by this code alone.

Sign random projections must give the same bits on every machine and with every
numpy release: codes written by ``hash-data`` on one machine are compared with
codes computed inside ``predict`` on another.  numpy's distribution methods may
change their streams between releases, and transcendental functions (log, cos)
may differ in the last bit between libm builds and numpy's SIMD loops, so this
module uses only operations IEEE 754 rounds exactly (integer arithmetic, +, -,
*, /, sqrt, frexp):

* uniform bits: SplitMix64 (Steele, Lea & Flood, 2014) of a counter, keyed by
  the seed, so element i of the stream is a pure function of (seed, i);
* normals: Marsaglia's polar method, with log computed by an atanh series on the
  mantissa (exact frexp range reduction, fixed term count and order).

Generator name and version are recorded in every hash model (GENERATOR).  The
stream is computed in C (native/normals.c), about 7x faster than numpy; the
numpy definition is the test oracle (tests/oracles/generator_ref.py).
"""
import numpy as np

from ..support.native import lib, ptr

GENERATOR = "splitmix64-polar-v1"


def standard_normal(count, *, seed, stream=0, dtype=np.float64):
    """``count`` N(0, 1) doubles, a pure function of (seed, stream, count),
    computed in C (native/normals.c; tests/oracles/generator_ref.py holds the
    same stream in numpy).  ``dtype=np.float32``: the same values rounded to
    float32 as they are made, the bits of ``.astype(np.float32)`` without
    the double array."""
    if np.dtype(dtype) == np.float32:
        out = np.empty(int(count), dtype=np.float32)
        if out.size:
            lib.hsvm_standard_normal_f32(int(seed) & 0xFFFFFFFFFFFFFFFF, int(stream), ptr("float *", out), out.size)
        return out
    out = np.empty(int(count), dtype=np.float64)
    if out.size:
        lib.hsvm_standard_normal(int(seed) & 0xFFFFFFFFFFFFFFFF, int(stream), ptr("double *", out), out.size)
    return out


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(counter):
    """SplitMix64's output function of uint64 counters (the same mixing as
    native/normals.c; exact integer arithmetic, so identical everywhere)."""
    with np.errstate(over="ignore"):
        z = counter * _GOLDEN + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _key(seed, stream):
    """Mix seed and stream id into a 64-bit key (as the normals' stream does:
    counters are offset by a hashed key)."""
    s = np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
    return _splitmix64(s ^ _splitmix64(np.array([stream], dtype=np.uint64)))[0]


def random_bits(count, *, seed, stream):
    """``count`` uniform 64-bit integers (uint64), element i a pure function of
    (seed, stream, i): for seeded choices that must be the same on every
    machine (cross-validation folds, solver orders)."""
    idx = np.arange(int(count), dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _splitmix64(idx + _key(int(seed), int(stream)))
