"""One-vs-rest prediction: exact argmax scoring, and a hash filter that ranks
the classes by their estimated margins and scores only the top k exactly.

Exact rule (LIBLINEAR's ``predict_values``): the class with the largest score
s_c(x) = w_c·x + b_c; among equal scores the first in the source's label order
(``OvrModel.tie_order``, :func:`hsvm_cli.predict.ties.first_max`).

Hash filter.  Class normals and samples are hashed with the Gaussian sign
random projection of hsvm's one-vs-one filter (Charikar 2002, after Goemans &
Williamson: a bit of F(x) and F(w) differs with probability angle(x, w)/π), so
with D' bits the Hamming distance d_c estimates the angle as π d_c/D'.  The
score is not scale invariant: with u = x/‖x‖ (x as the model sees it, after
its normalisation),

    s_c(x) = ‖x‖ ‖w_c‖ cos(angle(u, w_c)) + b_c,

and ‖x‖ is known exactly at prediction time.  Two estimates rank the classes:

    margin (default):  (ρ_c − d_c)/D' = θ_c(‖x‖) − d_c/D',
                       θ_c(s) = arccos(−b_c/(s ‖w_c‖))/π   (clamped to [0, 1]),

the normalised hash margin of the one-vs-one filter with the threshold angle of
the decision s_c(x) > 0 taken at the sample's norm: how far, in angle, each
class's own decision is from 0; and

    score:             ŝ_c = ‖x‖ ‖w_c‖ cos(π d_c/D') + b_c.

Both have the sign of the estimated s_c.  They differ in their noise: d_c/D'
estimates the angle with a standard deviation sqrt(p(1−p)/D') (p = angle/π)
that is about the same for every class, while near the boundary ŝ_c moves by
π ‖x‖ ‖w_c‖ sin(π θ_c) per unit of d_c/D', so classes with a large ‖w_c‖ get
noisier score estimates and push the right class out of the top k; the margin
is the default (measured in bench/bench_ovr.py).  The k best classes by the
estimate are then scored exactly and the exact rule applied among them, so a
label equals exact one-vs-rest prediction iff the exact winner was kept; k = K
is exact prediction.  Projecting a sample costs D'·nnz(x) against K·nnz(x) for
exact scoring, so the filter only pays where K is well above D'."""
import numpy as np

from ..errors import ModelMismatchError, OptionError
from ..hashing.hamming import BuildsPlansOnUse, HammingCodes
from ..hashing.projection import SignProjector
from ..io.predictions import PredictionWriter
from ..io.shard import as_shard
from ..io.svmlight import iter_svmlight
from ..models.imported import column_order
from ..models.ovr import OvrHashModel
from ..models.provenance import trained_zero_based
from ..preprocess import prepare, row_norms
from ..support.arrays import is_int
from ..support.timing import NullTimings, Timings, timed_chunks
from .logistic import logistic_proba, logistic_solver
from .predictor import Prediction, _reporting, default_filter_k
from .products import products
from .ranking import top_classes
from .raw_filter import sample_norms
from .refine import group_by_key, sddmm
from .samples import check_samples, finite_samples, fit_width
from .ties import first_max

__all__ = ["OvrPredictor", "ESTIMATORS", "ovr_scores", "estimated_scores", "estimated_margins"]

ESTIMATORS = ("margin", "score")
EXACT_PHASES = ("parse", "normalise", "score", "vote", "write")
HASH_PHASES = ("parse", "normalise", "hash", "filter", "refine", "write")

# Rows of samples scored at once: bounds the [rows x K] float32 score block.
_BLOCK_BYTES = 64 << 20


def ovr_scores(W, b, Xn):
    """Scores [n, K] float32, W[c]·x + b[c], of prepared (normalised, float32)
    samples Xn (CSR or dense, d columns)."""
    s = products(Xn, np.asarray(W, dtype=np.float32))
    s += np.asarray(b, dtype=np.float32)
    return s


def _cos_table(bits):
    # cos(π d / D') for every possible distance d = 0..D'.
    return np.cos(np.pi * np.arange(bits + 1, dtype=np.float64) / bits)


def estimated_scores(dist, bits, x_norms, w_norms, b):
    """ŝ[i, c] = ‖x_i‖ ‖w_c‖ cos(π dist[i, c]/bits) + b_c (float64 [n, K])."""
    cos = _cos_table(bits)[dist]
    return (np.asarray(x_norms, dtype=np.float64)[:, None] * np.asarray(w_norms, dtype=np.float64)[None, :]) * cos \
        + np.asarray(b, dtype=np.float64)[None, :]


def estimated_margins(dist, bits, x_norms, w_norms, b):
    """(ρ − d)/D' = θ_c(‖x_i‖) − dist[i, c]/bits (float64 [n, K]) with
    θ_c(s) = arccos(clip(−b_c/(s ‖w_c‖), −1, 1))/π."""
    s = np.asarray(x_norms, dtype=np.float64)[:, None] * np.asarray(w_norms, dtype=np.float64)[None, :]
    b = np.asarray(b, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(s > 0, -b / s, np.where(b > 0, -1.0, 1.0))
    theta = np.arccos(np.clip(c, -1.0, 1.0)) / np.pi
    return theta - np.asarray(dist, dtype=np.float64) / bits


class OvrPredictor(BuildsPlansOnUse):
    """Prediction with an :class:`~hsvm_cli.models.ovr.OvrModel`: exact
    scoring of every class (``hash_model`` None), or the hash filter
    (an :class:`~hsvm_cli.models.ovr.OvrHashModel`) at ``bits`` keeping
    ``filter_k`` classes (default: 10% of K, at least 5) ranked by
    ``estimator`` (``margin`` or ``score``, module docstring) and, unless
    ``refine`` is False, scored exactly.  The interface of
    :class:`~hsvm_cli.predict.predictor.Predictor` for what one-vs-rest
    models support (no codes files; probabilities only for LIBLINEAR's
    logistic regression, exact, :mod:`~hsvm_cli.predict.logistic`)."""

    _native_caches = ("_codes",)

    def __repr__(self):
        if self.hash_model is None:
            return "OvrPredictor(exact; %r)" % (self.model,)
        return "OvrPredictor(hash filter at %d bits, k=%d, %s, %s; %r)" % (
            self.bits, self.k, self.estimator, "refined" if self.refine else "not refined", self.model)

    def __init__(self, model, hash_model=None, *, bits=None, filter_k=None, refine=True, estimator="margin",
                 threads=None, kernel=None):
        from ..models.ovr import OvrModel
        if not isinstance(model, OvrModel):
            raise TypeError("OvrPredictor takes a one-vs-rest model (OvrModel), not %s: use Predictor"
                            % type(model).__name__)
        self.model = model
        self.hash_model = hash_model
        self.threads = threads
        self.kernel = kernel
        model.verify()
        self.W = np.asarray(model.W, dtype=np.float32)
        self.b = np.asarray(model.b, dtype=np.float32)
        K = model.n_classes
        if hash_model is None:
            for flag, value in (("--bits", bits), ("--filter-k", filter_k)):
                if value is not None:
                    raise OptionError("%s needs a hash model (-H) and no --exact" % flag)
            if not refine:
                raise OptionError("--no-refine needs a hash model (-H) and no --exact")
            return
        if not isinstance(hash_model, OvrHashModel):
            raise ModelMismatchError("%s is a one-vs-one hash model; a one-vs-rest model needs its own "
                                     "(hsvm hash-model -m MODEL)" % (hash_model.path or "the hash model"))
        if estimator not in ESTIMATORS:
            raise OptionError("estimator must be one of %s, not %r" % (", ".join(ESTIMATORS), estimator))
        hash_model.check_model(model)
        if filter_k is not None and not is_int(filter_k):
            raise OptionError("--filter-k must be a whole number, not %r" % (filter_k,))
        k = default_filter_k(K) if filter_k is None else int(filter_k)
        if k < 1:
            raise OptionError("--filter-k must be at least 1")
        self.bits = hash_model.check_bits(bits)
        self.k = min(k, K)
        self.refine = bool(refine) and self.k > 1
        self.estimator = estimator
        self._estimate = estimated_scores if estimator == "score" else estimated_margins
        self._projector = SignProjector(hash_model.projection(self.bits))
        self._codes = None                      # packed on first use
        self.w_norms = row_norms(self.W)

    @property
    def mode(self):
        return "exact" if self.hash_model is None else "hash"

    @property
    def phases(self):
        return EXACT_PHASES if self.hash_model is None else HASH_PHASES

    def new_timings(self):
        """A :class:`~hsvm_cli.support.timing.Timings` with this mode's phases."""
        return Timings(self.phases)

    def predict(self, X):
        """Labels int64 [n] of the raw samples X (as
        :meth:`hsvm_cli.predict.predictor.Predictor.predict` takes them)."""
        return self._predict_block(check_samples(X, self.model.n_features, extra="ignore")).labels

    def predict_proba(self, X):
        """LIBLINEAR's probabilities [n, K] (columns in ``model.classes``
        order) of the raw samples X, for a model of its logistic regression
        (:mod:`~hsvm_cli.predict.logistic`; OptionError otherwise)."""
        return self._predict_block(check_samples(X, self.model.n_features, extra="ignore"), proba=True).proba

    def estimates(self, Xn, *, timings=None):
        """The filter's estimate [n, K] float64 for every class of prepared samples."""
        t = timings or NullTimings()
        with t.phase("hash"):
            codes = self._projector.codes(Xn)
            norms = sample_norms(Xn)
        with t.phase("filter"):
            if self._codes is None:
                self._codes = HammingCodes(np.ascontiguousarray(self.hash_model.codes), bits=self.bits)
            dist = self._codes.distances(codes, threads=self.threads, kernel=self.kernel)
            est = self._estimate(dist, self.bits, norms, self.w_norms, self.b)
            # A sample with no features: its code (all zeros) says nothing of
            # its angles, and its exact scores w.0 + b = b rank its classes.
            blank = np.asarray(norms) == 0
            if blank.any():
                est[blank] = np.asarray(self.b, dtype=np.float64)
            return est

    def predict_block(self, X, *, y=None, proba=False, timings=None):
        """A :class:`~hsvm_cli.predict.predictor.Prediction` of the raw samples
        X: ``votes`` and ``confidence`` hold the exact scores [n, K] float32
        (exact mode), or, with the filter, the kept classes [n, k] best first.
        X is checked as :meth:`predict` checks it."""
        return self._predict_block(finite_samples(X), y=y, proba=proba, timings=timings)

    def proba_refusal(self):
        """Why this predictor cannot give probabilities, or None: it can for a
        LIBLINEAR logistic-regression model (:mod:`~hsvm_cli.predict.logistic`),
        from its exact scores."""
        solver = logistic_solver(self.model)
        if solver is None:
            what = self.model.params.get("solver_type") if self.model.params.get("imported") == "liblinear" else None
            return ("--proba needs a one-vs-one model with a calibration (-C), or a model of LIBLINEAR's logistic "
                    "regression (train -s 0, 6 or 7: liblinear-predict -b 1's probabilities); %s is %s"
                    % (self.model.path or "this model",
                       "a LIBLINEAR %s model" % what if what else "a one-vs-rest model"))
        if self.hash_model is not None:
            return ("--proba with a one-vs-rest model gives LIBLINEAR's probabilities from every class's exact score: "
                    "not with the hash filter (drop -H, or give --exact)")
        return None

    def _predict_block(self, X, *, y=None, proba=False, timings=None):
        refusal = self.proba_refusal() if proba else None
        if refusal:
            raise OptionError(refusal)
        X = fit_width(X, self.model.n_features, extra="ignore")
        t = timings or NullTimings()
        m = self.model
        Xn = prepare(m.normalize, X, timings=t)
        n, K = Xn.shape[0], m.n_classes
        if self.hash_model is None:
            scores = np.empty((n, K), dtype=np.float32)
            step = int(max(1, min(8192, _BLOCK_BYTES // max(1, 4 * K))))
            with t.phase("score"):
                for s in range(0, n, step):
                    scores[s:s + step] = ovr_scores(self.W, self.b, Xn[s:s + step])
            with t.phase("vote"):
                best = first_max(scores, m.tie_order)
            if proba:
                with t.phase("proba"):
                    p = logistic_proba(scores, first=m.params.get("two_class_first"))
                return Prediction(y, m.classes[best], scores, scores, p)
            return Prediction(y, m.classes[best], scores, scores)
        est = self.estimates(Xn, timings=t)
        with t.phase("filter"):
            # Equal estimates (a blank row of a model without bias scores every
            # class 0) are ranked in the model's tie order, so that the class
            # exact scoring picks among them is kept first: ranked by index,
            # -k 2 had kept two others and labelled such a row otherwise
            tied_first = np.argsort(m.tie_order, kind="stable")
            if np.array_equal(tied_first, np.arange(K)):
                kept = top_classes(np.zeros(est.shape, dtype=np.int32), est, self.k, threads=self.threads)
            else:
                kept = tied_first[top_classes(np.zeros(est.shape, dtype=np.int32), est[:, tied_first], self.k,
                                              threads=self.threads)].astype(np.int32)
        with t.phase("refine"):
            if not self.refine:
                best = kept[:, 0]
            else:
                cx = np.repeat(np.arange(n, dtype=np.int64), self.k)
                cw = kept.reshape(-1).astype(np.int64)
                # Cells grouped by class so that each normal is read once per block.
                exact = sddmm(Xn, self.W, self.b, cx, cw, order=group_by_key(cw, K)).reshape(n, self.k)
                best = first_max(exact, m.tie_order, candidates=kept)
        t.count("refined_classes", n * (self.k if self.refine else 0))
        return Prediction(y, m.classes[best], kept, kept)

    def predict_file(self, source, output="-", *, codes=None, scores=False, proba=False, timings=None,
                     zero_based=None, extra_features="error", chunk_rows=16384, shard=None, header=None,
                     progress=None, class_order="ascending"):
        """What ``hsvm predict`` does with a one-vs-rest model: labels, or with
        ``scores`` (exact mode only) every class's score, in svm-predict's
        layout.  ``shard``, ``header`` and ``class_order`` as in
        :meth:`~hsvm_cli.predict.predictor.Predictor.predict_file`.  Returns
        the PredictionWriter (it holds the accuracy)."""
        if zero_based is None:
            zero_based = trained_zero_based(self.model)
        if codes is not None:
            raise OptionError("--codes is for one-vs-one models; a one-vs-rest filter hashes its samples itself")
        if source is None:
            raise OptionError("missing TEST")
        if scores and self.hash_model is not None:
            raise OptionError("--scores with a one-vs-rest model needs exact prediction (--exact or no -H)")
        refusal = self.proba_refusal() if proba else None
        if refusal:
            raise OptionError(refusal)
        t = timings if timings is not None else NullTimings()
        if shard is not None:
            shard = as_shard(shard)
        if header is None:
            header = shard is None or shard.is_first
        writer = PredictionWriter(self.model.classes, scores=scores, proba=proba,
                                  column_order=column_order(self.model, class_order))
        # float32 chunks in the reader's own CSR arrays, as the one-vs-one
        # path reads them: scipy.sparse is not imported (0.1-0.15 s, most of
        # a one-line input's run)
        chunks = timed_chunks(iter_svmlight(source, zero_based=zero_based, n_features=self.model.n_features,
                                            extra_features=extra_features, chunk_rows=chunk_rows, shard=shard,
                                            dtype=np.float32, threads=self.threads, _csr_arrays=True), t)
        blocks = (self._predict_block(c.X, y=c.y, proba=proba, timings=t) for c in chunks)
        writer.write_all(blocks if progress is None else _reporting(blocks, progress), output, timings=t,
                         header=header)
        if self.hash_model is not None:
            if writer.total:
                t.counters["mean_refined_classes"] = round(t.counters.pop("refined_classes", 0) / writer.total, 3)
            t.counters.update({"bits": self.bits, "filter_k": self.k, "refined": self.refine})
        return writer
