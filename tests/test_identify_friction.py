"""Friction models as regressor columns, the physically consistent fit with non-negative friction,
its convergence report, and an estimate back into a model (kronjax.identify, issue 39).

Oracles: the friction torques written out in NumPy and differentiated by central differences;
kronjax's passive forces (``inverse_dynamics(..., passive=True)``, ``passive_forces(smoothing=)``),
which do not go through the regressor; torques simulated by inverse dynamics of a model with known
parameters; SciPy's bounded least squares (``scipy.optimize.lsq_linear``) for the constrained
optimum.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import kronjax as kj
from kronjax import identify as ki

MODEL = kj.models.double_pendulum()
NB = 10 * MODEL.n_bodies  # 20 body parameters
S, VS = 0.05, 0.3  # tanh velocity scale and Stribeck velocity (rad/s)
ALL = ki.Friction(coulomb="tanh", smoothing=S, offset=True, stribeck=VS)


def _states(n, seed):
    return np.random.default_rng(seed).normal(size=(3, n, 2))


def _friction_torque(v, fv, fc, fo, fs):
    """The friction torque of each coordinate of ``ALL``, from its textbook form (not from kronjax)."""
    return fv * v + fc * np.tanh(v / S) + fo + fs * np.exp(-((v / VS) ** 2)) * np.sign(v)


def _realisable_start(pi):
    """The double pendulum's links are slender rods (semi-definite pseudo-inertia); the fit needs
    a positive definite start: 20 % heavier, with 0.05 kg m^2 more about each axis."""
    start = np.array(pi, dtype=float) * 1.2
    for body in range(MODEL.n_bodies):
        start[10 * body + np.array([4, 6, 9])] += 0.05
    return start


def _ids(model, q, v, vd, passive=True):
    return jax.vmap(lambda *s: kj.inverse_dynamics(model, *s, passive=passive))(q, v, vd)


def test_columns_are_the_derivatives_of_the_friction_torque():
    """Each friction column is d tau_f / d coefficient of the textbook friction torque (central
    differences, exact for a linear function up to rounding), kind by kind, coordinate by
    coordinate; the names follow the same order. (Sign Coulomb: test_friction_true_is_unchanged.)"""
    q, v, vd = _states(48, seed=0)  # base_parameters' default samples for 28 columns: one compilation
    v[0] = [0.0, -VS]  # at rest (sign 0) and at the Stribeck velocity
    y = np.asarray(ki.regressor(MODEL, q, v, vd, friction=ALL))
    assert y.shape == (48, 2, NB + 8)
    names = ki.parameter_names(MODEL, friction=ALL)
    assert names[NB:] == tuple(f"joint{j}.{k}" for k in ("fv", "fc", "fo", "fs") for j in (1, 2))
    coefficients = np.random.default_rng(1).uniform(0.1, 1.0, size=(4, 2))  # (kind, coordinate)
    h = 1e-3
    for kind in range(4):
        for joint in range(2):
            up, down = coefficients.copy(), coefficients.copy()
            up[kind, joint] += h
            down[kind, joint] -= h
            fd = (_friction_torque(v, *up) - _friction_torque(v, *down)) / (2 * h)
            np.testing.assert_allclose(y[..., NB + 2 * kind + joint], fd, rtol=0, atol=1e-10)
    # with the coefficients: the friction torque itself
    np.testing.assert_allclose(y[..., NB:] @ coefficients.reshape(-1), _friction_torque(v, *coefficients), atol=1e-12)


def test_columns_are_the_models_passive_forces():
    """``Y [pi; fv; fc; ia]`` is the inverse dynamics of the model holding those parameters with
    its passive forces: by sign (``inverse_dynamics(..., passive=True)``) and by tanh
    (``passive_forces(..., smoothing=s)``)."""
    fv, fc, ia = np.array([0.5, 0.3]), np.array([0.2, 0.1]), np.array([0.05, 0.02])
    model = ki.to_model(MODEL, np.concatenate([ki.standard_parameters(MODEL), fv, fc, ia]), friction=True, armature=True)
    q, v, vd = _states(46, seed=2)
    params = np.concatenate([ki.standard_parameters(MODEL), fv, fc, ia])
    y = ki.regressor(MODEL, q, v, vd, friction=True, armature=True)
    np.testing.assert_allclose(y @ params, _ids(model, q, v, vd), rtol=1e-12, atol=1e-10)
    # tanh Coulomb: the first four friction columns of SMOOTH (fv, fc) against passive_forces(smoothing=)
    y = ki.regressor(MODEL, q, v, vd, friction=SMOOTH)[..., : NB + 4]
    passive = jax.vmap(lambda q, v: kj.passive_forces(model, q, v, smoothing=S))(q, v)
    expected = _ids(model, q, v, vd, passive=False) - passive - ia * vd  # SMOOTH has no rotor columns
    np.testing.assert_allclose(y @ params[:-2], expected, rtol=1e-12, atol=1e-10)


def test_friction_true_is_unchanged():
    """``friction=True``: viscous ``diag(v)`` then Coulomb ``diag(sign v)``, the same names and
    count as before ``Friction`` existed, and the same as ``Friction()``."""
    q, v, vd = _states(44, seed=3)  # base_parameters' default samples for 24 columns: one compilation
    y0 = np.asarray(ki.regressor(MODEL, q, v, vd))
    y = np.asarray(ki.regressor(MODEL, q, v, vd, friction=True))
    diag = lambda x: np.einsum("bi,ij->bij", x, np.eye(2))  # noqa: E731
    np.testing.assert_array_equal(y, np.concatenate([y0, diag(v), diag(np.sign(v))], axis=-1))
    np.testing.assert_array_equal(y, ki.regressor(MODEL, q, v, vd, friction=ki.Friction()))
    assert ki.parameter_names(MODEL, friction=True)[NB:] == ("joint1.fv", "joint2.fv", "joint1.fc", "joint2.fc")
    assert ki.parameter_names(MODEL, friction=ki.Friction()) == ki.parameter_names(MODEL, friction=True)
    assert ki.base_parameters(MODEL, friction=ALL).rank == 6 + 8  # each friction column is identifiable


# The physically consistent fits share one compilation (the friction kinds, 46 states, STEPS)
SMOOTH = ki.Friction(coulomb="tanh", smoothing=S, offset=True)
N_FIT, STEPS = 46, 2000  # 46: base_parameters' default samples for these 26 columns (one compiled regressor)


def _fit_problem(fv, noise=0.0, seed=4):
    """The double pendulum with viscous, tanh-Coulomb and offset friction: the regressor, torques
    from inverse dynamics and passive forces (not from the regressor), the truth and a start."""
    q, v, vd = _states(N_FIT, seed=seed)
    truth = np.concatenate([ki.standard_parameters(MODEL), fv, [0.3, 0.1], [0.25, -0.15]])
    model = ki.to_model(MODEL, truth, friction=SMOOTH, unmodelled="drop")
    passive = jax.vmap(lambda q, v: kj.passive_forces(model, q, v, smoothing=S))(q, v)
    tau = _ids(model, q, v, vd, passive=False) - passive + truth[-2:]  # the offsets by hand
    tau = tau + np.random.default_rng(seed + 1).normal(scale=noise, size=tau.shape)
    start = np.concatenate([_realisable_start(truth[:NB]), [0.1, 0.1, 0.1, 0.1, 0.0, 0.0]])
    return ki.regressor(MODEL, q, v, vd, friction=SMOOTH), np.asarray(tau), truth, start


@pytest.mark.slow
def test_physically_consistent_recovers_offset_and_tanh_coulomb():
    """Exact torques: the fit reproduces the base parameters and each friction coefficient, stays
    realisable, and reports convergence (no warning)."""
    y, tau, truth, start = _fit_problem(fv=[0.4, 0.2])
    base = ki.base_parameters(MODEL, friction=SMOOTH)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = ki.physically_consistent(MODEL, y, tau, friction=SMOOTH, initial=start, steps=STEPS)
    assert fit.converged and fit.steps == STEPS
    np.testing.assert_allclose(base.from_standard(fit.estimate), base.from_standard(truth), rtol=0, atol=1e-5)
    np.testing.assert_allclose(fit.estimate[NB:], truth[NB:], rtol=0, atol=1e-5)
    assert np.linalg.eigvalsh(ki.pseudo_inertia(fit.estimate[:NB])).min() > 0


@pytest.mark.slow
def test_physically_consistent_keeps_friction_nonnegative():
    """Joint 2 has no viscous friction; with noise, unconstrained least squares finds a negative
    one. The fit keeps it >= 0 and finds the bounded least-squares optimum (SciPy's lsq_linear on
    the base regressor, fv and fc >= 0, offsets free)."""
    y, tau, truth, start = _fit_problem(fv=[0.4, 0.0], noise=0.05, seed=5)
    base = ki.base_parameters(MODEL, friction=SMOOTH)
    w = base.regressor(y).reshape(-1, base.rank)
    columns = [base.independent.index(NB + k) for k in range(6)]
    free = np.linalg.lstsq(w, tau.reshape(-1), rcond=None)[0]
    assert free[columns[1]] < -0.005  # joint2.fv: the data push it negative
    lower = np.full(base.rank, -np.inf)
    lower[columns[:4]] = 0.0
    bounded = scipy.optimize.lsq_linear(w, tau.reshape(-1), bounds=(lower, np.inf), tol=1e-14).x
    fit = ki.physically_consistent(MODEL, y, tau, friction=SMOOTH, initial=start, steps=STEPS)
    assert fit.converged
    assert np.all(fit.estimate[NB : NB + 4] >= 0) and fit.estimate[NB + 1] < 1e-6
    np.testing.assert_allclose(base.from_standard(fit.estimate), bounded, rtol=0, atol=1e-5)


def test_convergence_report():
    """Unpacks as (pi, losses); a tiny step limit is reported: converged False and a warning that
    says what to do."""
    y, tau, _, start = _fit_problem(fv=[0.4, 0.2])
    with pytest.warns(UserWarning, match=r"not converged after 3 steps .* Run more steps"):
        fit = ki.physically_consistent(MODEL, y, tau, friction=SMOOTH, initial=start, steps=3)
    assert not fit.converged and fit.steps == 3
    assert fit.loss_change > fit.tolerance and fit.gradient_norm > np.sqrt(fit.tolerance) * fit.initial_gradient_norm
    estimate, losses = fit
    assert estimate is fit.estimate and losses.shape == (3,)
    assert fit[0] is fit.estimate and fit[1] is fit.losses and len(fit) == 2  # indexes as the old 2-tuple
    assert float(fit.loss) < float(losses[0])


def test_to_model_round_trip():
    """Identify damping, Coulomb friction and rotor inertias (base least squares on torques of a
    model that holds them), rebuild the model: its inverse dynamics with passive forces reproduces
    the torques on other states, and forward dynamics inverts them."""
    truth = ki.to_model(
        MODEL,
        np.concatenate([ki.standard_parameters(MODEL), [0.5, 0.3], [0.2, 0.1], [0.05, 0.02]]),
        friction=True,
        armature=True,
    )
    q, v, vd = _states(46, seed=8)  # base_parameters' default samples for 26 columns: one compilation
    base = ki.base_parameters(MODEL, friction=True, armature=True)
    y = ki.regressor(MODEL, q, v, vd, friction=True, armature=True)
    beta = ki.least_squares(base.regressor(y), _ids(truth, q, v, vd))
    # joint 1's rotor regroups with link 1's Izz (both act on vd1 alone): the split comes from the
    # nominal parameters, here the datasheet's rotor inertias
    nominal = np.concatenate([ki.standard_parameters(MODEL), np.zeros(4), [0.05, 0.02]])
    fitted = ki.to_model(MODEL, beta, friction=True, armature=True, base=base, nominal=nominal)
    np.testing.assert_allclose(fitted.damping, [0.5, 0.3], atol=1e-9)
    np.testing.assert_allclose(fitted.friction, [0.2, 0.1], atol=1e-9)
    np.testing.assert_allclose(fitted.armature, [0.05, 0.02], atol=1e-9)
    q, v, vd = _states(46, seed=9)
    tau = _ids(truth, q, v, vd)
    np.testing.assert_allclose(_ids(fitted, q, v, vd), tau, rtol=1e-9, atol=1e-9)
    forward = jax.vmap(lambda *s: kj.forward_dynamics(fitted, *s, passive=True))(q, v, tau)
    np.testing.assert_allclose(forward, vd, rtol=1e-8, atol=1e-8)


@pytest.mark.usefixtures("without_shape_checks")
def test_bad_input():
    with pytest.raises(ValueError, match="unknown Coulomb model"):
        ki.Friction(coulomb="viscous")
    with pytest.raises(ValueError, match="smoothing > 0"):
        ki.Friction(coulomb="tanh", smoothing=-0.1)
    with pytest.raises(ValueError, match="needs a velocity scale"):
        ki.Friction(coulomb="tanh")
    with pytest.raises(ValueError, match="applies to coulomb='tanh' only"):
        ki.Friction(smoothing=0.1)
    with pytest.raises(ValueError, match="Stribeck velocity"):
        ki.Friction(stribeck=0.0)
    with pytest.raises(ValueError, match="no kind chosen"):
        ki.Friction(viscous=False, coulomb=None)
    q, v, vd = _states(44, seed=10)
    with pytest.raises(TypeError, match="friction must be True, False or"):
        ki.regressor(MODEL, q, v, vd, friction="tanh")
    y = ki.regressor(MODEL, q, v, vd, friction=True)
    with pytest.raises(ValueError, match=r"has 28 parameters .*joint1.fo"):
        ki.physically_consistent(MODEL, y, jnp.zeros((44, 2)), friction=ALL)
    start = np.concatenate([_realisable_start(ki.standard_parameters(MODEL)), [-0.1, 0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"joint1.fv.* must be >= 0"):
        ki.physically_consistent(MODEL, y, jnp.zeros((44, 2)), friction=True, initial=start)
    pi = ki.standard_parameters(MODEL)
    with pytest.raises(ValueError, match="no offset friction term"):
        ki.to_model(MODEL, np.concatenate([pi, np.zeros(4), [0.1, 0.0], np.zeros(2)]), friction=ALL)
    with pytest.raises(ValueError, match="damping must be >= 0"):
        ki.to_model(MODEL, np.concatenate([pi, [-0.1, 0.0, 0.0, 0.0]]), friction=True)
    with pytest.raises(ValueError, match="pass the friction= and armature="):
        ki.to_model(MODEL, np.zeros(6), friction=True, base=ki.base_parameters_from_regressor(y[..., :NB]))
