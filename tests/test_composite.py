"""M, dM/dq, C* and g from composite rigid bodies (kronjax._composite, the default for trees)
against the papers' Jacobian/Hessian assembly and against autodiff of M."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import random_arm, relative_error

import kronjax as kj

MODELS = {
    "serial, one prismatic": lambda: random_arm(0),
    "branched tree": lambda: random_arm(1, parents=(-1, 0, 1, 0, 3, 1, 5), prismatic=(2, 4)),
    "D-H with a fixed body": lambda: kj.from_dh(
        [("R", 0.1, 0.2, 0.3, 0.5), ("F", 0.2, 0.1, 0.1, 0.3), ("P", 0.1, 0.2, 0.3, -0.4), ("R", 0.1, 0.1, 0.2, 0.9)],
        "modified",
        [kj.Inertial(1.0 + i, com=(0.1 * i, 0.05, -0.02), inertia=(0.1, 0.2, 0.25)) for i in range(4)],
    ),
    "puma560": kj.models.puma560,
}


def _all(model, q, method):
    return (
        kj.mass_matrix(model, q, method=method),
        kj.mass_matrix_derivative(model, q, method=method),
        kj.coriolis_star(model, q, method=method),
        kj.gravity(model, q) if method == "composite" else _gravity_from_jacobians(model, q),
    )


def _gravity_from_jacobians(model, q):
    """g = -sum m J_TG^T g0 from the bodies' centre-of-mass Jacobians (Truc 45)."""
    ine = model.inertials
    jt = jnp.stack([kj.translational_jacobian(model, q, b, point="com") for b in range(model.n_bodies)])
    return -jnp.einsum("b,bpi,p->i", ine.mass, jt, model.gravity)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_composite_equals_the_papers_assembly(name):
    model = MODELS[name]()
    composite = jax.jit(lambda q: _all(model, q, "composite"))
    papers = jax.jit(lambda q: _all(model, q, "jacobians"))
    for q in np.random.default_rng(0).uniform(-1.5, 1.5, (5, model.n_dof)):
        for got, expected in zip(composite(q), papers(q)):
            assert relative_error(got, expected) < 1e-12


@pytest.mark.parametrize("unrolled", [True, False])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_composite_mass_matrix_derivative_equals_autodiff_of_mass_matrix(name, unrolled, monkeypatch):
    """Both assemblies of dM/dq and C*: unrolled columns (n <= UNROLLED_COLUMNS) and the loop."""
    if not unrolled:
        monkeypatch.setattr(kj._composite, "UNROLLED_COLUMNS", 1)
    model = MODELS[name]()
    n = model.n_dof
    derivative = jax.jit(lambda q: kj.mass_matrix_derivative(model, q))
    autodiff = jax.jit(lambda q: jax.jacfwd(lambda q: kj.mass_matrix(model, q, method="jacobians"))(q).reshape(n, n * n))
    c_star = jax.jit(lambda q: kj.coriolis_star(model, q))
    for q in np.random.default_rng(1).uniform(-1.5, 1.5, (3, model.n_dof)):
        d = autodiff(q)
        assert relative_error(derivative(q), d) < 1e-12
        # C* (Tuan 101): dM[i, j]/dq_k - dM[k, j]/dq_i / 2
        d3 = np.asarray(d).reshape(n, n, n)
        assert relative_error(c_star(q), (d3 - 0.5 * d3.transpose(2, 1, 0)).reshape(n, n * n)) < 1e-12


def test_composite_in_float32():
    model = random_arm(2)
    q = np.random.default_rng(3).uniform(-1, 1, model.n_dof)
    got = kj.coriolis_star(model.astype(jnp.float32), q.astype(np.float32))
    assert got.dtype == jnp.float32
    assert relative_error(got, kj.coriolis_star(model, q, method="jacobians")) < 1e-4


def test_method_errors():
    model = kj.from_function(lambda q: (jnp.eye(3)[None], jnp.stack([q[0], 0.0, 0.0])[None]), 1, [kj.Inertial(1.0)])
    with pytest.raises(ValueError, match="method='composite' needs a Tree model"):
        kj.coriolis_star(model, jnp.zeros(1), method="composite")
    assert kj.mass_matrix(model, jnp.zeros(1))[0, 0] == 1.0  # auto: the Jacobians
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        kj.mass_matrix(random_arm(0), jnp.zeros(7), method="fast")
