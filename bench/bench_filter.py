"""Hash filter and filter-and-refine against exact prediction on a synthetic
K = 300, d = 1000 model (44,850 pairs), both on the same threads, in one run.

    .venv/bin/python bench/bench_filter.py [--threads 2] [--n-test 3000] [--json]

Exact = float32 BLAS decision values + C vote counting + decision.  Filter =
hashing the samples (projection + signs) + Hamming voting + top-k.  Whole
filter-and-refine = normalise + hash + filter + refine; parsing is excluded
everywhere (the samples are already in memory)."""
import argparse
import json

import numpy as np

from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.ranking import top_classes
from hsvm_cli.preprocess import prepare
from hsvm_cli.train.ovo import train_ovo

from common import cached_model, machine_line, markdown_table, median_time, synthetic_classes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--classes", type=int, default=300)
    ap.add_argument("--dim", type=int, default=1000)
    ap.add_argument("--per-class", type=int, default=50)
    ap.add_argument("--spread", type=float, default=5.0,
                    help="noise norm around the unit class means (5: exact accuracy around 85%%)")
    ap.add_argument("--n-test", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits
    threadpool_limits(a.threads)

    X, y, Xt, yt = synthetic_classes(a.classes, a.dim, a.per_class, seed=1, n_test=a.n_test, spread=a.spread)
    model = cached_model("synthetic-K%d-d%d-n%d-s%g" % (a.classes, a.dim, a.per_class, a.spread),
                         lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    h = hash_model(model, bits=1024, seed=0)
    Xt32 = Xt.astype(np.float32)
    n = Xt.shape[0]

    exact = Predictor(model)
    t_exact, exact_labels = median_time(lambda: exact.predict(Xt32), a.repeat)
    acc_exact = float((exact_labels == yt).mean())
    rows = [["exact (BLAS float32 + votes)", "-", "-", "%.1f" % (1e6 * t_exact / n), "1.0", "%.2f" % (100 * acc_exact), "-"]]
    result = {"machine": machine_line(), "K": a.classes, "d": a.dim, "n_test": n, "threads": a.threads,
              "exact_us_per_sample": 1e6 * t_exact / n, "exact_accuracy": acc_exact, "filter": [], "refine": []}

    for bits, k in ((256, 30), (1024, 30)):
        hp = Predictor(model, h, bits=bits, filter_k=k, threads=a.threads)

        def filt():
            Xn = prepare("l2", Xt32)
            v, m = hp.filter.hash_and_vote(Xn)
            return top_classes(v, m, k)

        t, kept = median_time(filt, a.repeat)
        recall = float(np.mean([exact_labels[i] in model.classes[kept[i]] for i in range(n)]))
        rows.append(["filter only (hash + votes + top-k)", bits, k, "%.1f" % (1e6 * t / n), "%.1f" % (t_exact / t),
                     "-", "%.3f" % recall])
        result["filter"].append({"bits": bits, "k": k, "us_per_sample": 1e6 * t / n, "speedup": t_exact / t,
                                 "exact_survives": recall})

    for bits, k in ((512, 3), (256, 30), (1024, 30)):
        hp = Predictor(model, h, bits=bits, filter_k=k, threads=a.threads)
        t, block = median_time(lambda: hp.predict_block(Xt32), a.repeat)
        acc = float((block.labels == yt).mean())
        agree = float((block.labels == exact_labels).mean())
        rows.append(["filter + refine", bits, k, "%.1f" % (1e6 * t / n), "%.1f" % (t_exact / t), "%.2f" % (100 * acc),
                     "agree %.3f" % agree])
        result["refine"].append({"bits": bits, "k": k, "us_per_sample": 1e6 * t / n, "speedup": t_exact / t,
                                 "accuracy": acc, "agreement_with_exact": agree})
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print("synthetic K=%d d=%d, %d test samples, %d threads; %s" % (a.classes, a.dim, n, a.threads, result["machine"]))
        print(markdown_table(["method", "bits", "k", "us/sample", "speed-up vs exact", "accuracy %", "exact label kept"],
                             rows))


if __name__ == "__main__":
    main()
