"""The accuracy-speed grid ``hsvm calibrate --grid-json`` writes, read back for
``hsvm eval --grid``."""
import json

import numpy as np

from ..errors import EX_DATAERR, HsvmError, InputFormatError
from .files import display_name, open_input


class GridFormatError(HsvmError):
    """A grid file that is JSON but not a list of grid rows."""

    exit_code = EX_DATAERR


_GRID_FIELDS = (  # name, required, allows null, integer
    ("bits", True, True, True),
    ("k", False, True, True),
    ("epsilon", False, True, False),
    ("accuracy", True, False, False),
    ("seconds_per_sample", True, False, False),
)


_MAX_GRID_BYTES = 64 << 20


def read_grid(source, *, name=None):
    """Rows ``{"bits", "k", "epsilon", "accuracy", "seconds_per_sample"}`` (bits
    null: exact prediction) from a JSON list, or from the list under "rows" or
    "grid" of a JSON object.  Unknown keys are kept; missing k / epsilon are null."""
    name = name or display_name(source)
    fh = open_input(source) if not hasattr(source, "read") else source
    try:
        # a grid is a few kilobytes: an endless input (/dev/zero) is refused,
        # not read into all memory
        text = fh.read(_MAX_GRID_BYTES + 1)
    finally:
        if fh is not source:
            fh.close()
    if len(text) > _MAX_GRID_BYTES:
        raise GridFormatError("%s: more than %d MB: not a grid of calibrate" % (name, _MAX_GRID_BYTES >> 20))
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        # a calibration (or another hsvm file) given for its grid
        from .container import declared_format
        hint = ": an hsvm file, not a grid (calibrate writes its grid with --grid-json)" \
            if declared_format(text) is not None else ""
        raise GridFormatError("%s: not UTF-8 text%s" % (name, hint)) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(name, exc.lineno, "not JSON: %s" % exc.msg) from None
    if isinstance(data, dict):
        data = data.get("rows", data.get("grid"))
    if not isinstance(data, list):
        raise GridFormatError("%s: expected a JSON list of grid rows, or an object with one under \"grid\" (as "
                              "calibrate --grid-json writes) or \"rows\"" % name)
    rows = []
    for i, row in enumerate(data, 1):
        if not isinstance(row, dict):
            raise GridFormatError("%s: row %d is not an object" % (name, i))
        out = dict(row)
        for key, required, nullable, integer in _GRID_FIELDS:
            if key not in row:
                if required:
                    raise GridFormatError("%s: row %d has no %r" % (name, i, key))
                out[key] = None
                continue
            v = row[key]
            if v is None and nullable:
                continue
            # bool is an int to Python but never a meaningful bit count or k
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            if not numeric or (integer and not isinstance(v, int)) or not np.isfinite(v):
                raise GridFormatError("%s: row %d: %r is %s, expected %s%s" % (
                    name, i, key, json.dumps(v), "an integer" if integer else "a number",
                    " or null" if nullable else ""))
        if not 0.0 <= out["accuracy"] <= 1.0:
            raise GridFormatError("%s: row %d: accuracy %r is not a fraction in [0, 1]" % (name, i, out["accuracy"]))
        if out["seconds_per_sample"] < 0:
            raise GridFormatError("%s: row %d: seconds_per_sample is negative" % (name, i))
        rows.append(out)
    return rows
