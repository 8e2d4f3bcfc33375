"""Turning per-class vote counts into decisions and top-k sets.

The rule, everywhere in hsvm: classes are ranked by votes; equal votes by the
confidence term (the summed decision values, or hash margins, signed towards the
class, as scikit-learn's OneVsOneClassifier uses); still equal by class order
(the lower label first).  The confidence never overturns a vote count because it
is only consulted on equal votes."""
import numpy as np

from ..support.native import lib, ptr
from ..support.threads import resolve_threads, run_each


def rank_classes(votes, confidence):
    """Per row, class indices from best to worst (stable lexicographic sort)."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    return np.lexsort((-confidence, -votes), axis=-1)


def top_classes(votes, confidence, k, *, threads=1):
    """Per row, the indices of the k best classes, best first ([n, k] int32);
    the order of :func:`rank_classes`, selected in C in O(K + k^2) per row,
    on up to ``threads`` threads (blocks of rows; same result)."""
    votes = np.ascontiguousarray(votes, dtype=np.int32)
    confidence = np.ascontiguousarray(confidence, dtype=np.float64)
    n, K = votes.shape
    if confidence.shape != (n, K):
        raise ValueError("votes and confidence differ in shape")
    k = min(int(k), K)
    if k < 1:
        raise ValueError("k must be at least 1")
    out = np.empty((n, k), dtype=np.int32)

    def select(span):
        s, e = span
        if e > s and lib.hsvm_topk(ptr("int32_t *", votes[s:e]), ptr("double *", confidence[s:e]), e - s, K, k,
                                   ptr("int32_t *", out[s:e])) == -2:
            raise MemoryError("top-k selection")

    # a thread per block of rows when the selection is worth one (~1 ms or more)
    parts = max(1, min(resolve_threads(threads), n * K // (1 << 20)))
    bounds = [n * i // parts for i in range(parts + 1)]
    run_each(select, zip(bounds[:-1], bounds[1:]), threads=parts)
    return out


def best_class(votes, confidence):
    """Per row, the winning class index."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    best_votes = votes.max(axis=1, keepdims=True)
    conf = np.where(votes == best_votes, confidence, -np.inf)
    return np.argmax(conf, axis=1).astype(np.int32)
