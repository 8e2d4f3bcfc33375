"""Samples handed to a predictor from Python: a 2-d array or sparse matrix,
made as wide as the model (missing trailing features are zeros, as in an
svmlight file; features beyond the model are refused, or dropped for an
imported model as svm-predict and liblinear-predict drop them), and, at the
public entry points, finite."""
import numpy as np

from ..errors import SampleError
from ..support.arrays import beyond_float32
from ..support.lazy_sparse import CsrArrays, sp

__all__ = ["as_samples", "finite_samples", "fit_width", "check_samples"]


def as_samples(X):
    """X as training and prediction read it: a CSR matrix in canonical form
    (sorted indices; an entry stored twice is the sum of its values, as
    scipy means it -- the norms and the native passes read each stored entry
    once) or a 2-d array (nested lists too).  Raises SampleError (a
    ValueError) for another
    number of dimensions or values that are not real numbers (complex,
    objects, strings)."""
    if sp.issparse(X):
        X = X.tocsr()
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise SampleError("X must be 2-dimensional (samples x features), got %d dimension%s%s"
                             % (X.ndim, "" if X.ndim == 1 else "s",
                                "; for one sample use X.reshape(1, -1)" if X.ndim == 1 else ""))
    if _values(X).dtype.kind not in "fiub":
        raise SampleError("X must hold real numbers, got dtype %s" % _values(X).dtype)
    return X


def _values(X):
    # the stored values: a sparse matrix's data, an array itself
    return X.data if sp.issparse(X) else X


def finite_samples(X):
    """:func:`as_samples`, and a :class:`~hsvm_cli.errors.SampleError` for
    NaN or infinite values and for values beyond float32's range, which
    prediction would turn into infinities (the svmlight reader refuses them
    all too)."""
    X = as_samples(X)
    values = _values(X)
    if values.dtype.kind == "f" and values.size:
        # two reductions and no temporary array (min and max propagate NaN
        # and reach any infinity): a float64 matrix of 800 MB took a copy
        lo, hi = float(values.min()), float(values.max())
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise SampleError("X contains NaN or infinite values")
        if beyond_float32(max(-lo, hi)):
            raise SampleError("X holds values beyond float32's range (about 3.4e38), hsvm's storage type")
    return X


def fit_width(X, n_features, *, extra="error", reader=None):
    """X (:func:`as_samples`) with exactly ``n_features`` columns.  ``extra``:
    "error" (a SampleError naming both widths) or "ignore" (drop the columns
    beyond the model's) for wider X; ``reader``: what takes the samples, as
    the refusal names it (default: the model)."""
    X = as_samples(X)
    d = X.shape[1]
    if d == n_features:
        return X
    if d < n_features:
        if isinstance(X, CsrArrays):
            return X.with_width(n_features)
        if sp.issparse(X):
            return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
        out = np.zeros((X.shape[0], n_features), dtype=X.dtype if X.dtype.kind == "f" else np.float64)
        out[:, :d] = X
        return out
    if extra == "ignore":
        return X[:, :n_features]
    if reader is not None:
        raise SampleError("X has %d features, %s %d" % (d, reader, n_features))
    raise SampleError("X has %d features, the model %d (imported models drop the extra ones; trim X, or on the "
                      "command line give --extra-features ignore)" % (d, n_features))


def check_samples(X, n_features, *, extra="error", reader=None):
    """:func:`fit_width` of :func:`finite_samples`."""
    return fit_width(finite_samples(X), n_features, extra=extra, reader=reader)
