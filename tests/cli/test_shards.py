"""--shard i/N on predict, hash-data and eval: every byte split point of a
small file gives shards whose outputs, concatenated, are the unsharded
output byte for byte (labels, votes, probabilities, hashed codes); only the
first shard writes a scores header; messages keep the file's line numbers;
compressed input, stdin and bad shard specs are refused with exit 2."""
import gzip
import io
import json

import numpy as np
import pytest

from hsvm_cli.io.shard import ByteRange
from hsvm_cli.models.calibration import load_calibration
from hsvm_cli.models.codes import hash_data, read_codes
from hsvm_cli.models.hashed import load_hash_model
from hsvm_cli.models.ovo import load_model
from hsvm_cli.predict.predictor import Predictor

from conftest import REPO, run, write_text

FIX = REPO / "tests" / "fixtures" / "release-0.1"
MODEL, HBM, CAL = (str(FIX / n) for n in ("digits.hsvm", "digits.hbm", "digits.cal"))

# Samples of the digits model's classes with few features each, among the
# lines the reader accepts besides: comments, blank and comment-only lines,
# CRLF, qid, and no final newline.
AWKWARD = (
    "# digits, a few features each\n"
    "1 5:1 13:0.5\r\n"
    "\n"
    "7 2:3 9:1 40:2 # trailing comment\n"
    "3 qid:4 20:1\n"
    "   \t\n"
    "10 1:1 64:1\n"
    "# comment only\r\n"
    "5 33:2 34:2\n"
    "2\n"
    "8 10:1 11:1 12:1 50:0.25\n"
    "4 3:1"
)


@pytest.fixture(scope="module")
def predictors():
    model = load_model(MODEL)
    h = load_hash_model(HBM)
    cal = load_calibration(CAL)
    return {
        "exact labels": (Predictor(model), {}),
        "exact votes": (Predictor(model), {"scores": True}),
        "hashed votes": (Predictor(model, h, bits=128, filter_k=3), {"scores": True}),
        "probabilities": (Predictor.from_calibration(model, cal, h), {"proba": True}),
    }


def predict_text(predictor, path, shard=None, **kw):
    out = io.StringIO()
    predictor.predict_file(path, out, shard=shard, **kw)
    return out.getvalue()


@pytest.mark.parametrize("mode", ["exact labels", "exact votes", "hashed votes", "probabilities"])
def test_every_two_way_split_point_concatenates_to_the_unsharded_predictions(predictors, tmp_path, mode):
    path = write_text(tmp_path / "awkward.svm", AWKWARD)
    predictor, kw = predictors[mode]
    whole = predict_text(predictor, path, **kw)
    assert whole.count("\n") == 8 + ("scores" in kw or "proba" in kw)
    size = len(AWKWARD.encode())
    for b in range(size + 1):
        left = predict_text(predictor, path, ByteRange(0, b), **kw)
        right = predict_text(predictor, path, ByteRange(b, size), **kw)
        assert left + right == whole, b


def test_every_two_way_split_point_concatenates_to_the_unsharded_hashed_svm(tmp_path):
    path = write_text(tmp_path / "awkward.svm", AWKWARD)
    h = load_hash_model(HBM)
    hash_data(h, path, tmp_path / "whole", fmt="svm", bits=64)
    whole = (tmp_path / "whole").read_bytes()
    size = len(AWKWARD.encode())
    for b in range(size + 1):
        hash_data(h, path, tmp_path / "l", fmt="svm", bits=64, shard=ByteRange(0, b))
        hash_data(h, path, tmp_path / "r", fmt="svm", bits=64, shard=ByteRange(b, size))
        assert (tmp_path / "l").read_bytes() + (tmp_path / "r").read_bytes() == whole, b


@pytest.mark.parametrize("flags", [[], ["--scores"], ["-H", HBM, "--bits", "128", "-k", "3", "--scores"],
                                   ["-H", HBM, "-C", CAL, "--proba"]])
def test_cli_shards_concatenate_to_the_unsharded_output_for_every_n(tmp_path, flags):
    path = write_text(tmp_path / "awkward.svm", AWKWARD)
    base = ["predict", "-m", MODEL, path, "-q"] + flags
    whole = run(base).stdout
    size = len(AWKWARD.encode())
    # n = size cuts the file at every byte at once
    for n in list(range(1, 8)) + [size]:
        got = "".join(run(base + ["--shard", "%d/%d" % (i, n)]).stdout for i in range(n))
        assert got == whole, n
        if flags and n > 1:
            assert got.count("labels ") == 1   # the header only from shard 0


def test_cli_hash_data_shards_concatenate_svm_and_split_codes(tmp_path):
    path = write_text(tmp_path / "awkward.svm", AWKWARD)
    whole_svm = run(["hash-data", "-H", HBM, path, "--format", "svm", "-q"]).stdout
    run(["hash-data", "-H", HBM, path, "-q", "-o", tmp_path / "whole.codes"])
    whole = read_codes(tmp_path / "whole.codes")
    for n in range(1, 8):
        svm = "".join(run(["hash-data", "-H", HBM, path, "--format", "svm", "-q", "--shard", "%d/%d" % (i, n)]).stdout
                      for i in range(n))
        assert svm == whole_svm, n
        parts = []
        for i in range(n):
            out = tmp_path / ("s%d.codes" % i)
            r = run(["hash-data", "-H", HBM, path, "--shard", "%d/%d" % (i, n), "-o", out])
            parts.append(read_codes(out))
            assert r.stderr.startswith("hsvm: hash-data: shard %d/%d: " % (i, n))
        assert np.array_equal(np.concatenate([p.codes for p in parts]), whole.codes)
        assert np.array_equal(np.concatenate([p.labels for p in parts]), whole.labels)
        assert all(p.meta == whole.meta for p in parts)


def test_shard_codes_serve_the_shards_prediction(tmp_path):
    path = write_text(tmp_path / "awkward.svm", AWKWARD)
    flags = ["-m", MODEL, "-H", HBM, "-k", "2", "-q"]
    run(["hash-data", "-H", HBM, path, "-q", "-o", tmp_path / "all.codes"])
    whole = run(["predict", path, "--codes", tmp_path / "all.codes"] + flags).stdout
    got = ""
    for i in range(3):
        codes = tmp_path / ("s%d.codes" % i)
        run(["hash-data", "-H", HBM, path, "-q", "--shard", "%d/3" % i, "-o", codes])
        got += run(["predict", path, "--shard", "%d/3" % i, "--codes", codes] + flags).stdout
    assert got == whole


def test_eval_of_each_shard_adds_up_to_the_whole_file(tmp_path):
    truth = str(FIX / "test.svm")
    whole = json.loads(run(["eval", "--truth", truth, str(FIX / "exact.scores"), "--json", "--confusion"]).stdout)
    correct, samples, cells = 0, 0, {}
    for i in range(4):
        pred = tmp_path / ("s%d.txt" % i)
        run(["predict", "-m", MODEL, truth, "--shard", "%d/4" % i, "-o", pred, "-q"])
        rep = json.loads(run(["eval", "--truth", truth, pred, "--shard", "%d/4" % i, "--json", "--confusion"]).stdout)
        correct += rep["correct"]
        samples += rep["samples"]
        for a, row in zip(rep["labels"], rep["confusion"]):
            for b, v in zip(rep["labels"], row):
                cells[a, b] = cells.get((a, b), 0) + v
    assert (correct, samples) == (whole["correct"], whole["samples"]) == (whole["correct"], 120)
    assert cells == {(a, b): v for a, row in zip(whole["labels"], whole["confusion"])
                     for b, v in zip(whole["labels"], row) if v or (a, b) in cells}


@pytest.mark.parametrize("flag", ["--scores", "--proba"])
def test_eval_of_a_later_shards_scores_counts_its_labels(tmp_path, flag):
    # Only shard 0's part carries the 'labels' header: a later part's labels
    # are evaluated, and the report says why its scores are not.
    truth = str(FIX / "test.svm")
    correct = 0
    for i in range(3):
        pred = tmp_path / ("s%d.txt" % i)
        run(["predict", "-q", "-m", MODEL, "-H", HBM, "-C", CAL, flag, truth, "--shard", "%d/3" % i, "-o", pred])
        rep = json.loads(run(["eval", "--truth", truth, pred, "--shard", "%d/3" % i, "--json"]).stdout)
        correct += rep["correct"]
        assert ("scores_not_evaluated" in rep["predictions"]) == (i > 0)
    parts = "".join((tmp_path / ("s%d.txt" % i)).read_text() for i in range(3))
    whole = json.loads(run(["eval", "--truth", truth, "-", "--json"], input=parts).stdout)
    assert correct == whole["correct"]
    text = run(["eval", "--truth", truth, tmp_path / "s2.txt", "--shard", "2/3"]).stdout
    assert "scores               not evaluated: shard 2/3's scores have no 'labels' header" in text
    r = run(["eval", "--truth", truth, tmp_path / "s1.txt", "--shard", "1/3", "--proba"], exit_code=2)
    assert "--proba: shard 1/3's part of the output has no 'labels' header" in r.stderr
    # without --shard such a file is still refused: its lines are not labels
    r = run(["eval", "--truth", truth, tmp_path / "s1.txt"], exit_code=65)
    assert "without a 'labels c1 c2 ...' header line" in r.stderr
    # a later shard's lines are still checked as scores: numbers, finite, one width
    for text, why in (("2 nan 0.5\n", "not finite"), ("2 1:0.5 3:1\n", "is not a number"),
                      ("2 0.5 0.5\n2 0.5\n", "2 fields where the first line had 3")):
        bad = write_text(tmp_path / "bad.txt", text)
        r = run(["eval", "--truth", truth, bad, "--shard", "1/3"], exit_code=65)
        assert why in r.stderr, r.stderr


def test_eval_of_a_shard_names_the_shard_when_counts_differ(tmp_path):
    truth = str(FIX / "test.svm")
    pred = tmp_path / "s0.txt"
    run(["predict", "-m", MODEL, truth, "--shard", "0/4", "-o", pred, "-q"])
    r = run(["eval", "--truth", truth, pred, "--shard", "1/4"], exit_code=None)
    if r.exit_code:  # shard 1 may have as many samples as shard 0
        assert "(shard 1/4)" in r.stderr


def test_an_error_in_a_late_shard_names_the_files_line(tmp_path):
    lines = ["%d 1:%d" % (k % 10 + 1, k) for k in range(60)]
    lines[47] = "3 5:1 4:1"
    path = write_text(tmp_path / "bad.svm", "\n".join(lines) + "\n")
    statuses = [run(["predict", "-m", MODEL, path, "--shard", "%d/5" % i, "-q"], exit_code=None) for i in range(5)]
    failed = [r for r in statuses if r.exit_code]
    assert len(failed) == 1 and failed[0] is not statuses[0]
    assert failed[0].exit_code == 65
    assert failed[0].stderr == "hsvm: %s:48: index 4 after 5: indices must be increasing\n" % path


@pytest.mark.parametrize("cmd", [["predict", "-m", MODEL], ["hash-data", "-H", HBM], ["eval", "--truth"]])
def test_compressed_input_is_refused_with_the_remedy(tmp_path, cmd):
    gz = tmp_path / "t.svm.gz"
    gz.write_bytes(gzip.compress(AWKWARD.encode()))
    args = cmd + [gz] + ([gz] if cmd[0] == "eval" else []) + ["--shard", "1/2"]
    r = run(args, exit_code=2)
    assert r.stderr == ("hsvm %s: %s: gzip-compressed input cannot be split into byte-range shards (decompression "
                        "cannot start mid-stream); shard by file instead (one file per task; predict --dask takes "
                        "a directory or a quoted glob of them), or read the whole input in one process "
                        "(see 'hsvm %s --help')\n" % (cmd[0], gz, cmd[0]))


@pytest.mark.parametrize("cmd", [["predict", "-m", MODEL], ["hash-data", "-H", HBM, "--format", "svm"]])
def test_shard_0_of_1_reads_a_compressed_file_or_stdin_whole(tmp_path, cmd):
    # one task of one: nothing to split, so any input will do (a job array of one fed a .gz file)
    gz = tmp_path / "t.svm.gz"
    gz.write_bytes(gzip.compress(AWKWARD.encode()))
    whole = run(cmd + [gz, "-q", "-o", "-"]).stdout
    assert whole and run(cmd + [gz, "-q", "--shard", "0/1", "-o", "-"]).stdout == whole
    assert run(cmd + ["-", "-q", "--shard", "0/1", "-o", "-"], input=AWKWARD).stdout == whole


def test_stdin_and_bad_specs_are_refused_with_exit_2(tmp_path, monkeypatch):
    r = run(["predict", "-m", MODEL, "-", "--shard", "0/2"], exit_code=2, input=AWKWARD)
    assert "standard input and open streams cannot be split" in r.stderr
    path = write_text(tmp_path / "a.svm", AWKWARD)
    for spec, words in (("2/2", "shards count from 0"), ("1", "expected i/N"), ("0/0", "at least 1"),
                        ("slurm", "SLURM_ARRAY_TASK_ID is not set")):
        monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
        r = run(["predict", "-m", MODEL, path, "--shard", spec], exit_code=2)
        assert "Invalid value for '--shard'" in r.stderr and words in r.stderr


def test_shard_slurm_reads_the_array_task(tmp_path, monkeypatch):
    path = write_text(tmp_path / "a.svm", AWKWARD)
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "3")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "1")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MAX", "3")
    assert run(["predict", "-m", MODEL, path, "--shard", "slurm", "-q"]).stdout == \
        run(["predict", "-m", MODEL, path, "--shard", "2/3", "-q"]).stdout


def test_the_example_job_scripts_take_arrays_that_start_at_one(tmp_path):
    # examples/slurm run as array tasks 1-3 (SLURM_ARRAY_TASK_MIN=1): the
    # parts are 0..2 and merge into the single run's model; the raw task id
    # given as i/N had failed at 3/3 (and named parts 1..3, which
    # merge.sbatch does not look for)
    import os
    import subprocess
    import sys
    train = tmp_path / "train.svm"
    train.write_bytes(gzip.decompress((REPO / "data" / "digits" / "train.svm.gz").read_bytes()))
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], HSVM="hsvm", TRAIN="train.svm",
               WORK=".", TRAIN_OPTIONS="-c 0.5 --seed 3 -q", SLURM_ARRAY_TASK_MIN="1", SLURM_ARRAY_TASK_MAX="3",
               SLURM_ARRAY_TASK_COUNT="3", SLURM_ARRAY_TASK_STEP="1")
    for task in (1, 2, 3):
        subprocess.run(["bash", str(REPO / "examples" / "slurm" / "train.sbatch")], cwd=tmp_path, check=True,
                       env=dict(env, SLURM_ARRAY_TASK_ID=str(task)), timeout=300)
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["part.0", "part.1", "part.2"]
    subprocess.run(["bash", str(REPO / "examples" / "slurm" / "merge.sbatch")], cwd=tmp_path, check=True,
                   env=dict(env, N_BLOCKS="3", MODEL="./model.hsvm"), timeout=300)
    run(["train-ovo", train, "-c", "0.5", "--seed", "3", "-q", "-o", tmp_path / "single.hsvm"])
    assert load_model(tmp_path / "model.hsvm").content_sha256() == \
        load_model(tmp_path / "single.hsvm").content_sha256()
