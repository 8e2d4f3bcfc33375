"""Writing predictions (svm-predict layout) and keeping the running accuracy."""
import numpy as np

from .fileio import atomic_output
from .timing import NullTimings


def timed_chunks(chunks, timings):
    """Charge the time spent producing each chunk (reading, decompressing,
    parsing) to the ``parse`` phase."""
    it = iter(chunks)
    while True:
        with timings.phase("parse"):
            try:
                chunk = next(it)
            except StopIteration:
                return
        yield chunk


class PredictionWriter:
    """One predicted label per line; with ``scores`` a ``labels c1 c2 ...`` header
    and each class's vote count after the label; with ``proba`` the same layout
    with one probability per class (LIBSVM's ``svm-predict -b 1`` output)."""

    def __init__(self, classes, *, scores=False, proba=False):
        if scores and proba:
            raise ValueError("choose scores or probabilities, not both")
        self.classes = np.asarray(classes)
        self.scores = scores
        self.proba = proba
        self.total = 0
        self.correct = 0
        self.labelled_rows = 0

    @property
    def labelled(self):
        # Inputs to be classified often carry a placeholder label (0, -1) that is
        # no class of the model: then there is no accuracy to report.
        return self.labelled_rows > 0

    def _format(self, block):
        if self.proba:
            return "".join("%d %s\n" % (lab, " ".join("%.6g" % v for v in row))
                           for lab, row in zip(block.labels.tolist(), block.proba.tolist()))
        if not self.scores:
            return "".join("%d\n" % v for v in block.labels.tolist())
        rows = []
        for lab, v in zip(block.labels.tolist(), block.votes.tolist()):
            rows.append("%d %s\n" % (lab, " ".join(map(str, v))))
        return "".join(rows)

    def update_accuracy(self, block):
        y = np.asarray(block.y_true)
        known = np.isin(y, self.classes)
        self.total += int(y.shape[0])
        self.labelled_rows += int(known.sum())
        self.correct += int((block.labels == y).sum())

    def write_all(self, blocks, output, *, timings=None):
        t = timings or NullTimings()
        with atomic_output(output, "w") as fh:
            if self.scores or self.proba:
                fh.write("labels %s\n" % " ".join(str(int(c)) for c in self.classes))
            for block in blocks:
                self.update_accuracy(block)
                with t.phase("write"):
                    fh.write(self._format(block))

    @property
    def accuracy(self):
        return self.correct / self.total if self.total else 0.0

    def accuracy_line(self):
        return "Accuracy = %.4g%% (%d/%d) (classification)" % (100.0 * self.accuracy, self.correct, self.total)
