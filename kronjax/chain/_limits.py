"""Joint limits (URDF ``<limit>``): position, velocity and effort per joint coordinate."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._arrays import float_array, is_concrete


class JointLimits(eqx.Module):
    """Limits of each joint coordinate (URDF's ``<limit>``), used by trajectory optimisation.

    Attributes (each ``(n,)``, one entry per joint coordinate, ``inf`` where unlimited):
        lower, upper: position limits (rad or m), ``lower <= upper``; ``lower == upper`` is a
            joint locked at that position.
        velocity: speed limits ``|v| <= velocity`` (``>= 0``; ``0``: the joint must not move).
        effort: force/torque limits ``|tau| <= effort`` (``>= 0``; ``0``: an unactuated, passive
            joint).

    NaN is an error everywhere. URDF files often write ``0`` to mean "not set";
    :func:`~kronjax.urdf.load_urdf` reads those as unlimited unless ``strict_limits=True``.

    Example:
        >>> import kronjax as kj
        >>> limits = kj.models.panda().limits  # Franka's published limits
        >>> limits.effort.tolist()
        [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]
        >>> kj.chain.JointLimits.unlimited(2).upper.tolist()
        [inf, inf]
    """

    lower: Float[Array, " n"]
    upper: Float[Array, " n"]
    velocity: Float[Array, " n"]
    effort: Float[Array, " n"]

    def __check_init__(self):
        n = self.lower.shape
        for name in ("upper", "velocity", "effort"):
            if getattr(self, name).shape != n:
                raise ValueError(f"JointLimits.{name} has shape {getattr(self, name).shape}, lower has {n}")
        if not is_concrete(self.lower, self.upper, self.velocity, self.effort):
            return
        lower, upper = np.asarray(self.lower), np.asarray(self.upper)
        for k in np.flatnonzero(~(lower <= upper)):
            raise ValueError(f"joint coordinate {k}: lower limit {lower[k]} exceeds upper limit {upper[k]}")
        for k in np.flatnonzero((lower == np.inf) | (upper == -np.inf)):
            raise ValueError(f"joint coordinate {k}: position range [{lower[k]}, {upper[k]}] holds no position")
        for name in ("velocity", "effort"):
            value = np.asarray(getattr(self, name))
            for k in np.flatnonzero(~(value >= 0)):
                raise ValueError(f"joint coordinate {k}: {name} limit must be >= 0, got {value[k]}")

    @classmethod
    def unlimited(cls, n: int, dtype=None) -> JointLimits:
        inf = jnp.full((n,), jnp.inf, dtype or jnp.result_type(float))
        return cls(-inf, inf, inf, inf)


def joint_limits(limits, n: int, joint_names: Sequence[str]) -> JointLimits:
    if limits is None:
        return JointLimits.unlimited(n)
    if isinstance(limits, dict):
        unknown = set(limits) - {"lower", "upper", "velocity", "effort"}
        if unknown:
            raise ValueError(f"unknown joint limit keys {sorted(unknown)}; expected lower, upper, velocity, effort")
        defaults = {"lower": -jnp.inf, "upper": jnp.inf, "velocity": jnp.inf, "effort": jnp.inf}
        values = {
            key: jnp.broadcast_to(float_array(limits.get(key, default), f"joint limits {key}", None, True), (n,))
            for key, default in defaults.items()
        }
        try:
            limits = JointLimits(**values)
        except ValueError as err:
            raise ValueError(f"{err} (joints with coordinates: {list(joint_names)})") from None
    if not isinstance(limits, JointLimits):
        raise TypeError(f"limits must be a JointLimits, a dict or None, got {limits!r}")
    if limits.lower.shape != (n,):
        raise ValueError(f"joint limits for {limits.lower.shape[0]} coordinates, the model has {n} ({list(joint_names)})")
    return limits
