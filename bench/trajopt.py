"""Trajectory optimisation of the Panda (docs/benchmarks/trajopt.md and measurements.md give the
setting and the results):

    python -m bench.trajopt [--guesses 64] [--iterations 50] [--ip-guesses 8] [--no-peers]
    python -m bench.trajopt --first-calls N  # first calls, compilation included, fresh processes
    python -m bench.trajopt --legged [--crocoddyl PYTHON]  # ANYmal's trot against Crocoddyl (bench/legged_trajopt.py)

Without options: 64 initial guesses at once (``jax.vmap``), the time per L-BFGS iteration of the
augmented Lagrangian, per evaluation of the cost and its gradient, and of a solve by the
interior-point method (8 guesses), with the inverse dynamics in the cost by ``method="rnea"`` and
``"kron"``; the problem is the notebook's (rest to rest in 1 s, torque effort, Franka's limits
with the torques derated to 50 %, 10 control points per joint). With the peers (the default where
CasADi and Pinocchio are installed), one guess (the minimum-jerk fit) on the Panda and a UR5,
solved by kronjax's interior point (Gauss-Newton and exact Hessians), scipy's SLSQP on kronjax's
transcription and IPOPT on the same program written in CasADi (bench/_casadi_dynamics.py, checked
first to 1e-12), then re-planned with warm starts; a result counts as a solution within
``VIOLATION_TOL`` and ``COST_RTOL`` of the best cost, every one judged by kronjax's ``objective``
and ``violation``. Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import platform
import statistics
import time
import warnings

import numpy as np

from .models import relative_error as _relative

UR5_GOAL = (1.5, -1.0, 1.2, 0.5, -0.8, 1.0)
VIOLATION_TOL, COST_RTOL = 1e-6, 1e-4  # what counts as a solution in the peers' table
CHECK_RTOL = 1e-12  # the CasADi program against kronjax and Pinocchio


def panda_problem():
    """The notebook's Panda motion: ``(model, boundary)``, torques derated to 50 %."""
    import equinox as eqx
    import jax.numpy as jnp

    import kronjax as kj
    from kronjax import trajopt

    panda = kj.models.panda()
    model = eqx.tree_at(lambda m: m.limits, panda, eqx.tree_at(lambda l: l.effort, panda.limits, 0.5 * panda.limits.effort))
    q_start = jnp.array([0.0, -jnp.pi / 4, 0.0, -3 * jnp.pi / 4, 0.0, jnp.pi / 2, jnp.pi / 4])
    q_goal = jnp.array([1.6, 0.4, -0.5, -1.2, 0.8, 2.4, -0.3])
    return model, trajopt.BoundaryConditions(q_start, q_goal, 1.0)


def ur5_problem():
    """The UR5 from rest at zero to rest at ``UR5_GOAL`` in 1.1 s, the model's limits."""
    import jax.numpy as jnp

    import kronjax as kj
    from kronjax import trajopt

    return kj.models.ur5(), trajopt.BoundaryConditions(jnp.zeros(6), jnp.array(UR5_GOAL), 1.1)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python -m bench.trajopt", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--guesses", type=int, default=64, help="initial guesses solved at once (vmap)")
    parser.add_argument("--iterations", type=int, default=50, help="L-BFGS iterations timed")
    parser.add_argument("--ip-guesses", type=int, default=8, help="guesses the interior-point method solves")
    parser.add_argument("--methods", nargs="+", default=["rnea", "kron"], choices=["rnea", "kron", "euler_lagrange"])
    parser.add_argument(
        "--peers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also solve the Panda and UR5 problems by SLSQP and IPOPT (default: when casadi and pinocchio are installed)",
    )
    parser.add_argument(
        "--first-calls",
        type=int,
        metavar="N",
        help="only time the first call (compilation included) of kronjax's InteriorPoint and of SLSQP on the Panda and "
        "UR5 problems, each in a fresh process, N rounds",
    )
    parser.add_argument("--one-first-call", nargs=2, metavar=("PROBLEM", "SOLVER"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--legged",
        action="store_true",
        help="only the legged problem: ANYmal's trot by kronjax's optimize_on_contacts and Crocoddyl's FDDP (python -m bench.legged_trajopt)",
    )
    args, rest = parser.parse_known_args(argv)
    if args.legged:
        from .legged_trajopt import main as legged

        return legged(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.one_first_call:
        return one_first_call(*args.one_first_call)
    if args.first_calls:
        return first_calls(args.first_calls)
    installed = all(importlib.util.find_spec(module) for module in ("casadi", "pinocchio"))
    if args.peers and not installed:
        parser.error("--peers needs CasADi (IPOPT) and Pinocchio (the check): pip install casadi pin, or pip install -e .[bench]")
    peers = installed if args.peers is None else args.peers

    import jax

    jax.config.update("jax_enable_x64", True)

    from kronjax import trajopt

    from ._timing import best_time

    model, boundary = panda_problem()
    print(
        f"trajectory optimisation of the Panda, {args.guesses} guesses at once, on {platform.node()} "
        f"({platform.processor() or platform.machine()}), jax {jax.__version__}, {jax.devices()[0].platform}"
    )
    print(f"  {'method':<10} {'samples':>7} {'eval+grad':>12} {'iteration':>12} {'compile':>9} {'cost (best)':>12}")
    results = {}
    for method in args.methods:
        problem = trajopt.transcribe(model, boundary, trajopt.TorqueEffort(), num_control_points=10, method=method)
        guesses = problem.initial_guess(jax.random.PRNGKey(0), args.guesses, 0.2)

        # one evaluation of the (normalised) cost and its gradient, for every guess
        value_and_grad = jax.jit(jax.vmap(jax.value_and_grad(problem.objective)))
        start = time.perf_counter()
        jax.block_until_ready(value_and_grad(guesses))
        compile_eval = time.perf_counter() - start
        per_eval = best_time(lambda: jax.block_until_ready(value_and_grad(guesses)))

        # L-BFGS iterations of the augmented Lagrangian: one outer iteration of `iterations` steps
        # (gtol = 0: no early stop); the first call compiles, the second is timed
        def run():
            solver = trajopt.AugmentedLagrangian(max_inner_iterations=args.iterations, max_outer_iterations=1, gtol=0.0)
            with warnings.catch_warnings():  # a fixed number of iterations, not a solve: "not converged" is expected
                warnings.simplefilter("ignore", trajopt.NotConvergedWarning)
                return trajopt.optimize(
                    model, boundary, trajopt.TorqueEffort(), num_control_points=10, method=method, init=guesses, solver=solver
                )

        first = run()
        second = run()
        iterations = int(first.report.iterations.max())
        per_iteration = second.report.wall_time / max(int(second.report.iterations.max()), 1)
        compile_s = first.report.compile_time
        # the interior-point method (the default solver) to convergence, on the first
        # `ip_guesses` guesses: a Newton step costs a Hessian per guess
        ip_guesses = guesses[: args.ip_guesses]
        solve = lambda: trajopt.optimize(
            model,
            boundary,
            trajopt.TorqueEffort(),
            num_control_points=10,  # noqa: E731
            method=method,
            init=ip_guesses,
        )
        ip_first = solve()
        ip_times = [solve().report.wall_time for _ in range(3)]
        ip_iterations = int(ip_first.report.iterations.max())
        results[method] = dict(
            per_eval=per_eval,
            per_iteration=per_iteration,
            compile=compile_s + compile_eval,
            iterations=iterations,
            samples=int(problem.s.shape[0]),
            ip_solve=min(ip_times),
            ip_iterations=ip_iterations,
            ip_compile=ip_first.report.compile_time,
            ip_cost=float(ip_first.report.cost.min()),
            ip_guesses=int(ip_guesses.shape[0]),
        )
        print(
            f"  {method:<10} {problem.s.shape[0]:>7} {per_eval * 1e3:>10.2f}ms {per_iteration * 1e3:>10.2f}ms "
            f"{compile_s:>8.1f}s {float(second.report.cost.min()):>12.6g}"
        )
        print(
            f"  {'':<10} interior point, {ip_guesses.shape[0]} guesses to convergence: {min(ip_times):.2f} s "
            f"(median of 3: {sorted(ip_times)[1]:.2f} s), {ip_iterations} iterations, "
            f"{min(ip_times) / ip_iterations * 1e3:.1f} ms per iteration, compile {ip_first.report.compile_time:.1f} s, "
            f"cost {float(ip_first.report.cost.min()):.8g}"
        )
    if "rnea" in results and "kron" in results:
        print(
            f"  kron / rnea: {results['kron']['per_eval'] / results['rnea']['per_eval']:.2f}x per evaluation, "
            f"{results['kron']['per_iteration'] / results['rnea']['per_iteration']:.2f}x per iteration"
        )
    if peers:
        results["peers"] = {
            name: compare_solvers(name, *make()) for name, make in (("Panda", panda_problem), ("UR5", ur5_problem))
        }
    return results


FIRST_CALL_SOLVERS = ("kronjax InteriorPoint", "scipy SLSQP (JAX)")


def one_first_call(name: str, solver: str) -> float:
    """In this (fresh) process: the problem transcribed and its minimum-jerk fit computed, then the
    first call of ``solver`` timed as :func:`compare_solvers` times it (its setup and one solve,
    compilation included); prints the seconds."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from kronjax import trajopt

    model, boundary = {"Panda": panda_problem, "UR5": ur5_problem}[name]()
    problem = trajopt.transcribe(model, boundary, trajopt.TorqueEffort(), num_control_points=10)
    z0 = problem.initial_guess()
    start = time.perf_counter()
    SOLVERS[solver](problem, z0)()
    seconds = time.perf_counter() - start
    print(seconds)
    return seconds


def first_calls(rounds: int) -> dict:
    """The first calls of :data:`FIRST_CALL_SOLVERS` on the Panda and UR5 problems, each in a fresh
    process (:func:`one_first_call`), the solvers alternating, ``rounds`` rounds: median and range.
    In one benchmark process the order matters (the first solver compiles what JAX shares with the
    next); here nothing is shared."""
    import subprocess
    import sys
    from pathlib import Path

    times = {(name, solver): [] for name in ("Panda", "UR5") for solver in FIRST_CALL_SOLVERS}
    for _ in range(rounds):
        for name, solver in times:
            out = subprocess.run(
                [sys.executable, "-m", "bench.trajopt", "--one-first-call", name, solver],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parents[1],
            )
            times[(name, solver)].append(float(out.stdout.split()[-1]))
    print(
        f"first calls in fresh processes, compilation included, {rounds} rounds on {platform.node()} "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): median [range]"
    )
    for name in ("Panda", "UR5"):
        row = "  ".join(
            f"{solver} {statistics.median(times[(name, solver)]):.2f} s "
            f"[{min(times[(name, solver)]):.2f}, {max(times[(name, solver)]):.2f}]"
            for solver in FIRST_CALL_SOLVERS
        )
        print(f"  {name:<6} {row}")
    return {f"{name} {solver}": seconds for (name, solver), seconds in times.items()}


def check_casadi(problem, states: int = 20, guesses: int = 5, seed: int = 0) -> dict:
    """Largest relative differences (``max |a - b| / max |b|``) of the CasADi program from
    kronjax's, and of its inverse dynamics from Pinocchio's (the model written by ``kj.to_urdf``),
    at ``states`` random states (``q``, ``qd`` within the limits, ``|qdd|`` up to about
    10 rad/s^2) and ``guesses`` random ``z`` (the minimum-jerk fit perturbed by 0.2 of each joint's
    travel): IPOPT's timings mean nothing unless it solves kronjax's program."""
    import casadi as ca
    import jax
    import pinocchio as pin

    import kronjax as kj

    from ._casadi_dynamics import inverse_dynamics_function, transcription

    model, n = problem.model, problem.nv
    limits = problem.limits
    rng = np.random.default_rng(seed)
    q = rng.uniform(np.asarray(limits.lower), np.asarray(limits.upper), (states, n))
    qd = rng.uniform(-1, 1, (states, n)) * np.asarray(limits.velocity)
    qdd = rng.normal(0.0, 5.0, (states, n))
    casadi_rnea = inverse_dynamics_function(model)
    ours = np.stack([np.asarray(casadi_rnea(*x)).ravel() for x in zip(q, qd, qdd)])
    kronjax_tau = np.asarray(jax.vmap(lambda *x: kj.inverse_dynamics(model, *x))(q, qd, qdd))
    pinocchio = pin.buildModelFromXML(kj.to_urdf(model))
    pinocchio.gravity.linear = np.asarray(model.gravity, float)
    data = pinocchio.createData()
    pinocchio_tau = np.stack([pin.rnea(pinocchio, data, *x).copy() for x in zip(q, qd, qdd)])

    z, f, g = transcription(problem)
    program = ca.Function("program", [z], [f, g])
    zs = np.asarray(problem.initial_guess(jax.random.PRNGKey(seed), guesses, 0.2))
    values = [program(x.ravel()) for x in zs]
    return {
        "inverse_dynamics_vs_kronjax": _relative(ours, kronjax_tau),
        "inverse_dynamics_vs_pinocchio": _relative(ours, pinocchio_tau),
        "kronjax_vs_pinocchio": _relative(kronjax_tau, pinocchio_tau),
        "objective": max(_relative(float(v[0]), problem.objective(x)) for v, x in zip(values, zs)),
        "constraints": max(_relative(np.asarray(v[1]).ravel(), problem.constraints(x)) for v, x in zip(values, zs)),
    }


def _kronjax(problem, z0, hessian: str = "gauss-newton"):
    """kronjax's ``trajopt.optimize`` (the interior-point method, with its default Gauss-Newton
    Hessians or with exact ones), compiled at the first call."""
    from kronjax import trajopt

    solver = trajopt.InteriorPoint(hessian=hessian)

    def solve():
        result = trajopt.optimize(
            problem.model,
            problem.boundary,
            problem.cost,
            num_control_points=problem.num_control_points,
            init=z0,
            solver=solver,
        )
        return result.z[0], int(result.report.iterations[0]), "" if result.report.converged[0] else result.report.status[0]

    return solve


def _slsqp(problem, z0):
    """scipy's SLSQP on kronjax's transcription: cost, constraints and their derivatives from one
    jitted JAX call per new point (SLSQP asks for values and derivatives at the same points),
    compiled at the first call. scipy's constraints are ``-g(z) >= 0``."""
    import jax
    import scipy.optimize

    @jax.jit
    def evaluate(x):
        z = x.reshape(problem.shape)
        f, grad = jax.value_and_grad(problem.objective)(z)
        return f, grad.ravel(), -problem.constraints(z), -jax.jacfwd(problem.constraints)(z).reshape(-1, x.size)

    last = {}

    def at(x, i):
        if x.tobytes() not in last:
            last.clear()
            last[x.tobytes()] = [np.asarray(v) for v in evaluate(x)]
        return last[x.tobytes()][i]

    def solve():
        result = scipy.optimize.minimize(
            lambda x: float(at(x, 0)),
            np.asarray(z0).ravel(),
            jac=lambda x: at(x, 1),
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda x: at(x, 2), "jac": lambda x: at(x, 3)}],
            options={"maxiter": 500, "ftol": 1e-10},
        )
        return result.x.reshape(problem.shape), int(result.nit), "" if result.success else result.message

    return solve


def _ipopt(problem, z0):
    """IPOPT (CasADi's ``nlpsol``, its defaults: exact Hessian from CasADi, tol 1e-8, MUMPS) on
    the program of bench/_casadi_dynamics.py; building the expressions, their derivatives and the
    solver is the first call's "compilation"."""
    import casadi as ca

    from ._casadi_dynamics import transcription

    z, f, g = transcription(problem)
    solver = ca.nlpsol(
        "ipopt", "ipopt", {"x": z, "f": f, "g": g}, {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes"}
    )

    def solve():
        solution = solver(x0=np.asarray(z0).ravel(), ubg=0.0)  # lbg = -inf: g(z) <= 0
        stats = solver.stats()
        return (
            np.asarray(solution["x"]).reshape(problem.shape),
            int(stats["iter_count"]),
            "" if stats["success"] else stats["return_status"],
        )

    return solve


SOLVERS = {
    "kronjax InteriorPoint": _kronjax,
    "kronjax IP, exact H": functools.partial(_kronjax, hessian="exact"),
    "scipy SLSQP (JAX)": _slsqp,
    "IPOPT (CasADi)": _ipopt,
}


def compare_solvers(name: str, model, boundary, repeats: int = 3) -> dict:
    """The Panda's or UR5's problem by each of :data:`SOLVERS` from the minimum-jerk fit: checks,
    then for each the first call (setup and compilation included) and ``repeats`` timed calls."""
    import jax.numpy as jnp

    from kronjax import trajopt

    problem = trajopt.transcribe(model, boundary, trajopt.TorqueEffort(), num_control_points=10)
    z0 = problem.initial_guess()
    m_free, n = problem.shape
    checks = check_casadi(problem)
    print(
        f"\n{name}: {n} joints, {m_free * n} free control points, {problem.s.shape[0]} samples, "
        f"{problem.constraints(z0).shape[0]} constraints, {float(boundary.duration):g} s, one guess (the minimum-jerk fit); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(
        "  CasADi program, largest relative difference: inverse dynamics vs kronjax "
        f"{checks['inverse_dynamics_vs_kronjax']:.1e}, vs Pinocchio {checks['inverse_dynamics_vs_pinocchio']:.1e} "
        f"(kronjax vs Pinocchio {checks['kronjax_vs_pinocchio']:.1e}; 20 states); cost {checks['objective']:.1e}, "
        f"constraints {checks['constraints']:.1e} (5 random z)"
    )
    if max(checks.values()) > CHECK_RTOL:
        raise RuntimeError(f"the CasADi program differs from kronjax's or Pinocchio's by more than {CHECK_RTOL}: {checks}")
    rows = {}
    for label, setup in SOLVERS.items():
        start = time.perf_counter()
        solve = setup(problem, z0)
        solve()
        first = time.perf_counter() - start
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            z, iterations, status = solve()
            seconds.append(time.perf_counter() - start)
        z = jnp.asarray(z)
        rows[label] = dict(
            iterations=iterations,
            status=status,
            first_call=first,
            second_call=statistics.median(seconds),
            second_range=(min(seconds), max(seconds)),
            cost=float(problem.objective(z)),
            violation=float(problem.violation(z)),
        )
    best = min((r["cost"] for r in rows.values() if r["violation"] <= VIOLATION_TOL), default=np.inf)
    print(
        f"  {'solver':<22} {'iterations':>10} {'to solution':>12} {'first call':>11} "
        f"{'second call, median [range] of ' + str(repeats):>36} {'cost':>16} {'violation':>10}  status"
    )
    for label, r in rows.items():
        reached = r["violation"] <= VIOLATION_TOL and abs(r["cost"] - best) <= COST_RTOL * abs(best)
        r["to_solution"] = r["second_call"] if reached else None
        lo, hi = r["second_range"]
        to_solution = f"{r['second_call']:.3f} s" if reached else "not reached"
        print(
            f"  {label:<22} {r['iterations']:>10} {to_solution:>12} {r['first_call']:>9.2f} s "
            f"{r['second_call']:>16.3f} s [{lo:.3f}, {hi:.3f}] {r['cost']:>16.10g} {r['violation']:>10.1e}  {r['status'] or 'ok'}"
        )
    return dict(checks=checks, solvers=rows, best_cost=best, receding_horizon=receding_horizon(problem))


def receding_horizon(problem, steps: int = 5, drift: float = 0.02) -> dict:
    """Model-predictive re-planning with kronjax: a cold solve, then ``steps`` warm-started solves
    (``optimize(..., init=previous)``) toward a goal that moves by ``drift`` rad per joint at each
    step; the time of each re-plan (the first included: it reuses the cold start's compiled
    solver)."""
    from kronjax import trajopt

    def solve(goal, init):
        boundary = trajopt.BoundaryConditions(problem.boundary.q_start, goal, problem.boundary.duration)
        return trajopt.optimize(problem.model, boundary, problem.cost, num_control_points=problem.num_control_points, init=init)

    plan = solve(problem.boundary.q_end, None)
    seconds, iterations, converged = [], [], []
    for step in range(1, steps + 1):
        start = time.perf_counter()
        plan = solve(problem.boundary.q_end + drift * step, plan)
        seconds.append(time.perf_counter() - start)
        iterations.append(int(plan.report.iterations[0]))
        converged.append(bool(plan.report.converged[0]))
    print(
        f"  receding horizon (kronjax, warm starts, goal drifting {drift} rad per joint per step): re-plans "
        f"{', '.join(f'{t:.3f}' for t in seconds)} s (median {statistics.median(seconds):.3f} s; the first reuses the "
        f"cold start's compiled solver), iterations {iterations}, all converged: {all(converged)}"
    )
    return dict(seconds=seconds, iterations=iterations, converged=converged)


if __name__ == "__main__":
    main()
