"""Pinocchio's C++ second-order derivatives of inverse dynamics (bench/_pinocchio_cpp.py, the peer of
issue 41) against central differences of its Python bindings' first-order ones, on the Panda
(fixed base) and the Unitree G1 (free-flyer root), 2 random states each: the index order of the
four tensors as bench/_pinocchio_cpp.py documents it (dtau_dqdv: configuration index second,
velocity index third), and the free-flyer's non-symmetric d2tau_dqdq (the se(3) bracket of the
chart q ⊕ d = q exp6(d)); then kronjax's ``inverse_dynamics_second_derivatives`` against them to
1e-10. The extended tier (not in CI: compiling the program takes minutes; tests/test_second_order.py
checks kronjax's tensors in CI against differences of Pinocchio's Python bindings).

Skipped without pin, example-robot-data, a C++ compiler, or the header-only wheels cmeel-eigen
and cmeel-urdfdom-headers (bench/_pinocchio_cpp.py). The first run compiles the program (about
4 minutes on 2 cores), cached in ~/.cache/kronjax/pinocchio_cpp for the next."""

import sys
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _pinocchio_cpp as cpp  # noqa: E402
from bench.legged import robot_file  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.extended]

ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", False),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
}
N_STATES = 2
H = 1e-5
RTOL = 1e-7  # of each tensor's largest entry; seen: below 5e-10 (finite differences), 1e-14 (kronjax)


@pytest.fixture(scope="module")
def program():
    try:
        return cpp.build()
    except cpp.Unavailable as error:
        pytest.skip(str(error))


def first_order_differences(model, q, v, a):
    """Central differences of computeRNEADerivatives (and crba) along q ⊕ h e_l and v + h e_l:
    ``(d dtau_dq / dq_l, d dtau_dv / dv_l, d dtau_dq / dv_l, d dtau_dv / dq_l, d M / dq_l)``,
    each ``[i, j, l]``."""
    data, nv = model.createData(), model.nv

    def first(q, v):
        dq, dv, _ = pin.computeRNEADerivatives(model, data, q, v, a)
        return np.array(dq), np.array(dv)

    def mass(q):
        m = np.array(pin.crba(model, data, q))
        return np.triu(m) + np.triu(m, 1).T

    out = np.zeros((5, nv, nv, nv))
    for l in range(nv):
        e = np.zeros(nv)
        e[l] = H
        qp, qm = pin.integrate(model, q, e), pin.integrate(model, q, -e)
        (dq_p, dv_p), (dq_m, dv_m) = first(qp, v), first(qm, v)
        out[0, :, :, l] = dq_p - dq_m
        out[3, :, :, l] = dv_p - dv_m
        out[4, :, :, l] = mass(qp) - mass(qm)
        (dq_p, dv_p), (dq_m, dv_m) = first(q, v + e), first(q, v - e)
        out[1, :, :, l] = dv_p - dv_m
        out[2, :, :, l] = dq_p - dq_m
    return out / (2 * H)


def assert_close(actual, expected, name, rtol=RTOL):
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(actual - expected).max())
    assert error <= rtol * scale, f"{name}: max error {error:.3e}, scale {scale:.3e}"


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_second_order_tensors_match_finite_differences_of_pinocchio(program, robot):
    relative, free_flyer = ROBOTS[robot]
    try:
        urdf = robot_file(relative)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    model = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if free_flyer else pin.buildModelFromUrdf(str(urdf))
    rng = np.random.default_rng(0)
    pin.seed(0)
    if free_flyer:
        q = np.stack([pin.integrate(model, pin.neutral(model), rng.standard_normal(model.nv)) for _ in range(N_STATES)])
    else:  # the Panda's joint limits are finite
        q = np.stack([pin.randomConfiguration(model) for _ in range(N_STATES)])
    v, a = rng.standard_normal((2, N_STATES, model.nv))

    timings, tensors = cpp.second_order(urdf, free_flyer, q, v, a, N_STATES, min_seconds=0.01)
    assert set(timings) == set(cpp.TIMINGS) and all(t > 0 for t in timings.values())
    assert all(t.shape == (N_STATES, model.nv, model.nv, model.nv) for t in tensors)
    dqdq, dvdv, dqdv, dadq = tensors

    for s in range(N_STATES):
        fd_dqdq, fd_dvdv, fd_dq_by_v, fd_dv_by_q, fd_dadq = first_order_differences(model, q[s], v[s], a[s])
        assert_close(dqdq[s], fd_dqdq, "d2tau_dqdq = d dtau_dq[i, j] / dq_l")
        assert_close(dvdv[s], fd_dvdv, "d2tau_dvdv = d dtau_dv[i, j] / dv_l")
        assert_close(dqdv[s], fd_dq_by_v, "dtau_dqdv = d dtau_dq[i, j] / dv_l")
        assert_close(dqdv[s], fd_dv_by_q.transpose(0, 2, 1), "dtau_dqdv = d dtau_dv[i, l] / dq_j")
        assert_close(dadq[s], fd_dadq, "dtau_dadq = d M[i, j] / dq_l")
        # the header's other reading of dtau_dqdv (v along the columns, q along the pages) is off
        assert np.abs(dqdv[s] - fd_dv_by_q).max() > 1e-3 * np.abs(fd_dv_by_q).max()

        asymmetry = dqdq[s] - dqdq[s].transpose(0, 2, 1)
        if not free_flyer:
            assert np.abs(asymmetry).max() <= RTOL * np.abs(dqdq[s]).max()
            continue
        # free-flyer: D[:, j, l] - D[:, l, j] = dtau_dq[:, :6] @ [e_l, e_j] (se(3) bracket) for
        # j, l < 6, zero in every other block
        data = model.createData()
        dtau_dq = np.array(pin.computeRNEADerivatives(model, data, q[s], v[s], a[s])[0])
        bracket = np.zeros_like(asymmetry)
        for j in range(6):
            for l in range(6):
                e_j, e_l = np.eye(6)[j], np.eye(6)[l]
                bracket[:, j, l] = dtau_dq[:, :6] @ pin.Motion(e_l).cross(pin.Motion(e_j)).vector
        assert np.abs(asymmetry).max() > 1e-3 * np.abs(dqdq[s]).max()  # not symmetric
        assert_close(asymmetry, bracket, "free-flyer asymmetry of d2tau_dqdq")


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_kronjax_tensors_equal_pinocchio_cpp(program, robot):
    """kronjax's four tensors (Khang's layout, its joint order) against Pinocchio's C++ ones on the
    same states (joints matched by name), relative to each tensor's largest entry."""
    import jax

    import kronjax as kj

    relative, free_flyer = ROBOTS[robot]
    try:
        urdf = robot_file(relative)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    ours = kj.load_urdf(urdf, floating_base=free_flyer, mimic="independent")  # as Pinocchio reads <mimic>
    theirs = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if free_flyer else pin.buildModelFromUrdf(str(urdf))
    moving = [name for name, kind in zip(ours.joint_names, ours.kinematics.kinds) if kind != "F"]
    ids = [theirs.getJointId(name) for name in moving]
    q_perm = np.concatenate([np.arange(theirs.idx_qs[j], theirs.idx_qs[j] + theirs.nqs[j]) for j in ids])
    v_perm = np.concatenate([np.arange(theirs.idx_vs[j], theirs.idx_vs[j] + theirs.nvs[j]) for j in ids])
    rng = np.random.default_rng(1)
    pin.seed(1)
    if free_flyer:
        q = np.stack([pin.integrate(theirs, pin.neutral(theirs), rng.standard_normal(theirs.nv)) for _ in range(N_STATES)])
    else:
        q = np.stack([pin.randomConfiguration(theirs) for _ in range(N_STATES)])
    v, a = rng.standard_normal((2, N_STATES, theirs.nv))
    _, tensors = cpp.second_order(urdf, free_flyer, q, v, a, N_STATES, min_seconds=0.01)
    second = jax.jit(jax.vmap(lambda q, v, a: kj.inverse_dynamics_second_derivatives(ours, q, v, a)))(
        q[:, q_perm], v[:, v_perm], a[:, v_perm]
    )
    n = ours.nv
    dqdq, dvdv, dqdv, dadq = tensors  # Pinocchio's order
    for name, mine, reference in zip(second._fields, second, (dqdq, dqdv, dvdv, dadq)):
        for s in range(N_STATES):
            assert_close(np.asarray(mine[s]).reshape(n, n, n), reference[s][np.ix_(v_perm, v_perm, v_perm)], name, 1e-10)
