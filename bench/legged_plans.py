"""Plans of legged robots checked by kronjax's simulation: ``python -m bench.legged_plans PLAN.npz``.

A plan file comes from another planner (``bench/crocoddyl_gaits.py --plan``: Crocoddyl's FDDP on
the gaits of its shipped example, in Crocoddyl's own environment). This loads the same robot file
in kronjax, maps the plan's coordinates by joint name, places each foot as a point on the body its
fixed link is merged into, and runs :func:`kronjax.trajopt.validate` along the plan's contact
phases, the torques held between the plan's nodes as Crocoddyl applies them: without feedback (the
plan's torques alone) and with a PD term. It prints a Markdown table
of the figures: how far the simulated motion strays, the contact forces' friction-cone margins,
and the plan's own residuals in kronjax's dynamics (its equations of motion with its
accelerations and forces, and how far its feet slide while in contact).
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .legged import robot_file


def foot_contacts(path, feet, friction: float):
    """``(model, contacts)``: the floating-base model of the URDF at ``path`` (fixed links merged)
    and a point :class:`~kronjax.trajopt.Contact` per foot link, on the moving body the link is
    merged into (its offset from ``load_urdf(..., merge_fixed=False)``'s frames at the neutral
    configuration)."""
    import kronjax as kj
    from kronjax import trajopt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kj.urdf.URDFWarning)
        model = kj.load_urdf(path, floating_base=True)
        frames = kj.load_urdf(path, floating_base=True, merge_fixed=False)
    rotations, origins = frames.poses(kj.neutral(frames))
    parents, kinds = frames.kinematics.parents, frames.kinematics.kinds
    contacts = []
    for foot in feet:
        body = frames.body_index(foot)
        moving = body
        while kinds[moving] == "F":
            moving = parents[moving]
        point = rotations[moving].T @ (origins[body] - origins[moving])
        contacts.append(trajopt.Contact(foot, frames.body_names[moving], point=point, friction=friction))
    return model, contacts


def plan_from_file(path):
    """``(model, schedule, plan)`` of a plan file of ``bench/crocoddyl_gaits.py``: its coordinates
    in kronjax's order, its torques on the actuated coordinates, the schedule ending at its last
    sample."""
    from kronjax import trajopt

    data = np.load(path)
    feet = [str(foot) for foot in data["feet"]]
    model, contacts = foot_contacts(robot_file(str(data["urdf"])), feet, float(data["friction"]))
    names = ["root_joint"] + [str(name) for name in data["joint_names"]]
    if data["q"].shape[1] != 7 + len(names) - 1 or data["v"].shape[1] != 6 + len(names) - 1:
        raise ValueError("plan_from_file reads a free-flyer and one-coordinate joints only (q: 7 + n, v: 6 + n)")
    q_index = {name: k for name, k in zip(names, [0] + list(range(7, 7 + len(names) - 1)))}
    q_order, v_order = [], []
    for name in model.joint_names:
        width = 7 if name == "root_joint" else 1
        q_order += list(range(q_index[name], q_index[name] + width))
        start = 0 if name == "root_joint" else 6 + names.index(name) - 1
        v_order += list(range(start, start + (6 if name == "root_joint" else 1)))
    tau = np.concatenate([np.zeros((data["tau"].shape[0], 6)), data["tau"]], axis=1)
    durations = np.array(data["phase_durations"], dtype=float)
    durations[-1] -= data["ts"][-1] - data["ts"][-2]  # the last node's interval has no sample at its end
    phases = [(d, tuple(f for f, on in zip(feet, active) if on)) for d, active in zip(durations, data["phase_active"])]
    schedule = trajopt.ContactSchedule(contacts, phases)
    plan = trajopt.Plan(
        data["ts"], data["q"][:, q_order], data["v"][:, v_order], tau[:, v_order], data["forces"], data["vd"][:, v_order]
    )
    return model, schedule, plan


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.legged_plans", description=__doc__)
    parser.add_argument("plans", nargs="+", help="plan files (.npz) of bench/crocoddyl_gaits.py --plan")
    parser.add_argument("--kp", type=float, default=200.0, help="the PD term's stiffness (N m / rad)")
    parser.add_argument("--kd", type=float, default=5.0, help="the PD term's damping (N m s / rad)")
    parser.add_argument("--dt", type=float, default=1e-3, help="the simulation's step (s)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    from kronjax import trajopt

    columns = ("plan", "feedback", "base drift (m)", "joint error (rad)", "cone margin (N)", "min normal (N)")
    columns += ("touchdown speed (m/s)", "plan cone margin (N)", "plan foot slide (m)", "plan EoM residual", "time (s)")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for path in args.plans:
        model, schedule, plan = plan_from_file(path)
        for kp, kd in ((0.0, 0.0), (args.kp, args.kd)):
            start = time.perf_counter()
            result = trajopt.validate(model, schedule, plan, kp=jnp.asarray(kp), kd=jnp.asarray(kd), dt=args.dt, hold=True)
            seconds = time.perf_counter() - start
            figures = (result.base_drift, result.joint_error, result.cone_margin, result.normal_force)
            figures += (result.touchdown_speed, result.plan_cone_margin, result.plan_stance_violation)
            figures += (result.plan_dynamics_residual, seconds)
            feedback = "none" if kp == 0 else f"PD {kp:g}, {kd:g}"
            print(f"| {path} | {feedback} | " + " | ".join(f"{x:.3g}" for x in figures) + " |")


if __name__ == "__main__":
    main()
