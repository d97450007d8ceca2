"""Trajectory optimisation: B-spline joint trajectories, costs, joint limits, optax.

The transcription (a direct method, "differentiate the inverse dynamics"):

* **Trajectory.** Each joint coordinate is a clamped uniform B-spline of degree ``p`` (default 5)
  with ``m`` control points in normalised time ``s = t / T`` on ``[0, 1]`` (:class:`BSpline`)::

      q(t) = sum_i N_{i,p}(t / T) c_i,        q^(j)(t) = T^-j d^j/ds^j q

  where ``N_{i,p}`` are the Cox-de Boor basis functions. Derivatives are splines of lower
  degree with differenced control points (de Boor), so ``q``, ``qd``, ``qdd``, ``qddd`` are exact.
* **Boundary conditions.** ``q``, ``qd`` and ``qdd`` at ``t = 0`` and ``t = T``
  (:class:`BoundaryConditions`). At a clamped end the ``j``-th derivative depends only on the
  ``j + 1`` control points nearest that end, with a non-zero coefficient on the ``j``-th: the
  conditions fix those control points by substitution, and the remaining ones are the free
  decision variables ``z``. Every trajectory the optimiser can produce meets the boundary
  conditions exactly (``q`` to the last bit, derivatives to round-off); they are not constraints.
* **Dynamics.** ``tau(t_k) = M qdd + C* (qd ⊗ qd) + g`` (Tuan 100) at ``K`` sample times by
  :func:`kronjax.inverse_dynamics` (default ``method="rnea"``, the fast method: no ``n x n^2``
  tensor); gradients flow through it.
* **Costs** (:class:`TorqueEffort`, :class:`Energy`, :class:`Smoothness`, :class:`TimeWeighted`,
  :class:`TaskTarget`, and sums ``w1 * a + w2 * b``): integrals by Gauss-Lobatto quadrature on
  every knot span (``r`` nodes per span, the span's ends included, exact for polynomials of degree
  ``2 r - 3``: with the default ``r = 6``, exact for the squared jerk or acceleration of a quintic
  spline).
* **Constraints** from the model's :class:`~kronjax.chain.JointLimits` (URDF ``<limit>``) at the
  samples (the quadrature nodes and further equally spaced points), relative to the limit:
  ``(q - upper) / range``, ``(lower - q) / range``, ``(|qd| - velocity) / velocity``,
  ``(|tau| - effort) / effort``, all ``<= 0`` (unlimited entries are dropped). Between the samples
  a limit that is active over an interval can be exceeded by a fraction of a percent: ``margin``
  imposes the limits that much inside.
* **Solver.** An augmented Lagrangian for the inequalities (Powell-Hestenes-Rockafellar; Nocedal
  and Wright, *Numerical Optimization*, sec. 17.4)::

      L(z; lam, rho) = f(z) / f0 + 1 / (2 rho) sum_k (max(0, lam_k + rho g_k)^2 - lam_k^2)

  with ``f0`` the cost of the initial guess. Each outer iteration minimises ``L`` over ``z`` with
  L-BFGS (optax's ``scale_by_lbfgs`` directions, an Armijo backtracking line search), in
  variables preconditioned by the Gram matrix of the acceleration, until the gradient is small;
  then ``lam <- max(0, lam + rho g)``, and ``rho <- 10 rho`` when the violation did not shrink
  by 4. Any optax optimiser may replace L-BFGS. Many initial guesses are solved at once with
  ``jax.vmap``; the best feasible one is returned.

Entry points: :func:`optimize` (model, boundary conditions, cost -> :class:`Result` with the
optimised trajectory and a :class:`SolverReport`), and :func:`transcribe` (the :class:`Problem`:
objective and constraints as functions of ``z``, for other solvers).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from .chain import JointLimits, Model, require_one_dof_joints
from .dynamics import INVERSE_DYNAMICS_METHODS, inverse_dynamics

__all__ = [
    "BSpline",
    "BoundaryConditions",
    "Samples",
    "AbstractCost",
    "AbstractRunningCost",
    "TorqueEffort",
    "Energy",
    "Smoothness",
    "TimeWeighted",
    "TaskTarget",
    "CostSum",
    "Problem",
    "transcribe",
    "Progress",
    "SolverReport",
    "Result",
    "optimize",
    "print_progress",
]


# --------------------------------------------------------------------------------------------
# B-splines (numpy for constant matrices, jnp for traced times)
# --------------------------------------------------------------------------------------------


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


def _design(m: int, p: int, s: np.ndarray, order: int) -> np.ndarray:
    """``(order + 1, len(s), m)``: ``d^j/ds^j`` of the basis at ``s``, ``j = 0..order``."""
    return np.stack([_basis(k, deg, s, np) @ d for k, deg, d in _derivative_operators(m, p, order)])


class BSpline(eqx.Module):
    """A joint trajectory ``q(t)``, ``t in [0, duration]``: a clamped uniform B-spline of degree
    ``degree`` in ``s = t / duration`` with control points ``control_points`` (``(m, n)``).

    ``trajectory(t)`` returns ``(q, qd, qdd)`` at a scalar time (each ``(n,)``), so a BSpline is a
    reference for :func:`kronjax.simulate.feedforward` and :func:`kronjax.simulate.computed_torque`.
    Outside ``[0, duration]`` the end polynomial pieces are extrapolated.
    """

    control_points: Float[Array, "m n"]
    duration: Float[Array, ""]
    degree: int = eqx.field(static=True)

    def __check_init__(self):
        m = self.control_points.shape[0]
        if self.control_points.ndim != 2 or m < self.degree + 1:
            raise ValueError(
                f"control_points must be (m, n) with m >= degree + 1 = {self.degree + 1}, "
                f"got shape {self.control_points.shape}"
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
        """``(q, qd, qdd)`` at the times ``ts``, each ``(T, n)``."""
        return jax.vmap(self)(jnp.asarray(ts, self.control_points.dtype))


# --------------------------------------------------------------------------------------------
# Boundary conditions
# --------------------------------------------------------------------------------------------


def _vector(x, n: int, what: str, dtype) -> Array:
    x = jnp.asarray(x, dtype)
    if x.ndim == 0:
        x = jnp.broadcast_to(x, (n,))
    if x.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {x.shape}")
    if not isinstance(x, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(x))):
        raise ValueError(f"{what} must be finite, got {np.asarray(x)}")
    return x


class BoundaryConditions(eqx.Module):
    """Boundary conditions of a motion of duration ``duration`` (``t`` from ``0`` to ``T``).

    Args:
        q_start: ``(n,)`` joint coordinates at ``t = 0``.
        q_end: ``(n,)`` joint coordinates at ``t = T``, or ``None`` to leave them free (then a
            :class:`TaskTarget` usually says where to go).
        duration: ``T > 0`` in seconds.
        qd_start, qd_end: velocities at the ends (default ``0``: rest to rest); ``None`` frees them.
        qdd_start, qdd_end: accelerations at the ends (default ``0``: the torque starts and ends
            at the holding torque ``g(q)``); ``None`` frees them.

    Scalars broadcast to ``(n,)``. The values are pytree leaves (they may be traced and batched);
    which ones are fixed is static.
    """

    duration: Float[Array, ""]
    q_start: Float[Array, " n"]
    q_end: Float[Array, " n"] | None
    qd_start: Float[Array, " n"] | None
    qd_end: Float[Array, " n"] | None
    qdd_start: Float[Array, " n"] | None
    qdd_end: Float[Array, " n"] | None

    def __init__(
        self,
        q_start: Float[ArrayLike, " n"],
        q_end: Float[ArrayLike, " n"] | None,
        duration: Float[ArrayLike, ""],
        *,
        qd_start: Float[ArrayLike, " n"] | None = 0.0,
        qd_end: Float[ArrayLike, " n"] | None = 0.0,
        qdd_start: Float[ArrayLike, " n"] | None = 0.0,
        qdd_end: Float[ArrayLike, " n"] | None = 0.0,
    ):
        q_start = jnp.asarray(q_start)
        if q_start.ndim != 1:
            raise ValueError(f"q_start must be an (n,) vector, got shape {q_start.shape}")
        n = q_start.shape[0]
        dtype = jnp.result_type(q_start, float)
        self.q_start = _vector(q_start, n, "q_start", dtype)
        self.duration = jnp.asarray(duration, dtype)
        if self.duration.shape != ():
            raise ValueError(f"duration must be a scalar, got shape {self.duration.shape}")
        if not isinstance(self.duration, jax.core.Tracer) and not float(self.duration) > 0:
            raise ValueError(f"duration must be positive, got {float(self.duration)}")
        for name, value in (("q_end", q_end), ("qd_start", qd_start), ("qd_end", qd_end),
                            ("qdd_start", qdd_start), ("qdd_end", qdd_end)):
            setattr(self, name, None if value is None else _vector(value, n, name, dtype))

    @property
    def n_dof(self) -> int:
        return self.q_start.shape[0]

    def fixed(self, end: str) -> list[tuple[int, Array]]:
        """``[(derivative order, value in t)]`` fixed at ``end`` (``"start"`` or ``"end"``)."""
        values = (self.q_start, self.qd_start, self.qdd_start) if end == "start" else (self.q_end, self.qd_end, self.qdd_end)
        return [(j, v) for j, v in enumerate(values) if v is not None]


# --------------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------------


class Samples(NamedTuple):
    """The trajectory at the sample times, handed to the costs.

    Attributes:
        t: ``(K,)`` sample times from ``0`` to ``T``.
        weights: ``(K,)`` quadrature weights (Gauss-Lobatto per knot span, ``sum = T``):
            ``int_0^T f dt ~ weights @ f``.
        q, qd, qdd, qddd: ``(K, n)`` position, velocity, acceleration, jerk.
        tau: ``(K, n)`` joint torques by inverse dynamics (Tuan 100).
        duration: ``T``.
    """

    t: Float[Array, " K"]
    weights: Float[Array, " K"]
    q: Float[Array, "K n"]
    qd: Float[Array, "K n"]
    qdd: Float[Array, "K n"]
    qddd: Float[Array, "K n"]
    tau: Float[Array, "K n"]
    duration: Float[Array, ""]


class AbstractCost(eqx.Module):
    """A cost ``f(model, trajectory, samples) -> scalar``. Costs add and scale:
    ``TorqueEffort() + 0.01 * Smoothness()``."""

    def __call__(self, model: Model, trajectory: BSpline, samples: Samples) -> Float[Array, ""]:
        raise NotImplementedError

    def __add__(self, other):
        if not isinstance(other, AbstractCost):
            return NotImplemented
        return CostSum((self, other), (1.0, 1.0))

    def __mul__(self, weight):
        if isinstance(weight, AbstractCost):
            return NotImplemented
        return CostSum((self,), (weight,))

    __rmul__ = __mul__


class CostSum(AbstractCost):
    """``sum_i weights[i] * terms[i]``."""

    terms: tuple[AbstractCost, ...]
    weights: tuple[Float[ArrayLike, ""], ...]

    def __call__(self, model, trajectory, samples):
        return sum(w * term(model, trajectory, samples) for term, w in zip(self.terms, self.weights))


class AbstractRunningCost(AbstractCost):
    """A cost ``int_0^T l(t) dt``: subclasses give the integrand ``l`` at the samples."""

    def integrand(self, model: Model, samples: Samples) -> Float[Array, " K"]:
        raise NotImplementedError

    def __call__(self, model, trajectory, samples):
        return samples.weights @ self.integrand(model, samples)


def _weights_vector(weights):
    return None if weights is None else jnp.asarray(weights)


class TorqueEffort(AbstractRunningCost):
    """Torque effort ``int_0^T sum_i w_i tau_i(t)^2 dt`` (N^2 m^2 s). ``weights``: ``(n,)`` or a
    scalar (default 1); ``1 / effort^2`` makes the joints count relative to their limits."""

    weights: Float[Array, "*n"] | None = eqx.field(default=None, converter=_weights_vector)

    def integrand(self, model, samples):
        w = 1.0 if self.weights is None else self.weights
        return jnp.sum(w * samples.tau**2, axis=-1)


class Energy(AbstractRunningCost):
    """Mechanical energy spent by the actuators ``int_0^T sum_i |tau_i qd_i| dt`` (J), with
    ``|x|`` smoothed to ``sqrt(x^2 + epsilon^2) - epsilon`` (``epsilon`` in W) so that the cost is
    differentiable (no regeneration: braking costs energy too)."""

    epsilon: float = 1e-3

    def integrand(self, model, samples):
        power = samples.tau * samples.qd
        return jnp.sum(jnp.sqrt(power**2 + self.epsilon**2) - self.epsilon, axis=-1)


class Smoothness(AbstractRunningCost):
    """``int_0^T |d^order q / dt^order|^2 dt``: ``order=3`` (default) the squared jerk,
    ``order=2`` the squared acceleration."""

    order: int = eqx.field(default=3, static=True)

    def __check_init__(self):
        if self.order not in (1, 2, 3):
            raise ValueError(f"Smoothness order must be 1, 2 or 3, got {self.order}")

    def integrand(self, model, samples):
        x = (samples.qd, samples.qdd, samples.qddd)[self.order - 1]
        return jnp.sum(x**2, axis=-1)


def _ramp(s):
    return s


class TimeWeighted(AbstractRunningCost):
    """A running cost weighted in time: ``int_0^T w(t / T) l(t) dt`` with ``l`` the integrand of
    ``term`` and ``w`` a function of normalised time (default ``w(s) = s``: late costs count more).
    """

    term: AbstractRunningCost
    weight: Callable[[Array], Array] = eqx.field(default=_ramp, static=True)

    def integrand(self, model, samples):
        return self.weight(samples.t / samples.duration) * self.term.integrand(model, samples)


class TaskTarget(AbstractCost):
    """A task-space target for a point of a body: ``|p(q(t*)) - target|^2`` (m^2), ``p`` the point
    in the base frame (forward kinematics, Tuan 22-27) at time ``t*`` (default ``T``, the end).

    Args:
        body: index or name of the body.
        target: ``(3,)`` position in the base frame.
        point: the point in the body frame (``(3,)``, default its frame origin).
        time: ``t*`` in seconds (``None``: the end of the motion). With a fixed ``q_end``
            (:class:`BoundaryConditions`) the end position is fixed too: leave ``q_end=None``.
    """

    body: int | str = eqx.field(static=True)
    target: Float[Array, "3"] = eqx.field(converter=jnp.asarray)
    point: Float[Array, "3"] = eqx.field(default=(0.0, 0.0, 0.0), converter=jnp.asarray)
    time: float | None = None

    def __check_init__(self):
        if self.target.shape != (3,) or self.point.shape != (3,):
            raise ValueError(f"target and point must be 3-vectors, got {self.target.shape}, {self.point.shape}")

    def __call__(self, model, trajectory, samples):
        b = model.body_index(self.body)
        t = samples.duration if self.time is None else self.time
        rotations, origins = model.poses(trajectory.derivative(t, 0))
        p = origins[b] + rotations[b] @ self.point.astype(origins.dtype)
        return jnp.sum((p - self.target) ** 2)


# --------------------------------------------------------------------------------------------
# The transcription
# --------------------------------------------------------------------------------------------


def _limit_scales(limits: JointLimits, margin: float, dtype):
    """Finite-safe limits and masks: ``(lower, upper, pos_scale, pos_mask, vel, vel_mask, eff,
    eff_mask)``, with the limits shrunk by ``margin`` (a fraction of each limit)."""
    lower, upper = limits.lower.astype(dtype), limits.upper.astype(dtype)
    pos_mask = jnp.isfinite(lower) & jnp.isfinite(upper)
    span = jnp.where(pos_mask, upper - lower, 1.0)
    span = jnp.where(span > 0, span, 1.0)
    lo_mask, up_mask = jnp.isfinite(lower), jnp.isfinite(upper)
    lower = jnp.where(lo_mask, lower, 0.0) + margin * span
    upper = jnp.where(up_mask, upper, 0.0) - margin * span
    scale = jnp.where(pos_mask, span, jnp.where(up_mask, jnp.abs(upper), jnp.abs(lower)))
    scale = jnp.where(scale > 0, scale, 1.0)
    vel, eff = limits.velocity.astype(dtype), limits.effort.astype(dtype)
    vel_mask, eff_mask = jnp.isfinite(vel), jnp.isfinite(eff)
    vel = jnp.where(vel_mask, vel, 1.0) * (1.0 - margin)
    eff = jnp.where(eff_mask, eff, 1.0) * (1.0 - margin)
    return lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask


class Problem(eqx.Module):
    """The transcribed problem (:func:`transcribe`): ``minimise objective(z)`` subject to
    ``constraints(z) <= 0``, with ``z`` (``(m_free, n)``) the free control points.

    Attributes:
        model, boundary, cost, limits: as given.
        degree, num_control_points: the spline.
        free: static indices of the free control points (the others are fixed by ``boundary``).
        design: ``(4, K, m)``: ``d^j/ds^j`` of the basis at the samples, ``j = 0..3``.
        end_rows: ``(2, 3, m)``: ``d^j/ds^j`` of the basis at ``s = 0`` and ``s = 1``.
        s, weights: ``(K,)`` normalised sample times and quadrature weights (``sum = 1``).
        preconditioner, preconditioner_inverse: ``(m_free, m_free)``: the solver works in
            ``w`` with ``z = P w``, ``P = L^-T`` from the Cholesky factor ``L`` of the Gram matrix
            of the acceleration ``int (d^2 q / ds^2)^2 ds`` as a quadratic form of one joint's
            free control points, so that ``int |qdd|^2 dt`` is ``|w|^2`` up to a constant: the
            torque effort, ``M qdd + ...`` squared, becomes well conditioned.
        method: inverse-dynamics method.
        margin: limits shrunk by this fraction.
    """

    model: Model
    boundary: BoundaryConditions
    cost: AbstractCost
    limits: JointLimits
    design: Float[Array, "4 K m"]
    end_rows: Float[Array, "2 3 m"]
    s: Float[Array, " K"]
    weights: Float[Array, " K"]
    preconditioner: Float[Array, "f f"]
    preconditioner_inverse: Float[Array, "f f"]
    degree: int = eqx.field(static=True)
    num_control_points: int = eqx.field(static=True)
    free: tuple[int, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    margin: float = eqx.field(static=True)

    @property
    def n_dof(self) -> int:
        return self.boundary.n_dof

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the decision variable ``z``: ``(m_free, n)``."""
        return (len(self.free), self.n_dof)

    def control_points(self, z: Float[Array, "m_free n"]) -> Float[Array, "m n"]:
        """All control points: ``z`` at the free indices; at each end, those fixed by the boundary
        conditions by forward substitution (derivative ``j`` at an end involves the ``j + 1``
        nearest control points, the ``j``-th with a non-zero coefficient)."""
        z = jnp.asarray(z)
        if z.shape != self.shape:
            raise ValueError(f"z must have shape {self.shape}, got {z.shape}")
        m, bc = self.num_control_points, self.boundary
        c = jnp.zeros((m, self.n_dof), z.dtype).at[np.asarray(self.free, dtype=int)].set(z)
        for side, end in ((0, "start"), (1, "end")):
            rows = self.end_rows[side].astype(z.dtype)
            for j, value in bc.fixed(end):
                index = j if side == 0 else m - 1 - j
                others = [i for i in range(j + 1) if i != j] if side == 0 else [m - 1 - i for i in range(j)]
                rhs = value.astype(z.dtype) * bc.duration.astype(z.dtype) ** j
                for i in others:
                    rhs = rhs - rows[j, i] * c[i]
                c = c.at[index].set(rhs / rows[j, index])
        return c

    def trajectory(self, z: Float[Array, "m_free n"]) -> BSpline:
        """The :class:`BSpline` of the decision variables ``z``."""
        return BSpline(self.control_points(z), self.boundary.duration.astype(z.dtype), self.degree)

    @eqx.filter_jit
    def samples(self, z: Float[Array, "m_free n"]) -> Samples:
        """The trajectory, its derivatives and the inverse-dynamics torques at the samples."""
        c = self.control_points(z)
        dtype = c.dtype
        duration = self.boundary.duration.astype(dtype)
        design = self.design.astype(dtype)
        q, qd, qdd, qddd = (design[j] @ c / duration**j for j in range(4))
        model = self.model
        tau = jax.vmap(lambda q, qd, qdd: inverse_dynamics(model, q, qd, qdd, method=self.method))(q, qd, qdd)
        return Samples(self.s.astype(dtype) * duration, self.weights.astype(dtype) * duration, q, qd, qdd, qddd, tau, duration)

    @eqx.filter_jit
    def objective(self, z: Float[Array, "m_free n"]) -> Float[Array, ""]:
        """The cost ``f(z)``."""
        return self.cost(self.model, self.trajectory(z), self.samples(z))

    def _constraints_from(self, samples: Samples) -> Array:
        dtype = samples.q.dtype
        lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask = _limit_scales(self.limits, self.margin, dtype)
        inactive = jnp.asarray(-1.0, dtype)
        parts = [
            jnp.where(up_mask, (samples.q - upper) / scale, inactive),
            jnp.where(lo_mask, (lower - samples.q) / scale, inactive),
            jnp.where(vel_mask, samples.qd / vel - 1.0, inactive),
            jnp.where(vel_mask, -samples.qd / vel - 1.0, inactive),
            jnp.where(eff_mask, samples.tau / eff - 1.0, inactive),
            jnp.where(eff_mask, -samples.tau / eff - 1.0, inactive),
        ]
        return jnp.concatenate([p.reshape(-1) for p in parts])

    @eqx.filter_jit
    def constraints(self, z: Float[Array, "m_free n"]) -> Float[Array, " c"]:
        """``g(z) <= 0``, ``(6 K n,)``: position (upper, lower), velocity (+, -) and torque (+, -)
        limits at every sample and joint, relative to the limit (``-1`` where unlimited)."""
        return self._constraints_from(self.samples(z))

    @eqx.filter_jit
    def violation(self, z: Float[Array, "m_free n"]) -> Float[Array, ""]:
        """``max(0, max g(z))``: the largest constraint violation, relative to the limit."""
        return jnp.maximum(jnp.max(self.constraints(z)), 0.0)

    def initial_guess(self, key: Array | None = None, num: int | None = None, scale: float = 0.1) -> Array:
        """The least-squares fit of the free control points to the minimum-jerk motion
        ``q_start + (q_end - q_start)(10 s^3 - 15 s^4 + 6 s^5)`` (``q_end = q_start`` when free),
        ``(m_free, n)``. With ``key`` and ``num``: ``(num, m_free, n)`` guesses, the first one
        unperturbed and the others with Gaussian noise of ``scale`` times the joint's travel
        (or ``scale`` rad where the travel is zero)."""
        z0 = _minimum_jerk_fit(self)
        if key is None:
            return z0
        if num is None:
            raise ValueError("give num (the number of guesses) together with key")
        bc = self.boundary
        q_end = bc.q_start if bc.q_end is None else bc.q_end
        travel = jnp.abs(q_end - bc.q_start)
        travel = jnp.where(travel > 0, travel, 1.0)
        noise = scale * travel * jax.random.normal(key, (num, *self.shape), z0.dtype)
        return z0 + noise.at[0].set(0.0)


def _lobatto_grid(spans: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on ``[0, 1]``: ``r``-point Gauss-Lobatto on each of ``spans`` equal
    spans, shared ends merged. Lobatto nodes on ``[-1, 1]``: ``+-1`` and the roots of
    ``P'_{r-1}``; weights ``2 / (r (r - 1) P_{r-1}(x)^2)``."""
    legendre = np.polynomial.legendre.Legendre.basis(r - 1)
    x = np.concatenate([[-1.0], np.sort(legendre.deriv().roots().real), [1.0]])
    w = 2.0 / (r * (r - 1) * legendre(x) ** 2)
    edges = np.linspace(0.0, 1.0, spans + 1)
    nodes = np.concatenate([edges[i] + (x[:-1] + 1) / 2 / spans for i in range(spans)] + [[1.0]])
    weights = np.zeros(nodes.shape[0])
    for i in range(spans):
        weights[i * (r - 1) : i * (r - 1) + r] += w / 2 / spans
    return nodes, weights


def _sample_grid(spans: int, r: int, checks: int) -> tuple[np.ndarray, np.ndarray]:
    """The Gauss-Lobatto nodes and weights of :func:`_lobatto_grid` merged with ``checks`` equally
    spaced points per span (weight 0), sorted, coincident points merged."""
    nodes, weights = _lobatto_grid(spans, r)
    edges = np.linspace(0.0, 1.0, spans + 1)
    extra = (edges[:-1, None] + np.arange(1, checks + 1) / (checks + 1) / spans).ravel()
    s = np.concatenate([nodes, extra])
    w = np.concatenate([weights, np.zeros(extra.shape[0])])
    order = np.argsort(s, kind="stable")
    s, w = s[order], w[order]
    keep = np.concatenate([[True], np.diff(s) > 1e-12])
    groups = np.cumsum(keep) - 1
    return s[keep], np.bincount(groups, weights=w)


@eqx.filter_jit
def _minimum_jerk_fit(problem: Problem) -> Array:
    """Least-squares fit of the free control points to the minimum-jerk motion (see
    :meth:`Problem.initial_guess`). ``q`` at the samples is affine in ``z``,
    ``q(z) = q(0) + A z`` (a fixed control point may depend on free ones at an end whose ``q`` is
    free), so this is one linear least-squares problem."""
    bc = problem.boundary
    dtype = bc.q_start.dtype
    q_end = bc.q_start if bc.q_end is None else bc.q_end
    s = problem.s.astype(dtype)
    target = bc.q_start + (q_end - bc.q_start) * (10 * s**3 - 15 * s**4 + 6 * s**5)[:, None]

    def positions(z):
        return problem.design[0].astype(dtype) @ problem.control_points(z)

    zero = jnp.zeros(problem.shape, dtype)
    a = jax.jacfwd(positions)(zero).reshape(target.size, zero.size)
    return jnp.linalg.lstsq(a, (target - positions(zero)).reshape(-1))[0].reshape(problem.shape)


def transcribe(
    model: Model,
    boundary: BoundaryConditions,
    cost: AbstractCost,
    *,
    num_control_points: int = 10,
    degree: int = 5,
    nodes_per_span: int = 6,
    checks_per_span: int = 8,
    method: str = "rnea",
    limits: JointLimits | None = None,
    margin: float = 0.0,
) -> Problem:
    """The :class:`Problem` of moving ``model`` within ``boundary`` at least ``cost``.

    Args:
        num_control_points: ``m``, control points per joint (the free ones are ``m`` minus the
            number of fixed boundary values, e.g. ``m - 6`` for rest-to-rest with fixed ends).
        degree: spline degree ``p`` (``3 <= p``; default 5, continuous jerk).
        nodes_per_span: ``r``, Gauss-Lobatto nodes per knot span (ends included) where the costs
            are integrated.
        checks_per_span: further equally spaced points per knot span (weight 0 in the integrals)
            where the limits are imposed too, so that they also hold between the quadrature nodes.
            The samples are the union: ``K = (r - 1 + checks_per_span)(m - p) + 1`` at most.
        method: inverse-dynamics method (:func:`kronjax.inverse_dynamics`); ``"rnea"`` (default,
            the fast one), ``"kron"`` (the papers' ``M qdd + C* (qd ⊗ qd) + g``), ``"lagrangian"``.
        limits: the joint limits (default ``model.limits``, unlimited where the model has none).
        margin: shrink every limit by this fraction (a safety margin for the samples).
    """
    require_one_dof_joints(model, "transcribe")
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    if not isinstance(boundary, BoundaryConditions):
        raise TypeError(f"boundary must be a BoundaryConditions, got {type(boundary).__name__}")
    if not isinstance(cost, AbstractCost):
        raise TypeError(f"cost must be a trajopt cost (TorqueEffort(), ...), got {cost!r}")
    if method not in INVERSE_DYNAMICS_METHODS:
        raise ValueError(f"unknown inverse-dynamics method {method!r}; expected one of {INVERSE_DYNAMICS_METHODS}")
    n = model.n_dof
    if boundary.n_dof != n:
        raise ValueError(f"boundary conditions for {boundary.n_dof} joints, the model has {n}")
    if not (isinstance(degree, int) and 3 <= degree <= 7):
        raise ValueError(f"degree must be an integer from 3 to 7, got {degree!r}")
    m = int(num_control_points)
    fixed_start = [j for j, _ in boundary.fixed("start")]
    fixed_end = [j for j, _ in boundary.fixed("end")]
    needed = max(fixed_start, default=-1) + max(fixed_end, default=-1) + 3
    if m < max(degree + 1, needed):
        raise ValueError(
            f"num_control_points must be at least {max(degree + 1, needed)} for degree {degree} and these "
            f"boundary conditions (one free control point at least), got {m}"
        )
    if not (isinstance(nodes_per_span, int) and 2 <= nodes_per_span <= 12):
        raise ValueError(f"nodes_per_span must be an integer from 2 to 12, got {nodes_per_span!r}")
    if not (isinstance(checks_per_span, int) and checks_per_span >= 0):
        raise ValueError(f"checks_per_span must be a non-negative integer, got {checks_per_span!r}")
    if not 0.0 <= margin < 0.5:
        raise ValueError(f"margin must be in [0, 0.5), got {margin}")
    limits = model.limits if limits is None else limits
    limits = JointLimits.unlimited(n) if limits is None else limits
    if not isinstance(limits, JointLimits) or limits.lower.shape != (n,):
        raise ValueError(f"limits must be JointLimits for {n} joint coordinates")
    _check_limits_admit_motion(model, limits)
    _check_boundary_within_limits(boundary, limits)
    s, weights = _sample_grid(m - degree, nodes_per_span, checks_per_span)
    design = _design(m, degree, s, 3)
    end_rows = _design(m, degree, np.array([0.0, 1.0]), 2).transpose(1, 0, 2)  # (2 ends, 3 orders, m)
    determined = set(fixed_start) | {m - 1 - j for j in fixed_end}
    free = tuple(i for i in range(m) if i not in determined)
    precondition, precondition_inverse = _preconditioner(design[2], weights, end_rows, free, fixed_start, fixed_end)
    dtype = boundary.q_start.dtype
    return Problem(
        model=model,
        boundary=boundary,
        cost=cost,
        limits=limits,
        design=jnp.asarray(design, dtype),
        end_rows=jnp.asarray(end_rows, dtype),
        s=jnp.asarray(s, dtype),
        weights=jnp.asarray(weights, dtype),
        preconditioner=jnp.asarray(precondition, dtype),
        preconditioner_inverse=jnp.asarray(precondition_inverse, dtype),
        degree=degree,
        num_control_points=m,
        free=free,
        method=method,
        margin=float(margin),
    )


def _preconditioner(design2, weights, end_rows, free, fixed_start, fixed_end) -> tuple[np.ndarray, np.ndarray]:
    """``P = L^-T`` and ``P^-1 = L^T`` with ``L L^T = A^T W A + ridge``, ``A`` the second
    derivative at the samples of the linear part of ``z -> control points`` (one joint)."""
    m = design2.shape[1]
    linear = np.zeros((m, len(free)))
    linear[list(free), np.arange(len(free))] = 1.0
    for side, orders in ((0, fixed_start), (1, fixed_end)):
        for j in orders:
            index = j if side == 0 else m - 1 - j
            others = [i for i in range(j)] if side == 0 else [m - 1 - i for i in range(j)]
            linear[index] = -sum(end_rows[side, j, i] * linear[i] for i in others) / end_rows[side, j, index]
    a = design2 @ linear
    gram = a.T @ (weights[:, None] * a)
    gram += 1e-10 * np.trace(gram) / len(free) * np.eye(len(free)) + 1e-300
    chol = np.linalg.cholesky(gram)
    inverse_t = np.linalg.solve(chol.T, np.eye(len(free)))
    return inverse_t, chol.T


def _check_limits_admit_motion(model: Model, limits: JointLimits) -> None:
    """Refuse limits under which the transcription's scaled constraints are undefined: a locked
    position range (``lower == upper``, as some CAD exports write for "not set"; see
    ``load_urdf(..., strict_limits=...)``) and zero velocity or effort limits."""
    if isinstance(limits.lower, jax.core.Tracer):
        return
    lower, upper = np.asarray(limits.lower), np.asarray(limits.upper)
    problems = [f"{name}: position range [{lower[k]}, {upper[k]}] has zero width"
                for k, name in enumerate(model.coordinate_names) if lower[k] == upper[k]]
    for field in ("velocity", "effort"):
        value = np.asarray(getattr(limits, field))
        problems += [f"{name}: {field} limit is 0" for k, name in enumerate(model.coordinate_names) if value[k] == 0]
    if problems:
        raise ValueError(
            "trajectory optimisation needs every joint free to move and actuated: " + "; ".join(problems)
            + ". Remove the joint from the model (a fixed joint), or widen its limits (pass limits=...)"
        )


def _check_boundary_within_limits(bc: BoundaryConditions, limits: JointLimits) -> None:
    checks = [("q_start", bc.q_start, limits.lower, limits.upper), ("q_end", bc.q_end, limits.lower, limits.upper),
              ("qd_start", bc.qd_start, -limits.velocity, limits.velocity), ("qd_end", bc.qd_end, -limits.velocity, limits.velocity)]
    for name, value, lo, hi in checks:
        if value is None or isinstance(value, jax.core.Tracer) or isinstance(lo, jax.core.Tracer):
            continue
        value, lo, hi = np.asarray(value), np.asarray(lo), np.asarray(hi)
        for k in np.flatnonzero((value < lo) | (value > hi)):
            raise ValueError(f"{name}[{k}] = {value[k]} is outside the limits [{lo[k]}, {hi[k]}]: no feasible motion")


# --------------------------------------------------------------------------------------------
# The solver: augmented Lagrangian + optax
# --------------------------------------------------------------------------------------------


class _State(NamedTuple):
    z: Array
    lam: Array
    rho: Array
    scale: Array
    cost: Array
    violation: Array
    previous_cost: Array


class Progress(NamedTuple):
    """What a progress callback of :func:`optimize` receives after each outer iteration.

    Attributes:
        outer: outer (multiplier-update) iterations done.
        iterations: ``(G,)`` optimiser iterations done per guess.
        cost, violation: ``(G,)`` per initial guess: cost ``f(z)`` and largest constraint
            violation relative to the limit.
        rho: ``(G,)`` penalty parameters.
        elapsed: seconds since the start (compilation included).
    """

    outer: int
    iterations: np.ndarray
    cost: np.ndarray
    violation: np.ndarray
    rho: np.ndarray
    elapsed: float


class SolverReport(NamedTuple):
    """How :func:`optimize` went.

    Attributes:
        best: index of the returned guess (the lowest cost among the feasible ones, else the
            least violation).
        cost, violation: ``(G,)`` final cost and largest relative constraint violation per guess.
        converged: ``(G,)`` violation ``<= violation_tol`` and relative cost change over the
            last outer iteration ``<= cost_tol``.
        iterations: ``(G,)`` optimiser iterations done per guess.
        outer_iterations: multiplier updates done.
        history_cost, history_violation: ``(I, G)``: cost and violation after every optimiser
            iteration (for plots of the convergence; a guess that converged earlier in an outer
            iteration repeats its last value).
        wall_time: seconds, compilation included; ``compile_time``: of which the first outer
            iteration (compilation plus one outer iteration).
    """

    best: int
    cost: np.ndarray
    violation: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    outer_iterations: int
    history_cost: np.ndarray
    history_violation: np.ndarray
    wall_time: float
    compile_time: float


class Result(NamedTuple):
    """The result of :func:`optimize`.

    Attributes:
        trajectory: the optimised :class:`BSpline` (the best guess).
        report: the :class:`SolverReport`.
        trajectories: all guesses' results (a :class:`BSpline` with a leading batch axis ``G``).
        problem: the transcribed :class:`Problem` (for ``problem.samples(z)`` and friends).
        z: ``(G, m_free, n)`` the free control points of every guess.
    """

    trajectory: BSpline
    report: SolverReport
    trajectories: BSpline
    problem: Problem
    z: Array


def _augmented(problem: Problem, z, lam, rho, scale):
    """The augmented Lagrangian, with ``(f, violation, g)`` as auxiliary outputs (one evaluation
    of the samples serves the cost, the constraints and the progress record)."""
    samples = problem.samples(z)
    f = problem.cost(problem.model, problem.trajectory(z), samples)
    g = problem._constraints_from(samples)
    penalty = jnp.sum(jnp.maximum(lam + rho * g, 0.0) ** 2 - lam**2) / (2.0 * rho)
    return f / scale + penalty, (f, jnp.maximum(jnp.max(g), 0.0), g)


def _init_state(problem: Problem, z, rho0):
    samples = problem.samples(z)
    f = problem.cost(problem.model, problem.trajectory(z), samples)
    g = problem._constraints_from(samples)
    scale = jax.lax.stop_gradient(jnp.where(jnp.abs(f) > 0, jnp.abs(f), 1.0))
    rho = jnp.asarray(rho0, z.dtype)
    return _State(z, jnp.zeros_like(g), rho, scale, f, jnp.maximum(jnp.max(g), 0.0), f)


@eqx.filter_jit
def _init_batch(problem: Problem, z, rho0):
    return jax.vmap(lambda z: _init_state(problem, z, rho0))(z)


def _vdot(a, b):
    return jnp.sum(a * b)


def _minimise_lbfgs(value_and_grad, z0, max_iterations: int, gtol: float):
    """L-BFGS (optax's ``scale_by_lbfgs`` for the direction) with a backtracking Armijo line
    search (quadratic interpolation, halving at most), written so that the objective and its
    gradient are evaluated at a single place in the loop body: one trial point per iteration of
    the while loop. Compilation stays small, since the heavy function (inverse dynamics at every
    sample and its gradient) is traced once. The memory is reset when the curvature ``s.y`` is not
    positive. Returns ``(z, aux, accepted iterations, cost and violation after each)``."""
    lbfgs = optax.scale_by_lbfgs()
    fresh = lbfgs.init(z0)
    (value0, aux0), grad0 = jax.eval_shape(value_and_grad, z0)
    dtype = z0.dtype
    zeros = jnp.zeros(max_iterations, dtype)

    def cond(c):
        k, evals, failed, grad = c["k"], c["evals"], c["failed"], c["grad"]
        return (k <= max_iterations) & (evals < 4 * max_iterations + 8) & ~failed & ((k == 0) | (jnp.max(jnp.abs(grad)) > gtol))

    def body(c):
        trial = c["z"] + c["alpha"] * c["d"]
        (value, aux), grad = value_and_grad(trial)
        slope = _vdot(c["grad"], c["d"])
        accept = jnp.isfinite(value) & (value <= c["value"] + 1e-4 * c["alpha"] * slope)
        # the next direction, used only if the trial is accepted
        s, y = trial - c["z"], grad - c["grad"]
        curvature = _vdot(s, y) > 1e-12 * jnp.sqrt(_vdot(s, s) * _vdot(y, y))
        memory = jax.tree.map(lambda a, b: jnp.where(curvature, a, b), c["memory"], fresh)
        direction, memory = lbfgs.update(grad, memory, trial)
        d = -direction
        steepest = -grad * jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.sqrt(_vdot(grad, grad)), 1e-300))
        d = jnp.where(_vdot(grad, d) < 0, d, steepest)
        # on rejection: the minimiser of the quadratic through value(0), slope and value(alpha)
        alpha = c["alpha"]
        quadratic = -slope * alpha**2 / (2.0 * (value - c["value"] - slope * alpha))
        shrunk = jnp.clip(jnp.where(jnp.isfinite(quadratic), quadratic, 0.5 * alpha), 0.1 * alpha, 0.5 * alpha)
        k = c["k"]
        index = jnp.maximum(k - 1, 0)
        record = accept & (k > 0)
        new = dict(
            z=jnp.where(accept, trial, c["z"]),
            value=jnp.where(accept, value, c["value"]),
            grad=jnp.where(accept, grad, c["grad"]),
            aux=jax.tree.map(lambda a, b: jnp.where(accept, a, b), aux, c["aux"]),
            d=jnp.where(accept, d, c["d"]),
            alpha=jnp.where(accept, jnp.ones_like(alpha), shrunk),
            memory=jax.tree.map(lambda a, b: jnp.where(accept, a, b), memory, c["memory"]),
            k=k + accept.astype(k.dtype),
            evals=c["evals"] + 1,
            failed=~accept & (shrunk < 1e-12),
            costs=jnp.where(record, c["costs"].at[index].set(aux[0]), c["costs"]),
            violations=jnp.where(record, c["violations"].at[index].set(aux[1]), c["violations"]),
        )
        return new

    init = dict(
        z=z0,
        value=jnp.asarray(jnp.inf, dtype),  # the first trial (alpha = 0) is always accepted
        grad=jnp.zeros_like(z0),
        aux=jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), aux0),
        d=jnp.zeros_like(z0),
        alpha=jnp.asarray(0.0, dtype),
        memory=fresh,
        k=jnp.asarray(0),
        evals=jnp.asarray(0),
        failed=jnp.asarray(False),
        costs=zeros,
        violations=zeros,
    )
    out = jax.lax.while_loop(cond, body, init)
    return out["z"], out["aux"], out["k"] - 1, out["costs"], out["violations"]


def _minimise_optax(value_and_grad, optimizer, fun, z0, max_iterations: int, gtol: float):
    """A user's optax optimiser: ``z <- z + update(grad)``; the objective is evaluated once per
    iteration (at the point whose result is recorded). Returns as :func:`_minimise_lbfgs`."""
    (value0, aux0), _ = jax.eval_shape(value_and_grad, z0)
    zeros = jnp.zeros(max_iterations, z0.dtype)

    def cond(c):
        return (c["k"] <= max_iterations) & ((c["k"] == 0) | (jnp.max(jnp.abs(c["grad"])) > gtol))

    def body(c):
        (value, aux), grad = value_and_grad(c["next"])
        updates, state = optimizer.update(grad, c["state"], c["next"], value=value, grad=grad, value_fn=fun)
        k = c["k"]
        index = jnp.maximum(k - 1, 0)
        return dict(
            z=c["next"],
            next=optax.apply_updates(c["next"], updates),
            grad=grad,
            aux=aux,
            state=state,
            k=k + 1,
            costs=jnp.where(k > 0, c["costs"].at[index].set(aux[0]), c["costs"]),
            violations=jnp.where(k > 0, c["violations"].at[index].set(aux[1]), c["violations"]),
        )

    init = dict(
        z=z0, next=z0, grad=jnp.zeros_like(z0), aux=jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), aux0),
        state=optimizer.init(z0), k=jnp.asarray(0), costs=zeros, violations=zeros,
    )
    out = jax.lax.while_loop(cond, body, init)
    return out["z"], out["aux"], out["k"] - 1, out["costs"], out["violations"]


def _outer_step(problem: Problem, state: _State, optimizer, inner: int, gtol: float, tol: float, rho_growth: float, rho_max: float):
    """One outer iteration for one guess: minimise the augmented Lagrangian from ``state.z``
    (optimiser restarted) until ``|grad|_inf <= gtol`` or ``inner`` iterations, then update the
    multipliers ``lam <- max(0, lam + rho g)`` and the penalty. Returns the new state, the
    iterations done, and the cost and violation after each iteration (``(inner,)``, the last
    value repeated after convergence)."""

    precondition = problem.preconditioner.astype(state.z.dtype)

    def fun(w):
        return _augmented(problem, precondition @ w, state.lam, state.rho, state.scale)

    w0 = problem.preconditioner_inverse.astype(state.z.dtype) @ state.z
    value_and_grad = jax.value_and_grad(fun, has_aux=True)
    if optimizer is None:
        w, aux, k, costs, violations = _minimise_lbfgs(value_and_grad, w0, inner, gtol)
    else:
        w, aux, k, costs, violations = _minimise_optax(value_and_grad, optimizer, lambda w: fun(w)[0], w0, inner, gtol)
    z = precondition @ w
    f, violation, g = aux
    done = jnp.arange(inner) < k
    costs, violations = jnp.where(done, costs, f), jnp.where(done, violations, violation)
    lam = jnp.maximum(state.lam + state.rho * g, 0.0)
    grow = (violation > tol) & (violation > 0.25 * state.violation)
    rho = jnp.where(grow, jnp.minimum(state.rho * rho_growth, rho_max), state.rho)
    return _State(z, lam, rho, state.scale, f, violation, state.cost), k, (costs, violations)


@eqx.filter_jit
def _outer_batch(problem, state, optimizer, inner, gtol, tol, rho_growth, rho_max):
    return jax.vmap(lambda s: _outer_step(problem, s, optimizer, inner, gtol, tol, rho_growth, rho_max))(state)


def print_progress(progress: Progress) -> None:
    """A progress display for :func:`optimize` (``callback=print_progress``): one line per outer
    iteration with the best guess's cost and violation."""
    feasible = progress.violation <= 1e-6
    pool = np.where(feasible, progress.cost, np.inf) if feasible.any() else progress.violation
    k = int(np.argmin(pool))
    if progress.outer == 1:
        print(f"  {'iter':>5} {'cost':>14} {'violation':>10} {'rho':>8} {'time':>7}")
    print(
        f"  {progress.iterations[k]:5d} {progress.cost[k]:14.6g} {progress.violation[k]:10.2e} "
        f"{progress.rho[k]:8.1e} {progress.elapsed:6.1f}s"
    )


def optimize(
    model: Model,
    boundary: BoundaryConditions,
    cost: AbstractCost,
    *,
    init: Float[ArrayLike, "*G m_free n"] | None = None,
    num_guesses: int = 1,
    key: Array | None = None,
    guess_scale: float = 0.1,
    optimizer: optax.GradientTransformation | None = None,
    max_inner_iterations: int = 500,
    max_outer_iterations: int = 20,
    gtol: float | None = None,
    rho_init: float = 10.0,
    rho_growth: float = 10.0,
    rho_max: float = 1e7,
    violation_tol: float = 1e-6,
    cost_tol: float = 1e-7,
    callback: Callable[[Progress], None] | None = None,
    **transcription,
) -> Result:
    """Optimise a point-to-point motion of ``model``: the entry point of :mod:`kronjax.trajopt`.

    Transcribes the problem (:func:`transcribe`: B-spline, boundary conditions built in,
    inverse dynamics at the samples, limits from ``model.limits``) and solves it by an augmented
    Lagrangian with an optax optimiser, for one or many initial guesses at once (``jax.vmap``).

    Args:
        model, boundary, cost: the robot, the :class:`BoundaryConditions`, the cost (e.g.
            ``TorqueEffort()``).
        init: initial free control points, ``(m_free, n)`` or a batch ``(G, m_free, n)``;
            default :meth:`Problem.initial_guess` (minimum-jerk fit).
        num_guesses, key, guess_scale: without ``init``, ``num_guesses`` guesses, the first the
            minimum-jerk fit and the others perturbed randomly (``key``, default ``PRNGKey(0)``).
        optimizer: an optax optimiser for the inner minimisation (default ``optax.lbfgs()`` with
            its zoom line search); restarted after each multiplier update.
        max_inner_iterations, gtol: each outer iteration minimises the augmented Lagrangian
            until its gradient is at most ``gtol`` (max-norm; the cost is normalised to 1 at the
            initial guess; default ``1e-9`` in float64, ``1e-5`` in float32) or for
            ``max_inner_iterations`` optimiser iterations.
        max_outer_iterations: at most this many multiplier updates.
        rho_init, rho_growth, rho_max: penalty parameter (the cost is normalised by its value at
            the initial guess, the constraints by the limits).
        violation_tol, cost_tol: stop when every guess has violation ``<= violation_tol`` and a
            relative cost change ``<= cost_tol`` over the last outer iteration.
        callback: called with a :class:`Progress` after each outer iteration (e.g.
            :func:`print_progress`).
        **transcription: the keyword arguments of :func:`transcribe` (``num_control_points``,
            ``degree``, ``nodes_per_span``, ``checks_per_span``, ``method``, ``limits``, ``margin``).

    Returns:
        A :class:`Result`: ``result.trajectory`` (a :class:`BSpline`, also a reference for
        :mod:`kronjax.simulate`) and ``result.report`` (:class:`SolverReport`).
    """
    require_one_dof_joints(model, "optimize")
    start = time.perf_counter()
    problem = transcribe(model, boundary, cost, **transcription)
    dtype = boundary.q_start.dtype
    if gtol is None:
        gtol = 1e-9 if jnp.finfo(dtype).bits >= 64 else 1e-5
    if init is None:
        if num_guesses > 1:
            z0 = problem.initial_guess(jax.random.PRNGKey(0) if key is None else key, num_guesses, guess_scale)
        else:
            z0 = problem.initial_guess()[None]
    else:
        z0 = jnp.asarray(init, dtype)
        if z0.shape == problem.shape:
            z0 = z0[None]
        if z0.ndim != 3 or z0.shape[1:] != problem.shape:
            raise ValueError(f"init must have shape {problem.shape} or (G, *{problem.shape}), got {z0.shape}")
    if max_inner_iterations < 1 or max_outer_iterations < 1:
        raise ValueError("max_inner_iterations and max_outer_iterations must be at least 1")
    if optimizer is not None and not isinstance(optimizer, optax.GradientTransformationExtraArgs):
        optimizer = optax.with_extra_args_support(optimizer)
    state = _init_batch(problem, z0, rho_init)
    costs, violations = [], []
    iterations = np.zeros(z0.shape[0], dtype=int)
    compile_time = 0.0
    outer = 0
    for outer in range(1, max_outer_iterations + 1):
        state, k, (c, v) = _outer_batch(
            problem, state, optimizer, max_inner_iterations, gtol, violation_tol, rho_growth, rho_max
        )
        k = np.asarray(k)
        iterations += k
        costs.append(np.asarray(c).T[: max(int(k.max()), 1)])
        violations.append(np.asarray(v).T[: max(int(k.max()), 1)])
        if outer == 1:
            compile_time = time.perf_counter() - start
        cost_now, viol_now = np.asarray(state.cost), np.asarray(state.violation)
        change = np.abs(cost_now - np.asarray(state.previous_cost)) / np.maximum(np.abs(cost_now), 1e-300)
        converged = (viol_now <= violation_tol) & (change <= cost_tol)
        if callback is not None:
            callback(Progress(outer, iterations.copy(), cost_now, viol_now, np.asarray(state.rho), time.perf_counter() - start))
        if converged.all():
            break
    cost_now, viol_now = np.asarray(state.cost), np.asarray(state.violation)
    feasible = viol_now <= violation_tol
    best = int(np.argmin(np.where(feasible, cost_now, np.inf))) if feasible.any() else int(np.argmin(viol_now))
    trajectories = jax.vmap(problem.trajectory)(state.z)
    report = SolverReport(
        best=best,
        cost=cost_now,
        violation=viol_now,
        converged=converged,
        iterations=iterations,
        outer_iterations=outer,
        history_cost=np.concatenate(costs, axis=0),
        history_violation=np.concatenate(violations, axis=0),
        wall_time=time.perf_counter() - start,
        compile_time=compile_time,
    )
    return Result(jax.tree.map(lambda x: x[best], trajectories), report, trajectories, problem, state.z)
