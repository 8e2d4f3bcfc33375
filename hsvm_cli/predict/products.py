"""Products w·x of samples and classifiers with bits that depend on the
sample and the classifier only (native/products.c).

A BLAS sgemm may round a row's products differently depending on where the
row falls in the call (the size of the call, its last rows, the thread that
takes it), so scores from it -- and the labels, ties and probabilities read
from them -- could change with ``--chunk-rows``, ``--shard`` or the thread
count.  Here every product is one chain of fused multiply-adds over the
features in order, on every instruction-set path, for dense and CSR rows
alike; rows are split between threads, which changes nothing."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..support.kernels import kernel_id
from ..support.lazy_sparse import sp
from ..support.native import lib, ptr
from ..support.threads import resolve_threads

__all__ = ["products", "transposed", "direct_is_cheaper", "SparseRowProducts"]

# Rows per thread task: enough to amortise packing the classifiers (each task
# packs them again), few enough to balance two or more threads.
_MIN_ROWS_PER_TASK = 64
# Classifiers per thread task below which dense rows are split by rows instead.
_MIN_COLUMNS_PER_TASK = 256


# Rows of W copied into the transpose at a time: a whole-matrix copy of the
# transposed view reads W down its columns, a page per element beyond the
# TLB's reach (sector-like, 5,460 x 55,000: 6.5 s); 256 rows at a time read
# 256 pages in turn, each a run of 1 KB written (0.64 s).
_TRANSPOSE_ROWS = 256


def transposed(W):
    """The d x P contiguous transpose of W that CSR rows read (keep it with W)."""
    W = np.asarray(W, dtype=np.float32)
    if W.ndim != 2 or W.shape[0] <= _TRANSPOSE_ROWS or W.T.flags.c_contiguous:
        return np.ascontiguousarray(W.T)          # small, or already the transpose's layout: no blocks
    WT = np.empty((W.shape[1], W.shape[0]), dtype=np.float32)
    for r in range(0, W.shape[0], _TRANSPOSE_ROWS):
        WT[:, r:r + _TRANSPOSE_ROWS] = W[r:r + _TRANSPOSE_ROWS].T
    return WT


# Sparse rows with at most one stored entry per this many features read W's
# rows directly: transposing W costs P d element copies (~2 ns each), the
# direct products P gathers per entry (~3.3 ns each): even at about one
# entry per 1.7 features.  Measured on reuters-r52's model (1,326 x 11,698):
# 30 ms for the transpose, 2.2 ms for one row of 250 entries directly, 12 ms
# for 40 rows (2,526), 67 ms for 400 (15,920); 4 leaves room for the
# transpose serving later blocks too.
DIRECT_FEATURES_PER_ENTRY = 4


def direct_is_cheaper(X, d):
    """Whether the CSR rows X are few enough to score from W's rows without
    its transpose (:data:`DIRECT_FEATURES_PER_ENTRY`)."""
    return X.nnz * DIRECT_FEATURES_PER_ENTRY <= d


class SparseRowProducts:
    """Products of CSR rows with the rows of W [P, d] (:func:`products`) for
    a stream of blocks, W's transpose made only once it pays: blocks read W's
    rows directly while the entries scored so in all stay within
    d / :data:`DIRECT_FEATURES_PER_ENTRY` (a one-line input, a few short
    chunks), later ones the transpose, made once -- ``before_transpose()``
    first, a caller's check of W or of the memory the copy takes.  The same
    bits either way."""

    def __init__(self, W, *, before_transpose=None):
        self.W = W
        self._before_transpose = before_transpose
        self.WT_made = None         # the transpose, once made
        self._direct = 0            # entries scored from W's rows so far

    @property
    def WT(self):
        """W's transpose (made on first use)."""
        if self.WT_made is None:
            if self._before_transpose is not None:
                self._before_transpose()
            self.WT_made = transposed(self.W)
        return self.WT_made

    def __call__(self, X, *, threads=1, kernel=None):
        """Products [n, P] float32 of the CSR rows X."""
        if self.WT_made is None and self._direct + X.nnz <= self.W.shape[1] // DIRECT_FEATURES_PER_ENTRY:
            self._direct += X.nnz
            return products(X, self.W, threads=threads, kernel=kernel)      # direct_is_cheaper holds
        return products(X, self.W, WT=self.WT, threads=threads, kernel=kernel)


def products(X, W, *, WT=None, out=None, threads=1, kernel=None):
    """Products [n, P] float32 of the rows of X (dense or sparse, d columns)
    and the rows of W [P, d] float32.  ``WT``: W's transpose for CSR rows
    (made here when not given, unless the rows are few enough to read W's
    rows directly: :func:`direct_is_cheaper`; the same bits either way);
    ``out``: a C-contiguous float32 array of at
    least n rows and P columns to fill; ``threads``: worker threads;
    ``kernel``: the code path (None: HSVM_KERNEL or the best the CPU has)."""
    W = np.ascontiguousarray(W, dtype=np.float32)
    P, d = W.shape
    sparse = sp.issparse(X)
    if sparse:
        X = X.tocsr()
        if not X.has_sorted_indices:
            X = X.sorted_indices()
    else:
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError("samples must be a 2-d array, got %d dimensions" % X.ndim)
    n = X.shape[0]
    if X.shape[1] != d:
        raise ValueError("samples have %d features, classifiers %d" % (X.shape[1], d))
    if out is None:
        out = np.empty((n, P), dtype=np.float32)
    else:
        if out.dtype != np.float32 or not out.flags.c_contiguous or out.shape[0] < n or out.shape[1] != P:
            raise ValueError("out must be a C-contiguous float32 array of at least %d x %d" % (n, P))
        out = out[:n]
    if n == 0 or P == 0:
        return out
    kid = kernel_id(kernel)
    threads = resolve_threads(threads)
    # Dense rows split the classifiers between the threads when there are
    # enough: each packs only its share of W, where a split of the rows would
    # have every thread pack (read) all of W for few rows.
    by_columns = not sparse and P >= _MIN_COLUMNS_PER_TASK * threads
    if sparse:
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        data = np.ascontiguousarray(X.data, dtype=np.float32)
        if WT is None and direct_is_cheaper(X, d):
            def run(s, e):      # rows s..e, from W's rows
                return lib.hsvm_products_csr_direct(ptr("int64_t *", indptr[s:]), ptr("int32_t *", indices),
                                                    ptr("float *", data), e - s, ptr("float *", W), d, P,
                                                    ptr("float *", out[s:]), P, kid)
        else:
            WT = transposed(W) if WT is None else WT
            if WT.shape != (d, P) or WT.dtype != np.float32 or not WT.flags.c_contiguous:
                raise ValueError("WT must be the contiguous float32 transpose of W")

            def run(s, e):      # rows s..e
                return lib.hsvm_products_csr(ptr("int64_t *", indptr[s:]), ptr("int32_t *", indices),
                                             ptr("float *", data), e - s, ptr("float *", WT), P,
                                             ptr("float *", out[s:]), P, kid)
    elif by_columns:
        def run(s, e):          # classifiers s..e
            return lib.hsvm_products_dense(ptr("float *", X), n, d, d, ptr("float *", W[s:]), e - s,
                                           ptr("float *", out) + s, P, kid)
    else:
        def run(s, e):          # rows s..e
            return lib.hsvm_products_dense(ptr("float *", X[s:]), e - s, d, d, ptr("float *", W), P,
                                           ptr("float *", out[s:]), P, kid)
    if by_columns:
        tasks = threads
        bounds = np.linspace(0, P, tasks + 1).astype(np.int64) // 32 * 32
        bounds[-1] = P
    else:
        tasks = max(1, min(threads, n // _MIN_ROWS_PER_TASK))
        bounds = np.linspace(0, n, tasks + 1).astype(np.int64)
    spans = [(int(bounds[i]), int(bounds[i + 1])) for i in range(tasks) if bounds[i] < bounds[i + 1]]
    if len(spans) == 1:
        codes = [run(*spans[0])]
    else:
        with ThreadPoolExecutor(max_workers=len(spans)) as pool:
            codes = list(pool.map(lambda span: run(*span), spans))
    for rc in codes:
        if rc == lib.HSVM_PRODUCTS_ENOMEM:
            raise MemoryError("products: no memory for the packed classifiers")
        if rc != 0:
            raise RuntimeError("hsvm_products failed with code %d" % rc)
    return out
