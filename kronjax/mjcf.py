"""MJCF in: :func:`load_mjcf` reads a MuJoCo model through MuJoCo's own compiler.

The ``mujoco`` package (``pip install 'kronjax[mujoco]'``) compiles the file (defaults, ``childclass``,
``fromto``, ``inertiafromgeom``, angle units and Euler conventions are all resolved by it), and
kronjax reads the compiled ``MjModel``'s arrays: the body tree, body and inertial frames, masses
and principal inertias, joints with their anchors, axes, ranges and rotor inertias
(``armature``), damping and friction loss, actuator force limits and ``opt.gravity``: fixed-base and floating-base models, with ``hinge``, ``slide``, ``ball`` and
``free`` joints.

Frames follow MuJoCo: kronjax's base frame is MuJoCo's world frame, and the frame of the kronjax
body named after a MuJoCo body is that body's frame, so that poses equal ``data.xpos`` and
``data.xmat``. The joints are MuJoCo's, in the same order, but ``ball`` and ``free`` joints follow
kronjax's (Pinocchio's) conventions, and :func:`to_mujoco` / :func:`from_mujoco` convert states:

* quaternions: MuJoCo's ``qpos`` has ``(w, x, y, z)``, kronjax's ``q`` ``(x, y, z, w)``;
* a free joint's linear velocity: MuJoCo's ``qvel`` has it in the world (parent) frame, kronjax's
  ``v`` in the body frame: ``v_mj = R v``, so the accelerations differ by the transport term,
  ``a_mj = R (a + w x v)``, and the linear forces by the rotation, ``f_mj = R f`` (``R`` the body's
  rotation, ``w`` its angular velocity in the body frame). Angular parts agree.

For models with hinges and slides only, ``qpos``, ``qvel``, ``qacc`` and ``qfrc`` are kronjax's
``q``, ``v``, ``vd`` and ``tau`` as they are.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from . import _lie
from .chain import Inertial, Joint, Model, from_joints
from .configuration import joint_slices
from .constrained import Constraints, Mechanism, holonomic, loop_closure, project

__all__ = ["MJCFError", "load_mjcf", "to_mujoco", "from_mujoco"]


class MJCFError(ValueError):
    """An MJCF that MuJoCo refuses or that kronjax cannot turn into a model; the message names the
    file and the offending element.

    Example:
        >>> import kronjax as kj
        >>> kj.load_mjcf("<mujoco><worldbody><body><joint type='nope'/></body></worldbody></mujoco>")
        Traceback (most recent call last):
            ...
        kronjax.mjcf.MJCFError: MuJoCo cannot compile the MJCF text: ...
    """


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
    dofs = np.flatnonzero(m.dof_frictionloss)
    if dofs.size:
        warnings.warn(
            f"{what}: frictionloss of joints {names(joint, np.unique(m.dof_jntid[dofs]), 'joint')} read as Coulomb "
            "friction -f sign(v) (kronjax.passive); MuJoCo's is a constraint that holds the joint at rest below f",
            stacklevel=3,
        )
    multi = np.isin(m.jnt_type, [int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE)])
    cones = np.flatnonzero(multi & (m.jnt_limited != 0))
    if cones.size:
        warnings.warn(f"{what}: the range (a cone) of ball joints {names(joint, cones, 'joint')} ignored", stacklevel=3)
    driven = [int(m.actuator_trnid[a, 0]) for a in range(m.nu) if int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)]
    driven = sorted({j for j in driven if multi[j]})
    if driven:
        warnings.warn(
            f"{what}: actuators on ball or free joints {names(joint, driven, 'joint')} give no effort limit", stacklevel=3
        )
    free = [j for j in np.flatnonzero(m.jnt_type == int(mujoco.mjtJoint.mjJNT_FREE)) if m.dof_armature[m.jnt_dofadr[j]]]
    if free:
        warnings.warn(
            f"{what}: the armature of free joints {names(joint, free, 'joint')} acts on the body-frame linear velocity in "
            "kronjax (Pinocchio's convention), on the world-frame one in MuJoCo: their forces differ by armature * (w x v)",
            stacklevel=3,
        )
    stiff = np.flatnonzero(m.jnt_stiffness)
    if stiff.size:
        warnings.warn(f"{what}: joint springs (stiffness) of joints {names(joint, stiff, 'joint')} ignored", stacklevel=3)
    for count, kind, prefix, label in (
        ("ntendon", mujoco.mjtObj.mjOBJ_TENDON, "tendon", "tendons"),
        ("nflex", mujoco.mjtObj.mjOBJ_FLEX, "flex", "flexes"),
    ):
        n = getattr(m, count)
        if n:
            warnings.warn(f"{what}: {label} {names(kind, range(n), prefix)} not modelled by kronjax; ignored", stacklevel=3)
    equality = mujoco.mjtObj.mjOBJ_EQUALITY
    modelled = _equality_kinds(mujoco)
    other = [i for i in range(m.neq) if int(m.eq_type[i]) not in modelled]
    if other:
        warnings.warn(
            f"{what}: equality constraints {names(equality, other, 'equality')} (tendon or flex) not modelled by "
            "kronjax; ignored",
            stacklevel=3,
        )
    inactive = [i for i in range(m.neq) if not m.eq_active0[i] and i not in other]
    if inactive:
        warnings.warn(
            f'{what}: equality constraints {names(equality, inactive, "equality")} are inactive (active="false"); '
            "left out of the mechanism",
            stacklevel=3,
        )
    dynamic = np.flatnonzero(m.actuator_dyntype != int(mujoco.mjtDyn.mjDYN_NONE))
    if dynamic.size:
        warnings.warn(
            f"{what}: actuators with activation dynamics {names(mujoco.mjtObj.mjOBJ_ACTUATOR, dynamic, 'actuator')} "
            "not modelled by kronjax; their joints keep no effort limit",
            stacklevel=3,
        )


def _equality_kinds(mujoco) -> dict[int, str]:
    """The MuJoCo equality constraints that kronjax models, by ``eq_type``."""
    return {int(mujoco.mjtEq.mjEQ_CONNECT): "connect", int(mujoco.mjtEq.mjEQ_WELD): "weld", int(mujoco.mjtEq.mjEQ_JOINT): "joint"}


class _JointCoupling(eqx.Module):
    """MuJoCo's ``joint`` equality: ``q1 - ref1 = c0 + c1 d + c2 d^2 + c3 d^3 + c4 d^4`` with
    ``d = q2 - ref2`` (``c1..c4`` absent without a second joint)."""

    first: int = eqx.field(static=True)
    second: int | None = eqx.field(static=True)
    refs: Float[Array, 2]
    coefficients: Float[Array, 5]

    def __call__(self, q: Float[Array, " nq"]) -> Float[Array, 1]:
        lhs = q[self.first] - self.refs[0] - self.coefficients[0]
        if self.second is None:
            return lhs[None]
        d = q[self.second] - self.refs[1]
        polynomial = self.coefficients[4]
        for c in self.coefficients[3:0:-1]:  # Horner: c1 d + c2 d^2 + c3 d^3 + c4 d^4
            polynomial = c + d * polynomial
        return (lhs - d * polynomial)[None]


def _equalities(mujoco, m, model: Model, frame: dict[int, int]) -> list:
    """The active ``connect``, ``weld`` and ``joint`` equality constraints of ``m`` as kronjax
    constraints on ``model`` (``frame``: MuJoCo body id -> the kronjax body carrying its frame).

    A ``connect`` is a spherical :func:`~kronjax.constrained.loop_closure`, a ``weld`` a weld closure
    (a spherical one where ``torquescale`` is 0: MuJoCo then leaves the orientation free), both with
    MuJoCo's points (``eq_data``, or the sites' positions); a ``joint`` the polynomial coupling of
    :class:`_JointCoupling`. ``torquescale`` otherwise only weighs MuJoCo's soft constraint: the
    ideal constraint has the same solutions whatever its value."""
    kinds = _equality_kinds(mujoco)
    site = int(mujoco.mjtObj.mjOBJ_SITE)
    parts = []
    for i in range(m.neq):
        kind = kinds.get(int(m.eq_type[i]))
        if kind is None or not m.eq_active0[i]:
            continue
        name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_EQUALITY, i, "equality")
        ids, data = (int(m.eq_obj1id[i]), int(m.eq_obj2id[i])), np.asarray(m.eq_data[i], float)
        if kind == "joint":
            adr = [None if j < 0 else int(m.jnt_qposadr[j]) for j in ids]
            coupling = _JointCoupling(
                adr[0], adr[1], jnp.asarray([m.qpos0[a] if a is not None else 0.0 for a in adr]), jnp.asarray(data[:5])
            )
            part = holonomic(coupling, model, description=f"MJCF joint equality {name}")
        else:
            weld = kind == "weld" and data[10] != 0
            if int(m.eq_objtype[i]) == site:  # the sites' frames: W = S_a S_b^T
                bodies = [int(m.site_bodyid[k]) for k in ids]
                points = [np.asarray(m.site_pos[k], float) for k in ids]
                welded = _rotation(mujoco, m.site_quat[ids[0]]) @ _rotation(mujoco, m.site_quat[ids[1]]).T if weld else None
            else:  # connect: eq_data = (point on body 1, point on body 2); weld: (point on 2, on 1, relquat)
                bodies = list(ids)
                points = [data[0:3], data[3:6]] if kind == "connect" else [data[3:6], data[0:3]]
                welded = _rotation(mujoco, data[6:10]) if weld else None
            part = loop_closure(
                model,
                frame[bodies[0]],
                points[0],
                frame[bodies[1]],
                points[1],
                "weld" if weld else "spherical",
                rotation=welded,
            )
            part = dataclasses.replace(part, description=f"MJCF {kind} {name} ({part.description})")
        parts.append(part)
    return parts


def load_mjcf(source, *, gravity=None, sites: bool = False) -> Model | Mechanism:
    """A kronjax :class:`~kronjax.chain.Model` from an MJCF file, MJCF text or a ``mujoco.MjModel``,
    or a :class:`~kronjax.constrained.Mechanism` when the file has equality constraints.

    Args:
        source: a path to an MJCF (``.xml``) file, the MJCF text itself, or a compiled
            ``mujoco.MjModel``.
        gravity: gravitational acceleration in the world frame (default: the model's
            ``opt.gravity``).
        sites: add each MuJoCo site as a massless body on a fixed joint (named after the site,
            ``<site>.site`` where a body has its name; joint ``<name>_site``), after the bodies: a
            frame usable in every kinematics function, whose pose is MuJoCo's ``site_xpos`` /
            ``site_xmat``. Off by default: each site is then a body of every recursion, which
            costs run time and compile time in the dynamics (the 4 sites of
            ``tests/data/mjcf_tree.xml`` double the compile time of its dynamics).

    Returns:
        A :class:`~kronjax.chain.Tree` model with one body per MuJoCo body but the world, in
        MuJoCo's order and with MuJoCo's names (``body<id>`` / ``joint<id>`` where unnamed):
        ``hinge`` joints become ``"R"``, ``slide`` ``"P"``, ``ball`` ``"spherical"`` and ``free``
        ``"free"``; a body without a joint is attached by a fixed joint named ``<body>_fixed``, and
        a body with several joints becomes a chain of massless bodies ``<body>.<joint>`` at its
        place, the last (named after the MuJoCo body) carrying its inertial (a ball whose anchor
        is off the body's origin is followed by a fixed joint ``<body>_fixed`` back to it). ``q``
        is MuJoCo's ``qpos`` with kronjax's quaternions (module doc; a joint's ``ref`` included:
        the body frames are MuJoCo's ``xpos``/``xmat`` at the same state). Ranges of limited
        hinges and slides are position limits; an actuator alone on a hinge or slide gives an
        effort limit (see :func:`_effort_limits`); ``armature``, ``damping`` and
        ``frictionloss`` are the model's ``armature``, ``damping`` and ``friction``
        (:class:`~kronjax.chain.Model`; frictionloss with a warning: kronjax's Coulomb friction is
        a force, MuJoCo's a constraint). Springs, tendons, flexes, actuator dynamics, the cones
        of limited balls and equality constraints on tendons and flexes are not in a kronjax
        model: each kind present is named in one ``UserWarning``.

        With active ``connect``, ``weld`` or ``joint`` equality constraints, a
        :class:`~kronjax.constrained.Mechanism` of that tree: its constraints are, in the file's
        order, spherical and weld :func:`~kronjax.constrained.loop_closure` s at MuJoCo's anchors
        (body or site semantics) and the polynomial joint couplings (each described as ``MJCF
        <kind> <name>``), and its ``q0`` is ``qpos0`` (projected onto the constraints where it
        does not satisfy them). MuJoCo's equality constraints are soft (``solref``, ``solimp``),
        kronjax's ideal: the two agree in the limit of stiff constraints. Inactive ones
        (``active="false"``) are left out, with a warning.

    Raises:
        ImportError: ``mujoco`` is not installed.
        MJCFError: (a ``ValueError``) MuJoCo's own error when it cannot compile the file (the file
            named), or a source that is neither a file nor XML text. What CAD exports get wrong is
            MuJoCo's compiler's to decide: it refuses a moving body without mass and an inertia
            that is indefinite or violates the triangle inequality, and ``<compiler boundmass
            boundinertia balanceinertia>`` repair them (kronjax reads what it compiled).

    Example:
        A pendulum from MJCF text (needs ``mujoco``): 2 kg at 0.5 m below a hinge about ``y``,
        ``I_yy = 0.1``, so ``M = 2 * 0.5^2 + 0.1 = 0.6``; MuJoCo's range in degrees becomes limits
        in radians.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.load_mjcf('''
        ... <mujoco>
        ...   <worldbody>
        ...     <body name="arm">
        ...       <joint name="hinge" type="hinge" axis="0 1 0" range="-90 90"/>
        ...       <inertial pos="0 0 -0.5" mass="2" diaginertia="0.1 0.1 0.01"/>
        ...     </body>
        ...   </worldbody>
        ... </mujoco>''')
        >>> model.body_names, model.joint_names
        (('arm',), ('hinge',))
        >>> print(model.gravity)  # MuJoCo's default
        [ 0.    0.   -9.81]
        >>> bool(np.allclose(model.limits.upper, [np.pi / 2]))
        True
        >>> print(np.round(float(kj.mass_matrix(model, jnp.zeros(1))[0, 0]), 6))
        0.6
    """
    try:
        import mujoco
    except ImportError as err:
        raise ImportError("kronjax.load_mjcf compiles MJCF with MuJoCo: pip install 'kronjax[mujoco]' (or mujoco)") from err
    m, what = _compile(source, mujoco)
    body_obj, joint_obj = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
    if m.nbody < 2:
        raise MJCFError(f"{what} has no body but the world")
    _warn_unmodelled(mujoco, m, what)
    efforts = _effort_limits(mujoco, m)
    kinds = {
        int(mujoco.mjtJoint.mjJNT_FREE): "free",
        int(mujoco.mjtJoint.mjJNT_BALL): "spherical",
        int(mujoco.mjtJoint.mjJNT_SLIDE): "P",
        int(mujoco.mjtJoint.mjJNT_HINGE): "R",
    }

    joints, inertials, posts = [], [], []
    last = {0: -1}  # MuJoCo body id -> the kronjax body that carries its frame
    for b in range(1, m.nbody):
        body = _name(mujoco, m, body_obj, b, "body")
        parent = last[int(m.body_parentid[b])]
        # the first joint is placed in the parent's frame by the body's pos/quat, the next ones in
        # the frame the previous joint moved: MuJoCo applies a body's joints one after the other
        rotation, translation = _rotation(mujoco, m.body_quat[b]), np.asarray(m.body_pos[b], float)
        ids = range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])
        kind_of = [kinds[int(m.jnt_type[j])] for j in ids]
        # a ball turns about its anchor, but a multi-DoF joint's body frame must be its joint frame:
        # the offset back to the body's origin goes to the next joint's placement, or to a fixed joint
        closing = bool(ids) and kind_of[-1] == "spherical" and bool(np.any(m.jnt_pos[ids[-1]]))
        for k, j in enumerate(ids):
            joint, kind = _name(mujoco, m, joint_obj, j, "joint"), kind_of[k]
            body_name = body if k == len(ids) - 1 and not closing else f"{body}.{joint}"
            made, anchor = _joint(mujoco, m, j, kind, parent, joint, body_name, rotation, translation, efforts)
            joints.append(made)
            single = kind in ("R", "P")
            posts.append(-anchor if single else np.zeros(3))
            parent = len(joints) - 1
            rotation, translation = np.eye(3), (np.zeros(3) if single else -anchor)
            if k < len(ids) - 1 or closing:
                inertials.append(Inertial(mass=0.0))
        if not ids or closing:
            joints.append(
                Joint(kind="F", parent=parent, rotation=rotation, translation=translation, name=f"{body}_fixed", body_name=body)
            )
            posts.append(np.zeros(3))
        inertia_axes = _rotation(mujoco, m.body_iquat[b])
        inertials.append(
            Inertial(
                mass=float(m.body_mass[b]),
                com=np.asarray(m.body_ipos[b], float),
                inertia=inertia_axes @ np.diag(m.body_inertia[b]) @ inertia_axes.T,
            )
        )
        last[b] = len(joints) - 1
    if sites:
        taken = {j.body_name for j in joints}
        for k in range(m.nsite):
            name = _name(mujoco, m, mujoco.mjtObj.mjOBJ_SITE, k, "site")
            name = f"{name}.site" if name in taken else name
            joints.append(
                Joint(
                    kind="F",
                    parent=last[int(m.site_bodyid[k])],
                    rotation=_rotation(mujoco, m.site_quat[k]),
                    translation=np.asarray(m.site_pos[k], float),
                    name=f"{name}_site",
                    body_name=name,
                )
            )
            inertials.append(Inertial(mass=0.0))
            posts.append(np.zeros(3))
    try:
        model = from_joints(joints, inertials, gravity=m.opt.gravity if gravity is None else gravity)
    except ValueError as err:  # a NaN or inf that MuJoCo compiled (it accepts them in positions and axes)
        raise MJCFError(f"{what}: {err}") from None
    post = jnp.asarray(np.stack(posts), model.kinematics.post_translation.dtype)
    model = eqx.tree_at(lambda model: model.kinematics.post_translation, model, post)
    parts = _equalities(mujoco, m, model, last)
    return model if not parts else _mechanism(model, parts, m.qpos0, what)


def _joint(
    mujoco, m, j: int, kind: str, parent: int, name: str, body_name: str, rotation, translation, efforts: dict[int, float]
) -> tuple[Joint, np.ndarray]:
    """``(joint, anchor)``: the kronjax joint of MuJoCo joint ``j`` (``kind`` already kronjax's) at
    ``rotation``, ``translation`` in kronjax body ``parent``'s frame, with its range, actuator effort
    limit, armature, damping and friction loss; the anchor it turns about (zero for a free joint)."""
    axis, anchor = np.asarray(m.jnt_axis[j], float), np.asarray(m.jnt_pos[j], float)
    ref = float(m.qpos0[m.jnt_qposadr[j]]) if kind in ("R", "P") else 0.0
    # MuJoCo moves the frame by (qpos - ref): a rotation about the anchor for a hinge or a ball, a
    # translation along the axis for a slide; the kronjax joint frame sits at the anchor (turned or
    # shifted back by ref) and the body frame is offset from it by -anchor. A free joint's body pose
    # is qpos itself (its pos/quat only set qpos0; MuJoCo allows it on top-level bodies only and
    # ignores its anchor).
    if kind == "free":
        joint_rotation, joint_translation, anchor = np.eye(3), np.zeros(3), np.zeros(3)
    elif kind == "P":
        joint_rotation, joint_translation = rotation, translation + rotation @ (anchor - ref * axis)
    else:
        joint_rotation = rotation @ _axis_rotation(mujoco, axis, -ref) if kind == "R" else rotation
        joint_translation = translation + rotation @ anchor
    single = kind in ("R", "P")
    lower, upper = m.jnt_range[j] if single and m.jnt_limited[j] else (-np.inf, np.inf)
    joint = Joint(
        kind=kind,
        parent=parent,
        axis=axis if single else (0.0, 0.0, 1.0),
        rotation=joint_rotation,
        translation=joint_translation,
        name=name,
        body_name=body_name,
        lower=lower,
        upper=upper,
        effort=efforts.get(j, np.inf) if single else np.inf,
        # one value for all of a joint's dofs, as MJCF's attributes are per joint
        armature=float(m.dof_armature[m.jnt_dofadr[j]]),
        damping=float(m.dof_damping[m.jnt_dofadr[j]]),
        friction=float(m.dof_frictionloss[m.jnt_dofadr[j]]),
    )
    return joint, anchor


def _mechanism(model: Model, parts: list, qpos0, what: str):
    """A :class:`~kronjax.constrained.Mechanism` assembled at MuJoCo's ``qpos0`` (where the compiler
    put the anchors of ``connect`` and ``weld`` without ``relpose``), projected onto the constraints
    where ``qpos0`` does not satisfy them (a ``relpose`` or a ``polycoef`` offset of the file's)."""
    constraints = Constraints(tuple(parts))
    q0 = from_mujoco(model, jnp.asarray(qpos0, model.gravity.dtype))[0]
    tol = float(np.sqrt(np.finfo(q0.dtype).eps))
    if float(jnp.max(jnp.abs(constraints.residual(q0)))) > tol:
        q0 = project(model, constraints, q0)[0]
        residual = float(jnp.max(jnp.abs(constraints.residual(q0))))
        if not residual <= tol:
            warnings.warn(
                f"{what}: qpos0 does not satisfy the equality constraints, and projecting it onto them left a "
                f"residual of {residual:.1e}: the mechanism's q0 is not assembled",
                stacklevel=3,
            )
    return Mechanism(model, constraints, q0)


def to_mujoco(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"] | None = None,
    a: Float[ArrayLike, " nv"] | None = None,
    tau: Float[ArrayLike, " nv"] | None = None,
) -> tuple[Array, Array | None, Array | None, Array | None]:
    """MuJoCo's ``(qpos, qvel, qacc, qfrc)`` of a kronjax state ``(q, v, a, tau)`` (module doc):
    each output is ``None`` where its input is. One state (``jax.vmap`` for batches); ``a`` needs
    ``v``. ``qfrc`` is a generalised force in MuJoCo's coordinates (``qfrc_applied``, ``mj_rne``'s
    result, ``qfrc_bias``), ``tau`` in kronjax's: both do the same work on the same motion.

    Args:
        model: the :class:`~kronjax.chain.Model` (built by :func:`load_mjcf`, or any with the same joints).
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` velocity, or ``None``.
        a: ``(nv,)`` acceleration, or ``None`` (needs ``v``).
        tau: ``(nv,)`` generalised force, or ``None``.

    Returns:
        ``(qpos, qvel, qacc, qfrc)``, each ``None`` where its input is.

    Example:
        A free body turned by ``pi/2`` about ``z`` and moving along its own ``x`` axis: MuJoCo's
        quaternion is ``(w, x, y, z)`` and its linear velocity is in the world frame, along ``y``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free")])
        >>> s = np.sqrt(0.5)
        >>> q = jnp.array([1.0, 2.0, 3.0, 0.0, 0.0, s, s])  # kronjax: (x, y, z, qx, qy, qz, qw)
        >>> v = jnp.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # linear velocity in the body frame
        >>> qpos, qvel, qacc, qfrc = kj.mjcf.to_mujoco(model, q, v)
        >>> bool(np.allclose(qpos, [1.0, 2.0, 3.0, s, 0.0, 0.0, s])), bool(np.allclose(qvel[:3], [0.0, 1.0, 0.0], atol=1e-6))
        (True, True)
        >>> qacc is None and qfrc is None
        True
    """
    return _convert(model, q, v, a, tau, to=True)


def from_mujoco(
    model: Model,
    qpos: Float[ArrayLike, " nq"],
    qvel: Float[ArrayLike, " nv"] | None = None,
    qacc: Float[ArrayLike, " nv"] | None = None,
    qfrc: Float[ArrayLike, " nv"] | None = None,
) -> tuple[Array, Array | None, Array | None, Array | None]:
    """kronjax's ``(q, v, a, tau)`` of a MuJoCo state; the inverse of :func:`to_mujoco`.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        qpos: ``(nq,)`` MuJoCo's configuration.
        qvel: ``(nv,)`` or ``None``.
        qacc: ``(nv,)`` or ``None`` (needs ``qvel``).
        qfrc: ``(nv,)`` or ``None``.

    Returns:
        ``(q, v, a, tau)``, each ``None`` where its input is.

    Example:
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free")])
        >>> qpos = jnp.array([1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0])  # MuJoCo: (x, y, z, qw, qx, qy, qz)
        >>> q, v, a, tau = kj.mjcf.from_mujoco(model, qpos)
        >>> q.tolist()
        [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
        >>> q2, v2, _, _ = kj.mjcf.from_mujoco(model, *kj.mjcf.to_mujoco(model, q, jnp.arange(6.0))[:2])
        >>> bool(np.allclose(q2, q)), bool(np.allclose(v2, jnp.arange(6.0)))
        (True, True)
    """
    return _convert(model, qpos, qvel, qacc, qfrc, to=False)


def _convert(model: Model, q, v, a, f, *, to: bool) -> tuple:
    names = ("q", "v", "a", "tau") if to else ("qpos", "qvel", "qacc", "qfrc")
    arrays = [None if x is None else jnp.asarray(x) for x in (q, v, a, f)]
    for name, x, size in zip(names, arrays, (model.nq, model.nv, model.nv, model.nv)):
        if x is not None and x.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {x.shape}")
    if a is not None and v is None:
        raise ValueError(f"{names[2]} needs {names[1]}: a free joint's acceleration depends on its velocity")
    parts = [[] for _ in names]
    for kind, qs, vs in joint_slices(model):
        if kind == "planar":
            raise ValueError("MuJoCo has no planar joint: this model has no MuJoCo state")
        qj = arrays[0][qs]
        rates = [None if x is None else x[vs] for x in arrays[1:]]
        if kind in ("free", "spherical"):  # quaternion w last in kronjax, first in MuJoCo
            quat = qj[-4:] if to else jnp.roll(qj[-4:], -1)  # kronjax's order
            qj = qj.at[-4:].set(jnp.roll(quat, 1) if to else quat)
        if kind == "free":
            rates = _free_rates(_lie.quat_to_rotation(quat), *rates, to=to)
        for part, x in zip(parts, (qj, *rates)):
            if x is not None:
                part.append(x)
    return tuple(
        None if x is None else (jnp.concatenate(part) if part else jnp.zeros(0, x.dtype)) for x, part in zip(arrays, parts)
    )


def _free_rates(rotation, v, a, f, *, to: bool) -> list:
    """A free joint's velocity, acceleration and force (``(6,)`` each, linear part first, or
    ``None``) from kronjax's to MuJoCo's (``to``) or back: ``v_mj = R v``, ``a_mj = R (a + w x
    v)``, ``f_mj = R f`` on the linear parts."""
    turn = rotation if to else rotation.T
    v_body = None if v is None else (v[:3] if to else rotation.T @ v[:3])
    out = []
    for name, x in (("v", v), ("a", a), ("f", f)):
        if x is None:
            out.append(None)
            continue
        linear = turn @ x[:3]
        if name == "a":
            transport = jnp.cross(v[3:], v_body)
            linear = linear + rotation @ transport if to else linear - transport
        out.append(jnp.concatenate([linear, x[3:]]))
    return out
