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


def _unlabelled(text):
    return "".join("0" + line[line.index(" "):] + "\n" for line in text.splitlines())


def test_codes_of_other_samples_are_refused_even_where_the_labels_agree(digits_files, tmp_path):
    # unlabelled data (every label 0): the labels beside the codes cannot tell
    # files apart, the samples' fingerprints can
    import gzip
    model, hbm, _ = digits_files
    test_text = gzip.open(DIGITS_TEST, "rt").read()
    lines = test_text.splitlines()
    test = tmp_path / "u.svm"
    test.write_text(_unlabelled(test_text))
    other = tmp_path / "o.svm"
    other.write_text(_unlabelled("\n".join(lines[1:] + lines[:1])))     # the same samples, one place later
    codes = tmp_path / "o.codes"
    run(["hash-data", "-q", "-H", hbm, other, "-o", codes])
    r = run(["predict", "-m", model, "-H", hbm, "--codes", codes, "-k", "2", test, "-o", tmp_path / "p"],
            exit_code=65)
    assert r.stderr == ("hsvm: sample 1 of the input is not the sample whose code is at that place in %s: the codes "
                        "were made from other samples (another file, this one reordered, or another part of it; a "
                        "shard's codes come from hash-data --shard)\n" % codes)
    assert not (tmp_path / "p").exists()


def test_codes_match_their_samples_however_the_text_stores_them(digits_files, tmp_path):
    # explicit zeros, another chunking, compression: the same samples, the same codes accepted
    import gzip
    model, hbm, _ = digits_files
    text = gzip.open(DIGITS_TEST, "rt").read()
    codes = tmp_path / "t.codes"
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes, "--chunk-rows", "100"])
    plain = run(["predict", "-q", "-m", model, "-H", hbm, "-k", "3", DIGITS_TEST]).stdout
    zeros = tmp_path / "z.svm"
    zeros.write_text("".join(line + " 64:0\n" if " 64:" not in line else line + "\n" for line in text.splitlines()))
    for source, extra in ((DIGITS_TEST, []), (zeros, []), (DIGITS_TEST, ["--chunk-rows", "7"])):
        r = run(["predict", "-q", "-m", model, "-H", hbm, "--codes", codes, "-k", "3", source] + extra)
        assert r.stdout == plain


def test_codes_files_without_fingerprints_are_read_as_before(digits_files, tmp_path):
    from hsvm_cli.io.container import read_container, write_container
    from hsvm_cli.models.codes import CODES_KIND, read_codes
    model, hbm, _ = digits_files
    codes = tmp_path / "t.codes"
    run(["hash-data", "-q", "-H", hbm, DIGITS_TEST, "-o", codes])
    c = read_container(codes, kind=CODES_KIND, versions={1})
    assert read_codes(codes).fingerprints is not None
    old = tmp_path / "old.codes"
    write_container(old, {"codes": c.arrays["codes"], "labels": c.arrays["labels"]}, kind=CODES_KIND, version=1,
                    meta=c.meta)
    assert read_codes(old).fingerprints is None
    assert run(["predict", "-q", "-m", model, "-H", hbm, "--codes", old, "-k", "3", DIGITS_TEST]).stdout == \
        run(["predict", "-q", "-m", model, "-H", hbm, "-k", "3", DIGITS_TEST]).stdout
    bad = tmp_path / "bad.codes"
    write_container(bad, {"codes": c.arrays["codes"], "labels": c.arrays["labels"],
                          "sample_fingerprints": c.arrays["sample_fingerprints"][:-1]},
                    kind=CODES_KIND, version=1, meta=c.meta)
    r = run(["predict", "-m", model, "-H", hbm, "--codes", bad, "-k", "3", DIGITS_TEST], exit_code=65)
    assert "sample_fingerprints must be U64 [450]" in r.stderr


def test_hash_data_says_what_it_wrote_on_stderr_as_hash_model_does(digits_files, tmp_path):
    import os
    _, hbm, _ = digits_files
    codes = tmp_path / "t.codes"
    r = run(["hash-data", "-H", hbm, "--bits", "128", TEST, "-o", codes], stdout="")
    size = os.path.getsize(codes) / 1024
    assert r.stderr == "hsvm: hash-data: 450 samples x 128 bits -> %s (%.1f KiB)\n" % (codes, size)
    # to stdout: no size; with -q: nothing
    r = run(["hash-data", "-H", hbm, "--bits", "64", "--format", "svm", TEST])
    assert r.stderr.endswith("hsvm: hash-data: 450 samples x 64 bits -> -\n") and r.stdout.count("\n") == 450
    assert run(["hash-data", "-q", "-H", hbm, TEST, "-o", codes]).stderr == ""
