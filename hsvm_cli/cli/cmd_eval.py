"""hsvm eval: accuracy, mean per-class accuracy, macro-F1, confusion matrix."""
import click
import numpy as np

from . import options
from ..errors import InputFormatError
from ..fileio import display_name
from ..metrics import evaluate, format_json, format_report, read_predictions
from ..svmlight import iter_svmlight


@click.command("eval")
@click.option("--truth", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="The labelled svmlight file the predictions were made for.")
@click.argument("predictions", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--confusion", is_flag=True, help="Also print the confusion matrix.")
@options.as_json
@options.zero_based
def command(truth, predictions, confusion, as_json, zero_based):
    """Compare PREDICTIONS (one label per line, '-': stdin, as written by
    `hsvm predict`) with the labels of TRUTH."""
    if truth == "-" and predictions == "-":
        raise click.BadParameter("only one of --truth and PREDICTIONS can be stdin")
    y_true = np.concatenate([c.y for c in iter_svmlight(truth, zero_based=zero_based)] or [np.zeros(0, np.int64)])
    y_pred = read_predictions(predictions)
    if y_pred.shape[0] != y_true.shape[0]:
        raise InputFormatError(display_name(predictions), int(y_pred.shape[0]),
                               "%d predictions for the %d samples of %s"
                               % (y_pred.shape[0], y_true.shape[0], display_name(truth)))
    report = evaluate(y_true, y_pred)
    click.echo((format_json if as_json else format_report)(report, confusion=confusion), nl=False)
