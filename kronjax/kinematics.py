"""Kinematics in Khang's layout (Tuan et al. 2019, section 3).

Every function is pure in ``(model, q, ...)`` for one configuration and works under ``jax.jit``,
``jax.vmap`` and ``jax.grad``. Jacobians are ``3 x n``; Hessians are ``3 x n^2`` in Khang's layout
(entry ``(p, j n + k) = dJ[p, j]/dq_k``), so that accelerations are ``J qdd + H (qd ⊗ qd)``.

:func:`jacobians`, :func:`hessians` and :func:`jacobians_dot` give every body's at once
(``(nb, 3, n)``, ``(nb, 3, n^2)``); the per-body functions index them. For Tree models they are
closed forms in the joint axes of one forward-kinematics pass (:mod:`kronjax._jacobians`, ``O(nb n)``
and ``O(nb n^2)``, the size of the output); ``method="autodiff"`` (and every ``from_function``
model) differentiates the poses with ``jax.jacfwd`` instead.

Hessians are returned in the *jacobian-of-jacobian* form of the paper's definitions (51, 53, 60,
61, 67). Only their symmetric part (:func:`kronjax.calculus.symmetrize`) is fixed by the
accelerations; translational Hessians of a point are symmetric, rotational ones are not.

Frames: ``frame="base"`` expresses a quantity in the base frame ``(0)``, ``frame="body"`` in the
body's own frame ``(i)``. For translational Hessians, ``"body"`` is ``d(J_T^(i))/dq`` (53),
which is *not* the acceleration in body axes, and ``"body*"`` is ``A_0^(i) H_T^(0)`` (58), which
is.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from . import _jacobians as _tree
from .calculus import block_skew, skew
from .chain import Model
from .chain._model import choose_method
from .configuration import _integrate

__all__ = [
    "FramePoses",
    "forward_kinematics",
    "jacobians",
    "hessians",
    "jacobians_dot",
    "translational_jacobian",
    "rotational_jacobian",
    "translational_hessian",
    "rotational_hessian",
    "linear_velocity",
    "angular_velocity",
    "linear_acceleration",
    "angular_acceleration",
    "RelativeMotion",
    "relative_motion",
    "compose",
    "point_motion",
]

_JACOBIAN_FRAMES = ("base", "body")
_HESSIAN_FRAMES = ("base", "body", "body*")
KINEMATICS_METHODS = ("auto", "analytic", "autodiff")


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


# --------------------------------------------------------------------------------------------
# Jacobians, their time derivatives and Hessians of all bodies
# --------------------------------------------------------------------------------------------


def _angular_jacobian(r: Array, dr: Array, frame: str) -> Array:
    """``J_R`` from ``R (..., 3, 3)`` and ``dR/dq (..., 3, 3, n)``: vee of ``Rdot R^T`` (37, base)
    or of ``R^T Rdot`` (40, body), column by column."""
    if frame == "base":
        w = jnp.einsum("...ijk,...lj->...ilk", dr, r)
    else:
        w = jnp.einsum("...ji,...jlk->...ilk", r, dr)
    return jnp.stack([w[..., 2, 1, :], w[..., 0, 2, :], w[..., 1, 0, :]], axis=-2)


def _autodiff_jacobians(model: Model, q: Array, points: Array, frame: str) -> tuple[Array, Array]:
    """``(J_T, J_R)`` by ``jax.jacfwd`` of the poses: points fixed on the bodies (``(nb, 3)`` in
    body frames; 29, 31, 45, 47) and rotational Jacobians (37, 40)."""

    def placed(q):
        r, p = model.poses(q)
        return (p + jnp.einsum("bij,bj->bi", r, points), r), r

    (jt, dr), r = jax.jacfwd(_along_tangent(model, q, placed), has_aux=True)(_tangent_origin(model, q))
    jr = _angular_jacobian(r, dr, frame)
    if frame == "body":
        jt = jnp.einsum("bji,bjk->bik", r, jt)
    return jt, jr


def _autodiff_hessians(model: Model, q: Array, points: Array, frame: str) -> tuple[Array, Array]:
    n = model.nv
    if frame == "body*":
        ht = _autodiff_hessians(model, q, points, "base")[0]
        return jnp.einsum("bji,bjk->bik", model.poses(q)[0], ht), _autodiff_hessians(model, q, points, "body")[1]
    jacobians = _along_tangent(model, q, lambda q: _autodiff_jacobians(model, q, points, frame))
    ht, hr = jax.jacfwd(jacobians)(_tangent_origin(model, q))
    return ht.reshape(*ht.shape[:-2], n * n), hr.reshape(*hr.shape[:-2], n * n)


def _along_tangent(model: Model, q: Array, f):
    """``f`` as a function of a velocity ``v`` at ``q``: ``v -> f(q ⊕ v)`` (``f`` itself when all
    joints are 1-DoF), whose derivative at ``v = 0`` is along the tangent space
    (:mod:`kronjax.configuration`)."""
    if not model.has_multi_dof:
        return f
    return lambda v: f(_integrate(model, q, v))


def _tangent_jvp(model: Model, q: Array, f, v: Array):
    """``(f(q), d/dt f(q ⊕ t v))`` at ``t = 0`` by one forward-mode pass."""
    return jax.jvp(_along_tangent(model, q, f), (_tangent_origin(model, q),), (v.astype(q.dtype),))


def _tangent_origin(model: Model, q: Array) -> Array:
    """Where :func:`_along_tangent`'s function is differentiated: ``q``, or ``v = 0``."""
    return q if not model.has_multi_dof else jnp.zeros(model.nv, q.dtype)


def _method(model: Model, method: str) -> str:
    return choose_method(model, method, KINEMATICS_METHODS, "analytic", "autodiff")


def _jacobians(model: Model, q: Array, points: Array | None, frame: str, method: str = "auto"):
    """:func:`jacobians` without input checks (``points``: ``(nb, 3)`` or ``None``)."""
    if _method(model, method) == "analytic":
        return _tree.jacobians(model.kinematics, q, points, frame, _dtype(model, q))
    return _autodiff_jacobians(model, q, _zeros_if_none(model, q, points), frame)


def _hessians(model: Model, q: Array, points: Array | None, frame: str, method: str = "auto"):
    """:func:`hessians` without input checks."""
    if _method(model, method) == "analytic":
        return _tree.hessians(model.kinematics, q, points, frame, _dtype(model, q))
    return _autodiff_hessians(model, q, _zeros_if_none(model, q, points), frame)


def _jacobians_dot(model: Model, q: Array, qd: Array, points: Array | None, frame: str, method: str = "auto"):
    """:func:`jacobians_dot` without input checks."""
    if _method(model, method) == "analytic":
        return _tree.jacobians_dot(model.kinematics, q, qd, points, frame, _dtype(model, q, qd))
    points = _zeros_if_none(model, q, points)
    return _tangent_jvp(model, q, lambda q: _autodiff_jacobians(model, q, points, frame), qd)[1]


def _dtype(model: Model, *arrays):
    return jnp.result_type(*arrays, model.kinematics.axes)


def _zeros_if_none(model: Model, q: Array, points: Array | None) -> Array:
    return jnp.zeros((model.n_bodies, 3), q.dtype) if points is None else points


def _check_frame(frame: str, allowed: tuple[str, ...]) -> None:
    if frame not in allowed:
        raise ValueError(f"unknown frame {frame!r}; expected one of {allowed}")


def _points(model: Model, points, dtype) -> Array | None:
    """``points`` of :func:`jacobians`: ``None``, ``"com"`` or ``(nb, 3)``, checked."""
    if points is None:
        return None
    if isinstance(points, str):
        if points != "com":
            raise ValueError(f"points must be None, 'com' or an (nb, 3) array of body-frame points, got {points!r}")
        if model.inertials is None:
            raise ValueError("points='com' needs a model with inertials")
        return model.inertials.com.astype(dtype)
    p = jnp.asarray(points, dtype)
    if p.shape != (model.n_bodies, 3):
        raise ValueError(f"points must have shape ({model.n_bodies}, 3), one body-frame point per body; got {p.shape}")
    return p


def jacobians(
    model: Model, q: Float[ArrayLike, " nq"], frame: str = "base", points=None, method: str = "auto"
) -> tuple[Float[Array, "nb 3 nv"], Float[Array, "nb 3 nv"]]:
    """Translational and rotational Jacobians of every body, ``(J_T, J_R)``, each ``(nb, 3, n)``.

    ``J_T[i]`` is the Jacobian of body ``i``'s frame origin, or of a point fixed on it, and
    ``J_R[i]`` its rotational Jacobian: ``v = J_T[i] qd``, ``omega = J_R[i] qd``.
    ``frame="base"``: ``^0J_T^(0)`` (29), ``J_TG`` (45), ``J_R^(0)`` (37) (Pinocchio's
    LOCAL_WORLD_ALIGNED); ``frame="body"``: ``A_0^(i) J`` (31, 47, 40) (Pinocchio's LOCAL).

    Args:
        points: ``None`` (the frame origins), ``"com"`` (the centres of mass) or ``(nb, 3)``
            points in the body frames, one per body.
        method: ``"analytic"`` (Tree models: from the joint axes of one forward-kinematics pass,
            :mod:`kronjax._jacobians`), ``"autodiff"`` (``jax.jacfwd`` of the poses; any model),
            ``"auto"`` (the first for Tree models).

    Example:
        At ``q = 0`` link 2's origin ``(L, 0, 0)`` moves along ``y`` with joint 1 only, and link 2
        turns with both joints:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> J_T, J_R = kj.jacobians(model, jnp.zeros(2))
        >>> J_T.shape, J_R.shape  # (bodies, 3, n)
        ((2, 3, 2), (2, 3, 2))
        >>> print(np.round(J_T[1], 4))
        [[0.   0.  ]
         [1.22 0.  ]
         [0.   0.  ]]
        >>> J_R[1].tolist()
        [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    """
    _check_frame(frame, _JACOBIAN_FRAMES)
    q = model.check_q(q)
    return _jacobians(model, q, _points(model, points, q.dtype), frame, method)


def hessians(
    model: Model, q: Float[ArrayLike, " nq"], frame: str = "base", points=None, method: str = "auto"
) -> tuple[Float[Array, "nb 3 nvnv"], Float[Array, "nb 3 nvnv"]]:
    """Translational and rotational Hessians of every body, ``(H_T, H_R)``, each ``(nb, 3, n^2)``.

    Khang's layout, jacobian-of-jacobian form: ``H[i][p, j n + k] = dJ[i][p, j]/dq_k`` for the
    Jacobians of :func:`jacobians`, so that ``a = J qdd + H (qd ⊗ qd)``. ``frame="base"``: (51),
    (67) for points, (60); ``"body"``: ``d(J^(i))/dq`` (53, 61); ``"body*"``: ``A_0^(i) H_T^(0)``
    (58), the body-axes acceleration ``a^(i) = J_T^(i) qdd + H*_T (qd ⊗ qd)`` (59), with ``H_R``
    as in ``"body"`` (61, for which ``alpha^(i) = J_R^(i) qdd + H_R (qd ⊗ qd)`` holds already).
    Translational Hessians are symmetric in ``(j, k)``, rotational ones are not.

    Args: as :func:`jacobians`.

    Example:
        Turning joint 1 at unit speed from ``q = 0`` gives link 2's origin the centripetal
        acceleration ``H_T (qd ⊗ qd) = (-L, 0, 0)``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> H_T, H_R = kj.hessians(model, jnp.zeros(2))
        >>> H_T.shape  # (bodies, 3, n^2)
        (2, 3, 4)
        >>> qd = jnp.array([1.0, 0.0])
        >>> print(np.round(H_T[1] @ kj.kron(qd, qd), 4))
        [-1.22  0.    0.  ]
    """
    _check_frame(frame, _HESSIAN_FRAMES)
    q = model.check_q(q)
    return _hessians(model, q, _points(model, points, q.dtype), frame, method)


def jacobians_dot(
    model: Model,
    q: Float[ArrayLike, " nq"],
    qd: Float[ArrayLike, " nv"],
    frame: str = "base",
    points=None,
    method: str = "auto",
) -> tuple[Float[Array, "nb 3 nv"], Float[Array, "nb 3 nv"]]:
    """Time derivatives of the Jacobians of :func:`jacobians`, ``(dJ_T/dt, dJ_R/dt)``, each ``(nb, 3, n)``.

    ``dJ/dt = H (E_n ⊗ qd)`` (Tuan 8 with :func:`hessians`), so that ``a = J qdd + (dJ/dt) qd``
    (what task-space controllers need; Pinocchio's ``getFrameJacobianTimeVariation``).
    ``frame="base"`` or ``"body"`` (the derivative of the body-frame Jacobian ``A_0^(i) J``).

    Args: as :func:`jacobians`; ``qd``: ``(n,)`` joint velocities.

    Example:
        ``dJ/dt = H (E_n ⊗ qd)``; ``(dJ_T/dt) qd`` is the centripetal acceleration of
        :func:`hessians`' example:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, qd = jnp.array([0.3, 0.5]), jnp.array([1.0, -2.0])
        >>> dJ_T, dJ_R = kj.jacobians_dot(model, q, qd)
        >>> dJ_T.shape
        (2, 3, 2)
        >>> H_T, _ = kj.hessians(model, q)
        >>> bool(jnp.allclose(dJ_T, H_T @ kj.kron(jnp.eye(2), qd[:, None])))
        True
    """
    _check_frame(frame, _JACOBIAN_FRAMES)
    q, qd = model.check_q(q), model.check_v(qd, "qd")
    return _jacobians_dot(model, q, qd, _points(model, points, q.dtype), frame, method)


def _body_points(model: Model, body: int, point, dtype) -> Array:
    """``(nb, 3)`` points, zero except the chosen body's (frame origin, ``"com"`` or a 3-vector)."""
    if point is None:
        p = jnp.zeros(3, dtype)
    elif isinstance(point, str):
        if point != "com":
            raise ValueError(f"point must be None, 'com' or a 3-vector in the body frame, got {point!r}")
        if model.inertials is None:
            raise ValueError("point='com' needs a model with inertials")
        p = model.inertials.com[body].astype(dtype)
    else:
        p = jnp.asarray(point, dtype)
        if p.shape != (3,):
            raise ValueError(f"point must be a 3-vector in the body frame, got shape {p.shape}")
    return jnp.zeros((model.n_bodies, 3), dtype).at[body].set(p)


def _prepare(model: Model, q, body, point=None):
    q = model.check_q(q)
    b = model.body_index(body)
    return q, b, _body_points(model, b, point, q.dtype)


# --------------------------------------------------------------------------------------------
# Public single-body API (one body of the all-bodies functions)
# --------------------------------------------------------------------------------------------


def translational_jacobian(
    model: Model, q: Float[ArrayLike, " nq"], body: int | str, point=None, frame: str = "base"
) -> Float[Array, "3 nv"]:
    """Translational Jacobian ``J_T`` (3 x n) of a body frame's origin or of a point fixed on the body.

    ``frame="base"``: ``^0J_T^(0) = d(^0 d_i^(0))/dq`` (29), or ``J_TG`` of a point (45);
    ``frame="body"``: ``A_0^(i) J_T^(0)`` (31, 47), so that ``v^(i) = J_T^(i) qd``.

    Args:
        point: ``None`` (the frame origin), ``"com"`` (the body's centre of mass) or a 3-vector in
            the body frame (``p_b^(b)``).

    Example:
        Link 2's centre of mass, ``Lc = 0.61`` m along it, at ``q = 0`` is at ``x = L + Lc``:
        joint 1 moves it along ``y`` at ``L + Lc``, joint 2 at ``Lc``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> J_T = kj.translational_jacobian(model, jnp.zeros(2), "link2", point="com")
        >>> bool(np.allclose(J_T, [[0.0, 0.0], [1.83, 0.61], [0.0, 0.0]]))
        True
    """
    _check_frame(frame, _JACOBIAN_FRAMES)
    q, b, points = _prepare(model, q, body, point)
    return _jacobians(model, q, points, frame)[0][b]


def rotational_jacobian(model: Model, q: Float[ArrayLike, " nq"], body: int | str, frame: str = "base") -> Float[Array, "3 nv"]:
    """Rotational Jacobian ``J_R`` (3 x n): ``omega = J_R qd`` in the base frame (37) or in the
    body frame (40).

    Example:
        Both joint axes of the double pendulum are ``z``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> kj.rotational_jacobian(model, jnp.array([0.3, 0.5]), "link2").tolist()
        [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    """
    _check_frame(frame, _JACOBIAN_FRAMES)
    q, b, _ = _prepare(model, q, body)
    return _jacobians(model, q, None, frame)[1][b]


def translational_hessian(
    model: Model, q: Float[ArrayLike, " nq"], body: int | str, point=None, frame: str = "base"
) -> Float[Array, "3 nvnv"]:
    """Translational Hessian (3 x n^2, Khang's layout) of a frame origin or a body point.

    ``"base"``: ``H_T^(0) = dJ_T^(0)/dq`` (51; 67 for a point), ``a^(0) = J_T qdd + H_T (qd ⊗ qd)`` (52, 66).
    ``"body"``: ``H_T^(i) = dJ_T^(i)/dq`` (53): the derivative of the body-frame velocity components (54).
    ``"body*"``: ``H*_T^(i) = A_0^(i) H_T^(0)`` (58): ``a^(i) = J_T^(i) qdd + H*_T (qd ⊗ qd)`` (59).

    Example:
        Link 2's centre of mass at ``x = L + Lc`` (``q = 0``), joint 1 turning at unit speed:
        centripetal acceleration ``-(L + Lc) = -1.83`` along ``x``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> H_T = kj.translational_hessian(model, jnp.zeros(2), "link2", point="com")
        >>> H_T.shape
        (3, 4)
        >>> qd = jnp.array([1.0, 0.0])
        >>> bool(np.allclose(H_T @ kj.kron(qd, qd), [-1.83, 0.0, 0.0]))
        True
        >>> bool(jnp.allclose(H_T, kj.symmetrize(H_T)))  # a point's translational Hessian is symmetric
        True
    """
    _check_frame(frame, _HESSIAN_FRAMES)
    q, b, points = _prepare(model, q, body, point)
    return _hessians(model, q, points, frame)[0][b]


def rotational_hessian(model: Model, q: Float[ArrayLike, " nq"], body: int | str, frame: str = "base") -> Float[Array, "3 nvnv"]:
    """Rotational Hessian (3 x n^2, Khang's layout): ``dJ_R/dq`` in the base frame (60) or the
    body frame (61); ``alpha = J_R qdd + H_R (qd ⊗ qd)`` (62-64). Not symmetric in general.

    Example:
        Joint 1 about ``z``, joint 2 about the ``y`` axis it carries: joint 2's axis turns with
        ``q1``, ``dJ_R[:, 1]/dq_0 = z x y = -x`` (column ``1 n + 0 = 2``), and nothing else varies.

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> arm = kj.from_joints([kj.Joint("R", axis=(0, 0, 1)),
        ...                       kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(1, 0, 0))])
        >>> H_R = kj.rotational_hessian(arm, jnp.zeros(2), 1)
        >>> H_R.tolist()
        [[0.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
        >>> bool(jnp.allclose(H_R, kj.symmetrize(H_R)))
        False
    """
    _check_frame(frame, _JACOBIAN_FRAMES)
    q, b, _ = _prepare(model, q, body)
    return _hessians(model, q, None, frame)[1][b]


def linear_velocity(model: Model, q, qd, body: int | str, point=None, frame: str = "base") -> Float[Array, 3]:
    """``v = J_T qd`` of a frame origin or body point, in the base (30, 44) or body frame (32, 46).

    Example:
        ``v`` matches a finite difference of the position along ``qd``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, qd = jnp.array([0.3, 0.5]), jnp.array([1.0, -2.0])
        >>> v = kj.linear_velocity(model, q, qd, "link2")
        >>> position = lambda q: kj.forward_kinematics(model, q).origins[1]
        >>> eps = 1e-3
        >>> fd = (position(q + eps * qd) - position(q - eps * qd)) / (2 * eps)  # central difference
        >>> bool(jnp.allclose(v, fd, atol=1e-4))
        True
    """
    return translational_jacobian(model, q, body, point, frame) @ model.check_v(qd, "qd")


def angular_velocity(model: Model, q, qd, body: int | str, frame: str = "base") -> Float[Array, 3]:
    """``omega = J_R qd`` in the base (38) or body frame (39).

    Example:
        In the plane, link 2 turns at ``qd1 + qd2`` about ``z``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> kj.angular_velocity(model, jnp.array([0.3, 0.5]), jnp.array([1.0, 2.0]), "link2").tolist()
        [0.0, 0.0, 3.0]
    """
    return rotational_jacobian(model, q, body, frame) @ model.check_v(qd, "qd")


def _accelerations(model: Model, q, qd, qdd, body, point, frame: str) -> tuple[Array, Array]:
    """Linear and angular acceleration of one body: ``J qdd + (dJ/dt) qd`` in the base frame
    (equal to ``J qdd + H (qd ⊗ qd)``, 52, 62, 66), turned into body axes for ``"body"`` (59, 63)."""
    _check_frame(frame, _JACOBIAN_FRAMES)
    q, b, points = _prepare(model, q, body, point)
    qd, qdd = model.check_v(qd, "qd"), model.check_v(qdd, "qdd")
    jt, jr = (x[b] for x in _jacobians(model, q, points, "base"))
    jtd, jrd = (x[b] for x in _jacobians_dot(model, q, qd, points, "base"))
    a, alpha = jt @ qdd + jtd @ qd, jr @ qdd + jrd @ qd
    if frame == "body":
        rotation = model.poses(q)[0][b]
        a, alpha = rotation.T @ a, rotation.T @ alpha
    return a, alpha


def linear_acceleration(model: Model, q, qd, qdd, body: int | str, point=None, frame: str = "base") -> Float[Array, 3]:
    """Acceleration of a frame origin or body point: ``J_T qdd + H_T (qd ⊗ qd)``.

    In the base frame (52, 66), or in body axes with ``H*_T`` (58-59).

    Example:
        Joint 1 turning at unit speed from ``q = 0``: the centripetal accelerations of link 2's
        origin (``-L``) and centre of mass (``-(L + Lc)``), along ``x``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, qd, qdd = jnp.zeros(2), jnp.array([1.0, 0.0]), jnp.zeros(2)
        >>> print(np.round(kj.linear_acceleration(model, q, qd, qdd, "link2"), 4))
        [-1.22  0.    0.  ]
        >>> bool(np.allclose(kj.linear_acceleration(model, q, qd, qdd, "link2", point="com"), [-1.83, 0.0, 0.0]))
        True
    """
    return _accelerations(model, q, qd, qdd, body, point, frame)[0]


def angular_acceleration(model: Model, q, qd, qdd, body: int | str, frame: str = "base") -> Float[Array, 3]:
    """Angular acceleration ``J_R qdd + H_R (qd ⊗ qd)`` in the base (62) or body frame (63-64).

    Example:
        Joint 1 about ``z`` and joint 2 about the ``y`` axis it carries: ``alpha = qdd1 z + qdd2 y +
        qd1 qd2 (z x y)`` at ``q = 0`` (see :func:`rotational_hessian`).

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> arm = kj.from_joints([kj.Joint("R", axis=(0, 0, 1)),
        ...                       kj.Joint("R", parent=0, axis=(0, 1, 0), translation=(1, 0, 0))])
        >>> q, qd, qdd = jnp.zeros(2), jnp.array([2.0, 3.0]), jnp.array([1.0, 0.5])
        >>> kj.angular_acceleration(arm, q, qd, qdd, 1).tolist()
        [-6.0, 0.5, 1.0]
    """
    return _accelerations(model, q, qd, qdd, body, None, frame)[1]


# --------------------------------------------------------------------------------------------
# Relative motion (77)-(91)
# --------------------------------------------------------------------------------------------


class RelativeMotion(eqx.Module):
    """Pose, Jacobians and Hessians of a frame ``c`` relative to a reference frame ``b``.

    Attributes:
        rotation: ``A_c^(b)`` (3 x 3).
        origin: ``^b d_c^(b)`` (3,).
        J_T, J_R: ``3 x n`` (``n = model.nv``): ``^b v_c = J_T qd``, ``^b omega_c = J_R qd``.
        H_T, H_R: ``3 x n^2``: ``^b a_c = J_T qdd + H_T (qd ⊗ qd)``, likewise ``^b alpha_c``.
        expressed_in: ``"reference"``: vectors in frame ``b`` (``^bJ_Tc^(b)``, ``^bH_Tc^(b)``, eqs.
            29, 37, 51, 60); ``"moving"``: in frame ``c`` (``^bJ_Tc^(c)``, ``^bJ_Rc^(c)``,
            ``^bH*_Tc^(c)``, ``^bH_Rc^(c)``; eqs. 31, 40, 58, 61).

    Example:
        Link 2 of the double pendulum relative to link 1: its origin stays at ``(L, 0, 0)``
        and it turns with ``q2`` alone.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> rel = kj.relative_motion(model, jnp.array([0.3, 0.5]), "link2", reference="link1")
        >>> rel.rotation.shape, rel.J_T.shape, rel.H_T.shape, rel.expressed_in
        ((3, 3), (3, 2), (3, 4), 'reference')
        >>> bool(np.allclose(rel.origin, [1.22, 0.0, 0.0])), bool(np.allclose(rel.J_T, 0.0, atol=1e-6))
        (True, True)
        >>> bool(np.allclose(rel.J_R, [[0.0, 0.0], [0.0, 0.0], [0.0, 1.0]], atol=1e-6))
        True
    """

    rotation: Float[Array, "3 3"]
    origin: Float[Array, 3]
    J_T: Float[Array, "3 nv"]
    J_R: Float[Array, "3 nv"]
    H_T: Float[Array, "3 nv*nv"]
    H_R: Float[Array, "3 nv*nv"]
    expressed_in: str = eqx.field(static=True, default="reference")

    def __check_init__(self):
        if self.expressed_in not in ("reference", "moving"):
            raise ValueError(f"expressed_in must be 'reference' or 'moving', got {self.expressed_in!r}")


def relative_motion(
    model: Model,
    q: Float[ArrayLike, " nq"],
    body: int | str,
    reference: int | str | None = None,
    expressed_in: str = "reference",
) -> RelativeMotion:
    """Motion of ``body``'s frame relative to ``reference``'s frame (``None``: the base), by
    autodiff of the relative pose ``A_c^(b) = A_b^T A_c``, ``^b d_c^(b) = A_b^T (d_c - d_b)``.

    Jacobians are ``3 x nv`` and Hessians ``3 x nv^2``: ``^b v_c = J_T v`` and ``^b a_c = J_T vd +
    H_T (v ⊗ v)`` for the model's velocity coordinates ``v``. With free, spherical or planar joints
    the derivatives are taken along the tangent space, ``d/dxi f(q ⊕ xi)`` at ``xi = 0``
    (:func:`kronjax.integrate`); the Hessian differentiates the Jacobian at ``q ⊕ xi`` the same
    way, so ``H (v ⊗ v)`` is ``(dJ/dt) v`` along any motion with velocity ``v``.

    Example:
        With ``reference=None`` it is the motion in the base frame, as :func:`translational_jacobian`
        and :func:`translational_hessian` give it:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q = jnp.array([0.3, 0.5])
        >>> motion = kj.relative_motion(model, q, "link2")
        >>> bool(jnp.allclose(motion.J_T, kj.translational_jacobian(model, q, "link2")))
        True
        >>> bool(jnp.allclose(motion.H_T, kj.translational_hessian(model, q, "link2")))
        True
    """
    if expressed_in not in ("reference", "moving"):
        raise ValueError(f"expressed_in must be 'reference' or 'moving', got {expressed_in!r}")
    q = model.check_q(q)
    c = model.body_index(body)
    b = None if reference is None else model.body_index(reference)

    def pose(q):
        rs, ps = model.poses(q)
        if b is None:
            return rs[c], ps[c]
        return rs[b].T @ rs[c], rs[b].T @ (ps[c] - ps[b])

    frame = "base" if expressed_in == "reference" else "body"

    def pose_and_rotation(q):
        rp = pose(q)
        return (rp[1], rp[0]), rp[0]

    def derivative(f, q, has_aux=False):
        """``jax.jacfwd`` of ``f`` at ``q`` along the tangent space (trailing axis ``nv``)."""
        return jax.jacfwd(_along_tangent(model, q, f), has_aux=has_aux)(_tangent_origin(model, q))

    def jacobians(q):
        """``^bJ_Tc^(b)`` and ``J_R`` in ``frame``."""
        (jt, dr), r = derivative(pose_and_rotation, q, has_aux=True)
        return jt, _angular_jacobian(r, dr, frame)

    n = model.nv
    rotation, origin = pose(q)
    jt, jr = jacobians(q)
    ht, hr = (h.reshape(3, n * n) for h in derivative(jacobians, q))
    if expressed_in == "moving":  # (31), (58): J_T and H_T of the reference frame turned into c's
        jt, ht = rotation.T @ jt, rotation.T @ ht
    return RelativeMotion(rotation, origin, jt, jr, ht, hr, expressed_in)


def _quadratic_cross(w: Array, x: Array) -> Array:
    """Khang-layout ``3 x n^2`` matrix of ``(W qd) x ((W qd) x x)``: ``W~ (W~ ⊗ E_n)(x ⊗ E_{n^2})`` (86, 88)."""
    n = w.shape[1]
    bw = block_skew(w)
    return bw @ jnp.kron(bw, jnp.eye(n, dtype=w.dtype)) @ jnp.kron(x.reshape(3, 1), jnp.eye(n * n, dtype=w.dtype))


def compose(ab: RelativeMotion, bc: RelativeMotion) -> RelativeMotion:
    """Motion of ``c`` relative to ``a`` from that of ``b`` relative to ``a`` and ``c`` relative to ``b``.

    With both inputs ``expressed_in="reference"`` (``ab`` in frame ``a``, ``bc`` in frame ``b``):
    eqs. (71)-(72), (77)-(78), (86)-(87), result in frame ``a``. With both ``"moving"`` (``ab`` in
    frame ``b``, ``bc`` in frame ``c``): eqs. (80)-(81), (89)-(90), result in frame ``c``.

    The Hessians are those of the papers' relations, which hold for the quadratic form
    ``H (qd ⊗ qd)``: they equal the jacobian-of-jacobian Hessians in their symmetric part.

    Example:
        Base -> link 1 composed with link 1 -> link 2 is base -> link 2:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q = jnp.array([0.3, 0.5])
        >>> ab = kj.relative_motion(model, q, "link1")
        >>> bc = kj.relative_motion(model, q, "link2", reference="link1")
        >>> ac, direct = kj.compose(ab, bc), kj.relative_motion(model, q, "link2")
        >>> bool(jnp.allclose(ac.origin, direct.origin) and jnp.allclose(ac.J_T, direct.J_T))
        True
        >>> bool(jnp.allclose(kj.symmetrize(ac.H_T), kj.symmetrize(direct.H_T)))
        True
    """
    if ab.expressed_in != bc.expressed_in:
        raise ValueError(f"compose needs both motions expressed alike, got {ab.expressed_in!r} and {bc.expressed_in!r}")
    if ab.J_T.shape != bc.J_T.shape:
        raise ValueError(f"motions of different coordinates: J_T {ab.J_T.shape} vs {bc.J_T.shape}")
    n = ab.J_T.shape[1]
    eye_n = jnp.eye(n, dtype=ab.J_T.dtype)
    rotation = ab.rotation @ bc.rotation  # (72)
    origin = ab.origin + ab.rotation @ bc.origin  # (71)
    if ab.expressed_in == "reference":
        a_b = ab.rotation  # A_b^(a)
        d = a_b @ bc.origin  # ^b d_c^(a)
        w = ab.J_R  # ^a J_Rb^(a)
        jt_rel, jr_rel = a_b @ bc.J_T, a_b @ bc.J_R  # ^b J_Tc^(a), ^b J_Rc^(a)
        jt = ab.J_T - skew(d) @ w + jt_rel  # (77)
        jr = w + jr_rel  # (78)
        ht = (
            ab.H_T - skew(d) @ ab.H_R + 2 * block_skew(w) @ jnp.kron(jt_rel, eye_n) + _quadratic_cross(w, d) + a_b @ bc.H_T
        )  # (86)
        hr = ab.H_R + a_b @ bc.H_R + block_skew(w) @ jnp.kron(jr_rel, eye_n)  # (87)
    else:
        a_bc = bc.rotation.T  # A_b^(c)
        d = bc.origin  # ^b d_c^(b)
        w = a_bc @ ab.J_R  # ^a J_Rb expressed in c
        jt = a_bc @ ab.J_T - a_bc @ skew(d) @ ab.J_R + bc.J_T  # (80)
        jr = w + bc.J_R  # (81)
        d_c = a_bc @ d  # ^b d_c^(c)
        ht = (
            a_bc @ ab.H_T
            - skew(d_c) @ a_bc @ ab.H_R
            + 2 * block_skew(w) @ jnp.kron(bc.J_T, eye_n)
            + _quadratic_cross(w, d_c)
            + bc.H_T
        )  # (89)
        hr = a_bc @ ab.H_R + bc.H_R + block_skew(w) @ jnp.kron(bc.J_R, eye_n)  # (90)
    return RelativeMotion(rotation, origin, jt, jr, ht, hr, ab.expressed_in)


def point_motion(motion: RelativeMotion, point: Float[ArrayLike, 3]) -> tuple[Float[Array, "3 nv"], Float[Array, "3 nv*nv"]]:
    """``(J_TG, H_TG)`` of a point fixed on the moving frame, given in moving-frame coordinates.

    Eqs. (79), (88) (``expressed_in="reference"``) or (82), (91) (``"moving"``).

    Example:
        Link 2's centre of mass is ``(Lc, 0, 0) = (0.61, 0, 0)`` in its frame:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q = jnp.array([0.3, 0.5])
        >>> J_TG, H_TG = kj.point_motion(kj.relative_motion(model, q, "link2"), jnp.array([0.61, 0.0, 0.0]))
        >>> bool(jnp.allclose(J_TG, kj.translational_jacobian(model, q, "link2", point="com")))
        True
        >>> bool(jnp.allclose(H_TG, kj.translational_hessian(model, q, "link2", point="com")))
        True
    """
    point = jnp.asarray(point, motion.J_T.dtype)
    if point.shape != (3,):
        raise ValueError(f"point must be a 3-vector, got shape {point.shape}")
    p = motion.rotation @ point if motion.expressed_in == "reference" else point
    jt = motion.J_T - skew(p) @ motion.J_R
    ht = motion.H_T - skew(p) @ motion.H_R + _quadratic_cross(motion.J_R, p)
    return jt, ht
