"""Motions of robots on contacts (legged robots): :func:`optimize_on_contacts`, the direct multiple
shooting transcription of ``_legged_transcription`` along a :class:`ContactSchedule`, solved by the
interior point with a Riccati step of ``_riccati``: the input's checks, the compiled solve and its
result, a :class:`Plan` at the nodes (at the last node: the last torques, held on the last
contacts, and their forces and accelerations there) that :func:`validate` simulates.
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from ..chain import Model
from ..configuration import one_dof_coordinates
from ._contact_dynamics import contact_frames, support_owner, support_points
from ._contacts import ContactSchedule
from ._interior_point import InteriorPoint
from ._legged_transcription import ContactCost, LeggedProblem
from ._riccati import CONVERGED, STATUS, Iterate, solve
from ._solver import compile_clock
from ._validate import Plan, actuated, check_independent_contacts


class ContactReport(NamedTuple):
    """How :func:`optimize_on_contacts` went.

    Attributes:
        converged: whether the KKT error is at most ``tol`` and the largest violation at most
            ``violation_tol``.
        status: ``"converged"``, ``"max_iterations"`` or ``"non-finite"``.
        iterations: Newton steps.
        cost: the final cost (the residuals' weighted sum of squares over 2).
        violation: the largest gap of the dynamics (in ``q``'s tangent space and ``v``) or
            constraint violation (relative: forces per robot weight, torques per effort limit,
            heights per 0.1 m, positions per range).
        kkt_error: the scaled KKT error of the final point.
        wall_time: seconds, compilation included; compile_time: of which compiling.

    Example:
        >>> from kronjax import trajopt
        >>> trajopt.ContactReport._fields
        ('converged', 'status', 'iterations', 'cost', 'violation', 'kkt_error', 'wall_time', 'compile_time')
    """

    converged: bool
    status: str
    iterations: int
    cost: float
    violation: float
    kkt_error: float
    wall_time: float
    compile_time: float


class ContactResult(NamedTuple):
    """The result of :func:`optimize_on_contacts`: the ``plan`` (a :class:`Plan` at the nodes), the
    ``report``, and the solver's ``state`` (states, controls, slacks, multipliers) that warm-starts
    another call (``init=``).

    Example:
        >>> from kronjax import trajopt
        >>> trajopt.ContactResult._fields
        ('plan', 'report', 'state')
    """

    plan: Plan
    report: ContactReport
    state: Iterate


def _finite_limits(model: Model):
    """``((effort, lower, upper), (torque mask, coordinate mask))``: the finite effort limits of the
    actuated coordinates, and the 1-DoF coordinates with finite lower and upper limits (both)."""
    nu, one_dof = int(actuated(model).sum()), one_dof_coordinates(model)
    if model.limits is None:
        return (np.ones(0), np.zeros(0), np.zeros(0)), ((False,) * nu, (False,) * len(one_dof))
    effort = np.asarray(model.limits.effort)[actuated(model)]
    if np.any(effort == 0):
        passive = np.flatnonzero(actuated(model))[effort == 0].tolist()
        raise ValueError(
            f"coordinates {passive} have effort limit 0 (passive): optimize_on_contacts actuates every coordinate that is "
            "not a free joint's"
        )
    index = [i for i, _ in one_dof]
    lower, upper = np.asarray(model.limits.lower)[index], np.asarray(model.limits.upper)[index]
    u_rows = np.isfinite(effort) & (effort > 0)
    q_rows = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
    return (effort[u_rows], lower[q_rows], upper[q_rows]), (tuple(u_rows.tolist()), tuple(q_rows.tolist()))


def _base_body(model: Model) -> int:
    """The body of the model's first free joint (the floating base), else its first body."""
    kinds = getattr(model.kinematics, "kinds", ())
    return next((b for b, kind in enumerate(kinds) if kind == "free"), 0)


def optimize_on_contacts(
    model: Model,
    schedule: ContactSchedule,
    q0: Float[ArrayLike, " nq"],
    cost: ContactCost | None = None,
    *,
    v0: Float[ArrayLike, " nv"] | None = None,
    dt: float = 0.01,
    touchdown_tolerance: float = 1e-3,
    solver: InteriorPoint | None = None,
    init: ContactResult | None = None,
) -> ContactResult:
    """Plan a motion of ``model`` on the contacts of ``schedule`` from ``(q0, v0)``: the direct
    multiple shooting transcription of ``kronjax.trajopt._legged_transcription`` (contact forward dynamics at
    nodes ``dt`` apart, friction pyramids and flat feet's wrench cones, effort and joint limits,
    contact points and soles on or above the ground), solved by the interior point with a Riccati step (``_riccati``).

    Args:
        model: the robot (a floating base for a legged robot; its ``limits`` give the effort and
            position limits).
        schedule: the :class:`ContactSchedule`: point contacts and flat feet (``"6d"``, with their
            sole's ``size``), the first phase's contacts on the ground at ``q0`` (a flat foot's sole
            flat on it). Its durations are traced: another schedule with the same phases and the
            same total duration runs the same compiled program.
        q0: ``(nq,)`` the initial configuration (a unit quaternion for the base); its dtype (float64 or
            float32) is the plan's.
        cost: the :class:`ContactCost` (default: stand in place).
        v0: ``(nv,)`` the initial velocity (default 0).
        dt: the nodes' spacing; the schedule's duration must be a whole number of ``dt``.
        touchdown_tolerance: how far from the ground, above or below (metres), a contact's
            support points (its point, or a sole's corners) may be once it has been active for a
            node.
        solver: the :class:`InteriorPoint` settings (``tol``, default ``1e-6`` here in float64 and
            ``1e-4`` in float32, as the KKT error of the scaled problem; ``violation_tol``; ``max_iterations``; ``barrier_init``;
            ``warm_barrier``); Gauss-Newton Hessians only. Default: ``InteriorPoint(violation_tol=1e-6,
            max_iterations=100, barrier_init=1e-2)``, ``violation_tol=1e-4`` in float32 (``q0``'s dtype),
            where the gaps of the dynamics stall near ``1e-5`` (a solver given in float32 needs
            ``violation_tol=1e-4`` too).
        init: a :class:`ContactResult` of the same problem structure to start from (its states,
            controls, slacks and multipliers, with ``warm_barrier``).

    Returns:
        :class:`ContactResult`: the :class:`Plan` at the ``N + 1`` nodes (times, ``q``, ``v``, the
        torques as generalised forces ``(N + 1, nv)`` with 0 on the base, the contact forces in
        the world's axes ``(N + 1, R)``, the accelerations), the :class:`ContactReport` and the
        solver's state.

    Example:
        The planner checks its input before it compiles anything: a box on one leg whose schedule
        starts in the air is refused (``bench/legged_trajopt.py`` plans ANYmal's trot; the guide
        "Legged robots" shows it):

        >>> from kronjax import trajopt
        >>> robot = kj.from_joints(
        ...     [kj.Joint("free"), kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(0, 0, -0.1))],
        ...     [kj.Inertial(mass=2.0, inertia=(0.1, 0.2, 0.3)), kj.Inertial(mass=0.5, com=(0, 0, -0.2), inertia=(0.01, 0.01, 0.001))],
        ... )
        >>> foot = trajopt.Contact("foot", 1, point=(0.0, 0.0, -0.4), friction=0.8)
        >>> leap = trajopt.ContactSchedule([foot], [(0.1, ()), (0.1, ("foot",))])
        >>> trajopt.optimize_on_contacts(robot, leap, kj.neutral(robot))
        Traceback (most recent call last):
        ...
        ValueError: the schedule's first phase has no active contact: the robot would start in the air (give it the stance it starts in)
    """
    cost = ContactCost() if cost is None else cost
    if solver is not None and solver.hessian != "gauss-newton":
        raise ValueError("optimize_on_contacts uses Gauss-Newton Hessians: InteriorPoint(hessian='gauss-newton')")
    problem = _problem(model, schedule, q0, v0, cost, dt, touchdown_tolerance)
    # in float32 the dynamics' gaps stall near 1e-5 (vd from M^-1 at single precision)
    precision = 1e-6 if jnp.finfo(problem.x0.dtype).bits >= 64 else 1e-4
    if solver is None:
        solver = InteriorPoint(violation_tol=precision, max_iterations=100, barrier_init=1e-2)
    tol = precision if solver.tol is None else solver.tol
    state = (
        _cold_state(problem, solver.barrier_init)
        if init is None
        else init.state._replace(mu=jnp.asarray(solver.warm_barrier, problem.x0.dtype))
    )
    start = time.perf_counter()
    with compile_clock() as seconds:
        it, plan = jax.block_until_ready(
            _compiled(jax.default_backend())(
                problem, state, jnp.asarray(init is None), tol, solver.violation_tol, solver.max_iterations
            )
        )
    report = ContactReport(
        bool(it.status == CONVERGED),
        STATUS[int(it.status)],
        int(it.steps),
        float(it.cost / it.scale**2),
        float(it.violation),
        float(it.kkt),
        time.perf_counter() - start,
        seconds(),
    )
    return ContactResult(plan, report, it)


def _problem(model: Model, schedule: ContactSchedule, q0, v0, cost: ContactCost, dt: float, tolerance: float) -> LeggedProblem:
    """The transcription, or a clear error about its input."""
    if model.inertials is None:
        raise ValueError("optimize_on_contacts needs a model with inertials")
    bodies = schedule.bodies(model)
    unsized = [contact.name for contact in schedule.contacts if contact.kind == "6d" and not np.all(np.asarray(contact.size) > 0)]
    if unsized:
        raise ValueError(
            f"flat feet {unsized} need their sole's size, a positive length and width, for their wrench cone: "
            "Contact(..., kind='6d', size=(length, width))"
        )
    q0 = model.check_q(jnp.asarray(q0), "q0")
    dtype = q0.dtype if jnp.issubdtype(q0.dtype, jnp.floating) else jnp.result_type(float)
    q0 = q0.astype(dtype)
    v0 = jnp.zeros(model.nv, dtype) if v0 is None else jnp.asarray(v0, dtype)
    if v0.shape != (model.nv,):
        raise ValueError(f"v0 must have shape ({model.nv},), got {v0.shape}")
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt!r}")
    duration = float(schedule.duration)
    nodes = int(round(duration / dt))
    if nodes < 1 or abs(nodes * dt - duration) > 1e-9 * max(1.0, duration):
        raise ValueError(f"the schedule's duration {duration:.6g} s must be a whole number of dt = {dt:.6g} s")
    first = np.array(schedule.active[0], bool)
    if not first.any():
        raise ValueError(
            "the schedule's first phase has no active contact: the robot would start in the air (give it the stance it starts in)"
        )
    points, rotations = contact_frames(model, schedule, bodies, q0)
    heights = np.asarray(support_points(schedule, points, rotations)[:, 2])
    heights = heights[first[support_owner(schedule)]]
    if np.ptp(heights) > tolerance:
        raise ValueError(
            f"the first phase's contact points (a flat foot's: its sole's corners) are at heights {np.round(heights, 4).tolist()} "
            f"m at q0: the ground is flat, at their mean height, and a held contact stays within touchdown_tolerance = "
            f"{tolerance} m of it"
        )
    # a sole's cone and corners take the body's +z for its normal: a level sole facing down
    # passes the heights' check, and would need the ground to pull
    down = [c.name for k, c in enumerate(schedule.contacts) if c.kind == "6d" and first[k] and float(rotations[k, 2, 2]) <= 0]
    if down:
        raise ValueError(f"flat feet {down}: their body's z axis points down at q0; a sole's normal is its body's +z axis")
    stand = Plan(jnp.array([0.0, duration]), jnp.stack([q0, q0]), jnp.stack([v0, v0]), jnp.zeros((2, model.nv), dtype))
    check_independent_contacts(model, schedule, bodies, stand)
    limits, limited = _finite_limits(model)
    weight = jnp.asarray(float(jnp.sum(model.inertials.mass) * jnp.linalg.norm(model.gravity)), dtype)
    return LeggedProblem(
        model.astype(dtype),
        schedule,
        cost,
        jnp.concatenate([q0, v0]),
        jnp.asarray(float(np.mean(heights)), dtype),
        weight,
        tuple(pose[_base_body(model)] for pose in model.astype(dtype).poses(q0)),
        limits,
        limited,
        bodies,
        _base_body(model),
        nodes,
        float(dt),
        float(tolerance),
    )


def _cold_state(problem: LeggedProblem, barrier: float) -> Iterate:
    """The solver's state of a cold start: placeholders of the right shapes (the initial guess,
    slacks and multipliers are set inside the compiled solve, one program for cold and warm)."""
    dtype, nodes = problem.x0.dtype, problem.nodes
    shapes = jax.eval_shape(lambda p: p.linearise(*p.initial_guess()), problem)
    rows, zero = shapes[0].c.shape, jnp.asarray(0.0, dtype)
    return Iterate(
        jnp.zeros((nodes + 1, problem.x0.shape[0]), dtype),
        jnp.zeros((nodes + 1, int(actuated(problem.model).sum())), dtype),
        jnp.ones(rows, dtype),
        jnp.ones(rows, dtype),
        jnp.asarray(barrier, dtype),
        zero,
        jnp.asarray(1.0, dtype),
        tuple(jnp.zeros(a.shape, dtype) for a in shapes[1]),
        jnp.asarray(0),
        jnp.asarray(0),
        zero,
        zero,
        zero,
    )


def _run(problem: LeggedProblem, warm: Iterate, cold, tol, violation_tol, max_iterations):
    xs, us = problem.initial_guess()
    pick = lambda a, b: jnp.where(cold, a, b)  # noqa: E731
    # the first node is the given state, also in a warm start from another one (a re-plan)
    it = warm._replace(xs=pick(xs, warm.xs).at[0].set(problem.x0), us=pick(us.at[-1].set(0.0), warm.us))
    it = solve(problem, it, cold, tol=tol, violation_tol=violation_tol, max_iterations=max_iterations)
    return it, _plan(problem, it)


def _plan(problem: LeggedProblem, it: Iterate) -> Plan:
    """The solution at the nodes, with the forces and accelerations of its last linearisation; at
    the last node, those of the last torques held on the last contacts."""
    nq, nodes = problem.nq, problem.node_data()
    forces, vd = it.aux
    _, _, forces_end, vd_end = problem.step(it.xs[-1, :nq], it.xs[-1, nq:], it.us[-2], nodes.active[-2])
    tau = it.us[:-1] @ problem.actuation(it.xs.dtype).T
    return Plan(
        nodes.t,
        it.xs[:, :nq],
        it.xs[:, nq:],
        jnp.concatenate([tau, tau[-1:]]),
        jnp.concatenate([forces[:-1], forces_end[None]]),
        jnp.concatenate([vd[:-1], vd_end[None]]),
    )


@functools.cache
def _compiled(backend: str):
    """:func:`_run` compiled for ``backend``; on the CPU without XLA's fusion emitters, as the other
    solvers, and without its while-loop-invariant code motion: without it ANYmal's trot compiles in
    44 s instead of 70 (the pass itself took 10.6 s, and the code it hoists out of the large loop
    body cost the later passes the rest), and the solve runs no slower. (XLA's lower optimisation levels compiled
    faster too, but solved 3x slower.)"""
    options = None
    if backend == "cpu":
        options = {"xla_cpu_use_fusion_emitters": False, "xla_disable_hlo_passes": "while-loop-invariant-code-motion"}
    return eqx.filter_jit(_run, compiler_options=options)
