"""``python -m hsvm_cli`` runs the ``hsvm`` command."""
from .cli.main import cli

cli(prog_name="hsvm")
