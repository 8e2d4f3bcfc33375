"""Byte-range shards of plain sample files (hsvm_cli/io/shard.py and the shard=
option of the svmlight reader): every line read by exactly one shard, true
line numbers, compressed input and streams refused."""
import bz2
import gzip
import io
import lzma
import os

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import InputFormatError, InputNotFoundError, OptionError
from hsvm_cli.io import shard as shard_mod
from hsvm_cli.io.shard import (
    ByteRange,
    Shard,
    ShardError,
    ShardReader,
    open_shard,
    parse_shard,
    shard_byte_range,
    shard_from_slurm,
)
from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight

from conftest import zstd_compress

# Small files with everything the reader accepts: comments, blank and
# comment-only lines, CRLF, qid, a missing final newline, a long line.
AWKWARD = (
    b"# leading comment\n"
    b"1 1:0.5 3:1\r\n"
    b"\n"
    b"2 2:1.5 # trailing comment\n"
    b"   \t\n"
    b"-3 qid:7 1:1 2:2 3:3 4:4 5:5 6:6\n"
    b"# comment only\r\n"
    b"4\n"
    b"5 5:5e-1"
)
PLAIN = b"1 1:1 2:0.5\n2 2:2\r\n3 1:3 3:1.25\n4 3:4 # c\n5 1:5\n6 2:6\n7 1:7 2:7"
FILES = {
    "awkward": AWKWARD,
    "plain": PLAIN,
    "final-newline": PLAIN + b"\n",
    "one-line": b"1 1:1",
    "only-newlines": b"\n\n\n",
    "empty": b"",
    "blank-tail": b"1 1:1\n2 1:2\n\n\n",
}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def shard_bytes(path, spec):
    with open_shard(path, spec) as fh:
        return fh.read()


def owner_oracle(data, cuts):
    """Independent statement of the rule: the line starting at byte s belongs
    to the shard whose range [cuts[i], cuts[i+1]) holds byte s - 1 (the first
    line to the one holding byte 0).  Returns the bytes of each shard."""
    starts = [s for s in range(len(data)) if s == 0 or data[s - 1] == 0x0A]
    out = [b""] * (len(cuts) - 1)
    for j, s in enumerate(starts):
        e = starts[j + 1] if j + 1 < len(starts) else len(data)
        held = max(s - 1, 0)
        owner = next(i for i in range(len(cuts) - 1) if cuts[i] <= held < cuts[i + 1])
        out[owner] += data[s:e]
    return out


def parse_chunks(path, spec, width=8, **kw):
    chunks = list(iter_svmlight(path, n_features=width, chunk_rows=1, shard=spec, **kw))
    return ([c.X.toarray()[0].tolist() for c in chunks], [int(c.y[0]) for c in chunks],
            [c.first_line for c in chunks])


# ------------------------------------------------------------------ specs

@pytest.mark.parametrize("text, expected", [("0/1", (0, 1)), ("3/4", (3, 4)), (" 2 / 7 ", (2, 7)),
                                            ((1, 2), (1, 2)), (Shard(0, 3), (0, 3))])
def test_parse_shard_accepts_zero_based_index_over_count(text, expected):
    assert parse_shard(text) == Shard(*expected)


@pytest.mark.parametrize("text, words", [
    ("4/4", "count from 0"), ("5/4", "0 to 3"), ("0/0", "at least 1"), ("1", "i/N"), ("-1/3", "i/N"),
    ("a/3", "i/N"), ("1/2/3", "i/N"), ("", "i/N"), ((1.0, 2), "two integers"), (3, "i/N")])
def test_parse_shard_refuses_malformed_specs_with_the_reason(text, words):
    with pytest.raises(ShardError) as info:
        parse_shard(text)
    assert words in str(info.value)
    assert info.value.exit_code == 2
    assert isinstance(info.value, ValueError) and isinstance(info.value, OptionError)


def test_shard_from_slurm_maps_array_task_ids_to_zero_based_shards():
    env = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "1",
           "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "1"}
    assert shard_from_slurm(env) == Shard(4, 8)
    env.update(SLURM_ARRAY_TASK_ID="6", SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_MAX="14",
               SLURM_ARRAY_TASK_STEP="2")
    assert shard_from_slurm(env) == Shard(3, 8)
    with pytest.raises(ShardError, match="^'slurm' needs a Slurm job array task"):
        shard_from_slurm({})
    # a count below one is said as such (it read "not one of the tasks 0--1:1")
    for count in ("0", "-3"):
        with pytest.raises(ShardError, match="^SLURM_ARRAY_TASK_COUNT=%s: a job array has at least one task$" % count):
            shard_from_slurm({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": count, "SLURM_ARRAY_TASK_MIN": "0"})
    # task 1 of --array=1-4 without its MIN had been taken for block 1 of 0..3
    with pytest.raises(ShardError, match="SLURM_ARRAY_TASK_MIN is not set"):
        shard_from_slurm({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"})
    with pytest.raises(ShardError, match="SLURM_ARRAY_TASK_STEP='' is not an integer"):
        shard_from_slurm({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
                          "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_STEP": ""})
    with pytest.raises(ShardError, match="evenly spaced tasks; give the shard as i/N"):
        shard_from_slurm({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "3",
                          "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "6"})
    # an evenly spaced array that this task's id is not part of: the id named
    for task in ("1", "6", "-2"):
        with pytest.raises(ShardError, match="SLURM_ARRAY_TASK_ID %s is not one of the job array's tasks 0-4:2"
                           % task):
            shard_from_slurm({"SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_COUNT": "3",
                              "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2"})


def test_parse_shard_slurm_reads_this_tasks_environment(monkeypatch):
    for k, v in {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3",
                 "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "2"}.items():
        monkeypatch.setenv(k, v)
    assert parse_shard("slurm") == Shard(2, 3)


def test_byte_ranges_tile_the_file_in_floor_proportions():
    for size in (0, 1, 5, 97, 10**12 + 3):
        for n in (1, 2, 3, 7, 100):
            ranges = [shard_byte_range((i, n), size) for i in range(n)]
            assert ranges[0][0] == 0 and ranges[-1][1] == size
            assert all(ranges[i][1] == ranges[i + 1][0] for i in range(n - 1))
            assert all(r[1] - r[0] in (size // n, size // n + 1) for r in ranges)


# --------------------------------------------------------- raw byte tiling

@pytest.mark.parametrize("name", sorted(FILES))
def test_every_two_way_split_point_gives_whole_lines_read_once(tmp_path, name):
    data = FILES[name]
    path = write(tmp_path, name, data)
    size = len(data)
    for b in range(size + 1):
        left = shard_bytes(path, ByteRange(0, b))
        right = shard_bytes(path, ByteRange(b, size))
        assert left + right == data, b
        assert [left, right] == owner_oracle(data, [0, b, size]), b


@pytest.mark.parametrize("name", sorted(FILES))
def test_n_shards_concatenate_to_the_file_for_n_up_to_7_and_beyond_the_size(tmp_path, name):
    data = FILES[name]
    path = write(tmp_path, name, data)
    for n in list(range(1, 8)) + [len(data) + 3]:
        parts = [shard_bytes(path, (i, n)) for i in range(n)]
        assert b"".join(parts) == data, n
        cuts = [0] + [shard_byte_range((i, n), len(data))[1] for i in range(n)]
        assert parts == owner_oracle(data, cuts), n


def test_random_multi_way_cuts_tile_the_file(tmp_path):
    rng = np.random.default_rng(0)
    data = AWKWARD * 3
    path = write(tmp_path, "x.svm", data)
    for _ in range(200):
        k = int(rng.integers(1, 9))
        cuts = [0] + sorted(rng.integers(0, len(data) + 1, k).tolist()) + [len(data)]
        parts = [shard_bytes(path, ByteRange(cuts[i], cuts[i + 1])) for i in range(len(cuts) - 1)]
        assert b"".join(parts) == data
        assert parts == owner_oracle(data, cuts)


def test_small_reads_give_the_same_bytes(tmp_path):
    data = AWKWARD
    path = write(tmp_path, "x.svm", data)
    for b in range(len(data) + 1):
        for spec in (ByteRange(0, b), ByteRange(b, len(data))):
            raw = ShardReader(path, spec)
            got = b""
            while True:
                piece = raw.read(3)
                if not piece:
                    break
                got += piece
            raw.close()
            assert got == shard_bytes(path, spec)


# ----------------------------------------------------------------- parsing

@pytest.mark.parametrize("name", ["awkward", "plain", "final-newline", "one-line", "blank-tail"])
def test_every_split_point_parses_to_the_unsharded_rows_and_line_numbers(tmp_path, name):
    data = FILES[name]
    path = write(tmp_path, name, data)
    whole = parse_chunks(path, None)
    assert whole[1], "the file has rows"
    for b in range(len(data) + 1):
        left = parse_chunks(path, ByteRange(0, b))
        right = parse_chunks(path, ByteRange(b, len(data)))
        assert tuple(a + b_ for a, b_ in zip(left, right)) == whole, b


@pytest.mark.parametrize("name", ["awkward", "plain", "final-newline"])
def test_one_to_seven_shards_parse_to_the_unsharded_rows(tmp_path, name):
    data = FILES[name]
    path = write(tmp_path, name, data)
    whole = parse_chunks(path, None)
    for n in range(1, 8):
        got = ([], [], [])
        for i in range(n):
            part = parse_chunks(path, "%d/%d" % (i, n))
            for acc, p in zip(got, part):
                acc.extend(p)
        assert got == whole, n
        Xs = [load_svmlight(path, n_features=8, shard=(i, n)) for i in range(n)]
        assert np.array_equal(sp.vstack([X for X, _ in Xs]).toarray(),
                              load_svmlight(path, n_features=8)[0].toarray())


def test_shards_agree_with_scikit_learn_offset_and_length(tmp_path):
    # scikit-learn departs from "exactly once" in two places: past a blank or
    # comment-only line crossing the end it reads one line more, and a range
    # holding no newline at all (shorter than a line) still reads the line
    # after it -- which the next range reads too.  On files without blank or
    # comment-only lines, and ranges that hold a newline, the rules coincide.
    load_svmlight_file = pytest.importorskip("sklearn.datasets").load_svmlight_file
    data = PLAIN
    path = write(tmp_path, "plain.svm", data)
    compared = 0
    for offset in range(len(data)):
        for length in range(1, len(data) - offset + 1):
            X, y = load_svmlight(path, n_features=4, shard=ByteRange(offset, offset + length))
            if offset > 0 and b"\n" not in data[offset:offset + length]:
                assert y.shape[0] == 0
                continue
            compared += 1
            Xs, ys = load_svmlight_file(path, n_features=4, zero_based=False, offset=offset,
                                        length=length)
            assert y.tolist() == ys.astype(int).tolist(), (offset, length)
            assert np.array_equal(X.toarray(), Xs.toarray()), (offset, length)
    assert compared > len(data) ** 2 // 4


def test_error_in_a_late_shard_names_the_true_file_line(tmp_path):
    lines = [b"%d 1:%d" % (k % 3, k) for k in range(40)]
    lines[33] = b"1 1:1 1:2"
    data = b"\n".join(lines) + b"\n"
    path = write(tmp_path, "bad.svm", data)
    owner = next(i for i in range(4) if b"1 1:1 1:2" in shard_bytes(path, (i, 4)))
    assert owner > 0
    with pytest.raises(InputFormatError) as info:
        list(iter_svmlight(path, shard=(owner, 4)))
    assert info.value.line == 34
    assert str(info.value).startswith("%s:34: repeated index 1" % path)
    for i in range(4):
        if i != owner:
            list(iter_svmlight(path, shard=(i, 4)))


def test_lines_before_a_shard_are_counted_only_when_asked(tmp_path, monkeypatch):
    data = b"".join(b"%d 1:1\n" % (k % 2) for k in range(1000))
    path = write(tmp_path, "x.svm", data)
    calls = []
    real = shard_mod.count_newlines
    monkeypatch.setattr(shard_mod, "count_newlines", lambda fd, stop: calls.append(stop) or real(fd, stop))
    chunks = list(iter_svmlight(path, shard=(3, 4), chunk_rows=100))
    # byte 5250 = 3/4 of 7000 starts line 751, whose preceding newline is
    # shard 2's: shard 3 holds lines 752..1000
    assert sum(c.y.shape[0] for c in chunks) == 249
    assert calls == []
    assert [c.first_line for c in chunks] == [752, 852, 952]
    assert len(calls) == 1


def test_count_newlines_matches_bytes_count_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(shard_mod, "_COUNT_BLOCK", 7)
    data = AWKWARD * 5
    path = write(tmp_path, "x.svm", data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for stop in range(len(data) + 1):
            assert shard_mod.count_newlines(fd, stop) == data[:stop].count(b"\n")
    finally:
        os.close(fd)


# --------------------------------------------------------------- refusals

@pytest.mark.parametrize("kind, compress", [("gzip", gzip.compress), ("bz2", bz2.compress),
                                            ("xz", lzma.compress), ("zstd", zstd_compress)])
def test_compressed_input_is_refused_with_the_remedy(tmp_path, kind, compress):
    path = write(tmp_path, "x.svm.z", compress(PLAIN))
    with pytest.raises(ShardError) as info:
        list(iter_svmlight(path, shard="0/2"))
    msg = str(info.value)
    assert "%s-compressed input cannot be split" % kind in msg and "shard by file" in msg
    assert msg.startswith(path)
    assert info.value.exit_code == 2


def test_stdin_streams_and_pipes_are_refused(tmp_path):
    with pytest.raises(ShardError, match="standard input"):
        list(iter_svmlight("-", shard="0/2"))
    with pytest.raises(ShardError, match="standard input"):
        list(iter_svmlight(io.BytesIO(PLAIN), shard="0/2"))
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keep the open from blocking
    try:
        with pytest.raises(ShardError, match="only a regular file"):
            list(iter_svmlight(fifo, shard="0/2"))
    finally:
        os.close(fd)


@pytest.mark.parametrize("kind, compress", [("gzip", gzip.compress), ("xz", lzma.compress)])
def test_shard_0_of_1_is_the_whole_input_of_any_kind(tmp_path, kind, compress):
    want, y = load_svmlight(io.BytesIO(PLAIN))
    sources = [write(tmp_path, "x.svm.z", compress(PLAIN)), io.BytesIO(PLAIN)]
    for source in sources:
        for shard in ("0/1", (0, 1)):
            if hasattr(source, "seek"):
                source.seek(0)
            X, got_y = load_svmlight(source, shard=shard)
            assert (X != want).nnz == 0 and np.array_equal(got_y, y)
    assert [c.first_line for c in iter_svmlight(sources[0], shard="0/1", chunk_rows=2)][:2] == [1, 3]


def test_missing_file_is_input_not_found(tmp_path):
    with pytest.raises(InputNotFoundError):
        list(iter_svmlight(str(tmp_path / "nope.svm"), shard="0/2"))


def test_bad_shard_is_refused_at_the_call(tmp_path):
    path = write(tmp_path, "x.svm", PLAIN)
    with pytest.raises(ShardError):
        iter_svmlight(path, shard="2/2")
    with pytest.raises(ValueError, match="outside"):
        open_shard(path, ByteRange(3, len(PLAIN) + 1))


def test_a_line_over_the_limit_in_a_late_shard_names_the_true_file_line(tmp_path):
    lines = [b"1 1:1"] * 30 + [b"2 " + b" ".join(b"%d:1" % k for k in range(1, 40))] + [b"1 1:1"] * 9
    path = write(tmp_path, "long.svm", b"\n".join(lines) + b"\n")
    owner = next(i for i in range(4) if lines[30] in shard_bytes(path, (i, 4)))
    assert owner > 0
    with pytest.raises(InputFormatError) as info:
        list(iter_svmlight(path, shard=(owner, 4), _line_limit=64, _block_size=16))
    assert info.value.line == 31


def test_compression_is_told_by_magic_not_by_name(tmp_path):
    # a plain file named .gz shards fine; a gzip file named .svm does not
    plain = write(tmp_path, "plain.svm.gz", PLAIN)
    assert b"".join(shard_bytes(plain, (i, 3)) for i in range(3)) == PLAIN
    packed = write(tmp_path, "packed.svm", gzip.compress(PLAIN))
    with pytest.raises(ShardError, match="gzip-compressed"):
        open_shard(packed, "0/3")
