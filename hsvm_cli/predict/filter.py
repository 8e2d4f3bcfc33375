"""The hash filter: hash the samples and let every classifier answer its
Hamming range query; the votes and margins rank the classes for the refine."""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..support.threads import resolve_threads
from .ranking import top_classes

# Fewest samples top_classes votes at once (tests lower it to cross groups).
MIN_GROUP = 256


class LazyEncoder:
    """A filter's sample encoder (hash model ``self.h`` at ``self.bits``),
    derived on first use: its projection is d x D' normals, and a filter fed
    codes, or one whose refine keeps every class (exact prediction's path),
    never needs it."""

    _encoder = None
    #: called with the encoder once it is derived (a Predictor checks the
    #: hash model's codes with it: HashModel.check_codes)
    check_encoder = None

    @property
    def encoder(self):
        if self._encoder is None:
            encoder = self.h.encoder(self.bits)
            if self.check_encoder is not None:
                self.check_encoder(encoder)
            self._encoder = encoder
        return self._encoder


class HashFilter(LazyEncoder):
    """Hash votes at a prefix of ``bits`` for every class: the hash model's
    encoder and voter, run over blocks of samples on ``threads`` threads."""

    def __init__(self, h, *, bits=None, threads=None, kernel=None):
        self.h = h
        self.bits = h.check_bits(bits)
        self.words = self.bits // 64
        self.threads = threads
        # The voter packs the classifier codes for the kernels on first use,
        # and the encoder is derived on first use (LazyEncoder).
        self.voter = h.voter(self.bits, kernel=kernel)

    def hash_samples(self, Xn):
        """D'-bit codes of normalised samples (uint64 [n, D'/64]), the same bits
        on every machine (see hsvm_cli.hashing.projection)."""
        return self.encoder.codes(Xn)

    def votes(self, xcodes, *, Xn=None):
        """Hash votes [n, K] int32 and normalised margins [n, K] float64 of
        sample codes (see :meth:`hsvm_cli.hashing.voting.HashVoter.votes`);
        ``Xn`` is not needed for unit-length samples (see
        :class:`~hsvm_cli.predict.raw_filter.RawHashFilter`)."""
        return self.voter.votes(xcodes, threads=self.threads)

    def hash_and_vote(self, Xn, *, timings=None):
        """Hash normalised samples and vote: (votes, margins) as :meth:`votes`.

        With several threads each takes a contiguous block of samples through
        both steps (see :meth:`_over_blocks`)."""
        n, K = Xn.shape[0], self.h.n_classes
        votes = np.empty((n, K), dtype=np.int32)
        margins = np.empty((n, K), dtype=np.float64)

        def vote(encoder, s, e):
            t0 = time.perf_counter()
            codes = encoder.codes(Xn[s:e])
            t1 = time.perf_counter()
            self.voter.votes(codes, threads=1, out=(votes[s:e], margins[s:e]))
            return t1 - t0

        self._over_blocks(n, vote, timings)
        return votes, margins

    def top_classes(self, Xn, k, *, timings=None):
        """The k best classes of each normalised sample by its hash votes,
        best first ([n, min(k, K)] int32): ``top_classes(*hash_and_vote(Xn),
        k)``, without the votes and margins of every sample.  Each thread
        votes groups of its rows (the kernel's cache blocking) into arrays it
        reuses: the n x K votes and margins (16 bytes a sample and class with
        the kernel's distance sums: 134 MB at 8,400 samples and K = 1,000)
        were fresh memory, whose first touch costs this VM up to 3 ms per MB,
        and the selection now reads them from cache."""
        n, K = Xn.shape[0], self.h.n_classes
        kept = np.empty((n, min(int(k), K)), dtype=np.int32)
        group = max(MIN_GROUP, self.voter.blocking()[0])

        def keep(encoder, s, e):
            rows = max(1, min(group, e - s))
            votes = np.empty((rows, K), dtype=np.int32)
            margins = np.empty((rows, K), dtype=np.float64)
            dsum = np.empty((rows, K), dtype=np.int32)
            hashing = 0.0
            for a in range(s, e, rows):
                b = min(e, a + rows)
                m = b - a
                t0 = time.perf_counter()
                codes = encoder.codes(Xn[a:b])
                hashing += time.perf_counter() - t0
                self.voter.votes(codes, threads=1, out=(votes[:m], margins[:m]), dsum=dsum[:m])
                top_classes(votes[:m], margins[:m], k, out=kept[a:b])
            return hashing

        self._over_blocks(n, keep, timings)
        return kept

    def _over_blocks(self, n, work, timings):
        """``work(encoder, s, e)`` -- hashing seconds -- over contiguous
        blocks of the n samples, one per thread.  Each thread projects its own
        samples, in its own thread: a Gaussian projection through hsvm's
        products, not BLAS, whose own threads would compete with the Hamming
        kernel's for the same cores (and run beyond --threads 1)."""
        t_derive = time.perf_counter()
        encoder = self.encoder  # derived here (once: a projection from its seed), before the threads share it
        derive = time.perf_counter() - t_derive
        if hasattr(encoder, "without_blas"):
            encoder = encoder.without_blas()
        threads = max(1, min(resolve_threads(self.threads), n // 64 or 1))
        bounds = np.linspace(0, n, threads + 1).astype(np.int64)
        blocks = [(int(bounds[i]), int(bounds[i + 1])) for i in range(threads)]
        t0 = time.perf_counter()
        if threads == 1:
            hash_seconds = [work(encoder, *blocks[0])]
        else:
            with ThreadPoolExecutor(threads) as ex:
                hash_seconds = list(ex.map(lambda b: work(encoder, *b), blocks))
        wall = time.perf_counter() - t0
        if timings is not None:
            # Hashing and voting overlap across threads: charge the mean
            # hashing time per thread to "hash", the rest of the wall time to "filter".
            h = min(wall, sum(hash_seconds) / threads)
            timings.add("hash", h + derive)
            timings.add("filter", wall - h)
