"""Sample preparation applied identically at training and prediction time:
normalisation (with norms summed in a fixed order, so normalised samples and
hence their codes are the same bits on every CPU) and, for prediction, float32
and a dense layout where BLAS wins."""
import numpy as np

from .errors import DataError
from .support.arrays import aligned_empty
from .support.lazy_sparse import CsrArrays, sp
from .support.native import ffi, lib, ptr
from .support.timing import NullTimings

NORMALIZATIONS = ("l2", "none")

# Above this fraction of nonzeros a block is multiplied as a dense matrix: a
# sparse x dense product does ~2 flops per nonzero per output column at scalar
# speed, BLAS does 2 flops per entry at SIMD speed, roughly 20-40x faster per
# flop, so dense wins once more than a few percent of the entries are nonzero.
DENSE_ABOVE = 0.05


def row_norms(X):
    """Euclidean norms of the rows of a dense float32 matrix, summed in double
    in index order (native/project.c)."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    out = np.empty(X.shape[0], dtype=np.float64)
    if X.shape[0]:
        lib.hsvm_row_norms(ptr("float *", X), X.shape[0], X.shape[1], ptr("double *", out))
    return out


def l2_normalize(X, *, copy=True):
    """Scale every row to unit Euclidean length; all-zero rows stay zero.
    Works on CSR matrices and dense arrays, keeping the dtype."""
    if sp.issparse(X):
        X = X.tocsr(copy=copy)
        for r0, r1 in row_spans(X.indptr):
            a, b = X.indptr[r0], X.indptr[r1]
            rows = np.repeat(np.arange(r1 - r0), np.diff(X.indptr[r0:r1 + 1]))
            norms = np.sqrt(np.bincount(rows, weights=np.square(X.data[a:b], dtype=np.float64), minlength=r1 - r0))
            scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
            pre, scale = _split_scale(scale, X.dtype)
            if pre is not None:
                X.data[a:b] *= pre[rows]
            X.data[a:b] *= scale[rows].astype(X.dtype, copy=False)
        return X
    if copy:
        X = _aligned_copy(np.asarray(X))
    else:
        X = np.asarray(X)
    if X.dtype == np.float32:
        norms = row_norms(X)
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    pre, scale = _split_scale(scale, X.dtype)
    if pre is not None:
        X *= pre[:, None]
    X *= scale[:, None].astype(X.dtype, copy=False)
    return X


#: Non-zeros per span of rows normalised at a time: the temporaries (row
#: numbers, squares, scales) are 8 bytes a non-zero each, 190 MB at once for
#: fashion-mnist-20k's 7.8M before.
SPAN_NONZEROS = 1 << 20


def row_spans(indptr):
    """[r0, r1) spans of consecutive rows of about SPAN_NONZEROS non-zeros (a
    row longer than that alone); every row's sums are taken whole, in order,
    as over the whole matrix."""
    n = indptr.shape[0] - 1
    r0 = 0
    while r0 < n:
        r1 = int(np.searchsorted(indptr, np.int64(indptr[r0]) + SPAN_NONZEROS, side="right")) - 1
        r1 = min(n, max(r1, r0 + 1))
        yield r0, r1
        r0 = r1


def row_sum_squares(X, dtype=None):
    """``X.multiply(X).sum(axis=1)`` as a vector, the same values, a span of
    rows (about SPAN_NONZEROS non-zeros) at a time: each row's sum is scipy's
    over that row alone, without the copy of the whole of X (94 MB at the peak
    of fashion-mnist-20k's search).  ``dtype``: the values squared and summed
    in it (float64 for float32 data near its limit, whose squares overflow in
    their own type), a span converted at a time."""
    if sp.issparse(X) and not (X.format == "csr" and X.has_canonical_format):
        # scipy multiplies these otherwise (a row's order, whole-matrix checks):
        # their own sums, as before
        X = X if dtype is None else X.astype(dtype)
        return np.asarray(X.multiply(X).sum(axis=1)).reshape(-1)
    X = X if sp.issparse(X) else sp.csr_matrix(X)
    parts = []
    for r0, r1 in row_spans(X.indptr):
        S = X[r0:r1] if dtype is None else X[r0:r1].astype(dtype)
        parts.append(np.asarray(S.multiply(S).sum(axis=1)).reshape(-1))
    return np.concatenate(parts) if parts else np.asarray(X.multiply(X).sum(axis=1)).reshape(-1)


def _aligned_copy(X):
    """A C-contiguous copy of X whose rows start on a cache line (the row
    products read them best so: support.arrays.aligned_empty)."""
    out = aligned_empty(X.shape, X.dtype)
    out[...] = X
    return out


def _split_scale(scale, dtype):
    """(pre, scale) such that x * pre * scale normalises each row in ``dtype``
    as native/prepare.c does: pre is None when every 1/norm fits the dtype;
    otherwise 2^64 (exact) for the rows whose 1/norm does not (subnormal
    float32 values) and 1 for the rest, whose result is then unchanged."""
    big = scale > np.finfo(dtype).max
    if not np.any(big):
        return None, scale
    pre = np.where(big, 2.0**64, 1.0).astype(dtype)
    return pre, scale / pre


def apply_normalization(X, how, *, copy=True):
    """``how``: ``"l2"`` (unit rows) or ``"none"``."""
    if how == "l2":
        return l2_normalize(X, copy=copy)
    if how == "none":
        return X
    raise ValueError("unknown normalisation %r (choose %s)" % (how, " or ".join(NORMALIZATIONS)))


def normalized_float64(X, how, *, in_place=False):
    """X (CSR or dense) as float64, normalised (``how``: l2 or none), in memory
    of its own: one copy -- astype's copy before the normalisation's doubled
    the peak of training on float64 input (fashion-mnist-20k: 94 MB more).
    ``in_place``: X is the caller's to spend (train-ovo's file, read for this
    alone): float64 X is normalised in its own memory, no copy at all."""
    if how == "l2":
        Xf = X.astype(np.float64, copy=False)
        # astype's conversion is already a copy of X's values
        return l2_normalize(Xf, copy=Xf is X and not in_place)
    return apply_normalization(X if in_place and X.dtype == np.float64 else X.astype(np.float64), how)


def stays_sparse(X, *, threshold=DENSE_ABOVE):
    """Whether :func:`prepare` keeps the block X sparse (not dense enough for
    BLAS to win)."""
    if not sp.issparse(X):
        return False
    n, d = X.shape
    return not (n * d and X.nnz >= threshold * n * d)


def densify_if_dense(X, *, threshold=DENSE_ABOVE):
    """A dense float32 array when the sparse block X is dense enough for BLAS to
    win, otherwise X unchanged."""
    if sp.issparse(X) and not stays_sparse(X, threshold=threshold):
        return X.toarray()
    return X


def prepare(normalize, X, *, timings=None, threads=1):
    """A block of raw samples as prediction wants it: float32, normalised as the
    model was trained (``normalize``: l2 or none), dense when dense enough for
    BLAS.  The time goes to the ``normalise`` phase of ``timings``.  A chunk as
    the svmlight reader gives it (CSR, float64) takes one pass in C
    (native/prepare.c) to the same bits, its rows split over ``threads``."""
    t = timings or NullTimings()
    with t.phase("normalise"):
        if sp.isspmatrix_csr(X) and X.dtype in (np.float64, np.float32) and normalize in NORMALIZATIONS:
            return _prepare_csr(X, normalize == "l2", threads)
        X = X.astype(np.float32, copy=False) if hasattr(X, "astype") else np.asarray(X, dtype=np.float32)
        return densify_if_dense(apply_normalization(X, normalize, copy=True))


# Rows below which a second thread costs more than it saves (thread start-up
# against ~1 ns per value).
_ROWS_PER_THREAD = 2048


_GIVEN = "_hsvm_given_to_prepare"


def give_to_prepare(X):
    """Marks the reader's chunk X (CSR) as owned by nobody but the caller that
    prepares it next: a fully dense float32 chunk may then be normalised in
    its own values array (no new array, no second pass), which changes X.
    For chunks a caller made and drops after :func:`prepare` (``hsvm
    predict``'s), never for a user's matrix.  Returns X."""
    setattr(X, _GIVEN, True)
    return X


def _prepare_csr(X, l2, threads=1):
    n, d = X.shape
    indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
    f32 = X.data.dtype == np.float32
    values = np.ascontiguousarray(X.data)
    dense = bool(n * d) and X.nnz >= DENSE_ABOVE * n * d
    canonical = 1 if X.has_canonical_format else 0
    in_place = (f32 and dense and canonical and getattr(X, _GIVEN, False) and X.nnz == n * d
                and values.flags.writeable and int(indptr[0]) == 0)
    if in_place:
        out = values[:n * d].reshape(n, d)
        setattr(X, _GIVEN, False)      # its values are now the prepared samples
    else:
        out = aligned_empty((n, d), np.float32) if dense else np.empty(X.nnz, dtype=np.float32)
    # in place, fully dense rows need no indices (the reader may keep none: CsrArrays)
    indices = None if in_place else np.ascontiguousarray(X.indices, dtype=np.int32)
    prepare_rows = lib.hsvm_prepare_csr32 if f32 else lib.hsvm_prepare_csr
    value_type = "float *" if f32 else "double *"
    parts = max(1, min(int(threads or 1), n // _ROWS_PER_THREAD))
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)

    def run(lo, hi):
        # cffi releases the GIL during the call: the parts run in parallel
        return prepare_rows(ptr("int64_t *", indptr) + lo, ffi.NULL if indices is None else ptr("int32_t *", indices),
                            ptr(value_type, values), hi - lo, d, 1 if l2 else 0, canonical,
                            ptr("float *", out) + lo * d if dense else ffi.NULL,
                            ffi.NULL if dense else ptr("float *", out))
    if parts == 1:
        bad = run(0, n)
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(parts) as pool:
            bad = sum(pool.map(run, bounds[:-1], bounds[1:]))
    if bad < 0:
        raise AssertionError("in-place preparation of rows that are not fully dense")
    if bad:
        raise DataError("%d feature value%s beyond the float32 range of the model"
                        % (bad, " is" if bad == 1 else "s are"))
    if dense:
        return out
    if isinstance(X, CsrArrays):
        # the reader's chunk, canonical: it stays scipy-free, as the sparse
        # prediction paths take it (importing scipy.sparse cost a sparse
        # predict 0.1-0.15 s, more than scoring reuters-r52's test file)
        return CsrArrays(out, X.indices, X.indptr, (n, d))
    Y = sp.csr_matrix((out, X.indices, X.indptr), shape=(n, d), copy=False)
    Y.has_sorted_indices = X.has_sorted_indices
    return Y
