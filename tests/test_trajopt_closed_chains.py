"""Closed chains: coordinate partitioning (kronjax.constrained.partition) against the Lagrange
multipliers of kronjax.constrained.solve and finite differences, and the spline planner on the
five-bar parallel robot (kj.models.five_bar) and the Stewart platform, its plans checked by the constrained forward
dynamics (an independent solver) at the samples and by simulation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import trajopt

FIVE_BAR = kj.models.five_bar()


@pytest.mark.parametrize("name", ["four_bar", pytest.param("stewart3", marks=pytest.mark.heavy)])
def test_partition_against_lagrange_multipliers_and_finite_differences(name):
    mechanism = getattr(kj.models, name)()
    independent = {"four_bar": ("crank",), "stewart3": ("J7", "J8", "J9")}[name]
    part = kj.constrained.partition(mechanism, independent)
    k = len(independent)
    rng = np.random.default_rng(0)
    q_i = mechanism.q0[jnp.asarray(part.independent_q)] + 0.1 * rng.standard_normal(k)
    q = part.configuration(q_i)
    assert float(jnp.max(jnp.abs(mechanism.constraints.residual(q)))) < 1e-12
    # the derivative is the implicit function theorem's: central differences of the assembly
    jac = jax.jacfwd(part.configuration)(q_i)
    eps = 1e-6
    fd = jnp.stack([(part.configuration(q_i + eps * e) - part.configuration(q_i - eps * e)) / (2 * eps) for e in jnp.eye(k)], 1)
    np.testing.assert_allclose(jac, fd, atol=1e-8)
    # the split of the inverse dynamics into actuated torques and closure forces, fed to the
    # Lagrange multipliers' forward dynamics, gives back the accelerations and the forces
    v = part.velocity(q, jnp.asarray(rng.standard_normal(k)))
    vd = part.acceleration(q, v, jnp.asarray(rng.standard_normal(k)))
    assert float(jnp.max(jnp.abs(mechanism.constraints.velocity_residual(q, v)))) < 1e-12
    tau_i, forces = part.actuation(q, kj.inverse_dynamics(mechanism.model, q, v, vd))
    tau = jnp.zeros(mechanism.model.nv).at[jnp.asarray(part.independent)].set(tau_i)
    solution = kj.constrained.solve(mechanism.model, mechanism.constraints, q, v, tau)
    np.testing.assert_allclose(solution.vd, vd, atol=1e-10)
    np.testing.assert_allclose(solution.forces, forces, atol=1e-9)


def test_partition_bad_input_gets_clear_errors():
    four_bar = kj.models.four_bar()
    with pytest.raises(ValueError, match="1 degrees of freedom.*name 1 independent"):
        kj.constrained.partition(four_bar, ("crank", "rocker"))
    with pytest.raises(ValueError, match="1-DoF joints"):
        kj.constrained.partition(kj.models.stewart3(), ("platform", "J7", "J8"))
    with pytest.raises(ValueError, match=r"coordinate order, \['left_motor', 'right_motor'\]"):
        kj.constrained.partition(FIVE_BAR, ("right_motor", "left_motor"))
    with pytest.raises(KeyError, match="no joint named 'motor'"):
        kj.constrained.partition(four_bar, ("motor",))
    with pytest.raises(TypeError, match="Mechanism"):
        kj.constrained.partition(four_bar.model, ("crank",))
    # a planar loop closed by a spherical joint: the third equation repeats nothing but 0 = 0
    (point_a, point_b) = (four_bar.constraints.parts[0].phi.point_a, four_bar.constraints.parts[0].phi.point_b)
    spherical = kj.constrained.loop_closure(four_bar.model, "coupler", point_a, "rocker", point_b, "spherical")
    redundant = kj.constrained.Mechanism(four_bar.model, kj.constrained.Constraints((spherical,)), four_bar.q0)
    with pytest.raises(ValueError, match="redundant"):
        kj.constrained.partition(redundant, ())
    shifted = kj.constrained.Mechanism(four_bar.model, four_bar.constraints, four_bar.q0 + 0.1)
    with pytest.raises(ValueError, match="not assembled"):
        kj.constrained.partition(shifted, ("crank",))


def _check_plan(mechanism, result, tol):
    """The plan's samples: on the closure, and the constrained forward dynamics (Lagrange
    multipliers) under the planned torques reproduce the planned accelerations."""
    problem = result.problem
    samples = problem.samples(result.z[result.report.best])
    cons, model = mechanism.constraints, mechanism.model
    assert float(jnp.max(jnp.abs(jax.vmap(cons.residual)(samples.q)))) < 1e-10
    assert float(jnp.max(jnp.abs(jax.vmap(cons.velocity_residual)(samples.q, samples.v)))) < 1e-10
    vd = jax.vmap(lambda q, v, tau: kj.constrained.solve(model, cons, q, v, tau).vd)(samples.q, samples.v, samples.tau)
    assert float(jnp.max(jnp.abs(vd - samples.vd))) < tol
    return samples


@pytest.mark.heavy  # compiles the planner for the five-bar in float64 and float32 (about 30 s)
def test_five_bar_plans_a_point_to_point_motion():
    motors = FIVE_BAR.q0[jnp.asarray([0, 2])]
    bc = trajopt.BoundaryConditions(motors, motors + jnp.array([0.4, 0.3]), 0.8)
    actuated = ("left_motor", "right_motor")
    result = trajopt.optimize(FIVE_BAR, bc, trajopt.TorqueEffort(), actuated=actuated, num_control_points=8)
    assert result.report.status[0] == "converged" and float(result.report.violation[0]) <= 1e-6
    _check_plan(FIVE_BAR, result, 1e-8)
    # the torques are optimal among the motions of the spline: the minimum-jerk start is worse
    start = result.problem.objective(result.problem.initial_guess())
    assert float(result.report.cost[0]) < float(start)
    # float32: the same plan to its precision, on the closure to its assembly tolerance
    f32 = jnp.float32
    robot32 = kj.constrained.Mechanism(FIVE_BAR.model.astype(f32), FIVE_BAR.constraints, FIVE_BAR.q0.astype(f32))
    bc32 = trajopt.BoundaryConditions(bc.q_start.astype(f32), bc.q_end.astype(f32), 0.8)
    single = trajopt.optimize(robot32, bc32, trajopt.TorqueEffort(), actuated=actuated, num_control_points=8)
    assert single.report.status[0] == "converged", single.report.message
    assert abs(float(single.report.cost[0]) / float(result.report.cost[0]) - 1.0) < 1e-4
    q32 = single.problem.samples(single.z[0]).q
    assert q32.dtype == f32 and float(jnp.max(jnp.abs(jax.vmap(FIVE_BAR.constraints.residual)(q32.astype(jnp.float64))))) < 2e-5
    # a new goal re-solves without compiling
    other = trajopt.BoundaryConditions(bc.q_start, bc.q_start + jnp.array([0.3, 0.4]), 0.8)
    again = trajopt.optimize(FIVE_BAR, other, trajopt.TorqueEffort(), actuated=actuated, num_control_points=8)
    assert again.report.compile_time == 0.0 and again.report.converged[0]
    with pytest.raises(ValueError, match="actuated joints"):
        trajopt.transcribe(FIVE_BAR, bc, trajopt.TorqueEffort())
    with pytest.raises(ValueError, match="a Model's joints are all actuated"):
        trajopt.transcribe(FIVE_BAR.model, bc, trajopt.TorqueEffort(), actuated=actuated)
    with pytest.raises(ValueError, match="boundary conditions for 1 joints, the mechanism has actuated joints: 2"):
        trajopt.transcribe(FIVE_BAR, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(), actuated=actuated)
    with pytest.raises(ValueError, match="does not assemble with its actuated joints at q_start"):
        trajopt.transcribe(
            FIVE_BAR,
            trajopt.BoundaryConditions(motors + jnp.array([1.2, -1.2]), motors, 1.0),
            trajopt.TorqueEffort(),
            actuated=actuated,
        )
    with pytest.raises(NotImplementedError, match=r"\['TaskTarget'\] on a closed chain"):
        target = trajopt.TaskTarget(body="left_distal", target=(0.15, 0.5, 0.0))
        trajopt.transcribe(FIVE_BAR, bc, trajopt.TorqueEffort() + target, actuated=actuated)
    with pytest.raises(ValueError, match="Gauss-Newton"):
        trajopt.optimize(FIVE_BAR, bc, trajopt.TorqueEffort(), actuated=actuated, solver=trajopt.InteriorPoint(hessian="exact"))


# compiles the planner for the Stewart platform (about 45 s) and its simulation: the extended tier,
# a second instance of the simulated closed-chain plan that CI checks on the five-bar (the notebook)
@pytest.mark.slow
@pytest.mark.extended
def test_stewart_platform_plan_holds_in_simulation():
    stewart = kj.models.stewart3()
    motors = ("J7", "J8", "J9")
    bc = trajopt.BoundaryConditions(jnp.zeros(3), jnp.array([0.3, -0.2, 0.25]), 1.0)
    result = trajopt.optimize(stewart, bc, trajopt.TorqueEffort(), actuated=motors, num_control_points=8)
    assert result.report.status[0] == "converged" and float(result.report.violation[0]) <= 1e-6
    samples = _check_plan(stewart, result, 1e-8)
    # the planned torques (interpolated between the samples) and a PD term on the motors drive
    # the closed chain (Lagrange multipliers, Tsit5, projection) along the plan
    kp, kd = 400.0, 40.0

    def torque(t, q, v):
        feedforward = jax.vmap(lambda tau: jnp.interp(t, samples.t, tau), 1)(samples.tau[:, :3])
        planned = result.trajectory(jnp.clip(t, 0.0, 1.0))
        pd = kp * (planned[0] - q[:3]) + kd * (planned[1] - v[:3])
        return jnp.zeros(12).at[:3].set(feedforward + pd)

    rollout = kj.constrained.simulate(stewart.model, stewart.constraints, samples.q[0], samples.v[0], torque, dt=2e-3, steps=500)
    motors_error = jnp.abs(rollout.q[-1, :3] - bc.q_end)
    platform_error = jnp.abs(rollout.q[-1, 6:9] - samples.q[-1, 6:9])
    print(f"Stewart plan: motors {np.asarray(motors_error)} rad, platform {np.asarray(platform_error)} m at the end")
    assert float(jnp.max(motors_error)) < 2e-3 and float(jnp.max(platform_error)) < 1e-3
