"""The transcription of :func:`optimize_on_contacts` (``_legged``): a direct multiple shooting
transcription of a motion along a :class:`ContactSchedule`, node by node, with its costs
(:class:`ContactCost`), its Newton model for the interior point of ``_riccati``, and the exact
values its line search reads.

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
* **Constraints at every node.** Each active contact's force inside its cone
  (:meth:`Contact.cone`): a point contact's friction pyramid inscribed in its cone, ``|f_x| + |f_y|
  <= mu f_z`` (four faces; it implies ``f_z >= 0``), a flat foot's (``"6d"``) contact wrench cone of
  its sole (16 faces: friction, the centre of pressure on the sole, the yaw moment); the inactive
  contacts' forces are 0 by the dynamics. The torques within the model's effort limits, the joints
  within their position limits. Every support point (a contact point, or a sole's four corners) at
  or above the ground (flat, at the height of the contacts that are active at the start), and
  within ``touchdown_tolerance`` of it once its contact has been active for a node (so that a foot
  lands on the ground, not above it, and a sole lands flat).
* **Costs** (:class:`ContactCost`): the base's position and heading tracking a straight line to the
  target (its displacement and turn over the horizon, the last node weighted more), the joints near
  their initial posture, the velocities, torques and forces small, the swinging contact points
  following an arch of the given clearance, and the support points' speeds where they touch down
  small.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._lie import exp3, log3
from ..calculus import skew
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
    support_owner,
    support_points,
)
from ._contacts import ContactSchedule
from ._riccati import StageLinearisation, StageValues
from ._validate import actuated


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
        landing: weight of a contact's support points' velocities where it touches down (per
            m/s; a point, or a sole's four corners): the velocity that its first node's contact
            force stops.

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


class Nodes(NamedTuple):
    """Per node (``(S, ...)``): time, active contacts, contacts active over the previous node, the
    current swing's lift-off and touchdown times, and 1 at the last node."""

    t: Array
    active: Array
    previous: Array
    lift: Array
    touch: Array
    last: Array


class LeggedProblem(eqx.Module):
    """The transcription of one problem of :func:`optimize_on_contacts` (its checked input), with
    the interface of ``_riccati.solve``: :meth:`linearise`, :meth:`shoot`, :meth:`initial_guess`."""

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

    def node_data(self) -> Nodes:
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
        return Nodes(
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

    def residuals(self, q, v, u, forces, node: Nodes, frames, rates):
        """The scaled cost residuals of a node at ``(q, v)``, its torques ``u`` and contact forces.

        ``frames`` and ``rates`` are the contacts' points and rotations (``(C, 3)``, ``(C, 3, 3)``)
        and their time derivatives at ``(q, v)`` (:func:`contact_motion`), or, in the
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
        swinging = jnp.where(node.active | (node.last > 0), 0.0, cost.swing * (frames[0][:, 2] - arch))
        # a contact touching down is brought to rest within the node: its speed then, an impact's
        touching = (node.active & ~node.previous)[support_owner(self.schedule)]
        speeds = support_points(self.schedule, *rates)
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

    def constraints(self, q, u, forces, node: Nodes, frames):
        """The node's constraints (``<= 0``, relative) at ``q``, its torques ``u`` and contact
        forces; ``frames``: the contacts' points and rotations, as :meth:`residuals`'."""
        schedule, model = self.schedule, self.model
        rows = []
        start = 0
        for c, contact in enumerate(schedule.contacts):
            faces = contact.cone(forces[start : start + contact.rows], frames[1][c]) / self.weight
            start += contact.rows
            rows.append(jnp.where(node.active[c], faces, -1.0))
        effort, lower, upper = (jnp.asarray(a, q.dtype) for a in self.limits)
        u_rows, q_rows = (np.asarray(mask, dtype=bool) for mask in self.limited)
        rows += [u[u_rows] / effort - 1.0, -u[u_rows] / effort - 1.0]
        qj = q[jnp.asarray([i for _, i in one_dof_coordinates(model)], dtype=int)][q_rows]
        span = upper - lower
        rows += [(qj - upper) / span, (lower - qj) / span]
        height = (support_points(schedule, *frames)[:, 2] - self.ground) / 0.1
        # a contact held over the previous node stays where it touched down (Baumgarte's term):
        # within +-tolerance of the ground, not exactly on it, so that the interior point keeps an
        # interior (a bound that the dynamics hold at 0 would have none)
        held = node.previous[support_owner(schedule)]
        window = jnp.where(held, self.tolerance / 0.1, 0.0)
        rows += [-height - window, jnp.where(held, height - window, -1.0)]
        return jnp.concatenate(rows).astype(q.dtype)

    def _rows(self):
        """``(translation (C, 3), rotation (F, 3), flat (F,))``: the rows of the contacts'
        Jacobian (:func:`contact_jacobian`) that are each contact's translation, and each flat
        foot's rotation, with the flat feet's indices (static)."""
        starts = np.cumsum([0] + [contact.rows for contact in self.schedule.contacts])
        flat = [c for c, contact in enumerate(self.schedule.contacts) if contact.kind == "6d"]
        translation = starts[:-1, None] + np.arange(3)
        return translation, translation[flat] + 3, np.asarray(flat, dtype=int)

    def _node(self, q, v, u, node: Nodes, q_next, v_next):
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
        points, rotations = contact_frames(model, self.schedule, self.bodies, q)
        translation, rotation, flat = self._rows()

        def local(dq, v, u, forces):
            x = unchecked_integrate(model, q, dq)
            # the contact frames and their rates to first order in dq, from the Jacobians of the
            # dynamics' pass (A's translational rows, and a flat foot's rotational ones: a point
            # contact's rotation moves no support point): their values and derivatives at dq = 0
            # (all that is read) are exact, and no other pass of the kinematics is differentiated
            moved = points + jac[translation] @ dq
            speeds = jac[translation] @ v + velocity_q[translation] @ dq
            turn = jnp.zeros_like(points).at[flat].set(jac[rotation] @ dq)
            spin = jnp.zeros_like(points).at[flat].set(jac[rotation] @ v + velocity_q[rotation] @ dq)
            turned = jax.vmap(exp3)(turn) @ rotations
            frames, rates = (moved, turned), (speeds, skew(spin) @ turned)
            return self.residuals(x, v, u, forces, node, frames, rates), self.constraints(x, u, forces, node, frames)

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
            frames, rates = contact_motion(model, self.schedule, self.bodies, q, v)
            return self.residuals(q, v, u, forces, node, frames, rates), self.constraints(q, u, forces, node, frames), gap

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
