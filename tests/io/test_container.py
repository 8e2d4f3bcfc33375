import bz2
import gzip
import json
import lzma
import struct

import numpy as np
import pytest

from hsvm_cli.errors import ModelFormatError
from hsvm_cli.io.container import read_container, write_container


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "W": rng.standard_normal((5, 7)).astype(np.float32),
        "pairs": np.arange(6, dtype=np.uint16).reshape(3, 2),
        "classes": np.array([1, 2, 5], dtype=np.int64),
        "codes": rng.integers(0, 2**62, size=(5, 2)).astype(np.uint64),
        "flag": np.array([1, 0, 1], dtype=np.uint8),
    }


def test_round_trip_preserves_arrays_and_metadata(tmp_path):
    p = tmp_path / "f.bin"
    arrays = _arrays()
    write_container(p, arrays, kind="hsvm-test", version=3, meta={"a": [1, 2], "b": "x"})
    c = read_container(p, kind="hsvm-test", versions={3})
    assert c.meta == {"a": [1, 2], "b": "x"} and c.version == 3
    for k, v in arrays.items():
        assert c.arrays[k].dtype == v.dtype and np.array_equal(c.arrays[k], v)


def test_layout_is_safetensors_with_aligned_data(tmp_path):
    p = tmp_path / "f.bin"
    write_container(p, _arrays(), kind="hsvm-test", version=1, meta={})
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 64 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"]["format"] == "hsvm-test"
    spans = sorted((v["data_offsets"], v["dtype"]) for k, v in header.items() if k != "__metadata__")
    pos = 0
    sizes = {"F32": 4, "U16": 2, "I64": 8, "U64": 8, "U8": 1}
    for (b, e), dt in spans:
        assert b == pos and b % sizes[dt] == 0
        pos = e
    assert 8 + n + pos == len(raw)


def test_arrays_are_memory_mapped_read_only(tmp_path):
    p = tmp_path / "f.bin"
    write_container(p, _arrays(), kind="hsvm-test", version=1, meta={})
    c = read_container(p, kind="hsvm-test", versions={1})
    assert isinstance(c.arrays["W"].base, np.memmap) or isinstance(c.arrays["W"].base.base, np.memmap) \
        or not c.arrays["W"].flags.owndata
    with pytest.raises(ValueError):
        c.arrays["W"][0, 0] = 1


@pytest.mark.parametrize("damage, message", [
    (lambda raw: b"GIF89a" + raw[6:], "bad header length"),
    (lambda raw: raw[:8] + b"[" + raw[9:], "header is not JSON"),
    (lambda raw: raw[:-3], "truncated"),
    (lambda raw: raw + b"\0" * 8, "does not match the arrays"),
    (lambda raw: raw[:20], "truncated"),
    # a gzip file's first bytes read as a length beyond its end: another kind of file, not a cut-off one
    (lambda raw: gzip.compress(b"1 1:0.5\n" * 50, mtime=0), "not an hsvm test file but gzip-compressed svmlight "
     "data \\(a label, then index:value pairs\\): the data goes where TEST or TRAIN does"),
    (lambda raw: b"# a comment\n\n+1 qid:3 1:0.5 7:-2e-3 # why\n-1 2:1\n", "not an hsvm test file but svmlight data"),
    (lambda raw: b"\xef\xbb\xbf1 1:0.5\n2 2:1\n", "not an hsvm test file but svmlight data \\(a label, then "
     "index:value pairs; it starts with a byte-order mark, which the readers refuse\\)"),
    (lambda raw: gzip.compress(raw[:64] + b"1 1:0.5\n" * 50, mtime=0), "not an hsvm test file but gzip-compressed "
     "data: hsvm's binary files are memory-mapped, never compressed \\(decompress it first\\)"),
    # and the file itself compressed, by each tool, the header's length within bounds or not
    (lambda raw: gzip.compress(raw, mtime=0), "not an hsvm test file but gzip-compressed data"),
    (lambda raw: gzip.compress(raw, mtime=12345), "not an hsvm test file but gzip-compressed data"),
    (lambda raw: bz2.compress(raw), "not an hsvm test file but bzip2-compressed data"),
    (lambda raw: lzma.compress(raw), "not an hsvm test file but xz-compressed data"),
    (lambda raw: b"", "too short"),
])
def test_damaged_files_are_refused_with_the_file_name(tmp_path, damage, message):
    p = tmp_path / "f.bin"
    write_container(p, _arrays(), kind="hsvm-test", version=1, meta={})
    p.write_bytes(damage(p.read_bytes()))
    with pytest.raises(ModelFormatError, match=message) as exc:
        read_container(p, kind="hsvm-test", versions={1})
    assert str(p) in str(exc.value)


def _rewrite_header(p, edit):
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    edit(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (n - len(text))
    assert len(text) == n
    p.write_bytes(raw[:8] + text + raw[8 + n:])


@pytest.mark.parametrize("edit, message", [
    (lambda h: h["__metadata__"].update(format="hsvm-other"), "not an hsvm test file"),
    (lambda h: h["__metadata__"].update(format_version="9"), "unsupported hsvm-test format version 9"),
    (lambda h: h["W"].update(shape=[7, 7]), "does not match"),
    (lambda h: h["W"].update(dtype="X9"), "unknown dtype"),
    (lambda h: h["classes"].update(data_offsets=[8, 32]), "overlaps|does not match"),
])
def test_inconsistent_headers_are_refused(tmp_path, edit, message):
    p = tmp_path / "f.bin"
    write_container(p, _arrays(), kind="hsvm-test", version=1, meta={})
    _rewrite_header(p, edit)
    with pytest.raises(ModelFormatError, match=message):
        read_container(p, kind="hsvm-test", versions={1})


def test_failed_write_leaves_no_file(tmp_path):
    p = tmp_path / "f.bin"
    with pytest.raises(TypeError):
        write_container(p, {"x": np.array(["a"])}, kind="hsvm-test", version=1, meta={})
    assert list(tmp_path.iterdir()) == []


def test_a_mapping_the_address_space_limit_refuses_is_a_one_line_error_naming_the_need(tmp_path, monkeypatch):
    import errno

    from hsvm_cli.support.memory import TooLargeError
    path = tmp_path / "c.bin"
    write_container(path, {"x": np.arange(100, dtype=np.float32)}, kind="hsvm-test", version=1, meta={})

    def refused(*args, **kwargs):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")
    monkeypatch.setattr(np, "memmap", refused)
    with pytest.raises(TooLargeError, match=r"c\.bin: mapping the file would need .* of address space"):
        read_container(path, kind="hsvm-test", versions={1})
