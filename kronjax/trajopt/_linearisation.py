"""The problem as :class:`~kronjax.trajopt.InteriorPoint` sees it: a function of the solver's
variables ``x`` (the preconditioned free control points and, with ``free_time``, the relative
duration), exactly (:func:`functions`) or with the torques linearised at the samples
(:func:`linearised_functions`: Gauss-Newton's model, whose Hessian lacks only the curvature of the
inverse dynamics), and what it lacks per sample: exactly (:func:`curvature_blocks`) or by the
symmetric-rank-one update (:func:`sr1`) of blocks that approximate it. The algorithm is in ``_interior_point``'s module docstring.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dynamics import inverse_dynamics_hessian
from ._closed_chain import assembled, closed_chain_sample
from ._problem import Problem


def variables(problem: Problem, x):
    """``(z, duration)`` from the solver's variables ``x``: the preconditioned free control points,
    flattened, and with ``free_time`` the duration relative to ``boundary.duration``."""
    size = problem.shape[0] * problem.shape[1]
    z = problem.preconditioner.astype(x.dtype) @ x[:size].reshape(problem.shape)
    duration = None if problem.free_time is None else x[size] * problem.boundary.duration.astype(x.dtype)
    return z, duration


def functions(problem: Problem):
    """``x -> (f, g, h)`` in the solver's variables (the cost not scaled)."""

    def fun(x):
        z, duration = variables(problem, x)
        return (problem if duration is None else problem.at_duration(duration)).evaluate(z)

    return fun


def states_at(problem: Problem, x):
    """The states ``u_k`` at ``x``'s samples: ``(q, v, vd)``, ``(K, 3n)``; on a closed chain the
    actuated joints' ``(q, v, vd, vdd)``, ``(K, 4n)`` (the spline's, before the closure)."""
    z, duration = variables(problem, x)
    at = problem if duration is None else problem.at_duration(duration)
    if problem.partition is None:
        samples = at._samples(z, lambda q, v, vd: q)  # the states alone (a placeholder for tau)
        return jnp.concatenate([samples.q, samples.v, samples.vd], axis=1)
    samples = at._samples(z, lambda q, v, vd, vdd: (q, v, vd, vdd, q))
    return jnp.concatenate([samples.q, samples.v, samples.vd, samples.vdd], axis=1)


def linearisation(problem: Problem, x):
    """What the Gauss-Newton model linearises at ``x``'s samples: the states ``u_k``
    (:func:`states_at`), the outputs ``y_k`` and their Jacobians ``A_k = d y_k / d u_k``. On an
    open chain ``y_k`` are the torques (``(K, n)``, ``A_k`` ``(K, n, 3n)``, the analytical
    derivatives of :func:`~kronjax.inverse_dynamics`); on a closed chain every coordinate's ``(q,
    v, vd, vdd, tau)`` (``(K, nq + 4 nv)``, ``A_k`` ``(K, nq + 4 nv, 4n)``), so that the solver
    differentiates the closure once per iteration, forward, and never twice."""
    states = states_at(problem, x)
    n = problem.nv
    if problem.partition is None:

        def tau(u):
            value = problem._torques(u[None, :n], u[None, n : 2 * n], u[None, 2 * n :], derivatives="analytic")[0]
            return value, value

        jacobian, torques = jax.vmap(jax.jacfwd(tau, has_aux=True))(states)
        return states, torques, jacobian
    partition = problem.partition

    def outputs(u, guess):
        value = closed_chain_sample(partition, guess, *jnp.split(u, 4), problem.method, "analytic")
        value = jnp.concatenate(value)
        return value, value

    guesses = assembled(partition, states[:, :n])
    jacobian, values = jax.vmap(jax.jacfwd(outputs, has_aux=True))(states, guesses)
    return states, values, jacobian


def linearised_functions(problem: Problem, states, torques, jacobian):
    """``(x, extra) -> (f, g, h)`` with the outputs of :func:`linearisation` linearised about
    ``states``: ``y_k(x) = torques_k + A_k (u_k(x) - states_k) + extra_k`` (the cotangent of
    ``extra`` is the adjoint of the outputs). Its value, gradient and constraint Jacobian at the
    linearisation point are exact; its Hessian is the generalised Gauss-Newton matrix, exact but
    for the curvature of the inverse dynamics themselves (and of a closed chain's closure)
    (Schraudolph, Neural Comput. 14, 2002)."""

    def linear(extra, *u):
        return torques + jnp.einsum("kij,kj->ki", jacobian, jnp.concatenate(u, axis=1) - states) + extra

    def split(y):
        nq, nv = problem.model.nq, problem.model.nv
        return jnp.split(y, [nq, nq + nv, nq + 2 * nv, nq + 3 * nv], axis=1)

    def fun(x, extra):
        z, duration = variables(problem, x)
        at = problem if duration is None else problem.at_duration(duration)
        if problem.partition is None:
            return at._evaluate(z, lambda *u: linear(extra, *u))
        return at._evaluate(z, lambda *u: tuple(split(linear(extra, *u))))

    return fun


def curvature_blocks(problem: Problem, states, adjoint):
    """The curvature of the inverse dynamics that the linearisation lacks, ``w_k . d^2 tau_k / d
    u_k^2`` per sample (``(K, 3n, 3n)``, ``u_k = (q, v, vd)``, ``w_k`` the torques' adjoint), from
    the λ-contracted Hessians of :func:`~kronjax.inverse_dynamics_hessian` (``tau`` is linear in
    ``vd``: only its ``vd``-``q`` block is not zero)."""
    n = problem.nv

    def block(u, w):
        hessian, vd_q = inverse_dynamics_hessian(problem.model, u[:n], u[n : 2 * n], u[2 * n :], w)
        zero = jnp.zeros((n, n), hessian.dtype)
        return jnp.block([[hessian, jnp.concatenate([vd_q.T, zero])], [vd_q, zero, zero]])

    return jax.vmap(block)(states, adjoint)


def sr1(curvature, step, change):
    """The symmetric-rank-one update of one sample's curvature (``3n x 3n``; a closed chain's
    ``4n x 4n``, :func:`linearisation`) (N&W eq. 6.24), skipped
    where ``|s^T (y - B s)| < r |s| |y - B s|``, ``r = sqrt(eps)`` (N&W eq. 6.26 with ``r = 1e-8``;
    float32 needs the larger ``r``)."""
    residual = change - curvature @ step
    denominator = residual @ step
    r = jnp.sqrt(jnp.finfo(step.dtype).eps)
    ok = jnp.abs(denominator) >= r * jnp.linalg.norm(step) * jnp.linalg.norm(residual)
    ok = ok & (denominator != 0.0)
    return curvature + jnp.where(ok, 1.0, 0.0) * jnp.outer(residual, residual) / jnp.where(ok, denominator, 1.0)
