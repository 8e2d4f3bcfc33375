"""The svmlight reader (Python streaming + C parser) and writer."""
import bz2
import gzip
import io
import lzma
import random
import struct
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import EX_DATAERR, InputFormatError
from hsvm_cli.io.svmlight import SvmChunk, iter_svmlight, load_svmlight, write_svmlight
from hsvm_cli.support.native import ffi, lib

from conftest import shared_data_dir, zstd_compress

ERRORS = [
    (b"1 1:1\n2 3:1 2:1\n", 2, "index 2 after 3: indices must be increasing"),
    (b"1 2:1 2:5\n", 1, "repeated index 2: indices must be increasing"),
    (b"\n\n1 0:1\n", 3, "index 0 in a 1-based file (--zero-based if the whole file counts from 0; a stray 0:v "
                         "entry in a file counted from 1, which svm-predict ignores, must be removed)"),
    (b"1 -3:1\n", 1, "negative index -3"),
    (b"1 3=1\n", 1, "missing ':' in feature '3=1'"),
    (b"1 1:1 7\n", 1, "missing ':' in feature '7'"),
    (b"1 x:1\n", 1, "non-numeric index 'x'"),
    (b"1 1.5:1\n", 1, "non-numeric index '1.5'"),
    (b"1 :1\n", 1, "non-numeric index ''"),
    (b"1 2:1 qid:3\n", 1, "non-numeric index 'qid'"),
    (b"1 3:abc\n", 1, "non-numeric value 'abc' for index 3"),
    (b"1 3:1.5.2\n", 1, "non-numeric value '1.5.2' for index 3"),
    (b"1 3:1e\n", 1, "non-numeric value '1e' for index 3"),
    (b"1 3:2:4\n", 1, "non-numeric value '2:4' for index 3"),
    (b"1 3:\n", 1, "missing value for index 3"),
    (b"1 3:nan\n", 1, "non-finite value 'nan' for index 3"),
    (b"1 3:-inf\n", 1, "non-finite value '-inf' for index 3"),
    (b"1 3:1e999\n", 1, "value '1e999' for index 3 is beyond float32 range"),
    (b"1 3:1e39\n", 1, "value '1e39' for index 3 is beyond float32 range"),
    (b"1 3:-3.4028236e38\n", 1, "value '-3.4028236e38' for index 3 is beyond float32 range"),
    (b"1 3:0x10\n", 1, "non-numeric value '0x10' for index 3"),
    (b"1 3:0x1p3\n", 1, "non-numeric value '0x1p3' for index 3"),
    (b"1 3:infinity\n", 1, "non-finite value 'infinity' for index 3"),
    (b"1 3:NaN\n", 1, "non-finite value 'NaN' for index 3"),
    (b"1 3:nan(1)\n", 1, "non-numeric value 'nan(1)' for index 3"),
    (b"1 +3:1\n", 1, "bad index '+3': indices are plain decimal integers without sign"),
    (b"1 qid:a 1:1\n", 1, "bad qid 'qid:a'"),
    (b"1 3000000000:1\n", 1, "index 3000000000 too large (largest supported is 2147483646)"),
    (b"1 2147483647:1\n", 1, "index 2147483647 too large (largest supported is 2147483646)"),
    (b"1 1:\x00\n", 1, "non-numeric value '\\x00' for index 1"),
    (b"1 1:1\x01\n", 1, "non-numeric value '1\\x01' for index 1"),
    (b"1 1:\xff\xfe\n", 1, "non-numeric value '\\xff\\xfe' for index 1"),
    (b"1 1:\x1b[31m\n", 1, "non-numeric value '\\x1b[31m' for index 1"),
    (b"1 1:1 \xc2\x85:1\n", 1, "non-numeric index '\\x85'"),
    (b"# c\r\n1 1:1\r\n2 1:x\r\n", 3, "non-numeric value 'x' for index 1"),
    (b"1 1:1\n2 1:1 1:2", 2, "repeated index 1: indices must be increasing"),
]
SPLIT_SAMPLE = (b"# leading comment\n1 1:0.5 3:1.25e2\r\n\n-2 qid:4 2:7 10:-0.125 # trailing\n"
                b"3\n  \t\n4 1:1 2:2 3:3 4:4 5:5\n5 12:123456789.123456789 13:1e-310\n6 2:.5")
F32_OVERFLOW = float.fromhex("0x1.ffffffp+127")  # 2**128 - 2**104: rounds to inf in float32
COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zstd": zstd_compress}
FLOAT_EDGES = [
    "0", "1", "1.", ".5", "-0", "+0", "-0.0", "1e-5", "1E+3", "1e0", "0e400", "007", "1.000",
    "0.1", "0.2", "0.3", "9007199254740993", "9007199254740992", "9007199254740991",
    "1234567890123456789", "12345678901234567890", "0.12345678901234567890123",
    "3.141592653589793238462643383279", "1e22", "1e23", "1e-22", "1e-23", "8.5e22",
    "4.9e-324", "5e-324", "2e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
    "2.2250738585072011e-308", "2.2250738585072014e-308", "1e-310", "1.7976931348623157e308",
    "1.7976931348623158e308", "1e-400", "123456789012345678901234567890e-30",
    "0.000000000000000000000000000001", "1" + "0" * 40, "0." + "0" * 300 + "1",
    "9" * 25, "2.5e-1", "-.75", "1e+0", "6.02214076e23", "1.7976931348623157e-308",
]


def shared_data():
    return shared_data_dir()


def load_bytes(data, **kw):
    return load_svmlight(io.BytesIO(data), name="t.svm", **kw)


def chunks_of(data, **kw):
    return list(iter_svmlight(io.BytesIO(data), name="t.svm", **kw))


def dense(data, **kw):
    X, y = load_bytes(data, **kw)
    return X.toarray(), y.tolist()


def parse_error(data, **kw):
    with pytest.raises(InputFormatError) as info:
        load_bytes(data, **kw)
    return info.value


def same_bits(a, b):
    return struct.pack("<d", a) == struct.pack("<d", b)


def c_parse_double(text):
    raw = text.encode()
    out = ffi.new("double *")
    status = lib.hsvm_svm_parse_double(raw, len(raw), out)
    return status, out[0]


def test_one_based_indices_map_to_columns_and_width_is_max_index():
    X, y = dense(b"1 1:0.5 3:2\n2 2:-1\n")
    assert X.tolist() == [[0.5, 0, 2], [0, -1, 0]]
    assert y == [1, 2]


def test_zero_based_indices_when_asked():
    X, y = dense(b"1 0:0.5 2:2\n", zero_based=True)
    assert X.tolist() == [[0.5, 0, 2]]


def test_chunk_types_and_sorted_csr():
    X, y = load_bytes(b"1 1:1 5:2\n-2 3:4\n")
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64 and X.has_sorted_indices
    assert y.dtype == np.int64
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32


@pytest.mark.parametrize("label,value", [
    (b"3", 3), (b"+2", 2), (b"-1", -1), (b"3.0", 3), (b"1e1", 10), (b"-0", 0), (b"2.", 2),
    (b"9223372036854775807", 2**63 - 1), (b"-9223372036854775808", -2**63), (b"-4E+0", -4),
    (b"30e-1", 3), (b"0.3e1", 3), (b".0", 0), (b"100000000000000000000e-20", 1),
    (b"9007199254740991.0", 2**53 - 1), (b"-9007199254740991e0", 1 - 2**53),
])
def test_integer_and_whole_float_labels(label, value):
    _, y = dense(label + b" 1:1\n")
    assert y == [value]


@pytest.mark.parametrize("label", [b"3.5", b"abc", b"nan", b"inf", b"Infinity", b"1e-1", b"1:x", b"--1", b"0x3",
                                   b"0X1p3", b"1,", b",1", b"1,x", b"1.0000000000000000001", b"1e-99999999999",
                                   b"25e-1", b"1e-99999999999999999999"])
def test_bad_labels_are_errors(label):
    err = parse_error(b"1 1:1\n" + label + b" 2:1\n")
    assert str(err) == "t.svm:2: bad label '%s': labels must be integers" % label.decode()


@pytest.mark.parametrize("label", [b"1e400", b"1e30", b"-1e19", b"9223372036854775808", b"-9223372036854775809",
                                   b"99999999999999999999999", b"9.3e18", b"1e1000000", b"0.1e100000001"])
def test_labels_beyond_int64_are_named_as_such(label):
    err = parse_error(b"1 1:1\n" + label + b" 2:1\n")
    assert str(err) == "t.svm:2: bad label '%s': out of the int64 range" % label.decode()


@pytest.mark.parametrize("label", [b"12345678901234567.0", b"9007199254740992.0", b"9007199254740993e0",
                                   b"-9223372036854775807.0", b"1e18"])
def test_decimal_labels_from_2_to_the_53_are_refused_not_rounded_into_another_class(label):
    # "12345678901234567.0" would read as the double 12345678901234568: a
    # class of its own beside the integer spelling's 12345678901234567.
    err = parse_error(b"1 1:1\n" + label + b" 2:1\n")
    assert str(err) == ("t.svm:2: bad label '%s': a decimal label of 2^53 or more is not read exactly (as a "
                        "double); write it as an integer" % label.decode())
    assert dense(b"12345678901234567 1:1\n")[1] == [12345678901234567]


@pytest.mark.parametrize("first", [b"1:1", b"3:0.4375", b"17:-2e-3"])
def test_a_line_that_starts_with_a_feature_is_named_as_having_no_label(first):
    # unlabelled collections are often written without labels
    err = parse_error(b"1 1:1\n" + first + b" 5:1\n")
    assert str(err) == ("t.svm:2: no label: the line starts with a feature ('%s'); every line starts with its label "
                        "(for unlabelled samples any integer, e.g. 0: sed 's/^/0 /')" % first.decode())


@pytest.mark.parametrize("label", [b"1,2", b"1,2,3", b"-1,+2"])
def test_multi_label_lines_are_named_as_such(label):
    err = parse_error(label + b" 3:1\n")
    assert str(err) == "t.svm:1: bad label '%s': multi-label lines are not supported" % label.decode()


def test_control_bytes_and_bom_in_labels_are_shown_escaped():
    assert str(parse_error(b"\xef\xbb\xbf1 1:1\n")) == \
        "t.svm:1: bad label '\\ufeff1': the line starts with a byte-order mark"
    assert str(parse_error(b"1 1:1\n\x00\x00 1:1\n")) == "t.svm:2: bad label '\\x00\\x00': labels must be integers"
    assert str(parse_error(b"\x7f\x80\xe2\x80\xa8 1:1\n")) == \
        "t.svm:1: bad label '\\x7f\\x80\\u2028': labels must be integers"


def test_lines_ending_in_cr_alone_and_utf16_text_are_named_as_such():
    # the message named the next line's label as a feature without ':'
    assert str(parse_error(b"3 3:1\r1 3:1\r5 4:1\r")) == (
        "t.svm:1: missing ':' in feature '1' (the lines end in CR alone, as old Mac files do: convert them, "
        "e.g. tr '\\r' '\\n')")
    assert "UTF-16" not in str(parse_error(b"3 3:1\r\n1 x:1\r\n"))       # CRLF is fine: no hint
    assert "CR alone" not in str(parse_error(b"3 3:1\r\n1 x:1\r\n"))
    assert str(parse_error("3 3:1\n".encode("utf-16"))).startswith(
        "t.svm:1: bad label '\\xff\\xfe3\\x00': the file looks like UTF-16 text")


def test_comments_whole_line_and_trailing():
    X, y = dense(b"# header\n1 1:1 # tail\n2 2:3#glued\n  # indented comment\n3 # only a label\n")
    assert X.tolist() == [[1, 0], [0, 3], [0, 0]]
    assert y == [1, 2, 3]


def test_qid_after_label_is_ignored():
    X, y = dense(b"1 qid:7 1:1\n2 qid:-2 2:1\n")
    assert X.tolist() == [[1, 0], [0, 1]]
    assert y == [1, 2]


def test_crlf_tabs_blank_lines_and_missing_final_newline():
    X, y = dense(b"\r\n1\t1:1\t2:2\r\n\r\n   \n\t\n2 3:3  \r\n4 1:4")
    assert X.tolist() == [[1, 2, 0], [0, 0, 3], [4, 0, 0]]
    assert y == [1, 2, 4]


def test_label_only_line_is_an_empty_row():
    X, y = dense(b"5\n6 2:1\n")
    assert X.tolist() == [[0, 0], [0, 1]]
    assert y == [5, 6]


def test_explicit_negative_zero_and_plain_value_forms():
    X, _ = dense(b"1 1:1 2:1. 3:.5 4:-0 5:1e-5 6:1E+3 7:+2.5 8:-8e0\n")
    assert X[0].tolist() == [1, 1, 0.5, 0, 1e-5, 1000, 2.5, -8]


def test_values_up_to_the_float32_overflow_threshold_are_kept():
    # 2**128 - 2**104 is where float32 rounding reaches infinity; below it a
    # value rounds to at most FLT_MAX, as "3.4028235e38" (FLT_MAX's shortest
    # spelling) does
    below = float.fromhex("0x1.fffffefffffffp+127")
    text = "1 1:3.4028235e38 2:-3.4028234663852886e38 3:%r\n" % below
    X, _ = dense(text.encode(), dtype=np.float32)
    assert X[0].tolist() == [np.finfo(np.float32).max, -np.finfo(np.float32).max, np.finfo(np.float32).max]
    at = float.fromhex("0x1.ffffffp+127")
    err = parse_error(("1 2:%r\n" % at).encode())
    assert err.reason == "value '%r' for index 2 is beyond float32 range" % at


def test_empty_input_yields_no_chunk_and_loads_empty_matrix():
    assert chunks_of(b"") == []
    assert chunks_of(b"\n# nothing\n\n") == []
    X, y = load_bytes(b"# nothing\n")
    assert X.shape == (0, 0) and y.shape == (0,)
    X, y = load_bytes(b"", n_features=7)
    assert X.shape == (0, 7)


def test_first_line_counts_blank_and_comment_lines():
    chunks = chunks_of(b"# c\n\n1 1:1\n2 1:2\n# c\n3 1:3\n\n4 1:4\n", chunk_rows=2)
    assert [c.first_line for c in chunks] == [3, 6]
    assert [c.y.tolist() for c in chunks] == [[1, 2], [3, 4]]


def test_chunk_width_is_each_chunks_own_max_without_n_features():
    chunks = chunks_of(b"1 1:1\n2 5:1\n3 2:1\n", chunk_rows=2)
    assert [c.X.shape for c in chunks] == [(2, 5), (1, 2)]
    X, _ = load_bytes(b"1 1:1\n2 5:1\n3 2:1\n")
    assert X.shape == (3, 5)


@pytest.mark.parametrize("data,line,reason", ERRORS)
def test_malformed_lines_raise_file_line_reason(data, line, reason):
    err = parse_error(data)
    assert str(err) == "t.svm:%d: %s" % (line, reason)
    assert (err.source, err.line, err.reason) == ("t.svm", line, reason)
    assert err.exit_code == EX_DATAERR == 65


def test_zero_based_errors_use_file_numbering():
    assert str(parse_error(b"1 0:1 0:2\n", zero_based=True)) == \
        "t.svm:1: repeated index 0: indices must be increasing"
    assert str(parse_error(b"1 -1:2\n", zero_based=True)) == "t.svm:1: negative index -1"


def test_error_message_names_the_path_by_default(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:1\n1 1:z\n")
    with pytest.raises(InputFormatError, match="^%s:2: non-numeric value 'z' for index 1$" % str(path)):
        load_svmlight(str(path))


def test_long_bad_tokens_are_shortened_in_messages():
    err = parse_error(b"1 1:" + b"x" * 200 + b"\n")
    assert err.reason == "non-numeric value '%s...' for index 1" % ("x" * 40)


def test_fixed_n_features_sets_every_chunk_width():
    chunks = chunks_of(b"1 1:1\n2 2:1\n3 3:1\n", n_features=10, chunk_rows=2)
    assert [c.X.shape for c in chunks] == [(2, 10), (1, 10)]


def test_index_beyond_n_features_is_an_error_naming_index_and_limit():
    err = parse_error(b"1 1:1\n2 4:1 5:1\n", n_features=4)
    assert str(err) == ("t.svm:2: index 5 beyond 4 features (largest allowed index is 4; --extra-features ignore "
                        "drops such features)")
    err = parse_error(b"1 4:1\n", n_features=4, zero_based=True)
    assert str(err) == ("t.svm:1: index 4 beyond 4 features (largest allowed index is 3; --extra-features ignore "
                        "drops such features)")


def test_index_beyond_n_features_is_dropped_with_ignore():
    X, y = dense(b"1 1:1 5:2 2147483646:3\n2 4:7\n", n_features=4, extra_features="ignore")
    assert X.tolist() == [[1, 0, 0, 0], [0, 0, 0, 7]]
    assert y == [1, 2]


@pytest.mark.parametrize("index", [b"2147483647", b"99999999999", b"99999999999999999999999"])
def test_index_beyond_any_file_is_refused_even_with_ignore(index):
    # svm-predict and liblinear-predict refuse these too; dropping them hid
    # a damaged file (and one past 2^64 saturated)
    for extra in ("ignore", "error"):
        err = parse_error(b"1 1:1 " + index + b":3\n", n_features=4, extra_features=extra)
        assert err.reason == "index %s too large (largest supported is 2147483646)" % index.decode()


def test_dropped_features_are_still_checked():
    err = parse_error(b"1 6:1 5:1\n", n_features=4, extra_features="ignore")
    assert err.reason == "index 5 after 6: indices must be increasing"
    err = parse_error(b"1 6:q\n", n_features=4, extra_features="ignore")
    assert err.reason == "non-numeric value 'q' for index 6"


def test_float32_values_are_rounded_as_parsed_to_the_bits_of_converting_the_doubles():
    rng = np.random.default_rng(11)
    vals = rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000)
    text = "".join("1 %d:%r\n" % (i % 7 + 1, v) for i, v in enumerate(vals.tolist())).encode()
    X64, _ = load_bytes(text)
    X32, _ = load_bytes(text, dtype=np.float32)
    assert np.array_equal(X32.data.view(np.uint32), X64.data.astype(np.float32).view(np.uint32))
    assert np.array_equal(X32.indices, X64.indices) and np.array_equal(X32.indptr, X64.indptr)


def test_dtype_float32():
    X, _ = load_bytes(b"1 1:0.1 2:3.4028235e38\n", dtype=np.float32)
    assert X.dtype == np.float32
    assert X.toarray().tolist() == [[np.float32(0.1), np.float32(3.4028235e38)]]
    for chunk in chunks_of(b"1 1:0.1\n2 1:0.2\n", dtype="float32", chunk_rows=1):
        assert chunk.X.dtype == np.float32


def _rows(chunks):
    """Per row: (file line of chunk start, label, {column: value})."""
    out = []
    for c in chunks:
        assert isinstance(c, SvmChunk)
        for r in range(c.X.shape[0]):
            row = c.X.getrow(r)
            out.append((int(c.y[r]), dict(zip(row.indices.tolist(), row.data.tolist()))))
    return out


class SplitReader(io.RawIOBase):
    """Returns the first ``k`` bytes on the first read, then the rest: one
    block boundary exactly at ``k``."""

    def __init__(self, data, k):
        self.parts = [data[:k], data[k:]]

    def readable(self):
        return True

    def read(self, n=-1):
        while self.parts:
            part = self.parts.pop(0)
            if part:
                return part
        return b""


def test_every_block_size_and_chunk_rows_give_the_one_shot_result():
    whole = list(iter_svmlight(io.BytesIO(SPLIT_SAMPLE), chunk_rows=1000))
    assert len(whole) == 1
    expected = _rows(whole)
    expected_lines = [2, 4, 5, 7, 8, 9]
    for block in range(1, len(SPLIT_SAMPLE) + 2):
        for chunk_rows in (1, 2, 3, 1000):
            chunks = list(iter_svmlight(io.BytesIO(SPLIT_SAMPLE), chunk_rows=chunk_rows, _block_size=block))
            assert _rows(chunks) == expected, (block, chunk_rows)
            assert [c.first_line for c in chunks] == expected_lines[::chunk_rows][:len(chunks)], (block, chunk_rows)
            assert all(c.X.shape[0] == min(chunk_rows, 6 - i * chunk_rows) for i, c in enumerate(chunks))


def test_a_block_boundary_at_every_byte_gives_the_one_shot_result():
    expected = _rows(iter_svmlight(io.BytesIO(SPLIT_SAMPLE)))
    for k in range(len(SPLIT_SAMPLE) + 1):
        for chunk_rows in (1, 2, 3):
            chunks = iter_svmlight(SplitReader(SPLIT_SAMPLE, k), chunk_rows=chunk_rows, _block_size=1 << 20)
            assert _rows(chunks) == expected, (k, chunk_rows)
        X, y = load_svmlight(SplitReader(SPLIT_SAMPLE, k))
        assert X.shape == (6, 13) and y.tolist() == [1, -2, 3, 4, 5, 6]


def test_error_line_numbers_hold_across_block_boundaries():
    data = b"1 1:1\n\n# c\r\n2 2:2\n3 3:3 2:1\n4 4:4\n"
    for block in range(1, len(data) + 1):
        with pytest.raises(InputFormatError) as info:
            for _ in iter_svmlight(io.BytesIO(data), name="f", chunk_rows=1, _block_size=block):
                pass
        assert str(info.value) == "f:5: index 2 after 3: indices must be increasing", block


def test_lines_longer_than_a_block_are_carried_over():
    line = b"7 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 2001)) + b"\n"
    X, y = load_svmlight(io.BytesIO(line * 3), _block_size=100)
    assert X.shape == (3, 2000) and X.nnz == 6000 and y.tolist() == [7, 7, 7]
    assert X[2, 1999] == 2000


def test_growing_buffers_keep_every_row():
    rng = np.random.default_rng(1)
    Xd = rng.random((3000, 50)) * (rng.random((3000, 50)) < 0.3)
    y = rng.integers(-5, 5, 3000)
    buf = io.BytesIO()
    write_svmlight(buf, Xd, y)
    chunks = list(iter_svmlight(io.BytesIO(buf.getvalue()), chunk_rows=1111, n_features=50, _block_size=4096))
    assert [c.X.shape[0] for c in chunks] == [1111, 1111, 778]
    assert np.array_equal(sp.vstack([c.X for c in chunks]).toarray(), Xd)
    assert np.array_equal(np.concatenate([c.y for c in chunks]), y)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_files_are_read_by_magic_bytes(tmp_path, kind):
    path = tmp_path / "data.txt"  # name says nothing about the compression
    path.write_bytes(COMPRESSORS[kind](SPLIT_SAMPLE))
    X, y = load_svmlight(str(path), _block_size=7)
    X0, y0 = load_bytes(SPLIT_SAMPLE)
    assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    assert len(list(iter_svmlight(path, chunk_rows=4))) == 2


def test_dash_reads_stdin_and_is_named_stdin(monkeypatch):
    fake = types.SimpleNamespace(buffer=io.BufferedReader(io.BytesIO(b"1 1:1\n2 1:x\n")))
    monkeypatch.setattr(sys, "stdin", fake)
    with pytest.raises(InputFormatError, match=r"^<stdin>:2: non-numeric value 'x' for index 1$"):
        load_svmlight("-")


def test_open_file_objects_are_not_closed(tmp_path):
    path = tmp_path / "d.svm"
    path.write_bytes(b"1 1:1\n")
    with open(path, "rb") as fh:
        X, _ = load_svmlight(fh)
        assert not fh.closed
    assert X.shape == (1, 1)
    with open(path, "rb") as fh, pytest.raises(InputFormatError, match="^%s:" % str(path)):
        load_svmlight(fh, n_features=0)


def test_text_mode_file_objects_are_refused():
    with pytest.raises(TypeError, match="binary"):
        load_svmlight(io.StringIO("1 1:1\n"))


def test_options_are_validated_at_the_call():
    with pytest.raises(TypeError):
        iter_svmlight("x", zero_based=1)
    with pytest.raises(ValueError):
        iter_svmlight("x", extra_features="drop")
    with pytest.raises(ValueError):
        iter_svmlight("x", chunk_rows=0)
    with pytest.raises(TypeError):
        iter_svmlight("x", n_features=3.0)
    with pytest.raises(ValueError):
        iter_svmlight("x", n_features=-1)
    with pytest.raises(ValueError):
        iter_svmlight("x", dtype=np.int32)
    with pytest.raises(TypeError):
        iter_svmlight(42)
    with pytest.raises(TypeError):
        iter_svmlight("x", 0)  # options are keyword-only


def _random_decimals(rng, count):
    out = []
    for _ in range(count):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 24)))
        point = rng.randint(0, len(digits))
        text = digits[:point] + ("." if rng.random() < 0.8 else "") + digits[point:]
        if rng.random() < 0.4:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330))
        if rng.random() < 0.3:
            text = "-" + text
        out.append(text)
    for _ in range(count):
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            out.append(repr(x))
            out.append("%.17g" % x)
            out.append("%.*e" % (rng.randint(0, 25), x))
    for _ in range(count):
        out.append("%.*f" % (rng.randint(0, 10), rng.random() * 10 ** rng.randint(-3, 6)))
    return [t for t in out if t not in (".", "-.") and abs(float(t)) != float("inf")]


def test_value_parser_equals_correctly_rounded_conversion():
    rng = random.Random(20240601)
    for text in FLOAT_EDGES + _random_decimals(rng, 3000):
        status, value = c_parse_double(text)
        assert status == 0, text
        assert same_bits(value, float(text)), (text, value, float(text))


def test_value_parser_rejects_what_is_not_a_finite_number():
    for text in ["", ".", "-", "+", "e5", "1e", "1e+", "1.5.2", "1,5", "0x", "abc", "1 ", " 1", "--1",
                 "0x10", "0x1p3", "-0X1.8P1", "nan(1)", "infinit", "in", "+-1", "1e5 ", "\t1", "1" * 30 + "x"]:
        assert c_parse_double(text)[0] == lib.HSVM_NUM_BAD, text
    for text in ["nan", "inf", "-inf", "Infinity", "+INF", "-NaN", "iNfInItY"]:
        assert c_parse_double(text)[0] == lib.HSVM_NUM_NONFINITE, text
    for text in ["1e309", "-1e400", "1" * 400, "179769313486231590000" + "0" * 288]:
        assert c_parse_double(text)[0] == lib.HSVM_NUM_RANGE, text


def test_values_in_files_equal_correctly_rounded_conversion():
    # the parser's fused fast path for "index:value" differs from the
    # stand-alone value parser, so check through whole lines too
    rng = random.Random(7)
    texts = FLOAT_EDGES + _random_decimals(rng, 1500)
    texts = [t for t in texts if abs(float(t)) < F32_OVERFLOW]
    line = "1 " + " ".join("%d:%s" % (i + 1, t) for i, t in enumerate(texts)) + "\n"
    X, _ = load_bytes(line.encode())
    assert X.nnz == len(texts)  # explicit zeros are kept, so data lines up with texts
    got = X.data
    for i, t in enumerate(texts):
        assert same_bits(got[i], float(t)), (t, got[i])


def _signed_long_values(rng, n):
    # text as floats are printed: random signs, fractions of 6-10 digits
    return ["%s0.%0*d" % (rng.choice(["", "-"]), k, rng.randrange(10 ** k)) for k in
            (rng.randint(6, 10) for _ in range(n))]


def _rows_of(texts, per_row=10):
    return "".join("%d " % (r % 3) + " ".join("%d:%s" % (i + 1, t) for i, t in enumerate(texts[r:r + per_row]))
                   + "\n" for r in range(0, len(texts), per_row))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_after_the_first_rows_read_the_same_in_every_reading_mode(dtype):
    # After 256 values a call may read signs and fractions another way
    # (native/svmparse.c, feature_mode): leading rows that call for each way,
    # then every kind of value, each equal to its correctly rounded conversion
    # and to what the byte loop (mode 0) reads.
    rng = random.Random(11)
    tail = [t for t in FLOAT_EDGES + _random_decimals(rng, 600) + _signed_long_values(rng, 400)
            if abs(float(t)) < F32_OVERFLOW]
    leads = {"positive short": ["0.%03d" % rng.randrange(1000) for _ in range(300)],
             "signed short": ["%s0.%d" % (rng.choice(["", "-"]), rng.randrange(100)) for _ in range(300)],
             "positive long": ["0.%08d" % rng.randrange(10 ** 8) for _ in range(300)],
             "signed long": _signed_long_values(rng, 300)}
    for name, lead in leads.items():
        texts = lead + tail
        data = _rows_of(texts).encode()
        X, _ = load_bytes(data, dtype=dtype)
        assert X.nnz == len(texts), name
        for v, t in zip(X.data, texts):
            want = float(t) if dtype == np.float64 else float(np.float32(float(t)))
            assert same_bits(float(v), want), (name, t, v)
        for mode in range(4):
            Xm, _ = load_bytes(data, dtype=dtype, _value_mode=mode)
            assert np.array_equal(Xm.data.view(np.uint8), X.data.view(np.uint8)), (name, mode)


def test_errors_after_the_reading_mode_changes_name_their_line():
    # the line and token of an error in the second part of a call are the file's
    rng = random.Random(5)
    lead = _rows_of(_signed_long_values(rng, 300)).encode()
    data = b"# head\n\n" + lead + b"\n# mid\n1 1:-0.123456789 2:0.1234567x\n"
    line = data.count(b"\n")
    for mode_sample in (None, 1, 299):
        err = parse_error(data, _mode_sample=mode_sample)
        assert str(err) == "t.svm:%d: non-numeric value '0.1234567x' for index 2" % line, mode_sample
    chunks = chunks_of(lead + b"# tail\n" + lead, chunk_rows=1000, _mode_sample=7)
    assert [c.first_line for c in chunks] == [1] and chunks[0].X.shape[0] == 60


def test_values_at_the_very_end_of_the_text_after_the_mode_changes():
    # the fraction's words must not read past the text: values ending it
    rng = random.Random(9)
    lead = _rows_of(_signed_long_values(rng, 300)).encode()
    for tail in (b"1 1:-0.5", b"1 1:0.123456789012", b"1 1:-0.12345678901234567", b"2 3:0.1234567\n"):
        X, y = load_bytes(lead + tail)
        assert same_bits(float(X.data[-1]), float(tail.split(b":")[-1])), tail


@pytest.mark.parametrize("zero_based", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_write_then_read_round_trips_exactly(zero_based, dtype):
    rng = np.random.default_rng(3)
    Xd = (rng.standard_normal((40, 17)) * 10.0 ** rng.integers(-30, 30, (40, 17))).astype(dtype)
    Xd[rng.random((40, 17)) < 0.5] = 0
    Xd[5] = 0
    Xd[6, :3] = [1.0, -2.0, 0.1]
    y = rng.integers(-3, 1000, 40)
    buf = io.BytesIO()
    write_svmlight(buf, Xd, y, zero_based=zero_based)
    X, y2 = load_bytes(buf.getvalue(), zero_based=zero_based, n_features=17, dtype=dtype)
    assert X.dtype == dtype
    assert np.array_equal(X.toarray(), Xd) and np.array_equal(y2, y)
    line7 = buf.getvalue().split(b"\n")[6]
    assert line7.split()[1:4] == ([b"0:1", b"1:-2", b"2:0.1"] if zero_based else [b"1:1", b"2:-2", b"3:0.1"])
    assert buf.getvalue().split(b"\n")[5] == b"%d" % y[5]


@pytest.mark.parametrize("zero_based", [False, True])
def test_sparse_write_then_read_round_trips_exactly(zero_based):
    rng = np.random.default_rng(4)
    Xs = sp.random(200, 1000, density=0.02, format="csc", random_state=5, dtype=np.float64)
    Xs.data = rng.standard_normal(Xs.nnz) * 1e-300
    y = rng.integers(0, 5, 200).astype(np.float64)
    buf = io.BytesIO()
    write_svmlight(buf, Xs, y, zero_based=zero_based)
    X, y2 = load_bytes(buf.getvalue(), zero_based=zero_based, n_features=1000)
    assert (X != Xs).nnz == 0 and np.array_equal(y2, y)


def test_writer_omits_zeros_and_writes_integers_plainly():
    buf = io.BytesIO()
    write_svmlight(buf, np.array([[0, 3, 0, -1], [0, 0, 0, 0]], dtype=np.int64), [2, -7])
    assert buf.getvalue() == b"2 2:3 4:-1\n-7\n"
    buf = io.BytesIO()
    write_svmlight(buf, sp.csr_matrix(np.array([[0.0, 2.0, 0.5]], dtype=np.float32)), np.array([1.0]))
    assert buf.getvalue() == b"1 2:2 3:0.5\n"


def test_writer_takes_a_path_and_leaves_nothing_on_failure(tmp_path):
    path = tmp_path / "out.svm"
    write_svmlight(str(path), np.array([[0, 3], [1, 0]]), [2, 1])
    assert path.read_bytes() == b"2 2:3\n1 1:1\n"
    with pytest.raises(ValueError):
        write_svmlight(path, np.array([[np.nan]]), [1])
    assert path.read_bytes() == b"2 2:3\n1 1:1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.svm"]


def test_writer_refuses_what_cannot_be_read_back():
    with pytest.raises(ValueError):
        write_svmlight(io.BytesIO(), np.array([[np.nan]]), [1])
    with pytest.raises(ValueError):
        write_svmlight(io.BytesIO(), np.array([[1.0]]), [1.5])
    with pytest.raises(ValueError):
        write_svmlight(io.BytesIO(), np.array([[1.0]]), [1, 2])
    with pytest.raises(ValueError):
        write_svmlight(io.BytesIO(), np.array([1.0]), [1])


@pytest.mark.parametrize("rel", ["digits/train.svm.gz", "reuters-r52/test.svm.gz"])
def test_matches_sklearn_on_public_data(rel):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    path = shared_data() / rel
    if not path.exists():
        pytest.skip("%s not present" % path)
    Xs, ys = sklearn_datasets.load_svmlight_file(str(path), zero_based=False)
    X, y = load_svmlight(str(path))
    assert X.shape == Xs.shape
    assert (X != Xs).nnz == 0
    assert np.array_equal(y, ys.astype(np.int64))
    chunks = list(iter_svmlight(str(path), chunk_rows=500, n_features=Xs.shape[1]))
    assert (sp.vstack([c.X for c in chunks]) != Xs).nnz == 0


def test_writer_refuses_values_the_reader_would_refuse_as_beyond_float32():
    # never a file hsvm cannot read back: 2**128 - 2**104 rounds to inf in float32
    buf = io.BytesIO()
    write_svmlight(buf, np.array([[np.finfo(np.float32).max, 1.0]]), [1])
    assert load_svmlight(io.BytesIO(buf.getvalue()))[0][0, 0] == np.finfo(np.float32).max
    for v in (F32_OVERFLOW, -1e39):
        with pytest.raises(ValueError, match="beyond float32's range"):
            write_svmlight(io.BytesIO(), sp.csr_matrix(np.array([[0.0, v]])), [1])


def test_a_file_is_read_ahead_by_one_thread_for_all_its_blocks(tmp_path, monkeypatch):
    import threading
    path = tmp_path / "many-blocks.svm"
    path.write_bytes(b"".join(b"%d 1:%d 3:0.5\n" % (i % 3, i) for i in range(2000)))
    started = []
    start = threading.Thread.start

    def record(self):
        started.append(self.name)
        return start(self)
    monkeypatch.setattr(threading.Thread, "start", record)
    X, y = load_svmlight(str(path), threads=2, _block_size=1024)
    assert X.shape == (2000, 3) and list(y[:4]) == [0, 1, 2, 0]
    readers = [name for name in started if name.startswith("hsvm-read")]
    assert len(readers) == 1, started
    assert not any(t.name.startswith("hsvm-read") and t.is_alive() for t in threading.enumerate())


def _parse_complete(text, n_features, drop_extra=0):
    # the C parser without an indices array: complete rows only
    st = ffi.new("hsvm_svm_parse_state *")
    indptr = np.zeros(8, np.int64)
    values = np.zeros(32, np.float32)
    labels = np.zeros(8, np.int64)
    rc = lib.hsvm_svm_parse(ffi.from_buffer(text), len(text), 0, n_features, 1 << 20, drop_extra, 7, 32,
                            ffi.cast("int64_t *", indptr.ctypes.data), ffi.NULL, ffi.NULL,
                            ffi.cast("float *", values.ctypes.data), ffi.cast("int64_t *", labels.ctypes.data), st)
    return rc, st, values[:st.nnz], labels[:st.rows]


def test_the_parser_without_indices_stops_before_the_first_row_lacking_a_column():
    text = b"# two columns\n1 1:1.5 2:2\n\n2 2:3\n3 1:4 2:5\n"
    rc, st, values, labels = _parse_complete(text, 2)
    assert rc == lib.HSVM_SVM_INCOMPLETE
    assert (st.rows, st.nnz, st.consumed, st.lines, st.max_col) == (1, 2, text.index(b"2 2:3"), 3, 1)
    assert values.tolist() == [1.5, 2.0] and labels.tolist() == [1]
    # extra columns dropped still leave a row complete; no width: nothing is read
    rc, st, values, _ = _parse_complete(b"1 1:1 2:2 3:9\n2 1:3 2:4\n", 2, drop_extra=1)
    assert rc == lib.HSVM_SVM_DONE and st.rows == 2 and values.tolist() == [1, 2, 3, 4]
    rc, st, _, _ = _parse_complete(b"1 1:1\n", -1)
    assert rc == lib.HSVM_SVM_INCOMPLETE and st.rows == 0 and st.consumed == 0
