"""The old names of kronjax 0.1 keep working for one release, each with a ``DeprecationWarning``
(CHANGELOG, "Renamed"), and give what the new names give.

pyproject's ``filterwarnings`` turns these warnings into errors everywhere else, so that neither
kronjax nor its tests use an old name; here ``pytest.warns`` catches each one.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
import kronjax.constrained as kc
import kronjax.identify as ki

pytestmark = pytest.mark.slow  # about 100 worker-seconds (rollouts, solves and a transcription compile): the slow tier

DEPRECATED = "is deprecated, use"


@pytest.fixture(scope="module")
def arm():
    model = kj.models.double_pendulum()
    return model, jnp.array([0.3, -0.5]), jnp.array([0.7, 0.2]), jnp.array([-0.4, 1.1])


def test_velocity_keywords(arm):
    model, q, v, vd = arm
    calls = [
        (lambda **k: kj.inverse_dynamics(model, q, **k), dict(qd=v, qdd=vd), dict(v=v, vd=vd)),
        (lambda **k: kj.inverse_dynamics_derivatives(model, q, **k), dict(qd=v, qdd=vd), dict(v=v, vd=vd)),
        (lambda **k: kj.forward_dynamics(model, q, tau=vd, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.forward_dynamics_derivatives(model, q, tau=vd, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.coriolis_matrix(model, q, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.kinetic_energy(model, q, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.jacobians_dot(model, q, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.linear_velocity(model, q, body=1, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.angular_velocity(model, q, body=1, **k), dict(qd=v), dict(v=v)),
        (lambda **k: kj.linear_acceleration(model, q, body=1, **k), dict(qd=v, qdd=vd), dict(v=v, vd=vd)),
        (lambda **k: kj.angular_acceleration(model, q, body=1, **k), dict(qd=v, qdd=vd), dict(v=v, vd=vd)),
        (lambda **k: ki.regressor(model, q, **k), dict(qd=v, qdd=vd), dict(v=v, vd=vd)),
    ]
    for call, old, new in calls:
        with pytest.warns(DeprecationWarning, match=r"\((qd|qdd)=\.\.\.\) " + DEPRECATED + " (v|vd)="):
            before = call(**old)
        for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(call(**new))):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="both qd= and v="):
        kj.inverse_dynamics(model, q, v=v, qd=v, vd=vd)


def test_state_keywords_of_simulations(arm):
    model, q, v, _ = arm
    ts = jnp.linspace(0.0, 0.01, 3)
    with pytest.warns(DeprecationWarning, match=r"rollout\(qd0=\.\.\.\)"):
        old = kj.simulate.rollout(model, q, torque=None, ts=ts, qd0=v, dt=1e-3)
    new = kj.simulate.rollout(model, q, v, None, ts, dt=1e-3)
    np.testing.assert_array_equal(old.q, new.q)
    with pytest.warns(DeprecationWarning, match=r"Rollout\.qd " + DEPRECATED + r" Rollout\.v\b"):
        np.testing.assert_array_equal(new.qd, new.v)

    mech = kj.models.four_bar()
    m, cons, q0 = mech.model, mech.constraints, mech.q0
    zero = jnp.zeros(3)
    with pytest.warns(DeprecationWarning, match=r"simulate\(qd0=\.\.\.\)"):
        old = kc.simulate(m, cons, q0, torque=None, qd0=zero, dt=1e-3, steps=2)
    new = kc.simulate(m, cons, q0, zero, dt=1e-3, steps=2)
    np.testing.assert_array_equal(old.q, new.q)
    with pytest.warns(DeprecationWarning, match=r"ConstrainedRollout\.qd"):
        np.testing.assert_array_equal(new.qd, new.v)
    sol = kc.solve(m, cons, q0, zero, zero)
    with pytest.warns(DeprecationWarning, match=r"Solution\.qdd " + DEPRECATED + r" Solution\.vd"):
        np.testing.assert_array_equal(sol.qdd, sol.vd)
    with pytest.warns(DeprecationWarning, match=r"solve\(qd=\.\.\.\)"):
        np.testing.assert_array_equal(kc.solve(m, cons, q0, qd=zero, tau=zero).vd, sol.vd)
    system = kc.huang_system(m, cons, q0, zero, zero, 1e-3)
    with pytest.warns(DeprecationWarning, match=r"HuangSystem\.free_qdd"):
        np.testing.assert_array_equal(system.free_qdd, system.free_vd)
    for check in (kc.check_state, kc.project):
        with pytest.warns(DeprecationWarning, match=r"\(qd=\.\.\.\)"):
            check(m, cons, q0, qd=zero)


def test_number_of_velocity_coordinates():
    model = kj.models.panda()
    function_model = kj.from_function(lambda q: model.poses(q), model.nv)
    mech = kj.models.four_bar()
    circle = kc.holonomic(lambda q: jnp.array([q[0] ** 2 + q[1] ** 2 - 1.0]), nv=2)
    cases = [
        (model, "Model", 7),
        (model.kinematics, "Tree", 7),
        (function_model.kinematics, "PosesFunction", 7),
        (circle, "Constraint", 2),
        (mech.constraints, "Constraints", 3),
        (mech, "Mechanism", 1),  # its mobility: nv minus the independent constraint equations
    ]
    for owner, name, expected in cases:
        with pytest.warns(DeprecationWarning, match=rf"{name}\.n_dof " + DEPRECATED):
            assert owner.n_dof == expected
    assert mech.mobility == 1 and model.nv == 7
    for build in (kc.holonomic, kc.pfaffian):
        with pytest.warns(DeprecationWarning, match=r"\(n_dof=\.\.\.\) " + DEPRECATED + " nv="):
            fn = (lambda q: q[:1]) if build is kc.holonomic else (lambda q: jnp.eye(2)[:1])
            assert build(fn, n_dof=2).nv == 2


def test_frame_of_relative_motion():
    model, q = kj.models.stacker(), jnp.array([0.2, 0.4, -0.3])
    with pytest.warns(DeprecationWarning, match=r"relative_motion\(expressed_in=\.\.\.\) " + DEPRECATED + " frame="):
        old = kj.relative_motion(model, q, 2, 0, expressed_in="moving")
    new = kj.relative_motion(model, q, 2, 0, frame="moving")
    np.testing.assert_array_equal(old.H_T, new.H_T)
    with pytest.warns(DeprecationWarning, match=r"RelativeMotion\.expressed_in"):
        assert new.expressed_in == new.frame == "moving"


def test_inverse_dynamics_method(arm):
    model, q, v, vd = arm
    with pytest.warns(DeprecationWarning, match=r"method=\.\.\.\) = 'lagrangian' " + DEPRECATED + " 'euler_lagrange'"):
        old = kj.inverse_dynamics(model, q, v, vd, method="lagrangian")
    np.testing.assert_array_equal(old, kj.inverse_dynamics(model, q, v, vd, method="euler_lagrange"))
    reference = lambda t: (q, v, vd)  # noqa: E731
    with pytest.warns(DeprecationWarning, match="'lagrangian'"):
        assert kj.simulate.feedforward(model, reference, method="lagrangian").method == "euler_lagrange"


def test_gravity_of_the_models():
    with pytest.warns(DeprecationWarning, match=r"truc_elbow\(g=\.\.\.\) " + DEPRECATED + " gravity="):
        np.testing.assert_array_equal(kj.models.truc_elbow(g=9.5).gravity, [0.0, 0.0, -9.5])
    with pytest.warns(DeprecationWarning, match=r"double_pendulum\(g0=\.\.\.\)"):
        np.testing.assert_array_equal(kj.models.double_pendulum(g0=9.5).gravity, [0.0, -9.5, 0.0])
    # the defaults are the papers' (Truc eq. 71; the pendulum's -y)
    np.testing.assert_array_equal(kj.models.truc_elbow().gravity, [0.0, 0.0, -9.807])
    np.testing.assert_array_equal(kj.models.double_pendulum().gravity, [0.0, -9.81, 0.0])


def test_randomness_is_a_key_and_the_regressor_is_y():
    model = kj.models.double_pendulum()
    new = ki.base_parameters(model, jax.random.key(3))
    with pytest.warns(DeprecationWarning, match=r"base_parameters\(seed=\.\.\.\) " + DEPRECATED + " key="):
        old = ki.base_parameters(model, seed=3)
    with pytest.warns(DeprecationWarning, match=r"base_parameters\(model, seed\)"):
        positional = ki.base_parameters(model, 3)
    for base in (old, positional):
        assert base.independent == new.independent
        np.testing.assert_array_equal(base.projection, new.projection)
    assert new.rank == 6  # the double pendulum's six base parameters (see BaseParameters)
    y = ki.regressor(model, *(jax.random.normal(jax.random.key(k), (30, 2)) for k in range(3)))
    with pytest.warns(DeprecationWarning, match=r"base_parameters_from_regressor\(w=\.\.\.\) " + DEPRECATED + " y="):
        assert ki.base_parameters_from_regressor(w=y).rank == ki.base_parameters_from_regressor(y).rank == 6


def test_torque_laws_are_exported_once():
    for name, builder in (
        ("FeedForward", "feedforward"),
        ("ComputedTorque", "computed_torque"),
        ("PD", "pd"),
        ("OpenLoop", "open_loop"),
    ):
        assert name not in kj.simulate.__all__ and builder in kj.simulate.__all__
        with pytest.warns(
            DeprecationWarning, match=rf"kronjax\.simulate\.{name} " + DEPRECATED + rf" kronjax\.simulate\.{builder}"
        ):
            cls = getattr(kj.simulate, name)
        assert cls.__name__ == name
    law = kj.simulate.pd(1.0, 0.1, jnp.zeros(2))
    with pytest.warns(DeprecationWarning):
        assert isinstance(law, kj.simulate.PD)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        kj.simulate.Nothing  # noqa: B018


def test_rollout_passive_default_warns_only_where_it_matters(arm):
    model, q, v, _ = arm
    ts = jnp.linspace(0.0, 0.01, 3)
    damped = kj.from_joints(
        [kj.Joint("R", damping=0.5), kj.Joint("R", parent=0, translation=(1.0, 0.0, 0.0))],
        [kj.Inertial(1.0, inertia=np.eye(3) * 0.1)] * 2,
    )
    with pytest.warns(DeprecationWarning, match=r"rollout\(passive=None\) on a model with damping or friction"):
        old = kj.simulate.rollout(damped, q, v, None, ts, dt=1e-3)
    np.testing.assert_array_equal(old.v, kj.simulate.rollout(damped, q, v, None, ts, dt=1e-3, passive=True).v)
    free = kj.simulate.rollout(damped, q, v, None, ts, dt=1e-3, passive=False).v
    assert float(jnp.max(jnp.abs(free - old.v))) > 1e-6  # the damping acted
    kj.simulate.rollout(model, q, v, None, ts, dt=1e-3)  # no damping, no friction: no warning (an error here)


def test_trajectory_optimisation_names():
    bc = kj.trajopt.BoundaryConditions([0.0], [1.0], 1.0, vd_start=None, vd_end=None)
    with pytest.warns(DeprecationWarning, match=r"\(qdd_start=\.\.\.\) " + DEPRECATED + " vd_start="):
        old = kj.trajopt.BoundaryConditions([0.0], [1.0], 1.0, qdd_start=None, vd_end=None)
    assert old.vd_start is None and bc.vd_start is None
    with pytest.warns(DeprecationWarning, match=r"BoundaryConditions\.qd_end " + DEPRECATED + r" BoundaryConditions\.v_end"):
        np.testing.assert_array_equal(bc.qd_end, bc.v_end)
    with pytest.warns(DeprecationWarning, match=r"BoundaryConditions\.n_dof"):
        assert bc.n_dof == bc.nv == 1
    rotor = kj.from_joints([kj.Joint("R", armature=0.1)], [kj.Inertial(0.0)], gravity=(0.0, 0.0, 0.0))
    problem = kj.trajopt.transcribe(rotor, bc, kj.trajopt.TorqueEffort(), num_control_points=6)
    with pytest.warns(DeprecationWarning, match=r"Problem\.n_dof"):
        assert problem.n_dof == 1
    samples = problem.samples(problem.initial_guess())
    for old_name, new_name in (("qd", "v"), ("qdd", "vd"), ("qddd", "vdd")):
        with pytest.warns(DeprecationWarning, match=rf"Samples\.{old_name} " + DEPRECATED + rf" Samples\.{new_name}\b"):
            np.testing.assert_array_equal(getattr(samples, old_name), getattr(samples, new_name))
    with pytest.warns(DeprecationWarning, match=r"transcribe\(method=\.\.\.\) = 'lagrangian'"):
        kj.trajopt.transcribe(rotor, bc, kj.trajopt.TorqueEffort(), num_control_points=6, method="lagrangian")
