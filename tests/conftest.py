"""Test configuration: float64 (the library never sets it), XLA flags for a compile-bound suite,
JAX's persistent compilation cache for one run, runtime type checks, and the order of the files.
Why each, with the measurements behind them: docs/details/tests.md.

* XLA:CPU's fusion emitters are off in every run (``--xla_cpu_use_fusion_emitters=false``).
* ``KRONJAX_TEST_XLA_OPT=0`` (``make test``, ``make test-slow``, ``make test-fast``) sets XLA's
  backend optimisation level 0 for every compilation, with LLVM's expensive passes off, one LLVM
  module per program and Eigen's single-threaded matrix products.
* JAX's persistent compilation cache lives in a temporary directory for the duration of one run,
  shared by the pytest-xdist workers and the subprocesses that tests start;
  ``KRONJAX_TEST_JAX_CACHE=off`` turns it off.
* kronjax's jaxtyping annotations are checked at run time with jaxtyping's import hook and beartype,
  as equinox and diffrax do (``KRONJAX_TEST_TYPECHECK=off`` turns it off; the fixture
  ``without_shape_checks`` within one test, for the tests of kronjax's own messages about bad
  input). The subprocesses that tests start run without them.
* Tiers are marks on the tests: ``slow`` (``make test-slow``), ``extended`` (``make
  test-extended``, not in CI), ``heavy`` (left out of ``make test-fast``).
"""

import gc
import os
import shutil
import subprocess
import sys
import tempfile

_FLAGS = ["--xla_cpu_use_fusion_emitters=false"]
if os.environ.get("KRONJAX_TEST_XLA_OPT") == "0":
    _FLAGS += [
        "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true",
        "--xla_cpu_parallel_codegen_split_count=1",
        "--xla_cpu_multi_thread_eigen=false",
    ]


def _known_to_xla(flags: list[str]) -> list[str]:
    """The flags this jaxlib's XLA accepts: an unknown flag in XLA_FLAGS aborts every process that
    starts XLA, and jax is not pinned. One probe process (about a second), one per flag if it fails."""

    def accepted(candidates):
        env = dict(os.environ, XLA_FLAGS=" ".join(candidates))
        probe = [sys.executable, "-c", "import jax; jax.devices()"]
        return subprocess.run(probe, env=env, capture_output=True).returncode == 0

    if not flags or accepted(flags):
        return flags
    return [flag for flag in flags if accepted([flag])]


# a flag the caller's XLA_FLAGS set already is left as set; xdist workers inherit the controller's
_NEW = [flag for flag in _FLAGS if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", "")]
if _NEW and not os.environ.get("KRONJAX_TEST_XLA_FLAGS_PROBED"):
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *_known_to_xla(_NEW)]).strip()
    os.environ["KRONJAX_TEST_XLA_FLAGS_PROBED"] = "1"

import jaxtyping  # noqa: E402

# Before anything imports kronjax: the hook decorates the modules it imports from then on. The
# annotations mean what PEP 484 says, so an int is a float (beartype's default refuses it).
if os.environ.get("KRONJAX_TEST_TYPECHECK") != "off":
    jaxtyping.install_import_hook("kronjax", "beartype.beartype(conf=beartype.BeartypeConf(is_pep484_tower=True))")

import jax  # noqa: E402
import pytest  # noqa: E402

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
    settings = {
        "jax_compilation_cache_dir": os.environ[_CACHE_ENV],
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }
    for name, value in settings.items():
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)  # for the subprocesses (the demo, notebooks, the wheel's env)


@pytest.fixture
def without_shape_checks():
    """No jaxtyping or beartype checks within the test (read at each call): for the tests of
    kronjax's own errors about bad input, which the checks would otherwise pre-empt."""
    disabled = jaxtyping.config.jaxtyping_disable
    jaxtyping.config.update("jaxtyping_disable", True)
    yield
    jaxtyping.config.update("jaxtyping_disable", disabled)


# The slowest files first, so that pytest-xdist (which the Makefile runs with --dist loadfile
# --no-loadscope-reorder: a file per worker, in this order) does not start a long file last while
# the other worker idles; the rest keep their order. The worker-seconds behind the order are in
# docs/details/tests.md. Tiers are marks on the tests themselves (slow, extended, heavy).
SLOW_FIRST = (
    "test_robot_zoo.py",
    "test_robot_zoo_second_half.py",
    "test_notebook_plans.py",
    "test_second_order_rules.py",
    "test_second_order_rules_gradients.py",
    "test_trajopt.py",
    "test_floating_base.py",
    "test_notebooks.py",
    "test_docstrings.py",
    "test_dynamics_principles.py",
    "test_simulate_floating.py",
    "test_fuzz_urdf.py",
    "test_dynamics_derivatives.py",
    "test_simulate.py",
    "test_identify.py",
    "test_constrained.py",
    "test_packaging.py",
    "test_constrained_mechanisms.py",
    "test_kinematics.py",
    "test_constrained_floating.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_runtest_teardown(item, nextitem):
    """After a file's last test, JAX's caches of compiled programs are emptied: a worker runs file
    after file (``--dist loadfile``) and otherwise holds every program it compiled, about 4 GB
    per worker by the end of the slow tier; a later file that needs one again reads it from the
    persistent cache."""
    if nextitem is None or nextitem.path != item.path:
        jax.clear_caches()
        gc.collect()


def pytest_unconfigure(config):
    if _OWNED_CACHE is not None:
        shutil.rmtree(_OWNED_CACHE, ignore_errors=True)
