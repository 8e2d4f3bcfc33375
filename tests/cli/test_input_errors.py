"""Bad sample inputs through every subcommand that reads them (train-ovo,
predict, hash-data, calibrate, eval's truth file): corrupt or truncated
gzip/bz2/xz, failing reads, directories and unreadable paths, values beyond
float32.  Always one line on stderr and the documented exit status, never a
traceback, never a half-written output."""
import bz2
import gzip
import lzma
import os
import random
import re
import shutil
import subprocess
import sys
import warnings
import zlib

import pytest

from conftest import REPO, TOY, ZSTD, run, write_text, zstd_compress

COMPRESS = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zstd": zstd_compress}
DECOMPRESS = {"gzip": gzip.decompress, "bz2": bz2.decompress, "xz": lzma.decompress, "zstd": ZSTD.decompress}
MAGIC = {"gzip": 2, "bz2": 3, "xz": 6, "zstd": 4}
TEXT = (TOY * 3).encode()
COMMANDS = ["train-ovo", "predict", "hash-data", "calibrate", "eval"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Model, hash model and a predictions file for the toy set."""
    d = tmp_path_factory.mktemp("inputs")
    train = write_text(d / "toy.svm", TEXT)
    model, hbm = str(d / "toy.hsvm"), str(d / "toy.hbm")
    run(["train-ovo", train, "-o", model, "-q"])
    run(["hash-model", "-m", model, "--bits", "64", "-o", hbm, "-q"])
    preds = write_text(d / "preds.txt", run(["predict", "-m", model, train, "-q"]).stdout)
    return {"dir": d, "train": train, "model": model, "hbm": hbm, "preds": preds}


def command(name, path, s, out):
    """The arguments that make subcommand ``name`` read the samples ``path``,
    writing (if it writes) to ``out``."""
    return {
        "train-ovo": ["train-ovo", path, "-o", out, "-q"],
        "predict": ["predict", "-m", s["model"], path, "-o", out, "-q"],
        "hash-data": ["hash-data", "-H", s["hbm"], path, "-o", out, "-q"],
        "calibrate": ["calibrate", "-m", s["model"], "-H", s["hbm"], path, "-o", out, "--repeat", "1", "-q"],
        "eval": ["eval", "--truth", path, s["preds"]],
    }[name]


def decompression_message(path, kind):
    return re.compile(r"^hsvm: %s: (truncated|corrupt) %s data near byte (\d+) \(line (\d+)\)\n\Z"
                      % (re.escape(path), kind))


def expect_one_line_65(name, path, s, out):
    """Runs ``name`` on ``path``: exit 65, one line, nothing on stdout, no output file."""
    r = run(command(name, path, s, out), exit_code=65)
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert not os.path.exists(out)
    return r.stderr


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_every_truncation_point_is_one_line_naming_byte_and_line(setup, tmp_path, kind):
    blob = COMPRESS[kind](TEXT)
    lines = TEXT.count(b"\n")
    path = str(tmp_path / ("cut." + kind))  # the name says nothing; magic bytes decide
    out = str(tmp_path / "out")
    pattern = decompression_message(path, kind)
    for k in range(1, len(blob)):
        with open(path, "wb") as fh:
            fh.write(blob[:k])
        # predict at every point; the other commands at every fourth, in turn
        for i, name in enumerate(COMMANDS):
            if name != "predict" and (k + i) % 4:
                continue
            err = expect_one_line_65(name, path, setup, out)
            m = pattern.match(err)
            assert m and m.group(1) == "truncated", (k, name, err)
            assert 1 <= int(m.group(2)) <= k and 1 <= int(m.group(3)) <= lines + 1, (k, err)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_bit_flips_are_read_as_the_standard_library_decompresses_them(setup, tmp_path, kind):
    """A flip the format's checks miss (gzip's mtime, bz2's block size)
    changes nothing; any other is one line, exit 65 -- a decompression message,
    or a format error when the flip broke the magic bytes, so the file is not
    recognised as compressed."""
    blob = COMPRESS[kind](TEXT)
    rng = random.Random(7)
    path = str(tmp_path / "flip.bin")
    out = str(tmp_path / "out")
    pattern = decompression_message(path, kind)
    clean = run(["predict", "-m", setup["model"], setup["train"], "-q"]).stdout
    outcomes = set()
    flips = [(pos, bit) for pos in range(MAGIC[kind]) for bit in (0, 7)]
    flips += [(rng.randrange(MAGIC[kind], len(blob)), rng.randrange(8)) for _ in range(60)]
    for n, (pos, bit) in enumerate(flips):
        bad = bytearray(blob)
        bad[pos] ^= 1 << bit
        with open(path, "wb") as fh:
            fh.write(bad)
        name = COMMANDS[n % len(COMMANDS)] if pos >= MAGIC[kind] else "predict"
        if pos < MAGIC[kind]:
            err = expect_one_line_65(name, path, setup, out)
            assert re.match(r"^hsvm: %s:\d+: " % re.escape(path), err), err
            outcomes.add("not recognised")
            continue
        try:
            decompressed = DECOMPRESS[kind](bytes(bad))
        except Exception:  # the oracle's ways of refusing (bz2.decompress raises ValueError when cut short)
            decompressed = None
        if decompressed is None:
            err = expect_one_line_65(name, path, setup, out)
            assert pattern.match(err), (pos, bit, name, err)
            outcomes.add(pattern.match(err).group(1))
        else:
            assert decompressed == TEXT  # the formats' CRCs let no data change through
            r = run(["predict", "-m", setup["model"], path, "-q"])
            assert r.stdout == clean
            outcomes.add("unchanged")
    assert {"corrupt", "not recognised"} <= outcomes, outcomes


def test_corrupt_input_through_stdin_names_stdin(setup):
    blob = gzip.compress(TEXT)
    bad = blob[:10] + bytes([blob[10] ^ 0xFF]) + blob[11:]
    r = run(["predict", "-m", setup["model"], "-", "-q"], input=bad, exit_code=65)
    assert re.match(r"^hsvm: <stdin>: corrupt gzip data near byte \d+ \(line 1 or later\)\n\Z", r.stderr), r.stderr
    r = run(["train-ovo", "-", "-o", str(setup["dir"] / "m"), "-q"], input=blob[:-3], exit_code=65)
    assert re.match(r"^hsvm: <stdin>: truncated gzip data near byte \d+ \(line 1 or later\)\n\Z", r.stderr), r.stderr


@pytest.mark.parametrize("kind", ["gzip", "zstd", "xz", "bz2"])
def test_bytes_after_whole_compressed_data_are_called_trailing_garbage(setup, tmp_path, kind):
    # gzip -t says "trailing garbage ignored"; hsvm refuses the file, in those
    # words, not as a truncation or corruption of the data before them.
    lines = TEXT.count(b"\n")
    for junk in (b"garbage\n", b"x", bytes(range(7, 40))):
        path = tmp_path / "t.z"
        path.write_bytes(COMPRESS[kind](TEXT) + junk)
        for name in ("predict", "train-ovo"):
            err = expect_one_line_65(name, str(path), setup, str(tmp_path / "out"))
            assert re.match(r"^hsvm: %s: trailing garbage after the %s data, near byte \d+ \(line %d\)\n\Z"
                            % (re.escape(str(path)), kind, lines + 1), err), err


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2"])
def test_the_first_bytes_of_a_magic_number_after_whole_data_are_a_truncation(setup, tmp_path, kind):
    # the next stream cut short inside its magic number (gzip -t: "unexpected
    # end of file"), as a file of only those bytes is; was trailing garbage
    lines = TEXT.count(b"\n")
    blob = COMPRESS[kind](TEXT)
    for cut in range(1, MAGIC[kind]):
        path = tmp_path / "t.z"
        path.write_bytes(blob + blob[:cut])
        err = expect_one_line_65("predict", str(path), setup, str(tmp_path / "out"))
        assert re.match(r"^hsvm: %s: truncated %s data near byte \d+ \(line %d\)\n\Z"
                        % (re.escape(str(path)), kind, lines + 1), err), err
        r = run(["predict", "-m", setup["model"], "-", "-q"], input=blob + blob[:cut], exit_code=65)
        assert re.match(r"^hsvm: <stdin>: truncated %s data near byte \d+ \(line 1 or later\)\n\Z" % kind,
                        r.stderr), r.stderr


@pytest.mark.parametrize("kind", ["gzip", "xz", "bz2"])
def test_a_compressed_predictions_file_cut_short_names_the_line(setup, tmp_path, kind):
    # eval's predictions (and svm-predict-style files) said only the byte
    preds = open(setup["preds"], "rb").read()
    path = tmp_path / "preds.z"
    path.write_bytes(COMPRESS[kind](preds)[:-10])
    r = run(["eval", "--truth", setup["train"], str(path)], exit_code=65)
    m = re.match(r"^hsvm: %s: truncated %s data near byte \d+ \(line (\d+)\)\n\Z" % (re.escape(str(path)), kind),
                 r.stderr)
    assert m and 1 <= int(m.group(1)) <= preds.count(b"\n") + 1, r.stderr


def test_gzip_through_stdin_tells_trailing_garbage_and_reads_members_and_nul_padding(setup):
    # stdin cannot be decompressed a second time to tell: its gzip is read
    # member by member, so bytes after the last one are trailing garbage at
    # once (they were a truncation or corrupt data); NUL padding is skipped,
    # concatenated members read, as gzip -dc does
    blob = gzip.compress(TEXT)
    for junk in (b"junk\n", b"x", bytes(range(7, 40))):
        r = run(["predict", "-m", setup["model"], "-", "-q"], input=blob + junk, exit_code=65)
        assert re.match(r"^hsvm: <stdin>: trailing garbage after the gzip data, near byte \d+ \(line 1 or later\)"
                        r"\n\Z", r.stderr), r.stderr
    clean = run(["predict", "-m", setup["model"], setup["train"], "-q"]).stdout
    half = TEXT.count(b"\n") // 2
    head, tail = b"".join(TEXT.splitlines(True)[:half]), b"".join(TEXT.splitlines(True)[half:])
    for piped in (blob + b"\0" * 9, gzip.compress(head) + gzip.compress(tail), gzip.compress(head) + b"\0\0"
                  + gzip.compress(tail)):
        assert run(["predict", "-m", setup["model"], "-", "-q"], input=piped).stdout == clean
    r = run(["predict", "-m", setup["model"], "-", "-q"], input=gzip.compress(head) + blob[:-5], exit_code=65)
    assert re.match(r"^hsvm: <stdin>: truncated gzip data near byte \d+ \(line 1 or later\)\n\Z", r.stderr)


@pytest.mark.parametrize("kind", ["xz", "bz2"])
def test_xz_and_bz2_streams_concatenated_are_read_whole_with_xz_padding(setup, tmp_path, kind):
    # `xz -dc` reads every stream, with NUL padding (a multiple of four bytes)
    # between and after them; Python's LZMAFile stopped quietly at the padding
    # and the rest of the input was lost, exit 0
    clean = run(["predict", "-m", setup["model"], setup["train"], "-q"]).stdout
    half = TEXT.count(b"\n") // 2
    head, tail = b"".join(TEXT.splitlines(True)[:half]), b"".join(TEXT.splitlines(True)[half:])
    pad = b"\0" * 8 if kind == "xz" else b""
    blob = COMPRESS[kind](head) + pad + COMPRESS[kind](tail) + pad
    path = tmp_path / ("t." + kind)
    path.write_bytes(blob)
    assert run(["predict", "-m", setup["model"], str(path), "-q"]).stdout == clean
    assert run(["predict", "-m", setup["model"], "-", "-q"], input=blob).stdout == clean
    if kind == "xz":
        # padding that is no multiple of four is corrupt data, as xz says
        path.write_bytes(COMPRESS[kind](head) + b"\0" * 3 + COMPRESS[kind](tail))
        err = expect_one_line_65("predict", str(path), setup, str(tmp_path / "out"))
        assert re.match(r"^hsvm: %s: corrupt xz data near byte \d+ \(line %d\)\n\Z" % (re.escape(str(path)), half + 1),
                        err), err


def test_zstd_frames_concatenated_or_after_a_skippable_frame_are_read_whole(setup, tmp_path):
    # `zstd a >> f` appends frames; pzstd opens its output with a skippable
    # frame (magic 0x184D2A50-5F); a frame written without a checksum is read
    # as the library writes it.  Through a file and through stdin.
    clean = run(["predict", "-m", setup["model"], setup["train"], "-q"]).stdout
    half = TEXT.count(b"\n") // 2
    head, tail = b"".join(TEXT.splitlines(True)[:half]), b"".join(TEXT.splitlines(True)[half:])
    skippable = bytes([0x5A, 0x2A, 0x4D, 0x18]) + (5).to_bytes(4, "little") + b"pzstd"
    for blob in (zstd_compress(head) + zstd_compress(tail), skippable + zstd_compress(TEXT), ZSTD.compress(TEXT)):
        path = tmp_path / "t.zst"
        path.write_bytes(blob)
        assert run(["predict", "-m", setup["model"], str(path), "-q"]).stdout == clean
        assert run(["predict", "-m", setup["model"], "-", "-q"], input=blob).stdout == clean


def test_a_failing_read_is_one_line_exit_66(setup, tmp_path):
    # Reading /proc/self/mem at offset 0 fails with EIO: a real read error
    # without a broken disk.
    for name in COMMANDS:
        out = str(tmp_path / "out")
        r = run(command(name, "/proc/self/mem", setup, out), exit_code=66)
        assert r.stderr == "hsvm: /proc/self/mem: read error: Input/output error (line 1)\n"
        assert not os.path.exists(out)
    # the other inputs opened the same way: predictions, reference, grid
    for args in (["eval", "--truth", setup["train"], "/proc/self/mem"],
                 ["eval", "--truth", setup["train"], setup["preds"], "--reference", "/proc/self/mem"],
                 ["eval", "--grid", "/proc/self/mem"]):
        run(args, exit_code=66, stdout="", stderr="hsvm: /proc/self/mem: read error: Input/output error (line 1)\n")


def test_a_failing_read_of_a_binary_input_is_one_line_exit_66(setup, tmp_path):
    # models, hash models, calibrations, codes, parts: their header is read
    # before they are mapped, and a read error there was a traceback
    s, bad, out = setup, "/proc/self/mem", str(tmp_path / "out")
    for args in (["info", bad], ["predict", "-m", bad, s["train"]],
                 ["predict", "-m", s["model"], "-H", bad, s["train"]],
                 ["predict", "-m", s["model"], "-C", bad, s["train"]],
                 ["predict", "-m", s["model"], "-H", s["hbm"], "--codes", bad, s["train"]],
                 ["hash-data", "-H", bad, s["train"], "-o", out], ["merge-models", bad, "-o", out],
                 ["calibrate", "-m", bad, s["train"], "-o", out]):
        run(args, exit_code=66, stdout="", stderr="hsvm: /proc/self/mem: read error: Input/output error\n")
        assert not os.path.exists(out)


@pytest.mark.parametrize("option", ["data", "-m", "-H", "-C", "--codes", "--truth", "predictions", "--reference"])
def test_a_directory_as_input_is_exit_66(setup, tmp_path, option):
    s, d = setup, str(tmp_path)
    args = {
        "data": ["predict", "-m", s["model"], d],
        "-m": ["predict", "-m", d, s["train"]],
        "-H": ["predict", "-m", s["model"], "-H", d, s["train"]],
        "-C": ["predict", "-m", s["model"], "-C", d, s["train"]],
        "--codes": ["predict", "-m", s["model"], "-H", s["hbm"], "--codes", d, s["train"]],
        "--truth": ["eval", "--truth", d, s["preds"]],
        "predictions": ["eval", "--truth", s["train"], d],
        "--reference": ["eval", "--truth", s["train"], s["preds"], "--reference", d],
    }[option]
    run(args, exit_code=66, stdout="", stderr="hsvm: %s: is a directory\n" % d)


@pytest.mark.parametrize("name", ["train-ovo", "hash-data", "calibrate"])
def test_a_directory_as_samples_is_exit_66_in_every_command(setup, tmp_path, name):
    d = str(tmp_path / "dir")
    os.mkdir(d)
    run(command(name, d, setup, str(tmp_path / "out")), exit_code=66, stderr="hsvm: %s: is a directory\n" % d)


def test_an_unreadable_input_is_exit_66(setup, tmp_path):
    """Root reads a mode-000 file regardless of its mode, so as root the
    command runs in a child process as user nobody (setpriv); as anyone else
    it runs in-process."""
    locked = tmp_path / "locked.svm"
    locked.write_bytes(TEXT)
    locked.chmod(0)
    model = tmp_path / "locked.hsvm"
    model.write_bytes(open(setup["model"], "rb").read())
    model.chmod(0)
    readable = tmp_path / "readable.hsvm"
    readable.write_bytes(open(setup["model"], "rb").read())
    train = write_text(tmp_path / "readable.svm", TEXT)
    cases = [(["predict", "-m", str(readable), str(locked)], locked),
             (["train-ovo", str(locked), "-o", str(tmp_path / "m")], locked),
             (["predict", "-m", str(model), train], model)]
    if os.geteuid() != 0:
        for args, path in cases:
            run(args, exit_code=66, stdout="", stderr="hsvm: %s: permission denied\n" % path)
        return
    # nobody needs to reach the files: open the test's directories to others
    for parent in [tmp_path] + list(tmp_path.parents):
        if str(parent) in ("/", "/tmp"):
            break
        parent.chmod(parent.stat().st_mode | 0o011)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: root bypasses file modes")
    for args, path in cases:
        child = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                                "hsvm_cli"] + args, capture_output=True, text=True, cwd=str(REPO), timeout=120)
        if child.returncode and "hsvm:" not in child.stderr:
            pytest.skip("user nobody cannot run hsvm from this checkout: %s" % child.stderr[-300:])
        assert (child.returncode, child.stdout, child.stderr) == (66, "", "hsvm: %s: permission denied\n" % path)


def test_values_beyond_float32_are_exit_65_without_warnings(setup, tmp_path):
    src = write_text(tmp_path / "big.svm", "1 1:1 2:0.5\n2 1:3.4028235e38\n1 2:1e39\n")
    out = str(tmp_path / "out")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning would now raise
        for name in COMMANDS:
            err = expect_one_line_65(name, src, setup, out)
            assert err == "hsvm: %s:3: value '1e39' for index 2 is beyond float32 range\n" % src


def test_an_index_the_reader_accepts_is_one_the_trainer_takes(tmp_path):
    src = write_text(tmp_path / "wide.svm", "1 1:1\n2 2147483647:1\n")
    run(["train-ovo", src, "-o", str(tmp_path / "m")], exit_code=65,
        stderr="hsvm: %s:2: index 2147483647 too large (largest supported is 2147483646)\n" % src)


@pytest.mark.parametrize("option, kind", [("-m", "model"), ("-H", "hash-model"), ("-C", "calibration"),
                                          ("--codes", "codes")])
def test_a_mapped_file_from_stdin_is_a_usage_error_naming_its_kind(setup, option, kind):
    args = ["predict", setup["train"], "-m", setup["model"], "-H", setup["hbm"]]
    args = args[:args.index(option) + 1] + ["-"] + args[args.index(option) + 2:] if option in args else \
        args + [option, "-"]
    run(args, exit_code=2, stdout="",
        stderr="hsvm predict: %s files cannot be read from stdin ('-'): give the file's name "
               "(see 'hsvm predict --help')\n" % kind)


@pytest.mark.parametrize("head", ["svm_type c_svc\nkernel_type linear\n", "solver_type L2R_L2LOSS_SVC_DUAL\n"])
def test_a_libsvm_or_liblinear_model_given_as_model_points_to_import_model(setup, tmp_path, head):
    foreign = write_text(tmp_path / "tool.model", head + "nr_class 2\n")
    run(["predict", setup["train"], "-m", foreign], exit_code=65, stdout="",
        stderr="hsvm: %s: a LIBSVM or LIBLINEAR model, not an hsvm file: convert it with `hsvm import-model %s -o "
               "MODEL.hsvm`\n" % (foreign, foreign))


def test_features_beyond_the_model_name_the_option_that_drops_them(setup, tmp_path):
    wide = write_text(tmp_path / "wide.svm", "1 1:1 2:0.5\n2 1:1 9:1\n")
    run(["predict", wide, "-m", setup["model"]], exit_code=65, stdout="",
        stderr="hsvm: %s:2: index 9 beyond 2 features (largest allowed index is 2; --extra-features "
               "ignore drops such features)\n" % wide)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_truncated_file_names_the_line_the_data_breaks_off_in(setup, tmp_path, kind):
    # The reader fails on a block read ahead of the lines it parsed; a second
    # pass over the file counts the lines decompressed before the failure.
    text = b"".join(b"%d 1:%.6f 2:%.6f\n" % (1 + i % 3, (i % 97) / 97.0, (i % 89) / 89.0) for i in range(20000))
    blob = COMPRESS[kind](text)
    path = str(tmp_path / ("cut." + kind))
    with open(path, "wb") as fh:
        fh.write(blob[:len(blob) * 3 // 5])
    complete = DECOMPRESS_PREFIX[kind](blob[:len(blob) * 3 // 5]).count(b"\n")
    assert complete < 20000 and (complete > 0 or kind == "bz2")    # bz2 decodes whole 900 kB blocks only
    for name in ("predict", "train-ovo"):
        err = expect_one_line_65(name, path, setup, str(tmp_path / "out"))
        m = decompression_message(path, kind).match(err)
        assert m and m.group(1) == "truncated" and int(m.group(3)) == complete + 1, (name, err)


def _prefix(decompressor):
    def decompress(data):
        d = decompressor()
        return d.decompress(data)
    return decompress


DECOMPRESS_PREFIX = {"gzip": _prefix(lambda: zlib.decompressobj(wbits=31)), "bz2": _prefix(bz2.BZ2Decompressor),
                     "xz": _prefix(lzma.LZMADecompressor), "zstd": _prefix(ZSTD.ZstdDecompressor)}


def test_a_parse_error_in_a_stream_that_fails_its_checksum_is_reported_as_corruption(setup, tmp_path):
    # A damaged deflate stream can decode to garbage that only the checksum at
    # the end exposes; the parse error the garbage causes first is reported as
    # the corruption it is, at the line where parsing failed.  Here: a bad
    # line 50 and a wrong CRC, in a file larger than the reader's 4 MB block.
    lines = [b"%d 1:%.6f 2:%.6f\n" % (1 + i % 3, (i % 97) / 97.0, (i % 89) / 89.0) for i in range(250000)]
    lines[49] = b"2 1:0.5 x:0.25\n"
    blob = bytearray(gzip.compress(b"".join(lines), mtime=0))
    blob[-8] ^= 0xFF                                   # the CRC-32 of the member
    path = str(tmp_path / "damaged.gz")
    with open(path, "wb") as fh:
        fh.write(blob)
    for name in ("predict", "train-ovo"):
        err = expect_one_line_65(name, path, setup, str(tmp_path / "out"))
        m = decompression_message(path, "gzip").match(err)
        assert m and m.group(1) == "corrupt" and int(m.group(3)) == 50, (name, err)
    # stdin cannot be read twice: it is decompressed on to its end, to the same finding
    piped = run(["predict", "-m", setup["model"], "-"], input=bytes(blob), exit_code=65)
    m = decompression_message("<stdin>", "gzip").match(piped.stderr)
    assert m and m.group(1) == "corrupt" and int(m.group(3)) == 50, piped.stderr


def test_zstd_data_that_needs_a_dictionary_says_so(setup, tmp_path):
    # sound data hsvm cannot read is not called corrupt
    samples = [b"%d 1:%.6f 2:%.6f\n" % (i % 3 + 1, i / 97.0, i / 89.0) * 20 for i in range(200)]
    dictionary = ZSTD.train_dict(samples, 4096)
    path = tmp_path / "d.zst"
    path.write_bytes(ZSTD.compress(TEXT, zstd_dict=dictionary))
    err = expect_one_line_65("predict", str(path), setup, str(tmp_path / "out"))
    assert re.match(r"^hsvm: %s: unreadable zstd data near byte \d+ \(line 1\): compressed with a dictionary, "
                    r"which hsvm does not take: decompress it first \(zstd -d -D DICT\)\n\Z" % re.escape(str(path)),
                    err), err


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("kind", ["gzip", "bz2", "xz", "zstd"])
def test_text_compressed_twice_says_so_in_every_command(setup, tmp_path, name, kind):
    # it had been told to open the file with the gzip module, or to give the path it gave
    path = tmp_path / "twice.svm"
    path.write_bytes(COMPRESS[kind](COMPRESS[kind](TEXT)))
    r = run(command(name, str(path), setup, str(tmp_path / "out")), exit_code=65)
    assert re.fullmatch(r"hsvm: %s:1: bad label '.*': %s-compressed data inside the decompressed input: it was "
                        r"compressed twice \(decompress it once, e\.g\. with \w+, and give that\)\n"
                        % (re.escape(str(path)), kind), r.stderr), r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("head", [b"\x7fELF\x02\x01\x01\x00\r\x00\x00", b"\x04\"M\x18\x64\x40\xa7\r\n\x00",
                                  b"]\x00\x00\x80\x00\xff\xff\r\xff"])
def test_binary_data_is_said_to_be_binary_not_old_mac_line_ends(setup, tmp_path, name, head):
    # an executable, lz4 and lzma-alone: CR bytes among them had drawn the advice to convert line ends
    path = tmp_path / "bin.dat"
    path.write_bytes(head + bytes(range(256)) * 4)
    r = run(command(name, str(path), setup, str(tmp_path / "out")), exit_code=65)
    assert r.stderr.endswith(": binary data, not svmlight text (hsvm reads plain text, and text compressed with gzip, "
                             "bzip2, xz or zstd)\n") and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("hsvm: %s:1: bad label '" % path)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("which, said", [("model", ": predict and hash-model take it as it is"), ("hbm", "")])
def test_an_hsvm_file_given_to_import_model_is_named_by_its_kind(setup, tmp_path, which, said):
    kind = {"model": "model", "hbm": "hash-model"}[which]
    run(["import-model", setup[which], "-o", tmp_path / "x.hsvm"], exit_code=65, stdout="",
        stderr="hsvm: %s: an hsvm %s file, not a LIBSVM or LIBLINEAR model%s\n" % (setup[which], kind, said))
    assert not (tmp_path / "x.hsvm").exists()


def test_a_kernel_libsvm_model_given_as_model_points_to_hash_svm_not_import_model(setup, tmp_path):
    # the advice to import it led to import-model's refusal of every non-linear kernel
    foreign = write_text(tmp_path / "rbf.model", "svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\n")
    said = ("a LIBSVM model with the rbf kernel, not an hsvm file: hsvm imports linear-kernel models only (for a "
            "kernel SVM hsvm trains Hash-SVM: kernel-hash, then train-ovo --codes, as the README's \"Kernel SVMs: "
            "Hash-SVM\" shows)")
    run(["predict", setup["train"], "-m", foreign], exit_code=65, stdout="", stderr="hsvm: %s: %s\n" % (foreign, said))
    run(["info", foreign], exit_code=65, stdout="", stderr="hsvm: %s: %s\n" % (foreign, said))


def test_hsvm_files_are_named_by_kind_whether_their_first_line_reads_as_text_or_not(digits_files, tmp_path):
    # import-model had named the kind only when the header's first "line" held non-ASCII bytes
    model, _, _ = digits_files
    files = [model]
    for bits in (64, 128, 256, 512, 1024):
        hbm = tmp_path / ("h%d.hbm" % bits)
        run(["hash-model", "-q", "-m", model, "--bits", str(bits), "-o", hbm])
        files.append(str(hbm))
    text_first = []
    for f in files:
        text_first.append(all(c < 128 for c in open(f, "rb").read().split(b"\n")[0]))
        kind = "model" if f == model else "hash-model"
        r = run(["import-model", f, "-o", tmp_path / "x.hsvm"], exit_code=65, stdout="")
        assert r.stderr.startswith("hsvm: %s: an hsvm %s file, not a LIBSVM or LIBLINEAR model" % (f, kind)), r.stderr
    assert any(text_first), text_first      # the text path was taken (the other: test_an_hsvm_file_given_...)


def test_compressed_data_after_plain_lines_is_not_said_to_be_compressed_twice(setup, tmp_path):
    # nothing was decompressed: a compressed file joined to a plain one
    path = tmp_path / "joined.svm"
    path.write_bytes(TEXT + gzip.compress(TEXT, mtime=0))
    r = run(command("predict", str(path), setup, str(tmp_path / "out")), exit_code=65)
    assert ": gzip-compressed data inside the text\n" in r.stderr and "twice" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


@pytest.mark.parametrize("encoding", ["UTF-16LE", "UTF-16BE"])
def test_utf16_text_without_a_byte_order_mark_is_named_not_called_binary(setup, tmp_path, encoding):
    path = tmp_path / "u.svm"
    path.write_bytes(TEXT.decode().encode(encoding.lower().replace("utf-16", "utf-16-")))
    r = run(command("predict", str(path), setup, str(tmp_path / "out")), exit_code=65)
    assert r.stderr.endswith(": the file looks like %s text (without a byte-order mark), and svmlight is ASCII "
                             "(convert it, e.g. iconv -f %s -t UTF-8)\n" % (encoding, encoding)), r.stderr


def test_a_file_starting_like_a_liblinear_model_but_not_one_is_judged_as_any_file(setup, tmp_path):
    # "solver_t" passed the first check and the message was "None"
    odd = write_text(tmp_path / "st.model", "solver_tX 1\n")
    r = run(["predict", setup["train"], "-m", odd], exit_code=65, stdout="")
    assert r.stderr == "hsvm: %s: not an hsvm model file (bad header length)\n" % odd


@pytest.mark.parametrize("value", ["+-2", "--2", "1_0", "\u0663"])
def test_threads_that_are_not_decimal_integers_get_the_options_own_words(setup, tmp_path, value):
    r = run(command("predict", setup["train"], setup, str(tmp_path / "out")) + ["--threads", value], exit_code=2)
    assert "threads must be a positive integer, or 0 or 'auto' for the default" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1
