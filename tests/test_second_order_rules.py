"""JAX's second derivatives through ``kj.inverse_dynamics`` and ``kj.forward_dynamics`` (issue 41,
item 4): their analytic rules transpose into a function whose derivative is the λ-contracted
Hessian (:mod:`kronjax.dynamics._rules`), so that ``jax.hessian``, ``jax.jacrev`` twice,
``jax.jacfwd`` twice and ``jax.jvp`` of ``jax.grad`` of a loss stay analytic.

Oracle: the same loss through the plain recursion (Newton-Euler with ``derivatives="autodiff"``;
for forward dynamics ``M^-1 (tau - h)`` with ``M`` and ``h`` from it, not the articulated-body
algorithm, whose third derivatives compile for two minutes in 8-10 GB), differentiated by JAX
alone. The loss is not linear in the dynamics' output, moves ``q`` along the tangent chart (``q ⊕ x_q``) and is batched two ways:
``vmap`` of the second derivative, and a sum over states inside the loss.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import mixed_model, random_tree, relative_error

import kronjax as kj
from kronjax.dynamics import _aba_derivatives, _rnea_hessian

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

SLOW = pytest.mark.slow  # the plain recursions' second derivatives compile for about a minute
MODELS = {
    "panda": kj.models.panda,
    "every_joint_kind": mixed_model,
    "spherical_root": lambda: random_tree([dict(kind="spherical", parent=-1), ("R", 0)], seed=3),
    "floating_mimic": lambda: kj.load_urdf(Path(__file__).parent / "data" / "mimic_hand.urdf", floating_base=True),
}


def dynamics(model, q, v, x, which: str, plain: bool):
    """``tau(q, v, vd = x)`` or ``vd(q, v, tau = 10 x)``, by the rules or by the plain Newton-Euler
    recursion (forward dynamics as ``M^-1 (tau - h)``, ``M``'s columns its derivative in ``vd``)."""
    if which == "inverse":
        return kj.inverse_dynamics(model, q, v, x, derivatives="autodiff" if plain else "analytic")
    if not plain:
        return kj.forward_dynamics(model, q, v, 10 * x)

    def tau(vd):
        return kj.inverse_dynamics(model, q, v, vd, derivatives="autodiff")

    zero = jnp.zeros_like(v)
    return jnp.linalg.solve(jax.jacfwd(tau)(zero), 10 * x - tau(zero))


def loss(x, q, lam, model, which, plain=False):
    n = model.nv
    y = dynamics(model, kj.integrate(model, q, x[:n]), x[n : 2 * n], x[2 * n :], which, plain)
    return lam @ y + 0.1 * jnp.sum(y**2) * jnp.sin(x[n])


def states(model, count: int = 3):
    keys = jax.random.split(jax.random.key(5), count)
    q = jax.vmap(lambda k: kj.random_configuration(model, k))(keys)
    v, a, lam = (jnp.asarray(x) for x in np.random.default_rng(5).normal(size=(3, count, model.nv)))
    return jnp.concatenate([jnp.zeros_like(v), v, a], axis=1), q, lam


@pytest.mark.parametrize(
    "name, which",
    [
        ("panda", "inverse"),
        pytest.param("panda", "forward", marks=SLOW),
        pytest.param("spherical_root", "forward", marks=SLOW),
        pytest.param("every_joint_kind", "inverse", marks=SLOW),
    ],
)
def test_second_derivatives_through_the_dynamics(name, which):
    """Every way of taking a second derivative (on the Panda; ``jax.hessian`` and ``jax.jvp`` of
    ``jax.grad`` on the tree with every joint kind), against the plain recursions': inverse
    dynamics to 1e-12 (measured 3e-16 to 2e-15), forward dynamics to 1e-10 (measured 3e-14 on the
    Panda; through ``M^-1`` and the chain rule's products)."""
    model = MODELS[name]()
    x, q, lam = states(model)
    f = functools.partial(loss, model=model, which=which)
    tol = 1e-12 if which == "inverse" else 1e-10
    reference = jax.jit(jax.vmap(jax.hessian(functools.partial(f, plain=True))))(x, q, lam)
    ways = {"jax.hessian": jax.hessian(f)}
    if name == "panda":  # the other ways compile for minutes on the tree with every joint kind
        ways["jacrev(jacrev)"] = jax.jacrev(jax.jacrev(f))
    for way, hessian in ways.items():
        assert relative_error(jax.jit(jax.vmap(hessian))(x, q, lam), reference) <= tol, way
    direction = jnp.asarray(np.random.default_rng(1).normal(size=x.shape))
    along = jax.jit(jax.vmap(lambda x, t, q, lam: jax.jvp(lambda x: jax.grad(f)(x, q, lam), (x,), (t,))[1]))
    assert relative_error(along(x, direction, q, lam), jnp.einsum("bij,bj->bi", reference, direction)) <= tol

    if name != "panda":
        return

    def summed(x):  # the dynamics under vmap inside the loss, as in a trajectory's cost
        return jnp.sum(jax.vmap(f)(x, q, lam))

    whole = jax.jit(jax.hessian(summed))(x)  # (state, entry, state, entry)
    assert relative_error(jnp.einsum("aiaj->aij", whole), reference) <= tol


@pytest.mark.extended  # 7 s of compilation; forward over forward does not use the contracted Hessian
def test_forward_over_forward_second_derivatives_of_the_inverse_dynamics():
    """``jacfwd(jacfwd)`` through the inverse dynamics of the Panda (the rules' derivative of their
    own forward-mode rule), against the plain recursion's Hessian to 1e-12."""
    model = MODELS["panda"]()
    x, q, lam = states(model)
    f = functools.partial(loss, model=model, which="inverse")
    reference = jax.jit(jax.vmap(jax.hessian(functools.partial(f, plain=True))))(x, q, lam)
    assert relative_error(jax.jit(jax.vmap(jax.jacfwd(jax.jacfwd(f))))(x, q, lam), reference) <= 1e-12


@pytest.mark.slow  # 17 s of compilation for the inverse dynamics alone; `make test` keeps its 12 minutes
@pytest.mark.parametrize("which", ["inverse", "forward"])
def test_hessians_in_part_of_the_state(which):
    """``jax.hessian`` in a part of the state only (the others constant: their tangents are
    symbolic zeros, which the rule skips block by block) is that block of the whole Hessian of
    the plain recursions, on a tree with a spherical root (the configuration's tangent map). The
    whole Hessian (every part moving) is test_second_derivatives_through_the_dynamics."""
    model = MODELS["spherical_root"]()
    x, q, lam = states(model)
    n = model.nv
    reference = jax.jit(jax.vmap(jax.hessian(functools.partial(loss, model=model, which=which, plain=True))))(x, q, lam)
    q_, v_, vd_ = np.arange(n), np.arange(n, 2 * n), np.arange(2 * n, 3 * n)
    # each branch of the rule once (v alone; q and vd together, with the blocks that mix them)
    parts = {"v": v_, "q, vd": np.r_[q_, vd_]}
    for part, block in parts.items():

        def f(y, x, q, lam, block=block):
            return loss(x.at[block].set(y), q, lam, model, which)

        ours = jax.jit(jax.vmap(lambda x, q, lam, f=f, block=block: jax.hessian(f)(x[block], x, q, lam)))(x, q, lam)
        assert relative_error(ours, reference[:, block[:, None], block]) <= 1e-10, part


@pytest.mark.parametrize("which", ["inverse", "forward"])
def test_the_second_derivatives_are_the_contracted_hessian(which, monkeypatch):
    """``jax.hessian`` of the loss calls the λ-contracted Hessian (so it never forms the tensors),
    ``jax.jacfwd`` twice does not."""
    module, name = (_rnea_hessian, "rnea_hessian") if which == "inverse" else (_aba_derivatives, "aba_hessian")
    calls = []
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    model = kj.models.double_pendulum()
    x, q, lam = states(model, 1)
    f = functools.partial(loss, model=model, which=which)
    jax.make_jaxpr(jax.hessian(f))(x[0], q[0], lam[0])
    assert calls
    calls.clear()
    jax.make_jaxpr(jax.jacfwd(jax.jacfwd(f)))(x[0], q[0], lam[0])
    assert not calls


@pytest.mark.parametrize("which", ["inverse", pytest.param("forward", marks=SLOW)])
def test_float32(which):
    """A float32 model and state: ``jax.hessian`` of the loss stays float32 and near the float64
    plain recursions' (relative to the largest entry): inverse dynamics within 1e-5 (measured
    4e-7, as the plain recursion's own float32), forward dynamics within 1e-4 (measured 5e-6 to
    1.3e-5, against 4e-7 for the articulated-body algorithm differentiated by JAX: the rules go
    through ``M^-1`` and the chain rule's products)."""
    model = kj.models.panda()
    x, q, lam = (a[0] for a in states(model, 1))
    f = functools.partial(loss, which=which)
    reference = jax.hessian(f)(x, q, lam, model, plain=True)
    ours = jax.hessian(f)(*(a.astype(jnp.float32) for a in (x, q, lam)), model.astype(jnp.float32))
    assert ours.dtype == jnp.float32
    assert relative_error(ours, reference) <= (1e-5 if which == "inverse" else 1e-4)
