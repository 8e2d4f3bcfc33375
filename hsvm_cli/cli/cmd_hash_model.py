"""hsvm hash-model: hash every classifier of an exact model into a .hbm file."""
import os

import click

from ..models.hashed import hash_model, save_hash_model
from ..models.loading import load_any_model
from ..models.ovr import OvrModel, hash_ovr_model, save_ovr_hash_model
from . import options


@click.command("hash-model")
@options.model
@click.option("--bits", type=click.IntRange(min=64), default=1024, show_default=True,
              help="Code length D (a multiple of 64); predict may use any multiple-of-64 prefix.")
@options.output(required=True, what="Hash model to write (.hbm)")
@click.option("--store-projection", is_flag=True,
              help="Store the D x d projection in the file (default: derive it from the seed when needed).")
@options.seed
@options.quiet
def command(model_path, bits, output, store_projection, seed, quiet):
    """Hash the classifiers of MODEL with D sign random projections."""
    if bits % 64:
        raise click.BadParameter("must be a multiple of 64, got %d" % bits, param_hint="--bits")
    model = load_any_model(model_path)
    if isinstance(model, OvrModel):
        h = hash_ovr_model(model, bits=bits, seed=seed, store_projection=store_projection)
        save_ovr_hash_model(h, output)
    else:
        h = hash_model(model, bits=bits, seed=seed, store_projection=store_projection)
        save_hash_model(h, output)
    if not quiet:
        click.echo("hsvm: %d classifiers x %d bits -> %s (%.1f KiB; model %.1f KiB)"
                   % (h.codes.shape[0], bits, output, os.path.getsize(output) / 1024,
                      os.path.getsize(model_path) / 1024), err=True)
