"""The elements of a URDF file as kronjax reads them (private): numbers and origins, inertials (with
the repair of inertias indefinite by rounding), joints with their limits and passive parameters,
and the errors and warnings that name them."""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._rotations import rpy

MOVING_KINDS = {"revolute": "R", "continuous": "R", "prismatic": "P"}
KIND_FROM_URDF = {"floating": "free", "planar": "planar"}

ROOT_JOINT = "root_joint"  # the free-flyer of floating_base=True, named as Pinocchio names it
# what to_urdf writes for an unlimited effort or velocity: URDF parsers (urdfdom) accept no "inf"
UNLIMITED = float(np.finfo(np.float64).max)


class URDFError(ValueError):
    """A URDF that kronjax cannot turn into a model; the message names the offending element.

    Example:
        >>> import kronjax as kj
        >>> kj.load_urdf('''<robot name="r"><link name="a"/><link name="b"/>
        ...   <joint name="j" type="ball"><parent link="a"/><child link="b"/></joint></robot>''')
        Traceback (most recent call last):
            ...
        kronjax.urdf.URDFError: joint 'j': unknown joint type 'ball'; expected revolute, ...
        >>> issubclass(kj.urdf.URDFError, ValueError)
        True
    """

    __module__ = "kronjax.urdf"  # where users import it from (and how tracebacks name it)


class URDFWarning(UserWarning):
    """What :func:`load_urdf` read otherwise than the file says, or found odd: degenerate
    ``<limit>`` values, axes that are not unit vectors, a ``<mimic>`` it ignored, an inertia that
    is indefinite by rounding (repaired), a link with an inertia but no mass, a mass matrix that is
    singular. A ``UserWarning``; ``warnings.simplefilter("error", kj.urdf.URDFWarning)`` makes
    them errors.

    Example:
        >>> import warnings
        >>> import kronjax as kj
        >>> text = '''<robot name="r"><link name="a"/><link name="b"/>
        ...   <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
        ...   <limit lower="0" upper="0" effort="0" velocity="0"/></joint></robot>'''
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     model = kj.load_urdf(text)
        >>> [w.category.__name__ for w in caught]
        ['URDFWarning']
    """

    __module__ = "kronjax.urdf"


def warn(message: str, stacklevel: int = 3) -> None:
    """A :class:`URDFWarning` attributed to the caller of :func:`load_urdf` (by default)."""
    warnings.warn(message, URDFWarning, stacklevel=stacklevel)


def numbers(element: ET.Element, attribute: str, count: int, default, where: str, finite: bool = True) -> np.ndarray:
    text = element.get(attribute)
    if text is None:
        if default is None:
            raise URDFError(f"{where}: <{element.tag}> needs the attribute {attribute!r}")
        return np.asarray(default, float)
    try:
        values = np.array([float(v) for v in text.split()])
    except ValueError:
        raise URDFError(f"{where}: <{element.tag} {attribute}={text!r}> is not numeric") from None
    if values.shape != (count,):
        raise URDFError(f"{where}: <{element.tag} {attribute}={text!r}> needs {count} numbers, got {values.size}")
    if np.any(np.isnan(values)):
        raise URDFError(f"{where}: <{element.tag} {attribute}={text!r}> is not a number")
    if finite and not np.all(np.isfinite(values)):
        raise URDFError(f"{where}: <{element.tag} {attribute}={text!r}> is not finite")
    return values


def origin(element: ET.Element | None, where: str) -> np.ndarray:
    """The homogeneous transform of an optional ``<origin xyz rpy>`` (identity when absent)."""
    t = np.eye(4)
    if element is None:
        return t
    t[:3, :3] = rpy(*numbers(element, "rpy", 3, (0, 0, 0), where), xp=np)
    t[:3, 3] = numbers(element, "xyz", 3, (0, 0, 0), where)
    return t


@dataclass
class LinkMass:
    """Mass, centre of mass and inertia about it (3 x 3), in the frame of the body that holds it."""

    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def moved(self, t: np.ndarray) -> LinkMass:
        """The same mass seen from a frame in which this one is placed at ``t``."""
        r = t[:3, :3]
        inertia = r @ self.inertia @ r.T
        return LinkMass(self.mass, r @ self.com + t[:3, 3], 0.5 * inertia + 0.5 * inertia.T)  # symmetric to the bit

    def __add__(self, other: LinkMass) -> LinkMass:
        """Two rigidly joined masses as one (parallel-axis theorem about the joint centre)."""
        mass = self.mass + other.mass
        if mass == 0.0:
            return LinkMass(0.0, np.zeros(3), self.inertia + other.inertia)
        com = (self.mass * self.com + other.mass * other.com) / mass
        inertia = np.zeros((3, 3))
        for part in (self, other):
            d = part.com - com
            inertia += part.inertia + part.mass * (d @ d * np.eye(3) - np.outer(d, d))
        return LinkMass(mass, com, inertia)


# An <inertia> whose smallest eigenvalue is negative by no more than this fraction of the largest
# principal moment of any link of the file is indefinite by rounding (a CAD export's few digits on
# a tiny link): inertia="repair" clips it. The repair changes M by less than this fraction of the
# file's inertia scale; anything more negative is an error.
REPAIRABLE = 1e-6


def read_inertial(link: ET.Element) -> tuple[float, np.ndarray, np.ndarray] | None:
    """A link's ``(mass, inertia about the centre of mass, <inertial> frame in the link frame)``,
    ``None`` without ``<inertial>``; the inertia as written (checked by :func:`link_masses`)."""
    where = f"link {link.get('name')!r}"
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass_element = inertial.find("mass")
    if mass_element is None:
        raise URDFError(f"{where}: <inertial> has no <mass>")
    mass = float(numbers(mass_element, "value", 1, None, where)[0])
    if mass < 0:
        raise URDFError(f"{where}: negative mass {mass} in <mass value=...>")
    inertia = np.zeros((3, 3))
    inertia_element = inertial.find("inertia")
    if inertia_element is not None:
        (ixx, ixy, ixz, iyy, iyz, izz) = (
            float(numbers(inertia_element, key, 1, None, where)[0]) for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        )
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return mass, inertia, origin(inertial.find("origin"), where)


def link_masses(links: dict, policy: str) -> tuple[dict[str, LinkMass], list[str]]:
    """Every link's :class:`LinkMass` in its link frame under :func:`load_urdf`'s ``inertia`` policy,
    and what was repaired (for one warning)."""
    read = {name: read_inertial(link) for name, link in links.items()}
    eigenvalues = {name: np.linalg.eigvalsh(entry[1]) for name, entry in read.items() if entry is not None}
    scale = max((float(eig[-1]) for eig in eigenvalues.values() if np.isfinite(eig[-1])), default=0.0)
    masses, repaired = {}, []
    for name, entry in read.items():
        if entry is None:
            masses[name] = LinkMass()
            continue
        where = f"link {name!r}"
        mass, inertia, origin = entry
        eig = eigenvalues[name]
        if eig[0] < -1e-10 * max(1.0, float(np.max(np.abs(inertia)))):  # beyond the eigensolver's rounding
            if policy == "strict" or not -eig[0] <= REPAIRABLE * scale:
                raise URDFError(
                    f"{where}: <inertia> is not symmetric positive (semi-)definite: eigenvalues {eig}"
                    + (
                        f" (the smallest is {-eig[0] / scale:.2g} of the file's largest principal moment {scale:.3g}; "
                        f"inertia='repair' clips up to {REPAIRABLE:g} of it)"
                        if policy == "repair" and scale > 0
                        else ""
                    )
                )
            vectors = np.linalg.eigh(inertia)[1]
            inertia = vectors @ np.diag(np.maximum(eig, 0.0)) @ vectors.T
            repaired.append(f"{name!r} (eigenvalues {np.array2string(eig, precision=3)})")
        with np.errstate(over="ignore", invalid="ignore"):
            moved = LinkMass(mass, np.zeros(3), inertia).moved(origin)
        if not (np.all(np.isfinite(moved.com)) and np.all(np.isfinite(moved.inertia))):
            raise URDFError(f"{where}: <inertial> overflows float64 in the link frame")
        masses[name] = moved
    return masses, repaired


@dataclass
class UrdfJoint:
    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    limits: dict
    mimic: tuple[str, float, float] | None = None
    passive: dict = field(default_factory=dict)  # <dynamics damping friction>, zeros when absent
    fixed_mimic: bool = False  # a fixed joint with a <mimic>, which is ignored
    unit_axis: str | None = None  # an axis that was not a unit vector, for the warning


def limits_of(element: ET.Element, kind: str, where: str) -> dict:
    """The ``<limit>`` values as written: ``inf`` where absent or ``+-`` the largest double (what
    :func:`to_urdf` writes for unlimited); a continuous joint has no position limits. Degenerate
    values (``0``, ``lower >= upper``) are settled by :func:`settled_limits`."""
    limits = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    limit = element.find("limit")
    if limit is None:
        return limits
    for key in limits:
        if limit.get(key) is not None:
            value = float(numbers(limit, key, 1, None, where, finite=False)[0])
            limits[key] = np.copysign(np.inf, value) if abs(value) == UNLIMITED else value + 0.0  # -0 -> 0
    if kind == "continuous":
        limits["lower"], limits["upper"] = -np.inf, np.inf
    for key in ("velocity", "effort"):
        if limits[key] < 0:
            raise URDFError(f"{where}: <limit {key}={limits[key]}> must not be negative")
    return limits


def settled_limits(joint: UrdfJoint, strict: bool) -> tuple[dict, list[str]]:
    """A moving joint's limits under :func:`load_urdf`'s policy for degenerate ones, and what was
    read as "not set" (for the warning)."""
    limits, dropped = dict(joint.limits), []
    lower, upper = limits["lower"], limits["upper"]
    if strict:
        if lower > upper:
            raise URDFError(f"joint {joint.name!r}: <limit lower={lower} upper={upper}>: lower exceeds upper")
        if lower == np.inf or upper == -np.inf:
            raise URDFError(f"joint {joint.name!r}: <limit lower={lower} upper={upper}> holds no position")
        return limits, dropped
    if lower >= upper:
        dropped.append(f"position range [{lower:g}, {upper:g}]")
        limits["lower"], limits["upper"] = -np.inf, np.inf
    for key in ("velocity", "effort"):
        if limits[key] == 0:
            dropped.append(f"{key} 0")
            limits[key] = np.inf
    return limits, dropped


def passive_of(element: ET.Element, where: str) -> dict:
    """``<dynamics damping friction>`` (viscous and Coulomb; 0 where absent), finite and >= 0."""
    dynamics = element.find("dynamics")
    values = {"damping": 0.0, "friction": 0.0}
    for key in values if dynamics is not None else ():
        values[key] = float(numbers(dynamics, key, 1, (0.0,), where)[0])
        if values[key] < 0:
            raise URDFError(f"{where}: <dynamics {key}={values[key]}> must not be negative")
    return values


def read_joint(element: ET.Element, links: dict) -> UrdfJoint:
    name = element.get("name")
    if not name:
        raise URDFError("a <joint> has no name")
    where = f"joint {name!r}"
    kind = element.get("type")
    if kind not in (*MOVING_KINDS, *KIND_FROM_URDF, "fixed"):
        raise URDFError(
            f"{where}: unknown joint type {kind!r}; expected revolute, continuous, prismatic, fixed, floating or planar"
        )
    mimic = element.find("mimic")
    fixed_mimic = mimic is not None and kind == "fixed"  # nothing to couple: ignored, as Pinocchio does
    if fixed_mimic:
        mimic = None
    if mimic is not None:
        if kind not in MOVING_KINDS:
            raise URDFError(f"{where}: only a revolute, continuous or prismatic joint can be a <mimic>, not {kind!r}")
        if not mimic.get("joint"):
            raise URDFError(f"{where}: <mimic> needs the attribute 'joint'")
        mimic = (
            mimic.get("joint"),
            float(numbers(mimic, "multiplier", 1, (1.0,), where)[0]),
            float(numbers(mimic, "offset", 1, (0.0,), where)[0]),
        )
    ends = {}
    for end in ("parent", "child"):
        tag = element.find(end)
        if tag is None or not tag.get("link"):
            raise URDFError(f"{where}: missing <{end} link=...>")
        if tag.get("link") not in links:
            raise URDFError(f"{where}: {end} link {tag.get('link')!r} is not defined by any <link>")
        ends[end] = tag.get("link")
    axis_element = element.find("axis")
    axis = np.array([1.0, 0.0, 0.0])  # URDF's default axis
    if axis_element is not None:
        axis = numbers(axis_element, "xyz", 3, (1, 0, 0), where)
    unit_axis = None  # what the warning says of an axis that is not a unit vector
    if kind in MOVING_KINDS:
        scale = float(np.max(np.abs(axis)))  # divided out first: the norm of (1e308, 1e308, 0) is finite
        norm = scale * float(np.linalg.norm(axis / scale)) if scale > 0 else 0.0
        if norm < 1e-12:
            raise URDFError(f"{where}: <axis xyz=...> is zero")
        if abs(norm - 1.0) > 1e-9:
            unit_axis = f"{name!r} (axis {np.array2string(axis, precision=6)}, norm {norm:.9g})"
        axis = axis / scale / (norm / scale)
    if kind == "planar" and not np.allclose(axis, (0.0, 0.0, 1.0), rtol=0, atol=1e-9):
        raise URDFError(
            f"{where}: a planar joint moves in its joint frame's x-y plane: its <axis> must be 0 0 1 "
            f"(got {axis}); rotate the joint's <origin> instead"
        )
    return UrdfJoint(
        name=name,
        kind=kind,
        parent=ends["parent"],
        child=ends["child"],
        origin=origin(element.find("origin"), where),
        axis=axis,
        limits=limits_of(element, kind, where),
        mimic=mimic,
        passive=passive_of(element, where),
        fixed_mimic=fixed_mimic,
        unit_axis=unit_axis,
    )


def read_file(source) -> ET.Element:
    if isinstance(source, str) and not source.strip():
        raise URDFError("the URDF text is empty")
    if isinstance(source, (str, os.PathLike)) and not str(source).lstrip("\ufeff \t\r\n").startswith("<"):
        path = Path(source)
        try:
            found = path.is_file()
        except OSError:  # e.g. a name too long for the file system
            found = False
        if not found:
            raise FileNotFoundError(f"no URDF file at {str(path)[:200]!r}")
        text = path.read_bytes()  # the parser decodes it as its XML declaration says
    elif isinstance(source, (str, bytes)):
        text = source
    else:
        raise TypeError(f"load_urdf takes a path or the URDF text, got {type(source).__name__}")
    try:
        robot = ET.fromstring(text)
    except (ET.ParseError, UnicodeError) as err:
        raise URDFError(f"malformed XML: {err}") from None
    if robot.tag != "robot":
        raise URDFError(f"the root element must be <robot>, got <{robot.tag}>")
    return robot
