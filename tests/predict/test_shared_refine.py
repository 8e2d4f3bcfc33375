"""shared_refine_labels against the predictor it stands for: every setting's
labels (and refined counts) equal Predictor.predict_block's on the same
first-stage ranking, row by row, for max-wins and DAG refines, fixed k and
thresholds, one or two bags, canonical or reordered and flipped pairs, dense
or sparse samples."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.models.calibration import Calibration, hash_identity
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.refine import dense_is_cheaper
from hsvm_cli.predict.shared_refine import shared_refine_labels, shares_refine
from hsvm_cli.preprocess import prepare
from hsvm_cli.support.timing import Timings

from conftest import small_ovo_model


@pytest.mark.parametrize("bags,reordered,sparse", [(1, False, False), (2, True, False), (1, True, True),
                                                   (2, False, True)])
def test_shared_labels_are_the_predictors_labels(bags, reordered, sparse):
    # K large enough that every setting's cells cost less than scoring every
    # classifier (refine.cell_cost): those are the settings that share
    K, d, n = 40, 24, 300
    # sparse: unnormalised small integers, so that decision values of exactly 0 occur
    model = small_ovo_model(K, d, bags, reordered, seed=bags + 2 * reordered, normalize="none" if sparse else "l2")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, d)).astype(np.float32)
    if sparse:
        X = sp.csr_matrix(np.rint(X) * (rng.random(X.shape) < 0.4))
    h = hash_model(model, bits=64, seed=3)
    cal = Calibration(alphas={64: 0.7}, platt_A=-np.ones(model.n_pairs), platt_B=np.zeros(model.n_pairs),
                      model_sha256=model.content_sha256(), hash_identity=hash_identity(h))
    settings = [dict(filter_k=k, rule=r) for k in (2, 3, 5, 7) for r in ("vote", "dag")]
    settings += [dict(filter_k=8, epsilon=e) for e in (0.2, 0.05, 0.01)]
    predictors = [Predictor(model, h, bits=64, calibration=cal, threads=2, **kw) for kw in settings]
    assert all(shares_refine(p) for p in predictors)
    Xn = prepare(model.normalize, X)
    ranking = predictors[0].filter.hash_and_vote(Xn)
    # small blocks: several blocks, each with its own union width
    found = shared_refine_labels(predictors, Xn, *ranking, max_cells=2000, threads=2)
    for kw, p, (best, refined) in zip(settings, predictors, found):
        t = Timings()
        want = p.predict_block(X, filter_votes=ranking, timings=t)
        np.testing.assert_array_equal(model.classes[best], want.labels, err_msg=str(kw))
        assert int(refined.sum()) == t.counters["refined_classes"], kw


def test_class_score_rankings_share_too():
    # d = 64: at smaller d a refine cell's fixed part makes scoring every classifier cheaper (refine.cell_cost)
    model = small_ovo_model(30, 64, 1, False, seed=9)
    X = np.random.default_rng(2).standard_normal((200, 64)).astype(np.float32)
    predictors = [Predictor(model, first_stage="scores", filter_k=k, rule=r) for k in (3, 6) for r in ("vote", "dag")]
    Xn = prepare(model.normalize, X)
    scores = predictors[0].filter.scores(Xn)
    ranking = (np.zeros(scores.shape, dtype=np.int32), scores)
    for p, (best, _) in zip(predictors, shared_refine_labels(predictors, Xn, *ranking)):
        np.testing.assert_array_equal(model.classes[best], p.predict(X))


def test_refines_that_score_every_classifier_or_keep_every_class_are_not_shared():
    # 15 pairs: 4 kept classes' 6 cells cost more than scoring all 15
    model = small_ovo_model(6, 8, 1, False, seed=1)
    h = hash_model(model, bits=64, seed=0)
    assert dense_is_cheaper(4, model)
    assert not shares_refine(Predictor(model, h, bits=64, filter_k=4))
    assert not shares_refine(Predictor(model, h, bits=64, filter_k=1))
    assert not shares_refine(Predictor(model, h, bits=64, filter_k=6))
    assert not shares_refine(Predictor(model))
    with pytest.raises(ValueError, match="sampled refine"):
        shared_refine_labels([Predictor(model, h, bits=64, filter_k=4)], np.zeros((1, 8), np.float32),
                             np.zeros((1, 6), np.int32), np.zeros((1, 6)))
