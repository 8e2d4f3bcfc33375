"""``hsvm calibrate``: fit the probabilities and choose the cheapest setting
that stays within a given accuracy loss of exact prediction.

Probabilities (:mod:`hsvm_cli.proba`): every pair's Platt sigmoid, shrunk
toward the pooled sigmoid with a prior strength chosen by cross-fitting and
sharpened by one factor fitted on the coupled distributions
(:mod:`hsvm_cli.proba.shrinkage`); with a hash model also the first stage's
softmax temperature at every bit count, and the second-stage sharpness of the
two-stage probabilities ``predict -C --proba`` gives with the chosen setting
(:func:`_fit_two_stage`).  Without a hash model only exact
prediction is a candidate and the calibration gives exact probabilities
(``predict --exact --proba -C``).

The accuracy-speed grid.  Every candidate -- exact prediction and the exact
decision DAG, the class-score first stage at each k (vote or DAG refine), and
hash filtering at each bit count with each k (fixed number of refined
classes; vote or DAG refine) or each probability threshold epsilon
(per-sample number) -- is evaluated once on
the whole labelled validation set, with the labels each setting's predictor
gives (bit for bit): per bit count one filter pass (and for the class scores
one scoring pass) gives the ranking that every k and epsilon of that first
stage then refine; one exact pass gives the exact accuracy and the Platt data,
and its decision blocks also score every max-wins refine of a fixed k
(:mod:`hsvm_cli.predict.certified_votes`: the BLAS values differ from the
refine's sampled product in rounding only, and a row's winner is taken where a
rounding bound certifies that the refine's is the same; the other rows are
refined); the remaining refines of a first stage share their exact decisions,
the pairs of the union of their kept classes computed once per sample
(:mod:`hsvm_cli.predict.shared_refine`).  The first stages' rankings are kept
in memory until the exact pass is done (votes and margins, 12 bytes per
sample and class each).

Time per sample is measured separately, on this machine, on a fixed subsample
of at most :data:`TIMING_ROWS` (1,000) evenly spaced validation rows: each
candidate's whole prediction of those rows (normalisation, hashing, filtering
and refining; parsing excluded), the median of up to ``repeat`` runs after a
warm-up, within a budget of :data:`TIMING_BUDGET` seconds per candidate.  A
candidate too slow for that gets fewer runs (at least one), then fewer rows
(evenly spaced over the subsample, at least :data:`MIN_TIMED_ROWS`), so that
timing ~90 settings of a 1,000-class model takes about a minute instead of
most of the run; each grid row records the rows and runs it was timed on.
Only candidates slower than the budget over the subsample (0.5 ms per sample
for 1,000 rows) are shortened, and at 100 rows or more such a run still takes
a twentieth of a second or longer, well above the per-call overheads.
For few classes or very sparse input exact scoring can beat hashing the
sample; the measurement then picks exact."""
import math
import platform
import time

import numpy as np

from .errors import DataError, ModelMismatchError, OptionError, warn
from .evaluation.calibration_metrics import expected_calibration_error, nll
from .models.calibration import Calibration, Setting, hash_identity
from .models.imported import default_extra_features
from .models.ovo import bag_mean
from .models.pairs import PairLookup
from .predict.certified_votes import certified_kept_winners, classifier_norms, sample_norms, uncertain_cells
from .predict.exact import ExactScorer, ovo_votes
from .predict.predictor import Predictor, progress_chunk_rows
from .predict.ranking import top_classes
from .predict.raw_filter import make_filter
from .predict.refine import dense_is_cheaper, refine_decisions
from .predict.samples import check_samples
from .predict.shared_refine import shared_refine_labels, shares_refine
from .predict.ties import winners
from .preprocess import prepare
from .proba import estimators as est
from .proba.mass_coupling import PairTable, couple_mass
from .proba.shrinkage import (
    choose_prior_samples,
    coupled_rows,
    fit_platt_shrunk,
    fit_sharpness,
    pooled_sigmoid,
    sample_halves,
    sharpness_search,
)
from .proba.stages import pairwise_values, second_stage_proba
from .support.labels import class_index, integer_labels
from .support.timing import NullTimings, Timings

DEFAULT_K_FRACTIONS = (0.01, 0.03, 0.1, 0.2)
#: Decision rules and first stages ``calibrate`` tries by default.
RULES = ("vote", "dag")
FIRST_STAGES = ("votes", "scores")
DEFAULT_EPSILONS = (0.1, 0.03, 0.01, 0.003, 0.001)

#: Validation rows timed per candidate (evenly spaced over the set).
TIMING_ROWS = 1000
#: Seconds of timed runs per candidate (its warm-up excluded): a candidate
#: too slow for ``repeat`` runs of every timing row within it is timed on fewer
#: runs, then on fewer rows (evenly spaced over the timing rows) ...
TIMING_BUDGET = 0.5

#: Standard errors of the paired accuracy difference added to a setting's
#: loss before it is compared with max_loss (``calibrate --confidence``).
CONFIDENCE = 1.0

#: ... but on at least this many rows, whatever the budget: enough that the
#: per-call overheads are a small part of a run.
MIN_TIMED_ROWS = 100
#: Rows of the warm-up run, and of the first run that estimates the time per sample.
WARMUP_ROWS = 64
#: Validation rows the sharpness factor is fitted on: at most this many, and
#: at most _SHARPNESS_CELLS (row, pair) values, at least 100 rows -- unless
#: those 100 rows' float64 decision values pass _SHARPNESS_BYTES (K > 1,000:
#: at K = 3,000, 4.5 M pairs, 100 rows were 3.6 GB and calibrate ran out of
#: 8 GB on any validation set), then as many as fit, at least 8.
SHARPNESS_ROWS = 600
#: The two-stage sharpness is fitted on every labelled validation row, or on
#: as many evenly spread rows as keep (rows x refined pairs) within this, at
#: least SHARPNESS_ROWS: each step of its search predicts them again.
TWO_STAGE_CELLS = 1 << 22
_SHARPNESS_CELLS = 30_000_000
_SHARPNESS_BYTES = 512 << 20


def default_bits_grid(D):
    """64, 128, 256, ... below D, then D."""
    grid, b = [], 64
    while b < D:
        grid.append(b)
        b *= 2
    return grid + [D]


def default_k_grid(K):
    """1 and 1%, 3%, 10%, 20% of K rounded up (at least 2), below K: the 10%
    point is predict's default -k from K = 50 on (:func:`~hsvm_cli.predict.predictor.default_filter_k`)."""
    ks = {1} | {max(2, math.ceil(f * K - 1e-9)) for f in DEFAULT_K_FRACTIONS}
    return sorted(k for k in ks if k < K)


def spread_rows(n, count):
    """At most ``count`` row indices evenly spread over range(n) (int64)."""
    if n <= count:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.linspace(0, n - 1, int(count)).astype(np.int64))


def time_per_sample(run, X, *, repeat, budget=TIMING_BUDGET, min_rows=MIN_TIMED_ROWS, warmup_rows=WARMUP_ROWS):
    """Median seconds per sample of ``run(rows)`` on the rows of X (the timing
    subsample), within a time budget.

    A warm-up run on the first ``warmup_rows`` rows builds what the first call
    builds (kernel plans, projections).  Then runs on m rows evenly spaced over
    X, starting at m = ``warmup_rows`` (at ``min_rows`` when the warm-up alone
    took more than ``budget``): a run of T seconds says budget * m / T rows fit
    in the budget -- all of X when that covers X; m grows to that count when
    it at least doubles m (a per-call overhead makes small runs look slower
    per sample than large ones, so the estimate is revised on the larger run),
    else m stays (at least ``min_rows``) and the last run is the first timed
    one.  Then up to ``repeat`` runs in all, each started only while the runs
    so far plus one more of the last one's length stay within ``budget``.
    Returns (seconds per sample, rows timed, runs)."""
    n = X.shape[0]
    if n == 0:
        return 0.0, 0, 0
    low = min(n, max(1, int(min_rows)))

    def timed(rows):
        t0 = time.perf_counter()
        run(rows)
        return time.perf_counter() - t0

    m = min(n, warmup_rows)
    if timed(X[:m]) > budget:
        m = low
    while True:
        Xm = X if m == n else X[spread_rows(n, m)]
        seconds = timed(Xm)
        if m == n:
            break
        fit = int(budget * m / seconds) if seconds > 0 else n
        if fit >= n:
            m = n
        elif fit >= 2 * m:
            m = fit
        elif m < low:
            m = low
        else:
            break
    times = [seconds]
    while len(times) < max(1, repeat) and sum(times) + times[-1] <= budget:
        times.append(timed(Xm))
    return float(np.median(times)) / Xm.shape[0], int(Xm.shape[0]), len(times)


def validation_notes(model, y):
    """What a calibration on validation labels ``y`` should be warned of:
    labels the model lacks (errors in every setting) and classes without
    validation samples (their pairs take the pooled sigmoid only)."""
    notes = []
    y = np.asarray(y)
    outside = ~np.isin(y, model.classes)
    if outside.any():
        # as eval's outside_classes: such rows can only be errors, and they
        # lower every setting's accuracy alike
        unknown = np.unique(y[outside])
        notes.append("%d of %d validation samples have labels the model lacks (%s): every setting counts them as "
                     "errors" % (int(outside.sum()), y.shape[0], ", ".join(str(v) for v in unknown[:5])
                                 + (", ..." if unknown.size > 5 else "")))
    covered = int(np.isin(model.classes, y).sum())
    if covered < model.n_classes:
        # a pair without validation samples of its classes gets the pooled
        # sigmoid only: probabilities of those classes are then poor
        notes.append("the validation samples cover %d of the model's %d classes: the pairs of the other classes "
                     "take the pooled sigmoid, fitted on no sample of theirs, and probabilities involving them will "
                     "be rough; give a validation set with samples of every class" % (covered, model.n_classes))
    return notes


def calibrate(model, h, X, y, *, max_loss=0.5, bits_grid=None, k_grid=None, epsilons=None, epsilon_max_k=None,
              threads=None, repeat=3, progress=None, timing_rows=TIMING_ROWS, rules=RULES,
              first_stages=FIRST_STAGES, timing_budget=TIMING_BUDGET, min_timed_rows=MIN_TIMED_ROWS,
              confidence=CONFIDENCE):
    """Fit a :class:`~hsvm_cli.models.calibration.Calibration` on the labelled
    validation samples X, y (raw, as read) for ``model`` and its hash model
    ``h`` (None: exact probabilities only), and choose its setting: the fastest
    candidate within ``max_loss`` accuracy points of exact prediction (see the
    module docstring), its loss counted with ``confidence`` standard errors
    of the paired difference on the validation rows (:func:`loss_bound`; 0:
    the plain loss), so that a small validation set does not pass a setting
    whose loss it cannot tell from noise.

    ``bits_grid`` (default 64, 128, ... up to the hashed D), ``k_grid``
    (default 1 and 1%, 3%, 10%, 20% of K) and ``epsilons`` (default 0.1 ...
    0.001, each with at most ``epsilon_max_k`` classes) span the candidates;
    each is timed with ``threads`` threads on ``timing_rows`` evenly spaced
    rows, the median of up to ``repeat`` runs within ``timing_budget``
    seconds (a slower setting gets fewer runs, then fewer rows, at least
    ``min_timed_rows``: :func:`time_per_sample`).  ``progress``: a callable
    receiving (done, total, what) after each step.

    ``rules``: the exact decision rules tried -- "vote" (max-wins over the
    pairs: exact prediction, vote refine) and "dag" (decision DAGs: the exact
    DAG, and a DAG refine at every k >= 3).  ``first_stages``: "votes" (the
    hash filter; needs ``h``) and "scores" (the class-score first stage at
    every k >= 2, with each rule; no hash model needed).  Exact max-wins
    prediction is always a candidate (the reference of ``max_loss``)."""
    from .models.hashed import HashModel
    from .models.ovo import OvoModel
    if not isinstance(model, OvoModel):
        raise TypeError("calibrate takes a one-vs-one model (OvoModel: train_ovo's, load_model's), not %s"
                        % type(model).__name__)
    if h is not None and not isinstance(h, HashModel):
        raise TypeError("calibrate's h must be a hash model of the model (HashModel) or None, not %s"
                        % type(h).__name__)
    if h is not None:
        h.check_model(model)
    elif any(v is not None for v in (bits_grid, epsilons)):
        raise OptionError("--bits and --epsilon need a hash model (-H)",
                          python="bits_grid and epsilons need a hash model (h)")
    if not confidence >= 0:
        raise OptionError("--confidence must be at least 0", python="confidence must be at least 0")
    if not (max_loss >= 0 and math.isfinite(max_loss)):
        raise OptionError("--max-loss must be a finite number >= 0", python="max_loss must be a finite number >= 0")
    if not (timing_budget >= 0 and math.isfinite(timing_budget)):
        raise OptionError("--timing-budget must be a finite number of seconds >= 0",
                          python="timing_budget must be a finite number of seconds >= 0")
    if int(min_timed_rows) < 1:
        raise OptionError("min_timed_rows must be at least 1")
    if isinstance(repeat, bool) or int(repeat) != repeat or repeat < 1:
        raise OptionError("--repeat must be a positive integer, not %r" % (repeat,),
                          python="repeat must be a positive integer, not %r" % (repeat,))
    if model.trained_on_codes:
        raise ModelMismatchError("%s was trained on kernel hash codes: calibrate takes models of svmlight features "
                                 "(calibrating Hash-SVM models is not supported yet)" % (model.path or "the model"))
    # narrower samples padded with zeros, wider refused (dropped for an
    # imported model), as Predictor takes them
    X = check_samples(X, model.n_features, extra=default_extra_features(model))
    if X.shape[0] != len(y):
        raise DataError("X has %d rows but y has %d labels" % (X.shape[0], len(y)))   # as train_ovo raises
    y = integer_labels(y, X.shape[0])     # a DataError, as train_ovo raises for the same labels
    if X.shape[0] == 0:
        raise DataError("the validation set holds no samples")
    for note in validation_notes(model, y):
        warn(note)
    # one name is one rule or stage, not its letters
    rules = (rules,) if isinstance(rules, str) else tuple(rules)
    first_stages = (first_stages,) if isinstance(first_stages, str) else tuple(first_stages)
    if not rules or any(r not in RULES for r in rules):
        raise OptionError("rules must be among %s, not %s" % (", ".join(RULES), ", ".join(map(str, rules)) or "none"))
    if any(f not in FIRST_STAGES for f in first_stages):
        raise OptionError("first stages must be among %s, not %s" % (", ".join(FIRST_STAGES),
                                                                    ", ".join(map(str, first_stages))))
    K = model.n_classes
    configs, bits_asked, bits_grid = [], bits_grid, []
    k_grid = k_grid if k_grid is not None else default_k_grid(K)
    if any(k < 1 for k in k_grid):
        raise OptionError("every k must be at least 1")
    # a k beyond the classes keeps them all, as predict takes it: tried as K
    k_grid = sorted({min(int(k), K) for k in k_grid})
    score_ks = [k for k in k_grid if k >= 2] if "scores" in first_stages else []
    if h is not None and "votes" in first_stages:
        bits_grid = sorted(set(bits_asked or default_bits_grid(h.bits)))
        for b in bits_grid:
            h.check_bits(b)
        epsilons = sorted(set(epsilons if epsilons is not None else DEFAULT_EPSILONS), reverse=True)
        if epsilon_max_k is None:
            # The threshold decides how many classes to refine; the cap only bounds
            # the worst sample, so it sits well above the largest fixed k tried.
            epsilon_max_k = min(K, max(4, 2 * max(k_grid or [1]), int(round(0.2 * K))))
        configs = [(k, None) for k in k_grid] + [(epsilon_max_k, e) for e in epsilons]
    y = np.asarray(y)
    yi = class_index(model.classes, y)
    if not (yi >= 0).any():
        raise DataError("no validation label is a class of the model")
    present = np.unique(yi[yi >= 0])
    if present.shape[0] < 2:
        # every pair of that class sees samples of one side only, and so does
        # the pooled sigmoid they are shrunk toward: probabilities of 0 and 1
        foreign = int((yi < 0).sum())
        raise DataError("the validation samples are all of class %d%s: the pairwise sigmoids need samples of at "
                        "least two classes" % (int(model.classes[present[0]]), "" if not foreign else
                                               " (and %d with labels the model does not have)" % foreign))
    n = X.shape[0]
    timed = spread_rows(n, timing_rows)
    dag = "dag" in rules
    dag_ks = [k for k in k_grid if k >= 3] if dag else []
    # the hash settings refined by votes only when votes are among the rules
    vote_configs = list(configs) if "vote" in rules else []
    score_rows = [(k, r) for k in score_ks for r in rules if r == "vote" or k >= 3]
    total = 4 + dag + (2 + len(score_rows) if score_rows else 0) + len(bits_grid) * (2 + len(vote_configs)
                                                                                      + len(dag_ks))
    done = [0]

    def tick(what, fraction=None):
        # fraction: of the step under way, for the steps that take minutes at thousands of classes
        if fraction is None:
            done[0] += 1
        if progress is not None:
            progress(done[0] + (fraction or 0), total, what)

    Xn = prepare(model.normalize, X)
    # The first stages run before the exact pass, whose decision blocks then
    # also score their max-wins refines (certified, predict/certified_votes.py).
    stages, alphas = [], {}
    if score_rows:
        # (The class scores' summary vectors are read or computed once, and
        # kept on the model for every k and rule: class_score_weights.)
        scorer = Predictor(model, h, first_stage="scores", filter_k=score_rows[0][0], threads=threads)
        scores = scorer.filter.scores(Xn)
        stages.append((None, (np.zeros(scores.shape, dtype=np.int32), scores), [(k, None, r) for k, r in score_rows]))
        tick("class scores: filter")
    for bits in bits_grid:
        hf = make_filter(model, h, bits=bits, threads=threads)
        part = None if progress is None else (lambda fraction, bits=bits: tick("%d bits: filter" % bits, fraction))
        votes = _hash_and_vote(hf, Xn, K, part)
        known = yi >= 0
        alphas[bits] = float(est.fit_temperature(est.first_stage_scores(votes[0][known], votes[1][known]),
                                                 yi[known]))
        stages.append((bits, votes, [(k, eps, "vote") for k, eps in vote_configs] + [(k, None, "dag") for k in dag_ks]))
        tick("%d bits: filter" % bits)
    certified = _CertifiedRefines(model, Xn, stages)
    exact_labels, probabilities = _exact_pass(model, Xn, yi, tick, block_hook=certified.block)
    cal = Calibration(alphas=alphas, model_sha256=model.content_sha256(),
                      hash_identity=hash_identity(h) if h is not None else None, **probabilities)
    Xt = X[timed]

    def timed_row(row, run):
        secs, rows, runs = time_per_sample(run, Xt, repeat=repeat, budget=timing_budget, min_rows=min_timed_rows)
        row.update({"seconds_per_sample": secs, "timed_rows": rows, "timed_runs": runs})
        return row

    exact_right = np.asarray(exact_labels) == y

    def accuracy(labels):
        return float((labels == y).mean())

    def paired(row, labels):
        # the rows this setting gets right and exact prediction wrong, and the
        # reverse: what the loss's confidence bound is made of (_choose)
        right = np.asarray(labels) == y
        row.update({"accuracy": float(right.mean()), "gains": int(np.sum(right & ~exact_right)),
                    "losses": int(np.sum(~right & exact_right))})
        return row

    exact_row = timed_row(paired({"mode": "exact", "rule": "vote", "bits": None, "k": None, "epsilon": None,
                                  "mean_refined": K}, exact_labels), Predictor(model).predict)
    tick("exact timed")
    grid = [exact_row]
    if dag:
        predictor = Predictor(model, rule="dag", threads=threads)
        grid.append(timed_row(paired({"mode": "exact", "rule": "dag", "bits": None, "k": None, "epsilon": None,
                                      "mean_refined": K}, predictor.predict(X)), predictor.predict))
        tick("exact DAG")
    for stage, (bits, ranking, settings) in enumerate(stages):
        name = "class scores" if bits is None else "%d bits" % bits
        if bits is None:
            predictors = [Predictor(model, h, first_stage="scores", filter_k=k, rule=rule, threads=threads)
                          for k, _, rule in settings]
        else:
            predictors = [Predictor(model, h, bits=bits, filter_k=k, refine=k > 1, threads=threads, epsilon=eps,
                                    calibration=cal, rule=rule) for k, eps, rule in settings]
        results = _stage_accuracy(predictors, X, Xn, ranking, threads, certified.of_stage(stage))
        tick("%s: accuracy" % name)
        for (k, eps, rule), predictor, (labels, refined) in zip(settings, predictors, results):
            if bits is None:
                row = {"mode": "scores", "rule": rule, "bits": None, "k": k, "epsilon": None, "mean_refined": k}
            else:
                row = {"mode": "hash", "rule": rule, "bits": bits, "k": k if eps is None else None,
                       "max_k": k if eps is not None else None, "epsilon": eps, "mean_refined": refined / max(1, n)}
            paired(row, labels)
            grid.append(timed_row(row, predictor.predict if bits is None else predictor.predict_block))
            tick("%s, %s%s" % (name, "k=%d" % k if eps is None else "p>%g" % eps, ", DAG" if rule == "dag" else ""))
    chosen = _choose(cal, grid, max_loss, confidence, n)
    _fit_two_stage(cal, model, h, X, yi, threads)
    tick("two-stage sharpness")
    cal.info.update({"validation_samples": int(n), "exact_accuracy": exact_row["accuracy"],
                     "max_loss_points": float(max_loss), "loss_confidence": float(confidence),
                     "timed_on": "%s %s (%s)" % (platform.node(), platform.machine(), platform.processor() or "cpu"),
                     "repeat": int(repeat), "timed_samples": int(timed.shape[0]),
                     "timing_budget_seconds": float(timing_budget), "min_timed_rows": int(min_timed_rows),
                     "certified_refines": certified.summary(),
                     "why": _why(chosen, grid, max_loss, confidence)})
    return cal


def _fit_two_stage(cal, model, h, X, yi, threads):
    """The second-stage sharpness of the two-stage probabilities that
    ``predict -C --proba`` gives with the chosen setting (its hash filter's
    bits and k; nothing when that path is exact).

    The two-stage distribution gives the kept classes the first stage's mass
    on them, shared by the pairwise coupling over the kept classes alone
    (:func:`hsvm_cli.proba.estimators.combine`).  The sigmoids' sharpness
    gamma was fitted for the exact coupling, over every class that carries
    mass; coupled over only the k kept classes the same sigmoids give another
    spread (on omniglot-242's 25 kept classes a flatter one: the top class
    held 0.35 of the kept mass on average where it was right 45% of the
    time).  So one more factor on the refined pairs' logits is fitted where it
    acts, by the log-likelihood of the two-stage distribution on the
    validation samples (every one, or :data:`TWO_STAGE_CELLS` refined pairs'
    worth, evenly spread), by the same golden-section search as gamma
    (:func:`hsvm_cli.proba.shrinkage.golden_log_search`).  Fitted on the
    samples the sigmoids were fitted on, it stays near 1 where the kept
    coupling is already right (fashion-mnist-20k, k = 2 or 3: 0.99, 1.02)."""
    if h is None:
        return
    p = Predictor.from_calibration(model, cal, h, proba=True, threads=threads)
    if p.filter is None or p.first_stage != "votes" or not p.refine or p.scorer is not None:
        return
    labelled = np.flatnonzero(yi >= 0)
    cells = max(1, p.k * (p.k - 1) // 2)
    rows = labelled[spread_rows(labelled.shape[0], max(SHARPNESS_ROWS, TWO_STAGE_CELLS // cells))]
    yr = yi[rows]
    # The first stage and the refined pairs do not depend on the factor: once,
    # as the predictor's probability path forms them; only the coupling repeats.
    t = NullTimings()
    Xn, hv, hm = p._filter(X[rows], None, t)
    kept, valid, p1 = p._keep(hv, hm, True, t)
    refined = refine_decisions(model, Xn, kept, lookup=p.lookup, valid=valid, threads=threads or 1)
    S_pad = np.where(np.arange(refined.S.shape[1])[None, :] < refined.nvalid[:, None], refined.S, -1)

    # two classes couple nothing: the factor would only steepen the one sigmoid;
    # separable rows at the range's end: Platt's smoothed targets (sharpness_search)
    g = sharpness_search(lambda s: _two_stage_rows(cal, refined, p.lookup, p1, S_pad, float(s)), yr) \
        if model.n_classes > 2 else 1.0
    # The kept classes' mass: how likely the true class is to have been kept
    # at all, which the first stage's one temperature may under- or
    # overstate (γ₂ only shares the kept mass out; the two parts of the
    # log-likelihood are separate, so each is fitted alone).
    mass = np.where(S_pad >= 0, p1[np.arange(S_pad.shape[0])[:, None], np.maximum(S_pad, 0)], 0.0).sum(axis=1)
    shift = fit_mass_shift(mass, (S_pad == yr[:, None]).any(axis=1))
    cal.two_stage = {"bits": int(p.filter.bits), "k": int(p.k), "epsilon": p.epsilon, "sharpness": g,
                     "mass_shift": shift}
    cal.info["two_stage_rows"] = int(rows.shape[0])
    # How good these probabilities are where they were fitted: a first stage
    # whose one temperature leaves little mass on the kept classes stays
    # under-confident whatever the factor (omniglot-242, 256 bits, k = 10:
    # mean top probability 0.23 against 40% right), which calibrate reports,
    # since it chooses a setting by accuracy and speed alone.
    P = _two_stage_rows(cal, refined, p.lookup, p1, S_pad, g, shift)
    cal.info["two_stage_quality"] = _quality(P, yr)


def _two_stage_rows(cal, refined, lookup, p1, S_pad, sharpness, *shift):
    """``est.combine(p1, S_pad, second_stage_proba(...), *shift)`` made a
    few rows at a time: the coupling's [rows, k, k] temporaries for every
    row at once took 2.5 GB at k = 200 (K = 1,000, 600 rows).  Each row's
    probabilities are its own, so the result is the same."""
    n, k = refined.S.shape
    step = max(1, (16 << 20) // (8 * k * k))
    parts = []
    for s in range(0, n, step):
        rows = slice(s, s + step)
        parts.append(est.combine(p1[rows], S_pad[rows],
                                 second_stage_proba(cal, refined.rows(rows), lookup, sharpness=sharpness), *shift))
    return np.concatenate(parts) if parts else est.combine(
        p1, S_pad, second_stage_proba(cal, refined, lookup, sharpness=sharpness), *shift)


def _quality(P, y_index):
    """NLL, ECE, mean top probability and accuracy of probabilities P."""
    return {"nll": nll(P, y_index), "ece": expected_calibration_error(P, y_index),
            "mean_top_probability": float(P.max(axis=1).mean()),
            "accuracy": float(np.mean(P.argmax(axis=1) == y_index)), "rows": int(P.shape[0])}


#: Fewer samples than this whose true class was kept, or was not, say too
#: little about how often it is: the kept mass is then left as it is (δ = 0).
MASS_SHIFT_MIN_SIDE = 10


def fit_mass_shift(mass, kept_true, iterations=100):
    """δ maximising the likelihood of "the true class was kept" under
    σ(logit(mass) + δ) -- a logistic regression with one intercept and the
    first stage's logit as offset -- fitted to Platt's smoothed targets
    ((N+ + 1) / (N+ + 2) and 1 / (N- + 2)).  Newton's method from 0 (the
    likelihood is concave in δ), steps of at most 2.  Rows whose mass is
    within rounding of 0 or 1 (|logit| > 35) carry no information and are
    left out; with fewer than MASS_SHIFT_MIN_SIDE rows on either side (the
    true class kept, or not) δ is 0."""
    mass = np.asarray(mass, dtype=np.float64)
    kept_true = np.asarray(kept_true, dtype=bool)
    inside = (mass > 0.0) & (mass < 1.0)
    z = est.logit(np.where(inside, mass, 0.5))
    use = inside & (np.abs(z) <= 35.0)
    if min(int(kept_true[use].sum()), int((~kept_true[use]).sum())) < MASS_SHIFT_MIN_SIDE:
        return 0.0
    t = np.where(kept_true[use], (kept_true[use].sum() + 1.0) / (kept_true[use].sum() + 2.0),
                 1.0 / ((~kept_true[use]).sum() + 2.0))
    z = z[use]
    d = 0.0
    for _ in range(iterations):
        s = est.sigmoid(z + d)
        grad, hess = float(np.sum(s - t)), float(np.sum(s * (1.0 - s)))
        if hess <= 0.0:
            break
        step = max(-2.0, min(2.0, grad / hess))     # damped: far from the optimum the curvature misleads
        d -= step
        if abs(step) < 1e-10:
            break
    return float(d)


def sharpness_rows(n_pairs):
    """How many validation rows the sharpness factor is fitted on, at most
    (:data:`SHARPNESS_ROWS`)."""
    P = max(1, int(n_pairs))
    return min(SHARPNESS_ROWS, max(100, _SHARPNESS_CELLS // P), max(8, _SHARPNESS_BYTES // (8 * P)))


def _hash_and_vote(hf, Xn, K, part):
    """``hf.hash_and_vote(Xn)``, with ``part(fraction done)`` between blocks
    of rows whose pairs take a few seconds (the votes of a row are its own:
    the same arrays); ``part`` None: in one call."""
    n = Xn.shape[0]
    rows = progress_chunk_rows(K)
    if part is None or n <= rows:
        return hf.hash_and_vote(Xn)
    votes = np.empty((n, K), dtype=np.int32)
    margins = np.empty((n, K), dtype=np.float64)
    for s in range(0, n, rows):
        votes[s:s + rows], margins[s:s + rows] = hf.hash_and_vote(Xn[s:s + rows])
        part(min(n, s + rows) / n)
    return votes, margins


def _exact_pass(model, Xn, yi, tick, block_hook=None):
    """One exact pass over the validation set: the exact labels (the model's
    decision rule) and the fitted pairwise sigmoids (:func:`_fit_sigmoids`);
    ``block_hook(first row, decision values)`` sees every block."""
    scorer = ExactScorer(model)
    n, K, P = Xn.shape[0], model.n_classes, model.n_pairs
    votes = np.empty((n, K), dtype=np.int32)
    conf = np.empty((n, K), dtype=np.float64)
    labelled = np.flatnonzero(yi >= 0)
    sharp_rows = labelled[spread_rows(labelled.shape[0], sharpness_rows(P))]
    sharp_dec = np.empty((sharp_rows.shape[0], P), dtype=np.float64)

    # The float64 bag means in sub-blocks of ~64 MB: for a whole block of
    # exact scoring (128 rows at K = 1,000) they were 512 MB.
    sub = max(1, (64 << 20) // (8 * max(1, P)))

    def mean_blocks():
        for s, dec in scorer.decision_blocks(Xn):
            e = s + dec.shape[0]
            if block_hook is not None:
                block_hook(s, dec)
            votes[s:e], conf[s:e] = ovo_votes(dec, model.pair_a, model.pair_b, bags=model.bags, n_classes=K)
            tick("exact pass", e / max(1, n))
            for u in range(s, e, sub):
                mean = bag_mean(dec[u - s:u - s + sub], model.bags)
                lo, hi = np.searchsorted(sharp_rows, [u, u + mean.shape[0]])
                sharp_dec[lo:hi] = mean[sharp_rows[lo:hi] - u]
                yield u, mean

    values = pairwise_values(model, mean_blocks(), yi)
    win = winners(model, votes, conf)
    tick("exact pass")
    fitted = _fit_sigmoids(model, values, sharp_dec, win[sharp_rows], yi[sharp_rows], sharp_rows)
    tick("probabilities")
    return model.classes[win], fitted


def _both_sides(pair, target, P):
    """bool [P]: the pairs with values of both classes (target 1 and 0)."""
    return (np.bincount(pair, weights=target, minlength=P) > 0) & \
        (np.bincount(pair, weights=1 - target, minlength=P) > 0)


def _fit_sigmoids(model, values, sharp_dec, sharp_winner, sharp_y, sharp_rows):
    """Shrunk Platt sigmoids with the sharpness factor folded in (A and B
    multiplied by gamma), and what was chosen (for the calibration's info)."""
    dec, pair, target, sample = values
    target = target.astype(np.int64)
    P = model.n_pairs
    # A pair whose validation samples are all of one of its classes (the
    # other has none) would fit a sigmoid saying that class whatever the
    # decision value: a validation set without classes 6-10 of digits made
    # --proba never predict them (45.8% against 95.6%).  Such pairs get the
    # pooled sigmoid, as pairs without samples do.
    keep = _both_sides(pair, target, P)[pair]
    if not keep.all():
        dec, pair, target, sample = dec[keep], pair[keep], target[keep], sample[keep]
    halves_pooled = {}
    n0, scores = choose_prior_samples(dec, pair, target, sample, P, pooled_halves=halves_pooled)
    # Cross-fitted logits of the sharpness rows: each row's sigmoids come from
    # the half of the validation samples it is not in.
    first = sample_halves(sample)
    row_half = np.zeros(sharp_rows.shape[0], dtype=bool)
    inside = sharp_rows < first.shape[0]
    row_half[inside] = first[sharp_rows[inside]]
    # The logits replace the decision values in place: at K = 1,000 each is
    # 100 rows x 499,500 pairs, 400 MB.
    logits = sharp_dec
    one_sided = False
    for h in (True, False):
        fit = first[sample] != h
        if not fit.any():
            fit = np.ones(sample.shape[0], dtype=bool)
        # a half holding one class of every pair (two classes, a sample or
        # two of each; one sample of each of three) fits sigmoids that say
        # one side whatever the value: no estimate of the other half's
        one_sided |= not _both_sides(pair[fit], target[fit], P).any()
        # The fit half is the other half of choose_prior_samples' split: its
        # pooled sigmoid is already fitted there (the same values, so the same bits).
        pooled_fit = halves_pooled.get(not h) if not fit.all() else None
        A, B = fit_platt_shrunk(dec[fit], pair[fit], target[fit], P, prior_samples=n0, pooled=pooled_fit)
        # row by row in place: logits[rows] = A logits[rows] + B made two
        # copies of the rows (the same products and sums, so the same bits)
        for r in np.flatnonzero(row_half == h):
            logits[r] *= A
            logits[r] += B
    table = PairTable(model.pair_a, model.pair_b, model.n_classes)

    def couple(r, winner):
        return np.concatenate([couple_mass(r[s:s + 64], winner[s:s + 64], table)
                               for s in range(0, r.shape[0], 64)]) if r.shape[0] else np.zeros((0, table.K))

    # Two classes couple nothing: the sharpness, which undoes the coupling's
    # flattening, would only steepen the one sigmoid fitted on these samples.
    gamma = fit_sharpness(logits, sharp_winner, sharp_y, couple) if model.n_classes > 2 else 1.0
    # How good the exact probabilities are, on rows whose sigmoids were fitted
    # without them: what calibrate reports beside its chosen setting.
    known = sharp_y >= 0
    quality = _quality(coupled_rows(logits, gamma, sharp_winner, couple, rows=np.flatnonzero(known)),
                       sharp_y[known]) if known.any() and not one_sided else None
    pooled = pooled_sigmoid(dec, target)
    A, B = fit_platt_shrunk(dec, pair, target, P, prior_samples=n0, pooled=pooled)
    info = {"platt": "per-pair Platt sigmoids shrunk toward the pooled sigmoid (prior worth n0 samples, n0 by "
                     "two-fold cross-fitting) and sharpened by gamma fitted on the coupled probabilities",
            "prior_samples": n0, "prior_samples_scores": {str(k): v for k, v in scores.items()},
            "pooled_sigmoid": list(pooled[0]), "sharpness": gamma, "sharpness_rows": int(sharp_rows.shape[0]),
            "exact_quality": quality}
    return {"platt_A": gamma * A, "platt_B": gamma * B, "info": info}


class _CertifiedRefines:
    """The max-wins refines of every first stage scored on the exact pass's
    decision blocks (:mod:`hsvm_cli.predict.certified_votes`): for each such
    setting (fixed k, 1 < k < K, refined with the sampled product; one-bag
    models), each row's winner and whether it is certified to be the
    refine's own label."""

    def __init__(self, model, Xn, stages):
        self.model = model
        self.jobs = []
        if model.bags == 1:
            K = model.n_classes
            for stage, (_, (votes, margins), settings) in enumerate(stages):
                for i, (k, eps, rule) in enumerate(settings):
                    if rule == "vote" and eps is None and 1 < k < K and \
                            not dense_is_cheaper(k, model):
                        self.jobs.append((stage, i, top_classes(votes, margins, k)))
        n = Xn.shape[0]
        self.best = [np.empty(n, dtype=np.int64) for _ in self.jobs]
        self.ok = [np.zeros(n, dtype=bool) for _ in self.jobs]
        if self.jobs:
            self.lookup = PairLookup(model.pair_a, model.pair_b, model.n_classes)
            self.x_norms = sample_norms(Xn)
            self.w_norms = classifier_norms(model.W)

    def block(self, s, dec):
        if not self.jobs:
            return
        e = s + dec.shape[0]
        uncertain = uncertain_cells(dec, self.x_norms[s:e], self.w_norms, self.model.n_features)
        for j, (_, _, kept) in enumerate(self.jobs):
            self.best[j][s:e], self.ok[j][s:e] = certified_kept_winners(self.model, self.lookup, dec, kept[s:e],
                                                                        uncertain)

    def summary(self):
        """How many max-wins refines were scored on the exact pass, and the
        share of their rows certified there (the rest were refined)."""
        rows = sum(ok.shape[0] for ok in self.ok)
        return {"settings": len(self.jobs),
                "certified_rows": float(sum(int(ok.sum()) for ok in self.ok) / rows) if rows else None}

    def of_stage(self, stage):
        """{setting index: (winners, certified)} of one stage."""
        return {i: (self.best[j], self.ok[j]) for j, (st, i, _) in enumerate(self.jobs) if st == stage}


def _stage_accuracy(predictors, X, Xn, ranking, threads, certified=None):
    """(labels [n], refined classes in all) of every predictor of one first
    stage on the whole validation set, given the stage's ranking (votes,
    margins) of its rows.  ``certified``: {predictor index: (winners,
    certified rows)} of the max-wins refines scored on the exact pass; their
    other rows are refined here.  The refines that can share their exact
    decisions do (:mod:`hsvm_cli.predict.shared_refine`) -- except, when the
    max-wins refines were certified, the DAG refines, whose k - 1 decisions a
    sample cost less than the pairs of a shared base -- and the others predict
    directly from the ranking (the same labels as ``predict_block`` on X)."""
    certified = certified or {}
    out = [None] * len(predictors)
    n = Xn.shape[0]
    if certified:
        idx = sorted(certified)
        bad = np.flatnonzero(~np.logical_and.reduce([certified[i][1] for i in idx]))
        fixed = []
        if bad.size:
            fixed = shared_refine_labels([predictors[i] for i in idx], Xn[bad], ranking[0][bad], ranking[1][bad],
                                         max_cells=Predictor.MAX_CELLS, threads=threads or 1)
        for j, i in enumerate(idx):
            best = certified[i][0].copy()
            if bad.size:
                best[bad] = fixed[j][0]
            out[i] = (predictors[i].model.classes[best], predictors[i].k * n)
    shared = [i for i, p in enumerate(predictors)
              if out[i] is None and shares_refine(p) and not (certified and p.dag is not None)]
    found = shared_refine_labels([predictors[i] for i in shared], Xn, *ranking, max_cells=Predictor.MAX_CELLS,
                                 threads=threads or 1)
    for i, (best, refined) in zip(shared, found):
        out[i] = (predictors[i].model.classes[best], int(refined.sum()))
    for i, p in enumerate(predictors):
        if out[i] is None:
            t = Timings()
            block = p._predict_block(X, filter_votes=ranking, timings=t)
            out[i] = (block.labels, t.counters.get("refined_classes", 0))
    return out


def loss_bound(row, n, confidence):
    """An upper confidence bound, in points, on a setting's accuracy loss
    against exact prediction, from the validation rows it gets right where
    exact is wrong (``gains``) and the reverse (``losses``): the paired
    difference (losses - gains)/n plus ``confidence`` standard errors of it,
    sqrt(losses + gains - (losses - gains)^2/n)/n (the two predictions share
    their samples, so only the rows they disagree on carry its noise; with
    confidence 1, a one-sided ~84% bound under the normal approximation).
    Rows without these counts (calibrations written before them) give the
    plain loss.  Half a disagreeing row is added to each side under the
    root (as Agresti and Caffo's add-one interval does for paired
    proportions): without it a setting that agreed with exact on two
    validation rows read as losing nothing for certain (standard error 0)
    and won on speed however much it loses elsewhere."""
    if n <= 0 or "gains" not in row:
        return None
    g, l = row["gains"], row["losses"]
    diff = (l - g) / n
    se = np.sqrt(max(0.0, l + g + 1 - (l - g) ** 2 / n)) / n
    return 100.0 * (diff + confidence * se)


def _choose(cal, grid, max_loss, confidence=0.0, n=0):
    """The fastest row whose loss against exact, plus ``confidence`` standard
    errors of it (:func:`loss_bound`), is within ``max_loss`` points becomes
    the setting (and is returned); every row gets its speed-up, its bound and
    whether it was chosen."""
    floor = grid[0]["accuracy"] - max_loss / 100.0
    ok = []
    for g in grid:
        bound = loss_bound(g, n, confidence)
        g["loss_bound"] = bound
        if g is grid[0] or (g["accuracy"] >= floor - 1e-12 and (bound is None or bound <= max_loss + 1e-9)):
            ok.append(g)
    chosen = min(ok, key=lambda g: g["seconds_per_sample"])
    for g in grid:
        g["speedup"] = grid[0]["seconds_per_sample"] / g["seconds_per_sample"]
        g["chosen"] = g is chosen
    cal.setting = Setting(chosen["mode"], chosen["bits"],
                          chosen["k"] if chosen["epsilon"] is None else chosen["max_k"], chosen["epsilon"],
                          chosen.get("rule", "vote"))
    cal.grid = grid
    return chosen


def _why(chosen, grid, max_loss, confidence=0.0):
    """Why ``chosen`` was chosen, in one sentence for the calibration file."""
    exact = grid[0]
    # the loss compared is the bound of loss_bound (--confidence standard errors added)
    within = "within %.2f points of exact accuracy%s" % (
        max_loss, "" if not confidence else " (the loss counted with %g standard error%s)"
        % (confidence, "" if confidence == 1 else "s"))
    if len(grid) == 1:
        return "exact prediction: no hash model was given (-H) and no other setting was tried, so exact is the " \
               "only setting"
    if chosen is exact:
        return "exact prediction: no other setting %s was faster on this machine" % within
    speed = exact["seconds_per_sample"] / chosen["seconds_per_sample"]
    dag = ", decision DAG refine" if chosen.get("rule") == "dag" else ""
    if chosen["mode"] == "exact":
        what = "exact decision DAG (K-1 classifiers per sample)"
    elif chosen["mode"] == "scores":
        what = "class-score first stage, k=%d%s" % (chosen["k"], dag)
    else:
        what = "hash filter at %d bits, %s%s" % (chosen["bits"], "k=%d" % chosen["k"] if chosen["epsilon"] is None
                                                else "threshold %g (at most %d classes)" % (chosen["epsilon"],
                                                                                             chosen["max_k"]), dag)
    return "%s: the fastest setting %s, %.1fx faster than exact on this machine" % (what, within, speed)


def _mode_label(g):
    """exact, exact+dag, hash, hash+dag, scores, scores+dag."""
    return g["mode"] + ("+dag" if g.get("rule") == "dag" else "")


def format_grid(cal):
    """The grid as a table in the shape of the paper's Table 1."""
    exact = cal.grid[0]
    # "bound": the loss in points plus --confidence standard errors of it,
    # what --max-loss is compared with (a faster setting above it is not chosen)
    lines = ["%-11s %6s %-18s %9s %8s %7s %10s %9s %9s %8s" % ("mode", "bits", "refined classes", "accuracy",
                                                                "vs exact", "bound", "us/sample", "speed-up", "timed",
                                                                "")]
    for g in cal.grid:
        mode = _mode_label(g)
        if g["mode"] == "exact":
            what = "all %d" % g["mean_refined"]
        elif g["mode"] == "scores":
            what = "k=%d" % g["k"]
        elif g["epsilon"] is not None:
            what = "p>%g: %.2f avg" % (g["epsilon"], g["mean_refined"])
        else:
            what = "k=%d" % g["k"]
        timed = "%dx%d" % (g["timed_rows"], g["timed_runs"]) if g.get("timed_rows") is not None else "-"
        bound = "-" if g is exact or g.get("loss_bound") is None else "%.2f" % g["loss_bound"]
        lines.append("%-11s %6s %-18s %8.2f%% %+8.2f %7s %10.1f %8.1fx %9s %8s" % (
            # rounded first, + 0.0: a loss below half a hundredth read "-0.00"
            mode, g["bits"] or "-", what, 100 * g["accuracy"],
            round(100 * (g["accuracy"] - exact["accuracy"]), 2) + 0.0, bound,
            1e6 * g["seconds_per_sample"], g["speedup"], timed, "<- chosen" if g.get("chosen") else ""))
    caps = sorted({g["max_k"] for g in cal.grid if g.get("epsilon") is not None and g.get("max_k") is not None})
    if caps:
        # the cap was said only in --grid-json: "4.00 avg" at every small threshold read as a limit of the data
        lines.append("p>E: the classes whose first-stage probability exceeds E, at most %s a sample (as predict "
                     "-C applies it)" % " / ".join(str(c) for c in caps))
    info = cal.info
    if info.get("timing_budget_seconds") is None:
        lines.append("accuracy on all %d validation samples; times measured on this machine (%s), median of %d runs "
                     "over %d of them" % (info.get("validation_samples"), info.get("timed_on"), info.get("repeat"),
                                          info.get("timed_samples", 0)))
    else:
        lines.append("accuracy on all %d validation samples; times measured on this machine (%s): the median of up "
                     "to %d runs over %d evenly spaced of them, within %g s per setting (fewer runs, then fewer rows, "
                     "at least %d, for slower settings; timed: rows x runs)"
                     % (info.get("validation_samples"), info.get("timed_on"), info.get("repeat"),
                        info.get("timed_samples", 0), info["timing_budget_seconds"],
                        # a validation set smaller than the floor is timed whole
                        min(info.get("min_timed_rows", 0), info.get("timed_samples", 0))))
    lines.append("chosen: " + cal.info.get("why", ""))
    exact = cal.info.get("exact_quality")
    if exact is not None:
        lines.append("exact probabilities (predict -C --exact --proba) on %d of the validation samples, whose "
                     "sigmoids were fitted without them: NLL %.3f, ECE %.3f, mean top probability %.3f against %.1f%% "
                     "accuracy of the most probable class"
                     % (exact["rows"], exact["nll"], exact["ece"], exact["mean_top_probability"],
                        100 * exact["accuracy"]))
    quality = cal.info.get("two_stage_quality")
    if quality is not None:
        # named: the probabilities' path need not be the chosen setting's
        filt = cal.two_stage_filter()
        path = " -H: %s, refined by votes" % filt if filt else ""
        lines.append("its probabilities (predict -C --proba%s) on the %d validation samples they were fitted on: NLL "
                     "%.3f, ECE %.3f, mean top probability %.3f at %.1f%% accuracy"
                     % (path, cal.info.get("two_stage_rows", 0), quality["nll"], quality["ece"],
                        quality["mean_top_probability"], 100 * quality["accuracy"]))
    # the marker column is empty on most rows: no trailing blanks (diffs, copies into tables)
    return "\n".join(line.rstrip() for line in lines) + "\n"
