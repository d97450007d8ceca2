"""M, dM/dq, C* and g from composite rigid bodies (kronjax.dynamics._crba, the default for trees)
against the papers' Jacobian/Hessian assembly and against autodiff of M."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import random_arm, relative_error

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

# Each model costs a few compilations (most of this file's time): a random tree with prismatic
# joints, a serial D-H chain with a fixed body and a standard D-H arm cover the cases.
MODELS = {
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


# Nearly all the time of these tests is XLA compilation: each model's programs are compiled once
# and shared by the tests below (the oracles with XLA's backend optimisations off, which compiles
# them about 3x faster; they run a few times).


@functools.cache
def _model(name):
    return MODELS[name]()


@functools.cache
def _oracles(name):
    """q -> (M, dM/dq, C*, g by the papers' Jacobian/Hessian assembly, dM/dq by forward-mode
    autodiff of M from the Jacobians)."""
    model = _model(name)
    n = model.nv

    def oracles(q):
        autodiff = jax.jacfwd(lambda q: kj.mass_matrix(model, q, method="jacobians"))(q).reshape(n, n * n)
        return _all(model, q, "jacobians"), autodiff

    return jax.jit(oracles, compiler_options={"xla_backend_optimization_level": 0})


@functools.cache
def _composite(name, unrolled):
    """q -> (M, dM/dq, C*, g) from composite rigid bodies, or only (dM/dq, C*) for the loop
    assembly (``unrolled=False``, traced on its first call, under the test's monkeypatch of
    ``kronjax.dynamics._crba.UNROLLED_COLUMNS``)."""
    model = _model(name)
    if unrolled:
        return jax.jit(lambda q: _all(model, q, "composite"))
    return jax.jit(
        lambda q: (kj.mass_matrix_derivative(model, q, method="composite"), kj.coriolis_star(model, q, method="composite"))
    )


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.slow, pytest.mark.extended])
        if name == "branched tree"
        else name  # the other models
        for name in sorted(MODELS)
    ],
)
def test_composite_equals_the_papers_assembly(name):
    composite, papers = _composite(name, True), _oracles(name)
    for q in np.random.default_rng(0).uniform(-1.5, 1.5, (5, _model(name).nv)):
        for got, expected in zip(composite(q), papers(q)[0]):
            assert relative_error(got, expected) < 1e-12


@pytest.mark.parametrize(
    ("name", "unrolled"),
    [
        pytest.param(
            name,
            unrolled,
            id=f"{name}-{unrolled}",
            marks=[pytest.mark.slow] if (name, unrolled) == ("branched tree", True) else [],
        )
        for unrolled in (True, False)
        for name in sorted(MODELS)
    ],
)
def test_composite_mass_matrix_derivative_equals_autodiff_of_mass_matrix(name, unrolled, monkeypatch):
    """Both assemblies of dM/dq and C*: unrolled columns (n <= UNROLLED_COLUMNS) and the loop."""
    if not unrolled:
        monkeypatch.setattr(kj.dynamics._crba, "UNROLLED_COLUMNS", 1)
    n = _model(name).nv
    composite = _composite(name, unrolled)
    for q in np.random.default_rng(1).uniform(-1.5, 1.5, (3, n)):
        derivative, c_star = composite(q)[1:3] if unrolled else composite(q)
        d = _oracles(name)(q)[1]
        assert relative_error(derivative, d) < 1e-12
        # C* (Tuan 101): dM[i, j]/dq_k - dM[k, j]/dq_i / 2
        d3 = np.asarray(d).reshape(n, n, n)
        assert relative_error(c_star, (d3 - 0.5 * d3.transpose(2, 1, 0)).reshape(n, n * n)) < 1e-12


def test_composite_in_float32():
    name = "branched tree"
    model32 = _model(name).astype(jnp.float32)
    q = np.random.default_rng(3).uniform(-1, 1, model32.nv)
    got = jax.jit(lambda q: kj.coriolis_star(model32, q))(q.astype(np.float32))
    assert got.dtype == jnp.float32
    assert relative_error(got, _oracles(name)(q)[0][2]) < 1e-4  # the papers' C* in float64


def test_method_errors():
    model = kj.from_function(lambda q: (jnp.eye(3)[None], jnp.stack([q[0], 0.0, 0.0])[None]), 1, [kj.Inertial(1.0)])
    with pytest.raises(ValueError, match="method='composite' needs a Tree model"):
        kj.coriolis_star(model, jnp.zeros(1), method="composite")
    assert kj.mass_matrix(model, jnp.zeros(1))[0, 0] == 1.0  # auto: the Jacobians
    with pytest.raises(ValueError, match="unknown method 'fast'"):
        kj.mass_matrix(random_arm(0), jnp.zeros(7), method="fast")
