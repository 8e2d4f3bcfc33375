"""File-level evaluation: what ``hsvm eval`` computes, as data."""
import os
import stat
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, HsvmError, InputFormatError, OptionError
from ..io.files import display_name
from ..io.grid import read_grid
from ..io.predictions import ScoredBlocks, iter_prediction_labels, not_distributions, probability_violation
from ..io.shard import as_shard
from ..io.svmlight import iter_svmlight
from ..support.arrays import is_int
from ..support.labels import class_index
from .calibration_metrics import row_summary
from .formatting import format_json, format_report
from .metrics import PairCounts, class_ranks, default_recall_ks, rank_counts
from .sections import probability_report, recall_report


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class Evaluation:
    """``report``: everything ``hsvm eval`` prints (the JSON document);
    ``curves``: the full curves behind it, for plots (``"recall"``: recall at
    k = 1..K per key, ``"reject"``: (reject_rate, error_rate) arrays)."""

    report: dict
    curves: dict = field(default_factory=dict)
    title: str = None

    def __repr__(self):
        # the figures, not the curves' hundreds of points (report and curves hold them)
        r = self.report
        shown = ", ".join("%s=%s" % (key, "%.4f" % r[key] if isinstance(r.get(key), float) else r.get(key))
                          for key in ("samples", "accuracy", "macro_f1") if key in r)
        prob = r.get("probability")
        if prob:
            shown += ", nll=%.4f, ece=%.4f" % (prob["nll"], prob["ece"])
        if "grid" in r:
            shown += ", grid of %d settings" % len(r["grid"]["rows"])
        return "Evaluation(%s)" % shown

    def text(self, *, confusion=False, per_class=False):
        """The report as ``hsvm eval`` prints it (``confusion``: with the
        confusion matrix; ``per_class``: with each label's precision, recall,
        F1 and support)."""
        return format_report(self.report, confusion=confusion, per_class=per_class)

    def json(self, *, confusion=False):
        """The report as ``hsvm eval --json`` prints it."""
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
             zero_based=False, shard=None, confusion=True):
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
    shard (``hsvm predict --shard i/N``).  ``confusion=False``: the report
    without its K x K confusion matrix (memory of order K, not K^2).  Returns
    an :class:`Evaluation`.  Malformed files raise
    :class:`~hsvm_cli.errors.InputFormatError` naming the line."""
    if (truth is None) != (predictions is None) or (truth is None and grid is None):
        raise OptionError("give both truth and predictions (only a grid can do without them)")
    report, curves = {}, {}
    if truth is not None:
        report, curves = _evaluate_predictions(truth, predictions, proba, recall_k, reference, zero_based, shard,
                                               confusion)
    if grid is not None:
        report["grid"] = {"file": display_name(grid), "rows": read_grid(grid)}
    return Evaluation(report, curves, display_name(predictions) if predictions is not None else None)


class LabelStream:
    """The labels of an input read block by block (``blocks``: an iterable of
    int64 arrays), handed out ``m`` at a time, so that the truth, the
    predictions and a reference are read side by side and none is held
    whole.  ``total``: the labels handed out (and, after :meth:`count_rest`,
    all of them)."""

    def __init__(self, blocks):
        self._blocks = iter(blocks)
        self._buffer = np.zeros(0, dtype=np.int64)
        self.total = 0

    def take(self, m):
        """The next ``m`` labels (fewer at the end of the input)."""
        parts, have = [self._buffer], self._buffer.shape[0]
        while have < m:
            block = next(self._blocks, None)
            if block is None:
                break
            parts.append(block)
            have += block.shape[0]
        labels = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out, self._buffer = labels[:m], labels[m:]
        self.total += out.shape[0]
        return out

    def empty(self):
        """Whether no label is left (reads a block to tell)."""
        while self._buffer.shape[0] == 0:
            block = next(self._blocks, None)
            if block is None:
                return True
            self._buffer = block
        return False

    def count_rest(self):
        """Read the rest of the input; returns :attr:`total`, all of them."""
        self.total += self._buffer.shape[0]
        self._buffer = np.zeros(0, dtype=np.int64)
        for block in self._blocks:
            self.total += block.shape[0]
        return self.total


class ScoredRows:
    """What the report needs of each row of a predictions file, gathered
    block by block as :class:`~hsvm_cli.io.predictions.ScoredBlocks` reads
    them beside the truth (and the reference): counts of (true, predicted)
    label pairs, of the ranks of the true class and of the reference's label,
    of agreements; how many labels are not the top class; the first row that
    is not a probability distribution, and whether every score is a whole
    number -- none of which grows with the rows -- and, for scored rows,
    p_y, the top score and whether its class is the true one (17 bytes a
    row: the error-reject curve sorts every sample's top probability), not
    the n x K scores (a million rows of 1,000 probabilities are 8 GB as
    float64)."""

    def __init__(self, truth, reference=None):
        self.truth, self.reference = truth, reference
        # a fault of the reference is reported where it always was, after
        # the predictions file's own (and its reading stops there)
        self.reference_fault = None
        self.n = 0
        self.not_argmax = 0
        self.violation = None
        self.not_distributions = 0
        self.whole_numbers = True
        self.pairs = PairCounts()
        self.identical = self.reference_correct = 0
        self.outside_classes = 0
        self.rank_counts = self.ref_rank_counts = None
        self.brier_sum = 0.0        # of sum_c (p_c - [c = y])^2 over the scored rows
        self._parts = []

    def _reference(self, m):
        if self.reference is None or self.reference_fault is not None:
            return None
        try:
            return self.reference.take(m)
        except HsvmError as exc:
            self.reference_fault = exc
            return None

    def add(self, classes, labels, scores, lines):
        m = labels.shape[0]
        self.n += m
        y_true = self.truth.take(m)
        known = y_true.shape[0]                 # rows beyond the truth's: refused once the file is read
        self.pairs.add(y_true, labels[:known])
        y_ref = self._reference(m)
        if y_ref is not None:
            both = min(known, y_ref.shape[0])
            self.identical += int((labels[:y_ref.shape[0]] == y_ref).sum())
            self.reference_correct += int((y_ref[:both] == y_true[:both]).sum())
        if scores is None:
            return
        K = len(classes)
        y = _padded(class_index(classes, y_true), m)
        self.outside_classes += int((y[:known] < 0).sum())
        p_true, conf, correct, top = row_summary(scores, y)
        # Where classes tie at a row's maximum, the file's own label is its
        # most probable class when it is one of them (a logistic model's
        # empty row: every class alike, the label in the model's tie order),
        # and the recall table ranks it first among them.
        own_index = class_index(classes, labels)
        own_top = (own_index >= 0) & (scores[np.arange(m), np.maximum(own_index, 0)] == conf)
        top = np.where(own_top, own_index, top)
        correct = (top == y) & (y >= 0)
        first = np.where(own_top, own_index, -1)       # below the maximum a label is ranked as any class
        self.rank_counts = _added(self.rank_counts, rank_counts(class_ranks(scores, y, first), K))
        if y_ref is not None:
            ranks = class_ranks(scores, _padded(class_index(classes, y_ref), m), first)
            self.ref_rank_counts = _added(self.ref_rank_counts, rank_counts(ranks, K))
        self._parts.append((p_true, conf, correct))
        sq = np.einsum("ij,ij->", scores, scores, dtype=np.float64)
        self.brier_sum += float(sq) - 2.0 * float(np.sum(p_true, dtype=np.float64)) + m
        self.not_argmax += int((~own_top).sum())
        if self.violation is None:
            self.violation = probability_violation(scores, lines)
        if self.violation is not None:
            self.not_distributions += int(not_distributions(scores).sum())
        self.whole_numbers = self.whole_numbers and bool(np.all(scores == np.round(scores)))

    def finish(self):
        self.p_true = self.conf = self.correct = None
        if self._parts:
            self.p_true, self.conf, self.correct = (np.concatenate(p) for p in zip(*self._parts))
        del self._parts
        return self

    def looks_like_probabilities(self):
        """Auto-detection: every row non-negative and summing to 1.  A file of
        whole numbers only is taken for vote counts: with two classes every
        vote row ("1 0" / "0 1") is also a one-hot distribution, and a real
        probability file practically never consists of 0s and 1s alone."""
        return self.n > 0 and self.violation is None and not self.whole_numbers

    def nearly_probabilities(self):
        """Rows that are distributions but for a few (at most 1%, at least one
        good row): a --proba file with a damaged row, which auto-detection
        reads as scores, silently dropping the probability sections."""
        bad = self.not_distributions
        return self.violation is not None and not self.whole_numbers and 0 < bad <= 0.01 * self.n < self.n - bad


def _padded(index, m):
    # rows beyond the truth's (a count mismatch, refused once the file is read)
    # have no true class
    return index if index.shape[0] == m else np.r_[index, np.full(m - index.shape[0], -1, dtype=np.int64)]


def _added(total, counts):
    return counts if total is None else total + counts


def _evaluate_predictions(truth, predictions, proba, recall_k, reference, zero_based, shard, confusion):
    # Only the labels count: small float32 chunks bound the memory (the
    # features of a 65,536-row chunk of dense text took gigabytes), and index 0
    # is no error in a file whose features are never used.  The truth, the
    # predictions and the reference are read side by side, block by block:
    # memory does not grow with the rows, but for the 17 bytes a scored row
    # keeps for the probability sections.
    del zero_based
    if isinstance(recall_k, (int, np.integer)) and not isinstance(recall_k, bool):
        recall_k = [recall_k]                      # one k, as --recall-k 3 gives it
    if recall_k is not None and (isinstance(recall_k, (str, bytes)) or not hasattr(recall_k, "__iter__")
                                 or any(not is_int(k) or k < 1 for k in recall_k)):
        raise OptionError("--recall-k takes whole numbers of at least 1, got %r" % (recall_k,))
    truth_labels = LabelStream(_truth_labels(truth, shard))
    if truth_labels.empty() and shard is None:
        raise DataError("%s holds no samples to evaluate" % display_name(truth))
    # A shard may hold no samples (a short file cut into many shards): its
    # predictions are empty too (predict succeeded on it), and its report
    # counts 0 of 0, so that an array task per shard does not fail.
    ref_labels = None if reference is None else LabelStream(iter_prediction_labels(reference))
    # A later shard's --scores/--proba part has no header (shard 0's has it):
    # its labels are evaluated, its scores only in the concatenated output.
    pred = ScoredBlocks(predictions, headerless_scores=shard is not None and not as_shard(shard).is_first)
    rows = ScoredRows(truth_labels, ref_labels)
    try:
        for labels, scores, lines in pred:
            rows.add(pred.classes, labels, scores, lines)
    except HsvmError:
        # TEST's own fault is reported first, wherever it lies, as when TEST
        # was read whole before the predictions: read the rest of it
        try:
            truth_labels.count_rest()
        except HsvmError as fault:
            raise fault from None
        raise
    rows.finish()
    has_scores = pred.classes is not None
    n_true = truth_labels.count_rest()
    if rows.n != n_true:
        # the file's last line (of a header alone, the header's): neither rows
        # after a header nor labels after a comment line are line numbers
        last = pred.last_line
        reason = "%d prediction%s for the %d samples of %s" % (
            rows.n, "" if rows.n == 1 else "s", n_true,
            display_name(truth) + ("" if shard is None else " (shard %s)" % (as_shard(shard),)))
        if last == 0:           # an empty file has no line to name
            if rows.n == 0 and _is_stream(predictions):
                # `hsvm predict ... | hsvm eval -`: a failed predict's error is
                # already above; this one should point back to it
                reason += " (nothing came: did the command writing them fail?)"
            raise DataError("%s: %s" % (pred.name, reason))
        raise InputFormatError(pred.name, last, reason)
    if proba and pred.scores_dropped:
        raise OptionError("--proba: shard %s's part of the output has no 'labels' header (shard 0's has it): "
                          "evaluate the concatenated output" % (as_shard(shard),))
    if proba and not has_scores:
        raise InputFormatError(pred.name, 1, "no 'labels ...' header: --proba needs the output of "
                               "`hsvm predict --proba` (or LIBSVM's svm-predict -b 1)")
    if proba and rows.violation is not None:
        raise InputFormatError(pred.name, *rows.violation)
    if recall_k is not None and not has_scores:
        raise OptionError("--recall-k needs scores: %s has no 'labels ...' header "
                          "(`hsvm predict --scores` or `--proba` writes one)" % pred.name)
    is_proba = has_scores and (proba if proba is not None else rows.looks_like_probabilities())

    report = rows.pairs.metrics(confusion=confusion)
    curves = {}
    report["predictions"] = {"file": pred.name,
                             "kind": "probabilities" if is_proba else "scores" if has_scores else "labels",
                             "classes": [int(c) for c in pred.classes] if has_scores else None}
    if proba is None and has_scores and rows.nearly_probabilities():
        line, reason = rows.violation
        report["predictions"]["not_probabilities"] = (
            "%d of %d rows %s not a probability distribution (line %d: %s) while the other %d are: read as scores "
            "(--proba refuses the file there)" % (rows.not_distributions, rows.n,
                                                   "is" if rows.not_distributions == 1 else "are", line, reason,
                                                   rows.n - rows.not_distributions))
    if pred.scores_dropped:
        report["predictions"]["scores_not_evaluated"] = (
            "shard %s's scores have no 'labels' header (shard 0's part has it): evaluate the concatenated "
            "output for them" % (as_shard(shard),))
    if reference is not None:
        if rows.reference_fault is not None:
            raise rows.reference_fault
        ref_name = display_name(reference)
        n_ref = ref_labels.count_rest()
        if n_ref != rows.n:
            raise InputFormatError(ref_name, int(n_ref), "%d labels for the %d predictions of %s"
                                   % (n_ref, rows.n, pred.name))
        n = rows.n
        report["reference"] = {"file": ref_name, "identical": rows.identical,
                               "agreement": rows.identical / n if n else 0.0,
                               "accuracy": float(rows.reference_correct / n) if n else 0.0}
    if has_scores and rows.n:
        K = len(pred.classes)
        ks = sorted(set(recall_k)) if recall_k else default_recall_ks(K)
        if ks[-1] > K:
            raise OptionError("--recall-k %d: %s has only %d classes" % (ks[-1], pred.name, K))
        report["outside_classes"] = rows.outside_classes
        report["recall"], curves["recall"] = recall_report(rows, K, ks)
        if is_proba and rows.n:
            report["probability"], curves["reject"] = probability_report(rows)
    return report, curves


def _is_stream(path):
    """Whether the predictions come through stdin or a pipe, not a file."""
    if path is None or path == "-" or not isinstance(path, (str, bytes, os.PathLike)):
        return True
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def _truth_labels(truth, shard):
    """TRUTH's labels chunk by chunk; a predictions file given as TRUTH (its
    'labels ...' header read as a label) is said to be one."""
    try:
        for chunk in iter_svmlight(truth, _either_base=True, shard=shard, chunk_rows=4096, dtype=np.float32):
            yield chunk.y
    except InputFormatError as exc:
        if exc.line == 1 and exc.reason.startswith("bad label 'labels'"):
            raise InputFormatError(exc.source, 1, "a predictions file's 'labels ...' header, not svmlight data: the "
                                   "order is TRUTH PREDICTIONS (or --truth TRUTH PREDICTIONS); were they swapped?"
                                   ) from None
        raise
