"""hsvm info: what an hsvm file holds -- kind, version, arrays, classes and
metadata (training parameters, the C search's table, provenance, seeds,
digests) -- after the checks every command applies to it."""
import click

from ..errors import HsvmError, printable
from ..models.inspect import describe
from . import options


@click.command("info", short_help="Describe and check hsvm files of every kind.")
@click.argument("files", nargs=-1, required=True, type=options.INPUT_FILE)
@click.option("--verify", is_flag=True,
              help="Also check every block of every array against its checksum (a model's W, which prediction "
                   "checks only as it reads it, included).")
@options.as_json
@click.option("-q", "--quiet", is_flag=True,
              help="Accepted as by every command (a recipe may give it to all); info logs nothing beside its "
                   "description on stdout and the files it cannot read on stderr.")
@click.pass_context
def command(ctx, files, verify, as_json, quiet):
    """Describe each hsvm FILE (a model, hash model, calibration, codes,
    kernel hash, circulant hash, model part): its format, arrays, classes and
    metadata.  A file that cannot be read is named on stderr and the others
    are still described; the exit status is then the first such file's (65
    damaged, 66 missing).  --json: one JSON object per file and line."""
    status = 0
    for path in files:
        try:
            info = describe(path, verify=verify)
        except HsvmError as exc:
            click.echo("hsvm: %s" % printable(str(exc)), err=True)
            status = status or exc.exit_code
            continue
        click.echo(info.json() if as_json else info.text(), nl=as_json)
    ctx.exit(status)
