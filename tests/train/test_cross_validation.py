"""Cross-validation over a warm-started path of C values (train/cross_validation.py,
native/cvpath.c) against LIBLINEAR trained on the same rows and against brute-force
one-vs-one voting over the held-out folds."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import OptionError, SampleError
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import l2_normalize
from hsvm_cli.support.kernels import kernel_id
from hsvm_cli.support.native import lib, ptr
from hsvm_cli.train.cross_validation import PathCrossValidation, stratified_folds
from hsvm_cli.train.liblinear import train_pairs

from conftest import kernel_params


def cross_validation(X, y, *, form=None, **kw):
    """PathCrossValidation with "primal" the fold-by-fold primal form and
    "primal-folds" the fused one (native/cvpath_folds.h)."""
    if form in ("primal", "primal-folds"):
        kw["fused"] = form == "primal-folds"
        form = "primal"
    return PathCrossValidation(X, y, form=form, **kw)


@pytest.fixture(scope="module")
def digits_l2(digits):
    X, y, _, _ = digits
    return l2_normalize(X.astype(np.float64)), y


def test_folds_are_stratified_balanced_and_seeded():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 7, size=503) * 3 - 4
    f = stratified_folds(y, 5, seed=11)
    assert f.dtype == np.int32 and set(f.tolist()) == set(range(5))
    for c in np.unique(y):
        counts = np.bincount(f[y == c], minlength=5)
        assert counts.max() - counts.min() <= 1
    totals = np.bincount(f, minlength=5)
    assert totals.max() - totals.min() <= 1
    assert np.array_equal(f, stratified_folds(y, 5, seed=11))
    assert not np.array_equal(f, stratified_folds(y, 5, seed=12))
    with pytest.raises(OptionError):
        stratified_folds(y, 1)


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_pair_solutions_match_liblinear_on_the_same_rows(digits_l2, form):
    # The same problem LIBLINEAR -s 1 -B 1 solves, on the pair's rows outside
    # the fold: at a tight tolerance both reach its unique optimum.
    X, y = digits_l2
    cv = cross_validation(X, y, n_folds=4, seed=3, eps=1e-6, form=form)
    cv.run(0.5)
    folds_sorted = cv.folds[cv.order]
    for f, p in ((0, 0), (2, 17), (3, 44)):
        w, b = cv.pair_weights(f, p)
        a, c = cv.classes[cv.pair_a[p]], cv.classes[cv.pair_b[p]]
        rows = (folds_sorted != f) & np.isin(cv.classes[cv.y_sorted], [a, c])
        m = train_pairs(cv.Xs[rows], cv.classes[cv.y_sorted[rows]], C=0.5, tol=1e-6)
        ref = np.flatnonzero((m.classes[m.pair_a] == a) & (m.classes[m.pair_b] == c))[0]
        assert np.allclose(w, m.W[ref], atol=1e-3) and abs(b - m.b[ref]) < 1e-3


def test_cross_validated_accuracy_is_brute_force_voting_over_held_out_folds(digits_l2):
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, seed=5, eps=1e-6)
    step = cv.run(2.0)
    fold = cv.folds
    correct = []
    for f in range(3):
        m = train_pairs(X[fold != f], y[fold != f], C=2.0, tol=1e-6)
        correct.append(int((Predictor(m).predict(X[fold == f]) == y[fold == f]).sum()))
    # Two solvers at the same tolerance: a sample may only flip where a
    # decision is within that tolerance of zero.
    assert abs(step.correct - sum(correct)) <= 2
    assert [abs(a - b) <= 2 for a, b in zip(step.fold_correct, correct)] == [True] * 3
    assert step.total == X.shape[0]


def test_kernel_primal_and_dense_forms_agree(digits_l2):
    X, y = digits_l2
    steps = {}
    for form in ("kernel", "primal", "primal-folds", "dense"):
        cv = cross_validation(X, y, n_folds=5, seed=1, eps=1e-5, form=form)
        steps[form] = [cv.run(C).correct for C in (0.1, 1.0, 10.0)]
    for form in ("kernel", "primal-folds", "dense"):
        assert np.abs(np.subtract(steps[form], steps["primal"])).max() <= 2


def test_fused_folds_reach_each_folds_own_solution(digits_l2):
    # Solving a pair's folds together changes only the order of visiting:
    # at a tight tolerance every fold's weights are the fold-by-fold ones.
    X, y = digits_l2
    cvs = [cross_validation(X, y, n_folds=5, seed=3, eps=1e-7, form=form) for form in ("primal", "primal-folds")]
    for C in (0.03, 2.0):
        for cv in cvs:
            cv.run(C)
        for f in range(5):
            for p in (0, 7, 44):
                (w0, b0), (w1, b1) = cvs[0].pair_weights(f, p), cvs[1].pair_weights(f, p)
                assert np.abs(w0 - w1).max() <= 1e-3 * max(1.0, np.abs(w0).max()) and abs(b0 - b1) <= 1e-3


def test_the_shape_chooses_fused_folds_for_the_primal_form(digits_l2):
    X, y = digits_l2
    assert PathCrossValidation(X, y, n_folds=5, form="primal").fused
    assert not PathCrossValidation(X, y, n_folds=9, form="primal").fused       # more folds than lanes
    assert not PathCrossValidation(X, y, n_folds=5, form="dense").fused
    wide = sp.hstack([X, sp.csr_matrix((X.shape[0], 100000))]).tocsr()      # 6 x 100,065 x 64 bytes > 32 MB
    assert not PathCrossValidation(wide, y, n_folds=5, form="primal").fused
    with pytest.raises(OptionError, match="at most 8 folds"):
        PathCrossValidation(X, y, n_folds=9, form="primal", fused=True)
    for form in ("kernel", "dense"):
        with pytest.raises(OptionError, match="the fused form is the primal form's"):
            PathCrossValidation(X, y, n_folds=5, form=form, fused=True)
    with pytest.raises(OptionError, match="fused must be None, True or False"):
        PathCrossValidation(X, y, n_folds=5, form="primal", fused="no")


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_results_do_not_depend_on_the_number_of_threads(digits_l2, form):
    X, y = digits_l2
    runs = []
    for jobs in (1, 3):
        cv = cross_validation(X, y, n_folds=4, seed=2, jobs=jobs, form=form)
        runs.append(([cv.run(C).fold_correct for C in (0.25, 4.0)], [a.copy() for a in cv.alpha]))
    assert runs[0][0] == runs[1][0]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_progress_moves_within_a_fold_as_pairs_finish_and_sums_to_the_folds(digits_l2, form):
    # K = 1,000 holds 499,500 pairs in each fold: a step takes minutes, and a
    # bar moving once per fold (or once per step, folds fused) showed nothing
    X, y = digits_l2
    cv = cross_validation(X, y, n_folds=4, seed=2, jobs=2, form=form)
    for C in (0.25, 4.0):
        parts = []
        cv.run(C, progress=parts.append)
        assert all(p > 0 for p in parts)
        assert sum(1 for p in parts if p < 1) > 4          # fractions of a fold, many of them
        assert sum(parts) == pytest.approx(4.0, abs=1e-9)


def test_a_warm_started_path_reaches_the_cold_solution(digits_l2):
    X, y = digits_l2
    warm = PathCrossValidation(X, y, n_folds=3, seed=4, eps=1e-7)
    for C in (0.01, 0.1, 1.0):
        warm.run(C)
    cold = PathCrossValidation(X, y, n_folds=3, seed=4, eps=1e-7)
    cold.run(1.0)
    for p in (0, 20, 44):
        wa, ba = warm.pair_weights(1, p)
        wc, bc = cold.pair_weights(1, p)
        assert np.allclose(wa, wc, atol=1e-5) and abs(ba - bc) < 1e-5
    # The warm start saves passes at the last C.
    assert warm.steps[-1].passes < cold.steps[-1].passes


def test_l1_loss_keeps_dual_variables_in_their_box(digits_l2):
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, loss=1)
    for C in (0.05, 0.5):
        cv.run(C)
        assert all(a.max() <= C and a.min() >= 0 for a in cv.alpha)
    assert cv.steps[-1].accuracy > 0.9


def test_explicit_folds_hold_out_what_they_say(digits, digits_l2):
    X, y = digits_l2
    _, _, Xt, yt = digits
    A = sp.vstack([X, l2_normalize(Xt.astype(np.float64))]).tocsr()
    folds = np.r_[np.zeros(X.shape[0], np.int32), np.ones(Xt.shape[0], np.int32)]
    cv = PathCrossValidation(A, np.r_[y, yt], folds=folds, eps=1e-5)
    step = cv.run(1.0)
    m = train_pairs(X, y, C=1.0, tol=1e-5)
    test_correct = int((Predictor(m).predict(Xt) == yt).sum())
    # Two solvers stopped at the same tolerance (and LIBLINEAR's pass limit):
    # a few samples near a decision boundary may go either way.
    assert abs(step.fold_correct[1] - test_correct) <= 3
    with pytest.raises(OptionError, match="each fold used"):
        PathCrossValidation(A, np.r_[y, yt], folds=folds * 2)


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense", None])
def test_every_form_refuses_rows_with_an_index_past_the_features(digits_l2, form):
    X, y = digits_l2
    bad = X.tocsr(copy=True)
    bad.indices[5] = bad.shape[1] + 3      # scipy does not check indices it is handed
    with pytest.raises(ValueError, match="index outside"):
        cross_validation(bad, y, n_folds=3, form=form)


@pytest.mark.parametrize("width", [70000, 400000])
@pytest.mark.parametrize("fused", [False, True])
def test_rows_wider_than_16_bit_columns_give_the_same_path(digits_l2, fused, width):
    # Past 65,536 columns the primal form reads 32-bit indices instead of
    # 16-bit ones; the arithmetic is the same, so every step and every
    # held-out vote must be too.  At 400,000 columns the weight blocks are
    # cleared by the pairs' columns instead of whole, and kept between calls.
    X, y = digits_l2
    wide = sp.hstack([X, sp.csr_matrix((X.shape[0], width - X.shape[1]))]).tocsr()
    narrow_cv = PathCrossValidation(X, y, n_folds=3, seed=6, form="primal", fused=fused)
    wide_cv = PathCrossValidation(wide, y, n_folds=3, seed=6, form="primal", fused=fused)
    assert narrow_cv.indices.dtype == np.uint16 and wide_cv.indices.dtype == np.int32
    for C in (0.05, 1.0):
        a, b = narrow_cv.run(C), wide_cv.run(C)
        assert (a.correct, a.passes, a.fold_correct) == (b.correct, b.passes, b.fold_correct)
    assert all(np.array_equal(p, q) for p, q in zip(narrow_cv.alpha, wide_cv.alpha))
    if fused:
        (v0, c0, _), (v1, c1, _) = narrow_cv._all_folds(4.0), wide_cv._all_folds(4.0)
        assert np.array_equal(v0, v1) and np.array_equal(c0, c1)
        return
    for f in range(3):
        nh = int(narrow_cv.block[(f + 1) * narrow_cv.K] - narrow_cv.block[f * narrow_cv.K])
        (v0, c0, _), (v1, c1, _) = narrow_cv._fold(f, 4.0, nh), wide_cv._fold(f, 4.0, nh)
        assert np.array_equal(v0, v1) and np.array_equal(c0.view(np.int64), c1.view(np.int64))


@pytest.mark.parametrize("width", [600, 70000])
def test_fused_votes_come_from_each_pairs_weights_where_classes_own_columns(width):
    # The fused form copies a pair's weights to where the held-out rows are
    # voted on by its two classes' columns: columns of one class only, of
    # both (shared words) and of neither must all end up right.  Twelve
    # classes: blocks of eight pairs (0, 1..8) with one class in common,
    # whose votes are summed in registers, and mixed blocks.
    rng = np.random.default_rng(4)
    K, n = 12, 360
    y = np.repeat(np.arange(K), n // K)
    rows = []
    for c in y:
        own = rng.choice(40, size=5, replace=False) + 40 * c         # the class's own columns
        shared = rng.choice(20, size=3, replace=False) + width - 20   # every class's
        rows.append(np.concatenate([own, shared]))
    indices = np.concatenate(rows)
    X = sp.csr_matrix((rng.random(indices.size) + 0.1, indices, np.arange(0, indices.size + 1, 8)),
                      shape=(n, width))
    X = l2_normalize(X)
    cv = PathCrossValidation(X, y, n_folds=4, seed=2, form="primal", fused=True)
    votes, conf, _ = cv._all_folds(1.0)
    for f in range(cv.F):
        h0, h1 = int(cv.block[f * cv.K]), int(cv.block[(f + 1) * cv.K])
        want, want_conf = np.zeros((h1 - h0, K), np.int32), np.zeros((h1 - h0, K))
        rows = np.arange(h1 - h0)
        for p in range(cv.pair_a.shape[0]):
            w, b = cv.pair_weights(f, p)
            decision = cv.Xs[h0:h1] @ w + b
            np.add.at(want, (rows, np.where(decision > 0, cv.pair_a[p], cv.pair_b[p])), 1)
            want_conf[:, cv.pair_a[p]] += decision
            want_conf[:, cv.pair_b[p]] -= decision
        assert np.array_equal(votes[h0:h1], want)
        assert np.allclose(conf[h0:h1], want_conf, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kernel", kernel_params())
@pytest.mark.parametrize("form", ["primal", "primal-folds", "dense"])
def test_held_out_votes_have_the_same_bits_on_every_code_path(digits_l2, kernel, form, monkeypatch):
    # The primal form's held-out products run eight pairs per instruction on
    # AVX2 / AVX-512, the dense form's products 8 or 4 columns per
    # instruction; each sum keeps the portable order.  45 pairs: whole
    # blocks of eight and a partial one, rows of every length mod 4.
    X, y = digits_l2

    def fold_votes():
        cv = cross_validation(X, y, n_folds=3, seed=7, form=form)
        first = cv.run(0.5)
        if cv.fused:     # every fold's solve and votes in one call; the solutions' bits too
            return [cv._all_folds(2.0), (first.fold_correct, np.concatenate(cv.alpha), first.passes)]
        return [cv._fold(f, 2.0, int(cv.block[(f + 1) * cv.K] - cv.block[f * cv.K])) for f in range(cv.F)]

    monkeypatch.setenv("HSVM_KERNEL", "portable")
    want = fold_votes()
    monkeypatch.setenv("HSVM_KERNEL", kernel)
    got = fold_votes()
    for (v0, c0, p0), (v1, c1, p1) in zip(want, got):
        assert np.array_equal(v0, v1) and np.array_equal(p0, p1)
        assert np.array_equal(np.asarray(c0).view(np.int64), np.asarray(c1).view(np.int64))


def _products(W, X, kernel, blocked, index_dtype):
    out = np.empty((X.shape[0], W.shape[0]), np.float64)
    indptr = X.indptr.astype(np.int64)
    indices = X.indices.astype(index_dtype)
    data = X.data.astype(np.float32)
    rc = lib.hsvm_cv_products(ptr("double *", W), W.shape[0], W.shape[1] - 1, ptr("int64_t *", indptr),
                              ptr("void *", indices), indices.itemsize, ptr("float *", data), 0, X.shape[0],
                              kernel_id(kernel), blocked, ptr("double *", out))
    assert rc == 0
    return out


@pytest.mark.parametrize("kernel", kernel_params())
@pytest.mark.parametrize("index_dtype", [np.uint16, np.int32])
def test_held_out_products_sum_in_one_order_on_every_path(kernel, index_dtype):
    # Each pair's product is four partial sums by non-zero position (t mod 4),
    # then (s0 + s1) + (s2 + s3), in double: pair by pair and eight pairs per
    # instruction, on every code path.  Values spread over 16 decades make
    # any other order change the bits.
    rng = np.random.default_rng(11)
    d, n, n_pairs = 37, 40, 13
    lengths = np.arange(n) % 14
    indptr = np.r_[0, np.cumsum(lengths)]
    indices = np.concatenate([np.sort(rng.choice(d, m, replace=False)) for m in lengths]).astype(np.int32)
    data = (rng.standard_normal(indptr[-1]) * 10.0 ** rng.uniform(-8, 8, indptr[-1])).astype(np.float32)
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d))
    W = rng.standard_normal((n_pairs, d + 1)) * 10.0 ** rng.uniform(-8, 8, (n_pairs, d + 1))
    want = np.empty((n, n_pairs))
    for r in range(n):
        for p in range(n_pairs):
            s = [0.0, 0.0, 0.0, 0.0]
            for t, k in enumerate(range(indptr[r], indptr[r + 1])):
                s[t % 4] += float(W[p, indices[k]]) * float(data[k])
            want[r, p] = (s[0] + s[1]) + (s[2] + s[3])
    for blocked in (0, 1):
        got = _products(W, X, kernel, blocked, index_dtype)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), (kernel, blocked)


@pytest.mark.parametrize("kernel", kernel_params())
def test_dense_products_sum_in_one_order_on_every_path(kernel):
    # 32 partial sums (column j to sum j mod 32), then halved pairwise:
    # s[t] += s[t + 16], + 8, + 4, + 2, + 1.  Terms of one scale that cancel:
    # their rounding errors make any other order change the bits.
    rng = np.random.default_rng(12)
    for dp in (0, 32, 96, 800):
        w = rng.standard_normal(dp)
        x = rng.standard_normal(dp).astype(np.float32)
        s = [0.0] * 32
        for j in range(dp):
            s[j % 32] += float(w[j]) * float(x[j])
        width = 16
        while width:
            for t in range(width):
                s[t] += s[t + width]
            width //= 2
        out = np.zeros(1)
        assert lib.hsvm_cv_dense_dot(ptr("double *", w), ptr("float *", x), dp, kernel_id(kernel),
                                     ptr("double *", out)) == 0
        assert out.view(np.int64)[0] == np.float64(s[0]).view(np.int64), (kernel, dp)


def test_the_primal_iteration_runs_on_dense_rows_from_a_quarter_filled(digits_l2):
    X, y = digits_l2
    # Enough samples per pair that the kernel form is not the cheaper one.
    big = sp.vstack([X] * 8).tocsr()
    ybig = np.tile(y, 8)
    assert big.nnz >= 0.25 * big.shape[0] * big.shape[1]
    assert PathCrossValidation(big, ybig, n_folds=3).form == "dense"
    sparse = big.multiply(sp.random(*big.shape, density=0.2, random_state=3, format="csr") > 0).tocsr()
    sparse.eliminate_zeros()
    assert PathCrossValidation(sparse, ybig, n_folds=3).form == "primal"


def test_the_dense_form_keeps_each_pairs_weights_equal_to_its_dual_sum(digits_l2, monkeypatch):
    # Kept between C values (not rebuilt from alpha), the weights must still
    # be sum_i alpha_i y_i (x_i, bias) after a path; rebuilding them instead
    # (no room to keep them) reaches the same accuracies.
    import hsvm_cli.train.cross_validation as cvmod
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, seed=8, form="dense")
    assert cv.w_kept is not None
    kept = [cv.run(C).correct for C in (0.05, 0.5, 5.0)]
    for f in range(cv.F):
        for p in (0, 21, 44):
            w, b = cv.pair_weights(f, p)
            dp = cv.dense.shape[1]
            assert np.allclose(cv.w_kept[f][p, :cv.d], w, rtol=0, atol=1e-6)
            assert abs(cv.w_kept[f][p, dp] - b) < 1e-9
            assert not cv.w_kept[f][p, cv.d:dp].any() and not cv.w_kept[f][p, dp + 1:].any()
        assert cv.w_kept[f].ctypes.data % 64 == 0
    monkeypatch.setattr(cvmod, "_KEEP_W_BYTES", 0)
    cold = PathCrossValidation(X, y, n_folds=3, seed=8, form="dense")
    assert cold.w_kept is None
    rebuilt = [cold.run(C).correct for C in (0.05, 0.5, 5.0)]
    assert np.abs(np.subtract(kept, rebuilt)).max() <= 2


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_a_restored_point_starts_the_next_c_as_the_point_itself_did(digits_l2, form):
    # The coarse-to-fine search (train/c_search.py) goes back along the path:
    # from a snapshot the next C is the run it would have been from there.
    X, y = digits_l2
    cv = cross_validation(X, y, n_folds=3, seed=5, form=form)
    cv.run(0.05)
    point = cv.snapshot()
    first = cv.run(0.2)
    alpha = [a.copy() for a in cv.alpha]
    cv.run(3.0)
    with pytest.raises(OptionError):
        cv.run(0.2)                 # only upward from the last point
    cv.restore(point)
    again = cv.run(0.2)
    if form == "dense":
        # its kept weights belonged to C = 3 and are rebuilt from the dual
        # variables: the same problem, solved from another rounding of w
        assert abs(again.correct - first.correct) <= 2
        for f in range(cv.F):
            w, b = cv.pair_weights(f, 7)
            assert np.allclose(cv.w_kept[f][7, :cv.d], w, rtol=0, atol=1e-6)
            assert abs(cv.w_kept[f][7, cv.dense.shape[1]] - b) < 1e-9
    else:
        assert (again.fold_correct, again.passes) == (first.fold_correct, first.passes)
        assert all(np.array_equal(a, b) for a, b in zip(cv.alpha, alpha))
    assert cv.state_bytes == sum(a.nbytes for a in cv.alpha) + cv.ray.nbytes


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_the_warm_start_along_the_ray_takes_fewer_passes_to_the_same_solutions(digits_l2, form):
    # Each C starts from the best multiple of the previous solution instead
    # of the solution itself: fewer passes at every C (a tenth fewer along
    # this path at LIBLINEAR's tolerance), and the same optimum.
    X, y = digits_l2
    grid = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
    passes, tight = {}, {}
    for ray in (False, True):
        cv = cross_validation(X, y, n_folds=3, seed=4, form=form, ray=ray)
        passes[ray] = [cv.run(C).passes for C in grid]
        tight[ray] = cross_validation(X, y, n_folds=3, seed=4, eps=1e-5, form=form, ray=ray)
        for C in grid:
            tight[ray].run(C)
    assert passes[True][0] == passes[False][0]          # the cold start is the same
    assert all(a < b for a, b in zip(passes[True][1:], passes[False][1:]))
    assert sum(passes[True]) < 0.95 * sum(passes[False])
    for f, p in ((0, 0), (1, 20), (2, 44)):
        wa, ba = tight[True].pair_weights(f, p)
        wp, bp = tight[False].pair_weights(f, p)
        assert np.allclose(wa, wp, atol=1e-4) and abs(ba - bp) < 1e-4


@pytest.mark.parametrize("form", ["primal", "primal-folds", "dense"])
def test_each_pair_keeps_its_weights_squared_norm_for_the_next_warm_start(digits_l2, form, monkeypatch):
    # The primal forms carry |w|^2 + b^2 of each solution to the next C (the
    # kernel form has it in its gradient); the dense form both with its kept
    # weights and rebuilding them.
    import hsvm_cli.train.cross_validation as cvmod
    X, y = digits_l2
    for keep in (True, False):
        if not keep:
            monkeypatch.setattr(cvmod, "_KEEP_W_BYTES", 0)
        cv = cross_validation(X, y, n_folds=3, seed=8, eps=1e-6, form=form)
        for C in (0.05, 0.5):
            cv.run(C)
            for f, p in ((0, 0), (1, 21), (2, 44)):
                w, b = cv.pair_weights(f, p)
                assert cv.ray[f][p] == pytest.approx(w @ w + b * b, rel=1e-5)
    assert cross_validation(X, y, n_folds=3, form=form, ray=False).ray is None


def test_the_ray_keeps_l1_loss_dual_variables_under_the_new_bound(digits_l2):
    # At a small C every L1-loss variable sits at its bound C: the best
    # multiple would leave the box, and is cut to the new bound.
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, loss=1, eps=1e-6)
    cv.run(1e-4)
    assert all(np.allclose(a, 1e-4) for a in cv.alpha)
    cv.run(2e-4)
    assert all(a.max() <= 2e-4 and a.min() >= 0 for a in cv.alpha)


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_a_class_held_out_whole_is_absent_from_its_folds_votes(form):
    # Class 3's one sample is held out: that fold's problem has no class 3, as
    # svm-train -v's sub-model has none, so its pairs (trained on one class)
    # do not vote and the sample is an error -- 6 of 7, as svm-train -v gives.
    X = sp.csr_matrix(np.array([[1, 0], [1, .1], [.8, 0], [0, 1], [.1, .9], [0, .8], [-1, -1]], dtype=np.float64))
    y = np.array([1, 1, 1, 2, 2, 2, 3])
    cv = cross_validation(X, y, n_folds=3, seed=0, bias=0.0, form=form)
    step = cv.run(1.0)
    assert (step.correct, step.total) == (6, 7)


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_a_fold_with_one_trained_class_predicts_that_class(form):
    # Two classes, one of a single sample: the fold holding it out trains on
    # class 2 alone, so it predicts class 2 for all its samples (no pair votes
    # there; the untrained class must not win the tie): 30 of 31, as svm-train -v.
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(np.vstack([-np.ones((1, 4)), 1.0 + 0.1 * rng.normal(size=(30, 4))]))
    y = np.array([1] + [2] * 30)
    cv = cross_validation(X, y, n_folds=5, seed=0, form=form)
    assert (cv.run(1.0).correct, cv.steps[-1].total) == (30, 31)


@pytest.mark.parametrize("fused", [False, True])
def test_a_solve_stopped_by_the_pass_limit_keeps_no_norm_for_the_ray(digits_l2, fused):
    # Its sum over the last pass mixes weights from before and after steps:
    # the next C starts from alpha itself rather than from a bad multiple.
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, seed=1, eps=1e-12, max_passes=2, form="primal", fused=fused)
    step = cv.run(0.5)
    assert all(not r.any() for r in cv.ray)
    assert step.passes == 2 * 3 * cv.pair_a.shape[0]     # every fold of every pair stopped at the limit
    assert step.capped == 3 * cv.pair_a.shape[0]


@pytest.mark.parametrize("form", ["kernel", "primal", "primal-folds", "dense"])
def test_each_form_counts_the_solves_the_pass_limit_stopped(digits_l2, form):
    X, y = digits_l2
    loose = cross_validation(X, y, n_folds=3, seed=1, max_passes=1000, form=form).run(0.5)
    tight = cross_validation(X, y, n_folds=3, seed=1, eps=1e-9, max_passes=3, form=form).run(0.5)
    assert loose.capped == 0 and 0 < tight.capped <= 3 * 45


def test_samples_too_large_for_a_float32_gram_matrix_take_the_primal_form():
    # raw features of 1e20: their Gram entries (1e40) overflow float32, and
    # the kernel form reported 10% where the data are separable
    # The same problem scaled by s (X s, bias s, C / s^2) takes the same steps
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(np.vstack([rng.normal(0, 1, (6, 20)) + rng.normal(0, 1, 20) for _ in range(4)]))
    y = np.repeat(np.arange(4), 6)
    small = PathCrossValidation(X, y, n_folds=3, bias=1.0, form="primal")
    cv = PathCrossValidation(X * 1e20, y, n_folds=3, bias=1e20)
    assert cv.form != "kernel"
    for C in (0.01, 1.0):
        assert cv.run(C * 1e-40).correct == small.run(C).correct
    with pytest.raises(SampleError, match="do not fit the kernel form"):
        PathCrossValidation(X, y, n_folds=3, bias=1e20, form="kernel")


def test_c_values_must_not_decrease_along_the_path(digits_l2):
    X, y = digits_l2
    cv = PathCrossValidation(X, y, n_folds=3, loss=1)
    cv.run(1.0)
    cv.run(1.0)
    with pytest.raises(OptionError, match="increasing order: 0.5 after 1"):
        cv.run(0.5)


def test_a_step_counts_the_classes_none_of_whose_held_out_samples_is_right(digits_l2):
    # four samples of class 1 beside two classes of ~70: at small C its pairs
    # are decided by the bias and it is wholly wrong; a class of one sample is
    # not counted (nothing of it is in the problem when it is held out)
    X, y = digits_l2
    idx = np.r_[np.where(y == 0)[0], np.where(y == 1)[0][:4], np.where(y == 2)[0], np.where(y == 3)[0][:1]]
    cv = PathCrossValidation(X[idx], y[idx], n_folds=2, seed=0)
    small, large = cv.run(2.0 ** -12), cv.run(16.0)
    assert small.missed == 1 and large.missed == 0 and large.correct > small.correct
