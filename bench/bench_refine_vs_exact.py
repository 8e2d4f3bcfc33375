"""Refine never loses to exact: `hsvm predict -H ... -k k` against
`hsvm predict --exact` on omniglot-242 for k in {K/4, K/2, K} (and the usual
small k), whole processes (start-up, model loading, parsing included) and
their --timings phases, median of --repeat runs, in one run of this script.

A wide refine reads its decision values from exact (BLAS) scoring when that
costs less than the refine's cells (predict/refine.py's measured cost ratio),
and at k = K the filter is skipped: so no k should be slower than --exact.

    .venv/bin/python bench/bench_refine_vs_exact.py          # --repeat 3
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
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


if __name__ == "__main__":
    main()
