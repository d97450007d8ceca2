"""Free, spherical and planar joints and floating-base robots (issue 15) against Pinocchio and
first principles.

Oracles: Pinocchio 4.1 (``JointModelFreeFlyer``, ``JointModelSpherical``, ``JointModelPlanar``,
``buildModelFromUrdf(path, JointModelFreeFlyer())``) for ``M``, inverse and forward dynamics,
gravity, their analytical derivatives, joint Jacobians (LOCAL_WORLD_ALIGNED and LOCAL), classical
accelerations ``J vd + H (v ⊗ v)`` and ``J vd + Jdot v``, ``integrate`` and ``difference``; first
principles for a free-floating humanoid in zero gravity (momentum conserved and power balanced
along the forward dynamics) and central differences on the manifold for derivatives with respect to
the configuration. Configurations come from Pinocchio's ``randomConfiguration``.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pinocchio as pin
import pytest
from checks import TOL
from oracles import jit_once, mixed_model, relative_error, symmetric_from_upper, to_pinocchio

import kronjax as kj

DATA = Path(__file__).parent / "data"
STATES = 20


class Twin:
    """A kronjax model, its Pinocchio twin and the maps between their coordinates (by joint name:
    Pinocchio's URDF parser orders sibling joints by name, kronjax by file order)."""

    def __init__(self, model: kj.Model, pm):
        self.model, self.pm, self.pd = model, pm, pm.createData()
        moving = [name for name, kind in zip(model.joint_names, model.kinematics.kinds) if kind != "F"]
        ids = [pm.getJointId(name) for name in moving]
        self.ids = {name: jid for name, jid in zip(moving, ids)}
        self.q_perm = np.concatenate([np.arange(pm.idx_qs[j], pm.idx_qs[j] + pm.nqs[j]) for j in ids])
        self.v_perm = np.concatenate([np.arange(pm.idx_vs[j], pm.idx_vs[j] + pm.nvs[j]) for j in ids])

    def states(self, count: int = STATES, seed: int = 0):
        """Pinocchio's random configurations (translations in [-1, 1]), random v and a."""
        rng = np.random.default_rng(seed)
        pin.seed(seed)
        bound = np.ones(self.pm.nq)
        qs = np.stack([pin.randomConfiguration(self.pm, -bound, bound) for _ in range(count)])
        vs, accs = rng.normal(size=(2, count, self.pm.nv))
        return qs, vs, accs

    def ours(self, q, v, a):
        return q[..., self.q_perm], v[..., self.v_perm], a[..., self.v_perm]

    def vec(self, x):
        return np.asarray(x)[self.v_perm]

    def mat(self, m):
        return np.asarray(m)[np.ix_(self.v_perm, self.v_perm)]


@pytest.fixture(scope="module")
def mixed():
    model = mixed_model()
    return Twin(model, to_pinocchio(model))


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("humanoid", marks=pytest.mark.slow),
        pytest.param("quadruped", marks=[pytest.mark.slow, pytest.mark.extended]),  # the humanoid's checks the same code
    ],
)
def robot(request):
    path = DATA / f"{request.param}.urdf"
    twin = Twin(kj.load_urdf(path, floating_base=True), pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()))
    twin.name = request.param
    return twin


def _dynamics(model, derivatives: bool):
    def values(q, v, a):
        out = dict(
            M=kj.mass_matrix(model, q),
            tau=kj.inverse_dynamics(model, q, v, a),
            qdd=kj.forward_dynamics(model, q, v, a),
            g=kj.gravity(model, q),
        )
        if derivatives:
            out["dtau_dq"], out["dtau_dv"], _ = kj.inverse_dynamics_derivatives(model, q, v, a)
            out["dqdd_dq"], out["dqdd_dv"], out["minv"] = kj.forward_dynamics_derivatives(model, q, v, a)
        return out

    return jit_once(jax.vmap(values))


def _pinocchio_dynamics(twin: Twin, q, v, a) -> dict:
    pm, pd = twin.pm, twin.pd
    dq, dv, _ = pin.computeRNEADerivatives(pm, pd, q, v, a)
    dq, dv = dq.copy(), dv.copy()
    fq, fv, minv = (x.copy() for x in pin.computeABADerivatives(pm, pd, q, v, a))
    return dict(
        M=twin.mat(symmetric_from_upper(pin.crba(pm, pd, q))),
        tau=twin.vec(pin.rnea(pm, pd, q, v, a)),
        qdd=twin.vec(pin.aba(pm, pd, q, v, a)),
        g=twin.vec(pin.computeGeneralizedGravity(pm, pd, q)),
        dtau_dq=twin.mat(dq),
        dtau_dv=twin.mat(dv),
        dqdd_dq=twin.mat(fq),
        dqdd_dv=twin.mat(fv),
        minv=twin.mat(symmetric_from_upper(minv)),
    )


def _check_dynamics(twin: Twin, count: int, derivatives: bool = True) -> None:
    qs, vs, accs = twin.states(count)
    ours = _dynamics(twin.model, derivatives)(*(jnp.asarray(x) for x in twin.ours(qs, vs, accs)))
    for k in range(count):
        expected = _pinocchio_dynamics(twin, qs[k], vs[k], accs[k])
        for name, value in ours.items():
            assert relative_error(value[k], expected[name]) < TOL, (name, k)


@pytest.mark.slow  # compile-bound (46 s); the fast tier checks floating dynamics in test_lagrangian_floating
def test_mixed_tree_dynamics_against_pinocchio(mixed):
    assert (mixed.model.nq, mixed.model.nv) == (mixed.pm.nq, mixed.pm.nv) == (18, 15)
    _check_dynamics(mixed, STATES)


def test_floating_base_robots_against_pinocchio(robot):
    nq, nv = {"humanoid": (38, 37), "quadruped": (19, 18)}[robot.name]
    assert (robot.model.nq, robot.model.nv) == (robot.pm.nq, robot.pm.nv) == (nq, nv)
    assert robot.model.joint_names[0] == "root_joint" and robot.model.kinematics.kinds[0] == "free"
    _check_dynamics(robot, 5, derivatives=robot.name == "quadruped")  # the humanoid's compile: minutes


@pytest.mark.slow
def test_coriolis_terms_on_the_tangent_space(mixed):
    """``dM/dq`` (both methods) against ``jax.jacfwd`` of ``M(q ⊕ d)``; ``M vd + C* (v ⊗ v) + g``
    (both methods; ``method="kron"``) and ``M vd + C v + g`` (three forms) against Pinocchio's rnea;
    Truc's ``C`` against Pinocchio's ``computeCoriolisMatrix``; ``Mdot - 2 C`` skew-symmetric for
    the forms of Truc and Kane, ``Mdot`` along ``q ⊕ t v``; the kinetic energy ``v M v / 2``."""
    model, pm, pd = mixed.model, mixed.pm, mixed.pd
    n = model.nv

    def values(q, v, a):
        out = dict(mdot=jax.jvp(lambda t: kj.mass_matrix(model, kj.integrate(model, q, t * v)), (0.0,), (1.0,))[1])
        out["dm_autodiff"] = jax.jacfwd(lambda d: kj.mass_matrix(model, kj.integrate(model, q, d)))(jnp.zeros(n))
        for method in ("composite", "jacobians"):
            out[f"dm_{method}"] = kj.mass_matrix_derivative(model, q, method=method)
            out[f"cstar_{method}"] = kj.coriolis_star(model, q, method=method)
        for form in kj.dynamics.CORIOLIS_FORMS:
            out[form] = kj.coriolis_matrix(model, q, v, form=form)
        out["kron"] = kj.inverse_dynamics(model, q, v, a, method="kron")
        out["M"], out["g"] = kj.mass_matrix(model, q), kj.gravity(model, q)
        out["T"] = kj.kinetic_energy(model, q, v)
        return out

    qs, vs, accs = mixed.states(5, seed=6)
    ours = jit_once(jax.vmap(values))(*(jnp.asarray(x) for x in mixed.ours(qs, vs, accs)))
    for k in range(5):
        q, v, a = mixed.ours(qs[k], vs[k], accs[k])
        tau = mixed.vec(pin.rnea(pm, pd, qs[k], vs[k], accs[k]))
        pin.computeCoriolisMatrix(pm, pd, qs[k], vs[k])
        o = {key: np.asarray(value[k]) for key, value in ours.items()}
        m, g, vv = o["M"], o["g"], np.kron(v, v)
        for method in ("composite", "jacobians"):
            assert relative_error(o[f"dm_{method}"], o["dm_autodiff"].reshape(n, n * n)) < 1e-12
            assert relative_error(m @ a + o[f"cstar_{method}"] @ vv + g, tau) < TOL
        assert relative_error(o["kron"], tau) < TOL
        for form in kj.dynamics.CORIOLIS_FORMS:
            assert relative_error(m @ a + o[form] @ v + g, tau) < TOL, form
        assert relative_error(o["truc"], mixed.mat(pd.C)) < TOL
        for form in ("truc", "kane"):
            skew = o["mdot"] - 2 * o[form]
            assert np.max(np.abs(skew + skew.T)) < TOL * np.max(np.abs(o["mdot"])), form
        assert abs(float(o["T"]) - 0.5 * v @ m @ v) < TOL * abs(float(o["T"]))


def test_mixed_tree_kinematics_against_pinocchio(mixed):
    model, pm, pd = mixed.model, mixed.pm, mixed.pd

    def values(q, v, a):
        out = {}
        for frame in ("base", "body"):
            out[f"J_{frame}"] = kj.jacobians(model, q, frame=frame)
        out["H"] = kj.hessians(model, q)
        out["Jdot"] = kj.jacobians_dot(model, q, v)
        return out

    qs, vs, accs = mixed.states()
    ours = jit_once(jax.vmap(values))(*(jnp.asarray(x) for x in mixed.ours(qs, vs, accs)))
    bodies = [b for b, kind in enumerate(model.kinematics.kinds) if kind != "F"]
    for k in range(STATES):
        q, v, a = qs[k], vs[k], accs[k]
        pin.computeJointJacobians(pm, pd, q)
        pin.forwardKinematics(pm, pd, q, v, a)
        qk, vk, ak = mixed.ours(q, v, a)
        for b in bodies:
            jid = mixed.ids[model.joint_names[b]]
            for frame, reference in (("base", pin.LOCAL_WORLD_ALIGNED), ("body", pin.LOCAL)):
                expected = pin.getJointJacobian(pm, pd, jid, reference)[:, mixed.v_perm]
                jt, jr = (x[k, b] for x in ours[f"J_{frame}"])
                assert relative_error(np.vstack([jt, jr]), expected) < TOL, (frame, b, k)
            acc = pin.getClassicalAcceleration(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)
            expected = np.concatenate([acc.linear, acc.angular])
            jt, jr = (x[k, b] for x in ours["J_base"])
            ht, hr = (x[k, b] for x in ours["H"])
            jtd, jrd = (x[k, b] for x in ours["Jdot"])
            vv = np.kron(vk, vk)
            by_hessian = np.concatenate([jt @ ak + ht @ vv, jr @ ak + hr @ vv])
            by_jdot = np.concatenate([jt @ ak + jtd @ vk, jr @ ak + jrd @ vk])
            assert relative_error(by_hessian, expected) < TOL, (b, k)
            assert relative_error(by_jdot, expected) < TOL, (b, k)


@pytest.mark.slow
def test_analytic_kinematics_equal_autodiff_along_the_tangent_space(mixed):
    """The analytic Jacobians, Hessians and dJ/dt against ``jax.jacfwd`` / ``jax.jvp`` of the poses
    composed with ``integrate`` (derivatives along ``q ⊕ v``), both frames, at the centres of mass."""
    model = mixed.model

    def both(q, v):
        out = []
        for method in ("analytic", "autodiff"):
            for frame in ("base", "body"):
                out.append(
                    (
                        kj.jacobians(model, q, frame=frame, points="com", method=method),
                        kj.hessians(model, q, frame=frame, points="com", method=method),
                        kj.jacobians_dot(model, q, v, frame=frame, points="com", method=method),
                    )
                )
        return out

    qs, vs, accs = mixed.states(3, seed=1)
    fn = jit_once(both)
    for k in range(3):
        q, v, _ = mixed.ours(qs[k], vs[k], accs[k])
        out = fn(jnp.asarray(q), jnp.asarray(v))
        for analytic, autodiff in zip(out[:2], out[2:]):
            for x, y in zip(jax.tree.leaves(analytic), jax.tree.leaves(autodiff)):
                assert relative_error(x, y) < 1e-12


def test_integrate_and_difference_against_pinocchio(mixed):
    model, pm = mixed.model, mixed.pm
    qs, vs, _ = mixed.states(STATES, seed=2)
    q1s = np.stack([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(STATES)])
    integrate = jit_once(jax.vmap(lambda q, v: kj.integrate(model, q, v)))
    difference = jit_once(jax.vmap(lambda q0, q1: kj.difference(model, q0, q1)))
    ours_q, ours_v, _ = mixed.ours(qs, vs, vs)
    ours_q1 = q1s[:, mixed.q_perm]
    got_q = np.asarray(integrate(ours_q, ours_v))
    got_v = np.asarray(difference(ours_q, ours_q1))
    for k in range(STATES):
        expected = pin.integrate(pm, qs[k], vs[k])[mixed.q_perm]
        quaternions = [s for s in (slice(3, 7), slice(8, 12)) if np.dot(got_q[k, s], expected[s]) < 0]
        for s in quaternions:  # a quaternion and its negative are the same rotation
            expected[s] = -expected[s]
        assert relative_error(got_q[k], expected) < TOL
        assert relative_error(got_v[k], mixed.vec(pin.difference(pm, qs[k], q1s[k]))) < TOL
    assert relative_error(kj.neutral(model), pin.neutral(pm)[mixed.q_perm]) == 0
    unnormalised = ours_q[0] * np.where(np.isin(np.arange(model.nq), [3, 4, 5, 6, 8, 9, 10, 11, 15, 16]), 1.7, 1.0)
    assert relative_error(kj.normalize(model, unnormalised), ours_q[0]) < 1e-15


def test_random_configuration_is_on_the_manifold(mixed):
    model = mixed.model
    qs = jax.vmap(lambda key: kj.random_configuration(model, key))(jax.random.split(jax.random.key(0), 500))
    for s in (slice(3, 7), slice(8, 12), slice(15, 17)):  # free, spherical quaternions; planar (cos, sin)
        assert np.max(np.abs(np.linalg.norm(qs[:, s], axis=1) - 1)) < 1e-14
    assert np.all(np.abs(qs[:, :3]) <= 1.0)


@pytest.mark.slow
def test_derivatives_with_respect_to_the_configuration_are_along_the_tangent_space(mixed):
    """``jax.jvp`` of inverse and forward dynamics (through their analytic derivative rules) along
    ``t -> q ⊕ t d`` against central differences of the same curve, and ``jax.grad`` of a loss
    with respect to ``q`` (``(nq,)``, through the rules) against central differences along a curve
    through ``q`` with the same ambient tangent."""
    model = mixed.model
    qs, vs, accs = mixed.states(2, seed=3)
    q, v, a = (jnp.asarray(x) for x in mixed.ours(qs[0], vs[0], accs[0]))
    d = jnp.asarray(np.random.default_rng(4).normal(size=model.nv))
    curve = lambda t: kj.integrate(model, q, t * d)  # noqa: E731
    for f in (lambda q: kj.inverse_dynamics(model, q, v, a), lambda q: kj.forward_dynamics(model, q, v, a)):
        along = jax.jit(lambda t: f(curve(t)))
        tangent = jax.jvp(along, (0.0,), (1.0,))[1]
        h = 1e-5
        central = (along(h) - along(-h)) / (2 * h)
        assert relative_error(tangent, central) < 1e-8
    loss = lambda q: jnp.sum(kj.inverse_dynamics(model, q, v, a) ** 2)  # noqa: E731
    grad = jax.grad(loss)(q)
    ambient = jax.jvp(curve, (0.0,), (1.0,))[1]  # the same curve's velocity in q's numbers
    h = 1e-5
    central = (loss(curve(h)) - loss(curve(-h))) / (2 * h)
    assert abs(float(grad @ ambient) - float(central)) < 1e-7 * abs(float(central))


@pytest.mark.parametrize(
    "name", [pytest.param("quadruped", marks=[pytest.mark.slow, pytest.mark.extended])]
)  # the humanoid: tests/test_simulate_floating.py
def test_free_floating_robot_conserves_momentum_and_balances_power(name):
    """In zero gravity with no force on the base (``tau[:6] = 0``) and any joint torques, the
    accelerations of :func:`forward_dynamics` keep the linear and angular momentum constant
    (``dh/dt = 0``, ``h`` summed over the bodies' centres of mass from their Jacobians), and the
    kinetic energy changes by the torques' power (``dT/dt = v . tau``)."""
    path = DATA / f"{name}.urdf"
    model = kj.load_urdf(path, floating_base=True, gravity=(0.0, 0.0, 0.0))
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    twin = Twin(model, pm)
    momentum_and_energy = oracles.momentum_and_energy(model)

    @jit_once
    def rates(q, v, tau):
        a = kj.forward_dynamics(model, q, v, tau)
        state = lambda t: (kj.integrate(model, q, t * v), v + t * a)  # noqa: E731
        values, changes = jax.jvp(lambda t: momentum_and_energy(*state(t)), (0.0,), (1.0,))
        return values, changes

    qs, vs, taus = twin.states(3, seed=5)
    for k in range(3):
        q, v, tau = twin.ours(qs[k], vs[k], taus[k])
        tau[:6] = 0.0
        (linear, angular, _), (d_linear, d_angular, d_energy) = rates(q, v, tau)
        assert np.max(np.abs(d_linear)) < 1e-10 * (1 + np.max(np.abs(linear)))
        assert np.max(np.abs(d_angular)) < 1e-10 * (1 + np.max(np.abs(angular)))
        assert abs(float(d_energy) - float(v @ tau)) < 1e-10 * (1 + abs(float(v @ tau)))


@pytest.mark.extended  # float32: test_kinematics, test_dynamics_derivatives
@pytest.mark.slow
def test_float32_and_a_batch_of_ten_thousand_states():
    """float32 within 1e-4 (relative, of the largest entry) of float64 (matmul precision is not at
    stake: the recursions are element-wise), and ``jax.vmap`` over 10^4 states equal to one state
    at a time."""
    model = kj.load_urdf(DATA / "quadruped.urdf", floating_base=True)
    keys = jax.random.split(jax.random.key(1), 10_000)
    qs = jax.vmap(lambda key: kj.random_configuration(model, key))(keys)
    vs, accs = jax.random.normal(jax.random.key(2), (2, 10_000, model.nv))
    batch = jax.jit(jax.vmap(lambda q, v, a: kj.inverse_dynamics(model, q, v, a)))(qs, vs, accs)
    one = jax.jit(lambda q, v, a: kj.inverse_dynamics(model, q, v, a))
    for k in (0, 4321, 9999):
        assert relative_error(batch[k], one(qs[k], vs[k], accs[k])) < 1e-13
    small = model.astype(jnp.float32)
    f32 = jax.jit(jax.vmap(lambda q, v, a: (kj.inverse_dynamics(small, q, v, a), kj.forward_dynamics(small, q, v, a))))
    f64 = jax.jit(jax.vmap(lambda q, v, a: (kj.inverse_dynamics(model, q, v, a), kj.forward_dynamics(model, q, v, a))))
    x32, x64 = f32(*(x[:100].astype(jnp.float32) for x in (qs, vs, accs))), f64(qs[:100], vs[:100], accs[:100])
    for a, b in zip(x32, x64):
        assert a.dtype == jnp.float32
        assert relative_error(a, b) < 1e-4


@pytest.mark.extended  # regressors: test_identify
@pytest.mark.slow
def test_identification_regressor_of_a_floating_base_robot():
    """``identify.regressor`` against Pinocchio's ``computeJointTorqueRegressor`` (columns matched
    by body, rows by joint name), ``Y pi = tau``, and the number of base parameters against the
    numerical rank of Pinocchio's regressor stacked over 60 states."""
    path = DATA / "quadruped.urdf"
    twin = Twin(kj.load_urdf(path, floating_base=True), pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()))
    model = twin.model
    qs, vs, accs = twin.states(3, seed=7)
    q, v, a = twin.ours(qs, vs, accs)
    ours = np.asarray(kj.identify.regressor(model, q, v, a))
    columns = np.concatenate([np.arange(10 * (twin.ids[name] - 1), 10 * twin.ids[name]) for name in model.joint_names])
    for k in range(3):
        expected = pin.computeJointTorqueRegressor(twin.pm, twin.pd, qs[k], vs[k], accs[k])
        assert relative_error(ours[k], expected[np.ix_(twin.v_perm, columns)]) < TOL
        tau = twin.vec(pin.rnea(twin.pm, twin.pd, qs[k], vs[k], accs[k]))
        assert relative_error(ours[k] @ kj.identify.standard_parameters(model), tau) < TOL
    stacked = np.concatenate([pin.computeJointTorqueRegressor(twin.pm, twin.pd, *s) for s in zip(*twin.states(60, seed=8))])
    rank = np.linalg.matrix_rank(stacked, tol=1e-9 * np.linalg.norm(stacked, 2))
    assert kj.identify.base_parameters(model).rank == rank == 94


def test_indices_and_names(mixed):
    model = mixed.model
    assert model.velocity_index("j0") == slice(0, 6) and model.configuration_index("j0") == slice(0, 7)
    assert model.velocity_index("j2") == slice(7, 10) and model.configuration_index("j2") == slice(8, 12)
    assert model.velocity_index("j5") == slice(11, 14) and model.configuration_index("j5") == slice(13, 17)
    assert model.coordinate_names[:7] == ("j0",) * 6 + ("j1",)
    with pytest.raises(KeyError, match="no joint named 'elbow'"):
        model.velocity_index("elbow")
    with pytest.raises(ValueError, match="joint 'j4' is fixed"):
        model.configuration_index("j4")


@pytest.mark.usefixtures("without_shape_checks")
def test_bad_input_gets_a_clear_error(mixed):
    model = mixed.model
    q = kj.neutral(model)
    with pytest.raises(ValueError, match=r"q must have shape \(18,\) for this model with nq = 18, nv = 15"):
        kj.mass_matrix(model, jnp.zeros(15))
    unnormalised = q.at[8:12].multiply(1.01)  # the spherical joint's quaternion
    with pytest.raises(ValueError, match=r"q: the quaternion of spherical joint 'j2' has norm 1.01.*kronjax.normalize"):
        kj.inverse_dynamics(model, unnormalised, jnp.zeros(15), jnp.zeros(15))
    with pytest.raises(ValueError, match=r"the \(cos, sin\) pair of planar joint 'j5'"):
        kj.mass_matrix(model, q.at[15].set(2.0))
    assert relative_error(kj.normalize(model, unnormalised), q) < 1e-15
    with pytest.raises(ValueError, match=r"v must have shape \(15,\)"):
        kj.inverse_dynamics(model, q, jnp.zeros(18), jnp.zeros(15))
    with pytest.raises(ValueError, match="a spherical joint takes no position limits"):
        kj.from_joints([kj.Joint("spherical", upper=1.0)], [kj.Inertial(1.0, inertia=(1.0, 1.0, 1.0))])
    with pytest.raises(ValueError, match="needs the identity Post placement"):
        tree = model.kinematics
        kj.chain.Tree(
            tree.parents,
            tree.kinds,
            tree.axes,
            tree.pre_rotation,
            tree.pre_translation,
            tree.post_rotation,
            tree.post_translation.at[0, 0].set(1.0),
        )


URDF_FLOATING = """<robot name="r">
  <link name="world"/>
  <link name="body"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="float" type="{kind}"><parent link="world"/><child link="body"/>{axis}</joint>
  <joint name="hinge" type="revolute"><parent link="body"/><child link="arm"/><origin xyz="0.3 0 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
</robot>"""


def test_urdf_floating_and_planar_joints():
    floating = kj.load_urdf(URDF_FLOATING.format(kind="floating", axis=""))
    assert floating.kinematics.kinds == ("free", "R") and (floating.nq, floating.nv) == (8, 7)
    planar = kj.load_urdf(URDF_FLOATING.format(kind="planar", axis='<axis xyz="0 0 1"/>'))
    assert planar.kinematics.kinds == ("planar", "R") and (planar.nq, planar.nv) == (5, 4)
    for model, text in (
        (floating, URDF_FLOATING.format(kind="floating", axis="")),
        (planar, URDF_FLOATING.format(kind="planar", axis='<axis xyz="0 0 1"/>')),
    ):
        twin = Twin(model, pin.buildModelFromXML(text))
        qs, vs, accs = twin.states(1)
        q, v, a = twin.ours(qs[0], vs[0], accs[0])
        expected = twin.vec(pin.rnea(twin.pm, twin.pd, qs[0], vs[0], accs[0]))
        assert relative_error(kj.inverse_dynamics(model, q, v, a), expected) < TOL
    with pytest.raises(kj.urdf.URDFError, match="planar joint moves in its joint frame's x-y plane"):
        kj.load_urdf(URDF_FLOATING.format(kind="planar", axis='<axis xyz="1 0 0"/>'))
    with pytest.raises(kj.urdf.URDFError, match="would add a second free-flyer"):
        kj.load_urdf(URDF_FLOATING.format(kind="floating", axis=""), floating_base=True)
