"""Choosing C by cross-validation (train/c_search.py): the grid, early stopping,
the choice, and what a model records."""
import math

import numpy as np
import pytest

from hsvm_cli.errors import OptionError
from hsvm_cli.preprocess import l2_normalize
from hsvm_cli.train.c_search import MAX_C, PATIENCE, c_text, default_grid, search_c, smoothed_accuracy
from hsvm_cli.train.cross_validation import PathCrossValidation
from hsvm_cli.train.ovo import default_bias, train_ovo


@pytest.fixture(scope="module")
def digits_l2(digits):
    X, y, _, _ = digits
    return l2_normalize(X.astype(np.float64)), y


def test_default_grid_doubles_from_liblinears_start_to_1024(digits_l2):
    X, y = digits_l2
    grid = default_grid(X, y, 5)
    counts = np.bincount(np.searchsorted(np.unique(y), y))
    pair_rows = np.median([(counts[a] + counts[b]) * 4 / 5 for a in range(10) for b in range(a + 1, 10)])
    start = 2.0 ** math.floor(math.log2(1 / (2 * pair_rows * 2.0)))     # max |x|^2 + bias^2 = 2
    assert grid[0] == start and grid[-1] == MAX_C
    assert all(b == 2 * a for a, b in zip(grid, grid[1:]))


def test_smoothing_averages_each_value_with_its_grid_neighbours():
    assert smoothed_accuracy([1, 5, 3, 3]).tolist() == [3.0, 3.0, 11 / 3, 3.0]
    assert smoothed_accuracy([4, 2]).tolist() == [4.0, 2.0]


def test_search_chooses_the_best_smoothed_value_and_stops_after_patience(digits_l2):
    X, y = digits_l2
    s = search_c(X, y, folds=3, seed=1)
    Cs, correct = [st.C for st in s.steps], [st.correct for st in s.steps]
    assert Cs == sorted(Cs)
    smooth = smoothed_accuracy(correct)
    assert s.best is s.steps[int(np.argmax(smooth))]
    # The raw maximum's doubling neighbours were run, and the PATIENCE values
    # past it, none of them better.
    grid = default_grid(X, y, 3)
    top = grid.index(Cs[int(np.argmax(correct))])
    for j in [top - 1] + list(range(top + 1, top + 1 + PATIENCE)):
        assert grid[j] in Cs and correct[Cs.index(grid[j])] <= max(correct)
    assert s.stopped_early and Cs[-1] < MAX_C
    assert s.best_C == s.best.C and s.grid == "auto"
    # The same cross-validation at the chosen C alone gives the same accuracy
    # within the solver's tolerance (the path only warm-starts it).
    alone = PathCrossValidation(X, y, n_folds=3, seed=1).run(s.best_C)
    assert abs(alone.correct - s.best.correct) <= 3


class _ScriptedPath:
    """A PathCrossValidation stand-in whose accuracies are given per value of
    ``grid``; ``order`` the grid indices in the order run."""

    def __init__(self, correct, grid, total=300, missed=None):
        self.by_C = dict(zip(grid, correct))
        self.missed = dict(zip(grid, missed or [0] * len(grid)))   # classes wholly wrong at each value
        self.index = {C: i for i, C in enumerate(grid)}
        self.total, self.n, self.steps, self.order = total, total, [], []
        self.form, self.eps, self.state_bytes = "primal", 0.1, 0
        self.last = None

    def __call__(self, *args, **kwargs):
        return self

    def run(self, C, progress=None):
        from hsvm_cli.train.cross_validation import CvStep
        assert self.last is None or C >= self.last       # warm starts only upward
        step = CvStep(C, self.by_C[C], self.total, 1, 0.0, missed=self.missed[C])
        self.steps.append(step)
        self.order.append(self.index[C])
        self.last = C
        return step

    def snapshot(self):
        return self.last

    def restore(self, point):
        self.last = point


def _scripted(monkeypatch, curve, grid, missed=None):
    from hsvm_cli.train import c_search
    path = _ScriptedPath(curve, grid, missed=missed)
    monkeypatch.setattr(c_search, "PathCrossValidation", path)
    return path


def _search_along(monkeypatch, digits_l2, head, rest, missed=None):
    """search_c over the scripted curve ``head`` then ``rest`` to the default
    grid's end (``missed``: the classes wholly wrong along ``head``, none
    after); (the path, the search)."""
    X, y = digits_l2
    grid = default_grid(X, y, 3)
    missed = None if missed is None else missed + [0] * (len(grid) - len(missed))
    path = _scripted(monkeypatch, head + [rest] * (len(grid) - len(head)), grid, missed=missed)
    return path, search_c(X, y, folds=3)


def test_the_search_steps_by_four_then_fills_in_beside_the_best(digits_l2, monkeypatch):
    # Flat for three doublings at the start (nearly zero weights), then a rise
    # and a fall: every other value up to one past the best (index 6), then
    # the two skipped beside it, each from the point below it.
    path, s = _search_along(monkeypatch, digits_l2, [105, 105, 104, 105, 150, 200, 230, 229, 228], 200)
    assert path.order == [0, 2, 4, 6, 8, 5, 7] and s.stopped_early
    grid = default_grid(*digits_l2, 3)
    assert [st.C for st in s.steps] == [grid[i] for i in (0, 2, 4, 5, 6, 7, 8)]
    assert s.best.correct == 229          # the best three-point average: 230, 229, 228


def test_the_search_goes_on_doubling_while_a_filled_in_value_moves_the_best(digits_l2, monkeypatch):
    # Best on the coarse pass at 4, beaten by 5 (filled in), then by 7: the
    # search goes on from each new best until two values past it are no better.
    path, s = _search_along(monkeypatch, digits_l2, [100, 120, 150, 170, 200, 210, 195, 220, 215, 214], 150)
    assert path.order == [0, 2, 4, 6, 3, 5, 7, 8, 9]
    assert s.stopped_early and max(st.correct for st in s.steps) == 220


def test_a_best_that_gains_less_than_its_standard_error_ends_the_coarse_pass(digits_l2, monkeypatch):
    # 200 -> 203 at index 6 (se of 203/300: 8.1 samples): the top of the curve,
    # searched on by doubling from there (5 beats it, 7 is run from 6's point)
    # instead of a step of four to 8.
    path, s = _search_along(monkeypatch, digits_l2, [100, 120, 150, 170, 200, 205, 203, 199, 190], 150)
    assert path.order == [0, 2, 4, 6, 5, 7] and s.stopped_early
    assert s.best.correct == 205


def test_early_stopping_waits_for_the_accuracy_to_rise_above_the_flat_start(digits_l2, monkeypatch):
    X, y = digits_l2
    grid = default_grid(X, y, 3)
    n = len(grid)
    coarse = list(range(0, n, 2)) + ([n - 1] if (n - 1) % 2 else [])
    # se of the first value: sqrt(300 * 0.35 * 0.65) = 8.3 samples; a best
    # 3 se above it (25 samples) is a rise, one of 24 is not yet.
    path = _scripted(monkeypatch, [105, 120, 129, 128, 127] + [100] * (n - 5), grid)
    s = search_c(X, y, folds=3)
    assert path.order == coarse + [1, 3] and not s.stopped_early
    path = _scripted(monkeypatch, [105, 120, 130, 129, 128] + [100] * (n - 5), grid)
    s = search_c(X, y, folds=3)
    assert path.order == [0, 2, 4, 1, 3] and s.stopped_early


def test_values_equal_to_the_best_that_miss_a_class_whole_do_not_stop_the_search(digits_l2, monkeypatch):
    # An imbalanced problem's accuracy rests for doublings (large classes
    # right, a small one wholly wrong) and climbs again: such equal values do
    # not count.  Coarse: 0, 2 (280), 4 and 6 equal (on), 8 (295), 10 a fall;
    # then 7 beside the best, 9 (296, the new best), 11: two falls past it.
    from hsvm_cli.train import c_search
    curve = [100, 250, 280, 280, 280, 280, 280, 290, 295, 296, 294, 293]
    missed = [3, 2, 1, 1, 1, 1, 1, 0]
    path, s = _search_along(monkeypatch, digits_l2, curve, 280, missed)
    assert path.order == [0, 2, 4, 6, 8, 10, 7, 9, 11] and s.stopped_early
    assert max(st.correct for st in s.steps) == 296
    # the doubling grid alike: on through the plateau, stopped at the second fall
    monkeypatch.setattr(c_search, "_SNAPSHOT_BYTES", -1)        # the scripted path's state takes no bytes
    path, s = _search_along(monkeypatch, digits_l2, curve, 280, missed)
    assert path.order == list(range(12)) and s.stopped_early
    # every class right at least once: a flat top, whose equal values stop the search as falls do
    monkeypatch.setattr(c_search, "_SNAPSHOT_BYTES", 1 << 30)
    path, s = _search_along(monkeypatch, digits_l2, curve, 280)
    assert path.order == [0, 2, 4, 1, 3] and s.stopped_early and max(st.correct for st in s.steps) == 280


def test_under_class_weights_no_stop_before_every_classs_c_reaches_the_unweighted_start(digits_l2, monkeypatch):
    # reuters-r52 with -w balanced: a plateau while the lightest classes' C
    # (C x weight) is below where an unweighted search starts, then a rise
    X, y = digits_l2
    weights = {1: 8.0, 2: 0.25}                     # the grid starts 3 doublings lower, stops count from 2 above
    grid = default_grid(X, y, 3, max_weight=8.0)
    stops_from = default_grid(X, y, 3)[0] / 0.25
    assert grid[0] == default_grid(X, y, 3)[0] / 8
    first = next(i for i, C in enumerate(grid) if C >= stops_from)
    assert first == 5
    curve = [100, 150, 200, 199, 198, 250, 249, 248] + [200] * (len(grid) - 8)
    path = _scripted(monkeypatch, curve, grid)
    s = search_c(X, y, folds=3, class_weight=weights)
    assert path.order == [0, 2, 4, 6, 8, 5, 7] and s.best.correct == 249
    # unweighted, the same curve stops at its plateau
    plain = default_grid(X, y, 3)
    path = _scripted(monkeypatch, curve, plain)
    assert [st.C for st in search_c(X, y, folds=3).steps] == plain[:5] and path.order == [0, 2, 4, 1, 3]


def test_a_problem_whose_snapshots_would_be_large_searches_the_doubling_grid(digits_l2, monkeypatch):
    from hsvm_cli.train import c_search
    X, y = digits_l2
    monkeypatch.setattr(c_search, "_SNAPSHOT_BYTES", 0)
    s = search_c(X, y, folds=3, seed=1)
    grid = default_grid(X, y, 3)
    assert [st.C for st in s.steps] == grid[:len(s.steps)] and s.stopped_early
    top = int(np.argmax([st.correct for st in s.steps]))
    assert len(s.steps) - 1 - top == PATIENCE


def test_an_explicit_grid_is_run_in_full_in_increasing_order(digits_l2):
    X, y = digits_l2
    s = search_c(X, y, grid=[10, 0.01, 1], folds=3)
    assert [st.C for st in s.steps] == [0.01, 1.0, 10.0] and not s.stopped_early
    with pytest.raises(OptionError):
        search_c(X, y, grid=[1, -2])


def test_a_grid_of_two_values_is_said_and_recorded_as_chosen_on_raw_accuracy(digits_l2):
    # neighbours are averaged from three values on: the table and the record
    # had called a two-value choice (and a fixed C) averaged
    X, y = digits_l2
    two = search_c(X, y, grid=[2, 1], folds=3)
    assert "averaged" not in two.table() and two.record()["choice"] == "highest accuracy, smallest C among equal"
    three = search_c(X, y, grid=[1, 2, 4], folds=3)
    assert "; chosen on the accuracy averaged with the grid neighbours', " in three.table()
    assert three.record()["choice"].startswith("highest accuracy averaged with the grid neighbours'")
    assert search_c(X, y, grid=[2], folds=3, fixed=True).record()["choice"] == "the C given"


def test_model_records_the_search_without_times(digits):
    X, y, _, _ = digits
    m = train_ovo(X, y, C="auto", cv_folds=3, seed=2)
    rec = m.params["cross_validation"]
    assert rec["chosen_C"] == m.params["C"] == m.training.search.best_C
    assert rec["folds"] == 3 and rec["seed"] == 2 and len(rec["table"]) == len(m.training.search.steps)
    assert "seconds" not in repr(rec)
    assert m.training.search.table().splitlines()[-1].startswith("Best C = %g  CV accuracy = " % m.params["C"])


def test_fixed_c_with_cv_records_its_accuracy(digits):
    X, y, _, _ = digits
    m = train_ovo(X, y, C=0.5, cv_folds=4)
    assert m.params["C"] == 0.5 and [r["C"] for r in m.params["cross_validation"]["table"]] == [0.5]
    assert m.training.search.table().startswith("Cross Validation Accuracy = ")


def test_a_search_prints_its_table_even_of_one_value_and_a_fixed_c_the_cv_line(digits):
    X, y, _, _ = digits
    one = search_c(l2_normalize(X.astype(np.float64)), y, grid=[4.0], folds=3)
    lines = one.table().splitlines()
    assert lines[0].split()[:2] == ["C", "CV"] and lines[1].startswith("4 ") and lines[2].startswith("Best C = 4 ")
    assert "warm-started along C" in one.record()["method"]
    m = train_ovo(X, y, C=4.0, cv_folds=3)
    assert m.training.search.table().startswith("Cross Validation Accuracy = ")
    assert "warm-started" not in m.params["cross_validation"]["method"]


def test_bias_follows_the_samples_scale(digits):
    X, y, _, _ = digits
    assert default_bias(l2_normalize(X.astype(np.float64)), "l2") == 1.0
    rms = np.sqrt(np.mean(np.asarray(X.multiply(X).sum(axis=1))))
    assert default_bias(X, "none") == float("%.4g" % rms)
    m = train_ovo(X, y, normalize="none")
    assert m.params["bias"] == float("%.4g" % rms)


def test_normalize_auto_keeps_the_normalisation_whose_chosen_c_validates_best(digits):
    from hsvm_cli.train.ovo import cross_validate_ovo
    X, y, _, _ = digits
    each = {name: cross_validate_ovo(X, y, C="auto", folds=3, seed=2, normalize=name) for name in ("l2", "none")}
    auto = cross_validate_ovo(X, y, C="auto", folds=3, seed=2, normalize="auto")
    want = max(("l2", "none"), key=lambda name: (each[name].best_smoothed, name == "l2"))
    assert auto.normalize == want and sorted(auto.compared) == ["l2", "none"]
    for name in ("l2", "none"):
        assert [(s.C, s.correct) for s in auto.compared[name].steps] == [(s.C, s.correct) for s in each[name].steps]
    assert auto.table().splitlines()[-1].startswith("Chosen: --normalize %s, C = %g" % (want, auto.best_C))
    # The model is the one trained at the chosen normalisation and C, and
    # records both searches.
    m = train_ovo(X, y, C="auto", cv_folds=3, seed=2, normalize="auto")
    ref = train_ovo(X, y, C=auto.best_C, seed=2, normalize=want)
    assert m.normalize == want and m.params["C"] == auto.best_C and m.params["bias"] == ref.params["bias"]
    assert np.array_equal(np.asarray(m.W), np.asarray(ref.W)) and np.array_equal(m.b, ref.b)
    rec = m.params["cross_validation"]["normalize"]
    assert rec["chosen"] == want and [c["normalize"] for c in rec["compared"]] == ["l2", "none"]
    assert [c["chosen_C"] for c in rec["compared"]] == [each["l2"].best_C, each["none"].best_C]


def test_normalize_auto_prefers_l2_among_equal_accuracies_and_needs_a_search(digits):
    from hsvm_cli.train.c_search import CSearch, choose_normalization
    from hsvm_cli.train.cross_validation import CvStep

    def fake(correct):
        step = CvStep(1.0, correct, 100, 1, 0.0)
        return CSearch(steps=[step], best=step, folds=3, seed=0, grid=[1.0], smoothed=[correct / 100])

    assert choose_normalization({"l2": fake(50), "none": fake(50)}).normalize == "l2"
    assert choose_normalization({"l2": fake(50), "none": fake(51)}).normalize == "none"
    X, y, _, _ = digits
    with pytest.raises(OptionError, match="chosen by cross-validation"):
        train_ovo(X, y, C=1.0, normalize="auto")


def test_a_printed_c_reads_back_as_the_c_the_search_ran():
    # copied from the table into -c, it must train the chosen model
    assert c_text(2.0 ** -10) == "0.0009765625" and c_text(2.0 ** -9) == "0.001953125"
    assert c_text(0.5) == "0.5" and c_text(1024.0) == "1024" and c_text(2.0 ** -8) == "0.00390625"
    assert c_text(2.0 ** 30) == "1073741824"
    for k in range(-40, 61):
        assert float(c_text(2.0 ** k)) == 2.0 ** k


def test_c_values_whose_solves_hit_the_pass_limit_are_warned_about():
    # LIBLINEAR warns "reaching max number of iterations"; a search whose
    # solves stopped there reports accuracies of unconverged solutions
    # (binalpha-36, L1 loss, --eps 1e-7: C = 1024 alone 74.26%, warm-started
    # from C = 256 73.43%, the converged value).
    from types import SimpleNamespace

    from hsvm_cli.train.c_search import _pass_limit_warnings
    from hsvm_cli.train.cross_validation import CvStep
    steps = [CvStep(0.5, 90, 100, 10, 0.0), CvStep(256.0, 95, 100, 10, 0.0, capped=55),
             CvStep(1024.0, 95, 100, 10, 0.0, capped=3)]
    path = SimpleNamespace(steps=steps, F=5, pair_a=np.zeros(630), max_passes=1000)
    (line,) = _pass_limit_warnings(path)
    assert line.startswith("Warning: some pair solves stopped at the pass limit (1000 passes)")
    assert "at C = 256, 55 of 3150 solves, and at 1 more C value:" in line
    path.steps = steps[:1]
    assert _pass_limit_warnings(path) == []


def test_the_api_refuses_cross_validation_with_resampling_in_its_own_words(digits):
    X, y, _, _ = digits
    for kw in ({"C": "auto", "bags": 2}, {"C": 1.0, "cv_folds": 3, "per_class": 5}):
        with pytest.raises(OptionError) as info:
            train_ovo(X, y, **kw)
        assert "it does not combine with bags or per_class" in str(info.value) and "--" not in str(info.value)
        assert "--bags or --per-class" in info.value.cli_message


def test_samples_with_nothing_to_scale_start_the_grid_at_its_largest_c():
    # all-zero rows and a negligible bias: 1 / (2 l max|x|^2) divided by zero
    y = np.repeat([1, 2], 20)
    assert default_grid(np.zeros((40, 0)), y, 5, 1e-300) == [MAX_C]


@pytest.mark.parametrize("span", [1, 3, 1 << 20])
def test_row_sums_of_squares_are_scipys_to_the_bit_without_its_copy(monkeypatch, span):
    import scipy.sparse as sp

    import hsvm_cli.preprocess as pre
    from hsvm_cli.preprocess import row_sum_squares
    monkeypatch.setattr(pre, "SPAN_NONZEROS", span)
    rng = np.random.default_rng(3)
    X = sp.random(30, 20, density=0.3, format="csr", random_state=rng) * 7.1
    X = sp.vstack([X, sp.csr_matrix((1, 20)), sp.csr_matrix(rng.normal(size=(1, 20)))]).tocsr()
    dup = sp.csr_matrix((np.array([1.0, 2.0, 0.5]), np.array([3, 3, 1]), np.array([0, 3])), shape=(1, 20))
    # a large matrix with one row's indices reversed (non-canonical: scipy's
    # other multiply), and CSC: their own sums, to the bit
    big = sp.random(1300, 200, density=0.5, format="csr", random_state=rng)
    a, b = big.indptr[-2], big.indptr[-1]
    big.indices[a:b] = big.indices[a:b][::-1].copy()
    big.data[a:b] = big.data[a:b][::-1].copy()
    big.has_sorted_indices = False
    for M in (X, X.astype(np.float32), X.toarray(), dup, big, X.tocsc()):
        S = M if sp.issparse(M) else sp.csr_matrix(M)
        want = np.asarray(S.multiply(S).sum(axis=1)).reshape(-1)
        got = row_sum_squares(M)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert row_sum_squares(dup)[0] == 3.0 ** 2 + 0.5 ** 2      # duplicates summed first
