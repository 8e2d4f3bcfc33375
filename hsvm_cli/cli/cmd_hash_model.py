"""hsvm hash-model: hash every classifier of an exact model into a .hbm file."""
import os

import click

from ..io.files import regular_file_size
from ..models.hashed import PROJECTION_PEAK_BYTES, hash_model, save_hash_model
from ..models.loading import load_any_model
from ..models.ovr import OvrModel, hash_ovr_model, save_ovr_hash_model
from ..support.memory import fits, format_bytes
from . import options

# A Gaussian projection this large is worth a word before it is made: every
# command that hashes makes it again (0.81 GB at d = 198,866 and 1024 bits:
# predict -H 8.6 s against 0.54 s with the circulant projection).
_LARGE_PROJECTION = 256 << 20


@click.command("hash-model", short_help="Hash a model's classifiers to bit codes (.hbm).")
@options.model
@click.option("--bits", type=options.IntRange(min=64, max=options.MAX_CODE_BITS), default=1024, show_default=True,
              help="Code length D (a multiple of 64); predict may use any multiple-of-64 prefix.")
@options.output(required=True, what="Hash model to write (.hbm)")
@click.option("--projection", type=click.Choice(["gaussian", "circulant"]), default="gaussian", show_default=True,
              help="gaussian: a dense D x d matrix; circulant: blocks of circ(r) diag(s) applied by FFT, "
                   "O(d log d) per sample and O(D) parameters (faster for d >= 4096 and D >= 1024; one-vs-one models "
                   "only).")
@click.option("--store-projection", is_flag=True,
              help="Store the projection in the file (the D x d matrix, or the circulant's D floats and signs; "
                   "default: derive it from the seed when needed).")
@click.option("--class-scores", is_flag=True,
              help="Also store the K x d class-score summaries, so that predict --first-stage scores or "
                   "hashed-scores need no pass over the model's weights (one-vs-one models only).")
@options.seed
@options.quiet
@options.outputs_apart((("output", "-o"),), ("model_path",), binary=("output",))
def command(model_path, bits, output, projection, store_projection, class_scores, seed, quiet):
    """Hash the classifiers of the model given with -m with D sign random
    projections (a hash model, .hbm: predict -H filters with it)."""
    if bits % 64:
        # before the note on the projection's size, which would never be made (--bits' range checks the rest)
        raise click.BadParameter("must be a multiple of 64 from 64 to %d, got %d" % (options.MAX_CODE_BITS, bits),
                                 param_hint=["--bits"])
    model = load_any_model(model_path)
    ovr = isinstance(model, OvrModel)
    if not quiet and projection == "gaussian" and 4 * bits * model.n_features >= _LARGE_PROJECTION \
            and fits(bits * model.n_features * PROJECTION_PEAK_BYTES):
        # said before the work (at d = 2,000,000 and 1024 bits it took minutes and 9 GB), unless
        # the hashing refuses it, saying as much
        options.log("hsvm: hash-model: note: the Gaussian projection of %d bits x {:,} features is %s, %s%s".format(
            model.n_features) % (
            bits, format_bytes(4 * bits * model.n_features),
            "stored in the hash model" if store_projection else "made again by every command that hashes with it",
            "" if ovr else "; --projection circulant needs O(D) memory and O(d log d) time a sample"))
    if ovr:
        # One-vs-rest models (imported from LIBLINEAR) are hashed class by class
        # with the Gaussian projection; their filter ranks estimated margins.
        if projection != "gaussian":
            raise click.UsageError("--projection %s needs a one-vs-one model (%s is one-vs-rest)"
                                   % (projection, model_path))
        if class_scores:
            raise click.UsageError("--class-scores needs a one-vs-one model (%s is one-vs-rest: its class "
                                   "normals are the class scores)" % model_path)
        h = hash_ovr_model(model, bits=bits, seed=seed, store_projection=store_projection)
        save_ovr_hash_model(h, output)
    else:
        h = hash_model(model, bits=bits, seed=seed, store_projection=store_projection,
                       class_scores=class_scores, projection=projection)
        save_hash_model(h, output)
    if not quiet:
        # sizes of regular files only: -o - or a device has none to show
        size = regular_file_size(output)
        options.log("hsvm: %s x %d bits%s -> %s (%smodel %.1f KiB)"
                    % (options.counted(h.codes.shape[0], "classifier"), bits,
                       " (circulant projection)" if projection == "circulant" else "", output,
                       "" if size is None else "%.1f KiB; " % (size / 1024), os.path.getsize(model_path) / 1024))
        for note in filter_cost_notes(h.codes.shape[0], bits, model.n_features, projection):
            options.log("hsvm: hash-model: note: " + note)


def filter_cost_notes(classifiers, bits, n_features, projection):
    """Why the hash filter made of this hash model cannot be cheaper than
    exact scoring, whatever the samples: hashing a sample with the Gaussian
    projection costs D multiply-adds per stored feature, exact scoring one
    per classifier, so with no more classifiers than bits the projection
    alone costs what --exact does; and a classifier's code of D/8 bytes,
    popcounted, costs about what its 4d bytes of weights cost multiplied,
    once it is as large (d = 9, 1024 bits: 128 bytes against 36)."""
    notes = []
    if projection == "gaussian" and classifiers <= bits:
        notes.append("%s and %d bits: hashing a sample costs at least as many multiply-adds as scoring it "
                     "against every classifier, so the hash filter cannot be faster than predict --exact "
                     "(it pays with many more classifiers than bits)" % (options.counted(classifiers, "classifier"),
                                                                          bits))
    if bits // 8 >= 4 * n_features:
        notes.append("a classifier's %d-bit code (%d bytes) is no smaller than its %s of weights (%d bytes): the "
                     "filter's Hamming distances cost about what exact products cost; predict --exact, or fewer "
                     "--bits" % (bits, bits // 8, options.counted(n_features, "feature"), 4 * n_features))
    return notes
