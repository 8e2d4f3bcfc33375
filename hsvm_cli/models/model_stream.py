"""Writing an ``hsvm-model`` file from pieces of W and b that arrive in pair
order -- the merge of pair blocks, the gather of a distributed training --
without ever holding W, byte-identical to :func:`hsvm_cli.models.ovo.save_model`
of the same model.

``save_model`` records the model's identity (``content_sha256``: SHA-256 over
its settings and the xxh3 block digests of its arrays) in the header, and the
header's checksums hold those digests; the header precedes W.  Every digest
and the identity have a fixed length and the number of 16 MiB blocks follows
from the shapes, so the header's length is known before W goes by: it is
written with stand-ins, the digests are computed while W streams, and the
header is rewritten in place at the end
(:func:`hsvm_cli.io.container.write_container_streaming`).  Only ``b`` (``d``
times smaller than W) and the class-score summaries (K x d, summed as the
rows go by) are held, since the file stores them after W.
"""
import numpy as np

from ..io.container import write_container_streaming
from ..preprocess import NORMALIZATIONS
from ..support.arrays import all_finite
from ..support.labels import strictly_increasing
from .class_weights import ClassWeightAccumulator
from .ovo import MODEL_KIND, MODEL_VERSION, ROW_CHECKED, model_identity
from .pairs import canonical_pairs

__all__ = ["write_model_streaming"]

_STAND_IN = "0" * 64   # as long as a SHA-256 hex digest


def write_model_streaming(path, *, classes, bags, normalize, n_features, params, provenance, pieces):
    """Write the full one-vs-one model of ``classes`` (sorted int labels,
    K >= 2) whose classifiers arrive in canonical pair order, byte for byte as
    ``save_model`` writes the same model.

    ``pieces``: a callable returning an iterable of ``(W_rows, b_rows)``:
    float32 ``[r, n_features]`` and ``[r]``, consecutive classifier rows (pair
    ``j // bags``, bag ``j % bags``), ``K(K-1)/2 * bags`` rows in all, finite.
    It is called once, or twice when ``path`` cannot seek (a pipe or device).
    ``params``/``provenance``: recorded as given (JSON-able dicts).  Returns
    the model's ``content_sha256``.  Raises ValueError when the pieces do not
    make up the model; nothing is written then."""
    classes = np.asarray(classes, dtype=np.int64)
    K = classes.shape[0]
    if classes.ndim != 1 or K < 2 or not strictly_increasing(classes):
        raise ValueError("classes must be at least two sorted, unique labels")
    if normalize not in NORMALIZATIONS:
        raise ValueError("unknown normalisation %r" % (normalize,))
    bags, d = int(bags), int(n_features)
    if bags < 1 or d < 0:
        raise ValueError("bags must be positive and n_features non-negative")
    pair_a, pair_b = canonical_pairs(K)
    rows = pair_a.shape[0] * bags
    pairs = np.stack([pair_a, pair_b], axis=1).astype(np.int32)
    meta = {
        "bags": bags,
        "normalize": normalize,
        "n_features": d,
        "params": params,
        "provenance": provenance,
        "content_sha256": _STAND_IN,
    }
    # The order OvoModel.stored_arrays hands them to write_container.
    arrays = {
        "classes": ("<i8", (K,)),
        "pairs": ("<i4", (pairs.shape[0], 2)),
        "W": ("<f4", (rows, d)),
        "b": ("<f4", (rows,)),
        "class_W": ("<f4", (K, d)),
        "class_b": ("<f4", (K,)),
    }

    def produce(write):
        write("classes", classes)
        write("pairs", pairs)
        b_parts = []
        seen = 0
        summaries = ClassWeightAccumulator(pair_a, pair_b, n_classes=K, n_features=d, bags=bags)
        for W_rows, b_rows in pieces():
            W_rows = np.asarray(W_rows)
            b_rows = np.asarray(b_rows)
            if W_rows.ndim != 2 or W_rows.shape[1] != d or b_rows.shape != (W_rows.shape[0],):
                raise ValueError("a piece must be W [r, %d] with b [r]; got %s and %s"
                                 % (d, W_rows.shape, b_rows.shape))
            if seen + W_rows.shape[0] > rows:
                raise ValueError("more classifier rows than the model's %d" % rows)
            if not (all_finite(W_rows) and all_finite(b_rows)):
                raise ValueError("W and b must hold finite values")
            write("W", W_rows)      # a view of a mapped part is written without a copy
            b_parts.append(np.array(b_rows, dtype="<f4"))
            summaries.add(W_rows, b_parts[-1])
            seen += W_rows.shape[0]
        if seen != rows:
            raise ValueError("the pieces held %d classifier rows, the model has %d" % (seen, rows))
        write("b", np.concatenate(b_parts) if b_parts else np.zeros(0, dtype="<f4"))
        class_W, class_b = summaries.result()
        write("class_W", class_W)
        write("class_b", class_b)

    identity = {}

    def final_meta(digests):
        identity["sha256"] = model_identity(bags=bags, normalize=normalize, arrays=arrays, digests=digests)
        return dict(meta, content_sha256=identity["sha256"])

    write_container_streaming(path, arrays, kind=MODEL_KIND, version=MODEL_VERSION, meta=meta, produce=produce,
                              final_meta=final_meta, row_checked=ROW_CHECKED)
    return identity["sha256"]
