"""The standard inertial parameters ``pi`` (10 per body, Pinocchio's order) of a model and back,
the names of the regressor's columns, and the pseudo-inertia (Wensing, Kim and Slotine 2017)."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..chain import Inertials, Model
from ..chain._arrays import is_concrete
from ..dynamics._bodies import require_inertials
from ._friction import Friction, friction_kinds

BODY_PARAMETERS = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the 10 standard parameters of a body, in Pinocchio's order (inertia about the origin)."""

# (row, column) of the inertia tensor entries in BODY_PARAMETERS[4:]
_INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
# index into the 6 entries above of each element of the symmetric 3 x 3 tensor
_TENSOR_FROM_ENTRIES = np.array([[0, 1, 3], [1, 2, 4], [3, 4, 5]])


def _model_inertials(model: Model) -> Inertials:
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    return require_inertials(model)


def _tensor(entries: Array) -> Array:
    """Symmetric ``(..., 3, 3)`` tensors from ``(..., 6)`` entries in Pinocchio's order."""
    return entries[..., _TENSOR_FROM_ENTRIES]


def _entries(tensor: Array) -> Array:
    return jnp.stack([tensor[..., r, c] for r, c in _INERTIA_ENTRIES], axis=-1)


def _safe_inverse(mass: Array) -> Array:
    """``1 / m``, and 0 for a massless frame (``m = 0``, whose ``h`` and ``I`` are 0 too)."""
    massless = mass == 0
    return jnp.where(massless, 0.0, 1.0 / jnp.where(massless, 1.0, mass))


def _steiner(mass: Array, h: Array) -> Array:
    """``m (c^T c E - c c^T)`` with ``h = m c``, written as ``(h^T h E - h h^T) / m``."""
    eye = jnp.eye(3, dtype=h.dtype)
    hh = jnp.einsum("bi,bj->bij", h, h)
    return (jnp.einsum("bi,bi->b", h, h)[:, None, None] * eye - hh) * _safe_inverse(mass)[:, None, None]


def standard_parameters(model: Model) -> Float[Array, " p"]:
    """The standard inertial parameters ``pi`` of a model, ``(10 nb,)``.

    Body ``i`` occupies ``pi[10 i : 10 i + 10]`` = ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy,
    I_xz, I_yz, I_zz)`` (:data:`BODY_PARAMETERS`, Pinocchio's order), in body-``i`` axes, with the
    inertia about the body-frame origin by Steiner's theorem ``I_O = I_G + m (c^T c E - c c^T)``
    (the model stores ``I_G`` about the centre of mass).

    Args:
        model: the :class:`~kronjax.chain.Model` (its inertials are needed).

    Returns:
        ``(10 nb,)``: ``pi``.

    Example:
        The double pendulum's first link (``m = 14.59`` kg, centre of mass ``Lc = 0.61`` m along
        ``x``, a slender rod with ``Izz = 1.36`` kg m^2 about it): ``m c_x = m Lc = 8.8999`` and,
        about the joint, ``Iyy = Izz = 1.36 + m Lc^2 = 6.7889``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> pi = kj.identify.standard_parameters(kj.models.double_pendulum())
        >>> pi.shape  # 10 per body
        (20,)
        >>> dict(zip(kj.identify.BODY_PARAMETERS, np.round(np.asarray(pi[:10]), 4).tolist()))
        {'m': 14.59, 'mcx': 8.8999, 'mcy': 0.0, 'mcz': 0.0, 'Ixx': 0.0, 'Ixy': 0.0, 'Iyy': 6.7889,
         'Ixz': 0.0, 'Iyz': 0.0, 'Izz': 6.7889}
    """
    return _standard_parameters(_model_inertials(model))


@eqx.filter_jit
def _standard_parameters(ine: Inertials) -> Array:
    mass = ine.mass
    com = ine.com
    eye = jnp.eye(3, dtype=com.dtype)
    inertia = ine.inertia + mass[:, None, None] * (
        jnp.einsum("bi,bi->b", com, com)[:, None, None] * eye - jnp.einsum("bi,bj->bij", com, com)
    )
    per_body = jnp.concatenate([mass[:, None], mass[:, None] * com, _entries(inertia)], axis=1)
    return per_body.reshape(-1)


def _split(pi: Array, nb: int) -> tuple[Array, Array, Array]:
    p = pi.reshape(nb, 10)
    return p[:, 0], p[:, 1:4], _tensor(p[:, 4:])


@eqx.filter_jit
def set_inertials(model: Model, pi: Array) -> Model:
    """``model`` with the inertials of ``pi``; no checks (the model's own are bypassed, so that a
    non-physical estimate can be evaluated). A zero mass is a massless frame (``c = 0``)."""
    nb = model.n_bodies
    mass, h, inertia_origin = _split(pi, nb)
    com = h * _safe_inverse(mass)[:, None]
    inertia_com = inertia_origin - _steiner(mass, h)
    if model.inertials is None:
        dtype = pi.dtype
        placeholder = Inertials(jnp.ones(nb, dtype), jnp.zeros((nb, 3), dtype), jnp.tile(jnp.eye(3, dtype=dtype), (nb, 1, 1)))
        model = eqx.tree_at(lambda m: m.inertials, model, placeholder, is_leaf=lambda x: x is None)
    return eqx.tree_at(lambda m: (m.inertials.mass, m.inertials.com, m.inertials.inertia), model, (mass, com, inertia_com))


def as_parameters(pi: ArrayLike, size: int, what: str = "pi") -> Array:
    pi = jnp.asarray(pi)
    if not jnp.issubdtype(pi.dtype, jnp.floating):
        pi = pi.astype(jnp.result_type(float))
    if pi.shape != (size,):
        raise ValueError(f"{what} must have shape ({size},) (10 per body), got {pi.shape}")
    return pi


def with_standard_parameters(model: Model, pi: Float[ArrayLike, " p"], *, check: bool = True) -> Model:
    """The model with its bodies' inertials replaced by the standard parameters ``pi`` (10 nb,).

    The inverse of :func:`standard_parameters`: ``c = h / m``, ``I_G = I_O - m (c^T c E - c c^T)``.
    Kinematics, gravity, names, limits and the joint-space parameters (``armature``, ``damping``,
    ``friction``) are kept: :func:`to_model` sets identified ``fv``, ``fc``, ``ia`` as well. Works
    on kinematics-only models too.

    Args:
        model: the :class:`~kronjax.chain.Model`.
        pi: ``(10 nb,)`` in :data:`BODY_PARAMETERS` order per body (friction and armature columns
            excluded).
        check: when ``pi`` is concrete (not traced), raise unless every body is physically
            realisable: pseudo-inertia (:func:`pseudo_inertia`) positive semi-definite, mass > 0.
            ``check=False`` lets a non-physical estimate (e.g. from least squares) be turned into a
            model, for torque prediction; masses must still be non-zero (``c = h / m``), except for
            massless frames (all 10 parameters 0).

    Returns:
        The :class:`~kronjax.chain.Model` with the inertials of ``pi``.

    Example:
        Every parameter doubled is every body twice as heavy, its centre of mass kept; the mass
        matrix, linear in the parameters, doubles:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> pi = kj.identify.standard_parameters(model)
        >>> heavy = kj.identify.with_standard_parameters(model, 2 * pi)
        >>> print(np.round(heavy.inertials.mass, 6), np.round(heavy.inertials.com[0], 6))
        [29.18 29.18] [0.61 0.   0.  ]
        >>> q = jnp.array([0.3, -0.7])
        >>> bool(jnp.allclose(kj.mass_matrix(heavy, q), 2 * kj.mass_matrix(model, q)))
        True
        >>> kj.identify.with_standard_parameters(model, -pi)  # a negative mass: no such body
        Traceback (most recent call last):
        ...
        ValueError: body 0 (link1): not physically realisable (mass -14.59, ...); pass check=False to build the model anyway
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    pi = as_parameters(pi, 10 * model.n_bodies)
    if is_concrete(pi):
        values = np.asarray(pi).reshape(-1, 10)
        for i, row in enumerate(values):
            name = f"body {i} ({model.body_names[i]})"
            if not np.all(np.isfinite(row)):
                raise ValueError(f"{name}: parameters must be finite, got {row}")
            if row[0] == 0 and np.any(row):
                raise ValueError(
                    f"{name}: mass is 0 but the first moments or inertia are not; a body needs a non-zero mass "
                    "to have a centre of mass c = h / m (all 10 parameters 0 is a massless frame)"
                )
            if check:
                eig = float(np.linalg.eigvalsh(np.asarray(pseudo_inertia(row)))[0, 0])
                scale = max(float(np.max(np.abs(row))), 1e-300)
                if not ((row[0] > 0 or not np.any(row)) and eig >= -1e-12 * scale):
                    raise ValueError(
                        f"{name}: not physically realisable (mass {row[0]:.6g}, smallest eigenvalue of "
                        f"the pseudo-inertia {eig:.3g}); pass check=False to build the model anyway"
                    )
    return set_inertials(model, pi)


def parameter_names(model: Model, friction: bool | Friction = False, armature: bool = False) -> tuple[str, ...]:
    """Names of the regressor's columns: ``"<body>.<parameter>"`` (:data:`BODY_PARAMETERS`), then
    the friction coefficients kind by kind, ``"<joint>.<kind>"`` per joint coordinate with the
    kinds of :attr:`Friction.kinds` (``fv`` viscous, ``fc`` Coulomb, ``fo`` offset, ``fs``
    Stribeck; ``friction=True``: ``fv`` then ``fc``), then with ``armature=True``
    ``"<joint>.ia"`` (rotor inertia).

    Args:
        model: the :class:`~kronjax.chain.Model`.
        friction: ``False``, ``True`` or a :class:`Friction`, as given to :func:`regressor`.
        armature: with the rotor-inertia columns' names.

    Returns:
        ``p`` names, in the regressor's column order.

    Example:
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> names = kj.identify.parameter_names(model)
        >>> len(names), names[:4], names[-1]
        (20, ('link1.m', 'link1.mcx', 'link1.mcy', 'link1.mcz'), 'link2.Izz')
        >>> kj.identify.parameter_names(model, friction=True, armature=True)[20:]
        ('joint1.fv', 'joint2.fv', 'joint1.fc', 'joint2.fc', 'joint1.ia', 'joint2.ia')
        >>> kj.identify.parameter_names(model, friction=kj.identify.Friction(viscous=False, stribeck=0.1))[20:]
        ('joint1.fc', 'joint2.fc', 'joint1.fs', 'joint2.fs')
    """
    names = [f"{body}.{p}" for body in model.body_names for p in BODY_PARAMETERS]
    moving = model.coordinate_names
    names += [f"{j}.{kind}" for kind in friction_kinds(friction) for j in moving]
    if armature:
        names += [f"{j}.ia" for j in moving]
    return tuple(names)


def parameter_count(model: Model, friction: bool | Friction | None, armature: bool) -> int:
    """The number of the regressor's columns."""
    return 10 * model.n_bodies + model.nv * (len(friction_kinds(friction)) + bool(armature))


def pseudo_inertia(pi: Float[ArrayLike, " p"] | Sequence[float]) -> Float[Array, "nb 4 4"]:
    """Pseudo-inertia matrices ``J = [[Sigma, h], [h^T, m]]`` (``(nb, 4, 4)``, one per group of 10
    standard parameters), ``Sigma = tr(I_O)/2 E - I_O`` the second moment of the mass distribution
    about the body-frame origin, ``h = m c``.

    A body is physically realisable (a non-negative mass density exists) exactly when ``J`` is
    positive semi-definite, and ``J`` is positive definite for any body that is not degenerate
    (Wensing, Kim and Slotine 2017). This implies ``m > 0``, ``I_G`` positive definite and
    the triangle inequalities of its principal moments.

    Args:
        pi: ``(10 nb,)`` standard parameters (:func:`standard_parameters`' order).

    Returns:
        ``(nb, 4, 4)``: one ``J`` per body.

    Example:
        The double pendulum's links are slender rods (``J`` semi-definite); a body with principal
        moments ``(1, 1, 3)`` about its centre of mass breaks the triangle inequality ``Izz <=
        Ixx + Iyy``: ``Sigma = diag(1.5, 1.5, -0.5)``.

        >>> import numpy as np
        >>> import kronjax as kj
        >>> J = kj.identify.pseudo_inertia(kj.identify.standard_parameters(kj.models.double_pendulum()))
        >>> J.shape, float(J[0, 3, 3])  # one per body; J[3, 3] = m
        ((2, 4, 4), 14.59)
        >>> bool(np.linalg.eigvalsh(J).min() > -1e-9)
        True
        >>> impossible = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 3.0]  # m = 1 at the origin, I = diag(1, 1, 3)
        >>> print(np.round(np.linalg.eigvalsh(kj.identify.pseudo_inertia(impossible))[0], 6))
        [-0.5  1.   1.5  1.5]
    """
    pi = jnp.asarray(pi)
    if pi.ndim != 1 or pi.shape[0] % 10:
        raise ValueError(f"pi must be a vector of 10 parameters per body, got shape {pi.shape}")
    return _pseudo_inertia(pi)


@jax.jit
def _pseudo_inertia(pi: Array) -> Array:
    mass, h, inertia = _split(pi, pi.shape[0] // 10)
    sigma = 0.5 * jnp.trace(inertia, axis1=1, axis2=2)[:, None, None] * jnp.eye(3, dtype=pi.dtype) - inertia
    top = jnp.concatenate([sigma, h[:, :, None]], axis=2)
    bottom = jnp.concatenate([h, mass[:, None]], axis=1)[:, None, :]
    return jnp.concatenate([top, bottom], axis=1)


def pi_from_pseudo_inertia(j: Array) -> Array:
    sigma = j[:, :3, :3]
    inertia = jnp.trace(sigma, axis1=1, axis2=2)[:, None, None] * jnp.eye(3, dtype=j.dtype) - sigma
    return jnp.concatenate([j[:, 3, 3:4], j[:, :3, 3], _entries(inertia)], axis=1).reshape(-1)
