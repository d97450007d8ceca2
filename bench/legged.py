"""Section ``legged``: the robots users bring, with a free-flyer root, from the ``example-robot-data``
package (installed, never copied here): the quadruped ANYmal C (nv = 18), the humanoid Unitree G1
(nv = 35) and the humanoid Talos (nv = 50, its gripper's mimic joints independent, as Pinocchio
reads them). For each, float64, kronjax's ``jax.jit(jax.vmap(f))`` at ``Config.legged_batch`` per
sample against Pinocchio per call through its Python binding (one thread), on the same random
states (:class:`bench.floating.Humanoid`: kronjax's layout, Pinocchio's joints matched by name),
of the operations of :data:`bench.report.LEGGED`; each kronjax result against Pinocchio's on the
leading states; and the first compilation of each (tracing with lowering, then XLA). The Panda
(nv = 7) and a random chain of :data:`CHAIN_N` bodies add compile-time rows (compiled for shapes
alone, nothing timed, each in a process of its own: ``python -m bench.legged SPEC.json``). docs/benchmarks/legged.md describes it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import models
from ._timing import Record, compile_split, median_fields, outputs_alone, rounds, time_compiled
from .floating import Humanoid
from .report import LEGGED

# name: (file below example-robot-data's robots/, load_urdf's mimic)
ROBOTS = {
    "anymal": ("anymal_c_simple_description/urdf/anymal.urdf", "coupled"),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", "coupled"),
    "talos": ("talos_data/robots/talos_full_v2.urdf", "independent"),
}
CHAIN_N = 100
COMPILE_ONLY = ("panda", f"chain{CHAIN_N}")  # the compile-time table's other sizes
# each operation's arguments, attributes of Humanoid (q in its layout, the others velocities)
ARGUMENTS = {
    "mass_matrix": ("q",),
    "inverse_dynamics": ("q", "v", "a"),
    "forward_dynamics": ("q", "v", "tau"),
    "jacobians": ("q",),
    "joint_jacobians": ("q",),
    "inverse_dynamics_derivatives": ("q", "v", "a"),
    "forward_dynamics_derivatives": ("q", "v", "tau"),
}


def robot_file(relative: str) -> Path:
    """The installed ``example-robot-data`` file ``robots/<relative>``."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError("example-robot-data is not installed: pip install example-robot-data") from None
    for file in files:
        if str(file).endswith("robots/" + relative):
            return Path(file.locate())
    raise FileNotFoundError(f"robots/{relative} is not in the installed example-robot-data")


def pinocchio_outputs(robot: Humanoid) -> dict:
    """Per operation, Pinocchio's outputs of one state (Pinocchio's layout in) in kronjax's layout
    (``M``, ``M^-1`` symmetrised from their upper triangles; Jacobians of every body in
    LOCAL_WORLD_ALIGNED, as kronjax's ``frame="base"``), as a tuple."""
    pin, pm, pd, p = robot.pin, robot.pm, robot.pd, robot.v_perm
    bodies = [pm.getJointId(name) for name in robot.model.joint_names]

    def square(m, symmetrise=False):
        m = np.array(m)
        return (np.triu(m) + np.triu(m, 1).T if symmetrise else m)[np.ix_(p, p)]

    def jacobians(q):
        pin.computeJointJacobians(pm, pd, q)
        j = np.stack([pin.getJointJacobian(pm, pd, b, pin.LOCAL_WORLD_ALIGNED)[:, p] for b in bodies])
        return j[:, :3], j[:, 3:]

    def derivatives(outputs):
        return square(outputs[0]), square(outputs[1]), square(outputs[2], symmetrise=True)

    return {
        "mass_matrix": lambda q: (square(pin.crba(pm, pd, q), symmetrise=True),),
        "inverse_dynamics": lambda *x: (np.array(pin.rnea(pm, pd, *x))[p],),
        "forward_dynamics": lambda *x: (np.array(pin.aba(pm, pd, *x))[p],),
        "jacobians": jacobians,
        # the compact form: data.J, the 6 x nv world-frame motions of the coordinates
        "joint_jacobians": lambda q: (np.array(pin.computeJointJacobians(pm, pd, q))[:, p],),
        "inverse_dynamics_derivatives": lambda *x: derivatives(pin.computeRNEADerivatives(pm, pd, *x)),
        "forward_dynamics_derivatives": lambda *x: derivatives(pin.computeABADerivatives(pm, pd, *x)),
    }


FLOOR = "writing the outputs alone"


def robot_rows(suite, name: str) -> None:
    """kronjax's and Pinocchio's rows of one robot of :data:`ROBOTS`."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    c = suite.config
    relative, mimic = ROBOTS[name]
    robot = Humanoid(robot_file(relative), c.legged_batch, c.check, threads=1, mimic=mimic)
    order = "the same" if list(robot.pm.names[2:]) == list(robot.joint_names) else "another (matched by name)"
    suite.log(f"  {name}: nq = {robot.nq}, nv = {robot.nv}, batch {c.legged_batch}; Pinocchio's joint order: {order}")
    head = min(c.check, c.legged_batch)
    outputs = pinocchio_outputs(robot)
    for operation, pin_name in LEGGED.items():
        keys = ARGUMENTS[operation]
        fields = dict(operation=f"legged_{operation}", precision="float64", model=name, n_dof=robot.nv)
        theirs = [robot.pin_q(robot.q[:head]) if k == "q" else robot.pin_v(getattr(robot, k)[:head]) for k in keys]
        rows = [tuple(np.ascontiguousarray(x) for x in row) for row in zip(*theirs)]
        ref = [np.stack(x) for x in zip(*(outputs[operation](*row) for row in rows))]
        kronjax = dict(library="kronjax", method=operation, batch=c.legged_batch)
        try:
            sample_fn = functools.partial(getattr(kj, operation), robot.model)
            fn = jax.vmap(sample_fn)
            args = tuple(jnp.asarray(getattr(robot, k)) for k in keys)
            timed, compile_s, out = time_compiled(fn, args, suite.timing)
            error = max(models.relative_error(np.asarray(o[:head]), r) for o, r in zip(jax.tree.leaves(out), ref))
            del out  # up to a GB at batch 10^4 (Talos' Jacobians)
            suite.add(Record(**fields, **kronjax, compile_s=compile_s, rel_err=error, **timed))
            floor = jax.vmap(outputs_alone(sample_fn, *(a[0] for a in args)))
            timed, _, _ = time_compiled(floor, args, suite.timing)
            suite.add(Record(**fields, library="jax", method=FLOOR, batch=c.legged_batch, **timed))
        except Exception as exc:
            suite.failed(exc, **fields, **kronjax)
        call, pm, pd = getattr(robot.pin, pin_name), robot.pm, robot.pd

        def run(rows=rows, call=call):
            for row in rows:
                call(pm, pd, *row)

        timed = median_fields([t / len(rows) for t in rounds(run, **suite.timing)])
        method, note = f"{pin_name} (per call)", "from Python, binding included"
        suite.add(Record(**fields, library="pinocchio", method=method, batch=1, rel_err=0.0, note=note, **timed))


def compile_model(name: str):
    """The fixed-base model of a name of :data:`COMPILE_ONLY`."""
    return models.panda() if name == "panda" else models.random_chain(CHAIN_N, seed=CHAIN_N)


def compile_rows(suite, name: str) -> None:
    """kronjax's compilation of each operation at ``legged_batch`` on a model of
    :data:`COMPILE_ONLY`, for shapes alone, each in a process of its own (:func:`main`): a
    compilation that runs out of memory (``forward_dynamics_derivatives`` of the 100-body chain
    did on a 23 GB machine) is a failed row, not the end of the run."""
    from .peers import run_module

    batch, nv = suite.config.legged_batch, compile_model(name).nv
    for operation in LEGGED:
        fields = dict(operation=f"legged_{operation}", library="kronjax", method=operation, batch=batch, precision="float64")
        fields.update(model=name, n_dof=nv)
        with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
            spec = {"model": name, "operation": operation, "batch": batch, "out": str(Path(tmp, "result.json"))}
            try:
                split = run_module("bench.legged", spec, False, tmp)
            except Exception as exc:
                suite.failed(exc, **fields)
                continue
        suite.add(
            Record(**fields, compile_s=sum(split.values()), extra=split, note="compiled in a process of its own, not timed")
        )


def main(spec_path: str) -> None:
    """``python -m bench.legged SPEC.json``: one compilation of :func:`compile_rows` (SPEC:
    ``model``, ``operation``, ``batch``, ``out``), its two times written to ``out``."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    jax.config.update("jax_enable_x64", True)
    spec = json.loads(Path(spec_path).read_text())
    model, batch = compile_model(spec["model"]), spec["batch"]
    shapes = {k: jax.ShapeDtypeStruct((batch, model.nq if k == "q" else model.nv), jnp.float64) for k in ("q", "v", "a", "tau")}
    batched = jax.vmap(functools.partial(getattr(kj, spec["operation"]), model))
    _, split = compile_split(batched, *(shapes[k] for k in ARGUMENTS[spec["operation"]]))
    Path(spec["out"]).write_text(json.dumps(split))


def section(suite) -> None:
    """The ``legged`` section of :class:`bench.suite.Suite`, on ``Config.legged_robots``."""
    for name in suite.config.legged_robots:
        try:
            (robot_rows if name in ROBOTS else compile_rows)(suite, name)
        except Exception as exc:  # a robot that cannot load (example-robot-data missing) must not stop the others
            suite.failed(exc, operation="legged", library="-", method=f"robot {name}", batch=0, precision="-", model=name)


if __name__ == "__main__":
    main(sys.argv[1])
