"""The ``hsvm`` command: a thin layer over the library, one module per subcommand."""
import contextlib
import errno
import os
import re
import signal
import sys
import warnings

import click

from .. import __version__
from ..errors import HsvmError, HsvmWarning, OptionError, OutputError, printable
from .entry import QUIT_SIGNALS
from .help_format import HelpContext


class Terminated(BaseException):
    """SIGTERM or SIGHUP (a closed terminal or ssh session), raised like
    KeyboardInterrupt so that every ``finally`` runs: temporary outputs are
    removed, nothing half-written is left."""

    def __init__(self, signum=signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


_late_signals = []
# Signals _interrupt raised as exceptions.  One raised inside a callback the
# interpreter runs itself (an import lock's weakref callback, as a module
# loads mid-command) is printed as "Exception ignored" and lost: the command
# went on and replaced its output, exit 0.  Such a signal is raised again
# before any output is renamed into place (_raise_swallowed), and is the exit
# status of a command that ends without one.
_raised_signals = []
# Set once a signal's exit is under way (_exit_for_signal) in the hsvm
# process itself (entry.main sets _process_exits): later signals are ignored,
# the first one's status stands.  A caller running commands in its own
# process (CliRunner, a notebook) keeps its Ctrl-C after one.
_leaving = []
_process_exits = []


def _signal_exception(signum):
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raise_swallowed():
    """Called before outputs are renamed into place (io.files): a signal whose
    exception never reached the command is raised now, so nothing is
    replaced."""
    if _raised_signals:
        raise _signal_exception(_raised_signals.pop())


def _interrupt(signum, frame):
    """SIGINT, SIGTERM and SIGHUP while a command runs: raised (KeyboardInterrupt,
    Terminated) so that its temporaries are removed and what it would
    replace is kept -- until its outputs are being renamed into place.
    From then on nothing is undone, so the first such signal lets the
    command finish (status 0: a script or make that sees 130 or 143 takes
    it that nothing changed); a second one interrupts whatever is left."""
    if _leaving:
        return          # stopped by an earlier signal, whose status the process leaves with
    from ..io.files import outputs_committed, renaming_outputs
    if (renaming_outputs() or outputs_committed()) and not _late_signals:
        _late_signals.append(signum)
        return
    _raised_signals.append(signum)
    raise _signal_exception(signum)


# Subcommand name -> module: a module is imported only when its command runs
# (or help lists them all), so that `hsvm predict` does not pay at start-up
# for what calibrate, kernel-hash or fit-circulant import (scipy.linalg,
# scipy.fft, ...).  Listed in the order `hsvm --help` shows them.
SUBCOMMANDS = {
    "train-ovo": "cmd_train_ovo",
    "merge-models": "cmd_merge_models",
    "import-model": "cmd_import_model",
    "hash-model": "cmd_hash_model",
    "hash-data": "cmd_hash_data",
    "predict": "cmd_predict",
    "calibrate": "cmd_calibrate",
    "eval": "cmd_eval",
    "info": "cmd_info",
    "kernel-hash": "cmd_kernel_hash",
    "fit-circulant": "cmd_fit_circulant",
}


class HsvmGroup(click.Group):
    """Loads subcommands on demand and turns library errors into a one-line
    message and their exit status."""

    context_class = HelpContext

    def list_commands(self, ctx):
        return list(SUBCOMMANDS) + [n for n in super().list_commands(ctx) if n not in SUBCOMMANDS]

    def main(self, args=None, *rest, **kwargs):
        # the words of this run, for hints about them: sys.argv is the host's
        # when the group runs in-process (CliRunner, cli.main(args=...))
        self.run_words = list(sys.argv[1:] if args is None else args)
        return super().main(args, *rest, **kwargs)

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            # A misspelt subcommand gets the suggestion a misspelt option gets
            # (click >= 8.4 makes one from the commands loaded so far, which
            # here, loaded on demand, is none of them).
            import difflib
            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1) if args else []
            if close and exc.message.startswith("No such command") and not getattr(exc, "possibilities", None):
                exc.message = "%s Did you mean '%s'?" % (exc.message, close[0])
            raise

    def get_command(self, ctx, name):
        if name in SUBCOMMANDS and name not in self.commands:
            import importlib
            command = importlib.import_module("." + SUBCOMMANDS[name], __package__).command
            command.context_class = HelpContext
            self.add_command(command, name)
            from .entry import enable_garbage_collection
            enable_garbage_collection()
        return super().get_command(ctx, name)

    def invoke(self, ctx):
        from ..support.threads import set_command_threads
        set_command_threads(None)           # one command's --threads (CliRunner runs many in a process)
        name = _subcommand_name(ctx)
        try:
            if threading_main():
                # The subcommand's modules are loaded first, while a signal
                # still leaves at once (entry.py): an exception raised inside
                # an import (numpy's) came out as another error's traceback.
                if name in SUBCOMMANDS:
                    self.get_command(ctx, name)
                from ..io import files
                from .entry import handle_signal
                del _raised_signals[:], _leaving[:]     # one command's (CliRunner runs many in a process)
                files.before_renames = _raise_swallowed
                for signum in QUIT_SIGNALS:
                    handle_signal(signum, _interrupt)
            words = _subcommand_words(ctx)
            _refuse_libsvm_shrinking(self, ctx, name, words)
            if os.environ.get("HSVM_KERNEL") and name in SUBCOMMANDS and not ("-h" in words or "--help" in words):
                # Checked for every command (exit 64), not only by those whose
                # native code has several paths: a misspelt value must not pass
                # silently.  Help is shown all the same: it is where the user
                # reads what to change.
                from ..support.kernels import kernel_id
                kernel_id(None)
            with warnings.catch_warnings():
                # The library's warnings to Python callers are notices the
                # commands print in their own words (or leave out with -q);
                # only while a command runs, not for an in-process caller after.
                warnings.simplefilter("ignore", HsvmWarning)
                result = super().invoke(ctx)
            # a signal swallowed in a command that renamed no output
            _raise_swallowed()
            return result
        except click.UsageError as exc:
            if exc.ctx is None and ctx.invoked_subcommand:
                # click's parser raises an option missing its value without
                # the subcommand's context: given one, it is our one line too
                sub = self.get_command(ctx, ctx.invoked_subcommand)
                if sub is not None:
                    exc.ctx = click.Context(sub, info_name=ctx.invoked_subcommand, parent=ctx)
            raise
        except HsvmError as exc:
            # one line whatever a file name or a file held (control bytes escaped);
            # options the library refused read as the command line's usage errors
            if isinstance(exc, OptionError) and ctx.invoked_subcommand:
                click.echo(_usage_line("hsvm %s" % ctx.invoked_subcommand, exc.cli_message), err=True)
            else:
                click.echo("hsvm: %s" % printable(str(exc)), err=True)
            if isinstance(exc, OutputError):
                _discard_stdout()
            ctx.exit(exc.exit_code)
        except MemoryError as exc:
            # An allocation no check foresaw (checks compare with what is free
            # when they run): one line, not a traceback; every `finally` has
            # run, so no temporary output is left.  What was asked for (numpy
            # says) and what is free now, once the failed work has let go.
            from ..support.memory import format_bytes
            size = getattr(exc, "_total_size", None)
            _out_of_memory(ctx, " allocating %s" % format_bytes(size) if isinstance(size, int) and size > 0 else "")
        except RuntimeError as exc:
            behind = _signal_behind(exc)
            if behind is not None:
                # the signal's exception raised inside a lock's wait (a thread
                # pool's result): the lock's release failed on its way out,
                # "cannot release un-acquired lock", with a traceback
                _exit_for_signal(ctx, behind)
            # A thread the address-space limit leaves no stack for (ulimit -v):
            # the same shortage, said the same way.
            if "can't start new thread" not in str(exc):
                raise
            _out_of_memory(ctx, " starting a thread")
        except ImportError as exc:
            # A library loaded on first use (scipy's BLAS for calibrate) that the
            # limit leaves no room to map: the same; any other ImportError is a bug.
            if "failed to map segment" not in str(exc) and "cannot allocate memory" not in str(exc).lower():
                raise
            _out_of_memory(ctx, " loading %s" % (exc.name or "a library"))
        except BrokenPipeError as exc:
            # `hsvm predict ... | head`: the reader went away; not an error of ours.
            # Files of -o that went with it (a search's table on stdout is part
            # of the result, as with > /dev/full) are named: minutes of work.
            lost = getattr(exc, "discarded", ())
            if lost:
                with contextlib.suppress(OSError, ValueError):
                    click.echo("hsvm: <stdout>: its reader went away before the output was complete: %s not "
                               "written" % ", ".join(printable(str(n)) for n in lost), err=True)
            sys.stderr.close()
            ctx.exit(141)
        except KeyboardInterrupt as exc:
            _exit_for_signal(ctx, exc)
        except OSError as exc:
            from .entry import _ClosedStdout
            if exc.errno != errno.EBADF or not isinstance(getattr(sys.stdout, "_fh", sys.stdout), _ClosedStdout):
                raise
            # output to a standard output the process was started without
            click.echo("hsvm: <stdout>: cannot write: standard output is closed", err=True)
            ctx.exit(OutputError.exit_code)
        except Terminated as exc:
            _exit_for_signal(ctx, exc)
        except Exception as exc:
            # whatever else a signal's exception set off while it unwound
            behind = _signal_behind(exc)
            if behind is None:
                raise
            _exit_for_signal(ctx, behind)
        finally:
            set_command_threads(None)


def _signal_behind(exc):
    """The KeyboardInterrupt or Terminated during whose handling ``exc`` was
    raised (its context chain), or None."""
    seen = 0
    while exc is not None and seen < 32:
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            return exc
        exc, seen = exc.__context__, seen + 1
    return None


def _exit_for_signal(ctx, exc):
    """A command stopped by a signal: one line and the shell's 128 + signal."""
    # The first signal decides: its temporaries are gone and the process is
    # leaving.  A second (make passes its SIGTERM on to the job's process
    # group, which already had one) raised inside this handler: a traceback
    # and exit 1 in place of 143.
    if _process_exits:
        _leaving.append(True)
    if isinstance(exc, KeyboardInterrupt):
        click.echo("hsvm: interrupted", err=True)
        ctx.exit(130)
    click.echo("hsvm: %s" % ("hung up" if exc.signum == signal.SIGHUP else "terminated"), err=True)
    ctx.exit(128 + exc.signum)


_click_usage_show = click.UsageError.show
_CLICK_LIST_LAYOUT = re.compile(r"([:,])\n\t")


def _one_line_usage(self, file=None):
    """A usage error of an hsvm command in one line, as every other refusal
    (a log of a thousand array tasks holds one line per failure), with the
    command to ask for help: click's own is four lines.  Other click
    programs in the process keep click's."""
    ctx = getattr(self, "ctx", None)
    if ctx is None or not isinstance(ctx.find_root().command, HsvmGroup):
        return _click_usage_show(self, file)
    where = " ".join(["hsvm"] + ctx.command_path.split()[1:])     # as run, whatever the caller named the group
    # click lays out a list of choices over lines ("Choose from:\n\trbf,\n\t..."):
    # its layout becomes spaces; any other control character is escaped
    message = _CLICK_LIST_LAYOUT.sub(r"\1 ", self.format_message())
    hint = _TOOL_FLAGS.get((ctx.info_name, getattr(self, "option_name", None))) \
        if isinstance(self, click.NoSuchOption) else None
    if hint is not None:
        # the hint, not click's guesses among the names that look alike
        message = "%s (%s)" % (self.message.rstrip("."), hint)
    elif isinstance(self, click.NoSuchOption):
        named = _file_named_like(self.option_name, ctx)
        if named is not None:
            message = "%s (the file %s? put -- before it, or write ./%s)" % (self.message.rstrip("."), named, named)
    else:
        extra = _usage_hint(self, ctx)
        if extra:
            message = "%s (%s)" % (message.rstrip("."), extra)
    click.echo(_usage_line(where, message), file=file, err=file is None)


def _subcommand_name(ctx):
    """The subcommand the group's context is about to run, or None."""
    return (list(getattr(ctx, "_protected_args", None) or ()) or [None])[0]


def _subcommand_words(ctx):
    """The subcommand's words up to a ``--`` (the group keeps only the name
    among its protected args; the rest are ctx.args)."""
    words = list(ctx.args)
    return words[:words.index("--")] if "--" in words else words


def _refuse_libsvm_shrinking(group, ctx, name, words):
    """svm-train's `-h 0` (shrinking off) read as -h, help: the help printed,
    exit 0 and no model -- a recipe carried on as if it had trained."""
    for i, word in enumerate(words[:-1]):
        if word == "-h" and words[i + 1] in ("0", "1") and name in SUBCOMMANDS:
            sub = group.get_command(ctx, name)
            raise click.UsageError("-h is help here: LIBSVM's -h %s (shrinking) is no option of hsvm; leave it out "
                                   "(LIBLINEAR's dual solvers always shrink)" % words[i + 1],
                                   ctx=click.Context(sub, info_name=name, parent=ctx))


def _usage_hint(exc, ctx):
    """What to do about a natural first mistake, or None: an output file given
    as an argument (LIBSVM's `train data model`), the model given as TEST or
    left out beside -H."""
    names = {p.name for p in ctx.command.params}
    given = ctx.params or {}
    if exc.message.startswith("Got unexpected extra argument") and "output" in names \
            and given.get("output") in (None, "", "-"):       # predict's default is stdout, "-"
        return "an output file is named with -o FILE"
    param = getattr(exc, "param", None)
    if isinstance(exc, click.MissingParameter) and param is not None and param.name == "output":
        # `import-model m.model m.hsvm`: the last word names no file yet and
        # is none of the arguments the command took
        words = _run_words(ctx)[1:]
        taken = {str(v) for v in given.values() if isinstance(v, (str, os.PathLike))}
        if len(words) >= 2 and not words[-1].startswith("-") and not words[-2].startswith("-") \
                and words[-1] not in taken and not os.path.exists(words[-1]):
            return "is %s the output? name it with -o %s" % (words[-1], words[-1])
    if isinstance(exc, click.MissingParameter) and param is not None and param.name == "model_path":
        for name in ("test", "validation"):
            value = given.get(name)
            if isinstance(value, str) and value != "-" and _hsvm_model(value):
                return "%s is an hsvm model: give it with -m, and the data as %s" % (value, name.upper())
        if given.get("hbm_path"):
            return "the hash filter keeps classes for the exact model's classifiers: give the model (.hsvm) with -m"
    return None


def _run_words(ctx):
    """The words after the program name of the run that raised (the group's
    record of them; sys.argv's for a group run otherwise)."""
    words = getattr(ctx.find_root().command, "run_words", None)
    return list(sys.argv[1:] if words is None else words)


def _hsvm_model(path):
    """Whether ``path`` names an hsvm model file (one-vs-one or one-vs-rest)."""
    try:
        from ..io.container import container_kind
        return container_kind(path) in ("hsvm-model", "hsvm-ovr-model")
    except Exception:
        return False


def _file_named_like(option, ctx):
    """An argument of the command line that starts with the unknown option
    ``option`` and names an existing file (``-x.svm``, which the parser took
    for options), or None."""
    if not option:
        return None
    return next((arg for arg in _run_words(ctx) if arg.startswith(option) and arg != option
                 and os.path.exists(arg)), None)


# LIBLINEAR's and LIBSVM's flags that hsvm spells otherwise: a user's first
# try at them gets the hsvm spelling with click's "No such option".
_TOOL_FLAGS = {
    ("train-ovo", "-s"): "LIBSVM's -s 0 (C-SVC) is what train-ovo trains: leave -s out; LIBLINEAR's -s 1 / 2 / 3 "
                         "is --solver l2loss-dual / l2loss-primal / l1loss-dual here; the logistic-regression and "
                         "one-vs-rest solvers are not offered",
    ("train-ovo", "-g"): "LIBSVM's -g (gamma) is for kernels: hsvm kernel-hash --kernel rbf --gamma G, then "
                         "train-ovo --codes",
    ("kernel-hash", "-g"): "gamma is --gamma G",
    ("train-ovo", "-C"): "LIBLINEAR's -C is -c auto here: C chosen by cross-validation",
    ("train-ovo", "-b"): "probabilities come from a calibration: hsvm calibrate, then predict -C CALIB --proba",
    ("predict", "-b"): "svm-predict's -b 1 is -C CALIB --proba here, with a calibration from hsvm calibrate, or "
                       "for a model from svm-train -b 1 the one import-model --calibration CALIB keeps; "
                       "liblinear-predict -b 1 of an imported logistic-regression model is --proba alone",
    ("predict", "-c"): "a calibration is -C CALIB (--calibration); C is chosen when training: train-ovo -c",
    ("train-ovo", "-t"): "hsvm trains linear SVMs, LIBSVM's -t 0: leave -t out; for a kernel, train on kernel "
                         "hash codes: hsvm kernel-hash, then train-ovo --codes",
    ("train-ovo", "--c"): "C is -c C, as in LIBSVM",
    ("train-ovo", "--cost"): "C is -c C, as in LIBSVM",
}


def _out_of_memory(ctx, what):
    from ..support.memory import TooLargeError, available_memory, format_bytes
    have = available_memory()
    click.echo("hsvm: out of memory%s: the input or model is too large for this machine or its limits "
               "(ulimit -v, cgroup%s)" % (what, "" if have is None else "; %s free now that the failed work "
                                          "has let go" % format_bytes(have)),
               err=True)
    ctx.exit(TooLargeError.exit_code)


def _usage_line(where, message):
    """A bad command line's one line: ``hsvm CMD: message (see 'hsvm CMD --help')``."""
    return "%s: %s (see '%s --help')" % (where, printable(message).rstrip("."), where)


click.UsageError.show = _one_line_usage


def threading_main():
    import threading
    return threading.current_thread() is threading.main_thread()


def _discard_stdout():
    """After a failed write to stdout (``> /dev/full``), the interpreter's own
    flush at exit would fail again and print a second message."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


@click.group(cls=HsvmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hsvm")
def cli():
    """Apply very many one-vs-one linear SVMs cheaply: hash classifiers and samples
    to bit codes, filter classes by Hamming range queries, refine exactly."""
