"""Velocities and accelerations of a body or of a point on it (Tuan eqs. 28-47)."""

from __future__ import annotations

from jaxtyping import Array, Float

from .._deprecation import renamed_keywords
from ..chain import Model
from ._jacobians import (
    JACOBIAN_FRAMES,
    check_frame,
    prepare_body,
    rotational_jacobian,
    translational_jacobian,
    unchecked_jacobians,
    unchecked_jacobians_dot,
)


@renamed_keywords(qd="v")
def linear_velocity(model: Model, q, v, body: int | str, point=None, frame: str = "base") -> Float[Array, 3]:
    """The linear velocity ``J_T v`` of a frame origin or body point, in the base (30, 44) or body frame (32, 46).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        point: ``None`` (the frame origin), ``"com"`` (the body's centre of mass) or a 3-vector in
            the body frame (``p_b^(b)``).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3,)``: the velocity.

    Example:
        It matches a finite difference of the position along ``v``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, v = jnp.array([0.3, 0.5]), jnp.array([1.0, -2.0])
        >>> velocity = kj.linear_velocity(model, q, v, "link2")
        >>> position = lambda q: kj.forward_kinematics(model, q).origins[1]
        >>> eps = 1e-3
        >>> fd = (position(q + eps * v) - position(q - eps * v)) / (2 * eps)  # central difference
        >>> bool(jnp.allclose(velocity, fd, atol=1e-4))
        True
    """
    return translational_jacobian(model, q, body, point, frame) @ model.check_v(v, "v")


@renamed_keywords(qd="v")
def angular_velocity(model: Model, q, v, body: int | str, frame: str = "base") -> Float[Array, 3]:
    """``omega = J_R v`` in the base (38) or body frame (39).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3,)``: the angular velocity.

    Example:
        In the plane, link 2 turns at ``qd1 + qd2`` about ``z``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> kj.angular_velocity(model, jnp.array([0.3, 0.5]), jnp.array([1.0, 2.0]), "link2").tolist()
        [0.0, 0.0, 3.0]
    """
    return rotational_jacobian(model, q, body, frame) @ model.check_v(v, "v")


def _accelerations(model: Model, q, v, vd, body, point, frame: str) -> tuple[Array, Array]:
    """Linear and angular acceleration of one body: ``J vd + (dJ/dt) v`` in the base frame
    (equal to ``J vd + H (v ⊗ v)``, 52, 62, 66), turned into body axes for ``"body"`` (59, 63)."""
    check_frame(frame, JACOBIAN_FRAMES)
    q, b, points = prepare_body(model, q, body, point)
    v, vd = model.check_v(v, "v"), model.check_v(vd, "vd")
    jt, jr = (x[b] for x in unchecked_jacobians(model, q, points, "base"))
    jtd, jrd = (x[b] for x in unchecked_jacobians_dot(model, q, v, points, "base"))
    a, alpha = jt @ vd + jtd @ v, jr @ vd + jrd @ v
    if frame == "body":
        rotation = model.poses(q)[0][b]
        a, alpha = rotation.T @ a, rotation.T @ alpha
    return a, alpha


@renamed_keywords(qd="v", qdd="vd")
def linear_acceleration(model: Model, q, v, vd, body: int | str, point=None, frame: str = "base") -> Float[Array, 3]:
    """Acceleration of a frame origin or body point: ``J_T vd + H_T (v ⊗ v)``.

    In the base frame (52, 66), or in body axes with ``H*_T`` (58-59).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        vd: ``(nv,)`` joint accelerations.
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        point: ``None`` (the frame origin), ``"com"`` (the body's centre of mass) or a 3-vector in
            the body frame (``p_b^(b)``).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3,)``: the acceleration.

    Example:
        Joint 1 turning at unit speed from ``q = 0``: the centripetal accelerations of link 2's
        origin (``-L``) and centre of mass (``-(L + Lc)``), along ``x``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, v, vd = jnp.zeros(2), jnp.array([1.0, 0.0]), jnp.zeros(2)
        >>> print(np.round(kj.linear_acceleration(model, q, v, vd, "link2"), 4))
        [-1.22  0.    0.  ]
        >>> bool(np.allclose(kj.linear_acceleration(model, q, v, vd, "link2", point="com"), [-1.83, 0.0, 0.0]))
        True
    """
    return _accelerations(model, q, v, vd, body, point, frame)[0]


@renamed_keywords(qd="v", qdd="vd")
def angular_acceleration(model: Model, q, v, vd, body: int | str, frame: str = "base") -> Float[Array, 3]:
    """Angular acceleration ``J_R vd + H_R (v ⊗ v)`` in the base (62) or body frame (63-64).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        vd: ``(nv,)`` joint accelerations.
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3,)``: the angular acceleration.

    Example:
        Joint 1 about ``z`` and joint 2 about the ``y`` axis it carries: ``alpha = qdd1 z + qdd2 y +
        qd1 qd2 (z x y)`` at ``q = 0`` (see :func:`rotational_hessian`).

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> arm = kj.from_joints([kj.Joint("R", axis=(0, 0, 1)),
        ...                       kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(1, 0, 0))])
        >>> q, v, vd = jnp.zeros(2), jnp.array([2.0, 3.0]), jnp.array([1.0, 0.5])
        >>> kj.angular_acceleration(arm, q, v, vd, 1).tolist()
        [-6.0, 0.5, 1.0]
    """
    return _accelerations(model, q, v, vd, body, None, frame)[1]
