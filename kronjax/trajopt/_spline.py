"""Clamped uniform B-splines in normalised time: the trajectories of :mod:`kronjax.trajopt`.

A joint coordinate is ``q(t) = sum_i N_{i,p}(t / T) c_i`` with the Cox-de Boor basis ``N_{i,p}``
(de Boor, *A Practical Guide to Splines*, ch. IX); its derivatives are splines of lower degree with
differenced control points, so ``q``, ``v``, ``vd`` and ``vdd`` are exact. Constant matrices are
built with numpy (at transcription), traced times with ``jax.numpy``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float


def _knots(m: int, p: int) -> np.ndarray:
    """Clamped uniform knot vector on ``[0, 1]``: ``p + 1`` zeros, ``m - p - 1`` interior knots,
    ``p + 1`` ones (``m + p + 1`` knots for ``m`` control points)."""
    return np.concatenate([np.zeros(p + 1), np.linspace(0.0, 1.0, m - p + 1)[1:-1], np.ones(p + 1)])


def _basis(knots: np.ndarray, p: int, s, xp=jnp):
    """Cox-de Boor: the ``len(knots) - p - 1`` basis functions of degree ``p`` at ``s`` (any
    shape), shape ``(*s.shape, m)``. The knot span is found by search (clamped to the last
    non-empty span at ``s = 1``), so the polynomial piece is evaluated exactly, also at the ends."""
    s = xp.asarray(s)[..., None]
    spans = len(knots) - 1
    m = len(knots) - p - 1
    k = xp.clip(xp.searchsorted(knots, s, side="right") - 1, p, m - 1)
    n = (xp.arange(spans) == k).astype(s.dtype)
    for d in range(1, p + 1):
        count = spans - d
        u_i, u_id = knots[:count], knots[d : d + count]
        u_i1, u_id1 = knots[1 : count + 1], knots[d + 1 : d + 1 + count]
        with np.errstate(divide="ignore"):
            a = np.where(u_id > u_i, 1.0 / np.where(u_id > u_i, u_id - u_i, 1.0), 0.0)
            b = np.where(u_id1 > u_i1, 1.0 / np.where(u_id1 > u_i1, u_id1 - u_i1, 1.0), 0.0)
        n = (s - u_i) * a * n[..., :count] + (u_id1 - s) * b * n[..., 1 : count + 1]
    return n


def _derivative_operators(m: int, p: int, order: int) -> list[tuple[np.ndarray, int, np.ndarray]]:
    """For ``j = 0..order``: ``(knots_j, p - j, D_j)`` with ``D_j`` (``(m - j) x m``) mapping the
    control points to those of the ``j``-th derivative spline (in ``s``): ``Q_i = p (c_{i+1} -
    c_i) / (u_{i+p+1} - u_{i+1})`` applied ``j`` times (de Boor)."""
    knots, degree, d = _knots(m, p), p, np.eye(m)
    out = [(knots, degree, d)]
    for _ in range(order):
        count = d.shape[0] - 1
        scale = degree / (knots[degree + 1 : degree + 1 + count] - knots[1 : count + 1])
        diff = np.zeros((count, count + 1))
        diff[np.arange(count), np.arange(count)] = -scale
        diff[np.arange(count), np.arange(count) + 1] = scale
        knots, degree, d = knots[1:-1], degree - 1, diff @ d
        out.append((knots, degree, d))
    return out


def design_matrices(m: int, p: int, s: np.ndarray, order: int) -> np.ndarray:
    """``(order + 1, len(s), m)``: ``d^j/ds^j`` of the basis at ``s``, ``j = 0..order``."""
    return np.stack([_basis(k, deg, s, np) @ d for k, deg, d in _derivative_operators(m, p, order)])


class BSpline(eqx.Module):
    """A joint trajectory ``q(t)``, ``t in [0, duration]``: a clamped uniform B-spline of degree
    ``degree`` in ``s = t / duration`` with control points ``control_points`` (``(m, n)``).

    ``trajectory(t)`` returns ``(q, v, vd)`` at a scalar time (each ``(n,)``), so a BSpline is a
    reference for :func:`kronjax.simulate.feedforward` and :func:`kronjax.simulate.computed_torque`.
    Outside ``[0, duration]`` the end polynomial pieces are extrapolated.

    Example:
        With ``degree + 1`` control points the spline is one polynomial (a Bézier curve): equally
        spaced control points give the straight line ``q = t / T``, and a clamped spline starts
        at its first control point and ends at its last.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> from kronjax import trajopt
        >>> line = trajopt.BSpline(jnp.linspace(0.0, 1.0, 6)[:, None], jnp.asarray(2.0), 5)  # m = 6, n = 1, T = 2 s
        >>> q, v, vd = line(1.0)
        >>> print(np.round([float(q[0]), float(v[0]), float(vd[0])], 9))
        [0.5 0.5 0. ]
        >>> q, v, vd = line.sample(jnp.linspace(0.0, 2.0, 5))  # at 5 times
        >>> q.shape, float(q[0, 0]), float(q[-1, 0])
        ((5, 1), 0.0, 1.0)
    """

    control_points: Float[Array, "m n"]
    duration: Float[Array, ""]
    degree: int = eqx.field(static=True)

    def __check_init__(self):
        m = self.control_points.shape[0]
        if self.control_points.ndim != 2 or m < self.degree + 1:
            raise ValueError(
                f"control_points must be (m, n) with m >= degree + 1 = {self.degree + 1}, got shape {self.control_points.shape}"
            )

    @eqx.filter_jit
    def derivative(self, t: Float[ArrayLike, ""], order: int) -> Float[Array, " n"]:
        """``d^order q / dt^order`` at ``t`` (``order <= degree``)."""
        m = self.control_points.shape[0]
        if not 0 <= order <= self.degree:
            raise ValueError(f"derivative order must be in 0..{self.degree}, got {order}")
        knots, degree, d = _derivative_operators(m, self.degree, order)[order]
        s = jnp.asarray(t, self.control_points.dtype) / self.duration
        weights = _basis(knots, degree, s) @ jnp.asarray(d, self.control_points.dtype)
        return weights @ self.control_points / self.duration**order

    def __call__(self, t: Float[ArrayLike, ""]) -> tuple[Float[Array, " n"], Float[Array, " n"], Float[Array, " n"]]:
        return self.derivative(t, 0), self.derivative(t, 1), self.derivative(t, 2)

    @eqx.filter_jit
    def sample(self, ts: Float[ArrayLike, " T"]) -> tuple[Float[Array, "T n"], Float[Array, "T n"], Float[Array, "T n"]]:
        """``(q, v, vd)`` at the times ``ts``, each ``(T, n)``."""
        return jax.vmap(self)(jnp.asarray(ts, self.control_points.dtype))
