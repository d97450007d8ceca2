"""The Universal Robots UR5 (CB3) with UR's published D-H parameters, masses and centres of mass."""

from __future__ import annotations

import math

from ..chain import Inertial, Model, from_dh

# Solid cylinders standing in for the unpublished inertia tensors: (radius, length) in m, from
# ROS-Industrial ur_description, config/ur5/physical_parameters.yaml ("links:"), and the body axis
# (0 x, 1 y, 2 z) that is the cylinder's axis in the D-H frame of the body.
_CYLINDERS = (
    (0.075, 0.178, 1),  # shoulder: about joint 1's axis (y1, as alpha1 = pi/2)
    (0.06, 0.425, 0),  # upper arm: along the arm (x2)
    (0.06, 0.39225, 0),  # forearm: along the arm (x3)
    (0.06, 0.095, 1),  # wrist 1: about joint 4's axis (y4, alpha4 = pi/2)
    (0.06, 0.085, 1),  # wrist 2: about joint 5's axis (y5, alpha5 = -pi/2)
    (0.0375, 0.0305, 2),  # wrist 3: about joint 6's axis (z6, alpha6 = 0)
)


def _cylinder_inertia(mass: float, radius: float, length: float, axis: int) -> tuple[float, float, float]:
    """Principal inertias (about the centre of mass) of a solid cylinder along body axis ``axis``."""
    transverse = mass * (3.0 * radius**2 + length**2) / 12.0
    moments = [transverse, transverse, transverse]
    moments[axis] = mass * radius**2 / 2.0
    return tuple(moments)


def ur5(*, gravity=(0.0, 0.0, -9.81)) -> Model:
    """The UR5 (CB3, 6R): standard D-H kinematics, published masses and centres of mass.

    Source: Universal Robots, "DH Parameters for calculations of kinematics and dynamics"
    (https://www.universal-robots.com/articles/ur/application-installation/dh-parameters-for-calculations-of-kinematics-and-dynamics/),
    UR5 table; the D-H parameters are also those of the UR5 CB3 manual ("UR5 serie 3")::

        body  d         a          alpha   mass    centre of mass
        0     0.089159  0          pi/2    3.7     (0, -0.02561, 0.00193)
        1     0         -0.425     0       8.393   (0.2125, 0, 0.11336)
        2     0         -0.39225   0       2.33    (0.15, 0, 0.0265)
        3     0.10915   0          pi/2    1.219   (0, -0.0018, 0.01634)
        4     0.09465   0          -pi/2   1.219   (0, 0.0018, 0.01634)
        5     0.0823    0          0       0.1879  (0, 0, -0.001159)

    (standard D-H convention, every ``theta`` offset 0; masses in kg, centres of mass in m in the
    D-H frame of the body; UR's links 1-6 are bodies 0-5.) Where other sources differ, UR's page
    is followed:

    - Robotics Toolbox for Python's ``rtb.models.DH.UR5`` (1.5) has ``d1 = 0.089459`` (UR:
      0.089159), link 6 mass ``0.1897`` (UR: 0.1879) and link 5 centre of mass
      ``(0, -0.0018, 0.01634)`` (UR: ``+0.0018``); its other values agree.
    - ROS-Industrial ur_description (``config/ur5/physical_parameters.yaml``) has a forearm (link 3)
      mass of ``2.275`` kg (UR: 2.33).

    **Inertia tensors are an approximation.** UR publishes none for the UR5. Each link is taken as
    a solid cylinder of its published mass about its published centre of mass, with the radius and
    length ROS-Industrial's ur_description uses for the same purpose
    (``config/ur5/physical_parameters.yaml``; where the file lists the wrist links twice, the
    later entries, which a YAML loader keeps), and the cylinder's axis along the arm for the upper
    arm and forearm and along the axis of the joint that moves the link for the others (as
    ur_description orients them)::

        body  radius   length    cylinder axis (D-H frame of the body)
        0     0.075    0.178     y1 (joint 1's axis)
        1     0.06     0.425     x2 (along the upper arm)
        2     0.06     0.39225   x3 (along the forearm)
        3     0.06     0.095     y4 (joint 4's axis)
        4     0.06     0.085     y5 (joint 5's axis)
        5     0.0375   0.0305    z6 (joint 6's axis)

    ``I = m r^2 / 2`` about the cylinder's axis and ``m (3 r^2 + l^2) / 12`` about the two others.
    These keep M positive definite (cond(M) is about 3e4, from the small wrist inertias); masses and centres of mass (hence g) are UR's. The fixed base
    is not a body of the model.

    Limits (ur_description ``config/ur5/joint_limits.yaml``, citing the UR5/CB3 User Manual v3.13
    and UR's article "Max. joint torques"): position ``+-2 pi`` rad (the elbow ``+-pi``, which
    ur_description imposes because the arm cannot physically turn the elbow further), velocity
    ``pi`` rad/s (180 deg/s) for every joint, torque ``150, 150, 150, 28, 28, 28`` N m.

    Names follow ur_description: bodies ``shoulder_link`` ... ``wrist_3_link``, joints
    ``shoulder_pan_joint`` ... ``wrist_3_joint``.

    Args:
        gravity: gravitational acceleration in the base frame (default ``[0, 0, -9.81]``: the base
            z axis, joint 1's axis, points up).

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        At ``q = 0`` the arm lies stretched out along ``-x``: the last frame is at ``(a2 + a3, -(d4
        + d6), d1 - d5)`` (the table above):

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.ur5()
        >>> model.nv, model.joint_names[0], model.limits.effort.tolist()
        (6, 'shoulder_pan_joint', [150.0, 150.0, 150.0, 28.0, 28.0, 28.0])
        >>> tip = kj.forward_kinematics(model, jnp.zeros(6)).origins[5]
        >>> bool(np.allclose(tip, [-0.425 - 0.39225, -(0.10915 + 0.0823), 0.089159 - 0.09465]))
        True
    """
    half_pi = math.pi / 2
    rows = [
        ("R", 0.089159, 0.0, 0.0, half_pi),
        ("R", 0.0, 0.0, -0.425, 0.0),
        ("R", 0.0, 0.0, -0.39225, 0.0),
        ("R", 0.10915, 0.0, 0.0, half_pi),
        ("R", 0.09465, 0.0, 0.0, -half_pi),
        ("R", 0.0823, 0.0, 0.0, 0.0),
    ]
    masses = (3.7, 8.393, 2.33, 1.219, 1.219, 0.1879)
    coms = (
        (0.0, -0.02561, 0.00193),
        (0.2125, 0.0, 0.11336),
        (0.15, 0.0, 0.0265),
        (0.0, -0.0018, 0.01634),
        (0.0, 0.0018, 0.01634),
        (0.0, 0.0, -0.001159),
    )
    inertials = [
        Inertial(mass=m, com=c, inertia=_cylinder_inertia(m, r, length, axis))
        for m, c, (r, length, axis) in zip(masses, coms, _CYLINDERS)
    ]
    two_pi = 2 * math.pi
    limits = {
        "lower": [-two_pi, -two_pi, -math.pi, -two_pi, -two_pi, -two_pi],
        "upper": [two_pi, two_pi, math.pi, two_pi, two_pi, two_pi],
        "velocity": math.pi,
        "effort": [150.0, 150.0, 150.0, 28.0, 28.0, 28.0],
    }
    return from_dh(
        rows,
        "standard",
        inertials,
        gravity=gravity,
        body_names=("shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link", "wrist_2_link", "wrist_3_link"),
        joint_names=(
            "shoulder_pan_joint",
            "shoulder_lift_joint",
            "elbow_joint",
            "wrist_1_joint",
            "wrist_2_joint",
            "wrist_3_joint",
        ),
        limits=limits,
    )
