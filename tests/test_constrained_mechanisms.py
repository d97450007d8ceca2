"""Closed-chain mechanisms (planar four-bar, slider-crank) simulated with :mod:`kronjax.constrained`.

Oracles, all independent of the code under test:

* first principles: conservation of the total energy of a free, frictionless motion; the
  constraint residual;
* closed-form loop solutions written here (not the builders' own): for the four-bar the rocker
  angle from the law of cosines about the rocker pivot (a Freudenstein-type relation), for the
  slider-crank the rod angle ``asin((e - r sin t) / l)``;
* unconstrained reference models: the same mechanism as a 1-DOF model in the crank angle,
  :func:`kronjax.from_function` with the body poses of the closed form, integrated by
  :func:`kronjax.simulate.rollout` (diffrax ``Dopri8``, tolerances ``1e-12``). It shares no
  code with the constrained solvers (no constraint, no multiplier, no projection): its equation
  of motion is Lagrange's equation of the reduced coordinate.

Runtime: each ``simulate`` compiles its scan (several seconds of XLA), so every run goes through
one ``filter_jit`` per (method, dt, steps) (:func:`compiled_simulate`), shared by the
crank-rocker and change-point four-bars (same pytree structure), and the long runs and
references are module fixtures computed once.
"""

import functools
import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax
from kronjax import Inertial, kinetic_energy, potential_energy
from kronjax.constrained import check_state, simulate, solve
from kronjax.models.four_bar import DEFAULT_LENGTHS, four_bar
from kronjax.models.slider_crank import slider_crank
from kronjax.simulate import rollout

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

G = 9.81
T_LONG, DT = 5.0, 1e-3  # the long Runge-Kutta runs: 5000 steps of 1 ms
# Huang's step sizes, each over T_HUANG; every step size is a compilation of the scan (shared by
# the four-bars), so two: the error halves with dt
HUANG_DTS = (1e-3, 5e-4)
T_HUANG = 1.0

# crank-rocker: the default lengths, explicit inertials (not the defaults, to test their placement)
CR_LENGTHS = DEFAULT_LENGTHS["crank_rocker"]
CR_MASSES = (0.5, 1.3, 0.9)
CR_IZZ = (0.004, 0.05, 0.02)
# change point: the default parallelogram (crank = rocker, coupler = ground)
CP_LENGTHS = DEFAULT_LENGTHS["change_point"]
CP_MASSES = (0.6, 1.4, 0.7)
CP_IZZ = (0.005, 0.06, 0.006)
# offset slider-crank
SC = dict(crank=0.1, rod=0.3, offset=0.03)
SC_MASSES = (0.3, 0.8, 0.6)
SC_IZZ = (0.0004, 0.007)


def _rz(t):
    c, s = jnp.cos(t), jnp.sin(t)
    return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _bars(lengths, masses, izz):
    """Uniform bars along body x from the body origin: centre of mass at mid-length."""
    return [Inertial(mass=m, com=(0.5 * L, 0.0, 0.0), inertia=(0.0, i, i)) for L, m, i in zip(lengths, masses, izz)]


# --------------------------------------------------------------------------------------------
# Closed forms (the oracles' geometry), written independently of the builders
# --------------------------------------------------------------------------------------------


def four_bar_branch_plus(a, b, c, d, t, xp=jnp):
    """Absolute coupler and rocker angles on the branch where the pin B lies to the left of the
    directed line from the crank tip A to the rocker pivot D.

    The rocker tip ``B = D + c e(t3)`` is at distance ``b`` from ``A``; with ``P = A - D``:
    ``|P|^2 + c^2 - 2 c P.e(t3) = b^2``, i.e. ``cos(t3 - psi) = k / |P|``, ``psi = atan2(P)``,
    ``k = (|P|^2 + c^2 - b^2) / (2c)``. ``B`` left of ``A -> D`` means
    ``cross(D - A, B - A) = c cross(-P, e(t3)) > 0``, i.e. ``e(t3)`` clockwise from ``P``:
    ``t3 = psi - acos(k / |P|)``.
    """
    px, py = a * xp.cos(t) - d, a * xp.sin(t)
    rho = xp.sqrt(px**2 + py**2)
    k = (rho**2 + c**2 - b**2) / (2.0 * c)
    t3 = xp.arctan2(py, px) - xp.arccos(k / rho)
    bx, by = d + c * xp.cos(t3), c * xp.sin(t3)
    t2 = xp.arctan2(by - a * xp.sin(t), bx - a * xp.cos(t))
    return t2, t3


def four_bar_reference(lengths, masses, izz):
    """The four-bar (branch +1) as a 1-DOF model in the crank angle."""
    a, b, c, d = lengths

    def poses(x):
        t = x[0]
        t2, t3 = four_bar_branch_plus(a, b, c, d, t)
        rotations = jnp.stack([_rz(t), _rz(t2), _rz(t3)])
        origins = jnp.stack([jnp.zeros(3), a * jnp.array([jnp.cos(t), jnp.sin(t), 0.0]), jnp.array([d, 0.0, 0.0])])
        return rotations, origins

    return kronjax.from_function(poses, 1, _bars((a, b, c), masses, izz), gravity=(0.0, -G, 0.0))


def parallelogram_acceleration(t):
    """Crank acceleration on the parallelogram branch, from first principles: the crank and the
    rocker turn about fixed pivots, the coupler translates with the crank tip, so the kinetic
    energy ``M t'^2 / 2`` has the constant ``M = I1 + m1 a^2/4 + m2 a^2 + I3 + m3 c^2/4`` and the
    potential is ``g (m1 a/2 + m2 a + m3 c/2) sin t``: ``M t'' = -g (m1 a/2 + m2 a + m3 c/2) cos t``."""
    a, _, c, _ = CP_LENGTHS
    (m1, m2, m3), (i1, _, i3) = CP_MASSES, CP_IZZ
    inertia = i1 + m1 * a**2 / 4 + m2 * a**2 + i3 + m3 * c**2 / 4
    return -G * (m1 * a / 2 + m2 * a + m3 * c / 2) * math.cos(t) / inertia


@functools.cache
def parallelogram_reference(lengths, masses, izz):
    """The parallelogram branch of the change-point four-bar as a 1-DOF model in the crank angle:
    the coupler translates (absolute angle 0, its origin at the crank tip) and the rocker turns
    with the crank (rocker angle = crank angle). No loop equation is solved, so it is smooth
    through the collinear configurations at crank angles 0 and pi."""
    a, b, c, d = lengths
    assert a == c and b == d

    def poses(x):
        t = x[0]
        rotations = jnp.stack([_rz(t), jnp.eye(3), _rz(t)])
        origins = jnp.stack([jnp.zeros(3), a * jnp.array([jnp.cos(t), jnp.sin(t), 0.0]), jnp.array([d, 0.0, 0.0])])
        return rotations, origins

    return kronjax.from_function(poses, 1, _bars((a, b, c), masses, izz), gravity=(0.0, -G, 0.0))


def slider_crank_closed_form(r, l, e, t, xp=jnp):
    """Rod angle and slider position with the slider on the +x side of the crank tip
    (``cos(rod angle) > 0``): ``r sin t + l sin(phi) = e``."""
    phi = xp.arcsin((e - r * xp.sin(t)) / l)
    return phi, r * xp.cos(t) + l * xp.cos(phi)


def slider_crank_reference(r, l, e, masses, izz):
    def poses(x):
        t = x[0]
        phi, s = slider_crank_closed_form(r, l, e, t)
        rotations = jnp.stack([_rz(t), _rz(phi), jnp.eye(3)])
        origins = jnp.stack([jnp.zeros(3), r * jnp.array([jnp.cos(t), jnp.sin(t), 0.0]), jnp.array([s, e, 0.0])])
        return rotations, origins

    inertials = [*_bars((r, l), masses[:2], izz), Inertial(mass=masses[2])]
    return kronjax.from_function(poses, 1, inertials, gravity=(0.0, -G, 0.0))


def closed_form_state(closed_form, theta, omega):
    """An assembled, admissible state from a loop's closed form ``theta -> (alpha, beta)`` (the
    second body's absolute angle; the third body's angle or position): ``q = (theta, alpha -
    theta, beta)`` and ``qd = omega dq/dtheta``, the crank turning at ``omega``. No
    :mod:`kronjax.constrained` (projection) involved; ``check_state`` accepts it."""
    (alpha, beta), (d_alpha, d_beta) = jax.jvp(closed_form, (jnp.asarray(theta, float),), (jnp.asarray(1.0),))
    q = np.array([theta, alpha - theta, beta], dtype=float)
    return jnp.asarray(q), jnp.asarray(omega * np.array([1.0, d_alpha - 1.0, d_beta], dtype=float))


def reference_rollout(model, theta0, omega0, ts):
    out = rollout(
        model,
        jnp.array([theta0]),
        jnp.array([omega0]),
        None,
        ts,
        solver=diffrax.Dopri8(),
        rtol=1e-12,
        atol=1e-12,
        max_steps=200_000,
    )
    return np.asarray(out.q[:, 0])


@functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})  # an oracle: compiles faster
def _energies(model, qs, qds):
    return jax.vmap(lambda q, qd: jnp.stack([kinetic_energy(model, q, qd), potential_energy(model, q)]))(qs, qds)


def energy(model, qs, qds, kinetic=False):
    """Total energy along a run (and the kinetic energy)."""
    e = np.asarray(_energies(model, qs, qds))
    return (e.sum(axis=1), e[:, 0]) if kinetic else e.sum(axis=1)


@functools.cache
def compiled_simulate(method: str, dt: float, steps: int):
    """``simulate`` compiled once per (method, dt, steps) and reused across mechanisms of the same
    structure (the crank-rocker and change-point four-bars share their compilations).

    Under ``jit`` ``q0`` is traced, so ``simulate`` skips its eager ``check_state``: that is what
    lets a Huang run start exactly at the singular configuration (``check_state`` rejects the
    rank-1 Jacobian there, even for ``method="huang"``). The other runs start from states that
    ``check_state`` accepts (checked in the tests)."""

    @eqx.filter_jit
    def run(mech, q0, qd0):
        return simulate(mech.model, mech.constraints, q0, qd0, dt=dt, steps=steps, method=method)

    return run


def huang_errors(mech, q0, qd0, ref_q, ref_dt, horizon=T_HUANG):
    """Max crank-angle error of Huang's runs against a reference sampled every ``ref_dt``,
    compared on the coarsest grid (every ``max(HUANG_DTS)``)."""
    coarse = max(HUANG_DTS)
    stride_ref = int(round(coarse / ref_dt))
    n = int(round(horizon / coarse)) + 1
    errors, runs = [], []
    for dt in HUANG_DTS:
        out = compiled_simulate("huang", dt, int(round(horizon / dt)))(mech, q0, qd0)
        stride = int(round(coarse / dt))
        theta = np.asarray(out.q[::stride, 0])[:n]
        errors.append(float(np.max(np.abs(theta - ref_q[::stride_ref][:n]))))
        runs.append(out)
    return np.array(errors), runs


# --------------------------------------------------------------------------------------------
# Fixtures: mechanisms, admissible initial states and references (computed once)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crank_rocker():
    mech = four_bar(*CR_LENGTHS, masses=CR_MASSES, inertias=CR_IZZ, variant="crank_rocker")
    q0, qd0 = closed_form_state(lambda t: four_bar_branch_plus(*CR_LENGTHS, t), float(mech.q0[0]), 5.5)
    ts = jnp.arange(int(round(T_LONG / DT)) + 1) * DT
    ref = reference_rollout(four_bar_reference(CR_LENGTHS, CR_MASSES, CR_IZZ), q0[0], qd0[0], ts)
    return mech, q0, qd0, ref


@pytest.fixture(scope="module")
def crank_rocker_lagrange(crank_rocker):
    mech, q0, qd0, _ = crank_rocker
    check_state(mech.model, mech.constraints, q0, qd0)
    return compiled_simulate("lagrange", DT, int(round(T_LONG / DT)))(mech, q0, qd0)


@pytest.fixture(scope="module")
def change_point():
    return four_bar(*CP_LENGTHS, masses=CP_MASSES, inertias=CP_IZZ, variant="change_point")


# --------------------------------------------------------------------------------------------
# Builders: assembled configurations, branches, geometry
# --------------------------------------------------------------------------------------------


def _pin_positions(model, q, coupler, rocker):
    """Crank tip A, rocker pivot D and the two ends of the cut pin (coupler's, rocker's) from the
    model's forward kinematics."""
    rotations, origins = model.poses(jnp.asarray(q))
    b_coupler = origins[1] + rotations[1] @ jnp.array([coupler, 0.0, 0.0])
    b_rocker = origins[2] + rotations[2] @ jnp.array([rocker, 0.0, 0.0])
    return np.asarray(origins[1]), np.asarray(origins[2]), np.asarray(b_coupler), np.asarray(b_rocker)


@pytest.mark.parametrize("branch", [1, -1])
@pytest.mark.parametrize("crank_angle", [0.4, 2.5, -1.9])
def test_four_bar_assembly_matches_closed_form(branch, crank_angle):
    a, b, c, d = CR_LENGTHS
    mech = four_bar(crank_angle=crank_angle, branch=branch)
    q0 = np.asarray(mech.q0)
    assert mech.mobility == 1 and mech.model.body_names == ("crank", "coupler", "rocker")
    assert np.max(np.abs(np.asarray(mech.constraints.residual(mech.q0)))) < 1e-14
    # the documented geometry, from the model's own forward kinematics
    a_tip, d_pivot, b1, b2 = _pin_positions(mech.model, q0, b, c)
    np.testing.assert_allclose(a_tip, [a * math.cos(crank_angle), a * math.sin(crank_angle), 0.0], atol=1e-15)
    np.testing.assert_allclose(d_pivot, [d, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(b1, b2, atol=1e-14)
    u, v = d_pivot - a_tip, b1 - a_tip
    assert np.sign(u[0] * v[1] - u[1] * v[0]) == branch  # B left (+1) / right (-1) of A -> D
    assert q0[0] == pytest.approx(crank_angle, abs=1e-14)
    if branch == 1:
        t2, t3 = four_bar_branch_plus(a, b, c, d, crank_angle, xp=np)
        np.testing.assert_allclose(np.angle(np.exp(1j * np.array([q0[0] + q0[1] - t2, q0[2] - t3]))), 0.0, atol=1e-13)
    check_state(mech.model, mech.constraints, mech.q0)


def test_four_bar_defaults():
    for variant in ("crank_rocker", "change_point"):
        a, b, c, d = DEFAULT_LENGTHS[variant]
        s, l = min(a, b, c, d), max(a, b, c, d)
        if variant == "crank_rocker":  # Grashof, strictly, with the crank the shortest link
            assert s + l < a + b + c + d - s - l and a < min(b, c, d)
        else:
            assert a + b == pytest.approx(c + d, abs=1e-15)
        mech = four_bar(variant=variant)
        a_tip, d_pivot, b1, b2 = _pin_positions(mech.model, mech.q0, b, c)
        assert np.linalg.norm(a_tip) == pytest.approx(a) and d_pivot[0] == pytest.approx(d)
        np.testing.assert_allclose(b1, b2, atol=1e-14)
        # the default inertials: uniform slender bars of 2 kg/m
        masses = np.asarray(mech.model.inertials.mass)
        np.testing.assert_allclose(masses, 2.0 * np.array([a, b, c]))
        np.testing.assert_allclose(np.asarray(mech.model.inertials.inertia[:, 2, 2]), masses * np.array([a, b, c]) ** 2 / 12)
    # change point: the parallelogram configuration at pi/3 (coupler parallel to the ground)
    q0 = np.asarray(four_bar(variant="change_point").q0)
    np.testing.assert_allclose([q0[0] + q0[1], q0[2] - q0[0]], 0.0, atol=1e-13)


@pytest.mark.parametrize("crank_angle", [0.0, 1.2, -2.8])
def test_slider_crank_assembly_matches_closed_form(crank_angle):
    r, l, e = SC["crank"], SC["rod"], SC["offset"]
    mech = slider_crank(**SC, crank_angle=crank_angle)
    assert mech.mobility == 1 and mech.model.body_names == ("crank", "rod", "slider")
    q0 = np.asarray(mech.q0)
    phi, s = slider_crank_closed_form(r, l, e, crank_angle, xp=np)
    np.testing.assert_allclose(q0, [crank_angle, phi - crank_angle, s], atol=1e-13)
    rotations, origins = mech.model.poses(mech.q0)
    np.testing.assert_allclose(np.asarray(origins[2]), [s, e, 0.0], atol=1e-14)  # slider pin on its guide
    np.testing.assert_allclose(np.asarray(origins[1] + rotations[1] @ jnp.array([l, 0.0, 0.0])), [s, e, 0.0], atol=1e-14)
    check_state(mech.model, mech.constraints, mech.q0)


# --------------------------------------------------------------------------------------------
# Crank-rocker four-bar: energy, drift and the reduced reference
# --------------------------------------------------------------------------------------------


def test_four_bar_lagrange_conserves_energy(crank_rocker, crank_rocker_lagrange):
    """Free, frictionless motion (tau = 0, gravity only) over 5 s: the crank turns several times."""
    mech, _, _, _ = crank_rocker
    out = crank_rocker_lagrange
    e, kinetic = energy(mech.model, out.q, out.v, kinetic=True)
    drift = np.max(np.abs(e - e[0])) / max(abs(e[0]), np.max(kinetic))
    assert drift < 1e-6, drift
    assert float(np.max(np.asarray(out.residual))) < 1e-8
    assert float(np.max(np.asarray(out.velocity_residual))) < 1e-8
    assert np.all(np.asarray(out.rank) == 2)  # a crank-rocker is never singular
    assert abs(float(out.q[-1, 0] - out.q[0, 0])) > 4 * math.pi  # full turns: all configurations visited


def test_four_bar_lagrange_matches_reduced_reference(crank_rocker, crank_rocker_lagrange):
    ref = crank_rocker[3]
    out = crank_rocker_lagrange
    a, b, c, d = CR_LENGTHS
    err = np.max(np.abs(np.asarray(out.q[:, 0]) - ref))
    assert err < 1e-8, err  # measured 2.7e-10 over 5 s (the reference itself: ~1e-10)
    # the dependent coordinates follow the closed form at the reference crank angle
    t2, t3 = four_bar_branch_plus(a, b, c, d, ref, xp=np)
    q = np.asarray(out.q)
    wrapped = np.angle(np.exp(1j * np.stack([q[:, 0] + q[:, 1] - t2, q[:, 2] - t3])))
    assert np.max(np.abs(wrapped)) < 1e-8


@pytest.mark.slow
def test_four_bar_nullspace_matches_reduced_reference(crank_rocker):
    """The run of the Lagrange tests with the null-space solver. Slow tier (a compilation of its
    own): ``simulate`` differs between the two only in the solver, whose results agree with
    Lagrange's to 1e-10 in ``test_constrained.py``."""
    mech, q0, qd0, ref = crank_rocker
    steps = 1000
    out = compiled_simulate("nullspace", DT, steps)(mech, q0, qd0)
    err = np.max(np.abs(np.asarray(out.q[:, 0]) - ref[: steps + 1]))
    assert err < 1e-8, err
    e = energy(mech.model, out.q, out.v)
    assert np.max(np.abs(e - e[0])) / abs(e[0]) < 1e-8
    assert float(np.max(np.asarray(out.residual))) < 1e-8


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_four_bar_huang_first_order(crank_rocker):
    """Huang's step (qd += qdd dt, q += qd dt + qdd dt^2 / 2 with qdd from the linearised
    reactions) is first order: the crank-angle error over 1 s halves with dt."""
    mech, q0, qd0, ref = crank_rocker
    errors, runs = huang_errors(mech, q0, qd0, ref, DT)
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all((orders > 0.8) & (orders < 1.3)), (errors, orders)
    assert errors[-1] < 0.1, errors  # ~90 dt rad at crank speeds of ~6 rad/s
    for out in runs:
        assert float(np.max(np.asarray(out.residual))) < 1e-8


# --------------------------------------------------------------------------------------------
# Slider-crank
# --------------------------------------------------------------------------------------------


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_slider_crank_lagrange_matches_reduced_reference():
    r, l, e = SC["crank"], SC["rod"], SC["offset"]
    mech = slider_crank(**SC, masses=SC_MASSES, inertias=SC_IZZ)
    q0, qd0 = closed_form_state(lambda t: slider_crank_closed_form(r, l, e, t), float(mech.q0[0]), 4.6)
    check_state(mech.model, mech.constraints, q0, qd0)
    out = compiled_simulate("lagrange", DT, int(round(T_LONG / DT)))(mech, q0, qd0)
    ts = out.ts
    ref = reference_rollout(slider_crank_reference(r, l, e, SC_MASSES, SC_IZZ), q0[0], qd0[0], ts)
    err = np.max(np.abs(np.asarray(out.q[:, 0]) - ref))
    # measured 7.7e-9 over 5 s: Tsit5's truncation error at dt = 1 ms (2.6e-10 at 0.5 ms)
    assert err < 5e-8, err
    phi, s = slider_crank_closed_form(r, l, e, ref, xp=np)
    q = np.asarray(out.q)
    assert np.max(np.abs(np.angle(np.exp(1j * (q[:, 0] + q[:, 1] - phi))))) < 5e-8
    assert np.max(np.abs(q[:, 2] - s)) < 5e-9
    en = energy(mech.model, out.q, out.v)
    assert np.max(np.abs(en - en[0])) / abs(en[0]) < 1e-6
    assert float(np.max(np.asarray(out.residual))) < 1e-8
    assert abs(float(q[-1, 0] - q[0, 0])) > 4 * math.pi


# --------------------------------------------------------------------------------------------
# Change-point four-bar: the singular configuration (Huang et al., Fig. 1(a))
# --------------------------------------------------------------------------------------------


def test_change_point_singular_configuration(change_point):
    """All links collinear at crank angle 0 (q = 0): Phi_q has rank 1 of 2. The Lagrange and
    null-space systems are singular there; Huang's step is defined (its least-squares solve)."""
    mech = change_point
    q = jnp.zeros(3)
    qd = jnp.array([2.0, -2.0, 2.0])  # along the parallelogram branch (rocker = crank, coupler fixed)
    assert float(np.max(np.abs(np.asarray(mech.constraints.residual(q))))) == 0.0
    assert float(np.max(np.abs(np.asarray(mech.constraints.velocity_residual(q, qd))))) < 1e-15
    assert np.linalg.matrix_rank(np.asarray(mech.constraints.jacobian(q))) == 1
    with pytest.raises(ValueError, match="rank 1"):
        check_state(mech.model, mech.constraints, q, qd)
    tau = jnp.zeros(3)
    for method in ("lagrange", "nullspace"):
        with pytest.raises(Exception, match="rank 1 < 2"):
            jax.block_until_ready(solve(mech.model, mech.constraints, q, qd, tau, method).vd)
    sol = solve(mech.model, mech.constraints, q, qd, tau, "huang", dt=1e-3)
    assert np.all(np.isfinite(np.asarray(sol.vd))) and int(sol.rank) == 1
    # Compared with the crank acceleration on the parallelogram branch (first principles): close, but not to O(dt). With Z = Phi_q(q) the reactions can only act
    # through the one remaining row of Phi_q, while the limit of the true constraint force as
    # t -> 0 lies outside that row space (lambda ~ 1/t along the vanishing singular direction);
    # the least-squares step is off by ~1% (measured) at this one configuration.
    ref_acc = parallelogram_acceleration(0.0)
    assert abs(float(sol.vd[0]) - ref_acc) < 0.02 * abs(ref_acc)


@pytest.mark.parametrize(
    "start",
    [
        pytest.param((0.0, 2.0), id="at-singularity"),
        pytest.param((0.3, -3.0), id="through-singularity"),
    ],
)
@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_change_point_huang_keeps_parallelogram_branch(change_point, start):
    """Huang through the change point against a reference with no singular step.

    Reference: the parallelogram branch as a 1-DOF model in the crank angle t
    (:func:`parallelogram_reference`: crank and rocker at angle t, the coupler translating with
    the crank tip), built with ``kronjax.from_function`` and integrated by ``rollout`` (Dopri8,
    tolerances 1e-12). On this branch the mechanism is a 1-DOF system with a smooth, positive
    mass ``M(t)``, so the reference never meets a singular matrix, while the constrained runs
    step across the collinear configurations (crank angle 0 at the start or after ~0.1 s,
    and -pi later).

    The constrained state starts on the same branch: ``q = (t0, -t0, t0)``,
    ``qd = (w, -w, w)``. Huang's runs must stay on the parallelogram branch (coupler angle
    ``q0 + q1 = 0``, rocker ``q2 = q0``; the anti-parallelogram branch crosses it at the change
    point) and their crank-angle error must shrink like dt.
    """
    mech = change_point
    t0, w = start
    q0 = jnp.array([t0, -t0, t0])
    qd0 = jnp.array([w, -w, w])
    ts = jnp.arange(int(round(T_HUANG / 5e-4)) + 1) * 5e-4
    ref = reference_rollout(parallelogram_reference(CP_LENGTHS, CP_MASSES, CP_IZZ), t0, w, ts)
    # the reference really crosses the collinear configurations at crank angles 0 and -pi
    assert np.min(ref) < -math.pi and (t0 == 0.0 or np.any(np.diff(np.sign(ref)) != 0))
    errors, runs = huang_errors(mech, q0, qd0, ref, 5e-4)
    orders = np.log2(errors[:-1] / errors[1:])
    assert np.all((orders > 0.8) & (orders < 1.3)), (errors, orders)
    assert errors[-1] < 0.03, errors  # ~25 dt rad
    for out in runs:
        q = np.asarray(out.q)
        assert np.max(np.abs(q[:, 0] + q[:, 1])) < 1e-9  # the coupler stays parallel to the ground
        assert np.max(np.abs(q[:, 2] - q[:, 0])) < 1e-9  # rocker angle = crank angle
        assert float(np.max(np.asarray(out.residual))) < 1e-12
        if t0 == 0.0:
            assert int(out.rank[0]) == 1  # the first step was taken at the singular configuration


# --------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(crank=-0.1), "crank length must be a positive"),
        (dict(coupler=0.0), "coupler length must be a positive"),
        (dict(rocker=float("nan")), "rocker length must be a positive"),
        (dict(ground="long"), "ground length must be a positive"),
        (dict(crank=0.5, coupler=0.4, rocker=0.3, ground=0.9), "Grashof"),
        (dict(crank=0.5, coupler=0.2, rocker=0.45, ground=0.4), "strictly shortest"),
        (dict(crank=0.3, coupler=0.6, rocker=0.5, ground=0.6, variant="change_point"), "crank \\+ coupler = rocker \\+ ground"),
        (dict(crank=0.5, coupler=0.2, rocker=0.3, ground=0.4, variant="change_point", crank_angle=math.pi), "cannot be closed"),
        (dict(variant="triple_rocker"), "unknown four-bar variant"),
        (dict(branch=0), "branch must be \\+1 or -1"),
        (dict(branch=True), "branch must be \\+1 or -1"),
        (dict(masses=(1.0, 2.0)), "masses must have 3 entries"),
        (dict(masses=(1.0, -2.0, 1.0)), "masses of the coupler"),
        (dict(masses=3.0), "sequence of 3 numbers"),
        (dict(inertias=(0.1, 0.1, -0.1)), "inertias of the rocker must be non-negative"),
        (dict(crank_angle=float("inf")), "crank_angle must be a finite"),
    ],
)
@pytest.mark.usefixtures("without_shape_checks")
def test_four_bar_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        four_bar(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(crank=0.0), "crank length must be a positive"),
        (dict(rod=-1.0), "rod length must be a positive"),
        (dict(offset=float("nan")), "offset must be a finite"),
        (dict(crank=0.1, rod=0.2, offset=0.1), "rod > crank \\+ \\|offset\\|"),
        (dict(crank=0.1, rod=0.15, offset=-0.06), "rod > crank \\+ \\|offset\\|"),
        (dict(masses=(1.0, 1.0)), "masses must have 3 entries"),
        (dict(masses=(1.0, 1.0, 0.0)), "masses of the slider"),
        (dict(inertias=(0.1, 0.1, 0.1)), "inertias must have 2 entries"),
    ],
)
def test_slider_crank_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        slider_crank(**kwargs)
