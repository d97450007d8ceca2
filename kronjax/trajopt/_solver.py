"""What the solvers of :mod:`kronjax.trajopt` share: the progress record handed to a callback,
the report and solution they return to :func:`~kronjax.trajopt.optimize`, and the compile-time clock."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

import jax
import numpy as np
from jaxtyping import Array


class Progress(NamedTuple):
    """What a progress callback of :func:`~kronjax.trajopt.optimize` receives: after every
    iteration of :class:`~kronjax.trajopt.InteriorPoint`, after every multiplier update of
    :class:`~kronjax.trajopt.AugmentedLagrangian`.

    Attributes:
        step: reports so far, this one included (iterations of the interior-point method,
            multiplier updates of the augmented Lagrangian).
        iterations: ``(G,)`` iterations done per initial guess.
        cost, violation: ``(G,)`` cost ``f(z)`` and largest constraint violation relative to the
            limit.
        parameter: ``(G,)`` the barrier parameter ``mu`` (interior point) or the penalty ``rho``
            (augmented Lagrangian).
        elapsed: seconds since the start (compilation included).

    Example:
        A callback of one's own (``trajopt.optimize(..., callback=record)``), here handed a
        report on two guesses by hand:

        >>> import numpy as np
        >>> from kronjax import trajopt
        >>> costs = []
        >>> def record(progress):
        ...     costs.append(float(progress.cost.min()))
        >>> record(trajopt.Progress(step=1, iterations=np.array([1, 1]), cost=np.array([0.5, 0.2]),
        ...                         violation=np.array([0.0, 0.0]), parameter=np.array([0.02, 0.02]), elapsed=0.3))
        >>> costs
        [0.2]
    """

    step: int
    iterations: np.ndarray
    cost: np.ndarray
    violation: np.ndarray
    parameter: np.ndarray
    elapsed: float


# why a guess stopped, as the compiled solvers record it: RUNNING until it stops (still RUNNING
# after the last iteration: "max_iterations"), then CONVERGED, INFEASIBLE, or NON_FINITE + i for the
# first quantity of NON_FINITE_QUANTITIES that was not finite
RUNNING, CONVERGED, INFEASIBLE, NON_FINITE = 0, 1, 2, 3
NON_FINITE_QUANTITIES = (
    "cost",
    "inequality constraints",
    "equality constraints",
    "cost gradient",
    "inequality constraints' Jacobian",
    "equality constraints' Jacobian",
    "Hessian of the Lagrangian",
    "constraints",  # the augmented Lagrangian's (inequalities and equalities together)
    "gradient of the augmented Lagrangian",
)
_STATUS = ("max_iterations", "converged", "infeasible") + tuple(f"non-finite {q}" for q in NON_FINITE_QUANTITIES)


def status_names(codes: np.ndarray) -> np.ndarray:
    """The :attr:`SolverReport.status` strings of the solvers' status codes."""
    return np.asarray([_STATUS[int(c)] for c in np.ravel(codes)], dtype=object).reshape(np.shape(codes))


class SolverReport(NamedTuple):
    """How :func:`optimize` went.

    Attributes:
        best: index of the returned guess: the lowest cost among the feasible converged ones,
            else among the feasible ones, else the least violation (a guess whose cost,
            constraints or derivatives were not finite comes last).
        cost, violation: ``(G,)`` final cost and largest relative constraint violation per guess.
        converged: ``(G,)`` whether each guess met the solver's stopping test (interior point: KKT
            error and duality gap ``<= tol`` and violation ``<= violation_tol``, tested before each
            step, so that a guess meeting it only after the last allowed step reads ``False``; augmented Lagrangian: violation
            ``<= violation_tol`` and relative cost change over the last outer iteration
            ``<= cost_tol``).
        iterations: ``(G,)`` iterations done per guess (Newton steps, or optimiser iterations).
        outer_iterations: iterations of the batch (interior point: of the slowest guess) or
            multiplier updates (augmented Lagrangian).
        history_cost, history_violation: ``(I, G)``: cost and violation after every iteration
            (for plots of the convergence; a guess that has stopped repeats its last value, an
            infeasible one that of its point of least violation, where it ends).
        wall_time: seconds, compilation included; ``compile_time``: of which lowering and
            compiling (0 when the compiled solver was reused from memory).
        status: ``(G,)`` why each guess stopped: ``"converged"``; ``"max_iterations"``;
            ``"infeasible"`` (interior point: no feasible point found and the smallest violation
            stopped dropping; the guess holds its point of least violation); or ``"non-finite
            <quantity>"``, the first of the cost, the constraints, the cost gradient, the
            constraints' Jacobians and the Hessian of the Lagrangian that was NaN or inf at the
            guess's last point (where a constraint's was, ``failed_row`` gives its row, else
            ``-1``: :meth:`Problem.constraint_name` names it).
        failed_row: ``(G,)`` that row, per guess (``-1`` where there is none).
        message: what became of the best guess, in words (why it stopped, and for a guess that
            did not converge, its largest violation and where).

    Example:
        The report of the torque-optimal motion of a rotor (``tau = 0.1 vd``) from rest at 0 to
        rest at 1 rad in 1 s, end accelerations free (the example of :func:`optimize`):

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0, vd_start=None, vd_end=None)
        >>> result = trajopt.optimize(rotor, bc, trajopt.TorqueEffort(), num_control_points=8)
        >>> report = result.report
        >>> report.best, report.converged.tolist()
        (0, [True])
        >>> print(np.round(report.cost, 6))  # (G,): one per guess
        [0.12]
        >>> report.history_cost.shape == (report.outer_iterations, 1)  # (I, G): after every iteration
        True
        >>> report.status.tolist(), report.message
        (['converged'], 'converged in 6 iterations')
    """

    best: int
    cost: np.ndarray
    violation: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    outer_iterations: int
    history_cost: np.ndarray
    history_violation: np.ndarray
    wall_time: float
    compile_time: float
    status: np.ndarray
    failed_row: np.ndarray
    message: str = ""


class Solution(NamedTuple):
    """A solver's answer for ``G`` initial guesses: the free control points ``z``
    (``(G, m_free, n)``), the durations (``(G,)``), the solver's state for a warm start, the
    report (``best`` and ``wall_time`` filled in by :func:`~kronjax.trajopt.optimize`) and, where
    the solver computed them, all the control points (``(G, m, n)``)."""

    z: Array
    duration: Array
    state: Any
    report: SolverReport
    control_points: Array | None = None


# lowering and XLA's compilation; tracing is left out (its events nest, a jit inside a jit counted
# twice, and it is a small part)
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_to_mlir_module_duration", "/jax/core/compile/backend_compile_duration")
_clock = threading.local()
_listening = False
_listening_lock = threading.Lock()


def _listen(event: str, duration: float, **_) -> None:
    if event in _COMPILE_EVENTS and getattr(_clock, "seconds", None) is not None:
        _clock.seconds += duration


@contextlib.contextmanager
def compile_clock():
    """Seconds spent lowering and compiling in this thread inside the block (JAX's
    monitoring events): ``with compile_clock() as seconds: ...; seconds()``. A call that finds its
    program in the in-memory cache adds nothing; one that loads it from JAX's persistent cache
    adds its lowering."""
    global _listening
    with _listening_lock:
        if not _listening:
            jax.monitoring.register_event_duration_secs_listener(_listen)
            _listening = True
    _clock.seconds = 0.0
    total = [0.0]
    try:
        yield lambda: total[0] if _clock.seconds is None else _clock.seconds
    finally:
        total[0], _clock.seconds = _clock.seconds, None
