import time

import numpy as np
import pytest
from scipy.optimize import minimize

from hsvm_cli.evaluation.calibration_metrics import nll
from hsvm_cli.proba import estimators as pb


def _sample_labels(rng, P):
    """One class per row drawn from the row's distribution."""
    u = rng.random(P.shape[0])[:, None]
    return np.minimum((np.cumsum(P, axis=1) < u).sum(axis=1), P.shape[1] - 1)


def _pairwise_from(p):
    """r_ij = p_i / (p_i + p_j): pairwise probabilities consistent with p."""
    return p[:, :, None] / (p[:, :, None] + p[:, None, :])


def _random_pairwise(rng, n, k, lo=0.02, hi=0.98):
    """Inconsistent but complementary r: r_ji = 1 - r_ij."""
    upper = np.triu(rng.uniform(lo, hi, size=(n, k, k)), 1)
    return upper + np.triu(1.0 - upper, 1).transpose(0, 2, 1)


def test_softmax_rows_sum_to_one_and_stay_finite_for_huge_scores():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((200, 13)) * 50
    p = pb.softmax(s, 2.5)
    assert np.all(np.abs(p.sum(axis=1) - 1.0) < 1e-12)
    huge = np.array([[1e300, 1e300 - 1e290, -1e300], [1e6, 1e6, 1e6]])
    q = pb.softmax(huge, alpha=1.0)
    assert np.all(np.isfinite(q))
    assert np.allclose(q[0], [1.0, 0.0, 0.0]) and np.allclose(q[1], 1 / 3)
    assert np.allclose(pb.softmax(s, 0.0), 1 / 13)


def test_softmax_rejects_negative_alpha_and_nan_scores():
    with pytest.raises(ValueError):
        pb.softmax(np.zeros((2, 3)), -1.0)
    with pytest.raises(ValueError):
        pb.softmax(np.array([[0.0, np.nan]]), 1.0)


def test_fitted_temperature_lowers_nll_of_over_and_under_confident_scores():
    rng = np.random.default_rng(1)
    s = rng.standard_normal((5000, 8))
    for true_alpha in (0.3, 4.0):  # alpha = 1 is over-, then under-confident
        y = _sample_labels(rng, pb.softmax(s, true_alpha))
        alpha = pb.fit_temperature(s, y)
        assert nll(pb.softmax(s, alpha), y) < nll(pb.softmax(s, 1.0), y) - 0.01
        assert (alpha < 1.0) == (true_alpha < 1.0)


def test_fitted_temperature_recovers_the_generating_alpha():
    rng = np.random.default_rng(2)
    s = rng.standard_normal((20000, 10))
    for true_alpha in (0.5, 3.0):
        y = _sample_labels(rng, pb.softmax(s, true_alpha))
        assert abs(pb.fit_temperature(s, y) / true_alpha - 1.0) < 0.10


def test_fitted_temperature_is_a_stationary_point_of_the_nll():
    rng = np.random.default_rng(3)
    s = rng.standard_normal((3000, 5))
    y = _sample_labels(rng, pb.softmax(s, 1.7))
    a = pb.fit_temperature(s, y)
    f = lambda al: nll(pb.softmax(s, al), y)
    assert f(a) <= f(a * 1.01) and f(a) <= f(a / 1.01)


def test_fit_temperature_ignores_unlabelled_rows():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((500, 6))
    y = _sample_labels(rng, pb.softmax(s, 2.0))
    y_masked = y.copy()
    y_masked[::3] = -1
    keep = y_masked >= 0
    assert pb.fit_temperature(s, y_masked) == pytest.approx(pb.fit_temperature(s[keep], y[keep]), rel=1e-9)


def test_fit_temperature_fits_smoothed_targets_when_every_sample_is_right_with_a_margin():
    # The likelihood then grows without bound with alpha: probabilities of
    # exactly 0 and 1 for everything beyond the validation set.  Platt's
    # smoothed targets (1 - 1/(n + 2) for the label) have a finite optimum.
    s = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.5], [0.2, 0.1, 0.9]])
    y = np.array([0, 1, 2])
    alpha = pb.fit_temperature(s, y)
    assert 0.5 < alpha < 1e3
    eps = 1.0 / 5
    soft = np.full(s.shape, eps / 2)
    soft[np.arange(3), y] = 1 - eps
    f = lambda a: -np.mean(np.sum(soft * np.log(pb.softmax(s, a)), axis=1))
    assert f(alpha) <= f(alpha * 1.001) and f(alpha) <= f(alpha / 1.001)
    p = pb.softmax(s, alpha)[np.arange(3), y]
    assert np.all(p < 1.0) and np.all(p > 0.5)
    assert pb.fit_temperature(s, y, max_alpha=0.5) == 0.5
    # more rows that agree: sharper
    assert pb.fit_temperature(np.tile(s, (20, 1)), np.tile(y, 20)) > alpha
    # a sample wrong: the plain likelihood, whose optimum is finite, even beyond a given cap
    wrong = np.array([[1.0, 0.0]] * 4 + [[0.0, 0.01]])
    assert pb.fit_temperature(wrong, np.zeros(5, dtype=int), max_alpha=3.0) == 3.0


def test_fit_temperature_degenerate_inputs():
    with pytest.raises(ValueError):
        pb.fit_temperature(np.zeros((3, 4)), np.array([-1, -1, -1]))
    with pytest.raises(ValueError):
        pb.fit_temperature(np.zeros((0, 4)), np.zeros(0, dtype=int))
    with pytest.raises(ValueError):
        pb.fit_temperature(np.zeros((2, 4)), np.array([0, 4]))
    assert pb.fit_temperature(np.ones((3, 4)), np.array([0, 1, 2])) == 1.0
    # every sample wrong: no positive alpha helps, the lower end comes back
    s = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert pb.fit_temperature(s, np.array([1, 0])) == pytest.approx(1e-4)


def test_first_stage_scores_are_votes_plus_margins_per_pair():
    votes = np.array([[3, 1, 2, 0]])
    margins = np.array([[0.9, -0.3, 0.2, -0.8]])
    assert np.allclose(pb.first_stage_scores(votes, margins), (votes + margins) / 3)
    with pytest.raises(ValueError):
        pb.first_stage_scores(votes, margins[:, :3])
    with pytest.raises(ValueError):
        pb.first_stage_scores(np.zeros((2, 1)), np.zeros((2, 1)))


def _smoothed_objective(f, t01):
    n_pos = t01.sum()
    n_neg = t01.size - n_pos
    t = np.where(t01 == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def obj(x):
        z = x[0] * f + x[1]
        p = 1 / (1 + np.exp(z))
        return np.logaddexp(0, z).sum() - ((1 - t) * z).sum(), np.array([(f * (t - p)).sum(), (t - p).sum()])

    return obj, np.log((n_neg + 1) / (n_pos + 1))


def _random_pairs(rng, n_pairs, lo=5, hi=40):
    sizes = rng.integers(lo, hi, n_pairs)
    pair = np.repeat(np.arange(n_pairs), sizes)
    target = rng.integers(0, 2, pair.size)
    shift = rng.uniform(0.2, 2.0, n_pairs)[pair]
    noise = rng.uniform(0.5, 2.0, n_pairs)[pair]
    dec = np.where(target == 1, shift, -shift) + noise * rng.standard_normal(pair.size)
    return dec, pair, target


def test_platt_matches_direct_minimisation_of_the_smoothed_objective():
    rng = np.random.default_rng(10)
    dec, pair, target = _random_pairs(rng, 30)
    A, B = pb.fit_platt(dec, pair, target, 30)
    for j in range(30):
        sel = pair == j
        obj, b0 = _smoothed_objective(dec[sel], target[sel])
        res = minimize(obj, np.array([0.0, b0]), jac=True, method="BFGS", options={"gtol": 1e-11})
        assert abs(A[j] - res.x[0]) < 1e-4 and abs(B[j] - res.x[1]) < 1e-4


def test_platt_is_finite_for_perfectly_separated_data():
    dec = np.array([3.0, 2.0, 1.5, -1.0, -2.0, -4.0, 10.0, -10.0])
    target = np.array([1, 1, 1, 0, 0, 0, 1, 0])
    A, B, info = pb.fit_platt(dec, np.zeros(8, dtype=int), target, 1, return_info=True)
    assert np.isfinite(A[0]) and np.isfinite(B[0]) and A[0] < 0
    assert info["not_converged"] == 0 and info["line_search_failed"] == 0
    # the smoothed targets bound how sure the sigmoid may become
    obj, b0 = _smoothed_objective(dec, target)
    res = minimize(obj, np.array([0.0, b0]), jac=True, method="BFGS", options={"gtol": 1e-11})
    assert abs(A[0] - res.x[0]) < 1e-4 and abs(B[0] - res.x[1]) < 1e-4


def test_platt_with_constant_decision_values_predicts_the_mean_target():
    for c in (0.0, 1.7, -300.0):
        dec = np.full(7, c)
        target = np.array([1, 1, 1, 1, 0, 0, 0])
        A, B = pb.fit_platt(dec, np.zeros(7, dtype=int), target, 1)
        assert np.isfinite(A[0]) and np.isfinite(B[0])
        t = np.where(target == 1, 5 / 6, 1 / 5)
        assert pb.platt_proba(c, A[0], B[0]) == pytest.approx(t.mean(), abs=1e-6)


def test_platt_hard_targets_stay_finite_when_separable():
    dec = np.array([2.0, 1.0, -1.0, -2.0])
    A, B = pb.fit_platt(dec, np.zeros(4, dtype=int), np.array([1, 1, 0, 0]), 1, prior_counts=False)
    assert np.isfinite(A[0]) and np.isfinite(B[0]) and A[0] < -5


def test_platt_batched_equals_fitting_each_pair_alone():
    rng = np.random.default_rng(11)
    dec, pair, target = _random_pairs(rng, 40, lo=1, hi=15)
    perm = rng.permutation(pair.size)  # samples need not be grouped by pair
    A, B = pb.fit_platt(dec[perm], pair[perm], target[perm], 40)
    for j in range(40):
        sel = pair == j
        a, b = pb.fit_platt(dec[sel], np.zeros(sel.sum(), dtype=int), target[sel], 1)
        assert A[j] == pytest.approx(a[0], rel=1e-9, abs=1e-12)
        assert B[j] == pytest.approx(b[0], rel=1e-9, abs=1e-12)


def test_platt_pairs_without_samples_get_the_default_and_are_counted():
    rng = np.random.default_rng(12)
    dec, pair, target = _random_pairs(rng, 4)
    pair = pair * 2  # pairs 1, 3, 5, 7 stay empty
    A, B, info = pb.fit_platt(dec, pair, target, 8, return_info=True)
    assert info["empty"] == 4
    pooled_A, pooled_B = pb.fit_platt(dec, np.zeros_like(pair), target, 1)
    assert np.allclose(A[1::2], pooled_A[0], rtol=1e-12) and np.allclose(B[1::2], pooled_B[0], rtol=1e-12)
    A2, B2 = pb.fit_platt(dec, pair, target, 8, default=(-2.0, 0.0))
    assert np.all(A2[1::2] == -2.0) and np.all(B2[1::2] == 0.0)
    assert np.allclose(A2[0::2], A[0::2]) and np.allclose(B2[0::2], B[0::2])
    with pytest.raises(ValueError):
        pb.fit_platt(np.zeros(0), np.zeros(0, dtype=int), np.zeros(0, dtype=int), 3)
    A3, B3 = pb.fit_platt(np.zeros(0), np.zeros(0, dtype=int), np.zeros(0, dtype=int), 3, default=(-1.0, 0.5))
    assert np.all(A3 == -1.0) and np.all(B3 == 0.5)


def test_platt_rejects_bad_input():
    with pytest.raises(ValueError):
        pb.fit_platt(np.zeros(3), np.array([0, 1, 2]), np.array([0, 1, 2]), 3)
    with pytest.raises(ValueError):
        pb.fit_platt(np.zeros(3), np.array([0, 1, 3]), np.array([0, 1, 1]), 3)
    with pytest.raises(ValueError):
        pb.fit_platt(np.zeros(3), np.array([0, 1]), np.array([0, 1, 1]), 3)
    with pytest.raises(ValueError):
        pb.fit_platt(np.zeros(3), np.array([0, 1, 2]), np.array([0, 1, 1]), 3, default="zero")


def test_platt_proba_is_stable_for_extreme_arguments():
    p = pb.platt_proba(np.array([-1e308, -800.0, 0.0, 800.0, 1e308]), -1.0, 0.0)
    assert np.all(np.isfinite(p))
    assert np.allclose(p, [0.0, 0.0, 0.5, 1.0, 1.0])
    assert pb.platt_proba(2.0, -1.0, 0.5) == pytest.approx(1 / (1 + np.exp(-1.5)))


def test_platt_fits_45k_pairs_of_10_samples_quickly():
    rng = np.random.default_rng(13)
    n_pairs = 44850
    pair = np.repeat(np.arange(n_pairs), 10)
    target = rng.integers(0, 2, pair.size)
    dec = np.where(target == 1, 1.0, -1.0) + rng.standard_normal(pair.size)
    t0 = time.perf_counter()
    A, B, info = pb.fit_platt(dec, pair, target, n_pairs, return_info=True)
    elapsed = time.perf_counter() - t0
    assert np.all(np.isfinite(A)) and np.all(np.isfinite(B))
    assert info["not_converged"] == 0 and info["line_search_failed"] == 0
    assert elapsed < 2.0  # ~0.2 s unloaded; slack for a busy machine


def _reference_method2(r, iters=100000, tol=1e-13):
    """Wu, Lin & Weng's fixed-point algorithm for method 2, written plainly:
    start uniform, for t = 1..k set p_t = (-sum_{j != t} Q_tj p_j + p'Qp) / Q_tt
    and renormalise, until (Qp)_t = p'Qp for every t."""
    k = r.shape[0]
    Q = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i == j:
                Q[i, i] = sum(r[s, i] ** 2 for s in range(k) if s != i)
            else:
                Q[i, j] = -r[j, i] * r[i, j]
    p = np.full(k, 1.0 / k)
    for _ in range(iters):
        Qp = Q @ p
        if np.max(np.abs(Qp - p @ Qp)) < tol:
            break
        for t in range(k):
            Qp = Q @ p
            p[t] = (-(Qp[t] - Q[t, t] * p[t]) + p @ Qp) / Q[t, t]
            p /= p.sum()
    return p


def test_coupled_probabilities_sum_to_one_and_lie_in_unit_interval():
    rng = np.random.default_rng(20)
    for k in (2, 3, 7, 24):
        P = pb.couple(_random_pairwise(rng, 300, k))
        assert P.shape == (300, k)
        assert np.all(np.abs(P.sum(axis=1) - 1.0) < 1e-9)
        assert np.all((P >= 0.0) & (P <= 1.0))


def test_coupling_recovers_p_from_consistent_pairwise_probabilities():
    rng = np.random.default_rng(21)
    p = rng.dirichlet(np.ones(9), size=50)
    for method in ("direct", "iterative"):
        assert np.abs(pb.couple(_pairwise_from(p), method=method) - p).max() < 1e-9


def test_coupling_equals_the_reference_fixed_point_algorithm():
    rng = np.random.default_rng(22)
    R = _random_pairwise(rng, 20, 6)
    P = pb.couple(R)
    P_iter = pb.couple(R, method="iterative")
    for i in range(20):
        ref = _reference_method2(R[i])
        assert np.abs(P[i] - ref).max() < 1e-6
        assert np.abs(P_iter[i] - ref).max() < 1e-6


def test_coupling_handles_certain_pairwise_decisions():
    # transitive tournament: class 2 beats all, then 0, then 1
    R = np.zeros((1, 3, 3))
    for w, l in ((2, 0), (2, 1), (0, 1)):
        R[0, w, l], R[0, l, w] = 1.0, 0.0
    for method in ("direct", "iterative"):
        assert np.allclose(pb.couple(R, method=method), [[0.0, 0.0, 1.0]], atol=1e-12)
    # a cycle of certain decisions has no winner
    C = np.zeros((1, 3, 3))
    for w, l in ((0, 1), (1, 2), (2, 0)):
        C[0, w, l], C[0, l, w] = 1.0, 0.0
    for method in ("direct", "iterative"):
        assert np.allclose(pb.couple(C, method=method), 1 / 3, atol=1e-9)
    # mixed: certain and uncertain pairs in one sample, batch of random 0/1/soft
    rng = np.random.default_rng(23)
    M = _random_pairwise(rng, 200, 5)
    hard = np.triu(rng.random((200, 5, 5)) < 0.5, 1)
    bits = np.triu(rng.integers(0, 2, (200, 5, 5)).astype(float), 1)
    upper = np.where(hard, bits, np.triu(M, 1))
    M = upper + np.triu(1.0 - upper, 1).transpose(0, 2, 1)
    P = pb.couple(M)
    assert np.all(np.isfinite(P)) and np.all(P >= 0) and np.all(np.abs(P.sum(axis=1) - 1) < 1e-9)
    assert np.abs(P - pb.couple(M, method="iterative")).max() < 1e-6


def test_coupling_with_a_mask_equals_coupling_the_valid_classes_alone():
    rng = np.random.default_rng(24)
    k = 6
    R = _random_pairwise(rng, 40, k)
    valid = rng.random((40, k)) < 0.6
    valid[:, 0] = True
    R_garbage = R.copy()
    R_garbage[~(valid[:, :, None] & valid[:, None, :])] = np.nan  # never read
    for method in ("direct", "iterative"):
        P = pb.couple(R_garbage, valid=valid, method=method)
        assert np.all(P[~valid] == 0.0)
        assert np.all(np.abs(P.sum(axis=1) - 1.0) < 1e-9)
        for i in range(40):
            idx = np.flatnonzero(valid[i])
            alone = pb.couple(R[i][np.ix_(idx, idx)][None])[0]
            assert np.abs(P[i, idx] - alone).max() < 1e-9
    single = np.zeros((1, 3), dtype=bool)
    single[0, 1] = True
    assert np.array_equal(pb.couple(np.full((1, 3, 3), np.nan), valid=single), [[0.0, 1.0, 0.0]])
    with pytest.raises(ValueError):
        pb.couple(R[:1], valid=np.zeros((1, k), dtype=bool))


def test_coupling_falls_back_to_iterations_when_the_solver_fails(monkeypatch):
    rng = np.random.default_rng(25)
    R = _random_pairwise(rng, 30, 5)
    expected = pb.couple(R, method="iterative")

    def failing_solve(a, b):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(pb.np.linalg, "solve", failing_solve)
    P = pb.couple(R)
    assert np.abs(P - expected).max() < 1e-12


def test_coupling_rejects_bad_input():
    with pytest.raises(ValueError):
        pb.couple(np.full((1, 3, 3), 1.5))
    with pytest.raises(ValueError):
        pb.couple(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError):
        pb.couple(np.full((1, 2, 2), 0.5), method="newton")


def test_combine_sums_to_one_and_keeps_unrefined_first_stage_probabilities():
    rng = np.random.default_rng(30)
    n, K, k = 50, 12, 4
    F = rng.dirichlet(np.ones(K), size=n)
    kept = np.array([rng.choice(K, k, replace=False) for _ in range(n)])
    kept[::5, 3] = -1  # some samples refined fewer classes
    valid = kept >= 0
    S = pb.couple(_random_pairwise(rng, n, k), valid=valid)
    out = pb.combine(F, kept, S)
    assert np.all(np.abs(out.sum(axis=1) - 1.0) < 1e-12)
    for i in range(n):
        ki = kept[i][valid[i]]
        others = np.setdiff1d(np.arange(K), ki)
        assert np.array_equal(out[i, others], F[i, others])
        assert np.allclose(out[i, ki], F[i, ki].sum() * S[i][valid[i]])


def test_combine_rejects_repeated_or_out_of_range_classes():
    F = np.full((1, 4), 0.25)
    S = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError):
        pb.combine(F, np.array([[1, 1]]), S)
    with pytest.raises(ValueError):
        pb.combine(F, np.array([[1, 4]]), S)
    assert np.allclose(pb.combine(F, np.array([[-1, -1]]), S), F)


def test_coupled_pairwise_probabilities_are_kept_off_0_and_1_as_libsvm_keeps_them():
    # A decision far out on a sharp sigmoid saturates to exactly 0 or 1 in
    # double; coupled as it is, a class would get probability exactly 0 and a
    # log loss of infinity where it is the label.  LIBSVM's svm_predict_probability
    # clamps each pairwise probability to [1e-7, 1 - 1e-7].
    r = pb.pairwise_proba(np.array([-1e4, 0.0, 1e4]), -1.0, 0.0)
    assert pb.platt_proba(1e4, -1.0, 0.0) == 1.0 and pb.platt_proba(-1e4, -1.0, 0.0) == 0.0
    assert r.tolist() == [pb.MIN_PAIR_PROBA, 0.5, 1.0 - pb.MIN_PAIR_PROBA]
    R = np.full((1, 3, 3), 0.5)
    R[0, 0, 1:] = pb.pairwise_proba(np.array([1e4, 1e4]), -1.0, 0.0)     # class 0 beats both, surely
    R[0, 1:, 0] = 1.0 - R[0, 0, 1:]
    P = pb.couple(R)
    assert np.all(P > 0) and np.isfinite(nll(P, np.array([1])))


def test_a_kept_mass_shift_moves_mass_between_the_kept_and_the_other_classes_and_zero_changes_nothing():
    rng = np.random.default_rng(3)
    F = rng.dirichlet(np.ones(8), size=50)
    kept = np.array([rng.choice(8, 3, replace=False) for _ in range(50)])
    S = rng.dirichlet(np.ones(3), size=50)
    plain = pb.combine(F, kept, S)
    assert np.array_equal(pb.combine(F, kept, S, 0.0), plain)      # bit for bit
    rows = np.arange(50)[:, None]
    for shift in (-2.0, 1.5):
        P = pb.combine(F, kept, S, shift)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
        M = F[rows, kept].sum(axis=1)
        np.testing.assert_allclose(P[rows, kept].sum(axis=1), pb.shifted_mass(M, shift), rtol=1e-12)
        # within each part the shares are those without the shift
        np.testing.assert_allclose(P[rows, kept] / P[rows, kept].sum(axis=1, keepdims=True),
                                   plain[rows, kept] / plain[rows, kept].sum(axis=1, keepdims=True), rtol=1e-10)


@pytest.mark.parametrize("true_shift", [0.0, 1.5, -1.0])
def test_the_fitted_kept_mass_shift_recovers_the_shift_the_data_follow(true_shift):
    from hsvm_cli.tune import fit_mass_shift
    rng = np.random.default_rng(11)
    M = rng.uniform(0.05, 0.95, 40000)
    kept_true = rng.random(M.shape[0]) < pb.shifted_mass(M, true_shift)
    assert abs(fit_mass_shift(M, kept_true) - true_shift) < 0.1
    # every true class kept: too little said about how often it is not
    assert fit_mass_shift(M[:100], np.ones(100, dtype=bool)) == 0.0


@pytest.mark.parametrize("shift", [-40.0, -3.0, 3.0, 40.0])
def test_a_kept_mass_shift_keeps_rows_summing_to_one_at_the_edges(shift):
    import warnings
    F = np.array([[1 - 3e-15, 1e-15, 2e-15, 0.0],      # kept mass within rounding of 1
                  [0.1, 0.2, 0.3, 0.4],
                  [0.1, 0.2, 0.3, 0.4 - 1e-16],        # every class kept, the sum rounding below 1
                  [0.0, 0.0, 0.5, 0.5]])               # no first-stage mass on the kept classes
    kept = np.array([[0, -1, -1, -1], [3, 0, -1, -1], [0, 1, 2, 3], [0, 1, -1, -1]])
    S = np.where(kept >= 0, 1.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = pb.combine(F, kept, S, shift)
    np.testing.assert_allclose(P.sum(axis=1), F.sum(axis=1), atol=4e-16)
    assert np.array_equal(P[2], pb.combine(F, kept, S)[2])      # every class kept: nothing to move
    assert np.array_equal(P[3], F[3])                             # no kept mass: nothing to shift


def test_too_few_samples_on_either_side_leave_the_kept_mass_as_it_is():
    from hsvm_cli.tune import MASS_SHIFT_MIN_SIDE, fit_mass_shift
    M = np.full(200, 0.3)
    kept = np.zeros(200, dtype=bool)
    kept[:MASS_SHIFT_MIN_SIDE - 1] = True
    assert fit_mass_shift(M, kept) == 0.0
    kept[MASS_SHIFT_MIN_SIDE - 1] = True
    assert fit_mass_shift(M, kept) < 0.0
    assert fit_mass_shift(np.array([1e-12]), np.array([True])) == 0.0


@pytest.mark.parametrize("shape", [(3, 70000), (40, 5000), (1, 40000), (200, 7)])
def test_pairwise_probabilities_in_pieces_are_the_whole_array_s_bits(shape):
    # pieces of _PIECE values through reused buffers: the same operations per value
    rng = np.random.default_rng(7)
    dec = (rng.standard_normal(shape) * 6).astype(np.float32)
    dec[0, :4] = [0.0, -0.0, 80.0, -80.0]
    A = -np.abs(rng.standard_normal(shape[1])) * 3
    B = rng.standard_normal(shape[1])
    want = np.clip(pb.platt_proba(dec, A[None, :], B[None, :]), pb.MIN_PAIR_PROBA, 1 - pb.MIN_PAIR_PROBA)
    assert pb.pairwise_proba(dec, A[None, :], B[None, :]).tobytes() == want.tobytes()
    bad = dec.astype(np.float64)
    bad[-1, -1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pb.pairwise_proba(bad, A[None, :], B[None, :])
