"""The refine step: exact votes among the k classes the hash filter kept.

For a batch of samples, the (sample, classifier) cells of all k(k-1)/2 pairs of
each sample's kept classes are grouped by classifier row, the rows are read
once from the (memory-mapped) model, and the decision values come from a
sampled dense-dense product in C (native/refine.c)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from ._native import lib
from .cbuf import ptr


class PairLookup:
    """Maps class pairs (a < b) to pair ids and orientation (+1 when the model's
    pair is (a, b), -1 when it is (b, a))."""

    def __init__(self, pair_a, pair_b, n_classes):
        self.K = int(n_classes)
        a = np.asarray(pair_a, dtype=np.int64)
        b = np.asarray(pair_b, dtype=np.int64)
        ca, cb = np.triu_indices(self.K, k=1)
        self.canonical = a.shape == ca.shape and np.array_equal(a, ca) and np.array_equal(b, cb)
        if not self.canonical:
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            keys = lo * self.K + hi
            self.order = np.argsort(keys, kind="stable")
            self.keys = keys[self.order]
            self.sign = np.where(a < b, 1, -1).astype(np.int8)

    def lookup(self, A, B):
        """Pair ids and orientation for class index arrays A < B (same shape).
        Raises ValueError if the model has no classifier for some pair."""
        if self.canonical:
            pid = A * self.K - (A * (A + 1)) // 2 + (B - A - 1)
            return pid, None
        q = A.astype(np.int64) * self.K + B
        pos = np.searchsorted(self.keys, q)
        pos_c = np.minimum(pos, self.keys.shape[0] - 1)
        if np.any(self.keys[pos_c] != q):
            raise ValueError("the model has no classifier for some pair of kept classes")
        pid = self.order[pos_c]
        return pid, self.sign[pid]


_KERNELS = {None: 0, "auto": 0, "portable": 1, "avx2": 2, "avx512": 3}


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


def sddmm(X, W, bias, cx, cw, *, order=None, threads=1, kernel=None):
    """dec[c] = X[cx[c]] . W[cw[c]] + bias[cw[c]] (float32), the cells visited
    in ``order`` (default: as given; group them by cw so each row of W is read
    once).  ``kernel`` (None/auto, portable, avx2, avx512 = avx2 here) forces a
    code path; every path gives the same bits."""
    if kernel not in _KERNELS:
        raise ValueError("unknown kernel %r" % (kernel,))
    kid = _KERNELS[kernel]
    ncells = cx.shape[0]
    out = np.empty(ncells, dtype=np.float32)
    if ncells == 0:
        return out
    # W may be the model's read-only memory map: used in place, never copied.
    W = np.ascontiguousarray(W, dtype=np.float32)
    bias = np.ascontiguousarray(bias, dtype=np.float32)
    d = W.shape[1]
    cx = np.ascontiguousarray(cx, dtype=np.int64)
    cw = np.ascontiguousarray(cw, dtype=np.int64)
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
            if lib.hsvm_sddmm_dense(ptr("float *", X), ptr("float *", W), ptr("float *", bias), d,
                                    ptr("int64_t *", cx), ptr("int64_t *", cw), ptr("int64_t *", order[s:e]),
                                    e - s, ptr("float *", out), kid) != 0:
                raise ValueError("kernel %s is not available on this CPU" % kernel)
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


def refine_decisions(model, Xn, kept, *, lookup, valid=None, threads=1):
    """Exact decision values of the pairs among each row's kept classes.

    ``kept`` [n, k] class indices; ``valid`` [n, k] marks the entries in use
    (rows may refine fewer than k classes; default: all).  Returns (A, B, dec,
    pmask): A < B [n, q] class indices of the q = k(k-1)/2 pairs of the sorted
    kept classes, dec [n, q, bags] float32 decision values oriented so that
    positive means A, and pmask [n, q], the pairs whose two classes are valid
    (dec is 0 elsewhere).  The sorted kept classes S [n, k] (padding last) are
    returned too: A = S[:, iu], B = S[:, ju] with iu, ju = triu_indices(k, 1)."""
    n, k = kept.shape
    bags = model.bags
    iu, ju = np.triu_indices(k, k=1)
    q = iu.shape[0]
    if valid is None:
        S = np.sort(kept, axis=1).astype(np.int64)
        pmask = np.ones((n, q), dtype=bool)
    else:
        # Invalid entries sort last, so pairs of valid classes come first per row.
        big = np.iinfo(np.int64).max
        S = np.sort(np.where(valid, kept.astype(np.int64), big), axis=1)
        nvalid = valid.sum(axis=1)
        pmask = (ju[None, :] < nvalid[:, None])
        S = np.where(S == big, 0, S)
    A = S[:, iu]
    B = S[:, ju]
    if n == 0 or q == 0 or not pmask.any():
        return A, B, np.zeros((n, q, bags), dtype=np.float32), pmask, S
    every = valid is None
    if every:
        # Every (row, pair) is a cell: no index lists, the result is dec itself.
        cell_rows = None
        pid, sign = lookup.lookup(A.ravel(), B.ravel())
        cx = np.repeat(np.arange(n, dtype=np.int64), q * bags)
    else:
        cell_rows, cell_pairs = np.nonzero(pmask)
        pid, sign = lookup.lookup(A[cell_rows, cell_pairs], B[cell_rows, cell_pairs])
        cx = np.repeat(cell_rows.astype(np.int64), bags)
    rows = (pid[:, None] * bags + np.arange(bags)).reshape(-1) if bags > 1 else pid.astype(np.int64, copy=False)
    # Cells grouped by classifier row (a counting sort), so that each row of
    # the memory-mapped W is read once, in file order, for the whole batch.
    order = group_by_key(rows, model.n_classifiers)
    flat = sddmm(Xn, model.W, model.b, cx, rows, order=order, threads=threads).reshape(-1, bags)
    if sign is not None:
        flat *= sign[:, None]
    if every:
        return A, B, flat.reshape(n, q, bags), pmask, S
    dec = np.zeros((n, q, bags), dtype=np.float32)
    dec[cell_rows, cell_pairs] = flat
    return A, B, dec, pmask, S


def votes_from_decisions(A, B, dec, pmask, n_classes):
    """Votes and confidences [n, K] from refine_decisions' output: a pair's
    winner is the majority of its bags, an even split goes to the sign of the
    summed decision values (the rule of exact prediction, native/votes.c)."""
    n, q = A.shape
    A = np.ascontiguousarray(A, dtype=np.int64)
    B = np.ascontiguousarray(B, dtype=np.int64)
    dec = np.ascontiguousarray(dec, dtype=np.float32)
    mask = np.ascontiguousarray(pmask, dtype=np.uint8)
    votes = np.empty((n, n_classes), dtype=np.int32)
    conf = np.empty((n, n_classes), dtype=np.float64)
    if lib.hsvm_cell_votes(ptr("float *", dec), ptr("int64_t *", A), ptr("int64_t *", B),
                           ptr("uint8_t *", mask), n, q, dec.shape[2] if dec.ndim == 3 else 1, n_classes,
                           ptr("int32_t *", votes), ptr("double *", conf)) != 0:
        raise ValueError("pair names a class outside 0..%d" % (n_classes - 1))
    return votes, conf


def refine_votes(model, Xn, kept, *, lookup, valid=None, threads=1):
    """Exact votes and confidences [n, K] among each row's kept classes;
    classes not kept get no votes."""
    A, B, dec, pmask, _ = refine_decisions(model, Xn, kept, lookup=lookup, valid=valid, threads=threads)
    return votes_from_decisions(A, B, dec, pmask, model.n_classes)
