"""Checked floating arrays of a model's parameters, in NumPy while they are concrete (validated at
construction), traced arrays inside ``jit``."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array


def is_concrete(*xs) -> bool:
    """True when no leaf is a tracer: values can be validated now (outside jit / grad)."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(xs))


def float_array(x, what: str, shape: tuple[int, ...] | None = None, allow_inf: bool = False) -> np.ndarray | Array:
    """``x`` as a checked floating array of JAX's default (canonical) float dtype, unless it
    already is a floating array: a NumPy array when ``x`` is concrete (checked here, in NumPy:
    eager ``jnp`` operations and transfers cost a dispatch each, seconds for a 500-body model;
    :func:`stack_arrays` or ``jnp.asarray`` makes the model's leaves), the traced array otherwise."""
    concrete = is_concrete(x)
    try:
        arr = np.asarray(x) if concrete else jnp.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be numeric, got {x!r}") from err
    if not jnp.issubdtype(arr.dtype, jnp.number) or jnp.issubdtype(arr.dtype, jnp.complexfloating):
        raise TypeError(f"{what} must be real numbers, got dtype {arr.dtype}")
    floating = jnp.issubdtype(arr.dtype, jnp.floating) and not isinstance(x, (float, int))
    # strongly typed (Python scalars take JAX's default float): equal models then hash alike under jit
    dtype = jax.dtypes.canonicalize_dtype(arr.dtype if floating else jnp.result_type(float))
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {arr.shape}")
    if not concrete:
        return jax.lax.convert_element_type(arr, dtype)
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if np.any(bad):
        raise ValueError(f"{what} must be {'a number' if allow_inf else 'finite'}, got {arr}")
    return arr.astype(dtype)


def stack_arrays(arrays: Sequence[np.ndarray | Array]) -> Array:
    """``jnp.stack``, through NumPy for concrete arrays: an eager ``jnp.stack`` compiles anew for
    every number of arrays."""
    if is_concrete(arrays):
        return jnp.asarray(np.stack(arrays))
    return jnp.stack(arrays)
