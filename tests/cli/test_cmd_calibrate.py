import json
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

from hsvm_cli.cli.main import cli
from hsvm_cli.models.hashed import hash_model, save_hash_model
from hsvm_cli.models.ovo import save_model

from conftest import BUNDLED, DIGITS_TEST, run


def test_cli_calibrate_then_predict_proba_in_libsvm_layout(digits_model, digits, tmp_path):
    model_p, hbm_p, cal_p = tmp_path / "d.hsvm", tmp_path / "d.hbm", tmp_path / "d.cal"
    save_model(digits_model, model_p)
    save_hash_model(hash_model(digits_model, bits=256, seed=0), hbm_p)
    test = str(BUNDLED / "digits" / "test.svm.gz")
    r = CliRunner().invoke(cli, ["calibrate", "-m", str(model_p), "-H", str(hbm_p), test, "-o", str(cal_p),
                                 "--repeat", "1", "--k", "1,3", "--epsilon", "0.01", "-q"])
    assert r.exit_code == 0, r.output
    assert "chosen" in r.stdout and "times measured on this machine" in r.stdout
    assert not [line for line in r.stdout.splitlines() if line != line.rstrip()]     # no trailing blanks
    # the threshold setting's cap, min(K, max(4, 2 x 3, K/5)) = 6, is said beside the table
    assert "p>E: the classes whose first-stage probability exceeds E, at most 6 a sample" in r.stdout
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "-H", str(hbm_p), "-C", str(cal_p), "--proba",
                                 "-k", "3", test, "-q"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    head = lines[0].split()
    assert head[0] == "labels" and [int(v) for v in head[1:]] == digits_model.classes.tolist()
    assert len(lines) == 451
    for line in lines[1:]:
        tok = line.split()
        assert len(tok) == 11 and int(tok[0]) in digits_model.classes
        assert abs(sum(float(v) for v in tok[1:]) - 1) < 1e-4
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "-C", str(cal_p), "--proba", "--exact", test, "-q"])
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == lines[0]
    # --timings names the probabilities' phase on either path, apart from the others (no double count)
    for extra in (["-H", str(hbm_p), "-k", "3"], ["--exact"]):
        r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "-C", str(cal_p), "--proba", test, "-q",
                                     "--timings", "-o", str(tmp_path / "p.txt")] + extra)
        t = json.loads(r.stderr.splitlines()[-1])
        phases = ("parse", "normalise", "features", "score", "vote", "hash", "filter", "refine", "dag", "proba",
                  "write")
        assert t["proba"] > 0 and abs(sum(t.get(k, 0.0) for k in phases) - t["total"]) < 1e-5, t
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "--proba", test])
    assert r.exit_code == 2 and "-C" in r.stderr


def test_calibrate_without_a_hash_model_gives_exact_probabilities(digits_model_file, tmp_path):
    from conftest import run
    cal = tmp_path / "d.cal"
    r = run(["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", cal, "--repeat", "1", "-q", "--rules", "vote",
             "--first-stages", ""], stderr="")
    lines = r.stdout.splitlines()
    assert lines[1].split()[:2] == ["exact", "-"] and lines[1].endswith("<- chosen")
    assert lines[-2] == ("chosen: exact prediction: no hash model was given (-H) and no other setting was tried, so "
                         "exact is the only setting")
    # how good the exact probabilities are, on rows whose sigmoids were fitted without them
    assert re.match(r"exact probabilities \(predict -C --exact --proba\) on \d+ of the validation samples, whose "
                    r"sigmoids were fitted without them: NLL \d\.\d{3}, ECE 0\.\d{3}, mean top probability "
                    r"0\.\d{3} against \d+\.\d% accuracy of the most probable class$", lines[-1])
    exact = run(["predict", "--exact", "--proba", "-C", cal, "-m", digits_model_file, DIGITS_TEST, "-q"]).stdout
    # The calibration's setting is exact: --exact may be left out.
    run(["predict", "--proba", "-C", cal, "-m", digits_model_file, DIGITS_TEST, "-q"], stdout=exact)
    rows = exact.splitlines()
    assert rows[0] == "labels 1 2 3 4 5 6 7 8 9 10" and len(rows) == 451
    r = run(["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", cal, "--bits", "64"], exit_code=2)
    assert "need a hash model" in r.stderr


def test_calibrate_tries_the_exact_dag_and_class_scores_and_predict_follows_the_choice(digits_model_file, tmp_path):
    from conftest import run
    cal, grid = tmp_path / "d.cal", tmp_path / "g.json"
    r = run(["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", cal, "--repeat", "1", "-q", "-k", "2,4",
             "--grid-json", grid], stderr="")
    modes = [line.split()[0] for line in r.stdout.splitlines()[1:-3]]  # after: accuracy basis, chosen, exact quality
    assert modes == ["exact", "exact+dag", "scores", "scores", "scores+dag"]
    chosen = [line for line in r.stdout.splitlines() if line.endswith("<- chosen")]
    assert len(chosen) == 1
    # predict -C without -H follows the setting (exact, exact DAG or class scores): its accuracy is the grid's
    import json
    rows = json.load(open(grid))["grid"]
    best = [g for g in rows if g["chosen"]][0]
    p = run(["predict", "-C", cal, "-m", digits_model_file, DIGITS_TEST, "--timings"])
    n_right, n = [int(v) for v in p.stderr.split("(")[1].split(")")[0].split("/")]
    assert n_right / n == best["accuracy"]
    # eval draws and tabulates the grid with the new kinds
    t = run(["eval", "--grid", grid])
    assert t.stdout.splitlines()[1].split()[0] == "setting" and " exact dag " in t.stdout


@pytest.mark.parametrize("args, message", [
    (["--rules", "vote,tree"], "rules must be among vote, dag"),
    (["--first-stages", "votes,trees"], "first stages must be among votes, scores"),
])
def test_calibrate_refuses_unknown_rules_and_first_stages(digits_model_file, tmp_path, args, message):
    from conftest import run
    r = run(["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", tmp_path / "d.cal", "-q"] + args, exit_code=2)
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d.cal").exists()


@pytest.mark.parametrize("bits", [["--first-stages", "scores"], ["--bits", "64"]])
def test_a_class_score_setting_with_a_hash_model_gives_probabilities_without_the_full_code(digits_model_file,
                                                                                          tmp_path, bits):
    # The probabilities of a class-score setting come from the hash filter at
    # a calibrated code length, or are exact when none was calibrated; never
    # from the hash model's full D, whose temperature was not fitted.
    import dataclasses

    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration
    from hsvm_cli.models.hashed import load_hash_model
    from hsvm_cli.models.ovo import load_model
    from hsvm_cli.predict.predictor import Predictor

    from conftest import run
    model_path = str(digits_model_file)
    hbm, cal_path = str(tmp_path / "m.hbm"), str(tmp_path / "m.cal")
    run(["hash-model", "-q", "-m", model_path, "--bits", "128", "-o", hbm])
    run(["calibrate", "-q", DIGITS_TEST, "-m", model_path, "-H", hbm, "-o", cal_path, "--repeat", "1",
         "--timing-budget", "0"] + bits)
    cal = load_calibration(cal_path)
    cal.setting = dataclasses.replace(cal.setting, mode="scores", bits=None, k=3, epsilon=None, rule="vote") \
        if cal.setting is not None else Setting("scores", k=3)
    save_calibration(cal, cal_path)
    model, h = load_model(model_path), load_hash_model(hbm)
    X, _ = load_svmlight(DIGITS_TEST, n_features=model.n_features)
    p = Predictor.from_calibration(model, load_calibration(cal_path), h, proba=True)
    assert p.predict_proba(X).shape == (450, 10)
    out = run(["predict", "-q", DIGITS_TEST, "-m", model_path, "-H", hbm, "-C", cal_path, "--proba"]).stdout
    assert out.startswith("labels ") and len(out.splitlines()) == 451
    # without -H: exact probabilities, said (they had run silently)
    r = run(["predict", DIGITS_TEST, "-m", model_path, "-C", cal_path, "--proba", "-o", tmp_path / "p"])
    assert "hsvm: predict: --proba without -H gives exact probabilities and their labels, not the calibration's " \
        "chosen class-score setting" in r.stderr
    assert (tmp_path / "p").read_text() == run(["predict", "-q", DIGITS_TEST, "-m", model_path, "-C", cal_path,
                                                "--proba", "--exact"]).stdout


@pytest.mark.parametrize("label", ["1", "10"])
def test_a_validation_set_of_one_class_is_refused_not_fitted_to_certainty(digits_model_file, tmp_path, label):
    import gzip

    from conftest import run
    with gzip.open(DIGITS_TEST, "rt") as fh:
        rows = [line for line in fh if line.split()[0] == label][:5]
    one = tmp_path / "one.svm"
    one.write_text("".join(rows))
    r = run(["calibrate", "-q", one, "-m", digits_model_file, "-o", tmp_path / "c.cal"], exit_code=65)
    assert r.stderr == ("hsvm: %s: the validation samples are all of class %s: the pairwise sigmoids need samples "
                        "of at least two classes\n" % (one, label))
    assert not (tmp_path / "c.cal").exists()
    other = tmp_path / "other.svm"
    other.write_text("0 1:1\n")
    r = run(["calibrate", "-q", other, "-m", digits_model_file, "-o", tmp_path / "c.cal"], exit_code=65)
    assert r.stderr == "hsvm: %s: no validation label is a class of the model\n" % other
    foreign = tmp_path / "foreign.svm"
    foreign.write_text(rows[0] + "99 1:1\n99 2:1\n")
    r = run(["calibrate", "-q", foreign, "-m", digits_model_file, "-o", tmp_path / "c.cal"], exit_code=65)
    assert r.stderr.endswith("all of class %s (and 2 with labels the model does not have): the pairwise sigmoids "
                             "need samples of at least two classes\n" % label)
    empty = tmp_path / "empty.svm"
    empty.write_text("# comments only\n")
    r = run(["calibrate", "-q", empty, "-m", digits_model_file, "-o", tmp_path / "c.cal"], exit_code=65)
    assert r.stderr == "hsvm: %s: the validation set holds no samples\n" % empty


@pytest.mark.parametrize("option", ["--k", "--bits", "--epsilon"])
def test_an_empty_grid_list_is_a_usage_error(digits_model_file, tmp_path, option):
    from conftest import run
    r = run(["calibrate", DIGITS_TEST, "-m", digits_model_file, "-o", tmp_path / "c.cal", option, ","], exit_code=2)
    assert "got none" in r.stderr


def test_a_refused_proba_writes_nothing_to_stdout(digits_model_file, tmp_path):
    from conftest import run
    cal = tmp_path / "x.cal"
    run(["calibrate", "-q", DIGITS_TEST, "-m", digits_model_file, "-o", cal, "--repeat", "1", "--timing-budget", "0"])
    for extra in (["--first-stage", "scores", "-k", "3"], ["--dag"]):
        r = run(["predict", DIGITS_TEST, "-m", digits_model_file, "--proba", "-C", cal] + extra, exit_code=2)
        assert r.stdout == "" and r.stderr.startswith("hsvm predict: --proba"), extra


def test_no_refine_overrides_a_calibration_that_chose_exact(digits_model_file, tmp_path):
    from conftest import run
    hbm, cal = tmp_path / "m.hbm", tmp_path / "e.cal"
    run(["hash-model", "-q", "-m", digits_model_file, "--bits", "128", "-o", hbm])
    run(["calibrate", "-q", DIGITS_TEST, "-m", digits_model_file, "-H", hbm, "-o", cal, "--repeat", "1",
         "--timing-budget", "0", "--k", "3", "--first-stages", "votes", "--max-loss", "0"])
    want = run(["predict", "-q", DIGITS_TEST, "-m", digits_model_file, "-H", hbm, "-k", "1"]).stdout
    assert run(["predict", "-q", DIGITS_TEST, "-m", digits_model_file, "-H", hbm, "--no-refine", "-C", cal]).stdout \
        == want


def test_both_outputs_or_neither(digits_model_file, tmp_path):
    from conftest import run
    args = ["calibrate", "-m", digits_model_file, DIGITS_TEST, "--repeat", "1", "-q", "--k", "1,3"]
    same = tmp_path / "same"
    r = run(args + ["-o", same, "--grid-json", same], exit_code=2)
    assert "-o and --grid-json name the same file" in r.stderr
    (tmp_path / "link").symlink_to(tmp_path / "target")
    r = run(args + ["-o", tmp_path / "target", "--grid-json", tmp_path / "link"], exit_code=2)
    assert "-o and --grid-json name the same file" in r.stderr
    # a --grid-json that cannot be written fails before the run, and writes no calibration
    r = run(args + ["-o", tmp_path / "c.cal", "--grid-json", tmp_path / "missing" / "g.json"], exit_code=74)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


def test_labels_at_other_bits_than_the_calibrations_need_no_temperature(digits_files, tmp_path):
    from conftest import run
    model, hbm, _ = digits_files
    cal = tmp_path / "c.cal"
    run(["calibrate", "-m", model, "-H", hbm, DIGITS_TEST, "--bits", "128", "--k", "1,3", "--repeat", "1", "-q",
         "-o", cal])
    labels = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--bits", "256", "-k", "3", DIGITS_TEST, "-q"])
    assert labels.stdout == run(["predict", "-m", model, "-H", hbm, "--bits", "256", "-k", "3", DIGITS_TEST,
                                 "-q"]).stdout
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--bits", "256", "-k", "3", "--proba", DIGITS_TEST, "-q"],
            exit_code=2, stdout="")
    assert "first-stage temperatures for 128 bits, not 256" in r.stderr


def test_a_hash_model_the_calibrations_setting_does_not_use_is_named(digits_files, tmp_path):
    from conftest import run
    model, hbm, _ = digits_files
    cal = tmp_path / "c.cal"
    run(["calibrate", "-m", model, DIGITS_TEST, "--first-stages", "", "--rules", "vote", "--repeat", "1", "-q",
         "-o", cal])
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, DIGITS_TEST, "-o", tmp_path / "p"])
    assert "the calibration chose exact prediction, which does not use -H" in r.stderr


def test_validation_labels_the_model_lacks_are_counted_aloud(digits_model_file, tmp_path):
    import gzip

    from conftest import run
    lines = gzip.open(DIGITS_TEST, "rt").read().splitlines()
    lines[:3] = ["42 " + line.split(" ", 1)[1] for line in lines[:3]]
    valid = tmp_path / "v.svm"
    valid.write_text("\n".join(lines) + "\n")
    r = run(["calibrate", "-m", digits_model_file, valid, "--repeat", "1", "--k", "1,3", "-o", tmp_path / "c"])
    assert "3 of 450 validation samples have labels the model lacks (42)" in r.stderr


def test_rules_dag_alone_tries_no_vote_refine_and_predict_dag_overrides_a_hash_setting(digits_files, tmp_path):
    import json

    from conftest import run
    model, hbm, _ = digits_files
    cal, grid = tmp_path / "d.cal", tmp_path / "g.json"
    run(["calibrate", "-m", model, "-H", hbm, DIGITS_TEST, "-o", cal, "--repeat", "1", "-q", "--timing-budget", "0",
         "--rules", "dag", "--first-stages", "votes", "--k", "2,4", "--grid-json", grid])
    rows = json.load(open(grid))["grid"]
    assert {g["rule"] for g in rows if g["mode"] != "exact"} == {"dag"}     # the hash rows: DAG refines only
    # the exact DAG overrides the calibration's setting, as --exact does: no -H needed
    dag = run(["predict", "-q", "-C", cal, "-m", model, "--dag", DIGITS_TEST]).stdout
    assert dag == run(["predict", "-q", "-m", model, "--dag", DIGITS_TEST]).stdout


def test_a_validation_set_missing_classes_is_said(digits_model_file, tmp_path):
    import gzip

    from conftest import run
    with gzip.open(DIGITS_TEST, "rt") as fh:
        rows = [line for line in fh if line.split()[0] in ("1", "2")][:20]
    few = tmp_path / "few.svm"
    few.write_text("".join(rows))
    r = run(["calibrate", few, "-m", digits_model_file, "-o", tmp_path / "c.cal", "--repeat", "1",
             "--timing-budget", "0"])
    assert "the validation samples cover 2 of the model's 10 classes" in r.stderr
    # a warning: said with -q too, alone
    r = run(["calibrate", few, "-q", "-m", digits_model_file, "-o", tmp_path / "c.cal", "--repeat", "1",
             "--timing-budget", "0"])
    assert r.stderr.startswith("hsvm: calibrate: warning: the validation samples cover 2 of the model's 10 classes")
    assert r.stderr.count("\n") == 1


def test_calibrate_reports_how_good_the_chosen_settings_probabilities_are(omniglot, tmp_path):
    # 242 classes: a hash setting is the fastest within the allowed loss
    from hsvm_cli.models.calibration import load_calibration
    from hsvm_cli.models.hashed import hash_model, save_hash_model
    from hsvm_cli.models.ovo import save_model
    model, _, _ = omniglot
    save_model(model, tmp_path / "o.hsvm")
    save_hash_model(hash_model(model, bits=256, seed=0), tmp_path / "o.hbm")
    r = run(["calibrate", "-m", tmp_path / "o.hsvm", "-H", tmp_path / "o.hbm", BUNDLED / "omniglot-242" / "test.svm.gz",
             "-o", tmp_path / "c.cal", "--bits", "256", "--k", "10", "--epsilon", "0.01", "--rules", "vote",
             "--first-stages", "votes", "--max-loss", "100", "--repeat", "1"])
    assert "chosen: hash filter at 256 bits" in r.stdout, r.stdout
    line = next(v for v in r.stdout.splitlines() if v.startswith("its probabilities"))
    nll_, ece = float(line.split("NLL ")[1].split(",")[0]), float(line.split("ECE ")[1].split(",")[0])
    top, acc = float(line.split("probability ")[1].split()[0]), float(line.rsplit(" at ", 1)[1].split("%")[0]) / 100
    # the probabilities' path named: it need not be the chosen setting's
    assert line.startswith("its probabilities (predict -C --proba -H: the hash filter at 256 bits, k = 10, refined "
                           "by votes) on "), line
    assert nll_ > 0 and 0 <= ece <= 1 and 0 < top <= 1
    # said on stderr exactly when confidence and accuracy are ten points apart
    assert ("probabilities are" in r.stderr) == (abs(top - acc) > 0.1), r.stderr
    cal = load_calibration(tmp_path / "c.cal")
    assert np.isfinite(cal.two_stage["mass_shift"])
    q = cal.info["two_stage_quality"]
    assert round(q["ece"], 3) == ece and round(100 * q["accuracy"], 1) == round(100 * acc, 1)


def test_a_refusal_found_during_the_work_is_one_line_after_no_notices(digits_model_file, tmp_path):
    # The notices (classes not covered) wait for the work to succeed, and an
    # output that cannot be written fails before the table is printed.
    import gzip
    lines = [line for line in gzip.open(DIGITS_TEST, "rt") if line.split()[0] in ("1", "2", "3")]
    three = tmp_path / "three.svm"
    three.write_text("".join(lines))
    one = tmp_path / "one.svm"
    one.write_text("".join(line for line in lines if line.startswith("1 ")))
    r = run(["calibrate", "-m", digits_model_file, one, "-o", tmp_path / "c.cal", "--repeat", "1"], exit_code=65)
    assert r.stderr.count("\n") == 1 and "all of class 1" in r.stderr
    r = run(["calibrate", "-m", digits_model_file, three, "-o", tmp_path / "no" / "c.cal", "--repeat", "1"],
            exit_code=74)
    assert r.stdout == "" and r.stderr.count("\n") == 1 and "cannot write" in r.stderr
    r = run(["calibrate", "-m", digits_model_file, three, "-o", tmp_path / "c.cal", "--repeat", "1"])
    assert r.stderr.startswith("hsvm: calibrate: warning: the validation samples cover 3 of the model's 10 classes")
    assert r.stdout.startswith("mode ")


def test_k_values_with_no_first_stage_left_are_noted_as_unused(digits_model_file, tmp_path):
    from conftest import run
    base = ["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", tmp_path / "c.cal", "--repeat", "1",
            "--timing-budget", "0", "--k", "3"]
    r = run(base + ["--first-stages", "votes"])        # votes needs -H: nothing is left for --k
    assert "hsvm: calibrate: --k is unused: no first stage is tried (exact prediction alone)" in r.stderr
    r = run(base + ["--first-stages", "scores"])       # the class scores use it
    assert "--k is unused" not in r.stderr


def test_k_beyond_the_classes_is_tried_as_all_of_them_as_predict_takes_it(digits_model_file, tmp_path):
    from conftest import run
    base = ["calibrate", "-m", digits_model_file, DIGITS_TEST, "-o", tmp_path / "c.cal", "--repeat", "1",
            "--timing-budget", "0", "--first-stages", "scores", "--grid-json", tmp_path / "g.json"]
    r = run(base + ["--k", "3,10,99"])
    assert "hsvm: calibrate: --k 99 is more than the model's 10 classes: tried as 10 (all kept)" in r.stderr
    import json
    ks = sorted({row["k"] for row in json.load(open(tmp_path / "g.json"))["grid"] if row.get("k") is not None})
    assert ks == [3, 10]
    r = run(base + ["--k", "0,3"], exit_code=2)
    assert "every k must be at least 1" in r.stderr


def test_standard_output_named_twice_by_another_name_is_refused(digits_model_file, tmp_path):
    # '-' beside /dev/stdout (or beside the file the shell sent stdout to)
    # mixed the calibration and the grid in one file, or lost one, exit 0
    import subprocess
    import sys
    base = [sys.executable, "-m", "hsvm_cli", "calibrate", "-m", str(digits_model_file), DIGITS_TEST, "-q",
            "--repeat", "1", "--k", "1"]
    z = tmp_path / "z"
    for args in (["-o", "/dev/stdout", "--grid-json", "-"], ["-o", str(z), "--grid-json", "-"],
                 ["-o", "-", "--grid-json", "/dev/fd/1"]):
        with open(z, "wb") as out:
            r = subprocess.run(base + args, stdout=out, stderr=subprocess.PIPE, text=True, timeout=300)
        assert r.returncode == 2, (args, r.stderr)
        assert "name the same file" in r.stderr and z.read_bytes() == b"", args
    # /dev/null may take both
    with open(os.devnull, "wb") as out:
        r = subprocess.run(base + ["-o", os.devnull, "--grid-json", "-"], stdout=out, stderr=subprocess.PIPE,
                           text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_calibrating_on_the_training_file_is_warned_of(tmp_path):
    # its margins are the training samples': overconfident probabilities, an
    # understated loss -- said with -q too, the calibration still written
    from conftest import DIGITS_TRAIN, run
    model = tmp_path / "m.hsvm"
    run(["train-ovo", "-q", DIGITS_TRAIN, "-o", model])
    r = run(["calibrate", "-q", "-m", model, DIGITS_TRAIN, "-o", tmp_path / "c.cal", "--repeat", "1",
             "--timing-budget", "0"])
    assert r.stderr == ("hsvm: calibrate: warning: %s is the file %s was trained on: probabilities fitted on it are "
                        "overconfident and the setting's accuracy loss is understated; give held-out labelled data "
                        "(split some off before training)\n" % (DIGITS_TRAIN, model))
    assert (tmp_path / "c.cal").exists()
    r = run(["calibrate", "-q", "-m", model, DIGITS_TEST, "-o", tmp_path / "d.cal", "--repeat", "1",
             "--timing-budget", "0"])
    assert "trained on" not in r.stderr


def test_a_class_score_setting_names_the_unused_hash_model_with_its_own_k_too(digits_files, tmp_path):
    # -k with a class-score calibration keeps the class scores (its k changed): -H stayed unused
    # without a word, and the note's advice "--bits or -k" would not have switched to the hash filter
    from hsvm_cli.models.calibration import Setting, load_calibration, save_calibration

    from conftest import run
    model, hbm, _ = digits_files
    cal = tmp_path / "c.cal"
    run(["calibrate", "-m", model, DIGITS_TEST, "--first-stages", "", "--rules", "vote", "--repeat", "1", "-q",
         "-o", cal])
    c = load_calibration(cal)
    c.setting = Setting("scores", k=3, rule="vote")
    save_calibration(c, cal)
    note = "the calibration chose the class-score first stage, which does not use -H %s (give --bits for the " \
           "hash filter)" % hbm
    for k in ([], ["-k", "5"]):
        r = run(["predict", "-m", model, "-H", hbm, "-C", cal, *k, DIGITS_TEST, "-o", tmp_path / "p"])
        assert note in r.stderr, r.stderr
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "--bits", "64", DIGITS_TEST, "-o", tmp_path / "p"])
    assert "does not use -H" not in r.stderr
    # --first-stage scores given: its own note only (the calibration's advice of --bits would be refused)
    r = run(["predict", "-m", model, "-H", hbm, "-C", cal, "-k", "5", "--first-stage", "scores", DIGITS_TEST, "-o",
             tmp_path / "p"])
    assert "the calibration chose" not in r.stderr and "--first-stage scores does not use -H" in r.stderr
