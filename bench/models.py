"""The arms of the benchmark, their samples, and the one URDF every library reads.

Every library gets the same Panda: ``kj.models.panda()`` written by ``kj.to_urdf`` (gravity
``(0, 0, -9.81)``). Pinocchio and adam read that URDF; MuJoCo reads it with a ``<mujoco>``
compiler element added (:func:`mjcf_from_urdf`); jaxsim reads an SDF rewritten from it
(:func:`sdf_from_urdf`), because its URDF route needs Gazebo's ``gz sdf`` executable; frax reads
it with an inertial given to the root link (:func:`urdf_with_root_inertial`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

GRAVITY = (0.0, 0.0, -9.81)


def panda(dtype=None):
    """``kj.models.panda()`` (optionally cast to ``dtype``)."""
    import kronjax as kj

    model = kj.models.panda(gravity=GRAVITY)
    return model if dtype is None else model.astype(dtype)


def panda_urdf() -> str:
    import kronjax as kj

    return kj.to_urdf(panda(), name="panda")


def _random_inertia(rng: np.random.Generator) -> np.ndarray:
    """A full, physically consistent inertia about the centre of mass (triangle inequality holds)."""
    principal = rng.uniform(0.01, 0.05, 3)
    principal[2] = rng.uniform(abs(principal[0] - principal[1]) + 0.005, principal[0] + principal[1])
    rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return rot @ np.diag(principal) @ rot.T


def random_chain(n: int, seed: int = 0):
    """A serial arm of ``n`` revolute joints from a random standard D-H table, with full inertias
    and offset centres of mass (the scaling and compile-time benchmarks)."""
    import kronjax as kj

    rng = np.random.default_rng(seed)
    rows = [
        (
            "R",
            float(rng.uniform(0.0, 0.2)),
            0.0,
            float(rng.uniform(0.05, 0.3)),
            float(rng.choice([-1, 1]) * np.pi / 2 * rng.uniform(0.3, 1.0)),
        )
        for _ in range(n)
    ]
    inertials = [
        kj.Inertial(mass=float(rng.uniform(0.5, 3.0)), com=rng.uniform(-0.1, 0.1, 3), inertia=_random_inertia(rng))
        for _ in range(n)
    ]
    # limited joints: URDF "revolute", one coordinate each in every library ("continuous" has two in Pinocchio)
    return kj.from_dh(rows, "standard", inertials, gravity=GRAVITY, limits={"lower": -np.pi, "upper": np.pi})


def samples(model, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random states ``q`` (inside the joint limits where there are any), ``qd``, ``qdd`` and
    torques ``tau``, each ``(batch, n)`` float64."""
    rng = np.random.default_rng(seed)
    n = model.nv
    lower, upper = np.full(n, -np.pi), np.full(n, np.pi)
    if model.limits is not None:
        lo, up = np.asarray(model.limits.lower, float), np.asarray(model.limits.upper, float)
        lower, upper = np.where(np.isfinite(lo), lo, lower), np.where(np.isfinite(up), up, upper)
    return {
        "q": rng.uniform(lower, upper, (batch, n)),
        "qd": rng.uniform(-2.0, 2.0, (batch, n)),
        "qdd": rng.uniform(-5.0, 5.0, (batch, n)),
        "tau": rng.uniform(-10.0, 10.0, (batch, n)),
    }


def relative_error(got, expected) -> float:
    """``max |got - expected| / max |expected|``."""
    got, expected = np.asarray(got, float), np.asarray(expected, float)
    return float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-300))


# --------------------------------------------------------------------------------------------
# The URDF for MuJoCo and jaxsim
# --------------------------------------------------------------------------------------------


def mjcf_from_urdf(urdf: str) -> str:
    """The URDF with a ``<mujoco>`` element, for ``mujoco.MjModel.from_xml_string``: no visuals,
    the inertias as given (``balanceinertia="false"``); the base link is fused into the world."""
    extension = '<mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="true"/></mujoco>'
    start = urdf.index("<robot")
    end = urdf.index(">", start) + 1
    return urdf[:end] + extension + urdf[end:]


def _root_link(robot: ET.Element) -> ET.Element:
    children = {j.find("child").get("link") for j in robot.findall("joint")}
    roots = [link for link in robot.findall("link") if link.get("name") not in children]
    if len(roots) != 1:
        raise ValueError(f"expected one root link, found {[r.get('name') for r in roots]}")
    return roots[0]


def urdf_with_root_inertial(urdf: str, mass: float = 1.0, inertia: float = 1e-3) -> str:
    """The URDF with an inertial (``mass`` kg, ``inertia`` kg m^2 on the diagonal) on its root link
    when it has none: frax 0.1 cannot parse a root link without one (``AttributeError`` on its
    ``inertial_i``). A root fixed to the world moves nothing with it; a floating root needs a
    negligible one."""
    robot = ET.fromstring(urdf)
    root = _root_link(robot)
    if root.find("inertial") is None:
        inertial = ET.SubElement(root, "inertial")
        ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=repr(float(mass)))
        diagonal = repr(float(inertia))
        ET.SubElement(inertial, "inertia", dict(zip(_INERTIA_KEYS, (diagonal, "0", "0", diagonal, "0", diagonal))))
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _numbers(text: str | None, default) -> np.ndarray:
    return np.array([float(v) for v in text.split()]) if text else np.array(default, float)


def _rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


def _matrix_rpy(r: np.ndarray) -> np.ndarray:
    pitch = np.arcsin(-np.clip(r[2, 0], -1.0, 1.0))
    if abs(np.cos(pitch)) > 1e-9:
        return np.array([np.arctan2(r[2, 1], r[2, 2]), pitch, np.arctan2(r[1, 0], r[0, 0])])
    return np.array([np.arctan2(-r[1, 2], r[1, 1]), pitch, 0.0])  # gimbal lock: roll absorbs yaw


def _origin(element: ET.Element | None) -> np.ndarray:
    t = np.eye(4)
    if element is not None:
        t[:3, :3] = _rpy_matrix(_numbers(element.get("rpy"), (0, 0, 0)))
        t[:3, 3] = _numbers(element.get("xyz"), (0, 0, 0))
    return t


def _pose_text(t: np.ndarray) -> str:
    return " ".join(repr(float(v)) for v in (*t[:3, 3], *_matrix_rpy(t[:3, :3])))


_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def sdf_from_urdf(urdf: str, fixed: bool = True) -> str:
    """An SDF 1.7 model of a URDF's kinematic tree (revolute, continuous, prismatic and fixed
    joints; inertials; no geometry), fixed to the world at its root link (``fixed``) or free.

    SDF places links in the model frame: each link's pose is the composition of the joint
    origins from the root at ``q = 0``; a joint's frame is its child link's frame (URDF's
    convention), so its axis is copied as is.
    """
    robot = ET.fromstring(urdf)
    joints = robot.findall("joint")
    links = {link.get("name"): link for link in robot.findall("link")}
    root = _root_link(robot).get("name")
    pose = {root: np.eye(4)}
    pending = list(joints)
    while pending:  # joints may come in any order
        progressed = False
        for j in list(pending):
            parent = j.find("parent").get("link")
            if parent in pose:
                pose[j.find("child").get("link")] = pose[parent] @ _origin(j.find("origin"))
                pending.remove(j)
                progressed = True
        if not progressed:
            raise ValueError("URDF joints do not form a tree")

    sdf = ET.Element("sdf", version="1.7")
    # the root is the canonical link: a free model's base (jaxsim takes the first link otherwise)
    model = ET.SubElement(sdf, "model", name=robot.get("name", "robot"), canonical_link=root)
    for name, link in links.items():
        out = ET.SubElement(model, "link", name=name)
        ET.SubElement(out, "pose").text = _pose_text(pose[name])
        # jaxsim drops links of mass 0 (and so the joints to them): a massless root, fixed to the
        # world, gets 1 kg (it moves nothing); any other massless link, a floating root included, 1e-9 kg.
        inertial = link.find("inertial")
        mass = float(inertial.find("mass").get("value")) if inertial is not None else 0.0
        source = inertial.find("inertia") if inertial is not None else None
        tensor = {key: float(source.get(key, 0)) if source is not None else 0.0 for key in _INERTIA_KEYS}
        if mass <= 0:
            mass, small = (1.0, 1e-3) if name == root and fixed else (1e-9, 1e-12)
            tensor = dict.fromkeys(_INERTIA_KEYS, 0.0) | {"ixx": small, "iyy": small, "izz": small}
        inertial_out = ET.SubElement(out, "inertial")
        ET.SubElement(inertial_out, "pose").text = _pose_text(_origin(inertial.find("origin") if inertial is not None else None))
        ET.SubElement(inertial_out, "mass").text = repr(mass)
        tensor_out = ET.SubElement(inertial_out, "inertia")
        for key, value in tensor.items():
            ET.SubElement(tensor_out, key).text = repr(value)
    if fixed:
        world = ET.SubElement(model, "joint", name="world_to_" + root, type="fixed")
        ET.SubElement(world, "parent").text = "world"
        ET.SubElement(world, "child").text = root
        ET.SubElement(world, "pose", relative_to="__model__").text = "0 0 0 0 0 0"  # what jaxsim looks for
    for j in joints:
        kind = j.get("type")
        if kind not in ("revolute", "continuous", "prismatic", "fixed"):
            raise ValueError(f"joint {j.get('name')!r}: type {kind!r} is not supported")
        out = ET.SubElement(model, "joint", name=j.get("name"), type="revolute" if kind == "continuous" else kind)
        ET.SubElement(out, "parent").text = j.find("parent").get("link")
        ET.SubElement(out, "child").text = j.find("child").get("link")
        axis = ET.SubElement(out, "axis")
        if kind == "fixed":  # an axis all the same: jaxsim hashes every joint's axis when it lumps fixed joints
            ET.SubElement(axis, "xyz").text = "0 0 1"
            continue
        ET.SubElement(axis, "xyz").text = " ".join(
            repr(float(v)) for v in _numbers(j.find("axis").get("xyz") if j.find("axis") is not None else None, (1, 0, 0))
        )
        limit = j.find("limit")
        limits = ET.SubElement(axis, "limit")
        lower = limit.get("lower") if limit is not None and kind != "continuous" else None
        upper = limit.get("upper") if limit is not None and kind != "continuous" else None
        ET.SubElement(limits, "lower").text = lower or "-1e16"
        ET.SubElement(limits, "upper").text = upper or "1e16"
    ET.indent(sdf)
    return '<?xml version="1.0"?>\n' + ET.tostring(sdf, encoding="unicode") + "\n"
