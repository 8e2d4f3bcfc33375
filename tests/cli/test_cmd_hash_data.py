from conftest import BUNDLED, run

TEST = str(BUNDLED / "digits" / "test.svm.gz")


def test_cli_hash_data_svm_format_writes_plus_minus_one_bits(digits_files):
    _, hbm, _ = digits_files
    r = run(["hash-data", "-H", hbm, "--bits", "64", "--format", "svm", TEST])
    first = r.stdout.splitlines()[0].split()
    assert len(first) == 65 and first[1].startswith("1:") and all(t.split(":")[1] in ("1", "-1") for t in first[1:])
