"""Task resources (support/resources.py): memory estimates add up their
parts; threads and BLAS threads follow SLURM_CPUS_PER_TASK unless the user
set them."""
import json
import os
import subprocess
import sys

import pytest

from hsvm_cli.support.resources import (
    BLAS_SPIN,
    BLAS_VARIABLES,
    blas_threads_from_slurm,
    blas_waits_briefly,
    prediction_shard_memory,
    task_threads,
    training_block_memory,
)


def test_memory_estimates_add_up_their_parts():
    est = training_block_memory(n_rows=1000, nnz=50000, n_features=100, n_classifiers=10)
    assert est["total"] == sum(v for k, v in est.items() if k != "total")
    assert est["weights"] == 10 * 101 * 4 and est["row_pool"] == (50000 + 2000) * 16
    pred = prediction_shard_memory(n_features=100, n_classes=10, n_classifiers=45, chunk_rows=1000)
    assert pred["total"] == sum(v for k, v in pred.items() if k != "total")
    assert pred["model"] == 45 * 101 * 4 and pred["model_transposed"] == 0
    sparse = prediction_shard_memory(n_features=100, n_classes=10, n_classifiers=45, chunk_rows=1000,
                                     nnz_per_row=5, sparse=True)
    assert sparse["model_transposed"] == sparse["model"] and sparse["chunk"] < pred["chunk"]


def test_task_threads_follow_slurm_cpus_per_task(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert task_threads() == 3


def test_blas_variables_are_set_from_slurm_unless_given():
    env = {"SLURM_CPUS_PER_TASK": "4", "MKL_NUM_THREADS": "2"}
    assert blas_threads_from_slurm(env) == ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"]
    assert env == {"SLURM_CPUS_PER_TASK": "4", "MKL_NUM_THREADS": "2", "OMP_NUM_THREADS": "4",
                   "OPENBLAS_NUM_THREADS": "4"}
    # OMP_NUM_THREADS given: the others follow it, not the CPUs
    env = {"SLURM_CPUS_PER_TASK": "4", "OMP_NUM_THREADS": "1"}
    blas_threads_from_slurm(env)
    assert env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    for env in ({}, {"SLURM_CPUS_PER_TASK": "0"}, {"SLURM_CPUS_PER_TASK": "x"}):
        assert blas_threads_from_slurm(env) == [] and "OMP_NUM_THREADS" not in env


def test_the_blas_of_a_slurm_task_runs_its_cpus_threads():
    # What the hsvm command does first thing, then numpy's BLAS as loaded.
    code = ("from hsvm_cli.support.resources import blas_threads_from_slurm; blas_threads_from_slurm(); "
            "import numpy, json, threadpoolctl; "
            "print(json.dumps([i['num_threads'] for i in threadpoolctl.threadpool_info() "
            "if i['user_api'] == 'blas']))")
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    env["SLURM_CPUS_PER_TASK"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    threads = json.loads(out.stdout)
    assert threads and set(threads) == {1}


def test_task_estimates_for_job_scripts(tmp_path, digits_model_file):
    from hsvm_cli.support.resources import (
        DATA_MARGIN,
        RUNTIME_BYTES,
        WORKER_BYTES,
        main,
        scan_samples,
        training_task_bytes,
    )

    from conftest import DIGITS_TEST, DIGITS_TRAIN
    n, nnz, d, counts = scan_samples(DIGITS_TRAIN)
    assert (n, d, counts.sum(), len(counts)) == (1347, 64, 1347, 10)
    one = training_task_bytes(DIGITS_TRAIN, blocks=1)
    parts = training_block_memory(n_rows=n, nnz=nnz, n_features=64, n_classifiers=45)
    assert one == int(DATA_MARGIN * parts["total"]) + RUNTIME_BYTES
    assert abs(training_task_bytes(DIGITS_TRAIN, blocks=3) - (one - DATA_MARGIN * 30 * 65 * 4)) <= 1
    # forked trainers (-j N) are charged to the task too: each its problem buffers and its own pages
    assert training_task_bytes(DIGITS_TRAIN, blocks=1, jobs=2) == one + 2 * (parts["problem"] + WORKER_BYTES)
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["predict", "--model", str(digits_model_file), DIGITS_TEST])
        main(["predict", "--train", DIGITS_TRAIN, DIGITS_TEST, "-c", "0.5", "--seed", "1"])
        main(["train", DIGITS_TRAIN, "--blocks", "3", "-c", "1", "--bags", "2", "-j", "4"])
    from_model, from_train, train = map(int, out.getvalue().split())
    assert 64 < from_model == from_train < 100
    assert train == -(-(training_task_bytes(DIGITS_TRAIN, blocks=3, bags=2, jobs=4)) // (1 << 20))


@pytest.mark.parametrize("args", [["train", "x.svm", "--blocks", "0"], ["predict", "x.svm", "--model", "m",
                                                                       "--chunk-rows", "-1"]])
def test_the_estimator_refuses_counts_below_one_as_usage_errors(args, capsys):
    from hsvm_cli.support.resources import main
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2 and "expected a positive integer" in capsys.readouterr().err


def test_idle_blas_threads_sleep_soon_unless_the_user_chose():
    env = {}
    assert blas_waits_briefly(env) and env == {"OPENBLAS_THREAD_TIMEOUT": BLAS_SPIN}
    env = {"OPENBLAS_THREAD_TIMEOUT": "28"}
    assert not blas_waits_briefly(env) and env == {"OPENBLAS_THREAD_TIMEOUT": "28"}


def test_the_hsvm_command_sets_the_blas_wait_before_numpy_loads():
    # main() sets it (or keeps the user's) before anything loads numpy
    code = ("import os, sys; sys.argv = ['hsvm', '--version']\n"
            "import hsvm_cli.support.resources as r\n"
            "def checked(real=r.blas_waits_briefly):\n"
            "    assert 'numpy' not in sys.modules\n"
            "    return real()\n"
            "r.blas_waits_briefly = checked\n"
            "import atexit\n"      # the command leaves by os._exit, after the atexit functions
            "atexit.register(lambda: sys.__stderr__.write('timeout=%s' % os.environ.get('OPENBLAS_THREAD_TIMEOUT')))\n"
            "from hsvm_cli.cli.entry import main\n"
            "main()\n")
    for given, expected in ((None, BLAS_SPIN), ("30", "30")):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if given is not None:
            env["OPENBLAS_THREAD_TIMEOUT"] = given
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stderr.endswith("timeout=%s" % expected)
