"""Writing URDF: :func:`to_urdf`."""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .._rotations import to_rpy
from ..chain import Model, Tree
from ..chain._tree import JOINT_NV
from ._elements import KIND_FROM_URDF, UNLIMITED

_URDF_KIND = {kind: urdf_kind for urdf_kind, kind in KIND_FROM_URDF.items()}  # what to_urdf writes


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def _origin_element(parent: ET.Element, tag: str, rotation: np.ndarray, translation: np.ndarray) -> None:
    ET.SubElement(parent, tag, xyz=_fmt(translation), rpy=_fmt(to_rpy(rotation)))


def _joint_values(model: Model, arrays: dict, i: int, kind: str, k: int, element: str) -> dict:
    """One value per key of ``arrays`` (``(nv,)`` each) for joint ``i``, whose first velocity
    coordinate is ``k``; a multi-DoF joint's must be one value for all its coordinates, as a URDF
    ``element`` holds one value per joint."""
    out = {}
    for key, array in arrays.items():
        values = array[k : k + JOINT_NV[kind]]
        if np.unique(values).size > 1:
            label = f"{key} limits" if element == "<limit>" else key
            raise ValueError(
                f"to_urdf: {kind} joint {model.joint_names[i]!r} has {label} {values} on its "
                f"{values.size} velocity coordinates; a URDF {element} holds one value per joint"
            )
        out[key] = float(values[0])
    return out


def _inertial_element(link: ET.Element, mass, com: np.ndarray, inertia: np.ndarray, post_rotation, post_translation) -> None:
    """``link``'s ``<inertial>``: the body's ``mass``, centre of mass ``com`` and rotational
    ``inertia`` (about the centre of mass, body axes), placed in the link frame, which is the joint
    frame: the body frame is ``post_rotation``, ``post_translation`` further (D-H's ``Post``)."""
    inertial = ET.SubElement(link, "inertial")
    _origin_element(inertial, "origin", post_rotation, post_rotation @ com + post_translation)
    ET.SubElement(inertial, "mass", value=_fmt(mass))
    ET.SubElement(
        inertial,
        "inertia",
        **{
            key: _fmt(inertia[a, b])
            for key, (a, b) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))
        },
    )


def _limit_element(joint: ET.Element, urdf_kind: str, lower: float, upper: float, rates: dict) -> None:
    """``joint``'s ``<limit>``: the position bounds ``lower``, ``upper`` (where the URDF joint type
    has them) and the ``effort`` and ``velocity`` of ``rates``, unlimited values as the largest
    double; none at all where nothing is limited."""
    unbounded = urdf_kind in ("continuous", *_URDF_KIND.values())  # no position limits to write
    if unbounded and not any(np.isfinite(list(rates.values()))):
        return  # no <limit> at all: unlimited to urdfdom too (which requires one for the others)
    bounds = {} if unbounded else {"lower": lower, "upper": upper}  # absent is 0 to urdfdom
    attributes = {key: _fmt(np.clip(value, -UNLIMITED, UNLIMITED)) for key, value in (bounds | rates).items()}
    ET.SubElement(joint, "limit", **attributes)


def to_urdf(model: Model, name: str = "kronjax_model") -> str:
    """URDF text of a :class:`~kronjax.chain.Tree` model, which :func:`load_urdf` and Pinocchio load
    back to the same dynamics.

    Each body becomes a link whose frame is the moved joint frame. A model built from a D-H table
    places its body frames a constant ``Post`` placement further; that placement goes into the
    link's ``<inertial>`` origin and into its children's joint origins, so ``M``, ``C``, ``g`` are
    unchanged but the loaded model's frames are the joint frames. Gravity is not part of URDF:
    pass ``gravity=model.gravity`` to :func:`load_urdf`. A revolute joint without position limits
    is written ``continuous``, without ``<limit>`` when its effort and velocity are unlimited too
    (which Pinocchio reads as unlimited). Otherwise an unlimited effort or velocity, and an
    unlimited bound of a prismatic joint or a one-sided revolute one, are written as the largest
    double, ``+-1.7976931348623157e+308``: URDF parsers (urdfdom, so Pinocchio) require effort and
    velocity, read an absent bound as 0 and accept no ``inf``, and URDF's customary ``0`` is a
    zero limit to them; :func:`load_urdf` reads the largest double back as unlimited. Zero limits and single-point
    ranges (of a model loaded with ``strict_limits=True``) are written as they are: load them
    back with ``strict_limits=True``. Mimic joints get ``<mimic joint multiplier offset>`` (a mimic
    of a mimic names the first primary, with the combined multiplier and offset).

    A ``"free"`` joint is written ``floating`` and a ``"planar"`` one ``planar`` (``<axis xyz="0 0
    1">``: the joint frame's x-y plane), with a ``<limit>`` of effort and velocity only when one is
    finite (one value for all the joint's coordinates, or a ``ValueError``). The base is a massless
    link, ``world`` when a root joint is free or planar (``base_link`` otherwise; prefixed with
    ``_`` while a body has the name), so a model loaded with ``floating_base=True`` comes back from
    ``load_urdf(to_urdf(model))`` with the same coordinates. A ``"spherical"`` joint is a
    ``ValueError``: URDF has no ball joint. Nonzero ``damping`` and ``friction`` are written as
    ``<dynamics>`` (one value per joint). URDF has no rotor inertia: a model's nonzero
    ``armature`` is left out, with a ``UserWarning``.

    Args:
        model: a :class:`~kronjax.chain.Model` whose kinematics is a :class:`~kronjax.chain.Tree`.
        name: the ``<robot>``'s name.

    Returns:
        The URDF text.

    Example:
        The double pendulum written out and read back (gravity passed again): same dynamics.

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> text = kj.to_urdf(model)
        >>> text.count("<link "), text.count("<joint ")  # a base link, then one link and joint per body
        (3, 2)
        >>> back = kj.load_urdf(text, gravity=model.gravity)
        >>> q = jnp.array([0.3, 0.5])
        >>> bool(jnp.allclose(kj.mass_matrix(back, q), kj.mass_matrix(model, q)))
        True
        >>> bool(jnp.allclose(kj.gravity(back, q), kj.gravity(model, q)))
        True
    """
    tree = model.kinematics
    if not isinstance(tree, Tree):
        raise TypeError("to_urdf needs a model with a joint tree (from_dh, from_joints, load_urdf), not a poses function")
    for joint_name, kind in zip(model.joint_names, tree.kinds):
        if kind == "spherical":
            raise ValueError(
                f"to_urdf: joint {joint_name!r} is spherical, which URDF cannot hold: its joint types are "
                "revolute, continuous, prismatic, fixed, floating and planar, with no ball joint (three "
                "revolute joints would be other coordinates, singular at gimbal lock, not the same model)"
            )
    as_np = lambda x: np.asarray(x, float)  # noqa: E731
    if model.armature is not None and np.any(as_np(model.armature)):
        warnings.warn("to_urdf: URDF has no rotor inertia; the model's armature is left out", stacklevel=2)
    axes, pre_r, pre_p = as_np(tree.axes), as_np(tree.pre_rotation), as_np(tree.pre_translation)
    post_r, post_p = as_np(tree.post_rotation), as_np(tree.post_translation)
    floating = any(parent < 0 and kind in _URDF_KIND for parent, kind in zip(tree.parents, tree.kinds))
    base = "world" if floating else "base_link"
    while base in model.body_names:
        base = "_" + base
    robot = ET.Element("robot", name=name)
    ET.SubElement(robot, "link", name=base)
    limits = None
    if model.limits is not None:
        limits = {key: as_np(getattr(model.limits, key)) for key in ("lower", "upper", "effort", "velocity")}
    passive = {key: as_np(getattr(model, key)) for key in ("damping", "friction") if getattr(model, key) is not None}
    if model.inertials is not None:
        masses, coms, inertias = (as_np(x) for x in (model.inertials.mass, model.inertials.com, model.inertials.inertia))
    for i, (parent, kind, k) in enumerate(zip(tree.parents, tree.kinds, tree.v_index)):
        link = ET.SubElement(robot, "link", name=model.body_names[i])
        if model.inertials is not None:
            _inertial_element(link, masses[i], coms[i], inertias[i], post_r[i], post_p[i])
        lower, upper = -np.inf, np.inf
        if kind in ("R", "P") and k >= 0 and limits is not None:
            lower, upper = float(limits["lower"][k]), float(limits["upper"][k])
        urdf_kind = {"P": "prismatic", "F": "fixed", **_URDF_KIND}.get(kind, "revolute")
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
        if kind not in _URDF_KIND:
            ET.SubElement(joint, "axis", xyz=_fmt(axes[i]))
        elif kind == "planar":  # URDF's default axis is x; the plane is the joint frame's x-y
            ET.SubElement(joint, "axis", xyz=_fmt((0.0, 0.0, 1.0)))
        entry = tree.mimic[i] if tree.mimic else None
        if entry is not None:  # no coordinate, so no limits of its own
            primary, multiplier, offset = entry
            ET.SubElement(joint, "mimic", joint=model.joint_names[primary], multiplier=_fmt(multiplier), offset=_fmt(offset))
        own = k >= 0  # a coordinate of its own (not a mimic)
        dynamics = _joint_values(model, passive, i, kind, k, "<dynamics>") if own else {}
        if any(dynamics.values()):
            ET.SubElement(joint, "dynamics", **{key: _fmt(value) for key, value in dynamics.items()})
        rates = {"effort": np.inf, "velocity": np.inf}
        if own and limits is not None:
            rates = _joint_values(model, {key: limits[key] for key in rates}, i, kind, k, "<limit>")
        _limit_element(joint, urdf_kind, lower, upper, rates)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"
