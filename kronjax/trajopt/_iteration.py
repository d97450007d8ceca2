"""One iteration of :class:`~kronjax.trajopt.InteriorPoint` on one guess, in named steps (as
optimistix splits a solver into ``init``, ``step`` and ``terminate``): :func:`start` (the guess
before its first iteration), then in :func:`iteration` ``_evaluate`` (the derivatives at the guess),
``_open`` (the first iteration's values), ``_terminate`` (whether it stops, and the next barrier
parameter), ``_newton_step`` and ``_search`` (the filter line search). The algorithm, its
equations and its sources are in ``_interior_point``'s module docstring; the solve that runs the
iterations over all the guesses is there too.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array

from ._linearisation import curvature_blocks, functions, linearisation, linearised_functions, sr1, states_at
from ._problem import Problem
from ._solver import CONVERGED, INFEASIBLE, NON_FINITE, RUNNING

_KAPPA_SIGMA = 1e10  # Wächter and Biegler's bound on how far lam may drift from mu / s
_SCALE_MAX = 100.0  # their s_max, for the scaled KKT error
# the filter line search's constants (W&B sec. 2.3 and their IPOPT defaults)
_GAMMA_THETA, _GAMMA_PHI, _ETA, _S_THETA, _S_PHI = 1e-5, 1e-8, 1e-4, 1.1, 2.3
_FILTER_SIZE = 64
_MAX_BACKTRACKS = 40
_STALL = 30  # iterations of a violation flat to 1 % before a guess stops as infeasible


class InteriorPointState(NamedTuple):
    """What a warm start reuses (``Result.state`` of an :class:`~kronjax.trajopt.InteriorPoint` solution), per guess:
    slacks ``s`` and multipliers ``lam`` of the inequalities (``(G, c)``), multipliers ``y`` of the
    equalities (``(G, e)``) and the cost's scale (``(G,)``).

    Example:
        The state of the torque-optimal motion of a rotor (``tau = 0.1 vd``) from rest at 0 to rest
        at 1 rad in 1 s, end accelerations free (the example of :func:`~kronjax.trajopt.optimize`): one guess, ``6 K
        n = 240`` inequalities (the limits at ``K = 40`` samples), no equalities.
        ``trajopt.optimize(..., init=result)`` starts from it.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0, vd_start=None, vd_end=None)
        >>> result = trajopt.optimize(rotor, bc, trajopt.TorqueEffort(), num_control_points=8)
        >>> state = result.state
        >>> type(state).__name__, state.s.shape, state.lam.shape, state.y.shape, state.scale.shape
        ('InteriorPointState', (1, 240), (1, 240), (1, 0), (1,))
    """

    s: Array
    lam: Array
    y: Array
    scale: Array


class Settings(NamedTuple):
    """What an iteration reads of its :class:`~kronjax.trajopt.InteriorPoint` (the solver passes
    these rather than itself: it is defined in ``_interior_point``, which imports this module): the
    scaled KKT error and duality gap at which a guess stops, the largest violation of a converged
    guess, the first barrier parameter of a cold and of a warm start, and whether the curvature
    blocks of the inverse dynamics are exact (else quasi-Newton)."""

    tol: float
    violation_tol: float
    barrier_init: float
    warm_barrier: float
    exact_curvature: bool


class Guess(NamedTuple):
    """One guess between iterations: its point, slacks, multipliers and barrier parameter, the
    filter, its status and the records of least violation (each field with a leading axis of
    guesses in the solve's loop)."""

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
    # the states u_k and the Jacobians A_k of the torques at the last linearisation, and the
    # curvature blocks of the inverse dynamics
    states: Array  # (K, s): 3n, a closed chain's 4n (Problem.linearised_sizes)
    jacobian: Array  # (K, y, s): y = n, a closed chain's nq + 4 nv
    curvature: Array  # (K, s, s)


def _inf_norm(v):
    return jnp.max(jnp.abs(v), initial=0.0)


def _violation(c, h):
    """The largest violation of ``c <= 0`` and ``h = 0`` (0 when all hold)."""
    return jnp.maximum(jnp.maximum(jnp.max(c), _inf_norm(h)), 0.0)


def start(problem: Problem, x, warm: InteriorPointState, is_warm: Array, settings: Settings) -> Guess:
    """A guess at ``x`` before its first iteration, which evaluates the problem there and sets the
    cost's scale, the slacks and the multipliers (:func:`_first_values`): from ``warm`` where
    ``is_warm``, else from the start's values alone (``warm`` then holds placeholders)."""
    dtype = x.dtype
    mu = jnp.where(is_warm, settings.warm_barrier, settings.barrier_init).astype(dtype)
    s, lam, y, scale = (a.astype(dtype) for a in warm)
    empty = jnp.full(_FILTER_SIZE, jnp.inf, dtype)
    zero = jnp.zeros((), dtype)
    count, (size, outputs) = problem.s.shape[0], problem.linearised_sizes
    return Guess(
        x, s, lam, y, mu, scale, zero, zero, jnp.asarray(False), jnp.asarray(0), empty, empty, jnp.asarray(0),
        zero, zero, jnp.asarray(RUNNING), jnp.asarray(-1), zero, x, zero, jnp.full(_STALL, jnp.inf, dtype), jnp.asarray(True),
        jnp.zeros((count, size), dtype), jnp.zeros((count, outputs, size), dtype), jnp.zeros((count, size, size), dtype),
    )  # fmt: skip


def _first_values(guess: Guess, f, c, h, is_warm: Array):
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
    Lagrangian without the dynamics' own curvature (Gauss-Newton's), that curvature's matrix, and the start's ``(scale, s, lam, y)`` (used by the first iteration only).
    :func:`_evaluate` returns the gradient of the Lagrangian beside it."""

    f: Array
    c: Array
    h: Array
    grad_f: Array
    jac: Array
    jac_e: Array
    hessian: Array
    correction: Array
    start: tuple


def _evaluate(problem: Problem, guess: Guess, is_warm: Array, settings: Settings) -> tuple[Guess, _Derivatives, Array]:
    """:class:`_Derivatives` at the guess, by one forward-over-reverse pass through the Lagrangian
    of the problem with its dynamics linearised at ``x``, with the guess's linearisation and
    curvature blocks updated."""
    fresh = guess.fresh
    states, torques, jacobian = linearisation(problem, guess.x)
    local = linearised_functions(problem, states, torques, jacobian)
    extra = jnp.zeros_like(torques)

    def gradient_of_lagrangian(x):
        (f, c, h), pullback = jax.vjp(local, x, extra)
        start = jax.lax.stop_gradient(_first_values(guess, f, c, h, is_warm))
        scale, _, lam, y = (jnp.where(fresh, new, old) for new, old in zip(start, (guess.scale, guess.s, guess.lam, guess.y)))
        grad_l, adjoint = pullback((1.0 / scale, lam, y))
        # the curvature of the inverse dynamics that the linearisation leaves out, sum_k w_k . d^2
        # tau_k / d u_k^2 with w_k the torques' adjoint, is partially separable: one s x s
        # block per sample, exact (the λ-contracted Hessians of the inverse dynamics) or updated
        # by SR1 from the last step's change of its states and of A_k^T w_k (partitioned
        # quasi-Newton, Griewank and Toint 1982; N&W sec. 7.4)
        if settings.exact_curvature:
            curvature = curvature_blocks(problem, states, jax.lax.stop_gradient(adjoint))
        else:
            change = jnp.einsum("kij,ki->kj", jacobian - guess.jacobian, adjoint)
            updated = jax.vmap(sr1)(guess.curvature, states - guess.states, change)
            curvature = jax.lax.stop_gradient(jnp.where(fresh, guess.curvature, updated))
        # its gradient, zero at x, differentiates to the correction's matrix
        u, through_states = jax.vjp(lambda x: states_at(problem, x), x)
        grad_c = through_states(jnp.einsum("kij,kj->ki", curvature, u - states))[0]
        return (grad_l, c, h, f / scale, grad_c), (grad_l, c, h, f / scale, start, curvature)

    derivatives, (grad_l, c, h, f, start, curvature) = jax.jacfwd(gradient_of_lagrangian, has_aux=True)(guess.x)
    hessian, jac, jac_e, grad_f, correction = derivatives
    guess = guess._replace(states=states, jacobian=jacobian, curvature=curvature)
    return guess, _Derivatives(f, c, h, grad_f, jac, jac_e, hessian, correction, start), grad_l


def _open(guess: Guess, d: _Derivatives, violation: Array) -> Guess:
    """The first iteration's guess: the start's values, and the filter's bounds and the records of
    least violation from them (W&B sec. 2.3); later iterations' guesses as they are."""
    scale, s0, lam0, y0 = d.start
    theta = jnp.maximum(jnp.sum(jnp.abs(d.c + s0)) + jnp.sum(jnp.abs(d.h)), 1.0)
    opening = guess._replace(
        s=s0, lam=lam0, y=y0, scale=scale, f=d.f, violation=violation, theta_min=1e-4 * theta, theta_max=1e4 * theta,
        least=violation, f_least=d.f, fresh=jnp.asarray(False),
    )  # fmt: skip
    return jax.tree.map(lambda a, b: jnp.where(guess.fresh, a, b), opening, guess._replace(fresh=jnp.asarray(False)))


def _terminate(guess: Guess, d: _Derivatives, grad_l: Array, violation: Array, settings: Settings):
    """``(status, failed_row, mu)``: whether the guess stops (converged, not finite, or stalled
    infeasible; :mod:`._solver`'s codes), the first non-finite constraint row, and the barrier
    parameter of the next step (W&B eqs. 5 and 7)."""
    s, lam, y, mu = guess.s, guess.lam, guess.y, guess.mu
    f, c, h = d.f, d.c, d.h
    tol = settings.tol
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
    converged = (kkt_error(0.0) <= tol) & (gap <= tol) & (violation <= settings.violation_tol)
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
    infeasible = jnp.isfinite(high) & (low > 10.0 * settings.violation_tol) & (high <= 1.01 * low)
    status = jnp.select([converged, ~jnp.all(finite), infeasible], [CONVERGED, NON_FINITE + bad, INFEASIBLE], RUNNING)
    floor = tol / (10.0 * s.shape[0])
    mu = jnp.where(kkt_error(mu) <= 10.0 * mu, jnp.maximum(floor, jnp.minimum(0.2 * mu, mu**1.5)), mu)
    return status, failed_row, mu


def _newton_step(guess: Guess, d: _Derivatives, mu: Array, exact_curvature: bool):
    """``(dx, ds, dlam, y_new)``: the Newton step (N&W 19.12 condensed), regularised to a
    positive-definite matrix; with equalities, their multipliers from the Schur complement ``J_E
    A^-1 J_E^T`` (N&W sec. 16.2)."""
    s, lam, y = guess.s, guess.lam, guess.y
    c, h, jac, jac_e, hessian = d.c, d.h, d.jac, d.jac_e, d.hessian
    dtype = guess.x.dtype
    sigma = lam / s
    matrix = hessian + jac.T @ (sigma[:, None] * jac)
    matrix = 0.5 * (matrix + matrix.T)
    corrected = matrix + 0.5 * (d.correction + d.correction.T)
    eigenvalues, vectors = jnp.linalg.eigh(corrected)
    if not exact_curvature:
        # where the quasi-Newton correction leaves the matrix indefinite, Gauss-Newton's own
        # (positive semidefinite) instead of a shift: shifted, the Panda's 8 guesses took 40-66
        # iterations, unshifted 27-34 (the UR5's 36-69 either way; 200 without the correction)
        eigenvalues, vectors = jax.lax.cond(
            eigenvalues[0] > 0, lambda: (eigenvalues, vectors), lambda: tuple(jnp.linalg.eigh(matrix))
        )
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


def iteration(problem: Problem, guess: Guess, is_warm: Array, settings: Settings) -> Guess:
    """One Newton step of one guess (or none, where it has stopped): evaluate, open (the first
    iteration), terminate, step, search. The first one also sets the guess's scale, slacks and
    multipliers from the same evaluation of the problem (one program for the start and the steps:
    compiling a separate evaluation for the start cost about 1 s on the Panda)."""
    guess, d, grad_l = _evaluate(problem, guess, is_warm, settings)
    violation = _violation(d.c, d.h)
    guess = _open(guess, d, violation)
    status, failed_row, mu = _terminate(guess, d, grad_l, violation, settings)
    dx, ds, dlam, y_new = _newton_step(guess, d, mu, settings.exact_curvature)
    return _search(problem, guess, d, violation, status, failed_row, mu, (dx, ds, dlam, y_new))


def _search(problem: Problem, guess: Guess, d: _Derivatives, violation, status, failed_row, mu, step) -> Guess:
    """The guess after the step: lengths by the fraction to the boundary (N&W 19.9), then a
    backtracking filter line search (W&B sec. 2.3); where the guess stops, itself (an infeasible one
    at its point of least violation)."""
    fun = functions(problem)
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
