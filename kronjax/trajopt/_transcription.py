"""The transcription: boundary conditions, the decision variables ``z`` (the free control
points), the samples where the costs are integrated and the limits imposed, and :class:`Problem`
(``minimise objective(z)`` subject to ``constraints(z) <= 0``).
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._spatial.traversal import schedule
from ..chain import JointLimits, Model, Tree
from ..chain._model import require_one_dof_joints
from ..dynamics import INVERSE_DYNAMICS_METHODS, inverse_dynamics
from ._constraints import AbstractConstraint, TaskConstraint
from ._costs import AbstractCost, Samples
from ._spline import BSpline, design_matrices


def _vector(x, n: int, what: str, dtype) -> Array:
    x = jnp.asarray(x, dtype)
    if x.ndim == 0:
        x = jnp.broadcast_to(x, (n,))
    if x.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},), got {x.shape}")
    if not isinstance(x, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(x))):
        raise ValueError(f"{what} must be finite, got {np.asarray(x)}")
    return x


class BoundaryConditions(eqx.Module):
    """Boundary conditions of a motion of duration ``duration`` (``t`` from ``0`` to ``T``).

    Args:
        q_start: ``(n,)`` joint coordinates at ``t = 0``.
        q_end: ``(n,)`` joint coordinates at ``t = T``, or ``None`` to leave them free (then a
            :class:`TaskTarget` usually says where to go).
        duration: ``T > 0`` in seconds (with ``free_time``, the initial guess of a free duration).
        qd_start, qd_end: velocities at the ends (default ``0``: rest to rest); ``None`` frees them.
        qdd_start, qdd_end: accelerations at the ends (default ``0``: the torque starts and ends
            at the holding torque ``g(q)``); ``None`` frees them.

    Scalars broadcast to ``(n,)``. The values are pytree leaves (they may be traced and batched);
    which ones are fixed is static.

    Example:
        Rest to rest (the default), and the same motion with free end accelerations:

        >>> from kronjax import trajopt
        >>> bc = trajopt.BoundaryConditions([0.0, 0.0], [1.0, -0.5], 2.0)
        >>> bc.n_dof, bc.qd_end.tolist()
        (2, [0.0, 0.0])
        >>> [order for order, _ in bc.fixed("start")]  # q, qd and qdd fixed at t = 0
        [0, 1, 2]
        >>> free = trajopt.BoundaryConditions([0.0, 0.0], [1.0, -0.5], 2.0, qdd_start=None, qdd_end=None)
        >>> [order for order, _ in free.fixed("end")]
        [0, 1]
    """

    duration: Float[Array, ""]
    q_start: Float[Array, " n"]
    q_end: Float[Array, " n"] | None
    qd_start: Float[Array, " n"] | None
    qd_end: Float[Array, " n"] | None
    qdd_start: Float[Array, " n"] | None
    qdd_end: Float[Array, " n"] | None

    def __init__(
        self,
        q_start: Float[ArrayLike, " n"] | Sequence[float],
        q_end: Float[ArrayLike, " n"] | Sequence[float] | None,
        duration: Float[ArrayLike, ""],
        *,
        qd_start: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        qd_end: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        qdd_start: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        qdd_end: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
    ):
        q_start = jnp.asarray(q_start)
        if q_start.ndim != 1:
            raise ValueError(f"q_start must be an (n,) vector, got shape {q_start.shape}")
        n = q_start.shape[0]
        dtype = jnp.result_type(q_start, float)
        self.q_start = _vector(q_start, n, "q_start", dtype)
        if duration is None:
            raise ValueError(
                "duration must be a number: for a free duration, give an initial one here and pass "
                "free_time=trajopt.FreeTime(lower, upper) to optimize or transcribe, usually with a cost "
                "on the duration such as trajopt.Duration()"
            )
        self.duration = jnp.asarray(duration, dtype)
        if self.duration.shape != ():
            raise ValueError(f"duration must be a scalar, got shape {self.duration.shape}")
        if not isinstance(self.duration, jax.core.Tracer) and not float(self.duration) > 0:
            raise ValueError(f"duration must be positive, got {float(self.duration)}")
        for name, value in (
            ("q_end", q_end),
            ("qd_start", qd_start),
            ("qd_end", qd_end),
            ("qdd_start", qdd_start),
            ("qdd_end", qdd_end),
        ):
            setattr(self, name, None if value is None else _vector(value, n, name, dtype))

    @property
    def n_dof(self) -> int:
        return self.q_start.shape[0]

    def fixed(self, end: str) -> list[tuple[int, Array]]:
        """``[(derivative order, value in t)]`` fixed at ``end`` (``"start"`` or ``"end"``)."""
        values = (self.q_start, self.qd_start, self.qdd_start) if end == "start" else (self.q_end, self.qd_end, self.qdd_end)
        return [(j, v) for j, v in enumerate(values) if v is not None]


class FreeTime(eqx.Module):
    """The duration as a decision variable, between ``lower`` and ``upper`` seconds
    (``transcribe(..., free_time=FreeTime(0.1, 5.0))``); the boundary conditions' ``duration`` is
    its initial guess. Pair it with the cost :class:`Duration` for minimum time.

    Example:
        A rotor (``tau = 0.1 qdd``) from 0 to 1 rad in a free time between 0.1 s and 5 s; the last
        two inequalities of :meth:`Problem.evaluate` are the bounds on ``T``, ``(lower - T) /
        lower`` and ``(T - upper) / upper``, here at the initial guess ``T = 1``:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0)
        >>> problem = trajopt.transcribe(rotor, bc, trajopt.Duration(), num_control_points=9,
        ...                              free_time=trajopt.FreeTime(0.1, 5.0))
        >>> f, g, h = problem.evaluate(problem.initial_guess())
        >>> print(float(f), np.round(g[-2:], 6))
        1.0 [-9.  -0.8]
    """

    lower: float
    upper: float

    def __check_init__(self):
        if not 0 < self.lower < self.upper:
            raise ValueError(f"FreeTime needs 0 < lower < upper, got lower={self.lower}, upper={self.upper}")


def _limit_scales(limits: JointLimits, margin: float, dtype):
    """Finite-safe limits and masks: ``(lower, upper, pos_scale, lo_mask, up_mask, vel, vel_mask,
    eff, eff_mask)``, with the limits shrunk by ``margin`` (a fraction of each limit)."""
    lower, upper = limits.lower.astype(dtype), limits.upper.astype(dtype)
    pos_mask = jnp.isfinite(lower) & jnp.isfinite(upper)
    span = jnp.where(pos_mask, upper - lower, 1.0)
    span = jnp.where(span > 0, span, 1.0)
    lo_mask, up_mask = jnp.isfinite(lower), jnp.isfinite(upper)
    lower = jnp.where(lo_mask, lower, 0.0) + margin * span
    upper = jnp.where(up_mask, upper, 0.0) - margin * span
    scale = jnp.where(pos_mask, span, jnp.where(up_mask, jnp.abs(upper), jnp.abs(lower)))
    scale = jnp.where(scale > 0, scale, 1.0)
    vel, eff = limits.velocity.astype(dtype), limits.effort.astype(dtype)
    vel_mask, eff_mask = jnp.isfinite(vel), jnp.isfinite(eff)
    vel = jnp.where(vel_mask, vel, 1.0) * (1.0 - margin)
    eff = jnp.where(eff_mask, eff, 1.0) * (1.0 - margin)
    return lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask


class Problem(eqx.Module):
    """The transcribed problem (:func:`transcribe`): ``minimise objective(z)`` subject to
    ``constraints(z) <= 0``, with ``z`` (``(m_free, n)``) the free control points.

    Attributes:
        model, boundary, cost, limits: as given.
        degree, num_control_points: the spline.
        free: static indices of the free control points (the others are fixed by ``boundary``).
        design: ``(4, K, m)``: ``d^j/ds^j`` of the basis at the samples, ``j = 0..3``.
        end_rows: ``(2, 3, m)``: ``d^j/ds^j`` of the basis at ``s = 0`` and ``s = 1``.
        s, weights: ``(K,)`` normalised sample times and quadrature weights (``sum = 1``).
        preconditioner, preconditioner_inverse: ``(m_free, m_free)``: the solver works in
            ``w`` with ``z = P w``, ``P = L^-T`` from the Cholesky factor ``L`` of the Gram matrix
            of the acceleration ``int (d^2 q / ds^2)^2 ds`` as a quadratic form of one joint's
            free control points, so that ``int |qdd|^2 dt`` is ``|w|^2`` up to a constant: the
            torque effort, ``M qdd + ...`` squared, becomes well conditioned.
        method: inverse-dynamics method.
        margin: limits shrunk by this fraction.
        extra_constraints: the ``constraints`` given to :func:`transcribe` (:class:`AvoidSpheres`,
            :class:`TaskConstraint`, ...).
        free_time: a :class:`FreeTime` where the duration is a decision variable (then
            ``boundary.duration`` is only its initial guess), else ``None``.

    Example:
        A rotor (``tau = 0.1 qdd``) from rest at 0 to rest at 1 rad in 1 s: of its 9 control
        points the boundary conditions fix 6 (``q``, ``qd``, ``qdd`` at each end), 3 are free.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0)
        >>> problem = trajopt.transcribe(rotor, bc, trajopt.TorqueEffort(), num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion
        >>> problem.shape, problem.free, problem.control_points(z).shape
        ((3, 1), (3, 4, 5), (9, 1))
        >>> q, qd, qdd = problem.trajectory(z)(1.0)  # at t = T: the boundary conditions
        >>> float(q[0]), bool(np.allclose([qd[0], qdd[0]], 0.0, atol=1e-9))
        (1.0, True)
        >>> f, g, h = problem.evaluate(z)  # 6 K n limit rows (K = 53 samples; -1: unlimited), no equalities
        >>> g.shape, h.shape
        ((318,), (0,))
    """

    model: Model
    boundary: BoundaryConditions
    cost: AbstractCost
    limits: JointLimits
    design: Float[Array, "4 K m"]
    end_rows: Float[Array, "2 3 m"]
    s: Float[Array, " K"]
    weights: Float[Array, " K"]
    preconditioner: Float[Array, "f f"]
    preconditioner_inverse: Float[Array, "f f"]
    degree: int = eqx.field(static=True)
    num_control_points: int = eqx.field(static=True)
    free: tuple[int, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)
    margin: float = eqx.field(static=True)
    extra_constraints: tuple[AbstractConstraint, ...] = ()
    free_time: FreeTime | None = None

    @property
    def n_dof(self) -> int:
        return self.boundary.n_dof

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the decision variable ``z``: ``(m_free, n)``."""
        return (len(self.free), self.n_dof)

    def control_points(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, "m n"]:
        """All control points: ``z`` at the free indices; at each end, those fixed by the boundary
        conditions by forward substitution (derivative ``j`` at an end involves the ``j + 1``
        nearest control points, the ``j``-th with a non-zero coefficient)."""
        z = jnp.asarray(z)
        if z.shape != self.shape:
            raise ValueError(f"z must have shape {self.shape}, got {z.shape}")
        m, bc = self.num_control_points, self.boundary
        c = jnp.zeros((m, self.n_dof), z.dtype).at[np.asarray(self.free, dtype=int)].set(z)
        for side, end in ((0, "start"), (1, "end")):
            rows = self.end_rows[side].astype(z.dtype)
            for j, value in bc.fixed(end):
                index = j if side == 0 else m - 1 - j
                others = [i for i in range(j + 1) if i != j] if side == 0 else [m - 1 - i for i in range(j)]
                rhs = value.astype(z.dtype) * bc.duration.astype(z.dtype) ** j
                for i in others:
                    rhs = rhs - rows[j, i] * c[i]
                c = c.at[index].set(rhs / rows[j, index])
        return c

    def trajectory(self, z: Float[ArrayLike, "m_free n"]) -> BSpline:
        """The :class:`BSpline` of the decision variables ``z``."""
        return BSpline(self.control_points(z), self.boundary.duration.astype(z.dtype), self.degree)

    @eqx.filter_jit
    def samples(self, z: Float[ArrayLike, "m_free n"]) -> Samples:
        """The trajectory, its derivatives and the inverse-dynamics torques at the samples."""
        return self._samples(z)

    def _samples(self, z, torques=None, control_points=None) -> Samples:
        """:meth:`samples` with the torques from ``torques(q, qd, qdd)`` (``(K, n)`` each; default
        :meth:`_torques`: the interior-point method's Gauss-Newton Hessian linearises them), from
        ``z``'s ``control_points`` where they are at hand."""
        c = self.control_points(z) if control_points is None else control_points
        dtype = c.dtype
        duration = self.boundary.duration.astype(dtype)
        design = self.design.astype(dtype)
        q, qd, qdd, qddd = (design[j] @ c / duration**j for j in range(4))
        tau = (self._torques if torques is None else torques)(q, qd, qdd)
        return Samples(self.s.astype(dtype) * duration, self.weights.astype(dtype) * duration, q, qd, qdd, qddd, tau, duration)

    def _torques(self, q, qd, qdd, derivatives: str | None = None):
        """The inverse dynamics at the samples (``(K, n)`` each), by the problem's ``method``,
        differentiated as ``derivatives`` says (default :func:`_derivatives`)."""
        model, derivatives = self.model, derivatives or _derivatives(self.model)
        return jax.vmap(lambda q, qd, qdd: inverse_dynamics(model, q, qd, qdd, method=self.method, derivatives=derivatives))(
            q, qd, qdd
        )

    @eqx.filter_jit
    def objective(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, ""]:
        """The cost ``f(z)``."""
        return self.cost(self.model, self.trajectory(z), self.samples(z))

    def _constraints_from(self, samples: Samples) -> Array:
        dtype = samples.q.dtype
        lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask = _limit_scales(self.limits, self.margin, dtype)
        inactive = jnp.asarray(-1.0, dtype)
        parts = [
            jnp.where(up_mask, (samples.q - upper) / scale, inactive),
            jnp.where(lo_mask, (lower - samples.q) / scale, inactive),
            jnp.where(vel_mask, samples.qd / vel - 1.0, inactive),
            jnp.where(vel_mask, -samples.qd / vel - 1.0, inactive),
            jnp.where(eff_mask, samples.tau / eff - 1.0, inactive),
            jnp.where(eff_mask, -samples.tau / eff - 1.0, inactive),
        ]
        return jnp.concatenate([p.reshape(-1) for p in parts])

    def at_duration(self, duration: Float[ArrayLike, ""]) -> Problem:
        """The same problem with the duration ``duration`` (where it is a decision variable)."""
        return eqx.tree_at(lambda p: p.boundary.duration, self, jnp.asarray(duration, self.boundary.duration.dtype))

    @eqx.filter_jit
    def evaluate(self, z: Float[ArrayLike, "m_free n"]) -> tuple[Float[Array, ""], Float[Array, " c"], Float[Array, " e"]]:
        """``(f, g, h)`` from one evaluation of the samples: the cost, the inequalities
        ``g <= 0`` and the equalities ``h = 0``.

        ``g`` is, in this order: the limits at every sample and joint (``(6 K n,)``: position upper
        and lower, velocity + and -, torque + and -, relative to the limit, ``-1`` where
        unlimited); each inequality of ``extra_constraints``; with ``free_time``, ``(lower - T) / lower``
        and ``(T - upper) / upper``. ``h`` holds the equality constraints' values (``(0,)`` if none).
        """
        return self._evaluate(z)

    def _evaluate(self, z, torques=None):
        """:meth:`evaluate` with the torques from ``torques`` (:meth:`_samples`)."""
        trajectory = self.trajectory(z)
        samples = self._samples(z, torques, trajectory.control_points)
        f = self.cost(self.model, trajectory, samples)
        g = [self._constraints_from(samples)]
        h = [jnp.zeros(0, samples.q.dtype)]
        for constraint in self.extra_constraints:
            (h if constraint.equality else g).append(jnp.ravel(constraint(self.model, trajectory, samples)))
        if self.free_time is not None:
            duration = samples.duration
            g.append(jnp.stack([1.0 - duration / self.free_time.lower, duration / self.free_time.upper - 1.0]))
        return f, jnp.concatenate(g), jnp.concatenate(h)

    def _counts(self, z) -> tuple[int, int]:
        """The lengths of :meth:`evaluate`'s ``g`` and ``h`` at ``z``'s shape: counted, or from
        ``jax.eval_shape`` where there are ``extra_constraints`` (tracing the evaluation for its
        shapes took 0.2 s of the Panda's first solve)."""
        if self.extra_constraints:
            _, g, h = jax.eval_shape(self.evaluate, z)
            return g.shape[0], h.shape[0]
        return 6 * self.s.shape[0] * self.n_dof + (2 if self.free_time is not None else 0), 0

    def constraint_name(self, index: int, equality: bool = False) -> str:
        """What row ``index`` of the inequalities ``g`` (or, with ``equality``, of ``h``) of
        :meth:`evaluate` constrains, in words (for the solvers' reports).

        Example:
            The rows of a rotor's problem (``K = 53`` samples, one joint): the position upper
            limits come first, one per sample, then the lower ones, the velocity and the torque
            limits:

            >>> import kronjax as kj
            >>> from kronjax import trajopt
            >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), effort=1.0)], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
            >>> problem = trajopt.transcribe(rotor, trajopt.BoundaryConditions([0.0], [1.0], 1.0), trajopt.TorqueEffort(),
            ...                              num_control_points=9)
            >>> problem.constraint_name(0), problem.constraint_name(4 * 53 + 26)
            ('the upper position limit of joint1 at t = 0 s', 'the upper torque limit of joint1 at t = 0.5 s')
        """
        count, n = self.s.shape[0], self.n_dof
        if not equality and index < 6 * count * n:
            kind, rest = divmod(index, count * n)
            sample, joint = divmod(rest, n)
            limit = ("upper position", "lower position", "upper velocity", "lower velocity", "upper torque", "lower torque")[kind]
            t = float(self.s[sample] * self.boundary.duration)
            return f"the {limit} limit of {self.model.coordinate_names[joint]} at t = {t:.4g} s"
        row = index - (0 if equality else 6 * count * n)
        z = jax.ShapeDtypeStruct(self.shape, self.boundary.q_start.dtype)
        trajectory, samples = jax.eval_shape(lambda z: (self.trajectory(z), self.samples(z)), z)
        for constraint in self.extra_constraints:
            if constraint.equality != equality:
                continue
            size = jax.eval_shape(lambda t, s, c=constraint: jnp.ravel(c(self.model, t, s)), trajectory, samples).shape[0]
            if row < size:
                return f"row {row} of {type(constraint).__name__}"
            row -= size
        if not equality and self.free_time is not None and row < 2:
            return ("the lower", "the upper")[row] + " bound of free_time"
        raise IndexError(f"the problem has no {'equality' if equality else 'inequality'} constraint {index}")

    def constraints(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, " c"]:
        """``g(z) <= 0``: the inequalities of :meth:`evaluate`."""
        return self.evaluate(z)[1]

    def equalities(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, " e"]:
        """``h(z) = 0``: the equalities of :meth:`evaluate`."""
        return self.evaluate(z)[2]

    @eqx.filter_jit
    def violation(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, ""]:
        """``max(0, max g(z), max |h(z)|)``: the largest constraint violation, relative to the
        limit (or in the constraint's units)."""
        _, g, h = self.evaluate(z)
        return jnp.maximum(jnp.maximum(jnp.max(g), jnp.max(jnp.abs(h), initial=0.0)), 0.0)

    def initial_guess(self, key: Array | None = None, num: int | None = None, scale: float = 0.1) -> Array:
        """The least-squares fit of the free control points to the minimum-jerk motion
        ``q_start + (q_end - q_start)(10 s^3 - 15 s^4 + 6 s^5)`` (``q_end = q_start`` when free),
        ``(m_free, n)``. With ``key`` and ``num``: ``(num, m_free, n)`` guesses, the first one
        unperturbed and the others with Gaussian noise of ``scale`` times the joint's travel
        (or ``scale`` rad where the travel is zero)."""
        z0 = _minimum_jerk_fit(self)
        if key is None:
            return z0
        if num is None:
            raise ValueError("give num (the number of guesses) together with key")
        bc = self.boundary
        q_end = bc.q_start if bc.q_end is None else bc.q_end
        travel = jnp.abs(q_end - bc.q_start)
        travel = jnp.where(travel > 0, travel, 1.0)
        noise = scale * travel * jax.random.normal(key, (num, *self.shape), z0.dtype)
        return z0 + noise.at[0].set(0.0)


def _derivatives(model: Model) -> str:
    """How the solvers differentiate the inverse dynamics through :meth:`Problem.evaluate`
    (:func:`~kronjax.inverse_dynamics`'s ``derivatives``): gradients (the augmented Lagrangian) and
    forward-over-reverse Hessians of scalars of ``tau`` (the interior-point method's exact
    Hessians), where JAX's own derivatives of the recursion beat the analytic Jacobian rules (the
    Panda's and the UR5's exact-Hessian solves 2.5x faster); but those programs hold a copy of the
    recursion per unbranched run of bodies, and on a branched tree they compile several times
    slower: the rules there. (The interior-point method's default Gauss-Newton Hessians take the
    torques' Jacobians from the rules.)"""
    tree = model.kinematics
    return "autodiff" if isinstance(tree, Tree) and len(schedule(tree).spans) == 1 else "analytic"


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


@eqx.filter_jit
def _minimum_jerk_fit(problem: Problem) -> Array:
    """Least-squares fit of the free control points to the minimum-jerk motion (see
    :meth:`Problem.initial_guess`). ``q`` at the samples is affine in ``z``,
    ``q(z) = q(0) + A z`` (a fixed control point may depend on free ones at an end whose ``q`` is
    free), so this is one linear least-squares problem."""
    bc = problem.boundary
    dtype = bc.q_start.dtype
    q_end = bc.q_start if bc.q_end is None else bc.q_end
    s = problem.s.astype(dtype)
    target = bc.q_start + (q_end - bc.q_start) * (10 * s**3 - 15 * s**4 + 6 * s**5)[:, None]

    def positions(z):
        return problem.design[0].astype(dtype) @ problem.control_points(z)

    zero = jnp.zeros(problem.shape, dtype)
    a = jax.jacfwd(positions)(zero).reshape(target.size, zero.size)
    return jnp.linalg.lstsq(a, (target - positions(zero)).reshape(-1))[0].reshape(problem.shape)


def transcribe(
    model: Model,
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
) -> Problem:
    """The :class:`Problem` of moving ``model`` within ``boundary`` at least ``cost``.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        boundary: the :class:`BoundaryConditions`.
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
            the fast one), ``"kron"`` (the papers' ``M qdd + C* (qd ⊗ qd) + g``), ``"lagrangian"``.
            On a serial chain the solvers differentiate it by JAX's own derivatives
            (``derivatives="autodiff"``), on a branched tree by the analytic rules.
        limits: the joint limits (default ``model.limits``, unlimited where the model has none).
        margin: shrink every limit by this fraction (a safety margin for the samples).
        constraints: further constraints on the motion (:class:`AvoidSpheres`,
            :class:`TaskConstraint`, or your own :class:`AbstractConstraint`).
        free_time: :class:`FreeTime` to make the duration a decision variable between its bounds
            (``boundary.duration`` is then its initial guess): with the cost :class:`Duration`, the
            minimum-time problem.

    Returns:
        The :class:`Problem`, for :func:`optimize` or a solver of your own.

    Example:
        A rotor (``tau = 0.1 qdd``) from rest at 0 to rest at 1 rad in 1 s, ``m = 9`` control
        points of degree 5 (4 knot spans); the torque effort of the minimum-jerk motion (the
        initial guess) is ``0.1^2 int_0^1 qdd^2 dt = 0.01 * 120 / 7``:

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
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    require_one_dof_joints(model, "transcribe")
    if not isinstance(boundary, BoundaryConditions):
        raise TypeError(f"boundary must be a BoundaryConditions, got {type(boundary).__name__}")
    if not isinstance(cost, AbstractCost):
        raise TypeError(f"cost must be a trajopt cost (TorqueEffort(), ...), got {cost!r}")
    if method not in INVERSE_DYNAMICS_METHODS:
        raise ValueError(f"unknown inverse-dynamics method {method!r}; expected one of {INVERSE_DYNAMICS_METHODS}")
    n = model.n_dof
    if boundary.n_dof != n:
        raise ValueError(f"boundary conditions for {boundary.n_dof} joints, the model has {n}")
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
    limits = model.limits if limits is None else limits
    limits = JointLimits.unlimited(n) if limits is None else limits
    if not isinstance(limits, JointLimits) or limits.lower.shape != (n,):
        raise ValueError(f"limits must be JointLimits for {n} joint coordinates")
    _check_limits_admit_motion(model, limits)
    _check_boundary_within_limits(boundary, limits)
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
    )


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
        ("qd_start", bc.qd_start, -limits.velocity, limits.velocity),
        ("qd_end", bc.qd_end, -limits.velocity, limits.velocity),
    ]
    for name, value, lo, hi in checks:
        if value is None or isinstance(value, jax.core.Tracer) or isinstance(lo, jax.core.Tracer):
            continue
        value, lo, hi = np.asarray(value), np.asarray(lo), np.asarray(hi)
        for k in np.flatnonzero((value < lo) | (value > hi)):
            raise ValueError(f"{name}[{k}] = {value[k]} is outside the limits [{lo[k]}, {hi[k]}]: no feasible motion")
