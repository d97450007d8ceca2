"""Crocoddyl's FDDP on the quadruped gaits of its shipped example
``examples/quadrupedal_gaits_fwddyn.py`` (crocoddyl 3.2.1): the peer of kronjax's legged
trajectory optimisation, and the plans that ``python -m bench.legged_plans`` validates with
kronjax's simulation.

Crocoddyl runs in an environment of its own: ``pip install crocoddyl`` pairs crocoddyl 3.2.1 with
pin 4.1.0, whose ``Model`` layout differs from the 4.0.0 it was built against (its libraries carry
no version in their names, so nothing refuses the mix): the shipped examples crash. The working
pair, on Python 3.11::

    python -m venv .venv-crocoddyl && .venv-crocoddyl/bin/pip install crocoddyl==3.2.1 pin==4.0.0
    OMP_NUM_THREADS=1 .venv-crocoddyl/bin/python bench/crocoddyl_gaits.py --plan /tmp/trot.npz
    OMP_NUM_THREADS=1 .venv-crocoddyl/bin/python bench/crocoddyl_gaits.py --robot solo12 --gait jumping

Prints one JSON line per invocation; with ``--plan``, also writes the solution (states, torques,
accelerations, contact forces in the world frame, the contact phases) for
``python -m bench.legged_plans``.

Gait parameters are quoted from the shipped example's GAITPHASES:
  trotting: stepLength=0.15, stepHeight=0.1, timeStep=1e-2, stepKnots=25, supportKnots=2
  jumping : jumpHeight=0.15, jumpLength=[0.0, 0.3, 0.0], timeStep=1e-2,
            groundKnots=10, flyingKnots=20
Solve call as in the example: xs=[x0]*(T+1), us=problem.quasiStatic([x0]*T),
solver.solve(xs, us, 100, False).

--context standalone (default): fresh SimpleQuadrupedalGaitProblem, x0 = the
  "standing" reference configuration with zero velocity.  NOTE: a fresh builder
  has firstStep=True, so the first trot diagonal step is 0.5*stepLength.
--context example: reproduce the example's sequence exactly: the walking phase
  (0.25, 0.15, 1e-2, 25, 2) is solved first from standing, and the trot starts
  from walking's xs[-1] with the same builder (firstStep=False -> full steps).
  Only the trot solve is timed.  (For jumping, the example solves walking,
  trotting, pacing and bounding first; we do the same.)
"""

import argparse
import copy
import json
import statistics
import time

import crocoddyl
import example_robot_data
import numpy as np
import pinocchio
from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem

FEET = {
    "anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
    "anymal_c": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
    "solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
}
# the robots' files below example-robot-data's robots/ (kronjax loads the same one)
URDF = {
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
}
# verbatim from examples/quadrupedal_gaits_fwddyn.py (crocoddyl 3.2.1)
GAITPHASES = [
    {"walking": dict(stepLength=0.25, stepHeight=0.15, timeStep=1e-2, stepKnots=25, supportKnots=2)},
    {"trotting": dict(stepLength=0.15, stepHeight=0.1, timeStep=1e-2, stepKnots=25, supportKnots=2)},
    {"pacing": dict(stepLength=0.15, stepHeight=0.1, timeStep=1e-2, stepKnots=25, supportKnots=5)},
    {"bounding": dict(stepLength=0.15, stepHeight=0.1, timeStep=1e-2, stepKnots=25, supportKnots=5)},
    {"jumping": dict(jumpHeight=0.15, jumpLength=[0.0, 0.3, 0.0], timeStep=1e-2, groundKnots=10, flyingKnots=20)},
]
PARAMS = {k: v for ph in GAITPHASES for k, v in ph.items()}
MAXITER = 100


def build(gait, key, x0):
    # deepcopy: createJumpingProblem mutates the jumpLength list in place (f0[2] = df)
    p = copy.deepcopy(PARAMS[key])
    if key == "walking":
        return gait.createWalkingProblem(x0, p["stepLength"], p["stepHeight"], p["timeStep"], p["stepKnots"], p["supportKnots"])
    if key == "trotting":
        return gait.createTrottingProblem(x0, p["stepLength"], p["stepHeight"], p["timeStep"], p["stepKnots"], p["supportKnots"])
    if key == "pacing":
        return gait.createPacingProblem(x0, p["stepLength"], p["stepHeight"], p["timeStep"], p["stepKnots"], p["supportKnots"])
    if key == "bounding":
        return gait.createBoundingProblem(x0, p["stepLength"], p["stepHeight"], p["timeStep"], p["stepKnots"], p["supportKnots"])
    if key == "jumping":
        return gait.createJumpingProblem(x0, p["jumpHeight"], p["jumpLength"], p["timeStep"], p["groundKnots"], p["flyingKnots"])
    raise ValueError(key)


def make_problem(model, feet, x_stand, key, context, nthreads):
    """Returns (problem, x0 used for this gait). Problem construction is not timed."""
    gait = SimpleQuadrupedalGaitProblem(model, *feet)
    x0 = x_stand.copy()
    if context == "example":
        order = [next(iter(ph)) for ph in GAITPHASES]
        for prev in order[: order.index(key)]:
            pb = build(gait, prev, x0)
            if nthreads is not None:
                pb.nthreads = nthreads
            s = crocoddyl.SolverFDDP(pb)
            s.solve([x0] * (pb.T + 1), pb.quasiStatic([x0] * pb.T), MAXITER, False)
            x0 = s.xs[-1].copy()
    pb = build(gait, key, x0)
    if nthreads is not None:
        pb.nthreads = nthreads
    return pb, x0, gait


def solve_once(problem, x0):
    solver = crocoddyl.SolverFDDP(problem)
    xs = [x0] * (problem.T + 1)
    us = problem.quasiStatic([x0] * problem.T)
    t0 = time.perf_counter()
    converged = solver.solve(xs, us, MAXITER, False)
    dt = time.perf_counter() - t0
    return solver, bool(converged), dt


def max_gap(problem, xs, us):
    """Largest dynamics defect max_k ||f(x_k,u_k) (-) x_{k+1}||_inf, plus initial-state gap."""
    problem.calc(list(xs), list(us))
    g = 0.0
    for k, (m, d) in enumerate(zip(problem.runningModels, problem.runningDatas)):
        g = max(g, float(np.max(np.abs(m.state.diff(xs[k + 1], d.xnext)))))
    g0 = float(np.max(np.abs(problem.runningModels[0].state.diff(xs[0], problem.x0))))
    return g, g0


def write_plan(path, robot, model, feet, problem, solver, mu):
    """The solution at its running nodes of positive duration (an impulse node's post-impact state
    is the next node's): times, states, torques, accelerations and the feet's forces in the world
    frame (0 where a foot is not in contact), and the phases (runs of nodes with one contact set)."""
    problem.calc(list(solver.xs), list(solver.us))
    nodes = [k for k, m in enumerate(problem.runningModels) if m.nu > 0]
    ts, active, forces, vd = [], [], [], []
    t = 0.0
    for k, m in enumerate(problem.runningModels):
        if k in nodes:
            d = problem.runningDatas[k].differential
            held = m.differential.contacts.active_set
            ts.append(t)
            active.append([f"{foot}_contact" in held for foot in feet])
            vd.append(np.array(d.xout))
            rows = []
            for foot in feet:
                name = f"{foot}_contact"
                if name in held:
                    # the force in the foot's frame, turned to the world's axes (Jc^T of LOCAL_WORLD_ALIGNED
                    # Jacobians multiplies it in the equations of motion, to 1e-13)
                    contact = d.multibody.contacts.contacts[name]
                    rows.append(d.pinocchio.oMf[contact.frame].rotation @ contact.f_local.linear)
                else:
                    rows.append(np.zeros(3))
            forces.append(np.concatenate(rows))
        t += getattr(m, "dt", 0.0)
    xs = np.array([solver.xs[k] for k in nodes])
    us = np.array([solver.us[k] for k in nodes])
    durations, phases = [], []
    for k, held in enumerate(active):
        dt = problem.runningModels[nodes[k]].dt
        if phases and phases[-1] == held:
            durations[-1] += dt
        else:
            phases.append(held)
            durations.append(dt)
    np.savez(
        path,
        urdf=URDF[robot],
        joint_names=np.array([model.names[j] for j in range(2, model.njoints)]),
        feet=np.array(feet),
        friction=mu,
        ts=np.array(ts),
        q=xs[:, : model.nq],
        v=xs[:, model.nq :],
        tau=us,
        vd=np.array(vd),
        forces=np.array(forces),
        phase_durations=np.array(durations),
        phase_active=np.array(phases),
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="anymal", choices=list(FEET))
    ap.add_argument("--gait", default="trotting", choices=list(PARAMS))
    ap.add_argument("--context", default="standalone", choices=["standalone", "example"])
    ap.add_argument(
        "--nthreads",
        type=int,
        default=1,
        help="ShootingProblem.nthreads (crocoddyl's OpenMP pragma uses this, not OMP_NUM_THREADS); 0 = leave crocoddyl default",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--plan", help="write the solution here (.npz) for python -m bench.legged_plans")
    a = ap.parse_args()
    nthreads = None if a.nthreads == 0 else a.nthreads

    robot = example_robot_data.load(a.robot)
    model = robot.model
    q0 = model.referenceConfigurations["standing"].copy()
    x_stand = np.concatenate([q0, np.zeros(model.nv)])
    feet = FEET[a.robot]

    # first call (fresh process)
    problem, x0, gait = make_problem(model, feet, x_stand, a.gait, a.context, nthreads)
    solver, converged, t_first = solve_once(problem, x0)
    xs, us = [x.copy() for x in solver.xs], [u.copy() for u in solver.us]
    gap, gap0 = max_gap(problem, xs, us)
    umax = float(max(np.max(np.abs(u)) for u in us if u.size))
    n_impulse = sum(1 for m in problem.runningModels if m.nu == 0)
    rm = problem.runningModels[0]
    u_lim = float(np.max(np.abs(rm.u_ub))) if rm.has_control_limits else None
    dts = [getattr(m, "dt", 0.0) for m in problem.runningModels]

    # repeats: fresh builder + problem + solver each time; only solver.solve is timed
    times, iters_rep, cost_rep = [], [], []
    for _ in range(a.repeats):
        pb, x0r, _ = make_problem(model, feet, x_stand, a.gait, a.context, nthreads)
        s, c, dt = solve_once(pb, x0r)
        times.append(dt)
        iters_rep.append(int(s.iter))
        cost_rep.append(float(s.cost))

    out = {
        "versions": {"crocoddyl": crocoddyl.__version__, "pinocchio": pinocchio.__version__, "numpy": np.__version__},
        "robot": a.robot,
        "robot_nq_nv_nu": [model.nq, model.nv, rm.nu],
        "robot_mass_kg": round(float(pinocchio.computeTotalMass(model)), 4),
        "gait": a.gait,
        "context": a.context,
        "gait_params": PARAMS[a.gait],
        "first_step_half_length": bool(a.gait == "trotting" and a.context == "standalone"),
        "T_nodes_running": problem.T,
        "n_knots_total": problem.T + 1,
        "n_impulse_nodes_nu0": n_impulse,
        "horizon_s": round(float(sum(dts)), 6),
        "x0_base_z": float(x0[2]),
        "friction_mu": gait.mu,
        "friction_cone": "4-facet linearized, inner_appr=False, as quadratic-barrier COST (weight 10), not a constraint",
        "torque_limits_imposed": False,
        "torque_limits_note": f"FDDP ignores control bounds; models carry u_lb/u_ub=+-{u_lim} from URDF effort limits (used only by BoxFDDP)",
        "max_abs_u": round(umax, 4),
        "contact_baumgarte_gains": [0.0, 50.0],
        "integrator": "euler, zero-order-hold control",
        "solver": "SolverFDDP",
        "maxiter": MAXITER,
        "init": "xs=[x0]*(T+1), us=problem.quasiStatic([x0]*T), isFeasible=False",
        "iterations": int(solver.iter),
        "final_cost": float(solver.cost),
        "converged": converged,
        "stop": float(solver.stop),
        "th_stop": float(solver.th_stop),
        "solver_ffeas": float(solver.ffeas),
        "max_dynamics_gap_inf": gap,
        "initial_state_gap_inf": gap0,
        "nthreads": problem.nthreads,
        "t_solve_first_s": round(t_first, 6),
        "t_solve_repeats_s": [round(t, 6) for t in times],
        "t_solve_median_s": round(statistics.median(times), 6),
        "t_solve_min_s": round(min(times), 6),
        "t_solve_max_s": round(max(times), 6),
        "t_per_iter_median_ms": round(1e3 * statistics.median(times) / max(1, int(solver.iter)), 4),
        "repeat_iters": iters_rep,
        "repeat_costs_equal_first": all(abs(c - float(solver.cost)) <= 1e-9 * max(1.0, abs(c)) for c in cost_rep),
    }
    print(json.dumps(out))
    if a.plan:
        write_plan(a.plan, a.robot, model, feet, problem, solver, gait.mu)


if __name__ == "__main__":
    main()
