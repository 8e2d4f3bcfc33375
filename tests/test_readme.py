"""The README's Python examples run as written."""
import os
import re

from conftest import REPO


def run_example(heading, monkeypatch, capsys):
    """Run the first Python block after ``heading``; returns its stdout."""
    text = (REPO / "README.md").read_text()
    section = text[text.index(heading):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    return capsys.readouterr().out


def test_readme_python_api_example_runs(monkeypatch, capsys):
    out = run_example("## Python API", monkeypatch, capsys)
    assert re.search(r"exact \d+\.\d\d%, hashed \d+\.\d\d%", out)
    assert "accuracy" in out and os.getcwd() == str(REPO)


def test_readme_scikit_learn_example_runs(monkeypatch, capsys):
    out = run_example("### scikit-learn", monkeypatch, capsys)
    assert re.search(r"C = \S+, accuracy \d+\.\d\d%", out) and "filter_k" in out
