"""MJCF in: :func:`load_mjcf` reads a MuJoCo model through MuJoCo's own compiler.

The ``mujoco`` package (``pip install mujoco``) compiles the file (defaults, ``childclass``,
``fromto``, ``inertiafromgeom``, angle units and Euler conventions are all resolved by it), and
kronjax reads the compiled ``MjModel``'s arrays: the body tree, body and inertial frames, masses
and principal inertias, joints with their anchors, axes and ranges, actuator force limits and
``opt.gravity``. Only fixed-base models are read so far: ``free`` and ``ball`` joints are an error.

Frames follow MuJoCo: kronjax's base frame is MuJoCo's world frame, and the frame of the kronjax
body named after a MuJoCo body is that body's frame, so that poses equal ``data.xpos`` and
``data.xmat``. The joint coordinates are MuJoCo's ``qpos`` (and ``qvel``), in the same order.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .chain import Inertial, Joint, Model, from_joints

__all__ = ["MJCFError", "load_mjcf"]


class MJCFError(ValueError):
    """An MJCF that MuJoCo refuses or that kronjax cannot turn into a model; the message names the
    file and the offending element."""


def _compile(source, mujoco):
    """``(MjModel, what)``: the compiled model and how to name the source in messages."""
    if isinstance(source, mujoco.MjModel):
        return source, "the MjModel"
    if isinstance(source, (bytes, bytearray)):
        source = source.decode()
    if isinstance(source, str) and source.lstrip().startswith("<"):
        what, compile_ = "the MJCF text", lambda: mujoco.MjModel.from_xml_string(source)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise MJCFError(f"{str(source)[:80]!r} is neither an MJCF file nor MJCF (XML) text")
        what, compile_ = f"MJCF file {str(path)!r}", lambda: mujoco.MjModel.from_xml_path(str(path))
    else:
        raise TypeError(f"source must be a path, MJCF text or a mujoco.MjModel, got {type(source).__name__}")
    try:
        return compile_(), what
    except ValueError as err:  # how the mujoco bindings report every parse and compile error
        raise MJCFError(f"MuJoCo cannot compile {what}: {err}") from None


def _rotation(mujoco, quat: np.ndarray) -> np.ndarray:
    """The rotation matrix of a MuJoCo (w-first) quaternion."""
    r = np.empty(9)
    mujoco.mju_quat2Mat(r, np.asarray(quat, float))
    return r.reshape(3, 3)


def _axis_rotation(mujoco, axis: np.ndarray, angle: float) -> np.ndarray:
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, float), float(angle))
    return _rotation(mujoco, quat)


# mujoco's enums are compared as plain ints: `numpy.int32(0) in (mjtJoint.mjJNT_FREE,)` is False
def _name(mujoco, m, kind, i: int, prefix: str) -> str:
    return mujoco.mj_id2name(m, kind, i) or f"{prefix}{i}"


def _effort_limits(mujoco, m) -> dict[int, float]:
    """Effort limit ``|tau| <= effort`` of each MuJoCo joint driven by exactly one actuator with a
    joint transmission and no dynamics: ``|gear|`` times the actuator's force range, or times
    ``|gain| * ctrlrange`` for a plain motor (fixed gain, no bias); asymmetric ranges give their
    larger magnitude. Other joints stay unlimited."""
    drivers: dict[int, list[int]] = {}
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
            drivers.setdefault(int(m.actuator_trnid[a, 0]), []).append(a)
    limits = {}
    for joint, (a, *others) in drivers.items():
        if others or int(m.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
            continue
        gear = abs(float(m.actuator_gear[a, 0]))
        if m.actuator_forcelimited[a]:
            limits[joint] = gear * float(np.max(np.abs(m.actuator_forcerange[a])))
        elif (
            m.actuator_ctrllimited[a]
            and int(m.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_FIXED)
            and int(m.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_NONE)
        ):
            limits[joint] = gear * abs(float(m.actuator_gainprm[a, 0])) * float(np.max(np.abs(m.actuator_ctrlrange[a])))
    return limits


def _warn_unmodelled(mujoco, m, what: str) -> None:
    """One ``UserWarning`` per kind of MuJoCo feature that the kronjax model leaves out."""

    def names(kind, ids, prefix):
        return ", ".join(_name(mujoco, m, kind, int(i), prefix) for i in ids)

    joint = mujoco.mjtObj.mjOBJ_JOINT
    for field, label in (
        ("dof_armature", "armature"),
        ("dof_damping", "damping"),
        ("dof_frictionloss", "frictionloss"),
    ):
        dofs = np.flatnonzero(getattr(m, field))
        if dofs.size:
            warnings.warn(
                f"{what}: {label} of joints {names(joint, m.dof_jntid[dofs], 'joint')} ignored (kronjax has no "
                "joint-space parameters yet)",
                stacklevel=3,
            )
    stiff = np.flatnonzero(m.jnt_stiffness)
    if stiff.size:
        warnings.warn(f"{what}: joint springs (stiffness) of joints {names(joint, stiff, 'joint')} ignored", stacklevel=3)
    for count, kind, prefix, label in (
        ("ntendon", mujoco.mjtObj.mjOBJ_TENDON, "tendon", "tendons"),
        ("neq", mujoco.mjtObj.mjOBJ_EQUALITY, "equality", "equality constraints"),
        ("nflex", mujoco.mjtObj.mjOBJ_FLEX, "flex", "flexes"),
    ):
        n = getattr(m, count)
        if n:
            warnings.warn(f"{what}: {label} {names(kind, range(n), prefix)} not modelled by kronjax; ignored", stacklevel=3)
    dynamic = np.flatnonzero(m.actuator_dyntype != int(mujoco.mjtDyn.mjDYN_NONE))
    if dynamic.size:
        warnings.warn(
            f"{what}: actuators with activation dynamics {names(mujoco.mjtObj.mjOBJ_ACTUATOR, dynamic, 'actuator')} "
            "not modelled by kronjax; their joints keep no effort limit",
            stacklevel=3,
        )


def load_mjcf(source, *, gravity=None) -> Model:
    """A kronjax :class:`~kronjax.chain.Model` from an MJCF file, MJCF text or a ``mujoco.MjModel``.

    Args:
        source: a path to an MJCF (``.xml``) file, the MJCF text itself, or a compiled
            ``mujoco.MjModel``.
        gravity: gravitational acceleration in the world frame (default: the model's
            ``opt.gravity``).

    Returns:
        A :class:`~kronjax.chain.Tree` model with one body per MuJoCo body but the world, in
        MuJoCo's order and with MuJoCo's names (``body<id>`` / ``joint<id>`` where unnamed):
        ``hinge`` joints become ``"R"``, ``slide`` ``"P"``, a body without a joint is attached by
        a fixed joint named ``<body>_fixed``, and a body with several joints becomes a chain of
        massless bodies ``<body>.<joint>`` at its place, the last (named after the MuJoCo body)
        carrying its inertial. ``q`` is MuJoCo's ``qpos`` (a joint's ``ref`` included: the body
        frames are MuJoCo's ``xpos``/``xmat`` at the same ``qpos``). Ranges of limited joints are
        position limits; an actuator alone on its joint gives an effort limit (see
        :func:`_effort_limits`). Armature, damping, friction loss, springs, tendons, equality
        constraints, flexes and actuator dynamics are not in a kronjax model: each kind present
        is named in one ``UserWarning``.

    Raises:
        ImportError: ``mujoco`` is not installed.
        MJCFError: (a ``ValueError``) MuJoCo's own error when it cannot compile the file (the file
            named), a source that is neither a file nor XML text, or ``free`` / ``ball`` joints.
    """
    try:
        import mujoco
    except ImportError as err:
        raise ImportError("kronjax.load_mjcf compiles MJCF with MuJoCo: pip install mujoco") from err
    m, what = _compile(source, mujoco)
    body_obj, joint_obj = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)):
            kind = "free" if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE) else "ball"
            raise MJCFError(
                f"{what}: joint {_name(mujoco, m, joint_obj, j, 'joint')!r} is a {kind} joint: not read from MJCF "
                "yet (MuJoCo's qpos puts the quaternion's w first and a free joint's linear velocity in the world "
                "frame, kronjax follows Pinocchio: issue 17); build the model with kronjax.Joint(kind='free' or "
                "'spherical') or load the robot's URDF with floating_base=True"
            )
    if m.nbody < 2:
        raise MJCFError(f"{what} has no body but the world")
    _warn_unmodelled(mujoco, m, what)
    efforts = _effort_limits(mujoco, m)

    joints, inertials, anchors = [], [], []
    last = {0: -1}  # MuJoCo body id -> the kronjax body that carries its frame
    for b in range(1, m.nbody):
        body = _name(mujoco, m, body_obj, b, "body")
        parent = last[int(m.body_parentid[b])]
        # the first joint is placed in the parent's frame by the body's pos/quat, the next ones in
        # the frame the previous joint moved: MuJoCo applies a body's joints one after the other
        rotation, translation = _rotation(mujoco, m.body_quat[b]), np.asarray(m.body_pos[b], float)
        ids = range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])
        for k, j in enumerate(ids):
            joint = _name(mujoco, m, joint_obj, j, "joint")
            axis, anchor, ref = m.jnt_axis[j], np.asarray(m.jnt_pos[j], float), float(m.qpos0[m.jnt_qposadr[j]])
            hinge = int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)
            # MuJoCo moves the frame by (qpos - ref): a rotation about the anchor for a hinge, a
            # translation along the axis for a slide; the kronjax joint frame sits at the anchor
            # (turned or shifted back by ref) and the body frame is offset from it by -anchor
            if hinge:
                joint_rotation = rotation @ _axis_rotation(mujoco, axis, -ref)
                joint_translation = translation + rotation @ anchor
            else:
                joint_rotation = rotation
                joint_translation = translation + rotation @ (anchor - ref * np.asarray(axis, float))
            lower, upper = m.jnt_range[j] if m.jnt_limited[j] else (-np.inf, np.inf)
            joints.append(
                Joint(
                    kind="R" if hinge else "P",
                    parent=parent,
                    axis=axis,
                    rotation=joint_rotation,
                    translation=joint_translation,
                    name=joint,
                    body_name=body if k == len(ids) - 1 else f"{body}.{joint}",
                    lower=lower,
                    upper=upper,
                    effort=efforts.get(j, np.inf),
                )
            )
            anchors.append(-anchor)
            parent = len(joints) - 1
            rotation, translation = np.eye(3), np.zeros(3)
            if k < len(ids) - 1:
                inertials.append(Inertial(mass=0.0))
        if not ids:
            joints.append(
                Joint(kind="F", parent=parent, rotation=rotation, translation=translation, name=f"{body}_fixed", body_name=body)
            )
            anchors.append(np.zeros(3))
        inertia_axes = _rotation(mujoco, m.body_iquat[b])
        inertials.append(
            Inertial(
                mass=float(m.body_mass[b]),
                com=np.asarray(m.body_ipos[b], float),
                inertia=inertia_axes @ np.diag(m.body_inertia[b]) @ inertia_axes.T,
            )
        )
        last[b] = len(joints) - 1
    try:
        model = from_joints(joints, inertials, gravity=m.opt.gravity if gravity is None else gravity)
    except ValueError as err:  # a NaN or inf that MuJoCo compiled (it accepts them in positions and axes)
        raise MJCFError(f"{what}: {err}") from None
    post = jnp.asarray(np.stack(anchors), model.kinematics.post_translation.dtype)
    return eqx.tree_at(lambda model: model.kinematics.post_translation, model, post)
