"""Uncertainty of least-squares estimates, the rank of base parameters in float32, and the Panda's
published parameters (issue 39).

Oracles: Monte Carlo over simulated noise draws (the sample covariance of the estimates, never the
formula's own algebra); the float64 answer of ``base_parameters`` and a float32 run in a process
without ``jax_enable_x64`` (as a user who forgets it runs); Gaz et al. 2019's own table of
base-parameter coefficients (supplementary material, Table III).
"""

import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import identify as ki

DRAWS = 4000  # noise draws: a standard deviation's sampling error is about 1 / sqrt(2 DRAWS) = 1.1 %


@functools.cache
def _pendulum():
    """The double pendulum, its base parameters and the base regressor at 100 fixed states."""
    model = kj.models.double_pendulum()
    base = ki.base_parameters(model)
    y = base.regressor(ki.regressor(model, *np.random.default_rng(0).normal(size=(3, 100, 2))))
    return np.asarray(y), np.asarray(base.from_standard(ki.standard_parameters(model))), base


def _monte_carlo(noise_std, **options):
    """``DRAWS`` fits of the pendulum's torques with noise of standard deviation ``noise_std`` per
    joint: the fits (a batch of :class:`LeastSquaresFit`) and the true ``beta``."""
    y, beta, _ = _pendulum()
    noise = np.random.default_rng(1).normal(size=(DRAWS, *y.shape[:2])) * np.asarray(noise_std)
    fits = jax.jit(jax.vmap(lambda tau: ki.fit(y, tau, **options)))(y @ beta + noise)
    return fits, beta


def _assert_covariance_matches(fits, rtol):
    """The covariance each fit reports (its mean over the draws) against the sample covariance of
    the estimates: standard deviations within ``rtol``, correlations within 0.05 (their
    sampling error is below 1 / sqrt(DRAWS) = 0.016)."""
    sample = np.cov(np.asarray(fits.estimate), rowvar=False)
    reported = np.mean(np.asarray(fits.covariance), axis=0)
    np.testing.assert_allclose(np.sqrt(np.diag(reported)), np.sqrt(np.diag(sample)), rtol=rtol)
    corr = lambda c: c / np.sqrt(np.outer(np.diag(c), np.diag(c)))  # noqa: E731
    np.testing.assert_allclose(corr(reported), corr(sample), atol=0.05)


def test_ordinary_covariance_against_monte_carlo():
    fits, beta = _monte_carlo(0.05)
    y = _pendulum()[0]
    rows, r = y.shape[0] * y.shape[1], y.shape[2]
    assert (fits.rows, fits.rank, fits.weighted) == (rows, r, False)
    # the estimate is unbiased and sigma_rho^2 = ||rho||^2 / (rows - r) too: its mean over the
    # draws is 0.05^2 within sampling error (relative std sqrt(2 / ((rows - r) DRAWS)) = 0.16 %)
    np.testing.assert_allclose(np.mean(np.asarray(fits.estimate), axis=0), beta, atol=4 * 0.05 / np.sqrt(DRAWS))
    np.testing.assert_allclose(np.mean(np.asarray(fits.sigma) ** 2), 0.05**2, rtol=0.01)
    _assert_covariance_matches(fits, rtol=0.05)
    # one fit's residual RMS per joint is about the noise's (100 samples per joint)
    np.testing.assert_allclose(np.asarray(fits.residual_rms)[0], 0.05, rtol=0.2)


def test_weighted_covariance_against_monte_carlo():
    sigma = np.array([0.01, 0.1])  # per joint: the weighted estimate is much better on joint 1's rows
    known, beta = _monte_carlo(sigma, sigma=sigma)
    assert known.weighted
    np.testing.assert_allclose(np.asarray(known.sigma)[0], sigma)
    _assert_covariance_matches(known, rtol=0.05)
    # the variances estimated from the residuals (Gautier and Poignet): the same covariance up to
    # the estimated weights' own scatter (100 samples per joint)
    estimated, _ = _monte_carlo(sigma, weighted=True)
    np.testing.assert_allclose(np.mean(np.asarray(estimated.sigma), axis=0), sigma, rtol=0.02)
    _assert_covariance_matches(estimated, rtol=0.08)
    # weighting pays: the ordinary estimate's standard deviations on these data are larger
    ordinary, _ = _monte_carlo(sigma)
    assert np.all(np.std(np.asarray(ordinary.estimate), axis=0) > np.std(np.asarray(known.estimate), axis=0))


def test_fit_matches_least_squares_and_relative_std_definition():
    y, beta, base = _pendulum()
    tau = y @ beta + np.random.default_rng(2).normal(size=y.shape[:2]) * np.array([0.01, 0.1])
    est = ki.fit(y, tau)
    np.testing.assert_allclose(est.estimate, ki.least_squares(y, tau), rtol=1e-12)
    weighted = ki.fit(y, tau, weighted=True)
    wls_beta, wls_sigma = ki.weighted_least_squares(y, tau)
    np.testing.assert_allclose(weighted.estimate, wls_beta, rtol=1e-12)
    np.testing.assert_allclose(weighted.sigma, wls_sigma, rtol=1e-12)
    for e in (est, weighted):
        cov = np.asarray(e.covariance)
        np.testing.assert_allclose(cov, cov.T, rtol=0, atol=1e-12 * np.max(np.abs(cov)))
        assert np.all(np.linalg.eigvalsh(cov) > 0)
        np.testing.assert_allclose(e.std, np.sqrt(np.diag(cov)), rtol=1e-14)
        np.testing.assert_allclose(e.relative_std, 100 * np.sqrt(np.diag(cov)) / np.abs(np.asarray(e.estimate)), rtol=1e-14)
        residual = tau - y @ np.asarray(e.estimate)
        np.testing.assert_allclose(e.residual_rms, np.sqrt(np.mean(residual**2, axis=0)), rtol=1e-12)
    # the condition number of the regressor solved: unweighted, or each joint's rows over sigma_j
    np.testing.assert_allclose(est.condition_number, np.linalg.cond(y.reshape(-1, 6)), rtol=1e-10)
    scaled = y / np.asarray(weighted.sigma)[None, :, None]
    np.testing.assert_allclose(weighted.condition_number, np.linalg.cond(scaled.reshape(-1, 6)), rtol=1e-10)
    # a regressor given as (rows, r): one "joint"
    flat = ki.fit(y.reshape(-1, 6), tau.reshape(-1))
    np.testing.assert_allclose(flat.estimate, est.estimate, rtol=1e-12)
    assert flat.residual_rms.shape == flat.sigma.shape == (1,)


def test_table_prints():
    y, beta, base = _pendulum()
    tau = y @ beta + np.random.default_rng(3).normal(size=y.shape[:2]) * 0.05
    est = ki.fit(y, tau)
    lines = est.table(base.describe()).splitlines()
    assert len(lines) == 1 + base.rank
    assert lines[0].split() == ["parameter", "value", "std", "%std"]
    for line, name, value, std, rel in zip(lines[1:], base.describe(), est.estimate, est.std, est.relative_std):
        assert line.startswith(name)
        got = [float(x) for x in line[len(name) :].split()]
        np.testing.assert_allclose(got[:2], [value, std], rtol=5e-4)  # 4 significant digits
        np.testing.assert_allclose(got[2], rel, rtol=0, atol=0.005 + 1e-12)  # percent, 2 decimals
    assert est.table().splitlines()[1].startswith("beta[0]")


def test_fit_refuses_bad_input():
    y, beta, _ = _pendulum()
    with pytest.raises(ValueError, match="more rows than parameters"):
        ki.fit(y[:3], (y @ beta)[:3])
    with pytest.raises(ValueError, match="not both"):
        ki.fit(y, y @ beta, weighted=True, sigma=np.ones(2))
    with pytest.raises(ValueError, match="got 2 names for 6 parameters"):
        ki.fit(y, y @ beta + 1e-3).table(["a", "b"])


# ----------------------------------------------------------------------------------------------
# The rank in float32
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("friction", [False, True])
def test_float32_regressor_gives_the_float64_rank(friction):
    """A regressor computed in float32 throughout (the model and the states, as JAX without
    ``jax_enable_x64`` computes it) against the same regressor in float64. Before the fix: rank 7
    instead of 6 (11 instead of 10 with friction). One compilation per precision: the columns
    without friction are the first 20 of those with it."""
    model = kj.models.double_pendulum()
    states = np.random.default_rng(4).normal(size=(3, 40, model.nv))
    y64 = ki.regressor(model, *states, friction=True)
    y32 = ki.regressor(model.astype(jnp.float32), *states.astype(np.float32), friction=True)
    assert y32.dtype == jnp.float32
    p = 24 if friction else 20
    expected = ki.base_parameters_from_regressor(y64[..., :p])
    base = ki.base_parameters_from_regressor(y32[..., :p])
    assert base.rank == expected.rank == (10 if friction else 6)
    assert base.independent == expected.independent
    np.testing.assert_allclose(base.projection, expected.projection, rtol=0, atol=1e-4)
    # the float64 threshold on a float32 regressor is refused, naming the cause
    with pytest.raises(ValueError, match="float32.*jax_enable_x64"):
        ki.base_parameters_from_regressor(y32[..., :p], rtol=1e-8)


def _without_x64(script):
    """Run ``script`` in a Python process without ``jax_enable_x64`` (as a user who forgets it);
    its last line of output, parsed as JSON."""
    env = dict(os.environ, JAX_ENABLE_X64="0")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_BASE_PARAMETERS_F32 = """
import json, jax, kronjax as kj
assert not jax.config.jax_enable_x64
out = []
for friction in (False, True):
    model = kj.models.{model}()
    try:
        base = kj.identify.base_parameters(model, friction=friction)
        out.append([base.rank, list(base.independent)])
    except ValueError as error:
        out.append(str(error))
print(json.dumps(out))
"""


def _check_float32_run(name):
    """``base_parameters`` without x64: the float64 answer, or a clear error that names float32
    (before the fix: 7 and 11 base parameters for the double pendulum instead of 6 and 10; the
    Panda's "ill-determined rank ... stack more states")."""
    got = _without_x64(_BASE_PARAMETERS_F32.format(model=name))
    for friction, result in zip((False, True), got):
        expected = ki.base_parameters(getattr(kj.models, name)(), friction=friction)
        if isinstance(result, str):
            assert "float32" in result and "jax_enable_x64" in result, result
        else:
            assert result == [expected.rank, list(expected.independent)]


@pytest.mark.slow  # a process of its own: import and compilation, about 20 s
def test_base_parameters_without_x64_double_pendulum():
    _check_float32_run("double_pendulum")


@pytest.mark.slow
def test_base_parameters_without_x64_panda():
    _check_float32_run("panda")


# ----------------------------------------------------------------------------------------------
# The Panda's inertial parameters against Gaz et al.'s own coefficients
# ----------------------------------------------------------------------------------------------

# Gaz et al. 2019, supplementary material, Table III, column pi(p^): the base-parameter
# coefficients of their retrieved (feasible) parameters p^, the parameters of kj.models.panda().
# Printed with 4 decimals. Every first-moment row (gravity) and the two inertia rows that contain
# link 6's centre-of-mass z. Their link 7's frame is 0.107 m below kronjax's flange frame, hence
# "- 0.107 m7" where they have c7z m7. (With Table VIII's c6z = -1.0517e-02, the first c6z row
# would be 0.0679, the second 0.0271 and J6yz +0.0001.)
_TABLE_III = [
    ({"link2.mcx": 1}, -0.0020),
    (
        {
            "link2.mcy": 1,
            "link3.m": -0.316,
            "link3.mcz": -1,
            "link4.m": -0.316,
            "link5.m": -0.316,
            "link6.m": -0.316,
            "link7.m": -0.316,
        },
        -3.1043,
    ),
    ({"link3.mcx": 1, "link4.m": 0.0825, "link5.m": 0.0825, "link6.m": 0.0825, "link7.m": 0.0825}, 0.6842),
    ({"link3.mcy": 1, "link4.mcz": -1}, 0.0282),
    ({"link4.mcx": 1, "link5.m": -0.0825, "link6.m": -0.0825, "link7.m": -0.0825}, -0.4901),
    ({"link4.mcy": 1, "link5.m": 0.384, "link5.mcz": 1, "link6.m": 0.384, "link7.m": 0.384}, 1.7207),
    ({"link5.mcx": 1}, -0.0147),
    ({"link5.mcy": 1, "link6.mcz": -1}, 0.0824),
    ({"link6.mcx": 1, "link7.m": 0.088}, 0.1650),
    ({"link6.mcy": 1, "link7.mcz": -1, "link7.m": -0.107}, -0.0688),
    ({"link7.mcx": 1}, 0.0077),
    ({"link7.mcy": 1}, -0.0031),
    ({"link6.Iyy": 1, "link5.Izz": 1, "link7.m": 0.088**2}, 0.0276),
    ({"link6.Iyz": 1}, -0.0001),
]


def test_panda_parameters_reproduce_gaz_table_iii():
    model = kj.models.panda()
    pi = dict(zip(ki.parameter_names(model), np.asarray(ki.standard_parameters(model))))
    got = [sum(c * pi[name] for name, c in row.items()) for row, _ in _TABLE_III]
    np.testing.assert_allclose(got, [value for _, value in _TABLE_III], rtol=0, atol=5e-5 + 1e-12)
