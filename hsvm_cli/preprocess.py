"""Sample normalisation applied identically at training and prediction time."""
import numpy as np
import scipy.sparse as sp


def l2_normalize(X, *, copy=True):
    """Scale every row to unit Euclidean length; all-zero rows stay zero.
    Works on CSR matrices and dense arrays, keeping the dtype."""
    if sp.issparse(X):
        X = X.tocsr(copy=copy)
        counts = np.diff(X.indptr)
        rows = np.repeat(np.arange(X.shape[0]), counts)
        norms = np.sqrt(np.bincount(rows, weights=np.square(X.data, dtype=np.float64), minlength=X.shape[0]))
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        X.data *= scale[rows].astype(X.dtype, copy=False)
        return X
    X = np.array(X, copy=copy)
    if X.dtype == np.float32:
        # A fixed summation order: normalised samples, hence their codes, are
        # the same bits on every CPU (hsvm_cli.signs).
        from .signs import row_norms
        norms = row_norms(X)
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    X *= scale[:, None].astype(X.dtype, copy=False)
    return X


def apply_normalization(X, how, *, copy=True):
    if how == "l2":
        return l2_normalize(X, copy=copy)
    if how == "none":
        return X
    raise ValueError("unknown normalisation %r (choose l2 or none)" % how)


# Above this fraction of nonzeros a block is multiplied as a dense matrix: a
# sparse x dense product does ~2 flops per nonzero per output column at scalar
# speed, BLAS does 2 flops per entry at SIMD speed, roughly 20-40x faster per
# flop, so dense wins once more than a few percent of the entries are nonzero.
DENSE_ABOVE = 0.05


def densify_if_dense(X, *, threshold=DENSE_ABOVE):
    """A dense float32 array when the sparse block X is dense enough for BLAS to
    win, otherwise X unchanged."""
    if sp.issparse(X):
        n, d = X.shape
        if n * d and X.nnz >= threshold * n * d:
            return X.toarray()
    return X
