"""One-vs-rest: exact scoring against the hashed filter + exact top-k, on
LIBLINEAR models (liblinear-train -s 1 -B 1, imported with
hsvm_cli.models.imported) of reuters-r52 and omniglot-242.

    .venv/bin/python bench/bench_ovr.py [--sets reuters-r52,omniglot-242] [--threads 1] [--repeat 5] [--json]

Needs liblinear-train and liblinear-predict (Debian: apt-get install
liblinear-tools); models are cached in bench/out.  Exact = float32 X W^T + b
and argmax (LIBLINEAR's tie rule).  Hashed = sign projection of the samples
(D' x d), Hamming distances to the K class codes, the estimate of every class
score (``score``: ||x|| ||w_c|| cos(pi d_c/D') + b_c; ``margin``:
theta_c(||x||) - d_c/D'), top k, exact scores of the k kept classes.  Parsing is
excluded (samples in memory); both paths include the model's normalisation
step.  "agree" is the share of labels identical to exact OvR, which is the
share of samples whose exact label is among the k kept classes (the refine
picks the exact winner whenever it was kept)."""
import argparse
import gzip
import json
import shutil
import subprocess
import sys

import numpy as np

from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.models.imported import import_model
from hsvm_cli.models.ovr import hash_ovr_model
from hsvm_cli.predict.ovr import ESTIMATORS, OvrPredictor
from hsvm_cli.support.timing import Timings

from common import REPO, machine_line, markdown_table, median_time, shared_data

# liblinear-train -c per set (other shared sets named with --sets use 1).
SETS = {"reuters-r52": "1", "omniglot-242": "0.1"}


def liblinear_model(name, C):
    """Path of the cached LIBLINEAR model text (trained here when absent)."""
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    model = out / ("%s-liblinear-s1-B1-c%s.model" % (name, C))
    if not model.exists():
        if shutil.which("liblinear-train") is None:
            sys.exit("bench_ovr: liblinear-train is missing (apt-get install liblinear-tools)")
        train = out / ("%s.train.svm" % name)
        with gzip.open(shared_data(name) / "train.svm.gz", "rb") as fin, open(train, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        subprocess.run(["liblinear-train", "-q", "-s", "1", "-B", "1", "-c", C, str(train), str(model)], check=True)
        train.unlink()
    return model


def tool_agreement(name, model, labels):
    """Share of hsvm's exact labels identical to liblinear-predict's."""
    if shutil.which("liblinear-predict") is None:
        return None
    out = REPO / "bench" / "out"
    test, pred = out / ("%s.test.svm" % name), out / ("%s.liblinear.pred" % name)
    with gzip.open(shared_data(name) / "test.svm.gz", "rb") as fin, open(test, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    subprocess.run(["liblinear-predict", str(test), str(model), str(pred)], check=True, stdout=subprocess.DEVNULL)
    test.unlink()
    ref = np.loadtxt(pred, dtype=np.int64)
    return float((ref == labels).mean())


def run_set(name, a):
    root = shared_data(name)
    if root is None:
        print("(%s absent: skipped)" % name)
        return None
    model_path = liblinear_model(name, SETS.get(name, "1"))
    m = import_model(str(model_path)).model
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=m.n_features, extra_features="ignore",
                           dtype=np.float32)
    n, K = Xt.shape[0], m.n_classes
    exact_predictor = OvrPredictor(m)
    t_exact, exact = median_time(lambda: exact_predictor.predict(Xt), a.repeat)
    exact_idx = np.searchsorted(m.classes, exact)
    res = {"set": name, "K": K, "d": m.n_features, "n_test": n, "nnz_per_sample": Xt.nnz / n,
           "exact_us": 1e6 * t_exact / n, "exact_accuracy": float((exact == yt).mean()),
           "liblinear_predict_identical": tool_agreement(name, model_path, exact), "hashed": []}
    rows = [["exact OvR", "-", "-", "-", "%.2f" % (100 * res["exact_accuracy"]), "100",
             "%.2f" % res["exact_us"], "1.00", "-"]]
    h = hash_ovr_model(m, bits=max(a.bits), seed=1)
    ks = sorted({1, 2, 5, max(2, round(0.1 * K))} - {K})
    for bits in a.bits:
        for estimator in ESTIMATORS:
            for k in ks:
                hp = OvrPredictor(m, h, bits=bits, filter_k=k, estimator=estimator, threads=a.threads)
                t = Timings()
                secs, block = median_time(lambda: hp.predict_block(Xt, timings=t), a.repeat)
                labels, kept = block.labels, block.votes
                calls = a.repeat + 1
                phases = {p: 1e6 * v / (n * calls) for p, v in t.seconds.items()}
                r = {"bits": bits, "estimator": estimator, "k": k, "us": 1e6 * secs / n,
                     "accuracy": float((labels == yt).mean()), "agree": float((labels == exact).mean()),
                     "recall": float((kept == exact_idx[:, None]).any(axis=1).mean()),
                     "speedup": t_exact / secs, "phases_us": phases}
                res["hashed"].append(r)
                rows.append(["hashed", bits, estimator, k, "%.2f" % (100 * r["accuracy"]), "%.1f" % (100 * r["agree"]),
                             "%.2f" % r["us"], "%.2f" % r["speedup"],
                             " / ".join("%s %.1f" % (p, v) for p, v in phases.items())])
    print("\n### %s: K = %d, d = %d, %d test samples, %.0f nonzeros per sample; liblinear-predict identical: %s\n"
          % (name, K, m.n_features, n, res["nnz_per_sample"],
             "n/a" if res["liblinear_predict_identical"] is None else "%.2f%%" % (100 * res["liblinear_predict_identical"])))
    print(markdown_table(["method", "D'", "estimator", "k", "accuracy %", "agree = recall %", "µs/sample",
                          "speed-up", "phases µs/sample"], rows))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--bits", default="64,128,256,512")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    a.bits = [int(b) for b in a.bits.split(",")]
    from threadpoolctl import threadpool_limits
    threadpool_limits(a.threads)
    print("machine: %s; threads %d; median of %d runs" % (machine_line(), a.threads, a.repeat))
    print("command: .venv/bin/python bench/bench_ovr.py %s" % " ".join(sys.argv[1:] if argv is None else argv))
    results = [r for r in (run_set(s, a) for s in a.sets.split(",")) if r]
    if a.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
