"""hsvm fit-circulant: fit a learned circulant hash (the exact circulant SVM)
to target codes, for ``hash-data -H``."""
import click

from ..models.circulant_hash import save_circulant_hash
from ..train.circulant_fit import LOSSES, ROWS, fit_circulant_file
from . import options


@click.command("fit-circulant", short_help="Fit learned circulant hash functions.")
@options.input_path(name="data")
@click.option("--targets", required=True, metavar="CODES|itq", type=options.INPUT_FILE,
              help="The codes to fit: 'itq' (iterative quantisation of DATA, fitted here) or a codes file from "
                   "`hsvm hash-data` with one code per sample of DATA, in the same order (./itq for a file so "
                   "named).")
@click.option("--bits", type=options.INT, required=True, callback=options.code_bits,
              help="L: bits of the hash, a multiple of 64 (hash-data packs them into 64-bit words), at most the "
                   "features of DATA; with a codes file its first L bits are the targets.")
@click.option("-c", "C", type=options.FiniteFloat(min=0, min_open=True), default=1.0, show_default=True,
              help="Per-bit cost of the L SVMs the circulant SVM solves jointly.")
@click.option("--loss", type=click.Choice(sorted(LOSSES)), default="squared-hinge", show_default=True,
              help="squared-hinge (LIBLINEAR -s 1) or hinge (-s 3).")
@click.option("--rows", type=click.Choice(ROWS), default="first", show_default=True,
              help="Which rows of circ(w) are the bits: the first L, or L rows spread evenly (often fits unrelated "
                   "targets such as ITQ's better).")
@click.option("-e", "--eps", type=options.FiniteFloat(min=0, min_open=True), default=0.1, show_default=True,
              help="Stopping tolerance of the dual coordinate descent (LIBLINEAR's rule).")
@click.option("--normalize", type=click.Choice(["l2", "none"]), default="l2", show_default=True,
              help="Sample normalisation, recorded in the hash and applied again by hash-data.")
@options.seed
@options.output(required=True, what="Learned circulant hash to write")
@options.zero_based
@options.quiet
@options.outputs_apart((("output", "-o"),), ("data", "targets"), binary=("output",))
def command(data, targets, bits, C, loss, rows, eps, normalize, seed, output, zero_based, quiet):
    """Fit L circulant hash functions h_l(x) = sgn(w.P_l x + b_l), the rows of
    circ(w), to target codes of the samples of the svmlight file DATA ('-':
    stdin) with the exact circulant SVM."""
    h = fit_circulant_file(data, bits=bits, targets=targets, zero_based=zero_based, C=C, loss=loss, eps=eps,
                           seed=seed, normalize=normalize, rows=rows)
    save_circulant_hash(h, output)
    if not quiet:
        options.log("hsvm: circulant SVM, %d bits over %d features fitted to %s targets (%d passes%s): per-bit "
                   "training accuracy %.4f -> %s"
                   % (h.bits, h.n_features, h.meta["targets"], h.meta["solver_passes"],
                      "" if h.meta["solver_converged"] else ", not converged",
                      h.meta["train_per_bit_accuracy"], output))
