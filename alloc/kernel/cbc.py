"""CBC engine through PuLP.

CBC "stopped on time" with a solution is ``FEASIBLE`` (no proven bound is
read back through PuLP); only PuLP's ``LpSolutionOptimal`` is ``OPTIMAL``.
"""
from __future__ import annotations

import time

import numpy as np

from ..model import Status
from .model import INF, LinearModel
from .result import Result


def solve_cbc(model: LinearModel, time_limit: float, *, seed: int = 0, relax: bool = False,
              **params) -> Result:
    """Solve ``model`` with CBC (PuLP's bundled binary) within ``time_limit``."""
    import pulp
    t0 = time.perf_counter()
    prob = pulp.LpProblem(model.name or "m", pulp.LpMaximize if model.maximize else pulp.LpMinimize)
    xs = [pulp.LpVariable(f"x{i}", lowBound=lb if lb > -INF else None,
                          upBound=ub if ub < INF else None,
                          cat=pulp.LpInteger if (integer and not relax) else pulp.LpContinuous)
          for i, (lb, ub, integer) in enumerate(zip(model.lb, model.ub, model.integer))]
    prob += pulp.lpSum(v * xs[k] for k, v in sorted(model.obj.items())) + model.obj_const
    for r, (coefs, lo, hi) in enumerate(model.rows()):
        if not coefs:
            continue
        expr = pulp.lpSum(v * xs[k] for k, v in coefs.items())
        if lo == hi:
            prob += (expr == hi), f"r{r}"
            continue
        if hi < INF:
            prob += (expr <= hi), f"r{r}u"
        if lo > -INF:
            prob += (expr >= lo), f"r{r}l"
    warm = bool(model.hint)
    for k, v in model.hint.items():
        xs[k].setInitialValue(v)
    # the time limit covers building the model too
    left = float(time_limit) - (time.perf_counter() - t0)
    if left <= 0:
        return Result(Status.UNKNOWN, stats={"engine": "cbc", "wall": time.perf_counter() - t0,
                                             "timed_out": "build"})
    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=max(0.01, left), gapRel=0.0,
                               warmStart=warm, options=[f"randomSeed {int(seed) % 2**31}"])
    stats = {"engine": "cbc"}
    try:
        prob.solve(solver)
    except pulp.PulpSolverError as exc:
        stats["error"] = str(exc)
        return Result(Status.UNKNOWN, stats=stats)
    stats["wall"] = time.perf_counter() - t0
    if prob.status == pulp.LpStatusInfeasible:
        return Result(Status.INFEASIBLE, stats=stats)
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return Result(Status.UNKNOWN, stats=stats)
    x = np.array([float(v.varValue or 0.0) for v in xs])
    if not relax:
        ints = np.asarray(model.integer, dtype=bool)
        x[ints] = np.round(x[ints])
    obj = model.value(x)
    if prob.sol_status == pulp.LpSolutionOptimal:
        sense = 1.0 if model.maximize else -1.0
        return Result(Status.OPTIMAL, x, obj, obj + sense * 1e-7 * max(1.0, abs(obj)), stats=stats)
    return Result(Status.FEASIBLE, x, obj, None, stats=stats)


__all__ = ["solve_cbc"]
