"""Posterior probabilities for hsvm's two-stage (filter + refine) classifier.

The decision scheme is the one of Milgram, Cheriet & Sabourin, "Speeding Up the
Decision Making of Support Vector Classifiers" (IWFHR 2004): a cheap first
stage ranks all K classes and only the few best are re-decided by the exact
pairwise SVMs.  To give the combination a probabilistic output, each stage gets
its own estimate and the two are chained:

* first stage (the hash filter): a softmax over all K classes of a score built
  from votes and margins, with one temperature fitted on validation data
  (:func:`first_stage_scores`, :func:`softmax`, :func:`fit_temperature`);
* second stage (the exact refine): each pair's decision value becomes
  P(a | a or b) by Platt's sigmoid (:func:`fit_platt`, :func:`platt_proba`),
  and the pairwise estimates of the kept classes are coupled into one
  distribution by Wu, Lin & Weng's method 2 (:func:`couple`);
* :func:`combine` lets the refined classes share the first-stage mass of the
  kept set, so the result is a distribution over all K classes.

:mod:`hsvm_cli.evaluate.calibration_metrics` measures the result.

Conventions: probabilities are float64; a class index ``y_index`` of -1 marks a
sample whose label is not a class of the model (it is ignored when fitting and
always counts as an error, with p_y = 0, when measuring)."""
import numpy as np

from ..support.arrays import class_index_array, float_array, int_array, proba_matrix

__all__ = [
    "softmax", "fit_temperature", "first_stage_scores",
    "fit_platt", "platt_proba", "pairwise_proba", "MIN_PAIR_PROBA",
    "couple", "combine",
]


# ---------------------------------------------------------------------------
# first stage

def softmax(scores, alpha=1.0):
    """Row-wise softmax with inverse temperature ``alpha``:
    p_c = exp(alpha s_c) / sum_c' exp(alpha s_c') over the last axis.

    The row maximum is subtracted before exponentiating, so scores of any
    magnitude give finite probabilities (the best class of a row always has
    exp(0) = 1 in the numerator)."""
    s = float_array(scores, "scores")
    if s.ndim < 1 or s.shape[-1] < 1:
        raise ValueError("scores need at least one class")
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha < 0.0:
        raise ValueError("alpha must be finite and non-negative, got %r" % alpha)
    z = alpha * (s - s.max(axis=-1, keepdims=True))
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def _temperature_gradient(S, y, alpha, eps=0.0):
    # d/d alpha of mean(-log p_y) = mean(E_p[s] - s_y); it is non-decreasing in
    # alpha (the second derivative is the mean variance of s under p), which is
    # what makes a bracketing root finder safe here.  eps > 0: the same
    # cross-entropy against Platt's smoothed targets, 1 - eps for the label
    # and eps spread over the other K - 1 classes.
    p = softmax(S, alpha)
    n, K = S.shape
    target = S[np.arange(n), y]
    if eps:
        target = (1.0 - eps) * target + eps * (S.sum(axis=1) - target) / max(1, K - 1)
    return float(np.mean(np.einsum("ij,ij->i", p, S) - target))


def fit_temperature(scores, y_index, *, min_alpha=None, max_alpha=None):
    """Inverse temperature of :func:`softmax` fitted on labelled validation scores.

    Solves  min_{alpha > 0}  -(1/n) sum_i log softmax(alpha s_i)_{y_i},
    i.e. temperature scaling (Guo et al., "On Calibration of Modern Neural
    Networks", 2017) of the first-stage scores.  The objective is convex in
    alpha, so its derivative mean_i(E_p[s_i] - s_{i,y_i}) is monotone; its root
    is found by Brent's method on log(alpha), which is exact to round-off and
    cannot wander off as an unsafeguarded Newton iteration could.

    ``scores`` [n, K] float, ``y_index`` [n] class indices; rows with
    ``y_index == -1`` are ignored.  The search range is [min_alpha, max_alpha],
    by default [1e-4, 1e4] divided by the largest within-row score range.
    When every sample is right with a margin (a small or separable validation
    set) the likelihood grows without bound as alpha -> infinity, and its
    optimum would give probabilities of exactly 0 and 1 (as hard as
    exp(-1e4)) to samples beyond the validation set; alpha is then fitted to
    Platt's smoothed targets instead -- 1 - eps for the label and eps spread
    over the other classes, eps = 1/(n + 2) for n labelled rows (Platt,
    "Probabilistic Outputs for Support Vector Machines", 1999, fits his
    sigmoid to (N+ + 1)/(N+ + 2) for the same reason) -- whose optimum is
    finite: the more rows agree, the sharper.  Elsewhere the plain likelihood
    is fitted, as before.  When the scores carry no or inverted information
    the lower end is returned.  If all
    scores within every row are equal the objective is constant and 1.0 is
    returned.  Raises ValueError when no row has a class label."""
    S = float_array(scores, "scores", ndim=2)
    n, K = S.shape
    y = class_index_array(y_index, n, K)
    keep = y >= 0
    if not np.any(keep):
        raise ValueError("no validation sample has a class label")
    S, y = S[keep], y[keep]
    spread = float(np.max(S.max(axis=1) - S.min(axis=1)))
    if spread == 0.0:
        return 1.0
    lo = 1e-4 / spread if min_alpha is None else float(min_alpha)
    hi = 1e4 / spread if max_alpha is None else float(max_alpha)
    if not (np.isfinite(lo) and np.isfinite(hi) and 0.0 < lo <= hi):
        raise ValueError("need 0 < min_alpha <= max_alpha, got %r, %r" % (lo, hi))
    # every label the maximum of its row: the likelihood rises without bound
    separable = bool(np.all(S[np.arange(S.shape[0]), y] >= S.max(axis=1)))
    eps = 1.0 / (S.shape[0] + 2) if separable else 0.0
    if _temperature_gradient(S, y, lo, eps) >= 0.0:
        return lo
    if _temperature_gradient(S, y, hi, eps) <= 0.0:
        return hi
    from scipy.optimize import brentq  # imported here: scipy.optimize costs ~0.3 s at CLI start-up
    t = brentq(lambda u: _temperature_gradient(S, y, np.exp(u), eps), np.log(lo), np.log(hi),
               xtol=1e-12, rtol=4 * np.finfo(float).eps, maxiter=200)
    return float(np.exp(t))


def first_stage_scores(votes, margins):
    """Score of each class for the first-stage softmax: s_c = (votes_c + margins_c) / (K - 1).

    ``votes`` [n, K] are the pairs won by each class (each pair adds at most
    one) and ``margins`` [n, K] the summed normalised hash margins signed
    towards the class (each pair adds a value in [-1, 1]).  Dividing by the
    K - 1 pairs a class takes part in keeps s in [-1, 2] whatever K is, so a
    temperature fitted on one model is on a comparable scale for another."""
    v = float_array(votes, "votes", ndim=2)
    m = float_array(margins, "margins", ndim=2)
    if v.shape != m.shape:
        raise ValueError("votes %s and margins %s differ in shape" % (v.shape, m.shape))
    K = v.shape[1]
    if K < 2:
        raise ValueError("need at least 2 classes, got %d" % K)
    return (v + m) / (K - 1)


# ---------------------------------------------------------------------------
# Platt scaling, all pairs at once

def _log1p_exp(z):
    # log(1 + e^z) without overflow for large z nor loss of the small term for
    # very negative z: max(z, 0) + log1p(e^-|z|).
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _sigmoid_neg(z):
    # 1 / (1 + e^z) evaluated through e^-|z| <= 1 so that neither branch overflows.
    e = np.exp(-np.abs(z))
    return np.where(z >= 0.0, e / (1.0 + e), 1.0 / (1.0 + e))


def platt_proba(dec, A, B):
    """P(class a | dec) = 1 / (1 + exp(A dec + B)), elementwise with numpy
    broadcasting (e.g. ``platt_proba(dec, A[pair], B[pair])``), stable for
    arguments of either sign."""
    z = np.asarray(A, dtype=np.float64) * np.asarray(dec, dtype=np.float64) + np.asarray(B, dtype=np.float64)
    if np.any(np.isnan(z)):
        raise ValueError("dec, A or B has NaN values")
    out = _sigmoid_neg(z)
    return out if out.ndim else float(out)


#: The pairwise probabilities coupled into class probabilities are kept in
#: [MIN_PAIR_PROBA, 1 - MIN_PAIR_PROBA], LIBSVM's min_prob in
#: svm_predict_probability: a saturated sigmoid (a decision far out on a pair
#: fitted on few samples) would otherwise make a class's probability exactly
#: 0, and a log loss infinite where the label is that class.
MIN_PAIR_PROBA = 1e-7


def pairwise_proba(dec, A, B):
    """:func:`platt_proba` kept in [MIN_PAIR_PROBA, 1 - MIN_PAIR_PROBA]: the
    r_ij that :func:`couple` couples.  Two-dimensional arguments are done in
    pieces of :data:`_PIECE` values through reused buffers, the same
    operations on each value, so the same bits: on whole [rows, P] blocks
    (P = 499,500 pairs at K = 1,000) each of the sigmoid's passes went
    through memory, and fresh temporaries per piece cost their page faults."""
    d, a, b = np.broadcast_arrays(np.asarray(dec), np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64))
    if d.ndim != 2 or d.size <= _PIECE:
        return np.clip(platt_proba(dec, A, B), MIN_PAIR_PROBA, 1.0 - MIN_PAIR_PROBA)
    n, P = d.shape
    out = np.empty((n, P))
    rows = max(1, _PIECE // P)
    cols = min(P, _PIECE)
    z_buf, e_buf, q_buf = np.empty(rows * cols), np.empty(rows * cols), np.empty(rows * cols)
    m_buf = np.empty(rows * cols, dtype=bool)
    for r0 in range(0, n, rows):
        for c0 in range(0, P, cols):
            part = (slice(r0, r0 + rows), slice(c0, c0 + cols))
            o = out[part]
            shape, size = o.shape, o.size
            z, e, q, m = (buf[:size].reshape(shape) for buf in (z_buf, e_buf, q_buf, m_buf))
            np.multiply(a[part], d[part], out=z)       # float32 values are widened exactly
            np.add(z, b[part], out=z)
            if np.isnan(z, out=m).any():
                raise ValueError("dec, A or B has NaN values")
            # _sigmoid_neg: e = exp(-|z|); e / (1 + e) where z >= 0, else 1 / (1 + e)
            np.abs(z, out=e)
            np.negative(e, out=e)
            np.exp(e, out=e)
            np.greater_equal(z, 0.0, out=m)
            np.subtract(1.0, m, out=q)        # q = e where z >= 0, else 1: exact sums of 0 and e or 1
            np.multiply(e, m, out=z)
            np.add(q, z, out=q)
            np.add(e, 1.0, out=e)
            np.divide(q, e, out=o)
            np.clip(o, MIN_PAIR_PROBA, 1.0 - MIN_PAIR_PROBA, out=o)
    return out


#: Values per piece of :func:`pairwise_proba`: its temporaries stay in L2.
_PIECE = 1 << 15


def _platt_newton(f, pair, t, B0, active, P, *, max_iter, min_step, sigma, eps):
    """Newton iterations of Lin, Lin & Weng for every pair with ``active``
    set; returns A, B and per-pair status codes (0 converged, 1 iteration
    limit, 2 line search failed)."""
    A = np.zeros(P)
    B = B0.copy()
    status = np.zeros(P, dtype=np.int8)
    n_iter = np.zeros(P, dtype=np.int64)

    def objective(sel, Ap, Bp):
        z = Ap[pair[sel]] * f[sel] + Bp[pair[sel]]
        # -t log p - (1 - t) log(1 - p) with p = 1/(1 + e^z) is log(1 + e^z) - (1 - t) z
        return np.bincount(pair[sel], weights=_log1p_exp(z) - (1.0 - t[sel]) * z, minlength=P)

    fval = objective(np.ones(f.shape[0], dtype=bool), A, B)
    for _ in range(max_iter):
        sel = active[pair]
        ps, fs, ts = pair[sel], f[sel], t[sel]
        p = _sigmoid_neg(A[ps] * fs + B[ps])
        d1 = ts - p
        d2 = p * (1.0 - p)
        g1 = np.bincount(ps, weights=fs * d1, minlength=P)
        g2 = np.bincount(ps, weights=d1, minlength=P)
        # Absolute gradient test on sums, as in Lin, Lin & Weng: pairs converge
        # independently and then leave the batch.
        active &= ~((np.abs(g1) < eps) & (np.abs(g2) < eps))
        if not np.any(active):
            break
        n_iter[active] += 1
        # The ridge sigma keeps the 2x2 Hessian invertible when every decision
        # value of a pair is the same (then only A f + B is determined).
        h11 = np.bincount(ps, weights=fs * fs * d2, minlength=P) + sigma
        h22 = np.bincount(ps, weights=d2, minlength=P) + sigma
        h21 = np.bincount(ps, weights=fs * d2, minlength=P)
        det = np.where(active, h11 * h22 - h21 * h21, 1.0)
        dA = np.where(active, -(h22 * g1 - h21 * g2) / det, 0.0)
        dB = np.where(active, -(-h21 * g1 + h11 * g2) / det, 0.0)
        gd = g1 * dA + g2 * dB
        step = np.ones(P)
        searching = active.copy()
        while np.any(searching):
            sel = searching[pair]
            newA = A + step * dA
            newB = B + step * dB
            newf = objective(sel, newA, newB)
            ok = searching & (newf < fval + 1e-4 * step * gd)
            A[ok], B[ok], fval[ok] = newA[ok], newB[ok], newf[ok]
            searching &= ~ok
            step[searching] *= 0.5
            failed = searching & (step < min_step)
            if np.any(failed):
                status[failed] = 2
                active &= ~failed
                searching &= ~failed
    status[active] = 1
    return A, B, status, n_iter


def fit_platt(dec, pair, target, n_pairs, *, prior_counts=True, default="pooled",
              max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5, return_info=False):
    """Platt sigmoids P(a | f) = 1 / (1 + exp(A f + B)) for many pairs at once.

    For each pair, solves
        min_{A,B}  -sum_i [ t_i log p_i + (1 - t_i) log(1 - p_i) ],
        p_i = 1 / (1 + exp(A f_i + B)),
    over the pair's validation decision values f_i (Platt, "Probabilistic
    Outputs for Support Vector Machines and Comparisons to Regularized
    Likelihood Methods", 1999), with the algorithm of Lin, Lin & Weng, "A note
    on Platt's probabilistic outputs for support vector machines" (2007):
    targets t_i = (N+ + 1)/(N+ + 2) for class a and 1/(N- + 2) for class b
    (``prior_counts=False``: the hard targets 1 and 0), start A = 0,
    B = log((N- + 1)/(N+ + 1)), Newton's method with a ridge ``sigma`` on the
    Hessian and a backtracking (Armijo) line search, log(1 + e^z) evaluated
    stably for both signs of z, stop when both gradient components are below
    ``eps``, after ``max_iter`` iterations, or when the step falls below
    ``min_step``.

    All pairs iterate together: per-pair sums are ``np.bincount`` over the flat
    sample arrays, each pair has its own line-search step, and converged pairs
    drop out of the batch.

    ``dec`` [m] decision values, oriented so that positive means class a;
    ``pair`` [m] the pair index of each value in [0, n_pairs); ``target`` [m]
    1 when the sample is of class a, 0 when of class b.  A pair without
    samples gets ``default``: ``"pooled"`` (the sigmoid fitted to all samples
    of all pairs together, a better guess than any constant because all pairs
    share the decision-value scale of one model; needs at least one sample) or
    a fixed ``(A, B)``, e.g. ``(-2.0, 0.0)``.

    Returns (A, B), float64 [n_pairs] each; with ``return_info=True``
    (A, B, info) where info is a dict: ``empty`` (pairs without samples),
    ``not_converged`` (pairs that hit ``max_iter``), ``line_search_failed``,
    ``max_iterations`` (largest Newton iteration count of any pair)."""
    f = float_array(dec, "dec", ndim=1)
    m = f.shape[0]
    P = int(n_pairs)
    if P < 0 or P != n_pairs:
        raise ValueError("n_pairs must be a non-negative integer, got %r" % (n_pairs,))
    pr = int_array(pair, "pair")
    tg = int_array(target, "target")
    if pr.shape[0] != m or tg.shape[0] != m:
        raise ValueError("dec, pair and target must have the same length (%d, %d, %d)"
                         % (m, pr.shape[0], tg.shape[0]))
    if m and (pr.min() < 0 or pr.max() >= P):
        raise ValueError("pair indices must lie in [0, %d)" % P)
    if m and not np.all((tg == 0) | (tg == 1)):
        raise ValueError("target must be 0 or 1")
    if int(max_iter) < 1 or not (min_step > 0) or not (sigma >= 0) or not (eps > 0):
        raise ValueError("need max_iter >= 1, min_step > 0, sigma >= 0, eps > 0")
    if isinstance(default, str):
        if default != "pooled":
            raise ValueError("default must be 'pooled' or a pair (A, B), got %r" % (default,))
        fixed = None
    else:
        try:
            fixed = tuple(float(v) for v in default)
        except (TypeError, ValueError):
            raise ValueError("default must be 'pooled' or a pair (A, B), got %r" % (default,)) from None
        if len(fixed) != 2 or not all(np.isfinite(fixed)):
            raise ValueError("default must be 'pooled' or a pair of finite numbers, got %r" % (default,))

    counts = np.bincount(pr, minlength=P)
    empty = counts == 0
    n_empty = int(empty.sum())
    pooled = fixed is None and n_empty > 0
    if pooled:
        if m == 0:
            raise ValueError("no samples to fit a pooled sigmoid; give default=(A, B)")
        # The pooled fit is one more "pair" holding a copy of every sample.
        f = np.concatenate([f, f])
        pr = np.concatenate([pr, np.full(m, P, dtype=np.int64)])
        tg = np.concatenate([tg, tg])
    Pw = P + 1 if pooled else P
    n_all = np.bincount(pr, minlength=Pw).astype(np.float64)
    n_pos = np.bincount(pr, weights=tg, minlength=Pw)
    n_neg = n_all - n_pos
    if prior_counts:
        t_hi = (n_pos + 1.0) / (n_pos + 2.0)
        t_lo = 1.0 / (n_neg + 2.0)
        t = np.where(tg == 1, t_hi[pr], t_lo[pr])
    else:
        t = tg.astype(np.float64)
    B0 = np.log((n_neg + 1.0) / (n_pos + 1.0))
    active = n_all > 0
    A, B, status, n_iter = _platt_newton(f, pr, t, B0, active, Pw, max_iter=int(max_iter),
                                         min_step=float(min_step), sigma=float(sigma), eps=float(eps))
    if pooled:
        A[:P][empty], B[:P][empty] = A[P], B[P]
        A, B = A[:P].copy(), B[:P].copy()
    elif n_empty:
        A[empty], B[empty] = fixed
    if not return_info:
        return A, B
    nonempty = ~empty
    info = {
        "empty": n_empty,
        "not_converged": int(np.sum(status[:P][nonempty] == 1)),
        "line_search_failed": int(np.sum(status[:P][nonempty] == 2)),
        "max_iterations": int(n_iter.max()) if n_iter.size else 0,
    }
    return A, B, info


# ---------------------------------------------------------------------------
# pairwise coupling

def _coupling_matrix(R, valid):
    # Q_ii = sum_{s != i} r_si^2, Q_ij = -r_ji r_ij over the valid classes; an
    # invalid class gets an identity row so that it decouples with p_i = 0.
    n, k, _ = R.shape
    off = valid[:, :, None] & valid[:, None, :] & ~np.eye(k, dtype=bool)
    Rm = np.where(off, R, 0.0)
    Q = -Rm * Rm.transpose(0, 2, 1)
    diag = np.einsum("nsi,nsi->ni", Rm, Rm)
    diag = np.where(valid, diag, 1.0)
    idx = np.arange(k)
    Q[:, idx, idx] = diag
    return Q


def _couple_direct(Q, valid):
    n, k, _ = Q.shape
    M = np.zeros((n, k + 1, k + 1))
    M[:, :k, :k] = Q
    M[:, :k, k] = valid
    M[:, k, :k] = valid
    rhs = np.zeros((n, k + 1, 1))
    rhs[:, k, 0] = 1.0
    ok = np.ones(n, dtype=bool)
    x = np.full((n, k + 1), np.nan)
    try:
        x[:] = np.linalg.solve(M, rhs)[:, :, 0]
    except np.linalg.LinAlgError:
        # The batch solver gives up on the whole stack for one singular
        # system; retry row by row so that only the bad rows fall back.
        for i in range(n):
            try:
                x[i] = np.linalg.solve(M[i], rhs[i])[:, 0]
            except np.linalg.LinAlgError:
                ok[i] = False
    p = x[:, :k]
    ok &= np.all(np.isfinite(p), axis=1)
    # The exact solution is non-negative (Wu, Lin & Weng, Theorem 2); clearly
    # negative entries mean an ill-conditioned system, not round-off.
    ok &= np.all(np.where(valid, p, 0.0) > -1e-8, axis=1)
    return np.where(ok[:, None], p, 0.0), ok


def _couple_iterative(Q, valid, *, tol=None, max_iter=None):
    """Fixed-point iterations of Wu, Lin & Weng (Section 4 of the paper) for
    the same problem: cycle over t, set p_t so that (Qp)_t = p^T Q p, rescale
    p to sum one and update Qp and p^T Q p incrementally."""
    n, k, _ = Q.shape
    if max_iter is None:
        max_iter = max(1000, 10 * k)
    if tol is None:
        # (Qp)_t sums k terms of size <= k, so round-off grows with k.
        tol = 1e-13 * k
    p = valid / valid.sum(axis=1, keepdims=True)
    idx = np.arange(k)
    qdiag = Q[:, idx, idx]
    # A valid class with r_si = 0 for every s (it beats every other class with
    # certainty) has a zero row in Q: e_t has objective 0, so it is a solution,
    # and the update below would divide by zero.
    certain = valid & (qdiag == 0.0)
    has_certain = certain.any(axis=1)
    if np.any(has_certain):
        first = np.argmax(certain, axis=1)
        p[has_certain] = 0.0
        p[has_certain, first[has_certain]] = 1.0
    run = ~has_certain
    if not np.any(run):
        return p
    Qr, pr, vr, qd = Q[run], p[run], valid[run], qdiag[run]
    Qp = np.einsum("nij,nj->ni", Qr, pr)
    pQp = np.einsum("ni,ni->n", pr, Qp)
    live = np.ones(Qr.shape[0], dtype=bool)
    for _ in range(max_iter):
        err = np.max(np.where(vr, np.abs(Qp - pQp[:, None]), 0.0), axis=1)
        live &= err >= tol
        if not np.any(live):
            break
        for t in range(k):
            upd = live & vr[:, t]
            diff = np.where(upd, (pQp - Qp[:, t]) / np.where(upd, qd[:, t], 1.0), 0.0)
            s = 1.0 + diff
            pQp = (pQp + diff * (diff * qd[:, t] + 2.0 * Qp[:, t])) / (s * s)
            Qp = (Qp + diff[:, None] * Qr[:, :, t]) / s[:, None]
            pr[:, t] += diff
            pr /= s[:, None]
        # Re-derive from p now and then: the incremental updates drift.
        Qp = np.einsum("nij,nj->ni", Qr, pr)
        pQp = np.einsum("ni,ni->n", pr, Qp)
    p[run] = pr
    return p


def couple(R, *, valid=None, method="direct"):
    """Class probabilities from pairwise probabilities, by Wu, Lin & Weng,
    "Probability Estimates for Multi-class Classification by Pairwise
    Coupling" (JMLR 2004), method 2 (the one LIBSVM's ``-b 1`` uses):

        min_p  sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2
        s.t.   sum_i p_i = 1,  p_i >= 0,

    separately for each sample.  ``R`` [n, k, k]: R[:, i, j] = r_ij =
    P(class i | class i or j), for i != j, normally with r_ji = 1 - r_ij (both
    halves are used as given; the diagonal is ignored).  ``valid`` [n, k]
    bool (default all true): classes marked False get p = 0 and their entries
    of R are ignored, so samples with fewer than k refined classes can share
    one padded array.  Every row needs at least one valid class.

    ``method="direct"`` solves the equality-constrained quadratic problem
    through its optimality system [Q 1; 1^T 0] [p; b] = [0; 1] with
    Q_ii = sum_{s != i} r_si^2, Q_ij = -r_ji r_ij, batched over samples.  Wu,
    Lin & Weng show its solution is non-negative, so the inequality constraints
    are inactive; round-off negatives are clipped to 0 and the rows
    renormalised.  The system is non-singular also for r in {0, 1} (a null
    vector of Q must vanish on every certain loser and be proportional to a
    positive vector elsewhere), but rows whose solve fails or returns clearly
    negative values are redone by ``method="iterative"``: the paper's
    fixed-point iteration, run to a tight tolerance (slower, independent of
    the conditioning of the system).

    Returns P [n, k] float64, rows summing to one."""
    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 3 or R.shape[1] != R.shape[2]:
        raise ValueError("R must have shape [n, k, k], got %s" % (R.shape,))
    n, k, _ = R.shape
    if valid is None:
        valid = np.ones((n, k), dtype=bool)
    else:
        valid = np.asarray(valid)
        if valid.shape != (n, k):
            raise ValueError("valid must have shape %s, got %s" % ((n, k), valid.shape))
        if valid.dtype != bool:
            raise ValueError("valid must be a boolean array")
    if method not in ("direct", "iterative"):
        raise ValueError("method must be 'direct' or 'iterative', got %r" % (method,))
    if n and not np.all(valid.any(axis=1)):
        raise ValueError("every row needs at least one valid class")
    used = valid[:, :, None] & valid[:, None, :] & ~np.eye(k, dtype=bool)
    Ru = R[used]
    if not np.all(np.isfinite(Ru)):
        raise ValueError("R has non-finite values among the valid pairs")
    if Ru.size and (Ru.min() < 0.0 or Ru.max() > 1.0):
        raise ValueError("R values must lie in [0, 1]")
    if n == 0:
        return np.zeros((0, k))
    Q = _coupling_matrix(R, valid)
    if method == "direct":
        p, ok = _couple_direct(Q, valid)
        if not np.all(ok):
            p[~ok] = _couple_iterative(Q[~ok], valid[~ok])
    else:
        p = _couple_iterative(Q, valid)
    p = np.where(valid, np.maximum(p, 0.0), 0.0)
    p /= p.sum(axis=1, keepdims=True)
    return p


# ---------------------------------------------------------------------------
# the two stages together

def combine(first_stage_p, kept, second_stage_p, mass_shift=0.0):
    """The two-stage distribution over all K classes.

    ``first_stage_p`` [n, K] first-stage probabilities (rows summing to one),
    ``kept`` [n, k] class indices refined for each sample (-1 pads rows that
    kept fewer; a class may appear once per row), ``second_stage_p`` [n, k]
    the refined distribution over the kept classes in the same order (entries
    at padding are ignored; the rest is renormalised).  Classes not refined
    keep their first-stage probability; the refined ones share the first-stage
    mass M_i = sum_{c in kept_i} first_stage_p[i, c] as M_i * second_stage_p:
    the refine only re-decides among the kept classes, it says nothing about
    how likely it is that the true class was kept at all.  That is what
    ``mass_shift`` δ calibrates (the calibration fits it where the first
    stage's one temperature leaves the kept classes too little mass): the
    refined classes share M'_i = σ(logit(M_i) + δ), the others their
    first-stage probabilities scaled to 1 - M'_i; δ = 0 is the mass as it
    is, bit for bit.  Rows keep their sum (with δ ≠ 0: sum to one, the
    first-stage rows summing to one).  Returns [n, K] float64."""
    F = proba_matrix(first_stage_p, "first_stage_p")
    n, K = F.shape
    kept = int_array(kept, "kept", ndim=2)
    S = proba_matrix(second_stage_p, "second_stage_p")
    if kept.shape[0] != n or S.shape != kept.shape:
        raise ValueError("kept %s and second_stage_p %s must both be [%d, k]" % (kept.shape, S.shape, n))
    if kept.size and (kept.min() < -1 or kept.max() >= K):
        raise ValueError("kept indices must lie in [-1, %d)" % K)
    is_kept = kept >= 0
    if kept.shape[1] > 1:
        srt = np.sort(kept, axis=1)
        if np.any((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)):
            raise ValueError("a class is kept twice in one row")
    rows = np.broadcast_to(np.arange(n)[:, None], kept.shape)
    safe = np.where(is_kept, kept, 0)
    S = np.where(is_kept, S, 0.0)
    total = S.sum(axis=1)
    if np.any(is_kept.any(axis=1) & (total <= 0.0)):
        raise ValueError("second_stage_p has no mass on the kept classes of some row")
    S = S / np.where(total > 0.0, total, 1.0)[:, None]
    mass = np.where(is_kept, F[rows, safe], 0.0).sum(axis=1)
    out = F.copy()
    if mass_shift:
        # the others' own sum and 1 - M' from the logit, not 1 - M and
        # 1 - σ(...): a kept mass within rounding of 1 would lose every digit
        others = F.copy()
        others[rows[is_kept], kept[is_kept]] = 0.0
        rest = others.sum(axis=1)
        out *= np.where(rest > 0.0, shifted_mass(mass, -mass_shift, complement=True) / np.where(rest > 0.0, rest, 1.0),
                        0.0)[:, None]
        # no mass outside the kept set (every class kept): nothing to move
        mass = np.where(rest > 0.0, shifted_mass(mass, mass_shift), mass)
    out[rows[is_kept], kept[is_kept]] = (mass[:, None] * S)[is_kept]
    return out


def shifted_mass(mass, shift, *, complement=False):
    """σ(logit(mass) + shift), elementwise, with mass 0 and 1 kept as they
    are (no sample-free evidence moves a certainty); ``complement``: 1 minus
    that, σ(-(logit(mass) + shift)) -- call it with -shift -- computed as
    itself, so that it keeps its digits when the mass is near 1."""
    m = np.clip(np.asarray(mass, dtype=np.float64), 0.0, 1.0)     # a sum may round past 1
    z = logit(m)
    if complement:
        z = -z
    fixed = (1.0 - m) if complement else m
    return np.where((m <= 0.0) | (m >= 1.0), fixed, sigmoid(z + shift))


def sigmoid(z):
    """1 / (1 + e^-z) elementwise, stable for either sign."""
    return _sigmoid_neg(-np.asarray(z, dtype=np.float64))


def logit(p):
    """log(p / (1 - p)) elementwise, ±inf at 0 and 1, without warnings."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p) - np.log1p(-p)


