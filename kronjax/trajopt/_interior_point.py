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
problem's in value and first derivatives at the current point: by default
(``hessian="gauss-newton"``) the problem with the torques linearised at each sample, ``tau_k(x) ~
tau_k + A_k (u_k(x) - u_k)``, ``u_k = (q, qd, qdd)`` at sample ``k`` and ``A_k = d tau_k / d u_k``
from the analytical derivatives of the inverse dynamics. Its Hessian, the generalised Gauss-Newton
matrix, holds the exact curvature of the costs and constraints in ``tau``, ``q``, ``qd``, ``qdd``
and lacks only the curvature of the inverse dynamics, ``sum_k w_k . d^2 tau_k / d u_k^2`` (``w_k``
the torques' adjoint), which is partially separable: one ``3n x 3n`` block per sample, each kept
by a symmetric-rank-one update from the change of ``u_k`` and of ``A_k^T w_k`` over the last step
(partitioned quasi-Newton, Griewank and Toint 1982; N&W sec. 7.4 and eq. 6.24) and added to ``W``
where the sum stays positive definite. No second derivative of the dynamics is compiled: the
Panda's solver compiles in about 4 s instead of 7, and an iteration costs a third (one guess: 2.0 against 6.6 ms). With
``hessian="exact"`` the pass goes through the problem itself: ``n`` tangents through the reverse
pass of the inverse dynamics at every sample.

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
``10 violation_tol`` and within 1 % of itself for ``_STALL`` iterations (stalled: the problem is
likely infeasible; the report says so and the guess returns its point of least violation).

The iterations run in one ``lax.while_loop`` over all the initial guesses at once; a guess that
has stopped stays put while the others go on.
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ._solver import CONVERGED, INFEASIBLE, NON_FINITE, RUNNING, Progress, Solution, SolverReport, compile_clock, status_names
from ._transcription import Problem

_KAPPA_SIGMA = 1e10  # Wächter and Biegler's bound on how far lam may drift from mu / s
_SCALE_MAX = 100.0  # their s_max, for the scaled KKT error
# the filter line search's constants (W&B sec. 2.3 and their IPOPT defaults)
_GAMMA_THETA, _GAMMA_PHI, _ETA, _S_THETA, _S_PHI = 1e-5, 1e-8, 1e-4, 1.1, 2.3
_FILTER_SIZE = 64
_MAX_BACKTRACKS = 40
_STALL = 30  # iterations of a violation flat to 1 % before a guess stops as infeasible


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
            Hessians of the Lagrangian by forward-over-reverse autodiff through the inverse
            dynamics (fewer iterations on some problems, each costlier, and a longer compile:
            the trajectory-optimisation guide measures both). Both converge to the same optimum.

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


class InteriorPointState(NamedTuple):
    """What a warm start reuses (``Result.state`` of an :class:`InteriorPoint` solution), per guess:
    slacks ``s`` and multipliers ``lam`` of the inequalities (``(G, c)``), multipliers ``y`` of the
    equalities (``(G, e)``) and the cost's scale (``(G,)``).

    Example:
        The state of the torque-optimal motion of a rotor (``tau = 0.1 qdd``) from rest at 0 to rest
        at 1 rad in 1 s, end accelerations free (the example of :func:`optimize`): one guess, ``6 K
        n = 240`` inequalities (the limits at ``K = 40`` samples), no equalities.
        ``trajopt.optimize(..., init=result)`` starts from it.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0, qdd_start=None, qdd_end=None)
        >>> result = trajopt.optimize(rotor, bc, trajopt.TorqueEffort(), num_control_points=8)
        >>> state = result.state
        >>> type(state).__name__, state.s.shape, state.lam.shape, state.y.shape, state.scale.shape
        ('InteriorPointState', (1, 240), (1, 240), (1, 0), (1,))
    """

    s: Array
    lam: Array
    y: Array
    scale: Array


class _Guess(NamedTuple):
    x: Array
    s: Array
    lam: Array
    y: Array
    mu: Array
    scale: Array
    f: Array  # scaled cost at x
    violation: Array
    done: Array
    steps: Array
    filter_theta: Array  # (F,): the filter's pairs (theta, phi), +inf where empty
    filter_phi: Array
    filter_count: Array
    theta_min: Array
    theta_max: Array
    status: Array  # RUNNING until the guess stops (_solver's codes)
    failed_row: Array  # the first non-finite row of the constraints or their Jacobian, else -1
    least: Array  # the smallest violation so far, at x_least (cost f_least)
    x_least: Array
    f_least: Array
    recent: Array  # (_STALL,) the last violations, a ring (+inf until filled)
    fresh: Array  # before the first iteration (which sets s, lam, y and the scale)
    # Gauss-Newton's (size 0 with exact Hessians): the states u_k and the Jacobians A_k of the
    # torques at the last linearisation, and the curvature blocks of the inverse dynamics
    states: Array  # (K, 3n)
    jacobian: Array  # (K, n, 3n)
    curvature: Array  # (K, 3n, 3n)


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


def _variables(problem: Problem, x):
    """``(z, duration)`` from the solver's variables ``x``: the preconditioned free control points,
    flattened, and with ``free_time`` the duration relative to ``boundary.duration``."""
    size = problem.shape[0] * problem.shape[1]
    z = problem.preconditioner.astype(x.dtype) @ x[:size].reshape(problem.shape)
    duration = None if problem.free_time is None else x[size] * problem.boundary.duration.astype(x.dtype)
    return z, duration


def _functions(problem: Problem):
    """``x -> (f, g, h)`` in the solver's variables (the cost not scaled)."""

    def fun(x):
        z, duration = _variables(problem, x)
        return (problem if duration is None else problem.at_duration(duration)).evaluate(z)

    return fun


def _states(problem: Problem, x):
    """The states ``u_k = (q, qd, qdd)`` at ``x``'s samples: ``(K, 3n)``."""
    z, duration = _variables(problem, x)
    at = problem if duration is None else problem.at_duration(duration)
    samples = at._samples(z, lambda q, qd, qdd: q)  # the states alone (a placeholder for tau)
    return jnp.concatenate([samples.q, samples.qd, samples.qdd], axis=1)


def _linearisation(problem: Problem, x):
    """The inverse dynamics at ``x``'s samples: the states ``u_k`` (:func:`_states`), the torques
    ``tau_k`` (``(K, n)``) and their Jacobians ``A_k = d tau_k / d u_k`` (``(K, n, 3n)``, the
    analytical derivatives of :func:`~kronjax.inverse_dynamics`)."""
    states = _states(problem, x)
    n = problem.n_dof

    def tau(u):
        value = problem._torques(u[None, :n], u[None, n : 2 * n], u[None, 2 * n :], derivatives="analytic")[0]
        return value, value

    jacobian, torques = jax.vmap(jax.jacfwd(tau, has_aux=True))(states)
    return states, torques, jacobian


def _linearised_functions(problem: Problem, states, torques, jacobian):
    """``(x, extra) -> (f, g, h)`` with the torques linearised about ``states``: ``tau_k(x) =
    torques_k + A_k (u_k(x) - states_k) + extra_k`` (the cotangent of ``extra`` is the adjoint of
    the torques). Its value, gradient and constraint Jacobian at the linearisation point are
    exact; its Hessian is the generalised Gauss-Newton matrix, exact but for the curvature of the
    inverse dynamics themselves (Schraudolph, Neural Comput. 14, 2002)."""

    def linear(q, qd, qdd, extra):
        return torques + jnp.einsum("kij,kj->ki", jacobian, jnp.concatenate([q, qd, qdd], axis=1) - states) + extra

    def fun(x, extra):
        z, duration = _variables(problem, x)
        at = problem if duration is None else problem.at_duration(duration)
        return at._evaluate(z, lambda q, qd, qdd: linear(q, qd, qdd, extra))

    return fun


def _sr1(curvature, step, change):
    """The symmetric-rank-one update of one sample's ``3n x 3n`` curvature (N&W eq. 6.24), skipped
    where ``|s^T (y - B s)| < r |s| |y - B s|``, ``r = sqrt(eps)`` (N&W eq. 6.26 with ``r = 1e-8``;
    float32 needs the larger ``r``)."""
    residual = change - curvature @ step
    denominator = residual @ step
    r = jnp.sqrt(jnp.finfo(step.dtype).eps)
    ok = jnp.abs(denominator) >= r * jnp.linalg.norm(step) * jnp.linalg.norm(residual)
    ok = ok & (denominator != 0.0)
    return curvature + jnp.where(ok, 1.0, 0.0) * jnp.outer(residual, residual) / jnp.where(ok, denominator, 1.0)


def _inf_norm(v):
    return jnp.max(jnp.abs(v), initial=0.0)


def _violation(c, h):
    """The largest violation of ``c <= 0`` and ``h = 0`` (0 when all hold)."""
    return jnp.maximum(jnp.maximum(jnp.max(c), _inf_norm(h)), 0.0)


def _start(problem: Problem, x, warm: InteriorPointState, is_warm: Array, solver: InteriorPoint) -> _Guess:
    """A guess at ``x`` before its first iteration, which evaluates the problem there and sets the
    cost's scale, the slacks and the multipliers (:func:`_first_values`): from ``warm`` where
    ``is_warm``, else from the start's values alone (``warm`` then holds placeholders)."""
    dtype = x.dtype
    mu = jnp.where(is_warm, solver.warm_barrier, solver.barrier_init).astype(dtype)
    s, lam, y, scale = (a.astype(dtype) for a in warm)
    empty = jnp.full(_FILTER_SIZE, jnp.inf, dtype)
    zero = jnp.zeros((), dtype)
    count, n = (problem.s.shape[0], 3 * problem.n_dof) if solver.hessian == "gauss-newton" else (0, 0)
    return _Guess(
        x, s, lam, y, mu, scale, zero, zero, jnp.asarray(False), jnp.asarray(0), empty, empty, jnp.asarray(0),
        zero, zero, jnp.asarray(RUNNING), jnp.asarray(-1), zero, x, zero, jnp.full(_STALL, jnp.inf, dtype), jnp.asarray(True),
        jnp.zeros((count, n), dtype), jnp.zeros((count, n // 3, n), dtype), jnp.zeros((count, n, n), dtype),
    )  # fmt: skip


def _first_values(guess: _Guess, f, c, h, is_warm: Array):
    """``(scale, s, lam, y)`` of a guess's first iteration from the problem's values at its start:
    the cost's scale ``|f|`` and slacks ``max(-c, 1e-2)`` with ``lam = mu / s`` (cold), or the
    earlier solution's slacks, at least ``-c`` and ``mu``, and multipliers kept within
    ``[mu / (k s), k mu / s]`` (warm)."""
    mu = guess.mu
    s_cold = jnp.maximum(-c, 1e-2)
    cold = (jnp.where(jnp.abs(f) > 0, jnp.abs(f), 1.0), s_cold, mu / s_cold, jnp.zeros_like(h))
    s_warm = jnp.maximum(jnp.maximum(guess.s, -c), mu)
    warm = (guess.scale, s_warm, jnp.clip(guess.lam, mu / (_KAPPA_SIGMA * s_warm), _KAPPA_SIGMA * mu / s_warm), guess.y)
    return tuple(jnp.where(is_warm, w, k) for w, k in zip(warm, cold))


class _Derivatives(NamedTuple):
    """The problem at a guess's ``x``: the scaled cost ``f``, the inequality and equality constraints
    ``c``, ``h``, the gradient of the cost, the Jacobians of the constraints, the Hessian of the
    Lagrangian, Gauss-Newton's correction for the dynamics' curvature (``None`` with exact
    Hessians), and the start's ``(scale, s, lam, y)`` (used by the first iteration only).
    :func:`_evaluate` returns the gradient of the Lagrangian beside it."""

    f: Array
    c: Array
    h: Array
    grad_f: Array
    jac: Array
    jac_e: Array
    hessian: Array
    correction: Array | None
    start: tuple


def _evaluate(problem: Problem, guess: _Guess, is_warm: Array, solver: InteriorPoint) -> tuple[_Guess, _Derivatives, Array]:
    """:class:`_Derivatives` at the guess, by one forward-over-reverse pass through the Lagrangian;
    with Gauss-Newton Hessians, through the dynamics linearised at ``x``, with the guess's
    linearisation and curvature blocks updated."""
    fun = _functions(problem)
    fresh = guess.fresh
    gauss_newton = solver.hessian == "gauss-newton"
    if gauss_newton:
        states, torques, jacobian = _linearisation(problem, guess.x)
        local = _linearised_functions(problem, states, torques, jacobian)
        extra = jnp.zeros_like(torques)
    else:
        extra = jnp.zeros(0, guess.x.dtype)

        def local(x, extra):
            return fun(x)

    def gradient_of_lagrangian(x):
        (f, c, h), pullback = jax.vjp(local, x, extra)
        start = jax.lax.stop_gradient(_first_values(guess, f, c, h, is_warm))
        scale, _, lam, y = (jnp.where(fresh, new, old) for new, old in zip(start, (guess.scale, guess.s, guess.lam, guess.y)))
        grad_l, adjoint = pullback((1.0 / scale, lam, y))
        curvature = guess.curvature
        if gauss_newton:
            # the curvature of the inverse dynamics that Gauss-Newton leaves out, sum_k w_k . d^2
            # tau_k / d u_k^2 with w_k the torques' adjoint, is partially separable: one 3n x 3n
            # block per sample, each updated by SR1 from the last step's change of its states and
            # of A_k^T w_k (partitioned quasi-Newton, Griewank and Toint 1982; N&W sec. 7.4)
            change = jnp.einsum("kij,ki->kj", jacobian - guess.jacobian, adjoint)
            updated = jax.vmap(_sr1)(guess.curvature, states - guess.states, change)
            curvature = jax.lax.stop_gradient(jnp.where(fresh, guess.curvature, updated))
            # its gradient, zero at x, differentiates to the correction's matrix
            u, through_states = jax.vjp(lambda x: _states(problem, x), x)
            grad_c = through_states(jnp.einsum("kij,kj->ki", curvature, u - states))[0]
            return (grad_l, c, h, f / scale, grad_c), (grad_l, c, h, f / scale, start, curvature)
        return (grad_l, c, h, f / scale), (grad_l, c, h, f / scale, start, curvature)

    derivatives, (grad_l, c, h, f, start, curvature) = jax.jacfwd(gradient_of_lagrangian, has_aux=True)(guess.x)
    hessian, jac, jac_e, grad_f = derivatives[:4]
    if gauss_newton:
        guess = guess._replace(states=states, jacobian=jacobian, curvature=curvature)
    correction = derivatives[4] if gauss_newton else None
    return guess, _Derivatives(f, c, h, grad_f, jac, jac_e, hessian, correction, start), grad_l


def _open(guess: _Guess, d: _Derivatives, violation: Array) -> _Guess:
    """The first iteration's guess: the start's values, and the filter's bounds and the records of
    least violation from them (W&B sec. 2.3); later iterations' guesses as they are."""
    scale, s0, lam0, y0 = d.start
    theta = jnp.maximum(jnp.sum(jnp.abs(d.c + s0)) + jnp.sum(jnp.abs(d.h)), 1.0)
    opening = guess._replace(
        s=s0, lam=lam0, y=y0, scale=scale, f=d.f, violation=violation, theta_min=1e-4 * theta, theta_max=1e4 * theta,
        least=violation, f_least=d.f, fresh=jnp.asarray(False),
    )  # fmt: skip
    return jax.tree.map(lambda a, b: jnp.where(guess.fresh, a, b), opening, guess._replace(fresh=jnp.asarray(False)))


def _terminate(guess: _Guess, d: _Derivatives, grad_l: Array, violation: Array, tol: float, solver: InteriorPoint):
    """``(status, failed_row, mu)``: whether the guess stops (converged, not finite, or stalled
    infeasible; :mod:`._solver`'s codes), the first non-finite constraint row, and the barrier
    parameter of the next step (W&B eqs. 5 and 7)."""
    s, lam, y, mu = guess.s, guess.lam, guess.y, guess.mu
    f, c, h = d.f, d.c, d.h
    count = s.shape[0] + h.shape[0]
    scale_d = jnp.maximum(_SCALE_MAX, (jnp.sum(jnp.abs(lam)) + jnp.sum(jnp.abs(y))) / count) / _SCALE_MAX

    def kkt_error(mu):
        return jnp.max(
            jnp.stack([_inf_norm(grad_l) / scale_d, _inf_norm(c + s), _inf_norm(h), _inf_norm(s * lam - mu) / scale_d])
        )

    # converged when, besides, the duality gap sum(s lam) (the cost's distance to the optimum, to
    # first order) is at most tol: with the max-norm of S lam alone it stopped 7e-8 above the
    # Panda's optimum, m = 2772 constraints each contributing mu
    gap = jnp.sum(s * lam) / scale_d
    converged = (kkt_error(0.0) <= tol) & (gap <= tol) & (violation <= solver.violation_tol)
    # the first quantity that is not finite, in NON_FINITE's order, and its row where it is a
    # constraint's (the report names the constraint)
    checked = (f, c, h, d.grad_f, d.jac, d.jac_e, d.hessian)
    finite = jnp.stack([jnp.all(jnp.isfinite(a)) for a in checked])
    bad = jnp.argmin(finite)
    rows = [
        jnp.argmin(jnp.isfinite(a).reshape(a.shape[0], -1).all(axis=1)) if a.shape[0] else jnp.asarray(0)
        for a in (c, h, d.jac, d.jac_e)
    ]
    failed_row = jnp.select([bad == 1, bad == 2, bad == 4, bad == 5], rows, -1)
    # stalled: the last _STALL violations all within 1 % of each other and well above the tolerance
    # (a violation that rises and falls, or falls slowly, is not flat)
    low, high = jnp.min(guess.recent), jnp.max(guess.recent)
    infeasible = jnp.isfinite(high) & (low > 10.0 * solver.violation_tol) & (high <= 1.01 * low)
    status = jnp.select([converged, ~jnp.all(finite), infeasible], [CONVERGED, NON_FINITE + bad, INFEASIBLE], RUNNING)
    floor = tol / (10.0 * s.shape[0])
    mu = jnp.where(kkt_error(mu) <= 10.0 * mu, jnp.maximum(floor, jnp.minimum(0.2 * mu, mu**1.5)), mu)
    return status, failed_row, mu


def _newton_step(guess: _Guess, d: _Derivatives, mu: Array):
    """``(dx, ds, dlam, y_new)``: the Newton step (N&W 19.12 condensed), regularised to a
    positive-definite matrix; with equalities, their multipliers from the Schur complement ``J_E
    A^-1 J_E^T`` (N&W sec. 16.2)."""
    s, lam, y = guess.s, guess.lam, guess.y
    c, h, jac, jac_e, hessian = d.c, d.h, d.jac, d.jac_e, d.hessian
    dtype = guess.x.dtype
    sigma = lam / s
    matrix = hessian + jac.T @ (sigma[:, None] * jac)
    matrix = 0.5 * (matrix + matrix.T)
    if d.correction is not None:
        # where the quasi-Newton correction leaves the matrix indefinite, Gauss-Newton's own
        # (positive semidefinite) instead of a shift: shifted, the Panda's 8 guesses took 40-66
        # iterations, unshifted 27-34 (the UR5's 36-69 either way; 200 without the correction)
        corrected = matrix + 0.5 * (d.correction + d.correction.T)
        eigenvalues, vectors = jnp.linalg.eigh(corrected)
        eigenvalues, vectors = jax.lax.cond(
            eigenvalues[0] > 0, lambda: (eigenvalues, vectors), lambda: tuple(jnp.linalg.eigh(matrix))
        )
    else:
        eigenvalues, vectors = jnp.linalg.eigh(matrix)
    # the shift is relative to the Hessian's own size, not to Sigma's (which grows like 1 / mu on
    # the active constraints)
    size = jnp.mean(jnp.abs(jnp.diag(hessian)))
    delta = jnp.where(eigenvalues[0] > 0.0, 0.0, jnp.maximum(1e-4 * size, jnp.finfo(dtype).tiny) - 2.0 * eigenvalues[0])
    shifted = eigenvalues + delta

    def solve(b):
        return vectors @ ((vectors.T @ b) / (shifted[:, None] if b.ndim == 2 else shifted))

    rhs = -(d.grad_f + jac.T @ (mu / s + sigma * (c + s)))
    dx = solve(rhs)
    y_new = y
    if h.shape[0]:
        through = solve(jac_e.T)
        schur = jac_e @ through
        # relative to its size (J_E A^-1 J_E^T is tiny where A holds large Sigma), never exactly 0
        ridge = jnp.finfo(dtype).eps * jnp.trace(schur) + jnp.finfo(dtype).tiny
        schur = schur + ridge * jnp.eye(h.shape[0], dtype=dtype)
        y_new = jnp.linalg.solve(schur, jac_e @ dx + h)
        dx = dx - through @ y_new
    ds = -(c + s) - jac @ dx
    dlam = mu / s - lam - sigma * ds
    return dx, ds, dlam, y_new


def _iteration(problem: Problem, guess: _Guess, is_warm: Array, tol: float, solver: InteriorPoint) -> _Guess:
    """One Newton step of one guess (or none, where it has stopped): evaluate, open (the first
    iteration), terminate, step, search. The first one also sets the guess's scale, slacks and
    multipliers from the same evaluation of the problem (one program for the start and the steps:
    compiling a separate evaluation for the start cost about 1 s on the Panda)."""
    guess, d, grad_l = _evaluate(problem, guess, is_warm, solver)
    violation = _violation(d.c, d.h)
    guess = _open(guess, d, violation)
    status, failed_row, mu = _terminate(guess, d, grad_l, violation, tol, solver)
    dx, ds, dlam, y_new = _newton_step(guess, d, mu)
    return _search(problem, guess, d, violation, status, failed_row, mu, (dx, ds, dlam, y_new))


def _search(problem: Problem, guess: _Guess, d: _Derivatives, violation, status, failed_row, mu, step) -> _Guess:
    """The guess after the step: lengths by the fraction to the boundary (N&W 19.9), then a
    backtracking filter line search (W&B sec. 2.3); where the guess stops, itself (an infeasible one
    at its point of least violation)."""
    fun = _functions(problem)
    x, s, lam, y, f, c, h, grad_f = guess.x, guess.s, guess.lam, guess.y, d.f, d.c, d.h, d.grad_f
    dx, ds, dlam, y_new = step
    dtype = x.dtype
    done = status != RUNNING
    # a trial point is accepted if it improves the infeasibility theta or the
    # barrier objective phi enough and is not dominated by the filter; where the step is a good
    # descent direction of phi at a nearly feasible point (the switching condition), Armijo's
    # condition on phi instead
    # tau below 1 - 10 eps: in float32 1 - mu rounds to 1 once mu < 6e-8, a slack could then land
    # on 0 exactly and its multiplier (up to kappa_sigma mu / s) on inf, NaN from there on (the
    # two-link arm in float32 did, where XLA's rounding differed); the floor (1 - tau) s on the
    # trial slacks below holds in exact arithmetic and keeps them positive under rounding
    tau = jnp.clip(1.0 - mu, 0.99, 1.0 - 10.0 * jnp.finfo(dtype).eps)

    def longest(v, dv):
        return jnp.minimum(1.0, jnp.min(jnp.where(dv < 0, -tau * v / jnp.where(dv < 0, dv, -1.0), jnp.inf)))

    alpha_primal, alpha_dual = longest(s, ds), longest(lam, dlam)
    theta = jnp.sum(jnp.abs(c + s)) + jnp.sum(jnp.abs(h))
    phi = f - mu * jnp.sum(jnp.log(s))
    slope = grad_f @ dx - mu * jnp.sum(ds / s)
    rounding = 10.0 * jnp.finfo(dtype).eps * jnp.abs(phi)
    filter_theta = jnp.where(mu != guess.mu, jnp.inf, guess.filter_theta)  # a new barrier problem: a new filter
    filter_phi = jnp.where(mu != guess.mu, jnp.inf, guess.filter_phi)

    def switching(alpha):
        return (slope < 0) & (alpha * (-slope) ** _S_PHI > theta**_S_THETA) & (theta <= guess.theta_min)

    def search_cond(carry):
        return ~carry[0] & (carry[1] < _MAX_BACKTRACKS) & ~done

    def search_body(carry):
        _, count, alpha, _ = carry
        alpha = jnp.where(count == 0, alpha, 0.5 * alpha)
        x_t = x + alpha * dx
        f_t, c_t, h_t = fun(x_t)
        f_t = f_t / guess.scale
        s_t = jnp.maximum(jnp.maximum(s + alpha * ds, -c_t), (1.0 - tau) * s)
        theta_t = jnp.sum(jnp.abs(c_t + s_t)) + jnp.sum(jnp.abs(h_t))
        phi_t = f_t - mu * jnp.sum(jnp.log(s_t))
        armijo = phi_t <= phi + _ETA * alpha * slope + rounding
        better = (theta_t <= (1.0 - _GAMMA_THETA) * theta) | (phi_t <= phi - _GAMMA_PHI * theta + rounding)
        dominated = jnp.any((theta_t >= filter_theta) & (phi_t >= filter_phi))
        ok = jnp.isfinite(phi_t) & (theta_t <= guess.theta_max) & ~dominated & jnp.where(switching(alpha), armijo, better)
        return ok, count + 1, alpha, (x_t, s_t, f_t, c_t, h_t)

    init_point = jax.tree.map(jnp.zeros_like, (x, s, f, c, h))
    accepted, _, alpha, (x_new, s_new, f_new, c_new, h_new) = jax.lax.while_loop(
        search_cond, search_body, (jnp.asarray(False), jnp.asarray(0), alpha_primal, init_point)
    )
    # the filter grows where the step was not an Armijo step on phi; a failed search (no
    # restoration phase here) takes its shortest step, unless that is not finite, and starts a
    # new filter
    grow = accepted & ~switching(alpha)
    slot = guess.filter_count % _FILTER_SIZE
    filter_theta = jnp.where(grow, filter_theta.at[slot].set((1.0 - _GAMMA_THETA) * theta), filter_theta)
    filter_phi = jnp.where(grow, filter_phi.at[slot].set(phi - _GAMMA_PHI * theta), filter_phi)
    filter_theta = jnp.where(accepted, filter_theta, jnp.inf)
    filter_phi = jnp.where(accepted, filter_phi, jnp.inf)
    finite = jnp.isfinite(f_new) & jnp.all(jnp.isfinite(c_new)) & jnp.all(jnp.isfinite(h_new))
    x_new, s_new, f_new, c_new, h_new = jax.tree.map(
        lambda new, old: jnp.where(finite, new, old), (x_new, s_new, f_new, c_new, h_new), (x, s, f, c, h)
    )
    alpha = jnp.where(finite, alpha, 0.0)
    lam_new = jnp.clip(lam + alpha_dual * dlam, mu / (_KAPPA_SIGMA * s_new), _KAPPA_SIGMA * mu / s_new)
    violation_new = _violation(c_new, h_new)
    lower = violation_new < guess.least
    stepped = guess._replace(
        x=x_new,
        s=s_new,
        lam=lam_new,
        y=y + alpha * (y_new - y),
        mu=mu,
        f=f_new,
        violation=violation_new,
        filter_theta=filter_theta,
        filter_phi=filter_phi,
        filter_count=guess.filter_count + grow,
        steps=guess.steps + 1,
        least=jnp.where(lower, violation_new, guess.least),
        x_least=jnp.where(lower, x_new, guess.x_least),
        f_least=jnp.where(lower, f_new, guess.f_least),
        recent=guess.recent.at[guess.steps % _STALL].set(violation_new),
    )
    # an infeasible guess ends at its point of least violation
    at_least = status == INFEASIBLE
    stay = guess._replace(
        x=jnp.where(at_least, guess.x_least, x),
        f=jnp.where(at_least, guess.f_least, f),
        violation=jnp.where(at_least, guess.least, violation),
        done=jnp.asarray(True),
        status=status,
        failed_row=failed_row,
    )
    return jax.tree.map(lambda a, b: jnp.where(done, a, b), stay, stepped)


def _solve(problem: Problem, z0, duration0, warm, is_warm, solver: InteriorPoint, tol: float, report: bool, token):
    """The whole solve: ``(z, duration, control_points, guesses, iterations, history_cost,
    history_violation)``."""
    dtype = z0.dtype
    count = z0.shape[0]
    x0 = jnp.einsum("ij,gjn->gin", problem.preconditioner_inverse.astype(dtype), z0).reshape(count, -1)
    if problem.free_time is not None:
        x0 = jnp.concatenate([x0, (duration0 / problem.boundary.duration.astype(dtype))[:, None]], axis=1)
    guesses = jax.vmap(lambda x, w: _start(problem, x, w, is_warm, solver))(x0, warm)
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
            new = jax.tree.map(
                lambda a: a[None], _iteration(problem, jax.tree.map(lambda a: a[0], guesses), is_warm, tol, solver)
            )
        else:
            new = jax.vmap(lambda g: _iteration(problem, g, is_warm, tol, solver))(guesses)
        new = jax.tree.map(lambda a, b: jnp.where(guesses.done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), guesses, new)
        cost = new.f * new.scale
        if report:
            jax.debug.callback(_report, token, k + 1, new.steps, cost, new.violation, new.mu)
        return new, k + 1, history_cost.at[k].set(cost), history_violation.at[k].set(new.violation)

    guesses, k, history_cost, history_violation = jax.lax.while_loop(cond, body, (guesses, jnp.asarray(0), history, history))
    z, duration = jax.vmap(lambda x: _variables(problem, x))(guesses.x)
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
