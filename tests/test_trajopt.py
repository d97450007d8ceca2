"""Trajectory optimisation (kronjax.trajopt) against independent oracles.

* B-splines against scipy.interpolate.BSpline (values and derivatives).
* Closed-form optima: the minimum-jerk motion of Flash and Hogan (1985), the quintic
  q0 + (q1 - q0)(10 s^3 - 15 s^4 + 6 s^5) with cost 720 (q1 - q0)^2 / T^5 per joint, and the
  torque-optimal motion of a rotor (tau = I qdd, cost I^2 12 (q1 - q0)^2 / T^3 with free end
  accelerations: the cubic).
* Costs evaluated on a polynomial motion against exact polynomial integrals (numpy).
* A two-link arm with torque and position limits, 20 free spline coefficients: the optimum of
  the interior-point method equals that of scipy.optimize.minimize (SLSQP) on the same
  transcription to 1e-6; its Gauss-Newton Hessian plus the curvature of the Euler-Lagrange
  equations (autodiff) is the exact Hessian to 1e-10; the augmented Lagrangian's to 1e-4; limits hold; boundary conditions
  are exact. A new goal reuses the compiled solver; a warm start needs fewer iterations.
* The Panda from several guesses: each converges in at most 100 iterations; float32 reaches the
  float64 optimum to 1e-4 (slow tier).
* Task-space target as an equality constraint (reached to round-off); a sphere on the optimal
  path avoided at every sample; minimum time of a rotor with a torque limit above the
  bang-bang bound 2 sqrt(I dq / tau_max) and closer to it with more control points (slow tier).
* A task-space target reached, checked by the planar arm's closed-form forward kinematics.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.interpolate
import scipy.optimize
from numpy.polynomial import Polynomial

import kronjax as kj
from kronjax import trajopt as to

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

MIN_JERK = Polynomial([0, 0, 0, 10, -15, 6])  # s -> (q - q0) / (q1 - q0)


def rotor():
    """One revolute joint about the vertical axis: tau = I qdd, I = Izz + m r^2 = 0.05."""
    return kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=2.0, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.03))])


ROTOR_INERTIA = 0.03 + 2.0 * 0.1**2


def two_link(effort=5.75):
    """A planar arm (links 0.5 m, 1 kg, gravity -y) with position and torque limits."""
    link = kj.Inertial(mass=1.0, com=(0.25, 0, 0), inertia=(0.001, 0.02, 0.02))
    joints = [
        kj.Joint("R", parent=-1, axis=(0, 0, 1), lower=-2.5, upper=2.5, velocity=12.0, effort=effort),
        kj.Joint("R", parent=0, axis=(0, 0, 1), translation=(0.5, 0, 0), lower=-2.0, upper=2.0, velocity=12.0, effort=effort),
    ]
    return kj.from_joints(joints, [link, link], gravity=(0, -9.81, 0))


def test_bspline_matches_scipy():
    rng = np.random.default_rng(0)
    m, p, duration = 9, 5, 1.7
    c = rng.normal(size=(m, 2))
    spline = to.BSpline(jnp.asarray(c), jnp.asarray(duration), p)
    knots = np.concatenate([np.zeros(p + 1), np.linspace(0, 1, m - p + 1)[1:-1], np.ones(p + 1)]) * duration
    oracle = scipy.interpolate.BSpline(knots, c, p)
    for t in [0.0, *rng.uniform(0, duration, 5), duration / (m - p), duration]:
        for order in range(4):
            np.testing.assert_allclose(
                spline.derivative(t, order),
                oracle.derivative(order)(t) if order else oracle(t),
                rtol=1e-12,
                atol=1e-10 * 10**order,
            )
    q, qd, qdd = spline(0.3)
    np.testing.assert_allclose(qdd, oracle.derivative(2)(0.3), rtol=1e-12)


@pytest.fixture(scope="module")
def min_jerk():
    """The elbow arm (no limits) minimising the squared jerk from 4 guesses, 3 of them perturbed."""
    model = kj.models.truc_elbow()
    q0, q1, duration = jnp.array([0.1, -0.2, 0.3]), jnp.array([0.9, 0.5, -0.4]), 1.5
    bc = to.BoundaryConditions(q0, q1, duration)
    result = to.optimize(
        model, bc, to.Smoothness(), num_control_points=9, num_guesses=4, key=jax.random.PRNGKey(1), guess_scale=0.5
    )
    return result, q0, q1, duration


def test_min_jerk_from_many_guesses(min_jerk):
    """vmap over 4 initial guesses: all reach the Flash-Hogan optimum."""
    result, q0, q1, duration = min_jerk
    report = result.report
    expected = 720 * float(jnp.sum((q1 - q0) ** 2)) / duration**5
    print(f"\nmin-jerk: costs {report.cost} vs 720 dq^2 / T^5 = {expected:.6f}, iterations {report.iterations}")
    assert report.cost.shape == (4,) and result.trajectories.control_points.shape[0] == 4
    np.testing.assert_allclose(report.cost, expected, rtol=1e-8)
    assert report.converged.all()
    ts = np.linspace(0, duration, 13)
    q = np.asarray(result.trajectory.sample(jnp.asarray(ts))[0])
    np.testing.assert_allclose(q, q0 + (q1 - q0) * MIN_JERK(ts / duration)[:, None], atol=1e-6)


def test_cost_decreases_and_boundary_conditions_are_exact(min_jerk):
    result, q0, q1, duration = min_jerk
    history = result.report.history_cost  # (iterations, guesses), after each Newton step
    assert history.shape[1] == 4
    assert np.all(np.diff(history, axis=0) <= 1e-12 * np.abs(history[:-1]))
    # a quadratic cost and no active constraint: Newton's first step lands on the optimum
    guesses = result.problem.initial_guess(jax.random.PRNGKey(1), 4, 0.5)
    initial = np.array([float(result.problem.objective(z)) for z in guesses])
    assert np.all(history[0, 1:] < 0.8 * initial[1:])  # the perturbed guesses improve
    np.testing.assert_allclose(history[0], history[-1], rtol=1e-8)
    for g in range(4):
        spline = jax.tree.map(lambda x: x[g], result.trajectories)
        start, end = spline(0.0), spline(duration)
        assert np.array_equal(start[0], q0) and np.array_equal(end[0], q1)  # to the last bit
        for x in (*start[1:], *end[1:]):
            np.testing.assert_allclose(x, 0.0, atol=1e-12)


@pytest.mark.slow
def test_rotor_torque_effort_with_free_end_accelerations():
    """tau = I qdd: min int tau^2 with q, qd fixed at both ends is the cubic, I^2 12 dq^2 / T^3."""
    dq, duration = 1.2, 0.8
    bc = to.BoundaryConditions([0.3], [0.3 + dq], duration, vd_start=None, vd_end=None)
    result = to.optimize(rotor(), bc, to.TorqueEffort(), num_control_points=8)
    expected = ROTOR_INERTIA**2 * 12 * dq**2 / duration**3
    np.testing.assert_allclose(result.report.cost, expected, rtol=1e-9)
    ts = np.linspace(0, duration, 7)
    cubic = 0.3 + dq * Polynomial([0, 0, 3, -2])(ts / duration)
    np.testing.assert_allclose(result.trajectory.sample(jnp.asarray(ts))[0][:, 0], cubic, atol=1e-8)


def test_costs_on_a_polynomial_motion():
    """TorqueEffort, Energy, TimeWeighted, Smoothness and a weighted sum, at the minimum-jerk
    motion of the rotor, against exact integrals of polynomials."""
    dq, duration = 1.0, 2.0
    bc = to.BoundaryConditions([0.0], [dq], duration)
    effort, energy = to.TorqueEffort(), to.Energy(epsilon=1e-9)
    late, jerk = to.TimeWeighted(to.TorqueEffort(), weight=lambda s: s**2), to.Smoothness()
    total = 2.0 * effort + energy
    costs = {"effort": effort, "energy": energy, "late": late, "jerk": jerk, "total": total}
    problem = to.transcribe(rotor(), bc, effort, num_control_points=9)  # 4 knot spans: s = 1/2 is a node

    @jax.jit
    def evaluate(z):
        trajectory, samples = problem.trajectory(z), problem.samples(z)
        return {name: cost(problem.model, trajectory, samples) for name, cost in costs.items()}

    values = {name: float(v) for name, v in evaluate(problem.initial_guess()).items()}
    x, v, a, j = (MIN_JERK.deriv(k) * dq / duration**k for k in range(4))  # in s; dt = T ds
    qd, qdd, qddd = v, a, j
    expected = {
        "effort": ROTOR_INERTIA**2 * (qdd**2).integ()(1) * duration,
        "energy": ROTOR_INERTIA * 2 * qd(0.5) ** 2 / 2,  # int |I qdd qd| = I [qd^2 / 2] up and down
        "late": ROTOR_INERTIA**2 * (Polynomial([0, 0, 1]) * qdd**2).integ()(1) * duration,
        "jerk": (qddd**2).integ()(1) * duration,
    }
    expected["total"] = 2 * expected["effort"] + expected["energy"]
    for name in expected:
        np.testing.assert_allclose(values[name], expected[name], rtol=1e-6, err_msg=name)


def _value_and_jacobian(fn, x):
    return fn(x), jax.jacfwd(fn)(x)


def _jit_oracle(fn):
    """``jax.jit`` for the oracles' programs (scipy's functions, checks), not the optimiser's: XLA's
    backend optimisations off compile them several times faster, and they run only a few
    hundred times."""
    return jax.jit(fn, compiler_options={"xla_backend_optimization_level": 0})


@pytest.fixture(scope="module")
def two_link_problem():
    model = two_link()
    bc = to.BoundaryConditions([-np.pi / 2, 0.0], [0.8, 0.6], 1.0, vd_start=None, vd_end=None)
    return model, bc


@pytest.fixture(scope="module")
def two_link_solution(two_link_problem):
    model, bc = two_link_problem
    return to.optimize(model, bc, to.TorqueEffort(), num_control_points=14)


def _slsqp(problem):
    """scipy's SLSQP on the same transcription (cost, constraints and their derivatives by JAX)."""
    evaluate = _jit_oracle(
        lambda x: (
            *jax.value_and_grad(problem.objective)(x.reshape(problem.shape)),
            *(-y for y in _value_and_jacobian(problem.constraints, x.reshape(problem.shape))),
        )
    )
    cache = {}

    def at(x, i):
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = [np.asarray(v, dtype=float) for v in evaluate(jnp.asarray(x))]
        return cache[key][i]

    x0 = np.asarray(problem.initial_guess()).ravel()
    reference = scipy.optimize.minimize(
        lambda x: float(at(x, 0)),
        x0,
        jac=lambda x: at(x, 1).ravel(),
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: at(x, 2), "jac": lambda x: at(x, 3).reshape(len(at(x, 2)), -1)}],
        options={"maxiter": 500, "ftol": 1e-14},
    )
    return reference, max(0.0, -float(np.min(at(reference.x, 2))))


@pytest.fixture(scope="module")
def two_link_slsqp(two_link_solution):
    return _slsqp(two_link_solution.problem)


@pytest.mark.slow
def test_two_link_matches_scipy_and_respects_limits(two_link_problem, two_link_solution, two_link_slsqp):
    """The interior-point method (the default solver) against SLSQP: the same optimum to 1e-6."""
    model, bc = two_link_problem
    result = two_link_solution
    problem = result.problem
    assert problem.shape == (10, 2)  # 20 free spline coefficients

    reference, reference_violation = two_link_slsqp

    @_jit_oracle
    def check(z):
        """Violation and torques at the samples; q, qd, tau on a fine grid (between samples)."""
        trajectory = problem.trajectory(z)
        q, qd, qdd = trajectory.sample(jnp.linspace(0.0, 1.0, 1001))
        tau = jax.vmap(lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd))(q, qd, qdd)
        return problem.violation(z), problem.samples(z).tau, q, qd, tau

    violation, sample_tau, q, qd, tau = (np.asarray(x) for x in check(result.z[0]))
    ours = float(result.report.cost[0])
    print(
        f"\ntwo-link: interior point cost {ours:.10g} ({int(result.report.iterations[0])} iterations, "
        f"violation {violation:.1e}), SLSQP {reference.fun:.10g} ({reference.nit} iterations, "
        f"violation {reference_violation:.1e})"
    )
    assert reference_violation < 1e-8
    assert result.report.converged[0] and result.report.iterations[0] <= 50
    assert abs(ours - reference.fun) <= 1e-6 * abs(reference.fun)

    # limits at the samples (to the solver's tolerance) and, a little looser, between them
    assert violation <= 1e-6
    limits = model.limits
    lower, upper, velocity, effort = (np.asarray(x) for x in (limits.lower, limits.upper, limits.velocity, limits.effort))
    assert np.isclose(np.abs(sample_tau).max(axis=0), effort, rtol=1e-4).any()  # the torque limit is active
    assert np.all(q <= upper + 1e-3) and np.all(q >= lower - 1e-3)
    assert np.all(np.abs(qd) <= velocity * (1 + 2e-3))
    overshoot = float(np.max(np.abs(tau) / effort)) - 1
    print(f"two-link: largest torque between the samples {overshoot:+.1e} relative to the limit")
    assert overshoot <= 2e-3

    # exact boundary conditions
    (q0, qd0, _), (q1, qd1, _) = result.trajectory(0.0), result.trajectory(1.0)
    assert np.array_equal(q0, bc.q_start) and np.array_equal(q1, bc.q_end)
    np.testing.assert_allclose(np.concatenate([qd0, qd1]), 0.0, atol=1e-12)


@pytest.mark.slow
def test_exact_hessians_reach_scipys_optimum(two_link_problem, two_link_slsqp):
    """``hessian="exact"`` (the curvature blocks from the λ-contracted Hessians of the inverse
    dynamics) converges to SLSQP's optimum to 1e-6, as the default does."""
    model, bc = two_link_problem
    solver = to.InteriorPoint(hessian="exact")
    result = to.optimize(model, bc, to.TorqueEffort(), num_control_points=14, solver=solver)
    reference, _ = two_link_slsqp
    ours = float(result.report.cost[0])
    print(f"\ntwo-link, exact Hessians: cost {ours:.10g} in {int(result.report.iterations[0])} iterations")
    assert result.report.converged[0] and result.report.iterations[0] <= 50
    assert abs(ours - reference.fun) <= 1e-6 * abs(reference.fun)


@pytest.mark.slow
@pytest.mark.parametrize("free_time", [False, True])
def test_gauss_newton_hessian_plus_the_dynamics_curvature_is_the_exact_hessian(two_link_problem, free_time):
    """The interior-point method's default derivatives: the problem with the torques linearised at
    the samples equals the problem in value, gradient and constraint Jacobian at the
    linearisation point, and its Hessian of the Lagrangian plus the curvature of the inverse
    dynamics, ``sum_k S_k^T (d^2 (w_k . tau_k) / d u_k^2) S_k`` (``u_k = (q, qd, qdd)`` at sample
    ``k``, ``S_k = d u_k / dx``, ``w_k`` the torques' adjoint, the curvature from the Euler-Lagrange
    equations by autodiff, ``method="euler_lagrange"``), is ``jax.hessian`` of the exact problem: what
    Gauss-Newton leaves out is exactly what the solver's SR1 blocks approximate, and what
    ``hessian="exact"`` computes (:func:`~kronjax.inverse_dynamics_hessian`). With a free
    duration ``u_k`` is not linear in ``x``; a sphere constraint adds forward kinematics."""
    from kronjax.trajopt._linearisation import curvature_blocks, functions, linearisation, linearised_functions, states_at

    model, bc = two_link_problem
    avoid = to.AvoidSpheres(("link2",), [[0.5, 0.0, 0.0]], [[0.3, 0.4, 0.0]], [0.1])
    options = dict(free_time=to.FreeTime(0.5, 2.0)) if free_time else {}
    cost = to.TorqueEffort() + 0.1 * to.Duration() if free_time else to.TorqueEffort()
    problem = to.transcribe(model, bc, cost, num_control_points=9, constraints=(avoid,), **options)
    rng = np.random.default_rng(3)
    z = problem.initial_guess() + 0.05 * rng.standard_normal(problem.shape)
    x = (problem.preconditioner_inverse @ z).ravel()
    if free_time:
        x = jnp.append(x, 1.1)
    _, c, _ = functions(problem)(x)
    lam = jnp.asarray(rng.uniform(0.0, 1.0, c.shape))

    def lagrangian(values):
        f, c, _ = values
        return f + lam @ c

    states, torques, jacobian = linearisation(problem, x)
    linearised = linearised_functions(problem, states, torques, jacobian)
    zero = jnp.zeros_like(torques)
    exact = jax.jit(lambda x: lagrangian(functions(problem)(x)))
    local = jax.jit(lambda x, extra: lagrangian(linearised(x, extra)))

    def close(a, b, rtol=1e-11):
        assert float(jnp.max(jnp.abs(a - b))) <= rtol * float(jnp.max(jnp.abs(b))), float(jnp.max(jnp.abs(a - b)))

    close(local(x, zero), exact(x))
    close(jax.grad(local)(x, zero), jax.grad(exact)(x))
    close(jax.jacfwd(lambda x: linearised(x, zero)[1])(x), jax.jacfwd(lambda x: functions(problem)(x)[1])(x))
    adjoint = jax.grad(local, argnums=1)(x, zero)  # (K, n)

    def weighted(w, u):
        return w @ kj.inverse_dynamics(model, u[:2], u[2:4], u[4:], method="euler_lagrange")

    curvature = jax.vmap(jax.hessian(weighted, argnums=1))(adjoint, states)  # (K, 6, 6)
    # hessian="exact" takes these blocks from the λ-contracted Hessians of the inverse dynamics
    close(curvature_blocks(problem, states, adjoint), curvature, 1e-10)
    samples = jax.jacfwd(lambda x: states_at(problem, x))(x)  # (K, 6, len(x))
    gauss_newton = jax.hessian(local)(x, zero)
    print(f"\nGauss-Newton leaves out {float(jnp.abs(gauss_newton - jax.hessian(exact)(x)).max()):.3g} of the Hessian's entries")
    close(gauss_newton + jnp.einsum("kai,kab,kbj->ij", samples, curvature, samples), jax.hessian(exact)(x), 1e-10)


@pytest.mark.slow
def test_augmented_lagrangian_matches_scipy(two_link_problem, two_link_slsqp):
    """The first-order solver (augmented Lagrangian with L-BFGS) reaches SLSQP's optimum too, to
    its looser tolerance, in thousands of iterations."""
    model, bc = two_link_problem
    result = to.optimize(model, bc, to.TorqueEffort(), num_control_points=14, solver=to.AugmentedLagrangian())
    reference, _ = two_link_slsqp
    print(f"\ntwo-link: augmented Lagrangian cost {result.report.cost[0]:.10g} in {result.report.iterations[0]} iterations")
    assert result.report.converged[0] and result.report.violation[0] <= 1e-6
    assert abs(result.report.cost[0] - reference.fun) <= 1e-4 * abs(reference.fun)
    assert isinstance(result.state, to.AugmentedLagrangianState)


@pytest.mark.slow
def test_float32_reaches_the_float64_optimum(two_link_slsqp):
    """The interior-point method in float32 (model, boundary conditions and solver state): SLSQP's
    float64 optimum to 1e-4, limits to 1e-5."""
    model = two_link().astype(jnp.float32)
    f32 = np.float32
    bc = to.BoundaryConditions(f32([-np.pi / 2, 0.0]), f32([0.8, 0.6]), f32(1.0), vd_start=None, vd_end=None)
    result = to.optimize(model, bc, to.TorqueEffort(), num_control_points=14)
    reference, _ = two_link_slsqp
    print(
        f"\nfloat32: cost {result.report.cost[0]:.8g} in {result.report.iterations[0]} iterations, "
        f"SLSQP (float64) {reference.fun:.8g}"
    )
    assert result.z.dtype == jnp.float32 and result.trajectory.control_points.dtype == jnp.float32
    assert result.report.converged[0] and result.report.violation[0] <= 1e-5
    assert abs(result.report.cost[0] - reference.fun) <= 1e-4 * reference.fun


def test_warm_start_and_no_recompilation(two_link_problem, two_link_solution):
    """A new goal and duration, and a warm start, reuse the compiled solver of the cold start (no
    compile events from JAX); a warm start from the previous solution after a small change of the
    goal needs under half the iterations of a cold start and reaches the same optimum."""
    model, _ = two_link_problem
    moved = to.BoundaryConditions([-np.pi / 2, 0.0], [0.81, 0.6], 1.02, vd_start=None, vd_end=None)
    cold = to.optimize(model, moved, to.TorqueEffort(), num_control_points=14)
    assert cold.report.compile_time == 0.0
    warm = to.optimize(model, moved, to.TorqueEffort(), num_control_points=14, init=two_link_solution)
    print(f"\nwarm start: {warm.report.iterations[0]} iterations, cold start {cold.report.iterations[0]}")
    assert warm.report.compile_time == 0.0
    assert warm.report.converged[0] and cold.report.converged[0]
    assert 2 * warm.report.iterations[0] < cold.report.iterations[0]
    np.testing.assert_allclose(warm.report.cost, cold.report.cost, rtol=1e-7)
    again = to.optimize(
        model,
        to.BoundaryConditions([-np.pi / 2, 0.1], [0.8, 0.55], 0.97, vd_start=None, vd_end=None),
        to.TorqueEffort(),
        num_control_points=14,
        init=warm,
    )
    assert again.report.compile_time == 0.0 and again.report.converged[0]
    with pytest.raises(ValueError, match="warm start of AugmentedLagrangian"):
        to.optimize(model, moved, to.TorqueEffort(), num_control_points=14, init=warm, solver=to.AugmentedLagrangian())
    with pytest.raises(ValueError, match="warm starts need the same transcription sizes"):
        to.optimize(model, moved, to.TorqueEffort(), num_control_points=14, checks_per_span=4, init=warm)


@pytest.mark.slow
def test_panda_converges_from_every_guess():
    """The Panda rest to rest (the benchmark's problem: Franka's limits, torques derated to 50 %)
    from 4 guesses: every one converges to a feasible point in at most 100 iterations, and they
    agree on the optimum; the torque limit is active there."""
    panda = kj.models.panda()
    model = eqx.tree_at(lambda m: m.limits.effort, panda, 0.5 * panda.limits.effort)
    q_start = jnp.array([0.0, -jnp.pi / 4, 0.0, -3 * jnp.pi / 4, 0.0, jnp.pi / 2, jnp.pi / 4])
    q_goal = jnp.array([1.6, 0.4, -0.5, -1.2, 0.8, 2.4, -0.3])
    result = to.optimize(
        model,
        to.BoundaryConditions(q_start, q_goal, 1.0),
        to.TorqueEffort(),
        num_control_points=10,
        num_guesses=4,
        guess_scale=0.2,
    )
    report = result.report
    print(f"\nPanda: costs {report.cost}, iterations {report.iterations}")
    assert report.converged.all() and (report.iterations <= 100).all()
    assert (report.violation <= 1e-6).all()
    np.testing.assert_allclose(report.cost, report.cost.min(), rtol=1e-6)
    tau = result.problem.samples(result.z[report.best]).tau
    assert float(jnp.max(jnp.abs(tau) / model.limits.effort)) > 0.999


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_task_space_target(two_link_problem):
    """q_end free: the tip (0.5 m along link 2) reaches a target; closed-form planar kinematics."""
    model, _ = two_link_problem
    bc = to.BoundaryConditions([-np.pi / 2, 0.0], None, 1.0)
    target = jnp.array([0.6, -0.6, 0.0])
    cost = 1e4 * to.TaskTarget("link2", target, point=(0.5, 0.0, 0.0)) + to.TorqueEffort()
    result = to.optimize(model, bc, cost, num_control_points=10)
    q1, qd1, qdd1 = result.trajectory(1.0)
    tip = 0.5 * np.array([np.cos(q1[0]) + np.cos(q1[0] + q1[1]), np.sin(q1[0]) + np.sin(q1[0] + q1[1])])
    distance = float(np.linalg.norm(tip - np.asarray(target[:2])))
    print(f"\ntask target: tip {tip} for target {np.asarray(target[:2])}: {distance * 1e3:.2f} mm")
    assert distance < 2e-3
    np.testing.assert_allclose(np.concatenate([qd1, qdd1]), 0.0, atol=1e-12)
    assert np.array_equal(result.trajectory(0.0)[0], bc.q_start)


def _planar_tip(q):
    """The two-link arm's tip (0.5 m along link 2), closed-form planar kinematics."""
    q = np.asarray(q)
    return 0.5 * np.stack(
        [
            np.cos(q[..., 0]) + np.cos(q[..., 0] + q[..., 1]),
            np.sin(q[..., 0]) + np.sin(q[..., 0] + q[..., 1]),
            np.zeros(q.shape[:-1]),
        ],
        axis=-1,
    )


@pytest.mark.slow
def test_task_constraint_reaches_the_target_exactly(two_link_problem):
    """The equality form of the task-space target: the tip reaches it to round-off (closed-form
    kinematics), where the cost form gets within millimetres."""
    model, _ = two_link_problem
    bc = to.BoundaryConditions([-np.pi / 2, 0.0], None, 1.0)
    target = np.array([0.6, -0.6, 0.0])
    reach = to.TaskConstraint("link2", target, point=(0.5, 0.0, 0.0))
    result = to.optimize(model, bc, to.TorqueEffort(), num_control_points=10, constraints=(reach,))
    distance = float(np.linalg.norm(_planar_tip(result.trajectory(1.0)[0]) - target))
    print(f"\ntask constraint: {distance:.1e} m from the target, {result.report.iterations[0]} iterations")
    assert result.report.converged[0] and distance < 1e-9
    moved = np.array([0.62, -0.58, 0.0])  # re-planned from the solution and its multipliers
    warm = to.optimize(
        model,
        bc,
        to.TorqueEffort(),
        num_control_points=10,
        init=result,
        constraints=(to.TaskConstraint("link2", moved, point=(0.5, 0.0, 0.0)),),
    )
    assert warm.report.converged[0] and np.linalg.norm(_planar_tip(warm.trajectory(1.0)[0]) - moved) < 1e-9
    with pytest.raises(ValueError, match="where the boundary conditions fix q already"):
        to.transcribe(model, to.BoundaryConditions([-np.pi / 2, 0.0], [0.0, 0.0], 1.0), to.TorqueEffort(), constraints=(reach,))


@pytest.mark.slow
def test_obstacle_blocking_the_optimal_path_is_avoided(two_link_problem, two_link_solution):
    """A sphere centred on the tip's unconstrained optimal path at t = T / 2: the optimised motion
    keeps the tip outside it at every sample, and nearly so between them."""
    model, bc = two_link_problem
    centre, radius = _planar_tip(two_link_solution.trajectory(0.5)[0]), 0.1
    avoid = to.AvoidSpheres(("link2",), [[0.5, 0.0, 0.0]], [centre], [radius])
    result = to.optimize(model, bc, to.TorqueEffort(), num_control_points=14, constraints=(avoid,))
    assert result.report.converged[0]
    samples = np.asarray(result.problem.samples(result.z[0]).q)
    fine = np.asarray(result.trajectory.sample(jnp.linspace(0.0, 1.0, 2001))[0])
    clearance = np.linalg.norm(_planar_tip(samples) - centre, axis=-1).min() / radius
    between = np.linalg.norm(_planar_tip(fine) - centre, axis=-1).min() / radius
    straight = (
        np.linalg.norm(
            _planar_tip(np.asarray(two_link_solution.trajectory.sample(jnp.linspace(0, 1, 2001))[0])) - centre, axis=-1
        ).min()
        / radius
    )
    print(
        f"\nobstacle: distance / radius {straight:.2g} without it, {clearance:.9f} at the samples and "
        f"{between:.4f} between them with it; cost {two_link_solution.report.cost[0]:.6g} -> {result.report.cost[0]:.6g}"
    )
    assert straight < 1e-6  # the unconstrained optimum goes through the centre
    # the constraint holds at the samples: between them the tip dips in by about 1 % at the local
    # optima found (0.9889 with Gauss-Newton Hessians, 0.9936 and 0.9898 at two with exact ones)
    assert clearance >= 1.0 - 1e-6 and between >= 0.98
    assert result.report.cost[0] > two_link_solution.report.cost[0]


@pytest.mark.slow
def test_minimum_time_rotor_approaches_the_bang_bang_bound():
    """A rotor (tau = I qdd, |tau| <= tau_max) from rest to rest through dq in least time: the
    bang-bang optimum is T* = 2 sqrt(I dq / tau_max); a spline can only approach it from above, the
    closer the more control points."""
    inertia, dq, tau_max = ROTOR_INERTIA, 1.0, 1.0
    model = kj.from_joints(
        [kj.Joint("R", axis=(0, 0, 1), effort=tau_max, velocity=100.0, lower=-10.0, upper=10.0)],
        [kj.Inertial(mass=2.0, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.03))],
    )
    bound = 2 * np.sqrt(inertia * dq / tau_max)
    bc = to.BoundaryConditions([0.0], [dq], 1.0, vd_start=None, vd_end=None)
    durations = {}
    for m in (10, 30):
        result = to.optimize(model, bc, to.Duration(), num_control_points=m, free_time=to.FreeTime(0.05, 5.0))
        assert result.report.converged[0] and result.report.violation[0] <= 1e-6
        durations[m] = float(result.duration[0])
        assert float(result.trajectory.duration) == durations[m] and float(result.report.cost[0]) == pytest.approx(durations[m])
        ts = jnp.linspace(0.0, durations[m], 2001)
        q, _, qdd = (np.asarray(x)[:, 0] for x in result.trajectory.sample(ts))
        assert abs(q[-1] - dq) < 1e-12 and np.abs(inertia * qdd).max() <= tau_max * (1 + 1e-3)
    gaps = {m: (d - bound) / bound for m, d in durations.items()}
    print(f"\nminimum time: T* = {bound:.6f} s; {durations} -> gaps {gaps}")
    assert 0 < gaps[30] < gaps[10] < 0.05


class _Root(to.AbstractCost):
    """``int sqrt(q - shift) dt``: not finite where ``q < shift``, nor its gradient where ``q = shift``."""

    shift: jax.Array

    def __call__(self, model, trajectory, samples):
        return samples.weights @ jnp.sqrt(samples.q[:, 0] - self.shift)


class _Cap(to.AbstractConstraint):
    """``q - 10 <= 0`` at every tenth sample, times ``sqrt(root)`` in row 3: NaN there where ``root < 0``."""

    root: jax.Array

    def __call__(self, model, trajectory, samples):
        rows = samples.q[::10, 0] - 10.0
        return rows * jnp.sqrt(jnp.where(jnp.arange(rows.shape[0]) == 3, self.root, 1.0))


_AUGMENTED = to.AugmentedLagrangian(max_outer_iterations=2, max_inner_iterations=5)


def _rotor_motion(duration, shift=-1.0, root=1.0, solver=None):
    """The rotor of the minimum-time test (``|tau| <= 1``) from rest at 0 to rest at 1 rad in
    ``duration``, at least ``int tau^2 + 0.01 sqrt(q - shift) dt`` with ``(q - 10) sqrt(root) <= 0``
    (inactive): one compiled solver for every ``duration``, ``shift`` and ``root`` (arrays)."""
    model = kj.from_joints(
        [kj.Joint("R", axis=(0, 0, 1), effort=1.0, velocity=100.0, lower=-10.0, upper=10.0)],
        [kj.Inertial(mass=2.0, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.03))],
    )
    cost = to.TorqueEffort() + 0.01 * _Root(jnp.asarray(shift))
    bc = to.BoundaryConditions([0.0], [1.0], duration)
    return to.optimize(model, bc, cost, constraints=(_Cap(jnp.asarray(root)),), num_control_points=12, solver=solver)


def test_infeasible_motion_is_reported_not_converged():
    """The rotor asked to move 1 rad in half the bang-bang time T* = 2 sqrt(I dq / tau_max): no
    motion meets the torque limit, since the least peak acceleration of a rest-to-rest motion is
    4 dq / T^2, so every motion's torque exceeds the limit by (T* / T)^2 - 1 = 3 somewhere (on the
    samples, a little less). The solver stops early and says so; the augmented Lagrangian with an
    iteration limit says the limit stopped it."""
    duration = np.sqrt(ROTOR_INERTIA)  # T* / 2 for dq = tau_max = 1
    bound = (2 * np.sqrt(ROTOR_INERTIA) / duration) ** 2 - 1
    with pytest.warns(to.NotConvergedWarning, match="no feasible motion found") as caught:
        result = _rotor_motion(duration)
    report = result.report
    print(f"\n{report.message}")
    assert report.status.tolist() == ["infeasible"] and not report.converged[0]
    assert report.iterations[0] <= 60  # stopped, not run to the 200 allowed
    assert 0.95 * bound <= report.violation[0] == report.history_violation[:, 0].min()
    assert float(result.problem.violation(result.z[0])) == pytest.approx(report.violation[0], rel=1e-12)
    assert "torque limit of joint1" in report.message and str(caught[0].message).endswith(report.message)
    with pytest.warns(to.NotConvergedWarning, match="not converged in .* iterations .*torque limit of joint1"):
        short = _rotor_motion(duration, solver=_AUGMENTED)
    assert short.report.status.tolist() == ["max_iterations"]


def test_constraint_names_follow_the_coordinates():
    """The rows of the limits name the joint of each coordinate, past a fixed joint: the planar arm
    with a fixed flange between its joints (``joint2``), whose second coordinate is ``joint3``."""
    link = kj.Inertial(mass=1.0, com=(0.25, 0, 0), inertia=(0.001, 0.02, 0.02))
    joints = [
        kj.Joint("R", parent=-1, axis=(0, 0, 1), lower=-2.5, upper=2.5, effort=5.0),
        kj.Joint("F", parent=0, translation=(0.5, 0, 0)),
        kj.Joint("R", parent=1, axis=(0, 0, 1), lower=-2.0, upper=2.0, effort=5.0),
    ]
    model = kj.from_joints(joints, [link, kj.Inertial(mass=0.1), link])
    problem = to.transcribe(model, to.BoundaryConditions([0.0, 0.0], [0.5, 0.5], 1.0), to.TorqueEffort())
    samples = problem.s.shape[0]
    assert model.joint_names == ("joint1", "joint2", "joint3")
    assert problem.constraint_name(1) == "the upper position limit of joint3 at t = 0 s"
    assert problem.constraint_name(6 * 2 * samples - 1) == "the lower torque limit of joint3 at t = 1 s"
    with pytest.raises(IndexError, match="no inequality constraint"):
        problem.constraint_name(6 * 2 * samples)


def test_non_finite_cost_or_constraint_stops_with_a_message():
    """A cost or constraint that is NaN (or whose gradient is) at the initial guess stops the
    solver at once, naming the first non-finite quantity (and the constraint's row); the same
    problem with finite values converges."""
    assert _rotor_motion(1.0).report.status.tolist() == ["converged"]
    cases = [
        ((0.25, 1.0), "non-finite cost", "the cost at the current point is not finite"),
        ((0.0, 1.0), "non-finite cost gradient", "the cost gradient at the current point is not finite"),
        ((-1.0, -1.0), "non-finite inequality constraints", r"constraints at the current point are not finite .* row 3 of _Cap"),
    ]
    for (shift, root), status, message in cases:
        with pytest.warns(to.NotConvergedWarning, match=message):
            report = _rotor_motion(1.0, shift, root).report
        assert report.status.tolist() == [status] and report.iterations[0] == 0 and not report.converged[0]
    augmented = [
        ((0.25, 1.0), "non-finite cost", "the cost at the current point is not finite"),
        ((0.0, 1.0), "non-finite gradient of the augmented Lagrangian", "gradient of the augmented Lagrangian .* is not finite"),
        ((-1.0, -1.0), "non-finite constraints", "the constraints at the current point are not finite"),
    ]
    for (shift, root), status, message in augmented:
        with pytest.warns(to.NotConvergedWarning, match=message):
            report = _rotor_motion(1.0, shift, root, _AUGMENTED).report
        assert report.status.tolist() == [status] and not report.converged[0]


@pytest.mark.usefixtures("without_shape_checks")
def test_bad_inputs_raise_clear_errors():
    model = two_link()
    bc = to.BoundaryConditions([0.0, 0.0], [0.5, 0.5], 1.0)
    with pytest.raises(ValueError, match=r"q_end must have shape \(2,\)"):
        to.BoundaryConditions([0.0, 0.0], [0.5], 1.0)
    with pytest.raises(ValueError, match="duration must be positive"):
        to.BoundaryConditions([0.0, 0.0], [0.5, 0.5], 0.0)
    with pytest.raises(ValueError, match=r"for a free duration, .* free_time=trajopt.FreeTime\(lower, upper\)"):
        to.BoundaryConditions([0.0, 0.0], [0.5, 0.5], None)
    with pytest.raises(ValueError, match="outside the limits"):
        to.transcribe(model, to.BoundaryConditions([0.0, 0.0], [0.5, 3.0], 1.0), to.TorqueEffort())
    with pytest.raises(ValueError, match="boundary conditions for 3 joints"):
        to.transcribe(model, to.BoundaryConditions([0.0] * 3, [0.1] * 3, 1.0), to.TorqueEffort())
    with pytest.raises(ValueError, match="num_control_points must be at least 7"):
        to.transcribe(model, bc, to.TorqueEffort(), num_control_points=6)
    with pytest.raises(TypeError, match="cost must be"):
        to.transcribe(model, bc, lambda *a: 0.0)
    with pytest.raises(ValueError, match="unknown inverse-dynamics method"):
        to.transcribe(model, bc, to.TorqueEffort(), method="fast")
    with pytest.raises(ValueError, match="Smoothness order"):
        to.Smoothness(order=4)
    locked = kj.chain.JointLimits(jnp.array([-2.5, 0.0]), jnp.array([2.5, 0.0]), jnp.full(2, 12.0), jnp.full(2, 5.75))
    with pytest.raises(ValueError, match=r"joint2: position range \[0.0, 0.0\] has zero width"):
        to.transcribe(model, to.BoundaryConditions([0.0, 0.0], [0.5, 0.0], 1.0), to.TorqueEffort(), limits=locked)
    still = kj.chain.JointLimits(jnp.full(2, -2.5), jnp.full(2, 2.5), jnp.array([0.0, 12.0]), jnp.array([5.75, 0.0]))
    with pytest.raises(ValueError, match=r"joint1: velocity limit is 0; joint2: effort limit is 0"):
        to.transcribe(model, to.BoundaryConditions([0.0, 0.0], [0.0, 0.5], 1.0), to.TorqueEffort(), limits=still)
    problem = to.transcribe(model, bc, to.TorqueEffort())
    with pytest.raises(ValueError, match=r"z must have shape \(4, 2\)"):
        problem.objective(jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="init must have shape"):
        to.optimize(model, bc, to.TorqueEffort(), init=jnp.zeros((5, 2)))
    with pytest.raises(ValueError, match="0 < lower < upper"):
        to.FreeTime(1.0, 0.5)
    with pytest.raises(ValueError, match="hessian must be 'gauss-newton' or 'exact'"):
        to.InteriorPoint(hessian="newton")
    with pytest.raises(ValueError, match="outside free_time's bounds"):
        to.transcribe(model, bc, to.Duration(), free_time=to.FreeTime(2.0, 3.0))
    with pytest.raises(NotImplementedError, match="needs the InteriorPoint solver"):
        to.optimize(model, bc, to.Duration(), free_time=to.FreeTime(0.5, 3.0), solver=to.AugmentedLagrangian())
    with pytest.raises(TypeError, match="constraints must be trajopt constraints"):
        to.transcribe(model, bc, to.TorqueEffort(), constraints=(lambda *a: 0.0,))
    with pytest.raises(ValueError, match=r"points must be \(1, 3\)"):
        to.AvoidSpheres(("link2",), [[0.5, 0.0]], [[0.0, 0.0, 0.0]], [0.1])
    with pytest.raises(ValueError, match="radii must be positive"):
        to.AvoidSpheres(("link2",), [[0.5, 0.0, 0.0]], [[0.0, 0.0, 0.0]], [0.0])
    with pytest.raises(TypeError, match="solver must be"):
        to.optimize(model, bc, to.TorqueEffort(), solver="ipopt")
