"""Non-finite numbers (NaN, inf): kronjax's policy, and :func:`check_finite` for users who want an error.

The policy:

* **Builders and loaders raise.** :func:`~kronjax.from_joints`, :func:`~kronjax.from_dh`,
  :func:`~kronjax.from_function` and :func:`~kronjax.load_urdf` raise a ``ValueError`` naming the
  element when a parameter (axis, placement, D-H entry, mass, centre of mass, inertia, gravity) is
  NaN or infinite, or a joint limit is NaN (an infinite limit means "unlimited"). The records
  :class:`~kronjax.Inertial` and :class:`~kronjax.Joint` are checked by the builder they are given
  to. Values that are JAX tracers (a builder called under ``jit`` or ``grad``) cannot be checked.
* **Computations propagate.** A NaN or inf in ``q``, ``v``, ``vd``, ``tau``, a wrench, or a
  model parameter (a leaf of a :class:`~kronjax.Model` edited with ``eqx.tree_at`` or produced by
  an optimiser) makes every output entry that depends on it NaN or inf. It is never turned into a
  finite wrong number: no clipping, no ``nan_to_num``, and the ``jnp.where`` masks inside the
  algorithms only select structural zeros (the Jacobian column of a joint that does not move a
  body, the coordinate of a fixed joint), which are zero whatever the input. Entries that do not
  depend on the non-finite input may stay finite (the pose of a body upstream of a NaN joint
  angle), or may become NaN too where the algorithm mixes them (a matrix product, a linear
  solve). The positive-definiteness check of :func:`~kronjax.forward_dynamics` raises only for a
  model and ``q`` that are finite: a NaN there gives NaN accelerations, not an error that blames
  the masses.
* **Checking is opt-in.** The computations do not test their inputs for finiteness at run time (a
  check costs a device-to-host round trip under ``jit``). :func:`check_finite` raises on any non-finite
  leaf of a pytree, also under ``jit``, ``vmap`` and ``grad``, with a message naming the argument;
  wrap the inputs with it::

      vd = kj.forward_dynamics(kj.check_finite(model, "model"), kj.check_finite(q, "q"),
                                kj.check_finite(v, "v"), kj.check_finite(tau, "tau"))

  or check the output only (cheaper: one check), knowing that a NaN there came from an input.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, PyTree

from .chain import JointLimits

__all__ = ["check_finite"]


def _bad(leaf: Array, infinite_ok: bool) -> Bool[Array, ""]:
    return jnp.any(jnp.isnan(leaf)) if infinite_ok else ~jnp.all(jnp.isfinite(leaf))


def _is_inexact(node) -> bool:
    if isinstance(node, (jax.Array, np.ndarray, np.generic)):
        return jnp.issubdtype(node.dtype, jnp.inexact)
    return isinstance(node, float)


def _map_inexact(fn, tree: PyTree) -> PyTree:
    """``fn(path, leaf, infinite_ok)`` on every floating-point leaf of ``tree`` (others kept);
    the leaves of a :class:`~kronjax.chain.JointLimits` may be infinite (unlimited)."""
    keystr = jax.tree_util.keystr

    def visit(path, node):
        if isinstance(node, JointLimits):
            return jax.tree_util.tree_map_with_path(lambda sub, leaf: fn(keystr(path + sub), leaf, True), node)
        if _is_inexact(node):
            return fn(keystr(path), node, False)
        return node

    return jax.tree_util.tree_map_with_path(visit, tree, is_leaf=lambda node: isinstance(node, JointLimits))


def all_finite(tree: PyTree) -> Bool[Array, ""]:
    """``True`` when no floating-point leaf of ``tree`` holds a NaN or inf (joint limits may be
    infinite); usable under ``jit``."""
    flags = []
    _map_inexact(lambda path, leaf, infinite_ok: flags.append(~_bad(jnp.asarray(leaf), infinite_ok)), tree)
    return jnp.all(jnp.stack(flags)) if flags else jnp.asarray(True)


def check_finite(x: PyTree, name: str = "input") -> PyTree:
    """``x``, after checking that none of its floating-point leaves holds a NaN or an inf.

    Works on an array, a model (:class:`~kronjax.Model`: its joint limits may be infinite, meaning
    unlimited, but not NaN) or any pytree, inside ``jax.jit``, ``jax.vmap`` (any failing batch
    element raises) and ``jax.grad`` (derivatives pass through unchanged), by
    ``equinox.error_if`` on each leaf. Returns ``x`` with those leaves as JAX arrays, so that
    calls chain: ``kj.mass_matrix(model, kj.check_finite(q, "q"))``. The module
    :mod:`kronjax._finite` states kronjax's policy on non-finite numbers.

    Args:
        x: the value to check.
        name: how the error message calls it; a leaf inside a pytree is named by its path after
            it, e.g. ``model.inertials.mass``.

    Returns:
        A copy of ``x`` whose floating leaves carry the check: use the result, so that the check
        stays in the traced program.

    Raises:
        equinox.EquinoxRuntimeError: at run time, when a leaf is not finite, with the message
            ``"<name><path> has a non-finite entry (NaN or inf)"`` (``"a NaN entry"`` for joint
            limits); outside ``jit`` and under ``equinox.filter_jit``. Under ``jax.jit`` JAX
            raises its own error for the failed check instead, with that message in its text (a
            ``RuntimeError``, or a ``ValueError`` from JAX's fast dispatch path). Equinox's
            ``EQX_ON_ERROR`` environment variable selects other behaviours (``"nan"``,
            ``"breakpoint"``).

    Example:
        >>> import jax.numpy as jnp
        >>> import kronjax as kj
        >>> model = kj.check_finite(kj.models.double_pendulum(), "model")  # infinite limits pass
        >>> print(kj.check_finite(jnp.array([0.1, 0.2]), "q"))
        [0.1 0.2]
        >>> try:
        ...     kj.check_finite(jnp.array([0.1, jnp.nan]), "q")
        ... except Exception as err:  # equinox.EquinoxRuntimeError
        ...     print("q has a non-finite entry (NaN or inf)" in str(err))
        True
    """

    def checked(path: str, leaf, infinite_ok: bool) -> Array:
        leaf = jnp.asarray(leaf)
        what = "a NaN entry" if infinite_ok else "a non-finite entry (NaN or inf)"
        return eqx.error_if(leaf, _bad(leaf, infinite_ok), f"{name}{path} has {what}")

    return _map_inexact(checked, x)
