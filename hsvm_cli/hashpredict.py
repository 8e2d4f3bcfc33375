"""Hash-based prediction: hash the samples, filter classes by Hamming range-query
votes, refine the top-k exactly."""
import numpy as np
import scipy.sparse as sp

from .exact import ExactScorer
from .hamming import HammingVoter
from .hashmodel import pack_signs, thresholds
from .predict import PredictionBlock, prepare
from .ranking import best_class, top_classes
from .refine import PairLookup, refine_votes
from .timing import NullTimings


def class_theta_sums(h):
    """Per class, the sum over its classifiers of theta, signed towards the class
    (+ for pair_a, - for pair_b): the constant part of the hash margins."""
    t = np.asarray(h.theta, dtype=np.float64).reshape(-1, h.bags).sum(axis=1)
    K = h.n_classes
    return np.bincount(h.pair_a, weights=t, minlength=K) - np.bincount(h.pair_b, weights=t, minlength=K)


class HashFilter:
    """Hash votes at a prefix of ``bits`` for every class."""

    def __init__(self, h, *, bits=None, threads=None, kernel=None):
        self.h = h
        self.bits = h.check_bits(bits)
        self.words = self.bits // 64
        self.thr = thresholds(h.theta, self.bits)
        self._voter = None
        self.theta_sums = class_theta_sums(h)
        self.threads = threads
        self.kernel = kernel
        # Contiguous d x D' so that sparse rows add whole rows of it; derived
        # (or read) once here, not per batch.
        self._RT = np.ascontiguousarray(h.projection(self.bits).T)

    def hash_samples(self, Xn):
        """D'-bit codes of normalised samples (uint64 [n, D'/64])."""
        if sp.issparse(Xn):
            proj = np.asarray(Xn @ self._RT)
        else:
            proj = np.asarray(Xn, dtype=np.float32) @ self._RT
        return pack_signs(proj)

    def votes(self, xcodes):
        """Hash votes [n, K] int32 and normalised margins [n, K] float64: the
        class's summed (rho - d_H)/D' over its classifiers (bag average), signed
        towards the class."""
        if self._voter is None:
            # Packing the classifier codes for the kernels happens once, on first use.
            self._voter = HammingVoter(np.ascontiguousarray(self.h.codes), self.thr, self.h.pair_a, self.h.pair_b,
                                       bags=self.h.bags, n_classes=self.h.n_classes, bits=self.bits)
        votes, dsum = self._voter.vote(np.ascontiguousarray(xcodes), threads=self.threads, kernel=self.kernel)
        margins = (self.theta_sums * self.bits - dsum) / float(self.bits * self.h.bags)
        return votes, margins


class HashPredictor:
    """Filter-and-refine prediction with an exact model and its hash model."""

    def __init__(self, model, h, *, bits=None, filter_k=None, refine=True, threads=None, kernel=None):
        h.check_model(model)
        self.model = model
        self.h = h
        self.filter = HashFilter(h, bits=bits, threads=threads, kernel=kernel)
        K = model.n_classes
        k = K if filter_k is None else int(filter_k)
        if k < 1:
            raise ValueError("--filter-k must be at least 1")
        self.k = min(k, K)
        self.refine = refine and self.k > 1
        self.threads = threads or 1
        self.lookup = PairLookup(model.pair_a, model.pair_b, K)
        # When the filter keeps every class, refining is exact prediction.
        self.exact = ExactScorer(model) if self.refine and self.k == K else None

    def predict_block(self, X, *, y=None, xcodes=None, timings=None):
        t = timings or NullTimings()
        m = self.model
        Xn = prepare(m.normalize, X, timings=t) if X is not None else None
        if xcodes is None:
            with t.phase("hash"):
                xcodes = self.filter.hash_samples(Xn)
        with t.phase("filter"):
            hv, hm = self.filter.votes(xcodes)
            kept = top_classes(hv, hm, self.k)
        if not self.refine:
            return PredictionBlock(y, m.classes[kept[:, 0]], hv, hm)
        with t.phase("refine"):
            if self.exact is not None:
                votes, conf = self.exact.votes(Xn)
            else:
                votes, conf = refine_votes(m, Xn, kept, lookup=self.lookup, threads=self.threads)
                # Only kept classes compete for the final label.
                mask = np.zeros(votes.shape, dtype=bool)
                np.put_along_axis(mask, kept, True, axis=1)
                votes = np.where(mask, votes, -1)
            best = best_class(votes, conf)
            votes = np.maximum(votes, 0)
        t.count("refined_classes", int(kept.shape[0] * self.k))
        return PredictionBlock(y, m.classes[best], votes, conf)

    def iter_predict(self, chunks, *, timings=None):
        for chunk in chunks:
            yield self.predict_block(chunk.X, y=chunk.y, timings=timings)
