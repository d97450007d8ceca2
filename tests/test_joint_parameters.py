"""Joint-space parameters: rotor inertias (``Model.armature``), viscous damping and Coulomb
friction (``Model.damping``, ``Model.friction``, :mod:`kronjax.passive`).

Oracles elsewhere: Pinocchio's ``model.armature`` (test_pinocchio_dynamics.py's tree7,
test_dynamics_derivatives.py's fixed-joint tree, test_floating_base.py's mixed tree) and MuJoCo's
armature, ``qfrc_passive`` of dampers (test_mjcf.py's floating file). Here: builder checks, URDF's
``<dynamics>`` against Pinocchio's parser, the kinetic energy, the closed-form spin-down of a
rotor with armature under damping and under Coulomb friction (``simulate.rollout``), and
gradients with respect to the armature through the derivative rules against central
differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, random_tree

import kronjax as kj

SPEC = [dict(kind="R", parent=-1, armature=0.4), dict(kind="P", parent=0, armature=1.5), ("F", 1), ("R", 0)]


def _with(model, **fields):
    return kj.chain.Model(**{**vars(model), **fields})


def test_builders_check_joint_parameters_and_energy():
    model = random_tree(SPEC, seed=2)
    np.testing.assert_array_equal(model.armature, [0.4, 1.5, 0.0])
    np.testing.assert_array_equal(model.damping, [0.0, 0.0, 0.0])
    for what in ("armature", "damping", "friction"):
        with pytest.raises(ValueError, match=f"{what} must be nonnegative"):
            random_tree([{"kind": "R", "parent": -1, what: -0.1}], seed=2)
        with pytest.raises(ValueError, match=f"fixed or mimic joint has no coordinate to take {what}"):
            random_tree([("R", -1), {"kind": "F", "parent": 0, what: 0.1}], seed=2)
    with pytest.raises(ValueError, match=r"armature must be a scalar or have shape \(2,\)"):
        kj.from_dh([("R", 0, 0, 1, 0), ("R", 0, 0, 1, 0)], armature=[1.0, 2.0, 3.0])
    two = kj.from_dh([("R", 0, 0, 1, 0), ("R", 0, 0, 1, 0)], armature=0.5, damping=[1, 2], friction=3)
    np.testing.assert_array_equal(np.stack([two.armature, two.damping, two.friction]), [[0.5, 0.5], [1, 2], [3, 3]])
    with pytest.warns(UserWarning, match="armature is left out"):
        kj.to_urdf(model)
    with pytest.raises(ValueError, match="smoothing must be >= 0"):
        kj.passive_forces(two, jnp.zeros(2), jnp.zeros(2), smoothing=-1.0)
    q, v = np.random.default_rng(5).normal(size=(2, 3))
    bare = _with(model, armature=None)  # a directly built Model without rotor inertias
    energies = jit_once(
        lambda q, v: (
            [kj.kinetic_energy(m, q, v) - 0.5 * v @ kj.mass_matrix(m, q) @ v for m in (model, bare)]
            + [kj.kinetic_energy(model, q, v) - kj.kinetic_energy(bare, q, v)]
        )
    )(q, v)
    np.testing.assert_allclose(energies, [0, 0, 0.5 * (0.4 * v[0] ** 2 + 1.5 * v[1] ** 2)], rtol=1e-12, atol=1e-12)


URDF = """<robot name="r"><link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="2"/><origin xyz="0.1 0 0"/><inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="0.5"/><origin xyz="0 0.1 0"/><inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/><dynamics damping="0.7" friction="0.2"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/><dynamics friction="1.5"/></joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/><dynamics damping="0.05"/></joint>
</robot>"""


def test_urdf_dynamics_element_as_pinocchio_reads_it():
    pin = pytest.importorskip("pinocchio")
    model = kj.load_urdf(URDF)
    reference = pin.buildModelFromXML(URDF)
    np.testing.assert_array_equal(model.damping, reference.damping)
    np.testing.assert_array_equal(model.friction, reference.friction)
    np.testing.assert_array_equal(model.damping, [0.7, 0, 0.05])
    back = kj.load_urdf(kj.to_urdf(model))
    np.testing.assert_array_equal(np.stack([back.damping, back.friction]), np.stack([model.damping, model.friction]))
    with pytest.raises(kj.urdf.URDFError, match="<dynamics damping=-1.0> must not be negative"):
        kj.load_urdf(URDF.replace('damping="0.7"', 'damping="-1"'))


def test_rotor_spins_down_as_in_closed_form():
    """A rotor of axial inertia ``I`` with armature ``A``, no gravity: under damping ``d`` its rate
    is ``w0 exp(-d t / (I + A))``; under Coulomb friction ``f``, ``w0 - f t / (I + A)`` until it
    stops. ``rollout`` applies the passive forces by default and not with ``passive=False``."""
    inertia, armature, w0 = 0.3, 0.2, 4.0
    rotor = kj.from_joints(
        [kj.Joint("R", armature=armature, damping=0.6)], [kj.Inertial(2.0, inertia=(0.1, 0.1, inertia))], gravity=(0.0, 0.0, 0.0)
    )
    coulomb = _with(rotor, damping=jnp.zeros(1), friction=jnp.asarray([0.5]))
    ts = jnp.linspace(0.0, 0.8 * w0 * (inertia + armature) / 0.5, 9)  # before the Coulomb rotor stops
    spin = jit_once(
        lambda model, passive: kj.simulate.rollout(
            model, jnp.zeros(1), jnp.asarray([w0]), None, ts, rtol=1e-11, atol=1e-11, passive=passive
        ).v[:, 0],
        static_argnums=1,
    )
    total = inertia + armature
    np.testing.assert_allclose(spin(rotor, True), w0 * np.exp(-0.6 * ts / total), rtol=1e-8)
    np.testing.assert_allclose(spin(coulomb, True), w0 - 0.5 * ts / total, rtol=1e-8)
    np.testing.assert_allclose(spin(rotor, False), np.full(ts.shape, w0), rtol=1e-12)
    state = (jnp.zeros(1), jnp.asarray([w0]))
    forces = jit_once(
        lambda: (
            kj.passive_forces(coulomb, *state),
            kj.passive_forces(coulomb, *state, smoothing=w0),
            kj.inverse_dynamics(rotor, *state, kj.forward_dynamics(rotor, *state, jnp.ones(1), passive=True), passive=True),
        )
    )()
    np.testing.assert_allclose(forces[0], [-0.5], rtol=1e-15)
    np.testing.assert_allclose(forces[1], [-0.5 * np.tanh(1.0)], rtol=1e-15)
    np.testing.assert_allclose(forces[2], [1.0], rtol=1e-14)


@pytest.mark.slow  # ~15 s of compile: the derivative rules with a model tangent
def test_gradients_with_respect_to_armature():
    """d/dA of losses through ``inverse_dynamics`` (reverse mode) and ``forward_dynamics``
    (forward mode), whose JAX derivative rules are the analytical derivatives, equal central
    differences."""
    model = random_tree(SPEC[:2], seed=2)
    q, v, a, tau = np.random.default_rng(5).normal(size=(4, 2))

    @jit_once
    def losses_and_gradients(armature):
        id_loss = lambda x: jnp.sum(kj.inverse_dynamics(_with(model, armature=x), q, v, a) ** 2)  # noqa: E731
        fd_loss = lambda x: jnp.sum(kj.forward_dynamics(_with(model, armature=x), q, v, tau) ** 2)  # noqa: E731
        return jnp.stack([id_loss(armature), fd_loss(armature)]), jnp.stack(
            [jax.grad(id_loss)(armature), jax.jacfwd(fd_loss)(armature)]
        )

    _, gradients = losses_and_gradients(model.armature)
    eps = 1e-6
    central = np.stack(
        [
            (losses_and_gradients(model.armature + s)[0] - losses_and_gradients(model.armature - s)[0]) / (2 * eps)
            for s in np.eye(2) * eps
        ],
        axis=1,
    )
    np.testing.assert_allclose(gradients, central, rtol=1e-6, atol=1e-7)  # central differences: ~1e-10 of the losses (~100)
    assert np.all(np.abs(central) > 1e-3)  # every armature matters to both losses
