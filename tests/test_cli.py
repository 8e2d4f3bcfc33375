import gzip
import json

import numpy as np
import pytest
from click.testing import CliRunner

from hsvm_cli.cli.main import cli
from hsvm_cli.model import load_model

from conftest import BUNDLED, write_text

DIGITS_TRAIN = str(BUNDLED / "digits" / "train.svm.gz")
DIGITS_TEST = str(BUNDLED / "digits" / "test.svm.gz")

TOY = """1 1:1 2:0.1
1 1:0.9 2:-0.2
2 1:-1 2:0.1
2 1:-0.8 2:0.3
3 2:1
3 1:0.1 2:0.9
"""


def run(args, input=None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    train = write_text(d / "toy.svm", TOY)
    model = str(d / "toy.hsvm")
    r = run(["train-ovo", train, "-o", model, "--quiet"])
    assert r.exit_code == 0, r.output
    return train, model


def test_train_predict_eval_round_trip_on_a_separable_toy(toy_model, tmp_path):
    train, model = toy_model
    r = run(["predict", "--exact", "-m", model, train, "-q"])
    assert r.exit_code == 0
    assert r.stdout == "1\n1\n2\n2\n3\n3\n"
    preds = write_text(tmp_path / "p.txt", r.stdout)
    r = run(["eval", "--truth", train, preds, "--json"])
    report = json.loads(r.stdout)
    assert report["accuracy"] == 1.0 and report["samples"] == 6 and report["macro_f1"] == 1.0


def test_predict_prints_accuracy_on_stderr_like_svm_predict(toy_model):
    train, model = toy_model
    r = run(["predict", "-m", model, train])
    assert r.exit_code == 0
    assert "Accuracy = 100% (6/6) (classification)" in r.stderr


def test_placeholder_labels_give_no_accuracy_line(toy_model, tmp_path):
    _, model = toy_model
    unlabelled = write_text(tmp_path / "u.svm", "0 1:1 2:0.1\n0 2:1\n")
    r = run(["predict", "-m", model, unlabelled])
    assert r.exit_code == 0 and r.stdout == "1\n3\n" and "Accuracy" not in r.stderr


def test_scores_output_has_labels_header_and_vote_counts(toy_model):
    train, model = toy_model
    r = run(["predict", "-m", model, train, "--scores", "-q"])
    lines = r.stdout.splitlines()
    assert lines[0] == "labels 1 2 3"
    assert lines[1].split()[:2] == ["1", "2"]  # class 1 wins both of its pairs
    assert all(sum(map(int, l.split()[1:])) == 3 for l in lines[1:])


def test_predict_reads_stdin_and_gzip(toy_model, tmp_path):
    train, model = toy_model
    r = run(["predict", "-m", model, "-", "-q"], input=TOY)
    assert r.stdout == "1\n1\n2\n2\n3\n3\n"
    gz = tmp_path / "toy.svm.gz"
    gz.write_bytes(gzip.compress(TOY.encode()))
    assert run(["predict", "-m", model, str(gz), "-q"]).stdout == r.stdout


def test_timings_is_one_json_line_with_every_phase(toy_model):
    train, model = toy_model
    r = run(["predict", "-m", model, train, "--timings", "-q"])
    t = json.loads(r.stderr.strip().splitlines()[-1])
    assert {"parse", "normalise", "score", "vote", "write", "total"} <= set(t)


def test_predict_eval_pipeline_through_stdin(digits_model_file):
    r = run(["predict", "-m", str(digits_model_file), DIGITS_TEST, "-q"])
    r2 = run(["eval", "--truth", DIGITS_TEST, "-", "--confusion"], input=r.stdout)
    assert r2.exit_code == 0
    assert r2.stdout.startswith("samples              450\naccuracy ")
    assert "confusion matrix" in r2.stdout


@pytest.mark.parametrize("bad, line, reason", [
    ("1 1:1\n2 2:1 1:1\n", 2, "increasing"),
    ("1 1:1\n2 0:1\n", 2, "zero-based"),
    ("1 1:1\n\n2 1:x\n", 3, ""),
    ("1 1:nan\n", 1, "nan"),
])
def test_malformed_input_exits_65_with_file_line_and_no_output(toy_model, tmp_path, bad, line, reason):
    _, model = toy_model
    src = write_text(tmp_path / "bad.svm", bad)
    out = tmp_path / "pred.txt"
    r = run(["predict", "-m", model, src, "-o", str(out)])
    assert r.exit_code == 65
    assert r.stderr.startswith("hsvm: %s:%d: " % (src, line))
    assert reason in r.stderr and r.stderr.count("\n") == 1
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.svm"]


def test_training_on_malformed_input_writes_no_model(tmp_path):
    src = write_text(tmp_path / "bad.svm", "1 1:1\n2 1:1 1:2\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)])
    assert r.exit_code == 65 and not out.exists()
    assert r.stderr.startswith("hsvm: %s:2: " % src)


def test_missing_input_exits_66(toy_model, tmp_path):
    _, model = toy_model
    r = run(["predict", "-m", model, str(tmp_path / "nope.svm")])
    assert r.exit_code == 66 and "nope.svm" in r.stderr


def test_damaged_model_exits_65_naming_the_file(tmp_path, toy_model):
    train, model = toy_model
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(open(model, "rb").read()[:-5])
    r = run(["predict", "-m", str(bad), train])
    assert r.exit_code == 65 and str(bad) in r.stderr and "Traceback" not in r.stderr


def test_features_beyond_the_model_are_an_error_or_ignored(toy_model, tmp_path):
    _, model = toy_model
    src = write_text(tmp_path / "wide.svm", "1 1:1 5:3\n")
    assert run(["predict", "-m", model, src]).exit_code == 65
    r = run(["predict", "-m", model, src, "--extra-features", "ignore", "-q"])
    assert r.exit_code == 0 and r.stdout == "1\n"


def test_eval_refuses_a_prediction_count_mismatch(toy_model, tmp_path):
    train, _ = toy_model
    preds = write_text(tmp_path / "p.txt", "1\n2\n")
    r = run(["eval", "--truth", train, preds])
    assert r.exit_code == 65 and "2 predictions for the 6 samples" in r.stderr


def test_seed_makes_training_byte_identical_across_runs_and_jobs(tmp_path):
    outs = []
    for i, jobs in enumerate(["1", "1", "2"]):
        out = tmp_path / ("m%d.hsvm" % i)
        r = run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "3", "--per-class", "40",
                 "--jobs", jobs, "-q"])
        assert r.exit_code == 0
        outs.append(load_model(out))
    for m in outs[1:]:
        assert np.array_equal(m.W, outs[0].W) and np.array_equal(m.b, outs[0].b)
        assert m.content_sha256() == outs[0].content_sha256()


def test_model_records_provenance_and_parameters(toy_model):
    train, model = toy_model
    m = load_model(model)
    assert m.provenance["train_input"] == train
    assert len(m.provenance["train_sha256"]) == 64
    assert m.provenance["hsvm_version"]
    assert m.params["normalize"] == "l2" and m.normalize == "l2"


def test_version_and_help_exit_zero():
    assert run(["--version"]).exit_code == 0
    for sub in ["train-ovo", "hash-model", "hash-data", "predict", "eval"]:
        assert run([sub, "--help"]).exit_code == 0


def test_training_output_file_is_byte_identical_across_runs_and_jobs(tmp_path):
    out = tmp_path / "m.hsvm"
    blobs = []
    for jobs in ["1", "2", "1"]:
        r = run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "5", "--bags", "3", "--jobs", jobs, "-q"])
        assert r.exit_code == 0
        blobs.append(out.read_bytes())
    assert blobs[0] == blobs[1] == blobs[2]


def test_recorded_command_leaves_out_jobs_and_quiet():
    from hsvm_cli.model import recorded_command
    assert recorded_command(["/x/hsvm", "train-ovo", "a.svm", "-j", "4", "--quiet", "--jobs=2", "-o", "m"]) == \
        "hsvm train-ovo a.svm -o m"


def test_training_on_one_class_exits_65_with_a_clear_message(tmp_path):
    src = write_text(tmp_path / "one.svm", "3 1:1\n3 2:1\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)])
    assert r.exit_code == 65 and not out.exists()
    assert r.stderr == "hsvm: %s: training needs samples of at least two classes, found 1\n" % src


def test_missing_model_exits_66(tmp_path, toy_model):
    train, _ = toy_model
    r = run(["predict", "-m", str(tmp_path / "nope.hsvm"), train])
    assert r.exit_code == 66 and r.stderr == "hsvm: %s: no such file\n" % (tmp_path / "nope.hsvm")
