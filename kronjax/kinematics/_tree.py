"""Jacobians, their time derivatives and Hessians of every body of a joint tree (private).

All from one pass of forward kinematics (:func:`kronjax._spatial.frames.frames`): the base-frame axis
``w_j`` of each joint ``j`` (zero for a prismatic joint), the velocity ``t_j`` it gives its own
body's origin ``p_j``, and the origins and rotations of all bodies. With ``j ⪯ i`` meaning "the
body of coordinate ``j`` is body ``i`` or one of its ancestors", a point ``P_i`` fixed on body
``i`` has, in the base frame (Tuan 29, 37, 45; Pinocchio's LOCAL_WORLD_ALIGNED columns)::

    J_T[i][:, j] = V_ij = t_j + w_j x (P_i - p_j)        J_R[i][:, j] = w_j        (j ⪯ i)

and, since ``dw_j/dq_k = w_k x w_j`` for ``k ≺ j`` (a strict ancestor) and ``dP_i/dq_k = V_ik``,
the jacobian-of-jacobian Hessians (51, 60, 67; entry ``(p, j n + k) = dJ[p, j]/dq_k``) are::

    dJ_T[i][:, j]/dq_k = w_lo x V_i,hi      (j, k ⪯ i; lo, hi = min, max(j, k): lo ⪯ hi)
    dJ_R[i][:, j]/dq_k = w_k x w_j          (k ≺ j ⪯ i)

(the first by the Jacobi identity; it is symmetric in ``j, k``, the second is not). With multi-DoF
joints (:func:`kronjax._spatial.expansion.expansion`), derivatives are along the tangent space: the
coordinates of one joint move each other's axes, so for two of them ``k ≺ j`` and ``lo = k``. In body axes
(31, 40, 53, 61) ``J^(i) = R_i^T J`` and ``dJ^(i)/dq_k = R_i^T (dJ/dq_k - w_k x J)`` for ``k ⪯ i``.
The time derivative ``dJ/dt = H (E_n ⊗ v)`` (Tuan 8) is formed directly, ``O(nb n)``::

    dJ_T[i][:, j]/dt = W_j x V_ij + w_j x (v_i - v_j + (W_i - W_j) x P_i)     dJ_R[i][:, j]/dt = W_j x w_j

with ``W_i, v_i`` the angular velocity of body ``i`` and the velocity of its point at the base
origin, ``W_j, v_j`` those of the parent of coordinate ``j``'s body.

Every quantity is a tuple of three components (3-vectors never form a small array axis, see
:mod:`kronjax._spatial.algebra`); arrays over bodies and coordinates ``(nb, n)`` or ``(nb, n, n)`` are
formed by broadcasting with static masks (no gathers), and the components are stacked last.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._spatial.algebra import add, components, cross, mul, scale
from .._spatial.expansion import expansion, full_velocities, reduce
from .._spatial.frames import frames
from .._spatial.traversal import ancestry
from ..chain import Tree


def _topology(tree: Tree) -> tuple[np.ndarray, ...]:
    """``(bodies, support, moved_by, sibling)`` from the tree's
    :func:`~kronjax._spatial.traversal.ancestry`: the expanded body of each coordinate ``(n,)``;
    ``support[i, j]`` ``(nb, n)``: ``j ⪯ i`` for the model's bodies ``i``; ``moved_by[j, k]`` ``(n,
    n)``: ``k ≺ j`` (coordinate ``k`` moves ``j``'s axis: an ancestor's, or another of the same
    multi-DoF joint, fixed in its child frame); ``sibling[j, k]``: ``j != k`` of the same joint."""
    masks = ancestry(tree)
    off_diagonal = ~np.eye(len(masks.moving), dtype=bool)
    support = masks.below[:, expansion(tree).real].T
    # not Ancestry.strict (i ≺ j without the sub-joints of one joint): here they move each other's axes
    return masks.moving, support, masks.upto.T & off_diagonal, masks.upto & masks.upto.T & off_diagonal


def _world(tree: Tree, q: Array, points: Array | None, dtype) -> dict:
    """Forward kinematics, the points ``P_i`` and the columns ``V_ij`` (components of ``(nb, n)``)."""
    f = frames(tree, q, dtype)
    ex = expansion(tree)
    bodies, support, moved_by, sibling = _topology(tree)
    rot, origin = f.R, f.p
    if tree.has_multi_dof:  # the model's bodies among the expanded ones
        rot = tuple(tuple(c[ex.real] for c in row) for row in rot)
        origin = tuple(c[ex.real] for c in origin)
    if points is not None:
        origin = add(origin, mul(rot, components(points.astype(dtype))))
    pick = lambda x: tuple(c[bodies] for c in x)  # noqa: E731
    w, t, p = pick(f.w), pick(f.t), pick(f.p)
    row = lambda x: tuple(c[None, :] for c in x)  # noqa: E731
    column = lambda x: tuple(c[:, None] for c in x)  # noqa: E731
    arm = add(column(origin), scale(row(p), -1))
    return dict(
        R=rot,
        P=origin,
        w=w,
        t=t,
        p=p,
        V=add(row(t), cross(row(w), arm)),
        support=support,
        moved_by=moved_by,
        sibling=sibling,
        row=row,
        column=column,
    )


def _masked(x: tuple, mask: np.ndarray) -> tuple:
    return tuple(jnp.where(mask, c, jnp.zeros((), c.dtype)) for c in x)


def _to_body(rot: tuple, x: tuple) -> tuple:
    """``R_i^T x`` for components ``x`` whose leading axis is the body."""
    lead = lambda c, like: c.reshape(c.shape + (1,) * (like.ndim - 1))  # noqa: E731
    return tuple(sum(lead(rot[b][a], x[b]) * x[b] for b in range(3)) for a in range(3))


def _stacked(x: tuple) -> Array:
    """Components ``(nb, ...)`` -> ``(nb, 3, ...)``, trailing axes flattened (Khang's layout)."""
    out = jnp.stack(jnp.broadcast_arrays(*x), axis=1)
    return out.reshape(out.shape[0], 3, -1)


@eqx.filter_jit
def jacobians(tree: Tree, q: Array, points: Array | None, frame: str, dtype) -> tuple[Array, Array]:
    """``(J_T, J_R)``, each ``(nb, 3, n)``, in the base (``"base"``) or body (``"body"``) frame."""
    g = _world(tree, q, points, dtype)
    jt = _masked(g["V"], g["support"])
    jr = _masked(g["row"](g["w"]), g["support"])
    if frame == "body":
        jt, jr = _to_body(g["R"], jt), _to_body(g["R"], jr)
    return reduce(tree, _stacked(jt), (2,)), reduce(tree, _stacked(jr), (2,))


@eqx.filter_jit
def hessians(tree: Tree, q: Array, points: Array | None, frame: str, dtype) -> tuple[Array, Array]:
    """``(H_T, H_R)``, each ``(nb, 3, n^2)`` in Khang's layout: base frame (51, 60, 67), body
    frame (53, 61), or ``"body*"`` (58: ``R_i^T H_T``; ``H_R`` as in ``"body"``, 61)."""
    g = _world(tree, q, points, dtype)
    n = len(g["w"][0])
    # [j, k]: j ⪯ k when both ⪯ i (a sub-joint k moves its sibling j: w_k x V_ij)
    j_first = np.less_equal.outer(np.arange(n), np.arange(n)) & ~g["sibling"]
    w_j = tuple(c[:, None] for c in g["w"])  # (n, 1): the column's axis
    w_k = tuple(c[None, :] for c in g["w"])  # (1, n): the differentiating coordinate's axis
    v_j = tuple(c[:, :, None] for c in g["V"])  # (nb, n, 1)
    v_k = tuple(c[:, None, :] for c in g["V"])  # (nb, 1, n)
    w_lo = tuple(jnp.where(j_first, a, b) for a, b in zip(w_j, w_k))
    v_hi = tuple(jnp.where(j_first, b, a) for a, b in zip(v_j, v_k))
    both = g["support"][:, :, None] & g["support"][:, None, :]
    ht = cross(tuple(c[None] for c in w_lo), v_hi)  # (nb, n, n)
    turn = tuple(c[None] for c in cross(w_k, w_j))  # w_k x w_j, (1, n, n)
    hr = _masked(turn, g["moved_by"])
    if frame != "base":
        hr = _to_body(g["R"], add(hr, scale(turn, -1)))
        if frame == "body":
            ht = add(ht, scale(cross(tuple(c[None] for c in w_k), v_j), -1))
        ht = _to_body(g["R"], ht)
    return _reduce_hessian(tree, _stacked(_masked(ht, both))), _reduce_hessian(tree, _stacked(_masked(hr, both)))


def _reduce_hessian(tree: Tree, h: Array) -> Array:
    """``H (G ⊗ G)`` (mimic joints: :func:`kronjax._spatial.expansion.reduce`)."""
    if not tree.has_mimic:
        return h
    n = int(round(h.shape[-1] ** 0.5))
    h = reduce(tree, h.reshape(*h.shape[:-1], n, n), (2, 3))
    return h.reshape(*h.shape[:2], -1)


@eqx.filter_jit
def jacobians_dot(tree: Tree, q: Array, v: Array, points: Array | None, frame: str, dtype) -> tuple[Array, Array]:
    """``(dJ_T/dt, dJ_R/dt)``, each ``(nb, 3, n)``: ``H (E_n ⊗ v)`` (Tuan 8) of :func:`hessians`
    in the base frame, or the time derivative of the body-frame Jacobians."""
    g = _world(tree, q, points, dtype)
    v = full_velocities(tree, v.astype(dtype))
    w, row, column = g["w"], g["row"], g["column"]
    spin = scale(w, v)  # w_j qd_j
    drift = scale(add(g["t"], cross(g["p"], w)), v)  # (t_j + p_j x w_j) qd_j: at the base origin
    total = lambda m, x: tuple(jnp.asarray(m, dtype) @ c for c in x)  # noqa: E731
    omega, vel = total(g["support"], spin), total(g["support"], drift)  # bodies
    omega_in, v_in = total(g["moved_by"], spin), total(g["moved_by"], drift)  # parents of coordinates
    d_omega = add(column(omega), scale(row(omega_in), -1))
    d_v = add(column(vel), scale(row(v_in), -1))
    jtd = add(cross(row(omega_in), g["V"]), cross(row(w), add(d_v, cross(d_omega, column(g["P"])))))
    jrd = row(cross(omega_in, w))
    if frame == "body":
        jt, jr = _masked(g["V"], g["support"]), _masked(row(w), g["support"])
        jtd = _to_body(g["R"], add(jtd, scale(cross(column(omega), jt), -1)))
        jrd = _to_body(g["R"], add(jrd, scale(cross(column(omega), jr), -1)))
    return tuple(reduce(tree, _stacked(_masked(x, g["support"])), (2,)) for x in (jtd, jrd))
