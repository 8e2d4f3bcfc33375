"""hsvm eval: score and probability files, filter recall, reference agreement,
Chow's error-reject trade-off, the grid table and the optional plot."""
import numpy as np

from hsvm_cli.evaluation.metrics import class_ranks, default_recall_ks
from hsvm_cli.support.labels import class_index


def test_ranks_break_ties_by_class_order():
    S = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    assert class_ranks(S, np.array([2, 3])).tolist() == [1, 3]
    assert class_ranks(S, np.array([1, -1])).tolist() == [0, 4]
    assert class_index([5, 3, 9], [9, 4, 5, 3]).tolist() == [2, -1, 0, 1]
    assert default_recall_ks(242) == [1, 2, 3, 5, 10, 20, 50, 100, 200, 242]
    assert default_recall_ks(1) == [1]


def test_label_metrics_without_the_confusion_matrix_are_the_same_figures():
    # hsvm eval without --confusion: memory of order K (the K x K matrix took 3 GB at 20,000 classes)
    from hsvm_cli.evaluation.metrics import PairCounts, label_metrics
    rng = np.random.default_rng(3)
    y = rng.integers(-5, 40, 500)
    pred = np.where(rng.random(500) < 0.6, y, rng.integers(-5, 60, 500))
    counts = PairCounts()
    for s in range(0, 500, 77):
        counts.add(y[s:s + 77], pred[s:s + 77])
    full, lean = label_metrics(y, pred), counts.metrics(confusion=False)
    assert "confusion" not in lean and {k: v for k, v in full.items() if k != "confusion"} == lean
    cm = np.asarray(full["confusion"])
    assert cm.sum() == 500 and np.trace(cm) == full["correct"] == int((y == pred).sum())
    empty = PairCounts().metrics(confusion=False)
    assert empty["samples"] == 0 and empty["accuracy"] is None and empty["labels"] == []


def test_wide_scored_rows_read_in_small_blocks_give_the_same_report(tmp_path, monkeypatch):
    # rows of many classes go in blocks of a bounded number of values (4,096 rows of 3,000 classes took 1.8 GB)
    from hsvm_cli.evaluation.file_report import evaluate
    from hsvm_cli.io import predictions
    rng = np.random.default_rng(5)
    K, n = 12, 50
    y = rng.integers(0, K, n)
    truth = tmp_path / "t.svm"
    truth.write_text("".join("%d 1:1\n" % v for v in y))
    scores = rng.integers(0, 9, (n, K))
    preds = tmp_path / "p.txt"
    preds.write_text("labels %s\n" % " ".join(map(str, range(K))) +
                     "".join("%d %s\n" % (int(np.argmax(r)), " ".join(map(str, r))) for r in scores))
    whole = evaluate(truth, preds).json(confusion=True)
    monkeypatch.setattr(predictions, "_BLOCK_VALUES", 2 * (K + 1) + 3)       # two rows a block
    blocks = list(predictions.ScoredBlocks(preds))
    assert len(blocks) == 25 and np.array_equal(np.concatenate([b[1] for b in blocks]), scores)
    assert evaluate(truth, preds).json(confusion=True) == whole
    assert "confusion" not in evaluate(truth, preds, confusion=False).report
