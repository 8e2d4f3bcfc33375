"""Exact probabilities at many classes: `hsvm calibrate` (exact only, no hash
model) and `hsvm predict --exact --proba -C`, whole processes with their
--timings phases and peak memory, on a K = 1,000, d = 64 synthetic model
(bench/common.py `synthetic_classes`, 10 training samples per class, 3
validation and 3 test samples per class; the model of
bench_refine_vs_exact.py --small-d).

    .venv/bin/python bench/bench_exact_proba.py [--repeat 3] [--json]

At K = 1,000 every sample has 499,500 pair probabilities: the sigmoids, the
coupling's per-class sums over every pair (native/coupling.c) and, in
calibrate, the sharpness fit over 100 rows of them are what cost."""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from common import REPO, cached_model, machine_line, markdown_table, synthetic_classes

OUT = REPO / "bench" / "out"
HSVM = [sys.executable, "-m", "hsvm_cli"]


def files():
    from hsvm_cli.io.svmlight import write_svmlight
    from hsvm_cli.train.ovo import train_ovo
    K, d = 1000, 64
    X, y, Xv, yv = synthetic_classes(K, d, 10, seed=3, n_test=6 * K, spread=1.6)
    key = "synthetic-K%d-d%d-n10" % (K, d)
    cached_model(key, lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    val, test = OUT / (key + "-proba-val.svm"), OUT / (key + "-proba-test.svm")
    for path, (A, b) in ((val, (Xv[::2], yv[::2])), (test, (Xv[1::2], yv[1::2]))):
        if not path.exists():
            with open(path, "wb") as fh:
                write_svmlight(fh, A.astype(np.float32), b)
    return OUT / (key + ".hsvm"), val, test


def run(args):
    """Wall seconds, peak RSS (MB) and the --timings line (if any) of one
    process (the caller's only child: see measured)."""
    t0 = time.perf_counter()
    r = subprocess.run(HSVM + [str(a) for a in args], capture_output=True, text=True, cwd=str(REPO))
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit("failed: %s\n%s" % (" ".join(map(str, args)), r.stderr))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss   # the largest child's so far
    timings = None
    for line in r.stderr.splitlines():
        if line.startswith("{"):
            timings = json.loads(line)
    return wall, peak / 1024.0, timings


def measured(args):
    """run() in a process of its own, so that its peak RSS is its own."""
    code = ("import json, sys; sys.path.insert(0, %r); from bench_exact_proba import run; "
            "print(json.dumps(run(%r)))" % (str(REPO / "bench"), [str(a) for a in args]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    model, val, test = files()
    cal = OUT / "synthetic-K1000-d64-exact.cal"
    rows = []
    cal_runs = [measured(["calibrate", "-q", "-m", model, val, "-o", cal]) for _ in range(a.repeat)]
    rows.append(["calibrate (exact only), 3,000 validation rows", "%.2f" % statistics.median(r[0] for r in cal_runs),
                 "%.0f" % max(r[1] for r in cal_runs), "-"])
    pred = [measured(["predict", "-q", "--exact", "--proba", "-m", model, "-C", cal, "--timings", "-o", "/dev/null",
                      test]) for _ in range(a.repeat)]
    phases = {k: statistics.median(r[2][k] for r in pred) for k in ("score", "vote", "proba", "write", "total")}
    rows.append(["predict --exact --proba, 3,000 rows", "%.2f" % statistics.median(r[0] for r in pred),
                 "%.0f" % max(r[1] for r in pred),
                 ", ".join("%s %.2f" % (k, v) for k, v in phases.items())])
    exact = [measured(["predict", "-q", "--exact", "-m", model, "--timings", "-o", "/dev/null", test])
             for _ in range(a.repeat)]
    rows.append(["predict --exact (labels only)", "%.2f" % statistics.median(r[0] for r in exact),
                 "%.0f" % max(r[1] for r in exact),
                 "total %.2f" % statistics.median(r[2]["total"] for r in exact)])
    if a.json:
        print(json.dumps({"machine": machine_line(), "rows": rows}))
        return
    print("Command: bench_exact_proba.py --repeat %d" % a.repeat)
    print("Machine: %s" % machine_line())
    print()
    print(markdown_table(["process", "whole s (median)", "peak RSS MB (max)", "phases s (median)"], rows))


if __name__ == "__main__":
    main()
