"""Hash models with a circulant projection (``hash_model(projection=
"circulant")``, ``hash-model --projection circulant``): one projection hashes
classifiers and samples, the file records kind and layout and restores the
projector from the seed or stored parameters, and codes or calibrations of
the other kind are refused."""
import numpy as np
import pytest

from hsvm_cli.errors import ModelFormatError, ModelMismatchError
from hsvm_cli.hashing.circulant import CirculantProjection
from hsvm_cli.hashing.projection import SignProjector, projection_matrix
from hsvm_cli.io.container import read_container, write_container
from hsvm_cli.models.codes import codes_version, hash_data, read_codes
from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
from hsvm_cli.preprocess import prepare

from conftest import DIGITS_TEST, REPO


@pytest.fixture(scope="module")
def circ(digits_model):
    return hash_model(digits_model, bits=512, seed=2, projection="circulant")


def test_one_circulant_projection_hashes_the_classifiers_and_the_samples(digits_model, digits, circ):
    _, _, Xt, _ = digits
    p = CirculantProjection.from_seed(bits=512, n_features=64, seed=2)
    assert np.array_equal(circ.codes, p.codes(np.asarray(digits_model.W, np.float32)))
    Xn = prepare("l2", Xt)
    assert np.array_equal(circ.encoder(256).codes(Xn), p.codes(Xn, 256))
    # theta depends on the classifiers only, not on the projection
    assert np.array_equal(circ.theta, hash_model(digits_model, bits=512, seed=2).theta)
    with pytest.raises(ValueError, match="circulant"):
        circ.projection()


def test_codes_differ_from_the_gaussian_projections_of_the_same_seed(digits_model, circ):
    g = hash_model(digits_model, bits=512, seed=2)
    assert np.mean(circ.codes != g.codes) > 0.9


def test_a_shorter_circulant_hash_model_is_the_prefix_of_a_longer_one(digits_model, digits, circ):
    _, _, Xt, _ = digits
    Xn = prepare("l2", Xt)
    short = hash_model(digits_model, bits=192, seed=2, projection="circulant")
    assert np.array_equal(short.codes, circ.codes[:, :3])
    assert np.array_equal(short.encoder().codes(Xn), circ.encoder(512).codes(Xn)[:, :3])


@pytest.mark.parametrize("store", [False, True])
def test_file_round_trip_records_kind_and_layout_and_restores_the_projector(digits_model, digits, circ, tmp_path,
                                                                           store):
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=512, seed=2, projection="circulant", store_projection=store)
    path = tmp_path / "c.hbm"
    save_hash_model(h, path)
    c = read_container(path, kind="hsvm-hash-model", versions={2})
    assert c.meta["projection_kind"] == "circulant" and c.meta["projection_layout"] == "circulant-stride-v1"
    assert ("circulant_r" in c.arrays) == store and ("circulant_signs" in c.arrays) == store
    assert "projection" not in c.arrays
    g = load_hash_model(path)
    assert g.projection_kind == "circulant" and g.projector_stored == store
    assert np.array_equal(g.codes, circ.codes)
    Xn = prepare("l2", Xt)
    for bits in (64, 256, 512):
        assert np.array_equal(g.encoder(bits).codes(Xn), circ.encoder(bits).codes(Xn))


def test_stored_parameters_are_what_hashes_the_samples(digits_model, digits, tmp_path):
    # A stored projection is used as stored (a changed r changes the codes),
    # not silently re-derived from the seed.
    _, _, Xt, _ = digits
    h = hash_model(digits_model, bits=128, seed=2, projection="circulant", store_projection=True)
    path = tmp_path / "c.hbm"
    save_hash_model(h, path)
    c = read_container(path, kind="hsvm-hash-model", versions={2})
    arrays = {k: np.array(v) for k, v in c.arrays.items()}
    arrays["circulant_r"] = -arrays["circulant_r"]
    write_container(path, arrays, kind="hsvm-hash-model", version=2, meta=c.meta)
    Xn = prepare("l2", Xt)
    # -r negates every projection: every bit flips
    assert np.array_equal(load_hash_model(path).encoder().codes(Xn), ~h.encoder().codes(Xn))


def test_stored_circulant_is_far_smaller_than_the_stored_gaussian_matrix(digits_model, tmp_path):
    sizes = {}
    for kind in ("gaussian", "circulant"):
        path = tmp_path / ("%s.hbm" % kind)
        save_hash_model(hash_model(digits_model, bits=4096, seed=0, projection=kind, store_projection=True), path)
        c = read_container(path, kind="hsvm-hash-model", versions={1, 2})
        sizes[kind] = sum(a.nbytes for k, a in c.arrays.items() if k in ("projection", "circulant_r",
                                                                         "circulant_signs"))
    assert sizes["gaussian"] == 4096 * 64 * 4
    # 64 blocks of r (64 floats) and s (64 bits): half of d ceil(D/d) 8 bytes plus the signs
    assert sizes["circulant"] == 64 * (64 * 4 + 8) <= 64 * (4096 // 64) * 8


def test_gaussian_files_record_their_kind_and_stay_version_1(digits_model, tmp_path):
    path = tmp_path / "g.hbm"
    save_hash_model(hash_model(digits_model, bits=128, seed=0), path)
    c = read_container(path, kind="hsvm-hash-model", versions={1})
    assert c.meta["projection_kind"] == "gaussian" and c.meta["projection_layout"] == "gaussian-rows-v1"
    assert load_hash_model(path).projection_kind == "gaussian"


def test_hsvm_0_1_hash_models_without_a_kind_read_as_gaussian():
    path = REPO / "tests" / "fixtures" / "release-0.1" / "digits.hbm"
    c = read_container(path, kind="hsvm-hash-model", versions={1})
    assert "projection_kind" not in c.meta
    h = load_hash_model(path)
    assert h.projection_kind == "gaussian" and h.projector is None
    assert np.array_equal(h.encoder(128).R, projection_matrix(128, h.n_features, seed=h.seed))


def _rewrite(src, dst, *, arrays=None, meta=None, version=None):
    c = read_container(src, kind="hsvm-hash-model", versions={1, 2})
    a = {k: np.array(v) for k, v in c.arrays.items()}
    a.update(arrays or {})
    a = {k: v for k, v in a.items() if v is not None}
    m = dict(c.meta)
    m.update(meta or {})
    m = {k: v for k, v in m.items() if v is not None}
    write_container(dst, a, kind="hsvm-hash-model", version=version or c.version, meta=m)
    return dst


@pytest.fixture(scope="module")
def circ_files(digits_model, tmp_path_factory):
    d = tmp_path_factory.mktemp("circfiles")
    files = {}
    for name, kind, store in (("g", "gaussian", False), ("c", "circulant", False), ("cs", "circulant", True)):
        files[name] = d / ("%s.hbm" % name)
        save_hash_model(hash_model(digits_model, bits=128, seed=1, projection=kind, store_projection=store),
                        files[name])
    return files


@pytest.mark.parametrize("src, change, message", [
    ("g", dict(meta={"projection_kind": "circulant", "projection_layout": "circulant-stride-v1"}),
     "a circulant projection in a version 1 hash model"),
    ("g", dict(meta={"projection_kind": "circulant"}),
     "circulant projection layout 'gaussian-rows-v1' is unknown to this hsvm"),
    ("c", dict(version=1), "a circulant projection in a version 1 hash model"),
    ("c", dict(meta={"projection_kind": "fourier"}), "'projection_kind' must be one of gaussian, circulant"),
    ("c", dict(meta={"projection_layout": "circulant-stride-v0"}),
     "circulant projection layout 'circulant-stride-v0' is unknown to this hsvm (it reads circulant-stride-v1)"),
    ("g", dict(meta={"projection_layout": "gaussian-cols-v2"}), "gaussian projection layout 'gaussian-cols-v2'"),
    ("cs", dict(arrays={"circulant_signs": None}), "circulant projection: missing array 'circulant_signs'"),
    ("cs", dict(arrays={"circulant_r": np.zeros((2, 64), np.float32)}), "circulant projection: circulant_r block 0 "
                                                                       "is zero"),
    ("cs", dict(arrays={"circulant_r": np.zeros((2, 72), np.float32)}), "circulant_r has blocks of 72"),
    ("cs", dict(arrays={"circulant_signs": np.zeros((2, 8), np.uint16)}), "circulant_signs uint8"),
    ("c", dict(arrays={"projection": np.ones((128, 64), np.float32)}), "array 'projection' belongs to a Gaussian"),
    ("g", dict(arrays={"circulant_r": np.ones((2, 64), np.float32)}), "array 'circulant_r' belongs to a circulant"),
    ("c", dict(meta={"generator": "mt19937"}), "projection generator 'mt19937' is unknown"),
])
def test_inconsistent_projection_records_are_refused(circ_files, tmp_path, src, change, message):
    bad = _rewrite(circ_files[src], tmp_path / "bad.hbm", **change)
    with pytest.raises(ModelFormatError) as err:
        load_hash_model(bad)
    assert message in str(err.value), str(err.value)


def test_stored_circulant_r_shape_mismatch_names_the_expected_shape(circ_files, tmp_path):
    bad = _rewrite(circ_files["cs"], tmp_path / "bad.hbm", arrays={"circulant_r": np.ones((3, 64), np.float32),
                                                                    "circulant_signs": np.zeros((3, 8), np.uint8)})
    with pytest.raises(ModelFormatError, match=r"need r \[2, 64\] and signs \[2, 64\]"):
        load_hash_model(bad)


def test_codes_of_one_kind_are_refused_with_a_hash_model_of_the_other(circ_files, tmp_path):
    g, c = load_hash_model(circ_files["g"]), load_hash_model(circ_files["c"])
    gcodes, ccodes = tmp_path / "g.codes", tmp_path / "c.codes"
    hash_data(g, DIGITS_TEST, gcodes)
    hash_data(c, DIGITS_TEST, ccodes)
    gc, cc = read_codes(gcodes), read_codes(ccodes)
    assert "projection_kind" not in gc.meta and gc.projection_kind == "gaussian"
    assert cc.meta["projection_kind"] == "circulant" and cc.meta["projection_layout"] == "circulant-stride-v1"
    assert codes_version(gc.meta) == 1 and codes_version(cc.meta) == 2
    gc.check_compatible(g, 128)
    cc.check_compatible(c, 64)
    with pytest.raises(ModelMismatchError, match="codes were made with projection_kind='gaussian', the hash model "
                                                 "uses 'circulant'"):
        gc.check_compatible(c, 128)
    with pytest.raises(ModelMismatchError, match="codes were made with projection_kind='circulant', the hash model "
                                                 "uses 'gaussian'"):
        cc.check_compatible(g, 128)
    # the same codes from the stored parameters
    hash_data(load_hash_model(circ_files["cs"]), DIGITS_TEST, tmp_path / "cs.codes")
    assert np.array_equal(read_codes(tmp_path / "cs.codes").codes, cc.codes)


def test_a_circulant_codes_file_claiming_version_1_is_refused(circ_files, tmp_path):
    hash_data(load_hash_model(circ_files["c"]), DIGITS_TEST, tmp_path / "c.codes")
    c = read_container(tmp_path / "c.codes", kind="hsvm-codes", versions={2})
    write_container(tmp_path / "v1.codes", {k: np.array(v) for k, v in c.arrays.items()}, kind="hsvm-codes",
                    version=1, meta=c.meta)
    with pytest.raises(ModelFormatError, match="codes of a circulant projection in a version 1 codes file"):
        read_codes(tmp_path / "v1.codes")


def test_calibrations_record_a_circulant_projection(circ_files):
    from hsvm_cli.models.calibration import hash_identity
    g, c = load_hash_model(circ_files["g"]), load_hash_model(circ_files["c"])
    assert "projection_kind" not in hash_identity(g)
    assert hash_identity(c) == dict(hash_identity(g), projection_kind="circulant")


def test_gaussian_encoder_is_still_the_sign_projector(circ_files):
    assert isinstance(load_hash_model(circ_files["g"]).encoder(64), SignProjector)
