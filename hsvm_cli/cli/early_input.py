"""The input ``hsvm predict`` or ``hsvm hash-data`` is about to read, read off
its command line before click and the modules load, so that its first lines
are parsed on the idle core meanwhile (io/early_parse.py).

Nothing here decides anything: a command line read wrongly (an option these
tables lack, a value that is not what click will make of it) starts a parse
that the reader does not adopt -- it adopts only rows of the very file it
opens, parsed with its own options -- and the cost is the idle core's time.
``HSVM_NO_EARLY_PARSE=1`` turns it off."""
import os

#: The subcommands whose one positional argument is an svmlight input they
#: parse first, and their options that take a value (a test holds these to
#: the commands' own lists).
VALUE_OPTIONS = {
    "predict": frozenset({
        "-m", "--model", "-H", "--hash-model", "--first-stage", "--refine", "--bits", "-k", "--filter-k", "--codes",
        "--kernel-hash", "-C", "--calibration", "--filter-threshold", "-o", "--output", "--class-order",
        "--threads", "--extra-features", "--chunk-rows", "--shard", "--dask",
    }),
    "hash-data": frozenset({
        "-H", "--hash-model", "--bits", "--format", "-o", "--output", "--extra-features", "--chunk-rows", "--shard",
    }),
}

#: Their --chunk-rows default (a test holds it to the options').
DEFAULT_CHUNK_ROWS = 16384
# --chunk-rows' largest value (options.chunk_rows): far beyond any file's rows.
MAX_CHUNK_ROWS = 2**40


def command_input(command, args):
    """(input path, zero_based, chunk_rows) of ``hsvm COMMAND ARGS`` (a
    command of VALUE_OPTIONS) when it reads one plain file on more than one
    thread, else None."""
    with_values = VALUE_OPTIONS[command]
    positional, values, flags = [], {}, []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            positional.extend(rest)
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            options = [(name, value if eq else None)]
        elif arg.startswith("-") and arg != "-":
            # a cluster of short flags, the last of which may take a value (-qk3, -qk 3)
            options = []
            for j in range(1, len(arg)):
                name = "-" + arg[j]
                options.append((name, arg[j + 1:] or None))
                if name in with_values:
                    break
        else:
            positional.append(arg)
            continue
        for name, value in options:
            if name not in with_values:
                flags.append(name)
                continue
            if value is None:
                value = next(rest, None)
                if value is None:
                    return None
            values[name] = value
    if len(positional) != 1 or positional[0] in ("", "-") or "--help" in flags:
        return None
    if "--shard" in values or "--dask" in values:
        return None
    from ..support.threads import resolve_threads
    try:
        if resolve_threads(values.get("--threads")) < 2:
            return None
    except ValueError:      # click refuses it
        return None
    try:
        chunk_rows = int(values.get("--chunk-rows", DEFAULT_CHUNK_ROWS))
    except ValueError:
        return None
    if not 1 <= chunk_rows <= MAX_CHUNK_ROWS:        # click refuses it (past int64, C would overflow)
        return None
    # the last of --zero-based / --one-based wins, as in click
    numbering = [f for f in flags if f in ("--zero-based", "--one-based")]
    zero_based = bool(numbering) and numbering[-1] == "--zero-based"
    return positional[0], zero_based, chunk_rows


def start_early_parse(argv):
    """Start parsing the input of the command line ``argv`` if it is a
    predict or hash-data command line that names one."""
    if len(argv) < 3 or argv[1] not in VALUE_OPTIONS or os.environ.get("HSVM_NO_EARLY_PARSE", "") not in ("", "0"):
        return
    found = command_input(argv[1], argv[2:])
    if found is None:
        return
    path, zero_based, chunk_rows = found
    from ..io import early_parse
    try:
        early_parse.start(path, zero_based=zero_based, chunk_rows=chunk_rows)
    except (OSError, ValueError):
        # an undecodable name and the like: the reader says what it makes of it
        pass
