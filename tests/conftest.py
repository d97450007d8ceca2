"""Tests run in float64 (the library never sets this itself); float32 tests cast explicitly.

Speed (nearly all of the suite's time is XLA compilation of programs that then run once or a few
times; none of this changes what a test computes or checks):

* XLA:CPU's fusion emitters are off in every run (``--xla_cpu_use_fusion_emitters=false``): they
  cost a third of the compile time (test_composite took 45.6 instead of 65.7 CPU seconds; the
  Panda's batched rnea, aba and C* compile in half the time) and the code runs as fast without
  them (rnea, aba and C* at batch 10^4 within the machine's noise).
* ``KRONJAX_TEST_XLA_OPT=0`` sets XLA's backend (LLVM) optimisation level 0 for every compilation
  as well (``make test``, ``make test-slow`` and ``make test-fast`` set it): the code it emits runs
  2-3x slower (rnea at batch 10^4), but the suite compiles far more than it runs, the slow tier's
  notebooks and long simulations included (both tiers in one run took 688 s at level 0 against
  874 s run apart with the slow tier at the default level). Its different rounding showed two
  faults that level 3's hid: a float32 interior-point solve whose slacks reached 0 (fixed in
  kronjax.trajopt) and a reverse-mode gradient through an adaptive solve at tolerances below
  rounding (tests/test_simulate.py).
  With it, three more flags cut the CPU time of four compile-bound files (test_trajopt,
  test_floating_base, test_simulate_floating, test_docstrings) by about 5% (342-357 against
  362-381 CPU seconds, three runs each): LLVM's expensive passes off, the LLVM module compiled in
  one piece rather than split over threads, and Eigen's single-threaded matrix products (two
  workers already hold both cores).
* JAX's persistent compilation cache in a temporary directory for the duration of one run, shared
  by the pytest-xdist workers and the subprocesses that tests start (through JAX's environment
  variables): an identical program compiled by another test, worker or subprocess (``kronjax
  demo`` runs in tests/test_cli.py and again from the wheel in tests/test_packaging.py) is loaded
  instead of compiled again. ``KRONJAX_TEST_JAX_CACHE=off`` turns it off.

Runtime type checks: kronjax's functions and dataclasses carry jaxtyping annotations (shapes and
dtypes); the tests check them as equinox and diffrax do, with jaxtyping's import hook and beartype,
so that an annotation that says something untrue fails here (users do not run the hook).
``KRONJAX_TEST_TYPECHECK=off`` turns the checks off. The fixture ``without_shape_checks`` turns
them off within one test, for the tests of kronjax's own messages about bad input (and the slow
URDF fuzzing, whose 1000 files cost 45% more with every helper of the loader checked). The
subprocesses that tests start (notebooks, the docs build, packaging, the sharded batch) run
without them. Cost: 1.5 s per worker to import kronjax (every function decorated) and about
10 us per call of a kronjax function outside ``jit`` (inside, the checks run once, at tracing):
6% of the fast tier's CPU time.
"""

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


# The slowest files first (worker-seconds of both tiers in one run on 2 cores, pytest --junitxml, 2026-11-25:
# 1416 in all), so that pytest-xdist (which the Makefile runs with --dist loadfile
# --no-loadscope-reorder: a file per worker, in this order) does not start a long file last while
# the other worker idles; the rest keep their order.
SLOW_FIRST = (
    "test_robot_zoo.py",  # about 200 on 2026-11-28: 69 files, 40 of them compiled against Pinocchio
    "test_robot_zoo_second_half.py",  # about 200
    "test_trajopt.py",  # 120
    "test_floating_base.py",  # 119
    "test_notebooks.py",  # 106
    "test_docstrings.py",  # 72: every public name's examples
    "test_dynamics_principles.py",  # 63
    "test_simulate_floating.py",  # 61
    "test_fuzz_urdf.py",  # 57: 1000 mutated files
    "test_dynamics_derivatives.py",  # 54
    "test_simulate.py",  # 52
    "test_identify.py",  # 52
    "test_constrained.py",  # 49
    "test_packaging.py",  # 41
    "test_constrained_mechanisms.py",  # 36
    "test_kinematics.py",  # 33
    "test_constrained_floating.py",  # 31
)


# Tiers of single tests and parametrized instances (the rest carry their marks in their files).
# `extended` (``make test-extended``, not in CI, which stays under 30 minutes on 2 cores):
# second instances of slow checks that CI runs on another model, precision or size (the instance CI
# keeps is named), and the soak run. `slow`: run-bound or paper-specific checks moved out of ``make
# test`` (``make test-slow``, in CI). (Moving one parametrized instance saves nothing where its
# siblings share its compiled functions: the next sibling compiles them instead.)
TIERS = {
    # make test -> slow
    "test_trajopt.py::test_two_link_matches_scipy_and_respects_limits": "slow",
    "test_trajopt.py::test_rotor_torque_effort_with_free_end_accelerations": "slow",
    "test_constrained.py::test_huang_double_pendulum_dfdq": "slow",
    "test_kinematics.py::test_float32_matches_float64": "slow",
    "test_dynamics_principles.py::test_gradients_wrt_inertials_and_gravity_chain": "slow",
    "test_dynamics_principles.py::test_wrenches_in_inverse_and_forward_dynamics": "slow",
    "test_batching.py::test_batches_sharded_over_four_cpu_devices": "slow",
    "test_relative_motion.py::test_compose_pose_and_jacobians[branched-4-5-reference]": "slow",
    "test_simulate.py::test_truc_feedforward_validation": "slow",
    # the 12 largest compilations of `make test` on the Intel machine (CI of feedf8a: 677 s there,
    # over 10 minutes): about 260 worker-seconds moved to the slow tier
    "test_trajopt.py::test_gauss_newton_hessian_plus_the_dynamics_curvature_is_the_exact_hessian[False]": "slow",
    "test_trajopt.py::test_gauss_newton_hessian_plus_the_dynamics_curvature_is_the_exact_hessian[True]": "slow",
    "test_trajopt.py::test_augmented_lagrangian_matches_scipy": "slow",  # and SLSQP's reference fixture with it
    "test_jacobians.py::test_analytic_equals_autodiff": "slow",
    "test_mimic.py::test_coupled_dynamics_and_kinematics_against_pinocchio[mimic_gripper]": "slow",
    "test_composite.py::test_composite_mass_matrix_derivative_equals_autodiff_of_mass_matrix[branched tree-True]": "slow",
    "test_kinematics.py::test_accelerations_match_second_time_derivative[tree]": "slow",
    "test_docstrings.py::test_examples_run_as_written[kronjax.identify._excitation]": "slow",
    "test_docstrings.py::test_examples_run_as_written[kronjax.simulate]": "slow",
    "test_mjcf.py::test_dynamics_and_poses_match_mujoco[mjcf_floating.xml]": "slow",
    "test_mjcf.py::test_equality_constraints_match_mujoco": "slow",
    "test_dynamics_derivatives.py::test_derivatives_by_autodiff_of_the_recursion": "slow",
    # slow -> extended
    "test_floating_base.py::test_floating_base_robots_against_pinocchio[quadruped]": "extended",  # [humanoid]
    "test_floating_base.py::test_free_floating_robot_conserves_momentum_and_balances_power[quadruped]": "extended",  # the humanoid's, test_simulate_floating
    "test_floating_base.py::test_float32_and_a_batch_of_ten_thousand_states": "extended",  # float32: test_kinematics, test_dynamics_derivatives
    "test_floating_base.py::test_identification_regressor_of_a_floating_base_robot": "extended",  # regressors: test_identify
    "test_centroidal.py::test_against_pinocchio[quadruped]": "extended",  # [humanoid]
    "test_constrained_floating.py::test_free_and_euler_platforms_agree_at_matching_states": "extended",  # test_formulations_agree
    "test_dynamics_principles.py::test_float32_matches_float64": "extended",  # float32: test_dynamics_derivatives
    "test_dynamics_derivatives.py::test_hessian_of_inverse_dynamics_against_finite_differences": "extended",  # first derivatives vs Pinocchio
    "test_relative_motion_floating.py::test_compose_holds_along_the_tangent_space": "extended",  # test_against_pinocchio
    "test_mimic.py::test_coupled_dynamics_and_kinematics_against_pinocchio[mimic_hand]": "extended",  # [mimic_gripper]
    "test_composite.py::test_composite_equals_the_papers_assembly[branched tree]": "extended",  # the other models
}
_TIERED = {"test_soak.py": "extended"}  # whole files

# `make test-fast` (under 2 minutes on 2 cores, for iteration) leaves out the files whose tests
# not marked slow took more than 25 worker-seconds (pytest --junitxml, 2026-11-25, on the AMD EPYC
# machine: the first 14; pytest --durations=0, 2026-11-26, on the Intel Xeon at 2.5 GHz that CI also
# lands on, where the same tests take 1.6-2x as long and test-fast took 235 s: the last 8): marked
# `heavy` here.
HEAVY = (
    "test_docstrings.py",
    "test_constrained.py",
    "test_trajopt.py",
    "test_dynamics_principles.py",
    "test_urdf_pinocchio.py",
    "test_identify.py",
    "test_composite.py",
    "test_dynamics_derivatives.py",
    "test_kinematics.py",
    "test_dynamics_paper.py",
    "test_mjcf.py",
    "test_jacobians.py",
    "test_calculus.py",
    "test_mimic.py",
    "test_relative_motion.py",  # 46 worker-seconds on 2026-11-26
    "test_constrained_mechanisms.py",  # 34
    "test_real_arms.py",  # 33
    "test_constrained_pinocchio.py",  # 30
    "test_pinocchio_dynamics.py",  # 29
    "test_pinocchio_kinematics.py",  # 27
    "test_lie.py",  # 27
    "test_urdf.py",  # 26
    "test_urdf_repairs.py",  # five models compiled against Pinocchio
    "test_robot_zoo.py",  # the loads of 69 files and two compiled models
    "test_robot_zoo_second_half.py",  # slow tier only
)


@pytest.hookimpl(tryfirst=True)  # before pytest's -m deselection
def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = TIERS.get(f"{item.path.name}::{item.name}") or _TIERED.get(item.path.name)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
        if item.path.name in HEAVY:
            item.add_marker(pytest.mark.heavy)
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_unconfigure(config):
    if _OWNED_CACHE is not None:
        shutil.rmtree(_OWNED_CACHE, ignore_errors=True)
