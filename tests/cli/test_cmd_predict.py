import gzip
import json

import pytest

from hsvm_cli.errors import ModelFormatError
from hsvm_cli.models.hashed import load_hash_model

from conftest import BUNDLED, DIGITS_TEST, TOY, run, write_text


def test_cli_hashed_prediction_with_k_equal_K_matches_exact(digits_files):
    model, hbm, _ = digits_files
    exact = run(["predict", "--exact", "-m", model, DIGITS_TEST, "-q"]).stdout
    hashed = run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "10", DIGITS_TEST, "-q"]).stdout
    assert hashed == exact


def test_cli_codes_file_gives_the_same_predictions_as_hashing_on_the_fly(digits_files):
    model, hbm, d = digits_files
    codes = str(d / "t.codes")
    run(["hash-data", "-H", hbm, DIGITS_TEST, "-o", codes])
    a = run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", DIGITS_TEST, "-q"]).stdout
    b = run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", "--codes", codes, DIGITS_TEST, "-q"]).stdout
    c = run(["predict", "-m", model, "-H", hbm, "--bits", "256", "--no-refine", "--codes", codes, "-q"]).stdout
    d1 = run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "1", DIGITS_TEST, "-q"]).stdout
    assert a == b and c == d1 and len(a.splitlines()) == 450


def test_codes_of_another_file_with_as_many_rows_are_refused(digits_files, tmp_path):
    model, hbm, _ = digits_files
    with gzip.open(DIGITS_TEST, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    shuffled = write_text(tmp_path / "other.svm", b"".join(lines[1:] + lines[:1]))
    codes = str(tmp_path / "other.codes")
    run(["hash-data", "-H", hbm, shuffled, "-o", codes])
    out = tmp_path / "p.txt"
    r = run(["predict", "-m", model, "-H", hbm, "--codes", codes, DIGITS_TEST, "-o", out], exit_code=65)
    first, second = lines[0].split()[0].decode(), lines[1].split()[0].decode()
    assert r.stderr == ("hsvm: sample 1 of the input has label %s where its code in %s has label %s: the codes "
                        "were made from another file, or from more of it than this input (a shard's codes come "
                        "from hash-data --shard)\n" % (first, codes, second))
    assert not out.exists()


def test_cli_hashed_timings_report_phases_and_refined_classes(digits_files):
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "-k", "4", DIGITS_TEST, "--timings", "-q"])
    import json
    t = json.loads(r.stderr.strip().splitlines()[-1])
    assert {"hash", "filter", "refine", "parse"} <= set(t) and t["mean_refined_classes"] == 4
    assert t["refine_rule"] == "vote" and t["bits"] == 512 and t["filter_k"] == 4
    r = run(["predict", "-m", model, "--first-stage", "scores", "-k", "3", "--refine", "dag", DIGITS_TEST,
             "--timings", "-q"])
    t = json.loads(r.stderr.strip().splitlines()[-1])
    assert t["refine_rule"] == "dag" and t["first_stage"] == "scores" and t["bits"] is None
    assert "hash" not in t and {"filter", "refine"} <= set(t)      # the class scores hash nothing


def test_cli_rejects_bits_beyond_the_hash_model(digits_files):
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "--bits", "1024", DIGITS_TEST], exit_code=2)
    assert "multiple of 64" in r.stderr


def test_cli_refuses_mismatched_model_and_hash_model(digits_files, tmp_path):
    model, hbm, _ = digits_files
    other = tmp_path / "o.hsvm"
    run(["train-ovo", str(BUNDLED / "digits" / "train.svm.gz"), "-c", "0.3", "-o", str(other), "-q"])
    r = run(["predict", "-m", str(other), "-H", hbm, DIGITS_TEST], exit_code=65)
    assert "was made from another model" in r.stderr


def test_damaged_hash_model_is_refused(digits_files, tmp_path):
    _, hbm, _ = digits_files
    bad = tmp_path / "bad.hbm"
    bad.write_bytes(open(hbm, "rb").read()[:-8])
    with pytest.raises(ModelFormatError):
        load_hash_model(bad)




def test_train_predict_eval_round_trip_on_a_separable_toy(toy_model, tmp_path):
    train, model = toy_model
    r = run(["predict", "--exact", "-m", model, train, "-q"])
    assert r.stdout == "1\n1\n2\n2\n3\n3\n"
    preds = write_text(tmp_path / "p.txt", r.stdout)
    r = run(["eval", "--truth", train, preds, "--json"])
    report = json.loads(r.stdout)
    assert report["accuracy"] == 1.0 and report["samples"] == 6 and report["macro_f1"] == 1.0


def test_predict_prints_accuracy_on_stderr_like_svm_predict(toy_model):
    train, model = toy_model
    r = run(["predict", "-m", model, train])
    assert "Accuracy = 100% (6/6) (classification)" in r.stderr


def test_placeholder_labels_give_no_accuracy_line(toy_model, tmp_path):
    _, model = toy_model
    unlabelled = write_text(tmp_path / "u.svm", "0 1:1 2:0.1\n0 2:1\n")
    r = run(["predict", "-m", model, unlabelled])
    assert r.stdout == "1\n3\n" and "Accuracy" not in r.stderr


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


def test_timings_name_the_native_code_path_that_ran(toy_model, monkeypatch):
    from hsvm_cli.support.kernels import available_kernels
    train, model = toy_model
    assert json.loads(run(["predict", "-m", model, train, "--timings", "-q"]).stderr)["kernel"] == \
        available_kernels()[-1]
    monkeypatch.setenv("HSVM_KERNEL", "portable")
    assert json.loads(run(["predict", "-m", model, train, "--timings", "-q"]).stderr)["kernel"] == "portable"


def test_predict_eval_pipeline_through_stdin(digits_model_file):
    r = run(["predict", "-m", str(digits_model_file), DIGITS_TEST, "-q"])
    r2 = run(["eval", "--truth", DIGITS_TEST, "-", "--confusion"], input=r.stdout)
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
    r = run(["predict", "-m", model, src, "-o", str(out)], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:%d: " % (src, line))
    assert reason in r.stderr and r.stderr.count("\n") == 1
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.svm"]


def test_missing_input_exits_66(toy_model, tmp_path):
    _, model = toy_model
    r = run(["predict", "-m", model, str(tmp_path / "nope.svm")], exit_code=66)
    assert "nope.svm" in r.stderr


def test_damaged_model_exits_65_naming_the_file(tmp_path, toy_model):
    train, model = toy_model
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(open(model, "rb").read()[:-5])
    r = run(["predict", "-m", str(bad), train], exit_code=65)
    assert str(bad) in r.stderr and "Traceback" not in r.stderr


def test_features_beyond_the_model_are_an_error_or_ignored(toy_model, tmp_path):
    _, model = toy_model
    src = write_text(tmp_path / "wide.svm", "1 1:1 5:3\n")
    run(["predict", "-m", model, src], exit_code=65)
    r = run(["predict", "-m", model, src, "--extra-features", "ignore", "-q"])
    assert r.stdout == "1\n"


def test_missing_model_exits_66(tmp_path, toy_model):
    train, _ = toy_model
    r = run(["predict", "-m", str(tmp_path / "nope.hsvm"), train], exit_code=66)
    assert r.stderr == "hsvm: %s: no such file\n" % (tmp_path / "nope.hsvm")


def test_no_refine_with_a_k_that_would_refine_is_a_usage_error(digits_files):
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "--no-refine", "-k", "5", DIGITS_TEST], exit_code=2)
    assert "--no-refine predicts the filter's best class; -k 5 would refine 5 classes" in r.stderr
    one = run(["predict", "-q", "-m", model, "-H", hbm, "--no-refine", "-k", "1", DIGITS_TEST]).stdout
    assert one == run(["predict", "-q", "-m", model, "-H", hbm, "--no-refine", DIGITS_TEST]).stdout


def test_no_refine_refuses_what_it_cannot_mean(digits_files, tmp_path):
    model, hbm, _ = digits_files
    for extra, words in ((["--exact"], "not --exact"), (["--dag"], "not --dag"),
                         (["-H", hbm, "--refine", "dag"], "--refine dag does not apply"),
                         (["-H", hbm, "--filter-threshold", "0.1"], "does not combine with --no-refine")):
        r = run(["predict", "-m", model, "--no-refine", DIGITS_TEST] + extra, exit_code=2, stdout="")
        assert words in r.stderr, r.stderr
    r = run(["predict", "-m", model, "--bits", "256", DIGITS_TEST], exit_code=2, stdout="")
    assert "--bits needs a first stage (-H): none was given" in r.stderr


@pytest.mark.parametrize("args, line", [
    # the option given is named, and why there is no first stage
    (["--no-refine"], "--no-refine needs a first stage (-H, or --first-stage scores): none was given"),
    (["-k", "3"], "-k needs a first stage (-H, or --first-stage scores): none was given"),
    (["--exact", "-k", "3"], "-k needs a first stage (-H, or --first-stage scores): --exact and --dag are exact "
                             "prediction"),
    (["--dag", "-k", "2"], "-k needs a first stage (-H, or --first-stage scores): --exact and --dag are exact "
                           "prediction"),
    # -H given with --exact: the conflict is --exact (the library's words asked for -H)
    (["-H", "HBM", "--exact", "--codes", "CODES"], "--codes (a hash model's codes) are for the hash filter: --exact "
                                                  "and --dag are exact prediction"),
    (["--codes", "CODES"], "--codes (a hash model's codes) are for the hash filter: give its hash model with -H"),
])
def test_an_option_that_needs_a_first_stage_is_named_when_there_is_none(digits_files, tmp_path, args, line):
    model, hbm, _ = digits_files
    args = [str(tmp_path / "c.codes") if a == "CODES" else hbm if a == "HBM" else a for a in args]
    r = run(["predict", "-m", model, DIGITS_TEST] + args, exit_code=2, stdout="")
    assert r.stderr.startswith("hsvm predict: %s" % line), r.stderr


def test_threshold_refusals_say_what_it_needs(digits_files, tmp_path):
    model, hbm, _ = digits_files
    cal = str(tmp_path / "d.cal")
    run(["calibrate", "-q", "-m", model, "-H", hbm, DIGITS_TEST, "--repeat", "1", "-o", cal])
    r = run(["predict", "-m", model, "-C", cal, "--filter-threshold", "0.01", DIGITS_TEST], exit_code=2, stdout="")
    # calibrate's choice follows its timings: when it chose a hashed setting,
    # that setting's own need for -H is named first
    assert ("--filter-threshold needs the hash filter (-H)" in r.stderr
            or "the calibration chose hash filtering: give the hash model with -H" in r.stderr), r.stderr
    # -k 1 keeps one class, as --no-refine: a threshold has nothing to choose from (it was ignored)
    r = run(["predict", "-m", model, "-C", cal, "-H", hbm, "-k", "1", "--filter-threshold", "0.01", DIGITS_TEST],
            exit_code=2, stdout="")
    assert "with -k 1 or --no-refine there is only the first stage's best class" in r.stderr
    # a threshold given: --proba follows it, with no note about the calibration's own setting
    r = run(["predict", "-m", model, "-C", cal, "-H", hbm, "--filter-threshold", "0.01", "--proba", DIGITS_TEST])
    assert "--proba runs" not in r.stderr
    # without -k the refine is sized for all K: said, with what to give
    assert "--filter-threshold without -k may keep all 10 classes, so the refine scores every classifier" in r.stderr
    r = run(["predict", "-m", model, "-C", cal, "-H", hbm, "--filter-threshold", "0.01", "-k", "3", DIGITS_TEST])
    assert "without -k" not in r.stderr


def test_an_unused_hash_model_beside_class_scores_is_noted(digits_model, digits_files, tmp_path):
    from hsvm_cli.models.hashed import hash_model, save_hash_model
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "--first-stage", "scores", DIGITS_TEST])
    assert r.stderr.startswith("hsvm: predict: --first-stage scores does not use -H %s" % hbm)
    with_summaries = str(tmp_path / "s.hbm")        # one made with the class summaries serves them
    save_hash_model(hash_model(digits_model, bits=64, seed=0, class_scores=True), with_summaries)
    r = run(["predict", "-m", model, "-H", with_summaries, "--first-stage", "scores", DIGITS_TEST])
    assert "does not use -H" not in r.stderr


def test_a_k_beyond_the_classes_keeps_them_all_and_says_so(digits_files):
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "-k", "11", DIGITS_TEST])
    assert r.stderr.splitlines()[0] == "hsvm: predict: -k 11 is more than the model's 10 classes: all are kept"
    assert r.stdout == run(["predict", "-m", model, "--exact", DIGITS_TEST, "-q"]).stdout


def test_timings_report_the_setup_apart_and_the_projection_in_hash(digits_files, monkeypatch):
    # A projection derived from its seed on first use (a second or more at
    # large d and D) is hashing's time, not time outside every phase.
    import json
    import time

    from hsvm_cli.models.hashed import HashModel
    model, hbm, _ = digits_files
    derive = HashModel.encoder

    def slow_encoder(self, bits=None):
        time.sleep(0.3)
        return derive(self, bits)

    monkeypatch.setattr(HashModel, "encoder", slow_encoder)
    r = run(["predict", "-m", model, "-H", hbm, "-k", "3", DIGITS_TEST, "--timings", "-q"])
    t = json.loads(r.stderr.strip().splitlines()[-1])
    assert list(t)[0] == "setup" and t["setup"] > 0
    phases = [k for k in ("parse", "normalise", "hash", "filter", "refine", "write")]
    assert abs(t["total"] - sum(t[k] for k in phases)) < 1e-5 and t["hash"] >= 0.3


def test_codes_of_fewer_bits_are_voted_at_the_bits_they_hold(digits_files, tmp_path):
    model, hbm, _ = digits_files          # a 512-bit hash model
    codes = tmp_path / "c.codes"
    run(["hash-data", "-H", hbm, "--bits", "256", DIGITS_TEST, "-o", codes, "-q"])
    by_codes = run(["predict", "-m", model, "-H", hbm, "--codes", codes, "-k", "3", DIGITS_TEST, "-q"]).stdout
    assert by_codes == run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", DIGITS_TEST, "-q"]).stdout
    r = run(["predict", "-m", model, "-H", hbm, "--codes", codes, "--bits", "512", "-k", "3", DIGITS_TEST],
            exit_code=65)
    assert "codes have 256 bits, 512 requested" in r.stderr


def test_a_refusal_found_after_a_notice_is_still_one_line(digits_files, tmp_path):
    # -k above K is said, but only once the work is done: the refusal below
    # comes later and must stay the only line
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "-H", hbm, "-k", "15", "-o", tmp_path / "p.txt"], exit_code=2)
    assert len(r.stderr.splitlines()) == 1 and "missing TEST" in r.stderr, r.stderr
    r = run(["predict", "-m", model, "-H", hbm, "-k", "15", DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert "-k 15 is more than the model's 10 classes: all are kept" in r.stderr


@pytest.mark.parametrize("first", [["--exact"], ["--dag"]])
@pytest.mark.parametrize("rule", ["vote", "dag"])
def test_refine_rules_do_not_apply_to_exact_prediction(digits_files, tmp_path, first, rule):
    model, _, _ = digits_files
    r = run(["predict", "-m", model] + first + ["--refine", rule, DIGITS_TEST, "-o", tmp_path / "p.txt"],
            exit_code=2)
    assert len(r.stderr.splitlines()) == 1 and "refines nothing" in r.stderr
    assert not (tmp_path / "p.txt").exists()


def test_exact_prediction_says_it_does_not_use_a_hash_model(digits_files, tmp_path):
    model, hbm, _ = digits_files
    r = run(["predict", "-m", model, "--exact", "-H", hbm, DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert "--exact does not use -H %s (not read)" % hbm in r.stderr


def test_proba_says_which_path_runs_when_the_calibration_chose_another(digits_files, tmp_path):
    # Probabilities are calibrated on the hash votes' path: a calibration that
    # chose class scores gives --proba from the hash filter, and says so.
    from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration

    from conftest import DIGITS_TEST
    model, hbm, _ = digits_files
    cal = tmp_path / "c.cal"
    run(["calibrate", "-q", "-m", model, "-H", hbm, DIGITS_TEST, "-o", cal, "--repeat", "1"])
    c = load_calibration(str(cal))
    c.setting = Setting("scores", k=3)
    save_calibration(c, str(cal))
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--proba", DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert "hsvm: predict: --proba runs the hash filter at 512 bits, k = " in r.stderr
    assert "not the calibration's chosen class-score setting" in r.stderr
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, DIGITS_TEST, "-o", tmp_path / "l.txt"])
    assert "--proba runs" not in r.stderr


def test_proba_says_what_it_runs_instead_of_a_dag_or_unrefined_setting(digits_files, tmp_path):
    from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration

    from conftest import DIGITS_TEST
    model, hbm, _ = digits_files
    cal = tmp_path / "c.cal"
    run(["calibrate", "-q", "-m", model, "-H", hbm, DIGITS_TEST, "-o", cal, "--repeat", "1"])
    c = load_calibration(str(cal))
    c.setting = Setting("exact", rule="dag")
    save_calibration(c, str(cal))
    r = run(["predict", "-m", model, "-C", cal, "--proba", DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert "--proba gives exact probabilities and their most probable classes, not the calibration's chosen " \
           "exact DAG's labels" in r.stderr
    assert "exact DAG" not in run(["predict", "-m", model, "-C", cal, DIGITS_TEST, "-o", tmp_path / "l.txt"]).stderr
    # --no-refine: the filter's own labels, not "refined by votes"
    c.setting = Setting("scores", k=3)
    save_calibration(c, str(cal))
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--proba", "--no-refine", DIGITS_TEST,
             "-o", tmp_path / "p.txt"])
    assert "k = 1, not refined (--no-refine)" in r.stderr and "refined by votes" not in r.stderr


def test_an_hsvm_binary_file_given_as_samples_is_named_by_its_kind(digits_files, tmp_path):
    # `predict -m M CODES` for `--codes CODES`: the file's kind, not its bytes as a label
    model, hbm, _ = digits_files
    codes = str(tmp_path / "t.codes")
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes])
    run(["predict", "-m", model, "-H", hbm, codes], exit_code=65, stdout="",
        stderr="hsvm: %s:1: an hsvm codes file, not svmlight text (codes are given to predict --codes, train-ovo "
               "--codes or fit-circulant --targets)\n" % codes)
    run(["predict", "-m", model, hbm], exit_code=65, stdout="",
        stderr="hsvm: %s:1: an hsvm hash-model file, not svmlight text\n" % hbm)
    # a CR among the binary bytes of its first "line" is no sign of old Mac line ends
    import struct
    raw = open(hbm, "rb").read()
    at = 8 + struct.unpack("<Q", raw[:8])[0]
    assert b"\n" not in raw[:at]
    with_cr = str(tmp_path / "cr.hbm")
    with open(with_cr, "wb") as fh:
        fh.write(raw[:at] + b"\r\x00" + raw[at:])
    run(["predict", "-m", model, with_cr], exit_code=65, stdout="",
        stderr="hsvm: %s:1: an hsvm hash-model file, not svmlight text\n" % with_cr)
    run(["train-ovo", "-q", model, "-o", str(tmp_path / "m.hsvm")], exit_code=65,
        stderr="hsvm: %s:1: an hsvm model file, not svmlight text\n" % model)
    # and as predictions or a reference to eval
    for args in (["eval", "--truth", DIGITS_TEST, hbm], ["eval", "--truth", DIGITS_TEST, codes, "--reference", model]):
        run(args, exit_code=65, stdout="", stderr="hsvm: %s:1: an hsvm %s file, not predictions\n"
            % ((hbm, "hash-model") if args[3] == hbm else (codes, "codes")))


def test_codes_with_a_calibration_that_chose_no_filter_say_to_ask_for_it(digits_files, tmp_path):
    # -H is given: the calibration's chosen setting (exact here) has no filter
    model, hbm, _ = digits_files
    cal, codes = str(tmp_path / "c.cal"), str(tmp_path / "t.codes")
    run(["calibrate", "-q", "-m", model, "-H", hbm, DIGITS_TEST, "-o", cal, "--repeat", "1", "--bits", "64",
         "--k", "1", "--max-loss", "0", "--confidence", "0", "--first-stages", "votes"])
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes])
    # without -H nothing makes a first stage: the options that shape one say so
    for extra in (["--no-refine"], ["--refine", "vote"], ["--refine", "dag"]):
        r = run(["predict", "-m", model, "-C", cal, DIGITS_TEST] + extra, exit_code=2)
        assert "%s needs a first stage (-H, or --first-stage scores): the calibration's chosen setting is exact " \
               "prediction" % " ".join(extra) in r.stderr
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--codes", codes, DIGITS_TEST], exit_code=2)
    assert "--codes (a hash model's codes) are for the hash filter, which the calibration's chosen setting does " \
           "not use: add -k or --bits to predict with the filter" in r.stderr
    with_k = run(["predict", "-q", "-m", model, "-H", hbm, "-C", cal, "--codes", codes, "-k", "3", DIGITS_TEST])
    assert with_k.stdout == run(["predict", "-q", "-m", model, "-H", hbm, "-C", cal, "-k", "3", DIGITS_TEST]).stdout


@pytest.mark.parametrize("stage", ["scores", "hashed-scores"])
def test_probabilities_with_a_class_score_first_stage_are_refused_whatever_else_is_given(digits_files, tmp_path,
                                                                                        stage):
    # with -C alone the explicit stage was dropped and exact probabilities ran, silently
    model, hbm, _ = digits_files
    cal = tmp_path / "d.cal"
    run(["calibrate", DIGITS_TEST, "-m", model, "-o", cal, "-q", "--repeat", "1", "--timing-budget", "0"])
    for extra in ([], ["-H", hbm], ["-k", "3"]):
        r = run(["predict", "-m", model, "-C", cal, "--first-stage", stage, "--proba", DIGITS_TEST] + extra,
                exit_code=2)
        assert r.stderr == ("hsvm predict: --proba is calibrated for the vote first stage only: not with "
                            "--first-stage %s (see 'hsvm predict --help')\n" % stage), extra


def test_no_refine_under_a_class_score_calibration_says_what_it_runs(digits_files, tmp_path):
    # --no-refine is -k 1 inside: the note that -H goes unused, and the
    # refusal of exact probabilities without a first stage, had taken it for a
    # -k the user gave
    from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration
    model, hbm, _ = digits_files
    cal = tmp_path / "d.cal"
    run(["calibrate", DIGITS_TEST, "-m", model, "-H", hbm, "-o", cal, "-q", "--repeat", "1", "--timing-budget", "0"])
    c = load_calibration(str(cal))
    c.setting = Setting("scores", None, 3, None, "vote")
    save_calibration(c, str(tmp_path / "s.cal"))
    r = run(["predict", "-m", model, "-C", tmp_path / "s.cal", "-H", hbm, "--no-refine", DIGITS_TEST, "-o",
             tmp_path / "p.txt"])
    assert r.stderr.startswith("hsvm: predict: the calibration chose the class-score first stage, which does not "
                               "use -H "), r.stderr
    r = run(["predict", "-m", model, "-C", tmp_path / "s.cal", "--no-refine", "--proba", DIGITS_TEST], exit_code=2)
    assert r.stderr.startswith("hsvm predict: --no-refine with --proba needs the hash filter (-H)"), r.stderr


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
def test_an_input_without_samples_is_said_to_be_one_and_gives_an_empty_output(digits_files, tmp_path, text):
    model, hbm, _ = digits_files
    empty = write_text(tmp_path / "empty.svm", text)
    out = tmp_path / "out.txt"
    run(["predict", "-m", model, "-H", hbm, "-k", "3", empty, "-o", out], stdout="",
        stderr="hsvm: predict: %s holds no samples: nothing to predict\n" % empty)
    assert out.read_bytes() == b""
    run(["predict", "-q", "-m", model, "--exact", "-", "-o", out], input=text, stdout="", stderr="")


def test_a_one_vs_rest_model_without_a_hash_model_is_pointed_to_minus_h_alone(tmp_path):
    # it has no class-score first stage, which the hint had named too
    from conftest import TOOL_FIXTURES
    ovr = tmp_path / "ovr.hsvm"
    run(["import-model", "-q", str(TOOL_FIXTURES / "liblinear_ovr3.model"), "-o", ovr])
    for extra in (["--no-refine"], ["-k", "2"]):
        r = run(["predict", "-m", ovr, DIGITS_TEST] + extra, exit_code=2)
        assert "needs a first stage (-H): none was given" in r.stderr, r.stderr
