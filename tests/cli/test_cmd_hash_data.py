from conftest import BUNDLED, DIGITS_TEST, run

TEST = str(BUNDLED / "digits" / "test.svm.gz")


def test_cli_hash_data_svm_format_writes_plus_minus_one_bits(digits_files):
    _, hbm, _ = digits_files
    r = run(["hash-data", "-H", hbm, "--bits", "64", "--format", "svm", TEST])
    first = r.stdout.splitlines()[0].split()
    assert len(first) == 65 and first[1].startswith("1:") and all(t.split(":")[1] in ("1", "-1") for t in first[1:])


def test_another_hsvm_file_as_hash_says_what_it_is_and_what_is_taken(tmp_path):
    from conftest import DIGITS_TEST, DIGITS_TRAIN, run
    model = str(tmp_path / "m.hsvm")
    run(["train-ovo", "-q", DIGITS_TRAIN, "-o", model])
    run(["hash-data", "-H", model, DIGITS_TEST, "-o", tmp_path / "c"], exit_code=65, stdout="",
        stderr="hsvm: %s: an hsvm model file; -H takes a one-vs-one model's hash model (.hbm), a kernel hash (.khm) "
               "or a learned circulant hash\n" % model)


def test_codes_written_as_svmlight_given_as_a_codes_file_get_the_remedy(digits_files, tmp_path):
    model, hbm, _ = digits_files
    bits = tmp_path / "t.bits.svm"
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "--format", "svm", "-o", bits])
    for args in (["predict", "-m", model, "-H", hbm, "--codes", bits, DIGITS_TEST], ["train-ovo", "--codes", bits,
                                                                                      "-o", tmp_path / "m"]):
        r = run(args, exit_code=65)
        assert r.stderr.startswith("hsvm: %s: not an hsvm codes file" % bits) and \
            "svmlight text, where codes files are hash-data's binary output" in r.stderr, args
