"""Spatial algebra of a joint tree in scalar components, and recursions over the tree (private).

Why scalar components: every 3-vector here is a tuple of three scalars and every 3 x 3 matrix a
tuple of three rows, never a small array axis. Under ``jax.vmap`` each component becomes one array
whose only dimension is the batch (contiguous), so XLA compiles the recursions to element-wise
loops over the batch that vectorise, instead of strided 3- and 6-wide slices of ``(batch, 6)``
arrays (about 8x faster for the Panda at batch 10^4 on two CPU cores; ``python -m bench``).

Conventions (Featherstone, body coordinates): spatial motion ``(w, v)`` (angular velocity,
velocity of the body point at the frame origin), spatial force ``(n, f)`` (moment about the
origin, force). The parent-to-child motion transform of body ``i`` is ``X = [[E, 0], [-E [r],
E]]`` with ``E`` the child-from-parent rotation and ``r`` the child's origin in the parent frame.

Joint transforms: with the joint's unit axis ``a`` and angle ``t`` (zero unless revolute),
``R(t)^T = a a^T + cos t (E - a a^T) - sin t [a]`` (Rodrigues), so ``E = post^T R(t)^T pre^T``
and ``r = pre_p + pre (a d + R(t) post_p)`` (``d``: the prismatic displacement) are affine in
``(cos t, sin t, d)`` with coefficients fixed by the model (:func:`joint_coefficients`).

Recursions (:func:`down`, :func:`up`) are a ``lax.scan`` over each unbranched run of bodies (a
chain is one run; :class:`Schedule`), so compile time does not grow with the number of bodies.

Multi-DoF joints (``"free"``, ``"spherical"``, ``"planar"``) run through the same recursions as a
chain of 1-DoF *sub-joints* at zero displacement (:func:`expansion`): the first carries the joint's
whole motion ``(G, t)`` from ``q`` (``E = G^T Pre^T``, ``r = Pre_p + Pre t``), the others have
identity transforms, all have constant unit axes in the child frame (free: translations along x, y,
z, then rotations about x, y, z; spherical: rotations; planar: translations along x, y, rotation
about z), so their motion subspaces are the joint's columns of ``S`` and its velocity coordinates
are theirs. Only the last sub-joint's body has mass (the real body). The chain is the chart ``q ·
exp(t_1 S_1) ... exp(t_k S_k)`` at ``t = 0``: positions, velocities, ``S`` and ``M`` are the
joint's, but its velocity-product acceleration is not: ``d/dt (S t') = S (t'' + Γ(t'))`` with
``S Γ(v) = sum_{l < m} (S_l x S_m) v_l v_m`` (:func:`lie_correction`), so the scan recursions take
``t'' = v' - Γ(v)``. The mask-based algorithms (:mod:`kronjax._composite`,
:mod:`kronjax._derivatives`, :mod:`kronjax._jacobians`) need no correction: there the sub-joints of
one joint are each other's ancestors (``group``), as the tangent space at ``q`` has it.

The entry points of the algorithms built on these recursions (Newton-Euler, the articulated-body
algorithm, the composite-body matrices, the Jacobians and Hessians, the derivatives of the
dynamics) are ``equinox.filter_jit``-compiled: called outside ``jit``, JAX would otherwise dispatch
their thousands of scalar operations one at a time (0.2-1 s per call for the Panda); inside a
``jit`` they are inlined as any nested ``jit`` is (``tests/test_dispatch.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from . import _lie
from .calculus import skew

if TYPE_CHECKING:  # chain builds on this module (Tree.poses): no import at run time
    from .chain import Model, Tree

# --------------------------------------------------------------------------------------------
# 3-vectors (tuples of 3 arrays) and 3 x 3 matrices (tuples of 3 rows)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Motion and force transforms
# --------------------------------------------------------------------------------------------


def transform_motion(e, r, w, v):
    """``X (w, v) = (E w, E (v + w x r))``; ``e is None``: the identity (:func:`joint_transform`)."""
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
    ``(R_p E^T, p_p + R_p r)``; the parent's when ``e is None`` (:func:`joint_transform`)."""
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


# --------------------------------------------------------------------------------------------
# The tree
# --------------------------------------------------------------------------------------------


def components(x: Array) -> tuple:
    """``(nb, 3)`` -> 3 arrays ``(nb,)``; ``(nb, 3, 3)`` -> rows of them."""
    if x.ndim == 2:
        return tuple(x[:, i] for i in range(x.shape[1]))
    return tuple(components(x[:, i]) for i in range(x.shape[1]))


# Sub-joints of a multi-DoF joint (module doc): kind and unit axis in the child frame, in the
# order of the joint's velocity coordinates (Pinocchio's: linear before angular).
_EX, _EY, _EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
SUB_JOINTS = {
    "free": (("P", _EX), ("P", _EY), ("P", _EZ), ("R", _EX), ("R", _EY), ("R", _EZ)),
    "spherical": (("R", _EX), ("R", _EY), ("R", _EZ)),
    "planar": (("P", _EX), ("P", _EY), ("R", _EZ)),
}


class Expansion(NamedTuple):
    """A tree with every multi-DoF joint replaced by its sub-joints (module doc); static.

    ``parents``, ``kinds`` (``"R"``, ``"P"``, ``"F"``) of the expanded bodies; ``source``: the
    model's body of each; ``real``: the expanded index of each model body (its last sub-joint);
    ``group``: equal for the sub-joints of one joint, distinct otherwise; ``sub``/``lead``: masks of
    the sub-joints and of the first sub-joint of each joint; ``axes``: ``(nb, 3)`` sub-joint axes
    (zero elsewhere); ``q_index``: configuration index of 1-DoF joints (``-1`` elsewhere);
    ``v_index``: velocity index (``-1`` at fixed joints); a mimic joint has its primary's, and
    ``scale``, ``offset`` (1 and 0 elsewhere): its coordinate is ``scale q + offset``; ``multi``:
    ``(kind, q start, v start, lead, model body)`` per multi-DoF joint; ``reduction``: with mimic
    joints, ``G`` ``(n_full, nv)``, the velocities of the moving expanded bodies (the *full*
    coordinates, in which the mask-based algorithms work) from ``v``: ``v_full = G v``, so that
    ``tau = G^T tau_full``, ``M = G^T M_full G``, ``J = J_full G``; ``None`` without mimic joints."""

    parents: tuple[int, ...]
    kinds: tuple[str, ...]
    source: np.ndarray
    real: np.ndarray
    group: np.ndarray
    sub: np.ndarray
    lead: np.ndarray
    axes: np.ndarray
    q_index: tuple[int, ...]
    v_index: tuple[int, ...]
    scale: np.ndarray
    offset: np.ndarray
    multi: tuple[tuple[str, int, int, int, int], ...]
    reduction: np.ndarray | None


@functools.lru_cache(maxsize=128)
def _expansion(parents: tuple[int, ...], kinds: tuple[str, ...], q_index, v_index, mimic) -> Expansion:
    out = dict(parents=[], kinds=[], source=[], group=[], sub=[], lead=[], axes=[], q_index=[], v_index=[], scale=[], offset=[])
    real, multi = [], []
    for body, (parent, kind) in enumerate(zip(parents, kinds)):
        entry = mimic[body] if mimic else None
        scale, offset = (1.0, 0.0) if entry is None else entry[1:]
        if entry is not None:
            q_index = q_index[:body] + (q_index[entry[0]],) + q_index[body + 1 :]
            v_index = v_index[:body] + (v_index[entry[0]],) + v_index[body + 1 :]
        subs = SUB_JOINTS.get(kind, ((kind, None),))
        first = len(out["parents"])
        for k, (sub_kind, axis) in enumerate(subs):
            out["parents"].append(real[parent] if k == 0 and parent >= 0 else (first + k - 1 if k else -1))
            out["kinds"].append(sub_kind)
            out["source"].append(body)
            out["group"].append(first)
            out["sub"].append(axis is not None)
            out["lead"].append(axis is not None and k == 0)
            out["axes"].append(axis or (0.0, 0.0, 0.0))
            out["q_index"].append(-1 if axis is not None else q_index[body])
            out["v_index"].append(v_index[body] + k if v_index[body] >= 0 else -1)
            out["scale"].append(scale)
            out["offset"].append(offset)
        if kind in SUB_JOINTS:
            multi.append((kind, q_index[body], v_index[body], first, body))
        real.append(len(out["parents"]) - 1)
    arrays = {
        key: np.array(value) for key, value in out.items() if key in ("source", "group", "sub", "lead", "axes", "scale", "offset")
    }
    reduction = None
    if any(entry is not None for entry in mimic):
        full = [i for i, kind in enumerate(out["kinds"]) if kind != "F"]
        reduction = np.zeros((len(full), max(out["v_index"]) + 1))
        for f, i in enumerate(full):
            reduction[f, out["v_index"][i]] = out["scale"][i]
    return Expansion(
        parents=tuple(out["parents"]),
        kinds=tuple(out["kinds"]),
        real=np.array(real),
        q_index=tuple(out["q_index"]),
        v_index=tuple(out["v_index"]),
        multi=tuple(multi),
        reduction=reduction,
        **arrays,
    )


def expansion(tree: Tree) -> Expansion:
    """The static :class:`Expansion` of a tree (its own bodies when all its joints are 1-DoF)."""
    return _expansion(tree.parents, tree.kinds, tree.q_index, tree.v_index, tree.mimic)


def full_velocities(tree: Tree, v: Array) -> Array:
    """``v_full = G v`` (:class:`Expansion`): ``v`` itself without mimic joints."""
    g = expansion(tree).reduction
    return v if g is None else jnp.asarray(g, v.dtype) @ v


def reduce(tree: Tree, x: Array, axes: tuple[int, ...]) -> Array:
    """``x`` with each of the given axes (of length ``n_full``) contracted with ``G``
    (:class:`Expansion`): ``G^T tau``, ``G^T M G``, ``J G``, ...; ``x`` itself without mimic joints."""
    g = expansion(tree).reduction
    if g is None:
        return x
    g = jnp.asarray(g, x.dtype)
    for axis in axes:
        x = jnp.moveaxis(jnp.tensordot(x, g, axes=([axis], [0])), -1, axis)
    return x


def expanded(tree: Tree) -> Tree:
    """The tree of :func:`expansion` with its arrays (a sub-joint's placements are the identity
    but for the first's ``Pre``; a multi-DoF joint's ``Post`` is the identity)."""
    if not tree.has_multi_dof:
        return tree
    ex = expansion(tree)
    pick = lambda x: x[ex.source]  # noqa: E731
    dtype = tree.axes.dtype
    later = (ex.sub & ~ex.lead)[:, None]
    eye = jnp.eye(3, dtype=dtype)
    pre_rotation = jnp.where(later[:, :, None], eye, pick(tree.pre_rotation))
    return type(tree)(
        parents=ex.parents,
        kinds=ex.kinds,
        axes=jnp.where(ex.sub[:, None], jnp.asarray(ex.axes, dtype), pick(tree.axes)),
        pre_rotation=pre_rotation,
        pre_translation=jnp.where(later, 0, pick(tree.pre_translation)),
        post_rotation=pick(tree.post_rotation),
        post_translation=pick(tree.post_translation),
    )


@functools.cache
def structure_constants(kind: str) -> np.ndarray:
    """``c[p, l, m]`` ``(k, k, k)`` of a multi-DoF joint's ``k`` sub-joints, nonzero for ``l < m``:
    ``S_l x S_m = sum_p c[p, l, m] S_p`` (the motions of the sub-joints in the child frame, a
    basis of the joint's Lie algebra, closed under the motion cross product)."""
    basis = np.array([(*axis, 0, 0, 0) if sub == "R" else (0, 0, 0, *axis) for sub, axis in SUB_JOINTS[kind]], float)
    k = len(basis)
    c = np.zeros((k, k, k))
    for l in range(k):
        for m in range(l + 1, k):
            (w1, v1), (w2, v2) = np.split(basis[l], 2), np.split(basis[m], 2)
            bracket = np.concatenate([np.cross(w1, w2), np.cross(w1, v2) + np.cross(v1, w2)])
            c[:, l, m] = basis @ bracket  # the basis is orthonormal
            assert np.allclose(basis.T @ c[:, l, m], bracket), kind
    return c


def lie_correction(tree: Tree, v: Array) -> Array:
    """``Γ(v)`` ``(nv,)``: zero but at multi-DoF joints, where ``S Γ = sum_{l < m} (S_l x S_m) v_l
    v_m`` over the joint's sub-joints (module doc). Free: ``(v_lin x w, (w_y w_z, -w_x w_z, w_x
    w_y))``; spherical: the angular part; planar: ``(v_y w_z, -v_x w_z, 0)``."""
    out = jnp.zeros_like(v)
    for kind, _, start, _, _ in expansion(tree).multi:
        c = structure_constants(kind)
        vj = v[start : start + c.shape[0]]
        out = out.at[start : start + c.shape[0]].set(jnp.einsum("plm,l,m->p", c.astype(v.dtype), vj, vj))
    return out


def lie_derivative_terms(tree: Tree) -> np.ndarray:
    """``A[p, l, m]`` ``(nv, nv, nv)``: the structure constants of every multi-DoF joint placed at
    its velocity coordinates (zero elsewhere), so that ``Γ(v) = A (v ⊗ v)`` (:func:`lie_correction`).
    In the chart of the sub-joint chain ``t`` at ``q`` (module doc), ``v = B(t) t'`` with ``B(0) =
    1`` and ``dB[p, l]/dt_m = A[p, l, m]``: the terms by which the chart's Coriolis matrices differ
    from those of the velocity coordinates."""
    nv = tree.nv
    a = np.zeros((nv, nv, nv))
    for kind, _, start, _, _ in expansion(tree).multi:
        c = structure_constants(kind)
        block = slice(start, start + c.shape[0])
        a[block, block, block] = c
    return a


def joint_coefficients(tree: Tree, dtype) -> dict:
    """Per-body coefficients of ``E``, ``r`` (see the module doc) and the motion subspace
    ``(s_w, s_v)`` in body coordinates: ``(R^T a, R^T (a x p))`` revolute, ``(0, R^T a)``
    prismatic, zero fixed (``R, p``: the post placement)."""
    a = tree.axes.astype(dtype)
    pre_r, pre_p = tree.pre_rotation.astype(dtype), tree.pre_translation.astype(dtype)
    post_r, post_p = tree.post_rotation.astype(dtype), tree.post_translation.astype(dtype)
    along = a[:, :, None] * a[:, None, :]
    across = jnp.eye(3, dtype=dtype) - along
    k = jax.vmap(skew)(a)
    post_rt, pre_rt = jnp.swapaxes(post_r, 1, 2), jnp.swapaxes(pre_r, 1, 2)
    apply = lambda m, v: jnp.einsum("bij,bj->bi", m, v)  # noqa: E731
    kinds = np.array(tree.kinds)
    axis_body = apply(post_rt, a)
    s_revolute = jnp.concatenate([axis_body, apply(post_rt, jnp.cross(a, post_p))], axis=1)
    s_prismatic = jnp.concatenate([jnp.zeros_like(axis_body), axis_body], axis=1)
    s = jnp.where((kinds == "R")[:, None], s_revolute, jnp.where((kinds == "P")[:, None], s_prismatic, 0))
    return dict(
        e0=components(post_rt @ along @ pre_rt),
        e_cos=components(post_rt @ across @ pre_rt),
        e_sin=components(-post_rt @ k @ pre_rt),
        r0=components(pre_p + apply(pre_r @ along, post_p)),
        r_cos=components(apply(pre_r @ across, post_p)),
        r_sin=components(apply(pre_r @ k, post_p)),
        r_d=components(apply(pre_r, a)),
        s_w=components(s[:, :3]),
        s_v=components(s[:, 3:]),
    )


def joint_inputs(tree: Tree, q: Array, dtype) -> tuple[dict, np.ndarray]:
    """Per-body inputs of the kinematic recursions over the :func:`expanded` tree (joint
    coefficients, ``cos t``, ``sin t``, ``d``; with multi-DoF joints, the ``motion`` of their first
    sub-joints, :func:`_multi_dof_motion`) and the mask of bodies whose joint moves."""
    ex = expansion(tree)
    kinds = np.array(ex.kinds)
    revolute, prismatic = (kinds == "R") & ~ex.sub, (kinds == "P") & ~ex.sub
    coordinate = lambda mask: _spread(ex.q_index, q, mask, dtype, ex.scale, np.where(mask, ex.offset, 0))  # noqa: E731
    angle = coordinate(revolute)
    values = dict(
        joint_coefficients(expanded(tree), dtype),
        cos=jnp.cos(angle),
        sin=jnp.sin(angle),
        d=coordinate(prismatic),
    )
    if ex.multi:
        values.update(_multi_dof_motion(tree, ex, q.astype(dtype), dtype))
    return values, kinds != "F"


def _multi_dof_motion(tree: Tree, ex: Expansion, q: Array, dtype) -> dict:
    """``{"motion": {first sub-joint: {"rot": G^T, "shift": Pre t}}}`` in components, which
    :func:`split` gives to those bodies' spans only (:class:`Schedule`)."""
    motion = {}
    for kind, start, _, lead, body in ex.multi:
        g, t = _lie.motion(kind, q[start : start + _lie.NQ[kind]])
        pre = tree.pre_rotation[body].astype(dtype)
        motion[lead] = dict(
            rot=tuple(tuple(g[j, i] for j in range(3)) for i in range(3)), shift=tuple(pre[i] @ t for i in range(3))
        )
    return dict(motion=motion)


def bodies(model: Model, q: Array, dtype) -> tuple[dict, np.ndarray]:
    """:func:`joint_inputs` and the bodies' inertials (zero at sub-joints but the last)."""
    tree = model.kinematics
    values, moving = joint_inputs(tree, q, dtype)
    ine = model.inertials
    mass, com, inertia = (x.astype(dtype) for x in (ine.mass, ine.com, ine.inertia))
    if tree.has_multi_dof:
        ex = expansion(tree)
        real = np.zeros(len(ex.parents), bool)
        real[ex.real] = True
        massless = lambda x: jnp.where(real.reshape((-1,) + (1,) * (x.ndim - 1)), x[ex.source], 0)  # noqa: E731
        mass, com, inertia = massless(mass), massless(com), massless(inertia)
    values.update(mass=mass, com=components(com), inertia=components(inertia))
    return values, moving


def per_body(model: Model, x: Array, mask: np.ndarray, dtype) -> Array:
    """A velocity-space vector ``(nv,)`` spread over the expanded bodies, zero where ``mask`` is
    false (at least at fixed joints, which have no coordinate)."""
    ex = expansion(model.kinematics)
    return _spread(ex.v_index, x, mask, dtype, ex.scale)


def _spread(q_index: tuple[int, ...], x: Array, mask: np.ndarray, dtype, scale=None, offset=None) -> Array:
    """``scale x[index] + offset`` per body where ``mask`` is true, zero elsewhere (the scale and
    offset of mimic joints, skipped when all are 1 and 0). Zeros shared by a batch when ``mask``
    is all false (no prismatic joint: ``d``)."""
    if not np.any(mask):
        return jnp.zeros(len(q_index), dtype)
    index = np.array([max(k, 0) for k in q_index], dtype=int)
    values = x.astype(dtype)[index]
    if scale is not None and np.any(scale != 1):
        values = values * jnp.asarray(scale, dtype)
    if offset is not None and np.any(offset != 0):
        values = values + jnp.asarray(offset, dtype)
    return jnp.where(mask, values, jnp.zeros((), dtype))


def joint_transform(b: dict):
    """``(E, r)`` of one body from its entry of :func:`bodies`; ``(None, None)``, the identity,
    in a span of sub-joints after a multi-DoF joint's first (:class:`Schedule`), whose entries
    :func:`split` leaves without the joint coefficients."""
    if "e0" not in b:
        return None, None
    c, s = b["cos"], b["sin"]
    e = tuple(tuple(b["e0"][i][j] + c * b["e_cos"][i][j] + s * b["e_sin"][i][j] for j in range(3)) for i in range(3))
    r = tuple(b["r0"][i] + c * b["r_cos"][i] + s * b["r_sin"][i] + b["d"] * b["r_d"][i] for i in range(3))
    if "rot" in b:  # the first sub-joint of a multi-DoF joint (Schedule)
        e, r = matmul(b["rot"], e), add(r, b["shift"])
    return e, r


class Schedule(NamedTuple):
    """How the recursions visit the :func:`expanded` tree; static. ``parents`` of the expanded
    bodies and ``spans``: the unbranched runs ``[start, end)`` (``parents[i] == i - 1`` inside a run)
    that :func:`down` and :func:`up` scan, with each multi-DoF joint's first sub-joint alone in a
    span of its own, which they visit without a scan: only that body's transform depends on the
    joint's whole motion ``(G, t)`` (:func:`joint_transform`), so the scanned bodies' coefficients
    stay constants shared by a batch instead of rows of a batched stack. The joint's other
    sub-joints have identity transforms: a span that holds only such bodies (``identity``; a
    floating root's, which ends at the branching root body) skips the transforms. A body with
    children in other spans ends its span, so that what passes between spans is a scan's initial
    or final carry, never stacked: at large batches the recursions are bound by memory traffic
    rather than arithmetic (for the same reason the passes compute ``E`` and ``r`` again rather
    than keep them)."""

    parents: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]
    identity: tuple[bool, ...]


@functools.lru_cache(maxsize=128)
def _schedule(parents: tuple[int, ...], chains: tuple[tuple[int, int], ...]) -> Schedule:
    cuts = {i for i, parent in enumerate(parents) if i == 0 or parent != i - 1}
    roots = {parent for i, parent in enumerate(parents) if parent >= 0 and parent != i - 1}
    cuts |= {root + 1 for root in roots} | {i for lead, end in chains for i in (lead, lead + 1)}
    starts = sorted(cut for cut in cuts if cut < len(parents))
    spans = tuple(zip(starts, starts[1:] + [len(parents)]))
    identity = tuple(any(lead < start and end <= stop for lead, stop in chains) for start, end in spans)
    return Schedule(parents, spans, identity)


def schedule(tree: Tree) -> Schedule:
    """The :class:`Schedule` of a tree's recursions."""
    ex = expansion(tree)
    return _schedule(ex.parents, tuple((lead, lead + len(SUB_JOINTS[kind])) for kind, _, _, lead, _ in ex.multi))


def _rows(stack, start: int, end: int):
    return jax.tree.map(lambda x: x[start:end], stack)


def _visit(step: Callable, carry: Any, rows: dict, reverse: bool = False):
    """``lax.scan(step, carry, rows)``, or one call of ``step`` for a span of one body."""
    if len(jax.tree.leaves(rows)[0]) > 1:
        return jax.lax.scan(step, carry, rows, reverse=reverse)
    carry, out = step(carry, jax.tree.map(lambda x: x[0], rows))
    return carry, jax.tree.map(lambda x: jnp.asarray(x)[None], out)


def down(order: Schedule, step: Callable, base: Any, inputs: list[dict]) -> list:
    """From the base outwards: ``carry_i, out_i = step(carry_parent(i), inputs_i)`` with
    ``carry = base`` at the base. ``inputs``: one dict per span (:func:`split`). Returns each
    span's stacked outputs, in span order (carries are not stacked: a span's parent ends its own
    span, and passes the scan's final carry)."""
    outputs, carries = [], {}
    for (start, end), span_inputs in zip(order.spans, inputs):
        root = order.parents[start]
        carries[end - 1], out = _visit(step, base if root < 0 else carries[root], span_inputs)
        outputs.append(out)
    return outputs


def up(order: Schedule, step: Callable, zero: Any, inputs: list[dict]) -> list:
    """From the leaves inwards: ``to_parent_i, out_i = step(from_children_i, inputs_i)``, where
    ``from_children_i`` sums what body ``i``'s children pass up (``zero`` for a leaf).
    ``inputs``: one dict per span. Returns each span's stacked outputs."""
    outputs = [None] * len(order.spans)
    passed = {}  # body -> what its child spans pass up to it: the last body of its span
    for k in reversed(range(len(order.spans))):
        start, end = order.spans[k]
        to_root, outputs[k] = _visit(step, passed.pop(end - 1, zero), inputs[k], reverse=True)
        root = order.parents[start]
        if root >= 0:
            passed[root] = jax.tree.map(jnp.add, passed[root], to_root) if root in passed else to_root
    return outputs


_TRANSFORM_INPUTS = ("e0", "e_cos", "e_sin", "r0", "r_cos", "r_sin", "r_d", "cos", "sin", "d")


def split(order: Schedule, stack) -> list:
    """A per-body stack cut into the spans' rows. A dict's ``"motion"`` entry (from
    :func:`joint_inputs`: ``rot``, ``shift`` per first sub-joint) joins its body's span only."""
    motion = {}
    if isinstance(stack, dict) and "motion" in stack:
        stack = dict(stack)
        motion = stack.pop("motion")
    out = []
    for (start, end), identity in zip(order.spans, order.identity):
        rows = _rows(stack, start, end)
        if identity and isinstance(rows, dict):
            rows = {key: value for key, value in rows.items() if key not in _TRANSFORM_INPUTS}
        if start in motion:
            rows = dict(rows, **jax.tree.map(lambda x: x[None], motion[start]))
        out.append(rows)
    return out


def frames(tree: Tree, q: Array, dtype) -> dict:
    """Forward kinematics of a tree in the base frame, per body of the :func:`expanded` tree
    (components of ``(nb,)`` arrays).

    Returns ``R`` (rows of ``A_i^(0)``, base from body), ``p`` (the body origin ``^0 d_i``),
    ``w`` and ``t`` (the joint's motion subspace in base axes: ``R s_w``, ``R s_v``; zero at fixed
    joints), and ``moving`` (numpy mask of the bodies whose joint has a coordinate). Child from
    parent: ``R_i = R_parent E^T``, ``p_i = p_parent + R_parent r`` (:func:`joint_transform`).
    """
    inputs, moving = joint_inputs(tree, q, dtype)

    def step(parent, b):
        rot, origin = child_pose(parent, *joint_transform(b))
        return (rot, origin), ((rot, origin), mul(rot, b["s_w"]), mul(rot, b["s_v"]))

    one, zero = jnp.ones((), dtype), jnp.zeros((), dtype)
    eye = ((one, zero, zero), (zero, one, zero), (zero, zero, one))
    order = schedule(tree)
    out = down(order, step, (eye, (zero, zero, zero)), split(order, inputs))
    (rot, origin), w, t = jax.tree.map(lambda *x: jnp.concatenate(x), *out)
    return dict(R=rot, p=origin, w=w, t=t, moving=moving)
