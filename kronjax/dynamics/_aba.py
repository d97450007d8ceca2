"""Articulated-body algorithm for a joint tree (private; Featherstone's ABA in body coordinates).

Forward dynamics in ``O(nb)`` without forming or factorising ``M``: the backward pass is a sparse
``L^T D L`` factorisation of ``M`` along the tree, whose pivots ``D_i = S_i . IA_i S_i`` are all
positive exactly when ``M`` is positive definite. Written in the scalar components of
:mod:`kronjax._spatial.algebra` so that batches vectorise.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._spatial.algebra import (
    add,
    cross,
    dot,
    inertia_times,
    mul,
    outer,
    scale,
    spatial_inertia,
    symmetric,
    transform_force_back,
    transform_inertia_back,
    transform_motion,
)
from .._spatial.expansion import lie_correction
from .._spatial.frames import bodies, joint_transform, per_body
from .._spatial.inputs import Joint, RigidBody
from .._spatial.traversal import down, schedule, split, up
from ..chain import Model
from ..chain._model import armature_force


class _Inputs(NamedTuple):
    """Per-body inputs, split once: the joint, the body and its spatial inertia (``(a, b, c)``
    blocks), the joint's rate, force and rotor inertia."""

    joint: Joint
    body: RigidBody
    inertia: tuple
    qd: Array
    tau: Array
    armature: Array


class _Articulated(NamedTuple):
    """Per-body inputs of the inward pass: the body's spatial inertia and bias force ``pA``, its
    velocity-product acceleration ``c``, and whether its joint moves (a static mask)."""

    joint: Joint
    inertia: tuple
    bias: tuple
    c: tuple
    tau: Array
    armature: Array
    moving: np.ndarray


class _Accelerations(NamedTuple):
    """Per-body inputs of the last outward pass: ``c`` and the factorisation's ``U``, ``D``, ``u``."""

    joint: Joint
    c: tuple
    big_u: tuple
    pivot: Array
    u: Array


@eqx.filter_jit
def aba(model: Model, q: Array, qd: Array, tau: Array) -> tuple[Array, Array]:
    """``(qdd, pivots)``: joint accelerations of a :class:`~kronjax.chain.Tree` model, and the
    pivots ``D`` of the moving joints (all positive iff ``M(q)`` is positive definite). A rotor
    inertia ``A_i`` (:attr:`~kronjax.chain.Model.armature`) adds to its joint's pivot ``D_i = S_i .
    IA_i S_i + A_i`` (Featherstone, "Rigid Body Dynamics Algorithms", sec. 9.2)."""
    tree = model.kinematics
    if tree.has_mimic:  # coupled coordinates across bodies: no articulated-body factorisation
        raise NotImplementedError("the articulated-body algorithm does not take mimic joints")
    ine = model.inertials
    dtype = jnp.result_type(q, qd, tau, tree.axes, ine.mass, model.gravity)
    inputs = bodies(model, q, dtype)
    moving = inputs.moving
    qd_body = per_body(model, qd, moving, dtype)
    qd, tau = qd.astype(dtype), tau.astype(dtype)
    if tree.has_multi_dof:  # the rotors' A qdd = A (qdd of the sub-joint chain + correction)
        tau = tau - armature_force(model, lie_correction(tree, qd))
    rotors = jnp.zeros(model.nv, dtype) if model.armature is None else model.armature
    stack = _Inputs(
        inputs.joint,
        inputs.body,
        spatial_inertia(*inputs.body),
        qd_body,
        per_body(model, tau, moving, dtype),
        per_body(model, rotors, moving, dtype),
    )
    one = jnp.ones((), dtype)

    def velocities(parent, b: _Inputs):
        """Velocity of one body, its velocity-product acceleration ``c`` and bias force ``pA``."""
        e, r = joint_transform(b.joint)
        jw, jv = scale(b.joint.s_w, b.qd), scale(b.joint.s_v, b.qd)
        w, v = add(transform_motion(e, r, *parent), (jw, jv))
        c = (cross(w, jw), add(cross(w, jv), cross(v, jw)))
        m, com, inertia = b.body
        momentum = scale(add(v, cross(w, com)), m)
        angular = add(mul(inertia, w), cross(com, momentum))
        bias = (add(cross(w, angular), cross(v, momentum)), cross(w, momentum))
        return (w, v), (c, bias)

    def articulated(from_children, b: _Articulated):
        """Articulated inertia and bias force of one body, and what its joint passes to the parent."""
        ia, pa = add(b.inertia, from_children[0]), add(b.bias, from_children[1])
        s = (b.joint.s_w, b.joint.s_v)
        u_w, u_v = inertia_times(ia, *s)
        # fixed joints: S = 0, so U = 0 and u = 0; a unit pivot keeps them out of the algebra
        pivot = jnp.where(b.moving, dot(s[0], u_w) + dot(s[1], u_v) + b.armature, one)
        u = b.tau - dot(s[0], pa[0]) - dot(s[1], pa[1])
        a, bb, cc = ia
        inverse = 1 / pivot
        ia = (
            symmetric(lambda i, j: a[i][j] - u_w[i] * u_w[j] * inverse),
            add(bb, scale(outer(u_w, u_v), -inverse)),
            symmetric(lambda i, j: cc[i][j] - u_v[i] * u_v[j] * inverse),
        )
        pa = add(pa, inertia_times(ia, *b.c), scale((u_w, u_v), u / pivot))
        e, r = joint_transform(b.joint)
        to_parent = (transform_inertia_back(e, r, ia), transform_force_back(e, r, *pa))
        return to_parent, ((u_w, u_v), pivot, u)

    def accelerations(parent, b: _Accelerations):
        """Joint and body acceleration of one body from its parent's."""
        a = add(transform_motion(*joint_transform(b.joint), *parent), b.c)
        u_w, u_v = b.big_u
        qdd = (b.u - dot(u_w, a[0]) - dot(u_v, a[1])) / b.pivot
        a = add(a, (scale(b.joint.s_w, qdd), scale(b.joint.s_v, qdd)))
        return a, qdd

    zero = jnp.zeros((), dtype)
    z3 = (zero, zero, zero)
    z33 = (z3, z3, z3)
    order = schedule(tree)
    per_span = split(order, stack, inputs.motion)
    motion = down(order, velocities, (z3, z3), per_span)
    masks = np.split(moving, [start for start, _ in order.spans[1:]])
    # E and r are computed again in each pass rather than kept: at large batches the recursions
    # are bound by memory traffic, and the joint inputs are fewer arrays than (E, r)
    up_inputs = [
        _Articulated(x.joint, x.inertia, bias, c, x.tau, x.armature, mask) for (c, bias), x, mask in zip(motion, per_span, masks)
    ]
    factor = up(order, articulated, ((z33, z33, z33), (z3, z3)), up_inputs)
    down_inputs = [_Accelerations(x.joint, x.c, big_u, pivot, u) for x, (big_u, pivot, u) in zip(up_inputs, factor)]
    g = model.gravity.astype(dtype)
    out = down(order, accelerations, (z3, (-g[0], -g[1], -g[2])), down_inputs)
    keep = np.flatnonzero(moving)
    qdd = jnp.concatenate(out)[keep]
    pivots = jnp.concatenate([pivot for _, pivot, _ in factor])[keep]
    if tree.has_multi_dof:  # from the sub-joint chain's accelerations (kronjax._spatial.expansion)
        qdd = qdd + lie_correction(tree, qd)
    return qdd, pivots
