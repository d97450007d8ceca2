"""Physically consistent identification: Rucker and Wensing 2022's log-Cholesky parameterisation
of the pseudo-inertia, optimised with optax, with a prior in the log-det divergence of Lee,
Wensing and Park 2020."""

from __future__ import annotations

import math
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..chain._arrays import is_concrete
from ._friction import Friction, friction_kinds
from ._least_squares import stacked_rows
from ._parameters import (
    as_parameters,
    parameter_count,
    parameter_names,
    pi_from_pseudo_inertia,
    pseudo_inertia,
    standard_parameters,
)


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


_POSITIVE_START = 1e-3  # a coefficient kept >= 0 as u^2 cannot leave u = 0 (a stationary point)
_WINDOW = 10  # steps over which the loss change decides convergence
_ROUNDING = 1e3  # the loss's rounding error, in eps times the mean squared (weighted) torque


class ConsistentFit(eqx.Module):
    """The estimate of :func:`physically_consistent` and its convergence report.

    Unpacks and indexes as the 2-tuple ``(estimate, losses)`` that :func:`physically_consistent`
    returned before the report existed: ``pi, losses = physically_consistent(...)`` and
    ``physically_consistent(...)[0]`` keep working.

    Converged means both (``tolerance`` ``tol``, ``L`` the loss, ``g`` the Euclidean norm of its
    gradient with respect to the optimiser's variables: log-Cholesky coordinates and the square
    roots of the non-negative coefficients):

    * the loss changed by at most ``tol`` relative over the last ``min(10, steps)`` steps, or by
      its rounding error: ``|L[-10] - L| <= tol |L| + 1000 eps E``, ``eps`` the machine epsilon
      and ``E = mean((tau / sigma)^2)`` (the loss at ``pi = 0``; ``L`` is formed from ``Y^T Y``,
      so it is known to about ``eps E``, the level it reaches on exact data);
    * the gradient fell to ``sqrt(tol)`` of its initial norm: ``g <= sqrt(tol) g_0`` (a ratio, so
      that neither the torques' units nor ``sigma`` change the decision); or it is exactly zero.

    Attributes:
        estimate: ``(p,)`` the standard parameters, then friction and rotor inertias (``pi``).
        losses: ``(steps,)`` the loss before each step.
        loss: the loss at ``estimate``.
        loss_change: ``|L[-10] - L| / |L|``, the relative loss change over the last
            ``min(10, steps)`` steps.
        gradient_norm: ``g`` at ``estimate``.
        initial_gradient_norm: ``g_0`` at the start.
        steps: the number of optimiser steps taken.
        tolerance: ``tol``.
        converged: whether both criteria hold (``False`` with ``steps=0``).

    Example:
        The one-link pendulum of :func:`physically_consistent`'s example, from a body 1.5 times
        too heavy: converged in 100 steps, and the old 2-tuple form still unpacks.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> pi = kj.identify.standard_parameters(model)
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 1)))
        >>> fit = kj.identify.physically_consistent(model, Y, Y @ pi, initial=1.5 * pi, steps=100)
        >>> fit.converged, fit.steps, fit.losses.shape
        (True, 100, (100,))
        >>> estimate, losses = fit  # as before the report existed
        >>> bool(np.allclose(estimate, fit.estimate)), fit[1] is fit.losses
        (True, True)
    """

    estimate: Float[Array, " p"]
    losses: Float[Array, " steps"]
    loss: Float[Array, ""]
    loss_change: Float[Array, ""]
    gradient_norm: Float[Array, ""]
    initial_gradient_norm: Float[Array, ""]
    steps: int = eqx.field(static=True)
    tolerance: float = eqx.field(static=True)
    converged: bool = eqx.field(static=True)

    def __iter__(self):
        return iter((self.estimate, self.losses))

    def __getitem__(self, index):
        return (self.estimate, self.losses)[index]

    def __len__(self) -> int:
        return 2


def physically_consistent(
    model: Model,
    y: Float[ArrayLike, "N n p"],
    tau: Float[ArrayLike, "N n"],
    *,
    friction: bool | Friction = False,
    armature: bool = False,
    initial: Float[ArrayLike, " p"] | None = None,
    sigma: Float[ArrayLike, " nv"] | None = None,
    prior: Float[ArrayLike, " p"] | None = None,
    prior_weight: float = 0.0,
    steps: int = 1000,
    optimizer: optax.GradientTransformation | None = None,
    tolerance: float | None = None,
) -> ConsistentFit:
    """Physically consistent identification: every body's pseudo-inertia stays positive definite,
    friction and rotor inertias non-negative.

    Each body's standard parameters are those of ``J = U U^T`` in Rucker and Wensing 2022's
    log-Cholesky parameterisation (``U`` upper triangular with positive diagonal
    ``e^alpha e^d``), so that every estimate is a realisable rigid body (Wensing et al. 2017). The
    viscous, Coulomb (sign or tanh) and Stribeck coefficients (:class:`Friction`: ``fv``, ``fc``,
    ``fs``) and the rotor inertias (``armature=True``) are kept non-negative as ``u^2`` of an
    optimiser variable ``u`` (they can reach 0 exactly, unlike ``exp`` or ``softplus``, and a
    coefficient whose optimum is 0 is a regular minimum in ``u``); offsets (``fo``) are free.
    The loss::

        L = mean(((Y pi - tau) / sigma)^2) + prior_weight * sum_i d(J_i, J_prior_i)

    is minimised with optax (L-BFGS with a zoom line search by
    default), ``d`` the log-det (Bregman) divergence of Lee, Wensing and Park 2020. ``Y^T Y`` is
    formed once, so a step costs ``O(p^2)`` whatever the number of samples; the loop is a
    ``jax.lax.scan`` under ``jit``. A ``UserWarning`` says when ``steps`` ran out before
    convergence (:class:`ConsistentFit`).

    Args:
        model: the nominal model (e.g. from CAD): its bodies are the default start and prior.
        y: the *standard* regressor (:func:`regressor`, with ``friction`` and ``armature``)
            stacked over samples, ``(N, n, p)`` or ``(rows, p)``, ``p = 10 nb`` (``+ n`` per
            friction kind, ``+ n`` with armature).
        tau: measured torques, ``(N, n)`` or ``(rows,)``.
        friction: the friction columns of ``y``: ``False``, ``True`` or a :class:`Friction`, as
            given to :func:`regressor`.
        armature: whether ``y`` has the rotor-inertia columns.
        initial: starting point ``(p,)`` (realisable bodies, non-negative coefficients where they
            are kept so); default the model's :func:`standard_parameters`, and the friction and
            rotor inertias at their least-squares values for those bodies, clipped at 0 where
            they are kept non-negative. A non-negative coefficient that starts at 0 starts at
            ``1e-3`` instead (``u = 0`` is a stationary point of ``u^2``).
        sigma: torque standard deviations broadcastable to ``tau`` (e.g. per joint, from
            :func:`weighted_least_squares`); default 1.
        prior: parameters ``(p,)`` to regularise towards (default ``initial``); only the bodies
            enter ``d``.
        prior_weight: weight of the prior (0: none). Unidentifiable directions are then fixed by
            the prior, and weakly excited ones pulled towards it.
        steps: optimiser iterations.
        optimizer: an optax transformation (default ``optax.lbfgs()``).
        tolerance: the convergence tolerance of :class:`ConsistentFit` (default ``max(1e-9, 100
            eps)``, ``eps`` the machine epsilon of ``y``'s dtype).

    Returns:
        A :class:`ConsistentFit`: the ``estimate`` ``(p,)``, the loss before each step
        (``losses``), the gradient norm, the number of steps and ``converged``; it unpacks as
        ``(pi, losses)``.

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
        >>> fit = kj.identify.physically_consistent(model, Y, Y @ pi, initial=1.5 * pi, steps=100)
        >>> estimate, losses = fit  # or fit.estimate, fit.losses
        >>> bool(jnp.allclose(Y @ estimate, Y @ pi)), bool(losses[-1] < 1e-9 * losses[0])
        (True, True)
        >>> bool(np.linalg.eigvalsh(kj.identify.pseudo_inertia(estimate)).min() > 0)
        True
        >>> fit.converged, fit.steps, bool(fit.gradient_norm < 1e-6 * fit.initial_gradient_norm)
        (True, 100, True)
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    friction_kinds(friction)  # a bad friction= fails before any work
    y, tau = stacked_rows(y, tau)
    nb = model.n_bodies
    p = parameter_count(model, friction, armature)
    if y.shape[-1] != p:
        names = parameter_names(model, friction, armature)[10 * nb :]
        raise ValueError(
            f"the regressor has {y.shape[-1]} columns; this model with friction={friction}, armature={armature} has {p} "
            f"parameters (10 per body, then {list(names)}): build y with regressor(..., friction=, armature=) as passed here"
        )
    # which of the coefficients after the bodies' are kept >= 0 (all but offsets)
    kinds = friction_kinds(friction) + (("ia",) if armature else ())
    positive = np.repeat([kind != "fo" for kind in kinds], model.nv).astype(bool)
    steps = int(steps)
    if steps < 0 or not (tolerance is None or tolerance > 0):
        raise ValueError(f"steps must be >= 0 and tolerance > 0 (or None), got steps={steps}, tolerance={tolerance!r}")
    w = jnp.ones_like(tau) if sigma is None else 1.0 / jnp.broadcast_to(jnp.asarray(sigma, y.dtype), tau.shape)
    yw = (y * w[..., None]).reshape(-1, p)
    tw = (tau * w).reshape(-1)
    normal = (yw.T @ yw / tw.shape[0], yw.T @ tw / tw.shape[0], tw @ tw / tw.shape[0])
    if initial is None:
        initial = _default_initial(standard_parameters(model).astype(y.dtype), normal, positive)
    initial = as_parameters(initial, p, "initial")
    prior = initial if prior is None else as_parameters(prior, p, "prior")
    if not is_concrete(initial, prior):
        raise ValueError("initial and prior must be concrete arrays (they are checked, outside jit)")
    theta0 = jnp.asarray(_physical_init(np.asarray(initial[: 10 * nb]), "initial"), y.dtype)
    _physical_init(np.asarray(prior[: 10 * nb]), "prior")
    j_prior = pseudo_inertia(prior[: 10 * nb].astype(y.dtype))
    u0 = _positive_init(np.asarray(initial[10 * nb :]), positive, parameter_names(model, friction, armature)[10 * nb :])
    opt = _LBFGS if optimizer is None else optax.with_extra_args_support(optimizer)
    params = (theta0, jnp.asarray(u0, y.dtype))
    pi, losses, loss, grad0, grad = _fit_log_cholesky(
        params, jnp.asarray(positive), normal, j_prior, jnp.asarray(prior_weight, y.dtype), opt, steps
    )
    eps = float(jnp.finfo(y.dtype).eps)
    tol = max(1e-9, 100 * eps) if tolerance is None else float(tolerance)
    return _report(pi, losses, loss, grad0, grad, normal[2], steps, tol, eps)


def _default_initial(bodies: Array, normal, positive: np.ndarray) -> Array:
    """The model's bodies, and the coefficients after them at their least-squares values for
    those bodies, clipped at 0 where they are kept non-negative: a start of the right scale (the
    data's), which ``u^2`` reaches slowly from near 0."""
    gram, moment, _ = normal
    nb = bodies.shape[0]
    rest = jnp.linalg.lstsq(gram[nb:, nb:], moment[nb:] - gram[nb:, :nb] @ bodies)[0]
    return jnp.concatenate([bodies, jnp.where(jnp.asarray(positive), jnp.maximum(rest, 0.0), rest)])


def _positive_init(start: np.ndarray, positive: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """The optimiser's variables of the coefficients after the bodies': ``sqrt`` of those kept
    non-negative (a start of 0 raised to :data:`_POSITIVE_START`), the others as they are."""
    negative = positive & ~(start >= 0)
    if np.any(negative):
        bad = {names[i]: float(start[i]) for i in np.flatnonzero(negative)}
        raise ValueError(
            f"initial: {bad} must be >= 0 (friction other than offsets, and rotor inertias, are kept non-negative); "
            "start from 0 or a positive value"
        )
    return np.where(positive, np.sqrt(np.maximum(np.where(positive, start, 0.0), _POSITIVE_START)), start)


def _report(pi, losses, loss, grad0, grad, energy, steps: int, tol: float, eps: float) -> ConsistentFit:
    """The :class:`ConsistentFit` of a run, with a warning when it has not converged."""
    values = np.asarray(losses, dtype=np.float64)
    final = float(loss)
    window = min(_WINDOW, steps)
    difference = abs(values[-window] - final) if steps else math.inf
    change = difference / max(abs(final), np.finfo(np.float64).tiny)
    # the loss, formed from the normal equations, is exact to about eps times its value at pi = 0
    settled = difference <= tol * abs(final) + _ROUNDING * eps * float(energy)
    g, g0 = float(grad), float(grad0)
    converged = bool(steps > 0 and settled and (g <= math.sqrt(tol) * g0 or g == 0.0))
    if steps > 0 and not converged:
        warnings.warn(
            f"physically_consistent: not converged after {steps} steps (relative loss change {change:.3g} over the "
            f"last {window} steps, tolerance {tol:.3g}; gradient norm {g:.3g}, {g / max(g0, 1e-300):.3g} of "
            "the initial one). Run more steps (steps=...), start nearer the optimum (initial=...), or scale the "
            "torques (sigma=...).",
            UserWarning,
            stacklevel=3,
        )
    return ConsistentFit(
        estimate=pi,
        losses=losses,
        loss=loss,
        loss_change=jnp.asarray(change, losses.dtype),
        gradient_norm=grad,
        initial_gradient_norm=grad0,
        steps=steps,
        tolerance=tol,
        converged=converged,
    )


_LBFGS = optax.with_extra_args_support(optax.lbfgs())


def _unpack(params, positive: Array) -> Array:
    theta, u = params
    return jnp.concatenate([pi_from_pseudo_inertia(_log_cholesky_to_pseudo_inertia(theta)), jnp.where(positive, u * u, u)])


def _norm(tree) -> Array:
    return jnp.sqrt(sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(tree)))


@eqx.filter_jit
def _fit_log_cholesky(params, positive, normal, j_prior, prior_weight, opt, steps: int):
    gram, moment, energy = normal

    def loss(params):
        pi = _unpack(params, positive)
        data = pi @ gram @ pi - 2.0 * moment @ pi + energy
        return data + prior_weight * _log_det_divergence(_log_cholesky_to_pseudo_inertia(params[0]), j_prior)

    def step(carry, _):
        params, state = carry
        value, grad = jax.value_and_grad(loss)(params)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=loss)
        return (optax.apply_updates(params, updates), state), value

    grad0 = _norm(jax.grad(loss)(params))
    (params, _), losses = jax.lax.scan(step, (params, opt.init(params)), None, length=steps)
    value, grad = jax.value_and_grad(loss)(params)
    return _unpack(params, positive), losses, value, grad0, _norm(grad)
