"""The CasADi peer of the trajectory-optimisation benchmark (bench/_casadi_dynamics.py) solves
kronjax's program: its inverse dynamics equals kronjax's and Pinocchio's (the model built by
tests/oracles.py, not by the benchmark's ``kj.to_urdf``) to 1e-12 relative, its cost and
constraints equal ``problem.objective`` and ``problem.constraints`` to 1e-12, and IPOPT on it
reaches the optimum of kronjax's interior-point method.
"""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

ca = pytest.importorskip("casadi")
pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from oracles import random_arm, relative_error, to_pinocchio  # noqa: E402

import kronjax as kj  # noqa: E402
from bench import _casadi_dynamics as cd  # noqa: E402
from bench.trajopt import panda_problem, ur5_problem  # noqa: E402
from kronjax import trajopt  # noqa: E402

pytestmark = pytest.mark.slow

MODELS = {
    "panda": kj.models.panda,
    "ur5": kj.models.ur5,
    # a prismatic joint, full inertias, offset centres of mass, rotor inertias: the paths the arms miss
    "random_arm": lambda: random_arm(2, armature=True),
}


@pytest.mark.parametrize("name", MODELS)
def test_inverse_dynamics_matches_kronjax_and_pinocchio(name):
    model = MODELS[name]()
    n = model.nv
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-3, 3, (20, n)), rng.normal(0, 2, (20, n)), rng.normal(0, 5, (20, n))
    function = cd.inverse_dynamics_function(model)
    ours = np.stack([np.asarray(function(*x)).ravel() for x in zip(q, qd, qdd)])
    kronjax_tau = np.asarray(jax.vmap(lambda *x: kj.inverse_dynamics(model, *x))(q, qd, qdd))
    pinocchio = to_pinocchio(model)
    data = pinocchio.createData()
    pinocchio_tau = np.stack([pin.rnea(pinocchio, data, *x).copy() for x in zip(q, qd, qdd)])
    errors = relative_error(ours, kronjax_tau), relative_error(ours, pinocchio_tau)
    print(f"\n{name}: CasADi inverse dynamics vs kronjax {errors[0]:.1e}, vs Pinocchio {errors[1]:.1e}")
    assert max(errors) <= 1e-12


def test_refuses_other_models():
    ball = kj.from_joints([kj.Joint("spherical"), kj.Joint("R", parent=0)], [kj.Inertial(1.0), kj.Inertial(1.0)])
    with pytest.raises(NotImplementedError, match="revolute"):
        cd.inverse_dynamics_function(ball)
    panda = kj.models.panda()
    from_poses = kj.from_function(lambda q: panda.poses(q), 7, check=False)
    with pytest.raises(TypeError, match="Tree"):
        cd.inverse_dynamics_function(from_poses)


@pytest.fixture(scope="module", params=["panda", "ur5"])
def problem(request):
    model, boundary = {"panda": panda_problem, "ur5": ur5_problem}[request.param]()
    return trajopt.transcribe(model, boundary, trajopt.TorqueEffort(), num_control_points=10)


def test_transcription_refuses_what_it_lacks():
    model, boundary = ur5_problem()
    with pytest.raises(NotImplementedError, match="torque effort"):
        cd.transcription(trajopt.transcribe(model, boundary, trajopt.Smoothness()))
    with pytest.raises(NotImplementedError, match="free time"):
        cd.transcription(trajopt.transcribe(model, boundary, trajopt.TorqueEffort(), free_time=trajopt.FreeTime(0.5, 2.0)))


def test_transcription_matches_kronjax(problem):
    z, f, g = cd.transcription(problem)
    program = ca.Function("program", [z], [f, g])
    zs = np.asarray(problem.initial_guess(jax.random.PRNGKey(3), 5, 0.2))
    cost, constraints = 0.0, 0.0
    for x in zs:
        f_value, g_value = program(x.ravel())
        cost = max(cost, relative_error(float(f_value), problem.objective(x)))
        constraints = max(constraints, relative_error(np.asarray(g_value).ravel(), problem.constraints(x)))
    print(f"\nCasADi vs kronjax at 5 random z: cost {cost:.1e}, constraints {constraints:.1e}")
    assert cost <= 1e-12 and constraints <= 1e-12


def test_ipopt_reaches_the_interior_point_optimum():
    """IPOPT with CasADi's exact Hessian and kronjax's interior-point method, from the same guess,
    agree on the UR5's optimal cost to 1e-6 and both satisfy the limits."""
    model, boundary = ur5_problem()
    result = trajopt.optimize(model, boundary, trajopt.TorqueEffort(), num_control_points=10)
    problem = result.problem
    z, f, g = cd.transcription(problem)
    solver = ca.nlpsol(
        "ipopt", "ipopt", {"x": z, "f": f, "g": g}, {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes"}
    )
    solution = solver(x0=np.asarray(problem.initial_guess()).ravel(), ubg=0.0)
    assert solver.stats()["success"]
    z_ipopt = np.asarray(solution["x"]).reshape(problem.shape)
    ours, theirs = float(result.report.cost[0]), float(problem.objective(z_ipopt))
    print(f"\nUR5: interior point {ours:.10g}, IPOPT {theirs:.10g}")
    assert result.report.converged[0] and float(problem.violation(z_ipopt)) <= 1e-6
    assert abs(ours - theirs) <= 1e-6 * abs(theirs)
