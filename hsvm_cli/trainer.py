"""From an svmlight training file to a saved-ready OvoModel (the train-ovo job)."""
import numpy as np

from .container import file_sha256
from .errors import DataError
from .fileio import HashingReader, display_name, open_input
from .model import OvoModel, provenance
from .preprocess import apply_normalization
from .svmlight import load_svmlight
from .train import train_ovo


def read_training_file(path, *, zero_based=False):
    """Load a whole training file; returns (X, y, sha256 of the bytes as given)."""
    if path == "-":
        import sys
        hashing = HashingReader(sys.stdin.buffer)
        X, y = load_svmlight(open_input(hashing), zero_based=zero_based, name="<stdin>")
        return X, y, hashing.hexdigest()
    X, y = load_svmlight(path, zero_based=zero_based)
    return X, y, file_sha256(path)


def train_model(X, y, *, normalize="l2", C=1.0, solver="l2loss-dual", tol=None, per_class=None, bags=1,
                seed=0, jobs=1, progress=False, train_path=None, train_sha256=None):
    """Normalise, train every pair and wrap the result as an OvoModel."""
    Xn = apply_normalization(X.astype(np.float64), normalize, copy=True)
    t = train_ovo(Xn, y, C=C, solver=solver, tol=tol, per_class=per_class, bags=bags, seed=seed,
                  jobs=jobs, progress=progress)
    params = dict(t.params)
    params.update({"normalize": normalize})
    return OvoModel(classes=t.classes, pair_a=t.pair_a, pair_b=t.pair_b, W=t.W, b=t.b, bags=t.bags,
                    normalize=normalize, params=params,
                    provenance=provenance(train_path, train_sha256))


def train_model_from_file(path, *, zero_based=False, **kw):
    X, y, sha = read_training_file(path, zero_based=zero_based)
    n_classes = np.unique(y).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d"
                        % (display_name(path), n_classes))
    return train_model(X, y, train_path=display_name(path), train_sha256=sha, **kw)
