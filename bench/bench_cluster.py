#!/usr/bin/env python3
"""Cluster runs side by side: plain processes, Dask workers, Slurm array tasks.

Training: omniglot-242 (K=242, 29,161 pairs, d=784, C=0.1, seed 1) by pair
blocks -- N plain processes each run ``hsvm train-ovo --pairs i/N`` and
``hsvm merge-models`` joins the parts; ``train_ovo_dask`` on a LocalCluster of
N single-threaded worker processes; a Slurm job array of N tasks (a private
single-node Slurm started by tests/slurm/slurm.py, one CPU per task) running
the same command, then the merge.  Every run's model is checked
byte-identical to the single-process ``hsvm train-ovo`` file.  Prediction:
exact prediction of omniglot-242's test set repeated ``--copies`` times as one
plain file, by N byte-range shards (``hsvm predict --shard i/N`` as plain
processes and Slurm tasks, Dask ``predict_shards``), outputs concatenated and
checked equal to the single-process output.  Then the merge's cost, and a
projection to K=5,000 on 100 nodes.

Each task gets one CPU (OMP_NUM_THREADS=1 for plain processes,
--cpus-per-task=1 under Slurm, one thread per Dask worker).  "wall" is end to
end as a user waits for it (process start, data loading, training, part
writing, merge; for Slurm, `sbatch --wait` includes its own polling, every
2 s and then less often); "task span" is from the first task's start to the
last task's end as the tasks report them.  Dask's cluster start-up is
reported apart.

    .venv/bin/python bench/bench_cluster.py [--repeat R] [--copies C] [--no-slurm] [--json]
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import REPO, machine_line, markdown_table, shared_data

sys.path.insert(0, str(REPO / "tests" / "slurm"))

from hsvm_cli.io.shard import Shard  # noqa: E402
from hsvm_cli.models.ovo import OvoModel  # noqa: E402
from hsvm_cli.models.pairs import canonical_pairs  # noqa: E402
from hsvm_cli.models.parts import ModelPart, save_part  # noqa: E402
from hsvm_cli.support.resources import prediction_shard_memory, training_block_memory  # noqa: E402
from hsvm_cli.train.merge import merge_models  # noqa: E402
from hsvm_cli.train.ovo import read_training_file  # noqa: E402
from hsvm_cli.train.pair_blocks import block_bounds, pair_costs  # noqa: E402

OUT = REPO / "bench" / "out" / "cluster"
TRAIN_OPTIONS = ["-c", "0.1", "--seed", "1"]

# Runs the hsvm command in this process and records when it ran and its peak
# resident memory (VmHWM: unlike ru_maxrss it does not carry the parent's
# peak through fork and exec).
TASK = """\
import atexit, json, sys, time
t0 = time.time()
report, sys.argv = sys.argv[1], ["hsvm"] + sys.argv[2:]

def done():
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
    json.dump({"start": t0, "end": time.time(), "maxrss_kb": int(hwm)}, open(report, "w"))
atexit.register(done)
from hsvm_cli.cli.entry import main
main()
"""


def task_env():
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def task_cmd(report, *args):
    return [sys.executable, str(OUT / "task.py"), str(report), *map(str, args)]


def read_reports(paths):
    reps = [json.load(open(p)) for p in paths]
    span = max(r["end"] for r in reps) - min(r["start"] for r in reps)
    return span, max(r["maxrss_kb"] for r in reps) / 1024


def run_all(cmds):
    procs = [subprocess.Popen(c, cwd=OUT, env=task_env(), stdin=subprocess.DEVNULL) for c in cmds]
    if any(p.wait() for p in procs):
        raise RuntimeError("a task failed")


def _vm_hwm_kb():
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM:")).split()[1])


# ------------------------------------------------------------------ training

def part_cmds(n, tag):
    return [task_cmd("%s%d-%d.json" % (tag, n, i), "train-ovo", "train.svm", "--pairs", "%d/%d" % (i, n),
                     *TRAIN_OPTIONS, "-q", "-o", "%s%d-%d.part" % (tag, n, i)) for i in range(n)]


def merge(n, tag):
    parts = ["%s%d-%d.part" % (tag, n, i) for i in range(n)]
    os.chdir(OUT)
    rep = merge_models(parts, "model.hsvm")
    shutil.move("model.hsvm", "%s%d.hsvm" % (tag, n))
    return rep.seconds, OUT / ("%s%d.hsvm" % (tag, n))


def train_plain(n):
    t0 = time.perf_counter()
    run_all(part_cmds(n, "plain"))
    secs, model = merge(n, "plain")
    wall = time.perf_counter() - t0
    span, rss = read_reports([OUT / ("plain%d-%d.json" % (n, i)) for i in range(n)])
    return {"wall": wall, "span": span, "merge": secs, "maxrss_mb": rss, "model": model}


def train_dask(X, y, sha, n):
    from hsvm_cli.cluster.dask_backend import connect, train_ovo_dask
    t0 = time.perf_counter()
    with connect("local:%d" % n) as client:
        client.wait_for_workers(n)
        up = time.perf_counter() - t0
        out = OUT / ("dask%d.hsvm" % n)
        t1 = time.perf_counter()
        train_ovo_dask(X, y, client, output=out, C=0.1, seed=1, train_path="train.svm", train_sha256=sha,
                       argv=["hsvm", "train-ovo", "train.svm", *TRAIN_OPTIONS, "-o", "model.hsvm"])
        wall = time.perf_counter() - t1
        mem = client.run(_vm_hwm_kb)
    return {"wall": wall, "span": wall, "startup": up, "maxrss_mb": max(mem.values()) / 1024, "model": out}


def slurm_array(cluster, n, cmd_line, name):
    script = OUT / ("%s%d.sh" % (name, n))
    env = task_env()
    script.write_text("#!/bin/bash\nset -euo pipefail\nexport OMP_NUM_THREADS=1 PYTHONPATH=%s\ncd %s\n%s\n"
                      % (env["PYTHONPATH"], OUT, cmd_line))
    script.chmod(0o755)
    t0 = time.perf_counter()
    res = cluster.sbatch("--wait", "--array=0-%d" % (n - 1), "--cpus-per-task=1",
                         "-o", str(OUT / ("%s%d-%%a.log" % (name, n))), script)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError("sbatch failed: %s %s\n%s" % (res.stdout, res.stderr, cluster.logs()))
    return wall


def train_slurm(cluster, n):
    line = ('%s %s slurm%d-$SLURM_ARRAY_TASK_ID.json train-ovo train.svm '
            '--pairs "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" %s -q -o slurm%d-$SLURM_ARRAY_TASK_ID.part'
            % (sys.executable, OUT / "task.py", n, " ".join(TRAIN_OPTIONS), n))
    t0 = time.perf_counter()
    sb = slurm_array(cluster, n, line, "train")
    secs, model = merge(n, "slurm")
    wall = time.perf_counter() - t0
    span, rss = read_reports([OUT / ("slurm%d-%d.json" % (n, i)) for i in range(n)])
    return {"wall": wall, "span": span, "sbatch": sb, "merge": secs, "maxrss_mb": rss, "model": model}


# ---------------------------------------------------------------- prediction

def predict_plain(n):
    t0 = time.perf_counter()
    run_all([task_cmd("pplain%d-%d.json" % (n, i), "predict", "test.svm", "-m", "ref.hsvm", "--shard",
                      "%d/%d" % (i, n), "-q", "-o", "pplain%d-%d.txt" % (n, i)) for i in range(n)])
    data = b"".join((OUT / ("pplain%d-%d.txt" % (n, i))).read_bytes() for i in range(n))
    wall = time.perf_counter() - t0
    span, rss = read_reports([OUT / ("pplain%d-%d.json" % (n, i)) for i in range(n)])
    return {"wall": wall, "span": span, "maxrss_mb": rss, "output": data}


def predict_dask(n):
    from hsvm_cli.cluster.dask_backend import PredictTask, connect, predict_shards
    t0 = time.perf_counter()
    with connect("local:%d" % n) as client:
        client.wait_for_workers(n)
        up = time.perf_counter() - t0
        out = OUT / ("pdask%d.txt" % n)
        t1 = time.perf_counter()
        predict_shards(client, OUT / "test.svm", PredictTask(OUT / "ref.hsvm"), out, n_shards=n)
        wall = time.perf_counter() - t1
        mem = client.run(_vm_hwm_kb)
    return {"wall": wall, "span": wall, "startup": up, "maxrss_mb": max(mem.values()) / 1024,
            "output": out.read_bytes()}


def predict_slurm(cluster, n):
    line = ('%s %s pslurm%d-$SLURM_ARRAY_TASK_ID.json predict test.svm -m ref.hsvm '
            '--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" -q -o pslurm%d-$SLURM_ARRAY_TASK_ID.txt'
            % (sys.executable, OUT / "task.py", n, n))
    t0 = time.perf_counter()
    sb = slurm_array(cluster, n, line, "predict")
    data = b"".join((OUT / ("pslurm%d-%d.txt" % (n, i))).read_bytes() for i in range(n))
    wall = time.perf_counter() - t0
    span, rss = read_reports([OUT / ("pslurm%d-%d.json" % (n, i)) for i in range(n)])
    return {"wall": wall, "span": span, "sbatch": sb, "maxrss_mb": rss, "output": data}


# --------------------------------------------------------------------- merge

def synthetic_parts(K, d, n):
    """Parts of a K-class model with random W (no training): the merge's cost
    depends on bytes, not on how W was found."""
    pa, pb = canonical_pairs(K)
    bounds = block_bounds(pair_costs(np.full(K, 10)), n)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        s, e = int(bounds[i]), int(bounds[i + 1])
        m = OvoModel(classes=np.arange(1, K + 1, dtype=np.int64), pair_a=pa[s:e], pair_b=pb[s:e],
                     W=rng.standard_normal((e - s, d), dtype=np.float32), b=np.zeros(e - s, np.float32),
                     params={"seed": 0}, provenance={"command": "synthetic", "train_sha256": None})
        p = OUT / ("syn-%d.part" % i)
        save_part(ModelPart(model=m, block=Shard(i, n), pair_start=s, pair_stop=e, n_pairs=len(pa)), p)
        paths.append(p)
    return paths


def measure_merge(paths, out, repeat):
    times = []
    for _ in range(repeat):
        os.sync()
        times.append(merge_models(paths, out).seconds)
    size = out.stat().st_size
    copy_times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        shutil.copyfile(out, str(out) + ".copy")
        copy_times.append(time.perf_counter() - t0)
    os.unlink(str(out) + ".copy")
    return size, statistics.median(times), statistics.median(copy_times)


# ------------------------------------------------------------------- driver

def median_runs(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    out = dict(runs[-1])
    for k, v in runs[0].items():
        if isinstance(v, float):
            out[k] = statistics.median(r[k] for r in runs)
    return out


def notes(r):
    extra = []
    if "merge" in r:
        extra.append("merge %.2f s" % r["merge"])
    if "sbatch" in r:
        extra.append("sbatch --wait %.1f s" % r["sbatch"])
    if "startup" in r:
        extra.append("cluster start %.1f s" % r["startup"])
    return "; ".join(extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--copies", type=int, default=8, help="copies of the test set in the prediction input")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    root = shared_data("omniglot-242")
    if root is None:
        sys.exit("omniglot-242 not found")
    OUT.mkdir(parents=True, exist_ok=True)
    os.chdir(OUT)
    (OUT / "task.py").write_text(TASK)
    (OUT / "train.svm").write_bytes(gzip.decompress((root / "train.svm.gz").read_bytes()))
    one = gzip.decompress((root / "test.svm.gz").read_bytes())
    (OUT / "test.svm").write_bytes(one * args.copies)
    n_test = one.count(b"\n") * args.copies

    X, y, sha = read_training_file(str(OUT / "train.svm"))
    K = len(np.unique(y))
    P = K * (K - 1) // 2
    t0 = time.perf_counter()
    run_all([task_cmd("single.json", "train-ovo", "train.svm", *TRAIN_OPTIONS, "-q", "-o", "model.hsvm")])
    single_train = time.perf_counter() - t0
    shutil.move(OUT / "model.hsvm", OUT / "ref.hsvm")
    ref_bytes = (OUT / "ref.hsvm").read_bytes()
    single_train_rss = read_reports([OUT / "single.json"])[1]
    t0 = time.perf_counter()
    run_all([task_cmd("psingle.json", "predict", "test.svm", "-m", "ref.hsvm", "-q", "-o", "ref.txt")])
    single_pred = time.perf_counter() - t0
    ref_pred = (OUT / "ref.txt").read_bytes()
    single_pred_rss = read_reports([OUT / "psingle.json"])[1]

    cluster, slurm_note = None, ""
    if not args.no_slurm:
        try:
            from slurm import LocalSlurm
            cluster = LocalSlurm().start()
        except Exception as exc:   # the benchmark still reports the rest
            slurm_note = "Slurm unavailable: %s" % str(exc).splitlines()[0]

    rows_train, rows_pred, results = [], [], {}
    try:
        for n in (1, 2):
            modes = [("plain processes", lambda: train_plain(n)),
                     ("Dask LocalCluster", lambda: train_dask(X, y, sha, n))]
            if cluster is not None:
                modes.append(("Slurm array", lambda: train_slurm(cluster, n)))
            for name, fn in modes:
                r = median_runs(fn, args.repeat)
                same = Path(r["model"]).read_bytes() == ref_bytes
                results["train %s %d" % (name, n)] = {k: v for k, v in r.items() if k != "model"}
                rows_train.append([name, n, "%.2f" % r["wall"], "%.2f" % r["span"], "%.0f" % (P / r["wall"]),
                                   "%.0f" % r["maxrss_mb"], "yes" if same else "NO", notes(r)])
        for n in (1, 2):
            modes = [("plain processes", lambda: predict_plain(n)), ("Dask LocalCluster", lambda: predict_dask(n))]
            if cluster is not None:
                modes.append(("Slurm array", lambda: predict_slurm(cluster, n)))
            for name, fn in modes:
                r = median_runs(fn, args.repeat)
                same = r["output"] == ref_pred
                results["predict %s %d" % (name, n)] = {k: v for k, v in r.items() if k != "output"}
                rows_pred.append([name, n, "%.2f" % r["wall"], "%.2f" % r["span"], "%.0f" % (n_test / r["wall"]),
                                  "%.0f" % (n_test / r["span"]), "%.0f" % r["maxrss_mb"], "yes" if same else "NO",
                                  notes(r)])
    finally:
        if cluster is not None:
            cluster.stop()

    merge_rows = []
    for label, paths in (("omniglot-242, 2 parts", [OUT / ("plain2-%d.part" % i) for i in range(2)]),
                         ("synthetic K=600 d=784, 8 parts", synthetic_parts(600, 784, 8))):
        size, secs, copy = measure_merge(paths, OUT / "merged.hsvm", args.repeat)
        merge_rows.append([label, "%.1f" % (size / 1e6), "%.2f" % secs, "%.0f" % (size / 1e6 / secs),
                           "%.2f" % copy, "%.1f" % (secs / copy)])
        results["merge " + label] = {"bytes": size, "seconds": secs, "copy_seconds": copy}
    for p in OUT.glob("syn-*.part"):
        p.unlink()

    d = X.shape[1]
    t_pair = results["train plain processes 1"]["span"] / P
    K5 = 5000
    P5 = K5 * (K5 - 1) // 2
    W_bytes = P5 * d * 4
    syn = results["merge synthetic K=600 d=784, 8 parts"]
    merge_rate = syn["bytes"] / syn["seconds"]
    est = training_block_memory(n_rows=X.shape[0], nnz=X.nnz, n_features=d, n_classifiers=P)
    Xt_nnz = one.count(b":")
    est_pred = prediction_shard_memory(n_features=d, n_classes=K, n_classifiers=P, chunk_rows=min(16384, n_test),
                                       nnz_per_row=Xt_nnz / one.count(b"\n"))
    proj = {"pairs": P5, "W_bytes": W_bytes, "t_pair_s": t_pair, "cpu_hours": P5 * t_pair / 3600,
            "wall_100_nodes_1_core_min": P5 * t_pair / 100 / 60, "wall_100_nodes_32_cores_s": P5 * t_pair / 3200,
            "merge_minutes": W_bytes / merge_rate / 60, "refine_k24_bytes_per_sample": 24 * 23 // 2 * d * 4,
            "hash_1024_bytes": P5 * (1024 // 8 + 4) + P5 * 8}
    results["projection"] = proj
    results["estimates"] = {"training_block_all_pairs": est, "prediction_shard": est_pred}
    results["single"] = {"train_s": single_train, "train_rss_mb": single_train_rss, "predict_s": single_pred,
                         "predict_rss_mb": single_pred_rss}

    if args.json:
        print(json.dumps(results, indent=1, default=str))
        return
    print("Command: .venv/bin/python bench/bench_cluster.py --repeat %d --copies %d%s\n"
          % (args.repeat, args.copies, " --no-slurm" if args.no_slurm else ""))
    print("Machine: %s; %d CPUs; load average %.1f at the end\n"
          % (machine_line(), len(os.sched_getaffinity(0)), os.getloadavg()[0]))
    print("omniglot-242: K=%d, %d pairs, n=%d, d=%d, nnz=%d; one `hsvm` process: train-ovo %.2f s, exact predict "
          "of %d samples %.2f s (whole commands).  Median of %d runs.  %s\n"
          % (K, P, X.shape[0], d, X.nnz, single_train, n_test, single_pred, args.repeat, slurm_note))
    print("### Training (%s pairs)\n" % format(P, ","))
    print(markdown_table(["engine", "workers/tasks", "wall s", "task span s", "pairs/s (wall)", "max RSS MB/task",
                          "= single run", "notes"], rows_train))
    print("\n### Exact prediction (%d samples, %.1f MB plain file, byte-range shards)\n"
          % (n_test, (OUT / "test.svm").stat().st_size / 1e6))
    print(markdown_table(["engine", "workers/tasks", "wall s", "task span s", "samples/s (wall)", "samples/s (span)",
                          "max RSS MB/task", "= single run", "notes"], rows_pred))
    print("\n### Merge (streamed: one part mapped at a time, checked and copied 16 MiB at a time)\n")
    print(markdown_table(["parts", "model MB", "merge s", "MB/s", "cp of the same file s", "merge / cp"], merge_rows))
    print("\n### Projection to K = 5,000 on 100 nodes (d = %d)\n" % d)
    print("- pairs K(K-1)/2 = %s; model W = pairs x d x 4 bytes = %.1f GB (+ b %.0f MB, pairs %.0f MB)"
          % (format(P5, ","), W_bytes / 1e9, P5 * 4 / 1e6, P5 * 8 / 1e6))
    print("- measured %.0f us per pair (1 process: task span / pairs; omniglot pairs have 30 rows of 784 features): "
          "%.2f CPU hours for K=5,000; 100 nodes x 1 task: %.0f s; 100 nodes x 32 tasks: %.1f s (plus each task's "
          "reading of the training file).  The solver's cost grows about linearly with the rows of a pair: with 300 "
          "samples per class expect about 20 times as much"
          % (t_pair * 1e6, proj["cpu_hours"], proj["wall_100_nodes_1_core_min"] * 60,
             proj["wall_100_nodes_32_cores_s"]))
    print("- exact prediction: K(K-1)/2 x d x 2 = %.1f GFLOP per sample (every row of W read per chunk of samples); "
          "the refine with k=24 evaluates 276 classifiers" % (P5 * d * 2 / 1e9))
    print("- merge at the measured %.0f MB/s: %.0f min for one writer (sequential read of the parts and write)"
          % (merge_rate / 1e6, proj["merge_minutes"]))
    print("- hash model at D=1024: %.1f GB (codes D/8 + theta 4 bytes per classifier + pairs)"
          % (proj["hash_1024_bytes"] / 1e9))
    print("- refine with k=24 reads 276 rows of W per sample = %.0f KB scattered over the %.0f GB file: from the "
          "page cache that is memory bandwidth; from disk about 276-552 random 4 KB page reads per sample, so "
          "prediction nodes want W resident (RAM >= %.0f GB) or on a local SSD"
          % (proj["refine_k24_bytes_per_sample"] / 1e3, W_bytes / 1e9, W_bytes / 1e9))
    print("\nPer-task memory (support/resources.py; the runtime, about 50 MB, not included in the estimates): "
          "training all %s pairs %.0f MB estimated, %.0f MB peak RSS measured (one `hsvm train-ovo`); exact "
          "prediction %.0f MB estimated, %.0f MB measured (one `hsvm predict`)"
          % (format(P, ","), est["total"] / 1e6, single_train_rss, est_pred["total"] / 1e6, single_pred_rss))


if __name__ == "__main__":
    main()
