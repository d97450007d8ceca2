"""``load_mjcf`` against MuJoCo's C library: the compiled MJCF's mass matrix, bias forces, inverse
and forward dynamics and body poses at random states, and the loader's errors and warnings."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import jit_once, relative_error

import kronjax as kj
from kronjax.mjcf import MJCFError, load_mjcf

mujoco = pytest.importorskip("mujoco")

DATA = Path(__file__).parent / "data"
FILES = ("mjcf_arm.xml", "mjcf_tree.xml")
STATES = 20
# MuJoCo's forward dynamics with only the rigid-body terms: tau enters as qfrc_applied
RIGID_ONLY = (
    mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    | mujoco.mjtDisableBit.mjDSBL_SPRING
    | mujoco.mjtDisableBit.mjDSBL_DAMPER
    | mujoco.mjtDisableBit.mjDSBL_ACTUATION
)


def _everything(model, q, qd, qdd, tau):
    zero = jnp.zeros_like(q)
    rotations, origins = kj.forward_kinematics(model, q)
    return (
        kj.mass_matrix(model, q),
        kj.inverse_dynamics(model, q, qd, zero),
        kj.inverse_dynamics(model, q, qd, qdd),
        kj.forward_dynamics(model, q, qd, tau),
        rotations,
        origins,
    )


# one compilation per model structure, all states in one call
EVERYTHING = jit_once(jax.vmap(_everything, in_axes=(None, 0, 0, 0, 0)))


def _mujoco_everything(m, q, qd, qdd, tau):
    """The same quantities from MuJoCo, state by state (``q`` is ``qpos``, ``qd`` is ``qvel``)."""
    d = mujoco.MjData(m)
    out = {key: [] for key in ("M", "bias", "tau", "qdd", "xmat", "xpos")}
    flags = m.opt.disableflags
    for k in range(len(q)):
        m.opt.disableflags = flags
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q[k], qd[k], 0.0
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        out["M"].append(full)
        out["bias"].append(d.qfrc_bias.copy())
        out["xmat"].append(d.xmat[1:].reshape(-1, 3, 3).copy())
        out["xpos"].append(d.xpos[1:].copy())
        d.qacc[:] = qdd[k]
        rne = np.zeros(m.nv)
        mujoco.mj_rne(m, d, 1, rne)
        out["tau"].append(rne)
        m.opt.disableflags = flags | RIGID_ONLY
        d.qfrc_applied[:] = tau[k]
        mujoco.mj_forward(m, d)
        out["qdd"].append(d.qacc.copy())
    m.opt.disableflags = flags
    return {key: np.stack(value) for key, value in out.items()}


def _close(name, got, expected, tol=1e-10):
    error = relative_error(got, expected)
    assert error <= tol, f"{name}: relative error {error:.2e} > {tol:.0e}"


@pytest.mark.parametrize("file", FILES)
def test_dynamics_and_poses_match_mujoco(file):
    path = DATA / file
    m = mujoco.MjModel.from_xml_path(str(path))
    # a path for one file, the text for the other (a compiled MjModel: test_mjcf_model_source_and_structure)
    model = load_mjcf(path if file == "mjcf_arm.xml" else path.read_text())
    assert model.n_dof == m.nv == m.nq
    rng = np.random.default_rng(17)
    q = rng.uniform(-1.5, 1.5, (STATES, m.nq))
    qd, qdd, tau = (rng.normal(0.0, 2.0, (STATES, m.nv)) for _ in range(3))
    mj = _mujoco_everything(m, q, qd, qdd, tau)
    mass, bias, tau_id, qdd_fd, rotations, origins = EVERYTHING(model, q, qd, qdd, tau)
    _close("M vs mj_fullM", mass, mj["M"])
    _close("C qd + g vs qfrc_bias", bias, mj["bias"])
    _close("inverse dynamics vs mj_rne", tau_id, mj["tau"])
    _close("forward dynamics vs qacc", qdd_fd, mj["qdd"])
    # the kronjax body named after each MuJoCo body has that body's frame
    bodies = [model.body_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)) for b in range(1, m.nbody)]
    _close("body rotations vs xmat", np.asarray(rotations)[:, bodies], mj["xmat"])
    _close("body origins vs xpos", np.asarray(origins)[:, bodies], mj["xpos"])


def test_mjcf_model_source_and_structure():
    """A compiled MjModel loads; names, kinds, limits and gravity are the file's."""
    m = mujoco.MjModel.from_xml_path(str(DATA / "mjcf_arm.xml"))
    model = kj.load_mjcf(m)
    # the body with two hinges: a massless body at its place, then the body itself
    assert model.body_names == ("base", "upper.j2a", "upper", "slider", "tool", "wrist")
    assert model.joint_names == ("j1", "j2a", "j2b", "j3", "tool_fixed", "j4")
    assert model.kinematics.kinds == ("R", "R", "R", "P", "F", "R")
    assert float(model.inertials.mass[1]) == 0.0 and float(model.inertials.mass[4]) == 0.4
    np.testing.assert_array_equal(model.gravity, [0.3, -0.2, -9.81])
    inf = np.inf
    np.testing.assert_array_equal(model.limits.lower, [-2, -inf, -inf, -0.1, -inf])
    np.testing.assert_array_equal(model.limits.upper, [2, inf, inf, 0.4, inf])
    # motor j1: gear 50 x ctrlrange 2; j3: gear 10 x forcerange 30
    np.testing.assert_array_equal(model.limits.effort, [100, inf, inf, 300, inf])
    np.testing.assert_array_equal(load_mjcf(m, gravity=(0, 0, -1)).gravity, [0, 0, -1])


def test_mjcf_errors(tmp_path, monkeypatch):
    refused = tmp_path / "refused.xml"  # a moving body without mass: MuJoCo's compiler refuses it
    refused.write_text('<mujoco><worldbody><body name="b"><joint name="j"/></body></worldbody></mujoco>')
    with pytest.raises(MJCFError, match="refused.xml"):
        load_mjcf(refused)
    free = '<mujoco><worldbody><body><freejoint name="float"/><geom size="0.1"/></body></worldbody></mujoco>'
    with pytest.raises(MJCFError, match="'float' is a free joint: not read from MJCF yet.*issue 17"):
        load_mjcf(free)
    ball = '<mujoco><worldbody><body><joint name="sph" type="ball"/><geom size="0.1"/></body></worldbody></mujoco>'
    with pytest.raises(MJCFError, match="'sph' is a ball joint"):
        load_mjcf(ball)
    with pytest.raises(MJCFError, match="neither an MJCF file nor MJCF"):
        load_mjcf("this is not XML")
    with pytest.raises(MJCFError, match="cannot compile the MJCF text"):
        load_mjcf("<mujoco><worldbody><bodyy/></worldbody></mujoco>")
    monkeypatch.setitem(__import__("sys").modules, "mujoco", None)
    with pytest.raises(ImportError, match="pip install mujoco"):
        load_mjcf(DATA / "mjcf_arm.xml")


def test_mjcf_unmodelled_features_warn():
    xml = """<mujoco><worldbody><body name="b"><geom size="0.1"/>
      <joint name="ja" axis="1 0 0" armature="0.1" damping="0.5"/>
      <body name="c" pos="0.2 0 0"><geom size="0.1"/><joint name="jb" frictionloss="0.2"/></body>
      </body></worldbody>
      <tendon><fixed name="tie"><joint joint="ja" coef="1"/><joint joint="jb" coef="-1"/></fixed></tendon>
      <actuator><position name="servo" joint="ja" kp="10"/><general name="slow" joint="jb" dyntype="filter"/></actuator>
    </mujoco>"""
    with pytest.warns(UserWarning) as record:
        model = load_mjcf(xml)
    messages = "\n".join(str(w.message) for w in record)
    for expected in (
        "armature of joints ja",
        "damping of joints ja",
        "frictionloss of joints jb",
        "tendons tie",
        "dynamics slow",
    ):
        assert expected in messages, messages
    assert model.n_dof == 2
    # a position servo without forcerange and an actuator with dynamics give no effort limit
    np.testing.assert_array_equal(model.limits.effort, [np.inf, np.inf])
