"""Tests run in float64 (the library never sets this itself); float32 tests cast explicitly.

Speed (nearly all of the suite's time is XLA compilation of programs that then run once or a few
times; none of this changes what a test computes or checks):

* ``KRONJAX_TEST_XLA_OPT=0`` sets XLA's backend (LLVM) optimisation level 0 for every compilation
  (about a quarter off the compile time of compile-bound files). ``make test`` sets it (the fast
  tier: 475 s instead of 569 s on 2 cores); ``make test-slow`` does not: the code it emits ran
  2-3x slower (rnea at batch 10^4), which the run-bound tests of the slow tier (notebooks, soak,
  long simulations) would pay back and more.
* JAX's persistent compilation cache in a temporary directory for the duration of one run, shared
  by the pytest-xdist workers: an identical program compiled by another test (or worker) is
  loaded instead of compiled again. ``KRONJAX_TEST_JAX_CACHE=off`` turns it off.
"""

import os
import shutil
import tempfile

if os.environ.get("KRONJAX_TEST_XLA_OPT") == "0" and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

_CACHE_ENV = "KRONJAX_TEST_JAX_CACHE"
_OWNED_CACHE = None


def pytest_configure(config):
    """The controller (or a plain run) makes the cache directory; xdist workers inherit its path
    through the environment."""
    global _OWNED_CACHE
    if os.environ.get(_CACHE_ENV) == "off":
        return
    if not os.environ.get(_CACHE_ENV):
        _OWNED_CACHE = tempfile.mkdtemp(prefix="kronjax-jax-cache-")
        os.environ[_CACHE_ENV] = _OWNED_CACHE
    jax.config.update("jax_compilation_cache_dir", os.environ[_CACHE_ENV])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


# The slowest files first (CPU seconds measured on this suite), so that pytest-xdist (which the
# Makefile runs with --dist loadfile --no-loadscope-reorder: a file per worker, in this order) does
# not start a long file last while the other workers idle; the rest keep their order.
SLOW_FIRST = (
    "test_notebooks.py",  # the slow tier's longest
    "test_fuzz_urdf.py",  # slow tier: 2000 mutated files
    "test_soak.py",  # slow tier
    "test_dynamics_principles.py",
    "test_dynamics_derivatives.py",
    "test_identify.py",
    "test_constrained.py",
    "test_urdf_pinocchio.py",
    "test_simulate.py",
    "test_constrained_mechanisms.py",
    "test_trajopt.py",
    "test_composite.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_unconfigure(config):
    if _OWNED_CACHE is not None:
        shutil.rmtree(_OWNED_CACHE, ignore_errors=True)
