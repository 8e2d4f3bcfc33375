"""Decision DAG prediction (hsvm_cli.dag, native/dag.c) against a numpy oracle,
the refine step's decision values, max-wins voting's pair rule, and max-wins
exact prediction on the bundled data."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.predict.dag import DecisionDag, candidate_lists, dag_predict
from hsvm_cli.predict.exact import ovo_votes
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.predict.refine import sddmm
from hsvm_cli.preprocess import prepare
from hsvm_cli.support.kernels import KernelUnavailableError

from conftest import reorder_and_flip_pairs

# ---------------------------------------------------------------- the oracle

def oracle_dag(dec, pair_a, pair_b, bags, lists):
    """DDAG in plain Python from a full decision matrix dec [n, P*bags]:
    labels [n] and margins (lists of floats per row).  oracle_dag.visits
    receives the set of (step, pair) nodes the samples went through."""
    where = {}
    for p, (a, b) in enumerate(zip(pair_a.tolist(), pair_b.tolist())):
        where.setdefault((min(a, b), max(a, b)), p)
    labels, margins = [], []
    oracle_dag.visits = set()
    for i, row in enumerate(lists):
        L = [int(c) for c in row if c >= 0]
        path = []
        while len(L) > 1:
            u, v = L[0], L[-1]
            p = where[(min(u, v), max(u, v))]
            oracle_dag.visits.add((len(path), p))
            vals = [float(x) for x in dec[i, p * bags:(p + 1) * bags]]
            pos = sum(x > 0 for x in vals)
            total = 0.0
            for x in vals:
                total += x
            a_wins = 2 * pos > bags or (2 * pos == bags and total > 0)
            winner = int(pair_a[p]) if a_wins else int(pair_b[p])
            mean = total / bags
            path.append(mean if a_wins else -mean)
            if winner == u:
                L.pop()
            else:
                L.pop(0)
        labels.append(L[0])
        margins.append(path)
    return np.array(labels, dtype=np.int32), margins


def canonical(K):
    a, b = np.triu_indices(K, k=1)
    return a.astype(np.int32), b.astype(np.int32)


def integer_model(rng, K, d, bags, shuffle):
    """Small-integer weights: every decision value is an exact small integer in
    float32 whatever the summation order, so zeros and split bags are common."""
    pa, pb = canonical(K)
    if shuffle:
        pa, pb = reorder_and_flip_pairs(rng, pa, pb)
    P = pa.shape[0]
    W = rng.integers(-1, 2, size=(P * bags, d)).astype(np.float32)
    W[rng.random(W.shape) < 0.6] = 0.0
    b = rng.integers(-1, 2, size=P * bags).astype(np.float32)
    return W, b, pa, pb


def integer_samples(rng, n, d, sparse):
    X = rng.integers(-2, 3, size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.6] = 0.0
    return sp.csr_matrix(X) if sparse else X


def padded_candidates(rng, n, K, k):
    """Rows of 1..k distinct classes in random order, -1 anywhere in between."""
    cand = np.full((n, k), -1, dtype=np.int32)
    for i in range(n):
        m = int(rng.integers(1, k + 1))
        slots = np.sort(rng.choice(k, m, replace=False))
        cand[i, slots] = rng.choice(K, m, replace=False)
    return cand


def as_margin_matrix(paths, steps):
    out = np.full((len(paths), steps), np.nan)
    for i, p in enumerate(paths):
        out[i, :len(p)] = p
    return out


# ---------------------------------------------------------- against the oracle

@pytest.mark.parametrize("bags", [1, 2, 3])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_dag_matches_numpy_oracle_with_ties(bags, sparse, shuffle):
    rng = np.random.default_rng(100 * bags + 10 * sparse + shuffle)
    K, d, n = 11, 45, 60
    W, b, pa, pb = integer_model(rng, K, d, bags, shuffle)
    X = integer_samples(rng, n, d, sparse)
    dense = X.toarray() if sparse else X
    dec = dense.astype(np.float64) @ W.T.astype(np.float64) + b
    # Exact integers: the same values as float32, and many exact zeros and
    # even bag splits, so the tie rules are exercised.
    assert np.mean(dec == 0) > 0.05
    dag = DecisionDag(W, b, pa, pb, bags=bags, n_classes=K)
    want, paths = oracle_dag(dec, pa, pb, bags, np.tile(np.arange(K), (n, 1)))
    got, margins = dag.predict(X, return_margins=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(margins, as_margin_matrix(paths, K - 1).astype(np.float32))

    cand = padded_candidates(rng, n, K, 6)
    want, paths = oracle_dag(dec, pa, pb, bags, cand)
    for threads, block in ((1, None), (3, 7)):
        got, margins = dag.predict(X, candidates=cand, return_margins=True, threads=threads, block=block)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(margins, as_margin_matrix(paths, 5).astype(np.float32))


def float_model(rng, K, d, bags, shuffle=False):
    pa, pb = canonical(K)
    if shuffle:
        perm = rng.permutation(pa.shape[0])
        pa, pb = pb[perm], pa[perm]
    W = rng.standard_normal((pa.shape[0] * bags, d)).astype(np.float32)
    b = (0.1 * rng.standard_normal(pa.shape[0] * bags)).astype(np.float32)
    return W, b, pa, pb


def all_decisions(X, W, b, kernel=None):
    """Every (sample, classifier) decision value through the refine step."""
    n, m = X.shape[0], W.shape[0]
    cx = np.repeat(np.arange(n, dtype=np.int64), m)
    cw = np.tile(np.arange(m, dtype=np.int64), n)
    return sddmm(X, W, b, cx, cw, kernel=kernel).reshape(n, m)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bags", [1, 3])
def test_dag_margins_are_the_refine_steps_decision_values(sparse, bags):
    rng = np.random.default_rng(7 + bags + 10 * sparse)
    K, d, n = 9, 77, 40       # d = 2 * 32 + 13: full lanes and a tail
    W, b, pa, pb = float_model(rng, K, d, bags, shuffle=True)
    X = rng.standard_normal((n, d)).astype(np.float32)
    if sparse:
        X[rng.random((n, d)) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    dec = all_decisions(X, W, b)
    want, paths = oracle_dag(dec, pa, pb, bags, np.tile(np.arange(K), (n, 1)))
    got, margins = dag_predict(X, W, b, pa, pb, bags=bags, n_classes=K, return_margins=True, threads=2)
    np.testing.assert_array_equal(got, want)
    # Bit-identical: the bag mean is computed from the same float32 values.
    np.testing.assert_array_equal(margins, as_margin_matrix(paths, K - 1).astype(np.float32))
    if bags == 1:
        # One bag: the margin is the refine step's value itself, up to its sign.
        assert all(np.float32(abs(m)) in set(np.abs(dec[i]).tolist()) for i, p in enumerate(paths) for m in p)


def test_dag_groups_many_samples_over_many_classes():
    # Enough samples for the radix grouping (not the small-group sort) and
    # K^2 > 2^11 for two radix digits on candidate lists.
    rng = np.random.default_rng(21)
    K, d, n = 70, 40, 400
    W, b, pa, pb = float_model(rng, K, d, 1, shuffle=True)
    X = rng.standard_normal((n, d)).astype(np.float32)
    dec = all_decisions(X, W, b)
    dag = DecisionDag(W, b, pa, pb, bags=1, n_classes=K)
    want, paths = oracle_dag(dec, pa, pb, 1, np.tile(np.arange(K), (n, 1)))
    got, margins = dag.predict(X, return_margins=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(margins, as_margin_matrix(paths, K - 1).astype(np.float32))
    # A list of all classes advances up to two steps at a time (DAG_DEPTH in
    # native/dag.c): each group (a pair at the first of them) reads the rows
    # of every pair its samples may meet in those steps (1 + 2), once for
    # all its samples.
    groups = {s: sum(1 for (t, _) in oracle_dag.visits if t == s) for s in range(K - 1)}
    fetches, s = 0, 0
    while s < K - 1:
        depth = min(2, K - 1 - s)
        fetches += groups[s] * (1 if depth == 1 else depth * (depth + 1) // 2)
        s += depth
    assert dag.stats["row_fetches"] == fetches
    cand = np.stack([rng.choice(K, 12, replace=False) for _ in range(n)]).astype(np.int32)
    # Samples sharing their list share every pair: make a third of them alike.
    cand[::3] = cand[0]
    want, paths = oracle_dag(dec, pa, pb, 1, cand)
    dag.stats.update(evaluations=0, row_fetches=0)
    got, margins = dag.predict(X, candidates=cand, return_margins=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(margins, as_margin_matrix(paths, 11).astype(np.float32))
    # Every sample at the same step and pair is in one group: one fetch each.
    assert dag.stats["row_fetches"] == len(oracle_dag.visits) < dag.stats["evaluations"]


def test_dag_kernels_give_identical_bits(monkeypatch):
    from hsvm_cli.support.kernels import available_kernels
    rng = np.random.default_rng(3)
    K, d, n = 15, 1000, 30
    W, b, pa, pb = float_model(rng, K, d, 1)
    X = rng.standard_normal((n, d)).astype(np.float32)
    dag = DecisionDag(W, b, pa, pb, bags=1, n_classes=K)
    lab_p, m_p = dag.predict(X, kernel="portable", return_margins=True)
    monkeypatch.setenv("HSVM_KERNEL", "portable")
    lab_env, m_env = dag.predict(X, return_margins=True)
    monkeypatch.delenv("HSVM_KERNEL")
    np.testing.assert_array_equal(m_env.view(np.uint32), m_p.view(np.uint32))
    if "avx2" not in available_kernels():
        pytest.skip("no AVX2 on this CPU")
    lab_a, m_a = dag.predict(X, kernel="avx2", return_margins=True)
    np.testing.assert_array_equal(lab_a, lab_p)
    np.testing.assert_array_equal(m_a.view(np.uint32), m_p.view(np.uint32))
    # And both equal the refine step's values (the kernel there is the same code).
    dec = all_decisions(X, W, b, kernel="portable")
    _, paths = oracle_dag(dec, pa, pb, 1, np.tile(np.arange(K), (n, 1)))
    np.testing.assert_array_equal(m_a, as_margin_matrix(paths, K - 1).astype(np.float32))


def test_dag_results_do_not_depend_on_threads_or_blocks():
    rng = np.random.default_rng(11)
    K, d, n = 30, 64, 301
    W, b, pa, pb = float_model(rng, K, d, 1)
    X = rng.standard_normal((n, d)).astype(np.float32)
    dag = DecisionDag(W, b, pa, pb, bags=1, n_classes=K)
    ref, mref = dag.predict(X, return_margins=True)
    for threads, block in ((2, None), (3, 16), (1, 1), (4, 1000)):
        got, m = dag.predict(X, threads=threads, block=block, return_margins=True)
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(m.view(np.uint32), mref.view(np.uint32))


# ------------------------------------------------------- the rule and the cost

@pytest.mark.parametrize("bags", [1, 2, 4])
def test_dag_over_two_candidates_is_the_max_wins_pair_decision(bags):
    rng = np.random.default_rng(bags)
    K, d, n = 7, 40, 200
    W, b, pa, pb = integer_model(rng, K, d, bags, shuffle=True)
    X = integer_samples(rng, n, d, sparse=False)
    dec = (X.astype(np.float64) @ W.T + b).astype(np.float32)
    dag = DecisionDag(W, b, pa, pb, bags=bags, n_classes=K)
    p = rng.integers(0, pa.shape[0], n)
    flip = rng.random(n) < 0.5
    cand = np.stack([np.where(flip, pb[p], pa[p]), np.where(flip, pa[p], pb[p])], axis=1)
    got = dag.predict(X, candidates=cand)
    for i in range(n):
        # The vote counter of exact max-wins prediction on this one pair.
        cols = dec[i:i + 1, p[i] * bags:(p[i] + 1) * bags]
        votes, _ = ovo_votes(cols, pa[p[i]:p[i] + 1], pb[p[i]:p[i] + 1], bags=bags, n_classes=K)
        assert got[i] == int(np.argmax(votes[0]))


def test_dag_visits_k_minus_1_classifiers():
    rng = np.random.default_rng(5)
    K, d, n = 20, 33, 50
    W, b, pa, pb = float_model(rng, K, d, 2)
    X = rng.standard_normal((n, d)).astype(np.float32)
    dag = DecisionDag(W, b, pa, pb, bags=2, n_classes=K)
    _, margins = dag.predict(X, return_margins=True)
    assert dag.stats["evaluations"] == n * (K - 1)
    assert not np.isnan(margins).any()
    # The first step is shared by every sample: one row fetch serves them all.
    assert dag.stats["row_fetches"] < n * (K - 1)
    cand = padded_candidates(rng, n, K, 8)
    dag.stats.update(evaluations=0, row_fetches=0)
    _, margins = dag.predict(X, candidates=cand, return_margins=True)
    per_row = (cand >= 0).sum(axis=1) - 1
    assert dag.stats["evaluations"] == per_row.sum()
    np.testing.assert_array_equal((~np.isnan(margins)).sum(axis=1), per_row)


def test_dag_list_order_is_the_candidates_order():
    # A cyclic model (0 beats 1, 1 beats 2, 2 beats 0): the survivor depends on
    # which pair is tested first, i.e. on the order of the list.
    W = np.zeros((3, 4), dtype=np.float32)
    pa, pb = canonical(3)                 # (0,1), (0,2), (1,2)
    b = np.array([1.0, -1.0, 1.0], dtype=np.float32)
    X = np.zeros((3, 4), dtype=np.float32)
    cand = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0]], dtype=np.int32)
    # [0,1,2]: (0,2) -> 2 wins, [1,2]: (1,2) -> 1.  [2,0,1]: (2,1) -> 1, [0,1] -> 0.
    # [1,2,0]: (1,0) -> 0, [2,0] -> 2.  Three orders, three different winners.
    got = dag_predict(X, W, b, pa, pb, bags=1, n_classes=3, candidates=cand)
    np.testing.assert_array_equal(got, [1, 0, 2])
    assert dag_predict(X[:1], W, b, pa, pb, bags=1, n_classes=3)[0] == 1


def test_dag_uses_a_read_only_memory_map_in_place(tmp_path):
    rng = np.random.default_rng(2)
    K, d = 6, 40
    W, b, pa, pb = float_model(rng, K, d, 1)
    path = tmp_path / "W.f32"
    W.tofile(path)
    Wm = np.memmap(path, dtype=np.float32, mode="r", shape=W.shape)
    dag = DecisionDag(Wm, b, pa, pb, bags=1, n_classes=K)
    assert dag.W is Wm
    X = rng.standard_normal((10, d)).astype(np.float32)
    np.testing.assert_array_equal(dag.predict(X), dag_predict(X, W, b, pa, pb, bags=1, n_classes=K))


# -------------------------------------------------------------- validation

def test_dag_rejects_bad_inputs():
    rng = np.random.default_rng(0)
    K, d = 5, 8
    W, b, pa, pb = float_model(rng, K, d, 1)
    X = np.zeros((2, d), dtype=np.float32)
    dag = DecisionDag(W, b, pa, pb, bags=1, n_classes=K)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        DecisionDag(W.astype(np.float64), b, pa, pb, bags=1, n_classes=K)
    with pytest.raises(ValueError, match="rows"):
        DecisionDag(W, b, pa, pb, bags=2, n_classes=K)
    with pytest.raises(ValueError, match="outside"):
        DecisionDag(W, b, pa, pb, bags=1, n_classes=3)
    with pytest.raises(ValueError, match="features"):
        dag.predict(np.zeros((2, d + 1), dtype=np.float32))
    with pytest.raises(ValueError, match="twice"):
        dag.predict(X, candidates=[[1, 2, 1], [0, 1, -1]])
    with pytest.raises(ValueError, match="at least one"):
        dag.predict(X, candidates=[[1, 2, 3], [-1, -1, -1]])
    with pytest.raises(ValueError, match="class indices"):
        dag.predict(X, candidates=[[1, 5], [0, 1]])
    with pytest.raises(ValueError, match="kernel"):
        dag.predict(X, kernel="sse9")
    # A model without the pair (0, 4): the DAG over all classes needs it first.
    partial = DecisionDag(W[:-1], b[:-1], pa[:-1], pb[:-1], bags=1, n_classes=K)
    keep = pa != 0
    partial = DecisionDag(np.ascontiguousarray(W[keep]), b[keep], pa[keep], pb[keep], bags=1, n_classes=K)
    with pytest.raises(ValueError, match="no classifier"):
        partial.predict(X)
    assert partial.predict(X, candidates=[[1, 2, 3], [4, 2, -1]]).shape == (2,)


def test_dag_kernel_unavailable_is_reported(monkeypatch):
    from hsvm_cli.support.kernels import available_kernels
    if "avx2" in available_kernels():
        pytest.skip("AVX2 is available here")
    rng = np.random.default_rng(0)
    W, b, pa, pb = float_model(rng, 3, 8, 1)
    with pytest.raises(KernelUnavailableError):
        dag_predict(np.zeros((1, 8), np.float32), W, b, pa, pb, bags=1, n_classes=3, kernel="avx2")


def test_candidate_lists_orders():
    kept = np.array([[5, 2, 9, 0], [3, 1, 4, 7]])
    valid = np.array([[True, True, False, True], [True, False, True, True]])
    np.testing.assert_array_equal(candidate_lists(kept), [[0, 2, 5, 9], [1, 3, 4, 7]])
    np.testing.assert_array_equal(candidate_lists(kept, order="score"), kept)
    np.testing.assert_array_equal(candidate_lists(kept, valid=valid), [[0, 2, 5, -1], [3, 4, 7, -1]])
    np.testing.assert_array_equal(candidate_lists(kept, order="score", valid=valid),
                                  [[5, 2, 0, -1], [3, 4, 7, -1]])
    with pytest.raises(ValueError, match="order"):
        candidate_lists(kept, order="random")


# ---------------------------------------------------------- the bundled data

def compare_with_max_wins(model, Xt, yt):
    exact = Predictor(model).predict(Xt)
    Xn = prepare(model.normalize, Xt)
    dag = DecisionDag.from_model(model)
    labels = model.classes[dag.predict(Xn, threads=2)]
    assert dag.stats["evaluations"] == Xt.shape[0] * (model.n_classes - 1)
    return float(np.mean(exact == yt)), float(np.mean(labels == yt)), float(np.mean(labels == exact))


def test_dag_matches_max_wins_on_digits(digits, digits_model):
    _, _, Xt, yt = digits
    acc_exact, acc_dag, same = compare_with_max_wins(digits_model, Xt, yt)
    # Measured: 98.00% both, 100% identical labels (450 test samples).
    assert same >= 0.99
    assert abs(acc_dag - acc_exact) <= 0.005


def test_dag_matches_max_wins_on_omniglot(omniglot):
    model, Xt, yt = omniglot
    acc_exact, acc_dag, same = compare_with_max_wins(model, Xt, yt)
    # Measured on the bundled 242-class set (1,210 test samples): 33.97% both,
    # 99.42% identical labels.
    assert same >= 0.98
    assert abs(acc_dag - acc_exact) <= 0.005


def test_a_dag_over_candidates_checks_only_the_rows_of_their_pairs(digits, digits_model_file):
    from hsvm_cli.models.ovo import load_model
    _, _, Xt, _ = digits
    m = load_model(digits_model_file)
    dag = DecisionDag.from_model(m)
    X = prepare(m.normalize, Xt[:2])
    dag.predict(X, candidates=[[0, 3, 5], [7, 2, -1]])
    done = m.container._rows_done["W"]
    # pairs (0,3) (0,5) (3,5) and (2,7): one row each; no block checked whole
    assert done.sum() == 4 and not m.container._done["W"].any()
    dag.predict(X)      # over all classes: every block
    assert m.container._done["W"].all()


def test_a_dag_refine_keeping_every_class_is_the_dag_with_no_hashing(digits_model, digits):
    # k = K: the first stage decides nothing, so it is not run (as for the vote
    # refine); the labels are --dag's.
    from hsvm_cli.models.hashed import hash_model
    from hsvm_cli.support.timing import Timings
    _, _, Xt, _ = digits
    hm = hash_model(digits_model, bits=128, seed=0)
    K = digits_model.n_classes
    t = Timings()
    full = Predictor(digits_model, hm, filter_k=K, rule="dag")._predict_block(Xt, timings=t)
    assert np.array_equal(full.labels, Predictor(digits_model, rule="dag").predict(Xt))
    assert t.seconds.get("hash", 0.0) == 0.0 and t.seconds.get("filter", 0.0) == 0.0
    fewer = Predictor(digits_model, hm, filter_k=K - 1, rule="dag").predict(Xt)
    assert fewer.shape == full.labels.shape
