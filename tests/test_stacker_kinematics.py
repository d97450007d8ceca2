"""The stacker of Tuan et al. 2019 (section 5.1): J_T3, H_T3, J_R3, H_R3 against the printed
equations (102)-(105), with the misprints of shared/reference/README.md corrected (T2, T3),
and against the independently derived reference values in tests/data/stacker.json."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy import cos, sin

import kronjax as kj

DATA = json.loads((Path(__file__).parent / "data" / "stacker.json").read_text())
P = DATA["parameters"]
A3, L3 = P["a3"], P["l3"]

RNG = np.random.default_rng(20191206)
CONFIGS = [np.zeros(3)] + [np.array(c["q"]) for c in DATA["configurations"]]
CONFIGS += list(RNG.uniform(-np.pi, np.pi, (10, 3)) * np.array([0.5, 1, 1]))


def printed_jt3(q):  # (102)
    _, q2, q3 = q
    return np.array(
        [
            [0, -A3 * sin(q2) * cos(q3), -A3 * cos(q2) * sin(q3)],
            [0, 0, -A3 * cos(q3)],
            [1, A3 * cos(q2) * cos(q3), -A3 * sin(q2) * sin(q3)],
        ]
    )


def printed_ht3(q):  # (103); T2: entry [1][8] is printed "a3 sin q", meant a3 sin q3
    _, q2, q3 = q
    s2, c2, s3, c3 = sin(q2), cos(q2), sin(q3), cos(q3)
    return np.array(
        [
            [0, 0, 0, 0, -A3 * c2 * c3, A3 * s2 * s3, 0, A3 * s2 * s3, -A3 * c2 * c3],
            [0, 0, 0, 0, 0, 0, 0, 0, A3 * s3],
            [0, 0, 0, 0, -A3 * s2 * c3, -A3 * c2 * s3, 0, -A3 * c2 * s3, -A3 * s2 * c3],
        ]
    )


def printed_jr3(q):  # (104)
    _, q2, _ = q
    return np.array([[0, 0, sin(q2)], [0, -1, 0], [0, 0, -cos(q2)]])


def printed_hr3(q, corrected=True):  # (105); T3: entry [2][7] is printed -sin q2, correct +sin q2
    _, q2, _ = q
    h = np.zeros((3, 9))
    h[0, 7] = cos(q2)
    h[2, 7] = sin(q2) if corrected else -sin(q2)
    return h


@pytest.fixture(scope="module")
def model():
    return kj.models.stacker()


@pytest.fixture(scope="module")
def tip(model):
    """Everything about frame 3 (body index 2, the boom tip), jit-compiled once."""

    @jax.jit
    def f(q):
        return (
            kj.translational_jacobian(model, q, 2),
            kj.translational_hessian(model, q, 2),
            kj.rotational_jacobian(model, q, 2),
            kj.rotational_hessian(model, q, 2),
            kj.translational_jacobian(model, q, "boom", point="com"),
            kj.translational_hessian(model, q, "boom", point="com"),
        )

    return f


def test_at_least_ten_configurations():
    assert len(CONFIGS) >= 10


@pytest.mark.parametrize("q", CONFIGS, ids=lambda q: np.array2string(q, precision=2))
def test_printed_equations_102_to_105(tip, q):
    jt, ht, jr, hr, _, _ = tip(jnp.asarray(q))
    np.testing.assert_allclose(jt, printed_jt3(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ht, printed_ht3(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(jr, printed_jr3(q), rtol=0, atol=1e-12)
    # (105) is printed in jacobian-of-jacobian form, so it is compared entry by entry, not only
    # in its symmetric part.
    np.testing.assert_allclose(hr, printed_hr3(q), rtol=0, atol=1e-12)


def test_misprint_t3_is_a_real_sign_error(tip):
    """The printed -sin q2 of (105) contradicts the acceleration of frame 3 even in the
    symmetric part (not a Hessian-non-uniqueness effect)."""
    q = np.array([0.3, 0.9, -0.4])
    hr = np.asarray(tip(jnp.asarray(q))[3])
    printed = printed_hr3(q, corrected=False)
    assert np.max(np.abs(kj.symmetrize(hr) - kj.symmetrize(printed))) > 0.1


@pytest.mark.parametrize("config", DATA["configurations"], ids=lambda c: c["name"])
def test_reference_values(tip, config):
    jt, ht, jr, hr, jtg, htg = tip(jnp.asarray(config["q"]))
    ref = config["kinematics"]
    for got, key in [(jt, "J_T3"), (ht, "H_T3"), (jr, "J_R3"), (hr, "H_R3"), (jtg, "J_TG3"), (htg, "H_TG3")]:
        np.testing.assert_allclose(got, np.array(ref[key]), rtol=0, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(kj.symmetrize(hr), np.array(ref["H_R3_sym"]), rtol=0, atol=1e-12)


def test_boom_tip_position_closed_form(model):
    """Origin of frame 3 = [a3 c2 c3, -d2 - a3 s3, q1 + a3 s2 c3] (reference T03)."""
    for q in CONFIGS:
        q1, q2, q3 = q
        expected = [A3 * cos(q2) * cos(q3), -P["d2"] - A3 * sin(q3), q1 + A3 * sin(q2) * cos(q3)]
        np.testing.assert_allclose(kj.forward_kinematics(model, q).origins[2], expected, atol=1e-12)


def test_com_of_boom_is_l3_from_joint3(model):
    """T1: with the corrected p_G3 = [l3 - a3, 0, 0], G3 lies l3 from the joint-3 axis."""
    q = jnp.asarray(CONFIGS[3])
    r, p = kj.forward_kinematics(model, q)
    g3 = p[2] + r[2] @ model.inertials.com[2]
    np.testing.assert_allclose(jnp.linalg.norm(g3 - p[1]), L3, atol=1e-12)
