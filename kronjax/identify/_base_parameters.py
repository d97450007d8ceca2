"""The base (identifiable) parameters ``beta = K pi`` of a regressor, found numerically (Gautier
1991)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .. import _lie
from .._deprecation import renamed_keywords, warn
from ..chain import Model
from ..configuration import joint_slices
from ._friction import Friction
from ._parameters import as_parameters, parameter_count, parameter_names
from ._regressor import regressor


class BaseParameters(eqx.Module):
    """The base (identifiable) parameters ``beta = K pi`` of a regressor (Gautier 1991).

    The columns of the regressor ``W`` are split into ``r = rank(W)`` independent ones
    (``independent``, chosen greedily in a priority order: each is kept when it is not a linear
    combination of the columns before it) and the others, ``W_d = W_i B``. Then
    ``W pi = W_i (pi_i + B pi_d) = W_i beta``: the base regressor is ``W[:, independent]`` and the
    base parameters are ``beta = pi_i + B pi_d``, each an independent parameter plus the dependent
    ones regrouped onto it (Gautier and Khalil 1990's regrouping, found numerically).

    Attributes:
        rank: number of base parameters ``r``.
        independent: indices (into the standard parameters, :func:`parameter_names`) of the
            columns kept, in increasing order.
        projection: ``K``, ``(r, p)``: ``beta = K pi``; ``K[:, independent]`` is the identity and
            ``K[:, dependent] = B`` (entries below ``1e-10`` relative set to zero).
        names: names of the standard parameters (empty when not known).

    Example:
        The double pendulum's 20 standard parameters act through 6 base parameters: the planar
        arm's ``Izz``, ``m c_x`` and ``m c_y`` per link, the second link's mass regrouped onto the
        first link's (``L m2`` and ``L^2 m2``, ``L = 1.22`` m).

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> base = kj.identify.base_parameters(model)
        >>> base.rank, base.size, base.independent
        (6, 20, (1, 2, 9, 11, 12, 19))
        >>> for line in base.describe():
        ...     print(line)
        link1.mcx + 1.22 link2.m
        link1.mcy
        link1.Izz + 1.488 link2.m
        link2.mcx
        link2.mcy
        link2.Izz
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(0).normal(size=(3, 40, 2)))
        >>> pi = kj.identify.standard_parameters(model)
        >>> bool(jnp.allclose(base.regressor(Y) @ base.from_standard(pi), Y @ pi))  # W_i beta = W pi
        True
    """

    rank: int = eqx.field(static=True)
    independent: tuple[int, ...] = eqx.field(static=True)
    projection: Float[Array, "r p"]
    names: tuple[str, ...] = eqx.field(static=True, default=())

    @property
    def size(self) -> int:
        """Number of standard parameters ``p``."""
        return self.projection.shape[1]

    def regressor(self, y: Float[ArrayLike, "*batch p"]) -> Float[Array, "*batch r"]:
        """The base regressor ``Y[..., independent]`` of a standard regressor."""
        y = jnp.asarray(y)
        if y.shape[-1] != self.size:
            raise ValueError(f"the regressor has {y.shape[-1]} columns, these base parameters were found for {self.size}")
        return y[..., np.asarray(self.independent, dtype=int)]

    def from_standard(self, pi: Float[ArrayLike, " p"]) -> Float[Array, " r"]:
        """``beta = K pi``."""
        return self.projection @ as_parameters(pi, self.size, "standard parameters")

    def to_standard(self, beta: Float[ArrayLike, " r"], nominal: Float[ArrayLike, " p"]) -> Float[Array, " p"]:
        """The standard parameters closest to ``nominal`` (Euclidean) that have the base parameters
        ``beta``: ``pi = nominal + K^+ (beta - K nominal)``. How an estimate of ``beta`` is usually
        turned back into bodies (e.g. to check their physical consistency)."""
        beta = jnp.asarray(beta)
        if beta.shape != (self.rank,):
            raise ValueError(f"beta must have shape ({self.rank},), got {beta.shape}")
        nominal = as_parameters(nominal, self.size, "nominal")
        k = self.projection
        return nominal + jnp.linalg.pinv(k) @ (beta - k @ nominal)

    def describe(self, precision: int = 4) -> list[str]:
        """Each base parameter as a linear combination of named standard parameters."""
        names = self.names or tuple(f"pi[{k}]" for k in range(self.size))
        k = np.asarray(self.projection)
        lines = []
        for row, col in zip(k, self.independent):
            terms = [names[col]]
            for j in np.flatnonzero(row):
                if j != col:
                    c = row[j]
                    sign = "-" if c < 0 else "+"
                    coef = "" if abs(abs(c) - 1) < 1e-12 else f"{abs(c):.{precision}g} "
                    terms.append(f"{sign} {coef}{names[j]}")
            lines.append(" ".join(terms))
        return lines


def _priority(p: int) -> np.ndarray:
    """Greedy order of the columns: body by body, inertia before first moments before mass, then
    anything after the bodies' columns (friction)."""
    within = np.array([4, 5, 6, 7, 8, 9, 1, 2, 3, 0])
    bodies = (np.arange(p // 10)[:, None] * 10 + within).reshape(-1)
    return np.concatenate([bodies, np.arange(bodies.size, p)])


@renamed_keywords(w="y")
def base_parameters_from_regressor(
    y: Float[ArrayLike, "*rows p"],
    *,
    rtol: float | None = None,
    names: Sequence[str] = (),
    priority: Sequence[int] | None = None,
) -> BaseParameters:
    """Base parameters of a regressor stacked over many states, ``(rows, p)`` or ``(N, n, p)``.

    Numerical procedure (Gautier 1991), in float64 NumPy, outside ``jit``:

    1. scale each column to unit norm, so that the decision does not depend on the parameters'
       units; columns of norm below ``rtol`` times the largest (parameters without effect, up to
       rounding) are set to zero;
    2. the triangular factor ``R`` (``p x p``) of a QR decomposition of the scaled ``W``: the
       steps below work on ``R``, which has the singular values of ``W`` and ``W^T W = R^T R``,
       so that their cost does not grow with the number of rows;
    3. rank ``r``: the number of singular values above ``rtol * s_max``;
    4. independent columns, greedily in the ``priority`` order: a column is kept when the norm of
       its component orthogonal to the columns kept before it (Gram-Schmidt) is above ``rtol``;
       the count must equal ``r``;
    5. ``B`` from the least-squares solution of ``W_i B = W_d``.

    The decision is refused (``ValueError``) rather than made silently wrong: when the QR pivots
    and the singular values disagree, or when a singular value lies within a factor 10 of the
    threshold (no clear gap between the identifiable directions and rounding). The precision is
    the regressor's own: a float32 regressor (JAX without ``jax_enable_x64``) has rounding errors
    near ``1e-7`` relative, which a float64 threshold would count as independent columns (the
    double pendulum's rank came out 7 instead of 6), so the default ``rtol`` follows its dtype.

    Args:
        y: the regressor stacked over states (from :func:`regressor`, any batch shape), float32
            or float64.
        rtol: relative threshold; default ``max(1e-8, 1e3 eps)`` with ``eps`` the machine epsilon
            of ``y``'s dtype: ``1e-8`` in float64, far below the smallest significant singular
            value of a regressor over random states (1e-3 or more) and far above rounding
            (1e-14); ``1.2e-4`` in float32, where rounding reaches ``1e-7``.
        names: names of the standard parameters (for :meth:`BaseParameters.describe`).
        priority: a permutation of the columns, the order in which they are tried. Default: body
            by body, the 6 inertia entries, then the first moments, then the mass, then the columns
            after the bodies' (friction). With it masses and first moments are regrouped onto
            inertias and a link's parameters onto its parent's, as in Gautier and Khalil's rules
            (e.g. ``link1.Iyy - 0.0361 link2.m + link2.Iyy ...`` for the elbow arm).

    Returns:
        The :class:`BaseParameters`; ``projection`` in float64, its entries below ``1e-10``
        relative (float64) or ``1e3 eps`` relative (float32: rounding residues) set to zero.

    Example:
        The double pendulum's regressor over 40 random states: 6 of its 20 columns are
        independent (:class:`BaseParameters`), as :func:`base_parameters` finds; the same from a
        float32 regressor:

        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> Y = kj.identify.regressor(model, *np.random.default_rng(1).normal(size=(3, 40, 2)))  # (40, 2, 20)
        >>> base = kj.identify.base_parameters_from_regressor(Y, names=kj.identify.parameter_names(model))
        >>> base.rank, [base.names[i] for i in base.independent]
        (6, ['link1.mcx', 'link1.mcy', 'link1.Izz', 'link2.mcx', 'link2.mcy', 'link2.Izz'])
        >>> kj.identify.base_parameters_from_regressor(Y.astype(np.float32)).independent == base.independent
        True
    """
    y = np.asarray(y)
    if y.ndim < 2:
        raise ValueError(f"the stacked regressor must have at least 2 dimensions (rows, p), got shape {y.shape}")
    precision = y.dtype if np.issubdtype(y.dtype, np.floating) else np.dtype(np.float64)
    y = y.astype(np.float64).reshape(-1, y.shape[-1])
    rows, p = y.shape
    if rows < p:
        raise ValueError(f"{rows} rows for {p} parameters: stack the regressor over more states (at least {p} rows)")
    if not np.all(np.isfinite(y)):
        raise ValueError("the regressor has non-finite entries")
    eps = float(np.finfo(precision).eps)
    rtol = max(1e-8, 1e3 * eps) if rtol is None else float(rtol)
    if rtol < 1e2 * eps:
        raise ValueError(
            f"rtol={rtol:g} is below the rounding level of a {precision} regressor (about 1e2 eps = {1e2 * eps:.2g}): "
            "rounding errors would count as independent columns; leave rtol at its default"
            + (' or enable float64 with jax.config.update("jax_enable_x64", True)' if eps > np.finfo(np.float64).eps else "")
        )
    norms = np.linalg.norm(y, axis=0)
    # columns that are zero up to rounding (parameters with no effect) are zero
    zero = norms <= rtol * np.max(norms)
    r_scaled = np.linalg.qr(np.where(zero, 0.0, y / np.where(zero, 1.0, norms)), mode="r")
    s = np.linalg.svd(r_scaled, compute_uv=False)
    if not s[0] > 0:
        raise ValueError("the regressor is zero: no parameter is identifiable")
    rank = int(np.sum(s > rtol * s[0]))
    order = _priority(p) if priority is None else np.asarray(priority, dtype=int)
    if sorted(order.tolist()) != list(range(p)):
        raise ValueError(f"priority must be a permutation of range({p})")
    independent = _greedy_independent(r_scaled, order, rtol)
    ambiguous = np.flatnonzero((s > 0.1 * rtol * s[0]) & (s < 10 * rtol * s[0]))
    if independent.size != rank or ambiguous.size:
        raise ValueError(_ill_determined(rank, independent.size, s[ambiguous] / s[0], rtol, precision))
    dependent = np.setdiff1d(np.arange(p), independent)
    r_y = r_scaled * norms  # the R factor of the unscaled W (its zero columns zero)
    b, *_ = np.linalg.lstsq(r_y[:, independent], r_y[:, dependent], rcond=None)
    k = np.zeros((rank, p))
    k[np.arange(rank), independent] = 1.0
    k[:, dependent] = b
    # exact regrouping coefficients are 0 where a rounding residue is left
    k[np.abs(k) < max(1e-10, 1e3 * eps) * max(1.0, float(np.max(np.abs(k))))] = 0.0
    names = tuple(str(n) for n in names)
    if names and len(names) != p:
        raise ValueError(f"got {len(names)} names for {p} parameters")
    return BaseParameters(rank=rank, independent=tuple(int(i) for i in independent), projection=jnp.asarray(k), names=names)


def _greedy_independent(a: np.ndarray, order: np.ndarray, rtol: float) -> np.ndarray:
    """The columns of ``a`` (unit norm or zero) that are not combinations of the columns kept
    before them in ``order``: Gram-Schmidt against the kept ones only (a Householder QR of the
    whole matrix reflects a dependent column's rounding residue into an arbitrary direction, which
    can then swallow part of a later, independent column), orthogonalised twice ("twice is
    enough", Giraud, Langou and Rozloznik 2005)."""
    basis = np.zeros((a.shape[0], 0))
    kept = []
    for k in order:
        c = a[:, k]
        for _ in range(2):
            c = c - basis @ (basis.T @ c)
        norm = float(np.linalg.norm(c))
        if norm > rtol:
            kept.append(k)
            basis = np.column_stack([basis, c / norm])
    return np.sort(np.asarray(kept, dtype=int))


def _ill_determined(rank: int, pivots: int, near: np.ndarray, rtol: float, precision: np.dtype) -> str:
    """The message of an ill-determined rank, with its likely causes, the precision first."""
    found = f"{rank} singular values and {pivots} QR pivots above rtol={rtol:g}"
    if near.size:
        found += f"; singular values {np.array2string(near, precision=2)} (relative) within a factor 10 of it"
    causes = [
        "too few or degenerate states (e.g. zero velocities, states within narrow joint limits, too few rows): "
        "stack the regressor over more random states",
        "rtol between the identifiable directions and rounding: change rtol",
    ]
    if np.finfo(precision).eps > np.finfo(np.float64).eps:
        causes.insert(
            0,
            f"the regressor is {precision} (machine epsilon {np.finfo(precision).eps:.2g}), whose rounding "
            'errors can pass for independent columns: enable float64 with jax.config.update("jax_enable_x64", True) '
            "at startup and build the regressor again",
        )
    return f"ill-determined rank: {found}. Likely causes: " + "; ".join(causes)


def _random_states(model: Model, key: Array, samples: int) -> tuple[ArrayLike, ArrayLike, ArrayLike]:
    # not within the joint limits: the rank of the regressor is a generic property of the
    # kinematics, and a range of one point (a URDF's lower = upper = 0, "not set") would hide
    # every parameter that only acts when the joint moves. Drawn with NumPy seeded by the key: the
    # eager jax.random calls cost seconds of compilation at the first call, for a few numbers
    data = jax.random.key_data(key) if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    rng = np.random.default_rng(np.asarray(data).ravel().tolist())
    shape = (samples, model.nv)
    q = rng.uniform(-math.pi, math.pi, shape)
    v, vd = rng.standard_normal(shape), rng.standard_normal(shape)
    if model.has_multi_dof:  # uniform rotations, translations in [-pi, pi], the rest as above
        key_joints = jax.random.split(key, 4)[3]
        q = jnp.concatenate(
            [
                q[:, vs] if kind in ("R", "P") else _random_joint(kind, jax.random.fold_in(key_joints, k), samples)
                for k, (kind, _, vs) in enumerate(joint_slices(model))
            ],
            axis=1,
        )
    return q, v, vd


def _random_joint(kind: str, key: Array, samples: int) -> Array:
    """``samples`` uniform configurations of a multi-DoF joint (translations in ``[-pi, pi]``)."""
    size = {"free": 3, "planar": 2}.get(kind)
    bounds = () if size is None else (-math.pi * np.ones(size), math.pi * np.ones(size))
    return jax.vmap(lambda k: _lie.random(kind, k, *bounds))(jax.random.split(key, samples))


@renamed_keywords(seed=("key", jax.random.key))
def base_parameters(
    model: Model,
    key: Array | int | None = None,
    *,
    samples: int | None = None,
    friction: bool | Friction = False,
    armature: bool = False,
    method: str = "auto",
    rtol: float | None = None,
) -> BaseParameters:
    """Base parameters of a model (the identifiable combinations of its standard parameters).

    The regressor (:func:`regressor`) is stacked over ``samples`` random states -- ``q`` uniform
    in ``[-pi, pi]`` (rad or m; free, spherical and planar joints: uniform rotations and
    translations, :func:`~kronjax.configuration.random_configuration`), ``v`` and ``vd``
    standard normal, drawn by NumPy seeded with ``key`` -- and reduced by
    :func:`base_parameters_from_regressor`, in the regressor's precision (float32 when JAX runs
    without ``jax_enable_x64``: the same rank and independent columns, or a ``ValueError`` that
    says so, never a rank made of rounding errors).
    The result depends on the kinematics and gravity only. The states ignore ``model.limits``:
    the rank of the regressor and the regrouping are generic properties (the same at almost
    every state), and states within narrow or single-point limits (a URDF's ``lower = upper = 0``)
    would miss the parameters that only act when a joint moves. Which base parameters an
    experiment within the limits actually excites is measured by :func:`condition_number` of the
    base regressor over its samples.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        key: a JAX random key for the states (default ``jax.random.key(0)``: the same states at
            every call). An ``int`` (the former seed) is deprecated.
        samples: number of random states (default ``2 p / n + 20``).
        friction: include the friction parameters: ``True`` (``2 n``: viscous and Coulomb) or a
            :class:`Friction` (``n`` per kind), as in :func:`regressor`.
        armature: include the ``n`` rotor inertias.
        method: the inverse-dynamics method of the regressor (:func:`regressor`).
        rtol: as in :func:`base_parameters_from_regressor`.

    Returns:
        The :class:`BaseParameters`.

    Example:
        The double pendulum (a planar arm): 6 base parameters of 20, the first link's combined
        with the second link's mass (``L^2 m2``, ``L = 1.22`` m); see :class:`BaseParameters`.

        >>> import kronjax as kj
        >>> base = kj.identify.base_parameters(kj.models.double_pendulum())
        >>> base.rank, base.projection.shape
        (6, (6, 20))
        >>> base.describe()[2]
        'link1.Izz + 1.488 link2.m'
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    p = parameter_count(model, friction, armature)
    samples = int(2 * p / model.nv + 20) if samples is None else int(samples)
    if isinstance(key, int):
        warn("base_parameters(model, seed)", "a key, jax.random.key(seed)")
        key = jax.random.key(key)
    q, v, vd = _random_states(model, jax.random.key(0) if key is None else key, samples)
    y = regressor(model, q, v, vd, friction=friction, armature=armature, method=method)
    return base_parameters_from_regressor(y, rtol=rtol, names=parameter_names(model, friction, armature))
