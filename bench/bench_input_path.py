"""The input path on dense text: parse + normalise on one thread, and whole
`hsvm predict` processes (hashed 256 bits, k = 3, against --exact) with their
phases, on the synthetic K = 300, d = 1,000 model of bench_filter.py.

    .venv/bin/python bench/bench_input_path.py [--n-test 8400] [--repeat 3] [--json]

Users pay for the whole process, so the speed-up that matters is the whole
hashed process against the whole exact one; the phases say where the time
goes (parse: the C reader; normalise: float32, L2 and densify in one C pass,
native/prepare.c).  The one-thread rate reads the same file through
iter_svmlight + prepare in this process as `hsvm predict` does (float32
chunks, prepared in place when fully dense), timed by CPU time so that a loaded
machine does not lower it."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from hsvm_cli.io.svmlight import iter_svmlight, write_svmlight
from hsvm_cli.models.hashed import hash_model, save_hash_model
from hsvm_cli.preprocess import give_to_prepare, prepare
from hsvm_cli.support.timing import Timings, timed_chunks

from common import REPO, cached_model, machine_line, markdown_table, synthetic_classes

K, D, PER_CLASS, SPREAD = 300, 1000, 50, 5.0
OUT = REPO / "bench" / "out"
HSVM = [sys.executable, "-m", "hsvm_cli"]


def files(n_test):
    from hsvm_cli.train.ovo import train_ovo
    X, y, Xt, yt = synthetic_classes(K, D, PER_CLASS, seed=1, n_test=n_test, spread=SPREAD)
    key = "synthetic-K%d-d%d-n%d-s%g" % (K, D, PER_CLASS, SPREAD)
    cached_model(key, lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    model_path = OUT / (key + ".hsvm")
    hbm_path = OUT / (key + "-b256.hbm")
    if not hbm_path.exists():
        from hsvm_cli.models.ovo import load_model
        save_hash_model(hash_model(load_model(model_path), bits=256, seed=0), hbm_path)
    test_path = OUT / ("synthetic-K%d-d%d-test-%d.svm" % (K, D, Xt.shape[0]))
    if not test_path.exists():
        with open(test_path, "wb") as fh:
            write_svmlight(fh, Xt.astype(np.float32), yt)
    return model_path, hbm_path, test_path, yt


def one_thread_rate(path, repeat):
    """MB/s of text through parse + normalise, by CPU time, median of runs."""
    from hsvm_cli.support.threads import single_threaded_blas
    size = os.path.getsize(path)
    runs = []
    with single_threaded_blas():
        for _ in range(repeat + 1):
            t = Timings()
            c0 = time.process_time()
            # as hsvm predict reads: float32 chunks, prepared in place
            for chunk in timed_chunks(iter_svmlight(path, n_features=D, chunk_rows=16384, dtype=np.float32), t):
                prepare("l2", give_to_prepare(chunk.X), timings=t)
            cpu = time.process_time() - c0
            ph = t.as_dict()
            runs.append((cpu, ph.get("parse", 0.0), ph.get("normalise", 0.0)))
    runs = runs[1:]  # the first run warms the page cache
    cpu = statistics.median(r[0] for r in runs)
    return {"bytes": size, "cpu_s": cpu, "mb_per_s": size / 1e6 / cpu,
            "parse_s": statistics.median(r[1] for r in runs), "normalise_s": statistics.median(r[2] for r in runs)}


def run_predict(args, labels):
    pred_path = OUT / "input-path-pred.txt"
    t0 = time.perf_counter()
    r = subprocess.run(HSVM + ["predict", "-q", "--timings", "-o", str(pred_path)] + [str(a) for a in args],
                       capture_output=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode())
    pred = np.loadtxt(pred_path, dtype=np.int64)
    return wall, float((pred == labels).mean()), json.loads(r.stderr.decode().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-test", type=int, default=8400)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    model_path, hbm_path, test_path, yt = files(a.n_test)
    rate = one_thread_rate(test_path, a.repeat)
    settings = [("exact", ["--exact", "-m", model_path, test_path]),
                ("hashed 256 bits, k=3", ["-m", model_path, "-H", hbm_path, "--bits", "256", "-k", "3", test_path])]
    runs = {name: [] for name, _ in settings}
    for _ in range(a.repeat):  # interleaved, so that load from other jobs falls on both
        for name, args in settings:
            runs[name].append(run_predict(args, yt))
    rows, result = [], {"machine": machine_line(), "K": K, "d": D, "n_test": int(yt.shape[0]),
                        "text_mb": rate["bytes"] / 1e6, "one_thread": rate, "processes": {}}
    med = {}
    for name, rs in runs.items():
        i = int(np.argsort([r[0] for r in rs])[len(rs) // 2])
        wall, acc, ph = rs[i]
        med[name] = wall
        compute = sum(ph.get(p, 0.0) for p in ("hash", "filter", "refine", "score", "vote", "decide", "dag"))
        result["processes"][name] = {"wall_s": wall, "accuracy": acc, "phases": ph, "compute_s": compute,
                                     "all_walls": [r[0] for r in rs]}
        rows.append([name, "%.2f" % wall, "%.2f" % (100 * acc), "%.2f" % ph.get("parse", 0),
                     "%.3f" % ph.get("normalise", 0), "%.3f" % compute,
                     "%.1f%%" % (100 * ph.get("normalise", 0) / compute) if compute else "-"])
    ratio = med["exact"] / med["hashed 256 bits, k=3"]
    result["whole_process_speedup"] = ratio
    if a.json:
        print(json.dumps(result, indent=1))
        return
    print(machine_line())
    print("%s: %.1f MB of text, %d samples" % (test_path.name, rate["bytes"] / 1e6, yt.shape[0]))
    print("one thread, parse + normalise: %.0f MB/s (CPU %.2f s: parse %.2f s, normalise %.2f s; median of %d)"
          % (rate["mb_per_s"], rate["cpu_s"], rate["parse_s"], rate["normalise_s"], a.repeat))
    print()
    print(markdown_table(["process", "whole s (median)", "accuracy %", "parse s", "normalise s", "compute s",
                          "normalise / compute"], rows))
    print()
    print("whole hashed process vs whole exact process: %.1fx" % ratio)


if __name__ == "__main__":
    main()
