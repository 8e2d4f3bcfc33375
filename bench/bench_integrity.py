"""What the integrity checks cost on a large model: a K = 1,000, d = 1,024
one-vs-one model (499,500 classifiers, 2.05 GB of W), written with checksums.

Measured in one process, warm page cache, median of --repeat runs:
- load + verify all of W (xxh3 of every 16 MiB block and the finite-value
  check), as exact prediction does before it scores;
- exact prediction of --n-test samples (parsing excluded), per sample;
- hashed prediction (1024 bits, k = 30) of the same samples with W verified
  lazily by the rows the refine touches, against the same predictor with the
  checks switched off.
The verification is reported as a share of exact prediction of 10,000 samples
(issue 9's test set) and of the samples measured.

    .venv/bin/python bench/bench_integrity.py                # --n-test 500 --repeat 3
"""
import argparse
import json
import statistics
import time

import numpy as np

from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.ovo import load_model, save_model
from hsvm_cli.predict.predictor import Predictor

from common import REPO, cached_model, machine_line, markdown_table, synthetic_classes


def _median(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    K, d = 1000, 1024
    X, y, Xt, yt = synthetic_classes(K, d, 20, seed=1, n_test=max(K, a.n_test), spread=4.5)
    Xt, yt = Xt[:a.n_test].astype(np.float32), yt[:a.n_test]
    legacy = cached_model("synthetic-K%d-d%d-n20-s4.5" % (K, d), lambda: _train(X, y))
    path = REPO / "bench" / "out" / ("synthetic-K%d-d%d-n20-s4.5-rows.hsvm" % (K, d))
    if not path.exists():
        save_model(legacy, path)
    size = path.stat().st_size

    def load_and_verify():
        load_model(path).verify()

    load_and_verify()   # warm the page cache
    t_verify = _median(load_and_verify, a.repeat)

    model = load_model(path)
    exact = Predictor(model)
    exact.predict(Xt[:50])
    t_exact = _median(lambda: exact.predict(Xt), a.repeat) / Xt.shape[0]

    h = hash_model(model, bits=1024, seed=0)
    checked = load_model(path)
    fast = Predictor(checked, h, filter_k=30, threads=1)
    unchecked = load_model(path)
    unchecked.container = None      # no checks: the baseline
    fast_unchecked = Predictor(unchecked, h, filter_k=30, threads=1)
    fast_unchecked.predict(Xt[:50])
    t_lazy_first = _time_once(lambda: fast.predict(Xt))        # first pass verifies the touched blocks
    t_hashed = _median(lambda: fast_unchecked.predict(Xt), a.repeat)
    blocks = int(checked.container._done["W"].sum())
    total_blocks = checked.container._done["W"].shape[0]
    rows_checked = int(checked.container._rows_done.get("W", np.zeros(0, bool)).sum())

    rows = [
        ["load + verify all of W", "%.3f s" % t_verify, "%.1f GB/s" % (size / t_verify / 1e9),
         "%.2f%%" % (100 * t_verify / (10000 * t_exact)), "%.2f%%" % (100 * t_verify / (Xt.shape[0] * t_exact))],
        ["exact prediction, per sample", "%.2f ms" % (1e3 * t_exact), "", "", ""],
        ["hashed (1024 bits, k=30), first pass with lazy checks", "%.3f s" % t_lazy_first,
         "%d of %d blocks, %d of %d rows one by one" % (blocks, total_blocks, rows_checked, checked.n_classifiers), "", "+%.1f%% over unchecked" % (100 * (t_lazy_first / t_hashed - 1))],
        ["hashed, unchecked", "%.3f s" % t_hashed, "", "", ""],
    ]
    print("model: %s, %.2f GB; %d test samples; %s" % (path.name, size / 1e9, Xt.shape[0], machine_line()))
    print(markdown_table(["what", "time", "rate / extent", "share of exact, 10,000 samples",
                          "share of exact, samples measured"], rows))
    if a.json:
        print(json.dumps({"verify_seconds": t_verify, "bytes": size, "exact_seconds_per_sample": t_exact,
                          "hashed_lazy_first_seconds": t_lazy_first, "hashed_unchecked_seconds": t_hashed,
                          "blocks_verified": blocks, "blocks": total_blocks,
                          "rows_verified_one_by_one": rows_checked}))


def _time_once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _train(X, y):
    from hsvm_cli.train.ovo import train_ovo
    return train_ovo(X, y, C=1.0, seed=0, jobs=2)


if __name__ == "__main__":
    main()
