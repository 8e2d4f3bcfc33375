"""The refine step: exact votes among the k classes the hash filter kept.

For a batch of samples, the (sample, classifier) cells of all k(k-1)/2 pairs of
each sample's kept classes are grouped by classifier row, the rows are read
once from the (memory-mapped) model, and the decision values come from a
sampled dense-dense product in C (native/refine.c)."""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..models.pairs import canonical_pairs
from ..support.kernels import kernel_error, kernel_id
from ..support.native import ffi, float_vector_ptr, lib, ptr


def group_by_key(key, n_keys):
    """Indices of ``key`` grouped by value, increasing, stable (counting sort)."""
    key = np.ascontiguousarray(key, dtype=np.int64)
    order = np.empty(key.shape[0], dtype=np.int64)
    if key.shape[0]:
        rc = lib.hsvm_group_by_key(ptr("int64_t *", key), key.shape[0], int(n_keys), ptr("int64_t *", order))
        if rc == -1:
            raise ValueError("key out of range")
        if rc == -2:
            raise MemoryError("grouping cells")
    return order


def _cell_operands(W, bias, cx, cw):
    """The output vector and the operands in the dtypes the C kernels take.
    W may be the model's read-only memory map: used in place, never copied."""
    return (np.empty(np.shape(cx)[0], dtype=np.float32), np.ascontiguousarray(W, dtype=np.float32),
            np.ascontiguousarray(bias, dtype=np.float32), np.ascontiguousarray(cx, dtype=np.int64),
            np.ascontiguousarray(cw, dtype=np.int64))


def sddmm(X, W, bias, cx, cw, *, order=None, threads=1, kernel=None):
    """dec[c] = X[cx[c]] . W[cw[c]] + bias[cw[c]] (float32), the cells visited
    in ``order`` (default: as given; group them by cw so each row of W is read
    once).  ``kernel`` (None/auto, portable, avx2, avx512 = avx2 here) forces a
    code path; every path gives the same bits."""
    kid = kernel_id(kernel)
    out, W, bias, cx, cw = _cell_operands(W, bias, cx, cw)
    ncells, d = out.shape[0], W.shape[1]
    if ncells == 0:
        return out
    order = np.arange(ncells, dtype=np.int64) if order is None else np.ascontiguousarray(order, dtype=np.int64)
    if sp.issparse(X):
        X = X.tocsr()
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        data = np.ascontiguousarray(X.data, dtype=np.float32)

        def run(s, e):
            lib.hsvm_sddmm_csr(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("float *", data),
                               ptr("float *", W), ptr("float *", bias), d,
                               ptr("int64_t *", cx), ptr("int64_t *", cw), ptr("int64_t *", order[s:e]), e - s,
                               ptr("float *", out))
    else:
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.shape[1] != d:
            raise ValueError("samples have %d features, classifiers %d" % (X.shape[1], d))

        def run(s, e):
            rc = lib.hsvm_sddmm_dense(ptr("float *", X), ptr("float *", W), ptr("float *", bias), d,
                                      ptr("int64_t *", cx), ptr("int64_t *", cw), ptr("int64_t *", order[s:e]),
                                      e - s, ptr("float *", out), kid)
            if rc != 0:
                raise kernel_error(rc, kernel)
    threads = max(1, min(int(threads), ncells // 4096 + 1))
    if threads == 1:
        run(0, ncells)
    else:
        # Each thread takes a contiguous run of the (grouped) order: threads
        # share no classifier rows except at the boundaries, and write disjoint cells.
        bounds = np.linspace(0, ncells, threads + 1).astype(np.int64)
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: run(int(bounds[i]), int(bounds[i + 1])), range(threads)))
    return out


def sample_tile(d):
    """Samples per tile of :func:`sddmm_by_sample`: their rows fill half of
    one core's L2 cache, the other half left to the classifier rows
    streaming past."""
    return int(max(8, lib.hsvm_cache_bytes(2) // (2 * 4 * max(1, int(d)))))


def sddmm_by_sample(X, W, bias, cx, cw, *, threads=1, kernel=None, tile=None):
    """:func:`sddmm` for dense X and cells sorted by sample (``cx``
    nondecreasing), in tiles of ``tile`` samples (default
    :func:`sample_tile`): within a tile the cells are grouped by classifier
    row in C, so the tile's samples stay in the cache while the rows it needs
    are read once each.  Threads take whole tiles.  The same bits as
    :func:`sddmm` on every path."""
    kid = kernel_id(kernel)
    out, W, bias, cx, cw = _cell_operands(W, bias, cx, cw)
    ncells, d = out.shape[0], W.shape[1]
    if ncells == 0:
        return out
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError("samples have %s features, classifiers %d" % (X.shape[1:], d))
    tile = sample_tile(d) if tile is None else int(tile)
    if tile < 1:
        raise ValueError("tile must be at least 1")
    if cx[0] < 0 or cx[-1] >= X.shape[0]:
        raise ValueError("a cell names a sample outside 0..%d" % (X.shape[0] - 1))

    def run(s, e):
        rc = lib.hsvm_sddmm_tiled(ptr("float *", X), ptr("float *", W), ptr("float *", bias), d,
                                  ptr("int64_t *", cx[s:e]), ptr("int64_t *", cw[s:e]), e - s, W.shape[0], tile,
                                  ptr("float *", out[s:e]), kid)
        if rc == -1:
            raise ValueError("cells must be sorted by sample and name classifiers in 0..%d" % (W.shape[0] - 1))
        if rc == -2:
            raise MemoryError("grouping cells")
        if rc != 0:
            raise kernel_error(rc, kernel)
    n_tiles = int(cx[-1]) // tile + 1
    threads = max(1, min(int(threads), n_tiles, ncells // 4096 + 1))
    if threads == 1:
        run(0, ncells)
    else:
        # Tile-aligned sample ranges: no tile is split, so each thread's
        # samples are its own and the results do not depend on the split.
        first = np.linspace(0, n_tiles, threads + 1).astype(np.int64) * tile
        bounds = np.searchsorted(cx, first)
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: run(int(bounds[i]), int(bounds[i + 1])), range(threads)))
    return out


@dataclass
class RefinedPairs:
    """The exact decisions of the pairs among each row's refined classes.

    ``S`` [n, k]: each row's refined classes, sorted, padding last;
    ``nvalid`` [n]: how many of them are in use; ``A`` < ``B`` [n, q]: the
    class indices of the q = k(k-1)/2 pairs of S (``A = S[:, iu]``, ``B =
    S[:, ju]`` in :func:`~hsvm_cli.models.pairs.canonical_pairs` order);
    ``dec`` [n, q, bags] float32 decision values in the model's orientation
    of each pair (0 where unused): positive means A where ``sign`` is None or
    +1, B where it is -1 (a model may store a pair as (b, a)); ``pmask``
    [n, q]: the pairs of two classes in use."""

    A: np.ndarray
    B: np.ndarray
    dec: np.ndarray
    pmask: np.ndarray
    S: np.ndarray
    nvalid: np.ndarray
    sign: np.ndarray = None

    def votes(self, n_classes):
        """Votes and confidences [n, K]: a pair's winner is the majority of its
        bags, an even split goes to the sign of the summed decision values
        (the rule of exact prediction, native/votes.c)."""
        n, q = self.A.shape
        A = np.ascontiguousarray(self.A, dtype=np.int64)
        B = np.ascontiguousarray(self.B, dtype=np.int64)
        dec = np.ascontiguousarray(self.dec, dtype=np.float32)
        mask = np.ascontiguousarray(self.pmask, dtype=np.uint8)
        sign = ffi.NULL if self.sign is None else ptr("int8_t *", np.ascontiguousarray(self.sign, dtype=np.int8))
        votes = np.empty((n, n_classes), dtype=np.int32)
        conf = np.empty((n, n_classes), dtype=np.float64)
        if lib.hsvm_cell_votes(ptr("float *", dec), ptr("int64_t *", A), ptr("int64_t *", B),
                               ptr("uint8_t *", mask), sign, n, q, dec.shape[2] if dec.ndim == 3 else 1, n_classes,
                               ptr("int32_t *", votes), ptr("double *", conf)) != 0:
            raise ValueError("pair names a class outside 0..%d" % (n_classes - 1))
        return votes, conf


# What a refine cell (one sample and classifier, the sampled product) costs
# against a cell of the dense product of exact scoring (BLAS, which uses
# FMA and register blocking the fixed-order sampled sums cannot): measured
# on this project's machine at 16-25 on omniglot-242 (d = 784, two threads,
# k = 30..100: BENCHMARKS.md, "Refine against exact").  When the cells of a
# block would cost more than scoring every classifier, the refine scores
# every classifier instead.
CELL_COST = 18


def dense_is_cheaper(cells_per_sample, n_classifiers):
    """Whether exact scoring of all classifiers costs less than refining
    ``cells_per_sample`` (sample, classifier) cells per sample."""
    return cells_per_sample * CELL_COST > n_classifiers


def sorted_kept(kept, valid=None):
    """Each row's kept classes sorted (int64 [n, k]) and how many are in use:
    entries ``valid`` leaves out sort last (as class 0), so the pairs of
    classes in use come first in canonical pair order."""
    n, k = kept.shape
    if valid is None:
        return np.sort(kept, axis=1).astype(np.int64), np.full(n, k)
    big = np.iinfo(np.int64).max
    S = np.sort(np.where(valid, kept.astype(np.int64), big), axis=1)
    return np.where(S == big, 0, S), valid.sum(axis=1)


def kept_votes(decisions, kept, *, lookup, bags, valid=None, bias=None):
    """Votes and confidences [n, K] among each row's kept classes [n, k]
    (``valid`` marks the entries in use), read straight from the decision
    values of every classifier [n, P*bags]: what
    ``refine_decisions(..., decisions=decisions).votes(K)`` gives, bit for
    bit, without gathering the cells (native/votes.c).  ``bias`` (float32
    [P*bags], optional): ``decisions`` then holds the products w.x, and the
    values are ``decisions + bias`` in float32 without that pass."""
    n, k = kept.shape
    K = lookup.K
    S, nvalid = sorted_kept(kept, valid)
    S = np.ascontiguousarray(S)
    nvalid = None if valid is None else np.ascontiguousarray(nvalid, dtype=np.int64)
    dec = np.ascontiguousarray(decisions, dtype=np.float32)
    ids, signs = lookup.table()
    votes = np.empty((n, K), dtype=np.int32)
    conf = np.empty((n, K), dtype=np.float64)
    bias, bias_ptr = float_vector_ptr("bias", bias, dec.shape[1])
    rc = lib.hsvm_kept_votes(ptr("float *", dec), bias_ptr, n, dec.shape[1] if n else 0, ptr("int64_t *", S), k,
                             ffi.NULL if nvalid is None else ptr("int64_t *", nvalid), ptr("int64_t *", ids),
                             ptr("int8_t *", signs), bags, K, ptr("int32_t *", votes), ptr("double *", conf))
    if rc == -2:
        raise ValueError("the model has no classifier for some pair of kept classes")
    if rc != 0:
        raise ValueError("a kept class is outside 0..%d" % (K - 1))
    return votes, conf, (np.full(n, k) if nvalid is None else nvalid)


def refine_decisions(model, Xn, kept, *, lookup, valid=None, threads=1, decisions=None):
    """Exact decision values of the pairs among each row's kept classes.

    ``kept`` [n, k] class indices; ``valid`` [n, k] marks the entries in use
    (rows may refine fewer than k classes; default: all); ``lookup`` the
    model's :class:`~hsvm_cli.models.pairs.PairLookup`.  ``decisions``: the
    exact scorer's decision values of every classifier [n, P*bags], when
    scoring all of them was cheaper than the sampled product: the cells are
    then read from it instead of computed.  Returns :class:`RefinedPairs`."""
    n, k = kept.shape
    bags = model.bags
    iu, ju = canonical_pairs(k)
    q = iu.shape[0]
    S, nvalid = sorted_kept(kept, valid)
    pmask = np.ones((n, q), dtype=bool) if valid is None else (ju[None, :] < nvalid[:, None])
    A = S[:, iu]
    B = S[:, ju]
    if n == 0 or q == 0 or not pmask.any():
        return RefinedPairs(A, B, np.zeros((n, q, bags), dtype=np.float32), pmask, S, nvalid)
    every = valid is None
    if every:
        # Every (row, pair) is a cell: no index lists, the result is dec itself.
        pid, sign = lookup.lookup(A.ravel(), B.ravel())
        cx = np.repeat(np.arange(n, dtype=np.int64), q * bags)
    else:
        cell_rows, cell_pairs = np.nonzero(pmask)
        pid, sign = lookup.lookup(A[cell_rows, cell_pairs], B[cell_rows, cell_pairs])
        cx = np.repeat(cell_rows.astype(np.int64), bags)
    rows = (pid[:, None] * bags + np.arange(bags)).reshape(-1) if bags > 1 else pid.astype(np.int64, copy=False)
    if decisions is not None:
        flat = np.ascontiguousarray(decisions[cx, rows], dtype=np.float32).reshape(-1, bags)
        return _assemble(A, B, flat, pmask, S, nvalid, sign, every, None if every else (cell_rows, cell_pairs))
    model.verify(rows=rows)
    if sp.issparse(Xn):
        # Cells grouped by classifier row (a counting sort), so that each row
        # of the memory-mapped W is read once, in file order, for the whole
        # batch; a sparse sample touches a few words of each row.
        order = group_by_key(rows, model.n_classifiers)
        flat = sddmm(Xn, model.W, model.b, cx, rows, order=order, threads=threads)
    else:
        # The cells are in sample order: tiles of samples that stay in L2.
        flat = sddmm_by_sample(Xn, model.W, model.b, cx, rows, threads=threads)
    flat = flat.reshape(-1, bags)
    return _assemble(A, B, flat, pmask, S, nvalid, sign, every, None if every else (cell_rows, cell_pairs))


def _assemble(A, B, flat, pmask, S, nvalid, sign, every, cells):
    n, q = A.shape
    bags = flat.shape[1]
    if every:
        return RefinedPairs(A, B, flat.reshape(n, q, bags), pmask, S, nvalid,
                            None if sign is None else sign.reshape(n, q))
    cell_rows, cell_pairs = cells
    dec = np.zeros((n, q, bags), dtype=np.float32)
    dec[cell_rows, cell_pairs] = flat
    cell_sign = None
    if sign is not None:
        cell_sign = np.ones((n, q), dtype=np.int8)
        cell_sign[cell_rows, cell_pairs] = sign
    return RefinedPairs(A, B, dec, pmask, S, nvalid, cell_sign)
