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


@pytest.mark.parametrize("tie_order", [False, True])
def test_the_winner_among_kept_classes_is_the_winner_of_their_votes_spread_over_all_classes(tie_order):
    from types import SimpleNamespace

    from hsvm_cli.predict.refine import KeptVotes
    from hsvm_cli.predict.ties import kept_winners, winners
    rng = np.random.default_rng(3)
    n, K, k = 2000, 9, 5
    S = np.sort(np.stack([rng.choice(K, k, replace=False) for _ in range(n)]), axis=1).astype(np.int64)
    nvalid = rng.integers(1, k + 1, n)
    use = np.arange(k)[None, :] < nvalid[:, None]
    S = np.where(use, S, 0)
    # few distinct values: many ties in votes, and in confidence among equal votes
    votes = np.where(use, rng.integers(0, 3, (n, k)), 0).astype(np.int32)
    conf = np.where(use, rng.integers(-2, 3, (n, k)) * 0.5, 0.0)
    # confidences that overflowed: -inf, also for every class of the most votes
    conf[rng.random((n, k)) < 0.2] = -np.inf
    conf[:50] = -np.inf
    kept = KeptVotes(S, nvalid, votes, conf, K)
    model = SimpleNamespace(tie_order=rng.permutation(K) if tie_order else None)
    full_votes, full_conf = kept.full(unused=-1)
    expected = winners(model, full_votes, full_conf)
    assert np.array_equal(kept_winners(model, kept), expected)
    assert np.all(use[np.arange(n), np.argmax(S == expected[:, None], axis=1)])
    assert np.all(full_votes[np.arange(n), expected] == full_votes.max(axis=1))


@pytest.mark.parametrize("threads", [1, 3])
def test_class_scores_rank_as_zero_votes_with_their_float64_sums_as_the_confidence(threads):
    from hsvm_cli.predict.class_scores import ClassScores
    rng = np.random.default_rng(5)
    n, K = 3000, 400                       # n * K above 2^20: several threads take part
    # few distinct values, so equal sums are common and the class order decides
    products = (rng.integers(-4, 5, (n, K)) * 0.25).astype(np.float32)
    beta = rng.integers(-2, 3, K) * 0.5
    scores = ClassScores(products, beta)
    full = scores.full()
    assert full.tobytes() == (products.astype(np.float64) + beta).tobytes()
    for k in (1, 7, K):
        want = top_classes(np.zeros((n, K), np.int32), full, k)
        assert np.array_equal(scores.top(k, threads=threads), want), k
    assert np.array_equal(ClassScores(products.astype(np.float64), beta).top(7), top_classes(
        np.zeros((n, K), np.int32), full, 7))
