"""Benchmark of the fused Hamming voting kernel (hsvm_cli.hashing.hamming) against
faiss.hammings and the numpy reference, one thread, per instruction-set path.

    .venv/bin/python bench/bench_kernel.py [--json] [--n 2048] [--classes 242]
    .venv/bin/python bench/bench_kernel.py --classes 1000 --n 768 --bits 256 512 1024 \
        --vote-only --ceiling --threads 2

Rates are classifier-sample pairs per second per core: n * m divided by the
median per-call CPU time of the calling thread (every contestant runs
single-threaded in that thread, so time stolen by other processes on a shared
machine is not counted).  The optional --threads rows time the default vote
kernel on that many threads: per core from the process CPU time, and the
wall-clock speed-up over one thread (which only reaches the thread count when
the cores are otherwise idle).  The distance kernel and faiss write the full
n x m int32 matrix into a preallocated array; the vote kernel only writes n x K.

--ceiling adds, per bit count, the in-L1 rates the vote rows are compared
with (medians over rounds interleaved with the vote rows): "ceiling
distances" is the distance kernel (XOR + popcount of the same packed slices,
its output into a preallocated array that stays in L2) on as many codes as
fill half the L1 data cache, i.e. the popcount rate with every code in L1;
"ceiling vote" is the vote kernel itself on a classifier set of that size (8
classes against as many others), which also pays its per-class work.  The
"% ceiling" column divides each vote row by "ceiling distances".
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
from hsvm_cli.support.kernels import available_kernels, kernel_id, selected_kernel
from hsvm_cli.support.native import ffi, lib

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


def interleaved_cpu_seconds(fns, repeat, warm=()):
    """Median thread-CPU seconds of each fn, timed in rounds that call every fn
    once, after one warm-up round (a busy machine then slows them alike).  The
    fns whose index is in `warm` also get an untimed call right before each
    timed one: short calls whose data the others evict from the caches."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for i, (t, fn) in enumerate(zip(times, fns)):
            if i in warm:
                fn()
            t0 = time.thread_time()
            fn()
            t.append(time.thread_time() - t0)
    return [statistics.median(t) for t in times]


def ceiling_rows(bits, args, rng, extra):
    """The in-L1 rates (see the module docstring) of the default kernel, timed
    in rounds interleaved with `extra` [(name, fn, pairs)]; calls the C
    entry points directly, with preallocated outputs, so that the Python
    layer's per-call cost does not count against these short calls."""
    words = bits // 64
    kid = kernel_id(None)
    l1 = lib.hsvm_cache_bytes(1)
    m = max(16, (l1 // 2) // (8 * words)) // 16 * 16
    n, calls = 256, 16
    x = rng.integers(0, 2**64, size=(n, words), dtype=np.uint64, endpoint=False)
    c = rng.integers(0, 2**64, size=(m, words), dtype=np.uint64, endpoint=False)
    codes = HammingCodes(c, bits=bits)
    out = np.zeros((n, m), dtype=np.int32)
    xp, op = ffi.from_buffer("uint64_t[]", x), ffi.from_buffer("int32_t[]", out)

    def dist():
        for _ in range(calls):
            lib.hsvm_hamming_dist(codes._plan, xp, n, words, op, kid)

    # Vote: 8 classes a against m / 8 classes b, runs of m / 8 pairs.
    A, B = 8, m // 8
    pa = np.repeat(np.arange(A), B).astype(np.int32)
    pb = np.tile(np.arange(A, A + B), A).astype(np.int32)
    thr = rng.integers(bits // 2 - 8, bits // 2 + 9, size=m).astype(np.int32)
    voter = HammingVoter(c, thr, pa, pb, bags=1, n_classes=A + B, bits=bits)
    votes = np.zeros((n, A + B), dtype=np.int32)
    dsum = np.zeros((n, A + B), dtype=np.int32)
    vp, dp = ffi.from_buffer("int32_t[]", votes), ffi.from_buffer("int32_t[]", dsum)

    def vote():
        for _ in range(calls):
            lib.hsvm_hamming_vote(voter._plan, xp, n, words, vp, dp, kid)

    fns = [dist, vote] + [fn for _, fn, _ in extra]
    secs = interleaved_cpu_seconds(fns, args.repeat, warm=(0, 1))
    rows = [{"bits": bits, "what": "ceiling distances %s" % selected_kernel(), "seconds": secs[0],
             "pairs_per_s": calls * n * m / secs[0], "ceiling_codes": m},
            {"bits": bits, "what": "ceiling vote %s" % selected_kernel(), "seconds": secs[1],
             "pairs_per_s": calls * n * m / secs[1], "ceiling_codes": m}]
    rows += [{"bits": bits, "what": name, "seconds": t, "pairs_per_s": pairs / t}
             for (name, _, pairs), t in zip(extra, secs[2:])]
    return rows


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
    kernels = list(reversed(available_kernels()))
    votes_of = {k: (lambda k=k: voter.vote(x, threads=1, kernel=k)) for k in kernels}
    if args.ceiling:
        # The default kernel's row is timed in the ceiling's rounds.
        rows += ceiling_rows(bits, args, rng, [("vote %s" % kernels[0], votes_of[kernels[0]], pairs)])
        kernels = kernels[1:]
    for kernel in kernels:
        row("vote %s" % kernel, cpu_seconds(votes_of[kernel], args.repeat))
    first = next(r for r in rows if r["what"].startswith("vote"))
    first["pack_seconds"] = pack_s
    first["packed_accumulation"] = voter.packed
    first["blocking"] = voter.blocking()
    if voter.packed:
        # The same kernel without the packed accumulation (two read-modify-
        # writes per pair, the fallback for very large sums).
        plain = HammingVoter(c, thr, pair_a, pair_b, bags=1, n_classes=K, bits=bits,
                             _packed=False)
        row("vote %s 2-array" % selected_kernel(),
            cpu_seconds(lambda: plain.vote(x, threads=1), args.repeat))
    if args.threads > 1:
        wall, cpu = {1: [], args.threads: []}, []
        voter.vote(x, threads=args.threads)
        for _ in range(args.repeat):
            for t in (1, args.threads):
                t0, c0 = time.perf_counter(), time.process_time()
                voter.vote(x, threads=t)
                wall[t].append(time.perf_counter() - t0)
                if t > 1:
                    cpu.append(time.process_time() - c0)
        row("vote %d threads" % args.threads, statistics.median(cpu))
        rows[-1]["speedup_wall"] = statistics.median(wall[1]) / statistics.median(wall[args.threads])
        rows[-1]["wall_pairs_per_s"] = pairs / statistics.median(wall[args.threads])

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
    out = None          # the distances' memory back before the reference runs (not `del`: the lambdas above read it)

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
    parser.add_argument("--ceiling", action="store_true",
                        help="add the in-L1 ceiling rows and each vote row's share of it")
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
    ceiling = {r["bits"]: r["pairs_per_s"] for r in rows if r["what"].startswith("ceiling distances")}
    for r in rows:
        comparable = r["bits"] in faiss_rate and "speedup_wall" not in r
        r["vs_faiss"] = r["pairs_per_s"] / faiss_rate[r["bits"]] if comparable else None
        r["of_ceiling"] = (r["pairs_per_s"] / ceiling[r["bits"]]
                           if r["bits"] in ceiling and r["what"].startswith("vote") else None)

    meta = {"n": args.n, "classes": args.classes, "m": args.classes * (args.classes - 1) // 2,
            "cache_bytes": [int(lib.hsvm_cache_bytes(level)) for level in (1, 2, 3)],
            "available": list(available_kernels()), "selected": selected_kernel(),
            "faiss": getattr(faiss, "__version__", None), "machine": platform.processor()
            or platform.machine(), "numpy": np.__version__}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=1))
        return
    print("n=%(n)d samples, m=%(m)d classifiers (K=%(classes)d, 1 bag), one thread; "
          "kernels here: %(available)s, default %(selected)s; caches L1d/L2/L3 %(caches)s"
          % dict(meta, available=", ".join(meta["available"]),
                 caches=" / ".join("%d KB" % (b >> 10) for b in meta["cache_bytes"])))
    print("command: .venv/bin/python bench/bench_kernel.py %s" % " ".join(argv if argv is not None
                                                                          else sys.argv[1:]))
    print()
    print("| bits | what | pairs/s/core | vs faiss | % ceiling |")
    print("|---|---|---|---|---|")
    for r in rows:
        ratio = "%.2fx" % r["vs_faiss"] if r["vs_faiss"] is not None else "n/a"
        share = "%.0f%%" % (100 * r["of_ceiling"]) if r["of_ceiling"] is not None else ""
        what = r["what"] + (" (%d codes)" % r["ceiling_codes"] if "ceiling_codes" in r else "")
        print("| %d | %s | %.3e | %s | %s |" % (r["bits"], what, r["pairs_per_s"], ratio, share))
    print()
    for r in rows:
        if "speedup_wall" in r:
            print("%d bits: %s: per core (process CPU time) %.3e pairs/s, wall clock %.3e pairs/s, "
                  "speed-up over one thread %.2fx" % (r["bits"], r["what"], r["pairs_per_s"],
                                                       r["wall_pairs_per_s"], r["speedup_wall"]))
    for r in rows:
        if "pack_seconds" in r:
            print("packing the %d-bit classifiers (once per model): %.1f ms; packed "
                  "accumulation: %s; blocking %d samples x %d blocks of 16"
                  % (r["bits"], 1e3 * r["pack_seconds"],
                     "yes" if r["packed_accumulation"] else "no (sums too large)", *r["blocking"]))


if __name__ == "__main__":
    main()
