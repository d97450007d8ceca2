"""Centroidal quantities: the system's centre of mass, its Jacobian and the centroidal momentum.

Every function is pure in ``(model, q, ...)`` for one configuration and works under ``jax.jit``,
``jax.vmap`` and ``jax.grad``, for fixed-base and floating-base models alike (``q`` has ``nq``
numbers, ``v`` has ``nv``; Pinocchio's conventions, :mod:`kronjax.configuration`). Everything is
expressed in the base (world) frame. They are sums over the bodies of their centre-of-mass
Jacobians (:func:`kronjax.jacobians` with ``points="com"``), not a recursion of their own:
with ``m_b``, ``p_b`` (the body's centre of mass in the base frame), ``I_b`` (its inertia about
``p_b`` in body axes), ``R_b`` (its rotation), ``J_TG,b`` and ``J_R,b`` (base frame),
``m = sum_b m_b`` and ``c = sum_b m_b p_b / m``,

* ``J_com = sum_b m_b J_TG,b / m``, so that ``c_dot = J_com v``;
* ``A_g = [m J_com ; sum_b (m_b [p_b - c]x J_TG,b + R_b I_b R_b^T J_R,b)]``, so that
  ``h_G = A_g v`` is the linear momentum and the angular momentum about ``c`` (Orin, Goswami and
  Lee, "Centroidal dynamics of a humanoid robot", Autonomous Robots 35, 2013).

A body of the model's root that does not move (a fixed-base robot's base link, merged into the
base by the URDF loader) is not one of the model's bodies and does not count, as in Pinocchio,
whose ``centerOfMass`` leaves out the universe's inertia.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .calculus import skew
from .chain import Inertials, Model, _is_concrete
from .kinematics import _jacobians, _jacobians_dot

__all__ = [
    "center_of_mass",
    "center_of_mass_jacobian",
    "centroidal_momentum_matrix",
    "centroidal_momentum",
    "centroidal_momentum_matrix_dot",
]


def _inertials(model: Model) -> Inertials:
    if model.inertials is None:
        raise ValueError(
            "this model has no inertials (a kinematics-only model): centroidal quantities need the "
            "bodies' masses, centres of mass and inertia tensors; build it with inertials=[...]"
        )
    ine = model.inertials
    # under jit with the model as an argument the masses are unknown: 0/0 then gives NaN
    if _is_concrete(ine.mass) and not np.sum(np.asarray(ine.mass)) > 0:
        raise ValueError("the model's total mass is zero: its centre of mass is undefined")
    return ine


def _centres(model: Model, ine: Inertials, q: Array) -> tuple[Array, Array, Array]:
    """Rotations ``(nb, 3, 3)``, centres of mass ``(nb, 3)`` in the base frame and ``(nb, 3)``
    body-frame centres of mass in ``q``'s dtype."""
    com = ine.com.astype(q.dtype)
    rotations, origins = model.poses(q)
    return rotations, origins + jnp.einsum("bij,bj->bi", rotations, com), com


def center_of_mass(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, "3"]:
    """The system's centre of mass ``c = sum_b m_b p_b / m``, ``(3,)`` in the base frame.

    Pinocchio's ``centerOfMass(model, data, q)`` (``data.com[0]``).

    Raises:
        ValueError: for a model without inertials or of zero total mass.
    """
    ine = _inertials(model)
    q = model.check_q(q)
    centres = _centres(model, ine, q)[1]
    mass = ine.mass.astype(q.dtype)
    return mass @ centres / jnp.sum(mass)


def center_of_mass_jacobian(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, "3 nv"]:
    """The Jacobian of :func:`center_of_mass`, ``(3, nv)`` in the base frame: ``c_dot = J_com v``.

    ``J_com = sum_b m_b J_TG,b / m`` with the bodies' centre-of-mass Jacobians in the base frame
    (``v`` is the model's velocity, for a free joint ``[v_lin, w]`` in the child frame).
    Pinocchio's ``jacobianCenterOfMass(model, data, q)``.

    Raises:
        ValueError: for a model without inertials or of zero total mass.
    """
    ine = _inertials(model)
    q = model.check_q(q)
    jt = _jacobians(model, q, ine.com.astype(q.dtype), "base")[0]
    mass = ine.mass.astype(q.dtype)
    return jnp.einsum("b,bik->ik", mass, jt) / jnp.sum(mass)


def _momentum_matrix(model: Model, ine: Inertials, q: Array) -> Array:
    rotations, centres, com = _centres(model, ine, q)
    jt, jr = _jacobians(model, q, com, "base")
    mass = ine.mass.astype(q.dtype)
    c = mass @ centres / jnp.sum(mass)
    inertia = jnp.einsum("bij,bjk,blk->bil", rotations, ine.inertia.astype(q.dtype), rotations)
    linear = jnp.einsum("b,bik->ik", mass, jt)
    angular = jnp.einsum("b,bij,bjk->ik", mass, skew(centres - c), jt) + jnp.einsum("bij,bjk->ik", inertia, jr)
    return jnp.concatenate([linear, angular])


def centroidal_momentum_matrix(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, "6 nv"]:
    """The centroidal momentum matrix ``A_g``, ``(6, nv)``: ``h_G = A_g v``.

    Rows 0-2 give the linear momentum ``m c_dot``, rows 3-5 the angular momentum about the centre
    of mass, both in base-frame (world) axes:
    ``A_g = [sum_b m_b J_TG,b ; sum_b (m_b [p_b - c]x J_TG,b + R_b I_b R_b^T J_R,b)]``
    (base-frame Jacobians of the bodies' centres of mass and rotations). Pinocchio's
    ``ccrba(model, data, q, v)`` (``data.Ag``), whose ``Force`` layout is linear first too.

    Raises:
        ValueError: for a model without inertials or of zero total mass.
    """
    ine = _inertials(model)
    return _momentum_matrix(model, ine, model.check_q(q))


def centroidal_momentum(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]
) -> Float[Array, "6"]:
    """The centroidal momentum ``h_G = A_g v``, ``(6,)``: linear momentum, then angular momentum
    about the centre of mass, base-frame axes (:func:`centroidal_momentum_matrix`). Pinocchio's
    ``computeCentroidalMomentum(model, data, q, v)`` (``data.hg``).
    """
    ine = _inertials(model)
    q, v = model.check_q(q), model.check_v(v, "v")
    return _momentum_matrix(model, ine, q) @ v


def centroidal_momentum_matrix_dot(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]
) -> Float[Array, "6 nv"]:
    """The time derivative ``dA_g/dt``, ``(6, nv)``, of :func:`centroidal_momentum_matrix` along
    the velocity ``v``, so that ``dh_G/dt = A_g a + (dA_g/dt) v`` (the rate of change of the
    centroidal momentum, the sum of the external wrenches about the centre of mass).

    From the bodies' Jacobians and their time derivatives (:func:`kronjax.jacobians_dot`):
    ``d/dt (m_b [p_b - c]x J_TG,b) = m_b ([p_b_dot - c_dot]x J_TG,b + [p_b - c]x dJ_TG,b/dt)`` and
    ``d/dt (I_b^0 J_R,b) = ([w_b]x I_b^0 - I_b^0 [w_b]x) J_R,b + I_b^0 dJ_R,b/dt`` with
    ``I_b^0 = R_b I_b R_b^T``. Pinocchio's ``dccrba(model, data, q, v)`` (``data.dAg``).
    """
    ine = _inertials(model)
    q, v = model.check_q(q), model.check_v(v, "v")
    v = v.astype(q.dtype)
    rotations, centres, com = _centres(model, ine, q)
    jt, jr = _jacobians(model, q, com, "base")
    djt, djr = _jacobians_dot(model, q, v, com, "base")
    mass = ine.mass.astype(q.dtype)
    total = jnp.sum(mass)
    c = mass @ centres / total
    velocities, spins = jt @ v, jr @ v
    c_dot = mass @ velocities / total
    inertia = jnp.einsum("bij,bjk,blk->bil", rotations, ine.inertia.astype(q.dtype), rotations)
    spin = skew(spins)
    inertia_dot = spin @ inertia - inertia @ spin
    linear = jnp.einsum("b,bik->ik", mass, djt)
    angular = (
        jnp.einsum("b,bij,bjk->ik", mass, skew(velocities - c_dot), jt)
        + jnp.einsum("b,bij,bjk->ik", mass, skew(centres - c), djt)
        + jnp.einsum("bij,bjk->ik", inertia_dot, jr)
        + jnp.einsum("bij,bjk->ik", inertia, djr)
    )
    return jnp.concatenate([linear, angular])
