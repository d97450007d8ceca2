"""A plan checked by simulation along its contact schedule: :func:`validate` runs the robot under
the plan's feed-forward torques plus a PD term on the actuated joints, with the contacts of the
schedule held as constraints (touching down where the simulated foot is, through a plastic impact),
and reports how far the motion strays from the plan, the contact forces' friction-cone margins
and what the plan itself violates.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..configuration import chart, chart_rate, difference, joint_slices, moving_joints, unchecked_integrate
from ..dynamics import inverse_dynamics
from ._contact_dynamics import (
    contact_dynamics,
    contact_frames,
    contact_jacobian,
    contact_jacobian_and_drift,
    contact_residual,
    impact,
    project_onto_contacts,
    row_mask,
    support_owner,
    support_points,
)
from ._contacts import ContactSchedule


def _optional_array(x):
    return None if x is None else jnp.asarray(x)


class Plan(eqx.Module):
    """A planned motion at ``K`` sample times, as :func:`validate` reads it.

    Attributes:
        ts: ``(K,)`` increasing times from 0 (seconds).
        q: ``(K, nq)`` configurations.
        v: ``(K, nv)`` velocities.
        tau: ``(K, nv)`` the generalised forces the actuators apply: the joint torques, 0 on the
            coordinates of free joints (a floating base has no actuator).
        forces: ``(K, R)`` the contact forces on the robot in the base frame's axes, the
            schedule's contacts in order (3 rows per point contact, 6 per ``"6d"`` one: force, then
            moment about the point); ``None`` if the plan has none.
        vd: ``(K, nv)`` accelerations, or ``None``; with ``forces``, :func:`validate` reports the
            residual of the plan's equations of motion.

    Example:
        A floating box (``nq = 7``, ``nv = 6``) planned to rest for 0.2 s at 3 samples, the
        ground's wrench on a flat foot (6 rows) holding its 2 kg:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> box = kj.from_joints([kj.Joint("free")], [kj.Inertial(mass=2.0, inertia=(0.1, 0.2, 0.3))])
        >>> still = jnp.zeros((3, 6))
        >>> wrench = jnp.tile(jnp.array([0.0, 0.0, 19.62, 0.0, 0.0, 0.0]), (3, 1))
        >>> plan = trajopt.Plan(jnp.linspace(0.0, 0.2, 3), jnp.tile(kj.neutral(box), (3, 1)), still, still, wrench, still)
        >>> plan.q.shape, plan.forces.shape
        ((3, 7), (3, 6))
    """

    ts: Float[Array, " K"] = eqx.field(converter=jnp.asarray)
    q: Float[Array, "K nq"] = eqx.field(converter=jnp.asarray)
    v: Float[Array, "K nv"] = eqx.field(converter=jnp.asarray)
    tau: Float[Array, "K nv"] = eqx.field(converter=jnp.asarray)
    forces: Float[Array, "K R"] | None = eqx.field(default=None, converter=_optional_array)
    vd: Float[Array, "K nv"] | None = eqx.field(default=None, converter=_optional_array)


class Validation(NamedTuple):
    """What :func:`validate` measured: the simulated motion and its figures.

    Attributes:
        ts: ``(N + 1,)`` the simulation's times.
        q, v: ``(N + 1, nq)`` and ``(N + 1, nv)`` the simulated states.
        forces: ``(N, R)`` the simulated contact forces at the start of each step (0 on the rows of
            inactive contacts), the layout of :attr:`Plan.forces`.
        base_drift: the largest distance between the simulated and the planned origin of body 0
            (the floating base), in metres.
        joint_error: the largest tracking error of an actuated coordinate (rad or m).
        cone_margin: the smallest ``mu f_n - |f_t|`` of the simulated forces of active contacts
            (N; negative: the foot would slip), and of a flat foot with a ``size`` the faces of
            its wrench cone's centre of pressure and yaw moment too (:meth:`Contact.cone`, in N;
            negative: the centre of pressure off the sole, or the yaw moment outside the
            planner's conservative bounds); ``nan`` if no contact is ever active.
        normal_force: the smallest simulated normal force of an active contact (N; negative: the
            ground would have to pull); ``nan`` if none is active.
        touchdown_speed: the largest speed of a contact point just before it touches down in the
            simulation (m/s; the plastic impact takes it to 0); 0 without a touchdown.
        contact_violation: the largest ``|Phi|`` of an active contact at the end of a step, before
            the projection puts it back (the integration's drift over one step, m or rad).
        plan_cone_margin, plan_normal_force: the same two figures of the plan's forces at its
            samples; ``nan`` without forces.
        plan_stance_violation: the largest distance a contact's support point (its point, or a
            sole's corner) moves in the plan while its contact is active, from where it touched
            down (m).
        plan_dynamics_residual: the largest ``|M vd + h - tau - A^T forces|`` at the plan's
            samples (N or N m; the rows of the floating base hold the underactuation); ``nan``
            without ``vd`` or ``forces``.

    Example:
        The figures, in order after the simulated arrays (:func:`validate`'s example runs one):

        >>> from kronjax import trajopt
        >>> trajopt.Validation._fields[:6]
        ('ts', 'q', 'v', 'forces', 'base_drift', 'joint_error')
    """

    ts: Array
    q: Array
    v: Array
    forces: Array
    base_drift: float
    joint_error: float
    cone_margin: float
    normal_force: float
    touchdown_speed: float
    contact_violation: float
    plan_cone_margin: float
    plan_normal_force: float
    plan_stance_violation: float
    plan_dynamics_residual: float


def actuated(model: Model) -> np.ndarray:
    """``(nv,)`` booleans: the coordinates that are not a free joint's."""
    mask = np.ones(model.nv, bool)
    for kind, _, vs in joint_slices(model):
        if kind == "free":
            mask[vs] = False
    return mask


def _reference(model: Model, plan: Plan, t, held_at=None):
    """The plan at time ``t``: ``(q, v, tau)`` interpolated linearly between its samples (``q``
    along the tangent space); with ``held_at`` (a time), ``tau`` is the last sample's at that time
    instead (a zero-order hold: the simulation passes each step's midpoint, so that no stage of a
    step ending on a sample takes the next sample's torque by rounding)."""
    k = jnp.clip(jnp.searchsorted(plan.ts, t, side="right") - 1, 0, plan.ts.shape[0] - 2)
    alpha = jnp.clip((t - plan.ts[k]) / (plan.ts[k + 1] - plan.ts[k]), 0.0, 1.0)
    q = unchecked_integrate(model, plan.q[k], alpha * difference(model, plan.q[k], plan.q[k + 1]))
    if held_at is None:
        tau = (1 - alpha) * plan.tau[k] + alpha * plan.tau[k + 1]
    else:
        tau = plan.tau[jnp.clip(jnp.searchsorted(plan.ts, held_at, side="right") - 1, 0, plan.ts.shape[0] - 1)]
    return q, (1 - alpha) * plan.v[k] + alpha * plan.v[k + 1], tau


def _forces_margins(schedule: ContactSchedule, forces, active, rotations) -> tuple[float, float]:
    """``(min margin, min f_n)`` over the active contacts (``forces`` ``(S, R)``, ``active`` ``(S,
    C)``, the contacts' bodies' ``rotations`` ``(S, C, 3, 3)``); ``nan`` where none is active. A
    contact's margin is ``mu f_n - |f_t|``; a flat foot's with a ``size``, the least of that and its
    wrench cone's other faces (:meth:`Contact.cone`: its centre of pressure and its yaw moment, in
    newtons)."""
    margins, normals = [], []
    start = 0
    for c, contact in enumerate(schedule.contacts):
        f = forces[:, start : start + contact.rows]
        on = active[:, c]
        margin = float(contact.friction) * f[:, 2] - np.hypot(f[:, 0], f[:, 1])
        if contact.kind == "6d" and np.all(np.asarray(contact.size) > 0):
            faces = jax.vmap(contact.cone)(jnp.asarray(f), jnp.asarray(rotations[:, c]))
            margin = np.minimum(margin, -np.max(np.asarray(faces)[:, 4:], axis=1))
        normals.append(np.where(on, f[:, 2], np.inf))
        margins.append(np.where(on, margin, np.inf))
        start += contact.rows
    margin, normal = np.min(margins), np.min(normals)
    return (float(margin), float(normal)) if np.isfinite(normal) else (float("nan"), float("nan"))


# the classical Runge-Kutta tableau, its stages run in a loop so that the program holds one copy
# of the contact dynamics: ANYmal's simulation compiled for 47 s with Tsit5's seven stages inlined
# (and the contacts' Jacobians by autodiff of the poses), 22 s with this loop
_RK4_NODES = (0.0, 0.5, 0.5, 1.0)
_RK4_WEIGHTS = (1 / 6, 1 / 3, 1 / 3, 1 / 6)


def _simulate(model: Model, schedule: ContactSchedule, bodies: tuple[int, ...], plan: Plan, kp, kd, dt, steps: int, hold: bool):
    """The simulation: ``(q, v, forces, contact_violation, touchdown_speed)`` over ``steps``
    steps of ``dt`` (one compiled program for every phase: the contacts are masked). A step is
    the classical Runge-Kutta method in the chart at its start (:mod:`kronjax.simulate`), the
    forces are its first stage's."""
    joints = moving_joints(model)
    on = jnp.asarray(actuated(model), plan.q.dtype)
    nodes, weights = (jnp.asarray(x, plan.q.dtype) for x in (_RK4_NODES, _RK4_WEIGHTS))

    def stage(q, t, delta, rate, rows, middle):
        x = chart(joints, q, delta)
        q_ref, v_ref, tau_ref = _reference(model, plan, t, middle if hold else None)
        tau = on * (tau_ref + kp * difference(model, x, q_ref) + kd * (v_ref - rate))
        jac, gamma = contact_jacobian_and_drift(model, schedule, bodies, x, rate)
        vd, forces = contact_dynamics(model, x, rate, tau, jac, gamma, rows)
        return chart_rate(joints, x, delta, rate), vd, forces

    def runge_kutta(q, v, t, rows):
        def body(i, carry):
            k_delta, k_rate, sum_delta, sum_rate, forces = carry
            d, r, f = stage(q, t + nodes[i] * dt, nodes[i] * dt * k_delta, v + nodes[i] * dt * k_rate, rows, t + 0.5 * dt)
            forces = jnp.where(i == 0, f, forces)
            return d, r, sum_delta + weights[i] * d, sum_rate + weights[i] * r, forces

        zero = jnp.zeros_like(v)
        rows_zero = jnp.zeros(rows.shape, v.dtype)
        _, _, d, r, forces = jax.lax.fori_loop(0, 4, body, (zero, zero, zero, zero, rows_zero))
        return chart(joints, q, dt * d), v + dt * r, forces

    def step(carry, k):
        q, v, anchors, before = carry
        t = k * dt
        active = schedule.active_at(t + 0.5 * dt)
        rows = row_mask(schedule, active)
        touching = active & ~before
        positions, rotations = contact_frames(model, schedule, bodies, q)
        anchors = (
            jnp.where(touching[:, None], positions, anchors[0]),
            jnp.where(touching[:, None, None], rotations, anchors[1]),
        )
        jac = contact_jacobian(model, schedule, bodies, q)
        speeds = jnp.linalg.norm((jac @ v)[_point_rows(schedule)].reshape(-1, 3), axis=1)
        speed = jnp.max(jnp.where(touching & (k > 0), speeds, 0.0))
        v = v - impact(model, q, jac, rows, v)
        q1, v1, forces = runge_kutta(q, v, t, rows)
        # the step's own drift, before the projection removes it
        violation = jnp.max(jnp.where(rows, jnp.abs(contact_residual(model, schedule, bodies, q1, anchors)), 0.0))
        q1, v1 = project_onto_contacts(model, schedule, bodies, q1, v1, anchors, rows)
        return (q1, v1, anchors, active), (q1, v1, forces, violation, speed)

    count = schedule.num_contacts
    anchors = (jnp.zeros((count, 3), plan.q.dtype), jnp.tile(jnp.eye(3, dtype=plan.q.dtype), (count, 1, 1)))
    start = (plan.q[0], plan.v[0], anchors, jnp.zeros(count, bool))
    _, (qs, vs, forces, violation, speed) = jax.lax.scan(step, start, jnp.arange(steps, dtype=plan.q.dtype))
    return qs, vs, forces, jnp.max(violation), jnp.max(speed)


@functools.cache
def _compiled(backend: str):
    """:func:`_simulate` compiled for ``backend``; on the CPU without XLA's fusion emitters, as the
    solvers (:func:`kronjax.trajopt._interior_point._compiled`): ANYmal's simulation compiles in
    13 s instead of 17.6."""
    options = {"xla_cpu_use_fusion_emitters": False} if backend == "cpu" else None
    return eqx.filter_jit(_simulate, compiler_options=options)


def _point_rows(schedule: ContactSchedule) -> np.ndarray:
    """The rows of each contact's point velocity (its first three), ``(3 C,)``."""
    starts = np.cumsum([0] + [contact.rows for contact in schedule.contacts])[:-1]
    return (starts[:, None] + np.arange(3)).reshape(-1)


def validate(
    model: Model,
    schedule: ContactSchedule,
    plan: Plan,
    *,
    kp: ArrayLike = 0.0,
    kd: ArrayLike = 0.0,
    dt: float = 1e-3,
    hold: bool = False,
) -> Validation:
    """Simulate ``plan`` along ``schedule`` and measure how well it works.

    The simulation starts at the plan's first state and runs for the schedule's duration in steps
    of about ``dt`` (the classical Runge-Kutta method in local coordinates, then the state projected
    onto the active contacts).
    The actuated coordinates (all but a free joint's) get ``tau_plan(t) + kp (q_plan(t) ⊖ q) + kd
    (v_plan(t) - v)``, the plan interpolated linearly between its samples (``hold``: its torques
    held). Each active contact of
    the schedule holds its point (or, ``"6d"``, its frame) where it touched down in the
    simulation, by a bilateral constraint; at a touchdown the velocity jumps to the nearest one in
    kinetic energy that the new contacts admit (a plastic impact). The contact forces are not
    limited to the friction cone: the figures say where they leave it.

    Args:
        model: the :class:`~kronjax.chain.Model` (a floating-base robot: ``load_urdf(...,
            floating_base=True)``).
        schedule: the :class:`ContactSchedule` the plan was made for.
        plan: the :class:`Plan`, sampled over at least the schedule's duration.
        kp, kd: the PD gains on the actuated coordinates, scalars or ``(nv,)`` (``0``: the plan's
            torques alone).
        dt: the simulation's step (seconds; the schedule's duration is cut into equal steps of
            at most ``dt``; at most half the shortest phase, which the steps' midpoints must see).
        hold: hold each sample's torques until the next sample (a zero-order hold, as a
            discrete-time planner such as Crocoddyl applies them) instead of interpolating them.

    Returns:
        A :class:`Validation`.

    Example:
        A box of 2 kg standing on a flat foot (a ``"6d"`` contact 5 cm below its centre) for
        0.2 s, planned to stay still: the ground's simulated wrench is the box's weight, and the
        box does not move.

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> box = kj.from_joints([kj.Joint("free")], [kj.Inertial(mass=2.0, inertia=(0.1, 0.2, 0.3))])
        >>> sole = trajopt.Contact("sole", 0, point=(0.0, 0.0, -0.05), friction=0.5, kind="6d")
        >>> schedule = trajopt.ContactSchedule([sole], [(0.2, ("sole",))])
        >>> ts = jnp.linspace(0.0, 0.2, 3)
        >>> still = jnp.zeros((3, 6))
        >>> plan = trajopt.Plan(ts, jnp.tile(kj.neutral(box), (3, 1)), still, still)
        >>> result = trajopt.validate(box, schedule, plan, dt=0.02)
        >>> result.forces.shape, [round(abs(float(f)), 6) for f in result.forces[0]]  # 10 steps; force, moment
        ((10, 6), [0.0, 0.0, 19.62, 0.0, 0.0, 0.0])
        >>> result.base_drift < 1e-12, round(result.cone_margin, 6)  # mu f_n - |f_t| = 0.5 * 19.62
        (True, 9.81)
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    if not isinstance(schedule, ContactSchedule):
        raise TypeError(f"schedule must be a trajopt.ContactSchedule, got {type(schedule).__name__}")
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a trajopt.Plan, got {type(plan).__name__}")
    bodies = schedule.bodies(model)
    plan = _checked_plan(model, schedule, plan)
    check_independent_contacts(model, schedule, bodies, plan)
    dtype = plan.q.dtype
    kp, kd = (_gain(model, gain, name, dtype) for gain, name in ((kp, "kp"), (kd, "kd")))
    if not (isinstance(dt, (int, float)) and dt > 0):
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    shortest = float(jnp.min(schedule.durations))
    if dt > shortest / 2:
        raise ValueError(f"dt = {dt} s is more than half the shortest phase ({shortest} s): the steps could miss it")
    duration = float(schedule.duration)
    if float(plan.ts[-1]) < duration * (1 - 1e-9):
        raise ValueError(f"the plan ends at t = {float(plan.ts[-1])} s, before the schedule's end at {duration} s")
    steps = max(1, int(np.ceil(duration / dt - 1e-9)))
    step = jnp.asarray(duration / steps, dtype)
    qs, vs, forces, violation, speed = _compiled(jax.default_backend())(model, schedule, bodies, plan, kp, kd, step, steps, hold)
    ts = jnp.arange(steps + 1, dtype=dtype) * step
    q = jnp.concatenate([plan.q[:1], qs])
    v = jnp.concatenate([plan.v[:1], vs])
    drift, error = _tracking(model, plan, ts, q)
    active = np.asarray(jax.vmap(schedule.active_at)(ts[:-1] + 0.5 * step))
    rotations = jax.vmap(lambda q: contact_frames(model, schedule, bodies, q)[1])(q[:-1])
    margin, normal = _forces_margins(schedule, np.asarray(forces), active, np.asarray(rotations))
    plan_margin, plan_normal, stance, residual = _plan_figures(model, schedule, bodies, plan)
    return Validation(
        ts, q, v, forces, drift, error, margin, normal, float(speed), float(violation), plan_margin, plan_normal, stance, residual
    )


def _gain(model: Model, gain, name: str, dtype) -> Array:
    gain = jnp.broadcast_to(jnp.asarray(gain, dtype), (model.nv,)) if jnp.ndim(gain) == 0 else jnp.asarray(gain, dtype)
    if gain.shape != (model.nv,) or not bool(jnp.all(gain >= 0)):
        raise ValueError(f"{name} must be a non-negative scalar or ({model.nv},) array, got {gain}")
    return gain


def _checked_plan(model: Model, schedule: ContactSchedule, plan: Plan) -> Plan:
    """The plan with arrays of one floating dtype, or a clear error about its shapes or times."""
    q = jnp.asarray(plan.q)
    dtype = q.dtype if jnp.issubdtype(q.dtype, jnp.floating) else jnp.result_type(float)
    ts = jnp.asarray(plan.ts, dtype)
    k = ts.shape[0] if ts.ndim == 1 else -1
    rows = sum(contact.rows for contact in schedule.contacts)
    expected = {"q": (k, model.nq), "v": (k, model.nv), "tau": (k, model.nv), "forces": (k, rows), "vd": (k, model.nv)}
    arrays = {name: None if getattr(plan, name) is None else jnp.asarray(getattr(plan, name), dtype) for name in expected}
    if k < 2:
        raise ValueError(f"plan.ts must be a vector of at least 2 times, got shape {ts.shape}")
    for name, shape in expected.items():
        if arrays[name] is not None and arrays[name].shape != shape:
            raise ValueError(f"plan.{name} must have shape {shape} (K samples), got {arrays[name].shape}")
    values = np.asarray(ts)
    if abs(values[0]) > 1e-12 or not np.all(np.diff(values) > 0):
        raise ValueError("plan.ts must increase strictly from 0")
    for sample in range(k):
        model.check_q(arrays["q"][sample], f"plan.q[{sample}]")
    return Plan(ts, arrays["q"], arrays["v"], arrays["tau"], arrays["forces"], arrays["vd"])


def check_independent_contacts(model: Model, schedule: ContactSchedule, bodies, plan: Plan) -> None:
    """Refuse a phase whose active contacts' rows are dependent at the plan's sample nearest its
    start (two or more points of one rigid body, whose distances are fixed; a point and a flat foot
    on one body): their
    forces would be undetermined, the simulation's multipliers not finite."""
    starts = np.asarray(schedule.boundaries[:-1])
    samples = np.clip(np.searchsorted(np.asarray(plan.ts), starts), 0, plan.ts.shape[0] - 1)
    jacobians = np.asarray(_jacobians(model, schedule, bodies, plan.q[samples]))
    for p, (held, jac) in enumerate(zip(schedule.active, jacobians)):
        rows = np.asarray(row_mask(schedule, jnp.asarray(held)))
        if rows.any():
            singular = np.linalg.svd(jac[rows], compute_uv=False)
            rank = int(np.sum(singular > 1e-9 * singular[0]))
            if rank < rows.sum():
                names = [name for name, on in zip(schedule.names, held) if on]
                raise ValueError(
                    f"phase {p}: the {int(rows.sum())} rows of its contacts {names} have rank {rank} at t = "
                    f"{float(plan.ts[samples[p]]):.4g} s: redundant contacts (two or more points of one rigid body, "
                    "or a point and a flat foot on one body) leave their forces undetermined"
                )


@eqx.filter_jit
def _jacobians(model: Model, schedule: ContactSchedule, bodies, q):
    return jax.vmap(lambda q: contact_jacobian(model, schedule, bodies, q))(q)


def _tracking(model: Model, plan: Plan, ts, q) -> tuple[float, float]:
    """``(base drift, joint error)``: the largest distance of body 0's origin from the plan's,
    and the largest error of an actuated coordinate, over the simulated states."""
    drift, error = _tracking_errors(model, plan, ts, q)
    return float(jnp.max(drift)), float(np.max(np.abs(np.asarray(error)[:, actuated(model)]), initial=0.0))


@eqx.filter_jit
def _tracking_errors(model: Model, plan: Plan, ts, q):
    def errors(t, q):
        q_ref = _reference(model, plan, t)[0]
        return jnp.linalg.norm(model.poses(q)[1][0] - model.poses(q_ref)[1][0]), difference(model, q, q_ref)

    return jax.vmap(errors)(ts, q)


def _plan_figures(model: Model, schedule: ContactSchedule, bodies, plan: Plan) -> tuple[float, float, float, float]:
    """``(cone margin, normal force, stance violation, dynamics residual)`` of the plan at its
    samples (:class:`Validation`). A sample within ``1e-9 (1 + t)`` s before a phase boundary
    (``8 eps (1 + t)`` in the plan's precision, if coarser: ``1e-6 (1 + t)`` in float32) belongs to
    the phase that starts there (a phase holds its start): the boundary's time is a sum of
    durations, and its rounding (``0.02 + 0.25 + 0.02 > 0.29``, or a float32 node time ``0.27 ->
    0.26999998``) would otherwise give a planner's node at the boundary the phase that ends there."""
    slack = max(1e-9, 8.0 * float(jnp.finfo(plan.ts.dtype).eps))
    times = plan.ts + slack * (1.0 + jnp.abs(plan.ts))
    active = np.asarray(jax.vmap(schedule.active_at)(times))
    nan = float("nan")
    positions, rotations = (np.asarray(a) for a in jax.vmap(lambda q: contact_frames(model, schedule, bodies, q))(plan.q))
    margin, normal = (nan, nan) if plan.forces is None else _forces_margins(schedule, np.asarray(plan.forces), active, rotations)
    # a stance lasts from the phase where the contact became active: the samples of one stance
    # share that phase (a swing between two samples ends the stance though no sample sees it)
    table = np.array(schedule.active, dtype=bool)
    began = np.zeros(table.shape, int)
    for p in range(table.shape[0]):
        began[p] = np.where((p > 0) & table[p] & table[max(p - 1, 0)], began[max(p - 1, 0)], p)
    phases = np.asarray(jax.vmap(schedule.phase_at)(times))
    stance = 0.0
    # a sole's corners, not only its centre: a held sole turning about its centre moves them
    supports = np.asarray(jax.vmap(support_points, in_axes=(None, 0, 0))(schedule, positions, rotations))
    owner = support_owner(schedule)
    for c in range(schedule.num_contacts):
        anchors = {}
        for k, p in enumerate(phases):
            if table[p, c]:
                anchor = anchors.setdefault(began[p, c], supports[k, owner == c])
                stance = max(stance, float(np.max(np.linalg.norm(supports[k, owner == c] - anchor, axis=1))))
    if plan.forces is None or plan.vd is None:
        return margin, normal, stance, nan
    return margin, normal, stance, float(_dynamics_residual(model, schedule, bodies, plan, jnp.asarray(active)))


@eqx.filter_jit
def _dynamics_residual(model: Model, schedule: ContactSchedule, bodies, plan: Plan, active):
    """The largest ``|M vd + h - tau - A^T forces|`` over the plan's samples, ``tau`` on the
    actuated coordinates only."""
    on = jnp.asarray(actuated(model), plan.q.dtype)

    def residual(q, v, vd, tau, forces, active):
        jac = contact_jacobian(model, schedule, bodies, q)
        rows = row_mask(schedule, active).astype(q.dtype)
        return jnp.max(jnp.abs(inverse_dynamics(model, q, v, vd) - on * tau - jac.T @ (rows * forces)))

    return jnp.max(jax.vmap(residual)(plan.q, plan.v, plan.vd, plan.tau, plan.forces, active))
