"""Recursive Newton-Euler for a joint tree (private; Featherstone's RNEA in body coordinates).

Written in the scalar components of :mod:`kronjax._spatial` so that batches vectorise. Gravity
enters as the base's acceleration ``(0, -g0)``. ``O(nb)`` work, no ``n x n^2`` tensor.
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
def rnea(model: Model, q: Array, qd: Array, qdd: Array) -> Array:
    """Joint forces of a :class:`~kronjax.chain.Tree` model for one state, the rotors' ``A qdd``
    included (:attr:`~kronjax.chain.Model.armature`)."""
    tree = model.kinematics
    dtype = jnp.result_type(q, qd, qdd, tree.axes, model.inertials.mass, model.gravity)
    rotors = armature_force(model, qdd.astype(dtype))
    if tree.has_multi_dof:  # the sub-joint chain's accelerations (_spatial module doc)
        qdd = qdd.astype(dtype) - sp.lie_correction(tree, qd.astype(dtype))
    order = sp.schedule(tree)
    inputs, moving = sp.bodies(model, q, dtype)
    inputs["qd"] = sp.per_body(model, qd, moving, dtype)
    inputs["qdd"] = sp.per_body(model, qdd, moving, dtype)

    def forward(parent, b):
        """Velocity and acceleration of one body from its parent's, and its net force."""
        w0, v0, aw0, av0 = parent
        e, r = sp.joint_transform(b)
        jw, jv = sp.scale(b["s_w"], b["qd"]), sp.scale(b["s_v"], b["qd"])
        w, v = sp.add(sp.transform_motion(e, r, w0, v0), (jw, jv))
        aw, av = sp.transform_motion(e, r, aw0, av0)
        aw = sp.add(aw, sp.cross(w, jw), sp.scale(b["s_w"], b["qdd"]))
        av = sp.add(av, sp.cross(w, jv), sp.cross(v, jw), sp.scale(b["s_v"], b["qdd"]))
        m, com = b["mass"], b["com"]
        # f = I a + v x* (I v), with I about the body origin written through the centre of mass
        momentum = sp.scale(sp.add(v, sp.cross(w, com)), m)
        angular = sp.add(sp.mul(b["inertia"], w), sp.cross(com, momentum))
        f = sp.scale(sp.add(av, sp.cross(aw, com)), m)
        n = sp.add(sp.mul(b["inertia"], aw), sp.cross(com, f), sp.cross(w, angular), sp.cross(v, momentum))
        motion = (w, v, aw, av)
        return motion, (n, sp.add(f, sp.cross(w, momentum)))

    def backward(from_children, b):
        """Joint force of one body and its subtree's force in the parent's frame."""
        n, f = sp.add(b["load"], from_children)
        tau = sp.dot(b["s_w"], n) + sp.dot(b["s_v"], f)
        # E and r again rather than kept from the forward pass: at large batches the recursions
        # are bound by memory traffic, and the joint inputs are fewer arrays than (E, r)
        return sp.transform_force_back(*sp.joint_transform(b), n, f), tau

    zero = jnp.zeros((), dtype)
    z3 = (zero, zero, zero)
    g = model.gravity.astype(dtype)
    per_span = sp.split(order, inputs)
    outputs = sp.down(order, forward, (z3, z3, z3, (-g[0], -g[1], -g[2])), per_span)
    up_inputs = [dict(x, load=load) for load, x in zip(outputs, per_span)]
    taus = sp.up(order, backward, (z3, z3), up_inputs)
    return sp.reduce(tree, jnp.concatenate(taus)[np.flatnonzero(moving)], (0,)) + rotors
