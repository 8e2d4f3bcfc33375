"""An input's first lines parsed on the idle core while the interpreter loads
its modules (native/svmparse_early.c).

``hsvm predict`` spends its first ~0.1 s loading numpy, click and hsvm's
modules on one core; its input was then parsed on two.  :func:`start`
parses the input's first lines on a thread of its own from the command's
first moment; the reader (io/svmlight.py) then adopts those rows when it
opens the same file -- same device, inode, size, modification and change
time -- with options the early parse agrees with, and parses on from the line
where it stopped.  The rows are those of the reader's own parse: the same parser
on the same lines (its results do not depend on how lines are batched), and
every case the early parse cannot settle alone ends it -- a malformed line
(reported by the reader with its line number), a row incomplete or wider than
the first (the model's width decides), compressed text, a line longer than a
block.  An early parse the reader never claims (another subcommand path, an
error before the input is read) costs the idle core's time and is dropped.

Only a command line starts one (:mod:`hsvm_cli.cli.early_input`); the library's
readers never wait for anything they did not start."""
import os

__all__ = ["start", "pending", "claim", "discard"]

#: The most text an early parse reads: about what one core parses (~1 GB/s)
#: in the ~0.15 s the interpreter and the modules take to load.  Beyond it
#: the reader, on every thread it has, is as fast.
MAX_TEXT = 192 << 20

_pending = None     # (the path as given, the C parse)


def start(path, *, zero_based, chunk_rows, _max_text=MAX_TEXT, _block=0):
    """Start parsing the file ``path`` on a thread of its own (any early
    parse not yet claimed is dropped first).  Returns whether it started: a
    path that cannot be opened as a regular file, or a thread that cannot be
    started, leaves the reader to do it all.  (``_max_text`` and ``_block``,
    the bytes read at a time, are for tests.)"""
    global _pending
    discard()
    from .._native import ffi, lib
    ep = lib.hsvm_early_parse_start(os.fsencode(path), bool(zero_based), int(chunk_rows), int(_max_text), int(_block))
    if ep == ffi.NULL:
        return False
    _pending = (path, ep)
    return True


def pending():
    """Whether an early parse waits for its reader."""
    return _pending is not None


def _finish():
    """Let the pending early parse run to where it stops on its own (tests:
    a reader that comes at once would otherwise find it barely started)."""
    if _pending is not None:
        from .._native import lib
        lib.hsvm_early_parse_join(_pending[1])


def discard():
    """Stop and free the early parse no reader claimed."""
    global _pending
    if _pending is not None:
        from .._native import lib
        lib.hsvm_early_parse_free(_pending[1])
        _pending = None


class EarlyRows:
    """The rows of an early parse handed to a reader: CSR arrays sized for a
    chunk (``row_cap`` rows, ``nnz_cap`` values; ``indices`` None when every
    row holds all of the width's columns), the parser's fill state, and where
    the reader goes on: byte ``consumed`` of the file, 0-based line
    ``lines``; ``first_line`` is the first row's 1-based line (0: none)."""

    def __init__(self, ep):
        import numpy as np

        from .._native import ffi, lib

        def take(field, ctype, dtype, count):
            pointer = getattr(ep, field)
            if pointer == ffi.NULL:
                return None
            owned = ffi.gc(ffi.cast(ctype, pointer), lib.hsvm_early_parse_release)
            setattr(ep, field, ffi.NULL)
            return np.frombuffer(ffi.buffer(owned, count * np.dtype(dtype).itemsize), dtype=dtype)

        self.row_cap, self.nnz_cap = int(ep.row_cap), int(ep.nnz_cap)
        self.indptr = take("indptr", "int64_t *", np.int64, self.row_cap + 1)
        self.labels = take("labels", "int64_t *", np.int64, self.row_cap)
        self.indices = take("indices", "int32_t *", np.int32, self.nnz_cap)
        self.values = take("values", "float *", np.float32, self.nnz_cap)
        self.rows, self.nnz, self.max_col = int(ep.st.rows), int(ep.st.nnz), int(ep.st.max_col)
        self.consumed, self.lines, self.first_line = int(ep.consumed), int(ep.lines), int(ep.first_line)


def claim(path, fileno, *, zero_based, n_features, chunk_rows, float32, csr_arrays):
    """The early parse of ``path`` as :class:`EarlyRows`, when the reader
    about to read it from descriptor ``fileno`` (offset 0) with these options
    would have parsed the same rows; else None.  Either way the early parse is
    no longer pending: it is handed over once, or dropped."""
    global _pending
    if _pending is None:
        return None
    if _pending[0] != path:
        # the command reads another file first: it was not the input
        discard()
        return None
    ep = _pending[1]
    _pending = None
    from .._native import lib
    try:
        lib.hsvm_early_parse_stop(ep)
        if not (ep.usable and ep.st.rows > 0 and _same_file(ep, fileno) and bool(ep.zero_based) == bool(zero_based)
                and float32 and ep.st.rows <= chunk_rows):
            return None
        if ep.complete:
            # the reader leaves out indices only for a fixed width the rows fill
            if not csr_arrays or n_features != ep.n_features:
                return None
        elif n_features is not None:
            if ep.st.max_col >= n_features:
                # a column beyond the width: the reader's error, or a column it drops
                return None
            if csr_arrays and ep.indptr[1] - ep.indptr[0] == n_features:
                # a first row with every column: the reader would have kept no indices
                return None
        return EarlyRows(ep)
    finally:
        lib.hsvm_early_parse_free(ep)


def _same_file(ep, fileno):
    try:
        st = os.fstat(fileno)
    except OSError:
        return False
    # the change time too: a file rewritten in place at the same size with
    # its modification time put back (cp -p, rsync --inplace -t) has a new one
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
        ep.dev, ep.ino, ep.size, ep.mtime_s * 1_000_000_000 + ep.mtime_ns, ep.ctime_s * 1_000_000_000 + ep.ctime_ns)
