"""Memory checks see every limit a process runs under: the machine's free
memory, ``ulimit -v`` and the memory cgroup; what no check foresaw is one
line, not a traceback."""
import resource
import subprocess
import sys

from hsvm_cli.support import memory

HSVM = [sys.executable, "-m", "hsvm_cli"]
LIMIT = 3 << 30


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _hsvm_limited(*args, cwd):
    return subprocess.run(HSVM + [str(a) for a in args], capture_output=True, preexec_fn=_limited, cwd=cwd)


def test_address_space_limit_bounds_the_available_memory():
    code = "from hsvm_cli.support.memory import available_memory as a; print(a())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=_limited)
    assert r.returncode == 0, r.stderr
    assert 0 < int(r.stdout) < LIMIT


def test_cgroup_limit_less_reclaimable_cache_is_what_is_left(tmp_path):
    for name, text in (("memory.max", "1000000\n"), ("memory.current", "700000\n"),
                       ("memory.stat", "anon 500000\ninactive_file 200000\n")):
        (tmp_path / name).write_text(text)
    assert memory._cgroup_files(str(tmp_path), "/", "memory.max", "memory.current", "inactive_file") == 500000
    (tmp_path / "memory.max").write_text("max\n")
    assert memory._cgroup_files(str(tmp_path), "/", "memory.max", "memory.current", "inactive_file") is None


def test_training_a_model_wider_than_ulimit_allows_is_refused_in_one_line(tmp_path):
    (tmp_path / "wide.svm").write_text("1 1:1\n2 400000000:1\n1 2:1\n")
    r = _hsvm_limited("train-ovo", "wide.svm", "-o", "w.hsvm", cwd=tmp_path)
    assert r.returncode == 65, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "and 1 solver would need 4.47 GiB of memory" in lines[0], lines
    assert not (tmp_path / "w.hsvm").exists()


LIBSVM_HEAD = "svm_type c_svc\nkernel_type linear\nnr_class 2\ntotal_sv 2\nrho 0.5\nlabel 1 2\nnr_sv 1 1\nSV\n"


def test_importing_a_model_wider_than_ulimit_allows_is_refused_in_one_line(tmp_path):
    (tmp_path / "wide.model").write_text(LIBSVM_HEAD + "1 200000000:1\n-1 1:1\n")
    r = _hsvm_limited("import-model", "wide.model", "-o", "w.hsvm", cwd=tmp_path)
    assert r.returncode == 65, r.stderr
    assert r.stderr.decode().splitlines() == [
        "hsvm: wide.model: 1 pair normals x 200000000 features (a support vector uses feature 200000000) would "
        "need 3.73 GiB of memory; %s are available" % r.stderr.decode().split("; ")[1].split(" are")[0]]
    (tmp_path / "narrow.model").write_text(LIBSVM_HEAD + "1 2:1\n-1 1:1\n")
    r = _hsvm_limited("import-model", "narrow.model", "--n-features", "300000000", "-o", "w.hsvm", cwd=tmp_path)
    assert r.returncode == 65, r.stderr
    assert "--n-features 300000000 would need" in r.stderr.decode()
    assert not (tmp_path / "w.hsvm").exists()


def test_an_unforeseen_memory_error_is_one_line_and_leaves_no_output(tmp_path, monkeypatch):
    import hsvm_cli.cli.cmd_train_ovo as cmd

    from conftest import TOY, run, write_text

    def exhausted(*args, **kw):
        raise MemoryError()
    monkeypatch.setattr(cmd, "train_ovo_file", exhausted)
    train = write_text(tmp_path / "t.svm", TOY)
    r = run(["train-ovo", train, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr.startswith("hsvm: out of memory") and r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.svm"]


def test_an_unforeseen_numpy_allocation_failure_says_how_much_it_asked_for(tmp_path, monkeypatch):
    import numpy as np

    import hsvm_cli.cli.cmd_train_ovo as cmd

    from conftest import TOY, run, write_text

    def exhausted(*args, **kw):
        # numpy's own MemoryError, as np.empty raises it (made here: a machine
        # that overcommits memory could grant the allocation itself)
        try:
            from numpy._core._exceptions import _ArrayMemoryError
        except ImportError:                      # numpy 1.x
            from numpy.core._exceptions import _ArrayMemoryError
        raise _ArrayMemoryError((1 << 45,), np.dtype(np.uint8))
    monkeypatch.setattr(cmd, "train_ovo_file", exhausted)
    train = write_text(tmp_path / "t.svm", TOY)
    r = run(["train-ovo", train, "-o", tmp_path / "m.hsvm"], exit_code=65)
    assert r.stderr.startswith("hsvm: out of memory allocating 32768.00 GiB: the input or model is too large for "
                               "this machine or its limits (ulimit -v, cgroup; "), r.stderr
    assert r.stderr.endswith(" free now that the failed work has let go)\n")
    assert r.stderr.count("\n") == 1
