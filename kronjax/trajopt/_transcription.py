"""The transcription: :func:`transcribe` turns a model, boundary conditions and a cost into a
:class:`Problem` over the free control points of a B-spline, with the samples (Gauss-Lobatto
nodes and further points where the limits are checked) and the preconditioner of the decision
variables; the checks that refuse what no motion can satisfy.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..chain import JointLimits, Model
from ..chain._model import require_one_dof_joints
from ..configuration import one_dof_coordinates
from ..constrained import CoordinatePartition, Mechanism, partition
from ..dynamics._inverse import checked_method
from ._boundary import BoundaryConditions, FreeTime
from ._constraints import AbstractConstraint, TaskConstraint
from ._costs import AbstractCost, TaskPoint
from ._problem import Problem
from ._spline import design_matrices


def _lobatto_grid(spans: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on ``[0, 1]``: ``r``-point Gauss-Lobatto on each of ``spans`` equal
    spans, shared ends merged. Lobatto nodes on ``[-1, 1]``: ``+-1`` and the roots of
    ``P'_{r-1}``; weights ``2 / (r (r - 1) P_{r-1}(x)^2)``."""
    legendre = np.polynomial.legendre.Legendre.basis(r - 1)
    x = np.concatenate([[-1.0], np.sort(legendre.deriv().roots().real), [1.0]])
    w = 2.0 / (r * (r - 1) * legendre(x) ** 2)
    edges = np.linspace(0.0, 1.0, spans + 1)
    nodes = np.concatenate([edges[i] + (x[:-1] + 1) / 2 / spans for i in range(spans)] + [[1.0]])
    weights = np.zeros(nodes.shape[0])
    for i in range(spans):
        weights[i * (r - 1) : i * (r - 1) + r] += w / 2 / spans
    return nodes, weights


def _sample_grid(spans: int, r: int, checks: int) -> tuple[np.ndarray, np.ndarray]:
    """The Gauss-Lobatto nodes and weights of :func:`_lobatto_grid` merged with ``checks`` equally
    spaced points per span (weight 0), sorted, coincident points merged."""
    nodes, weights = _lobatto_grid(spans, r)
    edges = np.linspace(0.0, 1.0, spans + 1)
    extra = (edges[:-1, None] + np.arange(1, checks + 1) / (checks + 1) / spans).ravel()
    s = np.concatenate([nodes, extra])
    w = np.concatenate([weights, np.zeros(extra.shape[0])])
    order = np.argsort(s, kind="stable")
    s, w = s[order], w[order]
    keep = np.concatenate([[True], np.diff(s) > 1e-12])
    groups = np.cumsum(keep) - 1
    return s[keep], np.bincount(groups, weights=w)


def transcribe(
    model: Model | Mechanism,
    boundary: BoundaryConditions,
    cost: AbstractCost,
    *,
    num_control_points: int = 10,
    degree: int = 5,
    nodes_per_span: int = 6,
    checks_per_span: int = 8,
    method: str = "rnea",
    limits: JointLimits | None = None,
    margin: float = 0.0,
    constraints: tuple[AbstractConstraint, ...] = (),
    free_time: FreeTime | None = None,
    actuated: Sequence[str | int] | None = None,
) -> Problem:
    """The :class:`Problem` of moving ``model`` within ``boundary`` at least ``cost``.

    Args:
        model: the :class:`~kronjax.chain.Model` (1-DoF joints), or a closed chain's
            :class:`~kronjax.constrained.Mechanism` with ``actuated``.
        boundary: the :class:`BoundaryConditions` (of the ``actuated`` joints for a mechanism).
        cost: the cost (e.g. ``TorqueEffort()``).
        num_control_points: ``m``, control points per joint (the free ones are ``m`` minus the
            number of fixed boundary values, e.g. ``m - 6`` for rest-to-rest with fixed ends).
        degree: spline degree ``p`` (``3 <= p``; default 5, continuous jerk).
        nodes_per_span: ``r``, Gauss-Lobatto nodes per knot span (ends included) where the costs
            are integrated.
        checks_per_span: further equally spaced points per knot span (weight 0 in the integrals)
            where the limits are imposed too, so that they also hold between the quadrature nodes.
            The samples are the union: ``K = (r - 1 + checks_per_span)(m - p) + 1`` at most.
        method: inverse-dynamics method (:func:`kronjax.inverse_dynamics`); ``"rnea"`` (default,
            the fast one), ``"kron"`` (the papers' ``M vd + C* (v ⊗ v) + g``), ``"euler_lagrange"``.
            On a serial chain the solvers differentiate it by JAX's own derivatives
            (``derivatives="autodiff"``), on a branched tree by the analytic rules.
        limits: the joint limits (default ``model.limits``, unlimited where the model has none).
        margin: shrink every limit by this fraction (a safety margin for the samples).
        constraints: further constraints on the motion (:class:`AvoidSpheres`,
            :class:`TaskConstraint`, or your own :class:`AbstractConstraint`).
        free_time: :class:`FreeTime` to make the duration a decision variable between its bounds
            (``boundary.duration`` is then its initial guess): with the cost :class:`Duration`, the
            minimum-time problem.
        actuated: a :class:`~kronjax.constrained.Mechanism`'s actuated joints (names or velocity
            indices of 1-DoF coordinates, as many as its degrees of freedom): the spline moves
            them, the closure's equations place the other coordinates at every sample
            (:func:`kronjax.constrained.partition`, assembled sample after sample from the
            mechanism's ``q0``), and their torques balance the tree's inverse dynamics together
            with the closure forces, the multipliers of the loop-closure rows (the passive
            joints carry no torque). The samples and the limits are of every coordinate; a
            free, spherical or planar joint (a platform) has no position limits. Not for a
            :class:`~kronjax.chain.Model`.

    Returns:
        The :class:`Problem`, for :func:`optimize` or a solver of your own.

    Example:
        A rotor (``tau = 0.1 vd``) from rest at 0 to rest at 1 rad in 1 s, ``m = 9`` control
        points of degree 5 (4 knot spans); the torque effort of the minimum-jerk motion (the
        initial guess) is ``0.1^2 int_0^1 vd^2 dt = 0.01 * 120 / 7``:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0)
        >>> problem = trajopt.transcribe(rotor, bc, trajopt.TorqueEffort(), num_control_points=9)
        >>> problem.s.shape  # K = (r - 1 + checks_per_span)(m - p) + 1 = (5 + 8) * 4 + 1 samples
        (53,)
        >>> f, g, h = problem.evaluate(problem.initial_guess())
        >>> print(np.round(float(f), 6), np.round(0.01 * 120 / 7, 6))
        0.171429 0.171429
    """
    closure = _closed_chain(model, actuated, boundary, cost, constraints)
    model = model if closure is None else closure.model
    if not isinstance(boundary, BoundaryConditions):
        raise TypeError(f"boundary must be a BoundaryConditions, got {type(boundary).__name__}")
    if not isinstance(cost, AbstractCost):
        raise TypeError(f"cost must be a trajopt cost (TorqueEffort(), ...), got {cost!r}")
    method = checked_method(method, "transcribe")
    n = model.nv if closure is None else len(closure.independent)
    if boundary.nv != n:
        what = "the model has" if closure is None else "the mechanism has actuated joints:"
        raise ValueError(f"boundary conditions for {boundary.nv} joints, {what} {n}")
    if closure is not None:
        _check_assembles(closure, boundary)
    if not (isinstance(degree, int) and 3 <= degree <= 7):
        raise ValueError(f"degree must be an integer from 3 to 7, got {degree!r}")
    m = int(num_control_points)
    fixed_start = [j for j, _ in boundary.fixed("start")]
    fixed_end = [j for j, _ in boundary.fixed("end")]
    needed = max(fixed_start, default=-1) + max(fixed_end, default=-1) + 3
    if m < max(degree + 1, needed):
        raise ValueError(
            f"num_control_points must be at least {max(degree + 1, needed)} for degree {degree} and these "
            f"boundary conditions (one free control point at least), got {m}"
        )
    if not (isinstance(nodes_per_span, int) and 2 <= nodes_per_span <= 12):
        raise ValueError(f"nodes_per_span must be an integer from 2 to 12, got {nodes_per_span!r}")
    if not (isinstance(checks_per_span, int) and checks_per_span >= 0):
        raise ValueError(f"checks_per_span must be a non-negative integer, got {checks_per_span!r}")
    if not 0.0 <= margin < 0.5:
        raise ValueError(f"margin must be in [0, 0.5), got {margin}")
    constraints = tuple(constraints)
    _check_constraints(constraints, boundary)
    _check_free_time(free_time, boundary)
    limits = model.limits if limits is None else limits
    limits = JointLimits.unlimited(model.nv) if limits is None else limits
    if not isinstance(limits, JointLimits) or limits.lower.shape != (model.nv,):
        raise ValueError(f"limits must be JointLimits for {model.nv} joint coordinates")
    if closure is not None:
        limits = _closed_chain_limits(closure, limits)
    _check_limits_admit_motion(model, limits)
    _check_boundary_within_limits(boundary, limits if closure is None else _of_independent(closure, limits))
    s, weights = _sample_grid(m - degree, nodes_per_span, checks_per_span)
    design = design_matrices(m, degree, s, 3)
    end_rows = design_matrices(m, degree, np.array([0.0, 1.0]), 2).transpose(1, 0, 2)  # (2 ends, 3 orders, m)
    determined = set(fixed_start) | {m - 1 - j for j in fixed_end}
    free = tuple(i for i in range(m) if i not in determined)
    precondition, precondition_inverse = _preconditioner(design[2], weights, end_rows, free, fixed_start, fixed_end)
    dtype = boundary.q_start.dtype
    return Problem(
        model=model,
        boundary=boundary,
        cost=cost,
        limits=limits,
        design=jnp.asarray(design, dtype),
        end_rows=jnp.asarray(end_rows, dtype),
        s=jnp.asarray(s, dtype),
        weights=jnp.asarray(weights, dtype),
        preconditioner=jnp.asarray(precondition, dtype),
        preconditioner_inverse=jnp.asarray(precondition_inverse, dtype),
        degree=degree,
        num_control_points=m,
        free=free,
        method=method,
        margin=float(margin),
        extra_constraints=constraints,
        free_time=free_time,
        partition=closure,
    )


def _closed_chain(model, actuated, boundary, cost, constraints) -> CoordinatePartition | None:
    """The partition of a mechanism by its actuated joints, in the boundary conditions' dtype;
    ``None`` for a model (1-DoF joints)."""
    if isinstance(model, Mechanism):
        if actuated is None:
            raise ValueError(
                f"a closed chain needs its actuated joints: actuated=(...), {model.mobility} of {model.model.joint_names}"
            )
        leaves = jax.tree.leaves((cost, constraints), is_leaf=lambda x: isinstance(x, TaskPoint))
        tasks = [type(x).__name__ for x in leaves if isinstance(x, TaskPoint)]
        if tasks:
            raise NotImplementedError(
                f"{tasks} on a closed chain: task-space targets read the spline of the actuated joints, not the "
                "assembled configuration; constrain the samples instead (samples.q holds every coordinate)"
            )
        dtype = getattr(boundary, "q_start", model.q0).dtype
        return partition(Mechanism(model.model, model.constraints, model.q0.astype(dtype)), actuated)
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model or a constrained.Mechanism, got {type(model).__name__}")
    if actuated is not None:
        raise ValueError(
            "actuated names the actuated joints of a closed chain (a constrained.Mechanism); a Model's joints are all actuated"
        )
    require_one_dof_joints(model, "transcribe")
    return None


def _check_assembles(closure: CoordinatePartition, boundary: BoundaryConditions) -> None:
    """A clear error where the closure does not assemble at the start from the mechanism's ``q0``
    (the first sample would be NaN)."""
    if isinstance(boundary.q_start, jax.core.Tracer):
        return
    q = closure.configuration(boundary.q_start)
    if not bool(jnp.all(jnp.isfinite(q))):
        raise ValueError(
            f"the mechanism does not assemble with its actuated joints at q_start = {np.asarray(boundary.q_start).tolist()}: "
            "Newton's method from the mechanism's q0 finds no configuration that closes the loops there (out of reach, "
            "or too far from q0: build the Mechanism with a q0 near the start)"
        )


def _closed_chain_limits(closure: CoordinatePartition, limits: JointLimits) -> JointLimits:
    """A closed chain's limits: no effort limit at the passive coordinates (they carry no torque)
    and no position limits at a multi-DoF joint's (its ``q`` has other numbers)."""
    one_dof = np.zeros(closure.model.nv, bool)
    one_dof[[i for i, _ in one_dof_coordinates(closure.model)]] = True
    passive = np.ones(closure.model.nv, bool)
    passive[list(closure.independent)] = False
    inf = jnp.asarray(np.inf, limits.lower.dtype)
    return JointLimits(
        jnp.where(one_dof, limits.lower, -inf),
        jnp.where(one_dof, limits.upper, inf),
        limits.velocity,
        jnp.where(passive, inf, limits.effort),
    )


def _of_independent(closure: CoordinatePartition, limits: JointLimits) -> JointLimits:
    index = np.asarray(closure.independent)
    return JointLimits(*(getattr(limits, f)[index] for f in ("lower", "upper", "velocity", "effort")))


def _preconditioner(design2, weights, end_rows, free, fixed_start, fixed_end) -> tuple[np.ndarray, np.ndarray]:
    """``P = L^-T`` and ``P^-1 = L^T`` with ``L L^T = A^T W A + ridge``, ``A`` the second
    derivative at the samples of the linear part of ``z -> control points`` (one joint)."""
    m = design2.shape[1]
    linear = np.zeros((m, len(free)))
    linear[list(free), np.arange(len(free))] = 1.0
    for side, orders in ((0, fixed_start), (1, fixed_end)):
        for j in orders:
            index = j if side == 0 else m - 1 - j
            others = [i for i in range(j)] if side == 0 else [m - 1 - i for i in range(j)]
            linear[index] = -sum(end_rows[side, j, i] * linear[i] for i in others) / end_rows[side, j, index]
    a = design2 @ linear
    gram = a.T @ (weights[:, None] * a)
    gram += 1e-10 * np.trace(gram) / len(free) * np.eye(len(free)) + 1e-300
    chol = np.linalg.cholesky(gram)
    inverse_t = np.linalg.solve(chol.T, np.eye(len(free)))
    return inverse_t, chol.T


def _check_constraints(constraints: tuple, boundary: BoundaryConditions) -> None:
    """Refuse what is not a trajopt constraint, and a task constraint at an end where the boundary
    conditions fix ``q`` already (the two would fight)."""
    for constraint in constraints:
        if not isinstance(constraint, AbstractConstraint):
            raise TypeError(f"constraints must be trajopt constraints (AvoidSpheres(...), ...), got {constraint!r}")
    for constraint in constraints:
        if isinstance(constraint, TaskConstraint) and (
            constraint.time == 0 or (constraint.time is None and boundary.q_end is not None)
        ):
            raise ValueError(
                f"{type(constraint).__name__} on body {constraint.body!r} at t = {'T' if constraint.time is None else 0}, where "
                "the boundary conditions fix q already: leave q_end=None, or give the constraint a time inside the motion"
            )


def _check_free_time(free_time: FreeTime | None, boundary: BoundaryConditions) -> None:
    """Refuse a ``free_time`` that is not a :class:`FreeTime`, or whose bounds exclude the initial
    duration."""
    if free_time is not None and not isinstance(free_time, FreeTime):
        raise TypeError(f"free_time must be a trajopt.FreeTime(lower, upper), got {free_time!r}")
    if (
        free_time is not None
        and not isinstance(boundary.duration, jax.core.Tracer)
        and not free_time.lower <= float(boundary.duration) <= free_time.upper
    ):
        raise ValueError(
            f"the initial duration {float(boundary.duration)} is outside free_time's bounds "
            f"[{free_time.lower}, {free_time.upper}]"
        )


def _check_limits_admit_motion(model: Model, limits: JointLimits) -> None:
    """Refuse limits under which the transcription's scaled constraints are undefined: a locked
    position range (``lower == upper``, as some CAD exports write for "not set"; see
    ``load_urdf(..., strict_limits=...)``) and zero velocity or effort limits."""
    if isinstance(limits.lower, jax.core.Tracer):
        return
    lower, upper = np.asarray(limits.lower), np.asarray(limits.upper)
    problems = [
        f"{name}: position range [{lower[k]}, {upper[k]}] has zero width"
        for k, name in enumerate(model.coordinate_names)
        if lower[k] == upper[k]
    ]
    for field in ("velocity", "effort"):
        value = np.asarray(getattr(limits, field))
        problems += [f"{name}: {field} limit is 0" for k, name in enumerate(model.coordinate_names) if value[k] == 0]
    if problems:
        raise ValueError(
            "trajectory optimisation needs every joint free to move and actuated: "
            + "; ".join(problems)
            + ". Remove the joint from the model (a fixed joint), or widen its limits (pass limits=...)"
        )


def _check_boundary_within_limits(bc: BoundaryConditions, limits: JointLimits) -> None:
    checks = [
        ("q_start", bc.q_start, limits.lower, limits.upper),
        ("q_end", bc.q_end, limits.lower, limits.upper),
        ("v_start", bc.v_start, -limits.velocity, limits.velocity),
        ("v_end", bc.v_end, -limits.velocity, limits.velocity),
    ]
    for name, value, lo, hi in checks:
        if value is None or isinstance(value, jax.core.Tracer) or isinstance(lo, jax.core.Tracer):
            continue
        value, lo, hi = np.asarray(value), np.asarray(lo), np.asarray(hi)
        for k in np.flatnonzero((value < lo) | (value > hi)):
            raise ValueError(f"{name}[{k}] = {value[k]} is outside the limits [{lo[k]}, {hi[k]}]: no feasible motion")
