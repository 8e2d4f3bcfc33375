"""``python -m hsvm_cli`` runs the ``hsvm`` command."""
from .cli.entry import main

main()
