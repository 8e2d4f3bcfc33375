"""The one-vs-one hash filter for models on unnormalised features (normalize
``none``, e.g. imported LIBSVM / LIBLINEAR models), and :func:`make_filter`,
which picks the filter a model needs.

hsvm's filter (:class:`~hsvm_cli.predict.filter.HashFilter`) decides classifier
j by the range query d_H(F(x), F(w_j)) < D' θ_j, θ_j = arccos(−b_j/‖w_j‖)/π,
which is the sign of w_j·x + b_j only for unit-length x.  For any x ≠ 0, with
u = x/‖x‖,

    w·x + b > 0  ⇔  w·u + b/‖x‖ > 0  ⇔  angle(u, w) < π θ(‖x‖),
    θ(s) = arccos(−b/(s ‖w‖))/π            (clamped to [0, 1]),

so hashing stays valid when the threshold is taken at each sample's norm (sign
codes do not depend on ‖x‖: F(x) = F(u)).  Since cos is decreasing on [0, π]
and d is an integer, d < D' θ(s) ⇔ cos(π d/D') > −b/(s ‖w‖):

    classifier j votes for pair_a  ⇔  μ_ij = cos(π d_ij/D') + b_j/(‖x_i‖ ‖w_j‖) > 0,

μ being the estimated cosine margin, i.e. the estimate ‖w‖ ‖x‖ cos(π d/D') + b
of w·x + b divided by ‖w‖ ‖x‖.  For ‖x‖ = 1 this is HashFilter's rule (up to
the rounding of the stored θ).  x = 0 (or w = 0) is decided exactly: the sign
of b.  A cosine per possible distance is tabulated, so the per-sample
thresholds cost a table look-up per (sample, classifier) on top of the Hamming
distances.

Votes and confidences follow exact prediction's rule (native/votes.c) with μ
in place of the decision values: a pair's winner is the majority of its bags,
the confidence the sum over the class's pairs of the bag-mean μ, signed
towards the class.  Codes from ``hash-data`` alone cannot be voted (the norms
are lost): :meth:`RawHashFilter.votes` needs the samples too."""
import threading
import time

import numpy as np

from ..errors import OptionError
from ..hashing.hamming import BuildsPlansOnUse, HammingCodes
from ..preprocess import row_norms
from ..support.lazy_sparse import sp
from ..support.native import lib, ptr
from ..support.threads import run_each
from .exact import ovo_votes
from .filter import HashFilter, LazyEncoder

__all__ = ["RawHashFilter", "make_filter", "unit_length_samples", "cosine_margins", "classifier_norms", "sample_norms"]


def sample_norms(Xn):
    """Euclidean norms (float64) of the rows of prepared samples (summed in a
    fixed order, so the same on every machine)."""
    if sp.issparse(Xn):
        Xn = Xn.tocsr()
        rows = np.repeat(np.arange(Xn.shape[0]), np.diff(Xn.indptr))
        return np.sqrt(np.bincount(rows, weights=np.square(Xn.data, dtype=np.float64), minlength=Xn.shape[0]))
    return row_norms(np.asarray(Xn, dtype=np.float32))


def unit_length_samples(model):
    """Whether the model's samples reach it at unit length: L2-normalised, or
    the +-1/sqrt(bits) features of a model trained on codes (unit length as
    made, although its ``normalize`` is none)."""
    return model.normalize == "l2" or model.trained_on_codes


def make_filter(model, h, *, bits=None, threads=None, kernel=None):
    """The hash filter of ``model`` and its hash model ``h``: HashFilter for
    unit-length samples (:func:`unit_length_samples`), RawHashFilter with
    per-sample thresholds for unnormalised ones."""
    if unit_length_samples(model):
        return HashFilter(h, bits=bits, threads=threads, kernel=kernel)
    return RawHashFilter(model, h, bits=bits, threads=threads, kernel=kernel)


def classifier_norms(W, *, rows=None, threads=1):
    """‖w_j‖ (float64) of every row of W (read block by block -- ``rows`` at a
    time, default about 4 MB of them: W may be a memory map; the blocks split
    over ``threads``)."""
    out = np.empty(W.shape[0], dtype=np.float64)
    if rows is None:
        rows = max(1, (1 << 22) // max(1, 4 * W.shape[1]))

    def block(s):
        out[s:s + rows] = row_norms(np.asarray(W[s:s + rows], dtype=np.float32))

    run_each(block, range(0, W.shape[0], rows), threads)
    return out


def cosine_margins(dist, bits, x_norms, w_norms, b):
    """μ [n, m] float32: cos(π dist/bits) + b_j/(‖x_i‖ ‖w_j‖) in float64,
    rounded once, with +1/−1 (the sign of b, −1 for b = 0) where
    ‖x_i‖ ‖w_j‖ = 0; one pass in C (native/raw_margins.c) over the distances
    int32 [n, m].  The cosine table is numpy's, so the bits do not depend on
    the C library's cos."""
    dist = np.ascontiguousarray(dist, dtype=np.int32)
    n, m = dist.shape
    cos = np.cos(np.pi * np.arange(bits + 1, dtype=np.float64) / bits)
    x_norms = np.ascontiguousarray(x_norms, dtype=np.float64)
    w_norms = np.ascontiguousarray(w_norms, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if x_norms.shape != (n,) or w_norms.shape != (m,) or b.shape != (m,):
        raise ValueError("cosine_margins: %d sample norms, %d classifier norms and %d biases for [%d, %d] "
                         "distances" % (x_norms.shape[0], w_norms.shape[0], b.shape[0], n, m))
    mu = np.empty((n, m), dtype=np.float32)
    rc = lib.hsvm_raw_margins(ptr("int32_t *", dist), n, m, int(bits), ptr("double *", cos),
                              ptr("double *", x_norms), ptr("double *", w_norms), ptr("double *", b),
                              ptr("float *", mu))
    if rc != 0:
        raise ValueError("cosine_margins: a distance outside 0..%d" % bits)
    return mu


class RawHashFilter(LazyEncoder, BuildsPlansOnUse):
    """Hash votes of an unnormalised one-vs-one model: HashFilter's interface
    (``bits``, ``hash_samples``, ``hash_and_vote``, ``votes``) with per-sample
    thresholds.  ``model`` supplies ‖w_j‖ and b_j (read once)."""

    # Votes need the samples' norms, not only their codes.
    needs_samples = True
    _native_caches = ("_codes",)
    # (sample, classifier) cells a thread takes through distances, margins and
    # votes at once: 1 MB of distances and 1 MB of margins, cache-sized --
    # but at least MIN_PIECE_ROWS rows, since the distance kernel reads every
    # classifier code once per call (64 MB of them at K = 1,000, 1024 bits).
    PIECE_CELLS = 1 << 18
    MIN_PIECE_ROWS = 16

    def __init__(self, model, h, *, bits=None, threads=None, kernel=None):
        h.check_model(model)
        if model.normalize != "none":
            raise ValueError("RawHashFilter is for models on unnormalised features; use HashFilter")
        self.h = h
        self.model = model
        self.bits = h.check_bits(bits)
        self.words = self.bits // 64
        self.threads = threads
        self.kernel = kernel
        model.verify()
        self.w_norms = classifier_norms(model.W, threads=threads)
        self.b = np.asarray(model.b, dtype=np.float64)
        self._codes = None

    def hash_samples(self, Xn):
        """D'-bit codes of the samples (the same bits as for x/‖x‖)."""
        return self.encoder.codes(Xn)

    def _codes_ready(self):
        if self._codes is None:
            self._codes = HammingCodes(np.ascontiguousarray(self.h.codes), bits=self.bits)
        return self._codes

    def hash_and_vote(self, Xn, *, timings=None):
        """(votes int32 [n, K], confidences float64 [n, K]) of prepared samples."""
        t0 = time.perf_counter()
        codes = self.hash_samples(Xn)
        norms = sample_norms(Xn)
        t1 = time.perf_counter()
        out = self._vote(codes, norms)
        if timings is not None:
            timings.add("hash", t1 - t0)
            timings.add("filter", time.perf_counter() - t1)
        return out

    def votes(self, xcodes, *, Xn=None):
        """Votes and confidences from precomputed codes; ``Xn`` (the prepared
        samples) supplies the norms the thresholds depend on."""
        if Xn is None:
            raise OptionError("codes alone cannot be voted for a model on unnormalised features: each "
                              "threshold depends on the sample's norm (give TEST too)")
        return self._vote(np.ascontiguousarray(xcodes), sample_norms(Xn))

    def _vote(self, codes, norms):
        n, K, m = codes.shape[0], self.h.n_classes, self.h.codes.shape[0]
        votes = np.empty((n, K), dtype=np.int32)
        conf = np.empty((n, K), dtype=np.float64)
        hc = self._codes_ready()
        rows = max(self.MIN_PIECE_ROWS, self.PIECE_CELLS // max(1, m))
        local = threading.local()

        def piece(s):
            # Each thread takes a few rows through distances, margins and
            # votes while its two buffers are still in cache.
            e = min(n, s + rows)
            buf = getattr(local, "dist", None)
            if buf is None:
                buf = local.dist = np.empty((rows, m), dtype=np.int32)
            dist = hc.distances(codes[s:e], threads=1, kernel=self.kernel, out=buf[:e - s])
            mu = cosine_margins(dist, self.bits, norms[s:e], self.w_norms, self.b)
            votes[s:e], conf[s:e] = ovo_votes(mu, self.h.pair_a, self.h.pair_b, bags=self.h.bags, n_classes=K)

        run_each(piece, range(0, n, rows), self.threads)
        return votes, conf
