"""The parts of an evaluation report beyond the labels: probabilities
(NLL, ECE, Chow's reject trade-off), top-k recall and agreement with a
reference prediction."""
import numpy as np

from .calibration_metrics import expected_calibration_error_of, nll_of, reject_at_error_of, reject_curve_of
from .metrics import recall_curve_of_counts, subsample

ERROR_TARGETS = (0.005, 0.004, 0.003, 0.002, 0.001)
ECE_BINS = 15


def probability_report(rows):
    """NLL, the multi-class Brier score, ECE, the reject rates that reach :data:`ERROR_TARGETS` (None:
    only rejecting every sample gets there) and the error-reject curve
    (subsampled); also the full curve for plotting.  ``rows``: the
    per-sample summaries of :class:`~hsvm_cli.evaluation.file_report.ScoredRows`
    (a true label that is no class of the header has p_y 0, always an
    error)."""
    curve = reject_curve_of(rows.conf, rows.correct)
    reject, error = curve
    needed = np.asarray(reject_at_error_of(curve, np.asarray(ERROR_TARGETS)), dtype=np.float64)
    keep = subsample(reject.shape[0])
    summary = {
        "nll": nll_of(rows.p_true),
        # Brier (1950), over every class: sum_c (p_c - [c = y])^2, averaged
        "brier": rows.brier_sum / max(1, rows.p_true.shape[0]),
        "ece": float(expected_calibration_error_of(rows.conf, rows.correct, bins=ECE_BINS)),
        "ece_bins": ECE_BINS,
        "reject_at_error": [{"error_rate": t, "reject_rate": float(r) if r < 1.0 else None}
                            for t, r in zip(ERROR_TARGETS, needed)],
        "reject_curve": {"points": int(reject.shape[0]),
                         "reject_rate": [float(v) for v in reject[keep]],
                         "error_rate": [float(v) for v in error[keep]]},
        # Chow's rule predicts the most probable class; when the file's label is
        # another one, the curve at reject 0 is not the accuracy above.
        "labels_not_most_probable": rows.not_argmax,
    }
    return summary, (reject, error)


def recall_report(rows, K, ks):
    """Share of samples whose true class (and the reference's label) is among
    the k highest scores, at ``ks`` and as a subsampled curve over k = 1..K;
    also the full curves for plotting.  ``rows``: as for
    :func:`probability_report` (the counts of each rank of the true class and
    of the reference's label)."""
    curves = {"true_class": recall_curve_of_counts(rows.rank_counts, K)}
    if rows.ref_rank_counts is not None:
        curves["reference"] = recall_curve_of_counts(rows.ref_rank_counts, K)
    keep = subsample(K)
    summary = {
        "at_k": [dict({"k": int(k)}, **{key: float(c[k - 1]) for key, c in curves.items()}) for k in ks],
        "curve": dict({"k": [int(v) + 1 for v in keep]},
                      **{key: [float(v) for v in c[keep]] for key, c in curves.items()}),
    }
    return summary, curves
