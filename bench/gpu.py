"""Batched dynamics and kinematics of the Panda and of legged robots on an NVIDIA GPU, in one run:

    python -m bench.gpu            # or: python bench/gpu.py
    python -m bench.gpu --verify <stem>.json [--samples <stem>-samples.npz]   # where Pinocchio is installed

The Panda's batched operations (``OPERATIONS``: kronjax's dynamics, kinematics and derivatives,
MJX's and frax's dynamics) and the legged robots' of ``--robots`` (``LEGGED_OPERATIONS`` on ANYmal,
the G1 and Talos of ``example-robot-data``, with a free-flyer, as the CPU section ``legged``) at
batch 10^4 and 10^6, and for those of ``--largest`` also at the
largest batch that fits in the GPU's memory (estimated from XLA's memory analysis, shrunk on an
out-of-memory error), in float32 (``jax_default_matmul_precision="highest"``) and float64. Writes
``bench/results/<date>-gpu-<device>[-<tag>].md``, ``.json`` and ``-samples.npz`` (each batch's
leading and trailing samples, inputs and outputs, and the URDF; not committed).

Each row is then compared with Pinocchio (on the CPU) on its batch's saved samples: at once where
Pinocchio is installed beside the GPU, else by ``--verify`` on another machine, which reads the
``-samples.npz`` the run wrote beside its report (or the file ``--samples`` names; the dumps are not
committed: keep them where you ran) and rewrites the report with the errors and who checked them. Refuses to run without a GPU
(``--allow-cpu`` runs it anyway: a check of the script, with small ``--batches``).
"""

from __future__ import annotations

import argparse
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
from .legged import ROBOTS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1e8  # inverse-dynamics samples per second in float64 (the goal of the GPU section)

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
LARGEST = (
    "inverse_dynamics rnea",
    "inverse_dynamics kron",
    "coriolis_star",
    "forward_dynamics",
    "mjx inverse",
    "frax inverse",
    "frax forward",
)
PEERS = ("mjx", "frax")
# each robot's operations (a row's method: "<robot> <operation>"), as in the CPU section `legged`;
# joint_jacobians (the compact form) rather than every body's dense Jacobians
LEGGED_OPERATIONS = (
    "mass_matrix",
    "inverse_dynamics",
    "forward_dynamics",
    "joint_jacobians",
    "inverse_dynamics_derivatives",
    "forward_dynamics_derivatives",
)


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


def _float64_urdf() -> str:
    """The benchmark's URDF written from the float64 model (in a process that runs float32, the
    model's parameters would be rounded to float32 first)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return models.panda_urdf()


def _check(samples: dict) -> tuple[dict, dict]:
    """Each saved batch against Pinocchio on the CPU: ``({key: max relative error over the
    output's arrays}, what checked them)``. The URDF is the one saved with the samples (older files
    have none: then this checkout's), kronjax's body frames those of this checkout's float64 model.
    ``coriolis_star`` is compared as ``C* (qd kron qd)`` with Pinocchio's ``C qd``."""
    import datetime

    import jax
    import numpy as np

    import kronjax

    jax.config.update("jax_enable_x64", True)  # kronjax's body frames, from the float64 model
    from . import report
    from .peers import Pinocchio
    from .suite import Suite

    urdf = str(samples["urdf"]) if "urdf" in samples else _float64_urdf()
    pin, frames, errors, robots = Pinocchio(urdf), None, {}, {}
    for key in sorted({k.rsplit("/", 1)[0] for k in samples if "|" in k}):
        op = key.split("|")[0]
        q, qd, x = (np.asarray(samples[f"{key}/{name}"], float) for name in ("q", "qd", "x"))
        got = [np.asarray(samples[f"{key}/out{i}"], float) for i in range(3) if f"{key}/out{i}" in samples]
        if op.split()[0] in ROBOTS:
            name, operation = op.split()
            errors[key] = _legged_error(robots, name, operation, (q, qd, x), got)
            continue
        if op in ("inverse_dynamics rnea", "inverse_dynamics kron", "mjx inverse", "frax inverse"):
            expected = (pin.rnea(q, qd, x),)
        elif op == "coriolis_star":
            expected = (np.einsum("bij,bj->bi", pin.coriolis(q, qd), qd),)
            got = [np.einsum("bij,bj->bi", got[0], np.einsum("bi,bj->bij", qd, qd).reshape(len(qd), -1))]
        elif op in ("forward_dynamics", "frax forward"):
            expected = (pin.aba(q, qd, x),)
        elif op == "mass_matrix":
            expected = (pin.rnea_derivatives(q, qd, x)[2],)
        elif op in ("jacobians", "hessians"):
            if frames is None:
                frames = Suite.body_frames(pin, models.panda(), q[0])
            expected = getattr(pin, op)(q, frames)
        elif op == "inverse_dynamics_derivatives":
            expected = pin.rnea_derivatives(q, qd, x)
        elif op == "forward_dynamics_derivatives":
            expected = pin.aba_derivatives(q, qd, x)
        else:
            raise ValueError(f"bench.gpu has no Pinocchio reference for {op!r}")
        errors[key] = max(models.relative_error(g, e) for g, e in zip(got, expected, strict=True))
    checked = {
        "pinocchio": pin.pin.__version__,
        "kronjax": kronjax.__version__,
        "machine": report.machine_name(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    return errors, checked


def _legged_error(robots: dict, name: str, operation: str, inputs, got) -> float:
    """The largest relative error of a legged robot's saved outputs against Pinocchio's
    (:func:`bench.legged.pinocchio_outputs`, in kronjax's layout); ``robots`` caches each robot's
    models and references."""
    import numpy as np

    from .floating import Humanoid
    from .legged import ARGUMENTS, pinocchio_outputs, robot_file

    if name not in robots:
        relative, mimic = ROBOTS[name]
        robot = Humanoid(robot_file(relative), 1, 1, threads=1, mimic=mimic)
        robots[name] = robot, pinocchio_outputs(robot)
    robot, outputs = robots[name]
    q, qd, x = inputs
    rows = zip(robot.pin_q(q), robot.pin_v(qd), robot.pin_v(x))
    arity = len(ARGUMENTS[operation])  # (q,) or (q, v, vd) or (q, v, tau): a prefix of the saved inputs
    expected = [np.stack(e) for e in zip(*(outputs[operation](*row[:arity]) for row in rows))]
    return max(models.relative_error(g, e) for g, e in zip(got, expected))


def _legged(name: str, precision: str, operations):
    """A legged robot's functions of one sample ``(q, qd, x)`` for ``operations`` (of :data:`LEGGED_OPERATIONS`; ``x``
    is vd or tau) and a maker of its random batches on the device: ``q`` from
    :func:`kronjax.random_configuration`, ``qd`` and ``x`` standard normal."""
    import functools

    import jax
    import jax.numpy as jnp

    import kronjax as kj

    from .legged import ARGUMENTS, robot_file

    relative, mimic = ROBOTS[name]
    model = kj.load_urdf(robot_file(relative), floating_base=True, mimic=mimic).astype(jnp.dtype(precision))

    def function(operation):
        fn = functools.partial(getattr(kj, operation), model)
        return fn if len(ARGUMENTS[operation]) == 3 else lambda q, qd, x: fn(q)

    def make_inputs(batch, dtype):
        @jax.jit
        def make(key):
            k1, k2, k3 = jax.random.split(key, 3)
            q = jax.vmap(lambda k: kj.random_configuration(model, k))(jax.random.split(k1, batch)).astype(dtype)
            return q, jax.random.normal(k2, (batch, model.nv), dtype), jax.random.normal(k3, (batch, model.nv), dtype)

        return jax.block_until_ready(make(jax.random.PRNGKey(0)))

    return {operation: function(operation) for operation in operations}, make_inputs


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
    parser.add_argument(
        "--operations",
        nargs="+",
        default=list(OPERATIONS),
        choices=OPERATIONS,
        metavar="OP",
        help="what to time, quoted where a name has a space (default: all): " + "; ".join(OPERATIONS),
    )
    parser.add_argument(
        "--largest",
        nargs="*",
        default=list(LARGEST),
        choices=OPERATIONS,
        metavar="OP",
        help="operations also run at the largest batch that fits (default: inverse and forward dynamics, C*, the peers)",
    )
    parser.add_argument("--max-batch", type=int, default=10**9, help="cap of the largest batch (default 1e9)")
    parser.add_argument("--memory-gib", type=float, help="the device's memory (default: what JAX reports)")
    parser.add_argument(
        "--memory-fraction",
        type=float,
        default=0.75,
        help="of JAX's memory pool (itself 75%% of the GPU's) the largest batch may use",
    )
    parser.add_argument(
        "--robots",
        nargs="*",
        default=["anymal", "g1"],
        choices=list(ROBOTS),
        help="legged robots of example-robot-data whose operations are timed too (default: anymal g1; none: no legged rows)",
    )
    parser.add_argument(
        "--robot-operations",
        nargs="+",
        default=list(LEGGED_OPERATIONS),
        choices=LEGGED_OPERATIONS,
        metavar="OP",
        help="the legged robots' operations (default: all): " + ", ".join(LEGGED_OPERATIONS),
    )
    parser.add_argument("--precisions", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--no-peers", action="store_true", help="kronjax alone (no MJX, no frax)")
    parser.add_argument("--check", type=int, default=64, help="leading and trailing samples of each batch saved and checked")
    parser.add_argument("--tag", help="a suffix of the results' file names (a second run on the same day and GPU)")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--allow-cpu", action="store_true", help="run without a GPU (a check of this script)")
    parser.add_argument(
        "--verify", type=Path, metavar="JSON", help="compare a run's saved samples with Pinocchio, rewrite its report"
    )
    parser.add_argument("--samples", type=Path, metavar="NPZ", help="the run's sample dumps (default <JSON stem>-samples.npz)")
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
        return _verify(args.verify, args.samples)
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
    from . import report

    out_dir = Path(args.out or report.RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / "-".join(filter(None, [meta["date"][:10], "gpu", _device_slug(meta["device"]), args.tag]))
    samples["urdf"] = np.array(_float64_urdf())
    np.savez_compressed(f"{stem}-samples.npz", **samples)
    print(f"wrote {stem}-samples.npz")
    options = {k: str(v) for k, v in vars(args).items() if k not in ("child", "verify", "samples")}
    _write(records, meta, options, stem)  # the timings are kept whatever the check does
    try:
        errors, meta["checked"] = _check(samples)
    except Exception as exc:  # no Pinocchio here (the GPU machine), or a broken one
        print(
            f"\nno comparison with Pinocchio here ({type(exc).__name__}: {exc}): run `python -m bench.gpu --verify {stem}.json` where it is installed"
        )
        return 0
    return _write(records, meta, options, stem, errors)


def _verify(path: Path, samples_path: Path | None = None) -> int:
    """Errors of a run's saved samples (``samples_path``, default beside the report) against
    Pinocchio, written into its report."""
    import numpy as np

    stem = path.with_suffix("")
    samples_path = samples_path or Path(f"{stem}-samples.npz")
    for what, p in (("report", path), ("sample dumps", samples_path)):
        if not p.is_file():
            print(f"bench.gpu --verify: no {what} at {p} (the run on the GPU writes both; --samples names the dumps)")
            return 2
    result = json.loads(path.read_text())
    with np.load(samples_path) as saved:
        samples = dict(saved)
    errors, result["meta"]["checked"] = _check(samples)
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
    from .peers import detect

    meta["peers"] = {}
    for peer, info in detect(sorted({_library(op) for op in names} - {"kronjax"})).items():
        if info["available"]:
            meta["peers"][peer] = info["version"]
        else:
            print(f"  {peer} {info['note']}")
            names = [op for op in names if _library(op) != peer]

    base = models.panda()
    n = base.nv
    lower, upper = (np.asarray(x, float) for x in (base.limits.lower, base.limits.upper))
    records: list[Record] = []
    samples: dict[str, np.ndarray] = {}  # each batch's leading and trailing samples, by _key
    start_all = time.perf_counter()

    def measure(op, fn, batch, note="", make_inputs=None):
        dtype = jnp.dtype(precision)
        inputs = make_inputs(batch, dtype) if make_inputs else _inputs(batch, n, dtype, lower, upper)
        batched = jax.vmap(fn)
        compiled, compile_s = compile_jit(batched, *inputs)
        out = jax.block_until_ready(compiled(*inputs))
        per_call = best_time(lambda: jax.block_until_ready(compiled(*inputs)), repeats=3, min_seconds=0.2)
        outputs = tuple(jax.tree.leaves(out))
        if any(o.dtype != dtype for o in outputs):
            note = ", ".join(filter(None, [note, f"outputs are {sorted({str(o.dtype) for o in outputs})}"]))
        key = _key(op, precision, batch)
        # the leading and trailing samples: the end of a batch is where an indexing fault would show
        rows = np.unique(np.r_[0 : min(args.check, batch), max(0, batch - args.check) : batch])
        for name, value in [*zip(("q", "qd", "x"), inputs), *((f"out{i}", o) for i, o in enumerate(outputs))]:
            samples[f"{key}/{name}"] = np.asarray(value[rows])
        size = _bytes(compiled)
        record = Record(
            "gpu",
            _library(op),
            op,
            batch,
            precision,
            per_call,
            compile_s,
            note=note,
            extra={"bytes": size, "key": key},
        )
        records.append(record)
        print(
            f"  {op:<30} {precision:<7} batch {batch:>11,}  {record.samples_per_s:>16,.0f} samples/s  "
            f"{record.seconds_per_sample * 1e9:>10.2f} ns/sample  compile {compile_s:5.2f} s" + (f"  [{note}]" if note else ""),
            flush=True,
        )
        return size

    rows = [(op, fn, None) for op, fn in _functions(precision, urdf, names).items()]
    for name in args.robots:
        try:
            functions, make_inputs = _legged(name, precision, args.robot_operations)
        except Exception as exc:  # example-robot-data missing: the Panda's rows stand
            print(f"  {name}: skipped ({type(exc).__name__}: {exc})")
            continue
        rows += [(f"{name} {operation}", fn, make_inputs) for operation, fn in functions.items()]

    for op, fn, make_inputs in rows:
        per_sample_bytes = None
        for batch in args.batches:
            try:
                size = measure(op, fn, batch, make_inputs=make_inputs)
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
                measure(op, fn, batch, note="largest that fits", make_inputs=make_inputs)
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


def _write(records: list[dict], meta: dict, args: dict, stem: Path, errors: dict | None = None) -> int:
    """The report (``stem``.md and .json), each record with its batch's error against Pinocchio
    where ``errors`` has one (``meta["checked"]`` says by whom)."""
    for r in records:
        if errors is not None:
            r["rel_err"] = errors.get(r.get("extra", {}).get("key"))
    best64 = max(
        (r["samples_per_s"] or 0 for r in records if r["method"] == "inverse_dynamics rnea" and r["precision"] == "float64"),
        default=0,
    )
    print(
        f"\ninverse dynamics (rnea), float64: {best64:,.0f} samples/s at best; goal >= {GOAL:,.0f} "
        + ("(met)" if best64 >= GOAL else "(not met)")
    )
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    by = meta.get("checked")
    checked = (
        f"Pinocchio {by['pinocchio']} on the CPU ({by['machine']}, {by['date'][:10]}, kronjax {by['kronjax']})"
        if by
        else "none yet (no Pinocchio where it ran: `python -m bench.gpu --verify` fills them)"
    )
    peers = ", ".join(v if " " in v else f"{k} {v}" for k, v in meta.get("peers", {}).items())  # older runs: {dist: version}
    lines = [
        f"# kronjax on {meta['device']}, {meta['date'][:10]}",
        "",
        f"jax {meta['jax']}, kronjax {meta['kronjax']}" + (f", {peers}" if peers else "") + "; float32 runs without "
        'jax_enable_x64 and with jax_default_matmul_precision="highest"; inputs made on the device. Errors (max |got - '
        "expected| / max |expected| over the output's arrays, on the samples saved from the row's batch in "
        f"`-samples.npz`; a row without one had none saved): {checked}.",
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
