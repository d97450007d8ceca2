"""Kinematics against first principles: velocities and accelerations from J qd and
J qdd + H (qd kron qd) against time derivatives of the poses computed with nested jax.jvp
along a trajectory (a route that never forms a Jacobian); float32; vmap over 1000 states."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from oracles import random_arm


def puma_like():
    rows = [
        ("R", 0.6718, 0.0, 0.0, np.pi / 2),
        ("R", 0.0, 0.0, 0.4318, 0.0),
        ("R", 0.15005, 0.0, 0.0203, -np.pi / 2),
        ("R", 0.4318, 0.0, 0.0, np.pi / 2),
        ("R", 0.0, 0.0, 0.0, -np.pi / 2),
        ("P", 0.1, 0.3, 0.05, 0.0),
    ]
    return kj.from_dh(rows)


MODELS = {
    "tree": random_arm(0, parents=(-1, 0, 1, 2, 3, 2, 5)),  # bodies 5-6 branch off body 2
    "chain": random_arm(1),
    "dh": puma_like(),
    "stacker": kj.models.stacker(),
}


def state(model, seed):
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.uniform(-1.5, 1.5, model.n_dof)) for _ in range(3)]


def along_path(model, q, qd, qdd):
    """Pose and its first two time derivatives at t = 0 along q(t) = q + qd t + qdd t^2 / 2."""

    def pose(t):
        return model.poses(q + qd * t + 0.5 * qdd * t * t)

    def d1(t):
        return jax.jvp(pose, (t,), (jnp.ones_like(t),))

    zero = jnp.zeros((), q.dtype)
    (pose0, dpose), (_, ddpose) = jax.jvp(d1, (zero,), (jnp.ones_like(zero),))
    return pose0, dpose, ddpose


def angular_rates(r, rdot, rddot):
    """omega (base) from skew(omega) = Rdot R^T, and alpha = d omega / dt."""
    w = rdot @ jnp.swapaxes(r, -1, -2)
    wdot = rddot @ jnp.swapaxes(r, -1, -2) + rdot @ jnp.swapaxes(rdot, -1, -2)
    vee = lambda m: jnp.stack([m[..., 2, 1], m[..., 0, 2], m[..., 1, 0]], -1)  # noqa: E731
    return vee(w), vee(wdot)


POINT = jnp.array([0.05, -0.12, 0.2])


@functools.cache
def motion_of_all_bodies(name):
    """kronjax's velocities and accelerations of every body, jit-compiled once per model."""
    model = MODELS[name]

    @jax.jit
    def f(q, qd, qdd):
        out = []
        for b in range(model.n_bodies):
            out.append(
                [
                    kj.linear_velocity(model, q, qd, b),
                    kj.linear_acceleration(model, q, qd, qdd, b),
                    kj.angular_velocity(model, q, qd, b),
                    kj.angular_acceleration(model, q, qd, qdd, b),
                    kj.linear_velocity(model, q, qd, b, frame="body"),
                    kj.linear_acceleration(model, q, qd, qdd, b, frame="body"),
                    kj.angular_velocity(model, q, qd, b, frame="body"),
                    kj.angular_acceleration(model, q, qd, qdd, b, frame="body"),
                    kj.linear_acceleration(model, q, qd, qdd, b, point=POINT),
                ]
            )
        return jnp.array(out)

    return f


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("seed", range(4))
def test_accelerations_match_second_time_derivative(name, seed):
    model = MODELS[name]
    q, qd, qdd = state(model, seed)
    (r, p), (rdot, pdot), (rddot, pddot) = along_path(model, q, qd, qdd)
    omega, alpha = angular_rates(r, rdot, rddot)
    rt = jnp.swapaxes(r, -1, -2)
    body = lambda x: jnp.einsum("bij,bj->bi", rt, x)  # noqa: E731  (59, 64: A^T a, A^T alpha)
    expected = jnp.stack(
        [pdot, pddot, omega, alpha, body(pdot), body(pddot), body(omega), body(alpha), pddot + rddot @ POINT],
        axis=1,
    )
    np.testing.assert_allclose(motion_of_all_bodies(name)(q, qd, qdd), expected, atol=1e-10)


@pytest.mark.parametrize("name", list(MODELS))
def test_body_frame_hessian_53_differentiates_body_velocity(name):
    """H_T^(i) of (53) gives d/dt (v^(i)) (54), which differs from a^(i) (55)."""
    model = MODELS[name]
    q, qd, qdd = state(model, 7)
    b = model.n_bodies - 1

    def v_body(t):
        qt = q + qd * t + 0.5 * qdd * t * t
        r, _ = model.poses(qt)
        v = jax.jvp(lambda s: model.poses(q + qd * s + 0.5 * qdd * s * s)[1][b], (t,), (1.0,))[1]
        return r[b].T @ v

    expected = jax.jvp(v_body, (0.0,), (1.0,))[1]
    jt = kj.translational_jacobian(model, q, b, frame="body")
    ht = kj.translational_hessian(model, q, b, frame="body")
    np.testing.assert_allclose(jt @ qdd + ht @ jnp.kron(qd, qd), expected, atol=1e-10)


def test_rotational_jacobian_definitions_37_40_relate_by_rotation():
    """(42): J_R^(i) = A_0^(i) J_R^(0); both computed from their own definitions."""
    model = MODELS["tree"]
    q, _, _ = state(model, 3)
    r = kj.forward_kinematics(model, q).rotations
    for b in range(model.n_bodies):
        base = kj.rotational_jacobian(model, q, b, "base")
        body = kj.rotational_jacobian(model, q, b, "body")
        np.testing.assert_allclose(body, r[b].T @ base, atol=1e-12)


def test_from_function_matches_closed_form_stacker():
    """A user's closed-form poses (reference T03 of the stacker, frame 3 only) give the same
    Jacobians and Hessians as the D-H model."""
    a3, d2 = 1.4, 0.6

    def poses(q):
        q1, q2, q3 = q
        c2, s2, c3, s3 = jnp.cos(q2), jnp.sin(q2), jnp.cos(q3), jnp.sin(q3)
        r = jnp.array([[c2 * c3, -s3 * c2, s2], [-s3, -c3, 0.0 * q1], [s2 * c3, -s2 * s3, -c2]])
        p = jnp.array([a3 * c2 * c3, -a3 * s3 - d2, a3 * s2 * c3 + q1])
        return r[None], p[None]

    user = kj.from_function(poses, 3)
    dh = kj.models.stacker(a3=a3, d2=d2)
    for seed in range(5):
        q = jnp.asarray(np.random.default_rng(seed).uniform(-2, 2, 3))
        for frame in ("base", "body"):
            np.testing.assert_allclose(
                kj.translational_jacobian(user, q, 0, frame=frame),
                kj.translational_jacobian(dh, q, 2, frame=frame),
                atol=1e-12,
            )
            np.testing.assert_allclose(
                kj.rotational_hessian(user, q, 0, frame), kj.rotational_hessian(dh, q, 2, frame), atol=1e-12
            )
        for frame in ("base", "body", "body*"):
            np.testing.assert_allclose(
                kj.translational_hessian(user, q, 0, frame=frame),
                kj.translational_hessian(dh, q, 2, frame=frame),
                atol=1e-12,
            )


def kinematics_bundle(model):
    def f(q, qd, qdd):
        return (
            kj.forward_kinematics(model, q),
            kj.translational_jacobian(model, q, 4, point="com"),
            kj.rotational_jacobian(model, q, 4, "body"),
            kj.translational_hessian(model, q, 4, frame="body*"),
            kj.rotational_hessian(model, q, 4),
            kj.linear_acceleration(model, q, qd, qdd, 4),
        )

    return f


def test_float32_matches_float64():
    """float32 in gives float32 out; agreement with float64 to 1e-5 (relative to the scale of
    each quantity, which is O(1) here)."""
    model = MODELS["tree"]
    q, qd, qdd = state(model, 11)
    f = kinematics_bundle(model)
    out64 = f(q, qd, qdd)
    model32 = model.astype(jnp.float32)
    out32 = jax.jit(kinematics_bundle(model32))(q.astype(jnp.float32), qd.astype(jnp.float32), qdd.astype(jnp.float32))
    for a, b in zip(jax.tree.leaves(out32), jax.tree.leaves(out64)):
        assert a.dtype == jnp.float32
        np.testing.assert_allclose(a, b, atol=1e-5 * max(1.0, float(jnp.max(jnp.abs(b)))))


def test_vmap_over_1000_configurations():
    model = MODELS["tree"]
    rng = np.random.default_rng(5)
    qs, qds, qdds = (jnp.asarray(rng.uniform(-2, 2, (1000, model.n_dof))) for _ in range(3))
    batched = jax.jit(jax.vmap(kinematics_bundle(model)))(qs, qds, qdds)
    f = kinematics_bundle(model)
    for i in (0, 517, 999):
        single = f(qs[i], qds[i], qdds[i])
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(single)):
            np.testing.assert_allclose(a[i], b, atol=1e-12)
    # float32 batch too
    model32 = model.astype(jnp.float32)
    out32 = jax.jit(jax.vmap(kinematics_bundle(model32)))(
        qs.astype(jnp.float32), qds.astype(jnp.float32), qdds.astype(jnp.float32)
    )
    for a, b in zip(jax.tree.leaves(out32), jax.tree.leaves(batched)):
        assert a.dtype == jnp.float32
        np.testing.assert_allclose(a, b, atol=2e-4)


def test_gradient_reaches_dh_parameters():
    """Kinematic parameters are differentiable: d(tip position)/d a3 of the stacker."""
    q = jnp.array([0.2, 0.5, -0.3])

    def tip(a3):
        return kj.forward_kinematics(kj.models.stacker(a3=a3), q).origins[2]

    got = jax.jacfwd(tip)(1.4)
    _, q2, q3 = q
    np.testing.assert_allclose(got, [jnp.cos(q2) * jnp.cos(q3), -jnp.sin(q3), jnp.sin(q2) * jnp.cos(q3)], atol=1e-12)


def test_no_recompilation_on_new_values():
    import equinox as eqx

    model = MODELS["dh"]

    @jax.jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def f(q):
        return kj.translational_hessian(model, q, 5)

    for seed in range(3):
        f(state(model, seed)[0])
