"""Loop-closure joints between two bodies of a tree (Huang secs. 5-8): :func:`loop_closure`."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .. import _lie
from ..chain import Model, PosesFunction, Tree
from ._constraints import Constraint

LOOP_CLOSURE_KINDS: dict[str, int] = {
    "spherical": 3,
    "revolute": 5,
    "cylindrical": 4,
    "prismatic": 5,
    "planar_point": 2,
    "weld": 6,
}
"""Loop-closure joints of :func:`loop_closure` and their numbers of equations (Huang secs. 5-8)."""


class _LoopClosure(eqx.Module):
    """Residual of a loop-closure joint between two bodies (or a body and the base)."""

    kinematics: Tree | PosesFunction
    body_a: int = eqx.field(static=True)
    body_b: int = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    point_a: Float[Array, 3]
    point_b: Float[Array, 3]
    axis_a: Float[Array, 3]
    axis_b: Float[Array, 3]
    normals_a: Float[Array, "2 3"]
    normals_b: Float[Array, "2 3"]
    rotation: Float[Array, "3 3"]

    def __call__(self, q: Float[Array, " nq"]) -> Float[Array, " m"]:
        rotations, origins = self.kinematics.poses(q)

        def frame(body):
            if body < 0:
                return jnp.eye(3, dtype=q.dtype), jnp.zeros(3, q.dtype)
            return rotations[body], origins[body]

        ra, oa = frame(self.body_a)
        rb, ob = frame(self.body_b)
        d = (oa + ra @ self.point_a) - (ob + rb @ self.point_b)
        if self.kind == "spherical":
            return d
        if self.kind == "planar_point":
            return self.normals_a @ d
        if self.kind == "weld":
            return jnp.concatenate([d, _lie.log3(rb.T @ ra @ self.rotation)])
        ha = self.normals_a @ ra.T  # rows: the two directions normal to the axis, in the base frame
        aligned = ha @ (rb @ self.axis_b)
        if self.kind == "revolute":
            return jnp.concatenate([d, aligned])
        offset = ha @ d
        if self.kind == "cylindrical":
            return jnp.concatenate([aligned, offset])
        twist = ha[:1] @ (rb @ self.normals_b[1])
        return jnp.concatenate([aligned, offset, twist])


def _normals(axis: np.ndarray) -> np.ndarray:
    """Two unit vectors that complete ``axis`` to a right-handed orthonormal basis."""
    helper = np.eye(3)[int(np.argmin(np.abs(axis)))]
    h1 = np.cross(axis, helper)
    h1 /= np.linalg.norm(h1)
    return np.stack([h1, np.cross(axis, h1)])


def _vector(x, what: str, dtype) -> np.ndarray:
    try:
        v = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be a 3-vector of numbers, got {x!r}") from err
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be a finite 3-vector, got {x!r}")
    return v


def _unit(x, what: str) -> np.ndarray:
    v = _vector(x, what, float)
    norm = np.linalg.norm(v)
    if norm < 1e-12:
        raise ValueError(f"{what} must be non-zero, got {x!r}")
    return v / norm


def _rotation_matrix(x) -> np.ndarray:
    try:
        r = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"rotation must be a 3x3 rotation matrix, got {x!r}") from err
    if r.shape != (3, 3) or not np.all(np.isfinite(r)):
        raise ValueError(f"rotation must be a finite 3x3 rotation matrix, got shape {r.shape}")
    if np.max(np.abs(r.T @ r - np.eye(3))) > 1e-6 or np.linalg.det(r) < 0:
        raise ValueError("rotation must be a rotation matrix (orthonormal, determinant +1)")
    return r


def _body(model: Model, body) -> int:
    """Index of a body, ``-1`` for the base (``None``, ``"base"``, ``"world"`` or ``-1``)."""
    if body is None or (isinstance(body, str) and body in ("base", "world") and body not in model.body_names):
        return -1
    if isinstance(body, (int, np.integer)) and not isinstance(body, bool) and body == -1:
        return -1
    return model.body_index(body)


def loop_closure(
    model: Model,
    body_a,
    point_a: ArrayLike | Sequence[float],
    body_b,
    point_b: ArrayLike | Sequence[float],
    kind: str = "spherical",
    axis: ArrayLike | Sequence[float] | None = None,
    *,
    axis_b: ArrayLike | Sequence[float] | None = None,
    rotation: ArrayLike | Sequence[Sequence[float]] | None = None,
) -> Constraint:
    """A joint that closes a kinematic loop between two bodies of a tree model (Huang secs. 5-8).

    Args:
        model: the tree (or poses-function) model; only its kinematics is used.
        body_a, body_b: body indices or names; ``None``, ``"base"``/``"world"`` or ``-1`` for the
            fixed base.
        point_a, point_b: the joint's point in the frame of ``body_a`` / ``body_b`` (base frame
            for the base). The equations say that the two points coincide.
        kind: the joint and its equations, all in the base frame (``d = p_a - p_b``; ``h1, h2``
            the two unit normals of ``axis`` carried by body a; ``u_b`` the axis carried by body
            b):

            * ``"spherical"`` (3): ``d = 0`` (eqs. 21-23).
            * ``"revolute"`` (5): ``d = 0`` and ``h1 . u_b = h2 . u_b = 0`` (the axes stay
              parallel; eqs. 25-27).
            * ``"cylindrical"`` (4): the axes stay parallel and ``h1 . d = h2 . d = 0`` (the
              points stay on the common axis; eqs. 28-31).
            * ``"prismatic"`` (5): cylindrical, and ``h1 . k_b = 0`` with ``k_b`` the second
              normal of ``axis_b`` carried by body b (no rotation about the axis; eqs. 32-33).
            * ``"planar_point"`` (2): the components of ``d`` in the plane normal to ``axis``
              (given in the base frame, default ``z``), along ``e1, e2`` with
              ``e1 x e2 = axis`` (the base ``x`` and ``y`` for the default axis): a pin joint of
              a planar mechanism.
            * ``"weld"`` (6): ``d = 0`` and the two bodies keep their relative orientation,
              ``log(R_b^T R_a W) = 0`` (the rotation vector of the error, in radians; ``R_a``,
              ``R_b`` the bodies' rotations, ``W`` = ``rotation``): MuJoCo's ``weld``. The
              rotation vector's angle is in ``[0, pi]``: the rows are smooth wherever the error
              is less than a half turn.

        axis: the joint axis in the frame of ``body_a`` (required for revolute, cylindrical and
            prismatic); for ``"planar_point"`` the normal of the plane, in the base frame.
        axis_b: the same axis in the frame of ``body_b`` (default: the same components as
            ``axis``, i.e. the two body frames are aligned when the joint is assembled).
        rotation: for ``"weld"``, the orientation ``W = R_a^T R_b`` of body b's frame in body a's
            frame when welded, a rotation matrix (default: the identity).

    Returns:
        A holonomic :class:`Constraint` of ``LOOP_CLOSURE_KINDS[kind]`` equations.

    Example:
        The pin that closes :func:`kronjax.models.four_bar` (lengths crank, coupler, rocker,
        ground = 0.2, 0.6, 0.5, 0.7): the coupler's far end on the rocker's far end:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> pin = kj.constrained.loop_closure(mech.model, "coupler", (0.6, 0.0, 0.0), "rocker", (0.5, 0.0, 0.0), "planar_point")
        >>> pin.n_equations, pin.description
        (2, 'planar_point loop closure coupler-rocker')
        >>> bool(jnp.allclose(pin.phi(mech.q0), 0.0, atol=1e-12))  # the assembled configuration closes it
        True
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    if kind not in LOOP_CLOSURE_KINDS:
        raise ValueError(f"unknown loop-closure kind {kind!r}; expected one of {list(LOOP_CLOSURE_KINDS)}")
    a, b = _body(model, body_a), _body(model, body_b)
    if a == b:
        raise ValueError(f"a loop closure needs two different bodies, got {body_a!r} and {body_b!r}")
    pa, pb = _vector(point_a, "point_a", float), _vector(point_b, "point_b", float)
    if axis is None:
        if kind in ("revolute", "cylindrical", "prismatic"):
            raise ValueError(f"a {kind} loop closure needs its axis (in the frame of body_a)")
        axis = (0.0, 0.0, 1.0)  # planar_point: the plane z = const; spherical: unused
    ua = _unit(axis, "axis")
    ub = ua if axis_b is None else _unit(axis_b, "axis_b")
    if kind == "planar_point" and axis_b is not None:
        raise ValueError("axis_b has no meaning for a planar_point closure (the plane is fixed in the base frame)")
    if rotation is not None and kind != "weld":
        raise ValueError(f"rotation applies to a weld closure, not to a {kind} one")
    weld_rotation = np.eye(3) if rotation is None else _rotation_matrix(rotation)
    dtype = model.gravity.dtype
    normals_a = _normals(ua)
    if kind == "planar_point":
        # in-plane basis (e1, e2) with e1 x e2 = axis: the base x and y for the default z axis
        normals_a = np.stack([-normals_a[1], normals_a[0]])
    residual = _LoopClosure(
        model.kinematics,
        a,
        b,
        kind,
        *(jnp.asarray(x, dtype) for x in (pa, pb, ua, ub, normals_a, _normals(ub), weld_rotation)),
    )
    names = ["base" if i < 0 else model.body_names[i] for i in (a, b)]
    return Constraint(
        residual,
        None,
        None,
        LOOP_CLOSURE_KINDS[kind],
        model.nv,
        f"{kind} loop closure {names[0]}-{names[1]}",
        model if model.has_multi_dof else None,
    )
