"""kronjax.constrained on models with free, spherical and planar joints (issue 15), float64.

``q`` has ``nq`` numbers, velocities ``nv``; ``Phi_q`` is taken along the tangent space, in the
chart ``delta -> q ⊕ delta`` (``kj.integrate``), and the drift ``gamma`` is the second derivative
of ``Phi(q ⊕ s v)`` in ``s`` (kronjax/constrained/__init__.py, module doc). Oracles:

* finite differences along the chart: ``Phi_q`` column by column, ``-(d/ds Phi_q(q ⊕ s v)) v``
  for ``gamma`` (the claim that the chart's Lie-bracket term drops out of ``d/dt (Phi_q v)``),
  and ``d^2/dt^2 Phi`` along ``q ⊕ (t v + t^2 vd / 2)`` (zero for the solved ``vd``);
* Pinocchio's ``constraintDynamics`` (``CONTACT_3D``, an independent implementation) on a small
  floating loop: a free trunk, a spherical shoulder and a revolute elbow whose forearm is pinned
  to the ground by a spherical joint;
* the three formulations against each other (Lagrange, Kane's null-space projection, Huang's step
  to first order in ``dt``) and the equations of motion (``kj.inverse_dynamics``);
* the Stewart platform of Huang (``stewart3``): its platform as one free joint (the default)
  against three slides and Euler angles (``platform="euler"``, 1-DoF joints; both checked
  against Huang's tables in ``tests/test_stewart3.py``): the same accelerations and leg forces
  at matching states. (A 0.1 s simulation of both, agreeing to 1e-10 with the constraints and
  energy kept, compiled for 105 s: left out to keep CI under 30 minutes; ``docs/tools/stewart3.py``
  runs the mechanism.)
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import constrained as kc
from kronjax._lie import rotation_to_quat
from kronjax.models.stewart3 import stewart3

N_STATES = 3
POINT = np.array([0.05, 0.02, -0.3])  # the pin on the forearm, in its frame


def random_inertial(rng, mass):
    a = rng.normal(size=(3, 3))
    return kj.Inertial(mass, rng.normal(size=3) * 0.1, a @ a.T * 0.05 + 0.02 * np.eye(3))


@pytest.fixture(scope="module")
def loop():
    """The floating loop, ``N_STATES`` consistent states (assembled by construction), torques, and
    the Lagrange solution with the residual of the equations of motion ``M qdd + h - tau - A^T
    lambda`` (by RNEA). Compile time dominates: one jitted function per check, called per state."""
    rng = np.random.default_rng(11)
    joints = [
        kj.Joint("free", name="trunk_joint", body_name="trunk"),
        kj.Joint("spherical", 0, translation=(0.3, 0.1, -0.1), name="shoulder", body_name="upper"),
        kj.Joint("R", 1, axis=(0.2, 1.0, 0.1), translation=(0.0, 0.05, -0.4), name="elbow", body_name="forearm"),
    ]
    inertials = [random_inertial(rng, m) for m in (4.0, 1.5, 0.8)]
    model = kj.from_joints(joints, inertials, gravity=(0.3, -0.2, -9.81))
    quats = rng.normal(size=(2, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    q_star = jnp.asarray(np.concatenate([rng.uniform(-0.5, 0.5, 3), quats[0], quats[1], [0.7]]))
    rot, org = jax.jit(lambda q: model.poses(q))(q_star)
    ground = np.asarray(org[2] + rot[2] @ POINT)  # the pin's point on the ground: assembled at q_star
    cons = kc.Constraints((kc.loop_closure(model, "forearm", POINT, "base", ground, "spherical"),))

    @jax.jit
    def prepare(delta, qd, tau):
        # assembled exactly: the trunk's position (q[:3], world frame) carries the pin rigidly, and
        # its linear velocity (qd[:3], trunk frame) moves the pin with the trunk's rotation
        q = kj.integrate(model, q_star, delta)
        rot, org = model.poses(q)
        q = q.at[:3].add(ground - org[2] - rot[2] @ POINT)
        qd = qd.at[:3].add(-rot[0].T @ cons.velocity_residual(q, qd))
        sol = kc.solve(model, cons, q, qd, tau)
        eom = kj.inverse_dynamics(model, q, qd, sol.vd) - tau - sol.generalized_force
        drift = jnp.maximum(jnp.max(jnp.abs(cons.residual(q))), jnp.max(jnp.abs(cons.velocity_residual(q, qd))))
        return q, qd, sol.vd, sol.forces, eom, drift

    taus = jnp.asarray(rng.normal(size=(N_STATES, model.nv)) * 3.0)
    deltas, qds = (jnp.asarray(rng.normal(size=(N_STATES, model.nv)) * x) for x in (0.2, 1.0))
    q, qd, qdd, forces, eom, drift = (jnp.stack(x) for x in zip(*map(prepare, deltas, qds, taus)))
    return {
        "model": model,
        "cons": cons,
        "ground": ground,
        "q": q,
        "qd": qd,
        "tau": taus,
        "qdd": qdd,
        "forces": forces,
        "eom": eom,
        "drift": drift,
    }


@pytest.mark.slow  # the loop fixture's constrained solve compiles for 11 s
def test_states_and_shapes(loop):
    model, cons = loop["model"], loop["cons"]
    assert (model.nq, model.nv, cons.nq, cons.nv, cons.n_equations) == (12, 10, 12, 10, 3)
    q, qd = loop["q"], loop["qd"]
    assert q.shape == (N_STATES, 12) and qd.shape == (N_STATES, 10) and loop["qdd"].shape == (N_STATES, 10)
    assert float(jnp.max(loop["drift"])) < 1e-13  # max |Phi(q)| and |Phi_q qd|


@pytest.mark.slow  # the loop fixture's constrained solve compiles for 11 s
@pytest.mark.usefixtures("without_shape_checks")
def test_bad_inputs_name_nq_and_nv(loop):
    model, cons = loop["model"], loop["cons"]
    q, qd = loop["q"][0], loop["qd"][0]
    euclidean = kc.holonomic(lambda q: q[:2], model.nv)  # written for 10 Euclidean coordinates
    with pytest.raises(ValueError, match="configurations q of 10 numbers for a model with nq = 12"):
        kc.check_state(model, euclidean, q)
    on_model = kc.holonomic(lambda q: q[:2], model)
    assert (on_model.nq, on_model.nv) == (12, 10)
    with pytest.raises(ValueError, match="different configuration spaces"):
        kc.Constraints((euclidean, on_model))
    with pytest.raises(ValueError, match=r"q must have shape \(12,\)"):
        kc.solve(model, cons, q[:10], qd, qd)
    with pytest.raises(ValueError, match=r"v must have shape \(10,\)"):
        kc.solve(model, cons, q, q, qd)
    with pytest.raises(ValueError, match=r"q0 must have shape \(12,\)"):
        kc.Mechanism(model, cons, jnp.zeros(10))
    with pytest.raises(ValueError, match="quaternion of free joint 'trunk_joint' has norm"):
        kc.solve(model, cons, q.at[3:7].multiply(1.1), qd, qd)


@pytest.mark.slow  # the Newton iterations compile as much as a solve
def test_projection_on_the_manifold(loop):
    """``project`` from perturbed states (Gauss-Newton steps ``q ⊕ -Phi_q^+ Phi``) lands on the
    constraints with unit quaternions; a consistent state is left as it is."""
    model, cons = loop["model"], loop["cons"]
    rng = np.random.default_rng(4)

    @jax.jit
    @jax.vmap
    def run(q, qd, delta, dv):
        fixed = kc.project(model, cons, q, qd)
        q1, qd1 = kc.project(model, cons, kj.integrate(model, q, delta), qd + dv, iterations=12)
        drift = jnp.maximum(jnp.max(jnp.abs(cons.residual(q1))), jnp.max(jnp.abs(cons.velocity_residual(q1, qd1))))
        return fixed, q1, drift

    deltas, dvs = (jnp.asarray(rng.normal(size=(N_STATES, model.nv)) * x) for x in (0.2, 1.0))
    (q0, qd0), q1, drift = run(loop["q"], loop["qd"], deltas, dvs)
    np.testing.assert_allclose(q0, loop["q"], atol=1e-14)
    np.testing.assert_allclose(qd0, loop["qd"], atol=1e-13)
    assert float(jnp.max(drift)) < 1e-13
    assert float(jnp.max(jnp.abs(q1 - loop["q"]))) > 0.01  # it went somewhere else on the manifold
    for block in (slice(3, 7), slice(7, 11)):
        np.testing.assert_allclose(jnp.linalg.norm(q1[:, block], axis=1), 1.0, atol=1e-15)


@pytest.mark.slow  # the loop fixture's constrained solve compiles for 11 s
def test_jacobian_and_drift_are_derivatives_along_the_chart(loop):
    """``Phi_q[:, k] = d/de Phi(q ⊕ e e_k)``; ``gamma = -(d/ds Phi_q(q ⊕ s v)) v`` (central
    differences of the Jacobian: the Lie-bracket term is absent); ``Phi_qq (v ⊗ v) = -gamma``; and
    the solved ``vd`` makes ``d^2/dt^2 Phi(q ⊕ (t v + t^2 vd / 2))`` vanish at ``t = 0``
    (``Phi(q) = 0``: a central second difference)."""
    model, cons = loop["model"], loop["cons"]
    at = lambda q, d: kj.integrate(model, q, d)

    @jax.jit
    def checks(q, qd, qdd):
        h1, h2, h3 = 1e-6, 1e-5, 1e-4
        signs = jnp.array([1.0, -1.0])
        # one vmapped evaluation per quantity (few compiled copies): columns, then the two signs
        pairs = jax.vmap(lambda e: jax.vmap(lambda s: cons.residual(at(q, s * h1 * e)))(signs))(jnp.eye(model.nv))
        fd = (pairs[:, 0] - pairs[:, 1]).T / (2 * h1)
        jacs = jax.vmap(lambda s: cons.jacobian(at(q, s * h2 * qd)))(signs)
        second = jnp.sum(jax.vmap(lambda s: cons.residual(at(q, s * h3 * qd + h3**2 / 2 * qdd)))(signs), axis=0) / h3**2
        drift = -(jacs[0] - jacs[1]) @ qd / (2 * h2)
        return {"jac": cons.jacobian(q), "fd": fd, "gamma": cons.bias(q, qd), "drift": drift, "second": second}

    runs = [checks(*state) for state in zip(loop["q"], loop["qd"], loop["qdd"])]
    out = {k: np.stack([run[k] for run in runs]) for k in runs[0]}
    assert out["jac"].shape == (N_STATES, 3, model.nv)
    np.testing.assert_allclose(out["jac"], out["fd"], atol=1e-9)
    gamma = out["gamma"]
    assert np.min(np.max(np.abs(gamma), axis=1)) > 0.1  # not vacuous
    np.testing.assert_allclose(out["drift"], gamma, atol=1e-8)
    # O(h3^2) (measured 1.2e-6 for |gamma| ~ 1-10); a drift term off by O(1) would leave O(1)
    assert np.max(np.abs(out["second"])) < 1e-5, out["second"]


@pytest.mark.slow  # the loop fixture's constrained solve compiles for 11 s
def test_equations_of_motion_by_rnea(loop):
    """``M qdd + h(q, v) = tau + A^T lambda`` (kj.inverse_dynamics) at the Lagrange solution."""
    assert float(jnp.max(jnp.abs(loop["eom"]))) < 1e-11 * float(jnp.max(jnp.abs(loop["tau"])))


@pytest.mark.slow  # three more formulations: compile-bound
def test_formulations_agree(loop):
    """Kane's projection (orthonormal basis, and coordinate partitioning with the trunk's linear
    velocity dependent: its columns are the trunk's rotation, never singular) gives Lagrange's ``qdd``
    and multipliers; Huang's constant acceleration over a step tends to the instantaneous one as
    ``O(dt)``; ``Phi_qq (v ⊗ v) = -gamma`` (Khang's layout along the tangent space)."""
    model, cons = loop["model"], loop["cons"]

    @jax.jit
    @jax.vmap
    def formulations(q, qd, tau):
        kane = kc.solve(model, cons, q, qd, tau, "nullspace")
        partition = kc.solve(model, cons, q, qd, tau, "nullspace", independent=(3, 4, 5, 6, 7, 8, 9))
        huang = jax.vmap(lambda dt: kc.solve(model, cons, q, qd, tau, "huang", dt=dt).vd)(jnp.array([1e-3, 5e-4]))
        hess_error = cons.hessian(q) @ jnp.kron(qd, qd) + cons.bias(q, qd)
        return kane.vd, kane.forces, partition.vd, partition.forces, huang, hess_error

    kane_qdd, kane_forces, part_qdd, part_forces, huang, hess_error = formulations(loop["q"], loop["qd"], loop["tau"])
    assert cons.hessian(loop["q"][0]).shape == (3, model.nv**2)
    assert float(jnp.max(jnp.abs(hess_error))) < 1e-12
    qdd, forces = loop["qdd"], loop["forces"]
    scale, force_scale = float(jnp.max(jnp.abs(qdd))), float(jnp.max(jnp.abs(forces)))
    for got_qdd, got_forces in ((kane_qdd, kane_forces), (part_qdd, part_forces)):
        np.testing.assert_allclose(got_qdd, qdd, atol=1e-11 * scale)
        np.testing.assert_allclose(got_forces, forces, atol=1e-10 * force_scale)
    errors = np.max(np.abs(np.asarray(huang) - np.asarray(qdd)[:, None]), axis=2)  # (N_STATES, 2 steps)
    assert np.max(errors) < 0.05 * scale, errors
    assert np.all((1.6 < errors[:, 0] / errors[:, 1]) & (errors[:, 0] / errors[:, 1] < 2.5)), errors


@pytest.mark.slow  # the loop fixture's constrained solve compiles for 11 s
def test_floating_loop_against_pinocchio_constraint_dynamics(loop):
    """``qdd`` and the force on the forearm (base frame) against Pinocchio's constrained dynamics,
    ``CONTACT_3D`` between the forearm's joint (pin at ``POINT``) and the universe (pin at the
    ground point), ``LOCAL_WORLD_ALIGNED``: there ``lambda_c`` is kronjax's ``lambda``."""
    pin = pytest.importorskip("pinocchio")
    from oracles import to_pinocchio

    model = loop["model"]
    pm = to_pinocchio(model)  # Pinocchio joint i + 1 moves kronjax body i; free-flyer conventions are kronjax's
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D, pm, 3, pin.SE3(np.eye(3), POINT), 0, pin.SE3(np.eye(3), loop["ground"]), world
    )
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, models, datas)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)  # mu = 0: the exact KKT solution
    for k in range(N_STATES):
        q, qd, tau = (np.asarray(loop[name][k], float) for name in ("q", "qd", "tau"))
        qdd = pin.constraintDynamics(pm, data, q, qd, tau, models, datas, settings)
        np.testing.assert_allclose(loop["qdd"][k], qdd, atol=1e-9 * np.max(np.abs(qdd)))
        np.testing.assert_allclose(loop["forces"][k], data.lambda_c, atol=1e-9 * np.max(np.abs(data.lambda_c)))


# ---------------------------------------------------------------------------------------------
# The Stewart platform of Huang with a free platform
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stewart():
    return stewart3(platform="euler"), stewart3()  # the default: the free platform


def free_state(euler, q, qd):
    """The free model's ``(q, v)`` of the Euler model's state: the platform's mass-centre offset,
    orientation quaternion, and linear and angular velocity in its own frame."""
    body = euler.model.body_index("L7")
    (rot, org), (drot, dorg) = jax.jvp(euler.model.poses, (q,), (qd,))
    r = rot[body]
    w = r.T @ drot[body]
    v = jnp.concatenate([qd[:6], r.T @ dorg[body], jnp.stack([w[2, 1], w[0, 2], w[1, 0]])])
    return jnp.concatenate([q[:6], org[body] - jnp.array([0.0, 0.0, 0.71]), rotation_to_quat(r)]), v


def test_free_platform_structure(stewart):
    euler, free = stewart
    model = free.model
    assert (model.nq, model.nv, free.mobility, free.constraints.n_equations) == (13, 12, 3, 9)
    assert model.joint_names == ("J7", "J8", "J9", "J4", "J5", "J6", "platform")
    np.testing.assert_array_equal(free.q0, np.r_[np.zeros(12), 1.0])
    body = model.body_index("L7")
    for m in (euler, free):
        assert float(jnp.max(jnp.abs(m.constraints.residual(m.q0)))) < 1e-15
    for got, expected in zip(model.poses(free.q0), euler.model.poses(euler.q0)):
        np.testing.assert_allclose(got[:6], expected[:6], atol=1e-15)
        np.testing.assert_allclose(got[6], expected[euler.model.body_index("L7")], atol=1e-15)
    np.testing.assert_allclose(model.inertials.inertia[body], euler.model.inertials.inertia[-1], atol=0)
    # at q0 the platform's frame is the world's: its body-frame velocity columns are the Euler
    # model's slides (x, y, z) and, reversed, its Z-Y-X angles (roll about x, pitch y, yaw z)
    jac_free, jac_euler = (np.asarray(jax.jit(lambda q, m=m: m.constraints.jacobian(q))(m.q0)) for m in (free, euler))
    np.testing.assert_allclose(jac_free, jac_euler[:, [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 10, 9]], atol=1e-15)
    with pytest.raises(ValueError, match="platform must be one of"):
        stewart3(platform="quaternion")


@pytest.mark.extended  # test_formulations_agree
@pytest.mark.slow  # two models' constrained solves: compile-bound
def test_free_and_euler_platforms_agree_at_matching_states(stewart):
    """At states off ``q0`` (tilted, moving), the accelerations of the legs and motors, the
    platform's acceleration and the leg forces at J1-J3 (``lambda``, base frame) agree to
    round-off, for Lagrange and Kane's projection. (Huang's step approximates them to ``O(dt)``
    with a chart-dependent error; it is compared on the floating loop above.)"""
    euler, free = stewart
    rng = np.random.default_rng(5)
    tau = jnp.zeros(12).at[:3].set(jnp.array([10.0, -4.0, 7.0]))

    @jax.jit
    def compare(guess, qd_guess):
        q, qd = kc.project(euler.model, euler.constraints, guess, qd_guess, iterations=12)
        qf, vf = free_state(euler, q, qd)
        gaps = []
        for method in ("lagrange", "nullspace"):
            se = kc.solve(euler.model, euler.constraints, q, qd, tau, method)
            sf = kc.solve(free.model, free.constraints, qf, vf, tau, method)
            # the platform's body-frame acceleration: d/dt of free_state's v along the Euler motion
            platform = jax.jvp(lambda q, v: free_state(euler, q, v)[1], (q, qd), (qd, se.vd))[1]
            gaps += [sf.vd[6:] - platform[6:], sf.vd[:6] - se.vd[:6], sf.forces - se.forces]
        return [jnp.max(jnp.abs(g)) for g in gaps], jnp.max(jnp.abs(q[9:]))

    for turn in ((0.4, -0.3, 0.35), (-0.5, 0.25, -0.3)):  # yaw, pitch, roll of the guesses
        guess = np.r_[rng.normal(size=9) * 0.1, turn]
        gaps, tilt = compare(guess, rng.normal(size=12))
        assert float(tilt) > 0.1  # the platform is turned: the charts differ
        assert max(float(g) for g in gaps) < 1e-10, gaps
