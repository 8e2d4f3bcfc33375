"""The hash model (``.hbm``): every classifier of a one-vs-one model as a D-bit
sign code and its angle θ (docs/method.md, hashing/angles.py).

A :class:`HashModel` hands out what prediction needs at a prefix of D' bits:
its sample :meth:`~HashModel.encoder` (the same projection that hashed the
classifiers) and its :meth:`~HashModel.voter` (the range queries of every
classifier).

The projection is of one of two kinds (``projection_kind``): ``gaussian``, the
dense D x d matrix of hashing/projection.py, or ``circulant``, blocks of
circ(r) diag(s) evaluated by FFT (hashing/circulant.py).  A file records the
kind and its bit layout; files without them (hsvm 0.1) are Gaussian.  A
circulant hash model is written as format version 2, so that a reader that
only knows Gaussian projections (version 1) refuses it instead of hashing
samples with the wrong projection."""
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..errors import DataError, ModelFormatError, ModelMismatchError, OptionError
from ..hashing import MAX_CODE_BITS
from ..hashing.angles import classifier_angles
from ..hashing.circulant import LAYOUT as CIRCULANT_LAYOUT
from ..hashing.circulant import CirculantProjection
from ..hashing.generator import GENERATOR
from ..hashing.projection import GAUSSIAN_LAYOUT, SignProjector, projection_matrix
from ..hashing.voting import HashVoter
from ..io.container import read_container, write_container
from ..io.svmlight import MAX_FEATURES
from ..support.arrays import as_whole, check_seed, is_int
from ..support.labels import strictly_increasing
from ..support.memory import check_allocation
from ..support.text import counted
from .metadata import meta_bool, meta_dict, meta_digest, meta_int, meta_str
from .ovo import OvoModel
from .pairs import check_complete_pairs
from .provenance import trained_zero_based

# Bytes per projection entry at the peak of making and using it: R (float32,
# drawn as such), and its transposed copy for sparse samples (12 when the
# normals were drawn as float64 first).
PROJECTION_PEAK_BYTES = 8
# A circulant projection's parameters while they are drawn, per bit: r and
# the signs as float64 normals, then float32 and int8 (hashing/circulant.py).
CIRCULANT_PEAK_BYTES_PER_BIT = 24

HBM_KIND = "hsvm-hash-model"
HBM_VERSION = 1
#: The version of hash models whose projection is not Gaussian.
HBM_VERSION_PROJECTIONS = 2
#: Projection kinds and the bit layout each is written with.
PROJECTIONS = {"gaussian": GAUSSIAN_LAYOUT, "circulant": CIRCULANT_LAYOUT}
MAX_BITS = MAX_CODE_BITS     # longer codes are no hash filter any more (hashing.MAX_CODE_BITS)


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class HashModel:
    classes: np.ndarray          # int64 [K]
    pair_a: np.ndarray           # int32 [P]
    pair_b: np.ndarray           # int32 [P]
    codes: np.ndarray            # uint64 [P*bags, D/64]
    theta: np.ndarray            # float32 [P*bags]
    bags: int
    bits: int                    # D
    seed: int
    n_features: int
    normalize: str
    model_sha256: str            # content digest of the exact model it was made from
    generator: str = GENERATOR
    projection_stored: np.ndarray = None  # float32 [D, d] when stored in the file
    class_W: np.ndarray = None   # float32 [K, d]: the class-score summaries, when stored (predict/class_scores.py)
    class_b: np.ndarray = None   # float32 [K]
    meta: dict = field(default_factory=dict)
    path: str = None

    def __repr__(self):
        return "HashModel(%d classes, %s x %s, %d bits, seed %d, normalize=%r%s)" % (
            self.classes.shape[0], counted(self.pair_a.shape[0], "pair"), counted(self.bags, "bag"),
            self.bits, self.seed, self.normalize,
            ", path=%r" % self.path if self.path else "")
    projection_kind: str = "gaussian"
    # The model's training file numbered its features from 0 (train-ovo
    # --zero-based): hash-data then reads its input 0-based by default, as
    # predict does with the model.
    zero_based: bool = False
    # The circulant projection (hashing/circulant.py) of a circulant hash
    # model, which hashes its samples; None for a Gaussian one.
    projector: object = None
    projector_stored: bool = False  # save the projector's parameters, not only its seed
    # For a model trained on kernel hash codes: what made its features (its
    # params["codes"]); its samples are those codes, never raw svmlight rows.
    model_codes: dict = None
    _projection: np.ndarray = None
    # voter(bits) made once per (bits, kernel): each packs every classifier's
    # code for the kernels in C (64 MB at K = 1,000 and 1024 bits), and
    # calibrate's predictors of one bit count held a packing each (RSS rose
    # ~70 MB per setting, 1.1 GB over a stage).
    _voters: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def projection_layout(self):
        return PROJECTIONS[self.projection_kind]

    @property
    def n_classes(self):
        return int(self.classes.shape[0])

    def projection(self, bits=None):
        """The first ``bits`` rows of the Gaussian projection (float32, C
        order); a circulant hash model has no such matrix (ValueError)."""
        bits = self.bits if bits is None else int(bits)
        if self.projector is not None:
            raise ValueError("this hash model's projection is %s, not a dense matrix" % self.projection_kind)
        if self.projection_stored is not None:
            return np.asarray(self.projection_stored[:bits])
        if self._projection is None or self._projection.shape[0] < bits:
            check_allocation(bits * self.n_features * PROJECTION_PEAK_BYTES, "the %d x %d projection of %s"
                             % (bits, self.n_features, self.path or "the hash model"))
            self._projection = projection_matrix(bits, self.n_features, seed=self.seed)
        return self._projection[:bits]

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

    def encoder(self, bits=None):
        """The sample encoder at ``bits``: an object whose ``codes(Xn)`` gives
        the packed codes of normalised samples (and ``project(Xn)`` values
        with exact signs) -- a :class:`SignProjector` of the Gaussian matrix,
        or the circulant projection's
        :class:`~hsvm_cli.hashing.circulant.CirculantEncoder`."""
        bits = self.check_bits(bits)
        if self.projector is not None:
            return self.projector.encoder(bits)
        return SignProjector(self.projection(bits))

    def voter(self, bits=None, *, kernel=None):
        """The classifiers' range queries at ``bits``: a :class:`HashVoter`
        whose ``votes(xcodes)`` gives hash votes and margins per class."""
        key = (self.check_bits(bits), kernel)
        if key not in self._voters:
            self._voters[key] = HashVoter(self.codes, self.theta, self.pair_a, self.pair_b, bags=self.bags,
                                          n_classes=self.n_classes, bits=key[0], kernel=kernel)
        return self._voters[key]

    def identity(self, bits=None):
        """What determines a sample's code besides the sample itself (codes
        files record it).  A non-Gaussian projection adds its kind and
        layout; a Gaussian one leaves them out, as hsvm 0.1 did, so that its
        codes files stay what they were."""
        ident = {"generator": self.generator, "seed": int(self.seed), "n_features": int(self.n_features),
                 "normalize": self.normalize, "bits": int(self.bits if bits is None else bits)}
        if self.projection_kind != "gaussian":
            ident.update(projection_kind=self.projection_kind, projection_layout=self.projection_layout)
        return ident

    def check_codes(self, model, encoder, *, rows=8):
        """Refuse classifier codes that are not ``model``'s under this hash
        model's projection: a few rows of W hashed again with ``encoder``
        (:meth:`encoder`, which a filter derives anyway to hash samples;
        codes are the same bits on every machine).  A seed or projection
        edited into the header with its checksum made anew passes every
        checksum and :meth:`check_model`, and would vote with codes of
        another projection than the samples'."""
        n = model.n_classifiers
        if n == 0:
            return
        picked = np.linspace(0, n - 1, min(n, rows)).astype(np.int64)
        picked = picked[np.r_[True, picked[1:] != picked[:-1]]]     # sorted: distinct without np.unique (numpy.ma)
        model.verify(picked)
        again = encoder.codes(np.ascontiguousarray(np.asarray(model.W)[picked], dtype=np.float32))
        if not np.array_equal(again, np.asarray(self.codes)[picked, :again.shape[1]]):
            raise ModelMismatchError(
                "hash model %s: its classifier codes are not %s's under its projection (seed %d): the file was "
                "edited or made by another tool; hash the model again (hsvm hash-model)"
                % (self.path or "<hbm>", model.path or "the model", int(self.seed)))

    def check_model(self, model):
        """Refuse an exact model other than the one this was made from."""
        if not isinstance(model, OvoModel):
            raise TypeError("a hash model belongs to a one-vs-one model (OvoModel), not %s" % type(model).__name__)
        differ = [name for name, same in (
            ("classes", model.n_classes == self.n_classes and np.array_equal(model.classes, self.classes)),
            ("pairs", np.array_equal(model.pair_a, self.pair_a) and np.array_equal(model.pair_b, self.pair_b)),
            ("bags", model.bags == self.bags),
            ("n_features (%d, the model %d)" % (self.n_features, model.n_features),
             model.n_features == self.n_features)) if not same]
        if differ or model.content_sha256() != self.model_sha256:
            model.verify()      # a corrupt digest in the model file is its fault, not a mismatch
            if model.content_sha256() == self.model_sha256:
                # the digest agrees but the hash model's own copy of the classes or pairs does not
                raise ModelMismatchError("hash model %s does not match %s: its %s differ from the model's (its "
                                         "model digest is the model's: a damaged or hand-made hash model)"
                                         % (self.path or "<hbm>", model.path or "<model>", " and ".join(differ)))
            raise ModelMismatchError(
                "hash model %s was made from another model (model digest %s..., %s has %s...)"
                % (self.path or "<hbm>", self.model_sha256[:12], model.path or "<model>", model.content_sha256()[:12]))


def hash_model(model, *, bits=1024, seed=0, store_projection=False, class_scores=False, projection="gaussian"):
    """Hash every classifier of ``model`` (an :class:`OvoModel`) with ``bits``
    sign random projections derived from ``seed``; returns a
    :class:`HashModel`.  ``projection``: ``"gaussian"`` (a dense D x d
    matrix) or ``"circulant"`` (blocks of circ(r) diag(s),
    hashing/circulant.py: O(d log d) per sample and O(D) parameters).
    ``store_projection``: keep the projection's parameters in the file
    instead of re-deriving them from the seed.  ``class_scores``: also keep
    the K x d class-score summaries (predict/class_scores.py), so that the
    class-score first stage needs no pass over the model's W.  θ is the
    threshold angle for unit-length samples (L2-normalised, or the features
    of a model trained on codes); a model on unnormalised features
    (``normalize`` none, e.g. imported) takes its thresholds at each sample's
    norm when predicting (:mod:`hsvm_cli.predict.raw_filter`)."""
    seed = check_seed(seed)
    if not isinstance(model, OvoModel):
        raise TypeError("model must be an OvoModel (load_model(path) reads one), not %s" % type(model).__name__)
    if not is_int(bits) or bits <= 0 or bits % 64 or bits > MAX_BITS:
        raise OptionError("bits must be a multiple of 64 from 64 to %d, got %r" % (MAX_BITS, bits))
    bits = int(bits)
    if projection not in PROJECTIONS:
        raise OptionError("projection must be one of %s, not %r" % (", ".join(PROJECTIONS), projection))
    model.verify()
    if model.n_features == 0:
        # trained on samples without features: every classifier is its bias
        raise DataError("%s has no features: there is nothing to hash (predict it exactly)"
                        % (model.path or "the model"))
    codes_bytes = model.W.shape[0] * bits // 8
    if projection == "circulant":
        # its parameters (drawn as doubles: about 24 bytes a bit) and the
        # classifiers' codes; a huge --bits had failed with MemoryError only
        # after the draws
        check_allocation(bits * CIRCULANT_PEAK_BYTES_PER_BIT + codes_bytes,
                         "the codes of %d classifiers x %d bits" % (model.W.shape[0], bits))
        projector = CirculantProjection.from_seed(bits=bits, n_features=model.n_features, seed=seed)
        R = None
    else:
        check_allocation(bits * model.n_features * PROJECTION_PEAK_BYTES + model.W.size * 4 + codes_bytes,
                         "the %d x %d projection (--projection circulant needs O(D) memory)"
                         % (bits, model.n_features))
        R = projection_matrix(bits, model.n_features, seed=seed)
        projector = SignProjector(R)
    W = np.asarray(model.W, dtype=np.float32)
    codes = np.empty((W.shape[0], bits // 64), dtype=np.uint64)
    step = max(1, (32 << 20) // (8 * bits))
    for s in range(0, W.shape[0], step):
        codes[s:s + step] = projector.codes(W[s:s + step])
    theta = classifier_angles(W, model.b)
    class_W = class_b = None
    if class_scores:
        from ..predict.class_scores import class_score_weights
        class_W, class_b = class_score_weights(model)
    circulant = projection == "circulant"
    return HashModel(classes=np.asarray(model.classes), pair_a=np.asarray(model.pair_a), pair_b=np.asarray(model.pair_b),
                     codes=codes, theta=theta, bags=model.bags, bits=bits, seed=int(seed),
                     n_features=model.n_features, normalize=model.normalize,
                     model_sha256=model.content_sha256(), zero_based=trained_zero_based(model),
                     projection_stored=R if store_projection and not circulant else None, class_W=class_W,
                     class_b=class_b, projection_kind=projection, projector=projector if circulant else None,
                     projector_stored=bool(store_projection and circulant), model_codes=model.codes_source)


def save_hash_model(h, path, *, extra_meta=None):
    """Write ``h`` as an ``hsvm-hash-model`` container (atomically): version 1
    for a Gaussian projection, 2 for a circulant one."""
    if not isinstance(h, HashModel):
        raise TypeError("save_hash_model takes a HashModel (from hash_model or load_hash_model), not %s"
                        % type(h).__name__)
    K = h.classes.shape[0]
    pair_dtype = np.uint16 if K <= 0xFFFF else np.uint32
    arrays = {
        "classes": np.asarray(h.classes, dtype=np.int64),
        "pairs": np.stack([h.pair_a, h.pair_b], axis=1).astype(pair_dtype),
        "codes": np.asarray(h.codes, dtype=np.uint64),
        "theta": np.asarray(h.theta, dtype=np.float32),
    }
    if h.projection_stored is not None:
        arrays["projection"] = np.asarray(h.projection_stored, dtype=np.float32)
    if h.projector is not None and h.projector_stored:
        arrays.update(h.projector.to_arrays())
    if h.class_W is not None:
        arrays["class_W"] = np.asarray(h.class_W, dtype=np.float32)
        arrays["class_b"] = np.asarray(h.class_b, dtype=np.float32)
    meta = {
        "bits": h.bits, "seed": h.seed, "generator": h.generator, "bags": h.bags,
        "n_features": h.n_features, "normalize": h.normalize, "model_sha256": h.model_sha256,
        "projection_kind": h.projection_kind, "projection_layout": h.projection_layout,
        "hsvm_version": __version__,
    }
    if h.model_codes is not None:
        meta["model_codes"] = dict(h.model_codes)
    if h.zero_based:
        meta["zero_based"] = True
    meta.update(extra_meta or {})
    version = HBM_VERSION if h.projection_kind == "gaussian" else HBM_VERSION_PROJECTIONS
    write_container(path, arrays, kind=HBM_KIND, version=version, meta=meta)


def load_hash_model(path):
    """Read and validate an ``hsvm-hash-model`` file (version 1: Gaussian
    projection; version 2: the projection kind it records)."""
    c = read_container(path, kind=HBM_KIND, versions={HBM_VERSION, HBM_VERSION_PROJECTIONS})
    name = c.path
    for key, kinds, ndim in (("classes", "i", 1), ("pairs", "u", 2), ("codes", "u", 2), ("theta", "f", 1)):
        if key not in c.arrays:
            raise ModelFormatError(name, "missing array %r" % key)
        if c.arrays[key].dtype.kind not in kinds or c.arrays[key].ndim != ndim:
            raise ModelFormatError(name, "array %r has the wrong type or shape" % key)
    bits = meta_int(c, "bits", 64, MAX_BITS)
    bags = meta_int(c, "bags", 1, 1 << 20)
    n_features = meta_int(c, "n_features", 1, MAX_FEATURES)
    seed = meta_int(c, "seed", -(1 << 63), (1 << 64) - 1)
    generator = meta_str(c, "generator")
    model_sha = meta_digest(c, "model_sha256")
    # "none": a model trained on codes (unit length as made), or a model on
    # unnormalised features (thresholds taken at each sample's norm).
    normalize = meta_str(c, "normalize", ("l2", "none"), default="l2")
    classes, pairs, codes, theta = (c.arrays[k] for k in ("classes", "pairs", "codes", "theta"))
    if classes.dtype != np.int64 or codes.dtype != np.uint64 or theta.dtype != np.float32 \
            or pairs.dtype not in (np.uint16, np.uint32):
        raise ModelFormatError(name, "unexpected array dtypes")
    if bits % 64:
        raise ModelFormatError(name, "bits must be a multiple of 64")
    K = classes.shape[0]
    if K < 2 or not strictly_increasing(classes):
        raise ModelFormatError(name, "classes must be at least two, sorted and unique")
    if pairs.shape[1] != 2:
        raise ModelFormatError(name, "pairs must have shape [P, 2]")
    reason = check_complete_pairs(pairs[:, 0], pairs[:, 1], K)
    if reason:
        raise ModelFormatError(name, reason)
    P = pairs.shape[0]
    if codes.shape != (P * bags, bits // 64):
        raise ModelFormatError(name, "codes have shape %s, expected %s" % (list(codes.shape), [P * bags, bits // 64]))
    if theta.shape != (P * bags,):
        raise ModelFormatError(name, "theta has %d entries, expected %d" % (theta.shape[0], P * bags))
    if theta.size and (theta.min() < 0.0 or theta.max() > 1.0):
        raise ModelFormatError(name, "theta must lie in [0, 1]")
    kind, projector = _projection_of(c, bits, n_features, seed, generator)
    proj = c.arrays.get("projection")
    if kind == "gaussian" and generator != GENERATOR and proj is None:
        raise ModelFormatError(name, "projection generator %r is unknown to this hsvm" % generator)
    if proj is not None:
        if proj.dtype != np.float32 or proj.shape != (bits, n_features):
            raise ModelFormatError(name, "projection has shape %s, expected %s" % (list(proj.shape), [bits, n_features]))
        if not np.any(proj, axis=1).all():
            raise ModelFormatError(name, "projection has a zero row")
    class_W, class_b = c.arrays.get("class_W"), c.arrays.get("class_b")
    if (class_W is None) != (class_b is None) or (class_W is not None and (
            class_W.dtype != np.float32 or class_W.shape != (K, n_features)
            or class_b.dtype != np.float32 or class_b.shape != (K,))):
        raise ModelFormatError(name, "class scores must be class_W float32 [K, d] and class_b float32 [K]")
    return HashModel(classes=classes, pair_a=pairs[:, 0].astype(np.int32), pair_b=pairs[:, 1].astype(np.int32),
                     codes=codes, theta=theta, bags=bags, bits=bits, seed=seed, n_features=n_features,
                     normalize=normalize, model_sha256=model_sha, generator=generator,
                     projection_stored=proj, class_W=class_W, class_b=class_b, meta=c.meta, path=name,
                     projection_kind=kind, projector=projector,
                     projector_stored=projector is not None and "circulant_r" in c.arrays,
                     model_codes=meta_dict(c, "model_codes") or None, zero_based=meta_bool(c, "zero_based"))


def _projection_of(c, bits, n_features, seed, generator):
    """The recorded projection kind (``gaussian`` when absent, as in files of
    hsvm 0.1) and, for a circulant one, its projector restored from the
    stored parameters or the seed; every inconsistency is a ModelFormatError."""
    name = c.path
    kind = meta_str(c, "projection_kind", tuple(PROJECTIONS), default="gaussian")
    layout = meta_str(c, "projection_layout", default=PROJECTIONS[kind])
    if layout != PROJECTIONS[kind]:
        raise ModelFormatError(name, "%s projection layout %r is unknown to this hsvm (it reads %s)"
                               % (kind, layout, PROJECTIONS[kind]))
    if (kind == "gaussian") != (c.version == HBM_VERSION):
        raise ModelFormatError(name, "a %s projection in a version %d hash model (Gaussian projections are "
                                     "version %d, others %d)" % (kind, c.version, HBM_VERSION,
                                                                 HBM_VERSION_PROJECTIONS))
    stored = [key for key in ("circulant_r", "circulant_signs") if key in c.arrays]
    if kind == "gaussian":
        if stored:
            raise ModelFormatError(name, "array %r belongs to a circulant projection, the file's is Gaussian"
                                   % stored[0])
        return kind, None
    if "projection" in c.arrays:
        raise ModelFormatError(name, "array 'projection' belongs to a Gaussian projection, the file's is circulant")
    if generator != GENERATOR and not stored:
        raise ModelFormatError(name, "projection generator %r is unknown to this hsvm" % generator)
    try:
        projector = CirculantProjection.restore(bits=bits, n_features=n_features, seed=seed, layout=layout,
                                                arrays={k: c.arrays[k] for k in stored})
    except ValueError as exc:
        raise ModelFormatError(name, "circulant projection: %s" % exc) from None
    return kind, projector
