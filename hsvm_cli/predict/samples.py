"""Samples handed to a predictor from Python: a 2-d array or sparse matrix,
made as wide as the model (missing trailing features are zeros, as in an
svmlight file; features beyond the model are refused, or dropped for an
imported model as svm-predict and liblinear-predict drop them), and, at the
public entry points, finite."""
import numpy as np
import scipy.sparse as sp

__all__ = ["fit_width", "check_samples"]


def fit_width(X, n_features, *, extra="error"):
    """X (CSR or dense, 2-d) with exactly ``n_features`` columns.  ``extra``:
    "error" (a ValueError naming both widths) or "ignore" (drop the columns
    beyond the model's) for wider X."""
    if sp.issparse(X):
        X = X.tocsr()
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError("X must be 2-dimensional (samples x features), got %d dimension%s%s"
                             % (X.ndim, "" if X.ndim == 1 else "s",
                                "; for one sample use X.reshape(1, -1)" if X.ndim == 1 else ""))
    d = X.shape[1]
    if d == n_features:
        return X
    if d < n_features:
        if sp.issparse(X):
            return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
        out = np.zeros((X.shape[0], n_features), dtype=X.dtype if X.dtype.kind == "f" else np.float64)
        out[:, :d] = X
        return out
    if extra == "ignore":
        return X[:, :n_features]
    raise ValueError("X has %d features, the model %d (imported models drop the extra ones; trim X or give "
                     "--extra-features ignore on the command line)" % (d, n_features))


def check_samples(X, n_features, *, extra="error"):
    """:func:`fit_width`, and a ValueError for NaN or infinite values (which
    the svmlight reader refuses too)."""
    X = fit_width(X, n_features, extra=extra)
    values = X.data if sp.issparse(X) else X
    if values.dtype.kind not in "fiub":
        raise ValueError("X must hold numbers, got dtype %s" % values.dtype)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise ValueError("X contains NaN or infinite values")
    return X
