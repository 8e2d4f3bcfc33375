"""hsvm calibrate: fit probabilities and choose the cheapest accurate setting."""
import contextlib
import json
import os

import click

from ..errors import DataError
from ..io.files import atomic_output, display_name, outputs_together, writes_to_stdout
from ..io.svmlight import load_svmlight
from ..models.calibration import save_calibration
from ..models.hashed import load_hash_model
from ..models.imported import default_extra_features
from ..models.ovo import load_model
from ..models.provenance import trained_zero_based
from ..support.progress import StepBar
from ..tune import FIRST_STAGES, MIN_TIMED_ROWS, TIMING_BUDGET, TIMING_ROWS, calibrate, format_grid, validation_notes
from . import options


@click.command("calibrate", short_help="Fit probabilities; choose the accuracy-speed setting.")
@options.input_path(name="validation")
@options.model
@options.hash_model(help="Hash model (.hbm): also fit the first stage and try hash filtering (without it: "
                                "exact probabilities, `predict --exact --proba -C`, and settings without hashing).")
@options.output(required=True, what="Calibration file to write")
@click.option("--max-loss", type=options.FiniteFloat(min=0), default=0.5, show_default=True,
              help="Accuracy points the chosen setting may lose against exact prediction on VALIDATION.")
@click.option("--confidence", type=options.FiniteFloat(min=0), default=1.0, show_default=True,
              help="Standard errors of the loss, paired on the VALIDATION rows where a setting and exact "
                   "prediction disagree, added to it before it is compared with --max-loss (0: the plain loss).")
@click.option("--bits", "bits_grid", callback=options.comma_list(int, "integers"), default=None, metavar="D1,D2,...",
              help="Bit counts to try (default: 64, 128, 256, ... doubling up to the hashed D).")
# -k and --filter-k: predict's names for the one value of a setting
@click.option("-k", "--k", "--filter-k", "k_grid", callback=options.comma_list(int, "integers"), default=None,
              metavar="K1,K2,...",
              help="Numbers of refined classes to try (default: 1 and 1%, 3%, 10%, 20% of the classes, rounded up, "
                   "at least 2, below K).")
@click.option("--epsilon", "epsilons", default=None, metavar="E1,E2,...",
              callback=options.comma_list(float, "probabilities in [0, 1)", check=lambda e: 0 <= e < 1),
              help="First-stage probability thresholds to try (default: 0.1, 0.03, 0.01, 0.003, 0.001).")
@click.option("--rules", callback=options.comma_list(str, "names"), default="vote,dag", show_default=True,
              metavar="RULE,...",
              help="Exact decision rules to try: vote (max-wins over the pairs) and dag (the exact decision DAG, "
                   "and a DAG refine at every k >= 3).")
@click.option("--first-stages", callback=options.comma_list(str, "names", allow_empty=True), default="votes,scores",
              metavar="STAGE,...",
              show_default=True,
              help="First stages to try: votes (the hash filter; needs -H) and scores (the class-score first "
                   "stage at every k >= 2; no hash model needed).")
@click.option("--repeat", type=options.IntRange(min=1), default=3, show_default=True,
              help="Timed runs per setting at most (the median counts).")
@click.option("--timing-budget", type=options.FiniteFloat(min=0.0), default=TIMING_BUDGET, show_default=True,
              help="Seconds of timed runs per setting: a setting too slow for --repeat runs of the %d timing rows "
                   "within it gets fewer runs (at least one), then fewer rows (evenly spaced, at least %d); each "
                   "grid row records the rows and runs it was timed on.  Accuracy is always on every validation "
                   "row." % (TIMING_ROWS, MIN_TIMED_ROWS))
@click.option("--grid-json", type=options.OUTPUT_FILE, default=None,
              help="Also write the measured grid as JSON (for `hsvm eval --grid ... --plot`).")
@options.threads
@options.zero_based_by_model
@options.extra_features_by_model
@options.quiet
@options.outputs_apart((("output", "-o"), ("grid_json", "--grid-json")), ("validation", "model_path", "hbm_path"))
def command(validation, model_path, hbm_path, output, max_loss, confidence, bits_grid, k_grid, epsilons, rules,
            first_stages, repeat, timing_budget, grid_json, threads, zero_based, extra_features, quiet):
    """Fit calibrated probabilities on the labelled svmlight file VALIDATION and
    store, with them, the cheapest setting within --max-loss of exact accuracy.

    Prints the measured grid (accuracy and time per sample of every setting) on
    stdout; `hsvm predict -C CALIB` then uses the chosen setting.  Without -H
    the calibration holds exact probabilities only, and the settings tried are
    exact prediction, the exact decision DAG and the class-score first stage."""
    model = load_model(model_path)
    h = load_hash_model(hbm_path) if hbm_path is not None else None
    numbering = options.numbering_note("calibrate", zero_based, trained_zero_based(model), model_path, validation)
    if numbering is not None and not quiet:
        click.echo(numbering, err=True)
    if zero_based is None:
        zero_based = trained_zero_based(model)
    X, y = load_svmlight(validation, zero_based=zero_based, n_features=model.n_features,
                         extra_features=default_extra_features(model) if extra_features is None else extra_features,
                         threads=threads)
    if X.shape[0] == 0:
        raise DataError("%s: the validation set holds no samples" % display_name(validation))
    # Notices are printed once the work is done, as predict's: a refusal found
    # later (one class, an output that cannot be written) stays one line.
    notices = []
    # what the validation set lacks makes the calibration poor: a warning,
    # said with -q too (as train-ovo's unconverged classifiers are)
    notices.extend("hsvm: calibrate: warning: " + note for note in validation_notes(model, y))
    if _is_training_file(validation, model):
        # the samples the classifiers were fitted on: their margins are larger
        # than held-out ones', so the probabilities come out overconfident and
        # the losses the setting is chosen by too small
        notices.append("hsvm: calibrate: warning: %s is the file %s was trained on: probabilities fitted on it are "
                       "overconfident and the setting's accuracy loss is understated; give held-out labelled data "
                       "(split some off before training)" % (display_name(validation), model_path))
    asked = click.get_current_context().get_parameter_source("first_stages") != click.core.ParameterSource.DEFAULT
    if h is None and asked and first_stages is not None and "votes" in first_stages and not quiet:
        # only when asked for: the default list names it for runs with -H
        notices.append("hsvm: calibrate: the votes first stage needs a hash model (-H): it is not tried")
    stages_left = [stage for stage in (first_stages if first_stages is not None else FIRST_STAGES)
                   if stage != "votes" or h is not None]
    beyond = sorted(k for k in (k_grid or ()) if k > model.n_classes)
    if beyond and stages_left and not quiet:
        # as predict's -k: a recipe's grid may be meant for models of more classes
        notices.append("hsvm: calibrate: --k %s %s more than the model's %d classes: tried as %d (all kept)"
                       % (",".join(map(str, beyond)), "is" if len(beyond) == 1 else "are", model.n_classes,
                          model.n_classes))
    if k_grid is not None and not stages_left and not quiet:
        # every k is for a first stage; with none left the grid is exact alone
        notices.append("hsvm: calibrate: --k is unused: no first stage is tried (exact prediction alone)")
    with outputs_together(), contextlib.ExitStack() as outputs:
        # --grid-json's temporary file first: a name that cannot be written
        # fails before the run; the two files are renamed into place together,
        # so a failure of either leaves neither.
        grid_fh = outputs.enter_context(atomic_output(grid_json, "w")) if grid_json else None
        # fractional: the filter and the exact pass report their rows within a step (minutes at K = 2,000)
        with StepBar(options.show_progress(quiet), unit="step", desc="calibrate", fractional=True) as bar:
            try:
                cal = calibrate(model, h, X, y, max_loss=max_loss, bits_grid=bits_grid, k_grid=k_grid,
                                epsilons=epsilons, threads=threads, repeat=repeat, progress=bar, rules=rules,
                                first_stages=first_stages, timing_budget=timing_budget, confidence=confidence)
            except DataError as exc:
                # what the validation file's labels cannot give: named by the file
                raise DataError("%s: %s" % (display_name(validation), exc)) from None
        if grid_fh is not None:
            json.dump({"grid": cal.grid, "info": cal.info}, grid_fh, indent=1)
            grid_fh.flush()             # a device that refuses the grid (/dev/full) fails here, before CALIB
        save_calibration(cal, output)   # renamed into place when the block ends
        # The grid goes to stdout unless a file written here is stdout; in the
        # block, so that a table that cannot be written (> /dev/full) leaves
        # neither file, and after the files' writing, which fails first.
        table_to_stderr = writes_to_stdout(output) or (grid_json is not None and writes_to_stdout(grid_json))
        click.echo(format_grid(cal), nl=False, err=table_to_stderr)
    for line in notices:
        click.echo(line, err=True)
    quality = cal.info.get("two_stage_quality")
    if quality is not None and not quiet and abs(quality["mean_top_probability"] - quality["accuracy"]) > 0.1:
        # ten points between confidence and accuracy where they were fitted:
        # the setting is fine for labels, its probabilities are not
        click.echo("hsvm: calibrate: the chosen setting's probabilities are %s-confident on the validation set (mean "
                   "top probability %.2f at %.0f%% accuracy): for probabilities use predict -C %s --exact --proba, or "
                   "a setting that keeps more classes (more bits, a larger k)"
                   % ("under" if quality["mean_top_probability"] < quality["accuracy"] else "over",
                      quality["mean_top_probability"], 100 * quality["accuracy"], display_name(output)), err=True)


def _is_training_file(validation, model):
    """Whether VALIDATION is, byte for byte, the file the model records as its
    training input (a regular file: stdin is read once, for the samples)."""
    trained = (getattr(model, "provenance", None) or {}).get("train_sha256")
    if not trained or validation in (None, "-"):
        return False
    try:
        if not os.path.isfile(validation):
            return False
        from ..io.files import file_sha256
        return file_sha256(validation) == trained
    except OSError:
        return False
