"""HashedOvoSVC: scikit-learn's estimator contract, and the same labels as
hsvm's own API on the same model."""
import pickle

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from hsvm_cli import Predictor, hash_model, load_model, load_svmlight, save_model, train_ovo
from hsvm_cli.estimator import HashedOvoSVC

from conftest import DIGITS_TEST, DIGITS_TRAIN, run


@parametrize_with_checks([HashedOvoSVC(), HashedOvoSVC(hash_bits=256, filter_k=2),
                          HashedOvoSVC(first_stage="scores", filter_k=2, rule="dag")])
def test_meets_scikit_learns_estimator_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def digits():
    X, y = load_svmlight(DIGITS_TRAIN)
    Xt, yt = load_svmlight(DIGITS_TEST, n_features=X.shape[1])
    return X, y, Xt, yt


def test_labels_are_those_of_the_library_on_the_same_model_whatever_the_label_type(digits):
    # integer labels are trained on as given (the model train_ovo makes);
    # others by their position among the sorted classes
    X, y, Xt, yt = digits
    names = np.array(["digit-%02d" % v for v in range(11)], dtype=object)
    positions = np.unique(y, return_inverse=True)[1]
    for labels, trained, to_label in ((y, y, lambda v: v), (names[y], positions, lambda v: names[v + 1])):
        model = train_ovo(X, trained, C=2.0, seed=3)
        exact = to_label(Predictor(model).predict(Xt))
        hashed = to_label(Predictor(model, hash_model(model, bits=512, seed=3), bits=256, filter_k=3).predict(Xt))
        est = HashedOvoSVC(C=2.0, random_state=3).fit(X, labels)
        assert np.array_equal(est.model_.W, model.W)
        assert np.array_equal(est.predict(Xt), exact)
        est = HashedOvoSVC(C=2.0, hash_bits=512, bits=256, filter_k=3, random_state=3).fit(X, labels)
        assert np.array_equal(est.predict(Xt), hashed)
        truth = yt if labels is y else names[yt]
        assert est.score(Xt, truth) == (hashed == truth).mean()
    assert list(est.classes_) == sorted(set(names[y]))


def test_whole_number_float_labels_train_the_model_of_their_integers(digits):
    # scikit-learn's load_svmlight_file gives float labels: the model is the
    # one `hsvm train-ovo` makes of the file, the predictions floats of y's classes
    X, y, Xt, yt = digits
    model = train_ovo(X, y, C=2.0, seed=3)
    est = HashedOvoSVC(C=2.0, random_state=3).fit(X, y.astype(np.float64))
    assert np.array_equal(est.model_.W, model.W) and np.array_equal(est.model_.classes, model.classes)
    assert est.classes_.dtype == np.float64
    assert np.array_equal(est.predict(Xt), Predictor(model).predict(Xt).astype(np.float64))


def test_fitted_model_is_saved_for_the_command(digits, tmp_path):
    X, y, Xt, yt = digits
    path = str(tmp_path / "m.hsvm")
    est = HashedOvoSVC(C=2.0).fit(X, y * 10)       # integer labels: the model's own
    save_model(est.model_, path)
    out = run(["predict", "-m", path, DIGITS_TEST, "-q"]).stdout.split()
    assert np.array_equal(np.array(out, dtype=np.int64), est.predict(Xt))
    est = HashedOvoSVC(C=2.0).fit(X, (y * 0.5).astype(str))     # others: positions 0..K-1 in the model
    save_model(est.model_, path)
    assert np.array_equal(load_model(path).classes, np.arange(len(est.classes_)))
    out = run(["predict", "-m", path, DIGITS_TEST, "-q"]).stdout.split()
    assert np.array_equal(est.classes_[np.array(out, dtype=np.int64)], est.predict(Xt))


def test_C_auto_is_chosen_by_cross_validation_and_reported(digits):
    X, y, _, _ = digits
    est = HashedOvoSVC(C="auto", random_state=1).fit(X, y)
    search = train_ovo(X, y, C="auto", seed=1).params["cross_validation"]
    assert est.C_ == search["chosen_C"] and est.cv_results_ == search
    assert est.C == "auto"                          # fit leaves the parameter as given


def test_works_in_pipelines_grid_search_and_cross_val_score(digits):
    X, y, Xt, yt = digits
    pipe = make_pipeline(MaxAbsScaler(), HashedOvoSVC(hash_bits=256))
    grid = GridSearchCV(pipe, {"hashedovosvc__C": [0.5, 4.0], "hashedovosvc__filter_k": [2, 5]}, cv=3)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"hashedovosvc__C", "hashedovosvc__filter_k"}
    assert grid.score(Xt, yt) > 0.9
    scores = cross_val_score(HashedOvoSVC(), X, y, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.9


def test_pickled_estimator_predicts_the_same(digits):
    X, y, Xt, _ = digits
    est = HashedOvoSVC(hash_bits=256, filter_k=3, n_jobs=2).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    assert np.array_equal(copy.predict(Xt), est.predict(Xt))


def test_random_state_seeds_the_projection_and_none_draws_one(digits):
    X, y, Xt, _ = digits
    a = HashedOvoSVC(hash_bits=64, filter_k=1, refine=False, random_state=5).fit(X, y)
    b = HashedOvoSVC(hash_bits=64, filter_k=1, refine=False, random_state=np.random.RandomState(0)).fit(X, y)
    c = HashedOvoSVC(hash_bits=64, filter_k=1, refine=False, random_state=5).fit(X, y)
    assert np.array_equal(a.hash_model_.codes, c.hash_model_.codes)
    assert not np.array_equal(a.hash_model_.codes, b.hash_model_.codes)


@pytest.mark.parametrize("params, message", [
    (dict(filter_k=3), "filter_k needs a first stage"),
    (dict(bits=64), "bits=64 needs hash_bits"),
    (dict(first_stage="votes"), "first_stage='votes' needs hash_bits"),
    (dict(refine=False), "refine=False needs a first stage"),
    (dict(hash_bits=64, refine="false"), "refine must be True or False"),
    (dict(hash_bits=64, refine="dag"), r"refine must be True or False, not 'dag' \(the refine's rule is rule='dag'\)"),
    (dict(hash_bits=2 ** 21), "hash_bits must be a positive multiple of 64 up to 1048576"),
    (dict(rule="max"), "rule must be 'vote' or 'dag'"),
    (dict(bias="x"), "bias must be 'auto' or a finite number"),
    (dict(n_jobs=0), "n_jobs must be"),
    (dict(n_jobs=2.0), "n_jobs must be"),
    (dict(hash_bits=100), "hash_bits must be a positive multiple of 64 up to 1048576, not 100"),
    (dict(hash_bits=True), "hash_bits must be a positive multiple of 64"),
    (dict(hash_bits=256, bits=96), "bits must be a positive multiple of 64 up to 1048576, not 96"),
    (dict(hash_bits=256, bits=512), "bits=512 is more than hash_bits=256"),
    (dict(hash_bits=256, filter_k=0), "filter_k must be a whole number of at least 1, not 0"),
    (dict(hash_bits=256, filter_k=2.5), "filter_k must be a whole number"),
    (dict(hash_bits=256, refine=False, rule="dag"), "refine=False refines nothing: rule='dag'"),
    (dict(normalize="auto", C=2.0), "normalize='auto' is chosen by cross-validation: it needs C='auto' or cv_folds"),
])
def test_bad_parameters_are_value_errors_naming_the_parameter_before_training(digits, params, message,
                                                                               monkeypatch):
    import hsvm_cli.estimator as estimator

    def trained(*args, **kwargs):
        raise AssertionError("trained before the parameters were checked")
    monkeypatch.setattr(estimator, "train_ovo", trained)
    X, y, _, _ = digits
    with pytest.raises(ValueError, match=message):
        HashedOvoSVC(**params).fit(X, y)


def test_negative_n_jobs_count_back_from_all_cpus_and_change_nothing(digits):
    X, y, Xt, _ = digits
    labels = HashedOvoSVC(hash_bits=256, filter_k=3, n_jobs=1).fit(X, y).predict(Xt)
    for jobs in (-1, -2):
        assert np.array_equal(HashedOvoSVC(hash_bits=256, filter_k=3, n_jobs=jobs).fit(X, y).predict(Xt), labels)


def test_rule_dag_is_the_librarys_dag(digits):
    X, y, Xt, _ = digits
    model = train_ovo(X, y, seed=0)
    expected = Predictor(model, hash_model(model, bits=128, seed=0), filter_k=3, rule="dag").predict(Xt)
    assert np.array_equal(HashedOvoSVC(hash_bits=128, filter_k=3, rule="dag").fit(X, y).predict(Xt), expected)


def test_one_class_is_refused_naming_the_label_as_python_prints_it(digits):
    X, y, _, _ = digits
    with pytest.raises(ValueError, match=r"got 1 class \(3\)$"):
        HashedOvoSVC().fit(X[y == 3], y[y == 3])


def test_class_weight_takes_the_labels_of_y_whatever_their_type(digits):
    X, y, _, _ = digits
    names = np.array(["d%d" % v for v in y])
    by_name = HashedOvoSVC(class_weight={"d3": 4.0, "d7": 0.5}).fit(X, names)
    by_int = HashedOvoSVC(class_weight={3: 4.0, 7: 0.5}).fit(X, y)
    # string labels train as their positions in classes_, integers as themselves
    recorded = dict(map(tuple, by_name.model_.params["class_weight"]["weights"]))
    assert recorded == {k: {"d3": 4.0, "d7": 0.5}.get(c, 1.0) for k, c in enumerate(by_name.classes_)}
    recorded = dict(map(tuple, by_int.model_.params["class_weight"]["weights"]))
    assert recorded == {c: {3: 4.0, 7: 0.5}.get(c, 1.0) for c in by_int.classes_}
    assert np.mean(by_name.predict(X) == np.char.add("d", by_int.predict(X).astype(str))) > 0.97
    assert not np.array_equal(by_int.model_.W, HashedOvoSVC().fit(X, y).model_.W)
    assert HashedOvoSVC(class_weight="balanced").fit(X, y).model_.params["class_weight"]["rule"] == "balanced"


@pytest.mark.parametrize("cw, message", [({"d3": 2.0}, "names 'd3', which is not a class of y"),
                                         ({3: 0}, r"class_weight\[3\] must be a positive finite number, not 0"),
                                         ("heavy", "None, 'balanced' or a dict"),
                                         ([1.0, 2.0], "None, 'balanced' or a dict")])
def test_class_weight_that_names_no_class_is_refused_before_training(digits, cw, message):
    X, y, _, _ = digits
    with pytest.raises(ValueError, match=message):
        HashedOvoSVC(class_weight=cw).fit(X, y)


def test_decision_function_is_svcs_ovr_shape_of_the_exact_votes(digits):
    # votes plus squashed summed confidences: its argmax is max-wins' label
    X, y, Xt, _ = digits
    est = HashedOvoSVC(C=1.0).fit(X, y)
    d = est.decision_function(Xt)
    assert d.shape == (Xt.shape[0], est.classes_.shape[0])
    votes = Predictor(est.model_).predict_block(Xt).votes
    assert np.array_equal(np.floor(d + 1.0 / 3.0), votes) and np.abs(d - votes).max() < 1.0 / 3.0
    assert np.array_equal(est.classes_[d.argmax(axis=1)], est.predict(Xt))
    # exact also when predict hashes
    hashed = HashedOvoSVC(C=1.0, hash_bits=256, filter_k=2).fit(X, y)
    assert np.array_equal(hashed.decision_function(Xt), d)


def test_scorers_that_rank_by_the_decision_function_score_it(digits):
    # the README sends users to these; the multi-class roc_auc_ovr needs predict_proba, as with SVC
    X, y, _, _ = digits
    top2 = cross_val_score(HashedOvoSVC(), X, y, cv=3, scoring="top_k_accuracy")
    assert np.isfinite(top2).all() and top2.min() > 0.95
    keep = np.isin(y, [3, 8])
    auc = cross_val_score(HashedOvoSVC(), X[keep], y[keep], cv=3, scoring="roc_auc")
    assert np.isfinite(auc).all() and auc.min() > 0.95


def test_binary_decision_function_is_the_pairs_value_positive_towards_the_second_class(digits):
    X, y, Xt, yt = digits
    keep, keep_t = np.isin(y, [3, 8]), np.isin(yt, [3, 8])
    labels = np.where(y[keep] == 3, "three", "eight")         # classes_: eight, three
    est = HashedOvoSVC(normalize="none").fit(X[keep], labels)
    d = est.decision_function(Xt[keep_t])
    assert d.shape == (int(keep_t.sum()),)
    assert np.array_equal(est.classes_[(d > 0).astype(int)], est.predict(Xt[keep_t]))
    m = est.model_
    # the pair decides its class a when w.x + b > 0; positive here means classes_[1]
    dec = np.asarray(Xt[keep_t] @ m.W[0].astype(np.float64)).ravel() + m.b[0]
    assert np.allclose(dec, d if m.pair_a[0] == 1 else -d, rtol=1e-5, atol=1e-5)


def test_binary_decision_of_exactly_zero_has_the_sign_of_predicts_label():
    # no bias and a blank row: the pair's value is 0, which predict gives to
    # the pair's second class
    X = np.random.default_rng(0).normal(size=(60, 4))
    y = np.where(X[:, 0] > 0, 5, 9)
    est = HashedOvoSVC(bias=-1, normalize="none").fit(X, y)
    blank = np.zeros((2, 4))
    d = est.decision_function(blank)
    assert np.array_equal(est.classes_[(d > 0).astype(int)], est.predict(blank))
    assert np.all(np.abs(d) < 1e-300)
