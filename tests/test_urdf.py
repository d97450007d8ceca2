"""URDF reading and writing: errors that name the element, sub-chains, fixed-joint merging,
inertial placement, and round trips through to_urdf (Pinocchio cross-checks: test_urdf_pinocchio)."""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from oracles import random_inertia, random_rotation, relative_error

import kronjax as kj
from kronjax._rotations import rpy, to_rpy
from kronjax.urdf import URDFError

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)


def _link(name: str, mass: float | None = 1.0, inertia="0.1 0 0 0.1 0 0.1", origin='xyz="0 0 0" rpy="0 0 0"') -> str:
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, ixy, ixz, iyy, iyz, izz = inertia.split()
    return (
        f'<link name="{name}"><inertial><origin {origin}/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial></link>'
    )


def _joint(name: str, parent: str, child: str, kind: str = "revolute", xyz="0 0 0.3", rpy="0 0 0", axis="0 0 1", extra="") -> str:
    if kind in ("revolute", "prismatic") and "<limit" not in extra:
        extra += '<limit lower="-3" upper="3" effort="50" velocity="2"/>'  # urdfdom requires limits
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{extra}</joint>'
    )


def _robot(*parts: str) -> str:
    return '<robot name="test">' + "".join(parts) + "</robot>"


CHAIN = _robot(
    _link("base", None),
    _link("l1"),
    _link("l2", 2.0),
    _joint("j1", "base", "l1", extra='<limit lower="-1" upper="2" effort="30" velocity="3"/>'),
    _joint("j2", "l1", "l2", axis="0 1 0"),
)


# --------------------------------------------------------------------------------------------
# Malformed input: URDFError naming the element
# --------------------------------------------------------------------------------------------

MALFORMED = {
    "unknown joint type": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", kind="ball")),
        r"joint 'j1': unknown joint type 'ball'",
    ),
    "planar joint about x": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", kind="planar", axis="1 0 0")),
        r"joint 'j1': a planar joint moves in its joint frame's x-y plane: its <axis> must be 0 0 1",
    ),
    "missing parent": (
        _robot(_link("base", None), _link("l1"), '<joint name="j1" type="revolute"><child link="l1"/></joint>'),
        r"joint 'j1': missing <parent link=...>",
    ),
    "missing child": (
        _robot(_link("base", None), _link("l1"), '<joint name="j1" type="revolute"><parent link="base"/></joint>'),
        r"joint 'j1': missing <child link=...>",
    ),
    "undefined child link": (
        _robot(_link("base", None), _joint("j1", "base", "ghost")),
        r"joint 'j1': child link 'ghost' is not defined",
    ),
    "undefined parent link": (
        _robot(_link("l1"), _joint("j1", "ghost", "l1")),
        r"joint 'j1': parent link 'ghost' is not defined",
    ),
    "loop": (
        _robot(
            _link("base", None),
            _link("a"),
            _link("b"),
            _link("c"),
            _joint("j1", "base", "a"),
            _joint("j2", "b", "c"),
            _joint("j3", "c", "b"),
        ),
        r"the links \['(b|c)', '(b|c)'\] form a loop",
    ),
    "two parents": (
        _robot(_link("base", None), _link("a"), _link("b"), _joint("j1", "base", "a"), _joint("j2", "b", "a")),
        r"joint 'j2': link 'a' already has a parent joint 'j1'",
    ),
    "negative mass": (
        _robot(_link("base", None), _link("l1", -2.0), _joint("j1", "base", "l1")),
        r"link 'l1': negative mass -2.0",
    ),
    "inertia not positive definite": (
        _robot(_link("base", None), _link("l1", 1.0, "0.1 0.5 0 0.1 0 0.1"), _joint("j1", "base", "l1")),
        r"link 'l1': <inertia> is not symmetric positive",
    ),
    "non-numeric origin": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", xyz="0 zero 1")),
        r"joint 'j1': <origin xyz='0 zero 1'> is not numeric",
    ),
    "non-numeric mass": (
        _robot(_link("base", None), _link("l1", "heavy"), _joint("j1", "base", "l1")),
        r"link 'l1': <mass value='heavy'> is not numeric",
    ),
    "wrong number of values": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", axis="0 1")),
        r"joint 'j1': <axis xyz='0 1'> needs 3 numbers",
    ),
    "zero axis": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", axis="0 0 0")),
        r"joint 'j1': <axis xyz=...> is zero",
    ),
    "duplicate link": (
        _robot(_link("base", None), _link("l1"), _link("l1"), _joint("j1", "base", "l1")),
        r"link 'l1' is defined twice",
    ),
    "bad xml": ("<robot><link name='a'></robot>", r"malformed XML: mismatched tag"),
    "not a robot": ("<model/>", r"the root element must be <robot>, got <model>"),
    "no moving joint": (
        _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", kind="fixed")),
        r"no moving joint below root link 'base'",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_urdf_raises_an_error_naming_the_element(case):
    text, match = MALFORMED[case]
    with pytest.raises(URDFError, match=match):
        kj.load_urdf(text)


def test_urdf_error_is_a_value_error_and_missing_file_is_file_not_found(tmp_path):
    assert issubclass(URDFError, ValueError)
    with pytest.raises(FileNotFoundError, match="no URDF file at"):
        kj.load_urdf(tmp_path / "absent.urdf")
    with pytest.raises(TypeError, match="a path or the URDF text"):
        kj.load_urdf(3.0)


def test_unknown_root_or_tip_and_tip_outside_the_root_subtree():
    with pytest.raises(URDFError, match=r"root link 'nope' is not defined"):
        kj.load_urdf(CHAIN, root="nope")
    with pytest.raises(URDFError, match=r"tip link 'nope' is not defined"):
        kj.load_urdf(CHAIN, tip="nope")
    with pytest.raises(URDFError, match=r"tip link 'l1' is not below root link 'l2'"):
        kj.load_urdf(CHAIN, root="l2", tip="l1")


def test_non_unit_axis_is_normalised_with_a_warning():
    text = _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", axis="0 0 2"))
    with pytest.warns(kj.urdf.URDFWarning, match=r"axes that are not a unit vector normalised: joint 'j1' \(axis .*, norm"):
        model = kj.load_urdf(text)
    np.testing.assert_allclose(model.kinematics.axes[0], [0, 0, 1])


# --------------------------------------------------------------------------------------------
# What is read
# --------------------------------------------------------------------------------------------


def test_names_limits_and_missing_meshes(tmp_path):
    visual = '<visual><geometry><mesh filename="package://nowhere/meshes/l1.stl"/></geometry></visual>'
    text = CHAIN.replace('<link name="l1">', f'<link name="l1">{visual}')
    path = tmp_path / "chain.urdf"
    path.write_text(text)
    model = kj.load_urdf(path)  # the mesh file does not exist
    assert model.body_names == ("l1", "l2") and model.joint_names == ("j1", "j2")
    np.testing.assert_array_equal(model.limits.lower, [-1.0, -3.0])
    np.testing.assert_array_equal(model.limits.upper, [2.0, 3.0])
    np.testing.assert_array_equal(model.limits.effort, [30.0, 50.0])
    np.testing.assert_array_equal(model.limits.velocity, [3.0, 2.0])
    # every API that takes a body takes its link name
    q = jnp.array([0.3, -0.4])
    np.testing.assert_array_equal(kj.translational_jacobian(model, q, "l2"), kj.translational_jacobian(model, q, 1))


def test_continuous_joint_has_no_position_limits_and_zero_effort_means_not_set():
    text = _robot(
        _link("base", None),
        _link("l1"),
        _joint("j1", "base", "l1", kind="continuous", extra='<limit lower="-1" upper="1" effort="0" velocity="2"/>'),
    )
    with pytest.warns(UserWarning, match=r"joint 'j1' \(effort 0\)"):
        limits = kj.load_urdf(text).limits
    assert limits.lower[0] == -np.inf and limits.upper[0] == np.inf
    assert limits.effort[0] == np.inf and limits.velocity[0] == 2.0


# --------------------------------------------------------------------------------------------
# Degenerate limits (issue 18): CAD exporters write <limit lower="0" upper="0" effort="0"
# velocity="0"/> for "not set"
# --------------------------------------------------------------------------------------------

CAD_PENDULUM = Path(__file__).parent / "data" / "cad_pendulum.urdf"


def test_cad_export_limits_are_read_as_not_set_with_one_warning_naming_both_joints():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = kj.load_urdf(CAD_PENDULUM)
    assert len(caught) == 1 and caught[0].category is kj.urdf.URDFWarning and issubclass(caught[0].category, UserWarning)
    message = str(caught[0].message)
    for joint in ("shoulder", "elbow"):
        assert f"'{joint}' (position range [0, 0], velocity 0, effort 0)" in message, message
    assert "strict_limits=True" in message
    assert model.joint_names == ("shoulder", "elbow")
    np.testing.assert_array_equal(model.limits.lower, [-np.inf, -np.inf])
    for key in ("upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(model.limits, key), [np.inf, np.inf])


def test_strict_limits_keep_the_cad_export_literally_as_pinocchio_reads_it():
    """strict_limits=True: the [0, 0] ranges and the zero velocity and effort, as Pinocchio's
    parser reads the same file; the dynamics do not depend on the limits (Pinocchio's M)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning under strict_limits
        model = kj.load_urdf(CAD_PENDULUM, strict_limits=True)
    pm = pin.buildModelFromXML(CAD_PENDULUM.read_text())
    np.testing.assert_array_equal(model.limits.lower, pm.lowerPositionLimit)
    np.testing.assert_array_equal(model.limits.upper, pm.upperPositionLimit)
    np.testing.assert_array_equal(model.limits.velocity, pm.velocityLimit)
    np.testing.assert_array_equal(model.limits.effort, pm.effortLimit)
    np.testing.assert_array_equal(model.limits.lower, [0.0, 0.0])
    with pytest.warns(UserWarning):
        default = kj.load_urdf(CAD_PENDULUM)
    data = pm.createData()
    for q in _states(2, count=3):
        expected = pin.crba(pm, data, q)
        expected = np.triu(expected) + np.triu(expected, 1).T
        for m in (model, default):
            assert relative_error(_dynamics(m, q)[0], expected) < 1e-12


@pytest.mark.parametrize(
    "limit, dropped, kept",
    [
        ('lower="1" upper="-1" effort="5" velocity="2"', "position range [1, -1]", {"velocity": 2.0, "effort": 5.0}),
        ('lower="0.5" upper="0.5" effort="5" velocity="2"', "position range [0.5, 0.5]", {"velocity": 2.0, "effort": 5.0}),
        ('lower="-1" upper="2" effort="5" velocity="0"', "velocity 0", {"lower": -1.0, "upper": 2.0, "effort": 5.0}),
        ('lower="-1" upper="2" effort="-0" velocity="3"', "effort 0", {"lower": -1.0, "upper": 2.0, "velocity": 3.0}),
        ('lower="inf" effort="5" velocity="2"', "position range [inf, inf]", {"effort": 5.0, "velocity": 2.0}),
    ],
)
def test_each_degenerate_value_is_dropped_alone(limit, dropped, kept):
    text = _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", extra=f"<limit {limit}/>"))
    with pytest.warns(UserWarning, match=re.escape(f"joint 'j1' ({dropped})")):
        limits = kj.load_urdf(text).limits
    unset = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    for key, value in {**unset, **kept}.items():
        assert float(getattr(limits, key)[0]) == value, key


def test_strict_limits_reject_lower_above_upper_and_keep_zeros():
    text = _robot(_link("base", None), _link("l1"), _joint("j1", "base", "l1", extra='<limit lower="1" upper="-1"/>'))
    with pytest.raises(URDFError, match=r"joint 'j1': <limit lower=1.0 upper=-1.0>: lower exceeds upper"):
        kj.load_urdf(text, strict_limits=True)
    text = _robot(
        _link("base", None), _link("l1"), _joint("j1", "base", "l1", extra='<limit lower="inf" effort="1" velocity="1"/>')
    )
    with pytest.raises(URDFError, match=r"joint 'j1': <limit lower=inf upper=inf> holds no position"):
        kj.load_urdf(text, strict_limits=True)
    text = _robot(
        _link("base", None),
        _link("l1"),
        _joint("j1", "base", "l1", extra='<limit lower="-1" upper="1" effort="-0" velocity="0"/>'),
    )
    limits = kj.load_urdf(text, strict_limits=True).limits
    assert float(limits.velocity[0]) == 0.0 and float(limits.effort[0]) == 0.0
    assert not np.signbit(limits.effort[0])  # -0 is read as 0


def test_joint_limits_accept_zero_velocity_and_effort_and_reject_negative_or_nan():
    one = jnp.ones(1)
    limits = kj.chain.JointLimits(-one, one, 0 * one, 0 * one)
    assert float(limits.velocity[0]) == float(limits.effort[0]) == 0.0
    for bad, match in [
        (dict(velocity=-one), r"velocity limit must be >= 0, got -1.0"),
        (dict(effort=jnp.full(1, jnp.nan)), r"effort limit must be >= 0, got nan"),
        (dict(lower=jnp.full(1, jnp.inf), upper=jnp.full(1, jnp.inf)), r"position range \[inf, inf\] holds no position"),
        (dict(lower=one, upper=-one), r"lower limit 1.0 exceeds upper limit -1.0"),
    ]:
        values = dict(lower=-one, upper=one, velocity=one, effort=one) | bad
        with pytest.raises(ValueError, match=match):
            kj.chain.JointLimits(**values)


def test_absent_limits_are_unlimited():
    text = _robot(
        _link("base", None), _link("l1"), '<joint name="j1" type="prismatic"><parent link="base"/><child link="l1"/></joint>'
    )
    limits = kj.load_urdf(text).limits
    assert limits.lower[0] == -np.inf and limits.upper[0] == limits.velocity[0] == limits.effort[0] == np.inf


def test_urdf_default_axis_is_x():
    text = _robot(
        _link("base", None), _link("l1"), '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/></joint>'
    )
    np.testing.assert_array_equal(kj.load_urdf(text).kinematics.axes[0], [1.0, 0.0, 0.0])


def test_kinematics_only_urdf_has_no_inertials():
    text = _robot(_link("base", None), _link("l1", None), _joint("j1", "base", "l1"))
    model = kj.load_urdf(text)
    assert model.inertials is None
    with pytest.raises(ValueError, match="no inertials"):
        kj.mass_matrix(model, jnp.zeros(1))


def test_rotated_offset_inertial_matches_the_parallel_axis_theorem():
    """One link turning about z: M = (R I R^T)_zz + m (cx^2 + cy^2) with R, c from <inertial><origin>."""
    rng = np.random.default_rng(3)
    inertia = random_inertia(rng)
    angles, com, mass = rng.uniform(-np.pi, np.pi, 3), rng.uniform(-0.5, 0.5, 3), 2.7
    values = " ".join(repr(float(inertia[a, b])) for a, b in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))
    origin = f'xyz="{" ".join(map(str, com.tolist()))}" rpy="{" ".join(map(str, angles.tolist()))}"'
    text = _robot(_link("base", None), _link("l1", mass, values, origin), _joint("j1", "base", "l1"))
    rot = _rpy_numpy(*angles)
    expected = (rot @ inertia @ rot.T)[2, 2] + mass * (com[0] ** 2 + com[1] ** 2)
    got = kj.mass_matrix(kj.load_urdf(text), jnp.array([0.7]))
    assert abs(float(got[0, 0]) - expected) < 1e-12 * expected


def _rpy_numpy(roll, pitch, yaw):
    """URDF's rpy, written out independently of kronjax: Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


def test_rpy_and_its_inverse():
    rng = np.random.default_rng(0)
    for angles in [*rng.uniform(-3, 3, (20, 3)), (0.3, np.pi / 2, 0.2), (0.3, -np.pi / 2, -1.2)]:
        np.testing.assert_allclose(np.asarray(rpy(*angles)), _rpy_numpy(*angles), atol=1e-14)
        back = to_rpy(_rpy_numpy(*angles))
        np.testing.assert_allclose(_rpy_numpy(*back), _rpy_numpy(*angles), atol=1e-12)
    for _ in range(20):
        r = random_rotation(rng)
        np.testing.assert_allclose(_rpy_numpy(*to_rpy(r)), r, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Fixed joints, sub-chains
# --------------------------------------------------------------------------------------------

TREE = _robot(
    _link("world", None),
    _link("pedestal", 5.0),
    _link("torso", 3.0, "0.2 0.01 0 0.15 0.02 0.1", 'xyz="0.05 0 0.2" rpy="0.1 0.2 0.3"'),
    _link("a1", 1.5),
    _link("a2", 1.0, "0.05 0 0.01 0.06 0 0.03", 'xyz="0 0.1 0.15" rpy="0 0.4 0"'),
    _link("b1", 1.2),
    _link("b2", 0.8),
    _link("tool", 0.4, "0.002 0 0 0.002 0 0.001", 'xyz="0.02 0 0.05" rpy="0.5 0 0"'),
    _link("flange", None),
    _link("camera", 0.2, "0.001 0 0 0.001 0 0.001", 'xyz="0 0.03 0" rpy="0 0 1"'),
    _joint("fix_pedestal", "world", "pedestal", kind="fixed", xyz="0 0 0.5", rpy="0 0 0.7"),
    _joint("waist", "pedestal", "torso", xyz="0 0 0.4", axis="0 0 1"),
    _joint("a_shoulder", "torso", "a1", xyz="0.2 0.3 0.5", rpy="0.3 0 0", axis="0 0.6 0.8"),
    _joint("a_elbow", "a1", "a2", kind="prismatic", xyz="0 0 0.4", axis="1 0 0"),
    _joint("fix_tool", "a2", "tool", kind="fixed", xyz="0.1 0 0.2", rpy="0 1.2 0"),
    _joint("b_shoulder", "torso", "b1", xyz="0.2 -0.3 0.5", rpy="-0.3 0 0", axis="0 1 0"),
    _joint("b_elbow", "b1", "b2", xyz="0 0 0.4", rpy="0 0.2 0", axis="0 1 0"),
    _joint("fix_flange", "b2", "flange", kind="fixed", xyz="0 0 0.3"),
    _joint("fix_camera", "flange", "camera", kind="fixed", xyz="0 0.05 0", rpy="0.2 0 0"),
)


@jax.jit
def _dynamics(model, q):
    return kj.mass_matrix(model, q), kj.coriolis_star(model, q), kj.gravity(model, q)


def _states(n, count=5, seed=0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, (count, n))


def test_fixed_links_as_frames_give_the_same_dynamics_as_merged_links():
    merged = kj.load_urdf(TREE)
    framed = kj.load_urdf(TREE, merge_fixed=False)
    assert merged.body_names == ("torso", "a1", "a2", "b1", "b2")
    assert framed.body_names == ("pedestal", "torso", "a1", "a2", "tool", "b1", "b2", "flange", "camera")
    assert framed.nv == merged.nv == 5
    for q in _states(5):
        for got, expected in zip(_dynamics(framed, q), _dynamics(merged, q)):
            assert relative_error(got, expected) < 1e-12


def test_fixed_frames_agree_with_pinocchio_frame_placements():
    framed = kj.load_urdf(TREE, merge_fixed=False)
    pm = pin.buildModelFromXML(TREE)
    data = pm.createData()
    for q in _states(5):
        q_pin = _pin_q(pm, framed, q)
        pin.framesForwardKinematics(pm, data, q_pin)
        poses = kj.forward_kinematics(framed, q)
        for i, body in enumerate(framed.body_names):
            oMf = data.oMf[pm.getFrameId(body)]
            assert relative_error(poses.rotations[i], oMf.rotation) < 1e-12
            assert relative_error(poses.origins[i], oMf.translation) < 1e-12


def _pin_q(pm, model, q):
    """Pinocchio's q for kronjax's q, matched by joint name (kronjax: Tree bodies with q_index)."""
    q_pin = np.zeros(pm.nq)
    for name, k in zip(model.joint_names, model.kinematics.q_index):
        if k >= 0:
            q_pin[pm.joints[pm.getJointId(name)].idx_q] = q[k]
    return q_pin


def test_sub_tree_below_a_root_is_the_block_of_the_whole_mass_matrix():
    """The kinetic energy of the bodies below ``a1`` for motions of joints below it does not
    depend on where the whole subtree is: M_sub(q_sub) = M[sub, sub] at any upstream q. Gravity
    in the sub-model's base frame is the world gravity rotated into ``a1``'s frame."""
    whole = kj.load_urdf(TREE)
    assert kj.load_urdf(TREE, root="a1").body_names == ("a2",)
    k = whole.body_index("a2")
    for q in _states(5):
        rotation = np.asarray(kj.forward_kinematics(whole, q).rotations[whole.body_index("a1")])
        sub = kj.load_urdf(TREE, root="a1", gravity=rotation.T @ np.asarray(whole.gravity))
        m, _, g = (np.asarray(x) for x in _dynamics(whole, q))
        m_sub, _, g_sub = _dynamics(sub, q[[k]])
        assert relative_error(m_sub, m[[k]][:, [k]]) < 1e-12
        assert relative_error(g_sub, g[[k]]) < 1e-12


def test_chain_to_a_tip_equals_the_tree_with_the_other_branch_removed():
    """The chain keeps what is bolted to its bodies (the camera on the flange), not other branches."""
    chain = kj.load_urdf(TREE, tip="flange")
    assert chain.body_names == ("torso", "b1", "b2")
    robot = ET.fromstring(TREE)
    for joint in list(robot.findall("joint")):
        if joint.find("child").get("link") in ("a1", "a2", "tool"):
            robot.remove(joint)
    for link in list(robot.findall("link")):
        if link.get("name") in ("a1", "a2", "tool"):
            robot.remove(link)
    trimmed = kj.load_urdf(ET.tostring(robot, encoding="unicode"))
    assert trimmed.body_names == chain.body_names
    np.testing.assert_array_equal(chain.inertials.mass, trimmed.inertials.mass)
    for q in _states(3):
        for got, expected in zip(_dynamics(chain, q), _dynamics(trimmed, q)):
            assert relative_error(got, expected) < 1e-12


# --------------------------------------------------------------------------------------------
# Round trips through to_urdf
# --------------------------------------------------------------------------------------------

# the closed-chain mechanisms (four_bar, slider_crank, five_bar, stewart3) are Mechanisms, not Models
BUILTIN = sorted(set(kj.models.__all__) - {"four_bar", "slider_crank", "five_bar", "stewart3"})


@pytest.mark.parametrize("name", BUILTIN)
def test_round_trip_of_builtin_models(name):
    # URDF has no rotor inertia: the PUMA's motors stay out (to_urdf would warn and drop them)
    model = getattr(kj.models, name)(**({"motors": False} if name == "puma560" else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # to_urdf writes nothing that reads as a degenerate limit
        back = kj.load_urdf(kj.to_urdf(model), gravity=model.gravity)
    assert back.joint_names == tuple(j for j, kind in zip(model.joint_names, model.kinematics.kinds) if kind != "F")
    for key in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(back.limits, key), getattr(model.limits, key))
    for q in _states(model.nv):
        for got, expected in zip(_dynamics(back, q), _dynamics(model, q)):
            assert relative_error(got, expected) < 1e-12


def test_round_trip_of_a_branched_tree_keeps_names_and_permutes_coordinates():
    """load_urdf orders the bodies depth first (as Pinocchio does); a tree written in another
    order comes back permuted, matched by joint name."""
    framed = kj.load_urdf(TREE, merge_fixed=False)
    back = kj.load_urdf(kj.to_urdf(framed), merge_fixed=False)
    assert sorted(back.joint_names) == sorted(framed.joint_names)
    perm = [framed.joint_names.index(name) for name in back.joint_names]
    coords = [framed.kinematics.q_index[i] for i in perm if framed.kinematics.q_index[i] >= 0]
    for q in _states(framed.nv):
        m_back, _, g_back = _dynamics(back, q[coords])
        m, _, g = _dynamics(framed, q)
        assert relative_error(m_back, np.asarray(m)[np.ix_(coords, coords)]) < 1e-12
        assert relative_error(g_back, np.asarray(g)[coords]) < 1e-12


def test_to_urdf_rejects_a_poses_function_model():
    model = kj.from_function(lambda q: (jnp.eye(3)[None], jnp.stack([q[0], 0.0, 0.0])[None]), 1)
    with pytest.raises(TypeError, match="to_urdf needs a model with a joint tree"):
        kj.to_urdf(model)


def test_written_urdf_is_plain_urdf():
    text = kj.to_urdf(kj.models.stacker(), name="stacker")
    robot = ET.fromstring(text.split("?>", 1)[1])
    assert robot.tag == "robot" and robot.get("name") == "stacker"
    assert [j.get("type") for j in robot.findall("joint")] == ["prismatic", "continuous", "continuous"]
    assert not re.search(r"\binf\b|nan", text)


def test_unlimited_effort_and_velocity_are_written_so_that_pinocchio_reads_them_unlimited():
    """A continuous joint with nothing limited has no <limit> (Pinocchio: inf); otherwise urdfdom
    needs effort and velocity, reads an absent bound as 0 and takes no "inf": the largest double,
    which kronjax reads back as unlimited, without a warning."""
    joints = [
        kj.Joint("R", lower=-1.0, upper=1.0),
        kj.Joint("P", parent=0, axis=(1.0, 0.0, 0.0), effort=30.0),
        kj.Joint("R", parent=1, velocity=2.0),
        kj.Joint("R", parent=2, axis=(0.0, 1.0, 0.0), translation=(0.0, 0.0, 0.2)),
    ]
    inertials = [kj.Inertial(1.0, (0.1, 0.2, 0.3), (0.1, 0.2, 0.15))] * 4
    model = kj.from_joints(joints, inertials)
    text = kj.to_urdf(model)
    assert text.count("<limit") == 3 and "-1.7976931348623157e+308" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = kj.load_urdf(text)
    for key in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(back.limits, key), getattr(model.limits, key))
    pm = pin.buildModelFromXML(text)
    big = np.finfo(float).max
    idx_v = [pm.joints[pm.getJointId(f"joint{i}")].idx_v for i in range(1, 5)]
    np.testing.assert_array_equal(pm.effortLimit[idx_v], [big, 30.0, big, np.inf])
    np.testing.assert_array_equal(pm.velocityLimit[idx_v], [big, big, 2.0, np.inf])
    prismatic = pm.joints[pm.getJointId("joint2")].idx_q  # unbounded, not [0, 0] (an absent bound)
    assert pm.lowerPositionLimit[prismatic] == -big and pm.upperPositionLimit[prismatic] == big
