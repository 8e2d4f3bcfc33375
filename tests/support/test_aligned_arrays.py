"""Prepared samples start on a cache line: the row products (refine, DAG) read
a row from its line's start, never a vector split across two lines (a refine
at k = 121 ran 27% slower on rows 16 bytes off)."""
import numpy as np
import pytest

from hsvm_cli.io.svmlight import iter_svmlight
from hsvm_cli.preprocess import give_to_prepare, prepare
from hsvm_cli.support.arrays import aligned_empty

from conftest import BUNDLED


@pytest.mark.parametrize("shape, dtype", [(0, np.float32), (7, np.float64), ((3, 5), np.float32),
                                          ((1000, 300), np.float32), (1 << 20, np.int8), ((2, 1 << 18), np.float64)])
def test_aligned_arrays_start_on_a_cache_line_and_are_writable(shape, dtype):
    for _ in range(4):
        a = aligned_empty(shape, dtype)
        # (an empty array's address is numpy's own: nothing is read from it)
        assert (a.ctypes.data % 64 == 0 or a.size == 0) and a.flags.c_contiguous and a.flags.writeable
        assert a.shape == ((shape,) if np.isscalar(shape) else shape) and a.dtype == dtype
        a[...] = 3
        assert (a == 3).all()


def test_the_readers_values_and_prepared_samples_start_on_a_cache_line():
    path = str(BUNDLED / "omniglot-242" / "test.svm.gz")
    for chunk_rows in (1000, 37):
        for chunk in iter_svmlight(path, dtype=np.float32, n_features=784, chunk_rows=chunk_rows, threads=2,
                                   _csr_arrays=True):
            assert chunk.X.data.ctypes.data % 64 == 0
            Xn = prepare("l2", give_to_prepare(chunk.X))
            assert Xn.ctypes.data % 64 == 0 and Xn.shape == (chunk.X.shape[0], 784)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 333))
    for rows in (slice(None), slice(1, 9)):
        got = prepare("l2", X[rows])
        assert got.ctypes.data % 64 == 0
        norms = np.sqrt((X[rows] ** 2).sum(axis=1))
        np.testing.assert_allclose(got, X[rows] / norms[:, None], rtol=1e-6)


def test_shrinking_an_aligned_array_keeps_its_head_where_it_was():
    from hsvm_cli.support.arrays import shrink_aligned
    for n, keep in ((3_000_000, 1000), (5000, 17), (64, 64)):
        a = aligned_empty(n, np.float32)
        a[:] = np.arange(n, dtype=np.float32)
        address = a.ctypes.data
        b = shrink_aligned(a, keep)
        del a
        assert b.ctypes.data == address and b.shape == (keep,) and b.base.nbytes <= keep * 4 + 64
        assert np.array_equal(b, np.arange(keep, dtype=np.float32))
    c = np.arange(10.0)                              # not from aligned_empty: a slice
    assert np.array_equal(shrink_aligned(c, 4), [0, 1, 2, 3])
    x = np.arange(100.0)                             # another array's memory is never resized
    assert np.array_equal(shrink_aligned(x[10:50], 5), [10, 11, 12, 13, 14]) and x.shape == (100,)


def test_scipy_keeps_an_aligned_array_it_is_handed_without_copying_it():
    # scipy copies a view of less than half its block when it builds a
    # sparse matrix (as a float64 view of a byte block was): the reader's
    # values were copied at every load, 63 MB more for fashion-mnist-20k
    import scipy.sparse as sp

    from hsvm_cli.support.arrays import shrink_aligned
    for n in (1000, 1 << 20):
        values = aligned_empty(n, np.float64)
        values[:] = 1.5
        for data in (values, shrink_aligned(values, n // 2)):
            X = sp.csr_matrix((data, np.arange(data.size, dtype=np.int32), np.array([0, data.size], dtype=np.int32)),
                              shape=(1, data.size), copy=False)
            assert X.data.ctypes.data == data.ctypes.data
    path = str(BUNDLED / "omniglot-242" / "test.svm.gz")
    chunk = next(iter_svmlight(path, n_features=784))
    assert chunk.X.data.base is not None and chunk.X.data.ctypes.data % 64 == 0
