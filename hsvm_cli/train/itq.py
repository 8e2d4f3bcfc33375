"""Iterative quantisation (ITQ; Gong & Lazebnik, "Iterative Quantization: A
Procrustean Approach to Learning Binary Codes", CVPR 2011): the target codes
``hsvm fit-circulant --targets itq`` fits a circulant hash to.

With V = (X - mu) W the data centred and projected on its top-L principal
directions W [d, L], ITQ looks for the rotation R [L, L] minimising the
quantisation loss

    min_{B in {-1,+1}^{N x L}, R^T R = I}  ||B - V R||_F^2,

alternating B = sgn(V R) and the orthogonal Procrustes step R = U S^T from
the SVD B^T V = S Sigma U^T; each step cannot increase the loss.  Codes are
sgn((x - mu) W R).

Principal directions come from LAPACK (eigh, or a truncated SVD for wide
data), whose last bits depend on the BLAS build: ITQ codes are reproducible
on one machine, not bit-identical across machines (a circulant hash fitted to
them is machine-independent once fitted)."""
import numpy as np
import scipy.sparse as sp

from ..hashing.generator import standard_normal
from ..models.circulant_hash import prepare_samples

#: Stream of hsvm_cli.hashing.generator.standard_normal of ITQ's initial
#: rotation (hashing/circulant.py lists the other circulant streams).
STREAM_ITQ = 1103
#: Widest data whose covariance is formed densely (d x d doubles); wider data
#: goes through a truncated SVD of the centred data as a linear operator.
DENSE_COVARIANCE_MAX = 4096
_CHUNK_ROWS = 4096


def itq_memory(n_samples, n_features, bits):
    """Bytes :meth:`ITQ.fit` needs, roughly: the covariance (or the truncated
    SVD's Krylov vectors), the projected data and its codes."""
    N, d, L = int(n_samples), int(n_features), int(bits)
    directions = 3 * d * d * 8 if d <= DENSE_COVARIANCE_MAX else 4 * (N + d) * max(2 * L + 1, 20) * 8
    return directions + 4 * N * L * 8 + 2 * d * L * 8 + _CHUNK_ROWS * min(d, DENSE_COVARIANCE_MAX) * 8


class ITQ:
    """Iterative quantisation (module docstring): codes sgn((x - mu) W R),
    ``mean`` mu [d], ``components`` W [d, L] the top-L principal directions,
    ``rotation`` R [L, L] orthogonal, after the normalisation ``normalize``.

    :meth:`fit` starts from a random orthogonal R (QR of Gaussians from
    stream STREAM_ITQ); ``loss_history`` holds the loss after each B-step,
    non-increasing."""

    def __init__(self, mean, components, rotation, *, normalize="l2"):
        self.mean = np.asarray(mean, dtype=np.float64)
        self.components = np.asarray(components, dtype=np.float64)
        self.rotation = np.asarray(rotation, dtype=np.float64)
        self.normalize = normalize
        self.loss_history = []

    @property
    def bits(self):
        return int(self.rotation.shape[0])

    @classmethod
    def fit(cls, X, bits, *, iterations=50, seed=0, normalize="l2"):
        """ITQ codes of ``bits`` bits (1 <= bits <= min(samples, features))
        for the rows of X (dense or CSR), ``iterations`` alternations."""
        Xp = prepare_samples(X, normalize)
        N, d = Xp.shape
        L = int(bits)
        if not 1 <= L <= min(N, d):
            raise ValueError("ITQ needs 1 <= bits <= min(samples, features) = %d, got %d" % (min(N, d), L))
        if d > DENSE_COVARIANCE_MAX and L >= N:
            raise ValueError("ITQ on more than %d features needs fewer bits than samples (%d), got %d"
                             % (DENSE_COVARIANCE_MAX, N, L))
        mu = np.asarray(Xp.mean(axis=0), dtype=np.float64).reshape(-1)
        W = _principal_directions(Xp, mu, L)
        V = _centred_times(Xp, mu, W)
        g = standard_normal(L * L, seed=seed, stream=STREAM_ITQ).reshape(L, L)
        R, _ = np.linalg.qr(g)
        losses = []
        for _ in range(int(iterations)):
            VR = V @ R
            B = np.where(VR > 0, 1.0, -1.0)
            losses.append(float(np.sum((B - VR) ** 2)))
            S, _, Ut = np.linalg.svd(B.T @ V)
            R = Ut.T @ S.T
        model = cls(mu, W, R, normalize=normalize)
        VR = V @ R
        losses.append(float(np.sum((np.where(VR > 0, 1.0, -1.0) - VR) ** 2)))
        model.loss_history = losses
        return model

    def project(self, X):
        """float64 [n, L]: (x - mu) W R after the normalisation."""
        Xp = prepare_samples(X, self.normalize)
        return _centred_times(Xp, self.mean, self.components) @ self.rotation

    def signs(self, X):
        """+1/-1 int8 [n, L] (0 -> -1)."""
        return np.where(self.project(X) > 0, 1, -1).astype(np.int8)


def _centred_times(X, mu, W):
    """(X - mu) W without densifying a sparse X."""
    return np.asarray(X @ W) - mu @ W


def _principal_directions(X, mu, L):
    """Top-L eigenvectors of the covariance (columns, by decreasing variance):
    for up to DENSE_COVARIANCE_MAX features the covariance summed over row
    chunks of the centred data and a dense eigh, else a truncated SVD of the
    centred data as a linear operator (never densified)."""
    N, d = X.shape
    if d <= DENSE_COVARIANCE_MAX:
        cov = np.zeros((d, d), dtype=np.float64)
        for s in range(0, N, _CHUNK_ROWS):
            blk = X[s:s + _CHUNK_ROWS]
            Xc = np.asarray(blk.toarray() if sp.issparse(blk) else blk, dtype=np.float64) - mu
            cov += Xc.T @ Xc
        cov /= N
        vals, vecs = np.linalg.eigh(cov)
        return vecs[:, ::-1][:, :L]
    from scipy.sparse.linalg import LinearOperator, svds
    Xf = X.astype(np.float64)
    op = LinearOperator((N, d), dtype=np.float64,
                        matvec=lambda v: np.asarray(Xf @ v).ravel() - mu @ v,
                        rmatvec=lambda u: np.asarray(Xf.T @ u).ravel() - mu * u.sum())
    _, s, vt = svds(op, k=L, random_state=0)
    order = np.argsort(-s)
    return vt[order].T
