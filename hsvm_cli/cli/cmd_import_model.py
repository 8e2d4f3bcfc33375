"""hsvm import-model: a LIBSVM (linear kernel) or LIBLINEAR model file as an hsvm model."""
import click

from ..errors import DataError
from ..io.files import outputs_together
from ..io.svmlight import MAX_FEATURES
from ..models.calibration import save_calibration
from ..models.imported import import_model, imported_calibration
from ..models.ovo import save_model
from ..models.ovr import OvrModel, save_ovr_model
from ..predict.logistic import logistic_solver
from . import options


@click.command("import-model", short_help="Import a linear LIBSVM or LIBLINEAR model.")
@click.argument("model_file", type=options.INPUT_FILE)
@options.output(required=True, what="hsvm model to write (.hsvm)")
@click.option("--n-features", type=options.IntBounds(1, MAX_FEATURES), default=None,
              help="Width of the model (default: the largest feature index the file uses; LIBLINEAR: nr_feature).")
@click.option("--calibration", "calib_path", type=options.OUTPUT_FILE, default=None,
              help="Also write LIBSVM's probability parameters (probA/probB, from svm-train -b 1) as a "
                   "calibration for `hsvm predict --exact --proba -C`.")
@click.option("--zero-based", is_flag=True,
              help="A LIBSVM model whose support vectors number features from 0 (trained on 0-based data): "
                   "recorded, so that predict reads its input 0-based by default.  Refused for LIBLINEAR models, "
                   "which number features from 1.")
@options.quiet
@options.outputs_apart((("output", "-o"), ("calib_path", "--calibration")), ("model_file",),
                       binary=("output", "calib_path"))
def command(model_file, output, n_features, calib_path, zero_based, quiet):
    """Import MODEL_FILE, written by LIBSVM's svm-train (C-SVC or nu-SVC with
    -t 0) or LIBLINEAR's train (any classification solver).

    LIBSVM models and two-class LIBLINEAR models become one-vs-one models (the
    tool's pair orientation and tie order kept), LIBLINEAR models of three or
    more classes one-vs-rest models; `hsvm predict --exact` then gives the
    labels svm-predict or liblinear-predict gives."""
    imp = import_model(model_file, n_features=n_features, zero_based=zero_based)
    cal = None
    if calib_path is not None:
        cal = imported_calibration(imp)
        if cal is None and logistic_solver(imp.model):
            raise DataError("%s is a LIBLINEAR logistic-regression model (%s): its probabilities need no "
                            "--calibration; `hsvm predict --proba -m MODEL` gives liblinear-predict -b 1's"
                            % (model_file, logistic_solver(imp.model)))
        if cal is None and isinstance(imp.model, OvrModel):
            raise DataError("%s is a LIBLINEAR one-vs-rest model: it carries no probability parameters for "
                            "--calibration, and hsvm's probabilities (`hsvm calibrate`) are for one-vs-one models"
                            % model_file)
        if cal is None and imp.tool != "libsvm":
            raise DataError("%s is a LIBLINEAR model: only LIBSVM models carry probability parameters "
                            "(probA/probB) for --calibration; fit a calibration with `hsvm calibrate`"
                            % model_file)
        if cal is None:
            raise DataError("%s has no probability parameters (probA/probB): train it with svm-train -b 1, "
                            "or fit them with `hsvm calibrate`" % model_file)
    m = imp.model
    with outputs_together():            # a calibration that cannot be written leaves no model either
        if isinstance(m, OvrModel):
            save_ovr_model(m, output)
            what = "one-vs-rest model, %d classes" % m.n_classes
        else:
            save_model(m, output)
            what = "one-vs-one model, %d classes, %s" % (m.n_classes, options.counted(m.n_pairs, "pair"))
        if cal is not None:
            save_calibration(cal, calib_path)
    if not quiet:
        src = imp.source
        kind = ("LIBSVM %s" % src.get("svm_type") if imp.tool == "libsvm"
                else "LIBLINEAR %s" % src.get("solver_type"))
        order = [str(v) for v in src.get("label_order", [])]
        shown = " ".join(order if len(order) <= 12 else order[:10] + ["... (%d labels)" % len(order)])
        options.log("hsvm: %s (label order %s) -> %s: %s, %d features" % (kind, shown, output, what, m.n_features))
    if cal is None and not quiet and imp.platt_A is not None:
        # svm-train -b 1's sigmoids, which only --calibration keeps
        click.echo("hsvm: import-model: note: %s holds probability parameters (probA/probB, svm-train -b 1): "
                   "--calibration CALIB keeps them for predict --proba -C CALIB (svm-predict -b 1's)" % model_file,
                   err=True)
