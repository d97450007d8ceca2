"""What one iteration of a legged trajectory optimiser would cost per node, measured on the plan of
Crocoddyl's ANYmal trot (``tests/data/crocoddyl_anymal_trot.npz``, 54 nodes of 10 ms):
``python -m bench.contact_derivatives``.

Per node, the contact forward dynamics of the active feet (Crocoddyl's contacts: acceleration
level, Baumgarte's velocity gain 50; kronjax's ``trajopt._contact_dynamics``) and its derivatives
in ``(dq, dv, du)`` (``u`` the joint torques) by the KKT route: the analytic derivatives of the
inverse dynamics and the contacts' Jacobians, ``[[M, -A^T], [A, 0]]`` solved once for the 48
columns (Carpentier and Mansard, RSS 2018; Pinocchio's ``computeConstraintDynamicsDerivatives``),
checked against ``jax.jacfwd`` on one node. ``jax.jacfwd`` over all the nodes under ``vmap`` did not
compile in 8 minutes (2026-11-30): the measurement behind the design of issue 38's transcription.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .legged_plans import plan_from_file

PLAN = Path(__file__).resolve().parents[1] / "tests" / "data" / "crocoddyl_anymal_trot.npz"
BAUMGARTE = 50.0  # Crocoddyl's ContactModel3D gains (0, 50) in its quadruped builder


def _functions(model, schedule):
    """``(dynamics, derivatives)`` of one node: ``(q, v, u, active) -> (vd, forces)`` and ``->
    d vd / d(dq, dv, du)`` (``(nv, 2 nv + nu)``), kronjax's (``trajopt._contact_dynamics``)."""
    from kronjax.trajopt._contact_dynamics import damped_contact_dynamics, damped_contact_dynamics_derivatives, row_mask

    bodies = schedule.bodies(model)
    n = model.nv
    select = jnp.zeros((n, n - 6)).at[6:].set(jnp.eye(n - 6))

    def dynamics(q, v, u, active):
        return damped_contact_dynamics(model, schedule, bodies, q, v, select @ u, row_mask(schedule, active), BAUMGARTE)

    def derivatives(q, v, u, active):
        rows = row_mask(schedule, active)
        return damped_contact_dynamics_derivatives(model, schedule, bodies, q, v, select @ u, rows, BAUMGARTE, select).d_vd

    return dynamics, derivatives


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.contact_derivatives", description=__doc__)
    parser.add_argument("--plan", default=str(PLAN), help="a plan file of bench/crocoddyl_gaits.py --plan")
    parser.add_argument("--calls", type=int, default=50, help="timed calls of each compiled function")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    import kronjax as kj

    model, schedule, plan = plan_from_file(args.plan)
    dynamics, derivatives = _functions(model, schedule)
    active = jax.vmap(schedule.active_at)(plan.ts)
    states = (plan.q, plan.v, plan.tau[:, 6:], active)
    node = tuple(x[len(plan.ts) // 2] for x in states)
    n = model.nv

    def flat(d):
        q, v, u, on = node
        return dynamics(kj.integrate(model, q, d[:n]), v + d[n : 2 * n], u + d[2 * n :], on)[0]

    autodiff = jax.jit(jax.jacfwd(flat))(jnp.zeros(3 * n - 6))
    kkt = jax.jit(derivatives)(*node)
    error = float(jnp.max(jnp.abs(kkt - autodiff)) / jnp.max(jnp.abs(autodiff)))
    print(f"KKT route against jax.jacfwd on one node: largest error {error:.1e} (relative to the largest entry)")
    print(f"| {len(plan.ts)} nodes, jit(vmap) | time (median, range) | compile |")
    print("|---|---:|---:|")
    for name, fn in (("contact forward dynamics", dynamics), ("its derivatives, KKT route", derivatives)):
        start = time.perf_counter()
        compiled = jax.jit(jax.vmap(fn)).lower(*states).compile()
        seconds = time.perf_counter() - start
        jax.block_until_ready(compiled(*states))
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*states))
            times.append(1e3 * (time.perf_counter() - start))
        print(f"| {name} | {np.median(times):.2f} ms ({min(times):.2f}-{max(times):.2f}) | {seconds:.1f} s |")


if __name__ == "__main__":
    main()
