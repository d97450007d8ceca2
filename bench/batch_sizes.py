"""Batch sizes: ``jax.vmap`` and ``kj.chunked_vmap`` of the same function at the same batches,
among them sizes whose row of float64 samples spans whole kibibytes (1024, 4096), where XLA:CPU's
``(n, samples)`` intermediates share cache sets and ``chunked_vmap`` runs a cache line of samples
more (:mod:`kronjax.batching`).

``python -m bench.batch_sizes [--batches B ...] [--repeats R] [--functions F ...]``: the Panda,
float64, random states; each cell the median (and range) over ``R`` rounds of
:func:`bench._timing.rounds`, in microseconds per sample. Not part of ``python -m bench``, whose
peers run at batch 10^4 (not such a size).
"""

from __future__ import annotations

import argparse
import functools

import numpy as np

from bench import models
from bench._timing import rounds

FUNCTIONS = (
    "inverse_dynamics",
    "forward_dynamics",
    "mass_matrix",
    "coriolis_star",
    "jacobians",
    "hessians",
    "inverse_dynamics_derivatives",
    "forward_dynamics_derivatives",
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_sizes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1000, 1024, 4000, 4096, 10_000], help="batches")
    parser.add_argument("--repeats", type=int, default=5, help="timing rounds per cell (default 5)")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS), choices=FUNCTIONS, help="kronjax functions")
    args = parser.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import kronjax as kj

    model = models.panda()
    arguments = {"mass_matrix": 1, "coriolis_star": 1, "jacobians": 1, "hessians": 1}  # q only; the rest (q, qd, x)
    print(f"Panda, float64, us per sample: median (range) of {args.repeats} rounds; jit of each, after its compile")
    for name in args.functions:
        count = arguments.get(name, 3)
        fn = functools.partial(getattr(kj, name), model)

        for batch in args.batches:
            key = jax.random.PRNGKey(batch)
            x = [jax.random.uniform(k, (batch, model.nv), jnp.float64, -1.0, 1.0) for k in jax.random.split(key, count)]
            cells = []
            for label, batched in (("jax.vmap", jax.vmap(fn)), ("kj.chunked_vmap", kj.chunked_vmap(fn))):
                compiled = jax.jit(batched).lower(*x).compile()
                times = np.array(rounds(lambda c=compiled: jax.block_until_ready(c(*x)), repeats=args.repeats)) / batch * 1e6
                cells.append(f"{label} {np.median(times):6.2f} ({times.min():.2f}-{times.max():.2f})")
            print(f"{name:30s} batch {batch:6d}  " + "   ".join(cells), flush=True)


if __name__ == "__main__":
    main()
