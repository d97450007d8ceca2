"""Trajectory optimisation: B-spline joint trajectories, costs, joint limits, second-order solver.

The transcription (a direct method, "differentiate the inverse dynamics"):

* **Trajectory.** Each joint coordinate is a clamped uniform B-spline of degree ``p`` (default 5)
  with ``m`` control points in normalised time ``s = t / T`` on ``[0, 1]`` (:class:`BSpline`)::

      q(t) = sum_i N_{i,p}(t / T) c_i,        q^(j)(t) = T^-j d^j/ds^j q

  where ``N_{i,p}`` are the Cox-de Boor basis functions. Derivatives are splines of lower
  degree with differenced control points (de Boor), so ``q``, ``v``, ``vd``, ``vdd`` are exact.
* **Boundary conditions.** ``q``, ``v`` and ``vd`` at ``t = 0`` and ``t = T``
  (:class:`BoundaryConditions`). At a clamped end the ``j``-th derivative depends only on the
  ``j + 1`` control points nearest that end, with a non-zero coefficient on the ``j``-th: the
  conditions fix those control points by substitution, and the remaining ones are the free
  decision variables ``z``. Every trajectory the optimiser can produce meets the boundary
  conditions exactly (``q`` to the last bit, derivatives to round-off); they are not constraints.
* **Dynamics.** ``tau(t_k) = M vd + C* (v ⊗ v) + g`` (Tuan 100) at ``K`` sample times by
  :func:`kronjax.inverse_dynamics` (default ``method="rnea"``, the fast method: no ``n x n^2``
  tensor); gradients flow through it.
* **Costs** (:class:`TorqueEffort`, :class:`Energy`, :class:`Smoothness`, :class:`TimeWeighted`,
  :class:`TaskTarget`, and sums ``w1 * a + w2 * b``): integrals by Gauss-Lobatto quadrature on
  every knot span (``r`` nodes per span, the span's ends included, exact for polynomials of degree
  ``2 r - 3``: with the default ``r = 6``, exact for the squared jerk or acceleration of a quintic
  spline).
* **Constraints** from the model's :class:`~kronjax.chain.JointLimits` (URDF ``<limit>``) at the
  samples (the quadrature nodes and further equally spaced points), relative to the limit:
  ``(q - upper) / range``, ``(lower - q) / range``, ``(|v| - velocity) / velocity``,
  ``(|tau| - effort) / effort``, all ``<= 0`` (unlimited entries are constant ``-1`` rows). Between the samples
  a limit that is active over an interval can be exceeded by a fraction of a percent: ``margin``
  imposes the limits that much inside.
* **Further constraints** (``constraints=(...)``): :class:`AvoidSpheres` (body points outside
  spheres at every sample), :class:`TaskConstraint` (a body point at a position, an equality), or
  any :class:`AbstractConstraint`.
* **Minimum time**: ``free_time=FreeTime(lower, upper)`` makes the duration a decision variable
  (the boundary conditions' ``duration`` is its initial guess); the cost :class:`Duration` is
  ``T``.
* **Solvers.** :class:`InteriorPoint` (the default): a primal-dual interior-point method with
  Gauss-Newton Hessians of the Lagrangian (the inverse dynamics linearised at the samples, their
  own curvature by partitioned quasi-Newton updates; or exact Hessians by forward-over-reverse
  differentiation, ``hessian="exact"``), a dense Newton step, and a filter line search (Nocedal and Wright, *Numerical Optimization*, ch. 19): tens
  of iterations. :class:`AugmentedLagrangian`: the Powell-Hestenes-Rockafellar augmented
  Lagrangian (N&W sec. 17.4) with L-BFGS or any optax optimiser: thousands of cheaper ones. Both
  run many initial guesses at once (the best feasible one is returned), in one compiled
  function per problem structure, and warm-start from an earlier :class:`Result`.

* **Contacts** (legged robots): :class:`ContactSchedule` of :class:`Contact` s (phases of traced
  durations, each with its active contacts), and :func:`validate`, which simulates a :class:`Plan`
  of any planner along its schedule (the contacts held by Lagrange multipliers, plastic impacts at
  touchdown) and reports how far it strays and where its forces leave the friction cone
  (:class:`Validation`); and :func:`optimize_on_contacts`, which plans along a schedule: direct
  multiple shooting on the contact dynamics (the base on SE(3), the forces Lagrange multipliers,
  friction pyramids for point feet and contact wrench cones for flat ones, effort and joint
  limits, the feet and soles on or above the ground), solved by the
  interior point with a Riccati step over the nodes (:class:`ContactCost`,
  :class:`ContactResult`, :class:`ContactReport`). The spline transcription above plans for robots
  whose joints are one-DoF and that touch nothing, and for closed chains.
* **Closed chains.** A :class:`~kronjax.constrained.Mechanism` with ``actuated=(...)`` joints
  (:func:`transcribe`): the spline moves the actuated coordinates; at every sample the closure
  places the others (:func:`kronjax.constrained.partition`, Newton's method differentiated by the
  implicit function theorem) and the actuated torques ``B^T Q`` balance the tree's inverse
  dynamics ``Q`` with the closure forces ``A_d^-T Q_d``. The Gauss-Newton model linearises the
  whole sample in the actuated coordinates.

Modules: ``_spline`` (B-splines), ``_costs``, ``_constraints``, ``_boundary`` (boundary conditions,
:class:`FreeTime`), ``_problem`` (:class:`Problem`), ``_transcription`` (:func:`transcribe`),
``_interior_point`` (:class:`InteriorPoint` and its solve; one iteration in ``_iteration``, the
problem in its variables and the Gauss-Newton model in ``_linearisation``), ``_augmented_lagrangian``,
``_optimize`` (:func:`optimize`), ``_closed_chain`` (a closed chain's samples), ``_contacts`` (:class:`Contact`, :class:`ContactSchedule`),
``_contact_dynamics`` (the dynamics on a schedule's contacts, masked, and their derivatives by
the KKT route), ``_validate`` (:func:`validate`), ``_legged`` (:func:`optimize_on_contacts`: its checks and compiled
solve), ``_legged_transcription`` (its multiple-shooting transcription, :class:`ContactCost`) and ``_riccati`` (its solver: the interior point with a Riccati
step).

Entry points: :func:`optimize` (model, boundary conditions, cost -> :class:`Result` with the
optimised trajectory and a :class:`SolverReport`), and :func:`transcribe` (the :class:`Problem`:
objective and constraints as functions of ``z``, for other solvers).
"""

from __future__ import annotations

from ._augmented_lagrangian import AugmentedLagrangian, AugmentedLagrangianState
from ._boundary import BoundaryConditions, FreeTime
from ._constraints import AbstractConstraint, AvoidSpheres, TaskConstraint
from ._contacts import Contact, ContactSchedule
from ._costs import (
    AbstractCost,
    AbstractRunningCost,
    CostSum,
    Duration,
    Energy,
    Samples,
    Smoothness,
    TaskPoint,
    TaskTarget,
    TimeWeighted,
    TorqueEffort,
)
from ._interior_point import InteriorPoint, InteriorPointState
from ._legged import ContactReport, ContactResult, optimize_on_contacts
from ._legged_transcription import ContactCost
from ._optimize import NotConvergedWarning, Result, optimize, print_progress
from ._problem import Problem
from ._solver import Progress, SolverReport
from ._spline import BSpline
from ._transcription import transcribe
from ._validate import Plan, Validation, validate

__all__ = [
    "BSpline",
    "BoundaryConditions",
    "Samples",
    "AbstractCost",
    "AbstractRunningCost",
    "TorqueEffort",
    "Energy",
    "Smoothness",
    "TimeWeighted",
    "TaskPoint",
    "TaskTarget",
    "Duration",
    "CostSum",
    "AbstractConstraint",
    "AvoidSpheres",
    "TaskConstraint",
    "FreeTime",
    "Problem",
    "transcribe",
    "InteriorPoint",
    "InteriorPointState",
    "AugmentedLagrangian",
    "AugmentedLagrangianState",
    "Progress",
    "SolverReport",
    "Result",
    "NotConvergedWarning",
    "optimize",
    "print_progress",
    "Contact",
    "ContactSchedule",
    "Plan",
    "Validation",
    "validate",
    "ContactCost",
    "ContactReport",
    "ContactResult",
    "optimize_on_contacts",
]
