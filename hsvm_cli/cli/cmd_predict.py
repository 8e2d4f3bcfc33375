"""hsvm predict: exact OvO prediction, or hash filter + exact refine."""
import time

import click

from ..errors import HsvmError, ModelMismatchError
from ..io.files import output_is_terminal
from ..models.imported import column_order, default_extra_features
from ..models.loading import load_any_hash_model, load_any_model
from ..models.ovr import OvrModel
from ..models.provenance import trained_zero_based
from ..predict.logistic import logistic_solver, two_class_as_ovr
from ..predict.predictor import CALIBRATE_HINT, Predictor
from ..support.progress import StepBar
from . import options


@click.command("predict", short_help="Predict: exact, or hash filter then exact refine.")
@click.argument("test", required=False, type=options.INPUT)
@options.model
@options.hash_model(help="Hash model (.hbm): filter with hash votes, then refine exactly.")
@click.option("--exact", is_flag=True, help="Exact prediction: every pair's classifier on every sample (the default without -H).")
@click.option("--dag", is_flag=True,
              help="Exact labels from a decision DAG: K-1 classifier evaluations per sample instead of K(K-1)/2 "
                   "(classes listed in class order; no hash model, no --scores or --proba).")
@click.option("--first-stage", type=click.Choice(["votes", "scores", "hashed-scores"]), default=None,
              help="What ranks the classes for the refine: votes (the hash filter, every pair's Hamming range "
                   "query; the default with -H), scores (each class's summed normalised pair margins: one K x d "
                   "product, cost growing with K, not K^2; no hash model needed) or hashed-scores (those scores "
                   "estimated from the hash model's codes, for K much larger than --bits).")
@click.option("--refine", "refine_rule", type=click.Choice(["vote", "dag"]), default=None,
              help="How the exact classifiers decide among the classes the first stage kept: max-wins voting over "
                   "their pairs (the default, or the calibration's choice with -C), or a decision DAG over them "
                   "(k-1 evaluations; no --scores or --proba).")
@click.option("--bits", type=options.INT, default=None,
              help="Bits of the codes to use: a multiple of 64 up to the hashed D (default: D, or the bits --codes "
                   "holds when fewer).")
@click.option("-k", "--filter-k", type=options.IntRange(min=1), default=None,
              help="Classes kept by the hash filter and refined exactly (default: 10% of the classes rounded up, "
                   "at least 5; 1 = pure hash classifier; K = exact).")
@click.option("--no-refine", is_flag=True, help="Pure hash classifier: the filter's best class is the prediction.")
@click.option("--codes", "codes_path", type=options.INPUT_FILE,
              help="Sample codes from `hsvm hash-data` instead of hashing on the fly (TEST still gives the raw "
                   "features for the refine step; it may be omitted with --no-refine). For a model trained on "
                   "kernel hash codes: their codes (`hash-data -H KERNEL.khm`), which replace TEST.")
@click.option("--kernel-hash", "khm_path", type=options.INPUT_FILE,
              help="For a model trained on kernel hash codes (Hash-SVM): the kernel hash (.khm) that made them; "
                   "TEST then holds raw samples, hashed on the fly.")
@click.option("-C", "--calibration", "calib_path", type=options.INPUT_FILE,
              help="Calibration from `hsvm calibrate`: its chosen setting (exact or the exact DAG; or a first "
                   "stage -- hash votes with bits and k or a threshold, or class scores with k -- and a vote or "
                   "DAG refine) becomes the default; explicit options override it.  It enables --proba and "
                   "--filter-threshold.")
@click.option("--filter-threshold", "epsilon", type=options.FiniteFloat(0, 1, max_open=True), default=None,
              help="Keep, per sample, the classes whose calibrated first-stage probability exceeds this "
                   "(at least 1, at most --filter-k when given, else any number). Needs -C.")
@options.output()
@click.option("--scores", is_flag=True,
              help="Add each class's vote count after the label (header line 'labels ...'): after a first stage the "
                   "refine's votes among the kept classes, 0 for the others (with --no-refine or -k 1 the hash "
                   "filter's own votes); a one-vs-rest model's decision values. Not with --proba.")
@click.option("--proba", is_flag=True,
              help="Write probabilities in LIBSVM's svm-predict -b 1 layout: a 'labels ...' header, then the "
                   "label and one probability per class, the columns in ascending class order (svm-predict's are "
                   "in its training order: --class-order model; or read them by the header); the label is then the "
                   "most probable class, as svm-predict -b 1's, which may differ from the vote's (with many classes, "
                   "by points of accuracy either way).  "
                   "Needs -C, except for a model of LIBLINEAR's logistic regression (liblinear-predict -b 1's "
                   "probabilities).")
@click.option("--class-order", type=click.Choice(["ascending", "model"]), default="ascending", show_default=True,
              help="The columns of --scores/--proba: ascending class order, or 'model': the order a model "
                   "imported from LIBSVM or LIBLINEAR lists its labels in (svm-predict -b 1's columns).")
@options.threads
@options.timings
@options.zero_based_by_model
@options.extra_features_by_model
@options.chunk_rows
@options.shard
@options.dask("TEST is split into byte-range shards (2 per worker thread), or, a directory or a quoted glob "
              "pattern, is one task per file in sorted order; outputs are written in input order.")
@options.quiet
@options.outputs_apart((("output", "-o"),), ("test", "model_path", "hbm_path", "codes_path", "khm_path", "calib_path"))
def command(test, model_path, hbm_path, exact, dag, first_stage, refine_rule, bits, filter_k, no_refine, codes_path,
            khm_path, calib_path, epsilon, output, scores, proba, class_order, threads, timings, zero_based,
            extra_features, chunk_rows, shard, dask_address, quiet):
    """Predict the samples of the svmlight file TEST ('-': stdin), one label per line.

    When the input carries labels of the model's classes, the accuracy goes to
    stderr as with LIBSVM's svm-predict (not for a --shard: `hsvm eval
    --shard` scores each, and eval the joined predictions)."""
    started = time.perf_counter()
    # said once the work is done: a refusal found later stays the one line
    notices = []
    if proba and scores:
        raise click.UsageError("--proba and --scores are exclusive")
    if class_order != "ascending" and not (proba or scores):
        raise click.UsageError("--class-order orders the columns of --scores or --proba: labels alone have none")
    if no_refine and filter_k is not None and filter_k != 1:
        raise click.UsageError("--no-refine predicts the filter's best class; -k %d would refine %d classes "
                               "(-k 1 is the same as --no-refine)" % (filter_k, filter_k))
    if no_refine and (exact or dag):
        raise click.UsageError("--no-refine is the first stage's best class: it needs -H or --first-stage, not %s"
                               % ("--exact" if exact else "--dag"))
    if no_refine and refine_rule is not None:
        raise click.UsageError("--no-refine refines nothing: --refine %s does not apply" % refine_rule)
    if refine_rule is not None and (exact or dag):
        raise click.UsageError("--refine %s is the rule after a first stage (-H or --first-stage): %s refines "
                               "nothing (--dag is the exact DAG)" % (refine_rule, "--exact" if exact else "--dag"))
    if no_refine and epsilon is not None:
        raise click.UsageError("--filter-threshold chooses the classes to refine: it does not combine with "
                               "--no-refine")
    if no_refine and proba and calib_path and hbm_path is None:
        # the calibrated probabilities are the hash filter's, or exact ones without -H: no first stage
        raise click.UsageError("--no-refine with --proba needs the hash filter (-H): without it the calibrated "
                               "probabilities are exact prediction's, which has no first stage to stop at")
    k_given = filter_k is not None
    if no_refine:
        filter_k = 1        # the first stage's best class: also overrides a calibration's exact setting
    if dag and (exact or hbm_path is not None or first_stage is not None):
        raise click.UsageError("--dag is exact prediction by a decision DAG: no -H, no --first-stage, no --exact "
                               "(for a DAG after a first stage use --refine dag)")
    if (hbm_path is None and first_stage is None and calib_path is None) or exact or dag:
        # no first stage: name the option given and why there is none (the
        # library's words would name -k for --no-refine, and --exact for --dag)
        for flag, given in (("--bits", bits is not None), ("--no-refine", no_refine), ("-k", filter_k is not None)):
            if given:
                # a one-vs-rest model has no class-score first stage to name
                raise click.UsageError("%s needs a first stage (-H%s): %s" % (
                    flag, "" if flag == "--bits" or _one_vs_rest(model_path) else ", or --first-stage scores",
                    "--exact and --dag are exact prediction" if exact or dag else "none was given"))
    rule = "dag" if dag or refine_rule == "dag" else refine_rule      # None: the calibration's, else vote
    if rule == "dag" and scores:
        raise click.UsageError("a decision DAG gives labels only, no vote counts: --scores needs max-wins voting")
    model = load_any_model(model_path)
    if class_order != "ascending":
        column_order(model, class_order)        # refused here, before any work (and before a cluster's)
    if codes_path is not None and not getattr(model, "trained_on_codes", False) and \
            (exact or dag or (hbm_path is None and calib_path is None)):
        # a hash model's codes (a codes-trained model's --codes are its samples):
        # named here, as the library's words ask for -H, which may have come with --exact;
        # a kernel hash's codes are no hash filter's: the advice to give -H would lead to a refusal
        from ..models.codes import read_codes
        try:
            kernel_codes = read_codes(codes_path).kernel_hash_sha256 is not None
        except (HsvmError, OSError):
            kernel_codes = False        # the usage error first; the file's own is said once that is mended
        if kernel_codes:
            raise ModelMismatchError("%s: codes of a kernel hash, which only a model trained on them (train-ovo "
                                     "--codes) takes; %s was trained on svmlight features"
                                     % (click.format_filename(codes_path), click.format_filename(model_path)))
        raise click.UsageError("--codes (a hash model's codes) are for the hash filter: %s" % (
            "--exact and --dag are exact prediction" if exact or dag else "give its hash model with -H"))
    if extra_features is None:
        extra_features = default_extra_features(model)
    kernel_hash = None
    if khm_path is not None and not isinstance(model, OvrModel):
        from ..models.kernel_hash import load_kernel_hash
        kernel_hash = load_kernel_hash(khm_path)
    # raw samples are numbered as the file the kernel hash (when given) was fitted on, else the model's
    numbered, numbered_path = (model, model_path) if kernel_hash is None else (kernel_hash, khm_path)
    numbering = options.numbering_note("predict", zero_based, trained_zero_based(numbered), numbered_path, test)
    if numbering is not None and not quiet:
        click.echo(numbering, err=True)      # before the run: it may explain the run's error
    if zero_based is None:
        zero_based = trained_zero_based(numbered)
    h = codes = None
    if hbm_path is not None and not exact:
        h = load_any_hash_model(hbm_path)
        if codes_path and bits is None and calib_path is None and first_stage in (None, "votes", "hashed-scores"):
            # codes of fewer bits than the hash model's: voted at the bits they hold
            from ..models.codes import read_codes
            codes = read_codes(codes_path)
            if codes.bits < h.bits:
                bits = codes.bits
    elif refine_rule is not None and first_stage is None and calib_path is None:
        # (with -C, the calibration's setting may be the first stage: checked once it is read)
        raise click.UsageError("--refine %s is the rule after a first stage (-H, or --first-stage scores): none was "
                               "given%s" % (refine_rule, "; --dag is the exact DAG" if refine_rule == "dag" else ""))
    if exact and first_stage is not None:
        raise click.UsageError("--first-stage and --exact are exclusive")
    if proba and first_stage in ("scores", "hashed-scores"):
        # refused whatever else is given (with -C alone it ran exact probabilities, silently)
        raise click.UsageError("--proba is calibrated for the vote first stage only: not with --first-stage %s"
                               % first_stage)
    if proba and not calib_path and not isinstance(model, OvrModel) and logistic_solver(model):
        # A two-class model of LIBLINEAR's logistic regression: its own
        # probabilities, from its one decision value, through the one-vs-rest
        # path (predict/logistic.py)
        for flag, value in (("-H", h is not None), ("--dag", dag), ("--refine dag", refine_rule == "dag"),
                            ("--first-stage", first_stage), ("--kernel-hash", khm_path),
                            ("--filter-threshold", epsilon)):
            if value:
                raise click.UsageError("--proba of %s, a LIBLINEAR logistic-regression model, is LIBLINEAR's "
                                       "probability of its exact decision value: not with %s%s"
                                       % (model_path, flag, " (drop -H, or give --exact)" if flag == "-H" else ""))
        model = two_class_as_ovr(model)
    if isinstance(model, OvrModel):
        # One-vs-rest models (imported from LIBLINEAR): argmax scoring, or the
        # hashed filter ranking classes by their estimated margins.  What is
        # built on pairs (DAGs, class-score first stages, calibrations) or on
        # kernel hash codes does not apply.
        from ..predict.ovr import OvrPredictor
        for flag, value in (("-C", calib_path), ("--filter-threshold", epsilon),
                            ("--dag", dag), ("--refine dag", refine_rule == "dag"), ("--first-stage", first_stage),
                            ("--kernel-hash", khm_path)):
            if value:
                raise click.UsageError("%s needs a one-vs-one model (%s is one-vs-rest)" % (flag, model_path))
        settings = dict(bits=bits, filter_k=filter_k, refine=not no_refine, threads=threads)
        predictor = OvrPredictor(model, h, **settings)
        refusal = predictor.proba_refusal() if proba else None
        if refusal:
            raise click.UsageError(refusal)
    else:
        settings = dict(bits=bits, filter_k=filter_k, refine=not no_refine, epsilon=epsilon, threads=threads,
                        rule=rule, first_stage=first_stage, kernel_hash=kernel_hash)
        if calib_path:
            from ..models.calibration import load_calibration
            calibration = load_calibration(calib_path)
            setting = calibration.setting
            if h is None and first_stage is None and not exact and not dag and setting is not None \
                    and setting.mode == "exact":
                # the options that shape a first stage, where the calibration's setting has none
                for flag, given in (("--no-refine", no_refine), ("--refine %s" % refine_rule, refine_rule)):
                    if given:
                        raise click.UsageError("%s needs a first stage (-H, or --first-stage scores): the "
                                               "calibration's chosen setting is exact prediction" % flag)
            # --dag is exact prediction by a DAG: it overrides the calibration's
            # setting as --exact does (no -H needed for a hash setting)
            predictor = Predictor.from_calibration(model, calibration, h, exact=exact or dag, proba=proba,
                                                   scores=scores, **settings)
            chosen_alone = first_stage is None and bits is None and not k_given and epsilon is None \
                and not exact and not dag
            # the calibration's setting, or its class scores with another -k, does not hash
            # (class scores take a hash model's summaries when it has them): say so rather than ignore -H
            setting_kept = chosen_alone or (k_given and first_stage is None and not exact and not dag
                                            and setting is not None and setting.mode == "scores"
                                            and predictor.first_stage == "scores")
            if h is not None and not quiet and setting_kept and setting is not None \
                    and predictor.first_stage not in ("votes", "hashed-scores") \
                    and not (predictor.first_stage == "scores" and getattr(h, "class_W", None) is not None):
                chose = ("the exact DAG" if setting.mode == "exact" and setting.rule == "dag" else
                         "exact prediction" if setting.mode == "exact" else "the class-score first stage")
                exact_proba = proba and setting.mode != "exact" and predictor.filter is None
                # -k alone changes the class scores' k, not the first stage
                notices.append("hsvm: predict: the calibration chose %s, which does not use -H %s%s (give %s for "
                               "the hash filter)"
                               % (chose, click.format_filename(hbm_path),
                                  "; with --proba: exact probabilities" if exact_proba else "",
                                  "--bits" if setting.mode == "scores" else "--bits or -k"))
            if proba and chosen_alone and not quiet and setting is not None:
                # probabilities are calibrated on the voting path: say where that differs from the chosen setting
                if setting.mode == "scores" and predictor.filter is None:
                    # the two-stage probabilities need the hash model: exact ones run, and their labels
                    filt = calibration.two_stage_filter()
                    notices.append("hsvm: predict: --proba without -H gives exact probabilities and their labels, "
                                   "not the calibration's chosen class-score setting%s"
                                   % ("; its calibrated probabilities run %s (give -H)" % filt if filt else ""))
                if predictor.filter is not None and (setting.mode != "hash" or setting.rule != predictor.rule):
                    notices.append("hsvm: predict: --proba runs the hash filter at %d bits, k = %d, %s (the "
                                   "calibrated probabilities' path), not the calibration's chosen %s setting"
                                   % (predictor.filter.bits, predictor.k,
                                      "refined by votes" if predictor.refine else "not refined (--no-refine)",
                                      {"scores": "class-score", "exact": "exact"}.get(setting.mode,
                                                                                      setting.rule + " refine")))
                if setting.mode == "exact" and setting.rule == "dag" and predictor.filter is None:
                    # a DAG gives no probabilities: the exact votes' do, and their most probable class is the label
                    notices.append("hsvm: predict: --proba gives exact probabilities and their most probable "
                                   "classes, not the calibration's chosen exact DAG's labels")
        else:
            if proba or epsilon is not None:
                raise click.UsageError("%s needs a calibration (-C; %s)"
                                       % ("--proba" if proba else "--filter-threshold", CALIBRATE_HINT))
            predictor = Predictor(model, h, **settings)
    if epsilon is not None and filter_k is None and not quiet and not isinstance(model, OvrModel) \
            and getattr(predictor, "epsilon", None) is not None and getattr(predictor, "rule", "vote") == "vote":
        from ..predict.refine import dense_is_cheaper
        if dense_is_cheaper(model.n_classes, model):
            # the refine's way is chosen by the cap (every block alike): all K
            # scores every classifier however few classes the threshold keeps
            notices.append("hsvm: predict: note: --filter-threshold without -k may keep all %d classes, so the refine "
                           "scores every classifier; -k N (the most a row may keep) lets it score only the kept "
                           "classes' pairs" % model.n_classes)
    if filter_k is not None and filter_k > model.n_classes and not quiet:
        # kept as K (a recipe's -k may be meant for models of more classes), but said
        notices.append("hsvm: predict: -k %d is more than the model's %d classes: all are kept"
                       % (filter_k, model.n_classes))
    if exact and hbm_path is not None and not quiet:
        notices.append("hsvm: predict: --exact does not use -H %s (not read)" % click.format_filename(hbm_path))
    if first_stage == "scores" and h is not None and getattr(h, "class_W", None) is None and not quiet:
        # (a hash model made with the class summaries serves them; this one has none)
        notices.append("hsvm: predict: --first-stage scores does not use -H %s (the class scores come from the "
                       "model)" % click.format_filename(hbm_path))
    if kernel_hash is not None and codes_path is not None and test is None and not quiet:
        # as for --exact with -H: an option that does nothing is said
        notices.append("hsvm: predict: --kernel-hash %s is not used: the --codes are the samples"
                       % click.format_filename(khm_path))
    if shard is not None or dask_address is not None:                      # cluster runs (issue 12)
        _check_cluster_options(test, shard, dask_address, codes_path, timings)
    if dask_address is not None:
        _predict_dask(dask_address, test, output, model_path=model_path, hbm_path=hbm_path, calib_path=calib_path,
                      exact=exact, settings=settings, scores=scores, proba=proba, zero_based=zero_based,
                      extra_features=extra_features, chunk_rows=chunk_rows, quiet=quiet, model=model,
                      class_order=class_order)
        for line in notices:
            click.echo(line, err=True)
        return
    if codes_path and codes is None:
        from ..models.codes import read_codes
        codes = read_codes(codes_path)
    t = predictor.new_timings()
    t.setup = time.perf_counter() - started
    # no bar when the predictions themselves go to the terminal: its line and theirs had mixed
    with StepBar(options.show_progress(quiet) and not output_is_terminal(output), unit="row",
                 desc="predict") as bar:
        writer = predictor.predict_file(test, output, codes=codes, scores=scores, proba=proba, timings=t,
                                        zero_based=zero_based, extra_features=extra_features, chunk_rows=chunk_rows,
                                        shard=shard, progress=bar, class_order=class_order)
    for line in notices:
        click.echo(line, err=True)
    if not quiet and shard is not None:
        options.log("hsvm: predict: shard %s: %d samples -> %s" % (shard, writer.total, output))
    elif not quiet:
        _report_accuracy(writer, model, test if test is not None else codes_path)
    if timings:
        from ..support.kernels import selected_kernel
        # which native code path ran (HSVM_KERNEL, or the best this CPU has)
        t.counters["kernel"] = selected_kernel()
        click.echo(t.json_line(), err=True)


# ------------------------------------------------------------ cluster runs

def _check_cluster_options(test, shard, dask_address, codes_path, timings):
    if test is None:
        raise click.UsageError("--shard and --dask need TEST")
    if shard is not None and dask_address is not None:
        raise click.UsageError("--shard and --dask are exclusive (--dask makes the shards itself)")
    if dask_address is not None and codes_path:
        raise click.UsageError("--codes belong to one input: not with --dask")
    if dask_address is not None and timings:
        raise click.UsageError("--timings times this process; with --dask the workers predict")


def _predict_dask(address, test, output, *, model_path, hbm_path, calib_path, exact, settings, scores, proba,
                  zero_based, extra_features, chunk_rows, quiet, model, class_order):
    from ..cluster.dask_backend import PredictTask, predict_file_dask, quiet_client_logs
    from ..io.predictions import PredictionWriter
    task = PredictTask(model_path, hash_model_path=hbm_path, calibration_path=calib_path, exact=exact,
                       settings=settings, scores=scores, proba=proba, zero_based=zero_based,
                       extra_features=extra_features, chunk_rows=chunk_rows, class_order=class_order)
    log = None if quiet else (lambda msg: click.echo("hsvm: predict --dask: " + msg, err=True))
    with quiet_client_logs():
        counts = predict_file_dask(address, test, output, task=task, log=log)
    summary = PredictionWriter(model.classes)
    summary.total, summary.correct = counts.get("total", 0), counts.get("correct", 0)
    summary.labelled_rows = counts.get("labelled", 0)
    summary.unknown_labels = set(counts.get("unknown_labels", ()))
    if not quiet:
        _report_accuracy(summary, model, test)


def _report_accuracy(writer, model, test):
    # svm-predict's accuracy line (liblinear-predict's for a LIBLINEAR model)
    # when the input is labelled, after the note of labels the model lacks
    # (counted there as errors); an input without samples is said to be one
    # (an empty output is easily taken for a failed run)
    if not writer.total:
        from ..io.files import display_name
        options.log("hsvm: predict: %s holds no samples: nothing to predict" % display_name(test))
        return
    if writer.labelled:
        note = writer.unknown_labels_note("predict")
        if note:
            click.echo(note, err=True)
        click.echo(writer.accuracy_line((getattr(model, "provenance", None) or {}).get("tool")), err=True)


def _one_vs_rest(model_path):
    """Whether MODEL declares itself a one-vs-rest model (a usage message's
    hint, before the model is read: any failure is the reader's to say)."""
    from ..io.container import container_kind
    try:
        return container_kind(model_path) == "hsvm-ovr-model"
    except Exception:
        return False
