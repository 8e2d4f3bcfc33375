"""Shared pieces of the benchmark scripts: data location, timing, tables."""
import atexit
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# The numpy reference kernels (tests/oracles) are timed beside the native ones.
sys.path.insert(0, str(REPO / "tests"))


# Which data sets a script asked for and found: a script that found none of
# those it asked for says so and exits 2 (at exit), instead of printing an
# empty table with status 0 that make bench would count as a success.
_ASKED, _FOUND = [], []


def _nothing_found():
    if _ASKED and not _FOUND:
        sys.stdout.flush()
        sys.stderr.write("bench: none of the data sets asked for (%s) is under %s or bundled in data/: nothing "
                         "measured\n" % (", ".join(sorted(set(_ASKED))), _data_root()))
        sys.stderr.flush()
        os._exit(2)


atexit.register(_nothing_found)


def _refuse_an_unusable_kernel_choice():
    # HSVM_KERNEL naming no path or one this CPU lacks: one line and exit 64,
    # as the CLI says it, not a traceback from the first timed call
    from hsvm_cli.support.kernels import KernelUnavailableError, selected_kernel
    try:
        selected_kernel()
    except KernelUnavailableError as exc:
        sys.stderr.write("bench: %s\n" % exc)
        sys.exit(64)


_refuse_an_unusable_kernel_choice()


def _data_root():
    root = os.environ.get("HSVM_SHARED_DATA")
    return Path(root) if root else REPO.parent / "shared" / "data"


def shared_data(name):
    _ASKED.append(name)
    d = _data_root() / name
    if not (d / "train.svm.gz").exists():
        bundled = REPO / "data" / name
        if (bundled / "train.svm.gz").exists():
            _FOUND.append(name)
            return bundled
        sys.stderr.write("bench: %s: not under %s: skipped\n" % (name, _data_root()))
        return None
    _FOUND.append(name)
    return d


# Real data sets: nominal dimension and the C that train-ovo uses for them here
# (omniglot's 15 samples per class want more regularisation).
REAL_SETS = {"omniglot-242": (784, 0.1), "reuters-r52": (11698, 1.0), "fashion-mnist-20k": (784, 1.0)}


def load_trained(name):
    """(model, Xt float32, yt) for a real set, training cached in bench/out;
    None when the data set is absent."""
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.train.ovo import train_ovo
    d, C = REAL_SETS[name]
    root = shared_data(name)
    if root is None:
        return None
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=d, dtype=np.float32)

    def train():
        X, y = load_svmlight(str(root / "train.svm.gz"), n_features=d)
        return train_ovo(X, y, C=C, seed=0, jobs=2)

    return cached_model("%s-C%g" % (name, C), train), Xt, yt


def median_time(fn, repeat=3, warmup=True):
    """Median wall-clock seconds of fn() and its last result."""
    out = fn() if warmup else None
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def synthetic_classes(K, d, per_class, *, seed, spread=7.0, n_test=0):
    """Gaussian classes around random unit means, L2-normalised afterwards:
    a many-class problem where accuracy is neither trivial nor hopeless."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((K, d))
    means /= np.linalg.norm(means, axis=1, keepdims=True)

    def draw(n_per):
        y = np.repeat(np.arange(1, K + 1), n_per)
        X = means[y - 1] + spread * rng.standard_normal((y.shape[0], d)) / np.sqrt(d)
        return X.astype(np.float64), y

    X, y = draw(per_class)
    if n_test:
        Xt, yt = draw(max(1, n_test // K))
        return X, y, Xt, yt
    return X, y


def cached_model(key, train):
    """Train once per benchmark configuration; later runs load bench/out/KEY.hsvm."""
    from hsvm_cli.models.ovo import load_model, save_model
    path = REPO / "bench" / "out" / (key + ".hsvm")
    if path.exists():
        return load_model(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(train(), path)
    return load_model(path)


def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def machine_line():
    import platform

    from hsvm_cli.support.kernels import selected_kernel
    try:
        from threadpoolctl import threadpool_info
        blas = ",".join("%s %s (%s, %d threads)" % (i.get("internal_api"), i.get("version"), i.get("architecture"),
                                                     i.get("num_threads")) for i in threadpool_info()
                        if i.get("user_api") == "blas")
    except ImportError:
        blas = "?"
    return "%s, %s, Python %s, numpy %s, BLAS %s, Hamming kernel %s" % (
        platform.machine(), platform.processor() or "cpu", platform.python_version(), np.__version__, blas,
        selected_kernel())
