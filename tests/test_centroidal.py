"""Centroidal quantities (:mod:`kronjax.centroidal`) against Pinocchio and first principles.

Oracles: Pinocchio 4.1's ``centerOfMass``, ``jacobianCenterOfMass``, ``ccrba`` (``A_g`` and
``hg``) and ``dccrba`` on the Romeo humanoid and the Solo-12 quadruped with a free-flyer root
(``buildModelFromUrdf(path, JointModelFreeFlyer())``) and on the fixed-base Panda (whose base
link, merged into the universe, counts in neither library); first principles: in zero gravity with
no force on the base the centroidal momentum is constant along the forward dynamics, and the
centre of mass depends on the masses as ``dc/dm_b = (p_b - c) / m``.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pytest
from checks import TOL
from oracles import jit_once, random_inertia, random_rotation, relative_error

import kronjax as kj
from kronjax.centroidal import (
    center_of_mass,
    center_of_mass_jacobian,
    centroidal_momentum,
    centroidal_momentum_matrix,
    centroidal_momentum_matrix_dot,
)

DATA = Path(__file__).parent / "data"
STATES = 10
ROBOTS = {"humanoid": True, "quadruped": True, "panda": False}


class Twin:
    """A kronjax model, its Pinocchio twin and the maps between their coordinates, by joint name
    (Pinocchio's URDF parser orders sibling joints by name, kronjax by file order)."""

    def __init__(self, name: str):
        path, floating = str(DATA / f"{name}.urdf"), ROBOTS[name]
        self.model = kj.load_urdf(path, floating_base=floating)
        self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        pm = self.pm
        moving = [name for name, kind in zip(self.model.joint_names, self.model.kinematics.kinds) if kind != "F"]
        ids = [pm.getJointId(name) for name in moving]
        self.q_perm = np.concatenate([np.arange(pm.idx_qs[j], pm.idx_qs[j] + pm.nqs[j]) for j in ids])
        self.v_perm = np.concatenate([np.arange(pm.idx_vs[j], pm.idx_vs[j] + pm.nvs[j]) for j in ids])

    def states(self, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Pinocchio's random configurations (free-flyer translations in [-1, 1]) and random v."""
        pin.seed(seed)
        bound = np.ones(self.pm.nq)
        qs = np.stack([pin.randomConfiguration(self.pm, -bound, bound) for _ in range(count)])
        return qs, np.random.default_rng(seed).normal(size=(count, self.pm.nv))


def _ours(model: kj.Model):
    def values(q, v):
        return dict(
            com=center_of_mass(model, q),
            J_com=center_of_mass_jacobian(model, q),
            A_g=centroidal_momentum_matrix(model, q),
            h_G=centroidal_momentum(model, q, v),
            dA_g=centroidal_momentum_matrix_dot(model, q, v),
        )

    return jit_once(jax.vmap(values))


def _pinocchio(twin: Twin, q, v) -> dict:
    pm, pd, cols = twin.pm, twin.pd, twin.v_perm
    com = pin.centerOfMass(pm, pd, q).copy()
    J_com = pin.jacobianCenterOfMass(pm, pd, q)[:, cols]
    A_g = pin.ccrba(pm, pd, q, v)[:, cols]
    h_G = pd.hg.vector.copy()
    dA_g = pin.dccrba(pm, pd, q, v)[:, cols]
    return dict(com=com, J_com=J_com, A_g=A_g, h_G=h_G, dA_g=dA_g)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.slow] + [pytest.mark.extended] * (name == "quadruped")) if ROBOTS[name] else name
        for name in ROBOTS
    ],
)
def test_against_pinocchio(name):
    twin = Twin(name)
    qs, vs = twin.states(STATES)
    ours = _ours(twin.model)(jnp.asarray(qs[:, twin.q_perm]), jnp.asarray(vs[:, twin.v_perm]))
    for k in range(STATES):
        expected = _pinocchio(twin, qs[k], vs[k])
        for key, value in expected.items():
            err = relative_error(ours[key][k], value)
            assert err <= TOL, f"{name}, state {k}: {key} relative error {err:.2e}"


def test_pinocchio_leaves_out_the_fixed_base_link():
    """The Panda's base link (panda_link0) has mass in the URDF; both libraries leave it out of
    the system's mass (kronjax merges it into the base, Pinocchio into the universe and skips it)."""
    twin = Twin("panda")
    assert twin.pm.inertias[0].mass > 0
    pin.centerOfMass(twin.pm, twin.pd, pin.neutral(twin.pm))
    assert abs(float(np.sum(twin.model.inertials.mass)) - twin.pd.mass[0]) < 1e-12 * twin.pd.mass[0]


def _floating_tree() -> kj.Model:
    """A free-flyer root carrying a revolute-spherical branch and a prismatic-planar branch, random
    placements, axes and full inertias, no gravity (small, so that it compiles fast)."""
    rng = np.random.default_rng(7)
    joints, inertials = [], []
    for i, (kind, parent) in enumerate([("free", -1), ("R", 0), ("spherical", 1), ("P", 0), ("planar", 3)]):
        axis = rng.normal(size=3)
        joints.append(
            kj.Joint(
                kind=kind,
                parent=parent,
                axis=axis / np.linalg.norm(axis),
                rotation=random_rotation(rng),
                translation=rng.normal(size=3) * 0.3,
                name=f"j{i}",
                body_name=f"b{i}",
            )
        )
        inertials.append(kj.Inertial(rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, random_inertia(rng)))
    return kj.from_joints(joints, inertials, gravity=(0.0, 0.0, 0.0))


@pytest.mark.slow  # a 5 s simulation: run-bound (26 s)
def test_free_floating_momentum_is_conserved():
    """Zero gravity, no force on the base (``tau[:6] = 0``), any joint torques: ``h_G`` (the
    derivative of ``A_g(q(t)) v(t)``) is constant along the forward dynamics, and the centre of
    mass moves with the velocity ``h_lin / m = J_com v``."""
    model = _floating_tree()
    mass = float(np.sum(model.inertials.mass))

    @jit_once
    def rates(q, v, tau):
        q = kj.normalize(model, q)  # random numbers to a configuration (unit quaternions)
        a = kj.forward_dynamics(model, q, v, tau)
        state = lambda t: (kj.integrate(model, q, t * v), v + t * a)  # noqa: E731
        h, dh = jax.jvp(lambda t: centroidal_momentum(model, *state(t)), (0.0,), (1.0,))
        return h, dh, center_of_mass_jacobian(model, q) @ v

    rng = np.random.default_rng(5)
    for _ in range(3):
        q = rng.uniform(-1, 1, model.nq)
        v, tau = rng.normal(size=(2, model.nv))
        tau[:6] = 0.0
        h, dh, c_dot = rates(q, v, tau)
        scale = 1 + float(np.max(np.abs(h)))
        assert np.max(np.abs(dh)) < 1e-10 * scale
        assert np.max(np.abs(h[:3] / mass - c_dot)) < 1e-12 * scale


def test_gradient_with_respect_to_the_masses():
    """``dc/dm_b = (p_b - c) / m``: differentiable in the model's parameters (masses traced)."""
    model = kj.load_urdf(DATA / "ur5.urdf")
    q = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, model.nq))

    def com(mass):
        return center_of_mass(eqx.tree_at(lambda m: m.inertials.mass, model, mass), q)

    mass = model.inertials.mass
    grad = jit_once(jax.jacrev(com))(mass)
    rotations, origins = kj.forward_kinematics(model, q)
    centres = origins + jnp.einsum("bij,bj->bi", rotations, model.inertials.com)
    expected = (centres - center_of_mass(model, q)).T / jnp.sum(mass)
    assert relative_error(grad, expected) < 1e-12


def test_bad_inputs():
    model = kj.load_urdf(DATA / "quadruped.urdf", floating_base=True)
    with pytest.raises(ValueError, match="no inertials"):
        center_of_mass(eqx.tree_at(lambda m: m.inertials, model, None), jnp.zeros(model.nq))
    massless = eqx.tree_at(
        lambda m: (m.inertials.mass, m.inertials.inertia),
        model,
        (jnp.zeros(model.n_bodies), jnp.zeros((model.n_bodies, 3, 3))),
    )
    with pytest.raises(ValueError, match="total mass is zero"):
        centroidal_momentum_matrix(massless, kj.neutral(model))
    with pytest.raises(ValueError, match=r"q must have shape \(19,\)"):
        center_of_mass_jacobian(model, jnp.zeros(model.nv))
    with pytest.raises(ValueError, match=r"v must have shape \(18,\)"):
        centroidal_momentum(model, kj.neutral(model), jnp.zeros(model.nq))
