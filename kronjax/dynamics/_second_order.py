"""Second-order derivatives of inverse and forward dynamics in Khang's layout, and the Hessians of
``λ^T tau`` and ``μ^T vd`` that Newton and DDP solvers contract them into."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model, Tree
from ._aba_derivatives import forward_hessian
from ._bodies import check_inputs, require_inertials
from ._forward import forward_dynamics, forward_dynamics_derivatives, tree_forward_first_order
from ._inverse import inverse_dynamics_derivatives
from ._rnea_hessian import rnea_hessian
from ._rnea_second_derivatives import rnea_second_derivatives


class InverseDynamicsSecondDerivatives(NamedTuple):
    """The second-order partial derivatives of ``tau(q, v, vd)``, each ``(nv, nv^2)`` in Khang's
    layout: entry ``[i, j nv + k]`` is ``d/dx_k`` of entry ``[i, j]`` of the first-order
    derivative (:func:`~kronjax.inverse_dynamics_derivatives`), ``x_k`` along the tangent space
    (``q ⊕ h e_k``, :func:`~kronjax.integrate`) for a configuration coordinate.

    Attributes:
        d2tau_dq2: ``d/dq_k (d tau_i / dq_j)``. Symmetric in ``(j, k)`` but for the block of a
            free or spherical joint's own coordinates, where ``q ⊕ a ⊕ b`` is not ``q ⊕ b ⊕ a``:
            there ``[i, j, k] - [i, k, j] = sum_l (d tau_i / dq_l) [e_k, e_j]_l`` (the Lie
            bracket of the joint's algebra), and the symmetric part is the Hessian of
            ``a -> tau(q ⊕ a)``.
        d2tau_dqdv: ``d/dv_k (d tau_i / dq_j)`` (= ``d/dq_j (d tau_i / dv_k)``).
        d2tau_dv2: ``d/dv_k (d tau_i / dv_j)``, independent of ``v`` and ``vd``: ``C* (I + K)``
            (:func:`~kronjax.coriolis_star` with its pair of velocity indices symmetrised, ``K``
            the commutation matrix).
        d2tau_dvddq: ``d/dq_k (d tau_i / dvd_j) = d M_ij / dq_k``
            (:func:`~kronjax.mass_matrix_derivative`).

    Example:
        Entry ``[i, j nv + k]`` of a field is ``[i, j, k]`` of its ``(nv, nv, nv)`` reshape:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> second = kj.inverse_dynamics_second_derivatives(model, jnp.zeros(2), jnp.ones(2), jnp.zeros(2))
        >>> second._fields
        ('d2tau_dq2', 'd2tau_dqdv', 'd2tau_dv2', 'd2tau_dvddq')
        >>> second.d2tau_dv2.reshape(2, 2, 2).shape
        (2, 2, 2)
    """

    d2tau_dq2: Float[Array, "nv nv*nv"]
    d2tau_dqdv: Float[Array, "nv nv*nv"]
    d2tau_dv2: Float[Array, "nv nv*nv"]
    d2tau_dvddq: Float[Array, "nv nv*nv"]


def inverse_dynamics_second_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    vd: Float[ArrayLike, " nv"],
) -> InverseDynamicsSecondDerivatives:
    """Second-order partial derivatives of inverse dynamics ``tau(q, v, vd)``
    (:func:`~kronjax.inverse_dynamics`), the four tensors of Pinocchio's
    ``ComputeRNEASecondOrderDerivatives`` in Khang's layout (the other second derivatives are zero:
    ``tau`` is affine in ``vd``, which enters through ``M(q)`` alone).

    :class:`~kronjax.chain.Tree` models: IDSVA-SO, the algorithm of Singh, Russell and Wensing
    (arXiv:2203.01497), as Pinocchio writes it, on the composite-body quantities
    of the first-order derivatives: one dot product per entry, over the triples of coordinates on
    one path of the tree only. Other models: ``jax.jacfwd`` of
    :func:`~kronjax.inverse_dynamics_derivatives`.

    Pinocchio's ``Tensor3x`` ``T`` (``Eigen::Tensor<double, 3>``, column-major, ``T(i, j, k)`` at
    ``i + nv j + nv^2 k``) holds the same numbers: ``T(i, j, k)`` is entry ``[i, j nv + k]`` here,
    so a NumPy array ``t[i, j, k]`` of it converts by ``t.reshape(nv, nv * nv)``, and a raw buffer
    by ``np.frombuffer(buffer).reshape(nv, nv, nv, order="F").reshape(nv, nv * nv)``. Its
    ``dtau_dqdv`` is ``d2tau_dqdv``, ``dtau_dadq`` is ``d2tau_dvddq``.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        vd: ``(nv,)`` joint accelerations.

    Returns:
        :class:`InverseDynamicsSecondDerivatives` ``(d2tau_dq2, d2tau_dqdv, d2tau_dv2,
        d2tau_dvddq)``, each ``(nv, nv^2)``, entry ``[i, j nv + k] = d/dx_k (d tau_i / dy_j)``.

    Example:
        ``d2tau_dvddq`` is ``dM/dq`` and ``d2tau_dv2`` is ``C*`` symmetrised:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> second = kj.inverse_dynamics_second_derivatives(model, q, v, vd)
        >>> second.d2tau_dq2.shape
        (2, 4)
        >>> bool(jnp.allclose(second.d2tau_dvddq, kj.mass_matrix_derivative(model, q)))
        True
        >>> c = kj.coriolis_star(model, q).reshape(2, 2, 2)
        >>> bool(jnp.allclose(second.d2tau_dv2, (c + c.transpose(0, 2, 1)).reshape(2, 4)))
        True
    """
    q, v, vd = check_inputs(model, q=q, v=v, vd=vd)
    require_inertials(model)
    if isinstance(model.kinematics, Tree):
        return InverseDynamicsSecondDerivatives(*rnea_second_derivatives(model, q, v, vd))
    n = model.nv

    def first(x: Array) -> tuple:  # at (q, v) = x, along the chart of 1-DoF coordinates
        return inverse_dynamics_derivatives(model, x[:n], x[n:], vd)

    dq, dv, mass = jax.jacfwd(first)(jnp.concatenate([q, v]))
    khang = lambda t: t.reshape(n, n * n)  # noqa: E731
    return InverseDynamicsSecondDerivatives(khang(dq[..., :n]), khang(dq[..., n:]), khang(dv[..., n:]), khang(mass[..., :n]))


def inverse_dynamics_hessian(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    vd: Float[ArrayLike, " nv"],
    lam: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "2*nv 2*nv"], Float[Array, "nv nv"]]:
    """The Hessian of ``λ^T tau`` with respect to ``(q, v)`` and its ``vd``-``q`` block: what an
    exact-Hessian NLP solver or second-order DDP contracts the second derivatives of the dynamics
    into (``λ`` the multipliers of ``tau``, or the value gradient).

    ``H = d²(λ^T tau(q ⊕ a, v, vd)) / d(a, v)²`` at ``a = 0`` (symmetric; ``q ⊕ a`` the tangent
    chart, :func:`~kronjax.integrate`) is ``λ`` contracted with the first index of
    :func:`inverse_dynamics_second_derivatives`, the ``(q, q)`` block symmetrised (which changes
    only a free or spherical joint's own block: see
    :attr:`InverseDynamicsSecondDerivatives.d2tau_dq2`). ``tau`` being linear in ``vd``, the only
    other block is ``d²(λ^T tau) / dvd_j dq_k = λ^T dM[:, j] / dq_k``.

    :class:`~kronjax.chain.Tree` models: without the tensors, by the λ-contracted algorithm of
    Singh, Russell and Wensing (arXiv:2203.01497): ``λ`` enters the recursions as a second
    velocity, and each entry is a sum of a few dot products over a pair of coordinates on one path
    of the tree, as in the first-order derivatives. Other models: the tensors contracted.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` joint velocities.
        vd: ``(nv,)`` joint accelerations.
        lam: ``(nv,)`` the weights ``λ`` of the joint forces.

    Returns:
        ``(hessian, vd_q)``: ``hessian`` ``(2 nv, 2 nv)``, rows and columns ``(q, v)`` in that
        order (``[q_j, v_k]`` is ``λ^T d/dv_k (d tau / dq_j)``); ``vd_q`` ``(nv, nv)``, ``[j, k] =
        λ^T dM[:, j] / dq_k``.

    Example:
        The Hessian of ``λ^T tau`` by JAX's own differentiation agrees:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> lam = jnp.array([0.4, -1.0])
        >>> hessian, vd_q = kj.inverse_dynamics_hessian(model, q, v, vd, lam)
        >>> x = jnp.concatenate([q, v])
        >>> scalar = lambda x: lam @ kj.inverse_dynamics(model, x[:2], x[2:], vd)
        >>> bool(jnp.allclose(hessian, jax.hessian(scalar)(x), atol=1e-4))
        True
    """
    _check_weights(model.nv, lam, "lam")
    if not isinstance(model.kinematics, Tree):
        return _contracted(inverse_dynamics_second_derivatives(model, q, v, vd), lam)
    q, v, vd = check_inputs(model, q=q, v=v, vd=vd)
    require_inertials(model)
    return rnea_hessian(model, q, v, vd, jnp.asarray(lam))


def _contracted(second: tuple, weights: ArrayLike) -> tuple[Array, Array]:
    """The ``(2 nv, 2 nv)`` Hessian in ``(q, v)`` and the ``(nv, nv)`` third block of ``weights``
    contracted with the first index of four second-derivative tensors ``(qq, qv, vv, third-q)``
    (Khang's layout), the ``(q, q)`` block symmetrised."""
    n = second[0].shape[0]
    weights = jnp.asarray(weights, second[0].dtype)
    qq, qv, vv, third = ((weights @ t).reshape(n, n) for t in second)
    return jnp.block([[(qq + qq.T) / 2, qv], [qv.T, vv]]), third


def _check_weights(n: int, weights: ArrayLike, name: str) -> None:
    if jnp.shape(weights) != (n,):
        raise ValueError(f"{name} must have shape ({n},), one weight per coordinate; got shape {jnp.shape(weights)}")


class ForwardDynamicsSecondDerivatives(NamedTuple):
    """The second-order partial derivatives of ``vd(q, v, tau)``, each ``(nv, nv^2)`` in Khang's
    layout: entry ``[i, j nv + k]`` is ``d/dx_k`` of entry ``[i, j]`` of the first-order
    derivative (:func:`~kronjax.forward_dynamics_derivatives`), ``x_k`` along the tangent space for
    a configuration coordinate (as :class:`InverseDynamicsSecondDerivatives`).

    Attributes:
        d2vd_dq2: ``d/dq_k (d vd_i / dq_j)``.
        d2vd_dqdv: ``d/dv_k (d vd_i / dq_j)``.
        d2vd_dv2: ``d/dv_k (d vd_i / dv_j)``.
        d2vd_dtaudq: ``d/dq_k (d vd_i / dtau_j) = d (M^-1)_ij / dq_k``.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> second = kj.forward_dynamics_second_derivatives(model, jnp.zeros(2), jnp.ones(2), jnp.zeros(2))
        >>> second._fields
        ('d2vd_dq2', 'd2vd_dqdv', 'd2vd_dv2', 'd2vd_dtaudq')
    """

    d2vd_dq2: Float[Array, "nv nv*nv"]
    d2vd_dqdv: Float[Array, "nv nv*nv"]
    d2vd_dv2: Float[Array, "nv nv*nv"]
    d2vd_dtaudq: Float[Array, "nv nv*nv"]


def forward_dynamics_second_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
) -> ForwardDynamicsSecondDerivatives:
    """Second-order partial derivatives of forward dynamics ``vd(q, v, tau)``
    (:func:`~kronjax.forward_dynamics`), from those of inverse dynamics by the chain rule through
    ``M^-1`` (Singh, Russell and Wensing, arXiv:2302.06001): ``tau(q, v, vd(q, v,
    tau)) = tau`` differentiated twice, with ``tau`` affine in ``vd`` (``d tau / dvd = M(q)``)::

        d2vd/dx_j dy_k = -M^-1 (d2tau/dx_j dy_k + dM/dx_j dvd/dy_k + dM/dy_k dvd/dx_j)

    for ``x, y`` in ``(q, v)`` (``dM/dv = 0``), the inverse-dynamics tensors taken at ``vd``, and
    ``d/dq_k (M^-1) = -M^-1 (dM/dq_k) M^-1``. The ``tau``-``tau`` and ``tau``-``v`` ones are zero.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        tau: ``(nv,)`` joint forces and torques.

    Returns:
        :class:`ForwardDynamicsSecondDerivatives` ``(d2vd_dq2, d2vd_dqdv, d2vd_dv2,
        d2vd_dtaudq)``, each ``(nv, nv^2)``, entry ``[i, j nv + k] = d/dx_k (d vd_i / dy_j)``.

    Example:
        ``d2vd_dtaudq`` is the derivative of ``M^-1``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, tau = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([50.0, 20.0])
        >>> second = kj.forward_dynamics_second_derivatives(model, q, v, tau)
        >>> inverse = jax.jacfwd(lambda q: jnp.linalg.inv(kj.mass_matrix(model, q)))(q)
        >>> bool(jnp.allclose(second.d2vd_dtaudq, inverse.reshape(2, 4), atol=1e-4))
        True
    """
    vd, vd_q, vd_v, minv = _forward_first_order(model, q, v, tau)
    n = model.nv
    tau_qq, tau_qv, tau_vv, mass_q = (t.reshape(n, n, n) for t in inverse_dynamics_second_derivatives(model, q, v, vd))
    # [m, j, k] = (dM/dq_j dvd/dx_k)_m
    through_q = jnp.einsum("mlj,lk->mjk", mass_q, vd_q)
    through_v = jnp.einsum("mlj,lk->mjk", mass_q, vd_v)
    solve = lambda t: -jnp.einsum("im,mjk->ijk", minv, t).reshape(n, n * n)  # noqa: E731
    return ForwardDynamicsSecondDerivatives(
        solve(tau_qq + through_q + through_q.transpose(0, 2, 1)),
        solve(tau_qv + through_v),
        solve(tau_vv),
        solve(jnp.einsum("mlk,lj->mjk", mass_q, minv)),
    )


def _forward_first_order(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike) -> tuple[Array, ...]:
    """``(vd, dvd/dq, dvd/dv, M^-1)`` at ``(q, v, tau)``, by one pass on a tree."""
    q, v, tau = check_inputs(model, q=q, v=v, tau=tau)
    require_inertials(model)
    if not isinstance(model.kinematics, Tree):
        return forward_dynamics(model, q, v, tau), *forward_dynamics_derivatives(model, q, v, tau)
    return tree_forward_first_order(model, q, v, tau)


def forward_dynamics_hessian(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    mu: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "2*nv 2*nv"], Float[Array, "nv nv"]]:
    """The Hessian of ``μ^T vd`` with respect to ``(q, v)`` and its ``tau``-``q`` block: DDP's
    ``f_xx`` contracted with the value gradient (``μ``), from
    :func:`forward_dynamics_second_derivatives` as :func:`inverse_dynamics_hessian` is from the
    inverse-dynamics tensors.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration.
        v: ``(nv,)`` joint velocities.
        tau: ``(nv,)`` joint forces and torques.
        mu: ``(nv,)`` the weights ``μ`` of the accelerations.

    Returns:
        ``(hessian, tau_q)``: ``hessian`` ``(2 nv, 2 nv)``, rows and columns ``(q, v)`` (the
        ``(q, q)`` block symmetrised); ``tau_q`` ``(nv, nv)``, ``[j, k] = μ^T d (M^-1)[:, j] / dq_k``.

    Example:
        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, tau = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([50.0, 20.0])
        >>> mu = jnp.array([0.4, -1.0])
        >>> hessian, tau_q = kj.forward_dynamics_hessian(model, q, v, tau, mu)
        >>> scalar = lambda x: mu @ kj.forward_dynamics(model, x[:2], x[2:], tau)
        >>> bool(jnp.allclose(hessian, jax.hessian(scalar)(jnp.concatenate([q, v])), rtol=1e-3, atol=1e-3))
        True
    """
    _check_weights(model.nv, mu, "mu")
    vd, vd_q, vd_v, minv = _forward_first_order(model, q, v, tau)
    lam = minv @ jnp.asarray(mu, minv.dtype)
    return forward_hessian(vd_q, vd_v, minv, *inverse_dynamics_hessian(model, q, v, vd, lam))
