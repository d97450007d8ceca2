"""Batched dynamics of the Panda on an NVIDIA GPU, in one run:

    python -m bench.gpu            # or: python bench/gpu.py

Inverse dynamics (``method="rnea"`` and ``"kron"``), ``coriolis_star`` and MuJoCo MJX's
``inverse`` on the same arm (``kj.to_urdf`` of ``kj.models.panda()``), at batch 10^4, 10^6 and the
largest that fits in the GPU's memory (estimated from XLA's memory analysis at 10^6, then tried,
shrinking on an out-of-memory error), in float32 (``jax_default_matmul_precision="highest"``) and
float64. Prints samples per second and writes ``bench/results/<date>-<machine>-gpu.md`` and
``.json``. The leading samples are compared with Pinocchio (on the CPU) when it is installed.
Refuses to run without a GPU (``--allow-cpu`` runs it anyway, small, to check the script).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # python bench/gpu.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "bench"  # noqa: A001

from . import models  # noqa: E402
from ._timing import Record, best_time, compile_jit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1e8  # inverse-dynamics samples per second in float64 (issue 5)


def _library(op: str) -> str:
    return "mjx" if op.startswith("mjx") else "kronjax"


def _gpu_devices(jax):
    try:
        return [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        return []


def _functions(precision: str, urdf: str, with_mjx: bool) -> dict:
    """One sample's function of ``(q, qd, qdd)`` per operation."""
    import jax.numpy as jnp

    import kronjax as kj

    model = models.panda(jnp.dtype(precision))
    fns = {
        "inverse_dynamics rnea": lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="rnea"),
        "inverse_dynamics kron": lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="kron"),
        "coriolis_star": lambda q, qd, qdd: kj.coriolis_star(model, q),
    }
    if with_mjx:
        from .peers import mjx_inverse_dynamics

        fns["mjx inverse"] = mjx_inverse_dynamics(urdf)[0]
    return fns


def _inputs(batch: int, n: int, dtype, lower, upper, seed: int = 0):
    """Random ``(q, qd, qdd)`` made on the device (no host transfer of huge batches)."""
    import jax

    @jax.jit
    def make(key):
        k1, k2, k3 = jax.random.split(key, 3)
        q = jax.random.uniform(k1, (batch, n), dtype, lower, upper)
        return q, jax.random.uniform(k2, (batch, n), dtype, -2.0, 2.0), jax.random.uniform(k3, (batch, n), dtype, -5.0, 5.0)

    return jax.block_until_ready(make(jax.random.PRNGKey(seed)))


def _bytes(compiled) -> int | None:
    try:
        m = compiled.memory_analysis()
        return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes)
    except Exception:
        return None


def _memory_limit(device) -> int | None:
    try:
        return int(device.memory_stats()["bytes_limit"])
    except Exception:
        return None


def _is_oom(exc: BaseException) -> bool:
    text = str(exc)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def _round_down(x: float) -> int:
    """Two significant digits."""
    scale = 10 ** max(0, len(str(int(x))) - 2)
    return max(1, int(x) // scale * scale)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gpu", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, nargs="+", default=[10_000, 1_000_000], help="fixed batches (default 1e4 1e6)")
    parser.add_argument("--no-max", action="store_true", help="skip the largest batch that fits")
    parser.add_argument("--max-batch", type=int, default=10**9, help="cap of the largest batch (default 1e9)")
    parser.add_argument("--memory-gib", type=float, help="the device's memory (default: what JAX reports)")
    parser.add_argument("--memory-fraction", type=float, default=0.75, help="of the GPU's memory the largest batch may use")
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--no-mjx", action="store_true")
    parser.add_argument("--check", type=int, default=64, help="leading samples compared with Pinocchio")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--allow-cpu", action="store_true", help="run without a GPU (a check of this script)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # one precision, results to this JSON
    return parser


def main(argv=None) -> int:
    """Runs each precision in a process of its own (float32 without ``jax_enable_x64``, so that no
    float64 constant of a library promotes it; and each process owns the GPU's memory pool), then
    writes the report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.child:
        return _child(args)
    import subprocess
    import tempfile

    records, meta = [], None
    with tempfile.TemporaryDirectory(prefix="kronjax-gpu-") as tmp:
        for precision in args.precisions:
            out = Path(tmp, f"{precision}.json")
            env = dict(os.environ)
            env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
            rc = subprocess.run(
                [sys.executable, "-m", "bench.gpu", *argv, "--precisions", precision, "--child", str(out)], env=env, cwd=ROOT
            ).returncode
            if rc != 0:
                return rc  # 2: no GPU (the child said so)
            result = json.loads(out.read_text())
            meta = meta or result["meta"]
            records += result["records"]
    return _write(records, meta, args)


def _child(args) -> int:
    precision = args.precisions[0]
    import jax

    jax.config.update("jax_enable_x64", precision == "float64")
    jax.config.update("jax_default_matmul_precision", "highest")  # float32 matmuls in full float32
    import jax.numpy as jnp
    import numpy as np

    from . import report

    gpus = _gpu_devices(jax)
    if not gpus and not args.allow_cpu:
        print(
            f"bench.gpu: no GPU visible to JAX (devices: {jax.devices()}). This benchmark is for an NVIDIA GPU: "
            "install JAX's CUDA build (pip install -U 'jax[cuda12]') on a machine with one, or run "
            "`python -m bench` for the CPU suite.",
            file=sys.stderr,
        )
        return 2
    device = gpus[0] if gpus else jax.devices()[0]
    meta = report.environment()
    meta["device"] = f"{device.device_kind} ({device.platform})"
    limit = int(args.memory_gib * 2**30) if args.memory_gib else _memory_limit(device)
    meta["memory_limit_bytes"] = limit
    print(
        f"\n== {precision}: bench.gpu on {meta['device']}, memory limit "
        f"{'unknown (no largest batch)' if limit is None else f'{limit / 2**30:.1f} GiB'}; jax {meta['jax']} ==",
        flush=True,
    )
    urdf = models.panda_urdf()
    with_mjx = not args.no_mjx
    if with_mjx:
        try:
            import mujoco.mjx  # noqa: F401
        except Exception as exc:
            print(f"  MJX skipped: cannot import mujoco.mjx ({type(exc).__name__}: {exc}); pip install mujoco mujoco-mjx")
            with_mjx = False
    reference = None
    try:
        from .peers import Pinocchio

        reference = Pinocchio(urdf)
    except Exception as exc:
        print(f"  no comparison with Pinocchio ({type(exc).__name__}: {exc})")

    base = models.panda()
    n = base.n_dof
    lower, upper = (np.asarray(x, float) for x in (base.limits.lower, base.limits.upper))
    records: list[Record] = []
    start_all = time.perf_counter()

    def error(op, out, q, qd, qdd):
        if reference is None:
            return None
        k = min(args.check, out.shape[0])
        q, qd, qdd, out = (np.asarray(x[:k], float) for x in (q, qd, qdd, out))
        if op == "coriolis_star":
            cqd = np.einsum("bij,bj->bi", reference.coriolis(q, qd), qd)
            return models.relative_error(np.einsum("bij,bj->bi", out, np.einsum("bi,bj->bij", qd, qd).reshape(k, -1)), cqd)
        return models.relative_error(out, reference.rnea(q, qd, qdd))

    def measure(op, fn, batch, precision, note=""):
        dtype = jnp.dtype(precision)
        q, qd, qdd = _inputs(batch, n, dtype, lower, upper)
        batched = jax.vmap(fn)
        compiled, compile_s = compile_jit(batched, q, qd, qdd)
        out = jax.block_until_ready(compiled(q, qd, qdd))
        per_call = best_time(lambda: jax.block_until_ready(compiled(q, qd, qdd)), repeats=3, min_seconds=0.2)
        if out.dtype != dtype:
            note = ", ".join(filter(None, [note, f"output is {out.dtype}"]))
        record = Record(
            "gpu",
            _library(op),
            op,
            batch,
            precision,
            per_call,
            compile_s,
            error(op, out, q, qd, qdd),
            note=note,
            extra={"bytes": _bytes(compiled)},
        )
        records.append(record)
        print(
            f"  {op:<24} {precision:<7} batch {batch:>11,}  {record.samples_per_s:>16,.0f} samples/s  "
            f"{record.seconds_per_sample * 1e9:>10.2f} ns/sample  compile {compile_s:5.2f} s  "
            f"err {'-' if record.rel_err is None else f'{record.rel_err:.1e}'}" + (f"  [{note}]" if note else "")
        )
        return record, compiled

    fns = _functions(precision, urdf, with_mjx)
    for op, fn in fns.items():
        per_sample_bytes = None
        for batch in args.batches:
            try:
                _, compiled = measure(op, fn, batch, precision)
                size = _bytes(compiled)
                if size:
                    per_sample_bytes = size / batch
            except Exception as exc:
                records.append(Record("gpu", _library(op), op, batch, precision, note=f"failed: {type(exc).__name__}"))
                print(f"  {op:<24} {precision:<7} batch {batch:>11,}  failed: {type(exc).__name__}: {str(exc)[:200]}")
        if args.no_max or not per_sample_bytes or not limit:
            continue
        batch = min(args.max_batch, _round_down(args.memory_fraction * limit / per_sample_bytes))
        if batch <= max(args.batches):
            continue
        for _ in range(4):  # the estimate misses allocator overheads: shrink on out-of-memory
            try:
                measure(op, fn, batch, precision, note="largest that fits")
                break
            except Exception as exc:
                if not _is_oom(exc):
                    print(f"  {op:<24} {precision:<7} batch {batch:>11,}  failed: {type(exc).__name__}: {str(exc)[:200]}")
                    break
                print(f"  {op:<24} {precision:<7} batch {batch:>11,}  out of memory; trying {_round_down(batch * 0.6):,}")
                batch = _round_down(batch * 0.6)

    meta["duration_s"] = time.perf_counter() - start_all
    args.child.write_text(
        json.dumps(
            {
                "meta": meta,
                "records": [
                    dataclasses.asdict(r) | {"samples_per_s": r.samples_per_s, "seconds_per_sample": r.seconds_per_sample}
                    for r in records
                ],
            },
            default=str,
        )
    )
    return 0


def _write(records: list[dict], meta: dict, args) -> int:
    from . import report

    best64 = max(
        (r["samples_per_s"] or 0 for r in records if r["method"] == "inverse_dynamics rnea" and r["precision"] == "float64"),
        default=0,
    )
    print(
        f"\ninverse dynamics (rnea), float64: {best64:,.0f} samples/s at best; goal >= {GOAL:,.0f} "
        + ("(met)" if best64 >= GOAL else "(not met)")
    )
    out_dir = Path(args.out or report.RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{meta['date'][:10]}-{meta['machine']}-gpu"
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    lines = [
        f"# kronjax on {meta['device']}, {meta['date'][:10]}, {meta['machine']}",
        "",
        f"jax {meta['jax']}, kronjax {meta['kronjax']}; float32 runs without jax_enable_x64 and with "
        'jax_default_matmul_precision="highest"; inputs made on the device.',
        "",
        "| operation | precision | batch | samples/s | ns/sample | compile s | rel. err vs Pinocchio | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in records:
        ns = r["seconds_per_sample"] and r["seconds_per_sample"] * 1e9
        lines.append(
            f"| {r['method']} | {r['precision']} | {r['batch']:,} | {fmt(r['samples_per_s'], ',.0f')} | {fmt(ns, '.2f')} | "
            f"{fmt(r['compile_s'], '.2f')} | {fmt(r['rel_err'], '.1e')} | {r['note']} |"
        )
    lines += ["", f"Goal: >= {GOAL:.0e} inverse-dynamics samples/s in float64; best measured {best64:.3g}."]
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    Path(f"{stem}.json").write_text(
        json.dumps({"meta": meta, "args": {k: str(v) for k, v in vars(args).items()}, "records": records}, indent=1, default=str)
        + "\n"
    )
    print(f"wrote {stem}.md\nwrote {stem}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
