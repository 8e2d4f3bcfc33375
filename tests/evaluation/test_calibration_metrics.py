import numpy as np
import pytest

from hsvm_cli.evaluation import calibration_metrics as pb


def test_nll_matches_a_hand_computation():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    y = np.array([0, 1, 2, -1])
    expected = (-np.log(0.7) - np.log(0.1) - np.log(1e-15) - np.log(1e-15)) / 4
    assert pb.nll(P, y) == pytest.approx(expected, rel=1e-12)


def _top_label_rows(conf, correct, K=3):
    """Rows with max probability conf on class 0; y = 0 when correct, else 1."""
    P = np.empty((conf.size, K))
    P[:, 0] = conf
    P[:, 1:] = ((1.0 - conf) / (K - 1))[:, None]
    return P, np.where(correct, 0, 1)


def test_ece_is_small_for_calibrated_and_large_for_overconfident_predictions():
    rng = np.random.default_rng(40)
    conf = rng.uniform(0.4, 1.0, 60000)
    correct = rng.random(conf.size) < conf
    P, y = _top_label_rows(conf, correct)
    assert pb.expected_calibration_error(P, y) < 0.01
    P_over, _ = _top_label_rows(np.minimum(conf + 0.2, 1.0), correct)
    assert pb.expected_calibration_error(P_over, y) > 0.1
    # one bin: |accuracy - mean confidence|
    assert pb.expected_calibration_error(P_over, y, bins=1) == pytest.approx(
        abs(correct.mean() - P_over.max(axis=1).mean()), rel=1e-9)


def test_reject_curve_starts_at_the_plain_error_and_reaches_zero():
    rng = np.random.default_rng(41)
    n = 400
    conf = rng.uniform(0.4, 1.0, n)
    correct = conf > np.quantile(conf, 0.1)  # the errors are the least confident
    P, y = _top_label_rows(conf, correct)
    rej, err = pb.reject_curve(P, y)
    assert rej.shape == err.shape == (n + 1,)
    assert rej[0] == 0.0 and rej[-1] == 1.0
    assert err[0] == pytest.approx(1.0 - np.mean(P.argmax(axis=1) == y))
    n_wrong = int((~correct).sum())
    assert err[n_wrong] == 0.0 and np.all(err[n_wrong:] == 0.0)
    assert np.all(np.diff(err) <= 1e-15)


def test_reject_curve_is_non_increasing_when_confidence_is_informative():
    # confidence levels whose error rates fall as confidence rises; ties
    # within a level are shared out evenly, so every point is on the curve
    rng = np.random.default_rng(42)
    conf, correct = [], []
    for c, n_level, err_rate in ((0.4, 100, 0.6), (0.55, 200, 0.4), (0.7, 300, 0.25), (0.9, 400, 0.05)):
        wrong = np.zeros(n_level, dtype=bool)
        wrong[:int(round(n_level * err_rate))] = True
        conf.append(np.full(n_level, c))
        correct.append(~rng.permutation(wrong))
    conf, correct = np.concatenate(conf), np.concatenate(correct)
    perm = rng.permutation(conf.size)
    P, y = _top_label_rows(conf[perm], correct[perm])
    rej, err = pb.reject_curve(P, y)
    assert np.all(np.diff(err) <= 1e-12)
    # the curve does not depend on the order of the samples
    P2, y2 = _top_label_rows(conf, correct)
    assert np.allclose(pb.reject_curve(P2, y2)[1], err, atol=1e-14)
    # rejecting the whole least confident level leaves the others' errors
    assert err[100] == pytest.approx((80 + 75 + 20) / 900)


def test_reject_at_error_finds_the_smallest_sufficient_reject_rate():
    rng = np.random.default_rng(43)
    conf = rng.uniform(0.4, 1.0, 2000)
    correct = rng.random(conf.size) < conf ** 4
    P, y = _top_label_rows(conf, correct)
    rej, err = pb.reject_curve(P, y)
    targets = np.array([0.2, 0.1, 0.05, 0.005, 0.004, 0.003, 0.002, 0.001, 0.0])
    got = pb.reject_at_error(P, y, targets)
    for t, g in zip(targets, got):
        r = int(round(g * conf.size))
        assert err[r] <= t + 1e-12 and np.all(err[:r] > t)
    assert pb.reject_at_error(P, y, 1.0) == 0.0
    with pytest.raises(ValueError):
        pb.reject_at_error(P, y, [1.5])


def test_metrics_reject_bad_labels():
    P = np.full((2, 3), 1 / 3)
    for f in (pb.nll, pb.expected_calibration_error, pb.reject_curve):
        with pytest.raises(ValueError):
            f(P, np.array([0, 3]))
        with pytest.raises(ValueError):
            f(P, np.array([0]))
