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
stream is computed in C (native/normals.c), 5x faster than numpy in plain C
and 11x with AVX2 (a Zen 3, one thread); the numpy definition is the test
oracle (tests/oracles/generator_ref.py).
"""
import numpy as np

from ..support.native import lib, ptr

GENERATOR = "splitmix64-polar-v1"


# Streams this long are filled by several threads: the uniform pairs are cut
# into spans of SPAN_PAIRS, as many spans made side by side as there are
# threads, the first in place (where its values start is known: after the
# values made so far), the others into buffers then copied after it -- the
# values of the one-thread loop, bit for bit, each made once (counting every
# span's kept pairs first placed them all in place, but the count is half the
# work of making the values once the factors run four to a vector).
PARALLEL_VALUES = 1 << 22
SPAN_PAIRS = 1 << 20
_KEPT = np.pi / 4           # the share of pairs the polar method keeps


def standard_normal(count, *, seed, stream=0, dtype=np.float64, threads=None):
    """``count`` N(0, 1) doubles, a pure function of (seed, stream, count),
    computed in C (native/normals.c; tests/oracles/generator_ref.py holds the
    same stream in numpy).  ``dtype=np.float32``: the same values rounded to
    float32 as they are made, the bits of ``.astype(np.float32)`` without
    the double array.  ``threads`` (default: the CPUs this process may use)
    share a long stream (:data:`PARALLEL_VALUES`); the values are the same."""
    f32 = np.dtype(dtype) == np.float32
    out = np.empty(int(count), dtype=np.float32 if f32 else np.float64)
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    if not out.size:
        return out
    from ..support.threads import resolve_threads
    threads = resolve_threads(threads)
    if out.size < PARALLEL_VALUES or threads < 2:
        if f32:
            lib.hsvm_standard_normal_f32(seed, int(stream), ptr("float *", out), out.size)
        else:
            lib.hsvm_standard_normal(seed, int(stream), ptr("double *", out), out.size)
        return out
    _fill_in_spans(out, seed, int(stream), threads, f32)
    return out


def _fill_in_spans(out, seed, stream, threads, f32):
    from concurrent.futures import ThreadPoolExecutor
    count = out.size
    span = lib.hsvm_standard_normal_span_f32 if f32 else lib.hsvm_standard_normal_span
    kind = "float *" if f32 else "double *"
    # np.empty touches no page: a buffer costs what its span writes
    buffers = [np.empty(2 * SPAN_PAIRS, dtype=out.dtype) for _ in range(threads - 1)]
    at = first = 0              # values made, spans made
    with ThreadPoolExecutor(threads) as pool:
        while at < count:
            short = count - at
            spans = min(threads, int(short / 2 / _KEPT / SPAN_PAIRS) + 1)
            targets = [out[at:]] + buffers[:spans - 1]
            cap = min(short, 2 * SPAN_PAIRS)

            def fill(i):
                return span(seed, stream, (first + i) * SPAN_PAIRS, (first + i + 1) * SPAN_PAIRS,
                            ptr(kind, targets[i]), cap)
            made = list(pool.map(fill, range(spans)))
            at += made[0]
            for buffer, n in zip(buffers, made[1:]):
                take = min(n, count - at)
                out[at:at + take] = buffer[:take]
                at += take
            first += spans


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
