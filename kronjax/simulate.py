"""Simulation: rollouts of the forward dynamics with diffrax, and torque laws (controllers).

The equations of motion (Tuan 100, Truc 44) are integrated as a first-order system in
``y = (q, qd)``::

    qdot  = qd
    qddot = M(q)^-1 (tau(t, q, qd) - C*(q) (qd ⊗ qd) - g(q))          (forward_dynamics)

with :func:`kronjax.forward_dynamics` (Cholesky of ``M``, bias by Newton-Euler). Everything is a
pure function: :func:`rollout` works under ``jax.jit`` and ``jax.vmap`` (many initial states,
many parameter sets) and is differentiable end to end (``jax.grad`` of a loss of the rollout
with respect to the initial state, a controller's gains or the model's parameters; diffrax
differentiates through the solver's steps, "discretise then optimise").

Torque laws are callables ``torque(t, q, qd) -> tau``. The builders here return equinox
Modules whose gains and reference trajectories are pytree leaves, so that they are
differentiable and do not trigger recompilation when their values change:

* :func:`feedforward` -- Truc eq. (72): ``tau = M(q_r) qdd_r + C(q_r, qd_r) qd_r + g(q_r)``;
* :func:`computed_torque` -- ``tau = M(q) (qdd_r + Kd (qd_r - qd) + Kp (q_r - q)) + C qd + g``;
* :func:`pd` -- ``tau = Kp (q_r - q) + Kd (qd_r - qd)`` (optionally ``+ g(q)``);
* :func:`open_loop` -- torques tabulated at times, linearly interpolated.

A *reference* is a callable ``t -> (q_r, qd_r, qdd_r)``, each ``(n,)``, for example a
:class:`kronjax.trajopt.BSpline` or a closed form such as Truc's (73).

Free, spherical and planar joints (``nq != nv``, :mod:`kronjax.configuration`): ``q`` lives on
a Lie group (unit quaternions, ``(cos, sin)`` pairs) and ``qd`` is the velocity ``v`` in the
tangent space (``nv`` numbers), so ``qdot = qd`` no longer holds. :func:`rollout` then integrates
in local coordinates, re-centred at every step (Hairer, Lubich, Wanner, *Geometric Numerical
Integration*, sec. IV.5; a Runge-Kutta-Munthe-Kaas method when the chart is the exponential
map): a step from ``(q0, v0)`` solves, with the user's diffrax solver unchanged, the ODE in
``z = (delta, v)`` (``nv + nv`` numbers, ``delta(t0) = 0``)::

    d(delta)/dt = chart_rate(q0, delta, v)          q = chart(q0, delta)
    dv/dt       = forward_dynamics(q, v, tau(t, q, v))

and maps the result back: ``q1 = chart(q0, delta1)``. The chart of each joint is
``R = R0 exp([delta_w])`` for its rotation (quaternion product with ``exp3``), ``p = p0 +
delta_p`` for the free joint's translation (in the parent frame), ``theta = theta0 + delta_theta``
and ``(x, y) = (x0, y0) + delta_xy`` for a planar joint, ``q0 + delta`` for revolute and prismatic
joints; so ``chart_rate`` is ``J_r(delta_w)^-1 w`` for a rotation (``J_r`` the right Jacobian of
SO(3), exactly invertible for the small ``|delta_w| = O(|w| dt)`` of a step), ``R(q) v_lin`` for
the free joint's translation, ``R(theta) v_xy`` planar, ``v`` otherwise. Why this method:

* the ODE of a step is smooth and Euclidean, so the solver keeps its order, its embedded error
  estimate and its dense output (evaluated in the chart and mapped), whatever the solver;
* every state (and every dense-output value) is a chart image, so quaternions are unit and
  ``(cos, sin)`` pairs on the circle by construction (normalised at each evaluation: to
  round-off, with no drift, over any number of steps), unlike ambient integration of
  ``qdot = q ⊗ (0, w) / 2``, whose quaternion norm drifts by the local error at every step and
  needs a projection that the error estimate does not see;
* the chart ``SO(3) x R^3`` for the free joint, rather than the ``SE(3)`` exponential of
  :func:`kronjax.configuration.integrate`, has the simpler ``dexp^-1`` (the translation is
  Euclidean) and the same order: any smooth chart, re-centred at every step, does.

The error estimate of the step, in ``delta``, is carried to the configuration numbers as
``chart(q0, delta1) - chart(q0, delta1 - err)``, so the step-size controller sees ``y = (q, v)``
as for a 1-DoF model (the FSAL stage of Tsit5 and Dopri5 is recomputed at each step: the chart
changes, one extra evaluation of the forward dynamics per step). Models whose joints are all
1-DoF integrate ``(q, qd)`` directly, as above, at no extra cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .chain import Model
from .chain._model import require_one_dof_joints
from .configuration import MovingJoints, chart, chart_rate, configuration_rate, moving_joints, unchecked_normalize
from .dynamics import INVERSE_DYNAMICS_METHODS, forward_dynamics, gravity, inverse_dynamics

__all__ = [
    "Rollout",
    "rollout",
    "DEFAULT_RTOL",
    "DEFAULT_ATOL",
    "feedforward",
    "computed_torque",
    "pd",
    "open_loop",
    "FeedForward",
    "ComputedTorque",
    "PD",
    "OpenLoop",
]

DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-8

TorqueFn = Callable[[Array, Array, Array], Array]
Reference = Callable[[Array], tuple[Array, Array, Array]]


class Rollout(NamedTuple):
    """The result of :func:`rollout`.

    Attributes:
        ts: ``(T,)`` the save times.
        q: ``(T, nq)`` configurations at ``ts`` (``q[0] = q0``, its quaternions normalised).
        qd: ``(T, nv)`` velocities at ``ts`` (``n = nq = nv`` for 1-DoF joints).
        num_steps: number of accepted solver steps.
        success: ``True`` when the solver reached ``ts[-1]`` (with ``throw=False``, a failed
            element of a ``vmap`` batch has ``False`` here instead of raising).

    Example:
        The double pendulum released at rest, saved at three times:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> out = kj.simulate.rollout(model, jnp.array([0.3, 0.7]), jnp.zeros(2), None, jnp.linspace(0.0, 0.1, 3))
        >>> out.ts.shape, out.q.shape, out.qd.shape
        ((3,), (3, 2), (3, 2))
        >>> bool(out.success) and int(out.num_steps) > 0
        True
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nq"]
    qd: Float[Array, "T nv"]
    num_steps: Int[Array, ""]
    success: Bool[Array, ""]


class _VectorField(eqx.Module):
    model: Model
    torque: TorqueFn
    passive: bool = eqx.field(static=True)

    def __call__(self, t, y, args):
        q, qd = y
        tau = jnp.asarray(self.torque(t, q, qd), q.dtype)
        return qd, forward_dynamics(self.model, q, qd, tau, passive=self.passive)


# --------------------------------------------------------------------------------------------
# Models with free, spherical or planar joints: integration in local coordinates (module doc;
# the charts are kronjax.configuration's)
# --------------------------------------------------------------------------------------------


class _ManifoldVectorField(eqx.Module):
    """``(qdot, vdot)`` in the ambient ``(nq, nv)`` layout: what diffrax's initial step-size
    heuristic evaluates; the steps use :meth:`acceleration` in local coordinates."""

    model: Model
    torque: TorqueFn
    joints: MovingJoints = eqx.field(static=True)
    passive: bool = eqx.field(static=True)

    def acceleration(self, t, q, v):
        tau = jnp.asarray(self.torque(t, q, v), v.dtype)
        return forward_dynamics(self.model, q, v, tau, passive=self.passive)

    def __call__(self, t, y, args):
        q, v = y
        return configuration_rate(self.joints, q, v), self.acceleration(t, q, v)


class _LocalField(eqx.Module):
    """The vector field of one step in ``z = (delta, v)`` around the chart centre ``q0``."""

    field: _ManifoldVectorField
    q0: Array

    def __call__(self, t, z, args):
        delta, v = z
        q = chart(self.field.joints, self.q0, delta)
        return chart_rate(self.field.joints, q, delta, v), self.field.acceleration(t, q, v)


class _ChartInterpolation(diffrax.AbstractLocalInterpolation):
    """The dense output of a step: the inner solver's, in the chart at ``q0``, mapped to ``q``."""

    t0: Float[Array, ""]
    t1: Float[Array, ""]
    q0: Array
    inner: diffrax.AbstractLocalInterpolation
    joints: MovingJoints = eqx.field(static=True)

    def evaluate(self, t0, t1=None, left: bool = True):
        if t1 is not None:
            return jax.tree.map(jnp.subtract, self.evaluate(t1, left=left), self.evaluate(t0, left=left))
        delta, v = self.inner.evaluate(t0, left=left)
        return chart(self.joints, self.q0, delta), v


class _InterpolationFactory(eqx.Module):
    inner_cls: Callable = eqx.field(static=True)
    joints: MovingJoints = eqx.field(static=True)

    def __call__(self, *, t0, t1, q0, inner):
        return _ChartInterpolation(t0, t1, q0, self.inner_cls(t0=t0, t1=t1, **inner), self.joints)


class _LocalCoordinatesSolver(diffrax.AbstractWrappedSolver):
    """A diffrax solver taking each step of ``solver`` in local coordinates (module doc). The
    state is ``y = (q, v)`` with ``q`` on the manifold; ``terms`` is an ``ODETerm`` of a
    :class:`_ManifoldVectorField`."""

    solver: diffrax.AbstractSolver
    field: _ManifoldVectorField
    # isinstance checks see the wrapped solver; diffrax's adjoints set a Runge-Kutta solver's
    # scan_kind (forward-mode autodiff, bounded while loops), here, and step passes it on
    scan_kind: str | None = None

    @property
    def term_structure(self):
        return diffrax.AbstractTerm

    @property
    def interpolation_cls(self):  # pyright: ignore
        return _InterpolationFactory(self.solver.interpolation_cls, self.field.joints)

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state
        q0, v0 = y0
        local = diffrax.ODETerm(_LocalField(self.field, q0))
        z0 = (jnp.zeros_like(v0), v0)
        inner = self.solver
        if self.scan_kind is not None:
            inner = eqx.tree_at(lambda s: s.scan_kind, inner, self.scan_kind, is_leaf=lambda x: x is None)
        # a fresh inner state: an FSAL stage of the previous step belongs to another chart
        inner_state = inner.init(local, t0, t1, z0, args)
        (delta1, v1), z_error, dense, _, result = inner.step(local, t0, t1, z0, args, inner_state, made_jump)
        joints = self.field.joints
        q1 = chart(joints, q0, delta1)
        y_error = None
        if z_error is not None:
            y_error = (q1 - chart(joints, q0, delta1 - z_error[0]), z_error[1])
        return (q1, v1), y_error, {"q0": q0, "inner": dense}, None, result

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _check_ts(ts) -> Array:
    ts = jnp.asarray(ts)
    if ts.ndim != 1 or ts.shape[0] < 2:
        raise ValueError(f"ts must be a 1-D array of at least 2 save times, got shape {ts.shape}")
    if not jnp.issubdtype(ts.dtype, jnp.floating):
        ts = ts.astype(jnp.result_type(float))
    if _is_concrete(ts):
        values = np.asarray(ts)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"ts must be finite, got {values}")
        bad = np.flatnonzero(~(np.diff(values) > 0))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"ts must be strictly increasing: ts[{k}] = {values[k]} >= ts[{k + 1}] = {values[k + 1]}")
    else:
        ts = eqx.error_if(ts, ~jnp.all(jnp.diff(ts) > 0), "rollout: ts must be strictly increasing")
    return ts


def _check_torque(torque, t, q, qd) -> None:
    if not callable(torque):
        raise TypeError(f"torque must be a callable torque(t, q, qd) -> tau, got {torque!r}")
    n = qd.shape[0]
    try:
        out = jax.eval_shape(torque, t, q, qd)
    except TypeError as err:
        raise TypeError(f"torque must be callable as torque(t, q, qd) -> tau (shape ({n},)): {err}") from err
    shape = getattr(out, "shape", None)
    dtype = getattr(out, "dtype", None)
    if shape != (n,):
        raise ValueError(
            f"torque(t, q, qd) must return an array of shape ({n},) for this {n}-DOF model, got "
            f"{'a ' + type(out).__name__ if shape is None else f'shape {shape}'}"
        )
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"torque(t, q, qd) must return floating-point values, got dtype {dtype}")


def rollout(
    model: Model,
    q0: Float[ArrayLike, " nq"],
    qd0: Float[ArrayLike, " nv"],
    torque: TorqueFn | None,
    ts: Float[ArrayLike, " T"],
    *,
    solver: diffrax.AbstractSolver | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    dt: float | None = None,
    max_steps: int = 16384,
    adjoint: diffrax.AbstractAdjoint | None = None,
    throw: bool = True,
    passive: bool = True,
) -> Rollout:
    """Simulate ``M qdd + C* (qd ⊗ qd) + g = tau(t, q, qd) + passive(qd)`` (Tuan 100) from ``(q0,
    qd0)`` at ``ts[0]`` and return ``q`` and ``qd`` at the times ``ts``.

    With free, spherical or planar joints (``nq != nv``), ``q`` is integrated on the manifold
    (module doc): its quaternions and ``(cos, sin)`` pairs stay unit to round-off over any run.

    Args:
        model: the plant (a :class:`~kronjax.chain.Model` with inertials).
        q0: ``(nq,)`` initial configuration at ``t = ts[0]``. Its quaternions and ``(cos, sin)``
            pairs are normalised; outside ``jit``, one whose norm differs from 1 by more than
            ``1e-6`` is an error (use :func:`kronjax.normalize`); inside ``jit`` it is normalised
            silently.
        qd0: ``(nv,)`` initial velocity (``v`` in Pinocchio's convention for multi-DoF joints).
        torque: ``torque(t, q, qd) -> tau`` (``(nv,)``), e.g. from :func:`feedforward`,
            :func:`computed_torque`, :func:`pd`, :func:`open_loop`, or any pure JAX function;
            ``None`` for ``tau = 0`` (a free motion). Equinox Modules (the builders' results)
            carry their arrays as pytree leaves: new gains do not recompile, and gradients reach
            them. A plain Python function is static: a new function object recompiles. The
            feed-forward, computed-torque and PD laws handle 1-DoF joints only;
            :func:`open_loop` and user functions work with every model.
        ts: ``(T,)`` strictly increasing save times, ``T >= 2``.
        solver: a diffrax solver; default ``diffrax.Tsit5()`` (5th order). For tight tolerances
            a higher order pays off: ``diffrax.Dopri8()``.
        rtol, atol: tolerances of the adaptive step-size controller (``diffrax.PIDController``);
            defaults :data:`DEFAULT_RTOL`, :data:`DEFAULT_ATOL` (``1e-8``) in float64, ``1e-5`` in
            float32.
        dt: a fixed step size. Given alone (``rtol`` and ``atol`` ``None``), the solver takes
            constant steps of ``dt`` (fast, no error control); given with tolerances, it is the
            adaptive controller's first step.
        max_steps: the most steps the solver may take (diffrax's ``max_steps``).
            With multi-DoF joints, each step of ``solver`` is taken in local coordinates; the
            solver may be any diffrax ODE solver (explicit or implicit Runge-Kutta).
        adjoint: how diffrax differentiates (default ``diffrax.RecursiveCheckpointAdjoint()``,
            reverse mode through the steps; ``diffrax.ForwardMode()`` for ``jax.jacfwd``).
            Reverse mode recomputes steps in another compiled program: at ``rtol``/``atol``
            below about ``1e-10`` in float64 the error estimates are at rounding level, a
            recomputed step can be rejected where the forward pass accepted it, and the
            gradient can be off by far more than the tolerance, depending on how XLA rounds
            (the elbow arm at ``1e-12``: 3e-6 relative with XLA's backend optimisation level 0,
            1e-15 at the default level; 1e-14 at ``1e-10`` with both). Forward mode and fixed
            steps (``dt``) are not affected.
        throw: raise when the solver fails (too many steps, a non-positive-definite ``M``);
            with ``False`` failures show in :attr:`Rollout.success` instead.
        passive: apply the joints' damping and Coulomb friction (the model's ``damping`` and
            ``friction``; :func:`kronjax.passive.passive_forces`, the exact sign); default on.
            :func:`feedforward` and :func:`computed_torque` overcome them, :func:`pd` does not;
            ``kronjax.constrained.simulate`` does not apply them. Coulomb friction's sign is
            discontinuous where a joint stops: an adaptive solver then shrinks its steps there
            (a joint that sticks may exhaust ``max_steps``); use fixed steps (``dt``) or a smooth
            friction torque of your own (``passive_forces(..., smoothing=s)``) with
            ``passive=False``.

    A NaN or inf in ``q0``, ``qd0``, the torques or the model propagates (:mod:`kronjax._finite`):
    fixed steps give NaN states; the adaptive controller rejects every step until ``max_steps``
    and fails as above (``throw=False``: ``success`` false, states ``inf``). To be told at once,
    pass ``kj.check_finite(q0, "q0")`` (and the like) instead.

    Returns:
        A :class:`Rollout` with ``q`` ``(T, nq)`` and ``qd`` ``(T, nv)`` at ``ts``.

    Examples:
        A free motion (``torque=None``) of the double pendulum keeps its energy ``T + P``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q0, qd0, ts = jnp.array([0.3, 0.7]), jnp.zeros(2), jnp.linspace(0.0, 0.1, 3)
        >>> out = kj.simulate.rollout(model, q0, qd0, None, ts)
        >>> energy = lambda q, qd: kj.kinetic_energy(model, q, qd) + kj.potential_energy(model, q)
        >>> bool(jnp.isclose(energy(out.q[-1], out.qd[-1]), energy(q0, qd0), rtol=1e-6))
        True

        Many initial states at once (``jax.vmap``):

        >>> q0s = jnp.array([[0.3, 0.7], [-0.2, 0.4]])
        >>> jax.vmap(lambda q0: kj.simulate.rollout(model, q0, qd0, None, ts).q[-1])(q0s).shape
        (2, 2)

        A torque law, a higher-order solver and tight tolerances: see :func:`computed_torque`.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    multi_dof = model.has_multi_dof
    q0 = model.check_q(q0, "q0")
    qd0 = model.check_v(qd0, "qd0") if multi_dof else model.check_q(qd0, "qd0")
    dtype = jnp.result_type(q0, qd0)
    q0, qd0 = q0.astype(dtype), qd0.astype(dtype)
    ts = _check_ts(ts).astype(dtype)
    if torque is None:
        torque = _ZeroTorque()
    if multi_dof and isinstance(torque, (FeedForward, ComputedTorque, PD)):
        require_one_dof_joints(model, f"rollout with a {type(torque).__name__} torque law")
    _check_torque(torque, ts[0], q0, qd0)
    if solver is None:
        solver = diffrax.Tsit5()
    if not isinstance(solver, diffrax.AbstractSolver):
        raise TypeError(f"solver must be a diffrax solver (e.g. diffrax.Tsit5()), got {solver!r}")
    fixed = dt is not None and rtol is None and atol is None
    if dt is not None and _is_concrete(dt) and not float(dt) > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None and _is_concrete(tol) and not float(tol) > 0:
            raise ValueError(f"{name} must be positive, got {tol}")
    if fixed:
        controller = diffrax.ConstantStepSize()
    else:
        # arrays, not Python floats: new tolerances do not recompile
        single = jnp.finfo(dtype).bits < 64
        controller = diffrax.PIDController(
            rtol=jnp.asarray((1e-5 if single else DEFAULT_RTOL) if rtol is None else rtol, dtype),
            atol=jnp.asarray((1e-5 if single else DEFAULT_ATOL) if atol is None else atol, dtype),
        )
    if multi_dof:
        joints = moving_joints(model)
        q0 = unchecked_normalize(joints, q0)  # within check_q's tolerance outside jit
        field = _ManifoldVectorField(model, torque, joints, bool(passive))
        term, solver = diffrax.ODETerm(field), _LocalCoordinatesSolver(solver, field)
    else:
        term = diffrax.ODETerm(_VectorField(model, torque, bool(passive)))
    solution = diffrax.diffeqsolve(
        term,
        solver,
        t0=ts[0],
        t1=ts[-1],
        dt0=None if dt is None else jnp.asarray(dt, dtype),
        y0=(q0, qd0),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        adjoint=diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint,
        max_steps=max_steps,
        throw=throw,
    )
    q, qd = solution.ys
    return Rollout(ts, q, qd, solution.stats["num_steps"], solution.result == diffrax.RESULTS.successful)


# --------------------------------------------------------------------------------------------
# Torque laws
# --------------------------------------------------------------------------------------------


class _ZeroTorque(eqx.Module):
    def __call__(self, t, q, qd):
        return jnp.zeros_like(qd)


def _gain(k, what: str) -> Array:
    k = jnp.asarray(k)
    if not jnp.issubdtype(k.dtype, jnp.floating):
        k = k.astype(jnp.result_type(float))
    if k.ndim > 1:
        raise ValueError(f"{what} must be a scalar or an (n,) vector of gains, got shape {k.shape}")
    return k


def _check_method(method: str) -> str:
    if method not in INVERSE_DYNAMICS_METHODS:
        raise ValueError(f"unknown inverse-dynamics method {method!r}; expected one of {INVERSE_DYNAMICS_METHODS}")
    return method


def _check_reference(reference) -> None:
    if not callable(reference):
        raise TypeError(f"reference must be a callable t -> (q_r, qd_r, qdd_r), got {reference!r}")


def _reference(reference, t, n: int) -> tuple[Array, Array, Array]:
    out = reference(t)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError("reference(t) must return (q_r, qd_r, qdd_r)")
    out = tuple(jnp.asarray(x) for x in out)
    for name, x in zip(("q_r", "qd_r", "qdd_r"), out):
        if x.shape != (n,):
            raise ValueError(f"reference(t) returned {name} of shape {x.shape}, expected ({n},)")
    return out


class FeedForward(eqx.Module):
    """``tau(t) = M(q_r) qdd_r + C(q_r, qd_r) qd_r + g(q_r)`` (Truc eq. 72); see :func:`feedforward`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> ref = lambda t: (jnp.full(2, t), jnp.ones(2), jnp.zeros(2))
        >>> law = kj.simulate.feedforward(kj.models.double_pendulum(), ref)
        >>> isinstance(law, kj.simulate.FeedForward), law.method
        (True, 'rnea')
        >>> law(0.5, jnp.zeros(2), jnp.zeros(2)).shape  # tau(t, q, qd), the state unused
        (2,)
    """

    model: Model
    reference: Reference
    method: str = eqx.field(static=True)

    def __call__(self, t, q, qd):
        q_r, qd_r, qdd_r = _reference(self.reference, t, q.shape[0])
        return inverse_dynamics(self.model, q_r, qd_r, qdd_r, method=self.method, passive=True)


class ComputedTorque(eqx.Module):
    """The computed-torque law; see :func:`computed_torque`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> ref = lambda t: (jnp.full(2, t), jnp.ones(2), jnp.zeros(2))
        >>> law = kj.simulate.computed_torque(kj.models.double_pendulum(), ref, kp=100.0, kd=20.0)
        >>> isinstance(law, kj.simulate.ComputedTorque), float(law.kp), float(law.kd)
        (True, 100.0, 20.0)
    """

    model: Model
    reference: Reference
    kp: Float[Array, ""] | Float[Array, " n"]
    kd: Float[Array, ""] | Float[Array, " n"]
    method: str = eqx.field(static=True)

    def __call__(self, t, q, qd):
        q_r, qd_r, qdd_r = _reference(self.reference, t, q.shape[0])
        command = qdd_r + self.kd * (qd_r - qd) + self.kp * (q_r - q)
        return inverse_dynamics(self.model, q, qd, command, method=self.method, passive=True)


class PD(eqx.Module):
    """A joint-space PD law; see :func:`pd`.

    Example:
        The gains are pytree leaves: new values give a new law of the same structure (no
        recompilation under ``jit``):

        >>> import kronjax as kj
        >>> import equinox as eqx
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.pd(100.0, 20.0, jnp.zeros(2))
        >>> isinstance(law, kj.simulate.PD), law.model is None
        (True, True)
        >>> softer = eqx.tree_at(lambda law: law.kp, law, jnp.asarray(10.0))
        >>> softer(0.0, jnp.array([0.1, -0.2]), jnp.zeros(2)).tolist()  # 10 (0 - q)
        [-1.0, 2.0]
    """

    reference: Reference
    kp: Float[Array, ""] | Float[Array, " n"]
    kd: Float[Array, ""] | Float[Array, " n"]
    model: Model | None

    def __call__(self, t, q, qd):
        q_r, qd_r, _ = _reference(self.reference, t, q.shape[0])
        tau = self.kp * (q_r - q) + self.kd * (qd_r - qd)
        if self.model is not None:
            tau = tau + gravity(self.model, q)
        return tau


class OpenLoop(eqx.Module):
    """Tabulated torques, linearly interpolated; see :func:`open_loop`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.open_loop(jnp.linspace(0.0, 1.0, 5), jnp.zeros((5, 2)))
        >>> isinstance(law, kj.simulate.OpenLoop), law.ts.shape, law.taus.shape
        (True, (5,), (5, 2))
    """

    ts: Float[Array, " K"]
    taus: Float[Array, "K n"]

    def __call__(self, t, q, qd):
        return jax.vmap(lambda column: jnp.interp(t, self.ts, column), in_axes=1)(self.taus)


class _Setpoint(eqx.Module):
    q: Float[Array, " nq"]

    def __call__(self, t):
        zero = jnp.zeros_like(self.q)
        return self.q, zero, zero


def feedforward(model: Model, reference: Reference, *, method: str = "rnea") -> FeedForward:
    """The feed-forward law of Truc et al. (eq. 72)::

        tau(t) = M(q_r) qdd_r + C(q_r, qd_r) qd_r + g(q_r)

    with ``(q_r, qd_r, qdd_r) = reference(t)``: the inverse dynamics along the reference, open
    loop (the state is not used), plus the torque that overcomes the model's joint damping and
    friction (:mod:`kronjax.passive`, which :func:`rollout` applies by default). With a perfect
    model and matching initial state the plant follows the reference exactly; simulating it is
    Truc's validation of the model (sec. 5).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        reference: ``t -> (q_r, qd_r, qdd_r)``.
        method: inverse-dynamics method (:func:`kronjax.inverse_dynamics`): ``"rnea"`` (fast,
            trees), ``"kron"`` (the papers' ``M qdd + C* (qd ⊗ qd) + g``), ``"lagrangian"``,
            ``"auto"``.

    Returns:
        A :class:`FeedForward` controller (``tau(t, q, qd)``) for :func:`rollout`.

    Example:
        The inverse dynamics along the reference, whatever the state:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> w = jnp.array([1.0, -0.5])
        >>> ref = lambda t: (w * jnp.sin(t), w * jnp.cos(t), -w * jnp.sin(t))
        >>> law = kj.simulate.feedforward(model, ref)
        >>> tau = law(0.3, jnp.zeros(2), jnp.zeros(2))  # torque(t, q, qd)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, *ref(0.3))))
        True
    """
    require_one_dof_joints(model, "feedforward")
    _check_reference(reference)
    return FeedForward(model, reference, _check_method(method))


def computed_torque(model: Model, reference: Reference, kp: ArrayLike, kd: ArrayLike, *, method: str = "rnea") -> ComputedTorque:
    """The computed-torque (inverse-dynamics) law::

        tau = M(q) (qdd_r + Kd (qd_r - qd) + Kp (q_r - q)) + C(q, qd) qd + g(q)

    evaluated as one :func:`kronjax.inverse_dynamics` call at the measured state with the
    commanded acceleration, which also overcomes the model's joint damping and friction
    (``passive=True``, as :func:`rollout` applies them by default). With the plant equal to
    ``model``, the error ``e = q_r - q`` obeys
    ``edd + Kd ed + Kp e = 0``. ``kp``, ``kd``: scalars or ``(n,)`` diagonal gains (pytree
    leaves: differentiable). ``model`` is the controller's model, which may differ from the plant.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        reference: ``t -> (q_r, qd_r, qdd_r)``.
        kp, kd: scalars or ``(n,)`` diagonal gains.
        method: as in :func:`feedforward`.

    Returns:
        A :class:`ComputedTorque` controller for :func:`rollout`.

    Example:
        With ``Kp = 100``, ``Kd = 20`` the error is critically damped: from ``e(0) = e0``,
        ``ed(0) = 0`` it is ``e0 (1 + 10 t) exp(-10 t)``, which a rollout of the plant reproduces:

        >>> import kronjax as kj
        >>> import diffrax
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> w = jnp.array([1.0, -0.5])
        >>> ref = lambda t: (w * jnp.sin(t), w * jnp.cos(t), -w * jnp.sin(t))
        >>> law = kj.simulate.computed_torque(model, ref, kp=100.0, kd=20.0)
        >>> q0 = jnp.array([0.01, 0.01])  # e0 = q_r(0) - q0 = -0.01
        >>> out = kj.simulate.rollout(model, q0, w, law, jnp.array([0.0, 0.5]), solver=diffrax.Dopri8(), rtol=1e-10, atol=1e-10)
        >>> bool(jnp.allclose(ref(0.5)[0] - out.q[-1], -0.01 * 6.0 * jnp.exp(-5.0)))
        True
    """
    require_one_dof_joints(model, "computed_torque")
    _check_reference(reference)
    return ComputedTorque(model, reference, _gain(kp, "kp"), _gain(kd, "kd"), _check_method(method))


def pd(
    kp: ArrayLike,
    kd: ArrayLike,
    reference: Reference | ArrayLike,
    *,
    gravity_compensation: Model | None = None,
) -> PD:
    """A joint-space PD law ``tau = Kp (q_r - q) + Kd (qd_r - qd) [+ g(q)]``.

    Args:
        kp, kd: scalars or ``(n,)`` diagonal gains.
        reference: a callable ``t -> (q_r, qd_r, qdd_r)``, or a constant set point ``q_r``
            (``(n,)``, with ``qd_r = 0``).
        gravity_compensation: a model whose gravity vector ``g(q)`` is added (PD with gravity
            compensation; ``None`` for a plain PD law).

    Returns:
        A :class:`PD` controller for :func:`rollout`.

    Example:
        A set point; with gravity compensation the law holds the arm at rest there:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.pd(100.0, 20.0, jnp.array([0.5, -0.5]))
        >>> law(0.0, jnp.zeros(2), jnp.array([1.0, 0.0])).tolist()  # 100 (q_r - q) + 20 (0 - qd)
        [30.0, -50.0]
        >>> model, q_r = kj.models.double_pendulum(), jnp.array([0.5, -0.5])
        >>> law = kj.simulate.pd(100.0, 20.0, q_r, gravity_compensation=model)
        >>> bool(jnp.allclose(law(0.0, q_r, jnp.zeros(2)), kj.gravity(model, q_r)))
        True
    """
    if gravity_compensation is not None:
        require_one_dof_joints(gravity_compensation, "pd")
    if not callable(reference):
        setpoint = jnp.asarray(reference)
        if setpoint.ndim != 1:
            raise ValueError(f"a set point must be an (n,) vector, got shape {setpoint.shape}")
        reference = _Setpoint(setpoint)
    return PD(reference, _gain(kp, "kp"), _gain(kd, "kd"), gravity_compensation)


def open_loop(ts: Float[ArrayLike, " K"], taus: Float[ArrayLike, "K n"]) -> OpenLoop:
    """Torques given at times ``ts`` (``(K,)``, strictly increasing), linearly interpolated in
    time and held constant outside ``[ts[0], ts[-1]]``. The state is not used.

    Args:
        ts: ``(K,)`` strictly increasing times.
        taus: ``(K, n)`` the torques at ``ts``.

    Returns:
        An :class:`OpenLoop` controller for :func:`rollout`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.open_loop(jnp.array([0.0, 1.0]), jnp.array([[0.0, 0.0], [2.0, 4.0]]))
        >>> q, qd = jnp.zeros(2), jnp.zeros(2)
        >>> law(0.25, q, qd).tolist(), law(3.0, q, qd).tolist()
        ([0.5, 1.0], [2.0, 4.0])
    """
    ts = _check_ts(ts)
    taus = jnp.asarray(taus)
    if taus.ndim != 2 or taus.shape[0] != ts.shape[0]:
        raise ValueError(f"taus must have shape ({ts.shape[0]}, n) to match ts, got {taus.shape}")
    return OpenLoop(ts, taus)
