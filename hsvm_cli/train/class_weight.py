"""Class weights: the C of each class's rows, as LIBSVM's and LIBLINEAR's
``-wi`` and scikit-learn's ``class_weight``.

In the pair of classes a and b, a's rows take cost C * w_a and b's C * w_b
(LIBLINEAR's weighted C; LIBSVM's one-vs-one does the same for each of its
sub-problems), so a heavier class is harder to misclassify where it meets each
other class.  ``"balanced"`` is scikit-learn's rule, w_c = n / (K n_c), from
the class counts of the whole training set (also for every cross-validation
fold and every block of a distributed run: the folds are stratified, and
each block then trains its pairs exactly as the whole run does); with a
per-class limit, from the rows a class brings to its pairs, min(n_c, limit)."""
import math
import numbers

import numpy as np

from ..errors import OptionError

__all__ = ["class_weight_vector", "class_weight_record", "check_weighted_c", "is_weight", "parse_class_weight"]


def class_weight_vector(class_weight, classes, y_index=None, *, per_class=None):
    """The weight of each of ``classes`` (sorted labels) as float64 [K], or
    None when ``class_weight`` is None (every weight 1: the unweighted
    problem, bit for bit).  ``class_weight``: ``"balanced"`` (needs
    ``y_index``, each sample's position in ``classes``; with ``per_class``,
    the limit of rows each class brings to a pair, counted from the rows the
    pairs train on, min(n_c, per_class), whose balance the limit already
    evens out), or a mapping from label to a positive finite weight (labels
    not named weigh 1; a label the training data does not have is refused,
    as a mistyped label would otherwise be ignored)."""
    if class_weight is None:
        return None
    K = len(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise OptionError("class_weight must be 'balanced' or a mapping of labels to weights, not %r"
                              % (class_weight,))
        if y_index is None:
            raise OptionError("class_weight 'balanced' needs the training labels")
        counts = np.bincount(np.asarray(y_index), minlength=K).astype(np.float64)
        if per_class is not None:
            counts = np.minimum(counts, float(per_class))
        return counts.sum() / (K * counts)
    if not hasattr(class_weight, "items"):
        raise OptionError("class_weight must be 'balanced' or a mapping of labels to weights, not %r"
                          % (class_weight,))
    known = {int(c): k for k, c in enumerate(classes)}
    weights = np.ones(K, dtype=np.float64)
    for label, weight in class_weight.items():
        if isinstance(label, (bool, np.bool_)) or not isinstance(label, numbers.Real) \
                or not (isinstance(label, numbers.Integral) or float(label).is_integer()):
            # whole-number floats, as the labels y themselves may be
            raise OptionError("class_weight labels must be integers, not %r" % (label,))
        label = int(label)
        if not is_weight(weight):
            raise OptionError("class %d: the weight must be a positive finite number, not %r" % (label, weight))
        if label not in known:
            raise OptionError("class weight for label %d, which the training data does not have (its labels: %s)"
                              % (label, _labels_text(classes)))
        weights[known[label]] = float(weight)
    return weights


def is_weight(value):
    """Whether ``value`` can be a class weight: a positive finite number
    (not a bool)."""
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real) and \
        math.isfinite(value) and value > 0


def check_weighted_c(C, weights):
    """Refuses a C that some class's weight takes to infinity or to zero
    (C = 1e-300 with a weight of 1e-300): the solver would run on it and
    return garbage or all-zero weights without a word."""
    if weights is None:
        return
    for w in (weights.max(), weights.min()):
        c = float(C) * float(w)
        if not (math.isfinite(c) and c > 0):
            raise OptionError("C = %g times the class weight %g is %g: not a cost the solver can use"
                              % (float(C), float(w), c))


def class_weight_record(class_weight, classes, weights):
    """What a model records of its class weights (``params["class_weight"]``):
    the rule (``"balanced"`` or ``"given"``) and each class's weight as
    ``[label, weight]`` pairs; None without weights."""
    if weights is None:
        return None
    return {"rule": "balanced" if isinstance(class_weight, str) else "given",
            "weights": [[int(c), float(w)] for c, w in zip(classes, weights)]}


def parse_class_weight(values):
    """train-ovo's ``-w`` values (``LABEL:WEIGHT`` each, or one
    ``balanced``) as the ``class_weight`` argument; raises ValueError with
    the reason.  A label given twice is refused."""
    if not values:
        return None
    if any(v.strip().lower() == "balanced" for v in values):
        if len(values) > 1:
            raise ValueError("'balanced' sets every class's weight: give it alone")
        return "balanced"
    weights = {}
    for v in values:
        label, sep, weight = v.partition(":")
        if "," in v:
            raise ValueError("one LABEL:WEIGHT per -w, got %r: repeat -w for more classes" % v)
        if "_" in v:
            # int() and float() read 1_0 as 10; a C parser (LIBSVM's) would not
            raise ValueError("%r is not LABEL:WEIGHT (digits without '_')" % v)
        if not sep:
            raise ValueError("expected LABEL:WEIGHT (LIBSVM's -wLABEL WEIGHT is -w LABEL:WEIGHT here), got %r" % v)
        try:
            label = int(label.strip())
        except ValueError:
            raise ValueError("the label of %r is not an integer" % v) from None
        try:
            w = float(weight)
        except ValueError:
            w = math.nan
        if not (math.isfinite(w) and w > 0):
            raise ValueError("the weight of %r must be a positive finite number" % v)
        if label in weights:
            raise ValueError("label %d is given twice" % label)
        weights[label] = w
    return weights


def _labels_text(classes, limit=10):
    shown = ", ".join(str(int(c)) for c in classes[:limit])
    return shown + (", ..." if len(classes) > limit else "")
