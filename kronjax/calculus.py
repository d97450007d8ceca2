"""Khang's matrix calculus with the Kronecker product (Tuan et al. 2019, section 2).

Layout conventions (fixed for the whole library):

* ``vec`` stacks columns: ``vec(A)[j r + p] = A[p, j]`` (definition 3, eq. 7).
* The derivative of an ``r x s`` matrix ``A(x)`` with respect to an ``n``-vector ``x`` is
  the ``r x (s n)`` matrix ``[dA[:, 0]/dx, ..., dA[:, s-1]/dx]`` (definition 2, eq. 5):
  entry ``(p, j n + k)`` is ``dA[p, j]/dx_k``.

Nothing here knows about kinematic chains; the rest of the library builds on these pieces.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

__all__ = [
    "kron",
    "vec",
    "unvec",
    "khang_jacobian",
    "time_derivative",
    "product_rule",
    "skew",
    "block_skew",
    "symmetrize",
]


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """Kronecker product ``a ⊗ b`` (definition 1, eq. 1); vectors are columns.

    A 1-D ``a`` (``p``) and 1-D ``b`` (``n``) give the ``p n`` vector ``a ⊗ b``, as for
    column vectors.

    Args:
        a: a vector ``(p,)`` or a matrix ``(p, q)``.
        b: a vector ``(n,)`` or a matrix ``(n, m)``.

    Returns:
        ``a ⊗ b`` (``jnp.kron``): ``(p n,)`` for two vectors, ``(p n, q m)`` for two matrices.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> kj.kron(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0, 5.0])).tolist()
        [3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        >>> kj.kron(jnp.eye(2), jnp.ones((2, 3))).shape
        (4, 6)
    """
    return jnp.kron(jnp.asarray(a), jnp.asarray(b))


def vec(a: Float[ArrayLike, "r s"]) -> Float[Array, " r*s"]:
    """Column-stacking ``vec`` operator (definition 3, eq. 7): ``vec(A)[j r + p] = A[p, j]``.

    Args:
        a: ``(r, s)`` matrix.

    Returns:
        ``(r s,)``: its columns stacked.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> kj.vec(jnp.array([[1.0, 2.0], [3.0, 4.0]])).tolist()  # the columns, one after the other
        [1.0, 3.0, 2.0, 4.0]
    """
    a = jnp.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"vec expects a matrix (2-D array), got shape {a.shape}")
    return a.T.reshape(-1)


def unvec(v: Float[ArrayLike, " rs"], rows: int) -> Float[Array, "rows cols"]:
    """Inverse of :func:`vec`: the ``rows x (len(v) / rows)`` matrix whose columns stack to ``v``.

    Args:
        v: ``(r s,)`` vector.
        rows: ``r``, the number of rows.

    Returns:
        ``(r, s)``: the matrix with ``vec`` of it equal to ``v``.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> kj.unvec(jnp.arange(6.0), 3).tolist()
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        >>> A = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> bool(jnp.array_equal(kj.unvec(kj.vec(A), 2), A))
        True
    """
    v = jnp.asarray(v)
    if v.ndim != 1:
        raise ValueError(f"unvec expects a vector (1-D array), got shape {v.shape}")
    if rows <= 0 or v.shape[0] % rows:
        raise ValueError(f"unvec: length {v.shape[0]} is not a multiple of rows={rows}")
    return v.reshape(-1, rows).T


def khang_jacobian(f: Callable[..., ArrayLike], argnums: int = 0) -> Callable[..., Array]:
    """Khang's derivative of ``f`` with respect to its vector argument ``argnums`` (eq. 5).

    * ``f`` returns an ``r x s`` matrix: the result is ``r x (s n)``, entry
      ``(p, j n + k) = d f[p, j] / d x_k`` -- a C-order reshape of ``jax.jacfwd``.
    * ``f`` returns an ``r``-vector: the plain ``r x n`` Jacobian.
    * ``f`` returns a scalar: the ``1 x n`` row ``df/dx``.

    Forward mode is used because kinematic outputs (3-vectors, 3 x n Jacobians) are
    usually larger than, or comparable to, the number of coordinates.

    Args:
        f: the function; its argument ``argnums`` is an ``n``-vector.
        argnums: which positional argument is differentiated.

    Returns:
        A function of ``f``'s arguments returning the derivative in Khang's layout (above).

    Example:
        ``A(x) = [[x0 x1, x0^2]]`` (1 x 2) gives ``dA/dx = [[dA00/dx0, dA00/dx1, dA01/dx0, dA01/dx1]]
        = [[x1, x0, 2 x0, 0]]``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> A = lambda x: jnp.array([[x[0] * x[1], x[0] ** 2]])
        >>> kj.khang_jacobian(A)(jnp.array([2.0, 3.0])).tolist()
        [[3.0, 2.0, 4.0, 0.0]]
    """

    def derivative(*args, **kwargs):
        x = jnp.asarray(args[argnums])
        if x.ndim != 1:
            raise ValueError(f"khang_jacobian differentiates with respect to a vector; argument {argnums} has shape {x.shape}")
        d = jax.jacfwd(f, argnums=argnums)(*args, **kwargs)
        n = x.shape[0]
        if d.ndim == 1:
            return d.reshape(1, n)
        if d.ndim == 2:
            return d
        if d.ndim == 3:
            return d.reshape(d.shape[0], d.shape[1] * n)
        raise ValueError(f"khang_jacobian: f must return a scalar, vector or matrix, got {d.shape[:-1]}")

    return derivative


def time_derivative(da_dx: Float[ArrayLike, "r sn"], xdot: Float[ArrayLike, " n"]) -> Float[Array, "r s"]:
    """Theorem 1, eq. (8): ``dA/dt = dA/dx (E_s ⊗ xdot)``.

    Args:
        da_dx: ``(r, s n)``: ``dA/dx`` in Khang's layout.
        xdot: ``(n,)``: ``dx/dt``.

    Returns:
        ``(r, s)``: ``dA/dt``.

    Example:
        ``A(x) = [[x0 x1, x0^2]]`` moving with ``xdot``: ``dA/dt = [[x1 xd0 + x0 xd1, 2 x0 xd0]]``,
        which is also ``jax.jvp``'s answer.

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> A = lambda x: jnp.array([[x[0] * x[1], x[0] ** 2]])
        >>> x, xdot = jnp.array([2.0, 3.0]), jnp.array([1.0, 1.0])
        >>> kj.calculus.time_derivative(kj.khang_jacobian(A)(x), xdot).tolist()
        [[5.0, 4.0]]
        >>> jax.jvp(A, (x,), (xdot,))[1].tolist()
        [[5.0, 4.0]]
    """
    da_dx = jnp.asarray(da_dx)
    xdot = jnp.asarray(xdot)
    n = xdot.shape[0]
    s = da_dx.shape[1] // n
    return da_dx @ jnp.kron(jnp.eye(s, dtype=da_dx.dtype), xdot.reshape(n, 1))


def product_rule(
    a: Float[ArrayLike, "r m"],
    da_dx: Float[ArrayLike, "r mn"],
    b: Float[ArrayLike, "m s"],
    db_dx: Float[ArrayLike, "m sn"],
) -> Float[Array, "r sn"]:
    """Theorem 2, eq. (9): ``d(A B)/dx = dA/dx (B ⊗ E_n) + A dB/dx``.

    For an ``n``-vector ``x`` (Khang's layout): ``dA/dx`` is ``r x (m n)``, ``dB/dx`` is
    ``m x (s n)`` and ``d(A B)/dx`` is ``r x (s n)``.

    Args:
        a: ``(r, m)``: ``A``.
        da_dx: ``(r, m n)``: ``dA/dx``.
        b: ``(m, s)``: ``B``.
        db_dx: ``(m, s n)``: ``dB/dx``.

    Returns:
        ``(r, s n)``: ``d(A B)/dx`` in Khang's layout.

    Example:
        ``A = x^T`` (1 x 2) and ``B = x`` (2 x 1): ``A B = x0^2 + x1^2``, whose derivative is
        ``[[2 x0, 2 x1]]``.

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> A, B = (lambda x: x.reshape(1, 2)), (lambda x: x.reshape(2, 1))
        >>> x = jnp.array([2.0, 3.0])
        >>> dA, dB = kj.khang_jacobian(A)(x), kj.khang_jacobian(B)(x)
        >>> kj.calculus.product_rule(A(x), dA, B(x), dB).tolist()
        [[4.0, 6.0]]
    """
    a, da_dx, b, db_dx = map(jnp.asarray, (a, da_dx, b, db_dx))
    n = da_dx.shape[1] // a.shape[1]
    return da_dx @ jnp.kron(b, jnp.eye(n, dtype=b.dtype)) + a @ db_dx


def skew(a: Float[ArrayLike, "*batch 3"]) -> Float[Array, "*batch 3 3"]:
    """Skew-symmetric matrix of a 3-vector (eq. 15): ``skew(a) @ b = a x b``.

    Args:
        a: ``(..., 3)``: one or a batch of 3-vectors.

    Returns:
        ``(..., 3, 3)``: ``skew(a)``.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> a, b = jnp.array([1.0, 2.0, 3.0]), jnp.array([4.0, 5.0, 6.0])
        >>> kj.skew(a).tolist()
        [[0.0, -3.0, 2.0], [3.0, 0.0, -1.0], [-2.0, 1.0, 0.0]]
        >>> bool(jnp.allclose(kj.skew(a) @ b, jnp.cross(a, b)))
        True
    """
    a = jnp.asarray(a)
    if a.shape[-1:] != (3,):
        raise ValueError(f"skew expects a 3-vector, got shape {a.shape}")
    z = jnp.zeros_like(a[..., 0])
    a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
    return jnp.stack(
        [
            jnp.stack([z, -a3, a2], axis=-1),
            jnp.stack([a3, z, -a1], axis=-1),
            jnp.stack([-a2, a1, z], axis=-1),
        ],
        axis=-2,
    )


def block_skew(a: Float[ArrayLike, "3 m"]) -> Float[Array, "3 3*m"]:
    """Block skew-symmetric matrix of a 3-row matrix (eq. 16).

    With rows ``a_1^T, a_2^T, a_3^T`` of ``A``::

        [[ 0^T  , -a_3^T,  a_2^T],
         [ a_3^T,  0^T  , -a_1^T],
         [-a_2^T,  a_1^T,  0^T  ]]

    so that ``skew(A a) = block_skew(A) (E_3 ⊗ a)`` (17; the extracted text lost the tilde over
    ``A a``) and ``skew(a) A = -block_skew(A) (a ⊗ E_m)`` (18).
    For a Jacobian ``J_R`` (3 x n), ``block_skew(J_R) (u ⊗ v) = (J_R v) x u``.

    Args:
        a: ``(3, m)``: the matrix ``A``.

    Returns:
        ``(3, 3 m)``: the block matrix above.

    Example:
        Identities (17) and (18) for a 3 x 2 matrix ``A``:

        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> A, x, a = jnp.arange(6.0).reshape(3, 2), jnp.array([1.0, -2.0]), jnp.array([1.0, 2.0, 3.0])
        >>> kj.block_skew(A).shape
        (3, 6)
        >>> bool(jnp.allclose(kj.skew(A @ x), kj.block_skew(A) @ kj.kron(jnp.eye(3), x[:, None])))
        True
        >>> bool(jnp.allclose(kj.skew(a) @ A, -kj.block_skew(A) @ kj.kron(a[:, None], jnp.eye(2))))
        True
    """
    a = jnp.asarray(a)
    if a.ndim != 2 or a.shape[0] != 3:
        raise ValueError(f"block_skew expects a 3 x m matrix, got shape {a.shape}")
    z = jnp.zeros_like(a[0])
    a1, a2, a3 = a[0], a[1], a[2]
    return jnp.stack(
        [
            jnp.concatenate([z, -a3, a2]),
            jnp.concatenate([a3, z, -a1]),
            jnp.concatenate([-a2, a1, z]),
        ]
    )


def symmetrize(h: Float[ArrayLike, "*batch r nn"]) -> Float[Array, "*batch r nn"]:
    """Symmetric part of a Khang-layout Hessian: columns ``(j, k)`` and ``(k, j)`` averaged.

    Only this part is determined by a quadratic form ``H (v ⊗ v)`` (Tuan, remark after eq. 52):
    two Hessians that give the same accelerations for every ``v`` have equal symmetric parts.

    Args:
        h: ``(..., r, n^2)``: one or a batch of Hessians in Khang's layout.

    Returns:
        The same shape: ``(h + h with columns (j, k) and (k, j) swapped) / 2``.

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> H = jnp.array([[0.0, 1.0, 0.0, 0.0]])  # n = 2: columns (0, 0), (0, 1), (1, 0), (1, 1)
        >>> kj.symmetrize(H).tolist()
        [[0.0, 0.5, 0.5, 0.0]]
        >>> v = jnp.array([2.0, 3.0])
        >>> bool(jnp.allclose(H @ kj.kron(v, v), kj.symmetrize(H) @ kj.kron(v, v)))
        True
    """
    h = jnp.asarray(h)
    n = int(round(h.shape[-1] ** 0.5))
    if n * n != h.shape[-1]:
        raise ValueError(f"symmetrize expects r x n^2 columns, got {h.shape}")
    h3 = h.reshape(*h.shape[:-1], n, n)
    return (0.5 * (h3 + jnp.swapaxes(h3, -1, -2))).reshape(h.shape)
