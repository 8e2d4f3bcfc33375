"""hsvm: apply very many one-vs-one linear SVMs cheaply with hashing.

Everything the ``hsvm`` command does is a call here::

    from hsvm_cli import load_svmlight, train_ovo, hash_model, Predictor

    X, y = load_svmlight("train.svm")
    model = train_ovo(X, y, C=1.0, seed=0)          # an OvoModel
    hm = hash_model(model, bits=256)                 # a HashModel
    labels = Predictor(model, hm, filter_k=10).predict(Xt)

Reading: :func:`load_svmlight`, :func:`iter_svmlight`, :func:`write_svmlight`.
Training: :func:`train_ovo` (``C="auto"``: chosen by cross-validation),
:func:`train_ovo_file`, :func:`cross_validate_ovo`, :func:`search_c`.  Kernel SVMs
(Hash-SVM): :func:`fit_kernel_hash` (:func:`fit_kernel_hash_file`) gives a
:class:`KernelHash` (:func:`save_kernel_hash`, :func:`load_kernel_hash`) whose
codes :func:`train_ovo_codes` (``train_ovo_codes(h.codes(X), y, kernel_hash=h)``;
:func:`train_ovo_codes_file`; C chosen on them by :func:`cross_validate_codes`)
trains on, and ``Predictor(model, kernel_hash=h)`` applies to raw samples.  Circulant hashing:
``hash_model(model, projection="circulant")`` (a :class:`CirculantProjection`);
learned circulant hashes :func:`fit_circulant_hash` (:func:`fit_circulant_file`) give a
:class:`LearnedCirculantHash` (:func:`save_circulant_hash`, :func:`load_circulant_hash`),
whose codes :func:`hash_data` writes.  Models: :func:`load_model`,
:func:`save_model`, :func:`hash_model`, :func:`load_hash_model`,
:func:`save_hash_model`, :func:`hash_data`, :func:`read_codes`; LIBSVM and
LIBLINEAR models: :func:`import_model`, :func:`imported_calibration`; one-vs-rest
models: :class:`OvrModel`, :func:`load_ovr_model`, :func:`save_ovr_model`,
:func:`hash_ovr_model`, :func:`load_ovr_hash_model`, :func:`save_ovr_hash_model`;
either kind: :func:`load_any_model`, :func:`load_any_hash_model`.  Prediction:
:class:`Predictor` (exact, filter, filter-and-refine, probabilities;
:meth:`Predictor.from_calibration`), :class:`OvrPredictor` (LIBLINEAR logistic
regression's probabilities: :func:`logistic_predictor`).  Probabilities and the accuracy-speed
setting: :func:`calibrate`, :func:`load_calibration`, :func:`save_calibration`.
scikit-learn estimator (needs scikit-learn): :class:`HashedOvoSVC`.  What a file
holds (``hsvm info``): :func:`describe`.
Evaluation: :func:`evaluate`.  Cluster runs (docs/cluster.md): :func:`parse_shard`,
:func:`open_shard` and the ``shard=`` of the readers; :func:`train_pair_block`,
:func:`save_part`, :func:`read_part`, :func:`merge_models`.  Errors: :class:`HsvmError` and its kinds, each
with the exit status the command uses; warnings: :class:`HsvmWarning`.

Names are imported on first use, so ``import hsvm_cli`` stays cheap -- and
imports nothing itself: the ``hsvm`` command loads this package before it
installs its signal handlers (a Ctrl-C while importlib's package loaded
printed a traceback)."""
__version__ = "0.1.0"

_API = {
    "load_svmlight": "io.svmlight", "iter_svmlight": "io.svmlight", "write_svmlight": "io.svmlight",
    "SvmChunk": "io.svmlight",
    "train_ovo": "train.ovo", "train_ovo_file": "train.ovo", "train_ovo_codes_file": "train.ovo",
    "cross_validate_ovo": "train.ovo", "cross_validate_codes": "train.ovo",
    "train_ovo_codes": "train.bits_solver", "expand_codes": "train.bits_solver",
    "KernelHash": "hashing.krsh", "fit_kernel_hash": "hashing.krsh", "fit_kernel_hash_file": "train.kernel_hash",
    "load_kernel_hash": "models.kernel_hash", "save_kernel_hash": "models.kernel_hash",
    "CirculantProjection": "hashing.circulant", "LearnedCirculantHash": "models.circulant_hash",
    "load_circulant_hash": "models.circulant_hash", "save_circulant_hash": "models.circulant_hash",
    "fit_circulant_hash": "train.circulant_fit", "fit_circulant_file": "train.circulant_fit",
    "search_c": "train.c_search", "CSearch": "train.c_search",
    "import_model": "models.imported", "ImportedModel": "models.imported",
    "imported_calibration": "models.imported",
    "OvrModel": "models.ovr", "load_ovr_model": "models.ovr", "save_ovr_model": "models.ovr",
    "OvrHashModel": "models.ovr", "hash_ovr_model": "models.ovr", "load_ovr_hash_model": "models.ovr",
    "save_ovr_hash_model": "models.ovr",
    "load_any_model": "models.loading", "load_any_hash_model": "models.loading",
    "OvrPredictor": "predict.ovr", "logistic_predictor": "predict.logistic",
    "OvoModel": "models.ovo", "load_model": "models.ovo", "save_model": "models.ovo",
    "HashModel": "models.hashed", "hash_model": "models.hashed", "load_hash_model": "models.hashed",
    "save_hash_model": "models.hashed",
    "hash_data": "models.codes", "read_codes": "models.codes",
    "Calibration": "models.calibration", "Setting": "models.calibration",
    "load_calibration": "models.calibration", "save_calibration": "models.calibration",
    "Predictor": "predict.predictor", "Prediction": "predict.predictor",
    "HashedOvoSVC": "estimator",
    "describe": "models.inspect", "FileInfo": "models.inspect",
    "calibrate": "tune", "format_grid": "tune",
    "evaluate": "evaluation.file_report", "Evaluation": "evaluation.file_report",
    "parse_shard": "io.shard", "open_shard": "io.shard", "Shard": "io.shard", "ShardError": "io.shard",
    "train_pair_block": "train.pair_blocks", "save_part": "models.parts", "read_part": "models.parts",
    "merge_models": "train.merge",
    "HsvmError": "errors", "HsvmWarning": "errors", "InputFormatError": "errors", "ModelFormatError": "errors",
    "DataError": "errors",
    "ModelMismatchError": "errors", "InputNotFoundError": "errors", "OutputError": "errors",
    "OptionError": "errors", "CorruptInputError": "errors", "InputReadError": "errors", "SampleError": "errors",
}

__all__ = sorted(_API) + ["__version__"]


def __getattr__(name):
    try:
        module = _API[name]
    except KeyError:
        raise AttributeError("module %r has no attribute %r" % (__name__, name)) from None
    import importlib
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_API))
