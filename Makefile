# hsvm developer and experiment recipes.  Every target creates .venv when it is
# missing and installs the package (compiling native/ through cffi) first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.hsvm-installed
BENCH_STAMP := $(VENV)/.hsvm-bench-installed
NATIVE := $(wildcard native/*.c native/*.h native/*.py)

.PHONY: all install native test demo bench clean

all: install

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel

$(STAMP): $(PY) pyproject.toml setup.py $(NATIVE)
	$(PIP) install -q -e '.[test]'
	@touch $@

install: $(STAMP)

# Rebuild only the C library in place (after editing native/).
native: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

test: $(STAMP)
	$(PY) -m pytest -q tests

$(BENCH_STAMP): $(STAMP)
	$(PIP) install -q -e '.[test,bench]'
	@touch $@

# The main job on the bundled data: train, hash, filter-and-refine predict, eval.
demo: $(STAMP)
	@bash bench/demo.sh $(PY)

bench: $(BENCH_STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf build dist *.egg-info hsvm_cli/_native*.so hsvm_cli/_native.c demo-out bench/out
