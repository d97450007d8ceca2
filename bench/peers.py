"""The peers (Pinocchio, adam, jaxsim, MuJoCo MJX, frax): detection, and each one's functions on
the one URDF of :mod:`bench.models`.

The JAX peers' functions take one sample (``q``, ``qd``, ``qdd`` of shape ``(n,)``); the
benchmark batches them with ``jax.vmap`` like kronjax's. All arms are fixed-base: adam and
jaxsim are floating-base libraries, so they get a base that stays still (identity pose, zero
velocity and acceleration), which makes their joint torques the fixed-base ones.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .models import GRAVITY, mjcf_from_urdf, sdf_from_urdf, urdf_with_root_inertial

ROOT = Path(__file__).resolve().parents[1]

# name: (module to import, distributions to report, how to install)
PEERS = {
    "pinocchio": ("pinocchio", ("pin",), "pip install pin"),
    "adam": ("adam.jax", ("adam-robotics",), "pip install adam-robotics"),
    "jaxsim": ("jaxsim.api", ("jaxsim",), "pip install jaxsim"),
    "mjx": ("mujoco.mjx", ("mujoco", "mujoco-mjx"), "pip install mujoco mujoco-mjx"),
    "frax": ("frax", ("frax",), "pip install frax"),
}


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def detect(names=tuple(PEERS)) -> dict[str, dict]:
    """``{name: {"available": bool, "version": str, "note": str}}`` for each peer: available
    when its module imports (any exception, not only ImportError, makes it unavailable)."""
    found = {}
    for name in names:
        module, distributions, install = PEERS[name]
        try:
            with warnings.catch_warnings():  # frax warns at import about XLA flags it would like set
                warnings.simplefilter("ignore")
                importlib.import_module(module)
        except Exception as exc:  # a broken install or an incompatible jax raises anything
            found[name] = {
                "available": False,
                "version": "",
                "note": f"skipped: cannot import {module} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); {install}",
            }
            continue
        version = ", ".join(f"{d} {_version(d)}" for d in distributions)
        found[name] = {"available": True, "version": version, "note": ""}
    return found


# --------------------------------------------------------------------------------------------
# Pinocchio (the reference)
# --------------------------------------------------------------------------------------------


class Pinocchio:
    """Pinocchio's model of a URDF, with per-call loops over a batch and the parallel variants."""

    def __init__(self, urdf: str, threads: int = 2):
        import pinocchio as pin

        self.pin = pin
        self.model = pin.buildModelFromXML(urdf)
        self.model.gravity.linear = np.asarray(GRAVITY, float)
        self.data = self.model.createData()
        self.threads = threads
        self.parallel = hasattr(pin, "rneaInParallel") and hasattr(pin, "ModelPool")
        self.pool = pin.ModelPool(self.model, threads) if self.parallel else None
        empty = pin.Model()
        self._empty = (empty, empty.createData(), np.zeros(0))

    def rnea(self, q, qd, qdd) -> np.ndarray:
        return np.stack([self.pin.rnea(self.model, self.data, *x).copy() for x in zip(q, qd, qdd)])

    def aba(self, q, qd, tau) -> np.ndarray:
        return np.stack([self.pin.aba(self.model, self.data, *x).copy() for x in zip(q, qd, tau)])

    def coriolis(self, q, qd) -> np.ndarray:
        return np.stack([self.pin.computeCoriolisMatrix(self.model, self.data, *x).copy() for x in zip(q, qd)])

    # references in kronjax's layout, on a batch of samples (rows), for the derivative sections

    def body_frames(self, names, rotations, origins, q) -> list[int]:
        """Adds a frame at each of kronjax's body frames (``rotations`` and ``origins`` in the base
        frame at configuration ``q``, bodies named after their joints) and returns their ids. A
        body moves with its joint, but its frame need not be the URDF link's (Pinocchio's joint
        frame): ``kj.to_urdf`` of a standard D-H arm puts the joint frame on the joint axis, kronjax's
        body frame at the link's far end. The data is recreated for the new frames."""
        pin = self.pin
        pin.forwardKinematics(self.model, self.data, np.asarray(q, float))
        frames = []
        for name, r, p in zip(names, rotations, origins):
            joint = self.model.getJointId(name)
            placement = self.data.oMi[joint].inverse() * pin.SE3(np.asarray(r, float), np.asarray(p, float))
            frames.append(self.model.addFrame(pin.Frame(f"kronjax:{name}", joint, placement, pin.FrameType.OP_FRAME)))
        self.data = self.model.createData()
        return frames

    def _per_body(self, compute, get, frames, *arrays) -> tuple[np.ndarray, np.ndarray]:
        """``compute(model, data, *row)`` then ``get(frame)`` (6 x ...) of every frame, per row: the
        translational (Pinocchio's linear) and rotational (angular) rows, each
        ``(batch, len(frames), 3, ...)``."""
        out = []
        for row in zip(*arrays):
            compute(self.model, self.data, *row)
            out.append([get(f) for f in frames])
        out = np.array(out)
        return out[:, :, :3], out[:, :, 3:]

    def jacobians(self, q, frames):
        """``(J_T, J_R)`` of kronjax's ``jacobians(frame="base")``: ``getFrameJacobian`` in
        LOCAL_WORLD_ALIGNED (the frame origin's velocity and the angular velocity in world axes)."""
        pin = self.pin
        return self._per_body(
            pin.computeJointJacobians,
            lambda f: pin.getFrameJacobian(self.model, self.data, f, pin.LOCAL_WORLD_ALIGNED),
            frames,
            q,
        )

    def hessians(self, q, frames):
        """``(H_T, H_R)`` of kronjax's ``hessians(frame="base")``, each ``(batch, nb, 3, n^2)``:
        ``getFrameKinematicHessian`` in LOCAL_WORLD_ALIGNED (``dJ_LWA/dq``, antisymmetric part
        included) after ``computeJointKinematicHessians(q)`` (which computes the joint Jacobians
        first).

        Pinocchio stores the tensor T[r, j, k] = dJ[r, j]/dq_k column-major (element at
        ``r + 6 j + 6 n k``, kinematics-derivatives.hxx); its 4.1 binding returns that buffer as a
        6 x n x n array read with C strides, so T is the buffer reshaped in Fortran order
        (tests/test_pinocchio_kinematics.py checks this against finite differences). Khang's layout
        ``H[p, j n + k] = T[p, j, k]`` is then T's C-order reshape to 6 x n^2."""
        pin, n = self.pin, self.model.nv

        def get(f):
            h = np.asarray(pin.getFrameKinematicHessian(self.model, self.data, f, pin.LOCAL_WORLD_ALIGNED))
            return h.reshape(-1).reshape(h.shape, order="F").reshape(6, n * n)

        return self._per_body(pin.computeJointKinematicHessians, get, frames, q)

    def jacobians_dot(self, q, qd, frames):
        """``(Jd_T, Jd_R)`` of kronjax's ``jacobians_dot(frame="base")``:
        ``getFrameJacobianTimeVariation`` in LOCAL_WORLD_ALIGNED."""
        pin = self.pin

        def compute(model, data, q, qd):
            pin.computeJointJacobiansTimeVariation(model, data, q, qd)
            pin.updateFramePlacements(model, data)

        return self._per_body(
            compute, lambda f: pin.getFrameJacobianTimeVariation(self.model, self.data, f, pin.LOCAL_WORLD_ALIGNED), frames, q, qd
        )

    def rnea_derivatives(self, q, qd, qdd):
        """``(dtau_dq, dtau_dqd, M)``, each ``(batch, n, n)``, from ``computeRNEADerivatives`` (which
        fills only the upper triangle of M)."""
        out = [[np.array(x) for x in self.pin.computeRNEADerivatives(self.model, self.data, *row)] for row in zip(q, qd, qdd)]
        dq, dqd, m = (np.stack(x) for x in zip(*out))
        return dq, dqd, np.triu(m) + np.swapaxes(np.triu(m, 1), -1, -2)

    def aba_derivatives(self, q, qd, tau):
        """``(dqdd_dq, dqdd_dqd, M^-1)``, each ``(batch, n, n)``, from ``computeABADerivatives``."""
        out = [[np.array(x) for x in self.pin.computeABADerivatives(self.model, self.data, *row)] for row in zip(q, qd, tau)]
        return tuple(np.stack(x) for x in zip(*out))

    def per_call(self, name: str, *arrays):
        """A function running ``pin.<name>`` once on each of the given samples (rows)."""
        fn, model, data = getattr(self.pin, name), self.model, self.data
        rows = list(zip(*[[np.ascontiguousarray(r) for r in a] for a in arrays]))

        def run():
            for row in rows:
                fn(model, data, *row)

        return run, len(rows)

    def binding_overhead(self):
        """A function calling ``pin.rnea`` on an empty model: the cost of a call through the Python
        binding, subtracted from per-call times to estimate the C++ time."""
        model, data, z = self._empty
        rnea = self.pin.rnea
        return lambda: rnea(model, data, z, z, z)

    def in_parallel(self, name: str, *arrays):
        """A function running ``pin.<name>InParallel`` with ``threads`` threads on the batch
        (``(batch, n)`` arrays, passed as Eigen's column-major ``n x batch``), or ``None`` when this
        Pinocchio has no such function."""
        fn = getattr(self.pin, f"{name}InParallel", None)
        if fn is None or self.pool is None:
            return None
        columns = [np.ascontiguousarray(a).T for a in arrays]  # (n, batch), Fortran order: no copy
        out = np.empty_like(arrays[0]).T
        return lambda: fn(self.threads, self.pool, *columns, out)


# --------------------------------------------------------------------------------------------
# adam (JAX backend)
# --------------------------------------------------------------------------------------------


def adam_computations(urdf: str, joint_names, dtype, gravity):
    """adam's ``KinDynComputations`` (JAX backend) of the URDF."""
    from adam.jax import KinDynComputations

    kd = KinDynComputations(urdf, list(joint_names), dtype=dtype, gravity=np.array([*np.asarray(gravity, float), 0, 0, 0]))
    # adam 0.5 passes its reference array's device to jnp.asarray, which fails on tracers under
    # jit with recent JAX ("'SingleDeviceSharding' object has no attribute 'spec'"): drop it.
    factory = getattr(getattr(kd.rbdalgos, "math", None), "factory", None)
    if factory is not None and hasattr(factory, "_device"):
        factory._device = None
    return kd


def adam_inverse_dynamics(urdf: str, joint_names, dtype):
    """adam's fixed-base inverse dynamics ``M_jj qdd + h_j`` (its joint rows of the floating-base
    ``M`` and bias force, base at rest at the identity)."""
    import jax.numpy as jnp

    kd = adam_computations(urdf, joint_names, dtype, GRAVITY)
    base, base_velocity = jnp.eye(4, dtype=dtype), jnp.zeros(6, dtype)

    def inverse_dynamics(q, qd, qdd):
        m = kd.mass_matrix(base, q)
        h = kd.bias_force(base, q, base_velocity, qd)
        return m[6:, 6:] @ qdd + h[6:]

    return inverse_dynamics


# --------------------------------------------------------------------------------------------
# jaxsim
# --------------------------------------------------------------------------------------------


def jaxsim_functions(urdf: str):
    """jaxsim's inverse dynamics ``(q, qd, qdd) -> tau`` and Coriolis matrix ``(q, qd) -> C``
    (the joint block of its free-floating matrix), on the URDF rewritten as SDF (jaxsim reads
    URDF only through Gazebo's ``gz sdf``)."""
    import jaxsim.api as js
    from jaxsim import VelRepr

    model = js.model.JaxSimModel.build_from_model_description(sdf_from_urdf(urdf), is_urdf=False, gravity=-GRAVITY[2])
    n = model.dofs()

    def data(q, qd):
        return js.data.JaxSimModelData.build(
            model=model, joint_positions=q, joint_velocities=qd, velocity_representation=VelRepr.Inertial
        )

    def inverse_dynamics(q, qd, qdd):
        return js.model.inverse_dynamics(model, data(q, qd), joint_accelerations=qdd)[1]

    def coriolis(q, qd):
        return js.model.free_floating_coriolis_matrix(model, data(q, qd))[-n:, -n:]

    return inverse_dynamics, coriolis


# --------------------------------------------------------------------------------------------
# frax
# --------------------------------------------------------------------------------------------


def frax_robot(urdf: str, **options):
    """``frax.Robot`` of the URDF text (frax reads a file)."""
    with warnings.catch_warnings():  # frax warns at import about XLA flags it would like set
        warnings.simplefilter("ignore")
        import frax
    with tempfile.TemporaryDirectory(prefix="kronjax-frax-") as tmp:
        path = os.path.join(tmp, "robot.urdf")
        Path(path).write_text(urdf)
        return frax.Robot(path, **options)


def frax_functions(urdf: str) -> dict:
    """frax's functions of one sample on the URDF (its root link given an inertial, which frax
    needs), fixed base:

    - ``jacobians(q) -> (J_T, J_R)``, each ``(nb, 3, n)``: every joint frame's origin and angular
      Jacobians in world axes (Pinocchio's LOCAL_WORLD_ALIGNED), from ``Robot._joint_jacobians``,
      the all-joints routine behind its dynamics (its public API has per-frame Jacobians only);
    - ``jacobians_dot(q, qd) -> (Jd_T, Jd_R)``: ``Robot._frame_jacobian_and_derivative`` of each
      joint frame (the routine behind its public ``ee_jacobian_and_derivative``);
    - ``inverse_dynamics(q, qd, qdd)``: ``Robot.rnea`` with gravity as a base acceleration;
    - ``forward_dynamics(q, qd, tau)``: ``Robot.forward_dynamics`` (CRBA and a Cholesky solve;
      frax has no ABA), whose gravity is fixed at 9.81 down z.
    """
    import jax.numpy as jnp

    if tuple(GRAVITY) != (0.0, 0.0, -9.81):
        raise ValueError(f"frax's forward dynamics has gravity (0, 0, -9.81) built in, not {GRAVITY}")
    robot = frax_robot(urdf_with_root_inertial(urdf))
    base_acceleration = jnp.array([*(-np.asarray(GRAVITY)), 0.0, 0.0, 0.0])  # [linear, angular]
    chains = [np.flatnonzero(row) for row in robot.ancestor_mask]  # ancestors of each joint, root first
    origin = np.eye(4)

    def jacobians(q):
        return robot._joint_jacobians(robot.joint_to_world_transforms(q))

    def jacobians_dot(q, qd):
        transforms = robot.joint_to_world_transforms(q)
        jd = jnp.stack([robot._frame_jacobian_and_derivative(qd, transforms, origin, chain)[1] for chain in chains])
        return jd[:, :3], jd[:, 3:]

    def inverse_dynamics(q, qd, qdd):
        return robot.rnea(q, qd, qdd, base_acceleration, None)

    def forward_dynamics(q, qd, tau):
        return robot.forward_dynamics(q, qd, tau, None)

    return {
        "jacobians": jacobians,
        "jacobians_dot": jacobians_dot,
        "inverse_dynamics": inverse_dynamics,
        "forward_dynamics": forward_dynamics,
    }


# --------------------------------------------------------------------------------------------
# MuJoCo MJX
# --------------------------------------------------------------------------------------------

NO_FUSION_FLAG = "--xla_cpu_use_fusion_emitters=false"


def mjx_inverse_dynamics(urdf: str):
    """MJX's ``inverse`` (``qfrc_inverse``) on the URDF compiled by MuJoCo, constraints disabled
    (joint limits would otherwise add constraint forces), no damping or armature (none in the
    URDF). Returns ``(fn, mj_model)``."""
    import mujoco
    from mujoco import mjx

    mj_model = mujoco.MjModel.from_xml_string(mjcf_from_urdf(urdf))
    mj_model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    model = mjx.put_model(mj_model)

    def inverse_dynamics(q, qd, qdd):
        data = mjx.make_data(model).replace(qpos=q, qvel=qd, qacc=qdd)
        return mjx.inverse(model, data).qfrc_inverse

    return inverse_dynamics, mj_model


def run_module(
    module: str, spec: dict, no_fusion: bool, tmp: str | Path, extra_flags: Sequence[str] = (), timeout: float = 900
) -> dict:
    """``python -m module SPEC.json`` in a process of its own with :func:`xla_env` and
    ``extra_flags`` (its XLA flags are read when JAX starts there); ``spec`` is written to
    ``tmp``/spec.json and must name its result file ``out``. Returns the result; a
    ``RuntimeError`` with the last line of stderr where the process fails, ``subprocess.TimeoutExpired``
    (the process killed) after ``timeout`` seconds."""
    spec_path = Path(tmp, "spec.json")
    spec_path.write_text(json.dumps(spec))
    env = xla_env(no_fusion)
    if extra_flags:
        env["XLA_FLAGS"] = " ".join([env.get("XLA_FLAGS", ""), *extra_flags]).strip()
    env["PYTHONPATH"] = str(ROOT) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [sys.executable, "-m", module, str(spec_path)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        # the last line with words (not the banner of XLA's slow-compilation alarm)
        tail = [line for line in proc.stderr.strip().splitlines() if any(c.isalnum() for c in line)][-1:] or ["?"]
        how = f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0 else f"exited {proc.returncode}"
        raise RuntimeError(f"subprocess {how}: {tail[0]}")
    return json.loads(Path(spec["out"]).read_text())


def xla_env(no_fusion: bool) -> dict:
    """The environment for a subprocess: XLA_FLAGS with (or without) the fusion-emitter flag."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_cpu_use_fusion_emitters")]
    if no_fusion:
        flags.append(NO_FUSION_FLAG)
    env["XLA_FLAGS"] = " ".join(flags)
    if not env["XLA_FLAGS"]:
        del env["XLA_FLAGS"]
    return env
