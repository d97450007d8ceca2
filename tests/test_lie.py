"""Per-joint configuration-space operations (``kronjax._lie``) against Pinocchio 4.1.

Each joint kind is a one-joint ``pin.Model`` (the joint placed at the identity, so ``oMi[1]`` is
the joint's own motion): ``JointModelFreeFlyer``, ``JointModelSpherical``, ``JointModelPlanar``,
``JointModelRevoluteUnaligned`` and ``JointModelPrismaticUnaligned`` (for ``"R"`` / ``"P"``).
States: 20 per kind from a seeded NumPy generator, velocities with rotations up to about 3 rad
plus a 1e-9 rad one; for ``difference`` also ``q1 = q0``, ``q1`` 1e-9 rad from ``q0`` and ``q1``
a rotation of pi - 1e-7 from ``q0``.

Error measure: ``|a - b| / max(|b|, 1)`` (2-norm) <= 1e-10; quaternions compared up to sign
(Pinocchio's own signs are in fact reproduced). Derivatives: the tangent-space Jacobians built
from ``jax.jacfwd`` / ``jax.jacrev`` of integrate/difference compositions vs ``pin.dIntegrate`` /
``pin.dDifference``, at ``v = 0`` and ``q0 = q1`` included (where a naive log is 0/0).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from oracles import jit_once

from kronjax import _lie as L

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

AXIS = np.array([0.36, 0.48, 0.8])
JOINTS = {
    "free": pin.JointModelFreeFlyer,
    "spherical": pin.JointModelSpherical,
    "planar": pin.JointModelPlanar,
    "R": lambda: pin.JointModelRevoluteUnaligned(AXIS),
    "P": lambda: pin.JointModelPrismaticUnaligned(AXIS),
}
KINDS = list(JOINTS)
QUAT = {
    "free": slice(3, 7),
    "spherical": slice(0, 4),
}  # where each kind keeps a quaternion
N = 20


@functools.cache
def model(kind):
    m = pin.Model()
    m.addJoint(0, JOINTS[kind](), pin.SE3.Identity(), "j")
    return m


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1.0)


def align(kind, a, b):
    """``a`` with its quaternion's sign flipped to match ``b``'s (same rotation)."""
    a = np.array(a, float)
    if kind in QUAT and np.dot(a[QUAT[kind]], b[QUAT[kind]]) < 0:
        a[QUAT[kind]] *= -1
    return a


def unit_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_q(kind, rng):
    if kind == "free":
        return np.concatenate([rng.uniform(-2, 2, 3), unit_quat(rng)])
    if kind == "spherical":
        return unit_quat(rng)
    if kind == "planar":
        t = rng.uniform(-np.pi, np.pi)
        return np.array([*rng.uniform(-2, 2, 2), np.cos(t), np.sin(t)])
    return rng.uniform(-3, 3, 1)


def random_v(kind, rng, angle):
    """A velocity whose rotation part has norm ``angle``."""
    nv = L.nv(kind)
    v = rng.uniform(-2, 2, nv)
    rot = {"free": slice(3, 6), "spherical": slice(0, 3), "planar": slice(2, 3)}.get(kind, slice(0, 1))
    w = rng.normal(size=v[rot].size)
    v[rot] = angle * w / np.linalg.norm(w)
    return v


@functools.cache
def states(kind):
    """``(q, v, q1)`` batches: integrate at ``(q, v)``, difference from ``q`` to ``q1``;
    ``q1[2] = q[2] (+) NEAR_PI[kind]`` (a rotation of pi - 1e-7) for the kinds that rotate."""
    rng = np.random.default_rng({"free": 1, "spherical": 2, "planar": 3, "R": 4, "P": 5}[kind])
    m = model(kind)
    angles = [1e-9] + list(rng.uniform(0, 3, N - 1))
    q = np.stack([random_q(kind, rng) for _ in range(N)])
    v = np.stack([random_v(kind, rng, a) for a in angles])
    q1 = np.stack([random_q(kind, rng) for _ in range(N)])
    q1[0] = q[0]
    q1[1] = pin.integrate(m, q[1], random_v(kind, rng, 1e-9))
    if kind in QUAT or kind == "planar":
        NEAR_PI[kind] = random_v(kind, rng, np.pi - 1e-7)
        q1[2] = pin.integrate(m, q[2], NEAR_PI[kind])
    return q, v, q1


NEAR_PI = {}


@functools.cache
def batched(kind):
    """One jitted, vmapped function per kind for all the value comparisons."""

    def f(q, v, q1, qn):
        out = {
            "integrate": L.integrate(kind, q, v),
            "difference": L.difference(kind, q, q1),
            "normalize": L.normalize(kind, qn),
        }
        if kind not in ("R", "P"):
            out["rotation"], out["translation"] = L.motion(kind, q)
        return out

    return jit_once(jax.vmap(f))


@pytest.mark.parametrize("kind", KINDS)
def test_sizes_and_neutral(kind):
    m = model(kind)
    assert (L.nq(kind), L.nv(kind)) == (m.nq, m.nv)
    np.testing.assert_array_equal(L.neutral(kind), pin.neutral(m))
    assert L.neutral(kind, jnp.float32).dtype == jnp.float32


def planar_integrate_series(q, v):
    """Planar ``q (+) v`` for ``|wz| < 1e-6`` from the series of ``sin(w)/w`` and ``(1 - cos
    w)/w`` (dropped terms below 1e-24)."""
    w = v[2]
    a, b = 1 - w * w / 6, w / 2 * (1 - w * w / 12)
    t = np.array([a * v[0] - b * v[1], b * v[0] + a * v[1]])
    c0, s0 = q[2], q[3]
    rot = np.array([[c0, -s0], [s0, c0]])
    return np.concatenate([rot @ t + q[:2], rot @ [np.cos(w), np.sin(w)]])


@pytest.mark.parametrize("kind", KINDS)
def test_against_pinocchio(kind):
    m, d = model(kind), model(kind).createData()
    q, v, q1 = states(kind)
    qn = q * np.random.default_rng(0).uniform(0.5, 2, (N, 1))  # off the unit sphere
    out = jax.tree.map(np.asarray, batched(kind)(q, v, q1, qn))
    for i in range(N):
        ref = pin.integrate(m, q[i], v[i])
        if kind == "planar" and abs(v[i, 2]) < 1e-6:
            # Pinocchio's SE(2) exp divides 1 - cos(w) computed directly by w: it loses eps / |w|
            # (2e-7 at w = 1e-9); the series is exact there
            assert rel(out["integrate"][i], ref) <= 1e-15 / abs(v[i, 2]), (
                "integrate",
                i,
            )
            ref = planar_integrate_series(q[i], v[i])
        assert rel(align(kind, out["integrate"][i], ref), ref) <= 1e-10, (
            "integrate",
            i,
        )
        if kind in QUAT:  # the same sign as Pinocchio, not just the same rotation
            assert rel(out["integrate"][i], ref) <= 1e-10, ("integrate sign", i)
        ref = pin.difference(m, q[i], q1[i])
        if kind == "planar" and i == 2:
            # Pinocchio's SO(2) log takes acos of the trace, which loses eps / sin(theta) (1e-9
            # at pi - 1e-7); atan2 does not, and gives back the velocity q1 was made with
            assert rel(out["difference"][i], ref) <= 1e-8, ("difference", i)
            ref = NEAR_PI[kind]
        assert rel(out["difference"][i], ref) <= 1e-10, ("difference", i)
        if i == 2 and kind in NEAR_PI:
            assert rel(out["difference"][i], NEAR_PI[kind]) <= 1e-10, (
                "difference near pi",
                i,
            )
        assert rel(out["normalize"][i], pin.normalize(m, qn[i])) <= 1e-10, (
            "normalize",
            i,
        )
        if kind not in ("R", "P"):
            pin.forwardKinematics(m, d, q[i])
            assert rel(out["rotation"][i], d.oMi[1].rotation) <= 1e-10, ("rotation", i)
            assert rel(out["translation"][i], d.oMi[1].translation) <= 1e-10, (
                "translation",
                i,
            )


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip(kind):
    """``integrate(q0, difference(q0, q1)) = q1`` (up to quaternion sign), the near-pi case
    included, and ``difference(q, integrate(q, v)) = v`` for rotations below pi."""
    q, v, q1 = states(kind)

    @jit_once
    @jax.vmap
    def f(q, v, q1):
        return L.integrate(kind, q, L.difference(kind, q, q1)), L.difference(kind, q, L.integrate(kind, q, v))

    back, v_back = map(np.asarray, f(q, v, q1))
    for i in range(N):
        assert rel(align(kind, back[i], q1[i]), q1[i]) <= 1e-10, i
        assert rel(v_back[i], v[i]) <= 1e-10, i


def tangent_jacobians(kind, jac):
    """Pinocchio's ``dIntegrate`` (ARG0, ARG1) at ``(q, v)`` and ``dDifference`` (ARG0, ARG1) at
    ``(q0, q1)`` from derivatives of compositions with respect to a tangent perturbation ``d``
    at ``d = 0``: e.g. ``(q (+) (v + d)) = (q (+) v) (+) (J d)`` gives ``J = d/dd [(q (+) (v +
    d)) (-) (q (+) v)]``."""
    I, D = functools.partial(L.integrate, kind), functools.partial(L.difference, kind)

    def f(q, v, q0, q1):
        z = jnp.zeros(L.nv(kind))
        qv = I(q, v)
        return (
            jac(lambda d: D(qv, I(I(q, d), v)))(z),
            jac(lambda d: D(qv, I(q, v + d)))(z),
            jac(lambda d: D(I(q0, d), q1))(z),
            jac(lambda d: D(q0, I(q1, d)))(z),
        )

    return jit_once(f)


@pytest.mark.parametrize("kind", KINDS)
def test_tangent_derivatives(kind):
    m = model(kind)
    q, v, q1 = states(kind)
    fwd, rev = tangent_jacobians(kind, jax.jacfwd), tangent_jacobians(kind, jax.jacrev)
    zero = np.zeros(L.nv(kind))
    # v = 0 and q0 = q1 (log at the identity), tiny rotations, generic states
    cases = [(q[0], zero, q[0], q[0]), (q[0], v[0], q[1], q1[1])] + [(q[i], v[i], q[i], q1[i]) for i in range(3, 8)]
    for qa, va, q0, q1b in cases:
        refs = (
            pin.dIntegrate(m, qa, va, pin.ARG0),
            pin.dIntegrate(m, qa, va, pin.ARG1),
            pin.dDifference(m, q0, q1b, pin.ARG0),
            pin.dDifference(m, q0, q1b, pin.ARG1),
        )
        # Pinocchio's planar dIntegrate goes through its SE(2) exp, which loses eps / |wz| (see
        # test_against_pinocchio): 1e-7 at wz = 1e-9
        tol = 1e-15 / abs(va[2]) if kind == "planar" and 0 < abs(va[2]) < 1e-6 else 1e-9
        for jac in (fwd, rev):
            for got, ref in zip(jac(qa, va, q0, q1b), refs):
                assert np.all(np.isfinite(got))
                assert rel(got, ref) <= tol


def central_difference(f, x, h=1e-6):
    """Columns ``(f(x + h e_k) - f(x - h e_k)) / 2h`` from one batched call of ``f``."""
    x = np.asarray(x, float)
    steps = np.concatenate([x + h * np.eye(x.size), x - h * np.eye(x.size)])
    out = np.asarray(f(steps))
    return ((out[: x.size] - out[x.size :]) / (2 * h)).T


@pytest.mark.parametrize("kind", ["free", "spherical", "planar"])
def test_coefficient_gradients_at_identity(kind):
    """Gradients of the raw maps (coefficients of q, not tangent directions) at ``v = 0`` and
    ``q0 = q1`` are finite, forward equals reverse, and both equal central differences."""
    q = states(kind)[0][3]
    z = np.zeros(L.nv(kind))

    @jit_once
    def grads(q, z):
        return (
            jax.jacrev(L.integrate, argnums=2)(kind, q, z),
            jax.jacrev(L.difference, argnums=(1, 2))(kind, q, q),
            jax.jacfwd(L.difference, argnums=(1, 2))(kind, q, q),
        )

    batched_integrate = jit_once(jax.vmap(lambda v: L.integrate(kind, q, v)))
    batched_diff0 = jit_once(jax.vmap(lambda x: L.difference(kind, x, q)))
    batched_diff1 = jit_once(jax.vmap(lambda x: L.difference(kind, q, x)))

    di, dd, dd_fwd = grads(q, z)
    for got in (di, *dd, *dd_fwd):
        assert np.all(np.isfinite(np.asarray(got)))
    fd = {
        "integrate": central_difference(batched_integrate, z),
        "d0": central_difference(batched_diff0, q),
        "d1": central_difference(batched_diff1, q),
    }
    np.testing.assert_allclose(di, fd["integrate"], atol=1e-8)
    np.testing.assert_allclose(dd[0], fd["d0"], atol=1e-8)
    np.testing.assert_allclose(dd[1], fd["d1"], atol=1e-8)
    np.testing.assert_allclose(dd[0], dd_fwd[0], atol=1e-14)
    np.testing.assert_allclose(dd[1], dd_fwd[1], atol=1e-14)


def test_exp_log_against_pinocchio():
    rng = np.random.default_rng(7)
    angles = [0.0, 1e-9, 1e-5, 0.3, 2.0, np.pi - 1e-6]
    ws = [a * (x / np.linalg.norm(x)) for a, x in zip(angles, rng.normal(size=(len(angles), 3)))]
    nus = [np.concatenate([rng.uniform(-2, 2, 3), w]) for w in ws]
    exp3, log3 = jit_once(jax.vmap(L.exp3)), jit_once(jax.vmap(L.log3))
    exp6, log6 = jit_once(jax.vmap(L.exp6)), jit_once(jax.vmap(L.log6))
    r3 = np.asarray(exp3(np.stack(ws)))
    r6, p6 = map(np.asarray, exp6(np.stack(nus)))
    w_back = np.asarray(log3(r3))
    nu_back = np.asarray(log6(r6, p6))
    for i, (w, nu) in enumerate(zip(ws, nus)):
        assert rel(r3[i], pin.exp3(w)) <= 1e-12, i
        assert rel(w_back[i], pin.log3(pin.exp3(w))) <= 1e-9, i  # near pi: 1e-16 / 1e-6 conditioning
        assert rel(w_back[i], w) <= 1e-9, i
        ref = pin.exp6(nu)
        assert rel(r6[i], ref.rotation) <= 1e-12 and rel(p6[i], ref.translation) <= 1e-12, i
        assert rel(nu_back[i], pin.log6(ref).vector) <= 1e-9, i
        assert rel(nu_back[i], nu) <= 1e-9, i

    @jit_once
    def tail(r_pi):
        return (
            L.log3(r_pi),
            jax.jacrev(lambda w: L.log3(L.exp3(w)))(jnp.zeros(3)),
            jax.jacrev(lambda nu: L.log6(*L.exp6(nu)))(jnp.zeros(6)),
        )

    r_pi = pin.exp3(np.pi * np.array([0.0, 0.6, 0.8]))
    w_pi, j3, j6 = tail(r_pi)
    # a half turn exactly: the axis' sign is arbitrary, the rotation is not
    assert rel(pin.exp3(np.asarray(w_pi)), r_pi) <= 1e-12
    assert abs(np.linalg.norm(w_pi) - np.pi) <= 1e-12
    # derivatives at the identity are finite and match the known Jacobians (identity)
    np.testing.assert_allclose(j3, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(j6, np.eye(6), atol=1e-14)


@pytest.mark.parametrize("kind", ["free", "spherical", "planar", "R"])
def test_random(kind):
    bounds = {
        "free": (-np.ones(3), 2 * np.ones(3)),
        "planar": (-np.ones(2), 2 * np.ones(2)),
        "R": (-1.0, 2.0),
    }
    lo, hi = bounds.get(kind, (None, None))
    keys = jax.random.split(jax.random.key(0), 4000)
    qs = np.asarray(jit_once(jax.vmap(lambda k: L.random(kind, k, lo, hi)))(keys))
    assert qs.shape == (4000, L.nq(kind))
    if kind in QUAT:
        quat = qs[:, QUAT[kind]]
        np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1, atol=1e-14)
        # uniform on the sphere: E[q q^T] = E/4
        np.testing.assert_allclose(quat.T @ quat / len(quat), np.eye(4) / 4, atol=0.02)
    npos = {"free": 3, "planar": 2, "R": 1}.get(kind, 0)
    if npos:
        assert np.all(qs[:, :npos] >= -1) and np.all(qs[:, :npos] <= 2)
        assert np.all(qs[:, :npos].min(0) < -0.95) and np.all(qs[:, :npos].max(0) > 1.95)
    if kind == "planar":
        np.testing.assert_allclose(np.hypot(qs[:, 2], qs[:, 3]), 1, atol=1e-14)
        assert abs(np.mean(qs[:, 2])) < 0.05 and abs(np.mean(qs[:, 3])) < 0.05


def test_float32():
    """float32 in, float32 out, accurate to float32 round-off, finite gradients at the identity."""
    q, v, q1 = states("free")
    q32, v32, q132 = (jnp.asarray(x[5], jnp.float32) for x in (q, v, q1))

    @jit_once
    def f(q, v, q1):
        return (
            L.integrate("free", q, v),
            L.difference("free", q, q1),
            jax.jacrev(L.difference, argnums=2)("free", q, q),
        )

    out, diff, g = f(q32, v32, q132)
    assert out.dtype == diff.dtype == g.dtype == jnp.float32
    ref = pin.integrate(model("free"), q[5], v[5])
    assert rel(align("free", out, ref), ref) < 1e-5
    assert rel(diff, pin.difference(model("free"), q[5], q1[5])) < 1e-5
    assert np.all(np.isfinite(np.asarray(g)))


def test_bad_input():
    with pytest.raises(ValueError, match="unknown joint kind 'ball'"):
        L.nq("ball")
    with pytest.raises(ValueError, match=r"q must have shape \(7,\)"):
        L.integrate("free", jnp.zeros(4), jnp.zeros(6))
    with pytest.raises(ValueError, match=r"v must have shape \(3,\)"):
        L.integrate("planar", L.neutral("planar"), jnp.zeros(2))
    with pytest.raises(ValueError, match="axis"):
        L.motion("R", jnp.zeros(1))
    with pytest.raises(ValueError, match="bounds"):
        L.random("R", jax.random.key(0))
