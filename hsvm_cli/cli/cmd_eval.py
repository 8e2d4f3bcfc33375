"""hsvm eval: accuracy, mean per-class accuracy, macro-F1, confusion matrix; with
scores also top-k (filter) recall, with probabilities NLL, calibration and
Chow's error-reject trade-off; agreement with a reference; an optional plot."""
import click

from ..evaluation.file_report import evaluate
from ..io.files import atomic_output, outputs_together, reads_stdin
from . import options


def _parse_ks(ctx, param, value):
    if value is None:
        return None
    try:
        items = value.split(",")
        if value.strip() and any(not v.strip() for v in items):
            # '1,,2': a list mistyped, not two values
            raise ValueError
        ks = sorted({options.decimal_int(v) for v in items if v.strip()})
    except ValueError:
        raise click.BadParameter("expected integers separated by commas, such as 1,5,24") from None
    if not ks:
        raise click.BadParameter("no k given: expected integers separated by commas, such as 1,5,24")
    if ks[0] < 1:
        raise click.BadParameter("every k must be at least 1")
    return ks


_path = options.INPUT
_FILES = "[TRUTH] PREDICTIONS"


class _EvalCommand(click.Command):
    def collect_usage_pieces(self, ctx):
        # the files are optional as a whole (--grid alone); errors keep naming them '[TRUTH] PREDICTIONS'
        return ["[%s]" % p if p == _FILES else p for p in super().collect_usage_pieces(ctx)]


@click.command("eval", cls=_EvalCommand, short_help="Score predictions against the true labels.")
@click.option("--truth", type=_path,
              help="The labelled svmlight file the predictions were made for.")
@click.argument("predictions", nargs=-1, type=_path, metavar=_FILES)
@click.option("--confusion", is_flag=True, help="Also print the confusion matrix.")
@click.option("--per-class", is_flag=True,
              help="Also print each label's precision, recall, F1 and support (scikit-learn's "
                   "classification_report; --json always holds them).")
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
              help="The grid `hsvm calibrate --grid-json` wrote ({\"grid\": [rows], \"info\": {...}}; a row per "
                   "setting: mode exact, scores or hash, rule vote or dag, bits (null without hashing), k, "
                   "epsilon, accuracy, seconds_per_sample): tabulated, and drawn with --plot.  TRUTH and "
                   "PREDICTIONS may then be omitted.")
@click.option("--plot", type=options.OUTPUT_FILE,
              help="Draw the error-reject curve, the top-k recall curve and the grid into this image: SVG or "
                   "PDF for a name ending .svg or .pdf, else PNG (needs matplotlib: pip install 'hsvm[plot]').")
@options.as_json
@options.output(what="The report")
@click.option("-q", "--quiet", is_flag=True,
              help="No note on stderr (eval writes its report, and a note for an empty --shard).")
@click.option("--zero-based", is_flag=True,
              help="Accepted as the commands that read svmlight data take it (a recipe may pass it to each of "
                   "them): eval reads only TRUTH's labels, so its feature indices may start at 0 or 1 either way.")
@click.option("--shard", callback=options._shard_callback, metavar="i/N",
              help="Evaluate shard i of N (0-based; 'slurm': this job array task's) of the plain TRUTH file "
                   "against PREDICTIONS (and --reference) written by `hsvm predict --shard i/N` for it.  Only "
                   "shard 0's --scores/--proba output has the 'labels' header: another shard's gives its labels' "
                   "sections; evaluate the concatenated output for the score and probability sections.")
@options.outputs_apart((("plot", "--plot"), ("output", "-o")), ("truth", "predictions", "reference", "grid"))
def command(truth, predictions, confusion, per_class, proba, recall_k, reference, grid, plot, as_json, output, quiet,
            zero_based, shard):
    """Compare PREDICTIONS ('-': stdin, as written by `hsvm predict`: one label
    per line, or with --scores / --proba a 'labels c1 ... cK' header and a score
    per class) with the labels of TRUTH (--truth TRUTH, or the first of two
    arguments).  With --grid alone: the calibration grid's report, no files."""
    if len(predictions) > 2 or (len(predictions) == 2 and truth is not None):
        raise click.UsageError("eval takes TRUTH and PREDICTIONS (as --truth TRUTH PREDICTIONS or TRUTH "
                               "PREDICTIONS), got %d file arguments%s"
                               % (len(predictions), " beside --truth" if truth is not None else ""))
    if len(predictions) == 2:
        truth, predictions = predictions
    else:
        predictions = predictions[0] if predictions else None
    stdin = [n for n, v in (("--truth", truth), ("PREDICTIONS", predictions), ("--reference", reference),
                            ("--grid", grid)) if reads_stdin(v)]
    if len(stdin) > 1:
        raise click.BadParameter("only one of %s can be stdin" % " and ".join(stdin))
    if truth is None and predictions is not None:
        # one file: which of the two it was meant as cannot be told
        raise click.UsageError("eval takes TRUTH and PREDICTIONS (TRUTH PREDICTIONS, or --truth TRUTH PREDICTIONS), "
                               "got one file argument")
    if (truth is None) != (predictions is None) or (truth is None and grid is None):
        raise click.UsageError("Missing %s (only --grid can do without TRUTH and PREDICTIONS)"
                               % ("TRUTH and PREDICTIONS" if truth is None else "argument 'PREDICTIONS'"))
    if truth is None:
        for flag, value in (("--reference", reference), ("--recall-k", recall_k), ("--proba", proba),
                            ("--shard", shard)):
            if value is not None:
                raise click.UsageError("%s needs TRUTH and PREDICTIONS" % flag)
    if plot == "-":
        raise click.BadParameter("the picture needs a file name (stdout carries the report)", param_hint=["--plot"])
    if plot is not None:
        from ..evaluation.plots import require_matplotlib
        require_matplotlib()  # before the work, not after it

    result = evaluate(truth, predictions, proba=proba, recall_k=recall_k, reference=reference, grid=grid,
                      zero_based=zero_based, shard=shard, confusion=confusion)
    text = result.json(confusion=confusion) if as_json else result.text(confusion=confusion, per_class=per_class)
    # a report file and the picture are renamed into place together, so that
    # a recipe's target is never a report whose picture failed
    with outputs_together():
        if plot is not None:
            result.plot(plot)
        if output != "-":
            with atomic_output(output, "w") as fh:
                fh.write(text)
    if output == "-":
        click.echo(text, nl=False)
    report = result.report
    absent = [label for label, support in zip(report.get("labels", ()), report.get("per_class", {}).get("support", ()))
              if support == 0]
    if absent and not quiet:
        # a stray label (a model of other classes, a file of another data
        # set) lowers macro F1 by a whole class: said, as scikit-learn warns
        click.echo("hsvm: eval: note: %s never in %s (%s%s): counted as errors, and macro F1 counts %s as %s "
                   "of F1 0" % (options.counted(len(absent), "predicted label"),
                                ("shard %s of %s" % (shard, click.format_filename(truth))) if shard is not None
                                else click.format_filename(truth),
                                ", ".join(map(str, absent[:5])), ", ..." if len(absent) > 5 else "",
                                "it" if len(absent) == 1 else "them", "a class" if len(absent) == 1 else "classes"),
                   err=True)
    if shard is not None and truth is not None and report.get("samples") == 0 and not quiet:
        # a short file cut into many shards: said, not failed
        click.echo("hsvm: eval: shard %s of %s holds no samples: its report counts 0 of 0"
                   % (shard, click.format_filename(truth)), err=True)
