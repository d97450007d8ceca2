"""Forward dynamics: articulated bodies for trees, a Cholesky factor of ``M`` otherwise. Its derivatives (Carpentier and Mansard, RSS 2018, sec. V)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords
from ..chain import Model, Tree
from ..passive import passive_forces
from . import _aba_derivatives
from ._bodies import check_inputs, require_inertials
from ._inverse import inverse_dynamics
from ._rules import mass_inputs, positive_definite, tree_aba
from ._terms import unchecked_mass_matrix
from ._wrenches import Wrench, as_wrenches, unchecked_generalized_forces


@renamed_keywords(qd="v")
def forward_dynamics(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    wrenches: Wrench | Sequence[Wrench] | None = None,
    passive: bool = False,
) -> Float[Array, " nv"]:
    """Joint accelerations ``vd`` (``(n,)``) from ``M vd = tau + f_ext - C v - g`` (Tuan 100);
    with ``passive=True`` the joints' damping and friction are added to ``tau``
    (:func:`kronjax.passive.passive_forces`; off by default, so that this is the inverse of
    :func:`inverse_dynamics`).

    :class:`~kronjax.chain.Tree` models use the articulated-body algorithm (Featherstone's ABA,
    ``O(n)``, no ``M`` formed); models with mimic joints and other models solve with :func:`mass_matrix` by a Cholesky
    factorisation (``jax.scipy.linalg.cho_factor`` / ``cho_solve``), the bias ``C v + g`` being
    :func:`inverse_dynamics` with ``vd = 0`` (no ``n x n^2`` tensor either way). External
    wrenches enter as ``f_ext = generalized_forces(model, q, wrenches)``.

    Mass matrices that are not positive definite (a joint that moves no mass or inertia, or
    inertials edited to a negative mass): the articulated-body pivots (which are the pivots of a
    factorisation of ``M``) or the Cholesky factor then have non-finite or non-positive entries,
    and the result goes through ``equinox.error_if``: the call raises a runtime error saying that
    ``M`` is not positive definite (also under ``jit`` and ``vmap``, where any failing batch
    element raises) instead of returning a silent wrong number. Equinox's ``EQX_ON_ERROR``
    environment variable selects other behaviours (``"nan"`` returns NaNs, ``"breakpoint"`` stops
    in a debugger).

    Precision near singular ``M``: the relative error of ``vd`` is at most about
    ``kappa eps`` (``eps`` the machine epsilon: 2.2e-16 in float64, 1.2e-7 in float32), where
    ``kappa`` is the condition number of ``M`` *up to a diagonal scaling* (the componentwise
    ``|| |M^-1| |M| ||``), not ``cond(M)`` itself. Measured against the exact solution of
    Pinocchio's float64 ``M`` and bias (``tests/test_conditioning.py``): a very light distal body
    (the Panda's link 7 ``1e-8`` and ``1e-14`` times lighter: ``cond(M)`` 5.8e10 and 5.8e16)
    costs nothing, 1e-16 to 3e-16 (the scaling is diagonal, ``kappa`` stays about 60);
    a mass matrix that is nearly singular for a kinematic reason (two coincident joint axes with
    a body of relative inertia ``r`` between them, ``cond(M) = 1.3 / r``) loses ``0.02`` to
    ``0.2`` times ``cond(M) eps``: 9e-9 at cond 1.3e8, 6e-7 at 1.3e10, 3e-5 at 1.3e12, 5e-3 at
    1.3e14, and no correct digit from ``cond(M) eps ~ 1`` (float64 ~1e16, float32 ~1e7), as
    Pinocchio's ``aba``. Only pivots that are non-positive or non-finite raise (above): a
    positive pivot at rounding level passes, as a number without digits, so that the hot path
    carries no condition estimate. Where that can happen, check ``jnp.linalg.cond`` of
    :func:`mass_matrix` (a scaled one: ``M / sqrt(d d^T)``, ``d = diag M``) outside the loop.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        tau: ``(nv,)`` joint forces and torques.
        wrenches: external loads (see :func:`generalized_forces`); ``None`` for none.
        passive: add the joints' damping and friction, ``passive_forces(model, q, v)``, to
            ``tau`` (:mod:`kronjax.passive`; off by default).

    Returns:
        ``(nv,)``: ``vd``.

    Example:
        The inverse of :func:`inverse_dynamics`; the gravity torque holds the arm at rest:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, v, vd)
        >>> bool(jnp.allclose(kj.forward_dynamics(model, q, v, tau), vd))
        True
        >>> rest = kj.forward_dynamics(model, q, jnp.zeros(2), kj.gravity(model, q))
        >>> bool(jnp.allclose(rest, 0.0, atol=1e-9))
        True
    """
    q, v, tau = check_inputs(model, q=q, v=v, tau=tau)
    require_inertials(model)
    wrenches = as_wrenches(wrenches)
    if wrenches:
        tau = tau + unchecked_generalized_forces(model, q, wrenches)
    if passive:
        tau = tau + passive_forces(model, q, v)
    if isinstance(model.kinematics, Tree) and not model.kinematics.has_mimic:
        return tree_aba(model, q, v, tau)
    bias = inverse_dynamics(model, q, v, jnp.zeros_like(v))
    mass = unchecked_mass_matrix(model, q)
    factor = jsl.cho_factor(mass, lower=True)
    vd = jsl.cho_solve(factor, tau - bias)
    pivots = jnp.where(jnp.all(jnp.isfinite(factor[0])), jnp.diagonal(factor[0]), jnp.nan)
    return positive_definite(vd, pivots, mass)


@renamed_keywords(qd="v")
def forward_dynamics_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """Partial derivatives of forward dynamics ``vd(q, v, tau)`` (:func:`forward_dynamics`):
    ``(dqdd_dq, dqdd_dqd, dqdd_dtau)``, each ``n x n`` with entry ``[i, j] = d qdd_i / d x_j``
    (row: output acceleration, column: input coordinate); ``dqdd_dtau`` is ``M(q)^-1``.

    :class:`~kronjax.chain.Tree` models as Carpentier and Mansard, "Analytical derivatives of rigid
    body dynamics algorithms", RSS 2018 (sec. V): ``M vd + b(q, v) = tau`` differentiated,
    ``dqdd/d(q, v) = -M^-1 dtau/d(q, v)`` with the analytical derivatives of inverse dynamics
    (:func:`inverse_dynamics_derivatives`) at ``vd = M^-1 (tau - b)``; ``M^-1`` from a Cholesky
    factorisation of ``M`` (no articulated-body pass). The same rule is registered with JAX for
    :func:`forward_dynamics` (whose value under differentiation is then this ``vd``, equal to the
    articulated-body one to round-off). Other models: ``jax.jacfwd`` of :func:`forward_dynamics`. A
    matrix that is not positive definite raises as in :func:`forward_dynamics`; a NaN or inf in
    ``q``, ``v``, ``tau`` or the model's parameters gives NaN/inf entries instead
    (:mod:`kronjax._finite`).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        tau: ``(nv,)`` joint forces and torques.

    Returns:
        ``(dqdd_dq, dqdd_dqd, dqdd_dtau)``, each ``(nv, nv)``, ``[i, j] = d qdd_i / d x_j``
        (along the tangent space for multi-DoF joints).

    Example:
        ``dqdd_dtau`` is ``M^-1``, and ``dqdd_dq = -M^-1 dtau_dq`` (:func:`inverse_dynamics_derivatives`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, tau = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([50.0, 20.0])
        >>> dq, dqd, dtau = kj.forward_dynamics_derivatives(model, q, v, tau)
        >>> M = kj.mass_matrix(model, q)
        >>> bool(jnp.allclose(dtau @ M, jnp.eye(2)))
        True
        >>> vd = kj.forward_dynamics(model, q, v, tau)
        >>> bool(jnp.allclose(M @ dq, -kj.inverse_dynamics_derivatives(model, q, v, vd)[0]))
        True
    """
    q, v, tau = check_inputs(model, q=q, v=v, tau=tau)
    require_inertials(model)
    if not isinstance(model.kinematics, Tree):
        return jax.jacfwd(forward_dynamics, argnums=(1, 2, 3))(model, q, v, tau)
    return tree_forward_first_order(model, q, v, tau)[1:]


def tree_forward_first_order(model: Model, q: Array, v: Array, tau: Array) -> tuple[Array, Array, Array, Array]:
    """``(vd, dqdd_dq, dqdd_dqd, M^-1)`` of a :class:`~kronjax.chain.Tree` model (checked inputs),
    from one pass of the analytic derivatives (:func:`forward_dynamics_derivatives`)."""
    vd, dq, dqd, minv, pivots = _aba_derivatives.aba_derivatives(model, q, v, tau)
    minv = positive_definite(minv, pivots, mass_inputs(model, q))
    return vd, -minv @ dq, -minv @ dqd, minv
