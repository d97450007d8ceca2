"""The entry point :func:`optimize`: transcribe, solve for many initial guesses at once, report."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..constrained import Mechanism
from ._augmented_lagrangian import AugmentedLagrangian, AugmentedLagrangianState
from ._boundary import BoundaryConditions
from ._costs import AbstractCost
from ._interior_point import InteriorPoint, InteriorPointState
from ._problem import Problem
from ._solver import Progress, SolverReport
from ._spline import BSpline
from ._transcription import transcribe


class NotConvergedWarning(RuntimeWarning):
    """What :func:`optimize` warns with when the guess it returns did not converge; the text is
    the report's :attr:`SolverReport.message` (the iteration limit, an infeasible problem with
    its most violated limit, or the first quantity that is not finite).

    A loop that accepts unconverged plans (a receding horizon with a fixed iteration budget) can
    silence it by category and read :attr:`SolverReport.status` instead.

    Example:
        >>> import warnings
        >>> from kronjax import trajopt
        >>> issubclass(trajopt.NotConvergedWarning, RuntimeWarning)
        True
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", trajopt.NotConvergedWarning)
        ...     warnings.warn("trajopt.optimize: not converged in 5 iterations", trajopt.NotConvergedWarning)
    """


class Result(NamedTuple):
    """The result of :func:`optimize`.

    Attributes:
        trajectory: the optimised :class:`BSpline` (the best guess).
        report: the :class:`SolverReport`.
        trajectories: all guesses' results (a :class:`BSpline` with a leading batch axis ``G``).
        problem: the transcribed :class:`Problem` (for ``problem.samples(z)`` and friends).
        z: ``(G, m_free, n)`` the free control points of every guess.
        duration: ``(G,)`` the duration of every guess's motion (the boundary conditions' unless
            it was free, ``transcribe(..., free_time=...)``).
        state: the solver's multipliers and scales per guess (:class:`InteriorPointState` or
            :class:`AugmentedLagrangianState`), for a warm start: ``optimize(..., init=result)``.

    Example:
        The result of the torque-optimal motion of a rotor (``tau = 0.1 vd``) from rest at 0 to
        rest at 1 rad in 1 s, end accelerations free (the example of :func:`optimize`):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0, vd_start=None, vd_end=None)
        >>> result = trajopt.optimize(rotor, bc, trajopt.TorqueEffort(), num_control_points=8)
        >>> result.z.shape, result.duration.tolist()  # (G, m_free, n): 1 guess, 8 - 4 free control points
        ((1, 4, 1), [1.0])
        >>> q, v, vd = result.trajectory(0.5)  # the best guess's BSpline, (q, v, vd) at t = 0.5 s
        >>> print(np.round(float(q[0]), 6))
        0.5
    """

    trajectory: BSpline
    report: SolverReport
    trajectories: BSpline
    problem: Problem
    z: Array
    duration: Array
    state: Any


@eqx.filter_jit
def _trajectories(problem: Problem, z, duration):
    return jax.vmap(lambda z, duration: problem.at_duration(duration).trajectory(z))(z, duration)


def _check_warm_start(problem: Problem, z0, warm) -> None:
    """A clear error where the earlier solution's multipliers do not fit this problem (other
    constraints, samples or number of guesses)."""
    _, g, h = jax.eval_shape(problem.evaluate, z0[0])
    guesses = z0.shape[0]
    if isinstance(warm, InteriorPointState):  # lam for the inequalities, y for the equalities
        have, need = (warm.lam.shape, warm.y.shape), ((guesses, g.shape[0]), (guesses, h.shape[0]))
    else:  # lam for the inequalities and both sides of each equality
        have, need = warm.lam.shape, (guesses, g.shape[0] + 2 * h.shape[0])
    if have != need:
        raise ValueError(
            f"init is a Result whose multipliers have shape {have}, this problem needs {need}: warm starts need the "
            "same transcription sizes and constraints"
        )


def _best(cost: np.ndarray, violation: np.ndarray, tol: float, status: np.ndarray | None = None) -> int:
    """The guess with the lowest cost among the feasible converged ones, else among the feasible
    ones, else the least violation; a guess with a NaN, or a ``non-finite`` status, comes last."""
    broken = np.isnan(cost) | np.isnan(violation)
    if status is not None:
        broken |= np.char.startswith(status.astype(str), "non-finite")
    cost, violation = np.where(broken, np.inf, cost), np.where(broken, np.inf, violation)
    feasible = violation <= tol
    if status is not None and (feasible & (status == "converged")).any():
        feasible &= status == "converged"
    return int(np.argmin(np.where(feasible, cost, np.inf) if feasible.any() else violation))


def _message(problem: Problem, report: SolverReport, z, duration, tol: float) -> str:
    """:attr:`SolverReport.message` for the best guess, whose free control points are ``z`` and
    duration ``duration``; ``tol`` the solver's ``violation_tol``."""
    k = report.best
    status, iterations, violation = report.status[k], int(report.iterations[k]), float(report.violation[k])
    if status == "converged":
        return f"converged in {iterations} iterations"
    at = problem if problem.free_time is None else problem.at_duration(duration)
    if status.startswith("non-finite"):
        row = int(report.failed_row[k])
        where = ""
        if row >= 0:
            where = f" (first at {at.constraint_name(row, equality=status.startswith('non-finite equality'))})"
        quantity = status[len("non-finite ") :]
        return (
            f"stopped after {iterations} iterations: the {quantity} at the current point "
            f"{'are' if quantity.endswith('constraints') else 'is'} not finite (NaN or inf){where}; look for an operation "
            "outside its domain there (a square root or a logarithm of a negative number or of 0, a division by 0) or a "
            "parameter that is not finite"
        )
    _, g, h = at.evaluate(z)
    g, h = np.asarray(g), np.abs(np.asarray(h))
    worst = (
        at.constraint_name(int(np.argmax(h)), equality=True)
        if h.size and (not g.size or h.max() > g.max())
        else at.constraint_name(int(np.argmax(g)))
    )
    if status == "infeasible":
        return (
            f"no feasible motion found: after {iterations} iterations the violation stopped dropping at {violation:.3g} "
            f"(relative to the limit), the largest at {worst}; the constraints may not be satisfiable (limits that "
            "cannot be met in this duration: a longer one or wider limits)"
        )
    if not violation <= tol:
        return (
            f"not converged in {iterations} iterations (the solver's iteration limit): violation {violation:.3g}, the "
            f"largest at {worst}"
        )
    return f"not converged in {iterations} iterations (the solver's iteration limit); the point is feasible (violation {violation:.3g})"


def print_progress(progress: Progress) -> None:
    """A progress display for :func:`optimize` (``callback=print_progress``): one line per report
    with the best guess's cost and violation.

    Args:
        progress: the :class:`Progress` a solve reports.

    Returns:
        ``None``; prints one line.

    Example:
        What it prints for two reports on two guesses (the best: the lowest cost among the
        feasible ones); ``trajopt.optimize(..., callback=trajopt.print_progress)`` prints one line
        per iteration.

        >>> import numpy as np
        >>> from kronjax import trajopt
        >>> trajopt.print_progress(trajopt.Progress(1, np.array([1, 1]), np.array([0.5, 0.2]), np.array([0.0, 0.3]),
        ...                                         np.array([0.02, 0.02]), 0.3))
          iter           cost  violation   mu/rho    time
             1            0.5   0.00e+00  2.0e-02    0.3s
        >>> trajopt.print_progress(trajopt.Progress(2, np.array([2, 2]), np.array([0.15, 0.1]), np.array([0.0, 0.0]),
        ...                                         np.array([0.004, 0.004]), 0.4))
             2            0.1   0.00e+00  4.0e-03    0.4s
    """
    k = _best(progress.cost, progress.violation, 1e-6)
    if progress.step == 1:
        print(f"  {'iter':>5} {'cost':>14} {'violation':>10} {'mu/rho':>8} {'time':>7}")
    print(
        f"  {progress.iterations[k]:5d} {progress.cost[k]:14.6g} {progress.violation[k]:10.2e} "
        f"{progress.parameter[k]:8.1e} {progress.elapsed:6.1f}s"
    )


def optimize(
    model: Model | Mechanism,
    boundary: BoundaryConditions,
    cost: AbstractCost,
    *,
    solver: InteriorPoint | AugmentedLagrangian | None = None,
    init: Float[ArrayLike, "*G m_free n"] | Result | None = None,
    num_guesses: int = 1,
    key: Array | None = None,
    guess_scale: float = 0.1,
    callback: Callable[[Progress], None] | None = None,
    **transcription,
) -> Result:
    """Optimise a point-to-point motion of ``model``: the entry point of :mod:`kronjax.trajopt`.

    Transcribes the problem (:func:`transcribe`: B-spline, boundary conditions built in,
    inverse dynamics at the samples, limits from ``model.limits``) and solves it, for one or many
    initial guesses at once, by ``solver``: :class:`InteriorPoint` (default; second derivatives,
    tens of iterations) or :class:`AugmentedLagrangian` (L-BFGS or any optax optimiser).

    The compiled solver depends only on the shapes and the static choices (the model's structure,
    which boundary values are fixed, the cost's form, the transcription's sizes, the solver's
    settings, the number of guesses): a new start or goal, duration, target, limit or initial
    guess reuses it.

    Args:
        model, boundary, cost: the robot (a closed chain's :class:`~kronjax.constrained.Mechanism`
            with ``actuated=``, see :func:`transcribe`), the :class:`BoundaryConditions`, the cost
            (e.g. ``TorqueEffort()``).
        solver: default ``InteriorPoint()``.
        init: initial free control points, ``(m_free, n)`` or a batch ``(G, m_free, n)``;
            or an earlier :class:`Result` of the same solver and problem sizes, to warm-start from
            its solutions and multipliers (model-predictive control: re-plan after a small change
            of the goal). Default :meth:`Problem.initial_guess` (minimum-jerk fit).
        num_guesses, key, guess_scale: without ``init``, ``num_guesses`` guesses, the first the
            minimum-jerk fit and the others perturbed randomly (``key``, default ``PRNGKey(0)``).
        callback: called with a :class:`Progress` after each iteration (interior point) or
            multiplier update (augmented Lagrangian), e.g. :func:`print_progress`.
        **transcription: the keyword arguments of :func:`transcribe` (``num_control_points``,
            ``degree``, ``nodes_per_span``, ``checks_per_span``, ``method``, ``limits``, ``margin``,
            ``constraints``, ``free_time``, ``actuated``).

    Returns:
        A :class:`Result`: ``result.trajectory`` (a :class:`BSpline`, also a reference for
        :mod:`kronjax.simulate`) and ``result.report`` (:class:`SolverReport`).

    Warns:
        NotConvergedWarning: when the returned guess did not converge, with the report's message.

    Example:
        A rotor (``tau = I vd``, ``I = 0.1``) from rest at 0 to rest at 1 rad in ``T = 1`` s,
        end accelerations free, at least ``int tau^2 dt``: the optimum is the cubic ``q = 3 t^2 -
        2 t^3``, of cost ``12 I^2 / T^3 = 0.12``, which the quintic spline holds exactly. (The
        first call compiles the solver, several seconds; a new goal or duration reuses it.)

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0, vd_start=None, vd_end=None)
        >>> result = trajopt.optimize(rotor, bc, trajopt.TorqueEffort(), num_control_points=8)
        >>> print(np.round(float(result.report.cost[0]), 6), bool(result.report.converged[0]))
        0.12 True
        >>> q, v, vd = result.trajectory(0.5)  # at T / 2 the cubic is at 0.5 rad, 1.5 rad/s
        >>> print(np.round([float(q[0]), float(v[0])], 6))
        [0.5 1.5]
    """
    start = time.perf_counter()
    solver = InteriorPoint() if solver is None else solver
    if not isinstance(solver, (InteriorPoint, AugmentedLagrangian)):
        raise TypeError(f"solver must be trajopt.InteriorPoint() or trajopt.AugmentedLagrangian(), got {solver!r}")
    problem = transcribe(model, boundary, cost, **transcription)
    dtype = boundary.q_start.dtype
    warm = None
    duration0 = None
    if isinstance(init, Result):
        previous = init
        init, duration0 = previous.z, previous.duration
        state_type = InteriorPointState if isinstance(solver, InteriorPoint) else AugmentedLagrangianState
        if not isinstance(previous.state, state_type):
            raise ValueError(f"init is a Result of another solver; a warm start of {type(solver).__name__} needs one of its own")
        warm = previous.state
    if init is None:
        if num_guesses > 1:
            z0 = problem.initial_guess(jax.random.PRNGKey(0) if key is None else key, num_guesses, guess_scale)
        else:
            z0 = problem.initial_guess()[None]
    else:
        z0 = jnp.asarray(init, dtype)
        if z0.shape == problem.shape:
            z0 = z0[None]
        if z0.ndim != 3 or z0.shape[1:] != problem.shape:
            raise ValueError(f"init must have shape {problem.shape} or (G, *{problem.shape}), got {z0.shape}")
    if duration0 is None or problem.free_time is None:
        duration0 = jnp.broadcast_to(boundary.duration, z0.shape[:1])
    if warm is not None:
        _check_warm_start(problem, z0, warm)
    solution = solver.solve(problem, z0, jnp.asarray(duration0, dtype), warm, callback)
    report = solution.report
    best = _best(report.cost, report.violation, solver.violation_tol, report.status)
    if solution.control_points is None:
        trajectories = _trajectories(problem, solution.z, solution.duration)
    else:  # no program to compile (0.15 s of the Panda's first call)
        trajectories = jax.vmap(lambda c, d: BSpline(c, d, problem.degree))(solution.control_points, solution.duration)
    report = report._replace(best=best)
    report = report._replace(message=_message(problem, report, solution.z[best], solution.duration[best], solver.violation_tol))
    if report.status[best] != "converged":
        warnings.warn(f"trajopt.optimize: {report.message}", NotConvergedWarning, stacklevel=2)
    report = report._replace(wall_time=time.perf_counter() - start)
    return Result(
        jax.tree.map(lambda x: x[best], trajectories),
        report,
        trajectories,
        problem,
        solution.z,
        solution.duration,
        solution.state,
    )
