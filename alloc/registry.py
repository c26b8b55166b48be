"""The solver registry: every solver, declared in one place per family.

A solver is a plain function::

    solve(problem: Problem, *, deadline: Deadline, seed: int, **options) -> Solution

declared by a :class:`SolverInfo` (its entry point as ``"module:function"``,
whether it is exact, the capabilities it handles, its :class:`~alloc.options.Option`
declarations, the modules it needs).  Each family package under
``alloc/solvers/`` lists its solvers in a ``SOLVERS`` tuple;
:data:`FAMILIES` names the packages.  Nothing is registered by importing a
module as a side effect, and a solver's module is imported only when the solver
is used, so ``import alloc`` and the first ``allocate()`` load only what the
chosen solver needs.  A third party adds a solver with :func:`register`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .options import Option

#: What a solver may declare it handles.
CAPABILITIES = frozenset({
    "sharing",      # milli-GPU jobs sharing a GPU
    "grid",         # chooses CPU/memory points from a profile grid
    "locality",     # locality levels below server (socket, switch) and rack
    "spread",       # multi-GPU jobs spanning several servers
    "tenancy",      # tenants, guaranteed cells, opportunistic jobs
    "preemption",   # may stop running jobs where the tenancy rules allow it
    "elastic",      # picks a GPU count in [min_gpus, max_gpus]
    "migration",    # moves running jobs itself (under the call's move budget)
    "colocation",   # opportunistic jobs on GPUs held by guaranteed jobs
    "order-preemption",  # keeps the core's pinned jobs in place (preempt="order")
})

#: How to install what a solver ``requires`` (one line each).
INSTALL = {
    "ortools": "pip install 'ortools>=9.8' (it needs pandas>=2; beside pandas<2 the solvers "
               "without CP-SAT all run: see `alloc solvers`)",
    "highspy": "pip install 'highspy>=1.11,<1.13'",
    "pulp": "pip install 'pulp>=2.8,<4'",
}

#: Family packages under ``alloc.solvers`` that declare solvers.
FAMILIES = ("heuristics", "exact", "synergy", "fgd", "hived", "drf")


@dataclass(frozen=True)
class SolverInfo:
    """A solver's declaration.

    Parameters
    ----------
    name : str
        The name ``allocate(solver=...)`` takes.
    entry : str
        ``"module:function"`` of the solve function (imported on first use),
        or empty when ``function`` is given.
    family : str
        The family package (``"exact"``, ``"heuristics"``, ...).
    exact : bool
        Proves bounds (may report ``optimal`` / ``infeasible``).
    capabilities : frozenset of str
        Members of :data:`CAPABILITIES` it handles.
    options : tuple of Option
        Its declared options.
    requires : tuple of str
        Importable modules it needs.
    description : str
        One line.
    restricts : str
        Constraints it adds to the problem as given (empty: none).  Its
        ``optimal`` then holds for the instance only when its proof covers it.
    function : callable, optional
        The solve function itself (third-party registration).
    """
    name: str
    entry: str = ""
    family: str = ""
    exact: bool = False
    capabilities: frozenset = frozenset()
    options: tuple[Option, ...] = ()
    requires: tuple[str, ...] = ()
    description: str = ""
    restricts: str = ""
    function: Callable | None = field(default=None, compare=False, repr=False)

    @property
    def solve(self) -> Callable:
        """The solve function (its module is imported now)."""
        if self.function is not None:
            return self.function
        mod, _, fn = self.entry.partition(":")
        return getattr(importlib.import_module(mod), fn)

    @property
    def solves_problem_as_given(self) -> bool:
        """True for an exact solver that adds no constraint."""
        return self.exact and not self.restricts

    def unavailable_reason(self) -> str | None:
        """Why the solver cannot run here (a missing module, and how to
        install it), or None."""
        for mod in self.requires:
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                if isinstance(exc, ModuleNotFoundError) and exc.name == mod:
                    how = INSTALL.get(mod, f"pip install {mod}")
                    return f"needs {mod}, which is not installed: {how}"
                return f"needs {mod} ({type(exc).__name__}: {exc})"
            except Exception as exc:  # pragma: no cover - depends on the machine
                return f"needs {mod} ({type(exc).__name__}: {exc})"
        return None

    @property
    def available(self) -> bool:
        """True when every module the solver needs imports."""
        return self.unavailable_reason() is None

    def to_dict(self) -> dict:
        """The declaration as JSON-ready data (``alloc solvers --json``)."""
        why = self.unavailable_reason()
        return {"name": self.name, "family": self.family,
                "kind": "exact" if self.exact else "heuristic",
                "available": why is None, "unavailable_reason": why,
                "capabilities": sorted(self.capabilities),
                "options": [o.to_dict() for o in self.options],
                "description": self.description, "restricts": self.restricts}


def declare(name: str, entry: str, *, exact: bool = False, capabilities: Sequence[str] = (),
            options: Sequence[Option] = (), requires: Sequence[str] = (),
            description: str = "", restricts: str = "") -> SolverInfo:
    """A :class:`SolverInfo` (checks the capabilities); families use it in
    their ``SOLVERS`` tuples."""
    unknown = set(capabilities) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; valid: {sorted(CAPABILITIES)}")
    family = entry.split(".")[2] if entry.startswith("alloc.solvers.") else ""
    return SolverInfo(name, entry, family, exact, frozenset(capabilities), tuple(options),
                      tuple(requires), description, restricts)


_REGISTRY: dict[str, SolverInfo] = {}
_EXTRA: dict[str, SolverInfo] = {}


def _load() -> dict[str, SolverInfo]:
    if not _REGISTRY:
        for fam in FAMILIES:
            mod = importlib.import_module(f"alloc.solvers.{fam}")
            for info in mod.SOLVERS:
                _REGISTRY[info.name] = info
    return _REGISTRY


def register(name: str, *, exact: bool = False, capabilities: Sequence[str] = (),
             options: Sequence[Option] = (), requires: Sequence[str] = (),
             description: str = "", restricts: str = ""):
    """Decorator adding ``fn`` as solver ``name`` (for third-party solvers).

    The function has the solver signature (see the module notes) and must pass
    the conformance suite (:func:`alloc.conformance.check_solver`).
    """
    def deco(fn):
        info = declare(name, "", exact=exact, capabilities=capabilities, options=options,
                       requires=requires,
                       description=description or (fn.__doc__ or "").strip().split("\n")[0],
                       restricts=restricts)
        from dataclasses import replace
        _EXTRA[name] = replace(info, function=fn, family="third-party")
        return fn
    return deco


def solvers() -> dict[str, SolverInfo]:
    """All registered solvers by name (sorted)."""
    reg = dict(_load())
    reg.update(_EXTRA)
    return dict(sorted(reg.items()))


def get_solver(name: str) -> SolverInfo:
    """The solver called ``name``; ``ValueError`` listing the valid names."""
    reg = solvers()
    if name not in reg:
        raise ValueError(f"unknown solver {name!r}; valid solvers: {', '.join(reg)}")
    return reg[name]


def exact_solvers(available_only: bool = True) -> list[str]:
    """Names of the exact solvers (available ones only by default)."""
    return [n for n, s in solvers().items() if s.exact and (s.available or not available_only)]


def heuristic_solvers(available_only: bool = True) -> list[str]:
    """Names of the heuristics (available ones only by default)."""
    return [n for n, s in solvers().items() if not s.exact and (s.available or not available_only)]


__all__ = ["CAPABILITIES", "FAMILIES", "INSTALL", "SolverInfo", "declare", "exact_solvers",
           "get_solver", "heuristic_solvers", "register", "solvers"]
