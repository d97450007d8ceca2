"""Closed chains in the spline transcription: the spline moves the actuated (independent)
coordinates of a :class:`~kronjax.constrained.CoordinatePartition`; at the samples the closure
determines the other coordinates, and the actuated torques and closure forces balance the tree's
inverse dynamics (``kronjax.constrained._partition``'s module doc).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..constrained import CoordinatePartition
from ..dynamics import inverse_dynamics


def assembled(partition: CoordinatePartition, q: Float[Array, "K k"]) -> Float[Array, "K nq"]:
    """The configurations at the samples, each assembled from the one before (the first from
    ``q0``), so that the motion stays in one assembly mode."""

    def assemble(guess, q_independent):
        q_full = partition.configuration(q_independent, guess)
        return q_full, q_full

    return jax.lax.scan(assemble, partition.q0.astype(q.dtype), q)[1]


def closed_chain_sample(partition: CoordinatePartition, guess, q, v, vd, vdd, method: str, derivatives: str) -> tuple[Array, ...]:
    """One sample's ``(q, v, vd, vdd, tau)`` of every coordinate (``(nq,)``, then ``(nv,)`` each)
    from the actuated ones' ``(k,)`` each, assembled from ``guess``. ``vdd`` is the actuated
    joints' jerk, zero at the others (the passive joints' jerk is a third derivative of the
    closure, which the solver would differentiate again: ``Smoothness(order=3)`` smooths the
    actuated motion). ``tau`` holds the actuated torques ``B^T Q`` at the independent
    coordinates and zero at the others (the closure's forces act there), ``Q`` the tree's
    inverse dynamics."""
    q_full = partition.configuration(q, guess)
    blocks = partition.blocks(q_full)
    v_full = partition.velocity(q_full, v, blocks=blocks)
    vd_full = partition.acceleration(q_full, v_full, vd, blocks=blocks)
    force = inverse_dynamics(partition.model, q_full, v_full, vd_full, method=method, derivatives=derivatives)
    tau, _ = partition.actuation(q_full, force, blocks=blocks)
    vdd_full = jnp.zeros_like(vd_full).at[jnp.asarray(partition.independent)].set(vdd)
    return q_full, v_full, vd_full, vdd_full, jnp.zeros_like(force).at[jnp.asarray(partition.independent)].set(tau)


def closed_chain_samples(partition: CoordinatePartition, q, v, vd, vdd, method: str, derivatives: str) -> tuple[Array, ...]:
    """:func:`closed_chain_sample` at every sample (``(K, k)`` each in; ``(K, nq)``, then
    ``(K, nv)`` each out), assembled sample after sample (:func:`assembled`)."""
    # the assembly's derivative is the implicit function's, whatever the guess: no tangent through it
    guesses = jax.lax.stop_gradient(assembled(partition, q))
    return jax.vmap(lambda *a: closed_chain_sample(partition, *a, method, derivatives))(guesses, q, v, vd, vdd)
