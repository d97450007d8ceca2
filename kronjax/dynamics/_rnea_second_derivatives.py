"""Second-order derivatives of inverse dynamics (RNEA) of a joint tree (private).

The algorithm is Singh, Russell and Wensing's IDSVA-SO (arXiv:2203.01497) as
Pinocchio writes it (``ComputeRNEASecondOrderDerivatives``): after the first-order quantities of
:mod:`kronjax.dynamics._rnea_derivatives` (world frame, composite bodies), every entry of the four
tensors is one dot product over a triple of coordinates ``k ⪯ j ⪯ i`` on one path of the tree
(``⪯`` between their joints; the coordinates of one joint are each other's ancestors). The
recursion's loops become three static stages that vectorise over batches:

* per coordinate ``i``: ten ``6 x 6`` matrices ``r`` from ``S_i``, the composites ``Ic_i``,
  ``Bc_i``, ``F_i`` and the columns ``psi_i = v_λ(i) x S_i`` (``dV``), ``psi'_i = a_λ(i) x S_i +
  v_λ(i) x psi_i`` (``dA``), ``phi_i = v_i x S_i``;
* per pair ``j ⪯ i``: thirteen vectors ``u = r_i x_j`` (static lists of the tree's pairs);
* per triple ``k ⪯ j ⪯ i``: fourteen dot products ``u_ij . x_k``, each written to the entries that
  Pinocchio's loop writes (:func:`_plan` replays the loop once per tree, keeping the last write of
  each entry), the others zero.

Only the tree's pairs and triples are computed (on a humanoid about a tenth of ``n^3``), and the
dense output is one static gather. With ``x ⊕ e`` the configuration moved along the tangent
coordinate ``e`` (:func:`kronjax.integrate`), entry ``[i, j, k]`` is
``d/dx_k (d tau_i / d x_j)``: ``(q, q)``, ``(q, v)`` (``j`` along ``q``, ``k`` along ``v``), ``(v, v)``,
``(a, q)`` (``dM_ij / dq_k``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._spatial.algebra import add, cross, cross_force, cross_motion, rigid_inertia_times, scale, spatial_dot, take
from .._spatial.expansion import full_velocities, reduce
from .._spatial.traversal import ancestry
from ..chain import Model
from ._rnea_derivatives import angular_force, forces, result_dtype, velocity_stage, velocity_term, velocity_term_transposed

# The per-triple values (module doc): each a sum of dot products ``sign u_ij . x_k``, ``x`` one of
# the columns ``(S, psi, psi', phi)`` (indices 0-3), as Pinocchio's ``p1``-``p6`` and the sums it
# writes directly.
_VALUES = {
    "p1": (("u11", 1, 1),),
    "-p1": (("u11", 1, -1),),
    "p2": (("u9", 2, 1), ("u8mu12", 1, 1)),
    "A": (("u1", 1, 1), ("u2", 2, 1)),
    "B": (("u1", 0, 1), ("u2", 1, 1), ("u2", 3, 1)),
    "p3": (("u11", 0, -1),),
    "-p3": (("u11", 0, 1),),
    "p4": (("u2", 0, 1),),
    "C": (("u3", 0, 1),),
    "D": (("u8mu12", 0, 1), ("u9", 1, 1), ("u9", 3, 1)),
    "E": (("u6", 0, 1),),
    "p5": (("u9", 0, 1),),
    "p6": (("u10", 0, 1),),
    "F": (("u7", 0, 1),),
    "G": (("u4", 0, 1),),
    "H": (("u2", 0, -1),),
}
_TENSORS = ("qq", "qv", "vv", "aq")


class _Plan(NamedTuple):
    """Static lists of one tree (:func:`_plan`): ``pairs`` ``(P, 2)``, the ``(i, j)`` with ``j ⪯ i``;
    per value of :data:`_VALUES`, the ``(pair, k)`` of the entries it fills; ``gather`` ``(4, n,
    n^2)``, each dense entry's index into those values concatenated in order (then a zero)."""

    pairs: np.ndarray
    filled: dict
    gather: np.ndarray


def _writes(upto: np.ndarray):
    """Pinocchio's loop over the triples ``k ⪯ j ⪯ i``: ``(tensor, entry, value, (i, j, k))`` in
    its order of writing (``⪯`` between joints: the coordinates of one joint are each other's
    ancestors)."""
    n = len(upto)
    same = upto & upto.T
    depth = upto.sum(0)  # coordinates on the path from the root, each joint's whole
    path = [sorted(np.flatnonzero(upto[:, i]), key=lambda j: (-depth[j], j)) for i in range(n)]
    for i in range(n - 1, -1, -1):
        for j in path[i]:
            for k in path[j]:
                t = (i, j, k)
                yield from (("qq", (i, j, k), "p2", t), ("qv", (i, k, j), "-p1", t))
                if not same[i, j]:
                    yield from (
                        ("qq", (j, k, i), "A", t), ("qq", (j, i, k), "A", t),
                        ("qv", (j, k, i), "p1", t), ("qv", (j, i, k), "B", t),
                        ("vv", (j, k, i), "-p3", t), ("vv", (j, i, k), "-p3", t),
                        ("aq", (k, j, i), "p4", t), ("aq", (j, k, i), "p4", t),
                    )  # fmt: skip
                if not same[j, k]:
                    yield from (
                        ("qq", (i, k, j), "p2", t), ("qq", (k, i, j), "C", t),
                        ("vv", (i, j, k), "p3", t), ("vv", (i, k, j), "p3", t),
                        ("qv", (i, j, k), "D", t), ("qv", (k, j, i), "E", t),
                        ("aq", (k, i, j), "p5", t), ("aq", (i, k, j), "p5", t),
                    )  # fmt: skip
                    if not same[i, j]:
                        yield from (
                            ("qq", (k, j, i), "C", t), ("vv", (k, i, j), "p6", t),
                            ("vv", (k, j, i), "p6", t), ("qv", (k, i, j), "F", t),
                        )  # fmt: skip
                    else:
                        yield ("vv", (k, j, i), "G", t)
                else:
                    yield ("vv", (i, j, k), "H", t)


@functools.lru_cache(maxsize=64)
def _plan(upto_bytes: bytes, n: int) -> _Plan:
    """The :class:`_Plan` of a tree from its ``upto`` mask (``upto[j, i]``: ``j ⪯ i``); only the
    last write of each entry counts, as in Pinocchio."""
    upto = np.frombuffer(upto_bytes, dtype=bool).reshape(n, n)
    last = {(tensor, entry): (value, t) for tensor, entry, value, t in _writes(upto)}
    pairs = sorted({(i, j) for value, (i, j, k) in last.values()})
    pair_index = {pair: p for p, pair in enumerate(pairs)}
    filled = {value: [] for value in _VALUES}
    position = {}
    for value, (i, j, k) in sorted(set(last.values())):
        position[value, (i, j, k)] = len(filled[value])
        filled[value].append((pair_index[i, j], k))
    offsets = np.cumsum([0] + [len(f) for f in filled.values()])
    offset = dict(zip(_VALUES, offsets))
    gather = np.full((len(_TENSORS), n, n, n), offsets[-1], dtype=np.int32)
    for (tensor, entry), (value, t) in last.items():
        gather[(_TENSORS.index(tensor), *entry)] = offset[value] + position[value, t]
    filled = {value: np.array(f, dtype=np.int32).reshape(-1, 2) for value, f in filled.items() if f}
    return _Plan(np.array(pairs, dtype=np.int32).reshape(-1, 2), filled, gather.reshape(len(_TENSORS), n, n * n))


def _apply_r1(ic, s, x):
    """``r1 x = S x* (Ic x) - Ic (S x x)`` (``Ic.variation(S)``, symmetric)."""
    return add(cross_force(s, rigid_inertia_times(ic, x)), scale(rigid_inertia_times(ic, cross_motion(s, x)), -1))


def _coordinate_forces(k: dict, fc, psi, psi_dot, phi) -> dict:
    """The forces of each coordinate ``i`` that Pinocchio's ``r`` matrices cross with."""
    ic, s, y, p = k["ic"], k["s"], k["yc"], k["pc"]
    return dict(
        f_s=rigid_inertia_times(ic, s),  # r0 x = x x* f_s
        f_psi=rigid_inertia_times(ic, psi),
        f4=velocity_term_transposed(y, p, s),  # r4 x = x x* (f4, 0)
        f5=add(velocity_term(y, p, psi), cross_force(s, fc), rigid_inertia_times(ic, psi_dot)),
        f7=add(velocity_term(y, p, s), rigid_inertia_times(ic, add(psi, phi))),
    )


def _pair_vectors(i: dict, s, psi, psi_dot, phi) -> dict:
    """The ``u`` vectors of each pair ``(i, j)`` (Pinocchio's, some summed as they are used) from
    the coordinate ``i``'s quantities ``i`` and the columns at ``j``."""
    ic, s_i, psi_i, y, p = i["ic"], i["s"], i["psi"], i["yc"], i["pc"]
    r1 = functools.partial(_apply_r1, ic, s_i)

    def r3(x):  # Ic.variation(psi_i) x + x x* f_psi + S_i x* (Bc x) - Bc (S_i x x)
        turned = add(_apply_r1(ic, psi_i, x), cross_force(x, i["f_psi"]), cross_force(s_i, velocity_term(y, p, x)))
        return add(turned, scale(velocity_term(y, p, cross_motion(s_i, x)), -1))

    u9 = cross_force(s, i["f_s"])
    u13 = r1(s)
    r1_psi = r1(psi)
    s_cross = cross_motion(s_i, s)
    u1 = add(
        _apply_r1(ic, psi_i, s),
        scale(cross_force(s, i["f_psi"]), -1),
        scale(angular_force(velocity_term_transposed(y, p, s_cross)), -1),
        angular_force(cross(s_i[0], velocity_term_transposed(y, p, s))),
    )
    return dict(
        u1=u1,
        u2=u13,
        u3=add(r3(psi), r1(psi_dot), cross_force(s, i["f5"])),
        u4=add(u9, cross_force(s_i, rigid_inertia_times(ic, s))),
        u6=add(r1_psi, cross_force(psi, i["f_s"]), cross_force(s, i["f7"])),
        u7=add(r3(s), r1_psi, r1(phi)),
        u8mu12=add(cross_force(psi, i["f_s"]), scale(r1_psi, -1), angular_force(cross(s[0], i["f4"]))),
        u9=u9,
        u10=add(u13, u9),
        u11=add(u13, scale(u9, -1)),
    )


def _filled_values(plan: _Plan, u: dict, columns: tuple) -> Array:
    """The values of :data:`_VALUES` at the entries each fills (:class:`_Plan`), concatenated, then
    a zero: each read from ``u`` and the columns where it is needed, so that nothing ``n^3``-sized
    but the output is written."""
    out = []
    for value, index in plan.filled.items():
        terms = (
            sign * spatial_dot(take(u[name], index[:, 0]), take(columns[column], index[:, 1]))
            for name, column, sign in _VALUES[value]
        )
        out.append(sum(terms))
    return jnp.concatenate([*out, jnp.zeros((1,), out[0].dtype)])


@eqx.filter_jit
def rnea_second_derivatives(
    model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], vd: Float[Array, " nv"]
) -> tuple[Float[Array, "nv nv*nv"], Float[Array, "nv nv*nv"], Float[Array, "nv nv*nv"], Float[Array, "nv nv*nv"]]:
    """``(d2tau/dq2, d2tau/dqdv, d2tau/dv2, d2tau/dadq)`` of a :class:`~kronjax.chain.Tree` model
    at one state, each ``n x n^2`` in Khang's layout (module doc)."""
    dtype = result_dtype(model, q, v, vd)
    tree = model.kinematics
    q, v, vd = (x.astype(dtype) for x in (q, v, vd))
    k = velocity_stage(model, q, full_velocities(tree, v), dtype)
    a_parent, fc, _ = forces(model, k, full_velocities(tree, vd))
    s, v_parent, dv = k["s"], k["v_parent"], k["dv"]
    columns = (s, dv, add(cross_motion(a_parent, s), cross_motion(v_parent, dv)), cross_motion(k["v"], s))
    plan = _plan(np.ascontiguousarray(ancestry(tree).upto).tobytes(), s[0][0].shape[0])
    per_coordinate = dict(ic=k["ic"], s=s, psi=dv, yc=k["yc"], pc=k["pc"], **_coordinate_forces(k, fc, *columns[1:]))
    u = _pair_vectors(take(per_coordinate, plan.pairs[:, 0]), *take(columns, plan.pairs[:, 1]))
    values = _filled_values(plan, u, columns)
    tensors = values[plan.gather]
    nf = tensors.shape[1]
    return tuple(reduce(tree, t.reshape(nf, nf, nf), (0, 1, 2)).reshape(-1, model.nv**2) for t in tensors)
