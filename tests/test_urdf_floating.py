"""``to_urdf`` of models with free and planar joints (issue 15): a free joint is written as a URDF
``floating`` joint, a planar one as ``planar`` (axis z), below a massless ``world`` link when a root
joint is one of them; a spherical joint, which URDF cannot express, is refused.

Round trips: the quadruped loaded with ``floating_base=True``, written and read back with
``floating_base=False``, has the same ``nq``, ``nv``, coordinate order, limits and parameters, and
the same mass matrix and inverse dynamics at random states (1e-12 relative): Pinocchio's of the
two models' twins (:func:`oracles.to_pinocchio`), of Pinocchio's reading of the written file and
of its free-flyer reading of the original; kronjax's own in the slow tier (its compile for the
quadruped takes 6 s). A tree with a planar root and a free joint inside it comes back with the
same joints, limits and dynamics (the twins and Pinocchio's reading of the written file).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pinocchio as pin
import pytest
from checks import EXACT_TOL
from oracles import jit_once, random_tree, relative_error, symmetric_from_upper, to_pinocchio

import kronjax as kj

DATA = Path(__file__).parent / "data"
STATES = 3
LIMITS = ("lower", "upper", "velocity", "effort")


def _joint_types(text: str) -> dict[str, ET.Element]:
    """The written <joint> elements by name."""
    return {j.get("name"): j for j in ET.fromstring(text.split("?>", 1)[1]).findall("joint")}


def _states(model: kj.Model, seed: int = 0):
    """``STATES`` random ``(q, v, a)`` (unit quaternions and (cos, sin) pairs)."""
    rng = np.random.default_rng(seed)
    for _ in range(STATES):
        yield np.asarray(kj.normalize(model, rng.normal(size=model.nq))), *rng.normal(size=(2, model.nv))


@jit_once  # unbatched: compiles in about two thirds of the time of its vmap
def _dynamics(model, q, v, a):
    return kj.mass_matrix(model, q), kj.inverse_dynamics(model, q, v, a)


def _same_coordinates(back: kj.Model, model: kj.Model) -> None:
    assert (back.nq, back.nv) == (model.nq, model.nv)
    assert back.joint_names == model.joint_names and back.body_names == model.body_names
    assert back.kinematics.kinds == model.kinematics.kinds and back.coordinate_names == model.coordinate_names
    assert back.kinematics.q_index == model.kinematics.q_index and back.kinematics.v_index == model.kinematics.v_index
    for key in LIMITS:
        np.testing.assert_array_equal(getattr(back.limits, key), getattr(model.limits, key))


def _same_dynamics(pms: list, model: kj.Model, seed: int) -> None:
    """Pinocchio's ``M`` and ``rnea`` of each model of ``pms`` at random states, equal to the
    first's (coordinates in the same order)."""
    for q, v, a in _states(model, seed):
        values = []
        for pm in pms:
            pd = pm.createData()
            values.append((symmetric_from_upper(pin.crba(pm, pd, q)), pin.rnea(pm, pd, q, v, a).copy()))
        for other in values[1:]:
            for got, expected in zip(other, values[0], strict=True):
                assert relative_error(got, expected) < EXACT_TOL


def _quadruped():
    path = DATA / "quadruped.urdf"
    model = kj.load_urdf(path, floating_base=True)
    text = kj.to_urdf(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing read as a degenerate limit
        back = kj.load_urdf(text, gravity=model.gravity)
    return path, model, text, back


def test_floating_quadruped_round_trips():
    path, model, text, back = _quadruped()
    joints = _joint_types(text)
    assert joints["root_joint"].get("type") == "floating" and joints["root_joint"].find("parent").get("link") == "world"
    assert joints["root_joint"].find("axis") is None and joints["root_joint"].find("limit") is None  # unlimited
    _same_coordinates(back, model)
    assert back.nq == 19 and back.nv == 18 and back.kinematics.kinds[0] == "free"
    # the same parameters, so the same kronjax dynamics (compiled in the slow tier below)
    assert jax.tree.structure(back) == jax.tree.structure(model)
    for got, expected in zip(jax.tree.leaves(back), jax.tree.leaves(model), strict=True):
        assert np.array_equal(np.isinf(got), np.isinf(expected))
        assert relative_error(np.where(np.isinf(got), 0, got), np.where(np.isinf(expected), 0, expected)) < EXACT_TOL
    # M and rnea of both models' Pinocchio twins, and of Pinocchio's readings of the written file
    # (its floating joint) and of the original (with its own free-flyer)
    written, original = pin.buildModelFromXML(text), pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    assert list(written.names) == ["universe", *model.joint_names] == list(original.names)
    for pm in (written, original):
        pm.gravity.linear = np.asarray(model.gravity, float)
    _same_dynamics([to_pinocchio(model), to_pinocchio(back), written, original], model, seed=0)


@pytest.mark.slow
def test_floating_quadruped_round_trip_has_the_same_kronjax_dynamics():
    _, model, _, back = _quadruped()
    for state in _states(model):
        for got, expected in zip(_dynamics(back, *state), _dynamics(model, *state), strict=True):
            assert relative_error(got, expected) < EXACT_TOL


def planar_tree() -> kj.Model:
    """A planar root, a revolute joint, a free joint inside the tree, then a prismatic one; random
    placements and inertias; limits on all but the planar joint."""
    return random_tree(
        [
            dict(kind="planar", parent=-1, velocity=2.0),
            dict(kind="R", parent=0, lower=-1.0, upper=1.5, effort=20.0),
            dict(kind="free", parent=1, velocity=3.0, effort=40.0),
            dict(kind="P", parent=2, lower=-0.2, upper=0.3, velocity=0.5, effort=100.0),
        ],
        seed=7,
        gravity=(0.3, -0.2, -9.81),
    )


def test_planar_root_and_inner_free_joint_round_trip():
    model = planar_tree()
    text = kj.to_urdf(model)
    joints = _joint_types(text)
    assert [joints[f"j{i}"].get("type") for i in range(4)] == ["planar", "revolute", "floating", "prismatic"]
    assert joints["j0"].find("axis").get("xyz") == "0.0 0.0 1.0" and joints["j0"].find("parent").get("link") == "world"
    assert joints["j2"].find("limit").attrib == {"effort": "40.0", "velocity": "3.0"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = kj.load_urdf(text, gravity=model.gravity)
    _same_coordinates(back, model)
    assert (back.nq, back.nv) == (13, 11)
    # the dynamics of both models, and Pinocchio's reading of the written file, by Pinocchio
    written = pin.buildModelFromXML(text)
    written.gravity.linear = np.asarray(model.gravity, float)
    _same_dynamics([to_pinocchio(model), to_pinocchio(back), written], model, seed=1)


def test_base_link_name_avoids_the_body_names():
    model = kj.from_joints(
        [kj.Joint("free", body_name="world"), kj.Joint("R", 0, body_name="_world")],
        [kj.Inertial(1.0, inertia=(1.0, 1.0, 1.0))] * 2,
    )
    text = kj.to_urdf(model)
    assert _joint_types(text)["joint1"].find("parent").get("link") == "__world"
    assert kj.load_urdf(text).body_names == ("world", "_world")


def test_spherical_joints_and_uneven_limits_are_refused():
    inertials = [kj.Inertial(1.0, inertia=(1.0, 1.0, 1.0))] * 2
    ball = kj.from_joints([kj.Joint("free"), kj.Joint("spherical", 0, name="shoulder")], inertials)
    with pytest.raises(ValueError, match="to_urdf: joint 'shoulder' is spherical, which URDF cannot hold"):
        kj.to_urdf(ball)
    model = kj.from_joints([kj.Joint("free", name="base", velocity=2.0), kj.Joint("R", 0)], inertials)
    uneven = eqx.tree_at(lambda m: m.limits.velocity, model, model.limits.velocity.at[4].set(3.0))
    with pytest.raises(
        ValueError, match=r"free joint 'base' has velocity limits \[2\. 2\. 2\. 2\. 3\. 2\.\].*one value per joint"
    ):
        kj.to_urdf(uneven)
