"""alloc: decide which deep-learning jobs run where on a shared GPU cluster.

The public API (imported on first use, so `import alloc` stays light):

* data model: `Cluster`, `Server`, `Job`, `Profile` (with a `Goodput` model
  per `GoodputType`), `Placement`, `GpuShare`, `Allocation`, `Status`, ...;
* `allocate` -- place jobs with a named solver (the one checked path);
* `violations` -- every hard constraint an allocation breaks;
* the solver registry: `solvers`, `get_solver`, `register`, `unregister`;
* the solver kit (what a solve function receives, uses and returns; the page
  "Write a solver"): `Problem`, `Solution`, `Assign`, `job_order`, `Deadline`,
  `Option`, the `solver` decorator, `SolverInfo`, `CAPABILITIES`;
* files: `load_instance`, `dump_allocation`, `load_profile`, ...;
* `Session` -- a scheduler loop's state across rounds;
* errors and warnings: `InputError` (and `UnsupportedInput`), `SolverError`,
  `SolverUnavailable`, `InputWarning`.
"""
import sys
import types

from .errors import (AllocError, InputError, InputWarning, SolverError, SolverUnavailable,
                     UnsupportedInput)
from .model import (Allocation, Cell, Cluster, Diff, Goodput, GoodputType, GpuShare, Instance,
                    Job, Placement, Profile, Server, Status, Tenant)

__version__ = "0.2.0"

_LAZY = {
    "allocate": "solve", "violations": "check", "solvers": "registry", "get_solver": "registry",
    "register": "registry", "exact_solvers": "registry", "heuristic_solvers": "registry",
    "unregister": "registry", "solver": "registry", "SolverInfo": "registry",
    "CAPABILITIES": "registry",
    "Problem": "problem", "Solution": "problem", "Assign": "problem", "job_order": "problem",
    "load_instance": "io", "dump_instance": "io", "load_allocation": "io",
    "dump_allocation": "io", "instance_to_dict": "io", "allocation_to_dict": "io",
    "load_profile": "profiles", "Deadline": "deadline", "Option": "options",
    "Session": "session", "RoundResult": "session",
}

__all__ = [
    "AllocError", "InputError", "InputWarning", "SolverError", "SolverUnavailable",
    "UnsupportedInput",
    "Allocation", "Cell", "Cluster", "Diff", "Goodput", "GoodputType", "GpuShare", "Instance",
    "Job", "Placement", "Profile", "Server", "Status", "Tenant", "__version__", *_LAZY,
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


#: Public names renamed, kept one release as deprecated aliases (old -> new).
_RENAMED = {"load_model": "load_profile"}


def __getattr__(name):
    if name in _RENAMED:
        from .deprecation import warn_renamed
        warn_renamed(__name__, name, _RENAMED[name], stacklevel=2)
        return __getattr__(_RENAMED[name])
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'alloc' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"alloc.{mod}"), name)
