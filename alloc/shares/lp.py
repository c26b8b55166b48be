r"""The share LPs written out in full, one row per job, solved by HiGHS through
:mod:`alloc.kernel` -- with space sharing (pairs) priced in by column
generation.  This is the path for problems with ``pairs``, and the plain
reference the structured solver of :mod:`alloc.shares.core` is tested
against.

Columns: ``X_ij`` (job ``i`` alone on ``sf_i`` GPUs of type ``j``) and
``Y_qj`` (pair ``q = (a, b)`` together on the same ``sf`` GPUs of type ``j``).

.. math::

    \sum_j X_{ij} + \sum_{q \ni i}\sum_j Y_{qj} \le 1 \quad (v_i), \qquad
    \sum_i sf_i X_{ij} + \sum_q sf_q Y_{qj} \le n_j \quad (p_j)

*Requirement form*: :math:`\max\lambda` s.t.
:math:`\sum_j a_{ij}X_{ij} + \sum_{q\ni i}\sum_j a^q_{ij} Y_{qj} \ge
b_i\lambda + c_i\ (u_i)`.  *Sum form*: :math:`\max \sum_{ij} g_{ij}X_{ij} +
\sum_{qj}(g^q_{aj} + g^q_{bj})Y_{qj}`.

A pair column prices at :math:`u_a a^q_{aj} + u_b a^q_{bj} - v_a - v_b -
sf_q p_j` (requirement form; ``g`` and no ``u`` in the sum form); columns
with a positive price are added until none is left, so the answer is the
optimum over every pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from ..deadline import Deadline
from ..kernel import INF, LinearModel, solve
from ..model import Status

#: Pair columns added per pricing round, at most.
BATCH = 4000
#: A reduced cost above this (relative to the objective scale) prices a column in.
PRICE_TOL = 1e-9
MASTER_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True, eq=False)
class FullLP:
    """One share LP over jobs and pairs.

    Attributes
    ----------
    A : ndarray (m, k)
        Value per unit of time alone: ``a_ij`` (requirement form) or
        ``g_ij`` (sum form).
    w : ndarray (m,)
        GPUs per unit of time (scale factors).
    n : ndarray (k,)
        GPUs of each type.
    b, c : ndarray (m,) or None
        Requirement ``>= b_i lambda + c_i`` (None: sum form).
    pa, pb : ndarray of int (P,)
        The two jobs of each pair.
    PA : ndarray (P, k, 2)
        Value per unit of time of each member while the pair shares a type.
    """
    A: np.ndarray
    w: np.ndarray
    n: np.ndarray
    b: np.ndarray | None = None
    c: np.ndarray | None = None
    pa: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    pb: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    PA: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 2)))

    @property
    def requirement(self) -> bool:
        return self.b is not None


@dataclass(frozen=True, eq=False)
class FullSolution:
    """Shares, duals and status of a :class:`FullLP` solve (``u`` is None in
    the sum form); ``objective`` is ``lambda`` or the sum."""
    status: Status
    X: np.ndarray | None = None
    Y: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    p: np.ndarray | None = None
    stats: dict = field(default_factory=dict)


def _model(lp: FullLP, qcols: np.ndarray):
    """The LP with every single column and the pair columns ``qcols`` (flat
    indices ``q * k + j``)."""
    m, k = lp.A.shape
    need = (lp.b > 0) | (lp.c > 0) if lp.requirement else np.ones(m, dtype=bool)
    xi, xj = np.nonzero((lp.A > 0) & need[:, None])
    qi, qj = qcols // k, qcols % k
    model = LinearModel("shares-full", maximize=True)
    lam = model.add_var(-INF, INF, obj=1.0) if lp.requirement else -1
    if lp.requirement:
        xcol = model.add_vars(len(xi), 0.0, INF)
        ycol = model.add_vars(len(qi), 0.0, INF)
    else:
        xcol = model.add_vars(len(xi), 0.0, INF, obj=lp.A[xi, xj])
        ycol = model.add_vars(len(qi), 0.0, INF, obj=lp.PA[qi, qj].sum(axis=1))
    a, b = lp.pa[qi], lp.pb[qi]
    ns = np.maximum(lp.n, 1e-300)
    rows = [xi, a, b, m + xj]                                       # time, capacity
    cols = [xcol, ycol, ycol, xcol]
    vals = [np.ones(len(xi)), np.ones(len(qi)), np.ones(len(qi)), lp.w[xi] / ns[xj]]
    rows.append(m + qj)
    cols.append(ycol)
    vals.append(lp.w[a] / ns[qj])
    nrow = m + k
    lo = [np.full(m + k, -INF)]
    hi = [np.ones(m), lp.n / ns]
    if lp.requirement:
        r = m + k
        rows += [r + xi, r + a, r + b, r + np.arange(m)]
        cols += [xcol, ycol, ycol, np.full(m, lam)]
        vals += [lp.A[xi, xj], lp.PA[qi, qj, 0], lp.PA[qi, qj, 1], -lp.b]
        nrow += m
        lo.append(np.where(need, lp.c, -INF))
        hi.append(np.full(m, INF))
    M = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(nrow, model.n))
    model.add_rows(M, np.concatenate(lo), np.concatenate(hi))
    return model, (lam, xi, xj, xcol, qi, qj, ycol)


def _prices(lp: FullLP, sol, m: int, k: int):
    d = sol.duals
    v = np.maximum(d[:m], 0.0)
    p = np.maximum(d[m:m + k], 0.0) / np.maximum(lp.n, 1e-300)
    u = np.maximum(-d[m + k:2 * m + k], 0.0) if lp.requirement else None
    return u, v, p


def _reduced(lp: FullLP, u, v, p) -> np.ndarray:
    """Reduced cost of every pair column, shape (P, k) (``-inf`` where the
    pair cannot run)."""
    val = lp.PA[:, :, 0], lp.PA[:, :, 1]
    if lp.requirement:
        gain = u[lp.pa, None] * val[0] + u[lp.pb, None] * val[1]
    else:
        gain = val[0] + val[1]
    rc = gain - v[lp.pa, None] - v[lp.pb, None] - lp.w[lp.pa, None] * p[None, :]
    return np.where((val[0] > 0) | (val[1] > 0), rc, -np.inf)


def solve_full(lp: FullLP, deadline: Deadline | None = None, column_generation: bool = True,
               params: dict | None = None) -> FullSolution:
    """Solve a :class:`FullLP` to optimality with HiGHS.

    Parameters
    ----------
    lp : FullLP
    deadline : Deadline, optional
    column_generation : bool
        Price pair columns in (default); False puts every pair column in
        the one LP (the plain reference).
    params : dict, optional
        HiGHS options (e.g. ``{"solver": "ipm"}``).

    Returns
    -------
    FullSolution
        ``OPTIMAL`` when HiGHS solved the LP and no pair column prices in.
    """
    deadline = deadline or Deadline.never()
    m, k = lp.A.shape
    P = len(lp.pa)
    allq = np.flatnonzero(((lp.PA[:, :, 0] > 0) | (lp.PA[:, :, 1] > 0)).ravel()) if P else np.zeros(0, int)
    qcols = np.zeros(0, dtype=int) if (column_generation and P) else allq
    opts = dict(MASTER_OPTIONS) | (params or {})
    rounds = 0
    while True:
        rounds += 1
        model, maps = _model(lp, qcols)
        sol = solve(model, "highs", deadline=deadline, relax=True, **opts)
        if sol.status is not Status.OPTIMAL or sol.duals is None:
            st = sol.status if sol.status is Status.INFEASIBLE else Status.UNKNOWN
            return FullSolution(st, stats={"rounds": rounds, "pair_columns": len(qcols)})
        u, v, p = _prices(lp, sol, m, k)
        if P and column_generation:
            rc = _reduced(lp, u, v, p).ravel()
            scale = max(1.0, abs(float(sol.objective)))
            rc[qcols] = -np.inf
            new = np.flatnonzero(rc > PRICE_TOL * scale)
            if len(new):
                if len(new) > BATCH:
                    new = new[np.argpartition(-rc[new], BATCH)[:BATCH]]
                qcols = np.union1d(qcols, new)
                if deadline.expired():
                    return FullSolution(Status.UNKNOWN, stats={"rounds": rounds, "stopped": "time limit"})
                continue
        lam, xi, xj, xcol, qi, qj, ycol = maps
        X = np.zeros((m, k))
        X[xi, xj] = sol.x[xcol]
        Y = np.zeros((P, k))
        Y[qi, qj] = sol.x[ycol]
        obj = float(sol.x[lam]) if lp.requirement else float(sol.objective)
        return FullSolution(Status.OPTIMAL, np.maximum(X, 0), np.maximum(Y, 0), obj, obj, u, v, p,
                            {"rounds": rounds, "pair_columns": len(qcols)})


__all__ = ["FullLP", "FullSolution", "solve_full"]
