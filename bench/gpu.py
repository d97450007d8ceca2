"""Batched dynamics and kinematics of the Panda on an NVIDIA GPU, in one run:

    python -m bench.gpu            # or: python bench/gpu.py
    python -m bench.gpu --verify bench/results/<stem>.json   # later, where Pinocchio is installed

Inverse dynamics (``method="rnea"`` and ``"kron"``), ``coriolis_star``, forward dynamics, the mass
matrix, every body's Jacobians and Hessians (``frame="base"``), the derivatives of inverse and
forward dynamics, MuJoCo MJX's ``inverse`` and frax's ``rnea`` and ``forward_dynamics`` (CRBA and
a Cholesky solve), all on the same arm (``kj.to_urdf`` of
``kj.models.panda()``), at batch 10^4 and 10^6, and for the operations of ``--largest`` also at
the largest batch that fits in the GPU's memory (estimated from XLA's memory analysis at 10^6,
then tried, shrinking on an out-of-memory error); in float32 (``jax_default_matmul_precision=
"highest"``) and float64. Prints samples per second and writes
``bench/results/<date>-gpu-<device>.md``, ``.json`` and ``-samples.npz`` (the leading samples of
each operation, inputs and outputs).

Each result is compared with Pinocchio (on the CPU) on those leading samples: at once when
Pinocchio is installed beside the GPU, else by ``--verify`` on another machine, which reads the
``-samples.npz`` and rewrites the report with the errors. Refuses to run without a GPU
(``--allow-cpu`` runs it anyway, small, to check the script).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
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

# Each operation is a function of one sample ``(q, qd, x)``: ``x`` is qdd, or tau for the
# forward-dynamics operations (uniform in [-5, 5] either way).
OPERATIONS = (
    "inverse_dynamics rnea",
    "inverse_dynamics kron",
    "coriolis_star",
    "forward_dynamics",
    "mass_matrix",
    "jacobians",
    "hessians",
    "inverse_dynamics_derivatives",
    "forward_dynamics_derivatives",
    "mjx inverse",
    "frax inverse",
    "frax forward",
)
LARGEST = ("inverse_dynamics rnea", "inverse_dynamics kron", "coriolis_star", "forward_dynamics", "mjx inverse")
PEERS = {"mjx": ("mujoco.mjx", "pip install mujoco mujoco-mjx"), "frax": ("frax", "pip install frax")}


def _library(op: str) -> str:
    peer = op.split()[0]
    return peer if peer in PEERS else "kronjax"


def _gpu_devices(jax):
    try:
        return [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        return []


def _functions(precision: str, urdf: str, names) -> dict:
    """One sample's function of ``(q, qd, x)`` for each operation of ``names``."""
    import jax.numpy as jnp

    import kronjax as kj

    model = models.panda(jnp.dtype(precision))
    fns = {
        "inverse_dynamics rnea": lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="rnea"),
        "inverse_dynamics kron": lambda q, qd, qdd: kj.inverse_dynamics(model, q, qd, qdd, method="kron"),
        "coriolis_star": lambda q, qd, qdd: kj.coriolis_star(model, q),
        "forward_dynamics": lambda q, qd, tau: kj.forward_dynamics(model, q, qd, tau),
        "mass_matrix": lambda q, qd, qdd: kj.mass_matrix(model, q),
        "jacobians": lambda q, qd, qdd: kj.jacobians(model, q),
        "hessians": lambda q, qd, qdd: kj.hessians(model, q),
        "inverse_dynamics_derivatives": lambda q, qd, qdd: kj.inverse_dynamics_derivatives(model, q, qd, qdd),
        "forward_dynamics_derivatives": lambda q, qd, tau: kj.forward_dynamics_derivatives(model, q, qd, tau),
    }
    if "mjx inverse" in names:
        from .peers import mjx_inverse_dynamics

        fns["mjx inverse"] = mjx_inverse_dynamics(urdf)[0]
    if {"frax inverse", "frax forward"} & set(names):
        from .peers import frax_functions

        frax = frax_functions(urdf)
        fns["frax inverse"] = frax["inverse_dynamics"]
        fns["frax forward"] = frax["forward_dynamics"]
    return {name: fns[name] for name in names}


def _references(samples: dict) -> dict:
    """Pinocchio's values of each saved operation on its leading samples:
    ``{key: tuple of arrays}`` in the layout of kronjax's output (``coriolis_star``: C* (qd kron
    qd) against Pinocchio's C qd, so the saved output is contracted first, in :func:`_errors`)."""
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)  # the URDF and the body frames from the float64 model
    from .peers import Pinocchio
    from .suite import Suite

    pin = Pinocchio(models.panda_urdf())
    frames = None
    out = {}
    for key in {k.rsplit("/", 1)[0] for k in samples}:
        op = key.split("|")[0]
        q, qd, x = (np.asarray(samples[f"{key}/{name}"], float) for name in ("q", "qd", "x"))
        if op in ("inverse_dynamics rnea", "inverse_dynamics kron", "mjx inverse", "frax inverse"):
            out[key] = (pin.rnea(q, qd, x),)
        elif op == "coriolis_star":
            out[key] = (np.einsum("bij,bj->bi", pin.coriolis(q, qd), qd),)
        elif op in ("forward_dynamics", "frax forward"):
            out[key] = (pin.aba(q, qd, x),)
        elif op == "mass_matrix":
            out[key] = (pin.rnea_derivatives(q, qd, x)[2],)
        elif op in ("jacobians", "hessians"):
            if frames is None:
                frames = Suite.body_frames(pin, models.panda(), q[0])
            out[key] = getattr(pin, op)(q, frames)
        elif op == "inverse_dynamics_derivatives":
            out[key] = pin.rnea_derivatives(q, qd, x)
        elif op == "forward_dynamics_derivatives":
            out[key] = pin.aba_derivatives(q, qd, x)
    return out


def _errors(samples: dict, references: dict) -> dict:
    """``{key: max relative error over the output's arrays}`` (:func:`bench.models.relative_error`)."""
    import numpy as np

    errors = {}
    for key, expected in references.items():
        got = [samples[f"{key}/out{i}"] for i in range(len(expected))]
        if key.startswith("coriolis_star"):
            qd = np.asarray(samples[f"{key}/qd"], float)
            got = [np.einsum("bij,bj->bi", got[0], np.einsum("bi,bj->bij", qd, qd).reshape(len(qd), -1))]
        errors[key] = max(models.relative_error(g, e) for g, e in zip(got, expected))
    return errors


def _device_slug(device: str) -> str:
    """``"NVIDIA H200 (gpu)"`` -> ``"nvidia-h200"``: the results' file names (a device machine's
    host name says nothing of its GPU)."""
    return re.sub(r"[^a-z0-9]+", "-", device.split(" (")[0].lower()).strip("-")


def _key(op: str, precision: str, batch: int) -> str:
    return f"{op}|{precision}|{batch}"


def _inputs(batch: int, n: int, dtype, lower, upper, seed: int = 0):
    """Random ``(q, qd, x)`` made on the device (no host transfer of huge batches)."""
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
    parser.add_argument("--operations", nargs="+", default=list(OPERATIONS), choices=OPERATIONS, metavar="OP")
    parser.add_argument(
        "--largest",
        nargs="*",
        default=list(LARGEST),
        choices=OPERATIONS,
        metavar="OP",
        help="operations also run at the largest batch that fits (default: the dynamics without derivatives)",
    )
    parser.add_argument("--max-batch", type=int, default=10**9, help="cap of the largest batch (default 1e9)")
    parser.add_argument("--memory-gib", type=float, help="the device's memory (default: what JAX reports)")
    parser.add_argument("--memory-fraction", type=float, default=0.75, help="of the GPU's memory the largest batch may use")
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--no-peers", action="store_true", help="kronjax alone (no MJX, no frax)")
    parser.add_argument("--check", type=int, default=64, help="leading samples saved and compared with Pinocchio")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--allow-cpu", action="store_true", help="run without a GPU (a check of this script)")
    parser.add_argument(
        "--verify", type=Path, metavar="JSON", help="compare a run's saved samples with Pinocchio, rewrite its report"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # one precision, results to this JSON
    return parser


def main(argv=None) -> int:
    """Runs each precision in a process of its own (float32 without ``jax_enable_x64``, so that no
    float64 constant of a library promotes it; and each process owns the GPU's memory pool), then
    compares the saved samples with Pinocchio where it is installed and writes the report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.child:
        return _child(args)
    if args.verify:
        return _verify(args.verify)
    import subprocess
    import tempfile

    import numpy as np

    records, meta, samples = [], None, {}
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
            with np.load(out.with_suffix(".npz")) as saved:
                samples.update(saved)
    out_dir = Path(args.out or ROOT / "bench" / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{meta['date'][:10]}-gpu-{_device_slug(meta['device'])}"
    np.savez_compressed(f"{stem}-samples.npz", **samples)
    print(f"wrote {stem}-samples.npz")
    try:
        errors = _errors(samples, _references(samples))
    except ImportError as exc:
        errors = None
        print(
            f"\nno comparison with Pinocchio here ({exc}): run `python -m bench.gpu --verify {stem}.json` where it is installed"
        )
    return _write(records, meta, {k: str(v) for k, v in vars(args).items()}, stem, errors)


def _verify(path: Path) -> int:
    """Errors of a run's saved samples against Pinocchio, written into its report."""
    import numpy as np

    result = json.loads(path.read_text())
    stem = path.with_suffix("")
    with np.load(f"{stem}-samples.npz") as saved:
        samples = dict(saved)
    errors = _errors(samples, _references(samples))
    return _write(result["records"], result["meta"], result["args"], stem, errors)


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
    names = [op for op in args.operations if not (args.no_peers and _library(op) in PEERS)]
    for peer, (module, install) in PEERS.items():
        if any(_library(op) == peer for op in names):
            try:
                importlib.import_module(module)
            except Exception as exc:
                print(f"  {peer} skipped: cannot import {module} ({type(exc).__name__}: {exc}); {install}")
                names = [op for op in names if _library(op) != peer]

    base = models.panda()
    n = base.n_dof
    lower, upper = (np.asarray(x, float) for x in (base.limits.lower, base.limits.upper))
    records: list[Record] = []
    samples: dict[str, np.ndarray] = {}  # the leading samples of each operation's first batch
    start_all = time.perf_counter()

    def measure(op, fn, batch, precision, note=""):
        dtype = jnp.dtype(precision)
        inputs = _inputs(batch, n, dtype, lower, upper)
        batched = jax.vmap(fn)
        compiled, compile_s = compile_jit(batched, *inputs)
        out = jax.block_until_ready(compiled(*inputs))
        per_call = best_time(lambda: jax.block_until_ready(compiled(*inputs)), repeats=3, min_seconds=0.2)
        outputs = out if isinstance(out, tuple) else (out,)
        if any(o.dtype != dtype for o in outputs):
            note = ", ".join(filter(None, [note, f"output is {outputs[0].dtype}"]))
        key = _key(op, precision, batch)
        if not any(k.startswith(f"{op}|{precision}|") for k in samples):
            k = min(args.check, batch)
            for name, value in [*zip(("q", "qd", "x"), inputs), *((f"out{i}", o) for i, o in enumerate(outputs))]:
                samples[f"{key}/{name}"] = np.asarray(value[:k])
        record = Record(
            "gpu",
            _library(op),
            op,
            batch,
            precision,
            per_call,
            compile_s,
            note=note,
            extra={"bytes": _bytes(compiled), "key": key},
        )
        records.append(record)
        print(
            f"  {op:<30} {precision:<7} batch {batch:>11,}  {record.samples_per_s:>16,.0f} samples/s  "
            f"{record.seconds_per_sample * 1e9:>10.2f} ns/sample  compile {compile_s:5.2f} s" + (f"  [{note}]" if note else ""),
            flush=True,
        )
        return compiled

    for op, fn in _functions(precision, urdf, names).items():
        per_sample_bytes = None
        for batch in args.batches:
            try:
                compiled = measure(op, fn, batch, precision)
                size = _bytes(compiled)
                if size:
                    per_sample_bytes = size / batch
            except Exception as exc:
                records.append(Record("gpu", _library(op), op, batch, precision, note=f"failed: {type(exc).__name__}"))
                print(f"  {op:<30} {precision:<7} batch {batch:>11,}  failed: {type(exc).__name__}: {str(exc)[:200]}")
        if op not in args.largest or not per_sample_bytes or not limit:
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
                    print(f"  {op:<30} {precision:<7} batch {batch:>11,}  failed: {type(exc).__name__}: {str(exc)[:200]}")
                    break
                print(f"  {op:<30} {precision:<7} batch {batch:>11,}  out of memory; trying {_round_down(batch * 0.6):,}")
                batch = _round_down(batch * 0.6)

    meta["duration_s"] = time.perf_counter() - start_all
    np.savez(args.child.with_suffix(".npz"), **samples)
    args.child.write_text(json.dumps({"meta": meta, "records": [r.as_dict() for r in records]}, default=str))
    return 0


def _write(records: list[dict], meta: dict, args: dict, stem: Path, errors: dict | None) -> int:
    """The report (``stem``.md and .json), with each record's error against Pinocchio where
    ``errors`` has its operation and precision (measured on the first batch's leading samples)."""
    for r in records:
        key = r.get("extra", {}).get("key")
        if errors is not None and key is not None:
            op, precision, _ = key.split("|")
            first = next((k for k in errors if k.startswith(f"{op}|{precision}|")), None)
            r["rel_err"] = errors.get(first)
    best64 = max(
        (r["samples_per_s"] or 0 for r in records if r["method"] == "inverse_dynamics rnea" and r["precision"] == "float64"),
        default=0,
    )
    print(
        f"\ninverse dynamics (rnea), float64: {best64:,.0f} samples/s at best; goal >= {GOAL:,.0f} "
        + ("(met)" if best64 >= GOAL else "(not met)")
    )
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    checked = (
        "none (Pinocchio was not installed: `python -m bench.gpu --verify` fills them)"
        if errors is None
        else "Pinocchio on the CPU"
    )
    lines = [
        f"# kronjax on {meta['device']}, {meta['date'][:10]}",
        "",
        f"jax {meta['jax']}, kronjax {meta['kronjax']}; float32 runs without jax_enable_x64 and with "
        'jax_default_matmul_precision="highest"; inputs made on the device. Errors (max |got - expected| / max '
        f"|expected| over the output's arrays, on the first batch's {args.get('check', 64)} leading samples): {checked}.",
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
    Path(f"{stem}.json").write_text(json.dumps({"meta": meta, "args": args, "records": records}, indent=1, default=str) + "\n")
    print(f"wrote {stem}.md\nwrote {stem}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
