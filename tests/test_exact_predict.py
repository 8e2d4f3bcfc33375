import numpy as np
import pytest

from hsvm_cli.exact import ExactScorer, ovo_votes
from hsvm_cli.model import OvoModel, canonical_pairs, load_model, save_model
from hsvm_cli.predict import predict_exact
from hsvm_cli.ranking import best_class, rank_classes, top_classes

from conftest import shared_set


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


def test_tie_break_uses_confidence_then_class_order_and_never_overturns_votes():
    votes = np.array([[2, 3, 3, 1], [1, 1, 1, 1], [5, 0, 0, 0]])
    conf = np.array([[9.0, -1.0, 0.5, 3.0], [0.0, 0.0, 0.0, 0.0], [-9.0, 1.0, 2.0, 3.0]])
    assert best_class(votes, conf).tolist() == [2, 0, 0]
    assert rank_classes(votes, conf)[0].tolist() == [2, 1, 0, 3]
    assert top_classes(votes, conf, 2).tolist() == [[2, 1], [0, 1], [0, 3]]


def test_prediction_is_independent_of_batch_size(digits_model, digits):
    _, _, Xt, _ = digits
    scorer = ExactScorer(digits_model)
    full = scorer.votes(Xt)
    scorer.block_rows = lambda: 7
    small = scorer.votes(Xt)
    assert np.array_equal(full[0], small[0])


def test_dense_and_sparse_inputs_give_the_same_predictions(digits_model, digits):
    _, _, Xt, _ = digits
    a = predict_exact(digits_model, Xt)[0]
    b = predict_exact(digits_model, Xt.toarray())[0]
    assert np.array_equal(a, b)


def test_saved_model_predicts_like_the_trained_one(digits_model, digits_model_file, digits):
    _, _, Xt, yt = digits
    loaded = load_model(digits_model_file)
    assert loaded.content_sha256() == digits_model.content_sha256()
    assert np.array_equal(predict_exact(loaded, Xt)[0], predict_exact(digits_model, Xt)[0])


def test_bagged_pair_follows_majority_of_bags(tmp_path):
    # One pair, three bags: two say class 0, one says class 1.
    W = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], np.float32)
    m = OvoModel(classes=np.array([3, 8]), pair_a=np.array([0], np.int32), pair_b=np.array([1], np.int32),
                 W=W, b=np.zeros(3, np.float32), bags=3, normalize="none")
    labels, votes, _ = predict_exact(m, np.array([[1.0, 0.0], [-1.0, 0.0]]))
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
    from hsvm_cli.trainer import train_model
    m = train_model(X, y, C=C, seed=0)
    return float((predict_exact(m, Xt)[0] == yt).mean())


def test_accuracy_matches_scikit_learn_ovo_on_digits(digits):
    X, y, Xt, yt = digits
    assert abs(_hsvm_accuracy(X, y, Xt, yt, 1.0) - _sklearn_ovo_accuracy(X, y, Xt, yt, 1.0)) <= 0.01


@pytest.mark.parametrize("name, d", [("reuters-r52", 11698), ("omniglot-242", 784)])
def test_accuracy_matches_scikit_learn_ovo_on_shared_data(name, d):
    pytest.importorskip("sklearn")
    from hsvm_cli.svmlight import load_svmlight
    root = shared_set(name)
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d)
    ours = _hsvm_accuracy(X, y, Xt, yt, 1.0)
    theirs = _sklearn_ovo_accuracy(X, y, Xt, yt, 1.0)
    assert abs(ours - theirs) <= 0.01, (ours, theirs)


@pytest.mark.parametrize("K, k", [(5, 1), (5, 5), (40, 7), (300, 30)])
def test_native_top_k_equals_full_lexicographic_ranking(K, k):
    rng = np.random.default_rng(K + k)
    votes = rng.integers(0, 4, size=(50, K)).astype(np.int32)   # many vote ties
    conf = rng.integers(-2, 3, size=(50, K)).astype(np.float64)  # and confidence ties
    assert np.array_equal(top_classes(votes, conf, k), rank_classes(votes, conf)[:, :k])
