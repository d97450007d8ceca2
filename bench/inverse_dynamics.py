"""Inverse dynamics of the Panda (Franka's modified D-H table with Robotics Toolbox's inertials):
samples per second of kronjax's ``method="kron"`` (M qdd + C* (qd ⊗ qd) + g), of the fast
``method="rnea"``, and of Pinocchio's ``rnea`` called per sample from Python, in one run.

    .venv/bin/python bench/inverse_dynamics.py [--batches 1 1000 100000] [--float32]

Prints a table and the ratios against Pinocchio. Nothing is asserted: targets live in the issues.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np


def best_time(fn, repeats: int, min_seconds: float = 0.2) -> float:
    """Best wall time of ``fn()`` over ``repeats`` rounds, each at least ``min_seconds`` long."""
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 1_000, 100_000])
    parser.add_argument("--float32", action="store_true", help="float32 instead of float64")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    jax.config.update("jax_enable_x64", not args.float32)
    import jax.numpy as jnp
    import pinocchio as pin
    import roboticstoolbox as rtb

    import kronjax as kj

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from oracles import from_rtb, to_pinocchio

    dtype = jnp.float32 if args.float32 else jnp.float64
    model = from_rtb(rtb.models.DH.Panda()).astype(dtype)
    pm = to_pinocchio(from_rtb(rtb.models.DH.Panda()))
    pdata = pm.createData()
    n = model.n_dof

    rng = np.random.default_rng(0)
    q1, qd1, qdd1 = (rng.uniform(-1, 1, n) for _ in range(3))
    per_call = best_time(lambda: pin.rnea(pm, pdata, q1, qd1, qdd1), args.repeats)
    pin_rate = 1.0 / per_call

    print(f"kronjax {kj.__version__}, jax {jax.__version__}, pinocchio {pin.__version__}")
    print(f"{platform.processor() or platform.machine()}, {jax.device_count()} x {jax.devices()[0].platform}, "
          f"{'float32' if args.float32 else 'float64'}, Panda n = {n}")
    print(f"Pinocchio rnea, per call from Python: {per_call * 1e6:.2f} us  ({pin_rate:,.0f} samples/s)\n")
    print(f"{'batch':>8} {'method':>6} {'compile s':>10} {'us/sample':>10} {'samples/s':>14} {'vs pinocchio':>13}")

    for batch in args.batches:
        q, qd, qdd = (jnp.asarray(rng.uniform(-1, 1, (batch, n)), dtype) for _ in range(3))
        for method in ("kron", "rnea"):
            fn = jax.jit(jax.vmap(lambda q, qd, qdd, m=method: kj.inverse_dynamics(model, q, qd, qdd, method=m)))
            start = time.perf_counter()
            fn(q, qd, qdd).block_until_ready()
            compile_s = time.perf_counter() - start
            t = best_time(lambda: fn(q, qd, qdd).block_until_ready(), args.repeats)
            rate = batch / t
            print(f"{batch:>8} {method:>6} {compile_s:>10.2f} {t / batch * 1e6:>10.3f} {rate:>14,.0f} {rate / pin_rate:>12.2f}x")


if __name__ == "__main__":
    main()
