"""Second-order derivatives of inverse dynamics (issue 41): ``kj.inverse_dynamics_second_derivatives``
(IDSVA-SO on the composite bodies) and ``kj.inverse_dynamics_hessian``, 20 random states per model.

Oracles, each independent of the algorithm under test:

* JAX's own derivatives of the plain Newton-Euler recursion (``derivatives="autodiff"``, no
  analytic rule): the first derivative along the tangent chart ``(q ⊕ xi) ⊕ d`` differentiated
  again along ``q ⊕ xi`` (forward over forward), which is the tensors' definition, to 1e-10;
* central differences of Pinocchio's ``computeRNEADerivatives`` (its Python bindings) along
  ``pin.integrate``, to the differences' accuracy;
* the identities ``d2tau/dv2 = C* (I + K)`` (:func:`kj.coriolis_star`) and ``d2tau/dvd dq = dM/dq``
  (:func:`kj.mass_matrix_derivative`), to 1e-12.

Models: the Panda (serial), a branched tree with prismatic joints, a tree with every joint kind
(free-flyer root, spherical, planar, rotor inertias) and the Panda's hand on a free-flyer with its
second finger a mimic joint (tests/data/mimic_hand.urdf).
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, mixed_model, random_arm, relative_error, to_pinocchio

import kronjax as kj

pin = pytest.importorskip("pinocchio")

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = Path(__file__).parent / "data"
N_STATES = 20
TOL = 1e-10
H = 1e-5  # central differences of Pinocchio's first derivatives: error ~ H^2 * third derivatives
FD_TOL = 1e-7


MODELS = {
    "panda": kj.models.panda,
    "branched": lambda: random_arm(1, parents=(-1, 0, 1, 1, 3, 0, 5), prismatic=(2, 5)),
    "every_joint_kind": mixed_model,
    "floating_mimic": lambda: kj.load_urdf(DATA / "mimic_hand.urdf", floating_base=True),
}


@functools.cache
def model_and_states(name: str):
    model = MODELS[name]()
    keys = jax.random.split(jax.random.key(5), N_STATES)
    q = np.asarray(jax.vmap(lambda k: kj.random_configuration(model, k))(keys))
    rng = np.random.default_rng(5)
    v, a, lam = rng.normal(size=(3, N_STATES, model.nv))
    return model, (q, v, a, lam)


def as_tensors(x: np.ndarray) -> np.ndarray:
    """``(..., n, n^2)`` Khang layout as ``(..., n, n, n)``."""
    n = x.shape[-2]
    return x.reshape(*x.shape[:-1], n, n)


@functools.cache
def analytic(name: str, dtype=jnp.float64):
    model, (q, v, a, lam) = model_and_states(name)
    model = model.astype(dtype)

    @jax.jit
    @jax.vmap
    def f(q, v, a, lam):
        return kj.inverse_dynamics_second_derivatives(model, q, v, a), kj.inverse_dynamics_hessian(model, q, v, a, lam)

    second, hessian = f(*(jnp.asarray(x, dtype) for x in (q, v, a, lam)))
    return tuple(as_tensors(np.asarray(t)) for t in second), jax.tree.map(np.asarray, hessian)


@functools.cache
def analytic_forward(name: str):
    """The forward-dynamics tensors and Hessian at ``tau = a`` (the states' accelerations as forces)."""
    model, (q, v, tau, mu) = model_and_states(name)

    @jax.jit
    @jax.vmap
    def f(q, v, tau, mu):
        return kj.forward_dynamics_second_derivatives(model, q, v, tau), kj.forward_dynamics_hessian(model, q, v, tau, mu)

    second, hessian = f(*(jnp.asarray(x) for x in (q, v, tau, mu)))
    return tuple(as_tensors(np.asarray(t)) for t in second), jax.tree.map(np.asarray, hessian)


@functools.cache
def autodiff(name: str):
    """The four tensors by forward-over-forward differentiation of the plain recursion: the first
    derivatives ``d tau / d(d, v, a)`` of ``tau((q ⊕ xi) ⊕ d, v, a)`` at ``d = 0`` differentiated by
    ``(xi, v)`` at ``xi = 0``."""
    model, (q, v, a, _) = model_and_states(name)
    n = model.nv
    tau = functools.partial(kj.inverse_dynamics, model, derivatives="autodiff")

    def first(xi, v, q, a):
        base = kj.integrate(model, q, xi)
        return jax.jacfwd(lambda d, v, a: tau(kj.integrate(model, base, d), v, a), argnums=(0, 1, 2))(jnp.zeros(n), v, a)

    @jit_once
    @jax.vmap
    def f(q, v, a):
        (dq_xi, dq_v), (dv_xi, dv_v), (m_xi, _) = jax.jacfwd(first, argnums=(0, 1))(jnp.zeros(n), v, q, a)
        return dq_xi, dq_v, dv_v, m_xi

    return tuple(np.asarray(t) for t in f(*(jnp.asarray(x) for x in (q, v, a))))


def max_error(got, expected) -> float:
    return max(relative_error(g[s], e[s]) for g, e in zip(got, expected) for s in range(len(g)))


SLOW = pytest.mark.slow  # forward-over-forward autodiff compiles for 40-90 s on these


@pytest.mark.parametrize(
    "name", ["panda", *(pytest.param(name, marks=SLOW) for name in ("branched", "every_joint_kind", "floating_mimic"))]
)
def test_against_autodiff_of_the_recursion(name):
    ours, _ = analytic(name)
    error = max_error(ours, autodiff(name))
    print(f"\n{name}: relative error vs forward-over-forward autodiff of Newton-Euler {error:.1e}")
    assert error <= TOL, error


def _differences(first, pm, n, q, v, x):
    """Central differences of ``first(q, v, x) -> (d/dq, d/dv, third)`` along ``pin.integrate`` and
    ``v``: ``(d(d/dq)/dq, d(d/dq)/dv, d(d/dv)/dv, d(third)/dq)``, each ``[i, j, k]``."""
    dq_q, dq_v, dv_v, third_q = (np.zeros((n, n, n)) for _ in range(4))
    for k in range(n):
        step = H * np.eye(n)[k]
        plus_q, minus_q = first(pin.integrate(pm, q, step), v, x), first(pin.integrate(pm, q, -step), v, x)
        plus_v, minus_v = first(q, v + step, x), first(q, v - step, x)
        dq_q[..., k] = (plus_q[0] - minus_q[0]) / (2 * H)
        third_q[..., k] = (plus_q[2] - minus_q[2]) / (2 * H)
        dq_v[..., k] = (plus_v[0] - minus_v[0]) / (2 * H)
        dv_v[..., k] = (plus_v[1] - minus_v[1]) / (2 * H)
    return dq_q, dq_v, dv_v, third_q


@functools.cache
def pinocchio_forward_differences(name: str):
    """Central differences of Pinocchio's ``computeABADerivatives`` (``ddq_dq``, ``ddq_dv``,
    ``Minv``) at ``tau = a``, as :func:`pinocchio_differences`."""
    model, (qs, vs, taus, _) = model_and_states(name)
    pm = to_pinocchio(model)
    data = pm.createData()

    def first(q, v, tau):
        pin.computeABADerivatives(pm, data, q, v, tau)
        minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        return data.ddq_dq.copy(), data.ddq_dv.copy(), minv

    out = [_differences(first, pm, model.nv, q, v, tau) for q, v, tau in zip(qs, vs, taus)]
    return tuple(np.stack(t) for t in zip(*out))


@functools.cache
def pinocchio_differences(name: str):
    """Central differences of Pinocchio's ``computeRNEADerivatives`` (Python bindings) along
    ``pin.integrate`` (configuration) and ``v``, and of ``crba`` along ``pin.integrate``: ``(d2tau_dq2,
    d2tau_dqdv, d2tau_dv2, d2tau_dvddq)`` of each state, ``[i, j, k]``, in kronjax's coordinates."""
    model, (qs, vs, accs, _) = model_and_states(name)
    pm = to_pinocchio(model)
    data = pm.createData()

    def first(q, v, a):
        dq, dv, _ = pin.computeRNEADerivatives(pm, data, q, v, a)
        mass = pin.crba(pm, data, q)
        return np.array(dq), np.array(dv), np.triu(mass) + np.triu(mass, 1).T

    out = [_differences(first, pm, model.nv, q, v, a) for q, v, a in zip(qs, vs, accs)]
    return tuple(np.stack(t) for t in zip(*out))


@pytest.mark.parametrize("name", ["panda", "branched", "every_joint_kind"])
def test_against_pinocchio_differences(name):
    """Pinocchio's model of the same tree (tests/oracles.py ``to_pinocchio``; Pinocchio reads mimic
    joints as independent ones: the autodiff test checks the mimic hand)."""
    ours, _ = analytic(name)
    error = max_error(ours, pinocchio_differences(name))
    print(f"\n{name}: relative error vs central differences of computeRNEADerivatives {error:.1e}")
    assert error <= FD_TOL, error


@pytest.mark.parametrize("name", ["panda", pytest.param("every_joint_kind", marks=SLOW)])
def test_forward_dynamics_against_pinocchio_differences(name):
    """The chain rule through ``M^-1`` against central differences of Pinocchio's
    ``computeABADerivatives``; and ``forward_dynamics_hessian`` is ``μ`` contracted with them."""
    (qq, qv, vv, tq), (hessian, tau_q) = analytic_forward(name)
    error = max_error((qq, qv, vv, tq), pinocchio_forward_differences(name))
    print(f"\n{name}: forward dynamics, relative error vs central differences of computeABADerivatives {error:.1e}")
    assert error <= FD_TOL, error
    mu = model_and_states(name)[1][3]
    contract = lambda t: np.einsum("si,sijk->sjk", mu, t)  # noqa: E731
    block, mixed = contract(qq), contract(qv)
    expected = np.block([[(block + block.transpose(0, 2, 1)) / 2, mixed], [mixed.transpose(0, 2, 1), contract(vv)]])
    assert max_error([hessian, tau_q], [expected, contract(tq)]) <= 1e-13


@pytest.mark.parametrize("name", ["panda", "every_joint_kind", pytest.param("floating_mimic", marks=SLOW)])
def test_identities_with_coriolis_star_and_the_mass_matrix_derivative(name):
    """``d2tau/dv2 = C* (I + K)`` and ``d2tau/dvd dq = dM/dq``: ``tau`` is ``M vd + C* (v ⊗ v) + g``
    (Tuan 100), so its second derivative in ``v`` is ``C*`` with the pair of velocity indices
    symmetrised, and its mixed one in ``vd`` and ``q`` is ``dM/dq`` in Khang's layout (eq. 5)."""
    model, (q, *_) = model_and_states(name)
    ours, _ = analytic(name)

    @jax.jit
    @jax.vmap
    def terms(q):
        return kj.coriolis_star(model, q), kj.mass_matrix_derivative(model, q)

    c_star, dm = (as_tensors(np.asarray(x)) for x in terms(jnp.asarray(q)))
    errors = max_error([ours[2]], [c_star + c_star.transpose(0, 1, 3, 2)]), max_error([ours[3]], [dm])
    print(f"\n{name}: C* (I + K) {errors[0]:.1e}, dM/dq {errors[1]:.1e}")
    assert max(errors) <= 1e-12, errors


@pytest.mark.parametrize("name", ["panda", pytest.param("every_joint_kind", marks=SLOW)])
def test_hessian_of_the_weighted_forces(name):
    """``inverse_dynamics_hessian`` is ``λ`` contracted with the tensors, the ``(q, q)`` block
    symmetrised, and the Hessian of ``λ^T tau(q ⊕ xi, v, vd)`` by JAX's own derivatives."""
    model, (q, v, a, lam) = model_and_states(name)
    (qq, qv, vv, aq), (hessian, vd_q) = analytic(name)
    n = model.nv
    contract = lambda t: np.einsum("si,sijk->sjk", lam, t)  # noqa: E731
    block = contract(qq)
    expected = np.block([[(block + block.transpose(0, 2, 1)) / 2, contract(qv)], [contract(qv).transpose(0, 2, 1), contract(vv)]])
    assert max_error([hessian, vd_q], [expected, contract(aq)]) <= 1e-13

    def weighted(x, q, a, lam):
        return lam @ kj.inverse_dynamics(model, kj.integrate(model, q, x[:n]), x[n:], a, derivatives="autodiff")

    @jax.jit
    @jax.vmap
    def by_autodiff(q, v, a, lam):
        return jax.hessian(weighted)(jnp.concatenate([jnp.zeros(n), v]), q, a, lam)

    error = max_error([hessian], [np.asarray(by_autodiff(*(jnp.asarray(x) for x in (q, v, a, lam))))])
    print(f"\n{name}: inverse_dynamics_hessian vs jax.hessian {error:.1e}")
    assert error <= TOL, error


def test_float32():
    """float32 model and states against the float64 tensors: relative error <= 1e-5 (measured
    below 1e-6 on the tree with every joint kind)."""
    ours32, hessian32 = analytic("every_joint_kind", jnp.float32)
    ours64, hessian64 = analytic("every_joint_kind")
    assert all(t.dtype == np.float32 for t in ours32)
    error = max(max_error(ours32, ours64), max_error(hessian32, hessian64))
    print(f"\nfloat32: relative error {error:.1e}")
    assert error <= 1e-5, error


def test_function_models_fall_back_to_autodiff():
    """A from_function model of a tree (no Tree kinematics): forward-mode derivatives of its first
    derivatives, equal to the tree's analytic tensors."""
    tree = random_arm(2, parents=(-1, 0, 1), prismatic=(1,))
    function_model = kj.from_function(lambda q: tree.poses(q), tree.nv, inertials=tree.inertials, gravity=tree.gravity)
    rng = np.random.default_rng(0)
    q, v, a = (jnp.asarray(x) for x in rng.normal(size=(3, tree.nv)))
    ours = kj.inverse_dynamics_second_derivatives(function_model, q, v, a)
    expected = kj.inverse_dynamics_second_derivatives(tree, q, v, a)
    assert max_error([np.asarray(t)[None] for t in ours], [np.asarray(t)[None] for t in expected]) <= 1e-10


def test_bad_input_gets_a_clear_error():
    """Wrong shapes: the shape annotations (under the tests' type checker) or the functions' own
    checks refuse them, naming the argument."""
    model = kj.models.panda()
    with pytest.raises((ValueError, TypeError), match="v"):
        kj.inverse_dynamics_second_derivatives(model, jnp.zeros(7), jnp.zeros(6), jnp.zeros(7))
    with pytest.raises((ValueError, TypeError), match="lam"):
        kj.inverse_dynamics_hessian(model, jnp.zeros(7), jnp.zeros(7), jnp.zeros(7), jnp.zeros(3))
