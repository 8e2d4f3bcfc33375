"""How the svmlight reader meets broken inputs: corrupt and truncated
compressed data, failing reads, endless lines, and the limits it shares with
the trainer."""
import bz2
import errno
import gzip
import io
import lzma
import warnings
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import CorruptInputError, InputFormatError, InputReadError
from hsvm_cli.io.files import open_input
from hsvm_cli.io.svmlight import MAX_FEATURES, MAX_LINE_BYTES, iter_svmlight, load_svmlight
from hsvm_cli.train.liblinear import _as_csr

from conftest import ZSTD, zstd_compress

COMPRESS = {"gzip": lambda b: gzip.compress(b, compresslevel=1), "bz2": lambda b: bz2.compress(b, compresslevel=1),
            "xz": lambda b: lzma.compress(b, preset=1), "zstd": zstd_compress}
# Streaming decompressors of the standard library: what a truncated file still yields.
PARTIAL = {
    "gzip": lambda b: zlib.decompressobj(wbits=31).decompress(b),
    "bz2": lambda b: bz2.BZ2Decompressor().decompress(b),
    "xz": lambda b: lzma.LZMADecompressor().decompress(b),
    "zstd": lambda b: ZSTD.ZstdDecompressor().decompress(b),
}


def random_text(lines, seed):
    """``lines`` lines "L 1:0.dddddd ... 8:0.dddddd" of random digits (which
    compress about as well as real data), built at numpy speed."""
    template = np.frombuffer(b"0 " + b" ".join(b"%d:0.______" % c for c in range(1, 9)) + b"\n", dtype=np.uint8)
    slots = np.flatnonzero(template == ord("_"))
    rows = np.tile(template, (lines, 1))
    rng = np.random.default_rng(seed)
    rows[:, slots] = rng.integers(ord("0"), ord("9") + 1, size=(lines, slots.size), dtype=np.uint8)
    rows[:, 0] = rng.integers(ord("0"), ord("5"), size=lines, dtype=np.uint8)
    return rows.tobytes()


class Pieces(io.RawIOBase):
    """A stream handing out ``data`` ``size`` bytes per read, then failing
    with ``error`` (once ``fail_after`` bytes are out) if given."""

    def __init__(self, data, size, fail_after=None, error=None):
        self.data, self.size, self.pos = data, size, 0
        self.fail_after, self.error = fail_after, error
        self.handed_out = 0

    def readable(self):
        return True

    def readinto(self, buf):
        if self.fail_after is not None and self.pos >= self.fail_after:
            raise self.error
        n = min(len(buf), self.size, len(self.data) - self.pos)
        buf[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        self.handed_out += n
        return n


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_truncated_compressed_input_names_the_line_reached(kind):
    text = random_text(40000, 1)  # ~3 MB, several of the decompressor's 1 MB reads
    blob = COMPRESS[kind](text)
    cut = blob[:len(blob) * 2 // 3]
    recoverable_lines = PARTIAL[kind](cut).count(b"\n")
    with pytest.raises(CorruptInputError) as info:
        for _ in iter_svmlight(open_input(io.BytesIO(cut)), name="cut", _block_size=1 << 16):
            pass
    err = info.value
    assert err.truncated and err.kind == kind and err.exit_code == 65
    assert 0 < err.offset <= len(cut)
    # the reader cannot have got past what the data still holds, and has got
    # past the first of the decompressor's reads
    assert 1 < err.line <= recoverable_lines + 1
    # a stream cannot be decompressed again to find the line: a lower bound, said so
    assert not err.line_exact
    assert str(err) == "cut: truncated %s data near byte %d (line %d or later)" % (kind, err.offset, err.line)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_corrupt_compressed_data_is_corrupt_not_truncated(kind):
    blob = bytearray(COMPRESS[kind](random_text(200, 2)))
    for pos in range(len(blob) // 2, len(blob) // 2 + 8):
        blob[pos] ^= 0xFF
    with pytest.raises(CorruptInputError) as info:
        load_svmlight(open_input(io.BytesIO(bytes(blob))), name="x")
    assert not info.value.truncated and str(info.value).startswith("x: corrupt %s data near byte " % kind)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_input_that_is_only_the_start_of_a_magic_number_is_truncated(kind):
    magic = COMPRESS[kind](b"1 1:1\n")
    for k in range(1, {"gzip": 2, "bz2": 3, "xz": 6, "zstd": 4}[kind]):
        with pytest.raises(CorruptInputError, match=r"^f: truncated %s data near byte %d \(line 1\)$" % (kind, k)):
            load_svmlight(open_input(io.BytesIO(magic[:k]), name="f"), name="f")


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_magic_bytes_arriving_one_at_a_time_are_still_recognised(kind):
    # a pipe may deliver fewer bytes than the magic number in its first read
    text = random_text(50, 3)
    X, y = load_svmlight(open_input(Pieces(COMPRESS[kind](text), 1)))
    X0, y0 = load_svmlight(io.BytesIO(text))
    assert (X != X0).nnz == 0 and np.array_equal(y, y0)


def test_short_plain_inputs_that_look_like_no_magic_are_plain():
    for text in [b"1", b"1 1:1", b"B\n", b"\n"]:
        fh = open_input(io.BytesIO(text))
        assert fh.read() == text


def test_a_failing_read_names_the_line_reached():
    text = random_text(3000, 4)
    src = io.BufferedReader(Pieces(text, 4096, fail_after=150000, error=OSError(errno.EIO, "Input/output error")),
                            buffer_size=4096)
    with pytest.raises(InputReadError) as info:
        for _ in iter_svmlight(src, name="disk.svm", _block_size=8192):
            pass
    err = info.value
    assert err.exit_code == 66
    complete = text[:150000].count(b"\n")
    assert complete - 8192 // 60 <= err.line - 1 <= complete
    assert str(err) == "disk.svm: read error: Input/output error (line %d)" % err.line


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_failing_read_under_a_decompressor_is_a_read_error(kind):
    blob = COMPRESS[kind](random_text(3000, 5))
    src = Pieces(blob, 4096, fail_after=len(blob) // 2, error=OSError(errno.EIO, "Input/output error"))
    with pytest.raises(InputReadError, match=r"^f: read error: Input/output error \(line \d+\)$"):
        load_svmlight(open_input(src, name="f"), name="f")


def test_a_read_error_on_the_first_bytes_is_a_read_error():
    src = Pieces(b"", 1, fail_after=0, error=OSError(errno.EIO, "Input/output error"))
    with pytest.raises(InputReadError, match=r"^f: read error: Input/output error \(line 1\)$"):
        open_input(src, name="f")


@pytest.mark.parametrize("block", [7, 64, 100, 1000])
def test_lines_up_to_the_limit_are_read_and_longer_ones_are_an_error(block):
    limit = 100
    ok = b"1 1:" + b"0" * (limit - 5) + b"1"
    assert len(ok) == limit
    for ending in (b"\n", b"\r\n"[1:], b""):
        X, _ = load_svmlight(io.BytesIO(b"2 1:1\n" + ok + ending), _block_size=block, _line_limit=limit)
        assert X.shape == (2, 1)
    long = ok + b"0"
    for data in (b"2 1:1\n" + long + b"\n3 1:1\n", b"2 1:1\n" + long):
        with pytest.raises(InputFormatError) as info:
            load_svmlight(io.BytesIO(data), name="f", _block_size=block, _line_limit=limit)
        assert str(info.value) == "f:2: line longer than 100 bytes"


def test_a_long_line_is_refused_before_its_end_arrives():
    endless = Pieces(b"1 1:1\n# ok\n" + b"9" * 10**7, 50)
    with pytest.raises(InputFormatError, match=r"^f:3: line longer than 1000 bytes$"):
        load_svmlight(endless, name="f", _block_size=64, _line_limit=1000)
    assert endless.handed_out <= 11 + 1000 + 64


class Endless(io.RawIOBase):
    """An input with no newline that never ends (a runaway generator)."""

    def __init__(self, cap):
        self.handed_out, self.cap = 0, cap

    def readable(self):
        return True

    def readinto(self, buf):
        assert self.handed_out < self.cap, "the reader kept reading"
        buf[:] = b"7" * len(buf)
        self.handed_out += len(buf)
        return len(buf)


def test_the_default_line_limit_is_64_mb_and_bounds_what_is_held():
    endless = Endless(cap=2 * MAX_LINE_BYTES)
    with pytest.raises(InputFormatError, match=r"^f:1: line longer than 64 MB$"):
        load_svmlight(endless, name="f")
    assert MAX_LINE_BYTES == 64 << 20
    assert endless.handed_out <= MAX_LINE_BYTES + (4 << 20)


def test_float32_values_near_the_limit_read_without_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X, _ = load_svmlight(io.BytesIO(b"1 1:3.4028235e38 2:-3.4028234e38 3:1e-46\n"), dtype=np.float32)
        assert np.isfinite(X.data).all()
        with pytest.raises(InputFormatError):
            load_svmlight(io.BytesIO(b"1 1:1 2:3.5e38\n"), dtype=np.float32)


def test_the_largest_index_read_is_the_widest_matrix_the_trainer_takes():
    X, _ = load_svmlight(io.BytesIO(b"1 %d:1\n" % MAX_FEATURES))
    assert X.shape == (1, MAX_FEATURES)
    assert _as_csr(X).shape == (1, MAX_FEATURES)
    X0, _ = load_svmlight(io.BytesIO(b"1 %d:1\n" % (MAX_FEATURES - 1)), zero_based=True)
    assert X0.shape == (1, MAX_FEATURES)
    with pytest.raises(InputFormatError):
        load_svmlight(io.BytesIO(b"1 %d:1\n" % (MAX_FEATURES + 1)))
    with pytest.raises(ValueError, match="LIBLINEAR takes at most %d" % MAX_FEATURES):
        _as_csr(sp.csr_matrix((1, MAX_FEATURES + 1)))
    with pytest.raises(ValueError):
        load_svmlight(io.BytesIO(b""), n_features=MAX_FEATURES + 1)


def test_compressed_data_in_a_file_object_is_named_not_taken_for_a_bad_label():
    from hsvm_cli.errors import InputFormatError
    from hsvm_cli.io.svmlight import load_svmlight
    with pytest.raises(InputFormatError, match="gzip-compressed data, read as given .a file object is not "
                                               "decompressed: open it with the gzip module"):
        load_svmlight(io.BytesIO(gzip.compress(b"1 1:1\n2 1:2\n")))
    # a CR among the compressed bytes of its first "line" says nothing of old Mac line ends
    with pytest.raises(InputFormatError) as info:
        load_svmlight(io.BytesIO(gzip.compress(b"1 1:1\n")[:10] + b"\r\x00\x01"))
    assert "gzip-compressed data" in str(info.value) and "CR alone" not in str(info.value)


def test_write_svmlight_compresses_a_path_named_so_and_refuses_text_streams(tmp_path):
    from hsvm_cli.io.svmlight import load_svmlight, write_svmlight
    X = np.array([[0.5, 0.0], [0.0, -2.0]], dtype=np.float16)
    write_svmlight(tmp_path / "o.svm.gz", X, [1, 2])
    raw = (tmp_path / "o.svm.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw) == b"1 1:0.5\n2 2:-2\n"
    Xr, yr = load_svmlight(str(tmp_path / "o.svm.gz"))
    assert Xr.toarray().tolist() == [[0.5, 0.0], [0.0, -2.0]] and yr.tolist() == [1, 2]
    with pytest.raises(TypeError, match="give a binary file object"):
        write_svmlight(io.StringIO(), X, [1, 2])
