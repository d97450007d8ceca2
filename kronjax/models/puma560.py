"""The Unimation PUMA 560 with the dynamics of Armstrong, Khatib and Burdick (1986), as in Corke's
Robotics Toolbox."""

from __future__ import annotations

import math

from ..chain import Inertial, Model, from_dh

_DEG = math.pi / 180
_INCH = 0.0254


# Motor (rotor) inertia Jm and gear ratio G per joint: rtb 1.5's Puma560 (Corke, after Armstrong et al.)
_JM = (200e-6, 200e-6, 200e-6, 33e-6, 33e-6, 33e-6)
_GEAR = (-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686)


def puma560(*, gravity=(0.0, 0.0, -9.81), motors: bool = True) -> Model:
    """The PUMA 560 (6R): standard D-H kinematics and rigid-body inertial parameters.

    The numbers are those of Robotics Toolbox for Python's ``rtb.models.DH.Puma560`` (P. Corke),
    which uses the inertial parameters measured by

    - B. Armstrong, O. Khatib, J. Burdick, "The explicit dynamic model and inertial parameters of
      the PUMA 560 arm", Proc. IEEE Int. Conf. Robotics and Automation, 1986, pp. 510-518,

    converted by Corke to the standard D-H frames below (Armstrong et al. use modified D-H frames;
    the conversion offsets some lengths and swaps the y and z axes of links 3-5), with the later
    corrections recorded in the rtb source (``d3 = 150.05 mm``, closer to the data of Lee,
    Armstrong et al. and Tarn; corrected centres of mass of links 2 and 3). rtb's references:

    - P. Corke, B. Armstrong-Helouvry, "A search for consensus among model parameters reported for
      the PUMA 560 robot", Proc. IEEE ICRA, 1994, pp. 1608-1613;
    - P. Corke, *Robotics, Vision and Control*, Springer; Robotics Toolbox for Python 1.5,
      ``roboticstoolbox/models/DH/Puma560.py``.

    D-H table (standard convention, Paul's sign of the twists; every ``theta`` offset is 0)::

        body  d         a        alpha
        0     0.67183   0        pi/2
        1     0         0.4318   0
        2     0.15005   0.0203   -pi/2
        3     0.4318    0        pi/2
        4     0         0        -pi/2
        5     0         0        0

    ``d1 = 26.45 in`` is the height of the shoulder axis above the mounting surface (the pedestal;
    rtb 1.5 includes it, the MATLAB toolbox's model did not).

    Inertials (centre of mass in the body frame, m; principal inertias about the centre of mass
    in body axes, kg m^2; every product of inertia is 0)::

        body  mass   com                       (Ixx, Iyy, Izz)
        0     (1)    (0, 0, 0)                 (0, 0.35, 0)
        1     17.4   (-0.3638, 0.006, 0.2275)  (0.13, 0.524, 0.539)
        2     4.8    (-0.0203, -0.0141, 0.070) (0.066, 0.086, 0.0125)
        3     0.82   (0, 0.019, 0)             (1.8e-3, 1.3e-3, 1.8e-3)
        4     0.34   (0, 0, 0)                 (0.3e-3, 0.4e-3, 0.3e-3)
        5     0.09   (0, 0, 0.032)             (0.15e-3, 0.15e-3, 0.04e-3)

    **Link 1's mass.** The table gives ``m1 = 0``: Armstrong et al. found no value for it, and it
    is unidentifiable, since link 1's centre of mass lies on the fixed axis of joint 1 and only its
    inertia about that axis (``Iyy = 0.35`` in frame 1, whose y axis is joint 1's axis) enters the
    dynamics. kronjax requires positive masses, so link 1 carries a *placeholder* mass of 1 kg at
    its frame origin ``(0, 0, d1)``, which lies on joint 1's axis and never moves: it has no
    velocity and a constant potential energy, so it changes neither M, C nor g (nor any joint
    torque). It does add 1 kg to the total mass and shifts the arm's overall centre of mass; do
    not read those off this model.

    **Motors.** The rotor inertias ``Jm`` reflected through the gear ratios ``G`` are the model's
    ``armature`` ``Jm G^2`` (added to the diagonal of M; for the PUMA of the order of the link
    inertias), from the same rtb table (Corke, after Armstrong et al.)::

        joint  Jm (kg m^2)  G          Jm G^2
        1      200e-6       -62.6111   0.78403
        2      200e-6       107.815    2.32481
        3      200e-6       -53.7063   0.57687
        4      33e-6        76.0364    0.19079
        5      33e-6        71.923     0.17071
        6      33e-6        76.686     0.19406

    So this model's M and inverse dynamics equal rtb's ``inertia`` and ``rne`` with the motors and
    without friction, its C and g rtb's ``coriolis`` and ``gravload``. ``puma560(motors=False)``
    leaves the motors out (the rigid links alone). Not included: the viscous (``B``) and
    asymmetric Coulomb (``Tc``) joint friction of the rtb model.

    Limits: joint position limits are rtb's ``qlim`` (from Wang and Chen, "A combined optimization
    method for solving the inverse kinematics problem", IEEE Trans. Robotics and Automation 7(4),
    1991), in degrees ``[-160, 160], [-45, 225], [-225, 45], [-110, 170], [-100, 100],
    [-266, 266]``. No velocity or torque limits are published with these parameters, so those are
    unlimited (``inf``).

    Args:
        gravity: gravitational acceleration in the base frame (rtb's default ``[0, 0, -9.81]``:
            the base z axis points up).
        motors: include the motors' reflected inertias ``Jm G^2`` as ``armature`` (default).

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        The motors add their ``Jm G^2`` (the table above) to the diagonal of ``M``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.puma560()
        >>> model.nv, bool(np.allclose(model.armature, [0.78403, 2.32481, 0.57687, 0.19079, 0.17071, 0.19406], atol=1e-5))
        (6, True)
        >>> q = jnp.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
        >>> links = kj.mass_matrix(kj.models.puma560(motors=False), q)
        >>> bool(jnp.allclose(kj.mass_matrix(model, q) - links, jnp.diag(model.armature)))
        True
    """
    half_pi = math.pi / 2
    rows = [
        ("R", 26.45 * _INCH, 0.0, 0.0, half_pi),
        ("R", 0.0, 0.0, 0.4318, 0.0),
        ("R", 0.15005, 0.0, 0.0203, -half_pi),
        ("R", 0.4318, 0.0, 0.0, half_pi),
        ("R", 0.0, 0.0, 0.0, -half_pi),
        ("R", 0.0, 0.0, 0.0, 0.0),
    ]
    inertials = [
        # placeholder mass on joint 1's fixed axis (m1 = 0 in the table, see the docstring)
        Inertial(mass=1.0, com=(0.0, 0.0, 0.0), inertia=(0.0, 0.35, 0.0)),
        Inertial(mass=17.4, com=(-0.3638, 0.006, 0.2275), inertia=(0.13, 0.524, 0.539)),
        Inertial(mass=4.8, com=(-0.0203, -0.0141, 0.070), inertia=(0.066, 0.086, 0.0125)),
        Inertial(mass=0.82, com=(0.0, 0.019, 0.0), inertia=(1.8e-3, 1.3e-3, 1.8e-3)),
        Inertial(mass=0.34, com=(0.0, 0.0, 0.0), inertia=(0.3e-3, 0.4e-3, 0.3e-3)),
        Inertial(mass=0.09, com=(0.0, 0.0, 0.032), inertia=(0.15e-3, 0.15e-3, 0.04e-3)),
    ]
    qlim_deg = [(-160, 160), (-45, 225), (-225, 45), (-110, 170), (-100, 100), (-266, 266)]
    limits = {
        "lower": [lo * _DEG for lo, _ in qlim_deg],
        "upper": [hi * _DEG for _, hi in qlim_deg],
    }
    return from_dh(
        rows,
        "standard",
        inertials,
        gravity=gravity,
        body_names=tuple(f"link{i}" for i in range(1, 7)),
        joint_names=tuple(f"joint{i}" for i in range(1, 7)),
        limits=limits,
        armature=[jm * g**2 for jm, g in zip(_JM, _GEAR)] if motors else None,
    )
