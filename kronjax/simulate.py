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

from .chain import Model, require_one_dof_joints
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
        q: ``(T, n)`` joint coordinates at ``ts`` (``q[0] = q0``).
        qd: ``(T, n)`` joint velocities at ``ts``.
        num_steps: number of accepted solver steps.
        success: ``True`` when the solver reached ``ts[-1]`` (with ``throw=False``, a failed
            element of a ``vmap`` batch has ``False`` here instead of raising).
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T n"]
    qd: Float[Array, "T n"]
    num_steps: Int[Array, ""]
    success: Bool[Array, ""]


class _VectorField(eqx.Module):
    model: Model
    torque: TorqueFn

    def __call__(self, t, y, args):
        q, qd = y
        tau = jnp.asarray(self.torque(t, q, qd), q.dtype)
        return qd, forward_dynamics(self.model, q, qd, tau)


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
            raise ValueError(
                f"ts must be strictly increasing: ts[{k}] = {values[k]} >= ts[{k + 1}] = {values[k + 1]}"
            )
    else:
        ts = eqx.error_if(ts, ~jnp.all(jnp.diff(ts) > 0), "rollout: ts must be strictly increasing")
    return ts


def _check_torque(torque, t, q, qd) -> None:
    if not callable(torque):
        raise TypeError(f"torque must be a callable torque(t, q, qd) -> tau, got {torque!r}")
    n = q.shape[0]
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
    q0: Float[ArrayLike, " n"],
    qd0: Float[ArrayLike, " n"],
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
) -> Rollout:
    """Simulate ``M qdd + C* (qd ⊗ qd) + g = tau(t, q, qd)`` (Tuan 100) from ``(q0, qd0)`` at
    ``ts[0]`` and return ``q`` and ``qd`` at the times ``ts``.

    Args:
        model: the plant (a :class:`~kronjax.chain.Model` with inertials).
        q0, qd0: ``(n,)`` initial state at ``t = ts[0]``.
        torque: ``torque(t, q, qd) -> tau`` (``(n,)``), e.g. from :func:`feedforward`,
            :func:`computed_torque`, :func:`pd`, :func:`open_loop`, or any pure JAX function;
            ``None`` for ``tau = 0`` (a free motion). Equinox Modules (the builders' results)
            carry their arrays as pytree leaves: new gains do not recompile, and gradients reach
            them. A plain Python function is static: a new function object recompiles.
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
        adjoint: how diffrax differentiates (default ``diffrax.RecursiveCheckpointAdjoint()``,
            reverse mode through the steps; ``diffrax.ForwardMode()`` for ``jax.jacfwd``).
        throw: raise when the solver fails (too many steps, a non-positive-definite ``M``);
            with ``False`` failures show in :attr:`Rollout.success` instead.

    A NaN or inf in ``q0``, ``qd0``, the torques or the model propagates (:mod:`kronjax._finite`):
    fixed steps give NaN states; the adaptive controller rejects every step until ``max_steps``
    and fails as above (``throw=False``: ``success`` false, states ``inf``). To be told at once,
    pass ``kj.check_finite(q0, "q0")`` (and the like) instead.

    Returns:
        A :class:`Rollout` with ``q``, ``qd`` of shape ``(T, n)`` at ``ts``.

    Example::

        out = rollout(model, q0, qd0, computed_torque(model, ref, kp=100.0, kd=20.0), ts,
                      solver=diffrax.Dopri8(), rtol=1e-10, atol=1e-10)
        jax.vmap(lambda q0: rollout(model, q0, qd0, None, ts).q[-1])(q0s)   # many initial states
    """
    require_one_dof_joints(model, "rollout")
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    q0 = model.check_q(q0, "q0")
    qd0 = model.check_q(qd0, "qd0")
    dtype = jnp.result_type(q0, qd0)
    q0, qd0 = q0.astype(dtype), qd0.astype(dtype)
    ts = _check_ts(ts).astype(dtype)
    if torque is None:
        torque = _ZeroTorque()
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
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(_VectorField(model, torque)),
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
        return jnp.zeros_like(q)


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
    """``tau(t) = M(q_r) qdd_r + C(q_r, qd_r) qd_r + g(q_r)`` (Truc eq. 72); see :func:`feedforward`."""

    model: Model
    reference: Reference
    method: str = eqx.field(static=True)

    def __call__(self, t, q, qd):
        q_r, qd_r, qdd_r = _reference(self.reference, t, q.shape[0])
        return inverse_dynamics(self.model, q_r, qd_r, qdd_r, method=self.method)


class ComputedTorque(eqx.Module):
    """The computed-torque law; see :func:`computed_torque`."""

    model: Model
    reference: Reference
    kp: Float[Array, "*n"]
    kd: Float[Array, "*n"]
    method: str = eqx.field(static=True)

    def __call__(self, t, q, qd):
        q_r, qd_r, qdd_r = _reference(self.reference, t, q.shape[0])
        command = qdd_r + self.kd * (qd_r - qd) + self.kp * (q_r - q)
        return inverse_dynamics(self.model, q, qd, command, method=self.method)


class PD(eqx.Module):
    """A joint-space PD law; see :func:`pd`."""

    reference: Reference
    kp: Float[Array, "*n"]
    kd: Float[Array, "*n"]
    model: Model | None

    def __call__(self, t, q, qd):
        q_r, qd_r, _ = _reference(self.reference, t, q.shape[0])
        tau = self.kp * (q_r - q) + self.kd * (qd_r - qd)
        if self.model is not None:
            tau = tau + gravity(self.model, q)
        return tau


class OpenLoop(eqx.Module):
    """Tabulated torques, linearly interpolated; see :func:`open_loop`."""

    ts: Float[Array, " K"]
    taus: Float[Array, "K n"]

    def __call__(self, t, q, qd):
        return jax.vmap(lambda column: jnp.interp(t, self.ts, column), in_axes=1)(self.taus)


class _Setpoint(eqx.Module):
    q: Float[Array, " n"]

    def __call__(self, t):
        zero = jnp.zeros_like(self.q)
        return self.q, zero, zero


def feedforward(model: Model, reference: Reference, *, method: str = "rnea") -> FeedForward:
    """The feed-forward law of Truc et al. (eq. 72)::

        tau(t) = M(q_r) qdd_r + C(q_r, qd_r) qd_r + g(q_r)

    with ``(q_r, qd_r, qdd_r) = reference(t)``: the inverse dynamics along the reference, open
    loop (the state is not used). With a perfect model and matching initial state the plant
    follows the reference exactly; simulating it is Truc's validation of the model (sec. 5).

    Args:
        method: inverse-dynamics method (:func:`kronjax.inverse_dynamics`): ``"rnea"`` (fast,
            trees), ``"kron"`` (the papers' ``M qdd + C* (qd ⊗ qd) + g``), ``"lagrangian"``,
            ``"auto"``.
    """
    require_one_dof_joints(model, "feedforward")
    _check_reference(reference)
    return FeedForward(model, reference, _check_method(method))


def computed_torque(
    model: Model, reference: Reference, kp: ArrayLike, kd: ArrayLike, *, method: str = "rnea"
) -> ComputedTorque:
    """The computed-torque (inverse-dynamics) law::

        tau = M(q) (qdd_r + Kd (qd_r - qd) + Kp (q_r - q)) + C(q, qd) qd + g(q)

    evaluated as one :func:`kronjax.inverse_dynamics` call at the measured state with the
    commanded acceleration. With the plant equal to ``model``, the error ``e = q_r - q`` obeys
    ``edd + Kd ed + Kp e = 0``. ``kp``, ``kd``: scalars or ``(n,)`` diagonal gains (pytree
    leaves: differentiable). ``model`` is the controller's model, which may differ from the plant.
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
    """
    if not callable(reference):
        setpoint = jnp.asarray(reference)
        if setpoint.ndim != 1:
            raise ValueError(f"a set point must be an (n,) vector, got shape {setpoint.shape}")
        reference = _Setpoint(setpoint)
    return PD(reference, _gain(kp, "kp"), _gain(kd, "kd"), gravity_compensation)


def open_loop(ts: Float[ArrayLike, " K"], taus: Float[ArrayLike, "K n"]) -> OpenLoop:
    """Torques given at times ``ts`` (``(K,)``, strictly increasing), linearly interpolated in
    time and held constant outside ``[ts[0], ts[-1]]``. The state is not used."""
    ts = _check_ts(ts)
    taus = jnp.asarray(taus)
    if taus.ndim != 2 or taus.shape[0] != ts.shape[0]:
        raise ValueError(f"taus must have shape ({ts.shape[0]}, n) to match ts, got {taus.shape}")
    return OpenLoop(ts, taus)
