"""What a motion must satisfy at its ends: :class:`BoundaryConditions` (the positions, velocities
and accelerations fixed at ``t = 0`` and ``t = T``, and the duration ``T``) and :class:`FreeTime`
(the duration as a decision variable between bounds).
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_attribute, renamed_keywords


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
        v_start, v_end: velocities at the ends (default ``0``: rest to rest); ``None`` frees them.
        vd_start, vd_end: accelerations at the ends (default ``0``: the torque starts and ends
            at the holding torque ``g(q)``); ``None`` frees them.

    Scalars broadcast to ``(n,)``. The values are pytree leaves (they may be traced and batched);
    which ones are fixed is static.

    Example:
        Rest to rest (the default), and the same motion with free end accelerations:

        >>> from kronjax import trajopt
        >>> bc = trajopt.BoundaryConditions([0.0, 0.0], [1.0, -0.5], 2.0)
        >>> bc.nv, bc.v_end.tolist()
        (2, [0.0, 0.0])
        >>> [order for order, _ in bc.fixed("start")]  # q, v and vd fixed at t = 0
        [0, 1, 2]
        >>> free = trajopt.BoundaryConditions([0.0, 0.0], [1.0, -0.5], 2.0, vd_start=None, vd_end=None)
        >>> [order for order, _ in free.fixed("end")]
        [0, 1]
    """

    duration: Float[Array, ""]
    q_start: Float[Array, " n"]
    q_end: Float[Array, " n"] | None
    v_start: Float[Array, " n"] | None
    v_end: Float[Array, " n"] | None
    vd_start: Float[Array, " n"] | None
    vd_end: Float[Array, " n"] | None

    qd_start = renamed_attribute("qd_start", "v_start", "BoundaryConditions")
    qd_end = renamed_attribute("qd_end", "v_end", "BoundaryConditions")
    qdd_start = renamed_attribute("qdd_start", "vd_start", "BoundaryConditions")
    qdd_end = renamed_attribute("qdd_end", "vd_end", "BoundaryConditions")
    n_dof = renamed_attribute("n_dof", "nv", "BoundaryConditions")

    @renamed_keywords(qd_start="v_start", qd_end="v_end", qdd_start="vd_start", qdd_end="vd_end")
    def __init__(
        self,
        q_start: Float[ArrayLike, " n"] | Sequence[float],
        q_end: Float[ArrayLike, " n"] | Sequence[float] | None,
        duration: Float[ArrayLike, ""],
        *,
        v_start: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        v_end: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        vd_start: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
        vd_end: Float[ArrayLike, " n"] | Float[ArrayLike, ""] | Sequence[float] | None = 0.0,
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
            ("v_start", v_start),
            ("v_end", v_end),
            ("vd_start", vd_start),
            ("vd_end", vd_end),
        ):
            setattr(self, name, None if value is None else _vector(value, n, name, dtype))

    @property
    def nv(self) -> int:
        """The number of joints ``n``."""
        return self.q_start.shape[0]

    def fixed(self, end: str) -> list[tuple[int, Array]]:
        """``[(derivative order, value in t)]`` fixed at ``end`` (``"start"`` or ``"end"``)."""
        values = (self.q_start, self.v_start, self.vd_start) if end == "start" else (self.q_end, self.v_end, self.vd_end)
        return [(j, v) for j, v in enumerate(values) if v is not None]


class FreeTime(eqx.Module):
    """The duration as a decision variable, between ``lower`` and ``upper`` seconds
    (``transcribe(..., free_time=FreeTime(0.1, 5.0))``); the boundary conditions' ``duration`` is
    its initial guess. Pair it with the cost :class:`Duration` for minimum time.

    Example:
        A rotor (``tau = 0.1 vd``) from 0 to 1 rad in a free time between 0.1 s and 5 s; the last
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
