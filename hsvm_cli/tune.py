"""``hsvm calibrate``: fit the probabilities and choose the cheapest setting
that stays within a given accuracy loss of exact prediction.

Every candidate -- exact prediction, and hash filtering at each bit count with
each k (fixed number of refined classes) or each probability threshold epsilon
(per-sample number) -- is run on the labelled validation set on this machine;
its accuracy and its measured time per sample (normalisation, hashing,
filtering and refining; parsing excluded) decide.  For few classes or very
sparse input exact scoring can beat hashing the sample; the measurement then
picks exact."""
import platform
import time

import numpy as np

from .errors import OptionError
from .models.calibration import Calibration, Setting, hash_identity
from .models.ovo import bag_mean
from .predict.exact import ExactScorer
from .predict.raw_filter import make_filter
from .predict.predictor import Predictor
from .preprocess import prepare
from .proba import estimators as est
from .proba.stages import fit_platt_from_decisions
from .support.labels import class_index
from .support.timing import Timings

DEFAULT_K_FRACTIONS = (0.01, 0.03, 0.1, 0.2)
DEFAULT_EPSILONS = (0.1, 0.03, 0.01, 0.003, 0.001)


def default_bits_grid(D):
    """64, 128, 256, ... below D, then D."""
    grid, b = [], 64
    while b < D:
        grid.append(b)
        b *= 2
    return grid + [D]


def default_k_grid(K):
    """1 and 1%, 3%, 10%, 20% of K (at least 2), below K."""
    ks = {1} | {max(2, int(round(f * K))) for f in DEFAULT_K_FRACTIONS}
    return sorted(k for k in ks if k < K)


def _median_seconds(fn, repeat):
    times = []
    out = None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def calibrate(model, h, X, y, *, max_loss=0.5, bits_grid=None, k_grid=None, epsilons=None, epsilon_max_k=None,
              threads=None, repeat=3, progress=None):
    """Fit a :class:`~hsvm_cli.models.calibration.Calibration` on the labelled
    validation samples X, y (raw, as read) for ``model`` and its hash model
    ``h``, and choose its setting: the fastest candidate within ``max_loss``
    accuracy points of exact prediction (see the module docstring).

    ``bits_grid`` (default 64, 128, ... up to the hashed D), ``k_grid``
    (default 1 and 1%, 3%, 10%, 20% of K) and ``epsilons`` (default 0.1 ...
    0.001, each with at most ``epsilon_max_k`` classes) span the candidates;
    each is timed ``repeat`` times (the median counts) on ``threads`` threads.
    ``progress``: a callable receiving one-line messages."""
    h.check_model(model)
    if max_loss < 0:
        raise OptionError("--max-loss must be >= 0")
    K = model.n_classes
    bits_grid = sorted(set(bits_grid or default_bits_grid(h.bits)))
    for b in bits_grid:
        h.check_bits(b)
    k_grid = sorted(set(k_grid if k_grid is not None else default_k_grid(K)))
    if any(k < 1 or k > K for k in k_grid):
        raise OptionError("every k must be between 1 and %d" % K)
    epsilons = sorted(set(epsilons if epsilons is not None else DEFAULT_EPSILONS), reverse=True)
    if epsilon_max_k is None:
        # The threshold decides how many classes to refine; the cap only bounds
        # the worst sample, so it sits well above the largest fixed k tried.
        epsilon_max_k = min(K, max(4, 2 * max(k_grid), int(round(0.2 * K))))
    yi = class_index(model.classes, np.asarray(y))
    if not (yi >= 0).any():
        raise OptionError("no validation label is a class of the model")
    tick = progress or (lambda msg: None)

    exact_row = _time_exact(model, X, y, repeat)
    tick("exact: %.2f%%" % (100 * exact_row["accuracy"]))
    cal = Calibration(alphas={}, model_sha256=model.content_sha256(), hash_identity=hash_identity(h),
                      **_fit_platt(model, X, yi))
    grid = [exact_row]
    for bits in bits_grid:
        cal.alphas[bits] = _fit_temperature(model, h, X, yi, bits, threads)
        configs = [(k, None) for k in k_grid] + [(epsilon_max_k, e) for e in epsilons]
        for k, eps in configs:
            grid.append(_time_hashed(model, h, cal, X, y, bits, k, eps, threads, repeat))
        tick("%d bits done" % bits)
    chosen = _choose(cal, grid, max_loss)
    cal.info = {"validation_samples": int(X.shape[0]), "exact_accuracy": exact_row["accuracy"],
                "max_loss_points": float(max_loss),
                "timed_on": "%s %s (%s)" % (platform.node(), platform.machine(), platform.processor() or "cpu"),
                "repeat": int(repeat),
                "why": _why(chosen, grid[0], max_loss)}
    return cal


def _time_exact(model, X, y, repeat):
    """Accuracy and median time per sample of exact prediction (after a
    warm-up that pages in the model)."""
    predictor = Predictor(model)
    predictor.predict(X)
    secs, labels = _median_seconds(lambda: predictor.predict(X), repeat)
    return {"mode": "exact", "bits": None, "k": None, "epsilon": None, "accuracy": float((labels == y).mean()),
            "seconds_per_sample": secs / X.shape[0], "mean_refined": model.n_classes}


def _fit_platt(model, X, yi):
    """Every pair's Platt sigmoid on its bag-mean exact decision values."""
    scorer = ExactScorer(model)
    Xn = prepare(model.normalize, X)
    blocks = ((s, bag_mean(dec, model.bags)) for s, dec in scorer.decision_blocks(Xn))
    A, B = fit_platt_from_decisions(model, blocks, yi)
    return {"platt_A": A, "platt_B": B}


def _fit_temperature(model, h, X, yi, bits, threads):
    """The first-stage softmax temperature at ``bits`` (labelled rows only)."""
    hf = make_filter(model, h, bits=bits, threads=threads)
    hv, hm = hf.hash_and_vote(prepare(model.normalize, X))
    known = yi >= 0
    return float(est.fit_temperature(est.first_stage_scores(hv[known], hm[known]), yi[known]))


def _time_hashed(model, h, cal, X, y, bits, k, eps, threads, repeat):
    """Accuracy, median time per sample and mean refined classes of the hash
    filter at ``bits`` keeping ``k`` classes (or, with ``eps``, the classes
    above that first-stage probability, at most ``k``)."""
    predictor = Predictor(model, h, bits=bits, filter_k=k, refine=k > 1, threads=threads, epsilon=eps,
                          calibration=cal)
    predictor.predict_block(X)  # warm-up: kernel plan, projection
    t = Timings()
    n = X.shape[0]
    secs, block = _median_seconds(lambda: predictor.predict_block(X, timings=t), repeat)
    refined = t.counters.get("refined_classes", 0) / (n * max(1, repeat))
    return {"mode": "hash", "bits": bits, "k": k if eps is None else None,
            "max_k": k if eps is not None else None, "epsilon": eps,
            "accuracy": float((block.labels == y).mean()), "seconds_per_sample": secs / n,
            "mean_refined": refined}


def _choose(cal, grid, max_loss):
    """The fastest row within ``max_loss`` points of exact becomes the setting
    (and is returned); every row gets its speed-up and whether it was chosen."""
    floor = grid[0]["accuracy"] - max_loss / 100.0
    ok = [g for g in grid if g["accuracy"] >= floor - 1e-12]
    chosen = min(ok, key=lambda g: g["seconds_per_sample"])
    for g in grid:
        g["speedup"] = grid[0]["seconds_per_sample"] / g["seconds_per_sample"]
        g["chosen"] = g is chosen
    cal.setting = Setting(chosen["mode"], chosen["bits"],
                          chosen["k"] if chosen["epsilon"] is None else chosen["max_k"], chosen["epsilon"])
    cal.grid = grid
    return chosen


def _why(chosen, exact, max_loss):
    """Why ``chosen`` was chosen, in one sentence for the calibration file."""
    if chosen["mode"] == "exact":
        return ("exact prediction: no hashed setting within %.2f points of exact accuracy was faster "
                "on this machine" % max_loss)
    what = "k=%d" % chosen["k"] if chosen["epsilon"] is None else "threshold %g (at most %d classes)" % (
        chosen["epsilon"], chosen["max_k"])
    return ("hash filter at %d bits, %s: the fastest setting within %.2f points of exact accuracy, "
            "%.1fx faster than exact on this machine" % (chosen["bits"], what, max_loss,
                                                        exact["seconds_per_sample"] / chosen["seconds_per_sample"]))


def format_grid(cal):
    """The grid as a table in the shape of the paper's Table 1."""
    exact = cal.grid[0]
    lines = ["%-6s %6s %-18s %9s %8s %10s %9s %8s" % ("mode", "bits", "refined classes", "accuracy", "vs exact",
                                                      "us/sample", "speed-up", "")]
    for g in cal.grid:
        if g["mode"] == "exact":
            what = "all %d" % g["mean_refined"]
        elif g["epsilon"] is not None:
            what = "p>%g: %.2f avg" % (g["epsilon"], g["mean_refined"])
        else:
            what = "k=%d" % g["k"]
        lines.append("%-6s %6s %-18s %8.2f%% %+8.2f %10.1f %8.1fx %8s" % (
            g["mode"], g["bits"] or "-", what, 100 * g["accuracy"], 100 * (g["accuracy"] - exact["accuracy"]),
            1e6 * g["seconds_per_sample"], g["speedup"], "<- chosen" if g.get("chosen") else ""))
    lines.append("times measured on this machine (%s), median of %d runs over %d validation samples"
                 % (cal.info.get("timed_on"), cal.info.get("repeat"), cal.info.get("validation_samples")))
    lines.append("chosen: " + cal.info.get("why", ""))
    return "\n".join(lines) + "\n"
