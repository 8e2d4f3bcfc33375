"""The parts of an evaluation report beyond the labels: probabilities
(NLL, ECE, Chow's reject trade-off), top-k recall and agreement with a
reference prediction."""
import numpy as np

from .calibration_metrics import expected_calibration_error, nll, reject_at_error, reject_curve
from .metrics import class_ranks, recall_curve, subsample

ERROR_TARGETS = (0.005, 0.004, 0.003, 0.002, 0.001)
ECE_BINS = 15


def probability_report(pred, y_index):
    """NLL, ECE, the reject rates that reach :data:`ERROR_TARGETS` (None:
    only rejecting every sample gets there) and the error-reject curve
    (subsampled); also the full curve for plotting.  A true label that is no
    class of the header has index -1: probability 0, always an error."""
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
