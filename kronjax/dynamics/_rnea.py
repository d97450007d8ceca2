"""Recursive Newton-Euler for a joint tree (private; Featherstone's RNEA in body coordinates).

Written in the scalar components of :mod:`kronjax._spatial.algebra` so that batches vectorise. Gravity
enters as the base's acceleration ``(0, -g0)``. ``O(nb)`` work, no ``n x n^2`` tensor.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._spatial.algebra import add, cross, dot, mul, scale, transform_force_back, transform_motion
from .._spatial.expansion import lie_correction, reduce
from .._spatial.frames import bodies, joint_transform, per_body
from .._spatial.inputs import Joint, RigidBody
from .._spatial.traversal import down, schedule, split, up
from ..chain import Model
from ..chain._model import armature_force


class _Forward(NamedTuple):
    """Per-body inputs of the outward pass: the joint, the body, its joint's rate and acceleration."""

    joint: Joint
    body: RigidBody
    qd: Array
    qdd: Array


class _Backward(NamedTuple):
    """Per-body inputs of the inward pass: the joint, and the body's net force from the outward pass."""

    joint: Joint
    load: tuple


@eqx.filter_jit
def rnea(model: Model, q: Array, qd: Array, qdd: Array) -> Array:
    """Joint forces of a :class:`~kronjax.chain.Tree` model for one state, the rotors' ``A qdd``
    included (:attr:`~kronjax.chain.Model.armature`)."""
    tree = model.kinematics
    dtype = jnp.result_type(q, qd, qdd, tree.axes, model.inertials.mass, model.gravity)
    rotors = armature_force(model, qdd.astype(dtype))
    if tree.has_multi_dof:  # the sub-joint chain's accelerations (kronjax._spatial.expansion)
        qdd = qdd.astype(dtype) - lie_correction(tree, qd.astype(dtype))
    order = schedule(tree)
    inputs = bodies(model, q, dtype)
    moving = inputs.moving
    stack = _Forward(inputs.joint, inputs.body, per_body(model, qd, moving, dtype), per_body(model, qdd, moving, dtype))

    def forward(parent, b: _Forward):
        """Velocity and acceleration of one body from its parent's, and its net force."""
        w0, v0, aw0, av0 = parent
        e, r = joint_transform(b.joint)
        s_w, s_v = b.joint.s_w, b.joint.s_v
        jw, jv = scale(s_w, b.qd), scale(s_v, b.qd)
        w, v = add(transform_motion(e, r, w0, v0), (jw, jv))
        aw, av = transform_motion(e, r, aw0, av0)
        aw = add(aw, cross(w, jw), scale(s_w, b.qdd))
        av = add(av, cross(w, jv), cross(v, jw), scale(s_v, b.qdd))
        m, com, inertia = b.body
        # f = I a + v x* (I v), with I about the body origin written through the centre of mass
        momentum = scale(add(v, cross(w, com)), m)
        angular = add(mul(inertia, w), cross(com, momentum))
        f = scale(add(av, cross(aw, com)), m)
        n = add(mul(inertia, aw), cross(com, f), cross(w, angular), cross(v, momentum))
        return (w, v, aw, av), (n, add(f, cross(w, momentum)))

    def backward(from_children, b: _Backward):
        """Joint force of one body and its subtree's force in the parent's frame."""
        n, f = add(b.load, from_children)
        tau = dot(b.joint.s_w, n) + dot(b.joint.s_v, f)
        # E and r again rather than kept from the forward pass: at large batches the recursions
        # are bound by memory traffic, and the joint inputs are fewer arrays than (E, r)
        return transform_force_back(*joint_transform(b.joint), n, f), tau

    zero = jnp.zeros((), dtype)
    z3 = (zero, zero, zero)
    g = model.gravity.astype(dtype)
    per_span = split(order, stack, inputs.motion)
    loads = down(order, forward, (z3, z3, z3, (-g[0], -g[1], -g[2])), per_span)
    taus = up(order, backward, (z3, z3), [_Backward(x.joint, load) for load, x in zip(loads, per_span)])
    return reduce(tree, jnp.concatenate(taus)[np.flatnonzero(moving)], (0,)) + rotors
