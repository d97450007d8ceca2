"""Rollouts of the forward dynamics (kronjax.simulate) against independent oracles.

* Truc et al. 2019, sec. 5: the feed-forward torques (72) along the closed-form trajectory (73),
  applied to the elbow arm from rest, reproduce (73) (the paper: error below 1e-12 in Simscape).
* Energy conservation of a free (tau = 0) Panda over 5 s (adaptive and fixed step).
* Closed forms: a rotor under a constant torque (q = q0 + qd0 t + tau t^2 / (2 I)); the error
  of the computed-torque law obeys e'' + kd e' + kp e = 0 (critically damped closed form).
* Derivatives of a rollout loss (initial state, a plant mass, controller gains) against central
  finite differences: forward mode; reverse mode (``jax.grad``) in the slow tier (its compilation
  through diffrax's checkpointed adjoint takes about half a minute).

Tolerances and what was reached are printed (``pytest -s``).
"""

import diffrax
import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import simulate as sim

AMPLITUDE = jnp.array([1.0, 0.75, 0.5])
OMEGA = 2 * jnp.pi


def truc_73(t):
    """Truc (73): q_r = [1, 0.75, 0.5](1 - cos 2 pi t), and its first two derivatives."""
    return (
        AMPLITUDE * (1 - jnp.cos(OMEGA * t)),
        AMPLITUDE * OMEGA * jnp.sin(OMEGA * t),
        AMPLITUDE * OMEGA**2 * jnp.cos(OMEGA * t),
    )


@pytest.fixture(scope="module")
def elbow():
    return kj.models.truc_elbow()


def rotor(mass=2.0):
    """One revolute joint about the vertical z axis (gravity along the axis does no work):
    tau = I qdd with I = Izz + m r^2."""
    return kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=mass, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.03))])


@pytest.mark.slow
def test_truc_feedforward_validation(elbow):
    """Truc sec. 5: tau (72) along (73) from q(0) = qd(0) = 0 for 1 s tracks (73). The torques are
    the papers' M qdd + C* (qd ⊗ qd) + g (method="kron"); the plant integrates M^-1 (tau - bias)
    with the bias from Newton-Euler."""
    ts = jnp.linspace(0.0, 1.0, 101)
    torque = sim.feedforward(elbow, truc_73, method="kron")
    reference = jax.vmap(truc_73)(ts)
    for tol in (1e-10, 1e-13):
        out = sim.rollout(elbow, jnp.zeros(3), jnp.zeros(3), torque, ts, solver=diffrax.Dopri8(), rtol=tol, atol=tol)
        error_q = float(jnp.max(jnp.abs(out.q - reference[0])))
        error_qd = float(jnp.max(jnp.abs(out.v - reference[1])))
        print(
            f"\nTruc (72)-(73), Dopri8 rtol = atol = {tol:g}: max |q - q_r| = {error_q:.2e} rad, "
            f"max |qd - qd_r| = {error_qd:.2e} rad/s, {int(out.num_steps)} steps"
        )
    assert bool(out.success)
    assert error_q < 1e-9 and error_qd < 1e-8


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_free_panda_conserves_energy():
    """tau = 0 for 5 s: T + P constant. Relative drift = max |E(t) - E(0)| / max T(t) (the energy
    exchanged, independent of where P is zero)."""
    model = kj.models.panda()
    q0 = jnp.array([0.3, -0.5, 0.4, -1.8, 0.2, 1.2, 0.5])
    qd0 = jnp.array([0.5, -0.3, 0.8, 0.2, -0.6, 0.4, 1.0])
    ts = jnp.linspace(0.0, 5.0, 251)
    energies = jax.jit(  # an oracle: XLA's backend optimisations off compile it faster
        jax.vmap(lambda q, qd: jnp.stack([kj.kinetic_energy(model, q, qd), kj.potential_energy(model, q)])),
        compiler_options={"xla_backend_optimization_level": 0},
    )

    def drift(out):
        e = energies(out.q, out.v)
        total = e[:, 0] + e[:, 1]
        return float(jnp.max(jnp.abs(total - total[0])) / jnp.max(e[:, 0]))

    adaptive = sim.rollout(model, q0, qd0, None, ts, solver=diffrax.Dopri8(), rtol=1e-12, atol=1e-12)
    fixed = sim.rollout(model, q0, qd0, None, ts, solver=diffrax.Tsit5(), dt=2e-3)
    d_adaptive, d_fixed = drift(adaptive), drift(fixed)
    print(
        f"\nPanda free 5 s: energy drift {d_adaptive:.2e} (Dopri8 rtol = atol = 1e-12, "
        f"{int(adaptive.num_steps)} steps), {d_fixed:.2e} (Tsit5 fixed dt = 2e-3, {int(fixed.num_steps)} steps)"
    )
    assert d_adaptive < 1e-8
    assert d_fixed < 1e-6
    # the arm really moves: kinetic energy is exchanged with potential energy
    assert float(jnp.max(jnp.abs(adaptive.q[-1] - q0))) > 0.5


def test_rotor_closed_form_vmapped_over_states_and_parameters():
    """q(t) = q0 + qd0 t + tau t^2 / (2 I), I = Izz + m r^2, for a batch of initial states and
    models (masses) at once, under a constant torque tabulated by open_loop."""
    ts = jnp.linspace(0.0, 0.7, 8)
    tau = 0.4
    torque = sim.open_loop(jnp.array([0.0, 1.0]), jnp.array([[tau], [tau]]))
    model = rotor()

    def trajectory(q0, qd0, mass):
        plant = eqx.tree_at(lambda m: m.inertials.mass, model, jnp.array([mass]))
        return sim.rollout(plant, q0, qd0, torque, ts).q

    q0s = jnp.array([[0.0], [0.5], [-1.0]])
    qd0s = jnp.array([[0.0], [1.5], [-0.3]])
    masses = jnp.array([0.5, 2.0, 8.0])
    q = jax.jit(jax.vmap(trajectory))(q0s, qd0s, masses)
    inertia = (0.03 + masses * 0.1**2)[:, None, None]
    expected = q0s[:, None, :] + qd0s[:, None, :] * ts[:, None] + tau * ts[:, None] ** 2 / (2 * inertia)
    np.testing.assert_allclose(q, expected, rtol=0, atol=1e-10)


def test_computed_torque_error_dynamics(elbow):
    """With the plant equal to the controller's model, e = q_r - q obeys e'' + kd e' + kp e = 0:
    critically damped (kp = w^2, kd = 2 w), e(t) = (e0 + (ed0 + w e0) t) exp(-w t)."""
    w = 6.0
    e0 = jnp.array([0.05, -0.1, 0.08])
    ed0 = jnp.array([0.2, 0.0, -0.3])
    ts = jnp.linspace(0.0, 1.0, 21)
    law = sim.computed_torque(elbow, truc_73, kp=w**2, kd=2 * w)
    out = sim.rollout(elbow, -e0, -ed0, law, ts, solver=diffrax.Dopri8(), rtol=1e-12, atol=1e-12)
    q_r = jax.vmap(truc_73)(ts)[0]
    t = ts[:, None]
    expected = (e0 + (ed0 + w * e0) * t) * jnp.exp(-w * t)
    error = float(jnp.max(jnp.abs((q_r - out.q) - expected)))
    print(f"\ncomputed torque: max deviation of e(t) from the closed form {error:.2e}")
    assert error < 1e-9


def _gains_loss(elbow, **rollout):
    """A loss of a PD-controlled rollout of the elbow arm (Dopri8, rtol = atol = 1e-10) as a
    function of the initial state, the plant mass of link 3 and the gains kp; their values.

    Not tighter: at 1e-11 and below the step controller's error estimates are at rounding level,
    and the backward pass of diffrax's checkpointed adjoint, which recomputes the steps in another
    compiled program, can then reject a step that the forward pass accepted. Its gradient was 3e-6
    off forward mode at 1e-12 when XLA's backend optimisation level was 0 (1e-14 at 1e-10)."""
    ts = jnp.linspace(0.0, 1.0, 5)
    qd0 = jnp.array([0.3, 0.1, -0.2])
    target = jnp.array([0.5, 0.3, -0.2])

    def loss(q0, mass, kp):
        plant = eqx.tree_at(lambda m: m.inertials.mass, elbow, elbow.inertials.mass.at[2].set(mass))
        law = sim.pd(kp, 3.0, target)
        out = sim.rollout(plant, q0, qd0, law, ts, solver=diffrax.Dopri8(), rtol=1e-10, atol=1e-10, **rollout)
        return jnp.sum(out.q[-1] ** 2) + 0.1 * jnp.sum(out.v[-1] ** 2)

    return loss, (jnp.array([0.2, -0.4, 0.6]), elbow.inertials.mass[2], jnp.array([20.0, 30.0, 10.0]))


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_forward_mode_derivatives_match_central_differences(elbow):
    """d loss / d (q0, plant mass of link 3, PD gains) by forward mode through the solver
    (``jax.jacfwd`` with ``adjoint=diffrax.ForwardMode()``) vs central differences (h = 1e-5) of
    the same rollout (the 14 shifted losses in one vmapped call)."""
    loss, params = _gains_loss(elbow, adjoint=diffrax.ForwardMode())
    derivatives = jax.jit(jax.jacfwd(loss, argnums=(0, 1, 2)))(*params)
    flat, unflatten = jax.flatten_util.ravel_pytree(params)
    h = 1e-5
    shifted = jnp.concatenate([flat + h * jnp.eye(flat.size), flat - h * jnp.eye(flat.size)])
    values = np.asarray(jax.jit(jax.vmap(lambda x: loss(*unflatten(x))))(shifted))
    fd = unflatten(jnp.asarray((values[: flat.size] - values[flat.size :]) / (2 * h)))
    errors = {
        name: float(np.max(np.abs(np.asarray(d) - np.asarray(f))) / np.max(np.abs(np.asarray(f))))
        for name, d, f in zip(("q0", "mass", "kp"), derivatives, fd)
    }
    print("\nforward mode vs central differences, relative: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert all(v < 1e-6 for v in errors.values()), errors


@pytest.mark.slow
def test_gradients_match_central_differences(elbow):
    """d loss / d (q0, plant mass of link 3, PD gains) by reverse mode through the solver (diffrax's
    default checkpointed adjoint) vs central differences (h = 1e-5) of the same rollout. Slow tier:
    its compilation takes about half a minute; the forward-mode test checks the same derivatives."""
    loss, (q0, mass, kp) = _gains_loss(elbow)
    value = jax.jit(loss)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(q0, mass, kp)
    h = 1e-5
    eye = jnp.eye(3)
    fd_q0 = np.array([(value(q0 + h * e, mass, kp) - value(q0 - h * e, mass, kp)) / (2 * h) for e in eye])
    fd_mass = (value(q0, mass + h, kp) - value(q0, mass - h, kp)) / (2 * h)
    fd_kp = np.array([(value(q0, mass, kp + h * e) - value(q0, mass, kp - h * e)) / (2 * h) for e in eye])
    errors = {
        "q0": np.max(np.abs(grads[0] - fd_q0)) / np.max(np.abs(fd_q0)),
        "mass": abs(float(grads[1]) - fd_mass) / abs(fd_mass),
        "kp": np.max(np.abs(grads[2] - fd_kp)) / np.max(np.abs(fd_kp)),
    }
    print("\ngradient vs central differences, relative: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert all(v < 1e-6 for v in errors.values()), errors


def test_pd_with_gravity_compensation_settles_without_recompiling(elbow):
    """PD + g(q) stabilises a set point (Takegaki and Arimoto); gains are pytree leaves of the
    controller Module, so new gains reuse the compiled rollout."""
    setpoint = jnp.array([0.4, -0.3, 0.5])

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def final(law):
        return sim.rollout(elbow, jnp.zeros(3), jnp.zeros(3), law, jnp.array([0.0, 4.0])).q[-1]

    soft = final(sim.pd(30.0, 6.0, setpoint, gravity_compensation=elbow))
    stiff = final(sim.pd(100.0, 20.0, setpoint, gravity_compensation=elbow))
    np.testing.assert_allclose(soft, setpoint, atol=1e-3)
    np.testing.assert_allclose(stiff, setpoint, atol=1e-3)
    assert not np.allclose(soft, stiff, rtol=0, atol=1e-14)


@pytest.mark.usefixtures("without_shape_checks")
def test_bad_inputs_raise_clear_errors(elbow):
    zero = jnp.zeros(3)
    ts = jnp.linspace(0.0, 1.0, 5)
    with pytest.raises(ValueError, match="strictly increasing"):
        sim.rollout(elbow, zero, zero, None, jnp.array([0.0, 0.5, 0.5, 1.0]))
    with pytest.raises(ValueError, match="strictly increasing"):
        sim.rollout(elbow, zero, zero, None, jnp.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="at least 2"):
        sim.rollout(elbow, zero, zero, None, jnp.array([0.0]))
    with pytest.raises(ValueError, match=r"q0 must have shape \(3,\)"):
        sim.rollout(elbow, jnp.zeros(2), zero, None, ts)
    with pytest.raises(ValueError, match=r"v0 must have shape \(3,\)"):
        sim.rollout(elbow, zero, jnp.zeros((3, 1)), None, ts)
    with pytest.raises(ValueError, match=r"shape \(3,\).*got shape \(2,\)"):
        sim.rollout(elbow, zero, zero, lambda t, q, qd: jnp.zeros(2), ts)
    with pytest.raises(ValueError, match="got a tuple"):
        sim.rollout(elbow, zero, zero, lambda t, q, qd: (q, qd), ts)
    with pytest.raises(TypeError, match=r"torque\(t, q, v\)"):
        sim.rollout(elbow, zero, zero, lambda t, q: q, ts)
    with pytest.raises(TypeError, match="callable"):
        sim.rollout(elbow, zero, zero, jnp.zeros(3), ts)
    with pytest.raises(TypeError, match="diffrax solver"):
        sim.rollout(elbow, zero, zero, None, ts, solver="rk4")
    with pytest.raises(ValueError, match="dt must be positive"):
        sim.rollout(elbow, zero, zero, None, ts, dt=-0.1)
    with pytest.raises(ValueError, match="unknown inverse-dynamics method"):
        sim.feedforward(elbow, truc_73, method="fast")
    with pytest.raises(ValueError, match=r"taus must have shape \(2, n\)"):
        sim.open_loop(jnp.array([0.0, 1.0]), jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"reference\(t\) returned q_r of shape"):
        sim.rollout(elbow, zero, zero, sim.feedforward(elbow, lambda t: (jnp.zeros(2),) * 3), ts)
