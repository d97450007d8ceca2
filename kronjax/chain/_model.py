"""The :class:`Model`: kinematics, inertials, gravity, names, limits and the joint-space
parameters (``armature``, ``damping``, ``friction``)."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_attribute
from ._arrays import float_array, is_concrete
from ._inertials import Inertials, stack_inertials
from ._limits import JointLimits, joint_limits
from ._tree import JOINT_NQ, JOINT_NV, MULTI_DOF, PosesFunction, Tree

UNIT_TOLERANCE = 1e-6  # how far from 1 a quaternion's norm may be outside jit (Model.check_q)
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


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
        if self.limits is not None and self.limits.lower.shape != (self.nv,):
            raise ValueError(f"joint limits for {self.limits.lower.shape[0]} coordinates, model has {self.nv}")
        for what in ("armature", "damping", "friction"):
            value = getattr(self, what)
            if value is not None and jnp.shape(value) != (self.nv,):
                raise ValueError(f"{what} must have shape ({self.nv},) (one per velocity coordinate), got {jnp.shape(value)}")

    n_dof = renamed_attribute("n_dof", "nv", "Model")

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (length of ``v``, ``vd``, ``tau``)."""
        return self.kinematics.nv

    @property
    def nq(self) -> int:
        """Length of the configuration ``q`` (``nv`` plus one per quaternion)."""
        return getattr(self.kinematics, "nq", self.kinematics.nv)

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
        """The slice of ``v`` (and of ``vd``, ``tau``, the columns of Jacobians and ``M``) that
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
        if len(self.joint_names) == self.nv:
            return self.joint_names
        return tuple(f"q{k + 1}" for k in range(self.nv))

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
        if self.has_multi_dof and is_concrete(q):
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

    def check_v(self, v: ArrayLike, name: str = "v") -> Float[Array, " nv"]:
        """A velocity-space vector (``v``, ``vd``, ``tau``) as a floating array of shape ``(nv,)``."""
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
    return jnp.asarray(float_array(DEFAULT_GRAVITY if gravity is None else gravity, "gravity", (3,)))


def _per_coordinate(values, n: int, names: Sequence[str], what: str) -> Array:
    """``(n,)`` joint-space parameters (armature, damping, friction): finite, nonnegative, zeros
    by default, a scalar for all coordinates."""
    if values is None:
        return jnp.zeros(n, jnp.result_type(float))
    values = float_array(values, what)
    if values.ndim == 0:
        values = np.full(n, values) if is_concrete(values) else jnp.full(n, values)
    if values.shape != (n,):
        raise ValueError(f"{what} must be a scalar or have shape ({n},) (coordinates of {list(names)}), got {values.shape}")
    if is_concrete(values) and np.any(values < 0):
        bad = [names[i] if i < len(names) else f"coordinate {i}" for i in np.flatnonzero(values < 0)]
        raise ValueError(f"{what} must be nonnegative, got {values} ({bad})")
    return jnp.asarray(values)


JOINT_SPACE = ("armature", "damping", "friction")  # per-coordinate parameters of Model and Joint


def assemble_model(kinematics, inertials, gravity, body_names, joint_names, limits, joint_space=None) -> Model:
    nb = kinematics.n_bodies
    bodies = _names(body_names, nb, "link")
    joints = _names(joint_names, nb, "joint")
    moving = joints
    if isinstance(kinematics, Tree):
        moving = [name for name, kind in zip(joints, kinematics._own_kinds) for _ in range(JOINT_NV[kind])]
    return Model(
        kinematics=kinematics,
        inertials=stack_inertials(inertials, nb, bodies),
        gravity=_gravity(gravity),
        body_names=bodies,
        joint_names=joints,
        limits=joint_limits(limits, kinematics.nv, moving),
        **{what: _per_coordinate((joint_space or {}).get(what), kinematics.nv, moving, what) for what in JOINT_SPACE},
    )


def armature_force(model: Model, vd: Array) -> Array | float:
    """``A vd``: the rotor inertias' joint forces (``0`` for a model without armature)."""
    return 0.0 if model.armature is None else model.armature.astype(vd.dtype) * vd


def with_armature(model: Model, mass: Array) -> Array:
    """``M + diag(A)``: a mass matrix of the bodies with the rotor inertias added."""
    return mass if model.armature is None else mass + jnp.diag(model.armature.astype(mass.dtype))
