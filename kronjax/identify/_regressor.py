"""The joint-torque regressor ``Y`` with ``tau = Y pi`` (Atkeson, An and Hollerbach 1986), by
``jax.jacfwd`` of the inverse dynamics with respect to ``pi``."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords
from ..chain import Model
from ..dynamics import inverse_dynamics
from ..dynamics._inverse import resolve_method
from ._friction import Friction, as_friction
from ._parameters import set_inertials


def _unit_parameters(nb: int, dtype) -> Array:
    """A point at which to differentiate: unit masses at the origins, unit inertia tensors."""
    return jnp.tile(jnp.array([1.0, 0, 0, 0, 1, 0, 1, 0, 0, 1], dtype), nb)


def _state_dtype(model: Model, *xs) -> jnp.dtype:
    floats = [x for x in jax.tree.leaves(model) if eqx.is_inexact_array(x)]
    return jnp.result_type(*xs, *floats)


def _regressor_one(model: Model, q: Array, v: Array, vd: Array, friction: Friction | None, armature: bool, method: str) -> Array:
    dtype = _state_dtype(model, q, v, vd)
    pi0 = _unit_parameters(model.n_bodies, dtype)

    def tau(pi):
        return inverse_dynamics(set_inertials(model, pi), q, v, vd, method=method)

    columns = [jax.jacfwd(tau)(pi0)]  # exact: tau is linear in pi
    if friction is not None:
        columns += [jnp.diag(term).astype(dtype) for term in friction.terms(v)]
    if armature:
        columns.append(jnp.diag(vd).astype(dtype))
    return jnp.concatenate(columns, axis=1)


@renamed_keywords(qd="v", qdd="vd")
def regressor(
    model: Model,
    q: Float[ArrayLike, "*batch nq"],
    v: Float[ArrayLike, "*batch nv"],
    vd: Float[ArrayLike, "*batch nv"],
    *,
    friction: bool | Friction = False,
    armature: bool = False,
    method: str = "auto",
) -> Float[Array, "*batch n p"]:
    """The joint-torque regressor ``Y`` with ``tau = Y pi`` (Atkeson et al. 1986), ``(n, 10 nb)``,
    with ``k n`` more columns for ``k`` friction kinds and ``n`` more with ``armature=True``.

    Column ``10 i + k`` is the derivative of the joint torques with respect to body ``i``'s
    parameter :data:`BODY_PARAMETERS` ``[k]`` (inertia about the body-frame origin, body axes), so
    ``Y @ standard_parameters(model) == inverse_dynamics(model, q, v, vd)`` less the rotors'
    ``model.armature * vd`` (:attr:`~kronjax.chain.Model.armature`). ``Y`` is
    ``jax.jacfwd`` of :func:`~kronjax.dynamics.inverse_dynamics` with respect to ``pi``, which is
    exact because inverse dynamics is linear in ``pi``; it depends only on the kinematics and
    gravity (the model's own inertials are not used; the model may have none).

    Friction columns follow, kind by kind (all coordinates of one kind, then the next), each
    ``diag`` of a :class:`Friction` term: viscous ``v``, Coulomb ``sign(v)`` or ``tanh(v / s)``,
    offset ``1``, Stribeck ``exp(-(v / vs)^2) sign(v)``. ``friction=True`` is ``Friction()``:
    ``diag(v)`` (viscous) and ``diag(sign(v))`` (Coulomb). With ``armature=True`` the last ``n``
    columns are ``diag(vd)`` (rotor inertias). Then ``tau = Y [pi, fv, fc, ia] =
    inverse_dynamics(model, q, v, vd, passive=True)`` for ``fv = model.damping``, ``fc =
    model.friction`` and ``ia = model.armature`` (:func:`to_model` builds that model from an
    estimate).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q, v, vd: ``(nq,)``, ``(nv,)``, ``(nv,)`` for one state (``n = nq = nv`` unless the model
            has free, spherical or planar joints), or with the same leading batch dimensions: the
            batch is mapped with ``jax.vmap`` and ``Y`` is ``(..., nv, p)``. With friction every
            velocity coordinate gets its columns, a free-flyer's too.
        friction: ``False`` (none), ``True`` (viscous and sign Coulomb) or a :class:`Friction`
            choosing the kinds, one column per coordinate each.
        armature: append the rotor-inertia columns.
        method: the inverse-dynamics method differentiated (see
            :func:`~kronjax.dynamics.inverse_dynamics`); all give the same ``Y``.

    Compiled with ``equinox.filter_jit`` (as ``diffrax.diffeqsolve`` is): the first call for a
    model structure and batch shape compiles, later ones reuse it; inside a user's ``jit`` it is
    inlined. (The input checks above run in Python first.)

    Returns:
        ``Y``, ``(nv, p)`` per state (``(..., nv, p)`` for a batch), with ``tau = Y pi`` for the
        standard parameters ``pi`` of :func:`standard_parameters` (then the friction and armature
        columns, named by :func:`parameter_names`).

    Example:
        ``Y pi`` is the inverse dynamics (the double pendulum has no rotors):

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = jnp.array([0.3, -0.7]), jnp.array([0.5, 1.0]), jnp.array([-1.0, 2.0])
        >>> Y = kj.identify.regressor(model, q, v, vd)
        >>> Y.shape  # (n, 10 nb)
        (2, 20)
        >>> bool(jnp.allclose(Y @ kj.identify.standard_parameters(model), kj.inverse_dynamics(model, q, v, vd)))
        True
        >>> kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 2))).shape  # 40 states at once
        (40, 2, 20)

        With viscous, smooth Coulomb (``s = 0.05`` rad/s) and offset columns, ``2 + 2 + 2`` more:

        >>> friction = kj.identify.Friction(coulomb="tanh", smoothing=0.05, offset=True)
        >>> Y = kj.identify.regressor(model, q, v, vd, friction=friction)
        >>> Y.shape, bool(jnp.allclose(Y[:, 22:24], jnp.diag(jnp.tanh(v / 0.05))))
        ((2, 26), True)
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    resolve_method(model, method)
    arrays = []
    for name, x, size in (("q", q, model.nq), ("v", v, model.nv), ("vd", vd, model.nv)):
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.ndim == 0 or x.shape[-1] != size:
            what = f"{model.nv}-DOF model" if model.nq == model.nv else f"model with nq = {model.nq}, nv = {model.nv}"
            raise ValueError(f"{name} must have shape (..., {size}) for this {what}, got {x.shape}")
        arrays.append(x)
    q, v, vd = arrays
    if not q.shape[:-1] == v.shape[:-1] == vd.shape[:-1]:
        raise ValueError(
            f"q, v and vd must have the same shape but for their last axis (nq, nv, nv), got {q.shape}, {v.shape}, {vd.shape}"
        )
    return _regressor(model, q, v, vd, as_friction(friction), bool(armature), method)


@eqx.filter_jit
def _regressor(model: Model, q: Array, v: Array, vd: Array, friction: Friction | None, armature: bool, method: str) -> Array:
    batch = q.shape[:-1]
    one = lambda q, v, vd: _regressor_one(model, q, v, vd, friction, armature, method)  # noqa: E731
    if not batch:
        return one(q, v, vd)
    flat = [x.reshape(-1, x.shape[-1]) for x in (q, v, vd)]
    y = jax.vmap(one)(*flat)
    return y.reshape(*batch, *y.shape[1:])
