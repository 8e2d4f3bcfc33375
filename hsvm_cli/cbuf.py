"""Passing numpy buffers to the C library."""
from ._native import ffi


def ptr(ctype, arr):
    """A C pointer of type ``ctype`` (e.g. "float *") to ``arr``'s buffer, without
    a copy; the array must stay alive and contiguous for the call."""
    return ffi.cast(ctype, ffi.from_buffer(arr))
