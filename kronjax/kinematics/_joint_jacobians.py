"""Every body's Jacobian of a tree in one ``6 x n`` matrix: the world-frame motions of the
coordinates (Pinocchio's ``computeJointJacobians``, ``data.J``) and the static supports that
select each body's columns (:mod:`kronjax.kinematics._tree`)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._spatial.algebra import components
from ..chain import Model, Tree
from . import _tree
from ._jacobians import JACOBIAN_FRAMES, check_frame


class JointJacobians(eqx.Module):
    """The Jacobians of every body of a tree in compact form (:func:`joint_jacobians`).

    A body's Jacobian is the columns of :attr:`subspaces` of the coordinates that move it (its
    :attr:`support`), shifted to the body's point: with ``v_j`` and ``w_j`` the linear and angular
    rows of column ``j``, a point ``P`` fixed on body ``i`` (base frame) has ``J_T[:, j] = v_j + w_j
    x P`` and ``J_R[:, j] = w_j`` for ``j`` in ``support[i]``, zero elsewhere (Tuan 29, 37, 45;
    the columns ``t_j + w_j x (P - p_j)`` of :func:`~kronjax.jacobians`).

    Columns are the *full* coordinates: one per velocity coordinate, in ``v``'s order, and with
    mimic joints one more per mimic joint (a coupled joint moves its own bodies about its own
    axis), so ``n = nv`` unless the model has mimic joints. Column ``j`` is velocity coordinate
    ``coordinates[j]`` times ``multipliers[j]`` (``v_full = G v``, :attr:`reduction`), and a
    body's Jacobian in ``v`` is ``J_full G``.

    Multi-DoF joints are their velocity coordinates' columns (free: the base's linear velocity and
    angular velocity in the base body's axes, Pinocchio's convention, as in ``v``; spherical: the
    angular velocity in the child's axes), and each body's support holds all of its joints' columns.

    Attributes:
        subspaces: ``(6, n)``: column ``j`` is the spatial velocity that a unit velocity of full
            coordinate ``j`` gives, in the base frame about the base origin: rows 0-2 the velocity
            of the (moving) point at the base origin, ``t_j + p_j x w_j``, rows 3-5 the angular
            velocity ``w_j`` (linear first, as in ``[J_T; J_R]``). This is Pinocchio's ``data.J``
            after ``computeJointJacobians`` (a ``Motion`` is ``[linear; angular]`` there too), with
            Pinocchio's columns in kronjax's coordinate order (its ``idx_v`` of each joint by name;
            with mimic joints Pinocchio 4.1 has a column of its own for each, as here).
        rotations: ``(nb, 3, 3)``: ``A_i^(0)``, base from body ``i`` (:func:`~kronjax.forward_kinematics`).
        origins: ``(nb, 3)``: body ``i``'s frame origin in the base frame.
        support: static, per body the columns that move it (``j ⪯ i``: its joint's and its
            ancestors'), in increasing order.
        coordinates: static, ``(n,)``: the velocity coordinate of each column (a mimic joint's is
            its primary's).
        multipliers: static, ``(n,)``: each column's multiplier (1 but for mimic joints).
        nv: static: the number of velocity coordinates.

    The arrays have a leading batch axis under ``jax.vmap``; the methods are for one
    configuration (``jax.vmap(lambda jj: jj.jacobians())(batched)`` for a batch).

    Example:
        The double pendulum at ``q = 0``: both joint axes are ``z``; joint 2's axis passes through
        ``(L, 0, 0)``, so its unit rotation moves the point at the base origin along ``-y`` at ``L``;
        link 1 is moved by column 0 only:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> jj = kj.joint_jacobians(model, jnp.zeros(2))
        >>> print(np.round(jj.subspaces, 4))
        [[ 0.    0.  ]
         [ 0.   -1.22]
         [ 0.    0.  ]
         [ 0.    0.  ]
         [ 0.    0.  ]
         [ 1.    1.  ]]
        >>> jj.support
        ((0,), (0, 1))
        >>> J_T, J_R = jj.jacobians()  # kj.jacobians(model, q): (nb, 3, nv) each
        >>> print(np.round(J_T[1], 4))
        [[0.   0.  ]
         [1.22 0.  ]
         [0.   0.  ]]
    """

    subspaces: Float[Array, "6 n"]
    rotations: Float[Array, "nb 3 3"]
    origins: Float[Array, "nb 3"]
    support: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    coordinates: tuple[int, ...] = eqx.field(static=True)
    multipliers: tuple[float, ...] = eqx.field(static=True)
    nv: int = eqx.field(static=True)

    @property
    def support_mask(self) -> np.ndarray:
        """``(nb, n)`` bool: column ``j`` moves body ``i`` (:attr:`support` as a mask)."""
        mask = np.zeros((len(self.support), len(self.coordinates)), bool)
        for i, columns in enumerate(self.support):
            mask[i, list(columns)] = True
        return mask

    @property
    def reduction(self) -> np.ndarray:
        """``G`` ``(n, nv)``: ``G[j, coordinates[j]] = multipliers[j]``; the identity without mimic joints."""
        g = np.zeros((len(self.coordinates), self.nv))
        g[np.arange(len(self.coordinates)), self.coordinates] = self.multipliers
        return g

    def jacobians(self, frame: str = "base", points=None, bodies=None) -> tuple[Float[Array, "k 3 nv"], Float[Array, "k 3 nv"]]:
        """Every body's Jacobians, or the listed bodies', in Khang's layout: equal, to rounding, to
        :func:`~kronjax.jacobians`' ``(J_T, J_R)`` at the same ``q``.

        Args:
            frame: ``"base"`` (default; Pinocchio's LOCAL_WORLD_ALIGNED) or ``"body"`` (LOCAL).
            points: ``None`` (the frame origins) or ``(k, 3)`` points in the body frames, one per
                body (every body, or each of ``bodies``).
            bodies: ``None`` (every body) or a sequence of ``k`` body indices.

        Returns:
            ``(J_T, J_R)``, each ``(k, 3, nv)`` (``k = nb`` without ``bodies``).
        """
        check_frame(frame, JACOBIAN_FRAMES)
        bodies = np.arange(len(self.support)) if bodies is None else np.asarray(bodies, int)
        dtype = self.subspaces.dtype
        s = self.subspaces
        columns = _tree.Columns(tuple(s[:3]), tuple(s[3:]), components(self.rotations), components(self.origins))
        if points is not None:
            points = jnp.asarray(points, dtype)
            if points.shape != (len(bodies), 3):
                raise ValueError(f"points must have shape ({len(bodies)}, 3), one body-frame point per body; got {points.shape}")
        out = _tree.jacobian_arrays(columns, bodies, self.support_mask[bodies], points, frame, dtype)
        if self.coordinates == tuple(range(self.nv)) and all(m == 1 for m in self.multipliers):
            return out
        g = jnp.asarray(self.reduction, dtype)
        return tuple(x @ g for x in out)


def joint_jacobians(model: Model, q: Float[ArrayLike, " nq"]) -> JointJacobians:
    """The Jacobians of every body of a tree in compact form: the ``(6, n)`` world-frame motions of
    the coordinates and the bodies' poses (Pinocchio's ``computeJointJacobians``).

    :func:`~kronjax.jacobians` writes ``nb x 6 x nv`` numbers, mostly zeros on a branched
    robot (a foot is moved by its leg and the base only); this writes ``6 n + 12 nb`` and leaves
    the selection of each body's columns to :meth:`JointJacobians.jacobians` or to the caller
    (:attr:`JointJacobians.support`). One forward-kinematics pass, Tree models only.

    Args:
        model: the :class:`~kronjax.chain.Model` (a Tree: ``from_joints``, ``from_dh``, ``load_urdf``).
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).

    Returns:
        :class:`JointJacobians`: ``subspaces`` ``(6, n)`` (``[linear; angular]`` about the base
        origin, base frame; ``n = nv`` without mimic joints), ``rotations`` ``(nb, 3, 3)``,
        ``origins`` ``(nb, 3)`` and the static ``support``, ``coordinates``, ``multipliers``.

    Example:
        The columns of a foot of a floating robot, and its Jacobian from them:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.from_joints([kj.Joint("free"), kj.Joint("R", parent=0, axis=(0, 1, 0)),  # a hip
        ...                         kj.Joint("R", parent=1, axis=(0, 1, 0), translation=(0, 0, -0.4), body_name="shin"),
        ...                         kj.Joint("R", parent=0, axis=(1, 0, 0))])  # an arm
        >>> q = kj.neutral(model)
        >>> jj = kj.joint_jacobians(model, q)
        >>> jj.subspaces.shape, jj.support[2]  # the shin: the base's 6 columns, hip, knee
        ((6, 9), (0, 1, 2, 3, 4, 5, 6, 7))
        >>> J_T, J_R = jj.jacobians(points=[[0.0, 0.0, -0.4]], bodies=[2])  # the foot, 0.4 m below the knee
        >>> bool(jnp.allclose(J_T, kj.jacobians(model, q, points=[[0.0, 0.0, -0.4]], bodies=["shin"])[0]))
        True
    """
    tree = model.kinematics
    if not isinstance(tree, Tree):
        raise ValueError(
            f"joint_jacobians needs a Tree model (from_dh / from_joints / load_urdf); this model's kinematics is a "
            f"{type(tree).__name__}: use kronjax.jacobians(model, q, bodies=...)"
        )
    q = model.check_q(q)
    subspaces, rotations, origins = _tree.joint_motion(tree, q, jnp.result_type(q, tree.axes))
    index, multipliers = _tree.coordinates(tree)
    support = tuple(tuple(int(j) for j in np.flatnonzero(row)) for row in _tree.support(tree))
    return JointJacobians(subspaces, rotations, origins, support, index, multipliers, model.nv)
