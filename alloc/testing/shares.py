r"""Fairness of time shares (``alloc.shares/1``; Gavel, OSDI'20, Themis,
NSDI'20) as checkers: max-min fairness, water-filling (leximin) and
finish-time fairness.

Notation of `alloc.shares.check`: shares ``X_ij`` (fraction of time job
``i`` runs on ``sf_i`` GPUs of type ``j``), effective throughput ``eff_i``,
*normalised share* ``v_i = sf_i eff_i / (w_i P_i)`` over the jobs that can
run, finish-time fairness ``rho_i = (t_i + s_i/eff_i) / (C_i + s_i/iso_i)``.
Feasible shares: ``X >= 0``, ``sum_j X_ij <= 1``, ``sum_i sf_i X_ij <= n_j``.

Each checker takes the problem and shares (``X``, and ``Y`` for pairs) and
returns one line per breach (empty: the property holds within ``tol``).
Where a property says "no feasible shares do better", the checker solves
the linear program over shares *without* space sharing: shares that do
better without pairs do better with them, so every breach reported is real.
"""
from __future__ import annotations

import numpy as np

from ..kernel import LinearModel, solve
from ..model import Status
from ..shares import SharesProblem
from ..shares import check as sc


def _model(p: SharesProblem):
    """The shares LP: variables ``X_ij`` where job i runs on type j, time
    and capacity rows, and each job's normalised-share row as a dict."""
    T = p.runnable_throughput
    kappa = p.scale_factor / (p.weight * sc.proportional_throughput(p))
    model = LinearModel("probe")
    X = {(i, j): model.add_var() for i in range(p.m) for j in range(p.k) if T[i, j] > 0}
    val: list[dict] = [{} for _ in range(p.m)]
    eff: list[dict] = [{} for _ in range(p.m)]
    for (i, j), x in X.items():
        val[i][x] = kappa[i] * T[i, j]
        eff[i][x] = T[i, j]
    for i in range(p.m):
        model.add_row({x: 1.0 for (ii, _), x in X.items() if ii == i}, hi=1.0)
    for j in range(p.k):
        model.add_row({x: float(p.scale_factor[i]) for (i, jj), x in X.items() if jj == j},
                      hi=float(p.capacity[j]))
    return model, val, eff


def _solve(model: LinearModel) -> float | None:
    r = solve(model, "highs", time_limit=20, relax=True, primal_feasibility_tolerance=1e-10,
              dual_feasibility_tolerance=1e-10)
    return r.objective if r.status is Status.OPTIMAL else None


def best_share(p: SharesProblem, i: int, floors) -> float | None:
    """The largest normalised share job ``i`` can have over feasible shares
    (without pairs) that keep ``v_j >= floors[j]`` (NaN: no floor); None
    when the floors cannot all be met."""
    model, val, _ = _model(p)
    model.set_objective(val[i])
    for j in range(p.m):
        if not np.isnan(floors[j]):
            model.add_row(val[j], lo=float(floors[j]))
    return _solve(model)


def values(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """The normalised shares ``v_i`` of ``X, Y`` (NaN for jobs that cannot run)."""
    return sc.normalized_shares(p, sc.effective(p, X, Y))


def max_min_problems(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None, *,
                     tol: float = 1e-6) -> list[str]:
    r"""Max-min fairness: the smallest normalised share is as large as it can
    be,

    $$
    \min_i v_i(X) \ \ge\ \max_{X' \text{ feasible}} \min_i v_i(X') \,(1 - tol).
    $$

    Examples
    --------
    >>> from alloc.shares import problem_from_dict, solve_shares
    >>> from alloc.testing import max_min_problems
    >>> p = problem_from_dict({"format": "alloc.shares/1", "gpu_types": {"v100": 1, "k80": 1},
    ...     "jobs": [{"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}},
    ...              {"id": "b", "throughput": {"v100": 2.0, "k80": 1.5}}]})
    >>> max_min_problems(p, solve_shares(p, "max-min").X)
    []
    >>> max_min_problems(p, solve_shares(p, "fifo").X)
    ['the smallest normalised share 0.857143 could be 1']
    """
    v = values(p, X, Y)[p.served]
    if not len(v):
        return []
    lam = float(v.min())
    model, val, _ = _model(p)
    t = model.add_var(lb=0.0)
    for i in np.flatnonzero(p.served):
        model.add_row({**val[i], t: -1.0}, lo=0.0)
    model.set_objective({t: 1.0})
    best = _solve(model)
    if best is not None and lam < best * (1 - tol) - tol:
        return [f"the smallest normalised share {lam:.6g} could be {best:.6g}"]
    return []


def water_filling_problems(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None, *,
                           tol: float = 1e-6, margin: float = 1e-9) -> list[str]:
    r"""Water-filling (leximin; the design's max-min): no job can be raised
    without lowering one at or below it,

    $$
    \max \{ v_i(X') : X' \text{ feasible},\ v_j(X') \ge v_j(X)
    \ \forall j \ne i,\ v_j(X) \le v_i(X) \} \ \le\ v_i(X)\,(1 + tol).
    $$

    ``margin`` raises the floors by that share (a policy that freezes jobs a
    hair below their level, under the LP solver's tolerances, is held at the
    level).

    Examples
    --------
    >>> from alloc.shares import problem_from_dict, solve_shares
    >>> from alloc.testing import water_filling_problems
    >>> p = problem_from_dict({"format": "alloc.shares/1", "gpu_types": {"v100": 1, "k80": 1},
    ...     "jobs": [{"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}},
    ...              {"id": "b", "throughput": {"v100": 2.0, "k80": 1.5}}]})
    >>> water_filling_problems(p, solve_shares(p, "water-filling").X)
    []
    """
    v = values(p, X, Y)
    out = []
    for i in np.flatnonzero(p.served):
        floors = np.where(p.served & (v <= v[i] * (1 + 1e-9)), v * (1 + margin), np.nan)
        floors[i] = np.nan
        best = best_share(p, int(i), floors)
        if best is not None and best > v[i] * (1 + tol) + tol:
            out.append(f"job {p.job_ids[i]}: normalised share {v[i]:.6g} could rise to "
                       f"{best:.6g} without lowering a job at or below it")
    return out


def finish_time_fairness_problems(p: SharesProblem, X: np.ndarray, Y: np.ndarray | None = None,
                                  *, tol: float = 1e-6) -> list[str]:
    r"""Finish-time fairness (Themis): the largest ``rho`` is as small as it
    can be, and no larger than on the isolated share,

    $$
    \max_i \rho_i(X) \le \max_i \rho_i(X^{iso}), \qquad
    \nexists X' \text{ feasible}: \max_i \rho_i(X') < \max_i \rho_i(X)\,(1 - tol)
    $$

    over the jobs with steps left.  ``rho_i <= R`` is linear in the shares:
    ``eff_i >= s_i / (R D_i - t_i)`` with ``D_i = C_i + s_i/iso_i``.
    """
    rho = sc.ftf_rho(p, sc.effective(p, X, Y))
    live = ~np.isnan(rho)
    if not live.any():
        return []
    worst = float(rho[live].max())
    iso = float(np.nanmax(sc.ftf_rho(p, sc.effective(p, sc.isolated_shares(p)))))
    out = []
    if worst > iso * (1 + tol) + tol:
        out.append(f"largest rho {worst:.6g} is above the isolated share's {iso:.6g}")
    if not np.isfinite(worst):
        return out
    R = worst * (1 - tol)
    iso_rate = (p.throughput * sc.isolated_shares(p)).sum(axis=1)
    D = p.isolated_time_s + p.steps_remaining / np.where(iso_rate > 0, iso_rate, 1.0)
    den = R * D - p.elapsed_s
    if (den[live] <= 0).any():
        return out                         # some job cannot reach R at any rate
    model, _, eff = _model(p)
    for i in np.flatnonzero(live):
        model.add_row(eff[i], lo=float(p.steps_remaining[i] / den[i]))
    model.set_objective({})
    if _solve(model) is not None:
        out.append(f"largest rho {worst:.6g} could be below {R:.6g}")
    return out


__all__ = ["best_share", "finish_time_fairness_problems", "max_min_problems",
           "water_filling_problems", "values"]
