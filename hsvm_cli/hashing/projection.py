"""Sign random projections whose bits do not depend on the machine.

A D-bit code of a vector x is F_D(x) = sgn(R x) for the D x d Gaussian matrix R
derived from a seed (:func:`projection_matrix`; Charikar 2002, after Goemans
and Williamson): for two vectors at angle φ each bit differs with probability
φ/π.  The same R hashes the samples and the classifier normals.

The projection X R^T runs in float32 BLAS (or hsvm's own products, for callers
that run it on threads of their own), whose summation order differs between
CPUs and libraries; an entry's sign can only differ where the value is
within the float32 error bound of zero.  Those few entries (a fraction of a
percent) are recomputed in C in double precision and index order
(native/project.c), so a code is a function of the sample and the projection
alone: codes from `hash-data` on one machine equal those `predict` computes on
another."""
import copy

import numpy as np

from ..preprocess import row_norms
from ..support.lazy_sparse import sp
from ..support.native import lib, ptr
from .generator import standard_normal

# Stream of hsvm_cli.hashing.generator used for the projection matrix.
PROJECTION_STREAM = 0
#: Name of the bit layout of :func:`projection_matrix` (row j: normals j*d to
#: (j+1)*d - 1 of the stream), recorded in hash models next to the kind.
GAUSSIAN_LAYOUT = "gaussian-rows-v1"


def projection_matrix(bits, n_features, *, seed):
    """The D x d Gaussian projection (float32), a pure function of its arguments:
    row j is the j-th block of d normals of the seeded stream, so a prefix of
    rows is the projection of a shorter code."""
    g = standard_normal(int(bits) * int(n_features), seed=seed, stream=PROJECTION_STREAM, dtype=np.float32)
    return g.reshape(int(bits), int(n_features))


def pack_signs(values):
    """Bit j of a row's code is 1 where values[:, j] > 0; packed into uint64
    words, bit j at bit j % 64 of word j // 64 (so a prefix of bits is a prefix
    of words)."""
    values = np.asarray(values)
    n, D = values.shape
    if D % 64:
        raise ValueError("code length %d is not a multiple of 64" % D)
    packed = np.packbits(values > 0, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").reshape(n, D // 64)


class SignProjector:
    """Projects vectors onto the rows of R (D x d float32): :meth:`project`
    gives the values with every sign exact (near-zero entries replaced by +-1
    or 0), :meth:`codes` the packed D-bit codes."""

    def __init__(self, R):
        self.R = np.ascontiguousarray(R, dtype=np.float32)
        self._sparse = None             # the CSR products' R (and its transpose, once it pays)
        self.rnorm = row_norms(self.R)
        self.blas = True

    def without_blas(self):
        """This projector with dense products computed by hsvm's own
        (native/products.c) in the calling thread instead of BLAS, for callers
        that run it on threads of their own: BLAS would start threads beside
        theirs, and limiting it process-wide costs ~10 ms (threadpoolctl's
        import and its scan of the loaded libraries) -- a fortieth of a
        hashed prediction of 8,400 samples.  The same codes: every sign is
        exact whatever the summation."""
        twin = copy.copy(self)
        twin.blas = False
        return twin

    def _sparse_rows(self):
        if self._sparse is None:
            from ..predict.products import SparseRowProducts
            self._sparse = SparseRowProducts(self.R)
        return self._sparse

    @property
    def RT(self):
        """R transposed, C-contiguous: made for sparse products once they have
        read enough rows for it to pay (the CSR products read it by feature;
        a few rows read R's rows), not for dense samples, which BLAS
        multiplies by R.T in place -- a second D x d copy (1 GB at
        d = 1,048,576 and 256 bits) that hash-model never needs."""
        return self._sparse_rows().WT

    @property
    def _RT(self):
        # the transpose if made, else None
        return None if self._sparse is None else self._sparse.WT_made

    @property
    def bits(self):
        return int(self.R.shape[0])

    def project(self, X):
        # An overflow (samples near float32's limit) is no error here: those
        # entries' signs are recomputed in double by fix_signs.
        if sp.issparse(X):
            # hsvm's own CSR products (native/products.c), which take the
            # reader's scipy-free chunks: scipy's product needed scipy.sparse
            # imported, 0.1-0.15 s of a sparse predict
            X = X.tocsr()
            if X.shape[1] != self.R.shape[1]:
                raise ValueError("samples have %d features, the projection %d" % (X.shape[1], self.R.shape[1]))
            with np.errstate(over="ignore", invalid="ignore"):
                proj = self._sparse_rows()(X)
        else:
            X = np.ascontiguousarray(X, dtype=np.float32)
            with np.errstate(over="ignore", invalid="ignore"):
                if self.blas:
                    proj = np.asarray(X @ self.R.T)
                else:
                    from ..predict.products import products
                    proj = products(X, self.R)
        return self.fix_signs(X, proj, _fresh=True)

    def codes(self, X):
        """uint64 [n, D/64]: the packed sign codes of the rows of X."""
        return pack_signs(self.project(X))

    def fix_signs(self, X, proj, *, _fresh=False):
        """``proj`` (X R^T from any float32 summation) with the signs of its
        near-zero entries recomputed exactly; returns a new float32 array
        (``_fresh``: ``proj`` is the caller's own product, fixed in place when
        it is C-contiguous float32 -- its copy was [rows x bits], 64 MB for a
        16,384-row chunk at 1,024 bits)."""
        D, d = self.R.shape
        proj = np.array(proj, dtype=np.float32, order="C", copy=None if _fresh else True)
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
