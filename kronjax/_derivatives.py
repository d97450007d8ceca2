"""Analytical derivatives of inverse and forward dynamics of a joint tree (private).

Carpentier and Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018
(sec. IV, the world-frame algorithm of Pinocchio's ``computeRNEADerivatives``). Everything is in
the base frame, as spatial vectors about the base origin (angular part first), in the scalar
components of :mod:`kronjax._spatial` (tuples of ``(n,)`` or ``(nb,)`` arrays, so that batches
vectorise), on the composite-body quantities of :mod:`kronjax._composite`.

Notation (``i ⪯ j``: joint ``i`` is ``j`` or one of its ancestors; ``λ(j)``: the body that joint
``j`` hangs from; ``x``, ``x*``: motion and force cross products). Joint ``j``'s axis ``S_j``,
body ``b``'s spatial inertia ``I_b``, velocity ``v_b = sum_{k ⪯ b} S_k qd_k`` and acceleration
``a_b = (0, -g0) + sum_{k ⪯ b} (S_k qdd_k + (v_k x S_k) qd_k)`` (gravity as an upward base
acceleration), momentum ``p_b = I_b v_b`` and net force ``f_b = I_b a_b + v_b x* p_b``; ``tau_j =
S_j . F_j`` with ``F_j`` the sum of ``f_b`` over the subtree of ``j``. A motion of joint ``j``
carries its subtree rigidly (``dS_k/dq_j = S_j x S_k``) but not ``v_λ(j)``, ``a_λ(j)``; the
paper's columns are::

    dV_j = v_λ(j) x S_j                        (dv/dq_j, Pinocchio's dVdq)
    dA_j = a_λ(j) x S_j + v_λ(j) x dV_j        (da/dq_j, dAdq)
    dAv_j = (v_j + v_λ(j)) x S_j               (da/dqd_j, dAdv)

and with ``B_b x = v_b x* I_b x - I_b (v_b x x) + x x* p_b`` (the derivative of ``f_b`` through
the velocity and the inertia's motion), composites ``Ic_j``, ``Bc_j`` over the subtree of ``j``::

    dtau_k/dq_j  = (Ic_k S_k) . dA_j  + (Bc_k^T S_k) . dV_j                     (j ⪯ k)
                 = S_k . (Bc_j dV_j + Ic_j dA_j + S_j x* F_j)                   (k ≺ j)
    dtau_k/dqd_j = (Ic_k S_k) . dAv_j + (Bc_k^T S_k) . S_j                       (j ⪯ k)
                 = S_k . (Bc_j S_j + Ic_j dAv_j)                                (k ≺ j)
    M[k, j]      = S_k . Ic_j S_j                                               (k ⪯ j; symmetric)

and zero off the paths. With ``I_b = [[a, [h]], -[h], m]]`` (``h = m c``), ``B_b`` acts on the
angular part alone: ``B_b (w, v) = (Y_b w + w x p_n, 2 w x p_f)`` with the symmetric ``Y_b = [w_b] a
+ ([w_b] a)^T - (h u^T + u h^T) + 2 (u . h) 1`` (``v_b = (w_b, u)``, ``p_b = (p_n, p_f)``), so
``Bc_j`` is 12 numbers: ``sum Y_b`` and the subtree's momentum ``sum p_b``; ``Bc^T S = (Yc S_w -
S_w x P_n - 2 S_v x P_f, 0)``.

Forward dynamics (Carpentier and Mansard sec. V): ``qdd`` by the articulated-body algorithm, then
``dqdd/d(q, qd) = -M^-1 dtau/d(q, qd)`` at ``(q, qd, qdd)`` and ``dqdd/dtau = M^-1``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import _composite
from . import _spatial as sp
from .chain import Model, Tree
from .chain._model import armature_force, with_armature


def _force_cross(v, f):
    """Spatial force cross product ``v x* f = (w x n + u x f', w x f')``."""
    (w, u), (n, f_) = v, f
    return sp.add(sp.cross(w, n), sp.cross(u, f_)), sp.cross(w, f_)


def _masked(mask: np.ndarray, x):
    """``mask @ x`` per component (``mask`` static, 0/1), written ``x @ mask^T`` so that under
    ``vmap`` it is one matrix product with the batch as rows, with no transpose of the output."""
    return jax.tree.map(lambda c: c @ mask.T.astype(c.dtype), x)


def _pairs(rows, cols) -> Array:
    """``out[k, j] = rows_k . cols_j`` over matching components (``(n,)`` each)."""
    return sum(r[:, None] * c[None, :] for r, c in zip(jax.tree.leaves(rows), jax.tree.leaves(cols)))


def _velocity_term(y, p, x_w):
    """``B x`` of an angular part ``x_w``, from ``Y`` and the momentum ``p = (p_n, p_f)``."""
    return sp.add(sp.mul(y, x_w), sp.cross(x_w, p[0])), sp.scale(sp.cross(x_w, p[1]), 2)


def _velocity_stage(model: Model, q: Array, qd: Array, dtype) -> dict:
    """Everything that does not depend on ``qdd``: ``S``, the inertias, velocities, ``Ic S``,
    ``Bc^T S``, ``M`` and ``dtau/dqd`` (module doc)."""
    tree: Tree = model.kinematics
    below, upto, strict, moving = _composite.ancestry(tree)
    s, inertia = _composite._base_frame(model, q)
    s = jax.tree.map(lambda x: x[moving].astype(dtype), s)
    a, h, m = inertia = jax.tree.map(lambda x: x.astype(dtype), inertia)
    sq = sp.scale(s, qd)
    v = _masked(upto.T, sq)  # v_j: velocity of joint j's body
    v_parent = _masked(strict.T, sq)
    v_body = _masked(below.T, sq)
    p = _composite._inertia_times(inertia, v_body)
    w, u = v_body
    wa = sp.cross_matrix(w, a)
    uh = sp.dot(u, h)
    y = sp.symmetric(lambda i, j: wa[i][j] + wa[j][i] - h[i] * u[j] - u[i] * h[j] + (2 * uh if i == j else 0))
    ic, pc, yc = _masked(below, (inertia, p, y))

    dv = _composite._cross_motion(v_parent, s)
    dav = _composite._cross_motion(sp.add(v, v_parent), s)
    fa = _composite._inertia_times(ic, s)  # Ic_j S_j
    s_w, s_v = s
    bts = sp.add(sp.mul(yc, s_w), sp.scale(sp.add(sp.cross(s_w, pc[0]), sp.scale(sp.cross(s_v, pc[1]), 2)), -1))
    dfdv = sp.add(_velocity_term(yc, pc, s_w), _composite._inertia_times(ic, dav))
    lower, above = jnp.asarray(upto.T), jnp.asarray(strict)  # j ⪯ k at [k, j]; k ≺ j
    dtau_dqd = jnp.where(lower, _pairs((fa, bts), (dav, s_w)), 0) + jnp.where(above, _pairs(s, dfdv), 0)
    return dict(
        s=s,
        inertia=inertia,
        v=v,
        v_parent=v_parent,
        v_body=v_body,
        p=p,
        ic=ic,
        pc=pc,
        yc=yc,
        dv=dv,
        fa=fa,
        bts=bts,
        masks=(below, upto, strict, lower, above),
        dtau_dqd=dtau_dqd,
        velocity_product=sp.scale(_composite._cross_motion(v, s), qd),  # (v_j x S_j) qd_j
        mass=_composite._symmetric_from_upto(_pairs(s, fa), upto),
    )


def _forces(model: Model, k: dict, qdd: Array):
    """Accelerations of the parents and composite forces ``F_j`` at ``qdd``, and ``tau``."""
    below, _, strict, _, _ = k["masks"]
    g = model.gravity.astype(qdd.dtype)
    zero = jnp.zeros((), qdd.dtype)
    base = ((zero, zero, zero), (-g[0], -g[1], -g[2]))
    s = k["s"]
    zeta = sp.add(sp.scale(s, qdd), k["velocity_product"])
    a_parent = sp.add(base, _masked(strict.T, zeta))
    a_body = sp.add(base, _masked(below.T, zeta))
    f = sp.add(_composite._inertia_times(k["inertia"], a_body), _force_cross(k["v_body"], k["p"]))
    fc = _masked(below, f)
    return a_parent, fc, _composite._spatial_dot(s, fc)


def _acceleration_stage(k: dict, a_parent, fc) -> Array:
    """``dtau/dq`` from the parents' accelerations and the composite forces (module doc)."""
    s, v_parent, dv, ic, pc, yc = k["s"], k["v_parent"], k["dv"], k["ic"], k["pc"], k["yc"]
    _, _, _, lower, above = k["masks"]
    da = sp.add(_composite._cross_motion(a_parent, s), _composite._cross_motion(v_parent, dv))
    dfdq = sp.add(_velocity_term(yc, pc, dv[0]), _composite._inertia_times(ic, da), _force_cross(s, fc))
    return jnp.where(lower, _pairs((k["fa"], k["bts"]), (da, dv[0])), 0) + jnp.where(above, _pairs(s, dfdq), 0)


def _dtype(model: Model, *x: Array):
    return jnp.result_type(*x, model.kinematics.axes, model.inertials.mass, model.gravity)


@eqx.filter_jit
def rnea_derivatives(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"], qdd: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """``(tau, dtau/dq, dtau/dqd, M)`` of a :class:`~kronjax.chain.Tree` model at one state; each
    matrix has row = joint force ``k``, column = coordinate ``j`` (module doc)."""
    dtype = _dtype(model, q, qd, qdd)
    tree = model.kinematics
    q, qd, qdd = (x.astype(dtype) for x in (q, qd, qdd))
    k = _velocity_stage(model, q, sp.full_velocities(tree, qd), dtype)
    a_parent, fc, tau = _forces(model, k, sp.full_velocities(tree, qdd))
    dq, dqd, mass = (sp.reduce(tree, x, (0, 1)) for x in (_acceleration_stage(k, a_parent, fc), k["dtau_dqd"], k["mass"]))
    return sp.reduce(tree, tau, (0,)) + armature_force(model, qdd), dq, dqd, with_armature(model, mass)


@eqx.filter_jit
def aba_derivatives(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"], tau: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, " nv"]]:
    """``(qdd, dtau/dq, dtau/dqd, M^-1, pivots)`` at ``qdd = M^-1 (tau - b(q, qd))`` (the bias
    ``b`` is ``tau`` at ``qdd = 0``; the forces are affine in ``qdd``, so no articulated-body pass
    is needed), with the Cholesky pivots of ``M`` (all positive iff ``M`` is positive definite).
    ``dqdd/d(q, qd) = -M^-1 dtau/d(q, qd)`` (Carpentier and Mansard sec. V). The rotor inertias
    (:attr:`~kronjax.chain.Model.armature`) add ``A qdd`` to ``tau`` and ``A`` to ``M``."""
    dtype = _dtype(model, q, qd, tau)
    tree = model.kinematics
    q, qd, tau = (x.astype(dtype) for x in (q, qd, tau))
    k = _velocity_stage(model, q, sp.full_velocities(tree, qd), dtype)
    _, _, bias = _forces(model, k, jnp.zeros_like(k["mass"][0]))
    minv, pivots = spd_inverse(with_armature(model, sp.reduce(tree, k["mass"], (0, 1))))
    qdd = minv @ (tau - sp.reduce(tree, bias, (0,)))
    a_parent, fc, _ = _forces(model, k, sp.full_velocities(tree, qdd))
    dq, dqd = (sp.reduce(tree, x, (0, 1)) for x in (_acceleration_stage(k, a_parent, fc), k["dtau_dqd"]))
    return qdd, dq, dqd, minv, pivots


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
