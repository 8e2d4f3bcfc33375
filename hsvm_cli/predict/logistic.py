"""LIBLINEAR's probabilities for the logistic-regression models imported from
it (what ``liblinear-predict -b 1`` prints).

LIBLINEAR's ``predict_probability`` (linear.cpp) turns each one-vs-rest
decision value s_c into the logistic sigma(s_c) = 1 / (1 + e^-s_c) and divides
them by their sum, a distribution that ranks the classes as their scores do;
a two-class model has one decision value s, P(first label) = sigma(s) and the
second label 1 - sigma(s).  Only its logistic solvers have probabilities
(``-s 0``, ``6``, ``7``; liblinear-predict refuses ``-b 1`` for the others).

Here the quotient is formed from log sigma(s_c) = -log(1 + e^-s_c), shifted by
the row's largest before exponentiating: the same values to a few ulps where
LIBLINEAR's are defined, and a distribution still where every class scores
below about -745 (e^745 overflows a double, every sigma(s_c) is 0 and
LIBLINEAR divides 0 by 0)."""
import numpy as np

from ..models.ovr import OvrModel

__all__ = ["LOGISTIC_SOLVERS", "logistic_solver", "logistic_proba", "two_class_as_ovr", "logistic_predictor"]

#: LIBLINEAR's solvers whose models give probabilities (its check_probability_model).
LOGISTIC_SOLVERS = ("L2R_LR", "L1R_LR", "L2R_LR_DUAL")


def logistic_solver(model):
    """The LIBLINEAR logistic solver a model was imported from, or None."""
    params = getattr(model, "params", None) or {}
    solver = params.get("solver_type")
    return solver if params.get("imported") == "liblinear" and solver in LOGISTIC_SOLVERS else None


def logistic_proba(scores, first=None):
    """float64 [n, K] probabilities from one-vs-rest scores [n, K] (module
    docstring).  ``first``: for the scores (s, -s) of a two-class model
    (:func:`two_class_as_ovr`), the column of its first label, which
    LIBLINEAR gives sigma(s), the other 1 - sigma(s)."""
    s = np.asarray(scores, dtype=np.float64)
    if first is not None:
        p = np.empty(s.shape, dtype=np.float64)
        with np.errstate(over="ignore"):        # e^-s = inf: sigma(s) = 0, as in LIBLINEAR
            p[:, first] = 1.0 / (1.0 + np.exp(-s[:, first]))
        p[:, 1 - first] = 1.0 - p[:, first]
        return p
    log_sigma = -np.logaddexp(0.0, -s)
    z = np.exp(log_sigma - log_sigma.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def two_class_as_ovr(model):
    """A two-class model imported from LIBLINEAR (one pair, deciding its first
    label when w.x + b > 0) as a one-vs-rest model scoring its first label
    w.x + b and its second -(w.x + b): the same labels, the score of exactly 0
    going to the second label as in liblinear-predict, and negation changes
    no bit of a product.  Its params say the first label's column
    (``two_class_first``) for :func:`logistic_proba`."""
    a, b = int(model.pair_a[0]), int(model.pair_b[0])
    w = np.asarray(model.W[0], dtype=np.float32)
    W = np.empty((2, w.shape[0]), dtype=np.float32)
    bias = np.empty(2, dtype=np.float32)
    W[a], W[b] = w, -w
    bias[a], bias[b] = model.b[0], -model.b[0]
    tie = np.empty(2, dtype=np.int32)
    tie[b], tie[a] = 0, 1                  # equal scores (a decision of 0): the second label
    return OvrModel(classes=np.asarray(model.classes), W=W, b=bias, tie_order=tie, normalize=model.normalize,
                    params=dict(model.params or {}, two_class_first=a), provenance=dict(model.provenance or {}),
                    path=model.path)


def logistic_predictor(model, *, threads=None):
    """An exact :class:`~hsvm_cli.predict.ovr.OvrPredictor` whose
    ``predict_proba`` gives liblinear-predict -b 1's probabilities, for a
    model imported from LIBLINEAR's logistic regression: one-vs-rest, or two
    classes through :func:`two_class_as_ovr` (what ``hsvm predict --proba``
    runs); OptionError for another model."""
    from ..errors import OptionError
    from ..models.ovo import OvoModel
    from .ovr import OvrPredictor
    if hasattr(model, "model") and hasattr(model, "tool"):
        raise TypeError("logistic_predictor takes a model: import_model(...).model, not the ImportedModel")
    if not isinstance(model, (OvoModel, OvrModel)):
        raise TypeError("logistic_predictor takes a model imported from LIBLINEAR (import_model(path).model), not %s"
                        % type(model).__name__)
    if logistic_solver(model) is None:
        raise OptionError("probabilities without a calibration are for models of LIBLINEAR's logistic regression "
                          "(train -s 0, 6 or 7); %s is not one" % (model.path or "this model"))
    return OvrPredictor(model if isinstance(model, OvrModel) else two_class_as_ovr(model), threads=threads)
