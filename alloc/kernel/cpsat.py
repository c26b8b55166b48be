"""CP-SAT engine (OR-Tools): integer models only.

CP-SAT needs integer coefficients.  A row whose coefficients are decimals
(at most six digits) is scaled to an exact integer row; any other row is scaled
by ``10**6`` and widened by its rounding error, so the scaled row admits every
solution of the real one (a relaxation: the solution is re-checked by the
caller's own feasibility test).  A decimal objective is scaled exactly; any
other objective is handed over as floats (CP-SAT solves it to a relative
``1e-9``, which is added to the bound).

Search is deterministic for a seed with one worker (the default).  The
model is built with the CamelCase API that every OR-Tools release since 9.8
provides.

The time limit is wall time from the call, the build (and a first call's
import of OR-Tools, 0.3 to 1.5 s) included: CP-SAT's own
``max_time_in_seconds`` is not enough on its own -- several presolve steps
run on deterministic-time budgets and overran it by a second or more on
masters of 26,000 columns on a loaded machine -- so a timer also stops the
search (``StopSearch``) when the limit is reached, and a model whose build
used up the limit is not solved.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Iterable, Sequence

import numpy as np

from ..model import Status
from .model import INF, LinearModel
from .result import Result

SCALE = 10 ** 6
BIG = 10 ** 12


def decimal_scale(values: Iterable[float], max_digits: int = 6) -> int | None:
    """Smallest ``10**k`` (``k <= max_digits``) making every value an integer
    (up to float noise), None when there is none."""
    vals = [float(v) for v in values]
    for k in range(max_digits + 1):
        s: int = 10 ** k
        if all(abs(v * s - round(v * s)) <= 1e-11 * max(1.0, abs(v * s)) for v in vals):
            return s
    return None


def _int_row(coefs: dict[int, float], lo: float, hi: float, lb: Sequence[float],
             ub: Sequence[float]) -> tuple[list[tuple[int, int]], int, int]:
    """Integer coefficients and bounds of a row (exact when decimal)."""
    sc = decimal_scale(coefs.values())
    if sc is not None:
        items = [(k, int(round(v * sc))) for k, v in coefs.items()]
        lo_ = int(math.ceil(lo * sc - 1e-6)) if lo > -INF else -BIG * 1000
        hi_ = int(math.floor(hi * sc + 1e-6)) if hi < INF else BIG * 1000
        return items, lo_, hi_
    items = [(k, int(round(v * SCALE))) for k, v in coefs.items()]
    err = sum(0.5 * max(abs(lb[k]), abs(min(ub[k], BIG))) for k in coefs) + 1
    lo_ = int(math.floor(lo * SCALE - err)) if lo > -INF else -BIG * 1000
    hi_ = int(math.ceil(hi * SCALE + err)) if hi < INF else BIG * 1000
    return items, lo_, hi_


def _weighted(xs: Sequence[Any], items: Sequence[tuple[int, float]]) -> Any:
    """``sum(c * xs[k])`` as one weighted sum (one object, not one per term)."""
    from ortools.sat.python import cp_model
    return cp_model.LinearExpr.WeightedSum([xs[k] for k, _ in items], [c for _, c in items])


_MODEL_CLASS: list[Any] = []


def _model_class() -> Any:
    """OR-Tools' CpModel without the aliases of its pre-PEP8 method names.

    From OR-Tools 9.12 on, every ``CpModel`` adds about 60 such aliases to
    itself, each a closure over one of its own bound methods: a reference
    cycle only the cyclic garbage collector frees (33,000 objects in a
    1,000-server loop round of about 90 models, and the collections they
    bring cost tens of milliseconds) and a walk over ``dir(model)`` at every
    build.  This module calls the PEP8 names where the release has them
    (`_name`, `_read`), the old ones on releases before them."""
    if not _MODEL_CLASS:
        from ortools.sat.python import cp_model
        base: Any = cp_model.CpModel
        if hasattr(base, "_add_pre_pep8_methods"):
            base = type("CpModel", (base,), {"_add_pre_pep8_methods": lambda self: None})
        _MODEL_CLASS.append(base)
    return _MODEL_CLASS[0]


def _name(obj: Any, pep8: str, old: str) -> Any:
    """``obj``'s method by its PEP8 name, or by its old name on OR-Tools
    releases before those names (9.8)."""
    f = getattr(obj, pep8, None)
    return f if f is not None else getattr(obj, old)


def _read(obj: Any, pep8: str, old: str) -> Any:
    """A value ``obj`` gives as a PEP8 property (or method), or by its old
    method on OR-Tools releases before those names (9.8)."""
    v = getattr(obj, pep8, None)
    if v is None:
        return getattr(obj, old)()
    return v() if callable(v) else v


def build(model: LinearModel) -> tuple[Any, list[Any], int]:
    """The CP-SAT model, its variables and the objective scale."""
    if not all(model.integer):
        raise ValueError(f"CP-SAT needs integer variables ({model.name or 'model'} has continuous ones)")
    m = _model_class()()
    new_var = _name(m, "new_int_var", "NewIntVar")
    xs: list[Any] = []
    for lb, ub, name in zip(model.lb, model.ub, model.names):
        lo = int(math.ceil(lb - 1e-9)) if lb > -INF else -BIG
        hi = int(math.floor(ub + 1e-9)) if ub < INF else BIG
        xs.append(new_var(lo, max(lo, hi), name))
    # rows and hints go straight into the model's proto: OR-Tools' expression
    # objects cost seconds on models of 10^4 rows (9.8), the proto fields do not
    proto = _read(m, "proto", "Proto")
    for coefs, row_lo, row_hi in model.rows():
        if not coefs:
            continue
        items, lo_, hi_ = _int_row(coefs, row_lo, row_hi, model.lb, model.ub)
        lin = proto.constraints.add().linear
        lin.vars.extend([k for k, _ in items])
        lin.coeffs.extend([c for _, c in items])
        lin.domain.extend([lo_, hi_])
    scale = 1
    if model.obj:
        ks = sorted(model.obj)
        sc = decimal_scale(model.obj[k] for k in ks)
        if sc is not None:
            expr = _weighted(xs, [(k, int(round(model.obj[k] * sc))) for k in ks])
            scale = sc
        else:
            expr = _weighted(xs, [(k, model.obj[k]) for k in ks])
        _name(m, "maximize", "Maximize")(expr) if model.maximize else \
            _name(m, "minimize", "Minimize")(expr)
    if model.hint:
        proto.solution_hint.vars.extend(list(model.hint))
        proto.solution_hint.values.extend([int(round(v)) for v in model.hint.values()])
    return m, xs, scale


def solve_cpsat(model: LinearModel, time_limit: float, *, seed: int = 0, relax: bool = False,
                workers: int = 1, **params: Any) -> Result:
    """Solve ``model`` with CP-SAT within ``time_limit`` seconds; ``params`` are
    CP-SAT parameters (e.g. ``linearization_level=2``)."""
    if relax:
        raise ValueError("CP-SAT does not solve LP relaxations; use the 'highs' engine")
    t0 = time.perf_counter()    # the first call's import of OR-Tools counts too
    from ortools.sat.python import cp_model
    m, xs, scale = build(model)
    solver = cp_model.CpSolver()
    # the time limit covers the build too: the engine gets what is left of it
    left = float(time_limit) - (time.perf_counter() - t0)
    if left <= 0:
        return Result(Status.UNKNOWN, stats={"engine": "cpsat", "wall": time.perf_counter() - t0,
                                             "timed_out": "build"})
    solver.parameters.max_time_in_seconds = max(1e-3, left)
    solver.parameters.random_seed = int(seed) % (2 ** 31 - 1)
    solver.parameters.num_workers = max(1, int(workers))
    if workers > 1:
        solver.parameters.interleave_search = True
    for k, v in params.items():
        setattr(solver.parameters, k, v)
    timer = threading.Timer(left, _name(solver, "stop_search", "StopSearch"))
    timer.daemon = True
    timer.start()
    try:
        st = _name(solver, "solve", "Solve")(m)
    finally:
        timer.cancel()
    stats = {"engine": "cpsat", "branches": _read(solver, "num_branches", "NumBranches"),
             "conflicts": _read(solver, "num_conflicts", "NumConflicts"),
             "wall": time.perf_counter() - t0}
    if st == cp_model.INFEASIBLE:
        return Result(Status.INFEASIBLE, stats=stats)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Result(Status.UNKNOWN, stats=stats)
    value = _name(solver, "value", "Value")
    x = np.array([value(v) for v in xs], dtype=float)
    obj = model.value(x)
    sense = 1.0 if model.maximize else -1.0
    if model.obj:
        bound = _read(solver, "best_objective_bound", "BestObjectiveBound") / scale + model.obj_const
    else:
        bound = obj
    if st == cp_model.OPTIMAL:
        bound = sense * max(sense * bound, sense * obj)
    # a float objective is solved up to a relative 1e-9
    bound += sense * 1e-9 * max(1.0, abs(bound))
    status = Status.OPTIMAL if st == cp_model.OPTIMAL else Status.FEASIBLE
    return Result(status, x, obj, bound, stats=stats)


__all__ = ["build", "decimal_scale", "solve_cpsat"]
