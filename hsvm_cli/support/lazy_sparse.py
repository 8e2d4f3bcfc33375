"""scipy.sparse, imported on first use, and the reader's own CSR chunks.

Importing scipy.sparse costs a command 0.1-0.15 s here (most of it scipy's
array-API layer importing numpy.testing, numpy.f2py and numpy.ma), more than
parsing and predicting a few thousand samples.  ``sp`` below stands for the
module: every attribute imports it, except the type tests, which answer
without it -- no object is a scipy sparse matrix before scipy.sparse has
been imported.  :class:`CsrArrays` is what ``hsvm predict``'s reader hands
the predictor when it asks for chunks without scipy (dense samples are
densified by :func:`hsvm_cli.preprocess.prepare` and never need scipy; sparse
ones become scipy matrices there)."""
import sys

import numpy as np

__all__ = ["sp", "CsrArrays", "fill_complete_indices"]


class CsrArrays:
    """A block of rows in CSR form (``data``, ``indices``, ``indptr``,
    ``shape``), canonical (indices increasing in each row, no duplicates),
    with the few operations the prediction path applies to a chunk before
    preparing it: its shape and nnz, row slices, the CSR protocol of
    :func:`hsvm_cli.preprocess.prepare`, and :meth:`to_scipy`."""

    format = "csr"
    ndim = 2
    has_canonical_format = True
    has_sorted_indices = True

    def __init__(self, data, indices, indptr, shape):
        # indices None: every row stores all shape[1] columns, in order (the
        # reader's fully dense rows); made on first use, which prepare's
        # in-place path never needs
        self.data = data
        self._indices = indices
        self.indptr = indptr
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def complete_rows(self):
        """Whether every row stores all its columns (and no indices are kept)."""
        return self._indices is None

    @property
    def indices(self):
        if self._indices is None:
            n, d = self.shape
            self._indices = np.empty(n * d, dtype=np.int32 if n * d <= np.iinfo(np.int32).max else np.int64)
            fill_complete_indices(self._indices, d)
        return self._indices

    @property
    def nnz(self):
        return int(self.indptr[-1] - self.indptr[0]) if self.indptr.shape[0] else 0

    @property
    def dtype(self):
        return self.data.dtype

    def tocsr(self):
        return self

    def with_width(self, width):
        """The same rows, ``width`` columns wide (no column beyond it is stored)."""
        keep = self._indices is None and width == self.shape[1]
        return CsrArrays(self.data, None if keep else self.indices, self.indptr, (self.shape[0], width))

    def __getitem__(self, rows):
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            return self.to_scipy()[rows]
        s, e, _ = rows.indices(self.shape[0])
        e = max(s, e)
        a, b = int(self.indptr[s]), int(self.indptr[e])
        indices = None if self._indices is None else self._indices[a:b]
        return CsrArrays(self.data[a:b], indices, self.indptr[s:e + 1] - a, (e - s, self.shape[1]))

    def to_scipy(self):
        import scipy.sparse
        X = scipy.sparse.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape, copy=False)
        X.has_sorted_indices = True
        X.has_canonical_format = True
        return X

    def toarray(self):
        return self.to_scipy().toarray()

    def astype(self, dtype, copy=True):
        return CsrArrays(self.data.astype(dtype, copy=copy), self._indices, self.indptr, self.shape)


def fill_complete_indices(out, d):
    """Write into ``out`` (1-D, a multiple of ``d`` long) the column indices
    of rows that store all ``d`` columns: 0 .. d-1, row after row."""
    if out.size:
        out.reshape(-1, d)[:] = np.arange(d, dtype=out.dtype)


def _is(x, test):
    # a CsrArrays is a CSR matrix; anything else is one of scipy's only if
    # scipy.sparse has been imported (and its own test says so)
    if isinstance(x, CsrArrays):
        return True
    module = sys.modules.get("scipy.sparse")
    return module is not None and getattr(module, test)(x)


class _LazySparse:
    """scipy.sparse on first attribute use; issparse / isspmatrix_csr without it."""

    @staticmethod
    def issparse(x):
        return _is(x, "issparse")

    @staticmethod
    def isspmatrix_csr(x):
        return _is(x, "isspmatrix_csr")

    def __getattr__(self, name):
        import scipy.sparse
        return getattr(scipy.sparse, name)


sp = _LazySparse()


def as_scipy(X):
    """X, with :class:`CsrArrays` made a scipy CSR matrix (for code that
    needs scipy's operations)."""
    return X.to_scipy() if isinstance(X, CsrArrays) else X

