"""Sign random projections whose bits do not depend on the machine.

The projection X R^T runs in float32 BLAS, whose summation order differs
between CPUs and libraries; an entry's sign can only differ where the value is
within the float32 error bound of zero.  Those few entries (a fraction of a
percent) are recomputed in C in double precision and index order
(native/project.c), so a code is a function of the sample and the projection
alone: codes from `hash-data` on one machine equal those `predict` computes on
another."""
import numpy as np
import scipy.sparse as sp

from ._native import lib
from .cbuf import ptr


def row_norms(X):
    """Euclidean norms of the rows of a dense float32 matrix, in a fixed order."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    out = np.empty(X.shape[0], dtype=np.float64)
    if X.shape[0]:
        lib.hsvm_row_norms(ptr("float *", X), X.shape[0], X.shape[1], ptr("double *", out))
    return out


class SignProjector:
    """Projects samples onto the rows of R (D x d float32) and returns the
    values with every sign exact (near-zero entries replaced by +-1 or 0)."""

    def __init__(self, R):
        self.R = np.ascontiguousarray(R, dtype=np.float32)
        self.RT = np.ascontiguousarray(self.R.T)
        self.rnorm = row_norms(self.R)

    def project(self, X):
        X = X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float32)
        return self.fix_signs(X, np.asarray(X @ self.RT))

    def fix_signs(self, X, proj):
        """``proj`` (X R^T from any float32 summation) with the signs of its
        near-zero entries recomputed exactly; returns a new float32 array."""
        D, d = self.R.shape
        proj = np.array(proj, dtype=np.float32, order="C", copy=True)
        if X.shape[0] == 0:
            return proj
        if sp.issparse(X):
            X = X.tocsr()
            indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
            indices = np.ascontiguousarray(X.indices, dtype=np.int32)
            data = np.ascontiguousarray(X.data, dtype=np.float32)
            lib.hsvm_fix_signs_csr(ptr("int64_t *", indptr), ptr("int32_t *", indices), ptr("float *", data),
                                   X.shape[0], d, ptr("float *", self.R), ptr("double *", self.rnorm), D,
                                   ptr("float *", proj))
        else:
            X = np.ascontiguousarray(X, dtype=np.float32)
            lib.hsvm_fix_signs_dense(ptr("float *", X), X.shape[0], d, ptr("float *", self.R),
                                     ptr("double *", self.rnorm), D, ptr("float *", proj))
        return proj
