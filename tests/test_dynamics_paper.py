"""Dynamics against the papers' closed forms and the independently derived reference data.

* Stacker (Tuan et al. 2019, sec. 5): M (106) and C* (107) as printed, with misprints T4 and T5
  of shared/reference/README.md corrected, and the reference states of tests/data/stacker.json.
* Elbow manipulator (Truc et al. 2019, sec. 5): M (64)-(65), C (67), P (68), g (69) and
  Mdot - 2C (70, misprint R1 corrected) as printed; the sympy closed forms and reference states of
  tests/data/truc_elbow.json; the feed-forward torques along the trajectory (73) at 21 instants.
* Double pendulum (Huang et al., Fig. 8): M, C, g of tests/data/huang_double_pendulum.json.

The printed equations are written out below as Python functions (numpy), independent of kronjax.
Tolerance: 1e-12 relative to the size of each array (float64).
"""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from checks import EXACT_TOL, assert_close
from numpy import cos, pi, sin
from oracles import jit_once

import kronjax as kj
from kronjax import dynamics as dy

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = Path(__file__).parent / "data"
STACKER = json.loads((DATA / "stacker.json").read_text())
ELBOW = json.loads((DATA / "truc_elbow.json").read_text())
PENDULUM = json.loads((DATA / "huang_double_pendulum.json").read_text())
TOL = EXACT_TOL


def assert_close_relative(actual, expected, what="", tol=TOL):
    """The papers' closed forms: relative to the magnitude above one."""
    return assert_close(actual, expected, what, tol, relative=True)


def _all(model, q, qd, qdd):
    """Every dynamics quantity at one state (jit-compiled once per model structure, vmapped)."""
    return dict(
        M=dy.mass_matrix(model, q),
        dM_dq=dy.mass_matrix_derivative(model, q),
        C_star=dy.coriolis_star(model, q),
        C_truc=dy.coriolis_matrix(model, q, qd, form="truc"),
        C_tuan=dy.coriolis_matrix(model, q, qd, form="tuan"),
        C_kane=dy.coriolis_matrix(model, q, qd, form="kane"),
        g=dy.gravity(model, q),
        P=dy.potential_energy(model, q),
        Mdot=jax.jvp(lambda q: dy.mass_matrix(model, q), (q,), (qd,))[1],
        tau_kron=dy.inverse_dynamics(model, q, qd, qdd, method="kron"),
        tau_rnea=dy.inverse_dynamics(model, q, qd, qdd, method="rnea"),
        tau_euler_lagrange=dy.inverse_dynamics(model, q, qd, qdd, method="euler_lagrange"),
    )


_ALL = jit_once(jax.vmap(_all, in_axes=(None, 0, 0, 0)))


BATCH = 24  # every batch is padded to this size: one compilation per model structure


def evaluate(model, q, qd=None, qdd=None):
    """``_ALL`` on a batch of states (at most ``BATCH``), as numpy arrays."""
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.zeros_like(q) if qd is None else np.atleast_2d(np.asarray(qd, float))
    qdd = np.zeros_like(q) if qdd is None else np.atleast_2d(np.asarray(qdd, float))
    count = q.shape[0]
    assert count <= BATCH
    pad = [(0, BATCH - count), (0, 0)]
    args = [jnp.asarray(np.pad(x, pad)) for x in (q, qd, qdd)]
    return {k: np.asarray(v)[:count] for k, v in _ALL(model, *args).items()}


def states(n, count, seed, scale=np.pi):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-scale, scale, (count, n)) for _ in range(3)]


def skew_part(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


# --------------------------------------------------------------------------------------------
# Stacker: Tuan et al. 2019, (106)-(107)
# --------------------------------------------------------------------------------------------

SP = STACKER["parameters"]


def stacker_M_106(q, p=SP, corrected=True):
    """Tuan (106). T4: M[1][1] is printed ``I2y + (m3 l3^2 + I_y) c3^2 + I_x s3^2`` (body index 3
    lost); T5: M[2][2] is printed ``m3 l3^2 I3z`` ("+" lost). ``corrected=False`` reads T5 literally."""
    _, q2, q3 = q
    m1, m2, m3, l3 = p["m1"], p["m2"], p["m3"], p["l3"]
    s2, c2, s3, c3 = sin(q2), cos(q2), sin(q3), cos(q3)
    m22 = p["I2y"] + (m3 * l3**2 + p["I3y"]) * c3**2 + p["I3x"] * s3**2
    m33 = m3 * l3**2 + p["I3z"] if corrected else m3 * l3**2 * p["I3z"]
    return np.array(
        [
            [m1 + m2 + m3, m3 * l3 * c2 * c3, -m3 * l3 * s2 * s3],
            [m3 * l3 * c2 * c3, m22, 0.0],
            [-m3 * l3 * s2 * s3, 0.0, m33],
        ]
    )


def stacker_Cstar_107(q, p=SP):
    """Tuan (107), as printed (no misprint)."""
    _, q2, q3 = q
    m3, l3 = p["m3"], p["l3"]
    s2, c2, s3, c3 = sin(q2), cos(q2), sin(q3), cos(q3)
    a = m3 * l3 * s2 * c3
    b = m3 * l3 * c2 * s3
    k = (m3 * l3**2 + p["I3y"] - p["I3x"]) * s3 * c3
    return np.array(
        [
            [0, 0, 0, 0, -a, -b, 0, -b, -a],
            [0, -a / 2, -b / 2, a / 2, 0, -2 * k, b / 2, 0, 0],
            [0, -b / 2, -a / 2, b / 2, k, 0, a / 2, 0, 0],
        ]
    )


def stacker_g(q, p=SP):
    """The reference data's g for gravity [0, +g0, 0] (the paper gives none; README sec. 3)."""
    return np.array([0.0, 0.0, p["g0"] * p["l3"] * p["m3"] * cos(q[2])])


@pytest.fixture(scope="module")
def stacker():
    return kj.models.stacker()


def test_stacker_printed_M_and_Cstar(stacker):
    """(106) with T4, T5 corrected and (107) at 12 configurations (q = 0 and 11 random)."""
    q, qd, qdd = states(3, 12, seed=106)
    q[0] = 0.0
    out = evaluate(stacker, q, qd, qdd)
    for k in range(len(q)):
        assert_close_relative(out["M"][k], stacker_M_106(q[k]), f"M (106) at {q[k]}")
        assert_close_relative(out["C_star"][k], stacker_Cstar_107(q[k]), f"C* (107) at {q[k]}")
        assert_close_relative(out["g"][k], stacker_g(q[k]), f"g at {q[k]}")
        # every form of the equations of motion gives the same torques (Tuan 96, 100)
        tau = stacker_M_106(q[k]) @ qdd[k] + stacker_Cstar_107(q[k]) @ np.kron(qd[k], qd[k]) + stacker_g(q[k])
        for method in ("kron", "rnea", "euler_lagrange"):
            assert_close_relative(out[f"tau_{method}"][k], tau, f"tau ({method}) at {q[k]}")


def test_stacker_misprint_T5_matters(stacker):
    """The literal (106) M[2][2] = m3 l3^2 I3z is not the mass matrix: the correction is needed."""
    q = np.array([0.3, -0.7, 1.1])
    m = evaluate(stacker, q)["M"][0]
    assert abs(m[2, 2] - stacker_M_106(q, corrected=False)[2, 2]) > 0.1


@pytest.mark.parametrize("index", range(len(STACKER["configurations"])))
def test_stacker_reference_states(stacker, index):
    c = STACKER["configurations"][index]
    out = evaluate(stacker, c["q"], c["qd"], c["qdd"])
    for key in ("M", "dM_dq", "C_star", "C_truc", "C_tuan", "g", "Mdot"):
        assert_close_relative(out[key][0], c[key], f"{c['name']}: {key}")
    for method in ("kron", "rnea", "euler_lagrange"):
        assert_close_relative(out[f"tau_{method}"][0], c["tau"], f"{c['name']}: tau ({method})")
    assert_close_relative(out["C_kane"][0] @ np.asarray(c["qd"]), c["C_truc_qd"], f"{c['name']}: C_kane qd")


# --------------------------------------------------------------------------------------------
# Elbow manipulator: Truc et al. 2019, (64)-(70), (71), (73)
# --------------------------------------------------------------------------------------------

EP = ELBOW["parameters"]  # eq. (71), g = 9.807


def elbow_M_64_65(q, p=EP):
    """Truc (64)-(65)."""
    _, q2, q3 = q
    s2, c2, c3 = sin(q2), cos(q2), cos(q3)
    s23, c23 = sin(q2 + q3), cos(q2 + q3)
    l1, r1, r2, m2, m3 = p["l1"], p["r1"], p["r2"], p["m2"], p["m3"]
    m11 = (
        p["I3yy"] * c23**2
        + p["I3xx"] * s23**2
        + p["I2xx"] * s2**2
        + p["I1yy"]
        + (m2 * r1**2 + p["I2yy"]) * c2**2
        + m3 * (r2 * c23 + l1 * c2) ** 2
    )
    m22 = 2 * l1 * m3 * r2 * c3 + (l1**2 + r2**2) * m3 + m2 * r1**2 + p["I3zz"] + p["I2zz"]
    m33 = m3 * r2**2 + p["I3zz"]
    m23 = l1 * m3 * r2 * c3 + m3 * r2**2 + p["I3zz"]
    return np.array([[m11, 0, 0], [0, m22, m23], [0, m23, m33]])


def _elbow_coefficients(p):
    a = p["m3"] * p["r2"] ** 2 + p["I3yy"] - p["I3xx"]
    b = p["l1"] ** 2 * p["m3"] + p["m2"] * p["r1"] ** 2 - p["I2xx"] + p["I2yy"]
    k = p["l1"] * p["m3"] * p["r2"]
    return a, b, k


def elbow_C_67(q, qd, p=EP):
    """Truc (67), the Coriolis/centrifugal matrix (52) of the elbow."""
    _, q2, q3 = q
    dq1, dq2, dq3 = qd
    s2, c2, s3 = sin(q2), cos(q2), sin(q3)
    s23, c23 = sin(q2 + q3), cos(q2 + q3)
    a, b, k = _elbow_coefficients(p)
    c11 = -(a * (dq2 + dq3) * s23 + k * (2 * dq2 + dq3) * s2) * c23 - b * c2 * s2 * dq2 - k * s3 * (dq2 + dq3)
    c12 = -((a * s23 + 2 * k * s2) * c23 + b * c2 * s2 + k * s3) * dq1
    c13 = -((a * s23 + k * s2) * c23 + k * s3) * dq1
    c21 = ((a * s23 + 2 * k * s2) * c23 + b * c2 * s2 + k * s3) * dq1
    c31 = ((a * s23 + k * s2) * c23 + k * s3) * dq1
    return np.array(
        [
            [c11, c12, c13],
            [c21, -k * s3 * dq3, -k * s3 * (dq2 + dq3)],
            [c31, k * s3 * dq2, 0.0],
        ]
    )


def elbow_P_68(q, p=EP):
    """Truc (68)."""
    _, q2, q3 = q
    return p["g"] * (
        p["l0"] * p["m2"]
        + p["l0"] * p["m3"]
        + p["m1"] * p["r0"]
        - (p["l1"] * p["m3"] + p["m2"] * p["r1"]) * sin(q2)
        - p["m3"] * p["r2"] * sin(q2 + q3)
    )


def elbow_g_69(q, p=EP):
    """Truc (69)."""
    _, q2, q3 = q
    c23 = cos(q2 + q3)
    g, m3, r2 = p["g"], p["m3"], p["r2"]
    return np.array([0.0, -(p["l1"] * m3 + p["m2"] * p["r1"]) * g * cos(q2) - m3 * r2 * g * c23, -m3 * r2 * g * c23])


def elbow_Mdot_minus_2C_70(q, qd, p=EP, corrected=True):
    """Truc (70). R1: the bracket is printed ``(m3 r2^2 + I3yy - I3zz)``; (67) and the derivation
    have ``I3xx``. ``corrected=False`` reads it literally."""
    _, q2, q3 = q
    dq1, dq2, dq3 = qd
    s2, c2, s3 = sin(q2), cos(q2), sin(q3)
    s23, c23 = sin(q2 + q3), cos(q2 + q3)
    _, b, k = _elbow_coefficients(p)
    a = p["m3"] * p["r2"] ** 2 + p["I3yy"] - (p["I3xx"] if corrected else p["I3zz"])
    e12 = 2 * ((a * s23 + 2 * k * s2) * c23 + b * c2 * s2 + k * s3) * dq1
    e13 = 2 * ((a * s23 + k * s2) * c23 + k * s3) * dq1
    e23 = k * s3 * (2 * dq2 + dq3)
    return np.array([[0, e12, e13], [-e12, 0, e23], [-e13, -e23, 0]])


def closed_form(data, key, q, qd, params):
    """Evaluate a sympy closed-form string array of the reference data with numpy."""
    env = {"sin": np.sin, "cos": np.cos, "pi": np.pi, **params}
    for i, (a, b) in enumerate(zip(q, qd)):
        env[f"q{i + 1}"], env[f"dq{i + 1}"] = a, b
    return np.array([[float(eval(cell, {"__builtins__": {}}, env)) for cell in row] for row in data["closed_form"][key]])


@pytest.fixture(scope="module")
def elbow():
    return kj.models.truc_elbow()


@pytest.fixture(scope="module")
def elbow_states(elbow):
    q, qd, qdd = states(3, 12, seed=71)
    q[0] = 0.0
    return q, qd, qdd, evaluate(elbow, q, qd, qdd)


def test_elbow_printed_equations(elbow_states):
    """M (64)-(65), C (67), P (68), g (69), Mdot - 2C (70, R1 corrected) at 12 configurations."""
    q, qd, qdd, out = elbow_states
    for k in range(len(q)):
        where = f"at q = {q[k]}, qd = {qd[k]}"
        assert_close_relative(out["M"][k], elbow_M_64_65(q[k]), f"M (64)-(65) {where}")
        assert_close_relative(out["C_truc"][k], elbow_C_67(q[k], qd[k]), f"C (67) {where}")
        assert_close_relative(out["P"][k], elbow_P_68(q[k]), f"P (68) {where}")
        assert_close_relative(out["g"][k], elbow_g_69(q[k]), f"g (69) {where}")
        assert_close_relative(out["Mdot"][k] - 2 * out["C_truc"][k], elbow_Mdot_minus_2C_70(q[k], qd[k]), f"(70) {where}")
        tau = elbow_M_64_65(q[k]) @ qdd[k] + elbow_C_67(q[k], qd[k]) @ qd[k] + elbow_g_69(q[k])  # (29)
        for method in ("kron", "rnea", "euler_lagrange"):
            assert_close_relative(out[f"tau_{method}"][k], tau, f"tau ({method}) {where}")


def test_elbow_misprint_R1(elbow_states):
    """The literal (70) differs from Mdot - 2C by (I3zz - I3xx) sin(2 q2 + 2 q3) qd1."""
    q, qd, _, out = elbow_states
    k = 3
    literal = elbow_Mdot_minus_2C_70(q[k], qd[k], corrected=False)
    difference = (literal - (out["Mdot"][k] - 2 * out["C_truc"][k]))[0, 1]
    expected = 2 * (EP["I3xx"] - EP["I3zz"]) * sin(q[k][1] + q[k][2]) * cos(q[k][1] + q[k][2]) * qd[k][0]
    assert abs(expected) > 1e-3
    assert difference == pytest.approx(expected, rel=1e-10)


def test_elbow_sympy_closed_forms(elbow_states):
    """The reference data's sympy expressions (tests/data/truc_elbow.json, closed_form)."""
    q, qd, _, out = elbow_states
    for k in range(len(q)):
        for key in ("M", "dM_dq", "C_star", "C_truc", "C_tuan"):
            assert_close_relative(out[key][k], closed_form(ELBOW, key, q[k], qd[k], EP), f"{key} at {q[k]}")
        assert_close_relative(out["g"][k], closed_form(ELBOW, "g", q[k], qd[k], EP)[:, 0], f"g at {q[k]}")


@pytest.mark.parametrize("index", range(len(ELBOW["configurations"])))
def test_elbow_reference_states(elbow, index):
    c = ELBOW["configurations"][index]
    out = evaluate(elbow, c["q"], c["qd"], c["qdd"])
    for key in ("M", "dM_dq", "C_star", "C_truc", "C_tuan", "g", "Mdot"):
        assert_close_relative(out[key][0], c[key], f"{c['name']}: {key}")
    for method in ("kron", "rnea", "euler_lagrange"):
        assert_close_relative(out[f"tau_{method}"][0], c["tau"], f"{c['name']}: tau ({method})")


def test_elbow_skew_symmetry(elbow_states):
    """Mdot - 2C is skew-symmetric for the "truc" (52) and "kane" (Parsa 36) forms, and not for
    Tuan's (97); all three give the same C qd = C* (qd kron qd)."""
    q, qd, _, out = elbow_states
    mdot = out["Mdot"]
    for form in ("truc", "kane"):
        sym = skew_part(mdot - 2 * out[f"C_{form}"])
        assert np.max(np.abs(sym)) < 1e-13, form
    sym_tuan = np.max(np.abs(skew_part(mdot - 2 * out["C_tuan"])), axis=(1, 2))
    assert np.max(sym_tuan) > 0.05  # README: 0.40 in the reference states
    assert np.sum(sym_tuan > 1e-3) >= len(q) - 2  # generic states (q = 0 has qd1 terms only)
    cstar_qq = np.einsum("bij,bj->bi", out["C_star"], np.stack([np.kron(a, a) for a in qd]))
    for form in ("truc", "tuan", "kane"):
        assert_close_relative(np.einsum("bij,bj->bi", out[f"C_{form}"], qd), cstar_qq, f"C qd ({form})")


def trajectory_73(t):
    """Truc (73): q_r = [1, 0.75, 0.5](1 - cos 2 pi t) and its derivatives."""
    amp = np.array([1.0, 0.75, 0.5])
    w = 2 * pi
    return amp * (1 - cos(w * t)), amp * w * sin(w * t), amp * w**2 * cos(w * t)


def test_elbow_feedforward_trajectory(elbow):
    """Feed-forward torques (72) along the trajectory (73) at t = 0, 0.05, ..., 1.0."""
    ref = ELBOW["trajectory"]
    assert len(ref) == 21
    t = np.array([r["t"] for r in ref])
    np.testing.assert_allclose(t, np.linspace(0, 1, 21), atol=1e-15)
    q, qd, qdd = trajectory_73(t[:, None])
    for key, value in (("q", q), ("qd", qd), ("qdd", qdd)):
        assert_close_relative(value, [r[key] for r in ref], key)
    out = evaluate(elbow, q, qd, qdd)
    tau = np.array([r["tau"] for r in ref])
    for method in ("kron", "rnea", "euler_lagrange"):
        assert_close_relative(out[f"tau_{method}"], tau, f"tau ({method})")
    for form in ("truc", "tuan", "kane"):
        via_c = np.einsum("bij,bj->bi", out["M"], qdd) + np.einsum("bij,bj->bi", out[f"C_{form}"], qd) + out["g"]
        assert_close_relative(via_c, tau, f"M qdd + C qd + g ({form})")
    assert_close_relative(tau[0], [8.872452, 0.568026, 0.967374], "tau(0)", tol=1e-6)
    assert_close_relative(tau[10], [-2.619668, -5.319197, -0.887145], "tau(0.5)", tol=1e-6)


def test_elbow_keyword_parameters():
    """Every keyword of truc_elbow() is the paper's symbol (gravity the vector ``[0, 0, -g]``):
    perturbed parameters give the printed (64)-(69) with the same values."""
    rng = np.random.default_rng(1)
    params = {k: v * rng.uniform(0.7, 1.3) for k, v in EP.items()}
    lengths_and_inertias = {k: v for k, v in params.items() if k != "g"}
    model = kj.models.truc_elbow(**lengths_and_inertias, gravity=(0.0, 0.0, -params["g"]))
    q, qd, qdd = states(3, 4, seed=2)
    out = evaluate(model, q, qd, qdd)
    for k in range(len(q)):
        assert_close_relative(out["M"][k], elbow_M_64_65(q[k], params), "M")
        assert_close_relative(out["C_truc"][k], elbow_C_67(q[k], qd[k], params), "C")
        assert_close_relative(out["P"][k], elbow_P_68(q[k], params), "P")
        assert_close_relative(out["g"][k], elbow_g_69(q[k], params), "g")
    np.testing.assert_allclose(np.asarray(model.gravity), [0, 0, -params["g"]])


# --------------------------------------------------------------------------------------------
# Double pendulum: Huang et al., Fig. 8
# --------------------------------------------------------------------------------------------

PP = PENDULUM["parameters"]


def pendulum_M_C_g(q, qd, p=PP):
    """Joint-space M, C (Christoffel form) and g of the reference README (sec. 3)."""
    m, l, lc, izz, g0 = p["m"], p["L"], p["Lc"], p["Izz"], p["g0"]
    c1, c2, s2, c12 = cos(q[0]), cos(q[1]), sin(q[1]), cos(q[0] + q[1])
    mm = np.array(
        [
            [2 * izz + m * (l**2 + 2 * lc**2 + 2 * l * lc * c2), izz + m * (lc**2 + l * lc * c2)],
            [izz + m * (lc**2 + l * lc * c2), izz + m * lc**2],
        ]
    )
    h = m * l * lc * s2
    cc = np.array([[-h * qd[1], -h * (qd[0] + qd[1])], [h * qd[0], 0.0]])
    gg = np.array([g0 * m * (l * c1 + lc * c1 + lc * c12), g0 * m * lc * c12])
    return mm, cc, gg


def test_pendulum_closed_forms():
    model = kj.models.double_pendulum()
    q, qd, qdd = states(2, 12, seed=8)
    out = evaluate(model, q, qd, qdd)
    for k in range(len(q)):
        mm, cc, gg = pendulum_M_C_g(q[k], qd[k])
        assert_close_relative(out["M"][k], mm, "M")
        assert_close_relative(out["C_truc"][k], cc, "C")
        assert_close_relative(out["g"][k], gg, "g")
        for key in ("dM_dq", "C_star", "C_tuan"):
            assert_close_relative(out[key][k], closed_form(PENDULUM, key, q[k], qd[k], PP), key)
        for method in ("kron", "rnea", "euler_lagrange"):
            assert_close_relative(out[f"tau_{method}"][k], mm @ qdd[k] + cc @ qd[k] + gg, f"tau ({method})")


@pytest.mark.parametrize("index", range(len(PENDULUM["configurations"])))
def test_pendulum_reference_states(index):
    model = kj.models.double_pendulum()
    c = PENDULUM["configurations"][index]
    out = evaluate(model, c["q"], c["qd"], c["qdd"])
    for key in ("M", "dM_dq", "C_star", "C_truc", "C_tuan", "g", "Mdot"):
        assert_close_relative(out[key][0], c[key], f"{c['name']}: {key}")
    for method in ("kron", "rnea", "euler_lagrange"):
        assert_close_relative(out[f"tau_{method}"][0], c["tau"], f"{c['name']}: tau ({method})")


def test_pendulum_parameters_and_inertias():
    """Keyword parameters (m, L, Lc, Izz, gravity along -y) enter as in Fig. 8; out-of-plane
    inertias are a slender rod's (symmetric PSD, no effect on the planar dynamics)."""
    p = dict(m=3.0, L=0.9, Lc=0.3, Izz=0.2, g0=9.7)
    model = kj.models.double_pendulum(m=p["m"], L=p["L"], Lc=p["Lc"], Izz=p["Izz"], gravity=(0.0, -p["g0"], 0.0))
    q, qd, _ = states(2, 3, seed=9)
    out = evaluate(model, q, qd)
    for k in range(len(q)):
        mm, cc, gg = pendulum_M_C_g(q[k], qd[k], p)
        assert_close_relative(out["M"][k], mm, "M")
        assert_close_relative(out["C_truc"][k], cc, "C")
        assert_close_relative(out["g"][k], gg, "g")
    inertia = np.asarray(model.inertials.inertia)
    np.testing.assert_allclose(inertia, np.swapaxes(inertia, 1, 2))
    assert np.all(np.linalg.eigvalsh(inertia) >= 0)
    np.testing.assert_allclose(inertia[:, 2, 2], p["Izz"])
    np.testing.assert_allclose(np.asarray(model.gravity), [0, -p["g0"], 0])
    assert np.all(np.asarray(model.inertials.mass) > 0)
