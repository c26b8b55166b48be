"""alloc: decide which deep-learning jobs run where on a shared GPU cluster.

The public API (imported on first use, so ``import alloc`` stays light):

* data model: :class:`Cluster`, :class:`Server`, :class:`Job`, :class:`Profile`,
  :class:`Placement`, :class:`GpuShare`, :class:`Allocation`, :class:`Status`, ...;
* :func:`allocate` -- place jobs with a named solver (the one checked path);
* :func:`violations` -- every hard constraint an allocation breaks;
* :func:`solvers`, :func:`get_solver`, :func:`register` -- the solver registry;
* files: :func:`load_instance`, :func:`dump_allocation`, :func:`load_model`, ...;
* :class:`Session` -- a scheduler loop's state across rounds.
"""
import sys
import types

from .errors import AllocError, InputError, SolverError, SolverUnavailable
from .model import (Allocation, Cell, Cluster, Diff, GpuShare, Instance, Job, Placement,
                    Profile, Server, Status, Tenant)

__version__ = "0.2.0"

_LAZY = {
    "allocate": "solve", "violations": "check", "solvers": "registry", "get_solver": "registry",
    "register": "registry", "exact_solvers": "registry", "heuristic_solvers": "registry",
    "load_instance": "io", "dump_instance": "io", "load_allocation": "io",
    "dump_allocation": "io", "instance_to_dict": "io", "allocation_to_dict": "io",
    "load_model": "profiles", "Deadline": "deadline", "Option": "options",
    "Session": "session", "RoundResult": "session",
}

__all__ = [
    "AllocError", "InputError", "SolverError", "SolverUnavailable",
    "Allocation", "Cell", "Cluster", "Diff", "GpuShare", "Instance", "Job", "Placement",
    "Profile", "Server", "Status", "Tenant", "__version__", *_LAZY,
]


class _Module(types.ModuleType):
    """``alloc.solvers`` stays the registry function: importing the package
    `alloc/solvers/` would otherwise rebind the name to that package."""

    @property
    def solvers(self):
        from .registry import solvers
        return solvers

    @solvers.setter
    def solvers(self, value):  # the import system binding the subpackage: ignored
        pass


sys.modules[__name__].__class__ = _Module


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'alloc' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"alloc.{mod}"), name)
