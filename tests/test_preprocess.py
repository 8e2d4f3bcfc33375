"""prepare(): the one-pass C preparation of parsed chunks (native/prepare.c)
gives the bits of the numpy definition -- float32 rounding, L2 norms summed
in double in index order, densified when dense enough -- for every shape of
row, split over any number of threads."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import DataError
from hsvm_cli.io.svmlight import iter_svmlight, write_svmlight
from hsvm_cli.preprocess import _ROWS_PER_THREAD, apply_normalization, densify_if_dense, give_to_prepare, prepare


def _reference(normalize, X):
    Y = X.astype(np.float32)
    return densify_if_dense(apply_normalization(Y, normalize, copy=True))


def _chunk(rng, n, d, density):
    X = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float64)
    X.data = rng.standard_normal(X.data.shape[0]) * 10.0 ** rng.integers(-3, 4, X.data.shape[0])
    X = X.tolil()
    X[0, :] = 0.0                                          # an all-zero row
    X[1, :] = rng.standard_normal(d)                      # fully dense rows
    X[n - 1, :] = rng.standard_normal(d)
    X = X.tocsr()
    X.sort_indices()
    return X


@pytest.mark.parametrize("density", [0.01, 0.3, 1.0])
@pytest.mark.parametrize("normalize", ["l2", "none"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_prepare_gives_the_numpy_definition_bit_for_bit(density, normalize, threads):
    rng = np.random.default_rng(3)
    n = 3 * _ROWS_PER_THREAD + 17                         # enough rows to split
    X = _chunk(rng, n, 40, density)
    got = prepare(normalize, X, threads=threads)
    want = _reference(normalize, X)
    assert type(got) is type(want) and got.dtype == np.float32
    if sp.issparse(want):
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
        got, want = got.data, want.data
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_rows_from_the_reader_take_the_dense_path_with_the_same_bits(tmp_path):
    rng = np.random.default_rng(5)
    Xd = rng.standard_normal((300, 25))
    Xd[::7, ::3] = 0.0                                     # some rows not fully dense
    path = tmp_path / "d.svm"
    with open(path, "wb") as fh:
        write_svmlight(fh, Xd, np.ones(300, dtype=np.int64))
    (chunk,) = list(iter_svmlight(str(path), n_features=25))
    assert chunk.X.has_canonical_format
    got = prepare("l2", chunk.X, threads=2)
    assert np.array_equal(got.view(np.uint32), _reference("l2", chunk.X).view(np.uint32))


@pytest.mark.parametrize("density", [0.01, 0.3, 1.0])
@pytest.mark.parametrize("normalize", ["l2", "none"])
def test_float32_chunks_are_prepared_to_the_bits_of_float64_ones(density, normalize):
    rng = np.random.default_rng(4)
    X = _chunk(rng, 2 * _ROWS_PER_THREAD + 5, 40, density)
    X32 = X.astype(np.float32)
    X32.has_canonical_format = True
    want = prepare(normalize, X, threads=2)
    for threads in (1, 2):
        got = prepare(normalize, X32, threads=threads)
        if sp.issparse(want):
            assert np.array_equal(got.indices, want.indices)
            got, w = got.data, want.data
        else:
            w = want
        assert np.array_equal(got.view(np.uint32), w.view(np.uint32))


def _reader_chunk(tmp_path, Xd, dtype):
    path = tmp_path / "c.svm"
    with open(path, "wb") as fh:
        write_svmlight(fh, Xd, np.ones(Xd.shape[0], dtype=np.int64))
    (chunk,) = list(iter_svmlight(str(path), n_features=Xd.shape[1], dtype=dtype))
    return chunk.X


@pytest.mark.parametrize("normalize", ["l2", "none"])
@pytest.mark.parametrize("threads", [1, 3])
def test_a_fully_dense_chunk_given_to_prepare_is_prepared_in_its_own_values(tmp_path, normalize, threads):
    rng = np.random.default_rng(6)
    Xd = rng.standard_normal((3 * _ROWS_PER_THREAD + 9, 30))
    want = prepare(normalize, _reader_chunk(tmp_path, Xd, np.float64))
    X = give_to_prepare(_reader_chunk(tmp_path, Xd, np.float32))
    got = prepare(normalize, X, threads=threads)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.shares_memory(got, X.data)                   # no new array: the chunk's values were prepared


def test_a_chunk_not_given_or_not_fully_dense_is_left_unchanged(tmp_path):
    rng = np.random.default_rng(7)
    Xd = rng.standard_normal((500, 30))
    X = _reader_chunk(tmp_path, Xd, np.float32)
    before = X.data.copy()
    got = prepare("l2", X)                                 # a user's matrix: never written
    assert not np.shares_memory(got, X.data) and np.array_equal(X.data, before)
    Xd[3, 4] = 0.0                                         # one row not fully dense
    X = give_to_prepare(_reader_chunk(tmp_path, Xd, np.float32))
    before = X.data.copy()
    got = prepare("l2", X)
    assert not np.shares_memory(got, X.data) and np.array_equal(X.data, before)
    assert np.array_equal(got.view(np.uint32), prepare("l2", _reader_chunk(tmp_path, Xd, np.float64)).view(np.uint32))


def test_unsorted_rows_are_prepared_as_sorted_ones():
    rng = np.random.default_rng(8)
    X = sp.csr_matrix(rng.standard_normal((50, 12)))
    indices, data = X.indices.copy(), X.data.copy()
    for i in range(50):                                    # every row fully dense, in shuffled order
        s, e = X.indptr[i], X.indptr[i + 1]
        p = rng.permutation(e - s)
        indices[s:e], data[s:e] = indices[s:e][p], data[s:e][p]
    shuffled = sp.csr_matrix((data, indices, X.indptr), shape=X.shape)
    assert not shuffled.has_canonical_format
    for normalize in ("l2", "none"):
        got = prepare(normalize, shuffled)
        assert np.array_equal(got.view(np.uint32), _reference(normalize, X).view(np.uint32))


def test_values_beyond_float32_are_refused():
    X = sp.csr_matrix(np.array([[1.0, 1e39], [2.0, 3.0]]))
    with pytest.raises(DataError, match="beyond the float32 range"):
        prepare("none", X)


@pytest.mark.parametrize("density", [0.3, 1.0])
@pytest.mark.parametrize("threads", [1, 2])
def test_subnormal_rows_normalise_like_the_same_rows_scaled_by_2_to_the_64(density, threads):
    # 1/||x|| of these rows is beyond float32: they are normalised by way of
    # x * 2^64 (exact), to the bits of the scaled rows, never to infinity.
    rng = np.random.default_rng(11)
    big = _chunk(rng, 3 * _ROWS_PER_THREAD + 5, 30, density)
    mantissas = np.where(big.data < 0, -1.0, 1.0) * np.clip(np.round(np.abs(big.data)), 1, 31)
    big.data = np.ldexp(mantissas, -76)                                 # exact in float32 at both scales
    tiny = big.copy()
    tiny.data = np.ldexp(tiny.data, -64)                                # subnormal float32 values
    assert np.all(np.abs(tiny.data.astype(np.float32)) < np.finfo(np.float32).tiny)
    want = prepare("l2", big, threads=threads)
    got = prepare("l2", tiny, threads=threads)
    ref = _reference("l2", tiny)
    for a in (got, ref):
        a = a.data if sp.issparse(a) else a
        w = want.data if sp.issparse(want) else want
        assert np.array_equal(a.view(np.uint32), w.view(np.uint32))


def test_subnormal_rows_predict_and_hash_like_their_scaled_copies(tmp_path):
    from conftest import run, write_text
    rows = ["1 1:4 2:1", "2 1:-4 2:3", "1 1:3 2:-1", "2 1:-2 2:-4", "3 2:5", "3 1:1 2:6"]
    train = write_text(tmp_path / "t.svm", "\n".join(rows) + "\n")
    tiny = write_text(tmp_path / "tiny.svm", "".join(
        "%s %s\n" % (r.split()[0], " ".join("%s:%r" % (f.split(":")[0], float(f.split(":")[1]) * 2.0**-140)
                                             for f in r.split()[1:])) for r in rows))
    model, hbm = str(tmp_path / "m.hsvm"), str(tmp_path / "m.hbm")
    run(["train-ovo", train, "-o", model, "-q"])
    run(["hash-model", "-m", model, "--bits", "64", "-o", hbm, "-q"])
    for extra in ([], ["-H", hbm, "-k", "2"], ["--dag"], ["-H", hbm, "--no-refine"]):
        want = run(["predict", "-q", train, "-m", model] + extra).stdout
        run(["predict", "-q", tiny, "-m", model] + extra, stdout=want)
    want = run(["hash-data", train, "-H", hbm, "-o", tmp_path / "a.codes"])
    run(["hash-data", tiny, "-H", hbm, "-o", tmp_path / "b.codes"])
    from hsvm_cli.models.codes import read_codes
    assert np.array_equal(np.asarray(read_codes(str(tmp_path / "a.codes")).codes),
                          np.asarray(read_codes(str(tmp_path / "b.codes")).codes))


@pytest.mark.parametrize("span", [1, 2, 3, 7, 1 << 20])
def test_sparse_rows_normalised_in_spans_are_normalised_as_a_whole(monkeypatch, span):
    # Spans of a few non-zeros at a time (rows longer than a span alone,
    # empty rows, subnormal ones scaled by 2^64): every value's bits as when
    # the whole matrix was one span, and the input left as it was.
    import hsvm_cli.preprocess as pre
    rng = np.random.default_rng(5)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=rng, dtype=np.float64)
    X = sp.vstack([X, sp.csr_matrix((2, 30)), sp.csr_matrix(np.full((1, 30), 1e-310))]).tocsr()
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        before = Xd.data.copy()
        want = pre.l2_normalize(Xd, copy=True)
        monkeypatch.setattr(pre, "SPAN_NONZEROS", span)
        got = pre.l2_normalize(Xd, copy=True)
        monkeypatch.setattr(pre, "SPAN_NONZEROS", 1 << 20)
        assert got.data.tobytes() == want.data.tobytes() and np.array_equal(got.indptr, want.indptr)
        assert Xd.data.tobytes() == before.tobytes()
    monkeypatch.setattr(pre, "SPAN_NONZEROS", 3)
    assert list(pre.row_spans(np.array([0, 0, 5, 5, 6, 9], dtype=np.int32))) == [(0, 1), (1, 2), (2, 4), (4, 5)]


def test_normalising_in_place_gives_the_copys_bits_and_spends_only_float64_input():
    from hsvm_cli.preprocess import normalized_float64
    rng = np.random.default_rng(8)
    for X in (sp.random(50, 20, density=0.3, format="csr", random_state=rng), rng.normal(size=(30, 7))):
        for how in ("l2", "none"):
            kept = X.copy()
            want = normalized_float64(X, how)       # a copy: X as it was
            assert want is not X and (X != kept).nnz == 0 if sp.issparse(X) else np.array_equal(X, kept)
            for dtype in (np.float32, np.float64):
                given = X.astype(dtype)
                before = given.copy()
                got = normalized_float64(given, how, in_place=True)
                ref = normalized_float64(before, how)
                assert (got.toarray() if sp.issparse(got) else got).tobytes() == \
                    (ref.toarray() if sp.issparse(ref) else ref).tobytes()
                # float64 input is spent (normalised where it is); float32 is converted, untouched
                assert (got is given) == (dtype == np.float64)
                if dtype == np.float32:
                    assert (given != before).nnz == 0 if sp.issparse(given) else np.array_equal(given, before)
