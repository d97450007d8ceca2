"""One of the two processes that tests/test_multihost.py starts: the recipes of
docs/guides/multi-host.md on JAX's multi-controller runtime, over CPU devices of this machine.

    python tests/multihost_worker.py PROCESS_ID PORT DATA OUT

``DATA`` is a directory of ``q.npy``, ``v.npy``, ``vd.npy``, ``tau.npy`` (the Panda's states and
measured torques, ``(N, 7)`` each), of which this process reads only its rows, and
``independent.npy`` (the base parameters' columns). ``OUT`` is the ``.npz`` it writes: for each
batched inverse dynamics, this process's rows as the result stays sharded (``<name>_rows`` and
their values ``<name>``) and whether it kept the inputs' sharding (``<name>_sharded``); the
gathered result (``gathered``); the normal equations of the standard regressor reduced across
processes (``A``, ``b`` by a jitted sum over the sharded batch, ``A_psum``, ``b_psum`` by ``psum``
in ``shard_map``) and the base parameters solved from them (``beta``); what each compiled program
communicates (``collectives...``). The parent checks them against one process's numbers.
"""

import re
import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import kronjax as kj


def _local_rows(out) -> tuple[np.ndarray, np.ndarray]:
    """This process's rows of a batch sharded along its first axis, and their values."""
    rows, values = [], []
    for shard in out.addressable_shards:
        rows.append(np.arange(out.shape[0])[shard.index[0]])
        values.append(np.asarray(shard.data))
    return np.concatenate(rows), np.concatenate(values)


def _collectives(compiled) -> list[str]:
    """The communicating instructions of a compiled program, each as its kind and shapes."""
    kinds = "all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter"
    return [f"{k} {shapes}" for shapes, k in re.findall(rf"= (.+?) ({kinds})(?:-start)?\(", compiled.as_text())]


def inverse_dynamics(model, files, mesh, batch, process_id: int) -> dict:
    """(a) this process's contiguous half of the rows (process order is device order here), the
    inverse dynamics through ``jax.vmap`` and ``chunked_vmap`` under ``jit`` and outside."""
    n = files["q"].shape[0]
    mine = slice(process_id * n // 2, (process_id + 1) * n // 2)
    q, v, vd = (jax.make_array_from_process_local_data(batch, np.asarray(files[k][mine])) for k in ("q", "v", "vd"))
    tau = lambda q, v, vd: kj.inverse_dynamics(model, q, v, vd)  # noqa: E731
    vmapped = jax.jit(jax.vmap(tau)).lower(q, v, vd).compile()
    # 16 samples per device, 3 per chunk: each device's piece padded to 18 (kronjax.batching)
    chunked = jax.jit(kj.chunked_vmap(tau, 12, shards=mesh.size)).lower(q, v, vd).compile()
    results = {"collectives_chunked": _collectives(chunked)}
    for name, fn in (("vmap", vmapped), ("chunked", chunked), ("chunked_eager", kj.chunked_vmap(tau, 12))):
        y = fn(q, v, vd)
        results[f"{name}_rows"], results[name] = _local_rows(y)
        results[f"{name}_sharded"] = y.sharding.is_equivalent_to(batch, 2)
        if name == "vmap":  # kept sharded above; gathered onto every process here
            results["gathered"] = multihost_utils.process_allgather(y, tiled=True)
    return results


def identification(model, files, mesh, batch, independent) -> dict:
    """(b) the dataset in two blocks, of each the rows of this process's devices (whatever their
    order); the normal equations of the standard regressor reduced across processes, summed over
    the blocks, and the base parameters solved from them."""

    @jax.jit
    def normal_equations(q, v, vd, tau):
        y = kj.identify.regressor(model, q, v, vd)  # (block, 7, 70), sharded along the block
        return jnp.einsum("snp,snk->pk", y, y), jnp.einsum("snp,sn->p", y, tau)  # all-reduced over processes

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("batch"), out_specs=P(), check_vma=False)
    def normal_equations_psum(q, v, vd, tau):
        y = kj.identify.regressor(model, q, v, vd)  # this device's samples
        return jax.lax.psum((jnp.einsum("snp,snk->pk", y, y), jnp.einsum("snp,sn->p", y, tau)), "batch")

    n = files["q"].shape[0]
    block = n // 2
    results = {}
    for suffix, fn in (("", normal_equations), ("_psum", normal_equations_psum)):
        a_sum, b_sum, compiled = 0.0, 0.0, None
        for start in range(0, n, block):
            rows = slice(start, start + block)
            args = [
                jax.make_array_from_callback((block, *x.shape[1:]), batch, lambda i, x=x: np.asarray(x[rows][i]))
                for x in files.values()
            ]
            compiled = compiled or fn.lower(*args).compile()  # one program for both blocks
            a, b = compiled(*args)
            a_sum, b_sum = a_sum + np.asarray(a), b_sum + np.asarray(b)  # replicated: every process has them
        results["A" + suffix], results["b" + suffix] = a_sum, b_sum
        results["collectives" + suffix] = _collectives(compiled)
    i = independent
    results["beta"] = np.linalg.solve(results["A"][np.ix_(i, i)], results["b"][i])
    return results


def main(process_id: int, port: int, data: str, out: str) -> None:
    jax.config.update("jax_enable_x64", True)
    # before any computation; kronjax computes nothing on import
    jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=process_id, initialization_timeout=60)
    model = kj.models.panda()
    mesh = Mesh(np.array(jax.devices()), ("batch",))  # every process's devices, automatic axes
    batch = NamedSharding(mesh, P("batch"))
    files = {k: np.load(f"{data}/{k}.npy", mmap_mode="r") for k in ("q", "v", "vd", "tau")}
    independent = np.load(f"{data}/independent.npy")  # the parent found them from Pinocchio's regressor
    np.savez(
        out,
        devices=jax.device_count(),
        local_devices=jax.local_device_count(),
        **inverse_dynamics(model, files, mesh, batch, process_id),
        **identification(model, files, mesh, batch, independent),
    )
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
