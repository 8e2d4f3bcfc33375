"""The README's Python example runs as written."""
import os
import re

from conftest import REPO


def test_readme_python_api_example_runs(monkeypatch, capsys):
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert re.search(r"exact \d+\.\d\d%, hashed \d+\.\d\d%", out)
    assert "accuracy" in out and os.getcwd() == str(REPO)
