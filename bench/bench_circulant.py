"""Circulant projections against the dense Gaussian one, and learned circulant hashes.

    .venv/bin/python bench/bench_circulant.py [--parts fidelity,throughput,size,kernel,learned] [--json FILE]
    .venv/bin/python bench/bench_circulant.py --quick      # throughput and size on a small grid, ~1 min

The whole default run takes over an hour on a 2-vCPU machine (the learned part
on fashion-mnist-20k at L = 256 alone ~20 min), so it is not in run_all.py;
``--quick`` (the throughput and size parts at d in {784, 4096}, D' in {256,
4096}, one repeat) is.  The figures of BENCHMARKS.md, "Circulant
projections", came from these runs (on the circulant branch, before the
package was laid out by pipeline stage; the code measured is the same):

    bench_circulant.py --parts fidelity                      # seeds 0-2, full grids
    bench_circulant.py --parts fidelity --seeds 0,1,2,3,4,5,6,7,8,9,10,11 \
        --agreement-sets "" --table-bits 256,512             # the noisy low-bit settings
    bench_circulant.py --parts throughput,size
    bench_circulant.py --parts learned --learned-targets itq
    bench_circulant.py --parts learned --learned-sets omniglot-242 --learned-targets itq --svm-cs 0.1,1,10
    bench_circulant.py --parts learned --learned-sets omniglot-242 --learned-targets gaussian-codes,planted
    bench_circulant.py --parts learned --learned-sets fashion-mnist-20k --learned-bits 64 \
        --learned-targets gaussian-codes,planted

Parts:

* fidelity -- single-classifier agreement with the exact decisions at 256 /
  1024 / 4096 bits (omniglot-242, reuters-r52; 2,000 random classifiers, all
  test samples) and filter-and-refine accuracy at BENCHMARKS.md's Table 1
  settings (omniglot-242, reuters-r52, fashion-mnist-20k; hashed at 2048 bits;
  D' in 256..2048, k = 1/3/10 % of K, at least 2), Gaussian vs circulant,
  each over ``--seeds`` projection seeds (the same trained models).
* throughput -- samples/s of hashing (projection with exact signs, the
  samples already normalised): dense random unit samples with d in {784,
  4096, 16384} and D' in {256, 1024, 4096}, and the sparse reuters-r52 test
  set; one thread (per-core: thread CPU time) and two threads (wall clock;
  each thread a block of samples with BLAS on one thread, as HashFilter runs).
  "Gaussian" is hsvm's SignProjector (float32 BLAS, then the near-zero
  entries recomputed), "Gaussian BLAS only" the matrix product alone (a lower
  bound that skips the exact-sign step).
* size -- bytes of a stored circulant projection against the d * ceil(D'/d) * 8
  bound and the Gaussian matrix, and the time from nothing to a projector
  ready to hash: derived from the seed, and read from a container file.
* kernel -- samples/s of turning kernel-hash subspace coordinates (m of
  them) into bits: the dense Gaussian k x m product with its exact-sign step
  against the circulant projection (kernel-hash --projection circulant), at
  Hash-SVM's sizes (m = 1024 / 4096, k = 4096 / 16384).
* learned -- learned circulant hash functions fitted to ITQ codes on
  fashion-mnist-20k and omniglot-242 at L in {16, ..., 256}: per-bit accuracy
  (train / test) of the exact circulant SVM, CBE's frequency-domain solution
  (best lambda of a grid on the training set) and L independent LIBLINEAR
  SVMs, and recall@100 of the ITQ codes' 10 nearest neighbours; also fitted to
  hsvm's Gaussian sign-projection codes and to codes planted by a random
  circulant hash.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from hsvm_cli.hashing.angles import thresholds
from hsvm_cli.hashing.circulant import CirculantProjection
from hsvm_cli.hashing.hamming import hamming_distances
from hsvm_cli.hashing.projection import SignProjector, pack_signs, projection_matrix
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.predict.filter import HashFilter
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.preprocess import prepare

from common import REAL_SETS, load_trained, machine_line, markdown_table, shared_data

COMMAND = "    .venv/bin/python bench/bench_circulant.py " + " ".join(sys.argv[1:])


# ------------------------------------------------------------------ fidelity

def _agreement(model, h, Xn, rows, exact_dec, bits_list):
    xcodes = HashFilter(h, bits=max(bits_list)).hash_samples(Xn)
    out = {}
    for bits in bits_list:
        dist = hamming_distances(xcodes, np.ascontiguousarray(h.codes[rows]), bits=bits)
        out[bits] = float(((dist < thresholds(h.theta[rows], bits)) == exact_dec).mean())
    return out


def fidelity(sets, seeds, table_sets, table_bits=(256, 512, 1024, 2048)):
    bits_list = (256, 1024, 4096)
    agree = []
    for name in sets:
        loaded = load_trained(name)
        if loaded is None:
            continue
        model, Xt, yt = loaded
        Xn = prepare("l2", Xt)
        rng = np.random.default_rng(0)
        rows = np.sort(rng.choice(model.n_classifiers, min(2000, model.n_classifiers), replace=False))
        exact_dec = (np.asarray(Xn @ model.W[rows].T) + model.b[rows]) > 0
        for seed in seeds:
            for kind in ("gaussian", "circulant"):
                h = hash_model(model, bits=max(bits_list), seed=seed, projection=kind)
                for bits, a in _agreement(model, h, Xn, rows, exact_dec, bits_list).items():
                    agree.append({"set": name, "seed": seed, "kind": kind, "bits": bits, "agreement": a})
        print("fidelity: %s agreement done" % name, file=sys.stderr)
    table = []
    for name in table_sets:
        loaded = load_trained(name)
        if loaded is None:
            continue
        model, Xt, yt = loaded
        K = model.n_classes
        exact = Predictor(model).predict(Xt)
        ks = sorted({max(2, int(round(f * K))) for f in (0.01, 0.03, 0.1)})
        for seed in seeds:
            for kind in ("gaussian", "circulant"):
                h = hash_model(model, bits=2048, seed=seed, projection=kind)
                for bits in table_bits:
                    for k in ks:
                        hp = Predictor(model, h, bits=bits, filter_k=k, threads=1)
                        labels = hp.predict_block(Xt).labels
                        table.append({"set": name, "seed": seed, "kind": kind, "bits": bits, "k": k,
                                      "accuracy": float((labels == yt).mean()),
                                      "exact_accuracy": float((exact == yt).mean())})
        print("fidelity: %s table done" % name, file=sys.stderr)
    return {"agreement": agree, "table1": table}


def print_fidelity(res, seeds):
    ag = res["agreement"]
    rows = []
    for name in sorted({a["set"] for a in ag}):
        for bits in (256, 1024, 4096):
            g = [a["agreement"] for a in ag if a["set"] == name and a["bits"] == bits and a["kind"] == "gaussian"]
            c = [a["agreement"] for a in ag if a["set"] == name and a["bits"] == bits and a["kind"] == "circulant"]
            diff = np.mean(c) - np.mean(g)
            rows.append([name, bits, "%.4f" % np.mean(g), "%.4f" % np.mean(c), "%+.4f" % diff,
                         " ".join("%+.4f" % (ci - gi) for gi, ci in zip(g, c)),
                         "yes" if abs(diff) <= 0.01 else "NO"])
    print("\nSingle-classifier agreement with exact decisions (mean over seeds %s)\n" % list(seeds))
    print(markdown_table(["set", "bits", "Gaussian", "circulant", "circ - Gauss", "per seed", "within 0.01"], rows))
    tb = res["table1"]
    rows = []
    worst = 0.0
    for name in sorted({t["set"] for t in tb}, key=lambda s: ["omniglot-242", "reuters-r52", "fashion-mnist-20k"].index(s)
                       if s in ("omniglot-242", "reuters-r52", "fashion-mnist-20k") else 9):
        sel = [t for t in tb if t["set"] == name]
        for bits in sorted({t["bits"] for t in sel}):
            for k in sorted({t["k"] for t in sel}):
                g = [t["accuracy"] for t in sel if t["bits"] == bits and t["k"] == k and t["kind"] == "gaussian"]
                c = [t["accuracy"] for t in sel if t["bits"] == bits and t["k"] == k and t["kind"] == "circulant"]
                diff = 100 * (np.mean(c) - np.mean(g))
                worst = max(worst, -diff)
                rows.append([name, bits, k, "%.2f" % (100 * sel[0]["exact_accuracy"]), "%.2f" % (100 * np.mean(g)),
                             "%.2f" % (100 * np.mean(c)), "%+.2f" % diff,
                             " ".join("%+.2f" % (100 * (ci - gi)) for gi, ci in zip(g, c)),
                             "yes" if diff >= -0.3 else "NO"])
    print("\nFilter-and-refine accuracy %% at Table 1's settings (hashed at 2048 bits; mean over seeds %s)\n"
          % list(seeds))
    print(markdown_table(["set", "D'", "k", "exact", "Gaussian", "circulant", "circ - Gauss (points)",
                          "per seed", "not below by > 0.3"], rows))
    print("\nlargest shortfall of circulant vs Gaussian (mean over seeds): %.2f points" % worst)


# ---------------------------------------------------------------- throughput

def _cpu_time(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        ts.append(time.thread_time() - t0)
    return float(np.median(ts))


def _wall_time(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _split(fn, X, threads):
    """Run fn on `threads` contiguous row blocks, one thread each (as HashFilter does)."""
    n = X.shape[0]
    b = np.linspace(0, n, threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda i: fn(X[b[i]:b[i + 1]]), range(threads)))


def _unit_rows(rng, n, d):
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def throughput(repeat, dims, bits_list, sparse=True):
    rng = np.random.default_rng(0)
    out = []
    for d in dims:
        n = 2048 if d <= 4096 else 512
        X = _unit_rows(rng, n, d)
        for D in bits_list:
            R = rng.standard_normal((D, d)).astype(np.float32)
            gp = SignProjector(R)
            RT = gp.RT
            cp = CirculantProjection.from_seed(bits=D, n_features=d, seed=0)
            rec = {"input": "dense", "d": d, "bits": D, "n": n}
            for name, fn in (("gaussian", gp.project), ("gaussian_blas_only", lambda A: A @ RT),
                             ("circulant", lambda A: cp.project(A))):
                rec[name + "_1t"] = n / _cpu_time(lambda: fn(X), repeat)
                rec[name + "_2t"] = n / _wall_time(lambda: _split(fn, X, 2), repeat)
            out.append(rec)
            print("throughput: d=%d D'=%d done" % (d, D), file=sys.stderr)
    root = shared_data("reuters-r52") if sparse else None
    if root is not None:
        from hsvm_cli.io.svmlight import load_svmlight
        Xt, _ = load_svmlight(str(root / "test.svm.gz"), n_features=11698, dtype=np.float32)
        Xn = prepare("l2", Xt)
        n = Xn.shape[0]
        for D in bits_list:
            R = rng.standard_normal((D, 11698)).astype(np.float32)
            gp = SignProjector(R)
            cp = CirculantProjection.from_seed(bits=D, n_features=11698, seed=0)
            rec = {"input": "reuters-r52 (sparse, %.0f nnz/row)" % (Xn.nnz / n), "d": 11698, "bits": D, "n": n}
            for name, fn in (("gaussian", gp.project), ("gaussian_blas_only", lambda A: A @ gp.RT),
                             ("circulant", lambda A: cp.project(A)),
                             ("circulant_fft", lambda A: cp.engine.project(A, D, method="fft"))):
                rec[name + "_1t"] = n / _cpu_time(lambda: fn(Xn), repeat)
                rec[name + "_2t"] = n / _wall_time(lambda: _split(fn, Xn, 2), repeat)
            out.append(rec)
            print("throughput: reuters D'=%d done" % D, file=sys.stderr)
    return out


def print_throughput(res):
    rows = []
    for r in res:
        row = [r["input"], r["d"], r["bits"]]
        for t in ("1t", "2t"):
            row += ["%.0f" % r["gaussian_" + t], "%.0f" % r["gaussian_blas_only_" + t], "%.0f" % r["circulant_" + t],
                    "**%.1fx**" % (r["circulant_" + t] / r["gaussian_" + t]),
                    "%.1fx" % (r["circulant_" + t] / r["gaussian_blas_only_" + t])]
        rows.append(row)
    print("\nHashing throughput, samples/s (1 thread: per core, thread CPU time; 2 threads: wall clock)\n")
    print(markdown_table(["input", "d", "D'",
                          "Gauss 1t", "Gauss BLAS-only 1t", "circ 1t", "circ/Gauss 1t", "circ/BLAS-only 1t",
                          "Gauss 2t", "Gauss BLAS-only 2t", "circ 2t", "circ/Gauss 2t", "circ/BLAS-only 2t"], rows))
    sparse = [r for r in res if "circulant_fft_1t" in r]
    if sparse:
        print("\nsparse input, circulant by FFT instead of direct evaluation (samples/s, 1t / 2t): "
              + "; ".join("D'=%d: %.0f / %.0f" % (r["bits"], r["circulant_fft_1t"], r["circulant_fft_2t"])
                          for r in sparse))
    print("\ncrossover (1 thread, against hsvm's Gaussian / against BLAS only): smallest D' of the grid where "
          "circulant is faster")
    for inp in sorted({(r["input"], r["d"]) for r in res}, key=lambda t: t[1]):
        sel = sorted([r for r in res if (r["input"], r["d"]) == inp], key=lambda r: r["bits"])
        first = [next((r["bits"] for r in sel if r["circulant_1t"] > r[k + "_1t"]), None)
                 for k in ("gaussian", "gaussian_blas_only")]
        print("  %s d=%d: %s / %s" % (inp[0], inp[1], first[0] or "none", first[1] or "none"))


# --------------------------------------------------------------------- sizes

def sizes(dims, bits_list, repeat):
    from hsvm_cli.io.container import read_container, write_container
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in dims:
            x = _unit_rows(np.random.default_rng(1), 1, d)
            for D in bits_list:
                rec = {"d": d, "bits": D}
                p = CirculantProjection.from_seed(bits=D, n_features=d, seed=0)
                rec["circulant_bytes"] = p.stored_bytes()
                rec["bound_bytes"] = d * -(-D // d) * 8
                rec["gaussian_bytes"] = D * d * 4
                path = os.path.join(tmp, "c%d_%d" % (d, D))
                write_container(path, p.to_arrays(), kind="bench-circulant", version=1, meta=p.meta())

                def from_file():
                    c = read_container(path, kind="bench-circulant", versions={1})
                    q = CirculantProjection.from_arrays(c.arrays, n_features=d, bits=D)
                    return q.project(x)

                rec["circulant_derive_s"] = _wall_time(
                    lambda: CirculantProjection.from_seed(bits=D, n_features=d, seed=0).project(x), repeat)
                rec["circulant_file_s"] = _wall_time(from_file, repeat)
                if D * d <= 4096 * 4096:
                    rec["gaussian_derive_s"] = _wall_time(
                        lambda: SignProjector(projection_matrix(D, d, seed=0)).project(x), 1)
                    gpath = os.path.join(tmp, "g%d_%d" % (d, D))
                    write_container(gpath, {"projection": projection_matrix(D, d, seed=0)}, kind="bench-gauss",
                                    version=1, meta={})
                    rec["gaussian_file_s"] = _wall_time(
                        lambda: SignProjector(read_container(gpath, kind="bench-gauss", versions={1})
                                              .arrays["projection"]).project(x), repeat)
                    os.remove(gpath)
                out.append(rec)
                print("size: d=%d D'=%d done" % (d, D), file=sys.stderr)
    return out


def print_sizes(res):
    rows = []
    for r in res:
        rows.append([r["d"], r["bits"], r["circulant_bytes"], r["bound_bytes"],
                     "yes" if r["circulant_bytes"] <= r["bound_bytes"] else "NO", r["gaussian_bytes"],
                     "%.2f" % (1e3 * r["circulant_derive_s"]), "%.2f" % (1e3 * r["circulant_file_s"]),
                     "%.1f" % (1e3 * r["gaussian_derive_s"]) if "gaussian_derive_s" in r else "-",
                     "%.1f" % (1e3 * r["gaussian_file_s"]) if "gaussian_file_s" in r else "-"])
    print("\nProjection size and time to a ready projector (ms: build or read, then hash one sample)\n")
    print(markdown_table(["d", "D'", "circulant stored bytes", "bound d*ceil(D'/d)*8", "within", "Gaussian bytes",
                          "circ from seed ms", "circ from file ms", "Gauss from seed ms", "Gauss from file ms"],
                         rows))


# -------------------------------------------------------------------- kernel

def kernel_codes(repeat, sizes):
    """Samples/s of KernelHash.codes_from_y (subspace coordinates -> packed
    bits), Gaussian against circulant projection, one thread."""
    from hsvm_cli.hashing.krsh import KernelHash
    rng = np.random.default_rng(2)
    out = []
    for m, k in sizes:
        n = 256 if k <= 4096 else 64
        Y = rng.standard_normal((n, m))
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        rec = {"m": m, "bits": k, "n": n}
        for kind in ("gaussian", "circulant"):
            # codes_from_y needs only the projection: landmarks and factor are placeholders
            h = KernelHash(kernel="linear", gamma=None, degree=3, coef0=1.0, Z=np.zeros((m, 1), np.float32),
                           L=np.eye(m), bits=k, seed=0, tol=1e-6, projection_kind=kind)
            h.codes_from_y(Y[:2])               # the projection, once
            rec[kind] = n / _cpu_time(lambda: h.codes_from_y(Y), repeat)
        out.append(rec)
        print("kernel: m=%d k=%d done" % (m, k), file=sys.stderr)
    return out


def print_kernel(res):
    rows = [[r["m"], r["bits"], "%.0f" % r["gaussian"], "%.0f" % r["circulant"],
             "**%.1fx**" % (r["circulant"] / r["gaussian"])] for r in res]
    print("\nKernel hash bits from m subspace coordinates, samples/s (1 thread, thread CPU time)\n")
    print(markdown_table(["m", "bits k", "Gaussian (BLAS + exact signs)", "circulant", "circ/Gauss"], rows))


# ------------------------------------------------------------------- learned

def _load_set(name):
    from hsvm_cli.io.svmlight import load_svmlight
    root = shared_data(name)
    if root is None:
        return None
    d = REAL_SETS.get(name, (784, 1.0))[0]
    X, _ = load_svmlight(str(root / "train.svm.gz"), n_features=d, dtype=np.float32)
    Xt, _ = load_svmlight(str(root / "test.svm.gz"), n_features=d, dtype=np.float32)
    return X, Xt


def learned(sets, bits_list, n_queries, lams, C, target_kinds, svm_cs=None):
    from hsvm_cli.evaluation.retrieval import retrieval_recall
    from hsvm_cli.models.circulant_hash import LearnedCirculantHash
    from hsvm_cli.preprocess import l2_normalize
    from hsvm_cli.train.circulant_fit import (
        fit_cbe,
        fit_circulant_svm,
        fit_independent_svms,
        linear_signs,
        per_bit_accuracy,
        spread_shifts,
        targets_from_codes,
    )
    from hsvm_cli.train.itq import ITQ
    out = []
    for name in sets:
        data = _load_set(name)
        if data is None:
            continue
        X, Xt = data
        d = X.shape[1]
        Xd, Xtd = (A.toarray() if sp.issparse(A) else A for A in (X, Xt))
        Xn, Xtn = l2_normalize(Xd), l2_normalize(Xtd)
        q = np.random.default_rng(0).choice(Xt.shape[0], min(n_queries, Xt.shape[0]), replace=False)
        for kind in target_kinds:
            for L in bits_list:
                if L > d:
                    continue
                rec = {"set": name, "targets": kind, "bits": L, "d": d, "n_train": X.shape[0], "n_test": Xt.shape[0]}
                t0 = time.perf_counter()
                if kind == "itq":
                    itq = ITQ.fit(Xd, L, iterations=50, seed=0)
                    Z, Zt = itq.signs(Xd), itq.signs(Xtd)
                elif kind == "gaussian-codes":
                    # hsvm's own Gaussian sign-projection codes of the normalised samples
                    words = -(-L // 64)
                    sp_ = SignProjector(projection_matrix(64 * words, d, seed=0))
                    Z = targets_from_codes(pack_signs(sp_.project(Xn)), L)
                    Zt = targets_from_codes(pack_signs(sp_.project(Xtn)), L)
                else:  # planted: codes of a random circulant hash, inside the model class
                    rng = np.random.default_rng(L)
                    truth = LearnedCirculantHash(rng.standard_normal(d).astype(np.float32),
                                                 (0.05 * rng.standard_normal(L)).astype(np.float32))
                    Z, Zt = truth.signs(Xd), truth.signs(Xtd)
                rec["targets_s"] = time.perf_counter() - t0
                methods = {}
                t0 = time.perf_counter()
                best = None
                for c_svm in (svm_cs or [C]):
                    h = fit_circulant_svm(Xd, Z, C=c_svm)
                    s = h.signs(Xd)
                    a = per_bit_accuracy(s, Z)[0]
                    if best is None or a > best[0]:
                        best = (a, h, s)
                h = best[1]
                extra = {"passes": h.meta["solver_passes"]}
                if svm_cs:
                    extra["C"] = h.meta["C"]
                methods["circulant-svm"] = (best[2], h.signs(Xtd), time.perf_counter() - t0, extra)
                if kind == "itq":
                    t0 = time.perf_counter()
                    hs = fit_circulant_svm(Xd, Z, C=C, shifts=spread_shifts(L, d))
                    methods["circulant-svm, spread rows"] = (hs.signs(Xd), hs.signs(Xtd), time.perf_counter() - t0,
                                                             {"passes": hs.meta["solver_passes"]})
                best = None
                t0 = time.perf_counter()
                for lam in lams:
                    c = fit_cbe(Xd, Z, lam=lam)
                    s = c.signs(Xd)
                    a = per_bit_accuracy(s, Z)[0]
                    if best is None or a > best[0]:
                        best = (a, lam, s, c.signs(Xtd))
                methods["CBE"] = (best[2], best[3], time.perf_counter() - t0, {"lambda": best[1]})
                t0 = time.perf_counter()
                W, b = fit_independent_svms(Xd, Z, C=C)
                methods["independent SVMs"] = (linear_signs(Xd, W, b), linear_signs(Xtd, W, b),
                                               time.perf_counter() - t0, {})
                rp = CirculantProjection.from_seed(bits=L, n_features=d, seed=0)
                methods["random circulant (untrained)"] = (np.where(rp.project(Xn) > 0, 1, -1),
                                                          np.where(rp.project(Xtn) > 0, 1, -1), 0.0, {})
                methods["targets themselves"] = (Z, Zt, 0.0, {})
                rec["methods"] = {}
                for mname, (s_tr, s_te, secs, extra) in methods.items():
                    recall = retrieval_recall(Zt[q], Z, s_te[q], s_tr, X_query=Xtn[q], X_db=Xn, k=10, R=100)
                    rec["methods"][mname] = {"train": per_bit_accuracy(s_tr, Z)[0], "test": per_bit_accuracy(s_te, Zt)[0],
                                             "recall@100": recall, "fit_s": secs, **extra}
                out.append(rec)
                print("learned: %s %s L=%d done" % (name, kind, L), file=sys.stderr)
    return out


def print_learned(res):
    for name in sorted({r["set"] for r in res}):
        for kind in ("itq", "gaussian-codes", "planted"):
            sel = [r for r in res if r["set"] == name and r["targets"] == kind]
            if not sel:
                continue
            rows = []
            for r in sel:
                m = r["methods"]
                a, c, ind = m["circulant-svm"], m["CBE"], m["independent SVMs"]
                for mname, v in m.items():
                    rows.append([r["bits"], mname, "%.4f" % v["train"], "%.4f" % v["test"], "%.3f" % v["recall@100"],
                                 "%.1f" % v["fit_s"], ", ".join("%s %s" % kv for kv in v.items()
                                                                if kv[0] in ("lambda", "passes", "C"))])
                rows.append([r["bits"], "**targets: (a) >= (b) train/test; (a) within 2 pts of (c) train/test**",
                             "%s/%s" % ("yes" if a["train"] >= c["train"] else "NO",
                                        "yes" if a["test"] >= c["test"] else "NO"),
                             "%s/%s" % ("yes" if a["train"] >= ind["train"] - 0.02 else "NO",
                                        "yes" if a["test"] >= ind["test"] - 0.02 else "NO"), "", "", ""])
            print("\n%s (d=%d, %d train / %d test), targets: %s; per-bit accuracy, recall@100 of the targets' "
                  "10-NN (1000 test queries against the training set)\n"
                  % (name, sel[0]["d"], sel[0]["n_train"], sel[0]["n_test"], kind))
            print(markdown_table(["L", "method", "per-bit acc train", "per-bit acc test", "recall@100", "fit s",
                                  "notes"], rows))


# ---------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="fidelity,throughput,size,kernel,learned")
    ap.add_argument("--quick", action="store_true",
                    help="throughput, size and kernel on a small grid, one repeat (what run_all.py runs)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--agreement-sets", default="omniglot-242,reuters-r52")
    ap.add_argument("--table-sets", default="omniglot-242,reuters-r52,fashion-mnist-20k")
    ap.add_argument("--table-bits", default="256,512,1024,2048")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--learned-sets", default="fashion-mnist-20k,omniglot-242")
    ap.add_argument("--learned-bits", default="16,32,64,128,256")
    ap.add_argument("--learned-targets", default="itq,gaussian-codes,planted")
    ap.add_argument("--lams", default="0,0.01,1,100")
    ap.add_argument("-C", type=float, default=1.0, help="per-bit cost of the SVMs (a) and (c)")
    ap.add_argument("--svm-cs", default="", help="a grid of C for (a), chosen by training per-bit accuracy")
    ap.add_argument("--json", metavar="FILE", help="also write every figure as JSON to FILE")
    a = ap.parse_args(argv)
    parts = a.parts.split(",")
    dims, bits_list, kernel_sizes, sparse = (784, 4096, 16384), (256, 1024, 4096), \
        ((1024, 4096), (4096, 4096), (4096, 16384)), True
    if a.quick:
        parts = ["throughput", "size", "kernel"]
        dims, bits_list, kernel_sizes, sparse = (784, 4096), (256, 4096), ((1024, 4096), (4096, 16384)), False
        a.repeat = 1
    seeds = [int(s) for s in a.seeds.split(",")]
    print("Command (repo root):\n\n" + COMMAND + "\n")
    print(machine_line())
    threadpool_limits(1)          # BLAS on one thread everywhere unless a part says otherwise
    res = {"machine": machine_line(), "command": COMMAND.strip()}
    if "fidelity" in parts:
        res["fidelity"] = fidelity([x for x in a.agreement_sets.split(",") if x], seeds,
                                   [x for x in a.table_sets.split(",") if x],
                                   [int(b) for b in a.table_bits.split(",")])
        print_fidelity(res["fidelity"], seeds)
    if "throughput" in parts:
        res["throughput"] = throughput(a.repeat, dims, bits_list, sparse=sparse)
        print_throughput(res["throughput"])
    if "size" in parts:
        res["size"] = sizes(dims, bits_list, a.repeat)
        print_sizes(res["size"])
    if "kernel" in parts:
        res["kernel"] = kernel_codes(a.repeat, kernel_sizes)
        print_kernel(res["kernel"])
    if "learned" in parts:
        res["learned"] = learned(a.learned_sets.split(","), [int(b) for b in a.learned_bits.split(",")], 1000,
                                 [float(x) for x in a.lams.split(",")], a.C, a.learned_targets.split(","),
                                 [float(x) for x in a.svm_cs.split(",") if x] or None)
        print_learned(res["learned"])
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
