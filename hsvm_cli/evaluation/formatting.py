"""An evaluation report as aligned text or as JSON."""
import json

import numpy as np


def _pct(v):
    return "-" if v is None else "%.4f%%" % (100 * v)


def _table(header, rows):
    """Right-aligned columns, each as wide as its widest cell."""
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]
    return ["  ".join(str(cell).rjust(w) for cell, w in zip(r, widths)).rstrip() for r in [header] + rows]


def format_report(report, *, confusion=False, per_class=False):
    lines = []
    if "samples" in report:
        lines += [
            "samples              %d" % report["samples"],
            "accuracy             %s  (%d/%d)" % (_pct(report["accuracy"]), report["correct"], report["samples"]),
            "mean class accuracy  %s" % _pct(report["mean_class_accuracy"]),
            "macro F1             %s" % ("-" if report["macro_f1"] is None else "%.4f" % report["macro_f1"]),
        ]
    damaged = report.get("predictions", {}).get("not_probabilities")
    if damaged:
        lines.append("probabilities        not evaluated: %s" % damaged)
    dropped = report.get("predictions", {}).get("scores_not_evaluated")
    if dropped:
        lines.append("scores               not evaluated: %s" % dropped)
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
        lines.append("Brier                %.4f" % prob["brier"])
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
        extended = any(r.get("mode") == "scores" or r.get("rule") == "dag" for r in grid["rows"])
        lines += _table(["setting" if extended else "bits", "k", "epsilon", "accuracy", "us/sample", ""],
                        [[_grid_setting(r, extended),
                          str(r["k"]) if r["k"] is not None
                          else "<=%d" % r["max_k"] if isinstance(r.get("max_k"), int) else "-",
                          "-" if r["epsilon"] is None else "%g" % r["epsilon"],
                          _pct(r["accuracy"]), "%.2f" % (1e6 * r["seconds_per_sample"]),
                          "chosen" if r.get("chosen") is True else ""]
                         for r in grid["rows"]])
    if per_class and report.get("per_class") and report.get("labels"):
        # scikit-learn's classification_report, a row per label
        pc = report["per_class"]
        lines.append("")
        lines += _table(["label", "precision", "recall", "F1", "support"],
                        [[str(lab), "%.4f" % p, "%.4f" % r, "%.4f" % f, str(int(n))]
                         for lab, p, r, f, n in zip(report["labels"], pc["precision"], pc["recall"], pc["f1"],
                                                    pc["support"])])
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


def _grid_setting(r, extended):
    """A grid row's first column: its bits (under a "bits" header), or exact /
    scores (class-score first stage) / hash BITS, as calibrate's table names
    them, with " dag" for decision-DAG rules."""
    if r.get("mode") == "scores":
        name = "scores"
    elif r["bits"] is None:
        name = "exact"
    else:
        name = ("hash %d" if extended else "%d") % r["bits"]
    return name + (" dag" if r.get("rule") == "dag" else "")
