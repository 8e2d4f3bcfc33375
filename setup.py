# setuptools reads everything from pyproject.toml; this file only exists because
# cffi hooks its out-of-line API-mode build in through the `cffi_modules` keyword,
# which has no pyproject.toml spelling.
from setuptools import setup

# The module is built against the stable ABI (cffi names it _native.abi3.so):
# one wheel then serves every CPython from 3.9 on, where it had been tagged
# for the building interpreter alone.
setup(cffi_modules=["native/build_ffi.py:ffibuilder"], options={"bdist_wheel": {"py_limited_api": "cp39"}})
