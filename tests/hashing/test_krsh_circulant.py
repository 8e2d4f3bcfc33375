"""A kernel hash whose bits are a circulant projection of the subspace
coordinates (``fit_kernel_hash(projection="circulant")``, ``kernel-hash
--projection circulant``): the bits are the canonical signs of the circulant
rows, the file records the kind, Gaussian files keep their digests."""
import numpy as np
import pytest

from hsvm_cli.errors import ModelFormatError
from hsvm_cli.hashing.circulant import CirculantProjection
from hsvm_cli.hashing.krsh import fit_kernel_hash
from hsvm_cli.hashing.projection import pack_signs
from hsvm_cli.io.container import read_container, write_container
from hsvm_cli.models.kernel_hash import load_kernel_hash, save_kernel_hash

from conftest import DIGITS_TEST, DIGITS_TRAIN, run


@pytest.fixture(scope="module")
def digits32(digits):
    X, y, Xt, yt = digits
    return X.toarray().astype(np.float32), y, Xt.toarray().astype(np.float32), yt


@pytest.fixture(scope="module")
def circ_hash(digits32):
    return fit_kernel_hash(digits32[0], kernel="rbf", landmarks=200, bits=1024, seed=3, projection="circulant")


def test_bits_are_the_signs_of_the_circulant_projection_of_the_coordinates(circ_hash, digits32):
    Xt = digits32[2][:80]
    Y = circ_hash.transform(Xt)
    p = CirculantProjection.from_seed(bits=1024, n_features=200, seed=3, streams=(1105, 1106))
    want = pack_signs(p.project(Y.astype(np.float32)))
    assert np.array_equal(circ_hash.codes(Xt), want)
    # the canonical sums, entry by entry (no FFT), give the same bits
    assert circ_hash.codes_reference(Y).tobytes() == want.tobytes()
    assert np.array_equal(circ_hash.codes(Xt, 256), want[:, :4])
    with pytest.raises(ValueError, match="circulant"):
        circ_hash.projection()


def test_the_kind_changes_the_bits_not_the_subspace(circ_hash, digits32):
    X, _, Xt, _ = digits32
    g = fit_kernel_hash(X, kernel="rbf", landmarks=200, bits=1024, seed=3)
    assert np.array_equal(g.Z, circ_hash.Z) and np.array_equal(g.L, circ_hash.L)
    assert "projection_kind" not in g.params() and g.projection_stream == 10
    assert circ_hash.params()["projection_kind"] == "circulant" and circ_hash.projection_stream == 1105
    assert g.content_sha256() != circ_hash.content_sha256()
    differ = np.unpackbits((g.codes(Xt[:50]) ^ circ_hash.codes(Xt[:50])).view(np.uint8)).mean()
    assert 0.4 < differ < 0.6


def test_hamming_distance_estimates_the_subspace_angle(circ_hash, digits32):
    Xt = digits32[2]
    a, b = np.arange(0, 200), np.arange(200, 400)
    Ya, Yb = circ_hash.transform(Xt[a]), circ_hash.transform(Xt[b])
    cos = np.einsum("ij,ij->i", Ya, Yb) / np.linalg.norm(Ya, axis=1) / np.linalg.norm(Yb, axis=1)
    angle = np.arccos(np.clip(cos, -1, 1)) / np.pi
    dh = np.unpackbits((circ_hash.codes_from_y(Ya) ^ circ_hash.codes_from_y(Yb)).view(np.uint8), axis=1).sum(1) / 1024
    # each bit is a sign random projection: mean error small, per pair within the binomial spread
    assert abs(np.mean(dh - angle)) < 0.01
    assert np.all(np.abs(dh - angle) < 5 * np.sqrt(angle * (1 - angle) / 1024) + 0.02)


def test_file_round_trip_and_a_wrong_layout_is_refused(circ_hash, digits32, tmp_path):
    path = tmp_path / "c.khm"
    save_kernel_hash(circ_hash, path)
    g = load_kernel_hash(path)
    assert g.projection_kind == "circulant" and g.content_sha256() == circ_hash.content_sha256()
    assert np.array_equal(g.codes(digits32[2][:30]), circ_hash.codes(digits32[2][:30]))
    c = read_container(path, kind="hsvm-kernel-hash", versions={1})
    arrays = {k: np.array(v) for k, v in c.arrays.items()}
    for meta, message in (({"projection_layout": "circulant-stride-v0"}, "layout 'circulant-stride-v0' is unknown"),
                          ({"projection_kind": "fourier"}, "'projection_kind' must be one of gaussian, circulant, not 'fourier'"),
                          ({"projection_kind": None, "projection_layout": None}, "content digest mismatch")):
        m = {k: v for k, v in dict(c.meta, **meta).items() if v is not None}
        write_container(tmp_path / "bad.khm", arrays, kind="hsvm-kernel-hash", version=1, meta=m)
        with pytest.raises(ModelFormatError, match=message):
            load_kernel_hash(tmp_path / "bad.khm")


def test_hash_svm_pipeline_with_a_circulant_kernel_hash(tmp_path):
    f = {n: tmp_path / n for n in ("k.khm", "train.codes", "m.hsvm")}
    r = run(["kernel-hash", DIGITS_TRAIN, "--kernel", "rbf", "--landmarks", "128", "--bits", "512", "--seed", "4",
             "--projection", "circulant", "-o", f["k.khm"]])
    assert r.stderr.endswith("512 bits (circulant projection) -> %s\n" % f["k.khm"])
    run(["hash-data", "-H", f["k.khm"], DIGITS_TRAIN, "-o", f["train.codes"], "-q"])
    run(["train-ovo", "--codes", f["train.codes"], "-o", f["m.hsvm"], "-q"])
    r = run(["predict", "-m", f["m.hsvm"], "--kernel-hash", f["k.khm"], DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert float(r.stderr.split("=")[1].split("%")[0]) >= 96.0
    r = run(["kernel-hash", DIGITS_TRAIN, "--kernel", "rbf", "--landmarks", "8", "--bits", "64", "--projection",
             "hadamard", "-o", tmp_path / "x.khm"], exit_code=2)
    assert "'hadamard' is not one of 'gaussian', 'circulant'" in r.stderr and not (tmp_path / "x.khm").exists()
