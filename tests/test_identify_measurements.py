"""Measured logs into states (kronjax.identify's preprocessing, issue 39), against known answers.

Oracles: analytic derivatives of sums of sines and of a Fourier trajectory; delays, stale rows and
ramps put in by construction; polynomials a cubic spline reproduces exactly; and, end to end, a
simulated log of the double pendulum whose true base parameters are known (its torques from
Pinocchio's ``rnea`` at the exact motion, then noise, encoder steps, a delay, stale rows and
jittered stamps), identified by least squares on the preprocessed log.
"""

import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import identify as ki

try:  # the oracle of the simulated log's torques
    import pinocchio as pin
    from oracles import to_pinocchio
except ImportError:
    pin = None

RATE = 1000.0
FREQUENCIES = np.array([0.3, 0.7, 1.1])
AMPLITUDES = np.array([[1.0, 0.4, 0.2], [0.5, -0.3, 0.25]])  # (n, sines)
PHASES = np.array([0.2, 1.0, -0.5])


def sines(t, derivative=0):
    """A sum of sines per column, ``(T, 2)``, and its analytic derivatives."""
    w = 2 * np.pi * FREQUENCIES
    phase = t[:, None] * w + PHASES + derivative * np.pi / 2
    return np.sin(phase) * w**derivative @ AMPLITUDES.T


@pytest.mark.parametrize("method, v_tol, vd_tol", [("butterworth", 3e-3, 0.15), ("savgol", 4e-3, 0.35)])
def test_filtered_derivatives_of_noisy_sines_have_no_lag(method, v_tol, vd_tol):
    """1e-4 rad of noise, 1 kHz, filtered at 10 Hz: the first and second derivatives within
    tolerances set by the noise that passes the filter (the analytic ones peak at 4.1 rad/s and
    18 rad/s^2: 0.1 % and 1 % for Butterworth; Savitzky-Golay's stop-band lets twice the noise
    through), and no phase lag: the least-squares lag of the error is below 2e-5 s (a causal
    4th-order Butterworth at 10 Hz would delay by about 40 ms)."""
    t = np.arange(6000) / RATE
    x = sines(t) + 1e-4 * np.random.default_rng(0).normal(size=(t.size, 2))
    low = ki.LowPass(rate=RATE, cutoff=10.0, method=method)
    x_f, xd, xdd = low.derivatives(x)
    inner = slice(100, -100)  # 1 / cutoff at each end
    for got, order, tol in ((x_f, 0, 2e-4), (xd, 1, v_tol), (xdd, 2, vd_tol)):
        exact = sines(t, order)
        error = (got - exact)[inner]
        assert np.max(np.abs(error)) < tol, (order, np.max(np.abs(error)))
        # a lag d would leave an error of -d times the next derivative
        slope = sines(t, order + 1)[inner]
        lag = -np.sum(error * slope) / np.sum(slope**2)
        assert abs(lag) < 2e-5, (order, lag)


def test_torques_filtered_alike_have_the_motions_attenuation():
    """Parallel filtering: near the cut-off (an 8.5 Hz sine, filtered at 10 Hz: gain 0.79) the
    derivative of the filtered position equals the filtered derivative (what the torque, a
    function of the derivatives, goes through), to the central difference's 7e-4."""
    t = np.arange(4000) / RATE
    w = 2 * np.pi * 8.5
    low = ki.LowPass(rate=RATE, cutoff=10.0)
    _, xd, _ = low.derivatives(np.sin(w * t))
    inner = slice(300, -300)
    gain = np.max(np.abs(low(np.sin(w * t))[inner]))
    assert 0.75 < gain < 0.82  # 1 / (1 + 0.85^8) forward and backward
    np.testing.assert_allclose(xd[inner], low(w * np.cos(w * t))[inner], atol=1e-3 * w * gain)


def test_repeated_rows_are_exactly_the_inserted_ones():
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(0.8e-3, 1.2e-3, 400))
    q = np.cumsum(rng.normal(size=(400, 3)), axis=0)
    q[50:60, 0] = q[49, 0]  # one joint at rest is not a repeated row
    rows = np.sort(rng.choice(np.arange(1, 400), 30, replace=False))
    same_time = rows[::2]
    t_log = np.insert(t, rows, t[rows - 1])  # re-sent packets: the previous row's stamp and q
    q_log = np.insert(q, rows, q[rows - 1], axis=0)
    fresh = rows[1::2]  # a stale q under a fresh stamp
    t_log[fresh + np.searchsorted(rows, fresh)] += 0.5e-3
    inserted = rows + np.arange(rows.size)
    mask = ki.repeated_samples(q_log)
    assert mask.tolist() == np.isin(np.arange(q_log.shape[0]), inserted).tolist()
    np.testing.assert_array_equal(q_log[~mask], q)
    with_time = ki.repeated_samples(q_log, t_log)
    assert np.flatnonzero(with_time).tolist() == (same_time + np.searchsorted(rows, same_time)).tolist()


@pytest.mark.parametrize("delay_samples", [7.3, -12.61])
def test_a_fractional_delay_is_recovered_to_a_small_fraction_of_a_sample(delay_samples):
    t = np.arange(8000) / RATE
    delay = delay_samples / RATE
    rng = np.random.default_rng(2)
    reference = sines(t) + 1e-3 * rng.normal(size=(t.size, 2))
    delayed = 2.5 * sines(t - delay) + 1e-3 * rng.normal(size=(t.size, 2))  # a gain does not matter
    found = ki.estimate_delay(reference, delayed, RATE, max_delay=0.05)
    assert abs(found - delay) * RATE < 0.01, (found * RATE, delay_samples)
    aligned, keep = ki.remove_delay(t, delayed, found)
    assert (~keep).sum() == int(np.ceil(abs(delay_samples)))
    np.testing.assert_allclose(aligned, 2.5 * sines(t[keep]), atol=0.01)


def test_resampling_irregular_stamps_reproduces_a_smooth_function():
    rng = np.random.default_rng(3)
    t = np.arange(3000) / RATE + rng.uniform(-3e-4, 3e-4, 3000)
    t = np.delete(t, rng.choice(np.arange(1, 2999), 150, replace=False))  # lost rows: gaps of 2 ms
    grid, x = ki.resample(t, sines(t), rate=RATE)
    assert np.allclose(np.diff(grid), 1e-3, rtol=0, atol=1e-12) and grid[0] == t[0] and grid[-1] <= t[-1]
    np.testing.assert_allclose(x, sines(grid), atol=1e-9)  # O(h^4) of the cubic
    _, linear = ki.resample(t, sines(t), rate=RATE, method="linear")
    h = np.max(np.diff(t))  # the linear error is below h^2 max|x''| / 8
    assert np.max(np.abs(linear - sines(grid))) < h**2 * np.max(np.abs(sines(t, 2))) / 8


def test_whole_periods_trim_the_ramps_and_the_fit_recovers_the_excitation():
    """A Fourier excitation of period 2 s between a start ramp (1.3 s) and an end ramp (0.9 s),
    both blending smoothly from and to rest: three whole periods are kept from near the end of the
    start ramp (its last 55 ms are within the tolerance of the excitation), and
    FourierTrajectory.fit on them gives back the coefficients."""
    traj = ki.FourierTrajectory(
        offset=[0.1, -0.2], sine=[[0.8, 0.1, -0.2], [0.3, 0.4, 0.1]], cosine=[[0.0, 0.3, 0.1], [-0.5, 0.2, 0.0]], frequency=0.5
    )
    t = np.arange(int(8.2 * 200)) / 200.0
    q = np.asarray(traj(jnp.asarray(t - 1.3))[0])
    blend = np.clip(np.minimum((t - 0.3) / 1.0, (7.9 - t) / 0.6), 0.0, 1.0)
    blend = blend**2 * (3 - 2 * blend)  # smooth from rest (before 1.3 s) and to rest (after 7.3 s)
    q = np.asarray(traj.offset) + blend[:, None] * (q - np.asarray(traj.offset))
    noisy = q + 1e-4 * np.random.default_rng(4).normal(size=q.shape)
    keep = ki.whole_periods(t, traj.period, noisy, tolerance=0.002)
    assert keep.sum() == 3 * 400
    assert 1.2 <= t[keep][0] <= 1.3
    fitted = ki.FourierTrajectory.fit(t[keep] - 1.3, q[keep], harmonics=3, frequency=0.5)
    np.testing.assert_allclose(fitted.sine, traj.sine, atol=2e-4)
    np.testing.assert_allclose(fitted.cosine, traj.cosine, atol=2e-4)
    # a given window, no q: the whole periods from its start
    keep = ki.whole_periods(t, 2.0, start=1.0, stop=6.5)
    assert keep.sum() == 2 * 400 and t[keep][0] == 1.0


def test_spline_derivatives_of_commanded_positions():
    """A non-periodic commanded motion sampled at 100 Hz: the interpolating spline's derivatives
    against the analytic ones (O(h^3), O(h^2)); through noisy samples, the smoothing spline's."""

    def motion(t):
        e, c, s = np.exp(-t), np.cos(2 * t), np.sin(2 * t)
        q = np.stack([np.sin(1.5 * t) + 0.1 * t**2, e * c], axis=1)
        v = np.stack([1.5 * np.cos(1.5 * t) + 0.2 * t, -e * (c + 2 * s)], axis=1)
        vd = np.stack([-2.25 * np.sin(1.5 * t) + 0.2, e * (-3 * c + 4 * s)], axis=1)
        return q, v, vd

    t = np.arange(0.0, 4.0, 0.01)
    at = np.linspace(0.5, 3.5, 301) + 0.003  # between the samples
    q_s, v_s, vd_s = ki.spline_derivatives(t, motion(t)[0], at=at)
    q_e, v_e, vd_e = motion(at)
    np.testing.assert_allclose(q_s, q_e, atol=1e-7)
    np.testing.assert_allclose(v_s, v_e, atol=1e-5)
    np.testing.assert_allclose(vd_s, vd_e, atol=2e-3)
    np.testing.assert_allclose(ki.spline_derivatives(t, motion(t)[0])[0], motion(t)[0], atol=1e-14)  # interpolates
    noisy = motion(t)[0] + 1e-3 * np.random.default_rng(5).normal(size=(t.size, 2))
    _, v_smooth, _ = ki.spline_derivatives(t, noisy, at=at, smoothing=None)
    _, v_interp, _ = ki.spline_derivatives(t, noisy, at=at)
    assert np.max(np.abs(v_smooth - v_e)) < 0.3 * np.max(np.abs(v_interp - v_e))


def _double_pendulum_log(rng, delay=0.02, rate=500.0):
    """A 12 s log at about 500 Hz of the double pendulum on a Fourier excitation (period 4 s):
    torques from Pinocchio's rnea at the exact motion, delayed by ``delay``; q with noise and
    encoder steps (16 bits a turn); torque noise; jittered stamps; 5 % stale rows (half of them
    re-sent with their stamp, half under a fresh stamp)."""
    model = kj.models.double_pendulum()
    traj = ki.FourierTrajectory(
        offset=[0.3, -0.4],
        sine=[[1.0, -0.5, 0.4, 0.2], [0.8, 0.6, -0.3, 0.3]],
        cosine=[[0.3, 0.4, -0.2, 0.1], [-0.6, 0.2, 0.5, -0.2]],
        frequency=0.25,
    )
    n = int(12 * rate)
    t = np.arange(n) / rate + rng.uniform(-0.2, 0.2, n) / rate
    q = np.asarray(traj(jnp.asarray(t))[0])
    pm = to_pinocchio(model)
    data = pm.createData()
    tau = np.stack([pin.rnea(pm, data, *s).copy() for s in zip(*(np.asarray(x) for x in traj(jnp.asarray(t - delay))))])
    step = 2 * np.pi / 2**16
    q = np.round((q + 2e-5 * rng.normal(size=q.shape)) / step) * step
    tau = tau + 0.2 * rng.normal(size=tau.shape)
    stale = np.sort(rng.choice(np.arange(1, n), n // 20, replace=False))
    t_log = np.insert(t, stale, t[stale - 1])
    t_log[stale[1::2] + np.arange(stale.size)[1::2]] += 0.5 / rate  # a stale reading under a fresh stamp
    q_log, tau_log = np.insert(q, stale, q[stale - 1], axis=0), np.insert(tau, stale, tau[stale - 1], axis=0)
    return model, traj, t_log, q_log, tau_log, stale.size


@pytest.mark.skipif(pin is None, reason="needs Pinocchio (the test extra)")
def test_preprocess_a_simulated_log_gives_the_base_parameters():
    """The log of _double_pendulum_log through preprocess with its defaults, the torques' delay
    estimated against a nominal model with 30 % heavier links: the delay to a twentieth of a
    sample, every stale row dropped, the velocities and accelerations within 1 % and 2 % of their
    peaks, and least squares on the states and torques it returns within 0.2 % of the true base
    parameters (0.2 % of the largest for those that are zero; 1e-4 measured) and within 3 of
    their reported standard deviations. The base parameters
    are those of the log's own regressor (the same as base_parameters(model) finds: 6, in
    BaseParameters' example), which saves compiling the regressor for a second shape."""
    rng = np.random.default_rng(6)
    model, traj, t, q, tau, stale = _double_pendulum_log(rng)
    pi = ki.standard_parameters(model)
    nominal = ki.with_standard_parameters(model, 1.3 * pi)
    log = ki.preprocess(t, q, tau=tau, delay=None, model=nominal)
    # at a turning point the encoder steps of both joints can repeat too: a few more rows
    assert stale <= log.dropped <= stale + 6
    assert abs(log.delay - 0.02) < 1e-4, log.delay
    assert abs(log.rate - 500.0) < 0.05 and 5.0 < log.cutoff < 20.0, (log.rate, log.cutoff)
    assert log.t.size > 5500 and np.allclose(np.diff(log.t), 1.0 / log.rate)
    _, v_exact, vd_exact = (np.asarray(x) for x in traj(jnp.asarray(log.t)))
    assert np.max(np.abs(log.v - v_exact)) < 0.01 * np.max(np.abs(v_exact))
    assert np.max(np.abs(log.vd - vd_exact)) < 0.02 * np.max(np.abs(vd_exact))
    y = ki.regressor(model, log.q, log.v, log.vd)
    base = ki.base_parameters_from_regressor(y)
    assert base.rank == 6 and base.independent == (1, 2, 9, 11, 12, 19)
    beta = np.asarray(ki.least_squares(base.regressor(y), log.tau))
    truth = np.asarray(base.from_standard(pi))
    tol = np.where(np.abs(truth) > 0, 2e-3 * np.abs(truth), 2e-3 * np.max(np.abs(truth)))
    assert np.all(np.abs(beta - truth) < tol), (beta, truth)
    # within the reported standard deviations (Gautier's formula) of a fit on the samples decimated to
    # twice the cut-off, whose errors are nearly independent (the formula's assumption)
    step = int(log.rate / (2 * log.cutoff))
    est = ki.fit(base.regressor(y)[::step], log.tau[::step])
    assert np.all(np.abs(np.asarray(est.estimate) - truth) < 3 * np.asarray(est.std)), (est.estimate - truth) / est.std


@pytest.mark.parametrize("method", ["butterworth", "savgol"])
def test_preprocess_with_measured_velocities(method):
    """Measured velocities (noisy) are filtered and differentiated instead of the positions: the
    same filter on q, v and tau, and vd within 1 % of its peak."""
    rng = np.random.default_rng(7)
    t = np.arange(5000) / RATE + rng.uniform(-1e-4, 1e-4, 5000)
    v = sines(t, 1) + 1e-3 * rng.normal(size=(t.size, 2))
    log = ki.preprocess(t, sines(t), v=v, tau=sines(t, 2), cutoff=10.0, method=method)
    assert log.filter == ki.LowPass(rate=log.rate, cutoff=10.0, method=method) and log.delay == 0.0
    np.testing.assert_allclose(log.v, sines(log.t, 1), atol=0.005 * np.max(np.abs(sines(t, 1))))
    np.testing.assert_allclose(log.vd, sines(log.t, 2), atol=0.01 * np.max(np.abs(sines(t, 2))))
    np.testing.assert_allclose(log.tau, log.vd, atol=0.01 * np.max(np.abs(sines(t, 2))))  # filtered alike


def test_bad_input_is_refused_clearly(without_shape_checks):
    t = np.arange(100) / 100.0
    q = np.stack([np.sin(t), np.cos(t)], axis=1)
    backwards = t.copy()
    backwards[40] = backwards[38]
    with pytest.raises(ValueError, match=r"increase strictly, but t\[40\]"):
        ki.resample(backwards, q)
    with pytest.raises(ValueError, match="tau must have the shape of q"):
        ki.preprocess(t, q, tau=q[:, :1])
    with pytest.raises(ValueError, match="q must have shape"):
        ki.preprocess(t, q[:-1])
    nan = q.copy()
    nan[17, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite entries .* the first at row 17"):
        ki.preprocess(t, nan)
    with pytest.raises(ValueError, match="a gap of 0.2 s"):
        ki.resample(np.delete(t, range(50, 69)), np.delete(q, range(50, 69), axis=0))
    with pytest.raises(ValueError, match="Nyquist"):
        ki.LowPass(rate=100.0, cutoff=50.0)
    with pytest.raises(ValueError, match="needs tau and a nominal model"):
        ki.preprocess(t, q, tau=q, delay=None)
    with pytest.raises(ValueError, match="no tau was given"):
        ki.preprocess(t, q, delay=0.01)
    with pytest.raises(ValueError, match="no whole period"):
        ki.whole_periods(t, 2.0)
