"""Retrieval quality of binary codes: how many of a reference code's nearest
neighbours another code finds (the measure of bench/bench_circulant.py for
learned circulant hashes, after Gong & Lazebnik's ITQ evaluation).

recall@R of codes F against reference codes G: for each query q, the k
database items nearest q in G's Hamming distance (ties broken by Euclidean
distance between the samples, so the set is well defined) form the truth;
the R items nearest q in F's Hamming distance (ties broken at random,
seeded) are retrieved; recall is |retrieved & truth| / k, averaged over the
queries."""
import numpy as np

from ..hashing.hamming import hamming_distances
from ..support.lazy_sparse import sp


def pack_bits_padded(signs):
    """uint64 codes of +1/-1 or boolean [n, L] (1 where positive), zero-padded
    to whole 64-bit words: Hamming distances are unchanged by the padding."""
    s = np.asarray(signs) > 0
    n, L = s.shape
    words = (L + 63) // 64
    pad = np.zeros((n, words * 64), dtype=bool)
    pad[:, :L] = s
    return np.ascontiguousarray(np.packbits(pad, axis=1, bitorder="little")).view("<u8").reshape(n, words)


def hamming_ranking(query_codes, db_codes, *, ties, top):
    """Indices [nq, top] of the database items nearest each query in Hamming
    distance (all words of the codes), ties broken by ``ties`` [nq, ndb]
    (smaller first)."""
    words = query_codes.shape[1]
    dist = hamming_distances(np.ascontiguousarray(query_codes), np.ascontiguousarray(db_codes), bits=words * 64)
    key = dist.astype(np.float64) + ties / (1.0 + float(np.max(ties)))
    part = np.argpartition(key, top - 1, axis=1)[:, :top]
    order = np.argsort(np.take_along_axis(key, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def retrieval_recall(ref_query, ref_db, query, db, *, X_query, X_db, k=10, R=100, seed=0):
    """Recall@R (module docstring) of the codes ``query``/``db`` (+1/-1 or
    boolean [n, L]) against the reference codes ``ref_query``/``ref_db``'s
    ``k`` nearest neighbours; ``X_query``/``X_db`` the samples (dense or
    sparse) for the reference's tie-break.  Returns the mean recall."""
    Xq = np.asarray(X_query.toarray() if sp.issparse(X_query) else X_query, dtype=np.float64)
    Xd = np.asarray(X_db.toarray() if sp.issparse(X_db) else X_db, dtype=np.float64)
    eu = (np.sum(Xq ** 2, axis=1)[:, None] - 2.0 * Xq @ Xd.T + np.sum(Xd ** 2, axis=1)[None, :])
    eu = np.maximum(eu, 0.0)
    truth = hamming_ranking(pack_bits_padded(ref_query), pack_bits_padded(ref_db), ties=eu, top=k)
    rnd = np.random.default_rng(seed).random(eu.shape)
    got = hamming_ranking(pack_bits_padded(query), pack_bits_padded(db), ties=rnd, top=R)
    hits = [len(np.intersect1d(truth[i], got[i], assume_unique=True)) for i in range(truth.shape[0])]
    return float(np.mean(hits)) / k
