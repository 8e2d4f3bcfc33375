"""Exact one-vs-one scoring: decision values with BLAS, votes in C
(native/votes.c: a pair's winner is the majority of its bags, an even split
goes to the sign of the summed decision values)."""
import numpy as np
import scipy.sparse as sp

from ..support.native import lib, ptr
from ..support.timing import NullTimings

# Decision values are computed for a block of rows at a time; this bounds the
# block's [rows x classifiers] float32 matrix.
_BLOCK_BYTES = 64 << 20


def ovo_votes(dec, pair_a, pair_b, *, bags, n_classes):
    """Votes [n, K] int32 and confidences [n, K] float64 from decision values
    [n, P*bags]: votes[i, c] counts the pairs class c wins, conf[i, c] sums the
    bag-mean decision values of c's pairs signed towards c."""
    dec = np.ascontiguousarray(dec, dtype=np.float32)
    n = dec.shape[0]
    n_pairs = pair_a.shape[0]
    if dec.ndim != 2 or dec.shape[1] != n_pairs * bags:
        raise ValueError("decision matrix has %s columns, expected %d" % (dec.shape[1:], n_pairs * bags))
    pair_a = np.ascontiguousarray(pair_a, dtype=np.int32)
    pair_b = np.ascontiguousarray(pair_b, dtype=np.int32)
    votes = np.empty((n, n_classes), dtype=np.int32)
    conf = np.empty((n, n_classes), dtype=np.float64)
    if n == 0:
        return votes, conf
    rc = lib.hsvm_ovo_votes(ptr("float *", dec), n, n_pairs, bags,
                            ptr("int32_t *", pair_a), ptr("int32_t *", pair_b), n_classes,
                            ptr("int32_t *", votes), ptr("double *", conf))
    if rc != 0:
        raise ValueError("pair index names a class outside 0..%d" % (n_classes - 1))
    return votes, conf


class ExactScorer:
    """Scores every classifier of a model on blocks of prepared samples
    (:func:`hsvm_cli.preprocess.prepare`)."""

    def __init__(self, model):
        self.model = model
        model.verify()
        self.W = np.asarray(model.W, dtype=np.float32)
        self.b = np.asarray(model.b, dtype=np.float32)
        self._WT = None

    def _wt(self):
        # Sparse x dense products run row by row over the nonzeros of X; with W
        # transposed contiguously each nonzero adds one contiguous row.
        if self._WT is None:
            self._WT = np.ascontiguousarray(self.W.T)
        return self._WT

    def block_rows(self):
        """Samples per block, so that a block's decision values stay near 64 MB."""
        return int(max(1, min(8192, _BLOCK_BYTES // max(1, 4 * self.W.shape[0]))))

    def decision(self, X):
        """Decision values [n, P*bags] float32 of the rows of X."""
        if sp.issparse(X):
            X = X.tocsr().astype(np.float32, copy=False)
            dec = np.asarray(X @ self._wt())
        else:
            X = np.asarray(X, dtype=np.float32)
            dec = X @ self.W.T
        dec += self.b
        return dec

    def decision_blocks(self, X, *, rows=None, timings=None):
        """(first row, decision values) of consecutive blocks of ``rows``
        samples (default :meth:`block_rows`), the time going to ``score``."""
        t = timings or NullTimings()
        step = rows or self.block_rows()
        for s in range(0, X.shape[0], step):
            with t.phase("score"):
                dec = self.decision(X[s:s + step])
            yield s, dec

    def votes(self, X, timings=None):
        """Votes and confidences [n, K] for the rows of X (see :func:`ovo_votes`)."""
        t = timings or NullTimings()
        m = self.model
        n = X.shape[0]
        votes = np.empty((n, m.n_classes), dtype=np.int32)
        conf = np.empty((n, m.n_classes), dtype=np.float64)
        for s, dec in self.decision_blocks(X, timings=t):
            with t.phase("vote"):
                votes[s:s + dec.shape[0]], conf[s:s + dec.shape[0]] = ovo_votes(
                    dec, m.pair_a, m.pair_b, bags=m.bags, n_classes=m.n_classes)
        return votes, conf
