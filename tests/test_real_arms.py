"""The built-in real arms (``puma560``, ``panda``, ``ur5``) against Robotics Toolbox for Python
(rtb 1.5), Pinocchio and their published parameters.

* PUMA 560 and Panda vs ``rtb.models.DH.Puma560()`` / ``Panda()`` at 20 random states within the
  joint limits, max relative error (``oracles.relative_error``, per state) <= 1e-10:
  ``inertia(q)`` vs M, ``coriolis(q, qd) @ qd`` vs ``C qd``, ``gravload(q)`` vs g,
  ``rne(q, qd, qdd)`` vs ``inverse_dynamics`` (every method), ``fkine_all`` vs the body frames.
  rtb's side has its friction removed (``nofriction(coulomb=True, viscous=True)``); the PUMA keeps
  its motor inertias (rtb adds ``Jm G^2`` to M's diagonal and ``Jm G^2 qdd`` to ``rne``; kronjax's
  PUMA has them as ``armature``), the Panda's are zeroed (``link.Jm = 0``: kronjax's Panda has none).
  Gravity: rtb's ``robot.gravity`` is ``[0, 0, -9.81]`` in its base frame (asserted below) and is
  the kronjax models' default. rtb's Puma has ``m1 = 0``; kronjax's placeholder mass on joint 1's
  fixed axis must not show in any of these.
* UR5: rtb's ``UR5`` has no inertias (M singular), so its kinematics (``fkine_all``) are compared;
  rtb's ``d1 = 0.089459`` is a typo for UR's 0.089159 and is corrected on rtb's side. Its dynamics
  are compared with an rtb UR5 given UR's published masses and centres of mass and the documented
  cylinder inertias, all typed here from the sources (not read from kronjax).
* Pinocchio (``oracles.to_pinocchio``): ``crba`` (upper triangle, ``symmetric_from_upper``),
  ``computeCoriolisMatrix @ qd``, ``computeGeneralizedGravity``, ``rnea``; each model, 1e-10.
* Published parameters: inertials vs rtb's links (PUMA, Panda), the UR page's table (UR5); joint
  limits vs Franka's, rtb's and ur_description's documented values.
* M symmetric positive definite at the states; float32 models (``astype``) agree with float64 to
  1e-4 relative (M, g, inverse dynamics by RNEA).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax.dynamics import INVERSE_DYNAMICS_METHODS

pin = pytest.importorskip("pinocchio")
rtb = pytest.importorskip("roboticstoolbox")

from checks import F32_TOL, TOL  # noqa: E402
from oracles import relative_error, symmetric_from_upper, to_pinocchio  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N_STATES = 20
SEED = 560
MODELS = {"puma560": kj.models.puma560, "panda": kj.models.panda, "ur5": kj.models.ur5}

# UR5 (CB3), "DH Parameters for calculations of kinematics and dynamics", universal-robots.com
UR5_D1 = 0.089159
UR5_MASS = [3.7, 8.393, 2.33, 1.219, 1.219, 0.1879]
UR5_COM = [
    [0, -0.02561, 0.00193],
    [0.2125, 0, 0.11336],
    [0.15, 0, 0.0265],
    [0, -0.0018, 0.01634],
    [0, 0.0018, 0.01634],
    [0, 0, -0.001159],
]
# ur_description config/ur5/physical_parameters.yaml cylinders (radius, length) and the axis of
# each cylinder in the D-H frame of its link, as documented in kronjax.models.ur5
UR5_CYLINDERS = [
    (0.075, 0.178, "y"),
    (0.06, 0.425, "x"),
    (0.06, 0.39225, "x"),
    (0.06, 0.095, "y"),
    (0.06, 0.085, "y"),
    (0.0375, 0.0305, "z"),
]


def _ur5_cylinder(mass, radius, length, axis):
    transverse = mass * (3 * radius**2 + length**2) / 12
    return np.diag([mass * radius**2 / 2 if a == axis else transverse for a in "xyz"])


def _rigid(robot, motors: bool = False):
    """The rtb robot without friction, and without motor inertias unless ``motors``."""
    for link in robot.links if not motors else ():
        link.Jm = 0.0
    return robot.nofriction(coulomb=True, viscous=True)


# Link 6's centre-of-mass z: rtb copies Gaz et al.'s Table VIII, -1.0517e-02 (a slip, the digits
# of link 7's x); kronjax's Panda has -1.9235e-02, which reproduces the paper's Table III
# (kronjax/models/panda.py, tests/test_identify_uncertainty.py)
PANDA_LINK6_COM_Z = -1.9235e-02


def _rtb_panda():
    robot = rtb.models.DH.Panda()
    robot.links[5].r = [*robot.links[5].r[:2], PANDA_LINK6_COM_Z]
    return robot


def _rtb_ur5(dynamics: bool):
    robot = rtb.models.DH.UR5()
    robot.links[0].d = UR5_D1  # rtb 1.5 has 0.089459, a typo for UR's value
    if dynamics:
        for link, m, c, (r, length, axis) in zip(robot.links, UR5_MASS, UR5_COM, UR5_CYLINDERS):
            link.m = m
            link.r = c
            link.I = _ur5_cylinder(m, r, length, axis)
    return _rigid(robot)


RTB = {
    "puma560": lambda: _rigid(rtb.models.DH.Puma560(), motors=True),
    "panda": lambda: _rigid(_rtb_panda()),
    "ur5": lambda: _rtb_ur5(dynamics=True),
}


def _quantities(model, q, qd, qdd):
    out = {"M": kj.mass_matrix(model, q), "g": kj.gravity(model, q)}
    out["R"], out["p"] = kj.forward_kinematics(model, q)
    # every form gives the same C qd (tests/test_pinocchio_dynamics.py compares all three): the
    # default one keeps compilation short
    out["Cqd"] = kj.coriolis_matrix(model, q, qd) @ qd
    for method in INVERSE_DYNAMICS_METHODS:
        out[f"tau_{method}"] = kj.inverse_dynamics(model, q, qd, qdd, method=method)
    return out


def _quantities_f32(model, q, qd, qdd):
    return {
        "M": kj.mass_matrix(model, q),
        "g": kj.gravity(model, q),
        "tau_rnea": kj.inverse_dynamics(model, q, qd, qdd, method="rnea"),
    }


_COMPILED = {}


def _evaluate(fn, model, *states):
    """``fn`` vmapped over the states, compiled once per function, model structure and dtype.

    Compilation is most of this file's run time and each executable runs once or twice, so XLA's
    backend (LLVM) optimisation is turned off for these compilations only (about half the time).
    """
    args = (_unnamed(model), *(jnp.asarray(x, model.gravity.dtype) for x in states))
    leaves, treedef = jax.tree.flatten(args)
    key = (fn, treedef, tuple((leaf.shape, leaf.dtype) for leaf in leaves))
    if key not in _COMPILED:
        lowered = jax.jit(jax.vmap(fn, in_axes=(None, 0, 0, 0))).lower(*args)
        _COMPILED[key] = lowered.compile(compiler_options={"xla_backend_optimization_level": 0})
    return {k: np.asarray(v) for k, v in _COMPILED[key](*args).items()}


def _unnamed(model):
    """The model without names (static pytree fields) and limits (unused here, and weakly typed
    in some models), so that the PUMA and the UR5 (both 6R, standard D-H) share one compilation."""
    return kj.Model(
        kinematics=model.kinematics,
        inertials=model.inertials,
        gravity=model.gravity,
        armature=model.armature,
        body_names=tuple(f"b{i}" for i in range(model.n_bodies)),
        joint_names=tuple(f"j{i}" for i in range(model.n_bodies)),
    )


@pytest.fixture(scope="module", params=list(MODELS))
def arm(request):
    name = request.param
    model = MODELS[name]()
    rng = np.random.default_rng([SEED, list(MODELS).index(name)])
    lower = np.maximum(np.asarray(model.limits.lower), -np.pi)
    upper = np.minimum(np.asarray(model.limits.upper), np.pi)
    q = rng.uniform(lower, upper, (N_STATES, model.nv))
    qd, qdd = rng.uniform(-2, 2, (2, N_STATES, model.nv))
    ours = _evaluate(_quantities, model, q, qd, qdd)
    return name, model, (q, qd, qdd), ours


def _check(errors, tol, what):
    print(f"\n{what}: max relative errors " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) <= tol, errors


def test_dynamics_against_rtb(arm):
    name, model, (q, qd, qdd), ours = arm
    robot = RTB[name]()
    np.testing.assert_array_equal(robot.gravity, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(np.asarray(model.gravity), robot.gravity)
    assert np.array_equal(robot.base.A, np.eye(4))
    expected = {
        "M": robot.inertia(q),
        "Cqd": np.einsum("kij,kj->ki", robot.coriolis(q, qd), qd),
        "g": robot.gravload(q),
        "tau": robot.rne(q, qd, qdd),
    }
    errors = {}
    for key, value in ours.items():
        ref = expected.get(key.split("_")[0])
        if ref is not None:
            errors[key] = max(relative_error(value[s], ref[s]) for s in range(N_STATES))
    assert len(errors) == 3 + len(INVERSE_DYNAMICS_METHODS)
    _check(errors, TOL, f"{name} vs rtb")


def test_kinematics_against_rtb(arm):
    name, model, (q, _, _), ours = arm
    robot = _rtb_ur5(dynamics=False) if name == "ur5" else RTB[name]()
    errors = {"R": 0.0, "p": 0.0}
    for s in range(N_STATES):
        frames = robot.fkine_all(q[s])  # frames {0} (base) to {n}; rtb's tool is not applied
        assert len(frames) == model.n_bodies + 1
        for i in range(model.n_bodies):
            errors["R"] = max(errors["R"], relative_error(ours["R"][s, i], frames[i + 1].R))
        errors["p"] = max(errors["p"], relative_error(ours["p"][s], np.stack([f.t for f in frames[1:]])))
    _check(errors, TOL, f"{name} frames vs rtb fkine_all")


def test_dynamics_against_pinocchio(arm):
    name, model, (q, qd, qdd), ours = arm
    pm = to_pinocchio(model)
    data = pm.createData()
    errors = {key: 0.0 for key in ours if key not in ("R", "p")}
    for s in range(N_STATES):
        expected = {
            "M": symmetric_from_upper(pin.crba(pm, data, q[s])),
            "Cqd": pin.computeCoriolisMatrix(pm, data, q[s], qd[s]) @ qd[s],
            "g": pin.computeGeneralizedGravity(pm, data, q[s]),
            "tau": pin.rnea(pm, data, q[s], qd[s], qdd[s]),
        }
        for key in errors:
            errors[key] = max(errors[key], relative_error(ours[key][s], expected[key.split("_")[0]]))
    _check(errors, TOL, f"{name} vs Pinocchio")


def test_mass_matrix_symmetric_positive_definite(arm):
    name, _, _, ours = arm
    for m in ours["M"]:
        assert relative_error(m, m.T) <= 1e-14
        eig = np.linalg.eigvalsh(m)
        assert eig[0] > 1e-6 * eig[-1], f"{name}: eigenvalues {eig}"


def test_float32_agrees_with_float64(arm):
    name, model, states, ours = arm
    model32 = model.astype(jnp.float32)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(model32) if hasattr(leaf, "dtype"))
    got = _evaluate(_quantities_f32, model32, *states)
    errors = {}
    for key, value in got.items():
        assert value.dtype == jnp.float32, key
        errors[key] = max(relative_error(value[s], ours[key][s]) for s in range(N_STATES))
    _check(errors, F32_TOL, f"{name} float32 vs float64")


# ----------------------------------------------------------------------------------------------
# Parameters and limits against their published sources
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["puma560", "panda"])
def test_inertials_are_rtbs(name):
    model = MODELS[name]()
    robot = rtb.models.DH.Puma560() if name == "puma560" else _rtb_panda()
    ine = model.inertials
    for i, link in enumerate(robot.links):
        if link.m == 0:  # the PUMA's link 1: a placeholder mass on joint 1's fixed axis
            assert name == "puma560" and i == 0
            assert float(ine.mass[i]) == 1.0
            np.testing.assert_array_equal(np.asarray(ine.com[i]), 0.0)
            np.testing.assert_array_equal(link.r, 0.0)
        else:
            assert float(ine.mass[i]) == link.m
            np.testing.assert_allclose(np.asarray(ine.com[i]), link.r, rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(ine.inertia[i]), link.I, rtol=0, atol=1e-15)


def test_ur5_inertials_are_urs():
    ine = kj.models.ur5().inertials
    np.testing.assert_array_equal(np.asarray(ine.mass), UR5_MASS)
    np.testing.assert_array_equal(np.asarray(ine.com), UR5_COM)
    for i, (m, (r, length, axis)) in enumerate(zip(UR5_MASS, UR5_CYLINDERS)):
        np.testing.assert_allclose(np.asarray(ine.inertia[i]), _ur5_cylinder(m, r, length, axis), rtol=1e-15, atol=0)


def test_limits():
    deg, inf = math.pi / 180, np.inf
    two_pi = 2 * math.pi
    expected = {
        # rtb Puma560 qlim (Wang and Chen 1991); no published velocity or torque limits
        "puma560": (
            np.array([-160, -45, -225, -110, -100, -266]) * deg,
            np.array([160, 225, 45, 170, 100, 266]) * deg,
            np.full(6, inf),
            np.full(6, inf),
        ),
        # Franka, "Robot and interface specifications"
        "panda": (
            [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
            [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
            [2.175] * 4 + [2.61] * 3,
            [87.0] * 4 + [12.0] * 3,
        ),
        # ur_description config/ur5/joint_limits.yaml (UR5/CB3 user manual; UR "Max. joint torques")
        "ur5": (
            [-two_pi, -two_pi, -math.pi, -two_pi, -two_pi, -two_pi],
            [two_pi, two_pi, math.pi, two_pi, two_pi, two_pi],
            np.full(6, 180 * deg),
            [150.0, 150.0, 150.0, 28.0, 28.0, 28.0],
        ),
    }
    for name, (lower, upper, velocity, effort) in expected.items():
        model = MODELS[name]()
        limits = model.limits
        for field, value in zip(("lower", "upper", "velocity", "effort"), (lower, upper, velocity, effort)):
            got = np.asarray(getattr(limits, field))
            assert got.shape == (model.nv,), (name, field)
            np.testing.assert_allclose(got, value, rtol=1e-15, atol=0, err_msg=f"{name} {field}")
    robot = rtb.models.DH.Puma560()
    np.testing.assert_allclose(np.asarray(kj.models.puma560().limits.lower), robot.qlim[0], rtol=1e-15)
    robot = rtb.models.DH.Panda()
    np.testing.assert_allclose(np.asarray(kj.models.panda().limits.upper), robot.qlim[1], rtol=1e-15)


def test_models_are_float64_and_honour_gravity():
    for name, make in MODELS.items():
        model = make(gravity=(0.0, 9.81, 0.0))
        np.testing.assert_array_equal(np.asarray(model.gravity), [0.0, 9.81, 0.0])
        assert model.nv == {"puma560": 6, "panda": 7, "ur5": 6}[name]
        assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(model) if hasattr(leaf, "dtype"))
