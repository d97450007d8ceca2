"""Per-body quantities the dynamics is assembled from: inertials, centre-of-mass Jacobians and
Hessians in Khang's layout, body velocities, kinetic energy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array

from ..chain import Model
from ..kinematics._jacobians import along_tangent, tangent_origin, unchecked_hessians, unchecked_jacobians


def require_inertials(model: Model):
    if model.inertials is None:
        raise ValueError(
            "this model has no inertials (a kinematics-only model): dynamics needs the bodies' "
            "masses, centres of mass and inertia tensors; build it with inertials=[...]"
        )
    return model.inertials


def _vee(w: Array) -> Array:
    """Axial vectors ``(..., 3)`` of skew-symmetric matrices ``(..., 3, 3)``."""
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], axis=-1)


def com_jacobians(model: Model, q: Array) -> tuple[Array, Array]:
    """``(J_TG, J_R)``, each ``(nb, 3, n)``: translational Jacobians of the centres of mass in the
    base frame (Tuan 45) and rotational Jacobians in the body frames (Tuan 40, Truc 25)."""
    com = require_inertials(model).com
    return unchecked_jacobians(model, q, com, "base")[0], unchecked_jacobians(model, q, None, "body")[1]


def com_hessians(model: Model, q: Array) -> tuple[Array, Array, Array, Array]:
    """``(J_TG, J_R, H_TG, H_R)``: the Jacobians of :func:`com_jacobians` and their Hessians
    ``(nb, 3, n^2)`` in Khang's layout (base-frame ``H_TG``, eq. 67; body-frame ``H_R``, eq. 61)."""
    com = require_inertials(model).com
    jt, jr = com_jacobians(model, q)
    return jt, jr, unchecked_hessians(model, q, com, "base")[0], unchecked_hessians(model, q, None, "body")[1]


def transpose_derivative(da_dx: Array, cols: int) -> Array:
    """Khang derivative of ``A^T`` from that of ``A`` (``r x s``, ``da_dx`` is ``r x (s n)``):
    ``d(A^T)/dx`` is ``s x (r n)`` with entry ``(j, p n + k) = dA[p, j]/dx_k`` -- a permutation of
    the same numbers."""
    r = da_dx.shape[0]
    n = da_dx.shape[1] // cols
    return da_dx.reshape(r, cols, n).transpose(1, 0, 2).reshape(cols, r * n)


def body_velocities(model: Model, q: Array, v: Array) -> tuple[Array, Array, Array]:
    """Centres of mass ``(nb, 3)`` and their velocities ``(nb, 3)`` in the base frame, and angular
    velocities in the body frames ``(nb, 3)``, by one forward-mode pass through the poses."""
    chart = along_tangent(model, q, model.poses)
    return chart_velocities(chart, require_inertials(model).com, tangent_origin(model, q), v)


def chart_velocities(chart, com: Array, x: Array, xd: Array) -> tuple[Array, Array, Array]:
    """:func:`body_velocities` of the poses ``chart(x)`` moving at ``xd`` (``x``: ``q``, or the
    exponential chart's ``xi``, :func:`kronjax.kinematics._jacobians.along_tangent`)."""
    (r, p), (rd, pd) = jax.jvp(chart, (x,), (xd,))
    centres = p + jnp.einsum("bij,bj->bi", r, com)
    v = pd + jnp.einsum("bij,bj->bi", rd, com)
    w = _vee(jnp.einsum("bji,bjk->bik", r, rd))  # S(omega_i) = R^T Rdot (Truc 10)
    return centres, v, w


def kinetic(ine, v: Array, w: Array) -> Array:
    return 0.5 * (jnp.einsum("b,bp,bp->", ine.mass, v, v) + jnp.einsum("bp,bpr,br->", w, ine.inertia, w))


def check_inputs(model: Model, **arrays) -> list[Array]:
    """``q`` checked as a configuration ``(nq,)``, every other array as ``(nv,)``."""
    return [model.check_q(x, name) if name == "q" else model.check_v(x, name) for name, x in arrays.items()]
