"""Kernel hash files (``.khm``, ``hsvm-kernel-hash`` containers): a fitted
kernelized random subspace hashing (hashing/krsh.py) -- landmarks, the
Cholesky factor of their Gram matrix, kernel parameters and the seed of the
projection -- validated on read (docs/formats.md)."""
import numpy as np

from .. import __version__
from ..errors import ModelFormatError
from ..hashing.circulant import LAYOUT as CIRCULANT_LAYOUT
from ..hashing.generator import GENERATOR
from ..hashing.krsh import (
    _NONNEGATIVE,
    _USES_GAMMA,
    KERNELS,
    KHM_KIND,
    KHM_VERSION,
    PROJECTIONS,
    KernelHash,
    _check_params,
)
from ..io.container import read_container, write_container
from ..io.svmlight import MAX_FEATURES
from .hashed import MAX_BITS
from .metadata import meta_dict, meta_digest, meta_int, meta_number, meta_str


def save_kernel_hash(h, path, *, extra_meta=None):
    """Write ``h`` as an ``hsvm-kernel-hash`` version 1 container."""
    if not isinstance(h, KernelHash):
        raise TypeError("save_kernel_hash takes a KernelHash (from fit_kernel_hash or load_kernel_hash), not %s"
                        % type(h).__name__)
    m = h.n_landmarks
    tri = np.tril_indices(m)
    arrays = {
        "landmarks": np.asarray(h.Z, dtype=np.float32),
        "chol": np.asarray(h.L[tri], dtype=np.float64),
        "landmark_rows": np.asarray(h.landmark_rows, dtype=np.int64),
        "landmark_diag": np.asarray(h.landmark_diag, dtype=np.float64),
    }
    meta = dict(h.params())
    meta.update({"tol": h.tol, "info": h.info, "content_sha256": h.content_sha256(), "hsvm_version": __version__,
                 "provenance": h.provenance})
    meta.update(extra_meta or {})
    write_container(path, arrays, kind=KHM_KIND, version=KHM_VERSION, meta=meta)


def load_kernel_hash(path):
    """Read and validate an ``hsvm-kernel-hash`` file (ModelFormatError naming
    the file for anything inconsistent)."""
    c = read_container(path, kind=KHM_KIND, versions={KHM_VERSION})
    name = c.path
    for key in ("landmarks", "chol", "landmark_rows", "landmark_diag"):
        if key not in c.arrays:
            raise ModelFormatError(name, "missing array %r" % key)
    meta = c.meta
    kernel = meta_str(c, "kernel", tuple(KERNELS))
    if "gamma" not in meta:
        raise ModelFormatError(name, "metadata lacks 'gamma'")
    gamma = meta["gamma"]               # checked for its kernel below (null for kernels without one)
    degree = meta_int(c, "degree", 1, 64)
    coef0 = float(meta_number(c, "coef0"))
    bits = meta_int(c, "bits", 64, MAX_BITS)
    seed = meta_int(c, "seed", -(1 << 63), (1 << 64) - 1)
    generator = meta_str(c, "generator")
    stream = meta_int(c, "projection_stream", 0, (1 << 64) - 1)
    n_features = meta_int(c, "n_features", 1, MAX_FEATURES)
    m = meta_int(c, "landmarks", 1, 1 << 31)
    tol = float(meta_number(c, "tol", 0.0, 1.0, open_interval=True))
    digest = meta_digest(c, "content_sha256")
    info = meta_dict(c, "info")
    try:
        _check_params(kernel, gamma, degree, coef0)
    except ValueError as exc:
        raise ModelFormatError(name, str(exc)) from None
    if kernel not in _USES_GAMMA and gamma is not None:
        raise ModelFormatError(name, "the %s kernel has no gamma" % kernel)
    if bits % 64:
        raise ModelFormatError(name, "bits must be a positive multiple of 64, got %d" % bits)
    if generator != GENERATOR:
        raise ModelFormatError(name, "projection generator %r is unknown to this hsvm" % generator)
    # Files without a projection kind (every file before circulant
    # projections) are Gaussian.
    projection_kind = meta_str(c, "projection_kind", tuple(PROJECTIONS), default="gaussian")
    if projection_kind == "circulant" and meta.get("projection_layout") != CIRCULANT_LAYOUT:
        raise ModelFormatError(name, "circulant projection layout %r is unknown to this hsvm (it reads %s)"
                               % (meta.get("projection_layout"), CIRCULANT_LAYOUT))
    Z, chol, rows, diag = (c.arrays[k] for k in ("landmarks", "chol", "landmark_rows", "landmark_diag"))
    if Z.dtype != np.float32 or chol.dtype != np.float64 or rows.dtype != np.int64 or diag.dtype != np.float64:
        raise ModelFormatError(name, "unexpected array dtypes")
    if m < 1 or Z.shape != (m, n_features) or chol.shape != (m * (m + 1) // 2,) or rows.shape != (m,) \
            or diag.shape != (m,):
        raise ModelFormatError(name, "array shapes disagree with %d landmarks of %d features" % (m, n_features))
    if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(chol)) and np.all(np.isfinite(diag))):
        raise ModelFormatError(name, "landmarks or Cholesky factor hold NaN or infinite values")
    if kernel in _NONNEGATIVE and np.any(Z < 0):
        raise ModelFormatError(name, "negative landmark features for the %s kernel" % kernel)
    L = np.zeros((m, m), dtype=np.float64)
    L[np.tril_indices(m)] = chol
    if not np.all(np.diagonal(L) > 0):
        raise ModelFormatError(name, "the Cholesky factor has a non-positive diagonal")
    h = KernelHash(kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, Z=Z, L=L, bits=bits, seed=seed, tol=tol,
                   landmark_rows=rows, landmark_diag=diag, info=info, generator=generator,
                   projection_stream=stream, projection_kind=projection_kind, path=name,
                   provenance=meta.get("provenance") if isinstance(meta.get("provenance"), dict) else None)
    if h.content_sha256() != digest:
        raise ModelFormatError(name, "content digest mismatch: the arrays or parameters were altered")
    return h
