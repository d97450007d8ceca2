"""Joint friction models whose torque is linear in their coefficients: the regressor's friction
columns (viscous, Coulomb by sign or tanh, offset, Stribeck)."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

_COULOMB = ("sign", "tanh", None)


class Friction(eqx.Module):
    """The friction model of every joint coordinate, as regressor columns linear in its
    coefficients (the static friction models of Armstrong-Helouvry, Dupont and Canudas de Wit,
    Automatica 30(7), 1994; a smooth Coulomb term as the sigmoid friction of Gaz, Cognetti, Oliva,
    Robuffo Giordano and De Luca, IEEE RA-L 4(4), 2019)::

        tau_f = fv v + fc sign(v) + fo + fs exp(-(v / vs)^2) sign(v)

    per coordinate (``v`` in rad/s or m/s, coefficients in N m s/rad, N m, ...), with ``sign(v)``
    replaced by ``tanh(v / smoothing)`` for ``coulomb="tanh"`` (the logistic sigmoid ``2 /
    (1 + e^(-2 v / s)) - 1`` is the same function). Each chosen kind adds ``nv`` columns to
    :func:`regressor`, all coordinates of one kind before the next, in the order ``fv``, ``fc``,
    ``fo``, ``fs`` (:attr:`kinds`; :func:`parameter_names` names them ``"<joint>.<kind>"``).
    ``friction=True`` everywhere in :mod:`kronjax.identify` is ``Friction()``: viscous and
    sign Coulomb, the model's ``damping`` and ``friction`` (:mod:`kronjax.passive`).

    The Stribeck term is the static minus Coulomb part of the classic Stribeck curve
    ``(fc + fs exp(-(v/vs)^2)) sign(v)``, linear in ``fs`` for the given Stribeck velocity
    ``vs``. :func:`physically_consistent` keeps ``fv``, ``fc`` and ``fs`` non-negative (friction
    dissipates; breakaway friction is above Coulomb friction); the offset ``fo`` (a constant
    torque: gravity compensation or a sensor bias that the model lacks) is free.

    Attributes:
        viscous: the ``fv v`` columns.
        coulomb: ``"sign"`` (``fc sign(v)``), ``"tanh"`` (``fc tanh(v / smoothing)``) or
            ``None`` (no Coulomb columns).
        smoothing: the velocity scale ``s > 0`` of ``coulomb="tanh"`` (rad/s or m/s; as
            :func:`~kronjax.passive.passive_forces`' ``smoothing``); only with ``"tanh"``.
        offset: the ``fo`` columns (ones).
        stribeck: the Stribeck velocity ``vs > 0`` of the ``fs`` columns, or ``None`` (none).

    Example:
        Viscous, smooth Coulomb with ``s = 0.05`` rad/s and an offset, on a 2-joint arm:

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> friction = kj.identify.Friction(coulomb="tanh", smoothing=0.05, offset=True)
        >>> friction.kinds
        ('fv', 'fc', 'fo')
        >>> print(np.round(friction.terms(jnp.array([0.1, -2.0])), 4))  # v, tanh(v / 0.05), 1
        [[ 0.1   -2.   ]
         [ 0.964 -1.   ]
         [ 1.     1.   ]]
        >>> kj.identify.parameter_names(kj.models.double_pendulum(), friction=friction)[20:]
        ('joint1.fv', 'joint2.fv', 'joint1.fc', 'joint2.fc', 'joint1.fo', 'joint2.fo')
    """

    viscous: bool = eqx.field(default=True, static=True)
    coulomb: str | None = eqx.field(default="sign", static=True)
    smoothing: float | None = eqx.field(default=None, static=True)
    offset: bool = eqx.field(default=False, static=True)
    stribeck: float | None = eqx.field(default=None, static=True)

    def __check_init__(self):
        for what in ("viscous", "offset"):
            if not isinstance(getattr(self, what), bool):
                raise TypeError(f"Friction({what}=...) must be True or False, got {getattr(self, what)!r}")
        if self.coulomb not in _COULOMB:
            raise ValueError(f"Friction(coulomb={self.coulomb!r}): unknown Coulomb model; use 'sign', 'tanh' or None")
        if self.coulomb == "tanh":
            if self.smoothing is None or not (math.isfinite(self.smoothing) and self.smoothing > 0):
                raise ValueError(
                    f"Friction(coulomb='tanh') needs a velocity scale smoothing > 0 (rad/s or m/s), got {self.smoothing!r}"
                )
        elif self.smoothing is not None:
            raise ValueError(f"Friction(smoothing={self.smoothing!r}) applies to coulomb='tanh' only, not {self.coulomb!r}")
        if self.stribeck is not None and not (math.isfinite(self.stribeck) and self.stribeck > 0):
            raise ValueError(f"Friction(stribeck=...) is the Stribeck velocity vs > 0 (rad/s or m/s), got {self.stribeck!r}")
        if not self.kinds:
            raise ValueError("Friction(...) with no kind chosen; pass friction=False for no friction columns")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The coefficients' names in column order: ``"fv"``, ``"fc"``, ``"fo"``, ``"fs"``, those chosen."""
        chosen = (self.viscous, self.coulomb is not None, self.offset, self.stribeck is not None)
        return tuple(kind for kind, on in zip(("fv", "fc", "fo", "fs"), chosen) if on)

    @property
    def nonnegative(self) -> tuple[bool, ...]:
        """Per kind (:attr:`kinds`), whether :func:`physically_consistent` keeps it ``>= 0``."""
        return tuple(kind != "fo" for kind in self.kinds)

    def terms(self, v: Float[Array, "*batch nv"]) -> Float[Array, "*batch k nv"]:
        """The friction torque per unit coefficient, kind by kind (:attr:`kinds`).

        Args:
            v: velocities ``(..., nv)`` (rad/s or m/s).

        Returns:
            ``(..., k, nv)``: row ``i`` is ``d tau_f / d (coefficient kinds[i])`` of every
            coordinate; ``tau_f = sum_i coefficient_i * terms[..., i, :]``.

        Example:
            Sign Coulomb and Stribeck with ``vs = 0.5``: at ``v = -vs``, ``-1`` and ``-1/e``;
            at rest, 0.

            >>> import jax.numpy as jnp
            >>> import numpy as np
            >>> import kronjax as kj
            >>> print(np.round(kj.identify.Friction(viscous=False, stribeck=0.5).terms(jnp.array([-0.5, 0.0])), 6))
            [[-1.        0.      ]
             [-0.367879  0.      ]]
        """
        columns = []
        if self.viscous:
            columns.append(v)
        if self.coulomb == "sign":
            columns.append(jnp.sign(v))
        elif self.coulomb == "tanh":
            columns.append(jnp.tanh(v / self.smoothing))
        if self.offset:
            columns.append(jnp.ones_like(v))
        if self.stribeck is not None:
            columns.append(jnp.exp(-((v / self.stribeck) ** 2)) * jnp.sign(v))
        return jnp.stack(columns, axis=-2)


def as_friction(friction: bool | Friction | None) -> Friction | None:
    """``friction=`` as the library takes it: ``True`` is :class:`Friction` ``()`` (viscous and
    sign Coulomb), ``False``/``None`` none."""
    if isinstance(friction, Friction):
        return friction
    if friction is None or friction is False:
        return None
    if friction is True:
        return Friction()
    raise TypeError(
        f"friction must be True, False or a kronjax.identify.Friction(...), got {friction!r}; "
        "e.g. Friction(coulomb='tanh', smoothing=0.05, offset=True)"
    )


def friction_kinds(friction: bool | Friction | None) -> tuple[str, ...]:
    """The friction coefficients' names in column order (none without friction)."""
    friction = as_friction(friction)
    return () if friction is None else friction.kinds
