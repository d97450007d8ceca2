"""Articulated-body algorithm for a joint tree (private; Featherstone's ABA in body coordinates).

Forward dynamics in ``O(nb)`` without forming or factorising ``M``: the backward pass is a sparse
``L^T D L`` factorisation of ``M`` along the tree, whose pivots ``D_i = S_i . IA_i S_i`` are all
positive exactly when ``M`` is positive definite. Written in the scalar components of
:mod:`kronjax._spatial` so that batches vectorise.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from . import _spatial as sp
from .chain import Model
from .chain._model import armature_force


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
    inputs, moving = sp.bodies(model, q, dtype)
    inputs["qd"] = sp.per_body(model, qd, moving, dtype)
    qd, tau = qd.astype(dtype), tau.astype(dtype)
    if tree.has_multi_dof:  # the rotors' A qdd = A (qdd of the sub-joint chain + correction)
        tau = tau - armature_force(model, sp.lie_correction(tree, qd))
    inputs["tau"] = sp.per_body(model, tau, moving, dtype)
    rotors = jnp.zeros(model.nv, dtype) if model.armature is None else model.armature
    inputs["armature"] = sp.per_body(model, rotors, moving, dtype)
    inertia = sp.spatial_inertia(inputs["mass"], inputs["com"], inputs["inertia"])
    one = jnp.ones((), dtype)

    def velocities(parent, b):
        """Velocity of one body, its velocity-product acceleration ``c`` and bias force ``pA``."""
        e, r = sp.joint_transform(b)
        jw, jv = sp.scale(b["s_w"], b["qd"]), sp.scale(b["s_v"], b["qd"])
        w, v = sp.add(sp.transform_motion(e, r, *parent), (jw, jv))
        c = (sp.cross(w, jw), sp.add(sp.cross(w, jv), sp.cross(v, jw)))
        m, com = b["mass"], b["com"]
        momentum = sp.scale(sp.add(v, sp.cross(w, com)), m)
        angular = sp.add(sp.mul(b["inertia"], w), sp.cross(com, momentum))
        bias = (sp.add(sp.cross(w, angular), sp.cross(v, momentum)), sp.cross(w, momentum))
        return (w, v), (c, bias)

    def articulated(from_children, b):
        """Articulated inertia and bias force of one body, and what its joint passes to the parent."""
        (ia, pa), (ia_children, pa_children) = b["load"], from_children
        ia, pa = sp.add(ia, ia_children), sp.add(pa, pa_children)
        s = (b["s_w"], b["s_v"])
        u_w, u_v = sp.inertia_times(ia, *s)
        # fixed joints: S = 0, so U = 0 and u = 0; a unit pivot keeps them out of the algebra
        pivot = jnp.where(b["moving"], sp.dot(s[0], u_w) + sp.dot(s[1], u_v) + b["armature"], one)
        u = b["tau"] - sp.dot(s[0], pa[0]) - sp.dot(s[1], pa[1])
        a, bb, cc = ia
        inverse = 1 / pivot
        ia = (
            sp.symmetric(lambda i, j: a[i][j] - u_w[i] * u_w[j] * inverse),
            sp.add(bb, sp.scale(sp.outer(u_w, u_v), -inverse)),
            sp.symmetric(lambda i, j: cc[i][j] - u_v[i] * u_v[j] * inverse),
        )
        pa = sp.add(pa, sp.inertia_times(ia, *b["c"]), sp.scale((u_w, u_v), u / pivot))
        e, r = sp.joint_transform(b)
        to_parent = (sp.transform_inertia_back(e, r, ia), sp.transform_force_back(e, r, *pa))
        return to_parent, ((u_w, u_v), pivot, u)

    def accelerations(parent, b):
        """Joint and body acceleration of one body from its parent's."""
        a = sp.add(sp.transform_motion(*sp.joint_transform(b), *parent), b["c"])
        u_w, u_v = b["big_u"]
        qdd = (b["u"] - sp.dot(u_w, a[0]) - sp.dot(u_v, a[1])) / b["pivot"]
        a = sp.add(a, (sp.scale(b["s_w"], qdd), sp.scale(b["s_v"], qdd)))
        return a, qdd

    zero = jnp.zeros((), dtype)
    z3 = (zero, zero, zero)
    z33 = (z3, z3, z3)
    order = sp.schedule(tree)
    per_span = sp.split(order, dict(inputs, ia=inertia))
    motion = sp.down(order, velocities, (z3, z3), per_span)
    masks = np.split(moving, [start for start, _ in order.spans[1:]])
    # E and r are computed again in each pass rather than kept: at large batches the recursions
    # are bound by memory traffic, and the joint inputs are fewer arrays than (E, r)
    up_inputs = [dict(x, c=c, load=(x["ia"], bias), moving=mask) for (c, bias), x, mask in zip(motion, per_span, masks)]
    factor = sp.up(order, articulated, ((z33, z33, z33), (z3, z3)), up_inputs)
    down_inputs = [dict(x, big_u=big_u, pivot=pivot, u=u) for x, (big_u, pivot, u) in zip(up_inputs, factor)]
    g = model.gravity.astype(dtype)
    out = sp.down(order, accelerations, (z3, (-g[0], -g[1], -g[2])), down_inputs)
    keep = np.flatnonzero(moving)
    qdd = jnp.concatenate(out)[keep]
    pivots = jnp.concatenate([pivot for _, pivot, _ in factor])[keep]
    if tree.has_multi_dof:  # from the sub-joint chain's accelerations (_spatial module doc)
        qdd = qdd + sp.lie_correction(tree, qd)
    return qdd, pivots
