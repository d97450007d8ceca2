"""Reading URDF: :func:`load_urdf` (joints, placements, inertials, limits, mimic joints; the
fixed-joint tree, root and tip sub-chains), :class:`URDFError` and :class:`URDFWarning`: the
repairs of what CAD exports get wrong, and a NumPy check at load time of whether the mass matrix
is positive definite."""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._rotations import axis_angle, rpy
from .._spatial.expansion import SUB_JOINTS
from ..chain import Inertial, Joint, Model, from_joints

_MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
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


def _warn(message: str, stacklevel: int = 3) -> None:
    """A :class:`URDFWarning` attributed to the caller of :func:`load_urdf` (by default)."""
    warnings.warn(message, URDFWarning, stacklevel=stacklevel)


def _numbers(element: ET.Element, attribute: str, count: int, default, where: str, finite: bool = True) -> np.ndarray:
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


def _origin(element: ET.Element | None, where: str) -> np.ndarray:
    """The homogeneous transform of an optional ``<origin xyz rpy>`` (identity when absent)."""
    t = np.eye(4)
    if element is None:
        return t
    t[:3, :3] = rpy(*_numbers(element, "rpy", 3, (0, 0, 0), where), xp=np)
    t[:3, 3] = _numbers(element, "xyz", 3, (0, 0, 0), where)
    return t


@dataclass
class _Mass:
    """Mass, centre of mass and inertia about it (3 x 3), in the frame of the body that holds it."""

    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def moved(self, t: np.ndarray) -> _Mass:
        """The same mass seen from a frame in which this one is placed at ``t``."""
        r = t[:3, :3]
        inertia = r @ self.inertia @ r.T
        return _Mass(self.mass, r @ self.com + t[:3, 3], 0.5 * inertia + 0.5 * inertia.T)  # symmetric to the bit

    def __add__(self, other: _Mass) -> _Mass:
        """Two rigidly joined masses as one (parallel-axis theorem about the joint centre)."""
        mass = self.mass + other.mass
        if mass == 0.0:
            return _Mass(0.0, np.zeros(3), self.inertia + other.inertia)
        com = (self.mass * self.com + other.mass * other.com) / mass
        inertia = np.zeros((3, 3))
        for part in (self, other):
            d = part.com - com
            inertia += part.inertia + part.mass * (d @ d * np.eye(3) - np.outer(d, d))
        return _Mass(mass, com, inertia)


# An <inertia> whose smallest eigenvalue is negative by no more than this fraction of the largest
# principal moment of any link of the file is indefinite by rounding (a CAD export's few digits on
# a tiny link): inertia="repair" clips it. The repair changes M by less than this fraction of the
# file's inertia scale; anything more negative is an error.
REPAIRABLE = 1e-6


def _read_inertial(link: ET.Element) -> tuple[float, np.ndarray, np.ndarray] | None:
    """A link's ``(mass, inertia about the centre of mass, <inertial> frame in the link frame)``,
    ``None`` without ``<inertial>``; the inertia as written (checked by :func:`_link_masses`)."""
    where = f"link {link.get('name')!r}"
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass_element = inertial.find("mass")
    if mass_element is None:
        raise URDFError(f"{where}: <inertial> has no <mass>")
    mass = float(_numbers(mass_element, "value", 1, None, where)[0])
    if mass < 0:
        raise URDFError(f"{where}: negative mass {mass} in <mass value=...>")
    inertia = np.zeros((3, 3))
    inertia_element = inertial.find("inertia")
    if inertia_element is not None:
        (ixx, ixy, ixz, iyy, iyz, izz) = (
            float(_numbers(inertia_element, key, 1, None, where)[0]) for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        )
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return mass, inertia, _origin(inertial.find("origin"), where)


def _link_masses(links: dict, policy: str) -> tuple[dict[str, _Mass], list[str]]:
    """Every link's :class:`_Mass` in its link frame under :func:`load_urdf`'s ``inertia`` policy,
    and what was repaired (for one warning)."""
    read = {name: _read_inertial(link) for name, link in links.items()}
    eigenvalues = {name: np.linalg.eigvalsh(entry[1]) for name, entry in read.items() if entry is not None}
    scale = max((float(eig[-1]) for eig in eigenvalues.values() if np.isfinite(eig[-1])), default=0.0)
    masses, repaired = {}, []
    for name, entry in read.items():
        if entry is None:
            masses[name] = _Mass()
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
            moved = _Mass(mass, np.zeros(3), inertia).moved(origin)
        if not (np.all(np.isfinite(moved.com)) and np.all(np.isfinite(moved.inertia))):
            raise URDFError(f"{where}: <inertial> overflows float64 in the link frame")
        masses[name] = moved
    return masses, repaired


@dataclass
class _UrdfJoint:
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


def _limits(element: ET.Element, kind: str, where: str) -> dict:
    """The ``<limit>`` values as written: ``inf`` where absent or ``+-`` the largest double (what
    :func:`to_urdf` writes for unlimited); a continuous joint has no position limits. Degenerate
    values (``0``, ``lower >= upper``) are settled by :func:`_settled_limits`."""
    limits = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    limit = element.find("limit")
    if limit is None:
        return limits
    for key in limits:
        if limit.get(key) is not None:
            value = float(_numbers(limit, key, 1, None, where, finite=False)[0])
            limits[key] = np.copysign(np.inf, value) if abs(value) == UNLIMITED else value + 0.0  # -0 -> 0
    if kind == "continuous":
        limits["lower"], limits["upper"] = -np.inf, np.inf
    for key in ("velocity", "effort"):
        if limits[key] < 0:
            raise URDFError(f"{where}: <limit {key}={limits[key]}> must not be negative")
    return limits


def _settled_limits(joint: _UrdfJoint, strict: bool) -> tuple[dict, list[str]]:
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


def _passive(element: ET.Element, where: str) -> dict:
    """``<dynamics damping friction>`` (viscous and Coulomb; 0 where absent), finite and >= 0."""
    dynamics = element.find("dynamics")
    values = {"damping": 0.0, "friction": 0.0}
    for key in values if dynamics is not None else ():
        values[key] = float(_numbers(dynamics, key, 1, (0.0,), where)[0])
        if values[key] < 0:
            raise URDFError(f"{where}: <dynamics {key}={values[key]}> must not be negative")
    return values


def _joint(element: ET.Element, links: dict) -> _UrdfJoint:
    name = element.get("name")
    if not name:
        raise URDFError("a <joint> has no name")
    where = f"joint {name!r}"
    kind = element.get("type")
    if kind not in (*_MOVING, *KIND_FROM_URDF, "fixed"):
        raise URDFError(
            f"{where}: unknown joint type {kind!r}; expected revolute, continuous, prismatic, fixed, floating or planar"
        )
    mimic = element.find("mimic")
    fixed_mimic = mimic is not None and kind == "fixed"  # nothing to couple: ignored, as Pinocchio does
    if fixed_mimic:
        mimic = None
    if mimic is not None:
        if kind not in _MOVING:
            raise URDFError(f"{where}: only a revolute, continuous or prismatic joint can be a <mimic>, not {kind!r}")
        if not mimic.get("joint"):
            raise URDFError(f"{where}: <mimic> needs the attribute 'joint'")
        mimic = (
            mimic.get("joint"),
            float(_numbers(mimic, "multiplier", 1, (1.0,), where)[0]),
            float(_numbers(mimic, "offset", 1, (0.0,), where)[0]),
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
        axis = _numbers(axis_element, "xyz", 3, (1, 0, 0), where)
    unit_axis = None  # what the warning says of an axis that is not a unit vector
    if kind in _MOVING:
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
    return _UrdfJoint(
        name=name,
        kind=kind,
        parent=ends["parent"],
        child=ends["child"],
        origin=_origin(element.find("origin"), where),
        axis=axis,
        limits=_limits(element, kind, where),
        mimic=mimic,
        passive=_passive(element, where),
        fixed_mimic=fixed_mimic,
        unit_axis=unit_axis,
    )


def _read(source) -> ET.Element:
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


def _tree(robot: ET.Element) -> tuple[dict, dict, dict]:
    """Links by name, the joints below each link (file order) and the joint above each link;
    checks that the links form a tree."""
    links = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise URDFError("a <link> has no name")
        if name in links:
            raise URDFError(f"link {name!r} is defined twice")
        links[name] = link
    if not links:
        raise URDFError("the URDF defines no <link>")
    children, parent_joint, names = {}, {}, set()
    for element in robot.findall("joint"):
        joint = _joint(element, links)
        if joint.name in names:
            raise URDFError(f"joint {joint.name!r} is defined twice")
        names.add(joint.name)
        if joint.child in parent_joint:
            raise URDFError(
                f"joint {joint.name!r}: link {joint.child!r} already has a parent joint "
                f"{parent_joint[joint.child].name!r}; a tree has one parent per link"
            )
        parent_joint[joint.child] = joint
        children.setdefault(joint.parent, []).append(joint)
    rooted: set[str] = set()
    for start in links:  # following parents from any link must end at a root
        seen, link = {}, start  # ordered, for the message
        while link in parent_joint and link not in rooted:
            if link in seen:
                cycle = list(seen)[list(seen).index(link) :]
                raise URDFError(f"the links {cycle} form a loop; a URDF must be a tree")
            seen[link] = None
            link = parent_joint[link].parent
        rooted.update(seen)
    return links, children, parent_joint


def _root(links: dict, parent_joint: dict, root: str | None) -> str:
    if root is not None:
        if root not in links:
            raise URDFError(f"root link {root!r} is not defined; links are {list(links)}")
        return root
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise URDFError(f"a URDF must have one root link, found {roots}; choose one with root=...")
    return roots[0]


def _path(parent_joint: dict, root: str, tip: str, links: dict) -> set[str]:
    """Links on the chain from ``root`` to ``tip``."""
    if tip not in links:
        raise URDFError(f"tip link {tip!r} is not defined; links are {list(links)}")
    path, link = [tip], tip
    while link != root:
        if link not in parent_joint:
            raise URDFError(f"tip link {tip!r} is not below root link {root!r}")
        link = parent_joint[link].parent
        path.append(link)
    return set(path)


def _mass_matrix(joints: list[Joint], masses: list[_Mass], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M(q)`` (``n x n``, coordinates in body order) by the composite-rigid-body algorithm in
    world coordinates, in NumPy: a check at load time, without compiling the model. Also, per
    coordinate, the size of the terms that ``M[k, k]`` sums (its scale for rounding errors)."""
    nb = len(joints)
    rotations, origins, pivots = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 3))
    motion = np.zeros((nb, 6))  # joint axes as spatial motions [w, v at the world origin]
    composite = np.zeros((nb, 6, 6))  # spatial inertias about the world origin, then of subtrees
    ancestors = np.zeros((nb, nb), bool)  # [i, j]: body j is body i or one of its ancestors
    for i, joint in enumerate(joints):
        r, p = (np.eye(3), np.zeros(3)) if joint.parent < 0 else (rotations[joint.parent], origins[joint.parent])
        if joint.parent >= 0:
            ancestors[i] = ancestors[joint.parent]
        ancestors[i, i] = True
        p = pivots[i] = p + r @ np.asarray(joint.translation)
        r = r @ np.asarray(joint.rotation)
        axis = r @ np.asarray(joint.axis)
        if joint.kind == "R":
            motion[i] = [*axis, *np.cross(p, axis)]
            r = r @ axis_angle(np.asarray(joint.axis), q[i], xp=np)
        elif joint.kind == "P":
            motion[i, 3:] = axis
            p = p + axis * q[i]
        rotations[i], origins[i] = r, p
        m = masses[i]
        c = p + r @ m.com
        cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
        composite[i, :3, :3] = r @ m.inertia @ r.T - m.mass * (cx @ cx)
        composite[i, :3, 3:] = m.mass * cx
        composite[i, 3:, :3] = -m.mass * cx
        composite[i, 3:, 3:] = m.mass * np.eye(3)
    for i in reversed(range(nb)):  # parents precede children
        if joints[i].parent >= 0:
            composite[joints[i].parent] += composite[i]
    moving = [i for i, joint in enumerate(joints) if joint.kind != "F"]
    s = motion[moving]
    g = s @ np.einsum("kab,kb->ka", composite[moving], s).T  # g[l, k] = S_l . Ic_k S_k
    lower = np.where(ancestors[np.ix_(moving, moving)].T, g, 0.0)  # M[l, k] for l at or above k
    c = composite[moving]  # sum of tr I + 2 m |c|^2 about the origin, m |p|^2 from the shift to the pivot
    scale = np.trace(c[:, :3, :3], axis1=1, axis2=2) + c[:, 3, 3] * (1.0 + np.sum(pivots[moving] ** 2, axis=1))
    return lower + lower.T - np.diag(np.diag(lower)), scale


def _first_bad_pivot(m: np.ndarray, tol: float) -> int | None:
    """The first ``k`` at which the Cholesky factorisation of ``m`` (unit diagonal) fails or its
    pivot falls below ``tol``; ``None`` when there is none. The leading ``k x k`` block has the
    first ``k`` pivots, so a bisection finds it."""

    def fine(k: int) -> bool:
        try:
            factor = np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return False
        return bool(np.all(np.diag(factor) ** 2 >= tol))

    if fine(len(m)):
        return None
    good, bad = 0, len(m)
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fine(mid) else (good, mid)
    return bad - 1


def _sub_joints(joints: list[Joint], masses: list[_Mass]) -> tuple[list[Joint], list[_Mass]]:
    """Multi-DoF joints as chains of 1-DoF joints in the child frame (the recursions' sub-joints,
    :data:`kronjax._spatial.expansion.SUB_JOINTS`: the translations, then the rotations; massless but for
    the last), which have the same ``M`` at some configuration."""
    out, out_masses, index = [], [], {}
    for i, (joint, mass) in enumerate(zip(joints, masses)):
        parent = -1 if joint.parent < 0 else index[joint.parent]
        subs = SUB_JOINTS.get(joint.kind)
        if subs is None:
            out.append(Joint(joint.kind, parent, joint.axis, joint.rotation, joint.translation, joint.name, mimic=joint.mimic))
            out_masses.append(mass)
        else:
            for k, (kind, axis) in enumerate(subs):
                first = k == 0
                out.append(
                    Joint(
                        kind,
                        parent if first else len(out) - 1,
                        axis,
                        joint.rotation if first else np.eye(3),
                        joint.translation if first else np.zeros(3),
                        joint.name,
                    )
                )
                out_masses.append(mass if k == len(subs) - 1 else _Mass())
        index[i] = len(out) - 1
    return out, out_masses


def _mimic_reduction(joints: list[Joint]) -> np.ndarray | None:
    """``G`` (moving joints x coordinates): the moving joints' rates from the coordinates (mimic
    joints follow their primary, of mimics resolved to the first primary). By position, not name:
    the sub-joints of a multi-DoF joint share its name."""
    if all(j.mimic is None for j in joints):
        return None
    moving = [j for j in joints if j.kind != "F"]
    own = [row for row, j in enumerate(moving) if j.mimic is None]
    column = {row: c for c, row in enumerate(own)}
    row_of = {j.name: row for row, j in enumerate(moving) if j.kind in ("R", "P")}  # primaries are 1-DoF joints
    g = np.zeros((len(moving), len(column)))
    for row in range(len(moving)):
        factor, at = 1.0, row
        for _ in range(len(joints) + 1):  # a cycle is refused by from_joints, with its names
            if moving[at].mimic is None:
                break
            factor *= moving[at].mimic[1]
            at = row_of[moving[at].mimic[0]]
        else:
            return None
        g[row, column[at]] = factor
    return g


def _singular_mass_matrix(joints: list[Joint], masses: list[_Mass]) -> str | None:
    """The joints that move no mass at a random configuration (so at almost every configuration:
    the rank of ``M(q)`` is generic), for a warning: their articulated-body pivots are zero, so
    :func:`~kronjax.forward_dynamics` raises. ``None`` when ``M`` is positive definite. URDFError
    when a column overflows float64, or when ``M`` is singular otherwise: the pivots are then at
    rounding level, which forward dynamics cannot tell from small ones."""
    joints, masses = _sub_joints(joints, masses)
    q = np.random.default_rng(0).uniform(-np.pi, np.pi, len(joints))
    m, scale = _mass_matrix(joints, masses, q)  # mimic joints at independent angles: the rank is generic
    names = [joint.name for joint in joints if joint.kind != "F" and joint.mimic is None]
    reduction = _mimic_reduction(joints)
    if reduction is not None:
        m, scale = reduction.T @ m @ reduction, np.abs(reduction).T @ scale
    for k in np.flatnonzero(~np.all(np.isfinite(m), axis=0))[:1]:
        raise URDFError(
            f"joint {names[k]!r}: its column of the mass matrix overflows float64 (masses, inertias or lengths too large)"
        )
    eps = np.finfo(float).eps
    d = np.diag(m)
    massless = np.flatnonzero(~(d > 64 * eps * scale))  # zero up to cancellation, however light
    if massless.size:
        listed = ", ".join(f"{names[k]!r} (M[{k}, {k}] = {d[k]:.3g}, rounding errors of {eps * scale[k]:.3g})" for k in massless)
        one = massless.size == 1
        return (
            f"{'joint' if one else 'joints'} {listed} {'moves' if one else 'move'} no mass: every link below "
            f"{'it' if one else 'each'} has no mass and no inertia about its axis, or (revolute) its centre of mass on the axis"
        )
    root = np.sqrt(d)  # not sqrt(d d^T), which overflows for entries above 1e154
    k = _first_bad_pivot(m / root[:, None] / root[None, :], 4 * len(m) * eps)
    if k is not None:  # an error: forward dynamics would see a pivot at rounding level, not one that raises
        raise URDFError(
            f"joint {names[k]!r}: the mass matrix is singular to working precision: for all the mass "
            "it moves, its motion is a combination of the motions of the joints above it (e.g. a "
            "joint coaxial with the one before it with no mass between them), or the masses and "
            "inertias span more orders of magnitude than float64 resolves"
        )
    return None


def load_urdf(
    source,
    root: str | None = None,
    tip: str | None = None,
    *,
    gravity=None,
    merge_fixed: bool = True,
    strict_limits: bool = False,
    floating_base: bool = False,
    mimic: str = "coupled",
    inertia: str = "repair",
) -> Model:
    """A kronjax :class:`~kronjax.chain.Model` from a URDF file or string.

    Args:
        source: a path to a ``.urdf`` file, or the URDF text itself.
        root: the link that becomes the fixed base (default: the URDF's root link). Gravity and all
            poses are expressed in its frame.
        tip: keep only the chain of moving joints from ``root`` to this link, with every link
            rigidly attached (by fixed joints) to its bodies (default: the whole tree below ``root``).
        gravity: gravitational acceleration in the root frame; URDF has none (default
            ``[0, 0, -9.81]``).
        merge_fixed: merge every link attached by a ``fixed`` joint into the moving link it hangs
            from, combining the inertials (parallel-axis theorem), as Pinocchio does; links fixed to
            the root belong to the base and are dropped. With ``False`` those links stay bodies of
            kind ``"F"`` (frames you can name in every kronjax function, e.g. a tool frame).
        strict_limits: keep degenerate ``<limit>`` values as written (see Returns).
        floating_base: put the root link on a free-flyer joint named ``"root_joint"`` (body 0,
            ``q[:7] = [x, y, z, qx, qy, qz, qw]``, ``v[:6]`` the root link's linear and angular
            velocity in its own frame), as Pinocchio's ``buildModelFromUrdf(path,
            JointModelFreeFlyer())``; the root link and the links fixed to it are then body 0
            instead of the base. A URDF ``floating`` joint is read as such a joint wherever it is.
        mimic: ``"coupled"`` (default): a joint with ``<mimic joint multiplier offset>`` follows
            ``multiplier * q_joint + offset`` and has no coordinate of its own (the dynamics are
            reduced accordingly: ``M = G^T M_full G``, ``tau = G^T tau_full``); ``"independent"``:
            the ``<mimic>`` element is ignored (Pinocchio 4.1's reading). A ``<mimic>`` that cannot
            couple anything is ignored either way, with a :class:`URDFWarning`: one on a fixed joint,
            and one that names no revolute, continuous or prismatic joint of the loaded model.
        inertia: ``"repair"`` (default): an ``<inertia>`` that is indefinite by rounding (its
            negative eigenvalue no larger than ``1e-6`` times the largest
            principal moment of any link of the file, as CAD exports write a tiny link's inertia
            with a few digits) gets its eigenvalues clipped at 0, which changes ``M`` by less than
            that, with one :class:`URDFWarning` naming each link and its eigenvalues;
            ``"strict"``: such an inertia is an error, as a grossly indefinite one always is.

    Returns:
        A model with one body per moving joint (``revolute`` and ``continuous`` become ``"R"``,
        ``prismatic`` ``"P"``, ``floating`` ``"free"``, ``planar`` ``"planar"``), named after the joint's child link, the joint names kept, the
        ``<limit>`` values in ``model.limits`` (``inf`` where absent, and where written as the
        largest double, as :func:`to_urdf` writes unlimited values; a continuous joint has no
        position limits). CAD exporters write ``lower="0" upper="0" effort="0" velocity="0"`` for
        "not set", so by default an empty or single-point position range (``lower >= upper``) and
        a zero velocity or effort limit are read as unlimited, with one ``UserWarning`` that names
        each such joint and what was dropped. With ``strict_limits=True`` they are kept: a
        single-point range locks the joint, a zero velocity keeps it still, a zero effort makes it
        passive (see :class:`~kronjax.chain.JointLimits`), and ``lower > upper`` is an error.
        ``<dynamics damping friction>`` of a revolute, continuous or prismatic joint (not a
        mimic) become ``model.damping`` and ``model.friction`` (viscous and Coulomb;
        :mod:`kronjax.passive`), as Pinocchio reads them (it ignores them on floating and
        planar joints). ``inertials`` is ``None`` when no link has an ``<inertial>``. A link with an
        ``<inertia>`` but mass 0 keeps that inertia where it is merged into a body with mass (as
        Pinocchio reads it) and loses it otherwise, with a warning. A moving joint that moves no
        mass at a random configuration (files without any ``<inertial>`` are not checked) loads
        with a :class:`URDFWarning` naming it: kinematics, inverse dynamics and ``M`` are defined,
        :func:`~kronjax.forward_dynamics` raises (``equinox.error_if``: its pivot is zero).

    Raises:
        URDFError: (a ``ValueError``) for malformed input, naming the element: XML syntax, an
            empty text, unknown joint types, a planar joint whose axis is not z, a ``<mimic>`` on a
            floating or planar joint, without ``joint``, or in a cycle, ``floating_base=True`` with
            a root link that already holds a link by a floating joint (two free-flyers), missing or
            undefined parent/child links, two parents for a link, loops, duplicate names,
            non-numeric or non-finite attributes (limits may be ``inf``), negative masses, inertias
            that are not positive semi-definite beyond ``inertia``'s repair, zero axes, negative
            velocity or effort limits, ``lower > upper`` with ``strict_limits=True``, placements,
            inertials or a mass matrix that overflow float64, no moving joint at all, and a mass
            matrix singular at a random configuration other than by a joint that moves no mass (a
            joint whose motion repeats the joints above it for all the mass it moves: forward
            dynamics would meet pivots at rounding level, which it cannot tell from small ones).
        FileNotFoundError: when ``source`` is a path to no file.

    Example:
        A pendulum from a URDF string: 2 kg at 0.5 m below a hinge about ``y``, ``I_yy = 0.1``
        about the centre of mass, so ``M = 2 * 0.5^2 + 0.1 = 0.6``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> urdf = '''
        ... <robot name="pendulum">
        ...   <link name="base"/>
        ...   <link name="arm">
        ...     <inertial>
        ...       <origin xyz="0 0 -0.5"/><mass value="2"/>
        ...       <inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/>
        ...     </inertial>
        ...   </link>
        ...   <joint name="hinge" type="revolute">
        ...     <parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        ...     <limit lower="-1.5" upper="1.5" effort="10" velocity="2"/>
        ...   </joint>
        ... </robot>'''
        >>> model = kj.load_urdf(urdf)
        >>> model.body_names, model.joint_names, model.limits.upper.tolist(), model.limits.effort.tolist()
        (('arm',), ('hinge',), [1.5], [10.0])
        >>> print(np.round(float(kj.mass_matrix(model, jnp.zeros(1))[0, 0]), 6))
        0.6
    """
    if mimic not in ("coupled", "independent"):
        raise ValueError(f"mimic must be 'coupled' or 'independent', got {mimic!r}")
    if inertia not in ("repair", "strict"):
        raise ValueError(f"inertia must be 'repair' or 'strict', got {inertia!r}")
    robot = _read(source)
    links, children, parent_joint = _tree(robot)
    root = _root(links, parent_joint, root)
    keep = _path(parent_joint, root, tip, links) if tip is not None else None
    masses, repaired = _link_masses(links, inertia)
    has_inertials = any(link.find("inertial") is not None for link in links.values())
    primaries = _moving_joints(children, root, keep) if mimic == "coupled" else set()

    joints: list[Joint] = []
    body_mass: list[_Mass] = []
    merged: list[list[str]] = []  # the links that make up each body
    odd: dict[str, list[str]] = {"axis": [], "degenerate": [], "fixed mimic": [], "lost mimic": []}  # for the warnings
    body_of: dict[str, tuple[int, np.ndarray]] = {root: (-1, np.eye(4))}
    if floating_base:
        joints.append(Joint(kind="free", name=ROOT_JOINT, body_name=root))
        body_mass.append(masses[root])
        merged.append([root])
        body_of[root] = (0, np.eye(4))
    stack = list(reversed(children.get(root, [])))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked for below, by name
        while stack:  # depth first, children in file order: parents before children, like Pinocchio
            joint = stack.pop()
            stack.extend(reversed(children.get(joint.child, [])))
            if keep is not None and joint.child not in keep and (joint.kind != "fixed" or joint.parent not in body_of):
                continue  # off the chain, unless rigidly attached to one of its bodies
            parent_body, placement = body_of[joint.parent]
            to_child = placement @ joint.origin  # child link frame in the parent body's frame
            if not np.all(np.isfinite(to_child)):
                raise URDFError(f"joint {joint.name!r}: the placement of link {joint.child!r} overflows float64")
            if joint.fixed_mimic:
                odd["fixed mimic"].append(repr(joint.name))
            if joint.unit_axis is not None:
                odd["axis"].append(joint.unit_axis)
            if joint.kind == "fixed" and merge_fixed:
                body_of[joint.child] = (parent_body, to_child)
                if parent_body >= 0:
                    body_mass[parent_body] = body_mass[parent_body] + masses[joint.child].moved(to_child)
                    merged[parent_body].append(joint.child)
                continue
            limits = {}
            if joint.kind in _MOVING:  # <dynamics> too, as Pinocchio (not on fixed, floating, planar joints)
                limits, dropped = _settled_limits(joint, strict_limits)
                limits |= joint.passive
                if dropped:
                    odd["degenerate"].append(f"{joint.name!r} ({', '.join(dropped)})")
            if joint.kind in KIND_FROM_URDF:
                if floating_base and joint.kind == "floating" and parent_body == 0:
                    raise URDFError(
                        f"joint {joint.name!r}: the root link {root!r} already holds link {joint.child!r} by a "
                        "floating joint; floating_base=True would add a second free-flyer: load with "
                        "floating_base=False"
                    )
                limits = {key: joint.limits[key] for key in ("velocity", "effort")}
            coupled = joint.mimic if mimic == "coupled" else None
            if coupled is not None and coupled[0] not in primaries:
                odd["lost mimic"].append(f"{joint.name!r} (<mimic joint={coupled[0]!r}>)")
                coupled = None
            if coupled is not None:
                limits = {}
            joints.append(
                Joint(
                    mimic=coupled,
                    kind=_MOVING.get(joint.kind) or KIND_FROM_URDF.get(joint.kind, "F"),
                    parent=parent_body,
                    axis=joint.axis if joint.kind in _MOVING else (0.0, 0.0, 1.0),
                    rotation=to_child[:3, :3],
                    translation=to_child[:3, 3],
                    name=joint.name,
                    body_name=joint.child,
                    **limits,
                )
            )
            body_mass.append(masses[joint.child])
            merged.append([joint.child])
            body_of[joint.child] = (len(joints) - 1, np.eye(4))
    if not joints:
        raise URDFError(
            f"no moving joint below root link {root!r}"
            + (f" on the way to {tip!r}" if tip else "")
            + ("" if floating_base else "; a robot that flies or floats: load with floating_base=True")
        )
    _warn_odd(odd, repaired)
    singular = None
    if has_inertials:
        for mass, names in zip(body_mass, merged):
            if not (np.isfinite(mass.mass) and np.all(np.isfinite(mass.com)) and np.all(np.isfinite(mass.inertia))):
                raise URDFError(f"links {names}: their combined inertial overflows float64")
        body_mass = _massless_inertias(body_mass, merged, masses)
        with np.errstate(over="ignore", invalid="ignore"):
            singular = _singular_mass_matrix(joints, body_mass)
    inertials = None
    if has_inertials:
        inertials = [Inertial(mass=m.mass, com=m.com, inertia=m.inertia) for m in body_mass]
    try:
        model = from_joints(joints, inertials, gravity=gravity)
    except ValueError as err:
        raise URDFError(str(err)) from None
    if singular is not None:
        _warn(
            f"load_urdf: the mass matrix is singular: {singular}. Kinematics, inverse dynamics, gravity "
            "and M itself are defined; forward_dynamics (which raises) and M^-1 are not. To simulate: "
            "give the joint a rotor inertia (model.armature, e.g. with equinox.tree_at), give a link "
            "below it an <inertial>, make it a fixed joint, or load a chain that ends above it (tip=...)"
        )
    return model


def _moving_joints(children: dict, root: str, keep: set[str] | None) -> set[str]:
    """The names of the revolute, continuous and prismatic joints of the loaded model (what a
    ``<mimic>`` may follow)."""
    names, stack = set(), list(children.get(root, []))
    while stack:
        joint = stack.pop()
        stack.extend(children.get(joint.child, []))
        if joint.kind in _MOVING and (keep is None or joint.child in keep):
            names.add(joint.name)
    return names


def _massless_inertias(body_mass: list[_Mass], merged: list[list[str]], masses: dict[str, _Mass]) -> list[_Mass]:
    """Links with an ``<inertia>`` but mass 0 (a CAD export's foot or sensor): their rotational
    inertia is kept where they are merged into a body with mass (as Pinocchio keeps it) and dropped
    from a body without mass, which cannot carry one; one warning names them."""
    kept, dropped, out = [], [], []
    for mass, names in zip(body_mass, merged):
        odd = [name for name in names if masses[name].mass == 0 and np.any(masses[name].inertia)]
        if odd and mass.mass == 0:
            dropped += odd
            mass = _Mass()
        else:
            kept += odd
        out.append(mass)
    if kept or dropped:
        _warn(
            "load_urdf: links with an <inertia> but mass 0: "
            + "; ".join(
                f"{what} {names}"
                for what, names in (
                    ("kept (merged into a body with mass, as Pinocchio)", kept),
                    ("dropped (a body without mass)", dropped),
                )
                if names
            ),
            stacklevel=4,
        )
    return out


def _warn_odd(odd: dict[str, list[str]], repaired: list[str]) -> None:
    """One :class:`URDFWarning` per kind of oddity :func:`load_urdf` read past."""
    messages = {  # (what the items are, the message)
        "axis": ("joint", "axes that are not a unit vector normalised: joint {}"),
        "degenerate": (
            "joint",
            "degenerate <limit> values read as not set (unlimited), as CAD exporters write them: joint {}; "
            "strict_limits=True keeps them",
        ),
        "fixed mimic": (
            "joint",
            "a <mimic> on a fixed joint ignored (a fixed joint has nothing to couple; Pinocchio ignores it too): joint {}",
        ),
        "lost mimic": (
            "joint",
            "a <mimic> that names no revolute, continuous or prismatic joint of the loaded model ignored "
            "(the joint is independent, as in Pinocchio's default reading): joint {}",
        ),
        "repaired": (
            "link",
            f"an <inertia> indefinite by rounding (its negative eigenvalue below {REPAIRABLE:g} of the file's largest "
            "principal moment) repaired by clipping its eigenvalues at 0: link {}; inertia='strict' refuses it",
        ),
    }
    for key, items in (odd | {"repaired": repaired}).items():
        if items:
            noun, message = messages[key]
            _warn("load_urdf: " + message.format(f", {noun} ".join(items)), stacklevel=4)
