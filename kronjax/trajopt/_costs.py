"""Costs of a motion: functions of the trajectory at the samples (:class:`Samples`).

Running costs are integrals ``int_0^T l(t) dt`` by the transcription's quadrature; costs add and
scale (``TorqueEffort() + 0.01 * Smoothness()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ._spline import BSpline

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


def _points_in_base(model: Model, q, bodies: tuple[int, ...], points):
    """Positions of ``points[i]`` (body frame of ``bodies[i]``) in the base frame at ``q`` (Tuan
    22-27): ``(P, 3)``."""
    rotations, origins = model.poses(q)
    index = jnp.asarray(bodies)
    return origins[index] + jnp.einsum("pij,pj->pi", rotations[index], points.astype(origins.dtype))



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


class TaskPoint(eqx.Module):
    """A point of a body and where it should be at one time: what :class:`TaskTarget` (a cost) and
    :class:`~kronjax.trajopt.TaskConstraint` (an equality) share.

    Args:
        body: index or name of the body.
        target: ``(3,)`` position in the base frame.
        point: the point in the body frame (``(3,)``, default its frame origin).
        time: ``t*`` in seconds (``None``: the end of the motion ``T``). With a fixed ``q_end``
            (:class:`BoundaryConditions`) the end position is fixed too: leave ``q_end=None``.
    """

    body: int | str = eqx.field(static=True)
    target: Float[Array, "3"] = eqx.field(converter=jnp.asarray)
    point: Float[Array, "3"] = eqx.field(default=(0.0, 0.0, 0.0), converter=jnp.asarray)
    time: float | None = None

    def __check_init__(self):
        if self.target.shape != (3,) or self.point.shape != (3,):
            raise ValueError(f"target and point must be 3-vectors, got {self.target.shape}, {self.point.shape}")

    def error(self, model: Model, trajectory: BSpline, samples: Samples) -> Float[Array, "3"]:
        """``p(q(t*)) - target`` (m), ``p`` the point in the base frame (forward kinematics, Tuan
        22-27)."""
        t = samples.duration if self.time is None else self.time
        q = trajectory.derivative(t, 0)
        return _points_in_base(model, q, (model.body_index(self.body),), self.point[None])[0] - self.target.astype(q.dtype)


class TaskTarget(TaskPoint, AbstractCost):
    """A task-space target for a point of a body, as a cost: ``|p(q(t*)) - target|^2`` (m^2), the
    fields of :class:`TaskPoint`."""

    def __call__(self, model, trajectory, samples):
        return jnp.sum(self.error(model, trajectory, samples) ** 2)


class Duration(AbstractCost):
    """The duration ``T`` of the motion (s): with ``free_time`` (:func:`~kronjax.trajopt.transcribe`),
    ``Duration()`` is the minimum-time problem, ``Duration() + w * TorqueEffort()`` a trade-off."""

    def __call__(self, model, trajectory, samples):
        return samples.duration
