"""Simulation: rollouts of the forward dynamics with diffrax, and torque laws (controllers).

The equations of motion (Tuan 100, Truc 44) are integrated as a first-order system in
``y = (q, v)``::

    q'  = v                                                    (q ⊕ v dt on the tangent space)
    vd  = M(q)^-1 (tau(t, q, v) - C*(q) (v ⊗ v) - g(q))          (forward_dynamics)

with :func:`kronjax.forward_dynamics` (Cholesky of ``M``, bias by Newton-Euler). Everything is a
pure function: :func:`rollout` works under ``jax.jit`` and ``jax.vmap`` (many initial states,
many parameter sets) and is differentiable end to end (``jax.grad`` of a loss of the rollout
with respect to the initial state, a controller's gains or the model's parameters; diffrax
differentiates through the solver's steps, "discretise then optimise").

Torque laws are callables ``torque(t, q, v) -> tau``. The builders here return equinox
Modules whose gains and reference trajectories are pytree leaves, so that they are
differentiable and do not trigger recompilation when their values change:

* :func:`feedforward` -- Truc eq. (72): ``tau = M(q_r) vd_r + C(q_r, v_r) v_r + g(q_r)``;
* :func:`computed_torque` -- ``tau = M(q) (vd_r + Kd (v_r - v) + Kp (q_r - q)) + C v + g``;
* :func:`pd` -- ``tau = Kp (q_r - q) + Kd (v_r - v)`` (optionally ``+ g(q)``);
* :func:`open_loop` -- torques tabulated at times, linearly interpolated.

A *reference* is a callable ``t -> (q_r, v_r, vd_r)``, each ``(n,)``, for example a
:class:`kronjax.trajopt.BSpline` or a closed form such as Truc's (73).

Free, spherical and planar joints (``nq != nv``, :mod:`kronjax.configuration`): ``q`` lives on
a Lie group (unit quaternions, ``(cos, sin)`` pairs) and ``v`` is the velocity ``v`` in the
tangent space (``nv`` numbers), so ``qdot = v`` no longer holds. :func:`rollout` then integrates
in local coordinates, re-centred at every step (Hairer, Lubich, Wanner, *Geometric Numerical
Integration*, sec. IV.5; a Runge-Kutta-Munthe-Kaas method when the chart is the exponential
map): a step from ``(q0, v0)`` solves, with the user's diffrax solver unchanged, the ODE in
``z = (delta, v)`` (``nv + nv`` numbers, ``delta(t0) = 0``)::

    d(delta)/dt = chart_rate(q0, delta, v)          q = chart(q0, delta)
    dv/dt       = forward_dynamics(q, v, tau(t, q, v))

and maps the result back: ``q1 = chart(q0, delta1)``. The chart of each joint is
``R = R0 exp([delta_w])`` for its rotation (quaternion product with ``exp3``), ``p = p0 +
delta_p`` for the free joint's translation (in the parent frame), ``theta = theta0 + delta_theta``
and ``(x, y) = (x0, y0) + delta_xy`` for a planar joint, ``q0 + delta`` for revolute and prismatic
joints; so ``chart_rate`` is ``J_r(delta_w)^-1 w`` for a rotation (``J_r`` the right Jacobian of
SO(3), exactly invertible for the small ``|delta_w| = O(|w| dt)`` of a step), ``R(q) v_lin`` for
the free joint's translation, ``R(theta) v_xy`` planar, ``v`` otherwise. Why this method:

* the ODE of a step is smooth and Euclidean, so the solver keeps its order, its embedded error
  estimate and its dense output (evaluated in the chart and mapped), whatever the solver;
* every state (and every dense-output value) is a chart image, so quaternions are unit and
  ``(cos, sin)`` pairs on the circle by construction (normalised at each evaluation: to
  round-off, with no drift, over any number of steps), unlike ambient integration of
  ``qdot = q ⊗ (0, w) / 2``, whose quaternion norm drifts by the local error at every step and
  needs a projection that the error estimate does not see;
* the chart ``SO(3) x R^3`` for the free joint, rather than the ``SE(3)`` exponential of
  :func:`kronjax.configuration.integrate`, has the simpler ``dexp^-1`` (the translation is
  Euclidean) and the same order: any smooth chart, re-centred at every step, does.

The error estimate of the step, in ``delta``, is carried to the configuration numbers as
``chart(q0, delta1) - chart(q0, delta1 - err)``, so the step-size controller sees ``y = (q, v)``
as for a 1-DoF model (the FSAL stage of Tsit5 and Dopri5 is recomputed at each step: the chart
changes, one extra evaluation of the forward dynamics per step). Models whose joints are all
1-DoF integrate ``(q, v)`` directly, as above, at no extra cost.
"""

from .._deprecation import module_getattr
from . import _controllers
from ._controllers import computed_torque, feedforward, open_loop, pd
from ._rollout import DEFAULT_ATOL, DEFAULT_RTOL, Rollout, rollout

__all__ = [
    "Rollout",
    "rollout",
    "DEFAULT_RTOL",
    "DEFAULT_ATOL",
    "feedforward",
    "computed_torque",
    "pd",
    "open_loop",
]

# the torque laws' classes were exported beside the functions that build them
__getattr__ = module_getattr(
    "kronjax.simulate",
    {
        name: (lambda name=name: getattr(_controllers, name), f"kronjax.simulate.{builder}(...), which builds it")
        for name, builder in (
            ("FeedForward", "feedforward"),
            ("ComputedTorque", "computed_torque"),
            ("PD", "pd"),
            ("OpenLoop", "open_loop"),
        )
    },
)
