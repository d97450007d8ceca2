"""Ordinary and weighted least squares (Gautier and Poignet 2001) on a stacked regressor."""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain._arrays import is_concrete


def stacked_rows(y: ArrayLike, tau: ArrayLike) -> tuple[Array, Array]:
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

    Returns:
        ``(r,)``: the estimate ``beta``.

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
    y, tau = stacked_rows(y, tau)
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
    if not is_concrete(singular):
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

    Args:
        y: the regressor stacked over samples, ``(N, n, r)``.
        tau: the measured torques, ``(N, n)``.
        iterations: the number of re-weightings.

    Returns:
        ``(beta, sigma)``: the estimate ``(r,)`` and the joints' error standard deviations
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
    y, tau = stacked_rows(y, tau)
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
