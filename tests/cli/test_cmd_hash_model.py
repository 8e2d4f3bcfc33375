"""hsvm hash-model: exit statuses, messages and what it writes."""
from hsvm_cli.models.hashed import load_hash_model
from hsvm_cli.models.ovo import load_model

from conftest import DIGITS_TEST, DIGITS_TRAIN, run


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
