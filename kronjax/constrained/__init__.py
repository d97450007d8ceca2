"""Constrained multibody systems: closed chains and Pfaffian constraints.

A tree :class:`~kronjax.chain.Model` (a closed chain cut open at some joints) is subject to ``m``
constraint equations written in Pfaffian form (Parsa eqs. 5-6)::

    A(q) v = b(q)             with, for holonomic rows, A = Phi_q and b = 0 (Phi(q) = 0)

Differentiated once more in time, ``A vd = gamma`` with (Huang eq. 1, Khang's layout)::

    gamma = -(A v)_q v + b_q v = -Phi_qq (v ⊗ v)      (holonomic rows)

``Phi_q`` is the Khang Jacobian of the residual and ``Phi_qq`` its Khang derivative, ``m x n^2``
(:meth:`Constraints.hessian`); ``gamma`` is computed as a second directional derivative
(``jax.jvp`` of ``jax.jvp``), which equals ``-Phi_qq (v ⊗ v)`` without forming ``Phi_qq``.

Free, spherical and planar joints (:mod:`kronjax.configuration`): ``q`` has ``nq`` numbers (unit
quaternions, ``(cos, sin)`` pairs) and ``v``, ``vd``, ``tau`` have ``nv = n``. ``Phi`` is a
function of ``q``; every derivative "with respect to ``q``" is taken along the tangent space, in
the exponential chart ``delta -> q ⊕ delta`` (:func:`kronjax.integrate`): ``Phi_q`` is ``m x nv``,
``d/d delta Phi(q ⊕ delta)`` at ``delta = 0``, and ``Phi_qq`` the same derivative of ``Phi_q``.
The drift ``gamma = -d^2/ds^2 Phi(q ⊕ s v)`` at ``s = 0`` is exactly ``-(d/dt Phi_q) v``: the
curve ``s -> q ⊕ s v`` is a one-parameter subgroup, so ``d/ds Phi(q ⊕ s v) = Phi_q(q ⊕ s v) v``
for every ``s`` and the Lie-bracket term of the chart drops out of ``d/dt (Phi_q v) = Phi_q vd
+ (d/dt Phi_q) v``. Huang's expansion below is the Taylor series of ``delta -> Phi(q ⊕ delta)``;
positions are corrected and stepped with ``q ⊕ delta``.

Three solvers return the accelerations and the constraint forces (:func:`solve`):

* ``"lagrange"``: Lagrange multipliers, the KKT system
  ``[[M, A^T], [A, 0]] [vd; -lambda] = [tau - C v - g; gamma]`` (Huang eq. 1), solved through its
  Schur complement ``A M^-1 A^T`` (a Cholesky factor of ``M`` and an SVD), optionally with
  Baumgarte stabilisation. The generalized constraint force is ``A^T lambda``.
* ``"nullspace"``: Kane's equations by projection onto the admissible motions (Parsa eqs. 8-11,
  39-46): ``v = B u`` with ``A B = 0``, ``B^T (M vd + C v + g - tau) = 0``. ``B`` is an
  orthonormal null-space basis from the SVD of ``A``, or the coordinate-partitioning basis of a
  user's choice of independent coordinates (``independent=``).
* ``"huang"``: Huang et al.'s formulation over a time step ``dt`` (eqs. 2-4, appendix A): the
  reactions ``Q`` are found from the second-order Taylor expansion of the constraints over the
  step, ``Phi(q ⊕ dq(Q)) = 0`` with ``dq = v dt + M^-1 (tau - C v - g + Z^T Q) dt^2 / 2``,
  linearised in ``Q`` (the ``Q^2`` terms are ``O(dt^4)``, A8-A10)::

      Phi_Q Q = -Psi,   Phi_Q = (Phi_q + Phi_qq (E ⊗ kappa)) M^-1 Z^T dt^2 / 2,
      Psi = Phi(q) + Phi_q kappa + 1/2 Phi_qq (kappa ⊗ kappa),  kappa = v dt + M^-1 f dt^2 / 2

  ``Z = Phi_q(q)``: the reactions are the forces conjugate to the constraint rows (for
  :func:`loop_closure` rows of positions, the reaction force in the base frame), so
  ``Z^T Q`` plays the role of ``Phi_q^T lambda``. ``Phi_Q`` is solved in the least-squares sense
  (minimum norm), so a step stays defined where ``Phi_q`` loses rank (see :func:`solve`). With
  multi-DoF joints ``Phi_qq`` here is the (symmetric) second derivative of ``Phi(q ⊕ delta)`` in
  ``delta``, the Taylor coefficient of the chart.

Where ``Phi_q`` loses rank (a kinematic singularity such as the change point of a four-bar, or
redundant equations) the Lagrange and null-space systems are singular: :func:`solve` raises a
runtime error through ``equinox.error_if`` (under ``jit`` and ``vmap`` too) that names the
rank; :func:`check_state` reports it eagerly. Equinox's ``EQX_ON_ERROR=nan`` turns the error into
NaNs instead. Near such a configuration the solvers keep their digits until that threshold (the
figures are in :func:`solve`): ``rtol`` is where no reliable digit would be left.

:func:`simulate` integrates with a fixed step (a diffrax Runge-Kutta step, or Huang's Taylor
step), optionally projecting ``q`` and ``v`` back onto the constraints after each step
(:func:`project`), and reports the constraint drift.

Modules: ``_constraints`` (:class:`Constraint`, :class:`Constraints`, :class:`Mechanism`),
``_loop_closure``, ``_solve`` (the three solvers), ``_manifold`` (:func:`check_state`,
:func:`project`), ``_partition`` (:func:`partition`: independent and dependent coordinates, the
closure forces of an actuated closed chain), ``_simulate``.
"""

from __future__ import annotations

from ._constraints import Constraint, Constraints, Mechanism, holonomic, pfaffian
from ._loop_closure import LOOP_CLOSURE_KINDS, loop_closure
from ._manifold import check_state, project
from ._partition import CoordinatePartition, partition
from ._simulate import ConstrainedRollout, simulate
from ._solve import SOLVE_METHODS, HuangSystem, Solution, huang_system, solve

__all__ = [
    "Constraint",
    "Constraints",
    "Mechanism",
    "CoordinatePartition",
    "Solution",
    "HuangSystem",
    "ConstrainedRollout",
    "LOOP_CLOSURE_KINDS",
    "SOLVE_METHODS",
    "holonomic",
    "pfaffian",
    "loop_closure",
    "solve",
    "huang_system",
    "check_state",
    "project",
    "partition",
    "simulate",
]
