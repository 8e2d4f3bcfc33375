"""hsvm hash-data: the sign-projection codes of samples, for predict --codes or other tools."""


import click

from ..errors import ModelFormatError, OptionError
from ..io.container import container_kind, kind_hint, kind_name
from ..io.files import binary_on_terminal, display_name, output_is_terminal, regular_file_size
from ..models.circulant_hash import CHASH_KIND, load_circulant_hash
from ..models.codes import hash_data
from ..models.hashed import HBM_KIND, load_hash_model
from ..models.kernel_hash import KHM_KIND, load_kernel_hash
from ..models.provenance import trained_zero_based
from ..support.progress import StepBar
from . import options


@click.command("hash-data", short_help="Hash samples to a codes file (or to svmlight bits).")
@options.input_path(name="data")
@options.hash_model(required=True, help="Hash model (.hbm) whose projection to use, a kernel hash (.khm, from "
                                        "`hsvm kernel-hash`) whose kernel hash codes to compute, or a learned "
                                        "circulant hash (from `hsvm fit-circulant`).")
@click.option("--bits", type=options.INT, default=None, help="Code length (a multiple of 64, default: the hash model's D).")
@click.option("--format", "fmt", type=click.Choice(["codes", "svm"]), default="codes", show_default=True,
              help="codes: binary hsvm-codes file; svm: the bits as +1/-1 features in svmlight text.")
@options.output()
@options.zero_based_by_model
@options.extra_features
@options.chunk_rows
@options.shard
@options.quiet
@options.outputs_apart((("output", "-o"),), ("data", "hbm_path"))
def command(data, hbm_path, bits, fmt, output, zero_based, extra_features, chunk_rows, shard, quiet):
    """Hash the samples of DATA ('-': stdin): with a hash model, normalise them
    as its exact model does, project and take signs; with a kernel hash, their
    kernel subspace coordinates, projected and signed; with a learned
    circulant hash, normalise them as it records and take its bits."""
    loaders = {KHM_KIND: load_kernel_hash, CHASH_KIND: load_circulant_hash}
    if hbm_path == "-":
        # -H takes three kinds: the hash model loader's refusal named only its own
        raise OptionError("-H files (hash models, kernel hashes, learned circulant hashes) cannot be read from stdin "
                          "('-'): give the file's name")
    kind = container_kind(hbm_path)
    if kind is not None and kind not in loaders and kind != HBM_KIND:
        hint = kind_hint(kind)
        raise ModelFormatError(hbm_path, "an hsvm %s file%s; -H takes a one-vs-one model's hash model (.hbm), a kernel "
                                         "hash (.khm) or a learned circulant hash"
                               % (kind_name(kind), " (%s)" % hint if hint else ""))
    h = loaders.get(kind, load_hash_model)(hbm_path)
    try:
        used_bits = h.check_bits(bits)
    except (OptionError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint=["--bits"]) from None
    if fmt == "codes" and output_is_terminal(output):
        # before the work, with atomic_output's status and words
        raise binary_on_terminal(output if output == "-" else display_name(output),
                                 "use -o FILE, --format svm, or redirect")
    numbering = options.numbering_note("hash-data", zero_based,
                                       bool(getattr(h, "zero_based", False)) or trained_zero_based(h), hbm_path, data)
    if numbering is not None and not quiet:
        click.echo(numbering, err=True)
    with StepBar(options.show_progress(quiet), unit="row", desc="hash-data") as bar:
        n = hash_data(h, data, output, bits=bits, fmt=fmt, zero_based=zero_based, extra_features=extra_features,
                      chunk_rows=chunk_rows, shard=shard, progress=bar)
    if quiet:
        return
    if shard is not None:
        options.log("hsvm: hash-data: shard %s: %d samples -> %s" % (shard, n, output))
    else:
        # as hash-model's line; sizes of regular files only (-o - or a device has none)
        size = regular_file_size(output)
        options.log("hsvm: hash-data: %s x %d bits -> %s%s" % (options.counted(n, "sample"), used_bits, output,
                                                               "" if size is None else " (%.1f KiB)" % (size / 1024)))
