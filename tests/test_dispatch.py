"""Calls outside ``jax.jit`` run compiled kernels, not the recursions op by op.

A function called eagerly dispatches every primitive of its trace one at a time (a few to a few
hundred microseconds each), so a recursion of thousands of scalar-component operations cost
0.2-1 s per call (Panda: ``inverse_dynamics`` 0.45 s, ``forward_dynamics`` 1.1 s, on the 2-core
VM) even after its first call. The kernels (Newton-Euler, the articulated-body algorithm, the
composite-body matrices, the analytic Jacobians and Hessians, the derivatives of the dynamics, the
Lagrangian) are ``equinox.filter_jit``-compiled, so that an eager call dispatches one compiled
program per kernel plus a few operations around it. The oracle is structural, not a timing: the
operations an eager call dispatches, read from its jaxpr.
"""

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest

import kronjax as kj

# an eager call's own operations around its compiled kernels; a recursion traced op by op has
# hundreds to thousands (the Panda's inverse dynamics 1 in a custom-JVP call holding ~1500)
AT_MOST = 100


def _dispatched(jaxpr) -> int:
    """Operations an eager evaluation of ``jaxpr`` dispatches one by one: a compiled call (``jit``)
    or a loop counts once; a custom-derivative call runs its body eagerly, so its body counts."""
    count = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("custom_jvp_call", "custom_vjp_call"):
            count += _dispatched(eqn.params["call_jaxpr"].jaxpr)
        else:
            count += 1
    return count


def _calls(model: kj.Model, one_dof_joints: bool):
    last = model.n_bodies - 1
    calls = {
        "jacobians": lambda q, v, a: kj.jacobians(model, q),
        "jacobians body": lambda q, v, a: kj.jacobians(model, q, frame="body"),
        "hessians": lambda q, v, a: kj.hessians(model, q),
        "jacobians_dot": lambda q, v, a: kj.jacobians_dot(model, q, v),
        "translational_jacobian": lambda q, v, a: kj.translational_jacobian(model, q, last),
        "rotational_hessian": lambda q, v, a: kj.rotational_hessian(model, q, last),
        "linear_acceleration": lambda q, v, a: kj.linear_acceleration(model, q, v, a, last),
        "mass_matrix": lambda q, v, a: kj.mass_matrix(model, q),
        "coriolis_star": lambda q, v, a: kj.coriolis_star(model, q),
        "gravity": lambda q, v, a: kj.gravity(model, q),
        "inverse_dynamics": lambda q, v, a: kj.inverse_dynamics(model, q, v, a),
        "inverse_dynamics lagrangian": lambda q, v, a: kj.inverse_dynamics(model, q, v, a, method="euler_lagrange"),
        "inverse_dynamics kron": lambda q, v, a: kj.inverse_dynamics(model, q, v, a, method="kron"),
        "forward_dynamics": lambda q, v, a: kj.forward_dynamics(model, q, v, a),
        "inverse_dynamics_derivatives": lambda q, v, a: kj.inverse_dynamics_derivatives(model, q, v, a),
        "forward_dynamics_derivatives": lambda q, v, a: kj.forward_dynamics_derivatives(model, q, v, a),
    }
    for form in kj.dynamics.CORIOLIS_FORMS:
        calls[f"coriolis_matrix {form}"] = lambda q, v, a, form=form: kj.coriolis_matrix(model, q, v, form=form)
    if one_dof_joints:  # the composite-body dM/dq: 1-DoF joints only
        calls["mass_matrix_derivative"] = lambda q, v, a: kj.mass_matrix_derivative(model, q)
    return calls


@pytest.mark.parametrize("name", ["panda", "free tree"])
def test_eager_calls_dispatch_compiled_kernels(name):
    if name == "panda":
        model = kj.models.panda()
    else:  # a free-flyer, a spherical joint and a revolute one: the multi-DoF paths
        model = oracles.random_tree([("free", -1), ("spherical", 0), ("R", 1)], seed=3)
    rng = np.random.default_rng(0)
    q = kj.random_configuration(model, jax.random.PRNGKey(0))
    v, a = (jnp.asarray(x) for x in rng.normal(size=(2, model.nv)))
    counts = {call: _dispatched(jax.make_jaxpr(fn)(q, v, a).jaxpr) for call, fn in _calls(model, not model.has_multi_dof).items()}
    assert max(counts.values()) <= AT_MOST, counts
