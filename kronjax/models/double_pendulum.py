"""The planar double pendulum of Huang et al. (Fig. 8, eqs. 37-39)."""

from __future__ import annotations

from .._deprecation import renamed_keywords
from ..chain import Inertial, Joint, Model, from_joints


@renamed_keywords(g0=("gravity", lambda g0: (0.0, -g0, 0.0)))
def double_pendulum(
    m: float = 14.59,
    L: float = 1.22,
    Lc: float = 0.61,
    Izz: float = 1.36,
    gravity=(0.0, -9.81, 0.0),
) -> Model:
    """A planar double pendulum of two equal links (Huang et al., Fig. 8), in joint space.

    Both links have mass ``m``, length ``L``, centre of mass at ``Lc`` from their proximal joint
    and moment of inertia ``Izz`` about the centre of mass (Fig. 8: 14.59 kg = 1 slug, 1.22 m,
    0.61 m, 1.36 kg m^2). Motion is in the x-y plane; both joint axes are ``z``; joint 1 is at
    the base origin, joint 2 at the tip of link 1.

    Coordinates (as in the reference data): ``q1`` is the absolute angle of link 1 measured
    counter-clockwise from ``+x``; ``q2`` is the angle of link 2 relative to link 1. Each body
    frame sits at its proximal joint with ``x`` along the link, so the centres of mass are at
    ``[Lc, 0, 0]``. Gravity is ``[0, -g0, 0]`` by default, ``g0 = 9.81`` (the paper does not state it; ``-y`` is down).

    Out-of-plane inertias (they do not affect planar motion): each link is a slender rod along its
    body ``x`` axis, inertia about the centre of mass ``diag(0, Izz, Izz)`` -- symmetric,
    positive semi-definite and satisfying the triangle inequalities of a rigid body.

    ``M = [[2 Izz + m (L^2 + 2 Lc^2 + 2 L Lc cos q2), Izz + m (Lc^2 + L Lc cos q2)], [., Izz + m Lc^2]]``,
    ``g = [g0 m ((L + Lc) cos q1 + Lc cos(q1 + q2)), g0 m Lc cos(q1 + q2)]``.

    Args:
        m: each link's mass (kg).
        L: each link's length (m).
        Lc: the distance from a link's proximal joint to its centre of mass (m).
        Izz: each link's moment of inertia about its centre of mass (kg m^2).
        gravity: ``(3,)`` the gravitational acceleration in the base frame.

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        ``M`` and ``g`` against the closed forms above, with the default parameters:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> m, L, Lc, Izz, g0 = 14.59, 1.22, 0.61, 1.36, 9.81
        >>> q1, q2 = 0.3, 0.5
        >>> M12 = Izz + m * (Lc**2 + L * Lc * np.cos(q2))
        >>> M = [[2 * Izz + m * (L**2 + 2 * Lc**2 + 2 * L * Lc * np.cos(q2)), M12], [M12, Izz + m * Lc**2]]
        >>> g = [g0 * m * ((L + Lc) * np.cos(q1) + Lc * np.cos(q1 + q2)), g0 * m * Lc * np.cos(q1 + q2)]
        >>> q = jnp.array([q1, q2])
        >>> bool(np.allclose(kj.mass_matrix(model, q), M)), bool(np.allclose(kj.gravity(model, q), g))
        (True, True)
    """
    joints = [
        Joint("R", parent=-1, axis=(0.0, 0.0, 1.0), name="joint1", body_name="link1"),
        Joint("R", parent=0, axis=(0.0, 0.0, 1.0), translation=(L, 0.0, 0.0), name="joint2", body_name="link2"),
    ]
    link = Inertial(mass=m, com=(Lc, 0.0, 0.0), inertia=(0.0, Izz, Izz))
    return from_joints(joints, [link, link], gravity=gravity)
