"""Well-formed files that say impossible things (written with valid checksums,
so that the rules of each file kind, not the checksums, must catch them), and
damaged files, through the command line: one line naming the file, exit 65."""
import gzip
import json
import struct

import numpy as np
import pytest

from hsvm_cli.io.container import ROW_DIGESTS, read_container, write_container
from hsvm_cli.models.calibration import CALIB_KIND
from hsvm_cli.models.codes import CODES_KIND
from hsvm_cli.models.hashed import HBM_KIND
from hsvm_cli.models.ovo import MODEL_KIND

from conftest import DIGITS_TEST, run


def _rewrite(src, dst, kind, edit_arrays=None, edit_meta=None):
    """Copy container ``src`` to ``dst`` with edited arrays/metadata and fresh checksums."""
    c = read_container(src, kind=kind, versions={1, 2})
    # row digests are derived: written afresh from the edited arrays
    row_checked = tuple(k[:-len(ROW_DIGESTS)] for k in c.arrays if k.endswith(ROW_DIGESTS))
    arrays = {k: np.array(v) for k, v in c.arrays.items() if not k.endswith(ROW_DIGESTS)}
    meta = json.loads(json.dumps(c.meta))
    if edit_arrays:
        edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    write_container(dst, arrays, kind=kind, version=c.version, meta=meta, row_checked=row_checked)
    return str(dst)


def _predict_fails(args, message):
    r = run(["predict", "-q"] + args + [DIGITS_TEST], exit_code=65)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hsvm: ") and message in lines[0], r.stderr
    assert r.stdout == ""


def _nan_weight(a):
    a["W"][5, 3] = np.nan


def _duplicate_pair(a):
    a["pairs"][1] = a["pairs"][0]


def _no_pairs(a):
    a["pairs"], a["W"], a["b"] = a["pairs"][:0], a["W"][:0], a["b"][:0]


@pytest.mark.parametrize("edit_arrays, edit_meta, message", [
    (_nan_weight, None, "NaN or infinite"),
    (lambda a: a["b"].__setitem__(0, np.inf), None, "NaN or infinite"),
    (_duplicate_pair, None, "appears twice"),
    (_no_pairs, None, "0 pairs for 10 classes"),
    (None, lambda m: m.update(n_features="64"), "n_features"),
    (None, lambda m: m.update(bags=None), "bags"),
    (None, lambda m: m.update(normalize="l3"), "normalize"),
    (None, lambda m: m.update(params=[1]), "params"),
])
def test_impossible_models_are_refused(digits_files, tmp_path, edit_arrays, edit_meta, message):
    model, _, _ = digits_files
    bad = _rewrite(model, tmp_path / "bad.hsvm", MODEL_KIND, edit_arrays, edit_meta)
    _predict_fails(["--exact", "-m", bad], message)


# the hash model's own classes, pairs or width altered under the model's digest: named
NOT_ITS_CLASSES = "its classes differ from the model's"
NOT_ITS_PAIRS = "its pairs differ from the model's"


@pytest.mark.parametrize("edit_arrays, edit_meta, message", [
    (lambda a: a["theta"].__setitem__(2, 1.5), None, "theta must lie in [0, 1]"),
    (lambda a: a["theta"].__setitem__(2, np.nan), None, "NaN or infinite"),
    (lambda a: a["classes"].__setitem__(0, -7), None, NOT_ITS_CLASSES),
    (lambda a: a["pairs"].__setitem__(0, a["pairs"][0][::-1].copy()), None, NOT_ITS_PAIRS),
    (None, lambda m: m.update(n_features=10**12), "n_features"),
    (None, lambda m: m.update(n_features=65), "its n_features (65, the model 64) differ from the model's"),
    (None, lambda m: m.update(bits=100), "multiple of 64"),
    (None, lambda m: m.update(model_sha256="beef"), "SHA-256"),
])
def test_impossible_hash_models_are_refused(digits_files, tmp_path, edit_arrays, edit_meta, message):
    model, hbm, _ = digits_files
    bad = _rewrite(hbm, tmp_path / "bad.hbm", HBM_KIND, edit_arrays, edit_meta)
    _predict_fails(["-m", model, "-H", bad], message)


def test_a_hash_model_whose_seed_was_edited_in_place_is_refused(digits_files, tmp_path):
    # The seed names the projection the codes were made with: an edited seed
    # (the bytes changed, the checksums not) must not hash samples with
    # another projection.
    model, hbm, _ = digits_files
    raw = open(hbm, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    meta = json.loads(head["__metadata__"]["hsvm"])
    meta["seed"] += 1
    head["__metadata__"]["hsvm"] = json.dumps(meta, sort_keys=True, separators=(",", ":"))
    text = json.dumps(head, separators=(",", ":")).encode()
    bad = tmp_path / "bad.hbm"
    bad.write_bytes(raw[:8] + text + b" " * (n - len(text)) + raw[8 + n:])
    _predict_fails(["-m", model, "-H", str(bad)], "header is corrupt")


def test_zero_row_in_a_stored_projection_is_refused(digits_model, tmp_path):
    from hsvm_cli.models.hashed import hash_model, load_hash_model, save_hash_model
    h = hash_model(digits_model, bits=64, seed=0, store_projection=True)
    h.projection_stored = h.projection_stored.copy()
    h.projection_stored[3] = 0
    save_hash_model(h, tmp_path / "z.hbm")
    from hsvm_cli.errors import ModelFormatError
    with pytest.raises(ModelFormatError, match="zero row"):
        load_hash_model(tmp_path / "z.hbm")


def _calibrate(digits_files, tmp_path):
    model, hbm, _ = digits_files
    cal = tmp_path / "d.cal"
    run(["calibrate", "-q", "-m", model, "-H", hbm, DIGITS_TEST, "--bits", "64", "--k", "2", "--epsilon", "0.1",
         "--repeat", "1", "--rules", "vote", "--first-stages", "votes", "-o", cal])
    return model, hbm, str(cal)


@pytest.mark.parametrize("edit_arrays, edit_meta, message", [
    # the model it names, but a sigmoid short: damage, not "fitted for another model"
    (lambda a: a.update(platt_A=a["platt_A"][:-1], platt_B=a["platt_B"][:-1]), None,
     "platt_A and platt_B hold 44 entries, the model it was fitted for has 45 pairs"),
    (None, lambda m: m.update(model_sha256="0" * 64), "fitted for another model"),
    (None, lambda m: m.update(setting=[1, 2]), "setting must be an object"),
    # what reads as false was taken for "no setting" (another path ran, exit 0)
    (None, lambda m: m.update(setting=[]), "setting must be an object, not list"),
    (None, lambda m: m.update(setting=0), "setting must be an object, not int"),
    (None, lambda m: m.update(setting=""), "setting must be an object, not str"),
    # the calibration's bits, not an option's: named as its fault (was exit 2 blaming --bits)
    (None, lambda m: m.update(setting={"mode": "hash", "bits": 1024, "k": 2}),
     "its setting hashes at 1024 bits, more than the 512 of the hash model"),
    (None, lambda m: m.update(setting={"mode": "fast"}), "setting mode"),
    (None, lambda m: m.update(alphas={"64": -1.0}), "temperatures"),
    (None, lambda m: m.update(alphas=[1]), "alphas"),
    (None, lambda m: m.update(two_stage={"bits": 512, "k": 3, "epsilon": None, "sharpness": 1.0,
                                         "mass_shift": "1.5"}), "mass_shift must be a number"),
    (None, lambda m: m.update(two_stage={"bits": 512, "k": 3, "epsilon": None, "sharpness": 1.0,
                                         "mass_shift": True}), "mass_shift must be a number"),
    (None, lambda m: m.update(two_stage={"bits": 512, "k": 3, "epsilon": None, "sharpness": 1.0,
                                         "mass_shift": float("inf")}), "mass shift must be finite"),
    (None, lambda m: m.update(setting={"mode": "exact", "bits": 1 << 62, "k": 3}), "exact setting has no bits"),
    (None, lambda m: m.update(two_stage={"bits": 512.5, "k": 3, "epsilon": None, "sharpness": 1.0}),
     "bits and k (positive integers)"),
    (None, lambda m: m.update(two_stage={"bits": 512, "k": True, "epsilon": None, "sharpness": 1.0}),
     "bits and k (positive integers)"),
    (None, lambda m: m.update(two_stage=[512]), "bits and k (positive integers)"),
])
def test_impossible_calibrations_are_refused(digits_files, tmp_path, edit_arrays, edit_meta, message):
    model, hbm, cal = _calibrate(digits_files, tmp_path)
    bad = _rewrite(cal, tmp_path / "bad.cal", CALIB_KIND, edit_arrays, edit_meta)
    _predict_fails(["-m", model, "-H", hbm, "-C", bad, "--proba"], message)


def test_codes_with_inconsistent_bits_are_refused(digits_files, tmp_path):
    model, hbm, _ = digits_files
    codes = tmp_path / "t.codes"
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes])
    bad = _rewrite(codes, tmp_path / "bad.codes", CODES_KIND, None, lambda m: m.update(bits=128))
    _predict_fails(["-m", model, "-H", hbm, "--codes", bad], "disagree")


@pytest.mark.parametrize("kind", ["model", "hbm", "codes", "cal"])
def test_bit_flips_anywhere_in_a_file_never_change_an_output_silently(digits_files, tmp_path, kind):
    model, hbm, cal = _calibrate(digits_files, tmp_path)
    codes = str(tmp_path / "t.codes")
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes])
    paths = {"model": model, "hbm": hbm, "codes": codes, "cal": cal}
    args = ["-m", paths["model"], "-H", paths["hbm"], "-C", paths["cal"], "--codes", paths["codes"], "--bits", "64", "-k", "3",
            "--proba"]
    good = run(["predict", "-q"] + args + [DIGITS_TEST]).stdout
    raw = open(paths[kind], "rb").read()
    rng = np.random.default_rng(5)
    # The header (where a flip is most likely to be mis-parsed) byte by byte
    # in a sample, the data at random.
    (n,) = struct.unpack("<Q", raw[:8])
    spots = np.concatenate([rng.choice(8 + n, size=min(60, 8 + n), replace=False),
                            rng.integers(8 + n, len(raw), size=60)])
    bad = tmp_path / ("bad-" + kind)
    for i, spot in enumerate(spots):
        flipped = bytearray(raw)
        flipped[spot] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(bytes(flipped))
        a = [str(bad) if v == paths[kind] else v for v in args]
        r = run(["predict", "-q"] + a + [DIGITS_TEST], exit_code=None)
        assert r.exit_code == 65 or (r.exit_code == 0 and r.stdout == good), (spot, r.exit_code, r.stderr)
        if r.exit_code == 65:
            assert len(r.stderr.splitlines()) == 1 and str(bad) in r.stderr


@pytest.mark.parametrize("replacement", ["4", "$"])
def test_a_corrupt_block_digest_of_the_model_is_the_models_fault_not_a_mismatch(digits_files, tmp_path, replacement):
    # The identity a calibration and a hash model name is computed from the
    # model file's block digests, which W is checked against only where it
    # is used: a flipped digest (still hex, or not) must be reported as the
    # model file's corruption, never as "fitted for another model".
    model, hbm, cal = _calibrate(digits_files, tmp_path)
    raw = open(model, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    at = raw.index(b'\\"W\\":[\\"', 8) + len(b'\\"W\\":[\\"') + 3
    assert at < 8 + n
    digit = chr(raw[at])
    flipped = bytearray(raw)
    flipped[at] = ord(replacement if replacement != digit else "5")
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(bytes(flipped))
    for extra in (["-C", cal], ["-H", hbm, "-k", "3"]):
        r = run(["predict", "-q", "-m", str(bad)] + extra + [DIGITS_TEST], exit_code=65)
        assert len(r.stderr.splitlines()) == 1 and str(bad) in r.stderr, r.stderr


def _flipped_weights(model, tmp_path):
    # one bit of W changed; every checksum left as it was
    c = read_container(model, kind=MODEL_KIND, versions={1, 2})
    raw = bytearray(open(model, "rb").read())
    (n,) = struct.unpack("<Q", raw[:8])
    begin = json.loads(raw[8:8 + n])["W"]["data_offsets"][0]
    raw[8 + n + begin + 4 * int(c.arrays["W"].size // 2)] ^= 0x04
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(bytes(raw))
    return str(bad)


@pytest.mark.parametrize("rule", [["--exact"], ["--dag"]])
@pytest.mark.parametrize("samples", ["# no samples\n", "1 1:0.5 2:x\n"])
def test_corrupt_weights_are_refused_whatever_the_input_and_before_its_errors(digits_files, tmp_path, rule,
                                                                              samples):
    # Exact and DAG prediction check W on a thread of their own while the
    # input is read: an input without samples still has the model refused,
    # and a malformed input is reported after the model, as when the model
    # was checked first.
    bad = _flipped_weights(digits_files[0], tmp_path)
    test = tmp_path / "t.svm"
    test.write_text(samples)
    out = tmp_path / "out.txt"
    r = run(["predict", "-q", "-m", bad] + rule + [str(test), "-o", str(out)], exit_code=65)
    assert r.stderr == "hsvm: %s: array 'W' is corrupt: checksum mismatch in its bytes 0 to %d\n" % (
        bad, read_container(bad, kind=MODEL_KIND, versions={1, 2}, lazy=("W",)).arrays["W"].nbytes), r.stderr
    assert not out.exists()


def test_a_refine_reads_and_checks_only_its_own_rows_of_w(digits_files, tmp_path):
    # A damaged row of a pair no kept class belongs to is never read; the
    # refine's own rows are checked one by one against W.row_xxh3.
    model, _, _ = digits_files
    c = read_container(model, kind=MODEL_KIND, versions={1}, lazy=("W",))
    assert "W" in c.row_digests
    classes, pairs, row_bytes = c.arrays["classes"].tolist(), np.array(c.arrays["pairs"]), c.arrays["W"][0].nbytes
    del c
    one = tmp_path / "one.svm"
    with gzip.open(DIGITS_TEST, "rt") as fh:
        one.write_text(fh.readline())
    run(["predict", "-q", "--exact", "-m", model, one, "-o", tmp_path / "exact.txt"])
    at = classes.index(int((tmp_path / "exact.txt").read_text().split()[0]))
    good = open(model, "rb").read()
    (n,) = struct.unpack("<Q", good[:8])
    W_at = 8 + n + json.loads(good[8:8 + n])["W"]["data_offsets"][0]
    with_winner = (pairs[:, 0] == at) | (pairs[:, 1] == at)
    for rows, exit_code in ((np.flatnonzero(~with_winner), 0), (np.flatnonzero(with_winner), 65)):
        raw = bytearray(good)
        for row in rows:
            raw[W_at + row * row_bytes + 5] ^= 0x01
        bad = tmp_path / ("bad-%d.hsvm" % exit_code)
        bad.write_bytes(bytes(raw))
        r = run(["predict", "-q", "-m", bad, "--first-stage", "scores", "-k", "2", one, "-o", tmp_path / "p.txt"],
                exit_code=exit_code)
        if exit_code:
            assert "array 'W' is corrupt: checksum mismatch in its row " in r.stderr
            assert int(r.stderr.split(" in its row ")[1].split()[0]) in rows
        else:
            assert (tmp_path / "p.txt").read_text() == (tmp_path / "exact.txt").read_text()
        run(["predict", "-q", "--exact", "-m", bad, one, "-o", tmp_path / "p.txt"], exit_code=65)


def test_info_shows_a_models_recomputed_identity_and_verify_refuses_a_header_that_records_another(
        digits_model_file, tmp_path):
    real = run(["info", "--json", digits_model_file]).stdout
    real_sha = json.loads(real)["meta"]["content_sha256"]
    bad = _rewrite(digits_model_file, tmp_path / "m.hsvm", MODEL_KIND,
                   edit_meta=lambda m: m.update(content_sha256="0" * 64))
    assert json.loads(run(["info", "--json", bad]).stdout)["meta"]["content_sha256"] == real_sha
    r = run(["info", "--verify", bad], exit_code=65)
    assert r.stderr == "hsvm: %s: content digest mismatch: the header records %s, the arrays give %s\n" % (
        bad, "0" * 64, real_sha)


def test_info_names_what_is_wrong_with_a_header_that_looks_like_safetensors(digits_model_file, tmp_path):
    blob = open(digits_model_file, "rb").read()
    past = tmp_path / "past.hsvm"
    past.write_bytes(struct.pack("<Q", len(blob) + 10) + blob[8:])
    r = run(["info", past], exit_code=65)
    assert "its header length (%d bytes) runs past the end of the file (%d bytes)" % (len(blob) + 10, len(blob)) \
        in r.stderr
    header = b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    plain = tmp_path / "plain.safetensors"
    plain.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    assert "a safetensors-style header without hsvm's metadata" in run(["info", plain], exit_code=65).stderr
    broken = tmp_path / "broken.hsvm"
    broken.write_bytes(struct.pack("<Q", 8) + b'{"x": 1,')
    assert "its header is not valid JSON" in run(["info", broken], exit_code=65).stderr


def test_info_text_shortens_a_long_string_and_json_keeps_it(digits_model_file, tmp_path):
    command = "hsvm train-ovo " + " ".join("part-%04d.svm" % i for i in range(400))
    long = _rewrite(digits_model_file, tmp_path / "m.hsvm", MODEL_KIND,
                    edit_meta=lambda m: m["provenance"].update(command=command))
    line = [ln for ln in run(["info", long]).stdout.splitlines() if "provenance.command" in ln][0]
    assert line.endswith("... [%d characters] (--json shows them)" % len(command)) and len(line) < 300
    assert json.loads(run(["info", "--json", long]).stdout)["meta"]["provenance"]["command"] == command
