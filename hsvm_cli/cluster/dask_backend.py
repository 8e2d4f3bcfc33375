"""Training and prediction on a Dask ``distributed`` cluster (``pip install 'hsvm[dask]'``).

hsvm brings no scheduler of its own: the pair blocks of
:mod:`hsvm_cli.train.pair_blocks` and the shards of :mod:`hsvm_cli.io.shard`
become Dask tasks, and Dask places them, moves data, and reruns the tasks of a
worker that dies.  Any cluster Dask reaches works -- ``local:N`` (a
:class:`distributed.LocalCluster` of N single-threaded worker processes on
this machine), a scheduler address (``tcp://host:8786``), or a
``dask_jobqueue.SLURMCluster`` whose workers are Slurm jobs::

    from dask.distributed import Client
    from dask_jobqueue import SLURMCluster
    # 10 Slurm jobs of 4 single-threaded worker processes, 4 GB each
    cluster = SLURMCluster(cores=4, processes=4, memory="16GB", walltime="02:00:00")
    cluster.scale(jobs=10)
    with Client(cluster) as client:
        train_ovo_dask(X, y, client, output="model.hsvm", C=0.1, seed=1)

(``hsvm train-ovo --dask ADDRESS`` and ``hsvm predict --dask ADDRESS``: the
CLI connects to the scheduler at ADDRESS, or starts ``local:N``.)

Training (:func:`train_ovo_dask`).  The normalised training matrix and labels
are scattered once to every worker (``broadcast=True``), so each worker holds
one copy and tasks refer to it by key: data travels once per worker, never
once per task.  Block ``i`` of ``N`` (cost-balanced contiguous pair ranges)
is one task returning its W and b rows; the client gathers the blocks in pair
order and streams them into the model file
(:func:`hsvm_cli.models.model_stream.write_model_streaming`), which is the
file a single ``train-ovo`` writes, byte for byte.  When a worker dies, the
scheduler reruns its lost tasks elsewhere (up to
``distributed.scheduler.allowed-failures`` times; each classifier is a
function of its data and seed, so a rerun gives the same bits); if a task
finally fails, the exception propagates and the output is never written (it
is written to a temporary name and renamed only when complete).  The model's
header precedes W and holds W's digests, so an output that cannot seek (a
pipe) needs W twice: the blocks are then trained twice.

LIBLINEAR's dual solvers draw from the C library's global ``rand()``, which
every thread of a process shares; tasks therefore train under a process-wide
lock, so a worker process with several threads still trains one block at a
time, bit-identically.  Give workers one thread each and as many processes as
cores (``processes=cores`` in dask-jobqueue; ``local:N`` does).

Memory.  A worker holds the training data once (CSR: 12 bytes per non-zero)
plus LIBLINEAR's row pool (16 bytes per non-zero) while it trains, and the
blocks it has trained and not yet handed over (float32, ``pairs x bags x
(d + 1) x 4`` bytes per block); the client holds the data, its normalised
copy, one block at a time and b.  See
:func:`hsvm_cli.support.resources.training_block_memory`.

Prediction (:func:`predict_shards`).  Byte-range shards of one plain file, or
the files of a directory or glob pattern, are mapped onto the workers with a
prediction function (:class:`PredictTask` runs a
:class:`~hsvm_cli.predict.predictor.Predictor`, as ``hsvm predict`` does);
outputs are written in input order, atomically, so the output is the
single-process output byte for byte.  Dask's worker processes run with
``OMP_NUM_THREADS=1`` (its ``distributed.nanny.pre-spawn-environ``), so each
task uses one thread and processes x threads never exceed the cores given.
"""
import glob
import io
import logging
import os
import sys
import threading
from concurrent.futures import CancelledError
from typing import NamedTuple

import numpy as np

from ..errors import EX_UNAVAILABLE, HsvmError, InputNotFoundError, OptionError
from ..io.files import atomic_output
from ..io.shard import Shard, ShardReader
from ..models.model_stream import write_model_streaming
from ..models.provenance import provenance as _provenance
from ..models.provenance import record_zero_based, recorded_command
from ..support.labels import integer_labels
from ..train.pair_blocks import block_bounds, pair_costs

__all__ = ["connect", "cluster_errors", "quiet_client_logs", "default_blocks", "train_ovo_dask", "train_ovo_dask_file",
           "PredictItem", "plan_inputs", "predict_shards", "PredictTask"]

# One rand() per process: see the module docstring.
_TRAIN_LOCK = threading.Lock()


class DaskUnavailableError(HsvmError, ImportError):
    """Dask is not installed, or its scheduler cannot be reached (exit 69)."""

    exit_code = EX_UNAVAILABLE


def require_distributed():
    """Raise :class:`DaskUnavailableError` saying how to install the extra
    when Dask's ``distributed`` is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DaskUnavailableError("the Dask backend needs the 'dask' extra: pip install 'hsvm[dask]'") from None


class connect:
    """``with connect(address) as client:`` a :class:`distributed.Client` for
    ``address``: ``"local:N"`` starts a LocalCluster of N worker processes
    with one thread each (closed again on exit; its log quiet below errors);
    anything else is a scheduler address (``tcp://host:8786``) or a
    ``Client``/cluster object, used as is.  ``cluster_kw`` go to LocalCluster.

    For an address, a LocalCluster or a cluster object, the client is handed
    out once the scheduler has a worker (a Client given is used as is): tasks
    would wait for one anyway, and the run's split (pair blocks, shards: a
    few per worker thread) is planned from the workers there are then -- the
    first one alone, when the others join later.  A scheduler with none yet
    (its workers still queued as batch jobs, or failing to start) is said
    once through ``waiting(message)``, when given, before the wait -- which
    had been silent, a command that looked hung; a scheduler lost during it
    is :class:`DaskUnavailableError`."""

    def __init__(self, address, *, waiting=None, **cluster_kw):
        if isinstance(address, str) and address.startswith("local:"):
            parse_local(address)
        require_distributed()
        self.address = address
        self.waiting = waiting
        self.cluster_kw = cluster_kw
        self.client = None
        self.cluster = None
        self._own_client = False

    def __enter__(self):
        from distributed import Client
        addr = self.address
        if hasattr(addr, "submit") and hasattr(addr, "scatter"):
            self.client = addr
            return addr
        if isinstance(addr, str) and addr.startswith("local:"):
            n = parse_local(addr)
            from distributed import LocalCluster
            # A task's failure comes back to this process and is reported as
            # one line; the workers' own "Compute Failed" logs (level ERROR,
            # with tracebacks) would only repeat it.
            kw = dict(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL)
            kw.update(self.cluster_kw)
            self.cluster = _without_terminal_interrupts(lambda: LocalCluster(**kw))
            addr = self.cluster
        try:
            if isinstance(addr, str):
                _probe_scheduler(addr)
            self.client = Client(addr)
        except BaseException as exc:
            if self.cluster is not None:
                self.cluster.close()
            refusal = _connect_refusal(addr, exc)
            if refusal is None:
                raise
            raise refusal from None
        self._own_client = True
        try:
            where = addr if isinstance(addr, str) else getattr(addr, "scheduler_address", "its address")
            _await_workers(self.client, where, self.waiting)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self.client

    def __exit__(self, *exc):
        try:
            if self._own_client:
                self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
        return False


def _connect_refusal(addr, exc):
    """The one-line error for a connection to ``addr`` that failed with
    ``exc``, or None (``exc`` goes on as it is)."""
    if isinstance(exc, ValueError):
        # distributed's parse of "host" or "tcp://" without a port; a port out of range
        return OptionError("--dask %s: %s (give tcp://HOST:PORT or local:N)" % (addr, exc))
    if isinstance(exc, OSError):
        return DaskUnavailableError("cannot reach the Dask scheduler at %s: %s" % (addr, exc))
    if isinstance(exc, TypeError):
        # tls:// without distributed's security settings, ucx:// without UCX: distributed's own
        # TypeError (a traceback, exit 1, before)
        return OptionError("--dask %s: distributed cannot connect this way here (%s); give tcp://HOST:PORT or "
                           "local:N" % (addr, exc))
    return None


def _await_workers(client, where, waiting):
    """Returns once the scheduler of ``client`` has a worker, having called
    ``waiting(message)`` (when given) if it had none."""
    if client.nthreads():
        return
    if waiting is not None:
        waiting("the scheduler at %s has no workers yet: waiting for one to connect (interrupt to stop)" % where)
    try:
        client.wait_for_workers(1)
    except OSError as exc:
        # the scheduler gone meanwhile: distributed's connect timeout, then its traceback
        raise DaskUnavailableError("lost the Dask scheduler at %s while waiting for a worker: %s" % (where, exc)) \
            from None


def _probe_scheduler(address):
    """Refuse, in one line and within the connect timeout, a TCP address no
    Dask scheduler answers at, before distributed's Client is made: a name
    that does not resolve (the Client retried for 30 s, then said it timed
    out), a closed port (the same), a server that accepts and never answers
    (an HTTP server: the Client waited forever), or one whose answer is not
    Dask's protocol (an HTTP error page read as a frame length: "out of memory
    allocating 3300443325 GiB").  Other schemes (tls://, ucx://) are left to
    the Client."""
    import asyncio
    import socket

    import dask
    from dask.utils import parse_timedelta
    from distributed.comm import connect
    from distributed.comm.addressing import parse_address, parse_host_port
    scheme, location = parse_address(address)     # ValueError: the caller's usage error
    try:
        asyncio.get_running_loop()
        return          # a caller's event loop (Jupyter's) runs here: asyncio.run cannot; the Client's checks
    except RuntimeError:
        pass
    if scheme != "tcp":
        return
    host, port = parse_host_port(location)
    if not 0 < int(port) < 65536:
        # (99999 had been an OverflowError's traceback, -1 a host that "does not resolve")
        raise ValueError("port %s is outside 1-65535" % (port,))     # the caller's usage error
    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="seconds")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DaskUnavailableError("cannot reach the Dask scheduler at %s: host %r does not resolve (%s)"
                                   % (address, host, getattr(exc, "strerror", None) or exc)) from None

    async def handshake():
        # the TCP connection first (refused at once), then Dask's handshake
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        writer.close()
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        comm.abort()

    try:
        asyncio.run(handshake())
    except (TimeoutError, asyncio.TimeoutError):
        raise DaskUnavailableError("cannot reach the Dask scheduler at %s: no Dask answer within %g s (is a Dask "
                                   "scheduler listening there?)" % (address, timeout)) from None
    except OSError as exc:
        # asyncio says "Connect call failed (host, port)": the errno says why
        raise DaskUnavailableError("cannot reach the Dask scheduler at %s: %s"
                                   % (address, os.strerror(exc.errno) if exc.errno else exc.strerror or exc)) from None
    except (MemoryError, ValueError, TypeError, EOFError) as exc:
        # what distributed's frame reader makes of bytes that are not Dask's
        raise DaskUnavailableError("%s does not speak Dask's protocol: not a Dask scheduler (%s)"
                                   % (address, type(exc).__name__)) from None


def _without_terminal_interrupts(start):
    """``start()`` (the local cluster's start-up) with SIGINT ignored, so
    that the worker processes it spawns inherit the ignoring: Ctrl-C at a
    terminal signals the whole process group, and each worker printed its
    own KeyboardInterrupt traceback while this process, which stops them,
    printed its one line.  Ignoring survives exec, and neither Python nor
    asyncio installs a KeyboardInterrupt handler over it (a blocked signal
    did not stay blocked in the workers).  The price: a Ctrl-C during the
    start-up itself, under a second, is lost.  Off the main thread, as is."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return start()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, previous)


def parse_local(address):
    """N of ``"local:N"``; :class:`~hsvm_cli.errors.OptionError` (a
    ValueError) unless N is a positive integer."""
    text = address[len("local:"):]
    if not (text.isascii() and text.isdigit()) or int(text) < 1:       # isdigit alone takes other scripts' digits
        raise OptionError("--dask local:N needs a positive worker count, not %r" % address)
    return int(text)


def default_blocks(client, n_pairs):
    """Blocks for a training run: 4 per worker thread (so a slow or lost
    block is a small share of the work, and blocks of unequal speed even
    out), at most one per pair."""
    threads = sum(client.nthreads().values()) or 1
    return max(1, min(n_pairs, 4 * threads))


def _train_block_task(data, start, stop, options):
    """On a worker: train canonical pairs ``start:stop``; returns (W, b,
    params, hsvm version, classifiers stopped at LIBLINEAR's iteration
    limit)."""
    from .. import __version__
    from ..train.liblinear import train_pairs
    X, y = data
    with _TRAIN_LOCK:
        m = train_pairs(X, y, pairs=range(start, stop), jobs=1, progress=False, **options)
    return m.W, m.b, m.params, __version__, m.training.not_converged


def train_ovo_dask(X, y, client, *, output, normalize="l2", C=1.0, solver="l2loss-dual", tol=None, per_class=None,
                   bags=1, seed=0, n_blocks=None, train_path=None, train_sha256=None, argv=None, progress=False,
                   log=None, on_block=None, bias="auto", zero_based=False, class_weight=None):
    """Train the one-vs-one model of ``(X, y)`` on the Dask ``client`` and
    write it to ``output`` -- the file :func:`hsvm_cli.train.ovo.train_ovo` +
    :func:`hsvm_cli.models.ovo.save_model` give with the same options, byte for
    byte (``argv``: the command line to record, default ``sys.argv``, less
    ``--dask``, ``--jobs``, ``--quiet``).

    ``n_blocks``: pair blocks (tasks); default :func:`default_blocks`.
    ``progress``: a tqdm bar of pairs on stderr; ``log(message)``: a line per
    block gathered (progress of a batch job); ``on_block(index, n_blocks)``:
    called in the client as each block is written (tests use it to disturb
    the run).  Returns a dict: ``content_sha256``, ``n_blocks``, ``n_pairs``,
    ``workers``, ``not_converged`` (classifiers LIBLINEAR stopped at its
    iteration limit)."""
    require_distributed()
    from .. import __version__ as here_version
    from ..preprocess import normalized_float64
    from ..train.class_weight import check_weighted_c, class_weight_vector
    from ..train.liblinear import SOLVERS
    from ..train.ovo import resolve_bias
    from ..train.sampling import check_options
    # Checked here, before anything is sent (train_pairs checks again on the workers).
    check_options(C, solver, tol, per_class, bags, seed, 1, solvers=SOLVERS)
    labels = integer_labels(y, X.shape[0])
    classes, counts = np.unique(labels, return_counts=True)
    K = classes.shape[0]
    if K < 2:
        raise ValueError("y must contain at least two classes, found %d" % K)
    # refused here, not on a worker
    check_weighted_c(C, class_weight_vector(class_weight, classes, np.searchsorted(classes, labels),
                                            per_class=per_class))
    n_pairs = K * (K - 1) // 2
    if n_blocks is None:
        n_blocks = default_blocks(client, n_pairs)
    bounds = block_bounds(pair_costs(counts, per_class=per_class), n_blocks)
    Xn = normalized_float64(X, normalize)
    # The bias feature is resolved here, from all the samples, as train_ovo does.
    options = dict(C=C, solver=solver, tol=tol, per_class=per_class, bags=bags, seed=seed,
                   bias=resolve_bias(Xn, normalize, bias), class_weight=class_weight)
    prov = record_zero_based(_provenance(train_path, train_sha256), zero_based)
    prov["command"] = recorded_command(argv)
    blocks = [(i, int(bounds[i]), int(bounds[i + 1])) for i in range(n_blocks) if bounds[i] < bounds[i + 1]]
    token = os.urandom(4).hex()
    data = client.scatter((Xn, labels), broadcast=True, hash=False)

    def submit(i, start, stop, attempt):
        return client.submit(_train_block_task, data, start, stop, options, pure=False,
                             key="hsvm-train-block-%d-of-%d-%s-%d" % (i, n_blocks, token, attempt))
    futures = [submit(i, start, stop, 0) for i, start, stop in blocks]
    live = list(futures)
    bar = _progress(n_pairs, progress, "train-ovo --dask", "pair")
    passes = [0]
    params = {}
    not_converged = [0]

    def pieces():
        passes[0] += 1
        first = passes[0] == 1
        for k, (i, start, stop) in enumerate(blocks):
            if first:
                fut = futures[k]
            else:
                # a second pass (the output cannot seek): the released blocks
                # are trained again, deterministically
                fut = submit(i, start, stop, passes[0])
                live.append(fut)
            W, b, got_params, version, limited = fut.result()
            fut.release()
            if dict(got_params, normalize=normalize) != params or version != here_version:
                raise RuntimeError("a worker trained block %d with different software (hsvm %s, %r)"
                                   % (i, version, got_params))
            yield W, b
            del W, b
            if first:
                not_converged[0] += limited
                bar.update(stop - start)
                if log is not None:
                    log("block %d/%d: pairs %d..%d gathered" % (i, n_blocks, start, stop - 1))
                if on_block is not None:
                    on_block(i, n_blocks)
    try:
        # The parameters recorded are those the workers trained with (the
        # LIBLINEAR version among them), checked equal across blocks.
        params.update(futures[0].result()[2], normalize=normalize)
        digest = write_model_streaming(output, classes=classes, bags=bags, normalize=normalize,
                                       n_features=X.shape[1], params=params, provenance=prov, pieces=pieces)
    finally:
        bar.close()
        client.cancel(live + [data])
    return {"content_sha256": digest, "n_blocks": n_blocks, "n_pairs": n_pairs, "workers": len(client.nthreads()),
            "not_converged": not_converged[0]}


def train_ovo_dask_file(path, client, *, output, zero_based=False, **kw):
    """What ``hsvm train-ovo --dask`` does: read the svmlight file ``path``
    once (hashing it) in the client and train on the ``client``; keyword
    arguments as :func:`train_ovo_dask`."""
    from ..errors import DataError
    from ..io.files import display_name
    from ..train.ovo import read_training_file
    X, y, sha = read_training_file(path, zero_based=zero_based)
    n_classes = np.unique(y).shape[0]
    if n_classes < 2:
        raise DataError("%s: training needs samples of at least two classes, found %d"
                        % (display_name(path), n_classes))
    with cluster_errors():
        return train_ovo_dask(X, y, client, output=output, train_path=display_name(path), train_sha256=sha,
                              zero_based=zero_based, **kw)


def _progress(total, enabled, desc, unit):
    from tqdm import tqdm
    return tqdm(total=total, disable=not enabled, file=sys.stderr, unit=unit, desc=desc, dynamic_ncols=True)


# ----------------------------------------------------------------- predict

class PredictItem(NamedTuple):
    """One prediction task: the file, its shard (None: the whole file), and
    the task's place among ``count`` in input order."""

    path: str
    shard: object
    index: int
    count: int


def _expand_sources(sources):
    """(input files, whether they were named one by one): a path, a
    directory (its regular files not starting with '.', sorted), a glob
    pattern (sorted matches) or a list of paths.  Only a single path is split
    into byte-range shards; a directory or pattern is one task per file,
    however many it holds."""
    if isinstance(sources, (list, tuple)):
        return [os.fspath(s) for s in sources], False
    src = os.fspath(sources)
    if os.path.isdir(src):
        found = sorted(os.path.join(src, f) for f in os.listdir(src)
                       if os.path.isfile(os.path.join(src, f)) and not f.startswith("."))
        if not found:
            raise InputNotFoundError("%s: no input files in the directory" % src)
        return found, False
    if not os.path.exists(src) and any(ch in src for ch in "*?["):
        found = sorted(p for p in glob.glob(src) if os.path.isfile(p))
        if not found:
            raise InputNotFoundError("%s: no file matches" % src)
        return found, False
    return [src], True


def plan_inputs(sources, n_shards):
    """The tasks for ``sources`` (see :func:`predict_shards`): N byte-range
    shards of one plain file, or one task per file.  One file is checked
    here, in the client, so that a compressed file or a pipe is refused
    (:class:`~hsvm_cli.io.shard.ShardError`) before anything is sent."""
    files, single = _expand_sources(sources)
    # Opened on the workers, whose working directory is not the caller's: a
    # relative name there read another file of that name, or none.
    files = [f if f == "-" else os.path.abspath(f) for f in files]
    if single and n_shards > 1:
        ShardReader(files[0], Shard(0, n_shards)).close()
        return [PredictItem(files[0], Shard(i, n_shards), i, n_shards) for i in range(n_shards)]
    return [PredictItem(f, None, k, len(files)) for k, f in enumerate(files)]


def predict_shards(client, sources, predict_fn, output, *, n_shards=None, log=None, on_task=None):
    """Map a prediction function over shards (or files) on the Dask
    ``client`` and write the outputs, in input order, to ``output``
    (atomically: nothing is written unless every task succeeds).

    ``sources``: one plain file -- split into ``n_shards`` byte-range shards
    (default: 2 per worker thread) --, a directory or glob pattern (one task
    per file, in sorted order), or a list of paths.  ``predict_fn(item)``:
    runs on a worker with a :class:`PredictItem`; returns the bytes of its
    output, or ``(bytes, counts)`` with a dict of numbers that are summed over
    the tasks.  It must be picklable (a module-level function or an object
    such as :class:`PredictTask`).  ``log(message)``: a line per task written;
    ``on_task(index, count)``: called as each task's output is written.
    Returns the summed counts (with ``tasks``)."""
    require_distributed()
    if n_shards is None:
        n_shards = max(1, 2 * (sum(client.nthreads().values()) or 1))
    items = plan_inputs(sources, n_shards)
    token = os.urandom(4).hex()
    futures = [client.submit(predict_fn, item, pure=False, key="hsvm-predict-%d-of-%d-%s" % (k, len(items), token))
               for k, item in enumerate(items)]
    totals = {"tasks": len(items)}
    try:
        with atomic_output(output, "wb") as fh:
            for k, fut in enumerate(futures):
                result = fut.result()
                data, counts = result if isinstance(result, tuple) else (result, {})
                fh.write(data)
                fut.release()
                for key, value in counts.items():
                    # counts add up; lists of labels join
                    totals[key] = sorted(set(totals.get(key, ())) | set(value)) if isinstance(value, list) \
                        else totals.get(key, 0) + value
                if log is not None:
                    item = items[k]
                    log("task %d/%d (%s%s): %d bytes written"
                        % (k, len(items), item.path, "" if item.shard is None else " shard %s" % (item.shard,),
                           len(data)))
                if on_task is not None:
                    on_task(k, len(items))
    finally:
        client.cancel(futures)
    return totals


# Predictors built in this worker process, by task (a model is loaded once
# per process, not once per task).
_PREDICTORS = {}
_PREDICTORS_LOCK = threading.Lock()


class PredictTask:
    """A ``predict_fn`` for :func:`predict_shards` doing what ``hsvm predict``
    does for a shard or file: the labels (``scores``: vote counts;
    ``proba``: probabilities) in svm-predict's layout, the ``labels ...``
    header only in the first task's output.  Picklable: it carries file paths
    and settings, and each worker process loads the model (memory-mapped),
    hash model and calibration once.

    ``settings``: the keyword arguments of
    :class:`~hsvm_cli.predict.predictor.Predictor` (or of
    :meth:`~hsvm_cli.predict.predictor.Predictor.from_calibration` with
    ``calibration_path``); ``threads`` is left to the worker (Dask's worker
    processes run single-threaded, see the module docstring).  Returns
    ``(bytes, counts)`` with ``total``, ``correct`` and ``labelled`` rows for
    the accuracy line, and the first few ``unknown_labels`` for its note."""

    def __init__(self, model_path, *, hash_model_path=None, calibration_path=None, exact=False, settings=None,
                 scores=False, proba=False, zero_based=False, extra_features="error", chunk_rows=16384,
                 class_order="ascending"):
        # absolute: loaded on the workers, in their own working directories
        self.model_path = os.path.abspath(os.fspath(model_path))
        self.hash_model_path = None if hash_model_path is None else os.path.abspath(os.fspath(hash_model_path))
        self.calibration_path = None if calibration_path is None else os.path.abspath(os.fspath(calibration_path))
        self.exact = bool(exact)
        self.settings = dict(settings or {})
        self.settings.pop("threads", None)
        self.scores = scores
        self.proba = proba
        self.zero_based = zero_based
        self.extra_features = extra_features
        self.chunk_rows = chunk_rows
        self.class_order = class_order

    def _key(self):
        return (self.model_path, self.hash_model_path, self.calibration_path, self.exact,
                tuple(sorted(self.settings.items())))

    def predictor(self, threads=None):
        """The :class:`~hsvm_cli.predict.predictor.Predictor` of these
        settings (built as ``hsvm predict`` builds it)."""
        from ..models.loading import load_any_hash_model, load_any_model
        from ..models.ovr import OvrModel
        from ..predict.predictor import Predictor
        model = load_any_model(self.model_path)
        h = None
        if self.hash_model_path is not None and not self.exact:
            h = load_any_hash_model(self.hash_model_path)
        if self.proba and self.calibration_path is None and not isinstance(model, OvrModel):
            from ..predict.logistic import logistic_solver, two_class_as_ovr
            if logistic_solver(model):      # LIBLINEAR's probabilities, as hsvm predict gives them
                model = two_class_as_ovr(model)
        if isinstance(model, OvrModel):
            # A one-vs-rest model (imported from LIBLINEAR): its settings are
            # the bits, filter_k and refine that hsvm predict gave it.
            from ..predict.ovr import OvrPredictor
            return OvrPredictor(model, h, threads=threads, **self.settings)
        if self.calibration_path is not None:
            from ..models.calibration import load_calibration
            return Predictor.from_calibration(model, load_calibration(self.calibration_path), h, exact=self.exact,
                                              proba=self.proba, scores=self.scores, threads=threads,
                                              **self.settings)
        return Predictor(model, h, threads=threads, **self.settings)

    def __call__(self, item):
        key = self._key()
        with _PREDICTORS_LOCK:
            predictor = _PREDICTORS.get(key)
            if predictor is None:
                predictor = _PREDICTORS[key] = self.predictor()
        out = io.StringIO()
        writer = predictor.predict_file(item.path, out, scores=self.scores, proba=self.proba,
                                        zero_based=self.zero_based, extra_features=self.extra_features,
                                        chunk_rows=self.chunk_rows, shard=item.shard, header=item.index == 0,
                                        class_order=self.class_order)
        counts = {"total": writer.total, "correct": writer.correct, "labelled": writer.labelled_rows,
                  "unknown_labels": sorted(writer.unknown_labels)}
        return out.getvalue().encode("ascii"), counts


def predict_file_dask(address, sources, output, *, task, n_shards=None, log=None):
    """What ``hsvm predict --dask ADDRESS`` does: connect (see :class:`connect`;
    ``log`` also says a wait for the scheduler's first worker) and run
    :func:`predict_shards` with the :class:`PredictTask` ``task``; returns the
    summed counts.  A task lost with its workers too often is
    :class:`DaskUnavailableError`."""
    with cluster_errors(), connect(address, waiting=log) as client:
        return predict_shards(client, sources, task, output, n_shards=n_shards, log=log)


class cluster_errors:
    """``with cluster_errors():`` turns the cluster's own failures -- a task
    whose workers kept dying (``KilledWorker``), a lost connection to the
    scheduler -- into :class:`DaskUnavailableError` (one line, exit 69) for
    the command line.  A task's own error (bad input) passes unchanged."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, HsvmError):
            # ours already (the dask extra missing, bad input): as it is --
            # importing distributed here had replaced the first by a traceback
            return False
        try:
            from distributed import KilledWorker
            from distributed.comm.core import CommClosedError
        except ImportError:
            return False
        if isinstance(exc, KilledWorker):
            raise DaskUnavailableError("a Dask task failed: its worker died %s (%s)"
                                       % ("more often than the scheduler allows", exc)) from None
        if isinstance(exc, (CommClosedError, TimeoutError)):
            raise DaskUnavailableError("lost the Dask cluster: %s" % (exc or type(exc).__name__)) from None
        if isinstance(exc, CancelledError):
            # distributed's FutureCancelledError: the client cancels every
            # task once its scheduler has been unreachable for its timeout
            # ("scheduler-connection-lost"); and the scheduler forgets a task
            # whose scattered input died with the only workers holding it
            # (every worker killed at once: "already forgotten"), which
            # cannot be rerun; nothing of ours cancels a task
            first = str(exc).splitlines()[0] if str(exc) else "its tasks were cancelled"
            if "scheduler" in first.rsplit("reason:", 1)[-1]:      # "scheduler-connection-lost"
                raise DaskUnavailableError("lost the Dask scheduler: %s" % first) from None
            raise DaskUnavailableError("a Dask task was cancelled (%s): the workers holding the data sent to them "
                                       "were lost, and Dask cannot rerun it without them; run the command again"
                                       % first) from None
        return False


class quiet_client_logs:
    """``with quiet_client_logs():`` distributed's logging in this process
    below CRITICAL dropped (restored on exit), for the command line: a lost
    scheduler is reported in one line (:class:`cluster_errors`), and the
    client's own ERROR records of its reconnection, with their tracebacks,
    would only repeat it -- as a LocalCluster's workers are quiet
    (:class:`connect`)."""

    def __enter__(self):
        # Dask's logging configuration, applied when distributed is imported,
        # gives some of them levels of their own (distributed.client:
        # warning), which a parent's level does not override
        require_distributed()
        names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
        self._levels = {n: logging.getLogger(n).level for n in names}
        for n in names:
            logging.getLogger(n).setLevel(logging.CRITICAL)
        return self

    def __exit__(self, *exc):
        for n, level in self._levels.items():
            logging.getLogger(n).setLevel(level)
        return False
