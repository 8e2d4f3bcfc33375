"""hsvm eval: accuracy, mean per-class accuracy, macro-F1, confusion matrix; with
scores also top-k (filter) recall, with probabilities NLL, calibration and
Chow's error-reject trade-off; agreement with a reference; an optional plot."""
import click
import numpy as np

from . import options
from ..errors import InputFormatError
from ..fileio import display_name
from ..metrics import (class_index, default_recall_ks, evaluate, format_json, format_report, looks_like_probabilities,
                       probability_report, read_grid, read_predictions, read_scored_predictions, recall_report,
                       reference_report, require_probabilities)
from ..svmlight import iter_svmlight


def _parse_ks(ctx, param, value):
    if value is None:
        return None
    try:
        ks = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise click.BadParameter("expected integers separated by commas, such as 1,5,24") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter("every k must be at least 1")
    return ks


_path = click.Path(dir_okay=False, allow_dash=True)


@click.command("eval")
@click.option("--truth", type=_path,
              help="The labelled svmlight file the predictions were made for.")
@click.argument("predictions", required=False, type=_path)
@click.option("--confusion", is_flag=True, help="Also print the confusion matrix.")
@click.option("--proba/--no-proba", default=None,
              help="PREDICTIONS holds probabilities (`hsvm predict --proba`, LIBSVM `svm-predict -b 1`): every row "
                   "must be non-negative and sum to 1 (within 1e-6 + 5e-7 K, for printed rounding); adds NLL, ECE "
                   "and the error-reject trade-off.  Default: detected (such rows, not all whole numbers); "
                   "--no-proba: plain scores.")
@click.option("--recall-k", callback=_parse_ks, metavar="K1,K2,...",
              help="k of the top-k recall table (default: 1,2,3,5,10,20,50,... and K).  Needs a scores file.")
@click.option("--reference", type=_path,
              help="Labels of the exact prediction (`hsvm predict --exact`): agreement with it and, with scores, "
                   "how often the exact label is among the top k.")
@click.option("--grid", type=_path,
              help="JSON rows {bits, k, epsilon, accuracy, seconds_per_sample} (`hsvm calibrate`; bits null: "
                   "exact): tabulated, and drawn with --plot.  TRUTH and PREDICTIONS may then be omitted.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Draw the error-reject curve, the top-k recall curve and the grid into this PNG "
                   "(needs matplotlib: pip install 'hsvm[plot]').")
@options.as_json
@options.zero_based
def command(truth, predictions, confusion, proba, recall_k, reference, grid, plot, as_json, zero_based):
    """Compare PREDICTIONS ('-': stdin, as written by `hsvm predict`: one label
    per line, or with --scores / --proba a 'labels c1 ... cK' header and a score
    per class) with the labels of TRUTH."""
    stdin = [n for n, v in (("--truth", truth), ("PREDICTIONS", predictions), ("--reference", reference),
                            ("--grid", grid)) if v == "-"]
    if len(stdin) > 1:
        raise click.BadParameter("only one of %s can be stdin" % " and ".join(stdin))
    if (truth is None) != (predictions is None) or (truth is None and grid is None):
        raise click.UsageError("Missing %s (only --grid can do without TRUTH and PREDICTIONS)"
                               % ("option '--truth'" if truth is None else "argument 'PREDICTIONS'"))
    if truth is None:
        for flag, value in (("--reference", reference), ("--recall-k", recall_k), ("--proba", proba)):
            if value is not None:
                raise click.UsageError("%s needs TRUTH and PREDICTIONS" % flag)
    if plot == "-":
        raise click.BadParameter("the picture needs a file name (stdout carries the report)", param_hint="--plot")
    if plot is not None:
        from ..plots import require_matplotlib
        require_matplotlib()  # before the work, not after it

    report, curves = {}, {}
    if truth is not None:
        report, curves = _evaluate(truth, predictions, proba, recall_k, reference, zero_based)
    if grid is not None:
        report["grid"] = {"file": display_name(grid), "rows": read_grid(grid)}

    if plot is not None:
        from ..plots import plot_eval
        grid_rows = report["grid"]["rows"] if grid is not None else None
        if not (curves or grid_rows):
            raise click.UsageError("--plot: nothing to draw; PREDICTIONS has no scores or probabilities "
                                   "(`hsvm predict --scores` / `--proba`) and there is no (non-empty) --grid")
        targets = [(r["error_rate"], r["reject_rate"])
                   for r in report.get("probability", {}).get("reject_at_error", [])]
        plot_eval(plot, reject=curves.get("reject"), recall=curves.get("recall"), targets=targets,
                  grid=grid_rows,
                  accuracy=report.get("accuracy"), title=display_name(predictions) if predictions else None)
    click.echo((format_json if as_json else format_report)(report, confusion=confusion), nl=False)


def _evaluate(truth, predictions, proba, recall_k, reference, zero_based):
    y_true = np.concatenate([c.y for c in iter_svmlight(truth, zero_based=zero_based)] or [np.zeros(0, np.int64)])
    pred = read_scored_predictions(predictions)
    y_pred = pred.labels
    if y_pred.shape[0] != y_true.shape[0]:
        raise InputFormatError(pred.name, int(y_pred.shape[0]),
                               "%d predictions for the %d samples of %s"
                               % (y_pred.shape[0], y_true.shape[0], display_name(truth)))
    if proba:
        require_probabilities(pred)
    if recall_k is not None and not pred.has_scores:
        raise click.UsageError("--recall-k needs scores: %s has no 'labels ...' header "
                               "(`hsvm predict --scores` or `--proba` writes one)" % pred.name)
    is_proba = pred.has_scores and (proba if proba is not None else looks_like_probabilities(pred))

    report = evaluate(y_true, y_pred)
    curves = {}
    report["predictions"] = {"file": pred.name,
                             "kind": "probabilities" if is_proba else "scores" if pred.has_scores else "labels",
                             "classes": [int(c) for c in pred.classes] if pred.has_scores else None}
    y_ref = None
    if reference is not None:
        ref_name = display_name(reference)
        y_ref = read_predictions(reference)
        if y_ref.shape[0] != y_pred.shape[0]:
            raise InputFormatError(ref_name, int(y_ref.shape[0]), "%d labels for the %d predictions of %s"
                                   % (y_ref.shape[0], y_pred.shape[0], pred.name))
        report["reference"] = reference_report(ref_name, y_pred, y_ref, y_true)
    if pred.has_scores:
        K = len(pred.classes)
        ks = recall_k or default_recall_ks(K)
        if ks[-1] > K:
            raise click.UsageError("--recall-k %d: %s has only %d classes" % (ks[-1], pred.name, K))
        y_index = class_index(pred.classes, y_true)
        report["outside_classes"] = int((y_index < 0).sum())
        ref_index = class_index(pred.classes, y_ref) if y_ref is not None else None
        report["recall"], curves["recall"] = recall_report(pred, y_index, ks, ref_index)
        if is_proba and y_pred.shape[0]:
            report["probability"], curves["reject"] = probability_report(pred, y_index)
    return report, curves
