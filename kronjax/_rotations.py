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


def axis_angle(axis: Float[Array, "3"], angle) -> Float[Array, "3 3"]:
    """Rodrigues' formula ``E + sin(t) [u] + (1 - cos(t)) [u]^2`` for a unit axis ``u``."""
    k = skew(axis)
    return jnp.eye(3, dtype=k.dtype) + jnp.sin(angle) * k + (1 - jnp.cos(angle)) * (k @ k)

