"""The non-finite policy (kronjax._finite) for every public name of ``kronjax``.

Computations: a NaN or inf put into one input entry (q, qd, qdd, tau, a wrench, a point, a model
parameter) must come out as NaN/inf in every output entry that depends on it, never as a finite
wrong number. The oracle needs no reference values: an output entry that is finite must equal the
output obtained with two different finite values in place of the non-finite one (so it genuinely
does not depend on it); an entry that differs between the two finite values must be non-finite.
Every case is compiled once; the non-finite and finite inputs are calls of the same program.

Builders and loaders: a non-finite parameter raises a ``ValueError`` naming it.
"""

from __future__ import annotations

import functools
import types

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, random_inertia, random_rotation

import kronjax as kj

N_BATCH = 5
# what a failed equinox.error_if raises: equinox.EquinoxRuntimeError outside jit; under jax.jit,
# JAX's error for a failed callback, a RuntimeError on the first call and a ValueError on JAX's
# fast dispatch path (jax 0.10)
RUNTIME_ERRORS = (RuntimeError, ValueError)


def _model() -> kj.Model:
    """R - R - P and a fixed tool frame on the prismatic body: 3 coordinates, 4 bodies."""
    rng = np.random.default_rng(18)
    joints, inertials = [], []
    for kind, parent in [("R", -1), ("R", 0), ("P", 1), ("F", 2)]:
        axis = rng.normal(size=3)
        joints.append(kj.Joint(kind, parent, axis / np.linalg.norm(axis), random_rotation(rng), rng.uniform(-0.3, 0.3, 3)))
        inertials.append(kj.Inertial(rng.uniform(0.5, 3.0), rng.uniform(-0.1, 0.1, 3), random_inertia(rng)))
    return kj.from_joints(joints, inertials, gravity=(0.3, -0.2, -9.81))


@functools.cache
def _inputs() -> dict:
    """Every input of the cases, as NumPy arrays: the compiled cases take them as they take JAX
    arrays, and :func:`_set` edits them without compiling anything."""
    rng = np.random.default_rng(0)
    x = {k: rng.uniform(-1, 1, 3) for k in ("q", "qd", "qdd", "tau", "point", "force")}
    x["mat"] = rng.uniform(-1, 1, (3, 9))
    x["qs"] = rng.uniform(-1, 1, (N_BATCH, 3))
    x["model"] = jax.tree.map(np.asarray, _model())
    return x


# (name, where in the inputs, index, the two finite values in place of the original one as a
# function of it): one entry per input, the middle joint's coordinate (body 0 does not depend on it)
_ADD = lambda v: (v + 0.173, v - 0.291)  # noqa: E731
_SCALE = lambda v: (1.31 * v, 1.67 * v)  # noqa: E731 (masses and inertias stay positive)
SLOTS = [
    ("q", lambda x: x["q"], 1, _ADD),
    ("qd", lambda x: x["qd"], 1, _ADD),
    ("qdd", lambda x: x["qdd"], 1, _ADD),
    ("tau", lambda x: x["tau"], 1, _ADD),
    ("point", lambda x: x["point"], 0, _ADD),
    ("force", lambda x: x["force"], 2, _ADD),
    ("mat", lambda x: x["mat"], (1, 4), _ADD),
    ("qs", lambda x: x["qs"], (2, 1), _ADD),
    ("mass", lambda x: x["model"].inertials.mass, 1, _SCALE),
    ("inertia", lambda x: x["model"].inertials.inertia, (1, 2, 2), _SCALE),
    ("com", lambda x: x["model"].inertials.com, (2, 0), _ADD),
    ("placement", lambda x: x["model"].kinematics.pre_translation, (2, 0), _ADD),
    ("axis", lambda x: x["model"].kinematics.axes, (1, 0), _ADD),
    ("gravity", lambda x: x["model"].gravity, 2, _ADD),
]


def _set(x: dict, slot, value) -> dict:
    """``x`` with one entry replaced (NumPy leaves: no eager JAX operation to compile)."""
    _, where, index, _ = slot
    leaf = np.array(where(x))
    leaf[index] = value
    return eqx.tree_at(where, x, leaf)


BODY = 2  # the prismatic body: moved by every coordinate


def _wrenches(x):
    return [
        kj.Wrench(BODY, force=x["force"], point=x["point"]),
        kj.Wrench(3, force=x["force"][::-1], moment=x["force"], point="com", frame="body"),
    ]


def _rel(x, **kwargs):
    return kj.relative_motion(x["model"], x["q"], BODY, reference=0, **kwargs)


# Every public function of kronjax, with its default options, as a function of the inputs
CASES = {
    # calculus
    "kron": lambda x: kj.kron(x["q"], x["mat"]),
    "vec": lambda x: kj.vec(x["mat"]),
    "unvec": lambda x: kj.unvec(x["mat"].reshape(-1), 3),
    "skew": lambda x: kj.skew(x["q"]),
    "block_skew": lambda x: kj.block_skew(x["mat"]),
    "symmetrize": lambda x: kj.symmetrize(x["mat"]),
    "khang_jacobian": lambda x: kj.khang_jacobian(lambda v: jnp.outer(v, jnp.sin(v)))(x["q"]),
    # batching
    "chunked_vmap": lambda x: kj.chunked_vmap(lambda q: kj.forward_kinematics(x["model"], q), chunk_size=2)(x["qs"]),
    # kinematics
    "forward_kinematics": lambda x: kj.forward_kinematics(x["model"], x["q"]),
    "jacobians": lambda x: kj.jacobians(x["model"], x["q"], points="com"),
    "hessians": lambda x: kj.hessians(x["model"], x["q"]),
    "jacobians_dot": lambda x: kj.jacobians_dot(x["model"], x["q"], x["qd"]),
    "joint_jacobians": lambda x: kj.joint_jacobians(x["model"], x["q"]).jacobians("body", x["point"][None], [BODY]),
    "translational_jacobian": lambda x: kj.translational_jacobian(x["model"], x["q"], BODY, x["point"]),
    "rotational_jacobian": lambda x: kj.rotational_jacobian(x["model"], x["q"], BODY),
    "translational_hessian": lambda x: kj.translational_hessian(x["model"], x["q"], BODY, x["point"]),
    "rotational_hessian": lambda x: kj.rotational_hessian(x["model"], x["q"], BODY),
    "linear_velocity": lambda x: kj.linear_velocity(x["model"], x["q"], x["qd"], BODY, x["point"]),
    "angular_velocity": lambda x: kj.angular_velocity(x["model"], x["q"], x["qd"], BODY),
    "linear_acceleration": lambda x: kj.linear_acceleration(x["model"], x["q"], x["qd"], x["qdd"], BODY, x["point"]),
    "angular_acceleration": lambda x: kj.angular_acceleration(x["model"], x["q"], x["qd"], x["qdd"], BODY),
    "relative_motion": _rel,
    "compose": lambda x: kj.compose(
        kj.relative_motion(x["model"], x["q"], 0), kj.relative_motion(x["model"], x["q"], 3, reference=0)
    ),
    "point_motion": lambda x: kj.point_motion(_rel(x), x["point"]),
    # dynamics
    "mass_matrix": lambda x: kj.mass_matrix(x["model"], x["q"]),
    "mass_matrix_derivative": lambda x: kj.mass_matrix_derivative(x["model"], x["q"]),
    "coriolis_star": lambda x: kj.coriolis_star(x["model"], x["q"]),
    "coriolis_matrix": lambda x: kj.coriolis_matrix(x["model"], x["q"], x["qd"]),
    "gravity": lambda x: kj.gravity(x["model"], x["q"]),
    "kinetic_energy": lambda x: kj.kinetic_energy(x["model"], x["q"], x["qd"]),
    "potential_energy": lambda x: kj.potential_energy(x["model"], x["q"]),
    "generalized_forces": lambda x: kj.generalized_forces(x["model"], x["q"], _wrenches(x)),
    "passive_forces": lambda x: kj.passive_forces(x["model"], x["q"], x["qd"]),
    "inverse_dynamics": lambda x: kj.inverse_dynamics(x["model"], x["q"], x["qd"], x["qdd"]),
    "forward_dynamics": lambda x: kj.forward_dynamics(x["model"], x["q"], x["qd"], x["tau"]),
    "inverse_dynamics_derivatives": lambda x: kj.inverse_dynamics_derivatives(x["model"], x["q"], x["qd"], x["qdd"]),
    "forward_dynamics_derivatives": lambda x: kj.forward_dynamics_derivatives(x["model"], x["q"], x["qd"], x["tau"]),
    "inverse_dynamics_second_derivatives": lambda x: kj.inverse_dynamics_second_derivatives(
        x["model"], x["q"], x["qd"], x["qdd"]
    ),
    "inverse_dynamics_hessian": lambda x: kj.inverse_dynamics_hessian(x["model"], x["q"], x["qd"], x["qdd"], x["tau"]),
    "forward_dynamics_second_derivatives": lambda x: kj.forward_dynamics_second_derivatives(
        x["model"], x["q"], x["qd"], x["tau"]
    ),
    "forward_dynamics_hessian": lambda x: kj.forward_dynamics_hessian(x["model"], x["q"], x["qd"], x["tau"], x["qdd"]),
    # centroidal
    "center_of_mass": lambda x: kj.center_of_mass(x["model"], x["q"]),
    "center_of_mass_jacobian": lambda x: kj.center_of_mass_jacobian(x["model"], x["q"]),
    "centroidal_momentum_matrix": lambda x: kj.centroidal_momentum_matrix(x["model"], x["q"]),
    "centroidal_momentum": lambda x: kj.centroidal_momentum(x["model"], x["q"], x["qd"]),
    "centroidal_momentum_matrix_dot": lambda x: kj.centroidal_momentum_matrix_dot(x["model"], x["q"], x["qd"]),
    # configuration space (Euclidean on this model; the Lie-group joints in tests/test_lie.py)
    "integrate": lambda x: kj.integrate(x["model"], x["q"], x["qd"]),
    "difference": lambda x: kj.difference(x["model"], x["q"], x["qdd"]),
    "normalize": lambda x: kj.normalize(x["model"], x["q"]),
}


def _assert_propagates(bad_value, slot, bad, finite_a, finite_b, where: str) -> None:
    label = f"{where}: {bad_value} in {slot[0]}[{slot[2]}]"
    leaves = jax.tree_util.tree_flatten_with_path(bad)[0]
    for (path, b), fa, fb in zip(leaves, jax.tree.leaves(finite_a), jax.tree.leaves(finite_b)):
        b, fa, fb = (np.asarray(v, float) for v in (b, fa, fb))
        name = f"{label}, output{jax.tree_util.keystr(path)}"
        assert np.all(np.isfinite(fa)) and np.all(np.isfinite(fb)), f"{name}: non-finite output for finite inputs"
        scale = max(float(np.max(np.abs(fa), initial=0.0)), float(np.max(np.abs(fb), initial=0.0)), 1.0)
        close = lambda u, v: np.isclose(u, v, rtol=0.0, atol=1e-12 * scale)  # noqa: E731
        wrong = np.isfinite(b) & ~(close(b, fa) & close(b, fb))
        if np.any(wrong):
            idx = tuple(int(i) for i in np.argwhere(wrong)[0])
            raise AssertionError(
                f"{name}: entry {idx} is finite ({b[idx]!r}) but depends on the input "
                f"(finite inputs give {fa[idx]!r}, {fb[idx]!r}); {int(wrong.sum())} such entries"
            )


def _check_case(fn, x, slots=SLOTS, where=""):
    for slot in slots:
        original = slot[1](x)[slot[2]]
        a, b = (fn(_set(x, slot, v)) for v in slot[3](original))
        for bad_value in (np.nan, np.inf):
            _assert_propagates(bad_value, slot, fn(_set(x, slot, bad_value)), a, b, where)


def _function_model(model: kj.Model) -> kj.Model:
    """The same system as a :func:`kronjax.from_function` model (generic paths: autodiff
    kinematics, Lagrangian inverse dynamics, a Cholesky solve in forward dynamics)."""
    tree = model.kinematics
    return kj.from_function(lambda q: tree.poses(q), model.nv, model.inertials, gravity=model.gravity, check=False)


def _on_function_model(fn):
    return lambda x: fn(dict(x, model=_function_model(x["model"])))


# Other options of the same functions (other code paths); the slow tier runs them
ALTERNATIVES = {
    "mass_matrix[jacobians]": lambda x: kj.mass_matrix(x["model"], x["q"], method="jacobians"),
    "mass_matrix_derivative[jacobians]": lambda x: kj.mass_matrix_derivative(x["model"], x["q"], method="jacobians"),
    "coriolis_star[jacobians]": lambda x: kj.coriolis_star(x["model"], x["q"], method="jacobians"),
    "coriolis_matrix[tuan]": lambda x: kj.coriolis_matrix(x["model"], x["q"], x["qd"], form="tuan"),
    "coriolis_matrix[kane]": lambda x: kj.coriolis_matrix(x["model"], x["q"], x["qd"], form="kane"),
    "inverse_dynamics[kron]": lambda x: kj.inverse_dynamics(x["model"], x["q"], x["qd"], x["qdd"], method="kron"),
    "inverse_dynamics[lagrangian,wrenches]": lambda x: kj.inverse_dynamics(
        x["model"], x["q"], x["qd"], x["qdd"], method="euler_lagrange", wrenches=_wrenches(x)
    ),
    "jacobians[autodiff,body]": lambda x: kj.jacobians(x["model"], x["q"], "body", "com", method="autodiff"),
    "hessians[body*]": lambda x: kj.hessians(x["model"], x["q"], "body*", points="com"),
    "hessians[autodiff,body]": lambda x: kj.hessians(x["model"], x["q"], "body", method="autodiff"),
    "jacobians_dot[autodiff,body]": lambda x: kj.jacobians_dot(x["model"], x["q"], x["qd"], "body", method="autodiff"),
    "linear_acceleration[body]": lambda x: kj.linear_acceleration(
        x["model"], x["q"], x["qd"], x["qdd"], BODY, "com", frame="body"
    ),
    "compose[moving]": lambda x: kj.compose(
        kj.relative_motion(x["model"], x["q"], 0, frame="moving"),
        kj.relative_motion(x["model"], x["q"], 3, reference=0, frame="moving"),
    ),
    "function_model:forward_dynamics": _on_function_model(CASES["forward_dynamics"]),
    "function_model:forward_dynamics_derivatives": _on_function_model(CASES["forward_dynamics_derivatives"]),
    "function_model:inverse_dynamics": _on_function_model(CASES["inverse_dynamics"]),
    "function_model:coriolis_matrix": _on_function_model(CASES["coriolis_matrix"]),
    "function_model:gravity": _on_function_model(CASES["gravity"]),
    "forward_dynamics[wrenches]": lambda x: kj.forward_dynamics(x["model"], x["q"], x["qd"], x["tau"], _wrenches(x)),
}

# The fast tier: about 14 s of CPU for the whole file's fast tests, nearly all compilation; the
# other cases are slow
FAST = {
    *("kron", "vec", "unvec", "skew", "block_skew", "symmetrize", "khang_jacobian", "chunked_vmap"),
    *("forward_kinematics", "translational_jacobian", "angular_velocity"),
    *("kinetic_energy", "potential_energy", "inverse_dynamics", "forward_dynamics"),
}
ALL_CASES = {**CASES, **ALTERNATIVES}


@functools.cache
def _compiled(name: str):
    return jit_once(ALL_CASES[name])


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(ALL_CASES)])
def test_non_finite_inputs_propagate(name):
    """Regression (forward_dynamics, forward_dynamics_derivatives): a NaN or inf in q or in a
    mass, inertia, axis or placement used to raise "the mass matrix is not positive definite"."""
    _check_case(_compiled(name), _inputs(), where=name)


@pytest.mark.parametrize(
    "name",
    [
        "forward_dynamics",
        *(pytest.param(n, marks=pytest.mark.slow) for n in ("forward_dynamics_derivatives", "function_model:forward_dynamics")),
    ],
)
def test_a_finite_model_that_is_not_positive_definite_still_raises(name):
    """The positive-definiteness check stays on for finite inputs (it stands aside only for
    non-finite ones, which are not the model's fault): every mass and inertia negated."""
    x = _inputs()
    ine = x["model"].inertials
    x = eqx.tree_at(lambda x: (x["model"].inertials.mass, x["model"].inertials.inertia), x, (-ine.mass, -ine.inertia))
    with pytest.raises(RUNTIME_ERRORS, match="not positive definite"):
        jax.block_until_ready(_compiled(name)(x))


# --------------------------------------------------------------------------------------------
# Builders and loaders raise
# --------------------------------------------------------------------------------------------

BAD = [np.nan, np.inf, -np.inf]


def _joints(**changes) -> list:
    """Two joints; ``changes`` applies to the second."""
    second = {"axis": (1.0, 0.0, 0.0), "translation": (0.0, 0.0, 0.5), **changes}
    return [kj.Joint("R"), kj.Joint("P", parent=0, **second)]


def _inertials(**changes) -> list:
    return [kj.Inertial(1.0, inertia=(0.1, 0.1, 0.1)), kj.Inertial(**{"mass": 2.0, "inertia": (0.2, 0.2, 0.2), **changes})]


BUILDERS = {
    "from_joints axis": (lambda v: kj.from_joints(_joints(axis=(v, 0.0, 1.0))), r"joint 1 \(joint2\) axis must be finite"),
    "from_joints rotation": (
        lambda v: kj.from_joints(_joints(rotation=[[1, 0, 0], [0, 1, 0], [0, 0, 4 * v]])),  # 0.25: the identity
        r"joint 1 \(joint2\) rotation must be finite",
    ),
    "from_joints translation": (
        lambda v: kj.from_joints(_joints(translation=(0.0, v, 0.5))),
        r"joint 1 \(joint2\) translation must be finite",
    ),
    "from_joints gravity": (lambda v: kj.from_joints(_joints(), gravity=(0.0, 0.0, v)), "gravity must be finite"),
    "Inertial mass": (lambda v: kj.from_joints(_joints(), _inertials(mass=v)), r"body 1 \(link2\) mass must be finite"),
    "Inertial com": (
        lambda v: kj.from_joints(_joints(), _inertials(com=(v, 0, 0))),
        r"body 1 \(link2\) centre of mass must be finite",
    ),
    "Inertial inertia": (
        lambda v: kj.from_joints(_joints(), _inertials(inertia=((0.2, 0.1 * v, 0), (0.1 * v, 0.2, 0), (0, 0, 0.2)))),
        r"body 1 \(link2\) inertia must be finite",
    ),
    "from_dh d": (lambda v: kj.from_dh([("R", 0.1, 0, 0.2, 0), ("P", v, 0, 0, 0)]), "D-H row 1 d must be finite"),
    "from_dh alpha": (lambda v: kj.from_dh([("R", 0.1, 0, 0.2, v), ("P", 0, 0, 0, 0)]), "D-H row 0 alpha must be finite"),
    "from_dh inertial": (
        lambda v: kj.from_dh([("R", 0.1, 0, 0.2, 0), ("P", 0, 0, 0, 0)], inertials=_inertials(com=(0, v, 0))),
        r"body 1 \(link2\) centre of mass must be finite",
    ),
    "from_function poses": (
        lambda v: kj.from_function(lambda q: (jnp.eye(3)[None], jnp.stack([q[0], v * q[0], 0.0])[None]), 1),
        "poses function returned non-finite values",
    ),
    "from_function gravity": (
        lambda v: kj.from_function(lambda q: (jnp.eye(3)[None], jnp.zeros((1, 3))), 1, gravity=(0, v, -9.81)),
        "gravity must be finite",
    ),
}


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("case", sorted(BUILDERS))
def test_builders_reject_non_finite_parameters(case, value):
    build, message = BUILDERS[case]
    build(0.25)  # the same call with a finite value builds
    with pytest.raises(ValueError, match=message):
        build(value)


@pytest.mark.parametrize("key", ["lower", "upper", "velocity", "effort"])
def test_limits_may_be_infinite_but_not_nan(key):
    unlimited = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}[key]
    model = kj.from_joints(_joints(**{key: unlimited}))
    assert getattr(model.limits, key)[1] == unlimited
    with pytest.raises(ValueError, match=rf"joint 1 \(joint2\) {key} limit must be a number"):
        kj.from_joints(_joints(**{key: np.nan}))


URDF = """<robot name="r">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="{com} 0 0"/><mass value="{mass}"/>
    <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 {xyz} 0.5" rpy="0 {rpy} 0"/><axis xyz="0 {axis} 1"/>
    <limit lower="{lower}" upper="1" effort="1" velocity="1"/></joint>
</robot>"""
URDF_VALUES = dict(com=0.1, mass=1.0, ixx=0.1, xyz=0.2, rpy=0.3, axis=0.0, lower=-1.0)
URDF_ELEMENTS = dict(com="origin", mass="mass", ixx="inertia", xyz="origin", rpy="origin", axis="axis")


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("field", sorted(URDF_ELEMENTS))
def test_load_urdf_rejects_non_finite_numbers(field, value):
    kj.load_urdf(URDF.format(**URDF_VALUES))
    with pytest.raises(kj.urdf.URDFError, match=rf"<{URDF_ELEMENTS[field]} .*(is not a number|is not finite)"):
        kj.load_urdf(URDF.format(**dict(URDF_VALUES, **{field: value})))


def test_load_urdf_rejects_a_nan_limit():
    with pytest.raises(kj.urdf.URDFError, match="limit lower='nan'"):
        kj.load_urdf(URDF.format(**dict(URDF_VALUES, lower=np.nan)))


MJCF = """<mujoco><worldbody><body name="arm" pos="{pos} 0 0.5"><joint name="j" type="hinge" axis="0 {axis} 1"/>
  <inertial pos="0.1 0 0" mass="{mass}" diaginertia="0.1 0.1 0.1"/></body></worldbody></mujoco>"""
MJCF_VALUES = dict(pos=0.2, axis=0.0, mass=1.0)


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("field", sorted(MJCF_VALUES))
def test_load_mjcf_rejects_non_finite_numbers(field, value):
    """MuJoCo compiles a NaN or inf position or axis (and refuses a NaN mass): either way an
    MJCFError, naming the joint or body, never a model with a non-finite number."""
    pytest.importorskip("mujoco")
    kj.load_mjcf(MJCF.format(**MJCF_VALUES))
    with pytest.raises(kj.mjcf.MJCFError, match=r"\(j\)|'arm'|\(arm\)"):
        kj.load_mjcf(MJCF.format(**dict(MJCF_VALUES, **{field: value})))


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_to_urdf_of_a_non_finite_model_does_not_load_back(value):
    """to_urdf writes what the model holds; a non-finite mass never becomes a finite one."""
    model = kj.load_urdf(URDF.format(**URDF_VALUES))
    bad = eqx.tree_at(lambda m: m.inertials.mass, model, model.inertials.mass.at[0].set(value))
    with pytest.raises(ValueError):
        kj.load_urdf(kj.to_urdf(bad))


# --------------------------------------------------------------------------------------------
# check_finite
# --------------------------------------------------------------------------------------------

_scaled = jit_once(lambda q, qd: 2.0 * kj.check_finite(q, "q") + kj.check_finite(qd, "qd"))


@pytest.mark.parametrize("value", [np.nan, np.inf], ids=repr)
def test_check_finite_raises_under_jit_naming_the_argument(value):
    q, qd = jnp.array([0.1, 0.2, 0.3]), jnp.array([0.4, 0.5, 0.6])
    np.testing.assert_array_equal(_scaled(q, qd), 2.0 * q + qd)  # returns its input
    with pytest.raises(RUNTIME_ERRORS, match=r"qd has a non-finite entry \(NaN or inf\)"):
        jax.block_until_ready(_scaled(q, qd.at[1].set(value)))
    with pytest.raises(RUNTIME_ERRORS, match=r"\bq has a non-finite entry"):
        jax.block_until_ready(_scaled(q.at[0].set(value), qd))


def test_check_finite_under_vmap_and_grad():
    qs = jnp.arange(6.0).reshape(3, 2)
    batched = jit_once(jax.vmap(lambda q: kj.check_finite(q, "q") ** 2))
    np.testing.assert_array_equal(batched(qs), qs**2)
    with pytest.raises(RUNTIME_ERRORS, match="q has a non-finite entry"):
        jax.block_until_ready(batched(qs.at[2, 1].set(np.nan)))  # one bad batch element
    grad = jit_once(jax.grad(lambda q: jnp.sum(kj.check_finite(q, "q") ** 3)))(qs[1])
    np.testing.assert_array_equal(grad, 3 * qs[1] ** 2)  # derivatives pass through


def test_check_finite_on_a_model_names_the_leaf_and_allows_unlimited_joints():
    x = _inputs()
    assert np.all(np.isinf(x["model"].limits.upper))  # unlimited
    checked = jit_once(lambda model: kj.check_finite(model, "model"))
    jax.tree.map(np.testing.assert_array_equal, checked(x["model"]), x["model"])  # returns its input
    bad = _set(x, ("", lambda x: x["model"].inertials.inertia, (1, 2, 2), None), np.inf)["model"]
    with pytest.raises(RUNTIME_ERRORS, match=r"model\.inertials\.inertia has a non-finite entry"):
        jax.block_until_ready(checked(bad))
    nan_limit = _set(x, ("", lambda x: x["model"].limits.lower, 0, None), np.nan)["model"]
    with pytest.raises(RUNTIME_ERRORS, match=r"model\.limits\.lower has a NaN entry"):
        jax.block_until_ready(checked(nan_limit))
    mixed = kj.check_finite({"dt": 0.01, "steps": 10, "name": "x"}, "options")  # eager; other leaves kept
    assert mixed["steps"] == 10 and mixed["name"] == "x" and float(mixed["dt"]) == 0.01
    with pytest.raises(RUNTIME_ERRORS, match=r"options\['dt'\] has a non-finite entry"):
        kj.check_finite({"dt": float("inf"), "steps": 10}, "options")


@pytest.mark.slow
def test_check_finite_wrapping_the_dynamics_as_documented():
    x = _inputs()

    @jit_once
    def qdd(model, q, qd, tau):
        return kj.forward_dynamics(
            kj.check_finite(model, "model"), kj.check_finite(q, "q"), kj.check_finite(qd, "qd"), kj.check_finite(tau, "tau")
        )

    args = (x["model"], x["q"], x["qd"], x["tau"])
    model = jax.tree.map(jnp.asarray, x["model"])  # a Model holds JAX arrays: jit converts NumPy leaves, eager calls do not
    np.testing.assert_allclose(
        qdd(*args),
        np.linalg.solve(kj.mass_matrix(model, x["q"]), x["tau"] - kj.inverse_dynamics(model, x["q"], x["qd"], 0 * x["q"])),
        rtol=1e-10,
    )
    with pytest.raises(RUNTIME_ERRORS, match="tau has a non-finite entry"):
        jax.block_until_ready(qdd(*args[:3], np.where(np.arange(3) == 0, np.nan, x["tau"])))


# --------------------------------------------------------------------------------------------
# Coverage: every public name of kronjax has a case here
# --------------------------------------------------------------------------------------------

# Public names covered by a test other than the propagation cases, and how
OTHER_COVERAGE = {
    "Inertial": "test_builders_reject_non_finite_parameters (checked by the builder it is given to)",
    "Joint": "test_builders_reject_non_finite_parameters (checked by the builder it is given to)",
    "from_joints": "test_builders_reject_non_finite_parameters, test_limits_may_be_infinite_but_not_nan",
    "from_dh": "test_builders_reject_non_finite_parameters",
    "from_function": "test_builders_reject_non_finite_parameters",
    "load_urdf": "test_load_urdf_rejects_non_finite_numbers",
    "load_mjcf": "test_load_mjcf_rejects_non_finite_numbers",
    "to_urdf": "test_to_urdf_of_a_non_finite_model_does_not_load_back",
    "Model": "the model-parameter slots of every propagation case (mass, inertia, com, placement, axis, gravity)",
    "Wrench": "the force and point slots of generalized_forces and forward_dynamics[wrenches]",
    "check_finite": "test_check_finite_*",
    "neutral": "takes no numbers (the model's structure only)",
    "random_configuration": "reads only a key and the model's limits, which JointLimits checks (test_limits_may_be_infinite_but_not_nan)",
}


def test_every_public_name_of_kronjax_has_a_case():
    public = {name for name in dir(kj) if not name.startswith("_") and not isinstance(getattr(kj, name), types.ModuleType)}
    missing = public - set(CASES) - set(OTHER_COVERAGE)
    assert not missing, f"public names without a non-finite case in tests/test_nonfinite.py: {sorted(missing)}"
    stale = (set(CASES) | set(OTHER_COVERAGE)) - public
    assert not stale, f"cases for names kronjax no longer exports: {sorted(stale)}"
