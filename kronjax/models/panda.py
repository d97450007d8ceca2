"""The Franka Emika Panda with the identified dynamics of Gaz et al. (2019)."""

from __future__ import annotations

import math

from ..chain import Inertial, Model, from_dh

_FLANGE = 0.107  # Franka's frame 7 to flange frame F, along z7


def _tensor(xx, xy, xz, yy, yz, zz):
    return ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))


def panda(*, gravity=(0.0, 0.0, -9.81)) -> Model:
    """The Franka Emika Panda (7R): modified D-H kinematics and identified inertial parameters.

    Kinematics: Franka's modified (Craig) D-H parameters, as in Robotics Toolbox for Python's
    ``rtb.models.DH.Panda`` and Franka's documentation ("Robot and interface specifications",
    https://frankaemika.github.io/docs/control_parameters.html)::

        body  a_{i-1}   d_i     alpha_{i-1}
        0     0         0.333   0
        1     0         0       -pi/2
        2     0         0.316   pi/2
        3     0.0825    0       pi/2
        4     -0.0825   0.384   -pi/2
        5     0         0       pi/2
        6     0.088     0.107   pi/2

    Franka's table has ``d7 = 0`` and a separate fixed flange frame F at ``d = 0.107`` along z7;
    as in rtb, the flange offset is merged into body 6 (the last), so its frame is the flange
    frame F (axes parallel to Franka's frame 7). rtb's Panda also has ``robot.tool`` =
    ``Tz(0.103) Rz(-pi/4)``, the Franka Hand's TCP: that is a tool transform, not a body, and is
    *not* part of this model (no hand or payload mass either).

    Inertials: the feasible parameters identified by

    - C. Gaz, M. Cognetti, A. Oliva, P. Robuffo Giordano, A. De Luca, "Dynamic Identification of
      the Franka Emika Panda Robot With Retrieval of Feasible Parameters Using Penalty-Based
      Optimization", IEEE Robotics and Automation Letters 4(4), 2019, pp. 4147-4154 (supplementary
      material, Tables VIII-IX; also github.com/marcocognetti/FrankaEmikaPandaDynModel),

    the values rtb's Panda carries, but for link 6's centre-of-mass ``z``: ``-1.9235e-02``, not
    the supplement's ``-1.0517e-02`` (a repeat of link 7's ``x`` on the next line of its Table
    VIII), the value with which the paper's own base-parameter coefficients of these parameters
    (Table III, column ``pi(p^)``) are reproduced in every row. The inertia tensors are about the centre of mass in axes
    parallel to the link frame (barycentric), as kronjax expects (and as rtb's ``Link.I`` is
    defined). The centres of mass are in Gaz et al.'s link frames (Franka's D-H frames), except
    link 7's: Gaz et al. give ``z = 0.061597`` in frame 7, which is ``0.061597 - 0.107`` in the
    flange frame used here (rtb's ``-0.045403``). Friction (identified in the same paper) and
    motor inertias are not part of this rigid-body model.

    Limits: Franka's published joint limits ("Robot and interface specifications", above):
    position ``q_min = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]``,
    ``q_max = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]`` rad (also rtb's
    ``qlim``), velocity ``2.175`` rad/s (joints 1-4) and ``2.61`` rad/s (5-7), torque ``87`` N m
    (1-4) and ``12`` N m (5-7).

    Args:
        gravity: gravitational acceleration in the base frame (default ``[0, 0, -9.81]``, rtb's
            too: the base z axis points up).

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        At ``q = 0`` the flange points down at ``x = a3 + a4 + a6 = 0.088``, ``z = d1 + d3 + d5 -
        0.107 = 0.926`` (the table above):

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.panda()
        >>> model.nv, model.limits.effort.tolist()
        (7, [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])
        >>> flange = kj.forward_kinematics(model, jnp.zeros(7))
        >>> bool(np.allclose(flange.origins[6], [0.088, 0.0, 0.926]))
        True
        >>> bool(np.allclose(flange.rotations[6], np.diag([1.0, -1.0, -1.0]), atol=1e-6))
        True
    """
    half_pi = math.pi / 2
    # modified D-H rows: (kind, d_i, theta_i, a_{i-1}, alpha_{i-1})
    rows = [
        ("R", 0.333, 0.0, 0.0, 0.0),
        ("R", 0.0, 0.0, 0.0, -half_pi),
        ("R", 0.316, 0.0, 0.0, half_pi),
        ("R", 0.0, 0.0, 0.0825, half_pi),
        ("R", 0.384, 0.0, -0.0825, -half_pi),
        ("R", 0.0, 0.0, 0.0, half_pi),
        ("R", _FLANGE, 0.0, 0.088, half_pi),
    ]
    # Gaz et al. 2019, supplementary Tables VIII-IX: mass (kg), centre of mass (m), inertia about
    # the centre of mass (kg m^2) in the order Ixx, Ixy, Ixz, Iyy, Iyz, Izz
    inertials = [
        Inertial(
            mass=4.970684,
            com=(3.875e-03, 2.081e-03, 0.0),
            inertia=_tensor(7.0337e-01, -1.3900e-04, 6.7720e-03, 7.0661e-01, 1.9169e-02, 9.1170e-03),
        ),
        Inertial(
            mass=0.646926,
            com=(-3.141e-03, -2.872e-02, 3.495e-03),
            inertia=_tensor(7.9620e-03, -3.9250e-03, 1.0254e-02, 2.8110e-02, 7.0400e-04, 2.5995e-02),
        ),
        Inertial(
            mass=3.228604,
            com=(2.7518e-02, 3.9252e-02, -6.6502e-02),
            inertia=_tensor(3.7242e-02, -4.7610e-03, -1.1396e-02, 3.6155e-02, -1.2805e-02, 1.0830e-02),
        ),
        Inertial(
            mass=3.587895,
            com=(-5.317e-02, 1.04419e-01, 2.7454e-02),
            inertia=_tensor(2.5853e-02, 7.7960e-03, -1.3320e-03, 1.9552e-02, 8.6410e-03, 2.8323e-02),
        ),
        Inertial(
            mass=1.225946,
            com=(-1.1953e-02, 4.1065e-02, -3.8437e-02),
            inertia=_tensor(3.5549e-02, -2.1170e-03, -4.0370e-03, 2.9474e-02, 2.2900e-04, 8.6270e-03),
        ),
        Inertial(
            mass=1.666555,
            # z: not Table VIII's -1.0517e-02 (the digits of link 7's x on the next line, a
            # transcription slip; rtb copies it): the paper's Table III coefficients of the
            # retrieved parameters, pi(p^), are reproduced with -1.0517e-02 in every row but the
            # three that contain c6z m6, and in those three too with -1.9235e-02:
            # "c5y m5 - c6z m6" = 0.0824 (-1.0517e-02 gives 0.0679; 0.0824 +- 5e-5 bounds z to
            # [-0.019265, -0.019205]), "J6yy + J5zz + 0.0077 m7" = 0.0276 (0.0271),
            # "J6yz" = -0.0001 (+0.0001); tests/test_identify_uncertainty.py pins them
            com=(6.0149e-02, -1.4117e-02, -1.9235e-02),
            inertia=_tensor(1.9640e-03, 1.0900e-04, -1.1580e-03, 4.3540e-03, 3.4100e-04, 5.4330e-03),
        ),
        Inertial(
            mass=7.35522e-01,
            # the body frame is the flange frame, 0.107 m above Gaz et al.'s frame 7
            com=(1.0517e-02, -4.252e-03, 6.1597e-02 - _FLANGE),
            inertia=_tensor(1.2516e-02, -4.2800e-04, -1.1960e-03, 1.0027e-02, -7.4100e-04, 4.8150e-03),
        ),
    ]
    limits = {
        "lower": [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
        "upper": [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
        "velocity": [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61],
        "effort": [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0],
    }
    return from_dh(
        rows,
        "modified",
        inertials,
        gravity=gravity,
        body_names=tuple(f"link{i}" for i in range(1, 8)),
        joint_names=tuple(f"joint{i}" for i in range(1, 8)),
        limits=limits,
    )
