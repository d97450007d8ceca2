"""MJX's inverse dynamics timed in a process of its own, so that its XLA flags (read once, when
JAX starts) and its precision are its own: ``python -m bench._mjx SPEC.json``.

SPEC (written by :mod:`bench.suite`): ``urdf`` (path), ``samples`` (``.npz`` with ``q``, ``qd``,
``qdd``), ``batch``, ``probe`` (a smaller batch timed first), ``max_call_s`` (when a call at
``batch`` would take longer, the result is the probe batch's), ``precision``, ``timing``
(keyword arguments of ``best_time``), ``check`` (how many leading samples' torques to return),
``out`` (where the JSON result goes).
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    import jax

    if spec["precision"] == "float64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    from ._timing import best_time, compile_jit, time_jax
    from .peers import mjx_inverse_dynamics

    dtype = jnp.float64 if spec["precision"] == "float64" else jnp.float32
    with open(spec["urdf"]) as f:
        fn, _ = mjx_inverse_dynamics(f.read())
    loaded = np.load(spec["samples"])
    arrays = [loaded[k] for k in ("q", "qd", "qdd")]
    batched = jax.vmap(fn)

    def inputs(batch):
        return tuple(jnp.asarray(a[:batch], dtype) for a in arrays)

    batch, note, measured = spec["batch"], "", None
    start = time.perf_counter()
    probe = min(spec["probe"], batch)
    if probe < batch:  # XLA:CPU's default fusion emitters can make MJX very slow: look first
        args = inputs(probe)
        compiled, compile_s = compile_jit(batched, *args)
        out = jax.block_until_ready(compiled(*args))
        per_sample = best_time(lambda: jax.block_until_ready(compiled(*args)), repeats=1, min_seconds=0.0) / probe
        if per_sample * batch > spec["max_call_s"]:
            note = (
                f"batch {probe}, not {batch}: one call at {batch} would take ~{per_sample * batch:.0f} s "
                f"(> {spec['max_call_s']} s)"
            )
            batch = probe
            measured = (best_time(lambda: jax.block_until_ready(compiled(*args)), **spec["timing"]), compile_s, out)
    per_call, compile_s, out = measured or time_jax(batched, inputs(batch), spec["timing"])
    result = {
        "seconds_per_call": per_call,
        "compile_s": compile_s,
        "batch": batch,
        "note": note,
        "dtype": str(out.dtype),
        "head": np.asarray(out[: spec["check"]], float).tolist(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "wall_s": time.perf_counter() - start,
    }
    with open(spec["out"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
