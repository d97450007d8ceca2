"""All-bodies Jacobians, Hessians and Jacobian time derivatives (``kj.jacobians``, ``kj.hessians``,
``kj.jacobians_dot``).

Pinocchio checks them body by body in test_pinocchio_kinematics.py (and Robotics Toolbox the
D-H arms, through the per-body functions, in test_rtb_kinematics.py). Here: the analytic path of
trees (closed forms from the joint axes, :mod:`kronjax.kinematics._tree`) against a different
algorithm, ``jax.jacfwd`` of the forward kinematics (``method="autodiff"``), to 1e-12, on a tree
with every feature the closed forms distinguish (see :func:`tree`); the time derivative against
``jax.jvp`` of the Jacobians; float32; batches; bad input.

XLA compilation dominates the runtime: all quantities are computed by one compiled function per
method, for one state and called on each (an unbatched program compiles faster than its ``vmap``;
batches: :func:`test_float32_batches`), and the oracles (``method="autodiff"``, ``jax.jvp``), which run once
on a few states, are compiled at the lowest backend optimisation level.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from checks import EXACT_TOL
from oracles import jit_once, random_inertia, random_rotation

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N_STATES = 3


@functools.cache
def tree():
    """10 bodies, 6 coordinates: revolute and prismatic joints, two bodies on the base (0 and 7),
    branches (body 1: 2 and 6; body 3: 4 and 5), two fixed joints in a row (2, 3) followed by a
    moving child (4) and by a fixed branch beside it (5), a fixed leaf (9); rotated joint frames,
    random axes and centres of mass (the ``"com"`` points)."""
    rng = np.random.default_rng(3)
    spec = [("R", -1), ("P", 0), ("F", 1), ("F", 2), ("R", 3), ("F", 3), ("R", 1), ("P", -1), ("R", 7), ("F", 8)]
    joints = [
        kj.Joint(kind, parent, tuple(rng.normal(size=3)), rotation=random_rotation(rng), translation=rng.uniform(-0.3, 0.3, 3))
        for kind, parent in spec
    ]
    inertials = [kj.Inertial(rng.uniform(0.5, 3.0), com=rng.uniform(-0.15, 0.15, 3), inertia=random_inertia(rng)) for _ in spec]
    return kj.from_joints(joints, inertials)


def states(model, seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.uniform(-2, 2, (N_STATES, model.nv))), jnp.asarray(rng.normal(size=(N_STATES, model.nv)))


def each(compiled, *batches):
    """``compiled`` at each row of ``batches``, its outputs stacked (numpy arrays)."""
    rows = zip(*(np.asarray(b) for b in batches))
    return jax.tree.map(lambda *x: np.stack(x), *(compiled(*row) for row in rows))


def body_points(model, seed=1):
    return jnp.asarray(np.random.default_rng(seed).uniform(-0.3, 0.3, (model.n_bodies, 3)))


@functools.cache
def all_quantities(method: str):
    """Every frame and point choice of the three functions, and the poses, at the states, one
    compiled function (``"autodiff"``: an oracle, compiled as one)."""
    model = tree()
    points = body_points(model)

    def one(q, qd):
        out = {}
        for frame in ("base", "body"):
            for pts_name, pts in (("origin", None), ("points", points)):
                out[f"J {frame} {pts_name}"] = kj.jacobians(model, q, frame, pts, method)
            for pts_name, pts in (("origin", None), ("com", "com")):
                out[f"Jd {frame} {pts_name}"] = kj.jacobians_dot(model, q, qd, frame, pts, method)
        out["H base origin"] = kj.hessians(model, q, "base", None, method)
        for frame in ("base", "body", "body*"):
            out[f"H {frame} points"] = kj.hessians(model, q, frame, points, method)
        out["H body origin"] = kj.hessians(model, q, "body", None, method)
        return out

    compile = jax.jit if method == "analytic" else jit_once
    return each(compile(lambda q, qd: (one(q, qd), kj.forward_kinematics(model, q))), *states(model))


@pytest.mark.slow
def test_analytic_equals_autodiff():
    (analytic, _), (autodiff, _) = all_quantities("analytic"), all_quantities("autodiff")
    model = tree()
    n, nb = model.nv, model.n_bodies
    for key, (translational, rotational) in analytic.items():
        width = n * n if key.startswith("H") else n
        assert translational.shape == rotational.shape == (N_STATES, nb, 3, width), key
        for what, a, b in zip(("T", "R"), (translational, rotational), autodiff[key]):
            err = float(jnp.max(jnp.abs(a - b)))
            assert err < EXACT_TOL, f"{key} {what}: {err:.2e}"


def test_fixed_links_are_frames_of_their_parent():
    """A body on a fixed joint moves with its parent: no column of its own, and its origin's
    Jacobian is the parent's Jacobian of that point, ``J_T[parent] - [d x] J_R[parent]`` with
    ``d`` the offset of the origin from the parent's, at every state."""
    model = tree()
    kinds, parents = model.kinematics.kinds, model.kinematics.parents
    fixed = [b for b, kind in enumerate(kinds) if kind == "F" and parents[b] >= 0]
    assert fixed
    quantities, (_, origins) = all_quantities("analytic")
    jt, jr = (np.asarray(x) for x in quantities["J base origin"])
    for b in fixed:
        p = parents[b]
        d = np.asarray(origins[:, b] - origins[:, p])
        expected = jt[:, p] - np.cross(d[:, :, None], jr[:, p], axis=1)
        np.testing.assert_allclose(jt[:, b], expected, atol=EXACT_TOL, err_msg=str(b))
        np.testing.assert_allclose(jr[:, b], jr[:, p], atol=EXACT_TOL, err_msg=str(b))


def test_jacobians_dot_is_time_derivative():
    """``dJ/dt`` is ``jax.jvp`` of the Jacobians along ``qd``, and ``H (E_n ⊗ qd)`` (Tuan 8)."""
    model = tree()
    qs, qds = states(model)
    n = model.nv
    out, _ = all_quantities("analytic")

    def jvps(q, qd):
        return [jax.jvp(lambda q: kj.jacobians(model, q, frame), (q,), (qd,))[1] for frame in ("base", "body")]

    for frame, jvp in zip(("base", "body"), each(jit_once(jvps), qs, qds)):
        for a, b, h in zip(out[f"Jd {frame} origin"], jvp, out[f"H {frame} origin"]):
            assert float(jnp.max(jnp.abs(a - b))) < EXACT_TOL
            # Khang's (8): H (E_n ⊗ qd), entry (p, j) = sum_k H[p, j n + k] qd_k
            contracted = jnp.einsum("sbpjk,sk->sbpj", h.reshape(*h.shape[:3], n, n), qds)
            assert float(jnp.max(jnp.abs(a - contracted))) < EXACT_TOL


def test_float32_batches():
    """float32 model and states, under jit(vmap(.)): float32 out, within 1e-4 (relative to the
    largest entry) of float64 at each state (:func:`all_quantities`)."""
    model = tree()
    qs, qds = states(model)
    points = body_points(model)
    out64, _ = all_quantities("analytic")

    @jax.jit
    @functools.partial(jax.vmap, in_axes=(None, 0, 0, None))
    def batched(model, q, qd, points):
        return {
            "J body points": kj.jacobians(model, q, "body", points),
            "H body* points": kj.hessians(model, q, "body*", points),
            "Jd base com": kj.jacobians_dot(model, q, qd, "base", "com"),
        }

    out32 = batched(model.astype(jnp.float32), *(x.astype(jnp.float32) for x in (qs, qds, points)))
    for key, value in out32.items():
        for a, b in zip(value, out64[key]):
            assert a.dtype == jnp.float32 and a.shape == b.shape, key
            for s in range(N_STATES):
                assert float(jnp.max(jnp.abs(a[s] - b[s]))) <= 1e-4 * float(jnp.max(jnp.abs(b[s]))), (key, s)


def test_bad_input():
    model = tree()
    q = jnp.zeros(model.nv)
    with pytest.raises(ValueError, match="frame"):
        kj.jacobians(model, q, "world")
    with pytest.raises(ValueError, match="frame"):
        kj.jacobians_dot(model, q, q, "body*")
    with pytest.raises(ValueError, match=r"points must have shape \(10, 3\)"):
        kj.hessians(model, q, points=jnp.zeros(3))
    with pytest.raises(ValueError, match="points must be None, 'com'"):
        kj.jacobians(model, q, points="centre")
    with pytest.raises(ValueError, match="method"):
        kj.jacobians(model, q, method="symbolic")
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        kj.hessians(model, jnp.zeros(7))
    with pytest.raises(ValueError, match="v must have shape"):
        kj.jacobians_dot(model, q, jnp.zeros(3))
    function_model = kj.from_function(lambda q: model.poses(q), model.nv)
    with pytest.raises(ValueError, match="method='analytic' needs a Tree model"):
        kj.jacobians(function_model, q, method="analytic")
    with pytest.raises(ValueError, match="points='com' needs a model with inertials"):
        kj.jacobians(function_model, q, points="com")
