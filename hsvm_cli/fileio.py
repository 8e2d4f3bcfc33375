"""Opening inputs (``-`` = stdin, gzip/bz2/xz by magic bytes) and writing outputs atomically."""
import bz2
import contextlib
import gzip
import io
import lzma
import os
import sys
import tempfile

from .errors import InputNotFoundError, OutputError

_MAGIC = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)


def display_name(path):
    """How a path is named in messages (``<stdin>`` / ``<stdout>`` for ``-``)."""
    if path == "-" or path is None:
        return "<stdin>"
    return os.fspath(path)


def open_input(path):
    """Open ``path`` (a path, ``-`` for stdin, or a binary file object) for binary reading.  Compressed input (gzip,
    bz2, xz) is recognised by its magic bytes, not its name, so pipes work too.
    Returns a readable binary file object; the caller closes it."""
    if hasattr(path, "read"):
        raw = path if hasattr(path, "peek") else io.BufferedReader(path, buffer_size=1 << 20)
    elif path == "-" or path is None:
        raw = io.BufferedReader(sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer,
                                buffer_size=1 << 20)
    else:
        try:
            raw = open(path, "rb", buffering=1 << 20)
        except FileNotFoundError:
            raise InputNotFoundError("%s: no such file" % path) from None
        except IsADirectoryError:
            raise InputNotFoundError("%s: is a directory" % path) from None
        except PermissionError:
            raise InputNotFoundError("%s: permission denied" % path) from None
    head = raw.peek(6)[:6]
    for magic, opener in _MAGIC:
        if head.startswith(magic):
            # Decompressors leave a file object they were handed open; close
            # ours with them (but never stdin or the caller's object).
            owned = raw if isinstance(path, (str, bytes, os.PathLike)) and path != "-" else None
            return _Decompressed(opener(raw), owned)
    return raw


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
def atomic_output(path, mode="wb"):
    """Yield a file object whose content appears at ``path`` only if the block
    completes: it writes to a temporary name in the same directory and renames
    it over ``path`` at the end, so a failure never leaves a half-written file.
    ``-`` writes to stdout (no atomicity possible there)."""
    binary = "b" in mode
    if path == "-" or path is None:
        stream = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputError("%s: cannot write: %s" % (path, exc.strerror or exc)) from None
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
