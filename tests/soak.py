"""Long batched runs: many free Panda rollouts of many fixed steps, in chunks: a validation
(energy conservation, finiteness, flat memory over 10^8 rollout-steps) with its speed. ``tests/test_soak.py``
runs it on a tiny configuration; the full run is a script (from the repository root):

    python tests/soak.py                        # the full run: 1000 rollouts x 10^5 steps, float64 and float32
    python tests/soak.py --steps 25000 --chunk-steps 500   # a quarter of the steps: about 3.5 + 2 min on 2 cores
    python tests/soak.py --rollouts 8 --steps 2000 --chunk-steps 500 --dtypes float64   # a smoke run

The free system: ``kj.models.panda()`` (rigid bodies, no friction or damping in the model) with
gravity ``(0, 0, -9.81)`` and no torques, from random states (``q`` uniform within the joint
limits, ``qd`` uniform within half the velocity limits; ``--seed``), integrated by
:func:`kronjax.simulate.rollout` with Tsit5 (diffrax, 5th order, 6 evaluations of the forward dynamics per
step) at a fixed step ``dt`` (default 1 ms). Time is cut into chunks of ``--chunk-steps`` steps: one
compiled chunk function (``rollout`` from the carried state over ``[0, chunk_steps dt]``, the
system being autonomous) is called again and again with the state it returned, so that memory is
one chunk's whatever the length of the run. ``--chunk-rollouts`` also cuts the batch
(:func:`kronjax.chunked_vmap`); by default the whole batch is one ``vmap``.

Reported per dtype: rollout-steps per second (rollouts x steps of a chunk / its wall time; median
and range over chunks, compilation excluded), the rollouts with a non-finite state, the energy
drift ``max_t |E(t) - E(0)|`` (``E = kj.kinetic_energy + kj.potential_energy`` at every chunk end,
evaluated in float64 with the run's own parameter values, so that a float32 run's drift is its
integration's, not float32 rounding of the energy) relative to ``|E(0)|`` and to the largest
kinetic energy the rollout reached, and the memory after each chunk: the resident set (VmRSS) and
its peak during the chunk (VmHWM, reset before each chunk through ``/proc/self/clear_refs``).
Prints a table and writes ``bench/results/<date>-<machine>-soak.json``. On 2 shared cores (AMD EPYC)
the full run, one dtype at a time, ran at 1.26e5 rollout-steps per second (median;
float64, 13 min) and 2.14e5 (float32, 8 min).

The resident set steps up by ~2 MiB a few times in the first chunks and then stays flat: that is
glibc's allocator keeping freed memory; ``--malloc-trim`` returns it after each chunk, and the
resident set is then flat to within 0.3 MiB over 200 chunks.

float32 runs use float32 arrays throughout (model and states) under
``jax.default_matmul_precision("highest")`` (float32 products in full float32; XLA on CPU does that
regardless).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DTYPES = ("float64", "float32")


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python tests/soak.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rollouts", type=int, default=1000, help="rollouts in the batch (default 1000)")
    parser.add_argument("--steps", type=int, default=100_000, help="fixed steps per rollout (default 10^5)")
    parser.add_argument("--chunk-steps", type=int, default=1000, help="steps per call of the chunk function (default 1000)")
    parser.add_argument("--chunk-rollouts", type=int, help="rollouts per vmap inside a chunk (kj.chunked_vmap; default all)")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES), help="default: float64 float32")
    parser.add_argument("--dt", type=float, default=1e-3, help="the fixed step in seconds (default 1e-3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--malloc-trim",
        action="store_true",
        help="glibc malloc_trim(0) after each chunk, before the memory is read: what the allocator "
        "keeps of freed memory is returned, so that growth left over would be a leak",
    )
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    args = parser.parse_args(argv)
    for name in ("rollouts", "steps", "chunk_steps", "chunk_rollouts"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    if args.steps % args.chunk_steps:
        parser.error(f"--steps ({args.steps}) must be a multiple of --chunk-steps ({args.chunk_steps})")
    if not args.dt > 0:
        parser.error(f"--dt must be positive, got {args.dt}")
    return args


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (Linux), ``None`` elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Resets VmHWM to the current VmRSS (Linux >= 4.0: ``5`` to ``clear_refs``); ``False`` where
    that is not possible (the peak then covers the whole process so far)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _malloc_trim() -> bool:
    """Returns the C heap's free memory to the system (glibc); ``False`` where there is no glibc."""
    import ctypes

    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


def memory_kb() -> tuple[int | None, int | None]:
    """``(resident set, its peak)`` in kB: VmRSS and VmHWM, or ``ru_maxrss`` for the peak where
    ``/proc`` is missing."""
    rss, peak = _status_kb("VmRSS"), _status_kb("VmHWM")
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return rss, peak


# --------------------------------------------------------------------------------------------
# the soak
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Soak:
    """One dtype's run: per-rollout arrays ``(B, ...)`` and per-chunk arrays ``(C,)``."""

    dtype: str
    dt: float
    chunk_steps: int
    q0: np.ndarray  # (B, n) initial state, in the run's dtype
    qd0: np.ndarray
    q: np.ndarray  # (B, n) final state
    qd: np.ndarray
    energy0: np.ndarray  # (B,) E(0), float64
    energy: np.ndarray  # (B,) E at the end of the last chunk
    drift: np.ndarray  # (B,) max over chunk ends of |E - E(0)|
    kinetic_max: np.ndarray  # (B,) largest kinetic energy over the start and the chunk ends
    speed_max: np.ndarray  # (B,) largest |qd_j| over the start and the chunk ends
    drift_by_chunk: np.ndarray  # (C,) max over rollouts of |E - E(0)| / |E(0)| at the chunk's end
    nonfinite_by_chunk: np.ndarray  # (C,) rollouts with a non-finite state at the chunk's end
    seconds: np.ndarray  # (C,) wall time of each chunk call
    rss_kb: np.ndarray  # (C,) VmRSS after each chunk
    peak_kb: np.ndarray  # (C,) VmHWM during each chunk
    peak_reset: bool  # whether peak_kb is per chunk (else: since the process started)
    steps_taken: int  # solver steps summed over rollouts and chunks
    compile_s: float
    wall_s: float

    @property
    def rollouts(self) -> int:
        return self.q0.shape[0]

    @property
    def steps_per_s(self) -> np.ndarray:
        return self.rollouts * self.chunk_steps / self.seconds

    def summary(self) -> dict:
        rate = self.steps_per_s
        finite = np.isfinite(self.drift)
        return {
            "dtype": self.dtype,
            "rollouts": self.rollouts,
            "steps_per_rollout": self.chunk_steps * len(self.seconds),
            "chunk_steps": self.chunk_steps,
            "chunks": len(self.seconds),
            "dt": self.dt,
            "simulated_s": self.dt * self.chunk_steps * len(self.seconds),
            "steps_taken": self.steps_taken,
            "steps_per_s_median": float(np.median(rate)),
            "steps_per_s_min": float(rate.min()),
            "steps_per_s_max": float(rate.max()),
            "compile_s": self.compile_s,
            "wall_s": self.wall_s,
            "nonfinite_rollouts": int(self.nonfinite_by_chunk[-1]),
            "first_nonfinite_chunk": int(np.argmax(self.nonfinite_by_chunk > 0)) if self.nonfinite_by_chunk.any() else None,
            "drift_rel_E0_max": float(np.max(self.drift[finite] / np.abs(self.energy0[finite]))) if finite.any() else None,
            "drift_rel_E0_median": float(np.median(self.drift[finite] / np.abs(self.energy0[finite]))) if finite.any() else None,
            "drift_rel_kinetic_max": float(np.max(self.drift[finite] / self.kinetic_max[finite])) if finite.any() else None,
            "energy0_range": [float(np.min(self.energy0)), float(np.max(self.energy0))],
            "speed_max": float(np.nanmax(self.speed_max)),
            "drift_by_chunk": self.drift_by_chunk.tolist(),
            "rss_kb": self.rss_kb.tolist(),
            "peak_kb": self.peak_kb.tolist(),
            "peak_per_chunk": self.peak_reset,
            # the first chunk allocates the program's buffers; growth is measured from the second on
            "rss_growth_kb": int(self.rss_kb[-1] - self.rss_kb[min(1, len(self.rss_kb) - 1)]),
            "peak_growth_kb": int(self.peak_kb[-1] - self.peak_kb[min(1, len(self.peak_kb) - 1)]),
            # a leak grows with every chunk; the allocator's warm-up levels off
            "rss_slope_kb_per_chunk_second_half": _slope(self.rss_kb[len(self.rss_kb) // 2 :]),
        }


def _slope(values: np.ndarray) -> float | None:
    """Least-squares slope of ``values`` against their index; ``None`` for fewer than 2."""
    return float(np.polyfit(np.arange(len(values)), values, 1)[0]) if len(values) > 1 else None


def initial_states(model, rollouts: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(q0, qd0)``, each ``(rollouts, n)`` float64: ``q`` uniform within the position limits,
    ``qd`` uniform within half the velocity limits."""
    rng = np.random.default_rng(seed)
    lower, upper = np.asarray(model.limits.lower, float), np.asarray(model.limits.upper, float)
    speed = 0.5 * np.asarray(model.limits.velocity, float)
    n = model.nv
    return rng.uniform(lower, upper, (rollouts, n)), rng.uniform(-speed, speed, (rollouts, n))


def soak(
    model,
    q0,
    qd0,
    *,
    steps: int,
    chunk_steps: int,
    dt: float,
    chunk_rollouts: int | None = None,
    malloc_trim: bool = False,
    log=print,
) -> Soak:
    """Free rollouts of ``model`` (cast to the dtype of ``q0``) from ``(q0, qd0)`` (``(B, n)``)
    for ``steps`` fixed steps of ``dt``, ``chunk_steps`` at a time; see the module's docstring.
    ``malloc_trim``: return the C heap's free memory to the system before each memory reading."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    q0, qd0 = np.asarray(q0), np.asarray(qd0)
    dtype = jnp.dtype(q0.dtype)
    if steps % chunk_steps:
        raise ValueError(f"steps ({steps}) must be a multiple of chunk_steps ({chunk_steps})")
    model = model.astype(dtype)
    # the energy of the run's own parameters (float32 values exactly), evaluated in float64
    model64 = model.astype(jnp.float64)
    batch = q0.shape[0]
    ts = jnp.asarray([0.0, chunk_steps * dt], dtype)

    def one(q, qd):
        # max_steps leaves room for a last, clipped step where float32 sums of dt fall short of ts[-1]
        out = kj.simulate.rollout(model, q, qd, None, ts, dt=dt, max_steps=chunk_steps + 8, throw=False)
        return out.q[-1], out.v[-1], out.num_steps

    advance = kj.chunked_vmap(one, chunk_rollouts or batch)
    start = time.perf_counter()
    with jax.default_matmul_precision("highest"):
        chunk = jax.jit(advance).lower(jnp.asarray(q0), jnp.asarray(qd0)).compile()
    compile_s = time.perf_counter() - start
    energy = jax.jit(jax.vmap(lambda q, qd: jnp.stack([kj.kinetic_energy(model64, q, qd), kj.potential_energy(model64, q)])))

    def energies(q, qd):
        return np.asarray(energy(jnp.asarray(q, jnp.float64), jnp.asarray(qd, jnp.float64)))

    parts0 = energies(q0, qd0)
    energy0 = parts0.sum(axis=1)
    drift, kinetic_max = np.zeros(batch), parts0[:, 0].copy()
    speed_max = np.max(np.abs(qd0), axis=1).astype(float)
    chunks = steps // chunk_steps
    record = {k: np.zeros(chunks) for k in ("seconds", "drift", "nonfinite", "rss", "peak")}
    q, qd = jnp.asarray(q0), jnp.asarray(qd0)
    steps_taken, begin = 0, time.perf_counter()
    for c in range(chunks):
        reset = _reset_peak()
        tick = time.perf_counter()
        q, qd, taken = jax.block_until_ready(chunk(q, qd))
        record["seconds"][c] = time.perf_counter() - tick
        qn, qdn = np.asarray(q), np.asarray(qd)
        parts = energies(qn, qdn)
        total = parts.sum(axis=1)
        gap = np.abs(total - energy0)
        finite = np.isfinite(qn).all(axis=1) & np.isfinite(qdn).all(axis=1)
        drift = np.where(finite, np.fmax(drift, gap), np.nan)  # a rollout that went non-finite stays NaN
        kinetic_max = np.fmax(kinetic_max, parts[:, 0])
        speed_max = np.fmax(speed_max, np.max(np.abs(qdn), axis=1))
        steps_taken += int(np.asarray(taken).sum())
        record["drift"][c] = np.nanmax(gap / np.abs(energy0)) if finite.any() else np.nan
        record["nonfinite"][c] = np.count_nonzero(~finite)
        if malloc_trim:
            _malloc_trim()
        record["rss"][c], record["peak"][c] = memory_kb()
        if log and (c < 3 or c == chunks - 1 or (c + 1) % max(1, chunks // 10) == 0):
            rate = batch * chunk_steps / record["seconds"][c]
            eta = (chunks - c - 1) * (time.perf_counter() - begin) / (c + 1)
            log(
                f"  {dtype.name} chunk {c + 1:>4}/{chunks}: {rate:,.0f} steps/s, max drift/|E0| {record['drift'][c]:.2e}, "
                f"non-finite {int(record['nonfinite'][c])}, RSS {record['rss'][c] / 1024:.0f} MiB "
                f"(peak {record['peak'][c] / 1024:.0f}), about {eta / 60:.1f} min left"
            )
    return Soak(
        dtype.name,
        dt,
        chunk_steps,
        q0,
        qd0,
        qn,
        qdn,
        energy0,
        total,
        drift,
        kinetic_max,
        speed_max,
        record["drift"],
        record["nonfinite"].astype(int),
        record["seconds"],
        record["rss"].astype(int),
        record["peak"].astype(int),
        reset,
        steps_taken,
        compile_s,
        time.perf_counter() - begin,
    )


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def table(summaries: list[dict]) -> str:
    head = (
        f"{'dtype':<8} {'rollouts x steps':>18} {'steps/s median [min, max]':>34} {'non-finite':>10} "
        f"{'drift/|E0|':>10} {'drift/Tmax':>10} {'RSS MiB 2nd..last':>18} {'peak MiB 2nd..last':>18} "
        f"{'RSS kB/chunk, 2nd half':>22}"
    )
    lines = [head, "-" * len(head)]
    for s in summaries:
        second = min(1, len(s["rss_kb"]) - 1)
        drift = "-" if s["drift_rel_E0_max"] is None else f"{s['drift_rel_E0_max']:.2e}"
        slope = s["rss_slope_kb_per_chunk_second_half"]
        kin = "-" if s["drift_rel_kinetic_max"] is None else f"{s['drift_rel_kinetic_max']:.2e}"
        lines.append(
            f"{s['dtype']:<8} {s['rollouts']:>7} x {s['steps_per_rollout']:<8} "
            f"{s['steps_per_s_median']:>12,.0f} [{s['steps_per_s_min']:>9,.0f}, {s['steps_per_s_max']:>9,.0f}] "
            f"{s['nonfinite_rollouts']:>10} {drift:>10} {kin:>10} "
            f"{s['rss_kb'][second] / 1024:>8.1f}..{s['rss_kb'][-1] / 1024:<8.1f} "
            f"{s['peak_kb'][second] / 1024:>8.1f}..{s['peak_kb'][-1] / 1024:<8.1f} "
            f"{'-' if slope is None else format(slope, '.1f'):>22}"
        )
    return "\n".join(lines)


def main(argv=None) -> dict:
    """Runs the soak; returns ``{"json": path, "results": {dtype: Soak}}``."""
    args = parse(argv)
    import jax

    jax.config.update("jax_enable_x64", True)  # before any array exists; float32 runs use float32 arrays

    import kronjax as kj

    if str(ROOT) not in sys.path:  # run as a script: the environment's description is bench's
        sys.path.insert(0, str(ROOT))
    from bench import report

    meta = report.environment()
    meta["command"] = " ".join(["python tests/soak.py", *(argv if argv is not None else sys.argv[1:])])
    print(
        f"kronjax soak on {meta['machine']} ({meta['cpu']}, {meta['cores']} cores), load average "
        f"{meta['load_average_start']}: {args.rollouts} free Panda rollouts x {args.steps} steps of "
        f"dt = {args.dt:g} s (Tsit5), chunks of {args.chunk_steps} steps"
    )
    model = kj.models.panda(gravity=(0.0, 0.0, -9.81))
    q0, qd0 = initial_states(model, args.rollouts, args.seed)
    results = {}
    for name in args.dtypes:
        run = soak(
            model,
            q0.astype(name),
            qd0.astype(name),
            steps=args.steps,
            chunk_steps=args.chunk_steps,
            dt=args.dt,
            chunk_rollouts=args.chunk_rollouts,
            malloc_trim=args.malloc_trim,
        )
        results[name] = run
        print(f"  {name}: compiled in {run.compile_s:.1f} s, ran {run.wall_s:.0f} s")
    summaries = [r.summary() for r in results.values()]
    print()
    print(table(summaries))
    meta["load_average_end"] = report.load_average()
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    setup = {
        "model": "kj.models.panda(), no friction or damping (rigid bodies)",
        "gravity": [0.0, 0.0, -9.81],
        "torque": "none (free system)",
        "integrator": "diffrax Tsit5 (5th order) via kj.rollout, fixed dt",
        "initial_states": "q uniform within the position limits, qd uniform within half the velocity limits",
        "energy": "kj.kinetic_energy + kj.potential_energy at each chunk end, in float64 with the run's parameter values",
        "float32": "float32 model and states; jax.default_matmul_precision('highest')",
        "memory": "VmRSS after each chunk; VmHWM during each chunk (reset via /proc/self/clear_refs)"
        + ("; glibc malloc_trim(0) before each reading" if args.malloc_trim else ""),
    }
    out_dir = Path(args.out or RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{meta['date'][:10]}-{meta['machine']}-soak.json"
    path.write_text(json.dumps({"meta": meta, "config": config, "setup": setup, "results": summaries}, indent=1) + "\n")
    print(f"\nwrote {path}")
    return {"json": path, "results": results}


if __name__ == "__main__":
    main()
