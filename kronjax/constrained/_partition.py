"""Coordinate partitioning of a closed chain (Wehage and Haug 1982; Parsa eqs. 39-46 with a
coordinate basis): :func:`partition` splits the coordinates into independent ones, which describe
every motion, and dependent ones, which the constraints determine; :class:`CoordinatePartition`
maps the independent motion to the whole one and splits the generalized forces into the torques
of the independent coordinates and the constraint forces.

With ``A = Phi_q = [A_i, A_d]`` (columns of the independent and of the dependent coordinates) and
``A_d`` invertible, the admissible velocities are ``v = B v_i`` with ``B = [I; -A_d^-1 A_i]``
(rows in coordinate order), the accelerations ``vd = B vd_i + [0; A_d^-1 gamma]``, and where
``M vd + C v + g = S^T tau_i + A^T lambda`` (the independent coordinates actuated):

    lambda = A_d^-T Q_d,   tau_i = B^T Q = Q_i - A_i^T lambda,   Q = M vd + C v + g.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..configuration import configuration_rate, moving_joints, one_dof_coordinates, unchecked_integrate
from ._constraints import Constraints, Mechanism
from ._solve import default_rtol


class CoordinatePartition(eqx.Module):
    """A closed chain's coordinates split into ``k`` independent ones (1-DoF joints) and ``m``
    dependent ones (``k + m = nv``, ``m`` the constraint equations), from :func:`partition`.

    Attributes:
        model, constraints, q0: the :class:`Mechanism`'s (the model and constraints in ``q0``'s dtype).
        independent: the velocity indices of the independent coordinates (static).
        dependent: the velocity indices of the others, in coordinate order (static).
        independent_q: the configuration indices of the independent coordinates (static).
        tolerance: ``|Phi|`` (inf-norm) above which :meth:`configuration` has not assembled.
        iterations: the most Newton steps of :meth:`configuration`.

    Example:
        The four-bar's crank as its independent coordinate; the rocker and coupler follow:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> four_bar = kj.constrained.partition(kj.models.four_bar(), ("crank",))
        >>> four_bar.independent, four_bar.dependent
        ((0,), (1, 2))
        >>> q = four_bar.configuration(jnp.array([0.3]))
        >>> bool(jnp.max(jnp.abs(four_bar.constraints.residual(q))) < 1e-12), float(q[0])
        (True, 0.3)
    """

    model: Model
    constraints: Constraints
    q0: Float[Array, " nq"]
    independent: tuple[int, ...] = eqx.field(static=True)
    dependent: tuple[int, ...] = eqx.field(static=True)
    independent_q: tuple[int, ...] = eqx.field(static=True)
    tolerance: float = eqx.field(static=True)
    iterations: int = eqx.field(static=True)

    def blocks(self, q: Float[Array, " nq"]) -> tuple[Float[Array, "m k"], tuple]:
        """``A_i`` and the LU factor of ``A_d`` at ``q`` (``jax.scipy.linalg.lu_factor``'s), which
        :meth:`velocity`, :meth:`acceleration` and :meth:`actuation` share."""
        a = self.constraints.jacobian(q)
        return a[:, jnp.asarray(self.independent)], jsl.lu_factor(a[:, jnp.asarray(self.dependent)])

    def _scatter(self, independent: Array, dependent: Array) -> Array:
        """The ``(nv, ...)`` array with these rows at the independent and dependent indices."""
        out = jnp.zeros((self.model.nv, *independent.shape[1:]), independent.dtype)
        return out.at[jnp.asarray(self.independent)].set(independent).at[jnp.asarray(self.dependent)].set(dependent)

    def basis(self, q: Float[Array, " nq"]) -> Float[Array, "nv k"]:
        """``B = [I; -A_d^-1 A_i]`` (rows in coordinate order): ``v = B v_i``, ``A B = 0``."""
        a_i, lu = self.blocks(q)
        return self._scatter(jnp.eye(len(self.independent), dtype=q.dtype), -jsl.lu_solve(lu, a_i))

    def configuration(
        self, q_independent: Float[ArrayLike, " k"], guess: Float[ArrayLike, " nq"] | None = None
    ) -> Float[Array, " nq"]:
        """The assembled configuration whose independent coordinates are ``q_independent``: Newton's
        method on ``Phi(q) = 0`` in the dependent coordinates, ``q <- q ⊕ [0; -A_d^-1 Phi]``, from
        ``guess`` (default ``q0``; the assembly mode Newton's method converges to from it, the
        nearest for a guess near enough). Differentiable in ``q_independent`` (to any order): its
        derivative is ``B`` (the implicit function theorem), not that of the iterations; not in
        the model's or the constraints' parameters (a tangent there is an error).

        Args:
            q_independent: ``(k,)`` the independent coordinates.
            guess: ``(nq,)`` where the iterations start (its independent coordinates are replaced).

        Returns:
            ``(nq,)`` in ``q0``'s dtype; NaN where ``|Phi|`` is still above ``tolerance`` after ``iterations`` steps
            (no assembly near the guess: a configuration the closure cannot reach, or past a
            singularity of ``A_d``).
        """
        dtype = self.q0.dtype  # the tolerance is this dtype's
        q_independent = jnp.asarray(q_independent, dtype)
        guess = self.q0 if guess is None else jnp.asarray(guess, dtype)
        return _assemble(q_independent, guess, partition=self)

    def velocity(self, q: Float[Array, " nq"], v_independent: Float[Array, " k"], *, blocks=None) -> Float[Array, " nv"]:
        """``v = B v_i``: the velocity of every coordinate, admissible (``A v = 0``). (``blocks``:
        ``A_i`` and ``A_d``'s LU factor at ``q`` where they are at hand.)"""
        a_i, lu = self.blocks(q) if blocks is None else blocks
        return self._scatter(v_independent, -jsl.lu_solve(lu, a_i @ v_independent))

    def acceleration(
        self, q: Float[Array, " nq"], v: Float[Array, " nv"], vd_independent: Float[Array, " k"], *, blocks=None
    ) -> Float[Array, " nv"]:
        """``vd = B vd_i + [0; A_d^-1 gamma]``, so that ``A vd = gamma`` (Huang eq. 1); ``v``
        admissible. (``blocks`` as in :meth:`velocity`.)"""
        a_i, lu = self.blocks(q) if blocks is None else blocks
        gamma = self.constraints.bias(q, v)
        return self._scatter(vd_independent, jsl.lu_solve(lu, gamma - a_i @ vd_independent))

    def actuation(
        self, q: Float[Array, " nq"], generalized_force: Float[Array, " nv"], *, blocks=None
    ) -> tuple[Float[Array, " k"], Float[Array, " m"]]:
        """Split ``Q = M vd + C v + g`` (the tree's inverse dynamics) into ``S^T tau_i + A^T lambda``.

        Args:
            q: ``(nq,)`` an assembled configuration.
            generalized_force: ``(nv,)`` ``Q``, e.g. :func:`kronjax.inverse_dynamics` of the tree.
            blocks: as in :meth:`velocity`.

        Returns:
            ``(tau_i, lambda)``: ``(k,)`` the forces of the independent coordinates (the actuators'
            torques where they are the actuated joints) and ``(m,)`` the constraint forces, the
            multipliers of the constraint rows (``A^T lambda`` in generalized coordinates, the sign
            of :func:`solve`).
        """
        a_i, lu = self.blocks(q) if blocks is None else blocks
        multipliers = jsl.lu_solve(lu, generalized_force[jnp.asarray(self.dependent)], trans=1)
        return generalized_force[jnp.asarray(self.independent)] - a_i.T @ multipliers, multipliers


@eqx.filter_custom_jvp
def _assemble(q_independent, guess, *, partition: CoordinatePartition):
    cons, model = partition.constraints, partition.model
    tolerance = jnp.asarray(partition.tolerance, guess.dtype)

    def newton(state):
        q, residual, k = state
        _, lu = partition.blocks(q)
        q = unchecked_integrate(model, q, partition._scatter(jnp.zeros_like(q_independent), -jsl.lu_solve(lu, residual)))
        return q, cons.residual(q), k + 1

    def running(state):
        _, residual, k = state
        return (jnp.max(jnp.abs(residual)) > tolerance) & (k < partition.iterations)

    q = guess.at[jnp.asarray(partition.independent_q)].set(q_independent)
    q, residual, _ = jax.lax.while_loop(running, newton, (q, cons.residual(q), 0))
    return jnp.where(jnp.max(jnp.abs(residual)) <= tolerance, q, jnp.nan)


@_assemble.def_jvp
def _assemble_jvp(primals, tangents, *, partition: CoordinatePartition):
    q_independent, guess = primals
    q = _assemble(q_independent, guess, partition=partition)
    if tangents[0] is None:
        return q, None
    return q, configuration_rate(moving_joints(partition.model), q, partition.basis(q) @ tangents[0])


def _coordinates(model: Model, independent) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The velocity and configuration indices of the named joints or coordinate indices, each a
    1-DoF coordinate."""
    if isinstance(independent, (str, int, np.integer)):
        independent = (independent,)
    one_dof = dict(one_dof_coordinates(model))
    v_index = []
    for item in independent:
        if isinstance(item, str):
            index = model.velocity_index(item)
            if index.stop - index.start != 1:
                raise ValueError(f"independent coordinates must be 1-DoF joints; {item!r} has {index.stop - index.start}")
            item = index.start
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)) or not 0 <= item < model.nv:
            raise ValueError(f"independent coordinates are joint names or coordinate indices in 0..{model.nv - 1}, got {item!r}")
        if int(item) not in one_dof:
            raise ValueError(f"independent coordinates must be 1-DoF joints; coordinate {item} belongs to a multi-DoF joint")
        v_index.append(int(item))
    if len(set(v_index)) != len(v_index):
        raise ValueError(f"independent coordinates repeated: {independent!r}")
    if v_index != sorted(v_index):
        names = [model.coordinate_names[i] for i in sorted(v_index)]
        raise ValueError(f"name the independent coordinates in coordinate order, {names}: their values come in that order")
    return tuple(v_index), tuple(one_dof[i] for i in v_index)


def partition(
    mechanism: Mechanism,
    independent: Sequence[str | int] | str | int,
    *,
    iterations: int = 30,
    tolerance: float | None = None,
) -> CoordinatePartition:
    """Split a mechanism's coordinates into independent and dependent ones (coordinate
    partitioning, module doc), checked at the mechanism's assembled configuration ``q0``.

    Args:
        mechanism: a :class:`Mechanism` with holonomic constraints (loop closures).
        independent: the joint names (or velocity indices) of ``nv - m`` 1-DoF coordinates, in
            coordinate order, e.g. the actuated joints of a parallel robot.
        iterations: the most Newton steps of :meth:`CoordinatePartition.configuration`.
        tolerance: its assembly tolerance on ``|Phi|``, in the constraints' units (default
            ``eps^0.75`` of ``q0``'s dtype: ``1.8e-12`` in float64, ``6.4e-6`` in float32).

    Returns:
        The :class:`CoordinatePartition`.

    Raises:
        ValueError: Pfaffian (non-holonomic) constraints; ``q0`` not assembled; redundant
            constraints (``Phi_q`` of rank below ``m`` at ``q0``: the closure forces are not
            unique); a number of independent coordinates other than ``nv - m``; coordinates that
            cannot be independent (``A_d`` singular at ``q0``).

    Example:
        The Stewart platform's three motors as the independent coordinates (``12 - 9 = 3``):

        >>> import kronjax as kj
        >>> stewart = kj.constrained.partition(kj.models.stewart3(), ("J7", "J8", "J9"))
        >>> stewart.independent, len(stewart.dependent)
        ((0, 1, 2), 9)
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"partition needs a kronjax.constrained.Mechanism, got {type(mechanism).__name__}")
    model, cons, q0 = mechanism.model, mechanism.constraints, jnp.asarray(mechanism.q0)
    if not cons.is_holonomic:
        raise ValueError("coordinate partitioning needs holonomic constraints (loop closures); these include Pfaffian rows")
    v_index, q_index = _coordinates(model, independent)
    m, nv = cons.n_equations, model.nv
    tolerance = default_rtol(q0.dtype) if tolerance is None else float(tolerance)
    residual = float(jnp.max(jnp.abs(cons.residual(q0))))
    if not residual <= max(tolerance, 1e-6):
        raise ValueError(f"the mechanism's q0 is not assembled (|Phi| = {residual:.3g}): kronjax.constrained.project it first")
    a = np.asarray(cons.jacobian(q0))
    s = np.linalg.svd(a, compute_uv=False)
    rtol = default_rtol(q0.dtype)
    rank = int(np.sum(s > s[0] * rtol)) if s.size else 0
    if rank < m:
        raise ValueError(
            f"the closed chain's {m} constraint equations are redundant (Phi_q has rank {rank} at q0): "
            "the closure forces are not unique; remove the redundant equations (e.g. a planar loop closed "
            "by 'planar_point' rows, not 'spherical' ones)"
        )
    if len(v_index) != nv - m:
        raise ValueError(
            f"the mechanism has {nv - m} degrees of freedom ({nv} coordinates, {m} equations): name {nv - m} independent coordinates, got {len(v_index)}"
        )
    dependent = tuple(i for i in range(nv) if i not in v_index)
    a_d = a[:, dependent]
    s_d = np.linalg.svd(a_d, compute_uv=False)
    if s_d[-1] <= s[0] * rtol:
        names = [model.coordinate_names[i] for i in v_index]
        raise ValueError(
            f"the coordinates {names} cannot be independent at q0: the others are not determined by them (A_d is singular)"
        )
    # the model and the constraints in q0's dtype, so that a float32 mechanism stays float32
    model, cons = (jax.tree.map(lambda x: x.astype(q0.dtype) if eqx.is_inexact_array(x) else x, tree) for tree in (model, cons))
    return CoordinatePartition(model, cons, q0, v_index, dependent, q_index, tolerance, int(iterations))
