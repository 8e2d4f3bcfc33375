"""The ``hsvm`` command: a thin layer over the library, one module per subcommand."""
import os
import signal
import sys

import click

from .. import __version__
from ..errors import HsvmError, OutputError, printable


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that every ``finally`` runs:
    temporary outputs are removed, nothing half-written is left."""


def _raise_terminated(signum, frame):
    raise Terminated()


class HsvmGroup(click.Group):
    """Turns library errors into a one-line message and their exit status."""

    def invoke(self, ctx):
        try:
            if threading_main():
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, _raise_terminated)
            return super().invoke(ctx)
        except HsvmError as exc:
            # one line whatever a file name or a file held (control bytes escaped)
            click.echo("hsvm: %s" % printable(str(exc)), err=True)
            if isinstance(exc, OutputError):
                _discard_stdout()
            ctx.exit(exc.exit_code)
        except BrokenPipeError:
            # `hsvm predict ... | head`: the reader went away; not an error of ours.
            sys.stderr.close()
            ctx.exit(141)
        except KeyboardInterrupt:
            click.echo("hsvm: interrupted", err=True)
            ctx.exit(130)
        except Terminated:
            click.echo("hsvm: terminated", err=True)
            ctx.exit(143)


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


def _register():
    from . import (
        cmd_calibrate,
        cmd_eval,
        cmd_fit_circulant,
        cmd_hash_data,
        cmd_hash_model,
        cmd_import_model,
        cmd_kernel_hash,
        cmd_merge_models,
        cmd_predict,
        cmd_train_ovo,
    )
    for mod in (cmd_train_ovo, cmd_merge_models, cmd_import_model, cmd_hash_model, cmd_hash_data, cmd_predict,
                cmd_calibrate, cmd_eval, cmd_kernel_hash, cmd_fit_circulant):
        cli.add_command(mod.command)


_register()
