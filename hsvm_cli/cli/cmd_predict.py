"""hsvm predict: exact OvO prediction, or hash filter + exact refine."""
import math

import click

from . import options
from ..codes import read_codes
from ..model import load_model
from ..predict import iter_predict_exact
from ..report import PredictionWriter, timed_chunks
from ..svmlight import SvmChunk, iter_svmlight
from ..timing import Timings


def default_filter_k(n_classes):
    """Without --filter-k: a tenth of the classes, at least 2."""
    return min(n_classes, max(2, math.ceil(0.1 * n_classes)))


def _codes_chunks(codes, chunks):
    """Pair each chunk of the raw samples with its rows of a codes file."""
    start = 0
    for chunk in chunks:
        n = chunk.X.shape[0]
        if start + n > codes.codes.shape[0]:
            raise click.UsageError("%s has fewer codes (%d) than the input has samples"
                                   % (codes.path, codes.codes.shape[0]))
        yield chunk, codes.codes[start:start + n]
        start += n
    if start != codes.codes.shape[0]:
        raise click.UsageError("%s has %d codes but the input has %d samples"
                               % (codes.path, codes.codes.shape[0], start))


def _codes_only_chunks(codes, chunk_rows):
    for s in range(0, codes.codes.shape[0], chunk_rows):
        yield SvmChunk(X=None, y=codes.labels[s:s + chunk_rows], first_line=s + 1), codes.codes[s:s + chunk_rows]


@click.command("predict")
@click.argument("test", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-m", "--model", "model_path", required=True, type=click.Path(dir_okay=False), help="Exact model (.hsvm).")
@click.option("-H", "--hash-model", "hbm_path", type=click.Path(dir_okay=False),
              help="Hash model (.hbm): filter with hash votes, then refine exactly.")
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
@options.output
@click.option("--scores", is_flag=True, help="Add each class's vote count after the label (header line 'labels ...').")
@click.option("--proba", is_flag=True,
              help="Write probabilities as LIBSVM's svm-predict -b 1 does: a 'labels ...' header, then the label "
                   "and one probability per class. Needs -C.")
@options.threads
@options.timings
@options.zero_based
@options.extra_features
@options.chunk_rows
@options.quiet
def command(test, model_path, hbm_path, exact, bits, filter_k, no_refine, codes_path, calib_path, epsilon, output,
            scores, proba, threads, timings, zero_based, extra_features, chunk_rows, quiet):
    """Predict the samples of the svmlight file TEST ('-': stdin), one label per line.

    When the input carries labels of the model's classes, the accuracy goes to
    stderr as with LIBSVM's svm-predict."""
    model = load_model(model_path)
    cal = None
    if calib_path:
        from ..calibration import load_calibration
        cal = load_calibration(calib_path)
        cal.check(model)
        chosen = cal.setting or {}
        if chosen.get("mode") == "hash" and not exact:
            if hbm_path is None:
                raise click.UsageError("the calibration chose hash filtering: give the hash model with -H")
            bits = chosen.get("bits") if bits is None else bits
            if filter_k is None and epsilon is None:
                filter_k, epsilon = chosen.get("k"), chosen.get("epsilon")
        elif chosen.get("mode") == "exact" and bits is None and filter_k is None and epsilon is None:
            exact = True
    if (proba or epsilon is not None) and cal is None:
        raise click.UsageError("%s needs a calibration (-C)" % ("--proba" if proba else "--filter-threshold"))
    if proba and scores:
        raise click.UsageError("--proba and --scores are exclusive")
    hashed = hbm_path is not None and not exact
    if not hashed:
        for flag, value in (("--bits", bits), ("--filter-k", filter_k), ("--codes", codes_path),
                            ("--filter-threshold", epsilon)):
            if value is not None:
                raise click.UsageError("%s needs a hash model (-H) and no --exact" % flag)
        if no_refine:
            raise click.UsageError("--no-refine needs a hash model (-H) and no --exact")
    if test is None and not (hashed and codes_path and (no_refine or filter_k == 1)):
        raise click.UsageError("missing TEST (only --codes with --no-refine can do without it)")
    writer = PredictionWriter(model.classes, scores=scores, proba=proba)
    if not hashed:
        t = Timings(["parse", "normalise", "score", "vote", "write"])
        chunks = iter_svmlight(test, zero_based=zero_based, n_features=model.n_features,
                               extra_features=extra_features, chunk_rows=chunk_rows)
        blocks = iter_predict_exact(model, timed_chunks(chunks, t), timings=t, calibration=cal if proba else None)
        writer.write_all(blocks, output, timings=t)
    else:
        from ..hashmodel import load_hash_model
        from ..hashpredict import HashPredictor
        h = load_hash_model(hbm_path)
        if filter_k is None:
            filter_k = model.n_classes if epsilon is not None else default_filter_k(model.n_classes)
        try:
            predictor = HashPredictor(model, h, bits=bits, filter_k=filter_k, refine=not no_refine, threads=threads,
                                      epsilon=epsilon, calibration=cal)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        t = Timings(["parse", "normalise", "hash", "filter", "refine", "write"])
        codes = None
        if codes_path:
            codes = read_codes(codes_path)
            codes.check_compatible(h, predictor.filter.bits)
        if test is not None:
            chunks = timed_chunks(iter_svmlight(test, zero_based=zero_based, n_features=model.n_features,
                                                extra_features=extra_features, chunk_rows=chunk_rows), t)
            pairs = _codes_chunks(codes, chunks) if codes else ((c, None) for c in chunks)
        else:
            pairs = _codes_only_chunks(codes, chunk_rows)
        blocks = (predictor.predict_block(c.X, y=c.y, xcodes=xc, timings=t, proba=proba) for c, xc in pairs)
        writer.write_all(blocks, output, timings=t)
        if writer.total:
            t.counters["mean_refined_classes"] = round(t.counters.pop("refined_classes", 0) / writer.total, 3)
        t.counters.update({"bits": predictor.filter.bits, "filter_k": predictor.k, "refined": predictor.refine,
                           "filter_threshold": predictor.epsilon})
    if not quiet and writer.labelled:
        click.echo(writer.accuracy_line(), err=True)
    if timings:
        click.echo(t.json_line(), err=True)
