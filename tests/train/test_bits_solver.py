"""Dual coordinate descent on packed codes (hsvm_cli/bits_solver.py, native/dcd_bits.c)
against LIBLINEAR on the same +-1/sqrt(k) features."""
import ctypes
import platform
import re

import numpy as np
import pytest

from hsvm_cli.hashing.krsh import fit_kernel_hash
from hsvm_cli.models.ovo import OvoModel
from hsvm_cli.predict.predictor import Predictor
from hsvm_cli.support.kernels import available_kernels
from hsvm_cli.support.native import ffi, lib
from hsvm_cli.train.bits_solver import codes_decision, dcd_pair, expand_codes, train_ovo_codes
from hsvm_cli.train.liblinear import train_pairs
from hsvm_cli.train.sampling import solver_seeds

BITS = 512


@pytest.fixture(scope="module")
def digit_codes(digits):
    X, y, Xt, yt = digits
    h = fit_kernel_hash(X, kernel="rbf", landmarks=256, bits=BITS, seed=11)
    return h.codes(X), np.asarray(y), h.codes(Xt), np.asarray(yt)


def _glibc():
    return platform.system() == "Linux" and "glibc" in " ".join(platform.libc_ver())


@pytest.mark.skipif(not _glibc(), reason="compares with glibc's rand()")
def test_rand_stream_is_glibc_rand():
    libc = ctypes.CDLL(None)
    for seed in (0, 1, 12345, 2**31 + 7, 2**32 - 1):
        libc.srand(seed)
        want = [libc.rand() for _ in range(2000)]
        got = np.empty(2000, dtype=np.int32)
        lib.hsvm_glibc_rand_stream(seed, ffi.cast("int32_t *", ffi.from_buffer(got)), 2000)
        assert got.tolist() == want


def _liblinear_pair(F, yv, s, C, seed):
    """LIBLINEAR -s s -B 1 -c C on dense features F, rand() seeded as train_pairs
    does; returns (w, bias, dual objective, iterations)."""
    from liblinear import liblinear as L
    msgs = []
    cb = L.PRINT_STRING_FUN(lambda t: msgs.append(t.decode()))
    prob = L.problem(yv.astype(np.float64), F, bias=1)
    param = L.parameter("-s %d -c %r -B 1" % (s, C))
    L.liblinear.set_print_string_function(cb)
    ctypes.CDLL(None).srand(int(seed))
    m = L.liblinear.train(prob, param)
    L.liblinear.set_print_string_function(L.ctypes_print_null)
    n = F.shape[1]
    w = np.ctypeslib.as_array(m.contents.w, shape=(n + 1,)).copy()
    if m.contents.label[0] != 1:
        w = -w
    text = "".join(msgs)
    obj = float(re.search(r"Objective value = (\S+)", text).group(1))
    it = int(re.search(r"#iter = (\d+)", text).group(1))
    assert "Switching to use -s 2" not in text
    return w[:n], w[n], obj, it


@pytest.mark.skipif(not _glibc(), reason="LIBLINEAR's visiting order comes from glibc's rand()")
@pytest.mark.parametrize("solver,s", [("l2loss-dual", 1), ("l1loss-dual", 3)])
def test_dcd_agrees_with_liblinear_on_every_digits_pair(digit_codes, solver, s):
    codes, y, tcodes, _ = digit_codes
    classes = np.unique(y)
    Ft = expand_codes(tcodes, dtype=np.float64)
    worst_obj = 0.0
    worst_agree = 1.0
    for ia in range(len(classes)):
        for ib in range(ia + 1, len(classes)):
            la, lb = classes[ia], classes[ib]
            ra, rb = np.flatnonzero(y == la), np.flatnonzero(y == lb)
            rows = np.concatenate([ra, rb])
            yv = np.concatenate([np.ones(ra.size), -np.ones(rb.size)])
            seed = int(solver_seeds(7, [la], [lb])[0])
            w, b, _, info = dcd_pair(codes, rows, yv, C=1.0, solver=solver, seed=seed)
            wl, bl, obj, it = _liblinear_pair(expand_codes(codes[rows], dtype=np.float64), yv, s, 1.0, seed)
            rel = abs(info["objective"] - obj) / abs(obj)
            # LIBLINEAR prints the objective with 6 decimals.
            assert rel < 1e-3 or abs(info["objective"] - obj) <= 5e-7
            agree = np.mean((Ft @ w + b > 0) == (Ft @ wl + bl > 0))
            assert agree >= 0.995
            worst_obj = max(worst_obj, rel)
            worst_agree = min(worst_agree, agree)
            # Same visiting order: the same iterations and weights up to rounding.
            assert info["iterations"] == it
            np.testing.assert_allclose(w, wl, atol=1e-9 * max(1.0, np.abs(wl).max()))
    assert worst_obj < 1e-3 and worst_agree >= 0.995


def _kernels():
    return [(name, name) for name in available_kernels()]


def test_every_simd_path_gives_the_same_bits(digit_codes):
    codes, y, _, _ = digit_codes
    rows = np.flatnonzero((y == 3) | (y == 8))
    yv = np.where(y[rows] == 3, 1, -1)
    results = {}
    for name, k in _kernels():
        for solver in ("l2loss-dual", "l1loss-dual"):
            w, b, alpha, info = dcd_pair(codes, rows, yv, C=0.5, solver=solver, seed=99, kernel=k)
            results.setdefault(solver, []).append((name, w.tobytes() + np.float64(b).tobytes() + alpha.tobytes()))
    for solver, outs in results.items():
        assert len({o for _, o in outs}) == 1, outs


def test_hsvm_kernel_env_selects_the_path(digit_codes, monkeypatch):
    codes, y, _, _ = digit_codes
    rows = np.flatnonzero((y == 1) | (y == 7))
    yv = np.where(y[rows] == 1, 1, -1)
    outs = []
    for name, _ in _kernels():
        monkeypatch.setenv("HSVM_KERNEL", name)
        outs.append(dcd_pair(codes, rows, yv, seed=5)[0].tobytes())
    assert len(set(outs)) == 1


def test_ovo_on_codes_equals_train_ovo_on_expanded_features(digit_codes):
    codes, y, tcodes, _ = digit_codes
    F = expand_codes(codes, dtype=np.float64)
    for kw in ({}, {"per_class": 60, "bags": 2, "solver": "l1loss-dual"}, {"class_weight": {3: 4.0, 8: 0.25}},
               {"class_weight": "balanced", "solver": "l1loss-dual"}):
        ours = train_ovo_codes(codes, y, C=0.5, seed=3, **kw)
        ref = train_pairs(F, y, C=0.5, seed=3, **kw)
        assert isinstance(ours, OvoModel) and ours.normalize == "none"
        assert ours.classes.tolist() == ref.classes.tolist()
        assert ours.pair_a.tolist() == ref.pair_a.tolist() and ours.pair_b.tolist() == ref.pair_b.tolist()
        assert ours.training.counts.tolist() == ref.training.counts.tolist()
        assert ours.training.solver_seeds.tolist() == ref.training.solver_seeds.tolist()
        assert ours.training.not_converged == 0
        assert ours.params.get("class_weight") == ref.params.get("class_weight")
        np.testing.assert_allclose(ours.W, ref.W, atol=2e-6)
        np.testing.assert_allclose(ours.b, ref.b, atol=2e-6)
        Ft = expand_codes(tcodes)
        dec_ref = Ft @ ref.W.T + ref.b
        dec = codes_decision(tcodes, ours.W, ours.b)
        assert np.mean(np.sign(dec) == np.sign(dec_ref)) >= 0.999


def test_ovo_on_codes_is_byte_identical_for_any_jobs(digit_codes):
    codes, y, _, _ = digit_codes
    one = train_ovo_codes(codes, y, C=1.0, seed=1, jobs=1)
    two = train_ovo_codes(codes, y, C=1.0, seed=1, jobs=2)
    assert one.W.tobytes() == two.W.tobytes() and one.b.tobytes() == two.b.tobytes()
    assert one.training.iterations.tolist() == two.training.iterations.tolist()
    assert two.training.jobs == 2


def test_prefix_of_bits_trains_on_the_prefix(digit_codes):
    codes, y, _, _ = digit_codes
    short = np.ascontiguousarray(codes[:, :4])
    a = train_ovo_codes(codes, y, bits=256, seed=2)
    b = train_ovo_codes(short, y, seed=2)
    assert a.W.shape == (45, 256)
    assert a.W.tobytes() == b.W.tobytes()


def test_codes_are_read_in_place_from_a_memmap(tmp_path, digit_codes):
    codes, y, _, _ = digit_codes
    path = tmp_path / "codes.u64"
    codes.tofile(path)
    mm = np.memmap(path, dtype=np.uint64, mode="r", shape=codes.shape)
    a = train_ovo_codes(mm, y, seed=4)
    b = train_ovo_codes(codes, y, seed=4)
    assert a.W.tobytes() == b.W.tobytes()


def test_a_model_on_codes_predicts_expanded_codes_like_any_model(digit_codes):
    codes, y, tcodes, yt = digit_codes
    model = train_ovo_codes(codes, y, seed=0)
    p = Predictor(model).predict_block(expand_codes(tcodes))
    dec = codes_decision(tcodes, model.W, model.b)
    assert np.array_equal(p.votes.argmax(axis=1), p.votes.argmax(axis=1))
    assert np.mean(p.labels == yt) > 0.9
    assert np.allclose(dec, expand_codes(tcodes) @ model.W.T + model.b, atol=1e-5)


def test_bad_options_are_refused(digit_codes):
    codes, y, _, _ = digit_codes
    with pytest.raises(ValueError, match="solver"):
        train_ovo_codes(codes, y, solver="l2loss-primal")
    with pytest.raises(ValueError, match="multiple of 64"):
        train_ovo_codes(codes, y, bits=100)
    with pytest.raises(ValueError, match="exceed"):
        train_ovo_codes(codes, y, bits=1024)
    with pytest.raises(ValueError, match="uint64"):
        train_ovo_codes(codes.astype(np.int64), y)
    with pytest.raises(ValueError, match="two classes"):
        train_ovo_codes(codes, np.ones_like(y))
    with pytest.raises(ValueError, match="C must be"):
        train_ovo_codes(codes, y, C=0)


def test_c_is_cross_validated_on_the_problem_the_bits_solver_solves(digit_codes):
    # the search's held-out accuracy at C is what models of the bits solver,
    # trained on each fold's other rows, score on that fold (within the
    # solvers' tolerance: the search warm-starts, training starts cold)
    from hsvm_cli.train.cross_validation import stratified_folds
    from hsvm_cli.train.ovo import cross_validate_codes
    codes, y, _, _ = digit_codes
    for bits in (BITS, BITS // 2):
        search = cross_validate_codes(codes, y, bits=bits, C=0.5, folds=3, seed=2)
        folds = stratified_folds(y, 3, seed=2)
        right = 0
        for f in range(3):
            model = train_ovo_codes(codes[folds != f], y[folds != f], bits=bits, C=0.5, seed=3)
            labels = Predictor(model).predict(expand_codes(codes[folds == f], bits))
            right += int((labels == y[folds == f]).sum())
        assert abs(search.best.correct - right) <= 3 and right > 0.9 * y.shape[0], (bits, search.best.correct, right)
    with pytest.raises(ValueError, match="training on codes takes a dual solver"):
        cross_validate_codes(codes, y, C=0.5, solver="l2loss-primal")
    with pytest.raises(ValueError, match="bits 4096 exceed the"):
        cross_validate_codes(codes, y, bits=4096, C=0.5)
    with pytest.raises(ValueError, match="codes are the features as the bits solver reads them: no bias"):
        cross_validate_codes(codes, y, C=0.5, bias=2.0)
