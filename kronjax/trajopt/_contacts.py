"""Contacts and contact schedules as data: :class:`Contact` (a point or a flat foot of a body on
the ground, with its friction coefficient) and :class:`ContactSchedule` (phases of given durations,
each with the contacts that are active in it).

A schedule's structure (the number of phases, which contacts each one holds) is static; its
durations and friction coefficients are arrays, leaves of the pytree, so that a schedule with the
same structure and other timings is the same program to ``jax.jit``: changing the phase durations
of a gait does not compile anything again.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

from ..chain import Model

CONTACT_KINDS = ("point", "6d")


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


class Contact(eqx.Module):
    """A contact of a body with the ground (the base frame's ``z = const`` plane, normal ``+z``).

    ``kind="point"``: a point of the body stays where it touched down, held by a force (3 rows);
    ``kind="6d"``: the body's frame stays where it touched down, position and orientation (a flat
    foot), held by a wrench (6 rows: the force at the point, then the moment about it), both in
    the base frame's axes. A flat foot's sole is the rectangle of ``size`` centred at ``point`` in
    the plane of the body frame's ``x`` and ``y`` axes, its normal the body's ``z`` axis.

    Args:
        name: how schedules name the contact (unique within a schedule).
        body: the body's index or name (:attr:`~kronjax.chain.Model.body_names`; a URDF link
            joined by a fixed joint is a body of its own with ``load_urdf(..., merge_fixed=False)``).
        point: ``(3,)`` the contact point in the body frame (default its origin).
        friction: the Coulomb friction coefficient ``mu >= 0`` of the cone
            ``|f_t| <= mu f_n``.
        kind: ``"point"`` (default) or ``"6d"``.
        size: ``(2,)`` a ``"6d"`` contact's sole, its length along the body's ``x`` axis and width
            along its ``y`` axis (metres; default 0, which :func:`optimize_on_contacts` refuses:
            its wrench cone needs the sole's size).

    Example:
        ANYmal's left front foot, a point 0.1 m below the shank's frame (illustrative), on a floor
        of friction 0.7:

        >>> from kronjax import trajopt
        >>> foot = trajopt.Contact("LF", "LF_SHANK", point=(0.0, 0.0, -0.1), friction=0.7)
        >>> foot.name, foot.body, foot.kind, foot.rows, float(foot.friction)
        ('LF', 'LF_SHANK', 'point', 3, 0.7)
        >>> trajopt.Contact("LF", "LF_SHANK", friction=-0.5)
        Traceback (most recent call last):
        ...
        ValueError: contact 'LF': friction must be a finite number >= 0, got -0.5

        A flat foot: a sole 20 cm long and 8 cm wide, its centre 5 cm below the ankle's frame:

        >>> sole = trajopt.Contact("L", "l_ankle", point=(0.03, 0.0, -0.05), friction=0.7, kind="6d", size=(0.2, 0.08))
        >>> sole.rows, sole.size.tolist(), sole.support.shape
        (6, [0.2, 0.08], (4, 3))
    """

    name: str = eqx.field(static=True)
    body: int | str = eqx.field(static=True)
    point: Float[Array, 3]
    friction: Float[Array, ""]
    kind: str = eqx.field(static=True)
    size: Float[Array, 2]

    def __init__(
        self,
        name: str,
        body: int | str,
        point: ArrayLike | Sequence[float] = (0.0, 0.0, 0.0),
        friction: ArrayLike = 1.0,
        kind: str = "point",
        size: ArrayLike | Sequence[float] = (0.0, 0.0),
    ):
        if not isinstance(name, str) or not name:
            raise TypeError(f"a contact's name must be a non-empty string, got {name!r}")
        if kind not in CONTACT_KINDS:
            raise ValueError(f"contact {name!r}: kind must be one of {CONTACT_KINDS}, got {kind!r}")
        point = jnp.asarray(point, dtype=jnp.result_type(float))
        if point.shape != (3,):
            raise ValueError(f"contact {name!r}: point must be a 3-vector in the body frame, got shape {point.shape}")
        friction = jnp.asarray(friction, dtype=jnp.result_type(float))
        if friction.shape != ():
            raise ValueError(f"contact {name!r}: friction must be a scalar, got shape {friction.shape}")
        if _is_concrete(friction) and not (np.isfinite(float(friction)) and float(friction) >= 0.0):
            raise ValueError(f"contact {name!r}: friction must be a finite number >= 0, got {float(friction)!r}")
        size = jnp.asarray(size, dtype=jnp.result_type(float))
        if size.shape != (2,):
            raise ValueError(f"contact {name!r}: size must be (length, width), got shape {size.shape}")
        if _is_concrete(size) and not (np.all(np.isfinite(size)) and np.all(np.asarray(size) >= 0.0)):
            raise ValueError(f"contact {name!r}: size must be finite lengths >= 0, got {np.asarray(size).tolist()}")
        if kind == "point" and _is_concrete(size) and np.any(np.asarray(size) != 0.0):
            raise ValueError(f"contact {name!r}: a point contact has no size (a flat foot is kind='6d')")
        if _is_concrete(size) and np.any(np.asarray(size) > 0.0) and not np.all(np.asarray(size) > 0.0):
            raise ValueError(
                f"contact {name!r}: a sole's size needs a positive length and width, got {np.asarray(size).tolist()}"
            )
        self.name, self.body, self.point, self.friction, self.kind, self.size = name, body, point, friction, kind, size

    @property
    def rows(self) -> int:
        """The number of constraint rows and force components: 3 (point) or 6 (``"6d"``)."""
        return 3 if self.kind == "point" else 6

    @property
    def support(self) -> Float[Array, "K 3"]:
        """``(K, 3)`` the points that bear on the ground, in the body frame: the contact point
        (``K = 1``), or a ``"6d"`` contact's sole corners (``K = 4``: ``(+x, +y), (+x, -y), (-x,
        +y), (-x, -y)`` half-sizes about the point)."""
        if self.kind == "point":
            return self.point[None]
        half = 0.5 * self.size
        signs = jnp.array([(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)], half.dtype)
        return self.point + jnp.concatenate([signs * half, jnp.zeros((4, 1), half.dtype)], axis=1)

    def cone(self, wrench: Float[Array, " rows"], rotation: Float[Array, "3 3"]) -> Float[Array, " faces"]:
        """The faces of the contact's friction cone at ``wrench``, each ``<= 0`` inside, in newtons.

        A point contact: the four faces ``+-f_x +- f_y - mu f_z`` of the pyramid inscribed in the
        cone ``|f_t| <= mu f_n``. A ``"6d"`` contact (its ``size`` positive): the contact wrench
        cone of its rectangular sole (Caron, Pham and Nakamura, "Stability of surface contacts for
        humanoid robots: closed-form formulae of the contact wrench cone for rectangular support
        areas", ICRA 2015), the wrenches that forces at the sole's corners inside pyramids ``|f_x|,
        |f_y| <= mu' f_z`` (``mu' = mu / sqrt 2``, inscribed in the cone) sum to. In the sole's
        frame, with ``f`` the force, ``tau`` the moment about the centre and half-sizes ``X`` and
        ``Y``, its 16 faces are, in order: ``+-f_x - mu' f_z``, ``+-f_y - mu' f_z`` (friction);
        ``+-tau_x / Y - f_z``, ``+-tau_y / X - f_z`` (the centre of pressure on the sole); then, per
        sign pair ``(s_x, s_y)``, ``(tau_min - tau_z) / (X + Y)`` and ``(tau_z - tau_max) / (X +
        Y)`` with ``tau_min = -mu' (X + Y) f_z + s_x (Y f_x - mu' tau_x) + s_y (X f_y - mu' tau_y)``
        and ``tau_max = mu' (X + Y) f_z - s_x (Y f_x + mu' tau_x) - s_y (X f_y + mu' tau_y)`` (the
        yaw moment).

        Args:
            wrench: ``(rows,)`` the contact's rows of the contact forces (base-frame axes): the
                force (3), and for a ``"6d"`` contact the moment about its point (3).
            rotation: ``(3, 3)`` the body's rotation in the base frame, the sole's frame (unused by
                a point contact).

        Returns:
            ``(4,)`` (a point) or ``(16,)`` (a ``"6d"`` contact) the faces.
        """
        mu = self.friction.astype(wrench.dtype)
        signs = [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)]
        if self.kind == "point":
            return jnp.stack([sx * wrench[0] + sy * wrench[1] - mu * wrench[2] for sx, sy in signs])
        f, tau = rotation.T @ wrench[:3], rotation.T @ wrench[3:]
        half_x, half_y = 0.5 * self.size.astype(wrench.dtype)
        mu = mu / np.sqrt(2.0)
        span = half_x + half_y
        faces = [s * f[i] - mu * f[2] for i in (0, 1) for s in (1.0, -1.0)]
        faces += [s * tau[0] / half_y - f[2] for s in (1.0, -1.0)] + [s * tau[1] / half_x - f[2] for s in (1.0, -1.0)]
        for sx, sy in signs:
            low = -mu * span * f[2] + sx * (half_y * f[0] - mu * tau[0]) + sy * (half_x * f[1] - mu * tau[1])
            high = -mu * span * f[2] + sx * (half_y * f[0] + mu * tau[0]) + sy * (half_x * f[1] + mu * tau[1])
            faces += [(low - tau[2]) / span, (tau[2] + high) / span]
        return jnp.stack(faces)


class ContactSchedule(eqx.Module):
    """Phases of given durations, each with the contacts active in it, from ``t = 0``.

    Args:
        contacts: the :class:`Contact` s (``C`` of them, unique names).
        phases: a sequence of ``(duration, names)``: the phase's duration in seconds (positive) and
            the names of the contacts active during it (an empty tuple: a flight phase).

    Attributes:
        contacts: as given.
        durations: ``(P,)`` the phase durations (traced values under ``jax.jit``).
        active: ``P`` tuples of ``C`` booleans (static): whether contact ``c`` is active in phase ``p``.

    Example:
        A trot of a quadruped: two diagonal pairs of feet swing in turn between phases of four
        feet on the ground. The same schedule with other durations is the same program to
        ``jax.jit``:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> from kronjax import trajopt
        >>> feet = [trajopt.Contact(name, name + "_FOOT", friction=0.7) for name in ("LF", "RF", "LH", "RH")]
        >>> all_feet = ("LF", "RF", "LH", "RH")
        >>> trot = trajopt.ContactSchedule(
        ...     feet, [(0.2, all_feet), (0.3, ("RF", "LH")), (0.1, all_feet), (0.3, ("LF", "RH")), (0.2, all_feet)]
        ... )
        >>> round(float(trot.duration), 9), trot.num_phases, trot.num_contacts
        (1.1, 5, 4)
        >>> trot.active_at(0.35).tolist()  # in the first swing phase: RF and LH on the ground
        [False, True, True, False]
        >>> at = jax.jit(lambda schedule, t: schedule.active_at(t))
        >>> slower = trot.with_durations(jnp.array([0.4, 0.4, 0.1, 0.4, 0.3]))
        >>> at(trot, 0.35).tolist(), at(slower, 0.35).tolist()  # one compilation for both
        ([False, True, True, False], [True, True, True, True])
    """

    contacts: tuple[Contact, ...]
    durations: Float[Array, " P"]
    active: tuple[tuple[bool, ...], ...] = eqx.field(static=True)

    def __init__(self, contacts: Sequence[Contact], phases: Sequence[Sequence]):
        contacts = tuple(contacts)
        if not contacts:
            raise ValueError("a contact schedule needs at least one contact")
        for contact in contacts:
            if not isinstance(contact, Contact):
                raise TypeError(f"contacts must be trajopt.Contact(...), got {contact!r}")
        names = [contact.name for contact in contacts]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"contact names must be unique, these repeat: {repeated}")
        phases = list(phases)
        if not phases:
            raise ValueError("a contact schedule needs at least one phase")
        active = []
        for p, phase in enumerate(phases):
            if not (isinstance(phase, (tuple, list)) and len(phase) == 2):
                raise TypeError(f"phase {p} must be a pair (duration, contact names), got {phase!r}")
            held = (phase[1],) if isinstance(phase[1], str) else tuple(phase[1])
            unknown = [name for name in held if name not in names]
            if unknown:
                raise ValueError(f"phase {p} names contacts {unknown} that the schedule does not have; its contacts are {names}")
            active.append(tuple(name in held for name in names))
        durations = jnp.stack([jnp.asarray(phase[0], dtype=jnp.result_type(float)) for phase in phases])
        _check_durations(durations)
        self.contacts, self.durations, self.active = contacts, durations, tuple(active)

    @property
    def num_phases(self) -> int:
        """``P``."""
        return len(self.active)

    @property
    def num_contacts(self) -> int:
        """``C``."""
        return len(self.contacts)

    @property
    def names(self) -> tuple[str, ...]:
        """The contacts' names, in order."""
        return tuple(contact.name for contact in self.contacts)

    @property
    def duration(self) -> Float[Array, ""]:
        """The schedule's total duration."""
        return jnp.sum(self.durations)

    @property
    def boundaries(self) -> Float[Array, " B"]:
        """``(P + 1,)`` the phases' start times and the end: ``0, d_0, d_0 + d_1, ...``."""
        return jnp.concatenate([jnp.zeros(1, self.durations.dtype), jnp.cumsum(self.durations)])

    def with_durations(self, durations: Float[ArrayLike, " P"] | Sequence[float]) -> ContactSchedule:
        """The same schedule (contacts and phases) with other durations."""
        durations = jnp.asarray(durations, self.durations.dtype)
        if durations.shape != self.durations.shape:
            raise ValueError(f"durations must have shape {self.durations.shape}, one per phase, got {durations.shape}")
        _check_durations(durations)
        return eqx.tree_at(lambda s: s.durations, self, durations)

    def phase_at(self, t: Float[ArrayLike, ""]) -> Array:
        """The index of the phase at time ``t`` (a phase holds its start, not its end; times
        outside ``[0, duration]`` belong to the first or the last phase)."""
        inner = self.boundaries[1:-1]
        return jnp.searchsorted(inner, jnp.asarray(t, self.durations.dtype), side="right")

    def active_at(self, t: Float[ArrayLike, ""]) -> Bool[Array, " C"]:
        """``(C,)`` whether each contact is active at time ``t``."""
        return jnp.asarray(np.array(self.active, dtype=bool))[self.phase_at(t)]

    def touchdowns(self) -> np.ndarray:
        """``(P, C)`` booleans (static): contact ``c`` becomes active at the start of phase ``p``
        (``p >= 1``; the contacts of the first phase are on the ground from the start)."""
        table = np.array(self.active, dtype=bool)
        return np.concatenate([np.zeros((1, table.shape[1]), bool), table[1:] & ~table[:-1]])

    def bodies(self, model: Model) -> tuple[int, ...]:
        """The contacts' body indices in ``model``; a clear error names a contact whose body the
        model does not have."""
        out = []
        for contact in self.contacts:
            try:
                out.append(model.body_index(contact.body))
            except (KeyError, IndexError, TypeError) as err:
                raise ValueError(f"contact {contact.name!r}: {err.args[0]}") from None
        return tuple(out)


def _check_durations(durations: Array) -> None:
    if durations.ndim != 1:
        raise ValueError(f"phase durations must be scalars, got shape {durations.shape[1:]}")
    if _is_concrete(durations):
        values = np.asarray(durations)
        bad = [k for k, d in enumerate(values) if not (np.isfinite(d) and d > 0)]
        if bad:
            raise ValueError(f"phase durations must be positive and finite: phase {bad[0]} has {float(values[bad[0]])!r}")
