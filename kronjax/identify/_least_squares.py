"""Ordinary and weighted least squares (Gautier and Poignet 2001) on a stacked regressor."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import equinox as eqx
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
    beta, singular, _ = _svd_solve(a, tau.reshape(-1))
    _warn_if_dropped(singular, a.shape[0], "least_squares")
    return beta


def _svd_solve(a: Array, b: Array) -> tuple[Array, Array, Array]:
    """``jnp.linalg.lstsq(a, b)`` (same cut-off) that also returns the singular values ``s`` and
    right singular vectors ``V^T`` of ``a`` (``(a^T a)^-1 = V S^-2 V^T``)."""
    u, s, vt = jnp.linalg.svd(a, full_matrices=False)
    keep = s > jnp.finfo(a.dtype).eps * max(a.shape) * s[0]
    return vt.T @ jnp.where(keep, (u.T @ b) / jnp.where(keep, s, 1.0), 0.0), s, vt


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
    beta, sigma, _, _ = _per_joint_weighted(y, tau, iterations, "weighted_least_squares")
    return beta, sigma


def _per_joint_weighted(y: ArrayLike, tau: ArrayLike, iterations: int, what: str) -> tuple[Array, Array, Array, Array]:
    """Gautier and Poignet's iteration: ``(beta, sigma, s, V^T)``, the last two of the weighted
    regressor of the final solve."""
    y, tau = stacked_rows(y, tau)
    if y.ndim != 3:
        raise ValueError(f"{what} needs a regressor (N, n, r) (samples, joints, parameters), got {y.shape}")
    n_samples, n, r = y.shape
    beta, singular, vt = _svd_solve(y.reshape(-1, r), tau.reshape(-1))
    _warn_if_dropped(singular, n_samples * n, what)
    for _ in range(max(int(iterations), 1)):
        residual = tau - y @ beta
        sigma = jnp.sqrt(jnp.sum(residual**2, axis=0) / (n_samples - r / n))
        sigma = jnp.maximum(sigma, jnp.finfo(y.dtype).tiny + 1e-12 * jnp.max(sigma))
        w = 1.0 / sigma
        beta, singular, vt = _svd_solve((y * w[:, None]).reshape(-1, r), (tau * w).reshape(-1))
    return beta, sigma, singular, vt


class LeastSquaresFit(eqx.Module):
    """A least-squares estimate with its uncertainty (Gautier's formula), from :func:`fit`.

    For ``beta = argmin ||W beta - tau||`` over ``rows`` equations and ``r`` parameters, with
    ``W = U S V^T``:

    * ordinary: ``C = sigma_rho^2 (W^T W)^-1 = sigma_rho^2 V S^-2 V^T``,
      ``sigma_rho^2 = ||tau - W beta||^2 / (rows - r)`` (Gautier 1991; Swevers et al. 1997,
      eq. 20);
    * weighted by each joint's torque-error standard deviation ``sigma_j`` (given, or estimated
      from the residuals: Gautier and Poignet 2001): ``C = (W^T Sigma^-1 W)^-1``,
      ``Sigma = diag(sigma_j^2)`` per row, from the SVD of the weighted regressor.

    Standard deviations ``std_k = sqrt(C_kk)``; relative standard deviations in percent, the
    column of identification papers' tables, ``100 std_k / |beta_k|`` (a large value marks a
    poorly identified parameter). The formula assumes independent, zero-mean torque errors of
    constant variance per joint and an exact model; filtered (correlated) samples make it
    optimistic.

    Attributes:
        estimate: ``beta``, ``(r,)``.
        covariance: ``C``, ``(r, r)``, in the units of ``beta`` squared.
        std: ``(r,)``, standard deviations of ``beta``.
        relative_std: ``(r,)``, ``100 std / |beta|`` in percent (``inf`` where ``beta`` is 0).
        residual_rms: ``(n,)``, root mean square of each joint's residual ``tau - W beta`` (N m
            or N; ``n = 1`` for a regressor given as ``(rows, r)``).
        sigma: ``(n,)``, each joint's torque-error standard deviation the covariance assumes:
            ``sigma_rho`` for every joint (ordinary), the given or estimated ``sigma_j``
            (weighted).
        condition_number: ``s_max / s_min`` of the (weighted) regressor.
        rows: number of equations (samples times joints).
        rank: number of parameters ``r`` (columns of the regressor: the base parameters).
        weighted: whether the estimate is weighted.

    Example:
        A straight line ``tau = a t + b`` through 11 points with errors of 0.01 (the regressor's
        rows are ``(t, 1)``); :func:`fit` has the double pendulum's base parameters:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> t = np.linspace(0.0, 1.0, 11)
        >>> est = kj.identify.fit(np.stack([t, np.ones(11)], axis=1), 2.0 * t + 1.0 + 0.01 * np.array([1, -1] * 5 + [1]))
        >>> est.rows, est.rank
        (11, 2)
        >>> print(est.table(["a", "b"]))
        parameter       value         std      %std
        a           2.000e+00   1.050e-02      0.52
        b           1.001e+00   6.210e-03      0.62
    """

    estimate: Float[Array, " r"]
    covariance: Float[Array, "r r"]
    std: Float[Array, " r"]
    relative_std: Float[Array, " r"]
    residual_rms: Float[Array, " n"]
    sigma: Float[Array, " n"]
    condition_number: Float[Array, ""]
    rows: int = eqx.field(static=True)
    rank: int = eqx.field(static=True)
    weighted: bool = eqx.field(static=True)

    def table(self, names: Sequence[str] = (), precision: int = 4) -> str:
        """The parameter table of identification papers: name, value, standard deviation and
        relative standard deviation (%) per parameter, one line each after a header.

        Args:
            names: one name per parameter, e.g. :meth:`BaseParameters.describe` (default
                ``beta[k]``).
            precision: significant digits of the value and the standard deviation.

        Returns:
            The table, lines separated by newlines (``print`` it).
        """
        names = tuple(str(n) for n in names) or tuple(f"beta[{k}]" for k in range(self.rank))
        if len(names) != self.rank:
            raise ValueError(f"got {len(names)} names for {self.rank} parameters")
        width = max(len("parameter"), *(len(n) for n in names))
        digits = int(precision) + 6
        lines = [f"{'parameter':<{width}}  {'value':>{digits}}  {'std':>{digits}}  {'%std':>8}"]
        for name, value, std, rel in zip(names, *(np.asarray(a) for a in (self.estimate, self.std, self.relative_std))):
            lines.append(f"{name:<{width}}  {value:>{digits}.{precision - 1}e}  {std:>{digits}.{precision - 1}e}  {rel:>8.2f}")
        return "\n".join(lines)


def fit(
    y: Float[ArrayLike, "*rows r"],
    tau: Float[ArrayLike, "*rows"],
    *,
    weighted: bool = False,
    sigma: Float[ArrayLike, "*joints"] | None = None,
    iterations: int = 3,
) -> LeastSquaresFit:
    """Least-squares estimate with its covariance, standard deviations and fit statistics: the
    estimate of :func:`least_squares` (``weighted=False``) or :func:`weighted_least_squares`
    (``weighted=True``) reported as a :class:`LeastSquaresFit` (Gautier 1991; Gautier and
    Poignet 2001; Swevers et al. 1997).

    Jit-able (the input checks run in Python on the shapes); outside ``jit`` a ``UserWarning``
    says when the regressor is too ill-conditioned for its precision, as :func:`least_squares`.

    Args:
        y: a base regressor with full column rank (:meth:`BaseParameters.regressor`), ``(N, n, r)``
            (samples, joints, parameters) or ``(rows, r)``.
        tau: the measured torques, ``(N, n)`` or ``(rows,)`` (N m or N).
        weighted: weight each joint by ``1 / sigma_j`` with ``sigma_j`` estimated from the
            residuals (``iterations`` re-weightings, :func:`weighted_least_squares`); a
            regressor given as ``(rows, r)`` is one joint.
        sigma: known torque-error standard deviations per joint, broadcastable to ``(n,)``:
            the estimate weighted by them and ``C = (W^T Sigma^-1 W)^-1`` (not with
            ``weighted=True``).
        iterations: re-weightings of ``weighted=True``.

    Returns:
        The :class:`LeastSquaresFit`.

    Example:
        The double pendulum's torques at 200 random states with noise of 0.05 N m: the base
        parameters come back within a few standard deviations, each with its relative standard
        deviation:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> base, pi = kj.identify.base_parameters(model), kj.identify.standard_parameters(model)
        >>> rng = np.random.default_rng(0)
        >>> Y = base.regressor(kj.identify.regressor(model, *rng.normal(size=(3, 200, 2))))
        >>> est = kj.identify.fit(Y, Y @ base.from_standard(pi) + 0.05 * rng.normal(size=(200, 2)))
        >>> est.rows, est.rank, est.residual_rms.shape
        (400, 6, (2,))
        >>> bool(np.all(np.abs(est.estimate - base.from_standard(pi)) < 4 * est.std))
        True
        >>> print(est.table(base.describe()).splitlines()[0])
        parameter                      value         std      %std
    """
    y, tau = stacked_rows(y, tau)
    r = y.shape[-1]
    n = y.shape[-2] if y.ndim == 3 else 1
    rows = tau.size
    if rows <= r:
        raise ValueError(f"{rows} equations for {r} parameters: the covariance needs more rows than parameters")
    if weighted and sigma is not None:
        raise ValueError("give either sigma (known per-joint standard deviations) or weighted=True (estimated), not both")
    if y.ndim == 2:
        y, tau = y[:, None, :], tau[:, None]
    if weighted:
        beta, sigma_j, s, vt = _per_joint_weighted(y, tau, iterations, "fit")
    else:
        w = jnp.ones(n, y.dtype) if sigma is None else 1.0 / jnp.broadcast_to(jnp.asarray(sigma, y.dtype), (n,))
        a = (y * w[:, None]).reshape(-1, r)
        beta, s, vt = _svd_solve(a, (tau * w).reshape(-1))
        _warn_if_dropped(s, rows, "fit")
    residual = tau - y @ beta
    if weighted:  # the weighted regressor's (W^T Sigma^-1 W)^-1 is the covariance as it stands
        scale = 1.0
    elif sigma is None:  # sigma_rho^2 (W^T W)^-1
        rho = jnp.sqrt(jnp.sum(residual**2) / (rows - r))
        scale, sigma_j = rho**2, jnp.full(n, rho, y.dtype)
    else:
        scale, sigma_j = 1.0, 1.0 / w
    inverse_s2 = jnp.where(s > 0, 1.0 / jnp.where(s > 0, s, 1.0) ** 2, jnp.inf)
    covariance = scale * (vt.T * inverse_s2) @ vt
    std = jnp.sqrt(jnp.diagonal(covariance))
    return LeastSquaresFit(
        estimate=beta,
        covariance=covariance,
        std=std,
        relative_std=100.0 * std / jnp.abs(beta),
        residual_rms=jnp.sqrt(jnp.mean(residual**2, axis=0)),
        sigma=sigma_j,
        condition_number=s[0] / s[-1],
        rows=rows,
        rank=r,
        weighted=weighted or sigma is not None,
    )
