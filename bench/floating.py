"""Section ``floating``: inverse and forward dynamics of Romeo (``tests/data/humanoid.urdf``)
with a free-flyer root (nq = 38, nv = 37), float64, at the peers' batch, against Pinocchio (per
call and ``*InParallel``) and adam, jaxsim, frax and MJX on the same robot. The setting, the
conventions and the results are in docs/benchmarks/measurements.md and floating.md.

States are in kronjax's layout (Pinocchio's conventions: ``q = [x, y, z, qx, qy, qz, qw, joints]``,
``v = [v_lin, w, joint rates]`` in the base frame), ``tau`` zero on the base; each peer gets them
in its own conventions and its outputs come back to kronjax's before the comparison with
Pinocchio on the leading samples (joints matched by name). MuJoCo balances one of Romeo's
inertias, so MJX's values differ from Pinocchio's (noted in its rows); jaxsim and frax need a
1e-9 kg inertial on the massless root.

kronjax runs as one ``jax.vmap``, as ``kj.chunked_vmap(fn, CHUNK)`` (not a power of two: such
per-body arrays share cache sets), and sharded over as many CPU devices as Pinocchio's threads in
a process of its own. Times are the median and range over the timing rounds. MJX and the sharded
rows run in processes of their own (``python -m bench.floating SPEC.json``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import models
from ._timing import Record, compile_jit, median_fields, rounds, time_compiled
from .peers import ROOT
from .report import FLOATING

HUMANOID = ROOT / "tests" / "data" / "humanoid.urdf"
OPERATIONS = FLOATING  # operation: Pinocchio's function
MODEL = "humanoid"
KRONJAX_METHODS = {"floating_inverse_dynamics": "inverse_dynamics (rnea)", "floating_forward_dynamics": "forward_dynamics (aba)"}
CHUNK = 2000  # kronjax's second row: kj.chunked_vmap(fn, CHUNK); not a power of two (module doc)


# --------------------------------------------------------------------------------------------
# conventions
# --------------------------------------------------------------------------------------------


def rotations(quaternion_xyzw, xp=np):
    """``(..., 3, 3)`` rotation matrices of unit quaternions ``[qx, qy, qz, qw]`` ``(..., 4)`` (``xp``:
    numpy or jax.numpy)."""
    x, y, z, w = (quaternion_xyzw[..., i] for i in range(4))
    return xp.stack(
        [
            xp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            xp.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            xp.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def _rotate(r: np.ndarray, x: np.ndarray, transpose: bool = False) -> np.ndarray:
    return np.einsum("bji,bj->bi" if transpose else "bij,bj->bi", r, x)


def to_mujoco(q, v, a, tau, joint_index) -> dict[str, np.ndarray]:
    """kronjax's states (``q (b, 7 + n)``, ``v``, ``a``, ``tau (b, 6 + n)``) in MuJoCo's free-joint
    conventions, the joints reordered by ``joint_index`` (the kronjax joint of each of the other
    library's joints)."""
    r = rotations(np.asarray(q[:, 3:7], float))
    v_lin, w = v[:, :3], v[:, 3:6]
    joints = lambda x, k: x[:, k + np.asarray(joint_index)]
    return {
        "q": np.concatenate([q[:, :3], q[:, 6:7], q[:, 3:6], joints(q, 7)], 1),
        "v": np.concatenate([_rotate(r, v_lin), w, joints(v, 6)], 1),
        "a": np.concatenate([_rotate(r, a[:, :3] + np.cross(w, v_lin)), a[:, 3:6], joints(a, 6)], 1),
        "tau": np.concatenate([_rotate(r, tau[:, :3]), tau[:, 3:6], joints(tau, 6)], 1),
    }


def from_mujoco(kind: str, out: np.ndarray, q, v, joint_index) -> np.ndarray:
    """An output in MuJoCo's free-joint conventions (``kind``: ``"tau"`` forces or ``"a"``
    accelerations) back in kronjax's, for the leading ``len(out)`` states ``q``, ``v``."""
    out = np.asarray(out, float)
    b = len(out)
    r, v_lin, w = rotations(np.asarray(q[:b, 3:7], float)), v[:b, :3], v[:b, 3:6]
    lin = _rotate(r, out[:, :3], transpose=True)
    if kind == "a":
        lin = lin - np.cross(w, v_lin)
    joints = np.empty_like(out[:, 6:])
    joints[:, np.asarray(joint_index)] = out[:, 6:]
    return np.concatenate([lin, out[:, 3:6], joints], 1)


# --------------------------------------------------------------------------------------------
# the robot and its states
# --------------------------------------------------------------------------------------------


class Humanoid:
    """kronjax's and Pinocchio's floating-base models of one URDF, the coordinate maps between
    them, random states in kronjax's layout and Pinocchio's references on the leading ones.
    ``mimic``: :func:`kronjax.load_urdf`'s; ``"independent"`` as Pinocchio reads a file with
    ``<mimic>`` elements (the maps are permutations only then)."""

    def __init__(self, path: Path, batch: int, check: int, threads: int, seed: int = 0, mimic: str = "coupled"):
        import jax
        import pinocchio as pin

        import kronjax as kj

        self.path, self.urdf = Path(path), Path(path).read_text()
        self.model = kj.load_urdf(self.path, floating_base=True, mimic=mimic)
        self.nq, self.nv = self.model.nq, self.model.nv
        self.pin = pin
        self.pm = pin.buildModelFromUrdf(str(self.path), pin.JointModelFreeFlyer())
        self.pm.gravity.linear = np.asarray(self.model.gravity, float)
        self.pd = self.pm.createData()
        moving = [n for n, k in zip(self.model.joint_names, self.model.kinematics.kinds) if k != "F"]
        self.joint_names = moving[1:]  # the actuated joints, kronjax's order (the root first in `moving`)
        ids = [self.pm.getJointId(n) for n in moving]
        # kronjax's coordinate k is Pinocchio's q_perm[k] (v_perm[k])
        self.q_perm = np.concatenate([np.arange(self.pm.idx_qs[j], self.pm.idx_qs[j] + self.pm.nqs[j]) for j in ids])
        self.v_perm = np.concatenate([np.arange(self.pm.idx_vs[j], self.pm.idx_vs[j] + self.pm.nvs[j]) for j in ids])

        keys = jax.random.split(jax.random.key(seed), batch)
        rng = np.random.default_rng(seed)
        self.q = np.asarray(jax.jit(jax.vmap(lambda k: kj.random_configuration(self.model, k)))(keys), float)
        self.v, self.a, self.tau = rng.normal(size=(3, batch, self.nv))
        self.tau[:, :6] = 0.0  # free floating: no wrench on the base
        self.threads = threads
        self.pool = pin.ModelPool(self.pm, threads) if hasattr(pin, "ModelPool") else None
        c = min(check, batch)
        self.ref = {
            "floating_inverse_dynamics": self._per_row(pin.rnea, self.q[:c], self.v[:c], self.a[:c]),
            "floating_forward_dynamics": self._per_row(pin.aba, self.q[:c], self.v[:c], self.tau[:c]),
        }

    def pin_q(self, q: np.ndarray) -> np.ndarray:
        out = np.empty_like(q)
        out[:, self.q_perm] = q
        return out

    def save_samples(self, directory: str | Path) -> str:
        """The states, kronjax's layout, as ``directory``/samples.npz (``q``, ``v``, ``a``, ``tau``)
        for a benchmark process of its own; returns the path."""
        path = Path(directory, "samples.npz")
        np.savez(path, q=self.q, v=self.v, a=self.a, tau=self.tau)
        return str(path)

    def pin_v(self, v: np.ndarray) -> np.ndarray:
        out = np.empty_like(v)
        out[:, self.v_perm] = v
        return out

    def _per_row(self, fn, q, v, x) -> np.ndarray:
        """``fn`` of Pinocchio per row, in kronjax's order."""
        rows = zip(self.pin_q(q), self.pin_v(v), self.pin_v(x))
        return np.stack([np.asarray(fn(self.pm, self.pd, *row))[self.v_perm] for row in rows])

    def error(self, operation: str) -> Callable[[np.ndarray], float]:
        """Relative error of outputs in kronjax's layout on the leading states."""
        ref = self.ref[operation]
        return lambda head: models.relative_error(head, ref[: len(head)])

    def joint_index(self, names) -> list[int]:
        """For another library's joint order ``names``: each one's position in kronjax's."""
        position = {n: i for i, n in enumerate(self.joint_names)}
        missing = [n for n in names if n not in position]
        if missing or len(names) != len(position):
            raise ValueError(f"joint names differ from kronjax's: {missing or sorted(set(position) - set(names))}")
        return [position[n] for n in names]


# --------------------------------------------------------------------------------------------
# the peers' functions of one sample, in kronjax's layout where cheap, else in their own
# --------------------------------------------------------------------------------------------


def adam_functions(robot: Humanoid):
    """adam's ``(inverse, forward)`` dynamics of one sample in kronjax's layout (BODY_FIXED
    velocities, adam's ``[linear, angular]`` base order = kronjax's)."""
    import jax.numpy as jnp
    from adam.core.constants import Representations

    from .peers import adam_computations

    kd = adam_computations(robot.urdf, robot.joint_names, jnp.float64, robot.model.gravity)
    kd.set_frame_velocity_representation(Representations.BODY_FIXED_REPRESENTATION)

    def transform(q):
        return jnp.eye(4, dtype=q.dtype).at[:3, :3].set(rotations(q[3:7], jnp)).at[:3, 3].set(q[:3])

    def inverse(q, v, a):
        h = transform(q)
        return kd.mass_matrix(h, q[7:]) @ a + kd.bias_force(h, q[7:], v[:6], v[6:])

    def forward(q, v, tau):
        return kd.aba(transform(q), q[7:], v[:6], v[6:], tau[6:])

    return inverse, forward


def jaxsim_functions(robot: Humanoid):
    """jaxsim's ``(inverse, forward)`` dynamics of one sample in kronjax's layout (``VelRepr.Body``)
    and the kronjax index of each of its joints."""
    import jax.numpy as jnp
    import jaxsim.api as js
    from jaxsim import VelRepr

    sdf = models.sdf_from_urdf(robot.urdf, fixed=False)
    model = js.model.JaxSimModel.build_from_model_description(sdf, is_urdf=False, gravity=-float(robot.model.gravity[2]))
    index = np.asarray(robot.joint_index(list(model.joint_names())))

    def data(q, v):
        return js.data.JaxSimModelData.build(
            model=model,
            base_position=q[:3],
            base_quaternion=jnp.concatenate([q[6:7], q[3:6]]),
            joint_positions=q[7:][index],
            base_linear_velocity=v[:3],
            base_angular_velocity=v[3:6],
            joint_velocities=v[6:][index],
            velocity_representation=VelRepr.Body,
        )

    def back(base, joints):  # jaxsim's joint order to kronjax's
        return jnp.concatenate([base, jnp.zeros_like(joints).at[index].set(joints)])

    def inverse(q, v, a):
        f, tau = js.model.inverse_dynamics(model, data(q, v), joint_accelerations=a[6:][index], base_acceleration=a[:6])
        return back(f, tau)

    def forward(q, v, tau):
        base, joints = js.model.forward_dynamics_aba(model, data(q, v), joint_forces=tau[6:][index])
        return back(base, joints)

    return inverse, forward


def frax_functions(robot: Humanoid):
    """frax's ``(inverse, forward)`` dynamics of one sample, in MuJoCo's free-joint conventions
    (its ``floating_base="quaternion"``) with kronjax's joint order (frax's ``joint_ordering``)."""
    import jax.numpy as jnp

    from .peers import frax_robot

    urdf = models.urdf_with_root_inertial(robot.urdf, mass=1e-9, inertia=1e-12)
    fr = frax_robot(urdf, joint_ordering=list(robot.joint_names), floating_base="quaternion")
    gravity = jnp.array([*(-np.asarray(robot.model.gravity, float)), 0.0, 0.0, 0.0])  # [linear, angular]

    def inverse(q, v, a):
        return fr.rnea(q, v, a, gravity, None)

    def forward(q, v, tau):
        return fr.forward_dynamics(q, v, tau, None)

    return inverse, forward


def mjx_functions(urdf: str):
    """MJX's ``(inverse, forward)`` dynamics of one sample in MuJoCo's conventions (``qpos``,
    ``qvel``, ``qacc`` / ``qfrc_applied``), the URDF compiled with a free joint on its root body,
    inertias balanced (MuJoCo refuses Romeo's as given), constraints disabled; and the MuJoCo
    model's actuated joint names in its order."""
    import mujoco
    from mujoco import mjx

    spec = mujoco.MjSpec.from_string(models.mjcf_from_urdf(urdf))
    spec.worldbody.first_body().add_freejoint()  # before compilation: fusestatic would fuse a jointless root into the world
    spec.compiler.balanceinertia = True
    mj_model = spec.compile()
    mj_model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    model = mjx.put_model(mj_model)
    names = [mj_model.joint(j).name for j in range(1, mj_model.njnt)]

    def inverse(q, v, a):
        return mjx.inverse(model, mjx.make_data(model).replace(qpos=q, qvel=v, qacc=a)).qfrc_inverse

    def forward(q, v, tau):
        return mjx.forward(model, mjx.make_data(model).replace(qpos=q, qvel=v, qfrc_applied=tau)).qacc

    return inverse, forward, names


def mjx_timed(batched: Callable, arrays: list, spec: dict) -> dict:
    """MJX's batched function timed at ``spec["batch"]`` (or at ``spec["probe"]`` where a call at
    the batch would take more than ``spec["max_call_s"]``): record fields, ``compile_s``,
    ``batch``, ``note`` and the leading ``spec["check"]`` outputs as they come (``head``)."""
    import jax
    import jax.numpy as jnp

    batch, note, probe_compile_s = spec["batch"], "", None
    probe = min(spec["probe"], batch)
    if probe < batch:  # XLA:CPU's default fusion emitters can make MJX very slow: look first
        small = tuple(jnp.asarray(x[:probe]) for x in arrays)
        compiled, probe_compile_s = compile_jit(batched, *small)
        jax.block_until_ready(compiled(*small))
        start = time.perf_counter()
        jax.block_until_ready(compiled(*small))
        estimate = (time.perf_counter() - start) / probe * batch
        if estimate > spec["max_call_s"]:
            note = f"batch {probe}, not {batch}: one call at {batch} would take ~{estimate:.0f} s"
            batch = probe
    fields, compile_s, out = time_compiled(batched, tuple(jnp.asarray(x[:batch]) for x in arrays), spec["timing"])
    if note:  # timed at the probe's batch: compiled above (jit's cache answered this time)
        compile_s = probe_compile_s
    head = np.asarray(out[: spec["check"]]).tolist()
    return {**fields, "compile_s": compile_s, "batch": batch, "note": note, "dtype": str(out.dtype), "head": head}


def sharded_main(spec: dict) -> None:
    """kronjax's rows sharded over this process's CPU devices (``XLA_FLAGS`` sets their number
    before JAX starts): the batch split along its axis by a ``NamedSharding``, each device running
    ``jax.jit(kj.chunked_vmap(fn, spec["chunk"]))`` on its share. SPEC: ``urdf``, ``samples``,
    ``timing``, ``check``, ``chunk``, ``out``."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    import kronjax as kj

    jax.config.update("jax_enable_x64", True)
    model = kj.load_urdf(spec["urdf"], floating_base=True)
    # Mesh (automatic axes), not jax.make_mesh: kronjax.batching's docstring says why
    batch = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))
    s = {k: jax.device_put(jnp.asarray(x), batch) for k, x in np.load(spec["samples"]).items()}
    result = {"devices": len(jax.devices())}
    for operation, fn, args in (
        ("floating_inverse_dynamics", kj.inverse_dynamics, ("q", "v", "a")),
        ("floating_forward_dynamics", kj.forward_dynamics, ("q", "v", "tau")),
    ):
        batched = kj.chunked_vmap(lambda *x, fn=fn: fn(model, *x), spec["chunk"])
        fields, compile_s, out = time_compiled(batched, tuple(s[k] for k in args), spec["timing"])
        result[operation] = {**fields, "compile_s": compile_s, "head": np.asarray(out[: spec["check"]]).tolist()}
    Path(spec["out"]).write_text(json.dumps(result))


def main(spec_path: str) -> None:
    """``python -m bench.floating SPEC.json``: MJX (:func:`mjx_main`) or, with ``"library":
    "kronjax"``, kronjax sharded over CPU devices (:func:`sharded_main`), timed in this process
    (its XLA flags are read when JAX starts)."""
    spec = json.loads(Path(spec_path).read_text())
    (sharded_main if spec.get("library") == "kronjax" else mjx_main)(spec)


def mjx_main(spec: dict) -> None:
    """MJX in a process of its own. SPEC: ``urdf``, ``samples`` (``.npz``: kronjax-layout ``q``,
    ``v``, ``a``, ``tau``), ``joint_names`` (kronjax's actuated joints), ``batch``, ``probe``,
    ``max_call_s``, ``timing``, ``check``, ``out``. Writes per operation the median time, range,
    compile time, batch, note and the leading outputs converted to kronjax's layout."""
    import jax

    jax.config.update("jax_enable_x64", True)

    inverse, forward, names = mjx_functions(Path(spec["urdf"]).read_text())
    position = {n: i for i, n in enumerate(spec["joint_names"])}
    index = [position[n] for n in names]
    s = dict(np.load(spec["samples"]))
    mj = to_mujoco(s["q"], s["v"], s["a"], s["tau"], index)
    result = {}
    for operation, fn, args, kind in (
        ("floating_inverse_dynamics", inverse, ("q", "v", "a"), "tau"),
        ("floating_forward_dynamics", forward, ("q", "v", "tau"), "a"),
    ):
        r = mjx_timed(jax.vmap(fn), [mj[k] for k in args], spec)
        result[operation] = {**r, "head": from_mujoco(kind, np.asarray(r["head"]), s["q"], s["v"], index).tolist()}
    result["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    Path(spec["out"]).write_text(json.dumps(result))


# --------------------------------------------------------------------------------------------
# the section
# --------------------------------------------------------------------------------------------


def section(suite) -> None:
    """The ``floating`` section of :class:`bench.suite.Suite`: kronjax, Pinocchio (per call and
    ``*InParallel``), adam, jaxsim, frax and MJX on the floating-base humanoid."""
    import jax
    import jax.numpy as jnp

    import kronjax as kj

    c = suite.config
    robot = Humanoid(HUMANOID, c.big, c.check, c.threads)
    common = dict(batch=c.big, precision="float64", model=MODEL, n_dof=robot.nv)
    arrays = {
        "floating_inverse_dynamics": (robot.q, robot.v, robot.a),
        "floating_forward_dynamics": (robot.q, robot.v, robot.tau),
    }
    mj = to_mujoco(robot.q, robot.v, robot.a, robot.tau, range(len(robot.joint_names)))  # frax's: kronjax's joint order
    mj_arrays = {
        "floating_inverse_dynamics": (mj["q"], mj["v"], mj["a"]),
        "floating_forward_dynamics": (mj["q"], mj["v"], mj["tau"]),
    }
    suite.log(f"  Romeo with a free-flyer root: nq = {robot.nq}, nv = {robot.nv}; batch {c.big}, float64")

    def jax_row(library, operation, method, fn, note="", chunk=None, mujoco=None):
        """``mujoco``: the kind of output (``"tau"``, ``"a"``) of a function in MuJoCo's conventions."""
        fields = dict(operation=operation, library=library, method=method, **common)
        try:
            args = tuple(jnp.asarray(x) for x in (mj_arrays if mujoco else arrays)[operation])
            timed, compile_s, out = time_compiled(kj.chunked_vmap(fn, chunk) if chunk else jax.vmap(fn), args, suite.timing)
            head = np.asarray(out[: c.check], float)
            if mujoco:
                head = from_mujoco(mujoco, head, robot.q, robot.v, range(len(robot.joint_names)))
            suite.add(Record(**fields, compile_s=compile_s, rel_err=robot.error(operation)(head), note=note, **timed))
        except Exception as exc:  # a peer that fails is a note, never the end of the suite
            suite.failed(exc, **fields)

    model = robot.model
    for chunk in (None, CHUNK):  # one vmap, and chunks whose per-body arrays stay in the CPU's cache
        suffix = f", chunked_vmap({chunk})" if chunk else ""
        for (operation, method), fn in zip(KRONJAX_METHODS.items(), (kj.inverse_dynamics, kj.forward_dynamics)):
            jax_row("kronjax", operation, method + suffix, lambda *x, fn=fn: fn(model, *x), chunk=chunk)
    sharded_rows(suite, robot, common)
    pinocchio_rows(suite, robot, arrays, common)
    frax_note = "MuJoCo's free-joint conventions, converted"
    peers = [  # library, (inverse's method, forward's), build, note, outputs in MuJoCo's conventions
        ("adam", ("M a + h", "aba"), lambda: adam_functions(robot), "", False),
        (
            "jaxsim",
            ("inverse_dynamics", "forward_dynamics_aba"),
            lambda: jaxsim_functions(robot),
            "massless root link given 1e-9 kg",
            False,
        ),
        ("frax", ("rnea", "forward_dynamics (CRBA + Cholesky)"), lambda: frax_functions(robot), frax_note, True),
    ]
    for library, names, build, note, mujoco in peers:
        if not suite.available(library):
            continue
        methods = dict(zip(OPERATIONS, names))
        try:
            functions = build()
        except Exception as exc:
            suite.failed_each(exc, methods, library=library, **common)
            continue
        for (operation, method), fn, kind in zip(methods.items(), functions, ("tau", "a")):
            jax_row(library, operation, method, fn, note=note, mujoco=mujoco and kind)
    if suite.available("mjx"):
        spec = {"urdf": str(robot.path), "joint_names": list(robot.joint_names)}
        note = "MuJoCo balances an inertia (see bench.floating): values differ from Pinocchio's"
        mjx_rows(suite, "bench.floating", spec, robot.save_samples, robot.error, common, note)


def subprocess_record(suite, r: dict, error, note: str = "", **fields) -> Record:
    """A row timed in a process of its own (``r``: its result, the leading outputs as ``head``)."""
    notes = "; ".join(x for x in (r.get("note"), note) if x)
    timed = dict(seconds_per_call=r["seconds_per_call"], compile_s=r["compile_s"], extra=r["extra"])
    return suite.add(Record(**fields, **timed, rel_err=error(np.asarray(r["head"])), note=notes))


def sharded_rows(suite, robot: Humanoid, common: dict) -> None:
    """kronjax on ``threads`` CPU devices (as many as Pinocchio's threads), in a process of its
    own (:func:`sharded_main`): the two cores used through ``jax.sharding``, as Pinocchio's
    ``*InParallel`` uses them through its thread pool."""
    from .peers import run_module

    c = suite.config
    methods = {k: f"{v}, chunked_vmap({CHUNK}), sharded over {robot.threads} CPU devices" for k, v in KRONJAX_METHODS.items()}
    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        spec = {"library": "kronjax", "urdf": str(robot.path), "samples": robot.save_samples(tmp), "timing": suite.timing}
        spec.update(check=c.check, chunk=CHUNK, out=str(Path(tmp, "result.json")))
        flag = f"--xla_force_host_platform_device_count={robot.threads}"
        try:
            result = run_module("bench.floating", spec, False, tmp, extra_flags=[flag])
            if result["devices"] != robot.threads:
                raise RuntimeError(f"{result['devices']} CPU devices, not {robot.threads}: XLA_FLAGS already sets a count")
        except Exception as exc:
            return suite.failed_each(exc, methods, library="kronjax", **common)
    for operation, method in methods.items():
        r = result[operation]
        r["extra"]["xla_flags"] = flag
        subprocess_record(suite, r, robot.error(operation), operation=operation, library="kronjax", method=method, **common)


def pinocchio_rows(suite, robot: Humanoid, arrays: dict, common: dict) -> None:
    """Pinocchio's ``rnea`` / ``aba`` per call from Python (over the ``check`` leading states) and
    ``rneaInParallel`` / ``abaInParallel`` with ``threads`` threads on the batch."""
    pin, c = robot.pin, suite.config
    for operation, name in OPERATIONS.items():
        q, v, x = arrays[operation]
        pq, pv, px = robot.pin_q(q), robot.pin_v(v), robot.pin_v(x)
        fn, pm, pd = getattr(pin, name), robot.pm, robot.pd
        rows = [tuple(np.ascontiguousarray(r) for r in row) for row in zip(pq[: c.check], pv[: c.check], px[: c.check])]

        def run(rows=rows, fn=fn, pm=pm, pd=pd):
            for row in rows:
                fn(pm, pd, *row)

        fields = dict(operation=operation, library="pinocchio", **common)
        timed = median_fields([t / len(rows) for t in rounds(run, **suite.timing)])
        per_call = {**fields, "batch": 1, "method": f"{name} (per call)"}
        suite.add(Record(**per_call, rel_err=0.0, note="from Python, binding included", **timed))
        method = f"{name}InParallel({robot.threads})"
        parallel = getattr(pin, f"{name}InParallel", None)
        if parallel is None or robot.pool is None:
            suite.add(Record(**fields, method=method, note=f"pin.{name}InParallel absent in this Pinocchio"))
            continue
        try:
            columns = [np.ascontiguousarray(a).T for a in (pq, pv, px)]  # (n, batch), Fortran order: Eigen's layout
            out = np.empty_like(pv).T
            call = lambda fn=parallel, columns=columns, out=out: fn(robot.threads, robot.pool, *columns, out)
            timed = median_fields(rounds(call, **suite.timing))
            head = np.asarray(out.T[: c.check])[:, robot.v_perm]
            suite.add(Record(**fields, method=method, rel_err=robot.error(operation)(head), **timed))
        except Exception as exc:
            suite.failed(exc, **fields, method=method)


def mjx_rows(suite, module: str, spec: dict, save_samples, error, common: dict, note: str = "") -> None:
    """MJX run by ``python -m module`` (its ``mjx_main``) in a process per XLA variant (XLA's
    default flags, and no CPU fusion emitters): ``spec`` without its samples, timing and output;
    ``save_samples(folder)`` writes the samples and returns their path, ``error(operation)`` the
    comparison of the leading outputs. A failed run is a failed row of each operation."""
    from .peers import run_module

    c = suite.config
    prefix = module.rsplit(".", 1)[1]
    operations = {f"{prefix}_inverse_dynamics": "inverse", f"{prefix}_forward_dynamics": "forward"}
    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        spec = {**spec, "samples": save_samples(tmp), "batch": common["batch"], "probe": c.mjx_probe, "check": c.check}
        spec.update(max_call_s=c.mjx_max_call_s, timing=suite.timing, out=str(Path(tmp, "result.json")))
        for label, no_fusion in (("default XLA flags", False), ("no fusion emitters", True)):
            methods = {operation: f"{name} ({label})" for operation, name in operations.items()}
            try:
                result = run_module(module, spec, no_fusion, tmp)
            except Exception as exc:
                suite.failed_each(exc, methods, library="mjx", **common)
                continue
            for operation, method in methods.items():
                r = result[operation]
                r["extra"]["xla_flags"] = result["xla_flags"]
                fields = {**common, "batch": r["batch"], "operation": operation, "library": "mjx", "method": method}
                subprocess_record(suite, r, error(operation), note, **fields)


if __name__ == "__main__":
    main(sys.argv[1])
