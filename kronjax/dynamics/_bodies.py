"""Per-body quantities the dynamics is assembled from: inertials, centre-of-mass Jacobians and
Hessians in Khang's layout, body velocities, kinetic energy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array

from ..chain import Model
from ..kinematics import _along_tangent, _hessians, _jacobians, _tangent_origin


def _inertials(model: Model):
    if model.inertials is None:
        raise ValueError(
            "this model has no inertials (a kinematics-only model): dynamics needs the bodies' "
            "masses, centres of mass and inertia tensors; build it with inertials=[...]"
        )
    return model.inertials


def _vee(w: Array) -> Array:
    """Axial vectors ``(..., 3)`` of skew-symmetric matrices ``(..., 3, 3)``."""
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], axis=-1)


def _com_jacobians(model: Model, q: Array) -> tuple[Array, Array]:
    """``(J_TG, J_R)``, each ``(nb, 3, n)``: translational Jacobians of the centres of mass in the
    base frame (Tuan 45) and rotational Jacobians in the body frames (Tuan 40, Truc 25)."""
    com = _inertials(model).com
    return _jacobians(model, q, com, "base")[0], _jacobians(model, q, None, "body")[1]


def _com_hessians(model: Model, q: Array) -> tuple[Array, Array, Array, Array]:
    """``(J_TG, J_R, H_TG, H_R)``: the Jacobians of :func:`_com_jacobians` and their Hessians
    ``(nb, 3, n^2)`` in Khang's layout (base-frame ``H_TG``, eq. 67; body-frame ``H_R``, eq. 61)."""
    com = _inertials(model).com
    jt, jr = _com_jacobians(model, q)
    return jt, jr, _hessians(model, q, com, "base")[0], _hessians(model, q, None, "body")[1]


def _transpose_derivative(da_dx: Array, cols: int) -> Array:
    """Khang derivative of ``A^T`` from that of ``A`` (``r x s``, ``da_dx`` is ``r x (s n)``):
    ``d(A^T)/dx`` is ``s x (r n)`` with entry ``(j, p n + k) = dA[p, j]/dx_k`` -- a permutation of
    the same numbers."""
    r = da_dx.shape[0]
    n = da_dx.shape[1] // cols
    return da_dx.reshape(r, cols, n).transpose(1, 0, 2).reshape(cols, r * n)


def _velocities(model: Model, q: Array, qd: Array) -> tuple[Array, Array, Array]:
    """Centres of mass ``(nb, 3)`` and their velocities ``(nb, 3)`` in the base frame, and angular
    velocities in the body frames ``(nb, 3)``, by one forward-mode pass through the poses."""
    chart = _along_tangent(model, q, model.poses)
    return _chart_velocities(chart, _inertials(model).com, _tangent_origin(model, q), qd)


def _chart_velocities(chart, com: Array, x: Array, xd: Array) -> tuple[Array, Array, Array]:
    """:func:`_velocities` of the poses ``chart(x)`` moving at ``xd`` (``x``: ``q``, or the
    exponential chart's ``xi``, :func:`kronjax.kinematics._along_tangent`)."""
    (r, p), (rd, pd) = jax.jvp(chart, (x,), (xd,))
    centres = p + jnp.einsum("bij,bj->bi", r, com)
    v = pd + jnp.einsum("bij,bj->bi", rd, com)
    w = _vee(jnp.einsum("bji,bjk->bik", r, rd))  # S(omega_i) = R^T Rdot (Truc 10)
    return centres, v, w


def _kinetic(ine, v: Array, w: Array) -> Array:
    return 0.5 * (jnp.einsum("b,bp,bp->", ine.mass, v, v) + jnp.einsum("bp,bpr,br->", w, ine.inertia, w))


def _check_state(model: Model, **arrays) -> list[Array]:
    """``q`` checked as a configuration ``(nq,)``, every other array as ``(nv,)``."""
    return [model.check_q(x, name) if name == "q" else model.check_v(x, name) for name, x in arrays.items()]


def _cross(a: Array, b: Array) -> Array:
    """Cross products of ``(..., 3)`` arrays (a few elementwise ops; cheaper to compile than
    ``jnp.cross``)."""
    a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
    b1, b2, b3 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=-1)
