import numpy as np
import pytest

from hsvm_cli.predict.ranking import best_class, rank_classes, top_classes


def test_tie_break_uses_confidence_then_class_order_and_never_overturns_votes():
    votes = np.array([[2, 3, 3, 1], [1, 1, 1, 1], [5, 0, 0, 0]])
    conf = np.array([[9.0, -1.0, 0.5, 3.0], [0.0, 0.0, 0.0, 0.0], [-9.0, 1.0, 2.0, 3.0]])
    assert best_class(votes, conf).tolist() == [2, 0, 0]
    assert rank_classes(votes, conf)[0].tolist() == [2, 1, 0, 3]
    assert top_classes(votes, conf, 2).tolist() == [[2, 1], [0, 1], [0, 3]]


@pytest.mark.parametrize("K, k", [(5, 1), (5, 5), (40, 7), (300, 30)])
def test_native_top_k_equals_full_lexicographic_ranking(K, k):
    rng = np.random.default_rng(K + k)
    votes = rng.integers(0, 4, size=(50, K)).astype(np.int32)   # many vote ties
    conf = rng.integers(-2, 3, size=(50, K)).astype(np.float64)  # and confidence ties
    assert np.array_equal(top_classes(votes, conf, k), rank_classes(votes, conf)[:, :k])


@pytest.mark.parametrize("threads", [2, 3])
def test_top_k_on_several_threads_is_the_one_thread_selection(threads):
    rng = np.random.default_rng(threads)
    n, K = 3001, 1000   # enough cells that every thread gets a block of rows
    votes = rng.integers(0, 4, size=(n, K)).astype(np.int32)
    conf = rng.integers(-2, 3, size=(n, K)).astype(np.float64)
    one = top_classes(votes, conf, 9, threads=1)
    assert np.array_equal(top_classes(votes, conf, 9, threads=threads), one)
    assert np.array_equal(one[::97], rank_classes(votes[::97], conf[::97])[:, :9])
