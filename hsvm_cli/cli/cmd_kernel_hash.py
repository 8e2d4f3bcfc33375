"""hsvm kernel-hash: fit kernelized random subspace hashing (Hash-SVM's KRSH)."""
import click

from ..errors import OptionError
from ..hashing.krsh import KERNEL_PARAMETERS
from ..models.kernel_hash import save_kernel_hash
from ..train.kernel_hash import fit_kernel_hash_file
from . import options


def _gamma(ctx, param, value):
    if value is None or value == "auto":
        return "auto"
    try:
        gamma = float(value)
    except ValueError:
        gamma = float("nan")
    if not (0 < gamma < float("inf")):
        raise click.BadParameter("expected a positive number or 'auto'")
    return gamma


@click.command("kernel-hash", short_help="Fit a kernel hash (Hash-SVM's kernel bits).")
@options.input_path(name="train")
@options.output(required=True, what="Kernel hash file to write (.khm)")
# A click.Choice: an unknown kernel is a bad command line (exit 2).
@click.option("--kernel", required=True, type=click.Choice(["rbf", "chi2", "intersection", "poly", "linear"]),
              metavar="rbf|chi2|intersection|poly|linear",
              help="Kernel: rbf exp(-g|x-z|^2), chi2 exp(-g sum (x-z)^2/(x+z)) (features >= 0), intersection "
                   "sum min(x,z) (features >= 0), poly (g x.z + coef0)^degree, linear x.z.")
@click.option("--gamma", default="auto", show_default=True, callback=_gamma, metavar="G|auto",
              help="Kernel width of rbf, chi2 and poly. auto: the median heuristic, 1/median of the squared "
                   "distance (rbf), of the chi2 distance (chi2) or of |x|^2 (poly) over 2,000 seeded pairs of "
                   "training samples; the value is recorded.")
@click.option("--degree", type=options.IntRange(1, 64), default=3, show_default=True, help="poly degree.")
@click.option("--coef0", type=options.FiniteFloat(), default=1.0, show_default=True,
              help="poly constant term (not negative: the kernel must stay positive semi-definite).")
@click.option("--landmarks", type=options.IntRange(min=1), required=True,
              help="m: dimension of the kernel subspace, landmarks drawn from the training samples (at most as "
                   "many as there are).")
@click.option("--bits", type=options.INT, required=True, callback=options.code_bits,
              help="k: code length, a multiple of 64 (Hash-SVM uses thousands: 16,384 bits = 2,048 bytes).")
@click.option("--projection", type=click.Choice(["gaussian", "circulant"]), default="gaussian", show_default=True,
              help="How the m subspace coordinates become k bits: a dense k x m Gaussian matrix, or blocks of "
                   "circ(r) diag(s) applied by FFT (O(m log m) per m bits; far faster for thousands of bits).")
@click.option("--tol", type=options.FiniteFloat(0, 1, min_open=True, max_open=True), default=None,
              help="Relative residual below which a landmark candidate is discarded (default 1e-6).")
@options.seed
@options.zero_based
@options.quiet
@options.outputs_apart((("output", "-o"),), ("train",), binary=("output",))
def command(train, output, kernel, gamma, degree, coef0, landmarks, bits, projection, tol, seed, zero_based, quiet):
    """Fit a kernel hash on the svmlight file TRAIN ('-': stdin): landmarks, the
    orthonormal basis of their span in the kernel's feature space, and the seed
    of the sign projections that turn a sample into bits."""
    ctx = click.get_current_context()
    given = lambda name: ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE  # noqa: E731
    # Options of another kernel: accepted (a recipe may pass them for every
    # kernel) and said, one rule for the three (--gamma had been refused).
    for name, users in KERNEL_PARAMETERS.items():
        if given(name) and kernel not in users and not (name == "gamma" and gamma == "auto") and not quiet:
            which = "the %s kernel" % users[0] if len(users) == 1 else \
                "the %s and %s kernels" % (", ".join(users[:-1]), users[-1])
            click.echo("hsvm: kernel-hash: --%s is for %s; the %s kernel ignores it" % (name, which, kernel), err=True)
    if kernel in ("linear", "intersection"):
        gamma = "auto"          # theirs, whatever was given
    # a usage error before any data is read: a poly kernel that is not
    # positive semi-definite (the subspace of the landmarks' feature space needs one)
    if kernel == "poly" and coef0 < 0:
        raise OptionError("--coef0 %g: (g x.z + coef0)^degree with coef0 < 0 is not positive semi-definite, "
                          "which a kernel hash needs (coef0 >= 0)" % coef0)
    h = fit_kernel_hash_file(train, kernel=kernel, gamma=gamma,
                             degree=degree, coef0=coef0, landmarks=landmarks, bits=bits, seed=seed, tol=tol,
                             zero_based=zero_based, projection=projection)
    save_kernel_hash(h, output)
    if not quiet:
        gamma_text = "" if h.gamma is None else ", gamma %.6g (%s)" % (h.gamma, h.info.get("gamma_rule"))
        options.log("hsvm: %s kernel%s, %d landmarks kept of %d asked, %d bits%s -> %s"
                   % (h.kernel, gamma_text, h.n_landmarks, landmarks, h.bits,
                      " (circulant projection)" if projection == "circulant" else "", output))
    if 2 * h.n_landmarks < landmarks:
        # with -q too, as train-ovo's convergence warning: a recipe that runs
        # quietly would otherwise ship codes that say next to nothing
        click.echo("hsvm: kernel-hash: warning: only %d of the %d landmarks span independent directions of "
                   "the kernel's feature space (the data or the kernel is nearly degenerate): the codes carry "
                   "that much information at most" % (h.n_landmarks, landmarks), err=True)
