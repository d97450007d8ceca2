"""Jacobians, their time derivatives and Hessians of every body of a joint tree (private).

All from one pass of forward kinematics (:func:`kronjax._spatial.frames.frames`): the base-frame axis
``w_j`` of each joint ``j`` (zero for a prismatic joint), the velocity ``t_j`` it gives its own
body's origin ``p_j``, and the origins and rotations of all bodies. With ``j ⪯ i`` meaning "the
body of coordinate ``j`` is body ``i`` or one of its ancestors", a point ``P_i`` fixed on body
``i`` has, in the base frame (Tuan 29, 37, 45; Pinocchio's LOCAL_WORLD_ALIGNED columns)::

    J_T[i][:, j] = V_ij = u_j + w_j x P_i        J_R[i][:, j] = w_j        (j ⪯ i)

where ``u_j = t_j + p_j x w_j`` is the velocity that coordinate ``j`` gives the point at the base
origin: ``[u_j; w_j]`` is column ``j`` of the world-frame joint Jacobian (Pinocchio's ``data.J``),
the compact form of :mod:`kronjax.kinematics._joint_jacobians`, and a body's Jacobian selects its
support's columns from it (:func:`jacobian_arrays`, of every body or of a few).

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

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._spatial.algebra import add, components, cross, mul, scale, take
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


class Columns(NamedTuple):
    """The world-frame motion of every full coordinate (one per moving body of the
    :func:`~kronjax._spatial.expansion.expansion`) and the poses of the model's bodies, in
    components: ``u`` and ``w`` ``(n,)``, coordinate ``j``'s unit motion (the velocity of the body
    point at the base origin, ``u_j = t_j + p_j x w_j``, and the angular velocity; Pinocchio's
    ``data.J``), ``R`` (rows of ``(nb,)``) and ``p`` ``(nb,)``."""

    u: tuple
    w: tuple
    R: tuple
    p: tuple


def _columns(tree: Tree, q: Array, dtype) -> Columns:
    """The :class:`Columns` of a tree at ``q``, from one forward-kinematics pass."""
    f = frames(tree, q, dtype)
    ex = expansion(tree)
    w, t, p = take((f.w, f.t, f.p), ancestry(tree).moving)
    rot, origin = take((f.R, f.p), ex.real)  # the model's bodies among the expanded ones
    return Columns(add(t, cross(p, w)), w, rot, origin)


def _points_of(c: Columns, points: Array | None, dtype) -> tuple:
    """The base-frame points ``P_i = p_i + R_i points_i`` (components of ``(nb,)``); the origins
    without ``points``."""
    return c.p if points is None else add(c.p, mul(c.R, components(points.astype(dtype))))


def _body_columns(c: Columns, points: tuple) -> tuple[tuple, tuple]:
    """``(V, W)``, components of ``(k, n)``: ``V_ij = u_j + w_j x P_i`` and ``W_ij = w_j`` for the
    points ``P_i`` (components of ``(k,)``), not yet masked by the support."""
    return add(_row(c.u), cross(_row(c.w), _column(points))), _row(c.w)


def jacobian_arrays(c: Columns, bodies: np.ndarray, support: np.ndarray, points: Array | None, frame: str, dtype):
    """``(J_T, J_R)``, each ``(k, 3, n)`` (full coordinates, not reduced), of the model's
    ``bodies`` (static indices) at body-frame ``points`` (``(k, 3)`` or ``None``); ``support``:
    ``(k, n)``, their rows of :func:`support`."""
    rot, origin = take((c.R, c.p), bodies)
    at = origin if points is None else add(origin, mul(rot, components(points.astype(dtype))))
    jt, jr = (_masked(x, support) for x in _body_columns(c, at))
    if frame == "body":
        jt, jr = _to_body(rot, jt), _to_body(rot, jr)
    return _stacked(jt), _stacked(jr)


def support(tree: Tree) -> np.ndarray:
    """``(nb, n)`` static: coordinate ``j`` moves the model's body ``i`` (``j ⪯ i``)."""
    return _topology(tree)[1]


@eqx.filter_jit
def joint_motion(tree: Tree, q: Array, dtype) -> tuple[Array, Array, Array]:
    """``(S, R, p)``: the ``(6, n)`` world-frame motion of every full coordinate, ``[u; w]`` of
    :class:`Columns`, and the ``(nb, 3, 3)`` rotations and ``(nb, 3)`` origins of the model's bodies."""
    c = _columns(tree, q, dtype)
    return jnp.stack(c.u + c.w), jnp.stack([jnp.stack(row, -1) for row in c.R], 1), jnp.stack(c.p, -1)


def coordinates(tree: Tree) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Static: the velocity coordinate of each full coordinate (a mimic joint's is its primary's)
    and its multiplier (1 but for mimic joints): ``G[j, coordinate_j] = multiplier_j``
    (:class:`~kronjax._spatial.expansion.Expansion`)."""
    ex = expansion(tree)
    moving = ancestry(tree).moving
    return tuple(ex.v_index[j] for j in moving), tuple(float(ex.scale[j]) for j in moving)


class _World(NamedTuple):
    """What the all-bodies closed forms share: the :class:`Columns`, the points ``P_i`` (components
    of ``(nb,)``), ``V_ij`` (components of ``(nb, n)``, unmasked; :func:`_body_columns`) and the
    static masks of :func:`_topology`."""

    c: Columns
    P: tuple
    V: tuple
    support: np.ndarray
    moved_by: np.ndarray
    sibling: np.ndarray


def _world(tree: Tree, q: Array, points: Array | None, dtype) -> _World:
    c = _columns(tree, q, dtype)
    _, mask, moved_by, sibling = _topology(tree)
    at = _points_of(c, points, dtype)
    return _World(c, at, _body_columns(c, at)[0], mask, moved_by, sibling)


def _row(x: tuple) -> tuple:
    return tuple(c[None, :] for c in x)


def _column(x: tuple) -> tuple:
    return tuple(c[:, None] for c in x)


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
def jacobians(tree: Tree, q: Array, bodies, points: Array | None, frame: str, dtype) -> tuple[Array, Array]:
    """``(J_T, J_R)``, each ``(k, 3, nv)``, of the model's ``bodies`` (static indices, ``None``: all)
    in the base (``"base"``) or body (``"body"``) frame."""
    bodies = np.arange(len(tree.parents)) if bodies is None else np.asarray(bodies)
    out = jacobian_arrays(_columns(tree, q, dtype), bodies, support(tree)[bodies], points, frame, dtype)
    return tuple(reduce(tree, x, (2,)) for x in out)


@eqx.filter_jit
def hessians(tree: Tree, q: Array, points: Array | None, frame: str, dtype) -> tuple[Array, Array]:
    """``(H_T, H_R)``, each ``(nb, 3, n^2)`` in Khang's layout: base frame (51, 60, 67), body
    frame (53, 61), or ``"body*"`` (58: ``R_i^T H_T``; ``H_R`` as in ``"body"``, 61)."""
    g = _world(tree, q, points, dtype)
    n = len(g.c.w[0])
    # [j, k]: j ⪯ k when both ⪯ i (a sub-joint k moves its sibling j: w_k x V_ij)
    j_first = np.less_equal.outer(np.arange(n), np.arange(n)) & ~g.sibling
    w_j, w_k = _column(g.c.w), _row(g.c.w)  # (n, 1): the column's axis; (1, n): the differentiating coordinate's
    v_j = tuple(c[:, :, None] for c in g.V)  # (nb, n, 1)
    v_k = tuple(c[:, None, :] for c in g.V)  # (nb, 1, n)
    w_lo = tuple(jnp.where(j_first, a, b) for a, b in zip(w_j, w_k))
    v_hi = tuple(jnp.where(j_first, b, a) for a, b in zip(v_j, v_k))
    both = g.support[:, :, None] & g.support[:, None, :]
    ht = cross(tuple(c[None] for c in w_lo), v_hi)  # (nb, n, n)
    turn = tuple(c[None] for c in cross(w_k, w_j))  # w_k x w_j, (1, n, n)
    hr = _masked(turn, g.moved_by)
    if frame != "base":
        hr = _to_body(g.c.R, add(hr, scale(turn, -1)))
        if frame == "body":
            ht = add(ht, scale(cross(tuple(c[None] for c in w_k), v_j), -1))
        ht = _to_body(g.c.R, ht)
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
    w = g.c.w
    spin, drift = scale(w, v), scale(g.c.u, v)  # w_j qd_j, u_j qd_j (at the base origin)
    total = lambda m, x: tuple(jnp.asarray(m, dtype) @ c for c in x)  # noqa: E731
    omega, vel = total(g.support, spin), total(g.support, drift)  # bodies
    omega_in, v_in = total(g.moved_by, spin), total(g.moved_by, drift)  # parents of coordinates
    d_omega = add(_column(omega), scale(_row(omega_in), -1))
    d_v = add(_column(vel), scale(_row(v_in), -1))
    jtd = add(cross(_row(omega_in), g.V), cross(_row(w), add(d_v, cross(d_omega, _column(g.P)))))
    jrd = _row(cross(omega_in, w))
    if frame == "body":
        jt, jr = _masked(g.V, g.support), _masked(_row(w), g.support)
        jtd = _to_body(g.c.R, add(jtd, scale(cross(_column(omega), jt), -1)))
        jrd = _to_body(g.c.R, add(jrd, scale(cross(_column(omega), jr), -1)))
    return tuple(reduce(tree, _stacked(_masked(x, g.support)), (2,)) for x in (jtd, jrd))
