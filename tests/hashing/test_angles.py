import numpy as np
import pytest

from hsvm_cli.hashing.angles import classifier_angles, thresholds


def test_angles_are_clamped_for_constant_classifiers():
    W = np.array([[3.0, 4.0], [3.0, 4.0], [3.0, 4.0], [3.0, 4.0], [0.0, 0.0], [0.0, 0.0]], np.float32)
    b = np.array([0.0, 5.0, 7.0, -6.0, 1.0, -1.0], np.float32)
    th = classifier_angles(W, b)
    assert th[0] == pytest.approx(0.5)
    assert th[1:].tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]
    thr = thresholds(th, 256)
    assert thr.tolist() == [128, 257, 257, 0, 257, 0]


def test_threshold_implements_strict_range_query():
    th = np.array([0.3, 0.25], np.float32)
    # d_H < rho: with rho = 76.8 distances up to 76 are positive; with rho = 64 up to 63.
    assert thresholds(th, 256).tolist() == [77, 64]
