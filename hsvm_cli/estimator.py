"""A scikit-learn estimator over hsvm's one-vs-one SVMs: :class:`HashedOvoSVC`.

It lets hsvm's models sit where scikit-learn's classifiers do (``Pipeline``,
``GridSearchCV``, ``cross_val_score``) with scikit-learn's conventions: any
hashable labels (strings too; ``classes_`` in sorted order), input checked by
scikit-learn's own validation (NaN and infinities refused, ``n_features_in_``
enforced), ``n_jobs``, ``random_state``, parameters untouched by ``fit``.
Training is :func:`hsvm_cli.train.ovo.train_ovo` on the labels themselves when
they are integers or whole-number floats, else on their positions in
``classes_``; prediction is a :class:`hsvm_cli.predict.predictor.Predictor`,
exact or through the hash filter (``hash_bits``).

scikit-learn is needed only here (``pip install scikit-learn``); the rest of
the package never imports it."""
import numbers

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils import check_random_state
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted
except ImportError as exc:      # pragma: no cover - the message is the point
    raise ImportError("hsvm_cli.estimator needs scikit-learn (pip install scikit-learn)") from exc

try:                            # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:             # pragma: no cover - older scikit-learn
    def _validate_data(estimator, *args, **kwargs):
        return estimator._validate_data(*args, **kwargs)

from .hashing import MAX_CODE_BITS
from .models.hashed import hash_model
from .predict.predictor import Predictor
from .support.threads import default_threads
from .train.class_weight import is_weight
from .train.ovo import train_ovo

__all__ = ["HashedOvoSVC"]


class HashedOvoSVC(ClassifierMixin, BaseEstimator):
    """One-vs-one linear SVMs (LIBLINEAR's solvers per class pair, max-wins
    voting, as ``SVC(kernel="linear")`` decides), optionally applied through
    hsvm's hash filter.

    ``C``: the cost, or ``"auto"`` (chosen by ``cv_folds``-fold
    cross-validation on hsvm's doubling grid, ``train-ovo -c auto``; the
    chosen value is ``C_``).  ``normalize``: ``"l2"`` (samples scaled to unit
    length, as hashing needs), ``"none"``, or ``"auto"`` (chosen by
    cross-validation: with C when ``C="auto"``, else at the given C, which
    needs ``cv_folds``).  ``solver``, ``tol``, ``bias``:
    as ``train-ovo``'s (LIBLINEAR's -s, -e and -B).  ``class_weight``:
    None, ``"balanced"`` (n / (K n_c)) or a dict from labels of ``y`` to
    weights, each class's C multiplier in every pair (``train-ovo -w``,
    ``SVC``'s ``class_weight``).  ``tol`` None is
    LIBLINEAR's 0.1 for the dual solvers (so that the model is ``train-ovo``'s),
    looser than ``LinearSVC``'s 1e-4: relabelling the classes, shuffling the
    rows or another ``random_state`` can then change a few percent of the
    predictions nearest the boundaries (4-6% on att-faces-40, at the same
    accuracy); ``tol=1e-3`` made them agree there.
    ``hash_bits``: None for exact prediction; otherwise the classifiers are
    hashed with that many sign random projections at fit time and
    prediction keeps ``filter_k`` classes (default: a tenth, at least 5) by
    Hamming votes on the first ``bits`` bits (default: all), then lets the
    exact classifiers among them decide (``refine``, a boolean).
    ``first_stage`` ``"scores"`` ranks classes by their summed pair margins
    instead (no hash model needed: ``filter_k`` alone enables it).  ``rule``:
    how the exact classifiers decide, ``"vote"`` (max-wins) or ``"dag"`` (a
    decision DAG, K - 1 of them per sample).  ``random_state``: an int seed
    for the projections and the cross-validation folds.  ``n_jobs``:
    threads for training and prediction (None: one for training, all CPUs
    for the hashed path; -1 all CPUs, -2 all but one, as in scikit-learn).

    Fitted attributes: ``classes_``, ``n_features_in_``, ``C_``, ``model_``
    (the :class:`~hsvm_cli.models.ovo.OvoModel`; ``save_model`` writes it
    for ``hsvm predict``: its labels are y's when they are integers or
    whole-number floats, the model `hsvm train-ovo` makes of the same data
    and seed, else the positions 0..K-1 of ``classes_``),
    ``hash_model_`` (None when exact), ``cv_results_`` (the cross-validation's
    table when C was chosen by it or ``cv_folds`` was given with a fixed C,
    else None).  ``decision_function``
    gives the exact one-vs-one scores (``SVC``'s ``"ovr"`` shape); there is no
    ``predict_proba`` (``hsvm_cli.calibrate`` fits probabilities on held-out
    data, for :class:`~hsvm_cli.predict.predictor.Predictor`)."""

    def __init__(self, C=1.0, *, normalize="l2", solver="l2loss-dual", tol=None, bias="auto", class_weight=None,
                 cv_folds=None, hash_bits=None, bits=None, filter_k=None, refine=True, first_stage=None, rule="vote",
                 random_state=0, n_jobs=None):
        self.C = C
        self.class_weight = class_weight
        self.normalize = normalize
        self.solver = solver
        self.tol = tol
        self.bias = bias
        self.cv_folds = cv_folds
        self.hash_bits = hash_bits
        self.bits = bits
        self.filter_k = filter_k
        self.refine = refine
        self.first_stage = first_stage
        self.rule = rule
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y):
        """Train on samples ``X`` (array or sparse matrix [n, d]) and labels
        ``y``; returns self."""
        threads = self._check_params()
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32), order="C")
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError("HashedOvoSVC needs samples of at least two classes; got 1 class (%r)"
                             % (classes[0].item() if hasattr(classes[0], "item") else classes[0],))
        seed = self._seed()
        # Integer labels are trained on as they are, so that the model is the
        # one `hsvm train-ovo` and train_ovo make of the same data and seed
        # (a pair's shuffles are seeded by its labels); so are whole-number
        # floats (scikit-learn's load_svmlight_file gives float labels);
        # others by position.
        fits = (classes.dtype.kind in "iu" and int(classes[-1]) <= np.iinfo(np.int64).max) or (
            classes.dtype.kind == "f" and bool(np.all(np.abs(classes) < 2.0 ** 53))
            and bool(np.all(classes == np.floor(classes))))
        labels = y.astype(np.int64) if fits else codes.astype(np.int64)
        model = train_ovo(X, labels, C=self.C, normalize=self.normalize, solver=self.solver,
                          tol=self.tol, bias=self.bias, cv_folds=self.cv_folds, seed=seed, jobs=threads or 1,
                          class_weight=self._training_class_weight(classes, labels if fits else None))
        hashed = None
        if self.hash_bits is not None:
            hashed = hash_model(model, bits=self.hash_bits, seed=seed)
        self.predictor_ = Predictor(model, hashed, bits=self.bits, filter_k=self.filter_k, refine=bool(self.refine),
                                    first_stage=self.first_stage, rule=self.rule, threads=threads)
        self.classes_ = classes
        self.model_ = model
        # decision_function's exact scorer: the predictor itself when exact by votes
        exact = hashed is None and self.first_stage is None and self.filter_k is None and self.rule == "vote"
        self.exact_predictor_ = self.predictor_ if exact else Predictor(model, threads=threads)
        self.hash_model_ = hashed
        self.C_ = float(model.params["C"])
        self.cv_results_ = model.params.get("cross_validation")
        return self

    def predict(self, X):
        """Predicted labels (from ``classes_``) of the samples ``X``."""
        check_is_fitted(self)
        X = _validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), order="C", reset=False)
        return self.classes_[np.searchsorted(self.model_.classes, self.predictor_.predict(X))]

    def decision_function(self, X):
        """The exact one-vs-one scores of the samples ``X``, in
        ``SVC(decision_function_shape="ovr")``'s form: [n, K] (columns in
        ``classes_`` order) each class's votes plus its summed pair decision
        values towards it squashed into (-1/3, 1/3), so that the largest is
        max-wins' winner with confidences breaking equal votes; two classes:
        [n], the pair's decision value, positive towards ``classes_[1]``.
        Always exact (every classifier asked), also when ``hash_bits`` makes
        ``predict`` use the hash filter, whose labels may then differ from
        the argmax here where the filter dropped the exact winner."""
        check_is_fitted(self)
        X = _validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), order="C", reset=False)
        pred = self.exact_predictor_.predict_block(X)
        votes, conf = pred.votes.astype(np.float64), pred.confidence
        if self.model_.n_classes == 2:
            d = conf[:, 1] + 0.0                # -0.0 as 0
            # a decision of exactly 0 goes to the pair's second class (LIBSVM's
            # rule), which may be classes_[1]: the smallest positive value
            # then, so that classes_[(d > 0)] is predict's label
            d[(d == 0.0) & (pred.labels == self.model_.classes[1])] = np.nextafter(0.0, 1.0)
            return d
        return votes + conf / (3.0 * (np.abs(conf) + 1.0))

    def _training_class_weight(self, classes, integer_labels):
        """class_weight keyed by the labels trained on (y's integers, or
        positions in ``classes``); a key that is not a class of y refused,
        as SVC refuses it."""
        cw = self.class_weight
        if cw is None or isinstance(cw, str):
            if cw not in (None, "balanced"):
                raise ValueError("class_weight must be None, 'balanced' or a dict, not %r" % (cw,))
            return cw
        if not isinstance(cw, dict):
            raise ValueError("class_weight must be None, 'balanced' or a dict, not %r" % (cw,))
        out = {}
        for key, weight in cw.items():
            at = np.flatnonzero(classes == key)
            if at.size != 1:
                raise ValueError("class_weight names %r, which is not a class of y (classes_: %s%s)"
                                 % (key, ", ".join(str(c) for c in classes[:10]), ", ..." if len(classes) > 10 else ""))
            if not is_weight(weight):
                raise ValueError("class_weight[%r] must be a positive finite number, not %r" % (key, weight))
            out[int(classes[at[0]]) if integer_labels is not None else int(at[0])] = weight
        return out

    def _check_params(self):
        """Refuse what the library would refuse in its command-line words,
        naming this estimator's parameters; returns the thread count (None:
        hsvm's default)."""
        if not (isinstance(self.bias, str) and self.bias == "auto") and (
                isinstance(self.bias, (bool, np.bool_)) or not isinstance(self.bias, numbers.Real)
                or not np.isfinite(self.bias)):
            raise ValueError("bias must be 'auto' or a finite number (<= 0: no bias term), not %r" % (self.bias,))
        if not isinstance(self.refine, (bool, np.bool_)):
            hint = (" (the refine's rule is rule=%r)" % self.refine
                    if isinstance(self.refine, str) and self.refine in ("vote", "dag") else "")
            raise ValueError("refine must be True or False, not %r%s" % (self.refine, hint))
        if self.rule not in ("vote", "dag"):
            raise ValueError("rule must be 'vote' or 'dag', not %r" % (self.rule,))
        # checked before training, which may take minutes, in this estimator's words
        for name, value in (("hash_bits", self.hash_bits), ("bits", self.bits)):
            if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)
                                      or value < 64 or value % 64 or value > MAX_CODE_BITS):
                raise ValueError("%s must be a positive multiple of 64 up to %d, not %r" % (name, MAX_CODE_BITS, value))
        if self.bits is not None and self.hash_bits is not None and self.bits > self.hash_bits:
            raise ValueError("bits=%d is more than hash_bits=%d, the bits hashed" % (self.bits, self.hash_bits))
        if self.filter_k is not None and (isinstance(self.filter_k, (bool, np.bool_))
                                          or not isinstance(self.filter_k, numbers.Integral) or self.filter_k < 1):
            raise ValueError("filter_k must be a whole number of at least 1, not %r" % (self.filter_k,))
        if isinstance(self.normalize, str) and self.normalize == "auto" and not (
                isinstance(self.C, str) and self.C == "auto") and self.cv_folds is None:
            raise ValueError("normalize='auto' is chosen by cross-validation: it needs C='auto' or cv_folds")
        if not self.refine and self.rule == "dag":
            raise ValueError("refine=False refines nothing: rule='dag' (the refine's rule) does not apply")
        stage = self.first_stage if self.first_stage is not None else ("votes" if self.hash_bits is not None
                                                                        else None)
        if self.hash_bits is None and self.bits is not None:
            raise ValueError("bits=%r needs hash_bits (the hash model)" % (self.bits,))
        if self.hash_bits is None and self.first_stage in ("votes", "hashed-scores"):
            raise ValueError("first_stage=%r needs hash_bits (the hash model)" % (self.first_stage,))
        if stage is None and self.filter_k is not None:
            raise ValueError("filter_k needs a first stage: hash_bits (the hash filter) or first_stage='scores'")
        if stage is None and not self.refine:
            raise ValueError("refine=False needs a first stage: hash_bits or first_stage='scores'")
        jobs = self.n_jobs
        if jobs is None:
            return None
        if isinstance(jobs, (bool, np.bool_)) or not isinstance(jobs, numbers.Integral) or jobs == 0:
            raise ValueError("n_jobs must be None, a positive integer or a negative one (-1: all CPUs), not %r"
                             % (jobs,))
        return int(jobs) if jobs > 0 else max(1, default_threads() + 1 + int(jobs))

    def _seed(self):
        # an int is hsvm's --seed; None or a RandomState draws one, as
        # scikit-learn's estimators do
        rs = self.random_state
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            if not 0 <= rs < 2**64:
                # named as the caller named it, not as hsvm's --seed
                raise ValueError("random_state must be an integer in [0, 2**64), None or a RandomState, not %r"
                                 % (rs,))
            return int(rs)
        return int(check_random_state(rs).randint(np.iinfo(np.int32).max))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
