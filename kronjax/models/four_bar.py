"""Planar four-bar linkages (Huang et al., Fig. 1) as closed-chain mechanisms."""

from __future__ import annotations

import math

import equinox as eqx
import numpy as np

from ..chain import Inertial, Joint, from_joints
from ..constrained import Constraints, Mechanism, loop_closure, project

FOUR_BAR_VARIANTS = ("crank_rocker", "change_point")

DEFAULT_LENGTHS: dict[str, tuple[float, float, float, float]] = {
    # Grashof, crank strictly shortest: 0.2 + 0.7 = 0.9 < 0.6 + 0.5 = 1.1 (a crank-rocker).
    "crank_rocker": (0.2, 0.6, 0.5, 0.7),
    # A parallelogram: crank = rocker, coupler = ground, so crank + coupler = rocker + ground.
    "change_point": (0.3, 0.7, 0.3, 0.7),
}
"""Default ``(crank, coupler, rocker, ground)`` lengths (m) of each :func:`four_bar` variant."""
LINEAR_DENSITY = 2.0
"""Default mass per unit length of the bars (kg/m): a bar of length ``L`` has mass ``2 L``."""


def positive_number(x, what: str) -> float:
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what} must be a positive number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be a positive number, got {x!r}") from err
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what} must be a positive finite number, got {x!r}")
    return v


def finite_number(x, what: str) -> float:
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what} must be a finite number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be a finite number, got {x!r}") from err
    if not math.isfinite(v):
        raise ValueError(f"{what} must be a finite number, got {x!r}")
    return v


def per_body_numbers(values, names: tuple[str, ...], what: str, default, *, allow_zero: bool = False) -> list[float]:
    """One positive (or, with ``allow_zero``, non-negative) number per body."""
    if values is None:
        return list(default)
    try:
        items = list(values)
    except TypeError as err:
        raise ValueError(f"{what} must be a sequence of {len(names)} numbers ({', '.join(names)}), got {values!r}") from err
    if len(items) != len(names):
        raise ValueError(f"{what} must have {len(names)} entries ({', '.join(names)}), got {len(items)}")
    out = []
    for name, x in zip(names, items):
        if allow_zero:
            v = finite_number(x, f"{what} of the {name}")
            if v < 0:
                raise ValueError(f"{what} of the {name} must be non-negative, got {x!r}")
        else:
            v = positive_number(x, f"{what} of the {name}")
        out.append(v)
    return out


def bar_inertial(mass: float, length: float, izz: float) -> Inertial:
    """A bar along its body ``x`` axis from the body origin: centre of mass at mid-length,
    inertia about it ``diag(0, Izz, Izz)`` (a slender rod; the out-of-plane values do not affect
    planar motion)."""
    return Inertial(mass=mass, com=(0.5 * length, 0.0, 0.0), inertia=(0.0, izz, izz))


@eqx.filter_jit
def assemble(model, constraints, q0):
    """:func:`~kronjax.constrained.project` of a closed-form configuration (compiled once per
    model structure: building many mechanisms of one kind costs one compilation)."""
    return project(model, constraints, q0)[0]


def wrap_angle(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def four_bar_angles(
    crank: float, coupler: float, rocker: float, ground: float, crank_angle: float, branch: int = 1
) -> tuple[float, float, float]:
    """Closed-form assembly of the four-bar at a crank angle (floats; not traced).

    With ``A = crank (cos t, sin t)`` the crank tip and ``D = (ground, 0)`` the rocker pivot,
    the coupler-rocker pin ``B`` is an intersection of the circles of radius ``coupler`` about
    ``A`` and ``rocker`` about ``D``: the coupler's absolute angle is
    ``atan2(D - A) + branch * acos((coupler^2 + |AD|^2 - rocker^2) / (2 coupler |AD|))``, so
    that ``branch = +1`` puts ``B`` on the left of the directed line from ``A`` to ``D``
    (the triangle ``A, D, B`` is counter-clockwise) and ``-1`` on its right.

    Returns:
        ``(crank_angle, coupler angle relative to the crank, rocker angle)``, the joint
        coordinates ``q`` of :func:`four_bar` (angles wrapped to ``(-pi, pi]``).

    Raises:
        ValueError: if the loop cannot be closed at this crank angle.
    """
    a, b, c, d = crank, coupler, rocker, ground
    ax, ay = a * math.cos(crank_angle), a * math.sin(crank_angle)
    ux, uy = d - ax, -ay
    r = math.hypot(ux, uy)
    scale = a + b + c + d
    if r < 1e-12 * scale:
        raise ValueError(
            f"at crank angle {crank_angle:g} the crank tip lies on the rocker pivot: the coupler "
            "and rocker angles are not determined"
        )
    if r > b + c + 1e-12 * scale or r < abs(b - c) - 1e-12 * scale:
        raise ValueError(
            f"the loop cannot be closed at crank angle {crank_angle:g}: the crank tip is "
            f"{r:.6g} from the rocker pivot, outside [|coupler - rocker|, coupler + rocker] = "
            f"[{abs(b - c):.6g}, {b + c:.6g}]"
        )
    cos_alpha = min(1.0, max(-1.0, (b * b + r * r - c * c) / (2.0 * b * r)))
    theta2 = math.atan2(uy, ux) + branch * math.acos(cos_alpha)
    bx, by = ax + b * math.cos(theta2), ay + b * math.sin(theta2)
    theta3 = math.atan2(by, bx - d)
    return wrap_angle(crank_angle), wrap_angle(theta2 - crank_angle), wrap_angle(theta3)


def four_bar(
    crank: float | None = None,
    coupler: float | None = None,
    rocker: float | None = None,
    ground: float | None = None,
    *,
    masses=None,
    inertias=None,
    gravity=(0.0, -9.81, 0.0),
    variant: str = "crank_rocker",
    crank_angle: float = math.pi / 3,
    branch: int = 1,
) -> Mechanism:
    """A planar four-bar linkage (4R), cut open at the coupler-rocker pin and closed by a
    planar pin constraint: a :class:`~kronjax.constrained.Mechanism` with 3 joint coordinates,
    2 constraint equations and 1 degree of freedom.

    Geometry (x-y plane, all joint axes ``z``; lengths ``a = crank``, ``b = coupler``,
    ``c = rocker``, ``d = ground``)::

                         B (coupler-rocker pin: the cut, closed by the constraint)
                        / \\
              coupler  /   \\  rocker
                      /     \\
        crank tip A  o       \\
                    /         \\
             crank /           \\
                  o-------------o
        O = (0, 0, 0)   ground   D = (d, 0, 0)

    The tree has three bodies, named ``"crank"``, ``"coupler"`` and ``"rocker"`` (their joints
    have the same names), each with its frame at its proximal pin and ``x`` along the bar:

    * ``crank`` (``q[0]``): revolute at the base origin ``O``; ``q[0]`` is the crank's absolute
      angle from ``+x``, counter-clockwise.
    * ``coupler`` (``q[1]``): revolute at the crank tip ``A = (a, 0, 0)`` in the crank frame;
      ``q[1]`` is the coupler's angle *relative to the crank* (absolute angle ``q[0] + q[1]``).
    * ``rocker`` (``q[2]``): revolute at the base point ``D = (d, 0, 0)``; ``q[2]`` is the
      rocker's absolute angle.

    The loop closure ``loop_closure(model, "coupler", (b, 0, 0), "rocker", (c, 0, 0),
    "planar_point")`` makes the coupler's far end coincide with the rocker's far end ``B``
    (2 equations: the x and y components).

    Variants (Huang et al., Fig. 1(a): a four-bar whose constraint Jacobian ``Phi_q`` is
    deficient at a singular point, through which Huang's formulation still steps):

    * ``"crank_rocker"``: Grashof's condition holds strictly, ``s + l < p + q`` (shortest and
      longest lengths against the other two), with the crank the (strictly) shortest link, so
      the crank turns fully and ``Phi_q`` has full rank 2 in every assembled configuration.
      Default ``(a, b, c, d) = (0.2, 0.6, 0.5, 0.7)`` m.
    * ``"change_point"``: ``a + b = c + d`` (the limiting Grashof case; default the
      parallelogram ``a = c = 0.3``, ``b = d = 0.7`` m). At crank angle 0 all four links are
      collinear (``|AD| = d - a = b - c``: the two circles that locate ``B`` are tangent), the
      two assembly branches cross and ``Phi_q`` has rank 1 (of 2) there: the Lagrange and
      null-space formulations are singular there, while Huang's step stays defined (Fig. 1(a);
      in these joint coordinates its ``Phi_Q`` has rank 1 too, since the reactions act through
      ``Z = Phi_q``, and :func:`~kronjax.constrained.solve` takes its least-squares solution).
      For the parallelogram the branch ``branch = +1`` at crank angles in ``(0, pi)`` is the
      parallelogram motion (coupler parallel to the ground, rocker angle = crank angle); the
      other one is the anti-parallelogram.

    Bodies are uniform bars: mass ``masses[i]`` (default :data:`LINEAR_DENSITY` times the
    length), centre of mass at mid-length ``(L/2, 0, 0)``, inertia about it
    ``diag(0, Izz, Izz)`` with ``Izz = inertias[i]`` (default ``m L^2 / 12``, a slender rod).
    Gravity is ``gravity`` in the base frame (default ``-y``).

    Args:
        crank, coupler, rocker, ground: link lengths (m), positive; ``None`` takes the
            variant's default for that link.
        masses: ``(crank, coupler, rocker)`` masses (kg), positive.
        inertias: ``(crank, coupler, rocker)`` moments of inertia about the centres of mass
            and the ``z`` axis (kg m^2), non-negative.
        gravity: 3-vector, the gravitational acceleration in the base frame.
        variant: ``"crank_rocker"`` or ``"change_point"`` (the condition checked on the lengths).
        crank_angle: the crank angle of the assembled configuration ``q0`` (rad).
        branch: ``+1`` or ``-1``, the assembly branch of ``q0``: ``B`` on the left (``+1``) or
            right (``-1``) of the directed line from the crank tip ``A`` to the rocker pivot
            ``D`` (see :func:`four_bar_angles`). For the default crank-rocker at
            ``crank_angle = pi/3``, ``+1`` is the configuration with ``B`` above the ground line.

    Returns:
        ``Mechanism(model, constraints, q0)`` with ``q0`` from the closed-form loop solution
        (:func:`four_bar_angles`), refined with :func:`kronjax.constrained.project` to
        round-off.

    Raises:
        ValueError: non-positive or non-finite lengths, masses or inertias; an unknown variant
            or branch; Grashof's condition violated (or the crank not the shortest link) for
            ``"crank_rocker"``; ``a + b != c + d`` for ``"change_point"``; a crank angle at which
            the loop cannot be closed.

    Example:
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> mechanism = kj.models.four_bar()  # the crank-rocker (0.2, 0.6, 0.5, 0.7) m at crank angle pi/3
        >>> mechanism.model.body_names, mechanism.model.nv, mechanism.constraints.n_equations
        (('crank', 'coupler', 'rocker'), 3, 2)
        >>> bool(np.isclose(mechanism.q0[0], np.pi / 3))
        True
        >>> bool(jnp.allclose(mechanism.constraints.residual(mechanism.q0), 0.0, atol=1e-6))  # assembled
        True
    """
    if variant not in FOUR_BAR_VARIANTS:
        raise ValueError(f"unknown four-bar variant {variant!r}; expected one of {FOUR_BAR_VARIANTS}")
    defaults = DEFAULT_LENGTHS[variant]
    names = ("crank", "coupler", "rocker", "ground")
    lengths = [
        defaults[i] if x is None else positive_number(x, f"the {names[i]} length")
        for i, x in enumerate((crank, coupler, rocker, ground))
    ]
    a, b, c, d = lengths
    if isinstance(branch, bool) or branch not in (1, -1):
        raise ValueError(f"branch must be +1 or -1, got {branch!r}")
    theta = finite_number(crank_angle, "crank_angle")
    scale = a + b + c + d
    if variant == "crank_rocker":
        s, l = min(lengths), max(lengths)
        if not s + l < scale - s - l:
            raise ValueError(
                f"a crank-rocker needs Grashof's condition s + l < p + q (strictly): lengths "
                f"(crank, coupler, rocker, ground) = {tuple(lengths)} give s + l = {s + l:.6g} >= "
                f"p + q = {scale - s - l:.6g}"
            )
        if not all(a < x for x in (b, c, d)):
            raise ValueError(
                f"a crank-rocker needs the crank to be the strictly shortest link, got crank {a:g} "
                f"with coupler {b:g}, rocker {c:g}, ground {d:g}"
            )
    elif abs(a + b - c - d) > 1e-12 * scale:
        raise ValueError(
            f"a change-point four-bar needs crank + coupler = rocker + ground, got {a:g} + {b:g} = "
            f"{a + b:.12g} != {c:g} + {d:g} = {c + d:.12g}"
        )
    body_names = ("crank", "coupler", "rocker")
    masses_ = per_body_numbers(masses, body_names, "masses", [LINEAR_DENSITY * x for x in (a, b, c)])
    inertias_ = per_body_numbers(
        inertias, body_names, "inertias", [m * x * x / 12.0 for m, x in zip(masses_, (a, b, c))], allow_zero=True
    )
    z = (0.0, 0.0, 1.0)
    joints = [
        Joint("R", parent=-1, axis=z, name="crank", body_name="crank"),
        Joint("R", parent=0, axis=z, translation=(a, 0.0, 0.0), name="coupler", body_name="coupler"),
        Joint("R", parent=-1, axis=z, translation=(d, 0.0, 0.0), name="rocker", body_name="rocker"),
    ]
    inertials = [bar_inertial(m, x, i) for m, x, i in zip(masses_, (a, b, c), inertias_)]
    model = from_joints(joints, inertials, gravity=gravity)
    closure = loop_closure(model, "coupler", (b, 0.0, 0.0), "rocker", (c, 0.0, 0.0), "planar_point")
    constraints = Constraints((closure,))
    q0 = np.asarray(four_bar_angles(a, b, c, d, theta, branch))
    q0 = assemble(model, constraints, q0)
    return Mechanism(model, constraints, q0)
