"""hsvm fit-circulant and the learned circulant hash on the command line:
fit to ITQ or to a codes file (a prefix of its bits), hash-data -H HASH, and
what is refused (one line, exit 2 or 65, nothing written)."""
import gzip

import numpy as np
import pytest

from hsvm_cli.io.svmlight import load_svmlight
from hsvm_cli.models.circulant_hash import load_circulant_hash
from hsvm_cli.models.codes import read_codes
from hsvm_cli.train.circulant_fit import fit_circulant_hash, targets_from_codes

from conftest import BUNDLED, DIGITS_TEST, DIGITS_TRAIN, run, write_text


@pytest.fixture(scope="module")
def files(tmp_path_factory, digits_model_file):
    """Hash models and codes of the digits training set, and a 400-sample
    slice of omniglot-242 (784 features: room for 128 bits)."""
    d = tmp_path_factory.mktemp("fitcirc")
    f = {"dir": d, "model": str(digits_model_file)}
    for name, bits in (("g128", 128), ("g64", 64)):
        f[name + ".hbm"] = str(d / (name + ".hbm"))
        run(["hash-model", "-m", f["model"], "--bits", bits, "--seed", 2, "-o", f[name + ".hbm"], "-q"])
        f[name + ".codes"] = str(d / (name + ".codes"))
        run(["hash-data", "-H", f[name + ".hbm"], DIGITS_TRAIN, "-o", f[name + ".codes"], "-q"])
    with gzip.open(BUNDLED / "omniglot-242" / "train.svm.gz", "rt") as fh:
        f["omni"] = write_text(d / "omni.svm", "".join(fh.readline() for _ in range(400)))
    return f


def test_fit_to_itq_is_the_library_fit_and_reproducible(files, tmp_path):
    out, again = tmp_path / "h.chash", tmp_path / "again.chash"
    r = run(["fit-circulant", DIGITS_TRAIN, "--targets", "itq", "--bits", 64, "--seed", 3, "-o", out])
    assert r.stdout == "" and r.stderr.startswith("hsvm: circulant SVM, 64 bits over 64 features fitted to itq "
                                                  "targets (") and r.stderr.endswith(" -> %s\n" % out)
    run(["fit-circulant", DIGITS_TRAIN, "--targets", "itq", "--bits", 64, "--seed", 3, "-o", again, "-q"],
        stdout="", stderr="")
    assert out.read_bytes() == again.read_bytes()
    h = load_circulant_hash(out)
    X, _ = load_svmlight(DIGITS_TRAIN)
    ref = fit_circulant_hash(X, bits=64, targets="itq", seed=3)
    assert np.array_equal(h.w, ref.w) and np.array_equal(h.bias, ref.bias)
    assert h.meta["targets"] == "itq" and h.meta["train_per_bit_accuracy"] == ref.meta["train_per_bit_accuracy"]
    assert h.meta["provenance"]["train_sha256"] and h.method == "circulant-svm" and h.seed == 3


def test_fit_to_a_codes_file_takes_the_prefix_of_its_bits(files, tmp_path):
    out = tmp_path / "h.chash"
    # -e: train-ovo's short name for the tolerance
    run(["fit-circulant", DIGITS_TRAIN, "--targets", files["g128.codes"], "--bits", 64, "-c", 2, "--loss", "hinge",
         "-e", 0.05, "-o", out, "-q"])
    h = load_circulant_hash(out)
    X, _ = load_svmlight(DIGITS_TRAIN)
    codes = read_codes(files["g128.codes"])
    ref = fit_circulant_hash(X, bits=64, targets=targets_from_codes(codes.codes, 64), C=2.0, loss="hinge", eps=0.05)
    assert np.array_equal(h.w, ref.w) and np.array_equal(h.bias, ref.bias)
    assert h.meta["targets"] == "codes" and h.meta["targets_codes"]["bits"] == 128
    # the first 64 of 128 bits are the 64-bit codes of the same projection
    short = tmp_path / "short.chash"
    run(["fit-circulant", DIGITS_TRAIN, "--targets", files["g64.codes"], "--bits", 64, "-c", 2, "--loss", "hinge",
         "--eps", 0.05, "-o", short, "-q"])
    assert np.array_equal(load_circulant_hash(short).w, h.w)
    # fitted to a Gaussian hash's codes, the circulant hash agrees with most of their bits
    assert h.meta["train_per_bit_accuracy"] >= 0.75


def test_hash_data_applies_the_learned_hash_and_a_prefix_of_its_bits(files, tmp_path):
    fitted = tmp_path / "o.chash"
    run(["fit-circulant", files["omni"], "--targets", "itq", "--bits", 128, "--rows", "spread", "-o", fitted, "-q"])
    h = load_circulant_hash(fitted)
    d = h.n_features
    assert h.bits == 128 and np.array_equal(h.shifts, np.arange(128) * d // 128)
    out = tmp_path / "o.codes"
    run(["hash-data", "-H", fitted, files["omni"], "-o", out, "-q"])
    X, y = load_svmlight(files["omni"])
    c = read_codes(out)
    assert np.array_equal(c.codes, h.codes(X)) and np.array_equal(c.labels, y) and c.bits == 128
    run(["hash-data", "-H", fitted, "--bits", 64, files["omni"], "-o", tmp_path / "o64.codes", "-q"])
    assert np.array_equal(read_codes(tmp_path / "o64.codes").codes, c.codes[:, :1])
    r = run(["hash-data", "-H", fitted, "--bits", 64, "--format", "svm", files["omni"]])
    first = r.stdout.splitlines()[0].split()
    bits = np.unpackbits(c.codes[:1, :1].view(np.uint8), bitorder="little")
    assert [t.split(":")[1] for t in first[1:]] == ["1" if b else "-1" for b in bits]
    r = run(["hash-data", "-H", fitted, "--bits", 100, files["omni"], "-o", tmp_path / "x.codes"], exit_code=2)
    assert "Invalid value for '--bits': bits must be a multiple of 64 between 64 and the hash's 128, got 100" \
        in r.stderr and not (tmp_path / "x.codes").exists()


def test_predict_refuses_codes_of_a_learned_hash_as_filter_codes(files, tmp_path):
    fitted, codes = tmp_path / "h.chash", tmp_path / "test.codes"
    run(["fit-circulant", DIGITS_TRAIN, "--targets", "itq", "--bits", 64, "-o", fitted, "-q"])
    run(["hash-data", "-H", fitted, DIGITS_TEST, "-o", codes, "-q"])
    run(["predict", "-m", files["model"], "-H", files["g64.hbm"], "--codes", codes, DIGITS_TEST, "-q"], exit_code=65,
        stderr="hsvm: %s: codes of a learned circulant hash (fit-circulant), not codes of the hash model's "
               "projection\n" % codes)


def test_reads_data_from_stdin(files, tmp_path):
    out = tmp_path / "stdin.chash"
    with gzip.open(DIGITS_TRAIN, "rb") as fh:
        run(["fit-circulant", "-", "--targets", files["g64.codes"], "--bits", 64, "-o", out, "-q"], input=fh.read())
    run(["fit-circulant", DIGITS_TRAIN, "--targets", files["g64.codes"], "--bits", 64, "-o", tmp_path / "f.chash",
         "-q"])
    assert np.array_equal(load_circulant_hash(out).w, load_circulant_hash(tmp_path / "f.chash").w)


def _refused(args, tmp_path, exit_code, stderr=None, contains=None):
    out = tmp_path / "out.chash"
    r = run(["fit-circulant"] + args + ["-o", out], exit_code=exit_code, stderr=stderr)
    if contains is not None:
        assert contains in r.stderr and r.stderr.count("\n") == 1 and r.stderr.startswith("hsvm: "), r.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []
    return r


@pytest.mark.parametrize("bits", [100, 0, -64])
def test_bits_not_a_positive_multiple_of_64_is_a_usage_error(tmp_path, bits):
    r = _refused([DIGITS_TRAIN, "--targets", "itq", "--bits", bits], tmp_path, 2)
    assert r.stderr == ("hsvm fit-circulant: Invalid value for '--bits': must be a positive multiple of 64 (codes are "
                        "packed in 64-bit words), got %d (see 'hsvm fit-circulant --help')\n" % bits)


def test_unknown_loss_is_a_usage_error(tmp_path):
    r = _refused([DIGITS_TRAIN, "--targets", "itq", "--bits", 64, "--loss", "logistic"], tmp_path, 2)
    assert r.stderr == ("hsvm fit-circulant: Invalid value for '--loss': 'logistic' is not one of 'hinge', "
                        "'squared-hinge' (see 'hsvm fit-circulant --help')\n")


def test_more_bits_than_features_is_refused(tmp_path):
    _refused([DIGITS_TRAIN, "--targets", "itq", "--bits", 128], tmp_path, 65,
             stderr="hsvm: %s: --bits 128 exceeds the 64 features: circ(w) has only 64 distinct rows\n"
                    % DIGITS_TRAIN)


def test_targets_with_another_sample_count_are_refused(files, tmp_path):
    test_codes = files["dir"] / "test.codes"
    if not test_codes.exists():
        run(["hash-data", "-H", files["g64.hbm"], DIGITS_TEST, "-o", test_codes, "-q"])
    n_test, n_train = read_codes(test_codes).codes.shape[0], load_svmlight(DIGITS_TRAIN)[0].shape[0]
    _refused([DIGITS_TRAIN, "--targets", test_codes, "--bits", 64], tmp_path, 65,
             stderr="hsvm: %s: %d codes, but %s has %d samples (the targets need one code per sample)\n"
                    % (test_codes, n_test, DIGITS_TRAIN, n_train))


def test_targets_of_other_samples_are_refused_by_their_labels(files, tmp_path):
    # same count, another order: the codes' labels do not follow the data's
    lines = gzip.open(DIGITS_TRAIN, "rt").read().splitlines(keepends=True)
    shuffled = write_text(tmp_path.parent / "shuffled.svm", "".join(lines[1:] + lines[:1]))
    r = _refused([shuffled, "--targets", files["g64.codes"], "--bits", 64], tmp_path, 65,
                 contains="not the codes of these samples")
    assert r.stderr.startswith("hsvm: %s: the label of code 1 is " % files["g64.codes"])


def test_targets_of_other_samples_with_the_same_labels_are_refused_by_their_fingerprints(files, tmp_path):
    # two samples of one class swapped: every label still agrees with its code's
    lines = gzip.open(DIGITS_TRAIN, "rt").read().splitlines(keepends=True)
    label = lines[0].split()[0]
    other = next(i for i in range(1, len(lines)) if lines[i].split()[0] == label)
    lines[0], lines[other] = lines[other], lines[0]
    swapped = write_text(tmp_path.parent / "swapped.svm", "".join(lines))
    _refused([swapped, "--targets", files["g64.codes"], "--bits", 64], tmp_path, 65,
             stderr="hsvm: %s: code 1 was made from another sample than sample 1 of %s: not the codes of these "
                    "samples (another file, or this one reordered)\n" % (files["g64.codes"], swapped))


def test_more_bits_than_the_targets_hold_are_refused(files, tmp_path):
    _refused([DIGITS_TRAIN, "--targets", files["g64.codes"], "--bits", 128], tmp_path, 65,
             stderr="hsvm: %s: --bits 128 exceeds the codes' 64 bits\n" % files["g64.codes"])


def test_data_wider_than_fits_in_memory_is_refused_before_fitting(tmp_path):
    wide = write_text(tmp_path.parent / "wide.svm",
                      "".join("%d 1:0.5 %d:%d 2000000000:1\n" % (i % 2, 2 + i, i + 1) for i in range(80)))
    _refused([wide, "--targets", "itq", "--bits", 64], tmp_path, 65,
             contains="%s: fitting 64 bits over 80 samples of 2000000000 features would need " % wide)


def test_missing_targets_file_is_exit_66(tmp_path):
    _refused([DIGITS_TRAIN, "--targets", tmp_path.parent / "nope.codes", "--bits", 64], tmp_path, 66,
             stderr="hsvm: %s: no such file\n" % (tmp_path.parent / "nope.codes"))


def test_a_hash_model_as_targets_is_bad_input(files, tmp_path):
    _refused([DIGITS_TRAIN, "--targets", files["g64.hbm"], "--bits", 64], tmp_path, 65,
             contains="%s: an hsvm hash-model file, not an hsvm codes file" % files["g64.hbm"])
