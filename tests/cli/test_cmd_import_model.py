"""hsvm import-model, and predict / hash-model with imported models: the tools'
labels and accuracy line, one-vs-rest models, LIBSVM probabilities."""
from pathlib import Path

import numpy as np
import pytest

from conftest import TOOL_FIXTURES, run, tool_labels, tool_run, write_text

TEST3 = TOOL_FIXTURES / "digits3.test.svm"


def _expected(name):
    return "".join("%d\n" % v for v in tool_labels(TOOL_FIXTURES / (name + ".pred")))


def test_imported_libsvm_model_predicts_the_fixture_labels(tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["import-model", TOOL_FIXTURES / "libsvm_c3.model", "-o", out], stdout="")
    assert r.stderr.startswith("hsvm: LIBSVM c_svc (label order 7 2 5) -> %s: one-vs-one model, 3 classes, 3 "
                               "pairs, 64 features\n" % out)
    run(["predict", "--exact", "-q", "-m", out, TEST3], stdout=_expected("libsvm_c3"), stderr="")


def test_imported_liblinear_models_predict_the_fixture_labels(tmp_path):
    for name, kind in (("liblinear_ovr3", "one-vs-rest model, 3 classes"),
                       ("liblinear_cs3", "one-vs-rest model, 3 classes"),
                       ("liblinear_bin2", "one-vs-one model, 2 classes, 1 pair")):
        out = tmp_path / (name + ".hsvm")
        r = run(["import-model", TOOL_FIXTURES / (name + ".model"), "-o", out])
        assert kind in r.stderr
        run(["predict", "-q", "-m", out, TEST3], stdout=_expected(name), stderr="")


@pytest.mark.parametrize("train_tool, train_args, predict_tool", [
    ("svm-train", ("-t", "0", "-c", "0.01"), "svm-predict"),
    ("liblinear-train", ("-s", "1", "-c", "0.1"), "liblinear-predict")])
def test_accuracy_line_is_the_tools_to_the_digit(tools, dataset_files, tmp_path, train_tool, train_args,
                                                 predict_tool):
    # svm-predict's line ends "(classification)", liblinear-predict's does not
    train, test = dataset_files("digits")
    model = tmp_path / "m.model"
    tool_run(train_tool, "-q", *train_args, train, model)
    tool_line = tool_run(predict_tool, test, model, tmp_path / "p").strip()
    run(["import-model", "-q", model, "-o", tmp_path / "m.hsvm"])
    r = run(["predict", "--exact", "-m", tmp_path / "m.hsvm", test, "-o", tmp_path / "h"])
    assert tool_line.startswith("Accuracy = ") and r.stderr == tool_line + "\n"
    assert ("classification" in tool_line) == (predict_tool == "svm-predict")
    if predict_tool == "svm-predict":
        assert Path(tmp_path / "h").read_text().split() == Path(tmp_path / "p").read_text().split()


def test_one_vs_rest_model_hashes_and_filters(tmp_path):
    out, hbm = tmp_path / "o.hsvm", tmp_path / "o.hbm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", out])
    run(["hash-model", "-q", "-m", out, "--bits", "256", "-o", hbm])
    exact = run(["predict", "-q", "--exact", "-m", out, TEST3]).stdout
    run(["predict", "-q", "-m", out, "-H", hbm, "-k", "3", TEST3], stdout=exact)
    r = run(["predict", "-q", "-m", out, "-H", hbm, "-k", "1", TEST3, "--timings"])
    assert '"filter_k": 1' in r.stderr
    r = run(["predict", "-q", "-m", out, "-H", hbm, "--proba", TEST3], exit_code=2)
    assert "--proba needs a one-vs-one model" in r.stderr
    scores = run(["predict", "-q", "--exact", "-m", out, "--scores", TEST3]).stdout.splitlines()
    assert scores[0] == "labels 2 5 7" and len(scores[1].split()) == 4


def test_hash_models_of_the_other_decomposition_are_refused_both_ways(tmp_path):
    ovr, ovr_hbm = tmp_path / "o.hsvm", tmp_path / "o.hbm"
    ovo, ovo_hbm = tmp_path / "v.hsvm", tmp_path / "v.hbm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", ovr])
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", ovo])
    for model, hbm in ((ovr, ovr_hbm), (ovo, ovo_hbm)):
        run(["hash-model", "-q", "-m", model, "--bits", "64", "-o", hbm])
    run(["predict", "-q", "-m", ovo, "-H", ovr_hbm, TEST3], exit_code=65,
        stderr="hsvm: %s is a one-vs-rest hash model; a one-vs-one model needs its own (hsvm hash-model -m MODEL)\n"
        % ovr_hbm)
    run(["predict", "-q", "-m", ovr, "-H", ovo_hbm, TEST3], exit_code=65,
        stderr="hsvm: %s is a one-vs-one hash model; a one-vs-rest model needs its own (hsvm hash-model -m MODEL)\n"
        % ovo_hbm)


def test_imported_one_vs_one_model_hashes_and_codes_need_the_samples(tmp_path):
    out, hbm, codes = tmp_path / "m.hsvm", tmp_path / "m.hbm", tmp_path / "t.codes"
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", out])
    run(["hash-model", "-q", "-m", out, "--bits", "512", "--seed", "3", "-o", hbm])
    exact = run(["predict", "-q", "--exact", "-m", out, TEST3]).stdout
    run(["predict", "-q", "-m", out, "-H", hbm, "-k", "3", TEST3], stdout=exact)
    run(["hash-data", "-q", "-H", hbm, TEST3, "-o", codes])
    two = run(["predict", "-q", "-m", out, "-H", hbm, "-k", "2", TEST3]).stdout
    run(["predict", "-q", "-m", out, "-H", hbm, "-k", "2", "--codes", codes, TEST3], stdout=two)
    r = run(["predict", "-q", "-m", out, "-H", hbm, "--no-refine", "--codes", codes], exit_code=2)
    assert "depends on the sample's norm" in r.stderr


def test_libsvm_probabilities_are_written_as_a_calibration(tmp_path):
    out, cal = tmp_path / "m.hsvm", tmp_path / "m.cal"
    # without --calibration the model's probA/probB would be lost: said
    r = run(["import-model", TOOL_FIXTURES / "libsvm_c3.model", "-o", out])
    assert ("hsvm: import-model: note: %s holds probability parameters (probA/probB, svm-train -b 1): --calibration "
            "CALIB keeps them" % (TOOL_FIXTURES / "libsvm_c3.model")) in r.stderr
    assert "note:" not in run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", out]).stderr
    assert "note:" not in run(["import-model", TOOL_FIXTURES / "libsvm_nu3.model", "-o", out]).stderr
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", out, "--calibration", cal])
    lines = run(["predict", "-q", "--exact", "--proba", "-C", cal, "-m", out, TEST3]).stdout.splitlines()
    assert lines[0] == "labels 2 5 7"
    P = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    assert P.shape == (37, 3) and np.allclose(P.sum(axis=1), 1, atol=1e-5)
    r = run(["import-model", "-q", TOOL_FIXTURES / "libsvm_nu3.model", "-o", out, "--calibration", cal],
            exit_code=65)
    assert "has no probability parameters" in r.stderr


def _proba_rows(text):
    lines = text.splitlines()
    rows = [line.split() for line in lines[1:]]
    return lines[0], [int(r[0]) for r in rows], np.array([[float(v) for v in r[1:]] for r in rows])


def _same_as_liblinear(ours, theirs):
    head, labels, P = _proba_rows(ours)
    t_head, t_labels, T = _proba_rows(theirs)
    assert head == t_head and labels == t_labels
    # float32 weights against LIBLINEAR's doubles, each printed to 6 digits
    assert np.abs(P - T).max() <= 2e-6 + 1e-5 * np.abs(T).max()
    assert np.allclose(P.sum(axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("name", ["liblinear_lr3", "liblinear_lr2"])
def test_logistic_regression_models_give_liblinears_probabilities_without_a_calibration(tmp_path, name):
    # lr3: three classes, one-vs-rest; lr2: two classes, one decision value
    out = tmp_path / "m.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / (name + ".model"), "-o", out])
    r = run(["predict", "-q", "--proba", "--class-order", "model", "-m", out, TEST3], stderr="")
    _same_as_liblinear(r.stdout, (TOOL_FIXTURES / (name + ".proba")).read_text())
    # ascending columns by default, the same labels as without --proba
    head, labels, _ = _proba_rows(run(["predict", "-q", "--proba", "-m", out, TEST3]).stdout)
    assert head == ("labels 2 5 7" if name == "liblinear_lr3" else "labels 2 7")
    assert labels == [int(v) for v in run(["predict", "-q", "-m", out, TEST3]).stdout.split()]


@pytest.mark.parametrize("solver", ["0", "6", "7"])
@pytest.mark.parametrize("classes", [None, ("3", "8")])
def test_logistic_probabilities_match_liblinear_predict_b1(tools, dataset_files, tmp_path, solver, classes):
    train, test = dataset_files("digits")
    if classes is not None:             # a two-class model: one decision value
        for path in (train, test):
            kept = [line for line in open(path) if line.split()[0] in classes]
            path2 = tmp_path / Path(path).name
            path2.write_text("".join(kept))
        train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    model = tmp_path / "m.model"
    tool_run("liblinear-train", "-q", "-s", solver, "-B", "1", train, model)
    tool_run("liblinear-predict", "-b", "1", test, model, tmp_path / "p")
    run(["import-model", "-q", model, "-o", tmp_path / "m.hsvm"])
    r = run(["predict", "--proba", "--class-order", "model", "-m", tmp_path / "m.hsvm", test, "-o", tmp_path / "h"])
    assert r.stderr.startswith("Accuracy = ")
    _same_as_liblinear((tmp_path / "h").read_text(), (tmp_path / "p").read_text())


def test_probabilities_of_models_without_them_are_refused_naming_why(tmp_path):
    svm, lr, lr2 = tmp_path / "s.hsvm", tmp_path / "l.hsvm", tmp_path / "l2.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", svm])
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_lr3.model", "-o", lr])
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_lr2.model", "-o", lr2])
    r = run(["predict", "--proba", "-m", svm, TEST3], exit_code=2, stdout="")
    assert "--proba needs a one-vs-one model with a calibration (-C), or a model of LIBLINEAR's logistic " in r.stderr
    assert "is a LIBLINEAR L2R_L2LOSS_SVC_DUAL model" in r.stderr
    run(["hash-model", "-q", "-m", lr, "--bits", "64", "-o", tmp_path / "l.hbm"])
    r = run(["predict", "--proba", "-m", lr, "-H", tmp_path / "l.hbm", TEST3], exit_code=2, stdout="")
    assert "not with the hash filter (drop -H, or give --exact)" in r.stderr
    run(["predict", "-q", "--proba", "--exact", "-m", lr, "-H", tmp_path / "l.hbm", TEST3])
    run(["hash-model", "-q", "-m", lr2, "--bits", "64", "-o", tmp_path / "l2.hbm"])
    r = run(["predict", "--proba", "-m", lr2, "-H", tmp_path / "l2.hbm", TEST3], exit_code=2, stdout="")
    assert "not with -H (drop -H, or give --exact)" in r.stderr
    r = run(["predict", "--proba", "--dag", "-m", lr2, TEST3], exit_code=2, stdout="")
    assert "a LIBLINEAR logistic-regression model, is LIBLINEAR's probability" in r.stderr and "--dag" in r.stderr
    r = run(["import-model", TOOL_FIXTURES / "liblinear_lr2.model", "-o", tmp_path / "x.hsvm", "--calibration",
             tmp_path / "x.cal"], exit_code=65)
    assert "its probabilities need no --calibration; `hsvm predict --proba -m MODEL`" in r.stderr
    assert not (tmp_path / "x.hsvm").exists()


def test_imported_models_ignore_extra_features_as_the_tools_do(tmp_path, toy_model):
    out = tmp_path / "m.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_bin2.model", "-o", out])
    wide = write_text(tmp_path / "wide.svm", "7 1:0.5 900:1\n")
    # liblinear-predict skips feature 900 (beyond nr_feature 64): so does hsvm by default.
    narrow = write_text(tmp_path / "narrow.svm", "7 1:0.5\n")
    same = run(["predict", "-q", "-m", out, narrow]).stdout
    run(["predict", "-q", "-m", out, wide], stdout=same)
    r = run(["predict", "-q", "-m", out, "--extra-features", "error", wide], exit_code=65)
    assert "900" in r.stderr
    _, trained = toy_model
    r = run(["predict", "-q", "-m", trained, wide], exit_code=65)
    assert "900" in r.stderr


def test_a_file_of_neither_tool_names_its_line(tmp_path):
    bad = write_text(tmp_path / "x.model", "hello\n")
    r = run(["import-model", bad, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr == "hsvm: %s:1: not a LIBSVM or LIBLINEAR model file (it starts with 'hello')\n" % bad
    assert not (tmp_path / "m.hsvm").exists()
    # an empty file has no line to name (it was "FILE:0:")
    empty = write_text(tmp_path / "e.model", "")
    r = run(["import-model", empty, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr == "hsvm: %s: empty file: not a LIBSVM or LIBLINEAR model\n" % empty


def test_a_nan_the_training_tool_wrote_is_named_as_such(tmp_path):
    # svm-train -s 1 writes "rho -nan" for a pair its solver could not solve
    text = ("svm_type c_svc\nkernel_type linear\nnr_class 2\ntotal_sv 1\nrho -nan\nlabel 1 2\nnr_sv 1 0\nSV\n"
            "1 1:1\n")
    bad = write_text(tmp_path / "nan.model", text)
    r = run(["import-model", bad, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr.startswith("hsvm: %s:5: rho: value is NaN (the training tool's solve failed there" % bad)
    inf = write_text(tmp_path / "inf.model", text.replace("-nan", "-inf"))
    run(["import-model", "-q", inf, "-o", tmp_path / "m.hsvm"])     # -w1 0 writes -inf: a constant classifier


def test_one_vs_rest_model_refuses_what_is_built_on_pairs(tmp_path):
    out = tmp_path / "o.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", out])
    for extra in (["--dag"], ["--first-stage", "scores"]):
        r = run(["predict", "-q", "-m", out, *extra, TEST3], exit_code=2)
        assert ("%s needs a one-vs-one model (%s is one-vs-rest)" % (extra[0], out)) in r.stderr
    for extra in (["--projection", "circulant"], ["--class-scores"]):
        r = run(["hash-model", "-m", out, *extra, "-o", tmp_path / "o.hbm"], exit_code=2)
        assert "needs a one-vs-one model" in r.stderr and not (tmp_path / "o.hbm").exists()
    # Commands that take one-vs-one files only say what the one-vs-rest file is.
    r = run(["calibrate", "-m", out, TEST3, "-o", tmp_path / "o.cal"], exit_code=65)
    assert r.stderr == ("hsvm: %s: an hsvm ovr-model file, not an hsvm model file (a one-vs-rest model, which "
                        "only predict, hash-model and info take)\n" % out)
    hbm = tmp_path / "o.hbm"
    run(["hash-model", "-q", "-m", out, "--bits", "64", "-o", hbm])
    r = run(["hash-data", "-H", hbm, TEST3, "-o", tmp_path / "t.codes"], exit_code=65)
    assert r.stderr == ("hsvm: %s: an hsvm ovr-hash-model file (a one-vs-rest model's hash model, which only predict "
                        "and info take); -H takes a one-vs-one model's hash model (.hbm), a kernel hash (.khm) or a "
                        "learned circulant hash\n" % hbm)
    assert not (tmp_path / "o.cal").exists() and not (tmp_path / "t.codes").exists()


def test_only_libsvm_models_bring_probability_parameters(tmp_path):
    r = run(["import-model", TOOL_FIXTURES / "liblinear_bin2.model", "-o", tmp_path / "m.hsvm", "--calibration",
             tmp_path / "m.cal"], exit_code=65)
    assert "liblinear_bin2.model is a LIBLINEAR model: only LIBSVM models carry probability parameters" in r.stderr
    assert "fit a calibration with `hsvm calibrate`" in r.stderr
    assert not (tmp_path / "m.hsvm").exists() and not (tmp_path / "m.cal").exists()
    # a one-vs-rest model is not sent to `hsvm calibrate`, which refuses it
    r = run(["import-model", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", tmp_path / "o.hsvm", "--calibration",
             tmp_path / "o.cal"], exit_code=65)
    assert "is a LIBLINEAR one-vs-rest model: it carries no probability parameters" in r.stderr
    assert "hsvm calibrate`) are for one-vs-one models" in r.stderr and not (tmp_path / "o.hsvm").exists()


def test_one_vs_rest_shards_concatenate_to_the_whole_output(tmp_path):
    out = tmp_path / "o.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_ovr3.model", "-o", out])
    whole = run(["predict", "-q", "--scores", "-m", out, TEST3]).stdout
    shards = [run(["predict", "-q", "--scores", "-m", out, "--shard", "%d/3" % i, TEST3]).stdout for i in range(3)]
    assert "".join(shards) == whole and shards[0].startswith("labels ")


def test_hashed_class_scores_are_refused_for_a_model_on_raw_features(tmp_path):
    # The estimate ||u|| cos(angle) + beta is u.x + beta at ||x|| = 1 only.
    out, hbm = tmp_path / "m.hsvm", tmp_path / "m.hbm"
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", out])
    run(["hash-model", "-q", "-m", out, "--bits", "128", "-o", hbm])
    r = run(["predict", "-q", "-m", out, "-H", hbm, "--first-stage", "hashed-scores", TEST3], exit_code=2)
    assert "hashed-scores needs a model on unit-length samples (this one takes them unnormalised: --normalize " \
           "none, or imported)" in r.stderr
    exact = run(["predict", "-q", "--exact", "-m", out, TEST3]).stdout
    run(["predict", "-q", "-m", out, "--first-stage", "scores", "-k", "3", TEST3], stdout=exact)


def test_an_imported_calibration_after_the_hash_filter_is_named_as_libsvms(tmp_path):
    out, cal, hbm = tmp_path / "m.hsvm", tmp_path / "m.cal", tmp_path / "m.hbm"
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "-o", out, "--calibration", cal])
    run(["hash-model", "-q", "-m", out, "--bits", "128", "-o", hbm])
    r = run(["predict", "-q", "-m", out, "-H", hbm, "-C", cal, "-k", "2", "--proba", TEST3], exit_code=2)
    assert "it holds LIBSVM's sigmoids from import-model, for exact prediction" in r.stderr
    assert "(hsvm calibrate -m MODEL -H HBM VALID)" in r.stderr


def test_zero_based_is_for_libsvm_models_and_refused_for_liblinear_ones(tmp_path):
    # LIBLINEAR's weights are of features 1..n: the flag was ignored and not recorded
    out = tmp_path / "o.hsvm"
    r = run(["import-model", TOOL_FIXTURES / "liblinear_lr3.model", "--zero-based", "-o", out], exit_code=2)
    assert "--zero-based is for LIBSVM models" in r.stderr and not out.exists()
    run(["import-model", "-q", TOOL_FIXTURES / "libsvm_c3.model", "--zero-based", "-o", out])
    from hsvm_cli.models.ovo import load_model
    assert load_model(str(out)).provenance["zero_based"] is True


def test_the_one_vs_rest_filter_keeps_tied_classes_in_the_models_tie_order(tmp_path):
    # the fixture's last row is blank and the model has no bias: every class
    # scores 0, and exact prediction (as liblinear-predict) takes the first
    # label of LIBLINEAR's order; ranked by index the filter had dropped it
    out, hbm = tmp_path / "o.hsvm", tmp_path / "o.hbm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_lr3.model", "-o", out])
    run(["hash-model", "-q", "-m", out, "--bits", "256", "-o", hbm])
    exact = run(["predict", "-q", "--exact", "-m", out, TEST3]).stdout.splitlines()
    assert exact[-1] == _expected("liblinear_lr3").splitlines()[-1] == "7"
    for k in ("1", "2"):
        assert run(["predict", "-q", "-m", out, "-H", hbm, "-k", k, TEST3]).stdout.splitlines()[-1] == "7"
