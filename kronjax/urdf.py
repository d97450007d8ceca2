"""URDF in and out: :func:`load_urdf` and :func:`to_urdf`.

kronjax reads the kinematic tree and the inertials of a fixed-base robot: joints ``revolute``,
``continuous``, ``prismatic`` and ``fixed``, ``<origin xyz rpy>``, ``<axis>``, ``<inertial>`` (with
its own origin) and ``<limit>``. Visuals, collisions, meshes, transmissions and Gazebo tags are not
read, so a URDF that names mesh files that are not on this machine loads.

The parser is the standard library's :mod:`xml.etree.ElementTree`: URDF is a small XML dialect,
and the URDF packages on PyPI add dependencies (meshes, graphs) for parts kronjax does not use.

Frames follow URDF (and Pinocchio): a body's frame is its link frame, i.e. the joint frame after
the joint's motion. Rotations ``rpy`` are fixed-axis roll, pitch, yaw: ``Rz(y) Ry(p) Rx(r)``.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._rotations import rpy, to_rpy
from .chain import Inertial, Joint, Model, Tree, from_joints

__all__ = ["URDFError", "load_urdf", "to_urdf"]

_MOVING = {"revolute": "R", "continuous": "R", "prismatic": "P"}
_NOT_SUPPORTED = ("floating", "planar")


class URDFError(ValueError):
    """A URDF that kronjax cannot turn into a model; the message names the offending element."""


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _numbers(element: ET.Element, attribute: str, count: int, default, where: str) -> np.ndarray:
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
    return values


def _origin(element: ET.Element | None, where: str) -> np.ndarray:
    """The homogeneous transform of an optional ``<origin xyz rpy>`` (identity when absent)."""
    t = np.eye(4)
    if element is None:
        return t
    t[:3, :3] = np.asarray(rpy(*_numbers(element, "rpy", 3, (0, 0, 0), where)), float)
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
        return _Mass(self.mass, t[:3, :3] @ self.com + t[:3, 3], r @ self.inertia @ r.T)

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
            float(_numbers(inertia_element, key, 1, None, where)[0])
            for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        )
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        eig = np.linalg.eigvalsh(inertia)
        if eig[0] < -1e-10 * max(1.0, float(np.max(np.abs(inertia)))):
            raise URDFError(
                f"{where}: <inertia> is not symmetric positive (semi-)definite: eigenvalues {eig}"
            )
    if mass == 0 and np.any(inertia):
        raise URDFError(f"{where}: <inertia> is non-zero but the mass is 0")
    return _Mass(mass, np.zeros(3), inertia).moved(_origin(inertial.find("origin"), where))


@dataclass
class _UrdfJoint:
    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    limits: dict


def _limits(element: ET.Element, kind: str, where: str) -> dict:
    """Limits of a joint: absent values and URDF's customary ``0`` for effort and velocity mean
    unlimited; a continuous joint has no position limits."""
    limits = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    limit = element.find("limit")
    if limit is None:
        return limits
    for key in limits:
        if limit.get(key) is not None:
            limits[key] = float(_numbers(limit, key, 1, None, where)[0])
    if kind == "continuous":
        limits["lower"], limits["upper"] = -np.inf, np.inf
    for key in ("velocity", "effort"):
        if limits[key] < 0:
            raise URDFError(f"{where}: <limit {key}={limits[key]}> must not be negative")
        if limits[key] == 0:
            limits[key] = np.inf
    if limits["lower"] > limits["upper"]:
        raise URDFError(f"{where}: <limit lower={limits['lower']} upper={limits['upper']}>: lower exceeds upper")
    return limits


def _joint(element: ET.Element, links: dict) -> _UrdfJoint:
    name = element.get("name")
    if not name:
        raise URDFError("a <joint> has no name")
    where = f"joint {name!r}"
    kind = element.get("type")
    if kind in _NOT_SUPPORTED:
        raise URDFError(
            f"{where}: joint type {kind!r} is not supported yet (kronjax models fixed-base trees "
            "of revolute, continuous, prismatic and fixed joints)"
        )
    if kind not in (*_MOVING, "fixed"):
        raise URDFError(
            f"{where}: unknown joint type {kind!r}; expected revolute, continuous, prismatic or fixed"
        )
    if element.find("mimic") is not None:
        raise URDFError(
            f"{where}: <mimic> joints are not supported (kronjax has one coordinate per joint); "
            "remove the <mimic> element to make the joint independent"
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
    norm = float(np.linalg.norm(axis))
    if kind in _MOVING:
        if norm < 1e-12:
            raise URDFError(f"{where}: <axis xyz=...> is zero")
        if abs(norm - 1.0) > 1e-9:
            warnings.warn(f"{where}: axis {axis} is not a unit vector; normalised", stacklevel=4)
        axis = axis / norm
    return _UrdfJoint(
        name=name,
        kind=kind,
        parent=ends["parent"],
        child=ends["child"],
        origin=_origin(element.find("origin"), where),
        axis=axis,
        limits=_limits(element, kind, where),
    )


def _read(source) -> ET.Element:
    if isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("<"):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no URDF file at {str(path)!r}")
        text = path.read_text()
    elif isinstance(source, (str, bytes)):
        text = source
    else:
        raise TypeError(f"load_urdf takes a path or the URDF text, got {type(source).__name__}")
    try:
        robot = ET.fromstring(text)
    except ET.ParseError as err:
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
    for start in links:  # following parents from any link must end at a root
        seen, link = [], start
        while link in parent_joint:
            if link in seen:
                cycle = seen[seen.index(link) :]
                raise URDFError(f"the links {cycle} form a loop; a URDF must be a tree")
            seen.append(link)
            link = parent_joint[link].parent
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


def load_urdf(source, root: str | None = None, tip: str | None = None, *, gravity=None, merge_fixed: bool = True) -> Model:
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

    Returns:
        A model with one body per moving joint (``revolute`` and ``continuous`` become ``"R"``,
        ``prismatic`` ``"P"``), named after the joint's child link, the joint names kept, the
        ``<limit>`` values in ``model.limits`` (``inf`` where absent; a continuous joint has no
        position limits; ``effort="0"`` and ``velocity="0"`` mean unlimited, as URDFs customarily
        write them). ``inertials`` is ``None`` when no link has an ``<inertial>``.

    Raises:
        URDFError: (a ``ValueError``) for malformed input, naming the element: XML syntax, unknown
            or unsupported (``floating``, ``planar``) joint types, ``<mimic>``, missing or undefined
            parent/child links, two parents for a link, loops, negative masses, inertias that are
            not positive semi-definite, non-numeric attributes, limits with lower > upper.
        FileNotFoundError: when ``source`` is a path to no file.
    """
    robot = _read(source)
    links, children, parent_joint = _tree(robot)
    root = _root(links, parent_joint, root)
    keep = _path(parent_joint, root, tip, links) if tip is not None else None
    masses = {name: _link_mass(link) for name, link in links.items()}
    has_inertials = any(link.find("inertial") is not None for link in links.values())

    joints: list[Joint] = []
    body_mass: list[_Mass] = []
    body_of: dict[str, tuple[int, np.ndarray]] = {root: (-1, np.eye(4))}
    stack = list(reversed(children.get(root, [])))
    while stack:  # depth first, children in file order: parents before children, like Pinocchio
        joint = stack.pop()
        stack.extend(reversed(children.get(joint.child, [])))
        if keep is not None and joint.child not in keep and (joint.kind != "fixed" or joint.parent not in body_of):
            continue  # off the chain, unless rigidly attached to one of its bodies
        parent_body, placement = body_of[joint.parent]
        to_child = placement @ joint.origin  # child link frame in the parent body's frame
        if joint.kind == "fixed" and merge_fixed:
            body_of[joint.child] = (parent_body, to_child)
            if parent_body >= 0:
                body_mass[parent_body] = body_mass[parent_body] + masses[joint.child].moved(to_child)
            continue
        joints.append(
            Joint(
                kind=_MOVING.get(joint.kind, "F"),
                parent=parent_body,
                axis=joint.axis if joint.kind in _MOVING else (0.0, 0.0, 1.0),
                rotation=to_child[:3, :3],
                translation=to_child[:3, 3],
                name=joint.name,
                body_name=joint.child,
                **(joint.limits if joint.kind in _MOVING else {}),
            )
        )
        body_mass.append(masses[joint.child])
        body_of[joint.child] = (len(joints) - 1, np.eye(4))
    if not joints:
        raise URDFError(f"no moving joint below root link {root!r}" + (f" on the way to {tip!r}" if tip else ""))
    inertials = None
    if has_inertials:
        inertials = [Inertial(mass=m.mass, com=m.com, inertia=m.inertia) for m in body_mass]
    try:
        return from_joints(joints, inertials, gravity=gravity)
    except ValueError as err:
        raise URDFError(str(err)) from None


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def _origin_element(parent: ET.Element, tag: str, rotation: np.ndarray, translation: np.ndarray) -> None:
    ET.SubElement(parent, tag, xyz=_fmt(translation), rpy=_fmt(to_rpy(rotation)))


def to_urdf(model: Model, name: str = "kronjax_model") -> str:
    """URDF text of a :class:`~kronjax.chain.Tree` model, which :func:`load_urdf` and Pinocchio load
    back to the same dynamics.

    Each body becomes a link whose frame is the moved joint frame. A model built from a D-H table
    places its body frames a constant ``Post`` placement further; that placement goes into the
    link's ``<inertial>`` origin and into its children's joint origins, so ``M``, ``C``, ``g`` are
    unchanged but the loaded model's frames are the joint frames. Gravity is not part of URDF:
    pass ``gravity=model.gravity`` to :func:`load_urdf`. A revolute joint without position limits
    is written ``continuous``; unlimited effort and velocity are written ``0`` (URDF's custom,
    which :func:`load_urdf` reads back as unlimited).
    """
    tree = model.kinematics
    if not isinstance(tree, Tree):
        raise TypeError("to_urdf needs a model with a joint tree (from_dh, from_joints, load_urdf), not a poses function")
    as_np = lambda x: np.asarray(x, float)  # noqa: E731
    axes, pre_r, pre_p = as_np(tree.axes), as_np(tree.pre_rotation), as_np(tree.pre_translation)
    post_r, post_p = as_np(tree.post_rotation), as_np(tree.post_translation)
    base = "base_link"
    while base in model.body_names:
        base = "_" + base
    robot = ET.Element("robot", name=name)
    ET.SubElement(robot, "link", name=base)
    limits = model.limits
    for i, (parent, kind, k) in enumerate(zip(tree.parents, tree.kinds, tree.q_index)):
        link = ET.SubElement(robot, "link", name=model.body_names[i])
        if model.inertials is not None:
            inertial = ET.SubElement(link, "inertial")
            com = post_r[i] @ as_np(model.inertials.com[i]) + post_p[i]
            _origin_element(inertial, "origin", post_r[i], com)
            ET.SubElement(inertial, "mass", value=_fmt(model.inertials.mass[i]))
            c = as_np(model.inertials.inertia[i])
            ET.SubElement(
                inertial, "inertia",
                **{key: _fmt(c[a, b]) for key, (a, b) in zip(
                    ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
                )},
            )
        lower, upper = -np.inf, np.inf
        if k >= 0 and limits is not None:
            lower, upper = float(limits.lower[k]), float(limits.upper[k])
        urdf_kind = {"P": "prismatic", "F": "fixed"}.get(kind, "revolute")
        if kind == "R" and not (np.isfinite(lower) or np.isfinite(upper)):
            urdf_kind = "continuous"
        joint = ET.SubElement(robot, "joint", name=model.joint_names[i], type=urdf_kind)
        ET.SubElement(joint, "parent", link=base if parent < 0 else model.body_names[parent])
        ET.SubElement(joint, "child", link=model.body_names[i])
        rotation, translation = pre_r[i], pre_p[i]
        if parent >= 0:  # the parent's link frame is its joint frame, Post before its body frame
            rotation = post_r[parent] @ pre_r[i]
            translation = post_r[parent] @ pre_p[i] + post_p[parent]
        _origin_element(joint, "origin", rotation, translation)
        if kind == "F":
            continue
        ET.SubElement(joint, "axis", xyz=_fmt(axes[i]))
        attributes = {}
        if limits is not None:
            if np.isfinite(lower) and urdf_kind != "continuous":
                attributes["lower"] = _fmt(lower)
            if np.isfinite(upper) and urdf_kind != "continuous":
                attributes["upper"] = _fmt(upper)
            for key in ("effort", "velocity"):
                value = float(getattr(limits, key)[k])
                attributes[key] = _fmt(value if np.isfinite(value) else 0.0)
        else:
            attributes = {"effort": "0", "velocity": "0"}
        ET.SubElement(joint, "limit", **attributes)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"
