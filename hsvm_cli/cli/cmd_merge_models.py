"""hsvm merge-models: join the part files of `train-ovo --pairs i/N` into the model."""
import click

from ..train.merge import merge_models
from . import options


@click.command("merge-models", short_help="Join the parts of train-ovo --pairs i/N runs.")
@click.argument("parts", nargs=-1, required=True, type=options.INPUT_FILE)
@options.output(required=True, what="Model file to write (.hsvm)")
@options.quiet
@options.outputs_apart((("output", "-o"),), ("parts",), binary=("output",))
def command(parts, output, quiet):
    """Join the PARTS written by `hsvm train-ovo --pairs i/N` (in any order)
    into the model a single `train-ovo` run without --pairs writes, byte for
    byte.  Refuses parts of different training inputs, parameters or seeds,
    and any pair missing or held twice; streams, holding one part at a time."""
    report = merge_models(parts, output, progress=options.show_progress(quiet))
    if not quiet:
        options.log("hsvm: merge-models: %s, %s, %s -> %s (%.1f s)"
                   % (options.counted(report.n_parts, "part"), options.counted(report.n_pairs, "pair"),
                      options.counted(report.n_classifiers, "classifier"), output, report.seconds))
