"""System identification (kronjax.identify) against Pinocchio, hand-derived base-parameter counts
and first principles.

Oracles: Pinocchio's ``computeJointTorqueRegressor``, ``rnea``, ``Inertia.toDynamicParameters``
and ``SE3.act`` (inertias moved between frames); the numerical rank of Pinocchio's regressor;
base-parameter counts derived by hand with Gautier and Khalil's regrouping rules; measurements
simulated with Pinocchio's ``rnea`` (never with kronjax's own regressor); mass distributions of
point masses summed directly.
"""

import functools
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import kronjax as kj
from kronjax import identify as ki

pin = pytest.importorskip("pinocchio")

from oracles import random_arm, relative_error, to_pinocchio  # noqa: E402

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

DATA = Path(__file__).resolve().parent / "data"

MODELS = {
    "puma560": lambda: kj.models.puma560(motors=False),  # the rigid links: Y pi is their rnea
    "panda": kj.models.panda,
    "ur5": kj.models.ur5,
    "truc_elbow": kj.models.truc_elbow,
    "stacker": kj.models.stacker,
    "double_pendulum": kj.models.double_pendulum,
    "random7": lambda: random_arm(0),
    "tree7": lambda: random_arm(1, parents=(-1, 0, 1, 2, 3, 2, 5), prismatic=(4,)),
    "panda_urdf": lambda: kj.load_urdf(DATA / "panda.urdf"),
}
# Each model costs a compilation of the regressor (most of this file's time). The PUMA 560
# (standard D-H: Pinocchio's parameters through Post), the elbow arm and the double pendulum (hand
# counts) and the random tree (from_joints, branches, a prismatic joint) run in the fast tier; the
# others are of kinds these cover, in the slow tier. (The Panda's regressor, with friction, is
# also checked against Pinocchio's rnea by test_noise_free_recovery.)
SLOW_MODELS = ("panda", "ur5", "stacker", "random7", "panda_urdf")


@functools.cache
def _model(name):
    """One instance per model, so that later tests find its compiled regressor."""
    return MODELS[name]()


def _states(model, n_states, seed):
    """Random states; the same shapes as :func:`kronjax.identify.base_parameters` uses, so that
    the compiled regressor is shared."""
    rng = np.random.default_rng(seed)
    lower = np.maximum(np.asarray(model.limits.lower), -np.pi)
    upper = np.minimum(np.asarray(model.limits.upper), np.pi)
    q = rng.uniform(lower, upper, (n_states, model.nv))
    return q, rng.normal(size=q.shape), rng.normal(size=q.shape)


def _default_samples(model, friction=False):
    """The number of states :func:`kronjax.identify.base_parameters` uses by default."""
    p = 10 * model.n_bodies + (2 * model.nv if friction else 0)
    return int(2 * p / model.nv + 20)


def _pinocchio_regressors(pm, q, qd, qdd):
    data = pm.createData()
    return np.stack([pin.computeJointTorqueRegressor(pm, data, *s).copy() for s in zip(q, qd, qdd)])


def _pinocchio_parameter_map(model):
    """``T`` with ``pi_pinocchio = T pi_kronjax``: to_pinocchio appends each kronjax body to its
    joint with the placement ``Post``; the map of one body's 10 parameters is found by moving 10
    random inertias with Pinocchio's own ``SE3.act`` (the map is linear, and 10 random inertias
    span the parameter space)."""
    tree = model.kinematics
    assert "F" not in tree.kinds
    blocks = []
    pin.seed(7)
    for i in range(model.n_bodies):
        placement = pin.SE3(np.asarray(tree.post_rotation[i], float), np.asarray(tree.post_translation[i], float))
        inertias = [pin.Inertia.Random() for _ in range(10)]
        ours = np.stack([inertia.toDynamicParameters() for inertia in inertias], axis=1)
        theirs = np.stack([placement.act(inertia).toDynamicParameters() for inertia in inertias], axis=1)
        blocks.append(theirs @ np.linalg.inv(ours))
    return scipy.linalg.block_diag(*blocks)


@pytest.fixture(
    scope="module", params=[pytest.param(name, marks=pytest.mark.slow) if name in SLOW_MODELS else name for name in MODELS]
)
def regressors(request):
    """Per model: random states, our regressor, Pinocchio's, and Pinocchio's rnea."""
    model = _model(request.param)
    q, qd, qdd = _states(model, _default_samples(model), seed=1)
    ours = np.asarray(ki.regressor(model, q, qd, qdd))
    pm = to_pinocchio(model)
    data = pm.createData()
    rnea = np.stack([pin.rnea(pm, data, *s).copy() for s in zip(q, qd, qdd)])
    return request.param, model, (q, qd, qdd), ours, _pinocchio_regressors(pm, q, qd, qdd), rnea


# --------------------------------------------------------------------------------------------
# Standard parameters
# --------------------------------------------------------------------------------------------


def test_standard_parameters_are_pinocchios_dynamic_parameters():
    """On a model whose body frames are Pinocchio's joint frames, ``pi`` of each body is
    Pinocchio's ``Inertia(m, c, I_G).toDynamicParameters()`` (m, m c, I about the origin)."""
    model = random_arm(3)
    pi = np.asarray(ki.standard_parameters(model)).reshape(-1, 10)
    ine = model.inertials
    for i in range(model.n_bodies):
        expected = pin.Inertia(float(ine.mass[i]), np.asarray(ine.com[i]), np.asarray(ine.inertia[i])).toDynamicParameters()
        assert relative_error(pi[i], expected) <= 1e-14
    back = ki.with_standard_parameters(model, pi.reshape(-1))
    for a, b in zip(jax.tree.leaves(back.inertials), jax.tree.leaves(ine)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
    assert ki.parameter_names(model)[:10] == tuple(f"link1.{p}" for p in ki.BODY_PARAMETERS)


def test_pseudo_inertia_of_point_masses():
    """First principles: for a cloud of point masses the pseudo-inertia is ``sum m [x; 1][x; 1]^T``
    and the standard parameters are sums over the points; a rod's triangle-inequality violation
    makes it indefinite."""
    rng = np.random.default_rng(0)
    masses, points = rng.uniform(0.1, 1.0, 12), rng.normal(size=(12, 3))
    m = masses.sum()
    h = masses @ points
    inertia = sum(mk * (xk @ xk * np.eye(3) - np.outer(xk, xk)) for mk, xk in zip(masses, points))
    pi = np.concatenate([[m], h, inertia[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]])
    homogeneous = np.concatenate([points, np.ones((12, 1))], axis=1)
    expected = np.einsum("k,ki,kj->ij", masses, homogeneous, homogeneous)
    assert relative_error(ki.pseudo_inertia(pi)[0], expected) <= 1e-14
    # (Ixx, Iyy, Izz) = (1, 1, 3) about the centre of mass violates Izz <= Ixx + Iyy
    bad = np.array([1.0, 0, 0, 0, 1, 0, 1, 0, 0, 3])
    assert np.linalg.eigvalsh(np.asarray(ki.pseudo_inertia(bad)[0]))[0] < 0


# --------------------------------------------------------------------------------------------
# Regressor
# --------------------------------------------------------------------------------------------


def test_regressor_times_parameters_is_inverse_dynamics(regressors):
    """``Y pi`` equals inverse dynamics (Pinocchio's rnea) to 1e-12, at the model's parameters and
    at random physical ones (``Y`` does not depend on the inertials)."""
    name, model, states, ours, _, rnea = regressors
    pi = np.asarray(ki.standard_parameters(model))
    err = relative_error(ours @ pi, rnea)
    other = random_arm(5, parents=tuple(range(-1, model.n_bodies - 1)), prismatic=())
    pi_other = np.asarray(ki.standard_parameters(other))
    pm = to_pinocchio(ki.with_standard_parameters(model, pi_other))
    data = pm.createData()
    expected = np.stack([pin.rnea(pm, data, *s) for s in zip(*states)])
    err_other = relative_error(ours @ pi_other, expected)
    print(f"\n{name}: |Y pi - rnea| {err:.1e}, random parameters {err_other:.1e}")
    assert err <= 1e-12 and err_other <= 1e-12


def test_regressor_matches_pinocchio(regressors):
    """Our regressor equals ``pin.computeJointTorqueRegressor`` to 1e-10. Where kronjax's body frame
    is Pinocchio's joint frame (``Post`` = identity: from_joints, URDF and modified D-H models)
    the columns are the same; for standard D-H models Pinocchio's parameters are those of the
    bodies moved by ``Post``: ``Y_ours = Y_pinocchio T`` with ``T`` from Pinocchio's ``SE3.act``."""
    name, model, _, ours, theirs, _ = regressors
    tree = model.kinematics
    post_identity = np.allclose(tree.post_rotation, np.eye(3), atol=0) and not np.any(tree.post_translation)
    expected = theirs if post_identity else theirs @ _pinocchio_parameter_map(model)
    err = relative_error(ours, expected)
    print(f"\n{name}: |Y - Y_pinocchio| {err:.1e} ({'same frames' if post_identity else 'through Post'})")
    assert err <= 1e-10


def test_regressor_of_a_poses_function_model():
    """A :func:`kronjax.from_function` model (method "euler_lagrange") has the same regressor as the
    tree it copies, and ``Y pi`` is Pinocchio's rnea."""
    tree_model = kj.models.double_pendulum()
    fn_model = kj.from_function(lambda q: tree_model.poses(q), 2, tree_model.inertials, gravity=tree_model.gravity)
    q, qd, qdd = _states(tree_model, 5, seed=2)
    y = np.asarray(ki.regressor(fn_model, q, qd, qdd))
    pm = to_pinocchio(tree_model)
    data = pm.createData()
    rnea = np.stack([pin.rnea(pm, data, *s) for s in zip(q, qd, qdd)])
    assert relative_error(y @ np.asarray(ki.standard_parameters(fn_model)), rnea) <= 1e-12
    assert relative_error(y, _pinocchio_regressors(pm, q, qd, qdd)) <= 1e-10


def test_friction_columns():
    """Viscous and Coulomb columns: ``tau = Y pi + fv qd + fc sign(qd)`` (Pinocchio's rnea plus the
    friction torques); without them ``Y pi`` is kronjax's own inverse dynamics too."""
    model = _model("truc_elbow")
    # as many states as base_parameters(friction=True) takes: the excitation test below reuses
    # this compiled regressor
    q, qd, qdd = _states(model, _default_samples(model, friction=True), seed=3)
    y = np.asarray(ki.regressor(model, q, qd, qdd, friction=True))
    fv, fc = np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.4, 0.2])
    pi = np.concatenate([ki.standard_parameters(model), fv, fc])
    pm = to_pinocchio(model)
    data = pm.createData()
    expected = np.stack([pin.rnea(pm, data, *s) for s in zip(q, qd, qdd)]) + fv * qd + fc * np.sign(qd)
    assert relative_error(y @ pi, expected) <= 1e-13
    own = kj.inverse_dynamics(model, q[0], qd[0], qdd[0])  # kronjax's own
    assert relative_error(y[0, :, :30] @ pi[:30], own) <= 1e-12
    assert y.shape == (len(q), 3, 36)
    assert ki.parameter_names(model, friction=True)[-6:] == (
        "joint1.fv",
        "joint2.fv",
        "joint3.fv",
        "joint1.fc",
        "joint2.fc",
        "joint3.fc",
    )


def test_joint_parameters_recovered_from_noise_free_torques():
    """Torques of a model with rotor inertias, damping and Coulomb friction (Pinocchio's rnea with
    ``model.armature``, plus ``fv qd + fc sign(qd)``): least squares on the base regressor with
    friction and armature columns recovers the base parameters to 1e-8, among them joint 3's
    armature on its own (joints 1 and 2's regroup with their links' inertias about the same axes,
    ``link2.Izz + joint2.ia - ...``); ``Y`` times the true parameters is
    ``inverse_dynamics(..., passive=True)``."""
    rotors, fv, fc = np.array([0.2, 0.5, 0.1]), np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.4, 0.2])
    model = kj.chain.Model(
        **{**vars(_model("truc_elbow")), "armature": jnp.asarray(rotors), "damping": jnp.asarray(fv), "friction": jnp.asarray(fc)}
    )
    base = ki.base_parameters(model, friction=True, armature=True, key=jax.random.key(4), samples=40)
    q, qd, qdd = _states(model, 40, seed=5)  # as many as base_parameters: one compiled regressor
    pm = to_pinocchio(model)
    data = pm.createData()
    tau = np.stack([pin.rnea(pm, data, *s) for s in zip(q, qd, qdd)]) + fv * qd + fc * np.sign(qd)
    y = np.asarray(ki.regressor(model, q, qd, qdd, friction=True, armature=True))
    truth = np.concatenate([ki.standard_parameters(model), fv, fc, rotors])
    assert relative_error(y @ truth, tau) <= 1e-12
    passive = jax.jit(lambda *s: kj.inverse_dynamics(model, *s, passive=True))
    assert relative_error([passive(*s) for s in zip(q[:3], qd[:3], qdd[:3])], tau[:3]) <= 1e-12
    beta = np.asarray(ki.least_squares(base.regressor(y), tau))
    expected = np.asarray(base.from_standard(truth))
    assert np.max(np.abs(beta - expected)) <= 1e-8 * np.max(np.abs(expected))
    names = ki.parameter_names(model, friction=True, armature=True)
    assert names[-3:] == ("joint1.ia", "joint2.ia", "joint3.ia")
    alone = [names[base.independent[k]] for k in range(base.rank) if np.count_nonzero(np.asarray(base.projection)[k]) == 1]
    assert "joint3.ia" in alone and "joint2.ia" not in alone, alone
    assert abs(beta[[names[i] for i in base.independent].index("joint3.ia")] - rotors[2]) <= 1e-8


def test_regressor_float32():
    """float32 in, float32 out: the regressor of the float32 model is within float32 rounding of
    the float64 one, and ``Y pi`` of Pinocchio's rnea."""
    model = _model("truc_elbow")
    states = _states(model, _default_samples(model), seed=1)  # the float64 regressor is compiled already
    y64 = np.asarray(ki.regressor(model, *states))
    m32 = model.astype(jnp.float32)
    y32 = ki.regressor(m32, *(jnp.asarray(x, jnp.float32) for x in states))
    assert y32.dtype == jnp.float32
    assert relative_error(y32, y64) <= 1e-5
    pm = to_pinocchio(model)
    data = pm.createData()
    rnea = np.stack([pin.rnea(pm, data, *s) for s in zip(*states)])
    assert relative_error(y32 @ ki.standard_parameters(m32), rnea) <= 1e-5


# --------------------------------------------------------------------------------------------
# Base parameters
# --------------------------------------------------------------------------------------------

# Counts derived by hand with the regrouping rules of M. Gautier and W. Khalil, "Direct calculation
# of minimum set of inertial parameters of serial robots", IEEE Trans. Robotics and Automation
# 6(3), 1990 (also Khalil and Dombre, "Modeling, Identification and Control of Robots", 2002,
# sec. 12.4), for revolute chains on a fixed base:
#   (a) each revolute link j keeps 7 of its 10 parameters: in a frame with z along joint j, YY_j,
#       MZ_j and M_j are regrouped into XX_j and the parameters of link j - 1;
#   (b) link 1 turns about a fixed axis: only its inertia about that axis (ZZR_1) and, when the axis
#       is not vertical, its first moments MXR_1, MYR_1 act: 1 (vertical axis) or 3 of the 7;
#   (c) a link j whose axis stays parallel to joint 1's (planar chains) turns about a fixed
#       direction: XXR_j, XY_j, XZ_j, YZ_j do not act, 3 of the 7 remain.
# Elbow arm (Truc et al. 2019; joint 1 vertical, joint 2 perpendicular to it, joint 3 parallel to
# joint 2): 1 + 7 + 7 = 15. PUMA 560 (6R, joint 1 vertical, joint 2 perpendicular to it): 1 + 5 x 7
# = 36. Double pendulum (Huang et al.; two parallel horizontal axes, gravity in the plane):
# 3 + 3 = 6. These counts are for rigid links only. The literature's PUMA/RX-90 counts with the
# rotor (armature) inertias Ia_j as parameters are larger: Ia_1 and Ia_2 regroup with ZZR_1 and
# ZZR_2 (axis 2 perpendicular to axis 1 makes ZZ_2 act on joint 2 only) but Ia_3..Ia_6 do not, so
# 36 + 4 = 40. The regressor tests use puma560(motors=False), so 36 applies; the test below
# checks the 40 with the columns of Ia_j appended (tau_j = Ia_j qdd_j, regressor(armature=True)).
HAND_COUNTS = {"truc_elbow": 15, "puma560": 36, "double_pendulum": 6}


def test_base_parameter_counts(regressors):
    """The rank found by :func:`base_parameters` equals that of Pinocchio's regressor by the same
    numerical procedure (other random states), and the hand-derived counts above."""
    name, model, states, ours, theirs, _ = regressors
    base = ki.base_parameters(model)
    their_rank = ki.base_parameters_from_regressor(theirs).rank
    print(f"\n{name}: {base.rank} base parameters (Pinocchio's regressor: {their_rank}; hand: {HAND_COUNTS.get(name, '-')})")
    assert base.rank == their_rank
    if name in HAND_COUNTS:
        assert base.rank == HAND_COUNTS[name]
    # beta = K pi gives the same torques through the base regressor
    pi = np.asarray(ki.standard_parameters(model))
    assert relative_error(np.asarray(base.regressor(ours)) @ np.asarray(base.from_standard(pi)), ours @ pi) <= 1e-10


def test_puma560_with_rotor_inertias_has_40_base_parameters():
    model = _model("puma560")
    q, qd, qdd = _states(model, _default_samples(model), seed=1)
    y = np.asarray(ki.regressor(model, q, qd, qdd))
    rotors = np.einsum("ij,sj->sij", np.eye(6), qdd)  # tau_j = Ia_j qdd_j
    assert ki.base_parameters_from_regressor(np.concatenate([y, rotors], axis=2)).rank == 40


def test_base_parameters_describe_the_regrouping():
    """The elbow arm's first base parameter is link 1's inertia about joint 1 with what links 2 and
    3 add to it (Gautier-Khalil's ZZR_1), in the body frames of the D-H table (joint 1's axis is y
    of frame 1, joint 2's is z of frame 1)."""
    base = ki.base_parameters(_model("truc_elbow"))
    first = base.describe()[0]
    assert first.startswith("link1.Iyy") and "link2.m" in first and "link3.m" in first
    assert all(not d.startswith("link1.m") for d in base.describe())


# --------------------------------------------------------------------------------------------
# Identification: the Panda with friction, measurements from Pinocchio's rnea
# --------------------------------------------------------------------------------------------

N_SAMPLES = 100
PERIOD = 10.0
TIMES = jnp.linspace(0.0, PERIOD, N_SAMPLES, endpoint=False)
ACCELERATION = 4.0  # rad/s^2
VISCOUS = np.array([0.06, 0.25, 0.05, 0.2, 0.04, 0.1, 0.01])
COULOMB = np.array([0.2, 0.5, 0.15, 0.5, 0.3, 0.2, 0.3])


@pytest.fixture(scope="module")
def panda():
    model = kj.models.panda()
    pm = to_pinocchio(model)
    data = pm.createData()
    base = ki.base_parameters(model, friction=True, samples=N_SAMPLES)
    truth = np.concatenate([np.asarray(ki.standard_parameters(model)), VISCOUS, COULOMB])

    def measure(seed, velocity):
        trajectory = ki.FourierTrajectory.random(jax.random.PRNGKey(seed), model, 4, 1 / PERIOD, velocity)
        q, qd, qdd = (np.asarray(x) for x in ki.fit_to_limits(model, trajectory, acceleration=ACCELERATION)(TIMES))
        tau = np.stack([pin.rnea(pm, data, *s) for s in zip(q, qd, qdd)]) + VISCOUS * qd + COULOMB * np.sign(qd)
        return np.asarray(ki.regressor(model, q, qd, qdd, friction=True)), tau

    train, held_out, poor = measure(1, 1.0), measure(2, 1.0), measure(3, 0.03)
    sigma = 0.01 * np.sqrt(np.mean(train[1] ** 2, axis=0))  # 1% torque noise
    noise = np.random.default_rng(0).normal(size=(3, *train[1].shape)) * sigma
    # a "CAD" model: the true bodies with masses, centres of mass and inertias off by up to 20%
    rng = np.random.default_rng(1)
    ine = model.inertials
    cad = kj.chain.Model(
        model.kinematics,
        kj.chain.Inertials(
            ine.mass * (1 + rng.uniform(-0.2, 0.2, 7)),
            ine.com + rng.uniform(-0.02, 0.02, (7, 3)),
            ine.inertia * (1 + rng.uniform(-0.2, 0.2, (7, 1, 1))),
        ),
        model.gravity,
        model.body_names,
        model.joint_names,
        model.limits,
    )
    return dict(model=model, base=base, truth=truth, train=train, held_out=held_out, poor=poor, sigma=sigma, noise=noise, cad=cad)


def _min_eigenvalues(pi):
    return np.linalg.eigvalsh(np.asarray(ki.pseudo_inertia(np.asarray(pi)[:70])))[:, 0]


def test_noise_free_recovery(panda):
    """From noise-free torques (Pinocchio's rnea plus friction) least squares recovers the base
    parameters to 1e-8 (relative to the largest)."""
    base, (y, tau) = panda["base"], panda["train"]
    beta = np.asarray(ki.least_squares(base.regressor(y), tau))
    expected = np.asarray(base.from_standard(panda["truth"]))
    err = np.max(np.abs(beta - expected)) / np.max(np.abs(expected))
    cond = np.linalg.cond(np.asarray(base.regressor(y)).reshape(-1, base.rank))
    print(f"\npanda + friction: {base.rank} base parameters, cond {cond:.0f}, max error {err:.1e}")
    assert base.rank == 43 + 14
    assert err <= 1e-8


@pytest.mark.slow  # compile-bound; the slow tier runs in CI too
def test_noisy_held_out_prediction(panda):
    """With 1% torque noise, weighted least squares predicts the torques of a held-out trajectory
    with an RMS error within 1.5 times the noise level on every joint (measured torques, noisy
    too); the physically consistent estimate too, with positive-definite pseudo-inertias."""
    base, (y, tau), (yt, taut) = panda["base"], panda["train"], panda["held_out"]
    sigma, noise = panda["sigma"], panda["noise"]
    measured, measured_t = tau + noise[0], taut + noise[1]
    beta, sigma_hat = ki.weighted_least_squares(base.regressor(y), measured)
    ratio = np.sqrt(np.mean((np.asarray(base.regressor(yt)) @ np.asarray(beta) - measured_t) ** 2, axis=0)) / sigma
    pc, losses = ki.physically_consistent(panda["cad"], y, measured, friction=True, sigma=sigma_hat, prior_weight=1e-3)
    ratio_pc = np.sqrt(np.mean((yt @ np.asarray(pc) - measured_t) ** 2, axis=0)) / sigma
    print(f"\nheld-out RMS / noise: WLS {np.round(ratio, 2)}, physically consistent {np.round(ratio_pc, 2)}")
    print(f"estimated noise / true: {np.round(np.asarray(sigma_hat) / sigma, 2)}; loss {losses[0]:.3g} -> {losses[-1]:.3g}")
    assert np.all(ratio <= 1.5)
    assert np.all(ratio_pc <= 1.5)
    assert np.all(_min_eigenvalues(pc) > 0)


def test_physically_consistent_on_poor_excitation(panda):
    """A deliberately poor excitation (3% of the speed: cond ~1e6): least squares fits the data but
    its bodies (the standard parameters closest to the CAD values with the estimated base
    parameters) are not realisable; the physically consistent estimate's are, always."""
    base, (y, tau), noise = panda["base"], panda["poor"], panda["noise"][2]
    measured = tau + noise
    cond = np.linalg.cond(np.asarray(base.regressor(y)).reshape(-1, base.rank))
    beta = ki.least_squares(base.regressor(y), measured)
    cad = np.concatenate([np.asarray(ki.standard_parameters(panda["cad"])), np.zeros(14)])
    ls_bodies = _min_eigenvalues(base.to_standard(beta, cad))
    pc, _ = ki.physically_consistent(panda["cad"], y, measured, friction=True, prior_weight=1e-3)
    pc_bodies = _min_eigenvalues(pc)
    print(f"\npoor excitation, cond {cond:.1e}: smallest pseudo-inertia eigenvalue per body")
    print(f"  least squares         {np.array2string(ls_bodies, precision=2)}")
    print(f"  physically consistent {np.array2string(pc_bodies, precision=2)}")
    assert cond > 1e4
    assert np.any(ls_bodies < 0)
    assert np.all(pc_bodies > 0)


def test_physically_consistent_starts_at_initial():
    """The log-Cholesky parameterisation reproduces realisable bodies: with 0 steps the estimate
    is the starting point."""
    model = kj.models.ur5()
    y = np.zeros((2, 6, 60))
    pi, losses = ki.physically_consistent(model, y, np.zeros((2, 6)), steps=0)
    assert losses.shape == (0,)
    assert relative_error(pi, ki.standard_parameters(model)) <= 1e-12


# --------------------------------------------------------------------------------------------
# Excitation
# --------------------------------------------------------------------------------------------


@pytest.mark.slow  # compiles the excitation optimiser (10-16 s) and runs it
def test_optimised_excitation_is_better_conditioned():
    """The optimised Fourier coefficients give a lower condition number than the random start,
    both within the limits (position +-2.5 rad, velocity 1.5 rad/s, acceleration 3 rad/s^2,
    checked on a fine grid). The condition numbers are numpy's, of the stacked base regressor; the
    optimiser's history starts at the start's."""
    limits = kj.chain.JointLimits(*(jnp.full(3, x, float) for x in (-2.5, 2.5, 1.5, jnp.inf)))
    model = eqx.tree_at(lambda m: m.limits, _model("truc_elbow"), limits)
    base = ki.base_parameters(model, friction=True)
    # as many instants as base_parameters' states: one compiled regressor (with test_friction_columns)
    times = jnp.linspace(0.0, 10.0, _default_samples(model, friction=True), endpoint=False)

    def condition_number(trajectory):
        q, qd, qdd = (np.asarray(x, float) for x in trajectory(times))  # as compiled: float64, not weak
        y = base.regressor(ki.regressor(model, q, qd, qdd, friction=True))
        return float(np.linalg.cond(np.asarray(y).reshape(-1, base.rank)))

    start = ki.FourierTrajectory.random(jax.random.PRNGKey(0), model, harmonics=3, frequency=0.1)
    before = condition_number(ki.fit_to_limits(model, start, acceleration=3.0))
    best, history = ki.optimize_excitation(
        model, start, times, base, friction=True, acceleration=3.0, steps=40, learning_rate=0.05
    )
    after = condition_number(best)
    print(f"\nelbow + friction ({base.rank} base parameters): condition number {before:.1f} -> {after:.1f}")
    assert after < 0.7 * before
    assert abs(float(history[0]) - before) <= 1e-9 * before
    q, qd, qdd = best(jnp.linspace(0.0, 10.0, 4001))
    assert np.all(np.abs(q) <= 2.5 + 1e-4) and np.all(np.abs(qd) <= 1.5 + 1e-4) and np.all(np.abs(qdd) <= 3.0 + 1e-3)


def test_fourier_trajectory_derivatives_and_fit():
    """qd and qdd are the time derivatives of q (forward-mode AD), and :meth:`fit` recovers the
    coefficients from samples of q."""
    tr = ki.FourierTrajectory.random(jax.random.PRNGKey(1), kj.models.panda(), harmonics=3, frequency=0.2)
    t = jnp.linspace(0.0, 5.0, 50, endpoint=False)
    q, qd, qdd = tr(t)
    _, dq = jax.jvp(lambda t: tr(t)[0], (t,), (jnp.ones_like(t),))
    _, dqd = jax.jvp(lambda t: tr(t)[1], (t,), (jnp.ones_like(t),))
    assert relative_error(dq, qd) <= 1e-13 and relative_error(dqd, qdd) <= 1e-13
    fitted = ki.FourierTrajectory.fit(t, q, 3, 0.2)
    for a, b in zip(jax.tree.leaves(fitted), jax.tree.leaves(tr)):
        np.testing.assert_allclose(a, b, atol=1e-10)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("without_shape_checks")
def test_errors():
    model = kj.models.truc_elbow()
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., 3\)"):
        ki.regressor(model, jnp.zeros(2), jnp.zeros(2), jnp.zeros(2))
    with pytest.raises(ValueError, match="same shape"):
        ki.regressor(model, jnp.zeros((2, 3)), jnp.zeros(3), jnp.zeros(3))
    pi = np.asarray(ki.standard_parameters(model))
    with pytest.raises(ValueError, match=r"shape \(30,\)"):
        ki.with_standard_parameters(model, pi[:20])
    bad = pi.copy()
    bad[10] = -1.0  # body 1 with negative mass
    with pytest.raises(ValueError, match="body 1 .* not physically realisable"):
        ki.with_standard_parameters(model, bad)
    assert ki.with_standard_parameters(model, bad, check=False).inertials.mass[1] == -1.0
    bad[10] = 0.0
    with pytest.raises(ValueError, match="mass is 0"):
        ki.with_standard_parameters(model, bad, check=False)
    bad[10:20] = 0.0  # a massless frame is allowed, as in the model builders
    assert ki.with_standard_parameters(model, bad).inertials.mass[1] == 0.0
    with pytest.raises(ValueError, match="more states"):
        ki.base_parameters_from_regressor(np.ones((5, 30)))
    with pytest.raises(ValueError, match="columns"):
        ki.physically_consistent(model, np.zeros((4, 3, 30)), np.zeros((4, 3)), friction=True)
    with pytest.raises(ValueError, match="not positive definite"):
        ki.physically_consistent(kj.models.puma560(), np.zeros((4, 6, 60)), np.zeros((4, 6)))
    with pytest.raises(ValueError, match="no inertials"):
        ki.standard_parameters(kj.from_dh([("R", 0, 0, 1, 0)]))
    with pytest.raises(ValueError, match="FourierTrajectory needs"):
        ki.FourierTrajectory(jnp.zeros(2), jnp.zeros((3, 2)), jnp.zeros((3, 2)), 0.1)


# --------------------------------------------------------------------------------------------
# Degenerate limits (issue 18): a CAD export's <limit lower="0" upper="0" velocity="0"/>
# --------------------------------------------------------------------------------------------


def _locked_pendulum():
    """The double pendulum (hand count 6, above) with both joints limited to the single point 0,
    as a URDF exported with zero limits reads under ``strict_limits=True``. Same names and shapes
    as the double pendulum of the ``regressors`` fixture: its compiled regressor is reused."""
    nominal = kj.models.double_pendulum()
    joints = [
        kj.Joint("R", parent=-1, axis=(0, 0, 1), lower=0.0, upper=0.0),
        kj.Joint("R", parent=0, axis=(0, 0, 1), translation=(1.22, 0, 0), lower=0.0, upper=0.0),
    ]
    inertials = [kj.Inertial(mass=14.59, com=(0.61, 0, 0), inertia=(0.0, 1.36, 1.36))] * 2
    return kj.from_joints(joints, inertials, gravity=nominal.gravity)


def test_base_parameters_ignore_single_point_limits():
    """Locked limits do not hide parameters: ``base_parameters`` finds the 6 of the hand count,
    the numerical rank (numpy's SVD) of Pinocchio's regressor stacked over random states."""
    model = _locked_pendulum()
    assert np.all(np.asarray(model.limits.lower) == np.asarray(model.limits.upper))
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (30, 2)), rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    theirs = _pinocchio_regressors(to_pinocchio(model), q, qd, qdd).reshape(-1, 20)
    norms = np.linalg.norm(theirs, axis=0)
    s = np.linalg.svd(theirs[:, norms > 1e-12 * norms.max()] / norms[norms > 1e-12 * norms.max()], compute_uv=False)
    assert int(np.sum(s > 1e-8 * s[0])) == 6
    base = ki.base_parameters(model)
    assert base.rank == HAND_COUNTS["double_pendulum"] == 6


def test_cad_export_pendulum_has_six_base_parameters():
    """Issue 18's case: the two-link pendulum URDF with a CAD exporter's ``<limit lower="0"
    upper="0" effort="0" velocity="0"/>`` on both joints has 6 base parameters whether its limits
    are read as not set (the default, with a warning) or kept (``strict_limits=True``): the
    numerical rank of Pinocchio's regressor of the same file (its own parser) over random states."""
    path = DATA / "cad_pendulum.urdf"
    theirs = pin.buildModelFromUrdf(str(path))
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (30, 2)), rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    w = _pinocchio_regressors(theirs, q, qd, qdd).reshape(60, -1)
    norms = np.linalg.norm(w, axis=0)
    kept = norms > 1e-12 * norms.max()
    s = np.linalg.svd(w[:, kept] / norms[kept], compute_uv=False)
    assert int(np.sum(s > 1e-8 * s[0])) == 6
    with pytest.warns(UserWarning, match="shoulder.*elbow"):
        default = kj.load_urdf(path)
    strict = kj.load_urdf(path, strict_limits=True)
    assert np.all(np.asarray(strict.limits.lower) == 0.0) and np.all(np.asarray(strict.limits.upper) == 0.0)
    assert ki.base_parameters(default).rank == ki.base_parameters(strict).rank == 6


def test_excitation_refuses_joints_that_cannot_move():
    """fit_to_limits and optimize_excitation name the joint whose range has zero width or whose
    velocity limit is 0, instead of scaling its motion to nothing."""
    model = _locked_pendulum()
    start = ki.FourierTrajectory(jnp.zeros(2), jnp.ones((2, 2)), jnp.ones((2, 2)), 0.5)
    with pytest.raises(ValueError, match=r"fit_to_limits: joint 'joint1' \(coordinate 0\) has a position range of zero"):
        ki.fit_to_limits(model, start)
    with pytest.raises(ValueError, match=r"optimize_excitation: joint 'joint1'"):
        ki.optimize_excitation(model, start, jnp.linspace(0, 2, 8), ki.base_parameters(model))
    # only joint 2 locked; then only joint 2's velocity limit zero (as strict_limits keeps a
    # URDF's velocity="0"; set with tree_at, past JointLimits' own check)
    lower = jnp.array([-1.0, 0.0])
    model = eqx.tree_at(lambda m: m.limits.lower, model, lower)
    with pytest.raises(ValueError, match=r"joint 'joint2' \(coordinate 1\) has a position range of zero width"):
        ki.fit_to_limits(model, start)
    model = eqx.tree_at(lambda m: (m.limits.upper, m.limits.velocity), model, (jnp.ones(2), jnp.array([2.0, 0.0])))
    with pytest.raises(ValueError, match=r"joint 'joint2' \(coordinate 1\) has a velocity limit of 0"):
        ki.fit_to_limits(model, start)
    # with real limits the same call goes through, within them (checked on the samples)
    fitted = ki.fit_to_limits(eqx.tree_at(lambda m: m.limits.velocity, model, jnp.array([2.0, 0.5])), start)
    q, qd, _ = fitted(jnp.linspace(0.0, 2.0, 1000, endpoint=False))
    assert np.all(np.abs(q) <= 1.0 + 1e-12) and np.all(np.abs(qd) <= np.array([2.0, 0.5]) + 1e-12)
