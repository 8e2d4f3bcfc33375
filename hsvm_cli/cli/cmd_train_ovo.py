"""hsvm train-ovo: one LIBLINEAR classifier per class pair (and bag); C given or
chosen by cross-validation."""
import math

import click

from ..models.ovo import save_model
from ..train.liblinear import SOLVERS
from ..train.ovo import cross_validate_file, train_ovo_file
from . import options


def _parse_c(ctx, param, value):
    if isinstance(value, float):
        return value
    if value.strip().lower() == "auto":
        return "auto"
    try:
        c = float(value)
    except ValueError:
        raise click.BadParameter("expected a positive number or 'auto', got %r" % value) from None
    if not (math.isfinite(c) and c > 0):
        raise click.BadParameter("must be a positive number or 'auto', got %r" % value)
    return c


def _parse_grid(ctx, param, value):
    values = options.comma_list(float, "numbers")(ctx, param, value)
    if values is not None and (not values or any(not (math.isfinite(c) and c > 0) for c in values)):
        raise click.BadParameter("every C must be a positive number")
    return values


@click.command("train-ovo")
@options.input_path(name="train")
@click.option("-o", "--output", type=click.Path(), default=None,
              help="Model file to write (.hsvm); required unless --cv with a fixed C only reports the "
                   "cross-validated accuracy (as svm-train -v). Written to a temporary name, then renamed.")
@click.option("-c", "C", default="1", show_default=True, callback=_parse_c, metavar="C|auto",
              help="Cost parameter C of every pair's SVM, or 'auto': chosen by cross-validation on a doubling "
                   "grid (see --cv), as LIBLINEAR's -C.")
@click.option("--c-grid", "c_grid", callback=_parse_grid, default=None, metavar="C1,C2,...",
              help="Choose C among these values by cross-validation (implies -c auto).")
@click.option("--cv", "cv_folds", type=click.IntRange(min=2), default=None, metavar="F",
              help="Folds of the cross-validation (stratified by class, from --seed; default 5 with -c auto). "
                   "With a fixed C: report the F-fold accuracy, and train only with -o.")
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="l2loss-dual", show_default=True,
              help="LIBLINEAR solver: L2-regularised L2-loss SVC dual (-s 1) or primal (-s 2), L1-loss SVC dual (-s 3).")
@click.option("--eps", "tol", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stopping tolerance (default: LIBLINEAR's for the solver).")
@click.option("--per-class", type=click.IntRange(min=1), default=None,
              help="At most N random training samples of each class per pair.")
@click.option("--bags", type=click.IntRange(min=1), default=1, show_default=True,
              help="Bootstrap resamples per pair, each its own classifier (1: no bootstrap).")
@click.option("--normalize", type=click.Choice(["l2", "none"]), default="l2", show_default=True,
              help="Sample normalisation, recorded in the model and applied again at prediction.")
@click.option("-B", "--bias", default="auto", show_default=True, callback=lambda ctx, p, v: _parse_c(ctx, p, v),
              metavar="B|auto",
              help="Value of the constant feature whose weight is the bias (LIBLINEAR's -B); auto: 1 for "
                   "L2-normalised samples, the samples' root-mean-square norm with --normalize none.")
@options.seed
@options.jobs
@options.zero_based
@options.quiet
def command(train, output, C, c_grid, cv_folds, solver, tol, per_class, bags, normalize, bias, seed, jobs,
            zero_based, quiet):
    """Train a one-vs-one linear SVM model from the svmlight file TRAIN ('-': stdin).

    With -c auto (or --c-grid) the cross-validation table (C, CV accuracy,
    seconds) is printed and the model trained at the best C; the choice and the
    table are recorded in the model."""
    searching = C == "auto" or c_grid is not None
    progress = options.show_progress(quiet)
    common = dict(solver=solver, tol=tol, normalize=normalize, seed=seed, jobs=jobs, zero_based=zero_based, bias=bias)
    if output is None:
        if cv_folds is None or searching:
            raise click.UsageError("Missing option '-o' / '--output'.")
        search = cross_validate_file(train, C=C, folds=cv_folds, progress=progress, **common)
        click.echo(search.table(), nl=False)
        return
    model = train_ovo_file(train, C=C, c_grid=c_grid, cv_folds=cv_folds, per_class=per_class, bags=bags,
                           progress=progress, **common)
    save_model(model, output)
    search = model.training.search
    if search is not None:
        # The table is the command's result; with the model on stdout it goes to stderr.
        click.echo(search.table(), nl=False, err=output == "-")
    if not quiet:
        click.echo("hsvm: %d classes, %d pairs x %d bags, %d features, C = %g -> %s"
                   % (model.n_classes, model.n_pairs, model.bags, model.n_features, model.params["C"], output),
                   err=True)
