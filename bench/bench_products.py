"""Exact scoring's products: hsvm's FMA-chain kernel (native/products.c) against
numpy's BLAS sgemm, per core and on every thread, for dense and sparse rows;
and whether each gives a row the same bits in another block.

    .venv/bin/python bench/bench_products.py [--repeat 5] [--json]

Shapes: omniglot-242's model (29,161 classifiers x 784 features) on 2,048
dense samples; a K = 1,000 / d = 1,024 slice (20,000 classifiers); a text-like
sparse case (reuters-r52's shape: 1,326 classifiers x 30,000 features, 40
non-zeros per row).  Medians of --repeat runs after a warm-up, BLAS then
hsvm for each case and thread count; GMAC/s counts
multiply-adds of the dense product (of the stored entries for sparse rows).
"""
import argparse
import json

import numpy as np
import scipy.sparse as sp

from hsvm_cli.predict.products import products, transposed

from common import median_time

try:
    from threadpoolctl import threadpool_limits
except ImportError:                                            # pragma: no cover
    threadpool_limits = None


def _same_bits_in_other_blocks(f, X):
    whole = f(X)
    parts = np.vstack([f(X[s:s + 37]) for s in range(0, X.shape[0], 37)])
    return bool(np.array_equal(whole, parts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    cases = [("omniglot-242 shape", 2048, 784, 29161, None), ("K=1000 d=1024 slice", 1024, 1024, 20000, None),
             ("reuters-like sparse", 4096, 30000, 1326, 40)]
    for name, n, d, P, nnz in cases:
        W = rng.standard_normal((P, d)).astype(np.float32)
        if nnz is None:
            X = rng.standard_normal((n, d)).astype(np.float32)
            macs = n * d * P
            blas = (lambda A: A @ W.T)
        else:
            X = sp.random(n, d, density=nnz / d, format="csr", random_state=1, dtype=np.float32)
            macs = X.nnz * P
            WT = transposed(W)
            blas = (lambda A, WT=WT: np.asarray(A @ WT))
        WT = transposed(W)
        for threads in (1, 2):
            limit = threadpool_limits(threads) if threadpool_limits else None
            try:
                tb = median_time(lambda: blas(X), args.repeat)[0]
            finally:
                if limit is not None:
                    limit.unregister()
            th = median_time(lambda: products(X, W, WT=WT, threads=threads), args.repeat)[0]
            rows.append({"case": name, "threads": threads, "blas_s": tb, "hsvm_s": th,
                         "blas_gmacs": macs / tb / 1e9, "hsvm_gmacs": macs / th / 1e9, "ratio": tb / th})
        rows[-1]["blas_same_bits_in_blocks"] = _same_bits_in_other_blocks(blas, X)
        rows[-1]["hsvm_same_bits_in_blocks"] = _same_bits_in_other_blocks(lambda A: products(A, W, WT=WT), X)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("%-22s %7s %9s %9s %10s %10s %7s" % ("case", "threads", "BLAS s", "hsvm s", "BLAS GMAC/s", "hsvm GMAC/s",
                                               "hsvm/BLAS speed"))
    for r in rows:
        print("%-22s %7d %9.4f %9.4f %10.1f %10.1f %7.2fx" % (r["case"], r["threads"], r["blas_s"], r["hsvm_s"],
                                                             r["blas_gmacs"], r["hsvm_gmacs"], r["ratio"]))
    for r in rows:
        if "hsvm_same_bits_in_blocks" in r:
            print("%s: a row's bits in blocks of 37 rows as in one call -- BLAS %s, hsvm %s"
                  % (r["case"], r["blas_same_bits_in_blocks"], r["hsvm_same_bits_in_blocks"]))


if __name__ == "__main__":
    main()
