"""Trajectory optimisation of the Panda (7 joints) with 64 initial guesses at once (``jax.vmap``):
time per L-BFGS iteration of the augmented Lagrangian, per evaluation of the cost and its gradient,
and of a solve to convergence by the interior-point method (the default solver; 8 guesses),
with the inverse dynamics in the cost by the fast method (``method="rnea"``) and by the papers'
``M qdd + C* (qd ⊗ qd) + g`` (``method="kron"``), in one run:

    python -m bench.trajopt [--guesses 64] [--iterations 50] [--ip-guesses 8]

The problem is the notebook's (notebooks/trajectory_optimization.ipynb): rest to rest in 1 s,
torque effort, Franka's limits with the torques derated to 50 %, 10 control points per joint.
An L-BFGS iteration is one step of every guess (its line search included); a Newton step of the
interior-point method costs a Hessian of the Lagrangian per guess. Compile times are reported
apart. Prints a table; asserts nothing (the targets live in issues 7 and 16).
"""

from __future__ import annotations

import argparse
import platform
import time


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.trajopt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--guesses", type=int, default=64, help="initial guesses solved at once (vmap)")
    parser.add_argument("--iterations", type=int, default=50, help="L-BFGS iterations timed")
    parser.add_argument("--ip-guesses", type=int, default=8, help="guesses the interior-point method solves")
    parser.add_argument("--methods", nargs="+", default=["rnea", "kron"], choices=["rnea", "kron", "lagrangian"])
    args = parser.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    import equinox as eqx
    import jax.numpy as jnp

    import kronjax as kj
    from kronjax import trajopt

    from ._timing import best_time

    panda = kj.models.panda()
    model = eqx.tree_at(lambda m: m.limits, panda, eqx.tree_at(lambda l: l.effort, panda.limits, 0.5 * panda.limits.effort))
    q_start = jnp.array([0.0, -jnp.pi / 4, 0.0, -3 * jnp.pi / 4, 0.0, jnp.pi / 2, jnp.pi / 4])
    q_goal = jnp.array([1.6, 0.4, -0.5, -1.2, 0.8, 2.4, -0.3])
    boundary = trajopt.BoundaryConditions(q_start, q_goal, 1.0)
    print(f"trajectory optimisation of the Panda, {args.guesses} guesses at once, on {platform.node()} "
          f"({platform.processor() or platform.machine()}), jax {jax.__version__}, {jax.devices()[0].platform}")
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
            return trajopt.optimize(model, boundary, trajopt.TorqueEffort(), num_control_points=10, method=method,
                                    init=guesses, solver=solver)

        first = run()
        second = run()
        iterations = int(first.report.iterations.max())
        per_iteration = second.report.wall_time / max(int(second.report.iterations.max()), 1)
        compile_s = first.report.compile_time
        # the interior-point method (the default solver) to convergence, on the first
        # `ip_guesses` guesses: a Newton step costs a Hessian per guess
        ip_guesses = guesses[: args.ip_guesses]
        solve = lambda: trajopt.optimize(model, boundary, trajopt.TorqueEffort(), num_control_points=10,  # noqa: E731
                                         method=method, init=ip_guesses)
        ip_first = solve()
        ip_times = [solve().report.wall_time for _ in range(3)]
        ip_iterations = int(ip_first.report.iterations.max())
        results[method] = dict(per_eval=per_eval, per_iteration=per_iteration, compile=compile_s + compile_eval,
                               iterations=iterations, samples=int(problem.s.shape[0]),
                               ip_solve=min(ip_times), ip_iterations=ip_iterations, ip_compile=ip_first.report.compile_time,
                               ip_cost=float(ip_first.report.cost.min()), ip_guesses=int(ip_guesses.shape[0]))
        print(f"  {method:<10} {problem.s.shape[0]:>7} {per_eval * 1e3:>10.2f}ms {per_iteration * 1e3:>10.2f}ms "
              f"{compile_s:>8.1f}s {float(second.report.cost.min()):>12.6g}")
        print(f"  {'':<10} interior point, {ip_guesses.shape[0]} guesses to convergence: {min(ip_times):.2f} s "
              f"(median of 3: {sorted(ip_times)[1]:.2f} s), {ip_iterations} iterations, "
              f"{min(ip_times) / ip_iterations * 1e3:.1f} ms per iteration, compile {ip_first.report.compile_time:.1f} s, "
              f"cost {float(ip_first.report.cost.min()):.8g}")
    if "rnea" in results and "kron" in results:
        print(f"  kron / rnea: {results['kron']['per_eval'] / results['rnea']['per_eval']:.2f}x per evaluation, "
              f"{results['kron']['per_iteration'] / results['rnea']['per_iteration']:.2f}x per iteration")
    return results


if __name__ == "__main__":
    main()
