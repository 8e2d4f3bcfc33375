"""Exact prediction's vote counting (native/votes.c) against its float32 GEMM,
one thread, per instruction-set path, on the synthetic K = 300 and K = 1,000
models of bench_filter / bench_first_stage (train-ovo defaults, canonical pair
order, one bag).

    .venv/bin/python bench/bench_exact_votes.py [--sets 300 1000] [--n N] [--repeat 7] [--json]

Per model and one thread (BLAS included; OPENBLAS_NUM_THREADS=1), CPU time of
the calling thread, medians over --repeat rounds that interleave every
contestant (so a busy machine slows them alike):

* GEMM alone: ``X @ W.T`` in ExactScorer's blocks of rows (float32 BLAS,
  into one reused buffer: the GEMM at its best);
* votes <kernel>: ``ovo_votes`` on those blocks' products with the bias added
  by the kernel (as ExactScorer does), as ns per (sample, pair), per code path;
* exact prediction: ``ExactScorer.votes`` (GEMM + bias + votes), and its ratio
  to GEMM alone (median of the per-round ratios).

The K = 1,000 model (2 GB of W) is bench/out/synthetic-K1000-d1024-n20-s4.5.hsvm,
trained once by bench_first_stage (or copied there); the K = 300 one is
trained here on first use (a few minutes) and cached like bench_filter's."""
import argparse
import json
import os
import statistics
import sys
import time

# Before numpy loads: one BLAS thread, in the calling thread.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402

from hsvm_cli.predict.exact import ExactScorer, ovo_votes  # noqa: E402
from hsvm_cli.preprocess import prepare  # noqa: E402
from hsvm_cli.support.kernels import available_kernels  # noqa: E402

from common import cached_model, machine_line, markdown_table, synthetic_classes  # noqa: E402

# (classes, dim, per_class, spread): the cache keys of bench_filter and
# bench_first_stage; then the default test samples (whole blocks of
# ExactScorer rows: 2 x 374 at K = 300, 4 x 33 at K = 1,000, whose GEMM takes
# about 20 ms per sample).
SETS = {300: (300, 1000, 50, 5.0), 1000: (1000, 1024, 20, 4.5)}
DEFAULT_N = {300: 748, 1000: 132}


def load_set(K, n):
    from hsvm_cli.train.ovo import train_ovo
    classes, dim, per_class, spread = SETS[K]
    # n_test // classes test samples are drawn per class: ask for at least n.
    X, y, Xt, _ = synthetic_classes(classes, dim, per_class, seed=1, n_test=-(-n // classes) * classes,
                                    spread=spread)
    model = cached_model("synthetic-K%d-d%d-n%d-s%g" % (classes, dim, per_class, spread),
                         lambda: train_ovo(X, y, C=1.0, seed=0, jobs=2))
    return model, prepare(model.normalize, Xt[:n])


def thread_seconds(fn):
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def bench_set(K, a):
    model, X = load_set(K, a.n or DEFAULT_N[K])
    scorer = ExactScorer(model)
    W, m = scorer.W, model
    rows = scorer.block_rows()
    n = X.shape[0] - X.shape[0] % rows if X.shape[0] >= rows else X.shape[0]
    X = np.ascontiguousarray(X[:n])
    blocks = [X[s:s + rows] for s in range(0, n, rows)]
    prods = [scorer.products(b) for b in blocks]
    buf = np.empty((rows, W.shape[0]), dtype=np.float32)
    cells = n * m.pair_a.size
    kernels = list(reversed(available_kernels()))

    def gemm():
        for b in blocks:
            np.matmul(b, W.T, out=buf[:b.shape[0]])

    def votes(kernel):
        def run():
            for p in prods:
                ovo_votes(p, m.pair_a, m.pair_b, bags=m.bags, n_classes=m.n_classes, bias=scorer.b,
                          kernel=kernel)
        return run

    def exact():
        scorer.votes(X)

    contestants = [("gemm", gemm), ("exact", exact)] + [("votes " + k, votes(k)) for k in kernels]
    for _, fn in contestants:  # warm-up: page in W, the outputs, the library
        fn()
    times = {name: [] for name, _ in contestants}
    for _ in range(a.repeat):
        for name, fn in contestants:
            times[name].append(thread_seconds(fn))
    med = {name: statistics.median(t) for name, t in times.items()}
    ratio = statistics.median(e / g for e, g in zip(times["exact"], times["gemm"]))
    return {
        "K": K, "d": W.shape[1], "pairs": int(m.pair_a.size), "n": n, "block_rows": rows,
        "gemm_ns_per_cell": 1e9 * med["gemm"] / cells,
        "exact_ns_per_cell": 1e9 * med["exact"] / cells,
        "exact_over_gemm": ratio,
        "votes_ns_per_cell": {k: 1e9 * med["votes " + k] / cells for k in kernels},
        "rounds_seconds": times,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, nargs="*", default=[300, 1000], choices=sorted(SETS))
    ap.add_argument("--n", type=int, default=None,
                    help="test samples (cut to whole blocks of ExactScorer rows; default 748 at "
                         "K = 300, 132 at K = 1,000)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = []
    for K in a.sets:
        results.append(bench_set(K, a))
        print("... K=%d done" % K, file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps({"machine": machine_line(), "results": results}, indent=1))
        return
    print("one thread, CPU time per core, medians of %d interleaved rounds; %s" % (a.repeat, machine_line()))
    print("command: .venv/bin/python bench/bench_exact_votes.py %s" % " ".join(argv or sys.argv[1:]))
    kernels = list(results[0]["votes_ns_per_cell"]) if results else []
    header = (["K", "d", "pairs", "samples", "GEMM ns/cell"] + ["votes %s ns/cell" % k for k in kernels]
              + ["exact ns/cell", "exact / GEMM"])
    table = [[r["K"], r["d"], r["pairs"], r["n"], "%.2f" % r["gemm_ns_per_cell"]]
             + ["%.2f" % r["votes_ns_per_cell"][k] for k in kernels]
             + ["%.2f" % r["exact_ns_per_cell"], "%.3f" % r["exact_over_gemm"]] for r in results]
    print(markdown_table(header, table))
    print("cell = one (sample, pair); exact = ExactScorer.votes (GEMM + bias + votes, default kernel)")


if __name__ == "__main__":
    main()
