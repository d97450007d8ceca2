"""Configuration space of a model: ``q`` on a Lie group, velocities in its tangent space.

Revolute and prismatic coordinates are Euclidean; free, spherical and planar joints
(:mod:`kronjax.chain`, Pinocchio's conventions) carry unit quaternions or ``(cos, sin)`` pairs, so
``q`` has ``nq`` numbers and a velocity ``v`` has ``nv``. ``integrate(q, v) = q ⊕ v`` applies the
exponential map of each joint on the right (the velocity is expressed in the child frame), and
``difference(q0, q1)`` is its inverse; they agree with ``pinocchio.integrate`` and
``pinocchio.difference``. Derivatives "with respect to ``q``" of every kronjax quantity
(Jacobians, Hessians, ``dtau/dq``) are taken along ``v``: ``d/dε f(q ⊕ ε e_k)`` at ``ε = 0``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from . import _lie
from .chain import Model
from .chain._tree import JOINT_NQ, JOINT_NV

__all__ = ["neutral", "integrate", "difference", "normalize", "random_configuration"]


def configuration_tangent(model: Model, q: Float[Array, " nq"], dq: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """The velocity ``v`` ``(nv,)`` of a change ``dq`` ``(nq,)`` of the configuration numbers:
    ``q + ε dq = q ⊕ ε v`` to first order, for a ``dq`` tangent to the unit quaternions (the part
    that changes a quaternion's norm is dropped). Free: ``v = (R^T dp, 2 vec(q̄ ⊗ dq))``;
    spherical: ``2 vec(q̄ ⊗ dq)``; planar: ``(R^T (dx, dy), c ds - s dc)``."""
    parts = []
    for kind, qs, _ in _runs(model):
        if kind is None:
            parts.append(dq[qs])
        else:
            qj, dqj = q[qs], dq[qs]
            rotation, _ = _lie.motion(kind, qj)
            if kind == "planar":
                c, s = qj[2], qj[3]
                parts += [rotation[:2, :2].T @ dqj[:2], (c * dqj[3] - s * dqj[2])[None]]
                continue
            if kind == "free":
                parts.append(rotation.T @ dqj[:3])
                qj, dqj = qj[3:], dqj[3:]
            parts.append(_quaternion_velocity(qj, dqj))
    return jnp.concatenate(parts) if parts else jnp.zeros(0, dq.dtype)


def _quaternion_velocity(quat: Array, dquat: Array) -> Array:
    """``2 vec(q̄ ⊗ dq)``: the angular velocity in the child frame of ``dq = 1/2 q ⊗ (w, 0)``."""
    u, w = quat[:3], quat[3]
    du, dw = dquat[:3], dquat[3]
    return 2 * (w * du - dw * u - jnp.cross(u, du))


# (kind, q start, v start) of every joint with a coordinate: static, hashable
MovingJoints = tuple[tuple[str, int, int], ...]


def moving_joints(model: Model) -> MovingJoints:
    """The joints with a coordinate (not fixed, not mimic); a poses-function model's coordinates
    are Euclidean, taken as revolute."""
    tree = model.kinematics
    kinds = getattr(tree, "_own_kinds", None) or ("R",) * model.nq
    q_index = getattr(tree, "q_index", tuple(range(model.nq)))
    v_index = getattr(tree, "v_index", tuple(range(model.nv)))
    return tuple((kind, qi, vi) for kind, qi, vi in zip(kinds, q_index, v_index) if kind != "F")


def joint_slices(model: Model):
    """``(kind, q slice, v slice)`` of every joint with a coordinate."""
    for kind, qi, vi in moving_joints(model):
        yield kind, slice(qi, qi + JOINT_NQ[kind]), slice(vi, vi + JOINT_NV[kind])


def one_dof_coordinates(model: Model) -> list[tuple[int, int]]:
    """``(velocity index, configuration index)`` of every 1-DoF coordinate (revolute, prismatic,
    the coordinates of a poses-function model), in coordinate order."""
    return [(vs.start, qs.start) for kind, qs, vs in joint_slices(model) if JOINT_NQ[kind] == JOINT_NV[kind] == 1]


def _runs(model: Model) -> list[tuple[str | None, slice, slice]]:
    """:func:`joint_slices` with each run of consecutive revolute and prismatic coordinates as one
    slice, of kind ``None``: a Euclidean run is one array operation, and JAX's derivatives of
    :func:`integrate` and :func:`configuration_tangent` then cost a few operations, not a few per
    joint (which dominated ``jax.hessian`` through the dynamics of a humanoid)."""
    runs: list[tuple[str | None, slice, slice]] = []
    for kind, qs, vs in joint_slices(model):
        euclidean = kind in ("R", "P")
        if euclidean and runs and runs[-1][0] is None and (runs[-1][1].stop, runs[-1][2].stop) == (qs.start, vs.start):
            runs[-1] = (None, slice(runs[-1][1].start, qs.stop), slice(runs[-1][2].start, vs.stop))
        else:
            runs.append((None if euclidean else kind, qs, vs))
    return runs


def neutral(model: Model, dtype=None) -> Float[Array, " nq"]:
    """The neutral configuration (``pinocchio.neutral``): zero coordinates, identity quaternions
    ``[0, 0, 0, 1]``, planar ``[0, 0, 1, 0]``.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        dtype: the result's floating dtype; ``None``: JAX's default float (float64 with
            ``jax_enable_x64``).

    Returns:
        ``(nq,)``: the neutral configuration.

    Example:
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free"), kj.Joint("R", parent=0)])
        >>> model.nq, model.nv
        (8, 7)
        >>> kj.neutral(model).tolist()  # free joint [x, y, z, qx, qy, qz, qw], then the revolute
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    """
    dtype = dtype or jnp.result_type(float)
    parts = [_lie.neutral(kind, dtype) for kind, _, _ in joint_slices(model)]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, dtype)


def integrate(model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]) -> Float[Array, " nq"]:
    """``q ⊕ v`` (``pinocchio.integrate``): every joint moved with the constant velocity ``v`` (its
    slice, in the child frame) for unit time. ``q + v`` when every joint is 1-DoF.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` a velocity, applied for unit time.

    Returns:
        ``(nq,)``: ``q ⊕ v``, its quaternions of unit norm.

    Example:
        The free body moving at unit speed along its own ``x`` axis while turning by ``pi/2`` about
        ``z`` runs along a quarter circle of length 1 (radius ``2/pi``), to ``(2/pi, 2/pi)``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free"), kj.Joint("R", parent=0)])  # q: 7 + 1, v: 6 + 1
        >>> v = jnp.array([1.0, 0.0, 0.0, 0.0, 0.0, jnp.pi / 2, 0.3])
        >>> q = kj.integrate(model, kj.neutral(model), v)
        >>> bool(np.allclose(q[:2], 2 / np.pi)), bool(np.isclose(q[7], 0.3))
        (True, True)
        >>> bool(np.allclose(q[3:7], [0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)]))
        True
    """
    q, v = model.check_q(q), model.check_v(v, "v")
    return unchecked_integrate(model, q, v)


def unchecked_integrate(model: Model, q: Array, v: Array) -> Array:
    if not model.has_multi_dof:
        return q + v.astype(q.dtype)
    return jnp.concatenate(
        [q[qs] + v[vs] if kind is None else _lie.integrate(kind, q[qs], v[vs]) for kind, qs, vs in _runs(model)]
    )


def difference(model: Model, q0: Float[ArrayLike, " nq"], q1: Float[ArrayLike, " nq"]) -> Float[Array, " nv"]:
    """``q1 ⊖ q0`` (``pinocchio.difference``): the velocity ``v`` with ``integrate(model, q0, v) =
    q1`` (rotations by at most ``pi``). ``q1 - q0`` when every joint is 1-DoF.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q0: ``(nq,)`` the configuration moved from.
        q1: ``(nq,)`` the configuration moved to.

    Returns:
        ``(nv,)``: ``q1 ⊖ q0``.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free"), kj.Joint("R", parent=0)])  # q: 7 + 1, v: 6 + 1
        >>> q0, v = kj.neutral(model), jnp.array([1.0, 0.0, 0.0, 0.0, 0.0, jnp.pi / 2, 0.3])
        >>> q1 = kj.integrate(model, q0, v)
        >>> bool(jnp.allclose(kj.difference(model, q0, q1), v))
        True
    """
    q0, q1 = model.check_q(q0, "q0"), model.check_q(q1, "q1")
    if not model.has_multi_dof:
        return q1 - q0
    parts = [q1[qs] - q0[qs] if kind is None else _lie.difference(kind, q0[qs], q1[qs]) for kind, qs, _ in _runs(model)]
    return jnp.concatenate(parts)


def normalize(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, " nq"]:
    """``q`` with every quaternion and ``(cos, sin)`` pair scaled to unit norm
    (``pinocchio.normalize``); other coordinates unchanged.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``(nq,)``: ``q`` normalised.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free"), kj.Joint("R", parent=0)])
        >>> q = jnp.array([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 2.0, 0.5])  # a quaternion of norm 2
        >>> kj.normalize(model, q).tolist()
        [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0, 0.5]
    """
    q = model._check_vector(q, "q", model.nq, "configuration numbers")  # of any norm
    if not model.has_multi_dof:
        return q
    return unchecked_normalize(moving_joints(model), q)


def random_configuration(model: Model, key: Array, translation_range: float = 1.0) -> Float[Array, " nq"]:
    """A random configuration: revolute and prismatic coordinates uniform within the model's
    position limits where both are finite, else in ``[-pi, pi]``; rotations uniform on SO(3)
    (free, spherical) or in ``[-pi, pi]`` (planar); the translations of free and planar joints
    uniform in ``[-translation_range, translation_range]`` (metres).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        key: a JAX random key (``jax.random.key`` or ``PRNGKey``).
        translation_range: half-width in metres of the free and planar joints' translations.

    Returns:
        ``(nq,)``: the configuration.

    Example:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.panda()
        >>> q = kj.random_configuration(model, jax.random.key(0))
        >>> q.shape, bool(jnp.all((model.limits.lower <= q) & (q <= model.limits.upper)))
        ((7,), True)
    """
    limits = model.limits
    parts = []
    for k, (kind, _, vs) in zip(jax.random.split(key, model.nq), joint_slices(model)):
        if kind in ("R", "P"):
            lower, upper = (-jnp.pi, jnp.pi) if limits is None else (limits.lower[vs], limits.upper[vs])
            bounded = jnp.isfinite(lower) & jnp.isfinite(upper)
            parts.append(_lie.random(kind, k, jnp.where(bounded, lower, -jnp.pi), jnp.where(bounded, upper, jnp.pi)))
        elif kind == "spherical":
            parts.append(_lie.random(kind, k))
        else:
            size = 3 if kind == "free" else 2
            parts.append(_lie.random(kind, k, -translation_range * jnp.ones(size), translation_range * jnp.ones(size)))
    return jnp.concatenate(parts)


# --------------------------------------------------------------------------------------------
# Local coordinates re-centred at a configuration, for ODE solvers (kronjax.simulate,
# kronjax.constrained): q = chart(q0, delta), delta in velocity coordinates
# --------------------------------------------------------------------------------------------


def _inverse_right_jacobian(theta: Array, w: Array) -> Array:
    """``J_r(theta)^-1 w`` for SO(3): the rate of ``theta`` in ``R = R0 exp([theta])`` whose
    angular velocity in the moving frame is ``w``: ``w + theta x w / 2 + beta theta x (theta x
    w)`` with ``beta = 1/t^2 - (1 + cos t) / (2 t sin t)``, ``t = |theta|`` (valid for ``t < 2
    pi``; a step's ``t`` is ``O(|w| dt)``)."""
    t2 = jnp.dot(theta, theta)
    small = t2 < 1e-2
    t = jnp.sqrt(jnp.where(small, 1.0, t2))  # double where: finite derivatives at theta = 0
    series = 1 / 12 + t2 / 720 * (1 + t2 / 42 * (1 + t2 / 40))
    beta = jnp.where(small, series, 1 / t**2 - (1 + jnp.cos(t)) / (2 * t * jnp.sin(t)))
    txw = jnp.cross(theta, w)
    return w + 0.5 * txw + beta * jnp.cross(theta, txw)


def _unit(x: Array) -> Array:
    return x / jnp.linalg.norm(x)


def chart(joints: MovingJoints, q0: Array, delta: Array) -> Array:
    """``q = chart(q0, delta)`` (``(nq,)`` from ``(nq,)`` and ``(nv,)``; module doc), unit
    quaternions and ``(cos, sin)`` pairs normalised."""
    parts = []
    for kind, qi, vi in joints:
        qj, dj = q0[qi : qi + JOINT_NQ[kind]], delta[vi : vi + JOINT_NV[kind]]
        if kind == "free":
            quat = _unit(_lie.quat_multiply(qj[3:], _lie.quat_exp3(dj[3:])))
            parts += [qj[:3] + dj[:3], quat]
        elif kind == "spherical":
            parts.append(_unit(_lie.quat_multiply(qj, _lie.quat_exp3(dj))))
        elif kind == "planar":
            c, s = jnp.cos(dj[2]), jnp.sin(dj[2])
            cs = jnp.stack([qj[2] * c - qj[3] * s, qj[3] * c + qj[2] * s])
            parts += [qj[:2] + dj[:2], _unit(cs)]
        else:
            parts.append(qj + dj)
    return jnp.concatenate(parts)


def chart_rate(joints: MovingJoints, q: Array, delta: Array, v: Array) -> Array:
    """``d(delta)/dt`` ``(nv,)`` at ``q = chart(q0, delta)`` moving with velocity ``v``."""
    parts = []
    for kind, qi, vi in joints:
        qj, dj, vj = q[qi : qi + JOINT_NQ[kind]], delta[vi : vi + JOINT_NV[kind]], v[vi : vi + JOINT_NV[kind]]
        if kind == "free":
            parts += [_lie.quat_rotate(qj[3:], vj[:3]), _inverse_right_jacobian(dj[3:], vj[3:])]
        elif kind == "spherical":
            parts.append(_inverse_right_jacobian(dj, vj))
        elif kind == "planar":
            parts += [_lie.rot2(qj[2], qj[3], vj[:2]), vj[2:]]
        else:
            parts.append(vj)
    return jnp.concatenate(parts)


def configuration_rate(joints: MovingJoints, q: Array, v: Array) -> Array:
    """``qdot`` ``(nq,)`` of the configuration numbers (``d/dε integrate(q, ε v)`` at 0):
    ``R v_lin`` and ``q ⊗ (w, 0) / 2`` free, ``q ⊗ (w, 0) / 2`` spherical, ``(R v_xy, wz (-s,
    c))`` planar, ``v`` otherwise."""
    parts = []
    for kind, qi, vi in joints:
        qj, vj = q[qi : qi + JOINT_NQ[kind]], v[vi : vi + JOINT_NV[kind]]
        zero = jnp.zeros(1, q.dtype)
        if kind == "free":
            parts += [_lie.quat_rotate(qj[3:], vj[:3]), 0.5 * _lie.quat_multiply(qj[3:], jnp.concatenate([vj[3:], zero]))]
        elif kind == "spherical":
            parts.append(0.5 * _lie.quat_multiply(qj, jnp.concatenate([vj, zero])))
        elif kind == "planar":
            parts += [_lie.rot2(qj[2], qj[3], vj[:2]), vj[2] * jnp.stack([-qj[3], qj[2]])]
        else:
            parts.append(vj)
    return jnp.concatenate(parts)


def unchecked_normalize(joints: MovingJoints, q: Array) -> Array:
    """:func:`normalize` over ``joints`` (no input checks)."""
    return jnp.concatenate([_lie.normalize(kind, q[qi : qi + JOINT_NQ[kind]]) for kind, qi, _ in joints])
