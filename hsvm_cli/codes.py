"""Files of sample codes written by ``hash-data`` (``hsvm-codes`` containers).

Written in one pass with bounded memory: codes and labels stream to temporary
files and are assembled behind the header once their count is known."""
import os
import shutil
import tempfile

import numpy as np

from .container import read_container, write_container
from .errors import ModelFormatError, ModelMismatchError

CODES_KIND = "hsvm-codes"
CODES_VERSION = 1


def projection_identity(h, bits):
    """What determines a sample's code besides the sample itself."""
    return {"generator": h.generator, "seed": int(h.seed), "n_features": int(h.n_features),
            "normalize": h.normalize, "bits": int(bits)}


class CodesWriter:
    """Append blocks of codes and labels; ``close`` writes the container."""

    def __init__(self, path, *, words, meta):
        self.path = path
        self.words = int(words)
        self.meta = meta
        self.n = 0
        self._tmpdir = tempfile.mkdtemp(prefix="hsvm-codes-")
        self._codes = open(os.path.join(self._tmpdir, "codes"), "wb")
        self._labels = open(os.path.join(self._tmpdir, "labels"), "wb")

    def write(self, codes, labels):
        codes = np.ascontiguousarray(codes, dtype="<u8")
        assert codes.shape[1] == self.words
        self._codes.write(codes.tobytes())
        self._labels.write(np.ascontiguousarray(labels, dtype="<i8").tobytes())
        self.n += codes.shape[0]

    def close(self):
        try:
            self._codes.close()
            self._labels.close()
            n = self.n
            codes = np.memmap(self._codes.name, dtype="<u8", mode="r", shape=(n, self.words)) if n else \
                np.zeros((0, self.words), dtype="<u8")
            labels = np.memmap(self._labels.name, dtype="<i8", mode="r", shape=(n,)) if n else \
                np.zeros(0, dtype="<i8")
            write_container(self.path, {"codes": codes, "labels": labels},
                            kind=CODES_KIND, version=CODES_VERSION, meta=self.meta)
        finally:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def abort(self):
        for fh in (self._codes, self._labels):
            fh.close()
        shutil.rmtree(self._tmpdir, ignore_errors=True)


class Codes:
    def __init__(self, codes, labels, meta, path):
        self.codes = codes
        self.labels = labels
        self.meta = meta
        self.path = path

    @property
    def bits(self):
        return int(self.meta["bits"])

    def check_compatible(self, h, bits):
        """Refuse codes made with another projection or too few bits."""
        want = projection_identity(h, bits)
        for key in ("generator", "seed", "n_features", "normalize"):
            if self.meta.get(key) != want[key]:
                raise ModelMismatchError("%s: codes were made with %s=%r, the hash model uses %r"
                                         % (self.path, key, self.meta.get(key), want[key]))
        if self.bits < bits:
            raise ModelMismatchError("%s: codes have %d bits, %d requested" % (self.path, self.bits, bits))


def read_codes(path):
    c = read_container(path, kind=CODES_KIND, versions={CODES_VERSION})
    codes = c.arrays.get("codes")
    labels = c.arrays.get("labels")
    if codes is None or labels is None:
        raise ModelFormatError(c.path, "missing codes or labels")
    if codes.dtype != np.uint64 or labels.dtype != np.int64 or codes.ndim != 2 \
            or labels.shape != (codes.shape[0],):
        raise ModelFormatError(c.path, "codes and labels have inconsistent shapes or types")
    try:
        bits = int(c.meta["bits"])
    except (KeyError, ValueError, TypeError):
        raise ModelFormatError(c.path, "metadata lacks bits") from None
    if bits != 64 * codes.shape[1]:
        raise ModelFormatError(c.path, "bits %d disagree with %d words per code" % (bits, codes.shape[1]))
    return Codes(codes, labels, c.meta, c.path)


def write_codes_svm(fh, codes, labels, bits):
    """The bits of each code as +1/-1 features 1..bits in svmlight text."""
    signs = np.unpackbits(np.ascontiguousarray(codes, dtype="<u8").view(np.uint8), axis=1,
                          bitorder="little")[:, :bits]
    idx = [b"%d:" % (j + 1) for j in range(bits)]
    out = []
    for lab, row in zip(labels.tolist(), signs):
        vals = (b"1", b"-1")
        out.append(b"%d " % lab + b" ".join(idx[j] + vals[0 if v else 1] for j, v in enumerate(row.tolist())) + b"\n")
    fh.write(b"".join(out))
