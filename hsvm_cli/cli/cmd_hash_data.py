"""hsvm hash-data: the sign-projection codes of samples, for predict --codes or other tools."""
import click

from . import options
from ..codes import CodesWriter, projection_identity, write_codes_svm
from ..fileio import atomic_output
from ..hashmodel import load_hash_model
from ..hashpredict import HashFilter
from ..predict import prepare
from ..svmlight import iter_svmlight


@click.command("hash-data")
@options.input_path(name="data")
@click.option("-H", "--hash-model", "hbm_path", required=True, type=click.Path(dir_okay=False),
              help="Hash model (.hbm) whose projection to use.")
@click.option("--bits", type=int, default=None, help="Code length (a multiple of 64, default: the hash model's D).")
@click.option("--format", "fmt", type=click.Choice(["codes", "svm"]), default="codes", show_default=True,
              help="codes: binary hsvm-codes file; svm: the bits as +1/-1 features in svmlight text.")
@options.output
@options.zero_based
@options.extra_features
@options.chunk_rows
@options.quiet
def command(data, hbm_path, bits, fmt, output, zero_based, extra_features, chunk_rows, quiet):
    """L2-normalise, project and take signs of the samples of DATA ('-': stdin)."""
    h = load_hash_model(hbm_path)
    try:
        hf = HashFilter(h, bits=bits)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bits") from None
    chunks = iter_svmlight(data, zero_based=zero_based, n_features=h.n_features,
                           extra_features=extra_features, chunk_rows=chunk_rows)

    if fmt == "svm":
        with atomic_output(output, "wb") as fh:
            for chunk in chunks:
                write_codes_svm(fh, hf.hash_samples(prepare(h.normalize, chunk.X)), chunk.y, hf.bits)
        return
    if output == "-" and not quiet and click.get_binary_stream("stdout").isatty():
        raise click.UsageError("refusing to write binary codes to a terminal; use -o FILE or --format svm")
    meta = projection_identity(h, hf.bits)
    meta["hash_model_sha256"] = h.model_sha256
    writer = CodesWriter(output, words=hf.words, meta=meta)
    try:
        for chunk in chunks:
            writer.write(hf.hash_samples(prepare(h.normalize, chunk.X)), chunk.y)
    except BaseException:
        writer.abort()
        raise
    writer.close()
