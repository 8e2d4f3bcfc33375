"""Exceptions that carry their own exit status (sysexits.h values) and one-line message,
and the library's warnings."""
import os
import sys
import warnings

EX_USAGE = 64      # bad command line
EX_DATAERR = 65    # malformed input data or model file
EX_NOINPUT = 66    # an input file does not exist or cannot be read
EX_UNAVAILABLE = 69  # a service (here an optional package) is not available
EX_SOFTWARE = 70   # internal error
EX_IOERR = 74      # an output could not be written


EX_CLI_USAGE = 2    # what click uses for a bad command line; kept for options checked later


class HsvmWarning(UserWarning):
    """What the library warns a Python caller of (``warnings.warn``) where the
    command prints a notice of its own: a validation set that misses classes,
    probabilities from another path than the labels.  The ``hsvm`` command
    ignores these and prints its notices instead."""


def warn(message):
    """``warnings.warn(message, HsvmWarning)`` attributed to the first caller
    outside this package (the user's line, however deep the call)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, HsvmWarning, stacklevel=level)


class HsvmError(Exception):
    """Base class: ``str(err)`` is the one-line message, ``exit_code`` the status."""

    exit_code = 1


class OptionError(HsvmError, ValueError):
    """Options that do not fit together or a value out of range, found by the
    library rather than the command-line parser (so it is a ValueError to a
    Python caller and a bad command line, exit 2, to a shell).

    ``message`` says it in the command line's words (``--filter-k``, ``-C``);
    ``python``, when given, in the library's (``filter_k``, ``calibration=``):
    ``str(err)`` is then that, for a Python caller, and ``cli_message`` the
    command line's, which the ``hsvm`` command prints."""

    exit_code = EX_CLI_USAGE

    def __init__(self, message, *, python=None):
        super().__init__(message if python is None else python)
        self.cli_message = message


class InputFormatError(HsvmError, ValueError):
    """A malformed line in a data file: reported as ``FILE:LINE: reason``; a
    ValueError too, as scikit-learn's svmlight loader raises."""

    exit_code = EX_DATAERR

    def __init__(self, source, line, reason):
        self.source = source
        self.line = line
        self.reason = reason
        super().__init__("%s:%d: %s" % (source, line, reason))


class ModelFormatError(HsvmError, ValueError):
    """A model, hash-model or codes file that fails validation (a ValueError
    too: a file's contents, as numpy's loaders raise)."""

    exit_code = EX_DATAERR

    def __init__(self, source, reason):
        self.source = source
        self.reason = reason
        super().__init__("%s: %s" % (source, reason))


class DataError(HsvmError, ValueError):
    """Well-formed input that cannot serve its purpose (e.g. one class to train
    on, labels that are not integers); a ValueError too, as numpy and
    scikit-learn raise for such arrays."""

    exit_code = EX_DATAERR


class SampleError(DataError, ValueError):
    """Samples handed to the Python API that cannot be predicted (NaN, values
    beyond float32, the wrong shape or width); a ValueError too, as numpy and
    scikit-learn raise for such arrays."""


class ModelMismatchError(HsvmError, ValueError):
    """Two files that must belong together (model and hash model, model and data) do not
    (a ValueError too)."""

    exit_code = EX_DATAERR


class InputNotFoundError(HsvmError, OSError):
    """An input that does not exist, is a directory or may not be read (an
    OSError too, as open() raises: ``errno`` is not set)."""

    exit_code = EX_NOINPUT


def _where(line):
    return "" if line is None else " (line %d)" % line


class CorruptInputError(HsvmError, ValueError):
    """Compressed input (gzip, bz2, xz, zstd) whose decompression fails:
    ``FILE: corrupt gzip data near byte N (line L)``, or ``truncated`` when
    the compressed data ends early.  ``offset`` is how far into the
    compressed file the decompressor had read (it reads ahead, hence "near");
    ``line`` the text line the reader had reached, when known; ``trailing``:
    bytes after complete compressed data that do not start another stream
    (``gzip -t`` ignores them with a warning; hsvm refuses the file);
    ``detail``: why sound data cannot be read (a zstd dictionary)."""

    exit_code = EX_DATAERR

    def __init__(self, source, kind, offset, *, truncated=False, line=None, trailing=False, line_exact=True,
                 detail=None):
        self.source = source
        self.kind = kind
        self.offset = offset
        self.truncated = truncated
        self.trailing = trailing
        self.line = line
        self.line_exact = line_exact
        self.detail = detail
        # stdin cannot be decompressed again to find the line: the one given
        # is where the reader stood, and the data breaks off there or later
        where = _where(line) if line_exact or line is None else " (line %d or later)" % line
        if trailing:
            super().__init__("%s: trailing garbage after the %s data, near byte %d%s" % (source, kind, offset, where))
        elif detail:
            super().__init__("%s: unreadable %s data near byte %d%s: %s" % (source, kind, offset, where, detail))
        else:
            super().__init__("%s: %s %s data near byte %d%s" % (
                source, "truncated" if truncated else "corrupt", kind, offset, where))

    def located(self, source, line, *, exact=True):
        """The same error named by the reader that knows the file's name and
        line (``exact`` False: the line the reader had reached, a lower bound)."""
        return CorruptInputError(source, self.kind, self.offset, truncated=self.truncated, line=line,
                                 trailing=self.trailing, line_exact=exact, detail=self.detail)


class InputReadError(HsvmError, OSError):
    """An input that fails while being read (EIO on a bad disk or a network
    file system): ``FILE: read error: Input/output error (line L)``; an
    OSError too."""

    exit_code = EX_NOINPUT

    def __init__(self, source, reason, *, line=None):
        self.source = source
        self.reason = reason
        self.line = line
        super().__init__("%s: read error: %s%s" % (source, reason, _where(line)))

    def located(self, source, line):
        """The same error named with the reader's file and line."""
        return InputReadError(source, self.reason, line=line)


class OutputError(HsvmError, OSError):
    """An output that cannot be written (a full disk or device, a directory,
    a closed standard output, a binary file to a terminal); exit 74; an
    OSError too."""

    exit_code = EX_IOERR


def printable(text):
    """``text`` with every character that is not printable (C0 and C1
    controls, NUL, DEL, a byte-order mark, line and paragraph separators)
    written as a Python escape (``\\x00``, ``\\ufeff``), so that a message
    stays one readable line whatever bytes a file held.  Undecodable bytes
    carried as surrogates (``surrogateescape``) come out as ``\\xNN``."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
            continue
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append("\\x%02x" % (code - 0xDC00))
        elif code < 0x100:
            out.append("\\x%02x" % code)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    return "".join(out)
