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
