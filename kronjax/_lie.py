"""Configuration-space operations of one joint, on its Lie group (private).

Every function takes the joint kind as a static Python string and the joint's own slice of the
configuration ``q`` (``nq(kind)`` numbers) or of the velocity ``v`` (``nv(kind)`` numbers), one
joint and one state at a time (``jax.vmap`` for batches). All are pure ``jax.numpy``: jit-, vmap-
and grad-able, with gradients finite at and near the identity (see "Numerics").

Conventions (Pinocchio 4.1's, checked against ``pin.integrate`` / ``pin.difference`` /
``pin.forwardKinematics`` in ``tests/test_lie.py``):

* ``"R"`` revolute, ``"P"`` prismatic: ``q = [angle or displacement]``, ``v = [rate]``;
  ``q + v`` is Euclidean.
* ``"free"`` (``JointModelFreeFlyer``): ``q = [x, y, z, qx, qy, qz, qw]``: the child frame's
  origin in the parent frame and the unit quaternion (Pinocchio's storage order, ``w`` last) of
  the rotation parent-from-child; ``v = [v_lin, w]``: the child's linear velocity (of its origin)
  and angular velocity, both in the child frame (Pinocchio's LOCAL). ``q (+) v = M(q) exp6(v)``
  (right multiplication); ``q1 (-) q0 = log6(M(q0)^-1 M(q1))``.
* ``"spherical"`` (``JointModelSpherical``): ``q = [qx, qy, qz, qw]``, ``v = w`` in the child
  frame; ``q (+) w = R(q) exp3(w)``, ``q1 (-) q0 = log3(R0^T R1)``.
* ``"planar"`` (``JointModelPlanar``): ``q = [x, y, cos(theta), sin(theta)]``, ``v = [vx, vy,
  wz]`` in the child frame; SE(2) exponential on the right, as for ``"free"``.

Quaternions here are arrays ``(x, y, z, w)``; ``R(q) = E + 2 w [u] + 2 [u]^2`` for ``q = (u,
w)`` of unit norm (no normalisation is applied: a non-unit quaternion gives a non-orthogonal
matrix, as in Pinocchio). ``integrate`` of a quaternion applies Pinocchio's first-order
renormalisation ``q * (3 - |q|^2) / 2``, so unit quaternions stay unit to round-off over long
integrations; for ``"free"`` it also flips the sign of the result so that its dot product with
the input quaternion is nonnegative (Pinocchio does; ``"spherical"`` does not).

Numerics: every ratio that is 0/0 at zero angle (``sin x / x``, ``(x - sin x) / x^3``, the
inverse of the SO(3) left Jacobian, ...) takes a Taylor branch near zero, with the other branch
evaluated at a harmless argument ("double where"), so that neither the value nor any derivative
is NaN at 0. Angles come from ``atan2`` of the quaternion's vector norm and scalar part, accurate
up to a rotation of pi (where ``log3`` returns an angle in ``[0, pi]``).
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .calculus import skew

KINDS = ("R", "P", "free", "spherical", "planar")
NQ = {"R": 1, "P": 1, "free": 7, "spherical": 4, "planar": 4}  # configuration numbers of each kind
NV = {"R": 1, "P": 1, "free": 6, "spherical": 3, "planar": 3}  # velocities of each kind


def _check_kind(kind: str) -> None:
    if kind not in NQ:
        raise ValueError(f"unknown joint kind {kind!r}; expected one of {KINDS}")


def _check_shape(name: str, x, size: int, kind: str) -> Array:
    x = jnp.asarray(x)
    if x.shape != (size,):
        raise ValueError(f"joint kind {kind!r}: {name} must have shape ({size},), got {x.shape}")
    return x


def nq(kind: str) -> int:
    """Number of configuration coordinates of a joint kind (7 free, 4 spherical and planar, 1 R/P)."""
    _check_kind(kind)
    return NQ[kind]


def nv(kind: str) -> int:
    """Number of velocity coordinates of a joint kind (6 free, 3 spherical and planar, 1 R/P)."""
    _check_kind(kind)
    return NV[kind]


# --------------------------------------------------------------------------------------------
# Ratios that are 0/0 at 0, as functions of the squared argument (no sqrt at 0: its derivative is
# infinite there). Thresholds make the dropped Taylor term below 1e-16 relative.
# --------------------------------------------------------------------------------------------


def _sinc(x2):
    """``sin(x) / x`` for ``x = sqrt(x2)``."""
    small = x2 < 1e-3
    x = jnp.sqrt(jnp.where(small, 1.0, x2))
    return jnp.where(small, 1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42)), jnp.sin(x) / x)


def _cos(x2):
    """``cos(x)`` for ``x = sqrt(x2)``."""
    small = x2 < 1e-3
    x = jnp.sqrt(jnp.where(small, 1.0, x2))
    return jnp.where(small, 1 - x2 / 2 * (1 - x2 / 12 * (1 - x2 / 30 * (1 - x2 / 56))), jnp.cos(x))


def _x_minus_sin_over_cube(x2):
    """``(x - sin x) / x^3`` for ``x = sqrt(x2)``; the direct form loses ``eps / x^2`` relative."""
    small = x2 < 1e-2
    x = jnp.sqrt(jnp.where(small, 1.0, x2))
    series = 1 / 6 - x2 / 120 * (1 - x2 / 42 * (1 - x2 / 72))
    return jnp.where(small, series, (x - jnp.sin(x)) / x**3)


# --------------------------------------------------------------------------------------------
# Quaternions (x, y, z, w)
# --------------------------------------------------------------------------------------------


def quat_multiply(a: Float[Array, "4"], b: Float[Array, "4"]) -> Float[Array, "4"]:
    """Hamilton product ``a b`` (the rotation ``R(a) R(b)``)."""
    u, w = a[:3], a[3]
    s, t = b[:3], b[3]
    return jnp.concatenate([w * s + t * u + jnp.cross(u, s), (w * t - jnp.dot(u, s))[None]])


def quat_conjugate(q: Float[Array, "4"]) -> Float[Array, "4"]:
    """``(-u, w)``: the inverse rotation of a unit quaternion."""
    return jnp.concatenate([-q[:3], q[3:]])


def quat_rotate(q: Float[Array, "4"], p: Float[Array, "3"]) -> Float[Array, "3"]:
    """``R(q) p`` without forming ``R`` (Eigen's ``quat * vector``)."""
    u, w = q[:3], q[3]
    t = 2 * jnp.cross(u, p)
    return p + w * t + jnp.cross(u, t)


def quat_to_rotation(q: Float[Array, "4"]) -> Float[Array, "3 3"]:
    """``R = E + 2 w [u] + 2 [u]^2`` of a unit quaternion ``q = (u, w)``."""
    k = skew(q[:3])
    return jnp.eye(3, dtype=k.dtype) + 2 * q[3] * k + 2 * (k @ k)


def rotation_to_quat(r: Float[Array, "3 3"]) -> Float[Array, "4"]:
    """A unit quaternion of a rotation matrix (Shepperd's method: of the four ways to recover it,
    the one whose square root has the largest argument, always >= 1, so it is accurate for every
    rotation, a half turn included). Its sign is unspecified."""
    tr = jnp.trace(r)
    d = jnp.diagonal(r)
    # Arguments of the four square roots; the selected one is >= 1 and the floor keeps the
    # others (discarded) finite in value and derivative.
    s = 0.5 * jnp.sqrt(jnp.maximum(jnp.stack([1 + tr, *(1 + 2 * d - tr)]), 0.5))
    a = (r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1])  # 4 w (x, y, z)
    b = (r[0, 1] + r[1, 0], r[0, 2] + r[2, 0], r[1, 2] + r[2, 1])  # 4 (xy, xz, yz)
    cands = jnp.stack(
        [
            jnp.stack([a[0] / (4 * s[0]), a[1] / (4 * s[0]), a[2] / (4 * s[0]), s[0]]),
            jnp.stack([s[1], b[0] / (4 * s[1]), b[1] / (4 * s[1]), a[0] / (4 * s[1])]),
            jnp.stack([b[0] / (4 * s[2]), s[2], b[2] / (4 * s[2]), a[1] / (4 * s[2])]),
            jnp.stack([b[1] / (4 * s[3]), b[2] / (4 * s[3]), s[3], a[2] / (4 * s[3])]),
        ]
    )
    return cands[jnp.argmax(jnp.stack([tr, *d]))]


def quat_exp3(w: Float[Array, "3"]) -> Float[Array, "4"]:
    """Unit quaternion ``(sin(t/2) w / t, cos(t/2))`` of the rotation vector ``w``, ``t = |w|``
    (its scalar part is negative for ``t > pi``, as Pinocchio's ``exp3_quat``)."""
    t2 = jnp.dot(w, w)
    return jnp.concatenate([0.5 * _sinc(t2 / 4) * w, _cos(t2 / 4)[None]])


def quat_log3(q: Float[Array, "4"]) -> Float[Array, "3"]:
    """Rotation vector of a unit quaternion, with angle in ``[0, pi]`` (``q`` and ``-q`` give the
    same result): ``2 atan2(|u|, w) u / |u|`` after making ``w >= 0``."""
    q = jnp.where(q[3] >= 0, q, -q)
    u, c = q[:3], q[3]
    s2 = jnp.dot(u, u)
    small = s2 < 1e-4
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    # atan(t) / (t w) with t = |u| / w (w ~ 1 on this branch; 1 on the other, never 0)
    cs = jnp.where(small, c, 1.0)
    t2 = s2 / (cs * cs)
    series = (1 - t2 * (1 / 3 - t2 * (1 / 5 - t2 / 7))) / cs
    return 2 * jnp.where(small, series, jnp.arctan2(s, c) / s) * u


def _quat_exp6(nu: Float[Array, "6"]) -> tuple[Float[Array, "3"], Float[Array, "4"]]:
    """Translation and quaternion of ``exp6(nu)``, ``nu = [v, w]``."""
    v, w = nu[:3], nu[3:]
    t2 = jnp.dot(w, w)
    a = 0.5 * _sinc(t2 / 4) ** 2  # (1 - cos t) / t^2, without the cancellation
    b = _x_minus_sin_over_cube(t2)
    wxv = jnp.cross(w, v)
    return v + a * wxv + b * jnp.cross(w, wxv), quat_exp3(w)


def _quat_log6(q: Float[Array, "4"], p: Float[Array, "3"]) -> Float[Array, "6"]:
    """``log6`` of the transform with rotation quaternion ``q`` and translation ``p``: ``[V(w)^-1 p,
    w]`` with ``V^-1 = E - [w]/2 + beta [w]^2``, written ``alpha p - w x p / 2 + beta (w.p) w``
    (Pinocchio's form)."""
    w = quat_log3(q)
    q = jnp.where(q[3] >= 0, q, -q)
    t2 = jnp.dot(w, w)
    s2 = jnp.dot(q[:3], q[:3])
    small = s2 < 1e-4
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    half = jnp.arctan2(s, q[3])  # theta / 2 on the large branch
    # alpha = (t/2) cot(t/2), beta = (1 - alpha) / t^2
    alpha_big = half * q[3] / s
    alpha = jnp.where(small, 1 - t2 / 12 * (1 + t2 / 60 * (1 + t2 / 42)), alpha_big)
    beta_big = (1 - alpha_big) / (4 * half * half)
    beta = jnp.where(small, 1 / 12 + t2 / 720 * (1 + t2 / 42 * (1 + t2 / 40)), beta_big)
    lin = alpha * p - 0.5 * jnp.cross(w, p) + beta * jnp.dot(w, p) * w
    return jnp.concatenate([lin, w])


def _first_order_normalize(q):
    """Pinocchio's ``firstOrderNormalize``: one Newton step towards unit norm."""
    return q * (3 - jnp.dot(q, q)) / 2


# --------------------------------------------------------------------------------------------
# SO(3) and SE(3) on matrices
# --------------------------------------------------------------------------------------------


def exp3(w: Float[Array, "3"]) -> Float[Array, "3 3"]:
    """Rotation matrix ``exp([w])`` of a rotation vector (Rodrigues)."""
    return quat_to_rotation(quat_exp3(jnp.asarray(w)))


def log3(r: Float[Array, "3 3"]) -> Float[Array, "3"]:
    """Rotation vector of a rotation matrix, angle in ``[0, pi]`` (through its quaternion, so
    accurate up to a half turn, where the axis' sign is arbitrary)."""
    return quat_log3(rotation_to_quat(jnp.asarray(r)))


def exp6(nu: Float[Array, "6"]) -> tuple[Float[Array, "3 3"], Float[Array, "3"]]:
    """``(R, p)`` of ``exp(nu)`` for a twist ``nu = [v, w]`` (Pinocchio's order, linear first):
    ``R = exp3(w)``, ``p = V(w) v`` with the left Jacobian ``V = E + (1 - cos t)/t^2 [w] + (t -
    sin t)/t^3 [w]^2``, ``t = |w|``."""
    p, q = _quat_exp6(jnp.asarray(nu))
    return quat_to_rotation(q), p


def log6(r: Float[Array, "3 3"], p: Float[Array, "3"]) -> Float[Array, "6"]:
    """Twist ``[v, w]`` with ``exp6([v, w]) = (R, p)``, ``|w| <= pi``: the inverse of
    :func:`exp6`."""
    return _quat_log6(rotation_to_quat(jnp.asarray(r)), jnp.asarray(p))


# --------------------------------------------------------------------------------------------
# Per joint kind
# --------------------------------------------------------------------------------------------


def neutral(kind: str, dtype=None) -> Float[Array, " nq"]:
    """Pinocchio's neutral configuration: ``[0]`` (R/P), ``[0, 0, 0, 0, 0, 0, 1]`` (free),
    ``[0, 0, 0, 1]`` (spherical), ``[0, 0, 1, 0]`` (planar)."""
    _check_kind(kind)
    q = {
        "R": [0.0],
        "P": [0.0],
        "free": [0.0] * 6 + [1.0],
        "spherical": [0.0] * 3 + [1.0],
        "planar": [0.0, 0.0, 1.0, 0.0],
    }
    return jnp.asarray(q[kind], dtype=dtype)


def normalize(kind: str, q: Float[Array, " nq"]) -> Float[Array, " nq"]:
    """``q`` with its quaternion (free, spherical) or ``(cos, sin)`` pair (planar) scaled to unit
    norm, the rest unchanged (``pin.normalize``). A zero quaternion gives NaN."""
    _check_kind(kind)
    q = _check_shape("q", q, NQ[kind], kind)
    k = {"R": 0, "P": 0, "free": 4, "spherical": 4, "planar": 2}[kind]
    if k == 0:
        return q
    return jnp.concatenate([q[:-k], q[-k:] / jnp.linalg.norm(q[-k:])])


def _planar_parts(q):
    """Translation, cos and sin of a planar configuration."""
    return q[:2], q[2], q[3]


def rot2(c, s, p):
    """``[[c, -s], [s, c]] p``."""
    return jnp.stack([c * p[0] - s * p[1], s * p[0] + c * p[1]])


def integrate(kind: str, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"]) -> Float[Array, " nq"]:
    """``q (+) v``: the configuration reached from ``q`` by moving with the constant velocity ``v``
    for unit time (``pin.integrate``; see the module docstring for each kind's group law)."""
    _check_kind(kind)
    q = _check_shape("q", q, NQ[kind], kind)
    v = _check_shape("v", v, NV[kind], kind)
    if kind in ("R", "P"):
        return q + v
    if kind == "spherical":
        return _first_order_normalize(quat_multiply(q, quat_exp3(v)))
    if kind == "free":
        p0, r0 = q[:3], q[3:]
        dp, dr = _quat_exp6(v)
        r1 = quat_multiply(r0, dr)
        r1 = jnp.where(jnp.dot(r1, r0) < 0, -r1, r1)
        return jnp.concatenate([quat_rotate(r0, dp) + p0, _first_order_normalize(r1)])
    # planar: SE(2) exponential, t = [[A, -B], [B, A]] v_xy with A = sin(w)/w, B = (1 - cos w)/w
    p0, c0, s0 = _planar_parts(q)
    wz = v[2]
    a = _sinc(wz * wz)
    b = 0.5 * wz * _sinc(wz * wz / 4) ** 2
    t = jnp.stack([a * v[0] - b * v[1], b * v[0] + a * v[1]])
    c, s = jnp.cos(wz), jnp.sin(wz)
    return jnp.concatenate([rot2(c0, s0, t) + p0, rot2(c0, s0, jnp.stack([c, s]))])


def difference(kind: str, q0: Float[ArrayLike, " nq"], q1: Float[ArrayLike, " nq"]) -> Float[Array, " nv"]:
    """``q1 (-) q0``: the velocity ``v`` with ``integrate(kind, q0, v) = q1`` (quaternions up to
    sign), rotation angle in ``[0, pi]`` (``pin.difference(model, q0, q1)``)."""
    _check_kind(kind)
    q0 = _check_shape("q0", q0, NQ[kind], kind)
    q1 = _check_shape("q1", q1, NQ[kind], kind)
    if kind in ("R", "P"):
        return q1 - q0
    if kind == "spherical":
        return quat_log3(quat_multiply(quat_conjugate(q0), q1))
    if kind == "free":
        inv0 = quat_conjugate(q0[3:])
        return _quat_log6(quat_multiply(inv0, q1[3:]), quat_rotate(inv0, q1[:3] - q0[:3]))
    # planar: log of M0^-1 M1 in SE(2)
    p0, c0, s0 = _planar_parts(q0)
    p1, c1, s1 = _planar_parts(q1)
    c, s = c0 * c1 + s0 * s1, c0 * s1 - s0 * c1  # R0^T R1
    p = rot2(c0, -s0, p1 - p0)  # R0^T (p1 - p0)
    theta = jnp.arctan2(s, c)
    half = theta / 2
    # V^-1 = [[alpha, theta/2], [-theta/2, alpha]], alpha = (theta/2) cot(theta/2)
    alpha = jnp.cos(half) / _sinc(half * half)
    return jnp.stack([alpha * p[0] + half * p[1], alpha * p[1] - half * p[0], theta])


def _uniform_quat(key) -> Array:
    """Uniformly distributed unit quaternion (Shoemake's method, as Pinocchio's
    ``uniformRandom``)."""
    u1, u2, u3 = jax.random.uniform(key, (3,))
    m1, m2 = jnp.sqrt(1 - u1), jnp.sqrt(u1)
    a, b = 2 * jnp.pi * u2, 2 * jnp.pi * u3
    return jnp.stack([m1 * jnp.cos(a), m2 * jnp.sin(b), m2 * jnp.cos(b), m1 * jnp.sin(a)])


def random(kind: str, key, lower=None, upper=None) -> Float[Array, " nq"]:
    """A random configuration.

    R/P: uniform in ``[lower, upper]`` (scalars or shape ``(1,)``, finite, required). free:
    position uniform in the box ``[lower, upper]`` (shape ``(3,)``, required) and a uniformly
    random unit quaternion. spherical: a uniformly random unit quaternion (bounds must be None).
    planar: ``x, y`` uniform in ``[lower, upper]`` (shape ``(2,)``, required) and ``theta``
    uniform in ``[-pi, pi]``.
    """
    _check_kind(kind)
    if kind == "spherical":
        if lower is not None or upper is not None:
            raise ValueError("joint kind 'spherical': random takes no bounds")
        return _uniform_quat(key)
    size = {"R": 1, "P": 1, "free": 3, "planar": 2}[kind]
    if lower is None or upper is None:
        raise ValueError(f"joint kind {kind!r}: random needs finite lower and upper bounds of shape ({size},)")
    lower = jnp.broadcast_to(jnp.asarray(lower, dtype=float), (size,))
    upper = jnp.broadcast_to(jnp.asarray(upper, dtype=float), (size,))
    k_pos, k_rot = jax.random.split(key)
    pos = jax.random.uniform(k_pos, (size,), minval=lower, maxval=upper)
    if kind in ("R", "P"):
        return pos
    if kind == "free":
        return jnp.concatenate([pos, _uniform_quat(k_rot)])
    theta = jax.random.uniform(k_rot, (), minval=-jnp.pi, maxval=jnp.pi)
    return jnp.concatenate([pos, jnp.stack([jnp.cos(theta), jnp.sin(theta)])])


def motion(kind: str, q: Float[Array, " nq"]) -> tuple[Float[Array, "3 3"], Float[Array, "3"]]:
    """The joint's motion: rotation parent-from-child and position of the child frame's origin in
    the parent frame (``data.oMi[i]`` of a joint placed at the identity): ``R(quaternion)`` and
    ``q[:3]`` (free), ``R(quaternion)`` and zero (spherical), a rotation about z by theta and ``[x,
    y, 0]`` (planar). R/P joints depend on their axis, which the caller holds: refused here."""
    _check_kind(kind)
    if kind in ("R", "P"):
        raise ValueError(f"joint kind {kind!r}: its motion depends on the joint axis; the caller computes it")
    q = _check_shape("q", q, NQ[kind], kind)
    zero = jnp.zeros((), dtype=q.dtype)
    if kind == "free":
        return quat_to_rotation(q[3:]), q[:3]
    if kind == "spherical":
        return quat_to_rotation(q), jnp.stack([zero, zero, zero])
    c, s, one = q[2], q[3], jnp.ones((), dtype=q.dtype)
    rotation = jnp.stack([jnp.stack([c, -s, zero]), jnp.stack([s, c, zero]), jnp.stack([zero, zero, one])])
    return rotation, jnp.stack([q[0], q[1], zero])
