"""hsvm predict: exact OvO prediction, or hash filter + exact refine."""
import click

from ..models.imported import default_extra_features
from ..models.loading import load_any_hash_model, load_any_model
from ..models.ovr import OvrModel
from ..predict.predictor import Predictor
from . import options


@click.command("predict")
@click.argument("test", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@options.model
@options.hash_model(help="Hash model (.hbm): filter with hash votes, then refine exactly.")
@click.option("--exact", is_flag=True, help="Exact prediction: every pair's classifier on every sample (the default without -H).")
@click.option("--bits", type=int, default=None,
              help="Bits of the codes to use: a multiple of 64 up to the hashed D (default: D).")
@click.option("-k", "--filter-k", type=click.IntRange(min=1), default=None,
              help="Classes kept by the hash filter and refined exactly (default: 10%% of the classes, "
                   "at least 2; 1 = pure hash classifier; K = exact).")
@click.option("--no-refine", is_flag=True, help="Pure hash classifier: the filter's best class is the prediction.")
@click.option("--codes", "codes_path", type=click.Path(dir_okay=False),
              help="Sample codes from `hsvm hash-data` instead of hashing on the fly (TEST still gives the raw "
                   "features for the refine step; it may be omitted with --no-refine).")
@click.option("-C", "--calibration", "calib_path", type=click.Path(dir_okay=False),
              help="Calibration from `hsvm calibrate`: its chosen setting (exact, or bits and k or threshold) "
                   "becomes the default, and it enables --proba and --filter-threshold.")
@click.option("--filter-threshold", "epsilon", type=float, default=None,
              help="Keep, per sample, the classes whose calibrated first-stage probability exceeds this "
                   "(at least 1, at most --filter-k). Needs -C.")
@options.output()
@click.option("--scores", is_flag=True, help="Add each class's vote count after the label (header line 'labels ...').")
@click.option("--proba", is_flag=True,
              help="Write probabilities as LIBSVM's svm-predict -b 1 does: a 'labels ...' header, then the label "
                   "and one probability per class. Needs -C.")
@options.threads
@options.timings
@options.zero_based
@options.extra_features_by_model
@options.chunk_rows
@options.quiet
def command(test, model_path, hbm_path, exact, bits, filter_k, no_refine, codes_path, calib_path, epsilon, output,
            scores, proba, threads, timings, zero_based, extra_features, chunk_rows, quiet):
    """Predict the samples of the svmlight file TEST ('-': stdin), one label per line.

    When the input carries labels of the model's classes, the accuracy goes to
    stderr as with LIBSVM's svm-predict."""
    if proba and scores:
        raise click.UsageError("--proba and --scores are exclusive")
    model = load_any_model(model_path)
    if extra_features is None:
        extra_features = default_extra_features(model)
    h = None
    if hbm_path is not None and not exact:
        h = load_any_hash_model(hbm_path)
    settings = dict(bits=bits, filter_k=filter_k, refine=not no_refine, epsilon=epsilon, threads=threads)
    if isinstance(model, OvrModel):
        # One-vs-rest models (imported from LIBLINEAR): argmax scoring, or the
        # hashed filter ranking classes by their estimated margins.
        from ..predict.ovr import OvrPredictor
        for flag, value in (("-C", calib_path), ("--proba", proba), ("--filter-threshold", epsilon)):
            if value:
                raise click.UsageError("%s needs a one-vs-one model (%s is one-vs-rest)" % (flag, model_path))
        settings.pop("epsilon")
        predictor = OvrPredictor(model, h, **settings)
    elif calib_path:
        from ..models.calibration import load_calibration
        predictor = Predictor.from_calibration(model, load_calibration(calib_path), h, exact=exact, **settings)
    else:
        if proba or epsilon is not None:
            raise click.UsageError("%s needs a calibration (-C)" % ("--proba" if proba else "--filter-threshold"))
        predictor = Predictor(model, h, **settings)
    codes = None
    if codes_path:
        from ..models.codes import read_codes
        codes = read_codes(codes_path)
    t = predictor.new_timings()
    writer = predictor.predict_file(test, output, codes=codes, scores=scores, proba=proba, timings=t,
                                    zero_based=zero_based, extra_features=extra_features, chunk_rows=chunk_rows)
    if not quiet and writer.labelled:
        click.echo(writer.accuracy_line(), err=True)
    if timings:
        click.echo(t.json_line(), err=True)
