"""Dynamics against first principles, on a random 7-joint chain (full non-diagonal inertias, offset
centres of mass, one prismatic joint), a tree with every feature a tree can have (several runs,
children attached mid-run, several children at one body, two bodies on the base, revolute,
prismatic and fixed joints), the same chain given as a pure poses function, small trees with
prismatic joints, the stacker and the elbow manipulator.

Oracles written here, independent of kronjax.dynamics:

* the Euler-Lagrange equations (Truc 16) of ``L = T - P`` built directly from forward kinematics,
  with the angular velocity and the inertia tensor in the *base* frame (Truc 12, 18, 19) -- not from
  the mass matrix -- differentiated with ``jax.grad`` / ``jax.jvp``;
* ``dM/dq`` from ``jax.jacfwd`` of ``M``, ``Mdot`` from ``jax.jvp`` of ``M``, ``g`` from ``jax.grad`` of
  the potential energy;
* virtual power of external wrenches from the velocity of the point of application (``jax.jvp``);
* central finite differences for gradients with respect to the inertials and gravity.

XLA compilation dominates the runtime: the library's functions are compiled as users compile them,
once per model and batch size for every test that reads them, and the oracles, which run once on
a few states, separately at the lowest backend optimisation level (:func:`jit_once`); where
batching is not what a test checks, a function is compiled for one state and called on each
(:func:`each`), which compiles in about two thirds of the time of its ``vmap``.

Tolerances (float64): 1e-10 relative to the size of each array; float32: 1e-5 (forward dynamics
1e-4), see :func:`test_float32_matches_float64`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from checks import TOL
from oracles import jit_once, random_arm, random_inertia, random_rotation

import kronjax as kj
from kronjax import dynamics as dy

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

FORMS = ("truc", "tuan", "kane")
METHODS = ("rnea", "euler_lagrange", "kron")


def each(compiled, *batches):
    """``compiled`` at each row of ``batches``, its outputs stacked (numpy arrays)."""
    rows = zip(*(np.asarray(b) for b in batches))
    return jax.tree.map(lambda *x: np.stack(x), *(compiled(*row) for row in rows))


def rel_err(actual, expected, axis=None):
    """Max abs error over the max abs value of ``expected`` (at least 1), per state if ``axis``."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    if axis is None:
        return float(np.max(np.abs(actual - expected)) / max(1.0, float(np.max(np.abs(expected)))))
    a = actual.reshape(actual.shape[0], -1)
    e = expected.reshape(expected.shape[0], -1)
    return float(np.max(np.max(np.abs(a - e), axis=1) / np.maximum(1.0, np.max(np.abs(e), axis=1))))


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def chain7():
    return random_arm(0)


def tree8():
    """Every feature of a tree at once, in 8 bodies and 6 coordinates: two bodies on the base (0
    and 5), several children at one body (0: 1 and 7; 1: 2 and 4), a run continuing through a fixed
    joint mid-run (1 -> 2 -> 3), a fixed leaf (7), revolute and prismatic joints, rotated joint
    frames, full inertias and offset centres of mass."""
    rng = np.random.default_rng(4)
    spec = [("R", -1), ("P", 0), ("F", 1), ("R", 2), ("R", 1), ("P", -1), ("R", 5), ("F", 0)]
    joints = [
        kj.Joint(kind, parent, tuple(rng.normal(size=3)), rotation=random_rotation(rng), translation=tuple(rng.normal(size=3)))
        for kind, parent in spec
    ]
    inertials = [
        kj.Inertial(rng.uniform(0.5, 3.0), com=tuple(0.1 * rng.normal(size=3)), inertia=random_inertia(rng)) for _ in spec
    ]
    return kj.from_joints(joints, inertials, gravity=(0.3, -0.2, -9.81))


def poses_function_model():
    """The random chain's kinematics as an opaque pure function (a PosesFunction model)."""
    arm = chain7()
    kinematics = arm.kinematics

    def poses(q):
        return kinematics.poses(q)

    return kj.from_function(poses, arm.nv, arm.inertials, gravity=arm.gravity)


# The random chain gets the full first-principles treatment below, the tree the Euler-Lagrange
# check of every inverse-dynamics method and of the tree algorithms; the paper's models are
# checked against their closed forms (and the same methods) in test_dynamics_paper.py.
MODELS = {
    "chain7": chain7,
    "tree8": tree8,
    "elbow": lambda: kj.models.truc_elbow(),
    "stacker": lambda: kj.models.stacker(),
}


def states(model, count, seed):
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.uniform(-2.0, 2.0, (count, model.nv))) for _ in range(4)]


# --------------------------------------------------------------------------------------------
# Independent oracles
# --------------------------------------------------------------------------------------------


def _vee(w):
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], axis=-1)


def _centres(model, q):
    fk = kj.forward_kinematics(model, q)
    return fk.origins + jnp.einsum("bij,bj->bi", fk.rotations, model.inertials.com)


def oracle_lagrangian(model, q, qd):
    """``L = T - P`` (Truc 16-19): base-frame angular velocity ``S(w0) = Rdot R^T`` (12) and
    base-frame inertia ``R I R^T`` (19)."""
    ine = model.inertials
    (r, centres), (rdot, v) = jax.jvp(lambda q: (kj.forward_kinematics(model, q).rotations, _centres(model, q)), (q,), (qd,))
    w0 = _vee(jnp.einsum("bij,bkj->bik", rdot, r))
    inertia0 = jnp.einsum("bij,bjk,blk->bil", r, ine.inertia, r)
    kinetic = 0.5 * jnp.sum(ine.mass * jnp.sum(v * v, -1)) + 0.5 * jnp.einsum("bi,bij,bj->", w0, inertia0, w0)
    potential = -jnp.sum(ine.mass * (centres @ model.gravity))
    return kinetic - potential


def oracle_tau(model, q, qd, qdd):
    """Euler-Lagrange (Truc 16): ``d/dt (dL/dqd) - dL/dq`` by ``jax.jvp`` of ``jax.grad``."""
    momentum = jax.grad(oracle_lagrangian, argnums=2)
    _, dmomentum = jax.jvp(lambda q, qd: momentum(model, q, qd), (q, qd), (qd, qdd))
    return dmomentum - jax.grad(oracle_lagrangian, argnums=1)(model, q, qd)


def oracle_potential(model, q):
    return -jnp.sum(model.inertials.mass * (_centres(model, q) @ model.gravity))


# --------------------------------------------------------------------------------------------
# Every function at 10^4 states of the chain, compiled once; the oracles at the first 50
# --------------------------------------------------------------------------------------------


def _every_function(model, q, qd, qdd, tau):
    wrench = kj.Wrench(2, force=qdd[:3], moment=qd[:3], point="com")
    out = dict(
        M=dy.mass_matrix(model, q),
        dM=dy.mass_matrix_derivative(model, q),
        C_star=dy.coriolis_star(model, q),
        g=dy.gravity(model, q),
        T=dy.kinetic_energy(model, q, qd),
        P=dy.potential_energy(model, q),
        f_ext=dy.generalized_forces(model, q, [wrench]),
        fd=dy.forward_dynamics(model, q, qd, tau),
    )
    for form in FORMS:
        out[f"C_{form}"] = dy.coriolis_matrix(model, q, qd, form=form)
    for method in METHODS:
        out[f"tau_{method}"] = dy.inverse_dynamics(model, q, qd, qdd, method=method)
    return out


def _oracles(model, q, qd, qdd):
    """The independent oracles every function is checked against."""
    n = q.shape[0]
    m = lambda q: dy.mass_matrix(model, q)  # noqa: E731
    return dict(
        dM_ad=jax.jacfwd(m)(q).reshape(n, n * n),
        Mdot_ad=jax.jvp(m, (q,), (qd,))[1],
        g_ad=jax.grad(oracle_potential, argnums=1)(model, q),
        P_oracle=oracle_potential(model, q),
        tau_oracle=oracle_tau(model, q, qd, qdd),
    )


_EVERY_FUNCTION = jax.jit(jax.vmap(_every_function, in_axes=(None, 0, 0, 0, 0)))
_ORACLES = jit_once(_oracles)
BATCH = 10_000
N_STATES = 50


@pytest.fixture(scope="module")
def batch64():
    model = chain7()
    s = states(model, BATCH, seed=17)
    return model, s, {k: np.asarray(v) for k, v in _EVERY_FUNCTION(model, *s).items()}


@pytest.fixture(scope="module")
def results(batch64):
    """Every function and the oracles at the first ``N_STATES`` of the batch."""
    model, s, out = batch64
    s = tuple(x[:N_STATES] for x in s)
    oracles = each(lambda *state: _ORACLES(model, *state), *s[:3])
    out = {k: v[:N_STATES] for k, v in out.items()} | oracles
    return "chain7", model, tuple(np.asarray(x) for x in s), out


def test_euler_lagrange_residual(results):
    """Every inverse-dynamics method, and M qdd + C qd + g for every C form, equals the
    Euler-Lagrange torques of the independently built Lagrangian (relative error <= 1e-10)."""
    name, _, (q, qd, qdd, _), out = results
    expected = out["tau_oracle"]
    for method in METHODS:
        assert rel_err(out[f"tau_{method}"], expected, axis=0) <= TOL, (name, method)
    m_qdd = np.einsum("bij,bj->bi", out["M"], qdd)
    for form in FORMS:
        tau = m_qdd + np.einsum("bij,bj->bi", out[f"C_{form}"], qd) + out["g"]
        assert rel_err(tau, expected, axis=0) <= TOL, (name, form)
    kron_qd = np.einsum("bi,bj->bij", qd, qd).reshape(len(qd), -1)
    tau = m_qdd + np.einsum("bij,bj->bi", out["C_star"], kron_qd) + out["g"]  # Tuan (100)
    assert rel_err(tau, expected, axis=0) <= TOL, name


def _tree_oracles(model, q, qd):
    """``M = d^2 L / d qd^2``, the bias ``h = tau(q, qd, 0)`` and ``g = dP/dq`` of the oracle; its
    torques are ``M qdd + h`` (the Euler-Lagrange equations are linear in ``qdd``)."""
    return (
        jax.hessian(oracle_lagrangian, argnums=2)(model, q, qd),
        oracle_tau(model, q, qd, jnp.zeros_like(qd)),
        jax.grad(oracle_potential, argnums=1)(model, q),
    )


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_tree_against_the_lagrangian():
    """A tree with several runs of bodies (children attached mid-run, several children at one
    body, more than one body on the base), revolute, prismatic and fixed joints and rotated joint
    frames: every inverse-dynamics method (RNEA, the Lagrangian method, the papers' M qdd + C*
    (qd ⊗ qd) + g), the articulated-body algorithm, M and C* (composite bodies) against the
    Euler-Lagrange oracle: tau, tau(q, qd, forward_dynamics(q, qd, tau)) = tau, M = d^2 L / d qd^2
    and C* (qd ⊗ qd) = tau(q, qd, 0) - dP/dq."""
    model = tree8()
    q, qd, qdd, tau = states(model, 10, seed=3)

    def f(q, qd, qdd, tau):
        return dict(
            tau={m: dy.inverse_dynamics(model, q, qd, qdd, method=m) for m in METHODS},
            fd=dy.forward_dynamics(model, q, qd, tau),
            M=dy.mass_matrix(model, q),
            C=dy.coriolis_star(model, q) @ jnp.kron(qd, qd),
        )

    got = each(jax.jit(f), q, qd, qdd, tau)
    mass, bias, grav = each(jit_once(lambda q, qd: _tree_oracles(model, q, qd)), q, qd)
    torques = lambda qdd: np.einsum("bij,bj->bi", mass, qdd) + bias  # noqa: E731
    for method, value in got["tau"].items():
        assert rel_err(value, torques(qdd), axis=0) <= TOL, method
    assert rel_err(torques(got["fd"]), tau, axis=0) <= TOL, "fd"
    assert rel_err(got["M"], mass, axis=0) <= TOL, "M"
    assert rel_err(got["C"], bias - grav, axis=0) <= TOL, "C"


@pytest.mark.parametrize("kinds", ["P", "RP", pytest.param("PRP", marks=pytest.mark.slow)])
def test_small_trees_with_prismatic_joints_under_jit_vmap(kinds):
    """Regression: XLA:CPU (jaxlib 0.10) aborted the process compiling ``jit(vmap(rnea))`` of small
    trees with a prismatic joint (a batched dot with a non-major-to-minor output layout), at batch
    sizes 1, 2 and 5. RNEA at batches 1 and 5 against the Euler-Lagrange oracle, float64 and
    float32, on chains and a branched tree."""
    rng = np.random.default_rng(len(kinds))
    parents = [(-1, *range(len(kinds) - 1))] + ([(-1, 0, 0)] if len(kinds) == 3 else [])
    for parent in parents:
        joints = [kj.Joint(k, p, tuple(rng.normal(size=3))) for k, p in zip(kinds, parent)]
        inertials = [
            kj.Inertial(1.0 + i, com=tuple(0.1 * rng.normal(size=3)), inertia=(0.1, 0.2, 0.25)) for i in range(len(kinds))
        ]
        model = kj.from_joints(joints, inertials)
        q, qd, qdd, _ = states(model, 5, seed=len(parent))
        expected = each(jit_once(lambda *s: oracle_tau(model, *s)), q, qd, qdd)
        for batch in (1, 5):
            for dtype, tol in ((jnp.float64, TOL), (jnp.float32, 1e-5)):
                cast, typed = [x[:batch].astype(dtype) for x in (q, qd, qdd)], model.astype(dtype)
                tau = jax.jit(jax.vmap(lambda *s: kj.inverse_dynamics(typed, *s)))(*cast)
                assert tau.dtype == dtype
                assert rel_err(tau, expected[:batch], axis=0) <= tol, (parent, batch, dtype)


def test_coriolis_forms_give_C_star_products(results):
    """C qd = C*(q) (qd ⊗ qd) for all three forms (Tuan 97/101, Truc 51, Parsa 37)."""
    name, _, (_, qd, _, _), out = results
    expected = np.einsum("bij,bj->bi", out["C_star"], np.einsum("bi,bj->bij", qd, qd).reshape(len(qd), -1))
    for form in FORMS:
        assert rel_err(np.einsum("bij,bj->bi", out[f"C_{form}"], qd), expected, axis=0) <= TOL, (name, form)


def test_skew_symmetry(results):
    """Mdot - 2C is skew-symmetric for "truc" (Truc 55) and "kane" (Parsa 36), not for "tuan" (97).
    Mdot comes from jax.jvp of M, independently of dM/dq."""
    name, _, _, out = results
    mdot = out["Mdot_ad"]
    scale = max(1.0, float(np.max(np.abs(mdot))))
    for form in ("truc", "kane"):
        s = mdot - 2 * out[f"C_{form}"]
        assert np.max(np.abs(s + np.swapaxes(s, 1, 2))) <= TOL * scale, (name, form)
    s = mdot - 2 * out["C_tuan"]
    assert np.max(np.abs(s + np.swapaxes(s, 1, 2))) > 1e-2 * scale, name


def test_mass_matrix_derivative_against_autodiff(results):
    """dM/dq (from composite bodies, the default for trees) equals jax.jacfwd(M) in Khang's
    layout; C* is built from it per (101); the mass matrix's time derivative dM/dq (E ⊗ qd) = Mdot."""
    name, _, (_, qd, _, _), out = results
    n = qd.shape[1]
    assert rel_err(out["dM"], out["dM_ad"], axis=0) <= TOL, name
    dm3 = out["dM_ad"].reshape(-1, n, n, n)  # [s, i, j, k] = dM[i, j]/dq_k
    c_star = dm3 - 0.5 * np.transpose(dm3, (0, 3, 2, 1))  # C*[i, (j, k)] = dM_ij/dq_k - 1/2 dM_kj/dq_i
    assert rel_err(out["C_star"], c_star.reshape(-1, n, n * n), axis=0) <= TOL, name
    assert rel_err(np.einsum("bijk,bk->bij", dm3, qd), out["Mdot_ad"], axis=0) <= TOL, name


def test_gravity_and_energies(results):
    """g = dP/dq (Truc 45) against jax.grad of the oracle's P; T = 1/2 qd^T M qd (Tuan 93)."""
    name, _, (_, qd, _, _), out = results
    assert rel_err(out["g"], out["g_ad"], axis=0) <= TOL, name
    assert rel_err(out["P"], out["P_oracle"]) <= TOL, name
    assert rel_err(out["T"], 0.5 * np.einsum("bi,bij,bj->b", qd, out["M"], qd)) <= TOL, name


def test_forward_dynamics_inverts_inverse_dynamics(results):
    """M qdd = tau - C qd - g (Cholesky): feeding qdd back gives tau."""
    name, _, (_, qd, _, tau), out = results
    back = np.einsum("bij,bj->bi", out["M"], out["fd"]) + np.einsum("bij,bj->bi", out["C_truc"], qd) + out["g"]
    assert rel_err(back, tau, axis=0) <= TOL, name


def test_mass_matrix_spd_at_1000_configurations():
    """M is symmetric positive definite at 1000 random configurations of each model (vmap)."""
    for name, make in MODELS.items():
        model = make()
        q = jnp.asarray(np.random.default_rng(3).uniform(-np.pi, np.pi, (1000, model.nv)))
        m = np.asarray(jax.jit(jax.vmap(lambda q: dy.mass_matrix(model, q)))(q))
        np.testing.assert_array_equal(m, np.swapaxes(m, 1, 2), err_msg=name)
        eig = np.linalg.eigvalsh(m)
        assert np.all(eig[:, 0] > 1e-8 * eig[:, -1]), (name, eig[:, 0].min())


# --------------------------------------------------------------------------------------------
# Models given as pure poses functions: the energy-based fallback
# --------------------------------------------------------------------------------------------


def test_poses_function_model_uses_the_lagrangian_fallback(results):
    """A from_function model has no tree: method="auto" is the Lagrangian one, and it agrees with
    RNEA on the same system built as a tree; "rnea" explains what to use instead."""
    _, _, (q, qd, qdd, _), out = results
    q, qd, qdd, tree_tau = q[:5], qd[:5], qdd[:5], out["tau_rnea"][:5]
    fn = poses_function_model()
    fn_tau = each(jax.jit(lambda q, qd, qdd: dy.inverse_dynamics(fn, q, qd, qdd)), q, qd, qdd)
    assert rel_err(fn_tau, tree_tau, axis=0) <= TOL
    with pytest.raises(ValueError, match="method='rnea' needs a Tree model"):
        dy.inverse_dynamics(fn, q[0], qd[0], qdd[0], method="rnea")


# --------------------------------------------------------------------------------------------
# External wrenches
# --------------------------------------------------------------------------------------------


def _power(model, q, qd, body, force, moment, point, frame):
    """Power of a wrench from the velocity of its point of application (jax.jvp of its position)
    and the body's angular velocity ``vee(Rdot R^T)``; independent of the Jacobians."""
    b = model.body_index(body)

    def placement(q):
        fk = kj.forward_kinematics(model, q)
        r = fk.rotations[b]
        p = np.zeros(3) if point is None else (model.inertials.com[b] if isinstance(point, str) else jnp.asarray(point))
        return fk.origins[b] + r @ p, r

    (_, r), (v, rdot) = jax.jvp(placement, (q,), (qd,))
    w = _vee(rdot @ r.T)
    if frame == "body":
        force, moment = r @ force, r @ moment
    return force @ v + moment @ w


WRENCH_CASES = [
    # body, force, moment, point, frame
    (4, [1.0, -2.0, 0.5], [0.0, 0.0, 0.0], [0.1, -0.2, 0.3], "base"),
    ("link7", [0.3, 0.8, -1.1], [0.2, -0.4, 0.9], "com", "body"),
    (0, [2.0, 0.0, -1.0], [0.5, 0.5, 0.0], None, "base"),
    (3, [0.0, 1.5, 0.7], [-0.3, 0.2, 0.1], [0.05, 0.0, -0.1], "body"),
]


def test_generalized_forces_by_virtual_power_and_jacobians():
    """f . qd equals the wrenches' power F . v + m . w for every qd (so f = J^T F, Parsa 28, 31),
    and f equals J_T(point)^T F + J_R^T m from the public Jacobians (all bodies', and one body's)."""
    model = chain7()
    rng = np.random.default_rng(5)
    q = jnp.asarray(rng.uniform(-2, 2, 7))
    qds = jnp.asarray(rng.normal(size=(3, 7)))
    cases = [(b, jnp.asarray(fo), jnp.asarray(mo), p, fr) for b, fo, mo, p, fr in WRENCH_CASES]
    index = [model.body_index(b) for b, *_ in cases]
    # the wrenches act on different bodies: one all-bodies Jacobian holds every point
    points = np.zeros((model.n_bodies, 3))
    for b, (_, _, _, point, _) in zip(index, cases):
        points[b] = model.inertials.com[b] if isinstance(point, str) else (0.0 if point is None else point)

    @jax.jit
    def compute(q):
        single = [dy.generalized_forces(model, q, [kj.Wrench(*case)]) for case in cases]
        # several wrenches at once (two on body 4 here) add up
        wrenches = [kj.Wrench(*case) for case in cases] + [kj.Wrench(4, force=[0.0, 0.0, 1.0])]
        one_body = (
            kj.translational_jacobian(model, q, "link7", point="com"),
            kj.rotational_jacobian(model, q, "link7"),
            kj.translational_jacobian(model, q, 4),
        )
        together = dy.generalized_forces(model, q, wrenches)
        return single, together, kj.forward_kinematics(model, q).rotations, kj.jacobians(model, q, "base", points), one_body

    single, together, rotations, (jt, jr), (jt_link7, jr_link7, jt_4) = compute(q)
    powers = jit_once(lambda q, qds: [jax.vmap(lambda qd: _power(model, q, qd, *case))(qds) for case in cases])(q, qds)
    for f, power, b, (_, force, moment, _, frame) in zip(single, powers, index, cases):
        fb, mb = (rotations[b] @ force, rotations[b] @ moment) if frame == "body" else (force, moment)
        assert rel_err(qds @ f, power) <= TOL, b
        assert rel_err(f, jt[b].T @ fb + jr[b].T @ mb) <= TOL, b
        if b == model.body_index("link7"):
            assert rel_err(f, jt_link7.T @ fb + jr_link7.T @ mb) <= TOL, b
    assert rel_err(together, sum(single) + jt_4.T @ jnp.array([0.0, 0.0, 1.0])) <= TOL
    assert float(jnp.max(jnp.abs(dy.generalized_forces(model, q, None)))) == 0.0


@pytest.mark.slow
def test_wrenches_in_inverse_and_forward_dynamics():
    """M qdd + C qd + g = tau + f_ext: inverse dynamics subtracts f_ext, forward dynamics adds it,
    for every method; wrench values may be batched with vmap."""
    model = kj.models.truc_elbow()
    q, qd, qdd, forces = states(model, 4, seed=13)

    def f(q, qd, qdd, force):
        w = [kj.Wrench("link3", force=force, moment=2 * force, point="com")]
        ext = dy.generalized_forces(model, q, w)
        free = dy.inverse_dynamics(model, q, qd, qdd, method="rnea")
        loaded = [dy.inverse_dynamics(model, q, qd, qdd, method=m, wrenches=w) for m in METHODS]
        return free, ext, loaded, dy.forward_dynamics(model, q, qd, loaded[0], wrenches=w)

    free, ext, loaded, fd = jit_once(jax.vmap(f))(q, qd, qdd, forces)
    assert float(jnp.min(jnp.max(jnp.abs(ext), axis=1))) > 1e-2
    for tau in loaded:
        assert rel_err(tau, free - ext, axis=0) <= TOL
    assert rel_err(fd, qdd, axis=0) <= TOL


# --------------------------------------------------------------------------------------------
# Batches of 10^4 states, float64 and float32
# --------------------------------------------------------------------------------------------


def test_every_function_over_10k_states_float64(batch64):
    """jit(vmap(.)) of every dynamics function over 10^4 states: shapes, and the identities
    between them hold at every state."""
    model, (q, qd, qdd, tau), out = batch64
    n = model.nv
    shapes = dict(M=(n, n), dM=(n, n * n), C_star=(n, n * n), g=(n,), T=(), P=(), f_ext=(n,), fd=(n,))
    for key, shape in shapes.items():
        assert out[key].shape == (BATCH, *shape) and out[key].dtype == np.float64, key
    q, qd, qdd, tau = (np.asarray(x) for x in (q, qd, qdd, tau))
    cstar_qq = np.einsum("bij,bj->bi", out["C_star"], np.einsum("bi,bj->bij", qd, qd).reshape(BATCH, -1))
    for form in FORMS:
        assert rel_err(np.einsum("bij,bj->bi", out[f"C_{form}"], qd), cstar_qq, axis=0) <= TOL
    expected = np.einsum("bij,bj->bi", out["M"], qdd) + cstar_qq + out["g"]
    for method in METHODS:
        assert rel_err(out[f"tau_{method}"], expected, axis=0) <= TOL, method
    back = np.einsum("bij,bj->bi", out["M"], out["fd"]) + np.einsum("bij,bj->bi", out["C_truc"], qd) + out["g"]
    assert rel_err(back, tau, axis=0) <= TOL
    assert np.all(np.isfinite(out["f_ext"]))


@pytest.mark.extended  # float32: test_dynamics_derivatives
@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_float32_matches_float64(batch64):
    """The same 10^4 states with model.astype(float32) and float32 inputs: float32 outputs,
    within 1e-5 of the float64 results relative to each array's size per state (float32 carries
    about 7 digits; observed <= 3.6e-6), forward dynamics, which solves with M, within 1e-4
    (observed 9.0e-6)."""
    model, s, out64 = batch64
    model32 = model.astype(jnp.float32)
    out32 = _EVERY_FUNCTION(model32, *(x.astype(jnp.float32) for x in s))
    for key, value in out32.items():
        assert value.dtype == jnp.float32, key
        tol = 1e-4 if key == "fd" else 1e-5
        err = rel_err(np.asarray(value, float), out64[key], axis=0 if value.ndim > 1 else None)
        assert err <= tol, (key, err)


# --------------------------------------------------------------------------------------------
# Gradients with respect to the model's parameters
# --------------------------------------------------------------------------------------------


def _with_parameters(model, params):
    return eqx.tree_at(
        lambda m: (m.inertials.mass, m.inertials.com, m.inertials.inertia, m.gravity),
        model,
        (params["mass"], params["com"], params["inertia"], params["gravity"]),
    )


def _parameters(model):
    return dict(mass=model.inertials.mass, com=model.inertials.com, inertia=model.inertials.inertia, gravity=model.gravity)


def _check_gradient(objective, params, rel=1e-6, seed=0):
    """Directional derivatives ``grad . d`` against central differences ``(f(p + h d) - f(p - h d)) / 2h``:
    along every coordinate of leaves with at most 7 entries (masses, gravity), along 4 random
    directions of the larger ones (centres of mass, inertia tensors)."""
    value_and_grad = jax.jit(jax.value_and_grad(objective))  # one compilation for values and gradients
    _, grads = value_and_grad(params)
    rng = np.random.default_rng(seed)
    for key, leaf in params.items():
        leaf = np.asarray(leaf)
        if leaf.size <= 7:
            directions = np.eye(leaf.size).reshape(leaf.size, *leaf.shape)
        else:
            directions = rng.normal(size=(4, *leaf.shape))
        for d in directions:
            h = 1e-6 * max(1.0, float(np.max(np.abs(leaf))))
            up, down = dict(params), dict(params)
            up[key], down[key] = jnp.asarray(leaf + h * d), jnp.asarray(leaf - h * d)
            fd = (float(value_and_grad(up)[0]) - float(value_and_grad(down)[0])) / (2 * h)
            analytic = float(np.sum(np.asarray(grads[key]) * d))
            assert abs(analytic - fd) <= rel * max(1.0, abs(fd)), (key, analytic, fd)


@pytest.mark.slow
def test_gradients_wrt_inertials_and_gravity_chain():
    """d/d(mass, com, inertia, gravity) of a scalar of the fast path (RNEA, M, g, forward dynamics)
    on the random chain, against central finite differences."""
    model = chain7()
    q, qd, qdd, tau = (x[0] for x in states(model, 1, seed=19))
    weights = jnp.asarray(np.random.default_rng(20).normal(size=(4, 7)))

    def objective(params):
        m = _with_parameters(model, params)
        return (
            weights[0] @ dy.inverse_dynamics(m, q, qd, qdd, method="rnea")
            + jnp.sum(weights[:, :4] @ dy.mass_matrix(m, q)[:4])
            + weights[1] @ dy.gravity(m, q)
            + weights[2] @ dy.forward_dynamics(m, q, qd, tau)
        )

    _check_gradient(objective, _parameters(model))


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_gradients_wrt_inertials_and_gravity_kron_path():
    """The same for the papers' path (dM/dq, C*, the Christoffel and Kane C, energies) on the
    elbow."""
    model = kj.models.truc_elbow()
    q, qd, qdd, _ = (x[0] for x in states(model, 1, seed=21))
    weights = jnp.asarray(np.random.default_rng(22).normal(size=(3, 9)))

    def objective(params):
        m = _with_parameters(model, params)
        return (
            weights[0, :3] @ dy.inverse_dynamics(m, q, qd, qdd, method="kron")
            + jnp.sum(weights @ dy.coriolis_star(m, q).T)
            + weights[1, :3] @ (dy.coriolis_matrix(m, q, qd, form="truc") @ qd)
            + weights[1, 3:6] @ (dy.coriolis_matrix(m, q, qd, form="kane") @ qd)
            + dy.kinetic_energy(m, q, qd)
            + dy.potential_energy(m, q)
        )

    _check_gradient(objective, _parameters(model))


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def elbow():
    return kj.models.truc_elbow()


@pytest.mark.usefixtures("without_shape_checks")
def test_mismatched_lengths_name_the_argument(elbow):
    ok, short = jnp.zeros(3), jnp.zeros(2)
    cases = [
        (lambda: dy.mass_matrix(elbow, short), "q must have shape"),
        (lambda: dy.coriolis_star(elbow, jnp.zeros(4)), "q must have shape"),
        (lambda: dy.coriolis_matrix(elbow, ok, short), "v must have shape"),
        (lambda: dy.kinetic_energy(elbow, ok, short), "v must have shape"),
        (lambda: dy.inverse_dynamics(elbow, ok, short, ok), "v must have shape"),
        (lambda: dy.inverse_dynamics(elbow, ok, ok, short), "vd must have shape"),
        (lambda: dy.inverse_dynamics(elbow, ok, ok, jnp.zeros((3, 1))), "vd must have shape"),
        (lambda: dy.forward_dynamics(elbow, ok, ok, short), "tau must have shape"),
        (lambda: dy.forward_dynamics(elbow, ok, short, ok), "v must have shape"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.usefixtures("without_shape_checks")
def test_wrench_on_missing_body(elbow):
    q = jnp.zeros(3)
    with pytest.raises(ValueError, match=r"wrench 0 acts on body 'gripper'.*\['link1', 'link2', 'link3'\]"):
        dy.generalized_forces(elbow, q, [kj.Wrench("gripper", force=[1.0, 0, 0])])
    with pytest.raises(ValueError, match="wrench 1 acts on body 7"):
        dy.inverse_dynamics(elbow, q, q, q, wrenches=[kj.Wrench(0), kj.Wrench(7)])
    with pytest.raises(ValueError, match="Wrench force must be a 3-vector"):
        kj.Wrench(0, force=[1.0, 2.0])
    with pytest.raises(ValueError, match="unknown wrench frame 'world'"):
        kj.Wrench(0, frame="world")
    with pytest.raises(ValueError, match="Wrench point must be None, 'com' or a 3-vector"):
        kj.Wrench(0, point="tip")
    with pytest.raises(TypeError, match="must be a kronjax.Wrench"):
        dy.generalized_forces(elbow, q, [(0, [1.0, 0, 0])])


@pytest.mark.parametrize(
    "inertial, match",
    [
        (kj.Inertial(mass=0.0, inertia=(0.1, 0.1, 0.1)), "mass must be positive"),
        (kj.Inertial(mass=-1.0), "mass must be positive"),
        (kj.Inertial(mass=1.0, inertia=(0.1, -0.2, 0.1)), "not positive semi-definite"),
        (kj.Inertial(mass=1.0, inertia=((0.1, 0.3, 0), (0.3, 0.1, 0), (0, 0, 0.1))), "not positive semi-definite"),
        (kj.Inertial(mass=1.0, inertia=((0.1, 0.05, 0), (0.0, 0.1, 0), (0, 0, 0.1))), "not symmetric"),
    ],
)
def test_bad_inertials_are_rejected_at_construction(inertial, match):
    with pytest.raises(ValueError, match=match):
        kj.from_joints([kj.Joint("R"), kj.Joint("R", parent=0)], [kj.Inertial(mass=1.0), inertial])


def test_unknown_form_and_method(elbow):
    q = jnp.zeros(3)
    with pytest.raises(ValueError, match=r"unknown Coriolis form 'christoffel'.*'truc', 'tuan', 'kane'"):
        dy.coriolis_matrix(elbow, q, q, form="christoffel")
    with pytest.raises(ValueError, match=r"unknown inverse-dynamics method 'newton'.*'rnea', 'euler_lagrange', 'kron'"):
        dy.inverse_dynamics(elbow, q, q, q, method="newton")


def test_model_without_inertials(elbow):
    bare = kj.from_joints([kj.Joint("R")])
    for call in (
        lambda: dy.mass_matrix(bare, jnp.zeros(1)),
        lambda: dy.gravity(bare, jnp.zeros(1)),
        lambda: dy.inverse_dynamics(bare, jnp.zeros(1), jnp.zeros(1), jnp.zeros(1)),
    ):
        with pytest.raises(ValueError, match="no inertials"):
            call()


def test_forward_dynamics_with_non_spd_mass_matrix(elbow):
    """A mass matrix that is not positive definite (masses edited to negative values after
    construction, which bypasses the model checks) raises instead of returning a wrong number,
    eagerly and under jit(vmap)."""
    bad = eqx.tree_at(lambda m: (m.inertials.mass, m.inertials.inertia), elbow, (-elbow.inertials.mass, -elbow.inertials.inertia))
    q = jnp.asarray([0.3, -0.4, 0.5])
    with pytest.raises(Exception, match="mass matrix is not positive definite"):
        dy.forward_dynamics(bad, q, q, q)
    # the model is an argument: the healthy model below runs the same compiled program
    batched = jax.jit(jax.vmap(lambda model, q: dy.forward_dynamics(model, q, q, q), in_axes=(None, 0)))
    with pytest.raises(Exception, match="mass matrix is not positive definite"):
        jax.block_until_ready(batched(bad, jnp.stack([q, 2 * q])))
    # a joint that moves no mass or inertia (centre of mass on its axis, zero inertia): M = 0
    idle = kj.from_joints([kj.Joint("R")], [kj.Inertial(mass=1.0)])
    with pytest.raises(Exception, match="mass matrix is not positive definite"):
        jax.block_until_ready(jax.jit(dy.forward_dynamics)(idle, jnp.zeros(1), jnp.zeros(1), jnp.ones(1)))
    # the healthy model is unaffected
    assert np.all(np.isfinite(np.asarray(batched(elbow, jnp.stack([q, 2 * q])))))
