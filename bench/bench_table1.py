"""Exact vs filter-and-refine on real data, in the shape of the paper's Table 1.

    .venv/bin/python bench/bench_table1.py [--sets omniglot-242,reuters-r52,fashion-mnist-20k] [--json]

For each data set: train (C as given per set), hash at 2048 bits, then for
D' in {256, 512, 1024, 2048} and k/K in {0.01, 0.03, 0.1} (k >= 2) the test
accuracy, the time per sample (parsing excluded, normalisation included) and
the share of samples whose exact prediction survives the filter."""
import argparse
import json

import numpy as np

from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import rank_classes
from hsvm_cli.preprocess import prepare

from common import REAL_SETS, load_trained, machine_line, markdown_table, median_time


def run_set(name, bits_list, fractions, repeat, threads):
    loaded = load_trained(name)
    if loaded is None:
        return None
    model, Xt, yt = loaded
    d, C = REAL_SETS[name]
    K = model.n_classes
    h = hash_model(model, bits=max(bits_list), seed=0)
    n = Xt.shape[0]
    exact = Predictor(model)
    t_exact, exact_labels = median_time(lambda: exact.predict(Xt), repeat)
    out = {"set": name, "K": K, "d": d, "C": C, "n_test": n,
           "exact_accuracy": float((exact_labels == yt).mean()), "exact_us_per_sample": 1e6 * t_exact / n,
           "grid": []}
    ks = sorted({max(2, int(round(f * K))) for f in fractions})
    for bits in bits_list:
        for k in ks:
            hp = Predictor(model, h, bits=bits, filter_k=k, threads=threads)
            t, block = median_time(lambda: hp.predict_block(Xt), repeat)
            v, m = hp.filter.votes(hp.filter.hash_samples(prepare("l2", Xt)))
            kept = model.classes[rank_classes(v, m)[:, :k]]
            survive = float(np.mean((kept == exact_labels[:, None]).any(axis=1)))
            out["grid"].append({"bits": bits, "k": k, "accuracy": float((block.labels == yt).mean()),
                                "us_per_sample": 1e6 * t / n, "speedup": t_exact / t,
                                "exact_survives": survive})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="omniglot-242,reuters-r52,fashion-mnist-20k")
    ap.add_argument("--bits", default="256,512,1024,2048")
    ap.add_argument("--fractions", default="0.01,0.03,0.1")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits
    threadpool_limits(a.threads)
    bits_list = [int(b) for b in a.bits.split(",")]
    fractions = [float(f) for f in a.fractions.split(",")]
    results = [r for r in (run_set(s, bits_list, fractions, a.repeat, a.threads) for s in a.sets.split(",")) if r]
    if a.json:
        print(json.dumps({"machine": machine_line(), "threads": a.threads, "results": results}, indent=1))
        return
    print("%d thread(s); %s" % (a.threads, machine_line()))
    for r in results:
        print("\n%s: K=%d, d=%d, C=%g, %d test samples; exact %.2f%% at %.1f us/sample"
              % (r["set"], r["K"], r["d"], r["C"], r["n_test"], 100 * r["exact_accuracy"], r["exact_us_per_sample"]))
        rows = [[g["bits"], g["k"], "%.2f" % (100 * g["accuracy"]), "%.2f" % (100 * (g["accuracy"] - r["exact_accuracy"])),
                 "%.3f" % g["exact_survives"], "%.1f" % g["us_per_sample"], "%.1f" % g["speedup"]] for g in r["grid"]]
        print(markdown_table(["D'", "k", "accuracy %", "vs exact (points)", "exact label kept",
                              "us/sample", "speed-up"], rows))


if __name__ == "__main__":
    main()
