"""Classification metrics for ``hsvm eval``."""
import json

import numpy as np

from .errors import InputFormatError
from .fileio import display_name, open_input


def read_predictions(source, *, name=None):
    """Predicted labels, one per line: the first token of each line (as written by
    ``hsvm predict``; a ``labels ...`` header line, as in ``--scores`` / ``--proba``
    output, is skipped)."""
    name = name or display_name(source)
    out = []
    fh = open_input(source) if not hasattr(source, "read") else source
    try:
        for lineno, raw in enumerate(fh, 1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            tok = line.split(None, 1)[0]
            if lineno == 1 and tok == b"labels":
                continue
            try:
                val = float(tok)
            except ValueError:
                raise InputFormatError(name, lineno, "label %r is not a number" % tok.decode("utf-8", "replace")) from None
            if not np.isfinite(val) or val != int(val):
                raise InputFormatError(name, lineno, "label %r is not an integer" % tok.decode("utf-8", "replace"))
            out.append(int(val))
    finally:
        if fh is not source:
            fh.close()
    return np.asarray(out, dtype=np.int64)


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


def format_report(report, *, confusion=False):
    lines = [
        "samples              %d" % report["samples"],
        "accuracy             %.4f%%  (%d/%d)" % (100 * report["accuracy"], report["correct"], report["samples"]),
        "mean class accuracy  %.4f%%" % (100 * report["mean_class_accuracy"]),
        "macro F1             %.4f" % report["macro_f1"],
    ]
    if confusion:
        labels = report["labels"]
        cm = np.asarray(report["confusion"])
        width = max(len(str(v)) for v in list(labels) + [int(cm.max()) if cm.size else 0, "true\\pred"])
        lines.append("")
        lines.append("confusion matrix (rows: true label, columns: predicted label)")
        lines.append(" ".join(["true\\pred".rjust(width)] + [str(v).rjust(width) for v in labels]))
        for lab, row in zip(labels, cm):
            lines.append(" ".join([str(lab).rjust(width)] + [str(int(v)).rjust(width) for v in row]))
    return "\n".join(lines) + "\n"


def format_json(report, *, confusion=False):
    out = dict(report)
    if not confusion:
        out.pop("confusion")
    return json.dumps(out, sort_keys=True) + "\n"
