"""The results of a run: ``bench/results/<date>-<machine>.md`` (tables with ratios against
Pinocchio and the peers), ``.json`` (every raw number) and ``-scaling.png``."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import re
from pathlib import Path

import numpy as np

from ._timing import Record

RESULTS = Path(__file__).resolve().parent / "results"
# the operations of the `kinematics` and `derivatives` sections, each with its table in the report
PER_CALL = {
    "jacobians": ("Jacobians J_T, J_R of all bodies (Panda, base frame)", "computeJointJacobians"),
    "hessians": (
        "Hessians H_T, H_R of all bodies (Panda, base frame); Pinocchio's call computes the Jacobians too",
        "computeJointKinematicHessians",
    ),
    "jacobians_dot": (
        "Time derivatives of the Jacobians of all bodies (Panda, base frame)",
        "computeJointJacobiansTimeVariation",
    ),
    "inverse_dynamics_derivatives": ("Derivatives of inverse dynamics d tau / d(q, qd, qdd) (Panda)", "computeRNEADerivatives"),
    "forward_dynamics_derivatives": ("Derivatives of forward dynamics d qdd / d(q, qd, tau) (Panda)", "computeABADerivatives"),
}

# the operations of the `floating` section and Pinocchio's function of each
FLOATING = {"floating_inverse_dynamics": "rnea", "floating_forward_dynamics": "aba"}
# the kronjax functions of the `legged` section (operation "legged_<name>") and Pinocchio's function of each
LEGGED = {
    "mass_matrix": "crba",
    "inverse_dynamics": "rnea",
    "forward_dynamics": "aba",
    "jacobians": "computeJointJacobians",
    "joint_jacobians": "computeJointJacobians",
    "inverse_dynamics_derivatives": "computeRNEADerivatives",
    "forward_dynamics_derivatives": "computeABADerivatives",
}
# the methods of the `second_order` section (operation "second_order"; library kronjax, then the
# floor of writing the outputs (jax), then Pinocchio's C++) and the method of the same robot
# whose time the report divides each one's by (None: none)
SECOND_ORDER = {
    "inverse_dynamics_derivatives": "computeRNEADerivatives",
    "inverse_dynamics_second_derivatives": "ComputeRNEASecondOrderDerivatives",
    "inverse_dynamics_hessian": "inverse_dynamics_derivatives",
    "jax.hessian(lam @ inverse_dynamics), analytic": "inverse_dynamics_hessian",
    "jax.hessian(lam @ inverse_dynamics), autodiff": "inverse_dynamics_hessian",
    "writing 4 nv^3 float64 (floor)": "inverse_dynamics_second_derivatives",
    "computeRNEADerivatives": None,
    "ComputeRNEASecondOrderDerivatives": "computeRNEADerivatives",
    "setZero of its 4 tensors (floor)": "ComputeRNEASecondOrderDerivatives",
}


# --------------------------------------------------------------------------------------------
# the machine
# --------------------------------------------------------------------------------------------


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_name() -> str:
    """``platform.node()``, or the CPU's name when there is none, as a file-name fragment."""
    name = platform.node() or cpu_name()
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "machine"


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def environment() -> dict:
    import jax

    import kronjax

    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_name(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "kronjax": kronjax.__version__,
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
        "load_average_start": load_average(),
    }


# --------------------------------------------------------------------------------------------
# derived numbers
# --------------------------------------------------------------------------------------------


def find(records: list[Record], **fields) -> Record | None:
    """The first timed record whose fields equal ``fields``."""
    for r in records:
        if r.seconds_per_call is not None and all(getattr(r, k) == v for k, v in fields.items()):
            return r
    return None


def fit_exponent(ns, seconds) -> float:
    """Slope of the least-squares line through ``(log n, log t)``."""
    return float(np.polyfit(np.log(ns), np.log(seconds), 1)[0])


def exponents(records: list[Record]) -> list[dict]:
    """Per scaling series (library, method): n, time per sample, the fitted exponent over all n
    and the slope between the two largest n."""
    series: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        if r.operation == "scaling" and r.seconds_per_call is not None:
            series.setdefault((r.library, r.method), []).append(r)
    out = []
    for (library, method), rs in series.items():
        rs = sorted(rs, key=lambda r: r.n_dof)
        ns, ts = [r.n_dof for r in rs], [r.seconds_per_sample for r in rs]
        entry = {
            "library": library,
            "method": method,
            "n": ns,
            "seconds_per_sample": ts,
            "batch": [r.batch for r in rs],
            "exponent": None,
            "last_slope": None,
        }
        if len(ns) >= 2:
            entry["exponent"] = fit_exponent(ns, ts)
            entry["last_slope"] = fit_exponent(ns[-2:], ts[-2:])
        out.append(entry)
    return out


def goals(records: list[Record], config) -> list[dict]:
    """The project's speed goals as ratios measured in this run (float64; Panda, and the humanoid of section
    ``floating``); a goal whose measurements did not run is left out."""
    big, f64 = config.big, "float64"
    pin = dict(library="pinocchio", precision=f64)
    ours = lambda operation, method=None, **k: find(  # noqa: E731
        records, operation=operation, library="kronjax", precision=f64, **({"method": method} if method else {}), **k
    )
    rnea, fd = ours("inverse_dynamics", "rnea", batch=big), ours("forward_dynamics", batch=big)
    mjx = [r for r in records if r.library == "mjx" and r.precision == f64 and r.seconds_per_call is not None]
    mjx_best = min(mjx, key=lambda r: r.seconds_per_sample) if mjx else None
    rows = []

    def add(goal, value, target, unit, met=None):
        if met is None and target is not None:
            met = value >= target if unit == "x samples/s" else value <= target
        rows.append({"goal": goal, "value": value, "target": target, "unit": unit, "met": met})

    def faster(what, a, b, target):  # a's samples/s over b's
        if a and b:
            add(what, b.seconds_per_sample / a.seconds_per_sample, target, "x samples/s")

    def slower(what, a, b, target):  # a's time over b's
        if a and b:
            add(what, a.seconds_per_sample / b.seconds_per_sample, target, "x time")

    t = config.threads
    inverse = dict(operation="inverse_dynamics", **pin)
    faster(
        f"kronjax rnea vs Pinocchio rneaInParallel({t}), batch {big}",
        rnea,
        find(records, method=f"rneaInParallel({t})", batch=big, **inverse),
        1.0,
    )
    faster(
        "kronjax rnea vs Pinocchio rnea per call (C++ est.)",
        rnea,
        find(records, method="rnea (per call, C++ est.)", **inverse),
        None,
    )
    faster(f"kronjax rnea vs adam, batch {big}", rnea, find(records, library="adam", precision=f64), 5.0)
    faster(f"kronjax rnea vs jaxsim, batch {big}", rnea, find(records, operation="inverse_dynamics", library="jaxsim"), None)
    faster(f"kronjax rnea vs MJX, best flags ({mjx_best.method if mjx_best else '-'})", rnea, mjx_best, 3.0)
    forward = dict(operation="forward_dynamics", **pin)
    faster(
        f"kronjax forward_dynamics vs Pinocchio abaInParallel({t}), batch {big}",
        fd,
        find(records, method=f"abaInParallel({t})", **forward),
        1.0,
    )
    faster(
        "kronjax forward_dynamics vs Pinocchio aba per call (C++ est.)",
        fd,
        find(records, method="aba (per call, C++ est.)", **forward),
        1.0,
    )
    slower(
        f"kronjax coriolis_star vs Pinocchio computeCoriolisMatrix per call (C++ est.), batch {big}",
        ours("coriolis", "coriolis_star"),
        find(records, operation="coriolis", method="computeCoriolisMatrix (per call, C++ est.)", **pin),
        2.0,
    )
    slower(f"kronjax kron vs kronjax rnea, batch {big}", ours("inverse_dynamics", "kron", batch=big), rnea, 10.0)
    # all bodies' J and H, derivatives of the dynamics, against Pinocchio per call (binding
    # included; the C++ estimate alongside, without a target), and the floor of writing the outputs
    for operation, (_, pin_name) in PER_CALL.items():
        mine = ours(operation, operation, batch=big)
        # Pinocchio's computeJointKinematicHessians(q) computes the joint Jacobians first
        what = "computeJointJacobians + computeJointKinematicHessians" if operation == "hessians" else pin_name
        target = None if operation == "jacobians_dot" else 0.5
        for suffix, goal in (("per call", target), ("per call, C++ est.", None)):
            theirs = find(records, operation=operation, method=f"{pin_name} ({suffix})", **pin)
            slower(f"kronjax {operation} vs Pinocchio {what} {suffix}, batch {big}", mine, theirs, goal)
        slower(
            f"floor: new arrays of kronjax {operation}'s output shapes, written alone, vs Pinocchio {what} per call, batch {big}",
            find(records, operation=operation, library="jax", batch=big, precision=f64),
            find(records, operation=operation, method=f"{pin_name} (per call)", **pin),
            None,
        )
    # the floating-base humanoid (section `floating`): >= 1x *InParallel, ahead of every JAX peer
    timed = [r for r in records if r.precision == f64 and r.seconds_per_call is not None]
    for mine in [r for r in timed if r.operation in FLOATING and r.library == "kronjax"]:
        name, prefix = FLOATING[mine.operation], f"humanoid (floating base): kronjax {mine.method} vs"
        parallel = find(records, operation=mine.operation, method=f"{name}InParallel({t})", batch=mine.batch, **pin)
        faster(f"{prefix} Pinocchio {name}InParallel({t}), batch {mine.batch}", mine, parallel, 1.0)
        for peer in ("adam", "jaxsim", "frax", "mjx"):
            best = min(
                (r for r in timed if r.operation == mine.operation and r.library == peer),
                key=lambda r: r.seconds_per_sample,
                default=None,
            )
            faster(f"{prefix} {peer} {best.method if best else '-'}", mine, best, 1.0)
    slower(
        f"kronjax jax.jacfwd(inverse_dynamics) vs inverse_dynamics_derivatives, batch {big}",
        ours("inverse_dynamics_derivatives", "jax.jacfwd(inverse_dynamics)", batch=big),
        ours("inverse_dynamics_derivatives", "inverse_dynamics_derivatives", batch=big),
        2.0,
    )
    for r in records:
        if r.library == "kronjax" and r.operation in PER_CALL and r.precision == f64 and r.compile_s is not None:
            add(f"compile of jit(chunked_vmap({r.method})), batch {r.batch}", r.compile_s, 2.0, "s", r.compile_s < 2.0)
    for e in exponents(records):  # the cost grows as the output: C* n x n^2, J 3 x n per body, H 3 x n^2 per body
        target = {"coriolis_star": 3.0, "jacobians": 2.0, "hessians": 3.0}.get(e["method"])
        if e["library"] == "kronjax" and target is not None and e["exponent"] is not None:
            goal = f"{e['method']} cost exponent in n (n = {', '.join(map(str, e['n']))}; slope of the last two {e['last_slope']:.2f})"
            add(goal, e["exponent"], target, "exponent", e["exponent"] <= target + 0.3)
    for r in records:
        if r.operation == "compile" and r.method == "inverse_dynamics rnea" and r.compile_s is not None:
            add(f"jit of inverse dynamics (rnea), {r.model}", r.compile_s, 1.0 if r.model == "panda" else 3.0, "s")
    return rows


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def _num(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _us(r: Record) -> str:
    t = r.seconds_per_sample
    return "-" if t is None else f"{t * 1e6:.3f}"


def _ratio(ref: Record | None, r: Record) -> str:
    if ref is None or r.seconds_per_sample is None:
        return "-"
    return f"{ref.seconds_per_sample / r.seconds_per_sample:.2f}"


def _table(intro: str, columns: list[tuple], rows: list[Record]) -> list[str]:
    """A markdown table of ``rows`` after ``intro``: ``columns`` are ``(header, alignment, cell of a
    record)``."""
    lines = [intro, "", "| " + " | ".join(c[0] for c in columns) + " |", "| " + " | ".join(c[1] for c in columns) + " |"]
    return lines + ["| " + " | ".join(c[2](r) for c in columns) + " |" for r in rows] + [""]


def _column(name: str, align: str = "---"):
    return (name, align, lambda r: str(getattr(r, name)))


LIBRARY, METHOD, BATCH, NOTE = _column("library"), _column("method"), _column("batch", "---:"), _column("note")
US = ("us/sample", "---:", _us)
COMPILE = ("compile s", "---:", lambda r: _num(r.compile_s, ".2f"))
ERROR = ("rel. err vs Pinocchio", "---:", lambda r: _num(r.rel_err, ".1e"))
RATE_RANGE = ("samples/s [min, max]", "---", lambda r: _rate_with_range(r))


def _operation_table(records: list[Record], operation: str, per_call: str | None, parallel: str | None) -> list[str]:
    rows = [r for r in records if r.operation == operation]
    if not rows:
        return []
    ref_call = find(records, operation=operation, library="pinocchio", method=per_call) if per_call else None

    def ref_parallel(r):  # at the same batch, else the largest
        ref = find(records, operation=operation, library="pinocchio", method=parallel, batch=r.batch)
        candidates = [x for x in records if x.operation == operation and x.method == parallel and x.seconds_per_call]
        return ref or (max(candidates, key=lambda x: x.batch) if candidates else None)

    intro = (
        f"Speed ratios: Pinocchio's time per sample over this row's (> 1: faster than Pinocchio); "
        f'"per call" against `{per_call}`'
        + (f', "parallel" against `{parallel}` at the same batch (else the largest).' if parallel else ".")
    )
    columns = [LIBRARY, METHOD, BATCH, _column("precision"), US, ("samples/s", "---:", lambda r: _num(r.samples_per_s, ",.0f"))]
    columns += [COMPILE, ERROR, ("x Pin. per call", "---:", lambda r: _ratio(ref_call, r))]
    columns += [("x Pin. parallel", "---:", lambda r: _ratio(ref_parallel(r) if parallel else None, r)), NOTE]
    return _table(intro, columns, rows)


def _rate_with_range(r: Record) -> str:
    """Samples per second, and their range over the timing rounds where recorded."""
    spread = r.extra.get("seconds_per_call_range")
    rate = _num(r.samples_per_s, ",.0f")
    if spread and r.seconds_per_call is not None:
        rate += f" [{r.batch / spread[1]:,.0f}, {r.batch / spread[0]:,.0f}]"
    return rate


def _floating_table(records: list[Record], threads: int) -> list[str]:
    """Section ``floating``: median time per sample, samples per second (median and range over the
    timing rounds), and the ratio to Pinocchio's ``*InParallel`` at the same batch."""
    rows = [r for r in records if r.operation in FLOATING]
    if not rows:
        return []
    intro = (
        "Romeo (`tests/data/humanoid.urdf`) with a free-flyer root (nq = 38, nv = 37), float64, random states "
        "(`kj.random_configuration`; v, a, joint torques normal; no base wrench), each library in its own conventions, "
        "outputs converted to Pinocchio's before the comparison on the leading samples. Times: median over the timing "
        f'rounds; samples/s [range over rounds]; "x parallel": this row\'s samples/s over `rneaInParallel({threads})` '
        f"/ `abaInParallel({threads})`'s at the same batch (> 1: faster)."
    )

    def ratio(r):
        method = f"{FLOATING[r.operation]}InParallel({threads})"
        return _ratio(find(records, operation=r.operation, library="pinocchio", method=method, batch=r.batch), r)

    operation = ("operation", "---", lambda r: r.operation.removeprefix("floating_"))
    return _table(
        intro, [operation, LIBRARY, METHOD, BATCH, US, RATE_RANGE, COMPILE, ERROR, ("x parallel", "---:", ratio), NOTE], rows
    )


def _us_range(r: Record | None) -> str:
    """Time per sample (us), median and [range] over the timing rounds."""
    if r is None or r.seconds_per_call is None:
        return "-" if r is None else r.note or "-"
    low, high = (t / r.batch * 1e6 for t in r.extra["seconds_per_call_range"])
    return f"{_us(r)} [{low:.3f}, {high:.3f}]"


def _legged_tables(records: list[Record]) -> list[str]:
    """Section ``legged``: per robot, kronjax per sample against Pinocchio per call; then the
    compile times of every model (robots, the Panda, the long chain) by operation."""
    rows = [r for r in records if r.operation.removeprefix("legged_") in LEGGED and r.operation.startswith("legged_")]
    mine = [r for r in rows if r.library == "kronjax"]
    if not mine:
        return []

    def pin(r):
        return next((p for p in rows if p.library == "pinocchio" and (p.model, p.operation) == (r.model, r.operation)), None)

    def floor(r):
        return next((p for p in rows if p.library == "jax" and (p.model, p.operation) == (r.model, r.operation)), None)

    lines = [
        "kronjax's `jax.jit(jax.vmap(f))` per sample, float64, against Pinocchio per call from Python (binding included, one "
        "thread) on the same random states; times: median [min, max] over the timing rounds; 'x Pinocchio': Pinocchio's "
        "time over kronjax's (> 1: faster); outputs alone: a batched function that only writes new arrays of the "
        "operation's output shapes (the floor of memory traffic at the batch); compile: the first `lower` + `compile` "
        "at the batch; error against Pinocchio on the leading states.",
        "",
    ]
    columns = [_column("method"), ("kronjax us/sample [range]", "---:", _us_range)]
    columns += [("outputs alone us/sample", "---:", lambda r: _us_range(floor(r)))]
    columns += [("Pinocchio us/call [range]", "---:", lambda r: _us_range(pin(r)))]
    columns += [("x Pinocchio", "---:", lambda r: _ratio(pin(r), r)), COMPILE, ERROR]
    timed = [r for r in mine if r.seconds_per_call is not None or r.note.startswith("failed")]
    for model in dict.fromkeys(r.model for r in timed):
        first = next(r for r in timed if r.model == model)
        lines += _table(f"### {model} (nv = {first.n_dof}, batch {first.batch})", columns, [r for r in timed if r.model == model])
    models = sorted(dict.fromkeys((r.n_dof, r.model) for r in mine))

    def cell(operation, model):
        r = next((r for r in mine if (r.operation, r.model) == (f"legged_{operation}", model)), None)
        if r is None or r.compile_s is None:
            return "-" if r is None else "failed"
        return f"{r.compile_s:.1f} ({r.extra['trace_lower_s']:.1f} + {r.extra['xla_compile_s']:.1f})"

    lines += [
        "### Compile time by model size",
        "",
        "Seconds of the first `jax.jit(jax.vmap(f)).lower(...).compile()` at the section's batch: total (trace and lower "
        "+ XLA compile); columns: model (nv).",
        "",
        "| operation | " + " | ".join(f"{m} ({n})" for n, m in models) + " |",
        "| --- |" + " ---: |" * len(models),
    ]
    return lines + [f"| {o} | " + " | ".join(cell(o, m) for _, m in models) + " |" for o in LEGGED] + [""]


def _second_order_tables(records: list[Record]) -> list[str]:
    """Section ``second_order``: per robot, kronjax per sample, the floor of writing the outputs
    and Pinocchio's C++ per call, each with its time over that of the method :data:`SECOND_ORDER`
    names."""
    rows = [r for r in records if r.operation == "second_order"]
    if not rows:
        return []

    def reference(r):
        method = SECOND_ORDER.get(r.method)
        return next((p for p in rows if (p.model, p.method) == (r.model, method) and p.seconds_per_call), None)

    def ratio(r):
        ref = reference(r)
        if ref is None or r.seconds_per_sample is None:
            return "-"
        return f"{r.seconds_per_sample / ref.seconds_per_sample:.2f} x {ref.method}"

    lines = [
        "float64; kronjax's `jax.jit(jax.vmap(f))` per sample at the batch given (the largest whose four tensors fit the "
        "section's memory cap), the floor (a function that only writes `4 nv^3` float64 per sample, as many as the four "
        "tensors) likewise, Pinocchio's C++ per call (one thread, `-O3 -march=native`, over the leading states); times: "
        "median [min, max] over the timing rounds; 'time ratio': this row's time over the named row's; compile: the "
        "first `lower` (trace) + `compile` (XLA) at the batch; error: against Pinocchio's C++ tensors on the leading states (the "
        "Hessians against `lam` contracted with them; the first order against `computeRNEADerivatives` from Python).",
        "",
    ]
    columns = [LIBRARY, METHOD, BATCH, ("us/sample or call [range]", "---:", _us_range)]

    def compile_s(r):
        if r.compile_s is None or "xla_compile_s" not in r.extra:
            return _num(r.compile_s, ".1f")
        return f"{r.compile_s:.1f} ({r.extra['trace_lower_s']:.1f} + {r.extra['xla_compile_s']:.1f})"

    columns += [("time ratio", "---", ratio), ("compile s (trace + XLA)", "---:", compile_s)]
    columns += [("rel. err vs Pinocchio", "---:", ERROR[2]), NOTE]
    for model in dict.fromkeys(r.model for r in rows):
        mine = [r for r in rows if r.model == model]
        batch = max(r.batch for r in mine)
        lines += _table(f"### {model} (nv = {mine[0].n_dof}, batch {batch})", columns, mine)
    return lines


def _mjcf_table(records: list[Record]) -> list[str]:
    """Section ``mjcf``: kronjax and MJX on the same MJCF file; the ratio to MJX's faster row."""
    rows = [r for r in records if r.operation.startswith("mjcf_")]
    if not rows:
        return []
    intro = (
        "The same MJCF file for kronjax (`kj.load_mjcf`) and MJX (`mjx.put_model`): the Panda (fixed base) and Romeo on "
        "a free joint, written by MuJoCo from `tests/data/*.urdf` with armature 0.1 on every hinge and slide "
        "(`bench/mjcf.py`); float64, random states in MuJoCo's layout. Errors against MuJoCo's C library (`mj_inverse`, "
        "`mj_forward`'s `qacc`) on the leading samples. \"x MJX\": this row's samples/s over MJX's faster row at the "
        "same model and operation (> 1: faster)."
    )

    def ratio(r):
        peers = [
            p for p in rows if p.library == "mjx" and p.model == r.model and p.operation == r.operation and p.seconds_per_call
        ]
        return _ratio(max(peers, key=lambda p: p.samples_per_s, default=None), r)

    operation = ("operation", "---", lambda r: r.operation.removeprefix("mjcf_"))
    error = ("rel. err vs MuJoCo", "---:", ERROR[2])
    columns = [
        _column("model"),
        operation,
        LIBRARY,
        METHOD,
        BATCH,
        US,
        RATE_RANGE,
        COMPILE,
        error,
        ("x MJX", "---:", ratio),
        NOTE,
    ]
    return _table(intro, columns, rows)


def markdown(records: list[Record], meta: dict, peers: dict, config, goal_rows, exps, plot_name) -> str:
    threads = config.threads
    lines = [
        f"# kronjax benchmark, {meta['date'][:10]}, {meta['machine']}",
        "",
        f"- CPU: {meta['cpu']}, {meta['cores']} cores; {meta['platform']}, Python {meta['python']}",
        f"- load average (1, 5, 15 min): {meta['load_average_start']} at the start, {meta.get('load_average_end')} at the end"
        " (other processes on the machine make timings noisy)",
        f"- kronjax {meta['kronjax']}, jax {meta['jax']}, devices {', '.join(meta['jax_devices'])}; XLA_FLAGS=`{meta['xla_flags']}`; "
        f"GLIBC_TUNABLES=`{meta.get('glibc_tunables', '')}`",
        f"- run: `{meta.get('command', 'python -m bench')}`, {meta.get('duration_s', 0):.0f} s; batch {config.big} for peers",
        "- every library gets the same arm: `kj.models.panda()` written by `kj.to_urdf` (7 revolute joints, gravity (0, 0, -9.81)).",
        "  Agreement: max relative error of the leading samples' outputs against Pinocchio on the same samples.",
        "",
        "## Peers",
        "",
    ]
    for name, info in peers.items():
        lines.append(f"- {name}: " + (info["version"] if info["available"] else info["note"]))
    agreement = [
        r for r in records if r.operation == "inverse_dynamics" and r.library not in ("pinocchio",) and r.rel_err is not None
    ]
    if agreement:
        lines += [
            "",
            "Agreement of inverse dynamics (tau) with Pinocchio: "
            + "; ".join(
                f"{r.library} {r.method} {r.precision} {r.rel_err:.1e}"
                for r in agreement
                if r.batch == config.big or r.library != "kronjax"
            ),
        ]
    lines += [
        "",
        "## Goals, as ratios measured in this run (float64)",
        "",
        "| goal | measured | target | met |",
        "| --- | ---: | ---: | --- |",
    ]
    for g in goal_rows:
        met = "-" if g["met"] is None else ("yes" if g["met"] else "no")
        target = "-" if g["target"] is None else (f">= {g['target']:g}" if g["unit"] == "x samples/s" else f"<= {g['target']:g}")
        lines.append(f"| {g['goal']} | {_num(g['value'], '.3g')} {g['unit']} | {target} | {met} |")
    sections = [
        ("Inverse dynamics (Panda)", "inverse_dynamics", "rnea (per call, C++ est.)", f"rneaInParallel({threads})"),
        ("Forward dynamics (Panda)", "forward_dynamics", "aba (per call, C++ est.)", f"abaInParallel({threads})"),
        (
            "Coriolis (Panda): kronjax's C* (n x n^2) and C, Pinocchio's and jaxsim's C",
            "coriolis",
            "computeCoriolisMatrix (per call, C++ est.)",
            None,
        ),
    ] + [(title, operation, f"{pin_name} (per call, C++ est.)", None) for operation, (title, pin_name) in PER_CALL.items()]
    for title, operation, per_call, parallel in sections:
        table = _operation_table(records, operation, per_call, parallel)
        if table:
            lines += ["", f"## {title}", ""] + table
    table = _floating_table(records, threads)
    if table:
        lines += ["", "## Floating base: inverse and forward dynamics of a humanoid", ""] + table
    table = _legged_tables(records)
    if table:
        lines += ["", "## Legged robots (example-robot-data, free-flyer root)", ""] + table
    table = _second_order_tables(records)
    if table:
        lines += ["", "## Second-order derivatives of inverse dynamics (Pinocchio's C++ peer)", ""] + table
    table = _mjcf_table(records)
    if table:
        lines += ["", "## The same MJCF in kronjax and MJX, armature included", ""] + table
    if exps:
        ns = sorted({n for e in exps for n in e["n"]})
        lines += [
            "",
            "## Scaling with the number of joints (random serial D-H arms, float64)",
            "",
            f"Time per sample (us); batch per series in the JSON. Plot: `{plot_name}`.",
            "",
            "| library | method | " + " | ".join(f"n = {n}" for n in ns) + " | fitted exponent | slope of the last two |",
            "| --- | --- | " + " | ".join("---:" for _ in ns) + " | ---: | ---: |",
        ]
        for e in exps:
            t = dict(zip(e["n"], e["seconds_per_sample"]))
            lines.append(
                f"| {e['library']} | {e['method']} | "
                + " | ".join(_num(t.get(n) and t[n] * 1e6, ".2f") for n in ns)
                + f" | {_num(e['exponent'], '.2f')} | {_num(e['last_slope'], '.2f')} |"
            )
        errors = [r for r in records if r.operation == "scaling" and r.library == "kronjax" and r.rel_err is not None]
        if errors:
            lines += [
                "",
                f"Largest relative error against Pinocchio over the scaling runs: {max(r.rel_err for r in errors):.1e}.",
            ]
    compile_rows = [r for r in records if r.operation == "compile"]
    if compile_rows:
        lines += [
            "",
            "## Compile time of `jax.jit` of one sample's inverse dynamics (float64)",
            "",
            "| model | n | method | total s | trace + lower s | XLA compile s | HLO lines | note |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in compile_rows:
            x = r.extra
            lines.append(
                f"| {r.model} | {r.n_dof} | {r.method} | {_num(r.compile_s, '.2f')} | {_num(x.get('trace_lower_s'), '.2f')} | "
                f"{_num(x.get('xla_compile_s'), '.2f')} | {x.get('hlo_lines', '-')} | {r.note} |"
            )
    return "\n".join(lines) + "\n"


def plot(exps: list[dict], path: Path, title: str) -> bool:
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 5))
    for e in exps:
        if not e["n"] or (e["library"] == "pinocchio" and "C++" not in e["method"]):
            continue
        style = "-o" if e["library"] == "kronjax" else "--s"
        label = f"{e['library']} {e['method']}" + (f" (exponent {e['exponent']:.2f})" if e["exponent"] is not None else "")
        ax.loglog(e["n"], np.array(e["seconds_per_sample"]) * 1e6, style, label=label)
    ns = sorted({n for e in exps for n in e["n"]})
    if len(ns) >= 2:
        ref = np.array(ns, float)
        anchor = min(min(e["seconds_per_sample"]) for e in exps if e["n"]) * 1e6
        for power in (1, 2, 3, 4):
            ax.loglog(ref, anchor * (ref / ref[0]) ** power, ":", color="grey", linewidth=0.8)
            ax.annotate(f"n^{power}", (ref[-1], anchor * (ref[-1] / ref[0]) ** power), fontsize=8, color="grey")
    ax.set_xlabel("joints n")
    ax.set_ylabel("time per sample (us)")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write(records: list[Record], meta: dict, peers: dict, config, out_dir: Path = RESULTS) -> dict[str, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{meta['date'][:10]}-{meta['machine']}"
    exps, goal_rows = exponents(records), goals(records, config)
    paths = {"md": out_dir / f"{stem}.md", "json": out_dir / f"{stem}.json"}
    png = out_dir / f"{stem}-scaling.png"
    if exps and plot(exps, png, f"kronjax scaling, {meta['machine']}, {meta['date'][:10]}"):
        paths["png"] = png
    paths["md"].write_text(markdown(records, meta, peers, config, goal_rows, exps, png.name if "png" in paths else "-"))
    data = {
        "meta": meta,
        "config": dataclasses.asdict(config),
        "peers": peers,
        "goals": goal_rows,
        "exponents": exps,
        "records": [r.as_dict() for r in records],
    }
    paths["json"].write_text(json.dumps(data, indent=1, default=str) + "\n")
    return paths
