"""Fitting a kernel hash (KRSH, hashing/krsh.py) from a training file, as
``hsvm kernel-hash`` does: read the file once (its SHA-256 taken on the way),
fit, and turn every refusal into a one-line error naming the file (and the
line, for a negative feature given to the chi2 or intersection kernel)."""
from ..errors import DataError, InputFormatError
from ..hashing.krsh import KERNELS, NegativeFeatureError, _shown_value, fit_kernel_hash
from ..io.files import display_name
from ..io.svmlight import line_of_row
from ..models.provenance import provenance, record_zero_based
from .ovo import read_training_file


def negative_feature_error(exc, source, *, row_offset=0, zero_based=False, start_line=1):
    """The FILE:LINE error for a :class:`NegativeFeatureError` raised on rows
    read from ``source``: ``exc.row + row_offset`` data rows after the data
    line at or after ``start_line`` (a chunk's first line, say)."""
    feature = exc.feature - 1 if zero_based else exc.feature
    reason = "the %s kernel needs non-negative features: feature %d is %s" % (exc.kernel, feature,
                                                                            _shown_value(exc.value))
    return row_error(source, exc.row + row_offset, reason, start_line=start_line)


def overflow_error(exc, source, *, row_offset=0, start_line=1):
    """The FILE:LINE error for a :class:`~hsvm_cli.hashing.krsh.SubspaceOverflowError`
    raised on rows read from ``source``, as :func:`negative_feature_error`."""
    return row_error(source, exc.row + row_offset, exc.reason, start_line=start_line)


def row_error(source, row, reason, *, start_line=1):
    """FILE:LINE: ``reason`` for data row ``row`` (0-based) counted from the
    data line at or after ``start_line``; FILE: sample N when the line cannot
    be found again (stdin)."""
    name = display_name(source)
    line = line_of_row(source, row, start_line=start_line)
    if line is None:
        if row == 0 and start_line > 1:
            line = start_line
        else:
            return DataError("%s: sample %d%s: %s" % (name, row + 1, " after line %d" % start_line
                                                      if start_line > 1 else "", reason))
    return InputFormatError(name, line, reason)


def fit_kernel_hash_file(path, *, kernel, landmarks, bits, gamma="auto", degree=3, coef0=1.0, seed=0, tol=None,
                         zero_based=False, projection="gaussian"):
    """Fit a :class:`~hsvm_cli.hashing.krsh.KernelHash` on the svmlight file
    ``path`` (``-``: stdin; compressed input read transparently).  Arguments as
    :func:`~hsvm_cli.hashing.krsh.fit_kernel_hash`; ``tol`` None takes its
    default.  The training input's name and SHA-256 and the command line are
    recorded (``h.info["train_sha256"]``, ``h.provenance``).  Anything the
    data or the parameters cannot do is a :class:`~hsvm_cli.errors.DataError`
    (exit 65) naming the file; a negative feature for chi2 or intersection is
    ``FILE:LINE``."""
    name = display_name(path)
    if kernel not in KERNELS:
        raise DataError("unknown kernel %r (choose from %s)" % (kernel, ", ".join(KERNELS)))
    if isinstance(bits, int) and (bits <= 0 or bits % 64):
        raise DataError("--bits must be a positive multiple of 64 (whole code words), got %d" % bits)
    X, y, sha = read_training_file(path, zero_based=zero_based)
    if X.shape[0] == 0:
        raise DataError("%s: no samples to fit a kernel hash on" % name)
    if isinstance(landmarks, int) and landmarks > X.shape[0]:
        raise DataError("%s: --landmarks %d exceeds the %d training samples (landmarks are drawn from them)"
                        % (name, landmarks, X.shape[0]))
    kw = {} if tol is None else {"tol": tol}
    try:
        h = fit_kernel_hash(X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, landmarks=landmarks,
                            bits=bits, seed=seed, train_sha256=sha, projection=projection, **kw)
    except NegativeFeatureError as exc:
        raise negative_feature_error(exc, path, zero_based=zero_based) from None
    except ValueError as exc:
        raise DataError("%s: %s" % (name, exc)) from None
    h.provenance = record_zero_based(provenance(name, sha), zero_based)
    return h
