"""Forward kinematics: the poses of every body frame (Tuan eqs. 22, 26-27, 71-72)."""

from __future__ import annotations

from typing import NamedTuple

from jaxtyping import Array, ArrayLike, Float

from ..chain import Model


class FramePoses(NamedTuple):
    """Poses of all body frames in the base frame.

    Attributes:
        rotations: ``(nb, 3, 3)``: ``rotations[i] = A_i^(0)``, columns are the body axes in the base frame.
        origins: ``(nb, 3)``: ``origins[i] = ^0 d_i^(0)``, the body frame's origin.

    Example:
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> poses = kj.forward_kinematics(model, jnp.array([jnp.pi / 2, 0.0]))
        >>> poses.rotations.shape, poses.origins.shape
        ((2, 3, 3), (2, 3))
        >>> rotations, origins = poses  # a NamedTuple
        >>> print(np.round(origins[1], 4))  # link 2 starts at the tip of link 1, pointing up
        [0.   1.22 0.  ]
    """

    rotations: Float[Array, "nb 3 3"]
    origins: Float[Array, "nb 3"]


def forward_kinematics(model: Model, q: Float[ArrayLike, " nq"]) -> FramePoses:
    """Rotation matrices and origins of every body frame (Tuan eqs. 22, 26-27, 71-72).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        :class:`FramePoses`: ``rotations`` ``(nb, 3, 3)`` (``A_i^(0)``, base from body ``i``) and
        ``origins`` ``(nb, 3)`` (``^0 d_i``).

    Example:
        Link 1 turned by ``pi/2`` about ``z`` puts link 2's frame at ``(0, L, 0)`` with its ``x``
        axis (the first column of its rotation) along ``+y``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> poses = kj.forward_kinematics(model, jnp.array([jnp.pi / 2, 0.0]))
        >>> print(np.round(poses.origins[1], 4))
        [0.   1.22 0.  ]
        >>> print(np.round(poses.rotations[1][:, 0], 4))
        [0. 1. 0.]
    """
    return FramePoses(*model.poses(model.check_q(q)))
