"""Hash-SVM benchmarks: the shape of Mu et al.'s (CVPR 2014) Table 2, Figures 1
and 2, and kernel-hash throughput.

Table: accuracy and total time (I/O + training + prediction; C selection on a
validation split reported apart) of
  * LIBSVM exact RBF OvO (libsvm-official), gamma from the median heuristic
    (the gamma Hash-SVM uses), C from {1, 10, 100} on a stratified 80/20
    validation split of the training set;
  * linear OvO (hsvm's train-ovo: LIBLINEAR -s 1 -B 1 on L2-normalised rows);
  * Hash-SVM: KRSH codes (rbf, same gamma) + dual CD on the packed bits, at
    2,048 bytes per sample (16,384 bits, m = 4,096) and 512 bytes (4,096 bits,
    m = 1,024);
  * random Fourier features (RBFSampler) and Nystroem (Nystroem), same gamma,
    + LIBLINEAR OvO, at the same bytes per sample (512 / 128 float32 features).
The linear methods take C from {0.1, 1, 10, 100} on the same validation split
(randomised ones with seed 0's features).  Randomised methods: mean and
spread (min..max) over --seeds seeds.  Everything runs single-threaded (BLAS
held to one thread, one training job) so times compare like for like with
LIBSVM, which is single-threaded.

Results are appended to bench/out/hashsvm-results.jsonl as they come (a rerun
skips what is there; --fresh starts over) and the tables are printed as
markdown.

    .venv/bin/python bench/bench_hashsvm.py [--sets a,b] [--seeds 5] [--parts table,fig1,fig2,throughput]
    (--parts summary prints the table from the recorded results without running anything)
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

# The libsvm-official wheel is built with OpenMP; everything here runs on one
# thread, and spinning OpenMP workers on a busy machine only slow LIBSVM down.
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from threadpoolctl import threadpool_limits  # noqa: E402

from hsvm_cli.io.svmlight import load_svmlight

from common import REPO, machine_line, markdown_table, shared_data  # noqa: E402

SETS = {"fashion-mnist-20k": 784, "digits": 64, "binalpha-36": 320, "att-faces-40": 644}
OUT = REPO / "bench" / "out"
RESULTS = OUT / "hashsvm-results.jsonl"
HASH_CONFIGS = {"hashsvm-2048B": (4096, 16384), "hashsvm-512B": (1024, 4096)}
# The same kernel hashes with the k bits a circulant projection of the m
# subspace coordinates (kernel-hash --projection circulant); they take the C
# their Gaussian twin chose on validation (the projection changes only which
# random directions are used, not the scale of the problem).
CIRCULANT_CONFIGS = {"hashsvm-2048B-circulant": "hashsvm-2048B", "hashsvm-512B-circulant": "hashsvm-512B"}
FEATURE_CONFIGS = {"2048B": 512, "512B": 128}
LIBSVM_C = (1.0, 10.0, 100.0)
LINEAR_C = (0.1, 1.0, 10.0, 100.0)


# ------------------------------------------------------------------ helpers

def predict_codes(model, codes, block=2048):
    """Labels of a model trained on codes, for codes: exact one-vs-one voting
    on the +-1/sqrt(bits) features, in blocks."""
    from hsvm_cli.predict.predictor import Predictor
    from hsvm_cli.train.bits_solver import expand_codes
    p = Predictor(model)
    return np.concatenate([p.predict(expand_codes(codes[s:s + block])) for s in range(0, codes.shape[0], block)])


def load_set(name):
    root = shared_data(name)
    if root is None:
        return None
    d = SETS[name]
    t0 = time.perf_counter()
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d, dtype=np.float32)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d, dtype=np.float32)
    io = time.perf_counter() - t0
    return X.tocsr(), np.asarray(y), Xt.tocsr(), np.asarray(yt), io


def val_split(y, seed=0, frac=0.2):
    """Stratified split: (train rows, validation rows)."""
    rng = np.random.default_rng(seed)
    tr, va = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = max(1, int(round(frac * idx.size))) if idx.size > 1 else 0
        va.append(idx[:k])
        tr.append(idx[k:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(va))


def load_results():
    out = {}
    if RESULTS.exists():
        for line in RESULTS.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out[(r["set"], r["method"], r.get("seed"))] = r
    return out


def save_result(r):
    OUT.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as fh:
        fh.write(json.dumps(r) + "\n")


def gamma_for(X):
    from hsvm_cli.hashing.krsh import auto_gamma
    return auto_gamma(X, "rbf", seed=0)[0]


def ovo_predict_linear(t, X):
    from hsvm_cli.predict.exact import ovo_votes
    from hsvm_cli.predict.ranking import best_class
    dec = np.asarray(X @ t.W.T.astype(np.float32)) + t.b
    v, c = ovo_votes(dec, t.pair_a, t.pair_b, bags=t.bags, n_classes=t.n_classes)
    return t.classes[best_class(v, c)]


# ------------------------------------------------------------------ methods

def libsvm_cache_mb(y):
    """Kernel cache (-m) that holds the largest pair's whole kernel matrix
    (float32), at most 1000 MB: LIBSVM's fastest setting; a much larger cache
    only costs allocation time on every one of the K(K-1)/2 problems."""
    counts = np.sort(np.unique(y, return_counts=True)[1])
    l = int(counts[-2:].sum())
    return int(min(1000, np.ceil(l * l * 4 / 2 ** 20) + 1))


def run_libsvm(X, y, Xt, yt, gamma, C):
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train
    t0 = time.perf_counter()
    prob = svm_problem(y.astype(np.float64), X.astype(np.float64))
    m = svm_train(prob, svm_parameter("-s 0 -t 2 -g %r -c %r -m %d -q" % (gamma, C, libsvm_cache_mb(y))))
    t1 = time.perf_counter()
    pred, _, _ = svm_predict(yt.astype(np.float64), Xt.astype(np.float64), m, "-q")
    t2 = time.perf_counter()
    return float(np.mean(np.asarray(pred) == yt)), t1 - t0, t2 - t1, m.get_nr_sv()


def run_linear(X, y, Xt, yt, C):
    from hsvm_cli.preprocess import apply_normalization
    from hsvm_cli.train.liblinear import train_pairs
    t0 = time.perf_counter()
    Xn = apply_normalization(X.astype(np.float64), "l2", copy=True)
    t = train_pairs(Xn, y, C=C, seed=0)
    t1 = time.perf_counter()
    Xtn = apply_normalization(Xt.astype(np.float64), "l2", copy=True).astype(np.float32)
    acc = float(np.mean(ovo_predict_linear(t, Xtn) == yt))
    return acc, t1 - t0, time.perf_counter() - t1


def run_hashsvm(X, y, Xt, yt, gamma, m, k, seed, C, projection="gaussian"):
    from hsvm_cli.hashing.krsh import fit_kernel_hash
    from hsvm_cli.train.bits_solver import train_ovo_codes
    t0 = time.perf_counter()
    h = fit_kernel_hash(X, kernel="rbf", gamma=gamma, landmarks=m, bits=k, seed=seed, projection=projection)
    if projection == "gaussian":
        h.projection()      # the dense matrix is built once, at fit time
    t1 = time.perf_counter()
    codes = h.codes(X)
    t2 = time.perf_counter()
    tr = train_ovo_codes(codes, y, C=C, seed=seed)
    t3 = time.perf_counter()
    pred = predict_codes(tr, h.codes(Xt))
    t4 = time.perf_counter()
    return float(np.mean(pred == yt)), {"fit": t1 - t0, "hash_train": t2 - t1, "train": t3 - t2,
                                        "predict": t4 - t3, "not_converged": tr.training.not_converged,
                                        "landmarks_kept": h.n_landmarks,
                                        "mean_iter": float(tr.training.iterations.mean())}


def hashsvm_val(X, y, Xv, yv, gamma, m, k, seed, Cs):
    """Validation accuracy per C, hashing once."""
    from hsvm_cli.hashing.krsh import fit_kernel_hash
    from hsvm_cli.train.bits_solver import train_ovo_codes
    h = fit_kernel_hash(X, kernel="rbf", gamma=gamma, landmarks=m, bits=k, seed=seed)
    codes, vcodes = h.codes(X), h.codes(Xv)
    return {C: float(np.mean(predict_codes(train_ovo_codes(codes, y, C=C, seed=seed), vcodes) == yv))
            for C in Cs}


def features_val(kind, X, y, Xv, yv, gamma, D, seed, Cs):
    from hsvm_cli.train.liblinear import train_pairs
    F, Fv = random_features(kind, X, Xv, gamma, D, seed)
    return {C: float(np.mean(ovo_predict_linear(train_pairs(F.astype(np.float64), y, C=C, seed=seed), Fv) == yv))
            for C in Cs}


def random_features(kind, X, Xt, gamma, D, seed):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    f = RBFSampler(gamma=gamma, n_components=D, random_state=seed) if kind == "rff" else \
        Nystroem(kernel="rbf", gamma=gamma, n_components=D, random_state=seed)
    F = f.fit_transform(X).astype(np.float32)
    return F, f.transform(Xt).astype(np.float32)


def run_features(kind, X, y, Xt, yt, gamma, D, seed, C):
    from hsvm_cli.train.liblinear import train_pairs
    t0 = time.perf_counter()
    F, Ft = random_features(kind, X, Xt, gamma, D, seed)
    t1 = time.perf_counter()
    t = train_pairs(F.astype(np.float64), y, C=C, seed=seed)
    t2 = time.perf_counter()
    acc = float(np.mean(ovo_predict_linear(t, Ft) == yt))
    return acc, {"features": t1 - t0, "train": t2 - t1, "predict": time.perf_counter() - t2}


# ------------------------------------------------------------------ table

def table(sets, seeds, done, circulant=True):
    for name in sets:
        data = load_set(name)
        if data is None:
            print("skip %s: data absent" % name, file=sys.stderr)
            continue
        X, y, Xt, yt, io = data
        gamma = gamma_for(X)
        tr, va = val_split(y)
        Xa, ya, Xv, yv = X[tr], y[tr], X[va], y[va]
        print("== %s: n=%d test=%d gamma=%.6g io=%.2fs" % (name, X.shape[0], Xt.shape[0], gamma, io), file=sys.stderr)

        def record(method, seed, **kw):
            r = {"set": name, "method": method, "seed": seed, "gamma": gamma, "io": io}
            r.update(kw)
            save_result(r)
            done[(name, method, seed)] = r
            print("  %s seed=%s acc=%.4f total=%.1fs" % (method, seed, r["acc"], r["total"]), file=sys.stderr)

        if (name, "libsvm-rbf", None) not in done:
            t0 = time.perf_counter()
            val = {C: run_libsvm(Xa, ya, Xv, yv, gamma, C)[0] for C in LIBSVM_C}
            sel = time.perf_counter() - t0
            C = max(LIBSVM_C, key=lambda c: (val[c], -c))
            acc, ttrain, tpred, nsv = run_libsvm(X, y, Xt, yt, gamma, C)
            record("libsvm-rbf", None, acc=acc, C=C, val=val, select_seconds=sel, train=ttrain, predict=tpred,
                   n_sv=nsv, total=io + ttrain + tpred)
        if (name, "linear-ovo", None) not in done:
            t0 = time.perf_counter()
            val = {C: run_linear(Xa, ya, Xv, yv, C)[0] for C in LINEAR_C}
            sel = time.perf_counter() - t0
            C = max(LINEAR_C, key=lambda c: (val[c], -c))
            acc, ttrain, tpred = run_linear(X, y, Xt, yt, C)
            record("linear-ovo", None, acc=acc, C=C, val=val, select_seconds=sel, train=ttrain, predict=tpred,
                   total=io + ttrain + tpred)
        def hash_seeds(method, m, k, C, projection):
            for seed in range(seeds):
                if (name, method, seed) in done:
                    continue
                acc, parts = run_hashsvm(X, y, Xt, yt, gamma, min(m, X.shape[0]), k, seed, C, projection=projection)
                record(method, seed, acc=acc, C=C, m=m, bits=k, total=io + sum(
                    v for key, v in parts.items() if key in ("fit", "hash_train", "train", "predict")), **parts)

        for method, (m, k) in HASH_CONFIGS.items():
            m_eff = min(m, Xa.shape[0])
            key0 = (name, method, "C")
            if key0 not in done:
                t0 = time.perf_counter()
                val = hashsvm_val(Xa, ya, Xv, yv, gamma, m_eff, k, 0, LINEAR_C)
                C = max(LINEAR_C, key=lambda c: (val[c], -c))
                save_result({"set": name, "method": method, "seed": "C", "C": C, "val": val,
                             "select_seconds": time.perf_counter() - t0})
                done[key0] = {"C": C}
            hash_seeds(method, m, k, done[key0]["C"], "gaussian")
        if circulant:
            for method, twin in CIRCULANT_CONFIGS.items():
                m, k = HASH_CONFIGS[twin]
                hash_seeds(method, m, k, done[(name, twin, "C")]["C"], "circulant")
        for kind in ("rff", "nystroem"):
            for size, D in FEATURE_CONFIGS.items():
                method = "%s-%s" % (kind, size)
                D_eff = min(D, Xa.shape[0]) if kind == "nystroem" else D
                key0 = (name, method, "C")
                if key0 not in done:
                    t0 = time.perf_counter()
                    val = features_val(kind, Xa, ya, Xv, yv, gamma, D_eff, 0, LINEAR_C)
                    C = max(LINEAR_C, key=lambda c: (val[c], -c))
                    save_result({"set": name, "method": method, "seed": "C", "C": C, "val": val,
                                 "select_seconds": time.perf_counter() - t0})
                    done[key0] = {"C": C}
                C = done[key0]["C"]
                for seed in range(seeds):
                    if (name, method, seed) in done:
                        continue
                    D_full = min(D, X.shape[0]) if kind == "nystroem" else D
                    acc, parts = run_features(kind, X, y, Xt, yt, gamma, D_full, seed, C)
                    record(method, seed, acc=acc, C=C, D=D_full, total=io + sum(parts.values()), **parts)


def summarize(sets, done):
    methods = ["libsvm-rbf", "linear-ovo", "hashsvm-2048B", "hashsvm-2048B-circulant", "rff-2048B",
               "nystroem-2048B", "hashsvm-512B", "hashsvm-512B-circulant", "rff-512B", "nystroem-512B"]
    rows = []
    stats = {}
    for name in sets:
        for method in methods:
            rs = [r for (s, m, sd), r in done.items() if s == name and m == method and sd != "C"]
            if not rs:
                continue
            acc = np.array([r["acc"] for r in rs]) * 100
            tot = np.array([r["total"] for r in rs])
            stats[(name, method)] = (acc.mean(), tot.mean())
            spread = "" if len(rs) == 1 else " (%.2f..%.2f)" % (acc.min(), acc.max())
            rows.append([name, method, len(rs), "%.2f%s" % (acc.mean(), spread), "%.1f" % tot.mean(),
                         rs[0].get("C", "")])
    print(markdown_table(["set", "method", "runs", "accuracy % mean (min..max)", "total s (mean)", "C"], rows))
    print()
    # Targets.
    lines = []
    for name in sets:
        g = stats.get
        if g((name, "hashsvm-2048B")) is None:
            continue
        for size in ("2048B", "512B"):
            h = g((name, "hashsvm-" + size))
            others = [g((name, "%s-%s" % (k, size))) for k in ("rff", "nystroem")]
            if h and all(others):
                ok = all(h[0] > o[0] for o in others)
                lines.append("- %s %s: Hash-SVM %.2f vs RFF %.2f, Nystroem %.2f -> %s" % (
                    name, size, h[0], others[0][0], others[1][0], "met" if ok else "NOT met"))
        lib, lin, h = g((name, "libsvm-rbf")), g((name, "linear-ovo")), g((name, "hashsvm-2048B"))
        if lib and h and name in ("fashion-mnist-20k", "digits"):
            lines.append("- %s: within 1.5 points of LIBSVM RBF: %.2f vs %.2f -> %s" % (
                name, h[0], lib[0], "met" if h[0] >= lib[0] - 1.5 else "NOT met"))
        if lib and h and name == "fashion-mnist-20k":
            lines.append("- %s: total time <= 1/5 of LIBSVM's: %.1fs vs %.1fs (ratio %.2f) -> %s" % (
                name, h[1], lib[1], h[1] / lib[1], "met" if h[1] <= lib[1] / 5 else "NOT met"))
        if lib and lin and h and lib[0] - lin[0] > 5:
            kept = (h[0] - lin[0]) / (lib[0] - lin[0])
            lines.append("- %s: LIBSVM beats linear by %.2f points; Hash-SVM keeps %.0f%% of the gain -> %s" % (
                name, lib[0] - lin[0], 100 * kept, "met" if kept >= 0.8 else "NOT met"))
    print("Targets (Hash-SVM 2,048 B unless stated):")
    print("\n".join(lines))
    print()


# ------------------------------------------------------------------ figures

def figure1(name, seed=0, n_pairs=300, ms=(64, 128, 256, 512, 1024, 2048, 4096)):
    """|cos theta - cos theta'| against m: theta in the RBF feature space
    (cos theta = k(x1, x2)), theta' between the subspace coordinates."""
    from hsvm_cli.hashing.krsh import fit_kernel_hash, kernel_matrix
    data = load_set(name)
    if data is None:
        return
    X, y, Xt, yt, _ = data
    gamma = gamma_for(X)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, Xt.shape[0], n_pairs)
    b = (a + 1 + rng.integers(0, Xt.shape[0] - 1, n_pairs)) % Xt.shape[0]
    K = kernel_matrix(Xt[a], Xt[b], kernel="rbf", gamma=gamma)
    cos_true = np.diagonal(K)
    rows = []
    for m in ms:
        if m > X.shape[0]:
            continue
        h = fit_kernel_hash(X, kernel="rbf", gamma=gamma, landmarks=m, bits=64, seed=seed)
        Ya, Yb = h.transform(Xt[a]), h.transform(Xt[b])
        cos_sub = np.einsum("ij,ij->i", Ya, Yb) / np.linalg.norm(Ya, axis=1) / np.linalg.norm(Yb, axis=1)
        err = np.abs(cos_true - cos_sub)
        norm = np.linalg.norm(Ya, axis=1)
        rows.append([m, "%.4f" % err.mean(), "%.4f" % np.median(err), "%.4f" % err.max(), "%.3f" % norm.mean()])
    print("Figure 1 shape (%s, %d test pairs, gamma=%.4g): |cos theta - cos theta'| against m" % (name, n_pairs, gamma))
    print(markdown_table(["m", "mean", "median", "max", "mean |y(x)| (fraction of phi(x) kept)"], rows))
    print()


def figure2(name, m=1024, seed=0, n_pairs=2000, ks=(64, 256, 1024, 4096, 16384)):
    """Spread of the hash estimate cos(pi d_H/k) of cos theta' against k,
    beside the binomial prediction (d_H ~ Binomial(k, theta'/pi); the delta
    method gives sd(cos) = pi sin(theta') sqrt(p(1-p)/k))."""
    from hsvm_cli.hashing.krsh import fit_kernel_hash
    data = load_set(name)
    if data is None:
        return
    X, y, Xt, yt, _ = data
    gamma = gamma_for(X)
    h = fit_kernel_hash(X, kernel="rbf", gamma=gamma, landmarks=min(m, X.shape[0]), bits=max(ks), seed=seed)
    rng = np.random.default_rng(seed + 1)
    a = rng.integers(0, Xt.shape[0], n_pairs)
    b = (a + 1 + rng.integers(0, Xt.shape[0] - 1, n_pairs)) % Xt.shape[0]
    Ya, Yb = h.transform(Xt[a]), h.transform(Xt[b])
    cos_sub = np.clip(np.einsum("ij,ij->i", Ya, Yb) / np.linalg.norm(Ya, axis=1) / np.linalg.norm(Yb, axis=1), -1, 1)
    theta = np.arccos(cos_sub)
    p = theta / np.pi
    Ca, Cb = h.codes_from_y(Ya), h.codes_from_y(Yb)
    bits_a = np.unpackbits(Ca.view(np.uint8), axis=1, bitorder="little")
    bits_b = np.unpackbits(Cb.view(np.uint8), axis=1, bitorder="little")
    diff = np.cumsum(bits_a != bits_b, axis=1)
    rows = []
    for k in ks:
        dh = diff[:, k - 1] / k
        est = np.cos(np.pi * dh)
        e_p = dh - p
        e_c = est - cos_sub
        pred_p = np.sqrt(np.mean(p * (1 - p) / k))
        pred_c = np.sqrt(np.mean((np.pi * np.sin(theta)) ** 2 * p * (1 - p) / k))
        z = e_p / np.sqrt(np.maximum(p * (1 - p) / k, 1e-300))
        rows.append([k, "%.5f" % e_p.mean(), "%.5f" % e_p.std(), "%.5f" % pred_p, "%.5f" % np.sqrt(np.mean(e_c ** 2)),
                     "%.5f" % pred_c, "%.3f" % z.std()])
    print("Figure 2 shape (%s, m=%d, %d test pairs): hash estimates against k" % (name, h.n_landmarks, n_pairs))
    print(markdown_table(["k", "mean(d_H/k - theta'/pi)", "sd(d_H/k - theta'/pi)", "binomial sd",
                          "rms(cos est - cos theta')", "binomial (delta method)", "sd of z-scores (1 = binomial)"], rows))
    print()


def throughput(name="fashion-mnist-20k", n=2000):
    from hsvm_cli.hashing.krsh import fit_kernel_hash
    data = load_set(name)
    if data is None:
        return
    X, y, Xt, yt, _ = data
    gamma = gamma_for(X)
    rows = []
    for m in (1024, 4096):
        h = fit_kernel_hash(X, kernel="rbf", gamma=gamma, landmarks=m, bits=16384, seed=0)
        h.projection()
        for k in (4096, 16384):
            for threads in (1, 2):
                with threadpool_limits(threads):
                    h.codes(Xt[:256], k)
                    h.recomputed = 0
                    t0 = time.perf_counter()
                    h.codes(Xt[:n], k)
                    dt = time.perf_counter() - t0
                rows.append([m, k, threads, "%.0f" % (n / dt), "%.1f" % (h.recomputed / n)])
    print("kernel-hash throughput (%s test rows, rbf, KRSH fitted on the training set)" % name)
    print(markdown_table(["m", "k bits", "BLAS threads", "samples/s", "exact recomputations per sample"], rows))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--parts", default="table,fig1,fig2,throughput")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--no-circulant", action="store_true",
                    help="skip the Hash-SVM rows whose kernel hash uses a circulant projection")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    parts = args.parts.split(",")
    if args.fresh and RESULTS.exists():
        RESULTS.unlink()
    print("Command: %s" % " ".join([Path(sys.argv[0]).name] + sys.argv[1:]))
    print("Machine: %s" % machine_line())
    print()
    if "table" in parts:
        done = load_results()
        with threadpool_limits(1):
            table(sets, args.seeds, done, circulant=not args.no_circulant)
        summarize(sets, done)
    elif "summary" in parts:              # the table from recorded results only
        summarize(sets, load_results())
    if "fig1" in parts:
        figure1("fashion-mnist-20k" if "fashion-mnist-20k" in sets else sets[0])
    if "fig2" in parts:
        figure2("fashion-mnist-20k" if "fashion-mnist-20k" in sets else sets[0])
    if "throughput" in parts:
        throughput()


if __name__ == "__main__":
    main()
