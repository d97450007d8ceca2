"""An identified estimate back into a :class:`~kronjax.chain.Model`: inertials, friction and rotor
inertias."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from ..chain import Model
from ..chain._arrays import is_concrete
from ._base_parameters import BaseParameters
from ._friction import Friction, friction_kinds
from ._parameters import as_parameters, parameter_count, parameter_names, standard_parameters, with_standard_parameters

# the Model's joint-space field that holds each coefficient kind (offsets and Stribeck: none)
_FIELDS = {"fv": "damping", "fc": "friction", "ia": "armature"}


def _nominal(model: Model, kinds: tuple[str, ...]) -> jnp.ndarray:
    """The model's own parameters in the regressor's layout (0 where it has none)."""
    zeros = jnp.zeros(model.nv)
    values = [getattr(model, _FIELDS[k]) if k in _FIELDS and getattr(model, _FIELDS[k]) is not None else zeros for k in kinds]
    return jnp.concatenate([standard_parameters(model), *values])


def to_model(
    model: Model,
    estimate: Float[ArrayLike, " k"],
    *,
    friction: bool | Friction = False,
    armature: bool = False,
    base: BaseParameters | None = None,
    nominal: Float[ArrayLike, " p"] | None = None,
    unmodelled: str = "raise",
    check: bool = True,
) -> Model:
    """The model with an identified estimate: inertials, viscous and Coulomb friction, rotor
    inertias, ready for :func:`~kronjax.dynamics.forward_dynamics` and :mod:`kronjax.simulate`.

    The bodies' standard parameters go through :func:`with_standard_parameters`; the joint
    coefficients into the :class:`~kronjax.chain.Model`'s joint-space parameters (Khalil and
    Dombre 2002, ch. 12's ``tau = Y pi + fv v + fc sign(v) + ia vd``): viscous ``fv`` into
    ``damping``, Coulomb ``fc`` into ``friction``, rotor inertias ``ia`` into ``armature``, so that
    ``inverse_dynamics(to_model(...), q, v, vd, passive=True) = Y @ estimate`` for the friction of
    ``friction=True``. A Coulomb coefficient fitted as ``tanh(v / s)`` (``Friction(coulomb="tanh",
    smoothing=s)``) is stored in ``friction`` too: :func:`~kronjax.passive.passive_forces` with
    ``smoothing=s`` reproduces it (the model itself applies ``sign(v)``). Kinds not in
    ``friction``/``armature`` keep the model's values. The model has no offset (``fo``) or
    Stribeck (``fs``) term: non-zero ones raise unless ``unmodelled="drop"`` (they stay in the
    estimate, named by :func:`parameter_names`).

    Args:
        model: the model identified (kinematics, gravity and names are kept).
        estimate: ``(p,)``: the standard parameters, then friction and rotor inertias in the
            regressor's order (:func:`physically_consistent`, :func:`least_squares` on the
            standard regressor), or with ``base`` the base parameters ``beta`` ``(r,)``.
        friction: the friction columns of the estimate: ``False``, ``True`` or a
            :class:`Friction`, as given to :func:`regressor`.
        armature: whether the estimate has rotor inertias.
        base: the :class:`BaseParameters` of a base-parameter estimate: turned into standard
            parameters by :meth:`BaseParameters.to_standard` (the closest to ``nominal``).
        nominal: ``(p,)`` for ``base``: default the model's own parameters in this layout
            (its standard parameters, damping, friction, armature; 0 for offsets and Stribeck).
        unmodelled: ``"raise"`` or ``"drop"``: what to do with non-zero offset and Stribeck
            coefficients.
        check: raise unless every body is physically realisable (:func:`with_standard_parameters`)
            and ``fv``, ``fc``, ``ia`` are ``>= 0`` (the model's passive forces assume so);
            ``check=False`` builds the model anyway (for torque prediction).

    Returns:
        The :class:`~kronjax.chain.Model`.

    Example:
        The double pendulum with damping ``0.3`` and Coulomb friction ``0.2`` on both joints,
        identified from exact torques: the model rebuilt from the estimate predicts them.

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import numpy as np
        >>> import kronjax as kj
        >>> model = kj.models.double_pendulum()
        >>> q, v, vd = np.random.default_rng(0).normal(size=(3, 40, 2))
        >>> pi = jnp.concatenate([kj.identify.standard_parameters(model), jnp.array([0.3, 0.3, 0.2, 0.2])])
        >>> Y = kj.identify.regressor(model, q, v, vd, friction=True)
        >>> base = kj.identify.base_parameters(model, friction=True)
        >>> beta = kj.identify.least_squares(base.regressor(Y), Y @ pi)
        >>> fitted = kj.identify.to_model(model, beta, friction=True, base=base)
        >>> print(np.round(fitted.damping, 6), np.round(fitted.friction, 6))
        [0.3 0.3] [0.2 0.2]
        >>> tau = jax.vmap(lambda *s: kj.inverse_dynamics(fitted, *s, passive=True))(q, v, vd)
        >>> bool(jnp.allclose(tau, Y @ pi))
        True
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a kronjax Model, got {type(model).__name__}")
    if unmodelled not in ("raise", "drop"):
        raise ValueError(f"unmodelled must be 'raise' or 'drop', got {unmodelled!r}")
    kinds = friction_kinds(friction) + (("ia",) if armature else ())
    p = parameter_count(model, friction, armature)
    if base is not None:
        if base.size != p:
            raise ValueError(
                f"base was found for {base.size} standard parameters; this model with friction={friction}, "
                f"armature={armature} has {p}: pass the friction= and armature= the base parameters were found with"
            )
        nominal = _nominal(model, kinds) if nominal is None else nominal
        estimate = base.to_standard(estimate, nominal)
    estimate = as_parameters(estimate, p, "estimate")
    nb, nv = model.n_bodies, model.nv
    names = parameter_names(model, friction, armature)
    coefficients = dict(zip(kinds, estimate[10 * nb :].reshape(len(kinds), nv)))
    if is_concrete(estimate):
        for kind, values in coefficients.items():
            values = np.asarray(values)
            start = 10 * nb + kinds.index(kind) * nv
            if kind in ("fo", "fs") and unmodelled == "raise" and np.any(values != 0):
                raise ValueError(
                    f"a Model has no {'offset' if kind == 'fo' else 'Stribeck'} friction term, and the estimate has "
                    f"{dict(zip(names[start : start + nv], values.tolist()))}; pass unmodelled='drop' to build the model "
                    "without them (they stay in the estimate)"
                )
            if kind in _FIELDS and check and np.any(values < 0):
                raise ValueError(
                    f"{dict(zip(names[start : start + nv], values.tolist()))}: a Model's {_FIELDS[kind]} must be >= 0; "
                    "identify with physically_consistent (which keeps them so) or pass check=False to build it anyway"
                )
    fitted = with_standard_parameters(model, estimate[: 10 * nb], check=check)
    held = [kind for kind in kinds if kind in _FIELDS]
    return eqx.tree_at(
        lambda m: tuple(getattr(m, _FIELDS[kind]) for kind in held),
        fitted,
        tuple(coefficients[kind] for kind in held),
        is_leaf=lambda x: x is None,
    )
