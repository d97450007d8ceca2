"""Models of multibody systems: joints, tree topology, placements and body inertials.

A :class:`Model` is an equinox Module, so every numeric parameter (joint axes, placements,
masses, centres of mass, inertia tensors, gravity) is a pytree leaf: ``jax.grad`` of any
kronjax function with respect to the model reaches them (identification, calibration).

Two kinds of kinematics are supported:

* :class:`Tree` -- bodies connected by revolute (``"R"``), prismatic (``"P"``) and fixed (``"F"``)
  joints about any axis, and by the multi-DoF joints ``"free"``, ``"spherical"`` and ``"planar"``,
  each body with one parent (``-1`` is the base), so serial chains, branched trees and
  floating-base robots all work. Body ``i``'s frame is::

      T_i = T_parent(i) · Pre_i · Joint_i(q) · Post_i

  with constant placements ``Pre_i`` and ``Post_i``. The Denavit-Hartenberg builders fill
  ``Pre``/``Post`` so that the body frames are the D-H frames of the paper (Tuan, Table 1).

Configuration and velocity (Pinocchio's conventions): ``q`` has ``nq`` numbers and ``v`` (``qd``)
``nv``, per joint in body order: revolute and prismatic 1 and 1; ``"free"`` ``q = [x, y, z, qx, qy,
qz, qw]`` (the child frame's origin in the joint frame and the unit quaternion of its rotation) and
``v = [v, w]`` (linear and angular velocity of the child frame, in the child frame); ``"spherical"``
``q = [qx, qy, qz, qw]``, ``v = w`` (child frame); ``"planar"`` ``q = [x, y, cos t, sin t]`` (a
rotation ``t`` about the joint frame's z), ``v = [vx, vy, wz]`` (child frame). Every quantity with
a velocity index (Jacobians, ``M``, joint forces) is indexed by the ``nv`` velocity coordinates;
derivatives with respect to the configuration are taken along them (``q ⊕ dv``,
:func:`kronjax.configuration.integrate`).
* :class:`PosesFunction` -- any pure JAX function ``q -> (rotations, origins)`` of the body frames
  (the design's "kinematic chains are pure JAX functions of q").

Bodies are numbered from 0 (the paper's body ``i`` is index ``i - 1``) and may also be named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from . import _lie
from ._rotations import axis_angle, rot_x, rot_z

__all__ = [
    "Inertial",
    "Inertials",
    "JointLimits",
    "Joint",
    "Tree",
    "PosesFunction",
    "Model",
    "from_dh",
    "from_joints",
    "from_function",
]

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
UNIT_TOLERANCE = 1e-6  # how far from 1 a quaternion's norm may be outside jit (Model.check_q)
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def _is_concrete(*xs) -> bool:
    """True when no leaf is a tracer: values can be validated now (outside jit / grad)."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(xs))


def _float_array(x, what: str, shape: tuple[int, ...] | None = None, allow_inf: bool = False) -> np.ndarray | Array:
    """``x`` as a checked floating array of JAX's default (canonical) float dtype, unless it
    already is a floating array: a NumPy array when ``x`` is concrete (checked here, in NumPy:
    eager ``jnp`` operations and transfers cost a dispatch each, seconds for a 500-body model;
    :func:`_stack` or ``jnp.asarray`` makes the model's leaves), the traced array otherwise."""
    concrete = _is_concrete(x)
    try:
        arr = np.asarray(x) if concrete else jnp.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be numeric, got {x!r}") from err
    if not jnp.issubdtype(arr.dtype, jnp.number) or jnp.issubdtype(arr.dtype, jnp.complexfloating):
        raise TypeError(f"{what} must be real numbers, got dtype {arr.dtype}")
    floating = jnp.issubdtype(arr.dtype, jnp.floating) and not isinstance(x, (float, int))
    # strongly typed (Python scalars take JAX's default float): equal models then hash alike under jit
    dtype = jax.dtypes.canonicalize_dtype(arr.dtype if floating else jnp.result_type(float))
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
    if not concrete:
        return jax.lax.convert_element_type(arr, dtype)
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if np.any(bad):
        raise ValueError(f"{what} must be {'a number' if allow_inf else 'finite'}, got {arr}")
    return arr.astype(dtype)


def _stack(arrays: Sequence[np.ndarray | Array]) -> Array:
    """``jnp.stack``, through NumPy for concrete arrays: an eager ``jnp.stack`` compiles anew for
    every number of arrays."""
    if _is_concrete(arrays):
        return jnp.asarray(np.stack(arrays))
    return jnp.stack(arrays)


# --------------------------------------------------------------------------------------------
# Inertials
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Inertial:
    """Inertial parameters of one body, given by the user to a builder.

    Attributes:
        mass: mass ``m > 0`` (or ``0`` together with a zero inertia: a massless frame, such as a
            tool frame or a URDF link without ``<inertial>``).
        com: centre of mass in the body frame (3-vector), the paper's ``p_G^(i)``.
        inertia: inertia tensor about the centre of mass, in body-frame axes: a symmetric positive
            semi-definite 3 x 3 matrix, or its three principal values ``(Ixx, Iyy, Izz)``.

    Example:
        A 2 kg body, centre of mass 0.5 m along ``x``, on a revolute joint about ``z``: ``M = m
        0.5^2 + Izz = 0.6``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> link = kj.Inertial(mass=2.0, com=(0.5, 0.0, 0.0), inertia=(0.0, 0.1, 0.1))
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [link])
        >>> print(model.inertials.inertia[0])  # principal values become a diagonal tensor
        [[0.  0.  0. ]
         [0.  0.1 0. ]
         [0.  0.  0.1]]
        >>> print(np.round(float(kj.mass_matrix(model, jnp.zeros(1))[0, 0]), 6))
        0.6
    """

    mass: Any
    com: Any = (0.0, 0.0, 0.0)
    inertia: Any = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


class Inertials(eqx.Module):
    """Inertial parameters of all bodies, stacked (pytree leaves).

    Attributes:
        mass: ``(nb,)`` body masses.
        com: ``(nb, 3)`` centres of mass in the body frames.
        inertia: ``(nb, 3, 3)`` inertia tensors about the centres of mass, body-frame axes (``I_G``).

    Example:
        >>> import kronjax as kj
        >>> inertials = kj.models.double_pendulum().inertials
        >>> inertials.com.shape, inertials.inertia.shape
        ((2, 3), (2, 3, 3))
        >>> print(inertials.mass)
        [14.59 14.59]
    """

    mass: Float[Array, " nb"]
    com: Float[Array, "nb 3"]
    inertia: Float[Array, "nb 3 3"]

    def __check_init__(self):
        nb = self.mass.shape[0] if self.mass.ndim == 1 else -1
        if self.mass.ndim != 1 or self.com.shape != (nb, 3) or self.inertia.shape != (nb, 3, 3):
            raise ValueError(
                "Inertials need mass (nb,), com (nb, 3), inertia (nb, 3, 3); got "
                f"{self.mass.shape}, {self.com.shape}, {self.inertia.shape}"
            )
        if not _is_concrete(self.mass, self.com, self.inertia):
            return
        mass, inertia = np.asarray(self.mass), np.asarray(self.inertia)
        for i in range(nb):
            _check_inertial(i, mass[i], inertia[i])


def _check_inertial(body: int | str, mass: np.ndarray | np.floating | float, inertia: np.ndarray) -> None:
    if not (np.isfinite(mass) and np.all(np.isfinite(inertia))):
        raise ValueError(f"body {body}: mass {float(mass)} and inertia tensor must be finite:\n{inertia}")
    # a massless body with no inertia is a frame (a URDF link without <inertial>, a tool frame)
    if not (mass > 0 or (mass == 0 and not np.any(inertia))):
        raise ValueError(
            f"body {body}: mass must be positive, got {float(mass)} "
            "(only a body with zero inertia too may have mass 0: a massless frame)"
        )
    scale = max(float(np.max(np.abs(inertia))), 1.0)
    tol = (1e-5 if inertia.dtype == np.float32 else 1e-10) * scale
    if not np.allclose(inertia, inertia.T, rtol=0.0, atol=tol):
        raise ValueError(f"body {body}: inertia tensor is not symmetric:\n{inertia}")
    eig = np.linalg.eigvalsh(0.5 * inertia + 0.5 * inertia.T)  # no overflow near the largest float
    if eig[0] < -tol:
        raise ValueError(f"body {body}: inertia tensor is not positive semi-definite (eigenvalues {eig}):\n{inertia}")


def _stack_inertials(inertials, nb: int, names: Sequence[str]) -> Inertials | None:
    if inertials is None or isinstance(inertials, Inertials):
        if isinstance(inertials, Inertials) and inertials.mass.shape[0] != nb:
            raise ValueError(f"Inertials hold {inertials.mass.shape[0]} bodies, the model has {nb}")
        return inertials
    inertials = list(inertials)
    if len(inertials) != nb:
        raise ValueError(f"got {len(inertials)} inertials for {nb} bodies")
    masses, coms, tensors = [], [], []
    for i, item in enumerate(inertials):
        if isinstance(item, dict):
            unknown = set(item) - {"mass", "com", "inertia"}
            if unknown:
                raise ValueError(f"body {i} ({names[i]}): unknown inertial keys {sorted(unknown)}")
            item = Inertial(**item)
        if not isinstance(item, Inertial):
            raise TypeError(f"body {i} ({names[i]}): expected an Inertial or a dict, got {item!r}")
        what = f"body {i} ({names[i]})"
        mass = _float_array(item.mass, f"{what} mass", ())
        com = _float_array(item.com, f"{what} centre of mass", (3,))
        inertia = _float_array(item.inertia, f"{what} inertia")
        if inertia.shape == (3,):
            inertia = np.diag(inertia) if _is_concrete(inertia) else jnp.diag(inertia)
        if inertia.shape != (3, 3):
            raise ValueError(f"{what} inertia must be 3 x 3 or 3 principal values, got {inertia.shape}")
        if _is_concrete(mass, inertia):
            _check_inertial(f"{i} ({names[i]})", np.asarray(mass), np.asarray(inertia))
        masses.append(mass)
        coms.append(com)
        tensors.append(inertia)
    return Inertials(_stack(masses), _stack(coms), _stack(tensors))


# --------------------------------------------------------------------------------------------
# Kinematics of the model: a joint tree or a user's poses function
# --------------------------------------------------------------------------------------------


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
        if multi and _is_concrete(self.post_rotation, self.post_translation):
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
        """Number of velocity coordinates (length of ``v``, ``qd``, ``tau``)."""
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

    @property
    def n_dof(self) -> int:
        """``nv``."""
        return self.nv

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
        differentiating the scalar-component recursion of :func:`kronjax._spatial.frames` that
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
        >>> type(model.kinematics).__name__, model.kinematics.n_bodies, model.kinematics.n_dof
        ('PosesFunction', 1, 1)
    """

    fn: Callable = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)
    n_bodies: int = eqx.field(static=True)

    def poses(self, q: Float[Array, " n"]) -> tuple[Float[Array, "nb 3 3"], Float[Array, "nb 3"]]:
        return _split_poses(self.fn(q))


def _split_poses(out) -> tuple[Array, Array]:
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


# --------------------------------------------------------------------------------------------
# Joint limits
# --------------------------------------------------------------------------------------------


class JointLimits(eqx.Module):
    """Limits of each joint coordinate (URDF's ``<limit>``), used by trajectory optimisation.

    Attributes (each ``(n,)``, one entry per joint coordinate, ``inf`` where unlimited):
        lower, upper: position limits (rad or m), ``lower <= upper``; ``lower == upper`` is a
            joint locked at that position.
        velocity: speed limits ``|qd| <= velocity`` (``>= 0``; ``0``: the joint must not move).
        effort: force/torque limits ``|tau| <= effort`` (``>= 0``; ``0``: an unactuated, passive
            joint).

    NaN is an error everywhere. URDF files often write ``0`` to mean "not set";
    :func:`~kronjax.urdf.load_urdf` reads those as unlimited unless ``strict_limits=True``.

    Example:
        >>> import kronjax as kj
        >>> limits = kj.models.panda().limits  # Franka's published limits
        >>> limits.effort.tolist()
        [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]
        >>> kj.chain.JointLimits.unlimited(2).upper.tolist()
        [inf, inf]
    """

    lower: Float[Array, " n"]
    upper: Float[Array, " n"]
    velocity: Float[Array, " n"]
    effort: Float[Array, " n"]

    def __check_init__(self):
        n = self.lower.shape
        for name in ("upper", "velocity", "effort"):
            if getattr(self, name).shape != n:
                raise ValueError(f"JointLimits.{name} has shape {getattr(self, name).shape}, lower has {n}")
        if not _is_concrete(self.lower, self.upper, self.velocity, self.effort):
            return
        lower, upper = np.asarray(self.lower), np.asarray(self.upper)
        for k in np.flatnonzero(~(lower <= upper)):
            raise ValueError(f"joint coordinate {k}: lower limit {lower[k]} exceeds upper limit {upper[k]}")
        for k in np.flatnonzero((lower == np.inf) | (upper == -np.inf)):
            raise ValueError(f"joint coordinate {k}: position range [{lower[k]}, {upper[k]}] holds no position")
        for name in ("velocity", "effort"):
            value = np.asarray(getattr(self, name))
            for k in np.flatnonzero(~(value >= 0)):
                raise ValueError(f"joint coordinate {k}: {name} limit must be >= 0, got {value[k]}")

    @classmethod
    def unlimited(cls, n: int, dtype=None) -> JointLimits:
        inf = jnp.full((n,), jnp.inf, dtype or jnp.result_type(float))
        return cls(-inf, inf, inf, inf)


def _joint_limits(limits, n: int, joint_names: Sequence[str]) -> JointLimits:
    if limits is None:
        return JointLimits.unlimited(n)
    if isinstance(limits, dict):
        unknown = set(limits) - {"lower", "upper", "velocity", "effort"}
        if unknown:
            raise ValueError(f"unknown joint limit keys {sorted(unknown)}; expected lower, upper, velocity, effort")
        defaults = {"lower": -jnp.inf, "upper": jnp.inf, "velocity": jnp.inf, "effort": jnp.inf}
        values = {
            key: jnp.broadcast_to(_float_array(limits.get(key, default), f"joint limits {key}", None, True), (n,))
            for key, default in defaults.items()
        }
        try:
            limits = JointLimits(**values)
        except ValueError as err:
            raise ValueError(f"{err} (joints with coordinates: {list(joint_names)})") from None
    if not isinstance(limits, JointLimits):
        raise TypeError(f"limits must be a JointLimits, a dict or None, got {limits!r}")
    if limits.lower.shape != (n,):
        raise ValueError(f"joint limits for {limits.lower.shape[0]} coordinates, the model has {n} ({list(joint_names)})")
    return limits


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class Model(eqx.Module):
    """A multibody system: kinematics, body inertials and gravity.

    Build one with :func:`from_dh`, :func:`from_joints` or :func:`from_function` (or a built-in
    model from :mod:`kronjax.models`). All numeric parameters are pytree leaves.

    Attributes:
        kinematics: a :class:`Tree` or a :class:`PosesFunction`.
        inertials: :class:`Inertials` of every body, or ``None`` for a kinematics-only model.
        gravity: ``(3,)`` gravitational acceleration in the base frame.
        body_names, joint_names: one name per body (the joint that moves it).
        limits: :class:`JointLimits` of the ``n`` joint coordinates (``inf`` where unlimited;
            ``None`` only for a Model constructed directly).
        armature: ``(nv,)`` rotor inertia of each velocity coordinate (a motor's ``J_m G^2``
            reflected through its gear; MuJoCo's and Pinocchio's ``armature``), added to the
            diagonal of ``M``: it enters ``M``, inverse and forward dynamics, the kinetic energy
            and everything built on them, but not the body inertials, momenta or ``C``. Zeros
            from the builders; ``None`` (no rotor inertia) for a Model constructed directly.
        damping, friction: ``(nv,)`` viscous damping ``d`` and Coulomb friction ``f`` of each
            velocity coordinate: the passive joint forces ``-d v - f sign(v)``
            (:func:`kronjax.passive.passive_forces`), which ``kronjax.simulate`` applies and
            ``forward_dynamics(..., passive=True)`` adds. Zeros from the builders, ``None`` (none)
            for a Model constructed directly.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> model.body_names, model.joint_names, model.nq, model.nv
        (('link1', 'link2'), ('joint1', 'joint2'), 2, 2)
        >>> model.body_index("link2")
        1
        >>> print(model.gravity)
        [ 0.   -9.81  0.  ]
        >>> model.astype(jnp.float32).inertials.mass.dtype
        dtype('float32')
    """

    kinematics: Tree | PosesFunction
    inertials: Inertials | None
    gravity: Float[Array, 3]
    body_names: tuple[str, ...] = eqx.field(static=True)
    joint_names: tuple[str, ...] = eqx.field(static=True)
    limits: JointLimits | None = None
    armature: Float[Array, " nv"] | None = None
    damping: Float[Array, " nv"] | None = None
    friction: Float[Array, " nv"] | None = None

    def __check_init__(self):
        nb = self.kinematics.n_bodies
        if len(self.body_names) != nb or len(self.joint_names) != nb:
            raise ValueError(f"need {nb} body and joint names, got {len(self.body_names)}, {len(self.joint_names)}")
        for kind, names in (("body", self.body_names), ("joint", self.joint_names)):
            seen = set()
            for name in names:
                if name in seen:
                    raise ValueError(f"duplicate {kind} name {name!r}")
                seen.add(name)
        if self.inertials is not None and self.inertials.mass.shape != (nb,):
            raise ValueError(f"inertials for {self.inertials.mass.shape[0]} bodies, model has {nb}")
        if self.gravity.shape != (3,):
            raise ValueError(f"gravity must be a 3-vector, got shape {self.gravity.shape}")
        if self.limits is not None and self.limits.lower.shape != (self.n_dof,):
            raise ValueError(f"joint limits for {self.limits.lower.shape[0]} coordinates, model has {self.n_dof}")
        for what in ("armature", "damping", "friction"):
            value = getattr(self, what)
            if value is not None and jnp.shape(value) != (self.n_dof,):
                raise ValueError(f"{what} must have shape ({self.n_dof},) (one per velocity coordinate), got {jnp.shape(value)}")

    @property
    def n_dof(self) -> int:
        """Number of velocity coordinates ``n = nv`` (the length of ``q`` too unless the model has
        free, spherical or planar joints)."""
        return self.kinematics.n_dof

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (length of ``v``/``qd``, ``qdd``, ``tau``)."""
        return self.kinematics.n_dof

    @property
    def nq(self) -> int:
        """Length of the configuration ``q`` (``nv`` plus one per quaternion)."""
        return getattr(self.kinematics, "nq", self.kinematics.n_dof)

    @property
    def has_multi_dof(self) -> bool:
        """Whether a joint is free, spherical or planar (so that ``q`` lives on a Lie group)."""
        return getattr(self.kinematics, "has_multi_dof", False)

    def _joint_slice(self, joint: str, index: str, sizes: dict[str, int]) -> slice:
        if not isinstance(joint, str) or joint not in self.joint_names:
            raise KeyError(f"no joint named {joint!r}; joints are {list(self.joint_names)}")
        i = self.joint_names.index(joint)
        if not isinstance(self.kinematics, Tree):
            return slice(i, i + 1)
        kind = self.kinematics.kinds[i]
        if kind == "F":
            raise ValueError(f"joint {joint!r} is fixed: it has no coordinate")
        start = getattr(self.kinematics, index)[i]
        if start < 0:
            primary = self.joint_names[self.kinematics.mimic[i][0]]
            raise ValueError(f"joint {joint!r} mimics joint {primary!r}: it has no coordinate of its own")
        return slice(start, start + sizes[kind])

    def velocity_index(self, joint: str) -> slice:
        """The slice of ``v`` (and of ``qdd``, ``tau``, the columns of Jacobians and ``M``) that
        belongs to the joint named ``joint``."""
        return self._joint_slice(joint, "v_index", JOINT_NV)

    def configuration_index(self, joint: str) -> slice:
        """The slice of ``q`` that belongs to the joint named ``joint``."""
        return self._joint_slice(joint, "q_index", JOINT_NQ)

    @property
    def n_bodies(self) -> int:
        return self.kinematics.n_bodies

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        """The name of the joint of each of the ``n`` velocity coordinates (the moving joints in
        coordinate order, a multi-DoF joint's name once per coordinate; ``q1, q2, ...`` for a :class:`PosesFunction` model whose joints are not
        one per coordinate)."""
        kinds = getattr(self.kinematics, "kinds", None)
        if kinds is not None:
            own = self.kinematics._own_kinds
            return tuple(name for name, kind in zip(self.joint_names, own) for _ in range(JOINT_NV[kind]))
        if len(self.joint_names) == self.n_dof:
            return self.joint_names
        return tuple(f"q{k + 1}" for k in range(self.n_dof))

    def body_index(self, body: int | str) -> int:
        """Index of a body given by index or name; raises a clear error when it does not exist."""
        if isinstance(body, str):
            if body not in self.body_names:
                raise KeyError(f"no body named {body!r}; bodies are {list(self.body_names)}")
            return self.body_names.index(body)
        if isinstance(body, (bool, np.bool_)) or not isinstance(body, (int, np.integer)):
            raise TypeError(f"body must be an index or a name, got {body!r}")
        if not 0 <= body < self.n_bodies:
            raise IndexError(f"body index {body} out of range: the model has {self.n_bodies} bodies (0..{self.n_bodies - 1})")
        return int(body)

    def check_q(self, q: ArrayLike, name: str = "q") -> Float[Array, " nq"]:
        """A configuration as a floating array of shape ``(nq,)``, or a clear error. Outside
        ``jit``, also a clear error for a quaternion or ``(cos, sin)`` pair whose norm is not 1
        within ``1e-6`` (inside ``jit`` it is used as given: ``R = 1 + 2 w [u] + 2 [u]^2`` is then
        not a rotation; :func:`kronjax.configuration.normalize` first)."""
        q = self._check_vector(q, name, self.nq, "configuration numbers")
        if self.has_multi_dof and _is_concrete(q):
            values = np.asarray(q)
            for joint, kind, start in zip(self.joint_names, self.kinematics.kinds, self.kinematics.q_index):
                if kind in MULTI_DOF:
                    end = start + JOINT_NQ[kind]
                    norm = float(np.linalg.norm(values[end - (2 if kind == "planar" else 4) : end]))
                    if not abs(norm - 1) <= UNIT_TOLERANCE:
                        what = "(cos, sin) pair" if kind == "planar" else "quaternion"
                        raise ValueError(
                            f"{name}: the {what} of {kind} joint {joint!r} has norm {norm!r}, not 1 (within "
                            f"{UNIT_TOLERANCE}); pass kronjax.normalize(model, {name})"
                        )
        return q

    def check_v(self, v: ArrayLike, name: str = "qd") -> Float[Array, " nv"]:
        """A velocity-space vector (``qd``, ``qdd``, ``tau``) as a floating array of shape ``(nv,)``."""
        return self._check_vector(v, name, self.nv, "velocity coordinates")

    def _check_vector(self, x: ArrayLike, name: str, size: int, what: str) -> Array:
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.shape != (size,):
            model = f"{size}-DOF model" if self.nq == self.nv else f"model with nq = {self.nq}, nv = {self.nv} ({what})"
            raise ValueError(f"{name} must have shape ({size},) for this {model}, got {x.shape}")
        return x

    def astype(self, dtype) -> Model:
        """The same model with every floating-point parameter cast to ``dtype`` (e.g. float32)."""
        return jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, self)

    def poses(self, q: Float[Array, " n"]) -> tuple[Float[Array, "nb 3 3"], Float[Array, "nb 3"]]:
        """Rotations and origins of all body frames in the base frame (no input checks)."""
        return self.kinematics.poses(q)


def require_one_dof_joints(model: Model, what: str) -> None:
    """A clear error where a function does not handle free, spherical or planar joints yet."""
    if getattr(model, "has_multi_dof", False):  # a non-Model gets its TypeError from the caller
        kinds = sorted({kind for kind in model.kinematics.kinds if kind in MULTI_DOF})
        raise NotImplementedError(
            f"{what} does not support models with {' or '.join(kinds)} joints yet (nq != nv); "
            "supported for them: kinematics (poses, Jacobians, Hessians, relative motion), kronjax.dynamics, "
            "kronjax.configuration, kronjax.centroidal, kronjax.constrained, identify.regressor and base_parameters, "
            "simulate.rollout and to_urdf"
        )


def choose_method(model: Model, method: str, methods: tuple[str, ...], tree_method: str, other_method: str) -> str:
    """``method`` checked against ``methods``; ``"auto"`` means ``tree_method`` for a :class:`Tree`
    model and ``other_method`` otherwise, and ``tree_method`` on another model is an error."""
    if method not in methods:
        raise ValueError(f"unknown method {method!r}; expected one of {methods}")
    tree = isinstance(model.kinematics, Tree)
    if method == tree_method and not tree:
        raise ValueError(
            f"method={tree_method!r} needs a Tree model (from_dh / from_joints / load_urdf); this model's "
            f"kinematics is a {type(model.kinematics).__name__}: use method={other_method!r} (or 'auto')"
        )
    return (tree_method if tree else other_method) if method == "auto" else method


def _names(names, nb: int, prefix: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{prefix}{i + 1}" for i in range(nb))
    names = tuple(str(n) for n in names)
    if len(names) != nb:
        raise ValueError(f"got {len(names)} {prefix} names for {nb} bodies")
    return names


def _gravity(gravity) -> Array:
    return jnp.asarray(_float_array(DEFAULT_GRAVITY if gravity is None else gravity, "gravity", (3,)))


def _per_coordinate(values, n: int, names: Sequence[str], what: str) -> Array:
    """``(n,)`` joint-space parameters (armature, damping, friction): finite, nonnegative, zeros
    by default, a scalar for all coordinates."""
    if values is None:
        return jnp.zeros(n, jnp.result_type(float))
    values = _float_array(values, what)
    if values.ndim == 0:
        values = np.full(n, values) if _is_concrete(values) else jnp.full(n, values)
    if values.shape != (n,):
        raise ValueError(f"{what} must be a scalar or have shape ({n},) (coordinates of {list(names)}), got {values.shape}")
    if _is_concrete(values) and np.any(values < 0):
        bad = [names[i] if i < len(names) else f"coordinate {i}" for i in np.flatnonzero(values < 0)]
        raise ValueError(f"{what} must be nonnegative, got {values} ({bad})")
    return jnp.asarray(values)


JOINT_SPACE = ("armature", "damping", "friction")  # per-coordinate parameters of Model and Joint


def _model(kinematics, inertials, gravity, body_names, joint_names, limits, joint_space=None) -> Model:
    nb = kinematics.n_bodies
    bodies = _names(body_names, nb, "link")
    joints = _names(joint_names, nb, "joint")
    moving = joints
    if isinstance(kinematics, Tree):
        moving = [name for name, kind in zip(joints, kinematics._own_kinds) for _ in range(JOINT_NV[kind])]
    return Model(
        kinematics=kinematics,
        inertials=_stack_inertials(inertials, nb, bodies),
        gravity=_gravity(gravity),
        body_names=bodies,
        joint_names=joints,
        limits=_joint_limits(limits, kinematics.n_dof, moving),
        **{what: _per_coordinate((joint_space or {}).get(what), kinematics.n_dof, moving, what) for what in JOINT_SPACE},
    )


def armature_force(model: Model, qdd: Array) -> Array | float:
    """``A qdd``: the rotor inertias' joint forces (``0`` for a model without armature)."""
    return 0.0 if model.armature is None else model.armature.astype(qdd.dtype) * qdd


def with_armature(model: Model, mass: Array) -> Array:
    """``M + diag(A)``: a mass matrix of the bodies with the rotor inertias added."""
    return mass if model.armature is None else mass + jnp.diag(model.armature.astype(mass.dtype))


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


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
    values = [_float_array(v, f"D-H row {i} {name}", ()) for v, name in zip(row[1:], ("d", "theta", "a", "alpha"))]
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
        limits: a :class:`JointLimits`, or a dict with any of ``lower``, ``upper``, ``velocity``,
            ``effort`` (scalars or ``(n,)``); unlimited by default.
        armature, damping, friction: rotor inertia, viscous damping and Coulomb friction per joint
            coordinate (a scalar or ``(n,)``; :class:`Model`); zero by default.

    Body ``i`` is the D-H frame ``i + 1`` of the table (0-based index, the paper's body ``i + 1``).
    The values may be JAX tracers, so ``jax.grad`` reaches the D-H parameters (calibration).

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
        pre_rotation=_stack(pre_r).astype(dtype),
        pre_translation=_stack(pre_p).astype(dtype),
        post_rotation=_stack(post_r).astype(dtype),
        post_translation=_stack(post_p).astype(dtype),
    )
    return _model(
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
    axis = _float_array(axis, what, (3,))
    if not _is_concrete(axis):
        return axis / jnp.linalg.norm(axis)
    value = axis
    scale = np.max(np.abs(value))  # the norm of (1e308, 1e308, 0) overflows; that of value / scale does not
    norm = scale * np.linalg.norm(value / scale) if scale > 0 else 0.0
    if not norm >= 1e-12:
        raise ValueError(f"{what} must be non-zero, got {value}")
    return value / norm


def _check_rotation(r, what: str) -> None:
    if not _is_concrete(r):
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
            float(_float_array(x, f"joint {i} ({names[i]}) mimic {what}", ()))
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
        rotation = _float_array(joint.rotation, f"{what} rotation", (3, 3))
        _check_rotation(rotation, f"{what} rotation")
        pre_r.append(rotation)
        pre_p.append(_float_array(joint.translation, f"{what} translation", (3,)))
    nb = len(joints)
    dtype = jnp.result_type(*axes, *pre_r, *pre_p)
    mimic = _mimic_entries(joints)
    tree = Tree(
        parents=tuple(int(j.parent) for j in joints),
        kinds=tuple(_joint_kind(j.kind) for j in joints),
        axes=_stack(axes).astype(dtype),
        pre_rotation=_stack(pre_r).astype(dtype),
        pre_translation=_stack(pre_p).astype(dtype),
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
            value = _float_array(getattr(j, what), f"{joint} {what}", ())
            if kind != "F":
                values += [value] * JOINT_NV[kind]
            elif not _is_concrete(value) or value != 0:
                raise ValueError(f"{joint}: a fixed or mimic joint has no coordinate to take {what}")
        joint_space[what] = _stack(values) if values else None
    limits = None
    if moving:
        limits = {key: [] for key in ("lower", "upper", "velocity", "effort")}
        for i, j, kind in moving:
            what = f"joint {i} ({j.name or f'joint{i + 1}'})"
            for key, values in limits.items():
                value = _float_array(getattr(j, key), f"{what} {key} limit", (), True)
                if kind in MULTI_DOF and key in ("lower", "upper") and _is_concrete(value) and np.isfinite(value):
                    raise ValueError(f"{what}: a {kind} joint takes no position limits, got {key} = {value}")
                values.extend([value] * JOINT_NV[kind])
        limits = {key: _stack(values) for key, values in limits.items()}
    return _model(
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
        armature, damping, friction: rotor inertia, viscous damping and Coulomb friction per
            coordinate (a scalar or ``(n,)``; :class:`Model`); zero by default.
        check: evaluate ``poses_fn`` at ``q = 0`` and at a few random ``q`` (outside ``jit``) and
            raise if a rotation is not orthonormal with determinant +1, or shapes are wrong.

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
    rotations, _ = jax.eval_shape(lambda q: _split_poses(poses_fn(q)), jnp.zeros(int(n)))
    nb = rotations.shape[0]
    if check:
        rng = np.random.default_rng(0)
        for q in [np.zeros(n), *rng.uniform(-np.pi, np.pi, (3, n))]:
            rs, ps = _split_poses(poses_fn(jnp.asarray(q)))
            if not bool(jnp.all(jnp.isfinite(rs))) or not bool(jnp.all(jnp.isfinite(ps))):
                raise ValueError(f"poses function returned non-finite values at q = {q}")
            for i in range(nb):
                _check_rotation(rs[i], f"poses function: rotation of body {i} at q = {np.round(q, 4)}")
    kinematics = PosesFunction(fn=poses_fn, n_dof=int(n), n_bodies=nb)
    return _model(
        kinematics,
        inertials,
        gravity,
        body_names,
        joint_names,
        limits,
        dict(armature=armature, damping=damping, friction=friction),
    )
