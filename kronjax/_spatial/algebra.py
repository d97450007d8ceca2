"""Spatial algebra in scalar components: 3-vectors, 3 x 3 matrices, motion and force transforms,
spatial inertias, the cross products of motions and forces (private).

Why scalar components: every 3-vector here is a tuple of three scalars and every 3 x 3 matrix a
tuple of three rows, never a small array axis. Under ``jax.vmap`` each component becomes one array
whose only dimension is the batch (contiguous), so XLA compiles the recursions to element-wise
loops over the batch that vectorise, instead of strided 3- and 6-wide slices of ``(batch, 6)``
arrays (about 8x faster for the Panda at batch 10^4 on two CPU cores; ``python -m bench``).

Conventions (Featherstone, body coordinates): spatial motion ``(w, v)`` (angular velocity,
velocity of the body point at the frame origin), spatial force ``(n, f)`` (moment about the
origin, force). The parent-to-child motion transform of body ``i`` is ``X = [[E, 0], [-E [r],
E]]`` with ``E`` the child-from-parent rotation and ``r`` the child's origin in the parent frame.

Two forms of a spatial inertia occur: the general blocks ``(a, b, c)`` of ``[[a, b], [b^T, c]]``
(articulated inertias, :func:`inertia_times`) and the rigid form ``(a, h, m)`` of ``[[a, [h]],
[-[h], m 1]]`` (rotational block about the origin, first moment ``h = m c``, mass; additive over
bodies expressed about one point, :func:`rigid_inertia_times`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array


def add(*terms):
    """Sum of vectors or matrices of the same structure."""
    return jax.tree.map(lambda *x: sum(x), *terms)


def scale(a, k):
    return jax.tree.map(lambda x: x * k, a)


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def mul(m, v):
    """``m v``."""
    return tuple(dot(row, v) for row in m)


def transpose(m):
    return tuple(zip(*m))


def mul_transposed(m, v):
    """``m^T v``."""
    return mul(transpose(m), v)


def matmul(a, b):
    bt = transpose(b)
    return tuple(tuple(dot(row, col) for col in bt) for row in a)


def outer(a, b):
    return tuple(tuple(x * y for y in b) for x in a)


def cross_matrix(r, m):
    """``[r] m``: ``r x`` each column of ``m``."""
    return transpose(tuple(cross(r, col) for col in transpose(m)))


def matrix_cross(m, r):
    """``m [r]``: row ``i`` is ``m_i x r``."""
    return tuple(cross(row, r) for row in m)


def transform_motion(e, r, w, v):
    """``X (w, v) = (E w, E (v + w x r))``; ``e is None``: the identity (:func:`kronjax._spatial.frames.joint_transform`)."""
    if e is None:
        return w, v
    return mul(e, w), mul(e, add(v, cross(w, r)))


def transform_force_back(e, r, n, f):
    """``X^T (n, f) = (E^T n + r x E^T f, E^T f)``: a child's force in its parent's frame."""
    if e is None:
        return n, f
    f_parent = mul_transposed(e, f)
    return add(mul_transposed(e, n), cross(r, f_parent)), f_parent


def child_pose(parent, e, r):
    """A body's rotation and origin in the base frame from its parent's ``(R_p, p_p)``:
    ``(R_p E^T, p_p + R_p r)``; the parent's when ``e is None`` (:func:`kronjax._spatial.frames.joint_transform`)."""
    if e is None:
        return parent
    rotation, origin = parent
    return matmul(rotation, transpose(e)), add(origin, mul(rotation, r))


def symmetric(entry):
    """The symmetric 3 x 3 matrix with upper entries ``entry(i, j)`` (``i <= j``): six are
    computed, the lower ones are the same arrays."""
    upper = {(i, j): entry(i, j) for i in range(3) for j in range(i, 3)}
    return tuple(tuple(upper[min(i, j), max(i, j)] for j in range(3)) for i in range(3))


def transform_inertia_back(e, r, inertia):
    """``X^T I X`` of a spatial inertia ``I = [[a, b], [b^T, c]]`` given as ``(a, b, c)``, ``a``
    and ``c`` symmetric (only their upper entries are computed)."""
    if e is None:
        return inertia
    a, b, c = inertia
    et = transpose(e)

    def rotated(m, sym):  # E^T m E
        me = matmul(m, e)
        return symmetric(lambda i, j: dot(et[i], transpose(me)[j])) if sym else matmul(et, me)

    a, b, c = rotated(a, True), rotated(b, False), rotated(c, True)
    rc = cross_matrix(r, c)
    rb = cross_matrix(r, transpose(b))  # [r] b^T, and -b [r] is its transpose
    rcr = matrix_cross(rc, r)
    # with T = [[1, [r]], [0, 1]]: T I T^T = [[a + [r] b^T - b [r] - [r] c [r], b + [r] c], [., c]]
    a = symmetric(lambda i, j: a[i][j] + rb[i][j] + rb[j][i] - rcr[i][j])
    return a, add(b, rc), c


def spatial_inertia(mass, com, inertia):
    """Spatial inertia about the body origin, ``(a, b, c)`` blocks, from the mass, the centre of
    mass and the inertia tensor about it: ``a = I_c - m [c][c]``, ``b = m [c]``, ``c = m 1``."""
    zero = jnp.zeros_like(mass)
    cx = (
        (zero, -com[2], com[1]),
        (com[2], zero, -com[0]),
        (-com[1], com[0], zero),
    )
    mc = scale(cx, mass)
    eye = tuple(tuple(mass if i == j else zero for j in range(3)) for i in range(3))
    return add(inertia, scale(matmul(cx, mc), -1)), mc, eye


def inertia_times(inertia, w, v):
    """``I (w, v) = (a w + b v, b^T w + c v)``."""
    a, b, c = inertia
    return add(mul(a, w), mul(b, v)), add(mul_transposed(b, w), mul(c, v))


def rigid_inertia_times(inertia, s):
    """``I S = (a S_w + h x S_v, m S_v + S_w x h)`` of a rigid inertia ``(a, h, m)`` (broadcasting
    over leading axes)."""
    a, h, m = inertia
    s_w, s_v = s
    return add(mul(a, s_w), cross(h, s_v)), add(scale(s_v, m), cross(s_w, h))


def cross_motion(s, t):
    """Spatial motion cross product ``s x t = (s_w x t_w, s_w x t_v + s_v x t_w)`` (broadcasting)."""
    return cross(s[0], t[0]), add(cross(s[0], t[1]), cross(s[1], t[0]))


def cross_force(v, f):
    """Spatial force cross product ``v x* f = (w x n + u x f', w x f')``."""
    (w, u), (n, f_) = v, f
    return add(cross(w, n), cross(u, f_)), cross(w, f_)


def spatial_dot(x, y):
    """``x . y`` of two spatial vectors (a motion and a force)."""
    return dot(x[0], y[0]) + dot(x[1], y[1])


def pairs(rows, cols):
    """``out[k, j] = rows_k . cols_j`` over matching leaves (``(n,)`` components each)."""
    return sum(r[:, None] * c[None, :] for r, c in zip(jax.tree.leaves(rows), jax.tree.leaves(cols)))


def expand_dims(x, axes):
    """``jnp.expand_dims`` of every component."""
    return jax.tree.map(lambda a: jnp.expand_dims(a, axes), x)


def take(x, index: np.ndarray):
    """The entries at the static ``index`` (along the first axis) of every component of ``x``."""
    return jax.tree.map(lambda c: c[index], x)


def components(x: Array) -> tuple:
    """``(nb, 3)`` -> 3 arrays ``(nb,)``; ``(nb, 3, 3)`` -> rows of them."""
    if x.ndim == 2:
        return tuple(x[:, i] for i in range(x.shape[1]))
    return tuple(components(x[:, i]) for i in range(x.shape[1]))


def cross_last_axis(a: Array, b: Array) -> Array:
    """Cross products of ``(..., 3)`` arrays (the one exception to scalar components, for the
    dense per-body arrays of :mod:`kronjax.dynamics._wrenches` (a few elementwise ops; cheaper to compile than
    ``jnp.cross``)."""
    a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
    b1, b2, b3 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=-1)
