"""Joint transforms and forward kinematics of a tree in scalar components (private).

Joint transforms: with the joint's unit axis ``a`` and angle ``t`` (zero unless revolute),
``R(t)^T = a a^T + cos t (E - a a^T) - sin t [a]`` (Rodrigues), so ``E = post^T R(t)^T pre^T``
and ``r = pre_p + pre (a d + R(t) post_p)`` (``d``: the prismatic displacement) are affine in
``(cos t, sin t, d)`` with coefficients fixed by the model (:func:`joint_coefficients`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .. import _lie
from ..calculus import skew
from ..chain import Model, Tree
from .algebra import add, child_pose, components, cross, matmul, mul, scale, spatial_inertia, transpose
from .expansion import Expansion, expanded, expansion
from .traversal import down, schedule, split


def joint_coefficients(tree: Tree, dtype) -> dict:
    """Per-body coefficients of ``E``, ``r`` (see the module doc) and the motion subspace
    ``(s_w, s_v)`` in body coordinates: ``(R^T a, R^T (a x p))`` revolute, ``(0, R^T a)``
    prismatic, zero fixed (``R, p``: the post placement)."""
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
    return dict(
        e0=components(post_rt @ along @ pre_rt),
        e_cos=components(post_rt @ across @ pre_rt),
        e_sin=components(-post_rt @ k @ pre_rt),
        r0=components(pre_p + apply(pre_r @ along, post_p)),
        r_cos=components(apply(pre_r @ across, post_p)),
        r_sin=components(apply(pre_r @ k, post_p)),
        r_d=components(apply(pre_r, a)),
        s_w=components(s[:, :3]),
        s_v=components(s[:, 3:]),
    )


def joint_inputs(tree: Tree, q: Array, dtype) -> tuple[dict, np.ndarray]:
    """Per-body inputs of the kinematic recursions over the :func:`~kronjax._spatial.expansion.expanded` tree (joint
    coefficients, ``cos t``, ``sin t``, ``d``; with multi-DoF joints, the ``motion`` of their first
    sub-joints, :func:`_multi_dof_motion`) and the mask of bodies whose joint moves."""
    ex = expansion(tree)
    kinds = np.array(ex.kinds)
    revolute, prismatic = (kinds == "R") & ~ex.sub, (kinds == "P") & ~ex.sub
    coordinate = lambda mask: _spread(ex.q_index, q, mask, dtype, ex.scale, np.where(mask, ex.offset, 0))  # noqa: E731
    angle = coordinate(revolute)
    values = dict(
        joint_coefficients(expanded(tree), dtype),
        cos=jnp.cos(angle),
        sin=jnp.sin(angle),
        d=coordinate(prismatic),
    )
    if ex.multi:
        values.update(_multi_dof_motion(tree, ex, q.astype(dtype), dtype))
    return values, kinds != "F"


def _multi_dof_motion(tree: Tree, ex: Expansion, q: Array, dtype) -> dict:
    """``{"motion": {first sub-joint: {"rot": G^T, "shift": Pre t}}}`` in components, which
    :func:`~kronjax._spatial.traversal.split` gives to those bodies' spans only (:class:`~kronjax._spatial.traversal.Schedule`)."""
    motion = {}
    for kind, start, _, lead, body in ex.multi:
        g, t = _lie.motion(kind, q[start : start + _lie.NQ[kind]])
        pre = tree.pre_rotation[body].astype(dtype)
        motion[lead] = dict(
            rot=tuple(tuple(g[j, i] for j in range(3)) for i in range(3)), shift=tuple(pre[i] @ t for i in range(3))
        )
    return dict(motion=motion)


def bodies(model: Model, q: Array, dtype) -> tuple[dict, np.ndarray]:
    """:func:`joint_inputs` and the bodies' inertials (zero at sub-joints but the last)."""
    tree = model.kinematics
    values, moving = joint_inputs(tree, q, dtype)
    ine = model.inertials
    mass, com, inertia = (x.astype(dtype) for x in (ine.mass, ine.com, ine.inertia))
    if tree.has_multi_dof:
        ex = expansion(tree)
        real = np.zeros(len(ex.parents), bool)
        real[ex.real] = True
        massless = lambda x: jnp.where(real.reshape((-1,) + (1,) * (x.ndim - 1)), x[ex.source], 0)  # noqa: E731
        mass, com, inertia = massless(mass), massless(com), massless(inertia)
    values.update(mass=mass, com=components(com), inertia=components(inertia))
    return values, moving


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


def joint_transform(b: dict):
    """``(E, r)`` of one body from its entry of :func:`bodies`; ``(None, None)``, the identity,
    in a span of sub-joints after a multi-DoF joint's first (:class:`~kronjax._spatial.traversal.Schedule`), whose entries
    :func:`~kronjax._spatial.traversal.split` leaves without the joint coefficients."""
    if "e0" not in b:
        return None, None
    c, s = b["cos"], b["sin"]
    e = tuple(tuple(b["e0"][i][j] + c * b["e_cos"][i][j] + s * b["e_sin"][i][j] for j in range(3)) for i in range(3))
    r = tuple(b["r0"][i] + c * b["r_cos"][i] + s * b["r_sin"][i] + b["d"] * b["r_d"][i] for i in range(3))
    if "rot" in b:  # the first sub-joint of a multi-DoF joint (Schedule)
        e, r = matmul(b["rot"], e), add(r, b["shift"])
    return e, r


def poses(tree: Tree, inputs: dict, dtype) -> tuple[tuple, tuple]:
    """The rotations (rows of ``A_i^(0)``, base from body) and origins (``^0 d_i``) of the bodies of
    the :func:`~kronjax._spatial.expansion.expanded` tree in the base frame, from their
    :func:`joint_inputs`: child from parent ``R_i = R_parent E^T``, ``p_i = p_parent + R_parent r``
    (:func:`joint_transform`). Components of ``(nb,)`` arrays."""

    def step(parent, b):
        pose = child_pose(parent, *joint_transform(b))
        return pose, pose

    zero, one = jnp.zeros((), dtype), jnp.ones((), dtype)
    eye = tuple(tuple(one if i == j else zero for j in range(3)) for i in range(3))
    order = schedule(tree)
    out = down(order, step, (eye, (zero, zero, zero)), split(order, inputs))
    return jax.tree.map(lambda *x: jnp.concatenate(x), *out)


def frames(tree: Tree, q: Array, dtype) -> dict:
    """Forward kinematics of a tree in the base frame, per body of the
    :func:`~kronjax._spatial.expansion.expanded` tree (components of ``(nb,)`` arrays).

    Returns ``R`` and ``p`` (:func:`poses`), ``w`` and ``t`` (the joint's motion subspace in base
    axes: ``R s_w``, ``R s_v``; zero at fixed joints), and ``moving`` (numpy mask of the bodies
    whose joint has a coordinate).
    """
    inputs, moving = joint_inputs(tree, q, dtype)
    rot, origin = poses(tree, inputs, dtype)
    return dict(R=rot, p=origin, w=mul(rot, inputs["s_w"]), t=mul(rot, inputs["s_v"]), moving=moving)


def base_frame(model: Model, q: Array):
    """Motion axes ``S = (S_w, S_v)`` of the joints and the bodies' rigid inertias ``(a, h, m)``
    (:mod:`~kronjax._spatial.algebra`) in the base frame, about the base origin, per body of the
    :func:`~kronjax._spatial.expansion.expanded` tree: ``a = R I R^T - m [c][c]``, ``h = m c``
    (``c``: the centre of mass in the base frame), all additive over bodies."""
    tree: Tree = model.kinematics
    dtype = jnp.result_type(q, tree.axes, model.inertials.mass)
    inputs, _ = bodies(model, q, dtype)
    rotation, origin = poses(tree, inputs, dtype)
    # S in the base frame: (R s_w, R s_v + p x R s_w) from the body-frame subspace (s_w, s_v)
    s_w = mul(rotation, inputs["s_w"])
    s_v = add(mul(rotation, inputs["s_v"]), cross(origin, s_w))
    mass = inputs["mass"]
    centre = add(origin, mul(rotation, inputs["com"]))
    inertia = matmul(matmul(rotation, inputs["inertia"]), transpose(rotation))
    rotational, _, _ = spatial_inertia(mass, centre, inertia)
    return (s_w, s_v), (rotational, scale(centre, mass), mass)
