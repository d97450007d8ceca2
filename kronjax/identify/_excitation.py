"""Excitation trajectories: finite Fourier series (Swevers et al. 1997), scaled into the joint
limits, and optimised for the condition number of the base regressor."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..chain._arrays import is_concrete
from ..chain._model import require_one_dof_joints
from ._base_parameters import BaseParameters
from ._regressor import regressor


class FourierTrajectory(eqx.Module):
    """A periodic joint trajectory, a finite Fourier series per joint (Swevers et al. 1997)::

        q_j(t)   = q0_j + sum_l  a_jl / (w_f l) sin(w_f l t) - b_jl / (w_f l) cos(w_f l t)
        qd_j(t)  =        sum_l  a_jl cos(w_f l t) + b_jl sin(w_f l t)
        qdd_j(t) =        sum_l -a_jl w_f l sin(w_f l t) + b_jl w_f l cos(w_f l t)

    ``l = 1..L`` harmonics of the fundamental ``w_f = 2 pi frequency``; the period is
    ``1 / frequency``. Periodicity lets measurements be averaged over periods and differentiated
    analytically (:meth:`fit`).

    Attributes:
        offset: ``q0``, ``(n,)``.
        sine, cosine: ``a`` and ``b``, ``(n, L)`` (amplitudes of the velocity, rad/s or m/s).
        frequency: fundamental frequency in Hz (static).

    Examples:
        Two joints, two harmonics of 0.5 Hz (period 2 s); at ``t = 0`` the velocity is ``sum_l
        a_jl``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> traj = kj.identify.FourierTrajectory(offset=[0.0, 0.5], sine=[[1.0, 0.0], [0.5, 0.2]],
        ...                                      cosine=[[0.0, 0.0], [0.0, 0.3]], frequency=0.5)
        >>> q, v, vd = traj(jnp.linspace(0.0, 4.0, 9))  # every 0.5 s over two periods
        >>> q.shape, traj.period
        ((9, 2), 2.0)
        >>> print(np.round(v[0], 6))
        [1.  0.7]
        >>> bool(jnp.allclose(q[:4], q[4:8]))  # periodic
        True

        :meth:`fit` recovers the coefficients from positions sampled over a period:

        >>> t = jnp.linspace(0.0, 2.0, 40, endpoint=False)
        >>> fitted = kj.identify.FourierTrajectory.fit(t, traj(t)[0], harmonics=2, frequency=0.5)
        >>> bool(jnp.allclose(fitted.sine, traj.sine) and jnp.allclose(fitted.cosine, traj.cosine))
        True
    """

    offset: Float[Array, " n"] = eqx.field(converter=jnp.asarray)
    sine: Float[Array, "n L"] = eqx.field(converter=jnp.asarray)
    cosine: Float[Array, "n L"] = eqx.field(converter=jnp.asarray)
    frequency: float = eqx.field(static=True, converter=float)

    def __check_init__(self):
        n = self.offset.shape
        if len(n) != 1 or self.sine.shape != self.cosine.shape or self.sine.shape[:1] != n or self.sine.ndim != 2:
            raise ValueError(
                f"FourierTrajectory needs offset (n,), sine and cosine (n, L); got {self.offset.shape}, "
                f"{self.sine.shape}, {self.cosine.shape}"
            )
        if not (self.frequency > 0 and math.isfinite(self.frequency)):
            raise ValueError(f"frequency must be positive, got {self.frequency}")

    @classmethod
    def random(
        cls, key: Array, model: Model, harmonics: int = 5, frequency: float = 0.1, velocity: float = 0.5
    ) -> FourierTrajectory:
        """Random coefficients: offsets at the middle of the position limits (0 where unlimited),
        ``a, b ~ N(0, velocity^2 / (2 L))`` (so each joint's RMS speed is about ``velocity``)."""
        n = model.nv
        ka, kb = jax.random.split(key)
        scale = velocity / math.sqrt(2 * harmonics)
        return cls(
            offset=_middle(model),
            sine=scale * jax.random.normal(ka, (n, harmonics)),
            cosine=scale * jax.random.normal(kb, (n, harmonics)),
            frequency=float(frequency),
        )

    @property
    def period(self) -> float:
        return 1.0 / self.frequency

    def __call__(self, t: Float[ArrayLike, " T"]) -> tuple[Float[Array, "T n"], Float[Array, "T n"], Float[Array, "T n"]]:
        """``(q, v, vd)``, each ``t.shape + (n,)``."""
        t = jnp.asarray(t, self.sine.dtype)
        w = 2.0 * math.pi * self.frequency * jnp.arange(1, self.sine.shape[1] + 1, dtype=self.sine.dtype)
        phase = t[..., None] * w  # (..., L)
        s, c = jnp.sin(phase), jnp.cos(phase)
        q = self.offset + (s / w) @ self.sine.T - (c / w) @ self.cosine.T
        v = c @ self.sine.T + s @ self.cosine.T
        vd = (-s * w) @ self.sine.T + (c * w) @ self.cosine.T
        return q, v, vd

    @classmethod
    def fit(cls, t: Float[ArrayLike, " T"], q: Float[ArrayLike, "T n"], harmonics: int, frequency: float) -> FourierTrajectory:
        """The series of ``harmonics`` harmonics of ``frequency`` closest (least squares) to measured
        positions ``q`` at times ``t``: how noisy encoder readings of a periodic excitation are
        filtered and differentiated analytically (Swevers et al. 1997, sec. IV)."""
        t, q = jnp.asarray(t), jnp.asarray(q)
        if q.ndim != 2 or t.shape != q.shape[:1]:
            raise ValueError(f"t (T,) and q (T, n) must match, got {t.shape} and {q.shape}")
        w = 2.0 * math.pi * frequency * jnp.arange(1, harmonics + 1, dtype=q.dtype)
        phase = t[:, None] * w
        basis = jnp.concatenate([jnp.ones_like(t)[:, None], jnp.sin(phase) / w, -jnp.cos(phase) / w], axis=1)
        coef = jnp.linalg.lstsq(basis, q)[0]
        return cls(coef[0], coef[1 : 1 + harmonics].T, coef[1 + harmonics :].T, float(frequency))


def _middle(model: Model) -> Array:
    if model.limits is None:
        return jnp.zeros(model.nv)
    lower, upper = model.limits.lower, model.limits.upper
    return jnp.where(
        jnp.isfinite(lower) & jnp.isfinite(upper),
        0.5 * (lower + upper),
        jnp.where(jnp.isfinite(lower), lower + 1.0, jnp.where(jnp.isfinite(upper), upper - 1.0, 0.0)),
    )


def _limit_arrays(model: Model, acceleration, dtype):
    n = model.nv
    inf = jnp.full(n, jnp.inf, dtype)
    lim = model.limits
    lower, upper, velocity = (-inf, inf, inf) if lim is None else (lim.lower, lim.upper, lim.velocity)
    acc = inf if acceleration is None else jnp.broadcast_to(jnp.asarray(acceleration, dtype), (n,))
    if is_concrete(acc) and not bool(jnp.all(acc > 0)):
        raise ValueError(f"acceleration limits must be positive, got {acc}")
    return lower.astype(dtype), upper.astype(dtype), velocity.astype(dtype), acc


def _check_excitable(model: Model, what: str) -> None:
    """Refuse limits that leave a joint no motion: a position range of one point or none
    (``lower >= upper``) or a zero velocity limit. Such a joint cannot be excited, and scaling
    its harmonics to fit would silently give a trajectory that keeps it still. Skipped when the
    limits are traced (the caller's ``jit``)."""
    lim = model.limits
    if lim is None or not is_concrete(lim.lower, lim.upper, lim.velocity):
        return
    lower, upper, velocity = (np.asarray(x) for x in (lim.lower, lim.upper, lim.velocity))
    names = model.coordinate_names
    for k in range(model.nv):
        if not lower[k] < upper[k]:
            problem = f"a position range of zero width ([{lower[k]:g}, {upper[k]:g}])"
        elif not velocity[k] > 0:
            problem = f"a velocity limit of {velocity[k]:g}"
        else:
            continue
        raise ValueError(
            f"{what}: joint {names[k]!r} (coordinate {k}) has {problem}, so it cannot move and no "
            "excitation can be designed for it. Give it real limits (a URDF <limit> of zeros usually "
            "means 'not set': load the file without strict_limits), or fix the joint in the model."
        )


def fit_to_limits(
    model: Model,
    trajectory: FourierTrajectory,
    *,
    acceleration: Float[ArrayLike, " n"] | float | None = None,
    margin: float = 0.0,
    samples: int = 1000,
) -> FourierTrajectory:
    """The trajectory moved and scaled, per joint, to stay within the joint limits.

    For each joint the offset is clipped into the position range and the harmonics scaled by the
    largest ``s <= 1`` that keeps ``q`` within ``[lower, upper]`` (shrunk by ``margin`` times the
    range), ``|v| <= velocity`` (``model.limits``) and ``|vd| <= acceleration`` (per joint or
    scalar; ``model.limits`` has no acceleration limits) at ``samples`` instants evenly spread over
    one period (the trajectory is periodic; between them a limit can be exceeded by about
    ``(period / samples)^2 / 8`` times the next derivative's peak). Scaling the harmonics by ``s``
    scales the motion about the offset, the velocity and the acceleration by ``s``. Jit-able.

    Args:
        model: the :class:`~kronjax.chain.Model` (its ``limits``).
        trajectory: the :class:`FourierTrajectory` to fit.
        acceleration: ``(n,)`` or scalar acceleration limits; ``None``: none.
        margin: the fraction of each joint's range kept free at both ends.
        samples: the number of instants checked over one period.

    Returns:
        The fitted :class:`FourierTrajectory`.

    Raises:
        ValueError: naming the joint, when a joint's position range has zero width
            (``lower >= upper``) or its velocity limit is 0 (checked when the limits are concrete,
            not traced).

    Example:
        A joint limited to ``|q| <= 1`` rad and ``|v| <= 2`` rad/s, and ``|vd| <= 5`` rad/s^2,
        and a trajectory far too large: scaled down until the tightest limit, here the
        acceleration, is met.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> wide = kj.identify.FourierTrajectory(offset=[0.0], sine=[[3.0, 1.0]], cosine=[[0.0, 2.0]], frequency=0.5)
        >>> fitted = kj.identify.fit_to_limits(model, wide, acceleration=5.0)
        >>> q, v, vd = fitted(jnp.linspace(0.0, fitted.period, 1000, endpoint=False))  # the instants it checks
        >>> bool(np.abs(q).max() <= 1.0 and np.abs(v).max() <= 2.0)
        True
        >>> print(np.round(float(np.abs(vd).max()), 6))
        5.0
    """
    require_one_dof_joints(model, "fit_to_limits")
    _check_excitable(model, "fit_to_limits")
    return _fit_to_limits(model, trajectory, acceleration, margin, int(samples))


@eqx.filter_jit
def _fit_to_limits(model, trajectory, acceleration, margin, samples: int) -> FourierTrajectory:
    times = jnp.arange(samples, dtype=trajectory.sine.dtype) * (trajectory.period / samples)
    lower, upper, velocity, acc = _limit_arrays(model, acceleration, trajectory.sine.dtype)
    shrink = margin * jnp.where(jnp.isfinite(upper - lower), upper - lower, 0.0)
    lower, upper = lower + shrink, upper - shrink
    offset = jnp.clip(trajectory.offset, lower, upper)
    q, v, vd = eqx.tree_at(lambda tr: tr.offset, trajectory, jnp.zeros_like(offset))(times)
    tiny = jnp.finfo(q.dtype).tiny
    ratios = jnp.stack(
        [
            (upper - offset) / jnp.maximum(jnp.max(q, axis=0), tiny),
            (offset - lower) / jnp.maximum(jnp.max(-q, axis=0), tiny),
            velocity / jnp.maximum(jnp.max(jnp.abs(v), axis=0), tiny),
            acc / jnp.maximum(jnp.max(jnp.abs(vd), axis=0), tiny),
        ]
    )
    s = jnp.minimum(1.0, jnp.min(ratios, axis=0))[:, None]
    return FourierTrajectory(offset, trajectory.sine * s, trajectory.cosine * s, trajectory.frequency)


@eqx.filter_jit
def condition_number(
    model: Model,
    trajectory: FourierTrajectory,
    times: Float[ArrayLike, " T"],
    base: BaseParameters,
    *,
    friction: bool = False,
    armature: bool = False,
) -> Float[Array, ""]:
    """Condition number ``s_max / s_min`` of the base regressor stacked over the samples of the
    trajectory at ``times`` (Gautier and Khalil 1992; Swevers et al. 1997): the criterion an
    excitation trajectory minimises. Jit-able and differentiable in the trajectory.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        trajectory: the :class:`FourierTrajectory`.
        times: ``(T,)`` the instants sampled.
        base: the :class:`BaseParameters` of the model (with the same ``friction`` and ``armature``).
        friction: with the friction columns.
        armature: with the rotor-inertia columns.

    Returns:
        ``()``: ``s_max / s_min``.

    Example:
        A pendulum (3 base parameters: ``m c_x``, ``m c_y``, ``Izz``) on a random excitation of
        3 harmonics of 0.5 Hz, sampled 25 times over its period:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> base = kj.identify.base_parameters(model)
        >>> traj = kj.identify.FourierTrajectory.random(jax.random.PRNGKey(0), model, harmonics=3, frequency=0.5)
        >>> times = jnp.linspace(0.0, 2.0, 25, endpoint=False)
        >>> base.rank, bool(kj.identify.condition_number(model, traj, times, base) >= 1.0)
        (3, True)
    """
    require_one_dof_joints(model, "condition_number")
    q, v, vd = trajectory(times)
    w = base.regressor(regressor(model, q, v, vd, friction=friction, armature=armature)).reshape(-1, base.rank)
    s = jnp.linalg.svd(w, compute_uv=False)
    return s[0] / s[-1]


def optimize_excitation(
    model: Model,
    trajectory: FourierTrajectory,
    times: Float[ArrayLike, " T"],
    base: BaseParameters,
    *,
    friction: bool = False,
    armature: bool = False,
    acceleration: Float[ArrayLike, " n"] | float | None = None,
    margin: float = 0.0,
    steps: int = 100,
    learning_rate: float = 0.02,
    optimizer: optax.GradientTransformation | None = None,
) -> tuple[FourierTrajectory, Float[Array, " steps"]]:
    """An excitation trajectory: Fourier coefficients that minimise the condition number of the
    stacked base regressor (:func:`condition_number`) within the joint limits (Swevers et al.
    1997).

    Projected gradient descent on ``log cond``: an optax step (Adam with ``learning_rate`` by
    default) on the offsets and coefficients, then :func:`fit_to_limits` (position, velocity and
    ``acceleration`` limits over a period), so that every iterate -- the start included -- is
    feasible. The best iterate is returned. ``times`` are the instants at which the regressor is
    sampled (the condition number's rows).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        trajectory: the starting :class:`FourierTrajectory`.
        times: ``(T,)`` the instants sampled.
        base: the :class:`BaseParameters` of the model.
        friction: with the friction columns.
        armature: with the rotor-inertia columns.
        acceleration: ``(n,)`` or scalar acceleration limits; ``None``: none.
        margin: as in :func:`fit_to_limits`.
        steps: the number of optimisation steps.
        learning_rate: Adam's step size (when ``optimizer`` is ``None``).
        optimizer: an optax transformation; ``None``: ``optax.adam(learning_rate)``.

    Returns:
        ``(trajectory, history)``: the optimised trajectory and the condition number of each
        iterate (the first entry is that of the feasible start).

    Raises:
        ValueError: naming the joint, as :func:`fit_to_limits`, when a joint's limits leave it no
            motion.

    Example:
        A pendulum (3 base parameters: ``m c_x``, ``m c_y``, ``Izz``) limited to ``|q| <= 1``
        rad and ``|v| <= 2`` rad/s, from a random start of 3 harmonics of 0.5 Hz, 20 steps:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1), lower=-1.0, upper=1.0, velocity=2.0)],
        ...                        [kj.Inertial(mass=1.0, com=(0.3, 0.0, 0.0), inertia=(0.01, 0.02, 0.02))],
        ...                        gravity=(0, -9.81, 0))
        >>> base = kj.identify.base_parameters(model)
        >>> start = kj.identify.FourierTrajectory.random(jax.random.PRNGKey(0), model, harmonics=3, frequency=0.5)
        >>> times = jnp.linspace(0.0, 2.0, 25, endpoint=False)  # the regressor's instants over a period
        >>> best, history = kj.identify.optimize_excitation(model, start, times, base, steps=20)
        >>> history.shape, bool(history.min() < history[0])  # condition numbers: the start's, then every step's
        ((21,), True)
    """
    require_one_dof_joints(model, "optimize_excitation")
    _check_excitable(model, "optimize_excitation")
    times = jnp.asarray(times, trajectory.sine.dtype)
    opt = _ADAM if optimizer is None else optimizer
    rate = jnp.asarray(learning_rate, times.dtype)
    return _optimize_excitation(model, trajectory, times, base, (friction, armature), acceleration, margin, opt, rate, int(steps))


# one Adam for every call (a new optax object would recompile); its learning rate is set per call
_ADAM = optax.inject_hyperparams(optax.adam)(learning_rate=0.02)


def _init_state(opt, params, rate):
    state = opt.init(params)
    if opt is _ADAM:
        state = state._replace(hyperparams={**state.hyperparams, "learning_rate": rate})
    return state


@eqx.filter_jit
def _optimize_excitation(model, trajectory, times, base, columns, acceleration, margin, opt, rate, steps):
    friction, armature = columns
    project = lambda tr: _fit_to_limits(model, tr, acceleration, margin, 1000)  # noqa: E731
    cost = lambda tr: jnp.log(condition_number(model, tr, times, base, friction=friction, armature=armature))  # noqa: E731
    start = project(trajectory)
    params, static = eqx.partition(start, eqx.is_inexact_array)

    def step(carry, _):
        params, state, best, best_cost = carry
        value, grad = jax.value_and_grad(lambda p: cost(eqx.combine(p, static)))(params)
        better = value < best_cost
        best = jax.tree.map(lambda b, p: jnp.where(better, p, b), best, params)
        best_cost = jnp.where(better, value, best_cost)
        updates, state = opt.update(grad, state, params)
        params = eqx.partition(project(eqx.combine(optax.apply_updates(params, updates), static)), eqx.is_inexact_array)[0]
        return (params, state, best, best_cost), jnp.exp(value)

    init = (params, _init_state(opt, params, rate), params, jnp.asarray(jnp.inf, times.dtype))
    (params, _, best, best_cost), history = jax.lax.scan(step, init, None, length=steps)
    last = cost(eqx.combine(params, static))
    best = jax.tree.map(lambda b, p: jnp.where(last < best_cost, p, b), best, params)
    return eqx.combine(best, static), jnp.append(history, jnp.exp(last))
