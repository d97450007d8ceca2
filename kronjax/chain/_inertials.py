"""Body inertials: mass, centre of mass and inertia tensor about it, checked at construction
(positive mass, symmetric positive-definite inertia satisfying the triangle inequalities)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._arrays import float_array, is_concrete, stack_arrays


@dataclasses.dataclass(frozen=True)
class Inertial:
    """Inertial parameters of one body, given by the user to a builder.

    Attributes:
        mass: mass ``m > 0`` (or ``0`` together with a zero inertia: a massless frame, such as a
            tool frame or a URDF link without ``<inertial>``).
        com: centre of mass in the body frame (3-vector), the paper's ``p_G^(i)``.
        inertia: inertia tensor about the centre of mass, in body-frame axes: a symmetric positive
            semi-definite 3 x 3 matrix, or its three principal values ``(Ixx, Iyy, Izz)``.

    Example:
        A 2 kg body, centre of mass 0.5 m along ``x``, on a revolute joint about ``z``: ``M = m
        0.5^2 + Izz = 0.6``.

        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> link = kj.Inertial(mass=2.0, com=(0.5, 0.0, 0.0), inertia=(0.0, 0.1, 0.1))
        >>> model = kj.from_joints([kj.Joint("R", axis=(0, 0, 1))], [link])
        >>> print(model.inertials.inertia[0])  # principal values become a diagonal tensor
        [[0.  0.  0. ]
         [0.  0.1 0. ]
         [0.  0.  0.1]]
        >>> print(np.round(float(kj.mass_matrix(model, jnp.zeros(1))[0, 0]), 6))
        0.6
    """

    mass: Any
    com: Any = (0.0, 0.0, 0.0)
    inertia: Any = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


class Inertials(eqx.Module):
    """Inertial parameters of all bodies, stacked (pytree leaves).

    Attributes:
        mass: ``(nb,)`` body masses.
        com: ``(nb, 3)`` centres of mass in the body frames.
        inertia: ``(nb, 3, 3)`` inertia tensors about the centres of mass, body-frame axes (``I_G``).

    Example:
        >>> import kronjax as kj
        >>> inertials = kj.models.double_pendulum().inertials
        >>> inertials.com.shape, inertials.inertia.shape
        ((2, 3), (2, 3, 3))
        >>> print(inertials.mass)
        [14.59 14.59]
    """

    mass: Float[Array, " nb"]
    com: Float[Array, "nb 3"]
    inertia: Float[Array, "nb 3 3"]

    def __check_init__(self):
        nb = self.mass.shape[0] if self.mass.ndim == 1 else -1
        if self.mass.ndim != 1 or self.com.shape != (nb, 3) or self.inertia.shape != (nb, 3, 3):
            raise ValueError(
                "Inertials need mass (nb,), com (nb, 3), inertia (nb, 3, 3); got "
                f"{self.mass.shape}, {self.com.shape}, {self.inertia.shape}"
            )
        if not is_concrete(self.mass, self.com, self.inertia):
            return
        mass, inertia = np.asarray(self.mass), np.asarray(self.inertia)
        for i in range(nb):
            _check_inertial(i, mass[i], inertia[i])


def _check_inertial(body: int | str, mass: np.ndarray | np.floating | float, inertia: np.ndarray) -> None:
    if not (np.isfinite(mass) and np.all(np.isfinite(inertia))):
        raise ValueError(f"body {body}: mass {float(mass)} and inertia tensor must be finite:\n{inertia}")
    # a massless body with no inertia is a frame (a URDF link without <inertial>, a tool frame)
    if not (mass > 0 or (mass == 0 and not np.any(inertia))):
        raise ValueError(
            f"body {body}: mass must be positive, got {float(mass)} "
            "(only a body with zero inertia too may have mass 0: a massless frame)"
        )
    scale = max(float(np.max(np.abs(inertia))), 1.0)
    tol = (1e-5 if inertia.dtype == np.float32 else 1e-10) * scale
    if not np.allclose(inertia, inertia.T, rtol=0.0, atol=tol):
        raise ValueError(f"body {body}: inertia tensor is not symmetric:\n{inertia}")
    eig = np.linalg.eigvalsh(0.5 * inertia + 0.5 * inertia.T)  # no overflow near the largest float
    if eig[0] < -tol:
        raise ValueError(f"body {body}: inertia tensor is not positive semi-definite (eigenvalues {eig}):\n{inertia}")


def stack_inertials(inertials, nb: int, names: Sequence[str]) -> Inertials | None:
    if inertials is None or isinstance(inertials, Inertials):
        if isinstance(inertials, Inertials) and inertials.mass.shape[0] != nb:
            raise ValueError(f"Inertials hold {inertials.mass.shape[0]} bodies, the model has {nb}")
        return inertials
    inertials = list(inertials)
    if len(inertials) != nb:
        raise ValueError(f"got {len(inertials)} inertials for {nb} bodies")
    masses, coms, tensors = [], [], []
    for i, item in enumerate(inertials):
        if isinstance(item, dict):
            unknown = set(item) - {"mass", "com", "inertia"}
            if unknown:
                raise ValueError(f"body {i} ({names[i]}): unknown inertial keys {sorted(unknown)}")
            item = Inertial(**item)
        if not isinstance(item, Inertial):
            raise TypeError(f"body {i} ({names[i]}): expected an Inertial or a dict, got {item!r}")
        what = f"body {i} ({names[i]})"
        mass = float_array(item.mass, f"{what} mass", ())
        com = float_array(item.com, f"{what} centre of mass", (3,))
        inertia = float_array(item.inertia, f"{what} inertia")
        if inertia.shape == (3,):
            inertia = np.diag(inertia) if is_concrete(inertia) else jnp.diag(inertia)
        if inertia.shape != (3, 3):
            raise ValueError(f"{what} inertia must be 3 x 3 or 3 principal values, got {inertia.shape}")
        if is_concrete(mass, inertia):
            _check_inertial(f"{i} ({names[i]})", np.asarray(mass), np.asarray(inertia))
        masses.append(mass)
        coms.append(com)
        tensors.append(inertia)
    return Inertials(stack_arrays(masses), stack_arrays(coms), stack_arrays(tensors))
