"""Learned circulant hashes (models/circulant_hash.py): the rows of circ(w)
with exact signs, the ``hsvm-circulant-hash`` file and the codes it makes."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from hsvm_cli.errors import ModelFormatError, ModelMismatchError
from hsvm_cli.io.container import read_container, write_container
from hsvm_cli.models.circulant_hash import LearnedCirculantHash, load_circulant_hash, save_circulant_hash
from hsvm_cli.models.codes import hash_data, read_codes
from hsvm_cli.models.hashed import hash_model
from hsvm_cli.train.circulant_fit import circulant_svm_decisions, spread_shifts

from conftest import DIGITS_TEST

# ------------------------------------------------------------ learned hashes

def test_learned_hash_evaluates_the_rows_of_circ_w_with_exact_signs():
    rng = np.random.default_rng(4)
    d, L = 37, 9
    w = rng.standard_normal(d).astype(np.float32)
    bias = rng.standard_normal(L).astype(np.float32)
    shifts = np.array([0, 1, 5, 8, 13, 20, 21, 30, 36])
    h = LearnedCirculantHash(w, bias, shifts=shifts, normalize="none")
    X = rng.standard_normal((25, d)).astype(np.float32)
    X[rng.random(X.shape) < 0.4] = 0
    v = h.project(X)
    want = circulant_svm_decisions(X.astype(np.float64), w.astype(np.float64), bias.astype(np.float64), 1.0, shifts)
    assert np.allclose(v, want, atol=1e-10)
    for i in range(X.shape[0]):
        for l in range(L):
            terms = [float(X[i, j]) * float(w[(j - shifts[l]) % d]) for j in range(d)] + [float(bias[l])]
            assert np.sign(v[i, l]) == np.sign(math.fsum(terms))
    assert np.array_equal(h.project(sp.csr_matrix(X)) > 0, v > 0)


def test_near_zero_learned_bits_get_their_canonical_sign():
    # x_0 w_0 + x_1 w_1 + bias = 0 exactly: the FFT's round-off decides
    # nothing, the canonical sum (bias, then terms in column order) gives 0.
    d = 50
    rng = np.random.default_rng(9)
    w = rng.standard_normal(d).astype(np.float32)
    X = np.zeros((d, d), dtype=np.float32)
    bias = np.zeros(1, dtype=np.float32)
    for i in range(d):
        q = np.float32(2.0 ** (i % 7 - 3))            # power-of-two scaling keeps the cancellation exact
        X[i, 0] = w[1] * q                           # row 0 of circ(w) is w: x_0 w_0 + x_1 w_1 = 0
        X[i, 1] = -w[0] * q
    h = LearnedCirculantHash(w, bias, normalize="none")
    v = h.project(X)
    assert np.all(X[:, 0].astype(np.float64) * w[0] + X[:, 1].astype(np.float64) * w[1] == 0.0)
    assert np.all(v[:, 0] == 0.0)


# ------------------------------------------------------------- file, errors

def test_file_round_trip_keeps_the_codes_and_records_what_made_it(tmp_path):
    rng = np.random.default_rng(10)
    h = LearnedCirculantHash(rng.standard_normal(100).astype(np.float32), rng.standard_normal(64).astype(np.float32),
                             shifts=spread_shifts(64, 100), seed=7, meta={"C": 1.0})
    p = tmp_path / "h.chash"
    save_circulant_hash(h, p)
    g = load_circulant_hash(p)
    X = rng.standard_normal((7, 100)).astype(np.float32)
    assert np.array_equal(g.codes(X), h.codes(X)) and np.array_equal(g.shifts, h.shifts)
    assert g.meta == {"C": 1.0} and g.method == "circulant-svm" and g.normalize == "l2" and g.seed == 7
    assert g.content_sha256() == h.content_sha256() and g.path == str(p)


@pytest.fixture(scope="module")
def chash_file(tmp_path_factory):
    rng = np.random.default_rng(10)
    h = LearnedCirculantHash(rng.standard_normal(100).astype(np.float32), rng.standard_normal(64).astype(np.float32),
                             shifts=spread_shifts(64, 100))
    p = tmp_path_factory.mktemp("chash") / "h.chash"
    save_circulant_hash(h, p)
    return p


def _arrays_meta(path):
    c = read_container(path, kind="hsvm-circulant-hash", versions={1})
    return {k: np.array(v) for k, v in c.arrays.items()}, dict(c.meta)


@pytest.mark.parametrize("change, message", [
    (lambda a, m: a.update(bias=a["bias"][:10], shifts=a["shifts"][:10]), "arrays have 100 weights and 10 biases"),
    (lambda a, m: a.update(shifts=np.zeros(64, np.int64)), "shifts must be 64 distinct rows in [0, 100)"),
    (lambda a, m: a.pop("shifts"), "missing array 'shifts'"),
    (lambda a, m: a.update(circulant_w=a["circulant_w"].astype(np.float64)), "must be float32 vectors"),
    (lambda a, m: m.update(normalize="l1"), "metadata 'normalize' must be one of l2, none"),
    (lambda a, m: m.pop("bits"), "metadata lacks 'bits'"),
    (lambda a, m: m.update(layout="circulant-rows-v0"), "layout 'circulant-rows-v0' is unknown"),
    (lambda a, m: a.update(bias=a["bias"] + 1), "content digest mismatch"),
])
def test_inconsistent_files_are_refused_naming_the_file(chash_file, tmp_path, change, message):
    arrays, meta = _arrays_meta(chash_file)
    change(arrays, meta)
    q = tmp_path / "bad.chash"
    write_container(q, arrays, kind="hsvm-circulant-hash", version=1, meta=meta)
    with pytest.raises(ModelFormatError) as err:
        load_circulant_hash(q)
    assert str(err.value).startswith(str(q) + ": ") and message in str(err.value), str(err.value)


def test_a_later_format_version_is_refused(chash_file, tmp_path):
    arrays, meta = _arrays_meta(chash_file)
    write_container(tmp_path / "v2", arrays, kind="hsvm-circulant-hash", version=2, meta=meta)
    with pytest.raises(ModelFormatError, match="unsupported hsvm-circulant-hash format version 2"):
        load_circulant_hash(tmp_path / "v2")


def test_packed_codes_take_a_multiple_of_64_bits_and_a_prefix_is_a_prefix():
    rng = np.random.default_rng(11)
    h = LearnedCirculantHash(rng.standard_normal(200).astype(np.float32), rng.standard_normal(128).astype(np.float32))
    X = rng.standard_normal((5, 200)).astype(np.float32)
    assert np.array_equal(h.codes(X, 64), h.codes(X)[:, :1])
    for bad in (100, 192, 0):
        with pytest.raises(ValueError, match="multiple of 64"):
            h.codes(X, bad)
    with pytest.raises(ValueError, match="multiple of 64"):
        LearnedCirculantHash(np.ones(8, np.float32), np.zeros(4, np.float32)).codes(X[:, :8])


def test_hash_data_writes_its_codes_which_a_hash_model_refuses(digits_model, digits, tmp_path):
    X, _, Xt, yt = digits
    rng = np.random.default_rng(12)
    h = LearnedCirculantHash(rng.standard_normal(64).astype(np.float32),
                             (0.01 * rng.standard_normal(64)).astype(np.float32), seed=3)
    out = tmp_path / "l.codes"
    assert hash_data(h, DIGITS_TEST, out) == Xt.shape[0]
    c = read_codes(out)
    assert np.array_equal(c.codes, h.codes(Xt)) and np.array_equal(c.labels, yt)
    assert c.meta["circulant_hash_sha256"] == h.content_sha256() and c.projection_kind == "learned-circulant"
    assert read_container(out, kind="hsvm-codes", versions={2}).version == 2
    with pytest.raises(ModelMismatchError, match="codes of a learned circulant hash"):
        c.check_compatible(hash_model(digits_model, bits=64), 64)
