from conftest import run


def test_version_and_help_exit_zero():
    run(["--version"])
    for sub in ["train-ovo", "hash-model", "hash-data", "predict", "eval"]:
        run([sub, "--help"])
