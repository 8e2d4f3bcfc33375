"""Opening inputs (``-`` = stdin, gzip/bz2/xz/zstd by magic bytes) and writing outputs atomically.

The compression modules (and ISA-L's) are imported when a compressed file is
met: every command imports this module at its start, and most read and write
plain text (bz2, lzma, gzip and isal cost ~5 ms of a ~0.4 s prediction)."""
import contextlib
import errno
import functools
import io
import os
import stat
import sys
import threading
import zlib

from ..errors import (
    CorruptInputError,
    HsvmError,
    InputFormatError,
    InputNotFoundError,
    InputReadError,
    OptionError,
    OutputError,
)


@functools.cache
def _fast_gzip():
    """(gzip module, its bad-deflate error): ISA-L's inflate (python-isal, a
    drop-in for the gzip module) reads 1.1-1.2 GB/s of text against zlib's
    0.3-0.35 here, which had made decompression, not parsing, the cost of
    reading a .gz file."""
    try:
        from isal import igzip
        from isal.isal_zlib import error
    except ImportError:  # pragma: no cover - a platform without its wheels
        import gzip
        return gzip, zlib.error
    return igzip, error


@functools.cache
def _fast_inflate():
    """ISA-L's zlib-like module (python-isal), or zlib: their decompress
    objects read one gzip member each."""
    try:
        from isal import isal_zlib
    except ImportError:  # pragma: no cover - a platform without its wheels
        return zlib
    return isal_zlib


def _open_fast_gzip(fh):
    return _fast_gzip()[0].GzipFile(fileobj=fh, mode="rb")


def _stdlib_gzip(fh):
    import gzip
    return gzip.GzipFile(fileobj=fh, mode="rb")


def _zstd():
    # Python 3.14's compression.zstd (PEP 784), or its backport: unlike the
    # zstandard package's readers it reports a stream that ends inside a frame
    # (EOFError) and reads with bounded output, as lzma and bz2 do.  Imported
    # when a zstd input is met.
    try:
        from compression import zstd
    except ImportError:
        from backports import zstd
    return zstd


def _open_zstd(fh):
    return _zstd().ZstdFile(fh)


class _TrailingGarbage(OSError):
    """Bytes after whole compressed data that start no other stream."""


_XZ_MAGIC, _BZ2_MAGIC, _GZIP_MAGIC = b"\xfd7zXZ\x00", b"BZh", b"\x1f\x8b"


class _Streams(io.RawIOBase):
    """xz, bz2 or gzip data read as ``xz -dc``, ``bzip2 -dc`` and ``gzip -dc``
    read it: every stream (gzip member) of a concatenation, the NUL bytes
    between them (xz's stream padding, a multiple of four; gzip skips any),
    and bytes after the last stream that start no other refused as trailing
    garbage, as zstd's are here.  Python's LZMAFile and BZ2File stop quietly
    at the first bytes after a stream that do not decode -- xz's padding
    among them -- and the rest of the input was lost without a word.  gzip
    is read so only where the input cannot be read a second time (stdin, a
    pipe, a caller's file object): the streaming reader called trailing
    garbage a truncation or corrupt data, which only a file could be
    decompressed again to tell (:func:`scan_compressed`)."""

    _READ = 1 << 18
    _MAGICS = {"xz": _XZ_MAGIC, "bz2": _BZ2_MAGIC, "gzip": _GZIP_MAGIC}

    def __init__(self, fh, kind):
        self._fh, self._kind = fh, kind
        self._magic = self._MAGICS[kind]
        self._dec = None
        self._data = b""            # compressed bytes read and not yet handed to a decompressor
        self._padding = 0
        self._done = False

    def readable(self):
        return True

    def _fill(self):
        more = self._fh.read(self._READ)
        self._data += more
        return bool(more)

    def _next_stream(self):
        while True:
            if self._kind != "bz2":
                kept = self._data.lstrip(b"\0")
                self._padding += len(self._data) - len(kept)
                self._data = kept
            if len(self._data) >= len(self._magic) or not self._fill():
                break
        if self._kind == "xz" and self._padding % 4:
            import lzma
            raise lzma.LZMAError("stream padding of %d bytes, not a multiple of four" % self._padding)
        if not self._data:
            self._done = True
        elif self._magic.startswith(self._data):
            # the input ends inside the next stream's magic number: cut short
            # (gzip -t: "unexpected end of file"), as a file of only those bytes is
            raise EOFError("the input ends inside a stream's magic number")
        elif not self._data.startswith(self._magic):
            raise _TrailingGarbage("bytes after the last stream")
        else:
            if self._kind == "gzip":
                self._dec = _fast_inflate().decompressobj(wbits=31)    # 31: a gzip member, header and trailer
            elif self._kind == "xz":
                import lzma
                self._dec = lzma.LZMADecompressor(lzma.FORMAT_XZ)
            else:
                import bz2
                self._dec = bz2.BZ2Decompressor()
            self._padding = 0

    def readinto(self, buf):
        while not self._done:
            if self._dec is None:
                self._next_stream()
                continue
            if self._dec.eof:
                self._data = self._dec.unused_data + self._data
                self._dec = None
                continue
            data = b""
            if self._kind == "gzip" and self._dec.unconsumed_tail:
                data = self._dec.unconsumed_tail    # zlib's objects hand back the input max_length left
            elif self._kind == "gzip" or self._dec.needs_input:
                if not self._data and not self._fill():
                    raise EOFError("compressed data ended before the end-of-stream marker was reached")
                data, self._data = self._data, b""
            out = self._dec.decompress(data, len(buf))
            if out:
                buf[:len(out)] = out
                return len(out)
        return 0


def _open_streams(kind, buffer_size=1 << 16):
    return lambda fh: io.BufferedReader(_Streams(fh, kind), buffer_size=buffer_size)


# Compressed input is recognised by its first bytes: (magic, name in
# messages, opener of a binary file object).  A zstd stream may open with a
# skippable frame (pzstd writes one), whose magic is any of 16.
_MAGIC = (
    (_GZIP_MAGIC, "gzip", _open_fast_gzip),
    (_BZ2_MAGIC, "bz2", _open_streams("bz2")),
    (_XZ_MAGIC, "xz", _open_streams("xz")),
    (b"\x28\xb5\x2f\xfd", "zstd", _open_zstd),
) + tuple((bytes([0x50 + i]) + b"\x2a\x4d\x18", "zstd", _open_zstd) for i in range(16))
_MAGIC_LEN = max(len(m) for m, _, _ in _MAGIC)

# What the decompressors raise for data they cannot decompress: gzip's bad
# header, CRC or length (BadGzipFile, an OSError) and bad deflate data
# (zlib.error, or ISA-L's IsalError); bz2's "Invalid data stream" (OSError); lzma's LZMAError;
# zstd's ZstdError (_decompression_errors); and
# EOFError from all of them when the data ends before the end-of-stream marker.
# Read errors of the file below are turned into InputReadError before they
# reach the decompressor, so an OSError coming out of it is about the data.
@functools.cache
def _common_decompression_errors():
    import gzip
    import lzma
    return (gzip.BadGzipFile, zlib.error, _fast_gzip()[1], EOFError, OSError, lzma.LZMAError)


def _unreadable_because(kind, exc):
    """Why data that is not damaged cannot be decompressed, or None."""
    if kind == "zstd" and "Dictionary mismatch" in str(exc):
        return "compressed with a dictionary, which hsvm does not take: decompress it first (zstd -d -D DICT)"
    return None


def _decompression_errors(kind):
    """What the decompressor of ``kind`` raises for bad data (zstd's error
    class is only imported with it)."""
    common = _common_decompression_errors()
    return common + (_zstd().ZstdError,) if kind == "zstd" else common


def compression_of(head):
    """The compression (``"gzip"``, ``"bz2"``, ``"xz"``, ``"zstd"``) whose magic number
    ``head`` (a file's first bytes) starts with, or None for plain data."""
    for magic, kind, _ in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


def reads_stdin(path):
    """Whether reading ``path`` reads standard input: ``-``, or a name of the
    same open file (``/dev/stdin``, ``/dev/fd/0``, ``/proc/self/fd/0``)."""
    if path == "-":
        return True
    if path is None or hasattr(path, "read"):
        return False
    try:
        mine, theirs = os.fstat(0), os.stat(path)
    except (OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def regular_file_size(path):
    """The bytes of ``path`` when it names a regular file, else None (``-``,
    a device, a file object): the size a command reports of what it wrote."""
    if path == "-":
        return None         # stdout, even beside a file named "-"
    try:
        return os.path.getsize(path) if os.path.isfile(path) else None
    except (TypeError, ValueError, OSError):
        return None


def display_name(path):
    """How a path is named in messages (``<stdin>`` / ``<stdout>`` for ``-``)."""
    if path == "-" or path is None:
        return "<stdin>"
    return os.fspath(path)


def open_input(path, *, name=None):
    """Open ``path`` (a path, ``-`` for stdin, or a binary file object) for binary reading.  Compressed input (gzip,
    bz2, xz, zstd) is recognised by its magic bytes, not its name, so pipes work too.
    Returns a readable binary file object; the caller closes it.

    ``name``: how messages call the input (default: the path, ``<stdin>``, or
    the file object's ``name``).  A path that is missing, a directory or
    unreadable raises :class:`InputNotFoundError`; compressed data that cannot
    be decompressed raises :class:`CorruptInputError` when it is read (or
    here, when the input is only the first bytes of a compressed file's
    magic); a failing read of the file (EIO) raises :class:`InputReadError`."""
    owned = None
    if hasattr(path, "read"):
        raw = path if hasattr(path, "peek") else io.BufferedReader(path, buffer_size=1 << 20)
        if name is None:
            given = getattr(path, "name", None)
            name = given if isinstance(given, str) else "<input>"
    elif path == "-" or path is None:
        if sys.stdin is None:       # started with descriptor 0 closed (<&-)
            raise InputNotFoundError("<stdin>: cannot read: standard input is closed")
        raw = io.BufferedReader(sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer,
                                buffer_size=1 << 20)
        name = name or "<stdin>"
    else:
        raw = owned = open_raw(path)
        name = name or display_name(path)
    try:
        raw = _with_full_head(raw, name, close_rest=not hasattr(path, "read"))
        head = _read_error_guard(lambda: raw.peek(_MAGIC_LEN)[:_MAGIC_LEN], name)
        for magic, kind, opener in _MAGIC:
            if head.startswith(magic):
                # Decompressors leave a file object they were handed open;
                # close ours with them (but never stdin or the caller's object).
                counted = _CountingReader(raw, name)
                if kind == "gzip" and not _regular(owned):
                    opener = _open_streams("gzip", 1 << 20)     # no second reading to tell trailing garbage
                return _Decompressed(_GuardedDecompressor(opener(counted), kind, counted, name), owned)
            if len(head) < len(magic) and head and magic.startswith(head):
                # the whole input is the first bytes of a magic number
                raise CorruptInputError(name, kind, len(head), truncated=True, line=1)
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    # plain input: its read errors named too (a plain path or stdin is closed
    # with the returned object, as before; a caller's object never is)
    return io.BufferedReader(_ReadGuard(raw, name, close_inner=not hasattr(path, "read")), buffer_size=1 << 20)


def _regular(fh):
    """Whether ``fh`` (None: not a file hsvm opened) is a regular file, which
    can be read again to say where its compressed data fails."""
    try:
        return fh is not None and stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def _with_full_head(raw, name, close_rest):
    """``raw`` such that a peek shows the input's first _MAGIC_LEN bytes, or
    all of it when shorter.  A pipe may deliver fewer bytes in its first
    read; only then, when those bytes could be the start of a magic number,
    is the head read to the end and put back in front of the rest."""
    head = _read_error_guard(lambda: raw.peek(_MAGIC_LEN), name)
    if len(head) >= _MAGIC_LEN or not head or not any(m.startswith(head[:len(m)]) for m, _, _ in _MAGIC):
        return raw
    first = _read_error_guard(lambda: raw.read(_MAGIC_LEN), name)  # blocks until _MAGIC_LEN bytes or EOF
    return io.BufferedReader(_Prefixed(first, raw, close_rest=close_rest), buffer_size=1 << 20)


def _read_error_guard(read, name):
    # the first bytes of the input: of any text in it, line 1
    return guarded_read(read, name, line=1)


def guarded_read(read, name, *args, line=None):
    """``read(*args)`` with a failing read (an OSError: EIO from a bad disk or
    a network file system) raised as InputReadError naming ``name`` (exit
    66); hsvm's own errors, OSErrors too (a read error said further down, a
    full output), pass as they are."""
    try:
        return read(*args)
    except HsvmError:
        raise
    except OSError as exc:
        raise InputReadError(name, _strerror(exc), line=line) from None


def _strerror(exc):
    return exc.strerror or str(exc) or type(exc).__name__


class _Prefixed(io.RawIOBase):
    """Bytes already taken from a stream, then the rest of the stream."""

    def __init__(self, prefix, rest, *, close_rest):
        self._prefix = prefix
        self._rest = rest
        self._close_rest = close_rest

    def close(self):
        try:
            if self._close_rest:
                self._rest.close()
        finally:
            super().close()

    def readable(self):
        return True

    def readinto(self, buf):
        if self._prefix:
            n = min(len(buf), len(self._prefix))
            buf[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._rest.read(len(buf))
        buf[:len(data)] = data
        return len(data)


class _ReadGuard(io.RawIOBase):
    """A readable stream whose failing reads (EIO) raise InputReadError."""

    def __init__(self, inner, name, *, close_inner):
        self._inner = inner
        self._name = name
        self._close_inner = close_inner

    def readable(self):
        return True

    def readinto(self, buf):
        return guarded_read(self._inner.readinto, self._name, buf)

    def close(self):
        try:
            if self._close_inner:
                self._inner.close()
        finally:
            super().close()


def decompressed_input(fh):
    """Whether ``fh`` is what :func:`open_input` returned for compressed
    input: the data it gives was decompressed by its magic."""
    return isinstance(fh, _Decompressed)


def plain_input_file(fh):
    """The file an :func:`open_input` of a path reads plain text from (the
    object :func:`open_raw` made, positioned where the returned reader will
    read next while that has read nothing), or None for compressed text,
    stdin and a caller's file object: for a reader that starts further in
    (io/early_parse.py)."""
    guard = getattr(fh, "raw", None)
    if isinstance(guard, _ReadGuard) and guard._close_inner and isinstance(guard._inner, io.BufferedReader):
        return guard._inner
    return None


class _CountingReader:
    """What a decompressor reads from: counts the compressed bytes handed
    over (the offset named in messages; a pipe has no tell()) and turns a
    failing read into InputReadError, which no decompressor mistakes for
    bad data."""

    def __init__(self, raw, name):
        self._raw = raw
        self._name = name
        self.offset = 0

    def read(self, size=-1):
        data = guarded_read(self._raw.read, self._name, size)
        self.offset += len(data)
        return data

    def readinto(self, buf):
        # ISA-L's reader fills its own buffer
        got = guarded_read(self._raw.readinto, self._name, buf)
        self.offset += got or 0
        return got

    def readable(self):
        return True


class _GuardedDecompressor(io.RawIOBase):
    """A decompressing file object whose failures become CorruptInputError."""

    def __init__(self, stream, kind, counted, name):
        self._stream = stream
        self._kind = kind
        self._counted = counted
        self._name = name
        self._errors = _decompression_errors(kind)

    def readable(self):
        return True

    def readinto(self, buf):
        try:
            return self._stream.readinto(buf)
        except HsvmError:
            raise           # a failing read below (an OSError, as bz2's bad data is): said in full
        except self._errors as exc:
            raise CorruptInputError(self._name, self._kind, self._counted.offset,
                                    truncated=isinstance(exc, EOFError), trailing=isinstance(exc, _TrailingGarbage),
                                    detail=_unreadable_because(self._kind, exc)) from None

    def close(self):
        try:
            self._stream.close()
        finally:
            super().close()


# Output bytes per step of the scan below: what a failing step loses of the
# count (a truncation loses nothing: the decompressors fail before output).
_SCAN_STEP = 4096


#: The longest line a text reader other than the svmlight one (prediction
#: files, model text of LIBSVM and LIBLINEAR) accepts: the svmlight reader's
#: limit, so that an endless input without newlines (/dev/zero) is an error,
#: not a read of all memory.
MAX_TEXT_LINE = 64 << 20


def bounded_lines(fh, name, limit=MAX_TEXT_LINE, *, path=None):
    """The lines of the binary stream ``fh`` (each with its newline) as
    iterating it gives them, but one longer than ``limit`` bytes raises
    InputFormatError naming its line.  Compressed data that breaks off or
    is corrupt raises CorruptInputError with its line: exact when ``path``
    (the file ``fh`` reads) can be decompressed again to count them, else the
    line the reader had reached ("or later": it reads ahead)."""
    lineno = 0
    while True:
        try:
            line = fh.readline(limit + 1)
        except CorruptInputError as exc:
            scan = scan_compressed(path) if path not in (None, "-") else None
            if scan is not None and scan[1] is not None:
                raise scan[1].located(name, scan[0] + 1) from None
            raise exc.located(name, lineno + 1, exact=False) from None
        if not line:
            return
        lineno += 1
        if len(line) > limit and not (len(line) == limit + 1 and line.endswith(b"\n")):
            raise InputFormatError(name, lineno, "line longer than %d MB" % (limit >> 20)
                                   if limit % (1 << 20) == 0 else "line longer than %d bytes" % limit)
        yield line


def scan_compressed(path):
    """Decompress the compressed file ``path`` to its end, counting lines:
    (complete lines before the failure, the CorruptInputError) for data that
    cannot be decompressed, or (lines, None) for sound data, or None for a
    file that is not compressed or cannot be opened.  The error path's second
    look: a reader that failed mid-block, or a parse error in garbage that a
    corrupt stream decompressed to before its checksum, is told where."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None         # a FIFO or a device cannot be read a second time
        raw = open_raw(path)
    except (OSError, InputNotFoundError):
        return None
    with raw:
        head = raw.peek(_MAGIC_LEN)[:_MAGIC_LEN]
        found = next(((kind, op) for magic, kind, op in _MAGIC if head.startswith(magic)), None)
        if found is None:
            return None
        kind, opener = found
        if kind == "gzip":
            # zlib's reader hands out every byte before a truncation; ISA-L's
            # keeps back what it decompressed last, so its count falls short
            opener = _stdlib_gzip
        counted = _CountingReader(raw, display_name(path))
        stream = opener(counted)
        lines = 0
        try:
            while True:
                data = stream.read1(_SCAN_STEP)
                if not data:
                    return lines, None
                lines += data.count(b"\n")
        except HsvmError:
            raise               # a failing read (an OSError too), not bad data
        except _decompression_errors(kind) as exc:
            # zlib's reader, at the start of what should be the next member,
            # finds no gzip header (zstd's, no frame magic): the data before
            # was whole (ISA-L's reader calls that a truncation)
            import gzip
            # (a lone first byte of the magic number is the next member cut short)
            cut = isinstance(exc, gzip.BadGzipFile) and str(exc) == "Not a gzipped file (b'\\x1f')"
            trailing = (isinstance(exc, gzip.BadGzipFile) and str(exc).startswith("Not a gzipped file")
                        and not cut) or \
                (kind == "zstd" and "Unknown frame descriptor" in str(exc)) or isinstance(exc, _TrailingGarbage)
            return lines, CorruptInputError(display_name(path), kind, counted.offset,
                                            truncated=isinstance(exc, EOFError) or cut, trailing=trailing,
                                            detail=_unreadable_because(kind, exc))
        finally:
            with contextlib.suppress(Exception):
                stream.close()


def require_regular_file(name, why):
    """Refuse a pipe, socket or device as an input that must be a file (a
    usage error, like '-'; ``why`` says why it must), before opening it:
    opening a FIFO without a writer would wait forever, and reading one gave
    "truncated" or "too short" as if the file were damaged.  Missing paths
    and directories are left to the open that follows, which names them."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise OptionError("%s: %s: give a regular file, not a pipe or device" % (name, why))


def open_raw(path):
    """Open the file ``path`` for binary reading as stored (no decompression);
    a missing, unreadable or directory path is an InputNotFoundError."""
    name = display_name(path)
    try:
        return open(path, "rb", buffering=1 << 20)
    except FileNotFoundError:
        raise InputNotFoundError("%s: no such file" % name) from None
    except IsADirectoryError:
        raise InputNotFoundError("%s: is a directory" % name) from None
    except PermissionError:
        raise InputNotFoundError("%s: permission denied" % name) from None
    except OSError as exc:
        raise InputNotFoundError("%s: cannot open: %s" % (name, _strerror(exc))) from None


def read_raw(fh, size, name):
    """``fh.read(size)`` of a file opened by :func:`open_raw`, a failing read
    (EIO from a bad disk or a network file system) raised as InputReadError
    naming ``name`` (exit 66), as the text readers do."""
    return guarded_read(fh.read, display_name(name), size)


# How much more of a compressed stream that cannot be read again (stdin, a
# pipe) is decompressed after a parse error, to tell garbage that a corrupt
# stream decompressed to (its checksum fails at the end of its member) from a
# malformed line: about a second's work.
_DRAIN_LIMIT = 1 << 30


def stream_failure(fh):
    """For an input :func:`open_input` decompresses and that cannot be read
    again: the CorruptInputError its data ends in, found by decompressing on
    (up to _DRAIN_LIMIT bytes), or None -- sound data as far as read, plain
    input, or another reader."""
    if not isinstance(fh, _Decompressed) or fh.closed:
        return None
    try:
        left = _DRAIN_LIMIT
        while left > 0:
            data = fh.read1(min(left, 1 << 20))
            if not data:
                return None
            left -= len(data)
    except CorruptInputError as exc:
        return exc
    except (OSError, ValueError, InputReadError):
        return None
    return None


class _Decompressed(io.BufferedReader):
    def __init__(self, stream, owned):
        super().__init__(stream, buffer_size=1 << 20)
        self._owned = owned

    def close(self):
        try:
            super().close()
        finally:
            if self._owned is not None:
                self._owned.close()


@contextlib.contextmanager
def atomic_output(path, mode="wb", *, text=None):
    """Yield a file object for writing ``path``, in the way that never destroys
    what ``path`` points at:

    * ``-`` (or None): standard output, written through;
    * a regular file, or a name that does not exist yet: written to a temporary
      name in the same directory and renamed over it only if the block
      completes, so a failure never leaves a half-written file (an existing
      file keeps its permission bits);
    * a symbolic link: the same, applied to the file it finally points at (the
      link stays a link);
    * anything else -- a character or block device (``/dev/null``), a FIFO, a
      socket, ``/dev/stdout`` and the other descriptors under ``/proc`` --:
      opened and written through in place, as the shell's ``>`` would; a
      rename would replace the device node by a regular file.

    Write errors (a full disk, ``/dev/full``) raise :class:`OutputError`
    naming ``path``.  A binary file is never written to a terminal;
    ``text=True`` says that bytes written in mode ``wb`` are text (svmlight
    written as bytes for speed), which a terminal may show.  Text written to a
    path whose name ends in ``.gz``, ``.bz2``, ``.xz`` or ``.zst`` is compressed
    so (:func:`output_compression`); binary files (models, codes) are
    memory-mapped by their readers and never are."""
    binary = "b" in mode and not text
    if path == "-" or path is None:
        if binary and _is_terminal(sys.stdout):
            # a model or codes file is no text: it would garble the terminal
            raise binary_on_terminal(path)
        stdout = whole_stdout()
        stream = stdout.buffer if "b" in mode else stdout
        guarded = GuardedWriter(stream, "<stdout>")
        yield guarded
        guarded.flush()
        return
    name = os.fspath(path)
    compression = None if binary else output_compression(name)
    how, target, existing = _output_target(name)
    if how == "through":
        try:
            # An open descriptor of ours (/dev/stdout, /dev/fd/N) is used as
            # it is, so that a shell's `>>` keeps appending; anything else is
            # opened as `>` would.
            raw = os.fdopen(os.dup(target), "wb") if isinstance(target, int) else open(name, "wb")
            fh = _writer(raw, mode, compression)
        except OSError as exc:
            raise OutputError("%s: cannot write: %s" % (name, exc.strerror or exc)) from None
        if binary and _is_terminal(fh):
            _close_quietly(fh)
            raise binary_on_terminal(name)
        try:
            guarded = GuardedWriter(fh, name)
            yield guarded
            guarded.flush()
        finally:
            _close_quietly(fh)
        return
    if existing is not None and not os.access(target, os.W_OK):
        # a write-protected file (chmod a-w, another user's read-only file):
        # the rename could replace it, the shell's `>` would refuse
        raise OutputError("%s: cannot write: Permission denied" % name)
    directory = os.path.dirname(target)
    base = os.path.basename(target)
    if len(os.fsencode(base)) > 200:
        # ".NAME.XXXXXXXXXXXX.tmp" must fit in NAME_MAX (255 bytes) where NAME does
        base = base[:50]
    try:
        fd, tmp = _create_temporary(directory, base)
    except OSError as exc:
        raise OutputError("%s: cannot write: %s" % (name, exc.strerror or exc)) from None
    _track(tmp)
    try:
        fh = _writer(os.fdopen(fd, "wb"), mode, compression)
        try:
            guarded = GuardedWriter(fh, name)
            yield guarded
            guarded.flush()
            try:
                fh.close()
            except OSError as exc:
                guarded._fail(exc)
        finally:
            _close_quietly(fh)
        _copy_mode(tmp, existing)
        if _group.pending is not None:
            _group.pending.append((tmp, target))        # renamed when the whole group is written
            _group.names[tmp] = name                    # as given, for a failing rename's message
            return
        try:
            _rename_into_place([(tmp, target)])
        except OSError as exc:
            # a rename the directory refuses (a sticky /tmp-like directory and
            # another user's file): the one line of any unwritable output
            raise OutputError("%s: cannot write: %s" % (name, exc.strerror or exc)) from None
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _untrack(tmp)
        # (in a group too: a file still open when the pipe broke, calibrate's
        # --grid-json around its table, is not among the group's written ones)
        _note_discarded(exc, name)
        raise


def _note_discarded(exc, name):
    """Record on a BrokenPipeError the output files it cost: a table on stdout
    beside -o MODEL (train-ovo -c auto | head) takes the model with it, and
    the CLI, silent for a plain `predict | head`, then says so."""
    if isinstance(exc, BrokenPipeError) and name not in getattr(exc, "discarded", ()):
        exc.discarded = getattr(exc, "discarded", ()) + (name,)


def _create_temporary(directory, base):
    """(fd, path) of a new file ".BASE.XXXXXXXXXXXX.tmp" in ``directory``,
    opened for writing, mode 0600, created exclusively: what tempfile.mkstemp
    does, without importing tempfile (with shutil and random, ~4 ms of every
    command's start)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(directory, ".%s.%s.tmp" % (base, os.urandom(6).hex()))
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no usable temporary name", os.path.join(directory, ".%s.*.tmp" % base))


def _track(tmp):
    # removed by a C atexit handler should a library end the process with
    # exit() before Python's cleanup runs (native/exit_cleanup.c)
    from ..support.native import lib
    lib.hsvm_exit_cleanup_add(os.fsencode(tmp))


def _untrack(tmp):
    from ..support.native import lib
    lib.hsvm_exit_cleanup_remove(os.fsencode(tmp))


class _Group(threading.local):
    pending = None
    names = None


_group = _Group()
_renames = {"running": 0, "done": 0}


def outputs_committed():
    """How many times outputs were renamed into place in this process."""
    return _renames["done"]


def renaming_outputs():
    """Whether outputs are being renamed into place now.  With
    :func:`outputs_committed`, what the CLI's signal handler asks: a signal
    that comes while or after a command's outputs are renamed into place
    lets the command finish (cli/main.py), so that it takes effect before
    the first rename (nothing replaced) or not at all, never in between."""
    return _renames["running"] > 0


@contextlib.contextmanager
def _directories_locked(targets):
    """Hold an exclusive flock on the directory of each target while a group
    of outputs is renamed, so that two processes writing the same group
    (`make -j` running one recipe twice) rename theirs one group after the
    other: the files left are all one run's, never a calibration of one run
    beside the grid of another.  Where a directory cannot be locked (a file
    system without flock) the renames go ahead unlocked, as before."""
    import fcntl
    held = []
    try:
        for directory in sorted({os.path.dirname(os.path.abspath(t)) for t in targets}):
            try:
                fd = os.open(directory, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                os.close(fd)
                continue
            held.append(fd)
        yield
    finally:
        for fd in held:
            os.close(fd)            # closing releases the lock


#: Called before outputs are renamed into place; may raise to rename nothing
#: (the CLI's: a signal whose exception was swallowed on its way, cli/main.py).
before_renames = None


def _rename_into_place(pairs):
    """Rename each (temporary, target) pair; when a rename fails the
    temporaries not yet renamed are removed (an OSError carries the index
    of the pair that failed, ``done``).  A group of two or more is renamed
    under the lock of its directories (:func:`_directories_locked`), and
    takes effect whole or not at all: a target no rename may replace (a
    sticky directory's file of another user) is refused before the first
    rename, and a failure puts back what the earlier renames replaced
    (:func:`_keep_replaced`)."""
    _renames["running"] += 1
    done = 0
    kept = {}
    try:
        if before_renames is not None:
            before_renames()
        with _directories_locked([t for _, t in pairs]) if len(pairs) > 1 else contextlib.nullcontext():
            if len(pairs) > 1:
                for i, (_, target) in enumerate(pairs):
                    if not _may_replace(target):
                        exc = PermissionError(errno.EPERM, os.strerror(errno.EPERM), target)
                        exc.done = i
                        raise exc
                kept = _keep_replaced([t for _, t in pairs])
            try:
                for tmp, target in pairs:
                    os.replace(tmp, target)
                    _untrack(tmp)
                    done += 1
            except BaseException:
                _put_back([t for _, t in pairs[:done]], kept)
                raise
            finally:
                for old in kept.values():
                    if old is not None:
                        with contextlib.suppress(OSError):
                            os.unlink(old)
                        _untrack(old)
    except BaseException as exc:
        for later, _ in pairs[done:]:
            with contextlib.suppress(OSError):
                os.unlink(later)
            _untrack(later)
        if isinstance(exc, OSError) and not hasattr(exc, "done"):
            exc.done = done
        done = 0            # nothing of the group is left replaced
        raise
    finally:
        if done:
            _renames["done"] += 1
        _renames["running"] -= 1


def _may_replace(path):
    """Whether a rename may replace (or a link to it be removed from) what
    ``path`` names: in a sticky directory (/tmp, a shared scratch) only the
    file's owner, the directory's or root may; elsewhere, as far as this
    knows, anyone who may write the directory."""
    euid = os.geteuid()
    try:
        st = os.lstat(path)
        if euid == 0 or st.st_uid == euid:
            return True
        parent = os.stat(os.path.dirname(path))
    except OSError:
        return True
    return not parent.st_mode & stat.S_ISVTX or parent.st_uid == euid


def _keep_replaced(targets):
    """{target: a hard link to the file it names now, or None when nothing
    is there}, for :func:`_put_back`; a target whose file cannot be linked
    (a file system without hard links, another user's file under
    protected_hardlinks) is left out: its old content cannot come back."""
    import secrets
    kept = {}
    for target in targets:
        if not os.path.lexists(target):
            kept[target] = None
            continue
        base = os.path.basename(target)[:50]
        for _ in range(8):
            old = os.path.join(os.path.dirname(target), ".%s.%s.old" % (base, secrets.token_hex(4)))
            try:
                os.link(target, old)
            except FileExistsError:
                continue
            except OSError:
                break
            _track(old)
            kept[target] = old
            break
    return kept


def _put_back(targets, kept):
    """Undo the renames onto ``targets``: each gets back the file it named
    (``kept``), or is removed when it named none; best effort."""
    for target in reversed(targets):
        if target not in kept:
            continue
        with contextlib.suppress(OSError):
            if kept[target] is None:
                os.unlink(target)
            else:
                os.replace(kept[target], target)
                _untrack(kept[target])
                kept[target] = None


@contextlib.contextmanager
def outputs_together():
    """The files :func:`atomic_output` writes inside this block are renamed
    into place at its end, and only if all of them were written: a command
    with two outputs (a model and its calibration) whose second fails leaves
    neither, and the files it would replace as they were.  (Outputs written
    through -- a device, stdout -- cannot wait: their writes fail in the block
    and the others are then discarded.)"""
    if _group.pending is not None:
        yield
        return
    _group.pending, _group.names = [], {}
    try:
        yield
    except BaseException as exc:
        pending, _group.pending = _group.pending, None
        for tmp, target in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            _untrack(tmp)
            _note_discarded(exc, _group.names.get(tmp, target))
        raise
    (pending, _group.pending), (names, _group.names) = (_group.pending, None), (_group.names, None)
    try:
        _rename_into_place(pending)
    except OSError as exc:
        # named as given, as a single output's failure is (not the path its links resolve to)
        tmp, target = pending[exc.done]
        raise OutputError("%s: cannot write: %s" % (names.get(tmp, target), exc.strerror or exc)) from None


def binary_on_terminal(path, remedy="use -o FILE, or redirect"):
    """The OutputError (exit 74) refusing to write a binary file to the
    terminal ``path`` (``-``/None: stdout) names: the one message of
    :func:`atomic_output` and of the commands that refuse before their work."""
    return OutputError("%s: refusing to write a binary file to a terminal: %s"
                       % ("<stdout>" if path is None or path == "-" else os.fspath(path), remedy))


def output_is_terminal(path):
    """Whether ``path`` as an output (``-``: stdout; ``/dev/stdout``, a tty
    device) would write to a terminal: for a command to refuse a binary
    output before its work, as :func:`atomic_output` refuses it when opened."""
    if path is None or path == "-":
        return _is_terminal(sys.stdout)
    try:
        if not stat.S_ISCHR(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def _is_terminal(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _close_quietly(fh):
    # After a failed write the buffer still holds data, and closing retries
    # the write: its error is already being reported.
    try:
        fh.close()
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            os.close(fh.fileno())


# A chain of symbolic links longer than this is a loop (Linux gives up at 40).
_MAX_LINKS = 40


def _without_trailing_slashes(name):
    # "out/" and "out/." name "out"
    while name.endswith(os.sep) or name.endswith(os.sep + "."):
        name = name[:-1]
    return name or os.sep


def _output_target(name):
    """How to write ``name``: ("replace", real path, its stat or None) for a
    regular file or a new name, reached through any symbolic links;
    ("through", descriptor, None) for one of this process's descriptors;
    ("through", name, None) for everything else."""
    if name.endswith(os.sep) or name.endswith(os.sep + "."):
        # abspath() would drop the slash, and `-o out/` would write a file
        # `out`: a name ending in a slash means a directory, as in the shell.
        if os.path.isdir(name):
            reason = "is a directory"
        elif os.path.lexists(_without_trailing_slashes(name)):
            reason = "not a directory"
        else:
            reason = "no such directory"
        raise OutputError("%s: cannot write: %s" % (name, reason))
    try:
        cur = os.path.abspath(name)
    except OSError as exc:
        # a relative name when the current directory was removed under us
        raise OutputError("%s: cannot write: %s (the current directory no longer exists)"
                          % (name, exc.strerror or exc)) from None
    for _ in range(_MAX_LINKS):
        parent = os.path.realpath(os.path.dirname(cur))
        cur = os.path.join(parent, os.path.basename(cur))
        if parent == "/proc/%d/fd" % os.getpid() and os.path.basename(cur).isdigit():
            # /dev/stdout, /dev/fd/N, /proc/self/fd/N: our own open descriptor
            # (a pipe, a terminal, a file the shell opened).
            return "through", int(os.path.basename(cur)), None
        if parent == "/proc" or parent.startswith("/proc/"):
            return "through", name, None
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return "replace", cur, None
        except OSError as exc:
            raise OutputError("%s: cannot write: %s" % (name, exc.strerror or exc)) from None
        if stat.S_ISLNK(st.st_mode):
            cur = os.path.join(parent, os.readlink(cur))
            continue
        if stat.S_ISREG(st.st_mode):
            return "replace", cur, st
        if stat.S_ISDIR(st.st_mode):
            raise OutputError("%s: cannot write: is a directory" % name)
        return "through", name, None
    raise OutputError("%s: cannot write: too many levels of symbolic links" % name)


def writes_to_stdout(path):
    """True when writing ``path`` lands on this process's standard output:
    ``-``, ``/dev/stdout``, ``/dev/fd/1``, or another name of the file or
    pipe that stdout is.  A command whose result is a file and whose report
    goes to stdout sends the report to stderr then, so that the two do not
    mix in one file."""
    if path == "-" or path is None:
        return True
    try:
        out = os.stat(path)
        std = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino) == (std.st_dev, std.st_ino)


def same_regular_file(output, inputs):
    """The first of ``inputs`` (paths, ``-`` for standard input; None
    skipped) that ``output`` would overwrite: the same regular file, by any
    name.  A device or FIFO
    (``/dev/null``) is written through, not replaced, and is never refused."""
    if output == "-" or output is None:
        return None
    try:
        out = os.stat(output)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(out.st_mode):
        return None
    for path in inputs:
        if path is None:
            continue
        try:
            # `-` is standard input: `hsvm ... - -o data.svm < data.svm`
            st = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
        except (OSError, ValueError, AttributeError):
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            return path
    return None


def refuse_overwriting_input(output, inputs, *, label="output", context="", shown=display_name):
    """An OptionError before any work when ``output`` is the same regular
    file as one of ``inputs`` (paths, ``-`` for standard input; file
    objects and None skipped)
    -- the atomic rename would replace that input by the result -- naming
    it ``label: OUTPUT is an input{context}`` and, when the input was given
    under another name (a link, another path), that name; ``shown`` formats
    the names.  The library's functions and the commands' options
    (cli/options.outputs_apart) both refuse with it."""
    def path(p):
        return os.fspath(p) if isinstance(p, (str, bytes, os.PathLike)) else None
    clash = same_regular_file(path(output), [path(p) for p in inputs])
    if clash is not None:
        out, given = shown(output), "<stdin>" if clash == "-" else shown(clash)
        raise OptionError("%s: %s is an input%s%s: refusing to overwrite it"
                          % (label, out, context, "" if out == given else " (as %s)" % given))


def same_output(a, b):
    """Whether the output names ``a`` and ``b`` would write the same file: by
    any name or symbolic link, existing or not (a device such as /dev/null,
    written through, may take both)."""
    if a is None or b is None:
        return False
    if a == "-" or b == "-":
        return a == b or _is_stdout(b if a == "-" else a)
    try:
        ra, rb = os.path.realpath(a), os.path.realpath(b)
    except (OSError, ValueError):
        return False
    if ra != rb:
        return same_regular_file(a, [b]) is not None
    try:
        return stat.S_ISREG(os.stat(ra).st_mode)
    except (OSError, ValueError):
        return True         # a new file, named twice


def _is_stdout(name):
    """Whether the output ``name`` is the file standard output already writes
    -- /dev/stdout, /dev/fd/1, a link to either, or the file the shell sent
    stdout to (``-o z --grid-json - > z``) -- other than /dev/null: '-' beside
    it had mixed two outputs in one file, or lost one, exit 0."""
    try:
        st, out = os.stat(name), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino) and os.path.realpath(name) != os.devnull


def _copy_mode(tmp, existing):
    if existing is None:
        os.chmod(tmp, 0o666 & ~_umask())
        return
    os.chmod(tmp, stat.S_IMODE(existing.st_mode))
    if hasattr(os, "chown"):
        # Only root may give a file away; others keep their own ownership.
        with contextlib.suppress(OSError):
            os.chown(tmp, existing.st_uid, existing.st_gid)


# Text outputs named like compressed files are written compressed, as
# numpy.savetxt and pandas do: a user who asks for preds.txt.gz expects gzip,
# and every hsvm reader takes it back by its magic bytes.  Fixed settings and
# no timestamp (gzip's mtime 0, no stored name), so the same output gives the
# same bytes on every run.
_COMPRESSED_SUFFIXES = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}


def output_compression(name):
    """The compression (``"gzip"``, ``"bz2"``, ``"xz"``, ``"zstd"``) a text
    output named ``name`` is written with, from its suffix; None for plain."""
    return _COMPRESSED_SUFFIXES.get(os.path.splitext(os.fsdecode(name))[1].lower())


def _compressor(raw, compression):
    if compression == "gzip":
        import gzip
        return gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0)
    if compression == "bz2":
        import bz2
        return bz2.BZ2File(raw, "wb", compresslevel=9)
    if compression == "xz":
        import lzma
        return lzma.LZMAFile(raw, "wb", preset=6)
    try:
        zstd = _zstd()
    except ImportError:
        raise OptionError("cannot write %s: zstd output needs Python 3.14 or the backports.zstd package"
                          % display_name(getattr(raw, "name", "-"))) from None
    return zstd.ZstdFile(raw, "wb", level=3)


def _writer(raw, mode, compression):
    """The file object an output is written through: ``raw`` (a binary file
    that the writer owns), under a compressor when ``compression`` says so,
    under UTF-8 text when ``mode`` is a text mode."""
    if compression is None:
        return raw if "b" in mode else io.TextIOWrapper(raw, **_text_args(mode))
    try:
        top = _compressor(raw, compression)
    except BaseException:
        _close_quietly(raw)
        raise
    if "b" not in mode:
        top = io.TextIOWrapper(top, **_text_args(mode))
    return _Layers(top, raw)


class _Layers:
    """A writer over a file it does not close by itself (a compressor given a
    file object): closing closes both, the writer first, so that the
    compressor's end of stream reaches the file."""

    def __init__(self, top, raw):
        self._top, self._raw = top, raw

    def close(self):
        try:
            self._top.close()
        finally:
            self._raw.close()

    @property
    def closed(self):
        return self._raw.closed

    def fileno(self):
        return self._raw.fileno()

    def isatty(self):
        return self._raw.isatty()

    def __getattr__(self, attr):
        return getattr(self._top, attr)


def _text_args(mode):
    # Text written to files is UTF-8 whatever the locale (under LC_ALL=C a
    # report naming é.json was a UnicodeEncodeError), and a name's
    # undecodable bytes (carried as surrogates) go back out as the bytes they
    # were; binary modes take no encoding.
    return {} if "b" in mode else {"encoding": "utf-8", "errors": "surrogateescape"}


class WholeWrites:
    """A raw binary stream -- standard output under ``PYTHONUNBUFFERED=1`` or
    ``python -u``, where ``sys.stdout.buffer`` is the unbuffered FileIO --
    that writes every call's bytes whole.  One write(2) may take only part of
    them (a nearly full disk takes what fits, a pipe what its reader left
    room for) and FileIO.write returns that count, which the text layer and
    most callers ignore: the rest was lost and the command exited 0.  Looping
    here, the next write meets the error (ENOSPC, EPIPE) and reports it.
    ``close`` leaves the descriptor open: it is the interpreter's."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, data):
        view = memoryview(data).cast("B")
        total = len(view)
        while len(view):
            n = self._raw.write(view)
            if n is None:      # a non-blocking descriptor, full for now: wait for room
                import select
                select.select([], [self._raw], [])
                continue
            if n <= 0:
                raise OSError(errno.EIO, "the write wrote nothing")
            view = view[n:]
        return total

    def close(self):
        pass

    def __getattr__(self, attr):
        return getattr(self._raw, attr)


def whole_stdout():
    """``sys.stdout``, made to write whole (:class:`WholeWrites`) when its
    binary layer is unbuffered; otherwise as it is."""
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if not isinstance(raw, io.RawIOBase):
        return out
    return io.TextIOWrapper(WholeWrites(raw), encoding=out.encoding, errors=out.errors,
                            line_buffering=out.line_buffering, write_through=True)


class GuardedWriter:
    """A file object whose write errors name the output and carry exit status
    74 (EX_IOERR): a full disk is the user's to fix, not a crash.  A reader that
    went away (EPIPE) stays a BrokenPipeError, which the CLI treats as normal
    termination."""

    def __init__(self, fh, name):
        self._fh = fh
        self._name = name

    def _fail(self, exc):
        if isinstance(exc, (BrokenPipeError, HsvmError)):
            raise exc           # a reader gone; or an OutputError (an OSError too) already said in full
        raise OutputError("%s: cannot write: %s" % (self._name, exc.strerror or exc)) from None

    def write(self, data):
        try:
            return self._fh.write(data)
        except OSError as exc:
            self._fail(exc)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            self._fh.flush()
        except OSError as exc:
            self._fail(exc)

    def __getattr__(self, attr):
        return getattr(self._fh, attr)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class HashingReader(io.RawIOBase):
    """Passes a binary stream through while computing its SHA-256 (for provenance
    of inputs that can only be read once, such as stdin)."""

    def __init__(self, raw):
        import hashlib
        self._raw = raw
        self.sha256 = hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, buf):
        data = self._raw.read(len(buf))
        n = len(data)
        buf[:n] = data
        self.sha256.update(data)
        return n

    def hexdigest(self):
        return self.sha256.hexdigest()


def file_sha256(path, *, chunk=1 << 20):
    """SHA-256 of a file's bytes as stored."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()
