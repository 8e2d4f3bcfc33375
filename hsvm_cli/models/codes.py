"""Files of sample codes written by ``hash-data`` (``hsvm-codes`` containers).

Written in one pass with bounded memory: codes and labels stream to temporary
files and are assembled behind the header once their count is known.

Codes of a Gaussian projection or of a kernel hash are format version 1;
codes of any other projection (a circulant hash model, a learned circulant
hash) are version 2, which a reader that only knows version 1 refuses rather
than taking them for Gaussian codes of the same seed."""
import contextlib
import os
import shutil
import tempfile

import numpy as np

from ..errors import DataError, ModelFormatError, ModelMismatchError, OptionError, OutputError
from ..hashing.projection import GAUSSIAN_LAYOUT
from ..io.container import read_container, write_container
from ..io.files import atomic_output, refuse_overwriting_input
from ..io.svmlight import MAX_FEATURES, iter_svmlight
from ..preprocess import prepare
from ..support.native import lib, ptr
from .metadata import meta_int, meta_str
from .provenance import trained_zero_based

CODES_KIND = "hsvm-codes"
CODES_VERSION = 1
#: The version of codes whose projection is not Gaussian.
CODES_VERSION_PROJECTIONS = 2


# Sample fingerprints: what a codes file says of each sample it holds, so
# that `predict --codes TEST` can tell codes of other samples -- another
# file of the same labels (unlabelled data: all 0), or this file reordered --
# which it would otherwise filter with, silently (the labels beside the codes
# tell files apart only when they differ).  A 64-bit mix of each feature's
# (index, float32 value), summed over the row's nonzero features: independent
# of how the row is stored (explicit zeros, CSR or dense), exact integer
# arithmetic, the same on every machine.  Not a cryptographic digest: it
# tells mistakes apart, not forgeries.
FINGERPRINTS = "sample_fingerprints"


def sample_fingerprints(X):
    """uint64 [n]: the fingerprint of each row of ``X`` (a CSR matrix or
    :class:`~hsvm_cli.support.lazy_sparse.CsrArrays` of raw samples, as the
    svmlight reader gives them; or a dense array), from its nonzero features'
    0-based indices and float32 values: one pass of native/fingerprint.c
    (docs/formats.md defines the sums)."""
    if hasattr(X, "indptr"):
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        values = np.ascontiguousarray(X.data, dtype=np.float32)
    else:
        # a dense array as CSR rows of its nonzeros (the C pass skips zeros anyway)
        dense = np.asarray(X, dtype=np.float32)
        rows, cols = np.nonzero(dense)
        indptr = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
        indices = np.ascontiguousarray(cols, dtype=np.int32)
        values = np.ascontiguousarray(dense[rows, cols])
    out = np.empty(X.shape[0], dtype=np.uint64)
    if X.shape[0]:
        lib.hsvm_row_fingerprints(ptr("int64_t *", indptr), X.shape[0], ptr("int32_t *", indices),
                                  ptr("float *", values), ptr("uint64_t *", out))
    return out


def codes_version(meta):
    """The format version of codes with metadata ``meta``."""
    return CODES_VERSION if meta.get("projection_kind", "gaussian") == "gaussian" else CODES_VERSION_PROJECTIONS


class CodesWriter:
    """Append blocks of codes and labels; ``close`` writes the container."""

    def __init__(self, path, *, words, meta):
        self.path = path
        self.words = int(words)
        self.meta = meta
        self.n = 0
        self._tmpdir = None
        with self._staging():
            self._tmpdir = tempfile.mkdtemp(prefix="hsvm-codes-")
            self._codes = open(os.path.join(self._tmpdir, "codes"), "wb")
            self._labels = open(os.path.join(self._tmpdir, "labels"), "wb")
            self._fingerprints = open(os.path.join(self._tmpdir, "fingerprints"), "wb")

    @contextlib.contextmanager
    def _staging(self):
        # The codes are staged in the temporary directory (their count is
        # known at the end): a full one or a file size limit is the output's
        # failure, one line with exit 74, not a traceback.
        try:
            yield
        except OSError as exc:
            if self._tmpdir is not None:
                self.abort()
            raise OutputError("%s: cannot write: %s (staging the codes in %s)"
                              % (self.path, exc.strerror or exc, tempfile.gettempdir())) from None

    def write(self, codes, labels, fingerprints):
        codes = np.ascontiguousarray(codes, dtype="<u8")
        assert codes.shape[1] == self.words and fingerprints.shape == (codes.shape[0],)
        with self._staging():
            self._codes.write(codes.tobytes())
            self._labels.write(np.ascontiguousarray(labels, dtype="<i8").tobytes())
            self._fingerprints.write(np.ascontiguousarray(fingerprints, dtype="<u8").tobytes())
        self.n += codes.shape[0]

    def close(self):
        try:
            with self._staging():
                self._codes.close()
                self._labels.close()
                self._fingerprints.close()
            n = self.n
            codes = np.memmap(self._codes.name, dtype="<u8", mode="r", shape=(n, self.words)) if n else \
                np.zeros((0, self.words), dtype="<u8")
            labels = np.memmap(self._labels.name, dtype="<i8", mode="r", shape=(n,)) if n else \
                np.zeros(0, dtype="<i8")
            fingerprints = np.memmap(self._fingerprints.name, dtype="<u8", mode="r", shape=(n,)) if n else \
                np.zeros(0, dtype="<u8")
            write_container(self.path, {"codes": codes, "labels": labels, FINGERPRINTS: fingerprints},
                            kind=CODES_KIND, version=codes_version(self.meta), meta=self.meta)
        finally:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def abort(self):
        for fh in (getattr(self, "_codes", None), getattr(self, "_labels", None),
                   getattr(self, "_fingerprints", None)):
            if fh is not None:
                try:
                    fh.close()
                except OSError:
                    pass
        shutil.rmtree(self._tmpdir, ignore_errors=True)


class Codes:
    """A codes file: ``codes`` uint64 [n, bits/64] (memory-mapped), ``labels``
    int64 [n], and the metadata naming the projection that made them."""

    def __init__(self, codes, labels, meta, path, fingerprints=None):
        self.codes = codes
        self.labels = labels
        self.meta = meta
        self.path = path
        # uint64 [n] (sample_fingerprints) or None: files written before them
        self.fingerprints = fingerprints

    @property
    def bits(self):
        return int(self.meta["bits"])

    @property
    def kernel_hash_sha256(self):
        """The digest of the kernel hash that made these codes (None: codes of
        a hash model's projection)."""
        return self.meta.get("kernel_hash_sha256")

    @property
    def projection_kind(self):
        """``gaussian`` (also for files that do not say: hsvm 0.1),
        ``circulant`` or ``learned-circulant``."""
        return self.meta.get("projection_kind", "gaussian")

    def check_compatible(self, h, bits):
        """Refuse codes made with another projection or too few bits."""
        if self.kernel_hash_sha256 is not None:
            raise ModelMismatchError("%s: kernel hash codes (the features of a model trained on codes), not codes "
                                     "of the hash model's projection" % self.path)
        if self.meta.get("circulant_hash_sha256") is not None:
            raise ModelMismatchError("%s: codes of a learned circulant hash (fit-circulant), not codes of the hash "
                                     "model's projection" % self.path)
        want = h.identity(bits)
        # A Gaussian hash model's identity leaves the projection out, as hsvm
        # 0.1's codes files do: absent means Gaussian on both sides.
        want.setdefault("projection_kind", "gaussian")
        want.setdefault("projection_layout", GAUSSIAN_LAYOUT)
        got = dict(self.meta)
        got.setdefault("projection_kind", "gaussian")
        if got["projection_kind"] == "gaussian":
            got.setdefault("projection_layout", GAUSSIAN_LAYOUT)
        for key in ("projection_kind", "projection_layout", "generator", "seed", "n_features", "normalize"):
            if got.get(key) != want[key]:
                raise ModelMismatchError("%s: codes were made with %s=%r, the hash model uses %r"
                                         % (self.path, key, got.get(key), want[key]))
        if self.bits < bits:
            raise ModelMismatchError("%s: codes have %d bits, %d requested" % (self.path, self.bits, bits))


def _looks_like_svmlight(path):
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    first = head.split(None, 1)[0] if head.strip() else b""
    return bool(first) and first.lstrip(b"+-").replace(b".", b"", 1).isdigit() and b":" in head


def read_codes(path):
    """Read and validate an ``hsvm-codes`` file."""
    try:
        c = read_container(path, kind=CODES_KIND, versions={CODES_VERSION, CODES_VERSION_PROJECTIONS})
    except ModelFormatError as exc:
        if _looks_like_svmlight(path):
            raise ModelFormatError(exc.source, "%s: svmlight text, where codes files are hash-data's binary "
                                   "output (--format codes, the default); codes as svmlight features (--format "
                                   "svm) are data: give them as TRAIN or TEST" % exc.reason) from None
        raise
    codes = c.arrays.get("codes")
    labels = c.arrays.get("labels")
    if codes is None or labels is None:
        raise ModelFormatError(c.path, "missing codes or labels")
    if codes.dtype != np.uint64 or labels.dtype != np.int64 or codes.ndim != 2 \
            or labels.shape != (codes.shape[0],):
        raise ModelFormatError(c.path, "codes and labels have inconsistent shapes or types")
    bits = meta_int(c, "bits", 64, 1 << 20)
    if bits != 64 * codes.shape[1]:
        raise ModelFormatError(c.path, "bits %d disagree with %d words per code" % (bits, codes.shape[1]))
    meta_str(c, "generator")
    meta_int(c, "seed", -(1 << 63), (1 << 64) - 1)
    meta_int(c, "n_features", 1, MAX_FEATURES)
    meta_str(c, "normalize")
    kind = meta_str(c, "projection_kind", default="gaussian")
    meta_str(c, "projection_layout", default="")
    if (kind == "gaussian") != (c.version == CODES_VERSION):
        raise ModelFormatError(c.path, "codes of a %s projection in a version %d codes file" % (kind, c.version))
    fingerprints = c.arrays.get(FINGERPRINTS)
    if fingerprints is not None and (fingerprints.dtype != np.uint64 or fingerprints.shape != labels.shape):
        raise ModelFormatError(c.path, "%s must be U64 [%d]" % (FINGERPRINTS, labels.shape[0]))
    return Codes(codes, labels, c.meta, c.path, fingerprints)


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


def hash_data(h, source, output, *, bits=None, fmt="codes", zero_based=None, extra_features="error",
              chunk_rows=16384, shard=None, progress=None):
    """What ``hsvm hash-data`` does: the codes of the samples of the svmlight
    file ``source`` at ``bits`` (default: all of the hash's bits), written to
    ``output`` as an ``hsvm-codes`` file (``fmt="codes"``) or as +1/-1
    features in svmlight text (``fmt="svm"``).  ``h``: a hash model
    (:class:`~hsvm_cli.models.hashed.HashModel`: samples normalised as its
    exact model was, then sign projections), a kernel hash
    (:class:`~hsvm_cli.hashing.krsh.KernelHash`: raw samples, kernel subspace
    coordinates, then sign projections) or a learned circulant hash
    (:class:`~hsvm_cli.models.circulant_hash.LearnedCirculantHash`: samples
    normalised as it records, then its bits).  ``shard``: only shard ``"i/N"``
    of the plain file ``source`` (io/shard.py): the shards' svm outputs
    concatenated are the whole file's, and their codes files hold the whole
    file's codes in shard order.  ``zero_based``: how ``source`` numbers its
    features (default: as the file ``h`` was fitted on, or its model's,
    did).  ``progress``: called as ``progress(rows done, None)`` after each
    chunk.  Returns the number of samples."""
    if fmt not in ("codes", "svm"):
        raise ValueError("fmt must be 'codes' or 'svm', not %r" % (fmt,))
    if hasattr(output, "write"):
        # written atomically (a temporary name, then a rename): a path only
        raise TypeError("output must be a path or '-' (the file is written under a temporary name, then "
                        "renamed), not %s" % type(output).__name__)
    from ..hashing.krsh import KernelHash
    from .circulant_hash import LearnedCirculantHash
    from .hashed import HashModel
    if not isinstance(h, (HashModel, KernelHash, LearnedCirculantHash)):
        raise TypeError("hash_data's h must be a hash model, a kernel hash or a learned circulant hash, not %s"
                        % type(h).__name__)
    refuse_overwriting_input(output, [source, getattr(h, "path", None)])
    if zero_based is None:
        zero_based = bool(getattr(h, "zero_based", False)) or trained_zero_based(h)
    if isinstance(h, KernelHash):
        bits = _checked_bits(h, bits)
        meta = h.codes_meta(bits)
        encode = _kernel_encoder(h, bits, source, zero_based)
    elif isinstance(h, LearnedCirculantHash):
        bits = _checked_bits(h, bits)
        meta = h.codes_meta(bits)

        def encode(chunk, start):
            return h.codes(chunk.X, bits)
    else:
        if getattr(h, "model_codes", None):
            raise DataError("%s hashes a model trained on kernel hash codes: its samples are those codes, not "
                            "svmlight rows (predict takes them with --codes, or hashes raw rows with "
                            "--kernel-hash KERNEL.khm)" % (h.path or "the hash model"))
        encoder = h.encoder(bits)
        bits = encoder.bits
        meta = h.identity(bits)
        meta["hash_model_sha256"] = h.model_sha256

        def encode(chunk, start):
            return encoder.codes(prepare(h.normalize, chunk.X))
    # A hash model's samples only go through prepare() and the fingerprints,
    # both of which round them to float32 first: read as float32 (the same
    # bits, half the memory), in the reader's scipy-free chunks
    # (support/lazy_sparse.py), which spare dense input scipy's import.
    projected = not isinstance(h, (KernelHash, LearnedCirculantHash))
    chunks = iter_svmlight(source, zero_based=zero_based, n_features=h.n_features,
                           extra_features=extra_features, chunk_rows=chunk_rows, shard=shard,
                           dtype=np.float32 if projected else np.float64, _csr_arrays=projected)
    n = 0
    if fmt == "svm":
        with atomic_output(output, "wb", text=True) as fh:
            for chunk in chunks:
                write_codes_svm(fh, encode(chunk, n), chunk.y, bits)
                n += chunk.y.shape[0]
                if progress is not None:
                    progress(n, None)
        return n
    writer = CodesWriter(output, words=bits // 64, meta=meta)
    try:
        for chunk in chunks:
            # fingerprints first: a hash model's encoder may prepare the chunk in place
            fingerprints = sample_fingerprints(chunk.X)
            writer.write(encode(chunk, writer.n), chunk.y, fingerprints)
            if progress is not None:
                progress(writer.n, None)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return writer.n


def _checked_bits(h, bits):
    try:
        return h.check_bits(bits)
    except ValueError as exc:
        raise OptionError(getattr(exc, "cli_message", str(exc)), python=str(exc)) from None


def _kernel_encoder(h, bits, source, zero_based):
    from ..hashing.krsh import NegativeFeatureError, SubspaceOverflowError
    from ..train.kernel_hash import negative_feature_error, overflow_error

    def encode(chunk, start):
        try:
            return h.codes(chunk.X, bits)
        except NegativeFeatureError as exc:
            raise negative_feature_error(exc, source, zero_based=zero_based, start_line=chunk.first_line) from None
        except SubspaceOverflowError as exc:
            raise overflow_error(exc, source, start_line=chunk.first_line) from None
    return encode
