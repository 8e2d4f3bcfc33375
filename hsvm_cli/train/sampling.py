"""What every one-vs-one trainer shares, so that a pair sees the same rows and
the same seed whichever solver trains it (LIBLINEAR on features,
train/liblinear.py; dual coordinate descent on packed codes,
train/bits_solver.py): option checks, per-classifier solver seeds, and the
row subsets and bootstrap draws of a pair.

A pair is identified by its two *labels* (not class positions), so its
classifier does not change when classes are added to or removed from the
training set."""
import math

import numpy as np

from ..errors import OptionError
from ..support.arrays import check_seed, is_int

_U64 = 0xFFFFFFFFFFFFFFFF
_I64_MAX = (1 << 63) - 1

# Tags that keep the random streams for row subsets and bootstrap draws apart.
STREAM_SUBSET = 0
STREAM_BOOTSTRAP = 1

#: The most bags a pair may have: what the model files hold (models/ovo.py
#: reads bags up to 2^20); a bigger count had crashed inside numpy with a
#: traceback (OverflowError, or "array is too big") instead of a one-line error.
MAX_BAGS = 1 << 20


def _mix64(z):
    # splitmix64's finaliser: a cheap bijective scrambler, vectorised over uint64
    # arrays so that seeding 10^5 classifiers costs microseconds, not a
    # SeedSequence per classifier.
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _label_key(labels):
    # Labels may be negative; reinterpreting their two's complement keeps them
    # distinct and non-negative, which SeedSequence requires.
    return np.asarray(labels, dtype=np.int64).view(np.uint64)


def solver_seeds(seed, label_a, label_b, bags=1):
    """The ``srand`` seeds the trainers use: uint32 [len(label_a) * bags],
    entry ``p * bags + bag`` for the pair of labels ``(label_a[p], label_b[p])``.

    Exposed so that a single pair can be retrained outside the trainers (e.g.
    with LIBLINEAR's own API) and give the same weights."""
    la = np.repeat(_label_key(np.atleast_1d(label_a)), bags)
    lb = np.repeat(_label_key(np.atleast_1d(label_b)), bags)
    bag = np.tile(np.arange(bags, dtype=np.uint64), la.shape[0] // bags)
    with np.errstate(over="ignore"):
        h = _mix64(np.full(la.shape, seed & _U64, dtype=np.uint64))
        h = _mix64(h ^ la)
        h = _mix64(h ^ lb)
        h = _mix64(h ^ bag)
    return (h >> np.uint64(32)).astype(np.uint32)


def pair_rng(seed, stream, la, lb, *rest):
    key = (stream, int(la) & _U64, int(lb) & _U64) + tuple(rest)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def check_options(C, solver, tol, per_class, bags, seed, jobs, *, solvers):
    """Raise OptionError (a ValueError) for an option a trainer cannot take."""
    if solver not in solvers:
        raise OptionError("solver must be one of %s, not %r"
                          % (", ".join(sorted(solvers)), solver))
    if isinstance(C, (bool, np.bool_)) or not isinstance(C, (int, float, np.integer, np.floating)):
        raise OptionError("C must be a positive number, not %r" % (C,))
    if not (math.isfinite(C) and C > 0):
        raise OptionError("C must be a positive finite number, not %r" % (C,))
    if tol is not None:
        if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)):
            raise OptionError("tol must be a positive number or None, not %r" % (tol,))
        if not (math.isfinite(tol) and tol > 0):
            raise OptionError("tol must be a positive finite number or None, not %r" % (tol,))
    if per_class is not None and not (is_int(per_class) and 1 <= per_class <= _I64_MAX):
        # (a count past int64 had crashed inside numpy: more than any class has, say None)
        raise OptionError("per_class must be an integer from 1 to %d, or None, not %r" % (_I64_MAX, per_class))
    if not (is_int(bags) and 1 <= bags <= MAX_BAGS):
        raise OptionError("bags must be an integer from 1 to %d, not %r" % (MAX_BAGS, bags))
    check_seed(seed)
    if not (is_int(jobs) and jobs >= 1):
        raise OptionError("jobs must be a positive integer, not %r" % (jobs,))


def subsample_pair(rows_a, rows_b, la, lb, per_class, seed):
    """At most ``per_class`` rows of each class of the pair (labels la, lb),
    drawn without replacement by a generator keyed by the seed and the labels;
    sorted back into data order, so that a subset problem differs from the
    full one only by the rows left out, not by their order (which the dual
    solvers' results depend on)."""
    if per_class is None or (rows_a.shape[0] <= per_class and rows_b.shape[0] <= per_class):
        return rows_a, rows_b
    rng = pair_rng(seed, STREAM_SUBSET, la, lb)
    if rows_a.shape[0] > per_class:
        rows_a = rows_a[np.sort(rng.choice(rows_a.shape[0], per_class, replace=False))]
    if rows_b.shape[0] > per_class:
        rows_b = rows_b[np.sort(rng.choice(rows_b.shape[0], per_class, replace=False))]
    return rows_a, rows_b


def bootstrap_pair(rows_a, rows_b, la, lb, bag, seed):
    """Bag ``bag`` of the pair: each class resampled with replacement to its
    own size (a stratified bootstrap, so every bag keeps both classes)."""
    rng = pair_rng(seed, STREAM_BOOTSTRAP, la, lb, bag)
    na, nb = rows_a.shape[0], rows_b.shape[0]
    return rows_a[np.sort(rng.integers(0, na, na))], rows_b[np.sort(rng.integers(0, nb, nb))]
