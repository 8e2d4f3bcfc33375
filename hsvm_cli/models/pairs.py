"""Pair order: which class pairs a one-vs-one model holds, and where.

``train-ovo`` writes every pair a < b of class indices in a-major order
(:func:`canonical_pairs`); a model file may hold another order or orientation
(pair (b, a) deciding for b on a positive value), which :class:`PairLookup`
resolves."""
import numpy as np


def canonical_pairs(n_classes):
    """All pairs a < b of ``range(n_classes)`` in a-major order, as int32
    arrays (pair_a, pair_b).

    Built in the arrays' own 8 bytes a pair plus 4 of scratch, where
    ``np.triu_indices`` takes a K x K mask and int64 indices: 24 bytes a
    pair more, allocated before a caller can weigh the pairs' memory."""
    K = int(n_classes)
    if K < 2:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    runs = np.arange(K - 1, 0, -1, dtype=np.int64)          # pairs led by a = 0 .. K-2
    starts = np.cumsum(runs) - runs
    a = np.repeat(np.arange(K - 1, dtype=np.int32), runs)
    # b counts up by one within a run and restarts at a + 1 with the next
    step = np.ones(a.shape[0], dtype=np.int32)
    step[starts[1:]] = np.arange(1, K - 1, dtype=np.int32) + 2 - K
    return a, np.cumsum(step, dtype=np.int32)


def canonical_pair_id(A, B, n_classes):
    """Position of pair (A, B), A < B, in :func:`canonical_pairs` order."""
    return A * n_classes - (A * (A + 1)) // 2 + (B - A - 1)


def check_complete_pairs(pair_a, pair_b, n_classes):
    """None when the pairs name every unordered pair of ``n_classes`` classes
    exactly once (in any order and orientation), else the reason they do not."""
    a = np.asarray(pair_a, dtype=np.int64)
    b = np.asarray(pair_b, dtype=np.int64)
    K = int(n_classes)
    if a.shape != b.shape or a.ndim != 1:
        return "pair index columns differ in shape"
    if a.shape[0] != K * (K - 1) // 2:
        return "%d pairs for %d classes, expected every pair once: %d" % (a.shape[0], K, K * (K - 1) // 2)
    if a.size and (a.min() < 0 or b.min() < 0 or a.max() >= K or b.max() >= K):
        return "pair index names a class outside 0..%d" % (K - 1)
    if np.any(a == b):
        return "a pair opposes a class to itself"
    ca, cb = canonical_pairs(K)
    if np.array_equal(a, ca) and np.array_equal(b, cb):
        return None
    keys = np.sort(np.minimum(a, b) * K + np.maximum(a, b))
    if np.any(keys[1:] == keys[:-1]):
        return "a pair of classes appears twice"
    return None


class PairLookup:
    """Maps class pairs (a < b) to pair ids and orientation (+1 when the model's
    pair is (a, b), -1 when it is (b, a))."""

    def __init__(self, pair_a, pair_b, n_classes):
        self.K = int(n_classes)
        a = np.asarray(pair_a, dtype=np.int64)
        b = np.asarray(pair_b, dtype=np.int64)
        ca, cb = canonical_pairs(self.K)
        self.canonical = a.shape == ca.shape and np.array_equal(a, ca) and np.array_equal(b, cb)
        if not self.canonical:
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            keys = lo * self.K + hi
            self.order = np.argsort(keys, kind="stable")
            self.keys = keys[self.order]
            self.sign = np.where(a < b, 1, -1).astype(np.int8)

    def table(self):
        """(pair_id, sign) [K*K]: for classes a < b at a*K + b, the model's
        classifier of the pair (-1: none) and its orientation; built once."""
        if getattr(self, "_table", None) is None:
            K = self.K
            A, B = canonical_pairs(K)
            pid, sign = self.lookup(A, B)
            ids = np.full(K * K, -1, dtype=np.int64)
            signs = np.ones(K * K, dtype=np.int8)
            ids[A * K + B] = pid
            if sign is not None:
                signs[A * K + B] = sign
            self._table = (ids, signs)
        return self._table

    def lookup(self, A, B):
        """Pair ids and orientation for class index arrays A < B (same shape);
        orientation is None for a canonical model (always +1).  Raises
        ValueError if the model has no classifier for some pair."""
        if self.canonical:
            return canonical_pair_id(A, B, self.K), None
        q = A.astype(np.int64) * self.K + B
        pos = np.searchsorted(self.keys, q)
        pos_c = np.minimum(pos, self.keys.shape[0] - 1)
        if np.any(self.keys[pos_c] != q):
            raise ValueError("the model has no classifier for some pair of kept classes")
        pid = self.order[pos_c]
        return pid, self.sign[pid]
