"""Section ``mjcf``: kronjax and MJX on the same MJCF file, rotor inertias included: the Panda
(fixed base) and Romeo on a free joint, written by MuJoCo from ``tests/data/*.urdf`` with
``armature = 0.1`` on every hinge and slide; kronjax reads it with ``kj.load_mjcf``, MJX compiles
it, and MuJoCo's C library on the same file (``mj_inverse``, ``mj_forward``'s ``qacc``; constraints,
springs, dampers and actuation off) is the reference on the leading samples. States are random in
MuJoCo's layout; kronjax runs on its own (``kronjax.mjcf.from_mujoco`` applied beforehand, outputs
converted back). Times and MJX's processes as in :mod:`bench.floating`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import models
from ._timing import Record, time_compiled
from .floating import CHUNK, mjx_rows, mjx_timed
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
    methods = {"mjcf_inverse_dynamics": "inverse_dynamics (rnea)", "mjcf_forward_dynamics": "forward_dynamics (aba)"}
    with tempfile.TemporaryDirectory(prefix="kronjax-mjcf-") as tmp:
        for name, (urdf, floating) in ROBOTS.items():
            path = str(Path(tmp, "robot.xml"))
            try:
                Path(path).write_text(mjcf_text(urdf, floating))
                m = rigid_model(path)
                model = kj.load_mjcf(path)
            except Exception as exc:
                suite.failed_each(
                    exc, dict.fromkeys(OPERATIONS, "load_mjcf"), library="kronjax", batch=c.big, precision="float64", model=name
                )
                continue
            s = random_states(m, c.big)
            reference = references(m, s, min(c.check, c.big))
            common = dict(batch=c.big, precision="float64", model=name, n_dof=m.nv)
            suite.log(f"  {name}: nq = {m.nq}, nv = {m.nv}, armature {ARMATURE} on hinges and slides; batch {c.big}")
            q, v, a, f = jax.jit(jax.vmap(lambda *x: from_mujoco(model, *x)))(
                *(jnp.asarray(s[k]) for k in ("qpos", "qvel", "qacc", "qfrc"))
            )
            head = slice(0, len(reference["mjcf_inverse_dynamics"]))
            ours = {  # operation: (function, arguments, its output in MuJoCo's layout)
                "mjcf_inverse_dynamics": (kj.inverse_dynamics, (q, v, a), lambda q, v, t: to_mujoco(model, q, v, tau=t)[3]),
                "mjcf_forward_dynamics": (kj.forward_dynamics, (q, v, f), lambda q, v, a: to_mujoco(model, q, v, a)[2]),
            }
            for operation, (fn, args, back) in ours.items():
                for chunk in (None, CHUNK):
                    method = methods[operation] + (f", chunked_vmap({chunk})" if chunk else "")
                    fields = dict(operation=operation, library="kronjax", method=method, **common)
                    try:
                        one = lambda *x, fn=fn: fn(model, *x)  # noqa: E731
                        batched = kj.chunked_vmap(one, chunk) if chunk else jax.vmap(one)
                        timed, compile_s, out = time_compiled(batched, args, suite.timing)
                        mine = jax.vmap(back)(q[head], v[head], out[head])
                        error = models.relative_error(np.asarray(mine), reference[operation])
                        suite.add(Record(**fields, compile_s=compile_s, rel_err=error, **timed))
                    except Exception as exc:
                        suite.failed(exc, **fields)
            if suite.available("mjx"):

                def save(folder, s=s):
                    np.savez(Path(folder, "samples.npz"), **s)
                    return str(Path(folder, "samples.npz"))

                def error(operation, reference=reference):
                    return lambda head: models.relative_error(head, reference[operation][: len(head)])

                mjx_rows(suite, "bench.mjcf", {"mjcf": path}, save, error, common)


if __name__ == "__main__":
    mjx_main(sys.argv[1])
