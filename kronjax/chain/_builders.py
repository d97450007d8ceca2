"""Builders of models: Denavit-Hartenberg tables (:func:`from_dh`), joints (:class:`Joint`,
:func:`from_joints`) and pure JAX functions of ``q`` (:func:`from_function`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .._rotations import rot_x, rot_z
from ._arrays import float_array, is_concrete, stack_arrays
from ._limits import JointLimits
from ._model import JOINT_SPACE, Model, assemble_model
from ._tree import JOINT_KINDS, JOINT_NV, MULTI_DOF, PosesFunction, Tree, split_poses


def _dh_row(i: int, row) -> tuple[str, ArrayLike, ArrayLike, ArrayLike, ArrayLike]:
    if isinstance(row, dict):
        missing = {"kind", "d", "theta", "a", "alpha"} - set(row)
        if missing:
            raise ValueError(f"D-H row {i}: missing keys {sorted(missing)}")
        row = (row["kind"], row["d"], row["theta"], row["a"], row["alpha"])
    try:
        row = tuple(row)
    except TypeError:
        raise TypeError(f"D-H row {i} must be (kind, d, theta, a, alpha), got {row!r}") from None
    if len(row) != 5:
        raise ValueError(f"D-H row {i} must have 5 entries (kind, d, theta, a, alpha), got {len(row)}: {row!r}")
    kind = row[0]
    if not isinstance(kind, str) or kind.upper() not in JOINT_KINDS:
        raise ValueError(
            f"D-H row {i}: unknown joint type {kind!r}; expected 'R' (revolute: q adds to theta), "
            "'P' (prismatic: q adds to d) or 'F' (fixed)"
        )
    values = [float_array(v, f"D-H row {i} {name}", ()) for v, name in zip(row[1:], ("d", "theta", "a", "alpha"))]
    return (kind.upper(), *values)


def from_dh(
    rows: Sequence,
    convention: str = "standard",
    inertials=None,
    *,
    gravity=None,
    body_names: Sequence[str] | None = None,
    joint_names: Sequence[str] | None = None,
    limits: JointLimits | dict | None = None,
    armature=None,
    damping=None,
    friction=None,
) -> Model:
    """A serial chain from a Denavit-Hartenberg table.

    Args:
        rows: one ``(kind, d, theta, a, alpha)`` per body (or a dict with these keys). ``kind`` is
            ``"R"`` (the joint variable adds to ``theta``), ``"P"`` (it adds to ``d``) or ``"F"``
            (fixed). Angles in radians.
        convention: ``"standard"``: ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` (Tuan, Table 1);
            ``"modified"`` (Craig): ``A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``, where
            row ``i`` holds ``a_{i-1}, alpha_{i-1}`` (as in Robotics Toolbox).
        inertials: per body an :class:`Inertial` (or dict), an :class:`Inertials`, or ``None``.
        gravity: gravitational acceleration in the base frame (default ``[0, 0, -9.81]``).
        body_names: the bodies' names; ``None``: ``link1``, ``link2``, ...
        joint_names: the joints' names; ``None``: ``joint1``, ``joint2``, ...
        limits: a :class:`JointLimits`, or a dict with any of ``lower``, ``upper``, ``velocity``,
            ``effort`` (scalars or ``(n,)``); unlimited by default.
        armature, damping, friction: rotor inertia, viscous damping and Coulomb friction per joint
            coordinate (a scalar or ``(n,)``; :class:`Model`); zero by default.

    Body ``i`` is the D-H frame ``i + 1`` of the table (0-based index, the paper's body ``i + 1``).
    The values may be JAX tracers, so ``jax.grad`` reaches the D-H parameters (calibration).

    Returns:
        The :class:`Model` (a :class:`Tree` of 1-DoF joints).

    Example:
        A planar arm of two 1 m links (``a = 1``): at ``q = 0`` its frames lie at ``x = 1`` and
        ``x = 2``; the D-H frame of body ``i`` is at the far end of link ``i``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> arm = kj.from_dh([("R", 0.0, 0.0, 1.0, 0.0), ("R", 0.0, 0.0, 1.0, 0.0)], limits={"upper": 2.5})
        >>> np.round(kj.forward_kinematics(arm, jnp.zeros(2)).origins, 4).tolist()
        [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
        >>> arm.limits.upper.tolist(), arm.limits.lower.tolist()
        ([2.5, 2.5], [-inf, -inf])
    """
    if convention not in ("standard", "modified"):
        raise ValueError(f"unknown D-H convention {convention!r}; expected 'standard' or 'modified'")
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence) or len(rows) == 0:
        raise ValueError("a D-H table must be a non-empty sequence of rows (kind, d, theta, a, alpha)")
    parsed = [_dh_row(i, row) for i, row in enumerate(rows)]
    dtype = jnp.result_type(*[v for row in parsed for v in row[1:]])
    pre_r, pre_p, post_r, post_p = [], [], [], []
    z = jnp.zeros((), dtype)
    for _kind, d, theta, a, alpha in parsed:
        if convention == "standard":
            pre_r.append(rot_z(theta))
            pre_p.append(jnp.stack([z, z, d]))
            post_r.append(rot_x(alpha))
            post_p.append(jnp.stack([a, z, z]))
        else:
            rx = rot_x(alpha)
            pre_r.append(rx @ rot_z(theta))
            pre_p.append(jnp.stack([a, z, z]) + rx @ jnp.stack([z, z, d]))
            post_r.append(jnp.eye(3, dtype=dtype))
            post_p.append(jnp.zeros(3, dtype))
    nb = len(parsed)
    tree = Tree(
        parents=tuple(range(-1, nb - 1)),
        kinds=tuple(row[0] for row in parsed),
        axes=jnp.tile(jnp.array([0.0, 0.0, 1.0], dtype), (nb, 1)),
        pre_rotation=stack_arrays(pre_r).astype(dtype),
        pre_translation=stack_arrays(pre_p).astype(dtype),
        post_rotation=stack_arrays(post_r).astype(dtype),
        post_translation=stack_arrays(post_p).astype(dtype),
    )
    return assemble_model(
        tree, inertials, gravity, body_names, joint_names, limits, dict(armature=armature, damping=damping, friction=friction)
    )


@dataclasses.dataclass(frozen=True)
class Joint:
    """One joint of a tree, given by the user to :func:`from_joints`.

    Attributes:
        kind: ``"R"`` revolute, ``"P"`` prismatic, ``"F"`` fixed, or ``"free"``, ``"spherical"``,
            ``"planar"`` (several coordinates; conventions in the module doc).
        parent: index of the parent body, ``-1`` for the base; parents precede children.
        axis: joint axis in the joint frame (normalised to unit length; unused by multi-DoF joints).
        rotation, translation: placement of the joint frame in the parent's body frame (the body
            frame is the moved joint frame, as in URDF and Pinocchio).
        name: joint name (default ``joint<i+1>``); ``body_name`` likewise (default ``link<i+1>``).
        lower, upper, velocity, effort: limits of the joint coordinate (unlimited by default;
            ignored for fixed and mimic joints). A multi-DoF joint takes velocity and effort
            limits (one value for all its velocity coordinates) but no position limits.
        mimic: ``(primary, multiplier, offset)`` (``primary`` a joint name or index): this
            revolute or prismatic joint follows ``multiplier * q_primary + offset`` and has no
            coordinate of its own (URDF's ``<mimic>``); ``None`` (default): an independent joint.
        armature, damping, friction: rotor inertia, viscous damping and Coulomb friction of each
            of the joint's velocity coordinates (:class:`Model`; default 0); fixed and mimic joints
            take none.

    Example:
        A revolute shoulder with position limits, then a damped slide along its ``x`` axis, and a
        joint that mirrors the shoulder (a mimic: no coordinate of its own):

        >>> import kronjax as kj
        >>> joints = [
        ...     kj.Joint("R", axis=(0, 0, 1), name="shoulder", lower=-1.0, upper=1.0),
        ...     kj.Joint("P", parent=0, axis=(1, 0, 0), translation=(0.5, 0, 0), name="slide", damping=0.2),
        ...     kj.Joint("R", parent=1, axis=(0, 0, 1), name="mirror", mimic=("shoulder", -1.0, 0.0)),
        ... ]
        >>> model = kj.from_joints(joints)
        >>> model.n_bodies, model.nv, model.coordinate_names
        (3, 2, ('shoulder', 'slide'))
        >>> print(model.limits.lower, model.damping)
        [ -1. -inf] [0.  0.2]
    """

    kind: str
    parent: int = -1
    axis: Any = (0.0, 0.0, 1.0)
    rotation: Any = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    translation: Any = (0.0, 0.0, 0.0)
    name: str | None = None
    body_name: str | None = None
    lower: Any = -np.inf
    upper: Any = np.inf
    velocity: Any = np.inf
    effort: Any = np.inf
    mimic: tuple | None = None
    armature: Any = 0.0
    damping: Any = 0.0
    friction: Any = 0.0


def _unit_axis(axis, what: str) -> Float[ArrayLike, 3]:
    axis = float_array(axis, what, (3,))
    if not is_concrete(axis):
        return axis / jnp.linalg.norm(axis)
    value = axis
    scale = np.max(np.abs(value))  # the norm of (1e308, 1e308, 0) overflows; that of value / scale does not
    norm = scale * np.linalg.norm(value / scale) if scale > 0 else 0.0
    if not norm >= 1e-12:
        raise ValueError(f"{what} must be non-zero, got {value}")
    return value / norm


def _check_rotation(r, what: str) -> None:
    if not is_concrete(r):
        return
    r = np.asarray(r)
    tol = 1e-5 if r.dtype == np.float32 else 1e-9
    if not np.allclose(r.T @ r, np.eye(3), atol=tol) or np.linalg.det(r) < 0:
        raise ValueError(f"{what} is not a proper rotation (orthonormal, det = +1):\n{r}")


def _joint_kind(kind) -> str:
    if isinstance(kind, str):
        if kind.upper() in ("R", "P", "F"):
            return kind.upper()
        if kind.lower() in MULTI_DOF:
            return kind.lower()
    return kind


def _mimic_entries(joints: list[Joint]) -> tuple:
    """``Tree.mimic`` from the joints' ``mimic`` (primary by name or index; a mimic of a mimic is
    resolved to the first primary: ``m1 (m2 q + o2) + o1``)."""
    if all(j.mimic is None for j in joints):
        return ()
    names = [j.name or f"joint{i + 1}" for i, j in enumerate(joints)]
    raw = []
    for i, j in enumerate(joints):
        if j.mimic is None:
            raw.append(None)
            continue
        try:
            primary, multiplier, offset = j.mimic
        except (TypeError, ValueError):
            raise ValueError(f"joint {i} ({names[i]}): mimic must be (primary, multiplier, offset), got {j.mimic!r}") from None
        if isinstance(primary, str):
            if primary not in names:
                raise ValueError(f"joint {i} ({names[i]}) mimics {primary!r}, which is not a joint of the model")
            primary = names.index(primary)
        values = [
            float(float_array(x, f"joint {i} ({names[i]}) mimic {what}", ()))
            for x, what in ((multiplier, "multiplier"), (offset, "offset"))
        ]
        raw.append((int(primary), *values))
    resolved = []
    for i, entry in enumerate(raw):
        seen, total = [i], entry
        while total is not None and raw[total[0]] is not None:
            primary = total[0]
            if primary in seen:
                cycle = [names[k] for k in seen[seen.index(primary) :]]
                raise ValueError(f"mimic joints {cycle} mimic each other in a cycle")
            seen.append(primary)
            outer = raw[primary]
            total = (outer[0], total[1] * outer[1], total[1] * outer[2] + total[2])
        resolved.append(total)
    return tuple(resolved)


def from_joints(joints: Sequence[Joint], inertials=None, *, gravity=None) -> Model:
    """A tree from a list of :class:`Joint`, one per body, in an order where parents come first.

    Body ``i`` is moved by ``joints[i]``; its frame is the joint frame after the joint motion
    (``Post`` is the identity), which is how URDF and Pinocchio place bodies.

    Args:
        joints: one :class:`Joint` per body, parents before children.
        inertials: one :class:`Inertial` per body, or ``None`` (a kinematics-only model).
        gravity: ``(3,)`` gravitational acceleration in the base frame; ``None``: ``[0, 0, -9.81]``.

    Returns:
        The :class:`Model` (a :class:`Tree`).

    Example:
        The same planar arm as in :func:`from_dh`'s example, with URDF-style frames at the joints:
        body 1's frame is at the elbow ``(1, 0, 0)``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> arm = kj.from_joints(
        ...     [kj.Joint("R", axis=(0, 0, 1)), kj.Joint("R", parent=0, axis=(0, 0, 1), translation=(1, 0, 0))],
        ...     [kj.Inertial(1.0, com=(0.5, 0, 0), inertia=(0, 0.1, 0.1))] * 2,
        ... )
        >>> arm.joint_names, arm.body_names
        (('joint1', 'joint2'), ('link1', 'link2'))
        >>> np.round(kj.forward_kinematics(arm, jnp.array([jnp.pi / 2, 0.0])).origins[1], 4).tolist()
        [0.0, 1.0, 0.0]
    """
    joints = list(joints)
    if not joints:
        raise ValueError("a model needs at least one joint")
    axes, pre_r, pre_p = [], [], []
    for i, joint in enumerate(joints):
        if not isinstance(joint, Joint):
            raise TypeError(f"joint {i}: expected a kronjax.chain.Joint, got {joint!r}")
        what = f"joint {i} ({joint.name or f'joint{i + 1}'})"
        axes.append(_unit_axis(joint.axis, f"{what} axis"))
        rotation = float_array(joint.rotation, f"{what} rotation", (3, 3))
        _check_rotation(rotation, f"{what} rotation")
        pre_r.append(rotation)
        pre_p.append(float_array(joint.translation, f"{what} translation", (3,)))
    nb = len(joints)
    dtype = jnp.result_type(*axes, *pre_r, *pre_p)
    mimic = _mimic_entries(joints)
    tree = Tree(
        parents=tuple(int(j.parent) for j in joints),
        kinds=tuple(_joint_kind(j.kind) for j in joints),
        axes=stack_arrays(axes).astype(dtype),
        pre_rotation=stack_arrays(pre_r).astype(dtype),
        pre_translation=stack_arrays(pre_p).astype(dtype),
        post_rotation=jnp.tile(jnp.eye(3, dtype=dtype), (nb, 1, 1)),
        post_translation=jnp.zeros((nb, 3), dtype),
        mimic=mimic,
    )
    moving = [(i, j, kind) for i, (j, kind) in enumerate(zip(joints, tree._own_kinds)) if kind != "F"]
    joint_space = {}
    for what in JOINT_SPACE:
        values = []  # one per velocity coordinate
        for i, (j, kind) in enumerate(zip(joints, tree._own_kinds)):
            joint = f"joint {i} ({j.name or f'joint{i + 1}'})"
            value = float_array(getattr(j, what), f"{joint} {what}", ())
            if kind != "F":
                values += [value] * JOINT_NV[kind]
            elif not is_concrete(value) or value != 0:
                raise ValueError(f"{joint}: a fixed or mimic joint has no coordinate to take {what}")
        joint_space[what] = stack_arrays(values) if values else None
    limits = None
    if moving:
        limits = {key: [] for key in ("lower", "upper", "velocity", "effort")}
        for i, j, kind in moving:
            what = f"joint {i} ({j.name or f'joint{i + 1}'})"
            for key, values in limits.items():
                value = float_array(getattr(j, key), f"{what} {key} limit", (), True)
                if kind in MULTI_DOF and key in ("lower", "upper") and is_concrete(value) and np.isfinite(value):
                    raise ValueError(f"{what}: a {kind} joint takes no position limits, got {key} = {value}")
                values.extend([value] * JOINT_NV[kind])
        limits = {key: stack_arrays(values) for key, values in limits.items()}
    return assemble_model(
        tree,
        inertials,
        gravity,
        [j.body_name or f"link{i + 1}" for i, j in enumerate(joints)],
        [j.name or f"joint{i + 1}" for i, j in enumerate(joints)],
        limits,
        joint_space,
    )


def from_function(
    poses_fn: Callable,
    n: int,
    inertials=None,
    *,
    gravity=None,
    body_names: Sequence[str] | None = None,
    joint_names: Sequence[str] | None = None,
    limits: JointLimits | dict | None = None,
    armature=None,
    damping=None,
    friction=None,
    check: bool = True,
) -> Model:
    """A model whose body frames are given by a pure JAX function of ``q``.

    Args:
        poses_fn: ``q (n,) -> (rotations (nb, 3, 3), origins (nb, 3))`` in the base frame, or
            ``q -> transforms (nb, 4, 4)``. It must be traceable by JAX (``jnp`` operations).
        n: number of joint coordinates.
        inertials: per body an :class:`Inertial` (or dict), an :class:`Inertials`, or ``None``.
        gravity: gravitational acceleration in the base frame (default ``[0, 0, -9.81]``).
        body_names: the bodies' names; ``None``: ``link1``, ``link2``, ...
        joint_names: the joints' names; ``None``: ``joint1``, ``joint2``, ...
        limits: a :class:`JointLimits`, or a dict with any of ``lower``, ``upper``, ``velocity``,
            ``effort`` (scalars or ``(n,)``); unlimited by default.
        armature, damping, friction: rotor inertia, viscous damping and Coulomb friction per
            coordinate (a scalar or ``(n,)``; :class:`Model`); zero by default.
        check: evaluate ``poses_fn`` at ``q = 0`` and at a few random ``q`` (outside ``jit``) and
            raise if a rotation is not orthonormal with determinant +1, or shapes are wrong.

    Returns:
        The :class:`Model` (its kinematics a :class:`PosesFunction`).

    Example:
        A frame 1 m out on a crank turning about ``z``; the Jacobians are taken by autodiff:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> def poses(q):
        ...     c, s = jnp.cos(q[0]), jnp.sin(q[0])
        ...     r = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        ...     return r[None], (r @ jnp.array([1.0, 0.0, 0.0]))[None]  # rotations (1, 3, 3), origins (1, 3)
        >>> model = kj.from_function(poses, 1)
        >>> np.round(kj.translational_jacobian(model, jnp.zeros(1), 0), 4).tolist()
        [[0.0], [1.0], [0.0]]
    """
    if not callable(poses_fn):
        raise TypeError(f"poses_fn must be callable, got {poses_fn!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (number of joint coordinates) must be a positive integer, got {n!r}")
    rotations, _ = jax.eval_shape(lambda q: split_poses(poses_fn(q)), jnp.zeros(int(n)))
    nb = rotations.shape[0]
    if check:
        rng = np.random.default_rng(0)
        for q in [np.zeros(n), *rng.uniform(-np.pi, np.pi, (3, n))]:
            rs, ps = split_poses(poses_fn(jnp.asarray(q)))
            if not bool(jnp.all(jnp.isfinite(rs))) or not bool(jnp.all(jnp.isfinite(ps))):
                raise ValueError(f"poses function returned non-finite values at q = {q}")
            for i in range(nb):
                _check_rotation(rs[i], f"poses function: rotation of body {i} at q = {np.round(q, 4)}")
    kinematics = PosesFunction(fn=poses_fn, nv=int(n), n_bodies=nb)
    return assemble_model(
        kinematics,
        inertials,
        gravity,
        body_names,
        joint_names,
        limits,
        dict(armature=armature, damping=damping, friction=friction),
    )
