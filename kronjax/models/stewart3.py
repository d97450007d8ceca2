"""The 3-leg Stewart platform of Huang et al., section 12 (Fig. 10), as a closed-chain mechanism.

Data: Fig. 10 (c) link parameters and (d) joint parameters of Huang et al. (the constrained
multibody formulation that avoids kinematic singularities), as transcribed -- with the
extraction garbles repaired and flagged ("0 450" -> 0.450, "01" -> 0.1, "-0 87" -> -0.87, ...)
-- in the project's reference file ``shared/reference/huang_stewart3.json`` (README items
H7-H8). The numbers are copied below; nothing is read at run time.
"""

from __future__ import annotations

import numpy as np

from ..chain import Inertial, Joint, from_joints
from ..configuration import neutral
from ..constrained import Constraints, Mechanism, loop_closure

__all__ = ["J7_J8_SWAPPED", "JOINTS", "LINKS", "PLATFORM_JOINTS", "joint_positions", "stewart3"]

# Fig. 10 (c): mass (kg), principal inertias (Ix, Iy, Iz) about the mass centre in link axes
# (kg m^2), mass centre in global coordinates at the assembled configuration (m).
LINKS: dict[str, tuple[float, tuple[float, float, float], tuple[float, float, float]]] = {
    "L1": (5.0, (0.07, 0.7, 0.7), (0.0, 0.45, 0.355)),
    "L2": (5.0, (0.07, 0.7, 0.7), (0.39, -0.225, 0.355)),
    "L3": (5.0, (0.07, 0.7, 0.7), (-0.39, -0.225, 0.355)),
    "L4": (1.0, (0.01, 0.1, 0.1), (0.0, 0.337, -0.013)),
    "L5": (1.0, (0.01, 0.1, 0.1), (0.292, -0.168, -0.013)),
    "L6": (1.0, (0.01, 0.1, 0.1), (-0.292, -0.168, -0.013)),
    "L7": (10.0, (2.5, 5.0, 2.5), (0.0, 0.0, 0.71)),
}
"""Fig. 10 (c), as printed (after the extraction repairs of README item H7)."""

# Fig. 10 (d): type, global position (m) and axis direction cosines (revolute joints) as printed.
JOINTS: dict[str, tuple[str, tuple[float, float, float], tuple[float, float, float] | None]] = {
    "J1": ("S", (0.0, 0.61, 0.71), None),
    "J2": ("S", (0.53, -0.31, 0.71), None),
    "J3": ("S", (-0.53, -0.31, 0.71), None),
    "J4": ("R", (0.0, 0.29, 0.0), (1.0, 0.0, 0.0)),
    "J5": ("R", (0.25, -0.14, 0.0), (-0.5, -0.87, 0.0)),
    "J6": ("R", (-0.25, -0.14, 0.0), (-0.5, 0.867, 0.0)),
    "J7": ("R", (0.33, -0.19, -0.03), (0.0, -0.97, 0.26)),
    "J8": ("R", (0.0, 0.39, -0.03), (-0.84, 0.48, 0.26)),
    "J9": ("R", (-0.33, -0.19, -0.03), (0.84, 0.48, 0.26)),
}
"""Fig. 10 (d) as printed: J7 and J8 positions NOT swapped (see :data:`J7_J8_SWAPPED`)."""

J7_J8_SWAPPED: dict[str, tuple[float, float, float]] = {
    "J7": (0.0, 0.39, -0.03),
    "J8": (0.33, -0.19, -0.03),
}
"""The probable correction of README item H8: the positions of J7 and J8 exchanged."""


def _frame(x, hint) -> np.ndarray:
    """A rotation whose first column is ``x`` and whose second is ``hint`` made orthogonal to it."""
    x = np.asarray(x, float)
    x = x / np.linalg.norm(x)
    y = np.asarray(hint, float) - np.dot(hint, x) * x
    y = y / np.linalg.norm(y)
    return np.stack([x, y, np.cross(x, y)], axis=1)


def _unit(v) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def _helper(axis) -> np.ndarray:
    """A unit vector not parallel to ``axis`` (the world axis least aligned with it)."""
    return np.eye(3)[int(np.argmin(np.abs(axis)))]


def joint_positions(swap_j7_j8: bool = True) -> dict[str, np.ndarray]:
    """Global positions of J1..J9 at the assembled configuration (with or without the swap)."""
    out = {name: np.asarray(pos, float) for name, (_, pos, _) in JOINTS.items()}
    if swap_j7_j8:
        out.update({name: np.asarray(pos, float) for name, pos in J7_J8_SWAPPED.items()})
    return out


PLATFORM_JOINTS = ("euler", "free")
"""How :func:`stewart3` joins the platform to the ground: six 1-DoF joints or one free joint."""


def stewart3(*, swap_j7_j8: bool = True, gravity=(0.0, 0.0, -9.81), platform: str = "free") -> Mechanism:
    """The 3-leg Stewart platform of Huang et al. (Fig. 10): a tree of 12 velocity coordinates
    closed by three spherical joints (9 equations), 3 degrees of freedom, driven by the motors
    J7-J9.

    Topology (Huang sec. 12 and the Q vectors there), for leg ``i = 1, 2, 3``::

        ground -R (motor J(i+6))- shaft L(i+3) -R J(i+3)- leg L(i) -S J(i)- platform L7

    The motor axis and the J(i+3) axis are perpendicular (within 0.22 degrees in the table): a
    universal joint at the foot of each leg; the spherical joints J1-J3 close the three loops.

    With ``platform="free"`` (the default) the platform "L7" is the child of one free joint
    ``"platform"`` (Pinocchio's free-flyer, :mod:`kronjax.configuration`), whose frame is the world
    frame moved to the platform's mass centre at ``q0``: ``q`` has 13 numbers and ``v`` 12, with no
    coordinate singularity anywhere, the reason it is the default::

        q[0:3], v[0:3]   motors J7, J8, J9  (bodies "L4", "L5", "L6": the rotor shafts)
        q[3:6], v[3:6]   J4, J5, J6         (bodies "L1", "L2", "L3": the legs; parent: their shaft)
        q[6:9]           the platform's mass centre minus (0, 0, 0.71), world axes
        q[9:13]          the platform's orientation, unit quaternion (x, y, z, w); q0: (0, 0, 0, 1)
        v[6:9], v[9:12]  the platform's linear and angular velocity in its own (body) frame

    ``platform="euler"`` keeps the 12-coordinate layout (``q`` and ``v`` have 12 entries, all zero
    at the assembled configuration ``q0`` of the tables): ``q[0:6]`` as above, and the platform on
    six 1-DoF joints::

        q[6:9]   platform x, y, z      (prismatic along the world axes, massless frames;
                                        q = 0 puts the platform's mass centre at (0, 0, 0.71))
        q[9:12]  platform yaw, pitch, roll (revolute about z, then the new y, then the new x:
                                        R = Rz(yaw) Ry(pitch) Rx(roll); massless frames except
                                        the last, the platform "L7")

    The Z-Y-X Euler angles are singular (gimbal lock: the mass matrix and the Euler-angle columns
    of ``Phi_q`` lose rank) at ``pitch = +-pi/2``, i.e. when the platform's body ``x`` axis is
    vertical (the platform tilted 90 degrees); ``yaw`` (the twist about the vertical) is
    unrestricted. With the corrected table the platform stays within 9 degrees of level in the
    motor-driven study (``docs/tools/stewart3.py``); with the table as printed it tips over and
    passes about 1 degree from the Euler angles' gimbal lock at t = 0.746 s, where these
    coordinates, not the mechanism, lose accuracy (the free joint has no such point).

    Both variants are the same mechanism: the same bodies, masses and closures; only the
    platform's coordinates differ. Measured with the table as printed (motors +10 N m from rest,
    ``simulate`` with ``"lagrange"``, Tsit5, ``dt = 2 ms``): the free platform tips through 90
    degrees at t = 0.748 s and runs on to 2 s with the smallest singular value of ``Phi_q`` at or
    above 0.09 (no kinematic singularity); the Euler-angle run passes 1.1 degrees from the gimbal
    lock at t = 0.746 s and separates from it there (platform rotations equal to 1e-12 at 0.70 s,
    1e-8 at 0.74 s, 8e-4 at 0.76 s). With ``"huang"`` the free platform also runs on to 2 s; the
    Euler-angle run diverges at 0.75 s.

    Joint axes are the tables' direction cosines normalised (their norms are 1.000-1.004). Every
    revolute joint's frame sits at its tabulated position, so all joint angles are zero at the
    assembled configuration and the spherical joints coincide there to round-off.

    Principal axes of the links ("principal in link axes"; the tables do not say which axes):

    * legs L1-L3 (``Ix = 0.07``, ``Iy = Iz = 0.7``): ``x`` along the leg, from J(i+3) to J(i)
      (the small moment of a slender rod is about its own axis). ``y`` is the J(i+3) axis made
      orthogonal to the leg (the tabulated axes are within 0.6 degrees of orthogonal); as
      ``Iy = Iz`` the transverse choice does not matter.
    * shafts L4-L6 (``Ix = 0.01``, ``Iy = Iz = 0.1``): ``x`` along the motor axis (the rotor's
      axis of rotation).
    * platform L7 (``Ix = Iz = 2.5``, ``Iy = 5 = Ix + Iz``): the perpendicular-axis theorem of a
      flat plate whose normal is the link's ``y`` axis; the platform is a horizontal plate (J1-J3
      all at ``z = 0.71``), so its link ``y`` axis is taken vertical: the inertia about the mass
      centre is ``diag(2.5, 2.5, 5)`` about the world ``x, y, z`` axes at ``q0``.

    Mass centres: the tables' global coordinates, expressed in the body frames at ``q0``. (The
    leg mass centres are the midpoints of J(i+3)-J(i); the shafts' lie on J(i+6)-J(i+3) within
    3.3 mm when ``swap_j7_j8=True``.)

    Args:
        swap_j7_j8: exchange the printed positions of J7 and J8 (default ``True``). The text pairs
            shaft L(i+3) with motor J(i+6) (``Q_{i+3}`` contains ``R^{i+6}_{i+3}``). With the
            positions as printed the shafts L4 (J4-J7) and L5 (J5-J8) make 39 degrees with their
            motor axes (cos 0.78) and their mass centres lie 49-52 mm off the shafts, and the
            J7/J8 motor axes point 120 degrees away from the inward radial while J9's points
            inward. After the swap every shaft lies along its motor axis (cos 0.998-1.000), every
            shaft mass centre is within 3.3 mm of its segment, and all three motor axes point
            radially inward with the same 15-degree tilt (``0.26 = sin 15``), a symmetric
            design. ``False`` builds the table as printed: then the motors J7/J8 drive their
            shafts as cranks (J4, J5 off the motor axes).
        gravity: gravitational acceleration in the world frame (``z`` up: the platform is at
            ``z = 0.71`` above the motors).
        platform: ``"free"`` (one free joint, the default) or ``"euler"`` (three slides and
            Z-Y-X Euler angles); see above.

    Returns:
        A :class:`~kronjax.constrained.Mechanism` (``model``, ``constraints`` = the spherical
        joints J1, J2, J3 between leg L(i) and the platform L7, ``q0`` the assembled
        configuration: :func:`kronjax.neutral`, i.e. zero but for the quaternion's ``w = 1``;
        all zero for ``platform="euler"``).

    The motors are the coordinates ``q[0:3]``; a positive torque turns the shaft counter-clockwise
    about its normalised axis direction (right-hand rule about the tabulated direction cosines).

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> mechanism = kj.models.stewart3()
        >>> mechanism.model.nq, mechanism.model.nv, mechanism.constraints.n_equations  # 12 - 9 = 3 DoF
        (13, 12, 9)
        >>> mechanism.model.joint_names[:3], mechanism.q0[9:].tolist()  # the motors; the identity quaternion
        (('J7', 'J8', 'J9'), [0.0, 0.0, 0.0, 1.0])
        >>> bool(jnp.allclose(mechanism.constraints.residual(mechanism.q0), 0.0, atol=1e-6))
        True
    """
    if not isinstance(swap_j7_j8, (bool, np.bool_)):
        raise TypeError(f"swap_j7_j8 must be True or False, got {swap_j7_j8!r}")
    try:
        g = np.asarray(gravity, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"gravity must be a 3-vector of numbers, got {gravity!r}") from err
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be a finite 3-vector, got {gravity!r}")
    if not isinstance(platform, str) or platform not in PLATFORM_JOINTS:
        raise ValueError(f"platform must be one of {PLATFORM_JOINTS}, got {platform!r}")

    pos = joint_positions(bool(swap_j7_j8))
    axis = {name: _unit(d) for name, (_, _, d) in JOINTS.items() if d is not None}
    platform_origin = np.asarray(LINKS["L7"][2])

    joints: list[Joint] = []
    inertials: list[Inertial] = []
    shaft_frame, leg_frame = {}, {}
    # Shafts L4-L6 on the motors J7-J9 (bodies 0-2, coordinates 0-2).
    for i in (1, 2, 3):
        motor, shaft = f"J{i + 6}", f"L{i + 3}"
        r = _frame(axis[motor], _helper(axis[motor]))
        shaft_frame[i] = r
        joints.append(Joint("R", -1, (1.0, 0.0, 0.0), r, pos[motor], name=motor, body_name=shaft))
        mass, principal, com = LINKS[shaft]
        inertials.append(Inertial(mass, r.T @ (np.asarray(com) - pos[motor]), principal))
    # Legs L1-L3 on J4-J6 (bodies 3-5, coordinates 3-5), children of their shafts.
    for i in (1, 2, 3):
        motor, knee, top, leg = f"J{i + 6}", f"J{i + 3}", f"J{i}", f"L{i}"
        r = _frame(pos[top] - pos[knee], axis[knee])
        leg_frame[i] = r
        rs = shaft_frame[i]
        joints.append(Joint("R", i - 1, r.T @ axis[knee], rs.T @ r, rs.T @ (pos[knee] - pos[motor]), name=knee, body_name=leg))
        mass, principal, com = LINKS[leg]
        inertials.append(Inertial(mass, r.T @ (np.asarray(com) - pos[knee]), principal))
    if platform == "free":
        joints.append(Joint("free", -1, translation=platform_origin, name="platform", body_name="L7"))
        inertials.append(Inertial(0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    else:
        # The platform L7: a free body through P-P-P-R-R-R with massless intermediate frames (bodies 6-11).
        free = [
            ("P", (1.0, 0.0, 0.0), platform_origin, "platform_x"),
            ("P", (0.0, 1.0, 0.0), (0.0, 0.0, 0.0), "platform_y"),
            ("P", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), "platform_z"),
            ("R", (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), "platform_yaw"),
            ("R", (0.0, 1.0, 0.0), (0.0, 0.0, 0.0), "platform_pitch"),
            ("R", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0), "platform_roll"),
        ]
        for k, (kind, ax, translation, name) in enumerate(free):
            parent = -1 if k == 0 else 6 + k - 1
            body = "L7" if k == len(free) - 1 else f"{name}_frame"
            joints.append(Joint(kind, parent, ax, np.eye(3), translation, name=name, body_name=body))
            inertials.append(Inertial(0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    ix, iy, iz = LINKS["L7"][1]
    inertials[-1] = Inertial(LINKS["L7"][0], (0.0, 0.0, 0.0), (ix, iz, iy))  # link y = world z (see above)

    model = from_joints(joints, inertials, gravity=tuple(g))
    # ``axis`` does not enter a spherical closure's equations; it is passed anyway because
    # loop_closure as committed in 0067f5b required one for every kind but "planar_point".
    closures = [
        loop_closure(
            model,
            f"L{i}",
            leg_frame[i].T @ (pos[f"J{i}"] - pos[f"J{i + 3}"]),
            "L7",
            pos[f"J{i}"] - platform_origin,
            "spherical",
            axis=(0.0, 0.0, 1.0),
        )
        for i in (1, 2, 3)
    ]
    return Mechanism(model, Constraints(tuple(closures)), neutral(model, model.gravity.dtype))
