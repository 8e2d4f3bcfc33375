"""Exact one-vs-one scoring: decision values from products in C whose bits
do not depend on the block or thread (native/products.c), votes in C
(native/votes.c: a pair's winner is the majority of its bags, an even split
goes to the sign of the summed decision values)."""
import numpy as np

from ..support.kernels import kernel_error, kernel_id
from ..support.lazy_sparse import sp
from ..support.native import float_vector_ptr, lib, ptr
from ..support.timing import NullTimings
from .products import SparseRowProducts, products

# Decision values are computed for a block of rows at a time; this bounds the
# block's [rows x classifiers] float32 matrix.
_BLOCK_BYTES = 64 << 20
# ... except that every block reads all of W once (the products pack it), 4
# bytes per multiply-add over the block's rows: below ~128 rows that read,
# not the arithmetic, is the cost (K = 1,000, d = 1,024: 33 rows of 64 MB
# took 20.3 s for 2,000 samples, 128 rows 9.0 s).  So a block keeps at
# least MIN_BLOCK_ROWS rows while that takes at most _MAX_BLOCK_BYTES.
MIN_BLOCK_ROWS = 128
_MAX_BLOCK_BYTES = 256 << 20


def block_rows_for(n_classifiers):
    """Samples per block of decision values for a model of ``n_classifiers``
    (rows x classifiers float32): near 64 MB, at least 128 rows within 256 MB."""
    row = 4 * max(1, n_classifiers)
    rows = max(_BLOCK_BYTES // row, min(MIN_BLOCK_ROWS, _MAX_BLOCK_BYTES // row))
    return int(max(1, min(8192, rows)))


def ovo_votes(dec, pair_a, pair_b, *, bags, n_classes, bias=None, kernel=None, add_to=None):
    """Votes [n, K] int32 and confidences [n, K] float64 from decision values
    [n, P*bags]: votes[i, c] counts the pairs class c wins, conf[i, c] sums the
    bag-mean decision values of c's pairs signed towards c, in pair order.

    ``bias``: optional float32 [P*bags]; then ``dec`` holds the products w.x
    and the decision values are ``dec + bias`` in float32, the same bits as
    ``dec += bias`` without that pass over ``dec`` (which is left unchanged).

    ``kernel``: the native code path (:mod:`hsvm_cli.support.kernels`; None
    defers to HSVM_KERNEL, then the best the CPU has).  Every path, and every
    pair order, gives the same bits; train-ovo's canonical order is the fast
    one (native/votes_runs.h).

    ``add_to``: (votes, conf) of the same rows to add to, not fresh arrays:
    the pairs of a model taken in consecutive ranges, one call each, give
    the bits of one call over all of them (native/hsvm_votes.h)."""
    kid = kernel_id(kernel)
    dec = np.ascontiguousarray(dec, dtype=np.float32)
    n = dec.shape[0]
    n_pairs = pair_a.shape[0]
    if dec.ndim != 2 or dec.shape[1] != n_pairs * bags:
        raise ValueError("decision matrix has %s columns, expected %d" % (dec.shape[1:], n_pairs * bags))
    pair_a = np.ascontiguousarray(pair_a, dtype=np.int32)
    pair_b = np.ascontiguousarray(pair_b, dtype=np.int32)
    if pair_b.shape != pair_a.shape:
        raise ValueError("pair_a and pair_b differ in shape: %s, %s" % (pair_a.shape, pair_b.shape))
    bias, bias_ptr = float_vector_ptr("bias", bias, dec.shape[1])
    if add_to is None:
        votes = np.empty((n, n_classes), dtype=np.int32)
        conf = np.empty((n, n_classes), dtype=np.float64)
        count = lib.hsvm_ovo_votes
    else:
        votes, conf = add_to
        for a, dtype in ((votes, np.int32), (conf, np.float64)):
            if a.dtype != dtype or a.shape != (n, n_classes) or not a.flags.c_contiguous:
                raise ValueError("add_to must be C-contiguous int32 votes and float64 confidences [%d, %d]"
                                 % (n, n_classes))
        count = lib.hsvm_ovo_votes_add
    if n == 0:
        return votes, conf
    rc = count(ptr("float *", dec), bias_ptr, n, n_pairs, bags,
               ptr("int32_t *", pair_a), ptr("int32_t *", pair_b), n_classes,
               ptr("int32_t *", votes), ptr("double *", conf), kid)
    if rc == lib.HSVM_VOTES_ENOMEM:
        raise MemoryError("vote counting: out of memory")
    if rc in (lib.HSVM_CPU_EBADNAME, lib.HSVM_CPU_EUNAVAILABLE):
        raise kernel_error(rc, kernel)
    if rc != 0:
        raise ValueError("pair index names a class outside 0..%d" % (n_classes - 1))
    return votes, conf


class ExactScorer:
    """Scores every classifier of a model on blocks of prepared samples
    (:func:`hsvm_cli.preprocess.prepare`)."""

    def __init__(self, model, *, threads=None, kernel=None):
        self.model = model
        # checked before products() first reads it (predict_file starts the
        # check on another thread while it parses, and products() waits)
        self.W = np.asarray(model.W, dtype=np.float32)
        self.b = np.asarray(model.b, dtype=np.float32)
        self.threads = threads
        self.kernel = kernel
        # Sparse rows run over their nonzeros; with W transposed contiguously
        # each nonzero reads one contiguous row of classifiers -- once enough
        # rows have come for the copy to pay (a one-line input reads W's rows)
        self._sparse = SparseRowProducts(self.W, before_transpose=self._before_transpose)

    def _before_transpose(self):
        self.model.verify()
        # a second copy of W, as large as the model: checked before it is
        # made (a 5.6 GB model took 10.8 GB and failed late under a limit)
        from ..support.memory import check_allocation
        check_allocation(4 * int(self.W.shape[0]) * int(self.W.shape[1]),
                         "sparse samples' exact scoring: W transposed, %d x %d float32 (as large as the model)"
                         % (self.W.shape[1], self.W.shape[0]))

    def block_rows(self):
        """Samples per block (:func:`block_rows_for`)."""
        return block_rows_for(self.W.shape[0])

    def products(self, X, out=None):
        """Products w.x [n, P*bags] float32 of the rows of X, without the bias.
        ``out``: optional C-contiguous float32 buffer of at least n rows, filled
        (for dense X) instead of a fresh array, which saves the page faults of
        a new block of up to 64 MB."""
        self.model.verify()
        if sp.issparse(X):
            return self._sparse(X, threads=self.threads, kernel=self.kernel)
        return products(X, self.W, out=out, threads=self.threads, kernel=self.kernel)

    def decision(self, X):
        """Decision values [n, P*bags] float32 of the rows of X."""
        dec = self.products(X)
        dec += self.b
        return dec

    def decision_blocks(self, X, *, rows=None, timings=None, reuse=False):
        """(first row, decision values) of consecutive blocks of ``rows``
        samples (default :meth:`block_rows`), the time going to ``score``.
        ``reuse``: every block is written into one buffer (dense X), valid
        until the next block is asked for: no page faults of a fresh block
        each time."""
        t = timings or NullTimings()
        n = X.shape[0]
        step = rows or self.block_rows()
        buf = np.empty((min(step, n), self.W.shape[0]), dtype=np.float32) \
            if reuse and n and not sp.issparse(X) else None
        for s in range(0, n, step):
            with t.phase("score"):
                if buf is None:
                    dec = self.decision(X[s:s + step])
                else:
                    dec = self.products(X[s:s + step], out=buf)
                    dec += self.b
            yield s, dec

    def product_blocks(self, X, timings=None):
        """(first row, products w.x without the bias) of consecutive blocks of
        :meth:`block_rows` samples, each block's written into one reused
        buffer (dense X) -- valid until the next block is asked for; the time
        goes to ``score``."""
        t = timings or NullTimings()
        n = X.shape[0]
        step = self.block_rows()
        buf = None if sp.issparse(X) or n == 0 else np.empty((min(step, n), self.W.shape[0]), dtype=np.float32)
        for s in range(0, n, step):
            with t.phase("score"):
                prod = self.products(X[s:s + step], out=buf)
            yield s, prod

    def kept_votes(self, X, kept, *, lookup, valid=None):
        """Votes, confidences [n, K] and classes in use [n] among each row's
        kept classes [n, k] (:func:`hsvm_cli.predict.refine.kept_votes`),
        from the products of every classifier, the bias added as the votes
        read them."""
        from .refine import kept_votes
        m = self.model
        n = X.shape[0]
        if valid is None and kept.shape[1] == m.n_classes and lookup.canonical:
            # Every row keeps every class (-k K): exact prediction's own votes,
            # the same sums in the same (canonical) pair order, through the
            # vote kernel that reads all pairs at memory speed -- where the
            # kept-class kernel, looking each pair up, cost a third more than
            # --exact at K = 1,500
            votes, conf = self.votes(X)
            return votes, conf, np.full(n, m.n_classes, dtype=np.int64)
        votes = np.empty((n, m.n_classes), dtype=np.int32)
        conf = np.empty((n, m.n_classes), dtype=np.float64)
        nvalid = np.empty(n, dtype=np.int64)
        for s, prod in self.product_blocks(X):
            e = s + prod.shape[0]
            votes[s:e], conf[s:e], nvalid[s:e] = kept_votes(
                prod, kept[s:e], lookup=lookup, bags=m.bags, valid=None if valid is None else valid[s:e], bias=self.b)
        return votes, conf, nvalid

    def votes(self, X, timings=None, kernel=None):
        """Votes and confidences [n, K] for the rows of X (see :func:`ovo_votes`).

        Each block's products go to one reused buffer and the bias is added by
        the vote kernel as it reads them: the same bits as voting on
        :meth:`decision`, with one pass over the block instead of three."""
        t = timings or NullTimings()
        m = self.model
        n = X.shape[0]
        if n and not sp.issparse(X) and self.block_rows() < MIN_BLOCK_ROWS:
            return self._votes_by_pair_ranges(X, t, kernel)
        votes = np.empty((n, m.n_classes), dtype=np.int32)
        conf = np.empty((n, m.n_classes), dtype=np.float64)
        for s, prod in self.product_blocks(X, timings=t):
            e = s + prod.shape[0]
            with t.phase("vote"):
                votes[s:e], conf[s:e] = ovo_votes(prod, m.pair_a, m.pair_b, bags=m.bags, n_classes=m.n_classes,
                                                  bias=self.b, kernel=kernel)
        return votes, conf

    def _votes_by_pair_ranges(self, X, t, kernel):
        """:meth:`votes` of dense rows for a model whose block of decision
        values would hold fewer than MIN_BLOCK_ROWS rows (more than 1,024
        classes, one bag): every block reads all of W, and at K = 3,000 (4.5 M
        pairs, 14 rows a block) that read was most of the time -- 23 s where
        the multiply-adds need about 10.  Here blocks of MIN_BLOCK_ROWS rows
        go through the pairs in ranges of _BLOCK_BYTES of decision values,
        the votes added range by range: a product depends on its sample and
        classifier only, and the sums run on in pair order, so the bits are
        those of whole blocks."""
        m = self.model
        m.verify()
        n, K, bags = X.shape[0], m.n_classes, m.bags
        rows = min(n, MIN_BLOCK_ROWS)
        pairs = max(1, _BLOCK_BYTES // (4 * rows * bags))
        votes = np.zeros((n, K), dtype=np.int32)
        conf = np.zeros((n, K), dtype=np.float64)
        buf = np.empty(rows * pairs * bags, dtype=np.float32)
        for s in range(0, n, rows):
            e = min(n, s + rows)
            for p0 in range(0, m.n_pairs, pairs):
                p1 = min(m.n_pairs, p0 + pairs)
                c0, c1 = p0 * bags, p1 * bags
                with t.phase("score"):
                    prod = products(X[s:e], self.W[c0:c1], out=buf[:(e - s) * (c1 - c0)].reshape(e - s, c1 - c0),
                                    threads=self.threads, kernel=self.kernel)
                with t.phase("vote"):
                    ovo_votes(prod, m.pair_a[p0:p1], m.pair_b[p0:p1], bags=bags, n_classes=K, bias=self.b[c0:c1],
                              kernel=kernel, add_to=(votes[s:e], conf[s:e]))
        return votes, conf
