"""Joint transforms and forward kinematics of a tree in scalar components (private).

Joint transforms: with the joint's unit axis ``a`` and angle ``t`` (zero unless revolute),
``R(t)^T = a a^T + cos t (E - a a^T) - sin t [a]`` (Rodrigues), so ``E = post^T R(t)^T pre^T``
and ``r = pre_p + pre (a d + R(t) post_p)`` (``d``: the prismatic displacement) are affine in
``(cos t, sin t, d)`` with coefficients fixed by the model (:func:`joint_coefficients`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .. import _lie
from ..calculus import skew
from ..chain import Model, Tree
from .algebra import add, child_pose, components, cross, matmul, mul, scale, spatial_inertia, transpose
from .expansion import Expansion, expanded, expansion
from .inputs import Joint, Motion, RigidBody, Transform, TreeInputs
from .traversal import down, schedule, split


def joint_coefficients(tree: Tree, dtype) -> tuple[tuple, tuple]:
    """The model's per-body coefficients of ``E`` and ``r`` (:class:`~kronjax._spatial.inputs.Transform`'s first seven
    fields) and the motion subspace ``(s_w, s_v)`` (:class:`~kronjax._spatial.inputs.Joint`) of a tree."""
    a = tree.axes.astype(dtype)
    pre_r, pre_p = tree.pre_rotation.astype(dtype), tree.pre_translation.astype(dtype)
    post_r, post_p = tree.post_rotation.astype(dtype), tree.post_translation.astype(dtype)
    along = a[:, :, None] * a[:, None, :]
    across = jnp.eye(3, dtype=dtype) - along
    k = jax.vmap(skew)(a)
    post_rt, pre_rt = jnp.swapaxes(post_r, 1, 2), jnp.swapaxes(pre_r, 1, 2)
    apply = lambda m, v: jnp.einsum("bij,bj->bi", m, v)  # noqa: E731
    kinds = np.array(tree.kinds)
    axis_body = apply(post_rt, a)
    s_revolute = jnp.concatenate([axis_body, apply(post_rt, jnp.cross(a, post_p))], axis=1)
    s_prismatic = jnp.concatenate([jnp.zeros_like(axis_body), axis_body], axis=1)
    s = jnp.where((kinds == "R")[:, None], s_revolute, jnp.where((kinds == "P")[:, None], s_prismatic, 0))
    coefficients = (
        components(post_rt @ along @ pre_rt),
        components(post_rt @ across @ pre_rt),
        components(-post_rt @ k @ pre_rt),
        components(pre_p + apply(pre_r @ along, post_p)),
        components(apply(pre_r @ across, post_p)),
        components(apply(pre_r @ k, post_p)),
        components(apply(pre_r, a)),
    )
    return coefficients, (components(s[:, :3]), components(s[:, 3:]))


def joint_inputs(tree: Tree, q: Array, dtype) -> TreeInputs:
    """The :class:`~kronjax._spatial.inputs.TreeInputs` of the kinematic recursions (no bodies) over the
    :func:`~kronjax._spatial.expansion.expanded` tree."""
    ex = expansion(tree)
    kinds = np.array(ex.kinds)
    revolute, prismatic = (kinds == "R") & ~ex.sub, (kinds == "P") & ~ex.sub
    coordinate = lambda mask: _spread(ex.q_index, q, mask, dtype, ex.scale, np.where(mask, ex.offset, 0))  # noqa: E731
    angle = coordinate(revolute)
    coefficients, (s_w, s_v) = joint_coefficients(expanded(tree), dtype)
    transform = Transform(*coefficients, cos=jnp.cos(angle), sin=jnp.sin(angle), d=coordinate(prismatic))
    motion = _multi_dof_motion(tree, ex, q.astype(dtype), dtype) if ex.multi else {}
    return TreeInputs(Joint(transform, None, s_w, s_v), None, motion, kinds != "F")


def _multi_dof_motion(tree: Tree, ex: Expansion, q: Array, dtype) -> dict:
    """``{first sub-joint: Motion}`` (:class:`~kronjax._spatial.inputs.Motion`) of the multi-DoF joints, in components."""
    motion = {}
    for kind, start, _, lead, body in ex.multi:
        g, t = _lie.motion(kind, q[start : start + _lie.NQ[kind]])
        pre = tree.pre_rotation[body].astype(dtype)
        motion[lead] = Motion(
            rot=tuple(tuple(g[j, i] for j in range(3)) for i in range(3)), shift=tuple(pre[i] @ t for i in range(3))
        )
    return motion


def bodies(model: Model, q: Array, dtype) -> TreeInputs:
    """:func:`joint_inputs` with the bodies' inertials (:class:`~kronjax._spatial.inputs.RigidBody`)."""
    tree = model.kinematics
    inputs = joint_inputs(tree, q, dtype)
    ine = model.inertials
    mass, com, inertia = (x.astype(dtype) for x in (ine.mass, ine.com, ine.inertia))
    if tree.has_multi_dof:
        ex = expansion(tree)
        real = np.zeros(len(ex.parents), bool)
        real[ex.real] = True
        massless = lambda x: jnp.where(real.reshape((-1,) + (1,) * (x.ndim - 1)), x[ex.source], 0)  # noqa: E731
        mass, com, inertia = massless(mass), massless(com), massless(inertia)
    return inputs._replace(body=RigidBody(mass, components(com), components(inertia)))


def per_body(model: Model, x: Array, mask: np.ndarray, dtype) -> Array:
    """A velocity-space vector ``(nv,)`` spread over the expanded bodies, zero where ``mask`` is
    false (at least at fixed joints, which have no coordinate)."""
    ex = expansion(model.kinematics)
    return _spread(ex.v_index, x, mask, dtype, ex.scale)


def _spread(q_index: tuple[int, ...], x: Array, mask: np.ndarray, dtype, factor=None, offset=None) -> Array:
    """``factor x[index] + offset`` per body where ``mask`` is true, zero elsewhere (the scale and
    offset of mimic joints, skipped when all are 1 and 0). Zeros shared by a batch when ``mask``
    is all false (no prismatic joint: ``d``)."""
    if not np.any(mask):
        return jnp.zeros(len(q_index), dtype)
    index = np.array([max(k, 0) for k in q_index], dtype=int)
    values = x.astype(dtype)[index]
    if factor is not None and np.any(factor != 1):
        values = values * jnp.asarray(factor, dtype)
    if offset is not None and np.any(offset != 0):
        values = values + jnp.asarray(offset, dtype)
    return jnp.where(mask, values, jnp.zeros((), dtype))


def joint_transform(joint: Joint):
    """``(E, r)`` of one body from its :class:`~kronjax._spatial.inputs.Joint`; ``(None, None)``, the identity, in a span of
    identity transforms (:class:`~kronjax._spatial.traversal.Schedule`)."""
    x = joint.transform
    if x is None:
        return None, None
    c, s = x.cos, x.sin
    e = tuple(tuple(x.e0[i][j] + c * x.e_cos[i][j] + s * x.e_sin[i][j] for j in range(3)) for i in range(3))
    r = tuple(x.r0[i] + c * x.r_cos[i] + s * x.r_sin[i] + x.d * x.r_d[i] for i in range(3))
    if joint.motion is not None:  # the first sub-joint of a multi-DoF joint
        e, r = matmul(joint.motion.rot, e), add(r, joint.motion.shift)
    return e, r


def poses(tree: Tree, inputs: TreeInputs, dtype) -> tuple[tuple, tuple]:
    """The rotations (rows of ``A_i^(0)``, base from body) and origins (``^0 d_i``) of the bodies of
    the :func:`~kronjax._spatial.expansion.expanded` tree in the base frame: child from parent ``R_i =
    R_parent E^T``, ``p_i = p_parent + R_parent r`` (:func:`joint_transform`). Components of
    ``(nb,)`` arrays."""

    def step(parent, joint: Joint):
        pose = child_pose(parent, *joint_transform(joint))
        return pose, pose

    zero, one = jnp.zeros((), dtype), jnp.ones((), dtype)
    eye = tuple(tuple(one if i == j else zero for j in range(3)) for i in range(3))
    order = schedule(tree)
    out = down(order, step, (eye, (zero, zero, zero)), split(order, inputs.joint, inputs.motion))
    return jax.tree.map(lambda *x: jnp.concatenate(x), *out)


class Frames(NamedTuple):
    """Forward kinematics per body of the :func:`~kronjax._spatial.expansion.expanded` tree, in the
    base frame (components of ``(nb,)`` arrays): ``R`` and ``p`` (:func:`poses`), ``w`` and ``t``
    (the joint's motion subspace in base axes, ``R s_w`` and ``R s_v``; zero at fixed joints), and
    ``moving`` (the static mask of the bodies whose joint has a coordinate)."""

    R: tuple
    p: tuple
    w: tuple
    t: tuple
    moving: np.ndarray


def frames(tree: Tree, q: Array, dtype) -> Frames:
    """The :class:`Frames` of a tree at ``q``."""
    inputs = joint_inputs(tree, q, dtype)
    rot, origin = poses(tree, inputs, dtype)
    return Frames(rot, origin, mul(rot, inputs.joint.s_w), mul(rot, inputs.joint.s_v), inputs.moving)


def base_frame(model: Model, q: Array):
    """Motion axes ``S = (S_w, S_v)`` of the joints and the bodies' rigid inertias ``(a, h, m)``
    (:mod:`~kronjax._spatial.algebra`) in the base frame, about the base origin, per body of the
    :func:`~kronjax._spatial.expansion.expanded` tree: ``a = R I R^T - m [c][c]``, ``h = m c``
    (``c``: the centre of mass in the base frame), all additive over bodies."""
    tree: Tree = model.kinematics
    dtype = jnp.result_type(q, tree.axes, model.inertials.mass)
    inputs = bodies(model, q, dtype)
    rotation, origin = poses(tree, inputs, dtype)
    # S in the base frame: (R s_w, R s_v + p x R s_w) from the body-frame subspace (s_w, s_v)
    s_w = mul(rotation, inputs.joint.s_w)
    s_v = add(mul(rotation, inputs.joint.s_v), cross(origin, s_w))
    body = inputs.body
    centre = add(origin, mul(rotation, body.com))
    inertia = matmul(matmul(rotation, body.inertia), transpose(rotation))
    rotational, _, _ = spatial_inertia(body.mass, centre, inertia)
    return (s_w, s_v), (rotational, scale(centre, body.mass), body.mass)
