"""Prediction files: writing them in svm-predict's layout (labels, or a
``labels c1 ... cK`` header and a score or probability per class) and reading
them back, with the checks ``hsvm eval`` relies on."""
import re
from typing import NamedTuple, Optional

import numpy as np

from ..errors import InputFormatError, printable
from ..support.timing import NullTimings
from .files import atomic_output, bounded_lines, display_name, open_input

_UNKNOWN_SHOWN = 5


class PredictionWriter:
    """One predicted label per line; with ``scores`` a ``labels c1 c2 ...`` header
    and each class's vote count after the label; with ``proba`` the same layout
    with one probability per class (LIBSVM's ``svm-predict -b 1`` output)."""

    def __init__(self, classes, *, scores=False, proba=False, column_order=None):
        if scores and proba:
            raise ValueError("choose scores or probabilities, not both")
        self.classes = np.asarray(classes)
        self.scores = scores
        self.proba = proba
        # the columns' order as indices into classes (None: ascending, as classes)
        self.column_order = None if column_order is None else np.asarray(column_order, dtype=np.intp)
        self.total = 0
        self.correct = 0
        self.labelled_rows = 0
        self.unknown_labels = set()     # the smallest labels of rows that are no class of the model

    @property
    def labelled(self):
        # Inputs to be classified often carry a placeholder label (0, -1) that is
        # no class of the model: then there is no accuracy to report.
        return self.labelled_rows > 0

    def _columns(self, values):
        return values if self.column_order is None else values[:, self.column_order]

    def _format(self, block):
        if self.proba:
            return "".join("%d %s\n" % (lab, " ".join("%.6g" % v for v in row))
                           for lab, row in zip(block.labels.tolist(), self._columns(block.proba).tolist()))
        if not self.scores:
            return "".join("%d\n" % v for v in block.labels.tolist())
        rows = []
        # Vote counts as integers; scores (one-vs-rest models) as svm-predict prints numbers.
        fmt = (lambda v: " ".join("%.6g" % x for x in v)) if block.votes.dtype.kind == "f" else \
            (lambda v: " ".join(map(str, v)))
        for lab, v in zip(block.labels.tolist(), self._columns(block.votes).tolist()):
            rows.append("%d %s\n" % (lab, fmt(v)))
        return "".join(rows)

    def update_accuracy(self, block):
        y = np.asarray(block.y_true)
        known = np.isin(y, self.classes)
        self.total += int(y.shape[0])
        self.labelled_rows += int(known.sum())
        self.correct += int((block.labels == y).sum())
        if not known.all():
            # the smallest labels so far, one more than the note shows (it
            # then knows to say "..."): the same whatever the chunks or tasks
            seen = self.unknown_labels.union(np.unique(y[~known])[:_UNKNOWN_SHOWN + 1].tolist())
            self.unknown_labels = set(sorted(seen)[:_UNKNOWN_SHOWN + 1])

    def write_all(self, blocks, output, *, timings=None, header=True):
        """Write the predictions of ``blocks`` to ``output``: a path (``-``:
        stdout), written atomically, or an open text file object.
        ``header``: write the ``labels ...`` line of scores or probabilities;
        False for the outputs of shards after the first, so that the shards'
        outputs concatenated are the unsharded output."""
        if hasattr(output, "write"):
            self._write_all(blocks, output, timings, header)
            return
        with atomic_output(output, "w") as fh:
            self._write_all(blocks, fh, timings, header)

    def _write_all(self, blocks, fh, timings, header):
        t = timings or NullTimings()
        if header and (self.scores or self.proba):
            labels = self.classes if self.column_order is None else self.classes[self.column_order]
            fh.write("labels %s\n" % " ".join(str(int(c)) for c in labels))
        for block in blocks:
            self.update_accuracy(block)
            with t.phase("write"):
                fh.write(self._format(block))

    @property
    def accuracy(self):
        return self.correct / self.total if self.total else 0.0

    def unknown_labels_note(self, command):
        """The line saying how many labelled rows' labels are no class of the
        model (they count as errors in the accuracy), or None: rows of a
        placeholder label alone (unlabelled input) give no accuracy and no
        note."""
        unknown = self.total - self.labelled_rows
        if not (self.labelled and unknown):
            return None
        shown = ", ".join(str(v) for v in sorted(self.unknown_labels)[:_UNKNOWN_SHOWN])
        if len(self.unknown_labels) > _UNKNOWN_SHOWN:
            shown += ", ..."
        return ("hsvm: %s: %d of %d samples have labels the model lacks%s: the accuracy counts them as errors"
                % (command, unknown, self.total, " (%s)" % shown if shown else ""))

    def accuracy_line(self, tool=None):
        """svm-predict's line to the digit (printf("%g", (double)correct/total*100));
        liblinear-predict's, which does not say "(classification)", for
        ``tool="liblinear"`` (a model imported from LIBLINEAR)."""
        pct = self.correct / self.total * 100 if self.total else 0.0
        line = "Accuracy = %g%% (%d/%d)" % (pct, self.correct, self.total)
        return line if tool == "liblinear" else line + " (classification)"


def read_predictions(source, *, name=None):
    """Predicted labels, one per line: the first token of each line (as written by
    ``hsvm predict``; a ``labels ...`` header line, as in ``--scores`` / ``--proba``
    output, is skipped)."""
    blocks = list(iter_prediction_labels(source, name=name))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)


def iter_prediction_labels(source, *, name=None):
    """:func:`read_predictions`'s labels in blocks (int64 arrays of up to
    4,096), read as they are asked for."""
    name = name or display_name(source)
    out = []
    first = True
    fh = open_input(source) if not hasattr(source, "read") else source
    try:
        for lineno, line in _content_lines(fh, name, None if fh is source else source):
            tok = line.split(None, 1)[0]
            if first and tok == b"labels":
                first = False
                continue
            first = False
            out.append(_parse_int_label(tok, name, lineno))
            if len(out) == _CHUNK:
                yield np.asarray(out, dtype=np.int64)
                out = []
        if out:
            yield np.asarray(out, dtype=np.int64)
    finally:
        if fh is not source:
            fh.close()


def _content_lines(fh, name, path=None):
    """(line number, content) of each line of a predictions file that holds
    something besides a comment.  An empty line followed by more predictions
    is refused: a prediction is a line, matched to the samples by position,
    so a gap would shift every later one (a line left empty for a missing
    prediction, and an extra one appended, paired them all wrongly with no
    error).  Empty lines at the end and comment lines are fine."""
    blank = None
    for lineno, raw in enumerate(bounded_lines(fh, name, path=path), 1):
        if lineno == 1:
            _refuse_hsvm_file(raw, name)
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]       # a UTF-8 byte order mark, as Windows editors save text
        if b"\r" in raw.rstrip(b"\r\n"):
            # a file of CR-only line ends reads as one line of every prediction
            raise InputFormatError(name, lineno, "a carriage return inside the line: the file's lines end in CR "
                                   "alone (convert them: tr '\\r' '\\n')")
        line = raw.split(b"#", 1)[0].strip()
        if not line:
            blank = blank or (lineno if not raw.strip() else None)
            continue
        if blank is not None:
            raise InputFormatError(name, blank, "empty line among the predictions (one prediction per line, "
                                   "matched to the samples by position)")
        yield lineno, line


def _refuse_hsvm_file(first, name):
    """An hsvm binary file (a model, a calibration) given as predictions is
    named as what it is, not as a malformed first line.  ``first`` is the
    file's first line: its header, unless the 8-byte length before it holds
    a newline byte, when only the opening brace is left to tell it by."""
    from .container import declared_format, kind_name
    kind = declared_format(first)
    if kind is not None:
        raise InputFormatError(name, 1, "an hsvm %s file, not predictions" % kind_name(kind))
    if first[8:10] == b'{"' and b"\0" in first[:8]:
        raise InputFormatError(name, 1, "an hsvm binary file, not predictions")


# --- predictions with a score matrix (``--scores`` votes, ``--proba`` probabilities) ---

class ScoredPredictions(NamedTuple):
    """What a predictions file holds.  ``classes`` and ``scores`` are None for a
    plain label file; otherwise ``scores[i, j]`` belongs to ``classes[j]`` (the
    header's order) and ``lines[i]`` is the file line of row ``i``;
    ``scores_dropped``: the lines had scores without their header, and only
    their labels were read."""
    name: str
    labels: np.ndarray
    classes: Optional[np.ndarray] = None
    scores: Optional[np.ndarray] = None
    lines: Optional[np.ndarray] = None
    scores_dropped: bool = False

    @property
    def has_scores(self):
        return self.scores is not None


_CHUNK = 4096
# Scored rows go in blocks of at most this many values: a row's tokens are held
# as Python bytes (~50 bytes a value) until its block converts, so 4,096 rows
# of 3,000 classes had taken 1.8 GB.
_BLOCK_VALUES = 1 << 18


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _shown(tok, limit=40):
    """A token as a one-line message quotes it, in quotes: cut after
    ``limit`` characters (a 200 MB token once made an 800 MB error line),
    bytes that are not UTF-8 and characters that do not print escaped as the
    svmlight reader's messages show them (``'\\xff'``, where a replacement
    character hid the byte)."""
    text = tok[:4 * limit].decode("utf-8", "surrogateescape")
    cut = text if len(text) <= limit and len(tok) <= 4 * limit else text[:limit] + "..."
    return "'%s'" % printable(cut)


def _second_header(name, lineno):
    # shard outputs joined with shard 0's (the one with the header) twice or not first
    return InputFormatError(name, lineno, "a second 'labels' header: only the first line holds one (shard "
                            "outputs joined out of order, or one twice?)")


def _parse_int_label(tok, name, lineno, what="label"):
    """An int64 label, exactly as the svmlight reader takes it: an integer or
    a decimal with a whole value (``3.0``, ``1e3``), never rounded through a
    double, so that labels near 2^63 stay apart."""
    if tok.isdigit() and len(tok) < 19:
        return int(tok)
    shown = _shown(tok)
    if tok == b"labels" and what == "label":
        raise _second_header(name, lineno)
    if not _DECIMAL.fullmatch(tok):
        raise InputFormatError(name, lineno, "%s %s is not a number" % (what, shown))
    import decimal  # only here: its import costs every prediction 2 ms
    value = decimal.Decimal(tok.decode("ascii"))
    if not (_INT64_MIN <= value <= _INT64_MAX):
        raise InputFormatError(name, lineno, "%s %s is out of the int64 range" % (what, shown))
    if value != value.to_integral_value():
        raise InputFormatError(name, lineno, "%s %s is not an integer" % (what, shown))
    return int(value)


def _parse_int_labels(tokens, linenos, name):
    """int64 labels of a chunk of rows: numpy's integer conversion, and the
    exact parser (which names the line of a bad one) where that fails.  Its
    caller has refused digit separators, which numpy takes ('1_0' as 10)."""
    try:
        return np.array(tokens).astype(np.int64)
    except (ValueError, OverflowError):
        return np.array([_parse_int_label(t, name, n) for t, n in zip(tokens, linenos)], dtype=np.int64)


def _parse_header(tokens, name, lineno):
    if len(tokens) < 2:
        raise InputFormatError(name, lineno, "header 'labels' names no classes")
    classes = [_parse_int_label(t, name, lineno, "class") for t in tokens[1:]]
    seen = set()
    for c in classes:
        if c in seen:
            raise InputFormatError(name, lineno, "class %d appears twice in the header" % c)
        seen.add(c)
    return np.asarray(classes, dtype=np.int64)


def _convert_rows(flat, linenos, width, name):
    """One chunk of rows (already checked to have ``width`` tokens each) to floats;
    on failure find the first offending line, since numpy does not say which."""
    try:
        if b"_" in b"".join(flat):
            raise ValueError("digit separators")     # float() takes '0_0.6' as 0.6; no other reader does
        block = np.array(flat, dtype=np.float64).reshape(len(linenos), width)
    except ValueError:
        for r, lineno in enumerate(linenos):
            for tok in flat[r * width:(r + 1) * width]:
                try:
                    if b"_" in tok:
                        raise ValueError(tok)
                    float(tok)
                except ValueError:
                    if tok == b"labels" and tok is flat[r * width]:
                        raise _second_header(name, lineno) from None
                    raise InputFormatError(name, lineno,
                                           "%s is not a number" % _shown(tok)) from None
        raise
    bad = ~np.isfinite(block[:, 1:]).all(axis=1)
    if bad.any():
        r = int(np.argmax(bad))
        col = 1 + int(np.argmax(~np.isfinite(block[r, 1:])))
        raise InputFormatError(name, linenos[r], "score %s is not finite"
                               % _shown(flat[r * width + col]))
    # labels from their text, not from the doubles (which round above 2^53)
    labels = flat[::width]
    return _parse_int_labels(labels, linenos, name), block[:, 1:], labels


class ScoredBlocks:
    """The rows of a predictions file, read as :func:`read_scored_predictions`
    reads them but handed out in blocks of up to 4,096 rows, so that a
    caller reducing each row (``hsvm eval``) holds no n x K matrix.

    Iterating yields (labels int64 [m], scores float64 [m, K] or None, file
    lines int64 [m] or None).  ``classes`` is the header's (None for labels
    alone) once the first block is out; ``scores_dropped`` is set when the
    lines had scores without their header (``headerless_scores``: a later
    shard's part), whose blocks then carry labels only.  A malformed line
    raises :class:`InputFormatError` when its block is reached."""

    def __init__(self, source, *, name=None, headerless_scores=False):
        self.source = source
        self.name = name or display_name(source)
        self.headerless_scores = headerless_scores
        self.classes = None
        self.scores_dropped = False
        #: the file line of the last line read that is not blank or a comment
        #: (0 before any): where a file short of predictions ends
        self.last_line = 0

    def __iter__(self):
        source, name = self.source, self.name
        fh = open_input(source) if not hasattr(source, "read") else source
        labels = []
        width = None
        flat, linenos = [], []
        first = True
        lineno = 0
        try:
            for lineno, line in _content_lines(fh, name, None if fh is source else source):
                tokens = line.split()
                if first:
                    first = False
                    if tokens[0] == b"labels":
                        self.classes = _parse_header(tokens, name, lineno)
                        width = len(self.classes) + 1
                        continue
                if self.classes is None and self.headerless_scores and width is None and len(tokens) > 1:
                    width = len(tokens)     # a later shard's scored lines: read as such, scores then dropped
                    self.scores_dropped = True
                if self.classes is None and width is None:
                    if len(tokens) > 1:
                        # scores without their header would be read as labels alone
                        if all(b":" in t for t in tokens[1:]):
                            # index:value pairs: svmlight data, most likely TRUTH given second
                            raise InputFormatError(name, lineno, "svmlight data (a label, then index:value pairs), "
                                                   "not predictions: the order is TRUTH PREDICTIONS (or --truth "
                                                   "TRUTH PREDICTIONS); were they swapped?")
                        raise InputFormatError(name, lineno, "%d fields: without a 'labels c1 c2 ...' header line "
                                               "a predictions file holds one label per line" % len(tokens))
                    labels.append(_parse_int_label(tokens[0], name, lineno))
                    if len(labels) == _CHUNK:
                        yield np.asarray(labels, dtype=np.int64), None, None
                        labels = []
                    continue
                if self.classes is None and len(tokens) != width:
                    raise InputFormatError(name, lineno, "%d fields where the first line had %d: the label and a "
                                           "score for each class" % (len(tokens), width))
                if len(tokens) != width:
                    raise InputFormatError(name, lineno, "%d numbers, expected %d: the label and a score for each "
                                           "of the %d classes of the header" % (len(tokens), width, width - 1))
                flat.extend(tokens)
                linenos.append(lineno)
                if len(linenos) >= min(_CHUNK, max(1, _BLOCK_VALUES // width)):
                    yield self._block(flat, linenos, width)
                    flat, linenos = [], []
            if labels:
                yield np.asarray(labels, dtype=np.int64), None, None
            if width is not None and linenos:
                yield self._block(flat, linenos, width)
        finally:
            self.last_line = lineno
            if fh is not source:
                fh.close()

    def _block(self, flat, linenos, width):
        lab, sc, tokens = _convert_rows(flat, linenos, width, self.name)
        if self.classes is None:
            return lab, None, None
        # a row's label is one of the header's (as predict and svm-predict -b 1
        # write them): a hand-made file with another was scored 0% accurate
        # and 50% top-1
        outside = ~np.isin(lab, np.asarray(self.classes))
        # a label in %g's exponent form may stand for any of several classes (1.23457e+06: 1234567 and 1234570)
        labels_text = b"".join(tokens)
        rounded = [i for i, t in enumerate(tokens) if b"e" in t or b"E" in t] \
            if b"e" in labels_text or b"E" in labels_text else []
        for i in sorted(set(np.flatnonzero(outside).tolist()) | set(rounded)):
            lab[i] = self._printed_class(tokens[i], sc[i], int(linenos[i]), outside[i])
        return lab, sc, np.asarray(linenos, dtype=np.int64)

    def _printed_class(self, tok, scores, lineno, outside):
        """The header's class a row's label stands for when the two were
        printed differently: svm-predict and liblinear-predict ``-b 1`` write
        the header's labels in full and a row's with %g, six significant
        digits (class 1234567 heads its column, its rows say 1.23457e+06).
        Of the classes %g prints as the token, the row's most probable one
        (the label those tools print); none: the row is refused."""
        columns = [j for j, c in enumerate(self.classes) if (b"%g" % c) == tok]
        if not columns:
            if not outside:
                return _parse_int_label(tok, self.name, lineno)
            raise InputFormatError(self.name, lineno, "label %s is not one of the header's labels" % _shown(tok))
        return int(self.classes[max(columns, key=lambda j: (scores[j], -j))])


def read_scored_predictions(source, *, name=None, headerless_scores=False):
    """Labels and, when the file starts with a ``labels c1 ... cK`` header (as
    ``hsvm predict --scores`` or ``--proba`` write it), the n x K score matrix.
    After a header every line must hold the label and exactly K finite numbers,
    without one the label alone; anything else is an :class:`InputFormatError`
    naming the line.  ``headerless_scores``: lines of a label and scores
    without the header (a later shard's part of ``predict --shard``'s
    output: the header is in shard 0's) give their labels, every line with
    the first line's number of fields; the result then has no scores and
    ``scores_dropped`` set.  (:class:`ScoredBlocks` reads the same in blocks.)"""
    reader = ScoredBlocks(source, name=name, headerless_scores=headerless_scores)
    blocks = list(reader)
    labels = np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0, np.int64)
    if reader.classes is None:
        return ScoredPredictions(reader.name, labels, scores_dropped=reader.scores_dropped)
    K = len(reader.classes)
    return ScoredPredictions(
        reader.name, labels, reader.classes,
        np.concatenate([b[1] for b in blocks]) if blocks else np.zeros((0, K)),
        np.concatenate([b[2] for b in blocks]) if blocks else np.zeros(0, np.int64),
    )


PROBA_TOLERANCE = 1e-6


def proba_tolerance(K):
    """How far a row's sum may be from 1: 1e-6, plus half a unit of the sixth
    digit per class, because printed probabilities are rounded one by one
    (svm-predict -b 1 prints %g) and with hundreds of classes those roundings
    alone add up to more than 1e-6."""
    return PROBA_TOLERANCE + 5e-7 * K


def not_distributions(scores):
    """bool [n]: the rows of ``scores`` that are not probability distributions
    (a negative value, or a sum beyond :func:`proba_tolerance` of 1)."""
    tol = proba_tolerance(scores.shape[1])
    return (scores < 0).any(axis=1) | (np.abs(scores.sum(axis=1) - 1.0) > tol)


def _probability_violation(scores):
    """Index of the first row that is not a probability distribution, or -1."""
    if scores.shape[0] == 0:
        return -1
    bad = not_distributions(scores)
    return int(np.argmax(bad)) if bad.any() else -1


def probability_violation(scores, lines):
    """(file line, reason) of the first row of a block of scores that is not
    a probability distribution, or None."""
    r = _probability_violation(scores)
    if r < 0:
        return None
    row = scores[r]
    reason = ("negative probability %g" % row[row < 0][0] if (row < 0).any()
              else "probabilities sum to %.9g, not 1 (within %.3g)" % (row.sum(), proba_tolerance(len(row))))
    return int(lines[r]), reason
