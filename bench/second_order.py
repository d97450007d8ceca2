"""Section ``second_order`` (issue 41): the second-order derivatives of inverse dynamics, kronjax's
against Pinocchio's C++ ``ComputeRNEASecondOrderDerivatives`` (:mod:`bench._pinocchio_cpp`; pin's
Python bindings do not expose it), on the Panda of ``example-robot-data`` (fixed base, its two
fingers independent, nv = 9) and, with a free-flyer root, the Unitree G1 (nv = 35) and Talos
(nv = 50) of the ``legged`` section (:data:`bench.legged.ROBOTS`, :class:`bench.floating.Humanoid`).

Per robot, float64, kronjax's ``jax.jit(jax.vmap(f))`` per sample, with its first compilation, of
the methods of :data:`bench.report.SECOND_ORDER`: the first-order derivatives (the reference),
``kj.inverse_dynamics_second_derivatives``, ``kj.inverse_dynamics_hessian``, ``jax.hessian`` of
``(a, v) -> λ · kj.inverse_dynamics(model, q ⊕ a, v, vd)`` at ``a = 0`` (the rule's derivatives
and ``derivatives="autodiff"``), and a floor: a function that only writes as many float64 numbers
per sample as the four tensors (``4 nv^3``). Pinocchio: the C++ program's per-call times (one
thread) of ``computeRNEADerivatives``, ``ComputeRNEASecondOrderDerivatives`` (with the four
``setZero`` it needs) and those ``setZero`` alone, over the leading states.

The four tensors take ``32 nv^3`` bytes a sample (4 MB on Talos): each robot runs at
``Config.second_order_batch`` or at the largest batch whose four tensors fit in
``Config.second_order_memory`` bytes, rounded down to a multiple of 100 (:func:`batch_for`), and
every kronjax row of the robot at that batch. Agreement: kronjax's tensors, permuted to
Pinocchio's joint order, against the C++ program's on the leading states (the Hessians against
``λ`` contracted with them). Each kronjax row runs in a process of its own (``python -m
bench.second_order SPEC.json``, :func:`kronjax_row`), on the same states (fixed seeds), so that
one whose compilation runs out of memory or time is a failed row, not the end of the run, and
each starts with the memory of a fresh process. Without the C++ peer (no compiler, or the header wheels missing) its
rows are skipped with the reason in the log, and the errors of the second-order rows are left out.
docs/benchmarks/second-order.md describes it.
"""

from __future__ import annotations

import functools
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import models
from ._timing import Record, time_compiled
from .floating import Humanoid
from .legged import ROBOTS as LEGGED_ROBOTS
from .legged import pinocchio_outputs, robot_file

# name: (file below example-robot-data's robots/, load_urdf's mimic, free-flyer root)
ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", "independent", False),
    "g1": (*LEGGED_ROBOTS["g1"], True),
    "talos": (*LEGGED_ROBOTS["talos"], True),
}
FIELDS = ("d2tau_dq2", "d2tau_dqdv", "d2tau_dv2", "d2tau_dvddq")  # kronjax's, in its order
# kronjax's field: the C++ program's tensor (bench._pinocchio_cpp.TENSORS, in the program's order)
PINOCCHIO_NAMES = {"d2tau_dq2": "d2tau_dqdq", "d2tau_dqdv": "dtau_dqdv", "d2tau_dv2": "d2tau_dvdv", "d2tau_dvddq": "dtau_dadq"}
# the C++ program's timings (bench._pinocchio_cpp.TIMINGS) of the Pinocchio rows, by method
PINOCCHIO_TIMINGS = {
    "computeRNEADerivatives": "rnea_derivatives",
    "ComputeRNEASecondOrderDerivatives": "second_order",
    "setZero of its 4 tensors (floor)": "second_order_setzero",
}
FLOOR = "writing 4 nv^3 float64 (floor)"
JAX_HESSIAN = "jax.hessian(lam @ inverse_dynamics), {}"
SYMMETRIC_TOL = 1e-9  # a relative error above it in d2tau_dq2's free-flyer block alone: compared symmetrised


class FixedBase:
    """A fixed-base robot, kronjax's and Pinocchio's models of one URDF, with the attributes of
    :class:`bench.floating.Humanoid` that this section reads (random states, the maps of
    kronjax's coordinates to Pinocchio's, matched by joint name)."""

    def __init__(self, path: Path, batch: int, seed: int = 0, mimic: str = "coupled"):
        import jax
        import pinocchio as pin

        import kronjax as kj

        self.path = Path(path)
        self.model = kj.load_urdf(self.path, mimic=mimic)
        self.nq, self.nv = self.model.nq, self.model.nv
        self.pin = pin
        self.pm = pin.buildModelFromUrdf(str(self.path))
        self.pm.gravity.linear = np.asarray(self.model.gravity, float)
        self.pd = self.pm.createData()
        moving = [n for n, k in zip(self.model.joint_names, self.model.kinematics.kinds) if k != "F"]
        self.joint_names = moving
        ids = [self.pm.getJointId(n) for n in moving]
        self.q_perm = np.concatenate([np.arange(self.pm.idx_qs[j], self.pm.idx_qs[j] + self.pm.nqs[j]) for j in ids])
        self.v_perm = np.concatenate([np.arange(self.pm.idx_vs[j], self.pm.idx_vs[j] + self.pm.nvs[j]) for j in ids])
        if (self.pm.nq, self.pm.nv) != (self.nq, self.nv):
            raise ValueError(f"Pinocchio reads nq = {self.pm.nq}, nv = {self.pm.nv}; kronjax {self.nq}, {self.nv}")
        keys = jax.random.split(jax.random.key(seed), batch)
        self.q = np.asarray(jax.jit(jax.vmap(lambda k: kj.random_configuration(self.model, k)))(keys), float)
        self.v, self.a = np.random.default_rng(seed).normal(size=(2, batch, self.nv))

    def pin_q(self, q: np.ndarray) -> np.ndarray:
        out = np.empty_like(q)
        out[:, self.q_perm] = q
        return out

    def pin_v(self, v: np.ndarray) -> np.ndarray:
        out = np.empty_like(v)
        out[:, self.v_perm] = v
        return out


def batch_for(nv: int, batch: int, memory: int, check: int) -> int:
    """The batch of a robot: ``batch``, or the largest multiple of 100 whose four ``(nv, nv^2)``
    float64 tensors fit in ``memory`` bytes (at least ``check``)."""
    fits = memory // (32 * nv**3)
    if fits >= batch:
        return batch
    return max(fits // 100 * 100, min(check, batch), 1)


def load(name: str, batch: int, check: int):
    """The robot ``name`` of :data:`ROBOTS` with ``batch`` random states (Humanoid for a free-flyer)."""
    relative, mimic, free_flyer = ROBOTS[name]
    path = robot_file(relative)
    if free_flyer:
        return Humanoid(path, batch, check, threads=1, mimic=mimic)
    return FixedBase(path, batch, mimic=mimic)


def pinocchio_peer(robot, free_flyer: bool, head: int, timing: dict, log) -> tuple[dict | None, tuple | None]:
    """The C++ program's report (its ``timings_us``) and tensors on the leading ``head`` states,
    the tensors in kronjax's joint order and Khang's layout ``(head, nv, nv^2)``, by kronjax's
    field names; ``(None, None)`` with the reason logged when the peer is unavailable."""
    from . import _pinocchio_cpp as cpp

    q, v, a = robot.pin_q(robot.q[:head]), robot.pin_v(robot.v[:head]), robot.pin_v(robot.a[:head])
    rounds = max(3, timing["repeats"])
    try:
        program = cpp.build()  # compiles once (minutes), then cached
        report, tensors = cpp.run(robot.path, free_flyer, q, v, a, head, timing["min_seconds"], rounds, program)
    except (cpp.Unavailable, RuntimeError) as exc:  # missing headers or compiler; a failed compilation or run
        log(f"    Pinocchio's C++ second-order derivatives skipped: {str(exc)[:2000]}")
        return None, None
    p, nv = robot.v_perm, robot.nv
    by_name = dict(zip(cpp.TENSORS, tensors))
    ours = {f: by_name[PINOCCHIO_NAMES[f]][np.ix_(range(head), p, p, p)].reshape(head, nv, nv * nv) for f in FIELDS}
    return report, ours


def hessian_reference(tensors: dict, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hessian (k, 2nv, 2nv), vd_q (k, nv, nv))`` of ``λ · tau`` from second-order tensors in
    Khang's layout, as :func:`kronjax.inverse_dynamics_hessian` defines them (the ``(q, q)``
    block symmetrised)."""
    k, nv = lam.shape
    qq, qv, vv, aq = (np.einsum("si,sij->sj", lam, tensors[f][:k]).reshape(k, nv, nv) for f in FIELDS)
    qq = (qq + qq.transpose(0, 2, 1)) / 2
    hessian = np.concatenate([np.concatenate([qq, qv], 2), np.concatenate([qv.transpose(0, 2, 1), vv], 2)], 1)
    return hessian, aq


def tensor_errors(out: dict, ref: dict, free_flyer: bool) -> tuple[float, dict, str]:
    """The largest relative error of kronjax's four tensors against Pinocchio's, each tensor's,
    and a note. ``d2tau_dq2`` is compared as it comes; only where it differs beyond
    :data:`SYMMETRIC_TOL` in the free-flyer block alone (``j, k < 6``) and nowhere else are
    both symmetrised over ``(j, k)`` and compared again (the note says so)."""
    errors, note = {}, ""
    for f in FIELDS:
        errors[f] = models.relative_error(out[f], ref[f][: len(out[f])])
    raw = errors["d2tau_dq2"]
    if free_flyer and raw > SYMMETRIC_TOL:
        mine, theirs = (np.asarray(t["d2tau_dq2"][: len(out["d2tau_dq2"])]) for t in (out, ref))
        k, nv = mine.shape[:2]
        mine, theirs = mine.reshape(k, nv, nv, nv), theirs.reshape(k, nv, nv, nv)
        outside = np.ones((nv, nv), bool)
        outside[:6, :6] = False
        scale = max(float(np.abs(theirs).max()), 1e-300)
        off_block = float(np.abs(mine - theirs)[:, :, outside].max()) / scale
        errors["d2tau_dq2_raw"], errors["d2tau_dq2_outside_free_flyer_block"] = raw, off_block
        if off_block <= SYMMETRIC_TOL:
            sym = lambda t: (t + t.transpose(0, 1, 3, 2)) / 2  # noqa: E731
            errors["d2tau_dq2"] = models.relative_error(sym(mine), sym(theirs))
            note = f"d2tau_dq2 symmetrised over (j, k): raw {raw:.1e}, all in the free-flyer block"
        else:
            note = f"d2tau_dq2 differs outside the free-flyer block ({off_block:.1e})"
    return max(v for f, v in errors.items() if f in FIELDS), errors, note


def states(robot, batch: int) -> tuple:
    """The arguments ``(q, v, vd, lam)`` of every kronjax row, kronjax's layout (``lam`` normal)."""
    lam = np.random.default_rng(1).normal(size=(batch, robot.nv))
    return robot.q, robot.v, robot.a, lam


def kronjax_functions(model) -> dict:
    """The functions of one sample ``(q, v, vd, lam)`` of the section's kronjax and floor rows, by
    method (:data:`bench.report.SECOND_ORDER`)."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    nv = model.nv
    second = functools.partial(kj.inverse_dynamics_second_derivatives, model)

    def scalar_hessian(derivatives):
        def fn(q, v, a, lam):
            def loss(x):  # lam . tau(q ⊕ x_q, x_v, vd)
                moved = kj.integrate(model, q, x[:nv])
                return lam @ kj.inverse_dynamics(model, moved, x[nv:], a, derivatives=derivatives)

            return jax.hessian(loss)(jnp.concatenate([jnp.zeros_like(v), v]))

        return fn

    def floor(q, v, a, lam):  # as many new float64 numbers as the four tensors, one value each
        shapes = jax.eval_shape(second, q, v, a)
        value = q.sum() + v.sum() + a.sum() + lam.sum()
        return tuple(jnp.broadcast_to(value, s.shape) for s in shapes)

    return {
        "inverse_dynamics_derivatives": lambda q, v, a, lam: kj.inverse_dynamics_derivatives(model, q, v, a),
        "inverse_dynamics_second_derivatives": lambda q, v, a, lam: tuple(second(q, v, a)),
        "inverse_dynamics_hessian": functools.partial(kj.inverse_dynamics_hessian, model),
        JAX_HESSIAN.format("analytic"): scalar_hessian("analytic"),
        JAX_HESSIAN.format("autodiff"): scalar_hessian("autodiff"),
        FLOOR: floor,
    }


def main(spec_path: str) -> None:
    """``python -m bench.second_order SPEC.json``: one kronjax row of :func:`robot_rows` in a
    process of its own. SPEC: ``robot``, ``batch``, ``check``, ``method``, ``timing``,
    ``memory_limit``, ``out``, ``head``. Writes the record fields of
    :func:`~bench._timing.time_compiled` and the compile seconds to ``out`` (JSON), the leading
    ``check`` samples of each output to ``head`` (``.npz``, in the order of ``jax.tree.leaves``).
    ``memory_limit``: the process's address space in bytes (``RLIMIT_AS``): past it an allocation
    fails (a ``MemoryError``, or XLA crashes) before the machine runs out of memory; far below
    what JAX needs, the process can also stall until the caller's timeout."""
    spec = json.loads(Path(spec_path).read_text())
    if spec.get("memory_limit"):
        resource.setrlimit(resource.RLIMIT_AS, (spec["memory_limit"], spec["memory_limit"]))
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    robot = load(spec["robot"], spec["batch"], spec["check"])
    fn = kronjax_functions(robot.model)[spec["method"]]
    args = tuple(jnp.asarray(x) for x in states(robot, spec["batch"]))
    timed, compile_s, out = time_compiled(jax.vmap(fn), args, spec["timing"])
    np.savez(spec["head"], *(np.asarray(x[: spec["check"]]) for x in jax.tree.leaves(out)))
    Path(spec["out"]).write_text(json.dumps({**timed, "compile_s": compile_s}))


def kronjax_row(suite, name: str, batch: int, method: str) -> tuple[dict, float, list[np.ndarray]]:
    """One kronjax row of a robot timed in a process of its own (:func:`main`), stopped after
    ``Config.second_order_timeout`` seconds or past ``Config.second_order_process_memory`` bytes
    of address space, so that a compilation that runs out of memory or time is a failed row
    (``jax.hessian`` with ``derivatives="autodiff"`` of Talos compiled for 45 minutes and was
    killed by the kernel at 24 GB, the machine's memory, on the 2-core VM): ``(record fields,
    compile seconds, leading outputs)``."""
    from .peers import run_module

    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        c = suite.config
        spec = {"robot": name, "batch": batch, "check": c.check, "method": method, "timing": suite.timing}
        spec.update(memory_limit=c.second_order_process_memory)
        spec.update(out=str(Path(tmp, "result.json")), head=str(Path(tmp, "head.npz")))
        try:
            result = run_module("bench.second_order", spec, False, tmp, timeout=c.second_order_timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            limits = f"(limits: {c.second_order_timeout:.0f} s, {c.second_order_process_memory / 2**30:.1f} GiB of address space)"
            what = f"stopped after {exc.timeout:.0f} s" if isinstance(exc, subprocess.TimeoutExpired) else str(exc)
            raise RuntimeError(f"{what} {limits}") from exc
        with np.load(spec["head"]) as saved:
            head = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    compile_s = result.pop("compile_s")
    return result, compile_s, head


def robot_rows(suite, name: str) -> None:
    """kronjax's and Pinocchio's rows of one robot of :data:`ROBOTS`."""
    import kronjax as kj

    c = suite.config
    relative, mimic, free_flyer = ROBOTS[name]
    nv = kj.load_urdf(robot_file(relative), floating_base=free_flyer, mimic=mimic).nv  # for the batch
    batch = batch_for(nv, c.second_order_batch, c.second_order_memory, c.check)
    robot = load(name, batch, c.check)
    head = min(c.check, batch)
    cap = f"{32 * nv**3 / 1e6:.2f} MB of tensors a sample, {c.second_order_memory / 2**30:.2f} GiB a call at most"
    suite.log(
        f"  {name}: nq = {robot.nq}, nv = {nv}, {'free-flyer' if free_flyer else 'fixed base'}; batch {batch} ({cap}); "
        f"{head} states checked against Pinocchio; each kronjax row in a process of its own"
    )
    fields = dict(operation="second_order", precision="float64", model=name, n_dof=nv)
    lam = states(robot, batch)[3][:head]

    report, ref = pinocchio_peer(robot, free_flyer, head, suite.timing, suite.log)
    rows = [
        tuple(np.ascontiguousarray(x) for x in row)
        for row in zip(robot.pin_q(robot.q[:head]), robot.pin_v(robot.v[:head]), robot.pin_v(robot.a[:head]))
    ]
    first_ref = [np.stack(x) for x in zip(*(pinocchio_outputs(robot)["inverse_dynamics_derivatives"](*row) for row in rows))]
    h_ref = hessian_reference(ref, lam) if ref is not None else None
    missing = "no Pinocchio C++ peer: not compared"

    def first_error(out):
        return max(models.relative_error(o, r) for o, r in zip(out, first_ref)), {}, ""

    def second_error(out):
        if ref is None:
            return None, {}, missing
        return tensor_errors(dict(zip(FIELDS, out)), ref, free_flyer)

    def hessian_error(out):
        if h_ref is None:
            return None, {}, missing
        errors = {"hessian": models.relative_error(out[0], h_ref[0]), "vd_q": models.relative_error(out[1], h_ref[1])}
        return max(errors.values()), errors, ""

    def scalar_hessian_error(out):
        if h_ref is None:
            return None, {}, missing
        return models.relative_error(out[0], h_ref[0]), {}, ""

    compare = {
        "inverse_dynamics_derivatives": first_error,
        "inverse_dynamics_second_derivatives": second_error,
        "inverse_dynamics_hessian": hessian_error,
        JAX_HESSIAN.format("analytic"): scalar_hessian_error,
        JAX_HESSIAN.format("autodiff"): scalar_hessian_error,
        FLOOR: lambda out: (None, {}, ""),
    }
    for method, check in compare.items():
        row = dict(library="jax" if method == FLOOR else "kronjax", method=method, batch=batch, **fields)
        try:
            timed, compile_s, out = kronjax_row(suite, name, batch, method)
            error, errors, note = check(out)
            if errors:
                timed["extra"]["rel_err_by_output"] = errors
            suite.add(Record(**row, compile_s=compile_s, rel_err=error, note=note, **timed))
        except Exception as exc:
            suite.failed(exc, **row)
    if report is None:
        return
    for method, key in PINOCCHIO_TIMINGS.items():
        stats = report["timings_us"][key]
        extra = {"seconds_per_call_range": [stats["min"] * 1e-6, stats["max"] * 1e-6], "rounds": stats["rounds"]}
        note = f"C++ per call, one thread, over {head} states"
        rel_err = None if key == "second_order_setzero" else 0.0  # the reference
        per_call = stats["median"] * 1e-6
        row = dict(library="pinocchio", method=method, batch=1, seconds_per_call=per_call, rel_err=rel_err)
        suite.add(Record(**fields, **row, note=note, extra=extra))


def section(suite) -> None:
    """The ``second_order`` section of :class:`bench.suite.Suite`, on ``Config.second_order_robots``."""
    for name in suite.config.second_order_robots:
        try:
            robot_rows(suite, name)
        except Exception as exc:  # a robot that cannot load (example-robot-data missing) must not stop the others
            suite.failed(exc, operation="second_order", library="-", method=f"robot {name}", batch=0, precision="-", model=name)


if __name__ == "__main__":
    main(sys.argv[1])
