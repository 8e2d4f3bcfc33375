"""hsvm train-ovo: one LIBLINEAR classifier per class pair (and bag); C given or
chosen by cross-validation; a block of the pairs into a part file (--pairs
i/N), or on a Dask cluster (--dask)."""
import math

import click
import numpy as np

from ..io.files import outputs_together, writes_to_stdout
from ..models.ovo import save_model
from ..train.bits_solver import BITS_SOLVERS
from ..train.c_search import c_text
from ..train.class_weight import parse_class_weight
from ..train.liblinear import SOLVERS, bias_too_large
from ..train.ovo import cross_validate_codes_file, cross_validate_file, train_ovo_codes_file, train_ovo_file
from ..train.sampling import MAX_BAGS
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


def _parse_bias(ctx, param, value):
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        b = float(value)
    except (TypeError, ValueError):
        b = math.nan
    if not math.isfinite(b):
        raise click.BadParameter("expected a finite number (<= 0: no bias term) or 'auto', got %r" % value)
    if bias_too_large(b):
        raise click.BadParameter("%r is too large: its square overflows (at most about 1e154)" % value)
    return 0.0 if b <= 0 else b         # LIBLINEAR's -B -1 (any B <= 0): no bias term, every b = 0


def _parse_class_weight(ctx, param, value):
    try:
        return parse_class_weight(list(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _parse_grid(ctx, param, value):
    # comma_list refuses an empty list and non-finite values
    values = options.comma_list(float, "numbers")(ctx, param, value)
    if values is not None and any(c <= 0 for c in values):
        raise click.BadParameter("every C must be a positive number")
    return values


@click.command("train-ovo", short_help="Train a one-vs-one linear SVM model.")
@options.input_path(name="train", required=False)
@click.option("--codes", "codes_path", type=options.INPUT_FILE, default=None,
              help="Train on the packed bits of this codes file (`hsvm hash-data -H KERNEL.khm`: Hash-SVM) instead of "
                   "svmlight TRAIN; the bits are the features, as +-1/sqrt(bits), read packed (expanded only for "
                   "-c auto, --c-grid or --cv, whose cross-validation runs on them).  A dual solver and one process: "
                   "not with l2loss-primal, --normalize, -B, --zero-based, --pairs or --dask.")
@click.option("--bits", type=options.INT, default=None, help="With --codes: use the first BITS bits (default: all).")
@click.option("-o", "--output", type=options.OUTPUT_FILE, default=None,
              help="Model file to write (.hsvm; with --pairs, the part file).  Without it, --cv, -c auto and "
                   "--c-grid only report: the cross-validated accuracy at a fixed C (as svm-train -v), or the "
                   "search's table and best C (as LIBLINEAR's -C).  Written to a temporary name, then renamed.")
@click.option("-c", "C", default="1", show_default=True, callback=_parse_c, metavar="C|auto",
              help="Cost parameter C of every pair's SVM, or 'auto': chosen by cross-validation (see --cv) on "
                   "powers of 2 from LIBLINEAR's start (from the data) up to 2^10, every other one first, then "
                   "the ones beside the best, stopping two past it (as LIBLINEAR's -C; a value equal to the best "
                   "counts only when no class is wholly wrong); --c-grid for your own values.")
@click.option("--c-grid", "c_grid", callback=_parse_grid, default=None, metavar="C1,C2,...",
              help="Choose C among these values by cross-validation (implies -c auto).")
@click.option("-v", "--cv", "cv_folds", type=options.IntRange(min=2), default=None, metavar="F",
              help="Folds of the cross-validation (stratified by class, from --seed; default 5 with -c auto). "
                   "With a fixed C: report the F-fold accuracy, and train only with -o.  Cross-validation (--cv, "
                   "-c auto, --c-grid) does not combine with --bags or --per-class.")
@click.option("--solver", type=click.Choice(sorted(SOLVERS)), default="l2loss-dual", show_default=True,
              help="LIBLINEAR solver: L2-regularised L2-loss SVC dual (-s 1) or primal (-s 2), L1-loss SVC dual (-s 3).")
@click.option("-e", "--eps", "tol", type=options.FiniteFloat(min=0, min_open=True), default=None,
              help="Stopping tolerance (default: LIBLINEAR's for the solver).")
@click.option("-w", "--class-weight", "class_weight", multiple=True, callback=_parse_class_weight,
              metavar="LABEL:WEIGHT|balanced",
              help="Class LABEL's C is WEIGHT x C in every pair it is in (LIBSVM's and LIBLINEAR's -wLABEL WEIGHT; "
                   "repeat for more classes; others weigh 1), also in the cross-validation of -c auto / --cv; "
                   "balanced: n / (K n_c) for every class c, from the class counts of TRAIN (with --per-class N, "
                   "min(n_c, N); scikit-learn's class_weight='balanced').  WEIGHT > 0, and LABEL a class of TRAIN "
                   "(svm-train accepts 0 and warns of an absent label).  Recorded in the model.")
@click.option("--per-class", type=options.IntBounds(min=1, max=(1 << 63) - 1), default=None,
              help="At most N random training samples of each class per pair.")
@click.option("--bags", type=options.IntBounds(min=1, max=MAX_BAGS), default=1, show_default=True,
              help="Bootstrap resamples per pair, each its own classifier (1: no bootstrap).")
@click.option("--normalize", type=click.Choice(["l2", "none", "auto"]), default="l2", show_default=True,
              help="Sample normalisation, recorded in the model and applied again at prediction; auto: the "
                   "one the cross-validation of -c auto / --c-grid / --cv prefers (both searched: twice "
                   "the time).")
@click.option("-B", "--bias", default="auto", show_default=True, callback=_parse_bias,
              metavar="B|auto",
              help="Value of the constant feature whose weight is the bias (LIBLINEAR's -B); auto: 1 for "
                   "L2-normalised samples, the samples' root-mean-square norm with --normalize none; -1 (any "
                   "value <= 0): no bias term, as LIBLINEAR's -B -1.")
@click.option("--pairs", "block", callback=options._shard_callback, metavar="i/N",
              help="Train only block i of N (0-based; 'slurm': this job array task's) of the class pairs -- "
                   "contiguous blocks of nearly equal estimated cost (rows per pair), the same in every task -- "
                   "into a part file; `hsvm merge-models` joins the N parts into this command's model without "
                   "--pairs, byte for byte.")
@options.dask("Pair blocks become tasks; the training data goes once to each worker; the model is the "
              "single-process file byte for byte.")
@options.seed
@options.jobs
@options.zero_based
@options.quiet
@options.outputs_apart((("output", "-o"),), ("train", "codes_path"), binary=("output",))
def command(train, codes_path, bits, output, C, c_grid, cv_folds, solver, tol, class_weight, per_class, bags,
            normalize, bias, block, dask_address, seed, jobs, zero_based, quiet):
    """Train a one-vs-one linear SVM model from the svmlight file TRAIN ('-': stdin),
    or from the codes file given with --codes.

    With -c auto (or --c-grid) the cross-validation table (C, CV accuracy, its
    average with the grid neighbours, seconds) is printed -- on stderr when the
    model goes to stdout -- and the model trained at the best C; the choice and
    the table are recorded in the model."""
    ctx = click.get_current_context()
    if c_grid is not None and C != "auto" and ctx.get_parameter_source("C") != click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--c-grid searches C among its values: give it without -c (or with -c auto)")
    searching = C == "auto" or c_grid is not None
    validating = searching or cv_folds is not None
    if codes_path is not None:
        if train is not None:
            raise click.UsageError("give TRAIN or --codes, not both")
        for name in ("normalize", "zero_based", "bias"):
            if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
                raise click.UsageError("--%s is for svmlight input; codes are the features as they are"
                                       % name.replace("_", "-"))
        if block is not None or dask_address is not None:
            raise click.UsageError("--pairs and --dask train from svmlight TRAIN, not from --codes")
        if solver not in BITS_SOLVERS:
            raise click.BadParameter("training on codes takes a dual solver: %s" % ", ".join(sorted(BITS_SOLVERS)),
                                     param_hint=["--solver"])
        if output is None:
            if not validating:
                raise click.UsageError("Missing option '-o' / '--output' (only --cv F, -c auto or --c-grid run "
                                       "without one: they report, and write no model)")
            search = cross_validate_codes_file(codes_path, bits=bits, C=C, c_grid=c_grid, folds=cv_folds or 5,
                                               solver=solver, tol=tol, seed=seed, jobs=jobs, bags=bags,
                                               per_class=per_class, progress=options.show_progress(quiet),
                                               class_weight=class_weight)
            _report_search(search, cv_folds, quiet)
            return
        model = train_ovo_codes_file(codes_path, bits=bits, C=C, c_grid=c_grid, cv_folds=cv_folds, solver=solver,
                                     tol=tol, per_class=per_class, bags=bags, seed=seed, jobs=jobs,
                                     progress=options.show_progress(quiet), class_weight=class_weight)
        _save_with_search_table(model, output, cv_folds, quiet)
        if not quiet:
            options.log("hsvm: %d classes, %s x %s, %d bits (codes), C = %s -> %s"
                       % (model.n_classes, options.counted(model.n_pairs, "pair"), options.counted(model.bags, "bag"),
                          model.n_features, c_text(model.params["C"]), output))
        _warn_not_converged(model.training.not_converged, model.n_pairs * model.bags, solver, codes=True)
        return
    if train is None:
        raise click.UsageError("missing TRAIN (or --codes CODES)")
    if normalize == "auto" and not validating:
        raise click.UsageError("--normalize auto is chosen by cross-validation: give -c auto, --c-grid or --cv")
    if bits is not None:
        raise click.UsageError("--bits is for training on --codes")
    if validating and (block is not None or dask_address is not None):
        # Every block would repeat the whole search, and the recorded table
        # (its times) would differ from the single-process model's.
        raise click.UsageError("-c auto, --c-grid and --cv need every pair in one process: choose C first "
                               "(train-ovo TRAIN --cv F -c auto), then train with --pairs/--dask and -c C")
    progress = options.show_progress(quiet)
    if output is None:
        if not validating:
            # -o is optional in --help: say when it may be left out
            raise click.UsageError("Missing option '-o' / '--output' (only --cv F, -c auto or --c-grid run "
                                   "without one: they report, and write no model)")
        search = cross_validate_file(train, C=C, c_grid=c_grid, folds=cv_folds or 5, progress=progress, solver=solver,
                                     tol=tol, normalize=normalize, seed=seed, jobs=jobs, zero_based=zero_based,
                                     bias=bias, bags=bags, per_class=per_class, class_weight=class_weight)
        _report_search(search, cv_folds, quiet)
        return
    kw = dict(C=C, solver=solver, tol=tol, per_class=per_class, bags=bags, normalize=normalize, seed=seed, bias=bias,
              class_weight=class_weight)
    log = None if quiet else (lambda msg: options.log("hsvm: train-ovo: " + msg))
    if block is not None and dask_address is not None:
        raise click.UsageError("--pairs and --dask are exclusive (--dask splits the pairs itself)")
    if block is not None:
        from ..models.parts import save_part
        from ..train.pair_blocks import train_pair_block_file
        part = train_pair_block_file(train, block=block, zero_based=zero_based, jobs=jobs, progress=progress,
                                     log=log, **kw)
        save_part(part, output)
        if log is not None:
            log("block %s: %d of %s x %s, %d features -> %s"
                % (block, part.pair_stop - part.pair_start, options.counted(part.n_pairs, "pair"),
                   options.counted(part.model.bags, "bag"), part.model.n_features, output))
        _warn_not_converged(part.model.training.not_converged, part.model.W.shape[0], solver)
        return
    if dask_address is not None:
        if jobs != 1:
            raise click.UsageError("--jobs is for training in this process; with --dask the workers train")
        from ..cluster.dask_backend import cluster_errors, connect, quiet_client_logs, train_ovo_dask_file
        # the wait for a first worker is said even under a progress bar, which has nothing to count yet
        with quiet_client_logs(), cluster_errors(), connect(dask_address, waiting=log) as client:
            report = train_ovo_dask_file(train, client, output=output, zero_based=zero_based, progress=progress,
                                         log=log if not progress else None, **kw)
        if log is not None:
            log("%d pairs in %d blocks on %d Dask workers -> %s"
                % (report["n_pairs"], report["n_blocks"], report["workers"], output))
        _warn_not_converged(report["not_converged"], report["n_pairs"] * bags, solver)
        return
    model = train_ovo_file(train, c_grid=c_grid, cv_folds=cv_folds, jobs=jobs, zero_based=zero_based,
                           progress=progress, **kw)
    _save_with_search_table(model, output, cv_folds, quiet)
    if not quiet:
        options.log("hsvm: %d classes, %s x %s, %d features, C = %s -> %s"
                   % (model.n_classes, options.counted(model.n_pairs, "pair"), options.counted(model.bags, "bag"),
                      model.n_features, c_text(model.params["C"]), output))
    _warn_not_converged(model.training.not_converged, model.n_pairs * model.bags, solver)
    if not quiet:
        _note_sparse_columns(model)
    if not quiet and model.n_features == 1 and model.normalize == "l2":
        # a one-feature sample normalised to unit length is +-1: only its sign is left
        click.echo("hsvm: train-ovo: with one feature, --normalize l2 keeps only each sample's sign; "
                   "--normalize none keeps its value", err=True)


# Models this large are checked for feature columns no classifier uses.
_WIDE_MODEL_BYTES = 512 << 20


def _note_sparse_columns(model):
    """A large model whose classifiers use few of its feature columns (sparse
    data numbered up to a large index): W holds every pair's weight for every
    column up to the largest index, so its size, and the time and memory of
    everything that reads it, grow with that index rather than with the
    features used.  Said once, with what compact numbering would make of it."""
    W = model.W
    if W.nbytes < _WIDE_MODEL_BYTES:
        return
    used = np.zeros(W.shape[1], dtype=bool)
    for s in range(0, W.shape[0], 256):
        used |= np.any(W[s:s + 256] != 0, axis=0)
    n_used = int(used.sum())
    if 4 * n_used > W.shape[1]:
        return
    from ..support.memory import format_bytes
    click.echo("hsvm: train-ovo: note: the classifiers use %s of the model's %s feature columns (TRAIN's "
               "largest index): W holds all of them, %s; numbered compactly (features 1..%d) the same model "
               "would hold %s, and predict would read that much" % (
                   "{:,}".format(n_used), "{:,}".format(W.shape[1]), format_bytes(W.nbytes),
                   max(n_used, 1), format_bytes(W.nbytes // W.shape[1] * max(n_used, 1))), err=True)


def _report_search(search, cv_folds, quiet):
    """Without -o: the search's table (or --cv's accuracy line) is the result."""
    _note_leave_one_out(search, cv_folds or 5, quiet)
    _print_search(search, quiet, err=False)


def _print_search(search, quiet, *, err):
    """The search's table on stdout (``err``: stderr, where the model is on
    stdout).  A fixed C's accuracy line is alone there, as liblinear-train -v
    prints it (a script reads its last field), its warnings on stderr, as
    that tool's are (-q: its notes left out); a search's warnings end its
    table, as LIBLINEAR's -C's do, and so does --normalize auto's comparison
    of two accuracies."""
    if search.fixed and not search.compared:
        click.echo(search.table().splitlines()[0], err=err)
        for warning in search.warnings:
            if not (quiet and warning.startswith("Note:")):
                click.echo("hsvm: train-ovo: " + warning[0].lower() + warning[1:], err=True)
        return
    click.echo(search.table(), nl=False, err=err)


def _save_with_search_table(model, output, cv_folds, quiet):
    """The model, and the table of the search that chose its C if there was
    one.  The table is the command's result; with the model on stdout (-o -,
    /dev/stdout, or the file stdout is) it goes to stderr.  The model is
    renamed into place only once the table is written: a table that cannot
    be (> /dev/full) leaves no model for make to trust, and a model that
    cannot be written fails before the table."""
    search = model.training.search
    if search is not None:
        _note_leave_one_out(search, cv_folds or 5, quiet)
    with outputs_together():
        save_model(model, output)
        if search is not None:
            _print_search(search, quiet, err=writes_to_stdout(output))


def _note_leave_one_out(search, asked, quiet):
    """LIBLINEAR's warning when -v asks for more folds than there are samples,
    which both then run as leave-one-out cross-validation."""
    if not quiet and search.folds < asked:
        click.echo("hsvm: train-ovo: %d folds for %d samples: leave-one-out cross-validation (%d folds), as "
                   "LIBLINEAR runs it" % (asked, search.folds, search.folds), err=True)


def _warn_not_converged(count, total, solver, codes=False):
    """LIBLINEAR's 'reaching max number of iterations', which its silenced
    printer counts (native/callbacks.c), or the codes solver's own limit:
    once for the whole model, with -q too (what the model is, not chatter:
    scikit-learn's ConvergenceWarning shows whatever the verbosity)."""
    if count:
        advice = "a smaller C or a looser --eps converges" if codes or solver == "l2loss-primal" else \
            "a smaller C, L2-normalised samples or --solver l2loss-primal converge"
        click.echo("hsvm: train-ovo: warning: %d of %d classifiers stopped at the solver's iteration limit before "
                   "meeting the tolerance (%s): they are not converged; %s sooner"
                   % (count, total, "the dual solver on codes" if codes else
                      "LIBLINEAR's 'reaching max number of iterations'", advice), err=True)
