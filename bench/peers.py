"""The peers (Pinocchio, adam, jaxsim, MuJoCo MJX): detection, and each one's functions on the
one URDF of :mod:`bench.models`.

The JAX peers' functions take one sample (``q``, ``qd``, ``qdd`` of shape ``(n,)``); the
benchmark batches them with ``jax.vmap`` like kronjax's. All arms are fixed-base: adam and
jaxsim are floating-base libraries, so they get a base that stays still (identity pose, zero
velocity and acceleration), which makes their joint torques the fixed-base ones.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os

import numpy as np

from .models import GRAVITY, mjcf_from_urdf, sdf_from_urdf

# name: (module to import, distributions to report, how to install)
PEERS = {
    "pinocchio": ("pinocchio", ("pin",), "pip install pin"),
    "adam": ("adam.jax", ("adam-robotics",), "pip install adam-robotics"),
    "jaxsim": ("jaxsim.api", ("jaxsim",), "pip install jaxsim"),
    "mjx": ("mujoco.mjx", ("mujoco", "mujoco-mjx"), "pip install mujoco mujoco-mjx"),
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
            importlib.import_module(module)
        except Exception as exc:  # a broken install or an incompatible jax raises anything
            found[name] = {"available": False, "version": "", "note": f"skipped: cannot import {module} "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); {install}"}
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


def adam_inverse_dynamics(urdf: str, joint_names, dtype):
    """adam's fixed-base inverse dynamics ``M_jj qdd + h_j`` (its joint rows of the floating-base
    ``M`` and bias force, base at rest at the identity)."""
    import jax.numpy as jnp
    from adam.jax import KinDynComputations

    kd = KinDynComputations(urdf, list(joint_names), dtype=dtype, gravity=np.array([*GRAVITY, 0, 0, 0]))
    # adam 0.5 passes its reference array's device to jnp.asarray, which fails on tracers under
    # jit with recent JAX ("'SingleDeviceSharding' object has no attribute 'spec'"): drop it.
    factory = getattr(getattr(kd.rbdalgos, "math", None), "factory", None)
    if factory is not None and hasattr(factory, "_device"):
        factory._device = None
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
