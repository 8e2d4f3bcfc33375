"""LIBSVM (linear kernel) and LIBLINEAR models as hsvm models (``hsvm
import-model``), predicting the labels the tools predict.

LIBSVM -> :class:`~hsvm_cli.models.ovo.OvoModel`.  The pair order *and
orientation* are LIBSVM's: pair p = (i, j) of LIBSVM's label order becomes
(pair_a, pair_b) = (index of l_i, index of l_j) among the sorted classes, with
W[p] = w_p and b[p] = -rho_p (w_p summed from the support vectors,
:mod:`hsvm_cli.io.tool_models`), so hsvm's rule "pair_a when W·x + b > 0, else
pair_b" is LIBSVM's, including f_p = 0 going to l_j (flipping pairs to
pair_a < pair_b would need -W, -b and send f_p = 0 to the other class).  Equal
vote counts go to the first label in LIBSVM's order: the model's ``tie_order``
(:mod:`hsvm_cli.predict.ties`).  probA/probB, when the model has them, are
LIBSVM's per-pair Platt sigmoids P(l_i | f) = 1/(1 + exp(A f + B)), in hsvm's
convention for pair_a: :func:`imported_calibration` makes them a calibration
for exact probabilities (``predict --exact --proba -C``).

LIBLINEAR.  Scores s_c(x) = sum_i w[i, c] x_i (+ bias * w[nr_feature, c]).  A
two-class model predicts l_0 when s_0(x) > 0, else l_1 -- for every solver:
even a Crammer-Singer model, which stores nr_w = 2 columns, is decided by its
first column alone (``predict_values`` branches on nr_class == 2) -- and is
imported as a one-pair OvO model with the same rule.  With more classes the
prediction is the first label in LIBLINEAR's order with the largest score: an
:class:`~hsvm_cli.models.ovr.OvrModel` whose ``tie_order`` keeps that order.

Imported models have ``normalize`` "none" (the tools saw the features as
given) and record where they came from in ``provenance``: the file, the SHA-256
of its bytes as stored, the tool, its label order and settings."""
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, ModelFormatError, OptionError
from ..io.files import display_name, require_regular_file
from ..io.tool_models import read_liblinear_model, read_libsvm_model, sniff_model_kind
from ..support.arrays import as_whole, beyond_float32
from ..support.memory import check_allocation
from .ovo import OvoModel
from .ovr import OvrModel
from .provenance import provenance as _provenance
from .provenance import record_zero_based

__all__ = ["ImportedModel", "import_model", "libsvm_to_ovo", "liblinear_to_hsvm", "libsvm_pairs",
           "label_tie_order", "imported_calibration", "default_extra_features"]


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class ImportedModel:
    """What :func:`import_model` returns: ``model`` (an OvoModel for LIBSVM and
    two-class LIBLINEAR files, an OvrModel for LIBLINEAR with three or more
    classes); ``platt_A``/``platt_B``: LIBSVM's probA/probB as float64 [P]
    aligned with the model's pairs, or None; ``tool``: "libsvm" or
    "liblinear"; ``source``: the provenance also stored in the model."""

    model: object
    tool: str
    platt_A: np.ndarray = None
    platt_B: np.ndarray = None
    source: dict = field(default_factory=dict)

    def __repr__(self):
        return "ImportedModel(%s, %r%s)" % (self.tool, self.model,
                                             ", with probA/probB" if self.platt_A is not None else "")


CLASS_ORDERS = ("ascending", "model")


def column_order(model, class_order):
    """The ``--scores``/``--proba`` columns' order as indices into
    ``model.classes``: None for ``"ascending"`` (hsvm's), and for ``"model"``
    the order an imported LIBSVM or LIBLINEAR file lists its labels in (its
    ``label`` line: ``svm-predict -b 1``'s columns).  An hsvm model keeps no
    training order (its classes are stored ascending): refused."""
    if class_order not in CLASS_ORDERS:
        raise OptionError("the class order must be ascending or model, not %r" % (class_order,))
    if class_order == "ascending":
        return None
    order = (getattr(model, "provenance", None) or {}).get("label_order")
    if order is None:
        raise OptionError("--class-order model is the label order of a model imported from LIBSVM or LIBLINEAR; "
                          "%s keeps none (its classes are ascending)" % (model.path or "this model"),
                          python="class_order='model' is the label order of a model imported from LIBSVM or "
                          "LIBLINEAR; %s keeps none (its classes are ascending)" % (model.path or "this model"))
    classes, order = np.asarray(model.classes), np.asarray(order)
    # the classes are sorted and unique: an order of them sorts back to them
    if order.shape != classes.shape or not np.array_equal(np.sort(order), classes):
        raise ModelFormatError(model.path or "<model>", "provenance.label_order is not an order of the model's "
                               "classes")
    return np.searchsorted(classes, order)


def label_tie_order(labels):
    """int32 [K]: for each class in sorted order, its position in ``labels``
    (the tool's label order)."""
    # The c-th smallest label sits at position argsort(labels)[c] of the tool's order.
    return np.argsort(np.asarray(labels, dtype=np.int64), kind="stable").astype(np.int32)


def libsvm_pairs(labels):
    """For LIBSVM's label order, the sorted classes and each pair's (pair_a,
    pair_b) class indices: pair p = (i, j) in LIBSVM order becomes (index of
    labels[i], index of labels[j]) among the sorted classes."""
    labels = np.asarray(labels, dtype=np.int64)
    K = labels.shape[0]
    classes = np.sort(labels)
    rank = np.searchsorted(classes, labels).astype(np.int32)
    i, j = np.triu_indices(K, k=1)
    return classes, rank[i], rank[j]


def _widen(W, n_features, name):
    """W [rows, d] as n_features columns: zero columns added, or unused ones cut."""
    d = W.shape[1]
    if n_features is None:
        return W
    n_features = as_whole(n_features, "n_features")
    if n_features < d:
        if np.any(W[:, n_features:]):
            raise OptionError("%s: the model uses feature %d, beyond --n-features %d" % (name, d, n_features))
        return W[:, :n_features]
    # the widened W and the model's float32 copy of it
    check_allocation(W.shape[0] * n_features * (W.dtype.itemsize + 4),
                     "%s: %d normals x --n-features %d" % (name, W.shape[0], n_features))
    out = np.zeros((W.shape[0], n_features), dtype=W.dtype)
    out[:, :d] = W
    return out


def _fits_float32(a, what, name):
    """Refuse values the model's float32 copy would make infinite."""
    big = float(np.max(np.abs(a))) if np.size(a) else 0.0
    if beyond_float32(big):
        raise DataError("%s: the %s reach %.4g, beyond float32's range (hsvm's storage type)" % (name, what, big))


def _source(path, sha256, tool):
    rec = _provenance()
    rec.pop("train_input", None)
    rec.pop("train_sha256", None)
    rec.update({"imported_from": path, "source_sha256": sha256, "tool": tool})
    return rec


def libsvm_to_ovo(lm, *, n_features=None):
    """The OvoModel of a parsed :class:`~hsvm_cli.io.tool_models.LibsvmModel`
    (LIBSVM's pairs, orientation and tie order) and LIBSVM's Platt parameters.

    Returns ``(model, platt_A, platt_B)`` (the latter None without probA/probB).
    ``n_features``: the model's width (default: the largest feature index of
    any support vector); cutting a used feature is an OptionError."""
    classes, pa, pb = libsvm_pairs(lm.labels)
    W = _widen(lm.W, n_features, lm.path)
    b = -lm.rho
    # rho = +-inf (svm-train's value for a pair whose class has no support
    # vector): f_p = w.x - rho is -+inf for every x, so the pair always votes
    # one way: the constant classifier w = 0, b = -+1 gives those votes.
    constant = np.isinf(b)
    if constant.any():
        W = np.array(W, copy=True)
        W[constant] = 0.0
        b = np.where(constant, np.sign(b), b)
    _fits_float32(W, "pair normals w (summed from the support vectors)", lm.path)
    _fits_float32(b, "offsets -rho", lm.path)
    source = _source(lm.path, lm.sha256, "libsvm")
    source.update({"svm_type": lm.svm_type, "kernel_type": lm.kernel_type,
                   "label_order": [int(v) for v in lm.labels], "nr_sv": [int(v) for v in lm.nr_sv],
                   "pair_orientation": "libsvm"})
    model = OvoModel(classes=classes, pair_a=pa, pair_b=pb, W=W.astype(np.float32),
                     b=b.astype(np.float32), bags=1, normalize="none",
                     params={"imported": "libsvm", "svm_type": lm.svm_type, "kernel_type": lm.kernel_type},
                     provenance=source, tie_order=label_tie_order(lm.labels))
    A, B = lm.probA, lm.probB
    if A is not None and constant.any():
        A, B = _constant_pair_sigmoids(np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64),
                                       constant, np.sign(-lm.rho))
    return model, A, B


def _constant_pair_sigmoids(A, B, constant, sign):
    """probA/probB of the rho = +-inf pairs made to give what svm-predict -b 1
    gives them.  Its sigmoid sees the decision -+inf: A * dec + B is NaN for
    A = 0 (the usual value there), which its clamp max(NaN, 1e-7) turns into
    1e-7 for the pair's first class -- whichever way the pair votes -- and
    +-inf otherwise, a probability of 0 or 1, clamped.  The imported pair
    decides by the constant +-1 instead, so its sigmoid becomes A = 0 and B
    = +-1e300: the same clamped values (an A * +-1 + B of 0.5-ish had
    changed most probable classes of whole test sets)."""
    A, B = A.copy(), B.copy()
    with np.errstate(invalid="ignore"):
        z = A[constant] * sign[constant] * np.inf
    first_low = np.isnan(z) | (z > 0)          # P(first class) = 1 / (1 + e^z): 0 -> clamped to 1e-7
    A[constant] = 0.0
    B[constant] = np.where(first_low, 1e300, -1e300)
    return A, B


def liblinear_to_hsvm(lm, *, n_features=None):
    """The hsvm model of a parsed :class:`~hsvm_cli.io.tool_models.LiblinearModel`.

    Two classes (any solver): an OvoModel with one pair (labels[0],
    labels[1]), W = w[:, 0], b = bias * w_bias[0], deciding labels[0] when
    W·x + b > 0.  More classes: an OvrModel with the classes sorted, row c the
    normal of classes[c] and ``tie_order`` the position of each class in
    LIBLINEAR's label order.  ``n_features``: the width (default nr_feature);
    features beyond nr_feature get weight 0, as liblinear-predict ignores
    them."""
    nf = lm.nr_feature
    Wt = lm.w[:nf].T                                   # [nr_w, nr_feature]
    b = lm.bias * lm.w[nf] if lm.bias >= 0 else np.zeros(lm.nr_w)
    _fits_float32(b, "offsets bias * w", lm.path)
    Wt = _widen(Wt, n_features, lm.path)
    source = _source(lm.path, lm.sha256, "liblinear")
    source.update({"solver_type": lm.solver_type, "label_order": [int(v) for v in lm.labels],
                   "bias": lm.bias, "nr_feature": nf})
    params = {"imported": "liblinear", "solver_type": lm.solver_type, "bias": lm.bias}
    labels = lm.labels
    classes = np.sort(labels)
    rank = np.searchsorted(classes, labels).astype(np.int32)
    if lm.n_classes == 2:
        return OvoModel(classes=classes, pair_a=rank[:1].copy(), pair_b=rank[1:2].copy(),
                        W=Wt[:1].astype(np.float32), b=np.asarray(b[:1], dtype=np.float32), bags=1,
                        normalize="none", params=params, provenance=source)
    order = np.argsort(rank)                           # file column of each sorted class
    return OvrModel(classes=classes, W=np.ascontiguousarray(Wt[order], dtype=np.float32),
                    b=np.asarray(b[order], dtype=np.float32), tie_order=label_tie_order(labels),
                    normalize="none", params=params, provenance=source)


def import_model(path, *, n_features=None, zero_based=False, name=None):
    """Read a LIBSVM (linear kernel) or LIBLINEAR model file (``-``: stdin is
    not possible, the file is read twice: its first line tells the tool) into
    an :class:`ImportedModel`.  ``zero_based`` applies to LIBSVM support-vector
    indices; ``n_features`` widens the model (see :func:`libsvm_to_ovo`).
    Its ``.model`` is an OvoModel (save_model), or for a LIBLINEAR file of
    three or more classes an OvrModel (save_ovr_model; OvrPredictor, and
    logistic_predictor for logistic regression's probabilities); its LIBSVM
    probabilities, if any, through :func:`imported_calibration`.
    Malformed files raise InputFormatError naming FILE:LINE."""
    if path == "-":
        raise OptionError("import-model needs a file name (the file is read twice), not stdin")
    require_regular_file(os.fspath(path), "a model file is read twice")
    tool = sniff_model_kind(path, name)
    if tool == "libsvm":
        lm = read_libsvm_model(path, zero_based=zero_based, name=name)
        model, A, B = libsvm_to_ovo(lm, n_features=n_features)
        # its support vectors numbered as the data it was trained on
        record_zero_based(model.provenance, zero_based)
        return ImportedModel(model, tool, A, B, model.provenance)
    if zero_based:
        # liblinear-train refuses index 0: its weights are of features 1..n
        raise OptionError("--zero-based is for LIBSVM models (whose support vectors may number features from 0); "
                          "%s is a LIBLINEAR model, whose features are numbered from 1 (liblinear-train refuses "
                          "index 0)" % (name or display_name(path)))
    lm = read_liblinear_model(path, name=name)
    model = liblinear_to_hsvm(lm, n_features=n_features)
    return ImportedModel(model, tool, None, None, model.provenance)


def default_extra_features(model):
    """``--extra-features`` when the user did not say: ``ignore`` for an
    imported model (svm-predict and liblinear-predict skip features beyond the
    model's), ``error`` otherwise."""
    return "ignore" if "imported_from" in (model.provenance or {}) else "error"


def imported_calibration(imported):
    """LIBSVM's probA/probB as an exact-mode :class:`~hsvm_cli.models.calibration.Calibration`
    for the imported model (``predict --exact --proba -C``: Platt's sigmoids
    coupled by Wu, Lin & Weng's method 2, as ``svm-predict -b 1`` does), or
    None when the file had no probability parameters."""
    from .calibration import Calibration, Setting
    if not isinstance(imported, ImportedModel):
        raise TypeError("imported_calibration takes what import_model returns (an ImportedModel), not %s"
                        % type(imported).__name__)
    if imported.platt_A is None:
        return None
    m = imported.model
    return Calibration(alphas={}, platt_A=np.asarray(imported.platt_A, dtype=np.float64),
                       platt_B=np.asarray(imported.platt_B, dtype=np.float64), model_sha256=m.content_sha256(),
                       hash_identity=None, setting=Setting("exact"),
                       info={"platt": "LIBSVM probA/probB of %s" % imported.source.get("imported_from"),
                             # what a pair of rho = +-inf gives (libsvm_to_ovo); older files lack it
                             "infinite_rho": "svm-predict -b 1",
                             "why": "exact prediction: probabilities from the imported model's own sigmoids"})
