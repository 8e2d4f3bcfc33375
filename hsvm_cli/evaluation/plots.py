"""Pictures for ``hsvm eval --plot``: the error-reject curve, top-k recall and the
accuracy of a bits x k grid.  matplotlib is optional (``pip install 'hsvm[plot]'``)
and only imported here, when a plot is asked for."""
import math
import os

import numpy as np

from ..errors import EX_UNAVAILABLE, HsvmError, printable
from ..io.files import atomic_output

INSTALL_HINT = "pip install 'hsvm[plot]'"


class PlotUnavailableError(HsvmError):
    exit_code = EX_UNAVAILABLE


def require_matplotlib():
    """The object-oriented Agg pieces of matplotlib.  pyplot is avoided: it keeps
    global figure state and may pick an interactive backend, neither of which a
    command-line tool (or a Python caller's session) wants."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailableError("--plot needs matplotlib, which is not installed: %s" % INSTALL_HINT) from None
    return Figure, FigureCanvasAgg


def _reject_panel(ax, reject, error, targets):
    r, e = 100 * np.asarray(reject), 100 * np.asarray(error)
    # rejecting every sample has no error rate to speak of (the curve sets 0)
    keep = r < 100
    r, e = r[keep], e[keep]
    ax.plot(r, e, color="C0", lw=1.6, label="Chow's rule")
    # Errors span decades down to exactly 0, and the targets sit near 0.1-0.5%:
    # logarithmic above the smallest target, linear below it, so 0 stays visible.
    floor = 100 * min([t for t, _ in targets] or [0.001])
    ax.set_yscale("symlog", linthresh=floor, linscale=0.5)
    top = max(e.max() if e.size else 0, 5 * floor) * 1.3
    ax.set_ylim(0, top)
    ticks = [v for v in (0, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if v <= top and (v == 0 or v >= floor)]
    ax.set_yticks(ticks)
    ax.set_yticklabels(["%g" % v for v in ticks])
    marked = False
    for t, needed in targets:
        ax.axhline(100 * t, color="0.75", lw=0.8, ls=":")
        if needed is not None:
            ax.plot([100 * needed], [100 * t], "o", color="C3", ms=4,
                    label=None if marked else "reject needed for a target error")
            marked = True
            right = needed > 0.7  # keep the label inside the axes
            ax.annotate("%.2f%%" % (100 * needed), (100 * needed, 100 * t), xytext=(-5 if right else 5, 2),
                        textcoords="offset points", fontsize=7, color="C3", ha="right" if right else "left")
    ax.set_xlim(0, 100)
    ax.set_xlabel("rejected samples (%)")
    ax.set_ylabel("error among accepted samples (%)")
    ax.set_title("Error-reject trade-off (maximum posterior)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)


def _recall_panel(ax, recall):
    K = len(recall["true_class"])
    k = np.arange(1, K + 1)
    ax.plot(k, 100 * recall["true_class"], color="C0", lw=1.6, label="true class in top k")
    if "reference" in recall:
        ax.plot(k, 100 * recall["reference"], color="C1", lw=1.6, ls="--", label="exact prediction in top k")
    if K > 20:
        ax.set_xscale("log")
    else:
        ax.set_xticks(k)
    ax.set_xlim(1, max(K, 2))
    ax.set_xlabel("k (classes kept by the filter)")
    ax.set_ylabel("samples (%)")
    ax.set_title("Top-k recall of the scores (K = %d)" % K)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)


def _is_scores(r):
    return r.get("mode") == "scores"


def _grid_groups(rows):
    """Hashed rows as one sorted series per (k, epsilon, rule); exact rows
    apart (class-score rows, which have no bits, are neither)."""
    groups = {}
    for r in rows:
        if r["bits"] is not None:
            # `hsvm calibrate` leaves k null in epsilon rows and puts the cap in max_k
            groups.setdefault((r["k"], r["epsilon"], r.get("max_k"), r.get("rule") or "vote"), []).append(r)

    def order(key):  # fixed-k series first, by k; then the epsilon series; vote before dag
        k, eps, max_k, rule = key
        return (eps is not None, k or 0, eps or 0.0, max_k or 0, rule)

    return [(key, sorted(groups[key], key=lambda r: r["bits"])) for key in sorted(groups, key=order)], \
        [r for r in rows if r["bits"] is None and not _is_scores(r)]


def _score_series(rows):
    """Class-score rows as one series per rule, by k."""
    groups = {}
    for r in rows:
        if _is_scores(r):
            groups.setdefault(r.get("rule") or "vote", []).append(r)
    return [(rule, sorted(groups[rule], key=lambda r: r["k"] or 0)) for rule in sorted(groups)]


def _series_label(key):
    k, eps, max_k, rule = key
    parts = []
    if eps is not None:
        parts.append("\u03b5=%g" % eps)
    if k is not None:
        parts.append("k=%d" % k)
    elif max_k is not None:
        parts.append("k\u2264%d" % max_k)
    if rule == "dag":
        parts.append("DAG refine")
    return ", ".join(parts) or "hash"


def _mark_chosen(ax, rows, x_of):
    chosen = [r for r in rows if r.get("chosen")]
    if chosen:
        ax.plot([x_of(r) for r in chosen], [100 * r["accuracy"] for r in chosen], "o", ms=11, mfc="none",
                mec="k", mew=1.5, label="chosen by calibrate")


def _exact_label(r):
    return ("exact DAG" if r.get("rule") == "dag" else "exact") + (" (k=%d)" % r["k"] if r["k"] is not None else "")


def _series_style(key):
    # epsilon series dashed over the solid fixed-k ones: equal accuracies stay visible
    if key[1] is not None:
        return {"ls": "--", "marker": "s", "ms": 3.5}
    return {"ls": ":", "marker": "^", "ms": 4.5} if key[3] == "dag" else {"ls": "-", "marker": "o", "ms": 4}


def _grid_bits_panel(ax, rows):
    series, exact = _grid_groups(rows)
    bits = sorted({r["bits"] for r in rows if r["bits"] is not None})
    for i, (key, rs) in enumerate(series):
        ax.plot([r["bits"] for r in rs], [100 * r["accuracy"] for r in rs], color="C%d" % (i % 10), lw=1.4,
                label=_series_label(key), **_series_style(key))
    for j, r in enumerate(exact):
        ax.axhline(100 * r["accuracy"], color="k", ls=("--", "-.", ":")[j % 3], lw=1.2, label=_exact_label(r))
    _mark_chosen(ax, [r for r in rows if r["bits"] is not None], lambda r: r["bits"])
    if bits:
        ax.set_xscale("log", base=2)
        ax.set_xticks(bits)
        ax.set_xticklabels([str(b) for b in bits])
        ax.minorticks_off()
    ax.set_xlabel("bits of the hash filter")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy against code length")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, alpha=0.3)


def _frontier(rows):
    """The settings no other setting beats in both time and accuracy, fastest first."""
    front, best = [], -1.0
    for r in sorted(rows, key=lambda r: (r["seconds_per_sample"], -r["accuracy"])):
        if r["accuracy"] > best:
            front.append(r)
            best = r["accuracy"]
    return front


def _grid_time_panel(ax, rows):
    from matplotlib.ticker import FuncFormatter

    def x_of(r):
        return 1e6 * r["seconds_per_sample"]

    series, exact = _grid_groups(rows)
    # Measured times are noisy, so lines through each series in bits order would
    # zigzag; points per series, and one line along the speed-accuracy frontier.
    for i, (key, rs) in enumerate(series):
        style = _series_style(key)
        ax.plot([x_of(r) for r in rs], [100 * r["accuracy"] for r in rs], ls="none", marker=style["marker"],
                ms=style["ms"] + 1, color="C%d" % (i % 10), label=_series_label(key))
    for j, (rule, rs) in enumerate(_score_series(rows)):
        ax.plot([x_of(r) for r in rs], [100 * r["accuracy"] for r in rs], ls="none", marker="D", ms=5,
                color="C%d" % ((len(series) + j) % 10),
                label="class scores" + (", DAG refine" if rule == "dag" else "") + " (k=%s)"
                % ",".join(str(r["k"]) for r in rs))
    for j, r in enumerate(exact):
        ax.axhline(100 * r["accuracy"], color="k", ls=("--", "-.", ":")[j % 3], lw=0.8)
        ax.plot([x_of(r)], [100 * r["accuracy"]], "*" if r.get("rule") != "dag" else "P", color="k", ms=10,
                label=_exact_label(r))
    front = _frontier(rows)
    ax.plot([x_of(r) for r in front], [100 * r["accuracy"] for r in front], color="0.3", lw=1.0, zorder=0,
            label="frontier (labels: bits)")
    for r in front:
        if r["bits"] is not None:
            ax.annotate(str(r["bits"]), (x_of(r), 100 * r["accuracy"]), xytext=(4, -10), textcoords="offset points",
                        fontsize=7, color="0.3")
    _mark_chosen(ax, rows, x_of)
    times = [x_of(r) for r in rows if r["seconds_per_sample"] > 0]
    if times:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
        # under two decades there are too few powers of ten to read the axis by
        narrow = max(times) / min(times) < 100
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: "%g" % v if narrow else ""))
        ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("time per sample (\u00b5s)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy against time")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)


def plot_eval(path, *, reject=None, recall=None, grid=None, targets=(), accuracy=None, title=None):
    """Draw whichever of the pieces are given, two panels a row, into ``path``
    (PNG, or PDF/SVG by extension), written atomically.

    reject: (reject_rate, error_rate) arrays; targets: (error_rate, reject_rate or
    None) pairs to mark on it; recall: {"true_class": recall@1..K, ["reference": ...]};
    grid: rows as :func:`hsvm_cli.io.grid.read_grid` returns them."""
    Figure, FigureCanvasAgg = require_matplotlib()
    panels = []
    if reject is not None:
        panels.append(lambda ax: _reject_panel(ax, reject[0], reject[1], list(targets)))
    if recall is not None:
        panels.append(lambda ax: _recall_panel(ax, recall))
    if grid:
        panels.append(lambda ax: _grid_bits_panel(ax, grid))
        panels.append(lambda ax: _grid_time_panel(ax, grid))
    if not panels:
        raise ValueError("nothing to plot")
    ncols = min(2, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(6.0 * ncols, 4.4 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for draw, ax in zip(panels, axes):
        draw(ax)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if title:
        head = title if accuracy is None else "%s: accuracy %.2f%%" % (title, 100 * accuracy)
        # the title holds a file name: printed as it is, not as mathtext ('$'
        # started a formula, and a malformed one was a traceback) and with
        # undecodable bytes escaped (matplotlib refused their surrogates)
        fig.suptitle(printable(head), fontsize=11, usetex=False, parse_math=False)
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    fmt = ext if ext in ("png", "pdf", "svg") else "png"
    # the same bytes from the same command line: no date in a PDF or SVG, and
    # an SVG's element ids drawn from a fixed salt instead of a random one
    import matplotlib
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
    with atomic_output(path, "wb") as fh, matplotlib.rc_context({"svg.hashsalt": "hsvm"}):
        fig.savefig(fh, format=fmt, dpi=110, metadata=metadata)
