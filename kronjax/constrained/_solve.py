"""Accelerations and constraint forces: Lagrange multipliers (Huang eq. 1), Kane's null-space
projection (Parsa eqs. 8-11, 39-46) and Huang's reactions over a time step (Huang eqs. 2-4,
A1-A10): :func:`solve`, :func:`huang_system`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, ArrayLike, Float, Int

from .._deprecation import renamed_attribute, renamed_keywords
from ..calculus import khang_jacobian
from ..chain import Model
from ..dynamics import Wrench, inverse_dynamics, mass_matrix
from ._constraints import Constraints, check_space, stack_constraints

SOLVE_METHODS = ("lagrange", "nullspace", "huang")


class Solution(NamedTuple):
    """The result of :func:`solve`.

    Attributes:
        vd: ``(n,)`` joint accelerations (``n = nv``, the velocity coordinates).
        forces: ``(m,)`` constraint forces: the Lagrange multipliers ``lambda`` (``"lagrange"``,
            ``"nullspace"``) or Huang's reactions ``Q`` (``"huang"``). For a
            :func:`loop_closure` the rows of positions carry the force on body a in the base
            frame (body b receives the opposite).
        generalized_force: ``(n,)`` the constraint forces in joint space: ``A^T lambda`` or
            ``Z^T Q``; ``M vd + C v + g = tau + generalized_force``.
        rank: the numerical rank of the system that was solved (``A`` for ``"lagrange"`` and
            ``"nullspace"``, ``Phi_Q`` for ``"huang"``).

    Example:
        The four-bar released at rest (:func:`solve`); the generalized constraint force is
        ``A^T lambda``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> sol = kj.constrained.solve(mech.model, mech.constraints, mech.q0, jnp.zeros(3), jnp.zeros(3))
        >>> sol.vd.shape, sol.forces.shape, sol.generalized_force.shape, int(sol.rank)
        ((3,), (2,), (3,), 2)
        >>> bool(jnp.allclose(mech.constraints.jacobian(mech.q0).T @ sol.forces, sol.generalized_force))
        True
    """

    vd: Float[Array, " nv"]
    forces: Float[Array, " m"]
    generalized_force: Float[Array, " nv"]
    rank: Int[Array, ""]

    qdd = renamed_attribute("qdd", "vd", "Solution")


def default_rtol(dtype) -> float:
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


def pinv_solve(u, s, vt, rhs, rtol):
    """Minimum-norm least-squares solution of ``U diag(s) V^T x = rhs`` (singular values below
    ``rtol * s_max`` dropped)."""
    keep = s > rtol * s[0]
    inv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    return vt.T @ (inv * (u.T @ rhs))


def _forces(model, q, v, tau, wrenches):
    """``M``, its Cholesky factor and the free generalized force ``f = tau - C v - g + f_ext``."""
    m_q = mass_matrix(model, q)
    bias = inverse_dynamics(model, q, v, jnp.zeros_like(v), wrenches=wrenches)
    factor = jsl.cho_factor(m_q, lower=True)
    return m_q, factor, tau - bias


def _baumgarte(cons: Constraints, q, v, gamma, baumgarte):
    if baumgarte is None:
        return gamma
    alpha, beta = baumgarte
    return gamma - 2.0 * alpha * cons.velocity_residual(q, v) - beta**2 * cons.residual(q)


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
        particular = pinv_solve(u, s, vt[:m], gamma, rtol)
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
    vd = particular + basis @ ud
    lam = ainv_t(m_q @ vd - f)
    lam = _raise_if_deficient(lam, rank, m, "nullspace")
    return Solution(vd, lam, a.T @ lam, rank)


class HuangSystem(NamedTuple):
    """Huang's linear system for the reactions over one step, ``Phi_Q Q = -Psi`` (eqs. 4, 36, A9-A10).

    Attributes:
        phi_q: ``(m, m)`` ``Phi_Q = (Phi_q + Phi_qq (E ⊗ kappa)) M^-1 Z^T dt^2 / 2`` (the
            ``df/dQ`` of eqs. 36-39).
        psi: ``(m,)`` ``Psi = Phi(q) + Phi_q kappa + 1/2 Phi_qq (kappa ⊗ kappa)``, the
            constraint residual at ``t + dt`` without reactions.
        z: ``(m, n)`` ``Z``: the generalized force of the reactions is ``Z^T Q``.
        free_vd: ``(n,)`` ``M^-1 f``, the acceleration without reactions.

    Example:
        The four-bar at rest under gravity, a step of 1 ms (:func:`huang_system`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> system = kj.constrained.huang_system(mech.model, mech.constraints, mech.q0, jnp.zeros(3), jnp.zeros(3), 1e-3)
        >>> system.phi_q.shape, system.psi.shape, system.z.shape, system.free_vd.shape
        ((2, 2), (2,), (2, 3), (3,))
        >>> bool(jnp.allclose(system.z, mech.constraints.jacobian(mech.q0)))  # Z = Phi_q
        True
    """

    phi_q: Float[Array, "m m"]
    psi: Float[Array, " m"]
    z: Float[Array, "m n"]
    free_vd: Float[Array, " nv"]

    free_qdd = renamed_attribute("free_qdd", "free_vd", "HuangSystem")


def _huang_system(cons, q, v, factor, f, dt) -> HuangSystem:
    a0 = jsl.cho_solve(factor, f)
    kappa = v * dt + 0.5 * dt**2 * a0
    # the Taylor expansion of g(delta) = Phi(q ⊕ delta) about delta = 0 (the step is q ⊕ dq)
    g, origin = cons._chart(q, cons.residual)
    kappa = kappa.astype(origin.dtype)
    jac = khang_jacobian(g)
    z, dz = jax.jvp(jac, (origin,), (kappa,))
    phi_q = (z + dz) @ (0.5 * dt**2 * jsl.cho_solve(factor, z.T))  # Phi_q + Phi_qq (E ⊗ kappa)
    first = lambda x: jax.jvp(g, (x,), (kappa,))[1]
    first_value, second = jax.jvp(first, (origin,), (kappa,))
    return HuangSystem(phi_q, cons.residual(q) + first_value + 0.5 * second, z, a0)


@renamed_keywords(qd="v")
def huang_system(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    dt: Float[ArrayLike, ""],
    *,
    wrenches: Wrench | Sequence[Wrench] | None = None,
) -> HuangSystem:
    """The matrix ``Phi_Q`` and right-hand side ``Psi`` of Huang's formulation at ``(q, v)``
    for a step ``dt`` (see the module docstring); :func:`solve` with ``method="huang"`` solves it.
    Useful to inspect ``det Phi_Q`` or its conditioning at a singular configuration.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        constraints: a :class:`Constraint`, a :class:`Constraints` or a sequence of them.
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` velocity.
        tau: ``(nv,)`` joint forces.
        dt: ``()`` the step.
        wrenches: external loads (:func:`kronjax.generalized_forces`); ``None`` for none.

    Returns:
        A :class:`HuangSystem`: ``Phi_Q`` and ``Psi``.

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
    q, v, tau = validated_state(model, cons, ("q", q), v=v, tau=tau)
    _, factor, f = _forces(model, q, v, tau, wrenches)
    return _huang_system(cons, q, v, factor, f, dt)


def _huang_constraints(constraints, dt) -> Constraints:
    cons = stack_constraints(constraints)
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


def _huang(cons, q, v, factor, f, dt, rtol):
    system = _huang_system(cons, q, v, factor, f, dt)
    u, s, vt = jnp.linalg.svd(system.phi_q)
    reactions = pinv_solve(u, s, vt, -system.psi, rtol)
    gen = system.z.T @ reactions
    return Solution(system.free_vd + jsl.cho_solve(factor, gen), reactions, gen, _rank(s, rtol))


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


def validated_state(model: Model, cons: Constraints, q: tuple[str, ArrayLike], **velocities):
    """Checks of the model and constraints; ``q = (name, value)`` checked as a configuration
    ``(nq,)``, the ``velocities`` (``v``, ``tau``) as ``(nv,)``; returns them in that order."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    check_space(model, cons)
    if cons.n_equations >= model.nv + 1:
        raise ValueError(
            f"{cons.n_equations} constraint equations on {model.nv} coordinates: at most "
            f"{model.nv} independent equations are possible (remove redundant ones)"
        )
    return [model.check_q(q[1], q[0])] + [model.check_v(x, name) for name, x in velocities.items()]


@renamed_keywords(qd="v")
def solve(
    model: Model,
    constraints,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    method: str = "lagrange",
    *,
    dt: Float[ArrayLike, ""] | None = None,
    baumgarte: tuple[Float[ArrayLike, ""], Float[ArrayLike, ""]] | None = None,
    independent: Sequence[int] | None = None,
    wrenches: Wrench | Sequence[Wrench] | None = None,
    rtol: float | None = None,
) -> Solution:
    """Accelerations and constraint forces of a constrained system at ``(q, v)`` under ``tau``.

    Args:
        model: the (tree) model.
        constraints: a :class:`Constraint`, :class:`Constraints` or a sequence of them.
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` velocity.
        tau: ``(nv,)`` joint forces.
        method: ``"lagrange"`` (the KKT system, Huang eq. 1), ``"nullspace"`` (Kane's equations,
            Parsa eqs. 8-11, 39-46) or ``"huang"`` (Huang eqs. 2-4, appendix A); see the module
            docstring.
        dt: the step of Huang's formulation (required for ``"huang"``). Its ``vd`` is the
            constant acceleration over ``[t, t + dt]`` that satisfies the constraints at
            ``t + dt`` to second order, correcting the position and velocity errors at ``t``
            too; it differs from the instantaneous ``vd`` by ``O(dt)`` (on a consistent state
            it equals Lagrange's with Baumgarte gains ``alpha = 1/dt``,
            ``beta = sqrt(2)/dt`` up to ``O(dt)``).
        baumgarte: ``(alpha, beta)``: stabilisation ``A vd = gamma - 2 alpha (A v - b) -
            beta^2 Phi`` (``"lagrange"``, ``"nullspace"``).
        independent: for ``"nullspace"``, indices of ``n - m`` independent velocity coordinates
            (coordinate partitioning, ``B = [E; -A_d^-1 A_i]``); default: an orthonormal
            null-space basis from the SVD of ``A``.
        wrenches: external loads, as in :func:`kronjax.inverse_dynamics`.
        rtol: singular values below ``rtol`` times the largest count as zero (default
            ``eps ** 0.75``: ``1.8e-12`` in float64, ``6.4e-6`` in float32).

    Returns:
        A :class:`Solution` with ``vd``, the constraint forces, ``A^T lambda`` (or ``Z^T Q``)
        and the rank.

    Precision near a singular configuration (``kappa = cond(Phi_q)``, ``eps`` the machine
    epsilon), measured against the exact solution of the same float64 KKT system (Pinocchio's
    ``M`` and bias; ``tests/test_conditioning.py``) on a parallelogram four-bar approaching its
    flattened configuration (``kappa`` 4.3e8 to 4.3e11, ``cond`` of the KKT matrix 4e15 to 4e21):
    ``"lagrange"`` keeps ``vd`` and ``lambda`` to rounding level (1e-15 to 4e-14: the Schur
    complement is factorised through the SVD of ``L^-1 A^T``, never formed); ``"nullspace"`` keeps
    ``vd`` (1e-15) and loses up to ``kappa eps`` in ``lambda`` (2.6e-8 at 4.3e8, 3.6e-5 at
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
        vector of the null space of ``A``) under gravity: ``A vd = gamma``, the equations of
        motion hold with the constraint force, and the null-space method agrees:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> model, cons, q = mech.model, mech.constraints, mech.q0
        >>> v, tau = jnp.linalg.svd(cons.jacobian(q))[2][-1], jnp.zeros(3)  # A v = 0
        >>> sol = kj.constrained.solve(model, cons, q, v, tau)
        >>> bool(jnp.allclose(cons.jacobian(q) @ sol.vd, cons.bias(q, v)))
        True
        >>> bool(jnp.allclose(kj.inverse_dynamics(model, q, v, sol.vd), tau + sol.generalized_force))
        True
        >>> bool(jnp.allclose(kj.constrained.solve(model, cons, q, v, tau, method="nullspace").vd, sol.vd))
        True
    """
    cons = stack_constraints(constraints)
    if method not in SOLVE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {SOLVE_METHODS}")
    q, v, tau = validated_state(model, cons, ("q", q), v=v, tau=tau)
    rtol = default_rtol(q.dtype) if rtol is None else rtol
    # all option checks before any computation (eagerly, a failing call costs nothing)
    if method == "huang":
        _huang_constraints(cons, dt)
        if baumgarte is not None or independent is not None:
            raise ValueError("baumgarte and independent apply to 'lagrange' and 'nullspace', not 'huang'")
    elif method == "lagrange":
        if independent is not None:
            raise ValueError("independent applies to method='nullspace'")
    else:
        independent = _check_independent(independent, model.nv, cons.n_equations)
    m_q, factor, f = _forces(model, q, v, tau, wrenches)
    if method == "huang":
        return _huang(cons, q, v, factor, f, dt, rtol)
    gamma = _baumgarte(cons, q, v, cons.bias(q, v), baumgarte)
    if method == "lagrange":
        return _lagrange(cons, q, factor, f, gamma, rtol)
    return _nullspace(cons, q, m_q, f, gamma, rtol, independent)
