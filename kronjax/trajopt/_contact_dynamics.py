"""The dynamics of a robot on the contacts of a :class:`ContactSchedule`, with a mask of the active
ones: the contacts' residuals (where each contact point, or flat foot, is against where it touched
down), their Jacobians and drifts along the tangent space, the accelerations and contact forces of
the active ones (Lagrange multipliers), and the projection of a state onto them.

All contacts are always in the arrays; a mask of rows says which hold. An inactive row's
multiplier is exactly 0 (its row of the Schur complement is the identity, its right-hand side 0),
so one compiled program serves every phase of a schedule.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, Bool, Float

from .._lie import log3
from ..chain import Model
from ..configuration import unchecked_integrate
from ..dynamics import inverse_dynamics, inverse_dynamics_derivatives, mass_matrix
from ..kinematics._jacobians import unchecked_jacobians
from ._contacts import ContactSchedule


def row_mask(schedule: ContactSchedule, active: Bool[Array, " C"]) -> Bool[Array, " R"]:
    """``(R,)`` the rows of the active contacts (3 per point contact, 6 per ``"6d"``)."""
    owner = np.repeat(np.arange(schedule.num_contacts), [contact.rows for contact in schedule.contacts])
    return active[owner]


def contact_frames(model: Model, schedule: ContactSchedule, bodies: tuple[int, ...], q: Array) -> tuple[Array, Array]:
    """``(positions (C, 3), rotations (C, 3, 3))`` of the contact points and their bodies' frames
    in the base frame at ``q``."""
    rotations, origins = model.poses(q)
    index = jnp.asarray(bodies)
    points = jnp.stack([contact.point for contact in schedule.contacts]).astype(origins.dtype)
    return origins[index] + jnp.einsum("cij,cj->ci", rotations[index], points), rotations[index]


def contact_motion(model: Model, schedule: ContactSchedule, bodies, q: Array, v: Array) -> tuple[tuple, tuple]:
    """``((points, rotations), (velocities, rotation rates))`` at ``(q, v)``: :func:`contact_frames`
    (``(C, 3)`` and ``(C, 3, 3)``) and their time derivatives, in the base frame (one forward-mode
    pass of the forward kinematics)."""
    return jax.jvp(
        lambda d: contact_frames(model, schedule, bodies, unchecked_integrate(model, q, d)), (jnp.zeros_like(v),), (v,)
    )


def support_points(schedule: ContactSchedule, points: Array, rotations: Array) -> Float[Array, "K 3"]:
    """``(K, 3)`` every contact's :attr:`~Contact.support` points (its point, or a sole's four
    corners) in the base frame, from the contact points ``(C, 3)`` and their bodies' rotations
    ``(C, 3, 3)``; linear in both, so that their velocities are this map of the points'
    velocities and the rotations' rates."""
    rows = []
    for c, contact in enumerate(schedule.contacts):
        offsets = (contact.support - contact.point).astype(points.dtype)
        rows.append(points[c] + offsets @ rotations[c].T)
    return jnp.concatenate(rows)


def support_owner(schedule: ContactSchedule) -> np.ndarray:
    """``(K,)`` the contact of each of :func:`support_points`' rows."""
    return np.repeat(np.arange(schedule.num_contacts), [1 if contact.kind == "point" else 4 for contact in schedule.contacts])


def contact_residual(
    model: Model, schedule: ContactSchedule, bodies, q: Array, anchors: tuple[Array, Array]
) -> Float[Array, " R"]:
    """``(R,)``: per contact, its point's position minus the anchor's, and for a ``"6d"`` contact
    the rotation from the anchor's frame to the body's, ``log(R R_anchor^T)`` (base-frame axes)."""
    positions, rotations = contact_frames(model, schedule, bodies, q)
    rows = []
    for c, contact in enumerate(schedule.contacts):
        rows.append(positions[c] - anchors[0][c])
        if contact.kind == "6d":
            rows.append(log3(rotations[c] @ anchors[1][c].T))
    return jnp.concatenate(rows)


def contact_jacobian(model: Model, schedule: ContactSchedule, bodies, q: Array) -> Float[Array, "R nv"]:
    """``(R, nv)``: per contact, the translational Jacobian of its point, and for a ``"6d"``
    contact its body's rotational Jacobian (base-frame axes, :func:`kronjax.jacobians`), the
    residual's Jacobian where it is 0 (at a contact that holds)."""
    points = jnp.stack([contact.point for contact in schedule.contacts]).astype(q.dtype)
    translational, rotational = unchecked_jacobians(model, q, points, "base", bodies=tuple(bodies))
    rows = []
    for c, contact in enumerate(schedule.contacts):
        rows.append(translational[c])
        if contact.kind == "6d":
            rows.append(rotational[c])
    return jnp.concatenate(rows)


def contact_jacobian_and_drift(model: Model, schedule: ContactSchedule, bodies, q, v) -> tuple[Array, Array]:
    """``(A (R, nv), gamma (R,))``: :func:`contact_jacobian` and the drift ``gamma = -(dA/dt) v``,
    so that the contacts' accelerations are 0 when ``A vd = gamma`` (:mod:`kronjax.constrained`'s
    convention). ``dA/dt`` is ``d/ds A(q ⊕ s v)`` at 0 (one forward-mode pass: under the KKT
    route's forward-mode derivatives it compiles in a quarter of the time of the analytical rates
    of :func:`kronjax.jacobians_dot`, 25 s against over 90 on ANYmal's 57 nodes)."""

    def velocity(delta):
        jac = contact_jacobian(model, schedule, bodies, unchecked_integrate(model, q, delta))
        return jac @ v, jac

    _, rate, jac = jax.jvp(velocity, (jnp.zeros_like(v),), (v,), has_aux=True)
    return jac, -rate


def _operators(model: Model, q, jac, rows: Array):
    """``(masked A, Cholesky factor of M, Schur complement A M^-1 A^T)`` on the active ``rows``,
    the inactive rows' diagonal of the complement 1 (their multipliers 0)."""
    on = rows.astype(q.dtype)
    jac = jac * on[:, None]
    factor = jsl.cho_factor(mass_matrix(model, q), lower=True)
    through = jsl.solve_triangular(factor[0], jac.T, lower=True)
    return jac, factor, through.T @ through + jnp.diag(1.0 - on)


def contact_dynamics(model: Model, q, v, tau, jac, gamma, rows: Array) -> tuple[Float[Array, " nv"], Float[Array, " R"]]:
    """``(vd, forces)`` of ``M vd + h = tau + A^T forces`` with ``A vd = gamma`` on the active
    ``rows`` (Huang eq. 1, through the Schur complement ``A M^-1 A^T``); ``forces`` is 0 on the
    inactive rows. For a point contact the forces are the ground's force on the robot, for a
    ``"6d"`` one its force and its moment about the point, in the base frame's axes."""
    return _solve(model, q, v, tau, jac, gamma, rows)[:2]


def _solve(model: Model, q, v, tau, jac, gamma, rows: Array):
    """``(vd, forces, masked A, Cholesky factor of M, Schur complement)`` of :func:`contact_dynamics`."""
    jac, factor, schur = _operators(model, q, jac, rows)
    free = jsl.cho_solve(factor, tau - inverse_dynamics(model, q, v, jnp.zeros_like(v)))
    forces = jnp.linalg.solve(schur, rows.astype(q.dtype) * gamma - jac @ free)
    return free + jsl.cho_solve(factor, jac.T @ forces), forces, jac, factor, schur


def project_onto_contacts(model: Model, schedule: ContactSchedule, bodies, q, v, anchors, rows: Array, iterations: int = 2):
    """``(q, v)`` moved onto the active contacts: Gauss-Newton steps of least norm on the
    positions, then the velocity change smallest in kinetic energy, ``v -= M^-1 A^T (A M^-1
    A^T)^-1 A v`` (a plastic impact where a contact has just touched down)."""
    on = rows.astype(q.dtype)

    def newton(_, x):
        jac = contact_jacobian(model, schedule, bodies, x) * on[:, None]
        residual = jnp.where(rows, contact_residual(model, schedule, bodies, x, anchors), 0.0)
        step = jac.T @ jnp.linalg.solve(jac @ jac.T + jnp.diag(1.0 - on), residual)
        return unchecked_integrate(model, x, -step)

    q = jax.lax.fori_loop(0, iterations, newton, q)
    return q, v - impact(model, q, contact_jacobian(model, schedule, bodies, q), rows, v)


def impact(model: Model, q, jac, rows: Array, v) -> Float[Array, " nv"]:
    """The velocity change smallest in kinetic energy that makes ``v`` admissible to the active
    ``rows`` of ``jac``: ``M^-1 A^T (A M^-1 A^T)^-1 A v`` (Gauss's principle for an impulse: a
    plastic impact)."""
    jac, factor, schur = _operators(model, q, jac, rows)
    return jsl.cho_solve(factor, jac.T @ jnp.linalg.solve(schur, jac @ v))


def damped_contact_dynamics(model: Model, schedule: ContactSchedule, bodies, q, v, tau, rows: Array, damping):
    """``(vd, forces)`` of :func:`contact_dynamics` on the schedule's contacts with Baumgarte's
    velocity term: the active contacts' accelerations are ``-damping`` times their velocities
    (``A vd = gamma - damping A v``), so that a contact that is moving when it becomes active
    comes to rest (with ``damping = 1 / dt``, within one explicit step of ``dt``)."""
    jac, gamma = contact_jacobian_and_drift(model, schedule, bodies, q, v)
    return contact_dynamics(model, q, v, tau, jac, gamma - damping * (jac @ v), rows)


class ContactDerivatives(NamedTuple):
    """:func:`damped_contact_dynamics_derivatives`' result: the accelerations ``vd`` ``(nv,)`` and
    forces ``(R,)``, their derivatives ``d_vd`` ``(nv, 2 nv + nu)`` and ``d_forces`` ``(R, 2 nv +
    nu)`` in ``(dq, dv, du)``, and by-products for other terms of a node: the contacts' Jacobian
    ``jacobian`` ``(R, nv)`` (every row, active or not) and ``velocity_q`` ``(R, nv)``, the
    derivative of their velocities ``A v`` along ``dq``."""

    vd: Array
    forces: Array
    d_vd: Array
    d_forces: Array
    jacobian: Array
    velocity_q: Array


def damped_contact_dynamics_derivatives(
    model: Model, schedule: ContactSchedule, bodies, q, v, tau, rows: Array, damping, actuation
) -> ContactDerivatives:
    """:func:`damped_contact_dynamics` and its derivatives in ``(dq, dv, du)``, ``dq`` along the
    tangent space (``q ⊕ dq``) and ``du`` the actuators' inputs, ``dtau = actuation @ du``
    (``actuation``: ``(nv, nu)``).

    The KKT route (Carpentier and Mansard, RSS 2018; Pinocchio's
    ``computeConstraintDynamicsDerivatives``): with ``vd`` and ``forces`` held, the residuals of
    ``M vd + h - tau - A^T forces = 0`` and ``A vd - gamma + damping A v = 0`` are differentiated
    (the inverse dynamics' analytical derivatives; the contacts' terms by one forward-mode pass in
    ``dq``), and the KKT matrix ``[[M, -A^T], [A, 0]]`` is solved once for all the columns. The
    same pass gives ``A``'s derivative ``H`` (``(R, nv, nv)``, ``H[r, i, k] = d A[r, i] / d dq_k``),
    from which the ``dv`` columns follow without another: ``gamma_r = -sum_ik H[r, i, k] v_i v_k`` is
    quadratic in ``v``, so ``d gamma_r / dv_j = -sum_k (H[r, j, k] + H[r, k, j]) v_k`` (half the
    forward-mode work of differentiating in ``dv`` as well)."""
    n = model.nv
    on = rows.astype(q.dtype)
    full, gamma = contact_jacobian_and_drift(model, schedule, bodies, q, v)
    vd, forces, jac, factor, schur = _solve(model, q, v, tau, full, gamma - damping * (full @ v), rows)
    dtau_dq, dtau_dv, _ = inverse_dynamics_derivatives(model, q, v, vd)

    # A itself is an output so that the pass's derivative of it (H) gives the dv columns
    def contact_terms(dq):
        jac, gamma = contact_jacobian_and_drift(model, schedule, bodies, unchecked_integrate(model, q, dq), v)
        return jac.T @ forces, jac @ (vd + damping * v) - gamma, jac

    forces_q, c_q, rates = jax.jacfwd(contact_terms)(jnp.zeros(n, q.dtype))
    velocity_q = jnp.einsum("rik,i->rk", rates, v)
    c_v = rates @ v + velocity_q + damping * full
    top = jnp.concatenate([forces_q - dtau_dq, -dtau_dv, actuation.astype(q.dtype)], axis=1)
    bottom = -on[:, None] * jnp.concatenate([c_q, c_v, jnp.zeros((on.shape[0], actuation.shape[1]), q.dtype)], axis=1)
    # [[M, -A^T], [A, I - on]] by its Schur complement, with M's Cholesky factor of the dynamics
    through = jsl.cho_solve(factor, top)
    d_forces = jnp.linalg.solve(schur, bottom - jac @ through)
    d_vd = through + jsl.cho_solve(factor, jac.T @ d_forces)
    return ContactDerivatives(vd, forces, d_vd, d_forces * on[:, None], full, velocity_q)
