"""Options shared by several subcommands, defined once (rasterio-style registry)."""
import functools
import math
import os
import sys

import click

from ..errors import OptionError, printable
from ..hashing import MAX_CODE_BITS
from ..io.files import binary_on_terminal, output_is_terminal, refuse_overwriting_input, same_output
from ..support.text import (
    counted,  # noqa: F401  (the subcommands' messages use it as options.counted)
    decimal_int,
)
from ..support.threads import resolve_threads
from .early_input import MAX_CHUNK_ROWS


class FiniteFloat(click.FloatRange):
    """A float within optional bounds that is neither nan nor infinite (nan
    compares false with every bound, so a plain FloatRange lets it through)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail("%r is not a finite number." % value, param, ctx)
        return number

    def _describe_range(self):
        # click shows "x<=None" for a range without bounds
        if self.min is None and self.max is None:
            return "finite"
        return super()._describe_range()


def _bound_text(value):
    """A large bound as the power of two it sits at (2^63-1, 2^31-2), which the
    help reads at a glance where 9223372036854775807 needs counting."""
    for n in range(31, 65):
        for off, text in ((0, ""), (1, "-1"), (2, "-2")):
            if value == (1 << n) - off:
                return "2^%d%s" % (n, text)
    return str(value)


class Int(click.types.IntParamType):
    """click's INT, in ASCII decimal digits (:func:`decimal_int`)."""
    _number_class = staticmethod(decimal_int)


#: ``type=INT`` for an integer option.
INT = Int()


class IntRange(click.IntRange):
    """click's IntRange, in ASCII decimal digits (:func:`decimal_int`)."""
    _number_class = staticmethod(decimal_int)


class IntBounds(IntRange):
    """:class:`IntRange` with large bounds shown as powers of two, in the help
    and in its out-of-range message."""

    def _describe_range(self):
        if self.min is None or self.max is None:
            return super()._describe_range()
        return "%s<=x<=%s" % (_bound_text(self.min), _bound_text(self.max))


def outputs_apart(outputs, inputs, binary=()):
    """Refuse, as a usage error, an output that is the same regular file as
    one of the command's inputs (``train-ovo v.svm -o v.svm``): the atomic
    rename would replace the input by the result; and two outputs that name
    the same file (``calibrate -o x --grid-json x``).  ``outputs``: (parameter,
    option) pairs; ``inputs``: parameter names (a value may be a tuple of
    paths); ``binary``: the outputs that are binary files, refused on a
    terminal before the work rather than once it is done (exit 74, as
    atomic_output refuses them).  Applied to the command's function, under
    its options."""
    def wrap(f):
        @functools.wraps(f)
        def checked(**params):
            paths = []
            for name in inputs:
                value = params.get(name)
                paths.extend(value if isinstance(value, (list, tuple)) else [value])
            for name, hint in outputs:
                # one line (file names escaped), exit 2: a usage error
                refuse_overwriting_input(params.get(name), paths, label=hint, context=" of this command",
                                         shown=click.format_filename)
            for i, (name, hint) in enumerate(outputs):
                for other, other_hint in outputs[i + 1:]:
                    if same_output(params.get(name), params.get(other)):
                        raise OptionError("%s and %s name the same file: the second would replace the first"
                                          % (hint, other_hint))
            for name in binary:
                value = params.get(name)
                if value is not None and output_is_terminal(value):
                    raise binary_on_terminal(click.format_filename(value))
            return f(**params)
        return checked
    return wrap


quiet = click.option("-q", "--quiet", is_flag=True,
                     help="Only errors and warnings on stderr: no progress bar, log or accuracy line (where the "
                          "command shows them).")
seed = click.option("--seed", type=IntBounds(0, 2**64 - 1), default=0, show_default=True,
                    help="Seed of every random step; the same seed gives byte-identical output.")
jobs = click.option("-j", "--jobs", type=IntRange(min=1), default=1, show_default=True,
                    help="Parallel training workers.")
zero_based = click.option("--zero-based", is_flag=True,
                          help="Feature indices in the svmlight input start at 0 (default: 1, as LIBSVM).")
# predict's and calibrate's variant: the default is the model's training file's.
zero_based_by_model = click.option(
    "--zero-based/--one-based", "zero_based", default=None,
    help="Feature indices in the svmlight input start at 0, or at 1 as in LIBSVM (default: as in the file the "
         "model was trained on, recorded in it by train-ovo --zero-based; else 1).")


def numbering_note(command, zero_based, trained_zero_based, fitted, data):
    """The note a command prints when ``--zero-based`` / ``--one-based`` was
    given against the numbering ``fitted`` (a model or hash file) was trained
    on, or None: every feature is then read one place off the model's, which is
    right only for a file that numbers the same features the other way.  (An
    index 0 is refused in a file read 1-based, and its message suggests
    --zero-based; LIBSVM's svm-predict ignores such a feature instead, so the
    flag is sometimes given to silence it.)"""
    if zero_based is None or bool(zero_based) == bool(trained_zero_based):
        return None
    return ("hsvm: %s: note: %s was trained on features numbered from %d; %s reads %s's index i as its "
            "feature i%s1 (right only if %s numbers the same features from %d)"
            % (command, click.format_filename(fitted), 0 if trained_zero_based else 1,
               "--zero-based" if zero_based else "--one-based", click.format_filename(data),
               "+" if zero_based else "-", click.format_filename(data), 0 if zero_based else 1))


timings = click.option("--timings", is_flag=True,
                       help="Print a JSON line with the seconds spent in each phase to stderr.")
as_json = click.option("--json", "as_json", is_flag=True, help="Emit machine-readable JSON instead of text.")
chunk_rows = click.option("--chunk-rows", type=IntBounds(min=1, max=MAX_CHUNK_ROWS), default=16384,
                          show_default=True,
                          help="Samples parsed and processed per chunk (bounds memory).")
extra_features = click.option("--extra-features", type=click.Choice(["error", "ignore"]), default="error",
                              show_default=True,
                              help="What to do with feature indices beyond the model's dimension.")
# predict's variant: the default depends on the model (imported models ignore
# extra features, as svm-predict and liblinear-predict do).
extra_features_by_model = click.option(
    "--extra-features", type=click.Choice(["error", "ignore"]), default=None,
    help="What to do with feature indices beyond the model's dimension (default: error; ignore for a model "
         "imported from LIBSVM or LIBLINEAR, as their predict tools do).")
# Input paths are checked by the library as it opens them: a missing,
# unreadable or directory path is then one line and exit 66, where click's own
# checks would print a usage message and exit 2.
class _NamedPath(click.Path):
    """A path that is not empty: `-o ''` had been written as the directory
    '' names ("cannot write: is a directory"), `-H ''` looked for a file
    named nothing, and `-C ''` or `--grid-json ''` was taken as not given at
    all.  An empty name (a recipe's unset variable) is a usage error naming
    the option."""

    def convert(self, value, param, ctx):
        if isinstance(value, (str, bytes)) and not value:
            self.fail("empty file name (an unset variable in the command line?)", param, ctx)
        return super().convert(value, param, ctx)


#: A data file: a path or '-' for stdin.
INPUT = _NamedPath(allow_dash=True, readable=False)
#: A model, hash model, calibration or codes file (no stdin: they are mapped).
INPUT_FILE = _NamedPath(readable=False)
#: A file to write, and one that may be '-' (stdout): opened as written,
#: where click's check of an existing file's read permission had refused an
#: output that is write-only to us.
OUTPUT_FILE = _NamedPath(readable=False)
OUTPUT = _NamedPath(allow_dash=True, readable=False)

model = click.option("-m", "--model", "model_path", required=True, type=INPUT_FILE,
                     help="Exact model (.hsvm).")

_OUTPUT_HELP = ("Written to a temporary name, then renamed (a device, FIFO or /dev/stdout is written "
                "through).")


def output(required=False, what="Output file"):
    """``-o/--output``: a file to write; ``-`` (stdout) is the default unless
    ``required``."""
    if required:
        return click.option("-o", "--output", required=True, type=OUTPUT_FILE,
                            help="%s. %s" % (what, _OUTPUT_HELP))
    return click.option("-o", "--output", default="-", show_default=True, type=OUTPUT,
                        help="%s ('-': stdout). %s" % (what, _OUTPUT_HELP))


def hash_model(required=False, help="Hash model (.hbm)."):
    return click.option("-H", "--hash-model", "hbm_path", required=required, type=INPUT_FILE,
                        help=help)


def _threads_callback(ctx, param, value):
    try:
        threads = resolve_threads(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if value is not None:
        # every pool the command starts, also where no threads are passed;
        # unset when the command's context closes (also run on its own)
        from ..support.threads import set_command_threads
        set_command_threads(threads)
        ctx.call_on_close(lambda: set_command_threads(None))
    return threads


threads = click.option("--threads", default=None, callback=_threads_callback, metavar="N",
                       help="Threads for the native kernels (default, or 0 or 'auto': the CPUs this process may use, "
                            "honouring OMP_NUM_THREADS and SLURM_CPUS_PER_TASK).")


def _shard_callback(ctx, param, value):
    if value is None:
        return None
    from ..io.shard import ShardError, parse_shard
    try:
        return parse_shard(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


#: ``--shard i/N``: one byte-range shard of a plain sample file (io/shard.py).
shard = click.option("--shard", callback=_shard_callback, metavar="i/N",
                     help="Read only shard i of N (0-based) of the plain input file: its byte range "
                          "[i*S/N, (i+1)*S/N) with whole lines (the line that crosses the start belongs to the "
                          "shard before), so N shards read every line once and their outputs concatenated are "
                          "the whole file's; line numbers in messages stay the file's.  'slurm': this job array "
                          "task's shard (SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT).  Compressed input "
                          "cannot be split: shard by file instead (0/1, the whole input, reads any input).")


def dask(what):
    """``--dask ADDRESS|local:N``: run on a Dask cluster (cluster/dask_backend.py)."""
    return click.option("--dask", "dask_address", metavar="ADDRESS|local:N",
                        help="Run on a Dask cluster (pip install 'hsvm[dask]'): the scheduler at ADDRESS "
                             "(tcp://host:8786), or local:N, N single-threaded worker processes on this machine. "
                             + what)


#: Narrower terminals get no progress bar.
MIN_BAR_COLUMNS = 20


def show_progress(quiet_flag):
    """Progress bars only for a person watching: never with --quiet or when
    stderr is a pipe or file (batch jobs, CI logs), nor on a terminal of no
    width or height (a `script` or pty nobody sized), where tqdm showed no
    bar but left an empty line."""
    if quiet_flag or not sys.stderr.isatty():
        return False
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return True
    return size.columns >= MIN_BAR_COLUMNS and size.lines > 0


def log(message):
    """A one-line log on stderr (a summary naming its output), with what a
    file name may hold that is not printable escaped as the error messages
    escape it: a newline in a name had split the line in two, and an
    undecodable byte showed as \\udcXX."""
    click.echo(printable(message), err=True)


def input_path(**kw):
    return click.argument(kw.pop("name", "input"), type=INPUT, **kw)


def code_bits(ctx, param, value):
    """A callback for a code length to make: a positive multiple of 64, the
    64-bit words codes are packed in, and no longer than the files hold."""
    if value is not None and (value <= 0 or value % 64):
        raise click.BadParameter("must be a positive multiple of 64 (codes are packed in 64-bit words), got %d"
                                 % value)
    if value is not None and value > MAX_CODE_BITS:
        raise click.BadParameter("must be at most %d, got %d" % (MAX_CODE_BITS, value))
    return value


def comma_list(kind, what, check=None, allow_empty=False):
    """A callback parsing ``1,2,3`` into a list of ``kind``, each value finite
    and passing ``check`` when given; an empty list only with ``allow_empty``
    (``calibrate --first-stages ''``: no first stage at all)."""
    def parse(ctx, param, value):
        if value is None:
            return None
        items = [v.strip() for v in value.split(",")]
        if not any(items):
            items = []
        if "" in items:
            # `1,,2` is a typo more often than a list of two
            raise click.BadParameter("expected comma-separated %s, got an empty item in %r" % (what, value))
        try:
            values = [(decimal_int if kind is int else kind)(v) for v in items]
        except ValueError:
            raise click.BadParameter("expected comma-separated %s" % what) from None
        if not values and not allow_empty:
            raise click.BadParameter("expected comma-separated %s, got none" % what)
        for v in values:
            if (isinstance(v, float) and not math.isfinite(v)) or (check is not None and not check(v)):
                raise click.BadParameter("expected comma-separated %s, not %s" % (what, v))
        return values
    return parse
