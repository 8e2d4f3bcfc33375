"""What the Python API takes as samples and arguments: 2-d arrays and sparse
matrices of the model's width (narrower ones padded with zero features, wider
ones refused or, for imported models, trimmed), finite values; and the
argument checks the CLI's options make, made by the functions themselves."""
import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.predict.predictor import Predictor


def test_a_single_sample_must_be_a_row(digits_model, digits):
    _, _, Xt, _ = digits
    with pytest.raises(ValueError, match=r"X must be 2-dimensional .* use X.reshape\(1, -1\)"):
        Predictor(digits_model).predict(Xt.toarray()[0])
    one = Predictor(digits_model).predict(Xt.toarray()[:1])
    assert one.shape == (1,) and one[0] == Predictor(digits_model).predict(Xt)[0]


def test_narrower_samples_are_padded_with_zero_features(digits_model, digits):
    from hsvm_cli.io.svmlight import iter_svmlight
    from hsvm_cli.models.hashed import hash_model
    _, _, Xt, _ = digits
    narrow = Xt[:, :60].tocsr()
    padded = sp.hstack([narrow, sp.csr_matrix((Xt.shape[0], 4))]).tocsr()
    p = Predictor(digits_model)
    assert np.array_equal(p.predict(narrow), p.predict(padded))
    assert np.array_equal(p.predict(narrow.toarray()), p.predict(padded))
    # chunks of the streaming reader are as wide as their widest row
    from conftest import DIGITS_TEST
    ph = Predictor(digits_model, hash_model(digits_model, bits=256, seed=0), bits=256, filter_k=3)
    chunks = [ph.predict_block(c.X).labels for c in iter_svmlight(DIGITS_TEST, chunk_rows=100)]
    assert np.array_equal(np.concatenate(chunks), ph.predict(Xt))


def test_wider_samples_are_refused_unless_the_model_is_imported(digits_model, digits):
    from hsvm_cli.models.imported import import_model

    from conftest import REPO
    _, _, Xt, _ = digits
    wide = sp.hstack([Xt, Xt]).tocsr()
    with pytest.raises(ValueError, match="X has 128 features, the model 64"):
        Predictor(digits_model).predict(wide)
    imported = import_model(str(REPO / "tests" / "fixtures" / "tools" / "libsvm_c3.model")).model
    d = imported.n_features
    X = sp.random(5, d, density=0.5, format="csr", random_state=0)
    extra = sp.hstack([X, sp.random(5, 7, density=0.5, format="csr", random_state=1)]).tocsr()
    assert np.array_equal(Predictor(imported).predict(extra), Predictor(imported).predict(X))


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e39])
@pytest.mark.parametrize("form", [np.asarray, sp.csr_matrix, sp.csr_array])
def test_non_finite_samples_and_values_beyond_float32_are_refused_by_every_entry_point(digits_model, digits, bad,
                                                                                        form):
    # 1e39 is finite in float64 and infinite in float32: it once gave the
    # all-ties label without an error (dense input, csr_array); predict_block
    # did not check NaN at all.
    from hsvm_cli import HsvmError, SampleError, hash_model
    _, _, Xt, _ = digits
    X = Xt.toarray()
    X[3, 5] = bad
    X = form(X)
    message = "beyond float32" if bad == 1e39 else "NaN or infinite"
    for p in (Predictor(digits_model), Predictor(digits_model, hash_model(digits_model, bits=128, seed=1),
                                                 filter_k=3)):
        for call in (p.predict, p.predict_block):
            with pytest.raises(SampleError, match=message) as exc:
                call(X)
            assert isinstance(exc.value, ValueError) and isinstance(exc.value, HsvmError)


def test_a_used_hash_predictor_pickles_and_its_copy_predicts_the_same(digits_model, digits):
    # Its packed codes are C memory behind cffi pointers: a copy leaves them
    # out and packs its own, so a predictor can go to worker processes.
    import copy
    import pickle

    from hsvm_cli import hash_model
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=256, seed=1)
    raw = digits_model.__class__(**{**digits_model.__dict__, "normalize": "none", "content_digest": None})
    for p in (Predictor(digits_model, h, bits=128, filter_k=3),
              Predictor(digits_model, h, first_stage="hashed-scores", filter_k=3),
              Predictor(raw, hash_model(raw, bits=256, seed=1), filter_k=3)):
        want = p.predict(Xt)
        for clone in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
            assert np.array_equal(clone.predict(Xt), want)
        assert np.array_equal(p.predict(Xt), want)


def test_predictor_wants_a_model_object(digits_model):
    with pytest.raises(TypeError, match="load_model"):
        Predictor("model.hsvm")


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, None])
def test_hash_model_refuses_seeds_outside_64_bits(digits_model, seed):
    from hsvm_cli.models.hashed import hash_model
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*64\)"):
        hash_model(digits_model, bits=64, seed=seed)


def test_labels_beyond_int64_are_refused_not_wrapped():
    from hsvm_cli.train.ovo import train_ovo
    y = np.array([1, 1, 2, 2], dtype=np.uint64) + np.uint64(2**63)
    with pytest.raises(ValueError, match="beyond the int64 range"):
        train_ovo(np.eye(4), y)


def test_training_takes_nested_lists_as_scikit_learn_does():
    from hsvm_cli.train.ovo import train_ovo
    m = train_ovo([[1, 0], [0.9, 0.1], [-1, 0], [-0.8, 0.2]], [1, 1, 2, 2])
    assert list(m.classes) == [1, 2]
    assert list(Predictor(m).predict([[1.0, 0.0], [-1.0, 0.1]])) == [1, 2]


def test_kernel_hash_takes_any_sparse_format(digits):
    from hsvm_cli.hashing.krsh import fit_kernel_hash
    X, _, _, _ = digits
    a = fit_kernel_hash(X[:200].tocoo(), kernel="rbf", landmarks=16, bits=64)
    b = fit_kernel_hash(X[:200].tocsr(), kernel="rbf", landmarks=16, bits=64)
    assert np.array_equal(a.codes(X[:20]), b.codes(X[:20]))


def test_calibrate_checks_its_arguments(digits_model, digits):
    from hsvm_cli.errors import DataError, OptionError
    from hsvm_cli.tune import calibrate
    _, _, Xt, yt = digits
    with pytest.raises(DataError, match="X has 450 rows but y has 449 labels"):   # as train_ovo and Predictor
        calibrate(digits_model, None, Xt, yt[:-1])
    # in the keywords' names (the command's flags are for the command's message)
    for kw, message in (({"max_loss": float("nan")}, "^max_loss must be a finite number"),
                        ({"repeat": 0}, "^repeat must be a positive integer")):
        args = dict(y=yt)
        args.update(kw)
        with pytest.raises(OptionError, match=message):
            calibrate(digits_model, None, Xt, **args)
    with pytest.raises(OptionError, match="rules must be among vote, dag, not votes"):
        calibrate(digits_model, None, Xt, yt, rules="votes")


def _stored_twice(X):
    # the same matrix with every entry stored as two halves (valid scipy CSR:
    # duplicates are summed), indices left unsorted within rows
    c = X.tocoo()
    rows = np.r_[c.row, c.row]
    order = np.argsort(rows, kind="stable")
    return sp.csr_matrix((np.r_[c.data, c.data][order] / 2, np.r_[c.col, c.col][order],
                          np.r_[0, np.cumsum(np.bincount(rows, minlength=X.shape[0]))]), shape=X.shape)


@pytest.mark.parametrize("normalize", ["l2", "none"])
def test_entries_stored_twice_count_as_their_sum_as_in_scipy(digits, normalize):
    from hsvm_cli.models.hashed import hash_model
    from hsvm_cli.train.ovo import train_ovo
    X, y, Xt, _ = digits
    model = train_ovo(X, y, C=0.1, normalize=normalize, seed=1)
    twice = _stored_twice(Xt)
    assert not twice.has_canonical_format and (twice != Xt).nnz == 0
    assert np.array_equal(Predictor(model).predict(twice), Predictor(model).predict(Xt))
    h = hash_model(model, bits=256, seed=2)
    assert np.array_equal(Predictor(model, h, filter_k=3).predict(twice), Predictor(model, h, filter_k=3).predict(Xt))
    again = train_ovo(_stored_twice(X), y, C=0.1, normalize=normalize, seed=1)
    assert np.allclose(again.W, model.W, atol=1e-5)


@pytest.mark.parametrize("bad, message", [
    (lambda X: X[0], r"X must be 2-dimensional .* use X.reshape\(1, -1\)"),
    (lambda X: X.reshape(X.shape[0], 8, 8), "X must be 2-dimensional"),
    (lambda X: None, "X must be 2-dimensional"),
    (lambda X: X.astype(complex), "X must hold real numbers, got dtype complex128"),
    (lambda X: X.astype(object), "X must hold real numbers, got dtype object"),
    (lambda X: np.where(X > 0.5, np.nan, X), "X contains NaN or infinite values"),
])
def test_training_and_calibration_refuse_what_is_not_a_sample_matrix(digits_model, digits, bad, message):
    from hsvm_cli.train.ovo import train_ovo
    from hsvm_cli.tune import calibrate
    X, y, Xt, yt = digits
    Xd = X.toarray()
    with pytest.raises(ValueError, match=message):
        train_ovo(bad(Xd), y)
    with pytest.raises(ValueError, match=message):
        calibrate(digits_model, None, bad(Xt.toarray()), yt)


def test_calibration_takes_the_labels_training_takes(digits_model, digits):
    from hsvm_cli.errors import DataError
    from hsvm_cli.tune import calibrate
    _, _, Xt, yt = digits
    for labels in (yt.astype(str), yt + 0.5):
        # the DataError train_ovo raises for them (exit 65: the data, not an option)
        with pytest.raises(DataError, match="y must hold integer labels"):
            calibrate(digits_model, None, Xt, labels)
    with pytest.raises(DataError, match="the validation set holds no samples"):
        calibrate(digits_model, None, Xt[:0], yt[:0])


def test_values_that_round_to_the_largest_float32_are_samples(digits_model, digits):
    # 3.4028235e38, FLT_MAX's shortest spelling, is a little above FLT_MAX as
    # a double and rounds to it: the svmlight reader takes it, and so must the
    # checks after it (train-ovo refused it as "beyond float32's range")
    from hsvm_cli import SampleError
    from hsvm_cli.support.arrays import FLOAT32_OVERFLOW
    _, _, Xt, _ = digits
    X = Xt[:3].toarray()
    X[1, 5] = 3.4028235e38
    assert np.isfinite(np.float32(X[1, 5]))
    Predictor(digits_model).predict(X)
    X[1, 5] = FLOAT32_OVERFLOW                    # the tie, which rounds to infinity
    with pytest.raises(SampleError, match="beyond float32"):
        Predictor(digits_model).predict(X)


def test_training_and_calibration_take_the_largest_float32_spelled_as_the_readme_says(tmp_path):
    from conftest import run, write_text
    train = write_text(tmp_path / "t.svm", "3 3:3.4028235e38\n1 3:1\n5 4:1\n3 2:1\n1 1:1\n5 4:2\n")
    run(["train-ovo", "-q", train, "-o", tmp_path / "m.hsvm"])
    run(["calibrate", "-q", "-m", tmp_path / "m.hsvm", train, "-o", tmp_path / "c.cal", "--repeat", "1"])


@pytest.mark.parametrize("how", ["exact", "hash", "proba"])
def test_large_inputs_are_predicted_a_block_of_rows_at_a_time_with_the_same_results(digits_model, digits,
                                                                                  monkeypatch, how):
    # one block of all of X held its float32 normalised copy and the block's
    # work arrays at once; blocks change no result
    import hsvm_cli.predict.predictor as predictor
    from hsvm_cli.models.hashed import hash_model
    from hsvm_cli.tune import calibrate
    _, _, Xt, yt = digits
    X = np.asarray(Xt.todense())
    if how == "exact":
        p = Predictor(digits_model)
    elif how == "hash":
        p = Predictor(digits_model, hash_model(digits_model, bits=128), filter_k=3)
    else:
        p = Predictor(digits_model, calibration=calibrate(digits_model, None, X[:200], yt[:200], repeat=1))
    run = p.predict_proba if how == "proba" else p.predict
    whole = run(X)
    blocks = []
    monkeypatch.setattr(predictor, "PREDICT_ROWS", 64)
    real = Predictor._predict_block
    monkeypatch.setattr(Predictor, "_predict_block", lambda self, B, **kw: blocks.append(B.shape[0]) or real(
        self, B, **kw))
    assert np.array_equal(run(X), whole) and blocks == [64] * 7 + [2]
    assert np.array_equal(run(Xt), whole)                            # sparse rows alike
