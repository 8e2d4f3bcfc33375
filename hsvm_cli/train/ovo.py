"""Training a one-vs-one model from samples or from a training file: normalise
as asked, train every pair (train/liblinear.py), record parameters and
provenance."""
import os

import numpy as np
import scipy.sparse as sp

from ..errors import DataError, OptionError
from ..io.files import HashingReader, display_name, guarded_read, open_input, open_raw, read_raw
from ..io.svmlight import load_svmlight
from ..models.provenance import provenance, record_zero_based
from ..predict.samples import finite_samples
from ..preprocess import NORMALIZATIONS, normalized_float64
from ..support.arrays import is_int
from ..support.memory import check_allocation
from ..support.progress import StepBar
from .c_search import check_c_grid, choose_normalization, search_c
from .liblinear import train_pairs

# What --normalize auto compares, in order of preference among equal accuracies.
AUTO_NORMALIZATIONS = ("l2", "none")


def default_bias(Xn, normalize):
    """The constant feature B when the user does not give one: 1 for
    L2-normalised samples (LIBLINEAR's -B 1), else the root-mean-square norm
    of the nonzero samples (4 significant digits), so that the bias is as
    strongly regularised, relative to the weights, whatever the units of the
    features: with raw features of norm ~5 (omniglot's pixels) B = 1 would
    shrink the bias 25 times harder than with unit samples, which costs
    accuracy that LIBSVM (whose bias is not regularised) keeps."""
    if normalize == "l2":
        return 1.0
    sq = np.asarray(Xn.multiply(Xn).sum(axis=1) if sp.issparse(Xn) else np.einsum("ij,ij->i", Xn, Xn)).reshape(-1)
    sq = sq[sq > 0]
    return float("%.4g" % np.sqrt(sq.mean())) if sq.size else 1.0


def resolve_bias(Xn, normalize, bias):
    """The constant feature B to train with: ``bias`` (a positive number; 0
    or any negative number: no bias term, every b = 0, as LIBLINEAR's -B -1
    and train-ovo's -B), or :func:`default_bias` for None or "auto"."""
    if bias is None or (isinstance(bias, str) and bias == "auto"):
        return default_bias(Xn, normalize)
    try:
        bias = float(bias)
    except (TypeError, ValueError):
        raise OptionError("the bias feature must be a number (<= 0: no bias term) or 'auto', not %r"
                          % (bias,)) from None
    if not np.isfinite(bias):
        raise OptionError("the bias feature must be a finite number (<= 0: no bias term), not %r" % bias)
    return max(bias, 0.0)


def _refuse_c_beside_grid(C, c_grid):
    # as train-ovo refuses -c C with --c-grid: the grid's choice would replace C
    # (C = 1.0, the default, cannot be told from one given)
    if c_grid is not None and C not in ("auto", 1.0):
        raise OptionError("C=%r and c_grid both given: the search over c_grid chooses C" % (C,))


def cross_validate_ovo(X, y, *, C=1.0, c_grid=None, folds=5, normalize="l2", solver="l2loss-dual", tol=None,
                       seed=0, jobs=1, progress=False, bias="auto", class_weight=None, _normalized=None,
                       _spend_X=False):
    """F-fold cross-validated accuracy of one-vs-one SVMs on ``X``, ``y``
    (normalised as ``normalize`` says first): at ``C`` (a number), or the
    search of ``C="auto"`` (the default doubling grid) or of the values of
    ``c_grid``.  Returns a :class:`~hsvm_cli.train.c_search.CSearch`
    (``.best_C``, ``.steps``, ``.table()``).  ``progress``: a tqdm bar on
    stderr.  ``class_weight``: each class's C multiplier in every fold's
    pairs (:mod:`hsvm_cli.train.class_weight`).  See
    :mod:`hsvm_cli.train.c_search`.

    ``normalize="auto"`` cross-validates with each of ``l2`` and ``none`` (each
    with its own default bias unless ``bias`` is a number) and returns the
    search whose chosen C has the higher averaged accuracy (``l2``, the method's
    own, when equal); its ``.normalize`` names it and ``.compared`` holds
    both (:func:`~hsvm_cli.train.c_search.choose_normalization`)."""
    _refuse_c_beside_grid(C, c_grid)
    if c_grid is not None:
        c_grid = check_c_grid(c_grid)       # a generator once, for both normalisations of "auto"
    X = finite_samples(X)       # nested lists too, as train_ovo takes them
    if normalize == "auto":
        return choose_normalization({
            name: cross_validate_ovo(X, y, C=C, c_grid=c_grid, folds=folds, normalize=name, solver=solver, tol=tol,
                                     seed=seed, jobs=jobs, progress=progress, bias=bias, class_weight=class_weight)
            for name in AUTO_NORMALIZATIONS})
    if c_grid is not None:
        grid = c_grid
    elif isinstance(C, str):
        if C != "auto":
            raise OptionError("C must be a positive number or 'auto', not %r" % C)
        grid = None
    else:
        grid = [C]
    # _normalized: train_ovo's own normalised copy of X (read only here), not a
    # second one; _spend_X: X is cross_validate_file's, normalised where it lies
    Xn = normalized_float64(X, normalize, in_place=_spend_X) if _normalized is None else _normalized
    with StepBar(progress, unit="fold", desc="cross-validation", fractional=True) as tick:
        return search_c(Xn, y, grid=grid, folds=folds, seed=seed, solver=solver, tol=tol, jobs=jobs, progress=tick,
                        bias=resolve_bias(Xn, normalize, bias), fixed=c_grid is None and not isinstance(C, str),
                        class_weight=class_weight)


def train_ovo(X, y, *, C=1.0, normalize="l2", solver="l2loss-dual", tol=None, per_class=None, bags=1,
              seed=0, jobs=1, progress=False, train_path=None, train_sha256=None, c_grid=None, cv_folds=None,
              bias="auto", pairs=None, class_weight=None, _spend_X=False):
    """Train a one-vs-one linear SVM model on samples ``X`` (CSR matrix or
    dense array [n, d]) with integer labels ``y``.

    ``normalize``: ``"l2"`` (default; the samples are scaled to unit length
    first, as hashing needs, and prediction does the same), ``"none"``, or
    ``"auto"`` (with a search: the one cross-validation prefers,
    :func:`cross_validate_ovo`).
    ``C``: the cost parameter, or ``"auto"``: chosen by ``cv_folds``-fold
    cross-validation (default 5) on the default grid, or on the values of
    ``c_grid`` (:func:`cross_validate_ovo`); with a number and ``cv_folds``
    the cross-validated accuracy at C is recorded too.  The search's table
    goes to ``params["cross_validation"]`` (and ``training.search``).
    ``bias``: the constant feature B (LIBLINEAR's -B), "auto" for
    :func:`default_bias`.  ``solver`` (``l2loss-dual``, ``l2loss-primal``,
    ``l1loss-dual``), ``tol``, ``per_class``, ``bags``, ``seed``, ``jobs``,
    ``progress``: see :func:`hsvm_cli.train.liblinear.train_pairs`.  ``train_path`` and
    ``train_sha256`` name the training input in the model's provenance.
    ``pairs``: train only these canonical pair indices (a block of
    :mod:`hsvm_cli.train.pair_blocks`; the model then holds only them).
    ``class_weight``: None, ``"balanced"`` or a mapping of label to weight,
    each class's C multiplier in the training and the search (LIBLINEAR's
    ``-wi``; :mod:`hsvm_cli.train.class_weight`).
    Returns an :class:`~hsvm_cli.models.ovo.OvoModel` (save it with
    :func:`~hsvm_cli.models.ovo.save_model`)."""
    search = None
    if isinstance(X, (str, bytes, os.PathLike)):
        raise TypeError("X is a file name (%r): train_ovo takes arrays; train_ovo_file(path) reads an svmlight file"
                        % (os.fspath(X),))
    _refuse_c_beside_grid(C, c_grid)
    if c_grid is not None:
        c_grid = check_c_grid(c_grid)       # before the samples' normalisation (a generator: once)
    if cv_folds is not None and not (is_int(cv_folds) and cv_folds >= 2):
        raise OptionError("cv_folds must be an integer of at least 2, got %r" % (cv_folds,))
    if normalize not in NORMALIZATIONS + ("auto",):
        raise OptionError("normalize must be one of %s, not %r" % (", ".join(NORMALIZATIONS + ("auto",)), normalize))
    X = finite_samples(X)     # nested lists too, as scikit-learn takes them; duplicate entries summed
    if normalize == "auto":
        if not (C == "auto" or c_grid is not None or cv_folds is not None):
            raise OptionError("normalize 'auto' is chosen by cross-validation: it needs C 'auto', c_grid or "
                              "cv_folds")
    else:
        # _spend_X: X is train_ovo_file's, read for this call alone
        Xn = normalized_float64(X, normalize, in_place=_spend_X)
        bias = resolve_bias(Xn, normalize, bias)
    if C == "auto" or c_grid is not None or cv_folds is not None:
        if pairs is not None:
            # Every block would repeat the whole search; and the table's times
            # would make the parts differ from the single-process model.
            raise OptionError("cross-validation (-c auto, --c-grid, --cv) needs every pair: choose C first "
                              "(train-ovo --cv F -c auto without -o), then train the blocks with -c C")
        _refuse_resampling(bags, per_class)
        search = cross_validate_ovo(X, y, C=C, c_grid=c_grid, folds=cv_folds or 5, normalize=normalize,
                                    solver=solver, tol=tol, seed=seed, jobs=jobs, progress=progress, bias=bias,
                                    class_weight=class_weight, _normalized=None if normalize == "auto" else Xn)
        C = search.best_C
        if normalize == "auto":
            normalize = search.normalize
            Xn = normalized_float64(X, normalize, in_place=_spend_X)
            bias = resolve_bias(Xn, normalize, bias)
    elif isinstance(C, str):
        raise OptionError("C must be a positive number or 'auto', not %r" % C)
    model = train_pairs(Xn, y, C=C, solver=solver, tol=tol, per_class=per_class, bags=bags, seed=seed,
                        jobs=jobs, progress=progress, bias=bias, pairs=pairs, class_weight=class_weight)
    model.normalize = normalize
    model.params = dict(model.params, normalize=normalize)
    if search is not None:
        model.params["cross_validation"] = search.record()
        model.training.search = search
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
        X, y = load_svmlight(open_input(hashing, name=name), zero_based=zero_based, name=name,
                             _rescan=None if owned is None else path)
        # Whatever the parser did not need (nothing, for a well-formed file)
        # still belongs to the input's digest.
        def drain():
            while hashing.read(1 << 20):
                pass
        guarded_read(drain, name)
    finally:
        if owned is not None:
            owned.close()
    return X, y, hashing.hexdigest()


def _read_two_classes(path, zero_based):
    X, y, sha = read_training_file(path, zero_based=zero_based)
    n_classes = np.unique(y).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d"
                        % (display_name(path), n_classes))
    return X, y, sha


def train_ovo_file(path, *, zero_based=False, **kw):
    """What ``hsvm train-ovo`` does: read the svmlight file ``path`` (``-``:
    stdin; gzip/bz2/xz/zstd transparently) once and train on it; keyword arguments
    as :func:`train_ovo`.  Refuses input with fewer than two classes."""
    X, y, sha = _read_two_classes(path, zero_based)
    # X read for this model alone: normalised in its own memory (94 MB less
    # at the peak for fashion-mnist-20k)
    model = train_ovo(X, y, train_path=display_name(path), train_sha256=sha, _spend_X=True, **kw)
    record_zero_based(model.provenance, zero_based)
    return model


def _refuse_resampling(bags, per_class):
    if bags != 1 or per_class is not None:
        raise OptionError("cross-validation (-c auto, --c-grid, --cv) trains each pair on all its rows: "
                          "it does not combine with --bags or --per-class",
                          python="cross-validation (C='auto', c_grid, cv_folds) trains each pair on all its rows: "
                                 "it does not combine with bags or per_class")


def cross_validate_file(path, *, zero_based=False, bags=1, per_class=None, **kw):
    """What ``hsvm train-ovo --cv F`` without ``-o`` does (as ``svm-train
    -v``): read ``path`` once and cross-validate (:func:`cross_validate_ovo`).
    ``bags`` and ``per_class`` are refused as :func:`train_ovo` refuses them."""
    _refuse_resampling(bags, per_class)
    X, y, _ = _read_two_classes(path, zero_based)
    return cross_validate_ovo(X, y, _spend_X=True, **kw)


def _read_training_codes(path, bits):
    from ..models.codes import read_codes
    codes = read_codes(path)
    name = display_name(path)
    if codes.kernel_hash_sha256 is None:
        made_by = "a learned circulant hash" if codes.meta.get("circulant_hash_sha256") else "a hash model (.hbm)"
        raise DataError("%s: codes of %s; train-ovo --codes trains on kernel hash codes (hash-data -H "
                        "KERNEL.khm, see hsvm kernel-hash)" % (name, made_by))
    n_classes = np.unique(codes.labels).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d" % (name, n_classes))
    if bits is not None and (bits <= 0 or bits % 64 or bits > codes.bits):
        raise OptionError("%s: --bits must be a multiple of 64 up to the codes' %d, got %d" % (name, codes.bits, bits))
    return codes, name


# Bytes per (sample, bit) the cross-validation of codes holds at its peak: the
# +-1/sqrt(k) features as float32 and float64, their CSR copy (value and index,
# made through int64 index pairs), that copy in fold order beside it, and the
# solver's rows (measured 46-60 bytes on digits and reuters-r52 codes).
_CODES_CV_BYTES = 64


def cross_validate_codes(codes, labels, *, bits=None, solver="l2loss-dual", **kw):
    """:func:`cross_validate_ovo` of the packed codes' features as
    :func:`~hsvm_cli.train.bits_solver.train_ovo_codes` reads them: the bits as
    +-1/sqrt(bits), unit length already (``normalize="none"``), with the bias
    feature 1 -- the problem the bits solver solves, so the chosen C is its
    C.  The features are expanded for it (up to ``_CODES_CV_BYTES`` a bit
    and sample), where training reads the packed words in place."""
    from .bits_solver import BITS_SOLVERS, _check_codes, expand_codes
    if solver not in BITS_SOLVERS:
        raise OptionError("training on codes takes a dual solver: %s" % ", ".join(sorted(BITS_SOLVERS)))
    for name in ("normalize", "bias"):
        if name in kw:
            raise OptionError("codes are the features as the bits solver reads them: no %s" % name)
    codes, k = _check_codes(codes, bits)
    check_allocation(int(codes.shape[0]) * k * _CODES_CV_BYTES,
                     "the cross-validation of %d codes x %d bits (their bits expanded to features)"
                     % (codes.shape[0], k))
    return cross_validate_ovo(expand_codes(codes, k), labels, normalize="none", bias=1.0, solver=solver, **kw)


def cross_validate_codes_file(path, *, bits=None, bags=1, per_class=None, **kw):
    """What ``hsvm train-ovo --codes CODES --cv F`` (or ``-c auto``) without
    ``-o`` does: :func:`cross_validate_codes` of the codes file ``path``."""
    _refuse_resampling(bags, per_class)
    codes, _ = _read_training_codes(path, bits)
    return cross_validate_codes(codes.codes, codes.labels, bits=bits, **kw)


def train_ovo_codes_file(path, *, bits=None, C=1.0, c_grid=None, cv_folds=None, **kw):
    """What ``hsvm train-ovo --codes`` does: train the one-vs-one model on the
    packed bits of the ``hsvm-codes`` file ``path`` (from ``hash-data``; read
    in place, never expanded), with the dual coordinate descent of
    :func:`~hsvm_cli.train.bits_solver.train_ovo_codes` (keyword arguments as
    there).  The model's features are the bits as +-1/sqrt(bits); it records
    the digest of the kernel hash that made the codes, so that prediction can
    insist on the same features.  Codes of a hash model or a learned circulant
    hash are refused: prediction could not make them from raw samples.
    ``C="auto"``, ``c_grid`` and ``cv_folds`` choose C (or report the
    accuracy at C) by :func:`cross_validate_codes` first, recorded as
    :func:`train_ovo` records its search."""
    from .bits_solver import train_ovo_codes
    _refuse_c_beside_grid(C, c_grid)
    codes, name = _read_training_codes(path, bits)
    search = None
    if C == "auto" or c_grid is not None or cv_folds is not None:
        _refuse_resampling(kw.get("bags", 1), kw.get("per_class"))
        search = cross_validate_codes(codes.codes, codes.labels, bits=bits, C=C, c_grid=c_grid,
                                      folds=cv_folds or 5, solver=kw.get("solver", "l2loss-dual"),
                                      tol=kw.get("tol"), seed=kw.get("seed", 0), jobs=kw.get("jobs", 1),
                                      progress=kw.get("progress", False), class_weight=kw.get("class_weight"))
        C = search.best_C
    elif isinstance(C, str):
        raise OptionError("C must be a positive number or 'auto', not %r" % C)
    model = train_ovo_codes(codes.codes, codes.labels, bits=bits, C=C, **kw)
    if search is not None:
        model.params = dict(model.params, cross_validation=search.record())
        model.training.search = search
    source = {key: codes.meta[key] for key in ("kernel_hash_sha256", "kernel") if key in codes.meta}
    source["input_features"] = int(codes.meta["n_features"])
    model.params = dict(model.params, codes=source)
    model.provenance = provenance(name, _file_sha256(path))
    return model


def _file_sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open_raw(path) as fh:
        while True:
            block = read_raw(fh, 1 << 22, path)
            if not block:
                return h.hexdigest()
            h.update(block)
