"""kronjax: kinematics and dynamics of multibody systems in Khang's Kronecker-product calculus, in JAX.

kronjax never changes JAX's global configuration: enable float64 yourself with
``jax.config.update("jax_enable_x64", True)`` before creating arrays.
"""

from . import batching as batching
from . import calculus as calculus
from . import centroidal as centroidal
from . import chain as chain
from . import configuration as configuration
from . import constrained as constrained
from . import dynamics as dynamics
from . import identify as identify
from . import kinematics as kinematics
from . import models as models
from . import passive as passive
from . import simulate as simulate
from . import trajopt as trajopt
from . import urdf as urdf
from ._finite import check_finite as check_finite
from .batching import chunked_vmap as chunked_vmap
from .calculus import block_skew as block_skew
from .calculus import khang_jacobian as khang_jacobian
from .calculus import kron as kron
from .calculus import skew as skew
from .calculus import symmetrize as symmetrize
from .calculus import unvec as unvec
from .calculus import vec as vec
from .centroidal import center_of_mass as center_of_mass
from .centroidal import center_of_mass_jacobian as center_of_mass_jacobian
from .centroidal import centroidal_momentum as centroidal_momentum
from .centroidal import centroidal_momentum_matrix as centroidal_momentum_matrix
from .centroidal import centroidal_momentum_matrix_dot as centroidal_momentum_matrix_dot
from .chain import Inertial as Inertial
from .chain import Joint as Joint
from .chain import Model as Model
from .chain import from_dh as from_dh
from .chain import from_function as from_function
from .chain import from_joints as from_joints
from .configuration import difference as difference
from .configuration import integrate as integrate
from .configuration import neutral as neutral
from .configuration import normalize as normalize
from .configuration import random_configuration as random_configuration
from .dynamics import Wrench as Wrench
from .dynamics import coriolis_matrix as coriolis_matrix
from .dynamics import coriolis_star as coriolis_star
from .dynamics import forward_dynamics as forward_dynamics
from .dynamics import forward_dynamics_derivatives as forward_dynamics_derivatives
from .dynamics import forward_dynamics_hessian as forward_dynamics_hessian
from .dynamics import forward_dynamics_second_derivatives as forward_dynamics_second_derivatives
from .dynamics import generalized_forces as generalized_forces
from .dynamics import gravity as gravity
from .dynamics import inverse_dynamics as inverse_dynamics
from .dynamics import inverse_dynamics_derivatives as inverse_dynamics_derivatives
from .dynamics import inverse_dynamics_hessian as inverse_dynamics_hessian
from .dynamics import inverse_dynamics_second_derivatives as inverse_dynamics_second_derivatives
from .dynamics import kinetic_energy as kinetic_energy
from .dynamics import mass_matrix as mass_matrix
from .dynamics import mass_matrix_derivative as mass_matrix_derivative
from .dynamics import potential_energy as potential_energy
from .kinematics import angular_acceleration as angular_acceleration
from .kinematics import angular_velocity as angular_velocity
from .kinematics import compose as compose
from .kinematics import forward_kinematics as forward_kinematics
from .kinematics import hessians as hessians
from .kinematics import jacobians as jacobians
from .kinematics import jacobians_dot as jacobians_dot
from .kinematics import joint_jacobians as joint_jacobians
from .kinematics import linear_acceleration as linear_acceleration
from .kinematics import linear_velocity as linear_velocity
from .kinematics import point_motion as point_motion
from .kinematics import relative_motion as relative_motion
from .kinematics import rotational_hessian as rotational_hessian
from .kinematics import rotational_jacobian as rotational_jacobian
from .kinematics import translational_hessian as translational_hessian
from .kinematics import translational_jacobian as translational_jacobian
from .mjcf import load_mjcf as load_mjcf
from .passive import passive_forces as passive_forces
from .urdf import load_urdf as load_urdf
from .urdf import to_urdf as to_urdf

__version__ = "0.1.0"
