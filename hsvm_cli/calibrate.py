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

from . import probability as prob
from .calibration import Calibration, fit_platt_from_decisions, hash_identity
from .exact import ExactScorer
from .hashpredict import HashFilter, HashPredictor
from .predict import prepare
from .ranking import best_class
from .timing import Timings

DEFAULT_K_FRACTIONS = (0.01, 0.03, 0.1, 0.2)
DEFAULT_EPSILONS = (0.1, 0.03, 0.01, 0.003, 0.001)


def default_bits_grid(D):
    grid, b = [], 64
    while b < D:
        grid.append(b)
        b *= 2
    return grid + [D]


def default_k_grid(K):
    ks = {1} | {max(2, int(round(f * K))) for f in DEFAULT_K_FRACTIONS}
    return sorted(k for k in ks if k < K)


def class_indices(classes, y):
    """Index of each label in classes, -1 for labels that are no class."""
    pos = np.searchsorted(classes, y)
    pos = np.minimum(pos, classes.shape[0] - 1)
    return np.where(classes[pos] == y, pos, -1).astype(np.int64)


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
    """Fit a Calibration on the labelled validation samples X, y and choose its
    setting (see the module docstring).  ``max_loss`` is in accuracy points."""
    h.check_model(model)
    if max_loss < 0:
        raise ValueError("--max-loss must be >= 0")
    K = model.n_classes
    bits_grid = sorted(set(bits_grid or default_bits_grid(h.bits)))
    for b in bits_grid:
        h.check_bits(b)
    k_grid = sorted(set(k_grid if k_grid is not None else default_k_grid(K)))
    if any(k < 1 or k > K for k in k_grid):
        raise ValueError("every k must be between 1 and %d" % K)
    epsilons = sorted(set(epsilons if epsilons is not None else DEFAULT_EPSILONS), reverse=True)
    if epsilon_max_k is None:
        # The threshold decides how many classes to refine; the cap only bounds
        # the worst sample, so it sits well above the largest fixed k tried.
        epsilon_max_k = min(K, max(4, 2 * max(k_grid), int(round(0.2 * K))))
    yi = class_indices(model.classes, np.asarray(y))
    if not (yi >= 0).any():
        raise ValueError("no validation label is a class of the model")
    n = X.shape[0]
    tick = progress or (lambda msg: None)

    scorer = ExactScorer(model)

    def run_exact():
        Xn = prepare(model.normalize, X)
        v, c = scorer.votes(Xn)
        return model.classes[best_class(v, c)]

    run_exact()  # warm-up: page in the model
    t_exact, exact_labels = _median_seconds(run_exact, repeat)
    acc_exact = float((exact_labels == y).mean())
    tick("exact: %.2f%%" % (100 * acc_exact))

    Xn = prepare(model.normalize, X)
    step = scorer.block_rows()

    def mean_dec_blocks():
        for s in range(0, n, step):
            dec = scorer.decision(Xn[s:s + step])
            yield s, dec.reshape(dec.shape[0], model.n_pairs, model.bags).mean(axis=2)

    A, B = fit_platt_from_decisions(model, mean_dec_blocks(), yi)
    cal = Calibration(alphas={}, platt_A=A, platt_B=B, model_sha256=model.content_sha256(),
                      hash_identity=hash_identity(h))
    grid = [{"mode": "exact", "bits": None, "k": None, "epsilon": None, "accuracy": acc_exact,
             "seconds_per_sample": t_exact / n, "mean_refined": K}]
    for bits in bits_grid:
        hf = HashFilter(h, bits=bits, threads=threads)
        hv, hm = hf.votes(hf.hash_samples(Xn))
        known = yi >= 0
        cal.alphas[bits] = float(prob.fit_temperature(prob.first_stage_scores(hv[known], hm[known]), yi[known]))
        configs = [(k, None) for k in k_grid] + [(epsilon_max_k, e) for e in epsilons]
        for k, eps in configs:
            hp = HashPredictor(model, h, bits=bits, filter_k=k, refine=k > 1, threads=threads, epsilon=eps,
                               calibration=cal)
            hp.predict_block(X)  # warm-up: kernel plan, projection
            t = Timings()
            secs, block = _median_seconds(lambda: hp.predict_block(X, timings=t), repeat)
            refined = t.counters.get("refined_classes", 0) / (n * max(1, repeat))
            grid.append({"mode": "hash", "bits": bits, "k": k if eps is None else None,
                         "max_k": k if eps is not None else None, "epsilon": eps,
                         "accuracy": float((block.labels == y).mean()), "seconds_per_sample": secs / n,
                         "mean_refined": refined})
        tick("%d bits done" % bits)
    floor = acc_exact - max_loss / 100.0
    ok = [g for g in grid if g["accuracy"] >= floor - 1e-12]
    chosen = min(ok, key=lambda g: g["seconds_per_sample"])
    for g in grid:
        g["speedup"] = grid[0]["seconds_per_sample"] / g["seconds_per_sample"]
        g["chosen"] = g is chosen
    cal.setting = {"mode": chosen["mode"], "bits": chosen["bits"],
                   "k": chosen["k"] if chosen["epsilon"] is None else chosen["max_k"], "epsilon": chosen["epsilon"]}
    cal.grid = grid
    cal.info = {"validation_samples": int(n), "exact_accuracy": acc_exact, "max_loss_points": float(max_loss),
                "timed_on": "%s %s (%s)" % (platform.node(), platform.machine(), platform.processor() or "cpu"),
                "repeat": int(repeat),
                "why": _why(chosen, grid[0], max_loss)}
    return cal


def _why(chosen, exact, max_loss):
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
