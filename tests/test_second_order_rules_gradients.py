"""First derivatives through the rules of ``kj.inverse_dynamics`` and ``kj.forward_dynamics`` that
the second-order ones build on, and derivatives with respect to the model's parameters of a
Hessian (issue 41, item 4): ``jax.grad`` of the loss of :mod:`test_second_order_rules` against the
plain recursions', and identification through a second-order quantity. A file of its own so that
the test workers share the second-order tests (``--dist loadfile`` runs a file on one worker).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import random_tree, relative_error
from test_second_order_rules import MODELS, SLOW, loss, states

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)


@pytest.mark.parametrize(
    "name", [pytest.param("every_joint_kind", marks=SLOW), "spherical_root", pytest.param("floating_mimic", marks=SLOW)]
)
def test_gradients(name):
    """``jax.grad`` of the loss, whose rule is the gradient of ``λ^T y`` written without the
    matrices ``dy/d(q, v)`` (:func:`~kronjax.dynamics._rnea_derivatives.rnea_cotangent`,
    :func:`~kronjax.dynamics._aba_derivatives.aba_cotangent`), against the plain recursions', to
    1e-12 (forward dynamics 1e-11: its solve with ``M``, whose condition number is about 10^4
    here, scales the rounding of either path): on trees with every joint kind, a spherical root
    and a mimic joint (whose forward dynamics is not the articulated-body algorithm's rule but a
    Cholesky factorisation of ``M``)."""
    model = MODELS[name]()
    x, q, lam = states(model)
    for which in ("inverse", "forward"):
        f = functools.partial(loss, model=model, which=which)
        got, expected = (jax.jit(jax.vmap(jax.grad(functools.partial(f, plain=p))))(x, q, lam) for p in (False, True))
        assert relative_error(got, expected) <= (1e-12 if which == "inverse" else 1e-11), which


def tangent_parts(model, gradient) -> list[np.ndarray]:
    """A gradient with respect to the model's parameters, as the parts that a change of a valid
    model can see: masses, centres of mass, translations, gravity, rotor inertias as they are,
    the inertia tensors symmetrised, the joint axes and fixed rotations projected on the tangent
    spaces of the unit sphere and of SO(3) (the recursions read ``R^T`` as ``R^-1`` and unit
    axes, so their gradients off those manifolds differ from the plain recursion's)."""
    k, g = model.kinematics, gradient.kinematics
    axes = np.asarray(k.axes)
    axis_g = np.asarray(g.axes) - np.sum(np.asarray(g.axes) * axes, -1, keepdims=True) * axes
    skew = []
    for r, gr in ((k.pre_rotation, g.pre_rotation), (k.post_rotation, g.post_rotation)):
        m = np.swapaxes(np.asarray(r), -1, -2) @ np.asarray(gr)
        skew.append(m - np.swapaxes(m, -1, -2))
    inertia = np.asarray(gradient.inertials.inertia)
    plain = [gradient.inertials.mass, gradient.inertials.com, g.pre_translation, g.post_translation, gradient.gravity]
    return [np.asarray(p) for p in (*plain, gradient.armature)] + [inertia + np.swapaxes(inertia, -1, -2), axis_g, *skew]


@pytest.mark.parametrize("which", [pytest.param("inverse", marks=SLOW), pytest.param("forward", marks=SLOW)])
def test_model_parameter_gradients_of_a_hessian(which):
    """The gradient with respect to the model's parameters of a function of ``jax.hessian`` of
    the loss (identification through a second-order quantity), against the plain recursions', to
    1e-10 of each part's largest entry (:func:`tangent_parts`), on a three-joint arm with random
    placements, axes and full inertias."""
    model = random_tree([("R", -1), ("R", 0), ("R", 1)], seed=3)
    x, q, lam = states(model, 1)
    weights = jnp.asarray(np.random.default_rng(2).normal(size=(3 * model.nv,) * 2))

    def curvature(model, plain):
        return jnp.sum(weights * jax.hessian(loss)(x[0], q[0], lam[0], model, which, plain))

    ours, plain = (tangent_parts(model, jax.jit(jax.grad(curvature), static_argnums=1)(model, p)) for p in (False, True))
    for got, expected in zip(ours, plain):
        assert relative_error(got, expected) <= 1e-10
