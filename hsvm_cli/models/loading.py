"""Loading a model or hash model of either kind -- one-vs-one (``train-ovo``,
imported LIBSVM) or one-vs-rest (imported LIBLINEAR) -- by the kind its file
declares."""
from ..io.container import container_kind
from .hashed import load_hash_model
from .ovo import load_model
from .ovr import OVR_HBM_KIND, OVR_KIND, load_ovr_hash_model, load_ovr_model

__all__ = ["load_any_model", "load_any_hash_model"]


def load_any_model(path):
    """An :class:`~hsvm_cli.models.ovo.OvoModel` or an
    :class:`~hsvm_cli.models.ovr.OvrModel`, whichever ``path`` holds (any other
    file is refused as not an hsvm model file)."""
    if container_kind(path) == OVR_KIND:
        return load_ovr_model(path)
    return load_model(path)


def load_any_hash_model(path):
    """A :class:`~hsvm_cli.models.hashed.HashModel` or an
    :class:`~hsvm_cli.models.ovr.OvrHashModel`, whichever ``path`` holds."""
    if container_kind(path) == OVR_HBM_KIND:
        return load_ovr_hash_model(path)
    return load_hash_model(path)
