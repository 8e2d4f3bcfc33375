"""Literal float64 re-implementations of LIBSVM's and LIBLINEAR's prediction,
over a naive parse of their model text (independent of hsvm_cli.io.tool_models
and hsvm_cli.models.imported): what the import tests compare with, next to the
tools themselves.  They are checked against the tools' own output wherever the
tools are installed."""
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def _naive_sparse(tokens):
    idx, val = [], []
    for t in tokens:
        i, v = t.split(":")
        idx.append(int(i))
        val.append(float(v))
    return idx, val


def _csr(rows, width):
    indptr = np.cumsum([0] + [len(r[0]) for r in rows])
    indices = np.array([i - 1 for r in rows for i in r[0]], dtype=np.int64)
    data = np.array([v for r in rows for v in r[1]], dtype=np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), width))


def libsvm_reference(model_path, X):
    """svm.cpp's svm_predict_values, literally, in float64: kernel values per
    SV, pair (i, j) summing sv_coef[j-1] over class i's SVs and sv_coef[i] over
    class j's, minus rho; i wins on > 0; the first label with the most votes.
    Returns (labels, decisions [n, P], votes [n, K] in LIBSVM's label order,
    LIBSVM's labels)."""
    lines = Path(model_path).read_text().splitlines()
    head, k = {}, 0
    while lines[k].strip() != "SV":
        t = lines[k].split()
        head[t[0]] = t[1:]
        k += 1
    K = int(head["nr_class"][0])
    labels = [int(v) for v in head["label"]]
    nsv = [int(v) for v in head["nr_sv"]]
    rho = [float(v) for v in head["rho"]]
    coef, svs = [], []
    for line in lines[k + 1:]:
        t = line.split()
        if t:
            coef.append([float(v) for v in t[:K - 1]])
            svs.append(_naive_sparse(t[K - 1:]))
    sv_coef = np.array(coef).T                               # [K-1, l]
    width = max(X.shape[1], max((max(r[0]) for r in svs if r[0]), default=0))
    X = sp.csr_matrix(X, dtype=np.float64)
    X = sp.hstack([X, sp.csr_matrix((X.shape[0], width - X.shape[1]))]).tocsr()
    kvalue = np.asarray((X @ _csr(svs, width).T).todense())    # [n, l]
    start = np.concatenate([[0], np.cumsum(nsv)[:-1]])
    n = X.shape[0]
    dec = np.empty((n, K * (K - 1) // 2))
    votes = np.zeros((n, K), dtype=np.int64)
    p = 0
    for i in range(K):
        for j in range(i + 1, K):
            si, sj, ci, cj = start[i], start[j], nsv[i], nsv[j]
            s = kvalue[:, si:si + ci] @ sv_coef[j - 1, si:si + ci] + kvalue[:, sj:sj + cj] @ sv_coef[i, sj:sj + cj]
            dec[:, p] = s - rho[p]
            votes[:, i] += dec[:, p] > 0
            votes[:, j] += ~(dec[:, p] > 0)
            p += 1
    return np.array(labels)[np.argmax(votes, axis=1)], dec, votes, labels


def liblinear_reference(model_path, X):
    """linear.cpp's predict_values in float64: features beyond nr_feature
    ignored, the bias feature appended; returns (labels, scores [n, nr_w],
    labels in LIBLINEAR's order)."""
    lines = Path(model_path).read_text().splitlines()
    head, k = {}, 0
    while lines[k].strip() != "w":
        t = lines[k].split()
        head[t[0]] = t[1:]
        k += 1
    labels = [int(v) for v in head["label"]]
    nf, bias = int(head["nr_feature"][0]), float(head["bias"][0])
    w = np.array([[float(v) for v in line.split()] for line in lines[k + 1:] if line.strip()])
    X = sp.csr_matrix(X, dtype=np.float64)[:, :nf]
    if X.shape[1] < nf:
        X = sp.hstack([X, sp.csr_matrix((X.shape[0], nf - X.shape[1]))]).tocsr()
    scores = np.asarray(X @ w[:nf])
    if bias >= 0:
        scores = scores + bias * w[nf]
    if len(labels) == 2:
        # nr_class == 2: the first column decides, whatever nr_w (Crammer-Singer has 2).
        pred = np.where(scores[:, 0] > 0, labels[0], labels[1])
    else:
        pred = np.array(labels)[np.argmax(scores, axis=1)]
    return pred, scores, labels


def rounding_bound(W, b, X):
    """A bound on |float32 w·x + b − exact| for every (sample, row): float32
    inputs, W and the sum each add relative errors of 2^-24 per term (with
    slack: (d + 4) 2^-23 times the sum of the magnitudes)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    mag = np.asarray(abs(X) @ np.abs(np.asarray(W, dtype=np.float64)).T) + np.abs(np.asarray(b, dtype=np.float64))
    d = max(1, int(np.diff(X.indptr).max()) if X.nnz else 1)
    return (d + 4) * 2.0 ** -23 * mag
