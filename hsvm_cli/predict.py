"""Prediction over streams of svmlight chunks: exact, or hash filter + exact refine."""
from dataclasses import dataclass

import numpy as np

from .exact import ExactScorer
from .preprocess import apply_normalization, densify_if_dense
from .ranking import best_class
from .timing import NullTimings


@dataclass
class PredictionBlock:
    y_true: np.ndarray      # labels read from the input (int64)
    labels: np.ndarray      # predicted labels (int64)
    votes: np.ndarray       # [n, K] int32 final vote counts (exact, or exact among the refined classes)
    confidence: np.ndarray  # [n, K] float64 tie-break term matching votes
    proba: np.ndarray = None  # [n, K] class probabilities when asked for (needs a calibration)


def prepare(normalize, X, *, timings=None):
    """Normalise a block as the model was trained (``normalize``: l2 or none), in
    float32; a sparse block dense enough for BLAS comes back as a dense array."""
    t = timings or NullTimings()
    with t.phase("normalise"):
        X = X.astype(np.float32, copy=False) if hasattr(X, "astype") else np.asarray(X, dtype=np.float32)
        return densify_if_dense(apply_normalization(X, normalize, copy=True))


def predict_exact(model, X, *, timings=None, scorer=None):
    """Exact OvO prediction of the rows of X (raw features, any width <= d)."""
    scorer = scorer or ExactScorer(model)
    Xn = prepare(model.normalize, X, timings=timings)
    votes, conf = scorer.votes(Xn, timings=timings)
    with (timings or NullTimings()).phase("vote"):
        labels = model.classes[best_class(votes, conf)]
    return labels, votes, conf


def iter_predict_exact(model, chunks, *, timings=None, calibration=None):
    """Exact prediction of an iterator of SvmChunk (see svmlight.iter_svmlight);
    with a calibration, also the coupled probabilities over all classes."""
    scorer = ExactScorer(model)
    for chunk in chunks:
        if calibration is None:
            labels, votes, conf = predict_exact(model, chunk.X, timings=timings, scorer=scorer)
            yield PredictionBlock(chunk.y, labels, votes, conf)
            continue
        from .calibration import exact_proba
        Xn = prepare(model.normalize, chunk.X, timings=timings)
        votes, conf, proba = exact_proba(model, calibration, Xn, scorer=scorer, timings=timings)
        # As LIBSVM's svm-predict -b 1: with probabilities, the most probable class.
        yield PredictionBlock(chunk.y, model.classes[np.argmax(proba, axis=1)], votes, conf, proba)
