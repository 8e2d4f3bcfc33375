"""Part files: one block of the class pairs of a one-vs-one model
(``hsvm-model-part`` containers, docs/formats.md), written by ``train-ovo
--pairs i/N`` and joined by ``merge-models`` (train/merge.py).

A part is never a model: it holds a contiguous range ``pair_start:pair_stop``
of the canonical pairs only, so it is its own kind with its own rules -- the
pairs must be exactly the canonical pairs of its range, W and b their
classifiers, the metadata the full model's settings plus where the block sits.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import ModelFormatError
from ..io.container import read_container, write_container
from ..io.shard import Shard
from ..io.svmlight import MAX_FEATURES
from ..preprocess import NORMALIZATIONS
from ..support.labels import strictly_increasing
from .metadata import check_arrays, meta_dict, meta_int, meta_str
from .ovo import MODEL_VERSION, OvoModel
from .pairs import canonical_pairs

PART_KIND = "hsvm-model-part"
PART_VERSION = 1

__all__ = ["PART_KIND", "PART_VERSION", "ModelPart", "PartFile", "save_part", "read_part"]


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class ModelPart:
    """A block of a one-vs-one model: ``model`` holds only the pairs
    ``pair_start:pair_stop`` of the canonical order (its ``params`` and
    ``provenance`` are those of the full model); ``block`` is the block's
    ``Shard(i, N)``; ``n_pairs`` the full model's pair count; ``output_span``
    the ``(begin, end)`` characters of ``provenance["command"]`` naming the
    part's output file (the merge names its own output there), or None."""

    model: OvoModel
    block: Shard
    pair_start: int
    pair_stop: int
    n_pairs: int
    output_span: tuple = None


def save_part(part, path):
    """Write ``part`` as an ``hsvm-model-part`` container (atomically).

    Arrays as in ``hsvm-model`` but for the block's pairs only: ``classes``
    I64 [K] (all classes), ``pairs`` I32 [p, 2], ``W`` F32 [p*B, d], ``b`` F32
    [p*B].  Metadata: the full model's ``bags``, ``normalize``,
    ``n_features``, ``params`` and ``provenance``, plus ``part``: ``block`` (i),
    ``blocks`` (N), ``pair_start``, ``pair_stop``, ``n_pairs`` (K(K-1)/2),
    ``output_span`` and ``model_format_version`` (the ``hsvm-model`` version
    the merge writes)."""
    if not isinstance(part, ModelPart):
        raise TypeError("save_part takes a ModelPart (train_pair_block's), not %s" % type(part).__name__)
    m = part.model
    _check(part, "<part>")
    meta = {
        "bags": int(m.bags),
        "normalize": m.normalize,
        "n_features": m.n_features,
        "params": m.params,
        "provenance": m.provenance,
        "part": {
            "block": int(part.block.index),
            "blocks": int(part.block.count),
            "pair_start": int(part.pair_start),
            "pair_stop": int(part.pair_stop),
            "n_pairs": int(part.n_pairs),
            "output_span": None if part.output_span is None else [int(v) for v in part.output_span],
            "model_format_version": MODEL_VERSION,
        },
    }
    write_container(path, m.stored_arrays(), kind=PART_KIND, version=PART_VERSION, meta=meta)


def _check(part, name):
    m = part.model
    K = m.n_classes
    pa, pb = canonical_pairs(K)

    def bad(reason):
        raise ModelFormatError(name, reason)
    if part.n_pairs != pa.shape[0] or not 0 <= part.pair_start <= part.pair_stop <= part.n_pairs:
        bad("pair range %d..%d does not fit %d classes" % (part.pair_start, part.pair_stop, K))
    if not (np.array_equal(m.pair_a, pa[part.pair_start:part.pair_stop])
            and np.array_equal(m.pair_b, pb[part.pair_start:part.pair_stop])):
        bad("the model's pairs are not the canonical pairs %d..%d" % (part.pair_start, part.pair_stop))
    if m.W.shape[0] != (part.pair_stop - part.pair_start) * m.bags or m.b.shape != (m.W.shape[0],):
        bad("W/b rows do not match %d pairs x %d bags" % (part.pair_stop - part.pair_start, m.bags))


@dataclass(eq=False)     # arrays inside: compared by identity, not element-wise truth
class PartFile:
    """A validated part file: what must agree across the parts of a model,
    and its arrays (W memory-mapped, verified against its checksums block by
    block through :meth:`verify_rows` as the merge copies it)."""

    path: str
    block: Shard
    pair_start: int
    pair_stop: int
    n_pairs: int
    classes: np.ndarray
    W: np.ndarray
    b: np.ndarray
    bags: int
    normalize: str
    n_features: int
    params: dict
    provenance: dict
    output_span: tuple
    model_format_version: int
    container: object = None

    def verify_rows(self, start, stop):
        """Check rows ``start:stop`` of W against the file's checksums and for
        finite values (ModelFormatError naming the file otherwise)."""
        if stop > start:
            self.container.verify_rows("W", np.arange(start, stop))


def _part_meta(c):
    name = c.path
    part = meta_dict(c, "part")

    def field(key, lo, hi):
        value = part.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ModelFormatError(name, "metadata part.%s must be an integer in [%d, %d], not %r"
                                   % (key, lo, hi, value))
        return value
    blocks = field("blocks", 1, 1 << 40)
    block = field("block", 0, blocks - 1)
    n_pairs = field("n_pairs", 1, 1 << 62)
    start = field("pair_start", 0, n_pairs)
    stop = field("pair_stop", start, n_pairs)
    version = field("model_format_version", 1, 1 << 20)
    span = part.get("output_span")
    if span is not None:
        if not (isinstance(span, list) and len(span) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in span) and 0 <= span[0] <= span[1]):
            raise ModelFormatError(name, "metadata part.output_span must be null or [begin, end]")
        span = (span[0], span[1])
    return Shard(block, blocks), start, stop, n_pairs, span, version


def read_part(path):
    """Open and validate a part file (W memory-mapped and verified lazily);
    raises ModelFormatError naming the file for anything inconsistent."""
    c = read_container(path, kind=PART_KIND, versions={PART_VERSION}, lazy=("W",))
    name = c.path
    check_arrays(c, (("classes", np.int64, 1), ("pairs", np.int32, 2), ("W", np.float32, 2),
                     ("b", np.float32, 1)))
    block, start, stop, n_pairs, span, model_version = _part_meta(c)
    bags = meta_int(c, "bags", 1, 1 << 20)
    normalize = meta_str(c, "normalize", NORMALIZATIONS)
    d = meta_int(c, "n_features", 0, MAX_FEATURES)
    params, prov = meta_dict(c, "params"), meta_dict(c, "provenance")
    classes = c.arrays["classes"]
    K = classes.shape[0]

    def bad(reason):
        raise ModelFormatError(name, reason)
    if K < 2 or not strictly_increasing(classes):
        bad("classes must be at least two sorted, unique labels")
    if n_pairs != K * (K - 1) // 2:
        bad("n_pairs %d does not match %d classes" % (n_pairs, K))
    pa, pb = canonical_pairs(K)
    pairs = c.arrays["pairs"]
    if pairs.shape != (stop - start, 2) or not (np.array_equal(pairs[:, 0], pa[start:stop])
                                                and np.array_equal(pairs[:, 1], pb[start:stop])):
        bad("pairs are not the canonical pairs %d..%d" % (start, stop))
    rows = (stop - start) * bags
    if c.arrays["W"].shape != (rows, d) or c.arrays["b"].shape != (rows,):
        bad("W/b shapes do not match %d pairs x %d bags x %d features" % (stop - start, bags, d))
    command = prov.get("command")
    if span is not None and not (isinstance(command, str) and span[1] <= len(command)):
        bad("part.output_span lies outside the recorded command")
    return PartFile(path=name, block=block, pair_start=start, pair_stop=stop, n_pairs=n_pairs, classes=classes,
                    W=c.arrays["W"], b=c.arrays["b"], bags=bags, normalize=normalize, n_features=d, params=params,
                    provenance=prov, output_span=span, model_format_version=model_version, container=c)
