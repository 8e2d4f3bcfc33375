"""Each stage's probability estimate formed from a model's outputs.

First stage (the hash filter): a softmax over the classes' hash scores with the
temperature fitted at the bit count in use.  Second stage (the exact refine):
every refined pair's bag-mean decision value through its Platt sigmoid, the
pairwise estimates coupled over the refined classes (Wu, Lin & Weng's method
2).  The estimators themselves are in :mod:`hsvm_cli.proba.estimators`."""
import numpy as np

from ..models.ovo import bag_mean
from ..models.pairs import canonical_pairs
from ..predict.exact import ovo_votes
from ..predict.ties import winners
from ..support.timing import NullTimings
from . import estimators as est
from .mass_coupling import K_MAX, PairTable, couple_mass


def first_stage_proba(votes, margins, alpha):
    """Softmax [n, K] of the first-stage scores at temperature ``alpha``."""
    return est.softmax(est.first_stage_scores(votes, margins), alpha)


def pair_ids_by_class(pair_a, pair_b, n_classes):
    """For every class c, the pairs naming it [K, K-1] and whether c is the
    pair's class a (its positive side)."""
    P = pair_a.shape[0]
    ids = [[] for _ in range(n_classes)]
    side = [[] for _ in range(n_classes)]
    for p in range(P):
        ids[pair_a[p]].append(p)
        side[pair_a[p]].append(1)
        ids[pair_b[p]].append(p)
        side[pair_b[p]].append(0)
    width = max(len(v) for v in ids)
    out = np.full((n_classes, width), -1, dtype=np.int64)
    is_a = np.zeros((n_classes, width), dtype=np.int8)
    for c in range(n_classes):
        out[c, :len(ids[c])] = ids[c]
        is_a[c, :len(side[c])] = side[c]
    return out, is_a


def pairwise_values(model, mean_dec_blocks, y_index):
    """The validation values Platt's sigmoids are fitted on: for every
    labelled sample and every pair naming its class, the pair's bag-mean
    decision value (oriented toward the pair's class a), the pair, the target
    (1 when the sample is of class a) and the sample's row.
    ``mean_dec_blocks`` yields (row offset, [rows, P] bag-mean decision
    values).  Returns (dec float64, pair int64, target float64, sample int64)."""
    ids, is_a = pair_ids_by_class(model.pair_a, model.pair_b, model.n_classes)
    decs, pairs, targets, samples = [], [], [], []
    for start, D in mean_dec_blocks:
        yi = y_index[start:start + D.shape[0]]
        rows = np.flatnonzero(yi >= 0)
        if rows.size == 0:
            continue
        cols = ids[yi[rows]]                   # [r, K-1]
        ok = cols >= 0
        r_idx = np.repeat(rows, ok.sum(axis=1))
        decs.append(D[r_idx, cols[ok]])
        pairs.append(cols[ok])
        targets.append(is_a[yi[rows]][ok])
        samples.append(r_idx + start)
    if not decs:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64)
    return (np.concatenate(decs).astype(np.float64), np.concatenate(pairs), np.concatenate(targets).astype(np.float64),
            np.concatenate(samples).astype(np.int64))


def fit_platt_from_decisions(model, mean_dec_blocks, y_index):
    """Fit every pair's sigmoid on the validation samples of its two classes
    (Platt's fit, pair by pair).  ``mean_dec_blocks`` yields (row offset,
    [rows, P] bag-mean decision values)."""
    dec, pair, target, _ = pairwise_values(model, mean_dec_blocks, y_index)
    return est.fit_platt(dec, pair, target, model.n_pairs)


def second_stage_proba(cal, refined, lookup, *, sharpness=1.0):
    """Coupled probabilities [n, k] over the sorted refined classes of a
    :class:`~hsvm_cli.predict.refine.RefinedPairs` (columns beyond each row's
    ``nvalid`` classes get 0); ``sharpness`` multiplies every pair's logit
    (:meth:`~hsvm_cli.models.calibration.Calibration.second_stage_sharpness`)."""
    A, B, S = refined.A, refined.B, refined.S
    n = A.shape[0]
    k = S.shape[1]
    iu, ju = canonical_pairs(k)
    # dec is in the model's orientation of each pair, as Platt's sigmoid is.
    mean = refined.dec.mean(axis=2, dtype=np.float64)
    # Only the pairs of classes in use name classifiers: with a threshold the
    # padding entries of S pair class 0 with itself or with later classes,
    # which a model storing some pairs reversed (an import) has no id for.
    pid = np.zeros(A.shape, dtype=np.int64)
    used = np.asarray(refined.pmask, dtype=bool)
    if used.any():
        pid[used] = lookup.lookup(A[used], B[used])[0]
    if sharpness == 1.0:
        r = est.pairwise_proba(mean, cal.platt_A[pid], cal.platt_B[pid])
    else:
        r = est.pairwise_proba(mean, sharpness * cal.platt_A[pid], sharpness * cal.platt_B[pid])
    if refined.sign is not None:
        r = np.where(refined.sign > 0, r, 1.0 - r)
    R = np.full((n, k, k), 0.5)
    R[:, iu, ju] = r
    R[:, ju, iu] = 1.0 - r
    valid = np.arange(k)[None, :] < np.asarray(refined.nvalid)[:, None]
    return est.couple(R, valid=valid)


def exact_proba(model, cal, Xn, *, scorer, timings=None):
    """Exact votes, confidences and probabilities: every pair's sigmoid on its
    bag-mean decision value, coupled over the classes that carry mass
    (:func:`hsvm_cli.proba.mass_coupling.couple_mass`: all of them when K <= 64,
    as ``svm-predict -b 1`` does, and always for LIBSVM's own sigmoids
    imported with a model)."""
    t = timings or NullTimings()
    n, K = Xn.shape[0], model.n_classes
    # LIBSVM's own sigmoids (import-model --calibration) are coupled over
    # every class, as svm-predict -b 1 couples them: the mass coupling of
    # K_MAX classes was up to 0.058 from it on omniglot-242 (the most
    # probable class changed in 144 of 1,210 rows), 0.036 at K = 257.  The
    # O(K^3) solve per sample is then the price (~50 ms at K = 1,000).
    k_max = K if getattr(cal, "from_libsvm", False) else K_MAX
    votes = np.empty((n, K), dtype=np.int32)
    conf = np.empty((n, K))
    proba = np.empty((n, K))
    table = PairTable.cached(model.pair_a, model.pair_b, K)
    # Decision values in exact scoring's blocks (W read once per block: in
    # blocks of 16 rows, at K = 1,000 and d = 64, reading W took 3.7x the
    # scoring); the coupling's [rows, k, K] and [rows, P] float64
    # temporaries in sub-blocks of ~64 MB.
    sub = max(1, (64 << 20) // (8 * max(model.n_pairs, K * min(K, k_max))))
    for s, dec in scorer.decision_blocks(Xn, timings=t, reuse=True):
        e = s + dec.shape[0]
        with t.phase("vote"):
            votes[s:e], conf[s:e] = ovo_votes(dec, model.pair_a, model.pair_b, bags=model.bags, n_classes=K)
        with t.phase("proba"):
            best = winners(model, votes[s:e], conf[s:e])
            for u in range(0, e - s, sub):
                block = dec[u:u + sub]
                # one bag: the decision values as they are (pairwise_proba widens
                # float32 exactly), not bag_mean's float64 copy of the block
                mean = block.reshape(block.shape[0], -1) if model.bags == 1 else bag_mean(block, model.bags)
                r = est.pairwise_proba(mean, cal.platt_A[None, :], cal.platt_B[None, :])
                proba[s + u:s + u + r.shape[0]] = couple_mass(r, best[u:u + sub], table, k_max=k_max)
    return votes, conf, proba
