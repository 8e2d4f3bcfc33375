import pytest

from conftest import run


def test_version_and_help_exit_zero():
    run(["--version"])
    for sub in ["train-ovo", "hash-model", "hash-data", "predict", "eval"]:
        run([sub, "--help"])


@pytest.mark.parametrize("args, line", [
    (["predict"], "hsvm predict: Missing option '-m' / '--model' (see 'hsvm predict --help')"),
    (["predict", "-m", "x", "--bogus", "y"],
     "hsvm predict: No such option '--bogus'. Did you mean '--bits'? (see 'hsvm predict --help')"),
    (["predixt"], "hsvm: No such command 'predixt'. Did you mean 'predict'? (see 'hsvm --help')"),
    (["train-ovo", "t.svm", "-c", "many", "-o", "m.hsvm"],
     "hsvm train-ovo: Invalid value for '-c': expected a positive number or 'auto', got 'many' "
     "(see 'hsvm train-ovo --help')"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(args, line):
    r = run(args, exit_code=2)
    assert r.stderr.splitlines() == [line] and r.stdout == ""
