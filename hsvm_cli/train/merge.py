"""Joining part files (``train-ovo --pairs i/N``) into the model file one
``train-ovo`` run writes, byte for byte (``hsvm merge-models``).

The parts must be of one model: the same training input (its SHA-256), the
same parameters (seed, C, solver, tolerance, per-class limit, bags, LIBLINEAR
version, normalisation), hsvm version, classes, width and model format; and
together they must hold every pair exactly once.  Anything else is refused
before a byte is written, naming the two files and what differs, or the
missing or doubled pairs and blocks.

Streaming: the parts are first opened one at a time for their headers and
small arrays; then each part's W is memory-mapped in turn, checked against
its checksums 16 MiB at a time and written on
(:func:`hsvm_cli.models.model_stream.write_model_streaming`), so memory stays
bounded by one piece and ``b`` whatever the model's size.
"""
import os
import shlex
import time
from dataclasses import dataclass

import numpy as np

from ..errors import ModelMismatchError
from ..io.files import refuse_overwriting_input, regular_file_size
from ..models.model_stream import write_model_streaming
from ..models.parts import read_part

__all__ = ["merge_models", "MergeReport"]

# W bytes copied per piece: bounded memory whatever the model size, and the
# checksum block size, so each piece verifies one or two blocks of a part.
_PIECE_BYTES = 16 << 20


@dataclass
class MergeReport:
    """What :func:`merge_models` did: parts merged, pairs and classifiers
    written, the model's ``content_sha256``, bytes written and seconds taken."""

    n_parts: int
    n_pairs: int
    n_classifiers: int
    content_sha256: str
    bytes_written: int
    seconds: float


def _summary(info):
    """What must agree across the parts of one model."""
    prov = info.provenance
    return {
        "training input digest (train_sha256)": prov.get("train_sha256"),
        "parameters": info.params,
        "hsvm version": prov.get("hsvm_version"),
        "bags": info.bags,
        "normalisation": info.normalize,
        "n_features": info.n_features,
        "model format version": info.model_format_version,
    }


def _shown(value, limit=80):
    # a long value (a class weight per class) cut short: the message stays a line; a parameter not
    # given (per_class None) in the words a user gave it in, not Python's
    text = "(not given)" if value is None else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_MISSING = object()


def _first_difference(a, b, path=""):
    """The path to where two values first differ (into dicts by key, lists
    by position, short lists whole) and the two values there, so that a
    message cut short still shows it (a class weight per class: the 12th
    entry, not the first 80 characters of both lists)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k, _MISSING) != b.get(k, _MISSING):
                return _first_difference(a.get(k, _MISSING), b.get(k, _MISSING), "%s[%r]" % (path, k))
    if isinstance(a, list) and isinstance(b, list) and len(repr(a)) + len(repr(b)) > 40:
        for i in range(max(len(a), len(b))):
            x, y = a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING
            if x != y:
                return _first_difference(x, y, "%s[%d]" % (path, i))
    return path, a, b


def _shown_missing(value):
    return "(none)" if value is _MISSING else _shown(value)


def _weights_shown(record):
    """A class_weight record beside none, by its classes whose weight is not
    1 (the ones that make it differ), not its first 80 characters."""
    if record is _MISSING or not isinstance(record, dict):
        return _shown_missing(record)
    off = [(label, w) for label, w in record.get("weights", []) if w != 1.0]
    text = ", ".join("%s: %g" % (label, w) for label, w in off[:5]) + (", ..." if len(off) > 5 else "")
    return "%s (%s)" % (record.get("rule"), text or "every weight 1")


def _describe_difference(key, a, b):
    if key == "parameters" and isinstance(a, dict) and isinstance(b, dict):
        diffs = []
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                x, y = a.get(k, _MISSING), b.get(k, _MISSING)
                if k == "class_weight" and _MISSING in (x, y):
                    diffs.append("%s %s vs %s" % (k, _weights_shown(x), _weights_shown(y)))
                    continue
                path, x, y = _first_difference(x, y)
                diffs.append("%s%s %s vs %s" % (k, path, _shown_missing(x), _shown_missing(y)))
        return "different parameters (%s)" % ", ".join(diffs)
    if key.startswith("training input digest") and isinstance(a, str) and isinstance(b, str):
        # the digest is of the bytes as stored: the same rows compressed and not differ
        return "different %s (%r vs %r; the digest is of the training file's bytes as stored, so the same data " \
               "compressed and uncompressed, or compressed otherwise, differ too: train every part from one file)" \
               % (key, a, b)
    return "different %s (%r vs %r)" % (key, a, b)


def _check_parts(paths):
    """Validate the parts and return their (path, start, stop) in pair order
    (empty blocks left out) and the classes.  Each part is opened, read for
    its header and small arrays, and closed again."""
    if not paths:
        raise ValueError("no model parts to merge")
    ref = None
    spans = []
    for path in paths:
        info = read_part(path)
        summary = _summary(info)
        if ref is None:
            ref = (info.path, summary, np.array(info.classes))
        else:
            ref_path, ref_summary, ref_classes = ref
            for key in ref_summary:
                if summary[key] != ref_summary[key]:
                    raise ModelMismatchError("%s and %s are not parts of one model: %s"
                                             % (ref_path, info.path,
                                                _describe_difference(key, ref_summary[key], summary[key])))
            if not np.array_equal(info.classes, ref_classes):
                raise ModelMismatchError("%s and %s are not parts of one model: different classes"
                                         % (ref_path, info.path))
        spans.append((info.pair_start, info.pair_stop, info.path, info.block))
        del info
    classes = ref[2]
    n_pairs = classes.shape[0] * (classes.shape[0] - 1) // 2
    spans.sort(key=lambda t: (t[0], t[1]))
    # parts of two splits overlap or leave gaps: say that, not the pairs it shows as
    _check_block_counts(spans)
    pos = 0
    holder = None
    ordered = []
    for start, stop, path, block in spans:
        if start == stop:
            continue
        if start < pos:
            raise ModelMismatchError("%s and %s both hold pairs %d..%d: each pair must be in exactly one part"
                                     % (holder, path, start, min(stop, pos) - 1))
        if start > pos:
            raise ModelMismatchError("pairs %d..%d of %d are in no part%s"
                                     % (pos, start - 1, n_pairs, _missing_blocks_hint(spans)))
        ordered.append((path, start, stop))
        pos, holder = stop, path
    if pos != n_pairs:
        raise ModelMismatchError("pairs %d..%d of %d are in no part%s"
                                 % (pos, n_pairs - 1, n_pairs, _missing_blocks_hint(spans)))
    # the pairs are covered once; the empty blocks must add up too
    _check_blocks(spans)
    return ordered, classes


def _check_block_counts(spans):
    # first of the checks: parts of two splits overlap or leave gaps, which
    # would otherwise be reported as pairs doubled or missing
    counts = sorted({block.count for _, _, _, block in spans})
    if len(counts) > 1:
        # one part of each split, named with its block
        first = {}
        for _, _, path, block in spans:
            first.setdefault(block.count, "%s (block %d/%d)" % (path, block.index, block.count))
        raise ModelMismatchError("the parts come from splits into different numbers of blocks (%s): merge the "
                                 "parts of one split" % ", ".join(first[n] for n in counts))


def _check_blocks(spans):
    """Every block i/N of one N, each once (an empty block too: a part given
    twice, or parts of two different splits, are a mistake even when their
    pairs happen to cover the model)."""
    seen = {}
    for _, _, path, block in spans:
        if block.index in seen:
            raise ModelMismatchError("block %d/%d is given twice (%s and %s)"
                                     % (block.index, block.count, seen[block.index], path))
        seen[block.index] = path
    missing = _missing_blocks(spans)
    if missing:
        raise ModelMismatchError("%s of the split" % missing)


def _missing_blocks(spans):
    """"missing blocks i/N, ..." for the blocks of one split no part holds,
    or "" (none missing, or parts of different splits)."""
    counts = {block.count for _, _, _, block in spans}
    if len(counts) != 1:
        return ""
    (n,) = counts
    present = {block.index for _, _, _, block in spans}
    missing = [i for i in range(n) if i not in present]
    if not missing:
        return ""
    return "missing block%s %s" % ("s" if len(missing) > 1 else "", ", ".join("%d/%d" % (i, n) for i in missing))


def _missing_blocks_hint(spans):
    missing = _missing_blocks(spans)
    return " (%s)" % missing if missing else ""


def merge_models(part_paths, output, *, recorded_output=None, progress=False):
    """Join part files (in any order) into the full model file ``output``.

    Checks that the parts come from the same training input (SHA-256),
    parameters (seed included), hsvm version, classes and settings, and that
    together they hold every pair exactly once; otherwise raises
    :class:`~hsvm_cli.errors.ModelMismatchError` saying what differs or which
    pairs (blocks) are missing or doubled.  A damaged part raises
    :class:`~hsvm_cli.errors.ModelFormatError`.  Writes, atomically, the file a
    single ``train-ovo`` run with the same options writes, byte for byte: the
    same arrays and metadata, checksums and identity included.  The recorded
    command is that of the part holding pair 0, with its output replaced by
    ``recorded_output`` (default: ``output`` as given) -- the command the
    single run would have been.  ``progress``: a tqdm bar on stderr.

    Streams: one part is memory-mapped at a time and its W verified and copied
    in 16 MiB pieces.  Returns a :class:`MergeReport`."""
    t0 = time.perf_counter()
    if isinstance(part_paths, (str, bytes, os.PathLike)):
        # a string had been taken one character at a time ("p: no such file")
        raise TypeError("part_paths must be a list of part files, not one path (%r): merge_models([path, ...], "
                        "output)" % (os.fspath(part_paths),))
    paths = [os.fspath(p) for p in part_paths]
    refuse_overwriting_input(output, paths)
    ordered, classes = _check_parts(paths)
    first = read_part(ordered[0][0])
    provenance = dict(first.provenance)
    if first.output_span is not None:
        begin, end = first.output_span
        name = os.fspath(output) if recorded_output is None else recorded_output
        provenance["command"] = provenance["command"][:begin] + shlex.quote(name) + provenance["command"][end:]
    bags, normalize, d, params = first.bags, first.normalize, first.n_features, first.params
    del first
    rows_total = sum(stop - start for _, start, stop in ordered) * bags
    step = max(1, _PIECE_BYTES // max(1, d * 4))

    def pieces():
        bar = _progress(rows_total, progress)
        try:
            for path, start, stop in ordered:
                part = read_part(path)
                if (part.pair_start, part.pair_stop) != (start, stop):
                    raise ModelMismatchError("%s changed during the merge" % path)
                n = part.W.shape[0]
                for r in range(0, n, step):
                    part.verify_rows(r, min(n, r + step))
                    yield part.W[r:r + step], part.b[r:r + step]     # views of the mapped part, no copy
                    bar.update(min(step, n - r))
                del part
        finally:
            bar.close()

    digest = write_model_streaming(output, classes=classes, bags=bags, normalize=normalize, n_features=d,
                                   params=params, provenance=provenance, pieces=pieces)
    size = regular_file_size(output) or 0
    return MergeReport(n_parts=len(paths), n_pairs=rows_total // bags, n_classifiers=rows_total,
                       content_sha256=digest, bytes_written=size, seconds=time.perf_counter() - t0)


def _progress(total, enabled):
    from ..support.progress import counting_bar
    return counting_bar(total, enabled, unit="clf", desc="merge-models")
