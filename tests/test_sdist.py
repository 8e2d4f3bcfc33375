"""A source distribution holds what building hsvm needs: every file of the C
library (sources, headers, the cffi build script setup.py names), so that
`pip install hsvm-X.tar.gz` builds as `pip install .` does."""
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import REPO


def _copy_checkout(dst, skip=()):
    """The checkout's files (tracked and untracked, not ignored) copied to dst:
    an egg-info directory left by an earlier build would list files
    setuptools includes even without MANIFEST.in."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        if (REPO / name).is_file() and not name.startswith(tuple(skip)):
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dst / name)


def test_the_source_distribution_holds_every_file_the_build_reads(tmp_path):
    # Built from a copy of the checkout's files: an egg-info directory left by
    # an earlier build lists files setuptools would include even without
    # MANIFEST.in.
    src, dist = tmp_path / "src", tmp_path / "dist"
    _copy_checkout(src)
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)], cwd=src,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (archive,) = dist.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {Path(n).relative_to(Path(n).parts[0]).as_posix() for n in tar.getnames() if len(Path(n).parts) > 1}
    needed = {p.relative_to(REPO).as_posix() for p in (REPO / "native").iterdir() if p.suffix in (".c", ".h", ".py")}
    assert needed <= names, sorted(needed - names)
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE"} <= names
    # what the README (the package's description) links to
    import re
    linked = set(re.findall(r"\]\(((?:docs|examples)/[^)#\s]+)\)", (REPO / "README.md").read_text()))
    linked = {n.rstrip("/") for n in linked}
    assert linked and linked <= names, sorted(linked - names)
    assert "examples/slurm/Makefile" in names
    assert not [n for n in names if n.startswith("tests/")], "tests ship without conftest and data"


def test_the_package_says_the_version_its_metadata_says():
    import re

    import hsvm_cli
    text = (REPO / "pyproject.toml").read_text()
    (declared,) = re.findall(r'^version = "([^"]+)"$', text, flags=re.M)
    assert hsvm_cli.__version__ == declared


def test_the_wheel_is_tagged_for_the_stable_abi(tmp_path):
    # cffi builds _native.abi3.so against the stable ABI: one wheel serves
    # every CPython from 3.9 on (checked by hand on 3.12 with a wheel built
    # on 3.11), where it had been tagged for the building interpreter alone.
    src, dist = tmp_path / "src", tmp_path / "dist"
    _copy_checkout(src, skip=("tests/", "bench/", "data/"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                        str(dist), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = dist.glob("*.whl")
    assert "-cp39-abi3-" in wheel.name, wheel.name


def test_a_build_without_cffi_is_refused_in_words_not_made_without_the_c_library(tmp_path):
    # pip install --no-build-isolation in an environment without cffi: setuptools ignored the
    # cffi_modules keyword with a warning and made a wheel that installed and failed at the first command
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['cffi'] = None\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(hide))
    r = subprocess.run([sys.executable, "setup.py", "--name"], cwd=REPO, capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 1 and "hsvm's C library is built with cffi, which this environment lacks" in r.stderr
