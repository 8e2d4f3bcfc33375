# setuptools reads everything from pyproject.toml; this file only exists because
# cffi hooks its out-of-line API-mode build in through the `cffi_modules` keyword,
# which has no pyproject.toml spelling.
from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
