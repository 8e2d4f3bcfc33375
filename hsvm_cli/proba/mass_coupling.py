"""Pairwise coupling over the classes that carry probability mass, in
O(K² + k³) per sample instead of the O(K³) of coupling all K classes.

Wu, Lin & Weng's method 2 (:func:`hsvm_cli.proba.estimators.couple`) solves
min_p sum_i sum_{j≠i} (r_ji p_i − r_ij p_j)² subject to sum p = 1.  With K in
the hundreds nearly all of the mass sits on a few classes, and the K³ solve is
spent on classes whose probability is negligible.  Per sample:

1. the winner w of the exact votes (the model's decision rule) is certain to
   carry mass; by its pair with w alone, class c's probability relative to
   w's is r_cw / r_wc (the pair's own estimate of p_c / p_w);
2. S = w and the classes with r_cw / r_wc >= ``delta`` (default 1e-3: those
   that could hold a thousandth of w's probability), at most ``k_max``
   (default 64) of them, the largest ratios first;
3. the classes of S are coupled exactly (method 2 on the |S| x |S| block,
   O(k³));
4. every other class c gets the value that minimises the same objective with
   p_S held fixed and the other small values neglected, one block coordinate
   step: p_c = sum_{s in S} r_sc r_cs p_s / sum_{s≠c} r_sc² (the sum over all
   K classes, O(K) per class);
5. the vector is renormalised.

The pairwise probabilities themselves, r for every pair, cost O(K²) per
sample and are needed anyway.  With K <= k_max every class is coupled: the
result is exactly method 2 over all classes (what ``svm-predict -b 1``
computes).  On omniglot-242 the held-out NLL and ECE are within a few
hundredths of coupling all 242 classes (BENCHMARKS.md)."""
import weakref

import numpy as np

from ..support.native import lib, ptr
from . import estimators as est

__all__ = ["couple_mass", "K_MAX", "DELTA", "PairTable"]

K_MAX = 64
DELTA = 1e-3


class PairTable:
    """Where the pair of classes (c, d) sits in a model's pair list, for any
    order and orientation: ``pid[c, d]`` and ``c_is_a[c, d]`` (True when c
    is the pair's class a), and the class-by-pair incidence matrices."""

    def __init__(self, pair_a, pair_b, n_classes):
        K = int(n_classes)
        a = np.asarray(pair_a, dtype=np.int64)
        b = np.asarray(pair_b, dtype=np.int64)
        P = a.shape[0]
        self.K, self.P = K, P
        self.pid = np.zeros((K, K), dtype=np.int64)
        self.pid[a, b] = np.arange(P)
        self.pid[b, a] = np.arange(P)
        self.c_is_a = np.zeros((K, K), dtype=bool)
        self.c_is_a[a, b] = True
        # copies: a model's pair arrays may be views of its memory-mapped file, which the cached table
        # would keep mapped (replaced or deleted) after the model is gone
        self.a, self.b = a.copy(), b.copy()

    def den(self, r):
        """[n, K]: sum over the pairs of class c of r_dc^2 (d the other
        class) -- the block coordinate step's denominators, in C
        (native/coupling.c)."""
        r = np.ascontiguousarray(r, dtype=np.float64)
        n = r.shape[0]
        out = np.empty((n, self.K))
        if n and lib.hsvm_coupling_den(ptr("double *", r), n, self.P, ptr("int64_t *", self.a),
                                       ptr("int64_t *", self.b), self.K, ptr("double *", out)) != 0:
            raise ValueError("a pair names a class outside 0..%d" % (self.K - 1))
        return out

    _cache = {}

    @classmethod
    def cached(cls, pair_a, pair_b, n_classes):
        """The table of a model's pairs, made once per pair arrays (prediction
        asks for it chunk after chunk)."""
        key = (id(pair_a), id(pair_b), int(n_classes), int(np.asarray(pair_a).shape[0]))
        hit = cls._cache.get(key)
        # the arrays by weak reference (an id alone may be a dead array's, reused): the cache keeps no
        # model's arrays, nor the mapped file they may be views of, alive
        if hit is None or hit[0]() is not pair_a or hit[1]() is not pair_b:
            if len(cls._cache) > 8:
                cls._cache.clear()
            table = cls(pair_a, pair_b, n_classes)
            try:
                hit = cls._cache[key] = (weakref.ref(pair_a), weakref.ref(pair_b), table)
            except TypeError:       # a list: not cached
                return table
        return hit[2]

    def r_of(self, r, rows, c, d):
        """r_cd = P(c | c or d) of the given rows (arrays broadcast together),
        from r [n, P] = P(pair_a | pair)."""
        p = self.pid[c, d]
        v = r[rows, p]
        return np.where(self.c_is_a[c, d], v, 1.0 - v)


def couple_mass(r, winner, table, *, k_max=K_MAX, delta=DELTA):
    """Class probabilities [n, K] from the pairwise probabilities ``r``
    [n, P] (P(pair_a | pair), the model's pairs) of n samples whose vote
    winners are ``winner`` [n], by the procedure of the module docstring."""
    r = np.asarray(r, dtype=np.float64)
    n, K = r.shape[0], table.K
    rows = np.arange(n)[:, None]
    if K <= k_max:
        cls = np.arange(K)
        R = table.r_of(r, rows[:, :, None], cls[None, :, None], cls[None, None, :])
        return est.couple(R)
    w = np.asarray(winner, dtype=np.int64)[:, None]
    cls = np.arange(K)[None, :]
    r_cw = table.r_of(r, rows, cls, w)
    ratio = r_cw / np.maximum(1.0 - r_cw, 1e-300)
    ratio[np.arange(n), w[:, 0]] = np.inf                       # the winner first
    order = np.argsort(-ratio, axis=1, kind="stable")[:, :k_max]
    valid = np.take_along_axis(ratio, order, axis=1) >= delta
    width = int(valid.sum(axis=1).max())
    S, valid = order[:, :width], valid[:, :width]
    RS = table.r_of(r, rows[:, :, None], S[:, :, None], S[:, None, :])
    pS = est.couple(RS, valid=valid)
    # One block coordinate step for the other classes (p_S fixed).
    rs = r[rows[:, :, None], table.pid[S[:, :, None], cls[:, None, :]]]    # [n, k, K]
    us = rs * (1.0 - rs)                                                   # r_sc r_cs of each pair
    num = np.einsum("nkc,nk->nc", us, pS)
    den = table.den(r)
    p = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    in_s = np.zeros((n, K), dtype=bool)
    np.put_along_axis(in_s, S, valid, axis=1)
    p = np.where(in_s, 0.0, p)
    np.put_along_axis(p, S, np.where(valid, pS, np.take_along_axis(p, S, axis=1)), axis=1)
    p = np.maximum(p, 0.0)
    return p / p.sum(axis=1, keepdims=True)
