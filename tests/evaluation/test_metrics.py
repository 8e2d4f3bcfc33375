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
