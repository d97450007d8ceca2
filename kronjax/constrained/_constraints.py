"""Constraints in Pfaffian form: a single :class:`Constraint` (:func:`holonomic`, :func:`pfaffian`),
the stacked :class:`Constraints` of a model (``A(q)``, ``b(q)``, the drift ``gamma``, ``Phi_qq``) and a
:class:`Mechanism` (a model with its constraints)."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._deprecation import renamed_attribute, renamed_keywords
from ..calculus import khang_jacobian
from ..chain import Model
from ..configuration import unchecked_integrate


class Constraint(eqx.Module):
    """``m`` constraint equations on the configuration of a model (``nq`` numbers, ``n = nv``
    velocity coordinates; ``nq = n`` unless it has free, spherical or planar joints).

    Holonomic: ``residual(q) = Phi(q)``, and ``A = Phi_q``, ``b = 0``. Pfaffian (velocity level):
    ``A(q) v = b(q)``. Build one with :func:`holonomic`, :func:`pfaffian` or
    :func:`loop_closure`.

    Attributes:
        phi: ``q (nq,) -> Phi (m,)`` for a holonomic constraint, else ``None``.
        a: ``q (nq,) -> A (m, n)`` for a Pfaffian constraint, else ``None``.
        b: ``q -> b (m,)`` for a Pfaffian constraint (``None``: ``b = 0``).
        n_equations: ``m``.
        nv: ``n``, the number of velocity coordinates.
        description: what the constraint is, for error messages.
        space: the model whose configuration ``q`` is, when it has multi-DoF joints (its
            :func:`kronjax.integrate` is the chart of the derivatives); ``None``: ``q`` is
            ``n`` Euclidean coordinates.

    Example:
        A point ``(x, y)`` on the unit circle, ``Phi(q) = x^2 + y^2 - 1``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> circle = kj.constrained.holonomic(lambda q: jnp.array([q[0] ** 2 + q[1] ** 2 - 1.0]), 2)
        >>> circle.n_equations, circle.nv, circle.is_holonomic
        (1, 2, True)
        >>> bool(jnp.allclose(circle.phi(jnp.array([0.6, 0.8])), 0.0))
        True
    """

    phi: Callable | None
    a: Callable | None
    b: Callable | None
    n_equations: int = eqx.field(static=True)
    nv: int = eqx.field(static=True)
    description: str = eqx.field(static=True)
    space: Model | None = None

    n_dof = renamed_attribute("n_dof", "nv", "Constraint")

    @property
    def is_holonomic(self) -> bool:
        return self.phi is not None

    @property
    def nq(self) -> int:
        """Length of the configuration ``q``."""
        return self.nv if self.space is None else self.space.nq


def _probe(fn: Callable, n: int, what: str):
    try:
        return jax.eval_shape(fn, jax.ShapeDtypeStruct((n,), jnp.result_type(float)))
    except Exception as err:  # any failure to trace the user's function is reported with context
        raise TypeError(f"{what} must be a pure JAX function of q (shape ({n},)): {err}") from err


def _space(nv) -> tuple[int, Model | None]:
    """``(n, space)`` of a constraint from ``nv``: a positive integer, or a model (its ``nv``,
    and itself as the chart when it has multi-DoF joints)."""
    if isinstance(nv, Model):
        return nv.nv, (nv if nv.has_multi_dof else None)
    return positive_count(nv, "nv"), None


@renamed_keywords(n_dof="nv")
def holonomic(phi_fn: Callable, nv: int | Model, *, description: str = "holonomic constraint") -> Constraint:
    """Wrap a user's ``Phi(q) = 0`` (``q (nq,) -> (m,)``, traceable by JAX) as a constraint.

    ``nv``: the number of (Euclidean) coordinates, or the model whose configuration ``q`` is
    (required for a model with free, spherical or planar joints: ``Phi_q`` is then taken along
    its tangent space, ``m x nv``). ``Phi_q`` and ``gamma`` come from automatic differentiation
    of ``phi_fn``.

    Args:
        phi_fn: ``q (nq,) -> (m,)``: ``Phi(q)``, traceable by JAX.
        nv: the number of (Euclidean) coordinates, or the model whose configuration ``q`` is
            (required with free, spherical or planar joints).
        description: what the constraint is, for messages.

    Returns:
        A :class:`Constraint` of ``m`` rows.

    Example:
        The unit circle, ``Phi = x^2 + y^2 - 1``: ``Phi_q = 2 q^T`` and ``gamma = -Phi_qq (v ⊗ v)
        = -2 |v|^2`` (Huang eq. 1):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> circle = kj.constrained.holonomic(lambda q: jnp.array([q[0] ** 2 + q[1] ** 2 - 1.0]), 2, description="circle")
        >>> cons = kj.constrained.Constraints((circle,))
        >>> q, v = jnp.array([0.6, 0.8]), jnp.array([-0.8, 0.6])  # on the circle, moving along it
        >>> bool(np.allclose(cons.jacobian(q), [[1.2, 1.6]]))
        True
        >>> bool(np.allclose(cons.velocity_residual(q, v), 0.0)), bool(np.allclose(cons.bias(q, v), -2.0))
        (True, True)
    """
    if not callable(phi_fn):
        raise TypeError(f"phi_fn must be callable, got {phi_fn!r}")
    n, space = _space(nv)
    out = _probe(phi_fn, n if space is None else space.nq, "phi_fn")
    if getattr(out, "ndim", None) != 1 or out.shape[0] < 1:
        raise ValueError(f"phi_fn must return a vector (m,) with m >= 1, got shape {getattr(out, 'shape', None)}")
    return Constraint(phi_fn, None, None, int(out.shape[0]), n, description, space)


@renamed_keywords(n_dof="nv")
def pfaffian(
    a_fn: Callable, nv: int | Model, b_fn: Callable | None = None, *, description: str = "Pfaffian constraint"
) -> Constraint:
    """A velocity constraint ``A(q) v = b(q)`` (Parsa eq. 6); ``b_fn=None`` means ``b = 0``.

    ``a_fn``: ``q (nq,) -> (m, n)``; ``b_fn``: ``q -> (m,)``; ``nv`` as in :func:`holonomic`
    (``n = nv``). Pfaffian rows are not projected at position level (there is no ``Phi``) and are
    not supported by ``method="huang"``.

    Args:
        a_fn: ``q (nq,) -> (m, n)``: ``A(q)``.
        nv: as in :func:`holonomic`.
        b_fn: ``q -> (m,)``: ``b(q)``; ``None``: zero.
        description: what the constraint is, for messages.

    Returns:
        A :class:`Constraint` of ``m`` rows (velocity level only).

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
    n, space = _space(nv)
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


def positive_count(n, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    return int(n)


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
        >>> cons.n_equations, cons.nv
        (2, 3)
        >>> cons.residual(mech.q0).shape, cons.jacobian(mech.q0).shape, cons.hessian(mech.q0).shape
        ((2,), (2, 3), (2, 9))
    """

    parts: tuple[Constraint, ...]

    def __check_init__(self):
        if not self.parts:
            raise ValueError("need at least one constraint")
        sizes = {(c.nq, c.nv) for c in self.parts}
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
    def nv(self) -> int:
        """``n``, the number of velocity coordinates."""
        return self.parts[0].nv

    n_dof = renamed_attribute("n_dof", "nv", "Constraints")

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
        return (lambda delta: f(unchecked_integrate(space, q, delta))), jnp.zeros(space.nv, q.dtype)

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
        ``(i, j n + k) = d/d delta_k A[i, j](q ⊕ delta)``: ``gamma = -Phi_qq (v ⊗ v)`` for
        holonomic rows. (With multi-DoF joints it is not symmetric in ``(j, k)``: its
        antisymmetric part is the chart's Lie bracket, which ``v ⊗ v`` does not see.)"""
        return self._derivative(q, self.jacobian)

    def velocity_residual(self, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, " m"]:
        """``A(q) v - b(q)``."""
        rows = []
        for c in self.parts:
            if c.is_holonomic:
                g, origin = self._chart(q, c.phi)
                rows.append(jax.jvp(g, (origin,), (v.astype(origin.dtype),))[1])
            else:
                rows.append(c.a(q) @ v - (0.0 if c.b is None else c.b(q)))
        return jnp.concatenate(rows)

    def bias(self, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, " m"]:
        """``gamma`` of ``A vd = gamma``: ``-(A v - b)_q v`` (Huang eq. 1), i.e.
        ``-d^2/ds^2 Phi(q ⊕ s v)`` at ``s = 0`` for holonomic rows (module doc) and
        ``-d/ds (A v - b)(q ⊕ s v)`` for Pfaffian ones."""
        return -jnp.concatenate([self._rate(q, v, c) for c in self.parts])

    def _rate(self, q: Array, v: Array, c: Constraint) -> Array:
        """``d/ds (A v - b)(q ⊕ s v)`` at ``s = 0`` for the rows of ``c``."""
        if c.is_holonomic:
            g, origin = self._chart(q, c.phi)
            tangent = v.astype(origin.dtype)
            return jax.jvp(lambda x: jax.jvp(g, (x,), (tangent,))[1], (origin,), (tangent,))[1]
        g, origin = self._chart(q, lambda x: c.a(x) @ v - (0.0 if c.b is None else c.b(x)))
        return jax.jvp(g, (origin,), (v.astype(origin.dtype),))[1]


def _layout(model: Model) -> tuple:
    """The joints of a model as far as its configuration space is concerned (static)."""
    tree = model.kinematics
    return tuple(tree._own_kinds), tuple(tree.q_index), tuple(tree.v_index)


def stack_constraints(constraints) -> Constraints:
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
        >>> mech.model.nq, mech.constraints.n_equations, mech.mobility
        (3, 2, 1)
        >>> bool(jnp.max(jnp.abs(mech.constraints.residual(mech.q0))) < 1e-12)
        True
    """

    model: Model
    constraints: Constraints
    q0: Float[Array, " nq"]

    def __check_init__(self):
        check_space(self.model, self.constraints)
        if jnp.shape(self.q0) != (self.model.nq,):
            raise ValueError(f"q0 must have shape ({self.model.nq},) for this model, got {jnp.shape(self.q0)}")

    n_dof = renamed_attribute("n_dof", "mobility", "Mechanism")

    @property
    def mobility(self) -> int:
        """Degrees of freedom of the closed mechanism, ``nv - m`` (independent constraints)."""
        return self.model.nv - self.constraints.n_equations


def check_space(model: Model, cons: Constraints) -> None:
    """A clear error where the constraints are not written on the model's configuration space."""
    if cons.nv != model.nv:
        raise ValueError(f"constraints on {cons.nv} coordinates for a {model.nv}-DOF model")
    if cons.nq != model.nq or (cons.space is not None and _layout(cons.space) != _layout(model)):
        raise ValueError(
            f"constraints on configurations q of {cons.nq} numbers for a model with nq = {model.nq} "
            f"(or other free, spherical or planar joints): write them for this model (holonomic(phi, model))"
        )
