"""Class labels as hsvm takes them, and where they sit among a model's classes."""
import numpy as np

from ..errors import DataError


def integer_labels(y, n):
    """``y`` as an int64 vector of ``n`` labels.  Integer and boolean arrays
    pass; float arrays must hold finite whole numbers.  Raises DataError (a
    ValueError)."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise DataError("y must be 1-dimensional, got shape %s" % (arr.shape,))
    if arr.shape[0] != n:
        raise DataError("X has %d rows but y has %d labels" % (n, arr.shape[0]))
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise DataError("y holds label %d, beyond the int64 range of labels" % arr.max())
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        if arr.size and (arr.min() < -2.0**63 or arr.max() >= 2.0**63):
            raise DataError("y holds labels beyond the int64 range")
        return arr.astype(np.int64)
    raise DataError("y must hold integer labels (whole numbers), got dtype %s" % arr.dtype)


def class_index(classes, labels):
    """Position of each label in ``classes`` (any order); -1 for a label that
    is no class."""
    classes = np.asarray(classes, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if classes.shape[0] == 0:
        return np.full(labels.shape, -1, dtype=np.int64)
    order = np.argsort(classes, kind="stable")
    sorted_classes = classes[order]
    pos = np.searchsorted(sorted_classes, labels)
    pos_c = np.minimum(pos, len(classes) - 1)
    found = (pos < len(classes)) & (sorted_classes[pos_c] == labels)
    return np.where(found, order[pos_c], -1).astype(np.int64)


def strictly_increasing(classes):
    """True when ``classes`` are sorted and unique.  Compares neighbours rather
    than taking np.diff, whose int64 difference wraps for labels more than
    2^63 apart (-5e18 and 5e18)."""
    classes = np.asarray(classes)
    return bool(np.all(classes[1:] > classes[:-1]))
