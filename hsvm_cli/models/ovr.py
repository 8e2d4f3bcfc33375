"""The one-vs-rest model: K class normals (LIBLINEAR's one-vs-rest and
Crammer-Singer models, imported with ``hsvm import-model``).

A sample x (after ``normalize``) goes to the class with the largest score
s_c(x) = W[c]·x + b[c]; among equal scores to the class with the lowest
``tie_order`` (for an imported model: the first in the tool's label order, as
``liblinear-predict`` decides).  Stored as an ``hsvm-ovr-model`` container
(docs/formats.md); W is memory-mapped and verified against its checksums
before use."""
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..errors import ModelFormatError, ModelMismatchError, OptionError
from ..hashing.generator import GENERATOR
from ..hashing.projection import SignProjector, projection_matrix
from ..io.container import BLOCK_BYTES, array_digests, read_container, write_container
from ..io.svmlight import MAX_FEATURES
from ..preprocess import NORMALIZATIONS
from ..support.arrays import all_finite, as_whole, check_seed
from ..support.labels import strictly_increasing
from ..support.memory import check_allocation
from .hashed import MAX_BITS
from .metadata import check_arrays, meta_dict, meta_digest, meta_int, meta_str

OVR_KIND = "hsvm-ovr-model"
OVR_VERSION = 1

__all__ = ["OvrModel", "save_ovr_model", "load_ovr_model", "OvrHashModel", "hash_ovr_model", "save_ovr_hash_model",
           "load_ovr_hash_model"]


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class OvrModel:
    """``classes`` int64 [K] sorted; ``W`` float32 [K, d], row c the normal of
    ``classes[c]``; ``b`` float32 [K]; ``tie_order`` int32 [K], a permutation
    of 0..K-1 (default: class order), the rank of each class among equal
    scores."""

    classes: np.ndarray
    W: np.ndarray
    b: np.ndarray
    tie_order: np.ndarray = None
    normalize: str = "none"
    params: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    path: str = None
    content_digest: str = None
    container: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.tie_order is None:
            self.tie_order = np.arange(np.asarray(self.classes).shape[0], dtype=np.int32)
        self.tie_order = np.asarray(self.tie_order, dtype=np.int32)
        _check_consistent(self, self.path or "<model>")

    def __repr__(self):
        # its shape, not its weights
        return "OvrModel(%d classes, %d features, normalize=%r%s)" % (
            self.n_classes, self.n_features, self.normalize, ", path=%r" % self.path if self.path else "")

    @property
    def n_classes(self):
        return int(self.classes.shape[0])

    @property
    def n_features(self):
        return int(self.W.shape[1])

    def verify(self):
        """Check W against the file's checksums (and for finite values)."""
        if self.container is not None:
            self.container.verify("W")

    def stored_arrays(self):
        """The arrays a one-vs-rest model file holds."""
        return {"classes": np.asarray(self.classes, dtype=np.int64), "W": np.asarray(self.W, dtype=np.float32),
                "b": np.asarray(self.b, dtype=np.float32), "tie_order": np.asarray(self.tie_order, dtype=np.int32)}

    def content_sha256(self):
        """The model's identity: SHA-256 over its normalisation and the block
        digests of its arrays (from the file's verified checksums, or computed
        for a model made in memory), as for one-vs-one models."""
        if self.content_digest is None:
            import hashlib
            h = hashlib.sha256()
            h.update(("hsvm-ovr-model-identity-v1|normalize=%s|block=%d|" % (self.normalize, BLOCK_BYTES)).encode())
            stored = self.stored_arrays() if self.container is None else self.container.arrays
            digests = None if self.container is None else self.container.digests
            for key in ("classes", "W", "b", "tie_order"):
                arr = stored[key]
                h.update(("%s|%s|%s|" % (key, arr.dtype.str, list(arr.shape))).encode())
                h.update(",".join(digests[key] if digests is not None else array_digests(arr)).encode())
            self.content_digest = h.hexdigest()
        return self.content_digest


def _require_ovr(model, what):
    if not isinstance(model, OvrModel):
        raise TypeError("%s takes a one-vs-rest model (OvrModel), not %s" % (what, type(model).__name__))


def save_ovr_model(model, path):
    """Write ``model`` as an ``hsvm-ovr-model`` container (atomically)."""
    _require_ovr(model, "save_ovr_model")
    meta = {"normalize": model.normalize, "n_features": model.n_features, "params": model.params,
            "provenance": model.provenance, "content_sha256": model.content_sha256()}
    write_container(path, model.stored_arrays(), kind=OVR_KIND, version=OVR_VERSION, meta=meta)


def load_ovr_model(path):
    """Read and validate an ``hsvm-ovr-model`` file (W memory-mapped)."""
    c = read_container(path, kind=OVR_KIND, versions={OVR_VERSION}, lazy=("W",))
    name = c.path
    check_arrays(c, (("classes", np.int64, 1), ("W", np.float32, 2), ("b", np.float32, 1),
                     ("tie_order", np.int32, 1)))
    n_features = meta_int(c, "n_features", 0, MAX_FEATURES)
    model = OvrModel(classes=c.arrays["classes"], W=c.arrays["W"], b=c.arrays["b"], tie_order=c.arrays["tie_order"],
                     normalize=meta_str(c, "normalize", NORMALIZATIONS), params=meta_dict(c, "params"),
                     provenance=meta_dict(c, "provenance"), path=name, container=c)
    if n_features != model.n_features:
        raise ModelFormatError(name, "n_features in metadata disagrees with W")
    return model


def _check_consistent(m, name):
    def bad(reason):
        raise ModelFormatError(name, reason)
    classes = np.asarray(m.classes)
    if classes.ndim != 1 or classes.shape[0] < 2:
        bad("a model needs at least two classes")
    if not strictly_increasing(classes):
        bad("classes must be sorted and unique")
    K = classes.shape[0]
    if np.asarray(m.W).ndim != 2 or m.W.shape[0] != K:
        bad("W must have one row per class (%d)" % K)
    if np.asarray(m.b).shape != (K,):
        bad("b must have %d entries" % K)
    if m.tie_order.shape != (K,) or not np.array_equal(np.sort(m.tie_order), np.arange(K)):
        bad("tie_order must be a permutation of 0..%d" % (K - 1))
    if m.normalize not in NORMALIZATIONS:
        bad("unknown normalisation %r" % m.normalize)
    if m.container is None and not (all_finite(m.W) and all_finite(m.b)):
        bad("W and b must hold finite values")


# --------------------------------------------------------------------------- hashed

OVR_HBM_KIND = "hsvm-ovr-hash-model"
OVR_HBM_VERSION = 1


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class OvrHashModel:
    """Sign codes of the K class normals of an :class:`OvrModel`, made with
    the projection ``hash-model`` uses for one-vs-one models (the same rows
    for the same seed), for the hashed one-vs-rest filter
    (:mod:`hsvm_cli.predict.ovr`)."""

    classes: np.ndarray          # int64 [K]
    codes: np.ndarray            # uint64 [K, D/64]
    bits: int                    # D
    seed: int
    n_features: int
    normalize: str
    model_sha256: str
    generator: str = GENERATOR
    projection_stored: np.ndarray = None
    path: str = None

    @property
    def n_classes(self):
        return int(self.classes.shape[0])

    def check_bits(self, bits):
        """``bits`` validated against the stored code length (None: all of it)."""
        if bits is None:
            return self.bits
        bits = as_whole(bits, "bits")
        if bits <= 0 or bits % 64 or bits > self.bits:
            raise OptionError("--bits must be a multiple of 64 between 64 and the hashed %d, got %d"
                              % (self.bits, bits),
                              python="bits must be a multiple of 64 between 64 and the hash model's %d, got %d"
                              % (self.bits, bits))
        return bits

    def projection(self, bits=None):
        """The first ``bits`` rows of the projection (float32)."""
        bits = self.bits if bits is None else int(bits)
        if self.projection_stored is not None:
            return np.asarray(self.projection_stored[:bits])
        return projection_matrix(bits, self.n_features, seed=self.seed)

    def check_model(self, model):
        """Refuse a model other than the one this was made from."""
        if model.content_sha256() != self.model_sha256 or not np.array_equal(model.classes, self.classes):
            model.verify()      # a corrupt digest in the model file is its fault, not a mismatch
            raise ModelMismatchError("hash model %s was made from another model (model digest %s..., %s has %s...)"
                                     % (self.path or "<hbm>", self.model_sha256[:12], model.path or "<model>",
                                        model.content_sha256()[:12]))


def hash_ovr_model(model, *, bits=1024, seed=0, store_projection=False):
    """Hash every class normal of ``model`` into a D-bit code with hsvm's
    seeded projection; returns an :class:`OvrHashModel`."""
    _require_ovr(model, "hash_ovr_model")
    bits = as_whole(bits, "bits")
    seed = check_seed(seed)
    if bits <= 0 or bits % 64 or bits > MAX_BITS:
        raise OptionError("bits must be a multiple of 64 from 64 to %d, got %d" % (MAX_BITS, bits))
    model.verify()
    check_allocation(bits * model.n_features * 4, "the %d x %d projection" % (bits, model.n_features))
    R = projection_matrix(bits, model.n_features, seed=seed)
    codes = SignProjector(R).codes(np.asarray(model.W, dtype=np.float32))
    return OvrHashModel(classes=np.asarray(model.classes), codes=codes, bits=bits, seed=int(seed),
                        n_features=model.n_features, normalize=model.normalize, model_sha256=model.content_sha256(),
                        projection_stored=R if store_projection else None)


def save_ovr_hash_model(h, path):
    """Write ``h`` as an ``hsvm-ovr-hash-model`` container (atomically)."""
    if not isinstance(h, OvrHashModel):
        raise TypeError("save_ovr_hash_model takes an OvrHashModel (from hash_ovr_model or load_ovr_hash_model), "
                        "not %s" % type(h).__name__)
    arrays = {"classes": np.asarray(h.classes, dtype=np.int64), "codes": np.asarray(h.codes, dtype=np.uint64)}
    if h.projection_stored is not None:
        arrays["projection"] = np.asarray(h.projection_stored, dtype=np.float32)
    meta = {"bits": h.bits, "seed": h.seed, "generator": h.generator, "n_features": h.n_features,
            "normalize": h.normalize, "model_sha256": h.model_sha256, "hsvm_version": __version__}
    write_container(path, arrays, kind=OVR_HBM_KIND, version=OVR_HBM_VERSION, meta=meta)


def load_ovr_hash_model(path):
    """Read and validate an ``hsvm-ovr-hash-model`` file."""
    c = read_container(path, kind=OVR_HBM_KIND, versions={OVR_HBM_VERSION})
    name = c.path
    classes, codes = c.arrays.get("classes"), c.arrays.get("codes")
    if classes is None or codes is None or classes.dtype != np.int64 or classes.ndim != 1 \
            or codes.dtype != np.uint64 or codes.ndim != 2:
        raise ModelFormatError(name, "needs arrays classes (int64 [K]) and codes (uint64 [K, D/64])")
    bits = meta_int(c, "bits", 64, MAX_BITS)
    n_features = meta_int(c, "n_features", 1, MAX_FEATURES)
    generator = meta_str(c, "generator")
    if bits % 64 or codes.shape != (classes.shape[0], bits // 64):
        raise ModelFormatError(name, "codes have shape %s, expected [K, bits/64]" % list(codes.shape))
    if classes.shape[0] < 2 or not strictly_increasing(classes):
        raise ModelFormatError(name, "classes must be at least two, sorted and unique")
    proj = c.arrays.get("projection")
    if generator != GENERATOR and proj is None:
        raise ModelFormatError(name, "projection generator %r is unknown to this hsvm" % generator)
    if proj is not None and (proj.dtype != np.float32 or proj.shape != (bits, n_features)):
        raise ModelFormatError(name, "projection has shape %s, expected %s" % (list(proj.shape), [bits, n_features]))
    return OvrHashModel(classes=classes, codes=codes, bits=bits, seed=meta_int(c, "seed", -(1 << 63), (1 << 64) - 1),
                        n_features=n_features, normalize=meta_str(c, "normalize", NORMALIZATIONS),
                        model_sha256=meta_digest(c, "model_sha256"), generator=generator, projection_stored=proj,
                        path=name)
