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

Row digests: a writer may also store, for a large matrix X, the array
``X.row_xxh3`` (U64 [rows]: the xxh3-64 of each row's bytes), so that a reader
that needs a scattered few percent of X's rows checks those rows alone.  A
16 MiB block holds 4,096 rows of a 1,024-wide float32 matrix, so 30,000 pairs
refined for 10,000 samples touch every block of a 2 GB W, and checking them all
cost a predict more than its whole refine.
"""
import json
import os
import re
import struct

import numpy as np
import xxhash

from ..errors import ModelFormatError, OptionError
from ..support.arrays import distinct_indices
from ..support.native import ffi, lib
from .files import atomic_output, open_raw, read_raw, require_regular_file

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


_HEX = re.compile("[0-9a-f]{16}")

#: The suffix of an array holding the xxh3-64 digest of each row of another.
ROW_DIGESTS = ".row_xxh3"
# Rows are checked one by one while they are fewer than this share of the
# array's bytes; past it, whole blocks cost less than a call per row.
_ROW_CHECK_SHARE = 0.25


def _hex(data):
    return "%016x" % xxhash.xxh3_64_intdigest(data)


def array_digests(arr, block_bytes=None):
    """xxh3-64 digests (16 hex digits) of consecutive ``block_bytes`` blocks
    (default :data:`BLOCK_BYTES`) of the array's bytes as stored (C order)."""
    block_bytes = block_bytes or BLOCK_BYTES
    data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return [_hex(data[s:s + block_bytes]) for s in range(0, data.shape[0], block_bytes)]


def row_digests(arr):
    """xxh3-64 of each first-axis row of ``arr``'s bytes, uint64 [rows]
    (what the streaming writer computes piece by piece: :class:`_RowHasher`)."""
    arr = np.ascontiguousarray(arr)
    rows = arr.shape[0] if arr.ndim else 0
    hasher = _RowHasher(rows, arr.nbytes // rows if rows else 0)
    if arr.nbytes:
        hasher.update(memoryview(arr.reshape(-1).view(np.uint8)))
    return hasher.finish()


def _with_row_digests(shapes, row_checked):
    """``shapes`` (name, code, shape) with the row-digest array of each name in
    ``row_checked`` appended (so it sorts among the 8-byte arrays after every
    given one)."""
    given = {name: shape for name, _, shape in shapes}
    for name in row_checked:
        if name not in given or len(given[name]) < 2:
            raise ValueError("row digests need a matrix: %r" % name)
    return list(shapes) + [(name + ROW_DIGESTS, "U64", (int(given[name][0]),)) for name in row_checked]


# The C checks by float type: (function, C type of the bit patterns).
_FINITE_C = {np.dtype("<f4"): ("hsvm_all_finite_f32", "uint32_t *"),
             np.dtype("<f8"): ("hsvm_all_finite_f64", "uint64_t *")}


def _finite(values, kernel):
    # One pass in C over the bit patterns of the slice the checksum has just
    # read (in cache); numpy's min and max made two, and cost more than the
    # checksum itself.  Other float types (none stored today): min and max,
    # which propagate NaN and reach any infinity.  ``kernel``: _any_kernel().
    if values.size == 0:
        return True
    native = _FINITE_C.get(values.dtype)
    if native is not None and values.flags.c_contiguous:
        name, ctype = native
        return getattr(lib, name)(ffi.cast(ctype, ffi.from_buffer(values)), values.size, kernel) > 0
    return bool(np.isfinite(values.min()) and np.isfinite(values.max()))


def _any_kernel():
    # The best path the CPU has: a bad HSVM_KERNEL (which the kernels that
    # honour it report) must not make a model unreadable.
    k = lib.hsvm_resolve_kernel(lib.HSVM_KERNEL_AUTO)
    return k if k > 0 else lib.HSVM_KERNEL_PORTABLE


def _header_digest(kind, version, meta_text, specs):
    canonical = json.dumps({"format": kind, "format_version": version, "hsvm": meta_text, "arrays": specs},
                           sort_keys=True, separators=(",", ":"))
    return _hex(canonical.encode("utf-8"))


def _dtype_code(dtype, name):
    dtype = np.dtype(dtype)
    code = next((c for c, dt in _DTYPES.items() if dt.kind == dtype.kind and dt.itemsize == dtype.itemsize), None)
    if code is None:
        raise TypeError("unsupported dtype %s for array %s" % (dtype, name))
    return code


def _plan(shapes):
    """File order and header descriptions of arrays given as (name, code,
    shape) in the caller's order: decreasing item size (which keeps every
    array naturally aligned without padding), ties in the given order.
    Returns [(name, code, shape, nbytes)] and the specs dict."""
    items = sorted(shapes, key=lambda t: -_DTYPES[t[1]].itemsize)
    specs = {}
    planned = []
    offset = 0
    for name, code, shape in items:
        nbytes = int(np.prod(shape, dtype=np.int64)) * _DTYPES[code].itemsize
        specs[name] = {"dtype": code, "shape": [int(v) for v in shape], "data_offsets": [offset, offset + nbytes]}
        planned.append((name, code, tuple(int(v) for v in shape), nbytes))
        offset += nbytes
    return planned, specs


def _header(kind, version, meta, specs, digests):
    """The header bytes (length prefix excluded, padding included)."""
    meta_text = json.dumps(meta, sort_keys=True, separators=(",", ":"))
    checksums = {"algorithm": CHECKSUM, "block_bytes": BLOCK_BYTES,
                 "header": _header_digest(kind, str(version), meta_text, specs),
                 "arrays": digests}
    header = dict(specs)
    header["__metadata__"] = {
        "format": kind,
        "format_version": str(version),
        "hsvm": meta_text,
        "checksums": json.dumps(checksums, sort_keys=True, separators=(",", ":")),
    }
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return text + b" " * ((-(8 + len(text))) % _DATA_ALIGN)


def write_container(path, arrays, *, kind, version, meta, row_checked=()):
    """Atomically write ``arrays`` (name -> ndarray) and ``meta`` (JSON-able
    dict); ``row_checked``: names of matrices to store row digests of."""
    data = {}
    shapes = []
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        code = _dtype_code(arr.dtype, name)
        data[name] = np.ascontiguousarray(arr, dtype=_DTYPES[code])
        shapes.append((name, code, arr.shape))
    shapes = _with_row_digests(shapes, row_checked)
    for name in row_checked:
        data[name + ROW_DIGESTS] = row_digests(data[name])
    planned, specs = _plan(shapes)
    digests = {name: array_digests(data[name]) for name, _, _, _ in planned}
    text = _header(kind, version, meta, specs, digests)
    with atomic_output(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for name, _, _, _ in planned:
            arr = data[name]
            # Write in slices so a multi-GB matrix is not duplicated in memory.
            flat = arr.reshape(-1)
            step = max(1, (16 << 20) // max(1, arr.itemsize))
            for start in range(0, flat.size, step):
                # the slice's own memory, not a bytes copy of it
                fh.write(memoryview(flat[start:start + step]).cast("B"))


class _BlockHasher:
    """The per-block digests of :func:`array_digests`, fed piece by piece."""

    def __init__(self):
        self.digests = []
        self._h = xxhash.xxh3_64()
        self._filled = 0

    def update(self, view):
        while len(view):
            take = min(len(view), BLOCK_BYTES - self._filled)
            self._h.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == BLOCK_BYTES:
                self._close_block()

    def _close_block(self):
        self.digests.append(self._h.hexdigest())
        self._h = xxhash.xxh3_64()
        self._filled = 0

    def finish(self):
        if self._filled:
            self._close_block()
        return self.digests


class _RowHasher:
    """The digests of :func:`row_digests`, fed piece by piece."""

    def __init__(self, rows, row_bytes):
        self.digests = []
        self._rows = rows
        self._row_bytes = row_bytes
        self._h = None

    def update(self, view):
        R = self._row_bytes
        while len(view):
            if self._h is not None:
                take = min(len(view), R - self._filled)
                self._h.update(view[:take])
                self._filled += take
                view = view[take:]
                if self._filled == R:
                    self.digests.append(self._h.intdigest())
                    self._h = None
                continue
            whole = len(view) // R * R
            digest = xxhash.xxh3_64_intdigest
            self.digests.extend(digest(view[s:s + R]) for s in range(0, whole, R))
            view = view[whole:]
            if len(view):
                self._h = xxhash.xxh3_64()
                self._filled = 0

    def finish(self):
        if self._row_bytes == 0:     # rows of no bytes are never fed
            self.digests = [xxhash.xxh3_64_intdigest(b"")] * self._rows
        return np.array(self.digests, dtype="<u8").reshape(self._rows)


class _StreamWriter:
    """``write(name, piece)`` for :func:`write_container_streaming`: checks that
    pieces come array after array in file order with exactly each array's
    size, hashes them block by block (and by row, for the arrays in
    ``row_checked``) and hands their bytes to ``sink``.  A row-digest array
    is not the producer's to write: its turn gives ``rows_known``' digests
    when the data was hashed before, else zeros that the caller patches."""

    def __init__(self, planned, sink, row_checked=(), rows_known=None):
        self._planned = planned
        self._sink = sink
        self._k = 0
        self._left = planned[0][3] if planned else 0
        self._hashers = {name: _BlockHasher() for name, _, _, _ in planned}
        sizes = {name: (shape, nbytes) for name, _, shape, nbytes in planned}
        self._rows = {name: _RowHasher(sizes[name][0][0], sizes[name][1] // max(1, sizes[name][0][0]))
                      for name in row_checked}
        self._derived = {name + ROW_DIGESTS for name in row_checked}
        self._rows_known = rows_known
        self._emit_derived()

    def _emit_derived(self):
        # the row-digest arrays whose turn has come (they follow their matrix)
        planned = self._planned
        while self._k < len(planned) and planned[self._k][0] in self._derived:
            name, _, _, nbytes = planned[self._k]
            if self._rows_known is not None:
                self._sink(memoryview(self._rows_known[name[:-len(ROW_DIGESTS)]]).cast("B"))
            elif nbytes:
                self._sink(memoryview(bytes(nbytes)))
            self._left = 0
            if self._k + 1 < len(planned):
                self._k += 1
                self._left = planned[self._k][3]
            else:
                break

    def __call__(self, name, piece):
        planned = self._planned
        k = self._k
        # move on to `name` past arrays that are complete
        while k < len(planned) and planned[k][0] != name:
            if self._left:
                raise ValueError("container data out of order: got %r, expected more of %r" % (name, planned[k][0]))
            k += 1
            self._left = planned[k][3] if k < len(planned) else 0
            self._k = k
            self._emit_derived()
            k = self._k
        if k >= len(planned) or name in self._derived:
            raise ValueError("container data out of order: got %r after its turn" % name)
        self._k = k
        data = np.ascontiguousarray(piece, dtype=_DTYPES[planned[k][1]])
        if data.nbytes > self._left:
            raise ValueError("too much data for array %r" % name)
        self._left -= data.nbytes
        if data.nbytes:
            view = memoryview(data.reshape(-1)).cast("B")
            self._hashers[name].update(view)
            if name in self._rows:
                self._rows[name].update(view)
            self._sink(view)

    def row_digests(self):
        """name -> the row digests of each row-checked array (complete data)."""
        return {name: h.finish() for name, h in self._rows.items()}

    def digests(self):
        while not self._left and self._k + 1 < len(self._planned):
            self._k += 1
            self._left = self._planned[self._k][3]
            self._emit_derived()
        missing = self._left + sum(t[3] for t in self._planned[self._k + 1:])
        if missing:
            raise ValueError("container data incomplete: %d bytes missing" % missing)
        rows = self.row_digests()
        out = {name: h.finish() for name, h in self._hashers.items() if name not in self._derived}
        for name, values in rows.items():
            out[name + ROW_DIGESTS] = array_digests(values)
        return {name: out[name] for name, _, _, _ in self._planned}


def write_container_streaming(path, arrays, *, kind, version, meta, produce, final_meta=None, row_checked=()):
    """Atomically write a container whose arrays arrive in pieces (too large to
    hold at once): the very bytes :func:`write_container` gives the same
    arrays and metadata.

    ``arrays``: name -> ``(dtype, shape)``, in the order the arrays would be
    handed to :func:`write_container` (which decides ties of the file order).
    ``produce(write)``: writes the data by calling ``write(name, piece)`` with
    consecutive C-order pieces (numpy arrays of any shape) of each array, array
    after array in file order (decreasing item size, ties in the order of
    ``arrays``); every array must get exactly its size.

    ``final_meta(digests)``: the metadata to record, from the block digests
    of every array (name -> list of hex digests) -- for values that depend on
    the data, such as a model's identity; ``meta`` is then a stand-in whose
    JSON has the same length (the header precedes the data, so its length is
    fixed before the data goes by).  The header is written with the stand-in
    and rewritten in place at the end.  When the output cannot seek (a pipe or
    device written through), ``produce`` is called twice instead: once to
    hash, then to write; it must give the same data both times.
    ``row_checked``: as for :func:`write_container` (the row digests are
    written in their place at the end, or from the hashing pass)."""
    shapes = [(name, _dtype_code(dtype, name), tuple(shape)) for name, (dtype, shape) in arrays.items()]
    shapes = _with_row_digests(shapes, row_checked)
    planned, specs = _plan(shapes)
    stand_in = {name: ["0" * 16] * -(-nbytes // BLOCK_BYTES) for name, _, _, nbytes in planned}
    draft = _header(kind, version, meta, specs, stand_in)

    def final_header(digests):
        text = _header(kind, version, meta if final_meta is None else final_meta(digests), specs, digests)
        if len(text) != len(draft):
            raise ValueError("the final metadata changed the header's length (%d, not %d bytes)"
                             % (len(text), len(draft)))
        return text

    with atomic_output(path, "wb") as fh:
        if _can_patch(fh):
            fh.write(struct.pack("<Q", len(draft)))
            fh.write(draft)
            write = _StreamWriter(planned, fh.write, row_checked)
            produce(write)
            text = final_header(write.digests())
            end = fh.tell()
            for name, values in write.row_digests().items():
                fh.seek(8 + len(draft) + specs[name + ROW_DIGESTS]["data_offsets"][0])
                fh.write(values.tobytes())
            fh.seek(8)
            fh.write(text)
            fh.seek(end)
            return
        hashing = _StreamWriter(planned, lambda view: None, row_checked)
        produce(hashing)
        digests = hashing.digests()
        text = final_header(digests)
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        write = _StreamWriter(planned, fh.write, row_checked, rows_known=hashing.row_digests())
        produce(write)
        if write.digests() != digests:
            raise ValueError("the data changed between the two passes over it")


def _can_patch(fh):
    # Patching needs a file written from its start; an O_APPEND descriptor
    # (a shell's >>) would put the patch at the end instead.
    try:
        import fcntl
        if fcntl.fcntl(fh.fileno(), fcntl.F_GETFL) & os.O_APPEND:
            return False
        return bool(fh.seekable()) and fh.tell() == 0
    except (OSError, ValueError, AttributeError, ImportError):
        return False


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
        self._background = {}           # name -> (thread, outcome, stop event) of a check started ahead of use
        # name -> its row digests (an array of the file, verified on reading), with checksums only
        self.row_digests = {k[:-len(ROW_DIGESTS)]: a for k, a in arrays.items()
                            if k.endswith(ROW_DIGESTS) and digests is not None}
        self._rows_done = {}            # name -> rows checked one by one (bool [rows])

    @property
    def checksummed(self):
        return self.digests is not None

    def __getstate__(self):
        # A check running on another thread stays with this object (its thread and lock cannot be
        # pickled or copied, and a predict_file that failed before using W had left one behind for
        # good): a copy checks what it has not seen checked when it uses it.
        state = dict(self.__dict__)
        state["_background"] = {}
        state["_done"] = {k: v.copy() for k, v in self._done.items()}
        return state

    def verify_in_background(self, name):
        """Start checking every block of array ``name`` on another thread, so
        that the check of a large array overlaps what the process does before
        it first reads the array (parsing its input).  :meth:`verify` of the
        whole array waits for it and raises what it found; of some blocks,
        checks those the thread has not yet passed itself, side by side with
        it (so a prediction that needs few blocks never waits for all of
        them).  A process that ends without using the
        array (an error, Ctrl-C) does not wait for the check: the thread
        stops at its next slice once the interpreter starts exiting."""
        if name in self._background or self._done[name].all():
            return
        import threading
        outcome = {}
        _stop_checks_at_exit()
        stop = _EitherEvent(threading.Event(), _exiting)

        def run():
            try:
                # one thread: the process's own work goes on beside it
                self._verify(name, None, workers=1, stop=stop)
            except BaseException as exc:    # handed to the thread that uses the array
                outcome["error"] = exc

        thread = threading.Thread(target=run, name="hsvm-verify-%s" % name, daemon=True)
        self._background[name] = (thread, outcome, stop.own)
        thread.start()

    def cancel_background(self, name):
        """Stop a background check of ``name`` (at its next slice) and wait for
        it: for a caller done with the array that needed only some of it, so
        that no thread goes on reading the mapping (a file replaced in place
        under it would fault)."""
        pending = self._background.pop(name, None)
        if pending is not None:
            pending[2].set()
            pending[0].join()

    def verify(self, name, blocks=None):
        """Check the blocks (all by default) of array ``name`` against their
        digests and, for floating-point arrays, that they hold finite values.
        Raises ModelFormatError naming the file; each block is checked once."""
        pending = self._background.get(name)
        if pending is not None and (blocks is None or not pending[0].is_alive()):
            self._background.pop(name, None)     # another thread may have taken it meanwhile
            pending[0].join()
            if blocks is None and isinstance(pending[1].get("error"), ModelFormatError):
                raise pending[1]["error"]
            # anything else (stopped, out of memory; a block not asked for)
            # leaves its blocks unchecked: checked here when asked for
        # Beside a check still running (forwards), from the last block back:
        # the two meet instead of checking the same blocks.
        self._verify(name, blocks, backwards=name in self._background)

    def _verify(self, name, blocks, workers=None, stop=None, backwards=False):
        done = self._done[name]
        todo = np.flatnonzero(~done) if blocks is None else [b for b in distinct_indices(blocks) if not done[b]]
        if backwards:
            todo = todo[::-1]
        if not len(todo):
            return
        arr = self.arrays[name]
        data = arr.reshape(-1).view(np.uint8)
        floating = arr.dtype.kind == "f"
        kernel = _any_kernel() if floating else None     # once, not per slice
        B = self.block_bytes

        def check(b):
            # the first problem of block b, or None (xxhash and numpy release
            # the GIL on these slices, so blocks are checked side by side);
            # a block another thread has passed meanwhile is not read again
            if done[b]:
                return None
            lo, hi = int(b) * B, min(data.shape[0], (int(b) + 1) * B)
            h = xxhash.xxh3_64()
            for s in range(lo, hi, _FINITE_SLICE):
                if stop is not None and stop.is_set():
                    raise _Stopped()
                piece = data[s:min(hi, s + _FINITE_SLICE)]
                h.update(piece)
                if floating and not _finite(piece.view(arr.dtype), kernel):
                    return "array %r holds NaN or infinite values" % name
            if self.digests is not None and h.hexdigest() != self.digests[name][b]:
                return "array %r is corrupt: checksum mismatch in its bytes %d to %d" % (name, lo, hi)
            return None

        def mark(problems):
            # in block order, each block as soon as it is known: a check on
            # another thread skips what this one has passed
            for b, problem in zip(todo, problems):
                if problem is not None:
                    raise ModelFormatError(self.path, problem)
                done[b] = True

        workers = min(len(todo), _verify_threads() if workers is None else workers)
        if workers > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(workers) as pool:
                mark(pool.map(check, todo))
        else:
            mark(check(b) for b in todo)

    def verify_rows(self, name, rows):
        """Verify the given first-axis rows of array ``name``: one by one
        against the file's row digests when it has them and the rows are few,
        else the blocks holding them."""
        if self._done[name].all():
            return
        arr = self.arrays[name]
        row_bytes = arr.nbytes // max(1, arr.shape[0]) if arr.ndim else arr.nbytes
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size == 0 or row_bytes == 0:
            return
        if rows.min() < 0 or rows.max() >= arr.shape[0]:
            # a caller's bug, never a file's: the checks below index by row
            raise IndexError("rows of %r outside 0..%d" % (name, arr.shape[0] - 1))
        first = rows * row_bytes // self.block_bytes
        last = ((rows + 1) * row_bytes - 1) // self.block_bytes
        if name in self.row_digests:
            done = self._rows_done.setdefault(name, np.zeros(arr.shape[0], dtype=bool))
            blocks_done = self._done[name]
            # rows whose blocks were all checked need nothing more (a row
            # longer than a block spans the blocks between its ends too)
            covered = blocks_done[first] & blocks_done[last]
            if row_bytes > self.block_bytes:
                covered &= np.array([blocks_done[f:l + 1].all() for f, l in zip(first, last)], dtype=bool)
            rows = distinct_indices(rows[~(done[rows] | covered)])
            if rows.size * row_bytes <= _ROW_CHECK_SHARE * arr.nbytes:
                self._verify_each_row(name, rows, row_bytes)
                return
            first = rows * row_bytes // self.block_bytes
            last = ((rows + 1) * row_bytes - 1) // self.block_bytes
        blocks = distinct_indices(np.concatenate([first, last]))
        # A row longer than a block spans the blocks between its ends too.
        if row_bytes > self.block_bytes:
            blocks = distinct_indices(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
        self.verify(name, blocks)

    def verify_row_digests(self, name):
        """Compare every row of array ``name`` with its row digest (what
        ``hsvm info --verify`` adds to the block checks): a digest array that
        does not describe its rows is refused even where the blocks, digests
        included, match their checksums."""
        arr = self.arrays[name]
        if name not in self.row_digests or arr.shape[0] == 0:
            return
        self._rows_done.setdefault(name, np.zeros(arr.shape[0], dtype=bool))
        self._verify_each_row(name, np.arange(arr.shape[0], dtype=np.int64), arr.nbytes // arr.shape[0])

    def _verify_each_row(self, name, rows, row_bytes):
        # rows: distinct, sorted; a list comprehension of digests and one C
        # call for the finite check keep this near 0.4 us a row
        if not rows.size:
            return
        arr = self.arrays[name]
        mv = memoryview(arr.reshape(-1).view(np.uint8))
        digest = xxhash.xxh3_64_intdigest
        got = np.array([digest(mv[lo:lo + row_bytes]) for lo in (rows * row_bytes).tolist()], dtype=np.uint64)
        bad = np.flatnonzero(got != self.row_digests[name][rows])
        if bad.size:
            r = int(rows[bad[0]])
            raise ModelFormatError(self.path, "array %r is corrupt: checksum mismatch in its row %d (bytes %d to %d)"
                                   % (name, r, r * row_bytes, (r + 1) * row_bytes))
        if arr.dtype.kind == "f":
            native = arr.dtype in _FINITE_C and arr.flags.c_contiguous
            if native:
                rows_p = ffi.cast("int64_t *", ffi.from_buffer(rows))
                first = lib.hsvm_rows_finite(ffi.from_buffer(arr), arr[0].size, rows_p, rows.size,
                                             arr.dtype.itemsize == 8, _any_kernel())
            else:   # no other float type is stored today
                first = next((i for i, r in enumerate(rows.tolist()) if not _finite(arr[r], None)), rows.size)
            if first < rows.size:
                raise ModelFormatError(self.path, "array %r holds NaN or infinite values" % name)
        self._rows_done[name][rows] = True


def _map(name, size):
    """The file's bytes, memory-mapped read-only.  Mapping takes address
    space, not memory, but an address-space limit (ulimit -v, RLIMIT_AS) may
    refuse it: said in one line with what it needs, as any allocation the
    memory checks refuse."""
    import errno
    try:
        return np.memmap(name, dtype=np.uint8, mode="r")
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        from ..support.memory import TooLargeError, available_memory, format_bytes
        have = available_memory()
        raise TooLargeError("%s: mapping the file would need %s of address space%s (ulimit -v, RLIMIT_AS)"
                            % (name, format_bytes(size), "" if have is None else "; %s are available"
                               % format_bytes(have))) from None


class _EitherEvent:
    """Set when either event is: a check's own stop, or the interpreter's exit."""

    def __init__(self, own, other):
        self.own = own
        self.other = other

    def is_set(self):
        return self.own.is_set() or self.other.is_set()


class _Stopped(Exception):
    """A background check given up as the interpreter exits."""


_exiting = None


def _stop_checks_at_exit():
    # Background checks run on daemon threads; this tells them to stop when
    # the interpreter exits, before it tears down what they read.
    global _exiting
    if _exiting is None:
        import atexit
        import threading
        _exiting = threading.Event()
        atexit.register(_exiting.set)


def _verify_threads():
    from ..support.threads import default_threads
    return max(1, default_threads())


# What a file of a kind that most commands refuse is, said beside the refusal.
_KIND_HINTS = {"hsvm-ovr-model": "a one-vs-rest model, which only predict, hash-model and info take",
               "hsvm-ovr-hash-model": "a one-vs-rest model's hash model, which only predict and info take",
               "hsvm-hash-model": "a hash model: predict and calibrate take it with -H, beside its model's -m",
               "hsvm-calibration": "a calibration: predict takes it with -C",
               "hsvm-codes": "hashed samples: predict and train-ovo take them with --codes",
               "hsvm-kernel-hash": "a kernel hash: predict takes it with --kernel-hash, hash-data with -H"}


def kind_hint(kind):
    """What a file of ``kind`` is and which commands take it, where most
    refuse it; None for the others."""
    return _KIND_HINTS.get(kind)


def kind_name(kind):
    """A file kind as messages name it: ``hsvm-hash-model`` -> ``hash-model``."""
    return kind[len("hsvm-"):] if kind.startswith("hsvm-") else kind


_COMPRESSED_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
                     (b"\x28\xb5\x2f\xfd", "zstd"))


def compressed_kind(head):
    """The compression whose magic bytes open ``head`` (gzip, bzip2, xz,
    zstd), or None."""
    for magic, kind in _COMPRESSED_MAGIC:
        if head.startswith(magic):
            return kind
    return None


def _compressed_said(head, what):
    """What a file that is no container says when it opens as compressed data."""
    kind = compressed_kind(head)
    return kind and ("%s but %s-compressed data: hsvm's binary files are memory-mapped, never compressed "
                     "(decompress it first)" % (what, kind))


def _foreign_said(name, head, what, reason):
    """What a file that is no container is: svmlight data, compressed data,
    else ``what`` with the ``reason`` it was found out by."""
    return svmlight_said(name, head, what) or _compressed_said(head, what) or "%s (%s)" % (what, reason)


# The start of svmlight text's first data line: a label, then index:value
# pairs (a qid too); a prefix suffices (a dense row may run past what is read).
_SVMLIGHT_LINE = re.compile(rb"[ \t]*[-+]?[0-9.][^ \t\r\n:]*([ \t]+(qid:[^ \t\r\n]+|[0-9]+:[^ \t\r\n:]+))+")


def svmlight_said(name, head, what):
    """What a file that is no container says when it holds svmlight data,
    plain or compressed (the data given where an hsvm file goes, or the two
    swapped), or None.  ``head``: its first bytes, already read."""
    kind = compressed_kind(head)
    try:
        from .files import open_input
        with open_input(name) as fh:            # decompressed as the data readers read it
            text = fh.read(1 << 16)
    except Exception:           # a judgement for a message: no new failure
        return None
    bom = text.startswith(b"\xef\xbb\xbf")
    if bom:
        text = text[3:]
    first = next((line for line in text.split(b"\n") if line.strip() and not line.lstrip().startswith(b"#")), None)
    if first is None or not _SVMLIGHT_LINE.match(first):
        return None
    return ("%s but %ssvmlight data (a label, then index:value pairs%s): the data goes where TEST or TRAIN does, "
            "an hsvm file where this was given" % (what, "%s-compressed " % kind if kind else "",
                                                   "; it starts with a byte-order mark, which the readers refuse"
                                                   if bom else ""))


def read_container(path, *, kind, versions, lazy=()):
    """Open and validate a container written by :func:`write_container`.

    Any inconsistency (not a container, wrong kind, unsupported version,
    truncation, shapes that disagree with offsets, a checksum that does not
    match, non-finite floating-point values) raises ModelFormatError naming
    the file; nothing is trusted before it is checked.  The arrays named in
    ``lazy`` are verified later, as they are used (:meth:`Container.verify`)."""
    name = os.fspath(path)
    if name == "-":
        # mapped, not streamed: a pipe cannot be mapped or read twice
        raise OptionError("%s files cannot be read from stdin ('-'): give the file's name" % kind_name(kind))
    what = "not an hsvm %s file" % kind_name(kind)
    require_regular_file(name, "%s files are memory-mapped" % kind_name(kind))
    fh = open_raw(name)  # missing, a directory, unreadable: InputNotFoundError
    try:
        size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        fh.close()
        raise ModelFormatError(name, "cannot read: %s" % (exc.strerror or exc)) from None
    with fh:
        head = read_raw(fh, 8, name)
        if len(head) < 8:
            raise ModelFormatError(name, "%s (too short)" % what)
        (hlen,) = struct.unpack("<Q", head)
        if head.startswith((b"svm_type", b"solver_t")):
            from .tool_models import foreign_model_said
            fh.seek(0)
            foreign = foreign_model_said(name, read_raw(fh, 4096, name))
            if foreign is not None:
                raise ModelFormatError(name, foreign)
            fh.seek(8)          # "solver_t" and then not "ype": judged as any other file
        if hlen < 2 or hlen > _MAX_HEADER:
            raise ModelFormatError(name, _foreign_said(name, head, what, "bad header length"))
        raw = read_raw(fh, hlen, name)
        if 8 + hlen > size:
            # Cut off, if what follows the length opens a JSON header; else
            # another kind of file (a data file, a compressed one) whose first
            # bytes read as a length that fits within _MAX_HEADER.
            raise ModelFormatError(name, "truncated or damaged: header runs past the end of the file"
                                   if raw[:1] == b"{" else _foreign_said(name, head, what, "no container header"))
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ModelFormatError(name, _foreign_said(name, head, what, "header is not JSON")) from None
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
        if isinstance(found, str) and found.startswith("hsvm-") and found.isascii() and found.isprintable():
            # another hsvm file: say which, not that it is none
            hint = kind_hint(found)
            raise ModelFormatError(name, "an hsvm %s file, not an hsvm %s file%s"
                                   % (kind_name(found), kind_name(kind), " (%s)" % hint if hint else ""))
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
            raise ModelFormatError(name, "truncated: array %r ends at byte %d of the data section, which has %d "
                                         "bytes (the file has %d)" % (key, end, data_len, size))
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
    mm = _map(name, size) if size > data_start else None
    for begin, end, key, dtype, shape in spans:
        if end == begin:
            arrays[key] = np.zeros(shape, dtype=dtype)
        else:
            arrays[key] = np.ndarray(shape, dtype=dtype, buffer=mm, offset=data_start + begin)
    for key, arr in arrays.items():
        matrix = arrays.get(key[:-len(ROW_DIGESTS)]) if key.endswith(ROW_DIGESTS) else None
        if key.endswith(ROW_DIGESTS) and (matrix is None or matrix.ndim < 2 or arr.dtype != np.dtype("<u8")
                                          or arr.shape != matrix.shape[:1]):
            raise ModelFormatError(name, "array %r does not hold the row digests of an array of the file" % key)
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
    if isinstance(block, int) and not isinstance(block, bool) and block != BLOCK_BYTES:
        # the identities of models are built from 16 MiB block digests
        raise ModelFormatError(name, "checksums of %d-byte blocks: hsvm files have %d" % (block, BLOCK_BYTES))
    if not isinstance(block, int) or isinstance(block, bool) or not isinstance(arrays, dict) \
            or not all(isinstance(v, list) and all(isinstance(d, str) and len(d) == 16 and _HEX.fullmatch(d)
                                                   for d in v)
                       for v in arrays.values()):
        raise ModelFormatError(name, "malformed checksums")
    if cs.get("header") != _header_digest(kind, version_text, meta_text, specs):
        raise ModelFormatError(name, "header is corrupt: checksum mismatch")
    return arrays, block


def container_kind(path):
    """The ``format`` a container file declares (``hsvm-hash-model``,
    ``hsvm-kernel-hash``, ...), or None when it is not a container: lets a
    command that takes either of two kinds pick the reader, which then
    validates everything."""
    if os.fspath(path) == "-":
        return None             # the reader refuses stdin in its own words
    require_regular_file(os.fspath(path), "hsvm files are memory-mapped")
    fh = open_raw(os.fspath(path))
    with fh:
        head = read_raw(fh, 8, path)
        hlen = _header_length(head)
        return declared_format(head + read_raw(fh, hlen, path)) if hlen else None


def declared_format(head):
    """:func:`container_kind` of a file whose first bytes, its header at
    least, are ``head``: for readers of text given an hsvm file by mistake."""
    hlen = _header_length(head)
    if not hlen or len(head) < 8 + hlen:
        return None
    try:
        md = json.loads(bytes(head[8:8 + hlen]).decode("utf-8")).get("__metadata__")
    except (UnicodeDecodeError, ValueError, RecursionError, AttributeError):
        return None
    kind = md.get("format") if isinstance(md, dict) else None
    return kind if isinstance(kind, str) else None


def _header_length(head):
    # the 8-byte header length a container opens with, or 0 when it cannot be one
    if len(head) < 8:
        return 0
    (hlen,) = struct.unpack("<Q", bytes(head[:8]))
    return hlen if 2 <= hlen <= _MAX_HEADER else 0
