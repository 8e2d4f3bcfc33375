"""The labels of many refines of one first stage from one set of exact
decisions: what ``calibrate`` needs to score every k, threshold and rule of a
first stage on the whole validation set.

A first stage ranks the classes of each sample once; a refine keeps some of
them (the top k, or those above a probability threshold) and lets the exact
classifiers among the kept classes decide, by max-wins votes or a decision
DAG.  Per sample, the kept classes of every setting lie in the union U of
them all (for one ranking: the top max-k, plus threshold classes further
down), so every decision any setting asks for is one of the |U|(|U|-1)/2
pairs of U.  Those cells are computed once, by the refine step's own sampled
product (:func:`hsvm_cli.predict.refine.refine_decisions`: the same float32
value for a (sample, classifier) cell whatever else is computed with it), and
each setting reads its cells from them:

- max-wins votes count the pairs of the setting's sorted kept classes in the
  same order through the same native vote kernel as the refine step
  (:meth:`~hsvm_cli.predict.refine.RefinedPairs.votes`), so the votes and
  confidences are the refine's bit for bit;
- a decision DAG walks the class-ordered list as native/dag.c does (the pair
  (first, last) decided by native/pair_rule.h's rule, the loser leaving),
  and native/dag.c computes the same decision values (dot32 + bias).

A setting whose refine would score every classifier instead
(:func:`~hsvm_cli.predict.refine.dense_is_cheaper`: BLAS values, other bits)
or that keeps every class is not shared: ``calibrate`` predicts it directly."""
import numpy as np

from ..models.pairs import canonical_pair_id, canonical_pairs
from ..support.timing import NullTimings
from .dag import candidate_lists
from .refine import RefinedPairs, dense_is_cheaper, refine_decisions, sorted_kept
from .ties import winners

__all__ = ["shares_refine", "shared_refine_labels"]


def shares_refine(predictor):
    """Whether :func:`shared_refine_labels` gives ``predictor``'s labels: a
    first stage with an exact refine of fewer than all classes whose cells
    come from the sampled product (never from scoring every classifier)."""
    m = predictor.model
    if predictor.filter is None or not predictor.refine or predictor.scorer is not None:
        return False
    return not dense_is_cheaper(predictor.k, m)


def shared_refine_labels(predictors, Xn, votes, margins, *, max_cells=1 << 21, threads=1):
    """Class indices [n] and refined classes per row [n] of every predictor
    (each :func:`shares_refine`, all of one model and first stage) on the
    prepared samples ``Xn`` whose first-stage ranking is ``votes``,
    ``margins`` [n, K] (the filter's, or zero votes and class scores), as
    ``predictor.predict_block(X, filter_votes=(votes, margins))`` gives
    them.  The union of the kept classes' pairs is computed for blocks of
    rows of at most ``max_cells`` cells (at least 64 rows)."""
    if not predictors:
        return []
    model = predictors[0].model
    lookup = predictors[0].lookup
    for p in predictors:
        if p.model is not model or not shares_refine(p):
            raise ValueError("every predictor must share the model and a sampled refine")
    n, K = votes.shape
    # Each setting's kept classes (best first) and entries in use, for all rows.
    keeps = [p._keep(votes, margins, False, NullTimings())[:2] for p in predictors]
    width = _union_width(keeps, n, K)
    rows = max(64, max_cells // max(1, width * (width - 1) // 2 * model.bags))
    labels = [np.empty(n, dtype=np.int64) for _ in predictors]
    refined = [np.empty(n, dtype=np.int64) for _ in predictors]
    for s in range(0, n, rows):
        e = min(n, s + rows)
        block = [(kept[s:e], None if valid is None else valid[s:e]) for kept, valid in keeps]
        base_kept, base_valid = _union(block, e - s, K)
        base = refine_decisions(model, Xn[s:e], base_kept, lookup=lookup, valid=base_valid, threads=threads)
        pos = np.full((e - s, K), -1, dtype=np.int64)
        r_idx, c_idx = np.nonzero(np.arange(base.S.shape[1])[None, :] < base.nvalid[:, None])
        pos[r_idx, base.S[r_idx, c_idx]] = c_idx
        for i, (p, (kept, valid)) in enumerate(zip(predictors, block)):
            if p.dag is not None:
                labels[i][s:e] = _dag_walk(base, pos, candidate_lists(kept, order="class", valid=valid))
                refined[i][s:e] = kept.shape[1] if valid is None else valid.sum(axis=1)
            else:
                sub = _sub_pairs(base, pos, kept, valid)
                v, conf = sub.votes(K)
                # Only kept classes compete for the label (as Predictor._predict_hashed).
                mask = np.zeros(v.shape, dtype=bool)
                np.put_along_axis(mask, kept, True if valid is None else valid, axis=1)
                labels[i][s:e] = winners(model, np.where(mask, v, -1), conf)
                refined[i][s:e] = sub.nvalid
    return list(zip(labels, refined))


def _union_width(keeps, n, K, chunk=None):
    """The largest number of classes any row keeps over all settings."""
    chunk = chunk or max(1, (1 << 22) // max(1, K))
    width = 1
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        mark = _marks([(kept[s:e], None if valid is None else valid[s:e]) for kept, valid in keeps], e - s, K)
        width = max(width, int(mark.sum(axis=1).max()))
    return width


def _marks(block, rows, K):
    mark = np.zeros((rows, K), dtype=bool)
    for kept, valid in block:
        if valid is None:
            np.put_along_axis(mark, kept.astype(np.int64), True, axis=1)
        else:
            r, c = np.nonzero(valid)
            mark[r, kept[r, c]] = True
    return mark


def _union(block, rows, K):
    """Each row's union of kept classes in class order [rows, w], and which
    entries are in use (None: all)."""
    mark = _marks(block, rows, K)
    count = mark.sum(axis=1)
    w = int(count.max())
    order = np.argsort(~mark, axis=1, kind="stable")[:, :w]      # marked classes first, in class order
    valid = np.arange(w)[None, :] < count[:, None]
    return order, (None if valid.all() else valid)


def _sub_pairs(base, pos, kept, valid):
    """The :class:`~hsvm_cli.predict.refine.RefinedPairs` that
    ``refine_decisions`` gives for ``kept``/``valid`` (same sorted classes,
    pairs, mask and orientation), its values read from ``base``'s cells."""
    n, w = kept.shape
    wb = base.S.shape[1]
    S, nvalid = sorted_kept(kept, valid)
    if w == wb and np.array_equal(S, base.S) and np.array_equal(nvalid, base.nvalid):
        return base     # the setting that keeps the union itself (the largest k): its cells as computed
    iu, ju = canonical_pairs(w)
    A, B = S[:, iu], S[:, ju]
    pmask = np.ones(A.shape, dtype=bool) if valid is None else (ju[None, :] < nvalid[:, None])
    r = np.arange(n)[:, None]
    idx = np.where(pmask, canonical_pair_id(pos[r, A], pos[r, B], wb), 0)
    dec = base.dec[r, idx]
    if valid is not None:
        dec = np.where(pmask[:, :, None], dec, np.float32(0))
    sign = None if base.sign is None else np.where(pmask, base.sign[r, idx], 1).astype(np.int8)
    return RefinedPairs(A, B, dec, pmask, S, nvalid, sign)


def _dag_walk(base, pos, lists):
    """Decision DAG over each row's class-ordered list (-1 padding last), its
    pair decisions read from ``base``: native/dag.c's procedure and rule."""
    n = lists.shape[0]
    wb = base.S.shape[1]
    bags = base.dec.shape[2]
    first = np.zeros(n, dtype=np.int64)
    last = (lists >= 0).sum(axis=1).astype(np.int64) - 1
    while True:
        r = np.flatnonzero(first < last)
        if r.size == 0:
            break
        u, v = lists[r, first[r]], lists[r, last[r]]                 # u < v: class order
        idx = canonical_pair_id(pos[r, u], pos[r, v], wb)
        d = base.dec[r, idx]                                        # [m, bags], the model's orientation
        positive = (d > 0).sum(axis=1)
        total = np.zeros(r.shape[0])
        for b in range(bags):                                       # in bag order, as pair_rule.h sums
            total = total + d[:, b].astype(np.float64)
        a_wins = (2 * positive > bags) | ((2 * positive == bags) & (total > 0.0))
        u_wins = a_wins if base.sign is None else np.where(base.sign[r, idx] > 0, a_wins, ~a_wins)
        last[r[u_wins]] -= 1
        first[r[~u_wins]] += 1
    return lists[np.arange(n), first].astype(np.int64)
