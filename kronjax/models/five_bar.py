"""The planar five-bar parallel robot (a 5R mechanism with two motors on the ground)."""

from __future__ import annotations

import numpy as np

from ..chain import Joint, from_joints
from ..constrained import Constraints, Mechanism, loop_closure
from .four_bar import assemble, bar_inertial, positive_number


def five_bar(
    proximal: float = 0.25,
    distal: float = 0.35,
    base: float = 0.3,
    *,
    gravity=(0.0, -9.81, 0.0),
    elbows_out: bool = True,
) -> Mechanism:
    """The planar five-bar parallel robot: two motors on the ground ``base`` apart drive proximal
    links, whose distal links meet at the end effector, a pin (the loop closure). Four revolute
    joints about ``z``, two ``planar_point`` equations, two degrees of freedom (the motors)::

        q[0]  left_motor   (at the origin; body "left_proximal")
        q[1]  left_elbow   (body "left_distal", its tip the end effector)
        q[2]  right_motor  (at (base, 0, 0); body "right_proximal")
        q[3]  right_elbow  (body "right_distal")

    The bars are uniform, 2 kg/m, thin (``I = m L^2 / 12`` about their middles, as
    :func:`four_bar`'s). The assembled configuration ``q0`` is symmetric about the middle of the
    base, the end effector above it (about 0.5 m up with the default lengths).

    Args:
        proximal: the proximal (motor) links' length (m).
        distal: the distal links' length (m).
        base: the distance between the motors (m).
        gravity: in the plane (``-y`` is down).
        elbows_out: the working mode with the elbows outside the motors (default) or inside.

    Returns:
        A :class:`~kronjax.constrained.Mechanism` (``q0`` assembled by
        :func:`kronjax.constrained.project`).

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> robot = kj.models.five_bar()
        >>> robot.model.joint_names, robot.mobility
        (('left_motor', 'left_elbow', 'right_motor', 'right_elbow'), 2)
        >>> bool(jnp.max(jnp.abs(robot.constraints.residual(robot.q0))) < 1e-12)
        True
    """
    a, b, d = (positive_number(x, what) for x, what in ((proximal, "proximal"), (distal, "distal"), (base, "base")))
    if not d < 2 * (a + b):
        raise ValueError(f"the links cannot meet: base {d:g} >= 2 (proximal + distal) = {2 * (a + b):g}")
    z = (0.0, 0.0, 1.0)
    joints = [
        Joint("R", parent=-1, axis=z, name="left_motor", body_name="left_proximal"),
        Joint("R", parent=0, axis=z, translation=(a, 0.0, 0.0), name="left_elbow", body_name="left_distal"),
        Joint("R", parent=-1, axis=z, translation=(d, 0.0, 0.0), name="right_motor", body_name="right_proximal"),
        Joint("R", parent=2, axis=z, translation=(a, 0.0, 0.0), name="right_elbow", body_name="right_distal"),
    ]
    inertials = [bar_inertial(2.0 * x, x, 2.0 * x**3 / 12.0) for x in (a, b, a, b)]
    model = from_joints(joints, inertials, gravity=gravity)
    closure = loop_closure(model, "left_distal", (b, 0.0, 0.0), "right_distal", (b, 0.0, 0.0), "planar_point")
    # a symmetric guess in the chosen working mode (the motors 30 degrees from the vertical, leaning
    # out, the elbows bent back in), projected onto the closure
    out = 1.0 if elbows_out else -1.0
    left = np.pi / 2 + out * np.pi / 6
    elbow = -out * 0.9
    guess = np.array([left, elbow, np.pi - left, -elbow])
    constraints = Constraints((closure,))
    return Mechanism(model, constraints, assemble(model, constraints, guess))
