"""A real hsvm process: Ctrl-C and SIGTERM stop it at once and leave nothing
half-written; training input is read once, so FIFOs and process substitution
work and the recorded digest is of what was trained on."""
import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

from hsvm_cli.models.ovo import load_model

from conftest import BUNDLED, DIGITS_TEST, DIGITS_TRAIN, run

HSVM = [sys.executable, "-m", "hsvm_cli"]
OMNIGLOT_TRAIN = str(BUNDLED / "omniglot-242" / "train.svm.gz")


def _start(args, **kw):
    return subprocess.Popen(HSVM + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated"),
                                             (signal.SIGHUP, 129, "hung up")])
def test_a_signal_stops_training_with_its_exit_status_and_no_model(tmp_path, jobs, sig, code, word):
    # The input comes through a FIFO: once all of it is written the reader
    # has parsed it, so the signal arrives while the pairs train.
    fifo = tmp_path / "train.svm"
    os.mkfifo(fifo)
    out = tmp_path / "m.hsvm"
    proc = _start(["train-ovo", fifo, "-c", "0.1", "-j", jobs, "-q", "-o", out])
    with open(fifo, "wb") as w:
        w.write(_plain(OMNIGLOT_TRAIN))
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    started = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.decode().splitlines()[-1] == "hsvm: %s" % word
    assert time.monotonic() - started < 10
    assert [p.name for p in tmp_path.iterdir()] == ["train.svm"]


def test_sigterm_while_predicting_leaves_no_temporary_output(tmp_path, digits_model_file):
    fifo = tmp_path / "in.svm"
    os.mkfifo(fifo)
    out = tmp_path / "p.txt"
    proc = _start(["predict", "-q", "-m", digits_model_file, "--chunk-rows", "8", fifo, "-o", out])
    with open(fifo, "wb") as w:
        w.write(_plain(DIGITS_TEST)[:20000])
        w.flush()
        time.sleep(1.0)   # the reader has parsed what there is and waits for more
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.svm"]


def test_sigterm_while_hashing_data_leaves_no_temporary_directory(tmp_path, digits_files):
    _, hbm, _ = digits_files
    fifo = tmp_path / "in.svm"
    os.mkfifo(fifo)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start(["hash-data", "-q", "-H", hbm, "--chunk-rows", "8", fifo, "-o", tmp_path / "c.codes"],
                  env=dict(os.environ, TMPDIR=str(scratch)))
    with open(fifo, "wb") as w:
        w.write(_plain(DIGITS_TEST)[:20000])
        w.flush()
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert list(scratch.iterdir()) == [] and not (tmp_path / "c.codes").exists()


def _plain(path):
    import gzip
    return gzip.decompress(open(path, "rb").read())


def test_training_from_a_fifo_reads_it_once_and_records_its_digest(tmp_path):
    data = _plain(DIGITS_TRAIN)
    fifo = tmp_path / "train.svm"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: open(fifo, "wb").write(data))
    writer.start()
    out = tmp_path / "m.hsvm"
    r = subprocess.run(HSVM + ["train-ovo", "-q", str(fifo), "-o", str(out)], capture_output=True, timeout=120)
    writer.join(timeout=10)
    assert r.returncode == 0, r.stderr
    assert load_model(out).provenance["train_sha256"] == hashlib.sha256(data).hexdigest()


def test_training_from_process_substitution_records_the_digest_of_what_it_read(tmp_path):
    out = tmp_path / "m.hsvm"
    cmd = "%s -m hsvm_cli train-ovo -q <(cat %s) -o %s" % (sys.executable, DIGITS_TRAIN, out)
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    want = hashlib.sha256(open(DIGITS_TRAIN, "rb").read()).hexdigest()
    assert load_model(out).provenance["train_sha256"] == want


def _hsvm(args, **kwargs):
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "hsvm_cli"] + [str(a) for a in args], timeout=120, **kwargs)


def test_output_to_a_closed_standard_output_is_one_line_and_exit_74(tmp_path, digits_files):
    # `hsvm predict ... >&-`: Python starts with sys.stdout None; a write was
    # a traceback (predict, hash-data) or silently lost (eval's report).
    model, hbm, _ = digits_files
    labels = tmp_path / "p.txt"
    _hsvm(["predict", "-q", "-m", model, DIGITS_TEST, "-o", labels], check=True)
    for args in (["predict", "-q", "-m", model, DIGITS_TEST], ["hash-data", "-q", "-H", hbm, DIGITS_TEST],
                 ["eval", "--truth", DIGITS_TEST, labels], ["--version"], ["predict", "--help"]):
        r = _hsvm(args, stdout=None, preexec_fn=lambda: os.close(1))
        assert r.returncode == 74, (args, r.stderr)
        assert r.stderr == b"hsvm: <stdout>: cannot write: standard output is closed\n", args


def test_a_report_to_a_full_standard_output_is_one_line_and_exit_74(tmp_path, digits_files):
    # eval's report, a search's table, --help and --version printed to
    # /dev/full were a traceback and exit 1; no model is left by a search
    # whose table could not be written.
    model, _, _ = digits_files
    labels = tmp_path / "p.txt"
    _hsvm(["predict", "-q", "-m", model, DIGITS_TEST, "-o", labels], check=True)
    out = tmp_path / "m.hsvm"
    with open("/dev/full", "wb") as full:
        for args in (["eval", "--truth", DIGITS_TEST, labels], ["eval", "--truth", DIGITS_TEST, labels, "--json"],
                     ["train-ovo", "-q", DIGITS_TRAIN, "--c-grid", "1,2", "-o", out], ["--version"],
                     ["predict", "--help"]):
            r = _hsvm(args, stdout=full)
            assert (r.returncode, r.stderr) == (74, b"hsvm: <stdout>: cannot write: No space left on device\n"), args
    assert not out.exists()


def test_a_reader_gone_from_standard_output_is_exit_141_naming_the_files_it_cost(tmp_path, digits_files):
    # `hsvm predict ... | head`: the reader went away, silently, as any tool;
    # but a search's table on stdout beside -o MODEL took the model with it
    # (minutes of cross-validation) without a word.
    model, _, _ = digits_files
    out, cal, grid = tmp_path / "m.hsvm", tmp_path / "m.cal", tmp_path / "g.json"
    for args, lost in ((["predict", "-q", "-m", model, DIGITS_TEST], None),
                       (["train-ovo", "-q", DIGITS_TRAIN, "--c-grid", "1,2", "-o", out], out),
                       (["calibrate", "-q", "-m", model, DIGITS_TEST, "--repeat", "1", "-o", cal], cal),
                       # the grid file still open around the table: named too
                       (["calibrate", "-q", "-m", model, DIGITS_TEST, "--repeat", "1", "--grid-json", grid, "-o",
                         cal], "%s, %s" % (grid, cal))):
        proc = _start(args)
        proc.stdout.close()                   # gone before the first write
        err = proc.stderr.read()
        assert proc.wait() == 141, (args, err)
        if lost is None:
            assert err == b"", args
        else:
            assert err == ("hsvm: <stdout>: its reader went away before the output was complete: %s not written\n"
                           % lost).encode(), args
            assert os.listdir(tmp_path) == []


def test_reading_a_closed_standard_input_is_one_line_and_exit_66(tmp_path, digits_files):
    model, hbm, _ = digits_files
    for args in (["predict", "-m", model, "-"], ["hash-data", "-H", hbm, "-", "-o", tmp_path / "c"],
                 ["eval", "--truth", DIGITS_TEST, "-"], ["train-ovo", "-", "-o", tmp_path / "c"],
                 ["kernel-hash", "-", "--kernel", "rbf", "--landmarks", "8", "--bits", "64", "-o", tmp_path / "c"]):
        r = _hsvm(args, stdin=None, preexec_fn=lambda: os.close(0))
        assert (r.returncode, r.stderr) == (66, b"hsvm: <stdin>: cannot read: standard input is closed\n"), args
    assert not (tmp_path / "c").exists()


def test_codes_that_cannot_be_staged_are_one_line_and_exit_74(tmp_path, digits_files):
    import resource
    _, hbm, _ = digits_files
    out = tmp_path / "c.codes"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    r = _hsvm(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", out], preexec_fn=small_files)
    assert r.returncode == 74 and r.stderr.startswith(b"hsvm: %s: cannot write: File too large" % bytes(out))
    assert not out.exists()


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_standard_output_cut_short_by_a_partial_write_is_exit_74(tmp_path, digits_files, unbuffered):
    # A file size limit makes write(2) take part of the bytes, then fail, as
    # a nearly full disk does.  Under PYTHONUNBUFFERED=1 (python -u, common
    # in containers) stdout's binary layer is the raw descriptor: the part
    # not taken was dropped and the command exited 0 with a cut-off result.
    import resource
    model, hbm, _ = digits_files
    labels = tmp_path / "p.txt"
    _hsvm(["predict", "-q", "-m", model, DIGITS_TEST, "-o", labels], check=True)
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    limit = 500

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for args in (["predict", "-q", "-m", model, DIGITS_TEST], ["predict", "-q", "-m", model, DIGITS_TEST, "--scores"],
                 ["hash-data", "-q", "-H", hbm, DIGITS_TEST, "--format", "svm"],
                 ["eval", "--truth", DIGITS_TEST, labels, "--confusion"]):
        out = tmp_path / "stdout.txt"
        with open(out, "wb") as fh:
            r = _hsvm(args, stdout=fh, env=env, preexec_fn=small_files)
        assert (r.returncode, r.stderr) == (74, b"hsvm: <stdout>: cannot write: File too large\n"), args
        assert out.stat().st_size == limit


def test_whole_writes_writes_all_of_a_raw_stream_s_partial_writes():
    import io

    from hsvm_cli.io.files import WholeWrites

    class Trickle(io.RawIOBase):
        def __init__(self):
            self.got = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.got += bytes(b[:3])
            return min(3, len(b))
    raw = Trickle()
    assert WholeWrites(raw).write(b"0123456789") == 10
    assert bytes(raw.got) == b"0123456789"


def test_a_pipe_given_as_a_model_is_refused_at_once_not_waited_on(tmp_path, digits_files):
    model, _, _ = digits_files
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    for args in (["predict", "-m", fifo, DIGITS_TEST], ["predict", "-m", model, "-H", fifo, DIGITS_TEST],
                 ["merge-models", fifo, "-o", tmp_path / "x"], ["import-model", fifo, "-o", tmp_path / "y"]):
        r = _hsvm(args)              # a FIFO without a writer: opening it would wait forever
        assert r.returncode == 2 and b"give a regular file, not a pipe or device" in r.stderr, args
        assert r.stderr.count(b"\n") == 1


def test_an_endless_line_in_a_predictions_file_is_refused_not_read_into_memory(tmp_path):
    truth = tmp_path / "t.svm"
    truth.write_text("1 1:1\n2 1:2\n")
    r = _hsvm(["eval", "--truth", truth, "/dev/zero"])
    assert r.returncode == 65 and r.stderr == b"hsvm: /dev/zero:1: line longer than 64 MB\n"


def test_a_binary_output_is_never_written_to_a_terminal(tmp_path, digits_files):
    # -q once skipped hash-data's check, and train-ovo -o - wrote a model to the terminal
    import pty
    model, hbm, _ = digits_files
    for args in (["hash-data", "-q", "-H", hbm, DIGITS_TEST], ["train-ovo", "-q", DIGITS_TRAIN, "-o", "-"],
                 ["hash-data", "-H", hbm, DIGITS_TEST, "-o", "/dev/stdout"],
                 ["train-ovo", DIGITS_TRAIN, "-o", "/dev/stdout"], ["hash-model", "-m", model, "-o", "-"]):
        master, slave = pty.openpty()
        try:
            r = _hsvm(args, stdout=slave)
        finally:
            os.close(slave)
            os.close(master)
        # before any work: one line, no log of a model trained
        assert r.returncode == 74 and b"binary" in r.stderr and r.stderr.count(b"\n") == 1, (args, r.stderr)


def test_codes_as_svmlight_text_may_be_written_to_a_terminal(digits_files):
    # --format svm is text, the very remedy the binary refusal suggests
    import pty
    _, hbm, _ = digits_files
    for extra in ([], ["-o", "/dev/stdout"]):
        master, slave = pty.openpty()
        shown = []

        def drain():
            while True:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    return
                if not data:
                    return
                shown.append(data)
        reader = threading.Thread(target=drain)
        reader.start()
        try:
            r = _hsvm(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "--format", "svm", "--bits", "64"] + extra,
                      stdout=slave)
        finally:
            os.close(slave)
            reader.join(timeout=30)
            os.close(master)
        assert r.returncode == 0, (extra, r.stderr)
        assert b"".join(shown).count(b"\n") == 450


def test_hash_model_to_stdout_logs_without_a_size(digits_files):
    model, _, _ = digits_files
    r = _hsvm(["hash-model", "-m", model, "--bits", "64", "-o", "-"])
    lines = r.stderr.splitlines()      # the summary, then digits' note that 45 classifiers cannot pay at 64 bits
    assert r.returncode == 0 and r.stdout and all(line.startswith(b"hsvm: ") for line in lines)
    assert b" -> - (model " in lines[0] and len(lines) == 2


def test_an_error_while_the_next_block_is_read_exits_with_its_status(tmp_path, digits_files):
    # The model check fails while the read of the input's next block is in
    # flight (made slow here): the process must exit 65, not abort at
    # shutdown on the reader's lock held by a frozen daemon thread (134).
    model, _, _ = digits_files
    raw = bytearray(open(model, "rb").read())
    (n,) = struct.unpack("<Q", raw[:8])
    begin, end = json.loads(raw[8:8 + n])["W"]["data_offsets"]
    raw[8 + n + end - 5] ^= 0x10    # in W's last row: a damaged model
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(bytes(raw))
    script = (
        "import sys, time\n"
        "from hsvm_cli.io import files\n"
        "read = files._GuardedDecompressor.readinto\n"
        "calls = []\n"
        "def slow(self, buf):\n"
        "    calls.append(1)\n"
        "    if len(calls) > 1:\n"
        "        time.sleep(1.0)\n"
        "    return read(self, buf)\n"
        "files._GuardedDecompressor.readinto = slow\n"
        "from hsvm_cli.cli.entry import main\n"
        "sys.argv = ['hsvm'] + sys.argv[1:]\n"
        "main()\n")
    # small chunks: the error comes between two chunks of a block
    r = subprocess.run([sys.executable, "-c", script, "predict", "-q", "--dag", "--chunk-rows", "7", "-m", str(bad),
                        DIGITS_TEST, "-o", str(tmp_path / "p.txt")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 65, r.stderr
    assert r.stderr.splitlines() == ["hsvm: %s: array 'W' is corrupt: checksum mismatch in its bytes 0 to %d"
                                     % (bad, end - begin)]


def test_a_closed_or_abandoned_standard_error_does_not_stop_the_work(tmp_path):
    # logs are for the person watching: 2>&- and 2>&1 | head -0 still train
    closed = subprocess.run(HSVM + ["train-ovo", DIGITS_TRAIN, "-c", "0.1", "-o", str(tmp_path / "a.hsvm")],
                            stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(2), timeout=300)
    assert closed.returncode == 0 and load_model(tmp_path / "a.hsvm").n_classes == 10
    proc = subprocess.Popen(HSVM + ["train-ovo", DIGITS_TRAIN, "-c", "0.1", "-o", str(tmp_path / "b.hsvm")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc.stderr.close()             # the reader of its log is gone before the first line
    assert proc.wait(timeout=300) == 0
    assert load_model(tmp_path / "b.hsvm").n_classes == 10
    # a failure still says so by its status
    failed = subprocess.run(HSVM + ["predict", "-m", str(tmp_path / "none.hsvm"), DIGITS_TEST],
                            stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(2), timeout=300)
    assert failed.returncode == 66


def test_a_standard_error_that_cannot_be_written_leaves_the_commands_own_status(tmp_path):
    # 2>/dev/full: the log's write fails with ENOSPC, which had ended both runs with status 1
    with open("/dev/full", "wb") as full:
        train = subprocess.run(HSVM + ["train-ovo", DIGITS_TRAIN, "-c", "0.1", "-o", str(tmp_path / "a.hsvm")],
                               stdout=subprocess.DEVNULL, stderr=full, timeout=300)
        assert train.returncode == 0 and load_model(tmp_path / "a.hsvm").n_classes == 10
        ok = subprocess.run(HSVM + ["predict", "-m", str(tmp_path / "a.hsvm"), DIGITS_TEST, "-o", str(tmp_path / "p")],
                            stderr=full, timeout=300)
        assert ok.returncode == 0 and len((tmp_path / "p").read_text().splitlines()) == 450
        missing = subprocess.run(HSVM + ["predict", "-m", str(tmp_path / "none.hsvm"), DIGITS_TEST],
                                 stdout=subprocess.DEVNULL, stderr=full, timeout=300)
        assert missing.returncode == 66


RENAME_THEN_SIGNAL = """
import os, signal, sys
real, sig, when = os.replace, getattr(signal, sys.argv.pop(1)), sys.argv.pop(1)
def replace(src, dst):
    if when == "before":
        os.kill(os.getpid(), sig)
    real(src, dst)
    if when == "after":
        os.kill(os.getpid(), sig)
os.replace = replace
sys.argv[0] = "hsvm"
from hsvm_cli.cli.entry import main
main()
"""


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_or_after_the_output_is_renamed_lets_the_command_finish(tmp_path, digits_model_file, sig,
                                                                               when):
    # Exit 130/143 says nothing was replaced; a signal that comes as the new
    # file is renamed into place, or once it is there, lets the command
    # finish with 0 instead.
    out = tmp_path / "h.hbm"
    out.write_bytes(b"OLD")
    r = subprocess.run([sys.executable, "-c", RENAME_THEN_SIGNAL, sig, when, "hash-model", "-m", str(digits_model_file),
                        "--bits", "64", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "interrupted" not in r.stderr and "terminated" not in r.stderr
    assert out.read_bytes()[:3] != b"OLD" and [p.name for p in tmp_path.iterdir()] == ["h.hbm"]


def test_a_signal_the_parent_ignores_stays_ignored(tmp_path):
    # a background job of a non-interactive shell, or `trap '' INT`: Ctrl-C
    # meant for the shell must not stop hsvm (plain Python leaves it ignored too)
    out = tmp_path / "m.hsvm"
    proc = _start(["train-ovo", OMNIGLOT_TRAIN, "-c", "0.1", "-q", "-o", out],
                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert load_model(str(out)).n_classes == 242


EXIT_DISPOSITIONS = """
import atexit, signal, sys
sys.argv[0] = "hsvm"
atexit.register(lambda: sys.stderr.write("at exit: %s %s\\n" % (
    signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)))
from hsvm_cli.cli.entry import main
main()
"""


def test_once_outputs_are_in_place_signals_are_ignored_while_the_interpreter_exits(tmp_path, digits_model_file):
    # Python restores the default actions as it shuts down: a SIGTERM then
    # would end a process whose new file is in place with 143
    r = subprocess.run([sys.executable, "-c", EXIT_DISPOSITIONS, "hash-model", "-m", str(digits_model_file),
                        "--bits", "64", "-q", "-o", str(tmp_path / "h.hbm")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.endswith("at exit: True True\n"), r.stderr
    # nothing written: signals keep their meaning to the end
    r = subprocess.run([sys.executable, "-c", EXIT_DISPOSITIONS, "hash-model", "-m", str(digits_model_file),
                        "--bits", "64", "-q", "-o", str(tmp_path / "no" / "h.hbm")], capture_output=True, text=True)
    assert r.returncode == 74 and r.stderr.endswith("at exit: False False\n"), r.stderr


def test_unusual_names_and_environments_give_results_or_one_line(tmp_path, digits_files):
    # From a user pass over odd names and locales: each of these had been a traceback.
    model, _, _ = digits_files
    labels = tmp_path / "p$x^{$.txt"            # '$' started mathtext in the plot's title
    _hsvm(["predict", "-q", "--scores", "-m", model, DIGITS_TEST, "-o", labels], check=True)
    undecodable = os.fsdecode(bytes(tmp_path) + b"/pr\xff.txt")
    os.link(labels, undecodable)
    for name in (labels, undecodable):
        r = _hsvm(["eval", "--truth", DIGITS_TEST, name, "--plot", tmp_path / "a.png", "-o", tmp_path / "r.txt"])
        assert r.returncode == 0 and (tmp_path / "a.png").exists(), r.stderr
    # a report naming é.json written under the C locale: UTF-8 in the file
    grid = tmp_path / "é.json"
    grid.write_text('{"grid": []}', encoding="utf-8")
    env = dict(os.environ, LC_ALL="C", PYTHONUTF8="0")
    r = _hsvm(["eval", "--grid", grid, "-o", tmp_path / "g.txt"], env=env)
    assert r.returncode == 0 and (tmp_path / "g.txt").read_bytes().startswith(os.fsencode(grid)), r.stderr
    # stdout in latin-1 and a name it cannot show: escaped, not a UnicodeEncodeError
    shown = tmp_path / "é中.hsvm"
    shown.write_bytes(open(model, "rb").read())
    r = _hsvm(["info", shown], env=dict(os.environ, PYTHONIOENCODING="latin-1"))
    assert r.returncode == 0 and "\\u4e2d.hsvm: hsvm-model version 1" in r.stdout.decode("latin-1"), r.stderr
    # info's header escapes control characters as the error messages do
    odd = tmp_path / "e\x1b[31mX\n.hsvm"
    odd.write_bytes(open(model, "rb").read())
    r = _hsvm(["info", odd])
    assert r.stdout.decode().splitlines()[0].startswith(str(tmp_path) + "/e\\x1b[31mX\\x0a.hsvm: hsvm-model")
    # a legal 250-byte name: the temporary name beside it must fit in NAME_MAX too
    long = tmp_path / ("a" * 250)
    _hsvm(["predict", "-q", "-m", model, DIGITS_TEST, "-o", long], check=True)
    assert long.exists() and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    # a relative output when the current directory was removed: one line, exit 74
    gone = tmp_path / "gone"
    script = 'mkdir "%s" && cd "%s" && rmdir "%s" && exec "$@"' % (gone, gone, gone)
    r = subprocess.run(["bash", "-c", script, "bash", sys.executable, "-m", "hsvm_cli", "predict", "-q", "-m",
                        str(model), DIGITS_TEST, "-o", "p.txt"], capture_output=True, timeout=120)
    assert (r.returncode, r.stderr) == (74, b"hsvm: p.txt: cannot write: No such file or directory (the current "
                                            b"directory no longer exists)\n")


_EXIT_SCRIPT = """
import atexit, sys, threading
out = sys.argv[1]
class Marker:
    def __del__(self, _open=open, _name=out + ".teardown"):
        _open(_name, "w").close()
marker = Marker()           # freed by the interpreter's teardown only
atexit.register(lambda: open(out + ".atexit", "w").close())
if sys.argv[2] == "thread":
    # a thread the interpreter's exit waits for: the normal exit then
    gate = threading.Event()
    threading.Thread(target=gate.wait, args=(3,)).start()
from hsvm_cli.cli.entry import main
sys.argv = ["hsvm"] + sys.argv[3:]
main()
"""


@pytest.mark.parametrize("case", ["plain", "thread"])
def test_a_finished_command_skips_the_interpreters_teardown_but_not_its_exit_functions(tmp_path, digits_files, case):
    model, _, _ = digits_files
    out = str(tmp_path / "run")
    r = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, out, case, "predict", "-q", "-m", str(model),
                        DIGITS_TEST, "-o", "-"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"\n") == 450 and r.stderr == b""       # every label flushed
    assert os.path.exists(out + ".atexit")
    assert os.path.exists(out + ".teardown") == (case == "thread")


_SHORTAGE_SCRIPT = """
import sys, threading
kind = sys.argv[1]
if kind == "thread":
    def refuse(self):
        raise RuntimeError("can't start new thread")
    threading.Thread.start = refuse
else:
    from hsvm_cli.predict import predictor
    def refuse(*args, **kw):
        raise ImportError("libscipy_openblas.so: failed to map segment from shared object", name="_fblas")
    predictor.Predictor.predict_file = refuse
from hsvm_cli.cli.entry import main
sys.argv = ["hsvm"] + sys.argv[2:]
main()
"""


@pytest.mark.parametrize("kind, what", [("thread", "starting a thread"), ("import", "loading _fblas")])
def test_an_address_space_limit_met_by_a_thread_or_a_late_library_is_one_line(tmp_path, digits_files, kind, what):
    # ulimit -v: a thread without room for its stack, or a library loaded on
    # first use that cannot be mapped, is the out-of-memory line, exit 65
    model, _, _ = digits_files
    out = tmp_path / "p.txt"
    r = subprocess.run([sys.executable, "-c", _SHORTAGE_SCRIPT, kind, "predict", "-q", "--threads", "2", "-m",
                        str(model), DIGITS_TEST, "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 65, r.stderr
    assert r.stderr.startswith("hsvm: out of memory %s: " % what) and r.stderr.count("\n") == 1, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_console_script_loads_next_to_nothing_before_its_signal_handlers():
    # a Ctrl-C while `signal` built its enums (~3 ms before the handlers were
    # installed) printed a KeyboardInterrupt traceback
    code = ("import sys; before = set(sys.modules); import hsvm_cli.cli.entry; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    loaded = set(subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True, timeout=60,
                                text=True).stdout.split())
    assert not loaded & {"signal", "enum", "collections", "hsvm_cli.errors", "importlib", "warnings"}, loaded
    assert not [name for name in loaded if name.startswith("hsvm_cli.") and name != "hsvm_cli.cli.entry"
                and name != "hsvm_cli.cli"], loaded


def test_a_signal_whose_exception_was_swallowed_is_raised_before_any_output_is_renamed(tmp_path, monkeypatch):
    # raised inside a callback the interpreter runs itself (an import lock's,
    # as a module loads mid-command), the handler's exception is printed as
    # "Exception ignored" and lost: the command went on, replaced its output
    # and exited 0
    from hsvm_cli.cli import main
    from hsvm_cli.io import files
    monkeypatch.setattr(files, "before_renames", main._raise_swallowed)
    monkeypatch.setattr(files, "_renames", {"running": 0, "done": 0})
    monkeypatch.setattr(main, "_raised_signals", [])
    try:
        main._interrupt(signal.SIGTERM, None)
    except main.Terminated:
        pass                    # lost on its way, as a callback loses it
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(main.Terminated) as info:
        with files.atomic_output(target, "w") as fh:
            fh.write("new\n")
    assert info.value.signum == signal.SIGTERM
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    # raised once: the next output is written
    with files.atomic_output(target, "w") as fh:
        fh.write("new\n")
    assert target.read_text() == "new\n"


@pytest.mark.parametrize("sig, code, word, then", [
    (signal.SIGTERM, 143, "terminated", RuntimeError("cannot release un-acquired lock")),
    (signal.SIGINT, 130, "interrupted", RuntimeError("cannot release un-acquired lock")),
    (signal.SIGTERM, 143, "terminated", ValueError("a state the signal left half-made"))])
def test_an_error_a_signal_set_off_as_it_unwound_is_that_signals_exit(toy_model, monkeypatch, sig, code, word,
                                                                      then):
    # SIGTERM inside a thread pool's wait for a result: the Condition's lock
    # was not re-acquired, its release raised RuntimeError over the signal's
    # exception -- a 78-line traceback and exit 1 in 2 of ~30 runs
    from hsvm_cli.cli import cmd_info, main

    def stopped(*args, **kwargs):
        try:
            raise main._signal_exception(sig)
        finally:
            raise then
    monkeypatch.setattr(cmd_info, "describe", stopped)
    run(["info", toy_model[1]], exit_code=code, stderr="hsvm: %s\n" % word)


def test_a_second_signal_while_the_first_ones_exit_is_under_way_changes_nothing(toy_model, monkeypatch):
    # make passes its SIGTERM on to the job's process group, which had one
    # already: the second, landing as "hsvm: terminated" was written, raised
    # inside the handler -- a traceback and exit 1 for make in place of 143
    from hsvm_cli.cli import cmd_info, main
    from hsvm_cli.io import files

    def stopped(*args, **kwargs):
        raise main._signal_exception(signal.SIGTERM)
    monkeypatch.setattr(cmd_info, "describe", stopped)
    monkeypatch.setattr(files, "outputs_committed", lambda: False)      # as a command with an output to write
    monkeypatch.setattr(main, "_process_exits", [True])                  # as the console script runs it
    real_echo = main.click.echo

    def echo_then_signal(*args, **kwargs):
        real_echo(*args, **kwargs)
        main._interrupt(signal.SIGINT, None)
    monkeypatch.setattr(main.click, "echo", echo_then_signal)
    run(["info", toy_model[1]], exit_code=143, stderr="hsvm: terminated\n")
    # in a caller's own process (CliRunner here) a later Ctrl-C is the caller's again
    monkeypatch.setattr(main, "_process_exits", [])
    monkeypatch.setattr(main.click, "echo", real_echo)
    run(["info", toy_model[1]], exit_code=143, stderr="hsvm: terminated\n")
    assert main._leaving == []
