"""Hash votes of a one-vs-one model's classifiers at a prefix of their codes."""
import threading

import numpy as np

from .angles import class_theta_sums, hash_margins, thresholds
from .hamming import BuildsPlansOnUse, HammingVoter


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

    def votes(self, xcodes, *, threads=None):
        """Hash votes [n, K] int32 and normalised margins [n, K] float64: the
        class's summed (ρ − d_H)/D' over its classifiers (bag mean), signed
        towards the class."""
        votes, dsum = self._ready().vote(np.ascontiguousarray(xcodes), threads=threads, kernel=self.kernel)
        return votes, hash_margins(dsum, self.theta_sums, bits=self.bits, bags=self.bags)
