"""One predictor for every way hsvm predicts: exact one-vs-one voting, the pure
hash classifier, and the two-stage hash filter + exact refine (Litayem, Joly &
Boujemaa's filter-and-refine; Milgram, Cheriet & Sabourin's two-stage
classifier), with calibrated probabilities when a calibration is given."""
import math
from dataclasses import dataclass

import numpy as np

from ..errors import DataError, OptionError
from ..io.predictions import PredictionWriter
from ..io.svmlight import SvmChunk, iter_svmlight
from ..models.pairs import PairLookup
from ..preprocess import prepare
from ..proba.estimators import combine
from ..proba.stages import exact_proba, first_stage_proba, second_stage_proba
from ..support.timing import NullTimings, Timings, timed_chunks
from .exact import ExactScorer
from .raw_filter import make_filter
from .ranking import top_classes
from .refine import refine_decisions
from .ties import winners

EXACT_PHASES = ("parse", "normalise", "score", "vote", "write")
HASH_PHASES = ("parse", "normalise", "hash", "filter", "refine", "write")


@dataclass
class Prediction:
    """The prediction of a block of samples.

    ``labels`` int64 [n]: the predicted class labels; ``votes`` int32 [n, K]:
    the final vote counts (exact, or exact among the refined classes; the
    filter's with no refine); ``confidence`` float64 [n, K]: the tie-break
    term matching ``votes``; ``proba`` float64 [n, K] when probabilities were
    asked for; ``y_true``: the labels read from the input, if any."""

    y_true: np.ndarray
    labels: np.ndarray
    votes: np.ndarray
    confidence: np.ndarray
    proba: np.ndarray = None


def default_filter_k(n_classes):
    """Classes kept by the filter when nobody says: a tenth, at least 2."""
    return min(n_classes, max(2, math.ceil(0.1 * n_classes)))


class Predictor:
    """Predicts with an exact model alone or with its hash model.

    ``hash_model`` None: exact prediction (every pair, every bag).  Otherwise
    the filter hashes the samples at ``bits`` (default: all the hash model's
    bits), keeps ``filter_k`` classes (default :func:`default_filter_k`;
    1 is the pure hash classifier, K is exact prediction) and, unless
    ``refine`` is False, the exact classifiers among them decide.
    ``epsilon``: keep, per sample, the classes whose calibrated first-stage
    probability exceeds it (at least one, at most ``filter_k``, default all).
    ``calibration`` (from :func:`hsvm_cli.tune.calibrate`) enables ``epsilon``
    and probabilities; :meth:`from_calibration` also takes its chosen setting.
    ``threads``: worker threads of the hashed path (default: the CPUs this
    process may use); ``kernel``: force a native code path (see
    :mod:`hsvm_cli.support.kernels`)."""

    # The refine step's per-cell arrays take ~40 bytes a cell: this many cells
    # per sub-block keeps them near 80 MB whatever the chunk size.
    MAX_CELLS = 1 << 21

    def __init__(self, model, hash_model=None, *, bits=None, filter_k=None, refine=True, epsilon=None,
                 calibration=None, threads=None, kernel=None):
        self.model = model
        self.hash_model = hash_model
        self.calibration = calibration
        self.threads = threads
        if calibration is not None:
            calibration.check(model, hash_model)
        if hash_model is None:
            for flag, value in (("--bits", bits), ("--filter-k", filter_k), ("--filter-threshold", epsilon)):
                if value is not None:
                    raise OptionError("%s needs a hash model (-H) and no --exact" % flag)
            if not refine:
                raise OptionError("--no-refine needs a hash model (-H) and no --exact")
            self.filter = None
            self.scorer = ExactScorer(model)
            return
        hash_model.check_model(model)
        K = model.n_classes
        if epsilon is not None:
            if calibration is None:
                raise OptionError("--filter-threshold needs a calibration (-C)")
            if not 0.0 <= float(epsilon) < 1.0:
                raise OptionError("--filter-threshold must be in [0, 1)")
        if filter_k is None:
            filter_k = K if epsilon is not None else default_filter_k(K)
        if int(filter_k) < 1:
            raise OptionError("--filter-k must be at least 1")
        # Models on unnormalised features get per-sample thresholds (raw_filter.py).
        self.filter = make_filter(model, hash_model, bits=bits, threads=threads, kernel=kernel)
        self.k = min(int(filter_k), K)
        self.refine = bool(refine) and self.k > 1
        self.epsilon = None if epsilon is None else float(epsilon)
        self.alpha = calibration.alpha(self.filter.bits) if calibration is not None else None
        self.lookup = PairLookup(model.pair_a, model.pair_b, K)
        # When the filter keeps every class, refining is exact prediction.
        self.scorer = ExactScorer(model) if self.refine and self.k == K and self.epsilon is None else None

    @classmethod
    def from_calibration(cls, model, calibration, hash_model=None, *, exact=False, bits=None, filter_k=None,
                         epsilon=None, refine=True, threads=None, kernel=None):
        """A predictor with the setting ``calibration`` chose (exact, or the hash
        filter at its bits with its k or threshold), as ``hsvm predict -C``
        does: explicit arguments override the setting, ``exact=True`` forces
        exact prediction."""
        calibration.check(model)
        chosen = calibration.setting
        if chosen is not None and chosen.mode == "hash" and not exact:
            if hash_model is None:
                raise OptionError("the calibration chose hash filtering: give the hash model with -H")
            bits = chosen.bits if bits is None else bits
            if filter_k is None and epsilon is None:
                filter_k, epsilon = chosen.k, chosen.epsilon
        elif chosen is not None and chosen.mode == "exact" and bits is None and filter_k is None and epsilon is None:
            exact = True
        return cls(model, None if exact else hash_model, bits=bits, filter_k=filter_k, refine=refine,
                   epsilon=epsilon, calibration=calibration, threads=threads, kernel=kernel)

    @property
    def mode(self):
        """``"exact"`` or ``"hash"``."""
        return "exact" if self.filter is None else "hash"

    @property
    def phases(self):
        """The timing phases of a prediction run in this mode."""
        return EXACT_PHASES if self.filter is None else HASH_PHASES

    # ------------------------------------------------------------ plain calls

    def predict(self, X):
        """Predicted class labels (int64 [n]) of the raw samples X (a CSR matrix
        or dense array of width at most the model's, not normalised)."""
        return self.predict_block(X).labels

    def predict_proba(self, X):
        """Class probabilities [n, K] (columns in ``model.classes`` order);
        needs a calibration."""
        return self.predict_block(X, proba=True).proba

    # ------------------------------------------------------------ blocks and streams

    def predict_block(self, X, *, y=None, xcodes=None, proba=False, timings=None, filter_votes=None):
        """A :class:`Prediction` of the raw samples X; ``xcodes``: their codes
        (from a codes file) instead of hashing them, X may then be None when
        nothing is refined; ``timings``: a :class:`~hsvm_cli.support.timing.Timings`
        to charge the phases to; ``filter_votes``: the filter's (votes,
        margins) of these rows at this predictor's bits, computed before (as
        ``self.filter.hash_and_vote`` gives them), so that ``calibrate`` can try
        many k on one filter pass."""
        if proba and self.calibration is None:
            raise OptionError("--proba needs a calibration (-C)")
        t = timings or NullTimings()
        if self.filter is None:
            return self._predict_exact(X, y, proba, t)
        n = X.shape[0] if X is not None else xcodes.shape[0]
        rows = max(64, self.MAX_CELLS // max(1, self.k * (self.k - 1) // 2 * self.model.bags))
        if self.refine and self.scorer is None and n > rows:
            return _concatenate([self._predict_hashed(_rows(X, s, rows), _rows(y, s, rows), _rows(xcodes, s, rows),
                                                      proba, t, _rows_pair(filter_votes, s, rows))
                                 for s in range(0, n, rows)], y)
        return self._predict_hashed(X, y, xcodes, proba, t, filter_votes)

    def iter_predict(self, chunks, *, codes=None, proba=False, timings=None):
        """:class:`Prediction` per chunk of an iterable of
        :class:`~hsvm_cli.io.svmlight.SvmChunk` (as ``iter_svmlight`` yields
        them).  ``codes``: a codes file (:func:`hsvm_cli.models.codes.read_codes`)
        with one code per sample, used instead of hashing; ``chunks`` may then
        be None when nothing is refined."""
        if codes is not None:
            if self.filter is None:
                raise OptionError("--codes needs a hash model (-H) and no --exact")
            codes.check_compatible(self.hash_model, self.filter.bits)
            if chunks is None:
                if getattr(self.filter, "needs_samples", False):
                    raise OptionError("codes alone cannot be voted for a model on unnormalised features: each "
                                      "threshold depends on the sample's norm (give TEST too)")
                if self.refine:
                    raise OptionError("missing TEST (only --codes with --no-refine can do without it)")
                pairs = _codes_only_chunks(codes, 16384)
            else:
                pairs = _with_codes(codes, chunks)
        elif chunks is None:
            raise OptionError("missing TEST (only --codes with --no-refine can do without it)")
        else:
            pairs = ((c, None) for c in chunks)
        for chunk, xcodes in pairs:
            yield self.predict_block(chunk.X, y=chunk.y, xcodes=xcodes, proba=proba, timings=timings)

    def predict_file(self, source, output="-", *, codes=None, scores=False, proba=False, timings=None,
                     zero_based=False, extra_features="error", chunk_rows=16384):
        """What ``hsvm predict`` does: predict the svmlight file ``source``
        (a path or ``-``; None with ``codes`` and no refine) chunk by chunk and
        write the labels (with ``scores`` the vote counts, with ``proba`` the
        probabilities, in svm-predict's layout) to ``output``.  Returns the
        :class:`~hsvm_cli.io.predictions.PredictionWriter`, which holds the
        running accuracy; ``timings`` (a Timings) receives the phases and, in
        hash mode, the mean number of refined classes and the setting."""
        t = timings if timings is not None else NullTimings()
        writer = PredictionWriter(self.model.classes, scores=scores, proba=proba)
        chunks = None
        if source is not None:
            chunks = timed_chunks(iter_svmlight(source, zero_based=zero_based, n_features=self.model.n_features,
                                                extra_features=extra_features, chunk_rows=chunk_rows), t)
        writer.write_all(self.iter_predict(chunks, codes=codes, proba=proba, timings=t), output, timings=t)
        if self.filter is not None:
            if writer.total:
                t.counters["mean_refined_classes"] = round(t.counters.pop("refined_classes", 0) / writer.total, 3)
            t.counters.update({"bits": self.filter.bits, "filter_k": self.k, "refined": self.refine,
                               "filter_threshold": self.epsilon})
        return writer

    def new_timings(self):
        """A :class:`~hsvm_cli.support.timing.Timings` with this mode's phases."""
        return Timings(self.phases)

    # ------------------------------------------------------------ steps

    def _predict_exact(self, X, y, proba, t):
        m = self.model
        Xn = prepare(m.normalize, X, timings=t)
        if proba:
            votes, conf, P = exact_proba(m, self.calibration, Xn, scorer=self.scorer, timings=t)
            # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
            return Prediction(y, m.classes[np.argmax(P, axis=1)], votes, conf, P)
        votes, conf = self.scorer.votes(Xn, timings=t)
        with t.phase("vote"):
            labels = m.classes[winners(m, votes, conf)]
        return Prediction(y, labels, votes, conf)

    def _filter(self, X, xcodes, t, filter_votes=None):
        """Hash votes and margins of the block, and the normalised samples."""
        Xn = prepare(self.model.normalize, X, timings=t) if X is not None else None
        if filter_votes is not None:
            hv, hm = filter_votes
        elif xcodes is None:
            hv, hm = self.filter.hash_and_vote(Xn, timings=t)
        else:
            with t.phase("filter"):
                hv, hm = self.filter.votes(xcodes, Xn=Xn)
        return Xn, hv, hm

    def _keep(self, hv, hm, proba, t):
        """The classes to refine, best first: kept [n, k], which of them are in
        use (None: all), the first-stage probabilities when needed."""
        with t.phase("filter"):
            kept = top_classes(hv, hm, self.k)
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
                width = int(valid.sum(axis=1).max())
                kept, valid = kept[:, :width], valid[:, :width]
        return kept, valid, p1

    def _predict_hashed(self, X, y, xcodes, proba, t, filter_votes=None):
        m = self.model
        Xn, hv, hm = self._filter(X, xcodes, t, filter_votes)
        kept, valid, p1 = self._keep(hv, hm, proba, t)
        if not self.refine:
            t.count("refined_classes", int(kept.shape[0]))
            best = kept[:, 0] if p1 is None else np.argmax(p1, axis=1)
            return Prediction(y, m.classes[best], hv, hm, p1)
        P = None
        with t.phase("refine"):
            if self.scorer is not None:
                if proba:
                    votes, conf, P = exact_proba(m, self.calibration, Xn, scorer=self.scorer)
                else:
                    votes, conf = self.scorer.votes(Xn)
                nvalid = np.full(votes.shape[0], self.k)
            else:
                refined = refine_decisions(m, Xn, kept, lookup=self.lookup, valid=valid, threads=self.threads or 1)
                votes, conf = refined.votes(m.n_classes)
                nvalid = refined.nvalid
                # Only kept classes compete for the final label.
                mask = np.zeros(votes.shape, dtype=bool)
                np.put_along_axis(mask, kept, True if valid is None else valid, axis=1)
                votes = np.where(mask, votes, -1)
                if proba:
                    p2 = second_stage_proba(self.calibration, refined, self.lookup)
                    S_pad = np.where(np.arange(refined.S.shape[1])[None, :] < nvalid[:, None], refined.S, -1)
                    P = combine(p1, S_pad, p2)
            best = winners(m, votes, conf)
            votes = np.maximum(votes, 0)
        t.count("refined_classes", int(nvalid.sum()))
        if P is not None:
            # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
            best = np.argmax(P, axis=1)
        return Prediction(y, m.classes[best], votes, conf, P)


def _rows(a, start, count):
    return None if a is None else a[start:start + count]


def _rows_pair(pair, start, count):
    return None if pair is None else (pair[0][start:start + count], pair[1][start:start + count])


def _concatenate(parts, y):
    def cat(name):
        return None if getattr(parts[0], name) is None else np.concatenate([getattr(p, name) for p in parts])
    return Prediction(y, cat("labels"), cat("votes"), cat("confidence"), cat("proba"))


def _with_codes(codes, chunks):
    """Pair each chunk of the raw samples with its rows of a codes file."""
    start = 0
    total = codes.codes.shape[0]
    for chunk in chunks:
        n = chunk.X.shape[0]
        if start + n > total:
            raise DataError("%s has fewer codes (%d) than the input has samples" % (codes.path, total))
        yield chunk, codes.codes[start:start + n]
        start += n
    if start != total:
        raise DataError("%s has %d codes but the input has %d samples" % (codes.path, total, start))


def _codes_only_chunks(codes, chunk_rows):
    for s in range(0, codes.codes.shape[0], chunk_rows):
        yield SvmChunk(X=None, y=codes.labels[s:s + chunk_rows], first_line=s + 1), codes.codes[s:s + chunk_rows]
