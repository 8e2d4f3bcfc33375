"""One predictor for every way hsvm predicts: exact one-vs-one voting, the pure
hash classifier, and the two-stage hash filter + exact refine (Litayem, Joly &
Boujemaa's filter-and-refine; Milgram, Cheriet & Sabourin's two-stage
classifier), with calibrated probabilities when a calibration is given."""
import functools
import io
import math
import os

import numpy as np

from ..errors import DataError, ModelMismatchError, OptionError, warn
from ..io.files import refuse_overwriting_input
from ..io.predictions import PredictionWriter
from ..io.shard import as_shard
from ..io.svmlight import SvmChunk, iter_svmlight
from ..models.imported import column_order, default_extra_features
from ..models.pairs import PairLookup
from ..models.provenance import trained_zero_based
from ..preprocess import give_to_prepare, prepare, stays_sparse
from ..proba.estimators import combine
from ..proba.stages import exact_proba, first_stage_proba, second_stage_proba
from ..support.kernels import kernel_id
from ..support.lazy_sparse import sp
from ..support.threads import resolve_threads
from ..support.timing import NullTimings, Timings, timed_chunks
from .class_scores import FIRST_STAGES, ClassScoreFilter, class_score_weights
from .dag import DecisionDag, candidate_lists
from .exact import ExactScorer
from .features import KernelHashFeatures, PackedCodeFeatures, block_rows, check_model_codes, short_digest
from .filter import HashFilter
from .ranking import top_classes
from .raw_filter import make_filter, unit_length_samples
from .refine import dense_is_cheaper, refine_decisions, refine_votes
from .samples import check_samples, finite_samples, fit_width
from .ties import kept_winners, winners

EXACT_PHASES = ("parse", "normalise", "score", "vote", "write")
#: How a calibration is made, for the messages that ask for one.
CALIBRATE_HINT = "hsvm calibrate -m MODEL VALIDATION -o CAL fits one on labelled held-out data"
DAG_PHASES = ("parse", "normalise", "dag", "write")
HASH_PHASES = ("parse", "normalise", "hash", "filter", "refine", "write")
#: How the exact classifiers decide among the classes they get: max-wins
#: voting over every pair, or a decision DAG (K - 1 pairs; predict/dag.py).
RULES = ("vote", "dag")
# Rows per block of Predictor.predict / predict_proba on an in-memory X.
PREDICT_ROWS = 16384


class Prediction:
    """The prediction of a block of samples.

    ``labels`` int64 [n]: the predicted class labels; ``votes`` int32 [n, K]:
    the final vote counts (exact, or exact among the refined classes; the
    filter's with no refine; None with a decision DAG, which counts no
    votes); ``confidence`` float64 [n, K]: the tie-break term matching
    ``votes``; ``proba`` float64 [n, K] when probabilities were
    asked for; ``y_true``: the labels read from the input, if any.

    A refine by votes keeps its numbers among each row's kept classes
    (:class:`~hsvm_cli.predict.refine.KeptVotes`) and spreads them over all
    K classes only when ``votes`` or ``confidence`` is read: a caller after
    the labels never builds two [n, K] arrays per block."""

    def __init__(self, y_true, labels, votes, confidence, proba=None, *, kept=None):
        self.y_true = y_true
        self.labels = labels
        self._votes = votes
        self._confidence = confidence
        self.proba = proba
        self._kept = kept

    def _spread(self):
        if self._kept is not None:
            self._votes, self._confidence = self._kept.full()
            self._kept = None

    @property
    def votes(self):
        self._spread()
        return self._votes

    @votes.setter
    def votes(self, value):
        self._spread()
        self._votes = value

    @property
    def confidence(self):
        self._spread()
        return self._confidence

    @confidence.setter
    def confidence(self, value):
        self._spread()
        self._confidence = value

    def __repr__(self):
        return "Prediction(%d samples)" % len(self.labels)


def _described(value):
    """A refused argument as an error names it: models and paths by their
    repr, anything else (an array: its numbers) by its type."""
    if isinstance(value, (str, bytes, os.PathLike)) or hasattr(value, "pair_a"):
        return repr(value)
    return "a value of type %s" % type(value).__name__


def _require_model(model):
    # objects of the wrong kind had failed deep inside
    if not (hasattr(model, "pair_a") and hasattr(model, "W")):
        raise TypeError("model must be a one-vs-one model (hsvm_cli.load_model(path) reads one), not %s"
                        % _described(model))


def _require_calibration(calibration):
    from ..models.calibration import Calibration
    if not isinstance(calibration, Calibration):
        raise TypeError("calibration must be a Calibration (hsvm_cli.calibrate makes one, "
                        "hsvm_cli.load_calibration(path) reads one), not %s" % _described(calibration))


def default_filter_k(n_classes):
    """Classes kept by the filter when nobody says: a tenth, at least 5 (all
    of them when there are no more).  The floor is for few classes, where a
    tenth is one or two: the hash votes' second class misses the exact label
    often at short codes (digits, K = 10, 256 bits: 95.3% at k = 2 against
    97.6% at 4 and 5, exact 98.0%), while refining five classes costs ten exact
    classifiers a sample whatever K is."""
    return min(n_classes, max(5, math.ceil(0.1 * n_classes - 1e-9)))


class Predictor:
    """Predicts with an exact model alone or with its hash model.

    ``hash_model`` None: exact prediction (every pair, every bag).  Otherwise
    the filter hashes the samples at ``bits`` (default: all the hash model's
    bits), keeps ``filter_k`` classes (default :func:`default_filter_k`;
    1 is the pure hash classifier, K is exact prediction) and, unless
    ``refine`` is False, the exact classifiers among them decide.
    ``epsilon``: keep, per sample, among the ``filter_k`` classes with the
    most hash votes (default all), those whose calibrated first-stage
    probability exceeds it, and the vote winner always.
    ``calibration`` (from :func:`hsvm_cli.calibrate`) enables ``epsilon``
    and probabilities; :meth:`from_calibration` also takes its chosen setting.
    ``rule``: how the exact classifiers decide, among all classes or the kept
    ones -- ``"vote"`` (max-wins over every pair) or ``"dag"`` (a decision
    DAG over the classes in class order, K - 1 pairs; no probabilities, no
    vote counts).
    ``first_stage``: what ranks the classes for the refine -- ``"votes"``
    (the hash filter: every pair's Hamming range query; the default with a
    hash model), ``"scores"`` (each class's summed normalised pair margins,
    one K x d product: no hash model needed) or ``"hashed-scores"`` (those
    scores estimated from the hash model's codes, for K much larger than the
    code length); see predict/class_scores.py.
    ``kernel_hash``: for a model trained on kernel hash codes (Hash-SVM,
    ``train-ovo --codes``), the :class:`~hsvm_cli.hashing.krsh.KernelHash`
    that made them: samples given to the predictor are then raw, and are
    hashed to the model's features on the fly (without it, such a model takes
    its +-1/sqrt(bits) features as given, e.g. from
    :func:`~hsvm_cli.train.bits_solver.expand_codes`).
    ``threads``: worker threads of the hashed path (default: the CPUs this
    process may use); ``kernel``: force a native code path (see
    :mod:`hsvm_cli.support.kernels`)."""

    def __repr__(self):
        if self.features is not None:       # a model trained on kernel hash codes, fed raw samples
            return "Predictor(%s; %r; through %r)" % (self._setting_text(), self.model, self.features.kernel_hash)
        return "Predictor(%s; %r)" % (self._setting_text(), self.model)

    def _setting_text(self):
        """This predictor's setting in words (its repr, its warnings)."""
        if self.first_stage is None:
            return "exact, %s" % ("decision DAG" if self.rule == "dag" else "max-wins votes")
        bits = getattr(self.filter, "bits", None)
        return "%s%s, %s, %s" % (
            {"votes": "hash filter", "scores": "class scores", "hashed-scores": "hashed class scores"}[
                self.first_stage],
            " at %d bits" % bits if bits else "",
            "k=%d" % self.k if self.epsilon is None else "threshold %g (at most %d classes)" % (self.epsilon, self.k),
            ("refined by %s" % ("a decision DAG" if self.rule == "dag" else "votes")) if self.refine else
            "not refined")

    # The refine step's per-cell arrays take ~40 bytes a cell: this many cells
    # per sub-block keeps them near 80 MB whatever the chunk size.
    MAX_CELLS = 1 << 21

    def __init__(self, model, hash_model=None, *, bits=None, filter_k=None, refine=True, epsilon=None,
                 calibration=None, threads=None, kernel=None, rule="vote", first_stage=None, kernel_hash=None):
        _require_model(model)
        from ..hashing.krsh import KernelHash
        from ..models.hashed import HashModel
        from ..models.ovr import OvrHashModel
        if isinstance(hash_model, OvrHashModel):
            # a file's mismatch (-H of a one-vs-rest model), exit 65, as the other way round is
            raise ModelMismatchError("%s is a one-vs-rest hash model; a one-vs-one model needs its own "
                                     "(hsvm hash-model -m MODEL)" % (hash_model.path or "the hash model"))
        if hash_model is not None and not isinstance(hash_model, HashModel):
            # (a learned circulant hash has codes too: it had passed, to fail later)
            raise TypeError("hash_model must be a hash model (hsvm_cli.hash_model(model) makes one, "
                            "hsvm_cli.load_hash_model(path) reads one), not %s" % _described(hash_model))
        if calibration is not None:
            _require_calibration(calibration)
        if kernel_hash is not None and not isinstance(kernel_hash, KernelHash):
            raise TypeError("kernel_hash must be a KernelHash (hsvm_cli.fit_kernel_hash makes one, "
                            "hsvm_cli.load_kernel_hash(path) reads one), not %s" % _described(kernel_hash))
        if not isinstance(refine, (bool, np.bool_)):
            # "dag" (the CLI's --refine dag) had been taken for True, "no" too
            rule_hint = isinstance(refine, str) and refine in RULES
            raise OptionError("refine must be True or False, not %r%s"
                              % (refine, " (the refine's rule is rule=%r)" % refine if rule_hint else ""))
        self.model = model
        self.hash_model = hash_model
        self.features = None
        self._proba_arguments = self._proba_twin = None
        self._proba_labels_warned = False
        if kernel_hash is not None:
            check_model_codes(model, kernel_hash=kernel_hash, model_name=model.path or "the model")
            self.features = KernelHashFeatures(kernel_hash, model.n_features)
        self.calibration = calibration
        try:
            resolve_threads(threads)    # a bad count is refused here, not at the first prediction
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        self.threads = threads
        if kernel is not None:
            kernel_id(kernel)       # likewise a kernel that is unknown or not on this machine
        self.kernel = kernel
        rule = "vote" if rule is None else rule
        if rule not in RULES:
            raise OptionError("the decision rule must be vote or dag, not %r" % (rule,))
        self.rule = rule
        self.dag = DecisionDag.from_model(model) if rule == "dag" else None
        if calibration is not None:
            calibration.check(model, hash_model)
        if first_stage is None and hash_model is not None:
            first_stage = "votes"
        if first_stage is not None and first_stage not in FIRST_STAGES:
            raise OptionError("the first stage must be one of %s, not %r" % (", ".join(FIRST_STAGES), first_stage))
        if first_stage in ("votes", "hashed-scores") and hash_model is None:
            raise OptionError("--first-stage %s needs a hash model (-H)" % first_stage,
                              python="first_stage=%r needs a hash model (hash_model)" % first_stage)
        self.first_stage = first_stage
        if first_stage is None:
            if bits is not None:
                raise OptionError("--bits needs a hash model (-H)", python="bits needs a hash model (hash_model)")
            if epsilon is not None:
                raise OptionError("--filter-threshold needs the hash filter (-H): the probabilities it thresholds "
                                  "are calibrated on its vote first stage",
                                  python="epsilon needs the hash filter (hash_model): the probabilities it "
                                  "thresholds are calibrated on its vote first stage")
            if filter_k is not None:
                raise OptionError("--filter-k needs a first stage (a hash model -H, or --first-stage scores)",
                                  python="filter_k needs a first stage (hash_model, or first_stage='scores')")
            if not refine:
                raise OptionError("--no-refine needs a first stage (a hash model -H, or --first-stage scores)",
                                  python="refine=False needs a first stage (hash_model, or first_stage='scores')")
            self.filter = None
            self.scorer = ExactScorer(model, threads=threads, kernel=kernel) if rule == "vote" else None
            return
        if hash_model is not None:
            hash_model.check_model(model)
        K = model.n_classes
        if epsilon is not None:
            if calibration is None:
                raise OptionError("--filter-threshold needs a calibration (-C; %s)" % CALIBRATE_HINT,
                                  python="epsilon needs a calibration (calibration)")
            if first_stage != "votes":
                raise OptionError("--filter-threshold is calibrated for the vote first stage only",
                                  python="epsilon is calibrated for the vote first stage only")
            if not 0.0 <= float(epsilon) < 1.0:
                raise OptionError("--filter-threshold must be in [0, 1)", python="epsilon must be in [0, 1)")
        if filter_k is None:
            filter_k = K if epsilon is not None else default_filter_k(K)
        if isinstance(filter_k, (bool, np.bool_)) or not isinstance(filter_k, (int, np.integer)) or filter_k < 1:
            raise OptionError("--filter-k must be an integer of at least 1, not %r" % (filter_k,),
                              python="filter_k must be an integer of at least 1, not %r" % (filter_k,))
        if epsilon is not None and (filter_k == 1 or not refine):
            raise OptionError("--filter-threshold chooses the classes to refine: with -k 1 or --no-refine there "
                              "is only the first stage's best class",
                              python="epsilon chooses the classes to refine: with filter_k=1 or refine=False "
                              "there is only the first stage's best class")
        if first_stage == "votes":
            # Models on unnormalised features get per-sample thresholds (raw_filter.py).
            self.filter = make_filter(model, hash_model, bits=bits, threads=threads, kernel=kernel)
            # the codes checked against W once the filter derives its projection
            self.filter.check_encoder = functools.partial(hash_model.check_codes, model)
        else:
            if first_stage == "scores" and bits is not None:
                raise OptionError("--bits is for a hashed first stage (votes, hashed-scores)",
                                  python="bits is for a hashed first stage (first_stage 'votes' or 'hashed-scores')")
            if first_stage == "hashed-scores" and not unit_length_samples(model):
                # The estimate ||u|| cos(angle) + beta stands for u.x + beta at ||x|| = 1 only.
                raise OptionError("--first-stage hashed-scores needs a model on unit-length samples (this one "
                                  "takes them unnormalised: --normalize none, or imported): use --first-stage "
                                  "scores or votes",
                                  python="first_stage='hashed-scores' needs a model on unit-length samples (this "
                                  "one takes them unnormalised: normalize='none', or imported): use "
                                  "first_stage='scores' or 'votes'")
            if hash_model is not None and hash_model.class_W is not None:
                U, beta = hash_model.class_W, hash_model.class_b
            else:
                U, beta = class_score_weights(model)
            encoder = hash_model.encoder(bits) if first_stage == "hashed-scores" else None
            self.filter = ClassScoreFilter(U, beta, encoder=encoder, threads=threads, kernel=kernel)
        self.k = min(int(filter_k), K)
        self.refine = bool(refine) and self.k > 1
        self.epsilon = None if epsilon is None else float(epsilon)
        # The first-stage temperature at these bits: needed by probabilities
        # and thresholds only, so labels at other bits than the calibration's
        # need none (checked when asked for: _proba_predictor, and here for a
        # threshold).
        self.alpha = None
        if calibration is not None and first_stage == "votes":
            self.alpha = calibration.alphas.get(int(self.filter.bits))
            if epsilon is not None:
                calibration.alpha(self.filter.bits)
        # The refined pairs' logit factor of the two-stage probabilities (1: none fitted for this setting).
        self.second_stage_sharpness = (calibration.second_stage_sharpness(self.filter.bits, self.k, self.epsilon)
                                       if calibration is not None and first_stage == "votes" else 1.0)
        # and the shift of the kept classes' mass fitted beside it (0: none)
        self.kept_mass_shift = (calibration.kept_mass_shift(self.filter.bits, self.k, self.epsilon)
                                if calibration is not None and first_stage == "votes" else 0.0)
        self.lookup = PairLookup(model.pair_a, model.pair_b, K)
        # When the filter keeps every class, refining by votes is exact prediction.
        self.scorer = (ExactScorer(model, threads=threads, kernel=kernel)
                       if rule == "vote" and self.refine and self.k == K and self.epsilon is None else None)
        self._all_pairs = None  # the exact scorer a refine of many classes uses

    @classmethod
    def from_calibration(cls, model, calibration, hash_model=None, *, exact=False, bits=None, filter_k=None,
                         epsilon=None, refine=True, threads=None, kernel=None, rule=None, first_stage=None,
                         kernel_hash=None, proba=False, scores=False):
        """A predictor with the setting ``calibration`` chose (exact or exact
        DAG, the hash filter at its bits with its k or threshold, or the
        class-score first stage with its k; max-wins or DAG refine), as
        ``hsvm predict -C`` does: explicit arguments override the setting
        (``rule`` None: the setting's), ``exact=True`` forces exact prediction.

        Probabilities are calibrated on the voting path: asked for (``proba``
        here, or later through ``predict_proba`` / ``predict_block(proba=True)``),
        a DAG setting refines by votes over the same first stage and k, and a
        class-score setting gives the hash filter's probabilities when a hash
        model is given, else exact ones.  ``scores``: vote counts will be asked
        for (a DAG setting then refines by votes)."""
        _require_model(model)
        _require_calibration(calibration)
        calibration.check(model)
        args = dict(model=model, calibration=calibration, hash_model=hash_model, exact=exact, bits=bits,
                    filter_k=filter_k, epsilon=epsilon, rule=rule, first_stage=first_stage)
        common = dict(refine=refine, calibration=calibration, threads=threads, kernel=kernel, kernel_hash=kernel_hash)
        labels = _setting_arguments(**args, proba=proba, scores=scores)
        hashed = getattr(labels["hash_model"], "bits", None)
        if bits is None and labels["bits"] is not None and hashed is not None and labels["bits"] > hashed:
            # the bits are the calibration's, not an option's: its fault (exit 65)
            raise ModelMismatchError("%s: its setting hashes at %d bits, more than the %d of the hash model %s"
                                     % (calibration.path or "the calibration", labels["bits"], hashed,
                                        labels["hash_model"].path or "given"))
        predictor = cls(model, **labels, **common)
        if not proba:
            with_proba = _setting_arguments(**args, proba=True, scores=scores)
            if with_proba != labels:
                predictor._proba_arguments = (with_proba, common)
        return predictor

    @property
    def mode(self):
        """``"exact"`` or ``"hash"``."""
        return "exact" if self.filter is None else "hash"

    @property
    def phases(self):
        """The timing phases of a prediction run in this mode (``features``:
        making a codes-trained model's features, from raw samples or codes)."""
        phases = HASH_PHASES if self.filter is not None else DAG_PHASES if self.rule == "dag" else EXACT_PHASES
        if self.first_stage == "scores":
            phases = tuple(p for p in phases if p != "hash")        # the class scores hash nothing
        if self.model.trained_on_codes:
            phases = phases[:1] + ("features",) + phases[1:]
        return phases

    # ------------------------------------------------------------ plain calls

    def predict(self, X):
        """Predicted class labels (int64 [n]) of the raw samples X (a sparse
        matrix or 2-d array, not normalised; narrower than the model: the
        missing features are zeros; wider: refused, or the extra features
        dropped for an imported model; NaN and infinities refused)."""
        return self._in_blocks(X, "labels")

    def predict_proba(self, X):
        """Class probabilities [n, K] (columns in ``model.classes`` order) of
        X as :meth:`predict` takes it; needs a calibration."""
        return self._in_blocks(X, "proba", proba=True)

    def _in_blocks(self, X, what, **kw):
        # Rows a block at a time, as the command streams a file: the whole of
        # X in one block took its float32, normalised copy and the block's
        # work arrays at once (a 125 MB float64 array: ~126 MB more).  No
        # result depends on the blocks (each row's values, filter and refine
        # are its own).
        X = self._samples(X)
        n = X.shape[0]
        if n <= PREDICT_ROWS:
            return getattr(self._predict_block(X, **kw), what)
        return np.concatenate([getattr(self._predict_block(X[s:s + PREDICT_ROWS], **kw), what)
                               for s in range(0, n, PREDICT_ROWS)])

    def _samples(self, X):
        if self.features is not None:
            # raw samples of a kernel hash, at its width: checked as any samples
            return check_samples(X, self.features.n_input_features, reader="the kernel hash")
        width = X.shape[1] if len(getattr(X, "shape", ())) == 2 else None
        if self.model.trained_on_codes and width is not None and width != self.model.n_features:
            # Its features are exactly its code bits: rows of another width
            # are raw samples (zeros would pad narrower ones into garbage).
            raise ModelMismatchError(
                "%s was trained on %d-bit codes%s: give the kernel hash (Predictor(model, kernel_hash=h)) for raw "
                "samples, or the codes' features (expand_codes), not rows of %s features"
                % (self.model.path or "the model", self.model.n_features,
                   " of kernel hash %s" % short_digest(self.model.codes_source.get("kernel_hash_sha256"))
                   if self.model.codes_source is not None else "", width))
        return check_samples(X, self.model.n_features, extra=default_extra_features(self.model))

    # ------------------------------------------------------------ blocks and streams

    def predict_block(self, X, *, y=None, xcodes=None, proba=False, timings=None, features=None,
                      filter_votes=None):
        """A :class:`Prediction` of the raw samples X; ``xcodes``: their codes
        (from a codes file) instead of hashing them, X may then be None when
        nothing is refined; ``timings``: a :class:`~hsvm_cli.support.timing.Timings`
        to charge the phases to; ``features``: what turns X into the model's
        features (default: the kernel hash given to the predictor, if any);
        ``filter_votes``: the filter's (votes, margins) of these rows at this
        predictor's bits, computed before (as ``self.filter.hash_and_vote``
        gives them), so that ``calibrate`` can try many k on one filter pass.
        X is checked as :meth:`predict` checks it (a SampleError for NaN,
        infinities or values beyond float32)."""
        if X is not None:
            X = finite_samples(X)
        if proba:
            self._warn_of_proba_labels()
        return self._predict_block(X, y=y, xcodes=xcodes, proba=proba, timings=timings, features=features,
                                   filter_votes=filter_votes)

    def _predict_block(self, X, *, y=None, xcodes=None, proba=False, timings=None, features=None,
                       filter_votes=None):
        # predict_block for samples already checked (by predict, or read by
        # the svmlight reader, which refuses what the checks refuse)
        features = self.features if features is None else features
        if features is None and X is not None:
            X = fit_width(X, self.model.n_features, extra=default_extra_features(self.model))
        if y is not None and X is not None and len(y) != X.shape[0]:
            raise DataError("X has %d rows but y has %d labels" % (X.shape[0], len(y)))
        if X is not None and X.shape[0] == 0:
            self._finish_model_check()      # the weights are refused as when they were checked first
        if features is not None and X is not None:
            step = block_rows(self.model.n_features)
            parts = []
            for s in range(0, X.shape[0], step):
                with (timings or NullTimings()).phase("features"):
                    F = features(X[s:s + step])
                parts.append(self._predict_features(F, _rows(y, s, step), _rows(xcodes, s, step), proba, timings,
                                                    _rows_pair(filter_votes, s, step)))
            if len(parts) == 1:
                return parts[0]
            if not parts:
                return self._predict_features(np.zeros((0, self.model.n_features), np.float32), y, xcodes, proba,
                                              timings, filter_votes)
            return _concatenate(parts, y)
        return self._predict_features(X, y, xcodes, proba, timings, filter_votes)

    def _warn_of_proba_labels(self):
        """Once: the labels given with probabilities (predict_block,
        predict_file) come from the voting-path twin, not this setting."""
        twin = self._proba_predictor()
        if twin is not self and not self._proba_labels_warned:
            self._proba_labels_warned = True
            warn("probabilities come from %s (the calibrated voting path), not from this predictor's setting (%s): "
                 "the labels given with them can differ from predict()'s"
                 % ("exact prediction" if twin.filter is None else "the " + twin._setting_text(),
                    self._setting_text()))

    def _proba_predictor(self):
        """The predictor that gives this one's probabilities (itself, or for a
        calibration's DAG or class-score setting its voting-path twin), after
        the checks that it can: an OptionError before any output is written."""
        if self._proba_arguments is not None:
            if self._proba_twin is None:
                arguments, common = self._proba_arguments
                self._proba_twin = Predictor(self.model, **arguments, **common)
            return self._proba_twin._proba_predictor()
        if self.calibration is None:
            raise OptionError("--proba needs a calibration (-C; %s)" % CALIBRATE_HINT,
                              python="probabilities need a calibration (Predictor.from_calibration, or "
                              "calibration=)")
        if self.rule == "dag":
            raise OptionError("--proba needs every pair among the refined classes (pairwise coupling): "
                              "use the vote rule, not --dag or --refine dag",
                              python="probabilities need every pair among the refined classes (pairwise "
                              "coupling): use rule='vote', not 'dag'")
        if self.first_stage not in (None, "votes"):
            raise OptionError("--proba is calibrated for the vote first stage only",
                              python="probabilities are calibrated for the vote first stage only")
        if self.first_stage == "votes":
            self.calibration.alpha(self.filter.bits)     # an OptionError naming the bits calibrated
        return self

    def _predict_features(self, X, y, xcodes, proba, timings, filter_votes=None):
        if proba and self._proba_predictor() is not self:
            # a calibration's DAG or class-score setting: probabilities on its voting path
            return self._proba_twin._predict_features(X, y, xcodes, proba, timings)
        t = timings or NullTimings()
        if self.filter is None:
            return self._predict_exact(X, y, proba, t)
        n = X.shape[0] if X is not None else xcodes.shape[0]
        rows = max(64, self.MAX_CELLS // max(1, self.k * (self.k - 1) // 2 * self.model.bags))
        if self.refine and self.scorer is None and n > rows and self._refine_has_cells(X, proba):
            return _concatenate([self._predict_hashed(_rows(X, s, rows), _rows(y, s, rows), _rows(xcodes, s, rows),
                                                      proba, t, _rows_pair(filter_votes, s, rows))
                                 for s in range(0, n, rows)], y)
        return self._predict_hashed(X, y, xcodes, proba, t, filter_votes)

    def iter_predict(self, chunks, *, codes=None, proba=False, timings=None, features=None):
        """:class:`Prediction` per chunk of an iterable of
        :class:`~hsvm_cli.io.svmlight.SvmChunk` (as ``iter_svmlight`` yields
        them).  ``codes``: a codes file (:func:`hsvm_cli.models.codes.read_codes`)
        with one code per sample, used instead of hashing; ``chunks`` may then
        be None when nothing is refined."""
        if codes is not None:
            if self.filter is None and self.calibration is not None:
                # -H may well be given: the calibration chose a setting without the filter
                raise OptionError("--codes (a hash model's codes) are for the hash filter, which the calibration's "
                                  "chosen setting does not use: add -k or --bits to predict with the filter",
                                  python="codes (a hash model's) are for the hash filter, which the calibration's "
                                  "chosen setting does not use: give filter_k or bits to predict with the filter")
            if self.filter is None:
                raise OptionError("--codes (a hash model's codes) needs the hash filter (-H)",
                                  python="codes (a hash model's) need the hash filter (hash_model)")
            if self.first_stage == "scores":
                raise OptionError("--codes are for a hashed first stage (votes, hashed-scores), not scores",
                                  python="codes are for a hashed first stage (first_stage 'votes' or "
                                  "'hashed-scores'), not 'scores'")
            codes.check_compatible(self.hash_model, self.filter.bits)
            if chunks is None:
                if getattr(self.filter, "needs_samples", False):
                    raise OptionError("codes alone cannot be voted for a model on unnormalised features: each "
                                      "threshold depends on the sample's norm (give TEST too)")
                if self.refine:
                    raise OptionError("missing TEST (only --codes without a refine, --no-refine or -k 1, can do "
                                      "without it)")
                pairs = _codes_only_chunks(codes, 16384)
            else:
                pairs = _with_codes(codes, chunks)
        elif chunks is None:
            raise OptionError("missing TEST (only --codes without a refine, --no-refine or -k 1, can do without it)",
                              python="chunks may be None only with codes and refine=False")
        else:
            pairs = ((c, None) for c in chunks)
        try:
            for chunk, xcodes in pairs:
                if not (hasattr(chunk, "X") and hasattr(chunk, "y")):
                    raise TypeError("iter_predict takes chunks as iter_svmlight yields them (with .X and .y), "
                                    "not %s: predict() and predict_block() take arrays" % type(chunk).__name__)
                yield self._predict_block(chunk.X, y=chunk.y, xcodes=xcodes, proba=proba, timings=timings,
                                         features=features)
        except Exception:
            # A corrupt model is reported before a bad input, as when it was
            # checked before the input was read.
            self._finish_model_check()
            raise
        except BaseException:
            # closed early or interrupted: no result to vouch for, no thread left behind
            self.model.cancel_background_check()
            raise
        # An input without samples never used the weights: their check still counts.
        self._finish_model_check()

    def _refine_reads_most_of_W(self, chunk_rows):
        """Whether a refine of ``chunk_rows`` samples is expected to read half
        of W or more, so that checking all of W beside the parse pays: always
        for a model without row digests (whose 16 MiB blocks a few thousand
        scattered pairs all touch); with them, when the chunk's cells would
        reach half the pairs if spread evenly (1 - exp(-cells/P) >= 1/2)."""
        container = self.model.container
        if container is None or "W" not in container.row_digests:
            return True
        K = len(self.model.classes)
        # a DAG evaluates k - 1 of them, but which depends on the sample: all are checked
        pairs_per_sample = self.k * (self.k - 1) // 2
        return chunk_rows * pairs_per_sample >= math.log(2) * (K * (K - 1) // 2)

    def _finish_model_check(self):
        # Exact and DAG prediction check all of W (on a thread of its own
        # that predict_file starts); this waits for that check and raises what
        # it found.  Other settings check the rows they read as they read them.
        if self.filter is None and (self.dag is not None or self.scorer is not None):
            self.model.verify()
        else:
            # the refine checked what it read; the rest of W is not needed
            self.model.cancel_background_check()

    def predict_file(self, source, output="-", *, codes=None, scores=False, proba=False, timings=None,
                     zero_based=None, extra_features=None, chunk_rows=16384, shard=None, header=None,
                     progress=None, class_order="ascending"):
        """What ``hsvm predict`` does: predict the svmlight file ``source``
        (a path or ``-``; None with ``codes`` and no refine) chunk by chunk and
        write the labels (with ``scores`` the vote counts, with ``proba`` the
        probabilities, in svm-predict's layout) to ``output``.  Returns the
        :class:`~hsvm_cli.io.predictions.PredictionWriter`, which holds the
        running accuracy; ``timings`` (a Timings) receives the phases and, in
        hash mode, the mean number of refined classes and the setting.
        ``output`` may also be an open text file object.  ``shard``: predict
        only shard ``"i/N"`` (or a ``ByteRange``) of the plain file ``source``
        (io/shard.py);
        ``header``: whether ``--scores``/``--proba`` output starts with the
        ``labels ...`` line (default: unless ``shard`` is a shard after the
        first, so that the shards' outputs concatenated are the whole file's);
        ``zero_based``: how ``source`` numbers its features (default: as the
        model's training file did, :func:`~hsvm_cli.models.provenance.trained_zero_based`,
        or the kernel hash's, for raw samples through one fitted 0-based);
        ``extra_features``: features past the model's, "error" or "ignore"
        (default: ignored for an imported model, as svm-predict and
        liblinear-predict skip them, else an error);
        ``class_order``: the columns of ``scores``/``proba``, "ascending" or
        "model" (an imported LIBSVM/LIBLINEAR model's label order, as
        ``svm-predict -b 1`` writes them: :func:`~hsvm_cli.models.imported.column_order`);
        ``progress``: called as ``progress(rows done, None)`` after each chunk
        (the CLI's bar on a terminal; chunks are then made smaller for a model
        of many classes, :func:`progress_chunk_rows`)."""
        if progress is not None:
            chunk_rows = min(chunk_rows, progress_chunk_rows(self.model.n_classes))
        if extra_features is None:
            extra_features = default_extra_features(self.model)
        if zero_based is None:
            zero_based = trained_zero_based(self.model) or (
                self.features is not None and trained_zero_based(self.features.kernel_hash))
        t = timings if timings is not None else NullTimings()
        if scores and self.rule == "dag":
            raise OptionError("a decision DAG gives labels only, no vote counts: --scores needs max-wins voting")
        if scores and self.first_stage not in (None, "votes") and not self.refine:
            raise OptionError("--scores gives vote counts: with a class-score first stage they come from the refine")
        if proba:
            self._warn_of_proba_labels()    # and refuse before the header reaches the output
        if hasattr(output, "write") and isinstance(output, (io.RawIOBase, io.BufferedIOBase)):
            # the labels are text (a BytesIO had failed at the first write, a TypeError from inside)
            raise TypeError("predict_file writes text: give a path, '-' or a text file object (open(path, 'w'), "
                            "io.StringIO()), not %s" % type(output).__name__)
        refuse_overwriting_input(output, [source, self.model.path, getattr(codes, "path", None),
                                          getattr(self.hash_model, "path", None),
                                          getattr(getattr(self, "calibration", None), "path", None),
                                          getattr(getattr(self.features, "kernel_hash", None), "path", None)])
        writer = PredictionWriter(self.model.classes, scores=scores, proba=proba,
                                  column_order=column_order(self.model, class_order))
        chunks = features = None
        if shard is not None:
            shard = as_shard(shard)
        if header is None:
            header = shard is None or shard.is_first
        if self.model.trained_on_codes:
            # A model trained on codes: raw samples through its kernel hash, or
            # the codes themselves; never svmlight rows taken as its features.
            if self.model.codes_source is None:     # no kernel hash to make its features: refused
                check_model_codes(self.model, model_name=self.model.path or "the model")
            if codes is not None and codes.kernel_hash_sha256 is not None:
                check_model_codes(self.model, codes=codes, model_name=self.model.path or "the model")
                if source is not None:
                    raise OptionError("--codes holds the samples of a model trained on codes: no TEST")
                if shard is not None:
                    raise OptionError("--shard splits svmlight text: shard the raw samples with --kernel-hash")
                chunks = _code_chunks(codes, chunk_rows)
                features = PackedCodeFeatures(self.model.n_features)
                codes = None
            elif self.features is None:
                if codes is not None:       # codes of another kind of hash: say so
                    check_model_codes(self.model, codes=codes, model_name=self.model.path or "the model")
                raise OptionError(
                    "%s was trained on codes of kernel hash %s: give that kernel hash (--kernel-hash KERNEL.khm) "
                    "to hash raw samples, or their codes (--codes)"
                    % (self.model.path or "the model", short_digest(self.model.codes_source.get("kernel_hash_sha256"))))
            else:
                features = _Located(self.features, source, zero_based)
        elif codes is not None and codes.kernel_hash_sha256 is not None:
            check_model_codes(self.model, codes=codes, model_name=self.model.path or "the model")
        if chunks is None and source is not None:
            if (self.scorer is not None or self.dag is not None) if self.filter is None else \
                    (self.refine and self._refine_reads_most_of_W(chunk_rows)):
                # Check W on another thread while the input is parsed: exact
                # and DAG prediction wait for it before their first use of W;
                # a refine checks what it needs and has not been checked yet
                # itself (a small input never waits for all of W).  The
                # thread lives no longer than this call (_finish_model_check).
                self.model.verify_in_background()
            width = self.features.n_input_features if self.features is not None else self.model.n_features
            # Samples go through prepare() only, which rounds them to float32
            # first: the reader stores them so, and the chunks, ours alone,
            # may be prepared in place.  A kernel hash takes the raw float64.
            raw = self.features is not None
            chunks = timed_chunks(iter_svmlight(source, zero_based=zero_based, n_features=width,
                                                extra_features=extra_features, chunk_rows=chunk_rows, shard=shard,
                                                dtype=np.float64 if raw else np.float32,
                                                threads=self.threads, _csr_arrays=not raw), t)
            if isinstance(features, _Located):
                chunks = features.watch(chunks)
            if not raw:
                chunks = (_given(c) for c in chunks)
        blocks = self.iter_predict(chunks, codes=codes, proba=proba, timings=t, features=features)
        writer.write_all(blocks if progress is None else _reporting(blocks, progress), output, timings=t,
                         header=header)
        if self.filter is not None:
            if writer.total:
                t.counters["mean_refined_classes"] = round(t.counters.pop("refined_classes", 0) / writer.total, 3)
            t.counters.update({"bits": getattr(self.filter, "bits", None), "filter_k": self.k,
                               "refined": self.refine, "filter_threshold": self.epsilon,
                               "refine_rule": self.rule if self.refine else None})
            if self.first_stage != "votes":
                t.counters["first_stage"] = self.first_stage
        return writer

    def new_timings(self):
        """A :class:`~hsvm_cli.support.timing.Timings` with this mode's phases."""
        return Timings(self.phases)

    # ------------------------------------------------------------ steps

    def _threads(self):
        return resolve_threads(self.threads)

    def _predict_exact(self, X, y, proba, t):
        m = self.model
        Xn = prepare(m.normalize, X, timings=t, threads=self._threads())
        if self.dag is not None:
            with t.phase("dag"):
                best = self.dag.predict(Xn, threads=self._threads(), kernel=self.kernel)
            return Prediction(y, m.classes[best], None, None)
        if proba:
            votes, conf, P = exact_proba(m, self.calibration, Xn, scorer=self.scorer, timings=t)
            # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
            return Prediction(y, m.classes[np.argmax(P, axis=1)], votes, conf, P)
        votes, conf = self.scorer.votes(Xn, timings=t)
        with t.phase("vote"):
            labels = m.classes[winners(m, votes, conf)]
        return Prediction(y, labels, votes, conf)

    def _refine_has_cells(self, X, proba):
        """Whether the refine of X builds per-cell arrays (sparse samples, or
        decision values for probabilities), which sub-blocks of rows bound;
        the votes of dense samples and of a DAG need none."""
        return self.dag is None and (proba or X is None or stays_sparse(X))

    def _filter(self, X, xcodes, t, filter_votes=None):
        """The first stage's ranking of the block (votes and margins; zero
        votes and estimated class scores; or None and the exact
        :class:`~hsvm_cli.predict.class_scores.ClassScores`, which
        :meth:`_keep` ranks), and the normalised samples;
        ``filter_votes``: the votes and margins computed before."""
        Xn = prepare(self.model.normalize, X, timings=t, threads=self._threads()) if X is not None else None
        if filter_votes is not None:
            hv, hm = filter_votes
        elif self.first_stage == "scores":
            # kept as ClassScores: _keep ranks them without a float64 copy
            return Xn, None, self.filter.exact_scores(Xn, timings=t)
        elif self.first_stage != "votes":
            scores = (self.filter.scores(Xn, timings=t) if xcodes is None
                      else self.filter.scores_of_codes(xcodes, timings=t))
            return Xn, np.zeros(scores.shape, dtype=np.int32), scores
        elif xcodes is None:
            hv, hm = self.filter.hash_and_vote(Xn, timings=t)
        else:
            with t.phase("filter"):
                hv, hm = self.filter.votes(xcodes, Xn=Xn)
        return Xn, hv, hm

    def _ranks_only(self, xcodes, proba, filter_votes):
        """Whether the hash filter's votes serve only to rank the classes kept
        for the refine (no probabilities, no threshold, no votes given or
        returned): the filter then ranks as it votes (HashFilter.top_classes)."""
        return (isinstance(self.filter, HashFilter) and self.first_stage == "votes" and self.refine
                and xcodes is None and filter_votes is None and not proba and self.epsilon is None)

    def _keep(self, hv, hm, proba, t):
        """The classes to refine, best first: kept [n, k], which of them are in
        use (None: all), the first-stage probabilities when needed."""
        with t.phase("filter"):
            # hv None: exact class scores (ClassScores), every class with zero votes
            kept = (hm.top(self.k, threads=self._threads()) if hv is None
                    else top_classes(hv, hm, self.k, threads=self._threads()))
            p1 = first_stage_proba(hv, hm, self.alpha) if (proba or self.epsilon is not None) else None
            valid = None
            if self.epsilon is not None and self.refine:
                valid = np.take_along_axis(p1, kept, axis=1) > self.epsilon
                valid[:, 0] = True
                # Kept classes in use first (rank order otherwise unchanged), then
                # drop the columns no row uses: the refine cost follows the
                # per-sample counts, not the cap.
                order = np.argsort(~valid, axis=1, kind="stable")
                kept = np.take_along_axis(kept, order, axis=1)
                valid = np.take_along_axis(valid, order, axis=1)
                width = int(valid.sum(axis=1).max(initial=1))     # (no rows: an empty block)
                kept, valid = kept[:, :width], valid[:, :width]
        return kept, valid, p1

    def _predict_hashed(self, X, y, xcodes, proba, t, filter_votes=None):
        m = self.model
        if self.scorer is not None:
            # The filter keeps every class: its ranking decides nothing, so it is
            # not computed (the refine by votes over all classes is exact prediction).
            Xn = prepare(m.normalize, X, timings=t, threads=self._threads())
            with t.phase("refine"):
                if proba:
                    votes, conf, P = exact_proba(m, self.calibration, Xn, scorer=self.scorer)
                else:
                    (votes, conf), P = self.scorer.votes(Xn), None
                best = winners(m, votes, conf) if P is None else np.argmax(P, axis=1)
            t.count("refined_classes", int(votes.shape[0]) * m.n_classes)
            return Prediction(y, m.classes[best], votes, conf, P)
        if self.dag is not None and self.refine and self.k == m.n_classes and self.epsilon is None:
            # Likewise for a DAG refine: over every class, in class order, it is
            # --dag's DAG, with no hashing or ranking before it.
            Xn = prepare(m.normalize, X, timings=t, threads=self._threads())
            with t.phase("refine"):
                best = self.dag.predict(Xn, threads=self._threads(), kernel=self.kernel)
            t.count("refined_classes", int(Xn.shape[0]) * m.n_classes)
            return Prediction(y, m.classes[best], None, None)
        if self._ranks_only(xcodes, proba, filter_votes):
            Xn = prepare(m.normalize, X, timings=t, threads=self._threads())
            kept, valid, p1, hv, hm = self.filter.top_classes(Xn, self.k, timings=t), None, None, None, None
        else:
            kept = None
            Xn, hv, hm = self._filter(X, xcodes, t, filter_votes)
        if hv is None and kept is None and (proba or self.epsilon is not None or not self.refine):
            # every class's score is wanted (probabilities, or the prediction's
            # scores without a refine): formed once, ranked from there
            with t.phase("filter"):
                hv, hm = hm.as_ranking()
        if kept is None:
            kept, valid, p1 = self._keep(hv, hm, proba, t)
        if not self.refine:
            t.count("refined_classes", int(kept.shape[0]))
            best = kept[:, 0] if p1 is None else np.argmax(p1, axis=1)
            return Prediction(y, m.classes[best], hv, hm, p1)
        if self.dag is not None:
            with t.phase("refine"):
                lists = candidate_lists(kept, order="class", valid=valid)
                best = self.dag.predict(Xn, candidates=lists, threads=self._threads(), kernel=self.kernel)
            t.count("refined_classes", int(kept.size if valid is None else valid.sum()))
            return Prediction(y, m.classes[best], None, None)
        P = None
        with t.phase("refine"):
            dense = None
            # With a threshold the kept width is the block's widest row; the
            # choice goes by the cap instead, so that no block of a file is
            # scored another way than the others (decision values from all
            # classifiers' products and from the gathered cells may differ in
            # their last bits, and probabilities then in their printed digits).
            by_scores = dense_is_cheaper(kept.shape[1] if valid is None else min(self.k, m.n_classes), m)
            if by_scores and self._all_pairs is None:
                self._all_pairs = ExactScorer(m, threads=self.threads, kernel=self.kernel)
            if by_scores and not proba:
                # Scoring every classifier costs less than these cells: the
                # votes straight from the scores, no gathered cells.
                votes, conf, nvalid = self._all_pairs.kept_votes(Xn, kept, lookup=self.lookup, valid=valid)
            elif not proba and not sp.issparse(Xn):
                among = refine_votes(m, Xn, kept, lookup=self.lookup, valid=valid, threads=self._threads(),
                                     by_position=True)
                best = kept_winners(m, among)
                t.count("refined_classes", int(among.nvalid.sum()))
                return Prediction(y, m.classes[best], None, None, kept=among)
            else:
                if by_scores:
                    dense = self._all_pairs.decision(Xn)
                refined = refine_decisions(m, Xn, kept, lookup=self.lookup, valid=valid,
                                           threads=self._threads(), decisions=dense)
                votes, conf = refined.votes(m.n_classes)
                nvalid = refined.nvalid
            # Only kept classes compete for the final label.
            mask = np.zeros(votes.shape, dtype=bool)
            np.put_along_axis(mask, kept, True if valid is None else valid, axis=1)
            votes = np.where(mask, votes, -1)
            best = winners(m, votes, conf)
            votes = np.maximum(votes, 0)
        if proba:
            # the second stage and the combination (the first stage's
            # probabilities are part of the filter, which keeps by them)
            with t.phase("proba"):
                p2 = second_stage_proba(self.calibration, refined, self.lookup,
                                        sharpness=self.second_stage_sharpness)
                S_pad = np.where(np.arange(refined.S.shape[1])[None, :] < nvalid[:, None], refined.S, -1)
                P = combine(p1, S_pad, p2, self.kept_mass_shift)
        t.count("refined_classes", int(nvalid.sum()))
        if P is not None:
            # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
            best = np.argmax(P, axis=1)
        return Prediction(y, m.classes[best], votes, conf, P)


class _Located:
    """Kernel hash features that name FILE:LINE for a refused sample (a
    negative feature for the chi2 kernel): counts the rows as they pass,
    from the first line of the first chunk (a shard starts mid-file)."""

    def __init__(self, features, source, zero_based):
        self.features, self.source, self.zero_based = features, source, zero_based
        self.row = 0
        self.first_line = None

    def watch(self, chunks):
        for chunk in chunks:
            if self.first_line is None:
                self.first_line = chunk.first_line
            yield chunk

    def __call__(self, X):
        from ..hashing.krsh import NegativeFeatureError, SubspaceOverflowError
        from ..train.kernel_hash import negative_feature_error, overflow_error
        try:
            return self.features(X)
        except NegativeFeatureError as exc:
            raise negative_feature_error(exc, self.source, row_offset=self.row, zero_based=self.zero_based,
                                         start_line=self.first_line or 1) from None
        except SubspaceOverflowError as exc:
            raise overflow_error(exc, self.source, row_offset=self.row, start_line=self.first_line or 1) from None
        finally:
            self.row += X.shape[0]


def _given(chunk):
    give_to_prepare(chunk.X)
    return chunk


def progress_chunk_rows(n_classes):
    """Rows of a chunk when a progress bar follows the chunks: the bar moves
    once a chunk is predicted, and a row's cost grows as K^2 (its pairs; the
    exact probabilities' coupling), so at K = 2,000 one 16,384-row chunk of
    ``--exact --proba`` had left the bar still for 12 minutes.  2^28 / K^2
    rows (at least 256): K = 242 keeps 4,583, K = 1,000 268, K = 2,000 256.
    The predictions do not depend on the chunks."""
    return max(256, (1 << 28) // max(1, int(n_classes)) ** 2)


def _reporting(blocks, progress):
    """The blocks, with ``progress(rows so far, None)`` after each."""
    done = 0
    for block in blocks:
        done += len(block.labels)
        progress(done, None)
        yield block


def _rows(a, start, count):
    return None if a is None else a[start:start + count]


def _rows_pair(pair, start, count):
    return None if pair is None else (pair[0][start:start + count], pair[1][start:start + count])


def _concatenate(parts, y):
    def cat(name):
        return None if getattr(parts[0], name) is None else np.concatenate([getattr(p, name) for p in parts])
    return Prediction(y, cat("labels"), cat("votes"), cat("confidence"), cat("proba"))


# Rows of each chunk whose fingerprints are compared with a codes file's:
# codes of other samples differ at nearly every row, and a few rows cost
# nothing where all of them would cost a pass over every value.
FINGERPRINTED_ROWS = 16


def _with_codes(codes, chunks):
    """Pair each chunk of the raw samples with its rows of a codes file."""
    from ..models.codes import sample_fingerprints
    start = 0
    total = codes.codes.shape[0]
    for chunk in chunks:
        n = chunk.X.shape[0]
        if start + n > total:
            raise DataError("%s has fewer codes (%d) than the input has samples" % (codes.path, total))
        # hash-data stores each sample's label beside its code: a label that
        # differs means codes of another file, which would filter with the
        # wrong samples' codes and refine with these.
        differ = np.flatnonzero(codes.labels[start:start + n] != chunk.y)
        if differ.size:
            r = int(differ[0])
            raise DataError("sample %d of the input has label %d where its code in %s has label %d: the codes "
                            "were made from another file, or from more of it than this input (a shard's codes "
                            "come from hash-data --shard)" % (start + r + 1, int(chunk.y[r]), codes.path,
                                                              int(codes.labels[start + r])))
        if codes.fingerprints is not None and n:
            rows = np.unique(np.linspace(0, n - 1, min(n, FINGERPRINTED_ROWS)).astype(np.int64))
            mine = np.concatenate([sample_fingerprints(chunk.X[r:r + 1]) for r in rows.tolist()])
            differ = np.flatnonzero(mine != codes.fingerprints[start + rows])
            if differ.size:
                raise DataError("sample %d of the input is not the sample whose code is at that place in %s: the "
                                "codes were made from other samples (another file, this one reordered, or another "
                                "part of it; a shard's codes come from hash-data --shard)"
                                % (start + int(rows[differ[0]]) + 1, codes.path))
        yield chunk, codes.codes[start:start + n]
        start += n
    if start != total:
        raise DataError("%s has %d codes but the input has %d samples" % (codes.path, total, start))


def _codes_only_chunks(codes, chunk_rows):
    for s in range(0, codes.codes.shape[0], chunk_rows):
        yield SvmChunk(X=None, y=codes.labels[s:s + chunk_rows], first_line=s + 1), codes.codes[s:s + chunk_rows]


def _code_chunks(codes, chunk_rows):
    """A codes file's rows as chunks whose X is the packed codes."""
    for s in range(0, codes.codes.shape[0], chunk_rows):
        yield SvmChunk(X=codes.codes[s:s + chunk_rows], y=codes.labels[s:s + chunk_rows], first_line=s + 1)


def _setting_arguments(*, model, calibration, hash_model, exact, bits, filter_k, epsilon, rule, first_stage, proba,
                       scores):
    """The Predictor arguments a calibration's setting gives, with the
    explicit ones kept (see Predictor.from_calibration)."""
    chosen = calibration.setting
    setting_rule = None
    if chosen is not None and not exact:
        if chosen.mode == "hash" and first_stage in (None, "votes", "hashed-scores"):
            if hash_model is None:
                raise OptionError("the calibration chose hash filtering: give the hash model with -H")
            bits = chosen.bits if bits is None else bits
            if filter_k is None and epsilon is None:
                filter_k, epsilon = chosen.k, chosen.epsilon
            setting_rule = chosen.rule
        elif chosen.mode == "scores" and first_stage in (None, "scores") and bits is None and epsilon is None:
            if proba:
                # class scores have no calibrated probabilities: the hash
                # filter's at the longest code calibrated when a hash model
                # is given and calibrate fitted its first stage, else exact ones
                fitted = sorted(calibration.alphas or {})
                if hash_model is not None and fitted:
                    bits = fitted[-1]
                    two = calibration.two_stage
                    if filter_k is None and two and two.get("bits") == bits and two.get("epsilon") is None:
                        # the k its two-stage parameters were fitted at (the
                        # default k of the hsvm that calibrated it)
                        filter_k = int(two["k"])
                else:
                    exact = filter_k is None
            else:
                first_stage = "scores"
                filter_k = chosen.k if filter_k is None else filter_k
                setting_rule = chosen.rule
        elif chosen.mode == "exact" and bits is None and filter_k is None and epsilon is None \
                and first_stage is None:
            exact = True
            setting_rule = chosen.rule
    if rule is None:
        rule = "vote" if proba or scores or setting_rule is None else setting_rule
    return dict(hash_model=None if exact else hash_model, bits=bits, filter_k=filter_k, epsilon=epsilon, rule=rule,
                first_stage=None if exact else first_stage)
