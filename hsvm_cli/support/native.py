"""Passing numpy buffers to the C library (``hsvm_cli._native``, built by cffi
from ``native/``)."""
from .._native import ffi, lib

__all__ = ["ffi", "lib", "ptr"]


def ptr(ctype, arr):
    """A C pointer of type ``ctype`` (e.g. "float *") to ``arr``'s buffer, without
    a copy; the array must stay alive and contiguous for the call."""
    return ffi.cast(ctype, ffi.from_buffer(arr))
