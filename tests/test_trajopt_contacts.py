"""Contact schedules and the validation of plans by simulation (``kronjax.trajopt``'s
``ContactSchedule`` and ``validate``), against first principles and Pinocchio:

- a schedule's phases and active contacts at and between its boundaries, and other durations of
  the same structure run by the same compiled program;
- a rigid box on a flat foot (one ``"6d"`` contact) thrown spinning: its centre of mass follows
  the parabola of gravity and its angular momentum about it is conserved while it flies, the
  touchdown (a plastic impact) stops it, and the ground then holds its weight (the docstring of
  ``validate``: standing from the start);
- Crocoddyl's plan of ANYmal trotting holds in kronjax's equations of motion, and kronjax's
  simulation of it stays within 3 mm (slow tier); ANYmal standing on its four feet under
  the torques and forces of Pinocchio's statics stays where it is (extended tier);
- a flat foot's wrench cone (``Contact.cone``, Caron et al.'s closed form) against the wrenches
  that forces at its sole's corners inside their friction pyramids sum to (a linear program of
  SciPy's), and a point contact's pyramid against its faces' definition;
- bad input gets clear errors.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj
from kronjax import trajopt
from kronjax.trajopt._solver import compile_clock

G = 9.81
MASS = 2.0
FEET = ("LF", "RF", "LH", "RH")


def _trot():
    feet = [trajopt.Contact(name, 0, friction=0.7) for name in FEET]
    return trajopt.ContactSchedule(feet, [(0.2, FEET), (0.3, ("RF", "LH")), (0.1, FEET), (0.3, ("LF", "RH")), (0.2, FEET)])


def test_schedule_phases_and_active_contacts():
    trot = _trot()
    np.testing.assert_allclose(trot.boundaries, [0.0, 0.2, 0.5, 0.6, 0.9, 1.1], atol=1e-15)
    # a phase holds its start, not its end; before 0 and after the end: the first and last phases
    times = [-1.0, 0.0, 0.1999, 0.2, 0.55, 0.6, 1.05, 1.1, 2.0]
    assert [int(trot.phase_at(t)) for t in times] == [0, 0, 0, 1, 2, 3, 4, 4, 4]
    assert trot.active_at(0.25).tolist() == [False, True, True, False]
    assert trot.active_at(0.7).tolist() == [True, False, False, True]
    assert trot.touchdowns().tolist() == [
        [False] * 4,
        [False] * 4,
        [True, False, False, True],
        [False] * 4,
        [False, True, True, False],
    ]


def test_other_durations_of_a_schedule_reuse_its_program():
    at = jax.jit(lambda schedule, t: schedule.active_at(t))
    trot = _trot()
    assert at(trot, 0.25).tolist() == [False, True, True, False]
    later = trot.with_durations(jnp.array([0.3, 0.3, 0.1, 0.3, 0.2]))
    with compile_clock() as seconds:
        assert at(later, 0.25).tolist() == [True] * 4
    assert seconds() == 0.0


def _box():
    return kj.from_joints([kj.Joint("free")], [kj.Inertial(mass=MASS, inertia=(0.1, 0.2, 0.3))])


def _sole(friction=0.5):
    return trajopt.Contact("sole", 0, point=(0.0, 0.0, -0.05), friction=friction, kind="6d")


def _still_plan(model, duration, samples=5, forces=None):
    ts = jnp.linspace(0.0, duration, samples)
    q = jnp.tile(kj.neutral(model), (samples, 1))
    zeros = jnp.zeros((samples, model.nv))
    return trajopt.Plan(ts, q, zeros, zeros, None if forces is None else jnp.tile(forces, (samples, 1)), zeros)


def test_a_box_thrown_spinning_flies_on_a_parabola_stops_at_touchdown_and_stands():
    box = _box()
    schedule = trajopt.ContactSchedule([_sole()], [(0.2, ()), (0.1, ("sole",))])
    v0 = jnp.array([0.5, 0.0, 1.0, 0.3, 2.0, 0.1])  # the body frame's linear and angular velocity
    plan = _still_plan(box, 0.3)
    plan = trajopt.Plan(plan.ts, plan.q, jnp.tile(v0, (5, 1)), plan.tau)
    result = trajopt.validate(box, schedule, plan, dt=0.005)
    flight = np.asarray(result.ts) <= 0.2 + 1e-12
    ts = result.ts[flight][:, None]
    com = jax.vmap(lambda q: kj.center_of_mass(box, q))(result.q[flight])
    momentum = jax.vmap(lambda q, v: kj.centroidal_momentum(box, q, v))(result.q[flight], result.v[flight])
    parabola = com[0] + momentum[0, :3] / MASS * ts + 0.5 * jnp.array([0.0, 0.0, -G]) * ts**2
    np.testing.assert_allclose(com, parabola, atol=1e-8)
    np.testing.assert_allclose(momentum[:, 3:], np.tile(momentum[0, 3:], (int(flight.sum()), 1)), atol=1e-12)
    np.testing.assert_allclose(result.forces[:40], 0.0, atol=1e-12)  # no contact while it flies
    # the flat foot holds all six coordinates: the impact stops the box, and it stands where it
    # landed (tilted): the ground's force is its weight, its moment about the foot (c - p) x m g
    np.testing.assert_allclose(result.v[~flight], 0.0, atol=1e-12)
    assert result.touchdown_speed > 0.5 and result.contact_violation < 1e-12
    rotations, origins = box.poses(result.q[-1])
    foot = origins[0] + rotations[0] @ _sole().point
    weight = np.array([0.0, 0.0, MASS * G])
    moment = np.cross(np.asarray(kj.center_of_mass(box, result.q[-1]) - foot), weight)
    np.testing.assert_allclose(result.forces[-1], np.concatenate([weight, moment]), atol=1e-10)
    assert result.normal_force == pytest.approx(MASS * G, abs=1e-10) and result.cone_margin == pytest.approx(
        0.5 * MASS * G, abs=1e-10
    )
    assert np.isnan(result.plan_cone_margin) and np.isnan(result.plan_dynamics_residual)  # the plan has no forces
    other = schedule.with_durations(jnp.array([0.15, 0.15]))
    trajopt.validate(box, other, plan, dt=0.005)  # the eager figures' small programs compile once
    with compile_clock() as seconds:  # other durations, the same total: the same program
        trajopt.validate(box, other.with_durations(jnp.array([0.25, 0.05])), plan, dt=0.005)
    assert seconds() == 0.0


def test_a_box_on_a_swinging_leg_conserves_energy():
    """A box with a revolute leg, its foot a point contact (held still) and no torque: the contact
    does no work, so the energy stays; the base rotates and the leg swings, so the contact's drift
    ``-(dA/dt) v`` is not zero (on a free body alone it is, and a wrong sign would pass)."""
    robot = kj.from_joints(
        [kj.Joint("free"), kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(0, 0, -0.1))],
        [kj.Inertial(mass=2.0, inertia=(0.1, 0.2, 0.3)), kj.Inertial(mass=0.5, com=(0, 0, -0.2), inertia=(0.01, 0.01, 0.001))],
    )
    schedule = trajopt.ContactSchedule([trajopt.Contact("foot", 1, point=(0.0, 0.0, -0.4))], [(0.3, ("foot",))])
    q0 = kj.neutral(robot).at[7].set(0.3)
    jac = kj.translational_jacobian(robot, q0, 1, point=(0.0, 0.0, -0.4))
    spin = jnp.array([0.0, 0.0, 0.0, 1.0, -2.0, 0.5, 3.0])
    v0 = spin.at[:3].set(-jnp.linalg.solve(jac[:, :3], jac[:, 3:] @ spin[3:]))  # the foot at rest
    plan = trajopt.Plan(jnp.linspace(0.0, 0.3, 3), jnp.tile(q0, (3, 1)), jnp.tile(v0, (3, 1)), jnp.zeros((3, 7)))
    result = trajopt.validate(robot, schedule, plan, dt=2e-3)

    def energy(q, v):
        return 0.5 * v @ kj.mass_matrix(robot, q) @ v + 2.5 * G * kj.center_of_mass(robot, q)[2]

    energies = jax.vmap(energy)(result.q, result.v)
    assert float(jnp.max(jnp.abs(energies - energies[0]))) < 1e-7  # measured 6e-10; with the drift's sign flipped, 4e-2
    assert result.contact_violation < 1e-9  # one step's drift before the projection
    assert float(jnp.ptp(result.q[:, 7])) > 0.1  # the leg swings


def test_a_plans_feet_may_move_between_two_stances_that_no_sample_separates():
    """Samples at 0, 0.08, 0.16 and 0.24 s around a flight of 0.1-0.15 s that no sample falls in:
    the box lands 0.1 m further, a new stance, not a slide."""
    from kronjax.trajopt._validate import _plan_figures

    box = _box()
    schedule = trajopt.ContactSchedule([_sole()], [(0.1, ("sole",)), (0.05, ()), (0.1, ("sole",))])
    ts = jnp.array([0.0, 0.08, 0.16, 0.24])
    q = jnp.tile(kj.neutral(box), (4, 1)).at[2:, 0].set(0.1)
    plan = trajopt.Plan(ts, q, jnp.zeros((4, 6)), jnp.zeros((4, 6)))
    assert _plan_figures(box, schedule, schedule.bodies(box), plan)[2] == 0.0
    one_stance = trajopt.ContactSchedule([_sole()], [(0.25, ("sole",))])
    assert _plan_figures(box, one_stance, one_stance.bodies(box), plan)[2] == pytest.approx(0.1)


def test_wrench_cone_is_the_sum_of_the_corners_pyramids():
    """A wrench is inside a flat foot's cone (every face of ``Contact.cone`` <= 0) exactly when
    forces at its sole's four corners, each inside the pyramid ``|f_x|, |f_y| <= mu / sqrt 2 f_z``
    of the sole's frame, sum to it: a linear program in the 16 edges' coefficients (SciPy's
    HiGHS), for a sole turned about the vertical and tilted, on random wrenches of which about a
    quarter are inside; the faces are in newtons, so their largest is the distance a wrench is
    out."""
    from scipy.optimize import linprog

    from kronjax._lie import exp3

    sole = trajopt.Contact("sole", 0, point=(0.03, 0.01, -0.05), friction=0.6, kind="6d", size=(0.2, 0.08))
    rotation = np.asarray(exp3(jnp.array([0.1, -0.05, 0.7])))
    mu = 0.6 / np.sqrt(2.0)
    edges = []
    for corner in np.asarray(sole.support - sole.point):
        for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            force = rotation @ np.array([sx * mu, sy * mu, 1.0])
            edges.append(np.concatenate([force, np.cross(rotation @ corner, force)]))
    edges = np.array(edges).T
    rng = np.random.default_rng(0)
    wrenches = rng.normal(size=(600, 6)) * np.array([1.0, 1.0, 1.0, 0.1, 0.1, 0.1])
    wrenches = np.concatenate(
        [wrenches[:, :3] @ rotation.T * [1, 1, 0] + np.abs(wrenches[:, 2:3]) * 3 * rotation[:, 2], wrenches[:, 3:] @ rotation.T],
        axis=1,
    )
    faces = np.asarray(jax.vmap(lambda w: sole.cone(w, jnp.asarray(rotation)))(jnp.asarray(wrenches)))
    assert faces.shape == (600, 16)
    inside = 0
    for wrench, worst in zip(wrenches, faces.max(axis=1)):
        if abs(worst) < 1e-6:
            continue  # on a face: either answer is right
        feasible = linprog(np.zeros(16), A_eq=edges, b_eq=wrench, bounds=(0, None), method="highs").status == 0
        assert feasible == (worst < 0), (wrench, worst)
        inside += feasible
    assert 100 < inside < 500
    # sums of the edges are inside
    generated = rng.uniform(size=(50, 16)) @ edges.T
    assert np.asarray(jax.vmap(lambda w: sole.cone(w, jnp.asarray(rotation)))(jnp.asarray(generated))).max() < 1e-12
    # a point contact's four faces: +-f_x +- f_y - mu f_z
    point = trajopt.Contact("toe", 0, friction=0.5)
    np.testing.assert_allclose(point.cone(jnp.array([1.0, -2.0, 4.0]), jnp.eye(3)), [-3.0, 1.0, -5.0, -1.0])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: trajopt.Contact("sole", 0, friction=-0.5), "friction must be a finite number >= 0"),
        (lambda: trajopt.Contact("sole", 0, kind="line"), "kind must be one of"),
        (lambda: trajopt.Contact("sole", 0, point=(0.0, 0.0)), "point must be a 3-vector"),
        (lambda: trajopt.Contact("sole", 0, kind="6d", size=(0.2,)), "size must be (length, width)"),
        (lambda: trajopt.Contact("sole", 0, kind="6d", size=(0.2, -0.1)), "size must be finite lengths >= 0"),
        (lambda: trajopt.Contact("toe", 0, size=(0.2, 0.1)), "a point contact has no size"),
        (lambda: trajopt.ContactSchedule([_sole()], []), "at least one phase"),
        (lambda: trajopt.ContactSchedule([], [(0.1, ())]), "at least one contact"),
        (lambda: trajopt.ContactSchedule([_sole(), _sole()], [(0.1, ())]), "names must be unique"),
        (lambda: trajopt.ContactSchedule([_sole()], [(0.1, ("foot",))]), "names contacts ['foot']"),
        (lambda: trajopt.ContactSchedule([_sole()], [(0.1, ()), (0.0, ())]), "phase 1 has 0.0"),
        (lambda: trajopt.ContactSchedule([_sole()], [(0.1, ())]).with_durations([0.1, 0.2]), "one per phase"),
    ],
)
def test_bad_contacts_and_schedules_are_refused(make, message):
    with pytest.raises((ValueError, TypeError), match=None) as error:
        make()
    assert message in str(error.value)


def test_bad_plans_are_refused():
    box, schedule = _box(), trajopt.ContactSchedule([_sole()], [(0.2, ("sole",))])
    plan = _still_plan(box, 0.2)
    elsewhere = trajopt.ContactSchedule([trajopt.Contact("toe", "toe")], [(0.2, ("toe",))])
    points = [trajopt.Contact(f"c{i}", 0, point=(x, y, -0.05)) for i, (x, y) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)])]
    corners = trajopt.ContactSchedule(points, [(0.2, tuple(p.name for p in points))])  # 12 rows, a rigid body's 6
    cases = [
        (lambda: trajopt.validate(box, elsewhere, plan), "contact 'toe': no body named 'toe'"),
        (lambda: trajopt.validate(box, schedule, _still_plan(box, 0.1)), "before the schedule's end at 0.2 s"),
        (
            lambda: trajopt.validate(box, schedule, trajopt.Plan(plan.ts, plan.q[:, :6], plan.v, plan.tau)),
            "plan.q must have shape (5, 7)",
        ),
        (
            lambda: trajopt.validate(box, schedule, trajopt.Plan(plan.ts[::-1], plan.q, plan.v, plan.tau)),
            "increase strictly from 0",
        ),
        (lambda: trajopt.validate(box, schedule, plan, kp=-1.0), "kp must be a non-negative"),
        (lambda: trajopt.validate(box, schedule, plan, dt=0.0), "dt must be a positive number"),
        (lambda: trajopt.validate(box, schedule, plan, dt=0.15), "more than half the shortest phase"),
        (lambda: trajopt.validate(box, corners, plan), "have rank 6"),
        (lambda: trajopt.validate(box, schedule, trajopt.Plan(plan.ts, plan.q.at[2, 6].set(2.0), plan.v, plan.tau)), "plan.q[2]"),
    ]
    for call, message in cases:
        with pytest.raises((ValueError, TypeError)) as error:
            call()
        assert message in str(error.value), str(error.value)


@pytest.mark.extended  # compiles ANYmal's simulation (about 20 s); the Crocoddyl plan's test covers a quadruped
def test_anymal_standing_on_pinocchios_statics_stays_still():
    pin = pytest.importorskip("pinocchio")
    from zoo import zoo_files

    path = zoo_files().get("anymal_c_simple_description/urdf/anymal.urdf")
    if path is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kj.urdf.URDFWarning)
        model = kj.load_urdf(path, floating_base=True)
        frames = kj.load_urdf(path, floating_base=True, merge_fixed=False)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    pd = pm.createData()
    ids = [pm.getJointId(name) for name in model.joint_names]
    q_perm = np.concatenate([np.arange(pm.idx_qs[j], pm.idx_qs[j] + pm.nqs[j]) for j in ids])
    v_perm = np.concatenate([np.arange(pm.idx_vs[j], pm.idx_vs[j] + pm.nvs[j]) for j in ids])
    # standing: the hips a little out, knees bent, the feet on z = 0
    q = pin.neutral(pm)
    for leg in FEET:
        side, end = (-1 if leg[0] == "L" else 1), (1 if leg[1] == "F" else -1)
        for joint, angle in zip(("HAA", "HFE", "KFE"), (0.1 * side, 0.7 * end, -1.0 * end)):
            q[pm.joints[pm.getJointId(f"{leg}_{joint}")].idx_q] = angle
    feet = [pm.getFrameId(f"{leg}_FOOT") for leg in FEET]
    pin.framesForwardKinematics(pm, pd, q)
    q[2] -= min(pd.oMf[f].translation[2] for f in feet)
    # Pinocchio's statics: the feet's forces of least norm that carry the weight, and the torques
    gravity = pin.computeGeneralizedGravity(pm, pd, q)
    pin.computeJointJacobians(pm, pd, q)
    pin.framesForwardKinematics(pm, pd, q)
    jac = np.vstack([pin.getFrameJacobian(pm, pd, f, pin.LOCAL_WORLD_ALIGNED)[:3] for f in feet])
    forces = np.linalg.lstsq(jac[:, :6].T, gravity[:6], rcond=None)[0]
    tau = (gravity - jac.T @ forces)[v_perm]
    assert np.max(np.abs(tau[:6])) < 1e-10
    tau[:6] = 0.0
    # the feet as points on the shanks (the URDF's fixed links, kept by merge_fixed=False)
    q_kj = jnp.asarray(q[q_perm])
    rotations, origins = frames.poses(q_kj)
    contacts = []
    for leg in FEET:
        shank, foot = frames.body_index(f"{leg}_SHANK"), frames.body_index(f"{leg}_FOOT")
        point = rotations[shank].T @ (origins[foot] - origins[shank])
        contacts.append(trajopt.Contact(leg, f"{leg}_SHANK", point=point, friction=0.7))
    schedule = trajopt.ContactSchedule(contacts, [(0.3, FEET)])
    samples = 4
    plan = trajopt.Plan(
        jnp.linspace(0.0, 0.3, samples),
        jnp.tile(q_kj, (samples, 1)),
        jnp.zeros((samples, model.nv)),
        jnp.tile(jnp.asarray(tau), (samples, 1)),
        jnp.tile(jnp.asarray(forces), (samples, 1)),
        jnp.zeros((samples, model.nv)),
    )
    result = trajopt.validate(model, schedule, plan, kp=100.0, kd=5.0, dt=0.01)
    assert result.plan_dynamics_residual < 1e-9  # Pinocchio's statics hold in kronjax's dynamics
    assert result.base_drift < 1e-12 and result.joint_error < 1e-12 and result.contact_violation < 1e-12
    np.testing.assert_allclose(result.forces, np.tile(forces, (30, 1)), atol=1e-8)
    assert result.cone_margin == pytest.approx(result.plan_cone_margin, abs=1e-8) and result.cone_margin > 0


@pytest.mark.slow  # compiles ANYmal's simulation (about 20 s)
def test_crocoddyls_trot_holds_in_kronjaxs_dynamics_and_simulation():
    """Crocoddyl's FDDP plan of ANYmal trotting (tests/data/README.md): its states,
    accelerations, torques and feet's forces satisfy kronjax's equations of motion, its feet hold
    still while in contact (to Crocoddyl's Baumgarte-stabilised drift), and kronjax's simulation
    of its torques alone (held between its 10 ms nodes, as Crocoddyl applies them) stays within
    3 mm of it, the feet's forces within a few newtons of the friction cone (Crocoddyl's
    cone is a cost, its plan leaves the cone by 1.5 N)."""
    from zoo import zoo_files

    if "anymal_b_simple_description/robots/anymal.urdf" not in zoo_files():
        pytest.skip("example-robot-data is not installed")
    from bench.legged_plans import plan_from_file

    model, schedule, plan = plan_from_file(Path(__file__).parent / "data" / "crocoddyl_anymal_trot.npz")
    assert schedule.num_phases == 4 and schedule.active == (
        (True,) * 4,
        (True, False, False, True),
        (True,) * 4,
        (False, True, True, False),
    )
    result = trajopt.validate(model, schedule, plan, dt=1e-3, hold=True)
    assert result.plan_dynamics_residual < 1e-9
    assert result.plan_stance_violation < 5e-4
    assert result.plan_cone_margin == pytest.approx(-1.51, abs=0.05)
    assert result.base_drift < 0.003 and result.joint_error < 0.04  # measured 1.6 mm, 0.023 rad
    assert result.normal_force > 0 and result.cone_margin > -2.5  # measured 14.7 N, -1.8 N
    assert result.contact_violation < 1e-6  # one step's drift before the projection


@pytest.mark.slow  # a third compilation of the box's simulation
def test_float32_simulation_of_the_thrown_box():
    """The same throw in float32 (the model and the plan cast): the flight's parabola to 1e-4 m
    and the stop at touchdown to 1e-5 m/s, every array float32."""
    box = _box().astype(jnp.float32)
    schedule = trajopt.ContactSchedule([_sole()], [(0.2, ()), (0.1, ("sole",))])
    v0 = jnp.array([0.5, 0.0, 1.0, 0.3, 2.0, 0.1], jnp.float32)
    plan = _still_plan(box, 0.3)
    plan = trajopt.Plan(*(x.astype(jnp.float32) for x in (plan.ts, plan.q)), jnp.tile(v0, (5, 1)), plan.tau.astype(jnp.float32))
    result = trajopt.validate(box, schedule, plan, dt=0.005)
    assert result.q.dtype == result.v.dtype == result.forces.dtype == jnp.float32
    flight = np.asarray(result.ts) <= 0.2 + 1e-6
    ts = np.asarray(result.ts[flight], np.float64)[:, None]
    com = np.asarray(jax.vmap(lambda q: kj.center_of_mass(box, q))(result.q[flight]), np.float64)
    velocity = np.asarray(kj.centroidal_momentum(box, result.q[0], result.v[0])[:3], np.float64) / MASS
    np.testing.assert_allclose(com, com[0] + velocity * ts + 0.5 * np.array([0.0, 0.0, -G]) * ts**2, atol=1e-4)
    np.testing.assert_allclose(result.v[~flight], 0.0, atol=1e-5)
