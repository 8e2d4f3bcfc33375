"""Decision DAG (DDAG) prediction against max-wins voting: accuracy, identical
labels and speed, exact and after the hash filter, in one run per data set.

    .venv/bin/python bench/bench_dag.py [--threads 1] [--sets omniglot-242,...]
                                        [--classes 1000 --dim 1024 --per-class 20]

Exact: max-wins = float32 BLAS decision values of every classifier + C vote
counting + decision (hsvm_cli.predict.exact.ExactScorer); DDAG = hsvm_cli.predict.dag over all
classes in class order (K - 1 pair decisions per sample).  After the filter
(hash votes at 1024 bits, top k classes by hsvm_cli.predict.ranking.top_classes):
vote refine = Predictor's exact votes among the k kept classes (its
"refine" phase), DAG refine = the DDAG over the k kept classes, in class order
or in the filter's score order (best first), list building included.  Samples
are prepared (normalised) before any timing; parsing is excluded.  Times are
medians of --repeat runs after a warm-up run (a single run when the warm-up
takes more than 20 s), wall clock and process CPU time (all threads) per
sample: the machine these figures come from is shared, so CPU time is the
steadier figure.

Data: the shared real sets (trained once, cached in bench/out) and a
synthetic K-class Gaussian set (bench/common.synthetic_classes)."""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
from hsvm_cli.predict.dag import DecisionDag, candidate_lists
from hsvm_cli.predict.exact import ExactScorer
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import best_class, top_classes
from hsvm_cli.preprocess import prepare
from hsvm_cli.support.timing import Timings

from common import REAL_SETS, cached_model, load_trained, machine_line, markdown_table, shared_data, synthetic_classes

# Small shared sets train-ovo handles in seconds: nominal dimension and C.
SMALL_SETS = {"digits": (64, 1.0), "binalpha-36": (320, 1.0), "att-faces-40": (644, 1.0)}
DEFAULT_SETS = ("omniglot-242", "reuters-r52", "fashion-mnist-20k", "digits", "binalpha-36", "att-faces-40")
BITS = 1024


def timed(fn, repeat):
    """(median wall seconds, median CPU seconds, last result) of fn()."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    first = (time.perf_counter() - t0, time.process_time() - c0)
    if first[0] > 20.0:
        return first[0], first[1], out
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def load_small(name):
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.train.ovo import train_ovo
    d, C = SMALL_SETS[name]
    root = shared_data(name)
    if root is None:
        return None
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d, dtype=np.float32)

    def train():
        X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d)
        return train_ovo(X, y, C=C, seed=0, jobs=2)

    return cached_model("%s-C%g" % (name, C), train), Xt, yt


def load_synthetic(a):
    from hsvm_cli.train.ovo import train_ovo
    X, y, Xt, yt = synthetic_classes(a.classes, a.dim, a.per_class, seed=1, n_test=a.n_test, spread=a.spread)
    key = "synthetic-K%d-d%d-n%d-s%g" % (a.classes, a.dim, a.per_class, a.spread)
    model = cached_model(key, lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    return key, model, Xt.astype(np.float32), yt


def cached_hash(key, model):
    from common import REPO
    path = REPO / "bench" / "out" / ("%s-b%d.hbm" % (key, BITS))
    if path.exists():
        return load_hash_model(path)
    h = hash_model(model, bits=BITS, seed=0)
    save_hash_model(h, path)
    return h


def run_set(name, key, model, Xt, yt, a, out):
    from threadpoolctl import threadpool_limits
    n = Xt.shape[0]
    K = model.n_classes
    Xn = prepare(model.normalize, Xt)
    us = lambda s: 1e6 * s / n
    res = {"set": name, "K": K, "d": model.n_features, "n_test": n, "threads": a.threads}

    scorer = ExactScorer(model)

    def max_wins():
        with threadpool_limits(a.threads):
            v, c = scorer.votes(Xn)
        return best_class(v, c)

    mw_wall, mw_cpu, mw = timed(max_wins, a.repeat)
    dag = DecisionDag.from_model(model)
    dag_wall, dag_cpu, dd = timed(lambda: dag.predict(Xn, threads=a.threads), a.repeat)
    mw_lab, dd_lab = model.classes[mw], model.classes[dd]
    res["exact"] = {
        "max_wins_accuracy": float(np.mean(mw_lab == yt)), "ddag_accuracy": float(np.mean(dd_lab == yt)),
        "identical": float(np.mean(dd == mw)),
        "max_wins_us": us(mw_wall), "max_wins_cpu_us": us(mw_cpu),
        "ddag_us": us(dag_wall), "ddag_cpu_us": us(dag_cpu),
        "speedup": mw_wall / dag_wall, "speedup_cpu": mw_cpu / dag_cpu,
        "ddag_row_fetches_per_sample": dag.stats["row_fetches"] / dag.stats["evaluations"] * (K - 1),
    }

    h = cached_hash(key, model)
    filt = HashFilter(h, bits=BITS, threads=a.threads)
    with threadpool_limits(a.threads):
        hv, hm = filt.hash_and_vote(Xn)
    res["refine"] = []
    for k in sorted({min(k, K) for k in a.k}, reverse=True):
        kept = top_classes(hv, hm, k)
        kept_exact = float(np.mean((kept == mw[:, None]).any(axis=1)))
        hp = Predictor(model, h, bits=BITS, filter_k=k, threads=a.threads)

        def vote_refine():
            t = Timings()
            with threadpool_limits(a.threads):
                block = hp.predict_block(Xt, timings=t)
            return t.seconds["refine"], block.labels

        vote_runs = [vote_refine() for _ in range(1 + a.repeat)][1:]
        vote_s = statistics.median(r[0] for r in vote_runs)
        vote_lab = vote_runs[-1][1]
        res["refine"].append({"k": k, "method": "vote", "accuracy": float(np.mean(vote_lab == yt)),
                              "identical": float(np.mean(vote_lab == mw_lab)), "refine_us": us(vote_s),
                              "refine_cpu_us": None, "exact_label_kept": kept_exact})
        for order in ("class", "score"):
            def dag_refine():
                return dag.predict(Xn, candidates=candidate_lists(kept, order=order), threads=a.threads)

            w, c, lab = timed(dag_refine, a.repeat)
            lab = model.classes[lab]
            res["refine"].append({"k": k, "method": "dag-%s" % order, "accuracy": float(np.mean(lab == yt)),
                                  "identical": float(np.mean(lab == mw_lab)), "refine_us": us(w),
                                  "refine_cpu_us": us(c), "exact_label_kept": kept_exact})
    out.append(res)
    return res


def print_tables(results, a, argv):
    print("Command: .venv/bin/python bench/bench_dag.py %s" % " ".join(argv))
    print("Machine: %s; %d thread(s)\n" % (machine_line(), a.threads))
    rows = []
    for r in results:
        e = r["exact"]
        rows.append([r["set"], r["K"], r["d"], r["n_test"], "%.2f" % (100 * e["max_wins_accuracy"]),
                     "%.2f" % (100 * e["ddag_accuracy"]), "%.2f" % (100 * e["identical"]),
                     "%.0f (%.0f)" % (e["max_wins_us"], e["max_wins_cpu_us"]),
                     "%.1f (%.1f)" % (e["ddag_us"], e["ddag_cpu_us"]),
                     "%.1f (%.1f)" % (e["speedup"], e["speedup_cpu"]),
                     "%.1f" % e["ddag_row_fetches_per_sample"]])
    print(markdown_table(["set", "K", "d", "test", "max-wins acc %", "DDAG acc %", "identical labels %",
                          "max-wins us/sample wall (cpu)", "DDAG us/sample wall (cpu)", "speed-up wall (cpu)",
                          "DDAG pair fetches/sample"], rows))
    print()
    rows = []
    for r in results:
        for f in r["refine"]:
            rows.append([r["set"], f["k"], f["method"], "%.2f" % (100 * f["exact_label_kept"]),
                         "%.2f" % (100 * f["accuracy"]), "%.2f" % (100 * f["identical"]),
                         "%.2f" % f["refine_us"] + ("" if f["refine_cpu_us"] is None else " (%.2f)" % f["refine_cpu_us"])])
    print(markdown_table(["set", "k", "refine after the %d-bit filter" % BITS, "max-wins label kept %",
                          "accuracy %", "identical to max-wins %", "refine alone us/sample wall (cpu)"], rows))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(DEFAULT_SETS), help="comma-separated shared sets ('' for none)")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--per-class", type=int, default=20)
    ap.add_argument("--spread", type=float, default=4.5)
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--k", type=lambda s: [int(v) for v in s.split(",")], default=[30, 10])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args(argv)
    results = []
    for name in [s for s in a.sets.split(",") if s]:
        loaded = load_trained(name) if name in REAL_SETS else load_small(name) if name in SMALL_SETS else None
        if loaded is None:
            print("skipping %s (absent or unknown)" % name, file=sys.stderr)
            continue
        model, Xt, yt = loaded
        C = (REAL_SETS.get(name) or SMALL_SETS[name])[1]
        run_set(name, "%s-C%g" % (name, C), model, Xt, yt, a, results)
        print("done %s" % name, file=sys.stderr, flush=True)
    if not a.no_synthetic:
        key, model, Xt, yt = load_synthetic(a)
        run_set("synthetic K=%d d=%d" % (a.classes, a.dim), key, model, Xt, yt, a, results)
    print_tables(results, a, argv)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"machine": machine_line(), "threads": a.threads, "results": results}, fh, indent=1)


if __name__ == "__main__":
    main()
