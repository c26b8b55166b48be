r"""alloc's one integer-programming layer.

Every exact model in alloc -- the configuration (pattern) model of the exact
family, Synergy OPT, the tenancy model, the openb bound, the share policies --
is written once as a [`LinearModel`][alloc.kernel.model.LinearModel] and solved by
[`solve`][alloc.kernel.solve] with one
of the engines in `ENGINES`:

``"highs"``
    HiGHS through ``highspy``: LPs (with row duals) and MIPs.
``"cpsat"``
    OR-Tools CP-SAT: pure integer models; deterministic for a seed.
``"cbc"``
    CBC through PuLP.

Every engine is given the time left on the caller's
[`Deadline`][alloc.deadline.Deadline] and reports a [`Result`][alloc.kernel.result.Result] with a
[`Status`][alloc.model.Status] (``OPTIMAL`` only when proven) and, where it has
one, a proven bound.

Examples
--------
>>> from alloc.kernel import LinearModel, solve
>>> m = LinearModel("knapsack")
>>> x = [m.add_var(0, 1, integer=True, obj=v) for v in (5, 4, 3)]
>>> _ = m.add_row({x[0]: 4, x[1]: 3, x[2]: 2}, hi=5)
>>> r = solve(m, "highs", time_limit=5)
>>> r.status.value, round(r.objective, 6)
('optimal', 7.0)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..deadline import Deadline
from ..model import Status
from .model import INF, LinearModel
from .result import Result

if TYPE_CHECKING:
    from .highs import HighsSession


def _highs(model: LinearModel, time_limit: float, **kw: Any) -> Result:
    from .highs import solve_highs
    return solve_highs(model, time_limit, **kw)


def _cpsat(model: LinearModel, time_limit: float, **kw: Any) -> Result:
    from .cpsat import solve_cpsat
    return solve_cpsat(model, time_limit, **kw)


def _cbc(model: LinearModel, time_limit: float, **kw: Any) -> Result:
    from .cbc import solve_cbc
    return solve_cbc(model, time_limit, **kw)


#: Engines by name: ``fn(model, time_limit, *, seed, relax, **params) -> Result``.
ENGINES: dict[str, Callable[..., Result]] = {"highs": _highs, "cpsat": _cpsat, "cbc": _cbc}

#: Seconds below which an engine is not started at all.
MIN_TIME = 1e-3


def solve(model: LinearModel, engine: str = "highs", *, deadline: Deadline | None = None,
          time_limit: float | None = None, seed: int = 0, relax: bool = False,
          **params: Any) -> Result:
    """Solve ``model`` with ``engine`` before ``deadline`` (or within ``time_limit``).

    Parameters
    ----------
    model : LinearModel
        The model; it is not modified.
    engine : {"highs", "cpsat", "cbc"}
        Which engine solves it.
    deadline : Deadline, optional
        The engine gets the time left on it.
    time_limit : float, optional
        Seconds, when no deadline is given (also caps the deadline's share).
    seed : int
        Random seed of the engine (same seed, same answer on one worker).
    relax : bool
        Solve the LP relaxation (integrality dropped; HiGHS and CBC).
    **params
        Engine parameters passed through (e.g. ``linearization_level=2`` for
        CP-SAT, ``workers=2``).

    Returns
    -------
    Result
        ``UNKNOWN`` without running the engine when no time is left.

    Raises
    ------
    ValueError
        Unknown engine name (the message lists the valid ones).
    """
    fn = ENGINES.get(engine)
    if fn is None:
        raise ValueError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINES)}")
    left = deadline.left() if deadline is not None else INF
    if time_limit is not None:
        left = min(left, float(time_limit))
    if left == INF:
        left = 1e9
    if left < MIN_TIME:
        return Result(Status.UNKNOWN, stats={"engine": engine, "skipped": "no time left"})
    if model.n == 0:
        return Result(Status.OPTIMAL, x=__import__("numpy").zeros(0), objective=model.obj_const,
                      bound=model.obj_const, stats={"engine": engine})
    return fn(model, left, seed=seed, relax=relax, **params)


#: The modules each engine imports on its first solve: every engine's models
#: are built as scipy sparse matrices (`LinearModel.add_rows`, `csr`), so
#: scipy's sparse module is one of each.
MODULES = {"highs": ("scipy.sparse", "highspy"),
           "cpsat": ("scipy.sparse", "ortools.sat.python.cp_model"),
           "cbc": ("scipy.sparse", "pulp")}


def _modules(engine: str) -> tuple[str, ...]:
    """``MODULES[engine]``; an unknown engine is a one-line error."""
    mods = MODULES.get(engine)
    if mods is None:
        raise ValueError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINES)}")
    return mods


def preload(engines: Iterable[str] = ("highs", "cpsat")) -> float:
    """Import the engines' modules now; the seconds it took (0 once imported).

    An engine's first solve in a process imports it, inside the caller's
    time limit (the limit is wall time from the call): OR-Tools takes 0.3 s
    on a quiet two-core machine, up to 1.5 s on a loaded one.  A
    long-running process (a service, a scheduler loop) calls this once at
    start; the exact family's configuration model calls it after its warm
    start, so that the phases after it share what is left.  An engine that
    is not installed is skipped (its solvers report it when called).

    Examples
    --------
    >>> from alloc.kernel import preload
    >>> preload(["highs"]) >= 0.0
    True
    """
    import importlib
    import sys
    import time
    t0 = time.perf_counter()
    for engine in engines:
        for mod in _modules(engine):
            if mod not in sys.modules:
                try:
                    importlib.import_module(mod)
                except ImportError:
                    pass
    return time.perf_counter() - t0


#: Seconds a first import of each module takes, as a call budgets it.
#: OR-Tools' CP-SAT took 0.33 s on a two-core machine at load average 3,
#: 0.6-1.5 s at 5 to 7; scipy's sparse module 0.23-0.8 s (after numpy and
#: highspy, two cores, quiet to load 1): the model's first LP, built
#: unannounced inside the big-machine bound's share of the time, overran a
#: 1 s limit by 0.4 s on 2,048 jobs.
MODULE_SECONDS = {"scipy.sparse": 0.25, "highspy": 0.1, "ortools.sat.python.cp_model": 0.5,
                  "pulp": 0.3}

#: Seconds left below which a call does not import an engine itself (the
#: exact family then solves with HiGHS, or without a model when HiGHS is not
#: imported either, and imports it in the background): every module of the
#: engine (`MODULE_SECONDS`).  With 0.75 s left a first call at load 3
#: imports OR-Tools and still proves small instances; under heavy load the
#: import can run past the limit (within the law when the call's slack
#: covers it).
IMPORT_SECONDS = {e: sum(MODULE_SECONDS[m] for m in mods) for e, mods in MODULES.items()}


def import_seconds(*engines: str) -> float:
    """Seconds the imports of ``engines`` still take (`MODULE_SECONDS`, each
    module counted once): the modules not imported yet, and every module of
    an engine whose background import is under way (`importing`: its modules
    may sit half-imported in ``sys.modules``; an import of them waits for
    that one, which then runs at full speed).  0 once all are ready.

    Examples
    --------
    >>> _ = preload(("highs",))
    >>> import_seconds("highs")
    0.0
    """
    import sys
    need = {m for e in engines for m in _modules(e)
            if importing(e) or m not in sys.modules}
    return float(sum(MODULE_SECONDS[m] for m in need))


_background: dict[str, Any] = {}


def imported(engine: str) -> bool:
    """True when ``engine``'s modules are imported in this process."""
    import sys
    return all(m in sys.modules for m in MODULES[engine])


def importing(engine: str) -> bool:
    """True while a background import of ``engine`` (`preload_in_background`)
    has not finished: a call that imported it itself would wait for it."""
    t = _background.get(engine)
    return t is not None and t.is_alive()


def preload_in_background(engine: str, delay: float = 0.0) -> None:
    """Start importing ``engine`` in a daemon thread (once per process), for
    a call that cannot afford the import inside its own limit; a later
    `preload` of it waits for that import to finish.  ``delay``: seconds the
    thread waits first -- until the call that starts it has answered, so
    that the import does not take the interpreter from that call's last
    phases (on two cores it slowed a 0.15 s final check to 0.25-0.37 s)."""
    import threading
    if imported(engine) or engine in _background:
        return

    def run() -> None:
        if delay > 0:
            import time
            time.sleep(delay)
        preload((engine,))
    t = threading.Thread(target=run, daemon=True, name=f"alloc-import-{engine}")
    _background[engine] = t
    t.start()


def session(model: LinearModel, engine: str = "highs", **params: Any) -> HighsSession:
    """An LP held by the engine for repeated solves as columns are added
    (column generation); see `alloc.kernel.highs.HighsSession`.

    Only ``"highs"`` keeps a model between solves.
    """
    if engine != "highs":
        raise ValueError(f"engine {engine!r} keeps no model between solves; use 'highs'")
    from .highs import HighsSession
    return HighsSession(model, **params)


def solve_lp(model: LinearModel, *, deadline: Deadline | None = None,
             time_limit: float | None = None) -> Result:
    """The LP relaxation of ``model`` with HiGHS (row duals included)."""
    return solve(model, "highs", deadline=deadline, time_limit=time_limit, relax=True)


__all__ = ["ENGINES", "IMPORT_SECONDS", "INF", "LinearModel", "MODULES", "MODULE_SECONDS", "Result",
           "import_seconds", "imported", "importing", "preload", "preload_in_background",
           "session", "solve", "solve_lp"]
