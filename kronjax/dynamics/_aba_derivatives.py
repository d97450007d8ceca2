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
from . import _aba
from ._rnea_derivatives import acceleration_stage, forces, result_dtype, rnea_cotangent, velocity_stage
from ._rnea_hessian import rnea_hessian


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


def aba_cotangent(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], tau: Float[Array, " nv"], mu: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, " nv"], Float[Array, " nv"]]:
    """``(μ^T dvd/dq, μ^T dvd/dqd, μ^T M^-1)``, the gradient of ``μ^T vd``: ``-λ^T dtau/d(q, qd)``
    at ``vd`` and ``λ = M^-1 μ`` (:func:`~kronjax.dynamics._rnea_derivatives.rnea_cotangent`),
    without the matrices ``dvd/d(q, qd)`` or ``M^-1``: ``vd`` and ``λ`` by the articulated-body
    algorithm, ``λ`` as the accelerations under the torques ``μ`` at rest without gravity (the
    unrolled Cholesky factorisation of ``M`` compiles for a minute at ``nv = 35``)."""
    vd = _aba.aba(model, q, v, tau)[0]
    at_rest = eqx.tree_at(lambda m: m.gravity, model, jnp.zeros_like(model.gravity))
    lam = _aba.aba(at_rest, q, jnp.zeros_like(v), mu)[0]
    dq, dqd, _ = rnea_cotangent(model, q, v, vd, lam)
    return -dq, -dqd, lam


def forward_hessian(
    vd_q: Float[Array, "nv nv"],
    vd_v: Float[Array, "nv nv"],
    minv: Float[Array, "nv nv"],
    hessian: Float[Array, "2*nv 2*nv"],
    vd_q_block: Float[Array, "nv nv"],
) -> tuple[Float[Array, "2*nv 2*nv"], Float[Array, "nv nv"]]:
    """The Hessian of ``μ^T vd`` and its ``tau``-``q`` block (``[j, k] = μ^T d(M^-1)[:, j] /
    dq_k``), from ``dvd/dq``, ``dvd/dv``, ``M^-1`` and the Hessian of ``λ^T tau`` at ``λ = M^-1 μ``
    (``(hessian, vd_q_block)`` of :func:`~kronjax.dynamics._rnea_hessian.rnea_hessian`).
    ``tau(q, v, vd(q, v, tau)) = tau`` differentiated twice (Singh, Russell and Wensing, T-RO):
    ``μ^T d2vd/dx dy = -(λ^T d2tau/dx dy + λ^T dM/dx dvd/dy + λ^T dM/dy dvd/dx)``; the chain
    rule's terms are symmetric, so a ``(q, q)`` block in either order stays in that order."""
    mass_q = vd_q_block.T  # [k, j] = λ^T dM[:, j] / dq_k
    through_q, through_v = mass_q @ vd_q, mass_q @ vd_v
    zero = jnp.zeros_like(minv)
    coupling = jnp.block([[through_q + through_q.T, through_v], [through_v.T, zero]])
    return -(hessian + coupling), -(minv @ vd_q_block)


def aba_hessian(
    model: Model,
    q: Float[Array, " nq"],
    v: Float[Array, " nv"],
    tau: Float[Array, " nv"],
    mu: Float[Array, " nv"],
    symmetric: bool = True,
) -> tuple[Float[Array, "2*nv 2*nv"], Float[Array, "nv nv"]]:
    """:func:`forward_hessian` of a :class:`~kronjax.chain.Tree` model at one state (``symmetric``
    as :func:`~kronjax.dynamics._rnea_hessian.rnea_hessian`'s)."""
    vd, dq, dqd, minv, _ = aba_derivatives(model, q, v, tau)
    hessian, vd_q_block = rnea_hessian(model, q, v, vd, minv @ mu.astype(minv.dtype), symmetric)
    return forward_hessian(-minv @ dq, -minv @ dqd, minv, hessian, vd_q_block)


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
