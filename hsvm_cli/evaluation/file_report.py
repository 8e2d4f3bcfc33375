"""File-level evaluation: what ``hsvm eval`` computes, as data."""
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, InputFormatError, OptionError
from ..io.files import display_name
from ..io.grid import read_grid
from ..io.predictions import looks_like_probabilities, read_predictions, read_scored_predictions, require_probabilities
from ..io.shard import as_shard
from ..io.svmlight import iter_svmlight
from ..support.arrays import is_int
from ..support.labels import class_index
from .formatting import format_json, format_report
from .metrics import default_recall_ks, label_metrics
from .sections import probability_report, recall_report, reference_report


@dataclass
class Evaluation:
    """``report``: everything ``hsvm eval`` prints (the JSON document);
    ``curves``: the full curves behind it, for plots (``"recall"``: recall at
    k = 1..K per key, ``"reject"``: (reject_rate, error_rate) arrays)."""

    report: dict
    curves: dict = field(default_factory=dict)
    title: str = None

    def text(self, *, confusion=False):
        return format_report(self.report, confusion=confusion)

    def json(self, *, confusion=False):
        return format_json(self.report, confusion=confusion)

    def plot(self, path):
        """Draw the error-reject curve, the top-k recall and the grid (whichever
        the evaluation has) into ``path``; needs matplotlib."""
        from .plots import plot_eval
        grid_rows = self.report.get("grid", {}).get("rows")
        if not (self.curves or grid_rows):
            raise OptionError("--plot: nothing to draw; PREDICTIONS has no scores or probabilities "
                              "(`hsvm predict --scores` / `--proba`) and there is no (non-empty) --grid")
        targets = [(r["error_rate"], r["reject_rate"])
                   for r in self.report.get("probability", {}).get("reject_at_error", [])]
        plot_eval(path, reject=self.curves.get("reject"), recall=self.curves.get("recall"), targets=targets,
                  grid=grid_rows, accuracy=self.report.get("accuracy"), title=self.title)


def evaluate(truth=None, predictions=None, *, proba=None, recall_k=None, reference=None, grid=None,
             zero_based=False, shard=None):
    """Evaluate the predictions file ``predictions`` (as ``hsvm predict`` writes
    it: labels, or a ``labels`` header with votes or probabilities) against the
    labels of the svmlight file ``truth``; paths or ``-``.

    ``proba``: True insists the scores are probabilities (every row checked),
    False declines, None detects.  ``recall_k``: the k of the top-k recall
    table (default 1, 2, 3, 5, 10, 20, 50, ... and K).  ``reference``: labels
    of the exact prediction, for agreement.  ``grid``: a grid JSON file from
    ``hsvm calibrate --grid-json``, tabulated (truth and predictions may then
    be None).  ``shard``: evaluate shard ``"i/N"`` of the plain file ``truth``
    (io/shard.py) against ``predictions`` (and ``reference``) made for that
    shard (``hsvm predict --shard i/N``).  Returns an :class:`Evaluation`.  Malformed files raise
    :class:`~hsvm_cli.errors.InputFormatError` naming the line."""
    if (truth is None) != (predictions is None) or (truth is None and grid is None):
        raise OptionError("give both truth and predictions (only a grid can do without them)")
    report, curves = {}, {}
    if truth is not None:
        report, curves = _evaluate_predictions(truth, predictions, proba, recall_k, reference, zero_based, shard)
    if grid is not None:
        report["grid"] = {"file": display_name(grid), "rows": read_grid(grid)}
    return Evaluation(report, curves, display_name(predictions) if predictions is not None else None)


def _evaluate_predictions(truth, predictions, proba, recall_k, reference, zero_based, shard):
    # Only the labels count: small float32 chunks bound the memory (the
    # features of a 65,536-row chunk of dense text took gigabytes), and index 0
    # is no error in a file whose features are never used.
    del zero_based
    y_true = np.concatenate([c.y for c in iter_svmlight(truth, zero_based=True, shard=shard, chunk_rows=4096,
                                                        dtype=np.float32)] or [np.zeros(0, np.int64)])
    if y_true.shape[0] == 0:
        raise DataError("%s holds no samples to evaluate" % display_name(truth))
    # A later shard's --scores/--proba part has no header (shard 0's has it):
    # its labels are evaluated, its scores only in the concatenated output.
    pred = read_scored_predictions(predictions, headerless_scores=shard is not None and not as_shard(shard).is_first)
    y_pred = pred.labels
    if y_pred.shape[0] != y_true.shape[0]:
        # the file's last line: after a header, rows are not line numbers
        last = int(pred.lines[-1]) if pred.lines is not None and pred.lines.size else \
            (1 if pred.has_scores else int(y_pred.shape[0]))
        raise InputFormatError(pred.name, last,
                               "%d predictions for the %d samples of %s"
                               % (y_pred.shape[0], y_true.shape[0], display_name(truth)
                                  + ("" if shard is None else " (shard %s)" % (as_shard(shard),))))
    if proba and pred.scores_dropped:
        raise OptionError("--proba: shard %s's part of the output has no 'labels' header (shard 0's has it): "
                          "evaluate the concatenated output" % (as_shard(shard),))
    if proba:
        require_probabilities(pred)
    if recall_k is not None and not pred.has_scores:
        raise OptionError("--recall-k needs scores: %s has no 'labels ...' header "
                          "(`hsvm predict --scores` or `--proba` writes one)" % pred.name)
    is_proba = pred.has_scores and (proba if proba is not None else looks_like_probabilities(pred))

    report = label_metrics(y_true, y_pred)
    curves = {}
    report["predictions"] = {"file": pred.name,
                             "kind": "probabilities" if is_proba else "scores" if pred.has_scores else "labels",
                             "classes": [int(c) for c in pred.classes] if pred.has_scores else None}
    if pred.scores_dropped:
        report["predictions"]["scores_not_evaluated"] = (
            "shard %s's scores have no 'labels' header (shard 0's part has it): evaluate the concatenated "
            "output for them" % (as_shard(shard),))
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
        if isinstance(recall_k, (int, np.integer)) and not isinstance(recall_k, bool):
            recall_k = [recall_k]                  # one k, as --recall-k 3 gives it
        if recall_k and any(not is_int(k) or k < 1 for k in recall_k):
            raise OptionError("--recall-k takes whole numbers of at least 1, got %s"
                              % ", ".join(map(repr, recall_k)))
        ks = sorted(set(recall_k)) if recall_k else default_recall_ks(K)
        if ks[-1] > K:
            raise OptionError("--recall-k %d: %s has only %d classes" % (ks[-1], pred.name, K))
        y_index = class_index(pred.classes, y_true)
        report["outside_classes"] = int((y_index < 0).sum())
        ref_index = class_index(pred.classes, y_ref) if y_ref is not None else None
        report["recall"], curves["recall"] = recall_report(pred, y_index, ks, ref_index)
        if is_proba and y_pred.shape[0]:
            report["probability"], curves["reject"] = probability_report(pred, y_index)
    return report, curves
