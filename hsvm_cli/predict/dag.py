"""Decision DAG (DDAG) prediction for one-vs-one models: k - 1 pair decisions
per sample instead of max-wins' k(k-1)/2.

Algorithm (Platt, Cristianini & Shawe-Taylor, "Large Margin DAGs for
Multiclass Classification", NIPS 2000).  Each sample starts from a list L of
candidate classes.  While L holds more than one class, the pair
(L[first], L[last]) is decided by its classifier(s) and the loser is removed
from L; the survivor is the prediction.  With all K classes that is K - 1
decisions, and the accuracy stays close to max-wins voting (Hsu & Lin, "A
comparison of methods for multiclass support vector machines", IEEE TNN 2002).

Pair decision (the rule of exact max-wins prediction, native/votes.c): the
model's classifier row j = p * bags + bag gives w_j . x + b_j, positive
towards ``pair_a[p]``.  ``pair_a[p]`` wins iff more than half of the bags are
positive, or exactly half are and the summed decision values are > 0;
otherwise ``pair_b[p]`` wins.  A decision value of exactly 0 is not positive.
The model may store either orientation of a pair; the rule always runs in the
stored one, as max-wins does.

List order: by default all classes in class order (index 0 first, K - 1
last); :func:`candidate_lists` builds lists from a filter's kept classes in
class order or in the filter's score order.  The order changes the result on
some samples: the two ends are tested first and every later pair involves a
survivor, so a class placed near the middle is only tested once the ends
have been worn down, and a class that would lose one decision it never meets
can survive.  The tie rule above makes the procedure deterministic for any
order.

Decision values are computed in C (native/dag.c): dense samples with the
refine step's fixed 32-lane float32 summation (bit-identical on the portable
and AVX2 paths, and equal to :func:`hsvm_cli.refine.sddmm`'s values), sparse
CSR samples summed over their nonzeros in order (again as the refine step).
Samples must already be prepared (normalised float32, see
:func:`hsvm_cli.predict.prepare`).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..models.pairs import PairLookup
from ..support.kernels import kernel_error, kernel_id
from ..support.lazy_sparse import sp
from ..support.native import ffi, lib, ptr
from ..support.threads import resolve_threads
from .refine import kept_pair_rows, sorted_kept

__all__ = ["DecisionDag", "dag_predict", "candidate_lists", "LIST_ORDERS"]

#: Orders :func:`candidate_lists` can put a filter's kept classes in.
LIST_ORDERS = ("class", "score")

# Samples that advance through the DAG together in one C call (at most; a
# call takes at most its thread's share of the batch).  Each group of samples
# at a DAG node reads the node's row of W once, so the rows a block reads fall
# as the block grows (K = 1,000: ~670 row reads per sample at 128 samples,
# ~250 at 2,000: by then nearly every node is met, i.e. W is read about once
# per block), while every step rereads the block's samples from the caches.
# On the K = 1,000, d = 1,024 benchmark 4,096 was the best of 128 ... 8,000.
_DEFAULT_BLOCK = 4096
_MAX_BLOCK = 1 << 24


def _int_array(name, arr):
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise ValueError("%s must be an integer array, got dtype %s" % (name, arr.dtype))
    return arr


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return int(value)


class DecisionDag:
    """A one-vs-one model prepared for DDAG prediction (pair lookup built once).

    W: float32 [P * bags, d], C-contiguous (a model's W, possibly a read-only
    memory map: used in place, never copied); b: [P * bags]; pair_a, pair_b:
    integer class indices [P] in [0, n_classes), pair_a[p] != pair_b[p], any
    orientation and order (every pair a DAG meets must exist).  ``stats``
    accumulates ``evaluations`` (pair decisions, one per sample and step) and
    ``row_fetches`` (pairs fetched for a group of samples at a step; each reads
    ``bags`` rows of W) over all :meth:`predict` calls."""

    def __init__(self, W, b, pair_a, pair_b, *, bags, n_classes):
        self.bags = _positive_int("bags", bags)
        self.n_classes = _positive_int("n_classes", n_classes)
        if not isinstance(W, np.ndarray) or W.ndim != 2:
            raise ValueError("W must be a 2-D numpy array [P*bags, d]")
        if W.dtype != np.float32 or not W.flags.c_contiguous:
            raise ValueError("W must be C-contiguous float32 (as a model's W is); got %s%s"
                             % (W.dtype, "" if W.flags.c_contiguous else ", not C-contiguous"))
        pa = _int_array("pair_a", pair_a).reshape(-1)
        pb = _int_array("pair_b", pair_b).reshape(-1)
        P = pa.shape[0]
        if pb.shape[0] != P:
            raise ValueError("pair_a has %d entries, pair_b %d" % (P, pb.shape[0]))
        if W.shape[0] != P * self.bags:
            raise ValueError("W has %d rows, expected %d pairs x %d bags" % (W.shape[0], P, self.bags))
        b = np.ascontiguousarray(b, dtype=np.float32).reshape(-1)
        if b.shape[0] != W.shape[0]:
            raise ValueError("b has %d entries, W %d rows" % (b.shape[0], W.shape[0]))
        K = self.n_classes
        if P and (min(pa.min(), pb.min()) < 0 or max(pa.max(), pb.max()) >= K):
            raise ValueError("pair index names a class outside 0..%d" % (K - 1))
        if np.any(pa == pb):
            raise ValueError("a pair opposes a class to itself")
        self.W = W
        self.b = b
        self.d = int(W.shape[1])
        self.pair_a = np.ascontiguousarray(pa, dtype=np.int32)
        self.pair_b = np.ascontiguousarray(pb, dtype=np.int32)
        lookup = self._lookup = PairLookup(pa, pb, K)
        self.canonical = lookup.canonical
        if self.canonical:
            self._keys = self._key_pair = None
        else:
            self._keys = np.ascontiguousarray(lookup.keys, dtype=np.int64)
            self._key_pair = np.ascontiguousarray(lookup.order, dtype=np.int32)
        self.stats = {"evaluations": 0, "row_fetches": 0}
        self._verify = None     # the model's check of its weights, when made from one

    @classmethod
    def from_model(cls, model):
        """The DDAG of an :class:`hsvm_cli.models.ovo.OvoModel`.  A DAG over
        all classes may meet any pair, so all the weights are checked, by
        :meth:`predict` before its first use of them (waiting for a check that
        :meth:`hsvm_cli.predict.predictor.Predictor.predict_file` started while
        it parses); one over candidate lists checks the rows of the pairs
        among each row's candidates."""
        dag = cls(model.W, model.b, model.pair_a, model.pair_b, bags=model.bags, n_classes=model.n_classes)
        dag._verify = model.verify
        return dag

    @property
    def n_pairs(self):
        return int(self.pair_a.shape[0])

    def _samples(self, X):
        if sp.issparse(X):
            X = X.tocsr()
            if X.ndim != 2 or X.shape[1] > self.d:
                raise ValueError("samples have %d features, classifiers %d" % (X.shape[1], self.d))
            indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
            indices = np.ascontiguousarray(X.indices, dtype=np.int32)
            data = np.ascontiguousarray(X.data, dtype=np.float32)
            return X.shape[0], (data, indptr, indices)
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError("X must be 2-D [n, d], got shape %s" % (X.shape,))
        if X.shape[1] != self.d:
            raise ValueError("samples have %d features, classifiers %d" % (X.shape[1], self.d))
        return X.shape[0], (np.ascontiguousarray(X, dtype=np.float32), None, None)

    def _candidates(self, candidates, n):
        if candidates is None:
            return None, self.n_classes
        c = _int_array("candidates", candidates)
        if c.ndim != 2 or c.shape[0] != n or c.shape[1] < 1:
            raise ValueError("candidates must be [n=%d, k>=1], got shape %s" % (n, c.shape))
        if c.size and (c.min() < -1 or c.max() >= self.n_classes):
            raise ValueError("candidates must be class indices in [0, %d) or -1 (padding)" % self.n_classes)
        if n and not np.all((c >= 0).any(axis=1)):
            raise ValueError("every row of candidates needs at least one class")
        s = np.sort(c, axis=1)
        if np.any((s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)):
            raise ValueError("a row of candidates names a class twice")
        return np.ascontiguousarray(c, dtype=np.int32), c.shape[1]

    def predict(self, X, *, candidates=None, threads=1, kernel=None, return_margins=False, block=None):
        """DDAG prediction of the rows of X.

        X: prepared samples, dense [n, d] (float32; other dtypes are converted)
        or scipy CSR with at most d columns.  candidates: None (all classes in
        class order) or integer [n, k] lists, entries in [0, K) or -1
        (padding, skipped; every row needs one class, none twice).
        threads: worker threads (None/0/"auto": :func:`hsvm_cli.threads.default_threads`);
        results do not depend on it.  kernel: None/"auto" (HSVM_KERNEL or the
        best available), "portable", "avx2" ("avx512" = avx2 here).  block:
        samples advancing together per C call (default 4096; speed only).

        Returns class indices int32 [n]; with ``return_margins`` also margins
        float32 [n, k - 1] (K - 1 without candidates): the bag-mean decision
        value of each evaluated pair, in evaluation order, signed towards the
        pair's winner (negative when a bag majority overrules the mean); NaN
        for the steps a row with fewer candidates does not take."""
        kid = kernel_id(kernel)
        threads = resolve_threads(threads)
        block = _DEFAULT_BLOCK if block is None else _positive_int("block", block)
        if block > _MAX_BLOCK:
            raise ValueError("block must be at most %d" % _MAX_BLOCK)
        n, (data, indptr, indices) = self._samples(X)
        cand, k = self._candidates(candidates, n)
        if self._verify is not None:
            if cand is None:
                self._verify()
            else:
                S, nvalid = sorted_kept(cand, cand >= 0)
                self._verify(rows=kept_pair_rows(S, nvalid, self._lookup, self.bags))
        steps = k - 1
        out = np.empty(n, dtype=np.int32)
        margins = np.full((n, steps), np.nan, dtype=np.float32) if return_margins else None
        if n == 0:
            return (out, margins) if return_margins else out
        # Blocks small enough that every thread gets work.
        block = max(1, min(block, -(-n // threads)))
        spans = [(s, min(n, s + block)) for s in range(0, n, block)]
        W_p = ptr("float *", self.W)
        b_p = ptr("float *", self.b)
        pa_p = ptr("int32_t *", self.pair_a)
        pb_p = ptr("int32_t *", self.pair_b)
        keys_p = ffi.NULL if self._keys is None else ptr("int64_t *", self._keys)
        kp_p = ffi.NULL if self._key_pair is None else ptr("int32_t *", self._key_pair)
        x_p = ptr("float *", data)
        ind_p = ffi.NULL if indices is None else ptr("int32_t *", indices)
        out_p = ptr("int32_t *", out)
        m_p = ptr("float *", margins) if return_margins else ffi.NULL
        c_p = ptr("int32_t *", cand) if cand is not None else ffi.NULL
        d = self.d

        def run(span):
            s, e = span
            counters = np.zeros(2, dtype=np.int64)
            if indptr is None:
                xs, ip = x_p + s * d, ffi.NULL
            else:
                # CSR offsets stay absolute: the block's indptr slice indexes
                # the whole data/indices arrays.
                xs, ip = x_p, ptr("int64_t *", indptr[s:e + 1])
            rc = lib.hsvm_dag_predict(xs, ip, ind_p, e - s, d, W_p, b_p, self.bags, self.n_pairs,
                                      pa_p, pb_p, self.n_classes, keys_p, kp_p,
                                      c_p + s * k if cand is not None else ffi.NULL, k,
                                      out_p + s, m_p + s * steps if return_margins else ffi.NULL,
                                      ptr("int64_t *", counters), kid)
            return rc, counters

        if threads == 1 or len(spans) == 1:
            results = [run(sp_) for sp_ in spans]
        else:
            # cffi releases the GIL during the C call: the blocks run in parallel.
            with ThreadPoolExecutor(max_workers=min(threads, len(spans))) as pool:
                results = list(pool.map(run, spans))
        for rc, counters in results:
            if rc in (lib.HSVM_CPU_EBADNAME, lib.HSVM_CPU_EUNAVAILABLE):
                raise kernel_error(rc, kernel)
            if rc == -3:
                raise ValueError("the model has no classifier for some pair of candidate classes")
            if rc == -2:
                raise MemoryError("decision DAG workspace")
            if rc != 0:
                raise ValueError("invalid DAG arguments (code %d)" % rc)
            self.stats["evaluations"] += int(counters[0])
            self.stats["row_fetches"] += int(counters[1])
        return (out, margins) if return_margins else out


def dag_predict(X, W, b, pair_a, pair_b, *, bags, n_classes, candidates=None, threads=1, kernel=None,
                return_margins=False):
    """DDAG prediction in one call: ``DecisionDag(W, b, pair_a, pair_b, bags=,
    n_classes=).predict(X, candidates=, threads=, kernel=, return_margins=)``.
    Keep a :class:`DecisionDag` to predict several batches with one model."""
    dag = DecisionDag(W, b, pair_a, pair_b, bags=bags, n_classes=n_classes)
    return dag.predict(X, candidates=candidates, threads=threads, kernel=kernel,
                       return_margins=return_margins)


def candidate_lists(kept, *, order="class", valid=None):
    """DAG candidate lists from a filter's kept classes.

    kept: integer [n, k] class indices, best first (as
    :func:`hsvm_cli.ranking.top_classes` returns them); valid: optional bool
    [n, k], the entries in use.  order: "class" (increasing class index) or
    "score" (as given, i.e. the filter's ranking).  Returns int32 [n, k] with
    the unused entries as -1 at the end of each row."""
    if order not in LIST_ORDERS:
        raise ValueError("order must be one of %s, got %r" % (", ".join(LIST_ORDERS), order))
    kept = _int_array("kept", kept)
    if kept.ndim != 2:
        raise ValueError("kept must be 2-D [n, k]")
    if valid is None:
        valid = np.ones(kept.shape, dtype=bool)
    else:
        valid = np.asarray(valid, dtype=bool)
        if valid.shape != kept.shape:
            raise ValueError("valid has shape %s, kept %s" % (valid.shape, kept.shape))
    big = np.iinfo(np.int64).max
    if order == "class":
        lists = np.sort(np.where(valid, kept.astype(np.int64), big), axis=1)
    else:
        # Used entries first, in their given order.
        lists = np.take_along_axis(np.where(valid, kept.astype(np.int64), big),
                                   np.argsort(~valid, axis=1, kind="stable"), axis=1)
    return np.where(lists == big, -1, lists).astype(np.int32)
