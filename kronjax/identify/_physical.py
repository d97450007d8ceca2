"""Physically consistent identification: Rucker and Wensing 2022's log-Cholesky parameterisation
of the pseudo-inertia, optimised with optax, with a prior in the log-det divergence of Lee,
Wensing and Park 2020."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..chain._arrays import is_concrete
from ._least_squares import stacked_rows
from ._parameters import as_parameters, parameter_count, pi_from_pseudo_inertia, pseudo_inertia, standard_parameters


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
    y, tau = stacked_rows(y, tau)
    nb = model.n_bodies
    p = parameter_count(model, friction, armature)
    if y.shape[-1] != p:
        raise ValueError(
            f"the regressor has {y.shape[-1]} columns; this model with friction={friction}, armature={armature} has {p} parameters"
        )
    if initial is None:
        initial = jnp.concatenate([standard_parameters(model), jnp.zeros(p - 10 * nb)]).astype(y.dtype)
    initial = as_parameters(initial, p, "initial")
    prior = initial if prior is None else as_parameters(prior, p, "prior")
    if not is_concrete(initial, prior):
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
    return jnp.concatenate([pi_from_pseudo_inertia(_log_cholesky_to_pseudo_inertia(theta)), fric])


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
