"""How good probabilities are: negative log-likelihood, expected calibration
error, and Chow's error-reject trade-off.

Conventions: probabilities are float64 [n, K]; a class index ``y_index`` of -1
marks a sample whose label is not a class (it always counts as an error, with
p_y = 0).  Each metric needs only a few numbers per sample (p_y; the top
probability and whether its class is y_i): :func:`row_summary` computes them
block by block, and the ``*_of`` forms take them, so a file's probabilities
are never held whole (``hsvm eval``)."""
import numpy as np

from ..support.arrays import class_index_array, float_array, proba_matrix

__all__ = ["nll", "expected_calibration_error", "reject_curve", "reject_at_error", "row_summary", "nll_of",
           "expected_calibration_error_of", "reject_curve_of", "reject_at_error_of"]


def _true_proba(P, y):
    py = np.zeros(P.shape[0])
    known = y >= 0
    py[known] = P[np.flatnonzero(known), y[known]]
    return py


def _checked(P, y_index):
    P = proba_matrix(P)
    n, K = P.shape
    y = class_index_array(y_index, n, K)
    if n == 0:
        raise ValueError("no samples")
    return P, y


def row_summary(P, y):
    """Per sample of a block: (p_y, top probability, the top class is y,
    index of the top class); y -1: p_y 0, never correct."""
    top = P.argmax(axis=1)
    conf = P[np.arange(P.shape[0]), top]
    return _true_proba(P, y), conf, (top == y) & (y >= 0), top


def nll(P, y_index):
    """Mean negative log-likelihood -(1/n) sum_i log max(P[i, y_i], 1e-15); the
    floor keeps a confidently wrong sample finite (34.5 nats).  A sample with
    y_index -1 has p_y = 0."""
    P, y = _checked(P, y_index)
    return nll_of(_true_proba(P, y))


def nll_of(p_true):
    """:func:`nll` from each sample's p_y."""
    return float(np.mean(-np.log(np.maximum(p_true, 1e-15))))


def _confidence_correct(P, y):
    return row_summary(P, y)[1:3]


def expected_calibration_error(P, y_index, *, bins=15):
    """Expected calibration error of the top class (Naeini et al. 2015, as in
    Guo et al. 2017): confidence = max_c P[i, c], correctness = argmax is y_i,
    confidences grouped into ``bins`` equal-width bins (lo, hi] of [0, 1]
    (a confidence of 0 goes to the first), ECE = sum_b (n_b / n) |acc_b - conf_b|."""
    P, y = _checked(P, y_index)
    return expected_calibration_error_of(*_confidence_correct(P, y), bins=bins)


def expected_calibration_error_of(conf, correct, *, bins=15):
    """:func:`expected_calibration_error` from each sample's top probability
    and whether its class is the true one."""
    n = conf.shape[0]
    bins = int(bins)
    if bins < 1:
        raise ValueError("bins must be at least 1")
    b = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    gap = (np.bincount(b, weights=correct.astype(np.float64), minlength=bins)
           - np.bincount(b, weights=conf, minlength=bins))
    return float(np.sum(np.abs(gap)) / n)


def reject_curve(P, y_index):
    """Error rate against reject rate for Chow's rule (reject the samples whose
    largest posterior is lowest).

    Returns (reject_rate, error_rate), float64 arrays of length n + 1: for
    r = 0..n rejected samples, reject_rate[r] = r / n and error_rate[r] the
    fraction of the n - r accepted samples whose argmax is wrong (0 when all
    are rejected).  A rule thresholds the confidence, so it cannot separate
    samples of equal confidence: within a group of ties the errors are taken
    as spread evenly (the expected error of rejecting a random part of the
    group), which makes the curve independent of sample order.  error_rate[0]
    is 1 - accuracy of the argmax."""
    P, y = _checked(P, y_index)
    return reject_curve_of(*_confidence_correct(P, y))


def reject_curve_of(conf, correct):
    """:func:`reject_curve` from each sample's top probability and whether
    its class is the true one."""
    n = conf.shape[0]
    order = np.argsort(conf, kind="stable")
    c = conf[order]
    wrong = (~correct[order]).astype(np.float64)
    # No threshold can split a group of equal confidence, so inside a group
    # the rejected errors are interpolated linearly: the expectation when a
    # random part of the group is rejected.
    ends = np.flatnonzero(np.r_[c[1:] != c[:-1], True]) + 1
    starts = np.r_[0, ends[:-1]]
    cum_end = np.cumsum(wrong)[ends - 1]
    cum_start = np.r_[0.0, cum_end[:-1]]
    group = np.repeat(np.arange(ends.shape[0]), ends - starts)
    r = np.arange(1, n + 1)
    frac = (r - starts[group]) / (ends - starts)[group]
    rejected_err = np.r_[0.0, cum_start[group] + frac * (cum_end - cum_start)[group]]
    accepted = n - np.arange(n + 1)
    total_err = cum_end[-1]
    err = np.zeros(n + 1)
    err[:n] = (total_err - rejected_err[:n]) / accepted[:n]
    err = np.maximum(err, 0.0)
    return np.arange(n + 1) / n, err


def reject_at_error(P, y_index, targets):
    """For each target error rate, the smallest reject rate of
    :func:`reject_curve` whose error rate is at most the target (1.0, reject
    everything, always qualifies).  ``targets`` scalar or array in [0, 1],
    e.g. ``np.arange(5, 0, -1) / 1000``; returns an array of its shape."""
    return reject_at_error_of(reject_curve(P, y_index), targets)


def reject_at_error_of(curve, targets):
    """:func:`reject_at_error` from the (reject_rate, error_rate) curve."""
    tg = float_array(targets, "targets")
    if tg.size and (tg.min() < 0.0 or tg.max() > 1.0):
        raise ValueError("targets must lie in [0, 1]")
    rej, err = curve
    # The curve need not be monotone, so look for the first qualifying point,
    # not a bisection.
    ok = err[None, :] <= tg.reshape(-1, 1) + 1e-12
    first = np.argmax(ok, axis=1)
    return rej[first].reshape(tg.shape)
