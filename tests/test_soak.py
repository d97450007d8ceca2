"""The long batched run of tests/soak.py on a tiny configuration: 8 free Panda
rollouts of 2000 steps in 4 chunks, float64 and float32. Checked against first principles and
Pinocchio, never against kronjax itself:

* every state finite, and every rollout took its fixed steps;
* the energy of the free system (no torques, no damping) is conserved to within a bound set by
  the integrator's order and step (below), and the drift scales as ``h^5`` (Tsit5 is 5th order):
  the same rollouts at ``h / 2`` drift about ``2^5`` times less;
* the soak's energies at the start and at the end agree with Pinocchio's
  ``computeKineticEnergy + computePotentialEnergy`` of the same URDF, and Pinocchio's energies of
  the final states give the same drift;
* the resident set and its per-chunk peak do not grow from the 2nd chunk to the last.

The drift bound. Tsit5 has order ``p = 5``: one step of size ``h`` errs by ``c h^(p+1) y^(p+1)``.
On a motion whose fastest rate is ``omega`` (``|y^(k)| ~ omega^k`` in units of the state's scale)
the energy errs by about ``(omega h)^(p+1)`` of the kinetic-energy scale ``T`` per step. Tsit5 is
not symplectic, so these errors need not cancel: after ``N`` steps ``|E - E0| <= c N (omega h)^6 T``
with ``c`` the method's error constant, taken as 1: an envelope (the float64 drift measures 1e-6 to
3e-5 of it; the ``h^5`` scaling is the sharp check), ``2e-4 T`` at most here, which a force
missing from or wrong in the dynamics (an O(1) change of the energy in 2 s) breaks. ``omega``
is the larger of the fastest joint speed seen (rad/s; the light distal links spin up to ~70 rad/s
here) and the fastest small-oscillation frequency under gravity at the start,
``sqrt(max |eig(M^-1 dg/dq)|)``. Rounding adds at most ``eps |E0|`` per step (``eps`` of the
dtype; ``N eps |E0|`` in all), which dominates in float32 (measured 0.5-2.5 % of the bound).
"""

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from soak import main, soak  # noqa: E402  (tests/soak.py)

import kronjax as kj  # noqa: E402

pytestmark = pytest.mark.extended  # `make test-extended` only

ROLLOUTS, STEPS, CHUNK, DT = 8, 2000, 500, 1e-3
ORDER = 5  # Tsit5, kj.simulate.rollout's default solver


def pinocchio_energy(urdf: str, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """``T + P`` of each row of ``(q, qd)`` by Pinocchio (potential zero at the base origin, as kronjax's)."""
    model = pin.buildModelFromXML(urdf)
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    data = model.createData()
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    return np.array(
        [pin.computeKineticEnergy(model, data, a, b) + pin.computePotentialEnergy(model, data, a) for a, b in zip(q, qd)]
    )


def gravity_frequency(model, q0: np.ndarray) -> float:
    """``sqrt(max |eig(M^-1 dg/dq)|)`` over the start states: the fastest linearised swing."""
    parts = jax.jit(jax.vmap(lambda q: (kj.mass_matrix(model, q), jax.jacfwd(lambda q: kj.gravity(model, q))(q))))
    mass, stiffness = (np.asarray(x) for x in parts(jnp.asarray(q0)))
    return float(np.sqrt(np.max(np.abs(np.linalg.eigvals(np.linalg.solve(mass, stiffness))))))


def drift_bound(run, omega_g: float) -> np.ndarray:
    """Per rollout: ``N (omega h)^6 T + N eps |E0|`` (the module's docstring)."""
    steps = run.chunk_steps * len(run.seconds)
    omega = np.maximum(run.speed_max, omega_g)
    eps = np.finfo(run.dtype).eps
    return steps * (omega * run.dt) ** (ORDER + 1) * run.kinetic_max + steps * eps * np.abs(run.energy0)


@pytest.fixture(scope="module")
def soaked(tmp_path_factory):
    out = main(
        [
            "--rollouts",
            str(ROLLOUTS),
            "--steps",
            str(STEPS),
            "--chunk-steps",
            str(CHUNK),
            "--dt",
            str(DT),
            "--out",
            str(tmp_path_factory.mktemp("soak")),
        ]
    )
    return out["results"], out["json"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_soak_finite_conserves_energy_and_keeps_memory_flat(soaked, dtype):
    run = soaked[0][dtype]
    chunks = STEPS // CHUNK
    assert len(run.seconds) == chunks and np.all(run.seconds > 0)
    assert np.isfinite(run.q).all() and np.isfinite(run.qd).all() and not run.nonfinite_by_chunk.any()
    # fixed steps: float32 sums of dt may fall short of a chunk's end by a fraction of dt, one clipped step more
    assert ROLLOUTS * STEPS <= run.steps_taken <= ROLLOUTS * (STEPS + (chunks if dtype == "float32" else 0))
    assert np.abs(run.q - run.q0).max() > 0.1  # the arm moved (falls under gravity)

    model = kj.models.panda(gravity=(0.0, 0.0, -9.81))
    bound = drift_bound(run, gravity_frequency(model, run.q0.astype(float)))
    assert np.all(run.drift <= bound), (run.drift, bound)
    # a drift of zero would mean the energy was not measured
    assert np.all(run.drift > 0)

    # the energies against Pinocchio's (float32: the run's parameters are float32-rounded, ~1e-7)
    urdf = kj.to_urdf(model)
    tol = 1e-10 if dtype == "float64" else 1e-5
    e0, e1 = pinocchio_energy(urdf, run.q0, run.qd0), pinocchio_energy(urdf, run.q, run.qd)
    np.testing.assert_allclose(run.energy0, e0, rtol=tol, atol=tol * np.abs(e0).max())
    np.testing.assert_allclose(run.energy, e1, rtol=tol, atol=tol * np.abs(e0).max())
    if dtype == "float64":  # Pinocchio's drift of the final states is within the same bound
        assert np.all(np.abs(e1 - e0) <= bound)

    # memory: the first chunk allocates the program's buffers; nothing grows after it
    assert run.peak_reset
    assert abs(run.rss_kb[-1] - run.rss_kb[1]) < 8 * 1024, run.rss_kb
    assert run.peak_kb[-1] - run.peak_kb[1] < 8 * 1024, run.peak_kb

    summary = next(s for s in json.loads(soaked[1].read_text())["results"] if s["dtype"] == dtype)
    assert summary["nonfinite_rollouts"] == 0 and summary["steps_per_s_median"] > 0
    assert summary["drift_rel_E0_max"] == pytest.approx(float(np.max(run.drift / np.abs(run.energy0))))


@pytest.mark.slow
def test_soak_drift_scales_with_the_fifth_power_of_the_step(soaked):
    """The float64 drift is truncation (far above rounding, ``N eps ~ 4e-13`` of ``|E0|``): halving
    ``h`` over the same time divides it by about ``2^5`` (``N`` doubles, the per-step error shrinks
    ``2^6``). The energy error at the 4 chunk ends of one rollout is a signed, oscillating quantity
    that may pass near zero, so single rollouts' ratios scatter (5 to 190 seen); their median over
    the rollouts is the order's."""
    coarse = soaked[0]["float64"]
    fine = soak(
        kj.models.panda(gravity=(0.0, 0.0, -9.81)),
        coarse.q0,
        coarse.qd0,
        steps=2 * STEPS,
        chunk_steps=2 * CHUNK,
        dt=DT / 2,
        log=None,
    )
    assert np.isfinite(fine.drift).all() and np.all(fine.drift > 0)
    ratio = np.median(coarse.drift / fine.drift)
    assert 2 ** (ORDER - 1) < ratio < 2 ** (ORDER + 1), (ratio, coarse.drift / fine.drift)
