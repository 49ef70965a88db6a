"""Rigid-body models: spatial algebra, joints, `Model`/`Data`, URDF, SDF and MJCF loading, FK,
Jacobians, RNEA, CRBA and ABA (world-frame numba kernels)."""
from . import jitcache  # noqa: F401  (first: how the kernels of every package are specialised)
from .joints import FIXED, FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL
from .model import Frame, Geometry, Model, ModelBuilder, ModelError, check_inertia
from .data import Data
from .kinematics import body_jacobian, forward_kinematics, motion_subspace, point_jacobian
from .dynamics import aba, crba, gravity_torques, nonlinear_effects, rnea
from .urdf import URDFError, load_urdf, robot_path
from .loaded import JointSpring
from .mjcf import MJCFError, MJCFMap, load_mjcf
from .sdf import SDFError, load_sdf

__all__ = [
    "FIXED", "FREE", "PLANAR", "PRISMATIC", "REVOLUTE", "SPHERICAL",
    "Frame", "Geometry", "Model", "ModelBuilder", "ModelError", "check_inertia", "Data",
    "body_jacobian", "forward_kinematics", "motion_subspace", "point_jacobian",
    "aba", "crba", "gravity_torques", "nonlinear_effects", "rnea",
    "URDFError", "load_urdf", "robot_path",
    "JointSpring", "MJCFError", "MJCFMap", "load_mjcf", "SDFError", "load_sdf",
]
