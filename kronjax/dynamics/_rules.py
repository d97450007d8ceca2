"""The JAX derivative rules of the tree's Newton-Euler and articulated-body algorithms: the
analytic derivatives of Carpentier and Mansard (RSS 2018) for the state, ``jax.jvp`` of the
recursions for the model; the positive-definiteness check of forward dynamics.

Second derivatives stay analytic. Each rule writes the change of ``y = f(q, v, x)`` (``tau`` of
Newton-Euler with ``x = vd``; ``vd`` of the articulated-body algorithm with ``x = tau``) as the
linear map ``tangent(q, v, x; t) = dy/dq t_q + dy/dv t_v + dy/dx t_x``. Reverse mode transposes it
into ``cotangent(q, v, x; λ) = (dy/dq^T λ, dy/dv^T λ, dy/dx^T λ)``, the gradient of ``λ^T y``
(:func:`~kronjax.dynamics._rnea_derivatives.rnea_cotangent`, without the matrices), and forward
mode over that (``jax.hessian``, ``jax.jacfwd(jax.jacrev(...))``, ``jax.jvp`` of ``jax.grad``) is
the λ-contracted Hessian (:mod:`~kronjax.dynamics._rnea_hessian`,
:func:`~kronjax.dynamics._aba_derivatives.aba_hessian`) times the tangent, plus the cotangent of
the change of ``λ``. Left to JAX, forward mode would differentiate the ``n x n`` matrices ``dy/dq``
along every direction before contracting them: the full tensors. So ``tangent`` is a primitive,
which can name its transpose, and ``cotangent`` a ``custom_jvp`` function, which can name its
derivative. Under ``vmap`` (a loss over a batch of states) ``tangent`` binds itself again with one
more level of ``in_axes``, so that it still transposes into ``cotangent``. Forward over forward
(``jax.jacfwd`` twice) and changes of the model's parameters take JAX's forward mode of the
first-order derivatives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from jaxtyping import Array

from .._finite import all_finite
from ..chain import Model
from ..configuration import configuration_tangent
from . import _aba, _aba_derivatives, _rnea, _rnea_derivatives, _rnea_hessian


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


def _tangent(model: Model, q: Array, tq):
    """A change of ``q`` as velocity coordinates (the analytic derivatives are along them)."""
    if isinstance(tq, SymbolicZero) or not model.has_multi_dof:
        return tq
    return configuration_tangent(model, q, tq)


# --------------------------------------------------------------------------------------------
# The linear map of each rule as a primitive and its transpose as a custom_jvp function (module
# doc)
# --------------------------------------------------------------------------------------------


class Derivatives(NamedTuple):
    """The analytic derivatives of ``y = f(model, q, v, x)``, which is linear in ``x``."""

    #: ``(model, q, v, x) -> (dy/dq, dy/dv, dy/dx)``, each ``(nv, nv)``, ``[i, j] = dy_i / d_j``
    first_order: Callable
    #: ``(model, q, v, x, λ) -> (λ^T dy/dq, λ^T dy/dv, λ^T dy/dx)``, without the matrices
    cotangent: Callable
    #: ``(model, q, v, x, λ) -> (H, X)``: ``H`` ``(2 nv, 2 nv)``, ``[j, k] = d/d_k (λ^T dy/d_j)``
    #: over ``(q, v)``; ``X`` ``(nv, nv)``, ``[j, k] = d/dq_k (λ^T dy/dx_j)``
    hessian: Callable


def _rnea_first_order(model: Model, q: Array, v: Array, vd: Array) -> tuple[Array, Array, Array]:
    return _rnea_derivatives.rnea_derivatives(model, q, v, vd)[1:]


def _aba_first_order(model: Model, q: Array, v: Array, tau: Array) -> tuple[Array, Array, Array]:
    _, dq, dqd, minv, _ = _aba_derivatives.aba_derivatives(model, q, v, tau)
    return -minv @ dq, -minv @ dqd, minv


def _rnea_contracted(model: Model, q: Array, v: Array, vd: Array, lam: Array) -> tuple[Array, Array]:
    return _rnea_hessian.rnea_hessian(model, q, v, vd, lam, symmetric=False)


def _aba_contracted(model: Model, q: Array, v: Array, tau: Array, mu: Array) -> tuple[Array, Array]:
    return _aba_derivatives.aba_hessian(model, q, v, tau, mu, symmetric=False)


RNEA = Derivatives(_rnea_first_order, _rnea_derivatives.rnea_cotangent, _rnea_contracted)
ABA = Derivatives(_aba_first_order, _aba_derivatives.aba_cotangent, _aba_contracted)


class _Static:
    """The model's non-array part, as a primitive's parameter (compared by identity)."""

    def __init__(self, treedef, rest):
        self.treedef, self.rest = treedef, rest


def _model(leaves, static: _Static) -> Model:
    return eqx.combine(jax.tree.unflatten(static.treedef, list(leaves)), static.rest)


def _zeros(tangents, like) -> list[Array]:
    """Tangents with their symbolic zeros as zero arrays shaped like ``like``."""
    return [jnp.zeros_like(x) if isinstance(t, (SymbolicZero, ad.Zero)) else t for t, x in zip(tangents, like)]


def tangent(derivatives: Derivatives, model: Model, q: Array, v: Array, x: Array, tq, tv, tx) -> Array:
    """``dy/dq tq + dy/dv tv + dy/dx tx`` (``tq`` in velocity coordinates; symbolic zeros allowed)."""
    arrays, rest = eqx.partition(model, eqx.is_array)
    leaves, treedef = jax.tree.flatten(arrays)
    linear = _zeros((tq, tv, tx), (v, v, x))
    params = dict(derivatives=derivatives, static=_Static(treedef, rest), levels=())
    return tangent_p.bind(q, v, x, *linear, *leaves, **params)


def _single(derivatives, static, q, v, x, tq, tv, tx, *leaves) -> Array:
    dq, dv, dx = derivatives.first_order(_model(leaves, static), q, v, x)
    return dq @ tq + dv @ tv + dx @ tx


def _levelled(fun, in_axes: list, out_axes: list | None = None):
    """``fun`` under one ``vmap`` per level (``in_axes[i]`` of level ``i``, outermost first), its
    outputs batched at 0 by each level or, given ``out_axes[i]``, moved there (summed over a
    level where that is ``None``)."""
    for level in reversed(range(len(in_axes))):
        batched = jax.vmap(fun, in_axes=in_axes[level])
        fun = batched if out_axes is None else functools.partial(_laid_out, batched, out_axes[level])
    return fun


def _laid_out(batched, out_axes, *args) -> list[Array]:
    return [c.sum(0) if a is None else jnp.moveaxis(c, 0, a) for c, a in zip(batched(*args), out_axes)]


def _tangent_impl(*operands, derivatives, static, levels):
    dtype = jnp.result_type(*operands)  # the tangents' dtype may be wider than the state's
    return _levelled(functools.partial(_single, derivatives, static), list(levels))(*operands).astype(dtype)


def _tangent_abstract(*operands, derivatives, static, levels):
    shape, avals = [], list(operands)
    for axes in levels:  # each level's size from an operand it batches, that axis then dropped
        shape.append(next(a.shape[i] for a, i in zip(avals, axes) if i is not None))
        avals = [a if i is None else a.update(shape=a.shape[:i] + a.shape[i + 1 :]) for a, i in zip(avals, axes)]
    return jax.core.ShapedArray((*shape, *avals[1].shape), jnp.result_type(*operands))


def _tangent_jvp(primals, tangents, *, derivatives, static, levels):
    params = dict(derivatives=derivatives, static=static, levels=levels)
    out = tangent_p.bind(*primals, **params)
    terms = []
    state, linear, leaves = primals[:3], primals[3:6], primals[6:]
    if not all(type(t) is ad.Zero for t in tangents[3:6]):
        terms.append(tangent_p.bind(*state, *_zeros(tangents[3:6], linear), *leaves, **params))
    moving = (*tangents[:3], *tangents[6:])
    if not all(type(t) is ad.Zero for t in moving):  # forward over forward, or the model moves

        def along(q, v, x, *leaves):
            return _tangent_impl(q, v, x, *linear, *leaves, **params)

        terms.append(jax.jvp(along, (*state, *leaves), tuple(_zeros(moving, (*state, *leaves))))[1])
    return out, sum(terms) if terms else jnp.zeros(out.shape, out.dtype)


def _tangent_transpose(ct, *operands, derivatives, static, levels):
    state, linear, leaves = operands[:3], operands[3:6], operands[6:]
    if any(ad.is_undefined_primal(x) for x in (*state, *leaves)):
        raise NotImplementedError("the tangent of the dynamics is linear in its tangents only")
    if type(ct) is ad.Zero:
        return [None] * len(operands)

    def single(q, v, x, lam, *leaves):
        return cotangent(derivatives, _model(leaves, static), q, v, x, lam)

    # per level: ct is batched at 0 (as tangent's output), each cotangent laid out as its operand
    fun = _levelled(single, [(*a[:3], 0, *a[6:]) for a in levels], [a[3:6] for a in levels])
    back = fun(*state, ct, *leaves)
    return [None] * 3 + [b if ad.is_undefined_primal(t) else None for b, t in zip(back, linear)] + [None] * len(leaves)


def _tangent_batch(operands, dims, *, derivatives, static, levels):
    operands = [x if d is None else jnp.moveaxis(x, d, 0) for x, d in zip(operands, dims)]
    axes = tuple(None if d is None else 0 for d in dims)
    return tangent_p.bind(*operands, derivatives=derivatives, static=static, levels=(axes, *levels)), 0


tangent_p = Primitive("kronjax_dynamics_tangent")
tangent_p.def_impl(_tangent_impl)
tangent_p.def_abstract_eval(_tangent_abstract)
mlir.register_lowering(tangent_p, mlir.lower_fun(_tangent_impl, multiple_results=False))
ad.primitive_jvps[tangent_p] = _tangent_jvp
ad.primitive_transposes[tangent_p] = _tangent_transpose
batching.primitive_batchers[tangent_p] = _tangent_batch


def _cotangent(derivatives: Derivatives, model: Model, q: Array, v: Array, x: Array, lam: Array) -> tuple:
    return derivatives.cotangent(model, q, v, x, lam)


cotangent = jax.custom_jvp(_cotangent, nondiff_argnums=(0,))
"""``(dy/dq^T λ, dy/dv^T λ, dy/dx^T λ)``, whose JAX derivative is the λ-contracted Hessian."""


@functools.partial(cotangent.defjvp, symbolic_zeros=True)
def _cotangent_jvp(derivatives: Derivatives, primals, tangents):
    model, q, v, x, lam = primals
    t_model, tq, tv, tx, t_lam = tangents
    if _moves_dynamics(t_model):  # JAX's forward mode of the first-order derivatives
        return jax.jvp(functools.partial(_cotangent, derivatives), primals, tuple(_filled(t) for t in tangents))
    # The matrices, not the cotangent without them: under jax.hessian the program computes them
    # anyway (the G1's compiled jax.hessian is 7% smaller this way than with rnea_cotangent), and
    # along many directions of t_lam at once their products are cheaper.
    matrices = derivatives.first_order(model, q, v, x)
    out = tuple(lam @ m for m in matrices)
    change = [t_lam @ m for m in matrices] if not _is_zero(t_lam) else [jnp.zeros_like(c) for c in out]
    xi = _tangent(model, q, tq)
    if not _is_zero((xi, tv, tx)):
        # block by block, so that a direction that does not move (a constant vd under
        # jax.hessian, the q of a Hessian in v) costs no product with zeros
        hessian, x_q = derivatives.hessian(model, q, v, x, lam)
        n = v.shape[0]
        if not _is_zero(xi):
            change = [change[0] + hessian[:n, :n] @ xi, change[1] + hessian[n:, :n] @ xi, change[2] + x_q @ xi]
        if not _is_zero(tv):
            change = [change[0] + hessian[:n, n:] @ tv, change[1] + hessian[n:, n:] @ tv, change[2]]
        if not _is_zero(tx):
            change = [change[0] + tx @ x_q, change[1], change[2]]
    return out, tuple(c.astype(o.dtype) for c, o in zip(change, out))


@jax.custom_jvp
def tree_rnea(model: Model, q: Array, v: Array, vd: Array) -> Array:
    """Newton-Euler whose JAX derivatives with respect to the state are the analytic ones."""
    return _rnea.rnea(model, q, v, vd)


@functools.partial(tree_rnea.defjvp, symbolic_zeros=True)
def _tree_rnea_jvp(primals, tangents):
    model, q, v, vd = primals
    t_model, tq, tqd, tqdd = tangents
    tau = tree_rnea(model, q, v, vd)  # not _rnea.rnea: forward mode over this rule takes the rule
    change = jnp.zeros_like(tau)
    if not _is_zero((tq, tqd, tqdd)):
        change = tangent(RNEA, model, q, v, vd, _tangent(model, q, tq), tqd, tqdd)
    if _moves_dynamics(t_model):
        change = change + jax.jvp(lambda m: _rnea.rnea(m, q, v, vd), (model,), (_filled(t_model),))[1]
    return tau, change


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
    vd = tree_aba(model, q, v, tau)  # as tree_rnea's rule
    change = jnp.zeros_like(vd)
    if not _is_zero((tq, tqd, ttau)):
        change = tangent(ABA, model, q, v, tau, _tangent(model, q, tq), tqd, ttau)
    return vd, change
