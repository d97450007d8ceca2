"""All-bodies Jacobians, Hessians and Jacobian time derivatives (``kj.jacobians``, ``kj.hessians``,
``kj.jacobians_dot``).

Pinocchio checks them body by body in test_pinocchio_kinematics.py (and Robotics Toolbox the
D-H arms, through the per-body functions, in test_rtb_kinematics.py). Here: the analytic path of
trees (closed forms from the joint axes, :mod:`kronjax._jacobians`) against a different
algorithm, ``jax.jacfwd`` of the forward kinematics (``method="autodiff"``), to 1e-12, on trees
with prismatic and fixed joints (a URDF kept with its fixed links) and branches; the time
derivative against ``jax.jvp`` of the Jacobians; float32; batches; bad input.
"""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from oracles import random_arm

DATA = Path(__file__).parent / "data"
TOL = 1e-12
N_STATES = 3


@functools.cache
def models():
    return {
        "tree": random_arm(3, parents=(-1, 0, 1, 1, 3, 0, 5), prismatic=(2, 5)),
        "fixed_links": kj.load_urdf(DATA / "fixed_offsets.urdf", merge_fixed=False),
    }


def states(model, seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.uniform(-2, 2, (N_STATES, model.n_dof))), jnp.asarray(rng.normal(size=(N_STATES, model.n_dof)))


def body_points(model, seed=1):
    return jnp.asarray(np.random.default_rng(seed).uniform(-0.3, 0.3, (model.n_bodies, 3)))


@functools.cache
def all_quantities(name: str, method: str):
    """Every frame and point choice of the three functions at the states, one compiled function."""
    model = models()[name]
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

    return jax.jit(jax.vmap(one))(*states(model))


@pytest.mark.parametrize("name", ["tree", "fixed_links"])
def test_analytic_equals_autodiff(name):
    analytic, autodiff = all_quantities(name, "analytic"), all_quantities(name, "autodiff")
    model = models()[name]
    n, nb = model.n_dof, model.n_bodies
    for key, (translational, rotational) in analytic.items():
        width = n * n if key.startswith("H") else n
        assert translational.shape == rotational.shape == (N_STATES, nb, 3, width), key
        for what, a, b in zip(("T", "R"), (translational, rotational), autodiff[key]):
            err = float(jnp.max(jnp.abs(a - b)))
            assert err < TOL, f"{name} {key} {what}: {err:.2e}"


def test_fixed_links_are_frames_of_their_parent():
    """A body on a fixed joint moves with its parent: no column of its own, and its origin's
    Jacobian is the parent's Jacobian of that point."""
    model = models()["fixed_links"]
    kinds, parents = model.kinematics.kinds, model.kinematics.parents
    fixed = [b for b, kind in enumerate(kinds) if kind == "F" and parents[b] >= 0]
    assert fixed

    @jax.jit
    def check(q):
        rotations, origins = kj.forward_kinematics(model, q)
        # each fixed body's origin as a point on its parent, in the parent's frame
        on_parent = [kj.translational_jacobian(model, q, parents[b], rotations[parents[b]].T @ (origins[b] - origins[parents[b]]))
                     for b in fixed]
        return kj.jacobians(model, q), on_parent

    (jt, jr), on_parent = check(states(model)[0][0])
    for b, expected in zip(fixed, on_parent):
        np.testing.assert_allclose(jt[b], expected, atol=TOL)
        np.testing.assert_allclose(jr[b], jr[parents[b]], atol=TOL)


@pytest.mark.parametrize("name", ["tree", "fixed_links"])
def test_jacobians_dot_is_time_derivative(name):
    """``dJ/dt`` is ``jax.jvp`` of the Jacobians along ``qd``, and ``H (E_n ⊗ qd)`` (Tuan 8)."""
    model = models()[name]
    qs, qds = states(model)
    n = model.n_dof
    out = all_quantities(name, "analytic")
    for frame in ("base", "body"):
        jvp = jax.vmap(lambda q, qd, f=frame: jax.jvp(lambda q: kj.jacobians(model, q, f), (q,), (qd,))[1])
        for a, b, h in zip(out[f"Jd {frame} origin"], jax.jit(jvp)(qs, qds), out[f"H {frame} origin"]):
            assert float(jnp.max(jnp.abs(a - b))) < TOL
            # Khang's (8): H (E_n ⊗ qd), entry (p, j) = sum_k H[p, j n + k] qd_k
            contracted = jnp.einsum("sbpjk,sk->sbpj", h.reshape(*h.shape[:3], n, n), qds)
            assert float(jnp.max(jnp.abs(a - contracted))) < TOL


def test_float32():
    """float32 model and state: within 1e-4 (relative to the largest entry) of float64."""
    model = models()["tree"]
    q, qd = (x[0] for x in states(model))
    model32 = model.astype(jnp.float32)
    for fn in (lambda m, q: kj.jacobians(m, q, "body", "com"), lambda m, q: kj.hessians(m, q, "body*"),
               lambda m, q: kj.jacobians_dot(m, q, qd.astype(q.dtype))):
        for a, b in zip(fn(model32, q.astype(jnp.float32)), fn(model, q)):
            assert a.dtype == jnp.float32
            assert float(jnp.max(jnp.abs(a - b))) <= 1e-4 * float(jnp.max(jnp.abs(b)))


def test_bad_input():
    model = models()["tree"]
    q = jnp.zeros(model.n_dof)
    with pytest.raises(ValueError, match="frame"):
        kj.jacobians(model, q, "world")
    with pytest.raises(ValueError, match="frame"):
        kj.jacobians_dot(model, q, q, "body*")
    with pytest.raises(ValueError, match=r"points must have shape \(7, 3\)"):
        kj.hessians(model, q, points=jnp.zeros(3))
    with pytest.raises(ValueError, match="points must be None, 'com'"):
        kj.jacobians(model, q, points="centre")
    with pytest.raises(ValueError, match="method"):
        kj.jacobians(model, q, method="symbolic")
    with pytest.raises(ValueError, match=r"q must have shape \(7,\)"):
        kj.hessians(model, jnp.zeros(6))
    with pytest.raises(ValueError, match=r"qd must have shape"):
        kj.jacobians_dot(model, q, jnp.zeros(3))
    function_model = kj.from_function(lambda q: model.poses(q), model.n_dof)
    with pytest.raises(ValueError, match="method='analytic' needs a Tree model"):
        kj.jacobians(function_model, q, method="analytic")
    with pytest.raises(ValueError, match="points='com' needs a model with inertials"):
        kj.jacobians(function_model, q, points="com")
