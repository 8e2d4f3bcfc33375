"""Max-wins refine labels read from the exact pass's BLAS decision values,
with a certificate that they are the refine's own labels.

The refine step computes a (sample, classifier) decision value with the
sampled product (native/refine.c: float32, 32 fixed lanes), the exact scorer
with BLAS (another summation order), so the two values may differ in their
last bits and, for a value near 0, in sign.  Both are float32 dot products of
the same d terms plus the bias, and for any order of summation (with or
without fused multiply-adds) a float32 dot product is within
gamma_d * sum_i |x_i w_i| <= gamma_d * ||x|| ||w|| of the true one
(gamma_d = d u / (1 - d u), u = 2^-24; Higham, "Accuracy and Stability of
Numerical Algorithms", 2nd ed., section 3.1); adding the bias rounds once
more (relative u).  So

    |v_blas - v_refine| <= 2 gamma_d ||x|| ||w|| (1 + 2u) + 2u |v_blas| (1 + 2u) < tol,
    tol = 2.1 gamma_d ||x|| ||w|| + 4u |v_blas|

(tol is formed in float64 from float64 norms: its roundings are far inside
the margins 0.1 gamma_d and 2u),

and a cell with |v_blas| > tol has the same sign (and is not 0) in both: the
same pair winner.  A cell within tol is *uncertain*.

Certificate (one bag per pair).  With v_c the BLAS vote counts among a row's
kept classes, w the BLAS winner and n_c the uncertain pairs among the kept
classes that name c, the refine's counts lie in [v_c - n_c, v_c + n_c];
when v_w - n_w > v_c + n_c for every other kept class c, w has strictly the
most votes in the refine as well, and the tie rule (confidences, the
model's tie order) is never consulted: the refine's label is w.  Rows
without the certificate are left to the refine itself."""
import numpy as np

from .refine import kept_votes
from .ties import winners

__all__ = ["uncertain_cells", "certified_kept_winners", "classifier_norms", "sample_norms", "UNIT_ROUNDOFF"]

UNIT_ROUNDOFF = 2.0 ** -24


def uncertain_cells(dec, x_norms, w_norms, n_features):
    """(rows, columns) int64 of the cells of the decision block ``dec``
    [m, P] (BLAS, bias added, float32) whose sign the sampled product might
    not share (module docstring); ``x_norms`` [m] and ``w_norms`` [P] are the
    float64 Euclidean norms of the block's samples and of the classifiers.
    Few cells are near 0: a row's largest tolerance screens the block first,
    and only the cells under it get their own."""
    d = max(1, int(n_features))
    gamma = d * UNIT_ROUNDOFF / (1.0 - d * UNIT_ROUNDOFF)
    x = np.asarray(x_norms, dtype=np.float64) * (2.1 * gamma)
    w = np.asarray(w_norms, dtype=np.float64)
    dec = np.asarray(dec, dtype=np.float32)
    # |v| > tol_max / (1 - 4u) implies |v| > 2.1 gamma |x| |w| + 4u |v| for every w of the row
    screen = (x * (w.max() if w.size else 0.0) / (1.0 - 4.0 * UNIT_ROUNDOFF) * (1.0 + 1e-6)).astype(np.float32)
    rows, cols = np.nonzero(np.abs(dec) <= screen[:, None])
    mag = np.abs(dec[rows, cols]).astype(np.float64)
    doubt = mag <= x[rows] * w[cols] + 4.0 * UNIT_ROUNDOFF * mag
    return rows[doubt].astype(np.int64), cols[doubt].astype(np.int64)


def certified_kept_winners(model, lookup, dec, kept, uncertain):
    """(winner class index [m], certified bool [m]) of max-wins voting among
    each row's ``kept`` classes [m, k] on the BLAS decision block ``dec``
    [m, P] of a one-bag model; ``uncertain`` the (rows, columns) of
    :func:`uncertain_cells`.  Where certified, the winner is the refine's
    label (module docstring)."""
    if model.bags != 1:
        raise ValueError("the certificate is for models with one classifier per pair")
    m, k = kept.shape
    K = model.n_classes
    votes, conf, _ = kept_votes(dec, kept, lookup=lookup, bags=1)
    in_kept = np.zeros((m, K), dtype=bool)
    np.put_along_axis(in_kept, kept.astype(np.int64), True, axis=1)
    best = winners(model, np.where(in_kept, votes, -1), conf).astype(np.int64)
    # Uncertain cells of pairs of two kept classes, counted for both classes.
    r, p = uncertain
    a, b = model.pair_a[p], model.pair_b[p]
    rel = in_kept[r, a] & in_kept[r, b]
    doubt = np.zeros((m, K), dtype=np.int64)
    np.add.at(doubt, (r[rel], a[rel]), 1)
    np.add.at(doubt, (r[rel], b[rel]), 1)
    rows = np.arange(m)
    low = votes[rows, best] - doubt[rows, best]
    high = np.where(in_kept, votes + doubt, np.iinfo(np.int64).min)
    high[rows, best] = np.iinfo(np.int64).min
    return best, low > high.max(axis=1)


def classifier_norms(W, *, rows=1 << 14):
    """float64 [rows of W]: each classifier's Euclidean norm, W read in blocks."""
    out = np.empty(W.shape[0], dtype=np.float64)
    for s in range(0, W.shape[0], rows):
        block = np.asarray(W[s:s + rows], dtype=np.float64)
        out[s:s + rows] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return out


def sample_norms(X):
    """float64 [n]: each prepared sample's Euclidean norm (dense or CSR)."""
    import scipy.sparse as sp
    if sp.issparse(X):
        X = X.tocsr().astype(np.float64)
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        return np.sqrt(sq)
    X = np.asarray(X, dtype=np.float64)
    return np.sqrt(np.einsum("ij,ij->i", X, X))
