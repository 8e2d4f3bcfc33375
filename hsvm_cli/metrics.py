"""Classification metrics for ``hsvm eval``."""
import json
from typing import NamedTuple, Optional

import numpy as np

from .errors import EX_DATAERR, HsvmError, InputFormatError
from .fileio import display_name, open_input


def read_predictions(source, *, name=None):
    """Predicted labels, one per line: the first token of each line (as written by
    ``hsvm predict``; a ``labels ...`` header line, as in ``--scores`` / ``--proba``
    output, is skipped)."""
    name = name or display_name(source)
    out = []
    first = True
    fh = open_input(source) if not hasattr(source, "read") else source
    try:
        for lineno, raw in enumerate(fh, 1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            tok = line.split(None, 1)[0]
            if first and tok == b"labels":
                first = False
                continue
            first = False
            out.append(_parse_int_label(tok, name, lineno))
    finally:
        if fh is not source:
            fh.close()
    return np.asarray(out, dtype=np.int64)


# --- predictions with a score matrix (``--scores`` votes, ``--proba`` probabilities) ---

class ScoredPredictions(NamedTuple):
    """What a predictions file holds.  ``classes`` and ``scores`` are None for a
    plain label file; otherwise ``scores[i, j]`` belongs to ``classes[j]`` (the
    header's order) and ``lines[i]`` is the file line of row ``i``."""
    name: str
    labels: np.ndarray
    classes: Optional[np.ndarray] = None
    scores: Optional[np.ndarray] = None
    lines: Optional[np.ndarray] = None

    @property
    def has_scores(self):
        return self.scores is not None


_CHUNK = 4096


def _parse_int_label(tok, name, lineno, what="label"):
    try:
        val = float(tok)
    except ValueError:
        raise InputFormatError(name, lineno, "%s %r is not a number" % (what, tok.decode("utf-8", "replace"))) from None
    if not np.isfinite(val) or val != int(val):
        raise InputFormatError(name, lineno, "%s %r is not an integer" % (what, tok.decode("utf-8", "replace")))
    return int(val)


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
        block = np.array(flat, dtype=np.float64).reshape(len(linenos), width)
    except ValueError:
        for r, lineno in enumerate(linenos):
            for tok in flat[r * width:(r + 1) * width]:
                try:
                    float(tok)
                except ValueError:
                    raise InputFormatError(name, lineno,
                                           "%r is not a number" % tok.decode("utf-8", "replace")) from None
        raise
    bad = ~np.isfinite(block).all(axis=1)
    if bad.any():
        r = int(np.argmax(bad))
        col = int(np.argmax(~np.isfinite(block[r])))
        raise InputFormatError(name, linenos[r], "%s %r is not finite"
                               % ("label" if col == 0 else "score", flat[r * width + col].decode("utf-8", "replace")))
    lab = block[:, 0]
    bad = lab != np.round(lab)
    if bad.any():
        r = int(np.argmax(bad))
        raise InputFormatError(name, linenos[r],
                               "label %r is not an integer" % flat[r * width].decode("utf-8", "replace"))
    return lab.astype(np.int64), block[:, 1:]


def read_scored_predictions(source, *, name=None):
    """Labels and, when the file starts with a ``labels c1 ... cK`` header (as
    ``hsvm predict --scores`` or ``--proba`` write it), the n x K score matrix.
    After a header every line must hold the label and exactly K finite numbers;
    anything else is an :class:`InputFormatError` naming the line."""
    name = name or display_name(source)
    fh = open_input(source) if not hasattr(source, "read") else source
    labels, blocks, all_lines = [], [], []
    classes = None
    width = None
    flat, linenos = [], []
    first = True
    try:
        for lineno, raw in enumerate(fh, 1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            tokens = line.split()
            if first:
                first = False
                if tokens[0] == b"labels":
                    classes = _parse_header(tokens, name, lineno)
                    width = len(classes) + 1
                    continue
            if classes is None:
                labels.append(_parse_int_label(tokens[0], name, lineno))
                continue
            if len(tokens) != width:
                raise InputFormatError(name, lineno, "%d numbers, expected %d: the label and a score for each of "
                                       "the %d classes of the header" % (len(tokens), width, width - 1))
            flat.extend(tokens)
            linenos.append(lineno)
            if len(linenos) == _CHUNK:
                lab, sc = _convert_rows(flat, linenos, width, name)
                labels.append(lab)
                blocks.append(sc)
                all_lines.extend(linenos)
                flat, linenos = [], []
        if classes is not None and linenos:
            lab, sc = _convert_rows(flat, linenos, width, name)
            labels.append(lab)
            blocks.append(sc)
            all_lines.extend(linenos)
    finally:
        if fh is not source:
            fh.close()
    if classes is None:
        return ScoredPredictions(name, np.asarray(labels, dtype=np.int64))
    K = len(classes)
    return ScoredPredictions(
        name,
        np.concatenate(labels) if labels else np.zeros(0, np.int64),
        classes,
        np.concatenate(blocks) if blocks else np.zeros((0, K)),
        np.asarray(all_lines, dtype=np.int64),
    )


PROBA_TOLERANCE = 1e-6


def proba_tolerance(K):
    """How far a row's sum may be from 1: 1e-6, plus half a unit of the sixth
    digit per class, because printed probabilities are rounded one by one
    (svm-predict -b 1 prints %g) and with hundreds of classes those roundings
    alone add up to more than 1e-6."""
    return PROBA_TOLERANCE + 5e-7 * K


def _probability_violation(scores):
    """Index of the first row that is not a probability distribution, or -1."""
    if scores.shape[0] == 0:
        return -1
    tol = proba_tolerance(scores.shape[1])
    bad = (scores < 0).any(axis=1) | (np.abs(scores.sum(axis=1) - 1.0) > tol)
    return int(np.argmax(bad)) if bad.any() else -1


def looks_like_probabilities(pred):
    """Auto-detection: every row non-negative and summing to 1.  A file of whole
    numbers only is taken for vote counts: with two classes every vote row
    ("1 0" / "0 1") is also a one-hot distribution, and a real probability file
    practically never consists of 0s and 1s alone."""
    s = pred.scores
    if s is None or s.shape[0] == 0 or _probability_violation(s) >= 0:
        return False
    return not np.all(s == np.round(s))


def require_probabilities(pred):
    """For ``--proba``: fail on the first row that is not a distribution."""
    if pred.scores is None:
        raise InputFormatError(pred.name, 1, "no 'labels ...' header: --proba needs the output of "
                               "`hsvm predict --proba` (or LIBSVM's svm-predict -b 1)")
    r = _probability_violation(pred.scores)
    if r >= 0:
        row = pred.scores[r]
        reason = ("negative probability %g" % row[row < 0][0] if (row < 0).any()
                  else "probabilities sum to %.9g, not 1 (within %.3g)" % (row.sum(), proba_tolerance(len(row))))
        raise InputFormatError(pred.name, int(pred.lines[r]), reason)


def class_index(classes, labels):
    """Column of each label in ``classes``; -1 for a label that is no class."""
    classes = np.asarray(classes, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    order = np.argsort(classes, kind="stable")
    sorted_classes = classes[order]
    pos = np.searchsorted(sorted_classes, labels)
    pos_c = np.minimum(pos, len(classes) - 1)
    found = (pos < len(classes)) & (sorted_classes[pos_c] == labels)
    return np.where(found, order[pos_c], -1)


# --- filter recall ---

def class_ranks(scores, index):
    """0-based rank of class ``index[i]`` in row ``i`` when classes are ordered by
    decreasing score and equal scores by class (header) order; K for index -1.
    Counting the classes ahead of it needs no sort."""
    n, K = scores.shape
    ranks = np.full(n, K, dtype=np.int64)
    cols = np.arange(K)
    rows_per_block = max(1, (1 << 22) // max(K, 1))  # a few MB of temporaries per block
    for s in range(0, n, rows_per_block):
        S = scores[s:s + rows_per_block]
        idx = index[s:s + rows_per_block]
        known = idx >= 0
        own = S[np.arange(S.shape[0]), np.maximum(idx, 0)][:, None]
        ahead = (S > own) | ((S == own) & (cols[None, :] < idx[:, None]))
        ranks[s:s + rows_per_block] = np.where(known, ahead.sum(axis=1), K)
    return ranks


def recall_curve(ranks, K):
    """recall[k-1] = share of samples whose class has rank < k, for k = 1..K."""
    n = ranks.shape[0]
    if n == 0:
        return np.zeros(K)
    counts = np.bincount(ranks[ranks < K], minlength=K)[:K]
    return np.cumsum(counts) / n


def default_recall_ks(K):
    """1, 2, 3, 5, 10, 20, 50, 100, 200, 500, ... below K, then K itself."""
    ks = [1, 2, 3, 5]
    step = 10
    while step < K:
        ks.extend([step, 2 * step, 5 * step])
        step *= 10
    return sorted({k for k in ks if k < K} | {K})


def subsample(n, max_points=200):
    """At most ``max_points`` indices spread evenly over 0..n-1, ends included."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))


# --- report sections beyond the labels ---

ERROR_TARGETS = (0.005, 0.004, 0.003, 0.002, 0.001)
ECE_BINS = 15


def probability_report(pred, y_index):
    """NLL, ECE, the reject rates that reach :data:`ERROR_TARGETS` (None:
    only rejecting every sample gets there) and the error-reject curve
    (subsampled); also the full curve for plotting.  A true label that is no
    class of the header has index -1: probability 0, always an error."""
    # probability pulls in scipy.optimize (~0.4 s): only when there are probabilities
    from .probability import expected_calibration_error, nll, reject_at_error, reject_curve

    P = pred.scores
    reject, error = reject_curve(P, y_index)
    needed = np.asarray(reject_at_error(P, y_index, np.asarray(ERROR_TARGETS)), dtype=np.float64)
    keep = subsample(reject.shape[0])
    not_argmax = int((pred.labels != pred.classes[P.argmax(axis=1)]).sum())
    summary = {
        "nll": float(nll(P, y_index)),
        "ece": float(expected_calibration_error(P, y_index, bins=ECE_BINS)),
        "ece_bins": ECE_BINS,
        "reject_at_error": [{"error_rate": t, "reject_rate": float(r) if r < 1.0 else None}
                            for t, r in zip(ERROR_TARGETS, needed)],
        "reject_curve": {"points": int(reject.shape[0]),
                         "reject_rate": [float(v) for v in reject[keep]],
                         "error_rate": [float(v) for v in error[keep]]},
        # Chow's rule predicts the most probable class; when the file's label is
        # another one, the curve at reject 0 is not the accuracy above.
        "labels_not_most_probable": not_argmax,
    }
    return summary, (reject, error)


def recall_report(pred, y_index, ks, ref_index=None):
    """Share of samples whose true class (and the reference's label) is among
    the k highest scores, at ``ks`` and as a subsampled curve over k = 1..K;
    also the full curves for plotting."""
    K = len(pred.classes)
    curves = {"true_class": recall_curve(class_ranks(pred.scores, y_index), K)}
    if ref_index is not None:
        curves["reference"] = recall_curve(class_ranks(pred.scores, ref_index), K)
    keep = subsample(K)
    summary = {
        "at_k": [dict({"k": int(k)}, **{key: float(c[k - 1]) for key, c in curves.items()}) for k in ks],
        "curve": dict({"k": [int(v) + 1 for v in keep]},
                      **{key: [float(v) for v in c[keep]] for key, c in curves.items()}),
    }
    return summary, curves


def reference_report(name, y_pred, y_ref, y_true):
    n = int(y_pred.shape[0])
    same = int((y_pred == y_ref).sum())
    return {"file": name, "identical": same, "agreement": same / n if n else 0.0,
            "accuracy": float((y_ref == y_true).mean()) if n else 0.0}


# --- the grid `hsvm calibrate` writes ---

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


def read_grid(source, *, name=None):
    """Rows ``{"bits", "k", "epsilon", "accuracy", "seconds_per_sample"}`` (bits
    null: exact prediction) from a JSON list, or from the list under "rows" or
    "grid" of a JSON object.  Unknown keys are kept; missing k / epsilon are null."""
    name = name or display_name(source)
    fh = open_input(source) if not hasattr(source, "read") else source
    try:
        text = fh.read()
    finally:
        if fh is not source:
            fh.close()
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise GridFormatError("%s: not UTF-8 text" % name) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(name, exc.lineno, "not JSON: %s" % exc.msg) from None
    if isinstance(data, dict):
        data = data.get("rows", data.get("grid"))
    if not isinstance(data, list):
        raise GridFormatError("%s: expected a JSON list of grid rows (or an object with one under \"rows\")" % name)
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


def confusion_matrix(y_true, y_pred, labels):
    index = {int(c): i for i, c in enumerate(labels)}
    t = np.fromiter((index[int(v)] for v in y_true), dtype=np.int64, count=len(y_true))
    p = np.fromiter((index[int(v)] for v in y_pred), dtype=np.int64, count=len(y_pred))
    cm = np.zeros((len(labels), len(labels)), dtype=np.int64)
    np.add.at(cm, (t, p), 1)
    return cm


def evaluate(y_true, y_pred):
    """Accuracy, mean per-class accuracy (mean recall over the true classes),
    macro-F1 (over every label that occurs in truth or prediction, F1 = 0 where
    undefined, as scikit-learn with zero_division=0) and the confusion matrix
    (rows: truth, columns: prediction)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape:
        raise ValueError("%d predictions for %d samples" % (y_pred.shape[0], y_true.shape[0]))
    labels = np.union1d(y_true, y_pred)
    cm = confusion_matrix(y_true, y_pred, labels)
    tp = np.diag(cm).astype(np.float64)
    support = cm.sum(axis=1).astype(np.float64)
    predicted = cm.sum(axis=0).astype(np.float64)
    n = int(y_true.shape[0])
    recall = np.divide(tp, support, out=np.zeros_like(tp), where=support > 0)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(tp), where=denom > 0)
    present = support > 0
    return {
        "samples": n,
        "correct": int(tp.sum()),
        "accuracy": float(tp.sum() / n) if n else 0.0,
        "mean_class_accuracy": float(recall[present].mean()) if present.any() else 0.0,
        "macro_f1": float(f1.mean()) if len(labels) else 0.0,
        "labels": [int(v) for v in labels],
        "per_class": {
            "recall": [float(v) for v in recall],
            "precision": [float(v) for v in precision],
            "f1": [float(v) for v in f1],
            "support": [int(v) for v in support],
        },
        "confusion": cm.tolist(),
    }


def _pct(v):
    return "%.4f%%" % (100 * v)


def _table(header, rows):
    """Right-aligned columns, each as wide as its widest cell."""
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]
    return ["  ".join(str(cell).rjust(w) for cell, w in zip(r, widths)).rstrip() for r in [header] + rows]


def format_report(report, *, confusion=False):
    lines = []
    if "samples" in report:
        lines += [
            "samples              %d" % report["samples"],
            "accuracy             %s  (%d/%d)" % (_pct(report["accuracy"]), report["correct"], report["samples"]),
            "mean class accuracy  %s" % _pct(report["mean_class_accuracy"]),
            "macro F1             %.4f" % report["macro_f1"],
        ]
    if report.get("outside_classes"):
        lines.append("outside classes      %d  (true labels not in the header)" % report["outside_classes"])
    ref = report.get("reference")
    if ref:
        lines.append("agreement            %s  (%d/%d as in %s)"
                     % (_pct(ref["agreement"]), ref["identical"], report["samples"], ref["file"]))
        lines.append("reference accuracy   %s" % _pct(ref["accuracy"]))
    prob = report.get("probability")
    if prob:
        lines.append("NLL                  %.4f" % prob["nll"])
        lines.append("ECE                  %.4f  (%d bins)" % (prob["ece"], prob["ece_bins"]))
        if prob["labels_not_most_probable"]:
            lines.append("not most probable    %d  (labels; Chow's rule below predicts the most probable class)"
                         % prob["labels_not_most_probable"])
        table = _table(["error rate", "reject rate"],
                       [["%g%%" % (100 * r["error_rate"]),
                         "unreachable" if r["reject_rate"] is None else _pct(r["reject_rate"])]
                        for r in prob["reject_at_error"]])
        table[0] += "  (Chow's rule on the maximum posterior)"
        lines += [""] + table
    recall = report.get("recall")
    if recall:
        header = ["k", "true class in top k"] + (["reference in top k"] if ref else [])
        rows = [[str(r["k"]), _pct(r["true_class"])] + ([_pct(r["reference"])] if ref else []) for r in recall["at_k"]]
        lines.append("")
        lines += _table(header, rows)
    grid = report.get("grid")
    if grid:
        lines.append("")
        lines.append(grid["file"])
        lines += _table(["bits", "k", "epsilon", "accuracy", "us/sample", ""],
                        [["exact" if r["bits"] is None else str(r["bits"]),
                          str(r["k"]) if r["k"] is not None
                          else "<=%d" % r["max_k"] if isinstance(r.get("max_k"), int) else "-",
                          "-" if r["epsilon"] is None else "%g" % r["epsilon"],
                          _pct(r["accuracy"]), "%.2f" % (1e6 * r["seconds_per_sample"]),
                          "chosen" if r.get("chosen") is True else ""]
                         for r in grid["rows"]])
    if confusion and "confusion" in report:
        labels = report["labels"]
        cm = np.asarray(report["confusion"])
        width = max(len(str(v)) for v in list(labels) + [int(cm.max()) if cm.size else 0, "true\\pred"])
        lines.append("")
        lines.append("confusion matrix (rows: true label, columns: predicted label)")
        lines.append(" ".join(["true\\pred".rjust(width)] + [str(v).rjust(width) for v in labels]))
        for lab, row in zip(labels, cm):
            lines.append(" ".join([str(lab).rjust(width)] + [str(int(v)).rjust(width) for v in row]))
    while lines and not lines[0]:
        lines.pop(0)  # --grid alone: no label metrics above the grid
    return "\n".join(lines) + "\n"


def format_json(report, *, confusion=False):
    out = dict(report)
    if not confusion:
        out.pop("confusion", None)
    return json.dumps(out, sort_keys=True) + "\n"
