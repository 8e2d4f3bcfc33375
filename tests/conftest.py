import os
from pathlib import Path

import numpy as np
import pytest

try:                                        # Python 3.14's module, or its backport
    from compression import zstd as ZSTD
except ImportError:
    from backports import zstd as ZSTD

REPO = Path(__file__).resolve().parents[1]


def zstd_compress(data):
    """zstd with a content checksum, as the zstd tool writes by default (the
    library's default has none, and would let a flipped bit through)."""
    return ZSTD.compress(data, options={ZSTD.CompressionParameter.checksum_flag: 1})
BUNDLED = REPO / "data"


def shared_data_dir():
    env = os.environ.get("HSVM_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def shared_set(name):
    """Path of a data set in ../shared/data, or skip the test when it is absent."""
    d = shared_data_dir() / name
    if not (d / "train.svm.gz").exists():
        pytest.skip("shared data set %s not present" % name)
    return d


@pytest.fixture(scope="session")
def digits():
    from hsvm_cli.io.svmlight import load_svmlight
    X, y = load_svmlight(str(BUNDLED / "digits" / "train.svm.gz"), n_features=64)
    Xt, yt = load_svmlight(str(BUNDLED / "digits" / "test.svm.gz"), n_features=64)
    return X, y, Xt, yt


@pytest.fixture(scope="session")
def digits_model(digits):
    from hsvm_cli.train.ovo import train_ovo
    X, y, _, _ = digits
    return train_ovo(X, y, C=1.0, seed=0)


@pytest.fixture(scope="session")
def digits_model_file(digits_model, tmp_path_factory):
    from hsvm_cli.models.ovo import save_model
    path = tmp_path_factory.mktemp("model") / "digits.hsvm"
    save_model(digits_model, path)
    return path


@pytest.fixture(scope="session")
def omniglot():
    """The bundled 242-class set, trained once per session (C=0.1)."""
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.train.ovo import train_ovo
    d = BUNDLED / "omniglot-242"
    X, y = load_svmlight(str(d / "train.svm.gz"), n_features=784)
    Xt, yt = load_svmlight(str(d / "test.svm.gz"), n_features=784)
    model = train_ovo(X, y, C=0.1, seed=1)
    return model, Xt, yt


def kernel_params():
    """One pytest param per native code path (avx512, avx2, portable); the
    paths this CPU lacks are skipped, not faked."""
    from hsvm_cli.support.kernels import KERNELS, available_kernels
    have = available_kernels()
    return [pytest.param(k, marks=pytest.mark.skipif(k not in have, reason="CPU lacks %s" % k)) for k in KERNELS]


def write_text(path, text):
    Path(path).write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def reorder_and_flip_pairs(rng, pair_a, pair_b):
    """The pairs in a random order, half of them stored as (b, a): how an
    imported model may hold them (decisions and votes must not depend on it)."""
    perm = rng.permutation(pair_a.shape[0])
    pair_a, pair_b = pair_a[perm], pair_b[perm]
    swap = rng.random(pair_a.shape[0]) < 0.5
    return np.where(swap, pair_b, pair_a).astype(np.int32), np.where(swap, pair_a, pair_b).astype(np.int32)


def small_ovo_model(K, d, bags, reordered, seed, normalize="l2"):
    """A random one-vs-one model of K classes (labels 10..) with few distinct
    weight values, so that votes tie and bags split evenly often; pairs
    reordered and flipped when ``reordered``."""
    from hsvm_cli.models.ovo import OvoModel
    from hsvm_cli.models.pairs import canonical_pairs
    rng = np.random.default_rng(seed)
    a, b = canonical_pairs(K)
    if reordered:
        a, b = reorder_and_flip_pairs(rng, a, b)
    P = a.shape[0]
    W = rng.integers(-2, 3, size=(P * bags, d)).astype(np.float32)
    bias = rng.integers(-1, 2, size=P * bags).astype(np.float32) * 0.25
    return OvoModel(classes=np.arange(10, 10 + K, dtype=np.int64), pair_a=a, pair_b=b, W=W, b=bias, bags=bags,
                    normalize=normalize)


def random_codes(rng, n, words):
    return rng.integers(0, 2**63, size=(n, words), dtype=np.int64).view(np.uint64) ^ \
        (rng.integers(0, 2, size=(n, words), dtype=np.uint64) << np.uint64(63))


DIGITS_TRAIN = str(BUNDLED / "digits" / "train.svm.gz")
DIGITS_TEST = str(BUNDLED / "digits" / "test.svm.gz")

# Three separable classes in two dimensions.
TOY = """1 1:1 2:0.1
1 1:0.9 2:-0.2
2 1:-1 2:0.1
2 1:-0.8 2:0.3
3 2:1
3 1:0.1 2:0.9
"""


def run(args, *, exit_code=0, stdout=None, stderr=None, input=None):
    """Run the hsvm CLI in-process (click's CliRunner) and assert its exit
    status (``exit_code=None``: any, for checks that accept several) and, when
    given, its exact stdout and stderr.  Returns the result (``.stdout``,
    ``.stderr``, ``.exit_code``) for further checks."""
    from click.testing import CliRunner

    from hsvm_cli.cli.main import cli
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    assert exit_code is None or result.exit_code == exit_code, (result.exit_code, result.stdout, result.stderr)
    if stdout is not None:
        assert result.stdout == stdout
    if stderr is not None:
        assert result.stderr == stderr
    return result


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """(training file, model file) of TOY."""
    d = tmp_path_factory.mktemp("toy")
    train = write_text(d / "toy.svm", TOY)
    model = str(d / "toy.hsvm")
    run(["train-ovo", train, "-o", model, "--quiet"])
    return train, model


@pytest.fixture(scope="session")
def digits_files(digits_model, tmp_path_factory):
    """(model file, 512-bit hash model file, their folder) of the digits model."""
    from hsvm_cli.models.ovo import save_model
    d = tmp_path_factory.mktemp("hcli")
    model = d / "d.hsvm"
    save_model(digits_model, model)
    hbm = d / "d.hbm"
    run(["hash-model", "-m", str(model), "--bits", "512", "--seed", "3", "-o", str(hbm), "-q"])
    return str(model), str(hbm), d


# --------------------------------------------------------------------------- LIBSVM and LIBLINEAR tools

TOOL_FIXTURES = REPO / "tests" / "fixtures" / "tools"
TOOLS = ("svm-train", "svm-predict", "liblinear-train", "liblinear-predict")


@pytest.fixture(scope="session")
def tools():
    """The LIBSVM and LIBLINEAR command-line tools (Debian libsvm-tools,
    liblinear-tools); tests that need them skip where they are not installed
    (the checked-in outputs of tests/fixtures/tools keep the comparison)."""
    import shutil
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip("%s not installed (apt-get install libsvm-tools liblinear-tools)" % ", ".join(missing))
    return {t: shutil.which(t) for t in TOOLS}


def tool_run(*cmd):
    """Run a tool, assert it succeeded, return its stdout."""
    import subprocess
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    assert r.returncode == 0, "%s failed: %s" % (cmd[0], r.stderr or r.stdout)
    return r.stdout


def tool_labels(path):
    """Labels of a svm-predict / liblinear-predict output file."""
    return np.array([int(float(line)) for line in Path(path).read_text().split()], dtype=np.int64)


# name -> (source directory, training lines kept, test lines kept); None keeps all.
TOOL_DATASETS = {
    "digits": (None, None, None),
    "binalpha-36": ("binalpha-36", None, None),
    "att-faces-40": ("att-faces-40", None, None),
    "reuters-r52": ("reuters-r52", 2000, 800),   # a subset keeps svm-train near 5 s
}


@pytest.fixture(scope="session")
def dataset_files(tmp_path_factory):
    """get(name) -> (train, test) plain-text svmlight copies of a data set
    (TOOL_DATASETS), made once per session; shared sets skip when absent."""
    import gzip
    made = {}

    def copy(src, dst, limit):
        with gzip.open(src, "rt") as fin, open(dst, "w") as fout:
            for i, line in enumerate(fin):
                if limit is not None and i >= limit:
                    break
                fout.write(line)
        return str(dst)

    def get(name):
        if name not in made:
            folder, ntrain, ntest = TOOL_DATASETS[name]
            src = BUNDLED / "digits" if folder is None else shared_set(folder)
            d = tmp_path_factory.mktemp(name)
            made[name] = (copy(src / "train.svm.gz", d / "train.svm", ntrain),
                          copy(src / "test.svm.gz", d / "test.svm", ntest))
        return made[name]
    return get
