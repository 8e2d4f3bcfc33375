"""Pure-Python reference of the svmlight reader in ``hsvm_cli.io.svmlight``.

Written for obviousness, not speed, from the format rules in that module's
docstring alone (not from the C parser): lines split at ``\\n``; ``#`` starts
a comment; tokens are separated by space, tab, CR, VT and FF; the first token
is the label, an int64 written as a decimal integer or as a decimal float
holding a whole number below 2**53 in magnitude; an optional ``qid:[+-]digits`` right after it; then
``digits:value`` pairs with strictly increasing indices (1-based unless
``zero_based``), the largest column below ``MAX_FEATURES`` (with a model's width and
extra features ignored too: dropped columns are still below it); values are
decimals, finite in float32 after rounding.  Used by the property tests and
the fuzz harness, which compare the real reader against it.
"""
import re
from dataclasses import dataclass

import numpy as np

from hsvm_cli.io.svmlight import MAX_FEATURES

DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER = re.compile(rb"[+-]?[0-9]+")
QID = re.compile(rb"qid:[+-]?[0-9]+")
INDEX = re.compile(rb"[0-9]+")
# 2**128 - 2**104: the smallest magnitude that rounds to infinity in float32
F32_OVERFLOW = float.fromhex("0x1.ffffffp+127")
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


class RefError(Exception):
    """A malformed line: ``line`` is its 1-based number."""

    def __init__(self, line, what):
        super().__init__("line %d: %s" % (line, what))
        self.line = line


@dataclass
class RefResult:
    labels: list   # int per row
    rows: list     # per row: list of (column, value)
    width: int


def parse_label(tok):
    if INTEGER.fullmatch(tok):
        v = int(tok)
        return v if INT64_MIN <= v <= INT64_MAX else None
    if DECIMAL.fullmatch(tok):
        # exact, from the digits and the exponent as text and Python ints (no
        # float or Decimal: 1e-99999999999999999999 overflows both)
        m = re.fullmatch(rb"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?", tok)
        digits = ((m.group(2) or b"") + (m.group(3) or b"")).decode().lstrip("0")
        exp = int(m.group(4) or 0) - len(m.group(3) or b"")
        if not digits:
            return 0
        if exp < 0:
            if -exp >= len(digits) or digits[exp:].strip("0"):
                return None                     # a fraction (a non-zero digit below the units)
            digits, exp = digits[:exp], 0
        if len(digits) + exp > 20:
            return None                         # far beyond 2**53
        v = int(digits) * 10 ** exp
        if v < 2**53:
            return -v if m.group(1) == b"-" else v
    return None


def parse_value(text):
    if not DECIMAL.fullmatch(text):
        return None
    v = float(text)  # correctly rounded, inf beyond the double range
    return v if abs(v) < F32_OVERFLOW else None


def read(data, *, zero_based=False, n_features=None, extra_features="error"):
    """Parse the bytes ``data``; returns a RefResult or raises RefError for
    the first malformed line."""
    base = 0 if zero_based else 1
    limit = MAX_FEATURES if n_features is None else n_features
    drop = n_features is not None and extra_features == "ignore"
    labels, rows = [], []
    max_col = -1
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the text after a final newline is no line
    for number, line in enumerate(lines, start=1):
        tokens = line.split(b"#", 1)[0].split()
        if not tokens:
            continue
        label = parse_label(tokens[0])
        if label is None:
            raise RefError(number, "label %r" % tokens[0])
        features = tokens[1:]
        if features and features[0].startswith(b"qid:"):
            if not QID.fullmatch(features[0]):
                raise RefError(number, "qid %r" % features[0])
            features = features[1:]
        row, prev = [], -1
        for tok in features:
            index, colon, value = tok.partition(b":")
            if not colon or not INDEX.fullmatch(index):
                raise RefError(number, "feature %r" % tok)
            col = int(index) - base
            if col < 0 or col <= prev:
                raise RefError(number, "index %r" % tok)
            if col >= limit and not (drop and col < MAX_FEATURES):
                raise RefError(number, "index %r beyond %d" % (tok, limit))
            v = parse_value(value)
            if v is None:
                raise RefError(number, "value %r" % tok)
            prev = col
            if col < limit:
                row.append((col, v))
        if row:
            max_col = max(max_col, row[-1][0])
        labels.append(label)
        rows.append(row)
    width = n_features if n_features is not None else max_col + 1
    if not rows and n_features is None:
        width = 0
    return RefResult(labels, rows, width)


def count_lines(data):
    """Lines of ``data`` as the reader numbers them."""
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def same_matrix(ref, X, y):
    """True when the CSR matrix X and labels y hold exactly what ``ref``
    holds: shape, labels, columns, and the bits of every value (-0.0 too;
    of float32 X, the bits of the values rounded to float32)."""
    if X.shape != (len(ref.rows), ref.width) or list(map(int, y)) != ref.labels:
        return False
    indptr = np.asarray(X.indptr)
    # float32 values: the reference's doubles rounded once, as the reader stores them
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    for r, row in enumerate(ref.rows):
        cols = X.indices[indptr[r]:indptr[r + 1]].tolist()
        vals = np.asarray(X.data[indptr[r]:indptr[r + 1]], dtype=dtype)
        want = np.array([v for _, v in row], dtype=np.float64).astype(dtype)
        if cols != [c for c, _ in row] or vals.tobytes() != want.tobytes():
            return False
    return True
