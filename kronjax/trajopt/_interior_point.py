"""The second-order solver of :mod:`kronjax.trajopt`: a primal-dual interior-point method with
second derivatives (Nocedal and Wright, *Numerical Optimization*, 2nd ed., ch. 19; the barrier update
and safeguards of IPOPT, Wächter and Biegler, Math. Program. 106, 2006).

The problem is ``minimise f(x) subject to c(x) <= 0, h(x) = 0``, ``x`` in ``R^n``, ``c`` in
``R^m``: here ``x`` the preconditioned free control points (and, with ``free_time``, the duration
relative to its initial guess), ``f`` the cost divided by its value at the initial guess, ``c`` the
limits relative to their size and the inequality constraints, ``h`` the equality constraints
(task-space targets). The equalities are written out below only where they add to the
inequality-only method. Slacks ``s > 0`` make the inequalities
``c(x) + s = 0``, and the barrier problem (N&W 19.4)::

    minimise  f(x) - mu sum_i log s_i   subject to  c(x) + s = 0

is solved inexactly for a decreasing ``mu``. Newton's method on its primal-dual conditions
``grad f + J^T lam = 0``, ``c + s = 0``, ``S lam = mu e`` (N&W 19.6) gives the step (N&W 19.12)
which, with ``ds`` and ``dlam`` eliminated, is one symmetric ``n x n`` system::

    (W + delta I + J^T Sigma J) dx = -(grad f + J^T (mu S^-1 e + Sigma (c + s))),    Sigma = S^-1 Lam
    ds = -(c + s) - J dx,        dlam = mu S^-1 e - lam - Sigma ds

With equalities, ``J_E dx = -h`` joins it, and their multipliers are ``y + dy = (J_E A^-1 J_E^T)^-1
(J_E A^-1 r + h)``, ``A`` the matrix and ``r`` the right-hand side above (the range-space method,
N&W sec. 16.2), then ``dx = A^-1 (r - J_E^T (y + dy))``; ``y`` moves with the primal step.

``W`` is the Hessian of the Lagrangian ``f + lam^T c`` and ``J = dc/dx``, both from one
forward-over-reverse pass (``jax.jacfwd`` of the ``vjp``) through a function of ``x`` that equals the
problem's in value and first derivatives at the current point: the problem with the torques
linearised at each sample, ``tau_k(x) ~
tau_k + A_k (u_k(x) - u_k)``, ``u_k = (q, v, vd)`` at sample ``k`` and ``A_k = d tau_k / d u_k``
from the analytical derivatives of the inverse dynamics. Its Hessian, the generalised Gauss-Newton
matrix, holds the exact curvature of the costs and constraints in ``tau``, ``q``, ``v``, ``vd``
and lacks only the curvature of the inverse dynamics, ``sum_k w_k . d^2 tau_k / d u_k^2`` (``w_k``
the torques' adjoint), which is partially separable: one ``3n x 3n`` block per sample (on a closed chain, whose
whole sample is linearised in the actuated joints' ``(q, v, vd, vdd)``, ``4n x 4n``), each kept
by a symmetric-rank-one update from the change of ``u_k`` and of ``A_k^T w_k`` over the last step
(partitioned quasi-Newton, Griewank and Toint 1982; N&W sec. 7.4 and eq. 6.24) and added to ``W``
where the sum stays positive definite. No second derivative of the dynamics is compiled: the
Panda's solver compiles in about 4 s instead of 7, and an iteration costs a third (one guess: 2.0 against 6.6 ms). With
``hessian="exact"`` each sample's block is exact instead: the λ-contracted Hessian of the inverse
dynamics with the torques' adjoint (:func:`~kronjax.inverse_dynamics_hessian`), and the matrix is
shifted where the sum is indefinite.

The system is solved by its eigendecomposition; where the matrix is not positive definite, ``delta = 1e-4 mean|diag W| - 2 lambda_min`` (inertia correction, N&W sec.
19.3; IPOPT's ``delta_w`` comes out within the same factor of ``-lambda_min``). The step lengths
keep ``s`` and ``lam`` positive (fraction to the boundary, N&W 19.9, ``tau = max(0.99, 1 - mu)``
capped at ``1 - 10 eps``, primal and dual apart); the primal one backtracks until the filter
accepts the trial point (W&B sec. 2.3): it must lower the infeasibility ``theta = |c + s|_1 + |h|_1`` or the barrier objective
``phi = f - mu sum log s`` enough, and not be dominated by an earlier pair ``(theta, phi)``; at a
nearly feasible point where the step is a good descent direction of ``phi`` (the switching
condition), Armijo's condition on ``phi`` instead. The filter starts anew with each ``mu``. (An
``l1`` merit function was tried first: its penalty made the steps 1/64 to 1/128 of Newton's near the
optimum of the two-link problem, where the filter takes full ones.) After each step the slacks are
reset to ``max(s, -c(x))`` and the multipliers kept within ``[mu / (k s), k mu / s]``, ``k = 1e10``
(W&B eq. 16). ``mu`` starts at ``barrier_init`` and drops to ``max(tol / (10 m), min(0.2 mu,
mu^1.5))`` whenever the barrier problem's scaled KKT error (W&B eq. 5) is at most ``10 mu`` (W&B
eq. 7). It stops when the KKT error of the original problem and the duality gap ``sum(s lam)``
(the cost's distance to the optimum, to first order) are at most ``tol`` and every constraint
holds to ``violation_tol``. The filter keeps its last 64 entries (a ring; W&B's keeps them all). There is no restoration phase: a line search that fails takes its shortest
step and starts a new filter.

A guess also stops where the cost, the constraints or their derivatives at the current point are
not finite (the report names the first such quantity), and where its violation has stayed above
``10 violation_tol`` and within 1 % of itself for 30 iterations (``_iteration._STALL``; stalled: the
problem is likely infeasible; the report says so and the guess returns its point of least violation).

The iterations run in one ``lax.while_loop`` over all the initial guesses at once; a guess that
has stopped stays put while the others go on.
"""

from __future__ import annotations

import functools
import itertools
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ._iteration import InteriorPointState, Settings, iteration, start
from ._linearisation import variables
from ._problem import Problem
from ._solver import CONVERGED, Progress, Solution, SolverReport, compile_clock, status_names


class InteriorPoint(eqx.Module):
    """A primal-dual interior-point method with second derivatives: the default solver of
    :func:`~kronjax.trajopt.optimize` (see the module docstring of
    ``kronjax.trajopt._interior_point`` for the algorithm).

    Args:
        tol: the KKT error and the duality gap of the scaled problem at which it stops (default
            ``1e-8`` in float64, ``1e-5`` in float32). The cost is normalised to 1 at the initial
            guess, so this is relative.
        violation_tol: the largest constraint violation, relative to the limit, of a converged
            guess.
        max_iterations: at most this many Newton steps per guess.
        barrier_init: the first barrier parameter ``mu`` of a cold start.
        warm_barrier: the first ``mu`` of a warm start (``optimize(..., init=previous_result)``),
            small so that the previous solution's active set is kept.
        hessian: ``"gauss-newton"`` (default): the inverse dynamics linearised at the samples,
            their own curvature by partitioned quasi-Newton updates; or ``"exact"``: exact
            Hessians of the Lagrangian, the same linearisation plus each sample's curvature from
            :func:`~kronjax.inverse_dynamics_hessian` (the trajectory-optimisation guide measures
            both). Both converge to the same optimum. A closed chain's problem
            (:func:`transcribe` with ``actuated=``) takes Gauss-Newton's only.

    Example:
        Settings other than the defaults, for ``trajopt.optimize(model, boundary, cost,
        solver=solver)`` (each setting is compiled into the solver):

        >>> from kronjax import trajopt
        >>> solver = trajopt.InteriorPoint(max_iterations=50)
        >>> solver.max_iterations, solver.violation_tol, solver.tol  # tol None: 1e-8 in float64, 1e-5 in float32
        (50, 1e-06, None)
        >>> trajopt.InteriorPoint(max_iterations=0)
        Traceback (most recent call last):
        ...
        ValueError: max_iterations must be a positive integer, got 0
    """

    tol: float | None = None
    violation_tol: float = 1e-6
    max_iterations: int = 200
    barrier_init: float = 0.1
    warm_barrier: float = 1e-6
    hessian: str = "gauss-newton"

    def __check_init__(self):
        if self.hessian not in ("gauss-newton", "exact"):
            raise ValueError(f"hessian must be 'gauss-newton' or 'exact', got {self.hessian!r}")
        if isinstance(self.max_iterations, bool) or not (isinstance(self.max_iterations, int) and self.max_iterations >= 1):
            raise ValueError(f"max_iterations must be a positive integer, got {self.max_iterations!r}")
        for name in ("violation_tol", "barrier_init", "warm_barrier"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.tol is not None and not self.tol > 0:
            raise ValueError(f"tol must be positive, got {self.tol!r}")

    def solve(self, problem: Problem, z0: Array, duration0: Array, warm: InteriorPointState | None, callback) -> Solution:
        """Solve ``problem`` from the guesses ``z0`` (``(G, m_free, n)``) and durations ``duration0``
        (``(G,)``, used where the duration is free); ``warm`` is the :class:`InteriorPointState` of
        an earlier solution (slacks, multipliers, scale)."""
        if problem.partition is not None and self.hessian == "exact":
            raise ValueError(
                "a closed chain's problem is solved with Gauss-Newton Hessians: InteriorPoint(hessian='gauss-newton')"
            )
        dtype = z0.dtype
        tol = self.tol if self.tol is not None else (1e-8 if jnp.finfo(dtype).bits >= 64 else 1e-5)
        is_warm = warm is not None
        if not is_warm:
            # placeholders of the warm state's shapes: a cold and a warm start run one compiled
            # program (a warm start after a cold one compiled anew before, 7 s on the Panda)
            c, h = problem._counts(z0[0])
            guesses = z0.shape[0]
            warm = InteriorPointState(
                np.ones((guesses, c), dtype),
                np.zeros((guesses, c), dtype),
                np.zeros((guesses, h), dtype),
                np.ones(guesses, dtype),
            )
        token = next(_tokens)
        _callbacks[token] = (callback, time.perf_counter())
        try:
            with compile_clock() as compile_seconds:
                z, duration, control_points, guesses, k, history_cost, history_violation = jax.block_until_ready(
                    _compiled(jax.default_backend())(
                        problem,
                        z0,
                        duration0,
                        warm,
                        jnp.asarray(is_warm),
                        self,
                        float(tol),
                        callback is not None,
                        jnp.asarray(token),
                    )
                )
        finally:
            del _callbacks[token]
        k = int(k)
        state = InteriorPointState(guesses.s, guesses.lam, guesses.y, guesses.scale)
        report = SolverReport(
            best=-1,
            cost=np.asarray(guesses.f * guesses.scale),
            violation=np.asarray(guesses.violation),
            converged=np.asarray(guesses.status) == CONVERGED,
            iterations=np.asarray(guesses.steps),
            outer_iterations=k,
            history_cost=np.asarray(history_cost)[: max(k, 1)],
            history_violation=np.asarray(history_violation)[: max(k, 1)],
            compile_time=compile_seconds(),
            wall_time=0.0,
            status=status_names(np.asarray(guesses.status)),
            failed_row=np.asarray(guesses.failed_row),
        )
        return Solution(z, duration, state, report, control_points)


# the callbacks of the solves in progress, by a token that the compiled solve hands back to
# ``jax.debug.callback`` (which runs on another thread): solves in several threads keep theirs apart
_callbacks: dict[int, tuple] = {}
_tokens = itertools.count()


def _report(token, k, steps, cost, violation, mu):
    callback, start = _callbacks.get(int(token), (None, 0.0))
    if callback is not None:
        callback(
            Progress(
                int(k), np.asarray(steps), np.asarray(cost), np.asarray(violation), np.asarray(mu), time.perf_counter() - start
            )
        )


def _solve(problem: Problem, z0, duration0, warm, is_warm, solver: InteriorPoint, tol: float, report: bool, token):
    """The whole solve: ``(z, duration, control_points, guesses, iterations, history_cost,
    history_violation)``."""
    dtype = z0.dtype
    count = z0.shape[0]
    x0 = jnp.einsum("ij,gjn->gin", problem.preconditioner_inverse.astype(dtype), z0).reshape(count, -1)
    if problem.free_time is not None:
        x0 = jnp.concatenate([x0, (duration0 / problem.boundary.duration.astype(dtype))[:, None]], axis=1)
    settings = Settings(tol, solver.violation_tol, solver.barrier_init, solver.warm_barrier, solver.hessian == "exact")
    guesses = jax.vmap(lambda x, w: start(problem, x, w, is_warm, settings))(x0, warm)
    history = jnp.zeros((solver.max_iterations, count), dtype)

    def cond(carry):
        guesses, k, _, _ = carry
        return (k < solver.max_iterations) & ~jnp.all(guesses.done)

    def body(carry):
        guesses, k, history_cost, history_violation = carry
        if count == 1:
            # one guess (a re-plan, the benchmark's solves) without vmap: batching the line search's
            # loop traced it again (0.45 s of the UR5's first call), and its conditionals stay
            # conditionals (under vmap both sides run)
            new = jax.tree.map(lambda a: a[None], iteration(problem, jax.tree.map(lambda a: a[0], guesses), is_warm, settings))
        else:
            new = jax.vmap(lambda g: iteration(problem, g, is_warm, settings))(guesses)
        new = jax.tree.map(lambda a, b: jnp.where(guesses.done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), guesses, new)
        cost = new.f * new.scale
        if report:
            jax.debug.callback(_report, token, k + 1, new.steps, cost, new.violation, new.mu)
        return new, k + 1, history_cost.at[k].set(cost), history_violation.at[k].set(new.violation)

    guesses, k, history_cost, history_violation = jax.lax.while_loop(cond, body, (guesses, jnp.asarray(0), history, history))
    z, duration = jax.vmap(lambda x: variables(problem, x))(guesses.x)
    duration = duration0 if duration is None else duration
    control_points = jax.vmap(lambda z, duration: problem.at_duration(duration).control_points(z))(z, duration)
    return z, duration, control_points, guesses, k, history_cost, history_violation


@functools.cache
def _compiled(backend: str):
    """:func:`_solve` compiled for ``backend``. On the CPU without XLA's fusion emitters: with them
    the solver compiles about 1.5x slower and runs no faster (the Panda's Hessian: 6.9 s against
    4.3 s to compile, 16.4 against 14.6 ms to run)."""
    options = {"xla_cpu_use_fusion_emitters": False} if backend == "cpu" else None
    return eqx.filter_jit(_solve, compiler_options=options)
