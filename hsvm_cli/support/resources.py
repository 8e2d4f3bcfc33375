"""What one cluster task needs and may use: the memory of a training block or
a prediction shard, and its threads.

The memory estimates add the large arrays a task holds at its peak, from the
data's shape alone, so a job script can ask for ``--mem`` before anything runs.
They leave out the Python runtime with numpy, scipy and hsvm loaded (about
50 MB resident); ``bench/bench_cluster.py`` prints them beside the measured
peaks.

Threads.  hsvm's own thread pools take ``--threads``, whose default is
OMP_NUM_THREADS, else SLURM_CPUS_PER_TASK, else the CPUs of this process's
affinity mask (:func:`hsvm_cli.support.threads.default_threads`).  The BLAS
under numpy (exact prediction's products) reads its thread count once, when
it is loaded, from OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS,
and otherwise takes every core it sees -- on a shared node that is the whole
node, not the task's CPUs.  :func:`blas_threads_from_slurm` therefore sets
those variables to SLURM_CPUS_PER_TASK before anything loads the BLAS (the
``hsvm`` command calls it first thing), so that N tasks of c CPUs each run N x
c threads, never more.  Training (``--jobs``) forks worker processes of one
thread each.
"""
import os

from .threads import default_threads

__all__ = ["training_block_memory", "prediction_shard_memory", "task_threads", "blas_threads_from_slurm",
           "blas_waits_briefly", "BLAS_VARIABLES", "BLAS_SPIN"]

#: The variables the common BLAS libraries read their thread count from.
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def training_block_memory(*, n_rows, nnz, n_features, n_classifiers):
    """Estimated peak bytes of training one block in one process, by part:
    the parsed file (CSR, float64 values, int32 indices; twice, since the
    parser's arrays grow by doubling and the last growth copies), its
    normalised copy, LIBLINEAR's row pool (16-byte nodes, two extra per row),
    the block's W and b (float32), and the per-problem buffers (addresses and
    labels of up to every row, LIBLINEAR's own dual variables).
    ``n_classifiers``: pairs of the block times bags.  Returns a dict with the
    parts and ``"total"``."""
    csr = nnz * 12 + (n_rows + 1) * 8 + n_rows * 8
    parts = {
        "parsed": 2 * csr,
        "normalised": csr,
        "row_pool": (nnz + 2 * n_rows) * 16,
        "weights": n_classifiers * (n_features + 1) * 4,
        "problem": n_rows * (8 + 8 + 8 * 3) + (n_features + 1) * 8 * 2,
    }
    parts["total"] = sum(parts.values())
    return parts


def prediction_shard_memory(*, n_features, n_classes, n_classifiers, chunk_rows, nnz_per_row=None,
                            sparse=False, decision_block_bytes=None):
    """Estimated peak bytes of exact prediction of a shard, by part: the model
    (W and b float32, memory-mapped -- every page is read, so all of it
    becomes resident, shared between tasks on one node through the page
    cache), with ``sparse`` (chunks too sparse to densify) the transposed copy
    of W that sparse scoring makes, one parsed chunk (CSR float64, twice for
    the parser's growth by doubling; its float32 copy and the normalised copy
    of that; the dense float32 block when dense enough), the blocks of
    decision values (rows x classifiers float32, as many rows as
    :func:`hsvm_cli.predict.exact.block_rows_for` gives, or as fit
    ``decision_block_bytes`` when given; two are alive at once, since the next is
    computed while the last is still held), and the chunk's votes and
    confidences.  ``nnz_per_row`` defaults to dense rows.  A shard's memory
    does not grow with the shard: it is bounded by ``chunk_rows``
    (``--chunk-rows``).  Returns a dict with the parts and ``"total"``."""
    nnz = chunk_rows * (n_features if nnz_per_row is None else nnz_per_row)
    W = n_classifiers * (n_features + 1) * 4
    dense_chunk = chunk_rows * n_features * 4
    if decision_block_bytes is None:
        from ..predict.exact import block_rows_for
        block_rows = min(chunk_rows, block_rows_for(n_classifiers))
    else:
        block_rows = min(chunk_rows, max(1, min(8192, decision_block_bytes // max(1, 4 * n_classifiers))))
    parts = {
        "model": W,
        "model_transposed": W if sparse else 0,
        "chunk": int(2 * (nnz * 12 + (chunk_rows + 1) * 8) + 2 * nnz * 8 + (0 if sparse else dense_chunk)),
        "decision_blocks": 2 * block_rows * n_classifiers * 4,
        "votes": chunk_rows * n_classes * 12,
    }
    parts["total"] = sum(parts.values())
    return parts


def task_threads():
    """Threads one task may use: OMP_NUM_THREADS, else SLURM_CPUS_PER_TASK in
    a Slurm task, else the CPUs of this process's affinity mask."""
    return default_threads()


def blas_threads_from_slurm(environ=None):
    """Inside a Slurm task (SLURM_CPUS_PER_TASK set to a positive integer),
    set each of :data:`BLAS_VARIABLES` that is unset to it, in ``environ``
    (default ``os.environ``); variables the user set are kept.  Must run
    before numpy loads its BLAS to take effect.  Returns the names set."""
    env = os.environ if environ is None else environ
    cpus = env.get("SLURM_CPUS_PER_TASK", "").strip()
    if not cpus.isdigit() or int(cpus) < 1:
        return []
    chosen = env.get("OMP_NUM_THREADS", "").strip() or str(int(cpus))
    set_now = [var for var in BLAS_VARIABLES if not env.get(var, "").strip()]
    for var in set_now:
        env[var] = chosen
    return set_now


#: OPENBLAS_THREAD_TIMEOUT the hsvm command sets when it is unset: OpenBLAS's
#: idle threads poll for 2^16 cycles (~20 us) before they sleep, instead of
#: its default 2^28 (~0.1 s).  hsvm calls the BLAS for one large product at a
#: time (a chunk's projection) and then runs its own threads (Hamming voting,
#: refine), which the polling threads had been taking cores from: on two cores
#: a hashed predict spent 11-12% of its CPU time in them (none after); its
#: whole process, median of 11, went from 0.435 to 0.368 s in a quiet moment
#: (bench/bench_input_path.py's files) and did not change in a busy one;
#: exact prediction, whose products are hsvm's own, was unchanged.
BLAS_SPIN = "16"


def blas_waits_briefly(environ=None):
    """Set OPENBLAS_THREAD_TIMEOUT to :data:`BLAS_SPIN` in ``environ``
    (default ``os.environ``) unless the user set it.  Must run before numpy
    loads its BLAS to take effect.  Returns whether it was set."""
    env = os.environ if environ is None else environ
    if env.get("OPENBLAS_THREAD_TIMEOUT", "").strip():
        return False
    env["OPENBLAS_THREAD_TIMEOUT"] = BLAS_SPIN
    return True


# ------------------------------------------------ estimates for job scripts

#: Resident memory of the Python runtime with numpy, scipy and hsvm loaded,
#: added to the estimates a job script asks for (measured: 45-55 MB; the
#: estimates of training tasks fell 2-7 MiB short of their peaks with 64).
RUNTIME_BYTES = 80 << 20

#: What each forked trainer (``train-ovo -j N``, N > 1) holds of its own
#: beyond its problem buffers: the pages of the parent it writes to
#: (measured: the three processes of a -j 2 task summed to 270 MiB of
#: proportional set size where -j 1 peaked at 201, omniglot-242).
WORKER_BYTES = 40 << 20

#: Headroom on the estimated data: the parts are counted from the data's
#: shape, the allocator's rounding and temporaries are not.
DATA_MARGIN = 1.1


def scan_samples(path, *, zero_based=False, n_features=None, extra_features="error"):
    """Rows, non-zeros, width and class counts of an svmlight file, read in
    chunks (bounded memory): ``(n_rows, nnz, n_features, counts)``."""
    import numpy as np

    from ..io.svmlight import iter_svmlight
    n_rows = nnz = width = 0
    labels = []
    for chunk in iter_svmlight(path, zero_based=zero_based, n_features=n_features, extra_features=extra_features,
                               chunk_rows=65536):
        n_rows += chunk.X.shape[0]
        nnz += chunk.X.nnz
        width = max(width, chunk.X.shape[1])
        labels.append(np.unique(chunk.y, return_counts=True))
    counts = {}
    for classes, n in labels:
        for c, k in zip(classes.tolist(), n.tolist()):
            counts[c] = counts.get(c, 0) + k
    return n_rows, nnz, width, np.array([counts[c] for c in sorted(counts)], dtype=np.int64)


def training_task_bytes(path, *, blocks=1, bags=1, per_class=None, zero_based=False, jobs=1):
    """Memory to ask for one ``train-ovo --pairs i/N -j jobs`` task (the
    largest of the N blocks), the runtime and, with jobs > 1, the forked
    trainers included (a scheduler charges the task for all its processes)."""
    from ..train.pair_blocks import block_bounds, pair_costs
    n_rows, nnz, d, counts = scan_samples(path, zero_based=zero_based)
    bounds = block_bounds(pair_costs(counts, per_class=per_class), blocks)
    largest = int((bounds[1:] - bounds[:-1]).max()) * bags
    parts = training_block_memory(n_rows=n_rows, nnz=nnz, n_features=d, n_classifiers=largest)
    workers = jobs * (parts["problem"] + WORKER_BYTES) if jobs > 1 else 0
    return int(DATA_MARGIN * parts["total"]) + RUNTIME_BYTES + workers


def prediction_task_bytes(model_path, test_path, *, train_path=None, bags=1, chunk_rows=16384, zero_based=False):
    """Memory to ask for one ``predict --shard i/N`` task of exact
    prediction, the runtime included (the shard's size does not matter: it
    is read ``chunk_rows`` at a time).  Without a model yet (a job chain
    submitted at once), ``model_path=None`` and ``train_path``/``bags`` give
    its size: K(K-1)/2 x bags classifiers of the training file's width."""
    from ..preprocess import DENSE_ABOVE
    if model_path is not None:
        from ..models.ovo import load_model
        model = load_model(model_path)
        d, K, n_classifiers = model.n_features, model.n_classes, model.n_classifiers
    else:
        _, _, d, counts = scan_samples(train_path, zero_based=zero_based)
        K = counts.shape[0]
        n_classifiers = K * (K - 1) // 2 * bags
    n_rows, nnz, _, _ = scan_samples(test_path, zero_based=zero_based, n_features=d, extra_features="ignore")
    density = nnz / max(1, n_rows)
    sparse = density <= DENSE_ABOVE * d    # the rule preprocess.densify_if_dense applies
    est = prediction_shard_memory(n_features=d, n_classes=K, n_classifiers=n_classifiers,
                                  chunk_rows=min(chunk_rows, max(1, n_rows)), nnz_per_row=density, sparse=sparse)
    return est["total"] + RUNTIME_BYTES


def _positive(text):
    import argparse
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def main(argv=None):
    """``python -m hsvm_cli.support.resources train TRAIN --blocks N
    [TRAIN_OPTIONS]`` or ``... predict (--model MODEL | --train TRAIN
    [--bags B]) TEST``: the MiB of memory one task needs, for ``sbatch --mem``.
    Options of train-ovo other than --bags, --per-class, --zero-based and
    -j/--jobs (training: the forked trainers count) are accepted and
    ignored, so a job script can pass its own."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m hsvm_cli.support.resources", description=main.__doc__)
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("train", help="a train-ovo --pairs i/N task")
    t.add_argument("train")
    t.add_argument("--blocks", type=_positive, default=1)
    t.add_argument("-j", "--jobs", type=_positive, default=1)
    p = sub.add_parser("predict", help="a predict --shard i/N task (exact prediction)")
    p.add_argument("test")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model")
    which.add_argument("--train")
    p.add_argument("--chunk-rows", type=_positive, default=16384)
    for sp in (t, p):
        sp.add_argument("--bags", type=_positive, default=1)
        sp.add_argument("--per-class", type=_positive, default=None)
        sp.add_argument("--zero-based", action="store_true")
    args, _ = ap.parse_known_args(argv)
    from ..errors import HsvmError, printable
    try:
        need = _need(args)
    except HsvmError as exc:
        import sys
        print("hsvm: %s" % printable(str(exc)), file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    print(-(-need // (1 << 20)))


def _need(args):
    if args.what == "train":
        need = training_task_bytes(args.train, blocks=args.blocks, bags=args.bags, per_class=args.per_class,
                                   zero_based=args.zero_based, jobs=args.jobs)
    else:
        need = prediction_task_bytes(args.model, args.test, train_path=args.train, bags=args.bags,
                                     chunk_rows=args.chunk_rows, zero_based=args.zero_based)
    return need


if __name__ == "__main__":
    main()
