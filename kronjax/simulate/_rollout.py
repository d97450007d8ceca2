"""Rollouts of forward dynamics with diffrax (private; :mod:`kronjax.simulate`)."""

from __future__ import annotations

from typing import NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._deprecation import renamed_attribute, renamed_keywords, warn
from ..chain import Model
from ..chain._arrays import is_concrete
from ..chain._model import require_one_dof_joints
from ..configuration import moving_joints, unchecked_normalize
from ..dynamics import forward_dynamics
from ._chart import LocalCoordinatesSolver, ManifoldVectorField
from ._controllers import PD, ComputedTorque, FeedForward, TorqueFn, ZeroTorque, check_ts

DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-8


class Rollout(NamedTuple):
    """The result of :func:`rollout`.

    Attributes:
        ts: ``(T,)`` the save times.
        q: ``(T, nq)`` configurations at ``ts`` (``q[0] = q0``, its quaternions normalised).
        v: ``(T, nv)`` velocities at ``ts`` (``n = nq = nv`` for 1-DoF joints).
        num_steps: number of accepted solver steps.
        success: ``True`` when the solver reached ``ts[-1]`` (with ``throw=False``, a failed
            element of a ``vmap`` batch has ``False`` here instead of raising).

    Example:
        The double pendulum released at rest, saved at three times:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> out = kj.simulate.rollout(model, jnp.array([0.3, 0.7]), jnp.zeros(2), None, jnp.linspace(0.0, 0.1, 3))
        >>> out.ts.shape, out.q.shape, out.v.shape
        ((3,), (3, 2), (3, 2))
        >>> bool(out.success) and int(out.num_steps) > 0
        True
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nq"]
    v: Float[Array, "T nv"]
    num_steps: Int[Array, ""]
    success: Bool[Array, ""]

    qd = renamed_attribute("qd", "v", "Rollout")


class _VectorField(eqx.Module):
    model: Model
    torque: TorqueFn
    passive: bool = eqx.field(static=True)

    def __call__(self, t, y, args):
        q, v = y
        tau = jnp.asarray(self.torque(t, q, v), q.dtype)
        return v, forward_dynamics(self.model, q, v, tau, passive=self.passive)


# --------------------------------------------------------------------------------------------
# Models with free, spherical or planar joints: integration in local coordinates (module doc;
# the charts are kronjax.configuration's)


def _check_torque(torque, t, q, v) -> None:
    if not callable(torque):
        raise TypeError(f"torque must be a callable torque(t, q, v) -> tau, got {torque!r}")
    n = v.shape[0]
    try:
        out = jax.eval_shape(torque, t, q, v)
    except TypeError as err:
        raise TypeError(f"torque must be callable as torque(t, q, v) -> tau (shape ({n},)): {err}") from err
    shape = getattr(out, "shape", None)
    dtype = getattr(out, "dtype", None)
    if shape != (n,):
        raise ValueError(
            f"torque(t, q, v) must return an array of shape ({n},) for this {n}-DOF model, got "
            f"{'a ' + type(out).__name__ if shape is None else f'shape {shape}'}"
        )
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"torque(t, q, v) must return floating-point values, got dtype {dtype}")


def _passive_default(model: Model) -> bool:
    """``rollout``'s former default, ``passive=True``, with a warning where it makes a difference."""
    present = [x for x in (model.damping, model.friction) if x is not None]
    if all(is_concrete(x) and not np.any(np.asarray(x)) for x in present):
        return False  # nothing to apply: True and False agree
    warn(
        "rollout(passive=None) on a model with damping or friction",
        "passive=True to keep applying them (the default becomes False, as in forward_dynamics)",
        stacklevel=5,
    )
    return True


@renamed_keywords(qd0="v0")
def rollout(
    model: Model,
    q0: Float[ArrayLike, " nq"],
    v0: Float[ArrayLike, " nv"],
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
    passive: bool | None = None,
) -> Rollout:
    """Simulate ``M vd + C* (v ⊗ v) + g = tau(t, q, v) + passive(v)`` (Tuan 100) from ``(q0,
    v0)`` at ``ts[0]`` and return ``q`` and ``v`` at the times ``ts``.

    With free, spherical or planar joints (``nq != nv``), ``q`` is integrated on the manifold
    (module doc): its quaternions and ``(cos, sin)`` pairs stay unit to round-off over any run.

    Args:
        model: the plant (a :class:`~kronjax.chain.Model` with inertials).
        q0: ``(nq,)`` initial configuration at ``t = ts[0]``. Its quaternions and ``(cos, sin)``
            pairs are normalised; outside ``jit``, one whose norm differs from 1 by more than
            ``1e-6`` is an error (use :func:`kronjax.normalize`); inside ``jit`` it is normalised
            silently.
        v0: ``(nv,)`` initial velocity (``v`` in Pinocchio's convention for multi-DoF joints).
        torque: ``torque(t, q, v) -> tau`` (``(nv,)``), e.g. from :func:`feedforward`,
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
            ``friction``; :func:`kronjax.passive.passive_forces`, the exact sign). ``None`` (the
            default): on, as before, but a model with damping or friction warns
            (``DeprecationWarning``) that the default becomes ``False``, as in
            :func:`kronjax.forward_dynamics` and :func:`kronjax.inverse_dynamics`: pass it.
            :func:`feedforward` and :func:`computed_torque` overcome them, :func:`pd` does not;
            ``kronjax.constrained.simulate`` does not apply them. Coulomb friction's sign is
            discontinuous where a joint stops: an adaptive solver then shrinks its steps there
            (a joint that sticks may exhaust ``max_steps``); use fixed steps (``dt``) or a smooth
            friction torque of your own (``passive_forces(..., smoothing=s)``) with
            ``passive=False``.

    A NaN or inf in ``q0``, ``v0``, the torques or the model propagates (:mod:`kronjax._finite`):
    fixed steps give NaN states; the adaptive controller rejects every step until ``max_steps``
    and fails as above (``throw=False``: ``success`` false, states ``inf``). To be told at once,
    pass ``kj.check_finite(q0, "q0")`` (and the like) instead.

    Returns:
        A :class:`Rollout` with ``q`` ``(T, nq)`` and ``v`` ``(T, nv)`` at ``ts``.

    Examples:
        A free motion (``torque=None``) of the double pendulum keeps its energy ``T + P``:

        >>> import kronjax as kj
        >>> import jax, jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> q0, v0, ts = jnp.array([0.3, 0.7]), jnp.zeros(2), jnp.linspace(0.0, 0.1, 3)
        >>> out = kj.simulate.rollout(model, q0, v0, None, ts)
        >>> energy = lambda q, v: kj.kinetic_energy(model, q, v) + kj.potential_energy(model, q)
        >>> bool(jnp.isclose(energy(out.q[-1], out.v[-1]), energy(q0, v0), rtol=1e-6))
        True

        Many initial states at once (``jax.vmap``):

        >>> q0s = jnp.array([[0.3, 0.7], [-0.2, 0.4]])
        >>> jax.vmap(lambda q0: kj.simulate.rollout(model, q0, v0, None, ts).q[-1])(q0s).shape
        (2, 2)

        A torque law, a higher-order solver and tight tolerances: see :func:`computed_torque`.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kronjax Model, got {type(model).__name__}")
    multi_dof = model.has_multi_dof
    q0 = model.check_q(q0, "q0")
    v0 = model.check_v(v0, "v0") if multi_dof else model.check_q(v0, "v0")
    dtype = jnp.result_type(q0, v0)
    q0, v0 = q0.astype(dtype), v0.astype(dtype)
    ts = check_ts(ts).astype(dtype)
    if passive is None:
        passive = _passive_default(model)
    if torque is None:
        torque = ZeroTorque()
    if multi_dof and isinstance(torque, (FeedForward, ComputedTorque, PD)):
        require_one_dof_joints(model, f"rollout with a {type(torque).__name__} torque law")
    _check_torque(torque, ts[0], q0, v0)
    if solver is None:
        solver = diffrax.Tsit5()
    if not isinstance(solver, diffrax.AbstractSolver):
        raise TypeError(f"solver must be a diffrax solver (e.g. diffrax.Tsit5()), got {solver!r}")
    fixed = dt is not None and rtol is None and atol is None
    if dt is not None and is_concrete(dt) and not float(dt) > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None and is_concrete(tol) and not float(tol) > 0:
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
        field = ManifoldVectorField(model, torque, joints, bool(passive))
        term, solver = diffrax.ODETerm(field), LocalCoordinatesSolver(solver, field)
    else:
        term = diffrax.ODETerm(_VectorField(model, torque, bool(passive)))
    solution = diffrax.diffeqsolve(
        term,
        solver,
        t0=ts[0],
        t1=ts[-1],
        dt0=None if dt is None else jnp.asarray(dt, dtype),
        y0=(q0, v0),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        adjoint=diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint,
        max_steps=max_steps,
        throw=throw,
    )
    q, v = solution.ys
    return Rollout(ts, q, v, solution.stats["num_steps"], solution.result == diffrax.RESULTS.successful)


# --------------------------------------------------------------------------------------------
# Torque laws
