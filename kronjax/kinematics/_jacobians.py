"""Jacobians, their time derivatives and Hessians of every body or of one (Tuan sec. 3), in the
closed forms of :mod:`kronjax.kinematics._tree` for trees or by ``jax.jacfwd`` of the poses."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_keywords
from ..chain import Model
from ..chain._model import choose_method
from ..configuration import unchecked_integrate
from . import _tree

JACOBIAN_FRAMES = ("base", "body")
HESSIAN_FRAMES = ("base", "body", "body*")
KINEMATICS_METHODS = ("auto", "analytic", "autodiff")


def angular_jacobian(r: Array, dr: Array, frame: str) -> Array:
    """``J_R`` from ``R (..., 3, 3)`` and ``dR/dq (..., 3, 3, n)``: vee of ``Rdot R^T`` (37, base)
    or of ``R^T Rdot`` (40, body), column by column."""
    if frame == "base":
        w = jnp.einsum("...ijk,...lj->...ilk", dr, r)
    else:
        w = jnp.einsum("...ji,...jlk->...ilk", r, dr)
    return jnp.stack([w[..., 2, 1, :], w[..., 0, 2, :], w[..., 1, 0, :]], axis=-2)


def _autodiff_jacobians(model: Model, q: Array, points: Array, frame: str, bodies=None) -> tuple[Array, Array]:
    """``(J_T, J_R)`` by ``jax.jacfwd`` of the poses: points fixed on the bodies (``(k, 3)`` in
    body frames; 29, 31, 45, 47) and rotational Jacobians (37, 40) of ``bodies`` (all: ``None``)."""

    def placed(q):
        r, p = model.poses(q)
        if bodies is not None:
            r, p = r[np.asarray(bodies)], p[np.asarray(bodies)]
        return (p + jnp.einsum("bij,bj->bi", r, points), r), r

    (jt, dr), r = jax.jacfwd(along_tangent(model, q, placed), has_aux=True)(tangent_origin(model, q))
    jr = angular_jacobian(r, dr, frame)
    if frame == "body":
        jt = jnp.einsum("bji,bjk->bik", r, jt)
    return jt, jr


def _autodiff_hessians(model: Model, q: Array, points: Array, frame: str) -> tuple[Array, Array]:
    n = model.nv
    if frame == "body*":
        ht = _autodiff_hessians(model, q, points, "base")[0]
        return jnp.einsum("bji,bjk->bik", model.poses(q)[0], ht), _autodiff_hessians(model, q, points, "body")[1]
    jacobians = along_tangent(model, q, lambda q: _autodiff_jacobians(model, q, points, frame))
    ht, hr = jax.jacfwd(jacobians)(tangent_origin(model, q))
    return ht.reshape(*ht.shape[:-2], n * n), hr.reshape(*hr.shape[:-2], n * n)


def along_tangent(model: Model, q: Array, f):
    """``f`` as a function of a velocity ``v`` at ``q``: ``v -> f(q ⊕ v)`` (``f`` itself when all
    joints are 1-DoF), whose derivative at ``v = 0`` is along the tangent space
    (:mod:`kronjax.configuration`)."""
    if not model.has_multi_dof:
        return f
    return lambda v: f(unchecked_integrate(model, q, v))


def tangent_jvp(model: Model, q: Array, f, v: Array):
    """``(f(q), d/dt f(q ⊕ t v))`` at ``t = 0`` by one forward-mode pass."""
    return jax.jvp(along_tangent(model, q, f), (tangent_origin(model, q),), (v.astype(q.dtype),))


def tangent_origin(model: Model, q: Array) -> Array:
    """Where :func:`along_tangent`'s function is differentiated: ``q``, or ``v = 0``."""
    return q if not model.has_multi_dof else jnp.zeros(model.nv, q.dtype)


def _method(model: Model, method: str) -> str:
    return choose_method(model, method, KINEMATICS_METHODS, "analytic", "autodiff")


def unchecked_jacobians(
    model: Model, q: Array, points: Array | None, frame: str, method: str = "auto", bodies: tuple[int, ...] | None = None
):
    """:func:`jacobians` without input checks (``bodies``: indices or ``None``, all; ``points``:
    ``(k, 3)``, one per body, or ``None``)."""
    if _method(model, method) == "analytic":
        return _tree.jacobians(model.kinematics, q, bodies, points, frame, _dtype(model, q))
    k = model.n_bodies if bodies is None else len(bodies)
    return _autodiff_jacobians(model, q, jnp.zeros((k, 3), q.dtype) if points is None else points, frame, bodies)


def unchecked_hessians(model: Model, q: Array, points: Array | None, frame: str, method: str = "auto"):
    """:func:`hessians` without input checks."""
    if _method(model, method) == "analytic":
        return _tree.hessians(model.kinematics, q, points, frame, _dtype(model, q))
    return _autodiff_hessians(model, q, _zeros_if_none(model, q, points), frame)


def unchecked_jacobians_dot(model: Model, q: Array, v: Array, points: Array | None, frame: str, method: str = "auto"):
    """:func:`jacobians_dot` without input checks."""
    if _method(model, method) == "analytic":
        return _tree.jacobians_dot(model.kinematics, q, v, points, frame, _dtype(model, q, v))
    points = _zeros_if_none(model, q, points)
    return tangent_jvp(model, q, lambda q: _autodiff_jacobians(model, q, points, frame), v)[1]


def _dtype(model: Model, *arrays):
    return jnp.result_type(*arrays, model.kinematics.axes)


def _zeros_if_none(model: Model, q: Array, points: Array | None) -> Array:
    return jnp.zeros((model.n_bodies, 3), q.dtype) if points is None else points


def check_frame(frame: str, allowed: tuple[str, ...]) -> None:
    if frame not in allowed:
        raise ValueError(f"unknown frame {frame!r}; expected one of {allowed}")


def _points(model: Model, points, dtype, bodies: tuple[int, ...] | None = None) -> Array | None:
    """``points`` of :func:`jacobians`: ``None``, ``"com"`` or ``(k, 3)``, one per body of
    ``bodies`` (all: ``None``), checked."""
    if points is None:
        return None
    if isinstance(points, str):
        if points != "com":
            raise ValueError(f"points must be None, 'com' or an (nb, 3) array of body-frame points, got {points!r}")
        if model.inertials is None:
            raise ValueError("points='com' needs a model with inertials")
        com = model.inertials.com.astype(dtype)
        return com if bodies is None else com[np.asarray(bodies)]
    p = jnp.asarray(points, dtype)
    k = model.n_bodies if bodies is None else len(bodies)
    if p.shape != (k, 3):
        per = "body" if bodies is None else "body in bodies"
        raise ValueError(f"points must have shape ({k}, 3), one body-frame point per {per}; got {p.shape}")
    return p


def _bodies(model: Model, bodies) -> tuple[int, ...] | None:
    """``bodies`` of :func:`jacobians` as indices, checked (``None``: all)."""
    if bodies is None:
        return None
    if isinstance(bodies, (str, int, np.integer)):
        raise TypeError(f"bodies must be a sequence of body indices or names (one body: [{bodies!r}]), got {bodies!r}")
    out = tuple(model.body_index(b) for b in bodies)
    if not out:
        raise ValueError("bodies must name at least one body")
    return out


def jacobians(
    model: Model, q: Float[ArrayLike, " nq"], frame: str = "base", points=None, method: str = "auto", bodies=None
) -> tuple[Float[Array, "k 3 nv"], Float[Array, "k 3 nv"]]:
    """Translational and rotational Jacobians of every body, or of the ``bodies`` listed, ``(J_T,
    J_R)``, each ``(nb, 3, n)`` (``(k, 3, n)`` for ``k`` listed bodies).

    ``J_T[i]`` is the Jacobian of body ``i``'s frame origin, or of a point fixed on it, and
    ``J_R[i]`` its rotational Jacobian: the velocities ``J_T[i] v`` and ``omega = J_R[i] v``.
    ``frame="base"``: ``^0J_T^(0)`` (29), ``J_TG`` (45), ``J_R^(0)`` (37) (Pinocchio's
    LOCAL_WORLD_ALIGNED); ``frame="body"``: ``A_0^(i) J`` (31, 47, 40) (Pinocchio's LOCAL).

    With ``bodies`` (e.g. the feet), only those bodies' Jacobians are formed (Pinocchio's
    ``computeJointJacobians`` then ``getFrameJacobian`` per frame): on a floating humanoid the
    ``(nb, 3, n)`` arrays of every body are mostly zeros, and writing them costs more than the
    kinematics (:func:`~kronjax.kinematics.joint_jacobians` keeps every body's in ``6 x n``).
    A frame of a fixed joint (a foot, a tool) is a body of its own when the model keeps it
    (``load_urdf(..., merge_fixed=False)``), or a point on the body it is merged into.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        frame: ``"base"`` (default) or ``"body"`` (above).
        points: ``None`` (the frame origins), ``"com"`` (the centres of mass) or ``(nb, 3)``
            points in the body frames, one per body (``(k, 3)``, one per listed body, with
            ``bodies``).
        method: ``"analytic"`` (Tree models: from the joint axes of one forward-kinematics pass,
            :mod:`kronjax.kinematics._tree`), ``"autodiff"`` (``jax.jacfwd`` of the poses; any model),
            ``"auto"`` (the first for Tree models).
        bodies: ``None`` (every body, the default) or a sequence of ``k`` body indices or names
            (:attr:`~kronjax.chain.Model.body_names`; static: Python ints or strings; repeats
            allowed, e.g. two points on one body).

    Returns:
        ``(J_T, J_R)``, each ``(nb, 3, nv)``: body ``i``'s at ``[i]``; with ``bodies``, each ``(k,
        3, nv)``: ``bodies[i]``'s at ``[i]``.

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

        Link 2's tip, ``L`` further along it, alone:

        >>> J_T, J_R = kj.jacobians(model, jnp.zeros(2), points=[[1.22, 0.0, 0.0]], bodies=["link2"])
        >>> J_T.shape
        (1, 3, 2)
        >>> print(np.round(J_T[0], 4))
        [[0.   0.  ]
         [2.44 1.22]
         [0.   0.  ]]
    """
    check_frame(frame, JACOBIAN_FRAMES)
    q = model.check_q(q)
    bodies = _bodies(model, bodies)
    return unchecked_jacobians(model, q, _points(model, points, q.dtype, bodies), frame, method, bodies)


def hessians(
    model: Model, q: Float[ArrayLike, " nq"], frame: str = "base", points=None, method: str = "auto"
) -> tuple[Float[Array, "nb 3 nvnv"], Float[Array, "nb 3 nvnv"]]:
    """Translational and rotational Hessians of every body, ``(H_T, H_R)``, each ``(nb, 3, n^2)``.

    Khang's layout, jacobian-of-jacobian form: ``H[i][p, j n + k] = dJ[i][p, j]/dq_k`` for the
    Jacobians of :func:`jacobians`, so that ``a = J vd + H (v ⊗ v)``. ``frame="base"``: (51),
    (67) for points, (60); ``"body"``: ``d(J^(i))/dq`` (53, 61); ``"body*"``: ``A_0^(i) H_T^(0)``
    (58), the body-axes acceleration ``a^(i) = J_T^(i) vd + H*_T (v ⊗ v)`` (59), with ``H_R``
    as in ``"body"`` (61, for which ``alpha^(i) = J_R^(i) vd + H_R (v ⊗ v)`` holds already).
    Translational Hessians are symmetric in ``(j, k)``, rotational ones are not.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        frame: ``"base"`` (default), ``"body"`` or ``"body*"`` (above).
        points: ``None`` (the frame origins), ``"com"`` (the centres of mass) or ``(nb, 3)``
            points in the body frames, one per body.
        method: as in :func:`jacobians`.

    Returns:
        ``(H_T, H_R)``, each ``(nb, 3, nv^2)`` in Khang's layout: body ``i``'s entry ``(p, j n + k)``
        is ``dJ[p, j]/dq_k`` of its Jacobian ``J``.

    Example:
        Turning joint 1 at unit speed from ``q = 0`` gives link 2's origin the centripetal
        acceleration ``H_T (v ⊗ v) = (-L, 0, 0)``:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> H_T, H_R = kj.hessians(model, jnp.zeros(2))
        >>> H_T.shape  # (bodies, 3, n^2)
        (2, 3, 4)
        >>> v = jnp.array([1.0, 0.0])
        >>> print(np.round(H_T[1] @ kj.kron(v, v), 4))
        [-1.22  0.    0.  ]
    """
    check_frame(frame, HESSIAN_FRAMES)
    q = model.check_q(q)
    return unchecked_hessians(model, q, _points(model, points, q.dtype), frame, method)


@renamed_keywords(qd="v")
def jacobians_dot(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    frame: str = "base",
    points=None,
    method: str = "auto",
) -> tuple[Float[Array, "nb 3 nv"], Float[Array, "nb 3 nv"]]:
    """Time derivatives of the Jacobians of :func:`jacobians`, ``(dJ_T/dt, dJ_R/dt)``, each ``(nb, 3, n)``.

    ``dJ/dt = H (E_n ⊗ v)`` (Tuan 8 with :func:`hessians`), so that ``a = J vd + (dJ/dt) v``
    (what task-space controllers need; Pinocchio's ``getFrameJacobianTimeVariation``).
    ``frame="base"`` or ``"body"`` (the derivative of the body-frame Jacobian ``A_0^(i) J``).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        v: ``(nv,)`` joint velocities (the tangent space at ``q`` for multi-DoF joints).
        frame: ``"base"`` (default) or ``"body"``.
        points: ``None`` (the frame origins), ``"com"`` (the centres of mass) or ``(nb, 3)``
            points in the body frames, one per body.
        method: as in :func:`jacobians`.

    Returns:
        ``(dJ_T/dt, dJ_R/dt)``, each ``(nb, 3, nv)``.

    Example:
        ``dJ/dt = H (E_n ⊗ v)``; ``(dJ_T/dt) v`` is the centripetal acceleration of
        :func:`hessians`' example:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> q, v = jnp.array([0.3, 0.5]), jnp.array([1.0, -2.0])
        >>> dJ_T, dJ_R = kj.jacobians_dot(model, q, v)
        >>> dJ_T.shape
        (2, 3, 2)
        >>> H_T, _ = kj.hessians(model, q)
        >>> bool(jnp.allclose(dJ_T, H_T @ kj.kron(jnp.eye(2), v[:, None])))
        True
    """
    check_frame(frame, JACOBIAN_FRAMES)
    q, v = model.check_q(q), model.check_v(v, "v")
    return unchecked_jacobians_dot(model, q, v, _points(model, points, q.dtype), frame, method)


def _body_point(model: Model, body: int, point, dtype) -> Array:
    """``(3,)``: the chosen body's point (frame origin, ``"com"`` or a 3-vector) in its frame."""
    if point is None:
        return jnp.zeros(3, dtype)
    if isinstance(point, str):
        if point != "com":
            raise ValueError(f"point must be None, 'com' or a 3-vector in the body frame, got {point!r}")
        if model.inertials is None:
            raise ValueError("point='com' needs a model with inertials")
        return model.inertials.com[body].astype(dtype)
    p = jnp.asarray(point, dtype)
    if p.shape != (3,):
        raise ValueError(f"point must be a 3-vector in the body frame, got shape {p.shape}")
    return p


def _body_points(model: Model, body: int, point, dtype) -> Array:
    """``(nb, 3)`` points, zero except the chosen body's (:func:`_body_point`)."""
    return jnp.zeros((model.n_bodies, 3), dtype).at[body].set(_body_point(model, body, point, dtype))


def prepare_body(model: Model, q, body, point=None):
    q = model.check_q(q)
    b = model.body_index(body)
    return q, b, _body_points(model, b, point, q.dtype)


def translational_jacobian(
    model: Model, q: Float[ArrayLike, " nq"], body: int | str, point=None, frame: str = "base"
) -> Float[Array, "3 nv"]:
    """Translational Jacobian ``J_T`` (3 x n) of a body frame's origin or of a point fixed on the body.

    ``frame="base"``: ``^0J_T^(0) = d(^0 d_i^(0))/dq`` (29), or ``J_TG`` of a point (45);
    ``frame="body"``: ``A_0^(i) J_T^(0)`` (31, 47), so that ``J_T^(i) v`` is the velocity in body axes.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        point: ``None`` (the frame origin), ``"com"`` (the body's centre of mass) or a 3-vector in
            the body frame (``p_b^(b)``).
        frame: ``"base"`` (default) or ``"body"`` (above).

    Returns:
        ``(3, nv)``: ``J_T``.

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
    check_frame(frame, JACOBIAN_FRAMES)
    q = model.check_q(q)
    b = model.body_index(body)
    return unchecked_jacobians(model, q, _body_point(model, b, point, q.dtype)[None], frame, bodies=(b,))[0][0]


def rotational_jacobian(model: Model, q: Float[ArrayLike, " nq"], body: int | str, frame: str = "base") -> Float[Array, "3 nv"]:
    """Rotational Jacobian ``J_R`` (3 x n): ``omega = J_R v`` in the base frame (37) or in the
    body frame (40).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3, nv)``: ``J_R``.

    Example:
        Both joint axes of the double pendulum are ``z``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()  # two links of length L = 1.22 m, joint axes z
        >>> kj.rotational_jacobian(model, jnp.array([0.3, 0.5]), "link2").tolist()
        [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    """
    check_frame(frame, JACOBIAN_FRAMES)
    q = model.check_q(q)
    return unchecked_jacobians(model, q, None, frame, bodies=(model.body_index(body),))[1][0]


def translational_hessian(
    model: Model, q: Float[ArrayLike, " nq"], body: int | str, point=None, frame: str = "base"
) -> Float[Array, "3 nvnv"]:
    """Translational Hessian (3 x n^2, Khang's layout) of a frame origin or a body point.

    ``"base"``: ``H_T^(0) = dJ_T^(0)/dq`` (51; 67 for a point), ``a^(0) = J_T vd + H_T (v ⊗ v)`` (52, 66).
    ``"body"``: ``H_T^(i) = dJ_T^(i)/dq`` (53): the derivative of the body-frame velocity components (54).
    ``"body*"``: ``H*_T^(i) = A_0^(i) H_T^(0)`` (58): ``a^(i) = J_T^(i) vd + H*_T (v ⊗ v)`` (59).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        point: ``None`` (the frame origin), ``"com"`` (the body's centre of mass) or a 3-vector in
            the body frame (``p_b^(b)``).
        frame: ``"base"`` (default), ``"body"`` or ``"body*"`` (above).

    Returns:
        ``(3, nv^2)``: ``H_T`` in Khang's layout, entry ``(p, j n + k) = dJ_T[p, j]/dq_k``.

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
        >>> v = jnp.array([1.0, 0.0])
        >>> bool(np.allclose(H_T @ kj.kron(v, v), [-1.83, 0.0, 0.0]))
        True
        >>> bool(jnp.allclose(H_T, kj.symmetrize(H_T)))  # a point's translational Hessian is symmetric
        True
    """
    check_frame(frame, HESSIAN_FRAMES)
    q, b, points = prepare_body(model, q, body, point)
    return unchecked_hessians(model, q, points, frame)[0][b]


def rotational_hessian(model: Model, q: Float[ArrayLike, " nq"], body: int | str, frame: str = "base") -> Float[Array, "3 nvnv"]:
    """Rotational Hessian (3 x n^2, Khang's layout): ``dJ_R/dq`` in the base frame (60) or the
    body frame (61); ``alpha = J_R vd + H_R (v ⊗ v)`` (62-64). Not symmetric in general.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`).
        frame: ``"base"`` (default) or ``"body"``: the frame the result's components are in.

    Returns:
        ``(3, nv^2)``: ``H_R`` in Khang's layout, entry ``(p, j n + k) = dJ_R[p, j]/dq_k``.

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
    check_frame(frame, JACOBIAN_FRAMES)
    q, b, _ = prepare_body(model, q, body)
    return unchecked_hessians(model, q, None, frame)[1][b]
