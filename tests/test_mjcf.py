"""``load_mjcf`` against MuJoCo's C library: the compiled MJCF's mass matrix, bias forces, inverse
and forward dynamics and body poses at random states (in MuJoCo's coordinates, through
``to_mujoco`` / ``from_mujoco`` for ball and free joints), and the loader's errors and warnings."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, relative_error

import kronjax as kj
from kronjax.mjcf import MJCFError, from_mujoco, load_mjcf, to_mujoco

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

mujoco = pytest.importorskip("mujoco")

DATA = Path(__file__).parent / "data"
FILES = ("mjcf_arm.xml", "mjcf_tree.xml", "mjcf_floating.xml")
STATES = 20
# MuJoCo's forward dynamics with only the rigid-body terms: tau enters as qfrc_applied
RIGID_ONLY = (
    mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    | mujoco.mjtDisableBit.mjDSBL_SPRING
    | mujoco.mjtDisableBit.mjDSBL_DAMPER
    | mujoco.mjtDisableBit.mjDSBL_ACTUATION
)


def _everything(model, qpos, qvel, qacc, qfrc):
    """kronjax's M, bias, inverse and forward dynamics, passive forces and poses at a MuJoCo state,
    the dynamics in MuJoCo's coordinates: ``M_mj = T M T^T`` with ``T = d qvel / d v`` (orthogonal)."""
    q, v, a, tau = from_mujoco(model, qpos, qvel, qacc, qfrc)
    _, _, a_zero, _ = from_mujoco(model, qpos, qvel, jnp.zeros_like(qvel))
    forces = lambda acceleration: to_mujoco(model, q, v, tau=kj.inverse_dynamics(model, q, v, acceleration))[3]  # noqa: E731
    velocity_map = jax.jacfwd(lambda v: to_mujoco(model, q, v)[1])(v)
    rotations, origins = kj.forward_kinematics(model, q)
    bias, tau_id = jax.vmap(forces)(jnp.stack([a_zero, a]))  # one inverse dynamics to compile
    return (
        velocity_map @ kj.mass_matrix(model, q) @ velocity_map.T,
        bias,
        tau_id,
        to_mujoco(model, q, v, kj.forward_dynamics(model, q, v, tau))[2],
        to_mujoco(model, q, v, tau=kj.passive_forces(model, q, v))[3],
        rotations,
        origins,
    )


# one compilation per model structure, for one state (a vmapped program compiles 1.5x slower)
EVERYTHING = jit_once(_everything)


def _mujoco_everything(m, q, qd, qdd, tau):
    """The same quantities from MuJoCo, state by state (``q`` is ``qpos``, ``qd`` is ``qvel``, ``tau``
    is ``qfrc_applied``)."""
    d = mujoco.MjData(m)
    out = {key: [] for key in ("M", "bias", "tau", "qdd", "passive", "xmat", "xpos", "site_xmat", "site_xpos")}
    flags = m.opt.disableflags
    for k in range(len(q)):
        m.opt.disableflags = flags
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q[k], qd[k], 0.0
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        out["M"].append(full)
        out["bias"].append(d.qfrc_bias.copy())
        out["passive"].append(d.qfrc_passive.copy())
        out["xmat"].append(d.xmat[1:].reshape(-1, 3, 3).copy())
        out["xpos"].append(d.xpos[1:].copy())
        out["site_xmat"].append(d.site_xmat.reshape(-1, 3, 3).copy())
        out["site_xpos"].append(d.site_xpos.copy())
        d.qacc[:] = qdd[k]
        rne = np.zeros(m.nv)
        mujoco.mj_rne(m, d, 1, rne)
        out["tau"].append(rne + m.dof_armature * qdd[k])  # mj_rne leaves the rotor inertias out, mj_fullM has them
        m.opt.disableflags = flags | RIGID_ONLY
        d.qfrc_applied[:] = tau[k]
        mujoco.mj_forward(m, d)
        out["qdd"].append(d.qacc.copy())
    m.opt.disableflags = flags
    return {key: np.stack(value) for key, value in out.items()}


def _close(name, got, expected, tol=1e-10):
    error = relative_error(got, expected)
    assert error <= tol, f"{name}: relative error {error:.2e} > {tol:.0e}"


@pytest.mark.parametrize("file", [pytest.param(f, marks=pytest.mark.slow) if f == "mjcf_floating.xml" else f for f in FILES])
def test_dynamics_and_poses_match_mujoco(file):
    path = DATA / file
    m = mujoco.MjModel.from_xml_path(str(path))
    # a path for one file, the text for the other (a compiled MjModel: test_mjcf_model_source_and_structure)
    model = load_mjcf(path if file == "mjcf_arm.xml" else path.read_text())
    assert (model.nq, model.nv) == (m.nq, m.nv)
    rng = np.random.default_rng(17)
    q = rng.uniform(-1.5, 1.5, (STATES, m.nq))
    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    for j in np.flatnonzero(np.isin(m.jnt_type, [free, ball])):  # unit quaternions, w first
        start = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == free else 0)
        q[:, start : start + 4] /= np.linalg.norm(q[:, start : start + 4], axis=1, keepdims=True)
    qd, qdd, tau = (rng.normal(0.0, 2.0, (STATES, m.nv)) for _ in range(3))
    mj = _mujoco_everything(m, q, qd, qdd, tau)
    states = [EVERYTHING(model, *state) for state in zip(q, qd, qdd, tau)]
    mass, bias, tau_id, qdd_fd, passive, rotations, origins = (np.stack(x) for x in zip(*states))
    _close("M vs mj_fullM", mass, mj["M"])
    _close("C qd + g vs qfrc_bias", bias, mj["bias"])
    _close("inverse dynamics vs mj_rne", tau_id, mj["tau"])
    _close("forward dynamics vs qacc", qdd_fd, mj["qdd"])
    if np.any(m.dof_damping):  # dampers only: MuJoCo's frictionloss is a constraint, not in qfrc_passive
        _close("passive forces vs qfrc_passive", passive, mj["passive"])
    else:
        assert not np.any(passive) and not np.any(mj["passive"])
    # the kronjax body named after each MuJoCo body has that body's frame
    bodies = [model.body_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)) for b in range(1, m.nbody)]
    _close("body rotations vs xmat", np.asarray(rotations)[:, bodies], mj["xmat"])
    _close("body origins vs xpos", np.asarray(origins)[:, bodies], mj["xpos"])
    if m.nsite:  # sites: massless bodies after the others, named after the site or <site>.site
        framed = load_mjcf(path, sites=True)
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, k) for k in range(m.nsite)]
        sites = [framed.body_index(f"{name}.site" if name in model.body_names else name) for name in names]
        kinematics = jit_once(lambda qpos: kj.forward_kinematics(framed, from_mujoco(framed, qpos)[0]))
        poses = [kinematics(state) for state in q]
        _close("site rotations vs site_xmat", np.stack([p[0] for p in poses])[:, sites], mj["site_xmat"])
        _close("site origins vs site_xpos", np.stack([p[1] for p in poses])[:, sites], mj["site_xpos"])


def test_mjcf_model_source_and_structure():
    """A compiled MjModel loads; names, kinds, limits and gravity are the file's."""
    m = mujoco.MjModel.from_xml_path(str(DATA / "mjcf_arm.xml"))
    model = kj.load_mjcf(m)
    # the body with two hinges: a massless body at its place, then the body itself
    assert model.body_names == ("base", "upper.j2a", "upper", "slider", "tool", "wrist")
    assert model.joint_names == ("j1", "j2a", "j2b", "j3", "tool_fixed", "j4")
    assert model.kinematics.kinds == ("R", "R", "R", "P", "F", "R")
    assert float(model.inertials.mass[1]) == 0.0 and float(model.inertials.mass[4]) == 0.4
    np.testing.assert_array_equal(model.gravity, [0.3, -0.2, -9.81])
    inf = np.inf
    np.testing.assert_array_equal(model.limits.lower, [-2, -inf, -inf, -0.1, -inf])
    np.testing.assert_array_equal(model.limits.upper, [2, inf, inf, 0.4, inf])
    # motor j1: gear 50 x ctrlrange 2; j3: gear 10 x forcerange 30
    np.testing.assert_array_equal(model.limits.effort, [100, inf, inf, 300, inf])
    np.testing.assert_array_equal(load_mjcf(m, gravity=(0, 0, -1)).gravity, [0, 0, -1])
    # sites: massless fixed bodies after the others, in MuJoCo's order ("left" is also a body's name)
    tree = load_mjcf(DATA / "mjcf_tree.xml", sites=True)
    assert tree.body_names[-4:] == ("marker", "imu", "left.site", "fingertip")
    assert tree.joint_names[-4:] == ("marker_site", "imu_site", "left.site_site", "fingertip_site")
    assert tree.kinematics.parents[-4:] == (-1, 0, 0, tree.body_index("left_hand"))
    assert load_mjcf(DATA / "mjcf_tree.xml").body_names == tree.body_names[:-4]


def test_mjcf_errors(tmp_path, monkeypatch):
    refused = tmp_path / "refused.xml"  # a moving body without mass: MuJoCo's compiler refuses it
    refused.write_text('<mujoco><worldbody><body name="b"><joint name="j"/></body></worldbody></mujoco>')
    with pytest.raises(MJCFError, match="refused.xml"):
        load_mjcf(refused)
    with pytest.raises(MJCFError, match="neither an MJCF file nor MJCF"):
        load_mjcf("this is not XML")
    with pytest.raises(MJCFError, match="cannot compile the MJCF text"):
        load_mjcf("<mujoco><worldbody><bodyy/></worldbody></mujoco>")
    monkeypatch.setitem(__import__("sys").modules, "mujoco", None)
    with pytest.raises(ImportError, match=r"pip install .kronjax\[mujoco\]."):
        load_mjcf(DATA / "mjcf_arm.xml")


_CAD = """<mujoco><compiler {compiler}/><worldbody><body name="a"><joint name="j" axis="0 1 0"/>
  <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
  <body name="b" pos="0 0 -0.5"><joint name="k" axis="1 0 0"/>{inertial}</body></body></worldbody></mujoco>"""
_ANTENNA = '<inertial pos="0 0 0" mass="1e-6" fullinertia="2.371e-8 2.833e-8 3.849e-8 6.119e-8 1.179e-8 0.774e-8"/>'


def test_what_cad_exports_get_wrong_is_for_mujocos_compiler_to_decide():
    """Issue 36's policy in ``load_mjcf`` (docs/details/robots.md): MuJoCo's compiler refuses a
    moving body without mass, an indefinite inertia (tiago.urdf's antenna) and one that violates the
    triangle inequality, with its own message, and its options repair them (``boundmass`` /
    ``boundinertia``, ``balanceinertia``): kronjax reads what it compiled."""
    with pytest.raises(MJCFError, match="mass and inertia of moving bodies must be larger than mjMINVAL"):
        load_mjcf(_CAD.format(compiler="", inertial=""))
    with pytest.raises(MJCFError, match="inertia must have positive eigenvalues"):
        load_mjcf(_CAD.format(compiler="", inertial=_ANTENNA))
    triangle = '<inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.05"/>'
    with pytest.raises(MJCFError, match=r"inertia must satisfy A \+ B >= C; use 'balanceinertia' to fix"):
        load_mjcf(_CAD.format(compiler="", inertial=triangle))
    bounded = load_mjcf(_CAD.format(compiler='boundmass="1e-6" boundinertia="1e-9"', inertial=""))
    np.testing.assert_allclose(np.asarray(bounded.inertials.inertia[1]), 1e-9 * np.eye(3))
    assert float(bounded.inertials.mass[1]) == 1e-6
    balanced = load_mjcf(_CAD.format(compiler='balanceinertia="true"', inertial=triangle))
    np.testing.assert_allclose(np.asarray(balanced.inertials.inertia[1]), 0.07 / 3 * np.eye(3), rtol=1e-12)


def test_floating_structure_and_state_conversion():
    """Names and kinds of the floating file (a ball anchored off its body's origin is followed by a
    fixed joint back to it); to_mujoco and from_mujoco are inverses and refuse bad input."""
    model = load_mjcf(DATA / "mjcf_floating.xml")
    assert model.joint_names == ("root", "hip", "stretch", "knee", "twist", "shin_fixed", "foot_fixed")
    assert model.kinematics.kinds == ("free", "spherical", "P", "R", "spherical", "F", "F")
    assert model.body_names[1:3] == ("thigh.hip", "thigh") and float(model.inertials.mass[1]) == 0.0
    q = kj.random_configuration(model, jax.random.PRNGKey(3))
    v, a, tau = np.random.default_rng(3).normal(size=(3, model.nv))
    mj, back = jit_once(lambda *x: (y := to_mujoco(model, *x), from_mujoco(model, *y)))(q, v, a, tau)
    np.testing.assert_array_equal(mj[0][3:7], jnp.roll(q[3:7], 1))  # w first
    for got, expected in zip(back, (q, v, a, tau)):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)
    assert to_mujoco(model, q)[1:] == (None, None, None)
    with pytest.raises(ValueError, match=r"qvel must have shape \(14,\)"):
        from_mujoco(model, mj[0], mj[1][:-1])
    with pytest.raises(ValueError, match="a needs v"):
        to_mujoco(model, q, a=a)
    planar = kj.from_joints([kj.Joint("planar")], [kj.Inertial(1.0, inertia=(1, 1, 1))])
    with pytest.raises(ValueError, match="no planar joint"):
        to_mujoco(planar, kj.neutral(planar))


def test_mjcf_joint_parameters_and_unmodelled_features():
    xml = """<mujoco><worldbody><body name="f"><joint type="free" name="drift" armature="0.1"/><geom size="0.1"/></body>
      <body name="b"><geom size="0.1"/>
      <joint name="ja" axis="1 0 0" armature="0.1" damping="0.5"/>
      <body name="c" pos="0.2 0 0"><geom size="0.1"/><joint name="jb" frictionloss="0.2"/>
        <body name="d" pos="0.2 0 0"><geom size="0.1"/><joint name="cone" type="ball" range="0 0.5"/></body></body>
      </body></worldbody>
      <tendon><fixed name="tie"><joint joint="ja" coef="1"/><joint joint="jb" coef="-1"/></fixed></tendon>
      <actuator><position name="servo" joint="ja" kp="10"/><general name="slow" joint="jb" dyntype="filter"/>
        <motor name="twist" joint="cone" gear="0 0 1"/></actuator>
    </mujoco>"""
    with pytest.warns(UserWarning) as record:
        model = load_mjcf(xml)
    messages = "\n".join(str(w.message) for w in record)
    for expected in (
        "frictionloss of joints jb read as Coulomb friction",
        "tendons tie",
        "dynamics slow",
        "the range (a cone) of ball joints cone ignored",
        "actuators on ball or free joints cone give no effort limit",
        "the armature of free joints drift acts on the body-frame linear velocity",
    ):
        assert expected in messages, messages
    assert model.nv == 11
    np.testing.assert_array_equal(model.armature, [0.1] * 7 + [0] * 4)
    np.testing.assert_array_equal(model.damping, [0] * 6 + [0.5] + [0] * 4)
    np.testing.assert_array_equal(model.friction, [0] * 7 + [0.2] + [0] * 3)
    # a position servo without forcerange and an actuator with dynamics give no effort limit
    np.testing.assert_array_equal(model.limits.effort, [np.inf] * 11)


def _rotation_vector(u, sign):
    """The rotation vector (angle in ``[0, pi]``) of the unit quaternion ``(w, u)`` with
    ``sign(w) = sign``, as a function of ``u`` alone: kronjax's weld rows, where MuJoCo's are ``u``
    of the error quaternion."""
    u = u * sign
    s = jnp.linalg.norm(u)
    return 2 * jnp.arcsin(s) * u / s


@pytest.mark.slow
def test_equality_constraints_match_mujoco():
    """Each equality constraint of mjcf_closed.xml against MuJoCo's own rows (``efc_pos``, ``efc_J``)
    at 20 random states: connect, joint and weld-position rows equal MuJoCo's; MuJoCo's weld rotation
    rows are ``u`` of the error quaternion ``conj(q_b S_b) q_a S_a = (w, u)``, kronjax's its
    rotation vector ``f(u)``, so kronjax's Jacobian rows must be ``f'(u)`` times MuJoCo's (chain
    rule). ``q0`` is assembled: MuJoCo's rows vanish there."""
    path = DATA / "mjcf_closed.xml"
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    with pytest.warns(UserWarning, match="equality constraints spare are inactive"):
        mechanism = load_mjcf(path)
    model, constraints = mechanism.model, mechanism.constraints
    assert isinstance(mechanism, kj.constrained.Mechanism) and mechanism.mobility == 4
    assert [p.description.split(" (")[0] for p in constraints.parts] == [
        "MJCF weld grasp",
        "MJCF weld dock",
        "MJCF connect tie",
        "MJCF joint equality mesh",
    ]

    def rows(q):  # kronjax's rows, and T = d qvel / d v to carry MuJoCo's Jacobian to kronjax's v
        velocity_map = jax.jacfwd(lambda v: to_mujoco(model, q, v)[1])(jnp.zeros(model.nv, q.dtype))
        return constraints.residual(q), constraints.jacobian(q), velocity_map

    rows = jit_once(rows)
    d = mujoco.MjData(m)
    body = lambda name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)  # noqa: E731

    def mujoco_rows(qpos):
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        mine = d.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        return d.efc_pos[mine].copy(), d.efc_J.reshape(d.nefc, m.nv)[mine].copy()

    # the weld rows' first index, bodies and frames S (the sites' for grasp, relpose for dock)
    welds = ((0, "arm2", "box", m.site_quat[0], m.site_quat[1]), (6, "buoy", "box", m.eq_data[1, 6:10], (1, 0, 0, 0)))
    for k in range(STATES):
        q = kj.random_configuration(model, jax.random.PRNGKey(k))
        residual, jacobian, velocity_map = (np.asarray(x) for x in rows(q))
        pos, jac = mujoco_rows(np.asarray(to_mujoco(model, q)[0]))
        jac = jac @ velocity_map
        expected, expected_jac = pos.copy(), jac.copy()
        for start, body_a, body_b, frame_a, frame_b in welds:
            qa, qb, error = np.empty(4), np.empty(4), np.empty(4)
            mujoco.mju_mulQuat(qa, d.xquat[body(body_a)], np.asarray(frame_a, float))
            mujoco.mju_mulQuat(qb, d.xquat[body(body_b)], np.asarray(frame_b, float))
            mujoco.mju_negQuat(qb, qb)
            mujoco.mju_mulQuat(error, qb, qa)
            rot = slice(start + 3, start + 6)
            np.testing.assert_allclose(pos[rot], error[1:], rtol=0, atol=1e-12)  # MuJoCo's rows, as read
            expected[rot] = _rotation_vector(error[1:], np.sign(error[0]))
            expected_jac[rot] = jax.jacfwd(_rotation_vector)(error[1:], np.sign(error[0])) @ jac[rot]
        _close("constraint residual vs efc_pos", residual, expected, 1e-12)
        _close("constraint Jacobian vs efc_J", jacobian, expected_jac)
    # q0: qpos0 where it satisfies the constraints (the welds' and connect's), the gears moved onto
    # their coupling (its offset 0.1 is not satisfied at qpos0)
    qpos = np.asarray(to_mujoco(model, mechanism.q0)[0])
    assert np.max(np.abs(mujoco_rows(qpos)[0])) < 1e-12
    gears = {int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)]) for j in ("gear_a", "gear_b")}
    assert set(np.flatnonzero(np.abs(qpos - m.qpos0) > 1e-12)) == gears


def test_equality_variants():
    """A weld with torquescale 0 is a connect at the weld's points (MuJoCo leaves the orientation
    free), sites give a connect's points, a joint equality without joint2 locks its joint at ref, a tendon equality is named in a warning; the rows equal MuJoCo's ``efc_pos`` at a random
    state (op by op: nothing to compile)."""
    xml = """<mujoco><worldbody>
      <body name="a" pos="0 0 1"><joint name="ja" type="ball"/><geom size="0.1" pos="0.2 0 0"/><site name="sa" pos="0.3 0 0.1"/>
        <body name="b" pos="0.3 0 0"><joint name="jb" axis="0 1 0" ref="0.2"/><geom size="0.05"/></body></body>
      <body name="c" pos="0.3 0 1"><joint name="jx" type="slide" axis="1 0 0"/><joint name="jy" type="slide" axis="0 1 0"/>
        <joint name="jz" type="slide" axis="0 0 1"/><geom size="0.1"/><site name="sc" pos="0 0 0.1"/></body>
    </worldbody>
    <tendon><fixed name="tie"><joint joint="jx" coef="1"/></fixed></tendon>
    <equality><weld name="loose" body1="b" body2="c" anchor="0.05 0 0" torquescale="0"/>
      <connect name="pins" site1="sa" site2="sc"/><joint name="lock" joint1="jb" polycoef="0 0 0 0 0"/>
      <tendon name="rope" tendon1="tie"/></equality></mujoco>"""
    with pytest.warns(UserWarning, match="equality constraints rope .tendon or flex. not modelled"):
        mechanism = load_mjcf(xml)
    parts = mechanism.constraints.parts
    assert [p.n_equations for p in parts] == [3, 3, 1]
    assert [p.description for p in parts] == [
        "MJCF weld loose (spherical loop closure b-c)",
        "MJCF connect pins (spherical loop closure a-c)",
        "MJCF joint equality lock",
    ]
    m = mujoco.MjModel.from_xml_string(xml)
    q = kj.random_configuration(mechanism.model, jax.random.PRNGKey(1))
    d = mujoco.MjData(m)
    d.qpos[:] = np.asarray(to_mujoco(mechanism.model, q)[0])
    mujoco.mj_forward(m, d)
    pos = d.efc_pos[d.efc_type == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)]
    # MuJoCo's rows: the weld's 6 (its rotation rows times torquescale 0), the connect's 3, the joint's
    assert pos.shape == (11,) and not np.any(pos[3:6])
    _close("residual vs efc_pos", mechanism.constraints.residual(q), np.r_[pos[:3], pos[6:10]], 1e-12)
    np.testing.assert_array_equal(to_mujoco(mechanism.model, mechanism.q0)[0], m.qpos0)  # assembled there


def test_the_same_robot_from_urdf_and_from_mjcf():
    """The Panda of tests/data/panda.urdf read by ``load_urdf`` and, compiled by MuJoCo's URDF
    importer, by ``load_mjcf`` (MuJoCo fuses the fixed links into their parents, kronjax's URDF
    loader merges them too): the same joints, dampers, mass matrix and inverse dynamics."""
    urdf = (DATA / "panda.urdf").read_text()
    start = urdf.index(">", urdf.index("<robot")) + 1
    mjcf = (
        urdf[:start] + '<mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="true"/></mujoco>' + urdf[start:]
    )
    from_mjcf = load_mjcf(mujoco.MjModel.from_xml_string(mjcf))
    from_urdf = kj.load_urdf(DATA / "panda.urdf")
    assert from_mjcf.joint_names == tuple(n for n, k in zip(from_urdf.joint_names, from_urdf.kinematics.kinds) if k != "F")
    np.testing.assert_array_equal(from_mjcf.damping, from_urdf.damping)
    np.testing.assert_array_equal(from_mjcf.friction, from_urdf.friction)

    @jit_once
    def dynamics(q, v, a):
        return [(kj.mass_matrix(m, q), kj.inverse_dynamics(m, q, v, a)) for m in (from_urdf, from_mjcf)]

    rng = np.random.default_rng(2)
    for q, v, a in rng.uniform(-1.5, 1.5, (3, 3, from_urdf.nv)):
        (m_urdf, tau_urdf), (m_mjcf, tau_mjcf) = dynamics(q, v, a)
        _close("M from MJCF vs URDF", m_mjcf, m_urdf)
        _close("inverse dynamics from MJCF vs URDF", tau_mjcf, tau_urdf)
