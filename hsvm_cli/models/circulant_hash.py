"""Learned circulant hash functions and their file (``hsvm-circulant-hash``,
written by ``hsvm fit-circulant``, fitted by train/circulant_fit.py).

L bits h_l(x) = sgn(w^T P_{sigma_l} x + bias_l), l < L <= d: rows sigma_l of
circ(w) (row sigma of circ(w) is w^T P_sigma with (P_sigma x)_k =
x_{(k + sigma) mod d}, so h_l(x) = sgn(sum_j x_j w_{(j - sigma_l) mod d} +
bias_l)), applied after the recorded normalisation.  Evaluated by FFT of
length d with the exact-sign rule of hashing/circulant.py: a value within the
FFT's round-off band of zero gets the sign of its canonical double sum
(bias first, then the terms in column order, computed in C), so the codes
are the same bits on every machine."""
import hashlib
import json

import numpy as np

from .. import __version__
from ..errors import ModelFormatError
from ..hashing.circulant import CirculantBlocks
from ..hashing.generator import GENERATOR
from ..hashing.projection import pack_signs
from ..io.container import read_container, write_container
from ..io.svmlight import MAX_FEATURES
from ..preprocess import apply_normalization
from ..support.lazy_sparse import sp
from .metadata import meta_digest, meta_int, meta_str

CHASH_KIND = "hsvm-circulant-hash"
CHASH_VERSION = 1
#: Name of the bit layout (bit l = row shifts[l] of circ(w), plus bias[l]).
LAYOUT = "circulant-rows-v1"
#: What codes files of these hashes record as their projection kind.
PROJECTION_KIND = "learned-circulant"
NORMALIZATIONS = ("l2", "none")
_STANDARD_META = ("bits", "n_features", "normalize", "method", "layout", "seed", "content_sha256", "hsvm_version")


def prepare_samples(X, normalize):
    """float32 samples after the normalisation ``normalize`` ("l2" or
    "none"); CSR stays CSR, the input is never modified."""
    if normalize not in NORMALIZATIONS:
        raise ValueError("normalize must be 'l2' or 'none', not %r" % (normalize,))
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float32)
    else:
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError("X must be 2-dimensional")
    return apply_normalization(X, normalize, copy=True)


def check_shifts(shifts, L, d):
    """``shifts`` as int64 [L]: L distinct rows of circ(w) in [0, d) (None:
    the first L rows)."""
    if shifts is None:
        return np.arange(L, dtype=np.int64)
    shifts = np.ascontiguousarray(shifts, dtype=np.int64)
    if shifts.shape != (L,) or np.any(shifts < 0) or np.any(shifts >= d) or np.unique(shifts).shape[0] != L:
        raise ValueError("shifts must be %d distinct rows of circ(w) in [0, %d)" % (L, d))
    return shifts


class LearnedCirculantHash:
    """L bits h_l(x) = sgn(sum_j w_{(j - sigma_l) mod d} x_j + bias_l) (module
    docstring).  ``w`` float32 [d], ``bias`` float32 [L], ``shifts`` sigma
    (distinct rows, default 0..L-1, the first L rows as the exact circulant
    SVM and CBE are stated), ``normalize`` applied to samples first,
    ``method`` what fitted it, ``seed`` the fit's seed, ``meta`` what the fit
    records (JSON-able)."""

    def __init__(self, w, bias, *, shifts=None, normalize="l2", method="circulant-svm", seed=0, meta=None,
                 path=None):
        w = np.asarray(w, dtype=np.float32)
        bias = np.asarray(bias, dtype=np.float32)
        if w.ndim != 1 or bias.ndim != 1 or not 1 <= bias.shape[0] <= w.shape[0]:
            raise ValueError("need w [d] and bias [L] with 1 <= L <= d")
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(bias))):
            raise ValueError("w and bias must be finite")
        if normalize not in NORMALIZATIONS:
            raise ValueError("normalize must be 'l2' or 'none'")
        self.w = np.ascontiguousarray(w)
        self.bias = np.ascontiguousarray(bias)
        self.shifts = check_shifts(shifts, self.bias.shape[0], self.w.shape[0])
        self.normalize = normalize
        self.method = str(method)
        self.seed = int(seed)
        self.meta = dict(meta or {})
        self.path = path
        self._digest = None
        d = self.w.shape[0]
        # circ(w) as a circulant with first column r: entry (i, j) = w_{(j - i) mod d} = r_{(i - j) mod d}
        r = self.w[(-np.arange(d)) % d]
        full_bias = np.zeros(d, dtype=np.float32)
        full_bias[self.shifts] = self.bias
        self._engine = CirculantBlocks(r[None, :], np.ones((1, d), dtype=np.int8), order=self.shifts,
                                       bias=full_bias[None, :])

    @property
    def bits(self):
        return int(self.bias.shape[0])

    @property
    def n_features(self):
        return int(self.w.shape[0])

    def check_bits(self, bits):
        """``bits`` for packed codes: a multiple of 64 up to L (None: L, which
        must then be a multiple of 64)."""
        if bits is None:
            bits = self.bits
            if bits % 64:
                raise ValueError("packed codes need a multiple of 64 bits, this hash has %d" % bits)
            return bits
        if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) \
                or bits <= 0 or bits % 64 or bits > self.bits:
            raise ValueError("bits must be a multiple of 64 between 64 and the hash's %d, got %r" % (self.bits, bits))
        return int(bits)

    def project(self, X, *, threads=1, normalized=False):
        """float64 [n, L]: w^T P_l x + bias_l with exact signs (X raw unless
        ``normalized``: then it must already be normalised as recorded)."""
        Xp = X if normalized else prepare_samples(X, self.normalize)
        return self._engine.project(Xp, self.bits, threads=threads)

    def signs(self, X, **kw):
        """int8 [n, L]: +1 where h_l(x) > 0, else -1 (bit 0)."""
        return np.where(self.project(X, **kw) > 0, 1, -1).astype(np.int8)

    def codes(self, X, bits=None, **kw):
        """uint64 [n, bits/64]: the first ``bits`` bits (default all L),
        packed as `hsvm_cli.hashing.projection.pack_signs`."""
        bits = self.check_bits(bits)
        return pack_signs(self.project(X, **kw)[:, :bits])

    def params(self):
        """Everything besides the arrays that determines a code."""
        return {"bits": self.bits, "n_features": self.n_features, "normalize": self.normalize, "layout": LAYOUT}

    def content_sha256(self):
        """SHA-256 of w, bias, shifts and :meth:`params`: names the hash in
        the codes files it makes."""
        if self._digest is None:
            h = hashlib.sha256()
            h.update(json.dumps(self.params(), sort_keys=True).encode())
            for arr, dtype in ((self.w, "<f4"), (self.bias, "<f4"), (self.shifts, "<i8")):
                h.update(np.ascontiguousarray(arr, dtype=dtype).tobytes())
            self._digest = h.hexdigest()
        return self._digest

    def codes_meta(self, bits=None):
        """What ``hsvm-codes`` files of these codes record: the hash's digest
        and its projection kind (codes of a hash model are refused with it)."""
        bits = self.check_bits(bits)
        return {"bits": bits, "circulant_hash_sha256": self.content_sha256(), "projection_kind": PROJECTION_KIND,
                "projection_layout": LAYOUT, "generator": GENERATOR, "seed": self.seed,
                "n_features": self.n_features, "normalize": self.normalize}


def save_circulant_hash(h, path, *, extra_meta=None):
    """Write ``h`` as an ``hsvm-circulant-hash`` version 1 container
    (atomically)."""
    if not isinstance(h, LearnedCirculantHash):
        raise TypeError("save_circulant_hash takes a LearnedCirculantHash (from fit_circulant_hash or "
                        "load_circulant_hash), not %s" % type(h).__name__)
    meta = dict(h.meta)
    meta.update(h.params())
    meta.update({"method": h.method, "seed": h.seed, "content_sha256": h.content_sha256(),
                 "hsvm_version": __version__})
    meta.update(extra_meta or {})
    write_container(path, {"circulant_w": h.w, "bias": h.bias, "shifts": h.shifts},
                    kind=CHASH_KIND, version=CHASH_VERSION, meta=meta)


def load_circulant_hash(path):
    """Read and validate an ``hsvm-circulant-hash`` file (ModelFormatError
    naming the file for anything inconsistent)."""
    c = read_container(path, kind=CHASH_KIND, versions={CHASH_VERSION})
    name = c.path
    for key in ("circulant_w", "bias", "shifts"):
        if key not in c.arrays:
            raise ModelFormatError(name, "missing array %r" % key)
    w, bias, shifts = c.arrays["circulant_w"], c.arrays["bias"], c.arrays["shifts"]
    if w.dtype != np.float32 or bias.dtype != np.float32 or w.ndim != 1 or bias.ndim != 1:
        raise ModelFormatError(name, "circulant_w and bias must be float32 vectors")
    if shifts.dtype != np.int64 or shifts.shape != bias.shape:
        raise ModelFormatError(name, "shifts must be int64 with one entry per bit")
    d = meta_int(c, "n_features", 1, MAX_FEATURES)
    bits = meta_int(c, "bits", 1, d)
    normalize = meta_str(c, "normalize", NORMALIZATIONS)
    layout = meta_str(c, "layout")
    method = meta_str(c, "method")
    seed = meta_int(c, "seed", -(1 << 63), (1 << 64) - 1)
    digest = meta_digest(c, "content_sha256")
    if layout != LAYOUT:
        raise ModelFormatError(name, "layout %r is unknown to this hsvm (it reads %s)" % (layout, LAYOUT))
    if w.shape[0] != d or bias.shape[0] != bits:
        raise ModelFormatError(name, "arrays have %d weights and %d biases, the metadata says %d features, %d bits"
                               % (w.shape[0], bias.shape[0], d, bits))
    if shifts.min() < 0 or shifts.max() >= d or np.unique(shifts).shape[0] != bits:
        raise ModelFormatError(name, "shifts must be %d distinct rows in [0, %d)" % (bits, d))
    meta = {k: v for k, v in c.meta.items() if k not in _STANDARD_META}
    h = LearnedCirculantHash(np.array(w), np.array(bias), shifts=np.array(shifts), normalize=normalize,
                             method=method, seed=seed, meta=meta, path=name)
    if h.content_sha256() != digest:
        raise ModelFormatError(name, "content digest mismatch: the arrays or parameters were altered")
    return h
