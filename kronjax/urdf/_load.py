"""Reading URDF: :func:`load_urdf` (joints, placements, inertials, limits, mimic joints; the
fixed-joint tree, root and tip sub-chains) and :class:`URDFError`, with a NumPy check at load time
that the mass matrix is positive definite."""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._rotations import axis_angle, rpy
from .._spatial import SUB_JOINTS
from ..chain import Inertial, Joint, Model, from_joints

_MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
_MULTI_DOF = {"floating": "free", "planar": "planar"}

ROOT_JOINT = "root_joint"  # the free-flyer of floating_base=True, named as Pinocchio names it
# what to_urdf writes for an unlimited effort or velocity: URDF parsers (urdfdom) accept no "inf"
_UNLIMITED = float(np.finfo(np.float64).max)


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


def _link_mass(link: ET.Element) -> _Mass:
    name = link.get("name")
    where = f"link {name!r}"
    inertial = link.find("inertial")
    if inertial is None:
        return _Mass()
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
        eig = np.linalg.eigvalsh(inertia)
        if eig[0] < -1e-10 * max(1.0, float(np.max(np.abs(inertia)))):
            raise URDFError(f"{where}: <inertia> is not symmetric positive (semi-)definite: eigenvalues {eig}")
    if mass == 0 and np.any(inertia):
        raise URDFError(f"{where}: <inertia> is non-zero but the mass is 0")
    with np.errstate(over="ignore", invalid="ignore"):
        moved = _Mass(mass, np.zeros(3), inertia).moved(_origin(inertial.find("origin"), where))
    if not (np.all(np.isfinite(moved.com)) and np.all(np.isfinite(moved.inertia))):
        raise URDFError(f"{where}: <inertial> overflows float64 in the link frame")
    return moved


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
            limits[key] = np.copysign(np.inf, value) if abs(value) == _UNLIMITED else value + 0.0  # -0 -> 0
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
    if kind not in (*_MOVING, *_MULTI_DOF, "fixed"):
        raise URDFError(
            f"{where}: unknown joint type {kind!r}; expected revolute, continuous, prismatic, fixed, floating or planar"
        )
    mimic = element.find("mimic")
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
    if kind in _MOVING:
        scale = float(np.max(np.abs(axis)))  # divided out first: the norm of (1e308, 1e308, 0) is finite
        norm = scale * float(np.linalg.norm(axis / scale)) if scale > 0 else 0.0
        if norm < 1e-12:
            raise URDFError(f"{where}: <axis xyz=...> is zero")
        if abs(norm - 1.0) > 1e-9:
            warnings.warn(f"{where}: axis {axis} is not a unit vector; normalised", stacklevel=4)
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
    :data:`kronjax._spatial.SUB_JOINTS`: the translations, then the rotations; massless but for
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


def _check_mimic(joints: list[Joint]) -> None:
    """URDFError naming a mimic joint whose primary is not a moving joint of the loaded model."""
    moving = {j.name: j.kind for j in joints}
    for joint in joints:
        if joint.mimic is not None and moving.get(joint.mimic[0]) not in ("R", "P"):
            raise URDFError(
                f"joint {joint.name!r}: <mimic joint={joint.mimic[0]!r}> names no revolute, continuous or "
                "prismatic joint of the loaded model; load with mimic='independent' to ignore <mimic>"
            )


def _mimic_reduction(joints: list[Joint]) -> np.ndarray | None:
    """``G`` (moving joints x coordinates): the moving joints' rates from the coordinates (mimic
    joints follow their primary, of mimics resolved to the first primary)."""
    if all(j.mimic is None for j in joints):
        return None
    moving = [j for j in joints if j.kind != "F"]
    own = [j.name for j in moving if j.mimic is None]
    g = np.zeros((len(moving), len(own)))
    for row, joint in enumerate(moving):
        factor = 1.0
        for _ in range(len(joints) + 1):  # a cycle is refused by from_joints, with its names
            if joint.mimic is None:
                break
            factor *= joint.mimic[1]
            joint = next(j for j in moving if j.name == joint.mimic[0])
        else:
            return None
        g[row, own.index(joint.name)] = factor
    return g


def _check_mass_matrix(joints: list[Joint], masses: list[_Mass]) -> None:
    """URDFError naming the joint where ``M`` is singular to working precision at a random
    configuration (so at almost every configuration: the rank of ``M(q)`` is generic)."""
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
    for k in np.flatnonzero(~(d > 64 * eps * scale))[:1]:  # zero up to cancellation, however light
        raise URDFError(
            f"joint {names[k]!r} moves no mass (M[{k}, {k}] = {d[k]:.3g}, rounding errors of "
            f"{eps * scale[k]:.3g}): every link below it has no mass and no inertia about its axis, or "
            "(revolute) its centre of mass on the axis, so the mass matrix is singular; give a link "
            "below it an <inertial>, make it a fixed joint, or load a chain that ends above it (tip=...)"
        )
    root = np.sqrt(d)  # not sqrt(d d^T), which overflows for entries above 1e154
    k = _first_bad_pivot(m / root[:, None] / root[None, :], 4 * len(m) * eps)
    if k is not None:
        raise URDFError(
            f"joint {names[k]!r}: the mass matrix is singular to working precision: for all the mass "
            "it moves, its motion is a combination of the motions of the joints above it (e.g. a "
            "joint coaxial with the one before it with no mass between them), or the masses and "
            "inertias span more orders of magnitude than float64 resolves"
        )


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
            the ``<mimic>`` element is ignored (Pinocchio 4.1's reading).

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
        planar joints). ``inertials`` is ``None`` when no link has an ``<inertial>``.

    Raises:
        URDFError: (a ``ValueError``) for malformed input, naming the element: XML syntax, an
            empty text, unknown joint types, a planar joint whose axis is not z, a ``<mimic>`` on a
            joint that is not revolute or prismatic, without ``joint``, naming no such joint of the
            loaded model, or in a cycle, ``floating_base=True`` with a root link that already holds a
            link by a floating joint (two free-flyers),
            missing or undefined parent/child links, two parents for a link, loops, duplicate names,
            non-numeric or non-finite attributes (limits may be ``inf``), negative masses, inertias
            that are not positive semi-definite, zero axes, negative velocity or effort limits,
            ``lower > upper`` with ``strict_limits=True``, placements or inertials that overflow
            float64, and a mass matrix that is singular at a random configuration (a moving joint
            that moves no mass, or whose motion repeats the joints above it for all the mass it
            moves; kinematics-only files, without any ``<inertial>``, are not checked for this).
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
    robot = _read(source)
    links, children, parent_joint = _tree(robot)
    root = _root(links, parent_joint, root)
    keep = _path(parent_joint, root, tip, links) if tip is not None else None
    masses = {name: _link_mass(link) for name, link in links.items()}
    has_inertials = any(link.find("inertial") is not None for link in links.values())

    joints: list[Joint] = []
    body_mass: list[_Mass] = []
    merged: list[list[str]] = []  # the links that make up each body
    degenerate: list[str] = []
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
                    degenerate.append(f"{joint.name!r} ({', '.join(dropped)})")
            if joint.kind in _MULTI_DOF:
                if floating_base and joint.kind == "floating" and parent_body == 0:
                    raise URDFError(
                        f"joint {joint.name!r}: the root link {root!r} already holds link {joint.child!r} by a "
                        "floating joint; floating_base=True would add a second free-flyer: load with "
                        "floating_base=False"
                    )
                limits = {key: joint.limits[key] for key in ("velocity", "effort")}
            coupled = joint.mimic if mimic == "coupled" else None
            if coupled is not None:
                limits = {}
            joints.append(
                Joint(
                    mimic=coupled,
                    kind=_MOVING.get(joint.kind) or _MULTI_DOF.get(joint.kind, "F"),
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
        raise URDFError(f"no moving joint below root link {root!r}" + (f" on the way to {tip!r}" if tip else ""))
    _check_mimic(joints)
    if degenerate:
        warnings.warn(
            "load_urdf: degenerate <limit> values read as not set (unlimited), as CAD exporters write "
            f"them: joint {', joint '.join(degenerate)}; strict_limits=True keeps them",
            UserWarning,
            stacklevel=2,
        )
    if has_inertials:
        for mass, names in zip(body_mass, merged):
            if not (np.isfinite(mass.mass) and np.all(np.isfinite(mass.com)) and np.all(np.isfinite(mass.inertia))):
                raise URDFError(f"links {names}: their combined inertial overflows float64")
        with np.errstate(over="ignore", invalid="ignore"):
            _check_mass_matrix(joints, body_mass)
    inertials = None
    if has_inertials:
        inertials = [Inertial(mass=m.mass, com=m.com, inertia=m.inertia) for m in body_mass]
    try:
        return from_joints(joints, inertials, gravity=gravity)
    except ValueError as err:
        raise URDFError(str(err)) from None
