"""One-vs-one linear SVMs trained directly on packed sign codes (Hash-SVM).

A k-bit code is read as the feature vector x in R^k with x_j = +1/sqrt(k) where
bit j is set and -1/sqrt(k) where it is clear, so x1.x2 = 1 - 2 d_H(x1, x2)/k:
a linear SVM on these features is an SVM with the Hamming surrogate kernel of
Hash-SVM (Mu et al., CVPR 2014, Eq. 2).  Each pair problem is LIBLINEAR's
L2-regularised L2-loss (``-s 1``) or L1-loss (``-s 3``) SVC in the dual, with a
regularised bias feature 1 (``-B 1``),

    min_alpha  1/2 alpha^T (Q + D) alpha - e^T alpha,   0 <= alpha_i <= U,

solved by dual coordinate descent (Hsieh et al., ICML 2008) in C
(``native/dcd_bits.c``) that reads the uint64 code words: a coordinate step
costs one pass over the sample's set bits; no feature nodes, no expansion.
Memory: the codes, the weights and O(n) per worker.

The solver follows LIBLINEAR's algorithm step for step (random permutation per
outer iteration from glibc's ``rand()``, reproduced in C, shrinking, the
projected-gradient stopping rule, at most 300 outer iterations), and each pair
is seeded with :func:`hsvm_cli.train.sampling.solver_seeds`, the value ``train_ovo``
passes to ``srand``.  So a pair trained here takes the same steps as LIBLINEAR
on the expanded features with the same seed, up to rounding.  One difference:
when ``-s 1`` reaches 300 iterations LIBLINEAR switches to its primal Newton
solver; here the dual result is kept and the classifier is counted in
``not_converged``.

The result is an :class:`~hsvm_cli.models.ovo.OvoModel`: a model over
``bits`` features whose ``W @ x + b`` uses the +-1/sqrt(k) features above.
"""
import concurrent.futures
import time

import numpy as np

from ..errors import DataError
from ..models.ovo import OvoModel, TrainingRecord
from ..models.pairs import canonical_pairs
from ..support.arrays import is_int
from ..support.kernels import kernel_id
from ..support.labels import integer_labels
from ..support.native import ffi, lib, ptr
from .class_weight import check_weighted_c, class_weight_record, class_weight_vector
from .liblinear import DEFAULT_TOL
from .sampling import bootstrap_pair, check_options, solver_seeds, subsample_pair

__all__ = ["BITS_SOLVERS", "MAX_ITER", "train_ovo_codes", "dcd_pair", "expand_codes", "codes_decision"]

#: Solvers on codes and the LIBLINEAR ``-s`` value each reproduces.
BITS_SOLVERS = {"l2loss-dual": 1, "l1loss-dual": 3}

#: LIBLINEAR's outer-iteration limit of its dual solvers.
MAX_ITER = 300

_U64 = 0xFFFFFFFFFFFFFFFF


def _check_codes(codes, bits):
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.dtype != np.uint64:
        raise ValueError("codes must be a 2-D uint64 array, got %s %s" % (codes.dtype, codes.shape))
    if not codes.flags.c_contiguous:
        codes = np.ascontiguousarray(codes)
    words = codes.shape[1]
    bits = 64 * words if bits is None else bits
    if not is_int(bits) or bits <= 0 or bits % 64:
        raise ValueError("bits must be a positive multiple of 64, got %r" % (bits,))
    if bits > 64 * words:
        raise ValueError("bits %d exceed the %d bits of the codes" % (bits, 64 * words))
    return codes, int(bits)


def dcd_pair(codes, rows, y, *, bits=None, C=1.0, solver="l2loss-dual", tol=None, seed=0, max_iter=MAX_ITER,
             kernel=None, weights=(1.0, 1.0)):
    """Train one binary SVM on the codes ``codes[rows]`` with labels ``y``
    (+1 / -1).  ``seed`` is the ``srand`` seed LIBLINEAR would get;
    ``weights``: the C multipliers of the +1 and the -1 rows (LIBLINEAR's
    ``-w1`` and ``-w-1``).

    Returns ``(w float64 [bits], bias, alpha float64 [len(rows)], info)`` with
    ``info = {"iterations", "objective", "n_sv"}``."""
    codes, bits = _check_codes(codes, bits)
    if solver not in BITS_SOLVERS:
        raise ValueError("solver must be one of %s, not %r" % (", ".join(sorted(BITS_SOLVERS)), solver))
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    yy = np.ascontiguousarray(np.where(np.asarray(y) > 0, 1, -1), dtype=np.int8)
    if rows.shape != yy.shape:
        raise ValueError("rows and y differ in length")
    if rows.size and (rows.min() < 0 or rows.max() >= codes.shape[0]):
        raise ValueError("rows index outside the codes")
    tol = float(DEFAULT_TOL[solver] if tol is None else tol)
    w = np.empty(bits, dtype=np.float64)
    alpha = np.empty(max(1, rows.shape[0]), dtype=np.float64)
    bias = ffi.new("double *")
    res = ffi.new("hsvm_dcd_result *")
    rc = lib.hsvm_dcd_bits(ptr("uint64_t *", codes), codes.shape[1], bits // 64, ptr("int64_t *", rows),
                           ptr("int8_t *", yy), rows.shape[0], 1 if solver == "l1loss-dual" else 0,
                           float(C) * weights[0], float(C) * weights[1], tol, int(max_iter), int(seed) & 0xFFFFFFFF,
                           kernel_id(kernel),
                           ptr("double *", w), bias, ptr("double *", alpha), res)
    if rc == -2:
        raise MemoryError("dcd_bits: out of memory")
    if rc != 0:
        raise ValueError("dcd_bits: invalid arguments")
    return w, float(bias[0]), alpha[:rows.shape[0]], {
        "iterations": int(res.iterations), "objective": float(res.objective), "n_sv": int(res.n_sv)}


def train_ovo_codes(codes, y, *, bits=None, C=1.0, solver="l2loss-dual", tol=None, bags=1, per_class=None,
                    seed=0, jobs=1, progress=False, kernel_hash=None, class_weight=None):
    """Train one linear SVM per class pair on packed sign codes.

    Parameters
    ----------
    codes : uint64 [n, words]
        Sign codes (bit j of a row is bit j % 64 of word j // 64), e.g. a
        memory-mapped ``hsvm-codes`` array; read in place.
    y : int [n]
        Labels, at least two classes.
    bits : int or None
        Use the first ``bits`` bits (a multiple of 64); default all.
    C, solver, tol, bags, per_class, seed, class_weight
        As :func:`hsvm_cli.train.liblinear.train_pairs` (``solver`` ``"l2loss-dual"`` or
        ``"l1loss-dual"``); the same row subsets, bootstrap draws and solver
        seeds are used, so a pair sees the rows it would see there.
    jobs : int
        Threads; the C solver runs without the GIL.  Results are
        byte-identical for any ``jobs``: each classifier depends only on its
        rows and its seed, and is written to its own row of ``W``.
    progress : bool
        tqdm bar on stderr.
    kernel_hash : KernelHash or None
        The kernel hash that made ``codes`` (``kernel_hash.codes(X)``): the
        model records it, as ``train-ovo --codes`` records the codes file's,
        so that ``Predictor(model, kernel_hash=h)`` applies it to raw samples
        and refuses any other kernel hash.

    Returns
    -------
    OvoModel
        ``W`` float32 [P*bags, bits], ``b`` float32 [P*bags], normalize
        ``"none"``; classifier j votes for ``classes[pair_a[j // bags]]`` when
        ``W[j] @ x + b[j] > 0`` for x = (2 * bit - 1) / sqrt(bits) of the code.
        Its ``training`` record also holds, per classifier, ``iterations``,
        ``objective`` (LIBLINEAR's dual "Objective value") and ``n_sv``, and
        ``not_converged`` (classifiers that stopped at MAX_ITER).
    """
    t_start = time.perf_counter()
    check_options(C, solver, tol, per_class, bags, seed, jobs, solvers=BITS_SOLVERS)
    codes, bits = _check_codes(codes, bits)
    if kernel_hash is not None:
        from ..hashing.krsh import KernelHash
        if not isinstance(kernel_hash, KernelHash):
            raise TypeError("kernel_hash must be a KernelHash (hsvm_cli.fit_kernel_hash makes one, "
                            "hsvm_cli.load_kernel_hash(path) reads one), not %s" % type(kernel_hash).__name__)
        kernel_hash.check_bits(bits)        # codes of more bits than it makes are not its codes
    y = integer_labels(y, codes.shape[0])
    classes, y_idx = np.unique(y, return_inverse=True)
    K = classes.shape[0]
    if K < 2:
        raise DataError("y must contain at least two classes, found %d" % K)
    tol = float(DEFAULT_TOL[solver] if tol is None else tol)
    seed, bags = int(seed), int(bags)
    per_class = None if per_class is None else int(per_class)
    weights = class_weight_vector(class_weight, classes, y_idx, per_class=per_class)
    check_weighted_c(C, weights)
    order = np.argsort(y_idx, kind="stable")
    bounds = np.searchsorted(y_idx[order], np.arange(K + 1))
    class_rows = [order[bounds[k]:bounds[k + 1]].astype(np.int64) for k in range(K)]
    pair_a, pair_b = canonical_pairs(K)
    P = pair_a.shape[0]
    seeds = solver_seeds(seed, classes[pair_a], classes[pair_b], bags)
    W = np.empty((P * bags, bits), dtype=np.float32)
    b = np.empty(P * bags, dtype=np.float32)
    counts = np.empty((P * bags, 2), dtype=np.int32)
    iterations = np.empty(P * bags, dtype=np.int32)
    objective = np.empty(P * bags, dtype=np.float64)
    n_sv = np.empty(P * bags, dtype=np.int32)
    kernel = None

    def train_pair(p):
        t0 = time.perf_counter()
        a, c = pair_a[p], pair_b[p]
        la, lb = classes[a], classes[c]
        ra, rb = subsample_pair(class_rows[a], class_rows[c], la, lb, per_class, seed)
        na, nb = ra.shape[0], rb.shape[0]
        yv = np.concatenate([np.ones(na, np.int8), -np.ones(nb, np.int8)])
        for bag in range(bags):
            j = p * bags + bag
            if bags == 1:
                rows = np.concatenate([ra, rb])
            else:
                rows = np.concatenate(bootstrap_pair(ra, rb, la, lb, bag, seed))
            w, bias, _, info = dcd_pair(codes, rows, yv, bits=bits, C=C, solver=solver, tol=tol,
                                        seed=int(seeds[j]), kernel=kernel,
                                        weights=(1.0, 1.0) if weights is None else (weights[a], weights[c]))
            W[j] = w
            b[j] = bias
            counts[j] = (na, nb)
            iterations[j] = info["iterations"]
            objective[j] = info["objective"]
            n_sv[j] = info["n_sv"]
        return time.perf_counter() - t0

    from ..support.progress import counting_bar
    workers = min(int(jobs), P)
    solver_seconds = 0.0
    with counting_bar(P, progress, unit="pair", desc="train-ovo --codes") as bar:
        if workers == 1:
            for p in range(P):
                solver_seconds += train_pair(p)
                bar.update(1)
        else:
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                for secs in pool.map(train_pair, range(P)):
                    solver_seconds += secs
                    bar.update(1)
    params = {"solver": solver, "liblinear_solver": BITS_SOLVERS[solver], "C": float(C), "tol": tol,
              "bias": 1.0, "per_class": per_class, "bags": bags, "seed": seed, "bits": bits,
              "features": "sign codes as +-1/sqrt(bits)", "max_iter": MAX_ITER, "trainer": "dcd_bits"}
    if weights is not None:
        params["class_weight"] = class_weight_record(class_weight, classes, weights)
    if kernel_hash is not None:
        meta = kernel_hash.codes_meta(bits)
        params["codes"] = {"kernel_hash_sha256": meta["kernel_hash_sha256"], "kernel": meta["kernel"],
                           "input_features": int(meta["n_features"])}
    record = TrainingRecord(counts=counts, solver_seeds=seeds, solver_seconds=solver_seconds,
                            wall_seconds=time.perf_counter() - t_start, jobs=workers, iterations=iterations,
                            objective=objective, n_sv=n_sv, not_converged=int(np.sum(iterations >= MAX_ITER)))
    return OvoModel(classes=classes.astype(np.int64), pair_a=pair_a, pair_b=pair_b, W=W, b=b, bags=bags,
                    normalize="none", params=params, training=record)


def expand_codes(codes, bits=None, dtype=np.float32):
    """The +-1/sqrt(bits) feature matrix [n, bits] of packed codes (for tests,
    for other tools, and for BLAS scoring of modest blocks)."""
    codes, bits = _check_codes(codes, bits)
    signs = np.unpackbits(np.ascontiguousarray(codes[:, :bits // 64]).view(np.uint8), axis=1, bitorder="little")
    v = 1.0 / np.sqrt(bits)
    out = np.where(signs.astype(bool), dtype(v), dtype(-v)).astype(dtype, copy=False)
    return out


def codes_decision(codes, W, b, *, bits=None, block=2048):
    """Decision values float32 [n, len(W)] of a model trained on codes, for
    held-out codes: blocks of rows are expanded to +-1/sqrt(bits) float32 and
    multiplied with BLAS."""
    codes, bits = _check_codes(codes, bits)
    W = np.asarray(W, dtype=np.float32)
    if W.shape[1] != bits:
        raise ValueError("W has %d columns, codes give %d bits" % (W.shape[1], bits))
    out = np.empty((codes.shape[0], W.shape[0]), dtype=np.float32)
    for s in range(0, codes.shape[0], block):
        out[s:s + block] = expand_codes(codes[s:s + block], bits) @ W.T
    out += np.asarray(b, dtype=np.float32)
    return out
