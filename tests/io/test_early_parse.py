"""The input's first lines parsed while the modules load (io/early_parse.py,
native/svmparse_early.c): the reader adopts them only when they are the rows
it would have parsed, and goes on where the early parse stopped."""
import gzip
import os
import subprocess
import sys
import threading

import click
import numpy as np
import pytest

from hsvm_cli.cli import early_input
from hsvm_cli.errors import InputFormatError
from hsvm_cli.io import early_parse
from hsvm_cli.io.svmlight import iter_svmlight, write_svmlight

from conftest import BUNDLED


@pytest.fixture(autouse=True)
def _nothing_left_pending():
    yield
    early_parse.discard()


@pytest.fixture
def adopted(monkeypatch):
    """The EarlyRows (or None) each claim handed to a reader."""
    seen = []
    claim = early_parse.claim

    def spy(*args, **kwargs):
        rows = claim(*args, **kwargs)
        seen.append(rows)
        return rows
    monkeypatch.setattr(early_parse, "claim", spy)
    return seen


def _chunks(path, **kw):
    kw.setdefault("dtype", np.float32)
    kw.setdefault("_csr_arrays", True)
    out = []
    for c in iter_svmlight(str(path), **kw):
        X = c.X
        out.append((X.shape, X.data.copy(), None if X.indices is None else X.indices.copy(), X.indptr.copy(),
                    c.y.copy(), c.first_line))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for ca, cb in zip(a, b):
        for u, v in zip(ca, cb):
            if isinstance(u, np.ndarray):
                assert u.dtype == v.dtype and np.array_equal(u, v)
            else:
                assert u == v


def _early_then_read(path, *, block, max_text=early_parse.MAX_TEXT, early=None, at_once=False, **reader):
    """The reader's chunks of ``path`` after an early parse with the
    reader's options (or ``early``'s: zero_based, chunk_rows); ``at_once``:
    the reader comes before the early parse stops on its own."""
    early = dict({"zero_based": reader.get("zero_based", False), "chunk_rows": reader.get("chunk_rows", 16384)},
                 **(early or {}))
    assert early_parse.start(str(path), _max_text=max_text, _block=block, **early)
    if not at_once:
        early_parse._finish()
    return _chunks(path, **reader)


def _dense_file(path, rows=40, d=7, seed=0, head=b""):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d)).astype(np.float32)
    X[X == 0] = 1
    y = rng.integers(1, 4, rows)
    with open(path, "wb") as fh:
        fh.write(head)
        write_svmlight(fh, X, y)
    return path


def _sparse_file(path, rows=40, d=30, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d)).astype(np.float32) * (rng.random((rows, d)) < 0.3)
    X[0, 1] = 0     # the first row lacks a column below its last
    X[0, -1] = 2
    y = rng.integers(1, 4, rows)
    with open(path, "wb") as fh:
        write_svmlight(fh, X, y)
    return path


@pytest.mark.parametrize("block", [0, 1, 37, 200, 333, 1000])
@pytest.mark.parametrize("kind", ["dense", "sparse", "comments first", "crlf", "no final newline"])
def test_rows_parsed_early_are_the_readers_own_wherever_it_stops(tmp_path, adopted, kind, block):
    path = tmp_path / "x.svm"
    if kind == "sparse":
        _sparse_file(path)
    elif kind == "comments first":
        _dense_file(path, head=b"# a comment\n\n   \n")
    else:
        _dense_file(path)
        text = path.read_bytes()
        if kind == "crlf":
            path.write_bytes(text.replace(b"\n", b"\r\n"))
        elif kind == "no final newline":
            path.write_bytes(text.rstrip(b"\n"))
    width = 30 if kind == "sparse" else 7
    _same(_early_then_read(path, block=block, n_features=width), _chunks(path, n_features=width))
    first = next(line for line in path.read_bytes().split(b"\n") if line.strip() and not line.startswith(b"#"))
    # a block shorter than the first row's line: nothing handed over, the reader reads it all
    assert (adopted[0] is None) == (0 < block < len(first) + 1)
    assert not early_parse.pending()


@pytest.mark.parametrize("block", [0, 64, 256])
def test_a_reader_that_comes_at_once_reads_the_same_rows(tmp_path, block):
    path = _sparse_file(tmp_path / "x.svm", rows=400)
    for _ in range(20):
        _same(_early_then_read(path, block=block, at_once=True, n_features=30), _chunks(path, n_features=30))


@pytest.mark.parametrize("max_text", [1, 300, 10 ** 9])
def test_a_reader_goes_on_from_the_rows_parsed_early(tmp_path, adopted, max_text):
    path = _dense_file(tmp_path / "x.svm", rows=50)
    _same(_early_then_read(path, block=256, max_text=max_text, n_features=7, chunk_rows=20),
          _chunks(path, n_features=7, chunk_rows=20))
    rows = adopted[0].rows
    assert rows == 20 if max_text == 10 ** 9 else 0 < rows < 20


def test_the_early_parse_stops_at_a_full_chunk_and_the_reader_emits_it(tmp_path, adopted):
    path = _dense_file(tmp_path / "x.svm", rows=50)
    got = _early_then_read(path, block=0, n_features=7, chunk_rows=16)
    _same(got, _chunks(path, n_features=7, chunk_rows=16))
    assert adopted[0].rows == 16 and [c[0][0] for c in got] == [16, 16, 16, 2]


@pytest.mark.parametrize("reader, taken", [
    ({"n_features": 9}, False),
    ({"n_features": None}, False),
    ({"n_features": 8, "zero_based": True}, False),
    ({"dtype": np.float64}, False),
    ({"chunk_rows": 10}, False),        # the early parse holds 16 rows
    ({"chunk_rows": 32}, True),
    ({}, True),
])
def test_rows_parsed_with_other_options_are_adopted_only_when_the_reader_agrees(tmp_path, adopted, reader, taken):
    path = _dense_file(tmp_path / "x.svm", rows=30)
    reader = dict({"n_features": 7, "chunk_rows": 16}, **reader)
    _same(_early_then_read(path, block=0, early={"zero_based": False, "chunk_rows": 16}, **reader),
          _chunks(path, **reader))
    assert (adopted[0] is not None) == taken


def test_sparse_rows_whose_columns_reach_past_the_width_are_left_to_the_reader(tmp_path, adopted):
    path = _sparse_file(tmp_path / "x.svm", d=30)
    with pytest.raises(InputFormatError) as early:
        _early_then_read(path, block=0, n_features=20)
    with pytest.raises(InputFormatError) as plain:
        _chunks(path, n_features=20)
    assert str(early.value) == str(plain.value) and adopted == [None]
    _same(_early_then_read(path, block=0, n_features=20, extra_features="ignore"),
          _chunks(path, n_features=20, extra_features="ignore"))


def test_rows_first_seen_without_a_width_are_not_adopted_where_the_reader_would_keep_no_indices(
        tmp_path, adopted):
    # a first block of comments only: the early parse cannot tell dense rows
    # and keeps indices; the reader, given the width, would keep none
    path = tmp_path / "x.svm"
    path.write_bytes(b"# a comment\n" * 10 + b"1 1:1 2:2 3:3\n2 1:1 2:2 3:3\n")
    _same(_early_then_read(path, block=64, n_features=3), _chunks(path, n_features=3))
    assert adopted == [None]
    # rows with a gap keep their indices in the reader too: adopted
    path.write_bytes(b"# a comment\n" * 10 + b"1 1:1 3:3\n2 1:1 2:2 3:3\n")
    _same(_early_then_read(path, block=64, n_features=3), _chunks(path, n_features=3))
    assert adopted[1] is not None and adopted[1].indices is not None
    # a dense first row: parsed without indices, adopted by a reader of its width
    path.write_bytes(b"1 1:1 2:1 3:1 4:1\n2 1:1 2:2 3:3\n")
    _same(_early_then_read(path, block=0, n_features=4), _chunks(path, n_features=4))
    assert adopted[2] is not None and adopted[2].indices is None and adopted[2].rows == 1


@pytest.mark.parametrize("where", ["early part", "after it"])
def test_a_malformed_line_is_reported_with_its_line_as_without_the_early_parse(tmp_path, where):
    path = _dense_file(tmp_path / "x.svm", rows=60)
    lines = path.read_bytes().split(b"\n")
    lines[3 if where == "early part" else 55] = b"1 1:x"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(InputFormatError) as early:
        _early_then_read(path, block=512, max_text=600, n_features=7)
    with pytest.raises(InputFormatError) as plain:
        _chunks(path, n_features=7)
    assert str(early.value) == str(plain.value)
    assert ":%d:" % (4 if where == "early part" else 56) in str(plain.value)


def test_a_file_replaced_after_the_early_parse_is_read_as_it_is_now(tmp_path, adopted):
    path = _dense_file(tmp_path / "x.svm", rows=30, seed=1)
    assert early_parse.start(str(path), zero_based=False, chunk_rows=16384)
    _dense_file(tmp_path / "y.svm", rows=31, seed=2)
    os.replace(tmp_path / "y.svm", path)
    got = _chunks(path, n_features=7)
    assert adopted == [None]
    _same(got, _chunks(path, n_features=7))
    assert got[0][0] == (31, 7)


def test_a_file_rewritten_in_place_with_its_times_put_back_is_read_as_it_is_now(tmp_path, adopted):
    # cp -p, rsync --inplace -t: same inode, size and modification time
    path = _dense_file(tmp_path / "x.svm", rows=30, seed=1)
    before = os.stat(path)
    assert early_parse.start(str(path), zero_based=False, chunk_rows=16384)
    early_parse._finish()
    text = path.read_bytes().split(b"\n")
    with open(path, "r+b") as fh:
        fh.write(b"\n".join(text[::-1][1:] + [b""]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size and os.stat(path).st_ino == before.st_ino
    got = _chunks(path, n_features=7)
    assert adopted == [None]
    _same(got, _chunks(path, n_features=7))


def test_reading_another_file_first_drops_the_early_parse(tmp_path, adopted):
    a = _dense_file(tmp_path / "a.svm", seed=1)
    b = _dense_file(tmp_path / "b.svm", seed=2)
    assert early_parse.start(str(a), zero_based=False, chunk_rows=16384)
    _chunks(b, n_features=7)
    assert adopted == [None] and not early_parse.pending()
    _chunks(a, n_features=7)
    assert adopted == [None]


def test_compressed_text_is_left_to_the_reader(tmp_path, adopted):
    path = tmp_path / "x.svm.gz"
    plain = _dense_file(tmp_path / "x.svm")
    path.write_bytes(gzip.compress(plain.read_bytes()))
    _same(_early_then_read(path, block=0, n_features=7), _chunks(plain, n_features=7))
    assert adopted == [] and not early_parse.pending()


def test_an_early_parse_of_no_regular_file_does_not_start(tmp_path):
    assert not early_parse.start(str(tmp_path), zero_based=False, chunk_rows=10)
    assert not early_parse.start(str(tmp_path / "missing"), zero_based=False, chunk_rows=10)
    # a FIFO is not opened: that would wait for a writer, and cut it off when closed
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = []
    t = threading.Thread(target=lambda: started.append(early_parse.start(str(fifo), zero_based=False,
                                                                         chunk_rows=10)), daemon=True)
    t.start()
    t.join(10)
    assert started == [False]
    assert not early_parse.pending()


def test_no_early_parse_under_an_address_space_limit(tmp_path):
    # ulimit -v: what the early parse reserves could be what the command then lacks
    path = _dense_file(tmp_path / "x.svm")
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))\n"
            "from hsvm_cli.io import early_parse\n"
            "print(early_parse.start(sys.argv[1], zero_based=False, chunk_rows=10))\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert r.stdout == "False\n", r.stderr
    assert early_parse.start(str(path), zero_based=False, chunk_rows=10)


# ------------------------------------------------------------------ the command line

@pytest.mark.parametrize("name", ["predict", "hash-data"])
def test_the_command_line_tables_list_exactly_the_commands_options_with_values(name):
    from hsvm_cli.cli.main import HsvmGroup, cli
    command = HsvmGroup.get_command(cli, click.Context(cli), name)
    with_values = {o for p in command.params if isinstance(p, click.Option) and not p.is_flag
                   for o in p.opts + p.secondary_opts}
    assert early_input.VALUE_OPTIONS[name] == with_values
    chunk = next(p for p in command.params if p.name == "chunk_rows")
    assert early_input.DEFAULT_CHUNK_ROWS == chunk.default
    # one positional: the input
    assert [p.nargs for p in command.params if isinstance(p, click.Argument)] == [1]


@pytest.mark.parametrize("args, found", [
    ("-m M -H H -k 3 t.svm", ("t.svm", False, 16384)),
    ("t.svm -qk3 -m M --chunk-rows=100", ("t.svm", False, 100)),
    ("-m M --zero-based --one-based --zero-based t.svm", ("t.svm", True, 16384)),
    ("-m M --output t.svm u.svm", ("u.svm", False, 16384)),
    ("-m M -o --zero-based u.svm", ("u.svm", False, 16384)),
    ("-qm M -k 3 u.svm", ("u.svm", False, 16384)),
    ("-m M -- -t.svm", ("-t.svm", False, 16384)),
    ("-m M -", None),
    ("-m M", None),
    ("-m M a.svm b.svm", None),
    ("-m M --threads 1 t.svm", None),
    ("-m M --shard 0/2 t.svm", None),
    ("-m M --dask tcp://x t.svm", None),
    ("-m M --chunk-rows x t.svm", None),
    ("-m M --help t.svm", None),
    ("-m", None),
])
def test_predicts_input_is_read_off_its_command_line(args, found, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert early_input.command_input("predict", args.split()) == found


@pytest.mark.parametrize("args, found", [
    ("-H h.hbm t.svm -o c.codes", ("t.svm", False, 16384)),
    ("t.svm -H h.hbm --format svm --bits 64 -o -", ("t.svm", False, 16384)),
    ("-H h.hbm --shard 1/4 t.svm -o c", None),
    ("-H h.hbm --threads 2 t.svm -o c", None),      # no --threads here: read as a flag, then two files
])
def test_hash_datas_input_is_read_off_its_command_line(args, found, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert early_input.command_input("hash-data", args.split()) == found


@pytest.mark.parametrize("argv, env", [
    (["hsvm", "train-ovo", "{path}", "-o", "M"], {}),
    (["hsvm", "hash-data", "-H", "H", "{path}"], {}),
    (["hsvm", "predict", "-m", "M", "{path}"], {"HSVM_NO_EARLY_PARSE": "1"}),
    (["hsvm", "predict", "-m", "M", "{path}"], {}),
])
def test_only_a_predict_command_line_starts_an_early_parse(tmp_path, monkeypatch, argv, env):
    path = _dense_file(tmp_path / "x.svm")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    early_input.start_early_parse([a.format(path=path) for a in argv])
    assert early_parse.pending() == (argv[1] != "train-ovo" and not env)


def test_one_thread_starts_no_early_parse(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert early_input.command_input("predict", ["-m", "M", "t.svm"]) is None
    assert early_input.command_input("hash-data", ["-H", "H", "t.svm"]) is None
    assert early_input.command_input("predict", ["-m", "M", "--threads", "2", "t.svm"]) == ("t.svm", False, 16384)


# hsvm's entry point with a spy on the claim: prints ADOPTED <rows> to stderr
_SPIED_ENTRY = (
    "import sys\n"
    "from hsvm_cli.io import early_parse\n"
    "claim = early_parse.claim\n"
    "def spy(*a, **k):\n"
    "    rows = claim(*a, **k)\n"
    "    sys.stderr.write('ADOPTED %s\\n' % (rows.rows if rows is not None else None))\n"
    "    return rows\n"
    "early_parse.claim = spy\n"
    "sys.argv[0] = 'hsvm'\n"
    "from hsvm_cli.cli.entry import main\n"
    "main()\n")


def _hsvm(command, args, env_extra):
    env = dict(os.environ, OMP_NUM_THREADS="2", **env_extra)
    return subprocess.run([sys.executable, "-c", _SPIED_ENTRY, command] + [str(a) for a in args], env=env,
                          capture_output=True, timeout=120)


def _with_and_without(tmp_path, command, args, rows):
    """(exit status, stderr without the spy's lines, output bytes) of the
    command with and without the early parse (its output: -o {out}), the
    early parse's adopted rows checked against ``rows``."""
    runs = []
    for off in ("0", "1"):
        out = tmp_path / ("out%s" % off)
        r = _hsvm(command, [out if a == "{out}" else a for a in args], {"HSVM_NO_EARLY_PARSE": off})
        adopted = [line for line in r.stderr.splitlines() if line.startswith(b"ADOPTED")]
        runs.append((r.returncode, r.stderr.replace(b"".join(a + b"\n" for a in adopted), b""),
                     out.read_bytes() if out.exists() else None))
        assert adopted == ([b"ADOPTED " + rows] if off == "0" else [])
    return runs


@pytest.mark.parametrize("damage", [None, b"1 5:x\n"])
def test_predict_gives_the_same_bytes_and_errors_with_and_without_the_early_parse(tmp_path, digits_files, damage):
    model, hbm, _ = digits_files
    test = tmp_path / "t.svm"
    test.write_bytes(gzip.decompress((BUNDLED / "digits" / "test.svm.gz").read_bytes()) + (damage or b""))
    # the rows parsed early were used (all of them: a small file is read
    # before the modules load); a malformed line is left to the reader
    rows = b"None" if damage else b"%d" % test.read_bytes().count(b"\n")
    runs = _with_and_without(tmp_path, "predict", ["-m", model, "-H", hbm, "-k", "3", "--scores", test, "-o", "{out}"],
                             rows)
    assert runs[0] == runs[1]
    assert runs[0][0] == (0 if damage is None else 65)


@pytest.mark.parametrize("fmt", ["codes", "svm"])
def test_hash_data_gives_the_same_bytes_with_and_without_the_early_parse(tmp_path, digits_files, fmt):
    _, hbm, _ = digits_files
    test = tmp_path / "t.svm"
    test.write_bytes(gzip.decompress((BUNDLED / "digits" / "test.svm.gz").read_bytes()))
    runs = _with_and_without(tmp_path, "hash-data", ["-q", "-H", hbm, "--format", fmt, test, "-o", "{out}"],
                             b"%d" % test.read_bytes().count(b"\n"))
    assert runs[0] == runs[1] and runs[0][0] == 0 and runs[0][2]
