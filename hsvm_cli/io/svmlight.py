"""Reading and writing svmlight / LIBSVM text files (``label idx:val ...``).

Reading streams: the input is read in blocks of a few MB, each block is cut
after its last newline (the rest is carried over to the next block) and the
complete lines go to the C parser in ``native/svmparse.c``, which fills CSR
arrays directly.  Memory is bounded by one block plus one chunk of rows, never
the whole file, and errors name the exact file line however the blocks fall.

Format accepted: an integer label in the int64 range (or a decimal holding a
whole number below 2**53 in magnitude, such as ``3.0`` or ``1e1``, judged by
its digits: from 2**53 on a double is not exact, and ``12345678901234567.0``
would be read as another class than ``12345678901234567``), an optional
``qid:N`` (ignored),
then ``index:value`` pairs with strictly increasing indices, 1-based unless
``zero_based``.  Indices are plain decimal digits (no sign); the largest
accepted column is ``MAX_FEATURES - 1`` (0-based).  Labels and values are
decimal numbers: ``[+-] digits [. digits] [e|E [+-] digits]`` (digits may be
missing on one side of the point); hex floats, ``inf``, ``infinity`` and
``nan`` are not numbers of the format.  Values are read as doubles and must
stay finite in float32, hsvm's storage type: a value that rounds to infinity
there (magnitude at or above 2**128 - 2**104, about 3.4028235678e38, i.e.
beyond FLT_MAX = 3.4028234664e38 by more than half a float32 step) is an
error.  ``#`` starts a comment; blank and comment-only lines are skipped but
counted; CRLF line ends and a missing final newline are fine.  A line may
hold at most ``MAX_LINE_BYTES`` bytes (64 MB) before its newline.  Anything
else raises :class:`hsvm_cli.errors.InputFormatError` (``FILE:LINE:
reason``); corrupt compressed input raises
:class:`~hsvm_cli.errors.CorruptInputError`, a failing read
:class:`~hsvm_cli.errors.InputReadError`.
"""
import io
import numbers
import os
import re
import stat
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptInputError, InputFormatError, InputReadError, printable
from ..support.arrays import aligned_empty, shrink_aligned
from ..support.labels import integer_labels
from ..support.lazy_sparse import CsrArrays, fill_complete_indices, sp
from ..support.native import ffi, lib
from .files import (
    atomic_output,
    compression_of,
    decompressed_input,
    display_name,
    open_input,
    plain_input_file,
    scan_compressed,
    stream_failure,
)
from .shard import Shard, as_shard, open_shard

__all__ = ["MAX_FEATURES", "MAX_LINE_BYTES", "SvmChunk", "iter_svmlight", "load_svmlight", "write_svmlight"]

# Large enough that the per-call overhead vanishes, small enough to stay in
# cache-friendly territory and keep memory bounded on huge files.
_BLOCK_SIZE = 4 << 20

#: The most columns (features) a data set may have.  LIBLINEAR stores feature
#: indices as C ``int`` (1-based) and hsvm trains with a bias feature at index
#: d + 1, so d + 1 <= 2**31 - 1.  The reader refuses larger indices, so that
#: whatever it accepts can be trained on; the trainer checks the same constant.
MAX_FEATURES = 2**31 - 2

#: The longest line (bytes before its newline) the reader accepts.  A line is
#: held whole until its newline, so without a limit one line without newline
#: would take memory in proportion to the file.  64 MB is two orders of
#: magnitude above the longest lines of real data sets (a dense sample of
#: 10^6 features with 15-digit values is ~20 MB).
MAX_LINE_BYTES = 64 << 20

_INT32_MAX = 2**31 - 1

# load_svmlight builds one chunk holding every row.
_UNBOUNDED_ROWS = 2**62

_INITIAL_ROWS = 1024
# The most values one growth step reserves ahead (12 bytes each).
_MAX_NNZ_HINT = 1 << 28
_INITIAL_NNZ = 1 << 16

if TYPE_CHECKING:       # the annotation only: scipy is imported on first use (support/lazy_sparse.py)
    import scipy.sparse

_TOKEN = re.compile(rb"[^ \t\r\n\v\f#]*")

# The least text a reader thread parses on its own: below this a thread's
# hand-off and the copy of its rows into the chunk cost more than they save.
_PART_BYTES = 1 << 20


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class SvmChunk:
    """Consecutive rows of an svmlight file.

    ``X``: ``scipy.sparse.csr_matrix`` of shape ``(rows, width)`` with sorted
    indices; ``y``: int64 labels; ``first_line``: 1-based line number, in the
    file, of the chunk's first row."""

    X: "scipy.sparse.csr_matrix"
    y: np.ndarray
    first_line: int


@dataclass(frozen=True)
class _Options:
    zero_based: bool
    n_features: object
    drop_extra: bool
    chunk_rows: int
    dtype: np.dtype
    block_size: int
    line_limit: int
    threads: int
    part_bytes: int
    csr_arrays: bool = False    # chunks as support.lazy_sparse.CsrArrays (no scipy), for the predict path
    value_mode: int = 0         # tests: hsvm_svm_parse_state.value_mode (0: as the text calls for)
    mode_sample: int = 0        # tests: hsvm_svm_parse_state.mode_sample (0: the parser's default)
    max_width: int = MAX_FEATURES   # columns a row may reach (one more: _either_base)


def _validate(zero_based, n_features, extra_features, chunk_rows, dtype, block_size, line_limit, threads=None,
              part_bytes=None, value_mode=None, mode_sample=None):
    if not isinstance(zero_based, (bool, np.bool_)):
        raise TypeError("zero_based must be a bool, not %r" % (zero_based,))
    if n_features is not None:
        if isinstance(n_features, (bool, np.bool_)) or not isinstance(n_features, numbers.Integral):
            raise TypeError("n_features must be an int or None, not %r" % (n_features,))
        n_features = int(n_features)
        if not 0 <= n_features <= MAX_FEATURES:
            raise ValueError("n_features must be in [0, %d], not %d" % (MAX_FEATURES, n_features))
    if extra_features not in ("error", "ignore"):
        raise ValueError("extra_features must be 'error' or 'ignore', not %r" % (extra_features,))
    if isinstance(chunk_rows, (bool, np.bool_)) or not isinstance(chunk_rows, numbers.Integral):
        raise TypeError("chunk_rows must be an int, not %r" % (chunk_rows,))
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be positive, not %d" % chunk_rows)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError("dtype must be float32 or float64, not %r" % (dtype,)) from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError("dtype must be float32 or float64, not %s" % dt)
    if block_size is None:
        block_size = _BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError("block size must be a positive int, not %r" % (block_size,))
    if line_limit is None:
        line_limit = MAX_LINE_BYTES
    if isinstance(line_limit, bool) or not isinstance(line_limit, numbers.Integral) or line_limit < 1:
        raise ValueError("line limit must be a positive int, not %r" % (line_limit,))
    from ..support.threads import resolve_threads
    threads = resolve_threads(threads)
    part_bytes = _PART_BYTES if part_bytes is None else int(part_bytes)
    # Blocks no longer than the limit: then a line that ends inside one block
    # is within the limit, and only carried-over lines need counting.
    return _Options(bool(zero_based), n_features, extra_features == "ignore", int(chunk_rows), dt,
                    int(min(block_size, line_limit)), int(line_limit), threads, max(1, part_bytes),
                    value_mode=0 if value_mode is None else 1 + int(value_mode), mode_sample=int(mode_sample or 0))


def iter_svmlight(source, *, zero_based=False, n_features=None, extra_features="error",
                  chunk_rows=65536, dtype=np.float64, name=None, shard=None, threads=None, _block_size=None,
                  _line_limit=None, _part_bytes=None, _csr_arrays=False, _value_mode=None, _mode_sample=None,
                  _either_base=False):
    """Stream an svmlight file as :class:`SvmChunk` objects of at most ``chunk_rows`` rows.

    ``source``: a path, ``"-"`` for stdin (both opened with
    :func:`hsvm_cli.io.files.open_input`, so gzip/bz2/xz/zstd are decompressed), or an
    open binary file object, read as is and not closed.
    ``zero_based``: indices start at 0 instead of 1 (never guessed).
    ``n_features``: ``None`` makes each chunk ``max column + 1`` wide; an int
    fixes every chunk's width, and a larger index is an error, or is dropped
    when ``extra_features="ignore"``.
    ``dtype``: float32 or float64 for ``X`` (values are parsed as doubles;
    float32 ones are rounded as they are stored).
    ``name``: how error messages call the file (default: the path, ``<stdin>``,
    or the file object's ``name``).
    ``shard``: None, or shard ``"i/N"`` / :class:`~hsvm_cli.io.shard.Shard`
    (0-based; ``"slurm"``: this job array task's) or a
    :class:`~hsvm_cli.io.shard.ByteRange`: read only the lines of that byte
    range of the plain file ``source`` (:mod:`hsvm_cli.io.shard`: every line
    belongs to exactly one of N shards).  Chunks' ``first_line`` and error
    messages still give the file's own line numbers.  Compressed input, stdin
    and file objects raise :class:`~hsvm_cli.io.shard.ShardError`.
    ``threads``: threads parsing each block of text (None, 0 or "auto":
    :func:`hsvm_cli.support.threads.default_threads`); the chunks are the
    same whatever it is.

    Options are checked at the call; the file is opened on the first ``next()``.
    A file without data lines yields no chunk.  Malformed input raises
    :class:`~hsvm_cli.errors.InputFormatError`, compressed data that cannot be
    decompressed :class:`~hsvm_cli.errors.CorruptInputError`, a failing read
    :class:`~hsvm_cli.errors.InputReadError`, a missing or unreadable path
    :class:`~hsvm_cli.errors.InputNotFoundError`.  (``_block_size``,
    ``_line_limit``, ``_part_bytes``, ``_value_mode`` and ``_mode_sample``
    (native/hsvm_svmparse.h) are for tests; ``_csr_arrays`` gives
    chunks whose X is a :class:`~hsvm_cli.support.lazy_sparse.CsrArrays`,
    for ``hsvm predict``, which then needs no scipy for dense samples;
    ``_either_base`` reads the indices of a 0-based and of a 1-based file alike
    -- 0 up to the largest 1-based index -- for ``hsvm eval``, which reads only
    the labels.)"""
    opts = _validate(zero_based, n_features, extra_features, chunk_rows, dtype, _block_size, _line_limit, threads,
                     _part_bytes, _value_mode, _mode_sample)
    if _csr_arrays:
        opts = replace(opts, csr_arrays=True)
    if _either_base:
        if n_features is not None:
            raise ValueError("_either_base reads files of any width: no n_features")
        opts = replace(opts, zero_based=True, max_width=MAX_FEATURES + 1)
    _check_source(source)
    shard = _split_shard(shard)
    if shard is not None:
        return _generate_shard(source, shard, opts, name)
    return _generate(source, opts, name)


def load_svmlight(source, *, zero_based=False, n_features=None, extra_features="error",
                  dtype=np.float64, name=None, shard=None, threads=None, _block_size=None, _line_limit=None,
                  _rescan=None, _part_bytes=None, _value_mode=None, _mode_sample=None):
    """Read a whole svmlight file; returns ``(X, y)``: a CSR matrix of shape
    ``(rows, width)`` and int64 labels.  ``width`` is ``n_features`` when given,
    else the largest column + 1 in the file.  ``source``: a path, ``-``
    (stdin) or a file object opened in binary mode.  Options as for
    :func:`iter_svmlight`."""
    opts = _validate(zero_based, n_features, extra_features, _UNBOUNDED_ROWS, dtype, _block_size, _line_limit, threads,
                     _part_bytes, _value_mode, _mode_sample)
    _check_source(source)
    shard = _split_shard(shard)
    if shard is not None:
        chunks = list(_generate_shard(source, shard, opts, name))
    else:
        chunks = list(_generate(source, opts, name, rescan=_rescan))
    if chunks:
        return chunks[0].X, chunks[0].y
    width = 0 if n_features is None else n_features
    return sp.csr_matrix((0, width), dtype=opts.dtype), np.zeros(0, dtype=np.int64)


def _check_source(source):
    # None is no source: it is not read as stdin ('-' says so)
    if isinstance(source, (str, bytes, os.PathLike)):
        return
    if not hasattr(source, "read"):
        # the type, not the value: an array of 10^6 labels printed whole was the message
        raise TypeError("source must be a path, '-' or a binary file object, not %s" % type(source).__name__)


def _generate(source, opts, name, lines_before=None, rescan=None):
    # lines_before: for a shard, a callable giving the file lines before it
    # (counted only when a line number is reported); None for a whole file.
    # rescan: the path of a stream given open (training hashes its bytes).
    here = _LineBase(lines_before, rescan)
    early = None
    if isinstance(source, (str, bytes, os.PathLike)) or source is None:
        if isinstance(source, bytes):
            source = os.fsdecode(source)
        if name is None:
            name = display_name(source)
        fh = open_input(source, name=name)
        owned = True
        here.decompressed = decompressed_input(fh)
        if source is not None and source != "-" and lines_before is None:
            # a file can be read again: on a decompression failure, or a parse
            # error in what a corrupt stream decompressed to, a second pass
            # says where (io/files.scan_compressed)
            here.rescan = source
            early = _claim_early(source, fh, opts)
    else:
        fh = source
        owned = False
        here.decompressed = decompressed_input(fh)     # train-ovo's reader: decompressed as a path is
        if name is None:
            given = getattr(fh, "name", None)
            name = given if isinstance(given, str) else "<input>"
    try:
        yield from _generate_lines(fh, opts, name, here, ahead=opts.threads > 1 and _regular_file(here.rescan),
                                   early=early)
    except InputFormatError as exc:
        failure = here.decompression_failure()
        if failure is not None:
            raise failure[1].located(name, exc.line) from None
        if owned and here.rescan is None:
            corrupt = stream_failure(fh)     # stdin: read on instead of again
            if corrupt is not None:
                raise corrupt.located(name, exc.line) from None
        raise
    finally:
        if owned:
            fh.close()


def _claim_early(source, fh, opts):
    """The rows an early parse of ``source`` holds (io/early_parse.py) when
    they are this read's first rows, ``fh`` moved past their text; else None."""
    from . import early_parse
    if not early_parse.pending():
        return None
    raw = plain_input_file(fh)
    if raw is None or not isinstance(source, str):
        early_parse.discard()
        return None
    rows = early_parse.claim(source, raw.fileno(), zero_based=opts.zero_based, n_features=opts.n_features,
                             chunk_rows=opts.chunk_rows, csr_arrays=opts.csr_arrays,
                             float32=opts.dtype == np.float32 and opts.value_mode == 0 and opts.mode_sample == 0)
    if rows is not None:
        raw.seek(rows.consumed)
    return rows


def _regular_file(path):
    try:
        return path is not None and stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _generate_lines(fh, opts, name, here, ahead=False, early=None):
    """The chunks of the svmlight text ``fh`` (see :func:`_generate`);
    ``ahead``: ``fh`` reads a regular file (see :class:`_BlockReader`);
    ``early``: the rows of the file's first ``early.consumed`` bytes, parsed
    early (io/early_parse.py), where ``fh`` now stands."""
    builder = _ChunkBuilder(opts, name, here)
    line = 0
    if early is not None:
        builder.adopt(early)
        line = early.lines
    blocks = _BlockReader(fh, opts.block_size, ahead=ahead)
    try:
        yield from _parse_blocks(blocks, opts, name, here, builder, line)
    finally:
        blocks.close()
        builder.close()


class _BlockReader:
    """The blocks of ``fh`` in order.  With ``ahead`` (a regular file the
    reader opened: its reads never wait on a writer), the next block is read
    -- and decompressed, the costly part of a compressed input -- on another
    thread while the current one is parsed; a read's failure is raised when
    its block is asked for, as without.

    One thread serves every read of the file: a thread started per block
    (33 for a 131 MB file) waited up to a millisecond each for a core that the
    parser's threads held.  It is an executor's worker, not a daemon: the
    interpreter's exit waits for a read in flight (of a regular file: it
    ends) before it finalises the reader, whose buffer lock a daemon thread
    frozen mid-read would hold -- a process leaving on an error while the
    next block was being read aborted ("could not acquire lock ... at
    interpreter shutdown", status 134) instead of exiting with its error's
    status -- and an idle worker is stopped at exit.  Ctrl-C does not wait:
    the CLI leaves at once (cli/entry.py)."""

    def __init__(self, fh, size, ahead):
        self.fh = fh
        self.size = size
        self._pool = None
        self._next = None
        if ahead:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="hsvm-read")

    def read(self, name, line, here):
        if self._pool is None:
            return _read_block(lambda: self.fh.read(self.size), name, line, here)
        pending, self._next = self._next or self._pool.submit(self.fh.read, self.size), None
        data = _read_block(pending.result, name, line, here)
        if data:
            self._next = self._pool.submit(self.fh.read, self.size)
        return data

    def close(self):
        # A read in flight ends (a regular file's read always does) before
        # the caller closes the file.
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._next = None


def _parse_blocks(blocks, opts, name, here, builder, line=0):
    # line: 0-based file line at which the carried bytes start
    carry = []   # pieces of a line not yet ended by a newline
    carried = 0  # their total length
    if builder.st.rows >= opts.chunk_rows:
        yield builder._emit()       # an early parse filled the chunk
    while True:
        data = blocks.read(name, line, here)
        if isinstance(data, str):
            raise TypeError("%s: source must be opened in binary mode" % name)
        if not data:
            break
        if not isinstance(data, bytes):
            data = bytes(data)
        cut = data.rfind(b"\n")
        if cut < 0:
            carry.append(data)
            carried += len(data)
            if carried > opts.line_limit:
                raise _line_too_long(name, here.file_line(line), opts.line_limit)
            continue
        start = 0
        if carry:
            first = data.find(b"\n") + 1
            if carried + first - 1 > opts.line_limit:
                raise _line_too_long(name, here.file_line(line), opts.line_limit)
            carry.append(data[:first])
            head = b"".join(carry)
            carry = []
            carried = 0
            line = yield from builder.feed(head, 0, len(head), line)
            start = first
        if start <= cut:
            line = yield from builder.feed_block(data, start, cut + 1, line)
        if cut + 1 < len(data):
            carry.append(data[cut + 1:])
            carried = len(data) - cut - 1
            if carried > opts.line_limit:  # a read() that returned more than asked
                raise _line_too_long(name, here.file_line(line), opts.line_limit)
    if carry:
        tail = b"".join(carry)
        line = yield from builder.feed(tail, 0, len(tail), line)
    yield from builder.finish()


class _LineBase:
    """File line numbers of a whole file, or of a shard whose preceding lines
    are counted only when a number is reported (io/shard.py)."""

    def __init__(self, lines_before, rescan=None):
        self.lines_before = lines_before
        self.rescan = rescan    # the path to decompress again on an error, when it can be
        self.decompressed = False   # the input was decompressed by its magic (open_input)

    def decompression_failure(self):
        """(complete lines before it, the CorruptInputError) of the file's
        compressed data, decompressed again to its end (io/files.scan_compressed),
        or None: sound data, plain text, or nothing to read again."""
        scan = scan_compressed(self.rescan) if self.rescan is not None else None
        return scan if scan is not None and scan[1] is not None else None

    def file_line(self, line):
        """The 0-based file line of the reader's 0-based line ``line``."""
        return line if self.lines_before is None else line + self.lines_before()

    def read_error_line(self, line):
        """``file_line(line) + 1``, or None when counting the lines itself
        fails (the read error at hand is then reported without a line)."""
        try:
            return self.file_line(line) + 1
        except InputReadError:
            return None


def _read_block(read, name, line, here):
    """The next block, ``read()``; a decompression or read failure names the
    file and the (1-based) line the reader had reached."""
    try:
        return read()
    except CorruptInputError as exc:
        # The block read ahead of the parsed lines: the rescan counts the
        # lines decompressed before the failure, the line it falls in.
        failure = here.decompression_failure()
        at = failure[0] + 1 if failure is not None else here.read_error_line(line)
        # the second look knows whether the data before the failure was whole
        error = failure[1] if failure is not None and failure[1].trailing else exc
        raise error.located(name, at, exact=failure is not None) from None
    except InputReadError as exc:
        raise exc.located(name, here.read_error_line(line)) from None
    except OSError as exc:
        raise InputReadError(name, exc.strerror or str(exc) or type(exc).__name__,
                             line=here.read_error_line(line)) from None


def _line_too_long(name, line, limit):
    return InputFormatError(name, line + 1, "line longer than %s" % _size_text(limit))


def _size_text(nbytes):
    if nbytes >= 1 << 20 and nbytes % (1 << 20) == 0:
        return "%d MB" % (nbytes >> 20)
    return "%d bytes" % nbytes


def _plain_empty(count, dtype):
    return np.empty(count, dtype=dtype)


class _ChunkBuilder:
    """The CSR arrays of the chunk being filled, grown on demand, handed out
    as an SvmChunk when ``chunk_rows`` rows are in."""

    def __init__(self, opts, name, here, nnz_hint=_INITIAL_NNZ, complete=None, part=False):
        self.opts = opts
        self.name = name
        self.here = here
        self.st = ffi.new("hsvm_svm_parse_state *")
        self.st.value_mode = opts.value_mode
        self.st.mode_sample = opts.mode_sample
        self.nnz_hint = nnz_hint
        self.n_features = -1 if opts.n_features is None else opts.n_features
        # Complete rows (every one of the known n_features columns stored, as
        # in a dense file) keep no indices until a row lacks a column: the
        # predict path's chunks (CsrArrays) make them only if asked, and a
        # fully dense chunk is prepared in its values without them -- half
        # the bytes written, half the fresh memory.
        self.complete_next = (opts.csr_arrays and self.n_features >= 0) if complete is None else complete
        # a part's rows are copied into the chunk: no need to align its values
        self._empty_values = _plain_empty if part else aligned_empty
        self._pool = None
        self._reset()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _reset(self):
        self.row_cap = min(self.opts.chunk_rows, _INITIAL_ROWS)
        self.indptr = np.empty(self.row_cap + 1, dtype=np.int64)
        self.indptr[0] = 0
        self.labels = np.empty(self.row_cap, dtype=np.int64)
        self.nnz_cap = self.nnz_hint
        self.complete = self.complete_next
        self.indices = None if self.complete else np.empty(self.nnz_cap, dtype=np.int32)
        # the values become the prepared samples in place: rows from a cache line's start
        self.values = self._empty_values(self.nnz_cap, self.opts.dtype)
        self.st.rows = 0
        self.st.nnz = 0
        self.st.max_col = -1
        self.first_line = 0
        self._bind()

    def _bind(self):
        self.p_indptr = ffi.from_buffer("int64_t[]", self.indptr)
        self.p_labels = ffi.from_buffer("int64_t[]", self.labels)
        self.p_indices = ffi.NULL if self.indices is None else ffi.from_buffer("int32_t[]", self.indices)
        # float32 values are rounded as they are parsed (hsvm_svm_parse's
        # values32): the bits of astype, without a pass over the chunk.
        self.p_values = ffi.from_buffer("float[]" if self.values.dtype == np.float32 else "double[]", self.values)

    def adopt(self, early):
        """Go on from the rows of an early parse (io/early_parse.py) as if
        this builder had parsed them: its arrays become the chunk's."""
        self.indptr, self.labels, self.indices, self.values = early.indptr, early.labels, early.indices, early.values
        # the chunk's rows stay the reader's chunk_rows whatever the arrays hold
        self.row_cap = min(early.row_cap, self.opts.chunk_rows)
        self.nnz_cap = early.nnz_cap
        if early.indices is not None:
            self.complete = self.complete_next = False
        self.st.rows, self.st.nnz, self.st.max_col = early.rows, early.nnz, early.max_col
        self.first_line = early.first_line
        self._bind()

    def _value_arrays(self):
        if self.values.dtype == np.float32:
            return ffi.NULL, self.p_values
        return self.p_values, ffi.NULL

    def _grow_rows(self):
        n = self.st.rows
        self.row_cap = min(self.opts.chunk_rows, 2 * self.row_cap)
        indptr = np.empty(self.row_cap + 1, dtype=np.int64)
        indptr[:n + 1] = self.indptr[:n + 1]
        labels = np.empty(self.row_cap, dtype=np.int64)
        labels[:n] = self.labels[:n]
        self.indptr, self.labels = indptr, labels
        self._bind()

    def _grow_nnz(self, need):
        nnz, rows = self.st.nnz, self.st.rows
        # Room for the whole chunk at the rows' density so far (plus an
        # eighth): one copy instead of a doubling series.  Untouched capacity
        # costs no memory until used (np.empty maps pages on first write).
        whole = nnz // rows * self.opts.chunk_rows * 9 // 8 if rows and self.opts.chunk_rows < _UNBOUNDED_ROWS else 0
        self.nnz_cap = max(2 * self.nnz_cap, nnz + need, min(whole, _MAX_NNZ_HINT))
        indices = None
        if self.indices is not None:
            indices = np.empty(self.nnz_cap, dtype=np.int32)
            indices[:nnz] = self.indices[:nnz]
        values = self._empty_values(self.nnz_cap, self.values.dtype)
        values[:nnz] = self.values[:nnz]
        self.indices, self.values = indices, values
        self._bind()

    def feed(self, data, start, stop, line):
        """Parse the complete lines ``data[start:stop]``, the first being file
        line ``line`` (0-based); yields filled chunks, returns the next line."""
        opts, st = self.opts, self.st
        cbuf = ffi.from_buffer(data)
        pos = start
        while pos < stop:
            status = lib.hsvm_svm_parse(cbuf + pos, stop - pos, opts.zero_based, self.n_features, opts.max_width,
                                        opts.drop_extra, self.row_cap, self.nnz_cap, self.p_indptr,
                                        self.p_indices, *self._value_arrays(), self.p_labels, st)
            if status < 0:
                raise self._error(status, data, pos, line)
            if st.first_row_line >= 0 and self.first_line == 0:
                self.first_line = line + st.first_row_line + 1
            pos += st.consumed
            line += st.lines
            if status == lib.HSVM_SVM_ROWS_FULL:
                if st.rows >= opts.chunk_rows:
                    yield self._emit()
                else:
                    self._grow_rows()
            elif status == lib.HSVM_SVM_NNZ_FULL:
                self._grow_nnz(st.need_nnz)
            elif status == lib.HSVM_SVM_INCOMPLETE:
                self._keep_indices()
        return line

    def _keep_indices(self):
        """From now on, and for the next chunks, store indices: the rows so
        far are complete, so theirs are 0 .. n_features-1 each."""
        indices = np.empty(self.nnz_cap, dtype=np.int32)
        fill_complete_indices(indices[:int(self.st.nnz)], self.n_features)
        self.indices = indices
        self.complete = self.complete_next = False
        self._bind()

    def feed_block(self, data, start, stop, line):
        """:meth:`feed`, the lines split among ``opts.threads`` threads when
        there are enough of them: this thread parses the first part into the
        chunk while the others parse theirs into arrays of their own, whose
        rows are then appended in file order.  The chunks, their first lines
        and the first error in file order are those of :meth:`feed`."""
        parts = self._split(data, start, stop)
        if len(parts) == 1:
            return (yield from self.feed(data, start, stop, line))
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(self.opts.threads - 1, thread_name_prefix="hsvm-parse")
        others = [self._pool.submit(self._parse_part, data, lo, hi) for lo, hi in parts[1:]]
        line = yield from self.feed(data, parts[0][0], parts[0][1], line)
        for future, (lo, hi) in zip(others, parts[1:]):
            part, lines, failed = future.result()
            if failed or (self.st.rows + part.st.rows > self.opts.chunk_rows and part.st.rows != lines):
                # A malformed line, or a chunk that starts inside the part
                # after lines that are not rows (blank or comment lines), where
                # only a parse in this thread knows the file line: parse the
                # part again here, which reports the error as feed() does.
                line = yield from self.feed(data, lo, hi, line)
                continue
            yield from self._absorb(part, line)
            line += lines
        return line

    def _split(self, data, start, stop):
        # At most opts.threads parts of at least opts.part_bytes, cut after a newline.
        n = min(self.opts.threads, (stop - start) // self.opts.part_bytes)
        if n <= 1:
            return [(start, stop)]
        cuts = [start]
        for i in range(1, n):
            nl = data.find(b"\n", max(cuts[-1], start + (stop - start) * i // n), stop - 1)
            if nl >= 0:
                cuts.append(nl + 1)
        cuts.append(stop)
        return [(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:]) if lo < hi]

    def _parse_part(self, data, lo, hi):
        # On a worker thread: (a builder holding the part's rows, the part's
        # lines, whether a line was malformed).  Line numbers are counted from
        # the part's start; the builder is sized for the most values its text
        # can hold (a value takes at least 4 bytes, " i:v"; untouched capacity
        # costs no memory).
        part = _ChunkBuilder(replace(self.opts, chunk_rows=_UNBOUNDED_ROWS), self.name, _LineBase(None),
                             nnz_hint=(hi - lo) // 4 + 16, complete=self.complete, part=True)
        feeding = part.feed(data, lo, hi, 0)
        try:
            while True:
                next(feeding)   # an unbounded chunk is never full
        except StopIteration as done:
            return part, done.value, False
        except InputFormatError:
            return part, 0, True

    def _absorb(self, part, line):
        """Append the rows of a part parsed on another thread, starting at
        0-based reader line ``line``, emitting full chunks.  Every line of
        the part up to a chunk boundary inside it is a row (feed_block sees
        to it), so a chunk starting at its row r starts at its line r."""
        R = int(part.st.rows)
        r = 0
        if self.complete and not part.complete:
            self._keep_indices()
        while r < R:
            n0, z0 = int(self.st.rows), int(self.st.nnz)
            take = min(self.opts.chunk_rows - n0, R - r)
            a, b = int(part.indptr[r]), int(part.indptr[r + take])
            while self.row_cap < n0 + take:
                self._grow_rows()
            if self.nnz_cap < z0 + (b - a):
                self._grow_nnz(b - a)
            if n0 == 0:
                self.first_line = line + part.first_line + r
            ends = part.indptr[r + 1:r + take + 1]
            self.indptr[n0 + 1:n0 + take + 1] = ends - a + z0
            self.labels[n0:n0 + take] = part.labels[r:r + take]
            if part.complete:
                if not self.complete:
                    fill_complete_indices(self.indices[z0:z0 + b - a], self.n_features)
            else:
                self.indices[z0:z0 + b - a] = part.indices[a:b]
            self.values[z0:z0 + b - a] = part.values[a:b]
            filled = ends > part.indptr[r:r + take]
            if filled.any():
                # indices increase along a row: its last one is its largest column
                last = self.n_features - 1 if part.complete else int(part.indices[ends[filled] - 1].max())
                self.st.max_col = max(int(self.st.max_col), last)
            self.st.rows = n0 + take
            self.st.nnz = z0 + b - a
            r += take
            if self.st.rows >= self.opts.chunk_rows:
                yield self._emit()

    def finish(self):
        if self.st.rows:
            yield self._emit()

    def _emit(self):
        n, nnz = self.st.rows, self.st.nnz
        width = self.n_features if self.n_features >= 0 else self.st.max_col + 1
        # Slices of the work arrays would pin their spare capacity for as
        # long as the chunk lives.  When that is more than a little (a file
        # that ends before its chunk fills), the arrays are shrunk in place:
        # realloc hands the tail back without the copy of the chunk a slice's
        # copy() costs (~80 ms for 10 M values).  Nothing else views them:
        # the parser's pointers are released first and _reset() makes new ones.
        if self.nnz_cap > nnz + (nnz >> 3) + 4096:
            ffi.release(self.p_values)
            self.values = shrink_aligned(self.values, nnz)
            if self.indices is not None:
                ffi.release(self.p_indices)
                if self.indices.flags.owndata:
                    self.indices.resize(nnz, refcheck=False)
                else:       # an early parse's (io/early_parse.py): C's block
                    self.indices = self.indices[:nnz]
            self.nnz_cap = nnz
        values = self.values[:nnz]
        indices = None if self.indices is None else self.indices[:nnz]
        indptr = self.indptr[:n + 1]
        if nnz <= _INT32_MAX:
            indptr = indptr.astype(np.int32)
        elif indices is not None:
            indices = indices.astype(np.int64)
        labels = self.labels[:n]
        if self.row_cap > n + (n >> 3) + 1024:
            labels = labels.copy()
        if self.opts.csr_arrays:
            X = CsrArrays(values, indices, indptr, (n, width))
        else:
            X = sp.csr_matrix((values, indices, indptr), shape=(n, width), copy=False)
            # the parser refuses indices that do not strictly increase
            X.has_sorted_indices = True
            X.has_canonical_format = True
        if self.here.lines_before is None:
            chunk = SvmChunk(X, labels, self.first_line)
        else:
            chunk = _ShardChunk(X, labels, self.first_line, self.here.lines_before)
        # the next chunk most likely looks like this one
        self.nnz_hint = max(_INITIAL_NNZ, nnz + (nnz >> 4))
        self._reset()
        return chunk

    def _error(self, status, data, pos, line):
        st = self.st
        off = pos + st.err_offset
        raw = _TOKEN.match(data, off).group()
        token = _show(raw)
        lineno = self.here.file_line(line + st.err_line) + 1
        base = 0 if self.opts.zero_based else 1
        index_raw = raw.split(b":", 1)[0]
        index_text = _show(index_raw)
        value_text = _show(raw.split(b":", 1)[-1])
        kind = binary = None
        if status == lib.HSVM_SVM_E_LABEL:
            from .container import declared_format, kind_name  # only here: it loads xxhash
            kind = declared_format(memoryview(data)[off:]) if lineno == 1 else None
            # an hsvm file or compressed data: bytes, whose CRs say nothing of line ends
            binary = kind is not None or (lineno == 1 and compression_of(raw) is not None)
            first = lineno == 1
            reason = _label_reason(raw, first, self.here.decompressed, data[off:off + 4096] if first else b"") \
                if kind is None else "an hsvm %s file, not svmlight text%s" % (
                kind_name(kind), " (codes are given to predict --codes, train-ovo --codes or fit-circulant --targets)"
                if kind_name(kind) == "codes" else "")
        elif status == lib.HSVM_SVM_E_COLON:
            reason = "missing ':' in feature '%s'" % token
        elif status == lib.HSVM_SVM_E_INDEX:
            if _SIGNED_INDEX.fullmatch(index_raw):
                reason = "bad index '%s': indices are plain decimal integers without sign" % index_text
            else:
                reason = "non-numeric index '%s'" % index_text
        elif status == lib.HSVM_SVM_E_NEGATIVE:
            reason = "negative index %s" % index_text
        elif status == lib.HSVM_SVM_E_ZERO:
            reason = ("index 0 in a 1-based file (--zero-based if the whole file counts from 0; a stray 0:v entry "
                      "in a file counted from 1, which svm-predict ignores, must be removed)")
        elif status == lib.HSVM_SVM_E_UNSORTED:
            reason = "index %d after %d: indices must be increasing" % (st.err_a, st.err_b)
        elif status == lib.HSVM_SVM_E_REPEATED:
            reason = "repeated index %d: indices must be increasing" % st.err_a
        elif status == lib.HSVM_SVM_E_EXTRA:
            reason = ("index %s beyond %d features (largest allowed index is %d; --extra-features "
                      "ignore drops such features)" % (index_text, st.err_b, st.err_b - 1 + base))
        elif status == lib.HSVM_SVM_E_TOO_BIG:
            reason = "index %s too large (largest supported is %d)" % (index_text, self.opts.max_width - 1 + base)
        elif status == lib.HSVM_SVM_E_VALUE:
            reason = "non-numeric value '%s' for index %d" % (value_text, st.err_a)
        elif status == lib.HSVM_SVM_E_NONFINITE:
            reason = "non-finite value '%s' for index %d" % (value_text, st.err_a)
        elif status == lib.HSVM_SVM_E_RANGE:
            reason = "value '%s' for index %d is beyond float32 range" % (value_text, st.err_a)
        elif status == lib.HSVM_SVM_E_NO_VALUE:
            reason = "missing value for index %d" % st.err_a
        elif status == lib.HSVM_SVM_E_QID:
            reason = "bad qid '%s'" % token
        else:  # pragma: no cover - the C and Python lists are kept in step
            reason = "parse error %d at '%s'" % (status, token)
        begin = data.rfind(b"\n", 0, off) + 1
        end = data.find(b"\n", off)
        text = data[begin:end if end >= 0 else len(data)]
        if not binary and b"\r" in text.rstrip(b"\r") and b"\0" not in text:
            # a CR inside the line: lines that end in CR alone run into one
            reason += " (the lines end in CR alone, as old Mac files do: convert them, e.g. tr '\\r' '\\n')"
        return InputFormatError(self.name, lineno, reason)


# What the parser rejected is told apart here, on the error path only.
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MULTI_LABEL = re.compile(rb"[+-]?[0-9]+(?:,[+-]?[0-9]+)+,?")
_SIGNED_INDEX = re.compile(rb"\+[0-9]+")
_BOM = b"\xef\xbb\xbf"
_DECOMPRESSOR = {"gzip": "gunzip", "bz2": "bunzip2", "xz": "unxz", "zstd": "unzstd"}


def _label_reason(raw, first, decompressed, head):
    """Why ``raw``, the first token of a line, is not a label: ``first``, the
    input's first line; ``decompressed``, input decompressed by its magic;
    ``head``, the start of the input when ``first``, else b""."""
    shown = _show(raw)
    if _MULTI_LABEL.fullmatch(raw):
        return "bad label '%s': multi-label lines are not supported" % shown
    if _DECIMAL.fullmatch(raw):
        whole, in_range = _whole_decimal(raw)
        if whole:
            # the parser takes every whole number it can read exactly
            if in_range:
                return ("bad label '%s': a decimal label of 2^53 or more is not read exactly (as a double); write "
                        "it as an integer" % shown)
            return "bad label '%s': out of the int64 range" % shown
    if raw.startswith(_BOM):
        return "bad label '%s': the line starts with a byte-order mark" % shown
    kind = compression_of(raw)
    if kind is not None:
        if not first:
            # (a compressed file joined to a plain one with cat, say)
            return "bad label '%s': %s-compressed data inside the text" % (shown, kind)
        if decompressed:
            # decompressed once by its magic: what came out is compressed again
            return ("bad label '%s': %s-compressed data inside the decompressed input: it was compressed twice "
                    "(decompress it once, e.g. with %s, and give that)" % (shown, kind, _DECOMPRESSOR[kind]))
        # a file object is read as given
        return ("bad label '%s': %s-compressed data, read as given (a file object is not decompressed: open it "
                "with the %s module, or give the file's path)" % (shown, kind, {"xz": "lzma"}.get(kind, kind)))
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ("bad label '%s': the file looks like UTF-16 text, and svmlight is ASCII (convert it, e.g. iconv -f "
                "UTF-16 -t UTF-8)" % shown)
    utf16 = _utf16_without_bom(head)
    if utf16:
        return ("bad label '%s': the file looks like %s text (without a byte-order mark), and svmlight is ASCII "
                "(convert it, e.g. iconv -f %s -t UTF-8)" % (shown, utf16, utf16))
    if b"\0" in head:
        # no text starts with a NUL: an executable, an image, compression hsvm does not read (lz4, lzma-alone, zip)
        return ("bad label '%s': binary data, not svmlight text (hsvm reads plain text, and text compressed with "
                "gzip, bzip2, xz or zstd)" % shown)
    if _FEATURE_FIRST.fullmatch(raw):
        # unlabelled collections written without a label: the format has one on every line
        return ("no label: the line starts with a feature ('%s'); every line starts with its label (for unlabelled "
                "samples any integer, e.g. 0: sed 's/^/0 /')" % shown)
    return "bad label '%s': labels must be integers" % shown


def _utf16_without_bom(head):
    """"UTF-16LE" or "UTF-16BE" when ``head`` reads as ASCII text in it (every
    other byte NUL, the others printable or line ends), else None."""
    h = head[:min(256, len(head) - len(head) % 2)]
    if len(h) < 4:
        return None
    for zeros, chars, name in ((h[1::2], h[0::2], "UTF-16LE"), (h[0::2], h[1::2], "UTF-16BE")):
        if not zeros.strip(b"\0") and all(32 <= c < 127 or c in (9, 10, 13) for c in chars):
            return name
    return None


_FEATURE_FIRST = re.compile(rb"[0-9]+:[-+.0-9eE]+")


def _whole_decimal(raw):
    """(whether the decimal token ``raw`` (of _DECIMAL) is a whole number,
    whether its magnitude is below 2^63), from its digits and exponent as
    text and Python integers: no float or Decimal, whose exponents overflow
    (1e1000000, 1e-99999999999999999999)."""
    negative = raw.startswith(b"-")
    text = raw.decode("ascii").lstrip("+-").lower()
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    exp = int(exponent) if exponent else 0
    digits = (whole + fraction).lstrip("0")
    exp -= len(fraction)                                    # value = int(digits) * 10**exp
    if not digits:
        return True, True                                   # zero
    if exp < 0:
        if -exp >= len(digits) or digits[exp:].strip("0"):
            return False, False
        digits, exp = digits[:exp], 0
    lead = len(digits) - 1 + exp                            # the power of ten of the first digit
    return True, lead < 18 or (lead == 18 and int(digits) * 10 ** exp < 2 ** 63 + negative)


def _show(raw, limit=40):
    """Bytes of the file as they may appear in a one-line message: decoded as
    UTF-8, cut after ``limit`` characters, anything unprintable escaped."""
    text = raw.decode("utf-8", "surrogateescape")
    text = text if len(text) <= limit else text[:limit] + "..."
    return printable(text)


# --------------------------------------------------------------- sharding

def _split_shard(shard):
    """The shard to read, or None for the whole input: shard 0 of 1 is all of
    it, of any input -- compressed, stdin or a pipe too (a job array of one
    task fed a .gz file)."""
    if shard is None:
        return None
    shard = as_shard(shard)
    return None if isinstance(shard, Shard) and shard.count == 1 else shard


def _generate_shard(source, shard, opts, name):
    # Opened (and refused if compressed, stdin or a stream) on the first
    # next(), like a whole file.
    if name is None and isinstance(source, (str, bytes, os.PathLike)):
        name = display_name(os.fsdecode(os.fspath(source)))
    fh = open_shard(source, shard, name=name)
    try:
        yield from _generate(fh, opts, fh.raw.name, lines_before=fh.raw.lines_before)
    finally:
        fh.close()


class _ShardChunk(SvmChunk):
    """A chunk read from a shard: ``first_line`` is the file's line number,
    resolved on first access because it needs the newlines before the shard
    counted (:meth:`hsvm_cli.io.shard.ShardReader.lines_before`), which
    sharded reading never does unless asked."""

    def __init__(self, X, y, relative_line, lines_before):
        self.X = X
        self.y = y
        self._relative_line = relative_line
        self._lines_before = lines_before

    @property
    def first_line(self):
        return self._lines_before() + self._relative_line


# ---------------------------------------------------------------- writing

_WRITE_BATCH_NNZ = 1 << 18


def write_svmlight(fh, X, y, *, zero_based=False):
    """Write ``X`` (dense 2-D array or scipy sparse matrix) and integer labels
    ``y`` to ``fh`` in svmlight format: a binary file object, or a path
    (written to a temporary name and renamed, as the commands write; ``-``
    is standard output).

    Zeros are omitted; indices are 1-based unless ``zero_based``.  float64
    values are written with the shortest digits that read back as the same
    double; float32 values with the fewest (at most 9) that read back, through
    a double, as the same float32; integer values as integers.  Labels must be
    integers or whole-number floats; values beyond float32's range (which the
    reader refuses) and NaN or infinities are refused."""
    if not isinstance(zero_based, (bool, np.bool_)):
        raise TypeError("zero_based must be a bool, not %r" % (zero_based,))
    if isinstance(fh, (str, os.PathLike)):
        # text: compressed when the name says so (.gz, .bz2, .xz, .zst), as the commands' outputs
        with atomic_output(fh, "wb", text=True) as out:
            return write_svmlight(out, X, y, zero_based=zero_based)
    if isinstance(fh, io.TextIOBase):
        raise TypeError("write_svmlight writes bytes: give a binary file object (open(path, 'wb')) or a path, "
                        "not a text stream")
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError("X must be 2-D")
        Xc = sp.csr_matrix(X, copy=True)
        Xc.sum_duplicates()
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError("X must be a 2-D array, not %d-D" % arr.ndim)
        if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.float32)        # scipy.sparse holds no float16; float32 holds them exactly
        Xc = sp.csr_matrix(arr)
    Xc.eliminate_zeros()
    kind = Xc.dtype.kind
    if kind == "f":
        if Xc.dtype.itemsize < 4:
            Xc = Xc.astype(np.float32)
        elif Xc.dtype.itemsize > 8:
            raise TypeError("X dtype %s cannot be written without rounding" % Xc.dtype)
        if not np.all(np.isfinite(Xc.data)):
            raise ValueError("X contains nan or inf, which the format cannot hold")
        with np.errstate(over="ignore"):
            big = np.isinf(Xc.data.astype(np.float32))
        if big.any():
            # what hsvm's reader (float32 values) would refuse: never write a
            # file that hsvm cannot read back
            raise ValueError("X holds %g, beyond float32's range, which hsvm's reader refuses"
                             % Xc.data[np.argmax(big)])
    elif kind == "b":
        Xc = Xc.astype(np.int8)
    elif kind not in "iu":
        raise TypeError("X dtype %s cannot be written as svmlight" % Xc.dtype)

    labels = integer_labels(y, Xc.shape[0])
    base = 0 if zero_based else 1
    indptr = Xc.indptr
    n = Xc.shape[0]
    r0 = 0
    while r0 < n:
        # rows in batches of roughly _WRITE_BATCH_NNZ values bound the
        # temporary strings
        r1 = int(np.searchsorted(indptr, indptr[r0] + _WRITE_BATCH_NNZ, side="right"))
        r1 = min(n, max(r1 - 1, r0 + 1))
        a, b = int(indptr[r0]), int(indptr[r1])
        vals = _format_values(Xc.data[a:b])
        idx = (Xc.indices[a:b].astype(np.int64) + base).tolist()
        pairs = ["%d:%s" % iv for iv in zip(idx, vals)]
        ptr = (indptr[r0:r1 + 1] - a).tolist()
        lab = labels[r0:r1].tolist()
        out = []
        for k in range(r1 - r0):
            s, e = ptr[k], ptr[k + 1]
            if s == e:
                out.append("%d\n" % lab[k])
            else:
                out.append("%d %s\n" % (lab[k], " ".join(pairs[s:e])))
        fh.write("".join(out).encode("ascii"))
        r0 = r1


def _format_values(data):
    if data.dtype.kind in "iu":
        return [str(v) for v in data.tolist()]
    if data.dtype == np.float64:
        return [r[:-2] if r.endswith(".0") else r for r in map(repr, data.tolist())]
    # float32: fewest significant digits that come back through the reader's
    # path (parse as double, then round to float32); 9 always do.
    out = [None] * len(data)
    pending = np.arange(len(data))
    for digits in (6, 7, 8, 9):
        sub = data[pending]
        fmt = "%%.%dg" % digits
        strs = [fmt % v for v in sub.tolist()]
        if digits < 9:
            ok = np.array(strs, dtype=np.float64).astype(np.float32) == sub
        else:
            ok = np.ones(len(strs), dtype=bool)
        for j in np.flatnonzero(ok).tolist():
            out[pending[j]] = strs[j]
        pending = pending[~ok]
        if not len(pending):
            break
    return out


def line_of_row(source, row, *, start_line=1):
    """The 1-based file line of data row ``row`` (0-based, counted from the
    data line at or after ``start_line``, e.g. a chunk's or a shard's first)
    of the svmlight file ``source``, counting lines as the reader does (blank
    and comment-only lines are skipped), or None when the input cannot be
    read again (stdin, a pipe).  For messages about a valid row that a later step
    refuses (a negative feature for the chi2 kernel): an error path only."""
    if source is None or source == "-" or not isinstance(source, (str, bytes, os.PathLike)):
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
    except OSError:
        return None
    seen = -1
    with open_input(source) as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno >= start_line and line.split(b"#", 1)[0].strip():
                seen += 1
                if seen == row:
                    return lineno
    return None
