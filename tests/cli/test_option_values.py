"""Out-of-range numbers on the command line are usage errors (exit 2, one
message naming the option), never a traceback or a value taken modulo."""
import re
import subprocess
import sys

import pytest

from conftest import DIGITS_TEST, run


@pytest.mark.parametrize("seed", ["-1", str(2**64)])
@pytest.mark.parametrize("command", [["train-ovo", "{train}", "-o", "{out}"],
                                     ["hash-model", "-m", "{model}", "--bits", "64", "-o", "{out}"],
                                     ["kernel-hash", "{train}", "--kernel", "rbf", "--landmarks", "4", "--bits", "64",
                                      "-o", "{out}"]])
def test_seed_outside_64_bits_is_a_usage_error(toy_model, tmp_path, command, seed):
    train, model = toy_model
    args = [a.format(train=train, model=model, out=tmp_path / "out") for a in command]
    r = run(args + ["--seed", seed], exit_code=2)
    assert "Invalid value for '--seed'" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["hash-model", "-m", "{model}", "-o", "{out}"],
                                     ["kernel-hash", "{train}", "--kernel", "rbf", "--landmarks", "4", "-o", "{out}"],
                                     ["fit-circulant", "{train}", "--targets", "itq", "-o", "{out}"]])
def test_codes_longer_than_the_files_hold_are_refused_before_any_work(toy_model, tmp_path, command):
    # a kernel hash of 10^9 bits was written, then refused by every reader
    train, model = toy_model
    args = [a.format(train=train, model=model, out=tmp_path / "out") for a in command]
    r = run(args + ["--bits", str(2**20 + 64)], exit_code=2)
    assert "1048576" in r.stderr and "bits" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command, shown", [(["train-ovo"], ["0<=x<=2^64-1", "1<=x<=2^63-1"]),
                                            (["import-model"], ["1<=x<=2^31-2"])])
def test_large_option_bounds_read_as_powers_of_two(command, shown):
    # 9223372036854775807 has to be counted to be read
    text = " ".join(run(command + ["--help"]).stdout.split())
    for bound in shown:
        assert bound in text, bound
    assert not re.search(r"\d{8}", text), text


@pytest.mark.parametrize("command", ["predict", "hash-data"])
def test_chunk_rows_past_its_bound_is_a_usage_error_not_a_traceback(digits_files, tmp_path, command):
    # the early parse handed 2^63 to C before click saw it: OverflowError
    model, hbm, _ = digits_files
    train = DIGITS_TEST
    args = ["predict", "-m", model] if command == "predict" else ["hash-data", "-H", hbm, "-o", tmp_path / "c"]
    for value in (str(2**63), "99999999999999999999999", str(2**40 + 1)):
        r = run(args + ["--chunk-rows", value, train], exit_code=2)
        assert r.stderr.startswith("hsvm %s: Invalid value for '--chunk-rows': %s is not in the range 1<=x<=2^40"
                                   % (command, value)), r.stderr
    # the console script, whose early parse reads the option before click
    p = subprocess.run([sys.executable, "-m", "hsvm_cli"] + [str(a) for a in args] + ["--chunk-rows", str(2**63),
                                                                                     train], capture_output=True)
    assert p.returncode == 2 and b"Traceback" not in p.stderr and p.stderr.count(b"\n") == 1, p.stderr


def test_largest_seed_is_accepted(toy_model, tmp_path):
    train, _ = toy_model
    run(["train-ovo", train, "--bags", "2", "--seed", str(2**64 - 1), "-o", tmp_path / "m.hsvm", "-q"])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("command, option", [
    (["train-ovo", "{train}", "-o", "{out}"], "--eps"),
    (["fit-circulant", "{train}", "--targets", "itq", "--bits", "64", "-o", "{out}"], "-c"),
    (["fit-circulant", "{train}", "--targets", "itq", "--bits", "64", "-o", "{out}"], "--eps"),
    (["kernel-hash", "{train}", "--kernel", "poly", "--landmarks", "4", "--bits", "64", "-o", "{out}"], "--coef0"),
    (["kernel-hash", "{train}", "--kernel", "rbf", "--landmarks", "4", "--bits", "64", "-o", "{out}"], "--gamma"),
    (["calibrate", "{train}", "-m", "{model}", "-o", "{out}"], "--max-loss"),
    (["calibrate", "{train}", "-m", "{model}", "-o", "{out}"], "--confidence"),
    (["calibrate", "{train}", "-m", "{model}", "-o", "{out}"], "--timing-budget"),
    (["calibrate", "{train}", "-m", "{model}", "-o", "{out}"], "--epsilon"),
    (["predict", "{train}", "-m", "{model}", "-o", "{out}"], "--filter-threshold"),
])
def test_non_finite_numbers_are_usage_errors_naming_the_option(toy_model, tmp_path, command, option, value):
    train, model = toy_model
    args = [a.format(train=train, model=model, out=tmp_path / "out") for a in command]
    r = run(args + [option, value], exit_code=2)
    # click names an option by all its flags: '-B' / '--bias'
    assert re.search(r"Invalid value for (%s|'-\w' / '%s')" % (re.escape("'%s'" % option), re.escape(option)),
                     r.stderr) or "Invalid value for %s" % option in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_calibrate_epsilon_out_of_range_is_blamed_on_epsilon(toy_model, tmp_path):
    train, model = toy_model
    r = run(["calibrate", train, "-m", model, "-o", tmp_path / "c", "--epsilon", "0.1,1.5"], exit_code=2)
    assert "'--epsilon'" in r.stderr and "1.5" in r.stderr and "filter-threshold" not in r.stderr


@pytest.mark.parametrize("args, option", [
    (["predict", "-m", "{model}", "{test}", "-o", ""], "'-o' / '--output'"),
    (["predict", "-m", "{model}", "-H", "", "{test}"], "'-H' / '--hash-model'"),
    (["predict", "-m", "{model}", "-C", "", "{test}"], "'-C' / '--calibration'"),
    (["predict", "-m", "", "{test}"], "'-m' / '--model'"),
    (["calibrate", "-m", "{model}", "{test}", "-o", "{out}", "--grid-json", ""], "'--grid-json'"),
    (["eval", "--truth", "{test}", ""], "'[TRUTH] PREDICTIONS'"),
    (["info", ""], "'FILES...'"),
    (["fit-circulant", "{test}", "--targets", "", "--bits", "64", "-o", "{out}"], "'--targets'"),
])
def test_an_empty_file_name_is_a_usage_error_naming_its_option(digits_model_file, tmp_path, args, option):
    # a recipe's unset variable: -o '' was "cannot write: is a directory", -C '' was taken as not given
    out = tmp_path / "out"
    values = {"model": digits_model_file, "test": DIGITS_TEST, "out": str(out)}
    r = run([a.format(**values) for a in args], exit_code=2)
    assert "Invalid value for %s: empty file name" % option in r.stderr and not out.exists()


@pytest.mark.parametrize("command, option", [("eval", "--grid"), ("predict", "-m"), ("train-ovo", "-c")])
def test_an_option_missing_its_value_is_the_commands_one_line(command, option):
    # click's parser raised it without the subcommand's context: "Error: ..." and no hint
    r = run([command, option], exit_code=2)
    assert r.stderr == "hsvm %s: Option '%s' requires an argument (see 'hsvm %s --help')\n" % (command, option, command)


@pytest.mark.parametrize("bags", [str(2 ** 20 + 1), str(2 ** 63 - 1), "99999999999999999999"])
def test_more_bags_than_a_model_file_holds_is_a_usage_error(toy_model, tmp_path, bags):
    # 2^63 - 1 and beyond had crashed inside numpy with a traceback (exit 1)
    train, _ = toy_model
    r = run(["train-ovo", train, "--bags", bags, "-o", tmp_path / "m.hsvm"], exit_code=2)
    assert "Invalid value for '--bags'" in r.stderr and "1048576" in r.stderr and r.stderr.count("\n") == 1
    import hsvm_cli as H
    X, y = H.load_svmlight(train)
    with pytest.raises(H.HsvmError, match="bags must be an integer from 1 to 1048576"):
        H.train_ovo(X, y, bags=int(bags))


def test_a_bias_whose_square_overflows_and_a_per_class_past_int64_are_refused(toy_model, tmp_path):
    # -B 1e308 had trained an all-zero model without a word; --per-class 10^20 had crashed inside numpy
    train, _ = toy_model
    r = run(["train-ovo", train, "-B", "1e308", "-o", tmp_path / "m.hsvm"], exit_code=2)
    assert "its square overflows" in r.stderr and r.stderr.count("\n") == 1
    run(["train-ovo", train, "-B", "-1e308", "-q", "-o", tmp_path / "m.hsvm"])      # <= 0: no bias term
    r = run(["train-ovo", train, "--per-class", str(10 ** 20), "-o", tmp_path / "n.hsvm"], exit_code=2)
    assert "Invalid value for '--per-class'" in r.stderr and r.stderr.count("\n") == 1
    import hsvm_cli as H
    X, y = H.load_svmlight(train)
    with pytest.raises(H.HsvmError, match="bias 1e\\+308 is too large"):
        H.train_ovo(X, y, bias=1e308)
    with pytest.raises(H.HsvmError, match="per_class must be an integer from 1 to"):
        H.train_ovo(X, y, per_class=10 ** 20)


@pytest.mark.parametrize("value", ["1_000", "\u0666\u0664", "\uff13", "12 3"])
@pytest.mark.parametrize("option, command", [
    ("--seed", ["hash-model", "-m", "{model}", "--bits", "64", "-o", "{out}"]),
    ("--bits", ["hash-model", "-m", "{model}", "-o", "{out}"]),
    ("-k", ["predict", "-m", "{model}", "--exact", "{train}", "-o", "{out}"]),
    ("--chunk-rows", ["predict", "-m", "{model}", "--exact", "{train}", "-o", "{out}"]),
    ("--threads", ["predict", "-m", "{model}", "--exact", "{train}", "-o", "{out}"]),
    ("--shard", ["predict", "-m", "{model}", "--exact", "{train}", "-o", "{out}"]),
    ("--k", ["calibrate", "-m", "{model}", "{train}", "-o", "{out}"]),
    ("--recall-k", ["eval", "--truth", "{train}", "{train}", "-o", "{out}"]),
    ("--dask", ["predict", "-m", "{model}", "--exact", "{train}", "-o", "{out}"]),
])
def test_integers_are_ascii_decimal_digits_as_in_the_data_files(toy_model, tmp_path, option, command, value):
    # Python's int() had taken "1_000", Arabic-Indic and full-width digits
    train, model = toy_model
    args = [a.format(train=train, model=model, out=tmp_path / "out") for a in command]
    if option == "--shard":
        value = value + "/4"
    elif option == "--dask":
        value = "local:" + value
    r = run(args + [option, value], exit_code=2)
    assert r.stderr.count("\n") == 1 and ("'%s'" % option in r.stderr or option in r.stderr), r.stderr
    assert not (tmp_path / "out").exists()


def test_signed_and_padded_decimal_integers_are_still_integers(toy_model, tmp_path):
    train, model = toy_model
    run(["hash-model", "-q", "-m", model, "--bits", " +64", "--seed", "007", "-o", tmp_path / "a.hbm"])
    run(["hash-model", "-q", "-m", model, "--bits", "64", "--seed", "7", "-o", tmp_path / "b.hbm"])
    assert (tmp_path / "a.hbm").read_bytes() == (tmp_path / "b.hbm").read_bytes()
