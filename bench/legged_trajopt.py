"""kronjax's legged trajectory optimisation against Crocoddyl's FDDP on the same trot of ANYmal B:
``python -m bench.legged_trajopt [--repeats 5] [--crocoddyl PYTHON]`` (also ``python -m
bench.trajopt --legged``).

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


def _crocoddyl(python: str | None, repeats: int) -> dict:
    if python is None:
        lines = [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip().startswith("{")]
        return dict(lines[0], source=f"recorded ({RECORDED.name})")
    script = ROOT / "bench" / "crocoddyl_gaits.py"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([python, str(script), "--repeats", str(repeats)], capture_output=True, text=True, check=True, env=env)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), source="measured in this run")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.legged_trajopt", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5, help="timed second calls (medians and ranges)")
    parser.add_argument("--crocoddyl", metavar="PYTHON", help="the interpreter of Crocoddyl's environment")
    parser.add_argument("--jump", action="store_true", help="also plan the jump of jump_problem (kronjax only)")
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
    if args.jump:
        jump_model, jump_schedule, jump_q0, jump_cost = jump_problem()
        start = time.perf_counter()
        jump = trajopt.optimize_on_contacts(jump_model, jump_schedule, jump_q0, jump_cost)
        jump_first = time.perf_counter() - start
        jump_times = [
            trajopt.optimize_on_contacts(jump_model, jump_schedule, jump_q0, jump_cost).report.wall_time
            for _ in range(args.repeats)
        ]
        checks["kronjax, jump"] = [
            trajopt.validate(jump_model, jump_schedule, jump.plan, kp=kp, kd=kd, hold=True)
            for kp, kd in ((0.0, 0.0), (50.0, 2.0))
        ]
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
    if args.jump:
        rise = float(jump.plan.q[:, 2].max() - jump.plan.q[0, 2])
        print(
            f"| kronjax, the jump (0.2 m forward, 0.2 s in the air, base {rise * 100:.1f} cm up) | {np.median(jump_times):.3f} s "
            f"({min(jump_times):.3f}-{max(jump_times):.3f}) | {jump_first:.1f} s ({jump.report.compile_time:.1f} s) "
            f"| {jump.report.iterations} | {jump.report.violation:.1e} | pyramids, constraints | 80 N m, constraints |"
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
