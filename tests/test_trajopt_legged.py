"""Motions planned on contacts (``kronjax.trajopt.optimize_on_contacts``), against first principles
and an independent simulation:

- the KKT route's derivatives of the contact dynamics against ``jax.jacfwd`` of the dynamics;
- the planner's Newton model (its linearisation at every node) against ``jax.jacfwd`` of the
  values its line search evaluates, with a point contact and a flat foot;
- the interior point with the Riccati step on a linear-quadratic regulator against a dense
  least-squares solve;
- ANYmal trotting 0.15 m forward (slow tier): the plan converges (violation <= 1e-6); its nodes
  satisfy kronjax's equations of motion written with the inverse dynamics (not the forward
  dynamics the planner steps with) and the semi-implicit Euler step written with
  ``kj.integrate``; every active contact's force is inside its friction pyramid and every torque
  within its limit, with the margins stated; the stance feet stay where they touched down; the
  simulation of :func:`~kronjax.trajopt.validate` under the plan's torques and a PD term stays
  within 2 cm; other phase durations of the same total re-solve without compiling; a warm start
  from its own solution stops at once; in float32 the same gait converges (violation <= 1e-4)
  within 1 mm of the float64 plan's base path, and its float32 simulation stays within 2 cm;
- the Unitree G1 taking a step on its flat feet (slow tier): the plan converges, every sole's
  wrench inside its contact wrench cone and its centre of pressure on the sole, the foot lands
  ahead and flat, and its simulation with a PD term stays within 2 cm;
- bad input gets clear errors before anything compiles.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import trajopt
from kronjax.trajopt._contact_dynamics import (
    contact_jacobian,
    damped_contact_dynamics,
    damped_contact_dynamics_derivatives,
    row_mask,
)
from kronjax.trajopt._riccati import CONVERGED, Iterate, StageLinearisation, StageValues, solve

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)


def _box_on_a_leg():
    robot = kj.from_joints(
        [kj.Joint("free"), kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(0, 0, -0.1))],
        [kj.Inertial(mass=2.0, inertia=(0.1, 0.2, 0.3)), kj.Inertial(mass=0.5, com=(0, 0, -0.2), inertia=(0.01, 0.01, 0.001))],
    )
    foot = trajopt.Contact("foot", 1, point=(0.0, 0.0, -0.4), friction=0.8)
    return robot, foot


def test_contact_dynamics_derivatives_match_autodiff():
    """``(dq, dv, du)`` derivatives of the accelerations and forces (Baumgarte's velocity term
    included) by the KKT route, against ``jax.jacfwd`` through the dynamics themselves."""
    robot, foot = _box_on_a_leg()
    corner = trajopt.Contact("corner", 0, point=(0.1, 0.1, -0.1))  # inactive: its rows masked out
    schedule = trajopt.ContactSchedule([foot, corner], [(0.1, ("foot",))])
    bodies = schedule.bodies(robot)
    q = kj.integrate(robot, kj.neutral(robot), jnp.array([0.1, -0.2, 0.3, 0.2, -0.1, 0.4, 0.5]))
    v = jnp.array([0.3, -0.1, 0.2, 1.0, -0.5, 0.7, 2.0])
    actuation = jnp.eye(7)[:, 6:]
    rows = row_mask(schedule, jnp.array([True, False]))
    damping = 100.0
    derivatives = damped_contact_dynamics_derivatives(
        robot, schedule, bodies, q, v, jnp.zeros(7).at[6].set(1.5), rows, damping, actuation
    )
    d_vd, d_forces = derivatives.d_vd, derivatives.d_forces

    def dynamics(d):
        x = kj.integrate(robot, q, d[:7])
        return damped_contact_dynamics(
            robot, schedule, bodies, x, v + d[7:14], actuation @ (jnp.array([1.5]) + d[14:]), rows, damping
        )

    vd_auto, forces_auto = jax.jacfwd(dynamics)(jnp.zeros(15))
    np.testing.assert_allclose(d_vd, vd_auto, atol=1e-9 * float(jnp.max(jnp.abs(vd_auto))))
    np.testing.assert_allclose(d_forces, forces_auto, atol=1e-9 * float(jnp.max(jnp.abs(forces_auto))))
    assert float(jnp.max(jnp.abs(d_forces[3:]))) == 0.0  # the inactive contact's force stays 0

    velocity = jax.jacfwd(lambda d: contact_jacobian(robot, schedule, bodies, kj.integrate(robot, q, d)) @ v)(jnp.zeros(7))
    np.testing.assert_allclose(derivatives.velocity_q, velocity, atol=1e-12 * float(jnp.max(jnp.abs(velocity))))


@pytest.mark.parametrize("heel", ["point", "6d"])
def test_linearisation_matches_autodiff_of_the_values_it_steps_to(heel):
    """The planner's Newton model (the KKT route's dynamics derivatives, and the costs' and
    constraints' Jacobians built from the contact Jacobians of that pass) against ``jax.jacfwd``
    of the values its line search evaluates at the moved point (``shoot``), node by node, the
    values themselves too: the box on a leg with a foot and a heel on different bodies, rolled out
    under torques so that the gaps are 0, through lift-offs and touchdowns (whose impacts the
    landing cost reads) where one contact holds while the other swings, to the last node. The heel
    is a point, or a flat sole (``"6d"``: its wrench cone in the sole's turning frame, its corners'
    heights and landing speeds)."""
    import equinox as eqx

    from kronjax.trajopt._legged import _problem

    robot, foot = _box_on_a_leg()
    if heel == "point":
        heel = trajopt.Contact("heel", 0, point=(0.1, 0.05, -0.1), friction=0.6)
        phases = [(0.1, ("foot",)), (0.1, ("heel",)), (0.1, ("foot", "heel")), (0.1, ("foot",))]
    else:  # a sole and a foot (9 rows) would over-constrain the box's 7 coordinates
        heel = trajopt.Contact("heel", 0, point=(0.1, 0.05, -0.1), friction=0.6, kind="6d", size=(0.12, 0.08))
        phases = [(0.1, ("foot",)), (0.1, ("heel",)), (0.1, ("foot",)), (0.1, ("heel",))]
    schedule = trajopt.ContactSchedule([foot, heel], phases)
    q0 = kj.integrate(robot, kj.neutral(robot), jnp.array([0.0, 0.0, 0.0, 0.05, -0.1, 0.02, 0.1]))
    v0 = jnp.array([0.2, -0.1, 0.4, 0.3, 0.5, -0.2, 1.0])
    cost = trajopt.ContactCost(displacement=(0.1, 0.05, 0.0), turn=0.3)
    problem = _problem(robot, schedule, q0, v0, cost, 0.05, 1e-3)
    nodes = problem.node_data()
    us = jnp.array([[3.0], [-2.0], [1.0], [4.0], [-1.0], [0.5], [2.0], [-3.0], [0.0]])

    def roll(x, node):
        q1, v1, _, _ = problem.step(x[:8], x[8:], *node)
        return jnp.concatenate([q1, v1]), x

    last, xs = jax.lax.scan(roll, problem.x0, (us[:-1], nodes.active[:-1]))
    xs = jnp.concatenate([xs, last[None]])
    lin, _ = eqx.filter_jit(lambda p, xs, us: p.linearise(xs, us))(problem, xs, us)
    touchdowns = np.asarray(nodes.active & ~nodes.previous)
    assert touchdowns[:, 0].any() and touchdowns[:, 1].any()  # each contact touches down at some node

    @jax.jit
    def autodiff(k):
        def values(dx, du):
            moved = problem.shoot(xs, us, jnp.zeros((len(xs), 14)).at[k].set(dx), jnp.zeros_like(us).at[k].set(du), 1.0)
            gaps = jnp.concatenate([moved[2].gap, jnp.zeros((1, 14))])  # the last node has no gap
            return moved[2].r[k], moved[2].c[k], gaps[k]

        return values(jnp.zeros(14), jnp.zeros(1)), jax.jacfwd(values, argnums=(0, 1))(jnp.zeros(14), jnp.zeros(1))

    def close(mine, auto):
        np.testing.assert_allclose(mine, auto, rtol=0, atol=1e-9 * (1.0 + float(jnp.max(jnp.abs(auto)))))

    for k in range(problem.nodes + 1):
        (r, c, gap), ((r_x, r_u), (c_x, c_u), (f_x, f_u)) = autodiff(k)
        for mine, auto in ((lin.r, r), (lin.c, c), (lin.r_x, r_x), (lin.r_u, r_u), (lin.c_x, c_x), (lin.c_u, c_u)):
            close(mine[k], auto)
        if k < problem.nodes:
            close(lin.f_x[k], f_x)
            close(lin.f_u[k], f_u)
        np.testing.assert_allclose(lin.gap[k], 0.0, atol=1e-12)
        np.testing.assert_allclose(gap, 0.0, atol=1e-12)


class _LinearQuadratic:
    """``x_{k+1} = A x_k + B u_k`` from ``x_0``, cost ``1/2 sum |x_k - target|^2 + |0.3 u_k|^2``,
    the bound ``u <= 10`` (never active): the interior point's solution is the linear-quadratic
    regulator's, which a dense least-squares solve gives independently."""

    a = jnp.array([[1.0, 0.1], [-0.2, 0.9]])
    b = jnp.array([[0.0], [0.1]])
    target = jnp.array([1.0, 0.0])

    def _values(self, xs, us):
        r = jnp.concatenate([xs - self.target, 0.3 * us], axis=1)
        gap = xs[:-1] @ self.a.T + us[:-1] @ self.b.T - xs[1:]
        return r, us - 10.0, gap

    def linearise(self, xs, us):
        r, c, gap = self._values(xs, us)
        s = xs.shape[0]
        r_x = jnp.broadcast_to(jnp.concatenate([jnp.eye(2), jnp.zeros((1, 2))]), (s, 3, 2))
        r_u = jnp.broadcast_to(jnp.array([[0.0], [0.0], [0.3]]), (s, 3, 1))
        lin = StageLinearisation(
            r,
            r_x,
            r_u,
            c,
            jnp.zeros((s, 1, 2)),
            jnp.ones((s, 1, 1)),
            jnp.concatenate([gap, jnp.zeros((1, 2))]),
            jnp.broadcast_to(self.a, (s, 2, 2)),
            jnp.broadcast_to(self.b, (s, 2, 1)),
        )
        return lin, ()

    def shoot(self, xs, us, dxs, dus, alpha):
        xs, us = xs + alpha * dxs, us + alpha * dus
        return xs, us, StageValues(*self._values(xs, us))


def test_riccati_interior_point_solves_a_linear_quadratic_regulator():
    stages, x0 = 6, jnp.array([0.0, 0.5])
    problem = _LinearQuadratic()
    zero = jnp.asarray(0.0)
    start = Iterate(
        jnp.tile(x0, (stages, 1)),
        jnp.zeros((stages, 1)),
        jnp.ones((stages, 1)),
        jnp.ones((stages, 1)),
        jnp.asarray(0.01),
        zero,
        jnp.asarray(1.0),
        (),
        jnp.asarray(0),
        jnp.asarray(0),
        zero,
        zero,
        zero,
    )
    it = jax.jit(lambda it: solve(problem, it, jnp.asarray(True), tol=1e-10, violation_tol=1e-10, max_iterations=50))(start)
    assert int(it.status) == CONVERGED
    # the oracle: x_k = A^k x0 + sum_j A^(k-1-j) B u_j, the costs a linear least squares in u
    a, b = np.asarray(problem.a), np.asarray(problem.b)
    rows, rhs = [], []
    for k in range(stages):
        reach = np.zeros((2, stages - 1))
        for j in range(k):
            reach[:, j] = (np.linalg.matrix_power(a, k - 1 - j) @ b)[:, 0]
        rows.append(reach)
        rhs.append(np.asarray(problem.target) - np.linalg.matrix_power(a, k) @ np.asarray(x0))
    rows.append(0.3 * np.eye(stages - 1))
    rhs.append(np.zeros(stages - 1))
    u = np.linalg.lstsq(np.concatenate(rows), np.concatenate(rhs), rcond=None)[0]
    np.testing.assert_allclose(np.asarray(it.us[:-1, 0]), u, atol=1e-7)
    np.testing.assert_allclose(np.asarray(it.xs[1]), np.asarray(problem.a @ x0 + problem.b[:, 0] * u[0]), atol=1e-7)


def test_bad_input_gets_clear_errors():
    robot, foot = _box_on_a_leg()
    q0 = kj.neutral(robot)
    stand = trajopt.ContactSchedule([foot], [(0.1, ("foot",))])
    airborne = trajopt.ContactSchedule([foot], [(0.1, ()), (0.1, ("foot",))])
    with pytest.raises(ValueError, match="start in the air"):
        trajopt.optimize_on_contacts(robot, airborne, q0)
    with pytest.raises(ValueError, match="whole number of dt"):
        trajopt.optimize_on_contacts(robot, trajopt.ContactSchedule([foot], [(0.105, ("foot",))]), q0)
    with pytest.raises(ValueError, match="contact 'toe'"):
        trajopt.optimize_on_contacts(robot, trajopt.ContactSchedule([trajopt.Contact("toe", "shin")], [(0.1, ("toe",))]), q0)
    with pytest.raises(ValueError, match="friction"):
        trajopt.Contact("foot", 1, friction=-0.5)
    # two points of one rigid body already are redundant (6 rows, rank 5: their distance is fixed)
    corners = [trajopt.Contact(f"c{k}", 0, point=(sx * 0.1, 0.1, -0.1)) for k, sx in enumerate([1, -1])]
    with pytest.raises(ValueError, match="rank 5 .* redundant contacts"):
        trajopt.optimize_on_contacts(robot, trajopt.ContactSchedule(corners, [(0.1, ("c0", "c1"))]), q0)
    unsized = trajopt.Contact("sole", 1, point=(0.0, 0.0, -0.4), kind="6d")
    with pytest.raises(ValueError, match=r"flat feet \['sole'\] need their sole's size"):
        trajopt.optimize_on_contacts(robot, trajopt.ContactSchedule([unsized], [(0.1, ("sole",))]), q0)
    tilted = trajopt.Contact("sole", 1, point=(0.0, 0.0, -0.4), kind="6d", size=(0.2, 0.1))
    tilted_q0 = q0.at[-1].set(0.3)  # the leg's joint turns the sole off the ground's plane
    with pytest.raises(ValueError, match=r"sole's corners\) are at heights"):
        trajopt.optimize_on_contacts(robot, trajopt.ContactSchedule([tilted], [(0.1, ("sole",))]), tilted_q0)
    two = trajopt.ContactSchedule([foot, trajopt.Contact("heel", 0, point=(0.0, 0.0, 0.3))], [(0.1, ("foot", "heel"))])
    with pytest.raises(ValueError, match="the ground is flat"):
        trajopt.optimize_on_contacts(robot, two, q0)
    import equinox as eqx

    unlimited = kj.chain.JointLimits.unlimited(7)
    limits = eqx.tree_at(lambda lim: lim.effort, unlimited, unlimited.effort.at[6].set(0.0))
    passive = eqx.tree_at(lambda m: m.limits, robot, limits, is_leaf=lambda x: x is None)
    with pytest.raises(ValueError, match="effort limit 0"):
        trajopt.optimize_on_contacts(passive, stand, q0)
    with pytest.raises(ValueError, match="Gauss-Newton"):
        trajopt.optimize_on_contacts(robot, stand, q0, solver=trajopt.InteriorPoint(hessian="exact"))


def _data(name):
    from pathlib import Path

    return Path(__file__).resolve().parent / "data" / name


@pytest.mark.slow  # compiles the planner for ANYmal's 56 nodes (about a minute)
def test_anymal_trots_forward():
    from zoo import zoo_files

    if "anymal_b_simple_description/robots/anymal.urdf" not in zoo_files():
        pytest.skip("example-robot-data is not installed")
    from bench.legged_plans import plan_from_file

    model, croc, croc_plan = plan_from_file(str(_data("crocoddyl_anymal_trot.npz")))
    q0 = croc_plan.q[0]  # ANYmal B standing (the "standing" posture of its SRDF)
    lf, rf, lh, rh = croc.names
    phases = [(0.02, croc.names), (0.25, (rf, lh)), (0.02, croc.names), (0.25, (lf, rh)), (0.02, croc.names)]
    schedule = trajopt.ContactSchedule(croc.contacts, phases)
    cost = trajopt.ContactCost(displacement=(0.15, 0.0, 0.0), clearance=0.1)
    result = trajopt.optimize_on_contacts(model, schedule, q0, cost)
    report, plan = result.report, result.plan
    assert report.converged and report.violation <= 1e-6, report
    dt = 0.01
    # the semi-implicit Euler step, written with kj.integrate, holds at every node to the violation
    # (the gaps of the multiple shooting: at most 1e-6 in the tangent space)
    for k in range(len(plan.ts) - 1):
        np.testing.assert_allclose(plan.v[k + 1], plan.v[k] + dt * plan.vd[k], rtol=0, atol=1e-6)
        np.testing.assert_allclose(plan.q[k + 1], kj.integrate(model, plan.q[k], dt * plan.v[k + 1]), rtol=0, atol=1e-6)
    base = plan.q[-1, :3] - plan.q[0, :3]
    assert abs(float(base[0]) - 0.15) < 0.01 and abs(float(base[1])) < 0.01, base
    # the forces: inside the friction pyramid of every active contact, 0 on the others
    active = np.asarray(jax.vmap(schedule.active_at)(plan.ts + 0.5 * dt))[:-1]
    forces = np.asarray(plan.forces).reshape(len(plan.ts), 4, 3)[:-1]
    weight = float(jnp.sum(model.inertials.mass)) * 9.81
    margin = 0.7 * forces[..., 2] - np.abs(forces[..., 0]) - np.abs(forces[..., 1])
    assert np.all(margin[active] >= -1e-6 * weight), margin[active].min()
    assert np.all(np.abs(forces[~active]) < 1e-9)
    torques = np.abs(np.asarray(plan.tau)[:, 6:])
    assert np.all(torques <= 80.0 * (1 + 1e-6)), torques.max()
    # an independent simulation along the schedule (equations of motion by the inverse dynamics)
    validation = trajopt.validate(model, schedule, plan, kp=50.0, kd=2.0, hold=True)
    assert validation.plan_dynamics_residual < 1e-8, validation.plan_dynamics_residual
    assert validation.plan_stance_violation < 2e-3, validation.plan_stance_violation
    assert validation.base_drift < 0.02, validation.base_drift
    assert validation.plan_cone_margin > -1e-6 * weight and validation.plan_normal_force > 0
    print(
        f"trot: {report.iterations} iterations, pyramid margin {np.min(margin[active]):.3g} N, base drift {validation.base_drift:.3g} m"
    )
    # other durations, the same total: the same compiled program, and it converges
    other = schedule.with_durations([0.03, 0.24, 0.02, 0.24, 0.03])
    again = trajopt.optimize_on_contacts(model, other, q0, cost)
    assert again.report.compile_time == 0.0 and again.report.converged, again.report
    # a warm start from its own solution: the same program, converged at once
    warm = trajopt.optimize_on_contacts(model, schedule, q0, cost, init=result)
    assert warm.report.compile_time == 0.0 and warm.report.converged and warm.report.iterations <= 2, warm.report
    # float32: the same gait to single precision (its default violation_tol 1e-4: the dynamics'
    # gaps stall near 1e-5), within 1 mm of the float64 plan's base path; simulated in float32
    single = trajopt.optimize_on_contacts(model, schedule, jnp.asarray(q0, jnp.float32), cost)
    assert single.report.converged and single.report.violation <= 1e-4, single.report
    assert single.plan.q.dtype == jnp.float32 and abs(single.report.cost - report.cost) <= 0.02 * report.cost
    np.testing.assert_allclose(single.plan.q[:, :3], plan.q[:, :3], rtol=0, atol=1e-3)
    validation = trajopt.validate(model.astype(jnp.float32), schedule, single.plan, kp=50.0, kd=2.0, hold=True)
    assert validation.base_drift < 0.02 and validation.plan_cone_margin > -1e-4 * weight, validation
    assert validation.plan_dynamics_residual < 1e-3 * weight, validation.plan_dynamics_residual


@pytest.mark.slow  # compiles the planner for the G1's 50 nodes (about a minute and a half)
def test_humanoid_takes_a_step_on_flat_feet():
    """The Unitree G1 (nv = 35) on its two flat feet (``"6d"`` contacts,
    ``bench.legged_trajopt.step_problem``) shifting its weight and taking a step with its left foot,
    the base 5 cm forward: the plan converges (violation <= 1e-6); every node's wrench of each
    active sole is inside its contact wrench cone (the cone's faces, themselves checked against a
    linear program in ``test_trajopt_contacts``) with its margin stated, and its centre of pressure
    on the sole (from the wrench, in the sole's frame); the swinging sole's wrench is 0; its
    nodes satisfy the equations of motion written with the inverse dynamics; the soles' corners
    stay where they touched down; the left foot lands ahead, flat, and the base ends 5 cm
    forward; the simulation of ``validate`` under the plan's torques and a PD term stays within
    2 cm (without feedback a humanoid on one foot falls)."""
    from zoo import zoo_files

    if "g1_description/urdf/g1_29dof_rev_1_0.urdf" not in zoo_files():
        pytest.skip("example-robot-data is not installed")
    from bench.legged_trajopt import step_problem
    from kronjax.trajopt._contact_dynamics import contact_frames

    model, schedule, q0, cost, solver = step_problem()
    result = trajopt.optimize_on_contacts(model, schedule, q0, cost, dt=0.02, solver=solver)
    report, plan = result.report, result.plan
    assert report.converged and report.violation <= 1e-6, report
    weight = float(jnp.sum(model.inertials.mass)) * 9.81
    # the nodes' forces (the last node's are those of the last torques held, not planned)
    frames = jax.vmap(lambda q: contact_frames(model, schedule, schedule.bodies(model), q))(plan.q)
    rotations = np.asarray(frames[1][:-1])
    wrenches = np.asarray(plan.forces[:-1]).reshape(len(plan.ts) - 1, 2, 6)
    active = np.asarray(jax.vmap(schedule.active_at)(plan.ts[:-1] + 0.01))
    assert not active[:, 0].all() and active[:, 1].all()  # the left foot swings
    faces = np.stack(
        [np.asarray(jax.vmap(sole.cone)(wrenches[:, c], rotations[:, c])) for c, sole in enumerate(schedule.contacts)], axis=1
    )
    assert faces.shape == (len(plan.ts) - 1, 2, 16) and faces[active].max() <= 1e-6 * weight, faces[active].max()
    assert np.all(np.abs(wrenches[~active]) < 1e-9)
    # the centre of pressure of each active sole, in the sole's frame, inside its 17 x 5 cm rectangle
    moment = np.einsum("kcji,kcj->kci", rotations, wrenches[..., 3:])[active]
    force = np.einsum("kcji,kcj->kci", rotations, wrenches[..., :3])[active]
    cop = np.stack([-moment[:, 1], moment[:, 0]], axis=-1) / force[:, 2:3]
    assert np.all(np.abs(cop) <= np.array([0.085, 0.025]) * (1 + 1e-6)), np.abs(cop).max(axis=0)
    points = np.asarray(frames[0])
    assert 0.01 < points[-1, 0, 0] - points[0, 0, 0] < 0.1 and abs(points[-1, 0, 2] - points[0, 0, 2]) < 2e-3, points[-1, 0]
    np.testing.assert_allclose(np.asarray(frames[1][-1, 0, :, 2]), [0.0, 0.0, 1.0], atol=0.02)  # it lands flat
    base = plan.q[-1, :3] - plan.q[0, :3]
    assert abs(float(base[0]) - 0.05) < 0.01 and abs(float(base[1])) < 0.01, base
    validation = trajopt.validate(model, schedule, plan, kp=50.0, kd=2.0, hold=True)
    assert validation.plan_dynamics_residual < 1e-8, validation.plan_dynamics_residual
    assert validation.plan_stance_violation < 2e-3, validation.plan_stance_violation
    assert validation.base_drift < 0.02, validation.base_drift
    print(
        f"G1 step: {report.iterations} iterations, wrench cone margin {-faces[active].max():.3g} N, "
        f"base drift {validation.base_drift:.3g} m, simulated cone margin {validation.cone_margin:.3g} N"
    )
