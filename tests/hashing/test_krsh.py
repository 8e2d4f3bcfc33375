"""KRSH kernel hashing (hsvm_cli/hashing/krsh.py, models/kernel_hash.py, native/kernels.c, native/normals.c)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import chi2_kernel, linear_kernel, polynomial_kernel, rbf_kernel

from hsvm_cli.errors import DataError, HsvmError, ModelFormatError, ModelMismatchError, OptionError, SampleError
from hsvm_cli.hashing import krsh
from hsvm_cli.hashing.generator import standard_normal
from hsvm_cli.hashing.krsh import KernelHash, auto_gamma, check_codes_meta, fit_kernel_hash, kernel_matrix
from hsvm_cli.models.kernel_hash import load_kernel_hash, save_kernel_hash
from hsvm_cli.support.native import lib

from oracles.generator_ref import standard_normal as standard_normal_ref


@pytest.fixture(scope="module")
def digits32(digits):
    X, y, Xt, yt = digits
    return X.toarray().astype(np.float32), y, Xt.toarray().astype(np.float32), yt


@pytest.fixture(scope="module")
def rbf_hash(digits32):
    X = digits32[0]
    return fit_kernel_hash(X, kernel="rbf", gamma="auto", landmarks=300, bits=1024, seed=3)


def _numpy_kernel(kernel, A, B, gamma, degree=3, coef0=1.0):
    A = A.astype(np.float64)
    B = B.astype(np.float64)
    if kernel == "linear":
        return A @ B.T
    if kernel == "poly":
        return (gamma * (A @ B.T) + coef0) ** degree
    if kernel == "rbf":
        return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    if kernel == "chi2":
        s = A[:, None, :] + B[None, :, :]
        t = (A[:, None, :] - B[None, :, :]) ** 2
        return np.exp(-gamma * np.divide(t, s, out=np.zeros_like(t), where=s > 0).sum(-1))
    return np.minimum(A[:, None, :], B[None, :, :]).sum(-1)


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "chi2", "intersection"])
@pytest.mark.parametrize("exact", [False, True])
def test_kernel_matrix_matches_numpy_formula(digits32, kernel, exact):
    X = digits32[0]
    A, B = X[:40], X[100:130]
    got = kernel_matrix(A, B, kernel=kernel, gamma=0.05, degree=3, coef0=0.5, exact=exact)
    want = _numpy_kernel(kernel, A, B, 0.05, 3, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_kernel_matrix_matches_scikit_learn(digits32):
    X = digits32[0].astype(np.float64)
    A, B = X[:30], X[200:260]
    np.testing.assert_allclose(kernel_matrix(A, B, kernel="rbf", gamma=0.02), rbf_kernel(A, B, gamma=0.02),
                               rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(A, B, kernel="chi2", gamma=0.3), chi2_kernel(A, B, gamma=0.3),
                               rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(A, B, kernel="poly", gamma=0.1, degree=2, coef0=1.0),
                               polynomial_kernel(A, B, degree=2, gamma=0.1, coef0=1.0), rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(A, B, kernel="linear"), linear_kernel(A, B), rtol=1e-12)


def test_sparse_and_dense_inputs_give_the_same_kernel_values(digits32):
    X = digits32[0]
    dense = kernel_matrix(X[:20], X[20:50], kernel="intersection")
    sparse = kernel_matrix(sp.csr_matrix(X[:20]), X[20:50], kernel="intersection")
    np.testing.assert_array_equal(dense, sparse)


def test_exp_is_within_an_ulp_of_libm():
    x = np.concatenate([np.linspace(-745, 709, 20001), np.random.default_rng(0).uniform(-50, 5, 20000),
                        [0.0, -0.0, 1e-300, -1e-300, -708.4, 709.7]])
    got = np.array([lib.hsvm_exp(float(v)) for v in x])
    want = np.exp(x)
    normal = want > 2.3e-308
    rel = np.abs(got[normal] - want[normal]) / want[normal]
    assert rel.max() < 4.5e-16
    assert lib.hsvm_exp(-800.0) == 0.0 and math.isinf(lib.hsvm_exp(710.0))


@pytest.mark.parametrize("seed,stream,count", [(0, 0, 1000), (7, 10, 54321), (2**64 - 1, 10, 3), (5, 2, 1)])
def test_c_normals_equal_the_numpy_definition_bit_for_bit(seed, stream, count):
    a = standard_normal_ref(count, seed=seed, stream=stream)
    b = standard_normal(count, seed=seed, stream=stream)
    assert a.tobytes() == b.tobytes()


def test_auto_gamma_is_the_inverse_median_distance():
    # A scaled simplex: every pair of distinct rows is at squared distance 2 s^2.
    s = 0.75
    X = np.eye(50, dtype=np.float32) * s
    g, rule = auto_gamma(X, "rbf", seed=1)
    assert g == pytest.approx(1.0 / (2 * s * s), rel=1e-15)
    assert "median" in rule
    gc, _ = auto_gamma(X, "chi2", seed=1)          # (s-0)^2/(s+0) twice = 2 s
    assert gc == pytest.approx(1.0 / (2 * s), rel=1e-15)


def test_auto_gamma_depends_on_seed_only(digits32):
    X = digits32[0]
    assert auto_gamma(X, "rbf", seed=4) == auto_gamma(X.copy(), "rbf", seed=4)
    assert auto_gamma(sp.csr_matrix(X), "rbf", seed=4)[0] == auto_gamma(X, "rbf", seed=4)[0]


def test_basis_is_orthonormal_in_feature_space(rbf_hash):
    h = rbf_hash
    Kzz = _numpy_kernel("rbf", h.Z, h.Z, h.gamma)
    Linv = np.linalg.inv(h.L)
    np.testing.assert_allclose(Linv @ Kzz @ Linv.T, np.eye(h.n_landmarks), atol=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "chi2", "intersection", "poly"])
def test_subspace_coordinates_reproduce_the_projected_kernel(digits32, kernel):
    X, _, Xt, _ = digits32
    h = fit_kernel_hash(X, kernel=kernel, landmarks=120, bits=128, seed=2)
    # Landmarks: y(z_i).y(z_j) = k(z_i, z_j) exactly (up to rounding).
    Yz = h.transform(h.Z)
    Kzz = _numpy_kernel(kernel, h.Z, h.Z, h.gamma)
    np.testing.assert_allclose(Yz @ Yz.T, Kzz, atol=1e-9 * np.abs(Kzz).max())
    # Other samples: y(x1).y(x2) = k(Z,x1)^T K_ZZ^-1 k(Z,x2), the kernel of the projections.
    A, B = Xt[:25], Xt[25:60]
    Ka, Kb = _numpy_kernel(kernel, h.Z, A, h.gamma), _numpy_kernel(kernel, h.Z, B, h.gamma)
    want = Ka.T @ np.linalg.solve(Kzz, Kb)
    np.testing.assert_allclose(h.transform(A) @ h.transform(B).T, want, atol=1e-7 * np.abs(want).max())


def test_candidates_with_no_new_direction_are_discarded():
    rng = np.random.default_rng(0)
    base = rng.random((5, 12)).astype(np.float32)
    X = np.vstack([base, base, base])                 # 15 rows, 5 distinct
    h = fit_kernel_hash(X, kernel="linear", landmarks=10, bits=64, seed=0)
    assert h.n_landmarks == 5
    assert h.info["landmarks_kept"] == 5 and h.info["candidates_discarded"] == 10
    assert h.info["candidates_examined"] == 15


def test_fit_is_the_same_for_any_candidate_block(digits32):
    X = digits32[0]
    hs = [fit_kernel_hash(X, kernel="rbf", gamma=0.05, landmarks=150, bits=64, seed=9, block=b) for b in (1, 13, 256)]
    for h in hs[1:]:
        assert h.Z.tobytes() == hs[0].Z.tobytes()
        assert h.L.tobytes() == hs[0].L.tobytes()
        assert h.landmark_rows.tolist() == hs[0].landmark_rows.tolist()


def test_hamming_estimate_of_the_subspace_angle_is_unbiased(rbf_hash, digits32):
    # E[d_H/k] = theta'/pi over the projection: for fixed pairs, average over
    # independent projection seeds and compare with the binomial spread.
    h0 = rbf_hash
    Xt = digits32[2]
    rng = np.random.default_rng(1)
    a = rng.integers(0, Xt.shape[0], 40)
    b = (a + 1 + rng.integers(0, Xt.shape[0] - 1, 40)) % Xt.shape[0]
    Ya, Yb = h0.transform(Xt[a]), h0.transform(Xt[b])
    cos = np.clip(np.einsum("ij,ij->i", Ya, Yb) / np.linalg.norm(Ya, axis=1) / np.linalg.norm(Yb, axis=1), -1, 1)
    p = np.arccos(cos) / np.pi
    k, seeds = 256, 40
    dh = np.zeros(len(p))
    for s in range(seeds):
        h = KernelHash(kernel="rbf", gamma=h0.gamma, degree=3, coef0=1.0, Z=h0.Z, L=h0.L, bits=k, seed=100 + s,
                       tol=h0.tol)
        dh += np.unpackbits((h.codes_from_y(Ya) ^ h.codes_from_y(Yb)).view(np.uint8), axis=1).sum(1) / k
    dh /= seeds
    z = (dh - p) / np.sqrt(p * (1 - p) / (k * seeds))
    assert abs(z.mean()) < 4 / np.sqrt(len(p))
    assert 0.6 < z.std() < 1.5


def test_fast_code_bits_equal_the_exact_definition(rbf_hash, digits32):
    h = rbf_hash
    Y = h.transform(digits32[2][:60])
    R = h.projection().astype(np.float64)
    # Rows whose projection onto r_0 .. r_3 is (nearly) zero land in the band.
    Yn = Y[:8].copy()
    for j in range(4):
        r = R[j]
        Yn[2 * j:2 * j + 2] -= np.outer(Yn[2 * j:2 * j + 2] @ r / (r @ r), r)
    Y = np.vstack([Y, Yn, np.zeros((1, Y.shape[1]))])
    h.recomputed = 0
    fast = h.codes_from_y(Y)
    assert h.recomputed >= 8
    assert fast.tobytes() == h.codes_reference(Y).tobytes()
    assert not fast[-1].any()                      # y = 0: every projection is 0, every bit clear


def test_codes_prefix_and_seed(digits32):
    X, _, Xt, _ = digits32
    h1 = fit_kernel_hash(X, kernel="rbf", landmarks=100, bits=256, seed=5)
    h2 = fit_kernel_hash(X, kernel="rbf", landmarks=100, bits=256, seed=5)
    h3 = fit_kernel_hash(X, kernel="rbf", landmarks=100, bits=256, seed=6)
    c1 = h1.codes(Xt[:50])
    assert c1.shape == (50, 4) and c1.dtype == np.uint64
    assert c1.tobytes() == h2.codes(Xt[:50]).tobytes()
    assert h1.content_sha256() == h2.content_sha256() != h3.content_sha256()
    assert (c1 != h3.codes(Xt[:50])).any()
    assert h1.codes(Xt[:50], 128).tobytes() == np.ascontiguousarray(c1[:, :2]).tobytes()
    assert h1.codes(Xt[:50], chunk_rows=7).tobytes() == c1.tobytes()


def test_save_and_load_round_trip(tmp_path, rbf_hash, digits32):
    path = tmp_path / "d.khm"
    save_kernel_hash(rbf_hash, path)
    g = load_kernel_hash(path)
    assert g.content_sha256() == rbf_hash.content_sha256()
    assert g.Z.tobytes() == rbf_hash.Z.tobytes() and g.L.tobytes() == rbf_hash.L.tobytes()
    assert (g.kernel, g.gamma, g.bits, g.seed, g.tol) == ("rbf", rbf_hash.gamma, 1024, 3, rbf_hash.tol)
    assert g.info["gamma_rule"].startswith("1 / median")
    Xt = digits32[2][:30]
    assert g.codes(Xt).tobytes() == rbf_hash.codes(Xt).tobytes()
    # Saving is deterministic: same bytes twice.
    path2 = tmp_path / "e.khm"
    save_kernel_hash(g, path2)
    assert path.read_bytes() == path2.read_bytes()


def _rewrite(path, out, *, arrays=None, meta=None, kind="hsvm-kernel-hash"):
    from hsvm_cli.io.container import read_container, write_container
    c = read_container(path, kind="hsvm-kernel-hash", versions={1})
    a = {k: np.array(v) for k, v in c.arrays.items()}
    m = dict(c.meta)
    a.update(arrays or {})
    m.update(meta or {})
    write_container(out, a, kind=kind, version=1, meta=m)
    return out


def test_load_refuses_inconsistent_files(tmp_path, rbf_hash):
    path = tmp_path / "ok.khm"
    save_kernel_hash(rbf_hash, path)
    Z = np.array(rbf_hash.Z)
    Z[0, 0] = np.nan
    cases = {
        "digest": dict(meta={"gamma": rbf_hash.gamma * 2}),
        "gamma": dict(meta={"gamma": -1.0}),
        "kernel": dict(meta={"kernel": "sigmoid"}),
        "bits": dict(meta={"bits": 100}),
        "shape": dict(arrays={"landmark_diag": np.ones(3)}),
        "nan": dict(arrays={"landmarks": Z}),
        "meta": dict(meta={"tol": None}),
        # wrong JSON types: each a ModelFormatError naming the key, never a
        # TypeError from the code that would use the value
        "info-int": dict(meta={"info": -1}),
        "info-str": dict(meta={"info": "x"}),
        "kernel-list": dict(meta={"kernel": []}),
        "kernel-dict": dict(meta={"kernel": {}}),
        "seed-float": dict(meta={"seed": 0.5}),
        "tol-str": dict(meta={"tol": "0.1"}),
        "tol-one": dict(meta={"tol": 1.0}),
        "coef0-bool": dict(meta={"coef0": True}),
        "degree-bool": dict(meta={"degree": True}),
        "bits-float": dict(meta={"bits": 1024.0}),
        "landmarks-huge": dict(meta={"landmarks": 1 << 40}),
        "projection-kind": dict(meta={"projection_kind": ["circulant"]}),
    }
    for name, kw in cases.items():
        bad = _rewrite(path, tmp_path / (name + ".khm"), **kw)
        with pytest.raises(ModelFormatError) as info:
            load_kernel_hash(bad)
        assert str(bad) in str(info.value), name
    with pytest.raises(ModelFormatError):
        load_kernel_hash(_rewrite(path, tmp_path / "kind.khm", kind="hsvm-codes"))
    data = path.read_bytes()
    (tmp_path / "trunc.khm").write_bytes(data[:-8])
    with pytest.raises(ModelFormatError):
        load_kernel_hash(tmp_path / "trunc.khm")


def test_codes_from_another_kernel_hash_are_refused(digits32, rbf_hash):
    other = fit_kernel_hash(digits32[0], kernel="rbf", landmarks=300, bits=1024, seed=4)
    check_codes_meta(rbf_hash, rbf_hash.codes_meta(512), bits=512)
    with pytest.raises(ModelMismatchError):
        check_codes_meta(rbf_hash, other.codes_meta())
    with pytest.raises(ModelMismatchError):
        check_codes_meta(rbf_hash, {"bits": 1024, "generator": "splitmix64-polar-v1"})
    with pytest.raises(ModelMismatchError):
        check_codes_meta(rbf_hash, rbf_hash.codes_meta(512), bits=1024)


def test_bad_arguments_are_refused(digits32):
    X = digits32[0]
    with pytest.raises(ValueError, match="unknown kernel"):
        fit_kernel_hash(X, kernel="sigmoid", landmarks=10, bits=64)
    with pytest.raises(ValueError, match="exceed"):
        fit_kernel_hash(X[:20], kernel="rbf", landmarks=21, bits=64)
    with pytest.raises(ValueError, match="multiple of 64"):
        fit_kernel_hash(X, kernel="rbf", landmarks=10, bits=100)
    with pytest.raises(ValueError, match="no gamma"):
        fit_kernel_hash(X, kernel="linear", gamma=0.5, landmarks=10, bits=64)
    with pytest.raises(ValueError, match="gamma"):
        fit_kernel_hash(X, kernel="rbf", gamma=-1.0, landmarks=10, bits=64)
    neg = X[:30].copy()
    neg[17, 4] = -0.5
    for kernel in ("chi2", "intersection"):
        with pytest.raises(ValueError, match=r"X\[17, 4\] is -0.5"):
            fit_kernel_hash(neg, kernel=kernel, landmarks=30, bits=64)
    h = fit_kernel_hash(X, kernel="chi2", landmarks=10, bits=64)
    with pytest.raises(krsh.NegativeFeatureError, match=r"X\[17, 4\] is -0.5") as err:
        h.codes(sp.csr_matrix(neg))
    assert (err.value.row, err.value.feature, err.value.value) == (17, 5, -0.5)
    with pytest.raises(krsh.NegativeFeatureError, match=r"X\[17, 4\] is -0.5"):
        h.codes(neg, chunk_rows=4)                 # rows counted across chunks
    with pytest.raises(krsh.NegativeFeatureError, match=r"X\[17, 4\] is -0.5"):
        h.transform(neg, chunk_rows=5)
    assert krsh.first_negative(sp.csr_matrix(neg)) == (17, 4)
    with pytest.raises(ValueError, match="features"):
        h.codes(np.zeros((2, X.shape[1] + 1), np.float32))
    with pytest.raises(ValueError, match="multiple of 64"):
        h.codes(X[:2], bits=32)


def test_narrower_inputs_are_zero_padded(digits32):
    X = digits32[0]
    h = fit_kernel_hash(X, kernel="rbf", landmarks=50, bits=64, seed=0)
    Xs = sp.csr_matrix(X[:10])
    narrow = sp.csr_matrix(Xs[:, :60])
    padded = X[:10].copy()
    padded[:, 60:] = 0
    assert h.codes(narrow).tobytes() == h.codes(padded).tobytes()


def test_kernel_hash_object_from_parts_matches_fit(rbf_hash):
    h = KernelHash(kernel="rbf", gamma=rbf_hash.gamma, degree=3, coef0=1.0, Z=rbf_hash.Z, L=rbf_hash.L,
                   bits=1024, seed=3, tol=rbf_hash.tol)
    assert h.content_sha256() == rbf_hash.content_sha256()


def test_library_refusals_are_hsvm_errors_and_still_value_errors(digits32):
    # the README's promise for the Python API: every refusal an HsvmError (exit
    # status and all), a ValueError as before
    X = digits32[0][:40]
    for kw, kind in ((dict(landmarks=500, bits=64), OptionError), (dict(landmarks=8, bits=100), OptionError),
                     (dict(landmarks=8, bits=64, gamma=-1.0), OptionError),
                     (dict(landmarks=8, bits=64, kernel="poly", gamma=1.0, degree=0), OptionError)):
        with pytest.raises(kind) as err:
            fit_kernel_hash(X, **{"kernel": "rbf", **kw})
        assert isinstance(err.value, HsvmError) and isinstance(err.value, ValueError)
    h = fit_kernel_hash(X, kernel="rbf", landmarks=8, bits=64)
    with pytest.raises(SampleError, match="samples have 70 features, the kernel hash was fitted on 64"):
        h.codes(np.zeros((2, 70), np.float32))
    with pytest.raises(DataError, match="needs at least two training rows"):
        auto_gamma(X[:1], "rbf")


def test_a_row_whose_subspace_coordinates_overflow_is_named_by_its_index_in_x():
    # the row had been counted from the start of codes()' internal chunk of 1024
    rng = np.random.default_rng(3)
    X = rng.random((200, 6)).astype(np.float32)
    h = fit_kernel_hash(X, kernel="poly", degree=3, gamma=1.0, landmarks=20, bits=64)
    Y = np.tile(X, (8, 1))[:1600]
    Y[1500] = 1e30
    with pytest.raises(krsh.SubspaceOverflowError, match=r"^row 1500: kernel subspace coordinates beyond float32") \
            as err:
        h.codes(Y)
    assert err.value.row == 1500


def test_the_linear_kernels_range_check_squares_float32_sparse_rows_in_float64():
    X = sp.csr_matrix(np.array([[3e38, 3e38], [1.0, 2.0], [2.0, 1.0]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"\|x\|\^2 = 1\.8e\+77"):
        fit_kernel_hash(X, kernel="linear", landmarks=2, bits=64)
