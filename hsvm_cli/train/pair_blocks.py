"""Training a one-vs-one model by blocks of class pairs (``train-ovo --pairs
i/N``), for job arrays and Dask tasks; train/merge.py joins the blocks.

The K(K-1)/2 pair problems of :func:`hsvm_cli.train.liblinear.train_pairs`
are independent, and each classifier depends only on its two classes' rows,
the options and the seed (it is seeded by the pair's labels), so task ``i`` of
a job array can train block ``i`` of ``N`` into a part file
(:mod:`hsvm_cli.models.parts`) and the merge joins the parts into the very
file one ``train-ovo`` run writes, byte for byte.

Partition.  Pairs are taken in canonical order (a < b, a-major; see
:func:`hsvm_cli.models.pairs.canonical_pairs`) and cut into N *contiguous*
ranges of nearly equal estimated cost, the rows of each pair problem,

    cost(a, b) = m_a + m_b,   m_k = min(n_k, per_class)   (n_k if per_class is None),

cutting block i's start at the pair boundary whose cost prefix is nearest to
i·T/N (T the total cost; ties to the earlier pair), compared in exact
integers, so every machine computes the same cut.  Every block then costs
within one pair's cost of T/N.  Contiguous ranges rather than a greedy (LPT)
assignment: each part then holds one run of consecutive W rows, so the merge
copies the parts one after the other, reading each once, sequentially; LPT's
slightly better balance is not worth a scattered merge when thousands of
pairs make the blocks even anyway.  The cut depends on the class counts only,
so every task computes the same blocks from the same training file without
talking to the others.  (Rows are the cost model because the solvers' work
per pass over a pair problem is linear in its rows.)
"""
import os
import shlex
import sys
import time

import numpy as np

from ..errors import DataError
from ..io.files import display_name
from ..io.shard import parse_shard
from ..models.parts import ModelPart
from ..models.provenance import record_zero_based, recorded_command
from ..predict.samples import finite_samples
from ..support.labels import integer_labels
from ..support.text import counted
from .ovo import read_training_file, train_ovo

__all__ = ["pair_costs", "block_bounds", "pair_block", "part_command", "train_pair_block",
           "train_pair_block_file"]

_OUTPUT_MARK = "HSVM_OUTPUT_MARK"


def pair_costs(class_counts, *, per_class=None):
    """Estimated cost of each canonical pair: the rows of its problem,
    ``min(n_a, per_class) + min(n_b, per_class)``.  int64 [K(K-1)/2]."""
    from ..models.pairs import canonical_pairs
    n = np.asarray(class_counts, dtype=np.int64)
    if n.ndim != 1 or n.shape[0] < 2 or np.any(n < 1):
        raise ValueError("class_counts must list at least two positive counts")
    if per_class is not None:
        if isinstance(per_class, bool) or int(per_class) != per_class or per_class < 1:
            raise ValueError("per_class must be a positive integer or None, not %r" % (per_class,))
        n = np.minimum(n, int(per_class))
    a, b = canonical_pairs(n.shape[0])
    return n[a] + n[b]


def block_bounds(costs, n_blocks):
    """Cut points of ``n_blocks`` contiguous blocks of nearly equal total cost:
    int64 [n_blocks + 1], non-decreasing, from 0 to ``len(costs)``; block ``i``
    is pairs ``bounds[i]:bounds[i+1]`` (empty when there are more blocks than
    pairs).  Cut ``i`` is the pair boundary whose cost prefix is nearest to
    ``i * total / n_blocks`` (ties to the earlier boundary)."""
    costs = np.asarray(costs, dtype=np.int64)
    if costs.ndim != 1 or np.any(costs < 1):
        raise ValueError("costs must be positive")
    if isinstance(n_blocks, bool) or int(n_blocks) != n_blocks or n_blocks < 1:
        raise ValueError("n_blocks must be a positive integer, not %r" % (n_blocks,))
    n_blocks = int(n_blocks)
    prefix = np.concatenate([[0], np.cumsum(costs)])       # prefix[p] = cost of pairs < p
    total = int(prefix[-1])
    if total * n_blocks >= 2**63:
        raise ValueError("costs too large to partition exactly")
    # Compare prefix * N with i * T in integers: exact, so the cut is the
    # same on every machine.
    scaled = prefix * n_blocks
    targets = np.arange(n_blocks + 1, dtype=np.int64) * total
    hi = np.searchsorted(scaled, targets, side="left")      # first prefix >= target
    lo = np.maximum(hi - 1, 0)
    hi_c = np.minimum(hi, prefix.shape[0] - 1)
    take_lo = (targets - scaled[lo]) <= (scaled[hi_c] - targets)
    bounds = np.where(take_lo, lo, hi_c).astype(np.int64)
    bounds[0], bounds[-1] = 0, costs.shape[0]
    return np.maximum.accumulate(bounds)


def pair_block(class_counts, block, *, per_class=None):
    """``(start, stop)``: the canonical pairs of block ``block`` (a Shard,
    ``"i/N"``, ``(i, N)`` or ``"slurm"``; 0-based) for classes with
    ``class_counts``."""
    index, count = parse_shard(block)
    costs = pair_costs(class_counts, per_class=per_class)
    prefix = np.concatenate([[0], np.cumsum(costs)])
    # Only this block's two cuts, in Python's integers: block_bounds' N + 1
    # cuts took 8 bytes a block (--pairs 0/4294967296: 32 GiB before a
    # refusal) and its int64 products overflowed past N = 2^63 / total.
    return _cut(prefix, index, count), _cut(prefix, index + 1, count)


def _cut(prefix, i, n_blocks):
    """Cut ``i`` of :func:`block_bounds` (the pair boundary whose cost prefix
    is nearest to ``i * total / n_blocks``, ties to the earlier one), exactly."""
    total = int(prefix[-1])
    if i <= 0 or i >= n_blocks:
        return 0 if i <= 0 else prefix.shape[0] - 1
    target = i * total                               # compared with prefix[p] * n_blocks
    hi = int(np.searchsorted(prefix, -(-target // n_blocks), side="left"))   # first prefix * N >= target
    lo = max(hi - 1, 0)
    hi = min(hi, prefix.shape[0] - 1)
    return lo if target - int(prefix[lo]) * n_blocks <= int(prefix[hi]) * n_blocks - target else hi


def part_command(argv=None):
    """The command a merged model records, from the ``train-ovo`` command line
    ``argv`` (default ``sys.argv``) of one of its parts:
    :func:`~hsvm_cli.models.provenance.recorded_command`'s (``--pairs``,
    ``--dask``, ``--jobs``, ``--quiet`` dropped).  Returns ``(command, span)``,
    where ``span`` = ``(begin, end)`` locates the value of ``-o``/``--output``
    in the command, quoted for the shell as it stands there (None when
    ``argv`` is not a ``train-ovo`` command with one), so the merge can name
    its own output there."""
    argv = [os.fsdecode(a) for a in (sys.argv if argv is None else argv)]
    # The output's place is held by a word that needs no quoting and that no
    # argument contains, then filled with the output quoted for the shell
    # (-o'my part', --output='my part': still one word).
    mark = _OUTPUT_MARK
    while any(mark in arg for arg in argv):
        mark += "_"
    kept = argv[:1]
    value = None
    seen_command = False
    options_end = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            options_end = True
        elif arg == "train-ovo" and not seen_command:
            seen_command = True
        elif seen_command and not options_end and value is None:
            if arg in ("-o", "--output") and i + 1 < len(argv):
                value = argv[i + 1]
                kept.extend([arg, mark])
                i += 2
                continue
            if arg.startswith("--output="):
                value = arg[len("--output="):]
                kept.append("--output=" + mark)
                i += 1
                continue
            if arg.startswith("-o") and not arg.startswith("--") and len(arg) > 2:
                value = arg[2:]
                kept.append("-o" + mark)
                i += 1
                continue
        kept.append(arg)
        i += 1
    command = recorded_command(kept)
    if value is None:
        return command, None
    at = command.find(mark)
    quoted = shlex.quote(value)
    return command.replace(mark, quoted), (at, at + len(quoted))


def train_pair_block(X, y, *, block, normalize="l2", C=1.0, solver="l2loss-dual", tol=None, per_class=None,
                     bags=1, seed=0, jobs=1, progress=False, train_path=None, train_sha256=None, argv=None,
                     bias="auto", class_weight=None):
    """Train block ``block`` (``Shard(i, N)``, ``"i/N"``, ``(i, N)`` or
    ``"slurm"``) of the class pairs of ``(X, y)``: the same classifiers, bit for
    bit, that :func:`hsvm_cli.train.ovo.train_ovo` with the same options gives
    those pairs (``bias``, as there, is resolved from all of X, so every
    block trains with the same B).  ``train_path``/``train_sha256`` name the training input
    (recorded, and checked equal by the merge); ``argv`` is the command line to
    record (default ``sys.argv``; see :func:`part_command`).  Returns a
    :class:`~hsvm_cli.models.parts.ModelPart` (save it with
    :func:`~hsvm_cli.models.parts.save_part`)."""
    block = parse_shard(block)
    X = finite_samples(X)           # nested lists too, as train_ovo takes them
    labels = integer_labels(y, X.shape[0])
    classes, counts = np.unique(labels, return_counts=True)
    if classes.shape[0] < 2:
        raise DataError("y must contain at least two classes, found %d" % classes.shape[0])
    start, stop = pair_block(counts, block, per_class=per_class)
    model = train_ovo(X, labels, normalize=normalize, C=C, solver=solver, tol=tol, per_class=per_class,
                      bags=bags, seed=seed, jobs=jobs, progress=progress, train_path=train_path,
                      train_sha256=train_sha256, pairs=range(start, stop), bias=bias, class_weight=class_weight)
    command, span = part_command(argv)
    model.provenance = dict(model.provenance, command=command)
    K = classes.shape[0]
    return ModelPart(model=model, block=block, pair_start=start, pair_stop=stop, n_pairs=K * (K - 1) // 2,
                     output_span=span)


def train_pair_block_file(path, *, block, zero_based=False, log=None, **kw):
    """What ``hsvm train-ovo --pairs i/N`` does: read the svmlight file
    ``path`` once (hashing it) and train block ``block`` of its pairs;
    keyword arguments as :func:`train_pair_block`.  ``log(message)``: called
    with a line when the block starts and ends (progress of a batch task).
    Returns the :class:`~hsvm_cli.models.parts.ModelPart`."""
    block = parse_shard(block)
    t0 = time.perf_counter()
    X, y, sha = read_training_file(path, zero_based=zero_based)
    classes, counts = np.unique(y, return_counts=True)
    if classes.shape[0] < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d"
                        % (display_name(path), classes.shape[0]))
    start, stop = pair_block(counts, block, per_class=kw.get("per_class"))
    n_pairs = classes.shape[0] * (classes.shape[0] - 1) // 2
    if log is not None:
        held = "no pairs" if stop == start else "pairs %d..%d (%s)" % (start, stop - 1, counted(stop - start, "pair"))
        log("block %s: %s of %d, %d samples read in %.1f s" % (block, held, n_pairs, X.shape[0],
                                                              time.perf_counter() - t0))
    part = train_pair_block(X, y, block=block, train_path=display_name(path), train_sha256=sha, **kw)
    record_zero_based(part.model.provenance, zero_based)
    if log is not None:
        log("block %s: %s trained in %.1f s" % (block, counted(part.model.n_classifiers, "classifier"),
                                                 time.perf_counter() - t0))
    return part
