"""The 3-DOF stacker of Tuan et al. 2019, section 5 (Tables 1-2, eqs. 102-107)."""

from __future__ import annotations

import math

from jaxtyping import ArrayLike, Float

from ..chain import Inertial, Model, from_dh


def stacker(
    *,
    m1: Float[ArrayLike, ""] = 4.0,
    m2: Float[ArrayLike, ""] = 2.5,
    m3: Float[ArrayLike, ""] = 1.8,
    d2: Float[ArrayLike, ""] = 0.6,
    a3: Float[ArrayLike, ""] = 1.4,
    l3: Float[ArrayLike, ""] = 0.65,
    yG2: Float[ArrayLike, ""] = 0.12,
    I2x: Float[ArrayLike, ""] = 0.045,
    I2y: Float[ArrayLike, ""] = 0.038,
    I2z: Float[ArrayLike, ""] = 0.052,
    I3x: Float[ArrayLike, ""] = 0.012,
    I3y: Float[ArrayLike, ""] = 0.31,
    I3z: Float[ArrayLike, ""] = 0.305,
    gravity=(0.0, 9.81, 0.0),
) -> Model:
    """The stacker (P-R-R) of Tuan et al. 2019, Fig. 2 and Tables 1-2.

    D-H table (standard convention, Table 1), bodies 0, 1, 2 = the paper's bodies 1, 2, 3::

        body  d    theta  a    alpha
        0     q1   0      0    pi/2     (rail travel, prismatic)
        1     d2   q2     0    pi/2     (slew)
        2     0    q3     a3   0        (luff; frame 3 sits at the boom tip)

    Inertials (Table 2): body 2 has its centre of mass at ``[0, yG2, 0]`` and principal inertias
    ``(I2x, I2y, I2z)``; body 3 at ``[l3 - a3, 0, 0]`` -- the printed ``[a3 - l3, 0, 0]`` is a
    misprint (reference README, T1): only ``l3 - a3`` (``l3`` = distance from the joint-3 axis to
    G3) reproduces the printed mass matrix (106). Body 1 only translates, so only ``m1`` enters
    the dynamics; it is given as a point mass.

    The paper is symbolic; the numeric defaults are those of the reference data. The paper gives
    no gravity: the default ``[0, +9.81, 0]`` (``y0`` pointing down, ``q1`` horizontal, ``q2`` a slew
    about the vertical) gives ``g(q) = [0, 0, m3 g0 l3 cos q3]``. The parameters may be JAX
    scalars, traced ones included: derivatives in them (``jax.grad`` in ``a3``, say) reach the
    model's leaves.

    Args:
        m1, m2, m3, d2, a3, l3, yG2, I2x, I2y, I2z, I3x, I3y, I3z: the paper's symbols (Tables 1-2);
            the defaults are its values.
        gravity: ``(3,)`` gravitational acceleration in the base frame (the paper's ``+y``).

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.stacker()
        >>> model.kinematics.kinds, model.joint_names
        (('P', 'R', 'R'), ('travel', 'slew', 'luff'))
        >>> q = jnp.array([0.5, 0.3, 0.7])
        >>> m3, g0, l3 = 1.8, 9.81, 0.65  # the defaults
        >>> bool(np.allclose(kj.gravity(model, q), [0.0, 0.0, m3 * g0 * l3 * np.cos(q[2])], atol=1e-4))
        True
    """
    half_pi = math.pi / 2
    rows = [
        ("P", 0.0, 0.0, 0.0, half_pi),
        ("R", d2, 0.0, 0.0, half_pi),
        ("R", 0.0, 0.0, a3, 0.0),
    ]
    inertials = [
        Inertial(mass=m1),
        Inertial(mass=m2, com=(0.0, yG2, 0.0), inertia=(I2x, I2y, I2z)),
        Inertial(mass=m3, com=(l3 - a3, 0.0, 0.0), inertia=(I3x, I3y, I3z)),
    ]
    return from_dh(
        rows,
        "standard",
        inertials,
        gravity=gravity,
        body_names=("rail", "slew", "boom"),
        joint_names=("travel", "slew", "luff"),
    )
