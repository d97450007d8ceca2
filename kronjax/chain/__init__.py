"""Models of multibody systems: joints, tree topology, placements and body inertials.

A :class:`Model` is an equinox Module, so every numeric parameter (joint axes, placements,
masses, centres of mass, inertia tensors, gravity) is a pytree leaf: ``jax.grad`` of any
kronjax function with respect to the model reaches them (identification, calibration).

Two kinds of kinematics are supported:

* :class:`Tree` -- bodies connected by revolute (``"R"``), prismatic (``"P"``) and fixed (``"F"``)
  joints about any axis, and by the multi-DoF joints ``"free"``, ``"spherical"`` and ``"planar"``,
  each body with one parent (``-1`` is the base), so serial chains, branched trees and
  floating-base robots all work. Body ``i``'s frame is::

      T_i = T_parent(i) · Pre_i · Joint_i(q) · Post_i

  with constant placements ``Pre_i`` and ``Post_i``. The Denavit-Hartenberg builders fill
  ``Pre``/``Post`` so that the body frames are the D-H frames of the paper (Tuan, Table 1).

Configuration and velocity (Pinocchio's conventions): ``q`` has ``nq`` numbers and ``v`` (``q̇`` for 1-DoF joints)
``nv``, per joint in body order: revolute and prismatic 1 and 1; ``"free"`` ``q = [x, y, z, qx, qy,
qz, qw]`` (the child frame's origin in the joint frame and the unit quaternion of its rotation) and
``v = [v, w]`` (linear and angular velocity of the child frame, in the child frame); ``"spherical"``
``q = [qx, qy, qz, qw]``, ``v = w`` (child frame); ``"planar"`` ``q = [x, y, cos t, sin t]`` (a
rotation ``t`` about the joint frame's z), ``v = [vx, vy, wz]`` (child frame). Every quantity with
a velocity index (Jacobians, ``M``, joint forces) is indexed by the ``nv`` velocity coordinates;
derivatives with respect to the configuration are taken along them (``q ⊕ dv``,
:func:`kronjax.configuration.integrate`).
* :class:`PosesFunction` -- any pure JAX function ``q -> (rotations, origins)`` of the body frames
  (the design's "kinematic chains are pure JAX functions of q").

Bodies are numbered from 0 (the paper's body ``i`` is index ``i - 1``) and may also be named.

Modules: ``_arrays`` (checked arrays), ``_inertials``, ``_tree`` (:class:`Tree`,
:class:`PosesFunction`), ``_limits``, ``_model`` (:class:`Model`), ``_builders``.
"""

from __future__ import annotations

from ._builders import Joint, from_dh, from_function, from_joints
from ._inertials import Inertial, Inertials
from ._limits import JointLimits
from ._model import Model
from ._tree import PosesFunction, Tree

__all__ = [
    "Inertial",
    "Inertials",
    "JointLimits",
    "Joint",
    "Tree",
    "PosesFunction",
    "Model",
    "from_dh",
    "from_joints",
    "from_function",
]
