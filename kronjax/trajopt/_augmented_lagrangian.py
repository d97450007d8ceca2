"""The first-order solver: an augmented Lagrangian whose inner problems are minimised by L-BFGS
or any optax optimiser (Nocedal and Wright, *Numerical Optimization*, 2nd ed., sec. 17.4)."""

from __future__ import annotations

import time
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array

from ._problem import Problem
from ._solver import (
    CONVERGED,
    NON_FINITE,
    NON_FINITE_QUANTITIES,
    RUNNING,
    Progress,
    Solution,
    SolverReport,
    compile_clock,
    status_names,
)

# the status of a guess whose constraints (inequalities and equalities together) or whose gradient
# of the augmented Lagrangian are not finite
_CONSTRAINTS = NON_FINITE_QUANTITIES.index("constraints")
_GRADIENT = NON_FINITE_QUANTITIES.index("gradient of the augmented Lagrangian")


class _State(NamedTuple):
    z: Array
    lam: Array
    rho: Array
    scale: Array
    cost: Array
    violation: Array
    previous_cost: Array
    finite_gradient: Array  # whether the inner minimisation's last gradient was finite


def _cost_and_inequalities(problem: Problem, z):
    """The cost and every constraint as an inequality ``g <= 0``: an equality ``h = 0`` as
    ``h <= 0`` and ``-h <= 0`` (the augmented Lagrangian of the pair is that of ``h``)."""
    f, g, h = problem.evaluate(z)
    return f, jnp.concatenate([g, h, -h])


def _augmented(problem: Problem, z, lam, rho, scale):
    """The augmented Lagrangian, with ``(f, violation, g)`` as auxiliary outputs (one evaluation
    of the samples serves the cost, the constraints and the progress record)."""
    f, g = _cost_and_inequalities(problem, z)
    penalty = jnp.sum(jnp.maximum(lam + rho * g, 0.0) ** 2 - lam**2) / (2.0 * rho)
    return f / scale + penalty, (f, jnp.maximum(jnp.max(g), 0.0), g)


def _init_state(problem: Problem, z, rho0):
    f, g = _cost_and_inequalities(problem, z)
    scale = jax.lax.stop_gradient(jnp.where(jnp.abs(f) > 0, jnp.abs(f), 1.0))
    rho = jnp.asarray(rho0, z.dtype)
    return _State(z, jnp.zeros_like(g), rho, scale, f, jnp.maximum(jnp.max(g), 0.0), f, jnp.asarray(True))


@eqx.filter_jit
def _init_batch(problem: Problem, z, rho0):
    return jax.vmap(lambda z: _init_state(problem, z, rho0))(z)


def _vdot(a, b):
    return jnp.sum(a * b)


def _minimise_lbfgs(value_and_grad, z0, max_iterations: int, gtol: float):
    """L-BFGS (optax's ``scale_by_lbfgs`` for the direction) with a backtracking Armijo line
    search (quadratic interpolation, halving at most), written so that the objective and its
    gradient are evaluated at a single place in the loop body: one trial point per iteration of
    the while loop. Compilation stays small, since the heavy function (inverse dynamics at every
    sample and its gradient) is traced once. The memory is reset when the curvature ``s.y`` is not
    positive. Returns ``(z, aux, accepted iterations, cost and violation after each, whether the
    gradient at z is finite)``; ``aux`` is NaN where not even ``z0``'s value was finite."""
    lbfgs = optax.scale_by_lbfgs()
    fresh = lbfgs.init(z0)
    (_, aux0), _ = jax.eval_shape(value_and_grad, z0)
    dtype = z0.dtype
    zeros = jnp.zeros(max_iterations, dtype)

    def cond(c):
        k, evals, failed, grad = c["k"], c["evals"], c["failed"], c["grad"]
        return (k <= max_iterations) & (evals < 4 * max_iterations + 8) & ~failed & ((k == 0) | (jnp.max(jnp.abs(grad)) > gtol))

    def body(c):
        trial = c["z"] + c["alpha"] * c["d"]
        (value, aux), grad = value_and_grad(trial)
        slope = _vdot(c["grad"], c["d"])
        accept = jnp.isfinite(value) & (value <= c["value"] + 1e-4 * c["alpha"] * slope)
        # the next direction, used only if the trial is accepted
        s, y = trial - c["z"], grad - c["grad"]
        curvature = _vdot(s, y) > 1e-12 * jnp.sqrt(_vdot(s, s) * _vdot(y, y))
        memory = jax.tree.map(lambda a, b: jnp.where(curvature, a, b), c["memory"], fresh)
        direction, memory = lbfgs.update(grad, memory, trial)
        d = -direction
        steepest = -grad * jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.sqrt(_vdot(grad, grad)), 1e-300))
        d = jnp.where(_vdot(grad, d) < 0, d, steepest)
        # on rejection: the minimiser of the quadratic through value(0), slope and value(alpha)
        alpha = c["alpha"]
        quadratic = -slope * alpha**2 / (2.0 * (value - c["value"] - slope * alpha))
        shrunk = jnp.clip(jnp.where(jnp.isfinite(quadratic), quadratic, 0.5 * alpha), 0.1 * alpha, 0.5 * alpha)
        k = c["k"]
        index = jnp.maximum(k - 1, 0)
        record = accept & (k > 0)
        new = dict(
            z=jnp.where(accept, trial, c["z"]),
            value=jnp.where(accept, value, c["value"]),
            grad=jnp.where(accept, grad, c["grad"]),
            aux=jax.tree.map(lambda a, b: jnp.where(accept, a, b), aux, c["aux"]),
            d=jnp.where(accept, d, c["d"]),
            alpha=jnp.where(accept, jnp.ones_like(alpha), shrunk),
            memory=jax.tree.map(lambda a, b: jnp.where(accept, a, b), memory, c["memory"]),
            k=k + accept.astype(k.dtype),
            evals=c["evals"] + 1,
            failed=~accept & (shrunk < 1e-12),
            costs=jnp.where(record, c["costs"].at[index].set(aux[0]), c["costs"]),
            violations=jnp.where(record, c["violations"].at[index].set(aux[1]), c["violations"]),
        )
        return new

    init = dict(
        z=z0,
        value=jnp.asarray(jnp.inf, dtype),  # the first trial (alpha = 0) is always accepted
        grad=jnp.zeros_like(z0),
        aux=jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), aux0),
        d=jnp.zeros_like(z0),
        alpha=jnp.asarray(0.0, dtype),
        memory=fresh,
        k=jnp.asarray(0),
        evals=jnp.asarray(0),
        failed=jnp.asarray(False),
        costs=zeros,
        violations=zeros,
    )
    out = jax.lax.while_loop(cond, body, init)
    finite = jnp.all(jnp.isfinite(out["grad"]))
    return out["z"], out["aux"], jnp.maximum(out["k"] - 1, 0), out["costs"], out["violations"], finite


def _minimise_optax(value_and_grad, optimizer, fun, z0, max_iterations: int, gtol: float):
    """A user's optax optimiser: ``z <- z + update(grad)``; the objective is evaluated once per
    iteration (at the point whose result is recorded). Returns as :func:`_minimise_lbfgs`."""
    (_, aux0), _ = jax.eval_shape(value_and_grad, z0)
    zeros = jnp.zeros(max_iterations, z0.dtype)

    def cond(c):
        return (c["k"] <= max_iterations) & ((c["k"] == 0) | (jnp.max(jnp.abs(c["grad"])) > gtol))

    def body(c):
        (value, aux), grad = value_and_grad(c["next"])
        updates, state = optimizer.update(grad, c["state"], c["next"], value=value, grad=grad, value_fn=fun)
        k = c["k"]
        index = jnp.maximum(k - 1, 0)
        return dict(
            z=c["next"],
            next=optax.apply_updates(c["next"], updates),
            grad=grad,
            aux=aux,
            state=state,
            k=k + 1,
            costs=jnp.where(k > 0, c["costs"].at[index].set(aux[0]), c["costs"]),
            violations=jnp.where(k > 0, c["violations"].at[index].set(aux[1]), c["violations"]),
        )

    init = dict(
        z=z0,
        next=z0,
        grad=jnp.zeros_like(z0),
        aux=jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), aux0),
        state=optimizer.init(z0),
        k=jnp.asarray(0),
        costs=zeros,
        violations=zeros,
    )
    out = jax.lax.while_loop(cond, body, init)
    return out["z"], out["aux"], out["k"] - 1, out["costs"], out["violations"], jnp.all(jnp.isfinite(out["grad"]))


def _outer_step(
    problem: Problem, state: _State, optimizer, inner: int, gtol: float, tol: float, rho_growth: float, rho_max: float
):
    """One outer iteration for one guess: minimise the augmented Lagrangian from ``state.z``
    (optimiser restarted) until ``|grad|_inf <= gtol`` or ``inner`` iterations, then update the
    multipliers ``lam <- max(0, lam + rho g)`` and the penalty. Returns the new state, the
    iterations done, and the cost and violation after each iteration (``(inner,)``, the last
    value repeated after convergence)."""

    precondition = problem.preconditioner.astype(state.z.dtype)

    def fun(w):
        return _augmented(problem, precondition @ w, state.lam, state.rho, state.scale)

    w0 = problem.preconditioner_inverse.astype(state.z.dtype) @ state.z
    value_and_grad = jax.value_and_grad(fun, has_aux=True)
    if optimizer is None:
        w, aux, k, costs, violations, finite_gradient = _minimise_lbfgs(value_and_grad, w0, inner, gtol)
    else:
        w, aux, k, costs, violations, finite_gradient = _minimise_optax(
            value_and_grad, optimizer, lambda w: fun(w)[0], w0, inner, gtol
        )
    z = precondition @ w
    f, violation, g = aux
    # no point accepted, not even the start (its value was not finite): report the start's values,
    # so that the first non-finite one is named
    unset = jnp.isnan(f)
    f, violation = jnp.where(unset, state.cost, f), jnp.where(unset, state.violation, violation)
    done = jnp.arange(inner) < k
    costs, violations = jnp.where(done, costs, f), jnp.where(done, violations, violation)
    lam = jnp.maximum(state.lam + state.rho * g, 0.0)
    grow = (violation > tol) & (violation > 0.25 * state.violation)
    rho = jnp.where(grow, jnp.minimum(state.rho * rho_growth, rho_max), state.rho)
    return _State(z, lam, rho, state.scale, f, violation, state.cost, finite_gradient), k, (costs, violations)


@eqx.filter_jit
def _outer_batch(problem, state, optimizer, inner, gtol, tol, rho_growth, rho_max):
    return jax.vmap(lambda s: _outer_step(problem, s, optimizer, inner, gtol, tol, rho_growth, rho_max))(state)


class AugmentedLagrangianState(NamedTuple):
    """What a warm start reuses (``Result.state`` of an :class:`AugmentedLagrangian` solution), per
    guess: multipliers ``lam`` (``(G, c)``), penalties ``rho`` and the cost's scale (``(G,)``).

    Example:
        ``result.state`` of an :class:`AugmentedLagrangian` solution holds, per guess:

        >>> from kronjax import trajopt
        >>> trajopt.AugmentedLagrangianState._fields
        ('lam', 'rho', 'scale')
    """

    lam: Array
    rho: Array
    scale: Array


class AugmentedLagrangian(eqx.Module):
    """An augmented Lagrangian for the inequalities (Powell-Hestenes-Rockafellar; N&W sec. 17.4)::

        L(z; lam, rho) = f(z) / f0 + 1 / (2 rho) sum_k (max(0, lam_k + rho g_k)^2 - lam_k^2)

    with ``f0`` the cost of the initial guess. Each outer iteration minimises ``L`` over ``z``
    with L-BFGS (optax's ``scale_by_lbfgs`` directions, an Armijo backtracking line search), in
    variables preconditioned by the Gram matrix of the acceleration, until the gradient is
    small; then ``lam <- max(0, lam + rho g)``, and ``rho <- rho_growth rho`` when the violation
    did not shrink by 4. A first-order method: it needs thousands of iterations where
    :class:`InteriorPoint` needs tens, each of them cheaper (one gradient, no Hessian); it may
    win on problems too large for a dense Newton step (thousands of free control points).

    Args:
        optimizer: an optax optimiser for the inner minimisation, in place of L-BFGS.
        max_inner_iterations, gtol: each outer iteration minimises ``L`` until its gradient is at
            most ``gtol`` (max-norm; default ``1e-9`` in float64, ``1e-5`` in float32) or for
            ``max_inner_iterations`` optimiser iterations.
        max_outer_iterations: at most this many multiplier updates.
        rho_init, rho_growth, rho_max: the penalty parameter.
        violation_tol, cost_tol: stop when every guess has violation ``<= violation_tol`` and a
            relative cost change ``<= cost_tol`` over the last outer iteration.

    Example:
        For ``trajopt.optimize(model, boundary, cost, solver=solver)``: L-BFGS (the default), or
        any optax optimiser for the inner minimisations:

        >>> import optax
        >>> from kronjax import trajopt
        >>> solver = trajopt.AugmentedLagrangian(max_outer_iterations=10)
        >>> solver.max_inner_iterations, solver.rho_init, solver.optimizer is None
        (500, 10.0, True)
        >>> adam = trajopt.AugmentedLagrangian(optimizer=optax.adam(1e-2), max_inner_iterations=2000)
    """

    optimizer: optax.GradientTransformation | None = None
    max_inner_iterations: int = 500
    max_outer_iterations: int = 20
    gtol: float | None = None
    rho_init: float = 10.0
    rho_growth: float = 10.0
    rho_max: float = 1e7
    violation_tol: float = 1e-6
    cost_tol: float = 1e-7

    def __check_init__(self):
        if self.max_inner_iterations < 1 or self.max_outer_iterations < 1:
            raise ValueError("max_inner_iterations and max_outer_iterations must be at least 1")

    def solve(self, problem: Problem, z0: Array, duration0: Array, warm: AugmentedLagrangianState | None, callback) -> Solution:
        """Solve ``problem`` from the guesses ``z0`` (``(G, m_free, n)``); ``warm`` is the
        :class:`AugmentedLagrangianState` of an earlier solution. A free duration is refused."""
        if problem.free_time is not None:
            raise NotImplementedError("free_time (a free duration) needs the InteriorPoint solver")
        start = time.perf_counter()
        gtol = self.gtol if self.gtol is not None else (1e-9 if jnp.finfo(z0.dtype).bits >= 64 else 1e-5)
        optimizer = self.optimizer
        if optimizer is not None and not isinstance(optimizer, optax.GradientTransformationExtraArgs):
            optimizer = optax.with_extra_args_support(optimizer)
        state = _init_batch(problem, z0, self.rho_init)
        if warm is not None:
            state = state._replace(
                lam=warm.lam.astype(z0.dtype), rho=warm.rho.astype(z0.dtype), scale=warm.scale.astype(z0.dtype)
            )
        costs, violations = [], []
        iterations = np.zeros(z0.shape[0], dtype=int)
        compile_time = 0.0
        outer = 0
        for outer in range(1, self.max_outer_iterations + 1):
            with compile_clock() as seconds:
                state, k, (c, v) = _outer_batch(
                    problem, state, optimizer, self.max_inner_iterations, gtol, self.violation_tol, self.rho_growth, self.rho_max
                )
                k = np.asarray(k)
            compile_time += seconds()
            iterations += k
            costs.append(np.asarray(c).T[: max(int(k.max()), 1)])
            violations.append(np.asarray(v).T[: max(int(k.max()), 1)])
            cost_now, viol_now = np.asarray(state.cost), np.asarray(state.violation)
            change = np.abs(cost_now - np.asarray(state.previous_cost)) / np.maximum(np.abs(cost_now), 1e-300)
            converged = (viol_now <= self.violation_tol) & (change <= self.cost_tol)
            if callback is not None:
                callback(
                    Progress(outer, iterations.copy(), cost_now, viol_now, np.asarray(state.rho), time.perf_counter() - start)
                )
            broken = ~np.isfinite(cost_now) | ~np.isfinite(viol_now) | ~np.asarray(state.finite_gradient)
            if (converged | broken).all():
                break
        status = np.where(converged, CONVERGED, RUNNING)
        status = np.where(np.asarray(state.finite_gradient), status, NON_FINITE + _GRADIENT)
        status = np.where(np.isfinite(viol_now), status, NON_FINITE + _CONSTRAINTS)
        status = np.where(np.isfinite(cost_now), status, NON_FINITE)
        report = SolverReport(
            best=-1,
            cost=np.asarray(state.cost),
            violation=np.asarray(state.violation),
            converged=status == CONVERGED,
            iterations=iterations,
            outer_iterations=outer,
            history_cost=np.concatenate(costs, axis=0),
            history_violation=np.concatenate(violations, axis=0),
            compile_time=compile_time,
            wall_time=0.0,
            status=status_names(status),
            failed_row=np.full(status.shape, -1),
        )
        return Solution(state.z, duration0, AugmentedLagrangianState(state.lam, state.rho, state.scale), report)
