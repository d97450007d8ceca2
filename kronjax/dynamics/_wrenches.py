"""External wrenches on bodies and their generalized forces (Parsa 28, 31)."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._spatial.algebra import cross_last_axis
from ..chain import Model
from ..kinematics._jacobians import unchecked_jacobians
from ._bodies import require_inertials

_WRENCH_FRAMES = ("base", "body")


class Wrench(eqx.Module):
    """An external force and moment acting on one body (Parsa sec. 3.3).

    Args:
        body: the body, by index or name.
        force: ``(3,)`` force (default zero).
        moment: ``(3,)`` free moment (couple), in addition to the moment of ``force`` about the
            body-frame origin (default zero).
        point: where ``force`` acts, fixed on the body: ``None`` (the body frame's origin, as in
            :func:`kronjax.translational_jacobian`), ``"com"`` (the body's centre of mass) or a
            3-vector in body-frame coordinates.
        frame: the axes in which ``force`` and ``moment`` are given: ``"base"`` or ``"body"``
            (the body's own axes, Parsa's convention). ``point`` is always in body coordinates.

    ``force`` and ``moment`` (and a vector ``point``) are pytree leaves: they may be traced,
    batched with ``jax.vmap`` and differentiated.

    Example:
        A moment about ``z`` on the double pendulum's second link acts on both joints (their
        axes are ``z``); a force through a joint axis does not act on that joint:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> couple = kj.Wrench("link2", moment=(0.0, 0.0, 2.0))
        >>> bool(np.allclose(kj.generalized_forces(model, q, couple), [2.0, 2.0]))
        True
        >>> pin = kj.Wrench("link2", force=(0.0, -5.0, 0.0))  # at link 2's frame origin: the elbow
        >>> bool(jnp.isclose(kj.generalized_forces(model, q, pin)[1], 0.0, atol=1e-12))
        True
    """

    body: int | str = eqx.field(static=True)
    force: Float[Array, 3]
    moment: Float[Array, 3]
    point: Float[Array, 3] | None
    at_com: bool = eqx.field(static=True)
    frame: str = eqx.field(static=True)

    def __init__(self, body: int | str, force=None, moment=None, point=None, frame: str = "base"):
        if frame not in _WRENCH_FRAMES:
            raise ValueError(f"unknown wrench frame {frame!r}; expected one of {_WRENCH_FRAMES}")
        self.body = body
        self.frame = frame
        self.force = self._vector(force, "force")
        self.moment = self._vector(moment, "moment")
        if isinstance(point, str):
            if point != "com":
                raise ValueError(f"Wrench point must be None, 'com' or a 3-vector, got {point!r}")
            self.point, self.at_com = None, True
        else:
            self.point = None if point is None else self._vector(point, "point")
            self.at_com = False

    @staticmethod
    def _vector(x, what: str) -> Array:
        if x is None:
            return jnp.zeros(3)
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        if x.shape != (3,):
            raise ValueError(f"Wrench {what} must be a 3-vector, got shape {x.shape}")
        return x


def _wrench_body(model: Model, k: int, wrench: Wrench) -> int:
    try:
        return model.body_index(wrench.body)
    except (KeyError, IndexError, TypeError) as err:
        raise ValueError(
            f"wrench {k} acts on body {wrench.body!r}, which this model does not have; "
            f"its bodies are {list(model.body_names)} (indices 0..{model.n_bodies - 1})"
        ) from err


def as_wrenches(wrenches) -> list[Wrench]:
    if wrenches is None:
        return []
    if isinstance(wrenches, Wrench):
        return [wrenches]
    if isinstance(wrenches, dict) or not isinstance(wrenches, Sequence):
        raise TypeError(f"wrenches must be a Wrench or a sequence of Wrench, got {type(wrenches).__name__}")
    out = list(wrenches)
    for k, w in enumerate(out):
        if not isinstance(w, Wrench):
            raise TypeError(f"wrenches[{k}] must be a kronjax.Wrench, got {w!r}")
    return out


def unchecked_generalized_forces(model: Model, q: Array, wrenches: list[Wrench]) -> Array:
    nb, n = model.n_bodies, model.nv
    if not wrenches:
        return jnp.zeros(n, q.dtype)
    bodies = [_wrench_body(model, k, w) for k, w in enumerate(wrenches)]
    if any(w.at_com for w in wrenches):
        require_inertials(model)
    rotations = model.poses(q)[0]
    dtype = jnp.result_type(q, rotations)
    zeros = jnp.zeros((nb, 3), dtype)
    jt, jr = unchecked_jacobians(model, q, None, "base")  # body-frame origins (29), J_R (37)
    forces, moments = zeros, zeros
    for b, w in zip(bodies, wrenches):
        r = rotations[b]
        force, moment = w.force.astype(dtype), w.moment.astype(dtype)
        f, m = (r @ force, r @ moment) if w.frame == "body" else (force, moment)
        if w.at_com:
            point = model.inertials.com[b]
        elif w.point is not None:
            point = w.point.astype(dtype)
        else:
            point = None
        if point is not None:  # moment of f about the frame origin: (R p) x f
            m = m + cross_last_axis(r @ point, f)
        forces = forces.at[b].add(f)
        moments = moments.at[b].add(m)
    # tau = sum_i J_T(point)^T f + J_R^T m, with J_T(point) = J_T(origin) - [R p x] J_R (Tuan 45)
    return jnp.einsum("bpi,bp->i", jt, forces) + jnp.einsum("bpi,bp->i", jr, moments)


def generalized_forces(
    model: Model, q: Float[ArrayLike, " nq"], wrenches: Wrench | Sequence[Wrench] | None
) -> Float[Array, " nv"]:
    """Joint-space generalized forces of external wrenches (Parsa eqs. 28, 31)::

        f = sum_w J_T(point_w)^T force_w + J_R^T moment_w

    (base-frame ``J_T`` of the point of application and ``J_R``; a body-frame wrench is rotated to
    the base first). ``f`` appears on the right-hand side: ``M vd + C v + g = tau + f``. Its
    power equals the wrenches' power: ``f . v = sum force . v_point + moment . omega``.

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed for a wrench at ``"com"``).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        wrenches: a :class:`Wrench`, a sequence of them (several may act on the same body), or
            ``None`` (no external load: zeros).

    Returns:
        ``(nv,)``: ``f_ext``, the generalized forces of the wrenches (Parsa 28, 31), on the
        right-hand side of ``M vd + C v + g = tau + f_ext``.

    Raises:
        ValueError: a wrench acts on a body the model does not have (the message names it).

    Example:
        A downward force ``F`` at the double pendulum's tip (``y = L sin q1 + L sin(q1 + q2)``)
        gives ``f = -F (dy/dq)^T``; with it, :func:`inverse_dynamics` needs ``f`` less torque:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> model, q = kj.models.double_pendulum(), jnp.array([0.3, 0.7])
        >>> tip = kj.Wrench("link2", force=(0.0, -10.0, 0.0), point=(1.22, 0.0, 0.0))
        >>> f = kj.generalized_forces(model, q, tip)
        >>> bool(np.allclose(f, [-10.0 * 1.22 * (np.cos(0.3) + np.cos(1.0)), -10.0 * 1.22 * np.cos(1.0)]))
        True
        >>> v, vd = jnp.array([1.0, -2.0]), jnp.array([0.5, 0.2])
        >>> tau = kj.inverse_dynamics(model, q, v, vd, wrenches=tip)
        >>> bool(jnp.allclose(tau, kj.inverse_dynamics(model, q, v, vd) - f))
        True
    """
    return unchecked_generalized_forces(model, model.check_q(q), as_wrenches(wrenches))
