"""The exact one-vs-one model: classes, pair index, W, b, normalisation, provenance.

Stored as an ``hsvm-model`` container (docs/formats.md).  Loading memory-maps W,
so prediction that touches a few rows reads only those pages; those pages are
checked against their checksums, and for finite values, before first use
(:meth:`OvoModel.verify`)."""
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelFormatError
from ..io.container import BLOCK_BYTES, array_digests, read_container, write_container
from ..io.svmlight import MAX_FEATURES
from ..preprocess import NORMALIZATIONS
from ..support.arrays import all_finite
from ..support.labels import strictly_increasing
from ..support.text import counted
from .metadata import check_arrays, meta_dict, meta_int, meta_str
from .pairs import canonical_pairs, check_complete_pairs

MODEL_KIND = "hsvm-model"
MODEL_VERSION = 1

__all__ = ["OvoModel", "TrainingRecord", "bag_mean", "canonical_pairs", "save_model", "load_model"]


@dataclass
class TrainingRecord:
    """How a freshly trained model was made (not stored in the file).

    ``counts`` int32 [P*bags, 2]: training examples of class a and class b that
    classifier j saw (bootstrap duplicates included); ``solver_seeds`` uint32
    [P*bags]: the ``srand`` seed used right before classifier j's LIBLINEAR
    call; ``solver_seconds``: time inside LIBLINEAR summed over workers (can
    exceed ``wall_seconds`` with several jobs); ``wall_seconds``: elapsed time
    of the training; ``jobs``: worker processes actually used.  The solver on
    packed codes (train/bits_solver.py) adds, per classifier, ``iterations``
    (outer iterations), ``objective`` (the dual objective) and ``n_sv``;
    ``not_converged``: classifiers that stopped at the solver's iteration
    limit (LIBLINEAR's "reaching max number of iterations")."""

    counts: np.ndarray = field(default=None, repr=False)
    solver_seeds: np.ndarray = field(default=None, repr=False)
    solver_seconds: float = 0.0
    wall_seconds: float = 0.0
    jobs: int = 1
    iterations: np.ndarray = field(default=None, repr=False)
    objective: np.ndarray = field(default=None, repr=False)
    n_sv: np.ndarray = field(default=None, repr=False)
    not_converged: int = None
    search: object = None        # the CSearch of -c auto / --cv (train/c_search.py), if any


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class OvoModel:
    """``P`` pairs of classes, each with ``bags`` linear classifiers: row
    ``j`` of ``W`` and ``b`` belongs to pair ``j // bags``, bag ``j % bags``,
    and ``W[j]·x + b[j] > 0`` votes for ``classes[pair_a[p]]``, else for
    ``classes[pair_b[p]]``, where x is the sample after ``normalize``.

    ``tie_order`` (int32 [K], a permutation, or None): when set, equal vote
    counts go to the class with the lowest tie_order (LIBSVM's rule for an
    imported model: the first label in its own order) instead of hsvm's
    confidence term (:mod:`hsvm_cli.predict.ties`)."""

    classes: np.ndarray          # int64 [K], sorted labels
    pair_a: np.ndarray           # int32 [P], index into classes; wins on a positive decision
    pair_b: np.ndarray           # int32 [P]
    W: np.ndarray                # float32 [P*bags, d]
    b: np.ndarray                # float32 [P*bags]
    bags: int = 1
    normalize: str = "l2"
    params: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    path: str = None
    content_digest: str = None
    training: TrainingRecord = None
    container: object = field(default=None, repr=False)   # the file, while W is verified lazily
    tie_order: np.ndarray = None                           # int32 [K] or None (hsvm's tie rule)
    # The class-score summaries (models/class_weights.py), float32 [K, d] and
    # [K], derived from W and b; None until computed (save_model stores them).
    class_W: np.ndarray = None
    class_b: np.ndarray = None

    def __repr__(self):
        # its shape, not its arrays (thousands of numbers, and reading a
        # mapped model's weights)
        C = (self.params or {}).get("C")
        return "OvoModel(%d classes, %s x %s, %d features, normalize=%r%s%s)" % (
            self.n_classes, counted(self.n_pairs, "pair"), counted(self.bags, "bag"), self.n_features, self.normalize,
            ", C=%g" % C if isinstance(C, (int, float, np.integer, np.floating)) and not isinstance(C, bool) else "",
            ", path=%r" % self.path if self.path else "")

    @property
    def n_classes(self):
        return int(self.classes.shape[0])

    @property
    def n_pairs(self):
        return int(self.pair_a.shape[0])

    @property
    def codes_source(self):
        """For a model trained on codes (``train-ovo --codes``): what made its
        features, e.g. ``{"kernel_hash_sha256": ..., "kernel": "rbf",
        "input_features": 784}``; None for a model of svmlight features."""
        source = self.params.get("codes")
        return source if isinstance(source, dict) else None

    @property
    def trained_on_codes(self):
        """Whether the model's features are sign codes (Hash-SVM), with or
        without a record of what made them (:attr:`codes_source`)."""
        return self.codes_source is not None or self.params.get("trainer") == "dcd_bits"

    @property
    def n_features(self):
        return int(self.W.shape[1])

    @property
    def n_classifiers(self):
        return int(self.W.shape[0])

    def verify(self, rows=None):
        """Check the rows of W about to be used (all by default) against the
        file's checksums and for finite values; a model made in memory has
        nothing to check.  Raises ModelFormatError naming the file."""
        if self.container is None:
            return
        if rows is None:
            self.container.verify("W")
        else:
            self.container.verify_rows("W", rows)

    def verify_in_background(self):
        """Start checking all of W on another thread (see
        :meth:`hsvm_cli.io.container.Container.verify_in_background`); the
        next :meth:`verify` waits for it.  For users that will read all of W."""
        if self.container is not None:
            self.container.verify_in_background("W")

    def cancel_background_check(self):
        """Stop a background check of W that is no longer needed (see
        :meth:`hsvm_cli.io.container.Container.cancel_background`)."""
        if self.container is not None:
            self.container.cancel_background("W")

    def stored_arrays(self):
        """The arrays as the file stores them."""
        arrays = {
            "classes": np.asarray(self.classes, dtype=np.int64),
            "pairs": np.stack([self.pair_a, self.pair_b], axis=1).astype(np.int32),
            "W": np.asarray(self.W, dtype=np.float32),
            "b": np.asarray(self.b, dtype=np.float32),
        }
        if self.tie_order is not None:
            arrays["tie_order"] = np.asarray(self.tie_order, dtype=np.int32)
        if self.class_W is not None:
            arrays["class_W"] = np.asarray(self.class_W, dtype=np.float32)
            arrays["class_b"] = np.asarray(self.class_b, dtype=np.float32)
        return arrays

    def content_sha256(self):
        """The model's identity: SHA-256 over its settings and the digests of
        its stored arrays, so that hash models, codes and calibrations name
        the exact model they belong to.  It is computed from the content (from
        the file's checksums, which the content is verified against before
        use), never taken from a stored field.  A file written before
        checksums existed gets the SHA-256 of its arrays (the identity it had
        then)."""
        if self.content_digest is None:
            import hashlib
            h = hashlib.sha256()
            if self.container is not None and not self.container.checksummed:
                self.verify()
                h.update(("hsvm-model-v%d|bags=%d|normalize=%s|" % (MODEL_VERSION, self.bags, self.normalize)).encode())
                for arr, dt in ((self.classes, "<i8"), (self.pair_a, "<i4"), (self.pair_b, "<i4"),
                                (self.W, "<f4"), (self.b, "<f4")):
                    arr = np.asarray(arr, dtype=dt)
                    h.update(str(arr.shape).encode())
                    flat = arr.reshape(-1)
                    step = 1 << 22
                    for s in range(0, flat.shape[0], step):
                        h.update(np.ascontiguousarray(flat[s:s + step]).tobytes())
            else:
                stored = self.stored_arrays() if self.container is None else self.container.arrays
                digests = None if self.container is None else self.container.digests
                self.content_digest = model_identity(
                    bags=self.bags, normalize=self.normalize,
                    arrays={key: (arr.dtype.str, arr.shape) for key, arr in stored.items()},
                    digests={key: digests[key] if digests is not None else array_digests(stored[key])
                             for key in identity_arrays(stored)})
                return self.content_digest
            self.content_digest = h.hexdigest()
        return self.content_digest


#: The arrays stored with row digests: a refine checks the rows of W it reads
#: (io/container.py).  Derived from W, they are not part of the identity.
ROW_CHECKED = ("W",)

#: The arrays a model's identity covers, in the order it hashes them.
IDENTITY_ARRAYS = ("classes", "pairs", "W", "b")


def identity_arrays(arrays):
    """The keys of ``arrays`` a model's identity covers: IDENTITY_ARRAYS, and
    tie_order when present (it changes predictions; models without it keep
    their digest)."""
    return IDENTITY_ARRAYS + (("tie_order",) if "tie_order" in arrays else ())


def model_identity(*, bags, normalize, arrays, digests):
    """A model's identity (:meth:`OvoModel.content_sha256`) from its settings,
    its stored arrays' descriptions (``arrays``: key -> (numpy dtype string
    such as ``"<f4"``, shape)) and their block digests (``digests``: key ->
    the list :func:`~hsvm_cli.io.container.array_digests` gives), so that a
    writer that streams the arrays (models/model_stream.py) names the model
    as :func:`save_model` does."""
    import hashlib
    h = hashlib.sha256()
    h.update(("hsvm-model-identity-v2|bags=%d|normalize=%s|block=%d|" % (bags, normalize, BLOCK_BYTES)).encode())
    for key in identity_arrays(arrays):
        dtype, shape = arrays[key]
        h.update(("%s|%s|%s|" % (key, dtype, [int(v) for v in shape])).encode())
        h.update(",".join(digests[key]).encode())
    return h.hexdigest()


def bag_mean(decisions, bags):
    """Decision values [n, P*bags] (classifier j = pair j // bags) to their
    per-pair bag means [n, P], float64: the confidence term of a pair."""
    decisions = np.asarray(decisions)
    n = decisions.shape[0]
    if bags == 1:      # the mean of one value is that value: a conversion, not a reduction
        return decisions.reshape(n, -1).astype(np.float64)
    return decisions.reshape(n, -1, bags).mean(axis=2, dtype=np.float64)


def save_model(model, path):
    """Write ``model`` as an ``hsvm-model`` container (atomically)."""
    if not isinstance(model, OvoModel):
        raise TypeError("model must be an OvoModel (train_ovo's, load_model's), not %s" % type(model).__name__)
    _check_consistent(model, "<model>")
    if model.class_W is None:
        # Stored so that the class-score first stage reads K x d floats, not
        # all of W, at prediction time.
        from .class_weights import compute_class_weights
        model.verify()
        model.class_W, model.class_b = compute_class_weights(model)
    meta = {
        "bags": int(model.bags),
        "normalize": model.normalize,
        "n_features": model.n_features,
        "params": model.params,
        "provenance": model.provenance,
        "content_sha256": model.content_sha256(),
    }
    write_container(path, model.stored_arrays(), kind=MODEL_KIND, version=MODEL_VERSION, meta=meta,
                    row_checked=ROW_CHECKED)


def load_model(path):
    """Read and validate an ``hsvm-model`` file; W and b stay memory-mapped, W
    verified by rows as prediction uses them."""
    c = read_container(path, kind=MODEL_KIND, versions={MODEL_VERSION}, lazy=("W",))
    name = c.path
    check_arrays(c, (("classes", np.int64, 1), ("pairs", np.int32, 2), ("W", np.float32, 2),
                     ("b", np.float32, 1)))
    tie_order = c.arrays.get("tie_order")
    if tie_order is not None and (tie_order.dtype != np.int32 or tie_order.ndim != 1):
        raise ModelFormatError(name, "array 'tie_order' must be a 1-dimensional int32 array")
    class_W, class_b = c.arrays.get("class_W"), c.arrays.get("class_b")
    if (class_W is None) != (class_b is None):
        raise ModelFormatError(name, "class_W and class_b go together")
    pairs = c.arrays["pairs"]
    if pairs.shape[1] != 2:
        raise ModelFormatError(name, "pairs must have shape [P, 2]")
    bags = meta_int(c, "bags", 1, 1 << 20)
    normalize = meta_str(c, "normalize", NORMALIZATIONS)
    n_features = meta_int(c, "n_features", 0, MAX_FEATURES)
    model = OvoModel(
        classes=c.arrays["classes"], pair_a=np.ascontiguousarray(pairs[:, 0]), pair_b=np.ascontiguousarray(pairs[:, 1]),
        W=c.arrays["W"], b=c.arrays["b"], bags=bags, normalize=normalize,
        params=meta_dict(c, "params"), provenance=meta_dict(c, "provenance"), path=name, container=c,
        tie_order=tie_order, class_W=class_W, class_b=class_b)
    _check_consistent(model, name)
    if n_features != model.n_features:
        raise ModelFormatError(name, "n_features in metadata disagrees with W")
    return model


def _check_consistent(m, name):
    def bad(reason):
        raise ModelFormatError(name, reason)
    if m.classes.ndim != 1 or m.classes.shape[0] < 2:
        bad("a model needs at least two classes")
    if not strictly_increasing(m.classes):
        bad("classes must be sorted and unique")
    if m.bags < 1:
        bad("bags must be at least 1")
    if m.normalize not in NORMALIZATIONS:
        bad("unknown normalisation %r" % m.normalize)
    K = m.classes.shape[0]
    reason = check_complete_pairs(m.pair_a, m.pair_b, K)
    if reason:
        bad(reason)
    P = m.pair_a.shape[0]
    if m.W.ndim != 2 or m.W.shape[0] != P * m.bags:
        bad("W has %s rows, expected pairs x bags = %d" % (m.W.shape[0] if m.W.ndim == 2 else "?", P * m.bags))
    if m.b.shape != (P * m.bags,):
        bad("b has %s entries, expected %d" % (m.b.shape, P * m.bags))
    if m.container is None and not (all_finite(m.W) and all_finite(m.b)):
        bad("W and b must hold finite values")
    if m.tie_order is not None and (np.asarray(m.tie_order).shape != (K,)
                                    or not np.array_equal(np.sort(m.tie_order), np.arange(K))):
        bad("tie_order must be a permutation of 0..%d" % (K - 1))
    if m.class_W is not None:
        cw, cb = np.asarray(m.class_W), np.asarray(m.class_b)
        if cw.dtype != np.float32 or cw.shape != (K, m.W.shape[1]) or cb.dtype != np.float32 or cb.shape != (K,):
            bad("class_W must be float32 [K, d] and class_b float32 [K]")
        if not (all_finite(cw) and all_finite(cb)):
            bad("class_W and class_b must hold finite values")
