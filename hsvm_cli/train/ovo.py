"""Training a one-vs-one model from samples or from a training file: normalise
as asked, train every pair (train/liblinear.py), record parameters and
provenance."""
import numpy as np

from ..errors import DataError, InputReadError
from ..io.files import HashingReader, display_name, open_input, open_raw
from ..io.svmlight import load_svmlight
from ..models.provenance import provenance
from ..preprocess import apply_normalization
from .liblinear import train_pairs


def train_ovo(X, y, *, C=1.0, normalize="l2", solver="l2loss-dual", tol=None, per_class=None, bags=1,
              seed=0, jobs=1, progress=False, train_path=None, train_sha256=None, pairs=None):
    """Train a one-vs-one linear SVM model on samples ``X`` (CSR matrix or
    dense array [n, d]) with integer labels ``y``.

    ``normalize``: ``"l2"`` (default; the samples are scaled to unit length
    first, as hashing needs, and prediction does the same) or ``"none"``.
    ``C``, ``solver`` (``l2loss-dual``, ``l2loss-primal``, ``l1loss-dual``),
    ``tol``, ``per_class``, ``bags``, ``seed``, ``jobs``, ``progress``: see
    :func:`hsvm_cli.train.liblinear.train_pairs`.  ``train_path`` and
    ``train_sha256`` name the training input in the model's provenance.
    ``pairs``: train only these canonical pair indices (a block of
    :mod:`hsvm_cli.train.pair_blocks`; the model then holds only them).
    Returns an :class:`~hsvm_cli.models.ovo.OvoModel` (save it with
    :func:`~hsvm_cli.models.ovo.save_model`)."""
    Xn = apply_normalization(X.astype(np.float64), normalize, copy=True)
    model = train_pairs(Xn, y, C=C, solver=solver, tol=tol, per_class=per_class, bags=bags, seed=seed,
                        jobs=jobs, progress=progress, pairs=pairs)
    model.normalize = normalize
    model.params = dict(model.params, normalize=normalize)
    model.provenance = provenance(train_path, train_sha256)
    return model


def read_training_file(path, *, zero_based=False):
    """Read a whole training file once, hashing its bytes as they stream by (so
    a FIFO or a process substitution works and the recorded digest is of what
    was trained on); returns (X, y, SHA-256 of the bytes as given)."""
    if path == "-" or path is None:
        import sys
        raw = sys.stdin.buffer
        name = "<stdin>"
        owned = None
    else:
        name = display_name(path)
        raw = open_raw(path)
        owned = raw
    try:
        hashing = HashingReader(raw)
        X, y = load_svmlight(open_input(hashing, name=name), zero_based=zero_based, name=name)
        # Whatever the parser did not need (nothing, for a well-formed file)
        # still belongs to the input's digest.
        try:
            while hashing.read(1 << 20):
                pass
        except OSError as exc:
            raise InputReadError(name, exc.strerror or str(exc)) from None
    finally:
        if owned is not None:
            owned.close()
    return X, y, hashing.hexdigest()


def train_ovo_file(path, *, zero_based=False, **kw):
    """What ``hsvm train-ovo`` does: read the svmlight file ``path`` (``-``:
    stdin; gzip/bz2/xz transparently) once and train on it; keyword arguments
    as :func:`train_ovo`.  Refuses input with fewer than two classes."""
    X, y, sha = read_training_file(path, zero_based=zero_based)
    n_classes = np.unique(y).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d"
                        % (display_name(path), n_classes))
    return train_ovo(X, y, train_path=display_name(path), train_sha256=sha, **kw)


def train_ovo_codes_file(path, *, bits=None, **kw):
    """What ``hsvm train-ovo --codes`` does: train the one-vs-one model on the
    packed bits of the ``hsvm-codes`` file ``path`` (from ``hash-data``; read
    in place, never expanded), with the dual coordinate descent of
    :func:`~hsvm_cli.train.bits_solver.train_ovo_codes` (keyword arguments as
    there).  The model's features are the bits as +-1/sqrt(bits); it records
    the digest of the kernel hash (or hash model) that made the codes, so that
    prediction can insist on the same features."""
    from ..models.codes import read_codes
    from .bits_solver import train_ovo_codes
    codes = read_codes(path)
    name = display_name(path)
    n_classes = np.unique(codes.labels).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d" % (name, n_classes))
    if bits is not None and (bits <= 0 or bits % 64 or bits > codes.bits):
        raise DataError("%s: --bits must be a multiple of 64 up to the codes' %d, got %d" % (name, codes.bits, bits))
    model = train_ovo_codes(codes.codes, codes.labels, bits=bits, **kw)
    source = {key: codes.meta[key] for key in ("kernel_hash_sha256", "kernel", "hash_model_sha256")
              if key in codes.meta}
    source["input_features"] = int(codes.meta["n_features"])
    model.params = dict(model.params, codes=source)
    model.provenance = provenance(name, _file_sha256(path))
    return model


def _file_sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open_raw(path) as fh:
        while True:
            block = fh.read(1 << 22)
            if not block:
                return h.hexdigest()
            h.update(block)
