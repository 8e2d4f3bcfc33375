"""hsvm info: every kind of hsvm file described after its own checks; damaged
files named with their exit status while the others are still described."""
import gzip
import json
import struct

import numpy as np
import pytest

from hsvm_cli import describe, load_model

from conftest import DIGITS_TEST, DIGITS_TRAIN, TOOL_FIXTURES, run


@pytest.fixture(scope="module")
def files(digits_files, tmp_path_factory):
    model, hbm, _ = digits_files
    d = tmp_path_factory.mktemp("info")
    out = {"hsvm-model": model, "hsvm-hash-model": hbm}
    out["hsvm-calibration"] = str(d / "d.cal")
    run(["calibrate", "-q", "-m", model, DIGITS_TEST, "-o", out["hsvm-calibration"]])
    out["hsvm-codes"] = str(d / "d.codes")
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", out["hsvm-codes"]])
    out["hsvm-model-part"] = str(d / "d.part")
    run(["train-ovo", "-q", DIGITS_TRAIN, "--pairs", "0/2", "-o", out["hsvm-model-part"]])
    out["hsvm-kernel-hash"] = str(d / "d.khm")
    run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", "rbf", "--landmarks", "64", "--bits", "128", "-o",
         out["hsvm-kernel-hash"]])
    out["hsvm-ovr-model"] = str(d / "ovr.hsvm")
    run(["import-model", "-q", str(TOOL_FIXTURES / "liblinear_ovr3.model"), "-o", out["hsvm-ovr-model"]])
    return out


def test_every_kind_is_described_with_its_format_arrays_and_metadata(files):
    for kind, path in files.items():
        r = run(["info", path])
        first = r.stdout.splitlines()[0]
        assert first.startswith("%s: %s version " % (path, kind)), first
        assert "\n  arrays: " in r.stdout and r.stderr == ""
        doc = json.loads(run(["info", "--json", path]).stdout)
        assert doc["file"] == path and doc["format"] == kind and doc["arrays"]


def test_a_models_training_record_is_shown(files):
    path = files["hsvm-model"]
    model = load_model(path)
    doc = json.loads(run(["info", "--json", path]).stdout)
    assert doc["classes"] == [int(c) for c in model.classes]
    assert doc["meta"]["params"]["C"] == model.params["C"]
    text = run(["info", path]).stdout
    assert "  classes (%d): %s\n" % (model.n_classes, " ".join(str(c) for c in model.classes)) in text
    assert "  params.C: %s\n" % json.dumps(model.params["C"]) in text
    assert "  normalize: \"l2\"\n" in text
    assert describe(path).as_dict() == doc


def test_names_show_their_letters_and_escape_only_what_is_not_printable(tmp_path):
    # JSON's ASCII escapes showed "donn\u00e9es.svm"; a control character
    # stays escaped, so that a line stays one line
    import shutil
    src = tmp_path / "données\x1b.svm"
    shutil.copy(DIGITS_TRAIN, src)
    model = tmp_path / "modèle.hsvm"
    run(["train-ovo", "-q", str(src), "-o", str(model)])
    text = run(["info", str(model)]).stdout
    assert '  provenance.train_input: "%s"\n' % str(tmp_path / "données\\u001b.svm") in text
    assert text.startswith(str(model) + ": ") and "\\u00e" not in text
    assert json.loads(run(["info", "--json", str(model)]).stdout)["meta"]["provenance"]["train_input"] == str(src)


def test_verify_reads_the_blocks_of_w_that_loading_leaves_unread(files, tmp_path):
    src = files["hsvm-model"]
    data = bytearray(open(src, "rb").read())
    (hlen,) = struct.unpack("<Q", data[:8])
    begin = json.loads(data[8:8 + hlen])["W"]["data_offsets"][0]
    data[8 + hlen + begin] ^= 1                 # a low mantissa bit of W[0, 0]: still finite
    bad = tmp_path / "bad.hsvm"
    bad.write_bytes(bytes(data))
    assert "every block verified but W's (--verify reads them)" in run(["info", str(bad)]).stdout
    r = run(["info", "--verify", str(bad)], exit_code=65)
    assert r.stdout == "" and r.stderr.startswith("hsvm: %s: " % bad) and r.stderr.count("\n") == 1
    assert "every block verified\n" in run(["info", "--verify", src]).stdout


def test_unreadable_files_are_named_and_the_others_still_described(files, tmp_path):
    text = tmp_path / "x.svm"
    text.write_text("1 1:1\n")
    libsvm = TOOL_FIXTURES / "libsvm_c3.model"
    packed = tmp_path / "m.hbm.gz"
    packed.write_bytes(gzip.compress(open(files["hsvm-hash-model"], "rb").read()))
    r = run(["info", str(text), files["hsvm-hash-model"], str(tmp_path / "missing"),
             str(libsvm), str(packed)], exit_code=65)
    assert r.stdout.startswith("%s: hsvm-hash-model version" % files["hsvm-hash-model"])
    assert r.stderr.splitlines() == [
        "hsvm: %s: not an hsvm file but svmlight data (a label, then index:value pairs): the data goes where TEST "
        "or TRAIN does, an hsvm file where this was given" % text,
        "hsvm: %s: no such file" % (tmp_path / "missing"),
        "hsvm: %s: a LIBSVM or LIBLINEAR model, not an hsvm file: convert it with `hsvm import-model %s -o "
        "MODEL.hsvm`" % (libsvm, libsvm),
        "hsvm: %s: not an hsvm file but gzip-compressed data: hsvm's binary files are never compressed (decompress "
        "it first)" % packed,
    ]
    assert run(["info", str(tmp_path / "missing")], exit_code=66).stdout == ""


def test_readability_is_judged_by_opening_the_file_not_by_click(files, monkeypatch):
    # click's Path() checked os.access first: an unreadable file was a usage
    # error (exit 2) and the files after it were not described.  The library
    # names it (permission denied, exit 66) and goes on; here os.access says
    # no while the file opens, so only a pre-check could refuse it.
    import os
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if str(p).endswith(".hbm") else real(p, mode))
    r = run(["info", files["hsvm-hash-model"], files["hsvm-model"]])
    assert r.stdout.startswith("%s: hsvm-hash-model version" % files["hsvm-hash-model"])


def test_stdin_is_a_usage_error_and_a_broken_header_is_called_damaged(files, tmp_path):
    r = run(["info", "-"], exit_code=2, input="")
    assert "memory-mapped" in r.stderr
    data = bytearray(open(files["hsvm-hash-model"], "rb").read())
    data[9] = ord("x")                              # '{"' -> '{x': not JSON any more
    bad = tmp_path / "h.hbm"
    bad.write_bytes(bytes(data))
    r = run(["info", str(bad)], exit_code=65)
    assert r.stderr == "hsvm: %s: a damaged hsvm file: its header is not valid JSON\n" % bad


def test_verify_compares_every_row_of_w_with_its_digest(digits_model, tmp_path, monkeypatch):
    from hsvm_cli.io import container
    from hsvm_cli.models.ovo import save_model
    monkeypatch.setattr(container, "row_digests", lambda arr: np.zeros(arr.shape[0], dtype=np.uint64))
    stale = tmp_path / "stale.hsvm"
    save_model(digits_model, stale)
    monkeypatch.undo()
    run(["info", str(stale)])                                       # the blocks all match their checksums
    r = run(["info", "--verify", str(stale)], exit_code=65)
    assert r.stderr == "hsvm: %s: array 'W' is corrupt: checksum mismatch in its row 0 (bytes 0 to %d)\n" % (
        stale, 4 * digits_model.n_features)


def test_verify_refuses_class_summaries_that_w_and_b_do_not_give(digits_model, tmp_path):
    import dataclasses

    from hsvm_cli.models.class_weights import compute_class_weights
    from hsvm_cli.models.ovo import save_model
    U, beta = compute_class_weights(digits_model)
    good, altered = tmp_path / "good.hsvm", tmp_path / "altered.hsvm"
    save_model(dataclasses.replace(digits_model, class_W=U, class_b=beta), good)
    run(["info", "--verify", str(good)])
    U = U.copy()
    U[3, 5] = np.nextafter(U[3, 5], np.float32(np.inf))      # one bit: its checksums recomputed on writing
    save_model(dataclasses.replace(digits_model, class_W=U, class_b=beta), altered)
    run(["info", str(altered)])                                     # each array matches its own checksums
    r = run(["info", "--verify", str(altered)], exit_code=65)
    assert r.stderr == ("hsvm: %s: class_W does not match the class summaries W and b give (it is derived from "
                        "them: docs/formats.md); the file was altered after writing\n" % altered)


def test_a_kernel_hash_says_which_stored_parameters_its_kernel_ignores(tmp_path):
    for kernel, unused, used in (("rbf", ("degree", "coef0"), ("gamma",)), ("poly", (), ("degree", "coef0", "gamma")),
                                 ("linear", ("degree", "coef0", "gamma"), ())):
        khm = tmp_path / (kernel + ".khm")
        run(["kernel-hash", "-q", DIGITS_TRAIN, "--kernel", kernel, "--landmarks", "8", "--bits", "64", "-o", khm])
        lines = {line.split(":")[0].strip(): line for line in run(["info", khm]).stdout.splitlines()}
        for name in unused:
            assert lines[name].endswith("(unused by the %s kernel)" % kernel), lines[name]
        for name in used:
            assert "unused" not in lines[name], lines[name]
