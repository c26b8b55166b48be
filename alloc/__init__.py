"""alloc: decide which deep-learning jobs run where on a shared GPU cluster."""
from .errors import AllocError, InputError, SolverError, SolverUnavailable
from .model import (Allocation, Cell, Cluster, GpuShare, Instance, Job, Placement, Profile,
                    Server, Status, Tenant)
from .solve import allocate, exact_solvers, get_solver, heuristic_solvers, register, solvers
from .check import violations

__version__ = "0.1.0"

__all__ = [
    "AllocError", "InputError", "SolverError", "SolverUnavailable",
    "Allocation", "Cell", "Cluster", "GpuShare", "Instance", "Job", "Placement", "Profile",
    "Server", "Status", "Tenant",
    "allocate", "exact_solvers", "get_solver", "heuristic_solvers", "register", "solvers",
    "violations", "load_instance", "dump_instance", "load_allocation", "dump_allocation",
    "load_model", "__version__",
]


def __getattr__(name):
    if name in ("load_instance", "dump_instance", "load_allocation", "dump_allocation",
                "instance_to_dict", "allocation_to_dict"):
        from . import io
        return getattr(io, name)
    if name == "load_model":
        from .profiles import load_model
        return load_model
    raise AttributeError(name)
