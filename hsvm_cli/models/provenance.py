"""What a model records of its making: the hsvm version, the command line and
the SHA-256 of the training input, and no timestamp, so that the same training
gives the same bytes."""
import os
import shlex
import sys

from .. import __version__

# Options that change how or where a model is computed, never what it is: left
# out of the recorded command so that the same training gives byte-identical
# files -- with any number of jobs, trained in one process or by pair blocks
# (--pairs, then merge-models) or on a Dask cluster (--dask).  Values: how many
# arguments follow the option.
_NEUTRAL_OPTIONS = {"-j": 1, "--jobs": 1, "-q": 0, "--quiet": 0, "--pairs": 1, "--dask": 1}
# Short options that take a value can carry it glued on (-j4).
_GLUED = tuple(name for name, n in _NEUTRAL_OPTIONS.items() if n and not name.startswith("--"))


def _neutral(arg):
    """How many arguments a neutral option at ``arg`` spans (0: not one)."""
    name = arg.split("=", 1)[0]
    if name in _NEUTRAL_OPTIONS:
        return 1 + (_NEUTRAL_OPTIONS[name] if "=" not in arg else 0)
    if arg.startswith(_GLUED) and len(arg) > 2:
        return 1
    return 0


def recorded_command(argv=None):
    """The command line as recorded in a model: the program's base name, then
    the arguments less --jobs/-j, --quiet/-q, --pairs and --dask in any
    spelling (``-j 4``, ``-j4``, ``--jobs=4``, ``--jobs 4``), each quoted for
    a POSIX shell where it needs it (``shlex.quote``: ``'my data.svm'``), so
    that the line can be run again as it stands."""
    argv = list(sys.argv if argv is None else argv) or ["hsvm"]     # [] from a caller: no program name
    out, i = [os.path.basename(argv[0])], 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-q") and len(arg) > 2 and not arg.startswith("--"):
            # bundled short options after -q: -qj2, -qj 2, -qc0.1, -qo FILE
            rest = arg[1:].lstrip("q")
            if rest.startswith("j"):
                i += 1 if len(rest) > 1 else 2          # -j's value glued on, or the next argument
                continue
            if rest:
                out.append("-" + rest)
            i += 1
            continue
        skip = _neutral(arg)
        if skip:
            i += skip
            continue
        out.append(arg)
        i += 1
    return " ".join(shlex.quote(arg) for arg in out)


def provenance(train_path=None, train_sha256=None):
    """The provenance record of a model trained now from ``train_path``."""
    return {
        "hsvm_version": __version__,
        "command": recorded_command(),
        "train_input": train_path,
        "train_sha256": train_sha256,
    }


def record_zero_based(record, zero_based):
    """``record`` with ``"zero_based": true`` when the training file numbered
    its features from 0, so that predict and calibrate read their input the
    same way by default (1-based files record nothing, as before)."""
    if zero_based:
        record["zero_based"] = True
    return record


def trained_zero_based(model):
    """Whether ``model`` (a model, kernel hash or learned circulant hash) was
    fitted on a file with 0-based feature indices (``--zero-based``): the
    default of the commands that read samples for it."""
    record = getattr(model, "provenance", None)
    if record is None:          # a learned circulant hash keeps it in its meta
        record = (getattr(model, "meta", None) or {}).get("provenance")
    return bool((record if isinstance(record, dict) else {}).get("zero_based", False))
