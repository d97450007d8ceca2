"""The robot zoo (issue 36): every URDF of the PyPI package ``example-robot-data`` (6.0.0, a test
dependency), found through the installed package's file list (``importlib.metadata``), never
copied into this repository, and Pinocchio's model of the same file as the oracle.

How each file is loaded: fixed base for arms, hands and pendulums (:data:`FIXED_BASE`), floating
base (``floating_base=True``) for everything that walks, flies or drives; ``mimic="coupled"`` and
``mimic="independent"`` where the file has ``<mimic>`` elements. Pinocchio 4.1 reads mimic joints
as independent, so a coupled kronjax model is compared with ``P^T (Pinocchio) P``, where ``v_pin = P
v`` and ``q_pin`` follows the file's ``<mimic joint multiplier offset>``, read here with the
standard library's XML parser (not kronjax's loader).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin
from checks import TOL
from oracles import FAST_COMPILE, symmetric_from_upper

import kronjax as kj


def zoo_files() -> dict[str, Path]:
    """Every ``.urdf`` that example-robot-data installs, by its path below ``robots/``; empty
    when the package is not installed."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    found = {}
    for file in files:
        if str(file).endswith(".urdf"):
            path = Path(file.locate())
            found[str(path).split("/robots/", 1)[1]] = path
    return dict(sorted(found.items()))


# the robots that stand on the ground where they work; the others get a free-flyer
FIXED_BASE = (
    "ur_description/",
    "panda_description/",
    "z1_description/",
    "xarm_description/",
    "so_arm_description/",
    "kinova_description/",
    "allegro_hand_description/",
    "double_pendulum_description/",
    "asr_twodof_description/",
    "finger_edu_description/",
    "baxter_description/",
    "talos_data/robots/talos_left_arm",
)


@dataclasses.dataclass(frozen=True)
class Instance:
    """One way of loading one file."""

    name: str  # the file, below robots/
    floating: bool
    mimic: str  # "coupled" or "independent"

    @property
    def id(self) -> str:
        return f"{self.name}:{'floating' if self.floating else 'fixed'}" + (f":{self.mimic}" if self.mimic != "coupled" else "")


def instances(files: dict[str, Path]) -> list[Instance]:
    """How each file is loaded (module doc)."""
    out = []
    for name, path in files.items():
        floating = not name.startswith(FIXED_BASE)
        mimics = ("coupled", "independent") if "<mimic" in path.read_text() else ("coupled",)
        out += [Instance(name, floating, mimic) for mimic in mimics]
    return out


def load(files: dict[str, Path], instance: Instance) -> tuple[kj.Model, list[str]]:
    """kronjax's model of an instance and the loader's warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", kj.urdf.URDFWarning)
        model = kj.load_urdf(files[instance.name], floating_base=instance.floating, mimic=instance.mimic)
    return model, [str(w.message) for w in caught if issubclass(w.category, kj.urdf.URDFWarning)]


def _mimics(path: Path) -> dict[str, tuple[str, float, float]]:
    """The file's ``<mimic>`` elements of moving joints: joint -> (primary, multiplier, offset)."""
    out = {}
    for joint in ET.parse(path).getroot().findall("joint"):
        element = joint.find("mimic")
        if element is not None and joint.get("type") in ("revolute", "continuous", "prismatic"):
            out[joint.get("name")] = (element.get("joint"), float(element.get("multiplier", 1)), float(element.get("offset", 0)))
    return out


def _repaired_inertia(path: Path) -> float:
    """The sum over links of the negative eigenvalues of their ``<inertia>`` (what a repair may
    change), from the file."""
    total = 0.0
    for inertia in ET.parse(path).getroot().iter("inertia"):
        (xx, xy, xz, yy, yz, zz) = (float(inertia.get(k, 0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        total += max(0.0, -float(np.linalg.eigvalsh([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])[0]))
    return total


class PinocchioTwin:
    """Pinocchio's model of the same file, and the map of kronjax's coordinates to it: ``v_pin =
    P v`` (a selection, with the multipliers of coupled mimic joints), ``q_pin = q_map(q)``
    (continuous joints as ``(cos, sin)``, mimic joints at ``multiplier q_primary + offset``)."""

    def __init__(self, files: dict[str, Path], instance: Instance, model: kj.Model):
        path = files[instance.name]
        self.pm = (
            pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            if instance.floating
            else pin.buildModelFromUrdf(str(path))
        )
        self.pd = self.pm.createData()
        self.allowance = _repaired_inertia(path)  # 0 for files that need no repair
        pm, tree = self.pm, model.kinematics
        own = {}  # kronjax coordinate slices by joint name
        for i, (name, kind) in enumerate(zip(model.joint_names, tree.kinds)):
            if kind != "F" and not (tree.mimic and tree.mimic[i] is not None):
                own[name] = (model.configuration_index(name), model.velocity_index(name))
        mimics = _mimics(path) if instance.mimic == "coupled" else {}
        self.P = np.zeros((pm.nv, model.nv))
        self.joints = []  # per Pinocchio joint: (idx_q, nq, idx_v, nv, source)
        for jid in range(1, pm.njoints):
            name, joint = pm.names[jid], pm.joints[jid]
            factor, offset, primary = 1.0, 0.0, name
            while primary not in own:  # a coupled mimic joint, followed to its primary
                primary, multiplier, shift = mimics[primary]
                factor, offset = factor * multiplier, factor * shift + offset
            q_slice, v_slice = own[primary]
            self.P[joint.idx_v : joint.idx_v + joint.nv, v_slice] = factor * np.eye(joint.nv)
            self.joints.append((joint.idx_q, joint.nq, q_slice, factor, offset))
        self.bodies = [pm.getJointId(name) for name in model.joint_names]

    def q(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pm.nq)
        for idx_q, nq, q_slice, factor, offset in self.joints:
            value = factor * q[q_slice] + offset if factor != 1.0 or offset != 0.0 else q[q_slice]
            out[idx_q : idx_q + nq] = (np.cos(value[0]), np.sin(value[0])) if nq == 2 and value.size == 1 else value
        return out

    def values(self, q, v, a, tau, forward: bool = True) -> dict[str, np.ndarray]:
        """Pinocchio's M, rnea, g, C v, forward dynamics (with ``forward``) and every body's
        Jacobian (LOCAL_WORLD_ALIGNED, ``[J_T; J_R]``) in kronjax's coordinates."""
        pm, pd, P = self.pm, self.pd, self.P
        qp, vp, ap = self.q(q), P @ v, P @ a
        m = P.T @ symmetric_from_upper(pin.crba(pm, pd, qp)) @ P
        g = P.T @ pin.computeGeneralizedGravity(pm, pd, qp)
        coriolis = P.T @ pin.computeCoriolisMatrix(pm, pd, qp, vp) @ vp
        out = dict(M=m, tau=P.T @ pin.rnea(pm, pd, qp, vp, ap), g=g, Cv=coriolis)
        if forward and P.shape[0] == P.shape[1]:  # no coupled mimic joint: P is a permutation, and Pinocchio has an ABA
            out["qdd"] = P.T @ pin.aba(pm, pd, qp, vp, P @ tau)
        elif forward:
            out["qdd"] = np.linalg.solve(m, tau - g - coriolis)
        pin.computeJointJacobians(pm, pd, qp)
        out["J"] = np.stack([pin.getJointJacobian(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED) @ P for jid in self.bodies])
        return out


STATES = 3


def _values(model: kj.Model, with_aba: bool, q, v, a, tau) -> dict:
    # inverse dynamics at (v, a) and (v, 0) in one vmap, so one compilation: C v + g = ID(q, v, 0)
    id_pair = jax.vmap(lambda acc: kj.inverse_dynamics(model, q, v, acc))(jnp.stack([a, jnp.zeros_like(a)]))
    g = kj.gravity(model, q)
    jt, jr = kj.jacobians(model, q)
    out = dict(M=kj.mass_matrix(model, q), tau=id_pair[0], g=g, Cv=id_pair[1] - g, J=jnp.concatenate([jt, jr], axis=1))
    if with_aba:
        out["qdd"] = kj.forward_dynamics(model, q, v, tau)
    return out


# one compiled function for all models (arguments, names made canonical by _anonymous), with and
# without forward dynamics (which raises for a singular M); unbatched: a third less to compile
_compiled = jax.jit(_values, static_argnums=1, compiler_options=FAST_COMPILE)


def _anonymous(model: kj.Model) -> kj.Model:
    """The model with names ``b<i>``/``j<i>``: its compilation is shared with every model of the
    same tree structure."""
    count = len(model.body_names)
    return dataclasses.replace(
        model, body_names=tuple(f"b{i}" for i in range(count)), joint_names=tuple(f"j{i}" for i in range(count))
    )


def errors_against_pinocchio(files: dict[str, Path], instance: Instance, forward: bool = True) -> dict[str, float]:
    """Per quantity, the largest ``(error - slack) / max |Pinocchio's|`` over :data:`STATES`
    random states (``tests/test_robot_zoo.py``'s module doc; slack 0 but for M and the forces of
    repaired files);
    forward dynamics only with ``forward`` and where ``M`` is positive definite."""
    model, caught = load(files, instance)
    twin = PinocchioTwin(files, instance, model)
    rng = np.random.default_rng(0)
    qs = np.stack([np.asarray(kj.normalize(model, rng.normal(size=model.nq))) for _ in range(STATES)])
    vs, accs, taus = rng.normal(size=(3, STATES, model.nv))
    singular = any("the mass matrix is singular" in message for message in caught)
    anonymous = _anonymous(model)
    ours = [
        _compiled(anonymous, forward and not singular, *(jnp.asarray(x[k]) for x in (qs, vs, accs, taus))) for k in range(STATES)
    ]
    worst: dict[str, float] = {}
    for k in range(STATES):
        theirs = twin.values(qs[k], vs[k], accs[k], taus[k], forward="qdd" in ours[k])
        # a repaired rotational inertia changes the inertia-weighted terms only: not g, not J
        repair = twin.allowance * 10 * (1 + np.sum(vs[k] ** 2) + np.sum(np.abs(accs[k])))
        for key, value in ours[k].items():
            got, expected = np.asarray(value), theirs[key]
            slack = repair if key in ("M", "tau", "Cv", "qdd") else 0.0
            if key == "qdd" and twin.allowance:  # through Pinocchio's equation of motion, not its M^-1
                got, expected = theirs["M"] @ got + theirs["g"] + theirs["Cv"], taus[k]
            error = (np.max(np.abs(got - expected)) - slack) / np.max(np.abs(expected))
            worst[key] = max(worst.get(key, -np.inf), float(error))
    return worst


def check_against_pinocchio(files: dict[str, Path], instance: Instance, forward: bool = True) -> None:
    """Every quantity of :func:`errors_against_pinocchio` within :data:`TOL`."""
    worst = errors_against_pinocchio(files, instance, forward)
    assert all(error <= TOL for error in worst.values()), (instance.id, worst)
