"""Kinematics in Khang's layout (Tuan et al. 2019, section 3).

Every function is pure in ``(model, q, ...)`` for one configuration and works under ``jax.jit``,
``jax.vmap`` and ``jax.grad``. Jacobians are ``3 x n``; Hessians are ``3 x n^2`` in Khang's layout
(entry ``(p, j n + k) = dJ[p, j]/dq_k``), so that accelerations are ``J vd + H (v ⊗ v)``.

:func:`jacobians`, :func:`hessians` and :func:`jacobians_dot` give every body's at once
(``(nb, 3, n)``, ``(nb, 3, n^2)``); the per-body functions index them. For Tree models they are
closed forms in the joint axes of one forward-kinematics pass (:mod:`kronjax.kinematics._tree`, ``O(nb n)``
and ``O(nb n^2)``, the size of the output); ``method="autodiff"`` (and every ``from_function``
model) differentiates the poses with ``jax.jacfwd`` instead. :func:`jacobians` with ``bodies=``
gives the listed bodies' only (feet, hands), and :func:`joint_jacobians` every body's in compact
form, the ``6 x n`` world-frame motions of the coordinates that Pinocchio's
``computeJointJacobians`` computes, from which a body's Jacobian is a selection of columns.

Hessians are returned in the *jacobian-of-jacobian* form of the paper's definitions (51, 53, 60,
61, 67). Only their symmetric part (:func:`kronjax.calculus.symmetrize`) is fixed by the
accelerations; translational Hessians of a point are symmetric, rotational ones are not.

Frames: ``frame="base"`` expresses a quantity in the base frame ``(0)``, ``frame="body"`` in the
body's own frame ``(i)``. For translational Hessians, ``"body"`` is ``d(J_T^(i))/dq`` (53),
which is *not* the acceleration in body axes, and ``"body*"`` is ``A_0^(i) H_T^(0)`` (58), which
is.
"""

from ._jacobians import KINEMATICS_METHODS as KINEMATICS_METHODS
from ._jacobians import (
    hessians,
    jacobians,
    jacobians_dot,
    rotational_hessian,
    rotational_jacobian,
    translational_hessian,
    translational_jacobian,
)
from ._joint_jacobians import JointJacobians, joint_jacobians
from ._motion import angular_acceleration, angular_velocity, linear_acceleration, linear_velocity
from ._poses import FramePoses, forward_kinematics
from ._relative import RelativeMotion, compose, point_motion, relative_motion

__all__ = [
    "FramePoses",
    "forward_kinematics",
    "jacobians",
    "JointJacobians",
    "joint_jacobians",
    "hessians",
    "jacobians_dot",
    "translational_jacobian",
    "rotational_jacobian",
    "translational_hessian",
    "rotational_hessian",
    "linear_velocity",
    "angular_velocity",
    "linear_acceleration",
    "angular_acceleration",
    "RelativeMotion",
    "relative_motion",
    "compose",
    "point_motion",
]
