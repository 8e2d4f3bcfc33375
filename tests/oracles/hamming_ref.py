"""Pure-numpy reference of the Hamming kernels in ``hsvm_cli.hamming``.

Written for obviousness, not speed: it follows the specification line by line
and is what the C kernels are tested against.  Same arguments and outputs as
:func:`hsvm_cli.hashing.hamming.hamming_distances` and :func:`hsvm_cli.hashing.hamming.hamming_vote`
(minus ``threads`` / ``kernel``), and only basic validation.
"""
import numpy as np

_BYTE_POPCOUNT = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)


def popcount64_table(words):
    """Per-element popcount of a uint64 array through a byte lookup table."""
    words = np.ascontiguousarray(words, dtype=np.uint64)
    as_bytes = words.view(np.uint8).reshape(words.shape + (8,))
    return _BYTE_POPCOUNT[as_bytes].sum(axis=-1, dtype=np.uint8)


def popcount64(words):
    """Per-element popcount of a uint64 array (same shape, small int dtype):
    ``np.bitwise_count`` (numpy >= 2.0) when present, else the byte table."""
    words = np.asarray(words, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    return popcount64_table(words)


def _words(xcodes, ccodes, bits):
    if bits <= 0 or bits % 64:
        raise ValueError("bits must be a positive multiple of 64, got %r" % (bits,))
    words = bits // 64
    if words > min(xcodes.shape[1], ccodes.shape[1]):
        raise ValueError("bits=%d needs %d words per code" % (bits, words))
    return words


def hamming_distances_ref(xcodes, ccodes, *, bits):
    """d[i, j] = popcount(x_i XOR c_j) over the first ``bits // 64`` words, int32 [n, m]."""
    xcodes = np.asarray(xcodes, dtype=np.uint64)
    ccodes = np.asarray(ccodes, dtype=np.uint64)
    words = _words(xcodes, ccodes, bits)
    x = xcodes[:, :words]
    c = ccodes[:, :words]
    # Samples per step so the [chunk, m, words] XOR stays around 64 MB.
    chunk = max(1, (8 << 20) // max(1, c.shape[0] * words))
    out = np.empty((x.shape[0], c.shape[0]), dtype=np.int32)
    for i0 in range(0, x.shape[0], chunk):
        xor = x[i0:i0 + chunk, None, :] ^ c[None, :, :]
        out[i0:i0 + chunk] = popcount64(xor).sum(axis=-1, dtype=np.int64)
    return out


def hamming_vote_ref(xcodes, ccodes, thresholds, pair_a, pair_b, *, bags, n_classes, bits):
    """Fused range-query voting, by the definition.

    Classifier j = p * bags + k is positive iff d_ij < thresholds[j].  For pair p,
    cnt = positives, D = sum of d, T = sum of thresholds over its bags; class
    pair_a[p] wins if 2*cnt > bags or (2*cnt == bags and D < T), else pair_b[p].
    Returns int32 (votes, dsum), each [n, n_classes]: votes counts pairs won;
    dsum[i, pair_a[p]] += D and dsum[i, pair_b[p]] -= D.
    """
    pair_a = np.asarray(pair_a, dtype=np.int64)
    pair_b = np.asarray(pair_b, dtype=np.int64)
    thresholds = np.asarray(thresholds, dtype=np.int64)
    n_pairs = pair_a.shape[0]
    if thresholds.shape != (n_pairs * bags,) or np.asarray(ccodes).shape[0] != n_pairs * bags:
        raise ValueError("need n_pairs * bags classifiers and thresholds")
    d = hamming_distances_ref(xcodes, ccodes, bits=bits).astype(np.int64)
    n = d.shape[0]
    d = d.reshape(n, n_pairs, bags)
    positive = d < thresholds.reshape(1, n_pairs, bags)
    cnt = positive.sum(axis=2)
    D = d.sum(axis=2)
    T = thresholds.reshape(n_pairs, bags).sum(axis=1)[None, :]
    a_wins = (2 * cnt > bags) | ((2 * cnt == bags) & (D < T))
    winner = np.where(a_wins, pair_a[None, :], pair_b[None, :])

    votes = np.zeros((n, n_classes), dtype=np.int64)
    dsum = np.zeros((n, n_classes), dtype=np.int64)
    rows = np.broadcast_to(np.arange(n)[:, None], (n, n_pairs))
    np.add.at(votes, (rows, winner), 1)
    np.add.at(dsum, (rows, np.broadcast_to(pair_a[None, :], (n, n_pairs))), D)
    np.add.at(dsum, (rows, np.broadcast_to(pair_b[None, :], (n, n_pairs))), -D)
    return votes.astype(np.int32), dsum.astype(np.int32)
