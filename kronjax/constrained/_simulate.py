"""Fixed-step simulation of a constrained system with projection and drift: :func:`simulate`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import diffrax
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from .._deprecation import renamed_attribute, renamed_keywords
from ..chain import Model
from ..configuration import chart, chart_rate, moving_joints, unchecked_integrate
from ..dynamics import Wrench
from ._constraints import positive_count, stack_constraints
from ._manifold import check_state, unchecked_project
from ._solve import SOLVE_METHODS, default_rtol, solve, validated_state


class ConstrainedRollout(NamedTuple):
    """The result of :func:`simulate`: ``K = steps + 1`` states at ``ts``.

    Attributes:
        ts: ``(K,)`` times.
        q, v: ``(K, nq)`` and ``(K, n)`` states (after projection when it is on).
        forces: ``(K - 1, m)`` the constraint forces of each step's first stage.
        residual: ``(K,)`` ``max |Phi(q)|`` (the position drift).
        velocity_residual: ``(K,)`` ``max |A v - b|``.
        rank: ``(K - 1,)`` the rank reported by :func:`solve` at each step.

    Example:
        Five steps of 1 ms of the four-bar falling from rest (:func:`simulate`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> mech = kj.models.four_bar()
        >>> out = kj.constrained.simulate(mech.model, mech.constraints, mech.q0, jnp.zeros(3), dt=1e-3, steps=5, method="huang")
        >>> out.ts.shape, out.q.shape, out.v.shape, out.forces.shape, out.residual.shape, out.rank.shape
        ((6,), (6, 3), (6, 3), (5, 2), (6,), (5,))
    """

    ts: Float[Array, " K"]
    q: Float[Array, "K nq"]
    v: Float[Array, "K n"]
    forces: Float[Array, "K-1 m"]
    residual: Float[Array, " K"]
    velocity_residual: Float[Array, " K"]
    rank: Int[Array, " K-1"]

    qd = renamed_attribute("qd", "v", "ConstrainedRollout")


def _zero_torque(t, q, v):
    return jnp.zeros_like(v)


@renamed_keywords(qd0="v0")
def simulate(
    model: Model,
    constraints,
    q0: Float[ArrayLike, " nq"],
    v0: Float[ArrayLike, " nv"],
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

    ``"lagrange"`` and ``"nullspace"``: the index-1 ODE ``(v, vd(q, v))`` advanced by one step
    of a diffrax Runge-Kutta ``solver`` (default ``diffrax.Tsit5()``). ``"huang"``: Huang's Taylor
    step, ``v += vd dt``, ``q += v dt + vd dt^2 / 2`` with ``vd`` from :func:`solve`.
    With ``projection=True`` every step ends with :func:`project` (two Gauss-Newton iterations),
    which keeps the drift at round-off level.

    With free, spherical or planar joints ``q`` (``nq``) stays on its manifold: Huang's step is
    ``q ⊕ (v dt + vd dt^2 / 2)``, and a Runge-Kutta step is taken in local coordinates
    re-centred at ``q`` (as in :func:`kronjax.simulate.rollout`: the solver integrates ``(delta,
    v)`` from ``(0, v)`` with ``q(delta)`` the chart, its quaternions unit by construction).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        constraints: a :class:`Constraint`, :class:`Constraints` or a sequence of them.
        q0: ``(nq,)`` the initial configuration (on the constraints).
        v0: ``(nv,)`` the initial velocity.
        torque: ``torque(t, q, v) -> tau`` (``(n,)``), e.g. a controller from
            :mod:`kronjax.simulate`; ``None`` for no actuation.
        dt: the fixed step.
        steps: the number of steps.
        method: as in :func:`solve` (``"lagrange"``, ``"nullspace"``, ``"huang"``).
        solver: the diffrax Runge-Kutta solver of each step; ``None``: ``diffrax.Tsit5()``.
        projection: project the state back onto the constraints after every step (:func:`project`).
        baumgarte: ``(alpha, beta)`` stabilisation gains, as in :func:`solve`.
        wrenches: external loads, as in :func:`kronjax.inverse_dynamics`.
        tol: the initial state must satisfy the constraints to ``tol``
            (:func:`check_state` raises otherwise; :func:`project` it first).
        rtol: as in :func:`solve`.

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
        >>> bool(out.v[-1, 0] != 0)  # it moves
        True
    """
    cons = stack_constraints(constraints)
    if method not in SOLVE_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {SOLVE_METHODS}")
    q0, v0 = validated_state(model, cons, ("q0", q0), v0=v0)
    steps = positive_count(steps, "steps")
    if isinstance(dt, jax.core.Tracer) or not float(dt) > 0:
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    if not isinstance(q0, jax.core.Tracer) and not isinstance(v0, jax.core.Tracer):
        # Huang's step is defined where Phi_q loses rank; the other methods are not.
        check_state(model, cons, q0, v0, tol=tol, rtol=rtol, check_rank=method != "huang")
    torque = _zero_torque if torque is None else torque
    if not callable(torque):
        raise TypeError(f"torque must be a callable torque(t, q, v) -> tau, got {torque!r}")
    rtol_ = default_rtol(q0.dtype) if rtol is None else rtol
    dt = jnp.asarray(dt, q0.dtype)

    def solution(t, q, v):
        tau = jnp.asarray(torque(t, q, v), q.dtype)
        return solve(
            model,
            cons,
            q,
            v,
            tau,
            method,
            dt=dt if method == "huang" else None,
            baumgarte=baumgarte,
            wrenches=wrenches,
            rtol=rtol_,
        )

    if method == "huang":

        def advance(t, q, v, _):
            sol = solution(t, q, v)
            return unchecked_integrate(model, q, v * dt + 0.5 * dt**2 * sol.vd), v + dt * sol.vd, sol, None

        solver_state = None
    else:
        solver = diffrax.Tsit5() if solver is None else solver
        if not isinstance(solver, diffrax.AbstractSolver):
            raise TypeError(f"solver must be a diffrax solver, got {solver!r}")
        if model.has_multi_dof:
            joints = moving_joints(model)

            def advance(t, q, v, _):
                sol = solution(t, q, v)

                def local(t, z, args):
                    delta, rate = z
                    x = chart(joints, q, delta)
                    return chart_rate(joints, x, delta, rate), solution(t, x, rate).vd

                term = diffrax.ODETerm(local)
                z0 = (jnp.zeros_like(v), v)
                # a fresh solver state: an FSAL stage of the previous step belongs to another chart
                state = solver.init(term, t, t + dt, z0, None)
                (delta1, qd1), _, _, _, _ = solver.step(term, t, t + dt, z0, None, state, made_jump=True)
                return chart(joints, q, delta1), qd1, sol, None

            solver_state = None
        else:
            term = diffrax.ODETerm(lambda t, y, args: (y[1], solution(t, *y).vd))
            solver_state = solver.init(term, 0.0, dt, (q0, v0), None)

            def advance(t, q, v, state):
                sol = solution(t, q, v)
                (q1, qd1), _, _, state, _ = solver.step(term, t, t + dt, (q, v), None, state, made_jump=projection)
                return q1, qd1, sol, state

    def step(carry, k):
        q, v, state = carry
        t = k * dt
        q1, qd1, sol, state = advance(t, q, v, state)
        if projection:
            q1, qd1 = unchecked_project(model, cons, q1, qd1, 2, rtol_)
        return (q1, qd1, state), (q1, qd1, sol.forces, sol.rank)

    _, (qs, qds, forces, ranks) = jax.lax.scan(step, (q0, v0, solver_state), jnp.arange(steps, dtype=q0.dtype))
    qs = jnp.concatenate([q0[None], qs])
    qds = jnp.concatenate([v0[None], qds])
    residual = jax.vmap(lambda q: jnp.max(jnp.abs(cons.residual(q))))(qs)
    velocity = jax.vmap(lambda q, v: jnp.max(jnp.abs(cons.velocity_residual(q, v))))(qs, qds)
    return ConstrainedRollout(jnp.arange(steps + 1, dtype=q0.dtype) * dt, qs, qds, forces, residual, velocity, ranks)
