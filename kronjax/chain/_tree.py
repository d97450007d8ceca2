"""The kinematics of a model: a :class:`Tree` of joints (``T_i = T_parent(i) Pre_i Joint_i(q)
Post_i``) or a user's :class:`PosesFunction`."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _lie
from .._deprecation import renamed_attribute
from .._rotations import axis_angle
from ._arrays import is_concrete

JOINT_KINDS = ("R", "P", "F", "free", "spherical", "planar")
_JOINT_KIND_NAMES = {
    "R": "revolute",
    "P": "prismatic",
    "F": "fixed",
    "free": "6-DoF free-flyer",
    "spherical": "ball",
    "planar": "planar (x, y, rotation about z)",
}
MULTI_DOF = ("free", "spherical", "planar")
JOINT_NQ = {"F": 0, **_lie.NQ}  # configuration numbers of each joint kind (fixed joints: none)
JOINT_NV = {"F": 0, **_lie.NV}  # velocities of each joint kind


class Tree(eqx.Module):
    """A tree of bodies, each moved by one joint.

    Attributes:
        parents: parent body of each body (``-1``: the base); a parent precedes its children.
        kinds: joint kind of each body: ``"R"`` revolute, ``"P"`` prismatic, ``"F"`` fixed,
            ``"free"``, ``"spherical"``, ``"planar"`` (module doc; these three need ``Post = 1``).
        axes: ``(nb, 3)`` unit joint axes, in the frame after ``Pre`` (unused by multi-DoF joints).
        mimic: per body ``None`` or ``(primary, multiplier, offset)``: a revolute or prismatic joint
            whose coordinate is ``multiplier * q[primary] + offset`` (URDF's ``<mimic>``), with no
            coordinate of its own; ``primary`` is the body of a revolute or prismatic joint that is
            not a mimic itself. Empty (the default): no mimic joints.
        pre_rotation, pre_translation: ``(nb, 3, 3)``, ``(nb, 3)``: placement of the joint frame in
            the parent's body frame.
        post_rotation, post_translation: placement of the body frame in the moved joint frame.

    Example:
        A free-flying base (``q``: 7 numbers, ``v``: 6) carrying one revolute joint:

        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free", name="base"), kj.Joint("R", parent=0, axis=(1, 0, 0))])
        >>> tree = model.kinematics
        >>> tree.parents, tree.kinds, tree.nq, tree.nv
        ((-1, 0), ('free', 'R'), 8, 7)
        >>> tree.axes.shape, tree.pre_rotation.shape
        ((2, 3), (2, 3, 3))
    """

    parents: tuple[int, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    axes: Float[Array, "nb 3"]
    pre_rotation: Float[Array, "nb 3 3"]
    pre_translation: Float[Array, "nb 3"]
    post_rotation: Float[Array, "nb 3 3"]
    post_translation: Float[Array, "nb 3"]
    mimic: tuple[tuple[int, float, float] | None, ...] = eqx.field(static=True, default=())

    def __check_init__(self):
        nb = len(self.parents)
        if len(self.kinds) != nb:
            raise ValueError(f"{len(self.kinds)} joint kinds for {nb} bodies")
        for i, (parent, kind) in enumerate(zip(self.parents, self.kinds)):
            if kind not in JOINT_KINDS:
                raise ValueError(
                    f"body {i}: unknown joint type {kind!r}; expected one of "
                    + ", ".join(f"{k!r} ({v})" for k, v in _JOINT_KIND_NAMES.items())
                )
            if not -1 <= parent < i:
                raise ValueError(f"body {i}: parent {parent} must be -1 (base) or an earlier body (0..{i - 1})")
        for name, arr, shape in [
            ("axes", self.axes, (nb, 3)),
            ("pre_rotation", self.pre_rotation, (nb, 3, 3)),
            ("pre_translation", self.pre_translation, (nb, 3)),
            ("post_rotation", self.post_rotation, (nb, 3, 3)),
            ("post_translation", self.post_translation, (nb, 3)),
        ]:
            if arr.shape != shape:
                raise ValueError(f"Tree.{name} must have shape {shape}, got {arr.shape}")
        if self.mimic and len(self.mimic) != nb:
            raise ValueError(f"{len(self.mimic)} mimic entries for {nb} bodies")
        for i, entry in enumerate(self.mimic):
            if entry is None:
                continue
            primary = entry[0]
            if self.kinds[i] not in ("R", "P"):
                raise ValueError(f"body {i}: only a revolute or prismatic joint can mimic another, not {self.kinds[i]!r}")
            if not (0 <= primary < nb and self.kinds[primary] in ("R", "P") and self.mimic[primary] is None):
                raise ValueError(
                    f"body {i}: the joint it mimics (body {primary}) must be a revolute or prismatic joint "
                    "that is not a mimic itself"
                )
        multi = [i for i, kind in enumerate(self.kinds) if kind in MULTI_DOF]
        if multi and is_concrete(self.post_rotation, self.post_translation):
            post_r, post_p = np.asarray(self.post_rotation), np.asarray(self.post_translation)
            for i in multi:
                if not (np.allclose(post_r[i], np.eye(3), rtol=0, atol=1e-12) and not np.any(post_p[i])):
                    raise ValueError(f"body {i}: a {self.kinds[i]} joint needs the identity Post placement")

    @property
    def n_bodies(self) -> int:
        return len(self.parents)

    @property
    def nq(self) -> int:
        """Length of the configuration ``q``."""
        return sum(JOINT_NQ[kind] for kind in self._own_kinds)

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (length of ``v``, ``vd``, ``tau``)."""
        return sum(JOINT_NV[kind] for kind in self._own_kinds)

    @property
    def _own_kinds(self) -> tuple[str, ...]:
        """The kinds, with ``"F"`` for mimic joints (they have no coordinate of their own)."""
        if not self.mimic:
            return self.kinds
        return tuple("F" if entry is not None else kind for kind, entry in zip(self.kinds, self.mimic))

    @property
    def has_mimic(self) -> bool:
        return any(entry is not None for entry in self.mimic)

    n_dof = renamed_attribute("n_dof", "nv", "Tree")

    @property
    def has_multi_dof(self) -> bool:
        return any(kind in MULTI_DOF for kind in self.kinds)

    @property
    def q_index(self) -> tuple[int, ...]:
        """Index into ``q`` of each body's first configuration number (``-1`` for fixed and mimic
        joints)."""
        return _starts(self._own_kinds, JOINT_NQ)

    @property
    def v_index(self) -> tuple[int, ...]:
        """Index into ``v`` of each body's first velocity coordinate (``-1`` for fixed and mimic
        joints)."""
        return _starts(self._own_kinds, JOINT_NV)

    def coordinate(self, q: Array, body: int) -> Array:
        """The coordinate of a revolute or prismatic body's joint (a mimic joint's from its primary's)."""
        entry = self.mimic[body] if self.mimic else None
        if entry is None:
            return q[self.q_index[body]]
        primary, multiplier, offset = entry
        return multiplier * q[self.q_index[primary]] + offset

    def poses(self, q: Float[Array, " n"]) -> tuple[Float[Array, "nb 3 3"], Float[Array, "nb 3"]]:
        """Rotations ``(nb, 3, 3)`` and origins ``(nb, 3)`` of the body frames in the base frame.

        Written with 3 x 3 matrix products, unrolled over the bodies: the form that ``jax.jacfwd``
        and ``jax.hessian`` (the autodiff and Lagrangian paths) compile fastest, 2-3x faster than
        differentiating the scalar-component recursion of :func:`kronjax._spatial.frames.frames` that
        the analytic kinematics and the dynamics run on (measured: ``jit`` of the Lagrangian
        inverse dynamics of a 7-body tree 17 s vs 31 s on a loaded 2-core machine).
        """
        rotations, origins = [], []
        eye = jnp.eye(3, dtype=q.dtype)
        for i, (parent, kind, k) in enumerate(zip(self.parents, self.kinds, self.q_index)):
            joint_r, joint_p = eye, jnp.zeros(3, q.dtype)
            if kind == "R":
                joint_r = axis_angle(self.axes[i], self.coordinate(q, i))
            elif kind == "P":
                joint_p = self.axes[i] * self.coordinate(q, i)
            elif kind in MULTI_DOF:
                # a quaternion as given: a rotation only when unit (kronjax.configuration.normalize)
                joint_r, joint_p = _lie.motion(kind, q[k : k + JOINT_NQ[kind]])
            local_r = self.pre_rotation[i] @ joint_r @ self.post_rotation[i]
            local_p = self.pre_translation[i] + self.pre_rotation[i] @ (joint_p + joint_r @ self.post_translation[i])
            if parent < 0:
                rotations.append(local_r)
                origins.append(local_p)
            else:
                rotations.append(rotations[parent] @ local_r)
                origins.append(origins[parent] + rotations[parent] @ local_p)
        return jnp.stack(rotations), jnp.stack(origins)


def _starts(kinds: tuple[str, ...], sizes: dict[str, int]) -> tuple[int, ...]:
    index, k = [], 0
    for kind in kinds:
        index.append(k if sizes[kind] else -1)
        k += sizes[kind]
    return tuple(index)


class PosesFunction(eqx.Module):
    """Kinematics given by a user's pure JAX function ``q -> (rotations (nb, 3, 3), origins (nb, 3))``.

    The function may instead return homogeneous transforms ``(nb, 4, 4)``. It is checked once,
    outside ``jit``, when the model is built (:func:`from_function`).

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> def poses(q):  # one body: a frame 1 m out on a crank turning about z
        ...     c, s = jnp.cos(q[0]), jnp.sin(q[0])
        ...     r = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        ...     return r[None], (r @ jnp.array([1.0, 0.0, 0.0]))[None]
        >>> model = kj.from_function(poses, 1)
        >>> type(model.kinematics).__name__, model.kinematics.n_bodies, model.kinematics.nv
        ('PosesFunction', 1, 1)
    """

    fn: Callable = eqx.field(static=True)
    nv: int = eqx.field(static=True)
    n_bodies: int = eqx.field(static=True)

    n_dof = renamed_attribute("n_dof", "nv", "PosesFunction")

    def poses(self, q: Float[Array, " n"]) -> tuple[Float[Array, "nb 3 3"], Float[Array, "nb 3"]]:
        return split_poses(self.fn(q))


def split_poses(out) -> tuple[Array, Array]:
    if isinstance(out, (tuple, list)):
        if len(out) != 2:
            raise ValueError(
                f"a poses function must return (rotations, origins) or (nb, 4, 4) transforms; got a sequence of length {len(out)}"
            )
        rotations, origins = jnp.asarray(out[0]), jnp.asarray(out[1])
    else:
        transforms = jnp.asarray(out)
        if transforms.ndim != 3 or transforms.shape[1:] != (4, 4):
            raise ValueError(f"poses function returned shape {transforms.shape}, expected (nb, 4, 4)")
        rotations, origins = transforms[:, :3, :3], transforms[:, :3, 3]
    if rotations.ndim != 3 or rotations.shape[1:] != (3, 3):
        raise ValueError(f"poses function: rotations must have shape (nb, 3, 3), got {rotations.shape}")
    if origins.shape != (rotations.shape[0], 3):
        raise ValueError(f"poses function: origins must have shape ({rotations.shape[0]}, 3), got {origins.shape}")
    return rotations, origins
