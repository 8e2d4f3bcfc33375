"""The README's Python examples and Makefile recipe run as written."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

from conftest import REPO


def run_example(heading, monkeypatch, capsys, tmp_path):
    """Run the first Python block after ``heading``; returns its stdout.
    Its temporary directories (tempfile.mkdtemp, as a user's would be) are
    made under the test's own, so that every run does not leave one in /tmp."""
    import tempfile
    text = (REPO / "README.md").read_text()
    section = text[text.index(heading):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    return capsys.readouterr().out


def test_readme_python_api_example_runs(monkeypatch, capsys, tmp_path):
    out = run_example("## Python API", monkeypatch, capsys, tmp_path)
    assert re.search(r"exact \d+\.\d\d%, hashed \d+\.\d\d%", out)
    assert "accuracy" in out and os.getcwd() == str(REPO)


def test_readme_scikit_learn_example_runs(monkeypatch, capsys, tmp_path):
    out = run_example("### scikit-learn", monkeypatch, capsys, tmp_path)
    assert re.search(r"C = \S+, accuracy \d+\.\d\d%", out) and "filter_k" in out


def test_readme_makefile_recipe_builds_and_a_failed_step_leaves_no_target(tmp_path):
    text = (REPO / "README.md").read_text()
    section = text[text.index("## A Makefile experiment recipe"):]
    (tmp_path / "Makefile").write_text(re.search(r"```make\n(.*?)```", section, re.S).group(1))
    (tmp_path / "data" / "bad").mkdir(parents=True)
    (tmp_path / "data" / "digits").symlink_to(REPO / "data" / "digits")
    shutil.copy(REPO / "data" / "digits" / "train.svm.gz", tmp_path / "data" / "bad" / "train.svm.gz")
    (tmp_path / "data" / "bad" / "test.svm.gz").write_bytes(
        gzip.compress(b"1 1:0.5\n2 1:abc\n"))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])

    def make(*targets):
        return subprocess.run(["make", "-j2", "D=256", "K=3"] + list(targets), cwd=tmp_path, env=env,
                               capture_output=True, text=True)
    r = make("out/digits-d256-k3.json")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "digits-d256-k3.json").read_text())["accuracy"] > 0.9
    # another D is another hash model, not the old one taken for done
    r = subprocess.run(["make", "D=128", "K=3", "out/digits-d128-k3.json"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--bits 128" in r.stdout and "train-ovo" not in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "out" / "digits-d256.hbm").exists() and (tmp_path / "out" / "digits-d128.hbm").exists()
    for _ in range(2):     # the failed target is not left behind, so make tries it again
        r = make("out/bad-d256-k3.json")
        assert r.returncode != 0 and "bad/test.svm.gz:2" in r.stderr
        assert not (tmp_path / "out" / "bad-d256-k3.json").exists()
