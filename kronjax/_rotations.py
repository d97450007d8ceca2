"""Elementary rotations used by the model builders (private)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from .calculus import skew


def rot_x(angle) -> Float[Array, "3 3"]:
    c, s = jnp.cos(angle), jnp.sin(angle)
    o, z = jnp.ones_like(c), jnp.zeros_like(c)
    return jnp.stack([jnp.stack([o, z, z]), jnp.stack([z, c, -s]), jnp.stack([z, s, c])])


def rot_z(angle) -> Float[Array, "3 3"]:
    c, s = jnp.cos(angle), jnp.sin(angle)
    o, z = jnp.ones_like(c), jnp.zeros_like(c)
    return jnp.stack([jnp.stack([c, -s, z]), jnp.stack([s, c, z]), jnp.stack([z, z, o])])


def rot_y(angle) -> Float[Array, "3 3"]:
    c, s = jnp.cos(angle), jnp.sin(angle)
    o, z = jnp.ones_like(c), jnp.zeros_like(c)
    return jnp.stack([jnp.stack([c, z, s]), jnp.stack([z, o, z]), jnp.stack([-s, z, c])])


def rpy(roll, pitch, yaw) -> Float[Array, "3 3"]:
    """URDF's fixed-axis roll-pitch-yaw: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def to_rpy(r) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a rotation (NumPy, outside jit), inverse of :func:`rpy`.

    At gimbal lock (pitch = +-pi/2) roll is set to 0 and yaw takes the whole rotation about z.
    """
    import numpy as np

    r = np.asarray(r, float)
    pitch = float(np.arctan2(-r[2, 0], np.hypot(r[0, 0], r[1, 0])))
    if np.hypot(r[0, 0], r[1, 0]) < 1e-12:
        return 0.0, pitch, float(np.arctan2(-r[0, 1], r[1, 1]))
    return float(np.arctan2(r[2, 1], r[2, 2])), pitch, float(np.arctan2(r[1, 0], r[0, 0]))


def axis_angle(axis: Float[Array, "3"], angle) -> Float[Array, "3 3"]:
    """Rodrigues' formula ``E + sin(t) [u] + (1 - cos(t)) [u]^2`` for a unit axis ``u``."""
    k = skew(axis)
    return jnp.eye(3, dtype=k.dtype) + jnp.sin(angle) * k + (1 - jnp.cos(angle)) * (k @ k)

