import numpy as np
import pytest

from hsvm_cli.models.ovo import load_model

from conftest import DIGITS_TEST, DIGITS_TRAIN, TOY, run, tool_run, write_text


def test_training_on_malformed_input_writes_no_model(tmp_path):
    src = write_text(tmp_path / "bad.svm", "1 1:1\n2 1:1 1:2\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)], exit_code=65)
    assert not out.exists()
    assert r.stderr.startswith("hsvm: %s:2: " % src)


def test_seed_makes_training_byte_identical_across_runs_and_jobs(tmp_path):
    outs = []
    for i, jobs in enumerate(["1", "1", "2"]):
        out = tmp_path / ("m%d.hsvm" % i)
        run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "3", "--per-class", "40",
             "--jobs", jobs, "-q"])
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


def test_training_output_file_is_byte_identical_across_runs_and_jobs(tmp_path):
    out = tmp_path / "m.hsvm"
    blobs = []
    for jobs in ["1", "2", "1"]:
        run(["train-ovo", DIGITS_TRAIN, "-o", str(out), "--seed", "5", "--bags", "3", "--jobs", jobs, "-q"])
        blobs.append(out.read_bytes())
    assert blobs[0] == blobs[1] == blobs[2]


def test_recorded_command_leaves_out_jobs_and_quiet():
    from hsvm_cli.models.provenance import recorded_command
    assert recorded_command(["/x/hsvm", "train-ovo", "a.svm", "-j", "4", "--quiet", "--jobs=2", "-o", "m"]) == \
        "hsvm train-ovo a.svm -o m"


def test_recorded_command_quotes_arguments_so_a_shell_splits_it_back():
    import shlex

    from hsvm_cli.models.provenance import recorded_command
    argv = ["/x/hsvm", "train-ovo", "my data.svm", "-w", "1:2", "-o", "it's $HOME", "--c-grid", "0.1,1"]
    got = recorded_command(argv)
    assert got == "hsvm train-ovo 'my data.svm' -w 1:2 -o 'it'\"'\"'s $HOME' --c-grid 0.1,1"
    assert shlex.split(got) == ["hsvm"] + argv[1:]


def test_training_on_one_class_exits_65_with_a_clear_message(tmp_path):
    src = write_text(tmp_path / "one.svm", "3 1:1\n3 2:1\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "-o", str(out)], exit_code=65)
    assert not out.exists()
    assert r.stderr == "hsvm: %s: training needs samples of at least two classes, found 1\n" % src


def test_features_too_large_for_a_float32_model_are_refused_at_training_not_at_first_use(tmp_path):
    # Unnormalised samples near float32's limit: the model's class summaries
    # (margins b/|w| in the features' units) would overflow; once they were
    # written as inf and every later command refused the model as corrupt.
    src = write_text(tmp_path / "huge.svm", "1\n2\n3 1:3e38 2:3e38\n")
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", src, "--normalize", "none", "-o", str(out)], exit_code=65)
    assert not out.exists()
    assert r.stderr.startswith("hsvm: the model's class summaries overflow float32") and r.stderr.count("\n") == 1
    run(["train-ovo", src, "-o", str(out)])           # L2-normalised: usable
    run(["predict", "-q", "-m", str(out), "--first-stage", "scores", "-k", "2", src, "-o", str(tmp_path / "p")])


def test_c_auto_prints_the_table_trains_at_the_chosen_c_and_records_it(tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "auto", "--cv", "3", "--seed", "4", "-o", out])
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["C", "CV", "accuracy", "with", "neighbours", "seconds"]
    assert sum("<- chosen" in line for line in lines) == 1
    m = load_model(out)
    rec = m.params["cross_validation"]
    assert lines[-1].startswith("Best C = %g  CV accuracy = %g%% (3-fold" % (m.params["C"], 100 * rec["chosen_accuracy"]))
    assert rec["chosen_C"] == m.params["C"] and rec["folds"] == 3 and rec["seed"] == 4
    assert r.stderr == "hsvm: 10 classes, 45 pairs x 1 bag, 64 features, C = %g -> %s\n" % (m.params["C"], out)


def test_c_grid_searches_the_given_values(tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", DIGITS_TRAIN, "--c-grid", "0.01,1", "-q", "-o", out])
    assert [line.split()[0] for line in r.stdout.splitlines()[1:3]] == ["0.01", "1"]
    assert load_model(out).params["C"] in (0.01, 1.0)


def test_c_auto_model_is_byte_identical_across_runs_and_jobs(tmp_path):
    blobs = []
    for jobs in ["1", "2"]:
        out = tmp_path / ("m%s.hsvm" % jobs)
        run(["train-ovo", DIGITS_TRAIN, "--c-grid", "0.1,1,10", "--cv", "3", "-j", jobs, "-q", "-o", out])
        blobs.append(out.read_bytes())
    assert blobs[0] == blobs[1]


def test_cv_with_a_fixed_c_reports_the_accuracy_as_svm_train_v(tmp_path):
    r = run(["train-ovo", DIGITS_TRAIN, "--cv", "4", "-c", "0.5", "-q"], stderr="")
    assert r.stdout.startswith("Cross Validation Accuracy = ") and r.stdout.endswith("%\n")
    assert len(r.stdout.splitlines()) == 1
    out = tmp_path / "m.hsvm"
    r2 = run(["train-ovo", DIGITS_TRAIN, "--cv", "4", "-c", "0.5", "-q", "-o", out])
    assert r2.stdout == r.stdout and load_model(out).params["C"] == 0.5


def test_a_fixed_c_under_normalize_auto_reports_both_accuracies_and_the_choice():
    # its table starts with '--normalize l2:': the accuracy line alone of a fixed C had kept only that title
    r = run(["train-ovo", DIGITS_TRAIN, "--cv", "3", "-c", "1", "--normalize", "auto", "-q"])
    lines = r.stdout.splitlines()
    assert lines[0] == "--normalize l2:" and lines[2] == "--normalize none:"
    assert lines[1].startswith("Cross Validation Accuracy = ") and lines[3].startswith("Cross Validation Accuracy = ")
    assert lines[-1].startswith("Chosen: --normalize ")

def test_more_folds_than_samples_is_leave_one_out_as_in_liblinear(tmp_path):
    four = write_text(tmp_path / "four.svm", "1 1:1\n1 1:0.9\n2 1:-1\n2 1:-0.8\n")
    r = run(["train-ovo", four, "--cv", "10", "-c", "1"])
    assert r.stdout == "Cross Validation Accuracy = 100%\n"
    assert r.stderr == ("hsvm: train-ovo: 10 folds for 4 samples: leave-one-out cross-validation (4 folds), as "
                        "LIBLINEAR runs it\nhsvm: train-ovo: note: every class has fewer samples than the 4 folds: "
                        "each held-out sample trains with one sample of its class fewer (as in leave-one-out)\n")
    # with -o too: the accuracy line alone on stdout, -q leaves the note out
    r = run(["train-ovo", four, "--cv", "10", "-c", "1", "-q", "-o", tmp_path / "q.hsvm"])
    assert (r.stdout, r.stderr) == ("Cross Validation Accuracy = 100%\n", "")
    assert run(["train-ovo", four, "--cv", "10", "-c", "1", "-q"]).stderr == ""
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", four, "--cv", "10", "-c", "auto", "-o", out])
    assert "leave-one-out cross-validation (4 folds)" in r.stderr and "4-fold" in r.stdout
    assert load_model(out).params["cross_validation"]["folds"] == 4


@pytest.mark.parametrize("command, flag, hint", [
    ("train-ovo", "-s", "LIBSVM's -s 0 (C-SVC) is what train-ovo trains: leave -s out; LIBLINEAR's -s 1 / 2 / 3 is "
                        "--solver l2loss-dual / l2loss-primal / l1loss-dual here"),
    ("train-ovo", "-g", "LIBSVM's -g (gamma) is for kernels: hsvm kernel-hash --kernel rbf --gamma G"),
    ("kernel-hash", "-g", "gamma is --gamma G"),
    ("train-ovo", "-C", "LIBLINEAR's -C is -c auto here"),
    ("predict", "-b", "svm-predict's -b 1 is -C CALIB --proba here"),
    ("predict", "-c", "a calibration is -C CALIB (--calibration)"),
    ("train-ovo", "-t", "hsvm trains linear SVMs, LIBSVM's -t 0: leave -t out"),
    ("train-ovo", "--cost", "C is -c C, as in LIBSVM)"),       # without click's guesses (--codes, --cv)
])
def test_the_tools_spellings_of_flags_are_refused_with_hsvms(command, flag, hint):
    r = run([command, flag, "1", DIGITS_TRAIN], exit_code=2)
    assert r.stderr.startswith("hsvm %s: No such option '%s' (%s" % (command, flag, hint)) and \
        r.stderr.endswith("(see 'hsvm %s --help')\n" % command) and r.stderr.count("\n") == 1, r.stderr


def test_a_search_without_output_reports_its_table_and_best_c_as_liblinear_c(tmp_path):
    # what the --pairs refusal tells users to run first
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "auto", "-v", "3", "-q"], stderr="")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["C", "CV", "accuracy", "with", "neighbours", "seconds"]
    assert lines[-1].startswith("Best C = ") and "3-fold" in lines[-1] and "averaged with the grid neighbours'" in lines[-1]
    assert list(tmp_path.iterdir()) == []
    r = run(["train-ovo", DIGITS_TRAIN, "--c-grid", "0.5,2", "-q"])
    assert [line for line in r.stdout.splitlines() if line.startswith("Best C = ")]
    run(["train-ovo", DIGITS_TRAIN, "-q"], exit_code=2, stdout="")     # nothing to report: -o is needed


def test_the_search_warns_of_folds_beyond_a_class_and_of_the_grids_top(tmp_path):
    rng = np.random.default_rng(4)
    rows = ["%d 1:%.3f 2:%.3f 3:%.3f" % ((c,) + tuple(rng.normal(c, 0.3, 3)))
            for c, n in ((1, 12), (2, 12), (3, 2)) for _ in range(n)]
    small = tmp_path / "small.svm"
    small.write_text("\n".join(rows) + "\n")
    # a fixed C: the accuracy line alone on stdout, as liblinear-train -v prints it, the warnings on stderr
    r = run(["train-ovo", str(small), "--cv", "3", "-c", "1", "-q"])
    assert r.stdout.startswith("Cross Validation Accuracy = ") and r.stdout.count("\n") == 1
    assert r.stderr.splitlines()[-1] == ("hsvm: train-ovo: warning: class 3 has 2 samples, fewer than the 3 folds: "
                                         "its held-out samples "
                                         "train with one sample fewer than the other classes; use fewer folds (--cv 2) "
                                         "for a fairer estimate")
    r = run(["train-ovo", str(small), "--cv", "2", "-c", "1", "-q"])
    assert "Warning" not in r.stdout + r.stderr
    small.write_text("\n".join(rows[:-1]) + "\n")    # class 3 with one sample
    r = run(["train-ovo", str(small), "--cv", "2", "-c", "1", "-q"])
    assert r.stderr.splitlines()[-1] == ("hsvm: train-ovo: warning: class 3 has 1 sample: held out, it has none to "
                                         "train on, so it is an error in every cross-validation")
    # a search's warnings end its table
    r = run(["train-ovo", str(small), "--cv", "2", "-c", "auto", "-q"])
    assert ("Warning: class 3 has 1 sample: held out, it has none to train on, so it is an error in every "
            "cross-validation") in r.stdout.splitlines()
    # the grid's top: LIBLINEAR's "maximum C reached"
    from hsvm_cli.train.c_search import MAX_C, _search_warnings
    # several classes short of folds: counted, not one named as if alone
    many = np.r_[np.repeat(np.arange(300), 2), [300] * 5]
    assert _search_warnings(many, 5, True, None, [None])[0].startswith(
        "Warning: 300 classes have fewer samples than the 5 folds (class 0 has 2)")
    # every class short (leave-one-out): none is favoured, so no warning of it
    assert _search_warnings(np.repeat(np.arange(300), 2), 5, True, None, [None])[0] == (
        "Note: every class has fewer samples than the 5 folds: each held-out sample trains with one sample of its "
        "class fewer (as in leave-one-out)")
    assert _search_warnings([0, 1, 2] + [3] * 6, 5, True, None, [None])[0].startswith(
        "Warning: 3 classes have 1 sample (classes 0, 1, 2)")
    assert _search_warnings(list(range(7)) + [9] * 6, 5, True, None, [None])[0].startswith(
        "Warning: 7 classes have 1 sample (classes 0, 1, 2, 3, 4, ...)")
    steps = [type("Step", (), {"C": c})() for c in (MAX_C / 2, MAX_C)]
    assert _search_warnings([1, 2] * 5, 5, False, steps[1], steps)[0].startswith(
        "Warning: the best C is the grid's largest (1024)")
    assert _search_warnings([1, 2] * 5, 5, False, steps[0], steps) == []
    # an explicit grid's top too (its values are the user's: a larger one may do better)
    assert _search_warnings([1, 2] * 5, 5, True, steps[1], steps) == [
        "Warning: the best C is the grid's largest (1024); the accuracy may still rise beyond it (add larger values "
        "to --c-grid)"]
    assert _search_warnings([1, 2] * 5, 5, True, steps[0], steps) == []
    assert _search_warnings([1, 2] * 5, 5, True, steps[1], steps[1:]) == []     # a grid of one value has no top


def test_cross_validation_options_that_do_not_fit_are_usage_errors(tmp_path):
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "auto", "--bags", "2", "-o", tmp_path / "m"], exit_code=2)
    assert "does not combine with --bags" in r.stderr and not (tmp_path / "m").exists()
    for resampling in (["--bags", "3"], ["--per-class", "5"]):
        # `--cv F` without -o only reports; it refuses what it would ignore
        r = run(["train-ovo", DIGITS_TRAIN, "--cv", "3", "-c", "1"] + resampling, exit_code=2)
        assert "does not combine with --bags or --per-class" in r.stderr and r.stdout == ""
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "often", "-o", tmp_path / "m"], exit_code=2)
    assert "expected a positive number or 'auto'" in r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "--cv", "1", "-o", tmp_path / "m"], exit_code=2)
    r = run(["train-ovo", DIGITS_TRAIN, "--c-grid", "1,-1", "-o", tmp_path / "m"], exit_code=2)
    assert "every C must be a positive number" in r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "--c-grid", "1,,2", "-o", tmp_path / "m"], exit_code=2)
    assert "an empty item in '1,,2'" in r.stderr


def test_normalize_auto_prints_each_search_and_the_choice(tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "auto", "--normalize", "auto", "--cv", "3", "-o", out])
    lines = r.stdout.splitlines()
    assert lines[0] == "--normalize l2:" and "--normalize none:" in lines
    assert sum("<- chosen" in line for line in lines) == 1 and sum("<- its best" in line for line in lines) == 1
    m = load_model(out)
    rec = m.params["cross_validation"]["normalize"]
    assert lines[-1].startswith("Chosen: --normalize %s, C = %g " % (m.normalize, m.params["C"]))
    assert rec["chosen"] == m.normalize
    r = run(["train-ovo", DIGITS_TRAIN, "--normalize", "auto", "-o", tmp_path / "x.hsvm"], exit_code=2)
    assert "--normalize auto is chosen by cross-validation" in r.stderr and not (tmp_path / "x.hsvm").exists()


def test_recorded_command_leaves_out_every_spelling_of_the_options_that_do_not_change_the_model():
    from hsvm_cli.models.provenance import recorded_command
    argv = ["/x/hsvm", "train-ovo", "-j2", "a.svm", "--jobs", "3", "-q", "--pairs", "1/4", "--pairs=2/4",
            "--dask", "local:2", "--dask=tcp://h:8786", "-c", "0.5", "-o", "m"]
    assert recorded_command(argv) == "hsvm train-ovo a.svm -c 0.5 -o m"
    for bundled in (["-qj2"], ["-qj", "2"], ["-qq"]):
        assert recorded_command(["hsvm", "train-ovo", "a.svm"] + bundled + ["-c", "0.5", "-o", "m"]) == \
            "hsvm train-ovo a.svm -c 0.5 -o m"
    assert recorded_command(["hsvm", "train-ovo", "a.svm", "-qo", "m"]) == "hsvm train-ovo a.svm -o m"


def test_cross_validation_with_pairs_or_dask_is_refused_in_one_line(tmp_path):
    for extra in (["--pairs", "0/2"], ["--dask", "local:1"]):
        r = run(["train-ovo", DIGITS_TRAIN, "-c", "auto", *extra, "-o", tmp_path / "m"], exit_code=2)
        assert "need every pair in one process: choose C first" in r.stderr and not (tmp_path / "m").exists()
    r = run(["train-ovo", "--codes", tmp_path / "x.codes", "-B", "2", "-o", tmp_path / "m"], exit_code=2)
    assert "--bias is for svmlight input" in r.stderr


def test_c_is_chosen_on_codes_by_the_cross_validation_of_the_bits_as_features(tmp_path):
    # Hash-SVM: the search runs on the codes' +-1/sqrt(k) features with bias 1,
    # the bits solver's problem, and the model is the one -c C trains at its choice
    from hsvm_cli.models.ovo import load_model
    khm, codes = tmp_path / "d.khm", tmp_path / "d.codes"
    run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", "rbf", "--landmarks", "128", "--bits", "512", "-o", khm])
    run(["hash-data", "-q", "-H", khm, DIGITS_TRAIN, "-o", codes])
    auto, fixed = tmp_path / "auto.hsvm", tmp_path / "fixed.hsvm"
    r = run(["train-ovo", "--codes", codes, "-c", "auto", "-j", "2", "-o", auto])
    assert r.stdout.startswith("C ") and "<- chosen" in r.stdout and "bits (codes), C = " in r.stderr
    m = load_model(str(auto))
    search = m.params["cross_validation"]
    assert search["chosen_C"] == m.params["C"] and len(search["table"]) >= 3
    run(["train-ovo", "-q", "--codes", codes, "-c", repr(m.params["C"]), "-o", fixed])
    assert np.array_equal(load_model(str(fixed)).W, m.W)
    # without -o: the table, or the accuracy at one C, as from svmlight TRAIN
    assert run(["train-ovo", "--codes", codes, "--cv", "3", "-c", "1"]).stdout.startswith("Cross Validation Accuracy = ")
    grid = run(["train-ovo", "--codes", codes, "--c-grid", "0.5,4"]).stdout.splitlines()
    assert grid[0].split()[0] == "C" and [line.split()[0] for line in grid[1:3]] == ["0.5", "4"]
    # the model on stdout: the table goes to stderr; -q keeps the table (the result) and drops the log
    r = run(["train-ovo", "--codes", codes, "-c", "auto", "-o", "-"])
    assert r.stderr.startswith("C ") and "<- chosen" in r.stderr and "<- chosen" not in r.stdout
    r = run(["train-ovo", "--codes", codes, "-c", "auto", "-q", "-o", tmp_path / "q.hsvm"])
    assert "<- chosen" in r.stdout and r.stderr == ""
    r = run(["train-ovo", "--codes", codes, "-c", "auto", "--bags", "3", "-o", tmp_path / "b.hsvm"], exit_code=2)
    assert "does not combine with --bags or --per-class" in r.stderr


def test_parts_of_an_unnormalised_model_train_with_the_whole_data_bias(tmp_path):
    # -B auto is the RMS norm of all the samples, so every block trains with it
    # and the merged parts are the single run's model.
    single = tmp_path / "single.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "--normalize", "none", "-q", "-o", single])
    parts = []
    for i in range(2):
        parts.append(tmp_path / ("p%d" % i))
        run(["train-ovo", DIGITS_TRAIN, "--normalize", "none", "--pairs", "%d/2" % i, "-q", "-o", parts[-1]])
    merged = tmp_path / "merged.hsvm"
    run(["merge-models", "-q", *parts, "-o", merged])
    a, b = load_model(single), load_model(merged)
    assert a.params["bias"] == b.params["bias"] != 1.0
    assert np.array_equal(np.asarray(a.W), np.asarray(b.W)) and np.array_equal(np.asarray(a.b), np.asarray(b.b))


def test_labels_more_than_2_63_apart_train_hash_and_predict(tmp_path):
    far = "-5000000000000000000 1:1 2:0.1\n-5000000000000000000 1:0.9\n5000000000000000000 1:-1\n" \
          "5000000000000000000 1:-0.8 2:0.3\n7 2:1\n7 1:0.1 2:0.9\n"
    train = write_text(tmp_path / "far.svm", far)
    model, hbm = str(tmp_path / "far.hsvm"), str(tmp_path / "far.hbm")
    run(["train-ovo", train, "-o", model, "-q"])
    run(["hash-model", "-m", model, "--bits", "64", "-o", hbm, "-q"])
    expected = "".join(line.split()[0] + "\n" for line in far.splitlines())
    run(["predict", "-q", train, "-m", model], stdout=expected)
    run(["predict", "-q", train, "-m", model, "-H", hbm, "-k", "2"], stdout=expected)


def test_zero_based_training_is_recorded_and_followed_by_predict_calibrate_hash_data_and_eval(tmp_path):
    zero = "".join("%s %s\n" % (line.split()[0], " ".join("%d:%s" % (int(f.split(":")[0]) - 1, f.split(":")[1])
                                                        for f in line.split()[1:]))
                   for line in TOY.splitlines())
    train = write_text(tmp_path / "zero.svm", zero)
    model = str(tmp_path / "zero.hsvm")
    run(["train-ovo", train, "--zero-based", "-o", model, "-q"])
    assert load_model(model).provenance["zero_based"] is True
    explicit = run(["predict", "-q", train, "-m", model, "--zero-based"]).stdout
    assert run(["predict", "-q", train, "-m", model]).stdout == explicit
    # 1-based reading shifts every feature: index 0 is refused
    r = run(["predict", "-q", train, "-m", model, "--one-based"], exit_code=65)
    assert "zero.svm:1:" in r.stderr
    run(["calibrate", train, "-m", model, "-o", tmp_path / "c", "-q", "--repeat", "1", "--timing-budget", "0"])
    # a hash model made from it records it for hash-data
    hbm = str(tmp_path / "zero.hbm")
    run(["hash-model", "-m", model, "-o", hbm, "-q", "--bits", "64"])
    codes = run(["hash-data", "-H", hbm, train, "--format", "svm"]).stdout
    assert codes == run(["hash-data", "-H", hbm, train, "--format", "svm", "--zero-based"]).stdout
    assert "zero.svm:1:" in run(["hash-data", "-H", hbm, train, "--one-based"], exit_code=65).stderr
    # eval reads only the truth file's labels: its indexing does not matter
    labels = write_text(tmp_path / "p", explicit)
    assert run(["eval", "--truth", train, labels]).stdout == run(["eval", "--truth", train, labels,
                                                                   "--zero-based"]).stdout
    one = str(tmp_path / "one.hsvm")
    run(["train-ovo", write_text(tmp_path / "one.svm", TOY), "-o", one, "-q"])
    assert "zero_based" not in load_model(one).provenance


def test_numbering_given_against_the_models_is_noted_before_the_run(tmp_path):
    # index 0 is refused in a file read 1-based, and the message suggests
    # --zero-based: given to a model trained 1-based, it shifts every feature
    model = str(tmp_path / "one.hsvm")
    run(["train-ovo", DIGITS_TRAIN, "-o", model, "-q"])
    hbm = str(tmp_path / "one.hbm")
    run(["hash-model", "-m", model, "-o", hbm, "-q", "--bits", "64"])
    note = ("note: %s was trained on features numbered from 1; --zero-based reads %s's index i as its feature i+1 "
            "(right only if %s numbers the same features from 0)")
    r = run(["predict", "-m", model, DIGITS_TEST, "--zero-based", "--extra-features", "ignore"])
    assert r.stderr.startswith("hsvm: predict: " + note % (model, DIGITS_TEST, DIGITS_TEST) + "\n")
    r = run(["hash-data", "-H", hbm, DIGITS_TEST, "--zero-based", "-o", tmp_path / "c"], exit_code=65)
    assert r.stderr.startswith("hsvm: hash-data: " + note % (hbm, DIGITS_TEST, DIGITS_TEST) + "\n")
    # the numbering it was trained on, said or not, and --quiet: no note
    for extra in (["--one-based"], [], ["--zero-based", "--extra-features", "ignore", "-q"]):
        assert "note:" not in run(["predict", "-m", model, DIGITS_TEST, "-o", tmp_path / "p"] + extra).stderr


@pytest.mark.parametrize("value", ["-1", "0"])
@pytest.mark.parametrize("search", [[], ["-c", "auto", "--cv", "3"]])
def test_liblinear_no_bias_trains_every_b_zero(tmp_path, value, search):
    out = tmp_path / "m.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "-B", value, "-o", out, "-q"] + search)
    m = load_model(str(out))
    assert not np.any(np.asarray(m.b)) and m.params["bias"] == 0.0
    # the classifiers still separate the classes: within a few points of the model with a bias
    with_bias = tmp_path / "b.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "-o", with_bias, "-q"] + search)
    acc = [float(run(["predict", DIGITS_TRAIN, "-m", p, "-o", tmp_path / "p"]).stderr.split("%")[0].split("= ")[1])
           for p in (out, with_bias)]
    assert acc[0] > acc[1] - 5.0


def test_c_grid_with_an_explicit_c_is_a_usage_error(tmp_path):
    r = run(["train-ovo", DIGITS_TRAIN, "--c-grid", "1,2", "-c", "5", "-o", tmp_path / "m"], exit_code=2)
    assert "--c-grid searches C among its values" in r.stderr and not (tmp_path / "m").exists()
    r = run(["train-ovo", DIGITS_TRAIN, "-B", "inf", "-o", tmp_path / "m"], exit_code=2)
    assert "expected a finite number (<= 0: no bias term) or 'auto'" in r.stderr


def test_a_two_class_model_is_counted_in_the_singular(tmp_path):
    train = write_text(tmp_path / "two.svm", "".join("%d 1:%g 2:%g\n" % (1 + i % 2, i % 2 + 0.1 * i, 1 - i % 2)
                                                    for i in range(20)))
    out, hbm = tmp_path / "m.hsvm", tmp_path / "m.hbm"
    assert run(["train-ovo", train, "-o", out]).stderr.startswith("hsvm: 2 classes, 1 pair x 1 bag, 2 features")
    assert run(["hash-model", "-m", out, "--bits", "64", "-o", hbm]).stderr.startswith("hsvm: 1 classifier x 64 bits")
    part = tmp_path / "p0"
    r = run(["train-ovo", train, "--pairs", "0/2", "-o", part])        # block 1/2 holds the one pair
    assert "block 0/2: no pairs of 1, 20 samples read" in r.stderr


def test_class_weights_are_recorded_and_change_the_classifiers_of_their_classes(tmp_path):
    plain, weighted = tmp_path / "plain.hsvm", tmp_path / "w.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "-q", "-o", plain])
    run(["train-ovo", DIGITS_TRAIN, "-q", "-w", "3:4", "--class-weight", "7:0.5", "-o", weighted])
    p, w = load_model(plain), load_model(weighted)
    assert w.params["class_weight"]["rule"] == "given"
    assert dict(map(tuple, w.params["class_weight"]["weights"])) == {c: {3: 4.0, 7: 0.5}.get(c, 1.0)
                                                                     for c in range(1, 11)}
    touched = np.isin(w.classes[w.pair_a], [3, 7]) | np.isin(w.classes[w.pair_b], [3, 7])
    changed = np.any(p.W != w.W, axis=1)
    assert np.array_equal(changed, touched)
    info = run(["info", weighted]).stdout
    assert 'params.class_weight.rule: "given"' in info


@pytest.mark.parametrize("args, message", [
    (["-w", "3"], "LIBSVM's -wLABEL WEIGHT is -w LABEL:WEIGHT here"),
    (["-w", "3:-1"], "positive finite"),
    (["-w", "balanced", "-w", "3:2"], "give it alone"),
])
def test_class_weights_that_are_not_weights_are_a_usage_error(args, message):
    r = run(["train-ovo", DIGITS_TRAIN, "-q", "-o", "/nonexistent/m.hsvm"] + args, exit_code=2, stdout="")
    assert message in r.stderr and "-w" in r.stderr


def test_a_class_weight_for_a_label_the_data_lacks_is_refused_naming_it(tmp_path):
    out = tmp_path / "m.hsvm"
    r = run(["train-ovo", DIGITS_TRAIN, "-q", "-w", "11:2", "-o", out], exit_code=2, stdout="")
    assert "label 11, which the training data does not have" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not out.exists()


def test_weighted_cross_validation_reports_as_svm_train_v_and_searches_with_the_weights(tmp_path):
    r = run(["train-ovo", DIGITS_TRAIN, "--cv", "3", "-c", "0.5", "-w", "balanced", "-q"], stderr="")
    assert r.stdout.startswith("Cross Validation Accuracy = ")
    out = tmp_path / "m.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "-c", "auto", "--cv", "3", "-w", "2:5", "-q", "-o", out])
    m = load_model(out)
    assert m.params["class_weight"]["weights"][1] == [2, 5.0] and m.params["cross_validation"]


def test_two_class_weighted_model_is_liblinear_trains(tools, tmp_path):
    # LIBLINEAR's own -w on a two-class problem (its one model is hsvm's one
    # pair), both solved to a tight tolerance: the same hyperplane
    rows = [line for line in gzip_lines(DIGITS_TRAIN) if line.split()[0] in ("3", "8")]
    train = write_text(tmp_path / "38.svm", "".join(rows))
    ours = tmp_path / "m.hsvm"
    run(["train-ovo", train, "-q", "--normalize", "none", "-B", "1", "-c", "0.05", "-e", "1e-7",
         "-w", "3:4", "-w", "8:0.5", "-o", ours])
    theirs = tmp_path / "ll.model"
    tool_run(tools["liblinear-train"], "-s", "1", "-B", "1", "-c", "0.05", "-e", "1e-7", "-w3", "4", "-w8", "0.5",
             "-q", train, theirs)
    lines = theirs.read_text().splitlines()
    labels = lines[[i for i, x in enumerate(lines) if x.startswith("label")][0]].split()[1:]
    w = np.array([float(x) for x in lines[lines.index("w") + 1:]])
    w = w if labels[0] == "3" else -w       # hsvm's pair: class 3 positive
    m = load_model(ours)
    assert np.allclose(m.W[0], w[:-1], atol=1e-4) and abs(m.b[0] - w[-1]) < 1e-4


def test_the_search_warns_of_single_sample_classes_and_of_classes_short_of_folds_alike():
    # both faults at once (reuters-r52's training file has both): two warnings
    from hsvm_cli.train.c_search import _search_warnings
    y = np.r_[[1], [2], [3] * 3, [4] * 3, [5] * 4, np.repeat([6, 7], 9)]
    notes = _search_warnings(y, 5, True, None, [None])
    assert notes[0].startswith("Warning: 2 classes have 1 sample (classes 1, 2)")
    assert notes[1].startswith("Warning: 3 other classes have fewer samples than the 5 folds (class 3 has 3)")
    assert len(notes) == 2


def test_predict_notes_labels_the_model_lacks_before_the_accuracy(tmp_path):
    lines = gzip_lines(DIGITS_TEST)[:20]
    mixed = write_text(tmp_path / "mixed.svm", "".join(lines) + "".join("99" + ln[ln.index(" "):] for ln in lines[:5]))
    model = tmp_path / "m.hsvm"
    run(["train-ovo", DIGITS_TRAIN, "-q", "-o", model])
    r = run(["predict", "-m", model, mixed, "-o", tmp_path / "p.txt"])
    note, accuracy = r.stderr.splitlines()
    assert note == "hsvm: predict: 5 of 25 samples have labels the model lacks (99): the accuracy counts them as errors"
    assert accuracy.startswith("Accuracy = ") and accuracy.endswith("/25) (classification)")
    many = write_text(tmp_path / "many.svm", "".join(lines) + "".join("%d%s" % (90 + i, ln[ln.index(" "):])
                                                                    for i, ln in enumerate(lines[:7])))
    r = run(["predict", "-m", model, many, "-o", tmp_path / "p.txt"])
    assert "7 of 27 samples have labels the model lacks (90, 91, 92, 93, 94, ...)" in r.stderr
    # the smallest labels whatever the chunks: 96 first, the others after it, three rows a chunk
    late = write_text(tmp_path / "late.svm", "".join(lines) + "".join("%d%s" % (96 - i, ln[ln.index(" "):])
                                                                    for i, ln in enumerate(lines[:7])))
    r = run(["predict", "-m", model, late, "--chunk-rows", "3", "-o", tmp_path / "p.txt"])
    assert "7 of 27 samples have labels the model lacks (90, 91, 92, 93, 94, ...)" in r.stderr
    unlabelled = write_text(tmp_path / "u.svm", "".join("0" + ln[ln.index(" "):] for ln in lines))
    assert run(["predict", "-m", model, unlabelled, "-o", tmp_path / "q.txt"]).stderr == ""


def gzip_lines(path):
    import gzip
    with gzip.open(path, "rt") as fh:
        return fh.readlines()


def test_a_classifier_at_liblinears_iteration_limit_is_warned_about_as_liblinear_train_does(tools, tmp_path):
    rows = [line for line in gzip_lines(DIGITS_TRAIN) if line.split()[0] in ("3", "8")]
    train = write_text(tmp_path / "38.svm", "".join(rows))
    for C, eps, warned in (("1", "0.1", False), ("65536", "1e-12", True)):
        theirs = tool_run(tools["liblinear-train"], "-s", "3", "-B", "1", "-c", C, "-e", eps, train,
                          tmp_path / "ll.model")
        assert ("WARNING: reaching max number of iterations" in theirs) == warned
        r = run(["train-ovo", train, "--normalize", "none", "-B", "1", "-c", C, "--solver", "l1loss-dual",
                 "-e", eps, "-o", tmp_path / "m.hsvm"])
        note = ("hsvm: train-ovo: warning: 1 of 1 classifiers stopped at the solver's iteration limit before "
                "meeting the tolerance (LIBLINEAR's 'reaching max number of iterations')")
        assert (note in r.stderr) == warned and r.stderr.count("warning") == warned
        quiet = run(["train-ovo", train, "--normalize", "none", "-B", "1", "-c", C, "--solver", "l1loss-dual",
                     "-e", eps, "-q", "-o", tmp_path / "m.hsvm"])
        assert quiet.stderr == (r.stderr[r.stderr.index(note):] if warned else "")    # -q keeps only the warning


def test_a_large_model_using_few_of_its_columns_says_what_compact_numbering_would_save(tmp_path, monkeypatch):
    # sparse data numbered up to a large index: W holds every column up to it
    from hsvm_cli.cli import cmd_train_ovo
    lines = ["%d %d:1 %d:0.5\n" % (c, 1 + 40000 * c + i % 3, 40000 * c + 7) for c in (1, 2, 3) for i in range(6)]
    train = write_text(tmp_path / "wide.svm", "".join(lines))
    monkeypatch.setattr(cmd_train_ovo, "_WIDE_MODEL_BYTES", 0)
    r = run(["train-ovo", train, "-o", tmp_path / "m.hsvm"])
    note = [line for line in r.stderr.splitlines() if "note:" in line]
    assert len(note) == 1 and "the classifiers use 12 of the model's 120,007 feature columns" in note[0], r.stderr
    assert "numbered compactly (features 1..12)" in note[0]
    assert "note:" not in run(["train-ovo", train, "-q", "-o", tmp_path / "m.hsvm"]).stderr
    # a model that uses its columns, or a small one, says nothing
    assert "note:" not in run(["train-ovo", DIGITS_TRAIN, "-o", tmp_path / "d.hsvm"]).stderr
    monkeypatch.setattr(cmd_train_ovo, "_WIDE_MODEL_BYTES", 512 << 20)
    assert "note:" not in run(["train-ovo", train, "-o", tmp_path / "m.hsvm"]).stderr
