"""Exceptions that carry their own exit status (sysexits.h values) and one-line message."""

EX_USAGE = 64      # bad command line
EX_DATAERR = 65    # malformed input data or model file
EX_NOINPUT = 66    # an input file does not exist or cannot be read
EX_UNAVAILABLE = 69  # a service (here an optional package) is not available
EX_SOFTWARE = 70   # internal error
EX_IOERR = 74      # an output could not be written


EX_CLI_USAGE = 2    # what click uses for a bad command line; kept for options checked later


class HsvmError(Exception):
    """Base class: ``str(err)`` is the one-line message, ``exit_code`` the status."""

    exit_code = 1


class OptionError(HsvmError, ValueError):
    """Options that do not fit together or a value out of range, found by the
    library rather than the command-line parser (so it is a ValueError to a
    Python caller and a bad command line, exit 2, to a shell)."""

    exit_code = EX_CLI_USAGE


class InputFormatError(HsvmError):
    """A malformed line in a data file: reported as ``FILE:LINE: reason``."""

    exit_code = EX_DATAERR

    def __init__(self, source, line, reason):
        self.source = source
        self.line = line
        self.reason = reason
        super().__init__("%s:%d: %s" % (source, line, reason))


class ModelFormatError(HsvmError):
    """A model, hash-model or codes file that fails validation."""

    exit_code = EX_DATAERR

    def __init__(self, source, reason):
        self.source = source
        self.reason = reason
        super().__init__("%s: %s" % (source, reason))


class DataError(HsvmError):
    """Well-formed input that cannot serve its purpose (e.g. one class to train on)."""

    exit_code = EX_DATAERR


class ModelMismatchError(HsvmError):
    """Two files that must belong together (model and hash model, model and data) do not."""

    exit_code = EX_DATAERR


class InputNotFoundError(HsvmError):
    exit_code = EX_NOINPUT


class OutputError(HsvmError):
    exit_code = EX_IOERR
