"""What `-o PATH` does to whatever PATH is: regular files are replaced
atomically, links are followed, devices, FIFOs and /dev/stdout are written
through and never replaced; write errors are exit 74 with one line."""
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import DIGITS_TEST

HSVM = [sys.executable, "-m", "hsvm_cli"]


def hsvm(*args, **kw):
    return subprocess.run(HSVM + [str(a) for a in args], capture_output=True, **kw)


@pytest.fixture(scope="module")
def model(digits_model_file):
    return str(digits_model_file)


@pytest.fixture(scope="module")
def expected(model):
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _char_device(path, minor):
    """A character device node of the memory driver (major 1): minor 3 is
    /dev/null, 7 is /dev/full.  Needs CAP_MKNOD (root here)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.fail("mknod is not permitted here: run the suite as root to test device outputs")
    return path


def test_regular_file_is_replaced_and_keeps_its_permissions(model, expected, tmp_path):
    out = tmp_path / "pred.txt"
    out.write_text("old content that is longer than the new one\n" * 1000)
    out.chmod(0o640)
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == expected
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["pred.txt"]  # no temporary left


def test_symlink_to_a_regular_file_replaces_the_target_not_the_link(model, expected, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_bytes() == expected


def test_hard_linked_output_gets_a_new_file_and_the_other_name_keeps_the_old_content(model, expected, tmp_path):
    out = tmp_path / "pred.txt"
    out.write_text("old\n")
    other = tmp_path / "other.txt"
    os.link(out, other)
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == expected and other.read_text() == "old\n"
    assert out.stat().st_nlink == 1 and other.stat().st_nlink == 1


def test_dangling_symlink_creates_its_target(model, expected, tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to("sub/new.txt")
    (tmp_path / "sub").mkdir()
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and (tmp_path / "sub" / "new.txt").read_bytes() == expected


def test_character_device_is_written_through_and_stays_a_device(model, tmp_path):
    null = _char_device(tmp_path / "fakenull", 3)
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", null)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fakenull"]


def test_symlink_to_a_device_stays_a_link_to_that_device(model, tmp_path):
    null = _char_device(tmp_path / "fakenull", 3)
    link = tmp_path / "out"
    link.symlink_to(null)
    for cmd in (["predict", "-q", "-m", model, DIGITS_TEST], ["hash-model", "-q", "-m", model, "--bits", "64"]):
        r = hsvm(*cmd, "-o", link)
        assert r.returncode == 0, r.stderr
        assert link.is_symlink() and stat.S_ISCHR(os.lstat(null).st_mode)


def test_full_device_is_exit_74_with_one_line(model, tmp_path):
    full = _char_device(tmp_path / "fakefull", 7)
    for cmd in (["predict", "-q", "-m", model, DIGITS_TEST], ["hash-model", "-q", "-m", model, "--bits", "64"]):
        r = hsvm(*cmd, "-o", full)
        assert r.returncode == 74, r.stderr
        lines = r.stderr.decode().splitlines()
        assert lines == ["hsvm: %s: cannot write: No space left on device" % full]
        assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_stdout_redirected_to_a_full_device_is_exit_74(model):
    with open("/dev/full", "wb") as full:
        r = subprocess.run(HSVM + ["predict", "-q", "-m", model, DIGITS_TEST], stdout=full, stderr=subprocess.PIPE)
    assert r.returncode == 74
    assert r.stderr.decode().splitlines() == ["hsvm: <stdout>: cannot write: No space left on device"]


def test_fifo_is_written_through_to_its_reader(model, expected, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()))
    reader.start()
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", fifo, timeout=120)
    reader.join(timeout=60)
    assert r.returncode == 0, r.stderr
    assert got == [expected]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_stdout_is_written_through_to_the_pipe(model, expected):
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected


def test_dev_stdout_appending_to_a_file_keeps_the_shell_redirection(model, expected, tmp_path):
    # `hsvm ... -o /dev/stdout >> log`: /dev/stdout resolves to the file, which
    # must be appended to through the shell's descriptor, not replaced.
    log = tmp_path / "log.txt"
    log.write_bytes(b"first line\n")
    with open(log, "ab") as fh:
        r = subprocess.run(HSVM + ["predict", "-q", "-m", model, DIGITS_TEST, "-o", "/dev/stdout"],
                           stdout=fh, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    assert log.read_bytes() == b"first line\n" + expected


def test_directory_as_output_is_exit_74(model, tmp_path):
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", tmp_path)
    assert r.returncode == 74
    assert r.stderr.decode().splitlines() == ["hsvm: %s: cannot write: is a directory" % tmp_path]


def test_full_filesystem_is_exit_74_and_leaves_no_temporary(model, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    rc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True)
    if rc.returncode != 0:
        pytest.fail("cannot mount a small tmpfs here (%s): run the suite as root" % rc.stderr.decode().strip())
    try:
        r = hsvm("hash-model", "-q", "-m", model, "--bits", "4096", "-o", mnt / "m.hbm")
        assert r.returncode == 74, r.stderr
        assert r.stderr.decode().splitlines() == ["hsvm: %s: cannot write: No space left on device" % (mnt / "m.hbm")]
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.parametrize("name, reason", [("new/", "no such directory"), ("existing-file/", "not a directory"),
                                          ("existing-file/.", "not a directory")])
def test_name_ending_in_a_slash_is_refused_and_writes_nothing(model, tmp_path, name, reason):
    (tmp_path / "existing-file").write_bytes(b"keep me\n")
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", name, cwd=tmp_path)
    assert r.returncode == 74
    assert r.stderr.decode().splitlines() == ["hsvm: %s: cannot write: %s" % (name, reason)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing-file"]
    assert (tmp_path / "existing-file").read_bytes() == b"keep me\n"


def test_existing_directory_with_a_slash_is_exit_74(model, tmp_path):
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", "%s/" % tmp_path)
    assert r.returncode == 74
    assert r.stderr.decode().splitlines() == ["hsvm: %s/: cannot write: is a directory" % tmp_path]


def _input_clashes(model, data, tmp_path):
    link = tmp_path / "link-to-data.svm"
    link.symlink_to(data)
    yield ["train-ovo", data, "-o", data]
    yield ["train-ovo", data, "-o", link]
    yield ["hash-model", "-m", model, "--bits", "64", "-o", model]
    yield ["predict", "-m", model, data, "-o", model]
    yield ["predict", "-m", model, data, "-o", data]
    yield ["hash-data", data, "-H", model, "-o", data]
    yield ["calibrate", data, "-m", model, "-o", "cal", "--grid-json", data]
    yield ["eval", "--truth", data, data, "--plot", data]
    yield ["import-model", data, "-o", data]
    yield ["merge-models", model, "-o", model]
    yield ["kernel-hash", data, "--kernel", "rbf", "--landmarks", "4", "--bits", "64", "-o", data]


def test_output_that_is_an_input_is_a_usage_error_and_the_input_survives(model, tmp_path):
    data = tmp_path / "data.svm"
    data.write_bytes(b"1 1:1\n2 1:-1\n1 1:0.5\n2 1:-0.5\n")
    own_model = tmp_path / "model.hsvm"
    own_model.write_bytes(Path(model).read_bytes())
    before = {p: p.read_bytes() for p in (data, own_model)}
    for args in _input_clashes(own_model, data, tmp_path):
        r = hsvm(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert "is an input of this command" in r.stderr.decode() and "refusing to overwrite it" in \
            r.stderr.decode(), args
        assert r.stderr.startswith(b"hsvm %s: " % args[0].encode()) and r.stderr.count(b"\n") == 1, args
        assert {p: p.read_bytes() for p in before} == before, args
    # a name with a newline is escaped, so the message stays one line
    odd = tmp_path / "a\nb.svm"
    odd.write_bytes(data.read_bytes())
    r = hsvm("predict", "-m", own_model, odd, "-o", odd)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"a\\x0ab.svm" in r.stderr


def test_a_command_with_two_outputs_whose_second_fails_leaves_both_as_they_were(model, tmp_path):
    from conftest import TOOL_FIXTURES
    full = _char_device(tmp_path / "full", 7)
    old = tmp_path / "old"
    old.write_bytes(b"OLD")
    r = hsvm("import-model", TOOL_FIXTURES / "libsvm_c3.model", "-o", old, "--calibration", full)
    assert r.returncode == 74 and old.read_bytes() == b"OLD", r.stderr
    r = hsvm("calibrate", DIGITS_TEST, "-m", model, "-o", old, "--grid-json", full, "--repeat", "1",
             "--timing-budget", "0", "-q")
    assert r.returncode == 74 and old.read_bytes() == b"OLD", r.stderr
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_device_that_is_also_the_input_is_written_through(model):
    # `predict /dev/null -o /dev/null`: nothing is replaced, so nothing is refused.
    r = hsvm("predict", "-q", "-m", model, "/dev/null", "-o", "/dev/null")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("output", ["-", "/dev/stdout", "/dev/fd/1"])
def test_search_table_goes_to_stderr_when_the_model_goes_to_stdout(tmp_path, output):
    from conftest import TOY
    train = tmp_path / "toy.svm"
    train.write_text(TOY * 4)
    r = hsvm("train-ovo", train, "-c", "auto", "--cv", "2", "-o", output)
    assert r.returncode == 0, r.stderr
    assert b"CV accuracy" not in r.stdout
    assert "Best C = " in r.stderr.decode()
    (tmp_path / "m.hsvm").write_bytes(r.stdout)
    p = hsvm("predict", "-q", "-m", tmp_path / "m.hsvm", train)
    assert p.returncode == 0, p.stderr


def test_calibration_grid_goes_to_stderr_when_the_calibration_goes_to_stdout(model, tmp_path):
    r = hsvm("calibrate", DIGITS_TEST, "-m", model, "-o", "/dev/stdout", "--repeat", "1", "--timing-budget", "0")
    assert r.returncode == 0, r.stderr
    assert b"chosen" in r.stderr
    (tmp_path / "cal").write_bytes(r.stdout)
    p = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "--exact", "--proba", "-C", tmp_path / "cal")
    assert p.returncode == 0, p.stderr


def test_outputs_written_together_are_renamed_together_or_not_at_all(tmp_path, monkeypatch):
    from hsvm_cli.io.files import atomic_output, outputs_together
    a, b = tmp_path / "a", tmp_path / "b"
    for p in (a, b):
        p.write_bytes(b"OLD")

    def write_both():
        with outputs_together():
            for p in (a, b):
                with atomic_output(p) as fh:
                    fh.write(b"NEW")
            assert a.read_bytes() == b"OLD"          # nothing is renamed before the block ends
    with pytest.raises(RuntimeError):
        with outputs_together():
            with atomic_output(a) as fh:
                fh.write(b"NEW")
            raise RuntimeError("the second output failed")
    assert a.read_bytes() == b"OLD"
    # an exception between the two renames leaves no temporary file behind
    real, calls = os.replace, []

    def interrupted(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(src, dst)
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_both()
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
    assert a.read_bytes() == b.read_bytes() == b"OLD"     # the first rename undone
    monkeypatch.setattr(os, "replace", real)
    a.write_bytes(b"OLD")
    write_both()
    assert a.read_bytes() == b.read_bytes() == b"NEW"


def test_a_group_whose_second_rename_is_refused_leaves_every_file_as_it_was(tmp_path, monkeypatch):
    # a sticky directory (/tmp, a shared scratch) refuses to rename over
    # another user's file: the first file renamed is put back, a new one removed
    import errno

    from hsvm_cli.errors import OutputError
    from hsvm_cli.io.files import atomic_output, outputs_together
    a, b, new = tmp_path / "a", tmp_path / "b", tmp_path / "new"
    for p in (a, b):
        p.write_bytes(b"OLD")
    real = os.replace

    def refused(src, dst):
        if os.path.basename(dst) == "b":
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real(src, dst)
    monkeypatch.setattr(os, "replace", refused)
    for first in (a, new):
        with pytest.raises(OutputError, match="/b: cannot write: Operation not permitted$"):
            with outputs_together():
                for p in (first, b):
                    with atomic_output(p) as fh:
                        fh.write(b"NEW")
        assert sorted(os.listdir(tmp_path)) == ["a", "b"] and a.read_bytes() == b.read_bytes() == b"OLD"
    # the output named as given, as a single output's failure names it (it read the resolved path)
    monkeypatch.chdir(tmp_path)
    os.symlink("b", tmp_path / "to-b")
    with pytest.raises(OutputError) as info:
        with outputs_together():
            for p in ("a", "to-b"):
                with atomic_output(p) as fh:
                    fh.write(b"NEW")
    assert str(info.value) == "to-b: cannot write: Operation not permitted"


def test_a_group_naming_another_users_file_in_a_sticky_directory_is_refused_before_any_rename(tmp_path,
                                                                                              monkeypatch):
    # no rename may replace it there, and no link to it could be removed again
    from hsvm_cli.errors import OutputError
    from hsvm_cli.io.files import atomic_output, outputs_together
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = shared / "grid.json"
    theirs.write_bytes(b"THEIRS")
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 12345)     # this process is someone else
    with pytest.raises(OutputError, match="grid.json: cannot write: Operation not permitted$"):
        with outputs_together():
            for p in (shared / "c.cal", theirs):
                with atomic_output(p) as fh:
                    fh.write(b"NEW")
    assert os.listdir(shared) == ["grid.json"] and theirs.read_bytes() == b"THEIRS"


def _refused_over_old_file(tmp_path):
    """The OutputError of writing over an existing file p.txt, after checking
    that the old file is all the directory holds."""
    from hsvm_cli.errors import OutputError
    from hsvm_cli.io.files import atomic_output
    out = tmp_path / "p.txt"
    out.write_bytes(b"OLD")
    with pytest.raises(OutputError) as err:
        with atomic_output(out) as fh:
            fh.write(b"NEW")
    assert os.listdir(tmp_path) == ["p.txt"] and out.read_bytes() == b"OLD"
    return err.value


def test_a_rename_the_directory_refuses_is_the_one_line_output_error(tmp_path, monkeypatch):
    import errno

    def refused(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "replace", refused)
    err = _refused_over_old_file(tmp_path)
    assert str(err) == "%s: cannot write: Operation not permitted" % (tmp_path / "p.txt") and err.exit_code == 74


def test_a_write_protected_file_is_not_replaced(tmp_path, monkeypatch):
    # as the shell's `>` refuses it (root may write anything: os.access says so)
    import re
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if mode == os.W_OK else real(path, mode, **kw))
    assert re.search("p.txt: cannot write: Permission denied$", str(_refused_over_old_file(tmp_path)))


def test_standard_input_reading_the_output_file_is_refused(model, tmp_path):
    data = tmp_path / "data.svm"
    data.write_bytes(b"1 1:1\n2 1:-1\n")
    with open(data, "rb") as stdin:
        r = hsvm("predict", "-m", model, "-", "-o", "data.svm", stdin=stdin, cwd=tmp_path)
    assert r.returncode == 2 and b"data.svm is an input of this command (as <stdin>)" in r.stderr, r.stderr
    assert data.read_bytes() == b"1 1:1\n2 1:-1\n"
    with open(data, "rb") as stdin:
        r = hsvm("predict", "-q", "-m", model, "-", "-o", "p.txt", stdin=stdin, cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_an_output_that_is_an_input_under_another_name_names_both(model, tmp_path):
    data = tmp_path / "data.svm"
    data.write_bytes(b"1 1:1\n2 1:-1\n")
    (tmp_path / "link.svm").symlink_to(data)
    r = hsvm("train-ovo", "link.svm", "-o", "data.svm", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.decode() == \
        "hsvm train-ovo: -o: data.svm is an input of this command (as link.svm): refusing to overwrite it " \
        "(see 'hsvm train-ovo --help')\n"


def test_renames_are_marked_while_they_run_and_counted_once_done(tmp_path, monkeypatch):
    # what the CLI's signal handler asks (tests/cli/test_signals_and_streams.py)
    from hsvm_cli.io import files
    a, b = tmp_path / "a", tmp_path / "b"
    real, seen = os.replace, []

    def replace(src, dst):
        seen.append((files.renaming_outputs(), files.outputs_committed()))
        real(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    before = files.outputs_committed()
    assert not files.renaming_outputs()
    with files.outputs_together():
        for p in (a, b):
            with files.atomic_output(p) as fh:
                fh.write(b"NEW")
    assert seen == [(True, before), (True, before)]
    assert not files.renaming_outputs() and files.outputs_committed() == before + 1


@pytest.mark.parametrize("suffix, magic", [(".gz", b"\x1f\x8b"), (".bz2", b"BZh"), (".xz", b"\xfd7zXZ\x00"),
                                           (".zst", b"\x28\xb5\x2f\xfd"), (".GZ", b"\x1f\x8b")])
def test_text_output_named_like_a_compressed_file_is_written_compressed(model, expected, tmp_path, suffix, magic):
    from hsvm_cli.io.files import open_input
    out = tmp_path / ("pred.txt" + suffix)
    r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes().startswith(magic)
    with open_input(str(out)) as fh:
        assert fh.read() == expected
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    # every hsvm reader takes it back: eval scores the compressed predictions
    r = hsvm("eval", "--truth", DIGITS_TEST, out, "--json")
    assert r.returncode == 0, r.stderr
    assert b'"accuracy"' in r.stdout


def test_compressed_text_output_is_the_same_bytes_on_every_run(model, tmp_path):
    a, b = tmp_path / "a.txt.gz", tmp_path / "b.txt.gz"
    for out in (a, b):
        r = hsvm("predict", "-q", "-m", model, DIGITS_TEST, "-o", out)
        assert r.returncode == 0, r.stderr
    assert a.read_bytes() == b.read_bytes()    # no timestamp, no stored name


def test_binary_output_named_gz_stays_a_mappable_hsvm_file(model, tmp_path):
    out = tmp_path / "copy.hbm.gz"
    r = hsvm("hash-model", "-m", model, "--bits", "64", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:4] != b"\x1f\x8b"
    r = hsvm("predict", "-q", "-m", model, "-H", out, "-k", "2", DIGITS_TEST)
    assert r.returncode == 0, r.stderr


def test_compressed_output_on_a_full_filesystem_is_exit_74_and_leaves_no_temporary(model, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(full)]).returncode != 0:
        pytest.fail("cannot mount a tmpfs here: run the suite as root to test a full filesystem")
    try:
        hbm = tmp_path / "m.hbm"
        assert hsvm("hash-model", "-q", "-m", model, "--bits", "256", "-o", hbm).returncode == 0
        r = hsvm("hash-data", "-q", "-H", hbm, "--format", "svm", DIGITS_TEST, "-o", full / "bits.svm.xz")
        assert r.returncode == 74, r.stderr
        assert r.stderr.decode().count("\n") == 1 and "cannot write" in r.stderr.decode()
        assert list(full.iterdir()) == []
    finally:
        subprocess.run(["umount", str(full)])


def test_two_runs_renaming_the_same_group_of_outputs_leave_one_runs_files(tmp_path, monkeypatch):
    # `make -j` running a two-output recipe twice: each group is renamed under
    # its directory's lock, so the calibration and the grid left are one run's
    import time

    from hsvm_cli.io import files
    replace = os.replace

    def slow_replace(src, dst):
        replace(src, dst)
        if src.endswith(".a.tmp"):
            time.sleep(0.3)        # run a, between its two renames: run b's chance to cut in
    monkeypatch.setattr(files.os, "replace", slow_replace)
    targets = [str(tmp_path / "c.cal"), str(tmp_path / "g.json")]

    def run_group(tag, delay):
        time.sleep(delay)
        pairs = []
        for t in targets:
            tmp = "%s.%s.tmp" % (t, tag)
            with open(tmp, "w") as fh:
                fh.write(tag)
            pairs.append((tmp, t))
        files._rename_into_place(pairs)
    runs = [threading.Thread(target=run_group, args=(tag, delay)) for tag, delay in (("a", 0.0), ("b", 0.05))]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    assert len({Path(t).read_text() for t in targets}) == 1


def test_a_library_ending_the_process_with_exit_leaves_no_temporary_output(tmp_path):
    # OpenBLAS calls exit(1) when it cannot allocate its buffers: no Python
    # `finally` runs, and a C atexit handler removes the output's temporary
    import subprocess
    import sys
    target = tmp_path / "out.txt"
    script = ("import ctypes, sys\n"
              "from hsvm_cli.io.files import atomic_output\n"
              "with atomic_output(sys.argv[1], 'w') as fh:\n"
              "    fh.write('half')\n"
              "    fh.flush()\n"
              "    ctypes.CDLL(None).exit(1)\n")
    r = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, timeout=60)
    assert r.returncode == 1
    assert list(tmp_path.iterdir()) == []
