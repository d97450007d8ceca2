"""Motions of robots on contacts (legged robots): :func:`optimize_on_contacts`, a direct multiple
shooting transcription along a :class:`ContactSchedule`, solved by the interior point with a
Riccati step of ``_riccati``.

The transcription, at nodes ``t_k = k dt`` (``k = 0 .. N``, ``N = round(duration / dt)``):

* **State and control.** ``x_k = (q_k, v_k)`` (the base on SE(3): steps along the tangent space,
  ``q ⊕ dq``; never Euler angles), ``x_0`` given; the control ``u_k`` is the joint torques (the
  coordinates that are not a free joint's), held over ``[t_k, t_k+1)``.
* **Dynamics.** The contact forward dynamics of the contacts active at the node's midpoint
  (``M vd + h = S^T u + A^T f``, the forces Lagrange multipliers: the six base rows hold exactly),
  with Baumgarte's velocity term of gain ``1 / dt``: a contact that is moving when it becomes active
  comes to rest within the node (the impulse of a plastic impact spread over one node, its force
  inside the friction cone like every other), and a contact at rest stays at rest. Then the
  semi-implicit Euler step ``v_{k+1} = v_k + dt vd_k``, ``q_{k+1} = q_k ⊕ dt v_{k+1}``. The
  derivatives are the KKT route's (``_contact_dynamics``): no second derivative is compiled.
* **Constraints at every node.** The friction pyramid inscribed in each active contact's cone,
  ``|f_x| + |f_y| <= mu f_z`` (four faces; it implies ``f_z >= 0``); the inactive contacts' forces
  are 0 by the dynamics. The torques within the model's effort limits, the joints within their
  position limits. Every contact point at or above the ground (flat, at the height of the contacts
  that are active at the start), and within ``touchdown_tolerance`` of it once it has been active
  for a node (so that a foot lands on the ground, not above it).
* **Costs** (:class:`ContactCost`): the base's position and heading tracking a straight line to the
  target (its displacement and turn over the horizon, the last node weighted more), the joints near
  their initial posture, the velocities, torques and forces small, and the swinging contact points
  following an arch of the given clearance.

The solution is a :class:`Plan` at the nodes (at the last node: the last torques, held on the last
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
from jaxtyping import Array, ArrayLike, Float

from .._lie import log3
from ..chain import Model
from ..configuration import difference, one_dof_coordinates, unchecked_integrate
from ..dynamics import inverse_dynamics
from ._contact_dynamics import (
    contact_frames,
    contact_jacobian,
    contact_motion,
    damped_contact_dynamics,
    damped_contact_dynamics_derivatives,
    row_mask,
)
from ._contacts import ContactSchedule
from ._interior_point import InteriorPoint
from ._riccati import CONVERGED, STATUS, Iterate, StageLinearisation, StageValues, solve
from ._solver import compile_clock
from ._validate import Plan, actuated, check_independent_contacts


class ContactCost(eqx.Module):
    """The costs of :func:`optimize_on_contacts`, each a weighted sum of squares over the nodes.

    Attributes:
        displacement: ``(3,)`` the base's displacement over the horizon (world axes, metres); its
            reference moves along the straight line at constant speed.
        turn: the base's rotation about the vertical over the horizon (radians).
        clearance: the height of the arch the swinging contact points follow (metres).
        base, heading: weights of the base position's and orientation's errors from the reference
            (per metre, per radian).
        final: the factor of ``base`` and ``heading`` at the last node.
        posture: weight of the joints' distance from the initial configuration (per radian).
        velocity: weight of the velocities.
        torque: weight of the joint torques (per N m).
        force: weight of the contact forces (per robot weight).
        swing: weight of the swinging points' distance from the arch (per metre).
        landing: weight of a contact point's velocity where it touches down (per m/s): the
            velocity that its first node's contact force stops.

    Example:
        Trot 15 cm forward with the feet 10 cm up in swing, the other weights their defaults:

        >>> from kronjax import trajopt
        >>> cost = trajopt.ContactCost(displacement=(0.15, 0.0, 0.0), clearance=0.1)
        >>> cost.displacement.tolist(), cost.turn, cost.base, cost.landing
        ([0.15, 0.0, 0.0], 0.0, 30.0, 10.0)
    """

    displacement: Float[Array, 3] = eqx.field(converter=jnp.asarray, default=(0.0, 0.0, 0.0))
    turn: float = 0.0
    clearance: float = 0.05
    base: float = 30.0
    heading: float = 10.0
    final: float = 10.0
    posture: float = 1.0
    velocity: float = 0.3
    torque: float = 0.02
    force: float = 0.1
    swing: float = 30.0
    landing: float = 10.0


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


class _Nodes(NamedTuple):
    """Per node (``(S, ...)``): time, active contacts, contacts active over the previous node, the
    current swing's lift-off and touchdown times, and 1 at the last node."""

    t: Array
    active: Array
    previous: Array
    lift: Array
    touch: Array
    last: Array


class _LeggedProblem(eqx.Module):
    model: Model
    schedule: ContactSchedule
    cost: ContactCost
    x0: Array
    ground: Array
    weight: Array  # the robot's weight, N
    start: tuple  # the base's rotation and position at q0, the references' start
    limits: tuple  # the finite effort limits, and the finite lower and upper position limits
    limited: tuple = eqx.field(static=True)  # which torques, and which 1-DoF coordinates, have them
    bodies: tuple[int, ...] = eqx.field(static=True)
    base: int = eqx.field(static=True)  # the body whose position and heading the costs track
    nodes: int = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    tolerance: float = eqx.field(static=True)

    @property
    def nq(self) -> int:
        return self.model.nq

    def actuation(self, dtype):
        mask = actuated(self.model)
        return jnp.asarray(np.eye(self.model.nv)[:, mask], dtype)

    def node_data(self) -> _Nodes:
        schedule, dtype = self.schedule, self.x0.dtype
        t = jnp.arange(self.nodes + 1, dtype=dtype) * self.dt
        active = jax.vmap(schedule.active_at)(t + 0.5 * self.dt)
        active = active.at[-1].set(False)
        previous = jnp.concatenate([active[:1], active[:-1]])
        table = np.array(schedule.active, bool)
        phases, contacts = table.shape
        lift, touch = np.zeros((phases, contacts), int), np.full((phases, contacts), phases)
        for c in range(contacts):
            for p in range(phases):
                start = p
                while start > 0 and not table[start - 1, c]:
                    start -= 1
                lift[p, c] = start
                after = [r for r in range(p + 1, phases) if table[r, c]]
                touch[p, c] = after[0] if after else phases
        phase = jax.vmap(schedule.phase_at)(t + 0.5 * self.dt)
        bounds = schedule.boundaries.astype(dtype)
        return _Nodes(
            t, active, previous, bounds[jnp.asarray(lift)[phase]], bounds[jnp.asarray(touch)[phase]], (t >= t[-1]).astype(dtype)
        )

    def step(self, q, v, u, active):
        """``(q_next, v_next, forces, vd)`` of one node."""
        rows = row_mask(self.schedule, active)
        vd, forces = damped_contact_dynamics(
            self.model, self.schedule, self.bodies, q, v, self.actuation(q.dtype) @ u, rows, 1.0 / self.dt
        )
        v_next = v + self.dt * vd
        return unchecked_integrate(self.model, q, self.dt * v_next), v_next, forces, vd

    def residuals(self, q, v, u, forces, node: _Nodes, points, speeds):
        """The scaled cost residuals of a node; ``points`` and ``speeds`` (``(C, 3)``) are the
        contact points and their velocities at ``(q, v)`` (:func:`contact_motion`), or, in the
        linearisation, a surrogate exact to first order at its point."""
        cost, model = self.cost, self.model
        q_start = self.x0[: self.nq]
        progress = node.t / (self.nodes * self.dt)
        rotations, origins = model.poses(q)
        start_rotation, start_origin = self.start
        turn = progress * cost.turn
        c, s = jnp.cos(turn), jnp.sin(turn)
        yaw = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], q.dtype)
        weight = 1.0 + node.last * (cost.final - 1.0)
        b = self.base
        base = weight * cost.base * (origins[b] - start_origin - progress * cost.displacement.astype(q.dtype))
        heading = weight * cost.heading * log3((yaw @ start_rotation).T @ rotations[b])
        joints = difference(model, q_start, q)[actuated(model)]
        swing = jnp.clip((node.t - node.lift) / jnp.maximum(node.touch - node.lift, self.dt), 0.0, 1.0)
        arch = self.ground + cost.clearance * jnp.sin(jnp.pi * swing)
        swinging = jnp.where(node.active | (node.last > 0), 0.0, cost.swing * (points[:, 2] - arch))
        # a contact touching down is brought to rest within the node: its speed then, an impact's
        touching = node.active & ~node.previous
        landing = cost.landing * jnp.where(touching[:, None], speeds, 0.0).ravel()
        parts = (
            landing,
            base,
            heading,
            cost.posture * joints,
            cost.velocity * v,
            cost.torque * u,
            cost.force * forces / self.weight,
            swinging,
        )
        return jnp.concatenate(parts)

    def constraints(self, q, u, forces, node: _Nodes, points):
        """The node's constraints (``<= 0``, relative); ``points`` are the contact points."""
        schedule, model = self.schedule, self.model
        rows = []
        start = 0
        for c, contact in enumerate(schedule.contacts):
            f = forces[start : start + 3] / self.weight
            start += contact.rows
            faces = jnp.stack([sx * f[0] + sy * f[1] - contact.friction * f[2] for sx in (1, -1) for sy in (1, -1)])
            rows.append(jnp.where(node.active[c], faces, -1.0))
        effort, lower, upper = (jnp.asarray(a, q.dtype) for a in self.limits)
        u_rows, q_rows = (np.asarray(mask, dtype=bool) for mask in self.limited)
        rows += [u[u_rows] / effort - 1.0, -u[u_rows] / effort - 1.0]
        qj = q[jnp.asarray([i for _, i in one_dof_coordinates(model)], dtype=int)][q_rows]
        span = upper - lower
        rows += [(qj - upper) / span, (lower - qj) / span]
        height = (points[:, 2] - self.ground) / 0.1
        # a contact held over the previous node stays where it touched down (Baumgarte's term):
        # within +-tolerance of the ground, not exactly on it, so that the interior point keeps an
        # interior (a bound that the dynamics hold at 0 would have none)
        window = jnp.where(node.previous, self.tolerance / 0.1, 0.0)
        rows += [-height - window, jnp.where(node.previous, height - window, -1.0)]
        return jnp.concatenate(rows).astype(q.dtype)

    def _node(self, q, v, u, node: _Nodes, q_next, v_next):
        """One node's residuals, constraints and gap with their Jacobians, and its forces and
        accelerations."""
        model, n, dtype = self.model, self.model.nv, q.dtype
        actuation = self.actuation(dtype)
        rows = row_mask(self.schedule, node.active)
        derivatives = damped_contact_dynamics_derivatives(
            model, self.schedule, self.bodies, q, v, actuation @ u, rows, 1.0 / self.dt, actuation
        )
        vd, forces, d_vd, d_forces = derivatives.vd, derivatives.forces, derivatives.d_vd, derivatives.d_forces
        jac, velocity_q = derivatives.jacobian, derivatives.velocity_q
        v1 = v + self.dt * vd
        q1 = unchecked_integrate(model, q, self.dt * v1)
        d_v1 = jnp.concatenate([jnp.zeros((n, n), dtype), jnp.eye(n, dtype=dtype), jnp.zeros((n, u.shape[0]), dtype)], axis=1)
        d_v1 = d_v1 + self.dt * d_vd
        zero = jnp.zeros(n, dtype)
        j_q, j_w = jax.jacfwd(
            lambda a, b: difference(model, q1, unchecked_integrate(model, unchecked_integrate(model, q, a), self.dt * v1 + b)),
            argnums=(0, 1),
        )(zero, zero)
        d_q1 = j_q @ jnp.eye(n, d_v1.shape[1], dtype=dtype) + self.dt * j_w @ d_v1
        d_next = jnp.concatenate([d_q1, d_v1])
        gap = jnp.concatenate([difference(model, q_next, q1), v1 - v_next])
        points, _ = contact_frames(model, self.schedule, self.bodies, q)

        def local(dq, v, u, forces):
            x = unchecked_integrate(model, q, dq)
            # the contact points and their velocities to first order in dq, from the Jacobians of
            # the dynamics' pass (three rows of A per point: _problem refuses "6d" contacts): their
            # values and derivatives at dq = 0 (all that is read) are exact, and no other pass of
            # the kinematics is differentiated
            moved = points + (jac @ dq).reshape(points.shape)
            speeds = (jac @ v + velocity_q @ dq).reshape(points.shape)
            return self.residuals(x, v, u, forces, node, moved, speeds), self.constraints(x, u, forces, node, moved)

        (r_q, r_v, r_u, r_f), (c_q, c_v, c_u, c_f) = jax.jacfwd(local, argnums=(0, 1, 2, 3))(zero, v, u, forces)
        r, c = local(zero, v, u, forces)
        r_x = jnp.concatenate([r_q, r_v], axis=1) + r_f @ d_forces[:, : 2 * n]
        c_x = jnp.concatenate([c_q, c_v], axis=1) + c_f @ d_forces[:, : 2 * n]
        r_u, c_u = r_u + r_f @ d_forces[:, 2 * n :], c_u + c_f @ d_forces[:, 2 * n :]
        return (r, r_x, r_u, c, c_x, c_u, gap, d_next[:, : 2 * n], d_next[:, 2 * n :]), (forces, vd)

    def linearise(self, xs, us) -> tuple[StageLinearisation, tuple[Array, Array]]:
        """The nodes' :class:`StageLinearisation`, and their contact forces and accelerations."""
        q, v = xs[:, : self.nq], xs[:, self.nq :]
        q_next, v_next = jnp.concatenate([q[1:], q[-1:]]), jnp.concatenate([v[1:], v[-1:]])
        out, aux = jax.vmap(self._node)(q, v, us, self.node_data(), q_next, v_next)
        lin = StageLinearisation(*out)
        return lin._replace(gap=lin.gap.at[-1].set(0.0)), aux

    def shoot(self, xs, us, dxs, dus, alpha):
        """``(xs, us, values)`` of the multiple-shooting step ``x_k ⊕ alpha dx_k``, ``u_k + alpha
        du_k``, and the nodes' residuals, constraints and gaps there (all nodes at once)."""
        model, nq, n = self.model, self.nq, self.model.nv
        q = jax.vmap(lambda q, d: unchecked_integrate(model, q, alpha * d))(xs[:, :nq], dxs[:, :n])
        v, us = xs[:, nq:] + alpha * dxs[:, n:], us + alpha * dus
        nodes = self.node_data()

        def node(q, v, u, node, q_next, v_next):
            q1, v1, forces, _ = self.step(q, v, u, node.active)
            gap = jnp.concatenate([difference(model, q_next, q1), v1 - v_next])
            points, speeds = contact_motion(model, self.schedule, self.bodies, q, v)
            return self.residuals(q, v, u, forces, node, points, speeds), self.constraints(q, u, forces, node, points), gap

        r, c, gaps = jax.vmap(node)(q, v, us, nodes, jnp.concatenate([q[1:], q[-1:]]), jnp.concatenate([v[1:], v[-1:]]))
        return jnp.concatenate([q, v], axis=1), us, StageValues(r, c, gaps[:-1])

    def initial_guess(self):
        """``(xs, us)``: the initial state at every node, and the torques that hold it statically
        on the node's contacts with the smallest norm (with the forces)."""
        model, n = self.model, self.model.nv
        q0 = self.x0[: self.nq]
        gravity = inverse_dynamics(model, q0, jnp.zeros(n, q0.dtype), jnp.zeros(n, q0.dtype))
        jac = contact_jacobian(model, self.schedule, self.bodies, q0)
        actuation = self.actuation(q0.dtype)

        def hold(active):
            on = row_mask(self.schedule, active).astype(q0.dtype)
            system = jnp.concatenate([actuation, jac.T * on[None, :]], axis=1)
            return jnp.linalg.lstsq(system, gravity)[0][: actuation.shape[1]]

        nodes = self.node_data()
        return jnp.broadcast_to(self.x0, (self.nodes + 1, self.x0.shape[0])), jax.vmap(hold)(nodes.active)


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
    multiple shooting transcription of ``kronjax.trajopt._legged`` (contact forward dynamics at
    nodes ``dt`` apart, friction pyramids, effort and joint limits, contact points on or above the
    ground), solved by the interior point with a Riccati step (``_riccati``).

    Args:
        model: the robot (a floating base for a legged robot; its ``limits`` give the effort and
            position limits).
        schedule: the :class:`ContactSchedule`: point contacts (``"6d"`` ones are not planned yet),
            the first phase's contacts on the ground at ``q0``. Its durations are traced: another
            schedule with the same phases and the same total duration runs the same compiled
            program.
        q0: ``(nq,)`` the initial configuration (a unit quaternion for the base); its dtype (float64 or
            float32) is the plan's.
        cost: the :class:`ContactCost` (default: stand in place).
        v0: ``(nv,)`` the initial velocity (default 0).
        dt: the nodes' spacing; the schedule's duration must be a whole number of ``dt``.
        touchdown_tolerance: how far above the ground (metres) a contact point may be once it has
            been active for a node.
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


def _problem(model: Model, schedule: ContactSchedule, q0, v0, cost: ContactCost, dt: float, tolerance: float) -> _LeggedProblem:
    """The transcription, or a clear error about its input."""
    if model.inertials is None:
        raise ValueError("optimize_on_contacts needs a model with inertials")
    bodies = schedule.bodies(model)
    flat = [contact.name for contact in schedule.contacts if contact.kind != "point"]
    if flat:
        raise ValueError(f"optimize_on_contacts plans point contacts; {flat} are '6d' (flat feet are not planned yet)")
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
    points, _ = contact_frames(model, schedule, bodies, q0)
    heights = np.asarray(points[:, 2])[first]
    if np.ptp(heights) > tolerance:
        raise ValueError(
            f"the first phase's contacts are at heights {np.round(heights, 4).tolist()} m at q0: the ground is flat, at their "
            f"mean height, and a held contact stays within touchdown_tolerance = {tolerance} m of it"
        )
    stand = Plan(jnp.array([0.0, duration]), jnp.stack([q0, q0]), jnp.stack([v0, v0]), jnp.zeros((2, model.nv), dtype))
    check_independent_contacts(model, schedule, bodies, stand)
    limits, limited = _finite_limits(model)
    weight = jnp.asarray(float(jnp.sum(model.inertials.mass) * jnp.linalg.norm(model.gravity)), dtype)
    return _LeggedProblem(
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


def _cold_state(problem: _LeggedProblem, barrier: float) -> Iterate:
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


def _run(problem: _LeggedProblem, warm: Iterate, cold, tol, violation_tol, max_iterations):
    xs, us = problem.initial_guess()
    pick = lambda a, b: jnp.where(cold, a, b)  # noqa: E731
    # the first node is the given state, also in a warm start from another one (a re-plan)
    it = warm._replace(xs=pick(xs, warm.xs).at[0].set(problem.x0), us=pick(us.at[-1].set(0.0), warm.us))
    it = solve(problem, it, cold, tol=tol, violation_tol=violation_tol, max_iterations=max_iterations)
    return it, _plan(problem, it)


def _plan(problem: _LeggedProblem, it: Iterate) -> Plan:
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
