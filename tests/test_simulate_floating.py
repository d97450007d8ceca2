"""Rollouts of models with free, spherical and planar joints (kronjax.simulate, issue 15): the
configuration is integrated on the manifold, in local coordinates re-centred at every step.

* First principles: a free-floating robot (the Romeo humanoid, nv = 37; Solo-12 in the slow tier)
  in zero gravity with no torques, 5 s at tight tolerances: linear and angular momentum conserved
  to 1e-10 relative, kinetic energy to 1e-8, every quaternion of unit norm within 1e-12, at every
  save time (dense output included).
* An independent integrator: a tree with every joint kind under gravity and open-loop torques,
  against classical RK4 on the ambient equations ``qdot = d/dε integrate(q, ε v)`` (the unit
  quaternions are invariant under that flow) with 4000 fixed steps.
* Forward-mode derivatives of a loss of the final state with respect to the initial velocity
  against central differences (fixed steps: the derivative of the same discrete map); reverse
  mode (``jax.grad``) in the slow tier.
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
import pytest
import oracles
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
    assert bool(out.success) and out.q.shape == (51, model.nq) and out.qd.shape == (51, model.nv)

    linear, angular, energy = (np.asarray(x) for x in momentum_and_energy(model)(out.q, out.qd))
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


@pytest.mark.slow
def test_every_joint_kind_against_ambient_rk4():
    """The mixed tree (free root, spherical, planar, revolute and prismatic joints) under gravity
    and open-loop torques, against RK4 with 4000 steps on ``(q, v)`` in the ambient coordinates;
    the save times fall inside steps (dense output)."""
    model = mixed_model()
    joints = sim._moving_joints(model)
    q0 = kj.random_configuration(model, jax.random.PRNGKey(0))
    v0 = jax.random.normal(jax.random.PRNGKey(1), (model.nv,))
    torque = sim.open_loop(jnp.array([0.0, 1.0]), jax.random.normal(jax.random.PRNGKey(2), (2, model.nv)))
    ts = jnp.linspace(0.0, 1.0, 9)

    def field(t, y):
        q, v = y
        return sim._configuration_rate(joints, q, v), kj.forward_dynamics(model, q, v, torque(t, q, v))

    @jax.jit
    def rk4(y0):
        h, per_save = 1.0 / 4000, 500

        def step(carry, _):
            t, y = carry
            add = lambda y, k, c: jax.tree.map(lambda a, b: a + c * b, y, k)
            k1 = field(t, y)
            k2 = field(t + h / 2, add(y, k1, h / 2))
            k3 = field(t + h / 2, add(y, k2, h / 2))
            k4 = field(t + h, add(y, k3, h))
            y = jax.tree.map(lambda a, b, c, d, e: a + h / 6 * (b + 2 * c + 2 * d + e), y, k1, k2, k3, k4)
            return (t + h, y), None

        def save(carry, _):
            carry, _ = jax.lax.scan(step, carry, None, length=per_save)
            return carry, carry[1]

        return jax.lax.scan(save, (jnp.zeros(()), y0), None, length=8)[1]

    q_ref, v_ref = rk4((q0, v0))
    out = sim.rollout(model, q0, v0, torque, ts, solver=diffrax.Dopri8(), rtol=1e-12, atol=1e-12)
    dq = np.stack([np.asarray(kj.difference(model, a, b)) for a, b in zip(q_ref, out.q[1:])])
    dv = np.asarray(out.qd[1:] - v_ref)
    speed = float(np.abs(np.asarray(v_ref)).max())  # about 26: the torques spin the light bodies
    print(
        f"\nmixed tree: {int(out.num_steps)} Dopri8 steps; vs RK4: |dq| {np.abs(dq).max():.1e}, "
        f"|dv| {np.abs(dv).max():.1e} (max |v| {speed:.1f})"
    )
    # Dopri8's global error at rtol 1e-12 (the RK4 reference agrees with rtol 1e-14 to 1e-12)
    assert np.abs(dq).max() < 1e-10 and np.abs(dv).max() < 1e-11 * speed
    norms = np.stack([np.linalg.norm(np.asarray(out.q[:, s]), axis=1) for s in quaternion_slices(model)])
    assert np.max(np.abs(norms - 1)) < 1e-14
    planar = model.configuration_index("j5")
    assert np.max(np.abs(np.linalg.norm(np.asarray(out.q[:, planar][:, 2:]), axis=1) - 1)) < 1e-14
    # the default solver and tolerances agree to about their tolerance
    loose = sim.rollout(model, q0, v0, torque, ts)
    assert np.abs(np.asarray(kj.difference(model, loose.q[-1], out.q[-1]))).max() < 1e-6


def _loss_of_initial_velocity(model, q0, ts, **kwargs):
    weights = jnp.linspace(0.5, 1.5, model.nq)

    def loss(v0):
        out = sim.rollout(model, q0, v0, None, ts, **kwargs)
        return jnp.sum(weights * jnp.sin(out.q[-1])) + 0.1 * jnp.sum(out.qd[-1] ** 2)

    return loss


def _central_differences(loss, v0, eps=1e-6):
    basis = np.eye(v0.shape[0])
    return np.array([(loss(v0 + eps * e) - loss(v0 - eps * e)) / (2 * eps) for e in basis])


@pytest.mark.slow
def test_reverse_mode_gradient_matches_central_differences():
    model = mixed_model()
    q0 = kj.random_configuration(model, jax.random.PRNGKey(3))
    v0 = 0.5 * jax.random.normal(jax.random.PRNGKey(4), (model.nv,))
    ts = jnp.array([0.0, 0.2])
    loss = jax.jit(_loss_of_initial_velocity(model, q0, ts, rtol=1e-10, atol=1e-10))
    grad = np.asarray(jax.jit(jax.grad(loss))(v0))
    fd = _central_differences(loss, v0)
    err = np.max(np.abs(grad - fd)) / np.max(np.abs(fd))
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
    with pytest.raises(ValueError, match=r"qd0 must have shape \(15,\)"):
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
