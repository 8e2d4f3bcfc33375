"""What an hsvm file holds (``hsvm info``): its kind and version, its arrays
and its metadata (training parameters, the cross-validation table,
provenance, seeds, digests), after the validation every command that reads
the file applies -- and, with ``verify``, every block of every array
checked, a model's W included (which prediction checks only as it reads
it)."""
import json
from dataclasses import dataclass

from ..errors import ModelFormatError, OptionError, printable
from ..io.container import compressed_kind, container_kind, read_container, svmlight_said
from ..io.files import display_name, open_raw, read_raw

__all__ = ["FileInfo", "describe"]

# kind -> (module, loader): the reader every command uses, whose checks a
# described file passes first
_LOADERS = {
    "hsvm-model": ("ovo", "load_model"),
    "hsvm-hash-model": ("hashed", "load_hash_model"),
    "hsvm-calibration": ("calibration", "load_calibration"),
    "hsvm-codes": ("codes", "read_codes"),
    "hsvm-model-part": ("parts", "read_part"),
    "hsvm-kernel-hash": ("kernel_hash", "load_kernel_hash"),
    "hsvm-circulant-hash": ("circulant_hash", "load_circulant_hash"),
    "hsvm-ovr-model": ("ovr", "load_ovr_model"),
    "hsvm-ovr-hash-model": ("ovr", "load_ovr_hash_model"),
}

# Kinds whose loader leaves W's blocks to be checked as they are read.
_LAZY_W = {"hsvm-model", "hsvm-model-part", "hsvm-ovr-model"}

# Shown in full by text(); longer lists are counted (json() has them all).
_LIST_ITEMS = 12
_CLASSES_SHOWN = 20
_STRING_CHARS = 200


class _Any:
    """Contains everything: the file was read once by its own loader, with
    its versions and checks; the second read only maps it."""

    def __contains__(self, item):
        return True


@dataclass
class FileInfo:
    """``path``, ``format`` (its kind), ``version``, ``bytes``,
    ``checksummed`` (block checksums present), ``verified`` (every block
    checked), ``arrays`` (name -> dtype, shape, bytes), ``classes`` (the
    labels, when the file holds them) and ``meta`` (the metadata as stored)."""

    path: str
    format: str
    version: int
    bytes: int
    checksummed: bool
    verified: bool
    arrays: dict
    classes: list
    meta: dict

    def as_dict(self):
        """The description as a JSON-ready dict (what ``hsvm info --json`` prints)."""
        return {"file": self.path, "format": self.format, "version": self.version, "bytes": self.bytes,
                "checksummed": self.checksummed, "verified": self.verified, "arrays": self.arrays,
                "classes": self.classes, "meta": self.meta}

    def json(self):
        """One line of JSON: :meth:`as_dict`."""
        return json.dumps(self.as_dict(), sort_keys=False)

    def text(self):
        """The description as ``hsvm info`` prints it."""
        checks = ("no block checksums (an early file)" if not self.checksummed else
                  "every block verified" if self.verified else
                  "every block verified but W's (--verify reads them)")
        # the name as error messages show it: control and undecodable bytes escaped, one line
        lines = ["%s: %s version %d, %s bytes, %s" % (printable(str(self.path)), self.format, self.version,
                                                      format(self.bytes, ","), checks)]
        if self.classes is not None:
            shown = " ".join(str(c) for c in self.classes[:_CLASSES_SHOWN])
            more = " ..." if len(self.classes) > _CLASSES_SHOWN else ""
            lines.append("  classes (%d): %s%s" % (len(self.classes), shown, more))
        lines.append("  arrays: " + "; ".join("%s %s [%s]" % (name, a["dtype"], ", ".join(map(str, a["shape"])))
                                              for name, a in self.arrays.items()))
        unused = _unused_parameters(self.format, self.meta)
        lines.extend("  %s: %s%s" % (key, value, " (unused by the %s kernel)" % self.meta.get("kernel")
                                     if key in unused else "") for key, value in _flat(self.meta))
        return "\n".join(lines) + "\n"


def _unused_parameters(kind, meta):
    """A kernel hash's stored parameters its kernel ignores (an rbf hash
    stores poly's degree and coef0 too)."""
    if kind != "hsvm-kernel-hash":
        return ()
    from ..hashing.krsh import KERNEL_PARAMETERS
    return tuple(name for name, users in KERNEL_PARAMETERS.items() if meta.get("kernel") not in users)


def _flat(meta, prefix=""):
    for key, value in meta.items():
        name = prefix + str(key)
        if isinstance(value, dict) and value:
            yield from _flat(value, name + ".")
        elif isinstance(value, list) and (len(value) > _LIST_ITEMS or any(isinstance(v, (dict, list))
                                                                          for v in value)):
            yield name, "[%d items] (--json shows them)" % len(value)
        elif isinstance(value, str) and len(value) > _STRING_CHARS:
            # a command line of thousands of files: lists are counted, so are these
            yield name, "%s... [%d characters] (--json shows them)" % (_shown(value[:_STRING_CHARS])[:-1],
                                                                      len(value))
        else:
            yield name, _shown(value)


def _shown(value):
    # A value as JSON, its letters as they are ("données.svm", where JSON's
    # ASCII escapes gave "donn\u00e9es.svm") and only what is not printable
    # escaped, as error messages show names.
    return printable(json.dumps(value, ensure_ascii=False))


def _not_a_container(name):
    with open_raw(name) as fh:
        head = read_raw(fh, 4096, name)
    from ..io.tool_models import foreign_model_said
    foreign = foreign_model_said(name, head)
    if foreign is not None:
        return foreign
    head = head[:16]
    if head[8:9] == b"{":
        return _damaged_header(name, int.from_bytes(head[:8], "little"))
    data = svmlight_said(name, head, "not an hsvm file")
    if data:
        return data
    if compressed_kind(head):
        return ("not an hsvm file but %s-compressed data: hsvm's binary files are never compressed (decompress it "
                "first)" % compressed_kind(head))
    return "not an hsvm file (no container header)"


def _damaged_header(name, length):
    # what is wrong with a header that starts as safetensors' do
    import os
    size = os.path.getsize(name)
    if 8 + length > size:
        return "a damaged hsvm file: its header length (%d bytes) runs past the end of the file (%d bytes)" \
            % (length, size)
    with open_raw(name) as fh:
        text = read_raw(fh, 8 + length, name)[8:]
    try:
        header = json.loads(text)
    except ValueError:
        return "a damaged hsvm file: its header is not valid JSON"
    if not isinstance(header, dict) or "format" not in (header.get("__metadata__") or {}):
        return "not an hsvm file: a safetensors-style header without hsvm's metadata (__metadata__.format)"
    return "a damaged hsvm file: its header is not one hsvm reads"


def _verify_class_summaries(name, model):
    """A model's stored class_W / class_b against the ones its W and b give
    (docs/formats.md: derived, with the same bits on every machine): the
    block digests vouch for each array alone, not for their agreement."""
    import numpy as np

    from ..support.memory import check_allocation
    from .class_weights import compute_class_weights
    # the sums in float64 and their float32 rounding
    check_allocation(12 * model.n_classes * model.n_features, "checking the class summaries of %d classes x %d "
                     "features" % (model.n_classes, model.n_features))
    U, beta = compute_class_weights(model)
    for key, stored, real in (("class_W", model.class_W, U), ("class_b", model.class_b, beta)):
        stored = np.asarray(stored, dtype=np.float32)
        if stored.shape != real.shape or not np.array_equal(stored.view(np.uint32), real.view(np.uint32)):
            raise ModelFormatError(name, "%s does not match the class summaries W and b give (it is derived from "
                                   "them: docs/formats.md); the file was altered after writing" % key)


def describe(path, *, verify=False):
    """A :class:`FileInfo` of the hsvm file ``path`` (any kind).  The file is
    first read by its own loader, so a file that a command would refuse is
    refused here too (:class:`~hsvm_cli.errors.ModelFormatError`);
    ``verify``: also check every block of every array."""
    name = display_name(path)
    if name == "<stdin>":
        raise OptionError("hsvm files cannot be read from stdin ('-'): they are memory-mapped; give the file's "
                          "name")
    kind = container_kind(path)
    if kind is None:
        raise ModelFormatError(name, _not_a_container(name))
    if kind not in _LOADERS:
        raise ModelFormatError(name, "format %r is unknown to this hsvm" % kind)
    import importlib
    module, loader = _LOADERS[kind]
    loaded = getattr(importlib.import_module("." + module, __package__), loader)(path)
    c = read_container(path, kind=kind, versions=_Any(), lazy=_Any())
    meta = c.meta
    if verify:
        for key in c.arrays:
            c.verify(key)
        for key in c.row_digests:
            c.verify_row_digests(key)
        if kind == "hsvm-model" and loaded.class_W is not None:
            _verify_class_summaries(name, loaded)
    identity = getattr(loaded, "content_sha256", None)
    if callable(identity) and "content_sha256" in meta:
        # A model's identity is recomputed from its block digests, never
        # taken from the header (docs/formats.md): show that one, and have
        # --verify refuse a header that records another.
        real = identity()
        if verify and meta["content_sha256"] != real:
            raise ModelFormatError(name, "content digest mismatch: the header records %s, the arrays give %s"
                                   % (printable(str(meta["content_sha256"])), real))
        meta = dict(meta, content_sha256=real)
    arrays = {key: {"dtype": str(a.dtype), "shape": list(a.shape), "bytes": int(a.nbytes)}
              for key, a in c.arrays.items()}
    classes = [int(v) for v in c.arrays["classes"]] if "classes" in c.arrays else None
    return FileInfo(path=name, format=kind, version=c.version, bytes=c.size, checksummed=c.checksummed,
                    verified=bool(c.checksummed and (verify or kind not in _LAZY_W)), arrays=arrays,
                    classes=classes, meta=meta)
