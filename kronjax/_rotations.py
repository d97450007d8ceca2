"""Elementary rotations used by the model builders and loaders (private).

Each takes ``xp``, the array namespace: ``jax.numpy`` (default; traceable) or ``numpy`` (the
loaders, where a JAX dispatch per call made a 500-link file take seconds to read)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .calculus import skew

# jnp or np (xp): a JAX array or a NumPy array
Matrix3 = Float[ArrayLike, "3 3"]


def rot_x(angle, xp=jnp) -> Matrix3:
    c, s = xp.cos(angle), xp.sin(angle)
    o, z = xp.ones_like(c), xp.zeros_like(c)
    return xp.stack([xp.stack([o, z, z]), xp.stack([z, c, -s]), xp.stack([z, s, c])])


def rot_z(angle, xp=jnp) -> Matrix3:
    c, s = xp.cos(angle), xp.sin(angle)
    o, z = xp.ones_like(c), xp.zeros_like(c)
    return xp.stack([xp.stack([c, -s, z]), xp.stack([s, c, z]), xp.stack([z, z, o])])


def rot_y(angle, xp=jnp) -> Matrix3:
    c, s = xp.cos(angle), xp.sin(angle)
    o, z = xp.ones_like(c), xp.zeros_like(c)
    return xp.stack([xp.stack([c, z, s]), xp.stack([z, o, z]), xp.stack([-s, z, c])])


def rpy(roll, pitch, yaw, xp=jnp) -> Matrix3:
    """URDF's fixed-axis roll-pitch-yaw: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    return rot_z(yaw, xp) @ rot_y(pitch, xp) @ rot_x(roll, xp)


def to_rpy(r) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a rotation (NumPy, outside jit), inverse of :func:`rpy`.

    At gimbal lock (pitch = +-pi/2) roll is set to 0 and yaw takes the whole rotation about z.
    """
    r = np.asarray(r, float)
    pitch = float(np.arctan2(-r[2, 0], np.hypot(r[0, 0], r[1, 0])))
    if np.hypot(r[0, 0], r[1, 0]) < 1e-12:
        return 0.0, pitch, float(np.arctan2(-r[0, 1], r[1, 1]))
    return float(np.arctan2(r[2, 1], r[2, 2])), pitch, float(np.arctan2(r[1, 0], r[0, 0]))


def axis_angle(axis: Float[ArrayLike, 3], angle, xp=jnp) -> Matrix3:
    """Rodrigues' formula ``E + sin(t) [u] + (1 - cos(t)) [u]^2`` for a unit axis ``u``."""
    k = skew(axis) if xp is jnp else np.cross(np.eye(3), np.asarray(axis))
    return xp.eye(3, dtype=k.dtype) + xp.sin(angle) * k + (1 - xp.cos(angle)) * (k @ k)
