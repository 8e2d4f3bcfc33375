"""Passing numpy buffers to the C library (``hsvm_cli._native``, built by cffi
from ``native/``)."""
import numpy as np

from .._native import ffi, lib

__all__ = ["ffi", "lib", "ptr", "float_vector_ptr"]


def ptr(ctype, arr):
    """A C pointer of type ``ctype`` (e.g. "float *") to ``arr``'s buffer, without
    a copy; the array must stay alive and contiguous for the call."""
    return ffi.cast(ctype, ffi.from_buffer(arr))


def float_vector_ptr(name, arr, length):
    """(float32 contiguous copy or view, ``float *``) of an optional vector of
    ``length`` values; (None, NULL) for None.  Keep the array alive for the
    call."""
    if arr is None:
        return None, ffi.NULL
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if arr.shape != (length,):
        raise ValueError("%s has shape %s, expected (%d,)" % (name, arr.shape, length))
    return arr, ptr("float *", arr)
