"""One-vs-one LIBLINEAR training (hsvm_cli.train)."""
import ctypes

import numpy as np
import pytest
import scipy.sparse as sp
from liblinear import liblinear as ll
from liblinear import liblinearutil

from hsvm_cli.models.ovo import OvoModel
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.preprocess import l2_normalize
from hsvm_cli.train.liblinear import DEFAULT_TOL, SOLVERS, solver_seeds, train_pairs

from conftest import shared_data_dir

_libc = ctypes.CDLL(None)
_libc.srand.argtypes = [ctypes.c_uint]


def _blobs(K=6, per=(4, 9, 15), d=30, density=0.4, seed=1, labels=None):
    """Sparse, L2-normalised, overlapping Gaussian classes of unequal sizes,
    rows shuffled so that classes interleave in the data."""
    rng = np.random.default_rng(seed)
    labels = np.arange(K) * 3 - 2 if labels is None else np.asarray(labels)
    means = rng.normal(size=(K, d))
    rows, ys = [], []
    for k in range(K):
        n = per[k % len(per)]
        rows.append(means[k] + 1.5 * rng.normal(size=(n, d)))
        ys.append(np.full(n, labels[k]))
    X = np.vstack(rows)
    X[rng.random(X.shape) > density] = 0.0
    y = np.concatenate(ys)
    perm = rng.permutation(X.shape[0])
    return l2_normalize(sp.csr_matrix(X[perm], dtype=np.float64)), y[perm].astype(np.int64)


def _reference_pair(X, y, la, lb, solver, C, srand_seed, tol=None, rows=None, bias=1.0):
    """The same pair trained by LIBLINEAR's own Python API on its rows alone:
    class la's rows, then class lb's, in data order, la as +1; returns w and
    the bias weight (the intercept is bias times it)."""
    if rows is None:
        rows = np.concatenate([np.flatnonzero(y == la), np.flatnonzero(y == lb)])
    yp = np.where(y[rows] == la, 1.0, -1.0)
    opts = "-s %d -c %r -B %r -q" % (SOLVERS[solver], C, bias)
    if tol is not None:
        opts += " -e %r" % tol
    _libc.srand(int(srand_seed))
    m = liblinearutil.train(yp, X[rows], opts)
    assert m.get_labels() == [1, -1]
    w = np.ctypeslib.as_array(m.w, shape=(m.nr_feature + 1,)).copy()
    return w[:-1], w[-1]


def _same_bytes(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _vote(model, X):
    dec = ExactScorer(model).decision(X)
    K = model.n_classes
    votes = np.zeros((X.shape[0], K), dtype=np.int64)
    winner = np.where(dec > 0, model.pair_a[None, :], model.pair_b[None, :])
    for k in range(K):
        votes[:, k] = (winner == k).sum(axis=1)
    return model.classes[np.argmax(votes, axis=1)]


def test_classes_sorted_and_pairs_in_canonical_order():
    X, y = _blobs(K=5)
    m = train_pairs(X, y)
    assert isinstance(m, OvoModel)
    assert m.classes.dtype == np.int64 and list(m.classes) == sorted(set(y.tolist()))
    assert m.pair_a.dtype == np.int32 and m.pair_b.dtype == np.int32
    expected = [(a, b) for a in range(5) for b in range(a + 1, 5)]
    assert list(zip(m.pair_a.tolist(), m.pair_b.tolist())) == expected
    assert m.W.dtype == np.float32 and m.W.shape == (10, X.shape[1])
    assert m.b.dtype == np.float32 and m.b.shape == (10,)
    assert m.bags == 1 and m.training.solver_seconds > 0


def test_params_record_resolved_options():
    X, y = _blobs(K=3)
    m = train_pairs(X, y, C=0.5, solver="l2loss-primal", per_class=7, seed=11)
    p = m.params
    assert p["solver"] == "l2loss-primal" and p["liblinear_solver"] == 2
    assert p["C"] == 0.5 and p["tol"] == DEFAULT_TOL["l2loss-primal"]
    assert p["per_class"] == 7 and p["bags"] == 1 and p["seed"] == 11 and p["bias"] == 1.0
    assert "jobs" not in p


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_default_tol_is_liblinears_default_for_the_solver(solver):
    assert DEFAULT_TOL[solver] == ll.parameter("-s %d -q" % SOLVERS[solver]).eps


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_positive_decision_means_lower_class_index_wins(solver):
    # Class 7 comes first in the data, so LIBLINEAR meets the higher label first:
    # the sign convention must not depend on that order.
    rng = np.random.default_rng(0)
    centres = {7: (0.0, 3.0), 2: (3.0, 0.0), 4: (-3.0, -3.0)}
    X = np.vstack([np.array(c) + 0.3 * rng.normal(size=(10, 2)) for c in centres.values()])
    y = np.repeat(list(centres), 10)
    m = train_pairs(X, y, solver=solver)
    assert list(m.classes) == [2, 4, 7]
    dec = ExactScorer(m).decision(X)
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        assert np.all(dec[y == la, p] > 0), (la, lb)
        assert np.all(dec[y == lb, p] < 0), (la, lb)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_each_pair_equals_liblinear_python_api_on_its_rows(solver):
    X, y = _blobs(K=5, labels=[-3, 0, 4, 9, 100])
    C = 0.7
    m = train_pairs(X, y, C=C, solver=solver, seed=5)
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        w, b = _reference_pair(X, y, la, lb, solver, C, m.training.solver_seeds[p])
        assert _same_bytes(m.W[p], w.astype(np.float32)), (solver, la, lb)
        assert _same_bytes(m.b[p:p + 1], np.array([b], dtype=np.float32)), (solver, la, lb)


def test_bias_value_is_liblinears_minus_B():
    X, y = _blobs(K=3)
    m = train_pairs(X, y, C=0.7, bias=3.5, seed=2)
    assert m.params["bias"] == 3.5
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        w, wb = _reference_pair(X, y, la, lb, "l2loss-dual", 0.7, m.training.solver_seeds[p], bias=3.5)
        assert _same_bytes(m.W[p], w.astype(np.float32))
        assert _same_bytes(m.b[p:p + 1], np.array([wb * 3.5], dtype=np.float32))


def test_explicit_tol_is_passed_to_liblinear():
    X, y = _blobs(K=3)
    m = train_pairs(X, y, tol=1e-4)
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        w, _ = _reference_pair(X, y, la, lb, "l2loss-dual", 1.0, m.training.solver_seeds[p], tol=1e-4)
        assert _same_bytes(m.W[p], w.astype(np.float32))


def test_solver_seeds_helper_gives_train_ovo_seeds():
    X, y = _blobs(K=4)
    m = train_pairs(X, y, bags=2, seed=123)
    seeds = solver_seeds(123, m.classes[m.pair_a], m.classes[m.pair_b], bags=2)
    assert seeds.dtype == np.uint32 and np.array_equal(seeds, m.training.solver_seeds)
    assert len(set(seeds.tolist())) == seeds.shape[0]


def test_dual_solver_depends_on_libc_rand_state():
    # Why every train call is preceded by srand: the dual solvers shuffle with rand().
    X, y = _blobs(K=2, per=(40,), d=50)
    w1, _ = _reference_pair(X, y, y.min(), y.max(), "l2loss-dual", 1.0, 1)
    w2, _ = _reference_pair(X, y, y.min(), y.max(), "l2loss-dual", 1.0, 2)
    assert not np.array_equal(w1, w2)


def test_result_ignores_rand_state_before_the_call():
    X, y = _blobs(K=4)
    _libc.srand(1)
    m1 = train_pairs(X, y)
    _libc.srand(99)
    for _ in range(17):
        _libc.rand()
    m2 = train_pairs(X, y)
    assert _same_bytes(m1.W, m2.W) and _same_bytes(m1.b, m2.b)


def test_dense_input_gives_same_model_as_sparse():
    X, y = _blobs(K=4)
    ms = train_pairs(X, y)
    md = train_pairs(X.toarray(), y)
    assert _same_bytes(ms.W, md.W) and _same_bytes(ms.b, md.b)


def test_unsorted_csr_input_is_not_modified():
    X, y = _blobs(K=3)
    ref = train_pairs(X, y)
    # The same matrix with the entries of every row stored in reverse order.
    rows = [X.indices[X.indptr[i]:X.indptr[i + 1]][::-1] for i in range(X.shape[0])]
    vals = [X.data[X.indptr[i]:X.indptr[i + 1]][::-1] for i in range(X.shape[0])]
    Xu = sp.csr_matrix((np.concatenate(vals), np.concatenate(rows), X.indptr.copy()), shape=X.shape)
    Xu.has_sorted_indices = False
    before = Xu.indices.copy()
    m = train_pairs(Xu, y)
    assert np.array_equal(Xu.indices, before)
    assert _same_bytes(m.W, ref.W)


def test_per_class_limits_examples_of_each_class():
    X, y = _blobs(K=6, per=(4, 9, 15))
    m = train_pairs(X, y, per_class=6)
    sizes = {c: int((y == c).sum()) for c in m.classes}
    for p in range(m.n_pairs):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        assert m.training.counts[p].tolist() == [min(sizes[la], 6), min(sizes[lb], 6)]


def test_per_class_at_least_the_largest_class_trains_on_all_rows():
    X, y = _blobs(K=4, per=(4, 9, 15))
    full = train_pairs(X, y)
    capped = train_pairs(X, y, per_class=15)
    assert _same_bytes(full.W, capped.W) and _same_bytes(full.b, capped.b)


def test_per_class_subsets_depend_on_seed_and_are_reproducible():
    X, y = _blobs(K=4, per=(20,))
    m1 = train_pairs(X, y, per_class=5, seed=1)
    m2 = train_pairs(X, y, per_class=5, seed=1)
    m3 = train_pairs(X, y, per_class=5, seed=2)
    assert _same_bytes(m1.W, m2.W)
    assert not np.array_equal(m1.W, m3.W)


def test_pair_model_does_not_depend_on_other_classes():
    # Seeds and subsets are keyed by the pair's labels, not by class positions.
    X, y = _blobs(K=5, per=(12,))
    m = train_pairs(X, y, per_class=5, bags=2, seed=4)
    keep = np.isin(y, m.classes[[1, 3, 4]])
    sub = train_pairs(X[keep], y[keep], per_class=5, bags=2, seed=4)
    p_full = [p for p in range(m.n_pairs) if (m.pair_a[p], m.pair_b[p]) == (1, 3)][0]
    p_sub = [p for p in range(sub.n_pairs) if (sub.pair_a[p], sub.pair_b[p]) == (0, 1)][0]
    rows_full = slice(2 * p_full, 2 * p_full + 2)
    rows_sub = slice(2 * p_sub, 2 * p_sub + 2)
    assert _same_bytes(m.W[rows_full], sub.W[rows_sub])


def test_bags_1_is_byte_identical_to_default():
    X, y = _blobs(K=5)
    m0 = train_pairs(X, y, per_class=6, seed=3)
    m1 = train_pairs(X, y, per_class=6, seed=3, bags=1)
    assert _same_bytes(m0.W, m1.W) and _same_bytes(m0.b, m1.b)


def test_bags_3_differ_from_each_other_and_are_reproducible():
    X, y = _blobs(K=4, per=(10, 13))
    single = train_pairs(X, y, seed=8)
    m1 = train_pairs(X, y, bags=3, seed=8)
    m2 = train_pairs(X, y, bags=3, seed=8)
    assert m1.W.shape == (3 * m1.n_pairs, X.shape[1]) and m1.b.shape == (3 * m1.n_pairs,)
    assert _same_bytes(m1.W, m2.W) and _same_bytes(m1.b, m2.b)
    for p in range(m1.n_pairs):
        rows = m1.W[3 * p:3 * p + 3]
        assert not np.array_equal(rows[0], rows[1]) and not np.array_equal(rows[1], rows[2])
        assert not np.array_equal(rows[0], single.W[p])


def test_bootstrap_keeps_both_classes_at_their_size():
    X, y = _blobs(K=4, per=(3, 11))
    m = train_pairs(X, y, bags=4, per_class=8)
    sizes = {c: min(int((y == c).sum()), 8) for c in m.classes}
    for j in range(m.n_classifiers):
        p = j // 4
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        assert m.training.counts[j].tolist() == [sizes[la], sizes[lb]]


def test_byte_identical_across_runs_and_jobs():
    X, y = _blobs(K=12, per=(6, 14, 25), d=40)
    kw = dict(per_class=12, bags=2, seed=2024)
    ref = train_pairs(X, y, jobs=1, **kw)
    for jobs in (1, 2, 3):
        m = train_pairs(X, y, jobs=jobs, **kw)
        assert _same_bytes(m.W, ref.W), jobs
        assert _same_bytes(m.b, ref.b), jobs
        assert np.array_equal(m.training.counts, ref.training.counts)
        assert m.params == ref.params
    assert train_pairs(X, y, jobs=3, **kw).training.jobs == 3


def test_worker_tasks_stay_few_for_many_pairs_and_many_for_few():
    from hsvm_cli.train.liblinear import _chunk_pairs
    for P in (1, 2, 45, 1000, 29161, 499500, 1124250, 12497500):
        for workers in (2, 3, 8):
            chunk = _chunk_pairs(P, workers)
            tasks = -(-P // chunk)
            assert chunk >= 1
            # small tasks while they balance the workers (8 or more each) ...
            assert chunk > 64 or tasks >= min(P, 8 * workers)
            # ... and no more than 256 per worker once tasks pass 64 pairs (dispatch outweighed tiny pairs)
            assert chunk <= 64 or tasks <= 256 * workers
    # a large set of pairs spans several tasks of the same result: the byte-identity test covers it
    X, y = _blobs(K=40, per=(3, 4), d=8)
    ref = train_pairs(X, y, jobs=1, seed=3)
    m = train_pairs(X, y, jobs=2, seed=3)
    assert _same_bytes(m.W, ref.W) and _same_bytes(m.b, ref.b)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_parallel_training_equals_liblinear_reference(solver):
    X, y = _blobs(K=6)
    m = train_pairs(X, y, solver=solver, jobs=2, seed=9)
    for p in (0, m.n_pairs // 2, m.n_pairs - 1):
        la, lb = m.classes[m.pair_a[p]], m.classes[m.pair_b[p]]
        w, b = _reference_pair(X, y, la, lb, solver, 1.0, m.training.solver_seeds[p])
        assert _same_bytes(m.W[p], w.astype(np.float32))


def test_progress_bar_goes_to_stderr_only_when_asked(capsys):
    X, y = _blobs(K=4)
    train_pairs(X, y, progress=False)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    train_pairs(X, y, progress=True)
    out = capsys.readouterr()
    assert out.out == "" and "6/6" in out.err


def test_digits_vote_accuracy_close_to_sklearn_one_vs_one():
    data = shared_data_dir() / "digits"
    if not (data / "train.svm.gz").exists():
        pytest.skip("shared data not found at %s" % data)
    from sklearn.datasets import load_svmlight_file
    from sklearn.multiclass import OneVsOneClassifier
    from sklearn.svm import LinearSVC

    Xtr, ytr = load_svmlight_file(str(data / "train.svm.gz"), n_features=64)
    Xte, yte = load_svmlight_file(str(data / "test.svm.gz"), n_features=64)
    Xtr, Xte = l2_normalize(Xtr), l2_normalize(Xte)
    ytr, yte = ytr.astype(np.int64), yte.astype(np.int64)

    m = train_pairs(Xtr, ytr, C=1.0)
    ours = np.mean(_vote(m, Xte) == yte)
    sk = OneVsOneClassifier(LinearSVC(C=1.0, loss="squared_hinge", dual=True, random_state=0))
    theirs = np.mean(sk.fit(Xtr, ytr).predict(Xte) == yte)
    assert ours > 0.85
    assert abs(ours - theirs) <= 0.01, (ours, theirs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(C=0), "C must"),
    (dict(C=-1.0), "C must"),
    (dict(C=float("nan")), "C must"),
    (dict(C="1"), "C must"),
    (dict(solver="l1r-lr"), "solver must"),
    (dict(solver=1), "solver must"),
    (dict(tol=0.0), "tol must"),
    (dict(tol=float("inf")), "tol must"),
    (dict(per_class=0), "per_class must"),
    (dict(per_class=2.5), "per_class must"),
    (dict(per_class=True), "per_class must"),
    (dict(bags=0), "bags must"),
    (dict(bags=1.0), "bags must"),
    (dict(seed=-1), "seed must"),
    (dict(seed=2 ** 64), "seed must"),
    (dict(seed=None), "seed must"),
    (dict(jobs=0), "jobs must"),
    (dict(jobs=True), "jobs must"),
])
def test_invalid_options_raise_value_error(kwargs, message):
    X, y = _blobs(K=3)
    with pytest.raises(ValueError, match=message):
        train_pairs(X, y, **kwargs)


@pytest.mark.parametrize("make, message", [
    (lambda X, y: (X, y[:-1]), "rows but y has"),
    (lambda X, y: (X, np.zeros_like(y)), "at least two classes"),
    (lambda X, y: (X, y + 0.5), "integer labels"),
    (lambda X, y: (X, y.astype(str)), "integer labels"),
    (lambda X, y: (X, y.reshape(-1, 1)), "1-dimensional"),
    (lambda X, y: (X.toarray()[0], y), "2-dimensional"),
    (lambda X, y: (sp.csr_matrix((X.data * np.nan, X.indices, X.indptr), shape=X.shape), y), "NaN"),
])
def test_invalid_data_raise_value_error(make, message):
    X, y = _blobs(K=3)
    with pytest.raises(ValueError, match=message):
        train_pairs(*make(X, y))


def test_float_labels_with_integer_values_are_accepted():
    X, y = _blobs(K=3)
    a = train_pairs(X, y)
    b = train_pairs(X, y.astype(np.float64))
    assert _same_bytes(a.W, b.W) and np.array_equal(a.classes, b.classes)


def test_the_memory_check_counts_the_model_twice_when_workers_hand_it_back(monkeypatch):
    # -j N fills a shared mapping copied into ordinary arrays at the end: the
    # check must foresee both, or a limit between one and two copies fails
    # after the whole training (K = 3,000 had trained for minutes)
    import numpy as np

    import hsvm_cli.train.liblinear as trainer
    seen = []
    monkeypatch.setattr(trainer, "check_allocation", lambda nbytes, what: seen.append((nbytes, what)))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    y = np.repeat([1, 2, 3], 10)
    for jobs in (1, 2):
        train_pairs(X, y, C=1.0, seed=0, jobs=jobs)
    (one, what1), (two, what2) = seen
    model = 3 * 5 * 4
    assert two - one >= model and "held twice as the -j workers hand it back" in what2 and "twice" not in what1


def test_classifiers_stopped_at_liblinears_iteration_limit_are_counted(digits):
    # LIBLINEAR's printer is silenced; its "reaching max number of
    # iterations" is counted per classifier instead, on one process or many.
    X, y, _, _ = digits
    X = l2_normalize(X.astype(np.float64))
    assert train_pairs(X, y, C=1.0).training.not_converged == 0
    tight = [train_pairs(X, y, C=4096.0, solver="l1loss-dual", tol=1e-9, jobs=jobs).training.not_converged
             for jobs in (1, 2)]
    assert tight[0] == tight[1] and 0 < tight[0] <= 45


def test_only_limits_liblinear_does_not_finish_another_way_are_counted():
    # LIBLINEAR 2.4x's -s 1 follows its dual limit with "Switching to use
    # -s 2" and solves again by Newton's method: fashion-mnist's classes 1 and
    # 2 on raw features were counted "not converged" where liblinear-train
    # (1,000 dual passes) converged; the inner CG limit is corrected by the
    # outer iteration.  The printer sees LIBLINEAR's messages one by one or
    # joined.
    from hsvm_cli.support.native import lib

    def counted(*messages):
        before = lib.hsvm_iteration_limits()
        for m in messages:
            lib.hsvm_print_nothing(m.encode())
        return lib.hsvm_iteration_limits() - before

    limit = "\nWARNING: reaching max number of iterations\n"
    assert counted(limit, "Switching to use -s 2\n\n") == 0
    assert counted(limit + "Switching to use -s 2\n\n") == 0
    assert counted(limit, "Using -s 2 may be faster (also see FAQ)\n\n") == 1
    assert counted("WARNING: reaching max number of Newton iterations\n") == 1
    assert counted("WARNING: reaching max number of inner iterations\n") == 0
    assert counted(limit, "optimization finished, #iter = 300\n", "Switching to use -s 2\n") == 1


def test_models_trained_on_several_threads_at_once_are_each_the_single_runs(digits):
    # LIBLINEAR draws its visiting order from the C library's rand(), one
    # state per process: concurrent API calls interleaved their draws
    from concurrent.futures import ThreadPoolExecutor
    X, y, _, _ = digits
    ref = train_pairs(X, y, C=4.0, seed=3)
    with ThreadPoolExecutor(4) as ex:
        models = list(ex.map(lambda _: train_pairs(X, y, C=4.0, seed=3), range(8)))
    assert all(np.array_equal(m.W, ref.W) for m in models)


def test_models_trained_with_workers_on_several_threads_at_once_are_each_the_single_runs(digits):
    # jobs > 1 forks workers that took their job from a module global, which
    # another thread's call overwrote (or reset) before they started: rows of
    # one model trained into the other's, or left zero, without an error
    from concurrent.futures import ThreadPoolExecutor
    X, y, _, _ = digits
    Cs = [1.0, 64.0, 0.25, 8.0]
    refs = {C: train_pairs(X, y, C=C, bags=3, seed=3) for C in Cs}
    with ThreadPoolExecutor(4) as ex:
        for _ in range(3):
            models = list(ex.map(lambda C: (C, train_pairs(X, y, C=C, bags=3, seed=3, jobs=2)), Cs * 2))
            assert all(np.array_equal(m.W, refs[C].W) and np.array_equal(m.b, refs[C].b) for C, m in models)


def test_classes_whose_pairs_outgrow_the_memory_are_refused_before_the_pairs_are_made(monkeypatch):
    # 70,000 classes are 2.4e9 pairs: their class indices alone (plus
    # triu_indices' K x K mask) had grown to gigabytes before the check
    import hsvm_cli.support.memory as memory
    import hsvm_cli.train.cross_validation as cv
    import hsvm_cli.train.liblinear as trainer
    from hsvm_cli.support.memory import TooLargeError
    from hsvm_cli.train.ovo import cross_validate_ovo

    def made(K):
        raise AssertionError("the pairs of %d classes were made before the check" % K)
    monkeypatch.setattr(memory, "available_memory", lambda: 8 << 30)
    monkeypatch.setattr(trainer, "canonical_pairs", made)
    monkeypatch.setattr(cv, "canonical_pairs", made)
    K = 70000
    X = sp.csr_matrix(np.ones((K, 1)))
    y = np.arange(K)
    with pytest.raises(TooLargeError, match="a model of 2449965000 classifiers x 1 features"):
        train_pairs(X, y, C=1.0, seed=0)
    with pytest.raises(TooLargeError, match="the bookkeeping of 2449965000 pairs x 2 folds"):
        cross_validate_ovo(X, y, C=1.0, folds=2)


def test_canonical_pairs_are_triu_indices_as_int32():
    from hsvm_cli.models.pairs import canonical_pairs
    for K in range(0, 40):
        a, b = canonical_pairs(K)
        ea, eb = np.triu_indices(K, k=1)
        assert a.dtype == b.dtype == np.int32 and np.array_equal(a, ea) and np.array_equal(b, eb)


def test_training_without_progress_leaves_no_thread_behind(digits):
    # a disabled tqdm bar still started tqdm's monitor thread, left running in
    # a library caller's process (and the parent of every later fork)
    import threading

    from tqdm import tqdm
    if tqdm.monitor is not None:        # one an earlier test's bar started
        tqdm.monitor.exit()
        tqdm.monitor = None
    X, y, _, _ = digits
    before = set(threading.enumerate())
    for jobs in (1, 2):
        train_pairs(X, y, C=1.0, jobs=jobs)
    assert set(threading.enumerate()) <= before


def test_the_feature_node_pool_lays_rows_end_to_end_with_bias_and_terminator():
    # row i: its non-zeros (1-based indices), the bias node (d + 1), then -1;
    # empty rows, a first and a last row included, and an index array longer
    # than the data it holds (scipy tolerates the tail)
    from hsvm_cli.train.liblinear import _build_pool
    X = sp.csr_matrix(np.array([[0, 0, 0], [1.5, 0, -2], [0, 0, 0], [0, 3, 0], [4, 5, 6], [0, 0, 0]]))
    X.indices = np.concatenate([X.indices, [7, 7]]).astype(X.indices.dtype)
    X.data = np.concatenate([X.data, [9.0, 9.0]])
    pool, addr = _build_pool(X, bias=0.5)
    want = [[(4, 0.5), (-1, 0)], [(1, 1.5), (3, -2), (4, 0.5), (-1, 0)], [(4, 0.5), (-1, 0)],
            [(2, 3), (4, 0.5), (-1, 0)], [(1, 4), (2, 5), (3, 6), (4, 0.5), (-1, 0)], [(4, 0.5), (-1, 0)]]
    flat = [node for row in want for node in row]
    assert pool["index"].tolist() == [i for i, _ in flat] and pool["value"].tolist() == [v for _, v in flat]
    starts = np.cumsum([0] + [len(row) for row in want[:-1]])
    assert (addr - np.uint64(pool.ctypes.data)).tolist() == (starts * pool.dtype.itemsize).tolist()


def test_a_shared_mapping_is_copied_out_whole_slice_by_slice():
    # the workers' shared W handed back in ordinary memory, a few pages at a
    # time (each slice's pages then given back): every value, any size
    from hsvm_cli.train.liblinear import _shared_array, _unshared_copy
    for shape, step in (((1000, 37), 4096), ((3,), 4096), ((0, 5), 4096), ((513, 64), 1 << 20)):
        W = _shared_array(shape, np.float32)
        W[...] = np.arange(W.size, dtype=np.float32).reshape(shape)
        out = _unshared_copy(W, step_bytes=step)
        assert out.shape == shape and out.dtype == np.float32 and not isinstance(out.base, type(W.base))
        assert np.array_equal(out, np.arange(out.size, dtype=np.float32).reshape(shape))
        assert not np.count_nonzero(W)           # the mapping's pages given back: they read as zeros
