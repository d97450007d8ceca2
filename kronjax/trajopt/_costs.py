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

from .._deprecation import renamed_attribute
from ..chain import Model
from ._spline import BSpline


class Samples(NamedTuple):
    """The trajectory at the sample times, handed to the costs.

    Attributes:
        t: ``(K,)`` sample times from ``0`` to ``T``.
        weights: ``(K,)`` quadrature weights (Gauss-Lobatto per knot span, ``sum = T``):
            ``int_0^T f dt ~ weights @ f``.
        q, v, vd, vdd: ``(K, n)`` position, velocity, acceleration, jerk.
        tau: ``(K, n)`` joint torques by inverse dynamics (Tuan 100).
        duration: ``T``.

    On a closed chain (:func:`transcribe` with ``actuated=``) they hold every coordinate of the
    mechanism's tree: ``q`` ``(K, nq)``, the others ``(K, nv)``; ``tau`` is the actuated torques,
    zero at the passive joints, and ``vdd`` the actuated joints' jerk, zero at the others.

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion (:meth:`Problem.samples`, the initial guess of :func:`transcribe`):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> samples.t.shape, samples.q.shape, samples.tau.shape  # K = 53 samples, n = 1 joint
        ((53,), (53, 1), (53, 1))
        >>> print(np.round(float(samples.weights.sum()), 12))  # the quadrature weights sum to T
        1.0
        >>> bool(np.allclose(samples.tau, 0.1 * samples.vd))  # the rotor's inverse dynamics, tau = I vd
        True
    """

    t: Float[Array, " K"]
    weights: Float[Array, " K"]
    q: Float[Array, "K n"]
    v: Float[Array, "K n"]
    vd: Float[Array, "K n"]
    vdd: Float[Array, "K n"]
    tau: Float[Array, "K n"]
    duration: Float[Array, ""]

    qd = renamed_attribute("qd", "v", "Samples")
    qdd = renamed_attribute("qdd", "vd", "Samples")
    qddd = renamed_attribute("qddd", "vdd", "Samples")


def points_in_base(model: Model, q, bodies: tuple[int, ...], points):
    """Positions of ``points[i]`` (body frame of ``bodies[i]``) in the base frame at ``q`` (Tuan
    22-27): ``(P, 3)``."""
    rotations, origins = model.poses(q)
    index = jnp.asarray(bodies)
    return origins[index] + jnp.einsum("pij,pj->pi", rotations[index], points.astype(origins.dtype))


class AbstractCost(eqx.Module):
    """A cost ``f(model, trajectory, samples) -> scalar``. Costs add and scale:
    ``TorqueEffort() + 0.01 * Smoothness()``.

    Example:
        A cost of one's own, the squared speed at mid-motion, evaluated on a rotor (``tau = 0.1
        vd``) moving from rest at 0 to rest at 1 rad in 1 s along the minimum-jerk motion, whose
        peak speed at ``T / 2`` is ``15 / 8`` rad/s:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> class MidSpeed(trajopt.AbstractCost):
        ...     def __call__(self, model, trajectory, samples):
        ...         return jnp.sum(trajectory.derivative(samples.duration / 2, 1) ** 2)
        >>> print(np.round(float(MidSpeed()(rotor, trajectory, samples)), 6), (15 / 8) ** 2)
        3.515625 3.515625
    """

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
    """``sum_i weights[i] * terms[i]``: what ``+`` and ``*`` of costs build.

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion: ``int tau^2 dt = 0.1^2 * 120 / 7`` and ``int vdd^2 dt = 720``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> cost = 2.0 * trajopt.TorqueEffort() + trajopt.Smoothness()
        >>> type(cost).__name__
        'CostSum'
        >>> print(np.round(float(cost(rotor, trajectory, samples)), 6), np.round(2 * 0.01 * 120 / 7 + 720, 6))
        720.342857 720.342857
    """

    terms: tuple[AbstractCost, ...]
    weights: tuple[Float[ArrayLike, ""], ...]

    def __call__(self, model, trajectory, samples):
        return sum(w * term(model, trajectory, samples) for term, w in zip(self.terms, self.weights))


class AbstractRunningCost(AbstractCost):
    """A cost ``int_0^T l(t) dt``: subclasses give the integrand ``l`` at the samples.

    Example:
        A running cost of one's own, ``int |v|^2 dt``, on a rotor (``tau = 0.1 vd``) moving from
        rest at 0 to rest at 1 rad in 1 s along the minimum-jerk motion (``v = 30 t^2 (1 -
        t)^2``, ``int v^2 dt = 10 / 7``):

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> class Speed(trajopt.AbstractRunningCost):
        ...     def integrand(self, model, samples):
        ...         return jnp.sum(samples.v**2, axis=-1)
        >>> print(np.round(float(Speed()(rotor, trajectory, samples)), 6), np.round(10 / 7, 6))
        1.428571 1.428571
    """

    def integrand(self, model: Model, samples: Samples) -> Float[Array, " K"]:
        raise NotImplementedError

    def __call__(self, model, trajectory, samples):
        return samples.weights @ self.integrand(model, samples)


def _weights_vector(weights):
    return None if weights is None else jnp.asarray(weights)


class TorqueEffort(AbstractRunningCost):
    """Torque effort ``int_0^T sum_i w_i tau_i(t)^2 dt`` (N^2 m^2 s). ``weights``: ``(n,)`` or a
    scalar (default 1); ``1 / effort^2`` makes the joints count relative to their limits.

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion: ``int tau^2 dt = 0.1^2 int vd^2 dt = 0.1^2 * 120 / 7``; weights ``1 /
        0.1^2`` leave ``int vd^2 dt``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> print(np.round(float(trajopt.TorqueEffort()(rotor, trajectory, samples)), 6), np.round(0.01 * 120 / 7, 6))
        0.171429 0.171429
        >>> print(np.round(float(trajopt.TorqueEffort(weights=100.0)(rotor, trajectory, samples)), 6))
        17.142857
    """

    weights: Float[Array, ""] | Float[Array, " n"] | None = eqx.field(default=None, converter=_weights_vector)

    def integrand(self, model, samples):
        w = 1.0 if self.weights is None else self.weights
        return jnp.sum(w * samples.tau**2, axis=-1)


class Energy(AbstractRunningCost):
    """Mechanical energy spent by the actuators ``int_0^T sum_i |tau_i qd_i| dt`` (J), with
    ``|x|`` smoothed to ``sqrt(x^2 + epsilon^2) - epsilon`` (``epsilon`` in W) so that the cost is
    differentiable (no regeneration: braking costs energy too).

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion: the rotor is given its peak kinetic energy ``0.1 qd_max^2 / 2``
        (``qd_max = 15 / 8`` rad/s) and brakes it away, ``0.1 qd_max^2`` in all.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> energy = trajopt.Energy(epsilon=1e-9)(rotor, trajectory, samples)
        >>> print(np.round(float(energy), 4), np.round(0.1 * (15 / 8) ** 2, 4))
        0.3516 0.3516
    """

    epsilon: float = 1e-3

    def integrand(self, model, samples):
        power = samples.tau * samples.v
        return jnp.sum(jnp.sqrt(power**2 + self.epsilon**2) - self.epsilon, axis=-1)


class Smoothness(AbstractRunningCost):
    """``int_0^T |d^order q / dt^order|^2 dt``: ``order=3`` (default) the squared jerk,
    ``order=2`` the squared acceleration.

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion (Flash and Hogan's, ``int vdd^2 dt = 720 (q1 - q0)^2 / T^5``, ``int
        vd^2 dt = 120 / 7``):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> print(np.round(float(trajopt.Smoothness()(rotor, trajectory, samples)), 6))
        720.0
        >>> print(np.round(float(trajopt.Smoothness(order=2)(rotor, trajectory, samples)), 6), np.round(120 / 7, 6))
        17.142857 17.142857
    """

    order: int = eqx.field(default=3, static=True)

    def __check_init__(self):
        if self.order not in (1, 2, 3):
            raise ValueError(f"Smoothness order must be 1, 2 or 3, got {self.order}")

    def integrand(self, model, samples):
        x = (samples.v, samples.vd, samples.vdd)[self.order - 1]
        return jnp.sum(x**2, axis=-1)


def _ramp(s):
    return s


class TimeWeighted(AbstractRunningCost):
    """A running cost weighted in time: ``int_0^T w(t / T) l(t) dt`` with ``l`` the integrand of
    ``term`` and ``w`` a function of normalised time (default ``w(s) = s``: late costs count more).

    Example:
        A rotor (``tau = 0.1 vd``) moving from rest at 0 to rest at 1 rad in 1 s along the
        minimum-jerk motion: its ``vd^2`` is symmetric about ``T / 2``, so weighting it by ``w(s) =
        s`` halves the torque effort.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> late = trajopt.TimeWeighted(trajopt.TorqueEffort())(rotor, trajectory, samples)
        >>> effort = trajopt.TorqueEffort()(rotor, trajectory, samples)
        >>> print(np.round(float(late / effort), 6))
        0.5
        >>> squared = trajopt.TimeWeighted(trajopt.TorqueEffort(), weight=lambda s: s**2)  # any function of s = t / T
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

    Example:
        A point 0.5 m along ``x`` of a rotor's body, which turns from 0 to 1 rad in 1 s: at the
        end it is at ``0.5 (cos 1, sin 1, 0)``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> tip = trajopt.TaskPoint(body=0, target=(0.5, 0.0, 0.0), point=(0.5, 0.0, 0.0))
        >>> error = tip.error(rotor, trajectory, samples)  # p(q(T)) - target
        >>> bool(np.allclose(error, [0.5 * np.cos(1.0) - 0.5, 0.5 * np.sin(1.0), 0.0]))
        True
    """

    body: int | str = eqx.field(static=True)
    target: Float[Array, 3] = eqx.field(converter=jnp.asarray)
    point: Float[Array, 3] = eqx.field(default=(0.0, 0.0, 0.0), converter=jnp.asarray)
    time: float | None = None

    def __check_init__(self):
        if self.target.shape != (3,) or self.point.shape != (3,):
            raise ValueError(f"target and point must be 3-vectors, got {self.target.shape}, {self.point.shape}")

    def error(self, model: Model, trajectory: BSpline, samples: Samples) -> Float[Array, 3]:
        """``p(q(t*)) - target`` (m), ``p`` the point in the base frame (forward kinematics, Tuan
        22-27)."""
        t = samples.duration if self.time is None else self.time
        q = trajectory.derivative(t, 0)
        return points_in_base(model, q, (model.body_index(self.body),), self.point[None])[0] - self.target.astype(q.dtype)


class TaskTarget(TaskPoint, AbstractCost):
    """A task-space target for a point of a body, as a cost: ``|p(q(t*)) - target|^2`` (m^2), the
    fields of :class:`TaskPoint`.

    Example:
        A point 0.5 m along ``x`` of a rotor's body, which turns from 0 to 1 rad in 1 s, and its
        start as the target: ``|0.5 (cos 1 - 1, sin 1, 0)|^2 = 0.5 (1 - cos 1)``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> target = trajopt.TaskTarget(body=0, target=(0.5, 0.0, 0.0), point=(0.5, 0.0, 0.0))
        >>> print(np.round(float(target(rotor, trajectory, samples)), 6), np.round(0.5 * (1 - np.cos(1.0)), 6))
        0.229849 0.229849
    """

    def __call__(self, model, trajectory, samples):
        return jnp.sum(self.error(model, trajectory, samples) ** 2)


class Duration(AbstractCost):
    """The duration ``T`` of the motion (s): with ``free_time`` (:func:`~kronjax.trajopt.transcribe`),
    ``Duration()`` is the minimum-time problem, ``Duration() + w * TorqueEffort()`` a trade-off.

    Example:
        On a motion of 1 s (see :class:`FreeTime` for the duration as a decision variable):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> float(trajopt.Duration()(rotor, trajectory, samples))
        1.0
        >>> cost = trajopt.Duration() + 0.1 * trajopt.TorqueEffort()  # time against effort
    """

    def __call__(self, model, trajectory, samples):
        return samples.duration
