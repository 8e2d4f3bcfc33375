"""Checksums and forged headers: a damaged or forged container is refused with
one line naming the file, before any array is used; nothing is trusted from
the header that the content can contradict."""
import json
import struct

import numpy as np
import pytest

from hsvm_cli.errors import ModelFormatError
from hsvm_cli.io import container
from hsvm_cli.io.container import read_container, write_container
from hsvm_cli.support.kernels import kernel_id
from hsvm_cli.support.native import ffi, lib

from conftest import kernel_params


def _arrays(n=5000):
    rng = np.random.default_rng(3)
    return {"W": rng.standard_normal((n, 8)).astype(np.float32), "k": np.arange(n, dtype=np.int64)}


def _write(p, **kw):
    write_container(p, kw.get("arrays") or _arrays(), kind="hsvm-test", version=1, meta={"seed": 7, "x": [1, 2]})
    return p


def _header(p):
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return raw, n, json.loads(raw[8:8 + n])


def _rewrite(p, header):
    raw, n, _ = _header(p)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= n
    p.write_bytes(raw[:8] + text + b" " * (n - len(text)) + raw[8 + n:])


def test_every_single_bit_flip_of_a_small_file_is_refused_or_harmless(tmp_path):
    p = _write(tmp_path / "f.bin", arrays={"W": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
                                           "k": np.arange(5, dtype=np.int64)})
    good = p.read_bytes()
    _, n, _ = _header(p)
    refused = harmless = 0
    for byte in range(len(good)):
        for bit in range(8):
            bad = bytearray(good)
            bad[byte] ^= 1 << bit
            p.write_bytes(bytes(bad))
            try:
                c = read_container(p, kind="hsvm-test", versions={1})
            except ModelFormatError as exc:
                assert str(p) in str(exc) and "\n" not in str(exc)
                refused += 1
                continue
            # Accepted only if nothing anyone reads changed (header padding).
            assert 8 <= byte < 8 + n
            assert c.meta == {"seed": 7, "x": [1, 2]}
            harmless += 1
    assert refused + harmless == 8 * len(good) and harmless == 0


def _lazy_w_flipped_in_its_last_block(tmp_path, rows=1 << 21):
    """A container of W (``rows`` x 4 float32: 16 MiB blocks) and k, a bit of
    W's last row flipped, read with W lazy: (its path, the container)."""
    p = _write(tmp_path / "f.bin", arrays={"W": np.ones((rows, 4), dtype=np.float32),
                                           "k": np.arange(3, dtype=np.int64)})
    raw = bytearray(p.read_bytes())
    raw[-5] ^= 0x10
    p.write_bytes(bytes(raw))
    return p, read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))


def test_a_flipped_bit_in_lazily_read_data_is_caught_when_its_rows_are_used(tmp_path):
    p, c = _lazy_w_flipped_in_its_last_block(tmp_path)     # 32 MiB: 2 blocks, the second one spoilt
    c.verify_rows("W", [0, 1, 100])          # the first block is intact
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify_rows("W", [(1 << 21) - 1])
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        read_container(p, kind="hsvm-test", versions={1})


def test_nan_in_a_float_array_is_refused_even_with_matching_checksums(tmp_path):
    W = np.ones((10, 4), dtype=np.float32)
    W[3, 2] = np.nan
    p = _write(tmp_path / "f.bin", arrays={"W": W, "k": np.arange(3, dtype=np.int64)})
    with pytest.raises(ModelFormatError, match="NaN or infinite"):
        read_container(p, kind="hsvm-test", versions={1})


@pytest.mark.parametrize("kernel", kernel_params())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_code_path_finds_a_non_finite_value_wherever_it_is(kernel, dtype):
    check, ctype = ((lib.hsvm_all_finite_f32, "uint32_t *") if dtype == np.float32
                    else (lib.hsvm_all_finite_f64, "uint64_t *"))
    finfo = np.finfo(dtype)
    for n in (0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300):
        values = np.random.default_rng(n).standard_normal(n).astype(dtype)
        if n:
            values[0], values[-1] = finfo.max, -finfo.max   # finite to the last exponent
        assert check(ffi.cast(ctype, ffi.from_buffer(values)), n, kernel_id(kernel)) == 1
        for at in range(n):
            for bad in (np.nan, np.inf, -np.inf):
                spoilt = values.copy()
                spoilt[at] = bad
                assert check(ffi.cast(ctype, ffi.from_buffer(spoilt)), n, kernel_id(kernel)) == 0, (n, at, bad)


def test_a_check_started_in_the_background_reports_its_finding_when_the_array_is_used(tmp_path):
    _, c = _lazy_w_flipped_in_its_last_block(tmp_path)     # 32 MiB: 2 blocks
    c.verify_in_background("W")
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify("W")
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):   # and again: the block stays unchecked
        c.verify_rows("W", [(1 << 21) - 1])
    c.verify_rows("W", [0])


def test_rows_needed_beside_a_background_check_are_checked_without_waiting_for_all(tmp_path):
    # A refine that needs few blocks must not inherit the fault of a block it
    # never reads, nor wait for the whole array's check.
    _, c = _lazy_w_flipped_in_its_last_block(tmp_path, 1 << 22)       # 64 MiB: 4 blocks, the last spoilt
    c.verify_in_background("W")
    c.verify_rows("W", [0, 1, 5])
    assert c._done["W"][0]
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify("W")


def test_a_background_check_stopped_by_the_exit_leaves_its_blocks_to_the_next_check(tmp_path, monkeypatch):
    import threading
    exiting = threading.Event()
    exiting.set()                       # as atexit sets it
    monkeypatch.setattr(container, "_exiting", exiting)
    _, c = _lazy_w_flipped_in_its_last_block(tmp_path)
    c.verify_in_background("W")
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify("W")


@pytest.mark.parametrize("copy", ["pickle", "deepcopy"])
def test_a_container_with_a_background_check_under_way_copies_and_its_copy_still_checks(tmp_path, copy):
    # a predict_file that failed before reading W (an unwritable output) left its check registered:
    # the model and its predictor could never be pickled or deep-copied again (a thread, a lock)
    import copy as copying
    import pickle
    _, c = _lazy_w_flipped_in_its_last_block(tmp_path)
    c.verify_in_background("W")
    other = pickle.loads(pickle.dumps(c)) if copy == "pickle" else copying.deepcopy(c)
    assert other._background == {} and "W" in c._background
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        other.verify("W")
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify("W")


def test_an_edited_metadata_value_is_refused(tmp_path):
    p = _write(tmp_path / "f.bin")
    _, _, h = _header(p)
    h["__metadata__"]["hsvm"] = h["__metadata__"]["hsvm"].replace('"seed":7', '"seed":8')
    _rewrite(p, h)
    with pytest.raises(ModelFormatError, match="header is corrupt: checksum mismatch"):
        read_container(p, kind="hsvm-test", versions={1})


@pytest.mark.parametrize("edit, message", [
    (lambda h: h["__metadata__"].update(format_version=None), "metadata values must be strings"),
    (lambda h: h["__metadata__"].update(format_version="1e3"), "bad format_version"),
    (lambda h: h["__metadata__"].update(hsvm="[" * 100000 + "]" * 100000), "not JSON"),
    (lambda h: h["__metadata__"].update(hsvm="[1, 2]"), "not a JSON object"),
    (lambda h: h["__metadata__"].update(checksums='{"algorithm": "md5"}'), "unknown checksum algorithm"),
    (lambda h: h["W"].update(shape=[2**62, 2**3]), "does not match"),        # wraps to the right size in int64
    (lambda h: h["W"].update(shape=[40000.0]), "malformed shape"),
    (lambda h: h["W"].update(shape=True), "malformed shape"),
    (lambda h: h["W"].update(data_offsets=[0, "x"]), "malformed data_offsets"),
    (lambda h: h.update(extra={"dtype": "F32", "shape": [], "data_offsets": [0, 4]}), "overlaps|checksums"),
])
def test_forged_headers_are_refused_with_one_line(tmp_path, edit, message):
    p = _write(tmp_path / "f.bin")
    _, _, h = _header(p)
    edit(h)
    raw, n, _ = _header(p)
    text = json.dumps(h, separators=(",", ":")).encode()
    p.write_bytes(struct.pack("<Q", max(n, len(text))) + text + b" " * (n - len(text)) + raw[8 + n:])
    with pytest.raises(ModelFormatError, match=message) as exc:
        read_container(p, kind="hsvm-test", versions={1})
    assert "\n" not in str(exc.value)


def test_deeply_nested_header_json_is_refused(tmp_path):
    p = tmp_path / "f.bin"
    text = b"[" * 200000 + b"]" * 200000
    p.write_bytes(struct.pack("<Q", len(text)) + text)
    with pytest.raises(ModelFormatError, match="header is not JSON"):
        read_container(p, kind="hsvm-test", versions={1})


def test_files_without_checksums_are_still_read(tmp_path):
    p = _write(tmp_path / "f.bin")
    _, _, h = _header(p)
    del h["__metadata__"]["checksums"]
    _rewrite(p, h)
    c = read_container(p, kind="hsvm-test", versions={1})
    assert not c.checksummed and np.array_equal(c.arrays["k"], np.arange(5000))


def test_checksums_cover_each_block_of_an_array(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "BLOCK_BYTES", 4096)
    arrays = {"W": np.arange(5000 * 8, dtype=np.float32).reshape(5000, 8), "k": np.arange(5, dtype=np.int64)}
    p = _write(tmp_path / "f.bin", arrays=arrays)
    _, _, h = _header(p)
    cs = json.loads(h["__metadata__"]["checksums"])
    assert cs["block_bytes"] == 4096 and len(cs["arrays"]["W"]) == -(-5000 * 8 * 4 // 4096)
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify_rows("W", [4999])
    assert c._done["W"].sum() == 1


def _row_checked(p, W, k=None):
    write_container(p, {"W": W, "k": np.arange(3, dtype=np.int64) if k is None else k}, kind="hsvm-test",
                    version=1, meta={}, row_checked=("W",))
    return p


def test_row_digests_check_the_rows_used_and_only_those(tmp_path):
    W = np.random.default_rng(5).standard_normal((1 << 16, 64)).astype(np.float32)    # 16 MiB: one block
    p = _row_checked(tmp_path / "f.bin", W)
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    np.testing.assert_array_equal(c.row_digests["W"], container.row_digests(W))
    raw = bytearray(p.read_bytes())
    row_bytes = 64 * 4
    raw[len(raw) - W.nbytes + 1000 * row_bytes + 17] ^= 0x04     # a byte of row 1000
    p.write_bytes(bytes(raw))
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify_rows("W", [0, 999, 1001, 60000])       # the block is damaged, these rows are not
    assert not c._done["W"].any() and c._rows_done["W"].sum() == 4
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt: checksum mismatch in its row 1000 "):
        c.verify_rows("W", [5, 1000])
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify("W")


def test_many_rows_are_checked_by_their_blocks(tmp_path):
    W = np.ones((1 << 16, 64), dtype=np.float32)
    c = read_container(_row_checked(tmp_path / "f.bin", W), kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify_rows("W", np.arange(0, 1 << 16, 2))    # half the rows: the whole block
    assert c._done["W"].all()


def test_a_non_finite_row_with_matching_digests_is_refused_when_used(tmp_path):
    W = np.ones((1000, 8), dtype=np.float32)
    W[700, 3] = np.inf
    # written past write_container's own checks: digests that match a bad row
    p = _row_checked(tmp_path / "f.bin", W)
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify_rows("W", [1, 2])
    with pytest.raises(ModelFormatError, match="NaN or infinite"):
        c.verify_rows("W", [3, 700])


@pytest.mark.parametrize("kernel", kernel_params())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_code_path_finds_the_first_non_finite_row(kernel, dtype):
    width = 77      # 308 / 616 bytes: the unrolled vector loops, their single-vector loops and a tail
    M = np.random.default_rng(2).standard_normal((50, width)).astype(dtype)
    rows = np.array([3, 9, 10, 41, 49], dtype=np.int64)

    def first(matrix):
        return lib.hsvm_rows_finite(ffi.from_buffer(matrix), width, ffi.cast("int64_t *", ffi.from_buffer(rows)),
                                    rows.size, dtype == np.float64, kernel_id(kernel))
    assert first(M) == rows.size
    for pos, r in enumerate(rows):
        for col in (0, width // 2, width - 1):
            spoilt = M.copy()
            spoilt[r, col] = np.nan
            assert first(spoilt) == pos
    spoilt = M.copy()
    spoilt[4, 0] = np.inf      # a row not asked for
    assert first(spoilt) == rows.size


@pytest.mark.parametrize("arrays", [
    {"W": np.ones((10, 4), np.float32), "W.row_xxh3": np.zeros(9, np.uint64)},            # a row short
    {"W": np.ones((10, 4), np.float32), "W.row_xxh3": np.zeros(10, np.int64)},            # signed
    {"b": np.ones(10, np.float32), "b.row_xxh3": np.zeros(10, np.uint64)},                # not a matrix
    {"W": np.ones((10, 4), np.float32), "V.row_xxh3": np.zeros(10, np.uint64)},           # of nothing
    {"W": np.ones((10, 4), np.float32), "W.row_xxh3": np.zeros(10, np.uint64),
     "W.row_xxh3.row_xxh3": np.zeros(10, np.uint64)},                                     # of digests
])
def test_a_row_digest_array_that_does_not_fit_its_array_is_refused(tmp_path, arrays):
    p = tmp_path / "f.bin"
    write_container(p, arrays, kind="hsvm-test", version=1, meta={})
    with pytest.raises(ModelFormatError, match="does not hold the row digests"):
        read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))


def test_a_row_longer_than_a_block_is_not_taken_as_checked_by_its_end_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "BLOCK_BYTES", 4096)
    W = np.ones((4, 2304), np.float32)       # rows of 9,216 bytes: 2.25 blocks each
    p = _row_checked(tmp_path / "f.bin", W)
    raw = bytearray(p.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    at = 8 + n + json.loads(raw[8:8 + n])["W"]["data_offsets"][0]
    raw[at + 3 * 4096 + 100] ^= 0x40         # block 3: inside row 1 only
    p.write_bytes(bytes(raw))
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify_rows("W", [0, 2])               # rows 0 and 2 by their blocks, 0..2 and 4..6: both ends of row 1
    assert c._done["W"][[2, 4]].all() and not c._done["W"][3]
    with pytest.raises(ModelFormatError, match="array 'W' is corrupt"):
        c.verify_rows("W", [1])


def test_rows_outside_the_array_are_a_callers_error(tmp_path):
    c = read_container(_row_checked(tmp_path / "f.bin", np.ones((10, 4), np.float32)), kind="hsvm-test",
                       versions={1}, lazy=("W",))
    for bad in ([10], [-1]):
        with pytest.raises(IndexError):
            c.verify_rows("W", bad)


def test_checksums_of_another_block_size_are_refused(tmp_path, monkeypatch):
    # a model's identity is built from its 16 MiB block digests: a file
    # checksummed in other blocks would name the same content differently
    monkeypatch.setattr(container, "BLOCK_BYTES", 4096)
    p = _write(tmp_path / "f.bin", arrays={"k": np.arange(5000, dtype=np.int64)})
    monkeypatch.undo()
    with pytest.raises(ModelFormatError, match="checksums of 4096-byte blocks: hsvm files have 16777216"):
        read_container(p, kind="hsvm-test", versions={1})


def test_row_digests_that_do_not_describe_their_rows_fail_a_full_row_check(tmp_path, monkeypatch):
    W = np.random.default_rng(3).standard_normal((300, 16)).astype(np.float32)
    monkeypatch.setattr(container, "row_digests", lambda arr: np.zeros(arr.shape[0], dtype=np.uint64))
    p = _row_checked(tmp_path / "f.bin", W)     # block checksums over the wrong digests: they match
    monkeypatch.undo()
    c = read_container(p, kind="hsvm-test", versions={1}, lazy=("W",))
    c.verify("W")
    c.verify("W.row_xxh3")
    with pytest.raises(ModelFormatError, match="checksum mismatch in its row 0"):
        c.verify_row_digests("W")
    good = read_container(_row_checked(tmp_path / "g.bin", W), kind="hsvm-test", versions={1}, lazy=("W",))
    good.verify_row_digests("W")
