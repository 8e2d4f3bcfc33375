"""Class weights (train/class_weight.py): each class's C multiplier in training
(LIBLINEAR's -wi, against its own Python API) and in the cross-validation path
(native/cvpath.c's per-label dual box, against LIBLINEAR on the fold's rows)."""
import numpy as np
import pytest
from liblinear import liblinearutil
from test_cross_validation import digits_l2  # noqa: F401  (fixture)
from test_liblinear_pairs import _blobs, _libc, _same_bytes

from hsvm_cli.errors import OptionError
from hsvm_cli.train.class_weight import class_weight_vector, parse_class_weight
from hsvm_cli.train.cross_validation import PathCrossValidation
from hsvm_cli.train.liblinear import SOLVERS, train_pairs
from hsvm_cli.train.ovo import cross_validate_ovo, train_ovo

WEIGHTS = {-3: 2.5, 4: 0.3}


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_each_weighted_pair_equals_liblinear_with_w_on_its_rows(solver):
    X, y = _blobs(K=4, labels=[-3, 0, 4, 9])
    m = train_pairs(X, y, C=0.7, solver=solver, seed=5, class_weight=WEIGHTS)
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        rows = np.concatenate([np.flatnonzero(y == la), np.flatnonzero(y == lb)])
        opts = "-s %d -c 0.7 -B 1.0 -q -w1 %r -w-1 %r" % (SOLVERS[solver], WEIGHTS.get(la, 1.0), WEIGHTS.get(lb, 1.0))
        _libc.srand(int(m.training.solver_seeds[p]))
        ref = liblinearutil.train(np.where(y[rows] == la, 1.0, -1.0), X[rows], opts)
        w = np.ctypeslib.as_array(ref.w, shape=(ref.nr_feature + 1,))
        assert _same_bytes(m.W[p], w[:-1].astype(np.float32)), (solver, la, lb)
        assert _same_bytes(m.b[p:p + 1], np.array([w[-1]], dtype=np.float32)), (solver, la, lb)


def test_weights_of_one_give_the_unweighted_classifiers_bit_for_bit():
    X, y = _blobs(K=4, labels=[-3, 0, 4, 9])
    plain = train_pairs(X, y, C=0.7, seed=5)
    ones = train_pairs(X, y, C=0.7, seed=5, class_weight={-3: 1.0, 9: 1.0})
    assert _same_bytes(plain.W, ones.W) and _same_bytes(plain.b, ones.b)
    assert "class_weight" not in plain.params
    assert ones.params["class_weight"] == {"rule": "given", "weights": [[-3, 1.0], [0, 1.0], [4, 1.0], [9, 1.0]]}


def test_balanced_weights_are_n_over_k_times_the_class_count():
    y_index = np.array([0] * 6 + [1] * 2 + [2] * 4)
    w = class_weight_vector("balanced", np.array([5, 7, 9]), y_index)
    assert np.allclose(w, 12 / (3 * np.array([6, 2, 4])))
    m = train_pairs(*_blobs(K=3, per=(4, 9, 15)), class_weight="balanced")
    assert m.params["class_weight"]["rule"] == "balanced"
    assert [c for c, _ in m.params["class_weight"]["weights"]] == m.classes.tolist()


def test_a_heavier_class_is_predicted_for_more_of_its_samples():
    # an overlapping minority class: weighting it up raises its recall
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(0, 1, (300, 5)), rng.normal(0.8, 1, (30, 5))])
    y = np.array([1] * 300 + [2] * 30)
    recall = []
    for cw in (None, "balanced", {2: 20.0}):
        m = train_ovo(X, y, normalize="none", C=1.0, class_weight=cw)
        pred = np.where(X @ m.W[0] + m.b[0] > 0, 1, 2)
        recall.append((pred[y == 2] == 2).mean())
    assert recall[0] < 0.6 and 0.9 < recall[1] <= recall[2]


@pytest.mark.parametrize("spec, message", [
    ({7: 2.0}, "label 7, which the training data does not have"),
    ({1: 0.0}, "positive finite"),
    ({1: float("inf")}, "positive finite"),
    ({1: True}, "positive finite"),
    ({"1": 2.0}, "labels must be integers"),
    ("heavy", "'balanced' or a mapping"),
    ([2.0, 1.0], "'balanced' or a mapping"),
])
def test_invalid_class_weights_are_refused_naming_the_fault(spec, message):
    X, y = _blobs(K=3, labels=[1, 2, 3])
    with pytest.raises(OptionError, match=message):
        train_pairs(X, y, class_weight=spec)


@pytest.mark.parametrize("values, expected", [
    ((), None), (("balanced",), "balanced"), ((" Balanced ",), "balanced"),
    (("1:2", "-1:0.5", "30:1e-3"), {1: 2.0, -1: 0.5, 30: 1e-3}),
])
def test_w_values_parse_as_labels_and_weights(values, expected):
    assert parse_class_weight(list(values)) == expected


@pytest.mark.parametrize("values, message", [
    (("1",), "LIBSVM's -wLABEL WEIGHT is -w LABEL:WEIGHT"),
    (("a:2",), "not an integer"),
    (("1:0",), "positive finite"),
    (("1:nan",), "positive finite"),
    (("1:2", "1:3"), "given twice"),
    (("balanced", "1:2"), "give it alone"),
    (("1:2,3:4",), "one LABEL:WEIGHT per -w"),
    (("1_0:2",), "digits without '_'"),
])
def test_w_values_that_cannot_be_weights_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        parse_class_weight(list(values))


@pytest.mark.parametrize("loss", [2, 1])
@pytest.mark.parametrize("form", ["kernel", "primal", "dense"])
def test_weighted_fold_solutions_match_liblinear_on_the_same_rows(digits_l2, form, loss):  # noqa: F811
    X, y = digits_l2
    cw = {1: 3.0, 2: 0.4, 7: 1.7}
    cv = PathCrossValidation(X, y, n_folds=4, seed=3, eps=1e-6, form=form, loss=loss, class_weight=cw)
    cv.run(0.25)
    cv.run(0.5)     # a warm start along the ray, with a box per label
    folds_sorted = cv.folds[cv.order]
    solver = "l2loss-dual" if loss == 2 else "l1loss-dual"
    for f, p in ((0, 0), (1, 5), (2, 17), (3, 44)):
        w, b = cv.pair_weights(f, p)
        a, c = cv.classes[cv.pair_a[p]], cv.classes[cv.pair_b[p]]
        rows = (folds_sorted != f) & np.isin(cv.classes[cv.y_sorted], [a, c])
        m = train_pairs(cv.Xs[rows], cv.classes[cv.y_sorted[rows]], C=0.5, tol=1e-6, solver=solver, class_weight={
            k: v for k, v in cw.items() if k in (a, c)})
        ref = np.flatnonzero((m.classes[m.pair_a] == a) & (m.classes[m.pair_b] == c))[0]
        if loss == 2:
            assert np.allclose(w, m.W[ref], atol=2e-3) and abs(b - m.b[ref]) < 2e-3, (form, a, c)
        else:
            # LIBLINEAR stops at its 1,000 passes short of the hinge loss's
            # optimum on the weighted pair (1, 2): the path's solution is as
            # good or better in the primal objective
            Xr, yr = cv.Xs[rows], np.where(cv.classes[cv.y_sorted[rows]] == a, 1.0, -1.0)
            cost = 0.5 * np.where(yr > 0, cw.get(int(a), 1.0), cw.get(int(c), 1.0))

            def objective(w, b):
                return 0.5 * (w @ w + b * b) + cost @ np.maximum(0.0, 1.0 - yr * (Xr @ w + b))
            ours, theirs = objective(w, b), objective(m.W[ref].astype(np.float64), float(m.b[ref]))
            assert ours <= theirs * (1 + 1e-6) and np.allclose(w, m.W[ref], atol=2e-2), (form, a, c)


def test_weighted_l1_loss_dual_variables_stay_in_each_labels_box(digits_l2):  # noqa: F811
    X, y = digits_l2
    cw = {1: 4.0, 2: 0.25}
    cv = PathCrossValidation(X, y, n_folds=3, loss=1, eps=1e-6, class_weight=cw)
    for C in (1e-4, 2e-4, 4e-4):
        cv.run(C)
        for f in range(cv.F):
            for p in (0, 1, 9):
                off = cv.alpha_off[f]
                al = cv.alpha[f][off[p]:off[p + 1]]
                a, c = cv.pair_a[p], cv.pair_b[p]
                na = int(cv.class_train_rows[f][a])
                for part, k in ((al[:na], a), (al[na:], c)):
                    bound = C * cw.get(int(cv.classes[k]), 1.0)
                    assert part.min() >= 0 and part.max() <= bound * (1 + 1e-12)


def test_the_search_with_weights_differs_and_is_recorded_in_the_model(digits_l2):  # noqa: F811
    X, y = digits_l2
    plain = cross_validate_ovo(X, y, C=1.0, folds=3, normalize="none")
    weighted = cross_validate_ovo(X, y, C=1.0, folds=3, normalize="none", class_weight={1: 50.0, 2: 0.02})
    assert plain.steps[0].correct != weighted.steps[0].correct
    m = train_ovo(X, y, C="auto", cv_folds=3, class_weight="balanced")
    assert m.params["class_weight"]["rule"] == "balanced" and m.params["cross_validation"]


def test_the_default_grid_starts_lower_by_the_largest_weight(digits_l2):  # noqa: F811
    from hsvm_cli.train.c_search import default_grid
    X, y = digits_l2
    plain, heavy = default_grid(X, y, 5), default_grid(X, y, 5, max_weight=8.0)
    assert heavy[0] == plain[0] / 8 and heavy[-1] == plain[-1]


def test_balanced_weights_under_a_per_class_limit_come_from_the_rows_the_pairs_train_on():
    y_index = np.array([0] * 60 + [1] * 20 + [2] * 5)
    w = class_weight_vector("balanced", np.array([1, 2, 3]), y_index, per_class=10)
    assert np.allclose(w, 25 / (3 * np.array([10, 10, 5])))
    X, y = _blobs(K=3, per=(4, 9, 15))
    m = train_pairs(X, y, class_weight="balanced", per_class=6)
    counts = np.minimum(np.bincount(np.searchsorted(m.classes, y)), 6)
    assert np.allclose([w for _, w in m.params["class_weight"]["weights"]], counts.sum() / (3 * counts))


def test_a_c_that_a_weight_takes_to_zero_or_infinity_is_refused():
    X, y = _blobs(K=3, labels=[1, 2, 3])
    with pytest.raises(OptionError, match="not a cost the solver can use"):
        train_pairs(X, y, C=1e-300, class_weight={1: 1e-300})
    with pytest.raises(OptionError, match="not a cost the solver can use"):
        train_pairs(X, y, C=1e10, class_weight={2: 1e300})
    cv = PathCrossValidation(X, y, n_folds=2, class_weight={2: 1e300})
    with pytest.raises(OptionError, match="not a cost the solver can use"):
        cv.run(1e10)
