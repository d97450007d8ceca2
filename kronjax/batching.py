"""Large batches: ``jax.vmap`` evaluated a chunk at a time, and sharded over devices.

``jax.vmap(kronjax.coriolis_star)`` over 10^6 states of a 7-joint arm would hold every sample's
intermediates at once (several GB). :func:`chunked_vmap` maps the same function over the batch
``chunk_size`` samples at a time (``lax.map`` over chunks, ``vmap`` inside a chunk), so memory is
bounded by one chunk and the outputs. The automatic size is the largest that fits
``chunk_bytes``: the chunks' outputs are interleaved back into one array (a copy), which costs
functions with large outputs more than smaller chunks save (on 2 CPU cores, batch 10^4 of the
Panda: :func:`~kronjax.hessians` 8.2 us per sample in one ``vmap``, 15-17 us in chunks of
1000-5000; :func:`~kronjax.jacobians` 0.5 against 0.7-1.1). Functions with small outputs and many
intermediates are faster in chunks of a few thousand samples that stay in the CPU's cache
(``inverse_dynamics_derivatives`` 5.2 against 3.6-3.8 us, ``forward_dynamics_derivatives`` 5.5
against 3.5-3.8 in chunks of 2000-5000; a 37-velocity humanoid's forward dynamics 8.5 against 6.1
in chunks of 2000, ``python -m bench --sections floating``): pass ``chunk_size`` for those.

A vmapped size whose row of samples spans a multiple of 1 KiB (1024, 2048, ... float64 samples)
runs a cache line of samples more (repeats of the last one, dropped from the outputs): XLA:CPU
lays the vmapped per-joint and per-body arrays out as ``(n, samples)``, and rows of such a length
fall into the same cache sets and evict one another. At a batch of 1024 or 4096, against ``jax.vmap``
of the same size, 2 CPU cores: ``inverse_dynamics_derivatives`` 2.5 against 9.6-9.9 us per
sample, ``coriolis_star`` 3.0-4.6 against 9.7-10.9, ``hessians`` 4.5-8.9 against 14-19,
``forward_dynamics`` 1.2-1.7 against 2.4-3.1. ``jax.vmap`` itself runs the size it is given. The
chunks interleave the batch (chunk ``c`` holds samples ``c, c + steps, c + 2 steps, ...``), so
inputs sharded over devices along the batch axis (``jax.sharding``) are processed on every device
at every step and the output keeps their sharding.

A batch sharded in ``shards`` equal pieces (read from the inputs' sharding outside ``jit``; under
``jit`` pass ``shards=``) is chunked and padded a piece at a time, each piece's padding repeating
its own last sample, so that no sample changes device, on one process or across processes (a
global ``jax.Array``, docs/guides/multi-host.md). Padded at the end of the whole batch instead, the
pieces' boundaries move and XLA gathers the whole batch onto every device (two processes of two
CPU devices, batch 64, ``chunk_size=6``: all-gathers in the program and a replicated output).
Without padding the layout is the same whatever ``shards``.

On a CPU, sharding is also how a batch uses every core: start Python with
``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`` (read when JAX starts) and put the
inputs on ``NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))``
(``python -m bench --sections floating`` measures this row). Build that mesh with automatic axes,
as here: JAX 0.10's ``jax.make_mesh`` makes *explicit* axes by default, under which a ``vmap`` of
any function that calls ``jnp.zeros_like`` on a batched value (kronjax's rotations do) fails with
``ShardingTypeError: All operands should have the same sharding`` (JAX's behaviour, not kronjax's);
``jax.make_mesh(..., axis_types=(jax.sharding.AxisType.Auto,))`` works too.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from .chain._arrays import is_concrete

__all__ = ["chunked_vmap", "DEFAULT_CHUNK_BYTES"]

DEFAULT_CHUNK_BYTES = 2**32
"""Estimated memory aimed at per chunk by the automatic chunk size (4 GiB). The estimate (every
value of the traced program summed) exceeds what XLA allocates: for the Panda at batch 10^4,
``coriolis_star`` 304 KB per sample estimated, 8.3 KB allocated (temporaries and output);
``inverse_dynamics`` 27 KB and 1.5 KB; ``translational_hessian`` 831 KB and 115 KB."""


def _unaliased(chunk: int, leaves: list) -> int:
    """``chunk`` samples, or one cache line's worth more where a row of ``chunk`` values (the
    widest floating dtype of ``leaves``) spans a multiple of 1 KiB (the module's doc says why)."""
    itemsize = max((x.dtype.itemsize for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact)), default=8)
    return chunk + max(1, 64 // itemsize) if (chunk * itemsize) % 1024 == 0 else chunk


def _per_sample_bytes(fn: Callable, args) -> int:
    """An upper estimate of one sample's memory: the sizes of every value in ``fn``'s traced
    program summed (``jax.make_jaxpr``; nothing is run; XLA fuses most of them away)."""
    sample = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), args)
    jaxpr = jax.make_jaxpr(fn)(*sample)
    sizes = [
        math.prod(v.aval.shape) * v.aval.dtype.itemsize for eqn in jaxpr.eqns for v in eqn.outvars if hasattr(v.aval, "shape")
    ]
    return max(sum(sizes), 1)


def _batch_shards(leaves: list, batch: int) -> int:
    """The number of pieces the batch axis of concrete ``jax.Array`` leaves is sharded into (the
    most among them); 1 for NumPy arrays and under ``jit``, whose tracers carry no sharding."""
    sizes = [x.sharding.shard_shape(x.shape)[0] for x in leaves if isinstance(x, jax.Array) and is_concrete(x)]
    return max((batch // size for size in sizes if size and batch % size == 0), default=1)


def chunked_vmap(
    fn: Callable, chunk_size: int | None = None, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES, shards: int | None = None
) -> Callable:
    """``jax.vmap(fn)`` over the leading axis of every argument, ``chunk_size`` samples at a time.

    Args:
        fn: a function of per-sample arrays (close over the model: ``lambda q: coriolis_star(model, q)``).
        chunk_size: samples per chunk, at most. ``None`` chooses it so that one chunk's
            intermediates (estimated by summing the sizes of every value in ``fn``'s traced
            program) take about ``chunk_bytes``; a batch that fits in one chunk is a plain
            ``vmap``. The chunks are evened out (as many, the least padding), and a chunk whose
            row of samples would span a multiple of 1 KiB gets a cache line of samples more (see
            the module's doc).
        chunk_bytes: the memory aimed at per chunk when ``chunk_size`` is ``None``.
        shards: the number of equal pieces the batch axis is sharded into (the devices along the
            mesh axis that shards it, over every process: ``mesh.shape["batch"]``): each piece
            is chunked on its own, ``chunk_size // shards`` samples (at least one) per chunk and
            step, so that a batch whose pieces need padding stays where it is (the module's doc).
            ``None``: read from the inputs' sharding when they are concrete ``jax.Array`` s (a
            call outside ``jit``), else 1. It must divide the batch.

    Returns:
        A function with ``fn``'s arguments, each with a leading batch axis of the same length,
        returning ``fn``'s outputs with that leading axis. Works under ``jit`` (the chunk size is
        static: it depends only on shapes) and on sharded inputs, global ones of several
        processes too. Samples stay independent: a NaN or inf in one sample's inputs reaches only
        that sample's outputs (the padding repeats the last sample of the batch, or of each piece,
        and is dropped).

    Example:
        Mass matrices of 5 configurations, 2 at a time: the same as one ``jax.vmap``.

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> qs = jnp.linspace(0.0, 1.0, 10).reshape(5, 2)
        >>> M = kj.chunked_vmap(lambda q: kj.mass_matrix(model, q), chunk_size=2)(qs)
        >>> M.shape
        (5, 2, 2)
        >>> bool(jnp.allclose(M, jax.vmap(lambda q: kj.mass_matrix(model, q))(qs)))
        True
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    if shards is not None and (not isinstance(shards, int) or shards < 1):
        raise ValueError(f"shards must be a positive integer or None, got {shards!r}")

    def run(*args):
        leaves = jax.tree.leaves(args)
        if not leaves:
            raise ValueError("chunked_vmap needs at least one array argument")
        batch = {x.shape[0] if jnp.ndim(x) else None for x in leaves}
        if len(batch) != 1 or None in batch:
            raise ValueError(f"every argument needs the same leading batch axis, got leading sizes {sorted(map(str, batch))}")
        (batch,) = batch
        parts = _batch_shards(leaves, batch) if shards is None else shards
        if batch % parts:
            raise ValueError(f"shards={parts} does not divide the batch of {batch} samples")
        per_shard = batch // parts
        chunk = chunk_size or max(1, chunk_bytes // _per_sample_bytes(fn, args))
        steps = -(-per_shard // max(1, chunk // parts))
        chunk = _unaliased(-(-per_shard // steps), leaves)  # per shard; as many chunks, evened out: least padding
        padded = steps * chunk
        if steps == 1 and padded == per_shard:
            return jax.vmap(fn)(*args)

        def pad(x):  # (batch, ...) -> (parts * padded, ...): repeats of each shard's last sample, dropped from the outputs
            if padded == per_shard:
                return x
            x = x.reshape(parts, per_shard, *x.shape[1:])
            return jnp.concatenate([x, jnp.repeat(x[:, -1:], padded - per_shard, axis=1)], axis=1).reshape(-1, *x.shape[2:])

        def unpad(y):
            return (
                y if padded == per_shard else y.reshape(parts, padded, *y.shape[1:])[:, :per_shard].reshape(batch, *y.shape[1:])
            )

        if steps == 1:
            return jax.tree.map(unpad, jax.vmap(fn)(*jax.tree.map(pad, args)))

        def split(x):  # (batch, ...) -> (steps, parts * chunk, ...): shard d's sample c * steps + s at [s, d * chunk + c]
            return jnp.swapaxes(pad(x).reshape(parts * chunk, steps, *x.shape[1:]), 0, 1)

        def merge(y):
            return unpad(jnp.swapaxes(y, 0, 1).reshape(parts * padded, *y.shape[2:]))

        return jax.tree.map(merge, jax.lax.map(lambda xs: jax.vmap(fn)(*xs), jax.tree.map(split, args)))

    return run
