import numpy as np
import pytest

from hsvm_cli.models.ovo import OvoModel, load_model, save_model
from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.predict.exact import ExactScorer, ovo_votes
from hsvm_cli.predict.predictor import Predictor

from conftest import kernel_params, shared_set


def _votes_reference(dec, pa, pb, bags, K):
    n = dec.shape[0]
    votes = np.zeros((n, K), np.int32)
    conf = np.zeros((n, K))
    for i in range(n):
        for p in range(pa.shape[0]):
            d = dec[i, p * bags:(p + 1) * bags].astype(np.float64)
            pos = int((d > 0).sum())
            a_wins = 2 * pos > bags or (2 * pos == bags and d.sum() > 0)
            votes[i, pa[p] if a_wins else pb[p]] += 1
            conf[i, pa[p]] += d.mean()
            conf[i, pb[p]] -= d.mean()
    return votes, conf


@pytest.mark.parametrize("bags", [1, 2, 3, 4])
def test_native_votes_match_reference_for_odd_and_even_bags(bags):
    rng = np.random.default_rng(bags)
    K = 7
    pa, pb = canonical_pairs(K)
    dec = rng.standard_normal((13, pa.shape[0] * bags)).astype(np.float32)
    dec[0, :] = 0.0  # zero decisions go to the pair's second class
    v, c = ovo_votes(dec, pa, pb, bags=bags, n_classes=K)
    rv, rc = _votes_reference(dec, pa, pb, bags, K)
    assert np.array_equal(v, rv)
    assert np.allclose(c, rc)
    assert (v.sum(axis=1) == pa.shape[0]).all()


def test_prediction_is_independent_of_batch_size(digits_model, digits):
    _, _, Xt, _ = digits
    scorer = ExactScorer(digits_model)
    full = scorer.votes(Xt)
    scorer.block_rows = lambda: 7
    small = scorer.votes(Xt)
    assert np.array_equal(full[0], small[0])


def test_dense_and_sparse_inputs_give_the_same_predictions(digits_model, digits):
    _, _, Xt, _ = digits
    a = Predictor(digits_model).predict(Xt)
    b = Predictor(digits_model).predict(Xt.toarray())
    assert np.array_equal(a, b)


def test_bagged_pair_follows_majority_of_bags(tmp_path):
    # One pair, three bags: two say class 0, one says class 1.
    W = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], np.float32)
    m = OvoModel(classes=np.array([3, 8]), pair_a=np.array([0], np.int32), pair_b=np.array([1], np.int32),
                 W=W, b=np.zeros(3, np.float32), bags=3, normalize="none")
    p = Predictor(m).predict_block(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    labels = p.labels
    assert labels.tolist() == [3, 8]
    save_model(m, tmp_path / "m.hsvm")
    assert load_model(tmp_path / "m.hsvm").bags == 3


def _sklearn_ovo_accuracy(X, y, Xt, yt, C):
    from sklearn.multiclass import OneVsOneClassifier
    from sklearn.svm import LinearSVC

    from hsvm_cli.preprocess import l2_normalize
    clf = OneVsOneClassifier(LinearSVC(C=C, loss="squared_hinge", dual=True, max_iter=5000))
    clf.fit(l2_normalize(X), y)
    return float((clf.predict(l2_normalize(Xt)) == yt).mean())


def _hsvm_accuracy(X, y, Xt, yt, C):
    from hsvm_cli.train.ovo import train_ovo
    m = train_ovo(X, y, C=C, seed=0)
    return float((Predictor(m).predict(Xt) == yt).mean())


def test_accuracy_matches_scikit_learn_ovo_on_digits(digits):
    X, y, Xt, yt = digits
    assert abs(_hsvm_accuracy(X, y, Xt, yt, 1.0) - _sklearn_ovo_accuracy(X, y, Xt, yt, 1.0)) <= 0.01


@pytest.mark.parametrize("name, d", [("reuters-r52", 11698), ("omniglot-242", 784)])
def test_accuracy_matches_scikit_learn_ovo_on_shared_data(name, d):
    pytest.importorskip("sklearn")
    from hsvm_cli.io.svmlight import load_svmlight
    root = shared_set(name)
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d)
    ours = _hsvm_accuracy(X, y, Xt, yt, 1.0)
    theirs = _sklearn_ovo_accuracy(X, y, Xt, yt, 1.0)
    assert abs(ours - theirs) <= 0.01, (ours, theirs)


def test_decision_blocks_written_into_one_buffer_are_the_fresh_blocks(digits_model, digits):
    from hsvm_cli.preprocess import prepare
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    scorer = ExactScorer(digits_model)
    fresh = [(s, d.copy()) for s, d in scorer.decision_blocks(Xn, rows=64)]
    reused = [(s, d.copy()) for s, d in scorer.decision_blocks(Xn, rows=64, reuse=True)]
    assert [s for s, _ in fresh] == [s for s, _ in reused] and len(fresh) > 2
    assert all(a.tobytes() == b.tobytes() for (_, a), (_, b) in zip(fresh, reused))


@pytest.mark.parametrize("kernel", kernel_params())
@pytest.mark.parametrize("bags,reordered", [(1, False), (2, False), (1, True)])
def test_votes_of_many_pairs_taken_range_by_range_are_the_whole_blocks_bits(kernel, bags, reordered, monkeypatch):
    # A model too large for MIN_BLOCK_ROWS rows of decision values is voted
    # pairs range by range (hsvm_ovo_votes_add); forced here on a small one
    # with ranges that cut pair runs anywhere.
    import hsvm_cli.predict.exact as exact

    from conftest import reorder_and_flip_pairs
    rng = np.random.default_rng(7 + bags)
    K, d, n = 23, 17, 301
    pa, pb = canonical_pairs(K)
    if reordered:
        pa, pb = reorder_and_flip_pairs(rng, pa, pb)
    P = pa.shape[0]
    model = OvoModel(classes=np.arange(K, dtype=np.int64) * 3, pair_a=pa, pair_b=pb,
                     W=rng.standard_normal((P * bags, d)).astype(np.float32),
                     b=rng.standard_normal(P * bags).astype(np.float32), bags=bags)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[5] = 0.0
    whole = ExactScorer(model, kernel=kernel).votes(X, kernel=kernel)
    monkeypatch.setattr(exact, "block_rows_for", lambda n_classifiers: 3)
    monkeypatch.setattr(exact, "_BLOCK_BYTES", 4 * exact.MIN_BLOCK_ROWS * bags * 37)   # 37 pairs a range
    ranged = ExactScorer(model, kernel=kernel).votes(X, kernel=kernel)
    assert np.array_equal(ranged[0], whole[0])
    assert ranged[1].tobytes() == whole[1].tobytes()
    assert (ranged[0].sum(axis=1) == P).all()


def test_sparse_scoring_refuses_a_transposed_model_that_would_not_fit(digits_model, digits, monkeypatch):
    # sparse rows read W transposed, a second copy as large as the model:
    # a 5.6 GB model took 10.8 GB and failed late under a memory limit
    import scipy.sparse as sp

    from hsvm_cli.support import memory
    from hsvm_cli.support.memory import TooLargeError
    _, _, Xt, _ = digits
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    with pytest.raises(TooLargeError, match="W transposed, 64 x 45 float32"):
        ExactScorer(digits_model).decision(sp.csr_matrix(Xt))
