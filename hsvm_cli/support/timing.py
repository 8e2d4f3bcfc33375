"""Wall-clock seconds per named phase, for ``--timings``."""
import json
import time
from contextlib import contextmanager


class Timings:
    def __init__(self, phases=()):
        self.seconds = {p: 0.0 for p in phases}
        self.counters = {}
        # Loading and checking what the phases use (models, a projection
        # derived from its seed), before the first sample: reported first and
        # apart from the phases' total, which times the pass over the data.
        self.setup = None

    @contextmanager
    def phase(self, name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def add(self, name, seconds):
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def count(self, name, value):
        self.counters[name] = self.counters.get(name, 0) + value

    def as_dict(self):
        out = {} if self.setup is None else {"setup": round(self.setup, 6)}
        out.update({k: round(v, 6) for k, v in self.seconds.items()})
        out["total"] = round(sum(self.seconds.values()), 6)       # the phases, not the setup
        out.update(self.counters)
        return out

    def json_line(self):
        return json.dumps(self.as_dict(), sort_keys=False)


class NullTimings(Timings):
    """A Timings that measures nothing (the default when nobody asked)."""

    @contextmanager
    def phase(self, name):
        yield


def timed_chunks(chunks, timings):
    """Pass ``chunks`` through, charging the time spent producing each one
    (reading, decompressing, parsing) to the ``parse`` phase."""
    it = iter(chunks)
    while True:
        with timings.phase("parse"):
            try:
                chunk = next(it)
            except StopIteration:
                return
        yield chunk
