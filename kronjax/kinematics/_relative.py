"""Relative motion of one body with respect to another (Tuan eqs. 77-91)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._deprecation import renamed_attribute, renamed_keywords
from ..calculus import block_skew, skew
from ..chain import Model
from ._jacobians import along_tangent, angular_jacobian, tangent_origin


class RelativeMotion(eqx.Module):
    """Pose, Jacobians and Hessians of a frame ``c`` relative to a reference frame ``b``.

    Attributes:
        rotation: ``A_c^(b)`` (3 x 3).
        origin: ``^b d_c^(b)`` (3,).
        J_T, J_R: ``3 x n`` (``n = model.nv``): ``^b v_c = J_T v`` (``v`` on the right the joint velocities), ``^b omega_c = J_R v``.
        H_T, H_R: ``3 x n^2``: ``^b a_c = J_T vd + H_T (v ⊗ v)``, likewise ``^b alpha_c``.
        frame: ``"reference"``: vectors in frame ``b`` (``^bJ_Tc^(b)``, ``^bH_Tc^(b)``, eqs.
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
        >>> rel.rotation.shape, rel.J_T.shape, rel.H_T.shape, rel.frame
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
    frame: str = eqx.field(static=True, default="reference")

    expressed_in = renamed_attribute("expressed_in", "frame", "RelativeMotion")

    def __check_init__(self):
        if self.frame not in ("reference", "moving"):
            raise ValueError(f"frame must be 'reference' or 'moving', got {self.frame!r}")


@renamed_keywords(expressed_in="frame")
def relative_motion(
    model: Model,
    q: Float[ArrayLike, " nq"],
    body: int | str,
    reference: int | str | None = None,
    frame: str = "reference",
) -> RelativeMotion:
    """Motion of ``body``'s frame relative to ``reference``'s frame (``None``: the base), by
    autodiff of the relative pose ``A_c^(b) = A_b^T A_c``, ``^b d_c^(b) = A_b^T (d_c - d_b)``.

    Jacobians are ``3 x nv`` and Hessians ``3 x nv^2``: ``^b v_c = J_T v`` and ``^b a_c = J_T vd +
    H_T (v ⊗ v)`` for the model's velocity coordinates ``v``. With free, spherical or planar joints
    the derivatives are taken along the tangent space, ``d/dxi f(q ⊕ xi)`` at ``xi = 0``
    (:func:`kronjax.integrate`); the Hessian differentiates the Jacobian at ``q ⊕ xi`` the same
    way, so ``H (v ⊗ v)`` is ``(dJ/dt) v`` along any motion with velocity ``v``.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        q: ``(nq,)`` configuration (``nq = nv`` with 1-DoF joints; free and spherical joints as
            quaternions, Pinocchio's order).
        body: the moving body's index or name.
        reference: the reference body's index or name; ``None`` (default): the base.
        frame: ``"reference"`` (default): components in the reference's frame; ``"moving"``: in
            the moving body's frame.

    Returns:
        :class:`RelativeMotion`: the relative pose, its Jacobians ``(3, nv)`` and Hessians
        ``(3, nv^2)``.

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
    if frame not in ("reference", "moving"):
        raise ValueError(f"frame must be 'reference' or 'moving', got {frame!r}")
    q = model.check_q(q)
    c = model.body_index(body)
    b = None if reference is None else model.body_index(reference)

    def pose(q):
        rs, ps = model.poses(q)
        if b is None:
            return rs[c], ps[c]
        return rs[b].T @ rs[c], rs[b].T @ (ps[c] - ps[b])

    jacobian_frame = "base" if frame == "reference" else "body"

    def pose_and_rotation(q):
        rp = pose(q)
        return (rp[1], rp[0]), rp[0]

    def derivative(f, q, has_aux=False):
        """``jax.jacfwd`` of ``f`` at ``q`` along the tangent space (trailing axis ``nv``)."""
        return jax.jacfwd(along_tangent(model, q, f), has_aux=has_aux)(tangent_origin(model, q))

    def jacobians(q):
        """``^bJ_Tc^(b)`` and ``J_R`` in ``jacobian_frame``."""
        (jt, dr), r = derivative(pose_and_rotation, q, has_aux=True)
        return jt, angular_jacobian(r, dr, jacobian_frame)

    n = model.nv
    rotation, origin = pose(q)
    jt, jr = jacobians(q)
    ht, hr = (h.reshape(3, n * n) for h in derivative(jacobians, q))
    if frame == "moving":  # (31), (58): J_T and H_T of the reference frame turned into c's
        jt, ht = rotation.T @ jt, rotation.T @ ht
    return RelativeMotion(rotation, origin, jt, jr, ht, hr, frame)


def _quadratic_cross(w: Array, x: Array) -> Array:
    """Khang-layout ``3 x n^2`` matrix of ``(W v) x ((W v) x x)``: ``W~ (W~ ⊗ E_n)(x ⊗ E_{n^2})`` (86, 88)."""
    n = w.shape[1]
    bw = block_skew(w)
    return bw @ jnp.kron(bw, jnp.eye(n, dtype=w.dtype)) @ jnp.kron(x.reshape(3, 1), jnp.eye(n * n, dtype=w.dtype))


def compose(ab: RelativeMotion, bc: RelativeMotion) -> RelativeMotion:
    """Motion of ``c`` relative to ``a`` from that of ``b`` relative to ``a`` and ``c`` relative to ``b``.

    With both inputs ``frame="reference"`` (``ab`` in frame ``a``, ``bc`` in frame ``b``):
    eqs. (71)-(72), (77)-(78), (86)-(87), result in frame ``a``. With both ``"moving"`` (``ab`` in
    frame ``b``, ``bc`` in frame ``c``): eqs. (80)-(81), (89)-(90), result in frame ``c``.

    The Hessians are those of the papers' relations, which hold for the quadratic form
    ``H (v ⊗ v)``: they equal the jacobian-of-jacobian Hessians in their symmetric part.

    Args:
        ab: the motion of ``b`` relative to ``a``.
        bc: the motion of ``c`` relative to ``b``, expressed as ``ab`` is.

    Returns:
        :class:`RelativeMotion`: the motion of ``c`` relative to ``a``, expressed as the inputs.

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
    if ab.frame != bc.frame:
        raise ValueError(f"compose needs both motions expressed alike, got {ab.frame!r} and {bc.frame!r}")
    if ab.J_T.shape != bc.J_T.shape:
        raise ValueError(f"motions of different coordinates: J_T {ab.J_T.shape} vs {bc.J_T.shape}")
    n = ab.J_T.shape[1]
    eye_n = jnp.eye(n, dtype=ab.J_T.dtype)
    rotation = ab.rotation @ bc.rotation  # (72)
    origin = ab.origin + ab.rotation @ bc.origin  # (71)
    if ab.frame == "reference":
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
    return RelativeMotion(rotation, origin, jt, jr, ht, hr, ab.frame)


def point_motion(motion: RelativeMotion, point: Float[ArrayLike, 3]) -> tuple[Float[Array, "3 nv"], Float[Array, "3 nv*nv"]]:
    """``(J_TG, H_TG)`` of a point fixed on the moving frame, given in moving-frame coordinates.

    Eqs. (79), (88) (``frame="reference"``) or (82), (91) (``"moving"``).

    Args:
        motion: a :class:`RelativeMotion`.
        point: ``(3,)`` the point in the moving frame's coordinates.

    Returns:
        ``(J_TG, H_TG)``: ``(3, nv)`` and ``(3, nv^2)``, in the frame ``motion`` is expressed in.

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
    p = motion.rotation @ point if motion.frame == "reference" else point
    jt = motion.J_T - skew(p) @ motion.J_R
    ht = motion.H_T - skew(p) @ motion.H_R + _quadratic_cross(motion.J_R, p)
    return jt, ht
