"""Hamming voting / distance kernels against the numpy reference, at every SIMD
level the machine has (levels it lacks are skipped, not faked)."""
import os

import numpy as np
import pytest

from hsvm_cli.support.threads import default_threads, resolve_threads


def test_default_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    assert default_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "5,2")
    assert default_threads() == 5
    monkeypatch.setenv("OMP_NUM_THREADS", "0")      # not positive: ignored
    assert default_threads() == 3
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "lots")
    assert default_threads() == len(os.sched_getaffinity(0))


def test_resolve_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "6")
    assert resolve_threads(None) == 6
    assert resolve_threads("auto") == 6
    assert resolve_threads(0) == 6
    assert resolve_threads(2) == 2
    assert resolve_threads(" 4 ") == 4
    assert resolve_threads(np.int64(3)) == 3
    for bad in (-1, "-2", "two", 2.0, True, [1]):
        with pytest.raises(ValueError, match="threads"):
            resolve_threads(bad)


def test_run_each_calls_every_item_once_on_any_number_of_threads():
    from hsvm_cli.support.threads import run_each
    for threads in (1, 3):
        seen = []
        run_each(seen.append, range(10), threads)
        assert sorted(seen) == list(range(10))
    order = []
    run_each(order.append, [3, 1, 2], 1)
    assert order == [3, 1, 2]          # one thread: in order, in this thread

    def boom(i):
        if i == 4:
            raise KeyError(i)

    with pytest.raises(KeyError):
        run_each(boom, range(8), 2)
