"""The tools' tie rule: among equal values, the class that comes first in the
tool's own label order.

LIBSVM's ``svm_predict_values`` takes the first label with the most votes in
its label order (first appearance in its training file); LIBLINEAR's
``predict_values`` the first label with the largest score.  An imported model
keeps that order as ``tie_order`` (each sorted class's position in the tool's
order), and prediction applies it instead of hsvm's own rule (votes, then the
confidence term, then the lower label; :mod:`hsvm_cli.predict.ranking`) so that
labels are the tools' also on exact ties."""
import numpy as np

from .ranking import best_class

__all__ = ["first_max", "kept_winners", "winners"]


def first_max(values, tie_order, candidates=None):
    """Per row, the index of the best class: the largest value, equal values
    going to the lowest ``tie_order``.  ``candidates`` [n, k] (optional): the
    class indices the columns of ``values`` [n, k] belong to; the winner is
    then returned as a class index.  Returns int32 [n]."""
    values = np.asarray(values)
    tie = np.asarray(tie_order)
    ranks = tie[candidates] if candidates is not None else np.broadcast_to(tie, values.shape)
    top = values.max(axis=1, keepdims=True)
    big = np.iinfo(np.int64).max
    col = np.argmin(np.where(values == top, ranks.astype(np.int64), big), axis=1)
    if candidates is None:
        return col.astype(np.int32)
    return np.take_along_axis(np.asarray(candidates), col[:, None], axis=1)[:, 0].astype(np.int32)


def winners(model, votes, confidence):
    """The winning class index per row for ``model``'s rule: its ``tie_order``
    among equal votes when it has one (an imported LIBSVM model), else hsvm's
    :func:`~hsvm_cli.predict.ranking.best_class`.  Classes with negative votes
    (excluded by the filter) never win."""
    tie_order = getattr(model, "tie_order", None)
    if tie_order is None:
        return best_class(votes, confidence)
    return first_max(votes, tie_order)


def kept_winners(model, kept):
    """What :func:`winners` gives for the votes and confidences of
    :meth:`KeptVotes.full(-1) <hsvm_cli.predict.refine.KeptVotes.full>`,
    from the kept classes' own [n, k] numbers: the sorted kept classes are
    in class order, so the first best position is the first best class."""
    votes = np.where(kept.in_use(), kept.votes, -1)
    tie_order = getattr(model, "tie_order", None)
    if tie_order is not None:
        return first_max(votes, tie_order, candidates=kept.S)
    col = best_class(votes, kept.conf)
    return np.take_along_axis(kept.S, col[:, None].astype(np.int64), axis=1)[:, 0].astype(np.int32)
