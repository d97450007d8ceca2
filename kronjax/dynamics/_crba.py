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
computed from ``n x n`` factors broadcast over static ancestry masks. Gravity: ``g_j = -S_j .
Ic_j (0, g0)``, the power of the subtree's weight.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._spatial.algebra import (
    cross,
    cross_motion,
    dot,
    expand_dims,
    rigid_inertia_times,
    scale,
)
from .._spatial.expansion import reduce
from .._spatial.frames import base_frame
from .._spatial.traversal import ancestry, on_paths
from ..chain import Model, Tree


def _composite(model: Model, q: Array):
    """``S`` of the moving joints and the composite inertias ``Ic_j = (a, h, m)`` of their subtrees."""
    tree: Tree = model.kinematics
    below, upto, strict, moving = ancestry(tree)
    s, body = base_frame(model, q)
    s = jax.tree.map(lambda x: x[moving], s)
    composite = jax.tree.map(lambda x: below.astype(x.dtype) @ x, body)
    return s, composite, (upto, strict)


@eqx.filter_jit
def mass_matrix(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv"]:
    s, composite, (upto, _) = _composite(model, q)
    f = rigid_inertia_times(composite, s)  # F_j
    return reduce(model.kinematics, on_paths(upto, (s, f), (f, s), joint="ancestor"), (0, 1))


# Up to this many joints dM/dq and C* are assembled from unrolled per-column blocks (compile time
# grows with n: 4 s at n = 48; ~5.5 ns per entry of C* at batch 10^3 on 2 cores); beyond, from a
# loop over the columns (constant compile time, ~4x slower).
UNROLLED_COLUMNS = 64


def _columns(model: Model, q: Array, combine) -> Array:
    """``[combine(D_0), ..., combine(D_{n-1})]`` side by side (``n x n^2``), where ``D_j[i, k] =
    dM[i, j]/dq_k``.

    Symmetrised, the three cases of the module doc are disjoint in ``k`` (``X[k, i] = S_k x S_i``,
    ``G[k, j] = Ic_k S_j``, ``F_j = G[j, j]``)::

        dM[i, j]/dq_k = -X[k, i] . F_j                          (i ≺ k ⪯ j)
                      = -X[k, j] . F_i                          (j ≺ k ⪯ i)
                      = -X[k, i] . G[k, j] - X[k, j] . G[k, i]  (i ≺ k and j ≺ k)

    Each ``D_j`` is formed from ``n x n`` factors and ``combine`` sees it whole, so ``C*`` needs
    only ``D_j - D_j^T / 2`` per column: no ``n^3`` array is transposed or reshaped, which XLA:CPU
    does with slow per-element index arithmetic.
    """
    s, composite, (upto, strict) = _composite(model, q)
    x = jax.tree.leaves(cross_motion(expand_dims(s, 1), expand_dims(s, 0)))
    g = jax.tree.leaves(rigid_inertia_times(expand_dims(composite, 1), expand_dims(s, 0)))
    f = jax.tree.leaves(rigid_inertia_times(composite, s))
    n = upto.shape[0]
    upto_rows, strict_rows = jnp.asarray(upto.T), jnp.asarray(strict)  # row j: upto[:, j], strict[j]

    def terms(j, cols: slice, cases: tuple[str, ...]) -> Array:
        """``D_j[:, cols]`` from the named cases only."""
        x_ik = [a.T[:, cols] for a in x]  # X[k, i] at [i, k]
        x_jk = [a[cols, j][None, :] for a in x]  # X[k, j] along k
        out = 0
        if "between" in cases:  # i ≺ k ⪯ j
            mask = strict[:, cols] & upto_rows[j][None, cols]
            out = out + jnp.where(mask, sum(a * b[j] for a, b in zip(x_ik, f)), 0)
        if "beyond" in cases:  # j ≺ k ⪯ i
            mask = strict_rows[j][None, cols] & upto.T[:, cols]
            out = out + jnp.where(mask, sum(a * b[:, None] for a, b in zip(x_jk, f)), 0)
        if "below" in cases:  # i ≺ k, j ≺ k
            mask = strict[:, cols] & strict_rows[j][None, cols]
            products = (a * b[cols, j][None, :] + a_j * b.T[:, cols] for a, a_j, b in zip(x_ik, x_jk, g))
            out = out + jnp.where(mask, sum(products), 0)
        return -out

    if n <= UNROLLED_COLUMNS:
        # parents precede children and the coordinates of a multi-DoF joint are consecutive, so
        # k ⪯ j gives k <= end(j), the last coordinate of j's joint, and j ≺ k gives k > end(j): the
        # columns k <= end(j) of D_j hold only the first case, the others only the last two
        same = upto & upto.T
        end = [int(np.flatnonzero(same[j])[-1]) + 1 for j in range(n)]
        blocks = [
            [terms(j, slice(0, end[j]), ("between",))] + ([terms(j, slice(end[j], n), ("beyond", "below"))] if end[j] < n else [])
            for j in range(n)
        ]
        return jnp.concatenate([combine(jnp.concatenate(b, axis=1)) for b in blocks], axis=1)
    column = lambda j: combine(terms(j, slice(None), ("between", "beyond", "below")))  # noqa: E731
    return jnp.transpose(jax.lax.map(column, jnp.arange(n)), (1, 0, 2)).reshape(n, n * n)


@eqx.filter_jit
def mass_matrix_derivative(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv*nv"]:
    """``dM/dq`` in Khang's layout: entry ``(i, j n + k) = dM[i, j]/dq_k`` (along the velocity
    coordinates with multi-DoF joints)."""
    dm = _columns(model, q, lambda d: d)
    if model.kinematics.has_mimic:
        n = dm.shape[0]
        dm = reduce(model.kinematics, dm.reshape(n, n, n), (0, 1, 2))
        dm = dm.reshape(dm.shape[0], -1)
    return dm


@eqx.filter_jit
def coriolis_star(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv*nv"]:
    """``C*``, entry ``(i, j n + k) = dM[i, j]/dq_k - 1/2 dM[k, j]/dq_i`` (Tuan 101); models with
    independent 1-DoF joints only (:func:`kronjax.dynamics.coriolis_star` handles the others)."""
    return _columns(model, q, lambda d: d - 0.5 * d.T)


@eqx.filter_jit
def gravity(model: Model, q: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """``g_j = -S_j . Ic_j (0, g0) = -(S_w . h x g0 + S_v . m g0)``."""
    s, (_, h, m), _ = _composite(model, q)
    g0 = tuple(model.gravity.astype(m.dtype))
    return reduce(model.kinematics, -(dot(s[0], cross(h, g0)) + dot(s[1], scale(g0, m))), (0,))
