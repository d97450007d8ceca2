"""Dynamics in Khang's layout: Tuan et al. 2019 (sec. 4, eqs. 92-101), Truc et al. 2019 (sec. 3-4,
eqs. 16-55) and Parsa (sec. 3, eqs. 12-38).

The equations of motion are (Tuan 100, Truc 29/44, Parsa 38)::

    M(q) qdd + C*(q) (qd ⊗ qd) + g(q) = tau + f_ext
    M(q) qdd + C(q, qd) qd      + g(q) = tau + f_ext

Every function here is pure in ``(model, q, ...)`` for one configuration; batch with ``jax.vmap``.
All work under ``jax.jit`` / ``jax.vmap`` / ``jax.grad``, in float32 and float64, and are
differentiable with respect to the model's parameters (masses, centres of mass, inertias,
gravity, joint placements are pytree leaves of the :class:`~kronjax.chain.Model`).

Layouts (``n`` = number of joint coordinates):

* ``M`` is ``n x n``; ``dM/dq`` and ``C*`` are ``n x n^2`` in Khang's layout: entry
  ``(i, j n + k) = d M[i, j] / d q_k`` (Tuan definition 2, eq. 5);
* ``C`` is ``n x n``; ``g``, ``tau`` and generalized forces are ``(n,)``.

Two routes to inverse dynamics exist and agree:

* the papers' way, ``method="kron"``: ``M qdd + C* (qd ⊗ qd) + g`` with ``M`` from the bodies'
  Jacobians (95), ``dM/dq`` from their Hessians by Khang's product rule (9), and ``C*`` from (101);
  it forms the ``n x n^2`` tensor ``C*``;
* the fast ways, which never form an ``n x n^2`` tensor: ``method="rnea"``, a recursive
  Newton-Euler algorithm (spatial vectors in body coordinates) for :class:`~kronjax.chain.Tree`
  models, and ``method="lagrangian"``, the Euler-Lagrange equations (Truc 16) evaluated with
  forward-over-reverse automatic differentiation of ``L = T - P``, which works for any model,
  including :func:`~kronjax.chain.from_function` models. ``method="auto"`` (the default) picks
  ``"rnea"`` for trees and ``"lagrangian"`` otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax.custom_derivatives import SymbolicZero
from jaxtyping import Array, ArrayLike, Float

from . import _aba, _composite, _derivatives, _rnea
from . import _spatial as sp
from ._finite import all_finite
from .calculus import product_rule, skew
from .chain import Model, Tree, armature_force, choose_method, with_armature
from .configuration import configuration_tangent
from .kinematics import _along_tangent, _hessians, _jacobians, _tangent_jvp, _tangent_origin
from .passive import passive_forces

__all__ = [
    "CORIOLIS_FORMS",
    "MATRIX_METHODS",
    "INVERSE_DYNAMICS_METHODS",
    "Wrench",
    "mass_matrix",
    "mass_matrix_derivative",
    "coriolis_star",
    "coriolis_matrix",
    "gravity",
    "kinetic_energy",
    "potential_energy",
    "generalized_forces",
    "inverse_dynamics",
    "forward_dynamics",
    "inverse_dynamics_derivatives",
    "forward_dynamics_derivatives",
]

CORIOLIS_FORMS = ("truc", "tuan", "kane")
MATRIX_METHODS = ("auto", "composite", "jacobians")
INVERSE_DYNAMICS_METHODS = ("auto", "rnea", "lagrangian", "kron")
_WRENCH_FRAMES = ("base", "body")


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Mass matrix, its derivative, Coriolis matrices, gravity, energies
# --------------------------------------------------------------------------------------------


def _matrix_method(model: Model, method: str) -> str:
    return choose_method(model, method, MATRIX_METHODS, "composite", "jacobians")


def _mass_matrix(model: Model, q: Array, method: str = "auto") -> Array:
    """``M`` with the rotor inertias (:attr:`~kronjax.chain.Model.armature`) on its diagonal."""
    return with_armature(model, _body_mass_matrix(model, q, method))


def _body_mass_matrix(model: Model, q: Array, method: str = "auto") -> Array:
    """The bodies' part of ``M``, without the armature."""
    ine = _inertials(model)
    if _matrix_method(model, method) == "composite":
        return _composite.mass_matrix(model, q)
    jt, jr = _com_jacobians(model, q)
    m = jnp.einsum("b,bpi,bpj->ij", ine.mass, jt, jt) + jnp.einsum("bpi,bpr,brj->ij", jr, ine.inertia, jr)
    return 0.5 * (m + m.T)


def mass_matrix(model: Model, q: Float[ArrayLike, " nq"], method: str = "auto") -> Float[Array, "nv nv"]:
    """Generalized mass matrix ``M(q)`` (``n x n``), Tuan eq. (95) / Truc eq. (28)::

        M = sum_i  m_i J_TGi^T J_TGi + J_Ri^T I_Gi J_Ri  (+ diag(armature))

    with ``J_TGi`` the base-frame translational Jacobian of body ``i``'s centre of mass (45) and
    ``J_Ri``, ``I_Gi`` both in body ``i``'s frame (40), and the model's rotor inertias on the
    diagonal (:attr:`~kronjax.chain.Model.armature`; constant, so ``dM/dq`` and ``C`` are the
    bodies').

    Args:
        method: ``"jacobians"``: the sum above, from the bodies' Jacobians (symmetrized, so
            that it is symmetric to the last bit); ``"composite"``: ``M[i, j] = S_i . Ic_j S_j``
            from composite rigid bodies (:mod:`kronjax._composite`, ``O(n^2)``, Tree models
            only, exactly symmetric); ``"auto"`` (default): ``"composite"`` for Tree models.

    Example:
        The double pendulum's closed form (:func:`kronjax.models.double_pendulum`), and ``M``
        symmetric positive definite:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model = kj.models.double_pendulum()  # m, L, Lc, Izz = 14.59, 1.22, 0.61, 1.36
        >>> M = kj.mass_matrix(model, jnp.array([0.3, 0.7]))
        >>> m, L, Lc, Izz, c2 = 14.59, 1.22, 0.61, 1.36, np.cos(0.7)
        >>> m12 = Izz + m * (Lc**2 + L * Lc * c2)
        >>> closed = [[2 * Izz + m * (L**2 + 2 * Lc**2 + 2 * L * Lc * c2), m12], [m12, Izz + m * Lc**2]]
        >>> bool(np.allclose(M, closed))
        True
        >>> bool(jnp.allclose(M, M.T)) and bool(jnp.all(jnp.linalg.eigvalsh(M) > 0))
        True
        >>> bool(jnp.allclose(kj.mass_matrix(model, jnp.array([0.3, 0.7]), method="jacobians"), M))
        True
    """
    return _mass_matrix(model, model.check_q(q), method)


def _mass_matrix_derivative(model: Model, q: Array, method: str = "auto") -> Array:
    ine = _inertials(model)
    n = model.nv
    if _matrix_method(model, method) == "composite":
        return _composite.mass_matrix_derivative(model, q)
    jt, jr, ht, hr = _com_hessians(model, q)

    def body(mass, inertia, jt, jr, ht, hr):
        # d(A B)/dq = dA/dq (B ⊗ E_n) + A dB/dq  (Tuan 9), with A = J^T, B = I J, dB/dq = I H.
        translational = mass * product_rule(jt.T, _transpose_derivative(ht, n), jt, ht)
        rotational = product_rule(jr.T, _transpose_derivative(hr, n), inertia @ jr, inertia @ hr)
        return translational + rotational

    return jnp.sum(jax.vmap(body)(ine.mass, ine.inertia, jt, jr, ht, hr), axis=0)


def mass_matrix_derivative(model: Model, q: Float[ArrayLike, " nq"], method: str = "auto") -> Float[Array, "nv nv*nv"]:
    """``dM/dq`` in Khang's layout, ``n x n^2``: entry ``(i, j n + k) = d M[i, j] / d q_k``.

    With ``method="jacobians"``, assembled the papers' way from the bodies' Jacobians and
    Hessians with Khang's product rule (Tuan eq. 9)::

        d(J^T A J)/dq = d(J^T)/dq (A J ⊗ E_n) + J^T A H,      H = dJ/dq,

    once with ``J = J_TG``, ``H = H_TG`` in the base frame (45, 67) and ``A = m E_3``, once with
    ``J = J_R``, ``H = H_R`` in the body frame (40, 61) and ``A = I_G`` (constant in that frame).
    ``d(J^T)/dq`` is a permutation of ``H``: entry ``(j, p n + k) = dJ[p, j]/dq_k``. That costs
    ``O(nb n^3)`` (every body's ``3 x n^2`` Hessians).

    With ``method="composite"`` (the default for Tree models, ``"auto"``), from composite rigid
    bodies in ``O(n^3)``: each entry is a few spatial dot products (:mod:`kronjax._composite`).

    Example:
        The layout against ``jax.jacfwd`` of :func:`mass_matrix` (``[i, j, k] = dM[i, j]/dq_k``),
        and the double pendulum's ``dM[0, 0]/dq_2 = -2 m L Lc sin q2``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> dM = kj.mass_matrix_derivative(model, q)
        >>> dM.shape
        (2, 4)
        >>> bool(jnp.allclose(dM, jax.jacfwd(kj.mass_matrix, argnums=1)(model, q).reshape(2, 4)))
        True
        >>> bool(np.isclose(dM[0, 0 * 2 + 1], -2 * 14.59 * 1.22 * 0.61 * np.sin(0.7)))  # (i, j n + k), i = j = 0, k = 1
        True
    """
    return _mass_matrix_derivative(model, model.check_q(q), method)


def _coriolis_star_from(dm: Array) -> Array:
    n = dm.shape[0]
    # (d vec M / dq)^T: entry (k, j n + i) = dM[i, j]/dq_k (vec stacks columns).
    dvec_t = dm.reshape(n, n, n).transpose(2, 1, 0).reshape(n, n * n)
    return dm - 0.5 * dvec_t


def _chart_terms(model: Model, q: Array, dm: Array) -> tuple[Array, Array, Array]:
    """For a model with multi-DoF joints: ``(dM_c, A, M)``, the derivative of the mass matrix in
    the chart of sub-joints at ``q`` (:mod:`kronjax._spatial`) ``(n, n, n)`` from the tangent
    one ``dm`` ``(n, n^2)``, the chart's structure terms ``A`` ``(n, n, n)`` and ``M``.

    In the chart ``v = B(t) t'``, ``B(0) = 1``, ``dB[p, l]/dt_m = A[p, l, m]``, so its mass matrix
    ``B^T M B`` has ``dM_c[i, j, m] = dM[i, j, m] + A[p, i, m] M[p, j] + M[i, p] A[p, j, m]``; the
    chart's ``C*_c`` (Tuan 101) and ``C_c`` (Truc 52) hold for ``t'' = v' - A (v ⊗ v)`` (the
    Lie-bracket term), so ``C* = C*_c - M A`` and ``C = C_c - M A (E_n ⊗ v)``: ``M v' + C* (v ⊗ v)
    + g = tau``, and ``Mdot - 2 C`` stays skew-symmetric (``M A(v) - (M A(v))^T`` is)."""
    n = dm.shape[0]
    m = _body_mass_matrix(model, q)  # the armature's force A v' has no velocity term
    a = jnp.asarray(sp.lie_derivative_terms(model.kinematics), m.dtype)
    chart = dm.reshape(n, n, n) + jnp.einsum("pim,pj->ijm", a, m) + jnp.einsum("ip,pjm->ijm", m, a)
    return chart, a, m


def _coriolis_star(model: Model, q: Array, method: str = "auto") -> Array:
    if model.has_multi_dof:
        n = model.nv
        chart, a, m = _chart_terms(model, q, _mass_matrix_derivative(model, q, method))
        return _coriolis_star_from(chart.reshape(n, n * n)) - m @ a.reshape(n, n * n)
    if _matrix_method(model, method) == "composite" and not model.kinematics.has_mimic:
        _inertials(model)
        return _composite.coriolis_star(model, q)
    return _coriolis_star_from(_mass_matrix_derivative(model, q, method))


def coriolis_star(model: Model, q: Float[ArrayLike, " nq"], method: str = "auto") -> Float[Array, "nv nv*nv"]:
    """Velocity-free Coriolis/centrifugal matrix ``C*(q)`` (``n x n^2``), Tuan eq. (101)::

        C*(q) = dM/dq - 1/2 (d vec(M) / dq)^T,

    entry ``(i, j n + k) = dM[i, j]/dq_k - 1/2 dM[k, j]/dq_i``, so that the Coriolis and centrifugal
    forces are ``C*(q) (qd ⊗ qd)`` (Tuan 100). ``d vec(M)/dq`` is ``n^2 x n``, row ``j n + i`` being
    ``dM[i, j]/dq`` (``vec`` stacks columns). Not symmetrized in ``(j, k)``: only its symmetric
    part (:func:`kronjax.symmetrize`) is fixed by ``C* (qd ⊗ qd)``.

    ``method`` chooses how ``dM/dq`` is computed (:func:`mass_matrix_derivative`): ``"composite"``
    in ``O(n^3)`` (Tree models; the default), ``"jacobians"`` by the papers' product rule.

    Example:
        The equations of motion (Tuan 100): ``M qdd + C* (qd ⊗ qd) + g`` is
        :func:`inverse_dynamics`:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd, qdd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> C_star = kj.coriolis_star(model, q)
        >>> C_star.shape
        (2, 4)
        >>> tau = kj.mass_matrix(model, q) @ qdd + C_star @ jnp.kron(qd, qd) + kj.gravity(model, q)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, qd, qdd)))
        True
    """
    return _coriolis_star(model, model.check_q(q), method)


def coriolis_matrix(
    model: Model, q: Float[ArrayLike, " nq"], qd: Float[ArrayLike, " nv"], form: str = "truc"
) -> Float[Array, "nv nv"]:
    """Coriolis/centrifugal matrix ``C(q, qd)`` (``n x n``); every form gives the same
    ``C qd = C*(q) (qd ⊗ qd)``.

    Args:
        form: which factorisation:

            * ``"truc"`` (default), Truc eq. (52), the Christoffel-symbol matrix::

                  C = 1/2 [dM/dq (E_n ⊗ qd) + dM/dq (qd ⊗ E_n) - (dM/dq (qd ⊗ E_n))^T]

              ``Mdot - 2C`` is skew-symmetric (Truc 55). Pinocchio's ``computeCoriolisMatrix``
              gives the same matrix.
            * ``"tuan"``, Tuan eq. (97): ``C = dM/dq (E_n ⊗ qd) - 1/2 (dM/dq (qd ⊗ E_n))^T``.
              ``Mdot - 2C`` is in general *not* skew-symmetric.
            * ``"kane"``, Parsa eq. (36), from the bodies' Jacobians and their time derivatives,
              never forming ``dM/dq``::

                  C = sum_i m_i J_TGi^T Jdot_TGi
                          + J_Ri^T (I_Gi Jdot_Ri + [w_i x] I_Gi J_Ri + I_Gi [w_i x] J_Ri)

              with ``J_R``, ``I_G``, ``w = J_R qd`` in the body frame and ``J_TG`` in the base
              frame (Parsa's ``J_i = [J_w; J_v]``, ``W_i = diag([w_i x], 0)``). ``Mdot - 2C`` is
              skew-symmetric; the last term is zero on ``qd`` (Parsa 37) and makes it so.
              ``Jdot = dJ/dt`` comes from a forward-mode derivative of ``J`` along ``qd``.

    ``Mdot = dM/dq (E_n ⊗ qd)`` (Tuan 8, Truc 40).

    Example:
        Every form gives ``C qd = C* (qd ⊗ qd)``; ``Mdot - 2C`` is skew-symmetric for ``"truc"``
        and ``"kane"`` (``Mdot`` here a forward-mode derivative of :func:`mass_matrix` along ``qd``):

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> Mdot = jax.jvp(lambda q: kj.mass_matrix(model, q), (q,), (qd,))[1]
        >>> c_qd = kj.coriolis_star(model, q) @ jnp.kron(qd, qd)
        >>> for form in ("truc", "tuan", "kane"):
        ...     C = kj.coriolis_matrix(model, q, qd, form=form)
        ...     print(form, bool(jnp.allclose(C @ qd, c_qd)), bool(jnp.allclose(Mdot - 2 * C, -(Mdot - 2 * C).T)))
        truc True True
        tuan True False
        kane True True
    """
    if form not in CORIOLIS_FORMS:
        raise ValueError(f"unknown Coriolis form {form!r}; expected one of {CORIOLIS_FORMS}")
    q, qd = _check_state(model, q=q, qd=qd)
    return _coriolis_matrix(model, q, qd, form)


@eqx.filter_jit
def _coriolis_matrix(model: Model, q: Array, qd: Array, form: str) -> Array:
    n = model.nv
    if form == "kane":
        ine = _inertials(model)
        (jt, jr), (jtd, jrd) = _tangent_jvp(model, q, lambda q: _com_jacobians(model, q), qd)
        w = jnp.einsum("bpi,i->bp", jr, qd)
        wx = skew(w)  # (nb, 3, 3)
        inertia = ine.inertia
        inner = (
            jnp.einsum("bpr,bri->bpi", inertia, jrd)
            + jnp.einsum("bpr,brs,bsi->bpi", wx, inertia, jr)
            + jnp.einsum("bpr,brs,bsi->bpi", inertia, wx, jr)
        )
        return jnp.einsum("b,bpi,bpj->ij", ine.mass, jt, jtd) + jnp.einsum("bpi,bpj->ij", jr, inner)
    dm = _mass_matrix_derivative(model, q)
    correction = 0
    if model.has_multi_dof:  # in the chart of sub-joints (_chart_terms), then back
        dm, a, m = _chart_terms(model, q, dm)
        correction = m @ jnp.einsum("plk,k->pl", a, qd.astype(a.dtype))
    dm = dm.reshape(n, n, n)  # [i, j, k] = dM[i, j]/dq_k
    qd = qd.astype(dm.dtype)
    # the products with E_n ⊗ qd and qd ⊗ E_n as sums of n slices: under vmap, matrix products
    # with them are batches of tiny matrix products, which XLA:CPU runs slowly
    u = sum(dm[:, :, k] * qd[k] for k in range(n))  # Mdot = dM/dq (E_n ⊗ qd)
    v = sum(dm[:, j, :] * qd[j] for j in range(n))  # dM/dq (qd ⊗ E_n)
    if form == "tuan":
        return u - 0.5 * v.T - correction
    return 0.5 * (u + v - v.T) - correction


def gravity(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, " nv"]:
    """Generalized gravity ``g(q) = (dP/dq)^T`` (Truc eqs. 17, 45; Parsa eq. 27)::

        g = -sum_i m_i J_TGi^T g0,     P = -sum_i m_i g0 . r_Gi,

    with ``g0 = model.gravity`` (base frame) and ``J_TGi`` the base-frame Jacobian of body ``i``'s
    centre of mass. The equations of motion carry ``+ g(q)`` on the left-hand side. For Tree
    models the same sum is taken per subtree: ``g_j = -S_j . Ic_j (0, g0)`` (:mod:`kronjax._composite`).

    Example:
        The double pendulum's closed form (:func:`kronjax.models.double_pendulum`), and
        ``g = dP/dq``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> g = kj.gravity(model, q)
        >>> m, L, Lc, g0 = 14.59, 1.22, 0.61, 9.81
        >>> closed = [g0 * m * ((L + Lc) * np.cos(0.3) + Lc * np.cos(1.0)), g0 * m * Lc * np.cos(1.0)]
        >>> bool(np.allclose(g, closed))
        True
        >>> bool(jnp.allclose(g, jax.grad(kj.potential_energy, argnums=1)(model, q)))
        True
    """
    q = model.check_q(q)
    ine = _inertials(model)
    if isinstance(model.kinematics, Tree):
        return _composite.gravity(model, q)
    jt = _jacobians(model, q, ine.com, "base")[0]
    return -jnp.einsum("b,bpi,p->i", ine.mass, jt, model.gravity)


def potential_energy(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, ""]:
    """Gravitational potential energy ``P = -sum_i m_i g0 . r_Gi`` (Truc 17, Parsa 26), zero when
    all centres of mass are at the base origin.

    Example:
        The double pendulum (gravity ``-y``): ``P = m g0 (Lc sin q1 + L sin q1 + Lc sin(q1 + q2))``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model = kj.models.double_pendulum()
        >>> P = kj.potential_energy(model, jnp.array([0.3, 0.7]))
        >>> m, L, Lc, g0 = 14.59, 1.22, 0.61, 9.81
        >>> bool(np.isclose(P, m * g0 * ((L + Lc) * np.sin(0.3) + Lc * np.sin(1.0))))
        True
        >>> bool(kj.potential_energy(model, jnp.zeros(2)) == 0)  # both links along +x, at the base's height
        True
    """
    q = model.check_q(q)
    ine = _inertials(model)
    r, p = model.poses(q)
    centres = p + jnp.einsum("bij,bj->bi", r, ine.com)
    return -jnp.einsum("b,bp,p->", ine.mass, centres, model.gravity)


def kinetic_energy(model: Model, q: Float[ArrayLike, " nq"], qd: Float[ArrayLike, " nv"]) -> Float[Array, ""]:
    """Kinetic energy ``T = sum_i 1/2 m_i v_Gi . v_Gi + 1/2 w_i . I_Gi w_i`` (Truc 22, Parsa 13),
    with ``w_i`` in the body frame, plus the rotors' ``1/2 qd . diag(armature) qd``; equals ``1/2
    qd^T M qd`` (Tuan 93). Computed from one forward-mode pass through the poses (no Jacobian
    matrices).

    Example:
        ``T = 1/2 qd^T M qd`` (Tuan 93):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> T = kj.kinetic_energy(model, q, qd)
        >>> bool(jnp.isclose(T, 0.5 * qd @ kj.mass_matrix(model, q) @ qd))
        True
    """
    q, qd = _check_state(model, q=q, qd=qd)
    ine = _inertials(model)
    _, v, w = _velocities(model, q, qd)
    return _kinetic(ine, v, w) + 0.5 * jnp.sum(qd * armature_force(model, qd))


# --------------------------------------------------------------------------------------------
# External wrenches
# --------------------------------------------------------------------------------------------


class Wrench(eqx.Module):
    """An external force and moment acting on one body (Parsa sec. 3.3).

    Args:
        body: the body, by index or name.
        force: ``(3,)`` force (default zero).
        moment: ``(3,)`` free moment (couple), in addition to the moment of ``force`` about the
            body-frame origin (default zero).
        point: where ``force`` acts, fixed on the body: ``None`` (the body frame's origin, as in
            :func:`kronjax.translational_jacobian`), ``"com"`` (the body's centre of mass) or a
            3-vector in body-frame coordinates.
        frame: the axes in which ``force`` and ``moment`` are given: ``"base"`` or ``"body"``
            (the body's own axes, Parsa's convention). ``point`` is always in body coordinates.

    ``force`` and ``moment`` (and a vector ``point``) are pytree leaves: they may be traced,
    batched with ``jax.vmap`` and differentiated.

    Example:
        A moment about ``z`` on the double pendulum's second link acts on both joints (their
        axes are ``z``); a force through a joint axis does not act on that joint:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> couple = kj.Wrench("link2", moment=(0.0, 0.0, 2.0))
        >>> bool(np.allclose(kj.generalized_forces(model, q, couple), [2.0, 2.0]))
        True
        >>> pin = kj.Wrench("link2", force=(0.0, -5.0, 0.0))  # at link 2's frame origin: the elbow
        >>> bool(jnp.isclose(kj.generalized_forces(model, q, pin)[1], 0.0, atol=1e-12))
        True
    """

    body: int | str = eqx.field(static=True)
    force: Float[Array, 3]
    moment: Float[Array, 3]
    point: Float[Array, 3] | None
    at_com: bool = eqx.field(static=True)
    frame: str = eqx.field(static=True)

    def __init__(self, body: int | str, force=None, moment=None, point=None, frame: str = "base"):
        if frame not in _WRENCH_FRAMES:
            raise ValueError(f"unknown wrench frame {frame!r}; expected one of {_WRENCH_FRAMES}")
        self.body = body
        self.frame = frame
        self.force = self._vector(force, "force")
        self.moment = self._vector(moment, "moment")
        if isinstance(point, str):
            if point != "com":
                raise ValueError(f"Wrench point must be None, 'com' or a 3-vector, got {point!r}")
            self.point, self.at_com = None, True
        else:
            self.point = None if point is None else self._vector(point, "point")
            self.at_com = False

    @staticmethod
    def _vector(x, what: str) -> Array:
        if x is None:
            return jnp.zeros(3)
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.shape != (3,):
            raise ValueError(f"Wrench {what} must be a 3-vector, got shape {x.shape}")
        return x


def _wrench_body(model: Model, k: int, wrench: Wrench) -> int:
    try:
        return model.body_index(wrench.body)
    except (KeyError, IndexError, TypeError) as err:
        raise ValueError(
            f"wrench {k} acts on body {wrench.body!r}, which this model does not have; "
            f"its bodies are {list(model.body_names)} (indices 0..{model.n_bodies - 1})"
        ) from err


def _as_wrenches(wrenches) -> list[Wrench]:
    if wrenches is None:
        return []
    if isinstance(wrenches, Wrench):
        return [wrenches]
    if isinstance(wrenches, dict) or not isinstance(wrenches, Sequence):
        raise TypeError(f"wrenches must be a Wrench or a sequence of Wrench, got {type(wrenches).__name__}")
    out = list(wrenches)
    for k, w in enumerate(out):
        if not isinstance(w, Wrench):
            raise TypeError(f"wrenches[{k}] must be a kronjax.Wrench, got {w!r}")
    return out


def _generalized_forces(model: Model, q: Array, wrenches: list[Wrench]) -> Array:
    nb, n = model.n_bodies, model.nv
    if not wrenches:
        return jnp.zeros(n, q.dtype)
    bodies = [_wrench_body(model, k, w) for k, w in enumerate(wrenches)]
    if any(w.at_com for w in wrenches):
        _inertials(model)
    rotations = model.poses(q)[0]
    dtype = jnp.result_type(q, rotations)
    zeros = jnp.zeros((nb, 3), dtype)
    jt, jr = _jacobians(model, q, None, "base")  # body-frame origins (29), J_R (37)
    forces, moments = zeros, zeros
    for b, w in zip(bodies, wrenches):
        r = rotations[b]
        force, moment = w.force.astype(dtype), w.moment.astype(dtype)
        f, m = (r @ force, r @ moment) if w.frame == "body" else (force, moment)
        if w.at_com:
            point = model.inertials.com[b]
        elif w.point is not None:
            point = w.point.astype(dtype)
        else:
            point = None
        if point is not None:  # moment of f about the frame origin: (R p) x f
            m = m + _cross(r @ point, f)
        forces = forces.at[b].add(f)
        moments = moments.at[b].add(m)
    # tau = sum_i J_T(point)^T f + J_R^T m, with J_T(point) = J_T(origin) - [R p x] J_R (Tuan 45)
    return jnp.einsum("bpi,bp->i", jt, forces) + jnp.einsum("bpi,bp->i", jr, moments)


def generalized_forces(
    model: Model, q: Float[ArrayLike, " nq"], wrenches: Wrench | Sequence[Wrench] | None
) -> Float[Array, " nv"]:
    """Joint-space generalized forces of external wrenches (Parsa eqs. 28, 31)::

        f = sum_w J_T(point_w)^T force_w + J_R^T moment_w

    (base-frame ``J_T`` of the point of application and ``J_R``; a body-frame wrench is rotated to
    the base first). ``f`` appears on the right-hand side: ``M qdd + C qd + g = tau + f``. Its
    power equals the wrenches' power: ``f . qd = sum force . v_point + moment . omega``.

    Args:
        wrenches: a :class:`Wrench`, a sequence of them (several may act on the same body), or
            ``None`` (no external load: zeros).

    Raises:
        ValueError: a wrench acts on a body the model does not have (the message names it).

    Example:
        A downward force ``F`` at the double pendulum's tip (``y = L sin q1 + L sin(q1 + q2)``)
        gives ``f = -F (dy/dq)^T``; with it, :func:`inverse_dynamics` needs ``f`` less torque:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> tip = kj.Wrench("link2", force=(0.0, -10.0, 0.0), point=(1.22, 0.0, 0.0))
        >>> f = kj.generalized_forces(model, q, tip)
        >>> bool(np.allclose(f, [-10.0 * 1.22 * (np.cos(0.3) + np.cos(1.0)), -10.0 * 1.22 * np.cos(1.0)]))
        True
        >>> qd, qdd = jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, qd, qdd, wrenches=tip)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, qd, qdd) - f))
        True
    """
    return _generalized_forces(model, model.check_q(q), _as_wrenches(wrenches))


# --------------------------------------------------------------------------------------------
# Inverse dynamics
# --------------------------------------------------------------------------------------------


def _cross(a: Array, b: Array) -> Array:
    """Cross products of ``(..., 3)`` arrays (a few elementwise ops; cheaper to compile than
    ``jnp.cross``)."""
    a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
    b1, b2, b3 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=-1)


@eqx.filter_jit
def _lagrangian(model: Model, q: Array, qd: Array, qdd: Array) -> Array:
    """Euler-Lagrange (Truc 16): ``d/dt (dL/dqd) - dL/dq`` with ``L = T - P``, by autodiff:
    ``d/dt (dL/dqd)`` is a forward-mode derivative of the reverse-mode gradient along ``(qd, qdd)``.

    With multi-DoF joints ``q`` is not a vector space, so the same equations are written in the
    exponential chart at ``q``, ``xi -> q ⊕ xi`` (:func:`kronjax.integrate`, ``xi`` in velocity
    coordinates): ``L_c(xi, xi') = L(q ⊕ xi, B(xi) xi')`` with ``B(xi) xi'`` the velocity of
    ``q ⊕ xi(t)``, and ``tau = d/dt (dL_c/dxi') - dL_c/dxi`` at ``xi = 0``, ``xi' = v``, ``xi'' = v'``
    (the Euler-Poincare equations). The bodies' velocities come from a forward-mode derivative of the
    poses along the chart, so ``B`` is exact and never formed; per joint ``B(xi) xi' = xi' - [xi, xi']
    / 2 + O(xi^2)`` (``dexp_{-xi}``), whose first-order term is antisymmetric in ``(xi, xi')``, hence
    ``v' = xi''`` at ``xi = 0``. For 1-DoF models the chart is ``q`` itself."""
    ine = _inertials(model)
    chart = _along_tangent(model, q, model.poses)  # xi -> poses(q ⊕ xi), or q -> poses(q)

    def lagrangian(x, xd):
        centres, v, w = _chart_velocities(chart, ine.com, x, xd)
        return _kinetic(ine, v, w) + jnp.einsum("b,bp,p->", ine.mass, centres, model.gravity)

    x = _tangent_origin(model, q)
    dl_dqd = jax.grad(lagrangian, argnums=1)
    _, ddt = jax.jvp(dl_dqd, (x, qd), (qd, qdd))
    # the rotors' A qdd by definition (MuJoCo's, Pinocchio's), not through the energy: with
    # multi-DoF joints an inertia A in the chart would add gyroscopic terms that armature has not
    return ddt - jax.grad(lagrangian, argnums=0)(x, qd) + armature_force(model, qdd)


def _kron_id(model: Model, q: Array, qd: Array, qdd: Array) -> Array:
    c_star = _coriolis_star(model, q)
    return _mass_matrix(model, q) @ qdd + c_star @ jnp.kron(qd, qd) + gravity(model, q)


def _resolve_method(model: Model, method: str) -> str:
    if method not in INVERSE_DYNAMICS_METHODS:
        raise ValueError(f"unknown inverse-dynamics method {method!r}; expected one of {INVERSE_DYNAMICS_METHODS}")
    if method == "auto":
        return "rnea" if isinstance(model.kinematics, Tree) else "lagrangian"
    if method == "rnea" and not isinstance(model.kinematics, Tree):
        raise ValueError(
            "method='rnea' needs a Tree model (from_dh / from_joints); this model's kinematics is a "
            f"{type(model.kinematics).__name__}: use method='lagrangian' (or 'auto', 'kron')"
        )
    return method


def inverse_dynamics(
    model: Model,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    qdd: Float[ArrayLike, " nv"],
    method: str = "auto",
    wrenches: Wrench | Sequence[Wrench] | None = None,
    passive: bool = False,
    derivatives: str = "analytic",
) -> Float[Array, " nv"]:
    """Joint forces/torques ``tau`` that produce ``qdd`` at ``(q, qd)`` (``(n,)``)::

        tau = M qdd + C*(q) (qd ⊗ qd) + g(q) - f_ext      (Tuan 100, Truc 44, Parsa 38)

    with ``f_ext = generalized_forces(model, q, wrenches)``.

    Args:
        method:

            * ``"auto"`` (default): ``"rnea"`` for :class:`~kronjax.chain.Tree` models,
              ``"lagrangian"`` otherwise.
            * ``"rnea"``: recursive Newton-Euler (``O(n)``, never forms an ``n x n^2`` tensor);
              Tree models only.
            * ``"lagrangian"``: the Euler-Lagrange equations (Truc 16) of ``L = T - P`` by
              forward-over-reverse autodiff (``jax.jvp`` of ``jax.grad``); any model, including
              :func:`~kronjax.chain.from_function` ones. With free, spherical or planar joints
              they are taken in the exponential chart ``xi -> q ⊕ xi`` at ``q`` (the
              Euler-Poincare equations), where ``xi' = qd`` and ``xi'' = qdd`` at ``xi = 0``.
            * ``"kron"``: the papers' way, ``M qdd + C* (qd ⊗ qd) + g`` with :func:`mass_matrix`,
              :func:`coriolis_star` (``n x n^2``) and :func:`gravity`.
        wrenches: external loads (see :func:`generalized_forces`); ``None`` for none.
        passive: also overcome the joints' damping and friction: ``tau - passive_forces(model,
            q, qd)`` (:mod:`kronjax.passive`; off by default).
        derivatives: how JAX differentiates ``"rnea"`` with respect to the state (the other
            methods have no rules of their own: JAX differentiates them).

            * ``"analytic"`` (default): by the analytical derivatives of
              :func:`inverse_dynamics_derivatives`, registered as a JAX rule. Fastest for
              Jacobians (``jax.jacfwd``, ``jax.jacrev``): the Panda's ``7 x 21`` in about a third
              of the time of ``"autodiff"`` (``jit(vmap(...))``, 10^4 states, CPU).
            * ``"autodiff"``: JAX differentiates the recursion itself. Faster for the gradient of
              a scalar (one vector-Jacobian product: 0.6x the time on the Panda) and for second
              derivatives (forward-over-reverse Hessians: 0.4x), which is what the
              interior-point method of :mod:`kronjax.trajopt` computes. Its programs hold a copy
              of the recursion per unbranched run of bodies: on a serial chain they compile about
              as fast as the rule's, on a branched tree several times slower (a Hessian of a
              4-body tree with a branch: 18 s against 4 s). With free or spherical joints the
              derivatives are along ``q``'s coordinates as written, where the rule's are taken
              along the joints' tangent space: the two differ for a change of ``q`` that leaves
              the unit sphere of a quaternion.

    Example:
        The three methods agree with ``M qdd + C* (qd ⊗ qd) + g``, and at rest ``tau = g``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd, qdd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, qd, qdd)  # "auto": "rnea" for this tree
        >>> tau.shape
        (2,)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, qd, qdd, method="lagrangian")))
        True
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, qd, qdd, method="kron")))
        True
        >>> bool(jnp.allclose(kj.inverse_dynamics(model, q, jnp.zeros(2), jnp.zeros(2)), kj.gravity(model, q)))
        True
    """
    method = _resolve_method(model, method)
    if derivatives not in ("analytic", "autodiff"):
        raise ValueError(f"derivatives must be 'analytic' or 'autodiff', got {derivatives!r}")
    q, qd, qdd = _check_state(model, q=q, qd=qd, qdd=qdd)
    _inertials(model)
    rnea = _tree_rnea if derivatives == "analytic" else _rnea.rnea
    tau = {"rnea": rnea, "lagrangian": _lagrangian, "kron": _kron_id}[method](model, q, qd, qdd)
    wrenches = _as_wrenches(wrenches)
    if wrenches:
        tau = tau - _generalized_forces(model, q, wrenches)
    if passive:
        tau = tau - passive_forces(model, q, qd)
    return tau


# --------------------------------------------------------------------------------------------
# Forward dynamics
# --------------------------------------------------------------------------------------------


def forward_dynamics(
    model: Model,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    wrenches: Wrench | Sequence[Wrench] | None = None,
    passive: bool = False,
) -> Float[Array, " nv"]:
    """Joint accelerations ``qdd`` (``(n,)``) from ``M qdd = tau + f_ext - C qd - g`` (Tuan 100);
    with ``passive=True`` the joints' damping and friction are added to ``tau``
    (:func:`kronjax.passive.passive_forces`; off by default, so that this is the inverse of
    :func:`inverse_dynamics`).

    :class:`~kronjax.chain.Tree` models use the articulated-body algorithm (Featherstone's ABA,
    ``O(n)``, no ``M`` formed); models with mimic joints and other models solve with :func:`mass_matrix` by a Cholesky
    factorisation (``jax.scipy.linalg.cho_factor`` / ``cho_solve``), the bias ``C qd + g`` being
    :func:`inverse_dynamics` with ``qdd = 0`` (no ``n x n^2`` tensor either way). External
    wrenches enter as ``f_ext = generalized_forces(model, q, wrenches)``.

    Mass matrices that are not positive definite (a joint that moves no mass or inertia, or
    inertials edited to a negative mass): the articulated-body pivots (which are the pivots of a
    factorisation of ``M``) or the Cholesky factor then have non-finite or non-positive entries,
    and the result goes through ``equinox.error_if``: the call raises a runtime error saying that
    ``M`` is not positive definite (also under ``jit`` and ``vmap``, where any failing batch
    element raises) instead of returning a silent wrong number. Equinox's ``EQX_ON_ERROR``
    environment variable selects other behaviours (``"nan"`` returns NaNs, ``"breakpoint"`` stops
    in a debugger).

    Precision near singular ``M``: the relative error of ``qdd`` is at most about
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

    Example:
        The inverse of :func:`inverse_dynamics`; the gravity torque holds the arm at rest:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd, qdd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, qd, qdd)
        >>> bool(jnp.allclose(kj.forward_dynamics(model, q, qd, tau), qdd))
        True
        >>> rest = kj.forward_dynamics(model, q, jnp.zeros(2), kj.gravity(model, q))
        >>> bool(jnp.allclose(rest, 0.0, atol=1e-9))
        True
    """
    q, qd, tau = _check_state(model, q=q, qd=qd, tau=tau)
    _inertials(model)
    wrenches = _as_wrenches(wrenches)
    if wrenches:
        tau = tau + _generalized_forces(model, q, wrenches)
    if passive:
        tau = tau + passive_forces(model, q, qd)
    if isinstance(model.kinematics, Tree) and not model.kinematics.has_mimic:
        return _tree_aba(model, q, qd, tau)
    bias = inverse_dynamics(model, q, qd, jnp.zeros_like(qd))
    mass = _mass_matrix(model, q)
    factor = jsl.cho_factor(mass, lower=True)
    qdd = jsl.cho_solve(factor, tau - bias)
    pivots = jnp.where(jnp.all(jnp.isfinite(factor[0])), jnp.diagonal(factor[0]), jnp.nan)
    return _positive_definite(qdd, pivots, mass)


def _positive_definite(qdd: Array, pivots: Array, inputs) -> Array:
    """``qdd`` once the pivots of ``M`` are checked positive. ``inputs``, what ``M`` is computed
    from (``M`` itself, or ``q`` and the model's parameters): a NaN or inf there makes the pivots
    NaN, which is that input propagating (:mod:`kronjax._finite`), not a failed factorisation, so
    only finite inputs raise."""
    factorised = jnp.all(pivots > 0) | ~all_finite(inputs)
    return eqx.error_if(
        qdd,
        ~factorised,
        "forward_dynamics: the mass matrix is not positive definite (its factorisation failed); "
        "check the model's masses and inertia tensors",
    )


def _checked_aba(model: Model, q: Array, qd: Array, tau: Array) -> Array:
    return _positive_definite(*_aba.aba(model, q, qd, tau), _mass_inputs(model, q))


def _mass_inputs(model: Model, q: Array) -> tuple:
    """What ``M(q)`` of a Tree model is computed from."""
    return q, model.kinematics, model.inertials, model.armature


# --------------------------------------------------------------------------------------------
# Derivatives of the dynamics (Carpentier and Mansard, RSS 2018), also as JAX derivative rules
# --------------------------------------------------------------------------------------------


def _is_zero(tangent) -> bool:
    return all(isinstance(t, SymbolicZero) for t in jax.tree.leaves(tangent))


def _moves_dynamics(model_tangent: Model) -> bool:
    """Whether a model tangent moves what Newton-Euler and the articulated-body algorithm read
    (not the limits, damping or friction)."""
    t = model_tangent
    return not _is_zero((t.kinematics, t.inertials, t.gravity, t.armature))


def _filled(tangent):
    """A model tangent with its symbolic zeros as zero arrays (for ``jax.jvp``)."""
    return jax.tree.map(lambda t: jnp.zeros(t.shape, t.dtype) if isinstance(t, SymbolicZero) else t, tangent)


def _linear_change(linear: list, like: Array) -> Array:
    """``sum D t`` over the ``(D, t)`` in ``linear`` (symbolic zeros skipped)."""
    return sum((d @ t for d, t in linear if not isinstance(t, SymbolicZero)), jnp.zeros_like(like))


def _tau_change(model: Model, state: tuple, model_tangent: Model, linear: list) -> Array:
    """Tangent of ``tau = rnea(model, *state)``: :func:`_linear_change` (analytic partial
    derivatives times state tangents) plus, when the model moves, the forward-mode derivative of
    Newton-Euler with respect to the model."""
    change = _linear_change(linear, state[1])  # shaped like qd: (nv,)
    if _moves_dynamics(model_tangent):
        change = change + jax.jvp(lambda m: _rnea.rnea(m, *state), (model,), (_filled(model_tangent),))[1]
    return change


def _tangent(model: Model, q: Array, tq):
    """A change of ``q`` as velocity coordinates (the analytic derivatives are along them)."""
    if isinstance(tq, SymbolicZero) or not model.has_multi_dof:
        return tq
    return configuration_tangent(model, q, tq)


@jax.custom_jvp
def _tree_rnea(model: Model, q: Array, qd: Array, qdd: Array) -> Array:
    """Newton-Euler whose JAX derivatives with respect to the state are the analytic ones."""
    return _rnea.rnea(model, q, qd, qdd)


@functools.partial(_tree_rnea.defjvp, symbolic_zeros=True)
def _tree_rnea_jvp(primals, tangents):
    model, q, qd, qdd = primals
    t_model, tq, tqd, tqdd = tangents
    tq = _tangent(model, q, tq)
    tau, dq, dqd, mass = _derivatives.rnea_derivatives(model, q, qd, qdd)
    return tau, _tau_change(model, (q, qd, qdd), t_model, [(dq, tq), (dqd, tqd), (mass, tqdd)])


@jax.custom_jvp
def _tree_aba(model: Model, q: Array, qd: Array, tau: Array) -> Array:
    """The articulated-body algorithm (checked) whose JAX derivatives are the analytic ones."""
    return _checked_aba(model, q, qd, tau)


@functools.partial(_tree_aba.defjvp, symbolic_zeros=True)
def _tree_aba_jvp(primals, tangents):
    # M(q) qdd + b(q, qd) = tau differentiated: M dqdd = dtau - dtau/dq dq - dtau/dqd dqd - dtau/dmodel
    model, q, qd, tau = primals
    t_model, tq, tqd, ttau = tangents
    if _moves_dynamics(t_model):
        # the model moves (identification, calibration): the articulated-body algorithm's own
        # derivative, which reads the inertias' upper entries only, as its value does
        tangents = tuple(_filled(t) for t in tangents)
        return jax.jvp(lambda *args: _checked_aba(*args), primals, tangents)
    qdd, dq, dqd, minv, pivots = _derivatives.aba_derivatives(model, q, qd, tau)
    change = _linear_change([(dq, _tangent(model, q, tq)), (dqd, tqd)], qd)
    rhs = -change if isinstance(ttau, SymbolicZero) else ttau - change
    return _positive_definite(qdd, pivots, _mass_inputs(model, q)), minv @ rhs


def inverse_dynamics_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    qdd: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """Partial derivatives of inverse dynamics ``tau(q, qd, qdd)`` (:func:`inverse_dynamics`):
    ``(dtau_dq, dtau_dqd, dtau_dqdd)``, each ``n x n`` with entry ``[i, j] = d tau_i / d x_j``
    (row: output joint force, column: input coordinate); ``dtau_dqdd`` is ``M(q)``.

    :class:`~kronjax.chain.Tree` models: the analytical derivatives of the recursive Newton-Euler
    algorithm of Carpentier and Mansard, "Analytical derivatives of rigid body dynamics
    algorithms", RSS 2018 (world-frame form, as Pinocchio's ``computeRNEADerivatives``), in
    ``O(n^2)`` with composite-body quantities; the same rule is registered with JAX, so
    ``jax.jacfwd`` / ``jax.jacrev`` / ``jax.grad`` of :func:`inverse_dynamics` (``"rnea"``) use
    it. Other models: ``jax.jacfwd`` of :func:`inverse_dynamics`.

    Example:
        ``dtau_dqdd`` is ``M``, and the partial derivatives are those of ``jax.jacfwd``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd, qdd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> dq, dqd, dqdd = kj.inverse_dynamics_derivatives(model, q, qd, qdd)
        >>> dq.shape
        (2, 2)
        >>> bool(jnp.allclose(dqdd, kj.mass_matrix(model, q)))
        True
        >>> bool(jnp.allclose(dq, jax.jacfwd(kj.inverse_dynamics, argnums=1)(model, q, qd, qdd)))
        True
    """
    q, qd, qdd = _check_state(model, q=q, qd=qd, qdd=qdd)
    _inertials(model)
    if not isinstance(model.kinematics, Tree):
        return jax.jacfwd(inverse_dynamics, argnums=(1, 2, 3))(model, q, qd, qdd)
    return _derivatives.rnea_derivatives(model, q, qd, qdd)[1:]


def forward_dynamics_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """Partial derivatives of forward dynamics ``qdd(q, qd, tau)`` (:func:`forward_dynamics`):
    ``(dqdd_dq, dqdd_dqd, dqdd_dtau)``, each ``n x n`` with entry ``[i, j] = d qdd_i / d x_j``
    (row: output acceleration, column: input coordinate); ``dqdd_dtau`` is ``M(q)^-1``.

    :class:`~kronjax.chain.Tree` models as Carpentier and Mansard, "Analytical derivatives of rigid
    body dynamics algorithms", RSS 2018 (sec. V): ``M qdd + b(q, qd) = tau`` differentiated,
    ``dqdd/d(q, qd) = -M^-1 dtau/d(q, qd)`` with the analytical derivatives of inverse dynamics
    (:func:`inverse_dynamics_derivatives`) at ``qdd = M^-1 (tau - b)``; ``M^-1`` from a Cholesky
    factorisation of ``M`` (no articulated-body pass). The same rule is registered with JAX for
    :func:`forward_dynamics` (whose value under differentiation is then this ``qdd``, equal to the
    articulated-body one to round-off). Other models: ``jax.jacfwd`` of :func:`forward_dynamics`. A
    matrix that is not positive definite raises as in :func:`forward_dynamics`; a NaN or inf in
    ``q``, ``qd``, ``tau`` or the model's parameters gives NaN/inf entries instead
    (:mod:`kronjax._finite`).

    Example:
        ``dqdd_dtau`` is ``M^-1``, and ``dqdd_dq = -M^-1 dtau_dq`` (:func:`inverse_dynamics_derivatives`):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, qd, tau = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([50.0, 20.0])
        >>> dq, dqd, dtau = kj.forward_dynamics_derivatives(model, q, qd, tau)
        >>> M = kj.mass_matrix(model, q)
        >>> bool(jnp.allclose(dtau @ M, jnp.eye(2)))
        True
        >>> qdd = kj.forward_dynamics(model, q, qd, tau)
        >>> bool(jnp.allclose(M @ dq, -kj.inverse_dynamics_derivatives(model, q, qd, qdd)[0]))
        True
    """
    q, qd, tau = _check_state(model, q=q, qd=qd, tau=tau)
    _inertials(model)
    if not isinstance(model.kinematics, Tree):
        return jax.jacfwd(forward_dynamics, argnums=(1, 2, 3))(model, q, qd, tau)
    _, dq, dqd, minv, pivots = _derivatives.aba_derivatives(model, q, qd, tau)
    minv = _positive_definite(minv, pivots, _mass_inputs(model, q))
    return -minv @ dq, -minv @ dqd, minv
