"""calibrate's timing within a budget (tune.time_per_sample), on a fake clock:
a run of m rows takes m times the cost per sample, plus a per-call overhead,
plus a first-call overhead."""
import numpy as np
import pytest

from hsvm_cli import tune


class FakeClock:
    def __init__(self, per_sample, first_call=0.0, per_call=0.0):
        self.now, self.per_sample, self.first_call, self.per_call = 0.0, per_sample, first_call, per_call
        self.calls = []

    def __call__(self):
        return self.now

    def run(self, X):
        self.calls.append(X.copy())
        self.now += X.shape[0] * self.per_sample + self.per_call + (self.first_call if len(self.calls) == 1 else 0.0)


@pytest.fixture
def clock(monkeypatch):
    def make(per_sample, first_call=0.0, per_call=0.0):
        c = FakeClock(per_sample, first_call, per_call)
        monkeypatch.setattr(tune.time, "perf_counter", c)
        return c
    return make


X = np.arange(1000, dtype=np.float64)[:, None]


def test_a_fast_setting_gets_every_row_and_every_run(clock):
    c = clock(1e-5)                           # 10 ms a run: 3 runs fit in 0.5 s
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (1000, 3) and secs == pytest.approx(1e-5)
    # warm-up, the first estimate on as many rows, then every row
    assert [x.shape[0] for x in c.calls] == [tune.WARMUP_ROWS, tune.WARMUP_ROWS, 1000, 1000, 1000]


def test_a_per_call_overhead_does_not_shorten_a_fast_setting(clock):
    c = clock(1e-4, per_call=0.02)            # 64 rows look like 0.41 ms a sample; 1000 rows take 0.12 s
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (1000, 3) and secs == pytest.approx(1.2e-4)


def test_runs_stop_when_one_more_would_pass_the_budget(clock):
    c = clock(2e-4)                           # 0.2 s a run: the third would end at 0.6 s
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=5, budget=0.5, min_rows=100)
    assert (rows, runs) == (1000, 2) and secs == pytest.approx(2e-4)


def test_a_slow_setting_is_timed_once_on_the_rows_that_fit_evenly_spaced(clock):
    c = clock(2e-3)                           # 2 s for every row: 250 rows fit
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (250, 1) and secs == pytest.approx(2e-3)
    assert [x.shape[0] for x in c.calls] == [64, 64, 250]
    timed = c.calls[2][:, 0]
    assert timed[0] == 0 and timed[-1] == 999 and np.all(np.diff(timed) >= 3)


def test_a_very_slow_setting_still_gets_the_minimum_rows(clock):
    c = clock(0.05, first_call=1.0)           # the warm-up alone passes the budget: straight to 100 rows
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (100, 1) and secs == pytest.approx(0.05)
    assert [x.shape[0] for x in c.calls] == [64, 100]


def test_a_setting_whose_first_estimate_is_below_the_minimum_rows_gets_them(clock):
    c = clock(5e-3)                           # 64 rows take 0.32 s: 100 fit in no budget, but 100 it is
    secs, rows, runs = tune.time_per_sample(c.run, X, repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (100, 1) and [x.shape[0] for x in c.calls] == [64, 64, 100]


def test_fewer_rows_than_the_minimum_are_all_timed(clock):
    c = clock(1.0)
    secs, rows, runs = tune.time_per_sample(c.run, X[:30], repeat=3, budget=0.5, min_rows=100)
    assert (rows, runs) == (30, 1) and secs == pytest.approx(1.0)


def test_calibrate_records_the_rows_and_runs_of_every_setting(digits_model, digits):
    from hsvm_cli.errors import OptionError
    from hsvm_cli.models.hashed import hash_model
    _, _, Xt, yt = digits
    h = hash_model(digits_model, bits=128, seed=0)
    cal = tune.calibrate(digits_model, h, Xt, yt, k_grid=[1, 3], epsilons=[0.01], repeat=2, timing_rows=200,
                         timing_budget=0.0, min_timed_rows=50)
    assert cal.info["timing_budget_seconds"] == 0.0 and cal.info["min_timed_rows"] == 50
    for g in cal.grid:
        # a zero budget: every setting timed once on the minimum rows
        assert (g["timed_rows"], g["timed_runs"]) == (50, 1)
    assert "50x1" in tune.format_grid(cal)
    with pytest.raises(OptionError, match="^timing_budget"):      # the keyword, to a Python caller
        tune.calibrate(digits_model, h, Xt, yt, timing_budget=-1.0)


def test_the_bits_asked_for_are_the_bits_tried(digits_model, digits):
    from hsvm_cli.models.hashed import hash_model
    _, _, Xt, yt = digits
    h = hash_model(digits_model, bits=256, seed=0)
    cal = tune.calibrate(digits_model, h, Xt[:100], yt[:100], bits_grid=[128], k_grid=[2], epsilons=[], repeat=1,
                         rules=["vote"], first_stages=["votes"], timing_budget=0.0)
    assert sorted(cal.alphas) == [128] and {g["bits"] for g in cal.grid} == {None, 128}
