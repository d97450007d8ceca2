"""Mimic joints (URDF ``<mimic>``, issue 15) coupled into the dynamics, against Pinocchio.

Pinocchio 4.1 reads a URDF's mimic joints as independent joints, so the coupled model is checked
against ``G^T (Pinocchio's independent model) G`` at ``q_full = G q + b``, ``v_full = G v``, with
``G`` and ``b`` read from the file here with the standard library's XML parser (independently of
kronjax's loader): mass matrix, inverse and forward dynamics, gravity, the analytical derivatives,
``C*`` and Truc's ``C`` through the equations of motion, joint Jacobians and classical
accelerations ``J vd + H (v ⊗ v)``. Files: ``tests/data/mimic_gripper.urdf`` (hand-written:
multipliers and offsets, a mimic of a mimic, revolute and prismatic) and
``tests/data/mimic_hand.urdf`` (the Panda with both fingers, example-robot-data).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from checks import TOL
from oracles import jit_once, relative_error, symmetric_from_upper

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = Path(__file__).parent / "data"


def coupling(path: Path, full: list[str], own: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``G``, ``b`` with ``q_full = G q + b`` from the file's ``<mimic>`` elements (a mimic of a
    mimic followed to its primary)."""
    mimic = {}
    for joint in ET.parse(path).getroot().findall("joint"):
        element = joint.find("mimic")
        if element is not None:
            mimic[joint.get("name")] = (
                element.get("joint"),
                float(element.get("multiplier", 1)),
                float(element.get("offset", 0)),
            )
    g, b = np.zeros((len(full), len(own))), np.zeros(len(full))
    for row, name in enumerate(full):
        multiplier, offset = 1.0, 0.0
        while name in mimic:
            name, m, o = mimic[name]
            multiplier, offset = multiplier * m, multiplier * o + offset
        g[row, own.index(name)], b[row] = multiplier, offset
    return g, b


class Coupled:
    """A coupled kronjax model, Pinocchio's independent reading of the same file, and ``G``, ``b``."""

    def __init__(self, name: str):
        path = DATA / f"{name}.urdf"
        self.model = kj.load_urdf(path)
        self.pm = pin.buildModelFromUrdf(str(path))
        self.pd = self.pm.createData()
        full = [self.pm.names[j] for j in range(1, self.pm.njoints)]
        self.g, self.b = coupling(path, full, list(self.model.coordinate_names))
        self.perm = np.array([self.pm.idx_vs[self.pm.getJointId(n)] for n in full])  # 1-DoF joints: q and v alike

    def pinocchio(self, x_full: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pm.nv)
        out[self.perm] = x_full
        return out

    def reference(self, q, v, a) -> dict:
        pm, pd, g = self.pm, self.pd, self.g
        qp, vp, ap = self.pinocchio(g @ q + self.b), self.pinocchio(g @ v), self.pinocchio(g @ a)
        full = lambda x: np.asarray(x)[np.ix_(self.perm, self.perm)]  # noqa: E731
        m = g.T @ full(symmetric_from_upper(pin.crba(pm, pd, qp))) @ g
        bias = g.T @ pin.rnea(pm, pd, qp, vp, np.zeros(pm.nv))[self.perm]
        dq, dv, _ = pin.computeRNEADerivatives(pm, pd, qp, vp, ap)
        qdd = np.linalg.solve(m, a - bias)  # a as the torques
        out = dict(
            M=m,
            tau=g.T @ pin.rnea(pm, pd, qp, vp, ap)[self.perm],
            qdd=qdd,
            g=g.T @ pin.computeGeneralizedGravity(pm, pd, qp)[self.perm],
            dtau_dq=g.T @ full(dq) @ g,
            dtau_dv=g.T @ full(dv) @ g,
        )
        # forward dynamics: M qdd + b = tau differentiated at qdd, dqdd/d(q, v) = -M^-1 dtau/d(q, v)
        fq, fv, _ = pin.computeRNEADerivatives(pm, pd, qp, vp, self.pinocchio(g @ qdd))
        out["dqdd_dq"], out["dqdd_dv"] = (-np.linalg.solve(m, g.T @ full(x) @ g) for x in (fq, fv))
        pin.computeJointJacobians(pm, pd, qp)
        pin.forwardKinematics(pm, pd, qp, vp, ap)
        jacobians, accelerations = [], []
        for joint in self.model.joint_names:
            jid = pm.getJointId(joint)
            jacobians.append(pin.getJointJacobian(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)[:, self.perm] @ g)
            acc = pin.getClassicalAcceleration(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)
            accelerations.append(np.concatenate([acc.linear, acc.angular]))
        return out | dict(J=np.stack(jacobians), acc=np.stack(accelerations))


def _ours(model):
    def values(q, v, a):
        (jt, jr), (ht, hr), (jtd, jrd) = kj.jacobians(model, q), kj.hessians(model, q), kj.jacobians_dot(model, q, v)
        dq, dv, _ = kj.inverse_dynamics_derivatives(model, q, v, a)
        fq, fv, _ = kj.forward_dynamics_derivatives(model, q, v, a)  # a as the torques
        vv = jnp.kron(v, v)
        m, g = kj.mass_matrix(model, q), kj.gravity(model, q)
        return dict(
            M=m,
            tau=kj.inverse_dynamics(model, q, v, a),
            qdd=kj.forward_dynamics(model, q, v, a),
            g=g,
            dtau_dq=dq,
            dtau_dv=dv,
            dqdd_dq=fq,
            dqdd_dv=fv,
            J=jnp.concatenate([jt, jr], axis=1),
            acc=jnp.concatenate([jt @ a + ht @ vv, jr @ a + hr @ vv], axis=1),
            acc_jdot=jnp.concatenate([jt @ a + jtd @ v, jr @ a + jrd @ v], axis=1),
            kron=m @ a + kj.coriolis_star(model, q) @ vv + g,
            truc=m @ a + kj.coriolis_matrix(model, q, v) @ v + g,
        )

    return jit_once(jax.vmap(values))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("mimic_gripper", marks=pytest.mark.slow),
        pytest.param("mimic_hand", marks=[pytest.mark.slow, pytest.mark.extended]),  # the gripper's checks the same code
    ],
)
def test_coupled_dynamics_and_kinematics_against_pinocchio(name):
    case = Coupled(name)
    model = case.model
    assert (case.pm.nv, model.nv) == case.g.shape  # Pinocchio's independent joints, our coordinates
    rng = np.random.default_rng(0)
    qs, vs, accs = rng.uniform(-0.5, 0.5, (3, 10, model.nv))
    ours = _ours(model)(qs, vs, accs)
    for k in range(10):
        expected = case.reference(qs[k], vs[k], accs[k])
        for key, value in expected.items():
            assert relative_error(ours[key][k], value) < TOL, (key, k)
        assert relative_error(ours["acc_jdot"][k], expected["acc"]) < TOL
        for key in ("kron", "truc"):
            assert relative_error(ours[key][k], expected["tau"]) < TOL, key


def test_the_loader_reads_mimic_joints():
    model = kj.load_urdf(DATA / "mimic_gripper.urdf")
    names = model.joint_names
    assert model.coordinate_names == ("wrist", "left_knuckle", "slider")
    resolved = {
        names[b]: (names[entry[0]], entry[1], round(entry[2], 12)) for b, entry in enumerate(model.kinematics.mimic) if entry
    }
    assert resolved == {
        "right_knuckle": ("left_knuckle", -1.0, 0.0),
        "left_tip": ("left_knuckle", 0.5, 0.1),
        "right_tip": ("left_knuckle", -0.4, -0.03),  # -0.8 (0.5 q + 0.1) + 0.05
        "counter_slider": ("slider", -2.0, 0.01),
    }
    with pytest.raises(ValueError, match="joint 'left_tip' mimics joint 'left_knuckle': it has no coordinate"):
        model.velocity_index("left_tip")
    independent = kj.load_urdf(DATA / "mimic_gripper.urdf", mimic="independent")
    assert independent.nv == 7 and not independent.kinematics.has_mimic
    with pytest.raises(ValueError, match="mimic must be 'coupled' or 'independent'"):
        kj.load_urdf(DATA / "mimic_gripper.urdf", mimic="yes")


def test_to_urdf_writes_mimic_joints_back():
    model = kj.load_urdf(DATA / "mimic_gripper.urdf")
    text = kj.to_urdf(model)
    back = kj.load_urdf(text)
    assert back.kinematics.mimic == model.kinematics.mimic
    q = np.array([0.3, -0.2, 0.01])
    assert relative_error(kj.mass_matrix(back, q), kj.mass_matrix(model, q)) < 1e-14
    assert pin.buildModelFromXML(text).nv == 7  # Pinocchio reads the written <mimic> as independent joints


BAD = """<robot name="r"><link name="a"/>
  <link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{first}</joint>
  <joint name="j2" type="revolute"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>{second}</joint>
</robot>"""


def test_bad_mimic_joints_get_a_clear_error():
    with pytest.warns(
        kj.urdf.URDFWarning, match=r"a <mimic> that names no revolute.*ignored .*: joint 'j2' \(<mimic joint='nope'>\)"
    ):
        assert kj.load_urdf(BAD.format(first="", second='<mimic joint="nope"/>')).nv == 2  # independent (issue 36)
    with pytest.raises(kj.urdf.URDFError, match=r"mimic joints \['j1', 'j2'\] mimic each other in a cycle"):
        kj.load_urdf(BAD.format(first='<mimic joint="j2"/>', second='<mimic joint="j1"/>'))
    with pytest.raises(kj.urdf.URDFError, match="<mimic> needs the attribute 'joint'"):
        kj.load_urdf(BAD.format(first="", second="<mimic/>"))
    with pytest.raises(ValueError, match="only a revolute or prismatic joint can mimic another"):
        kj.from_joints([kj.Joint("R"), kj.Joint("spherical", parent=0, mimic=(0, 1.0, 0.0))])


def test_from_joints_mimic_by_name_equals_the_urdf():
    """The same two-joint chain built with ``Joint(mimic=...)`` and loaded from URDF."""
    joints = [
        kj.Joint("R", name="j1", lower=-1, upper=1, velocity=1, effort=1),
        kj.Joint("R", parent=0, translation=(1.0, 0.0, 0.0), name="j2", mimic=("j1", 2.0, 0.3)),
    ]
    inertials = [kj.Inertial(1.0, inertia=(1.0, 1.0, 1.0))] * 2
    built = kj.from_joints(joints, inertials)
    loaded = kj.load_urdf(BAD.format(first="", second='<mimic joint="j1" multiplier="2" offset="0.3"/>'))
    q, v, a = np.array([0.4]), np.array([1.5]), np.array([-0.7])
    assert built.nv == 1 and relative_error(kj.inverse_dynamics(built, q, v, a), kj.inverse_dynamics(loaded, q, v, a)) < 1e-14
    # the second joint turns by 2 q + 0.3 about z: the tip of link 2 is at x = cos(q) + cos(3 q + 0.3)
    _, origins = kj.forward_kinematics(built, q)
    assert abs(float(origins[1, 0]) - np.cos(0.4)) < 1e-15
    tip = kj.linear_velocity(built, q, v, 1, point=(1.0, 0.0, 0.0))
    expected = -np.sin(0.4) * 1.5 - np.sin(3 * 0.4 + 0.3) * 3 * 1.5
    assert abs(float(tip[0]) - expected) < 1e-14
