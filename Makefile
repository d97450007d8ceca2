# Two commands on a fresh machine with Python 3.11+ and make: `make demo`, `make test`.
# `make bench`: the benchmark suite against Pinocchio, adam, jaxsim, MJX and frax (bench/, results in bench/results/).
# `make docs`: the documentation site (mkdocs.yml, docs/) into site/, with `mkdocs build --strict`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo lint test test-fast test-slow test-extended bench bench-gpu docs clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

$(VENV)/.installed-docs: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $@

# The bench extra holds the peers; if it cannot install in full, its parts are tried one by one
# and the benchmark skips (with a note) any peer that is missing.
$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[bench]" || { \
	  echo "make bench: the bench extra did not install in full; trying its parts one by one"; \
	  $(PY) -m pip install --quiet pin matplotlib example-robot-data; \
	  for peer in adam-robotics jaxsim mujoco mujoco-mjx frax; do \
	    $(PY) -m pip install --quiet $$peer || echo "make bench: $$peer did not install; the benchmark skips it"; \
	  done; }
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/kronjax demo

# Tests in parallel (pytest-xdist), a test file per worker so that its module-level compiled
# functions and fixtures are built once, slowest files first (tests/conftest.py); at most 4
# workers (each holds 1-4 GB). `make test`: every test marked neither slow nor extended; `make
# test-slow`: the slow tier (the notebooks, the docs build, the wheel in a clean environment, the
# benchmark's smoke run, the oracle runs on the larger models); CI runs both. `make test-fast`: the
# tests marked neither slow nor heavy, for iteration; `make test-extended`: the extended tier
# (the tests marked extended), not in CI.
PYTEST := $(PY) -m pytest -q -n logical --maxprocesses 4 --dist loadfile --no-loadscope-reorder --durations=25

# Nearly all of the suite's time is XLA compilation of programs that run once or a few times: both
# tiers compile at XLA's backend optimisation level 0 with tests/conftest.py's compile-time flags.
# Everything in one run took 11 min 1 s on 2 cores (957 tests, c5a630f), over the 10 minutes `make test` must keep.
test: $(VENV)/.installed-test
	KRONJAX_TEST_XLA_OPT=0 $(PYTEST) -m "not slow and not extended"

# The slow tier includes tests/test_docs.py, which builds the site: the docs extra as well.
test-slow: $(VENV)/.installed-test $(VENV)/.installed-docs
	KRONJAX_TEST_XLA_OPT=0 $(PYTEST) -m "slow and not extended"

# For iteration: the tests marked neither slow nor extended, without the heaviest files
# (the files marked heavy), under 2 minutes.
test-fast: $(VENV)/.installed-test
	KRONJAX_TEST_XLA_OPT=0 $(PYTEST) -m "not slow and not extended and not heavy"

# Not in CI (its 30 minutes): second instances of checks CI runs elsewhere, and the soak run.
test-extended: $(VENV)/.installed-test
	$(PYTEST) -m extended

bench: $(VENV)/.installed-bench
	$(PY) -m bench

bench-gpu: $(VENV)/.installed-bench
	$(PY) -m bench.gpu

# ruff (configured in pyproject.toml): lint, and the formatting checked (`ruff format .` applies it).
lint: $(VENV)/.installed-docs
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The site: API reference from the docstrings (mkdocstrings), the notebooks with their committed
# outputs (nothing is executed), the benchmark results as committed. A warning fails the build.
# NO_MKDOCS_2_WARNING: mkdocs-material's banner about MkDocs 2.0, not a warning of this build.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site
