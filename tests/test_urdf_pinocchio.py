"""kronjax.load_urdf and kronjax.to_urdf against Pinocchio's own URDF parser.

Five URDF files (tests/data/*.urdf, sources in tests/data/README.md): the UR5 and the Franka
Panda of example-robot-data (both reference meshes that do not exist here), a branched tree,
a chain with many fixed joints to merge, and a gantry mixing prismatic and revolute joints. For
each, ``pin.buildModelFromXML`` of the same text is the oracle, matched by joint NAME (Pinocchio
orders joints depth-first, kronjax parents-first; a continuous joint is one angle in kronjax but
``(cos, sin)`` in Pinocchio's q). At 20 random states, max relative error <= 1e-10 in float64 for
body frame poses (``data.oMi``), merged spatial inertias, M (crba), C qd (computeCoriolisMatrix
and nonLinearEffects - g), g and every inverse-dynamics method (rnea); structure, names and joint
limits exactly. Then the round trip: ``to_urdf`` of these models and
of the built-in models, parsed by Pinocchio, has kronjax's dynamics.
"""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kronjax as kj

pin = pytest.importorskip("pinocchio")

from checks import TOL  # noqa: E402
from oracles import relative_error, symmetric_from_upper  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = pathlib.Path(__file__).parent / "data"
URDFS = ["ur5", "panda", "branched_tree", "fixed_offsets", "prismatic"]
BUILTIN = ["stacker", "truc_elbow", "double_pendulum", "puma560", "panda", "ur5"]
N_STATES = 20


# --------------------------------------------------------------------------------------------
# kronjax q <-> Pinocchio q, by joint name
# --------------------------------------------------------------------------------------------


def moving_joint_names(model: kj.Model) -> list[str]:
    """kronjax's joint names in q order (fixed joints of a Tree have no coordinate)."""
    kinds = getattr(model.kinematics, "kinds", ("R",) * model.n_bodies)
    return [name for name, kind in zip(model.joint_names, kinds) if kind != "F"]


class PinMap:
    """Maps kronjax's coordinates to a Pinocchio model's, by joint name.

    ``q(q)``: kronjax q -> Pinocchio q (a continuous joint's angle becomes ``(cos, sin)``);
    ``v(qd)``: kronjax qd (or qdd) -> Pinocchio v; ``vec``/``mat``: Pinocchio (nv,) and
    (nv, nv) arrays -> kronjax's order.
    """

    def __init__(self, model: kj.Model, pm):
        names = moving_joint_names(model)
        assert sorted(names) == sorted(pm.names[1:]), (names, list(pm.names))
        self.pm = pm
        self.joint_ids = [pm.getJointId(name) for name in names]
        joints = [pm.joints[j] for j in self.joint_ids]
        assert all(j.nv == 1 and j.nq in (1, 2) for j in joints), [j.shortname() for j in joints]
        self.idx_q = np.array([j.idx_q for j in joints])
        self.nq = np.array([j.nq for j in joints])
        self.idx_v = np.array([j.idx_v for j in joints])
        assert sorted(self.idx_v) == list(range(pm.nv))

    def q(self, q) -> np.ndarray:
        q = np.asarray(q, float)
        out = np.zeros(self.pm.nq)
        for k, (iq, nq) in enumerate(zip(self.idx_q, self.nq)):
            if nq == 1:
                out[iq] = q[k]
            else:  # continuous (revolute unbounded): (cos, sin)
                out[iq : iq + 2] = np.cos(q[k]), np.sin(q[k])
        return out

    def v(self, qd) -> np.ndarray:
        out = np.zeros(self.pm.nv)
        out[self.idx_v] = np.asarray(qd, float)
        return out

    def vec(self, x) -> np.ndarray:
        return np.asarray(x)[self.idx_v]

    def mat(self, m) -> np.ndarray:
        return np.asarray(m)[np.ix_(self.idx_v, self.idx_v)]


def random_states(model: kj.Model, seed: int = 42):
    """N_STATES of (q, qd, qdd): q uniform within finite joint limits (else in [-pi, pi]),
    qd and qdd standard normal."""
    rng = np.random.default_rng(seed)
    n = model.nv
    lower, upper = np.full(n, -np.pi), np.full(n, np.pi)
    if model.limits is not None:
        lo, up = np.asarray(model.limits.lower), np.asarray(model.limits.upper)
        finite = np.isfinite(lo) & np.isfinite(up)
        lower[finite], upper[finite] = lo[finite], up[finite]
    q = rng.uniform(lower, upper, (N_STATES, n))
    return q, *rng.normal(size=(2, N_STATES, n))


# XLA's optimisations cost more compile time than they save on 20 states (float64 results agree
# to rounding); the whole file would otherwise take minutes, mostly compiling.
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def kronjax_values(model: kj.Model, states, full: bool = True) -> dict[str, np.ndarray]:
    """kronjax's values at all states, from one function compiled once per model."""

    def ours(q, qd, qdd):
        out = dict(
            M=kj.mass_matrix(model, q),
            Cqd=kj.coriolis_matrix(model, q, qd) @ qd,
            g=kj.gravity(model, q),
            rnea=kj.inverse_dynamics(model, q, qd, qdd, method="rnea"),
        )
        if full:
            out["rotations"], out["origins"] = kj.forward_kinematics(model, q)
            for method in kj.dynamics.INVERSE_DYNAMICS_METHODS:
                out[f"id_{method}"] = kj.inverse_dynamics(model, q, qd, qdd, method=method)
        return out

    qs, qds, qdds = (jnp.asarray(s) for s in states)
    compiled = jax.jit(ours).lower(qs[0], qds[0], qdds[0]).compile(FAST_COMPILE)
    values = [compiled(qs[s], qds[s], qdds[s]) for s in range(N_STATES)]
    return {key: np.stack([np.asarray(v[key]) for v in values]) for key in values[0]}


def pinocchio_dynamics(pm, pmap: PinMap, q, qd, qdd) -> dict[str, np.ndarray]:
    """Pinocchio's M, C qd (two ways), g and rnea at one kronjax state, in kronjax's order."""
    data = pm.createData()
    pq, pv, pa = pmap.q(q), pmap.v(qd), pmap.v(qdd)
    out = dict(
        M=pmap.mat(symmetric_from_upper(pin.crba(pm, data, pq))),
        Cqd=pmap.vec(pin.computeCoriolisMatrix(pm, data, pq, pv) @ pv),
        g=pmap.vec(pin.computeGeneralizedGravity(pm, data, pq)),
        rnea=pmap.vec(pin.rnea(pm, data, pq, pv, pa)),
    )
    out["nle_minus_g"] = pmap.vec(pin.nonLinearEffects(pm, data, pq, pv)) - out["g"]
    return out


def pinocchio_poses(pm, pmap: PinMap, q) -> tuple[np.ndarray, np.ndarray]:
    """Rotations and origins of the Pinocchio joints (data.oMi), in kronjax's body order."""
    data = pm.createData()
    pin.forwardKinematics(pm, data, pmap.q(q))
    placements = [data.oMi[j] for j in pmap.joint_ids]
    return np.stack([m.rotation for m in placements]), np.stack([m.translation for m in placements])


def max_errors(pairs) -> dict[str, float]:
    errors: dict[str, float] = {}
    for key, got, expected in pairs:
        errors[key] = max(errors.get(key, 0.0), relative_error(got, expected))
    return errors


# --------------------------------------------------------------------------------------------
# The URDF files
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=URDFS)
def case(request):
    path = DATA / f"{request.param}.urdf"
    text = path.read_text()
    model = kj.load_urdf(path)
    pm = pin.buildModelFromXML(text)
    states = random_states(model)
    return dict(
        name=request.param,
        path=path,
        text=text,
        model=model,
        pm=pm,
        pmap=PinMap(model, pm),
        states=states,
        ours=kronjax_values(model, states),
    )


def test_structure_and_names(case):
    model, pm = case["model"], case["pm"]
    assert isinstance(model.kinematics, kj.chain.Tree)
    assert model.nv == pm.nv == model.n_bodies
    assert all(kind in ("R", "P") for kind in model.kinematics.kinds)
    assert set(model.joint_names) == set(pm.names[1:])
    for i, (body, joint) in enumerate(zip(model.body_names, model.joint_names)):
        jid = pm.getJointId(joint)
        # the body is the joint's child link, whose frame is the joint frame
        assert pm.existFrame(body), body
        frame = pm.frames[pm.getFrameId(body)]
        assert frame.type == pin.FrameType.BODY and frame.parentJoint == jid, (body, joint)
        assert np.allclose(frame.placement.homogeneous, np.eye(4), rtol=0, atol=1e-15), body
        # same parent, parents first
        parent = model.kinematics.parents[i]
        assert parent < i
        assert pm.names[pm.parents[jid]] == ("universe" if parent < 0 else model.joint_names[parent]), joint
        # revolute vs prismatic
        shortname = pm.joints[jid].shortname()
        prismatic = shortname in ("JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned")
        assert prismatic == (model.kinematics.kinds[i] == "P"), (joint, shortname)
    assert bool(np.all(np.asarray(model.inertials.mass) > 0)), model.inertials.mass


def test_joint_limits(case):
    model, pm, pmap = case["model"], case["pm"], case["pmap"]
    limits = {key: np.asarray(getattr(model.limits, key)) for key in ("lower", "upper", "velocity", "effort")}
    for k, (iq, nq, iv) in enumerate(zip(pmap.idx_q, pmap.nq, pmap.idx_v)):
        name = moving_joint_names(model)[k]
        if nq == 2:  # continuous: unlimited position in kronjax (Pinocchio bounds cos, sin)
            assert limits["lower"][k] == -np.inf and limits["upper"][k] == np.inf, name
        else:
            assert limits["lower"][k] == pm.lowerPositionLimit[iq], name
            assert limits["upper"][k] == pm.upperPositionLimit[iq], name
        assert limits["velocity"][k] == pm.velocityLimit[iv], name
        assert limits["effort"][k] == pm.effortLimit[iv], name


def test_merged_inertias(case):
    """Each body's inertial (fixed children merged) is Pinocchio's spatial inertia of the joint."""
    model, pm, pmap = case["model"], case["pm"], case["pmap"]
    ine = model.inertials
    pairs = []
    for k, jid in enumerate(pmap.joint_ids):
        inertia = pm.inertias[jid]
        pairs += [
            ("mass", ine.mass[k], inertia.mass),
            ("com", ine.com[k], inertia.lever),
            ("inertia", ine.inertia[k], inertia.inertia),
        ]
    errors = max_errors(pairs)
    assert max(errors.values()) <= TOL, errors


def test_poses(case):
    pm, pmap, ours = case["pm"], case["pmap"], case["ours"]
    qs = case["states"][0]
    pairs = []
    for s in range(N_STATES):
        rotations, origins = pinocchio_poses(pm, pmap, qs[s])
        pairs += [("rotations", ours["rotations"][s], rotations), ("origins", ours["origins"][s], origins)]
    errors = max_errors(pairs)
    assert max(errors.values()) <= TOL, errors


def test_dynamics(case):
    pm, pmap, ours = case["pm"], case["pmap"], case["ours"]
    qs, qds, qdds = case["states"]
    pairs = []
    for s in range(N_STATES):
        ref = pinocchio_dynamics(pm, pmap, qs[s], qds[s], qdds[s])
        pairs += [("M", ours["M"][s], ref["M"]), ("g", ours["g"][s], ref["g"])]
        pairs += [("Cqd", ours["Cqd"][s], ref["Cqd"]), ("Cqd vs nle-g", ours["Cqd"][s], ref["nle_minus_g"])]
        pairs += [(f"id_{m}", ours[f"id_{m}"][s], ref["rnea"]) for m in kj.dynamics.INVERSE_DYNAMICS_METHODS]
    errors = max_errors(pairs)
    print(f"\n{case['name']}: max relative errors vs Pinocchio: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) <= TOL, errors


def test_sources_agree(case):
    """A str path, a pathlib.Path and the XML text give the same model."""
    model = case["model"]
    for source in (str(case["path"]), case["text"]):
        other = kj.load_urdf(source)
        assert jax.tree.structure(other) == jax.tree.structure(model)
        for a, b in zip(jax.tree.leaves(other), jax.tree.leaves(model)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_missing_meshes_load():
    """ur5.urdf and panda.urdf reference package:// meshes that do not exist here."""
    for name in ("ur5", "panda"):
        text = (DATA / f"{name}.urdf").read_text()
        assert "package://" in text and "<mesh" in text
        assert kj.load_urdf(DATA / f"{name}.urdf").nv == {"ur5": 6, "panda": 8}[name]


# --------------------------------------------------------------------------------------------
# Round trip: kronjax -> to_urdf -> Pinocchio
# --------------------------------------------------------------------------------------------


def round_trip_pinocchio(model: kj.Model):
    pm2 = pin.buildModelFromXML(kj.to_urdf(model))
    pm2.gravity.linear = np.asarray(model.gravity, float)
    return pm2, PinMap(model, pm2)


def check_round_trip(name: str, model: kj.Model, states, ours) -> None:
    pm2, pmap = round_trip_pinocchio(model)
    assert pm2.nv == model.nv
    qs, qds, qdds = states
    tree = model.kinematics
    # body frames are the joint frames when Post is the identity (URDF, from_joints models);
    # D-H models put Post between them, which to_urdf may absorb into the next joint's origin
    body_is_joint_frame = np.allclose(np.asarray(tree.post_rotation), np.eye(3)) and np.allclose(
        np.asarray(tree.post_translation), 0.0
    )
    moving = [i for i, kind in enumerate(tree.kinds) if kind != "F"]
    pairs = []
    for s in range(N_STATES):
        ref = pinocchio_dynamics(pm2, pmap, qs[s], qds[s], qdds[s])
        pairs += [(key, ours[key][s], ref[key]) for key in ("M", "Cqd", "g", "rnea")]
        if body_is_joint_frame and "rotations" in ours:
            rotations, origins = pinocchio_poses(pm2, pmap, qs[s])
            pairs += [
                ("rotations", ours["rotations"][s][moving], rotations),
                ("origins", ours["origins"][s][moving], origins),
            ]
    errors = max_errors(pairs)
    print(f"\n{name} round trip: max relative errors vs Pinocchio: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
    assert max(errors.values()) <= TOL, errors


def test_round_trip_urdf(case):
    check_round_trip(case["name"], case["model"], case["states"], case["ours"])


def test_round_trip_limits_and_names(case):
    """load_urdf(to_urdf(model)) keeps the names, the order and the limits."""
    model = case["model"]
    again = kj.load_urdf(kj.to_urdf(model))
    assert again.joint_names == model.joint_names
    assert again.body_names == model.body_names
    for key in ("lower", "upper", "velocity", "effort"):
        np.testing.assert_allclose(getattr(again.limits, key), getattr(model.limits, key), rtol=1e-15, err_msg=key)


@pytest.mark.parametrize("name", BUILTIN)
def test_round_trip_builtin(name):
    factory = getattr(kj.models, name, None)
    if factory is None:
        pytest.skip(f"kronjax.models has no {name}")
    model = factory(motors=False) if name == "puma560" else factory()  # URDF has no rotor inertia
    states = random_states(model, seed=7)
    check_round_trip(f"models.{name}", model, states, kronjax_values(model, states, full=False))
