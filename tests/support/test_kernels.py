"""The choice of the native code path: what the CPU has, HSVM_KERNEL, kernel=."""
import os
import subprocess
import sys

import numpy as np
import pytest

from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.support.kernels import (
    KERNELS,
    KernelUnavailableError,
    available_kernels,
    selected_kernel,
)

AVAILABLE = available_kernels()


def codes(rng, rows, words):
    return rng.integers(0, 2**64, size=(rows, words), dtype=np.uint64, endpoint=False)


def test_kernel_listing():
    assert "portable" in AVAILABLE
    assert set(AVAILABLE) <= set(KERNELS)
    assert selected_kernel() in AVAILABLE
    for k in AVAILABLE:
        assert selected_kernel(k) == k


def test_hsvm_kernel_environment(monkeypatch):
    best = AVAILABLE[-1]
    monkeypatch.delenv("HSVM_KERNEL", raising=False)
    assert selected_kernel() == best
    for k in AVAILABLE:
        monkeypatch.setenv("HSVM_KERNEL", k)
        assert selected_kernel() == k
        assert selected_kernel("portable") == "portable"  # kernel= wins over the variable
    monkeypatch.setenv("HSVM_KERNEL", "sse9")
    with pytest.raises(KernelUnavailableError, match="HSVM_KERNEL"):
        selected_kernel()
    rng = np.random.default_rng(10)
    with pytest.raises(KernelUnavailableError):
        hamming_distances(codes(rng, 2, 1), codes(rng, 2, 1), bits=64)


def test_hsvm_kernel_environment_in_fresh_process():
    script = ("from hsvm_cli.support.kernels import selected_kernel, available_kernels\n"
              "print(selected_kernel(), ','.join(available_kernels()))\n")
    for k in AVAILABLE:
        env = dict(os.environ, HSVM_KERNEL=k)
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
        assert out[0] == k and out[1] == ",".join(AVAILABLE)


@pytest.mark.skipif(len(AVAILABLE) == len(KERNELS), reason="every kernel runs here")
def test_unavailable_kernel_is_refused(monkeypatch):
    missing = [k for k in KERNELS if k not in AVAILABLE][-1]
    rng = np.random.default_rng(11)
    with pytest.raises(KernelUnavailableError, match=missing):
        hamming_distances(codes(rng, 2, 1), codes(rng, 2, 1), bits=64, kernel=missing)
    monkeypatch.setenv("HSVM_KERNEL", missing)
    with pytest.raises(KernelUnavailableError, match="lacks"):
        selected_kernel()


def test_kernel_argument_validation():
    with pytest.raises(ValueError, match="kernel"):
        selected_kernel("sse2")
    # case does not matter, as in HSVM_KERNEL
    assert selected_kernel("PORTABLE") == "portable" and selected_kernel("Auto") == selected_kernel()
    with pytest.raises(ValueError, match="kernel"):
        selected_kernel(3)


def test_every_command_refuses_a_bad_hsvm_kernel(monkeypatch, tmp_path):
    # Also the commands whose native code has one path (hash-model, eval, ...):
    # a misspelt value exits 64 before any work instead of passing silently.
    from conftest import DIGITS_TEST, run
    monkeypatch.setenv("HSVM_KERNEL", "avx-512")
    for args in (["hash-model", "-m", tmp_path / "none.hsvm", "-o", tmp_path / "h.hbm"],
                 ["eval", "--truth", DIGITS_TEST, DIGITS_TEST],
                 ["train-ovo", DIGITS_TEST, "-o", tmp_path / "m.hsvm"]):
        r = run(args, exit_code=64)
        assert r.stderr == "hsvm: HSVM_KERNEL='avx-512' is not a kernel (choose from auto, portable, avx2, avx512)\n"
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv("HSVM_KERNEL", "portable")
    run(["train-ovo", "-q", DIGITS_TEST, "-o", tmp_path / "m.hsvm"])


@pytest.mark.parametrize("value", ["avx-512", KERNELS[-1]])
def test_a_bad_hsvm_kernel_still_lets_a_command_show_its_help(monkeypatch, value):
    # The help is where a user reads what to change; the command itself is
    # refused when the value is no kernel or (the last, where this CPU lacks
    # it) one this CPU cannot run.
    from conftest import run
    monkeypatch.setenv("HSVM_KERNEL", value)
    for command in ("predict", "eval", "info"):
        for flag in ("--help", "-h"):
            assert run([command, flag]).stdout.startswith("Usage: cli %s [OPTIONS]" % command)
    if value == "avx-512" or value not in AVAILABLE:
        run(["predict", "--", "-h"], exit_code=64)
        # a misspelt command is still that first
        assert "No such command" in run(["predcit", "-m", "m.hsvm"], exit_code=2).stderr
