"""Versioned, memory-mappable binary container in the safetensors layout, with
checksums.

Layout (see docs/formats.md): an 8-byte little-endian header length N, N bytes of
UTF-8 JSON (padded with spaces so the data starts on a 64-byte boundary), then the
arrays back to back, little-endian, C order.  The JSON maps each array name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the data
start) and holds ``__metadata__``: string keys to string values, among them
``format`` (what kind of hsvm file), ``format_version``, ``hsvm`` (a JSON
document with everything that is not an array) and ``checksums``.

Arrays are written in decreasing item size so that each one starts aligned to its
own item size without gaps, which keeps the file readable by the safetensors
library and lets ``np.memmap`` views be used directly: reading a few rows of a
large matrix touches only those pages.

Integrity: ``checksums`` holds an xxh3-64 digest of the header's meaningful
content (kind, version, metadata and every array's description) and one digest
per 16 MiB block of every array.  The header digest is checked on reading; an
array's blocks before it is first used -- at once, or, for arrays a reader
marks lazy (the weight matrix of a large model), block by block as rows are
needed, so a prediction that touches few rows of a 2 GB matrix does not read
all of it.  Floating-point arrays are checked to hold finite values in the same
pass.  Files written before checksums existed are read without them.
"""
import json
import os
import struct

import numpy as np
import xxhash

from ..errors import InputNotFoundError, ModelFormatError
from .files import atomic_output

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
}
_DATA_ALIGN = 64
_MAX_HEADER = 64 << 20
_MAX_ARRAYS = 64
_MAX_DIMS = 8
_METADATA_KEYS = {"format", "format_version", "hsvm", "checksums"}

CHECKSUM = "xxh3-64"
BLOCK_BYTES = 16 << 20
# Finite-value checks run on slices that stay in cache while the digest of the
# same bytes is computed.
_FINITE_SLICE = 1 << 20


def _hex(data):
    return "%016x" % xxhash.xxh3_64_intdigest(data)


def array_digests(arr, block_bytes=None):
    """xxh3-64 digests (16 hex digits) of consecutive ``block_bytes`` blocks
    (default :data:`BLOCK_BYTES`) of the array's bytes as stored (C order)."""
    block_bytes = block_bytes or BLOCK_BYTES
    data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return [_hex(data[s:s + block_bytes]) for s in range(0, data.shape[0], block_bytes)]


def _header_digest(kind, version, meta_text, specs):
    canonical = json.dumps({"format": kind, "format_version": version, "hsvm": meta_text, "arrays": specs},
                           sort_keys=True, separators=(",", ":"))
    return _hex(canonical.encode("utf-8"))


def write_container(path, arrays, *, kind, version, meta):
    """Atomically write ``arrays`` (name -> ndarray) and ``meta`` (JSON-able dict)."""
    items = []
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        code = next((c for c, dt in _DTYPES.items()
                     if dt.kind == arr.dtype.kind and dt.itemsize == arr.dtype.itemsize), None)
        if code is None:
            raise TypeError("unsupported dtype %s for array %s" % (arr.dtype, name))
        items.append((name, code, np.ascontiguousarray(arr, dtype=_DTYPES[code])))
    # Decreasing item size keeps every array naturally aligned without padding.
    items.sort(key=lambda t: -_DTYPES[t[1]].itemsize)
    specs = {}
    offset = 0
    for name, code, arr in items:
        nbytes = arr.size * _DTYPES[code].itemsize
        specs[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    meta_text = json.dumps(meta, sort_keys=True, separators=(",", ":"))
    checksums = {"algorithm": CHECKSUM, "block_bytes": BLOCK_BYTES,
                 "header": _header_digest(kind, str(version), meta_text, specs),
                 "arrays": {name: array_digests(arr) for name, _, arr in items}}
    header = dict(specs)
    header["__metadata__"] = {
        "format": kind,
        "format_version": str(version),
        "hsvm": meta_text,
        "checksums": json.dumps(checksums, sort_keys=True, separators=(",", ":")),
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    pad = (-(8 + len(text))) % _DATA_ALIGN
    text += b" " * pad
    with atomic_output(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for name, code, arr in items:
            # Write in slices so a multi-GB matrix is not duplicated in memory.
            flat = arr.reshape(-1)
            step = max(1, (16 << 20) // max(1, arr.itemsize))
            for start in range(0, flat.size, step):
                fh.write(flat[start:start + step].tobytes())


class Container:
    """A validated, memory-mapped container file.  ``arrays`` are read-only
    views; those read lazily are verified by :meth:`verify` /
    :meth:`verify_rows` before use."""

    def __init__(self, path, arrays, meta, version, size, digests, block_bytes):
        self.path = path
        self.arrays = arrays
        self.meta = meta
        self.version = version
        self.size = size
        self.digests = digests          # name -> list of hex digests, or None without checksums
        self.block_bytes = block_bytes
        self._done = {k: np.zeros(-(-a.nbytes // block_bytes), dtype=bool) for k, a in arrays.items()}

    @property
    def checksummed(self):
        return self.digests is not None

    def verify(self, name, blocks=None):
        """Check the blocks (all by default) of array ``name`` against their
        digests and, for floating-point arrays, that they hold finite values.
        Raises ModelFormatError naming the file; each block is checked once."""
        done = self._done[name]
        todo = np.flatnonzero(~done) if blocks is None else [b for b in np.unique(blocks) if not done[b]]
        if not len(todo):
            return
        arr = self.arrays[name]
        data = arr.reshape(-1).view(np.uint8)
        floating = arr.dtype.kind == "f"
        B = self.block_bytes
        for b in todo:
            lo, hi = int(b) * B, min(data.shape[0], (int(b) + 1) * B)
            h = xxhash.xxh3_64()
            for s in range(lo, hi, _FINITE_SLICE):
                piece = data[s:min(hi, s + _FINITE_SLICE)]
                h.update(piece)
                if floating and not np.isfinite(piece.view(arr.dtype)).all():
                    raise ModelFormatError(self.path, "array %r holds NaN or infinite values" % name)
            if self.digests is not None and h.hexdigest() != self.digests[name][b]:
                raise ModelFormatError(self.path, "array %r is corrupt: checksum mismatch in its bytes %d to %d"
                                       % (name, lo, hi))
            done[b] = True

    def verify_rows(self, name, rows):
        """Verify the blocks holding the given first-axis rows of array ``name``."""
        arr = self.arrays[name]
        row_bytes = arr.nbytes // max(1, arr.shape[0]) if arr.ndim else arr.nbytes
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size == 0 or row_bytes == 0:
            return
        first = rows * row_bytes // self.block_bytes
        last = ((rows + 1) * row_bytes - 1) // self.block_bytes
        blocks = np.unique(np.concatenate([first, last]))
        # A row longer than a block spans the blocks between its ends too.
        if row_bytes > self.block_bytes:
            blocks = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
        self.verify(name, blocks)


def read_container(path, *, kind, versions, lazy=()):
    """Open and validate a container written by :func:`write_container`.

    Any inconsistency (not a container, wrong kind, unsupported version,
    truncation, shapes that disagree with offsets, a checksum that does not
    match, non-finite floating-point values) raises ModelFormatError naming
    the file; nothing is trusted before it is checked.  The arrays named in
    ``lazy`` are verified later, as they are used (:meth:`Container.verify`)."""
    name = os.fspath(path)
    what = "not an hsvm %s file" % kind[len("hsvm-"):] if kind.startswith("hsvm-") else "not an hsvm %s file" % kind
    try:
        size = os.path.getsize(name)
        fh = open(name, "rb")
    except FileNotFoundError:
        raise InputNotFoundError("%s: no such file" % name) from None
    except IsADirectoryError:
        raise InputNotFoundError("%s: is a directory" % name) from None
    except PermissionError:
        raise InputNotFoundError("%s: permission denied" % name) from None
    except OSError as exc:
        raise ModelFormatError(name, "cannot read: %s" % (exc.strerror or exc)) from None
    with fh:
        head = fh.read(8)
        if len(head) < 8:
            raise ModelFormatError(name, "%s (too short)" % what)
        (hlen,) = struct.unpack("<Q", head)
        if hlen < 2 or hlen > _MAX_HEADER:
            raise ModelFormatError(name, "%s (bad header length)" % what)
        if 8 + hlen > size:
            raise ModelFormatError(name, "truncated: header runs past the end of the file")
        raw = fh.read(hlen)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ModelFormatError(name, "%s (header is not JSON)" % what) from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__"), dict):
        raise ModelFormatError(name, "%s (no metadata)" % what)
    md = header.pop("__metadata__")
    if not all(isinstance(v, str) for v in md.values()):
        raise ModelFormatError(name, "metadata values must be strings")
    unknown = sorted(set(md) - _METADATA_KEYS)
    if unknown:
        # Also what a damaged "checksums" key looks like: never read such a
        # file as one written before checksums existed.
        raise ModelFormatError(name, "unknown metadata key %r" % unknown[0])
    if md.get("format") != kind:
        found = md.get("format")
        raise ModelFormatError(name, "%s (format is %r)" % (what, found) if found else what)
    version_text = md.get("format_version", "")
    if not (version_text.isascii() and version_text.isdigit() and len(version_text) < 6):
        raise ModelFormatError(name, "bad format_version %r" % version_text)
    version = int(version_text)
    if version not in versions:
        raise ModelFormatError(name, "unsupported %s format version %d (this hsvm reads %s)"
                               % (kind, version, ", ".join(map(str, sorted(versions)))))
    meta_text = md.get("hsvm", "{}")
    try:
        meta = json.loads(meta_text)
    except (ValueError, RecursionError):
        raise ModelFormatError(name, "metadata 'hsvm' is not JSON") from None
    if not isinstance(meta, dict):
        raise ModelFormatError(name, "metadata 'hsvm' is not a JSON object")
    if len(header) > _MAX_ARRAYS:
        raise ModelFormatError(name, "too many arrays (%d)" % len(header))
    specs = {key: _array_spec(name, key, spec) for key, spec in header.items()}
    data_start = 8 + hlen
    data_len = size - data_start
    spans = sorted((s["data_offsets"][0], s["data_offsets"][1], key, _DTYPES[s["dtype"]], tuple(s["shape"]))
                   for key, s in specs.items())
    pos = 0
    for begin, end, key, dtype, shape in spans:
        if end > data_len:
            raise ModelFormatError(name, "truncated: array %r ends at byte %d of %d" % (key, end, data_len))
        if begin != pos:
            raise ModelFormatError(name, "array %r overlaps or leaves a gap" % key)
        pos = end
    if pos != data_len:
        raise ModelFormatError(name, "file size %d does not match the arrays (%d bytes expected)" % (size, data_start + pos))
    digests, block_bytes = _checksums(name, md, kind, version_text, meta_text, specs)
    if digests is not None:
        for key, s in specs.items():
            nblocks = -(-(s["data_offsets"][1] - s["data_offsets"][0]) // block_bytes)
            if len(digests.get(key, ())) != nblocks:
                raise ModelFormatError(name, "checksums do not cover array %r" % key)
    arrays = {}
    mm = np.memmap(name, dtype=np.uint8, mode="r") if size > data_start else None
    for begin, end, key, dtype, shape in spans:
        if end == begin:
            arrays[key] = np.zeros(shape, dtype=dtype)
        else:
            arrays[key] = np.ndarray(shape, dtype=dtype, buffer=mm, offset=data_start + begin)
    c = Container(name, arrays, meta, version, size, digests, block_bytes)
    for key in arrays:
        if key not in lazy:
            c.verify(key)
    return c


def _array_spec(name, key, spec):
    """An array description checked with Python integers (no overflow can make a
    huge shape look like the right byte count)."""
    def bad(reason):
        raise ModelFormatError(name, "array %r: %s" % (key, reason))
    if not isinstance(spec, dict):
        bad("malformed description")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        bad("unknown dtype %r" % (dtype,))
    if not isinstance(shape, list) or len(shape) > _MAX_DIMS or \
            not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        bad("malformed shape %r" % (shape,))
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in offsets):
        bad("malformed data_offsets %r" % (offsets,))
    begin, end = offsets
    if end < begin:
        bad("data_offsets end before they begin")
    count = 1
    for s in shape:
        count *= s
    if count * _DTYPES[dtype].itemsize != end - begin:
        bad("shape %s does not match its %d bytes" % (shape, end - begin))
    if begin % _DTYPES[dtype].itemsize:
        bad("misaligned")
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


def _checksums(name, md, kind, version_text, meta_text, specs):
    """The array digests of the file (None for a file written before
    checksums), after checking the header's own digest."""
    text = md.get("checksums")
    if text is None:
        return None, BLOCK_BYTES
    try:
        cs = json.loads(text)
    except (ValueError, RecursionError):
        raise ModelFormatError(name, "checksums are not JSON") from None
    if not isinstance(cs, dict) or cs.get("algorithm") != CHECKSUM:
        raise ModelFormatError(name, "unknown checksum algorithm %r" % (cs.get("algorithm") if isinstance(cs, dict)
                                                                        else None,))
    block = cs.get("block_bytes")
    arrays = cs.get("arrays")
    if not isinstance(block, int) or isinstance(block, bool) or block < 4096 or block > (1 << 30) \
            or block & (block - 1) or not isinstance(arrays, dict) \
            or not all(isinstance(v, list) and all(isinstance(d, str) and len(d) == 16 for d in v)
                       for v in arrays.values()):
        raise ModelFormatError(name, "malformed checksums")
    if cs.get("header") != _header_digest(kind, version_text, meta_text, specs):
        raise ModelFormatError(name, "header is corrupt: checksum mismatch")
    return arrays, block


def container_kind(path):
    """The ``format`` a container file declares (e.g. ``hsvm-model``), or None
    when it cannot tell (missing, unreadable or no container): only to choose
    a loader, which then validates everything and names any problem."""
    try:
        with open(os.fspath(path), "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return None
            (hlen,) = struct.unpack("<Q", head)
            if hlen < 2 or hlen > _MAX_HEADER:
                return None
            header = json.loads(fh.read(hlen).decode("utf-8"))
        kind = header.get("__metadata__", {}).get("format")
    except (OSError, ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        return None
    return kind if isinstance(kind, str) else None
