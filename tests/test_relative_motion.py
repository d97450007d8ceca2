"""Relative motion (Tuan et al. 2019, section 3.3, eqs. 71-91): ``relative_motion``, ``compose``
and ``point_motion`` on random 6-joint serial and branched trees and on the stacker.

Independent routes:

* ``compose`` (77-78, 80-81, 86-87, 89-90) against ``relative_motion`` of the composite frame
  computed directly by autodiff of the composite pose; Hessians in their symmetric part, the only
  part the quadratic form ``H (qd ⊗ qd)`` fixes.
* ``relative_motion`` and ``point_motion`` against velocities and accelerations from nested
  ``jax.jvp`` of the relative pose ``A_b^T A_c``, ``A_b^T (d_c - d_b)`` along
  ``q(t) = q0 + v t + a t^2 / 2`` -- a route that never forms a Jacobian or a Hessian.
* ``point_motion`` relative to the base (79, 82, 88, 91) against ``translational_jacobian`` /
  ``translational_hessian`` of the point.

Everything for one model and one pair of frames is computed by one ``jit``-compiled function of
one configuration (compiled once, cached; unbatched, as it compiles in about half the time of its
``vmap``) called on each configuration, and the tests compare its outputs. XLA compilation
dominates the runtime, so it runs at the lowest backend optimisation level.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from checks import TOL
from oracles import random_arm, random_rotation

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N_CONFIGS = 12
EXPRESSED = ("reference", "moving")
# compile fast: these graphs run once on a few configurations
jit = functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})


MODELS = {
    "serial": random_arm(10, parents=(-1, 0, 1, 2, 3, 4), prismatic=(1, 4)),
    # bodies 3-4 and 5 are two branches off body 1
    "branched": random_arm(11, parents=(-1, 0, 1, 2, 3, 1), prismatic=(2, 5)),
    "stacker": kj.models.stacker(),
}

# (model, b, c): motion of c relative to b, and of b and c relative to the base. Besides an
# ancestor b of c: frames on different branches, and b a descendant of c.
CASES = [
    ("serial", 1, 4),
    ("serial", 5, 2),
    ("branched", 4, 5),
    ("stacker", 0, 2),
]
CASE_IDS = [f"{m}-{b}-{c}" for m, b, c in CASES]

POINT = np.array([0.13, -0.27, 0.41])  # a point fixed on body c, in c's frame


def vee(m):
    """Axial vector of the skew-symmetric part of ``m``."""
    m = 0.5 * (m - m.T)
    return jnp.stack([m[2, 1], m[0, 2], m[1, 0]])


def along_path(model, q, qd, qdd, c, b, point):
    """Velocities and accelerations of frame ``c`` (and of ``point`` on it) relative to frame ``b``
    (``None``: the base), by nested ``jax.jvp`` of the relative pose along
    ``q(t) = q + qd t + qdd t^2 / 2`` at ``t = 0``; both in ``b``'s axes ("reference") and in
    ``c``'s axes ("moving")."""

    def pose(t):
        rs, ps = model.poses(q + qd * t + 0.5 * qdd * t * t)
        if b is None:
            rb, db = jnp.eye(3, dtype=q.dtype), jnp.zeros(3, q.dtype)
        else:
            rb, db = rs[b], ps[b]
        return rb.T @ rs[c], rb.T @ (ps[c] - db), rb.T @ (ps[c] + rs[c] @ point - db)

    def first(t):
        return jax.jvp(pose, (t,), (jnp.ones_like(t),))

    t0 = jnp.zeros((), q.dtype)
    ((r, d, g), (rd, dd, gd)), (_, (rdd, ddd, gdd)) = jax.jvp(first, (t0,), (jnp.ones_like(t0),))
    reference = {
        "v": dd,
        "a": ddd,
        "omega": vee(rd @ r.T),  # skew(omega) = Rdot R^T
        "alpha": vee(rdd @ r.T + rd @ rd.T),  # d/dt (Rdot R^T)
        "v_point": gd,
        "a_point": gdd,
    }
    moving = {
        "v": r.T @ dd,
        "a": r.T @ ddd,
        "omega": vee(r.T @ rd),  # skew(omega^(c)) = R^T Rdot
        "alpha": vee(r.T @ rdd + rd.T @ rd),  # d/dt (R^T Rdot)
        "v_point": r.T @ gd,
        "a_point": r.T @ gdd,
    }
    return {"rotation": r, "origin": d, "reference": reference, "moving": moving}


def motion_dict(m):
    return {"rotation": m.rotation, "origin": m.origin, "J_T": m.J_T, "J_R": m.J_R, "H_T": m.H_T, "H_R": m.H_R}


@functools.cache
def bundle(case):
    """All quantities of one case, for ``N_CONFIGS`` random states, as numpy arrays with a leading
    configuration axis."""
    name, b, c = case
    model = MODELS[name]
    point = jnp.asarray(POINT)

    def one(q, qd, qdd):
        out = {
            "path": {
                "cb": along_path(model, q, qd, qdd, c, b, point),
                "c0": along_path(model, q, qd, qdd, c, None, point),
            }
        }
        for ex in EXPRESSED:
            ab = kj.relative_motion(model, q, b, None, ex)
            bc = kj.relative_motion(model, q, c, b, ex)
            ac = kj.relative_motion(model, q, c, None, ex)
            composed = kj.compose(ab, bc)
            out[ex] = {
                "ab": motion_dict(ab),
                "bc": motion_dict(bc),
                "ac": motion_dict(ac),
                "composed": motion_dict(composed),
                "point_bc": kj.point_motion(bc, point),
                "point_ac": kj.point_motion(ac, point),
                "point_composed": kj.point_motion(composed, point),
            }
        out["point_oracle"] = {
            "J_base": kj.translational_jacobian(model, q, c, point=point),
            "H_base": kj.translational_hessian(model, q, c, point=point),
            "J_body": kj.translational_jacobian(model, q, c, point=point, frame="body"),
            "H_body*": kj.translational_hessian(model, q, c, point=point, frame="body*"),
        }
        return out

    rng = np.random.default_rng(100 + CASES.index(case))  # deterministic (str hashes are not)
    n = model.nv
    q = rng.uniform(-np.pi, np.pi, (N_CONFIGS, n))
    qd = rng.uniform(-2.0, 2.0, (N_CONFIGS, n))
    qdd = rng.uniform(-2.0, 2.0, (N_CONFIGS, n))
    compiled = jit(one)
    out = jax.tree.map(lambda *x: np.stack(x), *(compiled(*s) for s in zip(q, qd, qdd)))
    out["state"] = (q, qd, qdd)
    return out


def quad(h, qd):
    """``H (qd ⊗ qd)`` for a batch, with numpy's kron."""
    return np.stack([hi @ np.kron(v, v) for hi, v in zip(h, qd)])


def lin(j, x):
    return np.einsum("bij,bj->bi", j, x)


def sym(h):
    """Symmetric part of batched Khang-layout Hessians, written with numpy."""
    k, r, n2 = h.shape
    n = int(round(np.sqrt(n2)))
    h4 = h.reshape(k, r, n, n)
    return (0.5 * (h4 + np.swapaxes(h4, -1, -2))).reshape(k, r, n2)


def test_models_are_as_intended():
    for name in ("serial", "branched"):
        tree = MODELS[name].kinematics
        assert tree.n_bodies == 6 and MODELS[name].nv == 6
        assert set(tree.kinds) == {"R", "P"}
        np.testing.assert_allclose(np.linalg.norm(tree.axes, axis=1), 1.0, atol=1e-12)
        for r in np.asarray(tree.pre_rotation):
            np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-12)
            assert np.linalg.det(r) > 0
    assert MODELS["branched"].kinematics.parents.count(1) == 2


# --------------------------------------------------------------------------------------------
# compose against the directly computed composite motion
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "frame"),
    [
        pytest.param(
            case,
            where,
            id=f"{case_id}-{where}",
            marks=[pytest.mark.slow] if case_id == "branched-4-5" and where == "reference" else [],
        )
        for where in EXPRESSED
        for case, case_id in zip(CASES, CASE_IDS)
    ],
)
def test_compose_pose_and_jacobians(case, frame):
    """(71)-(72) and (77)-(78) ("reference") or (80)-(81) ("moving")."""
    out = bundle(case)[frame]
    for key in ("rotation", "origin", "J_T", "J_R"):
        np.testing.assert_allclose(out["composed"][key], out["ac"][key], atol=TOL, err_msg=key)


@pytest.mark.parametrize("frame", EXPRESSED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_compose_hessians_symmetric_part(case, frame):
    """(86)-(87) ("reference") or (89)-(90) ("moving"): equal in the symmetric part, hence in the
    accelerations for every ``qd``."""
    data = bundle(case)
    out = data[frame]
    _, qd, _ = data["state"]
    for key in ("H_T", "H_R"):
        np.testing.assert_allclose(sym(out["composed"][key]), sym(out["ac"][key]), atol=TOL, err_msg=key)
        np.testing.assert_allclose(quad(out["composed"][key], qd), quad(out["ac"][key], qd), atol=TOL, err_msg=key)


@jit
def _three_steps(q):
    """Base -> body 1 -> body 3 -> body 5 of the serial chain, composed in two steps, next to the
    direct motion of body 5; for both ways of expressing the motion."""
    model = MODELS["serial"]
    out = {}
    for ex in EXPRESSED:
        step = kj.compose(
            kj.compose(kj.relative_motion(model, q, 1, None, ex), kj.relative_motion(model, q, 3, 1, ex)),
            kj.relative_motion(model, q, 5, 3, ex),
        )
        out[ex] = (motion_dict(step), motion_dict(kj.relative_motion(model, q, 5, None, ex)))
    return out


def test_compose_chains_through_two_intermediate_frames():
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-2, 2, (2, 6))
    out = _three_steps(q)
    for ex in EXPRESSED:
        step, direct = out[ex]
        for key in ("rotation", "origin", "J_T", "J_R"):
            np.testing.assert_allclose(step[key], direct[key], atol=TOL, err_msg=f"{ex} {key}")
        for key in ("H_T", "H_R"):
            np.testing.assert_allclose(
                np.asarray(step[key]) @ np.kron(qd, qd),
                np.asarray(direct[key]) @ np.kron(qd, qd),
                atol=TOL,
                err_msg=f"{ex} {key}",
            )


def random_motion(rng, n, frame):
    """A :class:`RelativeMotion` of random numbers (proper rotation, arbitrary J and H): enough for
    the algebra of ``compose`` / ``point_motion`` and for their input checks."""
    return kj.kinematics.RelativeMotion(
        jnp.asarray(random_rotation(rng)),
        jnp.asarray(rng.normal(size=3)),
        jnp.asarray(rng.normal(size=(3, n))),
        jnp.asarray(rng.normal(size=(3, n))),
        jnp.asarray(rng.normal(size=(3, n * n))),
        jnp.asarray(rng.normal(size=(3, n * n))),
        frame,
    )


def test_compose_rejects_mismatched_motions():
    rng = np.random.default_rng(0)
    ref, mov = random_motion(rng, 3, "reference"), random_motion(rng, 3, "moving")
    with pytest.raises(ValueError, match="expressed"):
        kj.compose(ref, mov)
    with pytest.raises(ValueError, match="expressed"):
        kj.compose(mov, ref)
    with pytest.raises(ValueError, match="different coordinates"):
        kj.compose(ref, random_motion(rng, 4, "reference"))


def test_frame_of_relative_motion_is_validated():
    model = MODELS["stacker"]
    with pytest.raises(ValueError, match="frame must be"):
        kj.relative_motion(model, jnp.zeros(3), 2, 0, "body")
    with pytest.raises(ValueError, match="frame must be"):
        random_motion(np.random.default_rng(1), 2, "base")
    m = random_motion(np.random.default_rng(1), 2, "reference")
    # the default is "reference"
    assert kj.kinematics.RelativeMotion(m.rotation, m.origin, m.J_T, m.J_R, m.H_T, m.H_R).frame == "reference"


# --------------------------------------------------------------------------------------------
# relative_motion against jvp along a trajectory
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pair", ["cb", "c0"])
@pytest.mark.parametrize("frame", EXPRESSED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_relative_motion_against_jvp(case, frame, pair):
    """``J qd`` and ``J qdd + H (qd ⊗ qd)`` of the motion of c relative to b (``"cb"``) or to the
    base (``"c0"``) against the first and second time derivatives of the relative pose, in b's
    axes ("reference": 29, 37, 51-52, 60, 62) or in c's axes ("moving": 31, 40, 58-59, 61, 63-64)."""
    data = bundle(case)
    q, qd, qdd = data["state"]
    got = data[frame]["bc" if pair == "cb" else "ac"]
    path = data["path"][pair]
    expected = path[frame]
    np.testing.assert_allclose(got["rotation"], path["rotation"], atol=TOL)
    np.testing.assert_allclose(got["origin"], path["origin"], atol=TOL)
    np.testing.assert_allclose(lin(got["J_T"], qd), expected["v"], atol=TOL)
    np.testing.assert_allclose(lin(got["J_R"], qd), expected["omega"], atol=TOL)
    np.testing.assert_allclose(lin(got["J_T"], qdd) + quad(got["H_T"], qd), expected["a"], atol=TOL)
    np.testing.assert_allclose(lin(got["J_R"], qdd) + quad(got["H_R"], qd), expected["alpha"], atol=TOL)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_relative_motion_translational_hessian_is_symmetric(case):
    """The translational Hessian of a frame origin is a second derivative of a position (possibly
    rotated row-wise, 58), so it is symmetric in Khang's layout."""
    data = bundle(case)
    for ex in EXPRESSED:
        for key in ("ab", "bc", "ac"):
            h = data[ex][key]["H_T"]
            np.testing.assert_allclose(h, sym(h), atol=TOL, err_msg=f"{ex} {key}")


@jit
def _base_motion_and_single_body_api(q):
    model, c = MODELS["branched"], 4
    ref = kj.relative_motion(model, q, c)
    mov = kj.relative_motion(model, q, c, None, "moving")
    return (
        (ref.J_T, kj.translational_jacobian(model, q, c)),
        (ref.J_R, kj.rotational_jacobian(model, q, c)),
        (ref.H_T, kj.translational_hessian(model, q, c)),
        (ref.H_R, kj.rotational_hessian(model, q, c)),
        (mov.J_T, kj.translational_jacobian(model, q, c, frame="body")),
        (mov.J_R, kj.rotational_jacobian(model, q, c, "body")),
        (mov.H_T, kj.translational_hessian(model, q, c, frame="body*")),
        (mov.H_R, kj.rotational_hessian(model, q, c, "body")),
    )


def test_relative_motion_to_base_matches_single_body_api():
    """``reference=None`` is the base: the same Jacobians and Hessians as the single-body API
    (``"moving"`` = body frame, with ``H*_T`` of 58)."""
    q = np.random.default_rng(8).uniform(-2, 2, 6)
    for i, (got, expected) in enumerate(_base_motion_and_single_body_api(q)):
        np.testing.assert_allclose(got, expected, atol=TOL, err_msg=str(i))


# --------------------------------------------------------------------------------------------
# point_motion (79, 82, 88, 91)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_point_motion_relative_to_base_matches_point_jacobians(case):
    """(79)/(88) in the base frame vs ``translational_jacobian/hessian(point=p)``, and (82)/(91)
    in the body frame vs ``frame="body"`` / ``"body*"``; Hessians in their symmetric part."""
    data = bundle(case)
    oracle = data["point_oracle"]
    jt, ht = data["reference"]["point_ac"]
    np.testing.assert_allclose(jt, oracle["J_base"], atol=TOL)
    np.testing.assert_allclose(sym(ht), sym(oracle["H_base"]), atol=TOL)
    jt, ht = data["moving"]["point_ac"]
    np.testing.assert_allclose(jt, oracle["J_body"], atol=TOL)
    np.testing.assert_allclose(sym(ht), sym(oracle["H_body*"]), atol=TOL)


@pytest.mark.parametrize("source", ["bc", "ac", "composed"])
@pytest.mark.parametrize("frame", EXPRESSED)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_point_motion_against_jvp(case, frame, source):
    """Velocity ``J_TG qd`` and acceleration ``J_TG qdd + H_TG (qd ⊗ qd)`` of a point of body c
    relative to b (``"bc"``) or to the base (``"ac"``, ``"composed"``) vs nested jvp."""
    data = bundle(case)
    _, qd, qdd = data["state"]
    jt, ht = data[frame][f"point_{source}"]
    expected = data["path"]["cb" if source == "bc" else "c0"][frame]
    np.testing.assert_allclose(lin(jt, qd), expected["v_point"], atol=TOL)
    np.testing.assert_allclose(lin(jt, qdd) + quad(ht, qd), expected["a_point"], atol=TOL)


@pytest.mark.parametrize("frame", EXPRESSED)
def test_point_motion_algebra_with_random_motion(frame):
    """(79, 88) / (82, 91) as vector relations with numpy's cross product, for arbitrary J, H:
    ``v_G = v + omega x p``, ``a_G = a + alpha x p + omega x (omega x p)``, with ``p`` the point
    in the axes the motion is expressed in (``A p`` for "reference", ``p`` for "moving")."""
    rng = np.random.default_rng(5)
    n = 4
    m = random_motion(rng, n, frame)
    point, qd, qdd = rng.normal(size=3), rng.normal(size=n), rng.normal(size=n)
    jt, ht = kj.point_motion(m, point)
    rot, j_t, j_r, h_t, h_r = (np.asarray(x) for x in (m.rotation, m.J_T, m.J_R, m.H_T, m.H_R))
    p = rot @ point if frame == "reference" else point
    omega = j_r @ qd
    alpha = j_r @ qdd + h_r @ np.kron(qd, qd)
    np.testing.assert_allclose(np.asarray(jt) @ qd, j_t @ qd + np.cross(omega, p), atol=1e-12)
    np.testing.assert_allclose(
        np.asarray(jt) @ qdd + np.asarray(ht) @ np.kron(qd, qd),
        j_t @ qdd + h_t @ np.kron(qd, qd) + np.cross(alpha, p) + np.cross(omega, np.cross(omega, p)),
        atol=1e-12,
    )
    # the point at the origin of the moving frame is the frame itself
    jt0, ht0 = kj.point_motion(m, np.zeros(3))
    np.testing.assert_allclose(jt0, j_t, atol=0)
    np.testing.assert_allclose(ht0, h_t, atol=0)
    with pytest.raises(ValueError, match="3-vector"):
        kj.point_motion(m, np.zeros(4))
