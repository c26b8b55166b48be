"""The solver registry: the built-in families, installed plug-ins and solvers
registered at run time, behind one lookup.

A solver is a plain function

```python
solve(problem: Problem, *, deadline: Deadline, seed: int, **options) -> Solution
```

described by a [SolverInfo][alloc.registry.SolverInfo]: whether it is exact,
the capabilities it handles, its declared options, the modules it needs.  The
contract a solve function keeps is the page "Write a solver"
(`docs/write-a-solver.md`).

Where solvers come from:

1. **Built-in families.**  Each package under `alloc/solvers/` lists its
   solvers in a `SOLVERS` tuple built with `declare`; `FAMILIES` names the
   packages.  A solver's module is imported only when the solver is used, so
   `import alloc` stays light.
2. **Plug-ins.**  An installed package declares an entry point in the group
   `alloc.solvers` whose name is the solver's name and whose value is
   `"module:function"`; the function carries its declaration (the `solver`
   decorator).  Every process that has the package installed sees it:
   `allocate()`, `Session`, `alloc solve`, `alloc bench`, `alloc sweep` (its
   worker processes and Ray tasks), `alloc serve`, the simulators.
3. **Run-time registration.**  `register(name, target)` adds a function or a
   `"module:function"` text in this process; `alloc sweep` hands such
   registrations to its worker processes (a function they can import: one
   defined in a module, not in the script being run).
4. **Command lines and config files** may name a function directly as
   `"module:function"` (`use`); it is registered under that text.
   `get_solver` itself accepts names only, so that a network request naming a
   solver can never make the process import a module.

A name is taken once: `register` refuses a name that exists (built-in,
plug-in or registered) unless `replace=True`.  A plug-in that names a built-in
solver is ignored with a warning; a name two installed packages declare is
unavailable, with the reason, until one is removed.  A plug-in that fails to
load is listed as unavailable with the error, never breaks the listing.
"""
from __future__ import annotations

import importlib
import sys
import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from .objectives import OBJECTIVES
from .options import Option

#: What a solver may declare it handles, with what each means (the guide
#: "Write a solver" says which inputs require which).
CAPABILITY_MEANING: Mapping[str, str] = {
    "sharing": "milli-GPU jobs (gpus == 1, gpu_milli < 1000) sharing one GPU",
    "grid": "gives a job any point of its profile's CPU x memory grid instead of its "
            "request (re-sizes CPU and memory)",
    "locality": "locality levels other than server: socket, switch and any level above the "
                "servers (rack, an operator's block or zone, ...)",
    "preferred": "preferred placement (Job.preferred): after the objective, the fewest levels "
                 "climbed above the preferred level",
    "spread": "multi-GPU jobs without a locality spanning several servers",
    "tenancy": "tenants, guaranteed cells, opportunistic jobs (HiveD's rules)",
    "preemption": "stops running jobs where the tenancy rules allow it (returns them "
                  "unplaced and lists them in Solution.preempted)",
    "elastic": "picks a job's GPU count in [min_gpus, max_gpus]",
    "even-spread": "jobs of gpus_per_server: exactly that many GPUs on each of "
                   "gpus / gpus_per_server servers",
    "migration": "moves running jobs itself, within the call's move budget",
    "colocation": "opportunistic jobs on GPUs held by guaranteed jobs",
    "gpu-memory": "never over-commits a GPU's memory (jobs' and servers' gpu_mem)",
    "gpu-compute": "compute shares (gpu_compute), opportunistic shares (milli 0) and caps",
    "order-preemption": "keeps the running jobs the core pinned in place (preempt=\"order\": "
                        "the core stops the victims by the caller's order before the solver runs)",
    "goodput": "jobs with a goodput profile: picks each one's GPU count, servers, GPU type and "
               "per-GPU batch by goodput (throughput x statistical efficiency), a restart "
               "factor on running ones it moves",
    "guarantee": "serves tenants' guarantees itself with HiveD's rules (else the core places "
                 "the waiting guaranteed jobs first and pins them: alloc.guarantee)",
}
#: The capability names.
CAPABILITIES = frozenset(CAPABILITY_MEANING)

#: The objective names; a solver declared without `objectives` honours all
#: of them.
ALL_OBJECTIVES = frozenset(OBJECTIVES)

#: How to install what a solver ``requires`` (one line each).
INSTALL = {
    "ortools": "pip install 'ortools>=9.7' (beside pandas<2 pip picks 9.7, the last release "
               "that does not need pandas>=2)",
    "highspy": "pip install 'highspy>=1.11,<1.13'",
    "pulp": "pip install 'pulp>=2.8,<4'",
}

#: Family packages under `alloc.solvers` that declare solvers.
FAMILIES = ("heuristics", "exact", "synergy", "fgd", "hived", "drf", "antman", "gandiva",
            "tiresias", "tas", "goodput")

#: The entry-point group plug-ins declare their solvers in.
ENTRY_POINT_GROUP = "alloc.solvers"

#: The family of every solver that is not built in (plug-ins and solvers
#: registered at run time; the exact family's warm start leaves them out).
PLUGIN = "third-party"


@dataclass(frozen=True)
class SolverInfo:
    """A solver's declaration.

    Parameters
    ----------
    name : str
        The name `allocate(solver=...)` takes.
    entry : str
        `"module:function"` of the solve function (imported on first use);
        empty for a function that other processes cannot import.
    family : str
        The family package (`"exact"`, `"heuristics"`, ...), or
        `"third-party"` for a plug-in or a solver registered at run time.
    exact : bool
        Proves bounds (may report `optimal` / `infeasible`).
    capabilities : frozenset of str
        Members of `CAPABILITIES` it handles.
    options : tuple of Option
        Its declared options.
    requires : tuple of str
        Importable modules it needs.
    description : str
        One line.
    restricts : str
        Constraints it adds to the problem as given (empty: none).  Its
        `optimal` then holds for the instance only when its proof covers it.
    function : callable, optional
        The solve function itself (a function registered at run time).
    origin : str
        Where the solver comes from (empty for a built-in one).
    broken : str
        Why the solver cannot run anywhere (a plug-in that failed to load);
        empty when it can.
    objectives : frozenset of str
        The objectives (`alloc.objectives.OBJECTIVES`) its answer maximises.
        A solver that places by its own rule (size, fragmentation, fairness)
        honours none: `allocate` warns when a caller asks it for an objective.
    ignores_unfit : bool
        Its answer, on a call that neither moves nor stops running jobs, is
        the same with or without a waiting job that fits nowhere in what the
        running jobs leave (it tries each job on its own, in order): a
        session holds such jobs out of its rounds (`alloc.session.room`).
        A solver whose rule reads the whole queue (``fgd``'s target
        workload) finds the held-out jobs, by shape, in the round's carry
        (`alloc.carry.Carry.held_out`).
    admission : str
        ``"gpus"``: it first admits the pending jobs by Synergy's GPU-only
        rule (`alloc.room.admit`, in rank order), never places a job it did
        not admit, and skips an admitted job that cannot fit the room the
        running jobs leave (`alloc.room.Free.cannot_fit`) without other
        effect: on a call that neither moves nor stops running jobs its
        answer is the one on the admitted jobs that may fit, and a session
        holds every other waiting job out of its rounds.  Empty: no such
        rule.

    Examples
    --------
    >>> from alloc import get_solver
    >>> info = get_solver("best-fit")
    >>> info.name, info.family, info.exact, "sharing" in info.capabilities
    ('best-fit', 'heuristics', False, True)
    >>> sorted(info.objectives), sorted(get_solver("cpsat").objectives)
    ([], ['gpus', 'jobs', 'throughput'])
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
    origin: str = ""
    broken: str = ""
    objectives: frozenset = ALL_OBJECTIVES
    ignores_unfit: bool = False
    admission: str = ""

    @property
    def solve(self) -> Callable:
        """The solve function (its module is imported now)."""
        if self.function is not None:
            return self.function
        return load_function(self.entry)

    @property
    def solves_problem_as_given(self) -> bool:
        """True for an exact solver that adds no constraint."""
        return self.exact and not self.restricts

    def honours(self, objective: str) -> bool:
        """True when the solver's answer maximises `objective`."""
        return objective in self.objectives

    @property
    def resizes(self) -> bool:
        """True when the solver may give a job CPU and memory other than its
        request (the `grid` capability)."""
        return "grid" in self.capabilities

    def unavailable_reason(self) -> str | None:
        """Why the solver cannot run here (a plug-in that does not load, a
        missing module and how to install it), or None."""
        if self.broken:
            return self.broken
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
        """True when the solver can run here."""
        return self.unavailable_reason() is None

    def to_dict(self) -> dict:
        """The declaration as JSON-ready data (`alloc solvers --json`)."""
        why = self.unavailable_reason()
        return {"name": self.name, "family": self.family,
                "kind": "exact" if self.exact else "heuristic",
                "available": why is None, "unavailable_reason": why,
                "capabilities": sorted(self.capabilities),
                "objectives": sorted(self.objectives),
                "options": [o.to_dict() for o in self.options],
                "description": self.description, "restricts": self.restricts,
                "entry": self.entry, "origin": self.origin}


def declare(name: str, entry: str, *, exact: bool = False, capabilities: Sequence[str] = (),
            options: Sequence[Option] = (), requires: Sequence[str] = (),
            description: str = "", restricts: str = "",
            objectives: Sequence[str] | None = None,
            ignores_unfit: bool = False, admission: str = "") -> SolverInfo:
    """A `SolverInfo`, its capabilities and objectives checked; the families
    use it in their `SOLVERS` tuples.

    `objectives` None (the default) declares every objective honoured;
    `()` declares that the solver places by a rule of its own.

    Raises
    ------
    ValueError
        An unknown capability or objective, an unknown admission rule, or
        options that are not `Option` values.
    """
    if isinstance(capabilities, str):
        raise ValueError(f"capabilities: expected a list of names, got {capabilities!r}")
    unknown = set(capabilities) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; valid: {sorted(CAPABILITIES)}")
    if not all(isinstance(o, Option) for o in options):
        raise ValueError("options: expected alloc.Option declarations")
    if admission not in ("", "gpus"):
        raise ValueError(f"admission: expected '' or 'gpus', got {admission!r}")
    family = entry.split(".")[2] if entry.startswith("alloc.solvers.") else ""
    return SolverInfo(name, entry, family, bool(exact), frozenset(capabilities), tuple(options),
                      tuple(requires), description, restricts,
                      objectives=_objectives(objectives), ignores_unfit=bool(ignores_unfit),
                      admission=admission)


def _objectives(objectives: Sequence[str] | None) -> frozenset:
    """The declared objectives, checked (None: all of them)."""
    if objectives is None:
        return ALL_OBJECTIVES
    if isinstance(objectives, str):
        raise ValueError(f"objectives: expected a list of names, got {objectives!r}")
    unknown = set(objectives) - ALL_OBJECTIVES
    if unknown:
        raise ValueError(f"unknown objectives {sorted(unknown)}; valid: {sorted(ALL_OBJECTIVES)}")
    return frozenset(objectives)


def objective_warning(info: SolverInfo, objective: str) -> str | None:
    """The one-line warning for a call that asks solver `info` for an
    `objective` it does not honour (naming the solvers that do), or None."""
    if info.honours(objective):
        return None
    able = [n for n, s in solvers().items() if s.honours(objective)]
    return (f"solver {info.name!r} ignores the objective {objective!r} (it places by its own "
            f"rule); solvers that honour it: {', '.join(able) or 'none'}")


# ------------------------------------------------------------ declarations
#: The attribute the `solver` decorator sets on a solve function.
DECLARATION = "__alloc_solver__"


def solver(*, exact: bool = False, capabilities: Sequence[str] = (),
           options: Sequence[Option] = (), requires: Sequence[str] = (),
           description: str = "", restricts: str = "",
           objectives: Sequence[str] | None = None):
    """Decorator declaring what a solve function is, without registering it.

    The function keeps working as before; the declaration travels with it, so
    that a plug-in's entry point, `register(name, function)` and a
    `"module:function"` text on the command line all read the same facts.
    A function without a declaration is a heuristic with no capabilities.

    Parameters
    ----------
    exact : bool
        The solver proves bounds (see the guide: what an exact solver proves).
    capabilities : sequence of str
        Members of `CAPABILITIES` it handles.
    options : sequence of Option
        Its options (`allocate(..., **options)`, `--option KEY=VALUE`).
    requires : sequence of str
        Modules it needs; without them it is listed as unavailable.
    description : str
        One line (default: the first line of the docstring).
    restricts : str
        Constraints it adds to the problem as given (empty: none).
    objectives : sequence of str, optional
        The objectives its answer maximises.  None (the default): all of them
        (a solve function receives `problem.objective` and is expected to
        maximise it); `()` for a solver that places by a rule of its own, so
        that callers asking it for an objective are warned.

    Examples
    --------
    >>> from alloc import Solution, solver
    >>> @solver(capabilities=["sharing"], description="places nothing")
    ... def solve(problem, *, deadline, seed, **options):
    ...     return Solution()
    >>> sorted(solve.__alloc_solver__.capabilities)
    ['sharing']
    """
    decl = declare("", "", exact=exact, capabilities=capabilities, options=options,
                   requires=requires, description=description, restricts=restricts,
                   objectives=objectives)

    def deco(fn):
        setattr(fn, DECLARATION, decl)
        return fn
    return deco


def load_function(spec: str) -> Callable:
    """The function a `"module:function"` text names (imported now).

    Raises
    ------
    ValueError
        One line: the text is malformed, the module does not import, the
        attribute is missing or not callable.
    """
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"solver {spec!r}: expected 'module:function'")
    mod, _, attr = spec.partition(":")
    if not mod or not attr:
        raise ValueError(f"solver {spec!r}: expected 'module:function'")
    try:
        obj = importlib.import_module(mod)
    except Exception as exc:
        raise ValueError(f"solver {spec!r}: cannot import {mod} ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"solver {spec!r}: {mod} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"solver {spec!r}: {attr} is not a function")
    return obj


def spec_of(fn: Callable) -> str | None:
    """`"module:function"` of a function another process can import (defined
    at the top level of a module other than the script being run), else None."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or mod in ("__main__", "__mp_main__") or "<" in qual or not qual:
        return None
    spec = f"{mod}:{qual}"
    try:
        return spec if load_function(spec) is fn else None
    except ValueError:
        return None


def _info_for(name: str, fn: Callable, origin: str, spec: str | None = None,
              meta: Mapping | None = None) -> SolverInfo:
    """The `SolverInfo` of solve function `fn` registered as `name`."""
    decl = getattr(fn, DECLARATION, None)
    if decl is not None and meta:
        raise ValueError(f"solver {name!r}: {getattr(fn, '__qualname__', fn)} is already "
                         f"declared with alloc.solver; give no declaration to register")
    if decl is None:
        decl = declare("", "", **(meta or {}))
    doc = (getattr(fn, "__doc__", None) or "").strip().split("\n")[0]
    return replace(decl, name=name, entry=spec if spec is not None else (spec_of(fn) or ""),
                   family=PLUGIN, function=fn, origin=origin,
                   description=decl.description or doc)


# ------------------------------------------------------------ the registry
_BUILTIN: dict[str, SolverInfo] = {}
_EXTRA: dict[str, SolverInfo] = {}
_EP: dict = {"path": None, "points": {}}
_LOADED: dict[tuple, SolverInfo] = {}
_WARNED: set[str] = set()


def _builtin() -> dict[str, SolverInfo]:
    if not _BUILTIN:
        for fam in FAMILIES:
            mod = importlib.import_module(f"alloc.solvers.{fam}")
            for info in mod.SOLVERS:
                _BUILTIN[info.name] = info
    return _BUILTIN


def _entry_points() -> dict[str, list]:
    """Installed entry points of the group by name (rescanned when `sys.path`
    changes)."""
    key = tuple(sys.path)
    if _EP["path"] != key:
        from importlib.metadata import entry_points
        points: dict[str, list] = {}
        seen = set()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(getattr(ep, "dist", None), "name", "") or ""
            if (ep.name, ep.value, dist) not in seen:
                seen.add((ep.name, ep.value, dist))
                points.setdefault(ep.name, []).append(ep)
        _EP["path"], _EP["points"] = key, points
    return _EP["points"]


def _plugin_names() -> list[str]:
    return [n for n in _entry_points() if n not in _builtin()]


def _warn_shadowed() -> None:
    for name, eps in _entry_points().items():
        if name in _builtin() and name not in _WARNED:
            _WARNED.add(name)
            dists = ", ".join(_dist(ep) for ep in eps)
            warnings.warn(f"plug-in solver {name!r} of {dists} ignored: {name!r} is a built-in "
                          f"solver", RuntimeWarning, stacklevel=3)


def _dist(ep) -> str:
    d = getattr(ep, "dist", None)
    return f"package {d.name}" if d is not None else f"entry point {ep.value}"


def _plugin(name: str) -> SolverInfo | None:
    """The plug-in solver `name` (loaded on first use), or None."""
    eps = _entry_points().get(name)
    if not eps or name in _builtin():
        return None
    key = (name, tuple((ep.value, _dist(ep)) for ep in eps))
    info = _LOADED.get(key)
    if info is None:
        origin = f"entry point {ENTRY_POINT_GROUP} of {', '.join(_dist(ep) for ep in eps)}"
        if len(eps) > 1:
            info = SolverInfo(name, family=PLUGIN, origin=origin,
                              broken=f"several installed packages declare solver {name!r} "
                                     f"({', '.join(_dist(ep) for ep in eps)}); remove all but one")
        else:
            info = _load_plugin(name, eps[0], origin)
        _LOADED[key] = info
    return info


def _load_plugin(name: str, ep, origin: str) -> SolverInfo:
    try:
        fn = load_function(ep.value)
        return _info_for(name, fn, origin, spec=ep.value)
    except ValueError as exc:
        return SolverInfo(name, ep.value, PLUGIN, origin=origin,
                          broken=f"plug-in does not load: {exc}")


def _taken(name: str) -> bool:
    return name in _EXTRA or name in _builtin() or name in _entry_points()


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.strip() or ":" in name or len(name) > 256:
        raise ValueError(f"solver name: expected a non-empty name without ':' (a "
                         f"'module:function' text is not a name), got {name!r}")


def register(name: str, target: Callable | str | None = None, *, replace: bool = False,
             exact: bool | None = None, capabilities: Sequence[str] | None = None,
             options: Sequence[Option] | None = None, requires: Sequence[str] | None = None,
             description: str | None = None, restricts: str | None = None,
             objectives: Sequence[str] | None = None):
    """Add a solver under `name` in this process.

    Parameters
    ----------
    name : str
        The solver's name (no `:`).
    target : callable or str, optional
        The solve function, or `"module:function"` naming it.  Without it,
        `register` is a decorator: `@register("mine", capabilities=[...])`.
    replace : bool
        Allow replacing a solver of that name (built-in, plug-in or
        registered); without it an existing name is an error.
    exact, capabilities, options, requires, description, restricts, objectives
        The declaration of a function that carries none (see `solver`);
        giving them for a declared function is an error.

    Returns
    -------
    SolverInfo or callable
        The registered declaration; the decorator form returns the function.

    Raises
    ------
    ValueError
        The name exists (and `replace` is false), a bad name, a
        `"module:function"` that does not load, a declaration given twice.

    Examples
    --------
    >>> import alloc
    >>> info = alloc.register("example-greedy", "alloc.solvers.heuristics.greedy:solve_best_fit",
    ...                       capabilities=["sharing", "locality", "spread"])
    >>> info.name, info.family
    ('example-greedy', 'third-party')
    >>> alloc.unregister("example-greedy")
    """
    meta = {k: v for k, v in dict(exact=exact, capabilities=capabilities, options=options,
                                  requires=requires, description=description,
                                  restricts=restricts, objectives=objectives).items()
            if v is not None}
    _check_name(name)
    if _taken(name) and not replace:
        raise ValueError(f"solver {name!r} already exists; pass replace=True to replace it")
    if target is None:
        def deco(fn):
            register(name, fn, replace=True, **meta)
            return fn
        return deco
    if isinstance(target, str):
        info = _info_for(name, load_function(target), f"registered as {target}", target, meta)
    elif callable(target):
        info = _info_for(name, target, "registered in this process", meta=meta)
    else:
        raise ValueError(f"solver {name!r}: expected a function or 'module:function', "
                         f"got {target!r:.60}")
    _EXTRA[name] = info
    return info


def unregister(name: str) -> None:
    """Remove a solver registered with `register` (built-in solvers and
    plug-ins stay; `ValueError` for them).

    Examples
    --------
    >>> import alloc
    >>> _ = alloc.register("demo", "alloc.solvers.heuristics.greedy:solve_best_fit")
    >>> alloc.unregister("demo")
    >>> "demo" in alloc.solvers()
    False
    """
    if name not in _EXTRA:
        raise ValueError(f"solver {name!r} was not registered in this process")
    del _EXTRA[name]


def use(text: str) -> SolverInfo:
    """The solver a command line or a config file names: a name, or
    `"module:function"` (registered under that text on first use).

    Raises
    ------
    ValueError
        An unknown name (the valid ones listed), or a `"module:function"`
        that does not load.
    """
    if isinstance(text, str) and ":" in text and not _taken(text):
        _EXTRA[text] = _info_for(text, load_function(text), f"named as {text}", text)
    return get_solver(text)


def registrations() -> tuple[SolverInfo, ...]:
    """The solvers registered in this process, as other processes can take
    them (`restore`): by `"module:function"`, or, for a function they cannot
    import, a declaration saying so."""
    out = []
    for name, info in _EXTRA.items():
        if info.entry:
            out.append(replace(info, function=None))
        else:
            fn = getattr(info.function, "__qualname__", "a function")
            out.append(replace(info, function=None, broken=(
                f"solver {name!r} is {fn}, defined where other processes cannot import it; "
                f"define it in a module and register it as 'module:function', or install it "
                f"as a plug-in (entry point {ENTRY_POINT_GROUP})")))
    return tuple(out)


def restore(infos: Sequence[SolverInfo]) -> None:
    """Register `registrations()` of another process here (worker processes),
    replacing what this process had under those names."""
    for info in infos:
        _EXTRA[info.name] = info


def solvers() -> dict[str, SolverInfo]:
    """Every solver by name, sorted: built-in, plug-ins and registered ones
    (plug-ins are loaded now).

    Examples
    --------
    >>> from alloc import solvers
    >>> reg = solvers()
    >>> reg["best-fit"].exact, reg["cpsat"].exact, "sharing" in reg["fgd"].capabilities
    (False, True, True)
    """
    _warn_shadowed()
    reg = dict(_builtin())
    for name in _plugin_names():
        info = _plugin(name)
        if info is not None:          # always, for a name no built-in takes
            reg[name] = info
    reg.update(_EXTRA)
    return dict(sorted(reg.items()))


def get_solver(name: str) -> SolverInfo:
    """The solver called `name`; `ValueError` listing the valid names.

    Examples
    --------
    >>> from alloc import get_solver
    >>> get_solver("cpsat").family
    'exact'
    >>> get_solver("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown solver 'nope'; valid solvers: ...
    """
    if isinstance(name, str):
        info = _EXTRA.get(name) or _builtin().get(name) or _plugin(name)
        if info is not None:
            return info
    names = sorted({*_builtin(), *_EXTRA, *_plugin_names()})
    raise ValueError(f"unknown solver {name!r}; valid solvers: {', '.join(names)} (a plug-in "
                     f"is a package declaring entry point group {ENTRY_POINT_GROUP!r}; the "
                     f"command line also takes 'module:function')")


def exact_solvers(available_only: bool = True) -> list[str]:
    """Names of the exact solvers (available ones only by default).

    Examples
    --------
    >>> from alloc import exact_solvers
    >>> {"cpsat", "milp"} <= set(exact_solvers())
    True
    """
    return [n for n, s in solvers().items() if s.exact and (s.available or not available_only)]


def heuristic_solvers(available_only: bool = True) -> list[str]:
    """Names of the heuristics (available ones only by default).

    Examples
    --------
    >>> from alloc import heuristic_solvers
    >>> "best-fit" in heuristic_solvers() and "cpsat" not in heuristic_solvers()
    True
    """
    return [n for n, s in solvers().items() if not s.exact and (s.available or not available_only)]


__all__ = ["CAPABILITIES", "CAPABILITY_MEANING", "ENTRY_POINT_GROUP", "FAMILIES", "INSTALL", "PLUGIN",
           "SolverInfo", "declare", "exact_solvers", "get_solver", "heuristic_solvers",
           "load_function", "register", "registrations", "restore", "solver", "solvers",
           "spec_of", "unregister", "use"]
