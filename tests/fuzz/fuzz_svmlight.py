"""Coverage-guided fuzzing of the svmlight reader with atheris (libFuzzer).

    make fuzz                    # FUZZ_SECONDS=60 by default
    .venv/bin/python tests/fuzz/fuzz_svmlight.py WORK_DIR tests/fuzz/corpus/svmlight \\
        -max_total_time=70 -artifact_prefix=build/fuzz/   # FUZZ_SECONDS=60 in the environment

The first byte of an input picks what the rest is (so corpus files stay
readable: byte 0x00 followed by an svmlight file is a plain input):

0. raw bytes, read as an svmlight file;
1. choices that drive the grammar of tests/oracles/svmlight_grammar.py (and
   then how the parser reads values: each of its ways);
2. a compressed file: a grammar-built text the reference accepts, gzip, bz2
   or xz compressed, then truncated or bit-flipped where the input says;
3. a grammar-built text handed to the reader in input-chosen pieces, block
   sizes and chunk sizes;
4. a grammar-built text in a file whose first lines an early parse
   (io/early_parse.py) reads in input-chosen blocks up to an input-chosen
   point, before predict's reader reads it.

Invariants (the same as tests/io/test_svmlight_properties.py): the reader
returns exactly the matrix of the pure-Python reference reader
(tests/oracles/svmlight_ref.py) or raises InputFormatError naming the line
the reference rejects; compressed input that the standard library cannot
decompress raises CorruptInputError (or, when the damage produced bad text
before the check that catches it, InputFormatError on a line that exists);
nothing else is ever raised.  A violation raises, which libFuzzer records as a
crash (its input saved under -artifact_prefix).

At the end (FUZZ_SECONDS, checked by the harness itself so that it can write
its counts) the counts per category and outcome go to FUZZ_STATS (default
build/fuzz/stats.json) and to stdout.
"""
import bz2
import gzip
import io
import json
import lzma
import os
import sys
import time
import zlib
from collections import Counter

import atheris
import numpy as np
import scipy.sparse as sp

try:                                        # Python 3.14's module, or its backport
    from compression import zstd
except ImportError:
    from backports import zstd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/, for the oracles

# Coverage feedback from hsvm's Python code only (the C parser is not
# instrumented: that would need the library built with clang's
# -fsanitize=fuzzer-no-link); numpy and scipy are imported before, as is.
with atheris.instrument_imports(include=["hsvm_cli"]):
    from hsvm_cli.errors import CorruptInputError, InputFormatError
    from hsvm_cli.io import early_parse
    from hsvm_cli.io.files import open_input
    from hsvm_cli.io.svmlight import iter_svmlight, load_svmlight

from oracles import svmlight_grammar, svmlight_ref  # noqa: E402

CATEGORIES = ("raw", "grammar", "compressed", "split", "early")
COMPRESS = {0: ("gzip", gzip.compress, gzip.decompress), 1: ("bz2", bz2.compress, bz2.decompress),
            2: ("xz", lzma.compress, lzma.decompress), 3: ("zstd", zstd.compress, zstd.decompress)}
# (kind, magic); a zstd stream may also open with a skippable frame (16 magics)
MAGIC = [("gzip", b"\x1f\x8b"), ("bz2", b"BZh"), ("xz", b"\xfd7zXZ\x00"), ("zstd", b"\x28\xb5\x2f\xfd")] + \
    [("zstd", bytes([0x50 + i]) + b"\x2a\x4d\x18") for i in range(16)]

STATS = Counter()
SECONDS = float(os.environ.get("FUZZ_SECONDS", "60"))
STATS_PATH = os.environ.get("FUZZ_STATS", os.path.join("build", "fuzz", "stats.json"))
START = time.monotonic()


class WrongAccept(AssertionError):
    pass


class WrongResult(AssertionError):
    pass


class Pieces(io.RawIOBase):
    def __init__(self, data, sizes):
        self.data, self.sizes = data, [s for s in sizes if s > 0]

    def readable(self):
        return True

    def read(self, n=-1):
        size = self.sizes.pop(0) if self.sizes else len(self.data)
        out, self.data = self.data[:size], self.data[size:]
        return out


def reference(data):
    try:
        return svmlight_ref.read(data), None
    except svmlight_ref.RefError as exc:
        return None, exc


def compare(data, read):
    """Runs ``read()`` (returning X, y) against the reference on ``data``;
    returns "accepted" or "rejected"."""
    ref, ref_error = reference(data)
    try:
        X, y = read()
    except InputFormatError as err:
        if ref_error is None:
            raise WrongResult("rejected what the reference accepts: %s" % err)
        if err.line != ref_error.line or not str(err).isprintable():
            raise WrongResult("%s, reference: %s" % (err, ref_error))
        return "rejected"
    if ref_error is not None:
        raise WrongAccept("accepted what the reference rejects: %s" % ref_error)
    if not svmlight_ref.same_matrix(ref, X, y):
        raise WrongResult("matrix differs from the reference")
    return "accepted"


def grammar_text(fdp, bad_rate):
    def choose(options):
        return options[fdp.ConsumeIntInRange(0, len(options) - 1)]

    return svmlight_grammar.build(choose, fdp.ConsumeIntInRange, bad_rate=bad_rate)


def one_raw(payload):
    return compare(payload, lambda: load_svmlight(io.BytesIO(payload), name="f"))


def one_grammar(payload):
    fdp = atheris.FuzzedDataProvider(payload)
    text = grammar_text(fdp, bad_rate=fdp.ConsumeIntInRange(0, 10))
    # What is left picks how values are read (native/svmparse.c, feature_mode):
    # chosen as usual, one of the four ways forced, or chosen after one value.
    pick = fdp.ConsumeIntInRange(0, 5)
    kw = {} if pick == 0 else {"_mode_sample": 1} if pick == 5 else {"_value_mode": pick - 1}
    return compare(text, lambda: load_svmlight(io.BytesIO(text), name="f", **kw))


def one_compressed(payload):
    fdp = atheris.FuzzedDataProvider(payload)
    kind, compress, decompress = COMPRESS[fdp.ConsumeIntInRange(0, 3)]
    cut = fdp.ConsumeIntInRange(0, 1 << 16)
    flips = [(fdp.ConsumeIntInRange(0, 1 << 16), fdp.ConsumeIntInRange(0, 7))
             for _ in range(fdp.ConsumeIntInRange(0, 3))]
    text = grammar_text(fdp, bad_rate=0)
    if reference(text)[1] is not None:
        return "skipped"
    blob = bytearray(compress(text))
    if cut:
        del blob[len(blob) - cut % len(blob):]
    for pos, bit in flips:
        if blob:
            blob[pos % len(blob)] ^= 1 << bit
    blob = bytes(blob)
    # what the bytes now are, by their first bytes (a flip may have changed that)
    found = [k for k, m in MAGIC if blob.startswith(m)]
    if not found:
        if blob and any(m.startswith(blob) for _, m in MAGIC):
            try:
                load_svmlight(open_input(io.BytesIO(blob)), name="f")
            except CorruptInputError as err:
                if not err.truncated or err.offset != len(blob):
                    raise WrongResult(str(err))
                return "rejected"
            raise WrongAccept("read the first %d bytes of a magic number" % len(blob))
        # no longer recognised as compressed: plain (binary) text
        return compare(blob, lambda: load_svmlight(open_input(io.BytesIO(blob)), name="f"))
    kind = found[0]
    decompress = {k: d for k, _, d in COMPRESS.values()}[kind]
    try:
        content = decompress(blob)
    except Exception:  # the oracle's own ways of refusing (bz2.decompress: ValueError when cut short)
        content = None
    if content is not None:
        return compare(content, lambda: load_svmlight(open_input(io.BytesIO(blob)), name="f"))
    try:
        load_svmlight(open_input(io.BytesIO(blob)), name="f")
    except CorruptInputError as err:
        if err.kind != kind or not 0 <= err.offset <= len(blob):
            raise WrongResult(str(err))
        return "rejected"
    except InputFormatError as err:
        # bytes changed before the check that catches the change (a CRC at
        # the end): the line must be among those the data yields
        if not 1 <= err.line <= svmlight_ref.count_lines(partial(kind, blob)) + 1:
            raise WrongResult(str(err))
        return "rejected"
    raise WrongAccept("read %s data the standard library refuses" % kind)


def partial(kind, blob):
    """What a streaming decompressor yields from ``blob`` before it fails."""
    d = {"gzip": lambda: zlib.decompressobj(wbits=31), "bz2": bz2.BZ2Decompressor,
         "xz": lzma.LZMADecompressor}[kind]()
    out = []
    for i in range(0, len(blob), 64):
        try:
            out.append(d.decompress(blob[i:i + 64]))
        except Exception:
            break
        if getattr(d, "eof", False):
            break
    return b"".join(out)


def one_split(payload):
    fdp = atheris.FuzzedDataProvider(payload)
    chunk_rows = fdp.ConsumeIntInRange(1, 5)
    block = fdp.ConsumeIntInRange(1, 300)
    sizes = [fdp.ConsumeIntInRange(0, 40) for _ in range(fdp.ConsumeIntInRange(0, 10))]
    text = grammar_text(fdp, bad_rate=fdp.ConsumeIntInRange(0, 3))
    # predict's reader: the model's width known, chunks without scipy, rows
    # storing every column kept without indices, parts on other threads
    kw = {}
    if fdp.ConsumeBool():
        ref, _ = reference(text)
        if ref is not None:
            kw = {"n_features": ref.width, "_csr_arrays": True, "threads": fdp.ConsumeIntInRange(1, 3),
                  "_part_bytes": fdp.ConsumeIntInRange(1, 200)}

    def read():
        chunks = list(iter_svmlight(Pieces(text, sizes), chunk_rows=chunk_rows, _block_size=block, **kw))
        chunks = [c if not kw else type(c)(c.X.to_scipy(), c.y, c.first_line) for c in chunks]
        if any(c.X.shape[0] > chunk_rows for c in chunks):
            raise WrongResult("a chunk longer than chunk_rows")
        if not chunks:
            return sp.csr_matrix((0, 0)), np.zeros(0, dtype=np.int64)
        width = max(c.X.shape[1] for c in chunks)
        X = sp.vstack([sp.csr_matrix(c.X, shape=(c.X.shape[0], width)) for c in chunks], format="csr")
        return X, np.concatenate([c.y for c in chunks])

    return compare(text, read)


_claim = early_parse.claim


def _counted_claim(*args, **kwargs):
    rows = _claim(*args, **kwargs)
    STATS["early_adopted" if rows is not None else "early_left"] += 1
    return rows


early_parse.claim = _counted_claim
EARLY_PATH = os.path.join(os.environ.get("TMPDIR", "/tmp"), "hsvm-fuzz-early-%d.svm" % os.getpid())


def one_early(payload):
    fdp = atheris.FuzzedDataProvider(payload)
    chunk_rows = fdp.ConsumeIntInRange(1, 5)
    early_block = fdp.ConsumeIntInRange(1, 300)
    max_text = fdp.ConsumeIntInRange(1, 2000)
    wait = fdp.ConsumeBool()
    text = grammar_text(fdp, bad_rate=fdp.ConsumeIntInRange(0, 3))
    ref, _ = reference(text)
    width = ref.width if ref is not None and fdp.ConsumeBool() else None
    with open(EARLY_PATH, "wb") as fh:
        fh.write(text)
    early_parse.start(EARLY_PATH, zero_based=False, chunk_rows=chunk_rows, _max_text=max_text, _block=early_block)
    if wait:
        early_parse._finish()

    def read():
        # predict's reader: float32 values, chunks without scipy
        chunks = list(iter_svmlight(EARLY_PATH, chunk_rows=chunk_rows, n_features=width, dtype=np.float32,
                                    _csr_arrays=True, threads=fdp.ConsumeIntInRange(1, 2)))
        if early_parse.pending():
            raise WrongResult("the reader left the early parse pending")
        if any(c.X.shape[0] > chunk_rows for c in chunks):
            raise WrongResult("a chunk longer than chunk_rows")
        if not chunks:
            return sp.csr_matrix((0, 0)), np.zeros(0, dtype=np.int64)
        chunks = [type(c)(c.X.to_scipy(), c.y, c.first_line) for c in chunks]
        w = max(c.X.shape[1] for c in chunks)
        X = sp.vstack([sp.csr_matrix(c.X, shape=(c.X.shape[0], w)) for c in chunks], format="csr")
        return X, np.concatenate([c.y for c in chunks])

    return compare(text, read)


HANDLERS = (one_raw, one_grammar, one_compressed, one_split, one_early)


def write_stats():
    stats = {"seconds": round(time.monotonic() - START, 1), "iterations": STATS["iterations"],
             "per_category": {c: STATS["in:" + c] for c in CATEGORIES},
             "accepted": STATS["accepted"], "clean_rejects": STATS["rejected"], "skipped": STATS["skipped"],
             "crashes": STATS["crash"], "wrong_accepts": STATS["wrong_accept"], "wrong_results": STATS["wrong"],
             "early_parses_adopted": STATS["early_adopted"], "early_parses_left": STATS["early_left"]}
    try:
        os.unlink(EARLY_PATH)
    except OSError:
        pass
    os.makedirs(os.path.dirname(STATS_PATH) or ".", exist_ok=True)
    with open(STATS_PATH, "w") as fh:
        json.dump(stats, fh, indent=1)
    print(json.dumps(stats), flush=True)


def TestOneInput(data):
    if time.monotonic() - START > SECONDS:
        write_stats()
        os._exit(0)
    STATS["iterations"] += 1
    if not data:
        return
    category = data[0] % len(CATEGORIES)
    STATS["in:" + CATEGORIES[category]] += 1
    try:
        STATS[HANDLERS[category](data[1:])] += 1
    except WrongAccept:
        STATS["wrong_accept"] += 1
        write_stats()
        raise
    except WrongResult:
        STATS["wrong"] += 1
        write_stats()
        raise
    except Exception:
        STATS["crash"] += 1
        write_stats()
        raise


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
