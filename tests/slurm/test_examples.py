"""The job-array examples of examples/slurm on a real (private, single-node)
Slurm: trained by pair blocks, merged as a dependent job, predicted by
shards and evaluated from the concatenated output, both stage by stage
(examples/slurm/Makefile, sbatch --wait per stage) and as one chain of
dependent jobs (examples/slurm/submit.sh); the merged model and the
concatenated predictions are the single-process results byte for byte."""
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "slurm"
DATA = REPO / "data" / "digits"
TRAIN_OPTIONS = "-c 0.5 --seed 3 --bags 2"
PREDICT_OPTIONS = "--scores"
BIN = str(Path(sys.executable).parent)


def prepare(d):
    d.mkdir()
    for name in ("train", "test"):
        (d / ("%s.svm" % name)).write_bytes(gzip.decompress((DATA / ("%s.svm.gz" % name)).read_bytes()))
    return d


def env_for(cluster, **extra):
    env = dict(cluster.env, PATH=BIN + os.pathsep + cluster.env.get("PATH", ""), PYTHON=sys.executable,
               HSVM="hsvm", TRAIN="train.svm", TEST="test.svm", WORK=".", TRAIN_OPTIONS=TRAIN_OPTIONS,
               PREDICT_OPTIONS=PREDICT_OPTIONS)
    env.update(extra)
    return env


def sh(argv, cwd, env=None, check=True):
    res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=900)
    if check:
        assert res.returncode == 0, "%s failed (%d):\n%s\n%s" % (argv, res.returncode, res.stdout, res.stderr)
    return res


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The single-process model and predictions, made with the same relative
    paths the job scripts use."""
    d = prepare(tmp_path_factory.mktemp("single") / "run")
    sh(["hsvm", "train-ovo", "train.svm", *TRAIN_OPTIONS.split(), "-o", "./model.hsvm", "-q"], d,
       env=dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"]))
    sh(["hsvm", "predict", "test.svm", "-m", "./model.hsvm", PREDICT_OPTIONS, "-o", "predictions.txt", "-q"], d,
       env=dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"]))
    return (d / "model.hsvm").read_bytes(), (d / "predictions.txt").read_bytes()


def logs(d, pattern):
    return "".join(p.read_text() for p in sorted(d.glob(pattern)))


def check_run(d, single, cluster, n_blocks, n_shards):
    model, predictions = single
    diag = "\n".join("----- %s -----\n%s" % (p.name, p.read_text()) for p in sorted(d.glob("*.log")))
    assert (d / "model.hsvm").read_bytes() == model, diag + cluster.logs()
    assert (d / "predictions.txt").read_bytes() == predictions, diag
    assert sorted(p.name for p in (d / "parts").glob("part.*")) == ["part.%d" % i for i in range(n_blocks)]
    assert sorted(p.name for p in (d / "predictions").glob("pred.*")) == ["pred.%d" % i for i in range(n_shards)]
    report = (d / "report.txt").read_text()
    assert "samples              450" in report and "accuracy" in report
    # progress of every task on its stderr, in the task's log
    train_logs = logs(d, "hsvm-train-*.log")
    for i in range(n_blocks):
        assert "hsvm: train-ovo: block %d/%d: pairs " % (i, n_blocks) in train_logs
    predict_logs = logs(d, "hsvm-predict-*.log")
    for i in range(n_shards):
        assert "hsvm: predict: shard %d/%d: " % (i, n_shards) in predict_logs


def test_makefile_runs_the_stages_as_job_arrays_with_the_single_process_results(cluster, single, tmp_path):
    d = prepare(tmp_path / "run")
    cpus = min(2, cluster.cpus)
    res = sh(["make", "-f", str(EXAMPLES / "Makefile"), "N_BLOCKS=3", "N_SHARDS=4", "CPUS=%d" % cpus], d,
             env=env_for(cluster))
    assert res.stdout.count("sbatch --wait") == 4, res.stdout
    check_run(d, single, cluster, 3, 4)
    # nothing left to do: make's rules see every stage done
    again = sh(["make", "-f", str(EXAMPLES / "Makefile"), "N_BLOCKS=3", "N_SHARDS=4"], d, env=env_for(cluster))
    assert "sbatch" not in again.stdout
    # new prediction settings redo the predictions and the report, not the training
    more = sh(["make", "-f", str(EXAMPLES / "Makefile"), "N_BLOCKS=3", "N_SHARDS=2"], d, env=env_for(cluster))
    assert more.stdout.count("sbatch --wait") == 2 and "train.sbatch" not in more.stdout, more.stdout
    check_run(d, single, cluster, 3, 2)


def test_submit_chains_the_stages_as_dependent_jobs_with_the_single_process_results(cluster, single, tmp_path):
    d = prepare(tmp_path / "run")
    res = sh([str(EXAMPLES / "submit.sh"), "5", "3"], d, env=env_for(cluster, WAIT="1"))
    assert res.stdout.startswith("train ") and " merge " in res.stdout
    check_run(d, single, cluster, 5, 3)


def test_a_failing_task_stops_the_run_without_a_model(cluster, tmp_path):
    # an option the tasks refuse: the array fails, sbatch --wait and make too
    d = prepare(tmp_path / "run")
    res = sh(["make", "-f", str(EXAMPLES / "Makefile"), "N_BLOCKS=2", "N_SHARDS=2"], d,
             env=env_for(cluster, TRAIN_OPTIONS="--solver nonsense"), check=False)
    assert res.returncode != 0 and "sbatch --wait" in res.stdout
    assert not (d / "model.hsvm").exists() and not (d / "parts" / "done").exists()
    assert logs(d, "hsvm-train-*.log").count("Invalid value for '--solver'") == 2


def test_malformed_training_data_stops_the_run_before_submitting(cluster, tmp_path):
    # the memory estimate reads the file first and names the bad line
    d = prepare(tmp_path / "run")
    lines = (d / "train.svm").read_bytes().splitlines(keepends=True)
    lines[-3] = b"3 2:1 1:1\n"
    (d / "train.svm").write_bytes(b"".join(lines))
    res = sh(["make", "-f", str(EXAMPLES / "Makefile"), "N_BLOCKS=2", "N_SHARDS=2"], d, env=env_for(cluster),
             check=False)
    assert res.returncode != 0 and "sbatch --wait" not in res.stderr
    assert "hsvm: train.svm:%d: index 1 after 2: indices must be increasing\n" % (len(lines) - 2) in res.stderr
    assert not (d / "model.hsvm").exists() and not list(d.glob("hsvm-train-*.log"))
