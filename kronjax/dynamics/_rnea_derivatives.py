"""Analytical derivatives of inverse dynamics (RNEA) of a joint tree (private).

Carpentier and Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018
(sec. IV, the world-frame algorithm of Pinocchio's ``computeRNEADerivatives``). Everything is in
the base frame, as spatial vectors about the base origin (angular part first), in the scalar
components of :mod:`kronjax._spatial.algebra` (tuples of ``(n,)`` or ``(nb,)`` arrays, so that batches
vectorise), on the composite bodies of :func:`kronjax._spatial.frames.base_frame` and
:func:`kronjax._spatial.traversal.ancestry`.

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
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._spatial.algebra import (
    add,
    cross,
    cross_force,
    cross_matrix,
    cross_motion,
    dot,
    mul,
    rigid_inertia_times,
    scale,
    spatial_dot,
    symmetric,
)
from .._spatial.expansion import full_velocities, reduce
from .._spatial.frames import base_frame
from .._spatial.traversal import ancestry, on_paths
from ..chain import Model, Tree
from ..chain._model import armature_force, with_armature


def masked(mask: np.ndarray, x):
    """``mask @ x`` per component (``mask`` static, 0/1), written ``x @ mask^T`` so that under
    ``vmap`` it is one matrix product with the batch as rows, with no transpose of the output."""
    return jax.tree.map(lambda c: c @ mask.T.astype(c.dtype), x)


def velocity_term(y, p, x):
    """``B x = (Y x_w + x_w x p_n, 2 x_w x p_f)`` of a motion ``x`` (module doc), from ``Y`` and
    the momentum ``p = (p_n, p_f)``."""
    return add(mul(y, x[0]), cross(x[0], p[0])), scale(cross(x[0], p[1]), 2)


def velocity_term_transposed(y, p, x):
    """The angular part of ``B^T x = (Y x_w - x_w x p_n - 2 x_v x p_f, 0)`` (module doc)."""
    return add(mul(y, x[0]), scale(add(cross(x[0], p[0]), scale(cross(x[1], p[1]), 2)), -1))


def angular_force(n):
    """The force ``(n, 0)``, with no linear part."""
    return n, tuple(jnp.zeros_like(c) for c in n)


def velocity_matrix(inertia, motion):
    """The symmetric ``Y`` of ``B`` (module doc) of each body, for the motion ``(w, u)``."""
    a, h, _ = inertia
    w, u = motion
    wa = cross_matrix(w, a)
    uh = dot(u, h)
    return symmetric(lambda i, j: wa[i][j] + wa[j][i] - h[i] * u[j] - u[i] * h[j] + (2 * uh if i == j else 0))


def velocity_stage(model: Model, q: Array, qd: Array, dtype) -> dict:
    """Everything that does not depend on ``qdd``: ``S``, the inertias, velocities, ``Ic S``,
    ``Bc^T S``, ``M`` and ``dtau/dqd`` (module doc)."""
    tree: Tree = model.kinematics
    below, upto, strict, moving = ancestry(tree)
    s, inertia = base_frame(model, q)
    s = jax.tree.map(lambda x: x[moving].astype(dtype), s)
    inertia = jax.tree.map(lambda x: x.astype(dtype), inertia)
    sq = scale(s, qd)
    v = masked(upto.T, sq)  # v_j: velocity of joint j's body
    v_parent = masked(strict.T, sq)
    v_body = masked(below.T, sq)
    p = rigid_inertia_times(inertia, v_body)
    y = velocity_matrix(inertia, v_body)
    ic, pc, yc = masked(below, (inertia, p, y))

    dv = cross_motion(v_parent, s)
    dav = cross_motion(add(v, v_parent), s)
    fa = rigid_inertia_times(ic, s)  # Ic_j S_j
    bts = velocity_term_transposed(yc, pc, s)
    dfdv = add(velocity_term(yc, pc, s), rigid_inertia_times(ic, dav))
    # by blocks M alone takes 20-35 % less time (kronjax.dynamics._crba), but these three
    # matrices, whose masked products fuse with the rest of the pass, took as long and compiled
    # 1.5-2 s longer on the G1
    dtau_dqd = on_paths(upto, (s, dfdv), ((fa, bts), (dav, s[0])), joint="descendant", blocks=False)
    return dict(
        s=s,
        inertia=inertia,
        v=v,
        v_parent=v_parent,
        v_body=v_body,
        p=p,
        y=y,
        ic=ic,
        pc=pc,
        yc=yc,
        dv=dv,
        dav=dav,
        dfdv=dfdv,
        fa=fa,
        bts=bts,
        masks=(below, upto, strict),
        dtau_dqd=dtau_dqd,
        velocity_product=scale(cross_motion(v, s), qd),  # (v_j x S_j) qd_j
        mass=on_paths(upto, (s, fa), (fa, s), joint="ancestor", blocks=False),
    )


def forces(model: Model, k: dict, vd: Array):
    """Accelerations of the parents and composite forces ``F_j`` at ``qdd``, and ``tau``."""
    below, _, strict = k["masks"]
    g = model.gravity.astype(vd.dtype)
    zero = jnp.zeros((), vd.dtype)
    base = ((zero, zero, zero), (-g[0], -g[1], -g[2]))
    s = k["s"]
    zeta = add(scale(s, vd), k["velocity_product"])
    a_parent = add(base, masked(strict.T, zeta))
    a_body = add(base, masked(below.T, zeta))
    f = add(rigid_inertia_times(k["inertia"], a_body), cross_force(k["v_body"], k["p"]))
    fc = masked(below, f)
    return a_parent, fc, spatial_dot(s, fc)


def acceleration_columns(k: dict, a_parent, fc):
    """``dA_j`` and ``Bc_j dV_j + Ic_j dA_j + S_j x* F_j`` of each coordinate (module doc)."""
    s, v_parent, dv, ic = k["s"], k["v_parent"], k["dv"], k["ic"]
    da = add(cross_motion(a_parent, s), cross_motion(v_parent, dv))
    return da, add(velocity_term(k["yc"], k["pc"], dv), rigid_inertia_times(ic, da), cross_force(s, fc))


def acceleration_stage(k: dict, a_parent, fc) -> Array:
    """``dtau/dq`` from the parents' accelerations and the composite forces (module doc)."""
    da, dfdq = acceleration_columns(k, a_parent, fc)
    return on_paths(k["masks"][1], (k["s"], dfdq), ((k["fa"], k["bts"]), (da, k["dv"][0])), joint="descendant", blocks=False)


def result_dtype(model: Model, *x: Array):
    return jnp.result_type(*x, model.kinematics.axes, model.inertials.mass, model.gravity)


@eqx.filter_jit
def rnea_derivatives(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], vd: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """``(tau, dtau/dq, dtau/dqd, M)`` of a :class:`~kronjax.chain.Tree` model at one state; each
    matrix has row = joint force ``k``, column = coordinate ``j`` (module doc)."""
    dtype = result_dtype(model, q, v, vd)
    tree = model.kinematics
    q, v, vd = (x.astype(dtype) for x in (q, v, vd))
    k = velocity_stage(model, q, full_velocities(tree, v), dtype)
    a_parent, fc, tau = forces(model, k, full_velocities(tree, vd))
    dq, dqd, mass = (reduce(tree, x, (0, 1)) for x in (acceleration_stage(k, a_parent, fc), k["dtau_dqd"], k["mass"]))
    return reduce(tree, tau, (0,)) + armature_force(model, vd), dq, dqd, with_armature(model, mass)


def weighted_stage(model: Model, q: Array, v: Array, vd: Array, lam: Array) -> tuple:
    """What the gradient and the Hessian of ``λ^T tau`` start from: ``(tree, velocity stage, dA_j,
    Bc_j dV_j + Ic_j dA_j + S_j x* F_j, λ as full velocities)``, in the inputs' common dtype."""
    dtype = result_dtype(model, q, v, vd, lam)
    tree = model.kinematics
    q, v, vd, lam = (x.astype(dtype) for x in (q, v, vd, lam))
    k = velocity_stage(model, q, full_velocities(tree, v), dtype)
    a_parent, fc, _ = forces(model, k, full_velocities(tree, vd))
    return tree, k, *acceleration_columns(k, a_parent, fc), full_velocities(tree, lam)


@eqx.filter_jit
def rnea_cotangent(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], vd: Float[Array, " nv"], lam: Float[Array, " nv"]
) -> tuple[Float[Array, " nv"], Float[Array, " nv"], Float[Array, " nv"]]:
    """``(λ^T dtau/dq, λ^T dtau/dqd, λ^T M)``, the gradient of ``λ^T tau``, without the matrices:
    the module doc's entries summed over their row ``k``. With ``Λa_j = sum_{k ⪰ j} λ_k Ic_k S_k``,
    ``Λb_j = sum_{k ⪰ j} λ_k Bc_k^T S_k`` and the λ-velocity ``w_λ(j) = sum_{k ≺ j} λ_k S_k``::

        λ^T dtau/dq_j  = Λa_j . dA_j  + Λb_j . dV_j + w_λ(j) . (Bc_j dV_j + Ic_j dA_j + S_j x* F_j)
        λ^T dtau/dqd_j = Λa_j . dAv_j + Λb_j . S_j  + w_λ(j) . (Bc_j S_j + Ic_j dAv_j)
        λ^T M[:, j]    = (sum_{k ⪯ j} λ_k S_k) . Ic_j S_j + S_j . sum_{k ≻ j} λ_k Ic_k S_k

    (``k ≻ j``: below ``j``'s joint) each a few masked vector products, where the matrices are
    ``n^2`` pairs of them."""
    tree, k, da, dfdq, full = weighted_stage(model, q, v, vd, lam)
    _, upto, strict = k["masks"]
    s, fa, dv = k["s"], k["fa"], k["dv"]
    subtree_a, subtree_b = masked(upto, (scale(fa, full), scale(k["bts"], full)))
    sl = scale(s, full)
    w = masked(strict.T, sl)
    dq = spatial_dot(da, subtree_a) + dot(dv[0], subtree_b) + spatial_dot(w, dfdq)
    dqd = spatial_dot(k["dav"], subtree_a) + dot(s[0], subtree_b) + spatial_dot(w, k["dfdv"])
    outside_joint = upto & ~upto.T  # the coordinates of a joint are each other's ancestors
    mass = spatial_dot(masked(upto.T, sl), fa) + spatial_dot(s, masked(outside_joint, scale(fa, full)))
    dq, dqd, mass = (reduce(tree, x, (0,)) for x in (dq, dqd, mass))
    return dq, dqd, mass + armature_force(model, lam)
