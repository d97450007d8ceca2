"""Identification of inertial and friction parameters from joint torques.

Inverse dynamics is linear in the *standard inertial parameters* of the bodies (Atkeson, An and
Hollerbach 1986; Khalil and Dombre 2002, ch. 12)::

    tau = Y(q, qd, qdd) pi,        pi = [pi_1, ..., pi_nb],
    pi_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

per body ``i``, in body-``i`` coordinates, with ``c`` the centre of mass and ``I`` the inertia
tensor *about the body-frame origin* (``I = I_G + m (c^T c E - c c^T)``, Steiner). This is
Pinocchio's order (``Inertia::toDynamicParameters``, ``computeJointTorqueRegressor``). With
``friction=True`` the regressor has ``2 n`` more columns: viscous ``fv_j qd_j`` and Coulomb
``fc_j sign(qd_j)`` per joint coordinate (the model's ``damping`` and ``friction``, which
``inverse_dynamics(..., passive=True)`` overcomes), and with ``armature=True`` ``n`` more, the rotor
inertias ``ia_j qdd_j`` (the model's ``armature``): ``tau = Y [pi, fv, fc, ia]``.

What is here:

* :func:`standard_parameters` / :func:`with_standard_parameters`: a model's ``pi`` and back;
  :func:`pseudo_inertia`, the ``4 x 4`` matrix ``J = [[Sigma, h], [h^T, m]]`` with
  ``Sigma = tr(I)/2 E - I``, positive definite exactly when the body is physically realisable
  (Wensing, Kim and Slotine 2017);
* :func:`regressor`: ``Y``, obtained *exactly* as ``jax.jacfwd`` of
  :func:`~kronjax.dynamics.inverse_dynamics` with respect to ``pi`` (inverse dynamics is linear in
  ``pi``), batched with ``jax.vmap``;
* :func:`base_parameters`: the identifiable linear combinations ``beta = K pi`` found numerically
  (Gautier 1991) from the regressor stacked over random states;
* estimators: :func:`least_squares` (ordinary and weighted), :func:`weighted_least_squares`
  (Gautier and Poignet's weighting by each joint's residual variance), and
  :func:`physically_consistent` (Rucker and Wensing 2022's log-Cholesky parameterisation of the
  pseudo-inertia, optimised with optax, with an optional prior towards nominal parameters in the
  log-det divergence of Lee, Wensing and Park 2020);
* excitation: :class:`FourierTrajectory` (Swevers et al. 1997), :func:`fit_to_limits`,
  :func:`condition_number` and :func:`optimize_excitation`.

References:

- C. G. Atkeson, C. H. An, J. M. Hollerbach, "Estimation of inertial parameters of manipulator
  loads and links", IJRR 5(3), 1986.
- M. Gautier, W. Khalil, "Direct calculation of minimum set of inertial parameters of serial
  robots", IEEE Trans. Robotics and Automation 6(3), 1990.
- M. Gautier, "Numerical calculation of the base inertial parameters of robots", J. Robotic
  Systems 8(4), 1991.
- M. Gautier, P. Poignet, "Extended Kalman filtering and weighted least squares dynamic
  identification of robot", Control Engineering Practice 9(12), 2001.
- J. Swevers, C. Ganseman, D. B. Tukel, J. De Schutter, H. Van Brussel, "Optimal robot excitation
  and identification", IEEE Trans. Robotics and Automation 13(5), 1997.
- P. M. Wensing, S. Kim, J.-J. E. Slotine, "Linear matrix inequalities for physically consistent
  inertial parameter identification", IEEE RA-L 3(1), 2017.
- T. Lee, P. M. Wensing, F. C. Park, "Geometric robot dynamic identification: a convex
  programming approach", IEEE Trans. Robotics 36(2), 2020.
- C. Rucker, P. M. Wensing, "Smooth parameterization of rigid-body inertia", IEEE RA-L 7(2), 2022.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from . import _lie
from .chain import Inertials, Model, _is_concrete, require_one_dof_joints
from .configuration import _joints
from .dynamics import _inertials, _resolve_method, inverse_dynamics

__all__ = [
    "BODY_PARAMETERS",
    "standard_parameters",
    "with_standard_parameters",
    "parameter_names",
    "pseudo_inertia",
    "regressor",
    "BaseParameters",
    "base_parameters",
    "base_parameters_from_regressor",
    "least_squares",
    "weighted_least_squares",
    "physically_consistent",
    "FourierTrajectory",
    "fit_to_limits",
    "condition_number",
    "optimize_excitation",
]

BODY_PARAMETERS = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the 10 standard parameters of a body, in Pinocchio's order (inertia about the origin)."""

# (row, column) of the inertia tensor entries in BODY_PARAMETERS[4:]
_INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
# index into the 6 entries above of each element of the symmetric 3 x 3 tensor
_TENSOR_FROM_ENTRIES = np.array([[0, 1, 3], [1, 2, 4], [3, 4, 5]])


# --------------------------------------------------------------------------------------------
# Standard parameters
# --------------------------------------------------------------------------------------------


def _model_inertials(model: Model) -> Inertials:
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    return _inertials(model)


def _tensor(entries: Array) -> Array:
    """Symmetric ``(..., 3, 3)`` tensors from ``(..., 6)`` entries in Pinocchio's order."""
    return entries[..., _TENSOR_FROM_ENTRIES]


def _entries(tensor: Array) -> Array:
    return jnp.stack([tensor[..., r, c] for r, c in _INERTIA_ENTRIES], axis=-1)


def _safe_inverse(mass: Array) -> Array:
    """``1 / m``, and 0 for a massless frame (``m = 0``, whose ``h`` and ``I`` are 0 too)."""
    massless = mass == 0
    return jnp.where(massless, 0.0, 1.0 / jnp.where(massless, 1.0, mass))


def _steiner(mass: Array, h: Array) -> Array:
    """``m (c^T c E - c c^T)`` with ``h = m c``, written as ``(h^T h E - h h^T) / m``."""
    eye = jnp.eye(3, dtype=h.dtype)
    hh = jnp.einsum("bi,bj->bij", h, h)
    return (jnp.einsum("bi,bi->b", h, h)[:, None, None] * eye - hh) * _safe_inverse(mass)[:, None, None]


def standard_parameters(model: Model) -> Float[Array, " p"]:
    """The standard inertial parameters ``pi`` of a model, ``(10 nb,)``.

    Body ``i`` occupies ``pi[10 i : 10 i + 10]`` = ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy,
    I_xz, I_yz, I_zz)`` (:data:`BODY_PARAMETERS`, Pinocchio's order), in body-``i`` axes, with the
    inertia about the body-frame origin by Steiner's theorem ``I_O = I_G + m (c^T c E - c c^T)``
    (the model stores ``I_G`` about the centre of mass).

    Example:
        The double pendulum's first link (``m = 14.59`` kg, centre of mass ``Lc = 0.61`` m along
        ``x``, a slender rod with ``Izz = 1.36`` kg m^2 about it): ``m c_x = m Lc = 8.8999`` and,
        about the joint, ``Iyy = Izz = 1.36 + m Lc^2 = 6.7889``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> pi = kj.identify.standard_parameters(kj.models.double_pendulum())
        >>> pi.shape  # 10 per body
        (20,)
        >>> dict(zip(kj.identify.BODY_PARAMETERS, np.round(np.asarray(pi[:10]), 4).tolist()))
        {'m': 14.59, 'mcx': 8.8999, 'mcy': 0.0, 'mcz': 0.0, 'Ixx': 0.0, 'Ixy': 0.0, 'Iyy': 6.7889,
         'Ixz': 0.0, 'Iyz': 0.0, 'Izz': 6.7889}
    """
    return _standard_parameters(_model_inertials(model))


@eqx.filter_jit
def _standard_parameters(ine: Inertials) -> Array:
    mass = ine.mass
    com = ine.com
    eye = jnp.eye(3, dtype=com.dtype)
    inertia = ine.inertia + mass[:, None, None] * (
        jnp.einsum("bi,bi->b", com, com)[:, None, None] * eye - jnp.einsum("bi,bj->bij", com, com)
    )
    per_body = jnp.concatenate([mass[:, None], mass[:, None] * com, _entries(inertia)], axis=1)
    return per_body.reshape(-1)


def _split(pi: Array, nb: int) -> tuple[Array, Array, Array]:
    p = pi.reshape(nb, 10)
    return p[:, 0], p[:, 1:4], _tensor(p[:, 4:])


@eqx.filter_jit
def _set_inertials(model: Model, pi: Array) -> Model:
    """``model`` with the inertials of ``pi``; no checks (the model's own are bypassed, so that a
    non-physical estimate can be evaluated). A zero mass is a massless frame (``c = 0``)."""
    nb = model.n_bodies
    mass, h, inertia_origin = _split(pi, nb)
    com = h * _safe_inverse(mass)[:, None]
    inertia_com = inertia_origin - _steiner(mass, h)
    if model.inertials is None:
        dtype = pi.dtype
        placeholder = Inertials(jnp.ones(nb, dtype), jnp.zeros((nb, 3), dtype), jnp.tile(jnp.eye(3, dtype=dtype), (nb, 1, 1)))
        model = eqx.tree_at(lambda m: m.inertials, model, placeholder, is_leaf=lambda x: x is None)
    return eqx.tree_at(lambda m: (m.inertials.mass, m.inertials.com, m.inertials.inertia), model, (mass, com, inertia_com))


def _as_parameters(pi: ArrayLike, size: int, what: str = "pi") -> Array:
    pi = jnp.asarray(pi)
    if not jnp.issubdtype(pi.dtype, jnp.floating):
        pi = pi.astype(jnp.result_type(float))
    if pi.shape != (size,):
        raise ValueError(f"{what} must have shape ({size},) (10 per body), got {pi.shape}")
    return pi


def with_standard_parameters(model: Model, pi: Float[ArrayLike, " p"], *, check: bool = True) -> Model:
    """The model with its bodies' inertials replaced by the standard parameters ``pi`` (10 nb,).

    The inverse of :func:`standard_parameters`: ``c = h / m``, ``I_G = I_O - m (c^T c E - c c^T)``.
    Kinematics, gravity, names, limits and the joint-space parameters (``armature``, ``damping``,
    ``friction``) are kept: set identified ``fv``, ``fc``, ``ia`` with ``equinox.tree_at``. Works
    on kinematics-only models too.

    Args:
        pi: ``(10 nb,)`` in :data:`BODY_PARAMETERS` order per body (friction and armature columns
            excluded).
        check: when ``pi`` is concrete (not traced), raise unless every body is physically
            realisable: pseudo-inertia (:func:`pseudo_inertia`) positive semi-definite, mass > 0.
            ``check=False`` lets a non-physical estimate (e.g. from least squares) be turned into a
            model, for torque prediction; masses must still be non-zero (``c = h / m``), except for
            massless frames (all 10 parameters 0).

    Example:
        Every parameter doubled is every body twice as heavy, its centre of mass kept; the mass
        matrix, linear in the parameters, doubles:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> pi = kj.identify.standard_parameters(model)
        >>> heavy = kj.identify.with_standard_parameters(model, 2 * pi)
        >>> print(np.round(heavy.inertials.mass, 6), np.round(heavy.inertials.com[0], 6))
        [29.18 29.18] [0.61 0.   0.  ]
        >>> q = jnp.array([0.3, -0.7])
        >>> bool(jnp.allclose(kj.mass_matrix(heavy, q), 2 * kj.mass_matrix(model, q)))
        True
        >>> kj.identify.with_standard_parameters(model, -pi)  # a negative mass: no such body
        Traceback (most recent call last):
        ...
        ValueError: body 0 (link1): not physically realisable (mass -14.59, ...); pass check=False to build the model anyway
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    pi = _as_parameters(pi, 10 * model.n_bodies)
    if _is_concrete(pi):
        values = np.asarray(pi).reshape(-1, 10)
        for i, row in enumerate(values):
            name = f"body {i} ({model.body_names[i]})"
            if not np.all(np.isfinite(row)):
                raise ValueError(f"{name}: parameters must be finite, got {row}")
            if row[0] == 0 and np.any(row):
                raise ValueError(
                    f"{name}: mass is 0 but the first moments or inertia are not; a body needs a non-zero mass "
                    "to have a centre of mass c = h / m (all 10 parameters 0 is a massless frame)"
                )
            if check:
                eig = float(np.linalg.eigvalsh(np.asarray(pseudo_inertia(row)))[0, 0])
                scale = max(float(np.max(np.abs(row))), 1e-300)
                if not ((row[0] > 0 or not np.any(row)) and eig >= -1e-12 * scale):
                    raise ValueError(
                        f"{name}: not physically realisable (mass {row[0]:.6g}, smallest eigenvalue of "
                        f"the pseudo-inertia {eig:.3g}); pass check=False to build the model anyway"
                    )
    return _set_inertials(model, pi)


def parameter_names(model: Model, friction: bool = False, armature: bool = False) -> tuple[str, ...]:
    """Names of the regressor's columns: ``"<body>.<parameter>"`` (:data:`BODY_PARAMETERS`), then
    with ``friction=True`` ``"<joint>.fv"`` (viscous) and ``"<joint>.fc"`` (Coulomb) per joint
    coordinate, then with ``armature=True`` ``"<joint>.ia"`` (rotor inertia).

    Example:
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> names = kj.identify.parameter_names(model)
        >>> len(names), names[:4], names[-1]
        (20, ('link1.m', 'link1.mcx', 'link1.mcy', 'link1.mcz'), 'link2.Izz')
        >>> kj.identify.parameter_names(model, friction=True, armature=True)[20:]
        ('joint1.fv', 'joint2.fv', 'joint1.fc', 'joint2.fc', 'joint1.ia', 'joint2.ia')
    """
    names = [f"{body}.{p}" for body in model.body_names for p in BODY_PARAMETERS]
    moving = model.coordinate_names
    if friction:
        names += [f"{j}.fv" for j in moving] + [f"{j}.fc" for j in moving]
    if armature:
        names += [f"{j}.ia" for j in moving]
    return tuple(names)


def _size(model: Model, friction: bool, armature: bool) -> int:
    """The number of the regressor's columns."""
    return 10 * model.n_bodies + model.n_dof * (2 * bool(friction) + bool(armature))


def pseudo_inertia(pi: Float[ArrayLike, " p"] | Sequence[float]) -> Float[Array, "nb 4 4"]:
    """Pseudo-inertia matrices ``J = [[Sigma, h], [h^T, m]]`` (``(nb, 4, 4)``, one per group of 10
    standard parameters), ``Sigma = tr(I_O)/2 E - I_O`` the second moment of the mass distribution
    about the body-frame origin, ``h = m c``.

    A body is physically realisable (a non-negative mass density exists) exactly when ``J`` is
    positive semi-definite, and ``J`` is positive definite for any body that is not degenerate
    (Wensing, Kim and Slotine 2017). This implies ``m > 0``, ``I_G`` positive definite and
    the triangle inequalities of its principal moments.

    Example:
        The double pendulum's links are slender rods (``J`` semi-definite); a body with principal
        moments ``(1, 1, 3)`` about its centre of mass breaks the triangle inequality ``Izz <=
        Ixx + Iyy``: ``Sigma = diag(1.5, 1.5, -0.5)``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> J = kj.identify.pseudo_inertia(kj.identify.standard_parameters(kj.models.double_pendulum()))
        >>> J.shape, float(J[0, 3, 3])  # one per body; J[3, 3] = m
        ((2, 4, 4), 14.59)
        >>> bool(np.linalg.eigvalsh(J).min() > -1e-9)
        True
        >>> impossible = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 3.0]  # m = 1 at the origin, I = diag(1, 1, 3)
        >>> print(np.round(np.linalg.eigvalsh(kj.identify.pseudo_inertia(impossible))[0], 6))
        [-0.5  1.   1.5  1.5]
    """
    pi = jnp.asarray(pi)
    if pi.ndim != 1 or pi.shape[0] % 10:
        raise ValueError(f"pi must be a vector of 10 parameters per body, got shape {pi.shape}")
    return _pseudo_inertia(pi)


@jax.jit
def _pseudo_inertia(pi: Array) -> Array:
    mass, h, inertia = _split(pi, pi.shape[0] // 10)
    sigma = 0.5 * jnp.trace(inertia, axis1=1, axis2=2)[:, None, None] * jnp.eye(3, dtype=pi.dtype) - inertia
    top = jnp.concatenate([sigma, h[:, :, None]], axis=2)
    bottom = jnp.concatenate([h, mass[:, None]], axis=1)[:, None, :]
    return jnp.concatenate([top, bottom], axis=1)


def _pi_from_pseudo_inertia(j: Array) -> Array:
    sigma = j[:, :3, :3]
    inertia = jnp.trace(sigma, axis1=1, axis2=2)[:, None, None] * jnp.eye(3, dtype=j.dtype) - sigma
    return jnp.concatenate([j[:, 3, 3:4], j[:, :3, 3], _entries(inertia)], axis=1).reshape(-1)


# --------------------------------------------------------------------------------------------
# Regressor
# --------------------------------------------------------------------------------------------


def _unit_parameters(nb: int, dtype) -> Array:
    """A point at which to differentiate: unit masses at the origins, unit inertia tensors."""
    return jnp.tile(jnp.array([1.0, 0, 0, 0, 1, 0, 1, 0, 0, 1], dtype), nb)


def _state_dtype(model: Model, *xs) -> jnp.dtype:
    floats = [x for x in jax.tree.leaves(model) if eqx.is_inexact_array(x)]
    return jnp.result_type(*xs, *floats)


def _regressor_one(model: Model, q: Array, qd: Array, qdd: Array, friction: bool, armature: bool, method: str) -> Array:
    dtype = _state_dtype(model, q, qd, qdd)
    pi0 = _unit_parameters(model.n_bodies, dtype)

    def tau(pi):
        return inverse_dynamics(_set_inertials(model, pi), q, qd, qdd, method=method)

    columns = [jax.jacfwd(tau)(pi0)]  # exact: tau is linear in pi
    if friction:
        columns += [jnp.diag(qd).astype(dtype), jnp.diag(jnp.sign(qd)).astype(dtype)]
    if armature:
        columns.append(jnp.diag(qdd).astype(dtype))
    return jnp.concatenate(columns, axis=1)


def regressor(
    model: Model,
    q: Float[ArrayLike, "*batch nq"],
    qd: Float[ArrayLike, "*batch nv"],
    qdd: Float[ArrayLike, "*batch nv"],
    *,
    friction: bool = False,
    armature: bool = False,
    method: str = "auto",
) -> Float[Array, "*batch n p"]:
    """The joint-torque regressor ``Y`` with ``tau = Y pi`` (Atkeson et al. 1986), ``(n, 10 nb)``,
    with ``2 n`` more columns with ``friction=True`` and ``n`` more with ``armature=True``.

    Column ``10 i + k`` is the derivative of the joint torques with respect to body ``i``'s
    parameter :data:`BODY_PARAMETERS` ``[k]`` (inertia about the body-frame origin, body axes), so
    ``Y @ standard_parameters(model) == inverse_dynamics(model, q, qd, qdd)`` less the rotors'
    ``model.armature * qdd`` (:attr:`~kronjax.chain.Model.armature`). ``Y`` is
    ``jax.jacfwd`` of :func:`~kronjax.dynamics.inverse_dynamics` with respect to ``pi``, which is
    exact because inverse dynamics is linear in ``pi``; it depends only on the kinematics and
    gravity (the model's own inertials are not used; the model may have none). With
    ``friction=True`` the next ``2 n`` columns are ``diag(qd)`` (viscous) and ``diag(sign(qd))``
    (Coulomb), with ``armature=True`` the last ``n`` ``diag(qdd)`` (rotor inertias): ``tau = Y [pi,
    fv, fc, ia] = inverse_dynamics(model, q, qd, qdd, passive=True)`` for ``fv = model.damping``,
    ``fc = model.friction`` and ``ia = model.armature``.

    Args:
        q, qd, qdd: ``(nq,)``, ``(nv,)``, ``(nv,)`` for one state (``n = nq = nv`` unless the model
            has free, spherical or planar joints), or with the same leading batch dimensions: the
            batch is mapped with ``jax.vmap`` and ``Y`` is ``(..., nv, p)``. With ``friction=True``
            every velocity coordinate gets its two columns, a free-flyer's too.
        friction: append the viscous and Coulomb friction columns.
        armature: append the rotor-inertia columns.
        method: the inverse-dynamics method differentiated (see
            :func:`~kronjax.dynamics.inverse_dynamics`); all give the same ``Y``.

    Compiled with ``equinox.filter_jit`` (as ``diffrax.diffeqsolve`` is): the first call for a
    model structure and batch shape compiles, later ones reuse it; inside a user's ``jit`` it is
    inlined. (The input checks above run in Python first.)

    Example:
        ``Y pi`` is the inverse dynamics (the double pendulum has no rotors):

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> q, qd, qdd = jnp.array([0.3, -0.7]), jnp.array([0.5, 1.0]), jnp.array([-1.0, 2.0])
        >>> Y = kj.identify.regressor(model, q, qd, qdd)
        >>> Y.shape  # (n, 10 nb)
        (2, 20)
        >>> bool(jnp.allclose(Y @ kj.identify.standard_parameters(model), kj.inverse_dynamics(model, q, qd, qdd)))
        True
        >>> kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 2))).shape  # 40 states at once
        (40, 2, 20)
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    _resolve_method(model, method)
    arrays = []
    for name, x, size in (("q", q, model.nq), ("qd", qd, model.nv), ("qdd", qdd, model.nv)):
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.ndim == 0 or x.shape[-1] != size:
            what = f"{model.n_dof}-DOF model" if model.nq == model.nv else f"model with nq = {model.nq}, nv = {model.nv}"
            raise ValueError(f"{name} must have shape (..., {size}) for this {what}, got {x.shape}")
        arrays.append(x)
    q, qd, qdd = arrays
    if not q.shape[:-1] == qd.shape[:-1] == qdd.shape[:-1]:
        raise ValueError(
            f"q, qd and qdd must have the same shape but for their last axis (nq, nv, nv), got {q.shape}, {qd.shape}, {qdd.shape}"
        )
    return _regressor(model, q, qd, qdd, bool(friction), bool(armature), method)


@eqx.filter_jit
def _regressor(model: Model, q: Array, qd: Array, qdd: Array, friction: bool, armature: bool, method: str) -> Array:
    batch = q.shape[:-1]
    one = lambda q, qd, qdd: _regressor_one(model, q, qd, qdd, friction, armature, method)  # noqa: E731
    if not batch:
        return one(q, qd, qdd)
    flat = [x.reshape(-1, x.shape[-1]) for x in (q, qd, qdd)]
    y = jax.vmap(one)(*flat)
    return y.reshape(*batch, *y.shape[1:])


# --------------------------------------------------------------------------------------------
# Base parameters
# --------------------------------------------------------------------------------------------


class BaseParameters(eqx.Module):
    """The base (identifiable) parameters ``beta = K pi`` of a regressor (Gautier 1991).

    The columns of the regressor ``W`` are split into ``r = rank(W)`` independent ones
    (``independent``, chosen greedily in a priority order: each is kept when it is not a linear
    combination of the columns before it) and the others, ``W_d = W_i B``. Then
    ``W pi = W_i (pi_i + B pi_d) = W_i beta``: the base regressor is ``W[:, independent]`` and the
    base parameters are ``beta = pi_i + B pi_d``, each an independent parameter plus the dependent
    ones regrouped onto it (Gautier and Khalil 1990's regrouping, found numerically).

    Attributes:
        rank: number of base parameters ``r``.
        independent: indices (into the standard parameters, :func:`parameter_names`) of the
            columns kept, in increasing order.
        projection: ``K``, ``(r, p)``: ``beta = K pi``; ``K[:, independent]`` is the identity and
            ``K[:, dependent] = B`` (entries below ``1e-10`` relative set to zero).
        names: names of the standard parameters (empty when not known).

    Example:
        The double pendulum's 20 standard parameters act through 6 base parameters: the planar
        arm's ``Izz``, ``m c_x`` and ``m c_y`` per link, the second link's mass regrouped onto the
        first link's (``L m2`` and ``L^2 m2``, ``L = 1.22`` m).

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> base = kj.identify.base_parameters(model)
        >>> base.rank, base.size, base.independent
        (6, 20, (1, 2, 9, 11, 12, 19))
        >>> for line in base.describe():
        ...     print(line)
        link1.mcx + 1.22 link2.m
        link1.mcy
        link1.Izz + 1.488 link2.m
        link2.mcx
        link2.mcy
        link2.Izz
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 2)))
        >>> pi = kj.identify.standard_parameters(model)
        >>> bool(jnp.allclose(base.regressor(Y) @ base.from_standard(pi), Y @ pi))  # W_i beta = W pi
        True
    """

    rank: int = eqx.field(static=True)
    independent: tuple[int, ...] = eqx.field(static=True)
    projection: Float[Array, "r p"]
    names: tuple[str, ...] = eqx.field(static=True, default=())

    @property
    def size(self) -> int:
        """Number of standard parameters ``p``."""
        return self.projection.shape[1]

    def regressor(self, y: Float[ArrayLike, "*batch p"]) -> Float[Array, "*batch r"]:
        """The base regressor ``Y[..., independent]`` of a standard regressor."""
        y = jnp.asarray(y)
        if y.shape[-1] != self.size:
            raise ValueError(f"the regressor has {y.shape[-1]} columns, these base parameters were found for {self.size}")
        return y[..., np.asarray(self.independent, dtype=int)]

    def from_standard(self, pi: Float[ArrayLike, " p"]) -> Float[Array, " r"]:
        """``beta = K pi``."""
        return self.projection @ _as_parameters(pi, self.size, "standard parameters")

    def to_standard(self, beta: Float[ArrayLike, " r"], nominal: Float[ArrayLike, " p"]) -> Float[Array, " p"]:
        """The standard parameters closest to ``nominal`` (Euclidean) that have the base parameters
        ``beta``: ``pi = nominal + K^+ (beta - K nominal)``. How an estimate of ``beta`` is usually
        turned back into bodies (e.g. to check their physical consistency)."""
        beta = jnp.asarray(beta)
        if beta.shape != (self.rank,):
            raise ValueError(f"beta must have shape ({self.rank},), got {beta.shape}")
        nominal = _as_parameters(nominal, self.size, "nominal")
        k = self.projection
        return nominal + jnp.linalg.pinv(k) @ (beta - k @ nominal)

    def describe(self, precision: int = 4) -> list[str]:
        """Each base parameter as a linear combination of named standard parameters."""
        names = self.names or tuple(f"pi[{k}]" for k in range(self.size))
        k = np.asarray(self.projection)
        lines = []
        for row, col in zip(k, self.independent):
            terms = [names[col]]
            for j in np.flatnonzero(row):
                if j != col:
                    c = row[j]
                    sign = "-" if c < 0 else "+"
                    coef = "" if abs(abs(c) - 1) < 1e-12 else f"{abs(c):.{precision}g} "
                    terms.append(f"{sign} {coef}{names[j]}")
            lines.append(" ".join(terms))
        return lines


def _priority(p: int) -> np.ndarray:
    """Greedy order of the columns: body by body, inertia before first moments before mass, then
    anything after the bodies' columns (friction)."""
    within = np.array([4, 5, 6, 7, 8, 9, 1, 2, 3, 0])
    bodies = (np.arange(p // 10)[:, None] * 10 + within).reshape(-1)
    return np.concatenate([bodies, np.arange(bodies.size, p)])


def base_parameters_from_regressor(
    w: Float[ArrayLike, "*rows p"],
    *,
    rtol: float | None = None,
    names: Sequence[str] = (),
    priority: Sequence[int] | None = None,
) -> BaseParameters:
    """Base parameters of a regressor stacked over many states, ``(rows, p)`` or ``(N, n, p)``.

    Numerical procedure (Gautier 1991), in float64 NumPy, outside ``jit``:

    1. scale each column to unit norm, so that the decision does not depend on the parameters'
       units; columns of norm below ``rtol`` times the largest (parameters without effect, up to
       rounding) are set to zero;
    2. rank ``r``: the number of singular values above ``rtol * s_max``;
    3. independent columns: a QR decomposition without pivoting of the scaled ``W`` with its
       columns in the ``priority`` order (Gram-Schmidt: a column is kept when it is not a
       combination of those before it); column ``k`` is independent when ``|R_kk| > rtol``; the
       count must equal ``r`` (else the rank is ill-determined: more or other states are needed);
    4. ``B`` from the least-squares solution of ``W_i B = W_d``.

    Args:
        w: the regressor stacked over states (from :func:`regressor`, any batch shape).
        rtol: relative threshold; default ``1e-8``, far below the smallest significant singular
            value of a regressor over random states (1e-3 or more) and far above rounding (1e-14).
        names: names of the standard parameters (for :meth:`BaseParameters.describe`).
        priority: a permutation of the columns, the order in which they are tried. Default: body
            by body, the 6 inertia entries, then the first moments, then the mass, then the columns
            after the bodies' (friction). With it masses and first moments are regrouped onto
            inertias and a link's parameters onto its parent's, as in Gautier and Khalil's rules
            (e.g. ``link1.Iyy - 0.0361 link2.m + link2.Iyy ...`` for the elbow arm).

    Example:
        The double pendulum's regressor over 40 random states: 6 of its 20 columns are
        independent (:class:`BaseParameters`), as :func:`base_parameters` finds.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(1).normal(size=(3, 40, 2)))  # (40, 2, 20)
        >>> base = kj.identify.base_parameters_from_regressor(Y, names=kj.identify.parameter_names(model))
        >>> base.rank, [base.names[i] for i in base.independent]
        (6, ['link1.mcx', 'link1.mcy', 'link1.Izz', 'link2.mcx', 'link2.mcy', 'link2.Izz'])
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim < 2:
        raise ValueError(f"the stacked regressor must have at least 2 dimensions (rows, p), got shape {w.shape}")
    w = w.reshape(-1, w.shape[-1])
    rows, p = w.shape
    if rows < p:
        raise ValueError(f"{rows} rows for {p} parameters: stack the regressor over more states (at least {p} rows)")
    if not np.all(np.isfinite(w)):
        raise ValueError("the regressor has non-finite entries")
    rtol = 1e-8 if rtol is None else float(rtol)
    norms = np.linalg.norm(w, axis=0)
    # columns that are zero up to rounding (parameters with no effect) are zero
    zero = norms <= rtol * np.max(norms)
    scaled = np.where(zero, 0.0, w / np.where(zero, 1.0, norms))
    s = np.linalg.svd(scaled, compute_uv=False)
    rank = int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
    if rank == 0:
        raise ValueError("the regressor is zero: no parameter is identifiable")
    order = _priority(p) if priority is None else np.asarray(priority, dtype=int)
    if sorted(order.tolist()) != list(range(p)):
        raise ValueError(f"priority must be a permutation of range({p})")
    diag = np.abs(np.diag(np.linalg.qr(scaled[:, order], mode="r")))
    independent = np.sort(order[diag > rtol])
    if independent.size != rank:
        raise ValueError(
            f"ill-determined rank: {rank} singular values and {independent.size} QR pivots above rtol={rtol:g}; "
            "stack the regressor over more (random) states or change rtol"
        )
    dependent = np.setdiff1d(np.arange(p), independent)
    b, *_ = np.linalg.lstsq(w[:, independent], w[:, dependent], rcond=None)
    k = np.zeros((rank, p))
    k[np.arange(rank), independent] = 1.0
    k[:, dependent] = b
    # exact regrouping coefficients are 0 where a rounding residue is left
    k[np.abs(k) < 1e-10 * max(1.0, float(np.max(np.abs(k))))] = 0.0
    names = tuple(str(n) for n in names)
    if names and len(names) != p:
        raise ValueError(f"got {len(names)} names for {p} parameters")
    return BaseParameters(rank=rank, independent=tuple(int(i) for i in independent), projection=jnp.asarray(k), names=names)


def _random_states(model: Model, seed: int, samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # not within the joint limits: the rank of the regressor is a generic property of the
    # kinematics, and a range of one point (a URDF's lower = upper = 0, "not set") would hide
    # every parameter that only acts when the joint moves
    rng = np.random.default_rng(seed)
    shape = (samples, model.n_dof)
    q = rng.uniform(-math.pi, math.pi, shape)
    if model.has_multi_dof:  # uniform rotations, translations in [-pi, pi], the rest as above
        q = np.concatenate(
            [
                q[:, vs] if kind in ("R", "P") else _random_joint(kind, seed, k, samples)
                for k, (kind, _, vs) in enumerate(_joints(model))
            ],
            axis=1,
        )
    return q, rng.normal(size=shape), rng.normal(size=shape)


def _random_joint(kind: str, seed: int, k: int, samples: int) -> np.ndarray:
    """``samples`` uniform configurations of a multi-DoF joint (translations in ``[-pi, pi]``)."""
    keys = jax.random.split(jax.random.fold_in(jax.random.key(seed), k), samples)
    size = {"free": 3, "planar": 2}.get(kind)
    bounds = () if size is None else (-math.pi * np.ones(size), math.pi * np.ones(size))
    return np.asarray(jax.vmap(lambda key: _lie.random(kind, key, *bounds))(keys))


def base_parameters(
    model: Model,
    seed: int = 0,
    *,
    samples: int | None = None,
    friction: bool = False,
    armature: bool = False,
    method: str = "auto",
    rtol: float | None = None,
) -> BaseParameters:
    """Base parameters of a model (the identifiable combinations of its standard parameters).

    The regressor (:func:`regressor`) is stacked over ``samples`` random states -- ``q`` uniform
    in ``[-pi, pi]`` (rad or m; free, spherical and planar joints: uniform rotations and
    translations, :func:`~kronjax.configuration.random_configuration`), ``qd`` and ``qdd``
    standard normal, from ``numpy.random.default_rng(seed)`` -- and reduced by :func:`base_parameters_from_regressor`.
    The result depends on the kinematics and gravity only. The states ignore ``model.limits``:
    the rank of the regressor and the regrouping are generic properties (the same at almost
    every state), and states within narrow or single-point limits (a URDF's ``lower = upper = 0``)
    would miss the parameters that only act when a joint moves. Which base parameters an
    experiment within the limits actually excites is measured by :func:`condition_number` of the
    base regressor over its samples.

    Args:
        seed: seed of the NumPy random generator of the states.
        samples: number of random states (default ``2 p / n + 20``).
        friction: include the ``2 n`` friction parameters.
        armature: include the ``n`` rotor inertias.

    Example:
        The double pendulum (a planar arm): 6 base parameters of 20, the first link's combined
        with the second link's mass (``L^2 m2``, ``L = 1.22`` m); see :class:`BaseParameters`.

        >>> import kronjax as kj
        >>> base = kj.identify.base_parameters(kj.models.double_pendulum())
        >>> base.rank, base.projection.shape
        (6, (6, 20))
        >>> base.describe()[2]
        'link1.Izz + 1.488 link2.m'
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    p = _size(model, friction, armature)
    samples = int(2 * p / model.n_dof + 20) if samples is None else int(samples)
    q, qd, qdd = _random_states(model, int(seed), samples)
    y = regressor(model, q, qd, qdd, friction=friction, armature=armature, method=method)
    return base_parameters_from_regressor(y, rtol=rtol, names=parameter_names(model, friction, armature))


# --------------------------------------------------------------------------------------------
# Least squares
# --------------------------------------------------------------------------------------------


def _rows(y: ArrayLike, tau: ArrayLike) -> tuple[Array, Array]:
    y, tau = jnp.asarray(y), jnp.asarray(tau)
    if y.ndim < 2 or tau.shape != y.shape[:-1]:
        raise ValueError(f"the regressor (..., p) and the torques (...) must match, got {y.shape} and {tau.shape}")
    return y, tau


def least_squares(
    y: Float[ArrayLike, "*rows r"], tau: Float[ArrayLike, "*rows"], sigma: Float[ArrayLike, "*rows"] | None = None
) -> Float[Array, " r"]:
    """Ordinary (``sigma=None``) or weighted least squares: ``argmin_beta sum ((Y beta - tau) / sigma)^2``.

    Args:
        y: a (base) regressor stacked over samples, ``(N, n, r)`` or ``(rows, r)``; it should have
            full column rank (use :meth:`BaseParameters.regressor`).
        tau: the measured torques, ``(N, n)`` or ``(rows,)``.
        sigma: standard deviation of each torque, broadcastable to ``tau`` (e.g. ``(n,)``, one per
            joint): the weighted estimate of Gautier and Poignet 2001.

    Solved through the SVD of the (weighted) regressor ``Y = U S V^T``, as ``jnp.linalg.lstsq``:
    singular values below ``eps max(rows, r) s_max`` are dropped (the minimum-norm solution);
    jit-able.

    Precision: the relative error of ``beta`` is about ``kappa eps`` (``kappa = s_max / s_min``
    the condition number of the regressor, :func:`condition_number`, ``eps`` the machine
    epsilon). Measured against the exact (rational) least-squares solution of a base regressor
    with one nearly dependent column added (80 rows, 7 columns; exact and 0.1 % noisy torques),
    float64: ``kappa = 2.6e8``: ``6e-9``; ``2.6e10``: ``5e-7`` to ``7e-6``; ``2.6e12``: ``2e-5``
    to ``4e-5``; at ``2.6e14`` (above ``1 / (eps max(rows, r)) = 5.6e13``, a singular value
    dropped) no correct digits (error 0.65 to 1). float32 (``eps = 1.2e-7``): ``kappa = 2.6e4``:
    ``3e-4``; none above ``1.1e5``. Called outside ``jit`` (concrete arrays), a ``UserWarning``
    says so when a singular value is dropped (the estimate is then the minimum-norm one,
    arbitrary along the regressor's near-null directions); under ``jit``
    the same minimum-norm estimate comes back silently: check :func:`condition_number` or
    ``jnp.linalg.cond`` of the regressor first. Remedies: the base regressor
    (:meth:`BaseParameters.regressor`), a better excitation (:func:`optimize_excitation`).

    Example:
        The double pendulum's torques at 40 random states (``Y pi``, the inverse dynamics) give
        back its base parameters:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> base, pi = kj.identify.base_parameters(model), kj.identify.standard_parameters(model)
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 2)))
        >>> beta = kj.identify.least_squares(base.regressor(Y), Y @ pi)
        >>> beta.shape, bool(jnp.allclose(beta, base.from_standard(pi)))
        ((6,), True)
    """
    y, tau = _rows(y, tau)
    if sigma is not None:
        w = 1.0 / jnp.broadcast_to(jnp.asarray(sigma, y.dtype), tau.shape)
        y, tau = y * w[..., None], tau * w
    a = y.reshape(-1, y.shape[-1])
    beta, singular = _svd_solve(a, tau.reshape(-1))
    _warn_if_dropped(singular, a.shape[0], "least_squares")
    return beta


def _svd_solve(a: Array, b: Array) -> tuple[Array, Array]:
    """``jnp.linalg.lstsq(a, b)`` (same cut-off) that also returns the singular values of ``a``."""
    u, s, vt = jnp.linalg.svd(a, full_matrices=False)
    keep = s > jnp.finfo(a.dtype).eps * max(a.shape) * s[0]
    return vt.T @ jnp.where(keep, (u.T @ b) / jnp.where(keep, s, 1.0), 0.0), s


def _warn_if_dropped(singular: Array, rows: int, what: str) -> None:
    """Outside ``jit``: warn when :func:`_svd_solve` dropped a singular value (the regressor's
    condition number is above ``1 / (eps max(rows, r))``): no correct digits along it."""
    if not _is_concrete(singular):
        return
    s = np.asarray(singular)
    eps = float(np.finfo(s.dtype).eps)
    threshold = 1.0 / (eps * max(rows, s.size))
    if s[0] > 0 and not s[-1] > s[0] / threshold:
        dropped = int(np.sum(~(s > s[0] / threshold)))
        cond = s[0] / s[-1] if s[-1] > 0 else math.inf
        warnings.warn(
            f"{what}: the regressor has condition number {cond:.3g} (> 1 / (eps max(rows, r)) = {threshold:.3g} "
            f"in {s.dtype}): {dropped} of its {s.size} singular values are at rounding level, so the estimate has "
            "no correct digits along those directions (the minimum-norm solution is returned). Use the base "
            "regressor (BaseParameters.regressor), a richer excitation (optimize_excitation) or float64.",
            UserWarning,
            stacklevel=3,
        )


def weighted_least_squares(
    y: Float[ArrayLike, "N n r"], tau: Float[ArrayLike, "N n"], iterations: int = 3
) -> tuple[Float[Array, " r"], Float[Array, " n"]]:
    """Weighted least squares with each joint's error variance estimated from the residuals
    (Gautier and Poignet 2001): ordinary least squares, then
    ``sigma_j^2 = ||rho_j||^2 / (N - r / n)`` from joint ``j``'s residuals ``rho_j``, then least
    squares weighted by ``1 / sigma_j``; repeated ``iterations`` times (the first variances are
    biased upwards on joints with small torques, whose residuals the unweighted fit neglects).
    Precision and the warning for an ill-conditioned regressor as :func:`least_squares` (the
    warning once, from the unweighted fit).

    Returns ``(beta, sigma)``: the estimate ``(r,)`` and the joints' error standard deviations
    ``(n,)``.

    Example:
        The double pendulum's torques at 40 random states with noise of standard deviation 0.01
        N m on joint 1 and 0.1 N m on joint 2: the noise levels come back (to the sampling error
        of 40 samples), and the base parameters to about 0.01.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> base, pi = kj.identify.base_parameters(model), kj.identify.standard_parameters(model)
        >>> rng = np.random.default_rng(0)
        >>> Y = kj.identify.regressor(model, *rng.normal(size=(3, 40, 2)))
        >>> tau = Y @ pi + rng.normal(size=(40, 2)) * np.array([0.01, 0.1])
        >>> beta, sigma = kj.identify.weighted_least_squares(base.regressor(Y), tau)
        >>> bool(np.allclose(sigma, [0.01, 0.1], rtol=0.3)), bool(jnp.allclose(beta, base.from_standard(pi), atol=0.01))
        (True, True)
    """
    y, tau = _rows(y, tau)
    if y.ndim != 3:
        raise ValueError(f"weighted_least_squares needs a regressor (N, n, r) (samples, joints, parameters), got {y.shape}")
    n_samples, n, r = y.shape
    beta, singular = _svd_solve(y.reshape(-1, r), tau.reshape(-1))
    _warn_if_dropped(singular, n_samples * n, "weighted_least_squares")
    for _ in range(max(int(iterations), 1)):
        residual = tau - y @ beta
        sigma = jnp.sqrt(jnp.sum(residual**2, axis=0) / (n_samples - r / n))
        sigma = jnp.maximum(sigma, jnp.finfo(y.dtype).tiny + 1e-12 * jnp.max(sigma))
        w = 1.0 / sigma
        beta = _svd_solve((y * w[:, None]).reshape(-1, r), (tau * w).reshape(-1))[0]
    return beta, sigma


# --------------------------------------------------------------------------------------------
# Physically consistent identification
# --------------------------------------------------------------------------------------------


def _log_cholesky_to_pseudo_inertia(theta: Array) -> Array:
    """Rucker and Wensing 2022: ``J = U U^T`` with
    ``U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]]``,
    ``theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` per body."""
    alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3 = jnp.moveaxis(theta, -1, 0)
    z, o = jnp.zeros_like(alpha), jnp.ones_like(alpha)
    u = (
        jnp.stack(
            [
                jnp.stack([jnp.exp(d1), s12, s13, t1], -1),
                jnp.stack([z, jnp.exp(d2), s23, t2], -1),
                jnp.stack([z, z, jnp.exp(d3), t3], -1),
                jnp.stack([z, z, z, o], -1),
            ],
            -2,
        )
        * jnp.exp(alpha)[..., None, None]
    )
    return u @ jnp.swapaxes(u, -1, -2)


def _log_cholesky_from_pseudo_inertia(j: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_log_cholesky_to_pseudo_inertia` (``J`` positive definite): ``U`` is the
    upper-triangular factor of ``J = U U^T``, from the Cholesky factor of ``J`` with rows and
    columns reversed."""
    flip = np.eye(4)[::-1]
    thetas = []
    for ji in j:
        u = flip @ np.linalg.cholesky(flip @ ji @ flip) @ flip
        e = u[3, 3]
        thetas.append([np.log(e), *np.log(np.diag(u)[:3] / e), u[0, 1] / e, u[1, 2] / e, u[0, 2] / e, *(u[:3, 3] / e)])
    return np.asarray(thetas)


def _log_det_divergence(j: Array, j0: Array) -> Array:
    """Bregman divergence of ``-log det`` between pseudo-inertias (Lee, Wensing and Park 2020):
    ``d(J, J0) = log det J0 - log det J + tr(J0^-1 J) - 4``, summed over bodies; zero
    exactly at ``J = J0``, invariant to the choice of body frame and units."""
    _, logdet = jnp.linalg.slogdet(j)
    _, logdet0 = jnp.linalg.slogdet(j0)
    return jnp.sum(logdet0 - logdet + jnp.einsum("bij,bji->b", jnp.linalg.inv(j0), j) - 4.0)


def _physical_init(pi: np.ndarray, what: str) -> np.ndarray:
    j = np.asarray(pseudo_inertia(jnp.asarray(pi)))
    for i, ji in enumerate(j):
        eig = np.linalg.eigvalsh(ji)
        if not eig[0] > 1e-12 * max(eig[-1], 1e-300):
            raise ValueError(
                f"{what}: body {i} has a pseudo-inertia that is not positive definite (eigenvalues {eig}); "
                "the physically consistent estimate starts from (and is pulled towards) realisable bodies "
                "with positive mass"
            )
    return _log_cholesky_from_pseudo_inertia(j)


def physically_consistent(
    model: Model,
    y: Float[ArrayLike, "N n p"],
    tau: Float[ArrayLike, "N n"],
    *,
    friction: bool = False,
    armature: bool = False,
    initial: Float[ArrayLike, " p"] | None = None,
    sigma: Float[ArrayLike, " nv"] | None = None,
    prior: Float[ArrayLike, " p"] | None = None,
    prior_weight: float = 0.0,
    steps: int = 1000,
    optimizer: optax.GradientTransformation | None = None,
) -> tuple[Float[Array, " p"], Float[Array, " steps"]]:
    """Physically consistent identification: every body's pseudo-inertia stays positive definite.

    Each body's standard parameters are those of ``J = U U^T`` in Rucker and Wensing 2022's
    log-Cholesky parameterisation (``U`` upper triangular with positive diagonal
    ``e^alpha e^d``), so that every estimate is a realisable rigid body (Wensing et al. 2017); the
    friction and rotor-inertia parameters (``friction=True``, ``armature=True``) are free. The loss::

        L = mean(((Y pi - tau) / sigma)^2) + prior_weight * sum_i d(J_i, J_prior_i)

    is minimised over the log-Cholesky coordinates with optax (L-BFGS with a zoom line search by
    default), ``d`` the log-det (Bregman) divergence of Lee, Wensing and Park 2020. ``Y^T Y`` is
    formed once, so a step costs ``O(p^2)`` whatever the number of samples; the loop is a
    ``jax.lax.scan`` under ``jit``.

    Args:
        model: the nominal model (e.g. from CAD): its bodies are the default start and prior.
        y: the *standard* regressor (:func:`regressor`, with ``friction`` and ``armature``)
            stacked over samples, ``(N, n, p)`` or ``(rows, p)``, ``p = 10 nb`` (``+ 2 n`` with
            friction, ``+ n`` with armature).
        tau: measured torques, ``(N, n)`` or ``(rows,)``.
        friction, armature: whether ``y`` has those columns (and the estimate those parameters).
        initial: starting point ``(p,)`` (realisable bodies); default the model's
            :func:`standard_parameters`, and zero friction and rotor inertias.
        sigma: torque standard deviations broadcastable to ``tau`` (e.g. per joint, from
            :func:`weighted_least_squares`); default 1.
        prior: parameters ``(p,)`` to regularise towards (default ``initial``); only the bodies
            enter ``d``.
        prior_weight: weight of the prior (0: none). Unidentifiable directions are then fixed by
            the prior, and weakly excited ones pulled towards it.
        steps: optimiser iterations.
        optimizer: an optax transformation (default ``optax.lbfgs()``).

    Returns:
        ``(pi, losses)``: the estimate ``(p,)`` and the loss before each step.

    Example:
        A pendulum (one link swinging in the ``x-y`` plane, gravity ``-y``), identified from
        exact torques at 40 random states starting from a body 1.5 times too heavy: the estimate
        reproduces the torques and is a realisable body. (The torques fix only its 3 base
        parameters; the other 7 stay near the start, or the prior.)

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> pi = kj.identify.standard_parameters(model)
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 1)))
        >>> estimate, losses = kj.identify.physically_consistent(model, Y, Y @ pi, initial=1.5 * pi, steps=100)
        >>> bool(jnp.allclose(Y @ estimate, Y @ pi)), bool(losses[-1] < 1e-9 * losses[0])
        (True, True)
        >>> bool(np.linalg.eigvalsh(kj.identify.pseudo_inertia(estimate)).min() > 0)
        True
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    y, tau = _rows(y, tau)
    nb = model.n_bodies
    p = _size(model, friction, armature)
    if y.shape[-1] != p:
        raise ValueError(
            f"the regressor has {y.shape[-1]} columns; this model with friction={friction}, armature={armature} has {p} parameters"
        )
    if initial is None:
        initial = jnp.concatenate([standard_parameters(model), jnp.zeros(p - 10 * nb)]).astype(y.dtype)
    initial = _as_parameters(initial, p, "initial")
    prior = initial if prior is None else _as_parameters(prior, p, "prior")
    if not _is_concrete(initial, prior):
        raise ValueError("initial and prior must be concrete arrays (they are checked, outside jit)")
    theta0 = jnp.asarray(_physical_init(np.asarray(initial[: 10 * nb]), "initial"), y.dtype)
    _physical_init(np.asarray(prior[: 10 * nb]), "prior")
    j_prior = pseudo_inertia(prior[: 10 * nb].astype(y.dtype))

    w = jnp.ones_like(tau) if sigma is None else 1.0 / jnp.broadcast_to(jnp.asarray(sigma, y.dtype), tau.shape)
    yw = (y * w[..., None]).reshape(-1, p)
    tw = (tau * w).reshape(-1)
    rows = tw.shape[0]
    normal = (yw.T @ yw / rows, yw.T @ tw / rows, tw @ tw / rows)
    opt = _LBFGS if optimizer is None else optax.with_extra_args_support(optimizer)
    params = (theta0, initial[10 * nb :].astype(y.dtype))
    return _fit_log_cholesky(params, normal, j_prior, jnp.asarray(prior_weight, y.dtype), opt, int(steps))


_LBFGS = optax.with_extra_args_support(optax.lbfgs())


def _unpack(params) -> Array:
    theta, fric = params
    return jnp.concatenate([_pi_from_pseudo_inertia(_log_cholesky_to_pseudo_inertia(theta)), fric])


@eqx.filter_jit
def _fit_log_cholesky(params, normal, j_prior, prior_weight, opt, steps: int):
    gram, moment, energy = normal

    def loss(params):
        pi = _unpack(params)
        data = pi @ gram @ pi - 2.0 * moment @ pi + energy
        return data + prior_weight * _log_det_divergence(_log_cholesky_to_pseudo_inertia(params[0]), j_prior)

    def step(carry, _):
        params, state = carry
        value, grad = jax.value_and_grad(loss)(params)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=loss)
        return (optax.apply_updates(params, updates), state), value

    (params, _), losses = jax.lax.scan(step, (params, opt.init(params)), None, length=steps)
    return _unpack(params), losses


# --------------------------------------------------------------------------------------------
# Excitation trajectories
# --------------------------------------------------------------------------------------------


class FourierTrajectory(eqx.Module):
    """A periodic joint trajectory, a finite Fourier series per joint (Swevers et al. 1997)::

        q_j(t)   = q0_j + sum_l  a_jl / (w_f l) sin(w_f l t) - b_jl / (w_f l) cos(w_f l t)
        qd_j(t)  =        sum_l  a_jl cos(w_f l t) + b_jl sin(w_f l t)
        qdd_j(t) =        sum_l -a_jl w_f l sin(w_f l t) + b_jl w_f l cos(w_f l t)

    ``l = 1..L`` harmonics of the fundamental ``w_f = 2 pi frequency``; the period is
    ``1 / frequency``. Periodicity lets measurements be averaged over periods and differentiated
    analytically (:meth:`fit`).

    Attributes:
        offset: ``q0``, ``(n,)``.
        sine, cosine: ``a`` and ``b``, ``(n, L)`` (amplitudes of the velocity, rad/s or m/s).
        frequency: fundamental frequency in Hz (static).

    Examples:
        Two joints, two harmonics of 0.5 Hz (period 2 s); at ``t = 0`` the velocity is ``sum_l
        a_jl``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> traj = kj.identify.FourierTrajectory(offset=[0.0, 0.5], sine=[[1.0, 0.0], [0.5, 0.2]],
        ...                                      cosine=[[0.0, 0.0], [0.0, 0.3]], frequency=0.5)
        >>> q, qd, qdd = traj(jnp.linspace(0.0, 4.0, 9))  # every 0.5 s over two periods
        >>> q.shape, traj.period
        ((9, 2), 2.0)
        >>> print(np.round(qd[0], 6))
        [1.  0.7]
        >>> bool(jnp.allclose(q[:4], q[4:8]))  # periodic
        True

        :meth:`fit` recovers the coefficients from positions sampled over a period:

        >>> t = jnp.linspace(0.0, 2.0, 40, endpoint=False)
        >>> fitted = kj.identify.FourierTrajectory.fit(t, traj(t)[0], harmonics=2, frequency=0.5)
        >>> bool(jnp.allclose(fitted.sine, traj.sine) and jnp.allclose(fitted.cosine, traj.cosine))
        True
    """

    offset: Float[Array, " n"] = eqx.field(converter=jnp.asarray)
    sine: Float[Array, "n L"] = eqx.field(converter=jnp.asarray)
    cosine: Float[Array, "n L"] = eqx.field(converter=jnp.asarray)
    frequency: float = eqx.field(static=True, converter=float)

    def __check_init__(self):
        n = self.offset.shape
        if len(n) != 1 or self.sine.shape != self.cosine.shape or self.sine.shape[:1] != n or self.sine.ndim != 2:
            raise ValueError(
                f"FourierTrajectory needs offset (n,), sine and cosine (n, L); got {self.offset.shape}, "
                f"{self.sine.shape}, {self.cosine.shape}"
            )
        if not (self.frequency > 0 and math.isfinite(self.frequency)):
            raise ValueError(f"frequency must be positive, got {self.frequency}")

    @classmethod
    def random(
        cls, key: Array, model: Model, harmonics: int = 5, frequency: float = 0.1, velocity: float = 0.5
    ) -> FourierTrajectory:
        """Random coefficients: offsets at the middle of the position limits (0 where unlimited),
        ``a, b ~ N(0, velocity^2 / (2 L))`` (so each joint's RMS speed is about ``velocity``)."""
        n = model.n_dof
        ka, kb = jax.random.split(key)
        scale = velocity / math.sqrt(2 * harmonics)
        return cls(
            offset=_middle(model),
            sine=scale * jax.random.normal(ka, (n, harmonics)),
            cosine=scale * jax.random.normal(kb, (n, harmonics)),
            frequency=float(frequency),
        )

    @property
    def period(self) -> float:
        return 1.0 / self.frequency

    def __call__(self, t: Float[ArrayLike, " T"]) -> tuple[Float[Array, "T n"], Float[Array, "T n"], Float[Array, "T n"]]:
        """``(q, qd, qdd)``, each ``t.shape + (n,)``."""
        t = jnp.asarray(t, self.sine.dtype)
        w = 2.0 * math.pi * self.frequency * jnp.arange(1, self.sine.shape[1] + 1, dtype=self.sine.dtype)
        phase = t[..., None] * w  # (..., L)
        s, c = jnp.sin(phase), jnp.cos(phase)
        q = self.offset + (s / w) @ self.sine.T - (c / w) @ self.cosine.T
        qd = c @ self.sine.T + s @ self.cosine.T
        qdd = (-s * w) @ self.sine.T + (c * w) @ self.cosine.T
        return q, qd, qdd

    @classmethod
    def fit(cls, t: Float[ArrayLike, " T"], q: Float[ArrayLike, "T n"], harmonics: int, frequency: float) -> FourierTrajectory:
        """The series of ``harmonics`` harmonics of ``frequency`` closest (least squares) to measured
        positions ``q`` at times ``t``: how noisy encoder readings of a periodic excitation are
        filtered and differentiated analytically (Swevers et al. 1997, sec. IV)."""
        t, q = jnp.asarray(t), jnp.asarray(q)
        if q.ndim != 2 or t.shape != q.shape[:1]:
            raise ValueError(f"t (T,) and q (T, n) must match, got {t.shape} and {q.shape}")
        w = 2.0 * math.pi * frequency * jnp.arange(1, harmonics + 1, dtype=q.dtype)
        phase = t[:, None] * w
        basis = jnp.concatenate([jnp.ones_like(t)[:, None], jnp.sin(phase) / w, -jnp.cos(phase) / w], axis=1)
        coef = jnp.linalg.lstsq(basis, q)[0]
        return cls(coef[0], coef[1 : 1 + harmonics].T, coef[1 + harmonics :].T, float(frequency))


def _middle(model: Model) -> Array:
    if model.limits is None:
        return jnp.zeros(model.n_dof)
    lower, upper = model.limits.lower, model.limits.upper
    return jnp.where(
        jnp.isfinite(lower) & jnp.isfinite(upper),
        0.5 * (lower + upper),
        jnp.where(jnp.isfinite(lower), lower + 1.0, jnp.where(jnp.isfinite(upper), upper - 1.0, 0.0)),
    )


def _limit_arrays(model: Model, acceleration, dtype):
    n = model.n_dof
    inf = jnp.full(n, jnp.inf, dtype)
    lim = model.limits
    lower, upper, velocity = (-inf, inf, inf) if lim is None else (lim.lower, lim.upper, lim.velocity)
    acc = inf if acceleration is None else jnp.broadcast_to(jnp.asarray(acceleration, dtype), (n,))
    if _is_concrete(acc) and not bool(jnp.all(acc > 0)):
        raise ValueError(f"acceleration limits must be positive, got {acc}")
    return lower.astype(dtype), upper.astype(dtype), velocity.astype(dtype), acc


def _check_excitable(model: Model, what: str) -> None:
    """Refuse limits that leave a joint no motion: a position range of one point or none
    (``lower >= upper``) or a zero velocity limit. Such a joint cannot be excited, and scaling
    its harmonics to fit would silently give a trajectory that keeps it still. Skipped when the
    limits are traced (the caller's ``jit``)."""
    lim = model.limits
    if lim is None or not _is_concrete(lim.lower, lim.upper, lim.velocity):
        return
    lower, upper, velocity = (np.asarray(x) for x in (lim.lower, lim.upper, lim.velocity))
    names = model.coordinate_names
    for k in range(model.n_dof):
        if not lower[k] < upper[k]:
            problem = f"a position range of zero width ([{lower[k]:g}, {upper[k]:g}])"
        elif not velocity[k] > 0:
            problem = f"a velocity limit of {velocity[k]:g}"
        else:
            continue
        raise ValueError(
            f"{what}: joint {names[k]!r} (coordinate {k}) has {problem}, so it cannot move and no "
            "excitation can be designed for it. Give it real limits (a URDF <limit> of zeros usually "
            "means 'not set': load the file without strict_limits), or fix the joint in the model."
        )


def fit_to_limits(
    model: Model,
    trajectory: FourierTrajectory,
    *,
    acceleration: Float[ArrayLike, " n"] | float | None = None,
    margin: float = 0.0,
    samples: int = 1000,
) -> FourierTrajectory:
    """The trajectory moved and scaled, per joint, to stay within the joint limits.

    For each joint the offset is clipped into the position range and the harmonics scaled by the
    largest ``s <= 1`` that keeps ``q`` within ``[lower, upper]`` (shrunk by ``margin`` times the
    range), ``|qd| <= velocity`` (``model.limits``) and ``|qdd| <= acceleration`` (per joint or
    scalar; ``model.limits`` has no acceleration limits) at ``samples`` instants evenly spread over
    one period (the trajectory is periodic; between them a limit can be exceeded by about
    ``(period / samples)^2 / 8`` times the next derivative's peak). Scaling the harmonics by ``s``
    scales the motion about the offset, the velocity and the acceleration by ``s``. Jit-able.

    Raises:
        ValueError: naming the joint, when a joint's position range has zero width
            (``lower >= upper``) or its velocity limit is 0 (checked when the limits are concrete,
            not traced).

    Example:
        A joint limited to ``|q| <= 1`` rad and ``|qd| <= 2`` rad/s, and ``|qdd| <= 5`` rad/s^2,
        and a trajectory far too large: scaled down until the tightest limit, here the
        acceleration, is met.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> wide = kj.identify.FourierTrajectory(offset=[0.0], sine=[[3.0, 1.0]], cosine=[[0.0, 2.0]], frequency=0.5)
        >>> fitted = kj.identify.fit_to_limits(model, wide, acceleration=5.0)
        >>> q, qd, qdd = fitted(jnp.linspace(0.0, fitted.period, 1000, endpoint=False))  # the instants it checks
        >>> bool(np.abs(q).max() <= 1.0 and np.abs(qd).max() <= 2.0)
        True
        >>> print(np.round(float(np.abs(qdd).max()), 6))
        5.0
    """
    require_one_dof_joints(model, "fit_to_limits")
    _check_excitable(model, "fit_to_limits")
    return _fit_to_limits(model, trajectory, acceleration, margin, int(samples))


@eqx.filter_jit
def _fit_to_limits(model, trajectory, acceleration, margin, samples: int) -> FourierTrajectory:
    times = jnp.arange(samples, dtype=trajectory.sine.dtype) * (trajectory.period / samples)
    lower, upper, velocity, acc = _limit_arrays(model, acceleration, trajectory.sine.dtype)
    shrink = margin * jnp.where(jnp.isfinite(upper - lower), upper - lower, 0.0)
    lower, upper = lower + shrink, upper - shrink
    offset = jnp.clip(trajectory.offset, lower, upper)
    q, qd, qdd = eqx.tree_at(lambda tr: tr.offset, trajectory, jnp.zeros_like(offset))(times)
    tiny = jnp.finfo(q.dtype).tiny
    ratios = jnp.stack(
        [
            (upper - offset) / jnp.maximum(jnp.max(q, axis=0), tiny),
            (offset - lower) / jnp.maximum(jnp.max(-q, axis=0), tiny),
            velocity / jnp.maximum(jnp.max(jnp.abs(qd), axis=0), tiny),
            acc / jnp.maximum(jnp.max(jnp.abs(qdd), axis=0), tiny),
        ]
    )
    s = jnp.minimum(1.0, jnp.min(ratios, axis=0))[:, None]
    return FourierTrajectory(offset, trajectory.sine * s, trajectory.cosine * s, trajectory.frequency)


@eqx.filter_jit
def condition_number(
    model: Model,
    trajectory: FourierTrajectory,
    times: Float[ArrayLike, " T"],
    base: BaseParameters,
    *,
    friction: bool = False,
    armature: bool = False,
) -> Float[Array, ""]:
    """Condition number ``s_max / s_min`` of the base regressor stacked over the samples of the
    trajectory at ``times`` (Gautier and Khalil 1992; Swevers et al. 1997): the criterion an
    excitation trajectory minimises. Jit-able and differentiable in the trajectory.

    Example:
        A pendulum (3 base parameters: ``m c_x``, ``m c_y``, ``Izz``) on a random excitation of
        3 harmonics of 0.5 Hz, sampled 25 times over its period:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> base = kj.identify.base_parameters(model)
        >>> traj = kj.identify.FourierTrajectory.random(jax.random.PRNGKey(0), model, harmonics=3, frequency=0.5)
        >>> times = jnp.linspace(0.0, 2.0, 25, endpoint=False)
        >>> base.rank, bool(kj.identify.condition_number(model, traj, times, base) >= 1.0)
        (3, True)
    """
    require_one_dof_joints(model, "condition_number")
    q, qd, qdd = trajectory(times)
    w = base.regressor(regressor(model, q, qd, qdd, friction=friction, armature=armature)).reshape(-1, base.rank)
    s = jnp.linalg.svd(w, compute_uv=False)
    return s[0] / s[-1]


def optimize_excitation(
    model: Model,
    trajectory: FourierTrajectory,
    times: Float[ArrayLike, " T"],
    base: BaseParameters,
    *,
    friction: bool = False,
    armature: bool = False,
    acceleration: Float[ArrayLike, " n"] | float | None = None,
    margin: float = 0.0,
    steps: int = 100,
    learning_rate: float = 0.02,
    optimizer: optax.GradientTransformation | None = None,
) -> tuple[FourierTrajectory, Float[Array, " steps"]]:
    """An excitation trajectory: Fourier coefficients that minimise the condition number of the
    stacked base regressor (:func:`condition_number`) within the joint limits (Swevers et al.
    1997).

    Projected gradient descent on ``log cond``: an optax step (Adam with ``learning_rate`` by
    default) on the offsets and coefficients, then :func:`fit_to_limits` (position, velocity and
    ``acceleration`` limits over a period), so that every iterate -- the start included -- is
    feasible. The best iterate is returned. ``times`` are the instants at which the regressor is
    sampled (the condition number's rows).

    Returns:
        ``(trajectory, history)``: the optimised trajectory and the condition number of each
        iterate (the first entry is that of the feasible start).

    Raises:
        ValueError: naming the joint, as :func:`fit_to_limits`, when a joint's limits leave it no
            motion.

    Example:
        A pendulum (3 base parameters: ``m c_x``, ``m c_y``, ``Izz``) limited to ``|q| <= 1``
        rad and ``|qd| <= 2`` rad/s, from a random start of 3 harmonics of 0.5 Hz, 20 steps:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> base = kj.identify.base_parameters(model)
        >>> start = kj.identify.FourierTrajectory.random(jax.random.PRNGKey(0), model, harmonics=3, frequency=0.5)
        >>> times = jnp.linspace(0.0, 2.0, 25, endpoint=False)  # the regressor's instants over a period
        >>> best, history = kj.identify.optimize_excitation(model, start, times, base, steps=20)
        >>> history.shape, bool(history.min() < history[0])  # condition numbers: the start's, then every step's
        ((21,), True)
    """
    require_one_dof_joints(model, "optimize_excitation")
    _check_excitable(model, "optimize_excitation")
    times = jnp.asarray(times, trajectory.sine.dtype)
    opt = _ADAM if optimizer is None else optimizer
    rate = jnp.asarray(learning_rate, times.dtype)
    return _optimize_excitation(model, trajectory, times, base, (friction, armature), acceleration, margin, opt, rate, int(steps))


# one Adam for every call (a new optax object would recompile); its learning rate is set per call
_ADAM = optax.inject_hyperparams(optax.adam)(learning_rate=0.02)


def _init_state(opt, params, rate):
    state = opt.init(params)
    if opt is _ADAM:
        state = state._replace(hyperparams={**state.hyperparams, "learning_rate": rate})
    return state


@eqx.filter_jit
def _optimize_excitation(model, trajectory, times, base, columns, acceleration, margin, opt, rate, steps):
    friction, armature = columns
    project = lambda tr: _fit_to_limits(model, tr, acceleration, margin, 1000)  # noqa: E731
    cost = lambda tr: jnp.log(condition_number(model, tr, times, base, friction=friction, armature=armature))  # noqa: E731
    start = project(trajectory)
    params, static = eqx.partition(start, eqx.is_inexact_array)

    def step(carry, _):
        params, state, best, best_cost = carry
        value, grad = jax.value_and_grad(lambda p: cost(eqx.combine(p, static)))(params)
        better = value < best_cost
        best = jax.tree.map(lambda b, p: jnp.where(better, p, b), best, params)
        best_cost = jnp.where(better, value, best_cost)
        updates, state = opt.update(grad, state, params)
        params = eqx.partition(project(eqx.combine(optax.apply_updates(params, updates), static)), eqx.is_inexact_array)[0]
        return (params, state, best, best_cost), jnp.exp(value)

    init = (params, _init_state(opt, params, rate), params, jnp.asarray(jnp.inf, times.dtype))
    (params, _, best, best_cost), history = jax.lax.scan(step, init, None, length=steps)
    last = cost(eqx.combine(params, static))
    best = jax.tree.map(lambda b, p: jnp.where(last < best_cost, p, b), best, params)
    return eqx.combine(best, static), jnp.append(history, jnp.exp(last))
