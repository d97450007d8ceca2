"""The compact Jacobians (``kj.joint_jacobians``) and the Jacobians of listed bodies
(``kj.jacobians(..., bodies=...)``) against Pinocchio 4.1.

Pinocchio's ``computeJointJacobians`` leaves in ``data.J`` the ``6 x nv`` world-frame motion of
every velocity coordinate about the world origin, ``[linear; angular]`` (a ``Motion``'s order);
``getJointJacobian`` / ``getFrameJacobian`` select a joint's or a frame's columns from it and shift
them to the frame (LOCAL_WORLD_ALIGNED: base axes, kronjax's ``frame="base"``; LOCAL: the frame's
own axes, ``frame="body"``). Checked to 1e-10 (float64), and in float32 to :data:`checks.F32_TOL`
relative to the largest entry (float32 rounding, ~1e-7, grown along the G1's chains of up to 13
joints):

* ``JointJacobians.subspaces`` against ``data.J`` (columns matched by joint name), its poses
  against ``data.oMi``, and its conversion to Khang's layout (``JointJacobians.jacobians``) against
  ``getJointJacobian`` of every joint, in both frames, on the G1 humanoid and ANYmal
  (example-robot-data, ``floating_base=True``: Pinocchio's free-flyer);
* the listed bodies' Jacobians against ``getFrameJacobian``: the G1's feet and hands and ANYmal's
  feet as points on the bodies they are merged into (at their frames' placements), and ANYmal's
  feet as bodies of their own (``merge_fixed=False``), by name;
* a tree with a free-flyer, a spherical joint, a planar joint, prismatic joints, a fixed tool and
  two mimic joints (:func:`mixed`), whose Pinocchio twin has the mimic joints as independent joints:
  ``data.J`` is ``subspaces`` (the full coordinates) and every Jacobian is ``J_full G`` with ``G``
  from the tree's specification; the autodiff path with ``bodies`` too.

Configurations: Pinocchio's ``randomConfiguration`` (translations in [-1, 1]), mapped to kronjax's
order by joint name.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from checks import F32_TOL, assert_close
from oracles import jit_once, random_tree, to_pinocchio
from zoo import zoo_files

import kronjax as kj

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

FILES = zoo_files()
ROBOTS = {"g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf", "anymal": "anymal_c_simple_description/urdf/anymal.urdf"}
# Pinocchio frames: the G1's feet and hands, ANYmal's feet (a quarter turn from the shank's axes)
END_EFFECTORS = {
    "g1": ["left_ankle_roll_link", "right_ankle_roll_link", "left_rubber_hand", "right_rubber_hand"],
    "anymal": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
}
STATES = 3
FRAMES = (("base", pin.LOCAL_WORLD_ALIGNED), ("body", pin.LOCAL))


class Twin:
    """A floating-base robot of example-robot-data in kronjax (fixed links merged, or kept with
    ``merge_fixed=False``) and in Pinocchio, and the maps between their coordinates by joint name."""

    def __init__(self, name: str, merge_fixed: bool = True):
        path = FILES[ROBOTS[name]]
        self.name = name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kj.urdf.URDFWarning)
            self.model = kj.load_urdf(path, floating_base=True, merge_fixed=merge_fixed)
        self.pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        self.pd = self.pm.createData()
        model, pm = self.model, self.pm
        moving = [n for n, kind in zip(model.joint_names, model.kinematics.kinds) if kind != "F"]
        ids = [pm.getJointId(n) for n in moving]
        self.q_perm = np.concatenate([np.arange(pm.idx_qs[j], pm.idx_qs[j] + pm.nqs[j]) for j in ids])
        self.v_perm = np.concatenate([np.arange(pm.idx_vs[j], pm.idx_vs[j] + pm.nvs[j]) for j in ids])
        # (kronjax body, Pinocchio joint) of each moving joint
        self.joints = [(b, pm.getJointId(n)) for b, n in enumerate(model.joint_names) if n in moving]

    def configurations(self, seed: int) -> np.ndarray:
        """``(STATES, nq)`` Pinocchio configurations."""
        pin.seed(seed)
        bound = np.ones(self.pm.nq)
        return np.stack([pin.randomConfiguration(self.pm, -bound, bound) for _ in range(STATES)])

    def frame_jacobians(self, q: np.ndarray, frames: list[str], reference) -> np.ndarray:
        """``(k, 6, nv)``: Pinocchio's ``getFrameJacobian`` of the frames, kronjax's column order."""
        pin.computeJointJacobians(self.pm, self.pd, q)
        pin.updateFramePlacements(self.pm, self.pd)
        ids = [self.pm.getFrameId(f) for f in frames]
        return np.stack([pin.getFrameJacobian(self.pm, self.pd, i, reference)[:, self.v_perm] for i in ids])

    def on_bodies(self, frames: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Each Pinocchio frame as the kronjax body of its parent joint and its placement there:
        ``(body names, (k, 3) points, (k, 3, 3) rotations)``."""
        bodies, points, rotations = [], [], []
        for name in frames:
            frame = self.pm.frames[self.pm.getFrameId(name)]
            bodies.append(self.model.body_names[self.model.joint_names.index(self.pm.names[frame.parentJoint])])
            points.append(frame.placement.translation)
            rotations.append(frame.placement.rotation)
        return bodies, np.array(points), np.array(rotations)


@functools.cache
def twin(name: str, merge_fixed: bool = True) -> Twin:
    if ROBOTS[name] not in FILES:
        pytest.skip("example-robot-data is not installed (pip install 'kronjax[test]')")
    return Twin(name, merge_fixed)


def stacked(jt, jr) -> np.ndarray:
    """``[J_T; J_R]`` ``(..., 6, nv)``, Pinocchio's row order."""
    return np.concatenate([np.asarray(jt), np.asarray(jr)], axis=-2)


@functools.cache
def computed(name: str) -> tuple[Twin, np.ndarray, dict]:
    """The robot, its Pinocchio configurations and kronjax's values at them, from one compiled
    function: ``JointJacobians`` (``"compact"``), its conversion for every body (``"all <frame>"``),
    and the end effectors' Jacobians by ``jacobians(bodies=)`` (``"listed <frame>"``) and by the
    conversion (``"converted <frame>"``)."""
    robot = twin(name)
    model = robot.model
    bodies, points, _ = robot.on_bodies(END_EFFECTORS[name])
    index = [model.body_index(b) for b in bodies]

    def values(q):
        jj = kj.joint_jacobians(model, q)
        out = {"compact": jj}
        for frame, _ in FRAMES:
            out[f"all {frame}"] = jj.jacobians(frame)
            out[f"listed {frame}"] = kj.jacobians(model, q, frame, points=points, bodies=bodies)
            out[f"converted {frame}"] = jj.jacobians(frame, points=points, bodies=index)
        return out

    qs = robot.configurations(seed=0)
    return robot, qs, jit_once(jax.vmap(values))(jnp.asarray(qs[:, robot.q_perm]))


@pytest.mark.parametrize("name", ["g1", "anymal"])
def test_compact_jacobians_against_pinocchio(name):
    """``subspaces`` is ``data.J``, the poses are ``data.oMi``, and the conversion to Khang's
    layout gives every joint's ``getJointJacobian`` in both frames."""
    robot, qs, ours = computed(name)
    model, pm, pd, jj = robot.model, robot.pm, robot.pd, ours["compact"]
    assert jj.subspaces.shape == (STATES, 6, model.nv) and len(jj.support) == model.n_bodies
    for k, q in enumerate(qs):
        pin.computeJointJacobians(pm, pd, q)
        assert_close(jj.subspaces[k], pd.J[:, robot.v_perm], "data.J")
        for b, jid in robot.joints:
            assert_close(jj.rotations[k, b], pd.oMi[jid].rotation, "rotation")
            assert_close(jj.origins[k, b], pd.oMi[jid].translation, "origin")
            for frame, reference in FRAMES:
                expected = pin.getJointJacobian(pm, pd, jid, reference)[:, robot.v_perm]
                assert_close(stacked(*(x[k, b] for x in ours[f"all {frame}"])), expected, f"{frame}, {model.body_names[b]}")


@pytest.mark.parametrize("name", ["g1", "anymal"])
def test_end_effectors_as_points_against_pinocchio_frames(name):
    """The feet (and the G1's hands) as points on the bodies they are merged into, against
    ``getFrameJacobian``; in LOCAL, Pinocchio's axes are the frame's: the body-frame result turned
    by the frame's placement."""
    robot, qs, ours = computed(name)
    frames = END_EFFECTORS[name]
    _, _, rotations = robot.on_bodies(frames)
    for k, q in enumerate(qs):
        for frame, reference in FRAMES:
            expected = robot.frame_jacobians(q, frames, reference)
            for route in ("listed", "converted"):
                jt, jr = (np.asarray(x[k]) for x in ours[f"{route} {frame}"])
                if frame == "body":
                    jt, jr = (np.einsum("bji,bjk->bik", rotations, x) for x in (jt, jr))
                assert_close(stacked(jt, jr), expected, f"{route}, {frame}")


@pytest.mark.slow  # the 78 bodies' compilation: 12-17 s on 2 shared cores
def test_feet_by_name_against_pinocchio_frames():
    """ANYmal loaded with its fixed links kept (78 bodies): the feet are bodies, named as
    Pinocchio's frames, and their body frames are the frames' (LOCAL directly)."""
    robot = twin("anymal", merge_fixed=False)
    frames = END_EFFECTORS["anymal"]

    def values(q):
        return {frame: kj.jacobians(robot.model, q, frame, bodies=frames) for frame, _ in FRAMES}

    qs = robot.configurations(seed=2)
    ours = jit_once(jax.vmap(values))(jnp.asarray(qs[:, robot.q_perm]))
    for k, q in enumerate(qs):
        for frame, reference in FRAMES:
            assert_close(stacked(*(x[k] for x in ours[frame])), robot.frame_jacobians(q, frames, reference), frame)


def test_float32_against_pinocchio():
    """The G1 in float32: ``subspaces`` and the feet and hands at their points, relative to the
    largest entry, against Pinocchio in float64."""
    robot = twin("g1")
    frames = END_EFFECTORS["g1"]
    bodies, points, _ = robot.on_bodies(frames)
    model = robot.model.astype(jnp.float32)

    def values(q):
        return kj.joint_jacobians(model, q).subspaces, kj.jacobians(model, q, points=points.astype(np.float32), bodies=bodies)

    qs = robot.configurations(seed=3)
    subspaces, (jt, jr) = jit_once(jax.vmap(values))(jnp.asarray(qs[:, robot.q_perm], jnp.float32))
    assert subspaces.dtype == jt.dtype == jnp.float32
    for k, q in enumerate(qs):
        expected = robot.frame_jacobians(q, frames, pin.LOCAL_WORLD_ALIGNED)
        assert_close(subspaces[k], robot.pd.J[:, robot.v_perm], "data.J", tol=F32_TOL, relative=True)
        assert_close(stacked(jt[k], jr[k]), expected, "frames", tol=F32_TOL, relative=True)


# --------------------------------------------------------------------------------------------
# multi-DoF and mimic joints
# --------------------------------------------------------------------------------------------

# (kind, parent) or Joint arguments; mimic: (primary, multiplier, offset), the primary by name
MIXED = [
    ("free", -1),
    ("R", 0),
    ("spherical", 1),
    ("P", 2),
    ("F", 3),  # a tool
    ("planar", 0),
    ("R", 5),
    dict(kind="R", parent=0, mimic=("j1", -0.7, 0.1)),  # on another branch than its primary
    dict(kind="P", parent=6, mimic=("j3", 2.0, -0.05)),
]


class Mixed:
    """:data:`MIXED` in kronjax and in Pinocchio (``oracles.to_pinocchio``: joints in kronjax's body
    order, the mimic joints independent), ``q_pin``, ``G`` (``v_pin = G v``) from :data:`MIXED`, and
    each kronjax body's placement in its Pinocchio joint."""

    def __init__(self):
        # no rotor inertias: Pinocchio's would be per full coordinate (kinematics only here)
        self.model = dataclasses.replace(random_tree(MIXED, seed=5), armature=None)
        self.pm = to_pinocchio(self.model)
        self.pd = self.pm.createData()
        model, pm = self.model, self.pm
        self.G = np.zeros((pm.nv, model.nv))
        self.own, self.coupled = [], []  # per Pinocchio joint: (idx_q, nq, kronjax q slice, multiplier, offset)
        for i, spec in enumerate(dict(kind=s[0], parent=s[1]) if isinstance(s, tuple) else s for s in MIXED):
            if spec["kind"] == "F":
                continue
            joint = pm.joints[pm.getJointId(f"j{i}")]
            primary, multiplier, offset = spec.get("mimic", (f"j{i}", 1.0, 0.0))
            self.G[joint.idx_v : joint.idx_v + joint.nv, model.velocity_index(primary)] = multiplier * np.eye(joint.nv)
            entry = (joint.idx_q, joint.nq, model.configuration_index(primary), multiplier, offset)
            (self.coupled if "mimic" in spec else self.own).append(entry)
        tree = model.kinematics
        se3 = lambda r, p: pin.SE3(np.asarray(r, float), np.asarray(p, float))  # noqa: E731
        self.placements, self.joint_of = [], []  # as oracles.to_pinocchio places them
        for i, (parent, kind) in enumerate(zip(tree.parents, tree.kinds)):
            post = se3(tree.post_rotation[i], tree.post_translation[i])
            if kind == "F":
                self.joint_of.append(self.joint_of[parent])
                self.placements.append(self.placements[parent] * se3(tree.pre_rotation[i], tree.pre_translation[i]) * post)
            else:
                self.joint_of.append(pm.getJointId(f"j{i}"))
                self.placements.append(post)

    def configurations(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``(kronjax q, Pinocchio q)`` ``(STATES, nq)`` each: the independent joints' from
        ``randomConfiguration``, the mimic joints' ``multiplier q_primary + offset``."""
        pin.seed(seed)
        bound = np.ones(self.pm.nq)
        ours, theirs = [], []
        for _ in range(STATES):
            q_pin = pin.randomConfiguration(self.pm, -bound, bound)
            q = np.zeros(self.model.nq)
            for idx_q, nq, own, _, _ in self.own:
                q[own] = q_pin[idx_q : idx_q + nq]
            for idx_q, nq, own, multiplier, offset in self.coupled:
                q_pin[idx_q : idx_q + nq] = multiplier * q[own] + offset
            ours.append(q)
            theirs.append(q_pin)
        return np.array(ours), np.array(theirs)


@functools.cache
def mixed() -> Mixed:
    return Mixed()


def test_multi_dof_and_mimic_joints_against_pinocchio():
    """``subspaces`` is Pinocchio's ``data.J`` over the full coordinates (the mimic joints
    independent there), ``reduction`` is ``G``; every body's Jacobian (``JointJacobians.jacobians``,
    ``kj.jacobians(bodies=)`` analytic and autodiff) at random points is ``getFrameJacobian @ G``."""
    case = mixed()
    model, pm, pd = case.model, case.pm, case.pd
    assert (pm.nv, model.nv) == case.G.shape == (17, 15)
    points = np.random.default_rng(0).normal(size=(model.n_bodies, 3)) * 0.3
    listed = [8, 4, 7, 2, 4]  # mimic, tool, mimic, spherical, the tool again
    index = np.array(listed)

    def values(q):
        jj = kj.joint_jacobians(model, q)
        out = {"subspaces": jj.subspaces}
        for frame, _ in FRAMES:
            out[frame] = jj.jacobians(frame, points=points)
            for method in ("analytic", "autodiff"):
                out[f"{frame} {method}"] = kj.jacobians(model, q, frame, points=points[index], method=method, bodies=listed)
        return out

    qs, qs_pin = case.configurations(seed=4)
    ours = jit_once(jax.vmap(values))(jnp.asarray(qs))
    jj = kj.joint_jacobians(model, qs[0])
    np.testing.assert_array_equal(jj.reduction, case.G)
    for k, q_pin in enumerate(qs_pin):
        pin.computeJointJacobians(pm, pd, q_pin)
        assert_close(ours["subspaces"][k], pd.J, "data.J")
        for frame, reference in FRAMES:
            expected = np.stack(
                [
                    pin.getFrameJacobian(pm, pd, case.joint_of[b], case.placements[b] * pin.SE3(np.eye(3), points[b]), reference)
                    @ case.G
                    for b in range(model.n_bodies)
                ]
            )
            assert_close(stacked(*(x[k] for x in ours[frame])), expected, f"all bodies, {frame}")
            for method in ("analytic", "autodiff"):
                assert_close(stacked(*(x[k] for x in ours[f"{frame} {method}"])), expected[index], f"listed, {frame}, {method}")


def test_batched_compact_form():
    """``jax.vmap`` of :func:`kj.joint_jacobians` keeps the static fields, and the conversion
    vmapped over it gives Pinocchio's joint Jacobians."""
    case = mixed()
    qs, qs_pin = case.configurations(seed=6)
    batched = jax.vmap(lambda q: kj.joint_jacobians(case.model, q))(jnp.asarray(qs))
    assert batched.subspaces.shape == (STATES, 6, 17) and batched.nv == 15
    assert batched.support == kj.joint_jacobians(case.model, qs[0]).support
    jt, jr = jax.vmap(lambda jj: jj.jacobians(bodies=[6]))(batched)
    for k, q_pin in enumerate(qs_pin):
        pin.computeJointJacobians(case.pm, case.pd, q_pin)
        expected = pin.getFrameJacobian(case.pm, case.pd, case.joint_of[6], case.placements[6], pin.LOCAL_WORLD_ALIGNED) @ case.G
        assert_close(stacked(jt[k, 0], jr[k, 0]), expected, "body 6")


def test_support_is_the_moving_ancestors():
    """``support``: the base's six columns for every body, then each branch's own; the mimic
    joint on the base's branch is moved by its own column, not its primary's."""
    jj = kj.joint_jacobians(mixed().model, kj.neutral(mixed().model))
    base, revolute, spherical, prismatic = (0, 1, 2, 3, 4, 5), (6,), (7, 8, 9), (10,)
    planar, last = (11, 12, 13), (14,)
    assert jj.support[1] == base + revolute
    assert jj.support[4] == jj.support[3] == base + revolute + spherical + prismatic  # the tool: its parent's
    assert jj.support[7] == base + (15,)
    assert jj.support[8] == base + planar + last + (16,)
    assert jj.coordinates[15:] == (6, 10) and jj.multipliers[15:] == (-0.7, 2.0)
    assert jj.support_mask.shape == (9, 17) and jj.support_mask.sum() == sum(map(len, jj.support))


def test_bad_input():
    model = kj.models.double_pendulum()
    q = jnp.zeros(2)
    with pytest.raises(TypeError, match="sequence of body indices or names"):
        kj.jacobians(model, q, bodies="link2")
    with pytest.raises(KeyError, match="no body named"):
        kj.jacobians(model, q, bodies=["link3"])
    with pytest.raises(ValueError, match=r"shape \(1, 3\), one body-frame point per body in bodies"):
        kj.jacobians(model, q, points=np.zeros((2, 3)), bodies=[1])
    with pytest.raises(ValueError, match="at least one body"):
        kj.jacobians(model, q, bodies=[])
    jj = kj.joint_jacobians(model, q)
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        jj.jacobians(points=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="unknown frame"):
        jj.jacobians("world")
    poses = kj.from_function(lambda q: (jnp.eye(3)[None], jnp.zeros((1, 3))), 1)
    with pytest.raises(ValueError, match="needs a Tree model"):
        kj.joint_jacobians(poses, jnp.zeros(1))
