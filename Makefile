# hsvm developer and experiment recipes.  Every target creates .venv when it is
# missing and installs the package (compiling native/ through cffi) first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.hsvm-installed
BENCH_STAMP := $(VENV)/.hsvm-bench-installed
NATIVE := $(wildcard native/*.c native/*.h native/*.py)

.PHONY: all help install native bytecode test test-slurm demo demo-hashsvm bench fuzz clean

all: install

help:
	@echo "make demo          set up .venv and run the main job on data/ (exact vs hashed accuracy and time)"
	@echo "make test          set up and run the tests (make test-slurm: the Slurm job arrays)"
	@echo "make demo-hashsvm  Hash-SVM on the bundled digits set"
	@echo "make bench         the benchmarks (BENCHMARKS.md); make fuzz: fuzz the svmlight reader"
	@echo "make install       .venv with hsvm installed (editable); make native: rebuild the C library"
	@echo "make clean         remove build outputs and demo-out (the next target rebuilds the C library)"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel

# A "compat" editable install puts the checkout on sys.path with a plain .pth
# line, as an installed wheel's import costs nothing; the default one adds an
# import hook that loads pathlib and more at every start (13 ms of the 0.4 s a
# hashed predict takes in all).  setuptools calls the mode transitional (the
# warning is silenced): when a release drops it, the default install is used.
$(STAMP): $(PY) pyproject.toml setup.py $(NATIVE)
	PYTHONWARNINGS=ignore $(PIP) install -q -e '.[test,dask,plot]' --config-settings editable_mode=compat \
		|| $(PIP) install -q -e '.[test,dask,plot]'
	@touch $@

install: $(STAMP)

# Byte-compiled modules, written here because an environment may forbid
# writing them at run time (PYTHONDONTWRITEBYTECODE): every command would
# then compile hsvm_cli from source again, ~0.06 s of each whole process.
bytecode: $(STAMP)
	@$(PY) -m compileall -q hsvm_cli

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
demo: bytecode
	@bash bench/demo.sh $(PY)

# Hash-SVM on the bundled digits set: kernel hash, codes, training on the
# packed bits, prediction from raw samples; accuracy beside the linear model's.
demo-hashsvm: $(STAMP)
	@mkdir -p demo-out
	$(VENV)/bin/hsvm kernel-hash data/digits/train.svm.gz --kernel rbf --landmarks 512 --bits 4096 --seed 0 \
		-o demo-out/digits.khm
	$(VENV)/bin/hsvm hash-data -H demo-out/digits.khm data/digits/train.svm.gz -o demo-out/digits-train.codes
	$(VENV)/bin/hsvm train-ovo --codes demo-out/digits-train.codes -c 1 -j 2 -o demo-out/digits-rbf.hsvm
	$(VENV)/bin/hsvm train-ovo data/digits/train.svm.gz -c 1 -j 2 -q -o demo-out/digits-linear.hsvm
	@echo "== linear one-vs-one"
	@$(VENV)/bin/hsvm predict -m demo-out/digits-linear.hsvm data/digits/test.svm.gz -o /dev/null
	@echo "== Hash-SVM (rbf, 512 landmarks, 4096 bits)"
	@$(VENV)/bin/hsvm predict -m demo-out/digits-rbf.hsvm --kernel-hash demo-out/digits.khm \
		data/digits/test.svm.gz -o /dev/null --timings

bench: $(BENCH_STAMP) bytecode
	$(PY) bench/run_all.py

# The install stamps go with the library they stand for: a clean tree whose
# stamp said "installed" had no C library, and every command failed to import it.
clean:
	rm -rf build dist *.egg-info hsvm_cli/_native*.so hsvm_cli/_native.c demo-out bench/out $(STAMP) $(BENCH_STAMP)
