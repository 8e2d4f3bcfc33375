"""A first stage whose cost grows with K, not K²: class scores.

The hash filter asks every one of the K(K−1)/2 pairs.  Its counterpart for a
single class is the sum of that class's normalised pair margins,

    s_c(x) = (1/B) Σ_{classifiers j of the pairs naming c} ±(w_j·x + b_j)/‖w_j‖
           = u_c·x + β_c,
    u_c = (1/B) Σ_j ±w_j/‖w_j‖,   β_c = (1/B) Σ_j ±b_j/‖w_j‖,

signed towards c (+ where c is the pair's first class).  It is linear in x:
the K summary vectors u_c are computed once from W, and ranking all classes of
a sample costs one K × d product, O(K·d), instead of O(K²·D'/64) popcounts
plus the D'·d of hashing the sample.  It is the exact version of the hash
filter's tie-break term (the summed margins), which needs no projection: on
every data set measured (BENCHMARKS.md, "First stage") it keeps the exact
label among fewer classes than 1024-bit hash votes do.

With many classes (K much larger than the code length D') the scores can be
estimated from codes instead, as the filter estimates each classifier: with
F the hash model's projection, ŝ_c = ‖u_c‖·cos(π·d_H(F(x), F(u_c))/D') + β_c,
O(D'·d + K·D'/64) per sample."""
import numpy as np

from ..hashing.hamming import BuildsPlansOnUse, HammingCodes, blank_codes
from ..models.class_weights import compute_class_weights
from ..support.lazy_sparse import sp
from .products import products, transposed

FIRST_STAGES = ("votes", "scores", "hashed-scores")


class ClassScores:
    """Exact class scores kept as their parts: ``products`` [n, K] (u_c·x)
    and ``beta`` float64 [K].  The scores are ``products`` in float64 plus
    β; :meth:`top` ranks them in C without forming that [n, K] array of
    doubles (eight bytes a class and sample, written and read again), which
    only a caller of :meth:`full` (probabilities, scores written out) needs."""

    def __init__(self, products, beta):
        self.products = products
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)

    @property
    def shape(self):
        return self.products.shape

    def full(self):
        scores = np.asarray(self.products, dtype=np.float64)
        scores += self.beta
        return scores

    def as_ranking(self):
        """(votes, confidence) [n, K] as a first stage ranks by them: zero
        votes, the scores in float64."""
        return np.zeros(self.shape, dtype=np.int32), self.full()

    def top(self, k, *, threads=1):
        """Per row, the k best classes, best first ([n, k] int32): what
        :func:`~hsvm_cli.predict.ranking.top_classes` gives for zero votes
        and :meth:`full`."""
        from .ranking import top_classes, top_scores
        if self.products.dtype != np.float32:
            return top_classes(*self.as_ranking(), k, threads=threads)
        return top_scores(self.products, self.beta, k, threads=threads)


def class_score_weights(model):
    """(U float32 [K, d], β float32 [K]): the class score of class c is
    U[c]·x + β[c] for a sample x prepared as the model wants (see the module
    docstring and :mod:`hsvm_cli.models.class_weights`).  The ones the model
    file stores when it has them, else computed from all of W (verified
    first) and kept on the model object, so that every predictor of one
    model reads W for them once."""
    if model.class_W is None:
        model.verify()
        model.class_W, model.class_b = compute_class_weights(model)
    return model.class_W, model.class_b


class ClassScoreFilter(BuildsPlansOnUse):
    """Ranks every class of a sample by its class score: exactly
    (``encoder=None``: one product with the K × d summary matrix) or
    estimated from D'-bit codes (``encoder``: a hash model's sample encoder,
    whose projection also hashes the summary vectors)."""

    _native_caches = ("_codes",)

    def __init__(self, U, beta, *, encoder=None, threads=None, kernel=None):
        self.U = np.ascontiguousarray(U, dtype=np.float32)
        self.beta = np.asarray(beta, dtype=np.float64)
        self.encoder = encoder
        self.threads = threads
        self.kernel = kernel
        self._UT = None
        if encoder is not None:
            self.bits = encoder.bits
            self.norms = np.sqrt(np.einsum("ij,ij->i", self.U, self.U, dtype=np.float64))
            self._codes = None                  # packed on first use

    @property
    def hashed(self):
        return self.encoder is not None

    def scores(self, Xn, *, timings=None):
        """Class scores [n, K] float64 of prepared samples; the time goes to
        ``hash`` (the codes) and ``filter``."""
        from ..support.timing import NullTimings
        t = timings or NullTimings()
        if not self.hashed:
            return self.exact_scores(Xn, timings=t).full()
        with t.phase("hash"):
            xcodes = self.encoder.codes(Xn)
        return self.scores_of_codes(xcodes, timings=t)

    def exact_scores(self, Xn, *, timings=None):
        """The exact class scores of prepared samples as :class:`ClassScores`
        (the products and β apart), in the ``filter`` phase."""
        from ..support.timing import NullTimings
        if self.hashed:
            raise ValueError("a hashed class-score filter estimates its scores from codes")
        with (timings or NullTimings()).phase("filter"):
            if sp.issparse(Xn) and self._UT is None:
                self._UT = transposed(self.U)
            return ClassScores(products(Xn, self.U, WT=self._UT, threads=self.threads, kernel=self.kernel),
                               self.beta)

    def scores_of_codes(self, xcodes, *, timings=None):
        """Estimated class scores [n, K] of sample codes (hashed filter only)."""
        from ..support.timing import NullTimings
        with (timings or NullTimings()).phase("filter"):
            if self._codes is None:
                self._codes = HammingCodes(self.encoder.codes(self.U), bits=self.bits)
            xcodes = np.ascontiguousarray(xcodes)
            dist = self._codes.distances(xcodes, threads=self.threads, kernel=self.kernel)
            scores = self.norms * np.cos(np.pi * dist / self.bits) + self.beta
            # a sample with no features: u.0 + β = β, which its distances cannot tell
            blank = blank_codes(xcodes, self.bits)
            if blank.any():
                scores[blank] = self.beta
            return scores
