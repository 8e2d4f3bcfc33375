"""write_container_streaming (io/container.py): arrays that arrive in pieces
give the bytes write_container gives -- header, checksums of 16 MiB blocks
and metadata that depends on them included -- to a file or through a pipe;
misordered, short or overlong data is refused and nothing is written."""
import os
import threading

import numpy as np
import pytest
import xxhash

from hsvm_cli.io.container import BLOCK_BYTES, array_digests, read_container, write_container, write_container_streaming


def pieces_of(arr, sizes):
    flat = arr.reshape(-1)
    pos = 0
    for size in sizes:
        yield flat[pos:pos + size]
        pos += size
    yield flat[pos:]


def test_streamed_pieces_give_write_containers_bytes_across_block_boundaries(tmp_path):
    rng = np.random.default_rng(1)
    # a little over two blocks of float32, 7 per row
    big = rng.standard_normal((2 * BLOCK_BYTES // 4 + 777) // 7 * 7, dtype=np.float32).reshape(-1, 7)
    arrays = {"classes": np.arange(5, dtype=np.int64), "W": big, "b": rng.standard_normal(9).astype(np.float32),
              "z": np.zeros((0, 4), np.uint8)}

    def meta_of(digests):
        return {"x": 1, "digest": ",".join(digests["W"])[:64].ljust(64, "-")}
    digests = {k: array_digests(np.ascontiguousarray(v)) for k, v in arrays.items()}
    write_container(tmp_path / "a", arrays, kind="k", version=1, meta=meta_of(digests))

    def produce(write):
        write("classes", arrays["classes"][:2])
        write("classes", arrays["classes"][2:])
        # pieces of odd sizes, one of them straddling each block boundary
        for piece in pieces_of(big, [3, BLOCK_BYTES // 4 - 5, 11, BLOCK_BYTES // 4, 1]):
            write("W", piece)
        write("b", arrays["b"])
        write("z", arrays["z"])
    write_container_streaming(tmp_path / "b", {k: (v.dtype, v.shape) for k, v in arrays.items()}, kind="k",
                              version=1, meta={"x": 1, "digest": "?" * 64}, produce=produce, final_meta=meta_of)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    c = read_container(tmp_path / "b", kind="k", versions={1})
    assert len(c.digests["W"]) == 3 and c.digests == digests

    # through a pipe: two passes, the same bytes
    r, w = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(r, "rb").read()))
    reader.start()
    try:
        write_container_streaming("/dev/fd/%d" % w, {k: (v.dtype, v.shape) for k, v in arrays.items()}, kind="k",
                                  version=1, meta={"x": 1, "digest": "?" * 64}, produce=produce, final_meta=meta_of)
    finally:
        os.close(w)
        reader.join()
    assert got[0] == (tmp_path / "a").read_bytes()


def test_streamed_data_out_of_order_short_or_long_is_refused(tmp_path):
    spec = {"a": (np.int64, (2,)), "b": (np.float32, (2,))}

    def wrong_order(write):
        write("b", np.zeros(2, np.float32))

    def short(write):
        write("a", np.zeros(1, np.int64))
        write("b", np.zeros(2, np.float32))

    def too_long(write):
        write("a", np.zeros(3, np.int64))

    def incomplete(write):
        write("a", np.zeros(2, np.int64))
    for produce, words in ((wrong_order, "out of order"), (short, "out of order"), (too_long, "too much"),
                           (incomplete, "incomplete")):
        with pytest.raises(ValueError, match=words):
            write_container_streaming(tmp_path / "x", spec, kind="k", version=1, meta={}, produce=produce)
    assert os.listdir(tmp_path) == []


def test_final_metadata_must_keep_the_header_length(tmp_path):
    spec = {"a": (np.int64, (2,))}
    with pytest.raises(ValueError, match="length"):
        write_container_streaming(tmp_path / "x", spec, kind="k", version=1, meta={"d": "??"},
                                  produce=lambda write: write("a", np.zeros(2, np.int64)),
                                  final_meta=lambda digests: {"d": "?" * 100})
    assert os.listdir(tmp_path) == []


def test_streamed_row_digests_give_write_containers_bytes_to_a_file_and_a_pipe(tmp_path):
    rng = np.random.default_rng(4)
    W = rng.standard_normal((1001, 13)).astype(np.float32)
    arrays = {"classes": np.arange(5, dtype=np.int64), "W": W, "b": rng.standard_normal(1001).astype(np.float32)}
    write_container(tmp_path / "a", arrays, kind="k", version=1, meta={"x": 1}, row_checked=("W",))

    def produce(write):
        write("classes", arrays["classes"])
        # pieces that split rows anywhere, whole rows and single values
        for piece in pieces_of(W, [5, 13 * 40 + 3, 1, 1, 13 * 300, 7]):
            write("W", piece)
        write("b", arrays["b"])
    shapes = {k: (v.dtype, v.shape) for k, v in arrays.items()}
    write_container_streaming(tmp_path / "b", shapes, kind="k", version=1, meta={"x": 1}, produce=produce,
                              row_checked=("W",))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    c = read_container(tmp_path / "b", kind="k", versions={1}, lazy=("W",))
    expected = [xxhash.xxh3_64_intdigest(W[r].tobytes()) for r in range(W.shape[0])]
    assert c.row_digests["W"].tolist() == expected

    r, w = os.pipe()
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(r, "rb").read()))
    reader.start()
    try:
        write_container_streaming("/dev/fd/%d" % w, shapes, kind="k", version=1, meta={"x": 1}, produce=produce,
                                  row_checked=("W",))
    finally:
        os.close(w)
        reader.join()
    assert got[0] == (tmp_path / "a").read_bytes()


def test_row_digests_of_rows_without_bytes_stream_as_they_write(tmp_path):
    # a model of data without features: W is [rows, 0]
    arrays = {"classes": np.arange(3, dtype=np.int64), "W": np.zeros((3, 0), np.float32)}
    write_container(tmp_path / "a", arrays, kind="k", version=1, meta={}, row_checked=("W",))

    def produce(write):
        write("classes", arrays["classes"])
        write("W", arrays["W"])
    write_container_streaming(tmp_path / "b", {k: (v.dtype, v.shape) for k, v in arrays.items()}, kind="k",
                              version=1, meta={}, produce=produce, row_checked=("W",))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    c = read_container(tmp_path / "b", kind="k", versions={1}, lazy=("W",))
    assert c.row_digests["W"].tolist() == [xxhash.xxh3_64_intdigest(b"")] * 3
