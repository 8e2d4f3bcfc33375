"""The refine step: exact votes among the k classes the hash filter kept.

Dense samples are refined in C straight from their kept classes
(native/refine_kept.c: tiles of up to 128 samples, each classifier row read once
for all of a tile's samples that need it); sparse samples through the
(sample, classifier) cells of all k(k-1)/2 pairs of each sample's kept
classes, grouped by classifier row so the rows are read once from the
(memory-mapped) model (native/refine.c).  When the cells would cost more than
scoring every classifier, the votes are read from exact scoring's products."""
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields

import numpy as np

from ..models.pairs import canonical_pairs
from ..support.arrays import distinct_indices
from ..support.kernels import kernel_error, kernel_id
from ..support.lazy_sparse import sp
from ..support.native import ffi, float_vector_ptr, lib, ptr


def group_by_key(key, n_keys):
    """Indices of ``key`` grouped by value, increasing, stable (counting sort)."""
    key = np.ascontiguousarray(key, dtype=np.int64)
    order = np.empty(key.shape[0], dtype=np.int64)
    if key.shape[0]:
        rc = lib.hsvm_group_by_key(ptr("int64_t *", key), key.shape[0], int(n_keys), ptr("int64_t *", order))
        if rc == -1:
            raise ValueError("key out of range")
        if rc == -2:
            raise MemoryError("grouping cells")
    return order


def _cell_operands(W, bias, cx, cw):
    """The output vector and the operands in the dtypes the C kernels take.
    W may be the model's read-only memory map: used in place, never copied."""
    return (np.empty(np.shape(cx)[0], dtype=np.float32), np.ascontiguousarray(W, dtype=np.float32),
            np.ascontiguousarray(bias, dtype=np.float32), np.ascontiguousarray(cx, dtype=np.int64),
            np.ascontiguousarray(cw, dtype=np.int64))


def sddmm(X, W, bias, cx, cw, *, order=None, threads=1, kernel=None):
    """dec[c] = X[cx[c]] . W[cw[c]] + bias[cw[c]] (float32), the cells visited
    in ``order`` (default: as given; group them by cw so each row of W is read
    once).  ``kernel`` (None/auto, portable, avx2, avx512 = avx2 here) forces a
    code path; every path gives the same bits."""
    kid = kernel_id(kernel)
    out, W, bias, cx, cw = _cell_operands(W, bias, cx, cw)
    ncells, d = out.shape[0], W.shape[1]
    if ncells == 0:
        return out
    order = np.arange(ncells, dtype=np.int64) if order is None else np.ascontiguousarray(order, dtype=np.int64)
    if sp.issparse(X):
        X = X.tocsr()
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        data = np.ascontiguousarray(X.data, dtype=np.float32)

        def run(s, e):
            lib.hsvm_sddmm_csr(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("float *", data),
                               ptr("float *", W), ptr("float *", bias), d,
                               ptr("int64_t *", cx), ptr("int64_t *", cw), ptr("int64_t *", order[s:e]), e - s,
                               ptr("float *", out))
    else:
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.shape[1] != d:
            raise ValueError("samples have %d features, classifiers %d" % (X.shape[1], d))

        def run(s, e):
            rc = lib.hsvm_sddmm_dense(ptr("float *", X), ptr("float *", W), ptr("float *", bias), d,
                                      ptr("int64_t *", cx), ptr("int64_t *", cw), ptr("int64_t *", order[s:e]),
                                      e - s, ptr("float *", out), kid)
            if rc != 0:
                raise kernel_error(rc, kernel)
    threads = max(1, min(int(threads), ncells // 4096 + 1))
    if threads == 1:
        run(0, ncells)
    else:
        # Each thread takes a contiguous run of the (grouped) order: threads
        # share no classifier rows except at the boundaries, and write disjoint cells.
        bounds = np.linspace(0, ncells, threads + 1).astype(np.int64)
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: run(int(bounds[i]), int(bounds[i + 1])), range(threads)))
    return out


# Samples per tile of native/refine_kept.c at most (one bit each in a
# 128-bit mask).
REFINE_TILE = 128


def refine_tile(d):
    """Samples per tile of :func:`refine_kept`: up to REFINE_TILE, their rows
    filling at most half of one core's L2 cache, so that they stay there while
    the classifier rows stream past."""
    return int(min(REFINE_TILE, max(8, lib.hsvm_cache_bytes(2) // (2 * 4 * max(1, int(d))))))


def similar_first(first):
    """The refine's sample order: rows whose best first-stage class
    (``first`` [n]) is the same next to each other (a stable sort), so that
    a tile's samples share most of their pairs and each classifier row read
    serves several of them."""
    return np.argsort(np.asarray(first), kind="stable").astype(np.int64)


def refine_kept(model, Xn, S, nvalid, *, lookup, first=None, threads=1, votes=True, decisions=False,
                kernel=None, tile=None, chunk_bytes=0, by_position=False):
    """The refine over dense samples in C (native/refine_kept.c), no cell
    lists: ``S`` [n, k] each row's refined classes sorted (padding last),
    ``nvalid`` [n] (None: all k) how many are in use.  Returns (votes, conf)
    [n, K] when ``votes`` (what :meth:`RefinedPairs.votes` counts for the same
    cells, bit for bit) and the decision values [n, q, bags] (0 for unused
    pairs) when ``decisions``, as a tuple ``(votes, conf, dec)`` with None for
    what was not asked; with ``by_position`` votes and conf are [n, k], entry
    u that of class ``S[i, u]`` (0 for unused entries).  The values have the bits of :func:`sddmm` on every
    path (``kernel``).  ``first`` [n] (optional): each row's best first-stage
    class; rows that share it are refined side by side
    (:func:`similar_first`), which changes no result.  Threads take whole
    tiles of ``tile`` samples (default :func:`refine_tile`) and take W's
    rows ``chunk_bytes`` at a time (0: the C default); neither changes a
    result."""
    kid = kernel_id(kernel)
    X = np.ascontiguousarray(Xn, dtype=np.float32)
    S = np.ascontiguousarray(S, dtype=np.int64)
    n, k = S.shape
    K, bags = lookup.K, model.bags
    W = np.ascontiguousarray(model.W, dtype=np.float32)
    b = np.ascontiguousarray(model.b, dtype=np.float32)
    if X.ndim != 2 or X.shape[0] != n or X.shape[1] != W.shape[1]:
        raise ValueError("samples [%s] do not match %d rows of %d features" % (X.shape, n, W.shape[1]))
    nvalid = None if nvalid is None else np.ascontiguousarray(nvalid, dtype=np.int64)
    ids, signs = lookup.table()
    q = k * (k - 1) // 2
    width = k if by_position else K
    v = np.empty((n, width), dtype=np.int32) if votes else None
    c = np.empty((n, width), dtype=np.float64) if votes else None
    dec = np.zeros((n, q, bags), dtype=np.float32) if decisions else None

    order = np.arange(n, dtype=np.int64) if first is None else similar_first(first)

    def run(s, e):
        rc = lib.hsvm_refine_kept(
            ptr("float *", X), n, X.shape[1], ptr("int64_t *", order[s:e]), e - s, tile, ptr("float *", W),
            ptr("float *", b), W.shape[0], ptr("int64_t *", S), k,
            ffi.NULL if nvalid is None else ptr("int64_t *", nvalid), ptr("int64_t *", ids), ptr("int8_t *", signs),
            bags, K, ffi.NULL if v is None else ptr("int32_t *", v), ffi.NULL if c is None else ptr("double *", c),
            int(bool(by_position)), ffi.NULL if dec is None else ptr("float *", dec), int(chunk_bytes), kid)
        if rc == -1:
            raise ValueError("refined classes must be sorted, distinct and in 0..%d" % (K - 1))
        if rc == -2:
            raise ValueError("the model has no classifier for some pair of kept classes")
        if rc == -3:
            raise MemoryError("refine")
        if rc != 0:
            raise kernel_error(rc, kernel)
    if n and k > 1:
        tile = refine_tile(X.shape[1]) if tile is None else int(tile)
        if not 1 <= tile <= REFINE_TILE:
            raise ValueError("tile must be in 1..%d" % REFINE_TILE)
        n_tiles = -(-n // tile)
        threads = max(1, min(int(threads), n_tiles))
        if threads == 1:
            run(0, n)
        else:
            bounds = np.linspace(0, n_tiles, threads + 1).astype(np.int64) * tile
            bounds[-1] = n
            with ThreadPoolExecutor(threads) as ex:
                list(ex.map(lambda i: run(int(bounds[i]), int(bounds[i + 1])), range(threads)))
    elif votes:
        v[:] = 0
        c[:] = 0
    return v, c, dec


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class RefinedPairs:
    """The exact decisions of the pairs among each row's refined classes.

    ``S`` [n, k]: each row's refined classes, sorted, padding last;
    ``nvalid`` [n]: how many of them are in use; ``A`` < ``B`` [n, q]: the
    class indices of the q = k(k-1)/2 pairs of S (``A = S[:, iu]``, ``B =
    S[:, ju]`` in :func:`~hsvm_cli.models.pairs.canonical_pairs` order);
    ``dec`` [n, q, bags] float32 decision values in the model's orientation
    of each pair (0 where unused): positive means A where ``sign`` is None or
    +1, B where it is -1 (a model may store a pair as (b, a)); ``pmask``
    [n, q]: the pairs of two classes in use."""

    A: np.ndarray
    B: np.ndarray
    dec: np.ndarray
    pmask: np.ndarray
    S: np.ndarray
    nvalid: np.ndarray
    sign: np.ndarray = None

    def rows(self, which):
        """The same pairs of the rows ``which`` (a slice or index array)."""
        return RefinedPairs(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[which]
                               for f in fields(self)})

    def votes(self, n_classes):
        """Votes and confidences [n, K]: a pair's winner is the majority of its
        bags, an even split goes to the sign of the summed decision values
        (the rule of exact prediction, native/votes.c)."""
        n, q = self.A.shape
        A = np.ascontiguousarray(self.A, dtype=np.int64)
        B = np.ascontiguousarray(self.B, dtype=np.int64)
        dec = np.ascontiguousarray(self.dec, dtype=np.float32)
        mask = np.ascontiguousarray(self.pmask, dtype=np.uint8)
        sign = ffi.NULL if self.sign is None else ptr("int8_t *", np.ascontiguousarray(self.sign, dtype=np.int8))
        votes = np.empty((n, n_classes), dtype=np.int32)
        conf = np.empty((n, n_classes), dtype=np.float64)
        if lib.hsvm_cell_votes(ptr("float *", dec), ptr("int64_t *", A), ptr("int64_t *", B),
                               ptr("uint8_t *", mask), sign, n, q, dec.shape[2] if dec.ndim == 3 else 1, n_classes,
                               ptr("int32_t *", votes), ptr("double *", conf)) != 0:
            raise ValueError("pair names a class outside 0..%d" % (n_classes - 1))
        return votes, conf


# What a refine cell (one sample and classifier, native/refine_kept.c) costs
# against a cell of the dense product of exact scoring (native/products.c,
# register-blocked FMA chains the refine's fixed-order sums cannot use): a
# part for the sums (each sample row read from L2 per cell), and a classifier
# row read from memory, shared by the samples of a tile that need it -- on
# average REFINE_TILE * k(k-1) / (K(K-1)) of them.  Fitted on omniglot-242
# (d = 784, two threads: 6.3, 3.8, 3.5, 3.4 dense cells at k = 30, 60, 90,
# 121; BENCHMARKS.md, "Refine against exact"; against OpenBLAS's product the
# same fit gave 3.5 and 22).  A refine cell also has work that does not grow
# with d (its vote, its pair's place in the walk), about 7 ns, where a dense
# cell's cost is nearly all multiply-adds: at small d that part decides.
# Measured at d = 64 (K = 1,000, two threads): 7.4-9.3 ns per refine cell
# against 1.0-1.6 per dense cell, 5-9 dense cells where the d = 784 fit said
# 3.4-3.7, so k = 500 refined in 3.2 s what scoring every classifier did in
# 2.2 s.  CELL_COST_FIXED (in dense cells x features) adds that part as
# 1/d, taken out of CELL_COST_SUMS at the d it was fitted at.  When a block's
# cells would cost more than scoring every classifier, the refine scores
# every classifier.
CELL_COST_SUMS = 3.3
CELL_COST_ROW = 6.0
CELL_COST_FIXED = 400.0
CELL_COST_FIT_D = 784


def cell_cost(k, n_classes, n_features=CELL_COST_FIT_D):
    """Dense-product cells one refine cell costs when each sample keeps k of
    ``n_classes`` classes of ``n_features`` features."""
    shared = REFINE_TILE * k * (k - 1) / max(1, n_classes * (n_classes - 1))
    fixed = CELL_COST_FIXED * (1.0 / max(1, n_features) - 1.0 / CELL_COST_FIT_D)
    return CELL_COST_SUMS + fixed + CELL_COST_ROW / max(1.0, shared)


def dense_is_cheaper(k, model):
    """Whether exact scoring of all of ``model``'s classifiers costs less
    than refining the pairs among k kept classes per sample."""
    cells = k * (k - 1) // 2 * model.bags
    return cells * cell_cost(k, model.n_classes, model.n_features) > model.n_classifiers


def sorted_kept(kept, valid=None):
    """Each row's kept classes sorted (int64 [n, k]) and how many are in use:
    entries ``valid`` leaves out sort last (as class 0), so the pairs of
    classes in use come first in canonical pair order."""
    n, k = kept.shape
    if valid is None:
        return np.sort(kept, axis=1).astype(np.int64), np.full(n, k)
    big = np.iinfo(np.int64).max
    S = np.sort(np.where(valid, kept.astype(np.int64), big), axis=1)
    return np.where(S == big, 0, S), valid.sum(axis=1)


def kept_votes(decisions, kept, *, lookup, bags, valid=None, bias=None):
    """Votes and confidences [n, K] among each row's kept classes [n, k]
    (``valid`` marks the entries in use), read straight from the decision
    values of every classifier [n, P*bags]: what
    ``refine_decisions(..., decisions=decisions).votes(K)`` gives, bit for
    bit, without gathering the cells (native/votes.c).  ``bias`` (float32
    [P*bags], optional): ``decisions`` then holds the products w.x, and the
    values are ``decisions + bias`` in float32 without that pass."""
    n, k = kept.shape
    K = lookup.K
    S, nvalid = sorted_kept(kept, valid)
    S = np.ascontiguousarray(S)
    nvalid = None if valid is None else np.ascontiguousarray(nvalid, dtype=np.int64)
    dec = np.ascontiguousarray(decisions, dtype=np.float32)
    # a canonical model's pair ids are computed in C: no K x K tables to read
    ids, signs = (None, None) if lookup.canonical else lookup.table()
    votes = np.empty((n, K), dtype=np.int32)
    conf = np.empty((n, K), dtype=np.float64)
    bias, bias_ptr = float_vector_ptr("bias", bias, dec.shape[1])
    rc = lib.hsvm_kept_votes(ptr("float *", dec), bias_ptr, n, dec.shape[1] if n else 0, ptr("int64_t *", S), k,
                             ffi.NULL if nvalid is None else ptr("int64_t *", nvalid),
                             ffi.NULL if ids is None else ptr("int64_t *", ids),
                             ffi.NULL if signs is None else ptr("int8_t *", signs), bags, K, ptr("int32_t *", votes),
                             ptr("double *", conf))
    if rc == -2:
        raise ValueError("the model has no classifier for some pair of kept classes")
    if rc != 0:
        raise ValueError("a kept class is outside 0..%d" % (K - 1))
    return votes, conf, (np.full(n, k) if nvalid is None else nvalid)


def refine_votes(model, Xn, kept, *, lookup, valid=None, threads=1, by_position=False):
    """Votes, confidences [n, K] and classes in use [n] among each row's kept
    classes [n, k] of dense prepared samples: what
    ``refine_decisions(...).votes(K)`` gives, bit for bit, computed in C
    without the cells' index lists or decision matrix (:func:`refine_kept`).
    ``by_position``: return :class:`KeptVotes` instead (the same numbers
    [n, k] beside the sorted kept classes, no row of K per sample)."""
    S, nvalid = sorted_kept(kept, valid)
    used = None if valid is None else nvalid
    model.verify(rows=kept_pair_rows(S, used, lookup, model.bags))
    votes, conf, _ = refine_kept(model, Xn, S, used, lookup=lookup, first=kept[:, 0], threads=threads,
                                 by_position=by_position)
    if by_position:
        return KeptVotes(S, nvalid, votes, conf, lookup.K)
    return votes, conf, nvalid


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class KeptVotes:
    """A refine's votes and confidences by position among each row's sorted
    kept classes: ``votes`` int32 and ``conf`` float64 [n, k], entry u for
    class ``S[i, u]`` when u < ``nvalid[i]`` (0 past it)."""

    S: np.ndarray
    nvalid: np.ndarray
    votes: np.ndarray
    conf: np.ndarray
    n_classes: int

    def in_use(self):
        return np.arange(self.S.shape[1])[None, :] < np.asarray(self.nvalid)[:, None]

    def full(self, unused=0):
        """Votes and confidences [n, K]: the kept classes' numbers, ``unused``
        votes and 0 confidence for every other class."""
        n, k = self.S.shape
        use = self.in_use()
        votes = np.full((n, self.n_classes), unused, dtype=np.int32)
        conf = np.zeros((n, self.n_classes), dtype=np.float64)
        rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[use]
        votes[rows, self.S[use]] = self.votes[use]
        conf[rows, self.S[use]] = self.conf[use]
        return votes, conf


def kept_pair_rows(S, nvalid, lookup, bags):
    """The classifier rows a refine over the sorted kept classes ``S`` [n, k]
    (``nvalid`` [n] in use, None: all) may read, for the model's checksums to
    vouch for first: those of the pairs among each row's kept classes, or,
    when the rows hold many more such cells than the model has pairs, of
    every pair of classes kept by some row (as many, and found sooner)."""
    n, k = S.shape
    ids, _ = lookup.table()
    iu, ju = canonical_pairs(k)
    if n * iu.shape[0] <= 2 * lookup.K * (lookup.K - 1):
        keys = S[:, iu] * lookup.K + S[:, ju]
        if nvalid is not None:
            keys = keys[ju[None, :] < np.asarray(nvalid)[:, None]]
        pid = distinct_indices(ids[keys])
    else:
        used = S if nvalid is None else S[np.arange(k)[None, :] < np.asarray(nvalid)[:, None]]
        U = distinct_indices(used)
        iu, ju = np.triu_indices(U.shape[0], k=1)
        pid = ids[U[iu] * lookup.K + U[ju]]
    pid = pid[pid >= 0]
    return (pid[:, None] * bags + np.arange(bags)).reshape(-1)


def refine_decisions(model, Xn, kept, *, lookup, valid=None, threads=1, decisions=None):
    """Exact decision values of the pairs among each row's kept classes.

    ``kept`` [n, k] class indices; ``valid`` [n, k] marks the entries in use
    (rows may refine fewer than k classes; default: all); ``lookup`` the
    model's :class:`~hsvm_cli.models.pairs.PairLookup`.  ``decisions``: the
    exact scorer's decision values of every classifier [n, P*bags], when
    scoring all of them was cheaper than the sampled product: the cells are
    then read from it instead of computed.  Returns :class:`RefinedPairs`."""
    n, k = kept.shape
    bags = model.bags
    iu, ju = canonical_pairs(k)
    q = iu.shape[0]
    S, nvalid = sorted_kept(kept, valid)
    pmask = np.ones((n, q), dtype=bool) if valid is None else (ju[None, :] < nvalid[:, None])
    A = S[:, iu]
    B = S[:, ju]
    if n == 0 or q == 0 or not pmask.any():
        return RefinedPairs(A, B, np.zeros((n, q, bags), dtype=np.float32), pmask, S, nvalid)
    every = valid is None
    if decisions is None and not sp.issparse(Xn):
        # Dense samples: the cells straight from the kept classes, in C.
        model.verify(rows=kept_pair_rows(S, None if every else nvalid, lookup, bags))
        _, _, dec = refine_kept(model, Xn, S, None if every else nvalid, lookup=lookup, first=kept[:, 0],
                                threads=threads, votes=False, decisions=True)
        cell_sign = None
        if not lookup.canonical:
            ids, signs = lookup.table()
            cell_sign = np.where(pmask, signs[A * lookup.K + B], 1).astype(np.int8)
        return RefinedPairs(A, B, dec, pmask, S, nvalid, cell_sign)
    if every:
        # Every (row, pair) is a cell: no index lists, the result is dec itself.
        pid, sign = lookup.lookup(A.ravel(), B.ravel())
        cx = np.repeat(np.arange(n, dtype=np.int64), q * bags)
    else:
        cell_rows, cell_pairs = np.nonzero(pmask)
        pid, sign = lookup.lookup(A[cell_rows, cell_pairs], B[cell_rows, cell_pairs])
        cx = np.repeat(cell_rows.astype(np.int64), bags)
    rows = (pid[:, None] * bags + np.arange(bags)).reshape(-1) if bags > 1 else pid.astype(np.int64, copy=False)
    if decisions is not None:
        flat = np.ascontiguousarray(decisions[cx, rows], dtype=np.float32).reshape(-1, bags)
        return _assemble(A, B, flat, pmask, S, nvalid, sign, every, None if every else (cell_rows, cell_pairs))
    model.verify(rows=rows)
    # Cells grouped by classifier row (a counting sort), so that each row of
    # the memory-mapped W is read once, in file order, for the whole batch; a
    # sparse sample touches a few words of each row.
    order = group_by_key(rows, model.n_classifiers)
    flat = sddmm(Xn, model.W, model.b, cx, rows, order=order, threads=threads).reshape(-1, bags)
    return _assemble(A, B, flat, pmask, S, nvalid, sign, every, None if every else (cell_rows, cell_pairs))


def _assemble(A, B, flat, pmask, S, nvalid, sign, every, cells):
    n, q = A.shape
    bags = flat.shape[1]
    if every:
        return RefinedPairs(A, B, flat.reshape(n, q, bags), pmask, S, nvalid,
                            None if sign is None else sign.reshape(n, q))
    cell_rows, cell_pairs = cells
    dec = np.zeros((n, q, bags), dtype=np.float32)
    dec[cell_rows, cell_pairs] = flat
    cell_sign = None
    if sign is not None:
        cell_sign = np.ones((n, q), dtype=np.int8)
        cell_sign[cell_rows, cell_pairs] = sign
    return RefinedPairs(A, B, dec, pmask, S, nvalid, cell_sign)
