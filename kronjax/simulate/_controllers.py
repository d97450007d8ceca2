"""Controllers for :func:`kronjax.simulate.rollout` (private): feed-forward, computed torque, PD,
open loop."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain import Model
from ..chain._arrays import is_concrete
from ..chain._model import require_one_dof_joints
from ..dynamics import gravity, inverse_dynamics
from ..dynamics._inverse import checked_method

# --------------------------------------------------------------------------------------------


TorqueFn = Callable[[Array, Array, Array], Array]
Reference = Callable[[Array], tuple[Array, Array, Array]]


def check_ts(ts) -> Array:
    ts = jnp.asarray(ts)
    if ts.ndim != 1 or ts.shape[0] < 2:
        raise ValueError(f"ts must be a 1-D array of at least 2 save times, got shape {ts.shape}")
    if not jnp.issubdtype(ts.dtype, jnp.floating):
        ts = ts.astype(jnp.result_type(float))
    if is_concrete(ts):
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


class ZeroTorque(eqx.Module):
    def __call__(self, t, q, v):
        return jnp.zeros_like(v)


def _gain(k, what: str) -> Array:
    k = jnp.asarray(k)
    if not jnp.issubdtype(k.dtype, jnp.floating):
        k = k.astype(jnp.result_type(float))
    if k.ndim > 1:
        raise ValueError(f"{what} must be a scalar or an (n,) vector of gains, got shape {k.shape}")
    return k


def _check_reference(reference) -> None:
    if not callable(reference):
        raise TypeError(f"reference must be a callable t -> (q_r, v_r, vd_r), got {reference!r}")


def _reference(reference, t, n: int) -> tuple[Array, Array, Array]:
    out = reference(t)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError("reference(t) must return (q_r, v_r, vd_r)")
    out = tuple(jnp.asarray(x) for x in out)
    for name, x in zip(("q_r", "v_r", "vd_r"), out):
        if x.shape != (n,):
            raise ValueError(f"reference(t) returned {name} of shape {x.shape}, expected ({n},)")
    return out


class FeedForward(eqx.Module):
    """``tau(t) = M(q_r) vd_r + C(q_r, v_r) v_r + g(q_r)`` (Truc eq. 72); see :func:`feedforward`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> ref = lambda t: (jnp.full(2, t), jnp.ones(2), jnp.zeros(2))
        >>> law = kj.simulate.feedforward(kj.models.double_pendulum(), ref)
        >>> type(law).__name__, law.method
        ('FeedForward', 'rnea')
        >>> law(0.5, jnp.zeros(2), jnp.zeros(2)).shape  # tau(t, q, v), the state unused
        (2,)
    """

    model: Model
    reference: Reference
    method: str = eqx.field(static=True)

    def __call__(self, t, q, v):
        q_r, v_r, vd_r = _reference(self.reference, t, q.shape[0])
        return inverse_dynamics(self.model, q_r, v_r, vd_r, method=self.method, passive=True)


class ComputedTorque(eqx.Module):
    """The computed-torque law; see :func:`computed_torque`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> ref = lambda t: (jnp.full(2, t), jnp.ones(2), jnp.zeros(2))
        >>> law = kj.simulate.computed_torque(kj.models.double_pendulum(), ref, kp=100.0, kd=20.0)
        >>> type(law).__name__, float(law.kp), float(law.kd)
        ('ComputedTorque', 100.0, 20.0)
    """

    model: Model
    reference: Reference
    kp: Float[Array, ""] | Float[Array, " n"]
    kd: Float[Array, ""] | Float[Array, " n"]
    method: str = eqx.field(static=True)

    def __call__(self, t, q, v):
        q_r, v_r, vd_r = _reference(self.reference, t, q.shape[0])
        command = vd_r + self.kd * (v_r - v) + self.kp * (q_r - q)
        return inverse_dynamics(self.model, q, v, command, method=self.method, passive=True)


class PD(eqx.Module):
    """A joint-space PD law; see :func:`pd`.

    Example:
        The gains are pytree leaves: new values give a new law of the same structure (no
        recompilation under ``jit``):

        >>> import kronjax as kj
        >>> import equinox as eqx
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.pd(100.0, 20.0, jnp.zeros(2))
        >>> type(law).__name__, law.model is None
        ('PD', True)
        >>> softer = eqx.tree_at(lambda law: law.kp, law, jnp.asarray(10.0))
        >>> softer(0.0, jnp.array([0.1, -0.2]), jnp.zeros(2)).tolist()  # 10 (0 - q)
        [-1.0, 2.0]
    """

    reference: Reference
    kp: Float[Array, ""] | Float[Array, " n"]
    kd: Float[Array, ""] | Float[Array, " n"]
    model: Model | None

    def __call__(self, t, q, v):
        q_r, v_r, _ = _reference(self.reference, t, q.shape[0])
        tau = self.kp * (q_r - q) + self.kd * (v_r - v)
        if self.model is not None:
            tau = tau + gravity(self.model, q)
        return tau


class OpenLoop(eqx.Module):
    """Tabulated torques, linearly interpolated; see :func:`open_loop`.

    Example:
        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.open_loop(jnp.linspace(0.0, 1.0, 5), jnp.zeros((5, 2)))
        >>> type(law).__name__, law.ts.shape, law.taus.shape
        ('OpenLoop', (5,), (5, 2))
    """

    ts: Float[Array, " K"]
    taus: Float[Array, "K n"]

    def __call__(self, t, q, v):
        return jax.vmap(lambda column: jnp.interp(t, self.ts, column), in_axes=1)(self.taus)


class _Setpoint(eqx.Module):
    q: Float[Array, " nq"]

    def __call__(self, t):
        zero = jnp.zeros_like(self.q)
        return self.q, zero, zero


def feedforward(model: Model, reference: Reference, *, method: str = "rnea") -> FeedForward:
    """The feed-forward law of Truc et al. (eq. 72)::

        tau(t) = M(q_r) vd_r + C(q_r, v_r) v_r + g(q_r)

    with ``(q_r, v_r, vd_r) = reference(t)``: the inverse dynamics along the reference, open
    loop (the state is not used), plus the torque that overcomes the model's joint damping and
    friction (:mod:`kronjax.passive`, which :func:`rollout` applies by default). With a perfect
    model and matching initial state the plant follows the reference exactly; simulating it is
    Truc's validation of the model (sec. 5).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        reference: ``t -> (q_r, v_r, vd_r)``.
        method: inverse-dynamics method (:func:`kronjax.inverse_dynamics`): ``"rnea"`` (fast,
            trees), ``"kron"`` (the papers' ``M vd + C* (v ⊗ v) + g``), ``"euler_lagrange"``,
            ``"auto"``.

    Returns:
        A :class:`FeedForward` controller (``tau(t, q, v)``) for :func:`rollout`.

    Example:
        The inverse dynamics along the reference, whatever the state:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> model = kj.models.double_pendulum()
        >>> w = jnp.array([1.0, -0.5])
        >>> ref = lambda t: (w * jnp.sin(t), w * jnp.cos(t), -w * jnp.sin(t))
        >>> law = kj.simulate.feedforward(model, ref)
        >>> tau = law(0.3, jnp.zeros(2), jnp.zeros(2))  # torque(t, q, v)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, *ref(0.3))))
        True
    """
    require_one_dof_joints(model, "feedforward")
    _check_reference(reference)
    return FeedForward(model, reference, checked_method(method, "controller"))


def computed_torque(model: Model, reference: Reference, kp: ArrayLike, kd: ArrayLike, *, method: str = "rnea") -> ComputedTorque:
    """The computed-torque (inverse-dynamics) law::

        tau = M(q) (vd_r + Kd (v_r - v) + Kp (q_r - q)) + C(q, v) v + g(q)

    evaluated as one :func:`kronjax.inverse_dynamics` call at the measured state with the
    commanded acceleration, which also overcomes the model's joint damping and friction
    (``passive=True``, as :func:`rollout` applies them with ``passive=True``). With the plant equal to
    ``model``, the error ``e = q_r - q`` obeys
    ``edd + Kd ed + Kp e = 0``. ``kp``, ``kd``: scalars or ``(n,)`` diagonal gains (pytree
    leaves: differentiable). ``model`` is the controller's model, which may differ from the plant.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        reference: ``t -> (q_r, v_r, vd_r)``.
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
    return ComputedTorque(model, reference, _gain(kp, "kp"), _gain(kd, "kd"), checked_method(method, "controller"))


def pd(
    kp: ArrayLike,
    kd: ArrayLike,
    reference: Reference | ArrayLike,
    *,
    gravity_compensation: Model | None = None,
) -> PD:
    """A joint-space PD law ``tau = Kp (q_r - q) + Kd (v_r - v) [+ g(q)]``.

    Args:
        kp, kd: scalars or ``(n,)`` diagonal gains.
        reference: a callable ``t -> (q_r, v_r, vd_r)``, or a constant set point ``q_r``
            (``(n,)``, with ``v_r = 0``).
        gravity_compensation: a model whose gravity vector ``g(q)`` is added (PD with gravity
            compensation; ``None`` for a plain PD law).

    Returns:
        A :class:`PD` controller for :func:`rollout`.

    Example:
        A set point; with gravity compensation the law holds the arm at rest there:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> law = kj.simulate.pd(100.0, 20.0, jnp.array([0.5, -0.5]))
        >>> law(0.0, jnp.zeros(2), jnp.array([1.0, 0.0])).tolist()  # 100 (q_r - q) + 20 (0 - v)
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
        >>> q, v = jnp.zeros(2), jnp.zeros(2)
        >>> law(0.25, q, v).tolist(), law(3.0, q, v).tolist()
        ([0.5, 1.0], [2.0, 4.0])
    """
    ts = check_ts(ts)
    taus = jnp.asarray(taus)
    if taus.ndim != 2 or taus.shape[0] != ts.shape[0]:
        raise ValueError(f"taus must have shape ({ts.shape[0]}, n) to match ts, got {taus.shape}")
    return OpenLoop(ts, taus)
