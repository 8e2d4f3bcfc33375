"""Products w.x whose bits depend on the sample and the classifier only:
the same on every code path, in any block, thread or position, for dense
and CSR rows; what exact prediction's scores, and so its labels and
probabilities, are made of."""
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.predict.products import products, transposed

from conftest import DIGITS_TEST, kernel_params, run

SHAPES = [(1, 5, 3), (37, 300, 45), (130, 784, 333), (9, 1, 70), (257, 64, 129), (70, 513, 2100)]


def _data(n, d, P, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[X < 0.3] = 0.0                                        # sparse enough to matter, dense enough to be dense
    W = rng.standard_normal((P, d)).astype(np.float32)
    return X, W


def _fma32(x, w, acc):
    """float32 fma(x, w, acc), rounded once from the exact value (ties to even)."""
    exact = Fraction(float(x)) * Fraction(float(w)) + Fraction(float(acc))
    f = np.float32(float(exact))
    candidates = (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf)))
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1))


def _fma_chain(X, W):
    """The definition, one row and column at a time: acc = fma(x_k, w_k, acc)
    over k in order from +0, each step rounded once to float32."""
    out = np.empty((X.shape[0], W.shape[0]), dtype=np.float32)
    for i in range(X.shape[0]):
        for j in range(W.shape[0]):
            acc = np.float32(0.0)
            for x, w in zip(X[i], W[j]):
                acc = _fma32(x, w, acc)
            out[i, j] = acc
    return out


@pytest.mark.parametrize("kernel", kernel_params())
def test_every_product_is_the_fma_chain_over_the_features_in_order(kernel):
    X, W = _data(5, 37, 19)
    assert np.array_equal(products(X, W, kernel=kernel), _fma_chain(X, W))


@pytest.mark.parametrize("shape", SHAPES)
def test_every_path_block_and_thread_count_gives_the_same_bits(shape):
    X, W = _data(*shape)
    want = products(X, W, kernel="portable")
    for kernel in ("avx2", "avx512"):
        from hsvm_cli.support.kernels import available_kernels
        if kernel in available_kernels():
            assert np.array_equal(products(X, W, kernel=kernel), want), kernel
    for threads in (1, 2, 3):
        assert np.array_equal(products(X, W, threads=threads), want)
    # a row's products do not depend on the rows scored with it
    blocks = np.vstack([products(X[s:s + 7], W) for s in range(0, X.shape[0], 7)])
    assert np.array_equal(blocks, want)
    assert np.array_equal(products(X[::-1], W)[::-1], want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kernel", kernel_params())
def test_csr_rows_give_the_bits_of_their_dense_rows(shape, kernel):
    X, W = _data(*shape, seed=3)
    want = products(X, W, kernel=kernel)
    got = products(sp.csr_matrix(X), W, WT=transposed(W), kernel=kernel)
    assert np.array_equal(got, want)
    assert np.array_equal(products(sp.csr_matrix(X), W, threads=2), want)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kernel", kernel_params())
def test_few_csr_rows_read_from_w_directly_give_the_transposes_bits(shape, kernel, monkeypatch):
    # a one-line input scored without transposing W (0.06-0.11 s of a 0.2 s
    # run on reuters-r52): the same chain term for term
    from hsvm_cli.predict import products as module
    X, W = _data(*shape, seed=5)
    want = products(sp.csr_matrix(X), W, WT=transposed(W), kernel=kernel)
    monkeypatch.setattr(module, "DIRECT_FEATURES_PER_ENTRY", 0)       # every block direct
    assert module.direct_is_cheaper(sp.csr_matrix(X), W.shape[1])
    assert np.array_equal(products(sp.csr_matrix(X), W, kernel=kernel), want)
    assert np.array_equal(products(sp.csr_matrix(X), W, kernel=kernel, threads=2), want)
    assert np.array_equal(_fma_chain(X[:2], W[:3]), products(sp.csr_matrix(X[:2]), W[:3], kernel=kernel))


def test_exact_scoring_reads_w_directly_until_the_transpose_pays(digits_model, monkeypatch):
    from hsvm_cli.predict import products as module
    from hsvm_cli.predict.exact import ExactScorer
    calls = []
    monkeypatch.setattr(module, "transposed", lambda W: calls.append(1) or transposed(W))
    scorer = ExactScorer(digits_model)
    d = digits_model.n_features
    row = sp.csr_matrix(([1.0], ([0], [3])), shape=(1, d), dtype=np.float32)
    want = products(row.toarray(), np.asarray(digits_model.W, dtype=np.float32))
    monkeypatch.setattr(module, "DIRECT_FEATURES_PER_ENTRY", 4)
    for _ in range(d // 4):                 # d / 4 entries come directly
        assert np.array_equal(scorer.products(row), want)
    assert calls == []
    assert np.array_equal(scorer.products(row), want) and calls == [1]     # then W is transposed, once
    assert np.array_equal(scorer.products(row), want) and calls == [1]


def test_products_fill_a_given_buffer_and_check_shapes():
    X, W = _data(10, 20, 30)
    buf = np.full((16, 30), np.nan, dtype=np.float32)
    got = products(X, W, out=buf)
    assert got.base is buf and np.array_equal(buf[:10], products(X, W)) and np.isnan(buf[10:]).all()
    with pytest.raises(ValueError, match="samples have 19 features, classifiers 20"):
        products(X[:, :19], W)


def test_exact_prediction_output_does_not_depend_on_chunks_or_threads(digits_model_file, tmp_path):
    model = str(digits_model_file)
    cal = str(tmp_path / "d.cal")
    run(["calibrate", DIGITS_TEST, "-m", model, "-o", cal, "-q", "--repeat", "1", "--timing-budget", "0"])
    want = run(["predict", "-q", DIGITS_TEST, "-m", model, "--exact", "--proba", "-C", cal]).stdout
    for extra in (["--chunk-rows", "7"], ["--chunk-rows", "100", "--threads", "1"], ["--threads", "2"]):
        assert run(["predict", "-q", DIGITS_TEST, "-m", model, "--exact", "--proba", "-C", cal] + extra).stdout \
            == want, extra


def test_thresholded_probabilities_do_not_depend_on_chunks(digits_files, tmp_path):
    # each chunk's widest row of kept classes varied, and with it whether its
    # decision values came from every classifier's product or the gathered
    # cells: the printed probabilities changed in their sixth digit
    model, hbm, _ = (str(f) for f in digits_files)
    cal = str(tmp_path / "d.cal")
    run(["calibrate", DIGITS_TEST, "-m", model, "-H", hbm, "-o", cal, "-q", "--repeat", "1",
         "--timing-budget", "0"])
    args = ["predict", "-q", DIGITS_TEST, "-m", model, "-H", hbm, "-C", cal, "--filter-threshold", "0.01", "--proba"]
    want = run(args).stdout
    for rows in ("1", "7"):
        assert run(args + ["--chunk-rows", rows]).stdout == want, rows


@pytest.mark.parametrize("P, rows", [(45, 8192), (29161, 575), (499500, 128), (1000000, 67)])
def test_score_blocks_keep_enough_rows_to_amortise_reading_w(P, rows):
    # every block reads all of W once: near 64 MB of scores, but at least 128
    # rows while that stays within 256 MB
    from hsvm_cli.predict.exact import block_rows_for
    assert block_rows_for(P) == rows
    assert block_rows_for(P) * P * 4 <= 256 << 20


@pytest.mark.parametrize("rows", [1, 255, 256, 257, 700])
def test_the_transpose_is_made_in_blocks_of_rows_and_is_w_transposed(rows):
    W = np.random.default_rng(rows).standard_normal((rows, 37)).astype(np.float32)
    for given in (W, np.asfortranarray(W), W.astype(np.float64)):
        WT = transposed(given)
        assert WT.flags.c_contiguous and WT.dtype == np.float32 and np.array_equal(WT, W.T)
