"""ITQ (train/itq.py): the quantisation loss never increases, the rotation
stays orthogonal, wide sparse data goes through a truncated SVD."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.train.itq import ITQ

from conftest import BUNDLED

# ---------------------------------------------------------------------- ITQ

def test_itq_quantisation_loss_never_increases_and_rotation_is_orthogonal():
    from hsvm_cli.io.svmlight import load_svmlight
    X, _ = load_svmlight(str(BUNDLED / "digits" / "train.svm.gz"), n_features=64)
    itq = ITQ.fit(X, 16, iterations=50, seed=2)
    h = np.array(itq.loss_history)
    assert h.shape == (51,)
    assert np.all(np.diff(h) <= 1e-9 * h[0]), h
    assert h[-1] < h[0]
    assert np.allclose(itq.rotation @ itq.rotation.T, np.eye(16), atol=1e-10)
    s = itq.signs(X)
    assert s.shape == (X.shape[0], 16) and set(np.unique(s)) <= {-1, 1}
    # balanced-ish bits (PCA directions are centred)
    assert np.all(np.abs((s > 0).mean(axis=0) - 0.5) < 0.35)
    with pytest.raises(ValueError):
        ITQ.fit(X, 65)


def test_itq_on_sparse_wide_data_uses_a_truncated_svd():
    X = sp.random(300, 5000, density=0.01, random_state=3, dtype=np.float32, format="csr")
    itq = ITQ.fit(X, 8, iterations=10, seed=0)
    dense = X.toarray().astype(np.float64)
    Xn = dense / np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-300)
    Xc = Xn - Xn.mean(axis=0)
    top = np.linalg.svd(Xc, full_matrices=False)[2][:8]
    # the same subspace as the exact top-8 principal directions
    assert np.allclose(np.abs(np.linalg.svd(top @ itq.components)[1]), 1.0, atol=1e-6)
