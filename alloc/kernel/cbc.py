"""CBC engine through PuLP.

CBC "stopped on time" with a solution is ``FEASIBLE`` (no proven bound is
read back through PuLP); only PuLP's ``LpSolutionOptimal`` is ``OPTIMAL``.

The time limit is wall time from the call: building PuLP's model, writing
the MPS file, starting CBC and reading its answer back all count.  CBC
checks its own clock (``timeMode elapsed``) only between steps of its
search and can run past its limit on a busy machine, so the process is also
killed once the limit is passed by `GRACE` of it (at least `GRACE_MIN_S`);
a killed run returns ``UNKNOWN`` (no answer) and the caller keeps its own.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from typing import Any

import numpy as np

from ..model import Status
from .model import INF, LinearModel
from .result import Result

#: CBC is killed this share of the time limit after the limit ...
GRACE = 0.05
#: ... and at least this many seconds after it.
GRACE_MIN_S = 0.1


def solve_cbc(model: LinearModel, time_limit: float, *, seed: int = 0, relax: bool = False,
              **params: Any) -> Result:
    """Solve ``model`` with CBC (PuLP's bundled binary) within ``time_limit``."""
    import pulp
    t0 = time.perf_counter()
    prob = pulp.LpProblem(model.name or "m", pulp.LpMaximize if model.maximize else pulp.LpMinimize)
    xs = [pulp.LpVariable(f"x{i}", lowBound=lb if lb > -INF else None,
                          upBound=ub if ub < INF else None,
                          cat=pulp.LpInteger if (integer and not relax) else pulp.LpContinuous)
          for i, (lb, ub, integer) in enumerate(zip(model.lb, model.ub, model.integer))]
    prob += pulp.LpAffineExpression([(xs[k], v) for k, v in sorted(model.obj.items())],
                                    constant=model.obj_const)
    for r, (coefs, lo, hi) in enumerate(model.rows()):
        if not coefs:
            continue
        expr = pulp.LpAffineExpression([(xs[k], v) for k, v in coefs.items()])
        if lo == hi:
            prob += (expr == hi), f"r{r}"
            continue
        if hi < INF:
            prob += (expr <= hi), f"r{r}u"
        if lo > -INF:
            prob += (expr >= lo), f"r{r}l"
    for k, v in model.hint.items():
        xs[k].setInitialValue(v)
    stats: dict[str, Any] = {"engine": "cbc"}
    try:
        status, sol_status = _run(prob, pulp, time_limit, t0, seed, warm=bool(model.hint),
                                  stats=stats)
    except pulp.PulpSolverError as exc:
        stats["error"] = str(exc)
        return Result(Status.UNKNOWN, stats=stats)
    if status is None:
        stats["wall"] = time.perf_counter() - t0
        return Result(Status.UNKNOWN, stats=stats)
    prob.assignStatus(status, sol_status)
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


def cbc_path(cmd: Any) -> str | None:
    """The CBC binary ``cmd`` (PuLP's ``PULP_CBC_CMD``) runs, or None."""
    path: str = cmd.path
    return path if cmd.available() else None


def _run(prob: Any, pulp: Any, time_limit: float, t0: float, seed: int, *, warm: bool,
         stats: dict[str, Any]) -> tuple[Any, Any]:
    """Write ``prob`` for CBC, run it with what is left of ``time_limit``
    (seconds since ``t0``) and read its answer into ``prob``'s variables:
    ``(status, sol_status)`` in PuLP's codes, or ``(None, None)`` when no
    time was left or CBC was killed at the limit (``stats`` says which)."""
    cmd = pulp.PULP_CBC_CMD(msg=False)
    path = cbc_path(cmd)
    if path is None:
        raise pulp.PulpSolverError("CBC is not available")
    with tempfile.TemporaryDirectory(prefix="alloc-cbc-") as tmp:
        mps, sol, mst = (os.path.join(tmp, f"m.{x}") for x in ("mps", "sol", "mst"))
        vs, vnames, cnames, oname = prob.writeMPS(mps, rename=1)
        args = [path, mps] + (["-max"] if prob.sense == pulp.LpMaximize else [])
        if warm:
            cmd.writesol(mst, prob, vs, vnames, cnames)
            args += ["-mips", mst]
        left = float(time_limit) - (time.perf_counter() - t0)
        if left <= 0:
            stats["timed_out"] = "build"
            return None, None
        args += ["-sec", f"{left:.3f}", "-timeMode", "elapsed", "-ratio", "0",
                 "-randomSeed", str(int(seed) % 2**31), "-solve", "-printingOptions", "all",
                 "-solution", sol]
        try:
            subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True,
                           timeout=left + max(GRACE_MIN_S, GRACE * float(time_limit)))
        except subprocess.TimeoutExpired:
            stats["timed_out"] = "killed at the time limit"
            return None, None
        except (OSError, subprocess.CalledProcessError) as exc:
            raise pulp.PulpSolverError(f"CBC failed: {exc}") from exc
        if not os.path.exists(sol):
            raise pulp.PulpSolverError("CBC wrote no solution file")
        status, values, _, _, _, sol_status = cmd.readsol_MPS(sol, prob, vs, vnames, cnames, oname)
    prob.assignVarsVals(values)
    return status, sol_status


__all__ = ["solve_cbc"]
