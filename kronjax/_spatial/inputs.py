"""The typed per-body inputs of the tree recursions (private): a joint's transform, a multi-DoF
joint's motion, the joint's subspace, a rigid body, and what a pass reads from the model and ``q``.
:mod:`kronjax._spatial.frames` builds them; :func:`kronjax._spatial.traversal.split` cuts them into
the spans of the scan schedule; each algorithm adds its own per-pass fields in a ``NamedTuple`` of
its own.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from jaxtyping import Array


class Transform(NamedTuple):
    """A joint's ``(E, r)`` per body, affine in ``(cos t, sin t, d)`` (module doc): the coefficients
    ``e0 + cos t e_cos + sin t e_sin`` of ``E`` and ``r0 + cos t r_cos + sin t r_sin + d r_d`` of
    ``r``, fixed by the model, and the joint's ``cos t``, ``sin t`` (``t``: the angle, zero unless
    revolute) and ``d`` (the displacement, zero unless prismatic). Components of ``(nb,)`` arrays."""

    e0: tuple
    e_cos: tuple
    e_sin: tuple
    r0: tuple
    r_cos: tuple
    r_sin: tuple
    r_d: tuple
    cos: Array
    sin: Array
    d: Array


class Motion(NamedTuple):
    """The whole motion of a multi-DoF joint, carried by its first sub-joint: ``rot = G^T`` (rows)
    and ``shift = Pre t`` (:mod:`kronjax._spatial.expansion`), so that ``E = G^T E_0``, ``r = r_0 + Pre
    t`` there."""

    rot: tuple
    shift: tuple


class Joint(NamedTuple):
    """The joint inputs of the recursions, per body of the
    :func:`~kronjax._spatial.expansion.expanded` tree: its ``transform`` (``None`` in a span of
    identity transforms, :class:`~kronjax._spatial.traversal.Schedule`), the ``motion`` of a
    multi-DoF joint (at its first sub-joint, once :func:`~kronjax._spatial.traversal.split` has cut
    the stack; ``None`` elsewhere), and the motion subspace ``(s_w, s_v)`` in body coordinates:
    ``(R^T a, R^T (a x p))`` revolute, ``(0, R^T a)`` prismatic, zero fixed (``R, p``: the post
    placement)."""

    transform: Transform | None
    motion: Motion | None
    s_w: tuple
    s_v: tuple


class RigidBody(NamedTuple):
    """A body's mass ``(nb,)``, centre of mass (components) and inertia about it (rows of
    components) in body coordinates; zero at the sub-joints of a multi-DoF joint but the last."""

    mass: Array
    com: tuple
    inertia: tuple


class TreeInputs(NamedTuple):
    """What the recursions read from the model and ``q``: the :class:`Joint` of every expanded body,
    the :class:`RigidBody` of each (``None`` for kinematics alone), the multi-DoF joints' ``motion``
    (``{first sub-joint: Motion}``, which :func:`~kronjax._spatial.traversal.split` gives to that
    body's span only) and the static mask of the bodies whose joint moves."""

    joint: Joint
    body: RigidBody | None
    motion: dict
    moving: np.ndarray
