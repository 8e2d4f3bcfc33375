"""Choosing C by cross-validation (``train-ovo -c auto``, ``--c-grid``, ``--cv``).

The search follows LIBLINEAR's ``-C`` (Chu, Hsieh & Lin, "Warm Start for
Parameter Selection of Linear Classifiers", KDD 2015): C runs up a log grid,
doubling from a small value at which every pair's solution is still nearly
w = 0, each C warm-started from the previous one's solution
(:class:`~hsvm_cli.train.cross_validation.PathCrossValidation`), and the C with
the best cross-validated accuracy wins (the smallest among equal ones: more
regularisation, cheaper to train).

Default grid: C = 2^k from 2^floor(log2(1/(2 l max‖x̃‖²))) -- LIBLINEAR's
start for the L2-loss SVM, with l the median number of training rows of a pair
and x̃ a sample with its bias feature -- up to 2^10 (LIBLINEAR's largest),
stopping early once ``patience`` (2) values past the best have not improved on
it (:func:`fell`) -- counted only once the best has risen above the first
value's accuracy by three of its standard errors (:func:`has_risen`): at the
grid's start the weights are nearly zero and the accuracy can stay flat for a
few doublings before it climbs.  As C grows the solution of an L2-regularised
linear SVM tends to a limit (the hard-margin SVM on separable data) and the
accuracy stops changing, so past the best the curve is flat or falls.  The
three-point average (below) needs only the value just past the best; the
second guards against one noisy dip while the curve still rises.  A value equal
to the best counts as a fall only when every class of two or more samples has
at least one right held-out prediction: an imbalanced problem's accuracy can
rest on a plateau for several doublings -- the large classes right, the small
ones wholly wrong, their pairs still decided by the bias -- and climb again
once C lets their weights overcome it (a shuttle-like set, seven classes of
9,200 down to 2 rows: 99.38% from C = 2^-11 to 2^-6, 99.99% from 2^0, where
counting every equal value chose 2^-10 with a mean class accuracy of 50% on
the test file), while at a flat top, every class learnt, equal values end the
search as falls do (the values past the best are the largest C run, the
slowest to solve).  On the six shared data sets, both normalisations and three
fold seeds (36 searches; BENCHMARKS.md, "C by cross-validation"), stopping
after two values without improvement cost 0.68 of stopping after four values
and chose the same C in 30; the other six are on plateaus, where two lose one
test sample of 450 and four score the same (the rule for equal values since:
BENCHMARKS.md, "Twenty-first session").  Without the guard one search stopped
on the flat start (att-faces-40, C = 2^-6, 84% against 95%).  An explicit grid
(``--c-grid``) is run in full, in increasing order.

The default grid is run coarse to fine, as the grid search of the LIBSVM guide
(Hsu, Chang & Lin, "A Practical Guide to Support Vector Classification"):
first every other value (C x 4 a step, and the grid's last), once the accuracy
has risen up to one value past the best that does not improve on it
(:func:`fell`) -- two doublings, the span the doubling grid's patience covers
-- or to a new best that gains less than one standard error on the value
before it (the top of the curve, where a step of four would overshoot into the
largest and slowest C values), then the values skipped beside the best, each
warm-started from the path's point just below it
(:meth:`PathCrossValidation.snapshot` and ``restore``), and on up the doubling
grid while a filled-in value becomes the best, until ``patience`` doubling
values past the best have not improved on it.  The search thus ends as the
doubling search would -- the highest raw accuracy's two grid neighbours and
the values past it up to the ``patience``-th that counts run -- having skipped
every other value of the rising stretch below it: 9-12 C values instead of
13-20 on the shared sets, searches 1.2-1.4x faster (BENCHMARKS.md, "Coarse to
fine").  The solutions reached differ within the solver's tolerance from the
doubling path's, so a table can differ by a few samples and, on a plateau, the
chosen C by a few doublings.  A problem whose three snapshots (the best, the
point below it, the last) would pass ``_SNAPSHOT_BYTES`` runs the doubling
grid.

The choice: the C whose cross-validated accuracy, averaged with its
neighbours' on the grid (the values just below and above it that were run),
is highest; among equal averages the smallest C (more regularisation, cheaper
to train).  On a doubling grid neighbouring values give nearly the same
models, while each CV accuracy carries a sampling error of about
sqrt(a(1-a)/n) -- 0.8 points for 3,630 samples at 40% -- so the raw maximum of
a flat stretch is decided by noise; the three-point average halves the
variance of the comparison (for a grid of one or two values it is the raw
accuracy)."""
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError, warn
from ..preprocess import row_sum_squares
from ..support.arrays import is_int
from .class_weight import class_weight_vector
from .cross_validation import CV_LOSSES, DUAL_EPS, PathCrossValidation

__all__ = ["CSearch", "search_c", "choose_normalization", "default_grid", "c_text", "MAX_C", "PATIENCE"]

MAX_C = 2.0 ** 10
PATIENCE = 2
RISE_SE = 3.0
# The coarse-to-fine search keeps up to this many snapshots of the path (the
# best point, the one below it, the last) and runs only while they take at
# most _SNAPSHOT_BYTES; beyond, the plain doubling grid (a rule on the
# problem's shape only: every machine searches alike).
_SNAPSHOTS = 3
_SNAPSHOT_BYTES = 1 << 30


def c_text(C):
    """C as the tables print it: ``%g`` when that reads back as the same
    number, else every digit it needs (2^-10 is 0.0009765625, where %g gives
    0.000976562: a value copied from the table into -c must train the model
    the search chose)."""
    short = "%g" % C
    if float(short) == C:
        return short
    C = float(C)
    return "%d" % C if C.is_integer() and abs(C) < 2.0 ** 53 else repr(C)


@dataclass
class CSearch:
    """The outcome of a search: ``steps`` (one
    :class:`~hsvm_cli.train.cross_validation.CvStep` per C tried, in order),
    ``best`` (the chosen step), ``folds``, ``seed``, ``grid`` ("auto" or the
    values given), ``stopped_early``, ``form`` (the solver form used) and
    ``seconds`` (the whole search)."""

    steps: list
    best: object
    folds: int
    seed: int
    grid: object
    stopped_early: bool = False
    form: str = None
    seconds: float = 0.0
    solver: dict = field(default_factory=dict)
    smoothed: list = field(default_factory=list)   # the accuracies the choice compares
    warnings: list = field(default_factory=list)   # lines the table ends with (as LIBLINEAR's -C warns)
    # With --normalize auto: the normalisation this search ran on, and the
    # search of every normalisation compared ({name: CSearch}, this one too).
    normalize: str = None
    compared: dict = None
    # One C given (--cv F -c C): svm-train -v's line, and a cold start.
    fixed: bool = False
    # The default grid run coarse to fine (module docstring), not value by value.
    coarse: bool = False

    @property
    def best_smoothed(self):
        """The averaged accuracy of the chosen C (what normalisations are
        compared by)."""
        return self.smoothed[self.steps.index(self.best)] if self.smoothed else self.best.accuracy

    @property
    def best_C(self):
        return self.best.C

    def record(self):
        """What a model stores of the search (no times: the same training gives
        the same bytes)."""
        return {"folds": self.folds, "seed": self.seed, "grid": self.grid, "chosen_C": self.best.C,
                "chosen_accuracy": self.best.accuracy, "stopped_early": self.stopped_early,
                "method": "stratified %d-fold cross-validation, one-vs-one voting over the held-out fold; "
                          "dual coordinate descent%s%s" % (
                              self.folds, "" if self.fixed else " warm-started along C",
                              "; every other grid value, then those beside the best" if self.coarse else ""),
                "choice": self._choice(),
                "table": [{"C": s.C, "cv_accuracy": s.accuracy, "smoothed_accuracy": m, "correct": s.correct,
                           "total": s.total} for s, m in zip(self.steps, self.smoothed)],
                **({} if self.compared is None else {"normalize": {
                    "chosen": self.normalize,
                    "choice": "highest averaged accuracy at each normalisation's chosen C, l2 among equal",
                    "compared": [{"normalize": name, "chosen_C": other.best.C, "smoothed_accuracy": other.best_smoothed,
                                  "table": [{"C": st.C, "cv_accuracy": st.accuracy, "correct": st.correct}
                                            for st in other.steps]}
                                 for name, other in self.compared.items()]}})}

    @property
    def _averaged(self):
        # a grid of one or two values compares raw accuracies (module docstring)
        return len(self.steps) > 2

    def _choice(self):
        if self.fixed:
            return "the C given"
        if not self._averaged:
            return "highest accuracy, smallest C among equal"
        return "highest accuracy averaged with the grid neighbours', smallest C among equal"

    def table(self):
        """What the command prints: for one C, svm-train -v's line; for a
        search, the table (C, CV accuracy, seconds) and LIBLINEAR -C's line
        with the choice; with --normalize auto, each normalisation's and the
        one chosen."""
        if self.compared is not None:
            parts = ["--normalize %s:\n%s" % (name, other._table("<- chosen" if other is self else "<- its best"))
                     for name, other in self.compared.items()]
            others = ", ".join("%.4g%% with %s" % (100 * o.best_smoothed, name)
                               for name, o in self.compared.items() if o is not self)
            averaged = self._averaged
            parts.append("Chosen: --normalize %s, C = %s (CV accuracy%s %.4g%%; %s)\n"
                         % (self.normalize, c_text(self.best.C), " with neighbours" if averaged else "",
                            100 * self.best_smoothed, others))
            return "".join(parts)
        return self._table()

    def _table(self, marker="<- chosen"):
        if self.fixed:
            return "Cross Validation Accuracy = %g%%\n" % (100 * self.best.accuracy) + "".join(
                w + "\n" for w in self.warnings)
        # as wide as the longest C (2^-14 is 6.103515625e-05), at least 12
        width = max([12] + [len(c_text(s.C)) for s in self.steps])
        lines = ["%-*s %14s %18s %9s" % (width, "C", "CV accuracy", "with neighbours", "seconds")]
        for s, m in zip(self.steps, self.smoothed):
            # fixed decimals, so that the column reads down (%g gave 30% beside 26.832%)
            lines.append("%-*s %13s%% %17s%% %9.1f%s" % (width, c_text(s.C), "%.4f" % (100 * s.accuracy),
                                                         "%.2f" % (100 * m), s.seconds,
                                                         "   " + marker if s is self.best else ""))
        averaged = "; chosen on the accuracy averaged with the grid neighbours', %.4g%%" % (100 * self.best_smoothed) \
            if self._averaged else ""
        lines.append("Best C = %s  CV accuracy = %g%% (%d-fold, %.1f s%s%s)"
                     % (c_text(self.best.C), 100 * self.best.accuracy, self.folds, self.seconds, averaged,
                        "; stopped after %d values past the best without improving on it" % PATIENCE
                        if self.stopped_early else ""))
        return "\n".join(lines + self.warnings) + "\n"


def default_grid(X, y, n_folds, bias=1.0, max_weight=1.0):
    """The doubling grid's values 2^k from LIBLINEAR's start (module
    docstring) up to :data:`MAX_C`; ``max_weight``, the largest class
    weight, moves the start down so that the heaviest class's C starts
    there."""
    sq = row_sum_squares(X)
    max_sq = float(sq.max()) + bias * bias if sq.size else bias * bias
    _, counts = np.unique(y, return_inverse=False, return_counts=True)
    pair_rows = (counts[:, None] + counts[None, :])[np.triu_indices(counts.shape[0], 1)]
    rows = max(1.0, float(np.median(pair_rows)) * (n_folds - 1) / n_folds)
    scale = 2.0 * rows * max_sq * max_weight
    # all-zero samples and a negligible bias: no start below the largest C
    k0 = math.floor(math.log2(1.0 / scale)) if scale > 0 and math.isfinite(1.0 / scale) else int(math.log2(MAX_C))
    k0 = min(k0, int(math.log2(MAX_C)))
    return [2.0 ** k for k in range(k0, int(math.log2(MAX_C)) + 1)]


def check_c_grid(grid):
    """``grid`` (an iterable of positive numbers: the C values to try) as a
    sorted list of distinct floats."""
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
        # c_grid=5 failed as "'int' object is not iterable", "1,2" one character at a time
        raise OptionError("the grid of C values must be a list of positive numbers, not %r" % (grid,))
    values = set()
    for c in grid:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(c) and c > 0):
            raise OptionError("every C of the grid must be a positive number, not %r" % (c,))
        values.add(float(c))
    if not values:
        raise OptionError("the grid of C values is empty")
    return sorted(values)


def _check_bias(bias):
    if isinstance(bias, (bool, np.bool_)) or not isinstance(bias, (int, float, np.integer, np.floating)) \
            or not math.isfinite(bias):
        raise OptionError("bias must be a finite number (<= 0: no bias term), not %r" % (bias,))
    return max(float(bias), 0.0)


def search_c(X, y, *, grid=None, folds=5, seed=0, solver="l2loss-dual", tol=None, jobs=1, progress=None,
             patience=PATIENCE, bias=1.0, fixed=False, class_weight=None):
    """Cross-validate one-vs-one SVMs on the (already normalised) samples X
    and labels y at each C of ``grid`` (a list; None: the default doubling
    grid with early stopping) and return a :class:`CSearch`.

    ``solver``: train-ovo's solver (its problem is what is cross-validated);
    ``tol``: the dual stopping tolerance (default LIBLINEAR's 0.1);
    ``jobs``: threads; ``progress``: a callable receiving (done, total)
    in folds as pairs finish (fractional within a fold); ``class_weight``: as train_pairs takes it; ``fixed``:
    ``grid`` is the one C of ``--cv F -c C`` (reported as svm-train -v
    reports it, not as a search).  More folds than samples is leave-one-out
    cross-validation (one fold per sample), as LIBLINEAR's -v makes it; the
    result's ``folds`` says how many were run."""
    if solver not in CV_LOSSES:
        raise OptionError("solver must be one of %s, not %r" % (", ".join(sorted(CV_LOSSES)), solver))
    if not is_int(folds) or folds < 2:
        # 2.5 had run 2 folds, "3" three
        raise OptionError("folds must be a whole number of at least 2, not %r" % (folds,))
    folds = int(folds)
    if folds > X.shape[0] >= 2:
        # the command's notice, as LIBLINEAR's -v warns
        warn("%d folds for %d samples: leave-one-out cross-validation (%d folds), as LIBLINEAR runs it"
             % (folds, X.shape[0], X.shape[0]))
        folds = X.shape[0]
    explicit = grid is not None
    if explicit:
        grid = check_c_grid(grid)
    bias = _check_bias(bias)
    t0 = time.perf_counter()
    cv = PathCrossValidation(X, y, n_folds=folds, seed=seed, loss=CV_LOSSES[solver],
                             eps=DUAL_EPS if tol is None or solver == "l2loss-primal" else float(tol),
                             bias=bias, jobs=jobs, class_weight=class_weight)
    stops_from = 0.0
    if not explicit:
        weights = class_weight_vector(class_weight, *np.unique(np.asarray(y), return_inverse=True))
        grid = default_grid(X, y, folds, bias, 1.0 if weights is None else float(weights.max()))
        if weights is not None:
            # Under class weights the accuracy can sit on a plateau while the
            # lightest classes' C (C x weight) is still below where an
            # unweighted search starts, and rise again past it (reuters-r52,
            # -w balanced: 85% from C = 2^-8 to 2^-5, 94% at 2^4): no stop
            # before every class's C has reached that start.
            stops_from = default_grid(X, y, folds, bias)[0] / float(weights.min())
    total = folds * len(grid)
    done = [0]

    def tick(k):
        done[0] += k
        if progress is not None:
            progress(round(done[0], 9), total)     # whole folds exact where a step ends

    coarse = not explicit and len(grid) >= 3 and _SNAPSHOTS * cv.state_bytes <= _SNAPSHOT_BYTES
    if coarse:
        stopped = _coarse_to_fine(cv, grid, tick, patience=patience, stops_from=stops_from)
    else:
        stopped = _doubling(cv, grid, tick, patience=0 if explicit else patience, stops_from=stops_from)
    if progress is not None and done[0] < total:
        progress(total, total)
    steps = sorted(cv.steps, key=lambda s: s.C)
    smoothed = smoothed_accuracy([s.correct for s in steps])
    best = steps[int(np.argmax(smoothed))]          # argmax: the first (smallest C) of equal values
    return CSearch(steps=steps, best=best, folds=folds, seed=int(seed), grid="auto" if not explicit else grid,
                   stopped_early=stopped, form=cv.form, seconds=time.perf_counter() - t0, fixed=bool(fixed),
                   coarse=coarse, solver={"loss": CV_LOSSES[solver], "eps": cv.eps},
                   smoothed=[v / cv.n for v in smoothed],
                   warnings=_search_warnings(y, folds, explicit, best, steps)
                   + _pass_limit_warnings(cv))


def _doubling(cv, grid, tick, *, patience, stops_from):
    """Every C of ``grid`` in order, warm-started from the one before, up
    to the early stop (patience 0: none); returns whether it stopped before
    the grid's end."""
    top, falls = None, 0
    for C in grid:
        step = cv.run(C, progress=tick)
        # Early stopping watches the raw accuracy: no value past the point
        # where it fell is needed for the averages either.
        if top is None or step.correct > top.correct:
            top, falls = step, 0
        elif fell(step, top):
            falls += 1
            if patience and falls >= patience and has_risen(cv.steps[0], top) and C >= stops_from:
                return C != grid[-1]
    return False


def _coarse_to_fine(cv, grid, tick, *, patience, stops_from):
    """The default grid coarse to fine (module docstring): every other
    value (and the last) until one past the best does not improve on it or a new best
    gains less than its standard error, then the values skipped beside the
    best, each warm-started from the nearest point below it, and on up the
    doubling grid while the best moves; returns whether it stopped before
    the grid's end."""
    G = len(grid)
    ran = {}                  # grid index -> its CvStep
    points = {}               # grid index -> a snapshot of the path there
    live = None               # the grid index whose solutions the path holds

    def run(i):
        nonlocal live
        below = max((j for j in set(points) | {live} if j is not None and j < i), default=None)
        if below is not None and below != live:
            cv.restore(points[below])
        ran[i] = cv.run(grid[i], progress=tick)
        live = i

    def top():                # the best raw accuracy, the smallest C among equal
        return max(sorted(ran), key=lambda i: ran[i].correct)

    # The coarse pass: C x 4 per step, the early stop one step past the best
    # (two doublings, as the doubling grid's patience of two) -- or at a new
    # best that gained less than a standard error on the value before it:
    # the curve is at its top, where a step of four overshoots into the
    # largest, slowest values (fashion-mnist-20k: C = 16, a quarter of the
    # search, run only to learn that 4 was past the best).
    coarse = list(range(0, G, 2)) + ([G - 1] if (G - 1) % 2 else [])
    for i in coarse:
        if live is not None:
            points[live] = cv.snapshot()
        before = live
        run(i)
        first, t = ran[coarse[0]], top()
        # keep only what a fill can start from: the best and the point below it
        keep = {t, max((j for j in ran if j < t), default=None)}
        points = {j: p for j, p in points.items() if j in keep}
        if grid[i] < stops_from or not has_risen(first, ran[t]):
            continue
        if i > t and fell(ran[i], ran[t]):
            break
        if i == t and before is not None and ran[i].correct - ran[before].correct < _standard_error(ran[i]):
            break
    # the last point too: where the pass goes on up if the best moves past it
    points[live] = cv.snapshot()
    # The fine pass: the best's neighbours, and past it until `patience`
    # doubling values have not improved on it (fell).
    while True:
        t = top()
        need = [t - 1] if t > 0 and t - 1 not in ran else []
        falls, j = 0, t + 1
        while not need and falls < patience and j < G:
            if j not in ran:
                need = [j]
            elif fell(ran[j], ran[t]):
                falls += 1
            j += 1
        if not need:
            break
        run(need[0])
    return max(ran) != G - 1


def _search_warnings(y, folds, explicit, best, steps):
    notes = []
    labels, counts = np.unique(np.asarray(y), return_counts=True)
    ones = np.flatnonzero(counts == 1)
    if ones.size == 1:
        notes.append("Warning: class %d has 1 sample: held out, it has none to train on, so it is an error in "
                     "every cross-validation" % labels[ones[0]])
    elif ones.size:
        named = ", ".join("%d" % c for c in labels[ones[:5]]) + (", ..." if ones.size > 5 else "")
        notes.append("Warning: %d classes have 1 sample (classes %s): held out, such a sample has none to "
                     "train on, so it is an error in every cross-validation" % (ones.size, named))
    # Classes of 2 to F-1 samples: each fold then holds out a sample of the
    # class that some training folds lack; at small C, where the biases
    # decide, the held-out class is the one with fewer training samples and
    # loses -- the accuracy can fall below chance.  (scikit-learn's
    # StratifiedKFold warns too.)
    short = np.flatnonzero((counts > 1) & (counts < folds))
    if counts.size and np.all(counts < folds) and short.size:
        # leave-one-out and the like: every class alike, no class favoured
        notes.append("Note: every class has fewer samples than the %d folds: each held-out sample trains with "
                     "one sample of its class fewer (as in leave-one-out)" % folds)
    elif short.size:
        least = short[int(np.argmin(counts[short]))]
        if short.size == 1:
            notes.append("Warning: class %d has %d samples, fewer than the %d folds: its held-out samples train "
                         "with one sample fewer than the other classes; use fewer folds (--cv %d) for a fairer "
                         "estimate" % (labels[least], counts[least], folds, counts[least]))
        else:
            # "other" beside the single-sample warning above, which those classes are not counted in
            notes.append("Warning: %d %sclasses have fewer samples than the %d folds (class %d has %d): their "
                         "held-out samples train with one sample fewer than the other classes; use fewer folds "
                         "(--cv %d) for a fairer estimate" % (short.size, "other " if ones.size else "", folds,
                                                                labels[least], counts[least], counts[least]))
    if not explicit and best is steps[-1] and best.C >= MAX_C:
        notes.append("Warning: the best C is the grid's largest (%s); the accuracy may still rise beyond it "
                     "(--c-grid tries larger values), as LIBLINEAR's -C warns 'maximum C reached'" % c_text(best.C))
    elif explicit and len(steps) > 1 and best is steps[-1]:
        notes.append("Warning: the best C is the grid's largest (%s); the accuracy may still rise beyond it "
                     "(add larger values to --c-grid)" % c_text(best.C))
    return notes


def _pass_limit_warnings(cv):
    """LIBLINEAR's "reaching max number of iterations", for the C values of
    the path ``cv`` where pair solves stopped at the pass limit: their
    accuracies are of unconverged solutions (a warm-started path and a cold
    start can then differ by more than the tolerance would let them)."""
    capped = [s for s in cv.steps if s.capped]
    if not capped:
        return []
    solves, max_passes = cv.F * cv.pair_a.shape[0], cv.max_passes
    worst = max(capped, key=lambda s: s.capped)
    more = len(capped) - 1
    return ["Warning: some pair solves stopped at the pass limit (%d passes) before meeting the tolerance -- at "
            "C = %s, %d of %d solves%s: their CV accuracy is of unconverged solutions (LIBLINEAR warns 'reaching "
            "max number of iterations'); a looser --eps converges sooner"
            % (max_passes, c_text(worst.C), worst.capped, solves,
               ", and at %d more C value%s" % (more, "s" if more > 1 else "") if more else "")]


def fell(step, top):
    """Whether ``step``, run past the best step ``top``, counts towards the
    early stop: below it, or equal to it with every class of two or more
    samples right at least once.  An equal value that still misses a class
    whole is a plateau a larger C can leave (module docstring)."""
    return step.correct < top.correct or (step.correct == top.correct and step.missed == 0)


def has_risen(first, top):
    """Whether the best step so far beats the grid's first by RISE_SE
    standard errors of the first's accuracy (at least that many samples):
    early stopping is for the flat or falling stretch past the best, not for
    the flat start, where nearly zero weights predict alike at every C."""
    return top.correct - first.correct >= RISE_SE * _standard_error(first)


def _standard_error(step):
    """The sampling error of a step's count of correct predictions,
    sqrt(n a (1 - a)), at least one sample."""
    a = step.correct / step.total if step.total else 0.0
    return max(1.0, math.sqrt(step.total * a * (1.0 - a)))


def smoothed_accuracy(correct):
    """Per grid value, the mean of its count and its neighbours' (module
    docstring); float64 [G]."""
    c = np.asarray(correct, dtype=np.float64)
    if c.shape[0] < 3:
        return c
    total = c.copy()
    total[1:] += c[:-1]
    total[:-1] += c[1:]
    count = np.full(c.shape[0], 3.0)
    count[0] = count[-1] = 2.0
    return total / count


def choose_normalization(searches):
    """The search (``{normalize: CSearch}``, in order of preference) whose
    chosen C has the highest averaged CV accuracy -- the first among equal
    ones -- marked with its normalisation and the comparison."""
    best_name = None
    for name, srch in searches.items():
        if best_name is None or srch.best_smoothed > searches[best_name].best_smoothed:
            best_name = name
    chosen = searches[best_name]
    chosen.normalize = best_name
    chosen.compared = dict(searches)
    return chosen
