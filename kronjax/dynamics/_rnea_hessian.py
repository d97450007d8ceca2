"""The Hessian of ``λ^T tau`` of inverse dynamics (RNEA) of a joint tree, without the tensors
(private).

The algorithm is the λ-contracted second-order derivative of Singh, Russell and Wensing
(arXiv:2203.01497, sec. VI; their Pinocchio fork's ``computeModRNEASecondOrderDerivatives``),
written on the quantities of :mod:`kronjax.dynamics._rnea_derivatives` (world frame, composite
bodies, one coordinate per 1-DoF sub-joint). ``λ^T tau = sum_b w_b . f_b`` with the *λ-velocity*
``w_b = sum_{j ⪯ b} S_j λ_j`` of each body, so that ``λ`` enters as a second velocity: per body
``h_b = I_b w_b``, ``z_b = B_b^T w_b`` and ``D_b = B(I_b, -w_b)`` (``B`` of the module above, with
``-w_b`` for ``v_b``), their composites ``hc_j``, ``zc_j``, ``Dc_j`` over the subtree of ``j``, and
per coordinate ``Ω_j = w_λ(j) x S_j`` beside ``dV_j``, ``dA_j``, ``dAv_j``. Seven force columns::

    F2_j = Bc_j S_j + Ic_j dAv_j                  F5_j = Dc_j^T S_j
    F3_j = Bc_j dV_j + Ic_j dA_j + S_j x* F_j     F7_j = Ic_j Ω_j + S_j x* hc_j
    F6_j = Dc_j dV_j + Bc_j^T Ω_j + 2 dV_j x* hc_j + S_j x* zc_j
    F8_j = Ic_j S_j

give every entry as one sum of dot products of a pair ``j ⪯ k`` (``k`` in the subtree of ``j``,
the coordinates of one joint each other's ancestors)::

    d2/dq_k dq_j  = F3_k . Ω_j + F6_k . dV_j + F7_k . dA_j          (symmetric)
    d2/dv_k dv_j  = S_j . F5_k  (+ (S_j x* hc_j) . S_k in a joint)   (symmetric)
    d2/dq_j dv_k  = Ω_j . F2_k + dV_j . F5_k
    d2/dq_k dv_j  = F6_k . S_j + F7_k . dAv_j                       (k strictly below j)
    d2/dq_k dvd_j = F7_k . S_j  (- (S_k x* hc_k) . S_j in a joint)
    d2/dq_j dvd_k = Ω_j . F8_k                                       (k strictly below j)

so that the whole Hessian costs a few ``n x n`` masked products, like the first-order derivatives.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._spatial.algebra import add, cross, cross_force, cross_motion, pairs, rigid_inertia_times, scale
from .._spatial.expansion import expansion, reduce
from ..chain import Model
from ._rnea_derivatives import (
    masked,
    velocity_matrix,
    velocity_term,
    velocity_term_transposed,
    weighted_stage,
)


def _zero_linear(angular):
    return angular, tuple(jnp.zeros_like(c) for c in angular)


@functools.lru_cache(maxsize=64)
def _cached_weights(upto_bytes: bytes, n: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    upto = np.frombuffer(upto_bytes, dtype=bool).reshape(n, n)
    joint = upto & upto.T
    strict = upto & ~joint
    # (q, v) and (v, v): rows . columns; (v, q): columns . rows (its transpose). Within a joint's
    # (q, q) block rows_j . columns_k is d/dq_j (λ^T dtau/dq_k): the mean of both orders, or
    # columns_j . rows_k = d/dq_k (λ^T dtau/dq_j)
    mean = joint / 2 if symmetric else 0
    down = np.block([[strict + mean, upto], [strict, upto]])
    up = np.block([[strict.T + (mean if symmetric else joint), strict.T], [upto.T, strict.T]])
    return down, up


def _weights(upto: np.ndarray, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """Static weights of ``rows_j . columns_k`` and ``columns_j . rows_k`` in the ``(2n, 2n)``
    Hessian, from ``upto[j, k]``: ``k ⪰ j``."""
    return _cached_weights(np.ascontiguousarray(upto).tobytes(), upto.shape[0], symmetric)


@eqx.filter_jit
def rnea_hessian(
    model: Model,
    q: Float[Array, " nq"],
    v: Float[Array, " nv"],
    vd: Float[Array, " nv"],
    lam: Float[Array, " nv"],
    symmetric: bool = True,
) -> tuple[Float[Array, "2*nv 2*nv"], Float[Array, "nv nv"]]:
    """The Hessian of ``λ^T tau`` in ``(q, v)`` and ``[j, k] = d2/dvd_j dq_k = λ^T dM[:, j] /
    dq_k`` of a :class:`~kronjax.chain.Tree` model at one state (module doc). The ``(q, q)`` block
    symmetrised, or with ``symmetric=False`` ``[j, k] = d/dq_k (λ^T dtau/dq_j)``, the derivative
    of the gradient along ``q ⊕ xi`` (they differ only within a free or spherical joint). Every block is written in its own orientation, never as a transpose of
    another: under ``vmap`` a transposed ``(batch, n, n)`` array costs more than the products."""
    tree, k, da, f3, full = weighted_stage(model, q, v, vd, lam)
    below, upto, strict = k["masks"]
    s, inertia, ic, dv = k["s"], k["inertia"], k["ic"], k["dv"]
    sl = scale(s, full)
    w_body = masked(below.T, sl)
    h = rigid_inertia_times(inertia, w_body)
    z = velocity_term_transposed(k["y"], k["p"], w_body)  # its linear part is zero
    hc, zc, ywc = masked(below, (h, z, velocity_matrix(inertia, w_body)))
    omega = cross_motion(masked(strict.T, sl), s)
    f5 = _zero_linear(scale(velocity_term_transposed(ywc, hc, s), -1))
    f6 = add(
        scale(velocity_term(ywc, hc, dv), -1),
        _zero_linear(velocity_term_transposed(k["yc"], k["pc"], omega)),
        scale(cross_force(dv, hc), 2),
        (cross(s[0], zc), tuple(jnp.zeros_like(c) for c in zc)),  # S x* (zc, 0)
    )
    f7 = add(rigid_inertia_times(ic, omega), cross_force(s, hc))
    zero = tuple(jnp.zeros_like(c) for c in s[0])
    zero = (zero, zero)
    # Per entry of the Hessian at [x, y], coordinates j (row) and k (column): ``rows_j .
    # columns_k`` where k ⪰ j, ``columns_j . rows_k`` where k ≺ j (module doc), the q and v
    # halves stacked so that the whole (2n, 2n) Hessian is one elementwise pass: under ``vmap``
    # its cost is writing the output, and blocks written apart and joined cost twice that.
    stack = lambda *halves: jax.tree.map(lambda *c: jnp.concatenate(c, -1), *halves)  # noqa: E731
    rows = (stack(omega, zero), stack(dv, s), stack(da, k["dav"]))
    columns = (stack(f3, k["dfdv"]), stack(f6, f5), stack(f7, zero))
    weights = _weights(upto, symmetric)
    hessian = weights[0] * pairs(rows, columns) + weights[1] * pairs(columns, rows)
    below_joint = upto & upto.T
    joint_term = jnp.where(below_joint, pairs(cross_force(s, hc), s), 0)  # (S_j x* hc_j) . S_k
    vd_q = jnp.where(upto, pairs(s, f7) + joint_term, 0) + jnp.where(strict.T, pairs(k["fa"], omega), 0)
    if tree.has_multi_dof:  # (S_j x* hc_j) . S_k is zero for j = k
        n = upto.shape[0]
        hessian = hessian.at[n:, n:].add(joint_term)
    if expansion(tree).reduction is None:
        return hessian, vd_q
    n = upto.shape[0]
    blocks = [[reduce(tree, hessian[r : r + n, c : c + n], (0, 1)) for c in (0, n)] for r in (0, n)]
    return jnp.block(blocks), reduce(tree, vd_q, (0, 1))
