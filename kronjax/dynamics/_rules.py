"""The JAX derivative rules of the tree's Newton-Euler and articulated-body algorithms: the
analytic derivatives of Carpentier and Mansard (RSS 2018) for the state, ``jax.jvp`` of the
recursions for the model; the positive-definiteness check of forward dynamics."""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero
from jaxtyping import Array

from .._finite import all_finite
from ..chain import Model
from ..configuration import configuration_tangent
from . import _aba, _aba_derivatives, _rnea, _rnea_derivatives


def positive_definite(vd: Array, pivots: Array, inputs) -> Array:
    """``vd`` once the pivots of ``M`` are checked positive. ``inputs``, what ``M`` is computed
    from (``M`` itself, or ``q`` and the model's parameters): a NaN or inf there makes the pivots
    NaN, which is that input propagating (:mod:`kronjax._finite`), not a failed factorisation, so
    only finite inputs raise."""
    factorised = jnp.all(pivots > 0) | ~all_finite(inputs)
    return eqx.error_if(
        vd,
        ~factorised,
        "forward_dynamics: the mass matrix is not positive definite (its factorisation failed); "
        "check the model's masses and inertia tensors",
    )


def _checked_aba(model: Model, q: Array, v: Array, tau: Array) -> Array:
    return positive_definite(*_aba.aba(model, q, v, tau), mass_inputs(model, q))


def mass_inputs(model: Model, q: Array) -> tuple:
    """What ``M(q)`` of a Tree model is computed from."""
    return q, model.kinematics, model.inertials, model.armature


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
    change = _linear_change(linear, state[1])  # shaped like v: (nv,)
    if _moves_dynamics(model_tangent):
        change = change + jax.jvp(lambda m: _rnea.rnea(m, *state), (model,), (_filled(model_tangent),))[1]
    return change


def _tangent(model: Model, q: Array, tq):
    """A change of ``q`` as velocity coordinates (the analytic derivatives are along them)."""
    if isinstance(tq, SymbolicZero) or not model.has_multi_dof:
        return tq
    return configuration_tangent(model, q, tq)


@jax.custom_jvp
def tree_rnea(model: Model, q: Array, v: Array, vd: Array) -> Array:
    """Newton-Euler whose JAX derivatives with respect to the state are the analytic ones."""
    return _rnea.rnea(model, q, v, vd)


@functools.partial(tree_rnea.defjvp, symbolic_zeros=True)
def _tree_rnea_jvp(primals, tangents):
    model, q, v, vd = primals
    t_model, tq, tqd, tqdd = tangents
    tq = _tangent(model, q, tq)
    tau, dq, dqd, mass = _rnea_derivatives.rnea_derivatives(model, q, v, vd)
    return tau, _tau_change(model, (q, v, vd), t_model, [(dq, tq), (dqd, tqd), (mass, tqdd)])


@jax.custom_jvp
def tree_aba(model: Model, q: Array, v: Array, tau: Array) -> Array:
    """The articulated-body algorithm (checked) whose JAX derivatives are the analytic ones."""
    return _checked_aba(model, q, v, tau)


@functools.partial(tree_aba.defjvp, symbolic_zeros=True)
def _tree_aba_jvp(primals, tangents):
    # M(q) vd + b(q, v) = tau differentiated: M dqdd = dtau - dtau/dq dq - dtau/dqd dqd - dtau/dmodel
    model, q, v, tau = primals
    t_model, tq, tqd, ttau = tangents
    if _moves_dynamics(t_model):
        # the model moves (identification, calibration): the articulated-body algorithm's own
        # derivative, which reads the inertias' upper entries only, as its value does
        tangents = tuple(_filled(t) for t in tangents)
        return jax.jvp(lambda *args: _checked_aba(*args), primals, tangents)
    vd, dq, dqd, minv, pivots = _aba_derivatives.aba_derivatives(model, q, v, tau)
    change = _linear_change([(dq, _tangent(model, q, tq)), (dqd, tqd)], v)
    rhs = -change if isinstance(ttau, SymbolicZero) else ttau - change
    return positive_definite(vd, pivots, mass_inputs(model, q)), minv @ rhs
