"""Which native code path runs: the kernels this CPU has, and the choice a
caller or the ``HSVM_KERNEL`` environment variable makes (one C resolver,
native/cpu.c, for every dispatching kernel).

Kernels: ``avx512`` (AVX-512 with VPOPCNTDQ), ``avx2``, ``portable`` (plain
C).  By default the best one the CPU supports runs; ``HSVM_KERNEL`` or a
``kernel=`` argument (which takes precedence) forces one.  All give
bit-identical results."""
import os

from ..errors import EX_USAGE, HsvmError, OptionError
from .native import lib

#: Every kernel name, slowest first.
KERNELS = ("portable", "avx2", "avx512")
_IDS = {
    "auto": lib.HSVM_KERNEL_AUTO,
    "portable": lib.HSVM_KERNEL_PORTABLE,
    "avx2": lib.HSVM_KERNEL_AVX2,
    "avx512": lib.HSVM_KERNEL_AVX512,
}
_NAMES = {v: k for k, v in _IDS.items()}


class KernelUnavailableError(HsvmError, ValueError):
    """A kernel was forced (``kernel=`` or HSVM_KERNEL) that this CPU cannot run,
    or HSVM_KERNEL names no kernel."""

    exit_code = EX_USAGE


def available_kernels():
    """Names of the kernels this CPU can run, slowest first (``portable`` always)."""
    mask = lib.hsvm_kernels_available()
    return tuple(name for name in KERNELS if mask & (1 << _IDS[name]))


def kernel_id(kernel):
    """Resolve ``kernel=`` (None/'auto' defers to HSVM_KERNEL, then the best
    available) to the id of the kernel that will run."""
    if kernel is None:
        kernel = "auto"
    if isinstance(kernel, str):
        kernel = kernel.lower()         # as HSVM_KERNEL: case does not matter
    if not isinstance(kernel, str) or kernel not in _IDS:
        raise OptionError("kernel must be one of %s or None, got %r"
                          % (", ".join(("auto",) + KERNELS), kernel))
    kid = lib.hsvm_resolve_kernel(_IDS[kernel])
    if kid >= 0:
        return kid
    raise kernel_error(kid, kernel)


def kernel_error(code, kernel="auto"):
    """The exception for a negative code of the C resolver."""
    env = os.environ.get("HSVM_KERNEL", "")
    source = "kernel=%r" % kernel if kernel not in (None, "auto") else "HSVM_KERNEL=%r" % env
    if code == lib.HSVM_CPU_EBADNAME:
        return KernelUnavailableError("%s is not a kernel (choose from %s)"
                                      % (source, ", ".join(("auto",) + KERNELS)))
    if code == lib.HSVM_CPU_EUNAVAILABLE:
        return KernelUnavailableError("%s: this CPU lacks the instructions it needs "
                                      "(available here: %s)" % (source, ", ".join(available_kernels())))
    return RuntimeError("kernel resolution failed with code %d" % code)


def selected_kernel(kernel=None):
    """Name of the kernel a call with this ``kernel=`` argument would run."""
    return _NAMES[kernel_id(kernel)]
