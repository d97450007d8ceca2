"""Section ``mjcf``: kronjax and MJX on the same MJCF file, rotor inertias included.

Each robot is written once as MJCF by MuJoCo (``MjSpec.to_xml``): the Panda of
``tests/data/panda.urdf`` (fixed base) and Romeo, ``tests/data/humanoid.urdf``, on a free joint
(inertias balanced: MuJoCo refuses one of Romeo's as given), both through
:func:`bench.models.mjcf_from_urdf`, with ``armature = 0.1`` on every hinge and slide (the
Menagerie Panda's value). kronjax reads that file with ``kj.load_mjcf``, MJX compiles the same file
(``mjx.put_model``), and MuJoCo's C library on the same file is the reference: ``mj_inverse``
(inverse dynamics, armature included) and ``mj_forward``'s ``qacc`` (forward dynamics, torques as
``qfrc_applied``), with constraints, springs, dampers and actuation disabled on every side.

States are random in MuJoCo's layout (``qpos`` inside the joint ranges with unit quaternions,
``qvel``, ``qacc`` and ``qfrc`` standard normal, no force on the free joint). kronjax is timed on
its own layout (:func:`kronjax.mjcf.from_mujoco`, applied once beforehand) and its outputs are
converted back (:func:`kronjax.mjcf.to_mujoco`) for the comparison on the leading samples. Times
are medians and ranges over the timing rounds, as in :mod:`bench.floating`; MJX runs in processes
of its own (``python -m bench.mjcf SPEC.json``), with XLA's default flags and without the CPU
fusion emitters.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import models
from ._timing import Record
from .floating import CHUNK, mjx_results, mjx_timed, time_compiled
from .peers import ROOT

ARMATURE = 0.1
ROBOTS = {  # model name: (URDF, free joint on the root)
    "panda (MJCF)": (ROOT / "tests" / "data" / "panda.urdf", False),
    "humanoid (MJCF)": (ROOT / "tests" / "data" / "humanoid.urdf", True),
}
OPERATIONS = ("mjcf_inverse_dynamics", "mjcf_forward_dynamics")


def mjcf_text(urdf: Path, floating: bool) -> str:
    """The robot as MJCF, written by MuJoCo: hinges and slides with ``ARMATURE``, a free joint on
    the root body where ``floating``."""
    import mujoco

    spec = mujoco.MjSpec.from_string(models.mjcf_from_urdf(urdf.read_text()))
    if floating:
        spec.worldbody.first_body().add_freejoint()  # before compilation: fusestatic would fuse a jointless root
        spec.compiler.balanceinertia = True
    for joint in spec.joints:
        if joint.type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            joint.armature = ARMATURE
    spec.compile()
    return spec.to_xml()


def rigid_model(path: str):
    """MuJoCo's model of the file with only the rigid-body terms (constraints, springs, dampers and
    actuation off), dense Jacobians."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= int(
        mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        | mujoco.mjtDisableBit.mjDSBL_SPRING
        | mujoco.mjtDisableBit.mjDSBL_DAMPER
        | mujoco.mjtDisableBit.mjDSBL_ACTUATION
    )
    return m


def random_states(m, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``qpos`` (joint ranges where limited, else [-1, 1]; unit quaternions), ``qvel``, ``qacc``,
    ``qfrc`` (zero on free joints) in MuJoCo's layout."""
    import mujoco

    rng = np.random.default_rng(seed)
    qpos = rng.uniform(-1.0, 1.0, (batch, m.nq))
    qfrc = rng.normal(size=(batch, m.nv))
    for j in range(m.njnt):
        adr, dof, kind = m.jnt_qposadr[j], m.jnt_dofadr[j], int(m.jnt_type[j])
        if kind == int(mujoco.mjtJoint.mjJNT_FREE):
            quat = rng.normal(size=(batch, 4))
            qpos[:, adr + 3 : adr + 7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
            qfrc[:, dof : dof + 6] = 0.0
        elif kind == int(mujoco.mjtJoint.mjJNT_BALL):
            quat = rng.normal(size=(batch, 4))
            qpos[:, adr : adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        elif m.jnt_limited[j]:
            qpos[:, adr] = rng.uniform(*m.jnt_range[j], batch)
    return {"qpos": qpos, "qvel": rng.normal(size=(batch, m.nv)), "qacc": rng.normal(size=(batch, m.nv)), "qfrc": qfrc}


def references(m, s: dict, count: int) -> dict[str, np.ndarray]:
    """MuJoCo's C library on the leading ``count`` states: ``mj_inverse`` and ``mj_forward``."""
    import mujoco

    d = mujoco.MjData(m)
    tau, qacc = [], []
    for k in range(count):
        d.qpos[:], d.qvel[:], d.qacc[:] = s["qpos"][k], s["qvel"][k], s["qacc"][k]
        mujoco.mj_inverse(m, d)
        tau.append(d.qfrc_inverse.copy())
        d.qfrc_applied[:] = s["qfrc"][k]
        mujoco.mj_forward(m, d)
        qacc.append(d.qacc.copy())
        d.qfrc_applied[:] = 0.0
    return {"mjcf_inverse_dynamics": np.stack(tau), "mjcf_forward_dynamics": np.stack(qacc)}


def mjx_main(spec_path: str) -> None:
    """``python -m bench.mjcf SPEC.json``: MJX timed in this process (its XLA flags are read when
    JAX starts). SPEC: ``mjcf`` (path), ``samples`` (``.npz`` in MuJoCo's layout), ``batch``,
    ``probe``, ``max_call_s``, ``timing``, ``check``, ``out``."""
    spec = json.loads(Path(spec_path).read_text())
    import jax

    jax.config.update("jax_enable_x64", True)
    from mujoco import mjx

    model = mjx.put_model(rigid_model(spec["mjcf"]))
    data = mjx.make_data(model)
    s = dict(np.load(spec["samples"]))
    functions = {
        "mjcf_inverse_dynamics": (lambda q, v, a: mjx.inverse(model, data.replace(qpos=q, qvel=v, qacc=a)).qfrc_inverse, "qacc"),
        "mjcf_forward_dynamics": (lambda q, v, f: mjx.forward(model, data.replace(qpos=q, qvel=v, qfrc_applied=f)).qacc, "qfrc"),
    }
    result = {
        operation: mjx_timed(jax.vmap(fn), [s["qpos"], s["qvel"], s[last]], spec) for operation, (fn, last) in functions.items()
    }
    result["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    Path(spec["out"]).write_text(json.dumps(result))


def section(suite) -> None:
    """The ``mjcf`` section of :class:`bench.suite.Suite`: kronjax (``jax.vmap`` and
    ``kj.chunked_vmap``) and MJX on each robot's MJCF file, checked against MuJoCo's C library."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj
    from kronjax.mjcf import from_mujoco, to_mujoco

    c = suite.config
    with tempfile.TemporaryDirectory(prefix="kronjax-mjcf-") as tmp:
        for name, (urdf, floating) in ROBOTS.items():
            path = str(Path(tmp, "robot.xml"))
            try:
                Path(path).write_text(mjcf_text(urdf, floating))
                m = rigid_model(path)
                model = kj.load_mjcf(path)
            except Exception as exc:
                for operation in OPERATIONS:
                    suite.failed(
                        exc,
                        operation=operation,
                        library="kronjax",
                        method="load_mjcf",
                        batch=c.big,
                        precision="float64",
                        model=name,
                    )
                continue
            s = random_states(m, c.big)
            reference = references(m, s, min(c.check, c.big))
            common = dict(batch=c.big, precision="float64", model=name, n_dof=m.nv)
            suite.log(f"  {name}: nq = {m.nq}, nv = {m.nv}, armature {ARMATURE} on hinges and slides; batch {c.big}")
            q, v, a, f = jax.jit(jax.vmap(lambda *x: from_mujoco(model, *x)))(
                *(jnp.asarray(s[k]) for k in ("qpos", "qvel", "qacc", "qfrc"))
            )
            ours = {
                "mjcf_inverse_dynamics": (
                    "inverse_dynamics (rnea)",
                    lambda q, v, a: kj.inverse_dynamics(model, q, v, a),
                    (q, v, a),
                ),
                "mjcf_forward_dynamics": (
                    "forward_dynamics (aba)",
                    lambda q, v, f: kj.forward_dynamics(model, q, v, f),
                    (q, v, f),
                ),
            }
            for operation, (method, fn, args) in ours.items():
                for chunk in (None, CHUNK):
                    fields = dict(
                        operation=operation,
                        library="kronjax",
                        method=method + (f", chunked_vmap({chunk})" if chunk else ""),
                        **common,
                    )
                    try:
                        timed, compile_s, out = time_compiled(
                            kj.chunked_vmap(fn, chunk) if chunk else jax.vmap(fn), args, suite.timing
                        )
                        head = slice(0, len(reference[operation]))
                        if operation == "mjcf_inverse_dynamics":
                            mine = jax.vmap(lambda q, v, t: to_mujoco(model, q, v, tau=t)[3])(q[head], v[head], out[head])
                        else:
                            mine = jax.vmap(lambda q, v, a: to_mujoco(model, q, v, a)[2])(q[head], v[head], out[head])
                        error = models.relative_error(np.asarray(mine), reference[operation])
                        suite.add(Record(**fields, compile_s=compile_s, rel_err=error, **timed))
                    except Exception as exc:
                        suite.failed(exc, **fields)
            if suite.available("mjx"):
                mjx_rows(suite, path, s, reference, common)


def mjx_rows(suite, path: str, s: dict, reference: dict, common: dict) -> None:
    """MJX on the same file (:func:`mjx_main`, through :func:`bench.floating.mjx_results`)."""
    c = suite.config
    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        samples = Path(tmp, "samples.npz")
        np.savez(samples, **s)
        spec = {
            "mjcf": path,
            "samples": str(samples),
            "batch": common["batch"],
            "probe": c.mjx_probe,
            "max_call_s": c.mjx_max_call_s,
            "timing": suite.timing,
            "check": c.check,
        }
        operations = {"mjcf_inverse_dynamics": "inverse", "mjcf_forward_dynamics": "forward"}
        for operation, method, r, flags in mjx_results(suite, "bench.mjcf", spec, operations, common):
            head = np.asarray(r["head"])
            suite.add(
                Record(
                    **{**common, "batch": r["batch"]},
                    operation=operation,
                    library="mjx",
                    method=method,
                    seconds_per_call=r["seconds_per_call"],
                    compile_s=r["compile_s"],
                    rel_err=models.relative_error(head, reference[operation][: len(head)]),
                    note=r["note"],
                    extra={**r["extra"], "xla_flags": flags},
                )
            )


if __name__ == "__main__":
    mjx_main(sys.argv[1])
