"""Refine never loses to exact: `hsvm predict -H ... -k k` against
`hsvm predict --exact` on omniglot-242 for k in {K/4, K/2, K} (and the usual
small k), whole processes (start-up, model loading, parsing included) and
their --timings phases, median of --repeat runs, in one run of this script.

A wide refine reads its decision values from exact (BLAS) scoring when that
costs less than the refine's cells (predict/refine.py's measured cost ratio),
and at k = K the filter is skipped: so no k should be slower than --exact.

    .venv/bin/python bench/bench_refine_vs_exact.py          # --repeat 3; --small-d: also K = 1,000, d = 64
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

from common import REPO, cached_model, machine_line, markdown_table, shared_data  # noqa: F401

HSVM = [sys.executable, "-m", "hsvm_cli"]
OUT = REPO / "bench" / "out"


def _model_files():
    from hsvm_cli.models.hashed import hash_model, save_hash_model

    from common import load_trained
    got = load_trained("omniglot-242")
    if got is None:
        return None
    model = OUT / "omniglot-242-C0.1.hsvm"
    hbm = OUT / "omniglot-242-C0.1-b1024.hbm"
    if not hbm.exists():
        from hsvm_cli.models.ovo import load_model
        save_hash_model(hash_model(load_model(model), bits=1024, seed=0), hbm)
    return model, hbm, shared_data("omniglot-242") / "test.svm.gz"


def _run(args, repeat):
    walls, phases, stderr = [], [], ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(HSVM + args + ["--timings", "-o", "/dev/null"], capture_output=True, text=True,
                           cwd=str(REPO))
        walls.append(time.perf_counter() - t0)
        if r.returncode:
            raise SystemExit("failed: %s\n%s" % (" ".join(args), r.stderr))
        stderr = r.stderr
        phases.append(json.loads(stderr.strip().splitlines()[-1])["total"])
    acc = stderr.split("=")[1].split("%")[0].strip() if "Accuracy" in stderr else "-"
    return statistics.median(walls), statistics.median(phases), acc


def _small_d_files():
    """A K = 1,000, d = 64 synthetic model (bench/common.synthetic_classes,
    10 samples per class, 3 test samples per class), its 1024-bit hash model
    and test file: where a refine cell's fixed part, not its d products,
    decides (predict/refine.py, CELL_COST_FIXED)."""
    import numpy as np

    from hsvm_cli.io.svmlight import write_svmlight
    from hsvm_cli.models.hashed import hash_model, save_hash_model
    from hsvm_cli.models.ovo import load_model
    from hsvm_cli.train.ovo import train_ovo

    from common import synthetic_classes
    K, d = 1000, 64
    X, y, Xt, yt = synthetic_classes(K, d, 10, seed=3, n_test=3 * K, spread=1.6)
    key = "synthetic-K%d-d%d-n10" % (K, d)
    cached_model(key, lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    model, hbm, test = OUT / (key + ".hsvm"), OUT / (key + "-b1024.hbm"), OUT / (key + "-test-3000.svm")
    if not hbm.exists():
        save_hash_model(hash_model(load_model(model), bits=1024, seed=0), hbm)
    if not test.exists():
        with open(test, "wb") as fh:
            write_svmlight(fh, Xt.astype(np.float32), yt)
    return model, hbm, test


def _cell_costs(model_path, hbm_path, test_path, repeat, threads, ks=(15, 30, 60, 90, 121)):
    """In one process: the refine's own product (refine_votes, native/refine_kept.c)
    against scoring every classifier (ExactScorer.kept_votes, BLAS) at several k,
    the same votes either way; the ratio in dense cells per refine cell is what
    predict/refine.py's cost model (cell_cost) was fitted to."""
    import numpy as np

    from hsvm_cli import load_hash_model, load_model, load_svmlight
    from hsvm_cli.predict.exact import ExactScorer
    from hsvm_cli.predict.predictor import Predictor
    from hsvm_cli.predict.ranking import top_classes
    from hsvm_cli.predict.refine import cell_cost, dense_is_cheaper, refine_votes
    m = load_model(model_path)
    X, _ = load_svmlight(test_path, n_features=m.n_features)
    p = Predictor(m, load_hash_model(hbm_path), filter_k=2, threads=threads)
    Xn, hv, margins = p._filter(X, None, p.new_timings())
    scorer = ExactScorer(m, threads=threads)   # both sides on the same threads
    P, K, n = m.n_classifiers, m.n_classes, Xn.shape[0]
    rows = []
    for k in ks:
        kept = top_classes(hv, margins, k)
        own, dense = [], []
        for _ in range(repeat + 1):
            t0 = time.perf_counter()
            a = refine_votes(m, Xn, kept, lookup=p.lookup, threads=threads)
            t1 = time.perf_counter()
            b = scorer.kept_votes(Xn, kept, lookup=p.lookup)
            t2 = time.perf_counter()
            own.append(t1 - t0)
            dense.append(t2 - t1)
        own, dense = statistics.median(own[1:]), statistics.median(dense[1:])
        cells = n * k * (k - 1) // 2
        rows.append([str(k), "%.3f" % own, "%.1f" % (own / cells * 1e9), "%.3f" % dense,
                     "%.1f" % (own / cells / (dense / (n * P))), "%.1f" % cell_cost(k, K, m.n_features),
                     "dense" if dense_is_cheaper(k, m) else "refine", "%.2f" % (own / dense),
                     "%.4f" % float(np.mean(a[0] == b[0]))])
    return markdown_table(["k", "refine s", "ns per refine cell", "every classifier s",
                           "refine cell / dense cell", "cost model", "chosen", "refine / every",
                           "same votes"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="threads of the in-process cell-cost table")
    ap.add_argument("--small-d", action="store_true", help="also a K = 1,000, d = 64 synthetic model")
    args = ap.parse_args()
    files = _model_files()
    if files is None:
        print("omniglot-242 not present: skipped")
        return
    model, hbm, test = (str(p) for p in files)
    K = 242
    rows = []
    exact_wall, exact_phase, exact_acc = _run(["predict", "--exact", "-m", model, test], args.repeat)
    rows.append(["--exact", "%.2f" % exact_wall, "%.3f" % exact_phase, exact_acc, "1.00", "1.00"])
    for k in (7, 30, K // 4, K // 2, K):
        wall, phase, acc = _run(["predict", "-m", model, "-H", hbm, "-k", str(k), test], args.repeat)
        rows.append(["-H, -k %d" % k, "%.2f" % wall, "%.3f" % phase, acc, "%.2f" % (wall / exact_wall),
                     "%.2f" % (phase / exact_phase)])
    print("Command: bench_refine_vs_exact.py --repeat %d" % args.repeat)
    print("Machine: %s" % machine_line())
    print()
    print(markdown_table(["setting", "whole process s", "phases s (--timings total)", "accuracy %",
                          "whole / exact", "phases / exact"], rows))
    print()
    print("Refine cells against scoring every classifier, in one process (%d threads, median of %d):"
          % (args.threads, args.repeat))
    print()
    print(_cell_costs(model, hbm, test, args.repeat, args.threads))
    if args.small_d:
        model, hbm, test = (str(p) for p in _small_d_files())
        rows = []
        exact_wall, exact_phase, exact_acc = _run(["predict", "--exact", "-m", model, test], args.repeat)
        rows.append(["--exact", "%.2f" % exact_wall, "%.3f" % exact_phase, exact_acc, "1.00", "1.00"])
        for k in (30, 250, 350, 500):
            wall, phase, acc = _run(["predict", "-m", model, "-H", hbm, "-k", str(k), test], args.repeat)
            rows.append(["-H, -k %d" % k, "%.2f" % wall, "%.3f" % phase, acc, "%.2f" % (wall / exact_wall),
                         "%.2f" % (phase / exact_phase)])
        print()
        print("Small d: synthetic K = 1,000, d = 64, 3,000 test samples, 1024 bits:")
        print()
        print(markdown_table(["setting", "whole process s", "phases s (--timings total)", "accuracy %",
                              "whole / exact", "phases / exact"], rows))
        print()
        print(_cell_costs(model, hbm, test, args.repeat, args.threads, ks=(250, 350, 500)))


if __name__ == "__main__":
    main()
