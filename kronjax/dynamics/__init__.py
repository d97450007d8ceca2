"""Dynamics in Khang's layout: Tuan et al. 2019 (sec. 4, eqs. 92-101), Truc et al. 2019 (sec. 3-4,
eqs. 16-55) and Parsa (sec. 3, eqs. 12-38).

The equations of motion are (Tuan 100, Truc 29/44, Parsa 38)::

    M(q) vd + C*(q) (v ⊗ v) + g(q) = tau + f_ext
    M(q) vd + C(q, v) v      + g(q) = tau + f_ext

Every function here is pure in ``(model, q, ...)`` for one configuration; batch with ``jax.vmap``.
All work under ``jax.jit`` / ``jax.vmap`` / ``jax.grad``, in float32 and float64, and are
differentiable with respect to the model's parameters (masses, centres of mass, inertias,
gravity, joint placements are pytree leaves of the :class:`~kronjax.chain.Model`).

Layouts (``n`` = number of joint coordinates):

* ``M`` is ``n x n``; ``dM/dq`` and ``C*`` are ``n x n^2`` in Khang's layout: entry
  ``(i, j n + k) = d M[i, j] / d q_k`` (Tuan definition 2, eq. 5);
* ``C`` is ``n x n``; ``g``, ``tau`` and generalized forces are ``(n,)``.

Two routes to inverse dynamics exist and agree:

* the papers' way, ``method="kron"``: ``M vd + C* (v ⊗ v) + g`` with ``M`` from the bodies'
  Jacobians (95), ``dM/dq`` from their Hessians by Khang's product rule (9), and ``C*`` from (101);
  it forms the ``n x n^2`` tensor ``C*``;
* the fast ways, which never form an ``n x n^2`` tensor: ``method="rnea"``, a recursive
  Newton-Euler algorithm (spatial vectors in body coordinates) for :class:`~kronjax.chain.Tree`
  models, and ``method="euler_lagrange"``, the Euler-Lagrange equations (Truc 16) evaluated with
  forward-over-reverse automatic differentiation of ``L = T - P``, which works for any model,
  including :func:`~kronjax.chain.from_function` models. ``method="auto"`` (the default) picks
  ``"rnea"`` for trees and ``"euler_lagrange"`` otherwise.

Modules: ``_bodies`` (per-body quantities), ``_terms`` (``M``, ``dM/dq``, ``C*``, ``C``, ``g``,
energies), ``_wrenches``, ``_inverse``, ``_forward``, ``_second_order``, ``_rules`` (the JAX derivative rules of the
tree recursions).
"""

from __future__ import annotations

from ._forward import forward_dynamics, forward_dynamics_derivatives
from ._inverse import INVERSE_DYNAMICS_METHODS, inverse_dynamics, inverse_dynamics_derivatives
from ._second_order import (
    ForwardDynamicsSecondDerivatives,
    InverseDynamicsSecondDerivatives,
    forward_dynamics_hessian,
    forward_dynamics_second_derivatives,
    inverse_dynamics_hessian,
    inverse_dynamics_second_derivatives,
)
from ._terms import (
    CORIOLIS_FORMS,
    MATRIX_METHODS,
    coriolis_matrix,
    coriolis_star,
    gravity,
    kinetic_energy,
    mass_matrix,
    mass_matrix_derivative,
    potential_energy,
)
from ._wrenches import Wrench, generalized_forces

__all__ = [
    "CORIOLIS_FORMS",
    "MATRIX_METHODS",
    "INVERSE_DYNAMICS_METHODS",
    "Wrench",
    "mass_matrix",
    "mass_matrix_derivative",
    "coriolis_star",
    "coriolis_matrix",
    "gravity",
    "kinetic_energy",
    "potential_energy",
    "generalized_forces",
    "inverse_dynamics",
    "forward_dynamics",
    "inverse_dynamics_derivatives",
    "forward_dynamics_derivatives",
    "InverseDynamicsSecondDerivatives",
    "inverse_dynamics_second_derivatives",
    "inverse_dynamics_hessian",
    "ForwardDynamicsSecondDerivatives",
    "forward_dynamics_second_derivatives",
    "forward_dynamics_hessian",
]
