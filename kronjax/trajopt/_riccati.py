"""A primal-dual interior-point method for optimal control problems in stages, its Newton step by a
Riccati recursion: the solver of :func:`~kronjax.trajopt.optimize_on_contacts`.

The problem, in ``S = N + 1`` stages (states ``x_0 .. x_N`` on a manifold, ``x_0`` given; controls
``u_0 .. u_{N-1}``; the last stage's control is a placeholder that nothing reads)::

    minimise   1/2 sum_k |r_k(x_k, u_k)|^2
    subject to x_{k+1} = F_k(x_k, u_k)          (multiple shooting: the gaps close as it converges)
               c_k(x_k, u_k) <= 0

The method is the interior point of ``_interior_point`` (slacks ``c + s = 0``, barrier ``-mu sum log
s``, the step of N&W 19.12 with ``ds`` and ``dlam`` eliminated, IPOPT's barrier update, fraction to
the boundary, slack reset and multiplier safeguard; Wächter and Biegler 2006), with the costs'
Gauss-Newton Hessian. What differs is the Newton step: its matrix is block-banded, and the step is the
solution of a linear-quadratic control problem (stage Hessian ``Q_k = R_k^T R_k + C_k^T Sigma_k
C_k``, gradient ``R_k^T r_k + C_k^T (mu / s + Sigma (c + s))``, dynamics ``dx_{k+1} = A_k dx_k + B_k
du_k + gap_k``) by the Riccati recursion (backward: the value function's quadratic model and the
feedback gains; forward: the step), in ``O(N (nx + nu)^3)`` instead of ``O((N (nx + nu))^3)``: the
structure of FDDP (Mastalli et al., ICRA 2020) with the inequalities inside the step instead of in
the costs (Pavlov, Shames and Manzie, "Interior point differential dynamic programming", IEEE TCST
2021). The line search is on the multiple-shooting point (``x_k ⊕ alpha dx_k``, ``u_k + alpha du_k``:
every node at once, no sequential rollout; FDDP's rollout with the feedback gains took the ANYmal
trot of ``bench/legged_trajopt.py`` 29 iterations, this 24), by IPOPT's acceptance test on the pair (infeasibility ``theta = sum |gap|_1 + sum |c +
s|_1``, barrier objective ``phi``) against the current point (no filter), Armijo's on ``phi`` near
feasibility. The dual infeasibility of the stopping test is that of the controls, ``R_u^T r + C_u^T
lam + B^T p_{k+1}``, with the costates ``p`` of the adjoint recursion (the states' conditions hold by
the costates' definition).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array

_KAPPA_EPSILON = 10.0  # the barrier problem is solved when its KKT error is at most this times mu
_BACKTRACKS = 12
_REGULARISATION = (1e-9, 1e6)


class StageLinearisation(NamedTuple):
    """A problem at its current point, per stage (leading axis ``S``): residuals ``r`` (``(S, nr)``)
    with their Jacobians ``r_x`` (``(S, nr, nx)``, along the tangent space) and ``r_u``; the
    constraints ``c`` (``(S, m)``, ``<= 0``) with ``c_x`` and ``c_u``; the gaps ``F_k(x_k, u_k) ⊖
    x_{k+1}`` (``(S, nx)``, the last 0) and the transitions' Jacobians ``f_x`` (``(S, nx, nx)``)
    and ``f_u``."""

    r: Array
    r_x: Array
    r_u: Array
    c: Array
    c_x: Array
    c_u: Array
    gap: Array
    f_x: Array
    f_u: Array


class StageValues(NamedTuple):
    """The residuals, constraints and gaps of a trial point (as in :class:`StageLinearisation`)."""

    r: Array
    c: Array
    gap: Array


class Iterate(NamedTuple):
    """The solver's state: the point, slacks and multipliers ``(S, m)``, barrier, the step's
    regularisation, the residuals' scale, and the problem's by-products of its last linearisation
    (``aux``: what the solution is reported with)."""

    xs: Array
    us: Array
    s: Array
    lam: Array
    mu: Array
    regularisation: Array
    scale: Array
    aux: tuple
    steps: Array
    status: Array  # RUNNING, CONVERGED, MAX_ITERATIONS or NON_FINITE
    kkt: Array
    violation: Array
    cost: Array


RUNNING, CONVERGED, MAX_ITERATIONS, NON_FINITE = 0, 1, 2, 3
STATUS = ("running", "converged", "max_iterations", "non-finite")


def _riccati(lin: StageLinearisation, sigma, rhs, regularisation):
    """``(dxs, dus)``: the Newton step, the linear-quadratic problem solved by the Riccati
    recursion; ``dx_0 = 0``."""
    weighted_x, weighted_u = sigma[..., None] * lin.c_x, sigma[..., None] * lin.c_u
    q_xx = jnp.einsum("kri,krj->kij", lin.r_x, lin.r_x) + jnp.einsum("kri,krj->kij", lin.c_x, weighted_x)
    q_ux = jnp.einsum("kri,krj->kij", lin.r_u, lin.r_x) + jnp.einsum("kri,krj->kij", lin.c_u, weighted_x)
    q_uu = jnp.einsum("kri,krj->kij", lin.r_u, lin.r_u) + jnp.einsum("kri,krj->kij", lin.c_u, weighted_u)
    g_x = jnp.einsum("kri,kr->ki", lin.r_x, lin.r) + jnp.einsum("kri,kr->ki", lin.c_x, rhs)
    g_u = jnp.einsum("kri,kr->ki", lin.r_u, lin.r) + jnp.einsum("kri,kr->ki", lin.c_u, rhs)
    eye = jnp.eye(q_uu.shape[-1], dtype=q_uu.dtype)
    q_xx = q_xx + regularisation * jnp.eye(q_xx.shape[-1], dtype=q_xx.dtype)
    q_uu = q_uu + regularisation * eye

    def backward(carry, stage):
        value, slope = carry
        qxx, qux, quu, gx, gu, fx, fu, gap = stage
        slope = slope + value @ gap
        hxx = qxx + fx.T @ value @ fx
        hux = qux + fu.T @ value @ fx
        huu = quu + fu.T @ value @ fu
        factor = jsl.cho_factor(huu + 1e-12 * (1.0 + jnp.max(jnp.abs(jnp.diag(huu)))) * eye, lower=True)
        gain = -jsl.cho_solve(factor, hux)
        feedforward = -jsl.cho_solve(factor, gu + fu.T @ slope)
        value = hxx + hux.T @ gain
        return (0.5 * (value + value.T), gx + fx.T @ slope + hux.T @ feedforward), (gain, feedforward)

    stages = (q_xx[:-1], q_ux[:-1], q_uu[:-1], g_x[:-1], g_u[:-1], lin.f_x[:-1], lin.f_u[:-1], lin.gap[:-1])
    _, (gains, feedforwards) = jax.lax.scan(backward, (q_xx[-1], g_x[-1]), stages, reverse=True)

    def forward(dx, stage):
        gain, feedforward, fx, fu, gap = stage
        du = feedforward + gain @ dx
        return fx @ dx + fu @ du + gap, (dx, du)

    dx_last, (dxs, dus) = jax.lax.scan(
        forward, jnp.zeros_like(lin.gap[0]), (gains, feedforwards, lin.f_x[:-1], lin.f_u[:-1], lin.gap[:-1])
    )
    dxs = jnp.concatenate([dxs, dx_last[None]])
    dus = jnp.concatenate([dus, jnp.zeros_like(dus[:1])])
    return dxs, dus


def _dual_infeasibility(lin: StageLinearisation, lam):
    """``(S, nu)``: the gradient of the Lagrangian in the controls, ``R_u^T r + C_u^T lam + B^T
    p_{k+1}``, the costates ``p`` by the adjoint recursion (0 for the last stage's placeholder)."""
    l_x = jnp.einsum("kri,kr->ki", lin.r_x, lin.r) + jnp.einsum("kri,kr->ki", lin.c_x, lam)
    l_u = jnp.einsum("kri,kr->ki", lin.r_u, lin.r) + jnp.einsum("kri,kr->ki", lin.c_u, lam)

    def adjoint(costate, stage):
        lx, fx, fu = stage
        return lx + fx.T @ costate, fu.T @ costate

    _, through = jax.lax.scan(adjoint, l_x[-1], (l_x[:-1], lin.f_x[:-1], lin.f_u[:-1]), reverse=True)
    return jnp.concatenate([l_u[:-1] + through, jnp.zeros_like(l_u[:1])])


def _errors(lin: StageLinearisation, s, lam, mu):
    """``(kkt error of the barrier problem at mu, violation)`` (Wächter and Biegler eq. 5, the dual
    and complementarity terms scaled by ``s_d``)."""
    scale = jnp.maximum(100.0, jnp.mean(jnp.abs(lam)) if lam.size else 100.0) / 100.0
    dual = jnp.max(jnp.abs(_dual_infeasibility(lin, lam)))
    complementarity = jnp.max(jnp.abs(s * lam - mu)) if lam.size else 0.0
    violation = jnp.maximum(jnp.max(jnp.abs(lin.gap)), jnp.max(jnp.maximum(lin.c, 0.0), initial=0.0))
    primal = jnp.maximum(jnp.max(jnp.abs(lin.gap)), jnp.max(jnp.abs(lin.c + s), initial=0.0))
    return jnp.maximum(jnp.maximum(dual, complementarity) / scale, primal), violation


def _cost(r):
    return 0.5 * jnp.sum(r * r)


def _measures(values: StageValues, slack, mu):
    """``(theta, phi)``: the infeasibility and the barrier objective."""
    theta = jnp.sum(jnp.abs(values.gap)) + jnp.sum(jnp.abs(values.c + slack))
    return theta, _cost(values.r) - mu * jnp.sum(jnp.log(slack))


def _line_search(problem, it: Iterate, lin: StageLinearisation, step, mu, alpha_max):
    """``(alpha, (xs, us, slacks, values))``: the longest of ``alpha_max 2^-k`` whose point IPOPT's
    test accepts against the current one (``lin``, residuals scaled), Armijo's near feasibility;
    where none does, the shortest, unless its point is not finite (then ``alpha = 0``)."""
    dxs, dus, ds = step
    current = StageValues(lin.r, lin.c, lin.gap[:-1])
    theta, phi = _measures(current, it.s, mu)
    slope = jnp.sum(lin.r * (jnp.einsum("kri,ki->kr", lin.r_x, dxs) + jnp.einsum("kri,ki->kr", lin.r_u, dus)))
    slope = slope - mu * jnp.sum(ds / it.s)
    theta_min = 1e-4 * jnp.maximum(1.0, theta)

    def trial(alpha):
        xs, us, values = problem.shoot(it.xs, it.us, dxs, dus, alpha)
        values = values._replace(r=it.scale * values.r)
        slack = it.s + alpha * ds
        theta_t, phi_t = _measures(values, slack, mu)
        armijo = (theta <= theta_min) & (slope < 0)
        accept = jnp.where(
            armijo,
            phi_t <= phi + 1e-4 * alpha * slope,
            (theta_t <= (1.0 - 1e-5) * theta) | (phi_t <= phi - 1e-5 * theta),
        )
        accept = accept & jnp.isfinite(theta_t) & jnp.isfinite(phi_t)
        return accept, (xs, us, jnp.maximum(slack, -values.c), values)

    def search_cond(carry):
        k, accepted, _ = carry
        return (k < _BACKTRACKS) & ~accepted

    def search_body(carry):
        k, _, _ = carry
        alpha = alpha_max * 0.5**k
        accepted, point = trial(alpha)
        return k + 1, accepted, (alpha, point)

    # one copy of the trial in the program (the dynamics of every node): the loop starts from a
    # placeholder that the first pass replaces
    placeholder = (alpha_max, (it.xs, it.us, it.s, current))
    _, accepted, (alpha, point) = jax.lax.while_loop(search_cond, search_body, (jnp.asarray(0), jnp.asarray(False), placeholder))
    # a search that fails takes its shortest step (no restoration phase, as ``_interior_point``),
    # unless that step's point is not finite: then the iterate stays
    values = point[3]
    usable = accepted | (jnp.all(jnp.isfinite(values.r)) & jnp.all(jnp.isfinite(values.c)) & jnp.all(jnp.isfinite(values.gap)))
    point = jax.tree.map(lambda new, old: jnp.where(usable, new, old), point, placeholder[1])
    return jnp.where(usable, alpha, 0.0), point


def solve(problem, it: Iterate, cold: Array, *, tol: float, violation_tol: float, max_iterations: int) -> Iterate:
    """Iterate from ``it`` until converged. ``problem`` has ``linearise(xs, us) -> (``
    :class:`StageLinearisation` ``, aux)`` and ``shoot(xs, us, dxs, dus, alpha) -> (xs, us,``
    :class:`StageValues` ``)`` (the point moved by ``alpha`` times the step, and its values). Where ``cold``, the first iteration sets the
    residuals' scale (the cost 1 at the start), the slacks ``max(-c, 1e-2)`` and the multipliers
    ``mu / s``; otherwise they are ``it``'s (a warm start)."""

    def step(it: Iterate) -> Iterate:
        lin, aux = problem.linearise(it.xs, it.us)
        first = cold & (it.steps == 0)
        scale = jnp.where(first, 1.0 / jnp.sqrt(jnp.maximum(_cost(lin.r), jnp.finfo(lin.r.dtype).tiny)), it.scale)
        lin = lin._replace(r=scale * lin.r, r_x=scale * lin.r_x, r_u=scale * lin.r_u)
        start_s = jnp.maximum(-lin.c, 1e-2)
        it = it._replace(s=jnp.where(first, start_s, it.s), lam=jnp.where(first, it.mu / start_s, it.lam), scale=scale)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(leaf)) for leaf in lin]))
        error, violation = _errors(lin, it.s, it.lam, it.mu)
        error0, _ = _errors(lin, it.s, it.lam, 0.0)
        converged = (error0 <= tol) & (violation <= violation_tol)
        mu = jnp.where(error <= _KAPPA_EPSILON * it.mu, jnp.maximum(tol / 10.0, jnp.minimum(0.2 * it.mu, it.mu**1.5)), it.mu)
        sigma = it.lam / it.s
        dxs, dus = _riccati(lin, sigma, mu / it.s + sigma * (lin.c + it.s), it.regularisation)
        c_step = lin.c + jnp.einsum("kri,ki->kr", lin.c_x, dxs) + jnp.einsum("kri,ki->kr", lin.c_u, dus)
        ds = -(c_step + it.s)  # -(c + s) - C d
        dlam = mu / it.s - it.lam - sigma * ds
        fraction = jnp.maximum(0.99, 1.0 - mu)

        def longest(v, dv):
            ratio = jnp.where(dv < 0, -fraction * v / jnp.where(dv < 0, dv, -1.0), jnp.inf)
            return jnp.minimum(1.0, jnp.min(ratio, initial=jnp.inf))

        alpha_max, alpha_dual = longest(it.s, ds), longest(it.lam, dlam)
        alpha, (xs, us, slack, values) = _line_search(problem, it, lin, (dxs, dus, ds), mu, alpha_max)
        lam = it.lam + jnp.minimum(alpha_dual, 1.0) * dlam
        lam = jnp.clip(lam, mu / (1e10 * slack), 1e10 * mu / slack)
        # the last allowed iteration evaluates its point and stays: what is returned is that point
        # with its own by-products
        status = jnp.where(
            converged, CONVERGED, jnp.where(finite, jnp.where(it.steps >= max_iterations, MAX_ITERATIONS, RUNNING), NON_FINITE)
        )
        # a proximal term on the step (Levenberg-Marquardt; Crocoddyl's FDDP regularises so):
        # larger where the line search cut the step short, smaller where it took it whole
        regularisation = jnp.where(
            alpha >= 0.5 * alpha_max,
            jnp.maximum(it.regularisation / 10.0, _REGULARISATION[0]),
            jnp.minimum(it.regularisation * 10.0, _REGULARISATION[1]),
        )
        regularisation = jnp.where(
            alpha >= 0.1 * alpha_max, regularisation, jnp.minimum(it.regularisation * 100.0, _REGULARISATION[1])
        )
        moved = Iterate(
            xs, us, slack, lam, mu, regularisation, scale, aux, it.steps + 1, status, error0, violation, _cost(values.r)
        )
        stay = it._replace(aux=aux, status=status, kkt=error0, violation=violation, cost=_cost(lin.r))
        return jax.tree.map(lambda a, b: jnp.where(status == RUNNING, a, b), moved, stay)

    def cond(it: Iterate):
        return it.status == RUNNING

    it = it._replace(regularisation=jnp.full_like(it.mu, _REGULARISATION[0]), steps=jnp.asarray(0), status=jnp.asarray(RUNNING))
    return jax.lax.while_loop(cond, step, it)
