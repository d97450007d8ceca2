"""Kinematics against first principles: velocities and accelerations from J qd and
J qdd + H (qd kron qd) against time derivatives of the poses computed with nested jax.jvp
along a trajectory (a route that never forms a Jacobian); float32; vmap over 1000 states.

XLA compilation dominates the runtime (each per-body call computes every body's quantities):
every body's motion comes from one call of each all-bodies function, the per-body functions are
checked on one body of two models, the oracles, which run once on a few states, are compiled at
the lowest backend optimisation level, and both are compiled for one state and called on each
(an unbatched program compiles faster than its ``vmap``, which
:func:`test_vmap_over_1000_configurations` checks)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, random_arm

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)


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
# the per-body functions index the all-bodies ones: checked on one body of two models, the end
# of the tree's branch and the D-H arm's prismatic end
BODY = {"tree": 6, "dh": 5}
N_STATES = 4


def state(model, seed):
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.uniform(-1.5, 1.5, model.nv)) for _ in range(3)]


def each(compiled, states):
    """``compiled`` at each state ``(q, qd, qdd)``, its outputs stacked (numpy arrays)."""
    return jax.tree.map(lambda *x: np.stack(x), *(compiled(*s) for s in states))


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
# what the columns of the motion arrays hold, in the base frame and in body axes
QUANTITIES = ("v", "a", "omega", "alpha", "v body", "a body", "omega body", "alpha body", "a point", "d/dt v body")


def oracle_motion(model, q, qd, qdd):
    """The quantities of ``QUANTITIES`` for every body ``(nb, 10, 3)`` from the time derivatives
    of the poses; ``d/dt v body`` is ``d/dt (R^T pdot) = Rdot^T pdot + R^T pddot``."""
    (r, p), (rdot, pdot), (rddot, pddot) = along_path(model, q, qd, qdd)
    omega, alpha = angular_rates(r, rdot, rddot)
    rt = jnp.swapaxes(r, -1, -2)
    body = lambda x: jnp.einsum("bij,bj->bi", rt, x)  # noqa: E731  (59, 64: A^T a, A^T alpha)
    d_v_body = jnp.einsum("bji,bj->bi", rdot, pdot) + body(pddot)
    return jnp.stack(
        [pdot, pddot, omega, alpha, body(pdot), body(pddot), body(omega), body(alpha), pddot + rddot @ POINT, d_v_body],
        axis=1,
    )


def library_motion(model, b, q, qd, qdd):
    """The same from kronjax: every body's from the all-bodies Jacobians, Hessians and Jacobian
    derivatives ``(nb, 10, 3)``, body ``b``'s from the per-body functions ``(10, 3)`` (unless
    ``b`` is None), and the rotations and rotational Jacobians in both frames."""
    kk = jnp.kron(qd, qd)
    rotations = kj.forward_kinematics(model, q).rotations
    jt, jr = kj.jacobians(model, q, "base")
    jt_body, jr_body = kj.jacobians(model, q, "body")
    jt_dot = kj.jacobians_dot(model, q, qd, "base")[0]
    hr = kj.hessians(model, q, "base")[1]
    ht_body, hr_body = kj.hessians(model, q, "body")
    ht_star = kj.hessians(model, q, "body*")[0]
    points = jnp.tile(POINT, (model.n_bodies, 1))
    jt_point, ht_point = kj.jacobians(model, q, "base", points)[0], kj.hessians(model, q, "base", points)[0]
    every = jnp.stack(
        [
            jt @ qd,
            jt @ qdd + jt_dot @ qd,
            jr @ qd,
            jr @ qdd + hr @ kk,
            jt_body @ qd,
            jt_body @ qdd + ht_star @ kk,
            jr_body @ qd,
            jr_body @ qdd + hr_body @ kk,
            jt_point @ qdd + ht_point @ kk,
            jt_body @ qdd + ht_body @ kk,
        ],
        axis=1,
    )
    out = dict(every=every, rotations=rotations, jr=jr, jr_body=jr_body)
    if b is None:
        return out
    out["one"] = jnp.stack(
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
            kj.translational_jacobian(model, q, b, frame="body") @ qdd + kj.translational_hessian(model, q, b, frame="body") @ kk,
        ]
    )
    return out


@functools.cache
def motion(name):
    """kronjax's motion of every body and the oracle's at ``N_STATES`` states, each compiled once
    per model."""
    model, b = MODELS[name], BODY.get(name)
    states = [state(model, seed) for seed in range(N_STATES)]
    got = each(jax.jit(lambda *x: library_motion(model, b, *x)), states)
    return got, each(jit_once(lambda *x: oracle_motion(model, *x)), states)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "tree" else name for name in MODELS])
def test_accelerations_match_second_time_derivative(name):
    """Linear and angular velocities and accelerations of every body (and the acceleration of a
    point on it), in the base frame and in body axes, from the Jacobians and the Jacobians' time
    derivatives or the Hessians (``"body*"`` for the translational acceleration in body axes, 58-59),
    against the time derivatives of the poses; the per-body functions (linear_velocity, ...,
    angular_acceleration) on one body of the tree and of the D-H arm."""
    got, expected = motion(name)
    k = QUANTITIES.index("a point") + 1
    np.testing.assert_allclose(got["every"][:, :, :k], expected[:, :, :k], atol=1e-10)
    if name in BODY:
        np.testing.assert_allclose(got["one"][:, :k], expected[:, BODY[name], :k], atol=1e-10)


@pytest.mark.parametrize("name", list(MODELS))
def test_body_frame_hessian_53_differentiates_body_velocity(name):
    """H_T^(i) of (53) gives d/dt (v^(i)) (54), which differs from a^(i) (55); every body from
    ``hessians(frame="body")``, one of the tree and of the D-H arm from
    ``translational_hessian(frame="body")``."""
    got, expected = motion(name)
    k = QUANTITIES.index("d/dt v body")
    np.testing.assert_allclose(got["every"][:, :, k], expected[:, :, k], atol=1e-10)
    if name in BODY:
        np.testing.assert_allclose(got["one"][:, k], expected[:, BODY[name], k], atol=1e-10)
    assert np.max(np.abs(expected[:, :, k] - expected[:, :, QUANTITIES.index("a body")])) > 1e-2


def test_rotational_jacobian_definitions_37_40_relate_by_rotation():
    """(42): J_R^(i) = A_0^(i) J_R^(0); both computed from their own definitions."""
    got, _ = motion("tree")
    rt = np.swapaxes(got["rotations"], -1, -2)
    np.testing.assert_allclose(got["jr_body"], rt @ got["jr"], atol=1e-12)


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

    def both(q):
        out = []
        for frame in ("base", "body"):
            out.append((kj.translational_jacobian(user, q, 0, frame=frame), kj.translational_jacobian(dh, q, 2, frame=frame)))
            out.append((kj.rotational_hessian(user, q, 0, frame), kj.rotational_hessian(dh, q, 2, frame)))
        for frame in ("base", "body", "body*"):
            out.append((kj.translational_hessian(user, q, 0, frame=frame), kj.translational_hessian(dh, q, 2, frame=frame)))
        return out

    qs = jnp.asarray(np.stack([np.random.default_rng(seed).uniform(-2, 2, 3) for seed in range(5)]))
    for got, expected in jax.jit(jax.vmap(both))(qs):
        np.testing.assert_allclose(got, expected, atol=1e-12)


def kinematics_bundle(model, q, qd, qdd):
    return (
        kj.forward_kinematics(model, q),
        kj.translational_jacobian(model, q, 4, point="com"),
        kj.rotational_jacobian(model, q, 4, "body"),
        kj.translational_hessian(model, q, 4, frame="body*"),
        kj.rotational_hessian(model, q, 4),
        kj.linear_acceleration(model, q, qd, qdd, 4),
    )


# the model is an argument: one compilation per dtype (and batch), shared by the tests below
_BUNDLE = jax.jit(kinematics_bundle)
_BATCHED_BUNDLE = jax.jit(jax.vmap(kinematics_bundle, in_axes=(None, 0, 0, 0)))


@pytest.mark.slow
def test_float32_matches_float64():
    """float32 in gives float32 out; agreement with float64 to 1e-5 (relative to the scale of
    each quantity, which is O(1) here)."""
    model = MODELS["tree"]
    q, qd, qdd = state(model, 11)
    out64 = _BUNDLE(model, q, qd, qdd)
    model32 = model.astype(jnp.float32)
    out32 = _BUNDLE(model32, q.astype(jnp.float32), qd.astype(jnp.float32), qdd.astype(jnp.float32))
    for a, b in zip(jax.tree.leaves(out32), jax.tree.leaves(out64)):
        assert a.dtype == jnp.float32
        np.testing.assert_allclose(a, b, atol=1e-5 * max(1.0, float(jnp.max(jnp.abs(b)))))


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_vmap_over_1000_configurations():
    """jit(vmap(.)) over 1000 configurations equals the unbatched function at every one checked,
    in float64, and within 2e-4 in float32."""
    model = MODELS["tree"]
    rng = np.random.default_rng(5)
    qs, qds, qdds = (jnp.asarray(rng.uniform(-2, 2, (1000, model.nv))) for _ in range(3))
    batched = _BATCHED_BUNDLE(model, qs, qds, qdds)
    for i in (0, 517, 999):
        single = _BUNDLE(model, qs[i], qds[i], qdds[i])
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(single)):
            np.testing.assert_allclose(a[i], b, atol=1e-12)
    # float32 batch too
    model32 = model.astype(jnp.float32)
    out32 = _BATCHED_BUNDLE(model32, qs.astype(jnp.float32), qds.astype(jnp.float32), qdds.astype(jnp.float32))
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
