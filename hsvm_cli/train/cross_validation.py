"""Cross-validated accuracy of one-vs-one linear SVMs, over a path of C values.

F-fold cross-validation as LIBSVM's ``svm-train -v`` does it for a
multi-class problem: the samples are split into F folds stratified by class;
for each fold every pair's SVM is trained on the other folds and the held-out
fold is predicted by one-vs-one voting over all pairs (hsvm's decision rule:
votes, then the summed decision values, then the lower label); the CV accuracy
is the share of all samples predicted right when held out.

The pair problems are the ones ``train-ovo`` solves with LIBLINEAR -- the
L2-regularised L2-loss (or L1-loss) SVM with a bias feature -- solved here by
dual coordinate descent (native/cvpath.c) so that a path of increasing C values
is warm-started, each C from the previous one's solution, as LIBLINEAR's ``-C``
does: for most pairs a C step then costs a few passes.  The start is the
previous solution moved along its ray, s alpha, to the s that minimises the
new C's dual objective (closed form; native/cvpath_dcd.h): at small C the
solution grows in proportion to C and the plain warm start is half of it.
Along the default grid this took 18% fewer passes on reuters-r52, 25% fewer
on fashion-mnist-20k and 31% fewer on omniglot-242 (BENCHMARKS.md).  The held-out votes are
counted inside the same C call, so decision values are never stored.  Three
forms of the solver (the same iterations): the kernel form, with a Gram matrix
of all samples, when pairs have fewer training rows than samples have nonzero
features (e.g. few samples per class: omniglot's 15); the primal form
otherwise, which reads the rows as float32 values with 16-bit column indices
(32-bit past 65,536 columns): a pass streams every training row of a pair, and
6 bytes per non-zero instead of 12 made it faster.  Where a quarter of the
entries or more are non-zero (images such as fashion-mnist's) the same
iteration runs on dense float32 rows ("dense" form), its products vector loops
instead of gathers, each summed in a fixed order on every code path.  Pairs
run in parallel on ``jobs`` threads; results do not depend on the thread
count (confidences are summed in fixed point).  The primal form on sparse
rows solves a pair's folds together (native/cvpath_folds.h: fold f in lane f
of each feature's weights, one pass over the pair's rows for every fold, a
fold that has converged standing still while the others go on): on
reuters-r52 a C step took 0.35-0.86 s fold by fold and 0.22-0.55 s fused
(BENCHMARKS.md); used where every row's votes and the folds' weights stay
small.  The two orders of visiting give solutions that differ
within the tolerance, so the choice is a rule on the data's shape alone.

Folds: within each class the samples are ordered by a seeded key (hsvm's
SplitMix64 stream, the same on every machine) and dealt to the folds in turn,
each class starting where the previous one stopped, so fold sizes differ by at
most one, per class and overall."""
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import OptionError, SampleError
from ..hashing.generator import random_bits
from ..models.pairs import canonical_pairs
from ..predict.ranking import best_class
from ..support.kernels import kernel_error, kernel_id
from ..support.labels import integer_labels
from ..support.memory import check_allocation
from ..support.native import ffi, lib, ptr
from ..support.threads import single_threaded_blas
from .class_weight import check_weighted_c, class_weight_vector

__all__ = ["stratified_folds", "PathCrossValidation", "CV_LOSSES"]

#: Streams of hsvm's generator used here (the projection uses 0).
FOLD_STREAM = 1
SOLVER_ORDER_STREAM = 2

#: train-ovo solvers and the loss their problem has (the CV solves the same problem).
CV_LOSSES = {"l2loss-dual": 2, "l2loss-primal": 2, "l1loss-dual": 1}

#: LIBLINEAR's tolerance and pass limit for its dual coordinate descent solvers.
DUAL_EPS = 0.1
MAX_PASSES = 1000

# The kernel form holds an n x n float32 Gram matrix and an l x l float32
# block per thread; above these it is never chosen.
_GRAM_MAX_BYTES = 512 << 20
_KERNEL_MAX_ROWS = 4096
# ... nor where a Gram entry could pass this (float32 overflows at 3.4e38;
# the margin covers the dual variables' multiples summed into decisions).
_GRAM_MAX_ENTRY = 1e30
# Rough passes per C step, for choosing the cheaper form (both forms take the
# same passes; only their cost per pass differs).
_PASSES_GUESS = 10
# The primal iteration runs on dense rows from this share of non-zero entries up.
_DENSE_MIN_FILL = 0.25
# The dense form keeps every pair's weights between C values up to this size.
_KEEP_W_BYTES = 256 << 20
# The primal form forms the held-out decisions of this many pairs at once
# (CV_LANES in native/cvpath.c).
_PRIMAL_LANES = 8
# The primal form fuses the folds (native/cvpath_folds.h) up to this many
# folds (its vector lanes), this size of one thread's held-out votes and this
# size of its F blocks of eight pairs' weights, which are cleared for every
# block of pairs: at 3 million columns (1.2 GB, where fold by fold clears one)
# fusing was slower, and needed five times the memory.
_FUSED_MAX_FOLDS = 8
_FUSED_VOTE_BYTES = 128 << 20
_FUSED_BLOCK_BYTES = 32 << 20
# Held-out decisions of the kernel form are formed for this many bytes of
# [pairs x samples] float32 at a time.
_DEC_BLOCK_BYTES = 128 << 20


def stratified_folds(y, n_folds, *, seed=0):
    """int32 [n]: the fold (0..n_folds-1) of each sample, stratified by the
    labels ``y`` (module docstring); a pure function of (y, n_folds, seed)."""
    y = np.asarray(y)
    F = int(n_folds)
    if F < 2:
        raise OptionError("cross-validation needs at least 2 folds, got %d" % F)
    if F > y.shape[0]:
        raise OptionError("%d folds for %d samples: at most one fold per sample" % (F, y.shape[0]))
    keys = random_bits(y.shape[0], seed=seed, stream=FOLD_STREAM)
    # Classes in label order, samples within a class by key (then position).
    order = np.lexsort((np.arange(y.shape[0]), keys, y))
    starts = np.flatnonzero(np.r_[True, y[order][1:] != y[order][:-1]])
    rank = np.arange(y.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, y.shape[0]]))
    offset = np.repeat(starts % F, np.diff(np.r_[starts, y.shape[0]]))
    folds = np.empty(y.shape[0], dtype=np.int32)
    folds[order] = ((rank + offset) % F).astype(np.int32)
    return folds


@dataclass
class _PathPoint:
    """A point of the path (PathCrossValidation.snapshot)."""

    C: float
    alpha: list
    ray: object


@dataclass
class CvStep:
    """The result of one C value: ``correct`` of ``total`` held-out
    predictions right, ``passes`` coordinate-descent passes summed over pairs
    and folds, ``seconds`` wall time, ``capped`` the pair solves (of every
    fold) the pass limit stopped before the tolerance was met, ``missed`` the
    classes of at least two samples not one of which was predicted right."""

    C: float
    correct: int
    total: int
    passes: int
    seconds: float
    fold_correct: list = None    # correct held-out predictions of each fold
    capped: int = 0
    missed: int = 0              # classes of two or more samples none of whose held-out predictions is right

    @property
    def accuracy(self):
        return self.correct / self.total if self.total else 0.0


def _aligned_zeros(shape):
    """float64 zeros starting on a 64-byte boundary."""
    n = int(np.prod(shape))
    raw = np.zeros(n + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + n].reshape(shape)


def class_columns(indptr, indices, block, n_folds, n_classes):
    """Each class's distinct columns over its rows in every fold, as offsets
    [K + 1] and columns (``indices``' type): the only weights a pair of the
    class can write, which the fused form copies and clears by."""
    F, K = int(n_folds), int(n_classes)
    parts, offsets = [], np.zeros(K + 1, dtype=np.int64)
    for c in range(K):
        cols = np.unique(np.concatenate([indices[indptr[block[f * K + c]]:indptr[block[f * K + c + 1]]]
                                         for f in range(F)]))
        parts.append(cols)
        offsets[c + 1] = offsets[c] + cols.size
    return offsets, np.ascontiguousarray(np.concatenate(parts), dtype=indices.dtype)


class PathCrossValidation:
    """F-fold cross-validation of one-vs-one SVMs at a sequence of C values,
    each warm-started from the previous one (module docstring).

    ``X`` (CSR or dense [n, d], already normalised as the model will be) and
    integer labels ``y``; ``loss`` 2 (L2 loss) or 1 (L1 loss); ``eps`` the
    dual stopping tolerance; ``bias`` the value of the constant feature;
    ``jobs`` threads; ``form`` "kernel", "primal" or None (the cheaper);
    ``folds``: an explicit fold of each sample (int [n], values 0..F-1, each
    used) instead of :func:`stratified_folds`; ``ray``: each warm start
    moved along the ray of the previous solution to its best multiple for
    the new C (False: the previous solution as it is, as LIBLINEAR's -C
    starts); ``class_weight``: each class's C multiplier, as
    :func:`~hsvm_cli.train.liblinear.train_pairs` takes it; ``fused``: the
    primal form solves each pair's folds together (True), fold by fold
    (False), or as the shape decides (None: together for up to 8 folds while
    the held-out votes of every row and the folds' weights stay small).  Call :meth:`run` with
    increasing C values."""

    def __init__(self, X, y, *, n_folds=5, seed=0, loss=2, eps=DUAL_EPS, max_passes=MAX_PASSES, bias=1.0,
                 jobs=1, form=None, folds=None, ray=True, class_weight=None, fused=None):
        if loss not in (1, 2):
            raise OptionError("loss must be 1 or 2")
        # read only (its rows are copied in fold order below): no copy of float64 CSR input
        X = sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else X.tocsr().astype(np.float64, copy=False)
        if X.data.size and not np.isfinite(X.data).all():
            # the solver would run on them and report a meaningless accuracy
            raise SampleError("X contains NaN or infinite values")
        y = integer_labels(y, X.shape[0])
        self.classes, yi = np.unique(y, return_inverse=True)
        K = self.classes.shape[0]
        if K < 2:
            raise OptionError("cross-validation needs samples of at least two classes")
        # From the whole set's counts, as the final model's weights (train/class_weight.py)
        self.class_weight = class_weight_vector(class_weight, self.classes, yi)
        n, d = X.shape
        if folds is None:
            F = int(n_folds)
            self.folds = stratified_folds(y, F, seed=seed)
        else:
            self.folds = np.asarray(folds, dtype=np.int32)
            F = int(self.folds.max()) + 1 if self.folds.size else 0
            if self.folds.shape != (n,) or F < 2 or self.folds.min() < 0 or \
                    np.unique(self.folds).shape[0] != F:
                raise OptionError("folds must give every sample one of 0..F-1, F >= 2, each fold used")
        # Rows in (fold, class, position) order: a fold is one contiguous range,
        # a class within a fold another.
        self.order = np.lexsort((np.arange(n), yi, self.folds))
        counts = np.zeros((F, K), dtype=np.int64)
        np.add.at(counts, (self.folds, yi), 1)
        self.block = np.concatenate([[0], np.cumsum(counts.reshape(-1))]).astype(np.int64)
        self.y_sorted = yi[self.order].astype(np.int64)
        self.n, self.d, self.K, self.F = n, d, K, F
        # each pair's class indices and, per fold, its row counts (with their
        # two gathers), dual offsets, ray and solver seed (with the seeds'
        # draw): weighed before they are made
        check_allocation((8 + 72 * F) * (K * (K - 1) // 2),
                         "the bookkeeping of %d pairs x %d folds" % (K * (K - 1) // 2, F))
        self.pair_a, self.pair_b = canonical_pairs(K)
        P = self.pair_a.shape[0]
        # [F, K] training rows per class (its rows outside the fold)
        self.class_rows = counts.sum(axis=0)
        train = self.class_train_rows = self.class_rows[None, :] - counts
        sizes = train[:, self.pair_a] + train[:, self.pair_b]   # [F, P]
        self.alpha_off = [np.concatenate([[0], np.cumsum(s)]).astype(np.int64) for s in sizes]
        check_allocation(8 * int(sizes.sum()), "the dual variables of %d pairs x %d folds" % (P, F))
        self.alpha = [np.zeros(int(off[-1]), dtype=np.float64) for off in self.alpha_off]
        # Per fold and pair, |w~|^2 of alpha as the last solve saw it: where the
        # next C's warm start moves along the ray (native/cvpath_dcd.h).
        self.ray = np.zeros((F, P), dtype=np.float64) if ray else None
        bits = random_bits(F * P, seed=seed, stream=SOLVER_ORDER_STREAM).reshape(F, P)
        self.seeds = [np.ascontiguousarray(bits[f]) for f in range(F)]
        self.loss, self.eps, self.max_passes, self.bias = int(loss), float(eps), int(max_passes), float(bias)
        self.jobs = max(1, int(jobs))
        self._executor = None
        self._local = threading.local()     # each thread's zeroed weight blocks (_blocks)
        Xs = X[self.order]
        Xs.sort_indices()
        # Checked once, for every form: scipy trusts the indices it is handed,
        # and the solvers and the dense copy would read or write past a row.
        self.indptr = np.ascontiguousarray(Xs.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(Xs.indices, dtype=np.int32)
        if lib.hsvm_cv_check_rows(ptr("int64_t *", self.indptr), ptr("int32_t *", indices), n, d):
            raise ValueError("cross-validation: malformed sparse rows (an index outside 0..%d)" % (d - 1))
        self.kernel = kernel_id(None)       # the code path of the native loops (HSVM_KERNEL)
        # X, not its copy in fold order, which the forms below copy again
        # in their own layout (a dense form's float64 copy of fashion-mnist-20k
        # stayed 94 MB at the search's peak): see Xs
        self._X = X
        self._Xs = None
        self.form = form or self._cheaper_form(Xs, sizes)
        if self.form == "kernel":
            self._prepare_kernel(Xs)
        elif self.form == "primal":
            self._prepare_primal(Xs, indices)
        elif self.form == "dense":
            self._prepare_dense(Xs)
        else:
            raise OptionError("form must be kernel, primal or dense, not %r" % (form,))
        # The primal form solves a pair's folds together (one pass over its
        # rows for every fold) where the folds fit the vector lanes and the
        # held-out votes of all rows, [K, n] per thread, stay small -- a rule
        # on the shape only, so that every machine and thread count makes the
        # same choice (the two orders of visiting give different bits).
        if fused not in (None, True, False):
            raise OptionError("fused must be None, True or False, not %r" % (fused,))
        if fused and self.form != "primal":
            raise OptionError("the fused form is the primal form's on sparse rows, not the %s form's" % self.form)
        fits = F <= _FUSED_MAX_FOLDS
        blocks = (F + 1) * (d + 1) * 8 * _PRIMAL_LANES        # the F fold blocks and the pair's scratch
        self.fused = self.form == "primal" and (
            fits and K * n * 12 <= _FUSED_VOTE_BYTES and blocks <= _FUSED_BLOCK_BYTES if fused is None
            else bool(fused))
        if self.fused and not fits:
            raise OptionError("the fused primal form takes at most %d folds, not %d" % (_FUSED_MAX_FOLDS, F))
        if self.fused:
            check_allocation((12 * K * n + blocks) * self.jobs,
                             "the held-out votes of %d samples x %d classes and the weights of %d folds x %d "
                             "features" % (n, K, F, d))
            self._class_col_ptr, self._class_cols = class_columns(self.indptr, self.indices, self.block, F, K)
            self._alpha_ptrs = ffi.new("double *[]", [ptr("double *", a) for a in self.alpha])
            self._offset_ptrs = ffi.new("int64_t *[]", [ptr("int64_t *", o) for o in self.alpha_off])
        self.steps = []            # in the order run
        self._last_C = None        # the C whose solutions alpha holds (None: the zero start)
        self._kept_valid = True    # the dense form's kept weights are alpha's

    # ------------------------------------------------------------ set-up

    def _cheaper_form(self, Xs, sizes):
        """"kernel" or the primal iteration, by the estimated cost per C step
        (each form's work per pass and for the held-out decisions); the
        primal iteration on dense rows ("dense") where a quarter of the
        entries or more are non-zero, on sparse rows ("primal") otherwise."""
        n = self.n
        nnz = max(1.0, Xs.nnz / max(1, n))
        held = n / self.F
        s1 = float(sizes.sum()) / self.F
        s2 = float((sizes.astype(np.float64) ** 2).sum()) / self.F
        P = self.pair_a.shape[0]
        primal = _PASSES_GUESS * 2 * nnz * s1 + P * held * nnz
        kernel = _PASSES_GUESS * s2 + s1 * held + n * n * nnz / 16 / self.F
        fits = 4 * n * n <= _GRAM_MAX_BYTES and int(sizes.max()) <= _KERNEL_MAX_ROWS and self._gram_in_float32(Xs)
        if fits and kernel < primal:
            return "kernel"
        return "dense" if Xs.nnz >= _DENSE_MIN_FILL * n * self.d else "primal"

    def _gram_in_float32(self, Xs):
        # |x_i.x_j| <= the largest squared norm: past GRAM_MAX_ENTRY the
        # float32 Gram matrix (and the sums of its entries the solver forms)
        # overflows -- raw features of 1e20 gave a CV accuracy of 10% for
        # 100% -- where the other forms, in double, are right.
        sq = np.asarray(Xs.multiply(Xs).sum(axis=1)).reshape(-1) if Xs.nnz else np.zeros(1)
        return float(sq.max()) + self.bias * self.bias <= _GRAM_MAX_ENTRY

    def _prepare_kernel(self, Xs):
        n = self.n
        if not self._gram_in_float32(Xs):
            raise SampleError("cross-validation: samples of squared norm beyond %.0e do not fit the kernel form's "
                              "float32 Gram matrix: use the primal or dense form" % _GRAM_MAX_ENTRY)
        check_allocation(4 * n * n, "the %d x %d Gram matrix of cross-validation" % (n, n))
        if Xs.nnz >= 0.05 * n * max(1, self.d):
            D = Xs.toarray().astype(np.float32)
            self.gram = np.ascontiguousarray(D @ D.T)
        else:
            self.gram = np.ascontiguousarray((Xs @ Xs.T).toarray().astype(np.float32))
        # The bias feature's products folded in (x_i.x_j + bias^2, rounded once
        # to float32): the solver then builds each pair's Q by copying entries
        # with their signs, and the held-out decisions need no constant term.
        self.gram += np.float32(self.bias * self.bias)
        self._class_terms = [None] * self.F
        self._decisions = None       # the held-out decisions of a block of samples, reused

    def _terms(self, f):
        """How each class's training rows (fold f held out) enter the pairs'
        decisions, made once per fold: per class c (its rows, the index
        [pairs of c, rows] of their dual variables, its first row in the
        stacked contributions); per dual variable its label (+1 for class
        a); and the pairs that vote (both classes trained in the fold): the
        stacked rows of their class a and class b, and the two classes."""
        if self._class_terms[f] is not None:
            return self._class_terms[f]
        K, F = self.K, self.F
        off = self.alpha_off[f]
        ntrain = self.class_train_rows[f]
        per_class = []
        row_a = np.empty(self.pair_a.shape[0], dtype=np.int64)
        row_b = np.empty(self.pair_a.shape[0], dtype=np.int64)
        first = 0
        for c in range(K):
            rows = np.concatenate([np.arange(self.block[g * K + c], self.block[g * K + c + 1])
                                   for g in range(F) if g != f]).astype(np.int64)
            as_a = np.flatnonzero(self.pair_a == c)
            as_b = np.flatnonzero(self.pair_b == c)
            start = np.concatenate([off[as_a], off[as_b] + ntrain[self.pair_a[as_b]]])
            index = start[:, None] + np.arange(ntrain[c])[None, :]
            row_a[as_a] = first + np.arange(as_a.shape[0])
            row_b[as_b] = first + as_a.shape[0] + np.arange(as_b.shape[0])
            per_class.append((rows, index, first))
            first += as_a.shape[0] + as_b.shape[0]
        sizes = np.diff(off)
        pair_of = np.repeat(np.arange(sizes.shape[0]), sizes)
        label = np.where(np.arange(off[-1]) - off[pair_of] < ntrain[self.pair_a][pair_of], 1.0, -1.0)
        # A class whose only samples are held out is absent from the fold's
        # problem (as from svm-train -v's sub-model): its pairs do not vote.
        live = (ntrain[self.pair_a] > 0) & (ntrain[self.pair_b] > 0)
        voting = tuple(np.ascontiguousarray(v[live]) for v in (row_a, row_b, self.pair_a, self.pair_b))
        self._class_terms[f] = (per_class, label, voting)
        return self._class_terms[f]

    def _kernel_votes(self, f):
        """Votes and confidences [nh, K] of the held-out fold f from the dual
        variables: f_p(x) = sum_i a_i y_i (x_i.x + bias^2), the part of each
        class's training rows formed with BLAS for all its pairs at once (a
        class's rows enter every pair naming it), the votes counted in C."""
        per_class, label, (row_a, row_b, vote_a, vote_b) = self._terms(f)
        h0, h1 = int(self.block[f * self.K]), int(self.block[(f + 1) * self.K])
        P = self.pair_a.shape[0]
        coef = self.alpha[f] * label
        votes = np.empty((h1 - h0, self.K), np.int32)
        conf = np.empty((h1 - h0, self.K), np.float64)
        step = max(1, _DEC_BLOCK_BYTES // (8 * max(1, P)))
        blocks = max(1, -(-(h1 - h0) // step))
        step = -(-(h1 - h0) // blocks)      # equal blocks: one buffer size for every fold
        # One buffer for every block, fold and C: a fresh 128 MB array each
        # time cost the kernel's page zeroing, a fifth of a search on omniglot.
        if self._decisions is None or self._decisions.shape[0] < 2 * P * step:
            self._decisions = None
            self._decisions = np.empty(2 * P * step, dtype=np.float32)
        jobs = min(self.jobs, len(per_class))

        def contributions(stacked, s, e, classes):
            for rows, index, first in classes:
                out = stacked[first:first + index.shape[0]]
                if rows.shape[0]:
                    np.matmul(coef[index].astype(np.float32), self.gram[rows, s:e], out=out)
                else:
                    out[:] = 0.0

        def count(stacked, s, x0, x1):
            rc = lib.hsvm_cv_vote_rows(ptr("float *", stacked) + (x0 - s), stacked.shape[1], x1 - x0,
                                       ptr("int64_t *", row_a), ptr("int64_t *", row_b),
                                       ptr("int32_t *", vote_a), ptr("int32_t *", vote_b), vote_a.shape[0], self.K,
                                       ptr("int32_t *", votes[x0 - h0:x1 - h0]), ptr("double *", conf[x0 - h0:x1 - h0]))
            if rc == -2:
                raise MemoryError("cross-validation: held-out votes")
            if rc != 0:
                raise ValueError("cross-validation: pair names a class out of range")

        # Many small products: BLAS threads would cost more than they give, so
        # the classes (and then the held-out samples) are split over our threads.
        ex = self._pool()
        with single_threaded_blas():
            for s in range(h0, h1, step):
                e = min(h1, s + step)
                stacked = self._decisions[:2 * P * (e - s)].reshape(2 * P, e - s)
                list(ex.map(lambda part: contributions(stacked, s, e, part),
                            [per_class[j::jobs] for j in range(jobs)]))
                cuts = np.linspace(s, e, jobs + 1).astype(np.int64)
                list(ex.map(lambda j: count(stacked, s, int(cuts[j]), int(cuts[j + 1])), range(jobs)))
        return votes, conf

    def _prepare_primal(self, Xs, indices):
        # Compact rows (native/cvpath_primal.h): 16-bit indices where the
        # columns allow, float32 values; the solver's arithmetic is double.
        self.indices = indices.astype(np.uint16) if self.d <= 65536 else indices
        self.data = np.ascontiguousarray(Xs.data, dtype=np.float32)
        rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        values = self.data.astype(np.float64)
        self.sqnorm = np.bincount(rows, weights=values * values, minlength=self.n).astype(np.float64)

    def _prepare_dense(self, Xs):
        # Columns padded to a multiple of 32: the dense products' partial
        # sums (native/cvpath.c, dense form).
        dp = -(-max(1, self.d) // 32) * 32
        check_allocation(4 * self.n * dp, "the %d x %d dense rows of cross-validation" % (self.n, dp))
        self.dense = np.zeros((self.n, dp), dtype=np.float32)
        self.sqnorm = np.empty(self.n, dtype=np.float64)
        for s in range(0, self.n, 4096):      # in pieces: no n x d float64 copy
            e = min(self.n, s + 4096)
            self.dense[s:e, :self.d] = Xs[s:e].toarray()
            values = self.dense[s:e].astype(np.float64)
            self.sqnorm[s:e] = np.einsum("ij,ij->i", values, values)
        # Each pair's weights kept between C values where they fit (a rule on
        # the shape only, so every machine makes the same choice): rebuilding
        # them from the dual variables cost about half a pass per pair and C.
        # Rows of dp + 8 doubles, 64-byte aligned (native/cvpath.c, CV_KEPT_PAD):
        # pairs on different threads never share a cache line.
        P, kept = self.pair_a.shape[0], 8 * self.pair_a.shape[0] * self.F * (dp + 8)
        self.w_kept = [_aligned_zeros((P, dp + 8)) for _ in range(self.F)] if kept <= _KEEP_W_BYTES else None

    # ------------------------------------------------------------ running

    def run(self, C, *, progress=None):
        """Cross-validate at ``C`` (warm-started from the previous call's
        solutions); returns a :class:`CvStep`.  ``progress``: a callable
        receiving the folds done since its last call, as pairs finish
        (fractions of a fold; the calls of one step sum to its folds, up
        to rounding): a step of many pairs (K = 1,000: 499,500 in each fold)
        takes minutes."""
        C = float(C)
        if not (math.isfinite(C) and C > 0):
            raise OptionError("C must be a positive finite number, not %r" % C)
        if self._last_C is not None and C < self._last_C:
            # the previous solution warm-starts this one: feasible only while
            # the box [0, C w] widens (an L1-loss variable would sit above it)
            raise OptionError("cross-validation runs C in increasing order: %g after %g" % (C, self._last_C))
        check_weighted_c(C, self.class_weight)
        t0 = time.perf_counter()
        fold_correct, passes = [], np.zeros(2, dtype=np.int64)
        class_hits = np.zeros(self.K, dtype=np.int64)
        told = [0.0]                     # folds reported in this step

        def pairs_done(folds):           # cumulative folds' worth of pairs solved
            if progress is not None and folds > told[0]:
                progress(folds - told[0])
                told[0] = folds
        if self.fused:
            all_votes, all_conf, passes = self._all_folds(C, pairs_done)
        for f in range(self.F):
            h0, h1 = int(self.block[f * self.K]), int(self.block[(f + 1) * self.K])
            if self.fused:
                votes, conf, fold_passes = all_votes[h0:h1], all_conf[h0:h1], 0   # counted in passes
            else:
                votes, conf, fold_passes = self._fold(f, C, h1 - h0, lambda part, f=f: pairs_done(f + part))
            # A class with no training rows in the fold is not in its problem
            # (nor in svm-train -v's sub-model): never its answer, even where
            # no pair voted (two classes, one of them held out whole).
            votes[:, self.class_train_rows[f] == 0] = -1
            labels = best_class(votes, conf)
            truth = self.y_sorted[h0:h1]
            hit = labels == truth
            fold_correct.append(int(hit.sum()))
            class_hits += np.bincount(truth[hit], minlength=self.K)
            passes += fold_passes
            pairs_done(f + 1.0)
        step = CvStep(C, sum(fold_correct), self.n, int(passes[0]), time.perf_counter() - t0, fold_correct,
                      capped=int(passes[1]), missed=int(np.sum((class_hits == 0) & (self.class_rows >= 2))))
        self.steps.append(step)
        self._last_C, self._kept_valid = C, True
        return step

    def snapshot(self):
        """The path's point after the last :meth:`run`: every fold's dual
        variables and the ray's norms, copied.  :meth:`restore` returns to
        it, so that a C between two points already run can be warm-started
        from the one below it (the coarse-to-fine search, train/c_search.py)."""
        return _PathPoint(self._last_C, [a.copy() for a in self.alpha],
                          None if self.ray is None else self.ray.copy())

    def restore(self, point):
        """Back to a :meth:`snapshot`: the next :meth:`run` (at a C no
        smaller than the point's) starts from its solutions.  The dense
        form's kept weights belong to the point left, so that run rebuilds
        them from the dual variables."""
        for a, saved in zip(self.alpha, point.alpha):
            a[...] = saved
        if self.ray is not None:
            self.ray[...] = point.ray
        self._last_C, self._kept_valid = point.C, False

    @property
    def state_bytes(self):
        """The bytes of one :meth:`snapshot`."""
        return sum(a.nbytes for a in self.alpha) + (0 if self.ray is None else self.ray.nbytes)

    def _fold(self, f, C, nh, pairs_done=None):
        kernel = self.form == "kernel"

        def new_acc():
            return [None, None] if kernel else [np.zeros((self.K, nh), np.int32), np.zeros((self.K, nh), np.int64)]

        accs, passes = self._over_pairs(new_acc, lambda p0, p1, v, c: self._call(f, C, p0, p1, v, c), pairs_done)
        if kernel:
            votes, conf = self._kernel_votes(f)
            return votes, conf, passes
        votes = np.zeros((self.K, nh), np.int32)       # class-major, as the C code counts them
        conf = np.zeros((self.K, nh), np.int64)
        for v, c, _ in accs:
            votes += v
            conf += c
        # Fixed point back to decision-value units (the tie-break only compares them).
        return np.ascontiguousarray(votes.T), np.ascontiguousarray(conf.T) / 16777216.0, passes

    def _all_folds(self, C, pairs_done=None):
        """The fused primal form's step: every pair solved in every fold and
        every row's held-out votes (as :meth:`_fold` gives one fold's, but
        sample-major from the C code)."""
        accs, passes = self._over_pairs(
            lambda: [np.zeros((self.n, self.K), np.int32), np.zeros((self.n, self.K), np.int64)],
            lambda p0, p1, v, c: self._call_fused(C, p0, p1, v, c),
            None if pairs_done is None else lambda part: pairs_done(self.F * part))
        votes, conf = accs[0][0], accs[0][1]
        for v, c, _ in accs[1:]:
            votes += v
            conf += c
        return votes, conf / 16777216.0, passes

    def _over_pairs(self, new_acc, call, pairs_done=None):
        """Every pair through ``call(p0, p1, votes, conf)``, in chunks over
        the threads, each thread adding into its own ``new_acc()`` ([votes,
        conf]); returns the accumulators, each with its [passes, solves
        stopped by the pass limit], and their sum.  ``pairs_done``: called
        with the fraction of the pairs solved so far, after each chunk."""
        P = self.pair_a.shape[0]
        accs, lock, local = [], threading.Lock(), threading.local()
        solved = [0]

        def task(bounds):
            acc = getattr(local, "acc", None)
            if acc is None:
                acc = local.acc = new_acc() + [np.zeros(2, np.int64)]
                with lock:
                    accs.append(acc)
            acc[2] += call(bounds[0], bounds[1], acc[0], acc[1])
            if pairs_done is not None:
                with lock:              # one caller at a time: the bar is not ours to lock
                    solved[0] += bounds[1] - bounds[0]
                    pairs_done(solved[0] / max(1, P))

        # Chunks small enough to balance pairs of different sizes over the
        # threads and to let Ctrl-C through between calls.
        chunk = max(1, min(4096, -(-P // (self.jobs * 16))))
        if self.form == "primal":      # whole blocks of its held-out products
            chunk = -(-chunk // _PRIMAL_LANES) * _PRIMAL_LANES
        chunks = [(s, min(P, s + chunk)) for s in range(0, P, chunk)]
        if self.jobs == 1:
            for c in chunks:
                task(c)
        else:
            list(self._pool().map(task, chunks))
        return accs, sum(acc[2] for acc in accs)

    def _call_fused(self, C, p0, p1, votes, conf):
        passes = np.zeros(2, dtype=np.int64)     # passes, solves stopped by the pass limit
        weights = ffi.NULL if self.class_weight is None else ptr("double *", self.class_weight)
        ray = ptr("double *", self.ray) if self.ray is not None else ffi.NULL
        rc = lib.hsvm_cv_primal_folds(ptr("int64_t *", self.indptr), ptr("void *", self.indices),
                                      self.indices.itemsize, ptr("float *", self.data), self.n, self.d,
                                      ptr("double *", self.sqnorm), ptr("int64_t *", self.block), self.F, self.K,
                                      self.pair_a.shape[0], ptr("int32_t *", self.pair_a),
                                      ptr("int32_t *", self.pair_b), p0, p1, self._offset_ptrs, self._alpha_ptrs,
                                      ptr("uint64_t *", self.seeds[0]), self.bias, C, weights, self.loss, self.eps,
                                      self.max_passes, ray, ptr("int64_t *", self._class_col_ptr),
                                      ptr("void *", self._class_cols), ptr("double *", self._blocks(self.F + 1)),
                                      self.kernel,
                                      ptr("int32_t *", votes),
                                      ptr("int64_t *", conf), ptr("int64_t *", passes))
        return self._checked(rc, passes)

    def _pool(self):
        """The search's worker threads, started once: a pool per fold and C
        started and joined 2 x F threads per C step, a sixth of a search of
        a small set (binalpha-36).  Its threads end when the object is
        collected."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.jobs)
        return self._executor

    def _call(self, f, C, p0, p1, votes, conf):
        passes = np.zeros(2, dtype=np.int64)     # passes, solves stopped by the pass limit
        pairs = (ptr("int64_t *", self.block), self.F, self.K, f,
                 ptr("int32_t *", self.pair_a), ptr("int32_t *", self.pair_b), p0, p1,
                 ptr("int64_t *", self.alpha_off[f]), ptr("double *", self.alpha[f]), ptr("uint64_t *", self.seeds[f]))
        weights = ffi.NULL if self.class_weight is None else ptr("double *", self.class_weight)
        solver = (C, weights, self.loss, self.eps, self.max_passes)
        ray = ptr("double *", self.ray[f]) if self.ray is not None else ffi.NULL
        # The kernel form's Gram matrix holds the bias term; the others take it.
        if self.form == "dense":
            kept = ffi.NULL if self.w_kept is None else ptr("double *", self.w_kept[f])
            rc = lib.hsvm_cv_dense_path(ptr("float *", self.dense), self.n, self.dense.shape[1],
                                        ptr("double *", self.sqnorm), *pairs, self.bias, *solver, kept,
                                        int(self._kept_valid), ray,
                                        self.kernel, ptr("int32_t *", votes), ptr("int64_t *", conf),
                                        ptr("int64_t *", passes))
        elif self.form == "kernel":
            rc = lib.hsvm_cv_gram_solve(ptr("float *", self.gram), self.n, *pairs, *solver, int(self.ray is not None),
                                        ptr("int64_t *", passes))
        else:
            rc = lib.hsvm_cv_primal_path(ptr("int64_t *", self.indptr), ptr("void *", self.indices),
                                         self.indices.itemsize, ptr("float *", self.data), self.n, self.d,
                                         ptr("double *", self.sqnorm), *pairs, self.bias, *solver, ray,
                                         ptr("double *", self._blocks(1)), self.kernel, ptr("int32_t *", votes),
                                         ptr("int64_t *", conf), ptr("int64_t *", passes))
        return self._checked(rc, passes)

    def _blocks(self, count):
        """This thread's ``count`` zeroed blocks of eight pairs' weights
        ((d + 1) x 8 doubles each, 64-byte aligned), made once and kept zero
        by the C code between calls: a block made per call cost a wide
        problem its page faults at every call (a million columns: 64 MB a
        call, most of a C step's time)."""
        buf = getattr(self._local, "blocks", None)
        if buf is None or buf.shape[0] != count:
            check_allocation(8 * count * (self.d + 1) * _PRIMAL_LANES,
                             "the cross-validation's weight blocks (%d x %d features x 8 pairs)" % (count, self.d))
            buf = self._local.blocks = _aligned_zeros((count, (self.d + 1) * _PRIMAL_LANES))
        return buf

    @staticmethod
    def _checked(rc, passes):
        if rc == -2:
            raise MemoryError("cross-validation buffers")
        if rc <= lib.HSVM_CPU_EINVAL:
            raise kernel_error(rc)
        if rc != 0:
            raise ValueError("cross-validation: inconsistent arguments")
        return passes

    # ------------------------------------------------------------ inspection

    @property
    def Xs(self):
        """The samples in fold order, float64 CSR with sorted indices, made on
        first use (for :meth:`pair_weights` and checks) from X as it is then."""
        if self._Xs is None:
            self._Xs = self._X[self.order]
            self._Xs.sort_indices()
        return self._Xs

    def pair_weights(self, f, p):
        """(w [d], b) of pair p trained without fold f, from its dual
        variables: w = sum_i a_i y_i x_i, b = bias * sum_i a_i y_i."""
        a, b = int(self.pair_a[p]), int(self.pair_b[p])
        rows, y = [], []
        for side, c in ((1.0, a), (-1.0, b)):
            for g in range(self.F):
                if g != f:
                    r = np.arange(self.block[g * self.K + c], self.block[g * self.K + c + 1])
                    rows.append(r)
                    y.append(np.full(r.shape[0], side))
        rows, y = np.concatenate(rows), np.concatenate(y)
        al = self.alpha[f][self.alpha_off[f][p]:self.alpha_off[f][p + 1]]
        coef = al * y
        return np.asarray(self.Xs[rows].T @ coef).reshape(-1), self.bias * float(coef.sum())
