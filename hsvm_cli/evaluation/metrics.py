"""Classification metrics of predicted labels and scores: accuracy, per-class
accuracy, macro-F1, the confusion matrix, and where the true class ranks among
the scores (the recall a filter keeping k classes would have)."""
import numpy as np


def label_metrics(y_true, y_pred):
    """Accuracy, mean per-class accuracy (mean recall over the true classes),
    macro-F1 (over every label that occurs in truth or prediction, F1 = 0 where
    undefined, as scikit-learn with zero_division=0) and the confusion matrix
    (rows: truth, columns: prediction)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape:
        raise ValueError("%d predictions for %d samples" % (y_pred.shape[0], y_true.shape[0]))
    counts = PairCounts()
    counts.add(y_true, y_pred)
    return counts.metrics()


class PairCounts:
    """How often each (true label, predicted label) pair occurs, added block
    by block: what :func:`label_metrics` needs, in memory that grows with the
    labels, not the samples."""

    def __init__(self):
        self._counts = {}

    def add(self, y_true, y_pred):
        if y_true.shape[0] == 0:
            return
        pairs, counts = np.unique(np.stack([y_true, y_pred], axis=1), axis=0, return_counts=True)
        for (t, p), c in zip(pairs.tolist(), counts.tolist()):
            self._counts[t, p] = self._counts.get((t, p), 0) + c

    def metrics(self, *, confusion=True):
        """:func:`label_metrics` of the pairs added; ``confusion=False``
        leaves the K x K matrix out (``hsvm eval`` without ``--confusion``:
        at K = 20,000 classes it alone took 3 GB, whatever the rows)."""
        pairs = np.array(list(self._counts), dtype=np.int64).reshape(-1, 2)
        counts = np.array(list(self._counts.values()), dtype=np.int64)
        labels = np.unique(pairs)
        t, p = np.searchsorted(labels, pairs[:, 0]), np.searchsorted(labels, pairs[:, 1])
        K = labels.shape[0]
        cm = None
        if confusion:
            cm = np.zeros((K, K), dtype=np.int64)
            np.add.at(cm, (t, p), counts)
        right = t == p
        return _metrics_of_counts(labels, np.bincount(t[right], counts[right], minlength=K),
                                  np.bincount(t, counts, minlength=K), np.bincount(p, counts, minlength=K), cm)


def _metrics_of_counts(labels, tp, support, predicted, cm):
    tp, support, predicted = (np.asarray(v, dtype=np.float64) for v in (tp, support, predicted))
    recall = np.divide(tp, support, out=np.zeros_like(tp), where=support > 0)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(tp), where=denom > 0)
    present = support > 0
    n = int(support.sum())
    report = {
        "samples": n,
        "correct": int(tp.sum()),
        # undefined without samples (an empty shard): null, not 0
        "accuracy": float(tp.sum() / n) if n else None,
        "mean_class_accuracy": float(recall[present].mean()) if present.any() else None,
        "macro_f1": float(f1.mean()) if len(labels) else None,
        "labels": [int(v) for v in labels],
        "per_class": {
            "recall": [float(v) for v in recall],
            "precision": [float(v) for v in precision],
            "f1": [float(v) for v in f1],
            "support": [int(v) for v in support],
        },
    }
    if cm is not None:
        report["confusion"] = cm.tolist()
    return report


def class_ranks(scores, index, first=None):
    """0-based rank of class ``index[i]`` in row ``i`` when classes are ordered by
    decreasing score and equal scores by class (header) order -- but class
    ``first[i]`` (a row's own label where it is at the row's maximum; -1:
    none) ahead of the classes it ties with, as the row's most probable
    class; K for index -1.  Counting the
    classes ahead of it needs no sort."""
    n, K = scores.shape
    ranks = np.full(n, K, dtype=np.int64)
    cols = np.arange(K)
    rows_per_block = max(1, (1 << 22) // max(K, 1))  # a few MB of temporaries per block
    for s in range(0, n, rows_per_block):
        S = scores[s:s + rows_per_block]
        idx = index[s:s + rows_per_block]
        known = idx >= 0
        own = S[np.arange(S.shape[0]), np.maximum(idx, 0)][:, None]
        tie_ahead = cols[None, :] < idx[:, None]
        if first is not None:
            f = np.asarray(first[s:s + rows_per_block])[:, None]
            tie_ahead = np.where(idx[:, None] == f, False, tie_ahead | (cols[None, :] == f))
        ahead = (S > own) | ((S == own) & tie_ahead)
        ranks[s:s + rows_per_block] = np.where(known, ahead.sum(axis=1), K)
    return ranks


def recall_curve(ranks, K):
    """recall[k-1] = share of samples whose class has rank < k, for k = 1..K."""
    return recall_curve_of_counts(rank_counts(ranks, K), K)


def rank_counts(ranks, K):
    """int64 [K + 1]: how many samples have each rank (K: no class of the
    header), which blocks of ranks add up to."""
    return np.bincount(ranks, minlength=K + 1)[:K + 1]


def recall_curve_of_counts(counts, K):
    """:func:`recall_curve` from :func:`rank_counts`."""
    n = int(counts.sum())
    if n == 0:
        return np.zeros(K)
    return np.cumsum(counts[:K]) / n


def default_recall_ks(K):
    """1, 2, 3, 5, 10, 20, 50, 100, 200, 500, ... below K, then K itself."""
    ks = [1, 2, 3, 5]
    step = 10
    while step < K:
        ks.extend([step, 2 * step, 5 * step])
        step *= 10
    return sorted({k for k in ks if k < K} | {K})


def subsample(n, max_points=200):
    """At most ``max_points`` indices spread evenly over 0..n-1, ends included."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))
