"""States on the constraint manifold: :func:`check_state` and :func:`project` (Gauss-Newton onto
``Phi(q) = 0`` and ``A v = b``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords
from ..chain import Model
from ..configuration import unchecked_integrate
from ..dynamics import mass_matrix
from ._constraints import Constraints, stack_constraints
from ._solve import default_rtol, pinv_solve, validated_state


@renamed_keywords(qd="v")
def check_state(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"] | None = None,
    *,
    tol: float = 1e-8,
    rtol: float | None = None,
    check_rank: bool = True,
) -> None:
    """Raise a clear ``ValueError`` if ``(q, v)`` violates the constraints by more than ``tol``
    (suggesting :func:`project`), or, with ``check_rank``, if the constraint Jacobian is
    rank-deficient there (naming the rank: redundant constraints or a singular configuration).
    Eager: not for use under ``jit``.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        constraints: a :class:`Constraint`, a :class:`Constraints` or a sequence of them.
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` velocity, or ``None`` (positions only).
        tol: the largest violation accepted (positions, and velocities).
        rtol: singular values of the constraint Jacobian below ``rtol`` times the largest count as
            zero; ``None``: ``eps^0.75`` of the dtype.
        check_rank: also refuse a rank-deficient constraint Jacobian.

    Returns:
        ``None``; raises ``ValueError`` as above.

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
    cons = stack_constraints(constraints)
    q = validated_state(model, cons, ("q", q))[0]
    rtol = default_rtol(q.dtype) if rtol is None else rtol
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
            "kronjax.constrained.project(model, constraints, q, v)"
        )
    if v is not None:
        v = model.check_v(v, "v")
        violation = float(np.max(np.abs(np.asarray(cons.velocity_residual(q, v)))))
        if violation > tol:
            raise ValueError(
                f"v violates the velocity constraints by {violation:.3g} (> tol = {tol:g}); make it admissible "
                "with kronjax.constrained.project(model, constraints, q, v)"
            )


def unchecked_project(model, cons: Constraints, q, v, iterations: int, rtol):
    def newton(_, x):
        u, s, vt = jnp.linalg.svd(cons.jacobian(x), full_matrices=False)
        return unchecked_integrate(model, x, -pinv_solve(u, s, vt, cons.residual(x), rtol))

    q = jax.lax.fori_loop(0, iterations, newton, q)
    if v is None:
        return q, None
    # The velocity correction that is smallest in kinetic energy: M-orthogonal to the admissible motions.
    factor = jsl.cho_factor(mass_matrix(model, q), lower=True)
    y = jsl.solve_triangular(factor[0], cons.jacobian(q).T, lower=True)
    u, s, vt = jnp.linalg.svd(y.T, full_matrices=False)
    mu = pinv_solve(u, s**2, u.T, cons.velocity_residual(q, v), rtol**2)
    v = v - jsl.cho_solve(factor, cons.jacobian(q).T @ mu)
    return q, v


@renamed_keywords(qd="v")
def project(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"] | None = None,
    *,
    iterations: int = 8,
    rtol: float | None = None,
) -> tuple[Float[Array, " nq"], Float[Array, " nv"] | None]:
    """Move ``q`` onto ``Phi(q) = 0`` and ``v`` onto ``A v = b``.

    Positions: ``iterations`` Gauss-Newton steps ``q <- q ⊕ (-Phi_q^+ Phi)`` (minimum-norm
    corrections in the velocity coordinates, ``q - Phi_q^+ Phi`` for 1-DoF joints; the
    pseudo-inverse keeps them defined at singular configurations). Velocities: the correction
    smallest in kinetic energy, ``v -= M^-1 A^T (A M^-1 A^T)^+ (A v - b)``. Pure and jit-able.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        constraints: a :class:`Constraint`, a :class:`Constraints` or a sequence of them.
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` velocity, or ``None`` (positions only).
        iterations: the number of Gauss-Newton steps on the positions.
        rtol: singular values of the constraint Jacobian below ``rtol`` times the largest count as
            zero; ``None``: ``eps^0.75`` of the dtype.

    Returns:
        ``(q, v)`` (``v`` is ``None`` when not given).

    Example:
        A disassembled four-bar, moving at a velocity the loop does not allow, put back on the
        constraints:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> q, v = kj.constrained.project(mech.model, mech.constraints, mech.q0 + 0.01, jnp.ones(3))
        >>> bool(jnp.max(jnp.abs(mech.constraints.residual(q))) < 1e-12)
        True
        >>> bool(jnp.max(jnp.abs(mech.constraints.velocity_residual(q, v))) < 1e-12)
        True
    """
    cons = stack_constraints(constraints)
    q = validated_state(model, cons, ("q", q))[0]
    v = None if v is None else model.check_v(v, "v")
    rtol = default_rtol(q.dtype) if rtol is None else rtol
    return unchecked_project(model, cons, q, v, int(iterations), rtol)
