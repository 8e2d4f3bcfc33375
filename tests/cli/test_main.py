import pytest

from conftest import DIGITS_TEST, DIGITS_TRAIN, run


def test_version_and_help_exit_zero():
    run(["--version"])
    for sub in ["train-ovo", "hash-model", "hash-data", "predict", "eval"]:
        run([sub, "--help"])


@pytest.mark.parametrize("command", [[], ["train-ovo"], ["hash-model"], ["hash-data"], ["predict"], ["calibrate"],
                                     ["eval"], ["import-model"], ["merge-models"], ["info"], ["kernel-hash"],
                                     ["fit-circulant"]])
def test_help_pages_fit_80_columns_and_break_lines_between_words_only(monkeypatch, command):
    # click's wrapping broke after hyphens: '--zero-' / 'based' read as an option of its own
    monkeypatch.setenv("COLUMNS", "80")
    lines = run(command + ["--help"]).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert [line for line in lines if line[-2:-1].isalnum() and line.endswith("-")] == []


@pytest.mark.parametrize("args, line", [
    (["predict"], "hsvm predict: Missing option '-m' / '--model' (see 'hsvm predict --help')"),
    (["predict", "-m", "x", "--bogus", "y"],
     "hsvm predict: No such option '--bogus'. Did you mean '--bits'? (see 'hsvm predict --help')"),
    (["predixt"], "hsvm: No such command 'predixt'. Did you mean 'predict'? (see 'hsvm --help')"),
    (["train-ovo", "t.svm", "-c", "many", "-o", "m.hsvm"],
     "hsvm train-ovo: Invalid value for '-c': expected a positive number or 'auto', got 'many' "
     "(see 'hsvm train-ovo --help')"),
    # -o is optional in --help: the message says when
    (["train-ovo", "t.svm", "-c", "2"],
     "hsvm train-ovo: Missing option '-o' / '--output' (only --cv F, -c auto or --c-grid run without one: they "
     "report, and write no model) (see 'hsvm train-ovo --help')"),
    # click lays the choices out over lines: spaces here, not \x0a\x09 escapes
    (["kernel-hash", "t.svm", "-o", "k.khm"],
     "hsvm kernel-hash: Missing option '--kernel'. Choose from: rbf, chi2, intersection, poly, linear "
     "(see 'hsvm kernel-hash --help')"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(args, line):
    r = run(args, exit_code=2)
    assert r.stderr.splitlines() == [line] and r.stdout == ""


def test_shell_completion_lists_subcommands_and_their_options():
    # README: eval "$(_HSVM_COMPLETE=bash_source hsvm)"; subcommands load on demand
    import os
    import subprocess
    import sys
    hsvm = [sys.executable, "-m", "hsvm_cli"]
    env = dict(os.environ, _HSVM_COMPLETE="bash_complete", COMP_WORDS="hsvm pre", COMP_CWORD="1")
    out = subprocess.run(hsvm, env=env, capture_output=True, text=True).stdout
    assert out.split() == ["plain,predict"]
    env.update(COMP_WORDS="hsvm predict --filter", COMP_CWORD="2")
    out = subprocess.run(hsvm, env=env, capture_output=True, text=True).stdout
    assert set(out.split()) == {"plain,--filter-k", "plain,--filter-threshold"}
    env.update(_HSVM_COMPLETE="bash_source")
    assert "_hsvm_completion" in subprocess.run(hsvm, env=env, capture_output=True, text=True).stdout


def test_a_misspelt_subcommand_gets_a_suggestion_in_a_fresh_process():
    # commands load on demand: in a new process none is loaded when the name is looked up
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "hsvm_cli", "trian-ovo"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == "hsvm: No such command 'trian-ovo'. Did you mean 'train-ovo'? (see 'hsvm --help')\n"


def test_the_command_list_gives_every_subcommand_a_whole_one_line_summary():
    # click cut each docstring's first sentence at ~45 characters ("Hash the
    # classifiers of MODEL with D sign random...")
    from hsvm_cli.cli.main import SUBCOMMANDS
    text = run(["--help"]).stdout
    listed = text[text.index("Commands:"):].splitlines()[1:]
    assert [line.split()[0] for line in listed] == list(SUBCOMMANDS)
    assert not [line for line in listed if line.rstrip().endswith("...")], listed


def test_a_file_whose_name_starts_with_a_dash_is_pointed_to_double_dash(tmp_path):
    # `hsvm predict -m M -x.svm` read "-x" as an unknown option and said no more
    import shutil
    import subprocess
    import sys

    from conftest import DIGITS_TEST
    shutil.copy(DIGITS_TEST, tmp_path / "-x.svm.gz")
    r = subprocess.run([sys.executable, "-m", "hsvm_cli", "predict", "-m", "m.hsvm", "-x.svm.gz"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr == "hsvm predict: No such option '-x' (the file -x.svm.gz? put -- before it, or write " \
                       "./-x.svm.gz) (see 'hsvm predict --help')\n"


def test_progress_bars_need_a_terminal_of_some_width_and_height(monkeypatch):
    # on a pty nobody sized (0 columns or 0 lines) tqdm drew nothing but left an empty line
    import os
    import sys

    from hsvm_cli.cli import options

    class Tty:
        def isatty(self):
            return True

        def fileno(self):
            return 2

    monkeypatch.setattr(sys, "stderr", Tty())
    for size, shown in (((100, 40), True), ((0, 40), False), ((100, 0), False), ((19, 40), False)):
        monkeypatch.setattr(os, "get_terminal_size", lambda fd, size=size: os.terminal_size(size))
        assert options.show_progress(False) is shown, size
        assert options.show_progress(True) is False


def test_natural_first_mistakes_get_what_to_do_next(tmp_path, digits_model_file):
    from conftest import DIGITS_TEST, DIGITS_TRAIN
    # LIBSVM's `svm-train data model`
    r = run(["train-ovo", DIGITS_TRAIN, str(tmp_path / "m2")], exit_code=2)
    assert "Got unexpected extra argument (%s) (an output file is named with -o FILE)" % (tmp_path / "m2") in r.stderr
    # the model as TEST, and -H without the model
    r = run(["predict", digits_model_file, DIGITS_TEST], exit_code=2)
    assert "(%s is an hsvm model: give it with -m, and the data as TEST)" % digits_model_file in r.stderr
    hbm = tmp_path / "m.hbm"
    run(["hash-model", "-q", "-m", digits_model_file, "--bits", "64", "-o", hbm])
    r = run(["predict", "-H", hbm, DIGITS_TEST], exit_code=2)
    assert "give the model (.hsvm) with -m" in r.stderr
    # the data where the model goes (swapped files)
    r = run(["predict", "-m", DIGITS_TEST, digits_model_file], exit_code=65)
    assert "but gzip-compressed svmlight data (a label, then index:value pairs)" in r.stderr


def test_an_output_given_as_an_argument_is_pointed_to_o(tmp_path):
    # `import-model m.model m.hsvm`, as LIBSVM's tools take their output
    import subprocess
    import sys

    from conftest import TOOL_FIXTURES
    r = subprocess.run([sys.executable, "-m", "hsvm_cli", "import-model", str(TOOL_FIXTURES / "libsvm_c3.model"),
                        str(tmp_path / "new.hsvm")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert "Missing option '-o' / '--output' (is %s the output? name it with -o %s)" % (
        tmp_path / "new.hsvm", tmp_path / "new.hsvm") in r.stderr


def test_hints_read_the_runs_own_words_not_the_hosts(monkeypatch, tmp_path):
    # in-process (CliRunner, cli.main(args=...)), sys.argv is the host's
    from conftest import TOOL_FIXTURES
    monkeypatch.setattr("sys.argv", ["host.py", "in.txt", "results.out"])
    r = run(["import-model", str(TOOL_FIXTURES / "libsvm_c3.model")], exit_code=2)
    assert "results.out" not in r.stderr
    r = run(["import-model", str(TOOL_FIXTURES / "libsvm_c3.model"), str(tmp_path / "n.hsvm")], exit_code=2)
    assert "is %s the output?" % (tmp_path / "n.hsvm") in r.stderr
    # an input named wrong with -o forgotten is no output, nor is a second input beside -o
    r = run(["calibrate", "-m", str(TOOL_FIXTURES / "libsvm_c3.model"), str(tmp_path / "tpyo.svm")], exit_code=2)
    assert "the output?" not in r.stderr
    r = run(["predict", "-m", "m", str(TOOL_FIXTURES / "digits3.test.svm"), str(TOOL_FIXTURES / "digits3.test.svm"),
             "-o", str(tmp_path / "o")], exit_code=2)
    assert "unexpected extra argument" in r.stderr and "-o FILE" not in r.stderr


def test_libsvm_habits_get_their_hints():
    # svm-train's -h 0 (shrinking) printed the help, exit 0 and no model; -g,
    # -s 0 and an output file after TEST pointed nowhere useful
    r = run(["train-ovo", DIGITS_TRAIN, "-c", "1", "-h", "0", "-o", "m.hsvm"], exit_code=2)
    assert "-h is help here: LIBSVM's -h 0 (shrinking) is no option of hsvm" in r.stderr, r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "-g", "0.1", "-t", "2"], exit_code=2)
    assert "kernel-hash --kernel rbf --gamma G" in r.stderr
    r = run(["train-ovo", DIGITS_TRAIN, "-s", "0"], exit_code=2)
    assert "LIBSVM's -s 0 (C-SVC) is what train-ovo trains: leave -s out" in r.stderr
    r = run(["predict", "-m", "m.hsvm", DIGITS_TEST, "out.txt"], exit_code=2)
    assert "(an output file is named with -o FILE)" in r.stderr
    assert "train-ovo [OPTIONS] [TRAIN]" in run(["train-ovo", "-h"]).stdout.splitlines()[0]        # -h alone: help


def test_eval_usage_shows_its_files_optional_as_a_whole():
    # eval --grid grid.json runs without them; the usage line had PREDICTIONS required (CliRunner calls it cli)
    assert run(["eval", "--help"]).stdout.startswith("Usage: cli eval [OPTIONS] [[TRUTH] PREDICTIONS]\n")
