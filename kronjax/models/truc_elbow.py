"""The three-link elbow manipulator of Truc et al. 2019, section 5 (Table 1, eqs. 56-73)."""

from __future__ import annotations

import math

from .._deprecation import renamed_keywords
from ..chain import Inertial, Model, from_dh


@renamed_keywords(g=("gravity", lambda g: (0.0, 0.0, -g)))
def truc_elbow(
    *,
    l0: float = 0.294,
    r0: float = 0.140,
    l1: float = 0.190,
    r1: float = 0.088,
    l2: float = 0.170,
    r2: float = 0.080,
    m1: float = 5.248,
    m2: float = 2.412,
    m3: float = 1.577,
    I1xx: float = 83.5e-3,
    I1yy: float = 30.4e-3,
    I1zz: float = 83.5e-3,
    I2xx: float = 15.9e-3,
    I2yy: float = 40.5e-3,
    I2zz: float = 40.5e-3,
    I3xx: float = 7.9e-3,
    I3yy: float = 20.2e-3,
    I3zz: float = 20.2e-3,
    gravity=(0.0, 0.0, -9.807),
) -> Model:
    """The R-R-R elbow manipulator of Truc et al. 2019 (Fig. 2, Table 1), parameters of eq. (71).

    Keyword parameters carry the paper's symbols: ``l_{i-1}`` is the length of link ``i``,
    ``r_{i-1}`` the distance from joint ``i`` to the centroid of link ``i``, ``m_i`` its mass and
    ``Iixx, Iiyy, Iizz`` its principal moments of inertia about the centroid, in frame-``i`` axes
    (products of inertia are zero, sec. 5). Gravity is ``[0, 0, -g]`` in the base frame
    (Truc eq. 17). Defaults: eq. (71), ``g = 9.807``.

    D-H table (standard convention, Table 1); bodies 0, 1, 2 are the paper's links 1, 2, 3::

        body  theta  d    a    alpha
        0     q1     l0   0    -pi/2
        1     q2     0    l1   0
        2     q3     0    l2   0

    Centroids in the body frames (eq. 60): ``r_C1 = [0, l0 - r0, 0]``, ``r_C2 = [r1 - l1, 0, 0]``,
    ``r_C3 = [r2 - l2, 0, 0]`` (with (71): ``[0, 0.154, 0]``, ``[-0.102, 0, 0]``, ``[-0.090, 0, 0]``).

    Args:
        l0, r0, l1, r1, l2, r2, m1, m2, m3, I1xx, I1yy, I1zz, I2xx, I2yy, I2zz, I3xx, I3yy, I3zz: the
            paper's symbols (above); the defaults are its values (eq. 71).
        gravity: ``(3,)`` the gravitational acceleration in the base frame.

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        The centroids of eq. (60), and ``M[2, 2] = m3 r2^2 + I3zz`` (link 3 turning about joint 3,
        its centroid ``r2`` from the axis) at any ``q``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.truc_elbow()
        >>> model.nv, bool(np.allclose(model.inertials.com, [[0, 0.154, 0], [-0.102, 0, 0], [-0.090, 0, 0]]))
        (3, True)
        >>> M = kj.mass_matrix(model, jnp.array([0.3, -0.4, 0.5]))
        >>> bool(np.isclose(M[2, 2], 1.577 * 0.080**2 + 20.2e-3))
        True
    """
    half_pi = math.pi / 2
    rows = [
        ("R", l0, 0.0, 0.0, -half_pi),
        ("R", 0.0, 0.0, l1, 0.0),
        ("R", 0.0, 0.0, l2, 0.0),
    ]
    inertials = [
        Inertial(mass=m1, com=(0.0, l0 - r0, 0.0), inertia=(I1xx, I1yy, I1zz)),
        Inertial(mass=m2, com=(r1 - l1, 0.0, 0.0), inertia=(I2xx, I2yy, I2zz)),
        Inertial(mass=m3, com=(r2 - l2, 0.0, 0.0), inertia=(I3xx, I3yy, I3zz)),
    ]
    return from_dh(
        rows,
        "standard",
        inertials,
        gravity=gravity,
        body_names=("link1", "link2", "link3"),
        joint_names=("joint1", "joint2", "joint3"),
    )
