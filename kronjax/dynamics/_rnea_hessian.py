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

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._spatial.algebra import add, cross_force, cross_motion, rigid_inertia_times, scale
from .._spatial.expansion import full_velocities, reduce
from ..chain import Model
from ._rnea_derivatives import (
    acceleration_columns,
    forces,
    masked,
    pairs,
    result_dtype,
    velocity_matrix,
    velocity_stage,
    velocity_term,
    velocity_term_transposed,
)


def _zero_linear(angular):
    return angular, tuple(jnp.zeros_like(c) for c in angular)


@eqx.filter_jit
def rnea_hessian(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], vd: Float[Array, " nv"], lam: Float[Array, " nv"]
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """``(qq, qv, vv, qa)`` blocks of the Hessian of ``λ^T tau`` of a :class:`~kronjax.chain.Tree`
    model at one state (module doc): ``qq[j, k] = d2/dq_j dq_k``, ``qv[j, k] = d2/dq_j dv_k``,
    ``vv[j, k] = d2/dv_j dv_k``, ``qa[k, j] = d2/dq_k dvd_j = λ^T dM[:, j] / dq_k``; ``qq`` as the
    algorithm gives it (within a free or spherical joint not symmetric)."""
    dtype = result_dtype(model, q, v, vd, lam)
    tree = model.kinematics
    q, v, vd, lam = (x.astype(dtype) for x in (q, v, vd, lam))
    k = velocity_stage(model, q, full_velocities(tree, v), dtype)
    a_parent, fc, _ = forces(model, k, full_velocities(tree, vd))
    da, f3 = acceleration_columns(k, a_parent, fc)
    below, _, strict, lower, above = k["masks"]
    s, inertia, ic, dv = k["s"], k["inertia"], k["ic"], k["dv"]
    sl = scale(s, full_velocities(tree, lam))
    w_body = masked(below.T, sl)
    h = rigid_inertia_times(inertia, w_body)
    z = _zero_linear(velocity_term_transposed(k["y"], k["p"], w_body))
    hc, zc, ywc = masked(below, (h, z, velocity_matrix(inertia, w_body)))
    neg = lambda x: scale(x, -1)  # noqa: E731
    omega = cross_motion(masked(strict.T, sl), s)
    hs = cross_force(s, hc)
    f5 = neg(_zero_linear(velocity_term_transposed(ywc, hc, s)))
    f6 = add(
        neg(velocity_term(ywc, hc, dv)),
        _zero_linear(velocity_term_transposed(k["yc"], k["pc"], omega)),
        scale(cross_force(dv, hc), 2),
        cross_force(s, zc),
    )
    f7 = add(rigid_inertia_times(ic, omega), hs)
    in_joint = jnp.logical_and(lower, lower.T)
    joint_term = jnp.where(in_joint, pairs(hs, s), 0)  # [j, k] = (S_j x* hc_j) . S_k
    qq = pairs((f3, f6, f7), (omega, dv, da))
    qq = jnp.where(lower, qq, 0) + jnp.where(above, qq.T, 0)
    vv = pairs(s, f5) + joint_term
    vv = jnp.where(lower.T, vv, 0) + jnp.where(above.T, vv.T, 0)
    qv = jnp.where(lower.T, pairs((omega, dv), (k["dfdv"], f5)), 0)
    qv = qv + jnp.where(above.T, pairs((f6, f7), (s, k["dav"])), 0)
    qa = jnp.where(lower, pairs(f7, s) - joint_term, 0) + jnp.where(above, pairs(omega, k["fa"]), 0)
    return tuple(reduce(tree, x, (0, 1)) for x in (qq, qv, vv, qa))
