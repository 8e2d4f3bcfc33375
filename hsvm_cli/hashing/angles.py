"""The hash classifier's angle θ and range-query threshold ρ, and the margins
the hash votes carry.

For a unit sample x and a classifier (w, b), w·x + b > 0 iff the angle between
x and w is below arccos(−b/‖w‖); each of D' sign-projection bits differs with
probability angle/π, so the hash classifier is

    ĥ(x) = sgn(ρ − d_H(F(x), F(w))),   ρ = D'·θ,   θ = arccos(−b/‖w‖)/π.

θ is stored per classifier, so any prefix D' of the code reuses it."""
import numpy as np


def classifier_angles(W, b):
    """θ = arccos(−b/‖w‖)/π per classifier, clamped where |b| >= ‖w‖ (the
    classifier is then constant): 1 (always positive) when b >= ‖w‖, 0 (never
    positive) when b <= −‖w‖."""
    norms = np.sqrt(np.einsum("ij,ij->i", W, W, dtype=np.float64))
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(norms > 0, -b / norms, np.where(b > 0, -np.inf, np.inf))
    theta = np.arccos(np.clip(c, -1.0, 1.0)) / np.pi
    theta = np.where(c <= -1.0, 1.0, np.where(c >= 1.0, 0.0, theta))
    return theta.astype(np.float32)


def thresholds(theta, bits):
    """Integer range-query thresholds at ``bits``: a classifier is positive iff
    d_H < thr.  thr = ceil(θ·bits) (d_H < ρ for real ρ), and the clamped
    constant classifiers get bits + 1 (always) or 0 (never)."""
    t = np.asarray(theta, dtype=np.float64)
    thr = np.ceil(t * bits)
    thr = np.where(t >= 1.0, bits + 1, np.where(t <= 0.0, 0, thr))
    return thr.astype(np.int32)


def class_theta_sums(theta, pair_a, pair_b, *, bags, n_classes):
    """Per class, the sum over its classifiers of θ, signed towards the class
    (+ for pair_a, − for pair_b): the constant part of the hash margins."""
    t = np.asarray(theta, dtype=np.float64).reshape(-1, bags).sum(axis=1)
    return (np.bincount(pair_a, weights=t, minlength=n_classes)
            - np.bincount(pair_b, weights=t, minlength=n_classes))


def hash_margins(dsum, theta_sums, *, bits, bags, out=None):
    """Per class, the summed normalised margins (ρ − d_H)/D' of its
    classifiers (bag mean), signed towards the class, from the kernel's signed
    distance sums ``dsum``; into ``out`` (float64, dsum's shape) when given:
    the same operations, without two temporary arrays."""
    if out is None:
        return (theta_sums * bits - dsum) / float(bits * bags)
    np.subtract(theta_sums * bits, dsum, out=out)
    return np.divide(out, float(bits * bags), out=out)
