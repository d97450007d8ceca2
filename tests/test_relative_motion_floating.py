"""``relative_motion`` on a floating tree with spherical joints (issue 15): Jacobians ``3 x nv`` and
Hessians ``3 x nv^2`` along the tangent space, so that the relative velocity is ``J v`` and the
relative acceleration ``J vd + H (v ⊗ v)``.

Oracles, for a few random ``(q, v, vd)``:

* Pinocchio 4.1 (the twin of :func:`oracles.to_pinocchio`): the world poses, spatial velocities
  and classical accelerations of the two frames (``forwardKinematics``, ``getVelocity`` and
  ``getClassicalAcceleration`` in LOCAL_WORLD_ALIGNED), composed by hand into the motion of frame
  ``c`` relative to frame ``b`` (``r = p_c - p_b``, in ``b``'s axes):
  ``v = R_b^T (r' - w_b x r)``, ``a = R_b^T (r'' - alpha_b x r - 2 w_b x r' + w_b x (w_b x r))``,
  ``w = R_b^T (w_c - w_b)``, ``alpha = R_b^T (alpha_c - alpha_b - w_b x (w_c - w_b))``; in the
  moving frame ``c`` each is ``A_c^(b)T`` times these. Tolerance 1e-10 relative.
* First principles: fourth-order central differences in ``t`` of the relative pose along
  ``q(t) = q ⊕ (t v + t^2/2 vd)`` (``kj.integrate``), step 1e-3; ``w = vee(R' R^T)``,
  ``alpha = vee(R'' R^T)`` (``R' R'^T`` is symmetric). Tolerance 1e-7 relative (truncation
  ``h^4`` and rounding ``eps / h^2`` of the second differences).

One ``jit`` of one configuration computes a group of cases' motions (compiled once per group).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from checks import FD_TOL, TOL
from oracles import FAST_COMPILE, jit_once, random_tree, relative_error, to_pinocchio

import kronjax as kj

FD_STEP = 1e-3
STATES = 3

# A free-flyer root; branch R - spherical - P (body 3) and branch R - spherical (body 5)
SPEC = [("free", -1), ("R", 0), ("spherical", 1), ("P", 2), ("R", 0), ("spherical", 4)]
# (c, b): motion of body c relative to body b (None: the base). The fast tier has the frames on
# two branches, each below a spherical joint (one compile, the file's main cost); the slow tier
# adds c relative to an ancestor (through the spherical joint) and an absolute motion
GROUPS = {"branches": ((3, 5),), "ancestor-and-base": ((3, 1), (5, None))}
GROUP_PARAMS = [pytest.param(name, marks=[pytest.mark.slow] if name != "branches" else []) for name in GROUPS]


MODEL = random_tree(SPEC, seed=5)


@functools.cache
def motions(group: str):
    """``q ->`` per case of the group, the motion ``expressed_in`` "reference" and "moving"."""
    return jit_once(
        lambda q: [
            [kj.relative_motion(MODEL, q, c, b, expressed_in) for expressed_in in ("reference", "moving")]
            for c, b in GROUPS[group]
        ]
    )


def _relative_pose(q, cases):
    rs, ps = MODEL.poses(q)
    return [(rs[c], ps[c]) if b is None else (rs[b].T @ rs[c], rs[b].T @ (ps[c] - ps[b])) for c, b in cases]


@functools.partial(jax.jit, static_argnums=4, compiler_options=FAST_COMPILE)
def _poses_along(q, v, vd, ts, cases):
    """Relative poses at ``q ⊕ (t v + t^2/2 vd)`` for each ``t`` of ``ts``."""
    return jax.vmap(lambda t: _relative_pose(kj.integrate(MODEL, q, t * v + 0.5 * t**2 * vd), cases))(ts)


def vee(m):
    m = 0.5 * (m - m.T)
    return np.array([m[2, 1], m[0, 2], m[1, 0]])


def _states(seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(STATES):
        q = np.asarray(kj.normalize(MODEL, rng.normal(size=MODEL.nq)))
        yield q, rng.normal(size=MODEL.nv), rng.normal(size=MODEL.nv)


def _predicted(motion, v, vd):
    """(velocity, angular velocity, acceleration, angular acceleration) from J and H."""
    vv = np.kron(v, v)
    jt, jr, ht, hr = (np.asarray(x) for x in (motion.J_T, motion.J_R, motion.H_T, motion.H_R))
    return jt @ v, jr @ v, jt @ vd + ht @ vv, jr @ vd + hr @ vv


def _check(group, q, expected, v, vd, tol):
    """``expected[case]``: the reference-frame (v, w, a, alpha); the moving-frame ones are those
    turned into frame ``c`` by ``A_c^(b)T``."""
    names = ("velocity", "angular velocity", "acceleration", "angular acceleration")
    for (c, b), (reference, moving), want in zip(GROUPS[group], motions(group)(q), expected, strict=True):
        rotation = np.asarray(reference.rotation)
        for motion, target in ((reference, want), (moving, [rotation.T @ x for x in want])):
            for name, got, w in zip(names, _predicted(motion, v, vd), target):
                error = relative_error(got, w)
                assert error < tol, (c, b, motion.frame, name, error)


def test_shapes_and_poses():
    q = kj.neutral(MODEL)
    assert (MODEL.nq, MODEL.nv) == (18, 15)
    for (reference, moving), (rotation, origin) in zip(motions("branches")(q), _relative_pose(q, GROUPS["branches"])):
        for motion in (reference, moving):
            assert motion.J_T.shape == motion.J_R.shape == (3, 15)
            assert motion.H_T.shape == motion.H_R.shape == (3, 15 * 15)
            assert relative_error(motion.rotation, rotation) < 1e-15 and relative_error(motion.origin, origin) < 1e-15


@pytest.mark.parametrize("group", GROUP_PARAMS)
def test_against_pinocchio(group):
    pm = to_pinocchio(MODEL)
    pd = pm.createData()
    frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    ids = [pm.getJointId(name) for name in MODEL.joint_names]
    assert (pm.nq, pm.nv) == (MODEL.nq, MODEL.nv) and list(pm.idx_qs[1:]) == list(MODEL.kinematics.q_index)

    def world(body):
        """Rotation, origin, velocity, angular velocity, classical acceleration, angular acceleration."""
        if body is None:
            return np.eye(3), np.zeros(3), *np.zeros((4, 3))
        jid = ids[body]
        velocity = pin.getVelocity(pm, pd, jid, frame)
        acceleration = pin.getClassicalAcceleration(pm, pd, jid, frame)
        placement = pd.oMi[jid]
        return (
            placement.rotation.copy(),
            placement.translation.copy(),
            velocity.linear.copy(),
            velocity.angular.copy(),
            acceleration.linear.copy(),
            acceleration.angular.copy(),
        )

    for q, v, vd in _states():
        pin.forwardKinematics(pm, pd, q, v, vd)
        expected = []
        for c, b in GROUPS[group]:
            _, pc, vc, wc, ac, alc = world(c)
            rb, pb, vb, wb, ab, alb = world(b)
            r, dr, ddr = pc - pb, vc - vb, ac - ab
            expected.append(
                [
                    rb.T @ (dr - np.cross(wb, r)),
                    rb.T @ (wc - wb),
                    rb.T @ (ddr - np.cross(alb, r) - 2 * np.cross(wb, dr) + np.cross(wb, np.cross(wb, r))),
                    rb.T @ (alc - alb - np.cross(wb, wc - wb)),
                ]
            )
        _check(group, q, expected, v, vd, TOL)


@pytest.mark.parametrize("group", GROUP_PARAMS)
def test_against_finite_differences_along_the_manifold(group):
    h = FD_STEP
    ts = jnp.array([-2 * h, -h, 0.0, h, 2 * h])
    first = np.array([1, -8, 0, 8, -1]) / (12 * h)  # fourth-order central stencils
    second = np.array([-1, 16, -30, 16, -1]) / (12 * h**2)
    for q, v, vd in _states(seed=1):
        poses = _poses_along(q, v, vd, ts, GROUPS[group])
        expected = []
        for rotations, origins in poses:
            rotations, origins = np.asarray(rotations), np.asarray(origins)
            rotation = rotations[2]
            d_rotation = np.tensordot(first, rotations, 1)
            dd_rotation = np.tensordot(second, rotations, 1)
            expected.append(
                [
                    first @ origins,
                    vee(d_rotation @ rotation.T),
                    second @ origins,
                    vee(dd_rotation @ rotation.T),
                ]
            )
        _check(group, q, expected, v, vd, FD_TOL)


def test_bad_input():
    with pytest.raises(ValueError, match=r"q must have shape \(18,\) for this model with nq = 18, nv = 15"):
        kj.relative_motion(MODEL, jnp.zeros(MODEL.nv), 3, 5)
    with pytest.raises(ValueError, match="frame must be 'reference' or 'moving'"):
        kj.relative_motion(MODEL, kj.neutral(MODEL), 3, 5, "world")


@pytest.mark.extended  # test_against_pinocchio
@pytest.mark.slow
def test_compose_holds_along_the_tangent_space():
    """``compose`` of base -> b1 and b1 -> b3 equals base -> b3 (Hessians in their symmetric part,
    which the quadratic form ``H (v ⊗ v)`` fixes), both ways of expressing them."""

    @jit_once
    def composed(q):
        out = {}
        for expressed_in in ("reference", "moving"):
            ab, bc, ac = (kj.relative_motion(MODEL, q, c, b, expressed_in) for c, b in ((1, None), (3, 1), (3, None)))
            out[expressed_in] = (kj.compose(ab, bc), ac)
        return out

    for q, _, _ in _states(seed=2):
        for expressed_in, (got, expected) in composed(q).items():
            for key in ("rotation", "origin", "J_T", "J_R", "H_T", "H_R"):
                g, e = getattr(got, key), getattr(expected, key)
                if key.startswith("H"):
                    g, e = kj.calculus.symmetrize(g), kj.calculus.symmetrize(e)
                assert relative_error(g, e) < TOL, (expressed_in, key)
