"""Hash votes of a one-vs-one model's classifiers at a prefix of their codes."""
import threading

import numpy as np

from .angles import class_theta_sums, hash_margins, thresholds
from .hamming import BuildsPlansOnUse, HammingVoter, blank_codes


class HashVoter(BuildsPlansOnUse):
    """Range-query voting of every classifier of a hash model at ``bits``
    (a multiple of 64 up to the stored code length): for sample codes, the
    votes each class wins and its summed normalised margins.  The classifier
    codes are packed for the kernels once, on first use."""

    _native_caches = ("_voter",)

    def __init__(self, codes, theta, pair_a, pair_b, *, bags, n_classes, bits, kernel=None):
        self.codes = codes
        self.pair_a = pair_a
        self.pair_b = pair_b
        self.bags = int(bags)
        self.n_classes = int(n_classes)
        self.bits = int(bits)
        self.kernel = kernel
        self.thresholds = thresholds(theta, self.bits)
        self.theta_sums = class_theta_sums(theta, pair_a, pair_b, bags=self.bags, n_classes=self.n_classes)
        self._voter = None
        self._lock = threading.Lock()

    def __getstate__(self):
        state = super().__getstate__()
        del state["_lock"]          # a lock does not pickle; the copy makes its own
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _ready(self):
        # a hash model hands one voter to every predictor at these bits,
        # whose threads may come here together: packed once
        with self._lock:
            if self._voter is None:
                self._voter = HammingVoter(np.ascontiguousarray(self.codes), self.thresholds, self.pair_a,
                                           self.pair_b, bags=self.bags, n_classes=self.n_classes, bits=self.bits)
        return self._voter

    def blocking(self):
        """The kernel's cache blocking (see :meth:`HammingVoter.blocking`)."""
        return self._ready().blocking()

    def votes(self, xcodes, *, threads=None, out=None, dsum=None):
        """Hash votes [n, K] int32 and normalised margins [n, K] float64: the
        class's summed (ρ − d_H)/D' over its classifiers (bag mean), signed
        towards the class.  A sample whose code is all zeros (the code of a
        sample with no features) is voted at right angles to every
        classifier (:meth:`right_angle_votes`).  ``out``: (votes, margins)
        to fill (C-contiguous [n, K] views), returned: a caller's block of
        rows is written in place, without fresh arrays and copies; ``dsum``:
        int32 [n, K] room for the kernel's distance sums (overwritten)."""
        xcodes = np.ascontiguousarray(xcodes)
        if out is None:
            votes, dsum = self._ready().vote(xcodes, threads=threads, kernel=self.kernel, dsum=dsum)
            margins = hash_margins(dsum, self.theta_sums, bits=self.bits, bags=self.bags)
        else:
            votes, margins = out
            votes, dsum = self._ready().vote(xcodes, threads=threads, kernel=self.kernel, out=votes, dsum=dsum)
            hash_margins(dsum, self.theta_sums, bits=self.bits, bags=self.bags, out=margins)
        blank = blank_codes(xcodes, self.bits)
        if blank.any():
            votes[blank], margins[blank] = self.right_angle_votes()
        return votes, margins

    def right_angle_votes(self):
        """The votes [K] and margins [K] of a sample at Hamming distance D'/2
        from every classifier's code: the zero sample's.  Its code (every
        projection r.0 = 0, so every bit 0) says nothing of its angle to a
        normal w, and its distances to the codes -- and so its votes -- were
        those of an arbitrary direction, changing with the seed; but w.0 + b =
        b, and at a right angle (the expected distance D'/2) the range query
        D'/2 < ceil(θ D') with θ = arccos(-b/|w|)/π answers b > 0 for every
        classifier: the exact decisions.  Bags vote as in the kernel (a
        majority; an even split to class a when the summed distance is below
        the summed threshold)."""
        half = self.bits // 2
        thr = self.thresholds.astype(np.int64).reshape(-1, self.bags)
        cnt = (half < thr).sum(axis=1)
        a_wins = (2 * cnt > self.bags) | ((2 * cnt == self.bags) & (half * self.bags < thr.sum(axis=1)))
        K = self.n_classes
        votes = np.bincount(np.where(a_wins, self.pair_a, self.pair_b), minlength=K).astype(np.int32)
        dsum = half * self.bags * (np.bincount(self.pair_a, minlength=K) - np.bincount(self.pair_b, minlength=K))
        return votes, hash_margins(dsum.astype(np.float64), self.theta_sums, bits=self.bits, bags=self.bags)
