"""Analytical derivatives of forward dynamics of a joint tree (private).

Forward dynamics (Carpentier and Mansard sec. V): ``dqdd/d(q, v) = -M^-1 dtau/d(q, v)`` at ``(q, v, vd)`` and ``dqdd/dtau = M^-1``.
The forces of :mod:`kronjax.dynamics._rnea_derivatives` are affine in ``vd``, so the bias
``b(q, v)`` is ``tau`` at ``vd = 0`` and no articulated-body pass is needed: ``M`` comes from the
same composite bodies and is inverted by an unrolled Cholesky factorisation (:func:`spd_inverse`).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._spatial.expansion import full_velocities, reduce
from ..chain import Model
from ..chain._model import with_armature
from ._rnea_derivatives import acceleration_stage, forces, result_dtype, velocity_stage


@eqx.filter_jit
def aba_derivatives(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], tau: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, " nv"]]:
    """``(vd, dtau/dq, dtau/dqd, M^-1, pivots)`` at ``vd = M^-1 (tau - b(q, v))`` (the bias
    ``b`` is ``tau`` at ``vd = 0``; the forces are affine in ``vd``, so no articulated-body pass
    is needed), with the Cholesky pivots of ``M`` (all positive iff ``M`` is positive definite).
    ``dqdd/d(q, v) = -M^-1 dtau/d(q, v)`` (Carpentier and Mansard sec. V). The rotor inertias
    (:attr:`~kronjax.chain.Model.armature`) add ``A vd`` to ``tau`` and ``A`` to ``M``."""
    dtype = result_dtype(model, q, v, tau)
    tree = model.kinematics
    q, v, tau = (x.astype(dtype) for x in (q, v, tau))
    k = velocity_stage(model, q, full_velocities(tree, v), dtype)
    _, _, bias = forces(model, k, jnp.zeros_like(k["mass"][0]))
    minv, pivots = spd_inverse(with_armature(model, reduce(tree, k["mass"], (0, 1))))
    vd = minv @ (tau - reduce(tree, bias, (0,)))
    a_parent, fc, _ = forces(model, k, full_velocities(tree, vd))
    dq, dqd = (reduce(tree, x, (0, 1)) for x in (acceleration_stage(k, a_parent, fc), k["dtau_dqd"]))
    return vd, dq, dqd, minv, pivots


def spd_inverse(m: Float[Array, "n n"]) -> tuple[Float[Array, "n n"], Float[Array, " n"]]:
    """``(M^-1, pivots)`` of a symmetric positive-definite ``M`` by a Cholesky factorisation ``M =
    L L^T`` unrolled over its entries (``n`` is static and small): under ``vmap`` every entry is one
    batch array, where batched ``n x n`` factorisations and solves are slow on XLA:CPU. The pivots
    ``L_jj^2`` are all positive iff ``M`` is positive definite (else non-finite or <= 0)."""
    n = m.shape[0]
    entry = [[m[i, j] for j in range(n)] for i in range(n)]
    low = [[None] * n for _ in range(n)]
    pivots = []
    for j in range(n):
        pivots.append(entry[j][j] - sum(low[j][k] ** 2 for k in range(j)))
        low[j][j] = jnp.sqrt(pivots[-1])
        for i in range(j + 1, n):
            low[i][j] = (entry[i][j] - sum(low[i][k] * low[j][k] for k in range(j))) / low[j][j]
    inv = [[None] * n for _ in range(n)]  # L^-1
    for j in range(n):
        inv[j][j] = 1 / low[j][j]
        for i in range(j + 1, n):
            inv[i][j] = -sum(low[i][k] * inv[k][j] for k in range(j, i)) / low[i][i]
    upper = {(i, j): sum(inv[k][i] * inv[k][j] for k in range(j, n)) for i in range(n) for j in range(i, n)}
    out = jnp.stack([jnp.stack([upper[min(i, j), max(i, j)] for j in range(n)]) for i in range(n)])
    return out, jnp.stack(pivots)
