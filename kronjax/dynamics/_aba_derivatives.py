"""Analytical derivatives of forward dynamics of a joint tree (private).

Forward dynamics (Carpentier and Mansard sec. V): ``dqdd/d(q, v) = -M^-1 dtau/d(q, v)`` at ``(q, v, vd)`` and ``dqdd/dtau = M^-1``.
The forces of :mod:`kronjax.dynamics._rnea_derivatives` are affine in ``vd``, so the bias
``b(q, v)`` is ``tau`` at ``vd = 0`` and no articulated-body pass is needed: ``M`` comes from the
same composite bodies and is inverted by a factorisation unrolled over its entries, Featherstone's
sparse ``L^T D L`` along the tree (:func:`tree_spd_inverse`), or a dense Cholesky factorisation
(:func:`spd_inverse`) for small models and with mimic joints, whose ``M`` couples coordinates
across branches.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._spatial.expansion import full_velocities, reduce
from .._spatial.traversal import ancestry, coordinate_parents
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
    mass = with_armature(model, reduce(tree, k["mass"], (0, 1)))
    if tree.has_mimic or model.nv <= UNROLLED_UP_TO:
        minv, pivots = spd_inverse(mass)
    else:
        minv, pivots = tree_spd_inverse(mass, coordinate_parents(ancestry(tree).upto))
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
    algorithm, ``λ`` as the accelerations under the torques ``μ`` at rest without gravity (no
    factorisation of ``M`` in the program)."""
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


# Up to this many coordinates (or with mimic joints) the dense Cholesky factorisation unrolled over
# its entries: it compiles in under 2 s and runs about 10 % faster than tree_spd_inverse (which on
# a chain is as dense); above, its program grows as n^3 (56 s of the humanoid's 58 s compile)
UNROLLED_UP_TO = 12


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


def tree_spd_inverse(m: Float[Array, "n n"], parents: tuple[int, ...]) -> tuple[Float[Array, "n n"], Float[Array, " n"]]:
    """``(M^-1, pivots)`` of a symmetric positive-definite ``M`` with the sparsity of a tree
    (``M[i, j]`` zero unless one of ``i, j`` is the other's ancestor; ``parents`` of
    :func:`coordinate_parents`), by Featherstone's ``M = L^T D L`` factorisation ("Rigid Body
    Dynamics Algorithms", sec. 6.5): eliminating from the leaves up creates no fill-in, so ``L``
    and ``X = L^-1`` (unit lower triangular) have the tree's sparsity. Each row is kept as a
    vector over the coordinate's chain of ancestors (itself first), where the ancestors of an
    ancestor are a tail of the chain, so every step is one vector operation: on the G1 (nv 35)
    about a thousand operations, where :func:`spd_inverse` unrolls twenty thousand. ``M^-1 = X
    D^-1 X^T`` is one product. The pivots ``D`` are all positive iff ``M`` is positive definite."""
    n = m.shape[0]
    chain = _chains(parents)
    rows = [m[i, np.array(chain[i])] for i in range(n)]  # row i of the lower triangle on its chain
    for k in range(n - 1, -1, -1):  # row k is final once its descendants, all after it, are eliminated
        pivot = rows[k][0]
        for depth, i in enumerate(chain[k][1:], start=1):  # rows[k][depth:] lies on chain[i]
            a = rows[k][depth] / pivot
            rows[i] = rows[i] - a * rows[k][depth:]
            rows[k] = rows[k].at[depth].set(a)  # L[k, i]; the pivot stays in front
    pivots = jnp.stack([r[0] for r in rows])
    # X = L^-1 on the same chains: X[k, i] = -(L[k, i] + sum over m between (i ≺ m ≺ k) of
    # L[k, m] X[m, i]), row k from the rows of its ancestors, whose chains are its tails
    inverse = []
    for k in range(n):
        x = -rows[k][1:]
        for depth in range(1, len(chain[k]) - 1):
            x = x.at[depth:].add(-rows[k][depth] * inverse[chain[k][depth]])
        inverse.append(x)
    flat = jnp.concatenate([*inverse, jnp.ones((1,), m.dtype), jnp.zeros((1,), m.dtype)])
    x = flat[_inverse_layout(parents)]
    return (x / pivots) @ x.T, pivots


@functools.lru_cache(maxsize=64)
def _chains(parents: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Each coordinate and its ancestors, nearest first."""
    chain = []
    for i, p in enumerate(parents):
        chain.append((i, *chain[p]) if p >= 0 else (i,))
    return tuple(chain)


@functools.lru_cache(maxsize=64)
def _inverse_layout(parents: tuple[int, ...]) -> np.ndarray:
    """Where each entry of the dense ``X = L^-1`` is read from in :func:`tree_spd_inverse`'s rows
    (each over its coordinate's ancestors) concatenated, then a one and a zero."""
    n = len(parents)
    ancestors = [list(c[1:]) for c in _chains(parents)]
    offsets = np.cumsum([0] + [len(a) for a in ancestors])
    index = np.full((n, n), offsets[-1] + 1)
    for k in range(n):
        index[k, k] = offsets[-1]
        index[k, ancestors[k]] = offsets[k] + np.arange(len(ancestors[k]))
    return index
