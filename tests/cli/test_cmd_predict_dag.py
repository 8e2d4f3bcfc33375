"""hsvm predict --dag and --refine dag."""
from conftest import DIGITS_TEST, run


def test_exact_dag_agrees_with_max_wins_on_digits(digits_files):
    model, _, _ = digits_files
    votes = run(["predict", "-q", "--exact", "-m", model, DIGITS_TEST]).stdout.split()
    dag = run(["predict", "-q", "--dag", "-m", model, DIGITS_TEST]).stdout.split()
    same = sum(a == b for a, b in zip(votes, dag)) / len(votes)
    assert len(dag) == 450 and same >= 0.99


def test_dag_refine_after_the_filter_keeping_every_class_is_the_exact_dag(digits_files):
    model, hbm, _ = digits_files
    exact_dag = run(["predict", "-q", "--dag", "-m", model, DIGITS_TEST]).stdout
    refined = run(["predict", "-q", "-m", model, "-H", hbm, "-k", "10", "--refine", "dag", DIGITS_TEST]).stdout
    assert refined == exact_dag


def test_dag_timings_report_its_own_phase(digits_files):
    import json
    model, _, _ = digits_files
    r = run(["predict", "-q", "--dag", "--timings", "-m", model, DIGITS_TEST])
    phases = json.loads(r.stderr.splitlines()[-1])
    assert set(phases) >= {"parse", "normalise", "dag", "write", "total"} and "score" not in phases


def test_dag_refuses_what_needs_vote_counts_or_pairwise_coupling(digits_files):
    model, hbm, _ = digits_files
    r = run(["predict", "--dag", "--scores", "-m", model, DIGITS_TEST], exit_code=2)
    assert "labels only" in r.stderr
    r = run(["predict", "--dag", "-m", model, "-H", hbm, DIGITS_TEST], exit_code=2)
    assert "--refine dag" in r.stderr
    # --dag is the exact DAG: with a first stage it was silently --refine dag
    r = run(["predict", "--dag", "--first-stage", "scores", "-k", "3", "-m", model, DIGITS_TEST], exit_code=2)
    assert "no --first-stage" in r.stderr and "--refine dag" in r.stderr
    # --refine of either rule without a first stage: refused alike (vote was ignored)
    for rule in ("dag", "vote"):
        r = run(["predict", "--refine", rule, "-m", model, DIGITS_TEST], exit_code=2)
        assert "--refine %s is the rule after a first stage (-H, or --first-stage scores): none was given" % rule \
            in r.stderr
