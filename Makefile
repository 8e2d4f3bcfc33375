# hsvm developer and experiment recipes.  Every target creates .venv when it is
# missing and installs the package (compiling native/ through cffi) first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.hsvm-installed
BENCH_STAMP := $(VENV)/.hsvm-bench-installed
NATIVE := $(wildcard native/*.c native/*.h native/*.py)

.PHONY: all install native test test-slurm demo bench fuzz clean

all: install

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel

$(STAMP): $(PY) pyproject.toml setup.py $(NATIVE)
	$(PIP) install -q -e '.[test,dask]'
	@touch $@

install: $(STAMP)

# Rebuild only the C library in place (after editing native/).
native: $(STAMP)
	$(PY) setup.py -q build_ext --inplace

test: $(STAMP)
	$(PY) -m pytest -q tests

# Job arrays on a private single-node Slurm that the tests start themselves
# (tests/slurm/slurm.py): installs Debian's slurm-wlm and munge with apt-get
# when missing (so root), starts munged, slurmctld and slurmd on localhost,
# runs examples/slurm through sbatch --wait, stops the daemons it started.
test-slurm: $(STAMP)
	$(PY) -m pytest -q tests/slurm

$(BENCH_STAMP): $(STAMP)
	$(PIP) install -q -e '.[test,bench]'
	@touch $@

# Coverage-guided fuzzing of the svmlight reader (atheris, from PyPI) for
# FUZZ_SECONDS.  New inputs go to build/fuzz/corpus (the committed seeds in
# tests/fuzz/corpus/svmlight stay small), crashes to build/fuzz/crash-*, the
# counts to build/fuzz/stats.json.
FUZZ_SECONDS ?= 60
FUZZ_DIR := build/fuzz
fuzz: $(STAMP)
	$(PIP) install -q atheris
	@mkdir -p $(FUZZ_DIR)/corpus
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_STATS=$(FUZZ_DIR)/stats.json $(PY) tests/fuzz/fuzz_svmlight.py \
		$(FUZZ_DIR)/corpus tests/fuzz/corpus/svmlight -max_len=4096 -artifact_prefix=$(FUZZ_DIR)/ \
		-max_total_time=$$(( $(FUZZ_SECONDS) + 60 ))

# The main job on the bundled data: train, hash, filter-and-refine predict, eval.
demo: $(STAMP)
	@bash bench/demo.sh $(PY)

bench: $(BENCH_STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf build dist *.egg-info hsvm_cli/_native*.so hsvm_cli/_native.c demo-out bench/out
