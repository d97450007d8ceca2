"""Section ``floating``: inverse and forward dynamics of a floating-base humanoid
(Romeo, ``tests/data/humanoid.urdf`` with a free-flyer root: nq = 38, nv = 37), float64, at the
peers' batch (``Config.big``, 10^4 by default), against Pinocchio (per call and
``rneaInParallel`` / ``abaInParallel``) and the JAX peers on the same robot with a free base.

States, in kronjax's layout (Pinocchio's conventions): ``q = [x, y, z, qx, qy, qz, qw, joints]``
from ``kj.random_configuration`` (translations in [-1, 1], joints inside their limits);
``v = [v_lin, w, joint rates]`` with the base's linear and angular velocity in the base frame, and
``a``, standard normal; ``tau`` standard normal on the joints and zero on the base (a free-floating
robot: adam's, jaxsim's, MJX's and frax's forward dynamics take joint torques only).

Each library gets the states in its own conventions and its outputs come back to kronjax's
before they are compared with Pinocchio on the leading samples:

- Pinocchio orders sibling joints by name, kronjax in file order: coordinates are mapped by joint
  name (as ``tests/test_floating_base.py``'s ``Twin``).
- adam: base pose as a 4 x 4 transform, velocities in its BODY_FIXED representation (Pinocchio's
  local frame); inverse dynamics is ``M a + h`` (adam has no RNEA with accelerations), forward
  dynamics its ``aba``.
- jaxsim: base position, quaternion ``wxyz``, velocities in ``VelRepr.Body``; its
  ``inverse_dynamics`` and ``forward_dynamics_aba``. jaxsim drops massless links, so the massless
  root link gets 1e-9 kg (:func:`bench.models.sdf_from_urdf`).
- MJX and frax (MuJoCo's free joint): ``qpos = [x, y, z, qw, qx, qy, qz, ...]``, the linear
  velocity in the world frame, the angular one in the base frame. With ``R`` the base's rotation:
  ``v_world = R v_lin``, ``dv_world/dt = R (a_lin + w x v_lin)``, the base force of inverse
  dynamics ``f_lin = R^T f_world``. MuJoCo refuses Romeo's inertias as given
  (RShoulderYawLink's breaks the triangle inequality) and, with ``balanceinertia``, replaces that
  link's by an isotropic one (0.0026 kg m^2 for principal moments up to 0.0065), so MJX's values
  differ from Pinocchio's (about 5e-5 relative in inverse dynamics, 1e-1 in forward dynamics, the
  residual in the right arm; noted in the rows); frax's root link gets a 1e-9 kg inertial, which
  it needs.

kronjax runs twice: one ``jax.vmap`` over the batch, and ``kj.chunked_vmap(fn, 2000)``, whose
per-body arrays of a chunk stay in the CPU's cache between the recursions' passes. A chunk of 2048
samples was much slower (forward dynamics 11.8 us against 6.1 us per sample at 2000 on the 2-core
VM): each per-body array is then 16 KiB, a power of two, and the arrays of one step map to the same
cache sets; ``chunked_vmap`` now runs such a chunk with 8 samples more (kronjax.batching). A third row runs the chunks sharded over as many CPU devices as Pinocchio's threads,
in a process of its own (``XLA_FLAGS=--xla_force_host_platform_device_count=N`` is read when JAX
starts): kronjax's way of using the cores that ``*InParallel`` uses with its thread pool.

Times are the median and range over ``timing["repeats"]`` rounds (a round: calls repeated for at
least ``timing["min_seconds"]``), as ``seconds_per_call`` and ``extra["seconds_per_call_range"]``.
MJX runs in processes of its own (``python -m bench.floating SPEC.json``), with XLA's default
flags and without the CPU fusion emitters, as in section ``inverse``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import models
from ._timing import Record, compile_jit, rounds
from .peers import ROOT
from .report import FLOATING

HUMANOID = ROOT / "tests" / "data" / "humanoid.urdf"
OPERATIONS = FLOATING  # operation: Pinocchio's function
MODEL = "humanoid"
KRONJAX_METHODS = {"floating_inverse_dynamics": "inverse_dynamics (rnea)", "floating_forward_dynamics": "forward_dynamics (aba)"}
CHUNK = 2000  # kronjax's second row: kj.chunked_vmap(fn, CHUNK); not a power of two (module doc)


# --------------------------------------------------------------------------------------------
# timing: median and range over rounds
# --------------------------------------------------------------------------------------------


def _timed(times: list[float]) -> dict:
    """Record fields of per-call times: the median, and the range in ``extra``."""
    return {
        "seconds_per_call": float(np.median(times)),
        "extra": {"seconds_per_call_range": [float(min(times)), float(max(times))], "rounds": len(times)},
    }


def time_compiled(fn: Callable, args: tuple, timing: dict) -> tuple[dict, float, Any]:
    """``jax.jit(fn)`` compiled for ``args`` and timed: ``(record fields, compile seconds, output)``."""
    import jax

    compiled, compile_s = compile_jit(fn, *args)
    out = jax.block_until_ready(compiled(*args))
    return _timed(rounds(lambda: jax.block_until_ready(compiled(*args)), **timing)), compile_s, out


# --------------------------------------------------------------------------------------------
# conventions
# --------------------------------------------------------------------------------------------


def rotations(quaternion_xyzw: np.ndarray) -> np.ndarray:
    """``(batch, 3, 3)`` rotation matrices of unit quaternions ``[qx, qy, qz, qw]`` ``(batch, 4)``."""
    x, y, z, w = np.moveaxis(np.asarray(quaternion_xyzw, float), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def _rotate(r: np.ndarray, x: np.ndarray, transpose: bool = False) -> np.ndarray:
    return np.einsum("bji,bj->bi" if transpose else "bij,bj->bi", r, x)


def to_mujoco(q, v, a, tau, joint_index) -> dict[str, np.ndarray]:
    """kronjax's states (``q (b, 7 + n)``, ``v``, ``a``, ``tau (b, 6 + n)``) in MuJoCo's free-joint
    conventions, the joints reordered by ``joint_index`` (the kronjax joint of each of the other
    library's joints)."""
    r = rotations(q[:, 3:7])
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
    r, v_lin, w = rotations(q[:b, 3:7]), v[:b, :3], v[:b, 3:6]
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
    them, random states in kronjax's layout and Pinocchio's references on the leading ones."""

    def __init__(self, path: Path, batch: int, check: int, threads: int, seed: int = 0):
        import jax
        import pinocchio as pin

        import kronjax as kj

        self.path, self.urdf = Path(path), Path(path).read_text()
        self.model = kj.load_urdf(self.path, floating_base=True)
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
    from adam.jax import KinDynComputations

    kd = KinDynComputations(
        robot.urdf,
        list(robot.joint_names),
        dtype=jnp.float64,
        gravity=np.array([*np.asarray(robot.model.gravity, float), 0, 0, 0]),
    )
    kd.set_frame_velocity_representation(Representations.BODY_FIXED_REPRESENTATION)
    factory = getattr(getattr(kd.rbdalgos, "math", None), "factory", None)
    if factory is not None and hasattr(factory, "_device"):  # see bench.peers.adam_inverse_dynamics
        factory._device = None

    def transform(q):
        x, y, z, w = q[3], q[4], q[5], q[6]
        r = jnp.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )
        return jnp.eye(4, dtype=q.dtype).at[:3, :3].set(r).at[:3, 3].set(q[:3])

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

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import frax
    with tempfile.TemporaryDirectory(prefix="kronjax-frax-") as tmp:  # frax reads a file
        path = os.path.join(tmp, "robot.urdf")
        with open(path, "w") as f:
            f.write(models.urdf_with_root_inertial(robot.urdf, mass=1e-9, inertia=1e-12))
        fr = frax.Robot(path, joint_ordering=list(robot.joint_names), floating_base="quaternion")
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

    batch, note = spec["batch"], ""
    probe = min(spec["probe"], batch)
    if probe < batch:  # XLA:CPU's default fusion emitters can make MJX very slow: look first
        small = tuple(jnp.asarray(x[:probe]) for x in arrays)
        compiled, _ = compile_jit(batched, *small)
        jax.block_until_ready(compiled(*small))
        start = time.perf_counter()
        jax.block_until_ready(compiled(*small))
        estimate = (time.perf_counter() - start) / probe * batch
        if estimate > spec["max_call_s"]:
            note = f"batch {probe}, not {batch}: one call at {batch} would take ~{estimate:.0f} s"
            batch = probe
    fields, compile_s, out = time_compiled(batched, tuple(jnp.asarray(x[:batch]) for x in arrays), spec["timing"])
    return {**fields, "compile_s": compile_s, "batch": batch, "note": note, "head": np.asarray(out[: spec["check"]]).tolist()}


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
    batch = c.big
    robot = Humanoid(HUMANOID, batch, c.check, c.threads)
    common = dict(batch=batch, precision="float64", model=MODEL, n_dof=robot.nv)
    arrays = {
        "floating_inverse_dynamics": (robot.q, robot.v, robot.a),
        "floating_forward_dynamics": (robot.q, robot.v, robot.tau),
    }
    suite.log(f"  Romeo with a free-flyer root: nq = {robot.nq}, nv = {robot.nv}; batch {batch}, float64")

    def jax_row(library, operation, method, fn, convert=None, note="", chunk=None):
        fields = dict(operation=operation, library=library, method=method, **common)
        try:
            args = tuple(jnp.asarray(x) for x in arrays[operation])
            timed, compile_s, out = time_compiled(kj.chunked_vmap(fn, chunk) if chunk else jax.vmap(fn), args, suite.timing)
            head = np.asarray(out[: c.check], float)
            if convert is not None:
                head = convert(head)
            suite.add(Record(**fields, compile_s=compile_s, rel_err=robot.error(operation)(head), note=note, **timed))
        except Exception as exc:  # a peer that fails is a note, never the end of the suite
            suite.failed(exc, **fields)

    model = robot.model
    for chunk in (None, CHUNK):  # one vmap, and chunks whose per-body arrays stay in the CPU's cache
        suffix = f", chunked_vmap({chunk})" if chunk else ""
        jax_row(
            "kronjax",
            "floating_inverse_dynamics",
            KRONJAX_METHODS["floating_inverse_dynamics"] + suffix,
            lambda q, v, a: kj.inverse_dynamics(model, q, v, a),
            chunk=chunk,
        )
        jax_row(
            "kronjax",
            "floating_forward_dynamics",
            KRONJAX_METHODS["floating_forward_dynamics"] + suffix,
            lambda q, v, tau: kj.forward_dynamics(model, q, v, tau),
            chunk=chunk,
        )
    sharded_rows(suite, robot, common)
    pinocchio_rows(suite, robot, arrays, common)

    peers = [
        ("adam", "M a + h", "aba", lambda: adam_functions(robot), ""),
        (
            "jaxsim",
            "inverse_dynamics",
            "forward_dynamics_aba",
            lambda: jaxsim_functions(robot),
            "massless root link given 1e-9 kg",
        ),
    ]
    for library, inverse_name, forward_name, build, note in peers:
        if not suite.available(library):
            continue
        try:
            inverse, forward = build()
        except Exception as exc:
            for operation, method in (("floating_inverse_dynamics", inverse_name), ("floating_forward_dynamics", forward_name)):
                suite.failed(exc, operation=operation, library=library, method=method, **common)
            continue
        jax_row(library, "floating_inverse_dynamics", inverse_name, inverse, note=note)
        jax_row(library, "floating_forward_dynamics", forward_name, forward, note=note)
    if suite.available("frax"):
        frax_rows(suite, robot, common)
    if suite.available("mjx"):
        mjx_rows(suite, robot, common)


def sharded_rows(suite, robot: Humanoid, common: dict) -> None:
    """kronjax on ``threads`` CPU devices (as many as Pinocchio's threads), in a process of its
    own (:func:`sharded_main`): the two cores used through ``jax.sharding``, as Pinocchio's
    ``*InParallel`` uses them through its thread pool."""
    from .peers import run_module

    c = suite.config
    methods = {k: f"{v}, chunked_vmap({CHUNK}), sharded over {robot.threads} CPU devices" for k, v in KRONJAX_METHODS.items()}
    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        spec = {
            "library": "kronjax",
            "urdf": str(robot.path),
            "samples": robot.save_samples(tmp),
            "timing": suite.timing,
            "check": c.check,
            "chunk": CHUNK,
            "out": str(Path(tmp, "result.json")),
        }
        flag = f"--xla_force_host_platform_device_count={robot.threads}"
        try:
            result = run_module("bench.floating", spec, False, tmp, extra_flags=[flag])
            if result["devices"] != robot.threads:
                raise RuntimeError(f"{result['devices']} CPU devices, not {robot.threads}: XLA_FLAGS already sets a count")
        except Exception as exc:
            for operation, method in methods.items():
                suite.failed(exc, operation=operation, library="kronjax", method=method, **common)
            return
    for operation, method in methods.items():
        r = result[operation]
        suite.add(
            Record(
                operation=operation,
                library="kronjax",
                method=method,
                **common,
                seconds_per_call=r["seconds_per_call"],
                compile_s=r["compile_s"],
                rel_err=robot.error(operation)(np.asarray(r["head"])),
                extra={**r["extra"], "xla_flags": flag},
            )
        )


def frax_rows(suite, robot: Humanoid, common: dict) -> None:
    """frax on states in MuJoCo's free-joint conventions (kronjax's joint order, frax's
    ``joint_ordering``), outputs converted back to kronjax's."""
    import jax
    import jax.numpy as jnp

    c = suite.config
    index = list(range(len(robot.joint_names)))
    mj = to_mujoco(robot.q, robot.v, robot.a, robot.tau, index)
    arrays = {
        "floating_inverse_dynamics": (mj["q"], mj["v"], mj["a"]),
        "floating_forward_dynamics": (mj["q"], mj["v"], mj["tau"]),
    }
    try:
        inverse, forward = frax_functions(robot)
    except Exception as exc:
        for operation in OPERATIONS:
            suite.failed(
                exc,
                operation=operation,
                library="frax",
                method="rnea" if operation == "floating_inverse_dynamics" else "forward_dynamics (CRBA + Cholesky)",
                **common,
            )
        return
    for operation, method, fn, kind in (
        ("floating_inverse_dynamics", "rnea", inverse, "tau"),
        ("floating_forward_dynamics", "forward_dynamics (CRBA + Cholesky)", forward, "a"),
    ):
        fields = dict(operation=operation, library="frax", method=method, **common)
        try:
            timed, compile_s, out = time_compiled(jax.vmap(fn), tuple(jnp.asarray(x) for x in arrays[operation]), suite.timing)
            head = from_mujoco(kind, np.asarray(out[: c.check]), robot.q, robot.v, index)
            suite.add(
                Record(
                    **fields,
                    compile_s=compile_s,
                    rel_err=robot.error(operation)(head),
                    note="MuJoCo's free-joint conventions, converted",
                    **timed,
                )
            )
        except Exception as exc:
            suite.failed(exc, **fields)


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
        timed = _timed([t / len(rows) for t in rounds(run, **suite.timing)])
        suite.add(
            Record(
                **{**fields, "batch": 1}, method=f"{name} (per call)", rel_err=0.0, note="from Python, binding included", **timed
            )
        )
        method = f"{name}InParallel({robot.threads})"
        parallel = getattr(pin, f"{name}InParallel", None)
        if parallel is None or robot.pool is None:
            suite.add(Record(**fields, method=method, note=f"pin.{name}InParallel absent in this Pinocchio"))
            continue
        try:
            columns = [np.ascontiguousarray(a).T for a in (pq, pv, px)]  # (n, batch), Fortran order: Eigen's layout
            out = np.empty_like(pv).T
            call = lambda fn=parallel, columns=columns, out=out: fn(robot.threads, robot.pool, *columns, out)
            timed = _timed(rounds(call, **suite.timing))
            head = np.asarray(out.T[: c.check])[:, robot.v_perm]
            suite.add(Record(**fields, method=method, rel_err=robot.error(operation)(head), **timed))
        except Exception as exc:
            suite.failed(exc, **fields, method=method)


def mjx_results(suite, module: str, spec: dict, operations: dict[str, str], common: dict):
    """MJX run by ``python -m module`` (its ``mjx_main``) in a subprocess per XLA variant (XLA's
    default flags, and no CPU fusion emitters), ``spec`` without its ``out``: yields ``(operation,
    method, result, xla_flags)``; a failed run is a failed row of each operation."""
    from .peers import run_module

    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        for label, no_fusion in (("default XLA flags", False), ("no fusion emitters", True)):
            methods = {operation: f"{name} ({label})" for operation, name in operations.items()}
            try:
                result = run_module(module, {**spec, "out": str(Path(tmp, "result.json"))}, no_fusion, tmp)
            except Exception as exc:
                for operation, method in methods.items():
                    suite.failed(exc, operation=operation, library="mjx", method=method, **common)
                continue
            for operation, method in methods.items():
                yield operation, method, result[operation], result["xla_flags"]


def mjx_rows(suite, robot: Humanoid, common: dict) -> None:
    """MJX on the humanoid (:func:`mjx_main`, through :func:`mjx_results`)."""
    c = suite.config
    with tempfile.TemporaryDirectory(prefix="kronjax-bench-") as tmp:
        spec = {
            "urdf": str(robot.path),
            "samples": robot.save_samples(tmp),
            "joint_names": list(robot.joint_names),
            "batch": common["batch"],
            "probe": c.mjx_probe,
            "max_call_s": c.mjx_max_call_s,
            "timing": suite.timing,
            "check": c.check,
        }
        operations = {"floating_inverse_dynamics": "inverse", "floating_forward_dynamics": "forward"}
        for operation, method, r, flags in mjx_results(suite, "bench.floating", spec, operations, common):
            note = "; ".join(
                x for x in (r["note"], "MuJoCo balances an inertia (see bench.floating): values differ from Pinocchio's") if x
            )
            suite.add(
                Record(
                    operation=operation,
                    library="mjx",
                    method=method,
                    batch=r["batch"],
                    precision="float64",
                    model=MODEL,
                    n_dof=robot.nv,
                    seconds_per_call=r["seconds_per_call"],
                    compile_s=r["compile_s"],
                    rel_err=robot.error(operation)(np.asarray(r["head"])),
                    note=note,
                    extra={**r["extra"], "xla_flags": flags},
                )
            )


if __name__ == "__main__":
    main(sys.argv[1])
