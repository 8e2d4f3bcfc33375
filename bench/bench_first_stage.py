"""First stages whose cost grows with K, on a K = 1,000, d = 1,024 model.

Part 1 (in process, --recall-samples test samples, one run): for each first
stage, the share of samples whose exact label (max-wins over all pairs) is
among the K1 best-ranked classes, and the stage's time per sample:
hash votes over all pairs at 64 ... 1024 bits (today's filter), class scores
(each class's summed normalised pair margins, one K x d product) and class
scores estimated from codes.

Part 2 (whole processes, the way a user pays): `hsvm predict` on
--n-test samples of svmlight text, wall time of the process (start-up,
loading and checking the model, parsing included; the median of --repeat
runs, exact max-wins once) beside its --timings phases, and accuracy: exact max-wins, exact DAG, today's filter-and-refine
(1024-bit votes, k = 30) and the class-score first stage with a vote or DAG
refine.

    .venv/bin/python bench/bench_first_stage.py            # --n-test 10000 --recall-samples 2000 --repeat 5

The model is the synthetic set of bench/common.synthetic_classes (1,000
Gaussian classes around random unit means, 20 training samples each, noise
4.5), trained once with train-ovo's defaults and cached in bench/out.
"""
import argparse
import json
import subprocess
import sys
import time

import numpy as np

from hsvm_cli.io.svmlight import write_svmlight
from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
from hsvm_cli.models.ovo import load_model, save_model
from hsvm_cli.predict.class_scores import ClassScoreFilter
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import prepare
from hsvm_cli.support.threads import single_threaded_blas

from common import REPO, cached_model, machine_line, markdown_table, synthetic_classes

K, D = 1000, 1024
OUT = REPO / "bench" / "out"
HSVM = [sys.executable, "-m", "hsvm_cli"]


def files(n_test):
    X, y, Xt, yt = synthetic_classes(K, D, 20, seed=1, n_test=n_test, spread=4.5)
    legacy = cached_model("synthetic-K%d-d%d-n20-s4.5" % (K, D), lambda: _train(X, y))
    model_path = OUT / "synthetic-K1000-d1024-n20-s4.5-rows.hsvm"
    if not model_path.exists():
        save_model(legacy, model_path)
    hbm_path = OUT / "synthetic-K1000-d1024-n20-s4.5-b1024-cs.hbm"
    if not hbm_path.exists():
        save_hash_model(hash_model(load_model(model_path), bits=1024, seed=0, class_scores=True), hbm_path)
    test_path = OUT / ("synthetic-K1000-d1024-test-%d.svm" % n_test)
    if not test_path.exists():
        with open(test_path, "wb") as fh:
            write_svmlight(fh, Xt.astype(np.float32), yt)
    return model_path, hbm_path, test_path, Xt, yt


def _train(X, y):
    from hsvm_cli.train.ovo import train_ovo
    return train_ovo(X, y, C=1.0, seed=0, jobs=2)


def recall_part(model_path, hbm_path, Xt, n):
    model = load_model(model_path)
    h = load_hash_model(hbm_path)
    Xt = Xt[:n].astype(np.float32)
    Xn = prepare("l2", Xt)
    exact = Predictor(model).predict(Xt)
    ei = np.searchsorted(model.classes, exact)
    k1s = (10, 30, 100, 200, 300)
    rows = []

    def row(name, rank_fn):
        rank_fn(Xn[:64])
        t0 = time.perf_counter()
        S = rank_fn(Xn)
        secs = time.perf_counter() - t0
        order = np.argsort(-S, axis=1, kind="stable")
        rec = [float((order[:, :k] == ei[:, None]).any(axis=1).mean()) for k in k1s]
        rows.append([name, "%.1f" % (1e6 * secs / n)] + ["%.3f" % r for r in rec])

    with single_threaded_blas():
        for bits in (64, 128, 256, 1024):
            hf = HashFilter(h, bits=bits, threads=1)
            row("hash votes, %d bits" % bits, lambda X, hf=hf: (lambda v: v[0] + v[1] / K)(hf.hash_and_vote(X)))
        cs = ClassScoreFilter(h.class_W, h.class_b)
        row("class scores (exact)", cs.scores)
        for bits in (256, 1024):
            hs = ClassScoreFilter(h.class_W, h.class_b, encoder=h.encoder(bits), threads=1)
            row("class scores from %d-bit codes" % bits, hs.scores)
    return ["first stage", "us/sample (1 thread)"] + ["exact label in top %d" % k for k in k1s], rows


def run_predict(args, labels):
    t0 = time.perf_counter()
    r = subprocess.run(HSVM + ["predict", "-q", "--timings", "-o", str(OUT / "pred.txt")] + [str(a) for a in args],
                       capture_output=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode())
    pred = np.loadtxt(OUT / "pred.txt", dtype=np.int64)
    phases = json.loads(r.stderr.decode().splitlines()[-1])
    return wall, float((pred == labels).mean()), pred, phases


def process_part(model_path, hbm_path, test_path, yt, exact_runs=True, repeat=1):
    m, h, t = str(model_path), str(hbm_path), str(test_path)
    runs = [("exact max-wins", ["--exact", "-m", m, t])] if exact_runs else []
    runs += [
        ("exact DAG", ["--dag", "-m", m, t]),
        ("1024-bit votes, k=30, vote refine (today)", ["-m", m, "-H", h, "--bits", "1024", "-k", "30", t]),
        ("1024-bit votes, k=30, DAG refine", ["-m", m, "-H", h, "--bits", "1024", "-k", "30", "--refine", "dag", t]),
    ]
    for k in (3, 5, 10, 20):
        runs.append(("class scores, k=%d, vote refine" % k, ["-m", m, "-H", h, "--first-stage", "scores", "-k", str(k),
                                                             t]))
    for k in (10, 20):
        runs.append(("class scores, k=%d, DAG refine" % k, ["-m", m, "-H", h, "--first-stage", "scores", "-k",
                                                            str(k), "--refine", "dag", t]))
    runs.append(("class scores from 1024-bit codes, k=10", ["-m", m, "-H", h, "--first-stage", "hashed-scores",
                                                            "--bits", "1024", "-k", "10", t]))
    results = []
    exact_pred = None
    for name, args in runs:
        # the median run of `repeat` (exact max-wins, ~45 s a run, once)
        tries = sorted((run_predict(args, yt) for _ in range(1 if name == "exact max-wins" else repeat)),
                       key=lambda r: r[0])
        wall, acc, pred, phases = tries[(len(tries) - 1) // 2]
        if exact_pred is None and name.startswith("exact max-wins"):
            exact_pred = pred
        results.append((name, wall, acc, pred, phases))
        print("  %s: %.2f s, %.2f%%" % (name, wall, 100 * acc), file=sys.stderr, flush=True)
    base = results[0][1] if exact_runs else None
    header = ["setting", "whole process s", "vs exact", "accuracy %", "same label as exact %", "parse s",
              "normalise s", "first stage s", "refine s"]
    rows = []
    for name, wall, acc, pred, ph in results:
        first = ph.get("hash", 0) + ph.get("filter", 0) + ph.get("score", 0) + ph.get("vote", 0) + ph.get("dag", 0)
        rows.append([name, "%.2f" % wall, "%.1fx" % (base / wall) if base else "-", "%.2f" % (100 * acc),
                     "%.2f" % (100 * (pred == exact_pred).mean()) if exact_pred is not None else "-",
                     "%.2f" % ph.get("parse", 0), "%.2f" % ph.get("normalise", 0), "%.2f" % first,
                     "%.2f" % ph.get("refine", 0)])
    return header, rows


def real_part(names, k1s=(1, 2, 3, 5, 10, 20)):
    """Exact-label recall of the class scores against 1024-bit hash votes on
    the real sets (models trained and cached by common.load_trained)."""
    from common import load_trained
    rows = []
    for name in names:
        loaded = load_trained(name)
        if loaded is None:
            print("skip %s: data absent" % name, file=sys.stderr)
            continue
        model, Xt, _ = loaded
        K = model.n_classes
        ks = [k for k in k1s if k < K]
        Xn = prepare(model.normalize, Xt)
        ei = np.searchsorted(model.classes, Predictor(model).predict(Xt))
        h = hash_model(model, bits=1024, seed=0, class_scores=True)

        def recall(S):
            order = np.argsort(-S, axis=1, kind="stable")
            return ["%.3f" % float((order[:, :k] == ei[:, None]).any(axis=1).mean()) for k in ks]

        hf = HashFilter(h, bits=1024, threads=1)
        v, mg = hf.hash_and_vote(Xn)
        rows.append([name, K, "hash votes, 1024 bits"] + recall(v + mg / K) + [""] * (len(k1s) - len(ks)))
        cs = ClassScoreFilter(h.class_W, h.class_b)
        rows.append([name, K, "class scores (exact)"] + recall(cs.scores(Xn)) + [""] * (len(k1s) - len(ks)))
    return ["set", "K", "first stage"] + ["exact label in top %d" % k for k in k1s], rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-test", type=int, default=10000)
    ap.add_argument("--recall-samples", type=int, default=2000)
    ap.add_argument("--no-exact", action="store_true", help="skip the (slow) exact max-wins process")
    ap.add_argument("--repeat", type=int, default=5,
                    help="runs of each process but exact max-wins (the median run is reported)")
    ap.add_argument("--real", default="omniglot-242,reuters-r52,fashion-mnist-20k",
                    help="real sets for the recall table (comma-separated; empty: none)")
    ap.add_argument("--real-only", action="store_true", help="only the real-set recall table")
    a = ap.parse_args(argv)
    if a.real:
        print("\nFirst stages on real sets, exact-label recall (all test samples)\n")
        header, rows = real_part([n for n in a.real.split(",") if n])
        print(markdown_table(header, rows))
        if a.real_only:
            return
    model_path, hbm_path, test_path, Xt, yt = files(a.n_test)
    print(machine_line())
    print("\nFirst stages, exact-label recall (%d samples)\n" % a.recall_samples)
    header, rows = recall_part(model_path, hbm_path, Xt, a.recall_samples)
    print(markdown_table(header, rows))
    print("\nWhole `hsvm predict` processes, %d samples of %s (%.0f MB)\n"
          % (a.n_test, test_path.name, test_path.stat().st_size / 1e6))
    header, rows = process_part(model_path, hbm_path, test_path, yt, exact_runs=not a.no_exact, repeat=a.repeat)
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
