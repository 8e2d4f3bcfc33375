# setuptools reads everything from pyproject.toml; this file only exists because
# cffi hooks its out-of-line API-mode build in through the `cffi_modules` keyword,
# which has no pyproject.toml spelling.
import setuptools
from setuptools import setup

# Without build isolation (pip install --no-build-isolation) the environment's
# own setuptools and cffi build the package: an old setuptools failed on
# pyproject's `license` in words that did not say so, and without cffi the
# `cffi_modules` keyword was ignored with a warning, giving a wheel without the
# C library that installed and failed at the first command.
if int(setuptools.__version__.split(".")[0]) < 77:
    raise SystemExit("hsvm's build needs setuptools >= 77 (this environment has %s): pip install -U 'setuptools>=77', "
                     "or build with pip's default build isolation" % setuptools.__version__)
try:
    import cffi  # noqa: F401
except ImportError:
    raise SystemExit("hsvm's C library is built with cffi, which this environment lacks: pip install 'cffi>=1.16', "
                     "or build with pip's default build isolation") from None

# The module is built against the stable ABI (cffi names it _native.abi3.so):
# one wheel then serves every CPython from 3.9 on, where it had been tagged
# for the building interpreter alone.
setup(cffi_modules=["native/build_ffi.py:ffibuilder"], options={"bdist_wheel": {"py_limited_api": "cp39"}})
