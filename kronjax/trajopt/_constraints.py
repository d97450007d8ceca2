"""Constraints on a motion beyond the joint limits: obstacles and task-space targets.

A constraint is a function of the trajectory at the samples (:class:`Samples`), like a cost, with
values ``<= 0`` (an inequality) or ``= 0`` (an equality). Its values are scaled by the user's
units (a radius, a metre) so that a violation of ``1e-6`` means the same everywhere.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..chain import Model
from ._costs import Samples, TaskPoint, points_in_base
from ._spline import BSpline


class AbstractConstraint(eqx.Module):
    """``constraint(model, trajectory, samples) -> (k,)`` values, ``<= 0`` for an inequality or
    ``= 0`` where ``equality`` is ``True``; passed to :func:`~kronjax.trajopt.transcribe` and
    :func:`~kronjax.trajopt.optimize` as ``constraints=(...)``.

    Example:
        A constraint of one's own, ``q <= 0.9`` at every sample, on a rotor moving from 0 to 1 rad
        in 1 s (the minimum-jerk motion, which breaks it at the end by 0.1 rad):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> class Below(trajopt.AbstractConstraint):
        ...     def __call__(self, model, trajectory, samples):
        ...         return samples.q[:, 0] - 0.9
        >>> values = Below()(rotor, trajectory, samples)
        >>> values.shape  # one value per sample (K = 53)
        (53,)
        >>> print(np.round(float(values.max()), 6))
        0.1
        >>> constrained = trajopt.transcribe(rotor, problem.boundary, trajopt.TorqueEffort(), num_control_points=9,
        ...                                  constraints=(Below(),))  # optimize(..., constraints=(Below(),)) alike
        >>> constrained.extra_constraints
        (Below(),)
    """

    equality: ClassVar[bool] = False

    def __call__(self, model: Model, trajectory: BSpline, samples: Samples) -> Float[Array, " k"]:
        raise NotImplementedError


class AvoidSpheres(AbstractConstraint):
    """Keep points of bodies outside spheres at every sample: ``1 - |p_i(t_k) - c_j| / r_j <= 0``
    for each point ``i``, sphere ``j`` and sample ``k`` (``(K P S,)`` values, relative to the
    radius). Pad the radii by the size of the link around the point.

    Args:
        bodies: ``P`` body indices or names, one per point.
        points: ``(P, 3)`` the points in their bodies' frames.
        centres: ``(S, 3)`` the spheres' centres in the base frame.
        radii: ``(S,)`` their radii (positive).

    Example:
        A point 0.5 m along ``x`` of a rotor's body (it turns from 0 to 1 rad in 1 s) and a
        sphere of radius 0.25 m about the axis: the point stays 0.5 m from its centre, ``1 - 0.5 /
        0.25 = -1`` at every sample.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> avoid = trajopt.AvoidSpheres(bodies=(0,), points=[(0.5, 0.0, 0.0)], centres=[(0.0, 0.0, 0.0)], radii=[0.25])
        >>> values = avoid(rotor, trajectory, samples)  # (K P S,) = (53 * 1 * 1,)
        >>> values.shape, bool(np.allclose(values, -1.0))
        ((53,), True)
    """

    bodies: tuple[int | str, ...] = eqx.field(static=True)
    points: Float[Array, "P 3"] = eqx.field(converter=jnp.asarray)
    centres: Float[Array, "S 3"] = eqx.field(converter=jnp.asarray)
    radii: Float[Array, " S"] = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        if self.points.ndim != 2 or self.points.shape != (len(self.bodies), 3):
            raise ValueError(f"points must be ({len(self.bodies)}, 3), one per body, got {self.points.shape}")
        if self.centres.ndim != 2 or self.centres.shape[1] != 3 or self.radii.shape != self.centres.shape[:1]:
            raise ValueError(f"centres must be (S, 3) and radii (S,), got {self.centres.shape} and {self.radii.shape}")
        if not isinstance(self.radii, jax.core.Tracer) and not bool(jnp.all(self.radii > 0)):
            raise ValueError(f"radii must be positive, got {self.radii}")

    def __call__(self, model, trajectory, samples):
        bodies = tuple(model.body_index(b) for b in self.bodies)
        p = jax.vmap(lambda q: points_in_base(model, q, bodies, self.points))(samples.q)  # (K, P, 3)
        distance = jnp.linalg.norm(p[:, :, None, :] - self.centres.astype(p.dtype), axis=-1)  # (K, P, S)
        return (1.0 - distance / self.radii.astype(p.dtype)).reshape(-1)


class TaskConstraint(TaskPoint, AbstractConstraint):
    """A point of a body at a position at one time, as an equality: ``p(q(t*)) - target = 0``
    (``(3,)``, metres), the fields of :class:`~kronjax.trajopt.TaskPoint`; the equality form of
    the cost :class:`~kronjax.trajopt.TaskTarget`. With ``time=None`` (the end) leave ``q_end=None``
    in the :class:`~kronjax.trajopt.BoundaryConditions` (:func:`~kronjax.trajopt.transcribe`
    refuses a target where ``q`` is fixed).

    Example:
        A point 0.5 m along ``x`` of a rotor's body at ``(0.5, 0, 0)`` half-way through a motion
        from 0 to 1 rad in 1 s; the minimum-jerk motion is at 0.5 rad then, so the values are
        ``0.5 (cos 0.5 - 1, sin 0.5, 0)``:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
        ...                              num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion q = 10 t^3 - 15 t^4 + 6 t^5
        >>> trajectory, samples = problem.trajectory(z), problem.samples(z)
        >>> reach = trajopt.TaskConstraint(body=0, target=(0.5, 0.0, 0.0), point=(0.5, 0.0, 0.0), time=0.5)
        >>> bool(np.allclose(reach(rotor, trajectory, samples), [0.5 * np.cos(0.5) - 0.5, 0.5 * np.sin(0.5), 0.0]))
        True
    """

    equality: ClassVar[bool] = True

    def __call__(self, model, trajectory, samples):
        return self.error(model, trajectory, samples)
