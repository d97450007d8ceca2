"""Inverse dynamics: Newton-Euler for trees, the Lagrangian by ``jax.jvp`` of the energies, or
Khang's ``M vd + C* (v ⊗ v) + g``. Its derivatives (Carpentier and Mansard, RSS 2018)."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords, renamed_value
from ..chain import Model, Tree
from ..chain._model import armature_force
from ..kinematics._jacobians import along_tangent, tangent_origin
from ..passive import passive_forces
from . import _rnea, _rnea_derivatives
from ._bodies import chart_velocities, check_inputs, kinetic, require_inertials
from ._rules import tree_rnea
from ._terms import gravity, unchecked_coriolis_star, unchecked_mass_matrix
from ._wrenches import Wrench, as_wrenches, unchecked_generalized_forces

INVERSE_DYNAMICS_METHODS = ("auto", "rnea", "euler_lagrange", "kron")


@eqx.filter_jit
def _euler_lagrange(model: Model, q: Array, v: Array, vd: Array) -> Array:
    """Euler-Lagrange (Truc 16): ``d/dt (dL/dqd) - dL/dq`` with ``L = T - P``, by autodiff:
    ``d/dt (dL/dqd)`` is a forward-mode derivative of the reverse-mode gradient along ``(v, vd)``.

    With multi-DoF joints ``q`` is not a vector space, so the same equations are written in the
    exponential chart at ``q``, ``xi -> q ⊕ xi`` (:func:`kronjax.integrate`, ``xi`` in velocity
    coordinates): ``L_c(xi, xi') = L(q ⊕ xi, B(xi) xi')`` with ``B(xi) xi'`` the velocity of
    ``q ⊕ xi(t)``, and ``tau = d/dt (dL_c/dxi') - dL_c/dxi`` at ``xi = 0``, ``xi' = v``, ``xi'' = v'``
    (the Euler-Poincare equations). The bodies' velocities come from a forward-mode derivative of the
    poses along the chart, so ``B`` is exact and never formed; per joint ``B(xi) xi' = xi' - [xi, xi']
    / 2 + O(xi^2)`` (``dexp_{-xi}``), whose first-order term is antisymmetric in ``(xi, xi')``, hence
    ``v' = xi''`` at ``xi = 0``. For 1-DoF models the chart is ``q`` itself."""
    ine = require_inertials(model)
    chart = along_tangent(model, q, model.poses)  # xi -> poses(q ⊕ xi), or q -> poses(q)

    def lagrangian(x, xd):
        centres, centre_v, w = chart_velocities(chart, ine.com, x, xd)
        return kinetic(ine, centre_v, w) + jnp.einsum("b,bp,p->", ine.mass, centres, model.gravity)

    x = tangent_origin(model, q)
    dl_dqd = jax.grad(lagrangian, argnums=1)
    _, ddt = jax.jvp(dl_dqd, (x, v), (v, vd))
    # the rotors' A vd by definition (MuJoCo's, Pinocchio's), not through the energy: with
    # multi-DoF joints an inertia A in the chart would add gyroscopic terms that armature has not
    return ddt - jax.grad(lagrangian, argnums=0)(x, v) + armature_force(model, vd)


def _kron_id(model: Model, q: Array, v: Array, vd: Array) -> Array:
    c_star = unchecked_coriolis_star(model, q)
    return unchecked_mass_matrix(model, q) @ vd + c_star @ jnp.kron(v, v) + gravity(model, q)


def checked_method(method: str, where: str) -> str:
    """An inverse-dynamics ``method`` of :data:`INVERSE_DYNAMICS_METHODS`, its deprecated spelling
    ``"lagrangian"`` (beside :func:`kronjax.constrained.solve`'s ``"lagrange"``) mapped with a warning."""
    method = renamed_value(method, {"lagrangian": "euler_lagrange"}, f"{where}(method=...)")
    if method not in INVERSE_DYNAMICS_METHODS:
        raise ValueError(f"unknown inverse-dynamics method {method!r}; expected one of {INVERSE_DYNAMICS_METHODS}")
    return method


def resolve_method(model: Model, method: str) -> str:
    method = checked_method(method, "inverse_dynamics")
    if method == "auto":
        return "rnea" if isinstance(model.kinematics, Tree) else "euler_lagrange"
    if method == "rnea" and not isinstance(model.kinematics, Tree):
        raise ValueError(
            "method='rnea' needs a Tree model (from_dh / from_joints); this model's kinematics is a "
            f"{type(model.kinematics).__name__}: use method='euler_lagrange' (or 'auto', 'kron')"
        )
    return method


@renamed_keywords(qd="v", qdd="vd")
def inverse_dynamics(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    vd: Float[ArrayLike, " nv"],
    method: str = "auto",
    wrenches: Wrench | Sequence[Wrench] | None = None,
    passive: bool = False,
    derivatives: str = "analytic",
) -> Float[Array, " nv"]:
    """Joint forces/torques ``tau`` that produce ``vd`` at ``(q, v)`` (``(n,)``)::

        tau = M vd + C*(q) (v ⊗ v) + g(q) - f_ext      (Tuan 100, Truc 44, Parsa 38)

    with ``f_ext = generalized_forces(model, q, wrenches)``.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        vd: ``(nv,)`` joint accelerations.
        method:

            * ``"auto"`` (default): ``"rnea"`` for :class:`~kronjax.chain.Tree` models,
              ``"euler_lagrange"`` otherwise.
            * ``"rnea"``: recursive Newton-Euler (``O(n)``, never forms an ``n x n^2`` tensor);
              Tree models only.
            * ``"euler_lagrange"``: the Euler-Lagrange equations (Truc 16) of ``L = T - P`` by
              forward-over-reverse autodiff (``jax.jvp`` of ``jax.grad``); any model, including
              :func:`~kronjax.chain.from_function` ones. With free, spherical or planar joints
              they are taken in the exponential chart ``xi -> q ⊕ xi`` at ``q`` (the
              Euler-Poincare equations), where ``xi' = v`` and ``xi'' = vd`` at ``xi = 0``.
            * ``"kron"``: the papers' way, ``M vd + C* (v ⊗ v) + g`` with :func:`mass_matrix`,
              :func:`coriolis_star` (``n x n^2``) and :func:`gravity`.
        wrenches: external loads (see :func:`generalized_forces`); ``None`` for none.
        passive: also overcome the joints' damping and friction: ``tau - passive_forces(model,
            q, v)`` (:mod:`kronjax.passive`; off by default).
        derivatives: how JAX differentiates ``"rnea"`` with respect to the state (the other
            methods have no rules of their own: JAX differentiates them).

            * ``"analytic"`` (default): by the analytical derivatives of
              :func:`inverse_dynamics_derivatives`, registered as a JAX rule. Fastest for
              Jacobians (``jax.jacfwd``, ``jax.jacrev``).
            * ``"autodiff"``: JAX differentiates the recursion itself. Faster for the gradient of
              a scalar (one vector-Jacobian product) and for second derivatives
              (forward-over-reverse Hessians), which is what the interior-point method of
              :mod:`kronjax.trajopt` computes. Its programs hold a copy of the recursion per
              unbranched run of bodies: on a serial chain they compile about as fast as the
              rule's, on a branched tree several times slower (measured on the benchmarks'
              measurements page, ``docs/benchmarks/measurements.md``). With free or spherical joints the
              derivatives are along ``q``'s coordinates as written, where the rule's are taken
              along the joints' tangent space: the two differ for a change of ``q`` that leaves
              the unit sphere of a quaternion.

    Returns:
        ``(nv,)``: ``tau``.

    Example:
        The three methods agree with ``M vd + C* (v ⊗ v) + g``, and at rest ``tau = g``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, v, vd)  # "auto": "rnea" for this tree
        >>> tau.shape
        (2,)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, v, vd, method="euler_lagrange")))
        True
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, v, vd, method="kron")))
        True
        >>> bool(jnp.allclose(kj.inverse_dynamics(model, q, jnp.zeros(2), jnp.zeros(2)), kj.gravity(model, q)))
        True
    """
    method = resolve_method(model, method)
    if derivatives not in ("analytic", "autodiff"):
        raise ValueError(f"derivatives must be 'analytic' or 'autodiff', got {derivatives!r}")
    q, v, vd = check_inputs(model, q=q, v=v, vd=vd)
    require_inertials(model)
    rnea = tree_rnea if derivatives == "analytic" else _rnea.rnea
    tau = {"rnea": rnea, "euler_lagrange": _euler_lagrange, "kron": _kron_id}[method](model, q, v, vd)
    wrenches = as_wrenches(wrenches)
    if wrenches:
        tau = tau - unchecked_generalized_forces(model, q, wrenches)
    if passive:
        tau = tau - passive_forces(model, q, v)
    return tau


@renamed_keywords(qd="v", qdd="vd")
def inverse_dynamics_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    vd: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """Partial derivatives of inverse dynamics ``tau(q, v, vd)`` (:func:`inverse_dynamics`):
    ``(dtau_dq, dtau_dqd, dtau_dqdd)``, each ``n x n`` with entry ``[i, j] = d tau_i / d x_j``
    (row: output joint force, column: input coordinate); ``dtau_dqdd`` is ``M(q)``.

    :class:`~kronjax.chain.Tree` models: the analytical derivatives of the recursive Newton-Euler
    algorithm of Carpentier and Mansard, "Analytical derivatives of rigid body dynamics
    algorithms", RSS 2018 (world-frame form, as Pinocchio's ``computeRNEADerivatives``), in
    ``O(n^2)`` with composite-body quantities; the same rule is registered with JAX, so
    ``jax.jacfwd`` / ``jax.jacrev`` / ``jax.grad`` of :func:`inverse_dynamics` (``"rnea"``) use
    it. Other models: ``jax.jacfwd`` of :func:`inverse_dynamics`.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        vd: ``(nv,)`` joint accelerations.

    Returns:
        ``(dtau_dq, dtau_dqd, dtau_dqdd)``, each ``(nv, nv)``, ``[i, j] = d tau_i / d x_j``
        (along the tangent space for multi-DoF joints).

    Example:
        ``dtau_dqdd`` is ``M``, and the partial derivatives are those of ``jax.jacfwd``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> dq, dqd, dqdd = kj.inverse_dynamics_derivatives(model, q, v, vd)
        >>> dq.shape
        (2, 2)
        >>> bool(jnp.allclose(dqdd, kj.mass_matrix(model, q)))
        True
        >>> bool(jnp.allclose(dq, jax.jacfwd(kj.inverse_dynamics, argnums=1)(model, q, v, vd)))
        True
    """
    q, v, vd = check_inputs(model, q=q, v=v, vd=vd)
    require_inertials(model)
    if not isinstance(model.kinematics, Tree):
        return jax.jacfwd(inverse_dynamics, argnums=(1, 2, 3))(model, q, v, vd)
    return _rnea_derivatives.rnea_derivatives(model, q, v, vd)[1:]
