"""Class labels as hsvm takes them: integers, or floats that are whole numbers."""
import numpy as np


def integer_labels(y, n):
    """``y`` as an int64 vector of ``n`` labels.  Integer and boolean arrays
    pass; float arrays must hold finite whole numbers.  Raises ValueError."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError("y must be 1-dimensional, got shape %s" % (arr.shape,))
    if arr.shape[0] != n:
        raise ValueError("X has %d rows but y has %d labels" % (n, arr.shape[0]))
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise ValueError("y must hold integer labels (whole numbers), got dtype %s" % arr.dtype)
