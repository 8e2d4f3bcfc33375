"""One-vs-one training of linear SVMs on LIBLINEAR.

:func:`train_pairs` trains one binary L2-regularised SVM (LIBLINEAR ``-s 1``,
``-s 2`` or ``-s 3`` with ``-B 1``) for every unordered pair of classes,
optionally on a random subset of each class (``per_class``) and optionally
several times on bootstrap resamples (``bags``).  It returns all hyperplanes
stacked in one float32 matrix, as an :class:`~hsvm_cli.models.ovo.OvoModel`.

Each binary problem is LIBLINEAR's (Fan, Chang, Hsieh, Wang & Lin, JMLR 2008)

    min_w  ½‖w‖² + C Σ_i ξ(w; x_i, y_i),   ξ = max(0, 1 − y_i wᵀx_i)  (-s 3)
                                                or its square          (-s 1, -s 2)

over x_i extended by a constant feature B whose weight times B is the bias
(LIBLINEAR's ``-B B``, regularised like the other weights; B = 1 by default), solved in the dual by coordinate descent
(Hsieh et al., ICML 2008) or in the primal by a trust-region Newton method
(Lin, Weng & Keerthi, JMLR 2008).

Speed.  Tens of thousands of small problems are trained, so the Python work per
call must stay well below the solver's.  All rows are converted once into one
pool of LIBLINEAR ``feature_node`` arrays (bias node and terminator included); a
pair problem is only an array of row addresses into that pool plus a +1/-1
label vector, written into buffers whose addresses the ``problem`` struct keeps
for the whole run.  LIBLINEAR's Python wrappers are bypassed: ``train`` is
called through ctypes and the weights are copied out of the returned model with
numpy before the model is freed.

Determinism.  LIBLINEAR's dual coordinate-descent solvers (``-s 1``, ``-s 3``)
visit the examples in an order drawn from the C library's global ``rand()``, so
the weights depend on the ``rand()`` state at the moment ``train`` runs.  Every
classifier therefore gets its own 32-bit solver seed, a hash of
``(seed, label a, label b, bag)``, and ``srand(seed)`` is called immediately
before its ``train`` call.  Parallel training (``jobs > 1``) uses worker
*processes* forked after the row pool is built: each has a private ``rand()``
state that nothing else touches between the ``srand`` and the ``train``.  The
result of a classifier is thus a function of its data and its seed alone, not
of which worker trains it or when, and ``W``/``b`` are byte-identical across
runs and across values of ``jobs``.  Row subsets and bootstrap draws come from
numpy generators keyed by the same quantities.  Because the pair is identified
by its two *labels* (not by class positions), a pair's classifier does not
change when other classes are added to or removed from the training set.

Side effect: with ``jobs=1`` training runs in the calling process and leaves
the C library's ``rand()`` state reseeded; it also silences LIBLINEAR's
printing for the process.  Another thread calling ``rand()`` concurrently with
an in-process ``train_pairs`` would break reproducibility.
"""
import ctypes
import math
import mmap
import multiprocessing
import os
import threading
import time

import numpy as np
import scipy.sparse as sp
from liblinear import liblinear as _ll

from ..errors import DataError, OptionError
from ..io.svmlight import MAX_FEATURES
from ..models.ovo import OvoModel, TrainingRecord
from ..models.pairs import canonical_pairs
from ..support.labels import integer_labels
from ..support.memory import check_allocation
from .class_weight import check_weighted_c, class_weight_record, class_weight_vector
from .sampling import bootstrap_pair, check_options, solver_seeds, subsample_pair

__all__ = ["SOLVERS", "DEFAULT_TOL", "train_pairs", "solver_seeds"]

#: Solver names accepted by :func:`train_pairs` and their LIBLINEAR ``-s`` values:
#: L2-regularised L2-loss SVC in the dual and the primal, L1-loss SVC in the dual.
SOLVERS = {"l2loss-dual": 1, "l2loss-primal": 2, "l1loss-dual": 3}

#: Vectors of d + 1 doubles a LIBLINEAR solver allocates: the dual solvers
#: only w; the primal trust-region Newton solver w and its Newton and
#: line-search vectors (s, r, g, the trial w, Hd, the gradient's copy), with
#: margin.
_SOLVER_VECTORS = {"l2loss-dual": 1, "l2loss-primal": 8, "l1loss-dual": 1}

#: LIBLINEAR's default stopping tolerance (``-e``) for each solver; used when
#: ``tol`` is None so that results match the ``train`` command's defaults.
DEFAULT_TOL = {"l2loss-dual": 0.1, "l2loss-primal": 0.01, "l1loss-dual": 0.1}

_FEATURE_NODE = np.dtype([("index", np.int32), ("value", np.float64)], align=True)
if _FEATURE_NODE.itemsize != ctypes.sizeof(_ll.feature_node):
    raise ImportError("unexpected LIBLINEAR feature_node layout")

_LIBC = ctypes.CDLL(None)
# LIBLINEAR's visiting order comes from the C library's rand(), one state per
# process: two threads training at once (the Python API called from threads)
# drew from each other's sequence, and their models changed.  One solve at a
# time per process; forked workers start with their own, unlocked.
_RAND_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: globals().update(_RAND_LOCK=threading.Lock()))
_srand = _LIBC.srand
_srand.argtypes = [ctypes.c_uint]
_srand.restype = None

_lib_train = _ll.liblinear.train
_lib_set_print = _ll.liblinear.set_print_string_function
_lib_free_model = _ll.liblinear.free_and_destroy_model
_NODE_PP = ctypes.POINTER(ctypes.POINTER(_ll.feature_node))
_DOUBLE_P = ctypes.POINTER(ctypes.c_double)



def _as_csr(X):
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError("X must be 2-dimensional")
        X = sp.csr_matrix(X, dtype=np.float64, copy=False)
        if not X.has_canonical_format:
            # LIBLINEAR needs increasing, unique indices in each row; work on a
            # copy so the caller's matrix is left as it was.
            X = X.copy()
            X.sum_duplicates()
    else:
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("X must be a scipy.sparse matrix or a numeric array") from None
        if X.ndim != 2:
            raise ValueError("X must be 2-dimensional, got shape %s" % (X.shape,))
        X = sp.csr_matrix(X)
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X contains NaN or infinite values")
    if X.shape[1] > MAX_FEATURES:
        # feature indices are C int in LIBLINEAR, and the bias takes index d + 1
        raise ValueError("X has %d columns; LIBLINEAR takes at most %d (with the bias feature at d + 1)"
                         % (X.shape[1], MAX_FEATURES))
    return X


# ------------------------------------------------------------------- row pool

def _build_pool(X, bias=1.0):
    """All rows as LIBLINEAR feature_node arrays laid end to end: row i's nodes,
    then the bias node (index d+1, value ``bias``), then the -1 terminator.  Returns
    the pool and the uint64 address of each row's first node."""
    n, d = X.shape
    nnz_row = np.diff(X.indptr).astype(np.int64)
    start = X.indptr[:-1].astype(np.int64) + 2 * np.arange(n, dtype=np.int64)
    pool = np.empty(X.nnz + 2 * n, dtype=_FEATURE_NODE)
    bias_pos = start + nnz_row
    # The samples' nodes fill every slot but each row's last two, in order: a
    # byte per slot marks them (positions as int64 took 16 bytes per
    # non-zero, 125 MB at the peak of training on fashion-mnist-20k).
    data_slot = np.ones(pool.shape[0], dtype=bool)
    data_slot[bias_pos] = False
    data_slot[bias_pos + 1] = False
    # scipy tolerates index/data arrays longer than indptr[-1]; ignore the tail.
    pool["index"][data_slot] = X.indices[:X.nnz] + 1
    pool["value"][data_slot] = X.data[:X.nnz]
    del data_slot
    pool["index"][bias_pos] = d + 1
    pool["value"][bias_pos] = bias
    pool["index"][bias_pos + 1] = -1
    pool["value"][bias_pos + 1] = 0.0
    addr = np.uint64(pool.ctypes.data) + start.astype(np.uint64) * np.uint64(_FEATURE_NODE.itemsize)
    return pool, addr


# ------------------------------------------------------------------- training

class _Job:
    """Everything a worker needs; built in the parent before forking so the
    children share it copy-on-write."""

    def __init__(self, pool, class_addr, classes, pair_a, pair_b, d, solver, C, tol,
                 per_class, bags, seed, seeds, W, b, counts, bias=1.0, class_weight=None, limited=None):
        self.pool = pool                # keeps the row addresses valid
        self.limited = limited          # int8 [P*bags]: 1 where LIBLINEAR stopped at its iteration limit
        self.class_weight = class_weight    # float64 [K], or None
        self.class_addr = class_addr
        self.classes = classes
        self.pair_a = pair_a
        self.pair_b = pair_b
        self.d = d
        self.solver = solver
        self.C = C
        self.tol = tol
        self.per_class = per_class
        self.bags = bags
        self.seed = seed
        self.seeds = seeds
        self.W = W
        self.b = b
        self.counts = counts
        self.bias = float(bias)
        sizes = np.array([a.shape[0] for a in class_addr], dtype=np.int64)
        if per_class is not None:
            sizes = np.minimum(sizes, per_class)
        top2 = np.sort(sizes)[-2:]
        self.max_rows = int(top2.sum())


class _Trainer:
    """The ctypes side of training one process's share of the pairs: one
    ``problem`` and one ``parameter`` struct reused for every call, pointing at
    buffers sized for the largest pair."""

    def __init__(self, job):
        self.job = job
        self.xbuf = np.empty(job.max_rows, dtype=np.uint64)
        self.ybuf = np.empty(job.max_rows, dtype=np.float64)
        prob = _ll.problem.__new__(_ll.problem)
        prob.l = 0
        prob.n = job.d + 1
        prob.bias = job.bias
        prob.x = ctypes.cast(self.xbuf.ctypes.data, _NODE_PP)
        prob.y = ctypes.cast(self.ybuf.ctypes.data, _DOUBLE_P)
        self.prob = prob
        param = _ll.parameter("-q")     # defaults, and LIBLINEAR's printing off
        # "-q" installs a Python callback; a C one lets Ctrl-C through (see
        # native/hsvm_callbacks.h).
        _lib_set_print(_quiet_print())
        param.solver_type = SOLVERS[job.solver]
        param.C = float(job.C)
        param.eps = float(job.tol)
        if job.class_weight is not None:
            # LIBLINEAR's -w+1 w_a -w-1 w_b: the pair's labels are +1 (class a) and -1
            self.weight_label = (ctypes.c_int * 2)(1, -1)
            self.weight = (ctypes.c_double * 2)(1.0, 1.0)
            param.nr_weight = 2
            param.weight_label = ctypes.cast(self.weight_label, type(param.weight_label))
            param.weight = ctypes.cast(self.weight, _DOUBLE_P)
        self.param = param
        self.prob_ref = ctypes.byref(prob)
        self.param_ref = ctypes.byref(param)
        self.solver_seconds = 0.0

    def train_pair(self, p):
        job = self.job
        a = job.pair_a[p]
        c = job.pair_b[p]
        addr_a = job.class_addr[a]
        addr_b = job.class_addr[c]
        la = job.classes[a]
        lb = job.classes[c]
        addr_a, addr_b = subsample_pair(addr_a, addr_b, la, lb, job.per_class, job.seed)
        na = addr_a.shape[0]
        nb = addr_b.shape[0]
        l = na + nb
        xbuf = self.xbuf
        ybuf = self.ybuf
        ybuf[:na] = 1.0
        ybuf[na:l] = -1.0
        self.prob.l = l
        if job.class_weight is not None:
            self.weight[0] = job.class_weight[a]
            self.weight[1] = job.class_weight[c]
        d = job.d
        bags = job.bags
        for bag in range(bags):
            j = p * bags + bag
            if bags == 1:
                xbuf[:na] = addr_a
                xbuf[na:l] = addr_b
            else:
                xbuf[:na], xbuf[na:l] = bootstrap_pair(addr_a, addr_b, la, lb, bag, job.seed)
            t0 = time.perf_counter()
            limits = _iteration_limits()
            with _RAND_LOCK:
                _srand(int(job.seeds[j]))
                mptr = _lib_train(self.prob_ref, self.param_ref)
            self.solver_seconds += time.perf_counter() - t0
            if job.limited is not None:
                job.limited[j] = _iteration_limits() != limits
            if not mptr:
                raise RuntimeError("LIBLINEAR train returned no model")
            try:
                m = mptr.contents
                w = np.ctypeslib.as_array(m.w, shape=(d + 1,))
                # LIBLINEAR's first label is the class with positive decision
                # values; it puts +1 first for -1/+1 problems, but checking keeps
                # the sign convention independent of that rule.
                if m.label[0] == 1:
                    job.W[j] = w[:d]
                    job.b[j] = w[d] * job.bias
                else:
                    job.W[j] = -w[:d]
                    job.b[j] = -w[d] * job.bias
            finally:
                _lib_free_model(ctypes.byref(mptr))
            job.counts[j, 0] = na
            job.counts[j, 1] = nb


def _iteration_limits():
    # LIBLINEAR's "reaching max number of iterations" messages so far on
    # this thread, counted by the quiet printer (native/callbacks.c).
    from ..support.native import lib
    return lib.hsvm_iteration_limits()


def _quiet_print():
    from ..support.native import ffi, lib
    address = int(ffi.cast("uintptr_t", ffi.addressof(lib, "hsvm_print_nothing")))
    return ctypes.cast(address, _ll.PRINT_STRING_FUN)


def _worker_signals():
    # Workers leave Ctrl-C to the parent, which then stops the pool; a stopped
    # worker dies quietly instead of printing a traceback of its own.
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _chunk_pairs(P, workers):
    """Pairs per task of the -j workers.  Small tasks balance pairs of very
    different sizes across workers and keep the progress bar moving: at least
    16 per worker while tasks hold 64 pairs or fewer.  Many small pairs need
    bigger ones: 1.12 M pairs of 16 samples (K = 1,500) in tasks of 64 were
    17,500 tasks whose dispatch kept two workers half idle (22.0 s against
    30.1 s on one), so tasks grow to keep them at most 256 per worker (15.4 s,
    1.95x; the same model)."""
    per_worker_16 = -(-P // (workers * 16))
    per_worker_256 = -(-P // (workers * 256))
    return max(1, min(max(64, per_worker_256), per_worker_16))


# Each forked worker's job, set by the pool's initializer in the child: a
# global set in the parent before the fork was overwritten (or reset to None)
# by another thread's training, whose workers then trained its pairs into the
# wrong model (all-zero rows, no error).
_WORKER_JOB = None
_WORKER_TRAINER = None


def _worker_start(job):
    global _WORKER_JOB, _WORKER_TRAINER
    _worker_signals()
    _WORKER_JOB, _WORKER_TRAINER = job, None


def _worker_range(bounds):
    global _WORKER_TRAINER
    if _WORKER_TRAINER is None:
        _WORKER_TRAINER = _Trainer(_WORKER_JOB)
    tr = _WORKER_TRAINER
    before = tr.solver_seconds
    for p in range(bounds[0], bounds[1]):
        tr.train_pair(p)
    return bounds[1] - bounds[0], tr.solver_seconds - before


def _shared_array(shape, dtype):
    # Anonymous shared mapping: writes by forked workers are seen by the parent,
    # so results never travel through pipes.
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    buf = mmap.mmap(-1, max(nbytes, 1))
    return np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


def _unshared_copy(arr, step_bytes=16 << 20):
    """A :func:`_shared_array` copied into ordinary memory a slice at a time,
    each slice's pages of the mapping given back once copied (MADV_REMOVE),
    so that the model is not held twice at the end of training on several
    workers (omniglot-242's 91 MB W).  The mapping must not be read after."""
    out = np.empty(arr.shape, dtype=arr.dtype)
    buf = arr          # the mapping behind the array: np.frombuffer's base is a memoryview of it
    while buf is not None and not isinstance(buf, mmap.mmap):
        buf = buf.obj if isinstance(buf, memoryview) else getattr(buf, "base", None)
    src, dst = arr.reshape(-1), out.reshape(-1)
    size = arr.itemsize
    items = max(1, (step_bytes // mmap.PAGESIZE * mmap.PAGESIZE) // size)
    for s in range(0, src.size, items):
        e = min(src.size, s + items)
        dst[s:e] = src[s:e]
        if buf is not None and hasattr(mmap, "MADV_REMOVE"):
            try:
                # the slice starts on a page (the mapping does, and the step is
                # whole pages); the last one runs to the mapping's end
                buf.madvise(mmap.MADV_REMOVE, s * size, (e - s) * size)
            except (OSError, ValueError):
                pass
    return out


def _progress_bar(total, enabled):
    from ..support.progress import counting_bar
    return counting_bar(total, enabled, unit="pair", desc="train-ovo")


def bias_too_large(bias):
    """Whether a bias term's square overflows a double: B^2 enters every
    row's squared norm, and -B 1e308 had trained an all-zero model without a
    word (about 1.3e154 and beyond)."""
    return bias > 0 and not math.isfinite(bias * bias)


def train_pairs(X, y, *, C=1.0, solver="l2loss-dual", tol=None, per_class=None, bags=1,
                seed=0, jobs=1, progress=False, bias=1.0, pairs=None, class_weight=None):
    """Train one linear SVM per pair of classes (one-vs-one) with LIBLINEAR.

    Parameters
    ----------
    X : scipy.sparse matrix or array-like [n, d]
        Training rows (float64; the caller L2-normalises them if wanted).
    y : array-like of int [n]
        Class labels; at least two distinct values.
    C : float
        Cost parameter (LIBLINEAR ``-c``), > 0.
    solver : str
        A key of :data:`SOLVERS`: ``"l2loss-dual"`` (``-s 1``),
        ``"l2loss-primal"`` (``-s 2``) or ``"l1loss-dual"`` (``-s 3``).
    tol : float or None
        Stopping tolerance (``-e``); None takes LIBLINEAR's default for the
        solver (:data:`DEFAULT_TOL`).
    per_class : int or None
        If set, each pair is trained on at most this many examples of each of its
        two classes, drawn without replacement (kept in data order) by a random
        generator keyed by ``seed`` and the pair's labels; every pair draws its
        own subset.
    bags : int
        Classifiers per pair.  ``bags=1`` trains on the pair's (sub)set itself,
        no resampling, and gives exactly the same weights as the default.  With
        ``bags > 1`` each classifier is trained on a bootstrap resample that is
        stratified by class: the examples of each class are drawn with
        replacement, as many as the class has, so no bag loses a class and the
        class balance of the pair is kept.
    seed : int
        Seeds the row subsets, bootstrap draws and LIBLINEAR's ``rand()``; the
        same seed gives byte-identical ``W`` and ``b`` whatever ``jobs`` is.
    jobs : int
        Worker processes (forked, POSIX only; without ``fork`` training runs
        serially with the same result).  ``1`` trains in the calling process.
    progress : bool
        Show a tqdm bar on stderr, one tick per pair.
    bias : float
        The value B of the constant feature (LIBLINEAR ``-B B``), > 0: the
        bias is B times its weight, which is regularised with the others, so a
        larger B regularises the bias less.
    pairs : None, or strictly increasing indices into the canonical pair order
        Train only these pairs (a ``range`` or int array: a block of a
        distributed run, :mod:`hsvm_cli.train.pair_blocks`).  The result then
        holds just them, in this order -- an incomplete model, which
        ``save_model`` refuses (a part file holds it) -- and each classifier is
        bit-identical to the full run's, since it depends on the pair's labels,
        data and the seed only.
    class_weight : None, "balanced" or mapping of label to weight
        The cost of class c's rows is C times its weight in every pair
        (LIBLINEAR's ``-wi``); "balanced": n / (K n_c) from the class counts
        of ``y``.  See :mod:`hsvm_cli.train.class_weight`.  None: every
        weight 1, the unweighted problem bit for bit.

    Returns
    -------
    OvoModel
        With ``normalize="none"`` (X is used as given) and a
        :class:`~hsvm_cli.models.ovo.TrainingRecord` in ``training``;
        ``W[j] @ x + b[j] > 0`` means ``classes[pair_a[j // bags]]`` wins.
        ``params`` hold the options that determine the result (solver, C, tol,
        per_class, bags, seed, bias, LIBLINEAR version), not ``jobs``.

    Raises
    ------
    ValueError
        For an invalid option, mismatched ``X``/``y``, non-integer labels,
        fewer than two classes, or non-finite values in ``X``.
    """
    t_start = time.perf_counter()
    check_options(C, solver, tol, per_class, bags, seed, jobs, solvers=SOLVERS)
    bias = float(bias)
    if not (math.isfinite(bias) and bias >= 0):
        raise ValueError("bias must be a finite number >= 0 (0: no bias term), not %r" % (bias,))
    if bias_too_large(bias):
        raise OptionError("bias %r is too large: its square overflows (at most about 1e154)" % (bias,))
    X = _as_csr(X)
    y = integer_labels(y, X.shape[0])
    classes, y_idx = np.unique(y, return_inverse=True)
    K = classes.shape[0]
    if K < 2:
        raise DataError("y must contain at least two classes, found %d" % K)
    tol = float(DEFAULT_TOL[solver] if tol is None else tol)
    seed = int(seed)
    bags = int(bags)
    per_class = None if per_class is None else int(per_class)
    n, d = X.shape

    weights = class_weight_vector(class_weight, classes, y_idx, per_class=per_class)
    check_weighted_c(C, weights)
    pool, row_addr = _build_pool(X, bias)
    order = np.argsort(y_idx, kind="stable")
    bounds = np.searchsorted(y_idx[order], np.arange(K + 1))
    class_addr = [row_addr[order[bounds[k]:bounds[k + 1]]] for k in range(K)]

    all_pairs = K * (K - 1) // 2
    chosen = None if pairs is None else _check_pair_subset(pairs, all_pairs)
    P = all_pairs if chosen is None else chosen.shape[0]
    workers = max(1, min(jobs, P))
    if workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
        workers = 1
    # The model (float32) and, in each worker, LIBLINEAR's float64 vectors of
    # d + 1 entries, which it allocates unchecked (a failure would be a crash).
    # Workers fill a shared mapping that is copied into ordinary arrays at the
    # end: the model is then held twice (K = 3,000 on two workers had trained
    # for minutes and failed there under a limit that one copy fitted).  Then
    # each classifier's bias, counts, flag and seed (with the seed's mixing)
    # and every pair's class indices: weighed before any of them is made, as
    # at 70,000 classes (2.4e9 pairs) they alone outgrow the memory.
    copies = 2 if workers > 1 else 1
    check_allocation(copies * P * bags * d * 4 + workers * _SOLVER_VECTORS[solver] * (d + 1) * 8
                     + P * bags * _CLASSIFIER_BOOKKEEPING + all_pairs * _ALL_PAIRS_BOOKKEEPING
                     + P * _PAIR_BOOKKEEPING,
                     "a model of %d classifiers x %d features (as many as the widest sample has columns)%s "
                     "and %d solver%s" % (P * bags, d,
                                          ", held twice as the -j workers hand it back," if copies > 1 else "",
                                          workers, "s" if workers > 1 else ""))
    pair_a, pair_b = canonical_pairs(K)
    if chosen is not None:
        pair_a, pair_b = pair_a[chosen], pair_b[chosen]
    seeds = solver_seeds(seed, classes[pair_a], classes[pair_b], bags)
    if workers > 1:
        W = _shared_array((P * bags, d), np.float32)
        b = _shared_array((P * bags,), np.float32)
        counts = _shared_array((P * bags, 2), np.int32)
        limited = _shared_array((P * bags,), np.int8)
    else:
        W = np.empty((P * bags, d), dtype=np.float32)
        b = np.empty(P * bags, dtype=np.float32)
        counts = np.empty((P * bags, 2), dtype=np.int32)
        limited = np.zeros(P * bags, dtype=np.int8)

    job = _Job(pool, class_addr, classes, pair_a, pair_b, d, solver, C, tol,
               per_class, bags, seed, seeds, W, b, counts, bias, weights, limited)
    solver_seconds = 0.0
    if workers == 1:
        trainer = _Trainer(job)
        with _progress_bar(P, progress) as bar:
            for p in range(P):
                trainer.train_pair(p)
                bar.update(1)
        solver_seconds = trainer.solver_seconds
    else:
        solver_seconds = _train_parallel(job, P, workers, progress)
        # Hand back ordinary arrays rather than views of the shared mapping.
        W, b, counts = _unshared_copy(W), b.copy(), counts.copy()

    params = {
        "solver": solver,
        "liblinear_solver": SOLVERS[solver],
        "C": float(C),
        "tol": tol,
        "bias": bias,
        "per_class": per_class,
        "bags": bags,
        "seed": seed,
        "liblinear_version": int(ctypes.c_int.in_dll(_ll.liblinear, "liblinear_version").value),
    }
    if weights is not None:
        params["class_weight"] = class_weight_record(class_weight, classes, weights)
    record = TrainingRecord(counts=counts, solver_seeds=seeds, solver_seconds=solver_seconds,
                            wall_seconds=time.perf_counter() - t_start, jobs=workers,
                            not_converged=int(np.count_nonzero(limited)))
    return OvoModel(classes=classes.astype(np.int64), pair_a=pair_a, pair_b=pair_b, W=W, b=b, bags=bags,
                    normalize="none", params=params, training=record)


# Bytes of each classifier beside its weights (float32 bias, int32 counts,
# int8 flag, uint32 seed and solver_seeds' four uint64 scratch arrays), of
# every pair of the K classes (canonical_pairs' two int32 indices and its
# int32 scratch) and of each pair trained (its indices' copy and their int64
# labels).
_CLASSIFIER_BOOKKEEPING = 4 + 8 + 1 + 4 + 32
_ALL_PAIRS_BOOKKEEPING = 12
_PAIR_BOOKKEEPING = 8 + 16


def _check_pair_subset(pairs, n_pairs):
    try:
        idx = np.asarray(pairs)
    except (TypeError, ValueError):
        raise ValueError("pairs must be increasing pair indices, not %r" % (pairs,)) from None
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError("pairs must be a 1-D sequence of integer pair indices")
    idx = idx.astype(np.int64)
    if idx.size and (idx[0] < 0 or idx[-1] >= n_pairs):
        raise ValueError("pair indices must lie in 0..%d" % (n_pairs - 1))
    if np.any(np.diff(idx) <= 0):
        raise ValueError("pair indices must be strictly increasing")
    return idx


def _train_parallel(job, P, workers, progress):
    chunk = _chunk_pairs(P, workers)
    ranges = [(s, min(s + chunk, P)) for s in range(0, P, chunk)]
    ctx = multiprocessing.get_context("fork")
    solver_seconds = 0.0
    # Fork before tqdm starts its monitor thread.  (Forked, the initializer's
    # argument is the parent's object itself, never pickled.)
    with ctx.Pool(workers, initializer=_worker_start, initargs=(job,)) as pool:
        with _progress_bar(P, progress) as bar:
            for done, secs in pool.imap_unordered(_worker_range, ranges):
                solver_seconds += secs
                bar.update(done)
    return solver_seconds
