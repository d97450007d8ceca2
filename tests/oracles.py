"""Bridges from kronjax models to the oracle libraries (Pinocchio, Robotics Toolbox)."""

from __future__ import annotations

import jax
import numpy as np

import kronjax as kj

# XLA's backend (LLVM) optimisation level 0 and no XLA:CPU fusion emitters for programs that a test
# runs a few times: they compile 1.2-3x faster (the fusion emitters alone cost a third of
# test_composite's CPU time), and the slower code they emit costs nothing at a few calls (not for
# simulations or solvers, whose loops run the code thousands of times)
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def jit_once(fn, **kwargs):
    """``jax.jit(fn)`` compiled with :data:`FAST_COMPILE`."""
    return jax.jit(fn, compiler_options=FAST_COMPILE, **kwargs)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    a, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return a * np.sign(np.linalg.det(a))


def random_inertia(rng: np.random.Generator) -> np.ndarray:
    """A full (non-diagonal) physically consistent inertia about the centre of mass."""
    principal = rng.uniform(0.02, 0.1, 3)
    principal[2] = rng.uniform(abs(principal[0] - principal[1]) + 0.01, principal[0] + principal[1])
    r = random_rotation(rng)
    return r @ np.diag(principal) @ r.T


def random_arm(seed: int = 0, parents=(-1, 0, 1, 2, 3, 4, 5), prismatic=(3,), armature=False) -> kj.Model:
    """A 7-joint arm (or tree, with other ``parents``) with random axes, placements, full
    inertias and offset centres of mass; with ``armature``, random rotor inertias too."""
    rng = np.random.default_rng(seed)
    joints, inertials = [], []
    for i, parent in enumerate(parents):
        axis = rng.normal(size=3)
        joints.append(
            kj.Joint(
                kind="P" if i in prismatic else "R",
                parent=parent,
                axis=axis / np.linalg.norm(axis),
                rotation=random_rotation(rng),
                translation=rng.uniform(-0.3, 0.3, 3),
                armature=rng.uniform(0.01, 0.5) if armature else 0.0,
            )
        )
        inertials.append(kj.Inertial(mass=rng.uniform(0.5, 4.0), com=rng.uniform(-0.15, 0.15, 3), inertia=random_inertia(rng)))
    return kj.from_joints(joints, inertials, gravity=(0.3, -0.2, -9.81))


def random_tree(spec, seed: int, gravity=None) -> kj.Model:
    """A tree of ``spec`` (any joint kinds; per joint ``(kind, parent)`` or a dict of
    :class:`kronjax.Joint` arguments with ``kind`` and ``parent``, e.g. limits) with random
    placements, axes, full inertias and offset centres of mass; joints ``j<i>``, bodies ``b<i>``."""
    rng = np.random.default_rng(seed)
    joints, inertials = [], []
    for i, joint in enumerate(spec):
        joint = joint if isinstance(joint, dict) else dict(kind=joint[0], parent=joint[1])
        axis = rng.normal(size=3)
        joints.append(
            kj.Joint(
                axis=axis / np.linalg.norm(axis),
                rotation=random_rotation(rng),
                translation=rng.normal(size=3) * 0.3,
                name=f"j{i}",
                body_name=f"b{i}",
                **joint,
            )
        )
        inertials.append(kj.Inertial(rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, random_inertia(rng)))
    return kj.from_joints(joints, inertials, gravity=gravity)


def mixed_model() -> kj.Model:
    """A tree with every joint kind: a free-flyer root, then a revolute-spherical-prismatic branch
    (a fixed tool at its end) and a planar-revolute branch; random placements, axes and full
    inertias; rotor inertias (Pinocchio's ``model.armature``) on the multi-DoF joints and one
    revolute joint."""
    spec = [
        dict(kind="free", parent=-1, armature=0.3),
        ("R", 0),
        dict(kind="spherical", parent=1, armature=0.2),
        ("P", 2),
        ("F", 3),
        dict(kind="planar", parent=0, armature=0.4),
        dict(kind="R", parent=5, armature=0.1),
    ]
    return random_tree(spec, seed=3)


def dh_rows(robot):
    """kronjax D-H rows ``(kind, d, theta, a, alpha)`` read from a Robotics Toolbox robot's links.

    rtb's ``DHLink.A(q)``: revolute ``theta = q + offset`` with ``d = link.d``; prismatic
    ``d = q + offset`` with ``theta = link.theta`` (``link.d`` unused). For modified D-H, rtb's
    link ``j`` holds ``a_{j-1}, alpha_{j-1}``, as ``from_dh(..., "modified")`` expects.
    """
    rows = []
    for j, link in enumerate(robot.links):
        assert not link.isflip, f"link {j}: flipped joints have no kronjax D-H equivalent"
        if link.isprismatic:
            rows.append(("P", link.offset, link.theta, link.a, link.alpha))
        else:
            assert link.isrevolute
            rows.append(("R", link.d, link.offset, link.a, link.alpha))
    return rows


def from_rtb(robot, inertials: bool = True, min_mass: float = 1.0) -> kj.Model:
    """A Robotics Toolbox D-H robot rebuilt with :func:`kronjax.from_dh` (tables read, not typed).

    A link of zero mass (the Puma560's link 1, whose only inertia is about its joint axis) gets
    ``min_mass`` at its frame origin, which lies on its joint axis: it changes neither M nor g.
    """
    rows = dh_rows(robot)
    parts = None
    if inertials:
        parts = []
        for link in robot.links:
            mass = link.m if link.m > 0 else min_mass
            com = link.r if link.m > 0 else np.zeros(3)
            parts.append(kj.Inertial(mass=mass, com=np.asarray(com, float), inertia=np.asarray(link.I, float)))
    convention = "modified" if robot.mdh else "standard"
    return kj.from_dh(rows, convention, parts, gravity=np.asarray(robot.gravity, float))


def to_pinocchio(model: kj.Model):
    """The same multibody system as a Pinocchio model (kronjax Tree models only).

    Pinocchio's bodies live in joint frames; kronjax's body frame is the joint frame times the
    constant ``Post`` placement, so each body's inertia is appended with that placement, and a
    child's joint placement is the parent's ``Post`` times the child's ``Pre``. Fixed joints are
    merged into their parent's Pinocchio joint.
    """
    import pinocchio as pin

    tree = model.kinematics
    if not isinstance(tree, kj.chain.Tree):
        raise TypeError("to_pinocchio needs a Tree model")
    se3 = lambda r, p: pin.SE3(np.asarray(r, float), np.asarray(p, float))  # noqa: E731
    pm = pin.Model()
    joint_of, body_in_joint, joint_ids = [], [], []
    for i, (parent, kind) in enumerate(zip(tree.parents, tree.kinds)):
        parent_joint = 0 if parent < 0 else joint_of[parent]
        parent_offset = pin.SE3.Identity() if parent < 0 else body_in_joint[parent]
        pre = parent_offset * se3(tree.pre_rotation[i], tree.pre_translation[i])
        post = se3(tree.post_rotation[i], tree.post_translation[i])
        axis = np.asarray(tree.axes[i], float)
        if kind == "F":
            joint_of.append(parent_joint)
            body_in_joint.append(pre * post)
        else:
            jmodel = {
                "R": lambda: pin.JointModelRevoluteUnaligned(axis),
                "P": lambda: pin.JointModelPrismaticUnaligned(axis),
                "free": pin.JointModelFreeFlyer,
                "spherical": pin.JointModelSpherical,
                "planar": pin.JointModelPlanar,
            }[kind]()
            jid = pm.addJoint(parent_joint, jmodel, pre, model.joint_names[i])
            joint_ids.append(jid)
            joint_of.append(jid)
            body_in_joint.append(post)
        if model.inertials is not None:
            inertia = pin.Inertia(
                float(model.inertials.mass[i]),
                np.asarray(model.inertials.com[i], float),
                np.asarray(model.inertials.inertia[i], float),
            )
            pm.appendBodyToJoint(joint_of[-1], inertia, body_in_joint[-1])
    pm.gravity.linear = np.asarray(model.gravity, float)
    if model.armature is not None:
        pm.armature[:] = np.asarray(model.armature, float)
    return pm


def symmetric_from_upper(m: np.ndarray) -> np.ndarray:
    """Pinocchio's crba fills only the upper triangle."""
    return np.triu(m) + np.triu(m, 1).T


def relative_error(got, expected) -> float:
    got, expected = np.asarray(got), np.asarray(expected)
    return float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-300))


# A spatial tree closed by a loop joint between bodies b3 and b6 (tests of kronjax.constrained)
SPATIAL_CLOSURE_SPEC = [("R", -1), ("R", 0), ("P", 1), ("R", 2), ("R", -1), ("R", 4), ("R", 5)]
SPATIAL_CLOSURE_BODIES = (3, 6)


def spatial_joints(frame=None) -> tuple[list, list]:
    """Two branches from the base, R-R-P-R (bodies b0-b3) and R-R-R (b4-b6), random axes,
    placements and full inertias; with ``frame=(R, p)`` a massless fixed body ``b6_frame`` on b6."""
    rng = np.random.default_rng(3)
    joints, inertials = [], []
    for i, (kind, parent) in enumerate(SPATIAL_CLOSURE_SPEC):
        axis = rng.normal(size=3)
        offset = np.array([0.8, 0.0, 0.0]) if i == 4 else 0.0
        joints.append(
            kj.Joint(
                kind=kind,
                parent=parent,
                axis=axis / np.linalg.norm(axis),
                rotation=random_rotation(rng),
                translation=rng.uniform(-0.4, 0.4, 3) + offset,
                body_name=f"b{i}",
            )
        )
        inertials.append(kj.Inertial(mass=rng.uniform(0.5, 3.0), com=rng.uniform(-0.15, 0.15, 3), inertia=random_inertia(rng)))
    if frame is not None:
        joints.append(
            kj.Joint(kind="F", parent=SPATIAL_CLOSURE_BODIES[1], rotation=frame[0], translation=frame[1], body_name="b6_frame")
        )
        inertials.append(kj.Inertial(mass=0.0))
    return joints, inertials


def momentum_and_energy(model: kj.Model):
    """``(q, v) -> (linear, angular, energy)``: momentum summed over the bodies' centres of mass
    from their Jacobians (angular about the base origin, base axes), and ``T = v^T M v / 2``."""
    import jax.numpy as jnp

    ine = model.inertials

    def fn(q, v):
        (jt, _), (_, jr) = kj.jacobians(model, q, points="com"), kj.jacobians(model, q, frame="body")
        rotations, origins = kj.forward_kinematics(model, q)
        centres = origins + jnp.einsum("bij,bj->bi", rotations, ine.com)
        velocity, spin = jt @ v, jr @ v
        linear = jnp.einsum("b,bi->i", ine.mass, velocity)
        angular = jnp.sum(ine.mass[:, None] * jnp.cross(centres, velocity), 0) + jnp.einsum(
            "bij,bjk,bk->i", rotations, ine.inertia, spin
        )
        return linear, angular, 0.5 * v @ kj.mass_matrix(model, q) @ v

    return fn
