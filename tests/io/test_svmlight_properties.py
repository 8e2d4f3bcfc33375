"""Property tests of the svmlight reader against the pure-Python reference
reader (tests/oracles/svmlight_ref.py): on random bytes and on text built from
the format's grammar with its corner cases, the reader either returns exactly
the reference's matrix or raises InputFormatError naming the reference's first
bad line, and nothing else; block boundaries anywhere change nothing.

Bounded for `make test` (a few seconds, fixed seed); `make fuzz` runs the same
checks for as long as asked (tests/fuzz/fuzz_svmlight.py)."""
import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsvm_cli.errors import InputFormatError
from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight

from oracles import svmlight_grammar, svmlight_ref

BOUNDED = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])

OPTIONS = st.fixed_dictionaries({
    "zero_based": st.booleans(),
    "n_features": st.sampled_from([None, None, 3, 12]),
    "extra_features": st.sampled_from(["error", "ignore"]),
})


class Chunked(io.RawIOBase):
    """Hands out ``data`` in the given piece sizes (then the rest); a size of
    0 is skipped, as an empty read means the end of the input."""

    def __init__(self, data, sizes):
        self.data = data
        self.sizes = list(sizes)

    def readable(self):
        return True

    def read(self, n=-1):
        while self.sizes and not self.sizes[0]:
            self.sizes.pop(0)
        size = self.sizes.pop(0) if self.sizes else len(self.data)
        out, self.data = self.data[:size], self.data[size:]
        return out


def check_against_reference(data, source=None, reader_kw=None, **kw):
    """The reader's outcome on ``data`` is the reference's; returns the
    reference result or None when both reject.  ``reader_kw``: the reader's
    own further options."""
    try:
        ref = svmlight_ref.read(data, **kw)
        ref_error = None
    except svmlight_ref.RefError as exc:
        ref, ref_error = None, exc
    try:
        X, y = load_svmlight(source if source is not None else io.BytesIO(data), name="f.svm", **kw,
                             **(reader_kw or {}))
    except InputFormatError as err:
        assert ref_error is not None, "rejected what the reference accepts: %s" % err
        assert 1 <= err.line <= svmlight_ref.count_lines(data), err
        assert err.line == ref_error.line, (str(err), str(ref_error))
        assert str(err).isprintable() and str(err).startswith("f.svm:%d: " % err.line), err
        return None
    assert ref_error is None, "accepted what the reference rejects: %s" % ref_error
    assert svmlight_ref.same_matrix(ref, X, y)
    return ref


def grammar_text(data, bad_rate):
    # One seeded generator drives the grammar: far cheaper than a hypothesis
    # draw per digit, at the price of shrinking only the seed.
    rng = data.draw(st.randoms(use_true_random=True))
    return svmlight_grammar.build(rng.choice, rng.randint, bad_rate=bad_rate)


@BOUNDED
@given(st.binary(max_size=200), OPTIONS)
def test_random_bytes_are_read_as_the_reference_reads_them(data, opts):
    check_against_reference(data, **opts)


@BOUNDED
@given(st.lists(st.sampled_from(list(b"0123456789 \t\r\n:#.-+eEqid,x\x00")), max_size=120).map(bytes), OPTIONS)
def test_bytes_from_the_format_alphabet_are_read_as_the_reference_reads_them(data, opts):
    check_against_reference(data, **opts)


@BOUNDED
@given(st.data(), OPTIONS)
def test_grammar_lines_are_read_as_the_reference_reads_them(data, opts):
    check_against_reference(grammar_text(data, bad_rate=2), **opts)


@BOUNDED
@given(st.data())
def test_mostly_valid_files_give_the_same_result_split_anywhere(data):
    text = grammar_text(data, bad_rate=0)
    ref = check_against_reference(text)
    cut = data.draw(st.integers(0, len(text)))
    check_against_reference(text, source=Chunked(text, [cut]))
    block = data.draw(st.integers(1, max(1, len(text))))
    chunk_rows = data.draw(st.integers(1, 4))
    pieces = data.draw(st.lists(st.integers(0, 9), max_size=8))
    try:
        chunks = list(iter_svmlight(Chunked(text, pieces), chunk_rows=chunk_rows, _block_size=block))
    except InputFormatError:
        assert ref is None
        return
    assert ref is not None
    assert [int(v) for c in chunks for v in c.y] == ref.labels
    assert all(c.X.shape[0] <= chunk_rows for c in chunks)


def _outcome(text, **kw):
    # (chunks as comparable tuples, error message or None) of one read
    chunks = []
    try:
        for c in iter_svmlight(io.BytesIO(text), name="f.svm", **kw):
            X = c.X
            chunks.append((X.shape, X.indptr.tolist(), X.indices.tolist(), X.data.tolist(), c.y.tolist(),
                           c.first_line))
    except InputFormatError as err:
        return chunks, str(err)
    return chunks, None


@BOUNDED
@given(st.data(), OPTIONS)
def test_parsing_on_several_threads_gives_the_chunks_and_error_of_one(data, opts):
    text = grammar_text(data, bad_rate=data.draw(st.sampled_from([0, 0, 1])))
    chunk_rows = data.draw(st.integers(1, 6))
    block = data.draw(st.integers(16, max(16, len(text))))
    kw = dict(opts, chunk_rows=chunk_rows, _block_size=block)
    one = _outcome(text, threads=1, **kw)
    several = _outcome(text, threads=data.draw(st.integers(2, 4)), _part_bytes=data.draw(st.integers(1, 64)), **kw)
    assert several == one


@BOUNDED
@given(st.data(), OPTIONS)
def test_every_value_reading_mode_reads_as_the_reference_reads(data, opts):
    # The parser reads signs and fractions in one of four ways, chosen from
    # the first values of each call (native/svmparse.c, feature_mode); here
    # every way is forced, or chosen after a draw of 1..3 values, so that the
    # switch falls anywhere in the text.
    text = grammar_text(data, bad_rate=data.draw(st.sampled_from([0, 0, 2])))
    forced = data.draw(st.sampled_from([None, 0, 1, 2, 3]))
    sample = data.draw(st.integers(1, 3)) if forced is None else None
    check_against_reference(text, reader_kw={"_value_mode": forced, "_mode_sample": sample}, **opts)
