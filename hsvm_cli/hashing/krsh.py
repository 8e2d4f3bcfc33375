"""Kernelized random subspace hashing (KRSH): kernel hash codes for Hash-SVM.

Mu, Hua, Fan & Chang, "Hash-SVM: Scalable Kernel Machines for Large-Scale
Visual Classification", CVPR 2014, Algorithm 1.  For a kernel
k(x, z) = <phi(x), phi(z)>:

1. Landmarks.  Training rows are offered in a seeded random order; each is
   kept while fewer than m are kept and its feature vector is not (almost) in
   the span of those kept: with the Cholesky factor K_ZZ = L L^T of the kept
   landmarks' Gram matrix and L l = k(Z, c), the squared residual of phi(c)
   after projection on span phi(Z) is r^2 = k(c, c) - |l|^2 (kernel
   Gram-Schmidt); c is discarded when r^2 <= tol * k(c, c).  The kept rows
   get the new row (l^T, r) of L.
2. Subspace coordinates.  V = L^{-T} is an orthonormal basis of span phi(Z)
   (V^T K_ZZ V = I), and y(x) = V^T k(Z, x) = L^{-1} k(Z, x) in R^m are the
   coordinates of the projection of phi(x) on that span:
   y(x1).y(x2) = k(Z,x1)^T K_ZZ^{-1} k(Z,x2), exact for landmarks.
3. Bits.  Code bit j is [r_j . y(x) > 0] for Gaussian r_j (Charikar's sign
   random projections), so P[bits differ] = theta'/pi for the angle theta'
   between y(x1) and y(x2), and with the bits read as +-1/sqrt(k) features
   x~,  x~1 . x~2 = 1 - 2 d_H/k  (Hash-SVM's surrogate kernel, Eq. 2) has
   expectation 1 - 2 theta'/pi; cos(pi d_H/k) estimates cos theta'.
   ``projection="circulant"``: the r_j are instead the rows of blocks of
   circ(r) diag(s) over the m coordinates (hashing/circulant.py, Yu et al.
   2014), each bit still a sign random projection, computed by FFT in
   O(m log m) per block of m bits instead of O(m k) -- at m = 4096 and
   k = 16384 bits the dense product is most of the time of hashing a sample.

Kernels (inputs are rounded to float32 first, at fit and at transform):
``linear`` x.z; ``poly`` (gamma x.z + coef0)^degree; ``rbf``
exp(-gamma |x - z|^2); ``chi2`` exp(-gamma sum_j (x_j - z_j)^2 / (x_j + z_j))
(the exponential chi-squared kernel of Zhang et al. / Vedaldi & Zisserman,
scikit-learn's ``chi2_kernel``; chosen over the additive 2xz/(x+z) because it
has k(x, x) = 1 like the RBF kernel, so every sample lies on the unit sphere
of the feature space and the bits see angles only; terms with x_j + z_j = 0
are 0); ``intersection`` sum_j min(x_j, z_j).  chi2 and intersection need
non-negative features.

``gamma="auto"``: the median heuristic.  2000 pairs of distinct training rows
are drawn by a seeded PCG64 stream (a stable bit stream) and
gamma = 1 / median(D) with D the squared Euclidean distance (rbf) or the
chi-squared distance sum (x-z)^2/(x+z) (chi2), each summed exactly
(math.fsum); for poly gamma = 1 / median |x|^2 over the drawn rows, so that
gamma x.z is of order 1.  The value and the rule are recorded.

Reproducibility.  The fit (landmark order, kernel values, L) runs in C in
double precision in a fixed order with an exp built from exactly rounded
operations (native/kernels.c), and the projection R comes from the project's
generator (``hsvm_cli.hashing.generator.standard_normal(seed, stream=PROJECTION_STREAM)``,
computed by its C twin), so a ``.khm`` file is byte-identical on every
machine.  Code bits are defined from y rounded to float32: bit j is
[hsvm_exact_dot(y, r_j) > 0], a double-precision sum of exact products in a
fixed order; the fast path (float32 BLAS in blocks, a rigorous error band,
exact recomputation inside it) returns exactly those bits, so **given the
float32 y, the bits are the same on every machine and BLAS**.  What is not
guaranteed: y itself is computed with BLAS (kernel values for rbf, poly and
linear; the triangular solve for all kernels) and libm's exp in double, whose
last bits may differ between machines (~1e-16 relative).  A float32 y entry
changes only when such a difference straddles a float32 rounding boundary
(probability ~1e-8 per entry, so ~4e-5 per sample at m = 4096), and a code bit
then changes only if its projection is also within ~1e-7 of zero.  So codes
agree across machines in practice but are not proven identical.
"""
import hashlib
import json
import math

import numpy as np

from ..errors import DataError, ModelMismatchError, OptionError, SampleError
from ..predict.samples import as_samples
from ..preprocess import row_sum_squares
from ..support.arrays import FLOAT32_MAX, check_seed
from ..support.lazy_sparse import sp
from ..support.native import ffi, lib, ptr
from . import MAX_CODE_BITS
from .circulant import LAYOUT as CIRCULANT_LAYOUT
from .circulant import CirculantProjection
from .generator import GENERATOR, standard_normal
from .projection import pack_signs

__all__ = ["KERNELS", "KERNEL_PARAMETERS", "KHM_KIND", "KHM_VERSION", "PROJECTION_STREAM", "DEFAULT_TOL", "KernelHash",
           "kernel_matrix", "auto_gamma", "fit_kernel_hash", "first_negative", "check_codes_meta",
           "NegativeFeatureError"]

#: Kernel names and their ids in native/hsvm_kernels.h.
KERNELS = {"linear": 0, "poly": 1, "rbf": 2, "chi2": 3, "intersection": 4}
_USES_GAMMA = ("rbf", "chi2", "poly")
#: The kernels each parameter of a kernel hash is for (the others ignore it).
KERNEL_PARAMETERS = {"degree": ("poly",), "coef0": ("poly",), "gamma": _USES_GAMMA}
_NONNEGATIVE = ("chi2", "intersection")

KHM_KIND = "hsvm-kernel-hash"
KHM_VERSION = 1
#: Stream of hsvm_cli.hashing.generator.standard_normal used for KRSH projections
#: (stream 0 is the linear hash model's).
PROJECTION_STREAM = 10
#: Streams of a circulant KRSH projection: r from this one, the signs from the
#: next (1101-1104 are the other circulant uses, hashing/circulant.py).
CIRCULANT_PROJECTION_STREAM = 1105
#: Projection kinds of the bits.
PROJECTIONS = ("gaussian", "circulant")
#: Landmarks per float32 BLAS block of the projection (see codes_from_y).
PROJECTION_BLOCK = 512
#: Default relative residual below which a landmark candidate is discarded.
DEFAULT_TOL = 1e-6
#: Pairs of rows drawn by the median heuristic.
GAMMA_PAIRS = 2000
# SeedSequence spawn keys separating the uses of PCG64 streams.
_SPAWN_LANDMARKS = 0x4B525348          # "KRSH"
_SPAWN_GAMMA = 0x47414D41              # "GAMA"


# ----------------------------------------------------------------- inputs

def _dense32(X, d=None):
    """Rows as a C-contiguous float32 array, zero-padded to d columns."""
    if sp.issparse(X):
        X = X.tocsr()
        if d is not None and X.shape[1] < d:
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
        X = X.astype(np.float32).toarray()
    else:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise SampleError("samples must be a 2-D array, got shape %s" % (X.shape,))
        if d is not None and X.shape[1] < d:
            X = np.hstack([X, np.zeros((X.shape[0], d - X.shape[1]), np.float32)])
    if d is not None and X.shape[1] != d:
        raise SampleError("samples have %d features, the kernel hash was fitted on %d" % (X.shape[1], d))
    return np.ascontiguousarray(X)


def first_negative(X):
    """(row, column) of the first negative or non-finite entry of X, or None."""
    if sp.issparse(X):
        X = X.tocsr()
        bad = ~(np.isfinite(X.data) & (X.data >= 0))
        if not bad.any():
            return None
        k = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
        return row, int(X.indices[k])
    X = np.ascontiguousarray(X, dtype=np.float32)
    k = int(lib.hsvm_first_negative(ptr("float *", X), X.shape[0], X.shape[1])) if X.size else -1
    return None if k < 0 else divmod(k, X.shape[1])


def _shown_value(value):
    """A float32 sample value as the file wrote it (-0.3, not
    -0.30000001192092896: numpy's shortest float32 repr)."""
    try:
        v32 = np.float32(value)
        if float(v32) == float(value):
            return str(v32)
    except (TypeError, ValueError, OverflowError):
        pass
    return repr(value)


class NegativeFeatureError(ValueError):
    """A negative (or non-finite) feature given to the chi2 or intersection
    kernel.  ``row`` is the 0-based row of the array passed in (the caller
    maps it to FILE:LINE), ``feature`` the 1-based feature index."""

    def __init__(self, kernel, row, feature, value):
        # X's own (0-based) indices to a Python caller; the CLI names FILE:LINE and the file's feature
        super().__init__("the %s kernel needs non-negative features: X[%d, %d] is %s"
                         % (kernel, row, feature - 1, _shown_value(value)))
        self.kernel, self.row, self.feature, self.value = kernel, row, feature, value


def _check_kernel_input(X, kernel):
    if kernel in _NONNEGATIVE:
        bad = first_negative(X)
        if bad is not None:
            value = X[bad[0], bad[1]]
            # a scalar, or a 1 x 1 sparse matrix on older scipy
            value = value.toarray() if hasattr(value, "toarray") else value
            raise NegativeFeatureError(kernel, bad[0], bad[1] + 1, float(np.asarray(value).ravel()[0]))
    elif not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
        raise SampleError("samples contain NaN or infinite values")


class SubspaceOverflowError(DataError):
    """A sample (row ``row`` of the samples hashed) whose kernel subspace
    coordinates leave float32."""

    def __init__(self, kernel, row):
        self.kernel, self.row = kernel, row
        self.reason = ("kernel subspace coordinates beyond float32: the %s kernel overflows on it (%s)"
                       % (kernel, _RANGE_ADVICE[kernel]))
        super().__init__("row %d: %s" % (row, self.reason))


#: What brings a kernel's values back within float32 (rbf's are at most 1).
_RANGE_ADVICE = {"poly": "lower --gamma, --coef0 or --degree", "rbf": "lower --gamma", "chi2": "lower --gamma",
                 "linear": "scale the features down", "intersection": "scale the features down"}


def _check_kernel_range(X, kernel, gamma, degree, coef0):
    """Refuse a kernel whose values on the training rows leave float32, where
    the subspace coordinates are kept (a hash fitted on them could not hash
    its own training rows): k(x, x) -- |x|^2 for linear, the feature sum for
    intersection (its features are non-negative) -- computed in float64;
    rbf's and chi2's values are at most 1."""
    if kernel == "poly":
        _check_poly_range(X, gamma, degree, coef0)
        return
    if kernel in ("rbf", "chi2") or X.shape[0] == 0:
        return
    if kernel == "linear":
        top = float(_row_squares(X).max(initial=0.0))
        what = "|x|^2"
    else:
        top = float(np.asarray(X.sum(axis=1, dtype=np.float64)).ravel().max(initial=0.0))
        what = "the sum of a row's features"
    if top > FLOAT32_MAX:
        raise DataError("the %s kernel reaches k(x, x) = %s = %.3g on the training rows, beyond float32, where "
                        "the kernel subspace is kept: %s" % (kernel, what, top, _RANGE_ADVICE[kernel]))


def _row_squares(X):
    # in float64: float32 data of 3e38 squares to inf in its own type
    if sp.issparse(X):
        return row_sum_squares(X, dtype=np.float64)
    X = np.asarray(X, np.float64)
    return np.einsum("ij,ij->i", X, X)


def _check_poly_range(X, gamma, degree, coef0):
    """Refuse a polynomial kernel whose values on the training rows leave
    float32, where the subspace coordinates are kept: (g |x|^2 + c)^degree,
    compared in logarithms so that the check itself cannot overflow."""
    sq = _row_squares(X)
    base = float(gamma) * float(sq.max(initial=0.0)) + abs(float(coef0))
    if base > 0 and degree * math.log(base) > math.log(FLOAT32_MAX):
        raise DataError("the poly kernel reaches (gamma |x|^2 + coef0)^degree = %.3g^%d on the training rows, "
                         "beyond float32, where the kernel subspace is kept: lower --gamma, --coef0 or --degree"
                         % (base, degree))


def _check_params(kernel, gamma, degree, coef0):
    if kernel not in KERNELS:
        raise OptionError("unknown kernel %r (choose from %s)" % (kernel, ", ".join(KERNELS)))
    if kernel in _USES_GAMMA:
        if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(gamma) and gamma > 0):
            raise OptionError("gamma must be a positive finite number for the %s kernel, not %r" % (kernel, gamma))
    if kernel == "poly":
        if isinstance(degree, (bool, np.bool_)) or not isinstance(degree, (int, np.integer)) or not 1 <= degree <= 64:
            raise OptionError("degree must be an integer in 1..64, not %r" % (degree,))
        if not isinstance(coef0, (int, float, np.integer, np.floating)) or not math.isfinite(coef0):
            raise OptionError("coef0 must be a finite number, not %r" % (coef0,))


# ---------------------------------------------------------------- kernels

def kernel_matrix(X, Z, *, kernel, gamma=None, degree=3, coef0=1.0, exact=False, _landmarks=None):
    """k(x_i, z_l) as float64 [n, m] for the rows of X and Z (both rounded to
    float32).  rbf, poly and linear use double BLAS unless ``exact``; chi2,
    intersection and ``exact=True`` use the fixed-order C loop (the values the
    fit uses, identical on every machine).  ``_landmarks``: Z's
    :class:`_Landmarks` made once, for many calls with the same Z."""
    _check_params(kernel, gamma, degree, coef0)
    if _landmarks is None:
        _landmarks = _Landmarks(Z, kernel)
    Z = _landmarks.Z
    X = _dense32(X, Z.shape[1])
    _check_kernel_input(X, kernel)
    n, m = X.shape[0], Z.shape[0]
    if exact or kernel in _NONNEGATIVE:
        out = np.empty((n, m), dtype=np.float64)
        if n and m:
            ZT = np.ascontiguousarray(Z.T)
            lib.hsvm_kernel_block(KERNELS[kernel], ptr("float *", X), n, X.shape[1], ptr("float *", ZT), m, m,
                                  float(gamma or 0.0), float(coef0), int(degree), ptr("double *", out), m)
        return out
    Xd = X.astype(np.float64)
    G = Xd @ _landmarks.Zd.T
    if kernel == "linear":
        return G
    if kernel == "poly":
        return (float(gamma) * G + float(coef0)) ** int(degree)
    # |x - z|^2 = |x|^2 + |z|^2 - 2 x.z, clipped at 0 against cancellation.
    D = np.einsum("ij,ij->i", Xd, Xd)[:, None] + _landmarks.sq[None, :] - 2.0 * G
    np.maximum(D, 0.0, out=D)
    D *= -float(gamma)
    return np.exp(D, out=D)


class _Landmarks:
    """What kernel_matrix makes of the landmarks Z on every call: Z as dense
    float32 (checked for the kernel), and for the BLAS kernels Z in float64
    and its rows' squared norms -- made once per kernel hash instead of once
    per chunk (800 x 11,698 landmarks: ~0.25 s a chunk, most of hash-data's
    time at --chunk-rows 100).  The same values as made on each call."""

    def __init__(self, Z, kernel):
        self.Z = _dense32(Z)
        _check_kernel_input(self.Z, kernel)
        self._Zd = self._sq = None

    @property
    def Zd(self):
        if self._Zd is None:
            self._Zd = self.Z.astype(np.float64)
        return self._Zd

    @property
    def sq(self):
        if self._sq is None:
            self._sq = np.einsum("ij,ij->i", self.Zd, self.Zd)
        return self._sq


def _pcg(seed, key):
    return np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(key,)))


def auto_gamma(X, kernel, *, seed=0, pairs=GAMMA_PAIRS):
    """The median-heuristic gamma of the module docstring, and a description
    of the rule: ``(gamma, rule)``."""
    if kernel not in _USES_GAMMA:
        raise OptionError("the %s kernel has no gamma" % kernel)
    n = X.shape[0]
    if n < 2:
        raise DataError("gamma='auto' needs at least two training rows")
    raw = _pcg(seed, _SPAWN_GAMMA).random_raw(2 * pairs)
    ia = (raw[:pairs] % np.uint64(n)).astype(np.int64)
    ib = (ia + 1 + (raw[pairs:] % np.uint64(n - 1)).astype(np.int64)) % n      # never equal to ia
    rows = np.unique(np.concatenate([ia, ib]))
    Xr = _dense32(X[rows] if sp.issparse(X) else np.asarray(X)[rows]).astype(np.float64)
    pos = {int(r): k for k, r in enumerate(rows)}
    if kernel == "poly":
        vals = [math.fsum(Xr[pos[int(i)]] ** 2) for i in ia]
        rule = "1 / median |x|^2 over %d seeded draws of training rows (%d distinct)" % (pairs, np.unique(ia).size)
    else:
        vals = []
        for i, j in zip(ia.tolist(), ib.tolist()):
            a, b = Xr[pos[i]], Xr[pos[j]]
            t = (a - b) ** 2
            if kernel == "chi2":
                s = a + b
                t = np.divide(t, s, out=np.zeros_like(t), where=s > 0)
            vals.append(math.fsum(t))
        rule = ("1 / median squared Euclidean distance" if kernel == "rbf" else
                "1 / median chi-squared distance sum (x-z)^2/(x+z)") + \
            " over %d seeded draws of pairs of distinct training rows (%d distinct)" % (
                pairs, np.unique(np.minimum(ia, ib) * n + np.maximum(ia, ib)).size)
    med = float(np.median(np.asarray(vals)))
    if not (med > 0 and math.isfinite(med)):
        what = "squared norm |x|^2 of the sampled rows" if kernel == "poly" else "distance of the sampled pairs"
        raise DataError("gamma='auto': the median %s is %r; give gamma explicitly" % (what, med))
    return 1.0 / med, rule


# --------------------------------------------------------------- the model

class KernelHash:
    """A fitted KRSH kernel hash: landmarks ``Z`` float32 [m, d], the
    Cholesky factor ``L`` float64 [m, m] (lower, K_ZZ = L L^T, V = L^{-T}),
    kernel parameters and the projection seed.  ``bits`` is the code length
    the projection was made for; any multiple of 64 up to it may be asked for
    (a prefix of the bits)."""

    def __init__(self, *, kernel, gamma, degree, coef0, Z, L, bits, seed, tol, landmark_rows=None,
                 landmark_diag=None, info=None, generator=GENERATOR, projection_stream=None,
                 projection_kind="gaussian", path=None, provenance=None):
        if projection_kind not in PROJECTIONS:
            raise OptionError("projection must be one of %s, not %r" % (", ".join(PROJECTIONS), projection_kind))
        if projection_stream is None:
            projection_stream = PROJECTION_STREAM if projection_kind == "gaussian" else CIRCULANT_PROJECTION_STREAM
        self.kernel = kernel
        self.gamma = None if gamma is None else float(gamma)
        self.degree = int(degree)
        self.coef0 = float(coef0)
        self.Z = np.ascontiguousarray(Z, dtype=np.float32)
        self.L = np.ascontiguousarray(L, dtype=np.float64)
        self.bits = int(bits)
        self.seed = int(seed)
        self.tol = float(tol)
        m = self.Z.shape[0]
        self.landmark_rows = np.full(m, -1, np.int64) if landmark_rows is None else np.asarray(landmark_rows, np.int64)
        self.landmark_diag = np.diagonal(self.L) ** 2 if landmark_diag is None else np.asarray(landmark_diag, np.float64)
        self.info = dict(info or {})
        self.generator = generator
        self.projection_stream = int(projection_stream)
        self.projection_kind = projection_kind
        self._circulant = None
        self.path = path
        #: hsvm version, command line and training input (models/provenance.py)
        self.provenance = dict(provenance or {})
        self._R = None
        self._landmarks = None          # kernel_values' dense and float64 landmarks, made on first use
        self._digest = None
        #: entries recomputed exactly by codes_from_y so far (diagnostics)
        self.recomputed = 0

    def __repr__(self):
        # its parameters, not its landmarks
        return "KernelHash(%s kernel, %d landmarks x %d features, %d bits, %s projection, seed %d%s)" % (
            self.kernel, self.n_landmarks, self.n_features, self.bits, self.projection_kind, self.seed,
            ", path=%r" % self.path if self.path else "")

    @property
    def n_landmarks(self):
        return int(self.Z.shape[0])

    @property
    def n_features(self):
        return int(self.Z.shape[1])

    def params(self):
        """Everything besides Z and L that determines a code (a circulant
        projection adds its kind and layout; a Gaussian one leaves them out,
        so that the digests of earlier files stay what they were)."""
        params = {"kernel": self.kernel, "gamma": self.gamma, "degree": self.degree, "coef0": self.coef0,
                  "bits": self.bits, "seed": self.seed, "generator": self.generator,
                  "projection_stream": self.projection_stream, "n_features": self.n_features,
                  "landmarks": self.n_landmarks}
        if self.projection_kind != "gaussian":
            params.update(projection_kind=self.projection_kind, projection_layout=CIRCULANT_LAYOUT)
        return params

    def content_sha256(self):
        """SHA-256 of Z, L and :meth:`params`: names the kernel hash in codes
        files so that codes from another ``.khm`` are refused."""
        if self._digest is None:
            h = hashlib.sha256()
            h.update(json.dumps(self.params(), sort_keys=True).encode())
            h.update(np.ascontiguousarray(self.Z, dtype="<f4").tobytes())
            h.update(np.ascontiguousarray(self.L, dtype="<f8").tobytes())
            self._digest = h.hexdigest()
        return self._digest

    def check_bits(self, bits):
        """The number of leading code bits to use: ``bits`` (None: all), refused beyond the hash's."""
        if bits is None:
            return self.bits
        if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) \
                or bits <= 0 or bits % 64 or bits > self.bits:
            raise OptionError("bits must be a multiple of 64 between 64 and %d, got %r" % (self.bits, bits))
        return int(bits)

    def projection(self, bits=None):
        """R float32 [bits, m]: element (j, l) is normal j*m + l of
        standard_normal(seed, stream=projection_stream); a prefix of rows is
        the projection of a shorter code.  (Gaussian projections only.)"""
        bits = self.check_bits(bits)
        if self.projection_kind != "gaussian":
            raise OptionError("this kernel hash's projection is %s, not a dense matrix" % self.projection_kind)
        if self._R is None:
            m = self.n_landmarks
            g = standard_normal(self.bits * m, seed=self.seed, stream=self.projection_stream)
            self._R = g.reshape(self.bits, m).astype(np.float32)
            del g
            self._blocks = [(s, min(s + PROJECTION_BLOCK, m)) for s in range(0, m, PROJECTION_BLOCK)]
            self._rblock_norms = np.empty((self.bits, len(self._blocks)), dtype=np.float64)
            for b, (s0, s1) in enumerate(self._blocks):
                rb = self._R[:, s0:s1].astype(np.float64)
                self._rblock_norms[:, b] = np.sqrt(np.einsum("ij,ij->i", rb, rb))
            width = max(s1 - s0 for s0, s1 in self._blocks)
            mu = width * 2.0 ** -24
            self._gamma_block = mu / (1.0 - mu)
        return self._R[:bits]

    def __getstate__(self):
        # the landmarks' derived forms are remade on first use, not shipped
        state = self.__dict__.copy()
        state["_landmarks"] = None
        return state

    def kernel_values(self, X):
        """k(Z, x) for the rows of X: float64 [n, m]."""
        if self._landmarks is None:
            self._landmarks = _Landmarks(self.Z, self.kernel)
        return kernel_matrix(X, self.Z, kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                             _landmarks=self._landmarks)

    def _solve(self, K):
        # Y = K L^{-T}: with K C-ordered [n, m], K^T is its Fortran view, and
        # L X = K^T is solved in place by dtrsm (a = L^T's Fortran view = L).
        if K.shape[0] == 0:
            return K
        B = np.asfortranarray(K.T)
        from scipy.linalg import blas  # here: scipy.linalg costs every command ~0.1 s to import
        X = blas.dtrsm(1.0, self.L.T, B, side=0, lower=0, trans_a=1, diag=0, overwrite_b=1)
        return np.ascontiguousarray(X.T)

    def transform(self, X, *, chunk_rows=2048):
        """Subspace coordinates y(x) = V^T k(Z, x) = L^{-1} k(Z, x), float64 [n, m]."""
        X = as_samples(X)
        n = X.shape[0]
        out = np.empty((n, self.n_landmarks), dtype=np.float64)
        for s in range(0, n, chunk_rows):
            try:
                K = self.kernel_values(X[s:s + chunk_rows])
            except NegativeFeatureError as e:
                raise NegativeFeatureError(e.kernel, e.row + s, e.feature, e.value) from None
            out[s:s + chunk_rows] = self._solve(K)
        return out

    def circulant_projection(self):
        """The circulant projection of the m subspace coordinates (circulant
        kernel hashes only): streams projection_stream and the next."""
        if self.projection_kind != "circulant":
            raise OptionError("this kernel hash's projection is %s" % self.projection_kind)
        if self._circulant is None:
            self._circulant = CirculantProjection.from_seed(
                bits=self.bits, n_features=self.n_landmarks, seed=self.seed,
                streams=(self.projection_stream, self.projection_stream + 1))
        return self._circulant

    def codes_from_y(self, Y, bits=None):
        """Packed codes uint64 [n, bits/64] of subspace coordinates Y.

        A circulant projection: bit j is the sign of its circulant row's
        canonical double sum over y rounded to float32 (hashing/circulant.py
        computes it by FFT, recomputing the entries within its round-off
        band).  A Gaussian projection: bit j of a row is 1 iff
        ``hsvm_exact_dot(y, r_j) > 0`` (native/
        hsvm_kernels.h: y rounded to float32, products exact in double, a fixed
        summation order).  Computed fast: float32 BLAS over blocks of
        PROJECTION_BLOCK landmarks, the block results added in double; any
        float32 summation of B terms is within gamma_B |y_b| |r_b| of the
        exact block sum (gamma_B = B u / (1 - B u), u = 2^-24), so an entry
        further than twice the summed bound (inflated by 0.1% for the
        rounding of the bound itself) from zero already has the canonical
        sign, and only the few entries inside it are recomputed exactly."""
        bits = self.check_bits(bits)
        Y = np.asarray(Y)
        if Y.size and not (np.isfinite(Y).all() and np.abs(Y).max() <= FLOAT32_MAX):
            row = int(np.flatnonzero(~(np.isfinite(Y) & (np.abs(Y) <= FLOAT32_MAX)).all(axis=1))[0])
            raise SubspaceOverflowError(self.kernel, row)
        if self.projection_kind == "circulant":
            return self.circulant_projection().codes(np.ascontiguousarray(Y, dtype=np.float32), bits)
        R = self.projection(bits)
        Y32 = np.ascontiguousarray(Y, dtype=np.float32)
        n, m = Y32.shape
        acc = np.zeros((n, bits), dtype=np.float64)
        if n == 0:
            return pack_signs(acc)
        ynorm = np.empty((n, len(self._blocks)), dtype=np.float64)
        for b, (s0, s1) in enumerate(self._blocks):
            acc += Y32[:, s0:s1] @ R[:, s0:s1].T
            yb = Y32[:, s0:s1].astype(np.float64)
            ynorm[:, b] = np.sqrt(np.einsum("ij,ij->i", yb, yb))
        band = ynorm @ self._rblock_norms[:bits].T
        band *= 2.0 * 1.001 * self._gamma_block
        ii, jj = np.nonzero(np.abs(acc) <= band)
        if ii.size:
            exact = np.empty(ii.size, dtype=np.float64)
            ii = np.ascontiguousarray(ii, dtype=np.int64)
            jj = np.ascontiguousarray(jj, dtype=np.int64)
            lib.hsvm_exact_dots(ptr("float *", Y32), m, ptr("float *", self._R), m, m, ptr("int64_t *", ii),
                                ptr("int64_t *", jj), ii.size, ptr("double *", exact))
            acc[ii, jj] = exact
        self.recomputed += int(ii.size)
        return pack_signs(acc)

    def codes_reference(self, Y, bits=None):
        """The canonical bits computed the slow way (every entry by
        hsvm_exact_dot, or for a circulant projection by the canonical sum of
        its row, native/circulant.c): a test oracle for :meth:`codes_from_y`."""
        bits = self.check_bits(bits)
        if self.projection_kind == "circulant":
            return self._circulant_reference(Y, bits)
        self.projection(bits)
        Y32 = np.ascontiguousarray(Y, dtype=np.float32)
        n, m = Y32.shape
        ii, jj = (a.ravel().astype(np.int64) for a in np.meshgrid(np.arange(n), np.arange(bits), indexing="ij"))
        out = np.empty(ii.size, dtype=np.float64)
        if ii.size:
            lib.hsvm_exact_dots(ptr("float *", Y32), m, ptr("float *", self._R), m, m, ptr("int64_t *", ii),
                                ptr("int64_t *", jj), ii.size, ptr("double *", out))
        return pack_signs(out.reshape(n, bits))

    def _circulant_reference(self, Y, bits):
        from .circulant import stride_order
        e = self.circulant_projection().engine
        Y32 = np.ascontiguousarray(Y, dtype=np.float32)
        n = Y32.shape[0]
        rho = stride_order(e.n)
        out = np.empty((n, bits), dtype=np.float64)
        for b, c in e.block_sizes(bits):
            sample = np.repeat(np.arange(n, dtype=np.int64), c)
            row = np.ascontiguousarray(np.tile(rho[:c], n), dtype=np.int64)
            vals = np.empty(n * c, dtype=np.float64)
            if vals.size:
                lib.hsvm_circ_eval_dense(ptr("float *", Y32), Y32.shape[1], ptr("int64_t *", sample),
                                         ptr("int64_t *", row), vals.size, ptr("double *", e.r[b]),
                                         ptr("double *", e.s[b]), e.n, ffi.NULL, ptr("double *", vals))
            out[:, b * e.block_bits:b * e.block_bits + c] = vals.reshape(n, c)
        return pack_signs(out)

    def iter_codes(self, X, bits=None, *, chunk_rows=1024):
        """(start, codes) per chunk of rows: streaming hashing."""
        bits = self.check_bits(bits)
        X = as_samples(X)
        for s in range(0, X.shape[0], chunk_rows):
            try:
                K = self.kernel_values(X[s:s + chunk_rows])
            except NegativeFeatureError as e:
                raise NegativeFeatureError(e.kernel, e.row + s, e.feature, e.value) from None
            try:
                codes = self.codes_from_y(self._solve(K), bits)
            except SubspaceOverflowError as e:
                raise SubspaceOverflowError(e.kernel, e.row + s) from None      # rows of X, not of the chunk
            yield s, codes

    def codes(self, X, bits=None, *, chunk_rows=1024):
        """Kernel hash codes uint64 [n, bits/64] of the rows of X (dense or
        scipy.sparse, at most ``n_features`` columns)."""
        bits = self.check_bits(bits)
        X = as_samples(X)
        out = np.empty((X.shape[0], bits // 64), dtype=np.uint64)
        for s, c in self.iter_codes(X, bits, chunk_rows=chunk_rows):
            out[s:s + c.shape[0]] = c
        return out

    def codes_meta(self, bits=None):
        """What ``hsvm-codes`` files of these codes record (see check_codes_meta)."""
        bits = self.check_bits(bits)
        return {"bits": bits, "kernel_hash_sha256": self.content_sha256(), "kernel": self.kernel,
                "generator": self.generator, "seed": self.seed, "n_features": self.n_features,
                "normalize": "none"}


def check_codes_meta(h, meta, *, bits=None, name="codes"):
    """Refuse codes not made by kernel hash ``h`` (digest) or with too few bits."""
    digest = meta.get("kernel_hash_sha256")
    if digest != h.content_sha256():
        raise ModelMismatchError("%s were made with %s, not with this kernel hash (%s...)"
                                 % (name, "kernel hash %s..." % digest[:12] if digest else "a linear hash model",
                                    h.content_sha256()[:12]))
    if bits is not None and int(meta.get("bits", 0)) < bits:
        raise ModelMismatchError("%s have %s bits, %d requested" % (name, meta.get("bits"), bits))


# ---------------------------------------------------------------------- fit

def _check_int(name, v, lo):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
        raise OptionError("%s must be an integer >= %d, not %r" % (name, lo, v))
    return int(v)


def fit_kernel_hash(X, *, kernel, gamma="auto", degree=3, coef0=1.0, landmarks, bits, seed=0, tol=DEFAULT_TOL,
                    train_sha256=None, block=256, projection="gaussian"):
    """Fit KRSH on the training rows X (dense or scipy.sparse [n, d]).

    kernel : one of KERNELS; gamma : positive number or "auto" (rbf, chi2,
    poly; must be None or "auto" for linear and intersection); degree, coef0 :
    poly parameters; landmarks : m, at most n; bits : code length, a positive
    multiple of 64; seed : landmark order and projection; tol : relative
    residual below which a candidate is discarded, in (0, 1); projection :
    "gaussian" (a dense bits x m matrix) or "circulant" (FFT, O(m log m) per
    block of m bits).
    Returns a :class:`KernelHash`; ``info`` records the gamma rule, the
    candidates examined and discarded, the smallest kept residual and the
    training input's SHA-256 when given.  Fewer than m landmarks are kept only
    when the training rows run out (recorded as ``landmarks_kept``)."""
    if kernel not in KERNELS:
        raise OptionError("unknown kernel %r (choose from %s)" % (kernel, ", ".join(KERNELS)))
    X = as_samples(X)           # rows are taken by index: a CSR matrix (COO, DIA, BSR cannot be), or an array
    if projection not in PROJECTIONS:
        raise OptionError("projection must be one of %s, not %r" % (", ".join(PROJECTIONS), projection))
    n = X.shape[0]
    m = _check_int("landmarks", landmarks, 1)
    if m > n:
        raise OptionError("landmarks (%d) exceed the %d training rows" % (m, n))
    bits = _check_int("bits", bits, 64)
    if bits % 64 or bits > MAX_CODE_BITS:
        raise OptionError("bits must be a multiple of 64 from 64 to %d, got %d" % (MAX_CODE_BITS, bits))
    seed = check_seed(seed)
    block = _check_int("block", block, 1)
    if X.shape[1] == 0:
        # every sample's feature-space norm is 0: such a hash had been written, and every reader refused it
        raise DataError("the samples have no features: there is nothing to hash")
    if not (isinstance(tol, (int, float, np.integer, np.floating)) and 0 < tol < 1):
        raise OptionError("tol must be in (0, 1), not %r" % (tol,))
    _check_kernel_input(X if sp.issparse(X) else np.asarray(X, dtype=np.float32), kernel)
    info = {}
    if kernel in _USES_GAMMA:
        if gamma is None or (isinstance(gamma, str) and gamma == "auto"):
            gamma, rule = auto_gamma(X, kernel, seed=seed)
            info["gamma_rule"] = rule
        else:
            info["gamma_rule"] = "given"
    else:
        if gamma is not None and not (isinstance(gamma, str) and gamma == "auto"):
            raise OptionError("the %s kernel has no gamma" % kernel)
        gamma = None
    _check_params(kernel, gamma, degree, coef0)
    if kernel == "poly":
        if coef0 < 0:
            # not positive semi-definite: landmarks of negative feature-space
            # "norm" are dropped, and what is left may span almost nothing
            raise OptionError("coef0 %g: (g x.z + coef0)^degree with coef0 < 0 is not positive semi-definite, which "
                             "a kernel hash needs (coef0 >= 0)" % coef0)
    _check_kernel_range(X, kernel, gamma, degree, coef0)
    d = X.shape[1]

    # Candidate order: argsort of raw PCG64 draws (a stable bit stream).
    order = np.argsort(_pcg(seed, _SPAWN_LANDMARKS).random_raw(n), kind="stable")
    ZT = np.zeros((d, m), dtype=np.float32)
    Lc = np.zeros((m, m), dtype=np.float64)
    diag = np.zeros(m, dtype=np.float64)
    work = np.empty(m, dtype=np.float64)
    kept_rows = []
    kept = 0
    examined = discarded = 0
    min_resid = math.inf
    for s in range(0, n, block):
        if kept >= m:
            break
        idx = order[s:s + block]
        C = _dense32(X[idx] if sp.issparse(X) else np.asarray(X)[idx], d)
        _check_kernel_input(C, kernel)
        taken = np.empty(C.shape[0], dtype=np.int8)
        resid = np.empty(C.shape[0], dtype=np.float64)
        kept = int(lib.hsvm_krsh_offer(KERNELS[kernel], float(gamma or 0.0), float(coef0), int(degree),
                                       ptr("float *", C), C.shape[0], d, ptr("float *", ZT), ptr("double *", Lc),
                                       ptr("double *", diag), m, kept, float(tol), ptr("int8_t *", taken),
                                       ptr("double *", resid), ptr("double *", work)))
        if kept < 0:
            raise MemoryError("krsh: out of memory")
        looked = ~np.isnan(resid)
        examined += int(looked.sum())
        discarded += int((looked & (taken == 0)).sum())
        if taken.any():
            min_resid = min(min_resid, float(resid[taken == 1].min()))
        kept_rows.extend(idx[taken == 1].tolist())
    if kept == 0:
        raise DataError("no landmark kept: every candidate has a zero feature-space norm")
    Z = np.ascontiguousarray(ZT[:, :kept].T)
    L = np.ascontiguousarray(Lc[:kept, :kept].T)          # column-major storage -> row-major L
    info.update({"landmarks_requested": m, "landmarks_kept": kept, "candidates_examined": examined,
                 "candidates_discarded": discarded, "min_kept_residual": min_resid, "train_rows": int(n),
                 "landmark_order": "argsort of PCG64(SeedSequence(seed, spawn_key=(0x4B525348,))) raw draws"})
    if train_sha256 is not None:
        info["train_sha256"] = str(train_sha256)
    return KernelHash(kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, Z=Z, L=L, bits=bits, seed=seed,
                      tol=tol, landmark_rows=np.asarray(kept_rows, np.int64), landmark_diag=diag[:kept], info=info,
                      projection_kind=projection)
