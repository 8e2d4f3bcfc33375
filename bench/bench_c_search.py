"""`train-ovo -c auto` against the best C of its grid on the test set and against
LIBSVM's one-vs-one linear SVM (`svm-train -t 0`) at its best C; and what the
search costs against one training at the grid's largest C.

    .venv/bin/python bench/bench_c_search.py [--sets omniglot-242,binalpha-36] [--normalize l2,none,auto]
                                             [--jobs 2] [--libsvm-grid=-8:4] [--seeds 1,2,3] [--json]

Per set and normalisation (auto: `--normalize auto`, both searched, the grid
every (normalisation, C) they ran): the search (5-fold, seed 1, default doubling grid
with early stopping; `hsvm_cli.train.ovo.cross_validate_ovo`, what
`train-ovo -c auto` runs), then a LIBLINEAR model (`train_ovo`, as train-ovo
trains) at every C the search visited, each scored on the test file: the
chosen C's test accuracy against the best of those ("within 1 point of the
best of the grid").  Cost: the search's wall time against a cold training at
the grid's largest C (2^10) and at the largest C it visited, all with --jobs
workers.  LIBSVM (when svm-train is installed): `svm-train -t 0 -c C` on the
raw features (LIBSVM does not normalise) for C = 2^k over --libsvm-grid,
scored with svm-predict on the test file; "its best C" is the best test
accuracy over that grid -- an upper bound for what LIBSVM's own
cross-validation would pick.  LIBSVM results are cached in bench/out.
Fold seeds: the search runs once per --seeds value (the folds are dealt from
it); the first seed's search is the one timed and tabulated, the others show
how much the choice moves with the folds (the trained grid models are shared)."""
import argparse
import gzip
import json
import shutil
import subprocess
import time

import numpy as np

from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.train.c_search import MAX_C
from hsvm_cli.train.ovo import cross_validate_ovo, train_ovo

from common import REPO, machine_line, markdown_table, shared_data

DIMS = {"omniglot-242": 784, "binalpha-36": 320, "fashion-mnist-20k": 784, "digits": 64, "att-faces-40": 644,
        "reuters-r52": 11698}


def libsvm_accuracy(name, C):
    """Test accuracy of svm-train -t 0 -c C (cached); None without the tools."""
    if shutil.which("svm-train") is None or shutil.which("svm-predict") is None:
        return None
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "libsvm-accuracy.json"
    known = json.loads(cache.read_text()) if cache.exists() else {}
    key = "%s|%r" % (name, C)
    if key not in known:
        files = {}
        for part in ("train", "test"):
            files[part] = out / ("%s.%s.svm" % (name, part))
            if not files[part].exists():
                with gzip.open(shared_data(name) / ("%s.svm.gz" % part), "rb") as fin, open(files[part], "wb") as f:
                    shutil.copyfileobj(fin, f)
        model, pred = out / ("%s-libsvm.model" % name), out / ("%s-libsvm.pred" % name)
        t0 = time.perf_counter()
        subprocess.run(["svm-train", "-q", "-t", "0", "-c", repr(C), str(files["train"]), str(model)], check=True)
        seconds = time.perf_counter() - t0
        line = subprocess.run(["svm-predict", str(files["test"]), str(model), str(pred)], check=True,
                              capture_output=True, text=True).stdout
        correct, total = line.split("(")[1].split(")")[0].split("/")
        known[key] = {"accuracy": int(correct) / int(total), "train_seconds": seconds}
        cache.write_text(json.dumps(known, indent=1))
    return known[key]


def run(name, normalize, jobs, libsvm_ks, seeds):
    root = shared_data(name)
    if root is None:
        return None
    d = DIMS[name]
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d)
    search = cross_validate_ovo(X, y, C="auto", folds=5, seed=seeds[0], jobs=jobs, normalize=normalize)
    others = [cross_validate_ovo(X, y, C="auto", folds=5, seed=s, jobs=jobs, normalize=normalize) for s in seeds[1:]]
    # --normalize auto: the grid is every (normalisation, C) either search ran;
    # "the best of the grid" the best of both.
    searches = [search] + others
    compared = [(nm, srch) for s in searches for nm, srch in (s.compared or {normalize: s}).items()]
    grid = []
    visited = sorted({(nm, st.C) for nm, srch in compared for st in srch.steps})
    steps = {(nm, st.C): st for nm, srch in (search.compared or {normalize: search}).items() for st in srch.steps}
    for norm, C in visited:
        step = steps.get((norm, C))
        t0 = time.perf_counter()
        m = train_ovo(X, y, C=C, normalize=norm, seed=1, jobs=jobs)
        secs = time.perf_counter() - t0
        grid.append({"normalize": norm, "C": C, "cv_accuracy": step.accuracy if step else None,
                     "test_accuracy": float((Predictor(m).predict(Xt) == yt).mean()), "train_seconds": secs,
                     "search_seconds": step.seconds if step else None})
    t0 = time.perf_counter()
    train_ovo(X, y, C=MAX_C, normalize=search.normalize or normalize, seed=1, jobs=jobs)
    t_max = time.perf_counter() - t0
    chosen = next(g for g in grid if g["C"] == search.best_C and g["normalize"] == (search.normalize or normalize))
    best = max(grid, key=lambda g: g["test_accuracy"])
    lib = None
    if libsvm_ks is not None:
        rows = [(2.0 ** k, libsvm_accuracy(name, 2.0 ** k)) for k in libsvm_ks]
        rows = [(c, r) for c, r in rows if r is not None]
        if rows:
            c, r = max(rows, key=lambda cr: cr[1]["accuracy"])
            lib = {"best_C": c, "accuracy": r["accuracy"], "train_seconds": r["train_seconds"],
                   "grid": [{"C": c, **r} for c, r in rows]}
    chosen_norm = search.normalize or normalize
    seconds = sum(s.seconds for s in search.compared.values()) if search.compared else search.seconds
    return {"set": name, "normalize": normalize, "chosen_normalize": chosen_norm, "n": int(X.shape[0]),
            "K": int(np.unique(y).shape[0]), "form": search.form, "search_seconds": seconds, "chosen_C": search.best_C,
            "chosen_test_accuracy": chosen["test_accuracy"], "best_grid_C": best["C"],
            "best_grid_test_accuracy": best["test_accuracy"], "train_seconds_max_C": t_max,
            "largest_C_visited": search.steps[-1].C,
            "train_seconds_largest_visited": next(g["train_seconds"] for g in grid
                                                  if g["C"] == search.steps[-1].C and g["normalize"] == chosen_norm),
            "stopped_early": search.stopped_early, "grid": grid, "libsvm": lib, "table": search.table(),
            "other_seeds": [{"seed": s, "chosen_C": o.best_C, "chosen_normalize": o.normalize or normalize,
                             "test_accuracy": next(g["test_accuracy"] for g in grid if g["C"] == o.best_C
                                                   and g["normalize"] == (o.normalize or normalize))}
                            for s, o in zip(seeds[1:], others)]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="omniglot-242,binalpha-36")
    ap.add_argument("--normalize", default="l2,none,auto")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--libsvm-grid", default="-8:4", help="k range of LIBSVM's C = 2^k, or 'none'")
    ap.add_argument("--seeds", default="1", help="fold seeds of the search (the first is timed)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    seeds = [int(v) for v in a.seeds.split(",")]
    ks = None if a.libsvm_grid == "none" else list(range(int(a.libsvm_grid.split(":")[0]),
                                                         int(a.libsvm_grid.split(":")[1]) + 1))
    results = [r for s in a.sets.split(",") for nm in a.normalize.split(",") for r in [run(s, nm, a.jobs, ks, seeds)]
               if r]
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print(machine_line())
    print("command: .venv/bin/python bench/bench_c_search.py --sets %s --normalize %s --jobs %d --libsvm-grid=%s "
          "--seeds %s\n" % (a.sets, a.normalize, a.jobs, a.libsvm_grid, a.seeds))
    rows = []
    for r in results:
        lib = r["libsvm"]
        norm = r["normalize"] if r["normalize"] != "auto" else "auto: %s" % r["chosen_normalize"]
        rows.append([r["set"], norm, "%g" % r["chosen_C"], "%.2f%%" % (100 * r["chosen_test_accuracy"]),
                     "%.2f%% (C=%g)" % (100 * r["best_grid_test_accuracy"], r["best_grid_C"]),
                     "%.2f%% (C=%g)" % (100 * lib["accuracy"], lib["best_C"]) if lib else "-",
                     "%+.2f" % (100 * (r["chosen_test_accuracy"] - r["best_grid_test_accuracy"])),
                     "%+.2f" % (100 * (r["chosen_test_accuracy"] - lib["accuracy"])) if lib else "-",
                     "%.1f s" % r["search_seconds"], "%.1f s" % r["train_seconds_max_C"],
                     "%.2fx" % (r["search_seconds"] / r["train_seconds_max_C"]),
                     "%.1f s (C=%g)" % (r["train_seconds_largest_visited"], r["largest_C_visited"])])
    print(markdown_table(["set", "normalize", "chosen C", "test acc.", "best of grid", "LIBSVM best",
                          "vs grid", "vs LIBSVM", "search", "train at C=1024", "search / train", "train at largest C run"],
                         rows))
    for r in results:
        print("\n%s, --normalize %s (%s form), search table:\n" % (r["set"], r["normalize"], r["form"]))
        print(r["table"])
        print(markdown_table(["normalize", "C", "CV accuracy (first seed)", "test accuracy", "train s"],
                             [[g["normalize"], "%g" % g["C"], "%.2f%%" % (100 * g["cv_accuracy"])
                               if g["cv_accuracy"] is not None else "-", "%.2f%%" % (100 * g["test_accuracy"]),
                               "%.1f" % g["train_seconds"]] for g in r["grid"]]))
        if r["other_seeds"]:
            print("\nother fold seeds: " + ", ".join("seed %d: %s C=%g, %.2f%%" % (o["seed"], o["chosen_normalize"],
                                                                               o["chosen_C"], 100 * o["test_accuracy"])
                                                  for o in r["other_seeds"]))
        if r["libsvm"]:
            print("\nLIBSVM svm-train -t 0 (raw features):",
                  ", ".join("C=%g %.2f%%" % (g["C"], 100 * g["accuracy"]) for g in r["libsvm"]["grid"]))


if __name__ == "__main__":
    main()
