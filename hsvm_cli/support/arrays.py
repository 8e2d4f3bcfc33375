"""Argument checks for the numerical routines (probabilities, metrics): arrays
of the right dimension, finite, integer where they must be; and small array
helpers the prediction path shares."""
import numpy as np

from ..errors import OptionError

#: The largest finite float32, hsvm's storage type for samples and models.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The smallest magnitude a float32 conversion rounds to infinity: half a
#: step above FLOAT32_MAX (the tie rounds to even, which is infinity).  A
#: double below it -- 3.4028235e38, FLT_MAX's shortest spelling, among them --
#: becomes a finite float32, as the svmlight reader reads it.
FLOAT32_OVERFLOW = float.fromhex("0x1.ffffffp+127")


def beyond_float32(x):
    """Whether the magnitude ``x`` (a float, or an array of them) would
    become infinite as a float32."""
    return np.abs(x) >= FLOAT32_OVERFLOW


def is_int(v):
    """Whether ``v`` is a whole number as an option takes one: a Python or
    numpy integer, not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def float_array(x, name, ndim=None):
    a = np.asarray(x, dtype=np.float64)
    if ndim is not None and a.ndim != ndim:
        raise ValueError("%s must be %d-dimensional, got shape %s" % (name, ndim, a.shape))
    if not np.all(np.isfinite(a)):
        raise ValueError("%s has non-finite values" % name)
    return a


def int_array(x, name, ndim=1):
    a = np.asarray(x)
    if a.ndim != ndim:
        raise ValueError("%s must be %d-dimensional, got shape %s" % (name, ndim, a.shape))
    if a.size and a.dtype.kind not in "iub":
        if a.dtype.kind not in "f" or not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError("%s must hold integers" % name)
    return a.astype(np.int64)


def class_index_array(y_index, n, K, name="y_index"):
    y = int_array(y_index, name)
    if y.shape[0] != n:
        raise ValueError("%s has %d entries for %d samples" % (name, y.shape[0], n))
    if y.size and (y.min() < -1 or y.max() >= K):
        raise ValueError("%s must lie in [-1, %d)" % (name, K))
    return y


def proba_matrix(P, name="P"):
    P = float_array(P, name, ndim=2)
    if P.size and P.min() < 0.0:
        raise ValueError("%s has negative probabilities" % name)
    return P


def all_finite(a, *, block=1 << 22):
    """Whether every value of ``a`` is finite, checked in blocks (no temporary
    the size of a multi-GB array)."""
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind != "f":
        return True
    return all(np.isfinite(flat[s:s + block]).all() for s in range(0, flat.shape[0], block))


def as_whole(value, name):
    """``value`` (an integer, or a float with no fraction) as an int, or an
    OptionError naming ``name`` (an infinity was an OverflowError, NaN a bare
    ValueError, None a TypeError; text such as "128" and a fraction such as
    128.5 were taken by int(), the fraction dropped)."""
    try:
        if isinstance(value, (bool, np.bool_, str, bytes)):
            raise TypeError
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise ValueError
        return int(value)
    except (OverflowError, ValueError, TypeError):
        raise OptionError("%s must be a whole number, not %r" % (name, value)) from None


def check_seed(seed):
    """``seed`` as an int in [0, 2**64): every random step of hsvm is keyed by
    64 bits, and a larger or negative seed would silently alias another."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise OptionError("seed must be an integer in [0, 2**64), not %r" % (seed,))
    return int(seed)


def distinct_indices(a):
    """The sorted distinct values of an integer array of small non-negative
    indices (classes, blocks), as ``np.unique`` gives them, by counting:
    ``np.unique`` imports numpy.ma on first use (~9 ms of every `predict`
    process that reached it) and sorts."""
    a = np.asarray(a).reshape(-1)
    if a.size == 0 or a.dtype.kind not in "iu" or a.min() < 0:
        return np.unique(a)
    return np.flatnonzero(np.bincount(a)).astype(a.dtype, copy=False)


def output_array(name, given, shape, dtype):
    """``given`` (an ``out=`` argument a C kernel writes into) when it is a
    C-contiguous array of ``shape`` and ``dtype``, else a ValueError naming
    ``name``."""
    if given.shape != tuple(shape) or given.dtype != dtype or not given.flags.c_contiguous:
        raise ValueError("%s must be a C-contiguous %s array of shape %s" % (name, np.dtype(dtype).name, tuple(shape)))
    return given


#: aligned_empty's extra bytes beyond the array (its default alignment)
_ALIGN_SLACK = 64


def aligned_empty(shape, dtype, align=_ALIGN_SLACK):
    """An uninitialised C-contiguous array whose data starts on an ``align``
    -byte boundary (a cache line): a view into a block ``align`` bytes
    larger.  Samples whose rows start mid-line cost the refine's and the
    DAG's row products a load split across two lines every other vector: a
    glibc block of a megabyte or more starts 16 bytes into its page, and the
    omniglot-242 refine at k = 121 ran 0.60 s against 0.47 s aligned.
    :func:`shrink_aligned` gives back its unused end.

    The block holds items of ``dtype`` itself where it can (not bytes): scipy
    copies an array that is a view of less than half its block when it
    builds a sparse matrix -- as a float64 view of a byte block always was:
    the reader's values, 63 MB more at every load of fashion-mnist-20k."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    size = dtype.itemsize
    if size and align % size == 0:
        raw = np.empty(count + align // size, dtype=dtype)
        gap = -raw.ctypes.data % align
        if gap % size == 0:
            return raw[gap // size:gap // size + count].reshape(shape)
    nbytes = count * size
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def shrink_aligned(a, count):
    """The first ``count`` items of the 1-D array ``a`` from
    :func:`aligned_empty`, the block behind it shrunk in place (realloc gives
    the tail back without copying the head).  Nothing may use ``a``, or any
    other view of its block, after the call."""
    raw = a.base
    if not isinstance(raw, np.ndarray) or not raw.flags.owndata or raw.ndim != 1 or \
            raw.nbytes != a.nbytes + _ALIGN_SLACK:
        return a[:count]        # not a block of aligned_empty's: another array's memory
    unit = raw.dtype.itemsize
    start = a.ctypes.data - raw.ctypes.data
    end = start + count * a.dtype.itemsize
    if not unit or start % unit or end % unit:
        return a[:count]
    dtype = a.dtype
    del a
    raw.resize(end // unit, refcheck=False)
    return raw[start // unit:end // unit].view(dtype)
