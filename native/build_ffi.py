"""cffi out-of-line API-mode build of hsvm's C library (module ``hsvm_cli._native``).

Every public header ``native/hsvm_*.h`` is both #included by the generated
wrapper and fed to ``cdef`` (after dropping preprocessor lines, which cdef does
not understand), so a new C component only has to add its ``.c`` and its header.

The library is compiled for baseline x86-64 plus POPCNT (``-mpopcnt``: without it
gcc lowers ``__builtin_popcountll`` to a slow libgcc call).  The AVX2 and
AVX-512 kernels enable their instruction sets per function with
``__attribute__((target(...)))`` and are only called after a run-time CPU check,
so the built library still runs on any x86-64 CPU with POPCNT.
"""
import glob
import os
import platform

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))


def _public_headers():
    return sorted(glob.glob(os.path.join(HERE, "hsvm_*.h")))


def _cdef_text(path):
    lines = []
    with open(path) as fh:
        for line in fh:
            if line.lstrip().startswith("#"):
                continue
            lines.append(line)
    return "".join(lines)


def _compile_args():
    # -ffp-contract=off: no fused multiply-add where the source says multiply,
    # then add, so float results do not depend on the instruction set.
    # -g0 after Python's own -g: debug information was four fifths of the
    # installed library (3.0 MB against 0.6); it changes no instruction.
    args = ["-O3", "-std=gnu11", "-fno-strict-aliasing", "-ffp-contract=off", "-Wall", "-g0"]
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        args.append("-mpopcnt")
    return args


ffibuilder = FFI()
for header in _public_headers():
    ffibuilder.cdef(_cdef_text(header))

ffibuilder.set_source(
    "hsvm_cli._native",
    "".join('#include "%s"\n' % os.path.basename(h) for h in _public_headers()),
    sources=[os.path.relpath(p, os.path.dirname(HERE)) for p in sorted(glob.glob(os.path.join(HERE, "*.c")))],
    include_dirs=[os.path.relpath(HERE, os.path.dirname(HERE))],
    # every header, private ones too: an edit to cvpath_dcd.h alone left
    # `setup.py build_ext --inplace` calling the extension up to date
    depends=[os.path.relpath(p, os.path.dirname(HERE)) for p in sorted(glob.glob(os.path.join(HERE, "*.h")))],
    extra_compile_args=_compile_args(),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
