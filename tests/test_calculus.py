"""Property tests of Khang's Kronecker-product calculus (Tuan et al. 2019, section 2).

Every check compares kronjax against an independent computation: numpy (``np.kron``, Fortran-order
flattening, ``np.cross``), explicit index loops, analytic derivatives, finite differences or
``jax.jvp`` along a trajectory -- never the code against itself.

Speed: hypothesis draws a new shape for most examples, and eager JAX compiles every primitive anew
for each shape. So the library functions under test (and the JAX reference routes) are called
through ``jax.jit`` -- one compilation per shape -- with the random data as arguments; the
plumbing (matrix products of the checks) is numpy. XLA compilation dominates, so it runs at the
lowest backend optimisation level. A few eager calls check that nothing depends on ``jit``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from checks import EXACT_TOL
from hypothesis import given, settings
from hypothesis import strategies as st

import kronjax as kj
from kronjax import calculus

pytestmark = pytest.mark.heavy  # out of `make test-fast` (docs/details/tests.md)

SETTINGS = settings(max_examples=25, deadline=None)
seeds = st.integers(0, 2**32 - 1)
dims = st.integers(1, 4)

# the functions under test, compiled once per shape, quickly
jit = functools.partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})
kron = jit(kj.kron)
vec = jit(kj.vec)
unvec = jit(kj.unvec, static_argnums=1)
skew = jit(kj.skew)
block_skew = jit(kj.block_skew)
symmetrize = jit(kj.symmetrize)
time_derivative = jit(calculus.time_derivative)
product_rule = jit(calculus.product_rule)


def khang_layout(d3):
    """``(r, s, n)`` array of ``d A[p, j] / d x_k`` -> ``r x (s n)``, entry ``(p, j n + k)``, by loops."""
    d3 = np.asarray(d3)
    r, s, n = d3.shape
    out = np.zeros((r, s * n))
    for p in range(r):
        for j in range(s):
            for k in range(n):
                out[p, j * n + k] = d3[p, j, k]
    return out


def np_vec(a):
    return np.asarray(a).flatten(order="F")


# --------------------------------------------------------------------------------------------
# vec / unvec (definition 3, eq. 7)
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(r=dims, s=dims, seed=seeds)
def test_vec_layout_and_unvec_round_trip(r, s, seed):
    a = np.random.default_rng(seed).normal(size=(r, s))
    v = np.asarray(vec(a))
    assert v.shape == (r * s,)
    for p in range(r):
        for j in range(s):
            assert v[j * r + p] == a[p, j]
    np.testing.assert_array_equal(v, np_vec(a))
    back = np.asarray(unvec(v, r))
    assert back.shape == (r, s)
    np.testing.assert_array_equal(back, a)


@SETTINGS
@given(r=dims, s=dims, seed=seeds)
def test_unvec_layout_and_vec_round_trip(r, s, seed):
    v = np.random.default_rng(seed).normal(size=r * s)
    m = np.asarray(unvec(v, r))
    assert m.shape == (r, s)
    for p in range(r):
        for j in range(s):
            assert m[p, j] == v[j * r + p]
    np.testing.assert_array_equal(m, v.reshape((r, s), order="F"))
    np.testing.assert_array_equal(np.asarray(vec(m)), v)


def test_vec_unvec_eager():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(kj.vec(a), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    np.testing.assert_array_equal(kj.unvec(jnp.asarray([0.0, 3.0, 1.0, 4.0, 2.0, 5.0]), 2), a)
    np.testing.assert_array_equal(kj.unvec(np.arange(6.0), 6), np.arange(6.0).reshape(6, 1))
    np.testing.assert_array_equal(kj.unvec(np.arange(6.0), 1), np.arange(6.0).reshape(1, 6))


@pytest.mark.usefixtures("without_shape_checks")
def test_vec_rejects_non_matrices():
    with pytest.raises(ValueError, match="matrix"):
        kj.vec(np.ones(3))
    with pytest.raises(ValueError, match="matrix"):
        kj.vec(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="matrix"):
        kj.vec(np.float64(1.0))


@pytest.mark.usefixtures("without_shape_checks")
def test_unvec_errors():
    with pytest.raises(ValueError, match="vector"):
        kj.unvec(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="multiple"):
        kj.unvec(np.ones(5), 2)
    with pytest.raises(ValueError, match="multiple"):
        kj.unvec(np.ones(4), 0)
    with pytest.raises(ValueError, match="multiple"):
        kj.unvec(np.ones(4), -2)


# --------------------------------------------------------------------------------------------
# khang_jacobian (definition 2, eq. 5)
# --------------------------------------------------------------------------------------------


def sin_params(r, s, n, rng):
    return rng.normal(size=(r, s, n)), rng.normal(size=(r, s)), rng.normal(size=(r, s, n, n))


def sin_f(params, x):
    """``A(x)[p, j] = D[p, j] sin(C[p, j] . x) + x . M[p, j] x``."""
    c, d, m = params
    return d * jnp.sin(jnp.einsum("pjk,k->pj", c, x)) + jnp.einsum("k,pjkl,l->pj", x, m, x)


def sin_df(params, x):
    """Analytic ``d A[p, j] / d x_k`` of :func:`sin_f`, ``(r, s, n)``, numpy."""
    c, d, m = params
    x = np.asarray(x)
    lin = np.einsum("pjk,k->pj", c, x)
    return (d * np.cos(lin))[..., None] * c + np.einsum("pjkl,l->pjk", m, x) + np.einsum("k,pjkl->pjl", x, m)


sin_value = jit(sin_f)
sin_khang = jit(kj.khang_jacobian(sin_f, argnums=1))


@SETTINGS
@given(r=dims, s=dims, n=dims, seed=seeds)
def test_khang_jacobian_matrix_valued_layout(r, s, n, seed):
    rng = np.random.default_rng(seed)
    params = sin_params(r, s, n, rng)
    x = rng.normal(size=n)
    got = np.asarray(sin_khang(params, x))
    assert got.shape == (r, s * n)
    expected = sin_df(params, x)
    np.testing.assert_allclose(got, khang_layout(expected), atol=EXACT_TOL)
    # the first block of columns is d a_1 / dx, the derivative of the first column, as in (5)
    np.testing.assert_allclose(got[:, :n], expected[:, 0, :], atol=EXACT_TOL)


@SETTINGS
@given(r=dims, s=dims, n=dims, seed=seeds)
def test_khang_jacobian_matches_central_differences(r, s, n, seed):
    rng = np.random.default_rng(seed)
    params = sin_params(r, s, n, rng)
    x = rng.normal(size=n)
    h = 1e-6
    fd = np.zeros((r, s, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        fd[:, :, k] = (np.asarray(sin_value(params, x + e)) - np.asarray(sin_value(params, x - e))) / (2 * h)
    got = np.asarray(sin_khang(params, x))
    np.testing.assert_allclose(got, khang_layout(fd), atol=1e-7 * max(1.0, np.abs(fd).max()))


def test_khang_jacobian_eager_hand_built():
    """``A(x) = [[x0 x1, x2], [sin x0, x1^2]]``, derivative written out entry by entry."""
    f = lambda x: jnp.array([[x[0] * x[1], x[2]], [jnp.sin(x[0]), x[1] ** 2]])  # noqa: E731
    x = np.array([0.3, -1.2, 2.0])
    da_col0 = [[x[1], x[0], 0.0], [np.cos(x[0]), 0.0, 0.0]]  # d a_1 / dx
    da_col1 = [[0.0, 0.0, 1.0], [0.0, 2 * x[1], 0.0]]  # d a_2 / dx
    np.testing.assert_allclose(kj.khang_jacobian(f)(jnp.asarray(x)), np.hstack([da_col0, da_col1]), atol=EXACT_TOL)


@SETTINGS
@given(r=dims, n=dims, seed=seeds)
def test_khang_jacobian_vector_valued(r, n, seed):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(r, n))
    x, y = rng.normal(size=(2, n))
    lin = c @ x
    expected = (np.cos(lin) * (1.0 + y @ x))[:, None] * c + np.sin(lin)[:, None] * y[None, :]
    got = np.asarray(_vector_khang(c, y, x))
    assert got.shape == (r, n)
    np.testing.assert_allclose(got, expected, atol=EXACT_TOL)


@jit
def _vector_khang(c, y, x):
    def f(c, y, x):  # differentiate w.r.t. the third argument
        return jnp.sin(c @ x) * (1.0 + y @ x)

    return kj.khang_jacobian(f, argnums=2)(c, y, x)


@SETTINGS
@given(n=dims, seed=seeds)
def test_khang_jacobian_scalar_valued_is_row(n, seed):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=n)
    m = rng.normal(size=(n, n))
    x = rng.normal(size=n)
    expected = 2.5 * (np.cos(c @ x) * c + (m + m.T) @ x)
    got = np.asarray(_scalar_khang(c, m, x))
    assert got.shape == (1, n)
    np.testing.assert_allclose(got[0], expected, atol=EXACT_TOL)


@jit
def _scalar_khang(c, m, x):
    def f(x, c, m, scale=1.0):
        return scale * (jnp.sin(c @ x) + x @ m @ x)

    return kj.khang_jacobian(f)(x, c, m, scale=2.5)  # keyword arguments pass through


def test_khang_jacobian_rejects_non_vector_argument():
    with pytest.raises(ValueError, match="vector"):
        kj.khang_jacobian(lambda x: x.sum())(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="vector"):
        kj.khang_jacobian(lambda x: x * 2)(jnp.float64(1.0))
    with pytest.raises(ValueError, match="scalar, vector or matrix"):
        kj.khang_jacobian(lambda x: jnp.ones((2, 2, 2)) * x[0])(jnp.ones(3))


# --------------------------------------------------------------------------------------------
# Theorems 1-3 (eqs. 8-10)
# --------------------------------------------------------------------------------------------


@jit
def _sin_rate_along_path(params, x0, v, w, t0):
    """``d/dt A(x(t))`` at ``t0`` for ``x(t) = x0 + v t + w t^2 / 2``, forward mode in ``t``."""
    return jax.jvp(lambda t: sin_f(params, x0 + v * t + 0.5 * w * t * t), (t0,), (jnp.ones_like(t0),))[1]


@SETTINGS
@given(r=dims, s=dims, n=dims, seed=seeds)
def test_theorem1_time_derivative_vs_jvp(r, s, n, seed):
    rng = np.random.default_rng(seed)
    params = sin_params(r, s, n, rng)
    x0, v, w = rng.normal(size=(3, n))
    t0 = rng.uniform(-1, 1)
    expected = _sin_rate_along_path(params, x0, v, w, t0)
    x, xdot = x0 + v * t0 + 0.5 * w * t0 * t0, v + w * t0
    got = time_derivative(khang_layout(sin_df(params, x)), xdot)
    assert got.shape == (r, s)
    np.testing.assert_allclose(got, expected, atol=1e-11)


def test_theorem1_eager_single_column():
    """``s = 1`` (a vector-valued function as a column): (8) reduces to ``dA/dx xdot``."""
    d = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    xdot = np.array([0.5, -2.0])
    np.testing.assert_allclose(calculus.time_derivative(d, xdot), (d @ xdot).reshape(3, 1), atol=EXACT_TOL)


@jit
def _factors_and_product_jacobian(pa, pb, x):
    """``A(x)``, ``B(x)`` and the raw forward-mode Jacobian ``(r, s, n)`` of ``A(x) B(x)`` (not in
    Khang's layout)."""
    return sin_f(pa, x), sin_f(pb, x), jax.jacfwd(lambda x: sin_f(pa, x) @ sin_f(pb, x))(x)


@SETTINGS
@given(r=dims, m=dims, s=dims, n=dims, seed=seeds)
def test_theorem2_product_rule(r, m, s, n, seed):
    rng = np.random.default_rng(seed)
    pa, pb = sin_params(r, m, n, rng), sin_params(m, s, n, rng)
    x = rng.normal(size=n)
    a, b, direct = _factors_and_product_jacobian(pa, pb, x)
    got = product_rule(a, khang_layout(sin_df(pa, x)), b, khang_layout(sin_df(pb, x)))
    assert got.shape == (r, s * n)
    np.testing.assert_allclose(got, khang_layout(direct), atol=1e-11)


@SETTINGS
@given(r=dims, p=dims, q=dims, s=dims, seed=seeds)
def test_theorem3_vec_of_product(r, p, q, s, seed):
    rng = np.random.default_rng(seed)
    a, x, b = rng.normal(size=(r, p)), rng.normal(size=(p, q)), rng.normal(size=(q, s))
    np.testing.assert_allclose(vec(a @ x @ b), np.kron(b.T, a) @ np_vec(x), atol=EXACT_TOL)
    np.testing.assert_allclose(np.asarray(kron(b.T, a)) @ np.asarray(vec(x)), np_vec(a @ x @ b), atol=EXACT_TOL)


# --------------------------------------------------------------------------------------------
# Identities (11)-(14)
# --------------------------------------------------------------------------------------------


@jit
def _velocity_rate(params, q0, v, a):
    """``d/dt (J(q(t)) qdot(t))`` at ``t = 0`` for ``q(t) = q0 + v t + a t^2 / 2``."""

    def velocity(t):
        return sin_f(params, q0 + v * t + 0.5 * a * t * t) @ (v + a * t)

    t = jnp.zeros((), q0.dtype)
    return jax.jvp(velocity, (t,), (jnp.ones_like(t),))[1]


@SETTINGS
@given(r=dims, n=dims, seed=seeds)
def test_identity11_derivative_of_j_qdot(r, n, seed):
    rng = np.random.default_rng(seed)
    params = sin_params(r, n, n, rng)
    q0, v, a = rng.normal(size=(3, n))
    expected = _velocity_rate(params, q0, v, a)
    jac = np.asarray(sin_value(params, q0))
    got = jac @ a + np.asarray(sin_khang(params, q0)) @ np.asarray(kron(v, v))
    np.testing.assert_allclose(got, expected, atol=1e-11)
    # with the analytic Hessian and numpy's kron too
    np.testing.assert_allclose(jac @ a + khang_layout(sin_df(params, q0)) @ np.kron(v, v), expected, atol=1e-11)


@SETTINGS
@given(p=dims, m=dims, n=dims, seed=seeds)
def test_identity12(p, m, n, seed):
    rng = np.random.default_rng(seed)
    x, a, d = rng.normal(size=(n, 1)), rng.normal(size=(p, m)), rng.normal(size=(m, 1))
    lhs = np.asarray(kron(np.eye(p), x)) @ a @ d
    rhs = np.kron(a, np.eye(n)) @ np.kron(d, x)
    np.testing.assert_allclose(lhs, rhs, atol=EXACT_TOL)
    lhs_np = np.kron(np.eye(p), x) @ a @ d
    rhs_kj = np.asarray(kron(a, np.eye(n))) @ np.asarray(kron(d, x))
    np.testing.assert_allclose(rhs_kj, lhs_np, atol=EXACT_TOL)


@SETTINGS
@given(p=dims, n=dims, seed=seeds)
def test_identity13(p, n, seed):
    rng = np.random.default_rng(seed)
    d, x = rng.normal(size=p), rng.normal(size=n)
    np.testing.assert_allclose(kron(d, x), np.kron(d.reshape(p, 1), np.eye(n)) @ x, atol=EXACT_TOL)
    np.testing.assert_allclose(np.asarray(kron(d.reshape(p, 1), np.eye(n))) @ x, np.kron(d, x), atol=EXACT_TOL)


@SETTINGS
@given(p=dims, m=dims, r=dims, n=dims, seed=seeds)
def test_identity14(p, m, r, n, seed):
    """(14); ``A`` is ``p x (m r)`` for the left-hand side to be defined (the paper's ``p x m`` is a
    slip when ``r > 1``)."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 1)), rng.normal(size=(m, 1))
    a, d = rng.normal(size=(p, m * r)), rng.normal(size=(r, 1))
    lhs = np.asarray(kron(np.eye(p), x)) @ a @ np.asarray(kron(np.eye(r), y)) @ d
    rhs = np.kron(a, np.eye(n)) @ np.kron(d, np.eye(n * m)) @ np.kron(y, x)
    np.testing.assert_allclose(lhs, rhs, atol=1e-11)
    rhs_kj = np.asarray(kron(a, np.eye(n))) @ np.asarray(kron(d, np.eye(n * m))) @ np.asarray(kron(y, x))
    np.testing.assert_allclose(rhs_kj, np.kron(np.eye(p), x) @ a @ np.kron(np.eye(r), y) @ d, atol=1e-11)


# --------------------------------------------------------------------------------------------
# skew and block_skew (15)-(18)
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(seed=seeds)
def test_skew_is_cross_product_and_antisymmetric(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, 3))
    s = np.asarray(skew(a))
    np.testing.assert_allclose(s @ b, np.cross(a, b), atol=EXACT_TOL)
    np.testing.assert_array_equal(s, -s.T)
    np.testing.assert_array_equal(np.diag(s), 0.0)
    # eq. (15) entry by entry
    np.testing.assert_array_equal(s, [[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    # batched input
    batch = rng.normal(size=(4, 3))
    sb = np.asarray(skew(batch))
    np.testing.assert_allclose(np.einsum("bij,j->bi", sb, b), np.cross(batch, b), atol=EXACT_TOL)


@SETTINGS
@given(m=dims, seed=seeds)
def test_block_skew_layout_eq16(m, seed):
    a = np.random.default_rng(seed).normal(size=(3, m))
    got = np.asarray(block_skew(a))
    assert got.shape == (3, 3 * m)
    # eq. (16), written out from the paper with numpy
    a1, a2, a3 = a
    z = np.zeros(m)
    expected = np.stack([np.concatenate([z, -a3, a2]), np.concatenate([a3, z, -a1]), np.concatenate([-a2, a1, z])])
    np.testing.assert_array_equal(got, expected)
    # equivalently, column block e is -e_e x A (a special case of (18))
    for e in range(3):
        np.testing.assert_allclose(got[:, e * m : (e + 1) * m], -np.cross(np.eye(3)[e], a.T).T, atol=EXACT_TOL)


@SETTINGS
@given(m=dims, seed=seeds)
def test_identity17_block_skew_times_e3_kron_a(m, seed):
    """(17): ``(A a)~ = Ã (E_3 ⊗ a)``; the paper's text drops the tilde over ``A a`` in extraction
    (the right-hand side is 3 x 3). So ``Ã (E_3 ⊗ a) b = (A a) x b``."""
    rng = np.random.default_rng(seed)
    a_mat, a, b = rng.normal(size=(3, m)), rng.normal(size=(m, 1)), rng.normal(size=3)
    got = np.asarray(block_skew(a_mat)) @ np.kron(np.eye(3), a)
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got @ b, np.cross(a_mat @ a[:, 0], b), atol=EXACT_TOL)
    av = a_mat @ a[:, 0]
    np.testing.assert_allclose(got, [[0, -av[2], av[1]], [av[2], 0, -av[0]], [-av[1], av[0], 0]], atol=EXACT_TOL)


@SETTINGS
@given(m=dims, seed=seeds)
def test_identity18(m, seed):
    rng = np.random.default_rng(seed)
    a_mat, a = rng.normal(size=(3, m)), rng.normal(size=3)
    expected = np.cross(a, a_mat.T).T  # column by column a x A[:, j]
    np.testing.assert_allclose(np.asarray(skew(a)) @ a_mat, expected, atol=EXACT_TOL)
    rhs = -np.asarray(block_skew(a_mat)) @ np.kron(a.reshape(3, 1), np.eye(m))
    np.testing.assert_allclose(rhs, expected, atol=EXACT_TOL)


@SETTINGS
@given(n=dims, seed=seeds)
def test_block_skew_of_jacobian_is_cross_of_velocity(n, seed):
    """Docstring of block_skew: ``J~ (v ⊗ qd) = (J qd) x v``."""
    rng = np.random.default_rng(seed)
    jac, v, qd = rng.normal(size=(3, n)), rng.normal(size=3), rng.normal(size=n)
    np.testing.assert_allclose(np.asarray(block_skew(jac)) @ np.kron(v, qd), np.cross(jac @ qd, v), atol=EXACT_TOL)


@pytest.mark.usefixtures("without_shape_checks")
def test_skew_and_block_skew_eager_and_errors():
    np.testing.assert_array_equal(kj.skew(np.array([1.0, 2.0, 3.0])), [[0, -3, 2], [3, 0, -1], [-2, 1, 0]])
    np.testing.assert_array_equal(kj.block_skew(np.array([[1.0], [2.0], [3.0]])), [[0, -3, 2], [3, 0, -1], [-2, 1, 0]])
    with pytest.raises(ValueError, match="3-vector"):
        kj.skew(np.ones(4))
    with pytest.raises(ValueError, match="3 x m"):
        kj.block_skew(np.ones((2, 3)))
    with pytest.raises(ValueError, match="3 x m"):
        kj.block_skew(np.ones(3))


# --------------------------------------------------------------------------------------------
# symmetrize
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(r=dims, n=dims, seed=seeds)
def test_symmetrize(r, n, seed):
    rng = np.random.default_rng(seed)
    h, qd = rng.normal(size=(r, n * n)), rng.normal(size=n)
    sym = np.asarray(symmetrize(h))
    for p in range(r):
        for j in range(n):
            for k in range(n):
                np.testing.assert_allclose(sym[p, j * n + k], 0.5 * (h[p, j * n + k] + h[p, k * n + j]), atol=EXACT_TOL)
    np.testing.assert_allclose(symmetrize(sym), sym, atol=EXACT_TOL)  # idempotent
    np.testing.assert_allclose(sym @ np.kron(qd, qd), h @ np.kron(qd, qd), atol=1e-11)
    # only the antisymmetric part is lost: it gives zero in the quadratic form
    np.testing.assert_allclose((h - sym) @ np.kron(qd, qd), 0.0, atol=1e-11)
    # a symmetric Hessian (the jacobian of a gradient) is left alone
    s3 = rng.normal(size=(r, n, n))
    s3 = s3 + np.swapaxes(s3, 1, 2)
    np.testing.assert_allclose(symmetrize(s3.reshape(r, n * n)), s3.reshape(r, n * n), atol=EXACT_TOL)


@pytest.mark.usefixtures("without_shape_checks")
def test_symmetrize_batched_and_errors():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(2, 3, 16))
    np.testing.assert_allclose(kj.symmetrize(h)[1], kj.symmetrize(h[1]), atol=EXACT_TOL)
    with pytest.raises(ValueError, match="n\\^2"):
        kj.symmetrize(np.ones((3, 5)))


# --------------------------------------------------------------------------------------------
# Kronecker product (1)-(4)
# --------------------------------------------------------------------------------------------

shapes = st.tuples(dims, dims)


@SETTINGS
@given(sa=shapes, sb=shapes, sc=shapes, seed=seeds)
def test_kron_matches_numpy_and_properties_2_3(sa, sb, sc, seed):
    rng = np.random.default_rng(seed)
    a, b, c = rng.normal(size=sa), rng.normal(size=sb), rng.normal(size=sc)
    ab = np.asarray(kron(a, b))
    np.testing.assert_allclose(ab, np.kron(a, b), atol=0)
    # definition (1) by blocks
    for i in range(sa[0]):
        for j in range(sa[1]):
            np.testing.assert_allclose(ab[i * sb[0] : (i + 1) * sb[0], j * sb[1] : (j + 1) * sb[1]], a[i, j] * b)
    np.testing.assert_allclose(kron(ab, c), np.kron(a, np.kron(b, c)), atol=EXACT_TOL)  # (2)
    np.testing.assert_allclose(kron(a, kron(b, c)), np.kron(np.kron(a, b), c), atol=EXACT_TOL)  # (2)
    np.testing.assert_allclose(ab.T, np.kron(a.T, b.T), atol=EXACT_TOL)  # (3)
    np.testing.assert_allclose(kron(a.T, b.T), np.kron(a, b).T, atol=EXACT_TOL)  # (3)


@SETTINGS
@given(m=dims, n=dims, k=dims, p=dims, q=dims, r=dims, seed=seeds)
def test_kron_mixed_product_property_4(m, n, k, p, q, r, seed):
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=(m, n)), rng.normal(size=(n, k))
    b, d = rng.normal(size=(p, q)), rng.normal(size=(q, r))
    np.testing.assert_allclose(np.asarray(kron(a, b)) @ np.asarray(kron(c, d)), np.kron(a @ c, b @ d), atol=1e-11)
    np.testing.assert_allclose(kron(a @ c, b @ d), np.kron(a, b) @ np.kron(c, d), atol=1e-11)


@SETTINGS
@given(p=dims, n=dims, seed=seeds)
def test_kron_of_vectors_is_column_kron(p, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=p), rng.normal(size=n)
    got = np.asarray(kron(a, b))
    assert got.shape == (p * n,)
    np.testing.assert_allclose(got, np.kron(a.reshape(p, 1), b.reshape(n, 1))[:, 0], atol=0)
    for i in range(p):
        for j in range(n):
            assert got[i * n + j] == a[i] * b[j]


def test_kron_eager():
    np.testing.assert_array_equal(
        kj.kron(np.array([[1.0, 2.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])),
        [[0.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 0.0]],
    )
