"""Versioned, memory-mappable binary container in the safetensors layout.

Layout (see docs/formats.md): an 8-byte little-endian header length N, N bytes of
UTF-8 JSON (padded with spaces so the data starts on a 64-byte boundary), then the
arrays back to back, little-endian, C order.  The JSON maps each array name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the data
start) and holds ``__metadata__``: string keys to string values, among them
``format`` (what kind of hsvm file), ``format_version`` and ``hsvm`` (a JSON
document with everything that is not an array).

Arrays are written in decreasing item size so that each one starts aligned to its
own item size without gaps, which keeps the file readable by the safetensors
library and lets ``np.memmap`` views be used directly: reading a few rows of a
large matrix touches only those pages.
"""
import json
import os
import struct

import numpy as np

from ..errors import ModelFormatError
from .files import atomic_output, open_raw

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
}
_DATA_ALIGN = 64
_MAX_HEADER = 64 << 20


def write_container(path, arrays, *, kind, version, meta):
    """Atomically write ``arrays`` (name -> ndarray) and ``meta`` (JSON-able dict)."""
    items = []
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        code = next((c for c, dt in _DTYPES.items()
                     if dt.kind == arr.dtype.kind and dt.itemsize == arr.dtype.itemsize), None)
        if code is None:
            raise TypeError("unsupported dtype %s for array %s" % (arr.dtype, name))
        items.append((name, code, arr))
    # Decreasing item size keeps every array naturally aligned without padding.
    items.sort(key=lambda t: -_DTYPES[t[1]].itemsize)
    header = {}
    offset = 0
    for name, code, arr in items:
        nbytes = arr.size * _DTYPES[code].itemsize
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = {
        "format": kind,
        "format_version": str(version),
        "hsvm": json.dumps(meta, sort_keys=True, separators=(",", ":")),
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    pad = (-(8 + len(text))) % _DATA_ALIGN
    text += b" " * pad
    with atomic_output(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for name, code, arr in items:
            data = np.ascontiguousarray(arr, dtype=_DTYPES[code])
            # Write in slices so a multi-GB matrix is not duplicated in memory.
            flat = data.reshape(-1)
            step = max(1, (16 << 20) // max(1, data.itemsize))
            for start in range(0, flat.size, step):
                fh.write(flat[start:start + step].tobytes())


class Container:
    """A validated, memory-mapped container file.  ``arrays`` are read-only views."""

    def __init__(self, path, arrays, meta, version, size):
        self.path = path
        self.arrays = arrays
        self.meta = meta
        self.version = version
        self.size = size


def read_container(path, *, kind, versions):
    """Open and validate a container written by :func:`write_container`.

    Any inconsistency (not a container, wrong kind, unsupported version,
    truncation, shapes that disagree with offsets) raises ModelFormatError naming
    the file; nothing is trusted before it is checked."""
    name = os.fspath(path)
    fh = open_raw(name)  # missing, a directory, unreadable: InputNotFoundError
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        fh.close()
        raise ModelFormatError(name, "cannot read: %s" % (exc.strerror or exc)) from None
    with fh:
        head = fh.read(8)
        if len(head) < 8:
            raise ModelFormatError(name, "not an hsvm %s file (too short)" % kind)
        (hlen,) = struct.unpack("<Q", head)
        if hlen < 2 or hlen > _MAX_HEADER:
            raise ModelFormatError(name, "not an hsvm %s file (bad header length)" % kind)
        if 8 + hlen > size:
            raise ModelFormatError(name, "truncated: header runs past the end of the file")
        raw = fh.read(hlen)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ModelFormatError(name, "not an hsvm %s file (header is not JSON)" % kind) from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__"), dict):
        raise ModelFormatError(name, "not an hsvm %s file (no metadata)" % kind)
    md = header.pop("__metadata__")
    if md.get("format") != kind:
        found = md.get("format")
        raise ModelFormatError(name, "not an hsvm %s file (format is %r)" % (kind, found) if found
                               else "not an hsvm %s file" % kind)
    try:
        version = int(md.get("format_version", ""))
    except ValueError:
        raise ModelFormatError(name, "bad format_version %r" % md.get("format_version")) from None
    if version not in versions:
        raise ModelFormatError(name, "unsupported %s format version %d (this hsvm reads %s)"
                               % (kind, version, ", ".join(map(str, sorted(versions)))))
    try:
        meta = json.loads(md.get("hsvm", "{}"))
    except ValueError:
        raise ModelFormatError(name, "metadata 'hsvm' is not JSON") from None
    data_start = 8 + hlen
    data_len = size - data_start
    spans = []
    for key, spec in header.items():
        try:
            dtype = _DTYPES[spec["dtype"]]
            shape = tuple(int(s) for s in spec["shape"])
            begin, end = (int(v) for v in spec["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ModelFormatError(name, "array %r has a malformed description" % key) from None
        if any(s < 0 for s in shape) or begin < 0 or end < begin:
            raise ModelFormatError(name, "array %r has a negative shape or offset" % key)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != end - begin:
            raise ModelFormatError(name, "array %r: shape %s does not match its %d bytes" % (key, list(shape), end - begin))
        if end > data_len:
            raise ModelFormatError(name, "truncated: array %r ends at byte %d of %d" % (key, end, data_len))
        if begin % dtype.itemsize:
            raise ModelFormatError(name, "array %r is misaligned" % key)
        spans.append((begin, end, key, dtype, shape))
    spans.sort()
    pos = 0
    for begin, end, key, _, _ in spans:
        if begin != pos:
            raise ModelFormatError(name, "array %r overlaps or leaves a gap" % key)
        pos = end
    if pos != data_len:
        raise ModelFormatError(name, "file size %d does not match the arrays (%d bytes expected)" % (size, data_start + pos))
    arrays = {}
    mm = np.memmap(name, dtype=np.uint8, mode="r") if size > data_start else None
    for begin, end, key, dtype, shape in spans:
        if end == begin:
            arrays[key] = np.zeros(shape, dtype=dtype)
        else:
            arrays[key] = np.ndarray(shape, dtype=dtype, buffer=mm, offset=data_start + begin)
    return Container(name, arrays, meta, version, size)

