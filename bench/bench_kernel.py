"""Benchmark of the fused Hamming voting kernel (hsvm_cli.hamming) against
faiss.hammings and the numpy reference, one thread, per instruction-set path.

    .venv/bin/python bench/bench_kernel.py [--json] [--n 2048] [--classes 242]

Rates are classifier-sample pairs per second per core: n * m divided by the
median per-call CPU time of the calling thread (every contestant runs
single-threaded in that thread, so time stolen by other processes on a shared
machine is not counted).  The optional --threads row is wall-clock time
multiplied by the thread count.  The distance kernel and faiss write the full n x m
int32 matrix into a preallocated array; the vote kernel only writes n x K.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

# Before numpy loads: keep BLAS worker threads from spinning on the other cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from hsvm_cli.hashing.hamming import HammingCodes, HammingVoter
from hsvm_cli.models.pairs import canonical_pairs
from hsvm_cli.support.kernels import available_kernels, selected_kernel

import common  # noqa: F401  (sys.path: the repository and tests/oracles)
from oracles.hamming_ref import hamming_vote_ref

try:
    import faiss
except ImportError:  # the bench extra is optional
    faiss = None

BITS = (256, 512, 1024, 4096)


def cpu_seconds(fn, repeat):
    """Median thread-CPU seconds of fn() over `repeat` calls, after one warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times)


def bench_bits(bits, args, rng):
    n, K = args.n, args.classes
    pair_a, pair_b = canonical_pairs(K)
    m = pair_a.size
    words = bits // 64
    x = rng.integers(0, 2**64, size=(n, words), dtype=np.uint64, endpoint=False)
    c = rng.integers(0, 2**64, size=(m, words), dtype=np.uint64, endpoint=False)
    # Thresholds straddling the distance distribution: about half the
    # classifiers fire, so the vote logic sees both outcomes.
    thr = rng.integers(bits // 2 - 8, bits // 2 + 9, size=m).astype(np.int32)
    pairs = n * m
    rows = []

    def row(name, seconds, scale=1.0):
        rows.append({"bits": bits, "what": name, "seconds": seconds,
                     "pairs_per_s": pairs * scale / seconds if seconds else float("nan")})

    t0 = time.perf_counter()
    voter = HammingVoter(c, thr, pair_a, pair_b, bags=1, n_classes=K, bits=bits)
    pack_s = time.perf_counter() - t0
    for kernel in reversed(available_kernels()):
        row("vote %s" % kernel, cpu_seconds(lambda: voter.vote(x, threads=1, kernel=kernel),
                                            args.repeat))
    rows[0]["pack_seconds"] = pack_s
    rows[0]["packed_accumulation"] = voter.packed
    if voter.packed:
        # The same kernel without the packed accumulation (two read-modify-
        # writes per pair, the fallback for very large sums).
        plain = HammingVoter(c, thr, pair_a, pair_b, bags=1, n_classes=K, bits=bits,
                             _packed=False)
        row("vote %s 2-array" % selected_kernel(),
            cpu_seconds(lambda: plain.vote(x, threads=1), args.repeat))
    if args.threads > 1:
        wall = {}
        for t in (1, args.threads):
            times = []
            for _ in range(args.repeat + 1):
                t0 = time.perf_counter()
                voter.vote(x, threads=t)
                times.append(time.perf_counter() - t0)
            wall[t] = statistics.median(times[1:])
        row("vote %d threads" % args.threads, wall[args.threads] * args.threads)
        rows[-1]["speedup_wall"] = wall[1] / wall[args.threads]

    if args.vote_only:
        return rows
    out = np.zeros((n, m), dtype=np.int32)
    prepared = HammingCodes(c, bits=bits)
    for kernel in reversed(available_kernels()):
        if kernel != selected_kernel() and not args.all_dist:
            continue
        row("distances %s" % kernel, cpu_seconds(
            lambda: prepared.distances(x, threads=1, kernel=kernel, out=out), args.repeat))

    if faiss is not None:
        faiss.omp_set_num_threads(1)
        xb, cb = x.view(np.uint8), c.view(np.uint8)
        fout = np.zeros((n, m), dtype=np.int32)
        row("faiss.hammings", cpu_seconds(
            lambda: faiss.hammings(faiss.swig_ptr(xb), faiss.swig_ptr(cb), n, m, bits // 8,
                                   faiss.swig_ptr(fout)), args.repeat))
        # Same distances, or the comparison would be meaningless.
        prepared.distances(x[:64], threads=1, out=out[:64])
        assert np.array_equal(fout[:64], out[:64])
    del out

    sub = max(1, args.ref_samples)
    row("numpy reference", cpu_seconds(
        lambda: hamming_vote_ref(x[:sub], c, thr, pair_a, pair_b, bags=1, n_classes=K,
                                 bits=bits), 1), scale=sub / n)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--n", type=int, default=2048, help="samples (default 2048)")
    parser.add_argument("--classes", type=int, default=242,
                        help="classes K; m = K(K-1)/2 one-bag classifiers (default 242)")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per entry")
    parser.add_argument("--ref-samples", type=int, default=8,
                        help="samples for the numpy reference (its rate is scaled)")
    parser.add_argument("--bits", type=int, nargs="*", default=list(BITS))
    parser.add_argument("--vote-only", action="store_true",
                        help="skip distances, faiss and the reference (no n x m matrices: "
                             "for many classes)")
    parser.add_argument("--threads", type=int, default=0,
                        help="also time the default vote kernel with this many threads "
                             "(wall clock; reported per core, with the speed-up)")
    parser.add_argument("--all-dist", action="store_true",
                        help="time the distance kernel on every path, not only the default")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(2024)
    rows = []
    for bits in args.bits:
        rows += bench_bits(bits, args, rng)
        if not args.json:
            print("... %d bits done" % bits, file=sys.stderr, flush=True)
    faiss_rate = {r["bits"]: r["pairs_per_s"] for r in rows if r["what"] == "faiss.hammings"}
    for r in rows:
        # Multi-threaded rows are wall-clock based: not comparable to faiss's CPU time.
        comparable = r["bits"] in faiss_rate and "speedup_wall" not in r
        r["vs_faiss"] = r["pairs_per_s"] / faiss_rate[r["bits"]] if comparable else None

    meta = {"n": args.n, "classes": args.classes, "m": args.classes * (args.classes - 1) // 2,
            "available": list(available_kernels()), "selected": selected_kernel(),
            "faiss": getattr(faiss, "__version__", None), "machine": platform.processor()
            or platform.machine(), "numpy": np.__version__}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=1))
        return
    print("n=%(n)d samples, m=%(m)d classifiers (K=%(classes)d, 1 bag), one thread; "
          "kernels here: %(available)s, default %(selected)s" % dict(meta, available=", ".join(
              meta["available"])))
    print("%6s  %-20s %14s %10s" % ("bits", "what", "pairs/s/core", "vs faiss"))
    for r in rows:
        ratio = "%9.2fx" % r["vs_faiss"] if r["vs_faiss"] is not None else "      n/a"
        print("%6d  %-20s %14.3e %10s" % (r["bits"], r["what"], r["pairs_per_s"], ratio))
    for r in rows:
        if "speedup_wall" in r:
            print("%d bits: %s, wall-clock speed-up over one thread %.2fx"
                  % (r["bits"], r["what"], r["speedup_wall"]))
    for r in rows:
        if "pack_seconds" in r:
            print("packing the %d-bit classifiers (once per model): %.1f ms; packed "
                  "accumulation: %s" % (r["bits"], 1e3 * r["pack_seconds"],
                                        "yes" if r["packed_accumulation"] else "no (sums too large)"))


if __name__ == "__main__":
    main()
