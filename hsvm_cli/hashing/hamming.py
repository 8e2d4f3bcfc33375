"""Fused Hamming range-query voting and Hamming distances (C kernels, SIMD dispatch).

The filter step of hsvm prediction: samples and classifiers are D-bit sign codes
(uint64 words, bit j = bit j%64 of word j//64); classifier j approves sample i
when the Hamming distance over the first ``bits`` bits is below its threshold,
and the bags of each one-vs-one pair vote for one of its two classes.  See
:func:`hamming_vote` for the exact rule and ``tests/oracles/hamming_ref.py`` for
the numpy reference every kernel is tested against.

Kernels (:mod:`hsvm_cli.support.kernels`): ``avx512`` (AVX-512 with VPOPCNTDQ),
``avx2``, ``portable`` (plain C), chosen at run time or forced by ``HSVM_KERNEL``
or ``kernel=``.  All give bit-identical results, for any thread count.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..support.arrays import output_array
from ..support.kernels import kernel_error
from ..support.kernels import kernel_id as _kernel_id
from ..support.native import ffi, lib
from ..support.threads import resolve_threads

__all__ = ["HammingVoter", "HammingCodes", "hamming_vote", "hamming_distances", "blank_codes"]

_INT32_MAX = 2**31 - 1
# Rows per C call are rounded to this (the widest sample tile) so that splitting
# a batch across threads does not add partial tiles.
_ROW_GRAIN = 4


def blank_codes(xcodes, bits):
    """Which rows of sample codes are all zeros in their first ``bits`` bits:
    the code of a sample with no features (every projection r.0 = 0), which
    says nothing of its angle to any normal -- the filters that read codes
    give such rows the exact answer instead (w.0 + b = b)."""
    return ~np.asarray(xcodes)[:, :int(bits) // 64].any(axis=1)


def _check_rc(rc, what):
    if rc == lib.HSVM_HAMMING_OK:
        return
    if rc == lib.HSVM_HAMMING_ENOMEM:
        raise MemoryError("%s: out of memory" % what)
    if rc in (lib.HSVM_CPU_EBADNAME, lib.HSVM_CPU_EUNAVAILABLE):
        raise kernel_error(rc)
    raise ValueError("%s: invalid arguments (code %d)" % (what, rc))


def _codes(name, arr):
    if not isinstance(arr, np.ndarray):
        raise ValueError("%s must be a numpy array, got %s" % (name, type(arr).__name__))
    if arr.dtype != np.uint64:
        raise ValueError("%s must have dtype uint64, got %s" % (name, arr.dtype))
    if arr.ndim != 2:
        raise ValueError("%s must be 2-D [rows, words], got shape %s" % (name, arr.shape))
    if not arr.flags.c_contiguous:
        raise ValueError("%s must be C-contiguous (use np.ascontiguousarray)" % name)
    return arr


def _words(bits, *named_codes):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ValueError("bits must be an integer, got %r" % (bits,))
    bits = int(bits)
    if bits <= 0 or bits % 64:
        raise ValueError("bits must be a positive multiple of 64, got %d" % bits)
    words = bits // 64
    for name, arr in named_codes:
        if arr.shape[1] < words:
            raise ValueError("bits=%d needs %d words per code but %s has %d"
                             % (bits, words, name, arr.shape[1]))
    return words


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return int(value)


def _int32_vector(name, arr, length, lo, hi):
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise ValueError("%s must be an integer array, got dtype %s" % (name, arr.dtype))
    if arr.shape != (length,):
        raise ValueError("%s must have shape (%d,), got %s" % (name, length, arr.shape))
    if length:
        amin, amax = arr.min(), arr.max()
        if amin < lo or amax > hi:
            raise ValueError("%s must lie in [%d, %d], found values in [%d, %d]"
                             % (name, lo, hi, amin, amax))
    return np.ascontiguousarray(arr, dtype=np.int32)


def _row_blocks(n, threads):
    """Contiguous [start, stop) sample ranges, one per thread."""
    threads = max(1, min(threads, -(-n // _ROW_GRAIN)))
    step = -(-n // threads)
    step = -(-step // _ROW_GRAIN) * _ROW_GRAIN
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _run_blocks(call, n, threads):
    blocks = _row_blocks(n, resolve_threads(threads))
    if len(blocks) <= 1:
        rcs = [call(*b) for b in blocks]
    else:
        # cffi drops the GIL inside C calls, so these run truly in parallel.
        with ThreadPoolExecutor(max_workers=len(blocks)) as pool:
            rcs = list(pool.map(lambda b: call(*b), blocks))
    for rc in rcs:
        _check_rc(rc, "Hamming kernel")


class BuildsPlansOnUse:
    """For an object that keeps packed plans (:class:`HammingCodes`,
    :class:`HammingVoter`: C memory behind cffi pointers, which pickle cannot
    copy) in the attributes ``_native_caches`` names and builds them on first
    use: a pickled or copied object leaves them out and builds its own, so
    that a used predictor can go to another process."""

    _native_caches = ()

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in self._native_caches:
            state[name] = None
        return state


class _Plan:
    """Owns a C plan (classifier codes repacked once for the kernels)."""

    def _adopt(self, ptr_box, rc, what):
        _check_rc(rc, what)
        self._plan = ffi.gc(ptr_box[0], lib.hsvm_hamming_plan_free, size=ptr_box[0].bytes)

    @property
    def words(self):
        return self._plan.words

    @property
    def bits(self):
        return 64 * self._plan.words

    @property
    def nbytes(self):
        """Heap memory held by the packed copy."""
        return self._plan.bytes

    def _xcodes(self, xcodes):
        xcodes = _codes("xcodes", xcodes)
        _words(self.bits, ("xcodes", xcodes))
        return xcodes


class HammingCodes(_Plan):
    """Classifier codes packed for :meth:`distances` (pack once, query many)."""

    def __init__(self, ccodes, *, bits):
        ccodes = _codes("ccodes", ccodes)
        words = _words(bits, ("ccodes", ccodes))
        box = ffi.new("hsvm_hamming_plan **")
        rc = lib.hsvm_hamming_plan_codes(ffi.from_buffer("uint64_t[]", ccodes), ccodes.shape[0],
                                         ccodes.shape[1], words, box)
        self._adopt(box, rc, "packing classifier codes")
        self.m = ccodes.shape[0]

    def distances(self, xcodes, *, threads=None, kernel=None, out=None):
        """int32 [n, m]: Hamming distance of every sample to every classifier.

        ``out``: optional C-contiguous int32 [n, m] array to fill and return
        (saves the page faults of a fresh multi-megabyte result per call)."""
        xcodes = self._xcodes(xcodes)
        kid = _kernel_id(kernel)
        n, xwords = xcodes.shape
        if out is None:
            out = np.empty((n, self.m), dtype=np.int32)
        elif (not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != (n, self.m)
              or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError("out must be a writeable C-contiguous int32 array of shape (%d, %d)"
                             % (n, self.m))
        if n == 0 or self.m == 0:
            return out
        xp = ffi.from_buffer("uint64_t[]", xcodes)
        op = ffi.from_buffer("int32_t[]", out)
        plan, m = self._plan, self.m

        def call(i0, i1):
            return lib.hsvm_hamming_dist(plan, xp + i0 * xwords, i1 - i0, xwords, op + i0 * m, kid)

        _run_blocks(call, n, threads)
        return out


class HammingVoter(_Plan):
    """One-vs-one classifiers packed for :meth:`vote` (pack once, vote on many
    batches).  Arguments as for :func:`hamming_vote`."""

    def __init__(self, ccodes, thresholds, pair_a, pair_b, *, bags, n_classes, bits,
                 _packed=True):
        # _packed=False forbids the packed accumulation (tests cover both paths).
        ccodes = _codes("ccodes", ccodes)
        words = _words(bits, ("ccodes", ccodes))
        bags = _positive("bags", bags)
        n_classes = _positive("n_classes", n_classes)
        m = ccodes.shape[0]
        if m % bags:
            raise ValueError("ccodes has %d rows, not a multiple of bags=%d" % (m, bags))
        n_pairs = m // bags
        bits = 64 * words
        thr = _int32_vector("thresholds", thresholds, m, 0, bits + 1)
        pa = _int32_vector("pair_a", pair_a, n_pairs, 0, n_classes - 1)
        pb = _int32_vector("pair_b", pair_b, n_pairs, 0, n_classes - 1)
        if n_pairs:
            # The kernels sum in int32; the largest sum is what one class collects.
            per_class = (np.bincount(pa, minlength=n_classes)
                         + np.bincount(pb[pb != pa], minlength=n_classes))
            if int(per_class.max()) * bags * (bits + 1) > _INT32_MAX:
                raise ValueError("distance sums could overflow int32: a class is in %d pairs "
                                 "x %d bags x %d bits" % (per_class.max(), bags, bits))
        box = ffi.new("hsvm_hamming_plan **")
        rc = lib.hsvm_hamming_plan_votes(
            ffi.from_buffer("uint64_t[]", ccodes), m, ccodes.shape[1], words,
            ffi.from_buffer("int32_t[]", thr), ffi.from_buffer("int32_t[]", pa),
            ffi.from_buffer("int32_t[]", pb), n_pairs, bags, n_classes,
            0 if _packed else lib.HSVM_PLAN_NO_PACK, box)
        self._adopt(box, rc, "packing classifiers")
        self.bags = bags
        self.n_classes = n_classes
        self.n_pairs = n_pairs
        self.packed = self._plan.pack_shift > 0

    def blocking(self):
        """(samples per group, packed 16-classifier blocks per chunk): the cache
        blocking :meth:`vote` uses on this machine (sized from its L2 cache)."""
        box = ffi.new("int64_t[2]")
        _check_rc(lib.hsvm_hamming_vote_blocking(self._plan, box, box + 1), "blocking")
        return int(box[0]), int(box[1])

    def vote(self, xcodes, *, threads=None, kernel=None, _blocking=None, out=None, dsum=None):
        """(votes, dsum), int32 [n, n_classes] each; see :func:`hamming_vote`.
        ``out``, ``dsum``: C-contiguous int32 [n, n_classes] arrays for the
        votes and the distance sums (overwritten)."""
        # _blocking=(group, chunk) forces the cache blocking (tests cover its
        # boundaries; 0 keeps the automatic choice).
        group, chunk = _blocking or (0, 0)
        xcodes = self._xcodes(xcodes)
        kid = _kernel_id(kernel)
        n, xwords = xcodes.shape
        K = self.n_classes
        votes = _zeroed_counts("out", out, (n, K))
        dsum = _zeroed_counts("dsum", dsum, (n, K))
        if n == 0:
            return votes, dsum
        xp = ffi.from_buffer("uint64_t[]", xcodes)
        vp = ffi.from_buffer("int32_t[]", votes)
        dp = ffi.from_buffer("int32_t[]", dsum)
        plan = self._plan

        def call(i0, i1):
            return lib.hsvm_hamming_vote_blocked(plan, xp + i0 * xwords, i1 - i0, xwords,
                                                 vp + i0 * K, dp + i0 * K, kid, group, chunk)

        _run_blocks(call, n, threads)
        return votes, dsum


def _zeroed_counts(name, given, shape):
    if given is None:
        return np.zeros(shape, dtype=np.int32)
    output_array(name, given, shape, np.int32).fill(0)
    return given


def hamming_vote(xcodes, ccodes, thresholds, pair_a, pair_b, *, bags, n_classes, bits,
                 threads=None, kernel=None):
    """Fused Hamming range-query one-vs-one voting.

    xcodes: uint64 [n, xwords], ccodes: uint64 [n_pairs * bags, cwords], both
    C-contiguous; only the first ``bits // 64`` words are used (``bits`` a
    positive multiple of 64, at most 64 * min(xwords, cwords)).  thresholds:
    integers [n_pairs * bags] in [0, bits + 1]; pair_a, pair_b: integers
    [n_pairs] in [0, n_classes).  Classifier j = p * bags + k is positive for
    sample i iff d_ij = popcount(x_i ^ c_j) < thresholds[j].  For pair p, with
    cnt positives, D = sum of d and T = sum of thresholds over its bags, class
    pair_a[p] wins if 2*cnt > bags or (2*cnt == bags and D < T), else pair_b[p].

    Returns (votes, dsum), int32 [n, n_classes] each: votes[i, c] = pairs c
    won; dsum[i, pair_a[p]] += D, dsum[i, pair_b[p]] -= D.  ``threads``: worker
    threads (default :func:`hsvm_cli.support.threads.default_threads`); ``kernel``: see
    the module docstring.  Raises ValueError for invalid inputs.

    Packs the classifiers on every call; keep a :class:`HammingVoter` to vote on
    several batches with the same classifiers.
    """
    _words(bits, ("xcodes", _codes("xcodes", xcodes)))
    _kernel_id(kernel)
    resolve_threads(threads)
    voter = HammingVoter(ccodes, thresholds, pair_a, pair_b, bags=bags,
                         n_classes=n_classes, bits=bits)
    return voter.vote(xcodes, threads=threads, kernel=kernel)


def hamming_distances(xcodes, ccodes, *, bits, kernel=None, threads=None, out=None):
    """int32 [n, m]: popcount(x_i ^ c_j) over the first ``bits // 64`` words
    of xcodes uint64 [n, xwords] and ccodes uint64 [m, cwords] (both
    C-contiguous).  ``out``: optional int32 [n, m] array to fill.  Packs ccodes
    on every call; keep a :class:`HammingCodes` to query the same codes often."""
    _words(bits, ("xcodes", _codes("xcodes", xcodes)))
    _kernel_id(kernel)
    resolve_threads(threads)
    return HammingCodes(ccodes, bits=bits).distances(xcodes, threads=threads, kernel=kernel,
                                                     out=out)
