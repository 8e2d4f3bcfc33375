import numpy as np
import pytest

from hsvm_cli.hashing.generator import standard_normal
from hsvm_cli.hashing.projection import pack_signs, projection_matrix
from hsvm_cli.support.kernels import available_kernels

from oracles.generator_ref import standard_normal as standard_normal_ref


def test_gaussian_stream_is_pinned_by_its_own_code():
    # These values pin the generator: a change here changes every hash model's
    # projection and must come with a new generator name.
    g = standard_normal(4, seed=1)
    assert g.tolist() == standard_normal(4, seed=1).tolist()
    np.testing.assert_allclose(g, [-0.46300023, -0.66207632, -2.00472946, -0.56719959], atol=1e-8)


def test_gaussian_stream_prefixes_agree_and_moments_are_normal():
    long = standard_normal(200_000, seed=7)
    assert np.array_equal(standard_normal(1001, seed=7), long[:1001])
    assert abs(long.mean()) < 0.01 and abs(long.std() - 1) < 0.01
    assert abs(np.mean(long ** 4) - 3) < 0.05
    assert not np.array_equal(standard_normal(10, seed=8), long[:10])


@pytest.mark.parametrize("count", [1, 2, 1999, 2000, 2001, 7777])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_stream_filled_in_spans_on_threads_is_the_one_thread_stream(monkeypatch, count, dtype):
    from hsvm_cli.hashing import generator
    want = standard_normal(count, seed=11, stream=3, dtype=dtype, threads=1)
    # tiny spans: many of them, the last kept pair cut after its first value
    monkeypatch.setattr(generator, "PARALLEL_VALUES", 1)
    monkeypatch.setattr(generator, "SPAN_PAIRS", 97)
    for threads in (2, 3):
        got = standard_normal(count, seed=11, stream=3, dtype=dtype, threads=threads)
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), threads


@pytest.mark.parametrize("kernel", available_kernels())
def test_the_stream_is_the_numpy_definitions_on_every_kernel_path(monkeypatch, kernel):
    # The C stream takes its pairs in batches of 256 and, on AVX2, computes
    # the kept pairs' factors four at a time: counts around the batches and
    # the vector tails, spans of 97 pairs cut anywhere, every value's bits.
    from hsvm_cli.hashing import generator
    monkeypatch.setenv("HSVM_KERNEL", kernel)
    want = standard_normal_ref(3000, seed=2**63 + 5, stream=4)
    for count in (1, 2, 3, 5, 399, 400, 401, 402, 1003, 3000):
        got = standard_normal(count, seed=2**63 + 5, stream=4, threads=1)
        assert got.tobytes() == want[:count].tobytes(), count
    assert standard_normal(3000, seed=2**63 + 5, stream=4, dtype=np.float32, threads=1).tobytes() == \
        want.astype(np.float32).tobytes()
    monkeypatch.setattr(generator, "PARALLEL_VALUES", 1)
    monkeypatch.setattr(generator, "SPAN_PAIRS", 97)
    assert standard_normal(3000, seed=2**63 + 5, stream=4, threads=2).tobytes() == want.tobytes()


def test_projection_prefix_rows_are_the_shorter_projection():
    assert np.array_equal(projection_matrix(128, 5, seed=3)[:64], projection_matrix(64, 5, seed=3))


def test_pack_signs_bit_layout_is_little_endian_words():
    v = -np.ones((1, 128))
    v[0, [0, 63, 64, 127]] = 1.0
    c = pack_signs(v)
    assert c.dtype == np.uint64 and c.shape == (1, 2)
    assert c[0, 0] == (1 | (1 << 63)) and c[0, 1] == (1 | (1 << 63))


@pytest.mark.parametrize("sparse", [False, True])
def test_codes_do_not_depend_on_the_projection_summation_order(sparse):
    import scipy.sparse as sp

    from hsvm_cli.hashing.projection import SignProjector
    rng = np.random.default_rng(3)
    d, D, n = 300, 128, 64
    R = projection_matrix(D, d, seed=9)
    X = rng.standard_normal((n, d))
    support = np.ones(d)
    if sparse:
        support[::3] = 0.0
    X *= support
    # Make many entries land within float32 rounding of zero: remove the
    # component along r_j (on the sample's support) from sample j.
    Rd = R.astype(np.float64)
    for i in range(n // 2):
        r = Rd[i % D] * support
        X[i] -= (X[i] @ r) / (r @ r) * r
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    Xin = sp.csr_matrix(X) if sparse else X
    exact = np.sign(X.astype(np.float64) @ Rd.T)
    p = SignProjector(R)
    orders = [X @ R.T,                                    # BLAS
              X[:, ::-1] @ R[:, ::-1].T,                  # reversed order
              sum(X[:, s:s + 7] @ R[:, s:s + 7].T for s in range(0, d, 7)).astype(np.float32)]  # blocked
    codes = [pack_signs(p.fix_signs(Xin, q)) for q in orders]
    assert all(np.array_equal(c, codes[0]) for c in codes[1:])
    assert np.array_equal(codes[0], pack_signs(exact))
    # and the projector's own paths: BLAS, and hsvm's products (the filter's threads)
    assert np.array_equal(p.codes(Xin), codes[0]) and np.array_equal(p.without_blas().codes(Xin), codes[0])
    # The constructed near-zero entries are ones float32 gets wrong: without the
    # fix some order disagrees with the exact signs.
    assert any(not np.array_equal(pack_signs(q), pack_signs(exact)) for q in orders)


def test_wide_sparse_dense_rows_recompute_only_the_signs_near_zero():
    # Normals of text models are dense arrays of mostly zeros: the float32
    # error bound grows with a row's non-zeros, so at d = 50,000 with 20 of
    # them almost no sign needs the double recomputation, and every sign is
    # still the exact one.
    from hsvm_cli.hashing.projection import SignProjector
    from hsvm_cli.support.native import lib, ptr

    rng = np.random.default_rng(4)
    d, D, n = 50_000, 256, 6
    X = np.zeros((n, d), dtype=np.float32)
    for i in range(n):
        X[i, rng.choice(d, 20, replace=False)] = rng.standard_normal(20)
    proj = SignProjector(projection_matrix(D, d, seed=2))
    values = np.ascontiguousarray(X @ proj.RT, dtype=np.float32)
    fixed = lib.hsvm_fix_signs_dense(ptr("float *", X), n, d, ptr("float *", proj.R), ptr("double *", proj.rnorm),
                                     D, ptr("float *", values))
    assert fixed < n * D // 20
    exact = X.astype(np.float64) @ proj.R.astype(np.float64).T
    assert np.array_equal(pack_signs(values), pack_signs(exact))


def test_signs_recomputed_in_double_are_those_of_the_sum_in_index_order():
    # The recomputation decides by four running sums where they are far from
    # zero and by the ordered sum otherwise: on samples that cancel a
    # projection row exactly (sign 0), nearly, or not at all, the signs are
    # those of the double sum in index order (its serial cumulative sum).
    from hsvm_cli.hashing.projection import SignProjector
    from hsvm_cli.support.native import lib, ptr
    rng = np.random.default_rng(5)
    d, D, n = 301, 64, 60
    R = rng.standard_normal((D, d)).astype(np.float32)
    R[:, 1:300:2] = R[:, 0:300:2]
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[:20, 1:300:2] = -X[:20, 0:300:2]       # x . r_j = 0 exactly, pair by pair
    X[:20, 300] = 0.0
    X[20:40, 1:300:2] = -X[20:40, 0:300:2] * np.float32(1 + 2 ** -20)    # nearly
    X[20:40, 300] = 0.0
    proj = SignProjector(R)
    values = np.ascontiguousarray(X @ R.T, dtype=np.float32)
    fixed = lib.hsvm_fix_signs_dense(ptr("float *", X), n, d, ptr("float *", proj.R), ptr("double *", proj.rnorm),
                                     D, ptr("float *", values))
    ordered = np.cumsum(X.astype(np.float64)[:, None, :] * R.astype(np.float64)[None, :, :], axis=2)[:, :, -1]
    assert fixed >= 20 * D and np.array_equal(np.sign(values), np.sign(ordered))
    assert np.all(np.sign(values[:20]) == 0) and np.all(np.sign(values[20:40]) != 0)


@pytest.mark.parametrize("sparse", [False, True])
def test_signs_of_sums_that_overflow_float32_are_the_exact_ones(sparse):
    import warnings

    import scipy.sparse as sp

    from hsvm_cli.hashing.projection import SignProjector
    # Samples near float32's limit (an unnormalised model's input): 3e38 * 2
    # overflows whatever the order, and cancels exactly in double.
    R = np.array([[2.0, -2.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 0.5, 1.0]], dtype=np.float32)
    X = np.array([[3e38, 3e38, 0.0], [3e38, -3e38, 1.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    exact = np.sign(X.astype(np.float64) @ R.astype(np.float64).T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = SignProjector(R).project(sp.csr_matrix(X) if sparse else X)
    assert np.array_equal(np.sign(got), exact)
    # the overflowed orders disagree with the exact signs without the fix
    with np.errstate(over="ignore", invalid="ignore"):
        naive = X @ R.T
    assert not np.array_equal(np.nan_to_num(np.sign(naive)), exact)


def test_float32_normals_are_the_doubles_rounded_and_the_projection_is_drawn_as_float32():
    # drawn as float32: the bits of astype, without the 8-byte array of doubles
    for count in (1, 2, 3, 100_001):
        assert standard_normal(count, seed=9, stream=0, dtype=np.float32).tobytes() == \
            standard_normal(count, seed=9, stream=0).astype(np.float32).tobytes()
    R = projection_matrix(64, 300, seed=4)
    assert R.dtype == np.float32 and R.tobytes() == \
        standard_normal(64 * 300, seed=4, stream=0).astype(np.float32).reshape(64, 300).tobytes()


def test_dense_samples_are_projected_without_a_transposed_copy_and_sparse_ones_give_the_same_codes():
    import scipy.sparse as sp

    from hsvm_cli.hashing.projection import SignProjector
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 300)).astype(np.float32) * (rng.random((50, 300)) < 0.3)
    p = SignProjector(projection_matrix(128, 300, seed=1))
    dense = p.codes(X)
    assert p._RT is None            # a second D x d copy only for scipy's sparse product
    assert np.array_equal(p.codes(sp.csr_matrix(X)), dense) and p._RT is not None
    # a few sparse rows for the width read R's rows directly: the same codes, no transpose
    few = SignProjector(projection_matrix(128, 300, seed=1))
    row = sp.csr_matrix(X[:1] * (np.arange(300) < 60))
    assert np.array_equal(few.codes(row), p.codes(row)) and few._RT is None


def test_a_projector_without_blas_shares_the_projection_and_leaves_the_original_on_blas():
    from hsvm_cli.hashing.projection import SignProjector
    p = SignProjector(projection_matrix(64, 10, seed=2))
    q = p.without_blas()
    assert p.blas and not q.blas and q.R is p.R and q.rnorm is p.rnorm
    X = np.random.default_rng(0).standard_normal((5, 10)).astype(np.float32)
    a, b = q.project(X), p.project(X)
    assert np.array_equal(np.sign(a), np.sign(b))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_commands_threads_bound_the_streams_pools(monkeypatch, digits_files, tmp_path):
    # --threads 1 is the CPUs the command may use: the projection's stream,
    # drawn where no threads argument reaches, too
    from hsvm_cli.hashing import generator
    from hsvm_cli.support import threads as threads_module

    from conftest import DIGITS_TEST, run
    seen = []
    real = generator._fill_in_spans
    monkeypatch.setattr(generator, "PARALLEL_VALUES", 1)
    monkeypatch.setattr(generator, "_fill_in_spans", lambda out, seed, stream, n, f32: seen.append(n) or
                        real(out, seed, stream, n, f32))
    model, hbm, _ = digits_files
    run(["predict", "-q", "-m", model, "-H", hbm, "-k", "3", DIGITS_TEST, "--threads", "1", "-o", tmp_path / "a"])
    assert seen == []                               # one thread: no pool at all
    run(["predict", "-q", "-m", model, "-H", hbm, "-k", "3", DIGITS_TEST, "--threads", "2", "-o", tmp_path / "b"])
    assert seen and set(seen) == {2}
    assert threads_module._COMMAND_THREADS[0] is None      # not left behind for the next caller
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
