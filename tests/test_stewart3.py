"""The 3-leg Stewart platform of Huang et al. (Fig. 10) against its tables and first principles.

Oracles:

* Fig. 10 (c)/(d), typed in below from shared/reference/huang_stewart3.json (extraction garbles
  repaired as flagged there; README items H7-H8). When that file is present the transcription is
  checked against it.
* Rigid-body kinematics: the velocity of a point rotating about an axis, ``omega x r``, gives the
  columns of ``Phi_q`` at the assembled configuration from the tabulated joint positions and
  axes alone.
* Energy: ``T + V`` computed here from the body poses and the table's masses and inertias (not
  with kronjax's dynamics); its change must equal the motors' work (ideal joints do no work).
* Huang's step: its acceleration differs from the instantaneous (Lagrange) one by ``O(dt)``.

The table checks run on both platform layouts: the default free joint (``q`` 13 numbers with a
unit quaternion, ``v`` 12) and ``platform="euler"`` (12 coordinates, Z-Y-X Euler angles); the
dynamics (compile-bound) on the default only (``tests/test_constrained_floating.py`` checks that
the two layouts give the same accelerations and leg forces).
"""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax.constrained import Mechanism, solve
from kronjax.models.stewart3 import stewart3

# Fig. 10 (c): mass (kg), principal inertias (Ix, Iy, Iz) (kg m^2), mass centre (m).
TABLE_LINKS = {
    "L1": (5.0, (0.07, 0.7, 0.7), (0.0, 0.45, 0.355)),
    "L2": (5.0, (0.07, 0.7, 0.7), (0.39, -0.225, 0.355)),
    "L3": (5.0, (0.07, 0.7, 0.7), (-0.39, -0.225, 0.355)),
    "L4": (1.0, (0.01, 0.1, 0.1), (0.0, 0.337, -0.013)),
    "L5": (1.0, (0.01, 0.1, 0.1), (0.292, -0.168, -0.013)),
    "L6": (1.0, (0.01, 0.1, 0.1), (-0.292, -0.168, -0.013)),
    "L7": (10.0, (2.5, 5.0, 2.5), (0.0, 0.0, 0.71)),
}
# Fig. 10 (d) as printed: position, axis direction cosines (revolute joints).
TABLE_JOINTS = {
    "J1": ((0.0, 0.61, 0.71), None),
    "J2": ((0.53, -0.31, 0.71), None),
    "J3": ((-0.53, -0.31, 0.71), None),
    "J4": ((0.0, 0.29, 0.0), (1.0, 0.0, 0.0)),
    "J5": ((0.25, -0.14, 0.0), (-0.5, -0.87, 0.0)),
    "J6": ((-0.25, -0.14, 0.0), (-0.5, 0.867, 0.0)),
    "J7": ((0.33, -0.19, -0.03), (0.0, -0.97, 0.26)),
    "J8": ((0.0, 0.39, -0.03), (-0.84, 0.48, 0.26)),
    "J9": ((-0.33, -0.19, -0.03), (0.84, 0.48, 0.26)),
}
SWAPPED = {"J7": (0.0, 0.39, -0.03), "J8": (0.33, -0.19, -0.03)}  # README H8, the probable correction
REFERENCE = Path(__file__).parent / "data" / "huang_stewart3.json"  # a copy of ../shared/reference (tests/data/README.md)
G = 9.81
DT = 0.002


def positions(swap: bool) -> dict[str, np.ndarray]:
    out = {k: np.array(p) for k, (p, _) in TABLE_JOINTS.items()}
    if swap:
        out.update({k: np.array(p) for k, p in SWAPPED.items()})
    return out


def unit(v) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


@pytest.fixture(
    scope="module",
    params=[(True, "free"), (False, "free"), (True, "euler"), (False, "euler")],
    ids=["swapped", "as_printed", "euler-swapped", "euler-as_printed"],
)
def mech(request):
    swap, platform = request.param
    if platform == "free":  # the default
        return swap, platform, stewart3(swap_j7_j8=swap)
    return swap, platform, stewart3(swap_j7_j8=swap, platform=platform)


@pytest.fixture(scope="module")
def default():
    return stewart3()


def test_transcription_matches_reference_file():
    ref = json.loads(REFERENCE.read_text())
    for link in ref["links"]:
        mass, inertia, com = TABLE_LINKS[link["name"]]
        assert mass == link["mass"]
        assert inertia == tuple(link["inertia_principal"][k] for k in ("Ix", "Iy", "Iz"))
        assert com == tuple(link["mass_center"])
    for joint in ref["joints"]:
        pos, direction = TABLE_JOINTS[joint["name"]]
        assert pos == tuple(joint["position"])
        assert direction == (None if joint["direction"] is None else tuple(joint["direction"]))
    fix = ref["probable_correction"]
    assert SWAPPED == {"J7": tuple(fix["J7_position"]), "J8": tuple(fix["J8_position"])}


def test_structure_and_masses(mech):
    _, platform, m = mech
    assert isinstance(m, Mechanism)
    model = m.model
    assert model.nv == 12 and m.constraints.n_equations == 9 and m.mobility == 3
    assert model.joint_names[:6] == ("J7", "J8", "J9", "J4", "J5", "J6")
    masses = dict(zip(model.body_names, np.asarray(model.inertials.mass)))
    for name, (mass, principal, _) in TABLE_LINKS.items():
        assert masses.pop(name) == mass
        eig = np.sort(np.linalg.eigvalsh(np.asarray(model.inertials.inertia[model.body_index(name)])))
        np.testing.assert_allclose(eig, np.sort(principal), atol=1e-14)
    if platform == "free":  # one free joint: a quaternion (x, y, z, w), identity at q0
        assert model.nq == 13 and model.joint_names[6:] == ("platform",) and not masses
        np.testing.assert_array_equal(np.asarray(m.q0), np.r_[np.zeros(12), 1.0])
    else:  # slides and Euler angles: five massless intermediate frames
        assert model.nq == 12 and all(v == 0.0 for v in masses.values()) and len(masses) == 5
        np.testing.assert_array_equal(np.asarray(m.q0), np.zeros(12))


def _world(model, q):
    rot, org = model.poses(jnp.asarray(q))
    return np.asarray(rot), np.asarray(org)


def test_mass_centres_and_principal_axes_at_q0(mech):
    swap, _, m = mech
    model = m.model
    rot, org = _world(model, m.q0)
    pos = positions(swap)
    for name, (_, principal, com) in TABLE_LINKS.items():
        b = model.body_index(name)
        np.testing.assert_allclose(org[b] + rot[b] @ np.asarray(model.inertials.com[b]), com, atol=1e-14, err_msg=name)
        inertia_world = rot[b] @ np.asarray(model.inertials.inertia[b]) @ rot[b].T
        if name == "L7":  # a horizontal plate: the largest moment (Iy = Ix + Iz) about the vertical
            np.testing.assert_allclose(inertia_world, np.diag([2.5, 2.5, 5.0]), atol=1e-14)
            continue
        i = int(name[1])
        # the small moment Ix about the link's own axis: the leg J(i+3) -> J(i), the motor axis for a shaft
        u = unit(pos[f"J{i}"] - pos[f"J{i + 3}"]) if i <= 3 else unit(TABLE_JOINTS[f"J{i + 3}"][1])
        np.testing.assert_allclose(inertia_world @ u, principal[0] * u, atol=1e-14, err_msg=name)


def test_joint_frames_at_table_positions(mech):
    swap, _, m = mech
    model = m.model
    rot, org = _world(model, m.q0)
    pos = positions(swap)
    for joint in ("J4", "J5", "J6", "J7", "J8", "J9"):
        b = model.joint_names.index(joint)
        np.testing.assert_allclose(org[b], pos[joint], atol=1e-14, err_msg=joint)
        axis = rot[b] @ np.asarray(model.kinematics.axes[b])
        np.testing.assert_allclose(axis, unit(TABLE_JOINTS[joint][1]), atol=1e-14, err_msg=joint)
    np.testing.assert_allclose(org[model.body_index("L7")], TABLE_LINKS["L7"][2], atol=1e-14)


def test_constraint_jacobian_is_the_rigid_body_velocities_of_the_table(mech):
    """Column by column at q0: motor i and J(i+3) turn J(i) about their axes (omega x r with
    r from the table), the platform's translations move it with -1, its rotations about a unit
    ``e`` with -(e x (J(i) - platform centre)): Euler yaw, pitch, roll about z, y, x; the free
    joint's body-frame velocities (body axes = world axes at q0) along and about x, y, z."""
    swap, platform, m = mech
    pos = positions(swap)
    a = np.asarray(m.constraints.jacobian(m.q0))
    expected = np.zeros((9, 12))
    centre = np.asarray(TABLE_LINKS["L7"][2])
    for i in (1, 2, 3):
        rows = slice(3 * i - 3, 3 * i)
        top = pos[f"J{i}"]
        expected[rows, i - 1] = np.cross(unit(TABLE_JOINTS[f"J{i + 6}"][1]), top - pos[f"J{i + 6}"])
        expected[rows, i + 2] = np.cross(unit(TABLE_JOINTS[f"J{i + 3}"][1]), top - pos[f"J{i + 3}"])
        expected[rows, 6:9] = -np.eye(3)
        turns = np.eye(3)[::-1] if platform == "euler" else np.eye(3)
        for col, e in zip((9, 10, 11), turns):
            expected[rows, col] = -np.cross(e, top - centre)
    np.testing.assert_allclose(a, expected, atol=1e-13)


def test_q0_is_assembled_with_three_degrees_of_freedom(mech):
    _, _, m = mech
    assert float(np.max(np.abs(np.asarray(m.constraints.residual(m.q0))))) < 1e-15
    s = np.linalg.svd(np.asarray(m.constraints.jacobian(m.q0)), compute_uv=False)
    assert s[-1] > 0.5  # rank 9, far from singular (0.65 swapped, 0.61 as printed)
    assert len(s) - np.sum(s > 1e-9 * s[0]) == 0


def test_bad_inputs():
    with pytest.raises(TypeError, match="swap_j7_j8"):
        stewart3(swap_j7_j8="yes")
    with pytest.raises(TypeError, match="swap_j7_j8"):
        stewart3(swap_j7_j8=1)
    for bad in ((0.0, -9.81), (0.0, 0.0, np.nan), "down", ((0.0,), (1.0,), (2.0,))):
        with pytest.raises(ValueError, match="gravity"):
            stewart3(gravity=bad)
    with pytest.raises(TypeError):
        stewart3(True)  # keyword-only


# ---------------------------------------------------------------------------------------------
# Dynamics of the default (free) platform: a few steps from an admissible moving state under the
# motors and gravity. ``q`` has 13 numbers (the quaternion (x, y, z, w) in q[9:13]), ``v`` 12 (the
# platform's linear and angular velocity in its body frame in v[6:12]).
# ---------------------------------------------------------------------------------------------


def _start(mech):
    """q0 and an admissible velocity v (null space of Phi_q from numpy's SVD), ~1 rad/s at the motors."""
    a = np.asarray(mech.constraints.jacobian(mech.q0))
    basis = np.linalg.svd(a)[2][9:].T
    qd = basis @ np.array([1.0, -0.6, 0.4])
    return mech.q0, jnp.asarray(qd / np.max(np.abs(qd[:3])))


def _tau(n):
    return jnp.zeros(n).at[:3].set(10.0)


@pytest.fixture(scope="module")
def accelerations(default):
    model, cons = default.model, default.constraints
    tau = _tau(model.nv)
    lagrange = jax.jit(lambda q, qd: solve(model, cons, q, qd, tau, "lagrange").vd)
    huang = jax.jit(lambda q, qd, dt: solve(model, cons, q, qd, tau, "huang", dt=dt).vd)
    return lagrange, huang


@jax.jit
def _rate(q, v):
    """``dq/dt`` of the free platform's layout from first principles: the motor and knee angles
    move with ``v[:6]``; the mass centre (world axes) with ``R v[6:9]`` (``v`` in the body frame);
    the quaternion ``(u, w)`` with ``(u, w) ⊗ (omega, 0) / 2 = (w omega + u x omega, -u . omega) / 2``."""
    u, w, omega = q[9:12], q[12], v[9:12]
    skew = jnp.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    rot = (w**2 - u @ u) * jnp.eye(3) + 2 * jnp.outer(u, u) + 2 * w * skew
    return jnp.concatenate([v[:6], rot @ v[6:9], 0.5 * (w * omega + jnp.cross(u, omega)), -0.5 * (u @ omega)[None]])


def _huang_run(model, huang, q, qd, dt, steps):
    """Huang's step ``q ⊕ (v dt + a dt^2 / 2)``, ``v + a dt`` (kronjax.integrate: the exponential
    map of the free joint, as in ``simulate``)."""
    for _ in range(steps):
        qdd = huang(q, qd, dt)
        q, qd = kj.integrate(model, q, qd * dt + 0.5 * dt**2 * qdd), qd + dt * qdd
    return q, qd


def _rk4(f, y, dt, steps):
    ys = [y]
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return jnp.stack(ys)


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_huang_and_lagrange_agree_to_first_order_in_dt(default, accelerations):
    lagrange, huang = accelerations
    q, qd = _start(default)
    exact = lagrange(q, qd)
    # Huang's constant acceleration over [t, t + dt] is the instantaneous one + O(dt) (measured
    # 2.5e-3, 1.25e-3, 6.3e-4 for |qdd| ~ 3)
    err = [float(jnp.max(jnp.abs(huang(q, qd, dt) - exact))) for dt in (DT, DT / 2, DT / 4)]
    assert err[0] < 0.05 * float(jnp.max(jnp.abs(exact)))
    assert 1.6 < err[0] / err[1] < 2.5 and 1.6 < err[1] / err[2] < 2.5, err
    # a few steps (to t = 20 ms): positions agree with an RK4 Lagrange run on (q, v) (the exact flow
    # keeps the quaternion's norm; RK4 to 1e-15 here) to O(dt) (first-order convergence)
    n = default.model.nq
    f = lambda y: jnp.concatenate([_rate(y[:n], y[n:]), lagrange(y[:n], y[n:])])
    reference = _rk4(f, jnp.concatenate([q, qd]), DT / 2, 20)[-1]
    gaps = []
    for dt, steps in ((DT, 10), (DT / 2, 20)):
        q1, _ = _huang_run(default.model, huang, q, qd, dt, steps)
        gaps.append(float(jnp.max(jnp.abs(q1 - reference[:n]))))
        assert float(jnp.max(jnp.abs(default.constraints.residual(q1)))) < 1e-8  # no projection: 7e-10 after 10 steps
    assert gaps[0] < 1e-5, gaps  # q moves ~2e-2 over the 20 ms; measured 2.2e-6 (dt = 2 ms), 1.1e-6 (1 ms)
    assert 1.6 < gaps[0] / gaps[1] < 2.6, gaps


def _energy_oracle(mech):
    """``T + V`` from the body poses and the table: mass centres and inertias are the table's at q0,
    carried rigidly by each body's frame; principal axes as documented (legs: Ix along J(i+3) -> J(i);
    shafts: along the motor axis; platform: diag(2.5, 2.5, 5) in world axes at q0)."""
    model = mech.model
    pos = positions(True)
    rot0, org0 = _world(model, mech.q0)
    bodies = []
    for name, (mass, principal, com) in TABLE_LINKS.items():
        b = model.body_index(name)
        if name == "L7":
            inertia = np.diag([2.5, 2.5, 5.0])
        else:
            i = int(name[1])
            u = unit(pos[f"J{i}"] - pos[f"J{i + 3}"]) if i <= 3 else unit(TABLE_JOINTS[f"J{i + 3}"][1])
            inertia = principal[1] * np.eye(3) + (principal[0] - principal[1]) * np.outer(u, u)
        # in the body frame: constants independent of q
        bodies.append((b, mass, rot0[b].T @ (np.asarray(com) - org0[b]), rot0[b].T @ inertia @ rot0[b]))

    def energy(q, vel):
        (rot, org), (drot, dorg) = jax.jvp(model.poses, (q,), (_rate(q, vel),))
        total = 0.0
        for b, mass, c, inertia in bodies:
            v = dorg[b] + drot[b] @ c
            w_skew = drot[b] @ rot[b].T
            w = jnp.array([w_skew[2, 1], w_skew[0, 2], w_skew[1, 0]])
            inertia_world = rot[b] @ inertia @ rot[b].T
            total += 0.5 * mass * v @ v + 0.5 * w @ inertia_world @ w + mass * G * (org[b] + rot[b] @ c)[2]
        return total

    return jax.jit(jax.vmap(energy))


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_energy_balance_over_a_lagrange_run(default, accelerations):
    """E(t) - E(0) = work of the motors, integrated along the run as an extra RK4 state (so the
    work and the state carry the same O(dt^4) error; no quadrature error of its own).

    Over 0.2 s (100 RK4 steps of 2 ms) the motors put in ~2.9 J. The measured mismatch is
    4.6e-11 J (2.9e-12 J with dt = 1 ms: /16, RK4's fourth order), so it is integration error
    only; the constraint drift without projection is ~3e-12 m, the quaternion's norm 1 to 3e-13.
    The bound 1e-8 J (3e-9 of the change) leaves a factor ~200 for other platforms' round-off,
    while a constraint force that did work, or a mass matrix or bias term off by 1e-8 relative,
    would exceed it."""
    lagrange, _ = accelerations
    q, qd = _start(default)
    n, nv = default.model.nq, default.model.nv
    tau = _tau(nv)

    def f(y):
        q, v = y[:n], y[n : n + nv]
        return jnp.concatenate([_rate(q, v), lagrange(q, v), (tau @ v)[None]])

    ys = _rk4(f, jnp.concatenate([q, qd, jnp.zeros(1)]), DT, 100)
    energy = _energy_oracle(default)(ys[:, :n], ys[:, n : n + nv])
    change = np.asarray(energy - energy[0])
    work = np.asarray(ys[:, -1])
    assert float(np.max(np.abs(np.asarray(jax.vmap(default.constraints.residual)(ys[:, :n]))))) < 1e-9
    np.testing.assert_allclose(np.linalg.norm(np.asarray(ys[:, 9:13]), axis=1), 1.0, atol=1e-10)
    assert abs(work[-1]) > 1.0 and np.max(np.abs(change)) > 1.0  # the test is not vacuous
    np.testing.assert_allclose(change, work, rtol=0, atol=1e-8)
