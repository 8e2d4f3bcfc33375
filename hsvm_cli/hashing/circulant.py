"""Circulant sign random projections: O(d log d) time and O(d) storage per block.

Yu, Kumar, Gong & Chang, "Circulant Binary Embedding" (ICML 2014): instead of a
dense Gaussian D x d matrix, hash with

    h(x) = sgn(circ(r) diag(s) x),

r ~ N(0, I) and s uniform random signs.  circ(r) is the n x n circulant whose
first column is r (entry (i, j) is r[(i - j) mod n]), so circ(r) z is the
circular convolution r * z = IFFT(FFT(r) . FFT(z)): two real FFTs per sample.
Every row of circ(r) diag(s) restricted to the first d columns holds d distinct
Gaussians, so each bit on its own is a sign random projection (collision
probability angle/pi); Yu et al. show that the bits of one circulant behave
nearly as independent ones.

Layout of a D-bit projection (what `CirculantProjection` computes):

* padding: x (length d) is zero-padded to n = ``fast_length(d)``, the smallest
  2^a 3^b 5^c >= d (scipy.fft.next_fast_len(d, real=True) today, but fixed here
  so that stored codes never depend on a scipy release); the first d columns of
  the n x n circulant act on x.
* blocks: block b (of ceil(D / n)) has its own r_b (n normals) and s_b (d
  signs) and covers code bits [b n, (b + 1) n).  r = standard_normal(B n,
  stream=STREAM_R) and signs = standard_normal(B d, stream=STREAM_SIGNS) < 0,
  cut into consecutive blocks, so the first D' bits of a D-bit projection are
  the D'-bit projection (the generator's streams are prefix-consistent).
* rows within a block in *stride order* (`stride_order`): bit t of a block is
  circulant row rho(t), where rho lists the rows of the nested stride sets
  {0} c {Q_{K-1} j} c ... c {Q_1 j} c {j} (Q_k the products of the prime
  factors of n, 2s first) from the smallest outwards.  The first c bits of a
  block are then all inside the stride set {Q j : j < n/Q} with n/Q the
  smallest such size >= c, and those rows are an inverse FFT of length n/Q of
  the folded spectrum: D' << n bits cost a forward FFT of length n and an
  inverse of length ~D' (any set of rows of circ(r) diag(s) is an equally good
  projection; the order only decides which rows a prefix takes).

Exact signs.  The FFT runs in double precision; a value whose magnitude is
above the rounding band (`CirculantBlocks.band_coefficient` times
||r_b|| ||x||, plus |bias|) has the sign of the exact product, and so do values
computed on any other machine or with any other FFT library.  Values inside
the band (a fraction ~1e-9 of them) are replaced by the sign (+1, -1 or 0) of
the entry's *canonical value*: the dot product summed in double, in column
order, in C (native/circulant.c) -- the rule `hsvm_cli.hashing.projection`
applies to the dense Gaussian projection.  Sparse samples with few nonzeros skip the FFT and
are evaluated directly in that canonical order.  So every bit is the sign of
the canonical value, whatever the path, machine, BLAS or FFT library.

The round-off bound (first order; `fft_relative_error`, `_Plan.fft_coef`).
Let F be the unnormalised DFT of length n (||F v|| = sqrt(n) ||v||) and
assume every FFT of length n satisfies ||fl(F v) - F v||_2 <= eps_n ||F v||_2
(Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2: eps_n =
log2(n) eta for radix 2 with accurately computed twiddles, eta = mu +
gamma_4 (sqrt 2 + mu); here eps_n = sum over the prime factors p of n, with
multiplicity, of (sqrt(p) (p + 3) + 2) u, which covers radix-2/3/4/5 passes,
generic radix-p passes and Bluestein's algorithm for large primes with a wide
margin).  With z = s . x (zero-padded), y = circ(r) z = F^* (F r . F z) / n,
the code computes R = fl(F r)/n once, Z = fl(F z), P = fl(R . Z), folds Q
shifted copies of P into G (Q = 1: G = P) and y_S = fl(F_m^* G) with an
unnormalised inverse of length m = n/Q.  Using ||F r||_inf <= sqrt(n) ||r||:

    ||R . Z - F r . F z / n||_2 <= (2 eps_n + u) ||r|| ||z||
    ||P - R . Z||_2             <= sqrt(2) gamma_2 ||r|| ||z||
    ||G - fold(P)||_2           <= gamma_{Q-1} sqrt(Q) ||P||_2 <= gamma_{Q-1} sqrt(Q) ||r|| ||z||
    ||y_S||_2 <= ||y||_2        <= sqrt(n) ||r|| ||z||,  inverse FFT: eps_m ||y_S||,

and ||F_m^* v|| = sqrt(m) ||v||, ||fold(v)|| <= sqrt(Q) ||v|| give

    ||fl(y_S) - y_S||_inf <= E_fft = (2 eps_n + u + sqrt(2) gamma_2 + gamma_{Q-1}
                                      + eps_m) (1 + O(eps)) sqrt(n) ||r|| ||z||.

The canonical sum (products exact, d + 1 terms) is within gamma_{d+1}
(|bias| + ||r|| ||z||) of the exact value (Cauchy-Schwarz on the row), and
adding the bias to the FFT value costs u (|y| + |bias|).  The band is twice
E_fft + E_bias + E_canonical: outside it the FFT value and the canonical value
both have the exact sign, inside it the canonical value decides.  The tests
measure the actual FFT errors at well below 1% of E_fft.
"""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..support.lazy_sparse import as_scipy, sp
from ..support.native import ffi, lib, ptr
from .generator import GENERATOR, standard_normal
from .projection import pack_signs


def _fft():
    # scipy.fft costs ~0.1 s to import: paid only when a circulant projection
    # is evaluated, not by every process that loads a hash model.
    import scipy.fft
    return scipy.fft

#: Streams of hsvm_cli.hashing.generator.standard_normal used by circulant
#: projections (stream 0 is the dense Gaussian projection; 1103-1104 are used
#: by hsvm_cli.train.circulant_fit and hsvm_cli.train.itq, 1105-1106 by the
#: circulant projection of a kernel hash, hashing/krsh.py).
STREAM_R = 1101
STREAM_SIGNS = 1102

#: Name of the bit layout above (rows in stride order); recorded with stored
#: projections so that a later layout can never be mistaken for this one.
LAYOUT = "circulant-stride-v1"

_U = 2.0 ** -53                 # double unit roundoff
_TINY = 1e-290                  # absolute slack for underflow (never reached by float32 inputs)
_BATCH_BYTES = 4 << 20          # per-thread FFT batch: rows x n doubles (measured best 2-8 MB)


def _gamma(k):
    k = max(0, int(k))
    return k * _U / (1.0 - k * _U)


def fast_length(d):
    """The smallest 2^a 3^b 5^c >= d: the FFT length a circulant over d features
    uses (equal to scipy.fft.next_fast_len(d, real=True) with scipy 1.x)."""
    d = int(d)
    if d < 1:
        raise ValueError("need at least one feature")
    best = None
    p2 = 1
    while True:
        p23 = p2
        while True:
            v = p23
            while v < d:
                v *= 5
            if best is None or v < best:
                best = v
            if p23 >= d:
                break
            p23 *= 3
        if p2 >= d:
            break
        p2 *= 2
    return best


def prime_factors(n):
    """Prime factors of n with multiplicity, ascending."""
    n = int(n)
    out = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def stride_order(n):
    """The permutation rho of [0, n): bit t of a block is circulant row rho[t].

    With n = f_1 f_2 ... f_K (prime factors ascending) and Q_k = f_1 ... f_k,
    the stride sets S_k = {Q_k j : j < n / Q_k} are nested, S_K = {0}.  rho
    lists S_K, then S_{K-1} minus S_K, ..., then S_0 minus S_1, each in
    increasing order; any prefix of rho lies in the smallest S_k at least as
    long.  (Row i's key is the largest k with Q_k | i.)"""
    n = int(n)
    level = np.zeros(n, dtype=np.int64)
    q = 1
    for k, f in enumerate(prime_factors(n), start=1):
        q *= f
        level[np.arange(0, n, q)] = k
    return np.lexsort((np.arange(n), -level)).astype(np.int64)


def fft_relative_error(n):
    """eps_n: the assumed normwise relative error bound of one FFT of length n
    (see the module docstring)."""
    return sum((math.sqrt(p) * (p + 3) + 2.0) * _U for p in prime_factors(n)) if n > 1 else 0.0


class _Plan:
    """How to compute the first c rows (in the block's row order) of a block."""

    def __init__(self, n, c, order, rows):
        self.c = c
        if order != "stride":
            # rows[:c] of the circulant, from a full-length inverse transform
            self.Q, self.m = 1, n
            self.rows = np.ascontiguousarray(rows[:c], dtype=np.int64)
            self.sel = self.rows
            self.m_out = int(self.rows.max()) + 1
        else:
            rho = rows
            Q = 1
            for f in prime_factors(n):
                if n // (Q * f) < c:
                    break
                Q *= f
            self.Q, self.m = Q, n // Q
            self.m_out = self.m
            self.rows = np.ascontiguousarray(rho[:c])
            self.sel = np.ascontiguousarray(self.rows // Q)
        self.prefix = bool(np.array_equal(self.sel, np.arange(c)))
        # Bound of the FFT path for these rows, per unit of sqrt(n) ||r|| ||z||
        # (module docstring), doubled as a margin for the rounding of the bound
        # itself and for second-order terms.
        e_n, e_m = fft_relative_error(n), fft_relative_error(self.m)
        a = e_n * (2.0 + e_n) + _U + math.sqrt(2.0) * _gamma(2) * (1.0 + e_n) ** 2
        fold = _gamma(self.Q - 1) * (1.0 + a)
        self.fft_coef = 2.0 * (a + fold + e_m * (1.0 + a + fold))


class CirculantBlocks:
    """The engine: B circulant blocks of size n acting on d features.

    r: float32 [B, n], first columns; s: +-1 [B, d] sign diagonals; bias:
    float32 [B, n] per circulant row or None; order: "stride" (random
    projections, see the module docstring), "natural" (bit t = row t) or an
    array of distinct rows (bit t = row order[t]; each block then has
    len(order) bits; the learned circulant hash functions).
    ``project(X, bits)`` returns float64 [rows, bits] values whose signs are
    exact (module docstring)."""

    def __init__(self, r, s, *, order="stride", bias=None):
        r = np.ascontiguousarray(r, dtype=np.float32)
        s = np.asarray(s)
        if r.ndim != 2 or s.ndim != 2 or r.shape[0] != s.shape[0] or r.shape[0] < 1:
            raise ValueError("r [B, n] and s [B, d] must have the same number of blocks")
        if not np.all((s == 1) | (s == -1)):
            raise ValueError("signs must be +1 or -1")
        self.B, self.n = r.shape
        if isinstance(order, str):
            if order not in ("stride", "natural"):
                raise ValueError("order must be 'stride', 'natural' or an array of rows, not %r" % (order,))
            self.rows = stride_order(self.n) if order == "stride" else np.arange(self.n, dtype=np.int64)
        else:
            rows = np.asarray(order)
            if rows.ndim != 1 or rows.shape[0] < 1 or not np.issubdtype(rows.dtype, np.integer) \
                    or rows.min() < 0 or rows.max() >= self.n or np.unique(rows).shape[0] != rows.shape[0]:
                raise ValueError("order must list distinct circulant rows in [0, %d)" % self.n)
            self.rows = rows.astype(np.int64)
            order = "rows"
        self.block_bits = int(self.rows.shape[0])
        self.d = s.shape[1]
        if self.d > self.n:
            raise ValueError("a circulant of size %d cannot act on %d features" % (self.n, self.d))
        if not np.all(np.isfinite(r)):
            raise ValueError("circulant parameters must be finite")
        self.order = order
        self.r32 = r
        self.r = r.astype(np.float64)
        self.s = np.ascontiguousarray(s, dtype=np.float64)
        if bias is not None:
            bias = np.ascontiguousarray(bias, dtype=np.float32)
            if bias.shape != r.shape or not np.all(np.isfinite(bias)):
                raise ValueError("bias must be finite with the shape of r")
            self.bias = bias.astype(np.float64)
        else:
            self.bias = None
        # FFT(r)/n, once: the inverse transform then runs unnormalised.
        self.rhat = _fft().rfft(self.r, axis=1) / self.n
        self.rnorm = np.sqrt(np.einsum("ij,ij->i", self.r, self.r))
        self._plans = {}
        self._poly = {}
        self._canon_coef = 2.0 * (_gamma(self.d + 1) + 2.0 * _U)

    @property
    def bits(self):
        return self.B * self.block_bits

    def plan(self, c):
        p = self._plans.get(c)
        if p is None:
            p = self._plans[c] = _Plan(self.n, c, self.order, self.rows)
        return p

    def block_sizes(self, bits):
        bits = int(bits)
        bb = self.block_bits
        if bits < 1 or bits > self.bits:
            raise ValueError("bits must be between 1 and %d, got %d" % (self.bits, bits))
        return [(b, min(bb, bits - b * bb)) for b in range((bits + bb - 1) // bb)]

    # ---------------------------------------------------------------- public

    def project(self, X, bits=None, *, threads=1, method="auto"):
        """Values [rows, bits] (float64) of the first ``bits`` code bits of the
        rows of X (dense or CSR, at most d columns; rounded to float32 first,
        as hsvm's Gaussian projection does), every sign exact.
        ``method``: "auto" (FFT for dense input, per block the cheaper of FFT
        and direct evaluation for sparse input), "fft" or "direct" (sparse
        input only); all give the same signs."""
        bits = self.bits if bits is None else int(bits)
        blocks = self.block_sizes(bits)
        if method not in ("auto", "fft", "direct"):
            raise ValueError("method must be auto, fft or direct")
        X = self._check_input(X)
        if method == "direct" and not sp.issparse(X):
            raise ValueError("direct evaluation is for sparse input")
        rows = X.shape[0]
        out = np.empty((rows, bits), dtype=np.float64)
        if rows == 0:
            return out
        threads = max(1, min(int(threads or 1), rows))
        bounds = np.linspace(0, rows, threads + 1).astype(np.int64)

        def work(i):
            s, e = int(bounds[i]), int(bounds[i + 1])
            if e > s:
                self._project_range(X[s:e], blocks, out[s:e], method)

        if threads == 1:
            work(0)
        else:
            with ThreadPoolExecutor(threads) as ex:
                list(ex.map(work, range(threads)))
        return out

    # --------------------------------------------------------------- details

    def _check_input(self, X):
        if sp.issparse(X):
            X = sp.csr_matrix(as_scipy(X))
            if X.dtype != np.float32:
                X = X.astype(np.float32)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            # (dense samples are checked while they are loaded for the FFT)
            if not np.all(np.isfinite(X.data)):
                raise ValueError("samples contain NaN or infinite values")
        else:
            X = np.ascontiguousarray(X, dtype=np.float32)
            if X.ndim != 2:
                raise ValueError("X must be 2-dimensional")
        if X.shape[1] > self.d:
            raise ValueError("samples have %d features, the projection %d" % (X.shape[1], self.d))
        return X

    def _batch_rows(self):
        return int(max(8, min(256, _BATCH_BYTES // (16 * self.n))))

    def _project_range(self, X, blocks, out, method):
        bb = self.block_bits
        sparse = sp.issparse(X)
        if sparse:
            # Blocks the direct evaluation does more cheaply than an FFT are
            # done for all rows in one C call each.
            indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
            indices = np.ascontiguousarray(X.indices, dtype=np.int32)
            data = np.ascontiguousarray(X.data, dtype=np.float32)
            nnz_row = data.size / max(1, X.shape[0])
            direct = [(b, c) for b, c in blocks
                      if method == "direct" or (method == "auto" and self._direct_cheaper(nnz_row, self.plan(c)))]
            for b, c in direct:
                self._direct_block(indptr, indices, data, X.shape[0], b, self.plan(c), out[:, b * bb: b * bb + c])
            blocks = [bc for bc in blocks if bc not in direct]
        if not blocks:
            return
        step = self._batch_rows()
        Z = np.empty((step, self.n), dtype=np.float64)
        sqnorm = np.empty(step, dtype=np.float64)
        for s in range(0, X.shape[0], step):
            Xs = X[s:s + step]
            k = Xs.shape[0]
            if sparse:
                indptr = np.ascontiguousarray(Xs.indptr, dtype=np.int64)
                indices = np.ascontiguousarray(Xs.indices, dtype=np.int32)
                data = np.ascontiguousarray(Xs.data, dtype=np.float32)
            for b, c in blocks:
                p = self.plan(c)
                o = out[s:s + k, b * bb: b * bb + c]
                if sparse:
                    bad = lib.hsvm_circ_load_csr(ptr("int64_t *", indptr), ptr("int32_t *", indices),
                                                 ptr("float *", data), k, ptr("double *", self.s[b]), self.n,
                                                 ptr("double *", Z), ptr("double *", sqnorm))
                else:
                    bad = lib.hsvm_circ_load_dense(ptr("float *", Xs), k, Xs.shape[1], ptr("double *", self.s[b]),
                                                   self.n, ptr("double *", Z), ptr("double *", sqnorm))
                if bad:
                    raise ValueError("samples contain NaN or infinite values")
                y = self._fft_rows(Z[:k], b, p)
                self._finish(Xs, y, k, b, p, sqnorm, o, sparse)

    def _direct_cheaper(self, nnz_row, p):
        # Direct evaluation costs ~nnz m_out multiply-adds per sample (SIMD, one
        # pass); the FFT path two transforms of length ~n plus O(n) passes.
        # The constant was measured on x86-64 with pocketfft (bench_circulant).
        return nnz_row * p.m_out < 2.0 * self.n * max(1.0, math.log2(self.n))

    def _fft_rows(self, Z, b, p):
        """Rows p.rows (their stride set when folded) of circ(r_b) Z^T, by FFT."""
        P = _fft().rfft(Z, axis=1)
        if p.Q > 1:
            G = np.empty((Z.shape[0], p.m // 2 + 1), dtype=np.complex128)
        else:
            G = P
        lib.hsvm_circ_spectrum(ptr("double *", P), Z.shape[0], self.n, ptr("double *", self.rhat[b]), p.Q, p.m,
                               ptr("double *", G))
        return np.ascontiguousarray(_fft().irfft(G, n=p.m, axis=1, norm="forward", overwrite_x=True))

    def band_coefficient(self, p):
        """The band is this times (||r_b|| ||x|| + |bias|) (module docstring)."""
        return p.fft_coef * math.sqrt(self.n) + self._canon_coef

    def _finish(self, Xs, y, k, b, p, sqnorm, o, sparse):
        """Gather the wanted rows into o, and replace the values inside the
        rounding band by the signs of their canonical values."""
        if self.bias is not None:
            key = ("bias", b, p.c)
            bias = self._poly.get(key)
            if bias is None:
                bias = self._poly[key] = np.ascontiguousarray(self.bias[b][p.rows])
            abs_bias = np.abs(bias)
            bias_p, abs_p = ptr("double *", bias), ptr("double *", abs_bias)
        else:
            bias_p = abs_p = ffi.NULL
        sel = p.sel
        cap = 64 + k * p.c // 256
        while True:
            hit_row = np.empty(cap, dtype=np.int64)
            hit_t = np.empty(cap, dtype=np.int64)
            hits = lib.hsvm_circ_finish(ptr("double *", y), k, y.shape[1], ptr("int64_t *", sel), p.c, bias_p, abs_p,
                                        ptr("double *", sqnorm), self.band_coefficient(p), float(self.rnorm[b]),
                                        _view_ptr(o), o.strides[0] // 8, ptr("int64_t *", hit_row),
                                        ptr("int64_t *", hit_t), cap)
            if hits <= cap:
                break
            cap = hits
        if hits == 0:
            return
        sample, t = hit_row[:hits], hit_t[:hits]
        row = np.ascontiguousarray(p.rows[t], dtype=np.int64)
        val = np.empty(hits, dtype=np.float64)
        bias_full = ptr("double *", self.bias[b]) if self.bias is not None else ffi.NULL
        if sparse:
            lib.hsvm_circ_eval_csr(ptr("int64_t *", np.ascontiguousarray(Xs.indptr, dtype=np.int64)),
                                   ptr("int32_t *", np.ascontiguousarray(Xs.indices, dtype=np.int32)),
                                   ptr("float *", np.ascontiguousarray(Xs.data, dtype=np.float32)),
                                   ptr("int64_t *", sample), ptr("int64_t *", row), hits,
                                   ptr("double *", self.r[b]), ptr("double *", self.s[b]), self.n, bias_full,
                                   ptr("double *", val))
        else:
            lib.hsvm_circ_eval_dense(ptr("float *", Xs), Xs.shape[1], ptr("int64_t *", sample), ptr("int64_t *", row),
                                     hits, ptr("double *", self.r[b]), ptr("double *", self.s[b]), self.n,
                                     bias_full, ptr("double *", val))
        o[sample, t] = np.sign(val)

    def _direct_block(self, indptr, indices, data, k, b, p, o):
        key = (b, p.Q)
        poly = self._poly.get(key)
        if poly is None:
            i = np.arange(p.m, dtype=np.int64)
            idx = (p.Q * i[None, :] - np.arange(p.Q, dtype=np.int64)[:, None]) % self.n
            poly = self._poly[key] = np.ascontiguousarray(self.r[b][idx])
        bias_S = None
        if self.bias is not None:
            bias_S = np.ascontiguousarray(self.bias[b][p.Q * np.arange(p.m_out, dtype=np.int64)])
        scratch = np.empty(p.m_out, dtype=np.float64)
        lib.hsvm_circ_direct_csr(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("float *", data), k,
                                 ptr("double *", self.s[b]), ptr("double *", poly), p.Q, p.m, p.m_out,
                                 ptr("double *", bias_S) if bias_S is not None else ffi.NULL,
                                 ptr("int64_t *", np.ascontiguousarray(p.sel, dtype=np.int64)), p.c,
                                 ptr("double *", scratch), _view_ptr(o), o.strides[0] // 8)


def _view_ptr(view):
    """double * to the first element of a row-strided view (rows contiguous
    inside, any row stride), which ffi.from_buffer refuses; the caller keeps
    the view alive for the call."""
    assert view.dtype == np.float64 and view.strides[1] == 8 and view.strides[0] % 8 == 0
    return ffi.cast("double *", view.ctypes.data)


def _unpack_signs(packed, d):
    bits = np.unpackbits(np.asarray(packed, dtype=np.uint8), axis=1, bitorder="little")[:, :d]
    return np.where(bits == 1, -1, 1).astype(np.int8)


class CirculantProjection:
    """A D-bit random circulant projection of d features (module docstring):
    blocks of h(x) = sgn(circ(r_b) diag(s_b) x).

    Build it with :meth:`from_seed` (parameters re-derived from the seed by
    hsvm's generator, O(d) per block) or :meth:`from_arrays` (stored
    parameters).  ``project(X, bits)`` gives values with exact signs,
    ``codes(X, bits)`` packed codes as `hsvm_cli.hashing.projection.pack_signs`,
    ``encoder(bits)`` the sample encoder of a prefix of bits."""

    kind = "circulant"

    def __init__(self, r, signs, *, n_features, bits, seed=None):
        bits = int(bits)
        n_features = int(n_features)
        r = np.asarray(r, dtype=np.float32)
        signs = np.asarray(signs)
        if bits < 1:
            raise ValueError("bits must be positive, got %d" % bits)
        if r.ndim != 2 or r.shape[1] < n_features:
            raise ValueError("r must be [blocks, n] with n >= n_features")
        n = r.shape[1]
        B = (bits + n - 1) // n
        if r.shape[0] != B or signs.shape != (B, n_features):
            raise ValueError("%d bits over %d features need r [%d, %d] and signs [%d, %d], got %s and %s"
                             % (bits, n_features, B, n, B, n_features, list(r.shape), list(signs.shape)))
        self.n_features = n_features
        self.bits = bits
        self.seed = None if seed is None else int(seed)
        self.engine = CirculantBlocks(r, signs, order="stride")

    @classmethod
    def from_seed(cls, *, bits, n_features, seed, streams=(STREAM_R, STREAM_SIGNS)):
        """Parameters derived from ``seed``: a pure function of (seed,
        n_features, bits), and a prefix of blocks for a prefix of bits.
        ``streams``: the generator streams of r and of the signs (another use
        of circulant projections takes its own pair)."""
        from ..errors import OptionError
        from ..io.svmlight import MAX_FEATURES
        from ..support.arrays import is_int
        from ..support.memory import check_allocation
        for name, v in (("bits", bits), ("n_features", n_features)):
            if not is_int(v) or v < 1:
                raise OptionError("%s must be a positive integer, not %r" % (name, v))
        bits, d = int(bits), int(n_features)
        if d > MAX_FEATURES:
            raise OptionError("n_features must be at most %d, not %d" % (MAX_FEATURES, d))
        n = fast_length(d)
        B = (bits + n - 1) // n
        # r (float64 drawn, float32 kept) and the signs (float64 drawn, int8
        # kept): a width of 2^31 had asked for 16 GiB unchecked
        check_allocation(12 * B * n + 9 * B * d, "a circulant projection of %d bits x %d features" % (bits, d))
        stream_r, stream_signs = streams
        r = standard_normal(B * n, seed=seed, stream=stream_r).astype(np.float32).reshape(B, n)
        g = standard_normal(B * d, seed=seed, stream=stream_signs).reshape(B, d)
        return cls(r, np.where(g < 0.0, -1, 1).astype(np.int8), n_features=d, bits=bits, seed=seed)

    @property
    def n_fft(self):
        return self.engine.n

    @property
    def n_blocks(self):
        return self.engine.B

    def check_bits(self, bits):
        """The number of leading bits to use: ``bits`` (None: all), refused beyond the projection's."""
        bits = self.bits if bits is None else int(bits)
        if bits < 1 or bits > self.bits:
            raise ValueError("bits must be between 1 and the projection's %d, got %d" % (self.bits, bits))
        return bits

    def project(self, X, bits=None, *, threads=1):
        """float64 [n, bits]: the projections of the rows of X (dense float32
        or CSR, at most n_features columns) with exact signs."""
        return self.engine.project(X, self.check_bits(bits), threads=threads)

    def codes(self, X, bits=None, *, threads=1):
        """uint64 [n, bits/64]: bit j of a row is 1 where its projection j > 0."""
        bits = self.check_bits(bits)
        if bits % 64:
            raise ValueError("packed codes need a multiple of 64 bits, got %d" % bits)
        return pack_signs(self.project(X, bits, threads=threads))

    def encoder(self, bits=None):
        """The sample encoder of the first ``bits`` bits (a
        :class:`CirculantEncoder`, what `HashModel.encoder` hands out)."""
        return CirculantEncoder(self, bits)

    def prefix(self, bits):
        """The projection of the first ``bits`` bits as its own object (its
        parameters are the first blocks of this one's)."""
        bits = self.check_bits(bits)
        B = (bits + self.n_fft - 1) // self.n_fft
        return CirculantProjection(self.engine.r32[:B], self.engine.s[:B].astype(np.int8),
                                   n_features=self.n_features, bits=bits, seed=self.seed)

    # ---------------------------------------------------------------- storage

    def to_arrays(self):
        """Arrays for a container: ``circulant_r`` float32 [B, n] (the first
        columns) and ``circulant_signs`` uint8 [B, ceil(d/8)] (bit j % 8 of
        byte j // 8 set where s_j = -1).  B (4 n + ceil(d / 8)) bytes, at most
        d * ceil(D / d) * 8 since n < 1.5 d and B <= ceil(D / d)."""
        neg = (self.engine.s < 0).astype(np.uint8)
        return {"circulant_r": np.ascontiguousarray(self.engine.r32),
                "circulant_signs": np.packbits(neg, axis=1, bitorder="little")}

    def meta(self):
        """Scalars that identify the projection (JSON-able)."""
        return {"projection_kind": self.kind, "projection_layout": LAYOUT, "generator": GENERATOR,
                "bits": self.bits, "n_features": self.n_features, "n_fft": self.n_fft,
                "seed": self.seed}

    @classmethod
    def from_arrays(cls, arrays, *, n_features, bits, seed=None):
        """Rebuild from :meth:`to_arrays` output, validating shapes and dtypes
        (ValueError on any mismatch)."""
        try:
            r = arrays["circulant_r"]
            packed = arrays["circulant_signs"]
        except KeyError as exc:
            raise ValueError("missing array %s" % exc) from None
        r = np.asarray(r)
        packed = np.asarray(packed)
        d = int(n_features)
        if r.dtype != np.float32 or packed.dtype != np.uint8 or r.ndim != 2 or packed.ndim != 2:
            raise ValueError("circulant_r must be float32 [B, n] and circulant_signs uint8 [B, ceil(d/8)]")
        if r.shape[1] != fast_length(d):
            raise ValueError("circulant_r has blocks of %d, the layout %s uses %d for %d features"
                             % (r.shape[1], LAYOUT, fast_length(d), d))
        if packed.shape != (r.shape[0], (d + 7) // 8):
            raise ValueError("circulant_signs has shape %s, expected %s" % (list(packed.shape), [r.shape[0], (d + 7) // 8]))
        if d % 8 and np.any(packed[:, -1] >> np.uint8(d % 8)):
            raise ValueError("circulant_signs has bits set beyond the %d features" % d)
        zero = np.flatnonzero(~np.any(r, axis=1))
        if zero.size:
            raise ValueError("circulant_r block %d is zero" % zero[0])
        return cls(r, _unpack_signs(packed, d), n_features=d, bits=bits, seed=seed)

    @classmethod
    def restore(cls, *, bits, n_features, seed, layout=LAYOUT, arrays=None, streams=(STREAM_R, STREAM_SIGNS)):
        """The projection a hash model describes: its stored parameters when
        ``arrays`` holds them (`to_arrays` names), else re-derived from the
        seed.  ``layout`` is the recorded `LAYOUT`; another one is refused
        (ValueError), never silently reinterpreted."""
        if layout != LAYOUT:
            raise ValueError("circulant projection layout %r is unknown to this hsvm (it reads %s)" % (layout, LAYOUT))
        if arrays is not None and ("circulant_r" in arrays or "circulant_signs" in arrays):
            return cls.from_arrays(arrays, n_features=n_features, bits=bits, seed=seed)
        return cls.from_seed(bits=bits, n_features=n_features, seed=seed, streams=streams)

    def stored_bytes(self):
        """Bytes the projection takes when stored in a hash model (``--store-projection``)."""
        return sum(a.nbytes for a in self.to_arrays().values())


class CirculantEncoder:
    """The first ``bits`` bits of a :class:`CirculantProjection` as a sample
    encoder (what `HashModel.encoder` hands out for a circulant hash model):
    ``project(X)`` values with exact signs, ``codes(X)`` packed codes."""

    def __init__(self, projection, bits):
        self.projection = projection
        self.bits = projection.check_bits(bits)

    def project(self, X):
        return self.projection.project(X, self.bits)

    def codes(self, X):
        return self.projection.codes(X, self.bits)
