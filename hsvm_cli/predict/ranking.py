"""Turning per-class vote counts into decisions and top-k sets.

The rule, everywhere in hsvm: classes are ranked by votes; equal votes by the
confidence term (the summed decision values, or hash margins, signed towards the
class, as scikit-learn's OneVsOneClassifier uses); still equal by class order
(the lower label first).  The confidence never overturns a vote count because it
is only consulted on equal votes."""
import numpy as np

from ..support.native import lib, ptr


def rank_classes(votes, confidence):
    """Per row, class indices from best to worst (stable lexicographic sort)."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    return np.lexsort((-confidence, -votes), axis=-1)


def top_classes(votes, confidence, k):
    """Per row, the indices of the k best classes, best first ([n, k] int32);
    the order of :func:`rank_classes`, selected in C in O(K + k^2) per row."""
    votes = np.ascontiguousarray(votes, dtype=np.int32)
    confidence = np.ascontiguousarray(confidence, dtype=np.float64)
    n, K = votes.shape
    if confidence.shape != (n, K):
        raise ValueError("votes and confidence differ in shape")
    k = min(int(k), K)
    if k < 1:
        raise ValueError("k must be at least 1")
    out = np.empty((n, k), dtype=np.int32)
    if n:
        rc = lib.hsvm_topk(ptr("int32_t *", votes), ptr("double *", confidence), n, K, k, ptr("int32_t *", out))
        if rc == -2:
            raise MemoryError("top-k selection")
    return out


def best_class(votes, confidence):
    """Per row, the winning class index."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    best_votes = votes.max(axis=1, keepdims=True)
    conf = np.where(votes == best_votes, confidence, -np.inf)
    return np.argmax(conf, axis=1).astype(np.int32)
