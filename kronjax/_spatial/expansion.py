"""Multi-DoF joints as chains of 1-DoF sub-joints, and mimic joints as a reduction (private).

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
``t'' = v' - Γ(v)``. The mask-based algorithms (:mod:`kronjax.dynamics._crba`,
:mod:`kronjax.dynamics._rnea_derivatives`, :mod:`kronjax.kinematics._tree`) need no correction: there the sub-joints of
one joint are each other's ancestors (``group``), as the tangent space at ``q`` has it.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ..chain import Tree

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
