"""Passive joint forces: viscous damping and Coulomb friction of each velocity coordinate.

``passive_forces(model, q, v) = -d v - f sign(v)`` with the model's ``damping`` ``d`` and
``friction`` ``f`` (:class:`~kronjax.chain.Model`, ``(nv,)`` each; URDF's ``<dynamics damping
friction>``, MJCF's ``damping`` and ``frictionloss``). They are forces the joints apply, like the
applied torques: :func:`kronjax.simulate.rollout` and ``forward_dynamics(..., passive=True)``
add them to ``tau``, and ``inverse_dynamics(..., passive=True)`` returns the torque that overcomes
them. Without ``passive=True`` all three leave them out (``rollout``'s former default, on, still
applies for one release, with a warning), so that inverse and forward dynamics stay each other's
inverse.

Coulomb friction ``-f sign(v)`` is discontinuous at ``v = 0`` and its derivative is zero
elsewhere: where gradients must see it (trajectory optimisation, identification) pass
``smoothing=s > 0`` for ``-f tanh(v / s)``. MuJoCo's ``frictionloss`` is not this force but a
constraint of its solver, which holds a joint at rest below ``f``; MuJoCo's ``qfrc_passive``
(springs and dampers) equals ``-d v`` on models without springs.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .chain import Model

__all__ = ["passive_forces"]


def passive_forces(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"], smoothing: float = 0.0
) -> Float[Array, " nv"]:
    """``-d v - f sign(v)`` (``(nv,)``), or ``-d v - f tanh(v / smoothing)`` with ``smoothing >
    0`` (module doc). ``q`` (``(nq,)``, checked) is unused by dampers and friction; it is part of
    the signature as every state-dependent force's.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` velocity (the tangent space at ``q`` for multi-DoF joints).
        smoothing: ``0`` (default): Coulomb friction by ``sign(v)``; ``> 0``: by ``tanh(v /
            smoothing)``, differentiable at ``v = 0``.

    Returns:
        ``(nv,)``: the joints' passive forces (damping and friction; zeros where the
        model has none).

    Example:
        A pendulum whose joint has damping ``d = 0.5`` and Coulomb friction ``f = 0.1``:

        >>> import kronjax as kj
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> joint = kj.Joint("R", axis=(0.0, 0.0, 1.0), damping=0.5, friction=0.1)
        >>> model = kj.from_joints([joint], [kj.Inertial(mass=1.0, com=(0.5, 0.0, 0.0), inertia=(0.0, 0.1, 0.1))])
        >>> q, v = jnp.zeros(1), jnp.array([2.0])
        >>> bool(np.allclose(kj.passive_forces(model, q, v), -0.5 * 2.0 - 0.1))
        True
        >>> smooth = kj.passive_forces(model, q, v, smoothing=0.5)  # -d v - f tanh(v / 0.5)
        >>> bool(np.allclose(smooth, -0.5 * 2.0 - 0.1 * np.tanh(4.0)))
        True
        >>> bool(kj.passive_forces(model, q, jnp.zeros(1))[0] == 0)  # at rest: sign(0) = 0
        True
    """
    model.check_q(q, "q")
    v = model.check_v(v, "v")
    if not smoothing >= 0:
        raise ValueError(f"smoothing must be >= 0 (0: the exact sign), got {smoothing!r}")
    force = jnp.zeros_like(v)
    if model.damping is not None:
        force = force - model.damping.astype(v.dtype) * v
    if model.friction is not None:
        direction = jnp.tanh(v / smoothing) if smoothing > 0 else jnp.sign(v)
        force = force - model.friction.astype(v.dtype) * direction
    return force
