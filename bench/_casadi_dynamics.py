"""kronjax's trajectory-optimisation problem written again in CasADi, for IPOPT (bench/trajopt.py).

The peer must solve the *same* nonlinear program as kronjax, or its timings compare nothing, so
everything is read from kronjax's objects rather than retyped: the recursive Newton-Euler inverse
dynamics from the model's joint axes, placements, inertials, armature and gravity, and the
transcription from the :class:`kronjax.trajopt.Problem` (the affine map from the free control
points ``z`` to all of them, the B-spline design matrices, the quadrature weights, the limits).
The checks in bench/trajopt.py and tests/test_trajopt_casadi.py hold both to 1e-12.

CasADi builds symbolic expressions (``casadi.SX``) of these and differentiates them itself: IPOPT
gets its exact Hessian of the Lagrangian from CasADi, not from JAX. Scalar SX throughout because
it evaluates fastest: one Hessian of the UR5's Lagrangian took 13 ms, against 24 ms with the same
program wrapped in an MX function and 34 ms with the inverse dynamics mapped over the samples in
MX (``Function.map``), on 2 busy cores.
"""

from __future__ import annotations

import casadi as ca
import jax
import numpy as np

from kronjax.chain import Model, Tree
from kronjax.trajopt import Problem, TorqueEffort
from kronjax.trajopt._problem import limit_scales  # the limits as kronjax scales them


def _check_model(model: Model) -> Tree:
    """The model's :class:`Tree`, or a clear error for what :func:`inverse_dynamics` does not
    handle (written for fixed-base arms such as ``kronjax.models.panda()`` and ``ur5()``)."""
    tree = model.kinematics
    if not isinstance(tree, Tree):
        raise TypeError(f"the CasADi inverse dynamics needs a Tree model, got {type(tree).__name__} kinematics")
    other = sorted(set(tree.kinds) - {"R", "P"})
    if other or tree.has_mimic or model.inertials is None:
        raise NotImplementedError(
            "the CasADi inverse dynamics handles fixed-base models with inertials whose joints are all revolute "
            f"('R') or prismatic ('P'), without mimic joints (kronjax.models.panda(), ur5()); this model has "
            f"joint kinds {sorted(set(tree.kinds))}, mimic joints: {tree.has_mimic}, inertials: {model.inertials is not None}"
        )
    return tree


def _rodrigues(axis: np.ndarray, angle):
    k = ca.DM(np.cross(np.eye(3), axis))  # [axis]_x
    return ca.DM.eye(3) + ca.sin(angle) * k + (1 - ca.cos(angle)) * (k @ k)


def inverse_dynamics(model: Model, q, qd, qdd):
    """``tau`` (a CasADi column of ``n``) of ``model`` at the symbols or numbers ``q, qd, qdd``
    (columns of ``n``): recursive Newton-Euler in the body frames (Luh, Walker and Paul 1980),
    with the base accelerating at ``-gravity`` so that gravity needs no term of its own, plus the
    rotor inertias' ``armature * qdd``.

    kronjax places body ``i`` in its parent as ``Pre_i * joint(q_i) * Post_i``, the joint axis
    in the joint frame (after ``Pre``). In body ``i``'s frame the axis is ``z = Post_R^T axis``
    through the joint origin ``o = -Post_R^T Post_p``; that point is fixed in the parent too, so
    a revolute child's origin accelerates as the parent's point ``o`` plus the rotation about it.
    """
    tree = _check_model(model)
    axes, pre_r, pre_p, post_r, post_p = (
        np.asarray(x, float)
        for x in (tree.axes, tree.pre_rotation, tree.pre_translation, tree.post_rotation, tree.post_translation)
    )
    mass, com, inertia = (np.asarray(x, float) for x in (model.inertials.mass, model.inertials.com, model.inertials.inertia))
    armature = np.zeros(model.nv) if model.armature is None else np.asarray(model.armature, float)
    zero = ca.DM.zeros(3)
    # per body, in its own frame: angular velocity w, angular acceleration dw, origin acceleration a
    w, dw, a, rotation, origin = [], [], [], [], []
    for i, (parent, kind) in enumerate(zip(tree.parents, tree.kinds)):
        k = tree.q_index[i]
        z = post_r[i].T @ axes[i]
        joint_r = _rodrigues(axes[i], q[k]) if kind == "R" else ca.DM.eye(3)
        joint_p = axes[i] * q[k] if kind == "P" else zero
        local_r = pre_r[i] @ joint_r @ post_r[i]  # body i in its parent
        local_p = pre_p[i] + pre_r[i] @ (joint_p + joint_r @ post_p[i])
        rotation.append(local_r)
        origin.append(local_p)
        w_p, dw_p, a_p = (zero, zero, -np.asarray(model.gravity, float)) if parent < 0 else (w[parent], dw[parent], a[parent])
        e = local_r.T
        if kind == "R":
            o = -post_r[i].T @ post_p[i]
            w_i = e @ w_p + z * qd[k]
            dw_i = e @ dw_p + z * qdd[k] + ca.cross(e @ w_p, z * qd[k])
            a_o = e @ (a_p + ca.cross(dw_p, pre_p[i]) + ca.cross(w_p, ca.cross(w_p, pre_p[i])))
            a_i = a_o - ca.cross(dw_i, o) - ca.cross(w_i, ca.cross(w_i, o))
        else:
            w_i, dw_i = e @ w_p, e @ dw_p
            a_i = (
                e @ (a_p + ca.cross(dw_p, local_p) + ca.cross(w_p, ca.cross(w_p, local_p)))
                + z * qdd[k]
                + 2 * ca.cross(w_i, z * qd[k])
            )
        w.append(w_i)
        dw.append(dw_i)
        a.append(a_i)
    # backward: force f and moment n (about the body origin) that the parent exerts on body i
    force, moment, tau = [None] * len(w), [None] * len(w), [None] * model.nv
    for i in reversed(range(len(w))):
        a_c = a[i] + ca.cross(dw[i], com[i]) + ca.cross(w[i], ca.cross(w[i], com[i]))
        f_i = mass[i] * a_c
        n_i = inertia[i] @ dw[i] + ca.cross(w[i], inertia[i] @ w[i]) + ca.cross(com[i], f_i)
        for child in (j for j, p in enumerate(tree.parents) if p == i):
            f_child = rotation[child] @ force[child]
            f_i = f_i + f_child
            n_i = n_i + rotation[child] @ moment[child] + ca.cross(origin[child], f_child)
        force[i], moment[i] = f_i, n_i
        k = tree.q_index[i]
        z = post_r[i].T @ axes[i]
        if tree.kinds[i] == "R":
            o = -post_r[i].T @ post_p[i]
            tau[k] = ca.dot(z, n_i - ca.cross(o, f_i)) + armature[k] * qdd[k]
        else:
            tau[k] = ca.dot(z, f_i) + armature[k] * qdd[k]
    return ca.vertcat(*tau)


def inverse_dynamics_function(model: Model) -> ca.Function:
    """``tau = f(q, qd, qdd)`` as a CasADi Function of SX symbols."""
    q, qd, qdd = (ca.SX.sym(name, model.nv) for name in ("q", "qd", "qdd"))
    return ca.Function("inverse_dynamics", [q, qd, qdd], [inverse_dynamics(model, q, qd, qdd)])


def _affine_control_points(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """``(c0, A)`` with ``control_points(z).ravel() = c0 + A z.ravel()`` (row-major), read off
    kronjax's :meth:`Problem.control_points`, which is affine in ``z``."""
    zero = np.zeros(problem.shape)
    c0 = np.asarray(problem.control_points(zero)).ravel()
    jacobian = np.asarray(jax.jacfwd(problem.control_points)(zero)).reshape(c0.size, zero.size)
    return c0, jacobian


def _limit_rows(x, lower, upper, scale, lower_mask, upper_mask):
    """``[(x - upper) / scale, (lower - x) / scale]`` column by column, ``-1`` where unlimited
    (as kronjax's ``Problem.constraints``)."""
    columns = range(x.shape[1])
    inactive = ca.DM.ones(x.shape[0]) * -1.0
    up = ca.horzcat(*((x[:, i] - upper[i]) / scale[i] if upper_mask[i] else inactive for i in columns))
    lo = ca.horzcat(*((lower[i] - x[:, i]) / scale[i] if lower_mask[i] else inactive for i in columns))
    return up, lo


def transcription(problem: Problem) -> tuple[ca.SX, ca.SX, ca.SX]:
    """``(z, f, g)``: the symbol ``z`` (``problem.shape`` raveled row-major), the cost ``f(z)`` and
    the constraints ``g(z) <= 0`` of ``problem`` as CasADi SX expressions, term by term those of
    ``problem.objective`` and ``problem.constraints`` (same samples, same order)."""
    if type(problem.cost) is not TorqueEffort:
        raise NotImplementedError(f"the CasADi transcription has the torque effort only, not {problem.cost!r}")
    if problem.extra_constraints or problem.free_time is not None:
        raise NotImplementedError("the CasADi transcription has the joint limits only: no further constraints, no free time")
    model, (m, n) = problem.model, (problem.num_control_points, problem.nv)
    duration = float(problem.boundary.duration)
    c0, jacobian = _affine_control_points(problem)
    z = ca.SX.sym("z", int(np.prod(problem.shape)))
    flat = ca.DM(c0) + ca.sparsify(ca.DM(jacobian)) @ z
    c = ca.reshape(flat, n, m).T  # row-major (m, n)
    design = np.asarray(problem.design, float)
    q, qd, qdd = (ca.DM(design[j]) @ c / duration**j for j in range(3))
    rnea = inverse_dynamics_function(model)
    tau = ca.vertcat(*(rnea(q[k, :].T, qd[k, :].T, qdd[k, :].T).T for k in range(q.shape[0])))
    joint_weights = np.ones(n) if problem.cost.weights is None else np.broadcast_to(np.asarray(problem.cost.weights, float), (n,))
    weights = np.asarray(problem.weights, float) * duration
    f = ca.dot(ca.DM(weights), (tau * tau) @ ca.DM(joint_weights))

    lower, upper, scale, lo_mask, up_mask, vel, vel_mask, eff, eff_mask = (
        np.asarray(x) for x in limit_scales(problem.limits, problem.margin, design.dtype)
    )
    position = _limit_rows(q, lower, upper, scale, lo_mask, up_mask)
    velocity = _limit_rows(qd, -vel, vel, vel, vel_mask, vel_mask)
    torque = _limit_rows(tau, -eff, eff, eff, eff_mask, eff_mask)
    g = ca.vertcat(*(ca.vec(part.T) for part in (*position, *velocity, *torque)))  # each (K, n) raveled row-major
    return z, f, g
