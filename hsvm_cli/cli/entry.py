"""The ``hsvm`` console script.  Signals are handled from the first moment: a
Ctrl-C, SIGTERM or SIGHUP while the modules are still loading leaves at once (nothing
is written yet), without a traceback; once a subcommand runs, they raise so
that its cleanup runs (cli/main.py), and the process then leaves without
waiting for worker threads."""
import errno
import gc
import os
import sys

try:
    # The signal module's C core: the module itself builds its enums on
    # import (enum, collections: ~3 ms, the window in which a Ctrl-C at the
    # start printed a KeyboardInterrupt traceback); the handlers are
    # installed before anything else loads (this module imports nothing
    # more at its top).
    import _signal as signal
except ImportError:  # pragma: no cover - an interpreter without it
    import signal

#: The signals that stop hsvm (exit 128 + the signal's number) with its
#: temporaries removed: Ctrl-C, kill, and a hang-up (a closed terminal or ssh
#: session).
QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _exit_quietly(signum, frame):
    os._exit(128 + signum)


class _ClosedStdin:
    """sys.stdin when the process started with descriptor 0 closed (``<&-``:
    Python then sets it to None): reading it, as '-', is the one-line
    InputNotFoundError of any unreadable input (exit 66), wherever it is
    read, not an AttributeError traceback."""

    @property
    def buffer(self):
        from ..errors import InputNotFoundError
        raise InputNotFoundError("<stdin>: cannot read: standard input is closed")

    read = readline = fileno = property(lambda self: self.buffer)

    def isatty(self):
        return False


class _ClosedStdout:
    """sys.stdout when the process started with descriptor 1 closed (``hsvm
    ... >&-``: Python then sets it to None): a write raises EBADF, which the
    CLI reports in one line with exit 74 like any failed output, where None
    gave a traceback or lost the output silently."""

    encoding = "utf-8"
    errors = "strict"

    @property
    def buffer(self):
        return self

    def write(self, data):
        raise OSError(errno.EBADF, "standard output is closed")

    def fileno(self):
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True


class _BestEffortStderr:
    """sys.stderr: logs and progress are for the person watching, so a
    standard error that is closed (``2>&-``: Python then sets it to None),
    whose reader went away (``2>&1 | head -1``) or that cannot be written
    (``2>/dev/full``, a full disk) never stops the work -- such runs wrote no
    model and exited 1 or 141, or exited 1 instead of their own status.
    Writes after the first that fails are dropped; the exit status still
    tells the outcome."""

    def __init__(self, stream):
        self._stream = stream
        self._lost = stream is None

    def write(self, text):
        if not self._lost:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._give_up(exc)
        return len(text)

    def flush(self):
        if not self._lost:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._give_up(exc)

    def _give_up(self, exc):
        # a failed write (a reader gone, a descriptor closed, no space) or
        # the stream closed under us: lost for good, nowhere to say so;
        # anything else (an encoding error) is a bug to see
        gone = isinstance(exc, OSError) or bool(getattr(self._stream, "closed", False))
        if not gone:
            raise exc
        self._lost = True

    def isatty(self):
        return not self._lost and self._stream.isatty()

    def __getattr__(self, name):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def handle_signal(signum, handler):
    """Install ``handler`` unless the process was started with the signal
    ignored (a background job of a non-interactive shell, ``trap '' INT``,
    nohup): a signal its parent chose to ignore stays ignored, as it does for
    most programs."""
    if signal.getsignal(signum) != signal.SIG_IGN:
        signal.signal(signum, handler)


def enable_garbage_collection():
    """The cyclic garbage collector back on, once the modules are loaded
    (:func:`main` turns it off first): the ~40,000 objects they create are
    not garbage, and collections while they loaded took 7-10 ms of a 0.1 s
    start.  (Not gc.freeze(): frozen objects are not finalised at the
    interpreter's exit.)"""
    gc.enable()


def main():
    gc.disable()
    for signum in QUIT_SIGNALS:
        handle_signal(signum, _exit_quietly)
    if sys.stdin is None:
        sys.stdin = _ClosedStdin()
    # predict's input parsed on the idle core while the modules load
    from .early_input import start_early_parse
    start_early_parse(sys.argv)
    # The reports printed with click.echo (eval's report, a search's table,
    # --help): a failed write (> /dev/full, a closed stdout) is the one-line
    # OutputError of every output, exit 74, as the files' writer gives it; a
    # reader gone stays BrokenPipeError (exit 141).  Binary outputs write to
    # .buffer and check their own writes.
    from ..io.files import GuardedWriter, whole_stdout
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        # a report naming a file the terminal's encoding cannot show
        # (PYTHONIOENCODING=latin-1 and a name in Chinese) is escaped, not a
        # UnicodeEncodeError; the C locale's surrogateescape is kept
        sys.stdout.reconfigure(errors="backslashreplace")
    sys.stdout = GuardedWriter(whole_stdout() if sys.stdout is not None else _ClosedStdout(), "<stdout>")
    sys.stderr = _BestEffortStderr(sys.stderr)
    if os.path.basename(sys.argv[0]) == "__main__.py":
        # `python -m hsvm_cli ...` is the hsvm command: recorded so in models
        # (provenance.command), not as __main__.py
        sys.argv[0] = "hsvm"
    # Before numpy loads its BLAS: a Slurm task's BLAS threads are its CPUs,
    # and idle BLAS threads leave the cores to hsvm's own soon.
    from ..support.resources import blas_threads_from_slurm, blas_waits_briefly
    blas_threads_from_slurm()
    blas_waits_briefly()
    from ..errors import OutputError
    from . import main as cli_main
    from .main import cli
    cli_main._process_exits.append(True)      # the command ends this process
    try:
        cli(prog_name="hsvm")
    except OutputError as exc:
        # outside a command (--help, --version): its one line, as commands give it
        from .main import _discard_stdout
        sys.stderr.write("hsvm: %s\n" % exc)
        _discard_stdout()
        sys.exit(exc.exit_code)
    except SystemExit as exc:
        from ..io.files import outputs_committed
        stopped = tuple(128 + signum for signum in QUIT_SIGNALS)
        if exc.code not in stopped and outputs_committed():
            # The command is done and its outputs are in place: a signal
            # during the interpreter's exit (which restores the default
            # actions) must not end it with 130, 143 or 129, which say that
            # nothing was replaced.
            for signum in QUIT_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)
        if exc.code in stopped:
            # Interrupted or terminated, every `finally` run and the message
            # written: leave now.  The interpreter's exit would wait for
            # worker threads still inside a native call (a pair's solver), and
            # a second Ctrl-C meanwhile would print a traceback.
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(exc.code)
        _leave_without_teardown(exc.code)
        raise


def _leave_without_teardown(code):
    """End the process now that the command is done, without the
    interpreter's teardown: clearing every module and freeing every object
    cost ~25 ms of a 0.45 s hashed predict, and unmapping a model whose pages
    the checksum check had mapped 4-29 ms more (the kernel's exit does both at
    no cost).  What must happen at exit still does: the atexit functions run
    (temporary directories' finalizers, logging's flush, executors' joins),
    the standard streams are flushed.  Returns, for the interpreter's own exit,
    whenever that is not plainly all: a status that is not a number, a thread
    the exit would wait for, child processes, Dask (its clients and clusters
    stop at exit), or a standard output that fails to flush (its error is
    then reported as it always was)."""
    if code is not None and not isinstance(code, int):
        return
    if "distributed" in sys.modules:
        return
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.active_children():
        return
    import threading
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        return
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code or 0)
