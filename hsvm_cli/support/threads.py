"""How many worker threads to use, validation of a ``--threads`` value, and
running independent pieces of work on them."""
import operator
import os

from .text import decimal_int

# Checked in this order; the first set to a positive integer wins.  OMP_NUM_THREADS
# may list one count per nesting level ("4,2"): the outer level is ours.
_ENV_VARS = ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK")


def _positive_int(text):
    try:
        value = int(str(text).split(",")[0].strip())
    except ValueError:
        return None
    return value if value > 0 else None


# A command's --threads, for the work it does without a threads argument (a
# projection's stream drawn deep inside a hash model): set while it runs.
_COMMAND_THREADS = [None]


def set_command_threads(threads):
    """Make ``threads`` (None: unset) what :func:`default_threads` gives while
    a command runs, so that its --threads bounds every pool it starts."""
    _COMMAND_THREADS[0] = threads


def default_threads():
    """Threads to use when the user did not say: the running command's
    --threads (:func:`set_command_threads`), OMP_NUM_THREADS, else
    SLURM_CPUS_PER_TASK (when set to a positive integer), else the CPUs this
    process may run on (its affinity mask, which is what a container or a batch
    scheduler restricts, unlike ``os.cpu_count()``)."""
    if _COMMAND_THREADS[0]:
        return _COMMAND_THREADS[0]
    for var in _ENV_VARS:
        value = _positive_int(os.environ.get(var, ""))
        if value is not None:
            return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_threads(threads=None):
    """A thread count from a Python argument or a ``--threads`` option value.

    ``None``, ``0``, ``"0"`` and ``"auto"`` mean :func:`default_threads`; otherwise a
    positive integer (int or decimal string).  Raises ValueError for anything else.
    """
    if threads is None:
        return default_threads()
    bad = "threads must be a positive integer, or 0 or 'auto' for the default, got %r" % (threads,)
    if isinstance(threads, str):
        text = threads.strip().lower()
        if text == "auto":
            return default_threads()
        try:
            threads = decimal_int(text)     # not int(): it also takes "1_0" and other scripts' digits
        except ValueError:
            raise ValueError(bad) from None
    elif isinstance(threads, bool):
        raise ValueError(bad)
    else:
        try:
            threads = operator.index(threads)
        except TypeError:
            raise ValueError(bad) from None
    if threads == 0:
        return default_threads()
    if threads < 0:
        raise ValueError(bad)
    return threads


def run_each(fn, items, threads=None):
    """Call ``fn`` on every item, on up to ``threads`` (resolve_threads) worker
    threads -- in this thread, in order, when that is one.  For work that
    releases the GIL (the native calls); exceptions propagate."""
    items = list(items)
    threads = min(resolve_threads(threads), len(items))
    if threads <= 1:
        for item in items:
            fn(item)
        return
    # imported here: the command line's first moment asks default_threads()
    # (cli/early_input.py), and concurrent.futures takes 7 ms to load
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, items))


_controller = None


def single_threaded_blas():
    """A context in which BLAS calls use one thread (for code that runs its
    own threads around BLAS calls).  threadpoolctl finds the BLAS numpy loaded,
    whichever it is; the controller is built once since that scan costs
    milliseconds."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
