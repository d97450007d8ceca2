"""Rotor inertias (``Model.armature``): builder checks, and first principles on a small tree.

The oracles for the dynamics with armature are elsewhere: Pinocchio's ``model.armature``
(test_pinocchio_dynamics.py's tree7, test_dynamics_derivatives.py's fixed-joint tree,
test_floating_base.py's mixed tree) and MuJoCo's (test_mjcf.py's floating file). Here: the
kinetic energy, and gradients with respect to the armature through the derivative rules of
inverse and forward dynamics against central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, random_tree

import kronjax as kj

SPEC = [dict(kind="R", parent=-1, armature=0.4), dict(kind="P", parent=0, armature=1.5), ("F", 1), ("R", 0)]


def _with(model, armature):
    return kj.chain.Model(**{**vars(model), "armature": armature})


def test_builders_check_armature_and_energy():
    model = random_tree(SPEC, seed=2)
    np.testing.assert_array_equal(model.armature, [0.4, 1.5, 0.0])
    with pytest.raises(ValueError, match="armature must be nonnegative"):
        random_tree([dict(kind="R", parent=-1, armature=-0.1)], seed=2)
    with pytest.raises(ValueError, match="fixed or mimic joint has no coordinate to take armature"):
        random_tree([("R", -1), dict(kind="F", parent=0, armature=0.1)], seed=2)
    with pytest.raises(ValueError, match=r"armature must be a scalar or have shape \(2,\)"):
        kj.from_dh([("R", 0, 0, 1, 0), ("R", 0, 0, 1, 0)], armature=[1.0, 2.0, 3.0])
    np.testing.assert_array_equal(kj.from_dh([("R", 0, 0, 1, 0), ("R", 0, 0, 1, 0)], armature=0.5).armature, [0.5, 0.5])
    with pytest.warns(UserWarning, match="armature is left out"):
        kj.to_urdf(model)
    q, v = np.random.default_rng(5).normal(size=(2, 3))
    bare = _with(model, None)  # a directly built Model without rotor inertias
    energies = jit_once(lambda q, v: [kj.kinetic_energy(m, q, v) - 0.5 * v @ kj.mass_matrix(m, q) @ v for m in (model, bare)]
                        + [kj.kinetic_energy(model, q, v) - kj.kinetic_energy(bare, q, v)])(q, v)
    np.testing.assert_allclose(energies, [0, 0, 0.5 * (0.4 * v[0] ** 2 + 1.5 * v[1] ** 2)], rtol=1e-12, atol=1e-12)


@pytest.mark.slow  # ~15 s of compile: the derivative rules with a model tangent
def test_gradients_with_respect_to_armature():
    """d/dA of losses through ``inverse_dynamics`` (reverse mode) and ``forward_dynamics``
    (forward mode), whose JAX derivative rules are the analytical derivatives, equal central
    differences."""
    model = random_tree(SPEC[:2], seed=2)
    q, v, a, tau = np.random.default_rng(5).normal(size=(4, 2))

    @jit_once
    def losses_and_gradients(armature):
        id_loss = lambda x: jnp.sum(kj.inverse_dynamics(_with(model, x), q, v, a) ** 2)  # noqa: E731
        fd_loss = lambda x: jnp.sum(kj.forward_dynamics(_with(model, x), q, v, tau) ** 2)  # noqa: E731
        return jnp.stack([id_loss(armature), fd_loss(armature)]), jnp.stack([jax.grad(id_loss)(armature), jax.jacfwd(fd_loss)(armature)])

    _, gradients = losses_and_gradients(model.armature)
    eps = 1e-6
    central = np.stack(
        [(losses_and_gradients(model.armature + s)[0] - losses_and_gradients(model.armature - s)[0]) / (2 * eps) for s in np.eye(2) * eps],
        axis=1,
    )
    np.testing.assert_allclose(gradients, central, rtol=1e-6, atol=1e-7)  # central differences: ~1e-10 of the losses (~100)
    assert np.all(np.abs(central) > 1e-3)  # every armature matters to both losses
