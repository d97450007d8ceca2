"""Identification of inertial and friction parameters from joint torques.

Inverse dynamics is linear in the *standard inertial parameters* of the bodies (Atkeson, An and
Hollerbach 1986; Khalil and Dombre 2002, ch. 12)::

    tau = Y(q, v, vd) pi,        pi = [pi_1, ..., pi_nb],
    pi_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

per body ``i``, in body-``i`` coordinates, with ``c`` the centre of mass and ``I`` the inertia
tensor *about the body-frame origin* (``I = I_G + m (c^T c E - c c^T)``, Steiner). This is
Pinocchio's order (``Inertia::toDynamicParameters``, ``computeJointTorqueRegressor``). With
``friction=True`` the regressor has ``2 n`` more columns: viscous ``fv_j qd_j`` and Coulomb
``fc_j sign(qd_j)`` per joint coordinate (the model's ``damping`` and ``friction``, which
``inverse_dynamics(..., passive=True)`` overcomes); a :class:`Friction` chooses other kinds (smooth
``tanh`` Coulomb, offset, Stribeck), ``n`` columns each. With ``armature=True`` ``n`` more, the rotor
inertias ``ia_j qdd_j`` (the model's ``armature``): ``tau = Y [pi, fv, fc, ia]``.

What is here:

* :func:`standard_parameters` / :func:`with_standard_parameters`: a model's ``pi`` and back;
  :func:`pseudo_inertia`, the ``4 x 4`` matrix ``J = [[Sigma, h], [h^T, m]]`` with
  ``Sigma = tr(I)/2 E - I``, positive definite exactly when the body is physically realisable
  (Wensing, Kim and Slotine 2017);
* :class:`Friction`: the friction model of the regressor's columns (viscous, Coulomb by ``sign`` or
  ``tanh``, offset, Stribeck), each linear in its coefficients;
* :func:`regressor`: ``Y``, obtained *exactly* as ``jax.jacfwd`` of
  :func:`~kronjax.dynamics.inverse_dynamics` with respect to ``pi`` (inverse dynamics is linear in
  ``pi``), batched with ``jax.vmap``;
* :func:`base_parameters`: the identifiable linear combinations ``beta = K pi`` found numerically
  (Gautier 1991) from the regressor stacked over random states, in the regressor's precision (a
  float32 regressor gives the float64 rank or a clear error, never a rank of rounding errors);
* estimators: :func:`least_squares` (ordinary and weighted), :func:`weighted_least_squares`
  (Gautier and Poignet's weighting by each joint's residual variance), :func:`fit` (either
  estimate as a :class:`LeastSquaresFit`: covariance by Gautier's formula, standard deviations
  and the papers' relative standard deviations in percent, residuals per joint, condition number,
  and a parameter table), and
  :func:`physically_consistent` (Rucker and Wensing 2022's log-Cholesky parameterisation of the
  pseudo-inertia, optimised with optax, with an optional prior towards nominal parameters in the
  log-det divergence of Lee, Wensing and Park 2020; friction and rotor inertias kept non-negative),
  which returns a :class:`ConsistentFit` with its convergence report;
* :func:`to_model`: the model with an estimate's inertials, friction and rotor inertias;
* excitation: :class:`FourierTrajectory` (Swevers et al. 1997), :func:`fit_to_limits`,
  :func:`condition_number` and :func:`optimize_excitation`;
* measured data (host-side NumPy/SciPy, float64): :func:`preprocess` makes a log of time stamps,
  ``q`` and ``tau`` into :class:`MeasuredStates` on a uniform grid by its steps, each a function:
  :func:`repeated_samples` (stale rows), :func:`resample` (irregular time stamps),
  :func:`estimate_delay` and :func:`remove_delay`, :class:`LowPass` (zero-phase Butterworth or
  Savitzky-Golay filtering and filtered derivatives, one filter for ``q`` and ``tau``); for a
  commanded excitation, :func:`whole_periods` (the ramps trimmed) and :func:`spline_derivatives`.

References:

- C. G. Atkeson, C. H. An, J. M. Hollerbach, "Estimation of inertial parameters of manipulator
  loads and links", IJRR 5(3), 1986.
- M. Gautier, W. Khalil, "Direct calculation of minimum set of inertial parameters of serial
  robots", IEEE Trans. Robotics and Automation 6(3), 1990.
- M. Gautier, "Numerical calculation of the base inertial parameters of robots", J. Robotic
  Systems 8(4), 1991.
- M. Gautier, P. Poignet, "Extended Kalman filtering and weighted least squares dynamic
  identification of robot", Control Engineering Practice 9(12), 2001.
- M. Gautier, "Dynamic identification of robots with power model", Proc. IEEE ICRA, 1997.
- R. W. Schafer, "What is a Savitzky-Golay filter?", IEEE Signal Processing Magazine 28(4), 2011.
- J. Swevers, C. Ganseman, D. B. Tukel, J. De Schutter, H. Van Brussel, "Optimal robot excitation
  and identification", IEEE Trans. Robotics and Automation 13(5), 1997.
- G. Wahba, "Spline models for observational data", SIAM, 1990.
- P. M. Wensing, S. Kim, J.-J. E. Slotine, "Linear matrix inequalities for physically consistent
  inertial parameter identification", IEEE RA-L 3(1), 2017.
- T. Lee, P. M. Wensing, F. C. Park, "Geometric robot dynamic identification: a convex
  programming approach", IEEE Trans. Robotics 36(2), 2020.
- C. Rucker, P. M. Wensing, "Smooth parameterization of rigid-body inertia", IEEE RA-L 7(2), 2022.

Modules: ``_parameters`` (standard parameters, pseudo-inertia), ``_friction`` (friction models),
``_regressor``, ``_to_model`` (an estimate back into a model),
``_base_parameters``, ``_least_squares``, ``_physical`` (physically consistent identification),
``_excitation`` (Fourier trajectories and their optimisation), ``_measurements`` (logs into states)
and ``_filtering`` (filters and filtered derivatives).
"""

from __future__ import annotations

from ._base_parameters import BaseParameters, base_parameters, base_parameters_from_regressor
from ._excitation import FourierTrajectory, condition_number, fit_to_limits, optimize_excitation
from ._filtering import LowPass, spline_derivatives
from ._friction import Friction
from ._least_squares import LeastSquaresFit, fit, least_squares, weighted_least_squares
from ._measurements import (
    MeasuredStates,
    estimate_delay,
    preprocess,
    remove_delay,
    repeated_samples,
    resample,
    whole_periods,
)
from ._parameters import BODY_PARAMETERS, parameter_names, pseudo_inertia, standard_parameters, with_standard_parameters
from ._physical import ConsistentFit, physically_consistent
from ._regressor import regressor
from ._to_model import to_model

__all__ = [
    "BODY_PARAMETERS",
    "standard_parameters",
    "with_standard_parameters",
    "parameter_names",
    "pseudo_inertia",
    "Friction",
    "regressor",
    "BaseParameters",
    "base_parameters",
    "base_parameters_from_regressor",
    "least_squares",
    "weighted_least_squares",
    "fit",
    "LeastSquaresFit",
    "physically_consistent",
    "ConsistentFit",
    "to_model",
    "FourierTrajectory",
    "fit_to_limits",
    "condition_number",
    "optimize_excitation",
    "preprocess",
    "MeasuredStates",
    "repeated_samples",
    "resample",
    "estimate_delay",
    "remove_delay",
    "LowPass",
    "whole_periods",
    "spline_derivatives",
]
