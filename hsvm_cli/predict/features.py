"""The features of a model trained on codes (Hash-SVM: ``train-ovo --codes``):
each sample's code bits as +-1/sqrt(bits), made on the fly from raw samples
with the kernel hash that made the training codes, or read from a codes file.

Features are made a sub-block at a time (a 16,384-bit row is 64 KiB in
float32), so a chunk of raw samples never becomes one huge dense matrix."""
import numpy as np

from ..errors import ModelMismatchError

#: Feature values per sub-block (float32): 64 MiB.
BLOCK_VALUES = 1 << 24


def block_rows(bits):
    """Rows of features made at once for a model of ``bits`` features."""
    return max(64, BLOCK_VALUES // max(1, int(bits)))


def check_model_codes(model, *, kernel_hash=None, codes=None, model_name="the model"):
    """Refuse a kernel hash or a codes file other than the one whose codes
    ``model`` was trained on (content digests), and a kernel hash for a model
    of svmlight features."""
    source = model.codes_source
    if source is None and model.trained_on_codes:
        raise ModelMismatchError("%s was trained on codes with no record of the kernel hash that made them: "
                                 "train_ovo_codes(codes, y, kernel_hash=h) records it" % model_name)
    if source is None:
        what = "a kernel hash does" if kernel_hash is not None else "kernel hash codes do"
        raise ModelMismatchError("%s was trained on svmlight features, not on codes: %s not apply"
                                 % (model_name, what))
    want = source.get("kernel_hash_sha256")
    if kernel_hash is not None and kernel_hash.content_sha256() != want:
        raise ModelMismatchError("%s is not the kernel hash %s was trained with (%s..., the model's codes came "
                                 "from %s)" % (kernel_hash.path or "the kernel hash", model_name,
                                               kernel_hash.content_sha256()[:12], short_digest(want)))
    if codes is not None:
        got = codes.kernel_hash_sha256
        if got is None or got != want:
            made_by = "kernel hash %s" % short_digest(got) if got else \
                "a learned circulant hash" if codes.meta.get("circulant_hash_sha256") else "a hash model"
            raise ModelMismatchError("%s: codes of %s, but %s was trained on codes of kernel hash %s"
                                     % (codes.path, made_by, model_name, short_digest(want)))
        if codes.bits < model.n_features:
            raise ModelMismatchError("%s: codes have %d bits, the model was trained on %d"
                                     % (codes.path, codes.bits, model.n_features))


def short_digest(digest):
    """A digest as messages show it: its first 12 hex digits."""
    return "%s..." % digest[:12] if digest else "(none recorded)"


class KernelHashFeatures:
    """Raw samples -> the +-1/sqrt(bits) features of their kernel hash codes."""

    def __init__(self, kernel_hash, bits):
        self.kernel_hash = kernel_hash
        self.bits = kernel_hash.check_bits(int(bits))

    @property
    def n_input_features(self):
        return self.kernel_hash.n_features

    def __call__(self, X):
        from ..train.bits_solver import expand_codes  # not at import: it loads LIBLINEAR
        return expand_codes(self.kernel_hash.codes(X, self.bits), self.bits)


class PackedCodeFeatures:
    """Packed codes (rows of a codes file) -> their +-1/sqrt(bits) features."""

    def __init__(self, bits):
        self.bits = int(bits)

    def __call__(self, codes):
        from ..train.bits_solver import expand_codes
        return expand_codes(np.ascontiguousarray(codes[:, :self.bits // 64]), self.bits)
