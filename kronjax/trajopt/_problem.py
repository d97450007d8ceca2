"""The transcribed problem, :class:`Problem` (``minimise objective(z)`` subject to ``constraints(z)
<= 0``, ``z`` the free control points): the spline of ``z``, the samples where the costs are
integrated and the limits imposed, the limits as scaled constraints, and the initial guess.
:func:`~kronjax.trajopt.transcribe` builds it.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_attribute
from .._spatial.traversal import schedule
from ..chain import JointLimits, Model, Tree
from ..configuration import one_dof_coordinates
from ..constrained import CoordinatePartition
from ..dynamics import inverse_dynamics
from ._boundary import BoundaryConditions, FreeTime
from ._closed_chain import closed_chain_samples
from ._constraints import AbstractConstraint
from ._costs import AbstractCost, Samples
from ._spline import BSpline


def limit_scales(limits: JointLimits, margin: float, dtype):
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
            free control points, so that ``int |vd|^2 dt`` is ``|w|^2`` up to a constant: the
            torque effort, ``M vd + ...`` squared, becomes well conditioned.
        method: inverse-dynamics method.
        margin: limits shrunk by this fraction.
        extra_constraints: the ``constraints`` given to :func:`transcribe` (:class:`AvoidSpheres`,
            :class:`TaskConstraint`, ...).
        free_time: a :class:`FreeTime` where the duration is a decision variable (then
            ``boundary.duration`` is only its initial guess), else ``None``.
        partition: for a closed chain, the :class:`~kronjax.constrained.CoordinatePartition`
            whose independent coordinates are the actuated ones: the spline moves them (``n`` of
            them), the samples hold every coordinate of ``model`` (``q`` ``(K, nq)``, ``v``,
            ``vd``, ``vdd``, ``tau`` ``(K, nv)``, ``tau`` zero at the passive joints) and the limits
            are those of every coordinate. ``None`` for an open tree.

    Example:
        A rotor (``tau = 0.1 vd``) from rest at 0 to rest at 1 rad in 1 s: of its 9 control
        points the boundary conditions fix 6 (``q``, ``v``, ``vd`` at each end), 3 are free.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> from kronjax import trajopt
        >>> rotor = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [kj.Inertial(mass=1.0, inertia=(0.1, 0.1, 0.1))])
        >>> bc = trajopt.BoundaryConditions([0.0], [1.0], 1.0)
        >>> problem = trajopt.transcribe(rotor, bc, trajopt.TorqueEffort(), num_control_points=9)
        >>> z = problem.initial_guess()  # the minimum-jerk motion
        >>> problem.shape, problem.free, problem.control_points(z).shape
        ((3, 1), (3, 4, 5), (9, 1))
        >>> q, v, vd = problem.trajectory(z)(1.0)  # at t = T: the boundary conditions
        >>> float(q[0]), bool(np.allclose([v[0], vd[0]], 0.0, atol=1e-9))
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
    partition: CoordinatePartition | None = None

    @property
    def nv(self) -> int:
        """The number of joints ``n`` that the spline moves (a closed chain's actuated ones)."""
        return self.boundary.nv

    n_dof = renamed_attribute("n_dof", "nv", "Problem")

    @property
    def linearised_sizes(self) -> tuple[int, int]:
        """``(s, y)``: the sizes of a sample's state and of the outputs that the interior point's
        Gauss-Newton model linearises in it (``_linearisation``): ``(3n, n)``, the torques in
        ``(q, v, vd)``; on a closed chain ``(4n, nq + 4 nv)``, every coordinate's ``(q, v, vd,
        vdd, tau)`` in the actuated joints' ``(q, v, vd, vdd)``."""
        if self.partition is None:
            return 3 * self.nv, self.nv
        return 4 * self.nv, self.model.nq + 4 * self.model.nv

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the decision variable ``z``: ``(m_free, n)``."""
        return (len(self.free), self.nv)

    def control_points(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, "m n"]:
        """All control points: ``z`` at the free indices; at each end, those fixed by the boundary
        conditions by forward substitution (derivative ``j`` at an end involves the ``j + 1``
        nearest control points, the ``j``-th with a non-zero coefficient)."""
        z = jnp.asarray(z)
        if z.shape != self.shape:
            raise ValueError(f"z must have shape {self.shape}, got {z.shape}")
        m, bc = self.num_control_points, self.boundary
        c = jnp.zeros((m, self.nv), z.dtype).at[np.asarray(self.free, dtype=int)].set(z)
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
        """:meth:`samples` with the torques from ``torques(q, v, vd)`` (``(K, n)`` each; default
        :meth:`_torques`: the interior-point method's Gauss-Newton Hessian linearises them), from
        ``z``'s ``control_points`` where they are at hand. On a closed chain ``torques`` maps the
        actuated joints' ``(q, v, vd, vdd)`` to every coordinate's ``(q, v, vd, vdd, tau)``
        (default :func:`closed_chain_samples`), all of which the Gauss-Newton Hessian linearises."""
        c = self.control_points(z) if control_points is None else control_points
        dtype = c.dtype
        duration = self.boundary.duration.astype(dtype)
        design = self.design.astype(dtype)
        q, v, vd, vdd = (design[j] @ c / duration**j for j in range(4))
        if self.partition is None:
            tau = (self._torques if torques is None else torques)(q, v, vd)
        else:
            q, v, vd, vdd, tau = (self._closed_chain_samples if torques is None else torques)(q, v, vd, vdd)
        return Samples(self.s.astype(dtype) * duration, self.weights.astype(dtype) * duration, q, v, vd, vdd, tau, duration)

    def _torques(self, q, v, vd, derivatives: str | None = None):
        """The inverse dynamics at the samples (``(K, n)`` each), by the problem's ``method``,
        differentiated as ``derivatives`` says (default :func:`_derivatives`)."""
        model, derivatives = self.model, derivatives or _derivatives(self.model)
        return jax.vmap(lambda q, v, vd: inverse_dynamics(model, q, v, vd, method=self.method, derivatives=derivatives))(q, v, vd)

    def _closed_chain_samples(self, q, v, vd, vdd):
        """A closed chain's :func:`closed_chain_samples` by the problem's ``method``."""
        return closed_chain_samples(self.partition, q, v, vd, vdd, self.method, _derivatives(self.model))

    @eqx.filter_jit
    def objective(self, z: Float[ArrayLike, "m_free n"]) -> Float[Array, ""]:
        """The cost ``f(z)``."""
        return self.cost(self.model, self.trajectory(z), self.samples(z))

    def _constraints_from(self, samples: Samples) -> Array:
        dtype = samples.q.dtype
        lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask = limit_scales(self.limits, self.margin, dtype)
        inactive = jnp.asarray(-1.0, dtype)
        columns = _position_columns(self.model)
        q = samples.q if columns == tuple(range(samples.q.shape[1])) else samples.q[:, jnp.asarray(columns)]
        parts = [
            jnp.where(up_mask, (q - upper) / scale, inactive),
            jnp.where(lo_mask, (lower - q) / scale, inactive),
            jnp.where(vel_mask, samples.v / vel - 1.0, inactive),
            jnp.where(vel_mask, -samples.v / vel - 1.0, inactive),
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
        return 6 * self.s.shape[0] * self.model.nv + (2 if self.free_time is not None else 0), 0

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
        count, n = self.s.shape[0], self.model.nv
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


def _position_columns(model: Model) -> tuple[int, ...]:
    """For each velocity coordinate, the column of ``q`` that its position limits bound: its own
    for a 1-DoF joint, column 0 for a free, spherical or planar joint's (whose limits
    :func:`transcribe` leaves infinite, so that no row bounds them)."""
    columns = dict(one_dof_coordinates(model))
    return tuple(columns.get(i, 0) for i in range(model.nv))


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
