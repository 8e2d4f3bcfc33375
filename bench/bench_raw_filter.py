"""Hashed prediction of a model on unnormalised features (`--normalize none`,
as `-c auto --normalize auto` picks for omniglot-242, and as every imported
LIBSVM model is): the filter with per-sample thresholds
(predict/raw_filter.py) against `--exact` on the same model, beside the
L2-normalised model's filter, whole processes (start-up, model loading,
parsing included) and their --timings phases, median of --repeat runs,
alternated, in one run of this script.

    .venv/bin/python bench/bench_raw_filter.py          # --repeat 5 --k 7,30 --threads 2
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

from common import REPO, machine_line, markdown_table, shared_data

HSVM = [sys.executable, "-m", "hsvm_cli"]
OUT = REPO / "bench" / "out"
# C as `-c auto` chooses it for each normalisation (BENCHMARKS.md, "C by cross-validation").
MODELS = {"none": 0.5, "l2": 128.0}


def _files(name):
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.models.hashed import hash_model, save_hash_model
    from hsvm_cli.models.ovo import load_model, save_model
    from hsvm_cli.train.ovo import train_ovo
    root = shared_data("omniglot-242")
    if root is None:
        return None
    C = MODELS[name]
    model = OUT / ("omniglot-242-%s-C%g.hsvm" % (name, C))
    hbm = OUT / ("omniglot-242-%s-C%g-b1024.hbm" % (name, C))
    OUT.mkdir(parents=True, exist_ok=True)
    if not model.exists():
        X, y = load_svmlight(str(root / "train.svm.gz"), n_features=784)
        save_model(train_ovo(X, y, C=C, normalize=name, seed=1, jobs=2), model)
    if not hbm.exists():
        save_hash_model(hash_model(load_model(model), bits=1024, seed=1), hbm)
    return model, hbm, root / "test.svm.gz"


def _once(args):
    t0 = time.perf_counter()
    r = subprocess.run(HSVM + args + ["--timings", "-o", "/dev/null"], capture_output=True, text=True,
                       cwd=str(REPO))
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit("failed: %s\n%s" % (" ".join(map(str, args)), r.stderr))
    phases = json.loads(r.stderr.strip().splitlines()[-1])
    acc = r.stderr.split("=")[1].split("%")[0].strip()
    return wall, phases, acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k", default="7,30")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    files = {name: _files(name) for name in MODELS}
    if any(f is None for f in files.values()):
        print("omniglot-242 is not in ../shared/data: nothing to measure")
        return
    cases = []
    for name, (model, hbm, test) in files.items():
        common = ["predict", "-m", str(model), str(test), "--threads", str(a.threads)]
        cases.append((name, "exact", common + ["--exact"]))
        for k in a.k.split(","):
            cases.append((name, "hash 1024 bits, k=%s" % k, common + ["-H", str(hbm), "--bits", "1024", "-k", k]))
    runs = {i: [] for i in range(len(cases))}
    for _ in range(a.repeat):
        for i, (_, _, args) in enumerate(cases):        # alternated: the same load for every case
            runs[i].append(_once(args))
    rows, results = [], []
    for i, (name, what, _) in enumerate(cases):
        walls = [w for w, _, _ in runs[i]]
        phase = {key: statistics.median(p[key] for _, p, _ in runs[i])
                 for key in ("parse", "hash", "filter", "refine", "score", "vote", "total") if key in runs[i][0][1]}
        results.append({"normalize": name, "run": what, "accuracy": runs[i][0][2],
                        "whole_s": statistics.median(walls), "phases": phase})
    for r in results:
        exact = next(e for e in results if e["normalize"] == r["normalize"] and e["run"] == "exact")
        p = r["phases"]
        rows.append([r["normalize"], r["run"], r["accuracy"] + "%", "%.3f" % r["whole_s"], "%.3f" % p["total"],
                     "%.3f" % p.get("filter", 0.0), "%.3f" % (p.get("score", 0.0) + p.get("vote", 0.0)
                                                            + p.get("refine", 0.0)),
                     "%.2fx" % (exact["whole_s"] / r["whole_s"]), "%.2fx" % (exact["phases"]["total"] / p["total"])])
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print(machine_line())
    print("command: .venv/bin/python bench/bench_raw_filter.py --repeat %d --k %s --threads %d\n"
          % (a.repeat, a.k, a.threads))
    print(markdown_table(["normalize", "run", "accuracy", "whole s", "phases s", "filter s", "score+vote / refine s",
                          "vs exact (whole)", "vs exact (phases)"], rows))


if __name__ == "__main__":
    main()
