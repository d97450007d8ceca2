"""Derivatives of inverse and forward dynamics (Carpentier and Mansard, RSS 2018), 20 random states.

Oracles: Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` (relative error
<= 1e-10 in float64), central finite differences of the plain dynamics (<= 1e-7), and, for the
JAX derivative rules, ``jax.jacfwd`` / ``jax.jacrev`` / ``jax.grad`` / ``jax.hessian`` against the
analytic matrices and against finite differences. Each jitted function is built once per module
and vmapped over the states.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj

pin = pytest.importorskip("pinocchio")

from checks import FD_TOL, TOL  # noqa: E402
from oracles import jit_once, random_arm, random_inertia, random_rotation, random_tree, relative_error, to_pinocchio  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

N_STATES = 20
EPS = 1e-6


def _joint_tree(parents: tuple[int, ...], kinds: tuple[str, ...], seed: int, armature: bool = False) -> kj.Model:
    """A tree of the given joints with random axes, placements and full inertias (and with
    ``armature``, rotor inertias on the moving joints)."""
    rng = np.random.default_rng(seed)
    joints = [
        kj.Joint(
            k,
            p,
            tuple(rng.normal(size=3)),
            rotation=random_rotation(rng),
            translation=rng.uniform(-0.3, 0.3, 3),
            armature=rng.uniform(0.05, 0.5) if armature and k != "F" else 0.0,
        )
        for k, p in zip(kinds, parents)
    ]
    inertials = [
        kj.Inertial(rng.uniform(0.5, 3.0), com=rng.uniform(-0.15, 0.15, 3), inertia=random_inertia(rng)) for _ in parents
    ]
    return kj.from_joints(joints, inertials, gravity=(0.2, 0.4, -9.81))


def _fixed_tree() -> kj.Model:
    """Revolute, prismatic and fixed joints; joints hanging from fixed bodies; two branches; rotor
    inertias (Pinocchio's ``model.armature``: in M, dtau/dqdd and M^-1)."""
    return _joint_tree((-1, 0, 1, 1, 3, 0, 5, 6), ("R", "R", "P", "F", "R", "R", "F", "R"), seed=7, armature=True)


def _small_fixed_tree() -> kj.Model:
    """Four bodies: a revolute root, a fixed body on it, and a revolute and a prismatic joint both
    hanging from the fixed body (a branch at a fixed body): the features of :func:`_fixed_tree`
    at the least compile time, for the tests that differentiate through the derivative rules."""
    return _joint_tree((-1, 0, 1, 1), ("R", "F", "R", "P"), seed=3)


MODELS = {
    "branched": lambda: random_arm(1, parents=(-1, 0, 1, 1, 3, 0, 5), prismatic=(2, 5)),
    "fixed_joints": _fixed_tree,
    "panda": kj.models.panda,
    "small": _small_fixed_tree,
    # above kronjax.dynamics._aba_derivatives.UNROLLED_UP_TO coordinates: M^-1 by the tree's
    # sparse L^T D L factorisation, three branches
    "large_tree": lambda: random_arm(2, parents=(-1, 0, 1, 2, 1, 4, 5, 0, 7, 8, 9, 8, 11, 12), prismatic=(3, 9)),
}


@functools.cache
def model_and_states(name: str):
    model = MODELS[name]()
    rng = np.random.default_rng(11)
    return model, tuple(rng.uniform(-1.5, 1.5, (N_STATES, model.nv)) for _ in range(4))


@functools.cache
def analytic(name: str, dtype=jnp.float64):
    """Both derivative triples at every state, from one ``jit(vmap(...))``."""
    model, states = model_and_states(name)
    model = model.astype(dtype)

    @jax.jit
    @jax.vmap
    def f(q, qd, qdd, tau):
        return kj.inverse_dynamics_derivatives(model, q, qd, qdd), kj.forward_dynamics_derivatives(model, q, qd, tau)

    return jax.tree.map(np.asarray, f(*(jnp.asarray(s, dtype) for s in states)))


@functools.cache
def pinocchio_reference(name: str):
    model, (qs, qds, qdds, taus) = model_and_states(name)
    pm = to_pinocchio(model)
    data = pm.createData()
    rnea, aba = [], []
    for q, qd, qdd, tau in zip(qs, qds, qdds, taus):
        pin.computeRNEADerivatives(pm, data, q, qd, qdd)
        rnea.append((data.dtau_dq.copy(), data.dtau_dv.copy(), np.triu(data.M) + np.triu(data.M, 1).T))
        pin.computeABADerivatives(pm, data, q, qd, tau)
        minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        aba.append((data.ddq_dq.copy(), data.ddq_dv.copy(), minv))
    return rnea, aba


def max_error(got, expected) -> float:
    """Largest relative error (per state and matrix) over the states."""
    return max(relative_error(g[s], e[s]) for g, e in zip(got, zip(*expected)) for s in range(N_STATES))


@pytest.mark.parametrize("name", ["branched", "fixed_joints", "panda", "large_tree"])
def test_against_pinocchio(name):
    (ours_id, ours_fd), (ref_id, ref_fd) = analytic(name), pinocchio_reference(name)
    errors = max_error(ours_id, ref_id), max_error(ours_fd, ref_fd)
    print(f"\n{name}: relative errors vs computeRNEADerivatives {errors[0]:.1e}, computeABADerivatives {errors[1]:.1e}")
    assert max(errors) <= TOL, errors


@pytest.mark.parametrize("name", ["fixed_joints", "large_tree"])
def test_float32_against_pinocchio(name):
    """float32 model and states against float64 Pinocchio: relative error <= 1e-5 (inverse dynamics
    derivatives; measured 8e-7) and <= 5e-4 (forward dynamics, measured 3e-5: M^-1 amplifies
    round-off by cond(M))."""
    (ours_id, ours_fd), (ref_id, ref_fd) = analytic(name, jnp.float32), pinocchio_reference(name)
    assert all(x.dtype == np.float32 for x in (*ours_id, *ours_fd))
    errors = max_error(ours_id, ref_id), max_error(ours_fd, ref_fd)
    print(f"\n{name} float32: {errors[0]:.1e}, {errors[1]:.1e}")
    assert errors[0] <= 1e-5 and errors[1] <= 5e-4, errors


def _central_differences(f, q, qd, last):
    """``df/d(q, qd)`` at every state by central differences of the plain function (``(batch, n,
    2n)``); one ``vmap`` over the steps and the states, so that ``f`` is traced once."""
    n = q.shape[1]
    steps = jnp.concatenate([EPS * jnp.eye(2 * n), -EPS * jnp.eye(2 * n)])[:, None]  # (4n, 1, 2n)
    x = jnp.concatenate([q, qd], axis=1)[None] + steps  # (4n, batch, 2n)
    values = jax.vmap(jax.vmap(lambda x, last: f(x[:n], x[n:], last)), in_axes=(0, None))(x, last)
    plus, minus = jnp.split(values, 2)
    return jnp.moveaxis((plus - minus) / (2 * EPS), 0, -1)


@functools.cache
def finite_differences(name: str):
    """Central differences of plain RNEA and ABA w.r.t. ``q`` and ``qd``: ``((d/dq, d/dqd)`` of
    inverse dynamics, the same of forward dynamics)."""
    model, (qs, qds, qdds, taus) = model_and_states(name)
    inverse = lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="rnea")  # noqa: E731
    forward = lambda q, qd, tau: kj.forward_dynamics(model, q, qd, tau)  # noqa: E731

    @jit_once
    def f(q, qd, qdd, tau):
        return _central_differences(inverse, q, qd, qdd), _central_differences(forward, q, qd, tau)

    n = model.nv
    return tuple((np.asarray(d[..., :n]), np.asarray(d[..., n:])) for d in f(*(jnp.asarray(s) for s in (qs, qds, qdds, taus))))


@pytest.mark.parametrize("name", ["fixed_joints"])
def test_against_finite_differences(name):
    """The analytic d/dq and d/dqd against central differences of plain RNEA and ABA (no derivative
    rule involved: the primal paths). Pinocchio checks the other models."""
    (ours_id, ours_fd), (fd_id, fd_fd) = analytic(name), finite_differences(name)
    errors = max_error(ours_id[:2], zip(*fd_id)), max_error(ours_fd[:2], zip(*fd_fd))
    print(f"\n{name}: relative errors vs central differences {errors[0]:.1e}, {errors[1]:.1e}")
    assert max(errors) <= FD_TOL, errors


@functools.cache
def autodiff(name: str):
    """``jax.jacfwd`` / ``jax.jacrev`` of inverse and forward dynamics (the registered rules)."""
    model, states = model_and_states(name)
    inverse = lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="rnea")  # noqa: E731
    forward = lambda q, qd, tau: kj.forward_dynamics(model, q, qd, tau)  # noqa: E731

    @jax.jit
    @jax.vmap
    def f(q, qd, qdd, tau):
        return dict(
            inverse_jacfwd=jax.jacfwd(inverse, argnums=(0, 1, 2))(q, qd, qdd),
            inverse_jacrev=jax.jacrev(inverse, argnums=(0, 1, 2))(q, qd, qdd),
            forward_jacfwd=jax.jacfwd(forward, argnums=(0, 1, 2))(q, qd, tau),
            forward_jacrev=jax.jacrev(forward, argnums=(0, 1, 2))(q, qd, tau),
        )

    return jax.tree.map(np.asarray, f(*(jnp.asarray(s) for s in states)))


@pytest.mark.slow  # 21 s of compilation; `make test` keeps its 12 minutes on the slower CI machine
def test_jax_transformations_use_the_analytic_derivatives():
    """jacfwd/jacrev of inverse_dynamics and forward_dynamics equal the analytic triples (Pinocchio
    checks those) to round-off."""
    ours_id, ours_fd = analytic("branched")
    ad = autodiff("branched")
    for key, expected in [
        ("inverse_jacfwd", ours_id),
        ("inverse_jacrev", ours_id),
        ("forward_jacfwd", ours_fd),
        ("forward_jacrev", ours_fd),
    ]:
        assert max_error(ad[key], zip(*expected)) <= 1e-12, key


@functools.cache
def recursion_autodiff(name: str):
    """``inverse_dynamics(..., derivatives="autodiff")``: ``jax.jacrev`` (JAX's reverse mode
    through the recursion) at every state and, at the first state,
    ``jax.hessian`` of ``sum sin(tau)^2`` in ``(q, qd, qdd)`` (forward-over-reverse of the
    recursion) with central differences of its gradient through the analytic rule."""
    model, states = model_and_states(name)
    n = model.nv

    def inverse(q, qd, qdd, derivatives):
        return kj.inverse_dynamics(model, q, qd, qdd, derivatives=derivatives)

    def loss(x, derivatives):
        return jnp.sum(jnp.sin(inverse(x[:n], x[n : 2 * n], x[2 * n :], derivatives)) ** 2)

    @jax.jit
    def f(q, qd, qdd):
        jac = jax.vmap(jax.jacrev(inverse, argnums=(0, 1, 2)), in_axes=(0, 0, 0, None))(q, qd, qdd, "autodiff")
        x = jnp.concatenate([q[0], qd[0], qdd[0]])
        grad = jax.grad(loss)
        central = jax.vmap(lambda s: (grad(x + s, "analytic") - grad(x - s, "analytic")) / (2 * EPS), out_axes=1)
        return jac, jax.hessian(loss)(x, "autodiff"), central(EPS * jnp.eye(3 * n))

    return jax.tree.map(np.asarray, f(*(jnp.asarray(s) for s in states[:3])))


@pytest.mark.slow
def test_derivatives_by_autodiff_of_the_recursion():
    """``derivatives="autodiff"``: JAX's reverse mode through the recursion equal to Pinocchio's
    computeRNEADerivatives, and its forward-over-reverse Hessian equal to central differences of
    the gradient through the analytic rule."""
    jac, hessian, hessian_fd = recursion_autodiff("panda")
    error = max_error(jac, pinocchio_reference("panda")[0])
    print(f"\npanda: jacrev of the recursion vs computeRNEADerivatives {error:.1e}")
    assert error <= TOL
    assert relative_error(hessian, hessian_fd) <= FD_TOL
    with pytest.raises(ValueError, match="derivatives must be 'analytic' or 'autodiff'"):
        kj.inverse_dynamics(kj.models.double_pendulum(), jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), derivatives="exact")


def _symmetric(six: jax.Array) -> jax.Array:
    """``(nb, 6)`` upper entries -> ``(nb, 3, 3)`` symmetric matrices."""
    i, j = np.triu_indices(3)
    upper = jnp.zeros((six.shape[0], 3, 3), six.dtype).at[:, i, j].set(six)
    return upper + jnp.swapaxes(jnp.triu(upper, 1), 1, 2)


@functools.cache
def parameter_gradients():
    """Gradient of a loss through inverse and forward dynamics w.r.t. the masses and (symmetric)
    inertias, by ``jax.grad`` and by central differences of the loss."""
    model, states = model_and_states("small")
    qs, qds, qdds, taus = (jnp.asarray(x[:5]) for x in states)
    base_inertia = jnp.asarray(model.inertials.inertia)

    def loss(params):
        mass, six = params[: model.n_bodies], params[model.n_bodies :].reshape(-1, 6)
        m = eqx.tree_at(lambda m: (m.inertials.mass, m.inertials.inertia), model, (mass, base_inertia + _symmetric(six)))
        tau = jax.vmap(lambda q, qd, qdd: kj.inverse_dynamics(m, q, qd, qdd))(qs, qds, qdds)
        qdd = jax.vmap(lambda q, qd, tau: kj.forward_dynamics(m, q, qd, tau))(qs, qds, taus)
        return jnp.sum(jnp.sin(tau)) + jnp.sum(jnp.sin(qdd))

    params = jnp.concatenate([jnp.asarray(model.inertials.mass), jnp.zeros(6 * model.n_bodies)])
    steps = 1e-6 * jnp.eye(params.shape[0])
    grad = jax.jit(jax.grad(loss))(params)
    central = jit_once(jax.vmap(lambda s: (loss(params + s) - loss(params - s)) / 2e-6))(steps)
    return np.asarray(grad), np.asarray(central)


@pytest.mark.slow
def test_parameter_gradients_against_finite_differences():
    """jax.grad w.r.t. the model's masses and inertias (the rules add jax.jvp of plain RNEA w.r.t.
    the model) against central differences, on a tree with fixed joints. Slow tier (a minute of
    compilation: reverse mode through the articulated-body algorithm's own derivative); the fast
    tier checks gradients w.r.t. the inertials through both rules on a chain
    (test_dynamics_principles.py)."""
    grad, central = parameter_gradients()
    assert relative_error(grad, central) <= 1e-7


@pytest.mark.extended  # first derivatives vs Pinocchio
@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_hessian_of_inverse_dynamics_against_finite_differences():
    """jax.hessian of a loss through inverse_dynamics (the rule differentiated once more) against
    central differences of its jax.grad, itself checked against central differences of the loss."""
    model, (qs, qds, qdds, _) = model_and_states("small")
    q, qd, qdd = (jnp.asarray(s[0]) for s in (qs, qds, qdds))
    n = model.nv

    def loss(x):
        return jnp.sum(jnp.sin(kj.inverse_dynamics(model, x[:n], x[n:], qdd)) ** 2)

    x = jnp.concatenate([q, qd])
    steps = EPS * jnp.eye(2 * n)

    @jax.jit
    def f(x):
        grad = jax.grad(loss)
        return (
            jax.hessian(loss)(x),
            grad(x),
            jax.vmap(lambda s: (grad(x + s) - grad(x - s)) / (2 * EPS), out_axes=1)(steps),
            jax.vmap(lambda s: (loss(x + s) - loss(x - s)) / (2 * EPS))(steps),
        )

    hessian, grad, hessian_fd, grad_fd = f(x)
    assert relative_error(grad, grad_fd) <= FD_TOL
    assert relative_error(hessian, hessian_fd) <= FD_TOL


def test_function_models_fall_back_to_autodiff():
    """A from_function model (no Tree) of the same 2-joint arm: jacfwd of the Lagrangian route
    equals the Tree's analytic derivatives (one program, compiled once)."""
    tree = random_arm(2, parents=(-1, 0), prismatic=(1,))
    function_model = kj.from_function(lambda q: tree.poses(q), tree.nv, inertials=tree.inertials, gravity=tree.gravity)
    rng = np.random.default_rng(5)
    q, qd, x = (jnp.asarray(rng.uniform(-1, 1, tree.nv)) for _ in range(3))

    @jit_once
    def f(q, qd, x):
        return [
            (d(function_model, q, qd, x), d(tree, q, qd, x))
            for d in (kj.inverse_dynamics_derivatives, kj.forward_dynamics_derivatives)
        ]

    for got, expected in f(q, qd, x):
        for g, e in zip(got, expected):
            assert relative_error(g, e) <= 1e-10


def test_sparse_factorisation_of_a_tree():
    """``M^-1`` by the sparse ``L^T D L`` factorisation along the tree against a dense inverse, on
    a tree with a free-flyer root, a spherical joint and branches (the coordinates of a multi-DoF
    joint a chain), and its pivots: all positive exactly when ``M`` is positive definite."""
    from kronjax._spatial.traversal import ancestry, coordinate_parents
    from kronjax.dynamics._aba_derivatives import tree_spd_inverse

    model = random_tree(
        [dict(kind="free", parent=-1), ("R", 0), dict(kind="spherical", parent=1), ("R", 0), ("P", 3), ("R", 0)], seed=4
    )
    parents = coordinate_parents(ancestry(model.kinematics).upto)
    assert parents[:7] == (-1, 0, 1, 2, 3, 4, 5)  # the free-flyer's six coordinates, then its child
    q = jax.vmap(lambda k: kj.random_configuration(model, k))(jax.random.split(jax.random.key(2), 4))
    mass = jax.vmap(lambda q: kj.mass_matrix(model, q))(q)
    inverse, pivots = jax.jit(jax.vmap(lambda m: tree_spd_inverse(m, parents)))(mass)
    assert relative_error(inverse, np.linalg.inv(np.asarray(mass))) <= 1e-12
    assert np.all(np.asarray(pivots) > 0)
    # not positive definite: one pivot is not positive
    shifted = mass - (np.linalg.eigvalsh(np.asarray(mass))[:, :1] + 1e-3)[:, :, None] * np.eye(model.nv)
    assert np.all(np.any(np.asarray(jax.vmap(lambda m: tree_spd_inverse(m, parents)[1])(shifted)) <= 0, axis=1))
