"""kronjax's legged trajectory optimisation against Crocoddyl's FDDP on the same trot of ANYmal B:
``python -m bench.legged_trajopt [--repeats 5] [--crocoddyl PYTHON] [--jump] [--humanoid]`` (also
``python -m bench.trajopt --legged``); ``--jump`` and ``--humanoid`` add kronjax's rows of ANYmal's
jump and of the Unitree G1 on flat feet, shifting its weight (:func:`weight_shift_problem`) and
taking a step (:func:`step_problem`).

The gait of Crocoddyl's shipped example (``bench/crocoddyl_gaits.py``: ``createTrottingProblem``
from standing, a first diagonal step of half the step length, 0.15 m): the same robot file, the
same contact sequence (2 nodes on four feet, 25 on LF and RH, 2 on four, 25 on RF and LH, of 10 ms;
kronjax's schedule ends with 2 more nodes on four feet, where Crocoddyl's ends on its last
impulse), friction 0.7, the base 0.15 m forward. kronjax's problem keeps the friction pyramids,
ANYmal's 80 N m effort limits and the feet on or above the ground as constraints; Crocoddyl's has
its cone as a cost and no torque limits. Each plan is then checked by the same simulation,
:func:`kronjax.trajopt.validate` (torques held between nodes, without feedback and with a PD
term).

Crocoddyl runs in its own environment (see ``bench/crocoddyl_gaits.py``): with ``--crocoddyl
PYTHON`` (that environment's interpreter), it is timed in the same run; otherwise its figures are
those recorded in ``bench/results/2026-11-30-vm-crocoddyl-trot.json``. Prints a Markdown table;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "tests" / "data" / "crocoddyl_anymal_trot.npz"
RECORDED = ROOT / "bench" / "results" / "2026-11-30-vm-crocoddyl-trot.json"


def trot_problem():
    """``(model, schedule, q0, cost)`` of the trot, from the robot file and contacts of Crocoddyl's
    plan (``tests/data/crocoddyl_anymal_trot.npz``)."""
    from kronjax import trajopt

    from .legged_plans import plan_from_file

    model, croc, plan = plan_from_file(PLAN)
    lf, rf, lh, rh = croc.names
    feet = croc.names
    phases = [(0.02, feet), (0.25, (rf, lh)), (0.02, feet), (0.25, (lf, rh)), (0.02, feet)]
    schedule = trajopt.ContactSchedule(croc.contacts, phases)
    return model, schedule, plan.q[0], trajopt.ContactCost(displacement=(0.15, 0.0, 0.0), clearance=0.1)


def jump_problem():
    """``(model, schedule, q0, cost)`` of a forward jump of ANYmal B: 0.15 s on four feet, 0.2 s in
    the air, 0.15 s on four feet, the base 0.2 m forward."""
    from kronjax import trajopt

    model, trot, q0, _ = trot_problem()
    feet = trot.names
    schedule = trajopt.ContactSchedule(trot.contacts, [(0.15, feet), (0.2, ()), (0.15, feet)])
    return model, schedule, q0, trajopt.ContactCost(displacement=(0.2, 0.0, 0.0), clearance=0.1)


def weight_shift_problem():
    """``(model, schedule, q0, cost)`` of the humanoid Unitree G1 (``example-robot-data``'s
    ``g1_29dof_rev_1_0.urdf``, nv = 35) shifting its weight 8 cm to the left over 0.6 s on its two
    flat feet: ``"6d"`` contacts whose soles (17 x 5 cm, friction 0.7) are the rectangles of the
    URDF's collision spheres under each ``*_ankle_roll_link``, from a stance with the knees bent
    0.6 rad. Every joint is given a rotor inertia of 0.01 kg m^2 (``model.armature``: the order of
    G1's motors reflected through their gears, which the URDF leaves out): without it the ankles'
    and wrists' inertias of 4e-4 kg m^2 make the mass matrix's condition number 1e5 and the
    planner did not converge in 100 iterations."""
    import equinox as eqx
    import jax.numpy as jnp

    import kronjax as kj
    from kronjax import trajopt

    from .legged import robot_file

    model = kj.load_urdf(robot_file("g1_description/urdf/g1_29dof_rev_1_0.urdf"), floating_base=True)
    rotors = jnp.concatenate([jnp.zeros(6), jnp.full(model.nv - 6, 0.01)])
    model = eqx.tree_at(lambda m: m.armature, model, rotors, is_leaf=lambda x: x is None)
    q0 = kj.neutral(model)
    for side in ("left", "right"):
        for joint, angle in (("hip_pitch", -0.3), ("knee", 0.6), ("ankle_pitch", -0.3)):
            q0 = q0.at[model.configuration_index(f"{side}_{joint}_joint")].set(angle)
    soles = [
        trajopt.Contact(
            side[0].upper(), f"{side}_ankle_roll_link", point=(0.035, 0.0, -0.035), friction=0.7, kind="6d", size=(0.17, 0.05)
        )
        for side in ("left", "right")
    ]
    schedule = trajopt.ContactSchedule(soles, [(0.3, ("L", "R")), (0.3, ("L", "R"))])
    return model, schedule, q0, trajopt.ContactCost(displacement=(0.0, 0.08, 0.0))


def step_problem():
    """``(model, schedule, q0, cost, solver)`` of the Unitree G1 of :func:`weight_shift_problem`
    taking a step with its left foot, the base 5 cm forward: 0.3 s on both feet, 0.4 s on the
    right one (the left sole arching 5 cm up), 0.3 s on both; nodes of 20 ms. Its solver starts
    the barrier at ``1e-3`` and allows 300 iterations: from the default ``1e-2`` it stalls (the
    KKT error near ``1e-2`` after 150 iterations)."""
    from kronjax import trajopt

    model, shift, q0, _ = weight_shift_problem()
    schedule = trajopt.ContactSchedule(shift.contacts, [(0.3, ("L", "R")), (0.4, ("R",)), (0.3, ("L", "R"))])
    cost = trajopt.ContactCost(displacement=(0.05, 0.0, 0.0), clearance=0.05)
    return model, schedule, q0, cost, trajopt.InteriorPoint(violation_tol=1e-6, max_iterations=300, barrier_init=1e-3)


def _crocoddyl(python: str | None, repeats: int) -> dict:
    if python is None:
        lines = [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip().startswith("{")]
        return dict(lines[0], source=f"recorded ({RECORDED.name})")
    script = ROOT / "bench" / "crocoddyl_gaits.py"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([python, str(script), "--repeats", str(repeats)], capture_output=True, text=True, check=True, env=env)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), source="measured in this run")


def _extra(problem, repeats: int, dt: float, solver=None):
    """``(result, first call, solve times, validations without and with a PD term)`` of one of
    kronjax's problems (``(model, schedule, q0, cost)``) planned at nodes ``dt`` apart, by
    ``solver`` (default: the planner's)."""
    from kronjax import trajopt

    model, schedule, q0, cost = problem
    start = time.perf_counter()
    result = trajopt.optimize_on_contacts(model, schedule, q0, cost, dt=dt, solver=solver)
    first_call = time.perf_counter() - start
    times = [
        trajopt.optimize_on_contacts(model, schedule, q0, cost, dt=dt, solver=solver).report.wall_time for _ in range(repeats)
    ]
    checks = [trajopt.validate(model, schedule, result.plan, kp=kp, kd=kd, hold=True) for kp, kd in ((0.0, 0.0), (50.0, 2.0))]
    return result, first_call, times, checks


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.legged_trajopt", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5, help="timed second calls (medians and ranges)")
    parser.add_argument("--crocoddyl", metavar="PYTHON", help="the interpreter of Crocoddyl's environment")
    parser.add_argument("--jump", action="store_true", help="also plan the jump of jump_problem (kronjax only)")
    parser.add_argument("--humanoid", action="store_true", help="also plan weight_shift_problem's humanoid (kronjax only)")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    from kronjax import trajopt

    from .legged_plans import plan_from_file

    model, schedule, q0, cost = trot_problem()
    start = time.perf_counter()
    first = trajopt.optimize_on_contacts(model, schedule, q0, cost)
    first_call = time.perf_counter() - start
    times = []
    for _ in range(args.repeats):
        result = trajopt.optimize_on_contacts(model, schedule, q0, cost)
        times.append(result.report.wall_time)
    report = result.report
    plans = {"kronjax": (schedule, result.plan), "Crocoddyl": plan_from_file(PLAN)[1:]}
    checks = {}
    for name, (plan_schedule, plan) in plans.items():
        checks[name] = [
            trajopt.validate(model, plan_schedule, plan, kp=kp, kd=kd, hold=True) for kp, kd in ((0.0, 0.0), (50.0, 2.0))
        ]
    extras = {}
    if args.jump:
        extras["jump (0.2 m forward, 0.2 s in the air)"] = (
            _extra(jump_problem(), args.repeats, dt=0.01),
            "pyramids, constraints | 80 N m, constraints",
        )
    if args.humanoid:
        extras["Unitree G1 (nv 35, flat feet) shifting its weight 8 cm"] = (
            _extra(weight_shift_problem(), args.repeats, dt=0.02),
            "wrench cones, constraints | the URDF's, constraints",
        )
        *step, solver = step_problem()
        extras["Unitree G1 stepping 5 cm forward (barrier from 1e-3)"] = (
            _extra(tuple(step), args.repeats, dt=0.02, solver=solver),
            "wrench cones, constraints | the URDF's, constraints",
        )
    for name, ((_, _, _, validations), _) in extras.items():
        checks[f"kronjax, {name.split(' (')[0]}"] = validations
    croc = _crocoddyl(args.crocoddyl, args.repeats)
    print(f"ANYmal B trot, 0.15 m, 56 nodes of 10 ms, on {sys.platform}; python -m bench.legged_trajopt")
    print("| planner | solve (median, range) | first call (compile) | iterations | violation | cones | torque limits |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| kronjax optimize_on_contacts (interior point, Riccati step) | {np.median(times):.3f} s ({min(times):.3f}-{max(times):.3f}) "
        f"| {first_call:.1f} s ({first.report.compile_time:.1f} s) | {report.iterations} | {report.violation:.1e} "
        "| pyramids, constraints | 80 N m, constraints |"
    )
    print(
        f"| Crocoddyl 3.2.1 FDDP, 1 thread ({croc['source']}) | {croc['t_solve_median_s']:.3f} s "
        f"({croc['t_solve_min_s']:.3f}-{croc['t_solve_max_s']:.3f}) | - | {croc['iterations']} | {croc['max_dynamics_gap_inf']:.1e} "
        "| cost | none |"
    )
    for name, ((result, first_call, times, _), limits) in extras.items():
        print(
            f"| kronjax, {name} | {np.median(times):.3f} s ({min(times):.3f}-{max(times):.3f}) | {first_call:.1f} s "
            f"({result.report.compile_time:.1f} s) | {result.report.iterations} ({result.report.status}) "
            f"| {result.report.violation:.1e} | {limits} |"
        )
    print()
    print(
        "| plan | feedback | base drift (m) | joint error (rad) | cone margin (N) | min normal (N) | plan cone margin (N) | plan foot slide (m) | plan EoM residual |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, validations in checks.items():
        for label, v in zip(("none", "PD 50, 2"), validations):
            print(
                f"| {name} | {label} | {v.base_drift:.4f} | {v.joint_error:.4f} | {v.cone_margin:.3g} | {v.normal_force:.3g} "
                f"| {v.plan_cone_margin:.3g} | {v.plan_stance_violation:.2e} | {v.plan_dynamics_residual:.1e} |"
            )
    return dict(kronjax=dict(solve=times, first_call=first_call, report=report._asdict()), crocoddyl=croc)


if __name__ == "__main__":
    main()
