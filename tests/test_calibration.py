import numpy as np
import pytest
from click.testing import CliRunner

from hsvm_cli import probability as prob
from hsvm_cli.calibrate import calibrate, class_indices
from hsvm_cli.calibration import exact_proba, load_calibration, save_calibration
from hsvm_cli.cli.main import cli
from hsvm_cli.exact import ExactScorer
from hsvm_cli.hashmodel import hash_model, save_hash_model
from hsvm_cli.hashpredict import HashPredictor
from hsvm_cli.model import save_model
from hsvm_cli.predict import predict_exact, prepare

from conftest import shared_set


def _split(X, y):
    """Every other sample of each class to validation, the rest to test."""
    idx = np.arange(y.shape[0])
    rank = np.zeros_like(idx)
    for c in np.unique(y):
        m = np.flatnonzero(y == c)
        rank[m] = np.arange(m.shape[0])
    val = rank % 2 == 0
    return X[idx[val]], y[val], X[idx[~val]], y[~val]


@pytest.fixture(scope="module")
def omniglot_calibrated(omniglot):
    model, Xt, yt = omniglot
    Xv, yv, Xs, ys = _split(Xt, yt)
    h = hash_model(model, bits=1024, seed=1)
    cal = calibrate(model, h, Xv, yv, max_loss=0.5, bits_grid=[256, 512, 1024], k_grid=[1, 8, 24],
                    epsilons=[0.01, 0.001], repeat=1)
    return model, h, cal, Xs, ys


def _check_distribution(P, K):
    assert P.shape[1] == K
    assert np.all(P >= 0) and np.all(P <= 1)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("mode", ["refine-k", "threshold", "no-refine", "all-classes"])
def test_probabilities_are_distributions_in_every_mode(omniglot_calibrated, mode):
    model, h, cal, Xs, _ = omniglot_calibrated
    kw = {"refine-k": dict(filter_k=8), "threshold": dict(filter_k=40, epsilon=0.01),
          "no-refine": dict(filter_k=1), "all-classes": dict(filter_k=model.n_classes)}[mode]
    hp = HashPredictor(model, h, bits=512, calibration=cal, **kw)
    block = hp.predict_block(Xs[:100], proba=True)
    _check_distribution(block.proba, model.n_classes)


def test_exact_probabilities_are_distributions(omniglot_calibrated):
    model, _, cal, Xs, _ = omniglot_calibrated
    votes, conf, P = exact_proba(model, cal, prepare("l2", Xs[:50]), scorer=ExactScorer(model))
    _check_distribution(P, model.n_classes)


def test_threshold_refines_fewer_classes_than_its_cap(omniglot_calibrated):
    from hsvm_cli.timing import Timings
    model, h, cal, Xs, ys = omniglot_calibrated
    t = Timings()
    hp = HashPredictor(model, h, bits=1024, filter_k=60, epsilon=0.01, calibration=cal)
    block = hp.predict_block(Xs, timings=t)
    mean_refined = t.counters["refined_classes"] / Xs.shape[0]
    assert 1 <= mean_refined < 60
    assert float((block.labels == ys).mean()) > 0.2


def test_fitted_temperature_lowers_held_out_nll(omniglot_calibrated):
    model, h, cal, Xs, ys = omniglot_calibrated
    from hsvm_cli.hashpredict import HashFilter
    yi = class_indices(model.classes, ys)
    hf = HashFilter(h, bits=512)
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xs)))
    s = prob.first_stage_scores(v, m)
    assert prob.nll(prob.softmax(s, cal.alpha(512)), yi) < prob.nll(prob.softmax(s, 1.0), yi)


def test_chosen_setting_keeps_test_accuracy_within_one_point(omniglot_calibrated):
    model, h, cal, Xs, ys = omniglot_calibrated
    exact = float((predict_exact(model, Xs)[0] == ys).mean())
    st = cal.setting
    if st["mode"] == "exact":
        assert "exact" in cal.info["why"]
        return
    hp = HashPredictor(model, h, bits=st["bits"], filter_k=st["k"], epsilon=st["epsilon"], calibration=cal,
                       refine=st["k"] > 1)
    acc = float((hp.predict_block(Xs).labels == ys).mean())
    assert acc >= exact - 0.01
    chosen = [g for g in cal.grid if g["chosen"]][0]
    assert chosen["seconds_per_sample"] < cal.grid[0]["seconds_per_sample"]


def test_calibration_file_round_trip(omniglot_calibrated, tmp_path):
    _, _, cal, _, _ = omniglot_calibrated
    save_calibration(cal, tmp_path / "c.cal")
    back = load_calibration(tmp_path / "c.cal")
    assert back.alphas == cal.alphas and back.setting == cal.setting
    assert np.array_equal(back.platt_A, cal.platt_A)


def test_fashion_mnist_calibration_keeps_accuracy_and_lowers_nll():
    from hsvm_cli.svmlight import load_svmlight
    from hsvm_cli.trainer import train_model
    root = shared_set("fashion-mnist-20k")
    X, y = load_svmlight(str(root / "train.svm.gz"), n_features=784)
    Xt, yt = load_svmlight(str(root / "test.svm.gz"), n_features=784)
    model = train_model(X[:8000], y[:8000], C=1.0, seed=0)
    Xv, yv, Xs, ys = _split(Xt, yt)
    h = hash_model(model, bits=512, seed=0)
    cal = calibrate(model, h, Xv, yv, max_loss=0.5, bits_grid=[128, 512], k_grid=[1, 2, 3], epsilons=[0.01],
                    repeat=1)
    exact = float((predict_exact(model, Xs)[0] == ys).mean())
    st = cal.setting
    if st["mode"] == "exact":
        acc = exact
        assert "exact" in cal.info["why"]
    else:
        hp = HashPredictor(model, h, bits=st["bits"], filter_k=st["k"], epsilon=st["epsilon"], calibration=cal,
                           refine=st["k"] > 1)
        acc = float((hp.predict_block(Xs).labels == ys).mean())
    assert acc >= exact - 0.01
    from hsvm_cli.hashpredict import HashFilter
    yi = class_indices(model.classes, ys)
    hf = HashFilter(h, bits=128)
    v, m = hf.votes(hf.hash_samples(prepare("l2", Xs)))
    s = prob.first_stage_scores(v, m)
    assert prob.nll(prob.softmax(s, cal.alpha(128)), yi) < prob.nll(prob.softmax(s, 1.0), yi)


def test_cli_calibrate_then_predict_proba_in_libsvm_layout(digits_model, digits, tmp_path):
    from conftest import BUNDLED
    model_p, hbm_p, cal_p = tmp_path / "d.hsvm", tmp_path / "d.hbm", tmp_path / "d.cal"
    save_model(digits_model, model_p)
    save_hash_model(hash_model(digits_model, bits=256, seed=0), hbm_p)
    test = str(BUNDLED / "digits" / "test.svm.gz")
    r = CliRunner().invoke(cli, ["calibrate", "-m", str(model_p), "-H", str(hbm_p), test, "-o", str(cal_p),
                                 "--repeat", "1", "--k", "1,3", "--epsilon", "0.01", "-q"])
    assert r.exit_code == 0, r.output
    assert "chosen" in r.stdout and "times measured on this machine" in r.stdout
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "-H", str(hbm_p), "-C", str(cal_p), "--proba",
                                 "-k", "3", test, "-q"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    head = lines[0].split()
    assert head[0] == "labels" and [int(v) for v in head[1:]] == digits_model.classes.tolist()
    assert len(lines) == 451
    for line in lines[1:]:
        tok = line.split()
        assert len(tok) == 11 and int(tok[0]) in digits_model.classes
        assert abs(sum(float(v) for v in tok[1:]) - 1) < 1e-4
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "-C", str(cal_p), "--proba", "--exact", test, "-q"])
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == lines[0]
    r = CliRunner().invoke(cli, ["predict", "-m", str(model_p), "--proba", test])
    assert r.exit_code == 2 and "-C" in r.stderr


@pytest.mark.parametrize("k", [1, 8])
def test_with_probabilities_the_label_is_the_most_probable_class(omniglot_calibrated, k):
    model, h, cal, Xs, _ = omniglot_calibrated
    block = HashPredictor(model, h, bits=512, filter_k=k, calibration=cal).predict_block(Xs[:100], proba=True)
    assert np.array_equal(block.labels, model.classes[np.argmax(block.proba, axis=1)])
