"""Turning per-class vote counts into decisions and top-k sets.

The rule, everywhere in hsvm: classes are ranked by votes; equal votes by the
confidence term (the summed decision values, or hash margins, signed towards the
class, as scikit-learn's OneVsOneClassifier uses); still equal by class order
(the lower label first).  The confidence never overturns a vote count because it
is only consulted on equal votes."""
import numpy as np

from ..support.arrays import output_array
from ..support.native import lib, ptr
from ..support.threads import resolve_threads, run_each


def rank_classes(votes, confidence):
    """Per row, class indices from best to worst (stable lexicographic sort)."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    return np.lexsort((-confidence, -votes), axis=-1)


def top_classes(votes, confidence, k, *, threads=1, out=None):
    """Per row, the indices of the k best classes, best first ([n, k] int32);
    the order of :func:`rank_classes`, selected in C in O(K + k^2) per row,
    on up to ``threads`` threads (blocks of rows; same result); into ``out``
    (C-contiguous int32 [n, min(k, K)]) when given."""
    votes = np.ascontiguousarray(votes, dtype=np.int32)
    confidence = np.ascontiguousarray(confidence, dtype=np.float64)
    if confidence.shape != votes.shape:
        raise ValueError("votes and confidence differ in shape")
    return _select(votes.shape, k, threads, lambda s, e, K, k, out: lib.hsvm_topk(
        ptr("int32_t *", votes[s:e]), ptr("double *", confidence[s:e]), e - s, K, k, out), out=out)


def top_scores(scores, beta, k, *, threads=1):
    """Per row, the k best classes of ``scores`` [n, K] float32 plus ``beta``
    [K] summed in float64, best first ([n, k] int32): what
    :func:`top_classes` gives for zero votes and those sums as the
    confidence, without forming them (native/rank.c)."""
    scores = np.ascontiguousarray(scores, dtype=np.float32)
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    if scores.ndim != 2 or beta.shape != scores.shape[1:]:
        raise ValueError("beta must have one value per class")
    return _select(scores.shape, k, threads, lambda s, e, K, k, out: lib.hsvm_topk_scores(
        ptr("float *", scores[s:e]), ptr("double *", beta), e - s, K, k, out))


def _select(shape, k, threads, call, out=None):
    """[n, k] int32 (``out`` when given) filled by ``call(s, e, K, k,
    out_pointer)`` for blocks of rows [s, e), on threads when the selection
    is worth one (~1 ms)."""
    n, K = shape
    k = min(int(k), K)
    if k < 1:
        raise ValueError("k must be at least 1")
    out = np.empty((n, k), dtype=np.int32) if out is None else output_array("out", out, (n, k), np.int32)

    def select(span):
        s, e = span
        if e > s and call(s, e, K, k, ptr("int32_t *", out[s:e])) == -2:
            raise MemoryError("top-k selection")

    parts = max(1, min(resolve_threads(threads), n * K // (1 << 20)))
    bounds = [n * i // parts for i in range(parts + 1)]
    run_each(select, zip(bounds[:-1], bounds[1:]), threads=parts)
    return out


def best_class(votes, confidence):
    """Per row, the winning class index: the most votes, then the largest
    confidence, then the lowest index -- always one of the most voted, also
    when their confidences are all -inf (decision values that overflowed
    float32), where a bare argmax over the masked row took class 0."""
    votes = np.asarray(votes)
    confidence = np.asarray(confidence)
    top = votes == votes.max(axis=1, keepdims=True)
    best = np.argmax(np.where(top, confidence, -np.inf), axis=1)
    lost = ~top[np.arange(best.shape[0]), best]
    if lost.any():
        best[lost] = np.argmax(top[lost], axis=1)
    return best.astype(np.int32)
