"""hsvm hash-model: exit statuses, messages and what it writes."""
import numpy as np

from hsvm_cli.models.hashed import load_hash_model
from hsvm_cli.models.ovo import load_model

from conftest import DIGITS_TEST, DIGITS_TRAIN, run, write_text


def test_hash_model_writes_a_hash_model_of_the_given_bits_and_reports_sizes(digits_model_file, tmp_path):
    out = tmp_path / "d.hbm"
    r = run(["hash-model", "-m", digits_model_file, "--bits", "128", "--seed", "7", "-o", out])
    h = load_hash_model(out)
    assert h.bits == 128 and h.seed == 7 and h.codes.shape == (45, 2)
    assert h.model_sha256 == load_model(digits_model_file).content_sha256()
    assert r.stdout == "" and r.stderr.startswith("hsvm: 45 classifiers x 128 bits -> %s (" % out)


def test_quiet_hash_model_prints_nothing(digits_model_file, tmp_path):
    run(["hash-model", "-q", "-m", digits_model_file, "--bits", "64", "-o", tmp_path / "d.hbm"], stdout="", stderr="")


def test_bits_not_a_multiple_of_64_is_a_usage_error_and_writes_nothing(digits_model_file, tmp_path):
    r = run(["hash-model", "-m", digits_model_file, "--bits", "100", "-o", tmp_path / "d.hbm"], exit_code=2)
    assert "multiple of 64" in r.stderr and not (tmp_path / "d.hbm").exists()


def test_a_model_trained_without_normalisation_hashes_with_per_sample_thresholds(tmp_path):
    # Its thresholds are taken at each sample's norm (predict/raw_filter.py):
    # keeping every class is exact prediction.
    model, hbm = tmp_path / "raw.hsvm", tmp_path / "raw.hbm"
    run(["train-ovo", DIGITS_TRAIN, "--normalize", "none", "-q", "-o", model])
    run(["hash-model", "-q", "-m", model, "--bits", "256", "-o", hbm], stdout="", stderr="")
    exact = run(["predict", "-q", "--exact", "-m", model, DIGITS_TEST]).stdout
    run(["predict", "-q", "-m", model, "-H", hbm, "-k", "10", DIGITS_TEST], stdout=exact)


def test_circulant_projection_is_recorded_and_its_stored_and_derived_codes_are_identical(digits_model_file, tmp_path):
    from hsvm_cli.models.codes import read_codes
    derived, stored = tmp_path / "c.hbm", tmp_path / "cs.hbm"
    r = run(["hash-model", "-m", digits_model_file, "--bits", "256", "--projection", "circulant", "-o", derived])
    assert r.stderr.startswith("hsvm: 45 classifiers x 256 bits (circulant projection) -> %s (" % derived)
    run(["hash-model", "-m", digits_model_file, "--bits", "256", "--projection", "circulant", "--store-projection",
         "-o", stored, "-q"])
    a, b = load_hash_model(derived), load_hash_model(stored)
    assert a.projection_kind == b.projection_kind == "circulant" and b.projector_stored and not a.projector_stored
    assert np.array_equal(a.codes, b.codes)
    for bits in ("64", "256"):
        out = {}
        for name, hbm in (("derived", derived), ("stored", stored)):
            out[name] = tmp_path / ("%s-%s.codes" % (name, bits))
            run(["hash-data", "-H", hbm, "--bits", bits, DIGITS_TEST, "-o", out[name], "-q"])
        # the same bits and the same identity: the same file
        assert out["derived"].read_bytes() == out["stored"].read_bytes()
    assert np.array_equal(read_codes(tmp_path / "derived-64.codes").codes,
                          read_codes(tmp_path / "derived-256.codes").codes[:, :1])


def test_unknown_projection_is_a_usage_error_and_writes_nothing(digits_model_file, tmp_path):
    r = run(["hash-model", "-m", digits_model_file, "--projection", "fourier", "-o", tmp_path / "d.hbm"], exit_code=2)
    assert r.stderr == ("hsvm hash-model: Invalid value for '--projection': 'fourier' is not one of 'gaussian', "
                        "'circulant' (see 'hsvm hash-model --help')\n")
    assert list(tmp_path.iterdir()) == []


def test_predict_refuses_gaussian_codes_with_a_circulant_hash_model(digits_model_file, tmp_path):
    g, c, codes = tmp_path / "g.hbm", tmp_path / "c.hbm", tmp_path / "g.codes"
    run(["hash-model", "-m", digits_model_file, "--bits", "128", "-o", g, "-q"])
    run(["hash-model", "-m", digits_model_file, "--bits", "128", "--projection", "circulant", "-o", c, "-q"])
    run(["hash-data", "-H", g, DIGITS_TEST, "-o", codes, "-q"])
    run(["predict", "-m", digits_model_file, "-H", c, "--codes", codes, DIGITS_TEST, "-q", "-o", tmp_path / "p.txt"],
        exit_code=65, stderr="hsvm: %s: codes were made with projection_kind='gaussian', the hash model uses "
                             "'circulant'\n" % codes)
    assert not (tmp_path / "p.txt").exists()
    accuracy = run(["predict", "-m", digits_model_file, "-H", c, "-k", "3", DIGITS_TEST, "-o", tmp_path / "p.txt"])
    assert float(accuracy.stderr.split("=")[1].split("%")[0]) >= 95.0


def test_a_model_without_features_is_refused_in_one_line(tmp_path):
    train = write_text(tmp_path / "nofeatures.svm", "1\n2\n1\n")
    model = str(tmp_path / "m.hsvm")
    run(["train-ovo", train, "-o", model, "-q"])
    run(["hash-model", "-m", model, "--bits", "64", "-o", tmp_path / "m.hbm"], exit_code=65,
        stderr="hsvm: %s has no features: there is nothing to hash (predict it exactly)\n" % model)
    assert not (tmp_path / "m.hbm").exists()


def test_more_bits_than_memory_or_files_hold_are_refused_before_drawing(digits_model_file, tmp_path):
    # the circulant projection's draws and the codes had been allocated first (MemoryError after them);
    # codes longer than 2^20 bits, which no reader takes, are a usage error before any of it
    out = tmp_path / "h.hbm"
    # 2^21 bits x 64 features fit in memory: no note on a projection that is never made
    for bits in (64 * 10 ** 9, 2 ** 21):
        for projection in ("circulant", "gaussian"):
            r = run(["hash-model", "-m", digits_model_file, "--bits", str(bits), "--projection", projection,
                     "-o", out], exit_code=2)
            assert ("from 64 to 1048576" in r.stderr or "in the range 64<=x<=1048576" in r.stderr) \
                and r.stderr.count("\n") == 1, (bits, projection)
            assert not out.exists()
    # a Gaussian projection of a million features at 2^20 bits: 4 TB
    wide = write_text(tmp_path / "wide.svm", "1 1:1 1000000:0.5\n2 2:1\n")
    model = tmp_path / "wide.hsvm"
    run(["train-ovo", "-q", wide, "-o", model])
    r = run(["hash-model", "-m", model, "--bits", str(2 ** 20), "-o", out], exit_code=65)
    assert "would need" in r.stderr and "of memory" in r.stderr and r.stderr.count("\n") == 1
    assert not out.exists()


def test_summaries_name_their_outputs_in_one_line_whatever_the_name_holds(digits_model_file, tmp_path):
    # a newline in a name had split the summary in two, an undecodable byte shown as \udcfe
    import os
    for raw, shown in ((b"x\ny.hbm", "x\\x0ay.hbm"), (b"m\xfe.hbm", "m\\xfe.hbm")):
        out = os.path.join(os.fsencode(tmp_path), raw)
        r = run(["hash-model", "-m", digits_model_file, "--bits", "64", "-o", os.fsdecode(out)])
        lines = r.stderr.splitlines()     # the summary and digits' note that 45 classifiers cannot pay
        assert all(line.startswith("hsvm: ") for line in lines) and ("-> %s/%s (" % (tmp_path, shown)) in lines[0]
        assert os.path.exists(out)


def test_a_hash_model_that_cannot_beat_exact_scoring_says_why(digits_model_file, omniglot, tmp_path):
    from hsvm_cli.models.ovo import save_model
    # digits: 45 classifiers, 64 features: the projection alone costs what
    # exact scoring does at 64 bits and up, and at 2048 bits a code (256
    # bytes) is as large as the weights (64 x 4)
    out = tmp_path / "h.hbm"
    r = run(["hash-model", "-m", digits_model_file, "--bits", "64", "-o", out])
    assert "note: 45 classifiers and 64 bits: hashing a sample costs at least as many multiply-adds" in r.stderr
    assert "no smaller than its" not in r.stderr
    r = run(["hash-model", "-m", digits_model_file, "--bits", "2048", "-o", out])
    assert "note: a classifier's 2048-bit code (256 bytes) is no smaller than its 64 features of weights" in r.stderr
    # a circulant projection costs O(d log d) a sample, not D per feature: only the size note applies
    r = run(["hash-model", "-m", digits_model_file, "--bits", "64", "--projection", "circulant", "-o", out])
    assert "note" not in r.stderr
    assert run(["hash-model", "-q", "-m", digits_model_file, "--bits", "64", "-o", out]).stderr == ""
    # omniglot-242: 29,161 classifiers, 784 features: no note
    model = tmp_path / "o.hsvm"
    save_model(omniglot[0], model)
    r = run(["hash-model", "-m", model, "--bits", "1024", "-o", out])
    assert "note" not in r.stderr and r.stderr.count("\n") == 1


def test_a_large_gaussian_projection_is_announced_before_it_is_made(digits_model_file, tmp_path, monkeypatch):
    from hsvm_cli.cli import cmd_hash_model
    monkeypatch.setattr(cmd_hash_model, "_LARGE_PROJECTION", 64 * 64 * 4)     # digits at 64 bits: 16 KiB
    out = tmp_path / "h.hbm"
    r = run(["hash-model", "-m", digits_model_file, "--bits", "64", "-o", out])
    assert r.stderr.startswith("hsvm: hash-model: note: the Gaussian projection of 64 bits x 64 features is 16.00 "
                               "KiB, made again by every command that hashes with it; --projection circulant"), r.stderr
    r = run(["hash-model", "-m", digits_model_file, "--bits", "64", "--store-projection", "-o", out])
    assert "note: the Gaussian projection of 64 bits x 64 features is 16.00 KiB, stored in the hash model;" in r.stderr
    for quiet in (["--projection", "circulant"], ["-q"]):
        assert "Gaussian projection" not in run(["hash-model", "-m", digits_model_file, "--bits", "64", "-o", out]
                                                + quiet).stderr


def test_a_one_vs_rest_model_gets_the_notes_without_the_circulant_advice(tmp_path, monkeypatch):
    # imported from LIBLINEAR: hashed with the Gaussian projection only
    from pathlib import Path

    from hsvm_cli.cli import cmd_hash_model
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "tools" / "liblinear_ovr3.model"
    model = tmp_path / "ovr.hsvm"
    run(["import-model", "-q", str(fixture), "-o", model])
    monkeypatch.setattr(cmd_hash_model, "_LARGE_PROJECTION", 1)
    r = run(["hash-model", "-m", model, "--bits", "64", "-o", tmp_path / "h.hbm"])
    assert "note: the Gaussian projection of 64 bits x" in r.stderr and "circulant" not in r.stderr
    assert "note: 3 classifiers and 64 bits: hashing a sample costs" in r.stderr
