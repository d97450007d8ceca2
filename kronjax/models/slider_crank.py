"""A planar (offset) slider-crank as a closed-chain mechanism."""

from __future__ import annotations

import math

import numpy as np

from ..chain import Inertial, Joint, from_joints
from ..constrained import Constraints, Mechanism, loop_closure
from .four_bar import (
    LINEAR_DENSITY,
    assemble,
    bar_inertial,
    finite_number,
    per_body_numbers,
    positive_number,
    wrap_angle,
)


def slider_crank_coordinates(crank: float, rod: float, offset: float, crank_angle: float) -> tuple[float, float, float]:
    """Closed-form assembly of the slider-crank at a crank angle (floats; not traced).

    The crank tip is ``A = crank (cos t, sin t)``; the slider pin ``B = (s, offset)`` is at
    distance ``rod`` from ``A`` on the ``+x`` side of it::

        s = crank cos t + sqrt(rod^2 - (offset - crank sin t)^2)

    Returns:
        ``(crank_angle, rod angle relative to the crank, s)``, the joint coordinates ``q`` of
        :func:`slider_crank` (angles wrapped to ``(-pi, pi]``).
    """
    ax, ay = crank * math.cos(crank_angle), crank * math.sin(crank_angle)
    dy = offset - ay
    dx = math.sqrt(max(rod * rod - dy * dy, 0.0))
    phi = math.atan2(dy, dx)
    return wrap_angle(crank_angle), wrap_angle(phi - crank_angle), ax + dx


def slider_crank(
    crank: float = 0.1,
    rod: float = 0.35,
    offset: float = 0.0,
    *,
    masses=None,
    inertias=None,
    gravity=(0.0, -9.81, 0.0),
    crank_angle: float = math.pi / 3,
) -> Mechanism:
    """A planar slider-crank (crank, connecting rod, slider on a straight guide), cut open at the
    rod-slider pin and closed by a planar pin constraint: a
    :class:`~kronjax.constrained.Mechanism` with 3 joint coordinates, 2 constraint equations
    and 1 degree of freedom.

    Geometry (x-y plane; ``r = crank``, ``l = rod``, ``e = offset``)::

                A (crank tip)
               / \\
        crank /   \\ rod
             /     \\
            o       [B]=====  slider, guided along x at height y = e
        O = (0, 0, 0)

    Bodies (and their joints) are named ``"crank"``, ``"rod"`` and ``"slider"``:

    * ``crank`` (``q[0]``): revolute about ``z`` at the base origin; ``q[0]`` is its absolute
      angle from ``+x``. Frame at ``O``, ``x`` along the crank.
    * ``rod`` (``q[1]``): revolute about ``z`` at the crank tip ``(r, 0, 0)`` (crank frame);
      ``q[1]`` is its angle relative to the crank. Frame at ``A``, ``x`` along the rod.
    * ``slider`` (``q[2]``): prismatic along the base ``x`` axis, its frame at ``(q[2], e, 0)``
      (the pin ``B``); it does not rotate.

    The loop closure ``loop_closure(model, "rod", (l, 0, 0), "slider", (0, 0, 0),
    "planar_point")`` puts the rod's far end on the slider pin (2 equations).

    ``rod > crank + |offset|`` is required: the crank then turns fully, the rod never becomes
    perpendicular to the guide, and the constraint Jacobian has full rank 2 in every assembled
    configuration (the dead centres, crank and rod collinear, are singular for driving the crank
    *from the slider* but not for the constraints). The assembled configuration ``q0`` is on the
    branch with the slider on the ``+x`` side of the crank tip (:func:`slider_crank_coordinates`),
    refined with :func:`kronjax.constrained.project` to round-off.

    Inertials: the crank and the rod are uniform bars (centre of mass at mid-length, inertia
    about it ``diag(0, Izz, Izz)``); the slider is a point mass at its pin (it only translates,
    so its rotational inertia plays no role). Defaults: bar masses :data:`LINEAR_DENSITY` times
    the length, slider 0.5 kg, ``Izz = m L^2 / 12``.

    Args:
        crank, rod: lengths (m), positive, ``rod > crank + |offset|``.
        offset: height ``e`` of the slider's guide above the crank pivot (m), any sign.
        masses: ``(crank, rod, slider)`` masses (kg), positive.
        inertias: ``(crank, rod)`` moments of inertia about the centres of mass and ``z``
            (kg m^2), non-negative.
        gravity: the gravitational acceleration in the base frame (default ``-y``).
        crank_angle: the crank angle of ``q0`` (rad).

    Returns:
        A :class:`~kronjax.constrained.Mechanism`: the model, its loop closure and an assembled
        configuration.

    Raises:
        ValueError: non-positive or non-finite lengths, masses or inertias, a non-finite offset
            or crank angle, or ``rod <= crank + |offset|``.

    Example:
        The slider's position at the default crank angle ``t = pi/3`` (``r = 0.1``, ``l = 0.35``,
        ``e = 0``) is ``r cos t + sqrt(l^2 - (e - r sin t)^2)``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> mechanism = kj.models.slider_crank()
        >>> mechanism.model.kinematics.kinds, mechanism.constraints.n_equations
        (('R', 'R', 'P'), 2)
        >>> r, l, t = 0.1, 0.35, np.pi / 3
        >>> bool(np.isclose(mechanism.q0[2], r * np.cos(t) + np.sqrt(l**2 - (r * np.sin(t)) ** 2)))
        True
        >>> bool(jnp.allclose(mechanism.constraints.residual(mechanism.q0), 0.0, atol=1e-6))
        True
    """
    r = positive_number(crank, "the crank length")
    l = positive_number(rod, "the rod length")
    e = finite_number(offset, "offset")
    theta = finite_number(crank_angle, "crank_angle")
    if not l > r + abs(e):
        raise ValueError(
            f"a slider-crank whose crank turns fully needs rod > crank + |offset|, got rod {l:g} <= {r:g} + {abs(e):g}"
        )
    masses_ = per_body_numbers(masses, ("crank", "rod", "slider"), "masses", [LINEAR_DENSITY * r, LINEAR_DENSITY * l, 0.5])
    inertias_ = per_body_numbers(
        inertias, ("crank", "rod"), "inertias", [m * x * x / 12.0 for m, x in zip(masses_, (r, l))], allow_zero=True
    )
    z = (0.0, 0.0, 1.0)
    joints = [
        Joint("R", parent=-1, axis=z, name="crank", body_name="crank"),
        Joint("R", parent=0, axis=z, translation=(r, 0.0, 0.0), name="rod", body_name="rod"),
        Joint("P", parent=-1, axis=(1.0, 0.0, 0.0), translation=(0.0, e, 0.0), name="slider", body_name="slider"),
    ]
    inertials = [
        bar_inertial(masses_[0], r, inertias_[0]),
        bar_inertial(masses_[1], l, inertias_[1]),
        Inertial(mass=masses_[2]),
    ]
    model = from_joints(joints, inertials, gravity=gravity)
    closure = loop_closure(model, "rod", (l, 0.0, 0.0), "slider", (0.0, 0.0, 0.0), "planar_point")
    constraints = Constraints((closure,))
    q0 = np.asarray(slider_crank_coordinates(r, l, e, theta))
    q0 = assemble(model, constraints, q0)
    return Mechanism(model, constraints, q0)
