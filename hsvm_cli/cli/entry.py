"""The ``hsvm`` console script.  Signals are handled from the first moment: a
Ctrl-C or SIGTERM while the modules are still loading leaves at once (nothing
is written yet), without a traceback; once a subcommand runs, they raise so
that its cleanup runs (cli/main.py)."""
import os
import signal


def _exit_quietly(signum, frame):
    os._exit(128 + signum)


def main():
    signal.signal(signal.SIGINT, _exit_quietly)
    signal.signal(signal.SIGTERM, _exit_quietly)
    # Before numpy loads its BLAS: a Slurm task's BLAS threads are its CPUs.
    from ..support.resources import blas_threads_from_slurm
    blas_threads_from_slurm()
    from .main import cli
    cli(prog_name="hsvm")
