"""scipy.sparse is imported only where a sparse matrix is needed: `hsvm
predict` on dense samples never imports it (0.1-0.15 s of every run), nor
numpy.ma (which np.unique imports: 9 ms), and the
reader's scipy-free chunks behave as the CSR matrices they stand for."""
import subprocess
import sys

import numpy as np
import scipy.sparse

from hsvm_cli.support.lazy_sparse import CsrArrays, sp

from conftest import BUNDLED, DIGITS_TEST


def test_predicting_dense_samples_never_imports_scipy_or_numpy_ma(digits_files, tmp_path):
    model, hbm, _ = digits_files
    for extra in ([], ["--dag"], ["-H", hbm, "-k", "3"], ["--first-stage", "scores", "-k", "3", "--refine", "dag"]):
        code = ("import sys; from hsvm_cli.cli.main import cli\n"
                "try:\n    cli(%r)\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
                "print('scipy.sparse' in sys.modules, 'scipy' in sys.modules, 'numpy.ma' in sys.modules)"
                % (["predict", "-q", "-m", str(model)] + [str(a) for a in extra] + [DIGITS_TEST, "-o",
                                                                                     str(tmp_path / "p")]))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["False", "False", "False"], (extra, r.stdout)


def test_predicting_with_a_one_vs_rest_model_never_imports_scipy_sparse(tmp_path):
    # an imported LIBLINEAR model: 0.1-0.15 s of a one-line input's 0.3 s
    from conftest import TOOL_FIXTURES, run
    model = tmp_path / "o.hsvm"
    run(["import-model", "-q", TOOL_FIXTURES / "liblinear_lr3.model", "-o", model])
    for extra in ([], ["--proba"], ["--scores"]):
        code = ("import sys; from hsvm_cli.cli.main import cli\n"
                "try:\n    cli(%r)\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
                "print('scipy.sparse' in sys.modules)"
                % (["predict", "-q", "-m", str(model)] + extra + [str(TOOL_FIXTURES / "digits3.test.svm"), "-o",
                                                                   str(tmp_path / "p")]))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["False"], (extra, r.stdout)


def test_hashing_dense_samples_with_a_hash_model_never_imports_scipy(digits_files, tmp_path):
    _, hbm, _ = digits_files
    code = ("import sys; from hsvm_cli.cli.main import cli\n"
            "try:\n    cli(%r)\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print('scipy' in sys.modules)" % (["hash-data", "-q", "-H", str(hbm), DIGITS_TEST, "-o",
                                                str(tmp_path / "c.codes")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


def test_the_readers_chunks_are_the_csr_matrices_they_stand_for():
    from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight
    X, _ = load_svmlight(str(BUNDLED / "digits" / "test.svm.gz"), dtype=np.float32, n_features=64)
    chunks = list(iter_svmlight(str(BUNDLED / "digits" / "test.svm.gz"), dtype=np.float32, chunk_rows=100,
                                n_features=64, _csr_arrays=True))
    assert all(isinstance(c.X, CsrArrays) for c in chunks)
    assert (scipy.sparse.vstack([c.X.to_scipy() for c in chunks]) != X).nnz == 0
    C = chunks[0].X
    assert sp.issparse(C) and sp.isspmatrix_csr(C) and C.tocsr() is C and C.nnz == X[:100].nnz
    for s, e in ((0, 100), (3, 17), (50, 50), (90, 200)):
        assert (C[s:e].to_scipy() != X[:100][s:e]).nnz == 0 and C[s:e].shape == X[:100][s:e].shape
    assert C.with_width(70).shape == (100, 70) and (C.with_width(70).to_scipy()[:, :64] != X[:100]).nnz == 0
    assert np.array_equal(C.toarray(), X[:100].toarray())
    assert not sp.issparse(np.zeros((2, 2)))


def test_distinct_indices_are_what_np_unique_gives():
    from hsvm_cli.support.arrays import distinct_indices
    rng = np.random.default_rng(0)
    for a in (np.array([], np.int64), np.array([3, 3, 0, 7], np.int32), rng.integers(0, 50, (40, 3)),
              np.array([-1, 4, 4]), np.array([2.0, 1.0, 2.0]), np.array([5], np.uint8)):
        got, want = distinct_indices(a), np.unique(a)
        assert got.dtype == want.dtype and np.array_equal(got, want), a


def _dense_text(rng, rows, d, holes=()):
    # rows storing all d columns, except the rows in holes, which lack one
    lines = []
    for i in range(rows):
        cols = [j for j in range(d) if not (i in holes and j == (i * 7) % d)]
        lines.append("%d %s\n" % (i % 5, " ".join("%d:%.6g" % (j + 1, rng.normal()) for j in cols)))
    return "".join(lines).encode()


def test_complete_rows_are_read_without_indices_and_are_the_csr_matrices_they_stand_for(tmp_path):
    # a dense file's rows keep no indices (CsrArrays makes them if asked); a
    # row lacking a column, in any block, part or chunk, turns indices on
    # for the rest: every split gives the matrix of the plain reader
    from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight
    rng = np.random.default_rng(3)
    d = 9
    for holes in ((), (0,), (37,), (118,), (40, 41, 100)):
        path = tmp_path / "dense.svm"
        path.write_bytes(_dense_text(rng, 120, d, holes))
        want, y = load_svmlight(str(path), dtype=np.float32, n_features=d)
        for block, part, threads, rows in ((1 << 20, 1 << 20, 1, 1000), (997, 211, 2, 1000), (997, 211, 2, 23),
                                           (4096, 300, 2, 50), (53, 1, 3, 7)):
            chunks = list(iter_svmlight(str(path), dtype=np.float32, n_features=d, chunk_rows=rows,
                                        threads=threads, _block_size=block, _part_bytes=part, _csr_arrays=True))
            first_hole = min(holes) if holes else 120
            # a chunk from the first hole on keeps indices (one before it may, when a part read ahead had it)
            assert not any(c.X.complete_rows for c in chunks if c.first_line - 1 + c.X.shape[0] > first_hole)
            assert all(c.X.complete_rows for c in chunks) == (not holes)
            got = scipy.sparse.vstack([c.X.to_scipy() for c in chunks]).tocsr()
            assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
            assert got.data.tobytes() == want.data.tobytes()
            assert np.array_equal(np.concatenate([c.y for c in chunks]), y)


def test_prepared_complete_rows_are_the_prepared_csr_rows():
    from hsvm_cli.preprocess import give_to_prepare, prepare
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 6)).astype(np.float32)
    csr = scipy.sparse.csr_matrix(X)
    for normalize in ("l2", "none"):
        want = prepare(normalize, csr)
        C = give_to_prepare(CsrArrays(X.ravel().copy(), None, csr.indptr.copy(), X.shape))
        got = prepare(normalize, C)
        assert got.tobytes() == want.tobytes()
        C = CsrArrays(X.ravel().copy(), None, csr.indptr.copy(), X.shape)      # not given: indices made on use
        assert prepare(normalize, C).tobytes() == want.tobytes() and not C.complete_rows
