"""Typed reading of a container's metadata: every value is checked for its type
and range before any code uses it, so a forged or damaged header gives one
clear error naming the file and the key, never a traceback or a huge
allocation."""
import math

from ..errors import ModelFormatError

_MISSING = object()


def _get(c, key, default):
    value = c.meta.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ModelFormatError(c.path, "metadata lacks %r" % key)
        return default
    return value


def meta_int(c, key, lo, hi, default=_MISSING):
    """An integer in [lo, hi]."""
    value = _get(c, key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ModelFormatError(c.path, "metadata %r must be an integer in [%d, %d], not %r" % (key, lo, hi, value))
    return value


def meta_number(c, key, lo=-math.inf, hi=math.inf, *, open_interval=False, default=_MISSING):
    """A finite number (a JSON integer or float, not a boolean) in [lo, hi],
    or in (lo, hi) with ``open_interval``."""
    value = _get(c, key, default)
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and \
        (lo < value < hi if open_interval else lo <= value <= hi)
    if not ok:
        raise ModelFormatError(c.path, "metadata %r must be a finite number in %s%g, %g%s, not %r"
                               % (key, "(" if open_interval else "[", lo, hi, ")" if open_interval else "]", value))
    return value


def meta_str(c, key, choices=None, default=_MISSING):
    """A string (one of ``choices`` when given)."""
    value = _get(c, key, default)
    if not isinstance(value, str) or (choices is not None and value not in choices):
        raise ModelFormatError(c.path, "metadata %r must be %s, not %r"
                               % (key, "one of " + ", ".join(choices) if choices else "a string", value))
    return value


def meta_bool(c, key, default=False):
    """A JSON true or false."""
    value = _get(c, key, default)
    if not isinstance(value, bool):
        raise ModelFormatError(c.path, "metadata %r must be true or false, not %r" % (key, value))
    return value


def meta_dict(c, key, default=None):
    """A JSON object (an empty one when absent)."""
    value = _get(c, key, {} if default is None else default)
    if not isinstance(value, dict):
        raise ModelFormatError(c.path, "metadata %r must be an object, not %s" % (key, type(value).__name__))
    return value


def meta_digest(c, key):
    """A SHA-256 hex digest."""
    value = _get(c, key, _MISSING)
    if not isinstance(value, str) or len(value) != 64 or any(ch not in "0123456789abcdef" for ch in value):
        raise ModelFormatError(c.path, "metadata %r must be a SHA-256 hex digest" % key)
    return value


def check_arrays(c, specs):
    """Raise ModelFormatError unless container ``c`` holds every array of
    ``specs`` -- (name, numpy dtype, number of dimensions) -- as described."""
    import numpy as np
    for key, dt, ndim in specs:
        if key not in c.arrays:
            raise ModelFormatError(c.path, "missing array %r" % key)
        if c.arrays[key].dtype != dt or c.arrays[key].ndim != ndim:
            raise ModelFormatError(c.path, "array %r must be a %d-dimensional %s array" % (key, ndim, np.dtype(dt)))
