"""What a model records of its making: the hsvm version, the command line and
the SHA-256 of the training input, and no timestamp, so that the same training
gives the same bytes."""
import os
import sys

from .. import __version__

# Options that change how a model is computed, not what it is: left out of the
# recorded command so that the same training gives byte-identical files.
_NEUTRAL_OPTIONS = {"-j": 1, "--jobs": 1, "-q": 0, "--quiet": 0}


def recorded_command(argv=None):
    """The command line as recorded in a model, less --jobs and --quiet."""
    argv = list(sys.argv if argv is None else argv)
    out, i = [os.path.basename(argv[0])], 1
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in _NEUTRAL_OPTIONS:
            i += 1 + (_NEUTRAL_OPTIONS[name] if "=" not in arg else 0)
            continue
        out.append(arg)
        i += 1
    return " ".join(out)


def provenance(train_path=None, train_sha256=None):
    """The provenance record of a model trained now from ``train_path``."""
    return {
        "hsvm_version": __version__,
        "command": recorded_command(),
        "train_input": train_path,
        "train_sha256": train_sha256,
    }
