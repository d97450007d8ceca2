"""Constrained multibody systems: closed chains and Pfaffian constraints.

A tree :class:`~kronjax.chain.Model` (a closed chain cut open at some joints) is subject to ``m``
constraint equations written in Pfaffian form (Parsa eqs. 5-6)::

    A(q) qd = b(q)             with, for holonomic rows, A = Phi_q and b = 0 (Phi(q) = 0)

Differentiated once more in time, ``A qdd = gamma`` with (Huang eq. 1, Khang's layout)::

    gamma = -(A qd)_q qd + b_q qd = -Phi_qq (qd ⊗ qd)      (holonomic rows)

``Phi_q`` is the Khang Jacobian of the residual and ``Phi_qq`` its Khang derivative, ``m x n^2``
(:meth:`Constraints.hessian`); ``gamma`` is computed as a second directional derivative
(``jax.jvp`` of ``jax.jvp``), which equals ``-Phi_qq (qd ⊗ qd)`` without forming ``Phi_qq``.

Free, spherical and planar joints (:mod:`kronjax.configuration`): ``q`` has ``nq`` numbers (unit
quaternions, ``(cos, sin)`` pairs) and ``qd``, ``qdd``, ``tau`` have ``nv = n``. ``Phi`` is a
function of ``q``; every derivative "with respect to ``q``" is taken along the tangent space, in
the exponential chart ``delta -> q ⊕ delta`` (:func:`kronjax.integrate`): ``Phi_q`` is ``m x nv``,
``d/d delta Phi(q ⊕ delta)`` at ``delta = 0``, and ``Phi_qq`` the same derivative of ``Phi_q``.
The drift ``gamma = -d^2/ds^2 Phi(q ⊕ s qd)`` at ``s = 0`` is exactly ``-(d/dt Phi_q) qd``: the
curve ``s -> q ⊕ s qd`` is a one-parameter subgroup, so ``d/ds Phi(q ⊕ s qd) = Phi_q(q ⊕ s qd) qd``
for every ``s`` and the Lie-bracket term of the chart drops out of ``d/dt (Phi_q qd) = Phi_q qdd
+ (d/dt Phi_q) qd``. Huang's expansion below is the Taylor series of ``delta -> Phi(q ⊕ delta)``;
positions are corrected and stepped with ``q ⊕ delta``.

Three solvers return the accelerations and the constraint forces (:func:`solve`):

* ``"lagrange"``: Lagrange multipliers, the KKT system
  ``[[M, A^T], [A, 0]] [qdd; -lambda] = [tau - C qd - g; gamma]`` (Huang eq. 1), solved through its
  Schur complement ``A M^-1 A^T`` (a Cholesky factor of ``M`` and an SVD), optionally with
  Baumgarte stabilisation. The generalized constraint force is ``A^T lambda``.
* ``"nullspace"``: Kane's equations by projection onto the admissible motions (Parsa eqs. 8-11,
  39-46): ``qd = B u`` with ``A B = 0``, ``B^T (M qdd + C qd + g - tau) = 0``. ``B`` is an
  orthonormal null-space basis from the SVD of ``A``, or the coordinate-partitioning basis of a
  user's choice of independent coordinates (``independent=``).
* ``"huang"``: Huang et al.'s formulation over a time step ``dt`` (eqs. 2-4, appendix A): the
  reactions ``Q`` are found from the second-order Taylor expansion of the constraints over the
  step, ``Phi(q ⊕ dq(Q)) = 0`` with ``dq = qd dt + M^-1 (tau - C qd - g + Z^T Q) dt^2 / 2``,
  linearised in ``Q`` (the ``Q^2`` terms are ``O(dt^4)``, A8-A10)::

      Phi_Q Q = -Psi,   Phi_Q = (Phi_q + Phi_qq (E ⊗ kappa)) M^-1 Z^T dt^2 / 2,
      Psi = Phi(q) + Phi_q kappa + 1/2 Phi_qq (kappa ⊗ kappa),  kappa = qd dt + M^-1 f dt^2 / 2

  ``Z = Phi_q(q)``: the reactions are the forces conjugate to the constraint rows (for
  :func:`loop_closure` rows of positions, the reaction force in the base frame), so
  ``Z^T Q`` plays the role of ``Phi_q^T lambda``. ``Phi_Q`` is solved in the least-squares sense
  (minimum norm), so a step stays defined where ``Phi_q`` loses rank (see :func:`solve`). With
  multi-DoF joints ``Phi_qq`` here is the (symmetric) second derivative of ``Phi(q ⊕ delta)`` in
  ``delta``, the Taylor coefficient of the chart.

Where ``Phi_q`` loses rank (a kinematic singularity such as the change point of a four-bar, or
redundant equations) the Lagrange and null-space systems are singular: :func:`solve` raises a
runtime error through ``equinox.error_if`` (under ``jit`` and ``vmap`` too) that names the
rank; :func:`check_state` reports it eagerly. Equinox's ``EQX_ON_ERROR=nan`` turns the error into
NaNs instead. Near such a configuration the solvers keep their digits until that threshold (the
figures are in :func:`solve`): ``rtol`` is where no reliable digit would be left.

:func:`simulate` integrates with a fixed step (a diffrax Runge-Kutta step, or Huang's Taylor
step), optionally projecting ``q`` and ``qd`` back onto the constraints after each step
(:func:`project`), and reports the constraint drift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from . import _lie
from .calculus import khang_jacobian
from .chain import Model, PosesFunction, Tree
from .configuration import _chart, _chart_rate, _integrate, _moving_joints
from .dynamics import Wrench, inverse_dynamics, mass_matrix

__all__ = [
    "Constraint",
    "Constraints",
    "Mechanism",
    "Solution",
    "HuangSystem",
    "ConstrainedRollout",
    "LOOP_CLOSURE_KINDS",
    "SOLVE_METHODS",
    "holonomic",
    "pfaffian",
    "loop_closure",
    "solve",
    "huang_system",
    "check_state",
    "project",
    "simulate",
]

LOOP_CLOSURE_KINDS: dict[str, int] = {
    "spherical": 3,
    "revolute": 5,
    "cylindrical": 4,
    "prismatic": 5,
    "planar_point": 2,
    "weld": 6,
}
"""Loop-closure joints of :func:`loop_closure` and their numbers of equations (Huang secs. 5-8)."""

SOLVE_METHODS = ("lagrange", "nullspace", "huang")


# --------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------


class Constraint(eqx.Module):
    """``m`` constraint equations on the configuration of a model (``nq`` numbers, ``n = nv``
    velocity coordinates; ``nq = n`` unless it has free, spherical or planar joints).

    Holonomic: ``residual(q) = Phi(q)``, and ``A = Phi_q``, ``b = 0``. Pfaffian (velocity level):
    ``A(q) qd = b(q)``. Build one with :func:`holonomic`, :func:`pfaffian` or
    :func:`loop_closure`.

    Attributes:
        phi: ``q (nq,) -> Phi (m,)`` for a holonomic constraint, else ``None``.
        a: ``q (nq,) -> A (m, n)`` for a Pfaffian constraint, else ``None``.
        b: ``q -> b (m,)`` for a Pfaffian constraint (``None``: ``b = 0``).
        n_equations: ``m``.
        n_dof: ``n = nv``.
        description: what the constraint is, for error messages.
        space: the model whose configuration ``q`` is, when it has multi-DoF joints (its
            :func:`kronjax.integrate` is the chart of the derivatives); ``None``: ``q`` is
            ``n`` Euclidean coordinates.

    Example:
        A point ``(x, y)`` on the unit circle, ``Phi(q) = x^2 + y^2 - 1``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> circle = kj.constrained.holonomic(lambda q: jnp.array([q[0] ** 2 + q[1] ** 2 - 1.0]), 2)
        >>> circle.n_equations, circle.n_dof, circle.is_holonomic
        (1, 2, True)
        >>> bool(jnp.allclose(circle.phi(jnp.array([0.6, 0.8])), 0.0))
        True
    """

    phi: Callable | None
    a: Callable | None
    b: Callable | None
    n_equations: int = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)
    description: str = eqx.field(static=True)
    space: Model | None = None

    @property
    def is_holonomic(self) -> bool:
        return self.phi is not None

    @property
    def nq(self) -> int:
        """Length of the configuration ``q``."""
        return self.n_dof if self.space is None else self.space.nq


def _probe(fn: Callable, n: int, what: str):
    try:
        return jax.eval_shape(fn, jax.ShapeDtypeStruct((n,), jnp.result_type(float)))
    except Exception as err:  # any failure to trace the user's function is reported with context
        raise TypeError(f"{what} must be a pure JAX function of q (shape ({n},)): {err}") from err


def _space(n_dof) -> tuple[int, Model | None]:
    """``(n, space)`` of a constraint from ``n_dof``: a positive integer, or a model (its ``nv``,
    and itself as the chart when it has multi-DoF joints)."""
    if isinstance(n_dof, Model):
        return n_dof.nv, (n_dof if n_dof.has_multi_dof else None)
    return _count(n_dof, "n_dof"), None


def holonomic(phi_fn: Callable, n_dof: int | Model, *, description: str = "holonomic constraint") -> Constraint:
    """Wrap a user's ``Phi(q) = 0`` (``q (nq,) -> (m,)``, traceable by JAX) as a constraint.

    ``n_dof``: the number of (Euclidean) coordinates, or the model whose configuration ``q`` is
    (required for a model with free, spherical or planar joints: ``Phi_q`` is then taken along
    its tangent space, ``m x nv``). ``Phi_q`` and ``gamma`` come from automatic differentiation
    of ``phi_fn``.

    Example:
        The unit circle, ``Phi = x^2 + y^2 - 1``: ``Phi_q = 2 q^T`` and ``gamma = -Phi_qq (qd ⊗ qd)
        = -2 |qd|^2`` (Huang eq. 1):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> circle = kj.constrained.holonomic(lambda q: jnp.array([q[0] ** 2 + q[1] ** 2 - 1.0]), 2, description="circle")
        >>> cons = kj.constrained.Constraints((circle,))
        >>> q, qd = jnp.array([0.6, 0.8]), jnp.array([-0.8, 0.6])  # on the circle, moving along it
        >>> bool(np.allclose(cons.jacobian(q), [[1.2, 1.6]]))
        True
        >>> bool(np.allclose(cons.velocity_residual(q, qd), 0.0)), bool(np.allclose(cons.bias(q, qd), -2.0))
        (True, True)
    """
    if not callable(phi_fn):
        raise TypeError(f"phi_fn must be callable, got {phi_fn!r}")
    n, space = _space(n_dof)
    out = _probe(phi_fn, n if space is None else space.nq, "phi_fn")
    if getattr(out, "ndim", None) != 1 or out.shape[0] < 1:
        raise ValueError(f"phi_fn must return a vector (m,) with m >= 1, got shape {getattr(out, 'shape', None)}")
    return Constraint(phi_fn, None, None, int(out.shape[0]), n, description, space)


def pfaffian(
    a_fn: Callable, n_dof: int | Model, b_fn: Callable | None = None, *, description: str = "Pfaffian constraint"
) -> Constraint:
    """A velocity constraint ``A(q) qd = b(q)`` (Parsa eq. 6); ``b_fn=None`` means ``b = 0``.

    ``a_fn``: ``q (nq,) -> (m, n)``; ``b_fn``: ``q -> (m,)``; ``n_dof`` as in :func:`holonomic`
    (``n = nv``). Pfaffian rows are not projected at position level (there is no ``Phi``) and are
    not supported by ``method="huang"``.

    Example:
        A wheel of radius 0.5 rolling without slipping, ``q = (x, theta)``: ``x' - 0.5 theta' = 0``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> rolling = kj.constrained.pfaffian(lambda q: jnp.array([[1.0, -0.5]]), 2, description="rolling")
        >>> rolling.n_equations, rolling.is_holonomic
        (1, False)
        >>> cons = kj.constrained.Constraints((rolling,))
        >>> bool(np.allclose(cons.velocity_residual(jnp.zeros(2), jnp.array([1.0, 2.0])), 0.0))  # 1 - 0.5 * 2
        True
    """
    if not callable(a_fn) or (b_fn is not None and not callable(b_fn)):
        raise TypeError("a_fn (and b_fn, when given) must be callables of q")
    n, space = _space(n_dof)
    nq = n if space is None else space.nq
    out = _probe(a_fn, nq, "a_fn")
    if getattr(out, "ndim", None) != 2 or out.shape[1] != n or out.shape[0] < 1:
        raise ValueError(f"a_fn must return a matrix (m, {n}), got shape {getattr(out, 'shape', None)}")
    m = int(out.shape[0])
    if b_fn is not None:
        bout = _probe(b_fn, nq, "b_fn")
        if getattr(bout, "shape", None) != (m,):
            raise ValueError(f"b_fn must return a vector ({m},), got shape {getattr(bout, 'shape', None)}")
    return Constraint(None, a_fn, b_fn, m, n, description, space)


def _count(n, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    return int(n)


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


class Constraints(eqx.Module):
    """Several constraints stacked into one system of ``m`` equations (rows in the given order).

    ``q`` has ``nq`` numbers and velocities ``n = nv`` (see :class:`Constraint`); with free,
    spherical or planar joints every derivative in ``q`` is along the tangent space (module doc).

    Example:
        The four-bar's constraints (:func:`kronjax.models.four_bar`), ``m = 2`` equations on
        ``n = 3`` coordinates; ``Phi_qq`` in Khang's layout is ``m x n^2``:

        >>> import kronjax as kj
        >>> mech = kj.models.four_bar()
        >>> cons = mech.constraints
        >>> cons.n_equations, cons.n_dof
        (2, 3)
        >>> cons.residual(mech.q0).shape, cons.jacobian(mech.q0).shape, cons.hessian(mech.q0).shape
        ((2,), (2, 3), (2, 9))
    """

    parts: tuple[Constraint, ...]

    def __check_init__(self):
        if not self.parts:
            raise ValueError("need at least one constraint")
        sizes = {(c.nq, c.n_dof) for c in self.parts}
        if len(sizes) != 1:
            if len({n for _, n in sizes}) != 1:
                raise ValueError(f"constraints for different numbers of coordinates: {sorted(n for _, n in sizes)}")
            raise ValueError(f"constraints for different configuration spaces: (nq, nv) = {sorted(sizes)}")
        layouts = {_layout(c.space) for c in self.parts if c.space is not None}
        if len(layouts) > 1:
            raise ValueError("constraints written for models with different joints (free, spherical, planar)")

    @property
    def n_equations(self) -> int:
        return sum(c.n_equations for c in self.parts)

    @property
    def n_dof(self) -> int:
        """``n = nv``, the number of velocity coordinates."""
        return self.parts[0].n_dof

    @property
    def nq(self) -> int:
        """Length of the configuration ``q``."""
        return self.parts[0].nq

    @property
    def space(self) -> Model | None:
        """The model whose configuration space the constraints live on (``None``: Euclidean)."""
        return next((c.space for c in self.parts if c.space is not None), None)

    @property
    def is_holonomic(self) -> bool:
        return all(c.is_holonomic for c in self.parts)

    def _chart(self, q: Array, f: Callable) -> tuple[Callable, Array]:
        """``(g, origin)``: ``g(delta) = f(q ⊕ delta)`` and ``delta = 0``, whose derivatives are
        along the tangent space; ``(f, q)`` for Euclidean coordinates."""
        space = self.space
        if space is None:
            return f, q
        return (lambda delta: f(_integrate(space, q, delta))), jnp.zeros(space.nv, q.dtype)

    def _derivative(self, q: Array, f: Callable) -> Array:
        """Khang's derivative of ``f`` at ``q`` along the tangent space (trailing size ``n``)."""
        g, origin = self._chart(q, f)
        return khang_jacobian(g)(origin)

    def residual(self, q: Float[Array, " nq"]) -> Float[Array, " m"]:
        """``Phi(q)`` of the holonomic rows (zero on Pfaffian rows, which have no position level)."""
        return jnp.concatenate([c.phi(q) if c.is_holonomic else jnp.zeros(c.n_equations, q.dtype) for c in self.parts])

    def jacobian(self, q: Float[Array, " nq"]) -> Float[Array, "m n"]:
        """``A(q)`` (``Phi_q`` for holonomic rows, Khang's Jacobian, Tuan eq. 5, along the tangent
        space: ``d/d delta Phi(q ⊕ delta)`` at ``delta = 0``)."""
        return jnp.concatenate([self._derivative(q, c.phi) if c.is_holonomic else c.a(q) for c in self.parts])

    def hessian(self, q: Float[Array, " nq"]) -> Float[Array, "m nn"]:
        """``dA/dq`` in Khang's layout, ``m x n^2`` (``Phi_qq`` for holonomic rows), entry
        ``(i, j n + k) = d/d delta_k A[i, j](q ⊕ delta)``: ``gamma = -Phi_qq (qd ⊗ qd)`` for
        holonomic rows. (With multi-DoF joints it is not symmetric in ``(j, k)``: its
        antisymmetric part is the chart's Lie bracket, which ``qd ⊗ qd`` does not see.)"""
        return self._derivative(q, self.jacobian)

    def velocity_residual(self, q: Float[Array, " nq"], qd: Float[Array, " nv"]) -> Float[Array, " m"]:
        """``A(q) qd - b(q)``."""
        rows = []
        for c in self.parts:
            if c.is_holonomic:
                g, origin = self._chart(q, c.phi)
                rows.append(jax.jvp(g, (origin,), (qd.astype(origin.dtype),))[1])
            else:
                rows.append(c.a(q) @ qd - (0.0 if c.b is None else c.b(q)))
        return jnp.concatenate(rows)

    def bias(self, q: Float[Array, " nq"], qd: Float[Array, " nv"]) -> Float[Array, " m"]:
        """``gamma`` of ``A qdd = gamma``: ``-(A qd - b)_q qd`` (Huang eq. 1), i.e.
        ``-d^2/ds^2 Phi(q ⊕ s qd)`` at ``s = 0`` for holonomic rows (module doc) and
        ``-d/ds (A qd - b)(q ⊕ s qd)`` for Pfaffian ones."""
        return -jnp.concatenate([self._rate(q, qd, c) for c in self.parts])

    def _rate(self, q: Array, qd: Array, c: Constraint) -> Array:
        """``d/ds (A qd - b)(q ⊕ s qd)`` at ``s = 0`` for the rows of ``c``."""
        if c.is_holonomic:
            g, origin = self._chart(q, c.phi)
            v = qd.astype(origin.dtype)
            return jax.jvp(lambda x: jax.jvp(g, (x,), (v,))[1], (origin,), (v,))[1]
        g, origin = self._chart(q, lambda x: c.a(x) @ qd - (0.0 if c.b is None else c.b(x)))
        return jax.jvp(g, (origin,), (qd.astype(origin.dtype),))[1]


def _layout(model: Model) -> tuple:
    """The joints of a model as far as its configuration space is concerned (static)."""
    tree = model.kinematics
    return tuple(tree._own_kinds), tuple(tree.q_index), tuple(tree.v_index)


def _stack(constraints) -> Constraints:
    if isinstance(constraints, Constraints):
        return constraints
    if isinstance(constraints, Constraint):
        return Constraints((constraints,))
    if isinstance(constraints, (list, tuple)) and all(isinstance(c, (Constraint, Constraints)) for c in constraints):
        parts = []
        for c in constraints:
            parts.extend(c.parts if isinstance(c, Constraints) else [c])
        return Constraints(tuple(parts))
    raise TypeError(
        "constraints must be a Constraint (from loop_closure, holonomic, pfaffian), a Constraints, or a "
        f"sequence of them; got {type(constraints).__name__}"
    )


class Mechanism(eqx.Module):
    """A closed-chain mechanism: a tree model, its constraints and an assembled configuration.

    Attributes:
        model: the tree (the mechanism cut open at its loop-closing joints).
        constraints: the loop closures.
        q0: ``(nq,)`` a configuration that satisfies the constraints.

    Example:
        The built-in four-bar (:func:`kronjax.models.four_bar`): 3 joints, 2 loop-closure
        equations, 1 degree of freedom:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> mech.model.nq, mech.constraints.n_equations, mech.n_dof
        (3, 2, 1)
        >>> bool(jnp.max(jnp.abs(mech.constraints.residual(mech.q0))) < 1e-12)
        True
    """

    model: Model
    constraints: Constraints
    q0: Float[Array, " nq"]

    def __check_init__(self):
        _check_space(self.model, self.constraints)
        if jnp.shape(self.q0) != (self.model.nq,):
            raise ValueError(f"q0 must have shape ({self.model.nq},) for this model, got {jnp.shape(self.q0)}")

    @property
    def n_dof(self) -> int:
        """Degrees of freedom of the closed mechanism, ``nv - m`` (independent constraints)."""
        return self.model.nv - self.constraints.n_equations


def _check_space(model: Model, cons: Constraints) -> None:
    """A clear error where the constraints are not written on the model's configuration space."""
    if cons.n_dof != model.nv:
        raise ValueError(f"constraints on {cons.n_dof} coordinates for a {model.n_dof}-DOF model")
    if cons.nq != model.nq or (cons.space is not None and _layout(cons.space) != _layout(model)):
        raise ValueError(
            f"constraints on configurations q of {cons.nq} numbers for a model with nq = {model.nq} "
            f"(or other free, spherical or planar joints): write them for this model (holonomic(phi, model))"
        )


# --------------------------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------------------------


class Solution(NamedTuple):
    """The result of :func:`solve`.

    Attributes:
        qdd: ``(n,)`` joint accelerations (``n = nv``, the velocity coordinates).
        forces: ``(m,)`` constraint forces: the Lagrange multipliers ``lambda`` (``"lagrange"``,
            ``"nullspace"``) or Huang's reactions ``Q`` (``"huang"``). For a
            :func:`loop_closure` the rows of positions carry the force on body a in the base
            frame (body b receives the opposite).
        generalized_force: ``(n,)`` the constraint forces in joint space: ``A^T lambda`` or
            ``Z^T Q``; ``M qdd + C qd + g = tau + generalized_force``.
        rank: the numerical rank of the system that was solved (``A`` for ``"lagrange"`` and
            ``"nullspace"``, ``Phi_Q`` for ``"huang"``).

    Example:
        The four-bar released at rest (:func:`solve`); the generalized constraint force is
        ``A^T lambda``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> sol = kj.constrained.solve(mech.model, mech.constraints, mech.q0, jnp.zeros(3), jnp.zeros(3))
        >>> sol.qdd.shape, sol.forces.shape, sol.generalized_force.shape, int(sol.rank)
        ((3,), (2,), (3,), 2)
        >>> bool(jnp.allclose(mech.constraints.jacobian(mech.q0).T @ sol.forces, sol.generalized_force))
        True
    """

    qdd: Float[Array, " nv"]
    forces: Float[Array, " m"]
    generalized_force: Float[Array, " nv"]
    rank: Int[Array, ""]


def _default_rtol(dtype) -> float:
    return float(jnp.finfo(dtype).eps) ** 0.75


def _rank(s: Array, rtol) -> Array:
    return jnp.sum(s > rtol * s[0])


def _raise_if_deficient(x, rank, m: int, method: str):
    messages = [
        f"solve(method={method!r}): the constraint Jacobian has rank {r} < {m} equations at this "
        "configuration (a kinematic singularity, or redundant constraints), so the system is "
        "singular. Use method='huang' to step through a singular configuration, or remove "
        "redundant equations (check_state reports them)."
        for r in range(m)
    ]
    return eqx.branched_error_if(x, rank < m, jnp.minimum(rank, m - 1), messages)


def _pinv_solve(u, s, vt, rhs, rtol):
    """Minimum-norm least-squares solution of ``U diag(s) V^T x = rhs`` (singular values below
    ``rtol * s_max`` dropped)."""
    keep = s > rtol * s[0]
    inv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    return vt.T @ (inv * (u.T @ rhs))


def _forces(model, q, qd, tau, wrenches):
    """``M``, its Cholesky factor and the free generalized force ``f = tau - C qd - g + f_ext``."""
    m_q = mass_matrix(model, q)
    bias = inverse_dynamics(model, q, qd, jnp.zeros_like(qd), wrenches=wrenches)
    factor = jsl.cho_factor(m_q, lower=True)
    return m_q, factor, tau - bias


def _baumgarte(cons: Constraints, q, qd, gamma, baumgarte):
    if baumgarte is None:
        return gamma
    alpha, beta = baumgarte
    return gamma - 2.0 * alpha * cons.velocity_residual(q, qd) - beta**2 * cons.residual(q)


def _lagrange(cons, q, factor, f, gamma, rtol):
    a = cons.jacobian(q)
    y = jsl.solve_triangular(factor[0], a.T, lower=True)  # L^-1 A^T: S = A M^-1 A^T = Y^T Y
    _, s, vt = jnp.linalg.svd(y, full_matrices=False)
    rank = _rank(s, rtol)
    a0 = jsl.cho_solve(factor, f)
    rhs = gamma - a @ a0
    lam = vt.T @ ((vt @ rhs) / jnp.where(s > 0, s, 1.0) ** 2)
    lam = _raise_if_deficient(lam, rank, a.shape[0], "lagrange")
    gen = a.T @ lam
    return Solution(a0 + jsl.cho_solve(factor, gen), lam, gen, rank)


def _nullspace(cons, q, m_q, f, gamma, rtol, independent):
    a = cons.jacobian(q)
    m, n = a.shape
    if independent is None:
        u, s, vt = jnp.linalg.svd(a, full_matrices=True)
        rank = _rank(s, rtol)
        basis = vt[m:].T  # n x (n - m), orthonormal, A B = 0
        particular = _pinv_solve(u, s, vt[:m], gamma, rtol)
        ainv_t = lambda r: u @ ((vt[:m] @ r) / jnp.where(s > 0, s, 1.0))  # (A^+)^T r
    else:
        dep = tuple(i for i in range(n) if i not in independent)
        a_d = a[:, dep]
        s = jnp.linalg.svd(a_d, compute_uv=False)
        rank = _rank(s, rtol)
        lu = jsl.lu_factor(a_d)
        basis = jnp.zeros((n, n - m), a.dtype)
        basis = basis.at[jnp.asarray(independent), jnp.arange(n - m)].set(1.0)
        basis = basis.at[jnp.asarray(dep)].set(-jsl.lu_solve(lu, a[:, list(independent)]))
        particular = jnp.zeros(n, a.dtype).at[jnp.asarray(dep)].set(jsl.lu_solve(lu, gamma))
        ainv_t = lambda r: jsl.lu_solve(lu, r[jnp.asarray(dep)], trans=1)
    reduced = basis.T @ m_q @ basis  # Kane's generalized mass (Parsa 43-46)
    ud = jnp.linalg.solve(reduced, basis.T @ (f - m_q @ particular))
    qdd = particular + basis @ ud
    lam = ainv_t(m_q @ qdd - f)
    lam = _raise_if_deficient(lam, rank, m, "nullspace")
    return Solution(qdd, lam, a.T @ lam, rank)


class HuangSystem(NamedTuple):
    """Huang's linear system for the reactions over one step, ``Phi_Q Q = -Psi`` (eqs. 4, 36, A9-A10).

    Attributes:
        phi_q: ``(m, m)`` ``Phi_Q = (Phi_q + Phi_qq (E ⊗ kappa)) M^-1 Z^T dt^2 / 2`` (the
            ``df/dQ`` of eqs. 36-39).
        psi: ``(m,)`` ``Psi = Phi(q) + Phi_q kappa + 1/2 Phi_qq (kappa ⊗ kappa)``, the
            constraint residual at ``t + dt`` without reactions.
        z: ``(m, n)`` ``Z``: the generalized force of the reactions is ``Z^T Q``.
        free_qdd: ``(n,)`` ``M^-1 f``, the acceleration without reactions.

    Example:
        The four-bar at rest under gravity, a step of 1 ms (:func:`huang_system`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> system = kj.constrained.huang_system(mech.model, mech.constraints, mech.q0, jnp.zeros(3), jnp.zeros(3), 1e-3)
        >>> system.phi_q.shape, system.psi.shape, system.z.shape, system.free_qdd.shape
        ((2, 2), (2,), (2, 3), (3,))
        >>> bool(jnp.allclose(system.z, mech.constraints.jacobian(mech.q0)))  # Z = Phi_q
        True
    """

    phi_q: Float[Array, "m m"]
    psi: Float[Array, " m"]
    z: Float[Array, "m n"]
    free_qdd: Float[Array, " nv"]


def _huang_system(cons, q, qd, factor, f, dt) -> HuangSystem:
    a0 = jsl.cho_solve(factor, f)
    kappa = qd * dt + 0.5 * dt**2 * a0
    # the Taylor expansion of g(delta) = Phi(q ⊕ delta) about delta = 0 (the step is q ⊕ dq)
    g, origin = cons._chart(q, cons.residual)
    kappa = kappa.astype(origin.dtype)
    jac = khang_jacobian(g)
    z, dz = jax.jvp(jac, (origin,), (kappa,))
    phi_q = (z + dz) @ (0.5 * dt**2 * jsl.cho_solve(factor, z.T))  # Phi_q + Phi_qq (E ⊗ kappa)
    first = lambda x: jax.jvp(g, (x,), (kappa,))[1]
    first_value, second = jax.jvp(first, (origin,), (kappa,))
    return HuangSystem(phi_q, cons.residual(q) + first_value + 0.5 * second, z, a0)


def huang_system(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    dt: Float[ArrayLike, ""],
    *,
    wrenches: Wrench | Sequence[Wrench] | None = None,
) -> HuangSystem:
    """The matrix ``Phi_Q`` and right-hand side ``Psi`` of Huang's formulation at ``(q, qd)``
    for a step ``dt`` (see the module docstring); :func:`solve` with ``method="huang"`` solves it.
    Useful to inspect ``det Phi_Q`` or its conditioning at a singular configuration.

    Example:
        Solving ``Phi_Q Q = -Psi`` gives the reactions of :func:`solve` with ``method="huang"``
        (the four-bar at rest under gravity, a step of 1 ms):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> state = (mech.model, mech.constraints, mech.q0, jnp.zeros(3), jnp.zeros(3))
        >>> system = kj.constrained.huang_system(*state, 1e-3)
        >>> reactions = jnp.linalg.solve(system.phi_q, -system.psi)
        >>> bool(jnp.allclose(reactions, kj.constrained.solve(*state, method="huang", dt=1e-3).forces))
        True
    """
    cons = _huang_constraints(constraints, dt)
    q, qd, tau = _state(model, cons, ("q", q), qd=qd, tau=tau)
    _, factor, f = _forces(model, q, qd, tau, wrenches)
    return _huang_system(cons, q, qd, factor, f, dt)


def _huang_constraints(constraints, dt) -> Constraints:
    cons = _stack(constraints)
    if dt is None:
        raise ValueError("method='huang' steps over a time interval: give dt > 0")
    if not isinstance(dt, jax.core.Tracer) and not float(dt) > 0:
        raise ValueError(f"dt must be positive, got {dt!r}")
    if not cons.is_holonomic:
        raise ValueError(
            "method='huang' expands Phi(q) to second order and needs holonomic constraints; "
            "use 'lagrange' or 'nullspace' with Pfaffian constraints"
        )
    return cons


def _huang(cons, q, qd, factor, f, dt, rtol):
    system = _huang_system(cons, q, qd, factor, f, dt)
    u, s, vt = jnp.linalg.svd(system.phi_q)
    reactions = _pinv_solve(u, s, vt, -system.psi, rtol)
    gen = system.z.T @ reactions
    return Solution(system.free_qdd + jsl.cho_solve(factor, gen), reactions, gen, _rank(s, rtol))


def _check_independent(independent, n: int, m: int):
    if independent is None:
        return None
    try:
        idx = tuple(int(i) for i in independent)
    except TypeError as err:
        raise TypeError(f"independent must be a sequence of coordinate indices, got {independent!r}") from err
    if len(idx) != n - m or len(set(idx)) != len(idx) or not all(0 <= i < n for i in idx):
        raise ValueError(
            f"independent must name {n - m} distinct coordinates in 0..{n - 1} (n - m for {m} equations), got {independent!r}"
        )
    return tuple(sorted(idx))


def _state(model: Model, cons: Constraints, q: tuple[str, ArrayLike], **velocities):
    """Checks of the model and constraints; ``q = (name, value)`` checked as a configuration
    ``(nq,)``, the ``velocities`` (``qd``, ``tau``) as ``(nv,)``; returns them in that order."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    _check_space(model, cons)
    if cons.n_equations >= model.nv + 1:
        raise ValueError(
            f"{cons.n_equations} constraint equations on {model.nv} coordinates: at most "
            f"{model.nv} independent equations are possible (remove redundant ones)"
        )
    return [model.check_q(q[1], q[0])] + [model.check_v(x, name) for name, x in velocities.items()]


def solve(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    method: str = "lagrange",
    *,
    dt: Float[ArrayLike, ""] | None = None,
    baumgarte: tuple[Float[ArrayLike, ""], Float[ArrayLike, ""]] | None = None,
    independent: Sequence[int] | None = None,
    wrenches: Wrench | Sequence[Wrench] | None = None,
    rtol: float | None = None,
) -> Solution:
    """Accelerations and constraint forces of a constrained system at ``(q, qd)`` under ``tau``.

    Args:
        model: the (tree) model.
        constraints: a :class:`Constraint`, :class:`Constraints` or a sequence of them.
        method: ``"lagrange"`` (the KKT system, Huang eq. 1), ``"nullspace"`` (Kane's equations,
            Parsa eqs. 8-11, 39-46) or ``"huang"`` (Huang eqs. 2-4, appendix A); see the module
            docstring.
        dt: the step of Huang's formulation (required for ``"huang"``). Its ``qdd`` is the
            constant acceleration over ``[t, t + dt]`` that satisfies the constraints at
            ``t + dt`` to second order, correcting the position and velocity errors at ``t``
            too; it differs from the instantaneous ``qdd`` by ``O(dt)`` (on a consistent state
            it equals Lagrange's with Baumgarte gains ``alpha = 1/dt``,
            ``beta = sqrt(2)/dt`` up to ``O(dt)``).
        baumgarte: ``(alpha, beta)``: stabilisation ``A qdd = gamma - 2 alpha (A qd - b) -
            beta^2 Phi`` (``"lagrange"``, ``"nullspace"``).
        independent: for ``"nullspace"``, indices of ``n - m`` independent velocity coordinates
            (coordinate partitioning, ``B = [E; -A_d^-1 A_i]``); default: an orthonormal
            null-space basis from the SVD of ``A``.
        wrenches: external loads, as in :func:`kronjax.inverse_dynamics`.
        rtol: singular values below ``rtol`` times the largest count as zero (default
            ``eps ** 0.75``: ``1.8e-12`` in float64, ``6.4e-6`` in float32).

    Returns:
        A :class:`Solution` with ``qdd``, the constraint forces, ``A^T lambda`` (or ``Z^T Q``)
        and the rank.

    Precision near a singular configuration (``kappa = cond(Phi_q)``, ``eps`` the machine
    epsilon), measured against the exact solution of the same float64 KKT system (Pinocchio's
    ``M`` and bias; ``tests/test_conditioning.py``) on a parallelogram four-bar approaching its
    flattened configuration (``kappa`` 4.3e8 to 4.3e11, ``cond`` of the KKT matrix 4e15 to 4e21):
    ``"lagrange"`` keeps ``qdd`` and ``lambda`` to rounding level (1e-15 to 4e-14: the Schur
    complement is factorised through the SVD of ``L^-1 A^T``, never formed); ``"nullspace"`` keeps
    ``qdd`` (1e-15) and loses up to ``kappa eps`` in ``lambda`` (2.6e-8 at 4.3e8, 3.6e-5 at
    4.3e11); ``"huang"`` solves ``Phi_Q`` to 2e-13 at ``cond(Phi_Q)`` 1.7e11. Beyond
    ``1 / rtol`` (``kappa > 5.5e11`` in float64, ``1.6e5`` in float32) there are no reliable
    digits left: ``"lagrange"`` and ``"nullspace"`` raise (naming the rank), ``"huang"`` returns
    its least-squares step and says so in ``rank`` (``< m``), never a digit-less number. ``M``
    itself is factorised by Cholesky: as in :func:`kronjax.forward_dynamics`, its conditioning
    up to a diagonal scaling (not a light body) costs up to ``cond(M) eps``.

    Raises:
        ValueError, TypeError: for bad shapes or options (eagerly).
        equinox's runtime error: ``"lagrange"``/``"nullspace"`` where the constraint Jacobian is
            rank-deficient (the message names the rank; also under ``jit``/``vmap``).

    Example:
        The four-bar (:func:`kronjax.models.four_bar`) moving at an admissible velocity (a unit
        vector of the null space of ``A``) under gravity: ``A qdd = gamma``, the equations of
        motion hold with the constraint force, and the null-space method agrees:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> model, cons, q = mech.model, mech.constraints, mech.q0
        >>> qd, tau = jnp.linalg.svd(cons.jacobian(q))[2][-1], jnp.zeros(3)  # A qd = 0
        >>> sol = kj.constrained.solve(model, cons, q, qd, tau)
        >>> bool(jnp.allclose(cons.jacobian(q) @ sol.qdd, cons.bias(q, qd)))
        True
        >>> bool(jnp.allclose(kj.inverse_dynamics(model, q, qd, sol.qdd), tau + sol.generalized_force))
        True
        >>> bool(jnp.allclose(kj.constrained.solve(model, cons, q, qd, tau, method="nullspace").qdd, sol.qdd))
        True
    """
    cons = _stack(constraints)
    if method not in SOLVE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {SOLVE_METHODS}")
    q, qd, tau = _state(model, cons, ("q", q), qd=qd, tau=tau)
    rtol = _default_rtol(q.dtype) if rtol is None else rtol
    # all option checks before any computation (eagerly, a failing call costs nothing)
    if method == "huang":
        _huang_constraints(cons, dt)
        if baumgarte is not None or independent is not None:
            raise ValueError("baumgarte and independent apply to 'lagrange' and 'nullspace', not 'huang'")
    elif method == "lagrange":
        if independent is not None:
            raise ValueError("independent applies to method='nullspace'")
    else:
        independent = _check_independent(independent, model.n_dof, cons.n_equations)
    m_q, factor, f = _forces(model, q, qd, tau, wrenches)
    if method == "huang":
        return _huang(cons, q, qd, factor, f, dt, rtol)
    gamma = _baumgarte(cons, q, qd, cons.bias(q, qd), baumgarte)
    if method == "lagrange":
        return _lagrange(cons, q, factor, f, gamma, rtol)
    return _nullspace(cons, q, m_q, f, gamma, rtol, independent)


# --------------------------------------------------------------------------------------------
# States on the constraint manifold
# --------------------------------------------------------------------------------------------


def check_state(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"] | None = None,
    *,
    tol: float = 1e-8,
    rtol: float | None = None,
    check_rank: bool = True,
) -> None:
    """Raise a clear ``ValueError`` if ``(q, qd)`` violates the constraints by more than ``tol``
    (suggesting :func:`project`), or, with ``check_rank``, if the constraint Jacobian is
    rank-deficient there (naming the rank: redundant constraints or a singular configuration).
    Eager: not for use under ``jit``.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> kj.constrained.check_state(mech.model, mech.constraints, mech.q0, jnp.zeros(3))  # silent: consistent
        >>> kj.constrained.check_state(mech.model, mech.constraints, mech.q0 + 0.01)
        Traceback (most recent call last):
            ...
        ValueError: q violates the constraints by ... (> tol = 1e-08); move it onto them first with ...
    """
    cons = _stack(constraints)
    q = _state(model, cons, ("q", q))[0]
    rtol = _default_rtol(q.dtype) if rtol is None else rtol
    a = np.asarray(cons.jacobian(q))
    s = np.linalg.svd(a, compute_uv=False)
    rank = int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
    m = cons.n_equations
    if check_rank and rank < m:
        raise ValueError(
            f"the {m} constraint equations have rank {rank} at this configuration: "
            f"{m - rank} of them {'is' if m - rank == 1 else 'are'} redundant here (or the configuration is singular). Remove "
            "redundant equations (e.g. use 'planar_point' instead of 'revolute' for a planar loop)."
        )
    phi = float(np.max(np.abs(np.asarray(cons.residual(q)))))
    if phi > tol:
        raise ValueError(
            f"q violates the constraints by {phi:.3g} (> tol = {tol:g}); move it onto them first with "
            "kronjax.constrained.project(model, constraints, q, qd)"
        )
    if qd is not None:
        qd = model.check_v(qd, "qd")
        v = float(np.max(np.abs(np.asarray(cons.velocity_residual(q, qd)))))
        if v > tol:
            raise ValueError(
                f"qd violates the velocity constraints by {v:.3g} (> tol = {tol:g}); make it admissible "
                "with kronjax.constrained.project(model, constraints, q, qd)"
            )


def _project(model, cons: Constraints, q, qd, iterations: int, rtol):
    def newton(_, x):
        u, s, vt = jnp.linalg.svd(cons.jacobian(x), full_matrices=False)
        return _integrate(model, x, -_pinv_solve(u, s, vt, cons.residual(x), rtol))

    q = jax.lax.fori_loop(0, iterations, newton, q)
    if qd is None:
        return q, None
    # The velocity correction that is smallest in kinetic energy: M-orthogonal to the admissible motions.
    factor = jsl.cho_factor(mass_matrix(model, q), lower=True)
    y = jsl.solve_triangular(factor[0], cons.jacobian(q).T, lower=True)
    u, s, vt = jnp.linalg.svd(y.T, full_matrices=False)
    mu = _pinv_solve(u, s**2, u.T, cons.velocity_residual(q, qd), rtol**2)
    qd = qd - jsl.cho_solve(factor, cons.jacobian(q).T @ mu)
    return q, qd


def project(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"] | None = None,
    *,
    iterations: int = 8,
    rtol: float | None = None,
) -> tuple[Float[Array, " nq"], Float[Array, " nv"] | None]:
    """Move ``q`` onto ``Phi(q) = 0`` and ``qd`` onto ``A qd = b``.

    Positions: ``iterations`` Gauss-Newton steps ``q <- q ⊕ (-Phi_q^+ Phi)`` (minimum-norm
    corrections in the velocity coordinates, ``q - Phi_q^+ Phi`` for 1-DoF joints; the
    pseudo-inverse keeps them defined at singular configurations). Velocities: the correction
    smallest in kinetic energy, ``qd -= M^-1 A^T (A M^-1 A^T)^+ (A qd - b)``. Pure and jit-able.

    Returns:
        ``(q, qd)`` (``qd`` is ``None`` when not given).

    Example:
        A disassembled four-bar, moving at a velocity the loop does not allow, put back on the
        constraints:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> q, qd = kj.constrained.project(mech.model, mech.constraints, mech.q0 + 0.01, jnp.ones(3))
        >>> bool(jnp.max(jnp.abs(mech.constraints.residual(q))) < 1e-12)
        True
        >>> bool(jnp.max(jnp.abs(mech.constraints.velocity_residual(q, qd))) < 1e-12)
        True
    """
    cons = _stack(constraints)
    q = _state(model, cons, ("q", q))[0]
    qd = None if qd is None else model.check_v(qd, "qd")
    rtol = _default_rtol(q.dtype) if rtol is None else rtol
    return _project(model, cons, q, qd, int(iterations), rtol)


# --------------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------------


class ConstrainedRollout(NamedTuple):
    """The result of :func:`simulate`: ``K = steps + 1`` states at ``ts``.

    Attributes:
        ts: ``(K,)`` times.
        q, qd: ``(K, nq)`` and ``(K, n)`` states (after projection when it is on).
        forces: ``(K - 1, m)`` the constraint forces of each step's first stage.
        residual: ``(K,)`` ``max |Phi(q)|`` (the position drift).
        velocity_residual: ``(K,)`` ``max |A qd - b|``.
        rank: ``(K - 1,)`` the rank reported by :func:`solve` at each step.

    Example:
        Five steps of 1 ms of the four-bar falling from rest (:func:`simulate`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> out = kj.constrained.simulate(mech.model, mech.constraints, mech.q0, jnp.zeros(3), dt=1e-3, steps=5, method="huang")
        >>> out.ts.shape, out.q.shape, out.qd.shape, out.forces.shape, out.residual.shape, out.rank.shape
        ((6,), (6, 3), (6, 3), (5, 2), (6,), (5,))
    """

    ts: Float[Array, " K"]
    q: Float[Array, "K nq"]
    qd: Float[Array, "K n"]
    forces: Float[Array, "K-1 m"]
    residual: Float[Array, " K"]
    velocity_residual: Float[Array, " K"]
    rank: Int[Array, " K-1"]


def _zero_torque(t, q, qd):
    return jnp.zeros_like(qd)


def simulate(
    model: Model,
    constraints,
    q0: Float[ArrayLike, " nq"],
    qd0: Float[ArrayLike, " nv"],
    torque: Callable | None = None,
    *,
    dt: float,
    steps: int,
    method: str = "lagrange",
    solver: diffrax.AbstractSolver | None = None,
    projection: bool = True,
    baumgarte: tuple[float, float] | None = None,
    wrenches: Wrench | Sequence[Wrench] | None = None,
    tol: float = 1e-8,
    rtol: float | None = None,
) -> ConstrainedRollout:
    """Simulate a constrained system with a fixed step ``dt`` for ``steps`` steps.

    ``"lagrange"`` and ``"nullspace"``: the index-1 ODE ``(qd, qdd(q, qd))`` advanced by one step
    of a diffrax Runge-Kutta ``solver`` (default ``diffrax.Tsit5()``). ``"huang"``: Huang's Taylor
    step, ``qd += qdd dt``, ``q += qd dt + qdd dt^2 / 2`` with ``qdd`` from :func:`solve`.
    With ``projection=True`` every step ends with :func:`project` (two Gauss-Newton iterations),
    which keeps the drift at round-off level.

    With free, spherical or planar joints ``q`` (``nq``) stays on its manifold: Huang's step is
    ``q ⊕ (qd dt + qdd dt^2 / 2)``, and a Runge-Kutta step is taken in local coordinates
    re-centred at ``q`` (as in :func:`kronjax.simulate.rollout`: the solver integrates ``(delta,
    qd)`` from ``(0, qd)`` with ``q(delta)`` the chart, its quaternions unit by construction).

    Args:
        torque: ``torque(t, q, qd) -> tau`` (``(n,)``), e.g. a controller from
            :mod:`kronjax.simulate`; ``None`` for no actuation.
        tol: the initial state must satisfy the constraints to ``tol``
            (:func:`check_state` raises otherwise; :func:`project` it first).

    Returns:
        A :class:`ConstrainedRollout`, with the drift at every step.

    Example:
        The four-bar (:func:`kronjax.models.four_bar`) falling from rest under gravity, five
        steps of 1 ms with Huang's step and projection (the default method is ``"lagrange"``):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> out = kj.constrained.simulate(mech.model, mech.constraints, mech.q0, jnp.zeros(3), dt=1e-3, steps=5, method="huang")
        >>> out.q.shape, out.forces.shape
        ((6, 3), (5, 2))
        >>> bool(jnp.max(out.residual) < 1e-12), bool(jnp.max(out.velocity_residual) < 1e-12)
        (True, True)
        >>> bool(out.qd[-1, 0] != 0)  # it moves
        True
    """
    cons = _stack(constraints)
    if method not in SOLVE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {SOLVE_METHODS}")
    q0, qd0 = _state(model, cons, ("q0", q0), qd0=qd0)
    steps = _count(steps, "steps")
    if isinstance(dt, jax.core.Tracer) or not float(dt) > 0:
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    if not isinstance(q0, jax.core.Tracer) and not isinstance(qd0, jax.core.Tracer):
        # Huang's step is defined where Phi_q loses rank; the other methods are not.
        check_state(model, cons, q0, qd0, tol=tol, rtol=rtol, check_rank=method != "huang")
    torque = _zero_torque if torque is None else torque
    if not callable(torque):
        raise TypeError(f"torque must be a callable torque(t, q, qd) -> tau, got {torque!r}")
    rtol_ = _default_rtol(q0.dtype) if rtol is None else rtol
    dt = jnp.asarray(dt, q0.dtype)

    def solution(t, q, qd):
        tau = jnp.asarray(torque(t, q, qd), q.dtype)
        return solve(
            model,
            cons,
            q,
            qd,
            tau,
            method,
            dt=dt if method == "huang" else None,
            baumgarte=baumgarte,
            wrenches=wrenches,
            rtol=rtol_,
        )

    if method == "huang":

        def advance(t, q, qd, _):
            sol = solution(t, q, qd)
            return _integrate(model, q, qd * dt + 0.5 * dt**2 * sol.qdd), qd + dt * sol.qdd, sol, None

        solver_state = None
    else:
        solver = diffrax.Tsit5() if solver is None else solver
        if not isinstance(solver, diffrax.AbstractSolver):
            raise TypeError(f"solver must be a diffrax solver, got {solver!r}")
        if model.has_multi_dof:
            joints = _moving_joints(model)

            def advance(t, q, qd, _):
                sol = solution(t, q, qd)

                def local(t, z, args):
                    delta, v = z
                    x = _chart(joints, q, delta)
                    return _chart_rate(joints, x, delta, v), solution(t, x, v).qdd

                term = diffrax.ODETerm(local)
                z0 = (jnp.zeros_like(qd), qd)
                # a fresh solver state: an FSAL stage of the previous step belongs to another chart
                state = solver.init(term, t, t + dt, z0, None)
                (delta1, qd1), _, _, _, _ = solver.step(term, t, t + dt, z0, None, state, made_jump=True)
                return _chart(joints, q, delta1), qd1, sol, None

            solver_state = None
        else:
            term = diffrax.ODETerm(lambda t, y, args: (y[1], solution(t, *y).qdd))
            solver_state = solver.init(term, 0.0, dt, (q0, qd0), None)

            def advance(t, q, qd, state):
                sol = solution(t, q, qd)
                (q1, qd1), _, _, state, _ = solver.step(term, t, t + dt, (q, qd), None, state, made_jump=projection)
                return q1, qd1, sol, state

    def step(carry, k):
        q, qd, state = carry
        t = k * dt
        q1, qd1, sol, state = advance(t, q, qd, state)
        if projection:
            q1, qd1 = _project(model, cons, q1, qd1, 2, rtol_)
        return (q1, qd1, state), (q1, qd1, sol.forces, sol.rank)

    _, (qs, qds, forces, ranks) = jax.lax.scan(step, (q0, qd0, solver_state), jnp.arange(steps, dtype=q0.dtype))
    qs = jnp.concatenate([q0[None], qs])
    qds = jnp.concatenate([qd0[None], qds])
    residual = jax.vmap(lambda q: jnp.max(jnp.abs(cons.residual(q))))(qs)
    velocity = jax.vmap(lambda q, qd: jnp.max(jnp.abs(cons.velocity_residual(q, qd))))(qs, qds)
    return ConstrainedRollout(jnp.arange(steps + 1, dtype=q0.dtype) * dt, qs, qds, forces, residual, velocity, ranks)
