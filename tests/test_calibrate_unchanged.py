"""calibrate's accuracy part pinned against the implementation before the
timing budget and the shared refine (commit 0b6bc1d): every grid row's
validation accuracy and mean refined classes, the settings within --max-loss
(the candidates the choice takes the fastest of) and the fitted
probabilities, on the bundled data.

The reference file was written by this module's ``__main__`` with the code of
0b6bc1d (``python tests/test_calibrate_unchanged.py``), and again when the
pooled sigmoid took Platt's smoothed targets on every validation set: only
the pair sigmoids (``platt``) and the sharpness moved then, every grid row,
first-stage alpha and prior size stayed.  Timings are measurements and are
not pinned."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "calibrate-grid" / "reference.json"
MAX_LOSS = 0.5


def _split(X, y):
    """Every other sample of each class to validation (as test_tune does)."""
    rank = np.zeros(y.shape[0], dtype=np.int64)
    for c in np.unique(y):
        m = np.flatnonzero(y == c)
        rank[m] = np.arange(m.shape[0])
    return X[rank % 2 == 0], y[rank % 2 == 0]


def _cases():
    """(name, model, hash model, X, y) of the pinned runs: digits with the
    default grid, the bundled omniglot-242 validation half with the default
    grid (K = 242: every kind of row, thresholds included)."""
    from hsvm_cli.io.svmlight import load_svmlight
    from hsvm_cli.models.hashed import hash_model
    from hsvm_cli.train.ovo import train_ovo
    data = Path(__file__).resolve().parents[1] / "data"
    X, y = load_svmlight(str(data / "digits" / "train.svm.gz"), n_features=64)
    Xt, yt = load_svmlight(str(data / "digits" / "test.svm.gz"), n_features=64)
    digits = train_ovo(X, y, C=1.0, seed=0)
    yield "digits", digits, hash_model(digits, bits=128, seed=0), Xt, yt
    X, y = load_svmlight(str(data / "omniglot-242" / "train.svm.gz"), n_features=784)
    Xt, yt = load_svmlight(str(data / "omniglot-242" / "test.svm.gz"), n_features=784)
    omni = train_ovo(X, y, C=0.1, seed=1)
    Xv, yv = _split(Xt, yt)
    yield "omniglot-242", omni, hash_model(omni, bits=1024, seed=1), Xv, yv


def _summary(cal):
    floor = cal.grid[0]["accuracy"] - MAX_LOSS / 100.0
    rows = [{key: g.get(key) for key in ("mode", "rule", "bits", "k", "max_k", "epsilon", "accuracy",
                                          "mean_refined")} for g in cal.grid]
    A, B = np.asarray(cal.platt_A, dtype=np.float64), np.asarray(cal.platt_B, dtype=np.float64)
    return {"rows": rows,
            "within_max_loss": [i for i, g in enumerate(cal.grid) if g["accuracy"] >= floor - 1e-12],
            "alphas": {str(b): a for b, a in sorted(cal.alphas.items())},
            "platt": {"A_sum": float(A.sum()), "B_sum": float(B.sum()), "A_sq": float(A @ A),
                      "B_sq": float(B @ B), "A_head": A[:8].tolist(), "B_head": B[:8].tolist()},
            "prior_samples": cal.info.get("prior_samples"), "sharpness": cal.info.get("sharpness")}


def _run(model, h, X, y):
    from hsvm_cli.tune import DEFAULT_K_FRACTIONS, calibrate
    # the default k grid of 0b6bc1d (fractions of K rounded to nearest; now rounded up, as predict's -k)
    K = model.n_classes
    k_grid = sorted(k for k in {1} | {max(2, int(round(f * K))) for f in DEFAULT_K_FRACTIONS} if k < K)
    return calibrate(model, h, X, y, max_loss=MAX_LOSS, repeat=1, timing_rows=100, k_grid=k_grid)


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


@pytest.mark.parametrize("name", ["digits", "omniglot-242"])
def test_grid_accuracies_and_probabilities_are_those_before_the_timing_budget(reference, name):
    case = next(c for c in _cases() if c[0] == name)
    got = _summary(_run(*case[1:]))
    want = reference[name]
    assert [(r["mode"], r["rule"], r["bits"], r["k"], r["max_k"], r["epsilon"]) for r in got["rows"]] == \
        [(r["mode"], r["rule"], r["bits"], r["k"], r["max_k"], r["epsilon"]) for r in want["rows"]]
    for g, w in zip(got["rows"], want["rows"]):
        assert g["accuracy"] == w["accuracy"], (g, w)
        assert g["mean_refined"] == pytest.approx(w["mean_refined"], rel=1e-12), (g, w)
    assert got["within_max_loss"] == want["within_max_loss"]
    # The fitted numbers go through float32 BLAS products, whose last bits
    # depend on the kernel the BLAS picks for the CPU (OpenBLAS's Haswell and
    # SkylakeX kernels round differently): pinned to 1e-6, far below any change
    # of method.
    assert got["alphas"] == pytest.approx(want["alphas"], rel=1e-6)
    for key in ("A_sum", "B_sum", "A_sq", "B_sq"):
        assert got["platt"][key] == pytest.approx(want["platt"][key], rel=1e-6)
    np.testing.assert_allclose(got["platt"]["A_head"], want["platt"]["A_head"], rtol=1e-6)
    np.testing.assert_allclose(got["platt"]["B_head"], want["platt"]["B_head"], rtol=1e-6)
    assert got["prior_samples"] == want["prior_samples"]
    assert got["sharpness"] == pytest.approx(want["sharpness"], rel=1e-6)


if __name__ == "__main__":
    out = {name: _summary(_run(model, h, X, y)) for name, model, h, X, y in _cases()}
    REFERENCE.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", REFERENCE, file=sys.stderr)
