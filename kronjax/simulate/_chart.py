"""Stepping in local coordinates re-centred at every step (private): the vector field in the chart
at ``q0``, the solver that wraps diffrax's, and its dense output mapped back to ``q`` (the module
docstring of :mod:`kronjax.simulate`)."""

from __future__ import annotations

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..chain import Model
from ..configuration import MovingJoints, chart, chart_rate, configuration_rate
from ..dynamics import forward_dynamics
from ._controllers import TorqueFn

# the charts are kronjax.configuration's)
# --------------------------------------------------------------------------------------------


class ManifoldVectorField(eqx.Module):
    """``(qdot, vdot)`` in the ambient ``(nq, nv)`` layout: what diffrax's initial step-size
    heuristic evaluates; the steps use :meth:`acceleration` in local coordinates."""

    model: Model
    torque: TorqueFn
    joints: MovingJoints = eqx.field(static=True)
    passive: bool = eqx.field(static=True)

    def acceleration(self, t, q, v):
        tau = jnp.asarray(self.torque(t, q, v), v.dtype)
        return forward_dynamics(self.model, q, v, tau, passive=self.passive)

    def __call__(self, t, y, args):
        q, v = y
        return configuration_rate(self.joints, q, v), self.acceleration(t, q, v)


class _LocalField(eqx.Module):
    """The vector field of one step in ``z = (delta, v)`` around the chart centre ``q0``."""

    field: ManifoldVectorField
    q0: Array

    def __call__(self, t, z, args):
        delta, v = z
        q = chart(self.field.joints, self.q0, delta)
        return chart_rate(self.field.joints, q, delta, v), self.field.acceleration(t, q, v)


class _ChartInterpolation(diffrax.AbstractLocalInterpolation):
    """The dense output of a step: the inner solver's, in the chart at ``q0``, mapped to ``q``."""

    t0: Float[Array, ""]
    t1: Float[Array, ""]
    q0: Array
    inner: diffrax.AbstractLocalInterpolation
    joints: MovingJoints = eqx.field(static=True)

    def evaluate(self, t0, t1=None, left: bool = True):
        if t1 is not None:
            return jax.tree.map(jnp.subtract, self.evaluate(t1, left=left), self.evaluate(t0, left=left))
        delta, v = self.inner.evaluate(t0, left=left)
        return chart(self.joints, self.q0, delta), v


class _InterpolationFactory(eqx.Module):
    inner_cls: Callable = eqx.field(static=True)
    joints: MovingJoints = eqx.field(static=True)

    def __call__(self, *, t0, t1, q0, inner):
        return _ChartInterpolation(t0, t1, q0, self.inner_cls(t0=t0, t1=t1, **inner), self.joints)


class LocalCoordinatesSolver(diffrax.AbstractWrappedSolver):
    """A diffrax solver taking each step of ``solver`` in local coordinates (module doc). The
    state is ``y = (q, v)`` with ``q`` on the manifold; ``terms`` is an ``ODETerm`` of a
    :class:`ManifoldVectorField`."""

    solver: diffrax.AbstractSolver
    field: ManifoldVectorField
    # isinstance checks see the wrapped solver; diffrax's adjoints set a Runge-Kutta solver's
    # scan_kind (forward-mode autodiff, bounded while loops), here, and step passes it on
    scan_kind: str | None = None

    @property
    def term_structure(self):
        return diffrax.AbstractTerm

    @property
    def interpolation_cls(self):  # pyright: ignore
        return _InterpolationFactory(self.solver.interpolation_cls, self.field.joints)

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state
        q0, v0 = y0
        local = diffrax.ODETerm(_LocalField(self.field, q0))
        z0 = (jnp.zeros_like(v0), v0)
        inner = self.solver
        if self.scan_kind is not None:
            inner = eqx.tree_at(lambda s: s.scan_kind, inner, self.scan_kind, is_leaf=lambda x: x is None)
        # a fresh inner state: an FSAL stage of the previous step belongs to another chart
        inner_state = inner.init(local, t0, t1, z0, args)
        (delta1, v1), z_error, dense, _, result = inner.step(local, t0, t1, z0, args, inner_state, made_jump)
        joints = self.field.joints
        q1 = chart(joints, q0, delta1)
        y_error = None
        if z_error is not None:
            y_error = (q1 - chart(joints, q0, delta1 - z_error[0]), z_error[1])
        return (q1, v1), y_error, {"q0": q0, "inner": dense}, None, result

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)
