"""The fingerprints a codes file keeps of its samples (models/codes.py):
the same for the same sample however it is stored, different for others,
and pinned, since files written today are checked by later versions."""
import numpy as np
import scipy.sparse as sp

from hsvm_cli.models.codes import sample_fingerprints
from hsvm_cli.support.lazy_sparse import CsrArrays

ROWS = np.array([[0, 0.5, 0, -2.0], [0, 0, 0, 0], [1e-3, 0, 0, 0]], dtype=np.float32)
PINNED = ['0xef598907cb13cf56', '0x0', '0x485058ce0f5c1e62']


def test_fingerprints_are_pinned():
    assert [hex(v) for v in sample_fingerprints(sp.csr_matrix(ROWS))] == PINNED


def test_a_sample_has_one_fingerprint_however_it_is_stored():
    want = sample_fingerprints(ROWS)
    csr = sp.csr_matrix(ROWS)
    assert np.array_equal(sample_fingerprints(csr), want)
    assert np.array_equal(sample_fingerprints(CsrArrays(csr.data, csr.indices, csr.indptr, csr.shape)), want)
    # float64 values round to the same float32; explicit zeros and -0.0 are no features
    assert np.array_equal(sample_fingerprints(sp.csr_matrix(ROWS.astype(np.float64))), want)
    explicit = sp.csr_matrix((np.array([0, 0.5, -0.0, -2.0], np.float32), np.array([0, 1, 2, 3]),
                              np.array([0, 4, 4, 4])), shape=(3, 4))
    assert sample_fingerprints(explicit)[0] == want[0]
    # a row sliced out of a block: its own fingerprint
    assert sample_fingerprints(csr[2:3])[0] == want[2]


def test_other_samples_have_other_fingerprints():
    rng = np.random.default_rng(0)
    X = (rng.random((2000, 30)) < 0.3) * rng.integers(1, 4, (2000, 30)).astype(np.float32)
    X = np.unique(X, axis=0)
    fp = sample_fingerprints(X)
    assert np.unique(fp).size == X.shape[0]
    moved = ROWS.copy()
    moved[0] = [0, 0, 0.5, -2.0]                       # a value one feature further
    assert sample_fingerprints(moved)[0] != sample_fingerprints(ROWS)[0]
    moved[0] = [0, 0.5, 0, -2.0000002]                 # one float32 step
    assert sample_fingerprints(moved)[0] != sample_fingerprints(ROWS)[0]


def test_a_dense_array_and_its_csr_form_with_explicit_zeros_have_one_fingerprint():
    # dense rows are made CSR of their nonzeros; the CSR form stores zeros too
    rng = np.random.default_rng(7)
    X = (rng.random((300, 50)) < 0.2) * rng.standard_normal((300, 50)).astype(np.float32)
    X[::7, 3] = -0.0
    csr = sp.csr_matrix(X)
    csr.data[::5] = 0.0                                   # explicit zeros stored in the CSR arrays
    assert np.array_equal(sample_fingerprints(csr), sample_fingerprints(csr.toarray()))
