"""Hash-based prediction: hash the samples, filter classes by Hamming range-query
votes, refine the top-k exactly."""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .calibration import exact_proba, first_stage_proba, second_stage_proba
from .exact import ExactScorer
from .probability import combine
from .hamming import HammingVoter
from .hashmodel import pack_signs, thresholds
from .predict import PredictionBlock, prepare
from .ranking import best_class, top_classes
from .signs import SignProjector
from .refine import PairLookup, refine_decisions, votes_from_decisions
from .threads import resolve_threads, single_threaded_blas
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
        # Derived (or read) once here, not per batch.
        self._projector = SignProjector(h.projection(self.bits))

    def hash_samples(self, Xn):
        """D'-bit codes of normalised samples (uint64 [n, D'/64]), the same bits
        on every machine (see hsvm_cli.signs)."""
        return pack_signs(self._projector.project(Xn))

    def _voter_ready(self):
        if self._voter is None:
            # Packing the classifier codes for the kernels happens once, on first use.
            self._voter = HammingVoter(np.ascontiguousarray(self.h.codes), self.thr, self.h.pair_a, self.h.pair_b,
                                       bags=self.h.bags, n_classes=self.h.n_classes, bits=self.bits)
        return self._voter

    def hash_and_vote(self, Xn, *, timings=None):
        """Hash normalised samples and vote: (votes, margins) as :meth:`votes`.

        With several threads each takes a contiguous block of samples through
        both steps, the projection's BLAS call limited to one thread: BLAS
        threads that spin after their own call would otherwise compete with
        the Hamming kernel's threads for the same cores."""
        n = Xn.shape[0]
        K = self.h.n_classes
        voter = self._voter_ready()
        threads = max(1, min(resolve_threads(self.threads), n // 64 or 1))
        votes = np.empty((n, K), dtype=np.int32)
        dsum = np.empty((n, K), dtype=np.int32)

        def work(block):
            s, e = block
            t0 = time.perf_counter()
            codes = self.hash_samples(Xn[s:e])
            t1 = time.perf_counter()
            votes[s:e], dsum[s:e] = voter.vote(codes, threads=1, kernel=self.kernel)
            return t1 - t0

        bounds = np.linspace(0, n, threads + 1).astype(np.int64)
        blocks = [(int(bounds[i]), int(bounds[i + 1])) for i in range(threads)]
        t0 = time.perf_counter()
        with single_threaded_blas():
            if threads == 1:
                hash_seconds = [work(blocks[0])]
            else:
                with ThreadPoolExecutor(threads) as ex:
                    hash_seconds = list(ex.map(work, blocks))
        wall = time.perf_counter() - t0
        if timings is not None:
            # Hashing and voting overlap across threads: charge the mean
            # hashing time per thread to "hash", the rest of the wall time to "filter".
            h = min(wall, sum(hash_seconds) / threads)
            timings.add("hash", h)
            timings.add("filter", wall - h)
        return votes, self._margins(dsum)

    def _margins(self, dsum):
        return (self.theta_sums * self.bits - dsum) / float(self.bits * self.h.bags)

    def votes(self, xcodes):
        """Hash votes [n, K] int32 and normalised margins [n, K] float64: the
        class's summed (rho - d_H)/D' over its classifiers (bag average), signed
        towards the class."""
        votes, dsum = self._voter_ready().vote(np.ascontiguousarray(xcodes), threads=self.threads,
                                               kernel=self.kernel)
        return votes, self._margins(dsum)


class HashPredictor:
    """Filter-and-refine prediction with an exact model and its hash model.

    ``filter_k``: classes kept by the filter (the maximum with ``epsilon``);
    ``epsilon``: keep, per sample, the classes whose calibrated first-stage
    probability exceeds it (at least one); ``calibration`` is needed for
    ``epsilon`` and for probabilities."""

    def __init__(self, model, h, *, bits=None, filter_k=None, refine=True, threads=None, kernel=None,
                 epsilon=None, calibration=None):
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
        self.calibration = calibration
        if calibration is not None:
            calibration.check(model, h)
            self.alpha = calibration.alpha(self.filter.bits)
        if epsilon is not None:
            if calibration is None:
                raise ValueError("--filter-threshold needs a calibration (-C)")
            if not 0.0 <= float(epsilon) < 1.0:
                raise ValueError("--filter-threshold must be in [0, 1)")
        self.epsilon = None if epsilon is None else float(epsilon)
        # When the filter keeps every class, refining is exact prediction.
        self.exact = ExactScorer(model) if self.refine and self.k == K and self.epsilon is None else None

    # The refine step's per-cell arrays take ~40 bytes a cell: this many cells
    # per sub-block keeps them near 80 MB whatever the chunk size.
    MAX_CELLS = 1 << 21

    def predict_block(self, X, *, y=None, xcodes=None, timings=None, proba=False):
        n = X.shape[0] if X is not None else xcodes.shape[0]
        rows = max(64, self.MAX_CELLS // max(1, self.k * (self.k - 1) // 2 * self.model.bags))
        if self.refine and self.exact is None and n > rows:
            parts = [self.predict_block(None if X is None else X[s:s + rows], y=None if y is None else y[s:s + rows],
                                        xcodes=None if xcodes is None else xcodes[s:s + rows],
                                        timings=timings, proba=proba) for s in range(0, n, rows)]
            cat = lambda name: None if getattr(parts[0], name) is None else np.concatenate(
                [getattr(p, name) for p in parts])
            return PredictionBlock(y, cat("labels"), cat("votes"), cat("confidence"), cat("proba"))
        t = timings or NullTimings()
        m = self.model
        if proba and self.calibration is None:
            raise ValueError("probabilities need a calibration (-C)")
        Xn = prepare(m.normalize, X, timings=t) if X is not None else None
        if xcodes is None:
            hv, hm = self.filter.hash_and_vote(Xn, timings=t)
        else:
            with t.phase("filter"):
                hv, hm = self.filter.votes(xcodes)
        with t.phase("filter"):
            kept = top_classes(hv, hm, self.k)
            p1 = first_stage_proba(hv, hm, self.alpha) if (proba or self.epsilon is not None) else None
            valid = None
            nvalid = np.full(kept.shape[0], kept.shape[1])
            if self.epsilon is not None and self.refine:
                valid = np.take_along_axis(p1, kept, axis=1) > self.epsilon
                valid[:, 0] = True
                # Kept classes in use first (rank order otherwise unchanged), then
                # drop the columns no row uses: the refine cost follows the
                # per-sample counts, not the cap.
                order = np.argsort(~valid, axis=1, kind="stable")
                kept = np.take_along_axis(kept, order, axis=1)
                valid = np.take_along_axis(valid, order, axis=1)
                nvalid = valid.sum(axis=1)
                kept, valid = kept[:, :nvalid.max()], valid[:, :nvalid.max()]
        if not self.refine:
            t.count("refined_classes", int(kept.shape[0]))
            best = kept[:, 0] if p1 is None else np.argmax(p1, axis=1)
            return PredictionBlock(y, m.classes[best], hv, hm, p1)
        P = None
        with t.phase("refine"):
            if self.exact is not None:
                if proba:
                    votes, conf, P = exact_proba(m, self.calibration, Xn, scorer=self.exact)
                else:
                    votes, conf = self.exact.votes(Xn)
            else:
                A, B, dec, pmask, S = refine_decisions(m, Xn, kept, lookup=self.lookup, valid=valid,
                                                       threads=self.threads)
                votes, conf = votes_from_decisions(A, B, dec, pmask, m.n_classes)
                # Only kept classes compete for the final label.
                mask = np.zeros(votes.shape, dtype=bool)
                np.put_along_axis(mask, kept, True if valid is None else valid, axis=1)
                votes = np.where(mask, votes, -1)
                if proba:
                    p2 = second_stage_proba(self.calibration, A, B, dec, S, nvalid, self.lookup)
                    S_pad = np.where(np.arange(S.shape[1])[None, :] < nvalid[:, None], S, -1)
                    P = combine(p1, S_pad, p2)
            best = best_class(votes, conf)
            votes = np.maximum(votes, 0)
        t.count("refined_classes", int(nvalid.sum()))
        if P is not None:
            # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
            best = np.argmax(P, axis=1)
        return PredictionBlock(y, m.classes[best], votes, conf, P)
