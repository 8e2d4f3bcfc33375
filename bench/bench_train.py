#!/usr/bin/env python3
"""Throughput of one-vs-one training (hsvm_cli.train.liblinear.train_pairs).

For each data set: total wall seconds, seconds inside LIBLINEAR's ``train``
(summed over workers), classifiers per second and the overhead ratio
total/solver, as medians over ``--repeat`` runs.  With one worker the ratio
shows how much the Python side adds to the solver; with more workers the
solver seconds are CPU seconds, so the ratio falls below 1 when the work
parallelises.

    .venv/bin/python bench/bench_train.py [--json] [--jobs N] [--repeat R]
"""
import argparse
import json
import os
import platform
import statistics
import sys

import numpy as np
import scipy.sparse as sp

from hsvm_cli.preprocess import l2_normalize
from hsvm_cli.train.liblinear import train_pairs

from common import shared_data


def load(name, n_features, labels=None):
    from sklearn.datasets import load_svmlight_file
    root = shared_data(name)
    if root is None:
        return None
    path = root / "train.svm.gz"
    X, y = load_svmlight_file(str(path), n_features=n_features)
    y = y.astype(np.int64)
    if labels is not None:
        keep = np.isin(y, labels)
        X, y = X[keep], y[keep]
    return l2_normalize(X), y


def synthetic(K=300, d=1000, per_class=50, seed=0):
    # Class means far enough apart to be separable in general, close enough
    # that the solver still has work to do.
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(K, d))
    X = np.repeat(means, per_class, axis=0) + 2.0 * rng.normal(size=(K * per_class, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.repeat(np.arange(1, K + 1), per_class)
    return sp.csr_matrix(X), y


DATASETS = [
    ("binalpha-36 A..Z (K=26)", lambda: load("binalpha-36", 320, labels=np.arange(11, 37))),
    ("reuters-r52 train (K=52)", lambda: load("reuters-r52", 11698)),
    ("omniglot-242 train (K=242)", lambda: load("omniglot-242", 784)),
    ("synthetic K=300 d=1000 50/class", lambda: synthetic()),
]


def measure(X, y, jobs, repeat):
    runs = []
    for _ in range(repeat):
        m = train_pairs(X, y, jobs=jobs)
        runs.append((m.training.wall_seconds, m.training.solver_seconds, m.n_classifiers))
    total = statistics.median(r[0] for r in runs)
    solver = statistics.median(r[1] for r in runs)
    n = runs[0][2]
    return {
        "classifiers": n,
        "total_s": total,
        "solver_s": solver,
        "classifiers_per_s": n / total,
        "overhead_ratio": total / solver,
        "solver_share": solver / total,
        "runs": repeat,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--jobs", type=int, action="append",
                    help="worker processes (repeatable; default: 1 and 2)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case, median reported")
    args = ap.parse_args(argv)
    jobs_list = args.jobs or [1, 2]

    results = []
    for name, loader in DATASETS:
        data = loader()
        if data is None:
            print("skipping %s: data set not found" % name, file=sys.stderr)
            continue
        X, y = data
        # Lazy imports (tqdm) and first-touch costs stay out of the measured runs.
        keep = np.isin(y, np.unique(y)[:2])
        train_pairs(X[keep], y[keep])
        for jobs in jobs_list:
            r = measure(X, y, jobs, args.repeat)
            r.update(dataset=name, jobs=jobs, n=int(X.shape[0]), d=int(X.shape[1]),
                     K=int(np.unique(y).shape[0]))
            results.append(r)
            if not args.json:
                print("%-34s jobs=%d  %6d clf  total %7.2f s  solver %7.2f s  %8.0f clf/s  "
                      "total/solver %.2f" % (name, jobs, r["classifiers"], r["total_s"],
                                             r["solver_s"], r["classifiers_per_s"],
                                             r["overhead_ratio"]), flush=True)
    if args.json:
        json.dump({"python": platform.python_version(), "cpus": os.cpu_count(),
                   "results": results}, sys.stdout, indent=2)
        print()
    else:
        print()
        print("| data | K | n | d | jobs | classifiers | total s | solver s | classifiers/s | total/solver |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            print("| %s | %d | %d | %d | %d | %d | %.2f | %.2f | %.0f | %.2f |"
                  % (r["dataset"], r["K"], r["n"], r["d"], r["jobs"], r["classifiers"],
                     r["total_s"], r["solver_s"], r["classifiers_per_s"], r["overhead_ratio"]))


if __name__ == "__main__":
    main()
