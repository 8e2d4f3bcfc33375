"""Shards of a plain text file: the lines of byte range ``i`` of ``N``.

A cluster job array splits a sample file among its tasks without anybody
splitting the file: task ``i`` of ``N`` reads the byte range

    [start_i, end_i) = [floor(i·S/N), floor((i+1)·S/N))      (S = file size)

with scikit-learn's ``load_svmlight_file(offset, length)`` line rule: a shard
skips the partial line at its start (everything up to and including the first
newline at or after ``start_i``; a shard starting at byte 0 skips nothing) and
reads on to the end of the line that crosses ``end_i`` (up to and including the
first newline at or after ``end_i``).  Put differently, a line belongs to the
shard whose byte range holds the byte *just before* the line's first byte (the
first line to the shard holding byte 0).  The ranges tile the file, so every
line is read by exactly one shard, and the shards' outputs concatenated in
shard order are the unsharded output.

Two departures from scikit-learn, both needed for "exactly once": its
``length=0`` means "to the end of the file", whereas here a range may be empty
(shards of a file shorter than N bytes) and then reads nothing; and
scikit-learn does not stop after a blank or comment-only line that crosses the
end, and a range holding no newline (shorter than a line) reads the line after
it: in both cases it reads a line that the next range reads too.

Shards are numbered from 0, ``0 <= i < N``: ``--shard
$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`` is right for ``sbatch
--array=0-(N-1)`` (``--shard slurm`` works for any evenly spaced array), and
Dask and Python count from 0 too.  (GNU ``split -n l/K/N`` counts from 1; an
index equal to N is refused with a message saying that shards count from 0.)

Compressed input cannot be split (a byte offset into a gzip stream is not a
place where decompression can start), nor can standard input or a pipe be
seeked: both are refused with :class:`ShardError`, exit status 2 -- the
command line has to change (shard by file, or decompress first); the data
itself is fine, so 65 "malformed data" would point the user the wrong way.

True line numbers.  Error messages must name the file's own line numbers, yet
counting the newlines before a shard means reading the whole prefix: for the
last of N shards of a large file on a shared file system that is most of the
file, in every task.  :meth:`ShardReader.lines_before` therefore counts them
only when asked -- when an error is reported or a caller reads a chunk's
``first_line`` -- never up front.
"""
import io
import numbers
import os
import re
import stat
from typing import NamedTuple

from ..errors import InputReadError, OptionError
from .files import compression_of, open_raw

__all__ = ["Shard", "ByteRange", "ShardError", "parse_shard", "as_shard", "shard_from_slurm", "shard_byte_range",
           "ShardReader", "open_shard", "count_newlines"]

# Blocks for scanning to a newline and for counting newlines: big enough that
# the per-call cost vanishes, small enough to stay in cache.
_SCAN_BLOCK = 1 << 16
_COUNT_BLOCK = 1 << 20
_HEAD = 6   # the longest magic number (xz)


class ShardError(OptionError):
    """A shard specification that is malformed, or an input that cannot be
    sharded (compressed, standard input, a pipe).  A ValueError to Python,
    exit status 2 to a shell (the command line must change)."""


class Shard(NamedTuple):
    """Shard ``index`` of ``count`` (0-based: ``0 <= index < count``)."""

    index: int
    count: int

    def __str__(self):
        return "%d/%d" % (self.index, self.count)

    @property
    def is_first(self):
        """Whether this shard comes first (its output carries a file's header)."""
        return self.index == 0


class ByteRange(NamedTuple):
    """An explicit byte range ``[start, end)`` read with the shard line rule
    (for splitters that choose their own cut points, and for exhaustive tests):
    ranges that tile ``[0, size)`` read every line exactly once."""

    start: int
    end: int

    def __str__(self):
        return "bytes %d..%d" % (self.start, self.end)

    @property
    def is_first(self):
        """Whether this range holds the file's first byte (its output carries
        a file's header; an empty range at 0 does not -- the range after it
        holds byte 0)."""
        return self.start == 0 and self.end > 0


def _check_shard(index, count):
    if count < 1:
        raise ShardError("shard count must be at least 1, not %d" % count)
    if not 0 <= index < count:
        hint = ""
        if index == count:
            hint = " (shards count from 0, as SLURM_ARRAY_TASK_ID does with --array=0-%d)" % (count - 1)
        raise ShardError("shard %d/%d is out of range: the index must be 0 to %d%s"
                         % (index, count, count - 1, hint))
    return Shard(int(index), int(count))


_SPEC = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*\Z")    # ASCII digits: \d takes "٣"


def parse_shard(spec):
    """A :class:`Shard` from ``"i/N"`` (0-based, ``0 <= i < N``), from a
    ``Shard`` or ``(i, N)`` pair, or from ``"slurm"`` (this job array task's
    shard, :func:`shard_from_slurm`).  Raises :class:`ShardError` with the
    reason otherwise."""
    if isinstance(spec, ByteRange):
        raise ShardError("a byte range is not a shard i/N: use as_shard for either")
    if isinstance(spec, tuple) and len(spec) == 2:
        for v in spec:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ShardError("a shard is two integers (index, count), not %r" % (spec,))
        return _check_shard(int(spec[0]), int(spec[1]))
    if not isinstance(spec, str):
        raise ShardError("a shard is 'i/N' or (index, count), not %r" % (spec,))
    if spec.strip().lower() == "slurm":
        return shard_from_slurm()
    m = _SPEC.match(spec)
    if not m:
        raise ShardError("bad shard %r: expected i/N with integers 0 <= i < N (e.g. 0/4), or 'slurm'" % spec)
    return _check_shard(int(m.group(1)), int(m.group(2)))


def as_shard(spec):
    """A :class:`ByteRange` as it is, anything else through :func:`parse_shard`."""
    return spec if isinstance(spec, ByteRange) else parse_shard(spec)


def shard_from_slurm(environ=None):
    """This Slurm job array task's shard: ``(SLURM_ARRAY_TASK_ID -
    SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP`` of
    ``SLURM_ARRAY_TASK_COUNT``, so ``--array=0-7`` and ``--array=1-8`` both give
    shards 0..7 of 8.  Raises :class:`ShardError` outside a job array or for an
    array whose task ids are not an arithmetic range (``--array=1,5,6``)."""
    env = os.environ if environ is None else environ

    def number(name, default=None):
        # Slurm sets ID, MIN, MAX, COUNT and STEP in every array task; MIN
        # is required (taken as 0 when missing, task 1 of --array=1-4 had
        # been given block 1 of 0..3), MAX and STEP follow from the others
        if name not in env and default is not None:
            return default
        if name not in env:
            # (said of --shard and of --pairs alike: the option names itself)
            raise ShardError("'slurm' needs a Slurm job array task (%s is not set)" % name)
        try:
            return int(env[name])
        except ValueError:
            raise ShardError("%s=%r is not an integer" % (name, env[name])) from None

    task = number("SLURM_ARRAY_TASK_ID")
    count = number("SLURM_ARRAY_TASK_COUNT")
    lo = number("SLURM_ARRAY_TASK_MIN")
    step = number("SLURM_ARRAY_TASK_STEP", 1)
    if count < 1:
        raise ShardError("SLURM_ARRAY_TASK_COUNT=%d: a job array has at least one task" % count)
    hi = number("SLURM_ARRAY_TASK_MAX", lo + (count - 1) * step)
    if step < 1 or hi != lo + (count - 1) * step:
        raise ShardError("job array tasks %d-%d:%d are not %d evenly spaced tasks; give the shard as i/N"
                         % (lo, hi, step, count))
    if (task - lo) % step or not lo <= task <= hi:
        raise ShardError("SLURM_ARRAY_TASK_ID %d is not one of the job array's tasks %d-%d:%d; give the shard as i/N"
                         % (task, lo, hi, step))
    return _check_shard((task - lo) // step, count)


def shard_byte_range(shard, size):
    """``(start, end)``: the byte range ``[floor(i·S/N), floor((i+1)·S/N))`` of
    shard ``i`` of ``N`` in a file of ``size`` bytes (before the line rule)."""
    index, count = parse_shard(shard)
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise ValueError("size must be a non-negative int, not %r" % (size,))
    return index * size // count, (index + 1) * size // count


def _refuse(name, reason):
    # one remedy for --shard and for predict --dask, which splits a single file
    # the same way (and is the only command with --dask that takes a glob)
    raise ShardError("%s: %s; shard by file instead (one file per task; predict --dask takes a directory or a "
                     "quoted glob of them), or read the whole input in one process" % (name, reason))


def _check_range(rng, size):
    start, end = rng
    for v in (start, end):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError("a byte range is two ints, not %r" % (rng,))
    if not 0 <= start <= end <= size:
        raise ValueError("byte range %d..%d outside the file's 0..%d" % (start, end, size))
    return int(start), int(end)


class ShardReader(io.RawIOBase):
    """A binary file object over the lines of one shard of a plain file.

    ``shard``: a :class:`Shard`, ``"i/N"`` or ``(i, N)``, or a
    :class:`ByteRange` to read the lines of an explicit byte range with the
    same rule.  ``name`` is how messages call the file.

    ``span`` = ``(first, stop)`` after the first read: the absolute byte
    offsets of the shard's first byte and one past its last (``stop`` None
    until the reader reached the end).  :meth:`lines_before` gives the number
    of file lines before the shard, counted when first asked.  Failing reads
    raise :class:`~hsvm_cli.errors.InputReadError`."""

    def __init__(self, path, shard, *, name=None):
        super().__init__()
        if path is None or path == "-" or hasattr(path, "read"):
            shown = getattr(path, "name", "<input>") if hasattr(path, "read") else "<stdin>"
            _refuse(shown if isinstance(shown, str) else "<input>",
                    "standard input and open streams cannot be split into byte-range shards")
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError("path must be a file path, not %r" % (path,))
        path = os.fsdecode(os.fspath(path))
        self.path = path
        self.name = path if name is None else name
        fh = open_raw(path)            # missing, directory, unreadable: InputNotFoundError
        try:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                _refuse(self.name, "only a regular file can be split into byte-range shards "
                        "(this is a pipe, device or socket)")
            try:
                head = os.pread(fh.fileno(), _HEAD, 0)
            except OSError as exc:
                raise InputReadError(self.name, exc.strerror or str(exc), line=1) from None
            kind = compression_of(head)
            if kind is not None:
                _refuse(self.name, "%s-compressed input cannot be split into byte-range shards "
                        "(decompression cannot start mid-stream)" % kind)
            self.size = st.st_size
            if isinstance(shard, ByteRange):
                self.shard = shard
                self.start, self.end = _check_range(shard, self.size)
            else:
                self.shard = parse_shard(shard)
                self.start, self.end = shard_byte_range(self.shard, self.size)
        except BaseException:
            fh.close()
            raise
        self._fh = fh
        self._fd = fh.fileno()
        # The first line belongs to the range holding byte 0; the last range
        # has no newline after its end to look for and stops at the size.
        self._first_shard = self.start == 0 and self.end > 0
        self._last_shard = self.end == self.size
        self._pos = None          # next byte to hand out; None before the first read
        self._done = False
        self._lines_before = None
        self.span = None

    # ------------------------------------------------------------ reading

    def readable(self):
        return True

    def _pread(self, n, offset):
        try:
            return os.pread(self._fd, n, offset)
        except OSError as exc:
            raise InputReadError(self.name, exc.strerror or str(exc)) from None

    def _newline_at_or_after(self, offset):
        """Offset of the first b'\\n' at or after ``offset``, or the file size."""
        pos = offset
        while pos < self.size:
            block = self._pread(min(_SCAN_BLOCK, self.size - pos), pos)
            if not block:
                break
            k = block.find(b"\n")
            if k >= 0:
                return pos + k
            pos += len(block)
        return self.size

    def _begin(self):
        first = 0 if self._first_shard else min(self.size, self._newline_at_or_after(self.start) + 1)
        self._pos = first
        # The line at `first` belongs to this shard iff the byte before it lies
        # inside [start, end) (or it is the first line and byte 0 does).
        if first >= self.size or (first > 0 and first - 1 >= self.end) or self.start == self.end:
            self._finish(first)
        else:
            self.span = (first, None)

    def _finish(self, stop):
        self._done = True
        first = self._pos if self.span is None else self.span[0]
        self.span = (first, max(first, stop))

    def readinto(self, buf):
        if self._pos is None:
            self._begin()
        if self._done:
            return 0
        pos = self._pos
        want = len(buf)
        if self._last_shard:
            want = min(want, self.end - pos)
        if want <= 0:
            self._finish(pos)
            return 0
        data = self._pread(want, pos)
        if not data:
            self._finish(pos)
            return 0
        if not self._last_shard and pos + len(data) > self.end:
            # The shard ends with the line holding byte `end`: stop after the
            # first newline at or after it.
            k = data.find(b"\n", max(0, self.end - pos))
            if k >= 0:
                data = data[:k + 1]
                self._finish(pos + k + 1)
        n = len(data)
        buf[:n] = data
        self._pos = pos + n
        if self._last_shard and self._pos >= self.end:
            self._finish(self._pos)
        return n

    def close(self):
        try:
            fh = getattr(self, "_fh", None)
            if fh is not None:
                fh.close()
        finally:
            super().close()

    # ------------------------------------------------------- line numbers

    def lines_before(self):
        """Number of lines of the file before the shard's first byte (so the
        shard's first line is file line ``lines_before() + 1``).  Counted once,
        on first call, by reading the prefix; never called by the reader itself.
        Works after :meth:`close` too (chunks may ask after the file is done),
        by opening the file again."""
        if self._lines_before is None:
            if self._pos is None:
                self._begin()
            first = self.span[0]
            try:
                if not self._fh.closed:
                    self._lines_before = count_newlines(self._fd, first)
                else:
                    with open(self.path, "rb", buffering=0) as fh:
                        self._lines_before = count_newlines(fh.fileno(), first)
            except OSError as exc:
                raise InputReadError(self.name, exc.strerror or str(exc)) from None
        return self._lines_before


def count_newlines(fd, stop):
    """Number of b'\\n' among the first ``stop`` bytes of the open file ``fd``
    (read with pread in 1 MB blocks; bytes.count runs at memory speed, so the
    cost is reading the prefix)."""
    buf = bytearray(_COUNT_BLOCK)
    view = memoryview(buf)
    total = 0
    pos = 0
    while pos < stop:
        n = os.preadv(fd, [view[:min(_COUNT_BLOCK, stop - pos)]], pos)
        if n <= 0:
            break
        total += buf.count(b"\n", 0, n)
        pos += n
    return total


def open_shard(path, shard, *, name=None, buffer_size=1 << 20):
    """A buffered binary file object holding exactly the lines of ``shard`` (a
    :class:`Shard`, ``"i/N"``, ``(i, N)`` or a :class:`ByteRange`) of the plain
    file ``path`` (see the module docstring for the rule).  Any line reader
    can take it in place of the whole file.  Its ``raw`` attribute is the
    :class:`ShardReader` (``raw.lines_before()`` for true line numbers).
    Raises :class:`ShardError` for compressed input, stdin or a pipe, and
    :class:`~hsvm_cli.errors.InputNotFoundError` for a missing file."""
    return io.BufferedReader(ShardReader(path, shard, name=name), buffer_size=buffer_size)
