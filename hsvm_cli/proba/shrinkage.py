"""Per-pair Platt sigmoids shrunk toward one pooled sigmoid, for pairs with few
validation samples.

A one-vs-one model of K classes has K(K-1)/2 pairs and a validation set of n
samples gives each pair only the samples of its two classes, about 2n/K: six
for omniglot-242's 605-sample half.  Platt's fit (Lin, Lin & Weng's targets
(N+ + 1)/(N+ + 2)) on six values stays near 1/2 and the coupled probabilities
are nearly flat.  All pairs share the decision-value scale of one model, so
their sigmoids are alike: the pooled sigmoid theta_0 = (A_0, B_0), fitted to all
pairs' samples at once (to Platt's targets too), is an informed prior for each.

Estimator.  For pair p with samples (f_i, t_i), theta_p is the maximum a
posteriori estimate

    theta_p = argmin_theta  sum_i l_i(theta) + (n_0 / 2) (theta - theta_0)^T Hbar (theta - theta_0),
    l_i(theta) = -t_i log s_i - (1 - t_i) log(1 - s_i),   s_i = 1 / (1 + exp(A f_i + B)),

a Gaussian prior at theta_0 with precision n_0 Hbar, where Hbar is the pooled
likelihood's Hessian per sample at theta_0 (the Fisher information of one
average sample).  The prior thus weighs as much as n_0 average samples of the
pooled fit: where the likelihood is close to quadratic, theta_p is the
precision-weighted mean
(n_p H_p + n_0 Hbar)^-1 (n_p H_p theta_p^ML + n_0 Hbar theta_0), H_p the pair's
information per sample, which moves from theta_0 (n_p << n_0) to the pair's
own fit (n_p >> n_0) in proportion to n_p / (n_p + n_0) when its samples are
as informative as the average one (a steep sigmoid's samples are less so,
and it is shrunk more).  With the prior in place
the targets are the labels themselves (0 and 1): Platt's small-sample targets
are a shrinkage toward 1/2 that the prior replaces.  The same batched Newton
method with backtracking as :func:`hsvm_cli.proba.estimators.fit_platt`
solves every pair at once (the objective stays convex: the prior adds a
positive definite quadratic).

n_0 is chosen on the validation set itself by two-fold cross-fitting
(:func:`choose_prior_samples`): the pairs are fitted on one half of the
samples and scored by their pairwise log-loss on the other, both ways round,
for each n_0 of a geometric grid; the smallest total wins.  Data sets with
many samples per pair get a small n_0 (their own sigmoids), few-sample ones a
large n_0.  This is empirical Bayes by held-out likelihood (as in choosing a
ridge penalty by cross-validation), not a constant tuned to one data file.

Sharpness.  Pairwise sigmoids that are right for the samples of their own two
classes still give flat class distributions once coupled over many classes:
for a sample of class w, the K-2 pairs that oppose two other classes are
extrapolations, and the coupling (which treats every r_ij as p_i/(p_i + p_j))
spreads mass over all of them -- on omniglot-242 the coupled top probability
averages 0.14 where the top class is right 32% of the time.  One factor gamma
on every pair's logit, r = 1/(1 + exp(gamma (A f + B))), is fitted where it
matters: by the log-likelihood of the coupled class distributions
(:func:`fit_sharpness`) on validation samples whose sigmoids were fitted on
the other half (cross-fitting, so that the fit is not judged on its own
samples); gamma = 1 leaves Platt's sigmoids as they are.  This is temperature
scaling (Guo et al. 2017) applied before the coupling rather than after it:
after it, a temperature cannot undo the flattening without spreading the
heavy tail further (it lowers the NLL by flattening, and raises the
calibration error)."""
import numpy as np

from ..support.arrays import float_array, int_array
from .estimators import _log1p_exp, _sigmoid_neg

__all__ = ["fit_platt_shrunk", "choose_prior_samples", "PRIOR_SAMPLES_GRID", "pooled_sigmoid", "sample_halves",
           "fit_sharpness", "SHARPNESS_RANGE", "golden_log_search", "smoothing_for", "label_loss", "sharpness_search"]

#: The range searched for the sharpness factor gamma.
SHARPNESS_RANGE = (0.25, 8.0)

#: n_0 values tried by :func:`choose_prior_samples` (0: each pair's own fit).
PRIOR_SAMPLES_GRID = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)


def _newton(f, pair, t, P, theta0, H, n0, *, max_iter=100, eps=1e-5, min_step=1e-10, sigma=1e-12):
    """Batched MAP Newton iterations for every pair (module docstring);
    returns A, B (float64 [P])."""
    A = np.full(P, theta0[0])
    B = np.full(P, theta0[1])
    h11, h12, h22 = n0 * H[0, 0], n0 * H[0, 1], n0 * H[1, 1]

    def objective(sel, Ap, Bp):
        z = Ap[pair[sel]] * f[sel] + Bp[pair[sel]]
        data = np.bincount(pair[sel], weights=_log1p_exp(z) - (1.0 - t[sel]) * z, minlength=P)
        dA, dB = Ap - theta0[0], Bp - theta0[1]
        return data + 0.5 * (h11 * dA * dA + 2.0 * h12 * dA * dB + h22 * dB * dB)

    active = np.ones(P, dtype=bool)
    fval = objective(np.ones(f.shape[0], dtype=bool), A, B)
    for _ in range(max_iter):
        sel = active[pair]
        ps, fs, ts = pair[sel], f[sel], t[sel]
        p = _sigmoid_neg(A[ps] * fs + B[ps])
        d1 = ts - p
        d2 = p * (1.0 - p)
        dA, dB = A - theta0[0], B - theta0[1]
        g1 = np.bincount(ps, weights=fs * d1, minlength=P) + h11 * dA + h12 * dB
        g2 = np.bincount(ps, weights=d1, minlength=P) + h12 * dA + h22 * dB
        active &= ~((np.abs(g1) < eps) & (np.abs(g2) < eps))
        if not np.any(active):
            break
        a11 = np.bincount(ps, weights=fs * fs * d2, minlength=P) + h11 + sigma
        a22 = np.bincount(ps, weights=d2, minlength=P) + h22 + sigma
        a12 = np.bincount(ps, weights=fs * d2, minlength=P) + h12
        det = np.where(active, a11 * a22 - a12 * a12, 1.0)
        stepA = np.where(active, -(a22 * g1 - a12 * g2) / det, 0.0)
        stepB = np.where(active, -(-a12 * g1 + a11 * g2) / det, 0.0)
        gd = g1 * stepA + g2 * stepB
        step = np.ones(P)
        searching = active.copy()
        while np.any(searching):
            sel = searching[pair]
            newA, newB = A + step * stepA, B + step * stepB
            newf = objective(sel, newA, newB)
            ok = searching & (newf < fval + 1e-4 * step * gd)
            A[ok], B[ok], fval[ok] = newA[ok], newB[ok], newf[ok]
            searching &= ~ok
            step[searching] *= 0.5
            failed = searching & (step < min_step)
            active &= ~failed
            searching &= ~failed
    return A, B


def pooled_sigmoid(dec, target):
    """theta_0 = (A_0, B_0) fitted to all samples of all pairs together, and
    Hbar, the Hessian of its log-loss per sample at theta_0.

    Fitted to Platt's smoothed targets, (N+ + 1)/(N+ + 2) for class a and
    1/(N- + 2) for class b, as LIBSVM fits every sigmoid: where one threshold
    separates the samples the hard-target likelihood grows without bound as
    the sigmoid steepens, and where it nearly does its optimum is nearly as
    steep; and the pooled sigmoid is every pair's prior, so a saturated one
    saturates every pair -- att-faces-40 calibrated on 60 rows (A = -376)
    gave test errors probabilities of 1e-7.  Hard targets had been kept
    where the samples overlapped, or for each cross-fitted half by its own
    test: a set one overlap short of separable fitted steep sigmoids, and
    halves that were separable where the whole set was not fitted gentle ones
    whose sharpness then steepened the whole set's (att-faces-40 with 16 of
    its classes validated: a test error's class 2.9e-2 -> 1.5e-5).  Smoothed
    throughout, held-out exact NLL over eight small or partial validation
    sets of att-faces-40 went from 0.31-1.15 to 0.25-0.49, over nine of
    digits from 0.07-0.37 to 0.07-0.13 (one, a sample per class, 0.09 ->
    0.12); on hundreds of samples per class the targets are 1 - 1/(N+2),
    nearly hard, and the fits nearly unchanged (BENCHMARKS.md)."""
    f = float_array(dec, "dec", ndim=1)
    t = int_array(target, "target").astype(np.float64)
    if f.shape[0] == 0:
        raise ValueError("no samples to fit a pooled sigmoid")
    pos, neg = t == 1, t == 0
    t = np.where(pos, (pos.sum() + 1.0) / (pos.sum() + 2.0), 1.0 / (neg.sum() + 2.0))
    A, B = _newton(f, np.zeros(f.shape[0], dtype=np.int64), t, 1, (0.0, 0.0), np.zeros((2, 2)), 0.0)
    p = _sigmoid_neg(A[0] * f + B[0])
    w = p * (1.0 - p)
    H = np.array([[np.mean(w * f * f), np.mean(w * f)], [np.mean(w * f), np.mean(w)]])
    return (float(A[0]), float(B[0])), H


def fit_platt_shrunk(dec, pair, target, n_pairs, *, prior_samples, pooled=None):
    """Per-pair sigmoids P(a | f) = 1/(1 + exp(A f + B)) shrunk toward the
    pooled one with a prior worth ``prior_samples`` samples (module
    docstring).  ``dec`` [m] decision values oriented toward class a,
    ``pair`` [m] pair indices in [0, n_pairs), ``target`` [m] 1 for class a,
    0 for b; ``pooled``: (theta_0, Hbar) when already fitted.  A pair
    without samples gets theta_0.  Returns (A, B) float64 [n_pairs]."""
    f = float_array(dec, "dec", ndim=1)
    pr = int_array(pair, "pair")
    t = int_array(target, "target")
    P = int(n_pairs)
    if pr.shape[0] != f.shape[0] or t.shape[0] != f.shape[0]:
        raise ValueError("dec, pair and target must have the same length")
    if f.shape[0] and (pr.min() < 0 or pr.max() >= P):
        raise ValueError("pair indices must lie in [0, %d)" % P)
    if f.shape[0] and not np.all((t == 0) | (t == 1)):
        raise ValueError("target must be 0 or 1")
    n0 = float(prior_samples)
    if not (n0 >= 0 and np.isfinite(n0)):
        raise ValueError("prior_samples must be a finite number >= 0, got %r" % prior_samples)
    theta0, H = pooled if pooled is not None else pooled_sigmoid(f, t)
    if P == 1 and f.shape[0]:
        # one pair (a two-class model): its samples are the pooled samples,
        # and the pooled fit (smoothed targets, as LIBSVM's) is its own
        return np.array([theta0[0]]), np.array([theta0[1]])
    if n0 == 0.0:
        # Each pair's own maximum-likelihood fit (hard targets); a pair whose
        # samples are separable has no finite one, so a vanishing prior keeps
        # it finite without moving the others.
        n0 = 1e-6
    return _newton(f, pr, t.astype(np.float64), P, theta0, H, n0)


def _pair_log_loss(f, pr, t, A, B, P):
    z = A[pr] * f + B[pr]
    return float(np.sum(_log1p_exp(z) - (1.0 - t) * z))


def choose_prior_samples(dec, pair, target, sample, n_pairs, *, grid=PRIOR_SAMPLES_GRID, seed=0,
                         pooled_halves=None):
    """n_0 by two-fold cross-fitting on the validation samples (module
    docstring): ``sample`` [m] says which validation sample each pairwise
    value comes from, and the halves split the samples (a seeded choice), so
    a sample's values are never fitted and scored at once.  Returns (n_0,
    {n_0: held-out log-loss per pairwise value}).  ``pooled_halves``: a dict
    that receives the pooled sigmoid fitted on each half (keys True for the
    first half of :func:`sample_halves`, False for the second), for a caller
    that fits on the same halves again."""
    f = float_array(dec, "dec", ndim=1)
    pr = int_array(pair, "pair")
    t = int_array(target, "target")
    smp = int_array(sample, "sample")
    if smp.shape[0] != f.shape[0]:
        raise ValueError("sample must have one entry per value")
    half = sample_halves(smp, seed=seed)[smp] if smp.size else np.zeros(0, dtype=bool)
    if half.all() or not half.any():
        return float(grid[0]), {}
    pooled = [pooled_sigmoid(f[half == h], t[half == h]) for h in (True, False)]
    if pooled_halves is not None:
        pooled_halves.update({True: pooled[0], False: pooled[1]})
    scores = {}
    for n0 in grid:
        total = 0.0
        for h, fit_pooled in zip((True, False), pooled):
            fit, test = half == h, half != h
            A, B = fit_platt_shrunk(f[fit], pr[fit], t[fit], n_pairs, prior_samples=n0, pooled=fit_pooled)
            total += _pair_log_loss(f[test], pr[test], t[test].astype(np.float64), A, B, n_pairs)
        scores[float(n0)] = total / max(1, f.shape[0])
    best = min(scores, key=lambda k: (scores[k], k))
    return best, scores


def sample_halves(sample, *, seed=0):
    """bool [max(sample) + 1]: True for the samples of the first half of a
    seeded split of the distinct ids in ``sample`` (numpy's generator: the
    split only decides which samples score which fits)."""
    smp = np.asarray(sample, dtype=np.int64)
    ids = np.unique(smp)
    first = np.zeros(int(ids.max()) + 1 if ids.size else 0, dtype=bool)
    rng = np.random.default_rng(seed)
    first[ids[rng.permutation(ids.shape[0]) % 2 == 0]] = True
    return first


def sharpened(logits, gamma):
    """The pair probabilities 1/(1 + e^(gamma z)) of logits z, with the
    exponent capped so that e^x stays finite (as exact as the stable form's
    for every x)."""
    # the same operations in place in one buffer: each step a temporary of
    # the block's size took 64 MB more at calibrate's peak (omniglot-242)
    t = np.multiply(gamma, logits)
    if not isinstance(t, np.ndarray):       # scalars
        return 1.0 / (1.0 + np.exp(np.minimum(t, 700.0)))
    np.minimum(t, 700.0, out=t)
    np.exp(t, out=t)
    np.add(1.0, t, out=t)
    return np.divide(1.0, t, out=t)


def smoothing_for(P, y):
    """Platt's smoothing eps = 1/(m + 2) for the m rows of class
    distributions ``P`` when every row's label ``y`` is its most probable
    class (where a sharpening factor's likelihood has no finite optimum), else
    0."""
    return 1.0 / (y.shape[0] + 2) if P.shape[1] > 1 and bool(np.all(np.argmax(P, axis=1) == y)) else 0.0


def label_loss(P, y, eps=0.0):
    """Mean negative log-likelihood of labels ``y`` under the rows of ``P``
    (floored at 1e-15); with ``eps`` > 0, the cross-entropy against Platt's
    smoothed targets, 1 - eps for the label and eps spread over the others."""
    logp = np.log(np.maximum(P, 1e-15))
    own = logp[np.arange(y.shape[0]), y]
    if eps == 0.0:
        return float(np.mean(-own))
    rest = (logp.sum(axis=1) - own) / (P.shape[1] - 1)
    return float(np.mean(-((1.0 - eps) * own + eps * rest)))


def fit_sharpness(logits, winner, y_index, couple, *, lo=SHARPNESS_RANGE[0], hi=SHARPNESS_RANGE[1], steps=12):
    """gamma minimising the mean negative log-likelihood of the coupled class
    distributions ``couple(r, winner)`` with r = 1/(1 + exp(gamma z)), z =
    ``logits`` [m, P] (A f + B of each pair, from sigmoids fitted without
    these samples), over the rows with a class label ``y_index`` [m].
    Golden-section search on log gamma over [lo, hi] (``steps`` shrinkings:
    the bracket ends 1% wide in gamma); the likelihood is unimodal in gamma in
    practice (too flat, then too sharp), and a boundary is returned when the
    optimum lies beyond it.

    When the likelihood's optimum is at the range's end and every row's label
    is its most probable class (a small or separable validation set, where
    the likelihood only grows with gamma), gamma is fitted to Platt's
    smoothed targets instead, 1 - eps for the label and eps spread over the
    other classes, eps = 1/(m + 2) for m rows (the first stage's
    temperature's rule): :func:`sharpness_search`."""
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(y_index, dtype=np.int64)
    keep = np.flatnonzero(y >= 0)
    if not keep.size:
        return 1.0
    y = y[keep]
    return sharpness_search(lambda g: coupled_rows(z, g, winner, couple, rows=keep), y, lo, hi, steps=steps)


def sharpness_search(distributions, y, lo=SHARPNESS_RANGE[0], hi=SHARPNESS_RANGE[1], *, steps=12):
    """The factor in [lo, hi] whose class distributions ``distributions(g)``
    (rows [m, K]) give labels ``y`` the most likelihood; when that optimum
    is the range's end and every label is its row's most probable class at
    g = 1, the likelihood would only grow beyond it (every probability
    towards 0 or 1), and the factor is fitted to Platt's smoothed targets
    instead.  Coupled distributions are not monotone in g, so rows that are
    all right do not by themselves mean an unbounded likelihood (a 50-row
    digits validation set: all right, optimum 0.98): only the end of the
    range says so."""
    g = golden_log_search(lambda log_g: label_loss(distributions(np.exp(log_g)), y), lo, hi, steps=steps)
    if g < 0.99 * hi:
        return g
    eps = smoothing_for(distributions(1.0), y)
    if eps == 0.0:
        return g
    return golden_log_search(lambda log_g: label_loss(distributions(np.exp(log_g)), y, eps), lo, hi, steps=steps)


#: Bytes of sharpened pair probabilities made at a time by :func:`coupled_rows`.
_COUPLED_BYTES = 64 << 20


def coupled_rows(logits, gamma, winner, couple, *, rows=None):
    """``couple(sharpened(logits[rows], gamma), winner[rows])`` (rows: every
    row when None), made a few rows at a time: [rows, P] float64 pair
    probabilities and their temporaries for all rows at once took 1.6 GB at
    K = 1,000.  Each row's probabilities are its own, so the result is the
    same."""
    logits = np.asarray(logits)
    winner = np.asarray(winner)
    rows = np.arange(logits.shape[0]) if rows is None else np.asarray(rows)
    step = max(1, _COUPLED_BYTES // (8 * max(1, logits.shape[1])))
    parts = [couple(sharpened(logits[rows[s:s + step]], gamma), winner[rows[s:s + step]])
             for s in range(0, rows.shape[0], step)]
    return np.concatenate(parts) if parts else couple(sharpened(logits[rows], gamma), winner[rows])


def golden_log_search(loss, lo, hi, *, steps=12):
    """The minimiser in [lo, hi] of ``loss(log x)`` (a callable of log x), by
    golden-section search on log x: ``steps`` shrinkings of the bracket
    (12: the bracket ends 1% wide for [0.25, 8]); returns the bracket's
    midpoint as x.  For a loss unimodal in x; an optimum beyond a boundary
    returns that boundary."""
    a, b = np.log(lo), np.log(hi)
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = loss(c), loss(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = loss(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = loss(d)
    return float(np.exp((a + b) / 2.0))
