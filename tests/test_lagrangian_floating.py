"""The Lagrangian inverse dynamics of models with free, spherical and planar joints (issue 15):
the Euler-Poincare equations, written as Euler-Lagrange in the exponential chart ``xi -> q ⊕ xi``.

* The chart: the velocity of ``q ⊕ xi(t)`` is ``B(xi) xi' = xi' - [xi, xi'] / 2 + O(xi^2)`` per
  joint (``dexp_{-xi}``), by central differences of :func:`kronjax.integrate` and
  :func:`kronjax.difference`, with the bracket from the sub-joints' structure constants
  (``kronjax._spatial.expansion.lie_derivative_terms``). Its first-order term is antisymmetric, so ``v' = xi''`` at
  ``xi = 0``.
* ``method="euler_lagrange"`` against Pinocchio's ``rnea`` on a free-spherical-planar tree; in the slow
  tier also against ``method="rnea"`` on a floating model with a revolute and a fixed joint and a
  planar-rooted one.
* First principles (slow tier): along a free motion under gravity (classical RK4 of
  :func:`kronjax.forward_dynamics` on the ambient equations), ``d/dt (dL_c/dxi') - dL_c/dxi = 0`` in
  the exponential chart at the middle state, with ``L`` from :func:`kronjax.kinetic_energy` and
  :func:`kronjax.potential_energy` and the time derivative by central differences of the momentum
  along the motion: independent of the library's inverse dynamics.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from checks import TOL
from oracles import jit_once, random_tree, relative_error, to_pinocchio
from test_floating_base import Twin

import kronjax as kj
from kronjax._spatial.expansion import lie_derivative_terms

FAST = [("free", -1), ("spherical", 0), ("planar", 1)]  # nv = 12
FLOATING = [("free", -1), ("R", 0), ("spherical", 1), ("F", 2)]  # nv = 10
PLANAR = [("planar", -1), ("spherical", 0), ("R", 1)]  # nv = 7


def _bracket(model: kj.Model):
    """``(x, y) -> [x, y]`` ``(nv,)``: the Lie bracket of velocity vectors, per multi-DoF joint
    (``c[p, l, m] x_l y_m`` with the structure constants of its sub-joints, both orders of the
    stored ``l < m``: ``S_m x S_l = -S_l x S_m``), zero on 1-DoF joints."""
    a = lie_derivative_terms(model.kinematics)
    c = jnp.asarray(a - a.transpose(0, 2, 1))
    return lambda x, y: jnp.einsum("plm,l,m->p", c, x, y)


def _states(model: kj.Model, count: int, seed: int):
    """``count`` random configurations and velocities: ``q = neutral ⊕ random`` (any rotation)."""
    rng = np.random.default_rng(seed)
    v = 2.0 * rng.normal(size=(count, model.nv))
    q = jax.vmap(lambda v: kj.integrate(model, kj.neutral(model), v))(jnp.asarray(v))
    return q, jnp.asarray(rng.normal(size=(count, model.nv)))


def test_exponential_chart_velocity_is_dexp():
    """Central differences of ``integrate``/``difference``: the velocity of ``q ⊕ xi(t)`` is ``B(xi)
    xi' = xi' - [xi, xi'] / 2`` per joint to ``O(|xi|^2 |xi'|, h^2)`` (``dexp_{-xi}``), far closer
    than ``xi'`` or ``xi' + [xi, xi'] / 2`` (the sign)."""
    model = random_tree([("free", -1), ("spherical", 0), ("planar", 1), ("R", 2)], seed=2)
    bracket = _bracket(model)
    h = 1e-4

    @jit_once
    @jax.vmap
    def velocities(turn, xi, xi_dot):
        q = kj.integrate(model, kj.neutral(model), turn)  # any rotation
        here = kj.integrate(model, q, xi)
        ahead, behind = (kj.integrate(model, q, xi + s * h * xi_dot) for s in (1, -1))
        measured = (kj.difference(model, here, ahead) - kj.difference(model, here, behind)) / (2 * h)
        return measured, bracket(xi, xi_dot)

    rng = np.random.default_rng(0)
    turn, xi_dot, xi = rng.normal(size=(3, 4, model.nv)) * np.array([2.0, 1.0, 3e-5])[:, None, None]
    measured, bracket = velocities(turn, xi, xi_dot)
    miss = np.max(np.abs(measured - (xi_dot - 0.5 * bracket)))
    assert miss < 1e-8
    assert np.max(np.abs(measured - xi_dot)) > 1000 * miss
    assert np.max(np.abs(measured - (xi_dot + 0.5 * bracket))) > 1000 * miss


def _inverse_dynamics(model: kj.Model, methods: tuple[str, ...]):
    def fn(q, v, a):
        return [kj.inverse_dynamics(model, q, v, a, method=method) for method in methods]

    return jit_once(jax.vmap(fn))


@pytest.mark.parametrize(
    "spec, methods",
    [
        pytest.param(FAST, ("euler_lagrange",), id="free-spherical-planar"),
        pytest.param(FLOATING, ("euler_lagrange", "rnea"), id="free-R-spherical", marks=pytest.mark.slow),
        pytest.param(PLANAR, ("euler_lagrange", "rnea"), id="planar-spherical-R", marks=pytest.mark.slow),
    ],
)
def test_lagrangian_equals_rnea_and_pinocchio(spec, methods):
    """Against Pinocchio's ``rnea`` (and in the slow tier ``method="rnea"``, itself checked
    against Pinocchio in tests/test_floating_base.py) at Pinocchio's random configurations."""
    model = random_tree(spec, seed=5)
    twin = Twin(model, to_pinocchio(model))
    assert (model.nq, model.nv) == (twin.pm.nq, twin.pm.nv)
    qs, vs, accs = twin.states(8, seed=1)
    lagrangian, *others = _inverse_dynamics(model, methods)(*(jnp.asarray(x) for x in twin.ours(qs, vs, accs)))
    for k in range(len(qs)):
        expected = twin.vec(pin.rnea(twin.pm, twin.pd, qs[k], vs[k], accs[k]))
        assert relative_error(lagrangian[k], expected) < TOL, k
        for other in others:
            assert relative_error(lagrangian[k], other[k]) < TOL, k


# --------------------------------------------------------------------------------------------
# Euler-Lagrange residual in the exponential chart along a free motion
# --------------------------------------------------------------------------------------------

STEP = 1e-3  # RK4 step and difference spacing
SAMPLES = 3  # on each side of the middle state: a 7-point central difference (error O(h^6))
STENCIL = np.array([-1.0, 9.0, -45.0, 0.0, 45.0, -9.0, 1.0]) / 60.0


def _residual(model: kj.Model):
    """``(q0, v0) -> (residual, naive, scale)``: ``d/dt (dL_c/dxi') - dL_c/dxi`` ``(nv,)`` at ``(q0, v0)``
    on a free motion (zero torque) through it, in the exponential chart at ``q0``, and the size of
    the terms (``max |dL_c/dxi|``).

    ``L_c(xi, xi') = L(q0 ⊕ xi, B(xi) xi')`` with ``L`` from :func:`kronjax.kinetic_energy` and
    :func:`kronjax.potential_energy`, and ``B(xi) xi' = xi' - [xi, xi'] / 2``: exact to first order
    in ``xi``, which is all that ``dL_c/dxi`` at ``xi = 0`` sees, and all that the central
    difference of ``dL_c/dxi' = B(xi)^T dL/dv`` sees (along the motion ``xi = O(t)``: the ``O(xi^2)``
    terms are ``O(t^2)``, whose derivative at 0 is 0). The motion: classical RK4 on the ambient
    equations ``q' = d/de integrate(q, e v)``, ``v' = forward_dynamics(q, v, 0)`` (4th order; the
    flow keeps the quaternions unit), ``SAMPLES`` steps each way from ``(q0, v0)``.

    Also the residual of the naive equations, ``B = 1`` (Euler-Lagrange as if ``v`` were the rates
    of coordinates), which must not vanish."""
    zero = jnp.zeros(model.nv)
    bracket = _bracket(model)

    def lagrangian(q, v):
        return kj.kinetic_energy(model, q, v) - kj.potential_energy(model, q)

    def field(q, v):
        return jax.jvp(lambda e: kj.integrate(model, q, e * v), (0.0,), (1.0,))[1], kj.forward_dynamics(model, q, v, zero)

    def rk4_step(state, h):
        """One step; its stages are a scan, so that the program holds one forward dynamics."""

        def stage(carry, coefficients):
            k, total = carry
            node, weight = coefficients
            k = field(*(x + node * h * dx for x, dx in zip(state, k)))
            return (k, tuple(t + weight * dx for t, dx in zip(total, k))), None

        zeros = tuple(jnp.zeros_like(x) for x in state)
        stages = (jnp.array([0.0, 0.5, 0.5, 1.0]), jnp.array([1.0, 2.0, 2.0, 1.0]) / 6)
        (_, total), _ = jax.lax.scan(stage, (zeros, zeros), stages)
        state = tuple(x + h * dx for x, dx in zip(state, total))
        return state, state

    def fn(q0, v0):
        def run(h):
            return jax.lax.scan(lambda s, _: rk4_step(s, h), (q0, v0), None, length=SAMPLES)[1]

        qs, vs = jax.vmap(run)(jnp.array([-STEP, STEP]))  # (2, SAMPLES, .): behind, ahead
        qs = jnp.concatenate([qs[0, ::-1], q0[None], qs[1]])
        vs = jnp.concatenate([vs[0, ::-1], v0[None], vs[1]])

        def residual(half):
            """With ``B(xi) xi' = xi' - half [xi, xi']``."""

            def chart_momentum(q, v):
                """``dL_c/dxi' = B(xi)^T dL/dv`` at ``q = q0 ⊕ xi``."""
                xi = kj.difference(model, q0, q)
                return jax.vjp(lambda xd: xd - half * bracket(xi, xd), zero)[1](jax.grad(lagrangian, argnums=1)(q, v))[0]

            rate = jnp.einsum("s,sp->p", jnp.asarray(STENCIL), jax.vmap(chart_momentum)(qs, vs)) / STEP
            force = jax.grad(lambda xi: lagrangian(kj.integrate(model, q0, xi), v0 - half * bracket(xi, v0)))(zero)
            return rate - force, jnp.max(jnp.abs(force))

        residuals, scales = jax.vmap(residual)(jnp.array([0.5, 0.0]))
        return residuals[0], residuals[1], scales[0]

    return jit_once(jax.vmap(fn))


@pytest.mark.slow
def test_euler_lagrange_residual_along_a_free_motion():
    """Zero torque, gravity on: ``d/dt (dL_c/dxi') = dL_c/dxi`` in the exponential chart at the
    middle state, within the RK4 error, ``O(h^4)`` (of ``max |dL_c/dxi|``, about 35 N here: 4e-11
    at ``h = 4e-3``, 2e-12 at ``2e-3``, 2e-13 at ``1e-3``), down to round-off, ``eps |dL/dv| / h``
    (1e-13 at ``h <= 5e-4``). The naive equations (``B = 1``) miss by 5e-2 or more."""
    model = random_tree(FLOATING, seed=7)
    q0, v0 = _states(model, 3, seed=4)
    residual, naive, scale = _residual(model)(q0, v0)
    worst = float(jnp.max(jnp.abs(residual) / scale[:, None]))
    least_naive = float(jnp.min(jnp.max(jnp.abs(naive), axis=1) / scale))
    print(f"\nEuler-Lagrange residual in the exponential chart: {worst:.1e} of max |dL_c/dxi| (naive: {least_naive:.1e})")
    assert worst < 1e-11
    assert least_naive > 1e-3
