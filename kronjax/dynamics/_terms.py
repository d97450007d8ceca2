"""The terms of the equations of motion ``M vd + C* (v ⊗ v) + g = tau`` (Tuan 95-101): the mass
matrix, its derivative, ``C*``, the three Coriolis matrices, gravity and the energies."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords
from .._spatial.expansion import lie_derivative_terms
from ..calculus import product_rule, skew
from ..chain import Model, Tree
from ..chain._model import armature_force, choose_method, with_armature
from ..kinematics._jacobians import tangent_jvp, unchecked_jacobians
from . import _crba
from ._bodies import body_velocities, check_inputs, com_hessians, com_jacobians, kinetic, require_inertials, transpose_derivative

CORIOLIS_FORMS = ("truc", "tuan", "kane")
MATRIX_METHODS = ("auto", "composite", "jacobians")


def _matrix_method(model: Model, method: str) -> str:
    return choose_method(model, method, MATRIX_METHODS, "composite", "jacobians")


def unchecked_mass_matrix(model: Model, q: Array, method: str = "auto") -> Array:
    """``M`` with the rotor inertias (:attr:`~kronjax.chain.Model.armature`) on its diagonal."""
    return with_armature(model, _body_mass_matrix(model, q, method))


def _body_mass_matrix(model: Model, q: Array, method: str = "auto") -> Array:
    """The bodies' part of ``M``, without the armature."""
    ine = require_inertials(model)
    if _matrix_method(model, method) == "composite":
        return _crba.mass_matrix(model, q)
    jt, jr = com_jacobians(model, q)
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
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        method: ``"jacobians"``: the sum above, from the bodies' Jacobians (symmetrized, so
            that it is symmetric to the last bit); ``"composite"``: ``M[i, j] = S_i . Ic_j S_j``
            from composite rigid bodies (:mod:`kronjax.dynamics._crba`, ``O(n^2)``, Tree models
            only, exactly symmetric); ``"auto"`` (default): ``"composite"`` for Tree models.

    Returns:
        ``(nv, nv)``: ``M(q)``, symmetric positive definite.

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
    return unchecked_mass_matrix(model, model.check_q(q), method)


def _mass_matrix_derivative(model: Model, q: Array, method: str = "auto") -> Array:
    ine = require_inertials(model)
    n = model.nv
    if _matrix_method(model, method) == "composite":
        return _crba.mass_matrix_derivative(model, q)
    jt, jr, ht, hr = com_hessians(model, q)

    def body(mass, inertia, jt, jr, ht, hr):
        # d(A B)/dq = dA/dq (B ⊗ E_n) + A dB/dq  (Tuan 9), with A = J^T, B = I J, dB/dq = I H.
        translational = mass * product_rule(jt.T, transpose_derivative(ht, n), jt, ht)
        rotational = product_rule(jr.T, transpose_derivative(hr, n), inertia @ jr, inertia @ hr)
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
    bodies in ``O(n^3)``: each entry is a few spatial dot products (:mod:`kronjax.dynamics._crba`).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        method: as in :func:`mass_matrix`.

    Returns:
        ``(nv, nv^2)``: ``dM/dq`` in Khang's layout, entry ``(i, j n + k) = dM[i, j]/dq_k``.

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
    the chart of sub-joints at ``q`` (:mod:`kronjax._spatial.expansion`) ``(n, n, n)`` from the tangent
    one ``dm`` ``(n, n^2)``, the chart's structure terms ``A`` ``(n, n, n)`` and ``M``.

    In the chart ``v = B(t) t'``, ``B(0) = 1``, ``dB[p, l]/dt_m = A[p, l, m]``, so its mass matrix
    ``B^T M B`` has ``dM_c[i, j, m] = dM[i, j, m] + A[p, i, m] M[p, j] + M[i, p] A[p, j, m]``; the
    chart's ``C*_c`` (Tuan 101) and ``C_c`` (Truc 52) hold for ``t'' = v' - A (v ⊗ v)`` (the
    Lie-bracket term), so ``C* = C*_c - M A`` and ``C = C_c - M A (E_n ⊗ v)``: ``M v' + C* (v ⊗ v)
    + g = tau``, and ``Mdot - 2 C`` stays skew-symmetric (``M A(v) - (M A(v))^T`` is)."""
    n = dm.shape[0]
    m = _body_mass_matrix(model, q)  # the armature's force A v' has no velocity term
    a = jnp.asarray(lie_derivative_terms(model.kinematics), m.dtype)
    chart = dm.reshape(n, n, n) + jnp.einsum("pim,pj->ijm", a, m) + jnp.einsum("ip,pjm->ijm", m, a)
    return chart, a, m


def unchecked_coriolis_star(model: Model, q: Array, method: str = "auto") -> Array:
    if model.has_multi_dof:
        n = model.nv
        chart, a, m = _chart_terms(model, q, _mass_matrix_derivative(model, q, method))
        return _coriolis_star_from(chart.reshape(n, n * n)) - m @ a.reshape(n, n * n)
    if _matrix_method(model, method) == "composite" and not model.kinematics.has_mimic:
        require_inertials(model)
        return _crba.coriolis_star(model, q)
    return _coriolis_star_from(_mass_matrix_derivative(model, q, method))


def coriolis_star(model: Model, q: Float[ArrayLike, " nq"], method: str = "auto") -> Float[Array, "nv nv*nv"]:
    """Velocity-free Coriolis/centrifugal matrix ``C*(q)`` (``n x n^2``), Tuan eq. (101)::

        C*(q) = dM/dq - 1/2 (d vec(M) / dq)^T,

    entry ``(i, j n + k) = dM[i, j]/dq_k - 1/2 dM[k, j]/dq_i``, so that the Coriolis and centrifugal
    forces are ``C*(q) (v ⊗ v)`` (Tuan 100). ``d vec(M)/dq`` is ``n^2 x n``, row ``j n + i`` being
    ``dM[i, j]/dq`` (``vec`` stacks columns). Not symmetrized in ``(j, k)``: only its symmetric
    part (:func:`kronjax.symmetrize`) is fixed by ``C* (v ⊗ v)``.

    ``method`` chooses how ``dM/dq`` is computed (:func:`mass_matrix_derivative`): ``"composite"``
    in ``O(n^3)`` (Tree models; the default), ``"jacobians"`` by the papers' product rule.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        method: as in :func:`mass_matrix`.

    Returns:
        ``(nv, nv^2)``: ``C*(q)`` in Khang's layout, so that ``C*(q) (v ⊗ v)`` is the
        velocity-product force of inverse dynamics.

    Example:
        The equations of motion (Tuan 100): ``M vd + C* (v ⊗ v) + g`` is
        :func:`inverse_dynamics`:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> C_star = kj.coriolis_star(model, q)
        >>> C_star.shape
        (2, 4)
        >>> tau = kj.mass_matrix(model, q) @ vd + C_star @ jnp.kron(v, v) + kj.gravity(model, q)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, v, vd)))
        True
    """
    return unchecked_coriolis_star(model, model.check_q(q), method)


@renamed_keywords(qd="v")
def coriolis_matrix(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"], form: str = "truc"
) -> Float[Array, "nv nv"]:
    """Coriolis/centrifugal matrix ``C(q, v)`` (``n x n``); every form gives the same
    ``C v = C*(q) (v ⊗ v)``.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        form: which factorisation:

            * ``"truc"`` (default), Truc eq. (52), the Christoffel-symbol matrix::

                  C = 1/2 [dM/dq (E_n ⊗ v) + dM/dq (v ⊗ E_n) - (dM/dq (v ⊗ E_n))^T]

              ``Mdot - 2C`` is skew-symmetric (Truc 55). Pinocchio's ``computeCoriolisMatrix``
              gives the same matrix.
            * ``"tuan"``, Tuan eq. (97): ``C = dM/dq (E_n ⊗ v) - 1/2 (dM/dq (v ⊗ E_n))^T``.
              ``Mdot - 2C`` is in general *not* skew-symmetric.
            * ``"kane"``, Parsa eq. (36), from the bodies' Jacobians and their time derivatives,
              never forming ``dM/dq``::

                  C = sum_i m_i J_TGi^T Jdot_TGi
                          + J_Ri^T (I_Gi Jdot_Ri + [w_i x] I_Gi J_Ri + I_Gi [w_i x] J_Ri)

              with ``J_R``, ``I_G``, ``w = J_R v`` in the body frame and ``J_TG`` in the base
              frame (Parsa's ``J_i = [J_w; J_v]``, ``W_i = diag([w_i x], 0)``). ``Mdot - 2C`` is
              skew-symmetric; the last term is zero on ``v`` (Parsa 37) and makes it so.
              ``Jdot = dJ/dt`` comes from a forward-mode derivative of ``J`` along ``v``.

    ``Mdot = dM/dq (E_n ⊗ v)`` (Tuan 8, Truc 40).

    Returns:
        ``(nv, nv)``: ``C(q, v)``, with ``C v = C* (v ⊗ v)`` for every form.

    Example:
        Every form gives ``C v = C* (v ⊗ v)``; ``Mdot - 2C`` is skew-symmetric for ``"truc"``
        and ``"kane"`` (``Mdot`` here a forward-mode derivative of :func:`mass_matrix` along ``v``):

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> Mdot = jax.jvp(lambda q: kj.mass_matrix(model, q), (q,), (v,))[1]
        >>> c_qd = kj.coriolis_star(model, q) @ jnp.kron(v, v)
        >>> for form in ("truc", "tuan", "kane"):
        ...     C = kj.coriolis_matrix(model, q, v, form=form)
        ...     print(form, bool(jnp.allclose(C @ v, c_qd)), bool(jnp.allclose(Mdot - 2 * C, -(Mdot - 2 * C).T)))
        truc True True
        tuan True False
        kane True True
    """
    if form not in CORIOLIS_FORMS:
        raise ValueError(f"unknown Coriolis form {form!r}; expected one of {CORIOLIS_FORMS}")
    q, v = check_inputs(model, q=q, v=v)
    return _coriolis_matrix(model, q, v, form)


@eqx.filter_jit
def _coriolis_matrix(model: Model, q: Array, v: Array, form: str) -> Array:
    n = model.nv
    if form == "kane":
        ine = require_inertials(model)
        (jt, jr), (jtd, jrd) = tangent_jvp(model, q, lambda q: com_jacobians(model, q), v)
        w = jnp.einsum("bpi,i->bp", jr, v)
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
        correction = m @ jnp.einsum("plk,k->pl", a, v.astype(a.dtype))
    dm = dm.reshape(n, n, n)  # [i, j, k] = dM[i, j]/dq_k
    v = v.astype(dm.dtype)
    # the products with E_n ⊗ v and v ⊗ E_n as sums of n slices: under vmap, matrix products
    # with them are batches of tiny matrix products, which XLA:CPU runs slowly
    u = sum(dm[:, :, k] * v[k] for k in range(n))  # Mdot = dM/dq (E_n ⊗ v)
    left = sum(dm[:, j, :] * v[j] for j in range(n))  # dM/dq (v ⊗ E_n)
    if form == "tuan":
        return u - 0.5 * left.T - correction
    return 0.5 * (u + left - left.T) - correction


def gravity(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, " nv"]:
    """Generalized gravity ``g(q) = (dP/dq)^T`` (Truc eqs. 17, 45; Parsa eq. 27)::

        g = -sum_i m_i J_TGi^T g0,     P = -sum_i m_i g0 . r_Gi,

    with ``g0 = model.gravity`` (base frame) and ``J_TGi`` the base-frame Jacobian of body ``i``'s
    centre of mass. The equations of motion carry ``+ g(q)`` on the left-hand side. For Tree
    models the same sum is taken per subtree: ``g_j = -S_j . Ic_j (0, g0)`` (:mod:`kronjax.dynamics._crba`).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``(nv,)``: ``g(q)``, the generalized gravity forces (``dP/dq``).

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
    ine = require_inertials(model)
    if isinstance(model.kinematics, Tree):
        return _crba.gravity(model, q)
    jt = unchecked_jacobians(model, q, ine.com, "base")[0]
    return -jnp.einsum("b,bpi,p->i", ine.mass, jt, model.gravity)


def potential_energy(model: Model, q: Float[ArrayLike, " nq"]) -> Float[Array, ""]:
    """Gravitational potential energy ``P = -sum_i m_i g0 . r_Gi`` (Truc 17, Parsa 26), zero when
    all centres of mass are at the base origin.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        ``()``: the potential energy ``P(q)``.

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
    ine = require_inertials(model)
    r, p = model.poses(q)
    centres = p + jnp.einsum("bij,bj->bi", r, ine.com)
    return -jnp.einsum("b,bp,p->", ine.mass, centres, model.gravity)


@renamed_keywords(qd="v")
def kinetic_energy(model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]) -> Float[Array, ""]:
    """Kinetic energy ``T = sum_i 1/2 m_i v_Gi . v_Gi + 1/2 w_i . I_Gi w_i`` (Truc 22, Parsa 13),
    with ``w_i`` in the body frame, plus the rotors' ``1/2 v . diag(armature) v``; equals ``1/2
    v^T M v`` (Tuan 93). Computed from one forward-mode pass through the poses (no Jacobian
    matrices).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).

    Returns:
        ``()``: the kinetic energy ``T(q, v) = 1/2 v^T M v`` (Tuan 93), rotors included.

    Example:
        ``T = 1/2 v^T M v`` (Tuan 93):

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q, v = jnp.array([0.3, 0.7]), jnp.array([1.0, -2.0])
        >>> T = kj.kinetic_energy(model, q, v)
        >>> bool(jnp.isclose(T, 0.5 * v @ kj.mass_matrix(model, q) @ v))
        True
    """
    q, v = check_inputs(model, q=q, v=v)
    ine = require_inertials(model)
    _, centre_v, w = body_velocities(model, q, v)
    return kinetic(ine, centre_v, w) + 0.5 * jnp.sum(v * armature_force(model, v))
