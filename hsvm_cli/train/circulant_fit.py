"""Fitting circulant hash functions h_l(x) = sgn(w^T P_l x + bias_l), the rows
of circ(w), to given target codes (the model and its file:
models/circulant_hash.py).

* `fit_circulant_svm` -- the exact circulant SVM (Raziperchikolaei &
  Carreira-Perpinan, "Optimizing Circulant Support Vector Machines: the Exact
  Solution").  Bit l is a linear SVM with weight vector P_l^T w (row l of
  circ(w)), so all L weight vectors have the norm ||w||.  The sum of the L
  LIBLINEAR problems (-B 1, cost C)

      sum_l [ 1/2 (||P_l^T w||^2 + b_l^2) + C sum_n loss(z_ln (w^T P_l x_n + b_l)) ]

  is, with b_l = sqrt(L) b'_l and divided by L, exactly one SVM over the N L
  rows [P_l x_n ; sqrt(L) e_l] with labels z_ln and cost C/L:

      min 1/2 (||w||^2 + ||b'||^2) + (C/L) sum_{n,l} loss(z_ln [w; b']^T [P_l x_n; sqrt(L) e_l]).

  Solved by dual coordinate descent in C (native/circulant_svm.c; Hsieh et
  al., ICML 2008), each row formed on the fly: w^T P_l x is a cyclic
  correlation, O(nnz(x)) per coordinate; nothing of size N L d exists.
  loss: "squared-hinge" (LIBLINEAR -s 1, default) or "hinge" (-s 3).

* `fit_cbe` -- CBE's frequency-domain solution (Yu, Kumar, Gong & Chang,
  "Circulant Binary Embedding", ICML 2014, Sec. 5), on centred data x - mu:

      min_r ||B - (X - mu) R^T||_F^2 + lambda ||R R^T - I||_F^2,  R = circ(r) (d x d),

  with B the N x L targets padded by d - L zero columns.  By Parseval the
  objective separates over frequencies: with r~ = F r, for every k,
  M_k |r~_k|^2 - 2 Re(r~_k g_k) + lambda d (|r~_k|^2 - 1)^2, M_k = sum_n |x~_nk|^2,
  g_k = sum_n x~_nk conj(b~_nk); the optimum has the phase of conj(g_k) and a
  modulus that is a root of a cubic.  The first L rows of R are the bits
  (bias -(R mu)_l).  Without targets it alternates that step with
  B = sgn(first L rows of R (X - mu)) (CBE-opt's time-frequency alternation).
  The padding forces the other d - L rows of R towards zero, which is why it
  is only optimal for L = d.

* `fit_independent_svms` -- L unconstrained LIBLINEAR SVMs (the bound the
  circulant constraint gives up against).

* `fit_circulant_hash` / `fit_circulant_file` -- what ``hsvm fit-circulant``
  does: the exact circulant SVM fitted to ITQ codes (train/itq.py) or to the
  codes of a codes file, every refusal checked before the expensive steps.

What the circulant constraint costs (BENCHMARKS.md, "Circulant projections"):
the rows of circ(w) are shifts of one vector, so they cannot match L
unrelated target directions -- fitted to ITQ codes the circulant SVM stays
35-45 points of per-bit accuracy below L independent SVMs (CBE fails the same
way), while targets a circulant hash can realise are fitted almost as well
as independently.

All fitters take ``normalize`` ("l2" or "none"), applied to the samples first
and recorded in the model, which applies it again to the samples it hashes.
"""
import ctypes
import math

import numpy as np
import scipy.fft
import scipy.sparse as sp

from ..errors import DataError, ModelMismatchError, OptionError
from ..hashing.generator import standard_normal
from ..io.files import display_name
from ..models.circulant_hash import LearnedCirculantHash, check_shifts, prepare_samples
from ..models.provenance import provenance, record_zero_based
from ..predict.samples import finite_samples
from ..support.arrays import check_seed, is_int
from ..support.memory import available_memory, format_bytes
from ..support.native import lib, ptr
from .itq import ITQ, itq_memory

#: Stream of hsvm_cli.hashing.generator.standard_normal of CBE's random start
#: (hashing/circulant.py lists the other circulant streams).
STREAM_CBE = 1104
#: Loss names and their ids in native/hsvm_circulant_svm.h.
LOSSES = {"hinge": 1, "squared-hinge": 2}
#: Ways to choose the rows of circ(w) that are the bits.
ROWS = ("first", "spread")


# --------------------------------------------------------------------- helpers

def _check_targets(Z, n_samples):
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError("targets must be a [samples, bits] matrix")
    if Z.shape[0] != n_samples:
        raise ValueError("targets have %d samples, the data %d" % (Z.shape[0], n_samples))
    if Z.dtype == bool:
        return np.where(Z, 1, -1).astype(np.int8)
    if not np.all((Z == 1) | (Z == -1)):
        raise ValueError("targets must be +1/-1 (or booleans)")
    return np.ascontiguousarray(Z, dtype=np.int8)


def per_bit_accuracy(signs, targets):
    """Fraction of (sample, bit) entries where the sign matches the target
    (+1/-1 or booleans), and the per-bit fractions."""
    a = (np.asarray(signs) > 0) == (np.asarray(targets) > 0)
    return float(a.mean()), a.mean(axis=0)


def targets_from_codes(codes, bits):
    """+1/-1 int8 [n, bits] from packed uint64 codes (bit j at bit j % 64 of
    word j // 64, as hsvm writes them): bit set -> +1.  The first ``bits``
    bits: a prefix of the codes."""
    codes = np.ascontiguousarray(codes, dtype="<u8")
    bits = int(bits)
    if bits < 1 or bits > 64 * codes.shape[1]:
        raise ValueError("the codes hold %d bits, not %d" % (64 * codes.shape[1], bits))
    b = np.unpackbits(codes.view(np.uint8).reshape(codes.shape[0], -1), axis=1, bitorder="little")[:, :bits]
    return np.where(b == 1, 1, -1).astype(np.int8)


def fit_memory(n_samples, n_features, bits, nnz):
    """Bytes fitting and evaluating a circulant SVM needs, roughly: per
    virtual row (N L of them) its dual variable, its place in the visiting
    order and its target; the samples in double; and per feature w, the FFT
    engine's copies of it and a batch of padded samples."""
    N, d, L = int(n_samples), int(n_features), int(bits)
    return N * L * 17 + int(nnz) * 12 + N * 24 + N * L * 8 + d * 8 * 24


def _check_memory(need, what, max_bytes):
    limit = available_memory() if max_bytes is None else int(max_bytes)
    if limit is not None and need > limit:
        raise ValueError("%s would need %s of memory; %s are available"
                         % (what, format_bytes(need), format_bytes(limit)))


def spread_shifts(bits, n_features):
    """Rows floor(l d / L): bits from evenly spread shifts of w instead of the
    first L rows (for image-like features neighbouring shifts are nearly the
    same function; spread ones fit unrelated targets better: up to 5.6 points
    of per-bit accuracy on ITQ targets, BENCHMARKS.md).  Where L divides d
    these are l * (d / L); l * floor(d / L) had made them the first L rows
    whenever L > d / 2 (binalpha's d = 320 at L = 256)."""
    return np.arange(int(bits), dtype=np.int64) * int(n_features) // int(bits)


# ------------------------------------------------------------ exact circulant SVM

def _csr64(X):
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return (np.ascontiguousarray(X.indptr, dtype=np.int64), np.ascontiguousarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.data, dtype=np.float64))


def _check_solver_options(C, loss, eps, max_iter):
    if loss not in LOSSES:
        raise ValueError("loss must be one of %s" % ", ".join(LOSSES))
    if not (C > 0 and math.isfinite(C)) or not (eps > 0) or int(max_iter) < 1:
        raise ValueError("C and eps must be positive, max_iter at least 1")


def solve_circulant_svm(X, Z, *, C, loss="squared-hinge", beta=None, eps=0.1, max_iter=1000, seed=0, shifts=None):
    """The exact circulant SVM on prepared samples X [N, d] and targets Z
    (+1/-1 [N, L]) with LIBLINEAR's parametrisation: ``C`` is the cost of
    each virtual row (C_bit / L for per-bit cost C_bit), ``beta`` the value of
    the bias features (default sqrt(L)).  Returns (w [d], b [L] -- bit l's
    bias is beta b_l --, alpha [N L], stats dict)."""
    _check_solver_options(C, loss, eps, max_iter)
    N, d = X.shape
    Z = _check_targets(Z, N)
    L = Z.shape[1]
    if L > d:
        raise ValueError("%d bits need at least %d features (circ(w) is %d x %d)" % (L, L, d, d))
    beta = math.sqrt(L) if beta is None else float(beta)
    shifts = check_shifts(shifts, L, d)
    indptr, indices, data = _csr64(X)
    w = np.empty(d, dtype=np.float64)
    b = np.empty(L, dtype=np.float64)
    alpha = np.empty(N * L, dtype=np.float64)
    stats = np.zeros(3, dtype=np.int64)
    rc = lib.hsvm_circsvm_train(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("double *", data), N, d,
                                ptr("int8_t *", Z), L, ptr("int64_t *", shifts), float(C), LOSSES[loss], beta,
                                float(eps), int(max_iter),
                                int(seed) & 0xFFFFFFFFFFFFFFFF, ptr("double *", w), ptr("double *", b),
                                ptr("double *", alpha), ptr("int64_t *", stats))
    if rc != 0:
        raise MemoryError("the circulant SVM solver ran out of memory")
    return w, b, alpha, {"passes": int(stats[0]), "updates": int(stats[1]), "converged": bool(stats[2]),
                         "beta": beta}


def circulant_svm_decisions(X, w, b, beta, shifts=None):
    """[N, L] decision values w^T P_l x_n + beta b_l, summed directly (for
    objectives and tests)."""
    indptr, indices, data = _csr64(X)
    N = X.shape[0]
    L = b.shape[0]
    shifts = check_shifts(shifts, L, X.shape[1])
    out = np.empty((N, L), dtype=np.float64)
    lib.hsvm_circsvm_decisions(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("double *", data), N,
                               X.shape[1], ptr("double *", np.ascontiguousarray(w, dtype=np.float64)),
                               ptr("double *", np.ascontiguousarray(b, dtype=np.float64)), L,
                               ptr("int64_t *", shifts), float(beta),
                               ptr("double *", out))
    return out


def svm_objectives(X, Z, w, b, alpha, *, C, loss, beta, shifts=None):
    """(primal, dual) objective values of the joint problem (LIBLINEAR's
    parametrisation, module docstring)."""
    Z = _check_targets(Z, X.shape[0])
    margins = Z * circulant_svm_decisions(X, w, b, beta, shifts)
    xi = np.maximum(0.0, 1.0 - margins)
    reg = 0.5 * (np.dot(w, w) + np.dot(b, b))
    primal = reg + C * float(np.sum(xi if loss == "hinge" else xi * xi))
    diag = 0.0 if loss == "hinge" else 0.5 / C
    dual = float(np.sum(alpha)) - reg - 0.5 * diag * float(np.dot(alpha, alpha))
    return primal, dual


def fit_circulant_svm(X, targets, *, C=1.0, loss="squared-hinge", eps=0.1, max_iter=1000, seed=0,
                      normalize="l2", max_bytes=None, shifts=None):
    """The exact circulant SVM fitted to ``targets`` (+1/-1 or boolean [N, L],
    e.g. `targets_from_codes` of another hash's codes, or `ITQ` signs).
    ``C`` is the per-bit cost of the equivalent L LIBLINEAR -B 1 problems.
    Raises ValueError for mismatched targets, L > d, or a problem needing
    more than ``max_bytes`` (default: the memory available now)."""
    Xp = prepare_samples(X, normalize)
    N, d = Xp.shape
    Z = _check_targets(targets, N)
    L = Z.shape[1]
    if L > d:
        raise ValueError("%d bits need at least %d features (circ(w) is %d x %d), the data has %d" % (L, L, d, d, d))
    nnz = Xp.nnz if sp.issparse(Xp) else int(np.count_nonzero(Xp))
    _check_memory(fit_memory(N, d, L, nnz), "the circulant SVM over %d samples x %d bits" % (N, L), max_bytes)
    shifts = check_shifts(shifts, L, d)
    w, b, alpha, stats = solve_circulant_svm(Xp, Z, C=float(C) / L, loss=loss, eps=eps, max_iter=max_iter, seed=seed,
                                             shifts=shifts)
    meta = {"C": float(C), "loss": loss, "eps": float(eps), "solver_passes": stats["passes"],
            "solver_converged": stats["converged"]}
    return LearnedCirculantHash(w, stats["beta"] * b, shifts=shifts, normalize=normalize, method="circulant-svm",
                                seed=seed, meta=meta)


# ------------------------------------------------------------------- CBE

def _cubic_modulus(M, g, lam_d):
    """argmin_{t >= 0} M t^2 - 2 g t + lam_d (t^2 - 1)^2 for g >= 0."""
    if lam_d <= 0.0:
        return g / M if M > 0 else 0.0
    # derivative / 2: 2 lam_d t^3 + (M - 2 lam_d) t - g = 0
    roots = np.roots([2.0 * lam_d, 0.0, M - 2.0 * lam_d, -g])
    cands = [0.0] + [float(t.real) for t in roots if abs(t.imag) <= 1e-9 * (1 + abs(t.real)) and t.real > 0]
    phi = [M * t * t - 2.0 * g * t + lam_d * (t * t - 1.0) ** 2 for t in cands]
    return cands[int(np.argmin(phi))]


def _cbe_r_step(Xc_chunks, B_of, d, shifts, lam):
    """The frequency-domain r-step for fixed (padded) targets.  Xc_chunks:
    callable yielding (start, centred dense float64 chunk); B_of(start, rows):
    the chunk's N x L targets (+1/-1) for rows ``shifts`` of R, the other
    rows padded with zeros."""
    h = d // 2 + 1
    M = np.zeros(h)
    g = np.zeros(h, dtype=np.complex128)
    for start, Xc in Xc_chunks():
        Xf = scipy.fft.rfft(Xc, axis=1)
        Bp = np.zeros((Xc.shape[0], d))
        Bp[:, shifts] = B_of(start, Xc.shape[0])
        Bf = scipy.fft.rfft(Bp, axis=1)
        M += np.sum(Xf.real ** 2 + Xf.imag ** 2, axis=0)
        g += np.sum(Xf * np.conj(Bf), axis=0)
    rt = np.zeros(h, dtype=np.complex128)
    for k in range(h):
        a = abs(g[k])
        t = _cubic_modulus(M[k], a, lam * d)
        real_bin = k == 0 or (d % 2 == 0 and k == d // 2)
        if real_bin:
            rt[k] = t * (1.0 if g[k].real >= 0 else -1.0)
        else:
            rt[k] = t * (np.conj(g[k]) / a if a > 0 else 1.0)
    return scipy.fft.irfft(rt, n=d)


def fit_cbe(X, targets=None, *, bits=None, lam=1.0, iterations=10, seed=0, normalize="l2", chunk_rows=2048,
            shifts=None):
    """CBE's frequency-domain solution (module docstring).  With ``targets``
    (+1/-1 [N, L]) the padded targets are fixed and one r-step is the exact
    minimiser of CBE's objective; without, ``bits`` bits are learned by
    ``iterations`` alternations from a random r (stream STREAM_CBE).  The
    bits are rows ``shifts`` of R (default the first L)."""
    Xp = prepare_samples(X, normalize)
    N, d = Xp.shape
    if targets is not None:
        Z = _check_targets(targets, N).astype(np.float64)
        L = Z.shape[1]
    else:
        if bits is None:
            raise ValueError("give targets or bits")
        L = int(bits)
        Z = None
    if not 1 <= L <= d:
        raise ValueError("%d bits need at least %d features (R is d x d), the data has %d" % (L, L, d))
    if lam < 0:
        raise ValueError("lam must be non-negative")
    shifts = check_shifts(shifts, L, d)
    mu = np.asarray(Xp.mean(axis=0), dtype=np.float64).reshape(-1)

    def chunks():
        for s in range(0, N, chunk_rows):
            blk = Xp[s:s + chunk_rows]
            blk = blk.toarray() if sp.issparse(blk) else blk
            yield s, np.asarray(blk, dtype=np.float64) - mu

    def first_rows(r):
        """+1/-1 signs of the first L rows of circ(r) (x - mu) for all samples."""
        rf = scipy.fft.rfft(r)
        out = np.empty((N, L), dtype=np.float64)
        for s, Xc in chunks():
            y = scipy.fft.irfft(scipy.fft.rfft(Xc, axis=1) * rf, n=d, axis=1)[:, shifts]
            out[s:s + Xc.shape[0]] = np.where(y > 0, 1.0, -1.0)
        return out

    if Z is not None:
        r = _cbe_r_step(chunks, lambda s, k: Z[s:s + k], d, shifts, lam)
        rounds = 1
    else:
        r = standard_normal(d, seed=seed, stream=STREAM_CBE)
        for _ in range(int(iterations)):
            B = first_rows(r)
            r = _cbe_r_step(chunks, lambda s, k, B=B: B[s:s + k], d, shifts, lam)
        rounds = int(iterations)
    # rows of circ(r): entry (i, j) = r_{(i-j) mod d}, so row 0 is w_j = r_{(-j) mod d}
    w = r[(-np.arange(d)) % d]
    Rmu = scipy.fft.irfft(scipy.fft.rfft(r) * scipy.fft.rfft(mu), n=d)[shifts]
    meta = {"lam": float(lam), "rounds": rounds, "targets": "given" if Z is not None else "alternation"}
    return LearnedCirculantHash(w, -Rmu, shifts=shifts, normalize=normalize, method="cbe", seed=seed, meta=meta)


# ---------------------------------------------------- independent LIBLINEAR SVMs

def fit_independent_svms(X, targets, *, C=1.0, loss="squared-hinge", eps=None, normalize="l2", seed=0):
    """L unconstrained LIBLINEAR SVMs (-s 1 or -s 3, -B 1, cost C), one per
    target bit: (W [L, d] float64, b [L]).  Each bit's solver is seeded with
    srand(seed + l) right before it runs, as hsvm_cli.train does."""
    from liblinear.liblinearutil import parameter, problem, train
    if loss not in LOSSES:
        raise ValueError("loss must be one of %s" % ", ".join(LOSSES))
    Xp = prepare_samples(X, normalize)
    N, d = Xp.shape
    Z = _check_targets(targets, N)
    L = Z.shape[1]
    s = {"squared-hinge": 1, "hinge": 3}[loss]
    opts = "-s %d -c %r -B 1 -q" % (s, float(C)) + ("" if eps is None else " -e %r" % float(eps))
    prob = problem(Z[:, 0].astype(np.float64), sp.csr_matrix(Xp, dtype=np.float64), bias=1)
    y = np.ctypeslib.as_array(prob.y, (N,))
    srand = ctypes.CDLL(None).srand
    W = np.zeros((L, d))
    b = np.zeros(L)
    for l in range(L):
        col = Z[:, l]
        if np.all(col == col[0]):
            # one class only: a constant bit
            b[l] = float(col[0])
            continue
        y[:] = col
        srand(int(seed + l) & 0xFFFFFFFF)
        m = train(prob, parameter(opts))
        coef = np.ctypeslib.as_array(m.w, shape=(d + 1,)).copy()
        sign = 1.0 if m.get_labels()[0] == 1 else -1.0
        W[l] = sign * coef[:d]
        b[l] = sign * coef[d]
    return W, b


def linear_signs(X, W, b, *, normalize="l2"):
    """+1/-1 [n, L] of X W^T + b after normalisation (for independent SVMs)."""
    Xp = prepare_samples(X, normalize)
    v = np.asarray(Xp @ W.T) + b
    return np.where(v > 0, 1, -1).astype(np.int8)


# ------------------------------------------------------------- entry points

def fit_circulant_hash(X, *, bits, targets="itq", C=1.0, loss="squared-hinge", eps=0.1, max_iter=1000, seed=0,
                       normalize="l2", max_bytes=None, itq_iterations=50, rows="first"):
    """What ``hsvm fit-circulant DATA --targets CODES|itq --bits L`` does: the
    exact circulant SVM fitted to ``targets`` -- "itq" (ITQ codes of X, fitted
    here with ``itq_iterations`` and ``seed``) or a +1/-1 / boolean array
    [N, L] (e.g. `targets_from_codes` of a codes file written by hsvm).
    ``rows``: "first" (bits are rows 0..L-1 of circ(w)) or "spread"
    (`spread_shifts`).  Checks everything (sample count, L <= d, memory)
    before the expensive steps and raises ValueError with a one-line reason.
    Returns a :class:`~hsvm_cli.models.circulant_hash.LearnedCirculantHash`
    whose ``meta`` records the targets and the per-bit training accuracy.
    Any ``bits`` gives its signs (``h.signs(X)``); packed codes
    (``h.codes``, :func:`~hsvm_cli.models.codes.hash_data`, ``hsvm
    hash-data``) need a multiple of 64, the CLI's only choice."""
    # before anything else: NaN made ITQ's SVD fail deep in numpy, or a
    # short sample blamed on --bits; nested lists taken as training takes them
    X = finite_samples(X)
    N, d = X.shape
    if not is_int(bits) or bits < 1:
        raise OptionError("--bits must be a positive integer, not %r" % (bits,),
                          python="bits must be a positive integer, not %r" % (bits,))
    bits = int(bits)
    seed = check_seed(seed)
    if bits > d:
        raise ValueError("--bits %d exceeds the %d features: circ(w) has only %d distinct rows" % (bits, d, d))
    if rows not in ROWS:
        raise ValueError("rows must be one of %s, not %r" % (", ".join(ROWS), rows))
    if isinstance(targets, str):
        if targets != "itq":
            raise ValueError("targets must be 'itq' or an array of codes, not %r" % targets)
        if bits > N:
            raise ValueError("--bits %d exceeds the %d samples: ITQ's principal directions need as many" % (bits, N))
    else:
        Z = _check_targets(targets, N)
        if Z.shape[1] != bits:
            raise ValueError("targets have %d bits, --bits is %d" % (Z.shape[1], bits))
    # the solver's options before ITQ's iterations, which a wrong one would waste
    _check_solver_options(float(C), loss, eps, max_iter)
    nnz = X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
    need = fit_memory(N, d, bits, nnz) + (itq_memory(N, d, bits) if isinstance(targets, str) else 0)
    _check_memory(need, "fitting %d bits over %d samples of %d features" % (bits, N, d), max_bytes)
    if isinstance(targets, str):
        itq = ITQ.fit(X, bits, iterations=itq_iterations, seed=seed, normalize=normalize)
        Z = itq.signs(X)
        described = "itq"
    else:
        described = "codes"
    shifts = spread_shifts(bits, d) if rows == "spread" else None
    h = fit_circulant_svm(X, Z, C=C, loss=loss, eps=eps, max_iter=max_iter, seed=seed, normalize=normalize,
                          max_bytes=need, shifts=shifts)
    h.meta.update(targets=described, rows=rows, train_per_bit_accuracy=per_bit_accuracy(h.signs(X), Z)[0])
    if described == "itq":
        h.meta["itq_iterations"] = int(itq_iterations)
    return h


def fit_circulant_file(path, *, bits, targets="itq", zero_based=False, **kw):
    """Fit on the svmlight file ``path`` (``-``: stdin), as ``hsvm
    fit-circulant`` does: ``targets`` is "itq" or the path of an
    ``hsvm-codes`` file with one code per sample of ``path`` (same labels, in
    the same order), whose first ``bits`` bits are the targets.  Keyword
    arguments as :func:`fit_circulant_hash`.  Anything the data, the codes or
    the parameters cannot do is a :class:`~hsvm_cli.errors.DataError` (exit
    65) naming the file.  Records the training input's SHA-256, the targets
    and the command line (``h.meta["provenance"]``)."""
    from ..models.codes import read_codes, sample_fingerprints
    from .ovo import read_training_file
    name = display_name(path)
    codes = None
    if targets != "itq":
        codes = read_codes(targets)
        if bits > codes.bits:
            raise DataError("%s: --bits %d exceeds the codes' %d bits" % (codes.path, bits, codes.bits))
    X, y, sha = read_training_file(path, zero_based=zero_based)
    if X.shape[0] == 0:
        raise DataError("%s: no samples to fit a circulant hash on" % name)
    if codes is not None:
        if codes.codes.shape[0] != X.shape[0]:
            raise ModelMismatchError("%s: %d codes, but %s has %d samples (the targets need one code per sample)"
                                     % (codes.path, codes.codes.shape[0], name, X.shape[0]))
        differ = np.flatnonzero(np.asarray(codes.labels) != y)
        if differ.size:
            raise ModelMismatchError("%s: the label of code %d is %d, sample %d of %s has %d: not the codes of "
                                     "these samples" % (codes.path, differ[0] + 1, codes.labels[differ[0]],
                                                        differ[0] + 1, name, y[differ[0]]))
        if codes.fingerprints is not None:
            # the labels agree for another file of the same labels (unlabelled
            # data: all 0) or this one reordered within a class: the fit would
            # learn to reproduce other samples' codes
            differ = np.flatnonzero(sample_fingerprints(X) != codes.fingerprints)
            if differ.size:
                raise ModelMismatchError("%s: code %d was made from another sample than sample %d of %s: not the "
                                         "codes of these samples (another file, or this one reordered)"
                                         % (codes.path, differ[0] + 1, differ[0] + 1, name))
        Z = targets_from_codes(codes.codes, bits)
    else:
        Z = "itq"
    try:
        h = fit_circulant_hash(X, bits=bits, targets=Z, **kw)
    except ValueError as exc:
        raise DataError("%s: %s" % (name, exc)) from None
    h.meta["provenance"] = record_zero_based(provenance(name, sha), zero_based)
    if codes is not None:
        h.meta["targets_codes"] = {k: codes.meta[k] for k in sorted(codes.meta)
                                   if k in ("hash_model_sha256", "kernel_hash_sha256", "circulant_hash_sha256",
                                            "projection_kind", "bits", "seed")}
    return h
