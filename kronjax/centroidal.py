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
from .chain import Inertials, Model
from .chain._arrays import is_concrete
from .kinematics._jacobians import unchecked_jacobians, unchecked_jacobians_dot

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
    if is_concrete(ine.mass) and not np.sum(np.asarray(ine.mass)) > 0:
        raise ValueError("the model's total mass is zero: its centre of mass is undefined")
    return ine


def _centres(model: Model, ine: Inertials, q: Array) -> tuple[Array, Array, Array]:
    """Rotations ``(nb, 3, 3)``, centres of mass ``(nb, 3)`` in the base frame and ``(nb, 3)``
    body-frame centres of mass in ``q``'s dtype."""
    com = ine.com.astype(q.dtype)
    rotations, origins = model.poses(q)
    return rotations, origins + jnp.einsum("bij,bj->bi", rotations, com), com


def center_of_mass(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, 3]:
    """The system's centre of mass ``c = sum_b m_b p_b / m``, ``(3,)`` in the base frame.

    Pinocchio's ``centerOfMass(model, data, q)`` (``data.com[0]``).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``(3,)``: ``c`` in the base frame.

    Raises:
        ValueError: for a model without inertials or of zero total mass.

    Example:
        The double pendulum stretched along ``+x``: its links' centres of mass are at ``Lc`` and
        ``L + Lc`` (0.61 and 1.83 m), of equal masses:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model = kj.models.double_pendulum()
        >>> c = kj.center_of_mass(model, jnp.zeros(2))
        >>> c.shape
        (3,)
        >>> bool(np.allclose(c, [(0.61 + 1.83) / 2, 0.0, 0.0]))
        True
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

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``(3, nv)``: ``J_com``.

    Raises:
        ValueError: for a model without inertials or of zero total mass.

    Example:
        ``J_com v`` is the velocity of :func:`center_of_mass` (a forward-mode derivative along ``v``):

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> J_com = kj.center_of_mass_jacobian(model, q)
        >>> J_com.shape
        (3, 2)
        >>> c_dot = jax.jvp(lambda q: kj.center_of_mass(model, q), (q,), (v,))[1]
        >>> bool(jnp.allclose(J_com @ v, c_dot))
        True
    """
    ine = _inertials(model)
    q = model.check_q(q)
    jt = unchecked_jacobians(model, q, ine.com.astype(q.dtype), "base")[0]
    mass = ine.mass.astype(q.dtype)
    return jnp.einsum("b,bik->ik", mass, jt) / jnp.sum(mass)


def _momentum_matrix(model: Model, ine: Inertials, q: Array) -> Array:
    rotations, centres, com = _centres(model, ine, q)
    jt, jr = unchecked_jacobians(model, q, com, "base")
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

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``(6, nv)``: ``A_g``, linear rows first.

    Raises:
        ValueError: for a model without inertials or of zero total mass.

    Example:
        The linear rows are the total mass times :func:`center_of_mass_jacobian`:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model, q = kj.models.panda(), jnp.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
        >>> A_g = kj.centroidal_momentum_matrix(model, q)
        >>> A_g.shape
        (6, 7)
        >>> mass = jnp.sum(model.inertials.mass)
        >>> bool(jnp.allclose(A_g[:3], mass * kj.center_of_mass_jacobian(model, q)))
        True
    """
    ine = _inertials(model)
    return _momentum_matrix(model, ine, model.check_q(q))


def centroidal_momentum(model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]) -> Float[Array, 6]:
    """The centroidal momentum ``h_G = A_g v``, ``(6,)``: linear momentum, then angular momentum
    about the centre of mass, base-frame axes (:func:`centroidal_momentum_matrix`). Pinocchio's
    ``computeCentroidalMomentum(model, data, q, v)`` (``data.hg``).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` velocity (the tangent space at ``q`` for multi-DoF joints).

    Returns:
        ``(6,)``: ``h_G``, linear momentum first.

    Example:
        The double pendulum stretched along ``+x`` turning rigidly at 1 rad/s about the base's
        ``z`` axis: its angular momentum about the centre of mass ``c = (1.22, 0, 0)`` is
        ``2 Izz + m (Lc^2 + (L + Lc)^2) - 2 m |c|^2``, its linear momentum ``2 m (0, |c|, 0)``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model = kj.models.double_pendulum()  # m, L, Lc, Izz = 14.59, 1.22, 0.61, 1.36
        >>> h = kj.centroidal_momentum(model, jnp.zeros(2), jnp.array([1.0, 0.0]))
        >>> m, L, Lc, Izz = 14.59, 1.22, 0.61, 1.36
        >>> bool(np.isclose(h[5], 2 * Izz + m * (Lc**2 + (L + Lc) ** 2) - 2 * m * 1.22**2))
        True
        >>> bool(np.allclose(h[:3], [0.0, 2 * m * 1.22, 0.0]))
        True
    """
    ine = _inertials(model)
    q, v = model.check_q(q), model.check_v(v, "v")
    return _momentum_matrix(model, ine, q) @ v


def centroidal_momentum_matrix_dot(model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]) -> Float[Array, "6 nv"]:
    """The time derivative ``dA_g/dt``, ``(6, nv)``, of :func:`centroidal_momentum_matrix` along
    the velocity ``v``, so that ``dh_G/dt = A_g a + (dA_g/dt) v`` (the rate of change of the
    centroidal momentum, the sum of the external wrenches about the centre of mass).

    From the bodies' Jacobians and their time derivatives (:func:`kronjax.jacobians_dot`):
    ``d/dt (m_b [p_b - c]x J_TG,b) = m_b ([p_b_dot - c_dot]x J_TG,b + [p_b - c]x dJ_TG,b/dt)`` and
    ``d/dt (I_b^0 J_R,b) = ([w_b]x I_b^0 - I_b^0 [w_b]x) J_R,b + I_b^0 dJ_R,b/dt`` with
    ``I_b^0 = R_b I_b R_b^T``. Pinocchio's ``dccrba(model, data, q, v)`` (``data.dAg``).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` velocity (the tangent space at ``q`` for multi-DoF joints).

    Returns:
        ``(6, nv)``: ``dA_g/dt``.

    Example:
        ``dA_g/dt`` is the forward-mode derivative of :func:`centroidal_momentum_matrix` along ``v``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> A_dot = kj.centroidal_momentum_matrix_dot(model, q, v)
        >>> A_dot.shape
        (6, 2)
        >>> bool(jnp.allclose(A_dot, jax.jvp(lambda q: kj.centroidal_momentum_matrix(model, q), (q,), (v,))[1]))
        True
    """
    ine = _inertials(model)
    q, v = model.check_q(q), model.check_v(v, "v")
    v = v.astype(q.dtype)
    rotations, centres, com = _centres(model, ine, q)
    jt, jr = unchecked_jacobians(model, q, com, "base")
    djt, djr = unchecked_jacobians_dot(model, q, v, com, "base")
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
