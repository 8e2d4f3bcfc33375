"""How long `hsvm calibrate` takes on large validation sets: a 107-class model
with 27,000 validation rows and a 1,000-class model with 5,000.

    .venv/bin/python bench/bench_calibrate_time.py [--cases k107,k1000] [--threads 2] [--repeat 3] [--json]
    .venv/bin/python bench/bench_calibrate_time.py --cases k1000-raw

k107: synthetic Gaussian classes (bench/common.py `synthetic_classes`: K=107,
d=256, unit class means, spread 7), 100 training samples per class trained with
train_ovo (C=1, 5,671 pairs), 27,000 validation rows (252 per class), hash
model of 1,024 bits.  k1000: K=1,000, d=1,024; training 499,500 pairs with
LIBLINEAR would take hours here, so the model is built from the class means
(the nearest-mean rule as a one-vs-one model: w_ab = mu_a - mu_b,
b_ab = (|mu_b|^2 - |mu_a|^2)/2, 2 GB of float32), validation 5,000 rows (5 per
class), hash model of 1,024 bits.  The class means have unit length, so every
bias is 0 and the rule is the same for x and x/|x|: k1000 records normalize
"l2" (what train-ovo makes, and what the hash filter is built for);
k1000-raw records "none", so the filter takes its thresholds at each sample's
norm (predict/raw_filter.py, the path of imported and --normalize none
models).  Every case runs `calibrate` as the command does
(default grid of bits, k and thresholds; --repeat timed runs on the fixed
timing subsample) and report its wall time and the time of each part."""
import argparse
import json
import time

import numpy as np

from hsvm_cli.models.hashed import hash_model
from hsvm_cli.models.ovo import OvoModel
from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.train.ovo import train_ovo
from hsvm_cli.tune import MIN_TIMED_ROWS, TIMING_BUDGET, TIMING_ROWS, calibrate, format_grid

from common import machine_line, markdown_table, synthetic_classes


def case_k107(threads):
    X, y, Xv, yv = synthetic_classes(107, 256, 100, seed=7, n_test=27000)
    t0 = time.perf_counter()
    model = train_ovo(X, y, C=1.0, seed=0, jobs=threads)
    return model, Xv, yv, {"train_seconds": time.perf_counter() - t0}


def nearest_mean_model(means, normalize):
    """The one-vs-one model of the nearest-mean rule (a over b when x is
    closer to mu_a), recording ``normalize``."""
    K, d = means.shape
    a, b = canonical_pairs(K)
    W = np.empty((a.shape[0], d), dtype=np.float32)
    step = 1 << 16
    for s in range(0, a.shape[0], step):
        W[s:s + step] = means[a[s:s + step]] - means[b[s:s + step]]
    sq = np.einsum("ij,ij->i", means, means)
    bias = ((sq[b] - sq[a]) / 2).astype(np.float32)
    return OvoModel(classes=np.arange(1, K + 1, dtype=np.int64), pair_a=a, pair_b=b, W=W, b=bias,
                    normalize=normalize, params={"built": "nearest class mean"})


def case_k1000(threads, normalize="l2"):
    K, d = 1000, 1024
    rng = np.random.default_rng(11)
    means = rng.standard_normal((K, d)).astype(np.float32)
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    yv = np.repeat(np.arange(1, K + 1), 5)
    Xv = means[yv - 1] + 1.2 * rng.standard_normal((yv.shape[0], d)).astype(np.float32) / np.sqrt(d)
    t0 = time.perf_counter()
    model = nearest_mean_model(means, normalize)
    return model, Xv, yv, {"build_seconds": time.perf_counter() - t0}


CASES = {"k107": case_k107, "k1000": case_k1000,
         "k1000-raw": lambda threads: case_k1000(threads, normalize="none")}


def run(name, threads, repeat):
    model, Xv, yv, info = CASES[name](threads)
    t0 = time.perf_counter()
    h = hash_model(model, bits=1024, seed=0)
    info["hash_seconds"] = time.perf_counter() - t0
    steps = []
    last = [time.perf_counter()]

    def progress(done, total, what):
        now = time.perf_counter()
        steps.append((what, now - last[0]))
        last[0] = now

    t0 = time.perf_counter()
    cal = calibrate(model, h, Xv, yv, threads=threads, repeat=repeat, progress=progress)
    seconds = time.perf_counter() - t0
    parts = {"exact pass": 0.0, "probabilities": 0.0, "exact timed": 0.0, "filter passes": 0.0, "settings": 0.0,
             "settings accuracy": 0.0, "two-stage sharpness": 0.0}
    for what, s in steps:
        key = what if what in parts else ("filter passes" if what.endswith("filter") else "settings")
        parts[key] += s
        if what.endswith("accuracy"):
            # the shared refines' accuracy passes, also counted in "settings"
            parts["settings accuracy"] += s
    timed_rows = [g.get("timed_rows") for g in cal.grid if g.get("timed_rows") is not None]
    return {"case": name, "K": model.n_classes, "pairs": model.n_pairs, "validation_rows": int(Xv.shape[0]),
            "calibrate_seconds": seconds, "parts": parts, "setting": cal.setting.as_dict(),
            "timed_rows_min": min(timed_rows) if timed_rows else None,
            "certified_refines": cal.info.get("certified_refines"),
            "settings_on_fewer_rows": sum(r < cal.info["timed_samples"] for r in timed_rows),
            "sharpness": cal.info.get("sharpness"), "prior_samples": cal.info.get("prior_samples"),
            "grid": format_grid(cal), **info}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", default="k107,k1000")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = [run(c, a.threads, a.repeat) for c in a.cases.split(",")]
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print(machine_line())
    print("command: .venv/bin/python bench/bench_calibrate_time.py --cases %s --threads %d --repeat %d"
          % (a.cases, a.threads, a.repeat))
    print("timing subsample: %d rows; each setting timed within %g s (median of up to %d runs, fewer rows for "
          "slower settings, at least %d)\n" % (TIMING_ROWS, TIMING_BUDGET, a.repeat, MIN_TIMED_ROWS))
    rows = [[r["case"], r["K"], r["pairs"], r["validation_rows"], "%.1f s" % r["calibrate_seconds"]]
            + ["%.1f" % r["parts"][k] for k in ("exact pass", "probabilities", "exact timed", "filter passes",
                                                "settings", "settings accuracy", "two-stage sharpness")]
            + ["%s (%d settings)" % (r["timed_rows_min"], r["settings_on_fewer_rows"])] for r in results]
    print(markdown_table(["case", "K", "pairs", "validation rows", "calibrate", "exact pass s", "probabilities s",
                          "exact timed s", "filter passes s", "settings s", "of which accuracy s",
                          "two-stage sharpness s", "fewest rows timed"], rows))
    for r in results:
        print("\n%s: chosen %s, prior samples n0 = %g, sharpness %.3g; max-wins refines scored on the exact pass: "
              "%s\n" % (r["case"], r["setting"], r["prior_samples"], r["sharpness"], r["certified_refines"]))
        print(r["grid"])


if __name__ == "__main__":
    main()
