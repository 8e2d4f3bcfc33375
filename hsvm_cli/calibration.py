"""Calibrated probabilities for the two-stage classifier, and the file that holds them.

First stage (Milgram, Cheriet & Sabourin, "Speeding Up the Decision Making of
Support Vector Classifiers"): a softmax over the hash filter's class scores
with a temperature alpha fitted on validation data, one alpha per bit count.
Second stage: Platt sigmoids per pair on the exact decision values (Lin, Lin &
Weng's stable fit), coupled over the refined classes by Wu, Lin & Weng's
method 2; the refined classes share the first-stage mass of the refined set,
the others keep their first-stage probability, so every row sums to one.
"""
from dataclasses import dataclass, field

import numpy as np

from . import probability as prob
from .container import read_container, write_container
from .errors import ModelFormatError, ModelMismatchError

CALIB_KIND = "hsvm-calibration"
CALIB_VERSION = 1


@dataclass
class Calibration:
    alphas: dict                    # bits -> first-stage temperature
    platt_A: np.ndarray             # float64 [P]
    platt_B: np.ndarray             # float64 [P]
    model_sha256: str
    hash_identity: dict             # seed, generator, bits of the hash model (or None)
    setting: dict = field(default_factory=dict)   # {"mode": "exact"|"hash", "bits", "k", "epsilon"}
    grid: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    path: str = None

    def alpha(self, bits):
        a = self.alphas.get(int(bits))
        if a is None:
            raise ValueError("the calibration has first-stage temperatures for %s bits, not %d"
                             % (", ".join(str(b) for b in sorted(self.alphas)) or "no", bits))
        return a

    def check(self, model, h=None):
        if model.content_sha256() != self.model_sha256:
            raise ModelMismatchError("calibration %s was fitted for another model" % (self.path or "<calibration>"))
        if h is not None and self.hash_identity and hash_identity(h) != self.hash_identity:
            raise ModelMismatchError("calibration %s was fitted with another hash model" % (self.path or "<calibration>"))


def hash_identity(h):
    return {"seed": int(h.seed), "generator": h.generator, "bits": int(h.bits), "model_sha256": h.model_sha256}


def first_stage_proba(votes, margins, alpha):
    return prob.softmax(prob.first_stage_scores(votes, margins), alpha)


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


def fit_platt_from_decisions(model, mean_dec_blocks, y_index):
    """Fit every pair's sigmoid on the validation samples of its two classes.
    ``mean_dec_blocks`` yields (row offset, [rows, P] bag-mean decision values)."""
    ids, is_a = pair_ids_by_class(model.pair_a, model.pair_b, model.n_classes)
    decs, pairs, targets = [], [], []
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
    if decs:
        dec = np.concatenate(decs).astype(np.float64)
        pair = np.concatenate(pairs)
        target = np.concatenate(targets).astype(np.float64)
    else:
        dec = np.zeros(0)
        pair = np.zeros(0, dtype=np.int64)
        target = np.zeros(0)
    return prob.fit_platt(dec, pair, target, model.n_pairs)


def second_stage_proba(cal, A, B, dec, S, nvalid, lookup):
    """Coupled probabilities [n, k] over the sorted refined classes S of
    refine_decisions (columns beyond each row's ``nvalid`` classes get 0)."""
    n, q = A.shape
    k = S.shape[1]
    iu, ju = np.triu_indices(k, k=1)
    mean = dec.mean(axis=2, dtype=np.float64)
    pid, sign = lookup.lookup(A, B)
    Ap, Bp = cal.platt_A[pid], cal.platt_B[pid]
    # Platt's sigmoid is for the model's orientation of the pair; dec was turned
    # towards A, so undo that before applying it.
    if sign is not None:
        raw = mean * sign
        r = prob.platt_proba(raw, Ap, Bp)
        r = np.where(sign > 0, r, 1.0 - r)
    else:
        r = prob.platt_proba(mean, Ap, Bp)
    R = np.full((n, k, k), 0.5)
    R[:, iu, ju] = r
    R[:, ju, iu] = 1.0 - r
    valid = np.arange(k)[None, :] < np.asarray(nvalid)[:, None]
    return prob.couple(R, valid=valid)


def save_calibration(cal, path):
    meta = {
        "alphas": {str(b): float(a) for b, a in cal.alphas.items()},
        "model_sha256": cal.model_sha256,
        "hash_identity": cal.hash_identity,
        "setting": cal.setting,
        "grid": cal.grid,
        "info": cal.info,
    }
    write_container(path, {"platt_A": np.asarray(cal.platt_A, np.float64),
                           "platt_B": np.asarray(cal.platt_B, np.float64)},
                    kind=CALIB_KIND, version=CALIB_VERSION, meta=meta)


def load_calibration(path):
    c = read_container(path, kind=CALIB_KIND, versions={CALIB_VERSION})
    A, B = c.arrays.get("platt_A"), c.arrays.get("platt_B")
    if A is None or B is None or A.shape != B.shape or A.ndim != 1 or A.dtype != np.float64:
        raise ModelFormatError(c.path, "platt_A and platt_B must be float64 vectors of one length")
    try:
        alphas = {int(b): float(a) for b, a in c.meta["alphas"].items()}
        model_sha = str(c.meta["model_sha256"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ModelFormatError(c.path, "metadata lacks alphas or model_sha256") from None
    if any(not np.isfinite(a) or a <= 0 for a in alphas.values()):
        raise ModelFormatError(c.path, "temperatures must be positive")
    return Calibration(alphas=alphas, platt_A=np.array(A), platt_B=np.array(B), model_sha256=model_sha,
                       hash_identity=c.meta.get("hash_identity"), setting=c.meta.get("setting") or {},
                       grid=c.meta.get("grid") or [], info=c.meta.get("info") or {}, path=c.path)


def exact_proba(model, cal, Xn, *, scorer, timings=None):
    """Exact votes, confidences and probabilities coupled over all K classes."""
    from .exact import ovo_votes
    from .timing import NullTimings
    t = timings or NullTimings()
    n, K = Xn.shape[0], model.n_classes
    votes = np.empty((n, K), dtype=np.int32)
    conf = np.empty((n, K))
    proba = np.empty((n, K))
    # R is [rows, K, K] doubles: bound a block to ~64 MB of it.
    step = max(1, min(scorer.block_rows(), (64 << 20) // (8 * K * K)))
    for s in range(0, n, step):
        with t.phase("score"):
            dec = scorer.decision(Xn[s:s + step])
        with t.phase("vote"):
            votes[s:s + step], conf[s:s + step] = ovo_votes(dec, model.pair_a, model.pair_b, bags=model.bags,
                                                            n_classes=K)
        with t.phase("proba"):
            mean = dec.reshape(dec.shape[0], model.n_pairs, model.bags).mean(axis=2, dtype=np.float64)
            r = prob.platt_proba(mean, cal.platt_A[None, :], cal.platt_B[None, :])
            R = np.full((dec.shape[0], K, K), 0.5)
            R[:, model.pair_a, model.pair_b] = r
            R[:, model.pair_b, model.pair_a] = 1.0 - r
            proba[s:s + step] = prob.couple(R)
    return votes, conf, proba
