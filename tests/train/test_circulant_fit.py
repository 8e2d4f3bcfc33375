"""Fitting circulant hashes (train/circulant_fit.py): the exact circulant SVM
against LIBLINEAR on the explicitly formed rows, CBE's frequency-domain step
against a least-squares oracle, independent SVMs, and the checks of
fit_circulant_hash."""
import ctypes
import math

import numpy as np
import pytest
import scipy.sparse as sp
from liblinear.liblinearutil import parameter, problem, train

from hsvm_cli.hashing.projection import pack_signs
from hsvm_cli.models.circulant_hash import LearnedCirculantHash
from hsvm_cli.train.circulant_fit import (
    circulant_svm_decisions,
    fit_cbe,
    fit_circulant_hash,
    fit_circulant_svm,
    fit_independent_svms,
    linear_signs,
    per_bit_accuracy,
    solve_circulant_svm,
    svm_objectives,
    targets_from_codes,
)

from conftest import BUNDLED


def small_problem(seed=0, N=40, d=12, L=5, density=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, d))
    X[rng.random((N, d)) > density] = 0.0
    Z = np.where(rng.standard_normal((N, L)) + X[:, :L] > 0, 1, -1).astype(np.int8)
    return X, Z


def explicit_rows(X, Z, beta, shifts):
    """The N L rows [P_s x_n ; beta e_l] and labels, formed explicitly."""
    N, d = X.shape
    L = Z.shape[1]
    rows, ys = [], []
    for n in range(N):
        for l in range(L):
            e = np.zeros(L)
            e[l] = beta
            rows.append(np.concatenate([X[n][(np.arange(d) + shifts[l]) % d], e]))
            ys.append(float(Z[n, l]))
    return np.array(rows), np.array(ys)


def liblinear_solution(A, y, C, s, eps=1e-8):
    ctypes.CDLL(None).srand(1)
    m = train(problem(y, sp.csr_matrix(A)), parameter("-s %d -c %r -e %r -q" % (s, C, eps)))
    w = np.ctypeslib.as_array(m.w, shape=(A.shape[1],)).copy()
    return w if m.get_labels()[0] == 1 else -w


def primal(A, y, wfull, C, loss):
    xi = np.maximum(0.0, 1.0 - y * (A @ wfull))
    return 0.5 * wfull @ wfull + C * np.sum(xi if loss == "hinge" else xi * xi)


# --------------------------------------------------------------- the solver

# --------------------------------------------------------------- the solver

@pytest.mark.parametrize("shifts", [None, [0, 3, 6, 9, 11]])
def test_squared_hinge_solution_equals_liblinear_on_the_explicit_rows(shifts):
    X, Z = small_problem()
    L, d = Z.shape[1], X.shape[1]
    sh = np.arange(L) if shifts is None else np.array(shifts)
    C = 0.7
    w, b, alpha, st = solve_circulant_svm(sp.csr_matrix(X), Z, C=C, eps=1e-9, max_iter=100000, seed=3, shifts=shifts)
    assert st["converged"]
    A, y = explicit_rows(X, Z, st["beta"], sh)
    ref = liblinear_solution(A, y, C, 1)
    assert np.allclose(w, ref[:d], atol=1e-6) and np.allclose(b, ref[d:], atol=1e-6)
    P, D = svm_objectives(sp.csr_matrix(X), Z, w, b, alpha, C=C, loss="squared-hinge", beta=st["beta"], shifts=shifts)
    assert P == pytest.approx(primal(A, y, ref, C, "squared-hinge"), rel=1e-9)
    assert P - D < 1e-7 * P


def test_hinge_solution_reaches_the_optimum_liblinear_approaches():
    X, Z = small_problem(1)
    C = 0.5
    w, b, alpha, st = solve_circulant_svm(X, Z, C=C, loss="hinge", eps=1e-8, max_iter=100000, seed=0)
    A, y = explicit_rows(X, Z, st["beta"], np.arange(Z.shape[1]))
    P, D = svm_objectives(X, Z, w, b, alpha, C=C, loss="hinge", beta=st["beta"])
    # the duality gap certifies optimality; LIBLINEAR (capped at 1000 passes) can only be above
    assert P - D < 1e-5 * P
    assert np.all(alpha >= 0) and np.all(alpha <= C + 1e-12)
    ref = liblinear_solution(A, y, C, 3)
    assert P <= primal(A, y, ref, C, "hinge") + 1e-9
    assert P == pytest.approx(primal(A, y, ref, C, "hinge"), rel=2e-3)


def test_joint_problem_is_the_sum_of_the_per_bit_liblinear_problems():
    # sum_l [1/2 (||P_l^T w||^2 + bias_l^2) + C sum_n loss] == L * joint(cost C/L), bias_l = sqrt(L) b'_l
    X, Z = small_problem(2)
    L = Z.shape[1]
    C = 1.3
    rng = np.random.default_rng(0)
    w, bp = rng.standard_normal(X.shape[1]), rng.standard_normal(L)
    beta = math.sqrt(L)
    dec = circulant_svm_decisions(X, w, bp, beta)
    per_bit = 0.0
    for l in range(L):
        wl = w[(np.arange(X.shape[1]) - l) % X.shape[1]]      # row l of circ(w)
        assert np.allclose(X @ wl + beta * bp[l], dec[:, l])
        xi = np.maximum(0.0, 1.0 - Z[:, l] * dec[:, l])
        per_bit += 0.5 * (wl @ wl + (beta * bp[l]) ** 2) + C * np.sum(xi * xi)
    joint, _ = svm_objectives(X, Z, w, bp, np.zeros(Z.size), C=C / L, loss="squared-hinge", beta=beta)
    assert per_bit == pytest.approx(L * joint, rel=1e-12)


def test_solver_is_reproducible_and_seed_only_changes_the_path():
    X, Z = small_problem(3, N=60)
    a = solve_circulant_svm(X, Z, C=0.2, seed=5)
    b = solve_circulant_svm(X, Z, C=0.2, seed=5)
    c = solve_circulant_svm(X, Z, C=0.2, seed=6, eps=1e-9, max_iter=100000)
    d = solve_circulant_svm(X, Z, C=0.2, seed=5, eps=1e-9, max_iter=100000)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[2], b[2])
    assert np.allclose(c[0], d[0], atol=1e-6)


def test_planted_circulant_targets_are_recovered_better_than_by_cbe():
    from hsvm_cli.io.svmlight import load_svmlight
    X, _ = load_svmlight(str(BUNDLED / "omniglot-242" / "train.svm.gz"), n_features=784)
    X = X[:1500]
    rng = np.random.default_rng(0)
    L = 32
    truth = LearnedCirculantHash(rng.standard_normal(784).astype(np.float32),
                                 (0.05 * rng.standard_normal(L)).astype(np.float32))
    Z = truth.signs(X)
    h = fit_circulant_svm(X, Z, C=10.0)
    c = fit_cbe(X, Z, lam=0.0)
    acc_svm = per_bit_accuracy(h.signs(X), Z)[0]
    acc_cbe = per_bit_accuracy(c.signs(X), Z)[0]
    assert acc_svm >= 0.95 and acc_svm > acc_cbe + 0.1, (acc_svm, acc_cbe)
    W, b = fit_independent_svms(X, Z, C=10.0)
    assert per_bit_accuracy(linear_signs(X, W, b), Z)[0] >= acc_svm - 0.03


def test_independent_svms_are_liblinears_per_bit_solutions():
    X, Z = small_problem(5, N=80, d=10, L=3)
    W, b = fit_independent_svms(X, Z, C=0.5, normalize="none", eps=1e-8)
    for l in range(3):
        ref = liblinear_solution(np.hstack([X, np.ones((80, 1))]), Z[:, l].astype(float), 0.5, 1)
        assert np.allclose(W[l], ref[:10], atol=1e-5) and b[l] == pytest.approx(ref[10], abs=1e-5)
    assert np.array_equal(linear_signs(X, W, b, normalize="none"), np.where(X @ W.T + b > 0, 1, -1))


# ---------------------------------------------------------------------- CBE

# ---------------------------------------------------------------------- CBE

def test_cbe_step_without_orthogonality_is_the_least_squares_circulant():
    # lambda = 0: r minimises ||B_pad - (X - mu) circ(r)^T||_F; the oracle
    # solves that linear least-squares problem in r explicitly.
    rng = np.random.default_rng(6)
    N, d, L = 60, 10, 4
    X = rng.standard_normal((N, d)).astype(np.float32)
    Z = np.where(rng.standard_normal((N, L)) > 0, 1, -1).astype(np.int8)
    h = fit_cbe(X, Z, lam=0.0, normalize="none")
    Xc = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    # (R x)_k = sum_m r_m x_{(k - m) mod d}
    A = np.zeros((N * d, d))
    for n in range(N):
        for k in range(d):
            A[n * d + k] = Xc[n, (k - np.arange(d)) % d]
    Bp = np.zeros((N, d))
    Bp[:, :L] = Z
    r, *_ = np.linalg.lstsq(A, Bp.reshape(-1), rcond=None)
    w = r[(-np.arange(d)) % d]
    assert np.allclose(h.w, w, atol=1e-5)


def test_cbe_step_with_orthogonality_minimises_its_objective():
    rng = np.random.default_rng(7)
    N, d, L = 80, 16, 6
    X = rng.standard_normal((N, d)).astype(np.float32)
    Z = np.where(rng.standard_normal((N, L)) + X[:, :L] > 0, 1, -1).astype(np.int8)
    lam = 5.0
    h = fit_cbe(X, Z, lam=lam, normalize="none")
    Xc = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    Bp = np.zeros((N, d))
    Bp[:, :L] = Z

    def objective(w):
        R = np.array([[w[(j - i) % d] for j in range(d)] for i in range(d)])
        return np.sum((Bp - Xc @ R.T) ** 2) + lam * np.sum((R @ R.T - np.eye(d)) ** 2)

    w0 = h.w.astype(np.float64)
    f0 = objective(w0)
    for _ in range(30):
        assert objective(w0 + 1e-3 * rng.standard_normal(d)) >= f0 - 1e-9 * abs(f0)


def test_unsupervised_cbe_runs_its_alternation():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((200, 32)).astype(np.float32)
    h = fit_cbe(X, bits=8, lam=1.0, iterations=3, seed=1)
    assert h.bits == 8 and h.meta["rounds"] == 3
    s = h.signs(X)
    assert 0.2 < (s > 0).mean() < 0.8


# ------------------------------------------------------------- checks

def test_bad_fitting_inputs_are_refused_with_clear_errors():
    X, Z = small_problem(11, N=30, d=8, L=4)
    with pytest.raises(ValueError, match="30"):
        fit_circulant_svm(X, Z[:29])
    with pytest.raises(ValueError, match="features"):
        fit_circulant_svm(X, np.ones((30, 9), np.int8))
    with pytest.raises(ValueError, match=r"\+1/-1"):
        fit_circulant_svm(X, Z * 2)
    with pytest.raises(ValueError, match="the circulant SVM over 30 samples x 4 bits would need .* of memory; "
                                         "100 bytes are available"):
        fit_circulant_svm(X, Z, max_bytes=100)
    with pytest.raises(ValueError, match="30"):
        fit_cbe(X, Z[:10])
    with pytest.raises(ValueError, match="loss"):
        fit_circulant_svm(X, Z, loss="logistic")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_samples_that_are_not_finite_are_named_before_any_other_check(bad):
    # ITQ's SVD failed deep inside numpy, or a short sample blamed --bits
    for n in (200, 50):
        X = np.ones((n, 128))
        X[3, 5] = bad
        with pytest.raises(ValueError, match="X contains NaN or infinite values"):
            fit_circulant_hash(X, bits=64)


def test_targets_from_codes_reads_hsvm_packed_codes():
    rng = np.random.default_rng(12)
    v = rng.standard_normal((9, 128))
    Z = targets_from_codes(pack_signs(v), 100)
    assert np.array_equal(Z, np.where(v[:, :100] > 0, 1, -1))
    with pytest.raises(ValueError):
        targets_from_codes(pack_signs(v), 129)


def test_fit_circulant_hash_checks_before_fitting_and_records_its_targets():
    X, Z = small_problem(14, N=50, d=16, L=8)
    h = fit_circulant_hash(X, bits=8, targets="itq", seed=1)
    assert h.bits == 8 and h.meta["targets"] == "itq" and 0.5 <= h.meta["train_per_bit_accuracy"] <= 1.0
    g = fit_circulant_hash(X, bits=8, targets=Z)
    assert g.meta["targets"] == "codes"
    s = fit_circulant_hash(X, bits=8, targets=Z, rows="spread")
    assert np.array_equal(s.shifts, np.arange(8) * 2) and s.meta["rows"] == "spread"
    # L > d / 2: spread rows are still spread, not the first L (floor(d / L) = 1 made them so)
    from hsvm_cli.train.circulant_fit import spread_shifts
    assert spread_shifts(12, 16).tolist() == [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]
    wide = spread_shifts(256, 320)
    assert np.array_equal(wide[:5], [0, 1, 2, 3, 5]) and np.unique(wide).size == 256
    for kw, msg in ((dict(bits=8, targets=Z[:49]), "targets have 49 samples, the data 50"),
                    (dict(bits=17, targets="itq"), "--bits 17 exceeds the 16 features"),
                    (dict(bits=4, targets=Z), "targets have 8 bits, --bits is 4"),
                    (dict(bits=8, targets="pca"), "targets must be 'itq' or an array of codes, not 'pca'"),
                    (dict(bits=8, targets=Z, rows="last"), "rows must be one of first, spread"),
                    (dict(bits=8, targets="itq", max_bytes=10), "fitting 8 bits over 50 samples of 16 features would "
                                                                "need .* of memory; 10 bytes are available")):
        with pytest.raises(ValueError, match=msg):
            fit_circulant_hash(X, **kw)


def test_itq_needs_as_many_samples_as_bits():
    X, _ = small_problem(15, N=10, d=16, L=1)
    with pytest.raises(ValueError, match="--bits 12 exceeds the 10 samples"):
        fit_circulant_hash(X, bits=12, targets="itq")


def test_memory_estimate_grows_with_the_width_of_the_data():
    from hsvm_cli.train.circulant_fit import fit_memory
    assert fit_memory(100, 2_000_000_000, 64, 1000) > 100 * 2_000_000_000
    assert fit_memory(1000, 784, 64, 100_000) < 20 << 20


@pytest.mark.parametrize("bad", [dict(loss="hinge2"), dict(C=0.0), dict(C=float("inf")), dict(eps=0.0),
                                 dict(max_iter=0)])
def test_a_wrong_solver_option_is_refused_before_itqs_iterations(monkeypatch, bad):
    from hsvm_cli.train import circulant_fit
    # ITQ would run its iterations first and only then meet the solver's check
    monkeypatch.setattr(circulant_fit.ITQ, "fit", classmethod(lambda *a, **k: pytest.fail("ITQ ran")))
    X = np.random.default_rng(0).normal(size=(40, 16))
    with pytest.raises(ValueError, match="loss must be one of|C and eps must be positive"):
        fit_circulant_hash(X, bits=8, **bad)
