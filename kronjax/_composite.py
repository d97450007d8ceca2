"""M, dM/dq and g of a joint tree from composite rigid bodies, in O(n^2), O(n^3) and O(n) (private).

The papers assemble ``dM/dq`` from every body's Jacobian and Hessian (Tuan 95, 9), which costs
``O(nb n^3)``. For a :class:`~kronjax.chain.Tree` the same numbers follow from composite rigid
bodies (the Christoffel structure of ``M``). Everything is in the base frame, as spatial vectors
about the base origin (angular part first): joint ``j``'s motion axis ``S_j`` (``(a, p x a)``
for a revolute joint through ``p`` about ``a``, ``(0, a)`` for a prismatic one), each body's
spatial inertia ``I_b``, and the composite inertia ``Ic_j = sum of I_b over the subtree of j``
(a sum, because all ``I_b`` are about the same point in the same axes). Then (``i ⪯ j``: joint
``i`` is ``j`` or one of its ancestors; ``F_j = Ic_j S_j``)::

    M[i, j] = S_i . F_j                                      (i ⪯ j; symmetric; 0 off-branch)

and, as a rigid motion of joint ``k`` moves ``S_j`` by ``S_k x S_j`` and a spatial inertia by
``S_k x* I - I S_k x``, with ``S_i . (S_k x* f) = -(S_k x S_i) . f``::

    dM[i, j]/dq_k = -(S_k x S_i) . F_j                       (i ≺ k ⪯ j: k between i and j)
                  = -(S_k x S_i) . Ic_k S_j - Ic_k S_i . (S_k x S_j)   (j ≺ k: k below j)
                  = 0                                        (k ⪯ i, or k off the path)

The first case is the whole subtree of ``j`` (with ``S_j``) turning about ``S_k``; the second,
the part of ``Ic_j`` below ``k`` turning inside it; ``M[i, j]`` is invariant when everything
turns (``k ⪯ i``). Each of the ``n^3`` entries is a few 6-vector dot products: ``O(n^3)``,
computed as three tensor contractions over static ancestry masks. Gravity: ``g_j = -S_j .
Ic_j (0, g0)``, the power of the subtree's weight.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .calculus import skew
from .chain import Model, Tree


@functools.lru_cache(maxsize=64)
def _ancestry(parents: tuple[int, ...], kinds: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """Static masks of a tree: ``below[j, b]`` (body ``b`` is joint ``j``'s body or under it,
    over the moving joints ``j``), ``upto[i, j]`` (``i ⪯ j``), ``strict[i, j]`` (``i ≺ j``)."""
    nb = len(parents)
    below_body = np.eye(nb, dtype=bool)
    for b in range(nb - 1, -1, -1):  # parents precede children
        if parents[b] >= 0:
            below_body[parents[b]] |= below_body[b]
    moving = np.array([kind != "F" for kind in kinds])
    below = below_body[moving]
    upto = below[:, moving]
    strict = upto & ~np.eye(upto.shape[0], dtype=bool)
    return below, upto, strict, np.flatnonzero(moving)


def _cross_motion(s: Array, t: Array) -> Array:
    """Spatial motion cross product ``s x t`` of ``(..., 6)`` vectors (angular part first)."""
    sw, sv, tw, tv = s[..., :3], s[..., 3:], t[..., :3], t[..., 3:]
    return jnp.concatenate([jnp.cross(sw, tw), jnp.cross(sw, tv) + jnp.cross(sv, tw)], axis=-1)


def _spatial(model: Model, q: Array) -> tuple[Array, Array, tuple[np.ndarray, ...]]:
    """Motion axes ``S`` (``(n, 6)``) and composite inertias ``Ic`` (``(n, 6, 6)``) in the base frame."""
    tree: Tree = model.kinematics
    ine = model.inertials
    masks = _ancestry(tree.parents, tree.kinds)
    below, _, _, moving = masks
    rotations, origins = model.poses(q)
    dtype = rotations.dtype
    # joint frame = body frame · Post^-1; a joint's axis and point do not move with its own q
    joint_r = rotations @ jnp.swapaxes(tree.post_rotation.astype(dtype), 1, 2)
    joint_p = origins - jnp.einsum("bij,bj->bi", joint_r, tree.post_translation.astype(dtype))
    axis = jnp.einsum("bij,bj->bi", joint_r, tree.axes.astype(dtype))[moving]
    revolute = np.array([tree.kinds[b] == "R" for b in moving])[:, None]
    s = jnp.where(
        revolute,
        jnp.concatenate([axis, jnp.cross(joint_p[moving], axis)], axis=1),
        jnp.concatenate([jnp.zeros_like(axis), axis], axis=1),
    )
    mass = ine.mass.astype(dtype)
    centre = origins + jnp.einsum("bij,bj->bi", rotations, ine.com.astype(dtype))
    inertia = rotations @ ine.inertia.astype(dtype) @ jnp.swapaxes(rotations, 1, 2)
    cx = mass[:, None, None] * skew(centre)
    body = jnp.concatenate(
        [
            jnp.concatenate([inertia - cx @ skew(centre), cx], axis=2),
            jnp.concatenate([-cx, mass[:, None, None] * jnp.eye(3, dtype=dtype)], axis=2),
        ],
        axis=1,
    )
    composite = jnp.einsum("jb,bxy->jxy", below.astype(dtype), body)
    return s, composite, masks


def _symmetric_from_upto(upper: Array, upto: np.ndarray) -> Array:
    """``X[i, j]`` from the ``i ⪯ j`` entries of ``upper`` and ``X[j, i] = X[i, j]`` (leading axes)."""
    n = upto.shape[0]
    mirrored = upto.T & ~np.eye(n, dtype=bool)
    trailing = (1,) * (upper.ndim - 2)
    return jnp.where(upto.reshape(n, n, *trailing), upper, 0) + jnp.where(
        mirrored.reshape(n, n, *trailing), jnp.swapaxes(upper, 0, 1), 0
    )


def mass_matrix(model: Model, q: Float[Array, " n"]) -> Float[Array, "n n"]:
    s, composite, (_, upto, _, _) = _spatial(model, q)
    f = jnp.einsum("jxy,jy->jx", composite, s)
    return _symmetric_from_upto(s @ f.T, upto)


def mass_matrix_derivative(model: Model, q: Float[Array, " n"]) -> Float[Array, "n n n"]:
    """``D[i, j, k] = dM[i, j]/dq_k``."""
    s, composite, (_, upto, strict, _) = _spatial(model, q)
    n = s.shape[0]
    g = jnp.einsum("kxy,jy->kjx", composite, s)  # G[k, j] = Ic_k S_j
    f = g[np.arange(n), np.arange(n)]  # F_j = G[j, j] = Ic_j S_j
    x = _cross_motion(s[:, None, :], s[None, :, :])  # X[k, i] = S_k x S_i
    between = upto[:, :, None] & strict[:, None, :] & upto.T[None, :, :]  # i ⪯ j, i ≺ k, k ⪯ j
    under = upto[:, :, None] & strict[None, :, :]  # i ⪯ j, j ≺ k
    first = -jnp.einsum("kix,jx->ijk", x, f)
    p = jnp.einsum("kix,kjx->kij", x, g)  # (S_k x S_i) . Ic_k S_j
    second = -jnp.transpose(p + jnp.swapaxes(p, 1, 2), (1, 2, 0))
    upper = jnp.where(between, first, 0) + jnp.where(under, second, 0)
    return _symmetric_from_upto(upper, upto)


def gravity(model: Model, q: Float[Array, " n"]) -> Float[Array, " n"]:
    s, composite, _ = _spatial(model, q)
    weight = jnp.concatenate([jnp.zeros(3, s.dtype), model.gravity.astype(s.dtype)])
    return -jnp.einsum("jx,jxy,y->j", s, composite, weight)
