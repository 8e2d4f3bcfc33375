"""The Hash-SVM pipeline on the command line: kernel-hash -> hash-data ->
train-ovo --codes -> predict --kernel-hash (or --codes), and what each step
refuses (exit 65, one line, nothing written)."""
import hashlib
import json

import numpy as np
import pytest

from hsvm_cli.errors import ModelMismatchError
from hsvm_cli.hashing.krsh import fit_kernel_hash
from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.models.codes import read_codes
from hsvm_cli.models.kernel_hash import load_kernel_hash
from hsvm_cli.models.ovo import load_model
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.train.bits_solver import expand_codes, train_ovo_codes

from conftest import DIGITS_TEST, DIGITS_TRAIN, run, write_text

KH = ["--kernel", "rbf", "--landmarks", "128", "--bits", "512", "--seed", "4"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """Every file of the digits Hash-SVM pipeline, made with the CLI."""
    d = tmp_path_factory.mktemp("hashsvm")
    f = {name: str(d / name) for name in ("k.khm", "train.codes", "test.codes", "m.hsvm", "m.hbm")}
    run(["kernel-hash", DIGITS_TRAIN, "-o", f["k.khm"], "-q"] + KH)
    run(["hash-data", "-H", f["k.khm"], DIGITS_TRAIN, "-o", f["train.codes"], "-q"])
    run(["hash-data", "-H", f["k.khm"], DIGITS_TEST, "-o", f["test.codes"], "-q"])
    run(["train-ovo", "--codes", f["train.codes"], "-o", f["m.hsvm"], "-c", "1", "-q"])
    run(["hash-model", "-m", f["m.hsvm"], "--bits", "256", "-o", f["m.hbm"], "-q"])
    f["dir"] = d
    return f


def test_kernel_hash_records_parameters_gamma_rule_and_training_digest(pipeline):
    h = load_kernel_hash(pipeline["k.khm"])
    assert (h.kernel, h.n_landmarks, h.bits, h.seed, h.n_features) == ("rbf", 128, 512, 4, 64)
    assert h.info["landmarks_kept"] == 128 and h.info["landmarks_requested"] == 128
    assert h.info["gamma_rule"].startswith("1 / median squared Euclidean distance")
    with open(DIGITS_TRAIN, "rb") as fh:
        assert h.info["train_sha256"] == hashlib.sha256(fh.read()).hexdigest()
    assert h.provenance["train_sha256"] == h.info["train_sha256"]
    assert 0 < h.tol < 1


def test_kernel_hash_file_is_the_library_fit_and_byte_identical_across_runs(pipeline, tmp_path):
    again = tmp_path / "again.khm"
    run(["kernel-hash", DIGITS_TRAIN, "-o", again, "-q"] + KH)
    assert again.read_bytes() == open(pipeline["k.khm"], "rb").read()
    X, _ = load_svmlight(DIGITS_TRAIN)
    lib = fit_kernel_hash(X, kernel="rbf", landmarks=128, bits=512, seed=4)
    assert lib.content_sha256() == load_kernel_hash(again).content_sha256()


def test_kernel_hash_reads_stdin(pipeline, tmp_path):
    import gzip
    out = tmp_path / "stdin.khm"
    with gzip.open(DIGITS_TRAIN, "rb") as fh:
        run(["kernel-hash", "-", "-o", out, "-q"] + KH, input=fh.read())
    assert load_kernel_hash(out).content_sha256() == load_kernel_hash(pipeline["k.khm"]).content_sha256()


def test_hash_data_writes_the_kernel_hash_codes_with_its_digest(pipeline):
    h = load_kernel_hash(pipeline["k.khm"])
    c = read_codes(pipeline["test.codes"])
    Xt, yt = load_svmlight(DIGITS_TEST, n_features=64)
    assert np.array_equal(c.codes, h.codes(Xt)) and np.array_equal(c.labels, yt)
    assert c.kernel_hash_sha256 == h.content_sha256() and c.bits == 512


def test_hash_data_svm_format_of_kernel_codes_matches_the_codes_file(pipeline):
    r = run(["hash-data", "-H", pipeline["k.khm"], DIGITS_TEST, "--bits", "128", "--format", "svm"])
    c = read_codes(pipeline["test.codes"])
    first = r.stdout.splitlines()[0].split()
    bits = np.unpackbits(c.codes[:1, :2].view(np.uint8), bitorder="little")
    assert [t.split(":")[1] for t in first[1:]] == ["1" if b else "-1" for b in bits]


def test_train_ovo_on_codes_is_the_packed_bits_solver_and_records_the_kernel_hash(pipeline):
    c = read_codes(pipeline["train.codes"])
    m = load_model(pipeline["m.hsvm"])
    ref = train_ovo_codes(c.codes, c.labels, C=1.0, seed=0)
    assert np.array_equal(np.asarray(m.W), ref.W) and np.array_equal(np.asarray(m.b), ref.b)
    assert m.codes_source["kernel_hash_sha256"] == load_kernel_hash(pipeline["k.khm"]).content_sha256()
    assert m.codes_source["input_features"] == 64 and m.n_features == 512 and m.normalize == "none"
    with open(pipeline["train.codes"], "rb") as fh:
        assert m.provenance["train_sha256"] == hashlib.sha256(fh.read()).hexdigest()


def test_predict_from_raw_samples_equals_predict_from_codes_and_the_python_api(pipeline):
    raw = run(["predict", "-m", pipeline["m.hsvm"], "--kernel-hash", pipeline["k.khm"], DIGITS_TEST, "--scores"])
    codes = run(["predict", "-m", pipeline["m.hsvm"], "--codes", pipeline["test.codes"], "--scores"])
    assert raw.stdout == codes.stdout and raw.stderr == codes.stderr
    assert float(raw.stderr.split("=")[1].split("%")[0]) >= 96.0
    # the kernel hash beside the codes does nothing, and says so
    both = run(["predict", "-m", pipeline["m.hsvm"], "--kernel-hash", pipeline["k.khm"], "--codes",
                pipeline["test.codes"], "--scores"])
    assert both.stdout == codes.stdout
    assert both.stderr == "hsvm: predict: --kernel-hash %s is not used: the --codes are the samples\n%s" % (
        pipeline["k.khm"], codes.stderr)
    m = load_model(pipeline["m.hsvm"])
    got = np.array([int(line.split()[0]) for line in raw.stdout.splitlines()[1:]])
    # The model on the expanded codes, and on raw samples with the kernel hash.
    assert np.array_equal(got, Predictor(m).predict(expand_codes(read_codes(pipeline["test.codes"]).codes)))
    Xt, _ = load_svmlight(DIGITS_TEST, n_features=64)
    assert np.array_equal(got, Predictor(m, kernel_hash=load_kernel_hash(pipeline["k.khm"])).predict(Xt))
    # Raw samples without the kernel hash are not the model's features (zeros
    # would pad the 64 features to its 512 bits).
    with pytest.raises(ModelMismatchError, match="trained on 512-bit codes of kernel hash .*not rows of 64 features"):
        Predictor(m).predict(Xt)


def test_codes_of_another_kind_of_hash_say_what_made_them(pipeline, tmp_path):
    # A model trained on kernel hash codes, given the codes of a learned
    # circulant hash: the refusal names what made them, not a missing --codes.
    chash, codes = tmp_path / "c.chash", tmp_path / "c.codes"
    run(["fit-circulant", DIGITS_TEST, "--targets", "itq", "--bits", 64, "--seed", 3, "-o", chash, "-q"])
    run(["hash-data", "-H", chash, DIGITS_TEST, "-o", codes, "-q"])
    r = run(["predict", "-m", pipeline["m.hsvm"], "--codes", codes], exit_code=65)
    assert r.stderr.startswith("hsvm: %s: codes of a learned circulant hash, but %s was trained on codes of kernel "
                               "hash " % (codes, pipeline["m.hsvm"]))


def test_hashes_fitted_on_zero_based_files_read_their_samples_zero_based(pipeline, tmp_path):
    # kernel-hash and fit-circulant record --zero-based as train-ovo does:
    # hash-data and predict --kernel-hash then read 0-based without being told.
    X, y = load_svmlight(DIGITS_TRAIN, n_features=64)
    zero = tmp_path / "train0.svm"
    with open(zero, "w") as fh:
        for row, label in zip(X, y):
            fh.write("%d %s\n" % (label, " ".join("%d:%g" % (j, v) for j, v in zip(row.indices, row.data))))
    for fit, out in ((["kernel-hash", zero, "--zero-based", "-q"] + KH, tmp_path / "z.khm"),
                     (["fit-circulant", zero, "--zero-based", "--targets", "itq", "--bits", 64, "--seed", 3, "-q"],
                      tmp_path / "z.chash")):
        run(fit + ["-o", out])
        told, untold = tmp_path / "told.codes", tmp_path / "untold.codes"
        run(["hash-data", "-H", out, zero, "--zero-based", "-o", told, "-q"])
        run(["hash-data", "-H", out, zero, "-o", untold, "-q"])
        assert told.read_bytes() == untold.read_bytes()
    model = tmp_path / "z.hsvm"
    run(["hash-data", "-H", tmp_path / "z.khm", zero, "-o", tmp_path / "k.codes", "-q"])
    run(["train-ovo", "--codes", tmp_path / "k.codes", "-c", "1", "-o", model, "-q"])
    told = run(["predict", "-m", model, "--kernel-hash", tmp_path / "z.khm", zero, "--zero-based"])
    assert "note" not in told.stderr         # the flag agrees with the kernel hash's numbering
    assert run(["predict", "-m", model, "--kernel-hash", tmp_path / "z.khm", zero]).stdout == told.stdout
    other = run(["predict", "-m", model, "--kernel-hash", tmp_path / "z.khm", zero, "--one-based"], exit_code=None)
    assert other.stdout != told.stdout
    assert "note: %s was trained on features numbered from 0; --one-based" % (tmp_path / "z.khm") in other.stderr


def test_the_python_api_trains_on_kernel_codes_and_predicts_raw_samples(pipeline):
    # The library's own route: fit_kernel_hash -> train_ovo_codes(kernel_hash=) -> Predictor(kernel_hash=).
    X, y = load_svmlight(DIGITS_TRAIN, n_features=64)
    Xt, _ = load_svmlight(DIGITS_TEST, n_features=64)
    h = load_kernel_hash(pipeline["k.khm"])
    m = train_ovo_codes(h.codes(X), y, C=1.0, kernel_hash=h)
    cli = load_model(pipeline["m.hsvm"])
    assert m.codes_source == cli.codes_source
    assert np.array_equal(Predictor(m, kernel_hash=h).predict(Xt), Predictor(cli, kernel_hash=h).predict(Xt))
    unrecorded = train_ovo_codes(h.codes(X), y, C=1.0)
    with pytest.raises(ModelMismatchError, match="no record of the kernel hash that made them: train_ovo_codes"):
        Predictor(unrecorded, kernel_hash=h)
    with pytest.raises(ValueError, match="bits"):
        train_ovo_codes(np.zeros((4, 16), np.uint64), [0, 1, 0, 1], kernel_hash=h)


def test_predict_with_the_hash_filter_on_top_and_timings(pipeline):
    args = ["predict", "-m", pipeline["m.hsvm"], "-H", pipeline["m.hbm"], "-k", "3", "--timings"]
    raw = run(args + ["--kernel-hash", pipeline["k.khm"], DIGITS_TEST])
    codes = run(args + ["--codes", pipeline["test.codes"]])
    assert raw.stdout == codes.stdout
    timings = json.loads(raw.stderr.splitlines()[-1])
    assert timings["features"] > 0 and timings["filter_k"] == 3 and "refine" in timings
    assert float(raw.stderr.split("=")[1].split("%")[0]) >= 95.0


def _fails(args, tmp_path, out_name, message):
    r = run(args, exit_code=65)
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / out_name).exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    return r


def test_unknown_kernel_is_a_usage_error(tmp_path):
    r = run(["kernel-hash", DIGITS_TRAIN, "-o", tmp_path / "k.khm", "--kernel", "sigmoid", "--landmarks", "8",
             "--bits", "64"], exit_code=2)
    assert r.stderr == ("hsvm kernel-hash: Invalid value for '--kernel': 'sigmoid' is not one of 'rbf', 'chi2', "
                        "'intersection', 'poly', 'linear' (see 'hsvm kernel-hash --help')\n")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option, value, message", [
    ("--bits", "100", "Invalid value for '--bits': must be a positive multiple of 64"),
    ("--bits", "0", "Invalid value for '--bits': must be a positive multiple of 64"),
    ("--landmarks", "0", "Invalid value for '--landmarks': 0 is not in the range x>=1 (see"),
])
def test_bits_and_landmarks_out_of_range_are_usage_errors(tmp_path, option, value, message):
    args = {"--kernel": "rbf", "--landmarks": "8", "--bits": "64", option: value}
    r = run(["kernel-hash", DIGITS_TRAIN, "-o", tmp_path / "k.khm"] + [a for kv in args.items() for a in kv],
            exit_code=2)
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "k.khm").exists()


def test_more_landmarks_than_training_samples_is_refused(tmp_path):
    train = write_text(tmp_path / "small.svm", "1 1:1\n2 2:1\n1 1:0.5 2:0.1\n")
    _fails(["kernel-hash", train, "-o", tmp_path / "k.khm", "--kernel", "rbf", "--landmarks", "4", "--bits", "64"],
           tmp_path, "k.khm", "--landmarks 4 exceeds the 3 training samples")


@pytest.mark.parametrize("kernel", ["chi2", "intersection"])
def test_negative_feature_for_a_nonnegative_kernel_names_file_and_line(tmp_path, kernel):
    train = write_text(tmp_path / "neg.svm", "1 1:1 2:0.5\n# a comment\n\n2 1:0.2 2:0.1\n2 1:0.3 3:-0.25\n")
    r = _fails(["kernel-hash", train, "-o", tmp_path / "k.khm", "--kernel", kernel, "--landmarks", "2",
                "--bits", "64"], tmp_path, "k.khm", "neg.svm:5: the %s kernel needs non-negative features" % kernel)
    assert "feature 3 is -0.25" in r.stderr


def test_negative_feature_at_prediction_names_file_and_line(tmp_path):
    train = write_text(tmp_path / "pos.svm", "1 1:1 2:0.5\n2 1:0.2 2:0.1\n1 1:0.9 2:0.4\n2 1:0.1 2:0.3\n")
    khm, codes, model = (str(tmp_path / n) for n in ("k.khm", "c.codes", "m.hsvm"))
    run(["kernel-hash", train, "-o", khm, "--kernel", "chi2", "--landmarks", "2", "--bits", "64", "-q"])
    run(["hash-data", "-H", khm, train, "-o", codes, "-q"])
    run(["train-ovo", "--codes", codes, "-o", model, "-q"])
    test = write_text(tmp_path / "test.svm", "1 1:1 2:0.5\n\n2 1:0.2 2:-0.1\n")
    _fails(["predict", "-m", model, "--kernel-hash", khm, test, "-o", tmp_path / "p.txt"], tmp_path, "p.txt",
           "test.svm:3: the chi2 kernel needs non-negative features: feature 2 is -0.1")
    _fails(["hash-data", "-H", khm, test, "-o", tmp_path / "t.codes"], tmp_path, "t.codes", "test.svm:3:")


def test_codes_of_another_kernel_hash_are_refused(pipeline, tmp_path):
    other_khm, other_codes = tmp_path / "o.khm", tmp_path / "o.codes"
    run(["kernel-hash", DIGITS_TRAIN, "-o", other_khm, "-q", "--kernel", "rbf", "--landmarks", "128", "--bits",
         "512", "--seed", "5"])
    run(["hash-data", "-H", other_khm, DIGITS_TEST, "-o", other_codes, "-q"])
    _fails(["predict", "-m", pipeline["m.hsvm"], "--codes", other_codes, "-o", tmp_path / "p.txt"], tmp_path,
           "p.txt", "trained on codes of kernel hash")
    _fails(["predict", "-m", pipeline["m.hsvm"], "--kernel-hash", other_khm, DIGITS_TEST, "-o", tmp_path / "p.txt"],
           tmp_path, "p.txt", "is not the kernel hash")


def test_model_trained_on_codes_used_without_them_is_refused(pipeline, tmp_path):
    # a missing option: a bad command line (exit 2)
    r = run(["predict", "-m", pipeline["m.hsvm"], DIGITS_TEST, "-o", tmp_path / "p.txt"], exit_code=2)
    assert "give that kernel hash (--kernel-hash KERNEL.khm)" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not list(tmp_path.iterdir())
    _fails(["calibrate", "-m", pipeline["m.hsvm"], "-H", pipeline["m.hbm"], DIGITS_TEST, "-o", tmp_path / "c.cal"],
           tmp_path, "c.cal", "trained on kernel hash codes")


def test_kernel_hash_given_for_a_model_of_svmlight_features_is_refused(pipeline, digits_files, tmp_path):
    _fails(["predict", "-m", digits_files[0], "--kernel-hash", pipeline["k.khm"], DIGITS_TEST, "-o",
            tmp_path / "p.txt"], tmp_path, "p.txt", "trained on svmlight features, not on codes")


def test_kernel_codes_are_not_taken_as_hash_filter_codes(pipeline, digits_files, tmp_path):
    model, hbm, _ = digits_files
    _fails(["predict", "-m", model, "-H", hbm, "--codes", pipeline["test.codes"], DIGITS_TEST, "-o",
            tmp_path / "p.txt"], tmp_path, "p.txt", "trained on svmlight features")


def test_train_ovo_codes_refuses_a_primal_solver_and_svmlight_options(pipeline, tmp_path):
    r = run(["train-ovo", "--codes", pipeline["train.codes"], "-o", tmp_path / "m", "--solver", "l2loss-primal"],
            exit_code=2)
    assert "dual solver" in r.stderr
    run(["train-ovo", "--codes", pipeline["train.codes"], "-o", tmp_path / "m", "--normalize", "none"], exit_code=2)
    run(["train-ovo", DIGITS_TRAIN, "--codes", pipeline["train.codes"], "-o", tmp_path / "m"], exit_code=2)
    assert not (tmp_path / "m").exists()


def test_codes_of_a_hash_model_are_refused_for_training(digits_model_file, tmp_path):
    from conftest import DIGITS_TRAIN
    hbm, codes = tmp_path / "m.hbm", tmp_path / "m.codes"
    run(["hash-model", "-q", "-m", digits_model_file, "--bits", "128", "-o", hbm])
    run(["hash-data", "-q", "-H", hbm, DIGITS_TRAIN, "-o", codes])
    r = run(["train-ovo", "--codes", codes, "-c", "1", "-o", tmp_path / "bad.hsvm"], exit_code=65)
    assert r.stderr == ("hsvm: %s: codes of a hash model (.hbm); train-ovo --codes trains on kernel hash codes "
                        "(hash-data -H KERNEL.khm, see hsvm kernel-hash)\n" % codes)
    assert not (tmp_path / "bad.hsvm").exists()


def test_the_hash_model_of_a_codes_trained_model_does_not_hash_svmlight_rows(tmp_path):
    from conftest import DIGITS_TEST, DIGITS_TRAIN
    khm, codes, model, hbm = (str(tmp_path / n) for n in ("k.khm", "k.codes", "k.hsvm", "k.hbm"))
    run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", "rbf", "--landmarks", "32", "--bits", "256", "-o", khm])
    run(["hash-data", "-q", "-H", khm, DIGITS_TRAIN, "-o", codes])
    run(["train-ovo", "-q", "--codes", codes, "-c", "1", "-o", model])
    run(["hash-model", "-q", "-m", model, "--bits", "128", "-o", hbm])
    r = run(["hash-data", "-H", hbm, DIGITS_TEST, "-o", tmp_path / "x.codes"], exit_code=65)
    assert "hashes a model trained on kernel hash codes" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "x.codes").exists()
    # the filter still takes raw rows through the kernel hash
    run(["predict", "-q", "-m", model, "-H", hbm, "-k", "3", "--kernel-hash", khm, DIGITS_TEST])


def test_a_poly_kernel_beyond_float32_is_refused_when_fitted_and_when_hashing(tmp_path):
    from conftest import DIGITS_TRAIN
    r = run(["kernel-hash", DIGITS_TRAIN, "--kernel", "poly", "--degree", "64", "--gamma", "100", "--landmarks",
             "16", "--bits", "64", "-o", tmp_path / "p.khm"], exit_code=65)
    assert "beyond float32" in r.stderr and "lower --gamma, --coef0 or --degree" in r.stderr
    assert not (tmp_path / "p.khm").exists()
    khm = str(tmp_path / "p3.khm")
    run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", "poly", "--degree", "3", "--landmarks", "16", "--bits", "64",
         "-o", khm])
    huge = tmp_path / "huge.svm"
    huge.write_text("1 1:1e30 2:1e30\n")
    r = run(["hash-data", "-H", khm, huge, "-o", tmp_path / "h.codes"], exit_code=65)
    assert "kernel subspace coordinates beyond float32" in r.stderr


def test_an_indefinite_poly_kernel_is_a_usage_error_and_options_of_another_kernel_are_said_and_ignored(tmp_path):
    # a negative coef0 kept 1 landmark of 256 and gave a chance-level model with exit 0
    from conftest import DIGITS_TRAIN, run
    out = tmp_path / "k.khm"
    common = [DIGITS_TRAIN, "--landmarks", "32", "--bits", "64", "-o", out, "-q"]
    r = run(["kernel-hash", "--kernel", "poly", "--coef0=-2"] + common, exit_code=2)
    assert r.stderr.startswith("hsvm kernel-hash: ") and "not positive semi-definite" in r.stderr
    assert r.stderr.count("\n") == 1 and not out.exists()
    run(["kernel-hash", "--kernel", "poly", "--coef0", "0"] + common)
    # what a recipe may pass for every kernel is accepted, said unless -q, one rule for
    # --gamma, --degree and --coef0 (--gamma had been refused for linear and intersection)
    run(["kernel-hash", "--kernel", "linear", "--gamma", "auto"] + common)
    plain = load_kernel_hash(out).content_sha256()
    r = run(["kernel-hash", "--kernel", "linear", "--gamma", "5"] + common[:-1])
    assert "--gamma is for the rbf, chi2 and poly kernels; the linear kernel ignores it" in r.stderr
    assert load_kernel_hash(out).content_sha256() == plain
    r = run(["kernel-hash", "--kernel", "rbf", "--degree", "5"] + common[:-1])
    assert "--degree is for the poly kernel; the rbf kernel ignores it" in r.stderr


def test_train_ovo_codes_takes_class_weights_and_records_them(pipeline, tmp_path):
    out = tmp_path / "w.hsvm"
    run(["train-ovo", "--codes", pipeline["train.codes"], "-o", out, "-c", "1", "-w", "4:3", "-q"])
    plain, weighted = load_model(pipeline["m.hsvm"]), load_model(out)
    assert dict(map(tuple, weighted.params["class_weight"]["weights"]))[4] == 3.0
    touched = (weighted.classes[weighted.pair_a] == 4) | (weighted.classes[weighted.pair_b] == 4)
    assert np.array_equal(np.any(plain.W != weighted.W, axis=1), touched)


def test_a_nearly_degenerate_kernel_is_warned_of_even_with_quiet(tmp_path):
    # gamma 1e-300: every kernel value is 1, one landmark direction is left and every code alike
    out = tmp_path / "g.khm"
    r = run(["kernel-hash", DIGITS_TRAIN, "--kernel", "rbf", "--gamma", "1e-300", "--landmarks", "32", "--bits", "64",
             "-o", out, "-q"])
    assert r.stderr.startswith("hsvm: kernel-hash: warning: only 1 of the 32 landmarks span independent directions")
    assert r.stderr.count("\n") == 1 and out.exists()


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear", "intersection"])
def test_training_rows_without_features_are_refused_not_written_as_an_unreadable_hash(tmp_path, kernel):
    # an rbf hash of label-only rows had been written with exit 0, and every reader refused it
    data = tmp_path / "nf.svm"
    data.write_text("1\n2\n1\n2\n")
    gamma = ["--gamma", "1"] if kernel in ("rbf", "poly") else []
    r = run(["kernel-hash", data, "--kernel", kernel, *gamma, "--landmarks", "2", "--bits", "64",
             "-o", tmp_path / "nf.khm"], exit_code=65)
    assert r.stderr == "hsvm: %s: the samples have no features: there is nothing to hash\n" % data
    assert not (tmp_path / "nf.khm").exists()


@pytest.mark.parametrize("kernel, what", [("linear", "|x|^2 = 1.8e+77"),
                                          ("intersection", "the sum of a row's features = 6e+38")])
def test_kernels_whose_values_leave_float32_on_the_training_rows_are_refused_when_fitted(tmp_path, kernel, what):
    # such a hash was written (exit 0), and then could not hash its own training rows
    data = tmp_path / "big.svm"
    data.write_text("1 1:3e38 2:3e38\n2 1:3e30 2:3e38\n1 1:1 2:2\n")
    r = run(["kernel-hash", data, "--kernel", kernel, "--landmarks", "2", "--bits", "64", "-o", tmp_path / "b.khm"],
            exit_code=65)
    assert r.stderr == ("hsvm: %s: the %s kernel reaches k(x, x) = %s on the training rows, beyond float32, where "
                        "the kernel subspace is kept: scale the features down\n" % (data, kernel, what))
    assert not (tmp_path / "b.khm").exists()


def test_a_sample_whose_subspace_coordinates_leave_float32_is_named_by_file_and_number(tmp_path):
    from conftest import DIGITS_TRAIN
    khm = str(tmp_path / "p3.khm")
    run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", "poly", "--degree", "3", "--landmarks", "16", "--bits", "64",
         "-o", khm])
    # past the kernel hash's own 1024-row chunks, and a comment line between: the file's line
    data = tmp_path / "huge.svm"
    data.write_text("1 1:1 2:1\n# a comment\n" + "2 1:0.5\n" * 1100 + "1 1:1e30 2:1e30\n")
    said = ("%s:1103: kernel subspace coordinates beyond float32: the poly kernel overflows on it (lower --gamma, "
            "--coef0 or --degree)\n" % data)
    for fmt in ("codes", "svm"):
        r = run(["hash-data", "-H", khm, data, "--format", fmt, "-o", tmp_path / "h.out"], exit_code=65)
        assert r.stderr == "hsvm: " + said
        assert not (tmp_path / "h.out").exists()
    model = tmp_path / "m.hsvm"
    codes = tmp_path / "train.codes"
    run(["hash-data", "-q", "-H", khm, DIGITS_TRAIN, "-o", codes])
    run(["train-ovo", "-q", "--codes", codes, "-o", model])
    r = run(["predict", "-m", model, "--kernel-hash", khm, data, "-o", tmp_path / "p"], exit_code=65)
    assert r.stderr == "hsvm: " + said
    assert not (tmp_path / "p").exists()


def test_kernel_codes_given_to_a_model_of_svmlight_features_say_so_at_once(pipeline, digits_model_file, tmp_path):
    # the advice had been to give a hash model with -H, which then refused them
    run(["predict", "-m", digits_model_file, "--codes", pipeline["test.codes"], DIGITS_TEST, "-o", tmp_path / "p"],
        exit_code=65, stdout="",
        stderr="hsvm: %s: codes of a kernel hash, which only a model trained on them (train-ovo --codes) takes; %s "
               "was trained on svmlight features\n" % (pipeline["test.codes"], digits_model_file))
    assert not (tmp_path / "p").exists()


def test_a_kernel_hash_from_stdin_is_refused_naming_every_kind_h_takes(pipeline, tmp_path):
    with open(pipeline["k.khm"], "rb") as f:
        r = run(["hash-data", "-H", "-", DIGITS_TEST, "-o", tmp_path / "c"], exit_code=2, input=f.read())
    assert "-H files (hash models, kernel hashes, learned circulant hashes) cannot be read from stdin" in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "c").exists()
