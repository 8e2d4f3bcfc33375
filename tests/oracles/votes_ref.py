"""Pure-numpy reference of exact one-vs-one vote counting
(:func:`hsvm_cli.predict.exact.ovo_votes`, native/votes.c).

Written for obviousness, not speed: pair by pair in the model's pair order,
every sample at once, each step one IEEE double operation exactly as the
specification states it, so its confidences are the bits the native code must
produce (numpy's element-wise float64 additions round like C's):

    sum  = ((0.0 + d_0) + d_1) + ... + d_{bags-1}     (float32 -> float64)
    mean = sum / bags
    a wins iff 2 * #(d_k > 0) > bags, or 2 * #(d_k > 0) == bags and sum > 0
    votes[winner] += 1;  conf[a] += mean;  conf[b] -= mean   (in that order)
"""
import numpy as np


def ovo_votes_ref(dec, pair_a, pair_b, *, bags, n_classes):
    """(votes int32 [n, K], conf float64 [n, K]) of decision values
    dec float32 [n, n_pairs * bags]."""
    dec = np.asarray(dec, dtype=np.float32)
    n = dec.shape[0]
    votes = np.zeros((n, n_classes), dtype=np.int32)
    conf = np.zeros((n, n_classes), dtype=np.float64)
    rows = np.arange(n)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as in C
        _accumulate(dec, pair_a, pair_b, bags, rows, votes, conf)
    return votes, conf


def _accumulate(dec, pair_a, pair_b, bags, rows, votes, conf):
    n = dec.shape[0]
    for p, (a, b) in enumerate(zip(np.asarray(pair_a).tolist(), np.asarray(pair_b).tolist())):
        d = dec[:, p * bags:(p + 1) * bags]
        pos = np.zeros(n, dtype=np.int64)
        total = np.zeros(n, dtype=np.float64)
        for k in range(bags):
            pos += d[:, k] > np.float32(0)
            total = total + d[:, k].astype(np.float64)
        mean = total / np.float64(bags)
        a_wins = (2 * pos > bags) | ((2 * pos == bags) & (total > 0))
        np.add.at(votes, (rows, np.where(a_wins, a, b)), 1)
        conf[:, a] = conf[:, a] + mean
        conf[:, b] = conf[:, b] - mean
