r"""Exact, structure-exploiting solvers for the two linear programs behind the
share policies, with an optimality certificate.

Both programs have one time row per job and one capacity row per GPU type:

$$
\sum_j X_{ij} \le 1 \quad (v_i), \qquad
\sum_i w_i X_{ij} \le n_j \quad (p_j), \qquad X \ge 0 .
$$

*Requirement form* (`solve_requirement`; max-min, makespan, the
inner problem of finish-time fairness, every water-filling round):

$$
\max\ \lambda \quad\text{s.t.}\quad
\kappa_i \sum_j D_{r_i j} X_{ij} \ \ge\ b_i \lambda + c_i \quad (u_i),
$$

where job ``i`` has a *profile* ``r_i`` (a row of ``D``, e.g. its measured
throughputs) and a scale ``kappa_i``, so ``a_ij = kappa_i D[r_i, j]``.

*Sum form* (`solve_sum`; max-sum): $\max \sum_i\sum_j g_{ij}X_{ij}$.

With few GPU types (``k``) and many jobs (``m``), a general simplex spends its
time on ``m`` rows whose fate is decided by ``k`` prices.  Given prices
``p`` and the level ``lambda``, every job solves a two-row LP on its own; its
optimal basis is found by enumerating the ``O(k^2)`` bases, vectorised over
jobs (`local_bases`).  The *master* LP keeps explicit only the jobs whose
basis is in doubt:

* a job whose basis is optimal with a margin is *fixed*: its shares are affine
  in ``lambda`` (``X = alpha + beta*lambda``) and enter the capacity rows as one
  aggregated coefficient;
* jobs that share a profile and sit on their cheapest type(s) with time to
  spare form a *group*: one variable per type (the group's value bought there,
  in profile units) and two rows, whatever the group's size -- exact because
  every member then splits its time in the same proportions;
* every other job is explicit (its own rows, one column per type).

The first classification uses *reference prices*: a previous solve's, or
(few profiles) none at all -- every job in its profile's group -- or those of
a stabilised column generation over whole-cluster responses
(`price_start`).  After each master every fixed job and group is
re-checked at the master's prices; the failures stay explicit for good, and
the next master either adopts these prices (few failures) or widens the
margin around the reference ones, so the loop ends (at worst with every job
explicit, the plain LP).  The answer comes with a full dual solution
``(u, v, p)`` of the original LP, checked for feasibility; ``bound`` is its
dual objective, so ``optimal`` means the duality gap closed, not that a
heuristic converged.

Figures (2 cores, Gavel's throughputs, 10,000 jobs, ``bench/shares.py``) are
in ``bench/results/shares.md``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..deadline import Deadline
from ..kernel import INF, LinearModel, solve
from ..model import Status

#: Feasibility tolerance of the certificate (absolute, on shares and rows).
TOL = 1e-9
#: Relative duality gap below which the answer is reported optimal.
GAP_TOL = 1e-7
#: Margin (relative) a job's basis needs at the reference prices to be fixed
#: in the first master; it grows by `MARGIN_GROWTH` after each failure.
FIX_MARGIN = 4e-3
MARGIN_GROWTH = 4.0
#: A master whose failures are at most this share of its fixed jobs (or
#: this many) gives the reference prices of the next one.
HEALTHY = 0.05
HEALTHY_MIN = 10
#: Members of one group differ in theta (value per unit of requirement) by
#: less than this factor.
THETA_BAND = 1.5
#: Jobs (or classes) up to which the master is simply the whole LP.
DIRECT_MAX = 160
#: Explicit jobs from which a master is solved by the interior-point method.
IPM_MIN = 1500
#: HiGHS options of every master (tight tolerances: the certificate is checked).
MASTER_OPTIONS: dict[str, Any] = {"primal_feasibility_tolerance": 1e-10,
                                  "dual_feasibility_tolerance": 1e-10}
#: Price iterations (stabilised column generation) and their relative gap.
PRICE_ITERS = 40
PRICE_GAP = 1e-6


# ----------------------------------------------------------------- problems
@dataclass(frozen=True, eq=False)
class RequirementLP:
    """The requirement-form LP (see the module notes).

    Attributes
    ----------
    D : ndarray, shape (R, k)
        Profile rows, ``>= 0`` (e.g. steps/s on each GPU type).
    prof : ndarray of int, shape (m,)
        Profile of each job.
    kappa : ndarray, shape (m,)
        Scale of each job, ``> 0``: ``a_ij = kappa_i * D[prof_i, j]``.
    b, c : ndarray, shape (m,)
        Requirement ``a_i . X_i >= b_i * lambda + c_i`` (``b, c >= 0``; a job
        with ``b = c = 0`` has no requirement and gets nothing).
    w : ndarray, shape (m,)
        GPUs one unit of a job's time takes (its scale factor).
    n : ndarray, shape (k,)
        GPUs of each type.
    """
    D: np.ndarray
    prof: np.ndarray
    kappa: np.ndarray
    b: np.ndarray
    c: np.ndarray
    w: np.ndarray
    n: np.ndarray

    @property
    def m(self) -> int:
        """Number of jobs (rows of ``a``)."""
        return len(self.prof)

    @property
    def k(self) -> int:
        """Number of GPU types (capacity rows)."""
        return len(self.n)

    def A(self, idx=None) -> np.ndarray:
        """``a_ij`` for the jobs ``idx`` (all by default)."""
        if idx is None:
            return self.kappa[:, None] * self.D[self.prof]
        return self.kappa[idx, None] * self.D[self.prof[idx]]

    def subset(self, idx: np.ndarray, n: np.ndarray | None = None) -> "RequirementLP":
        """The LP of the jobs ``idx`` (capacities ``n``, default unchanged)."""
        return RequirementLP(self.D, self.prof[idx], self.kappa[idx], self.b[idx], self.c[idx],
                             self.w[idx], self.n if n is None else n)


@dataclass(frozen=True, eq=False)
class SumLP:
    r"""The sum-form LP over classes of identical jobs:
    $\max \sum_c q_c\, G_c \cdot X_c$ s.t. $\sum_j X_{cj} \le 1$,
    $\sum_c q_c w_c X_{cj} \le n_j$ (each of the ``q_c`` members of
    class ``c`` gets the shares ``X_c``).

    Attributes
    ----------
    G : ndarray (C, k)
        Value per unit of time of one member on each type (``>= 0``).
    q : ndarray (C,)
        Members of each class.
    w : ndarray (C,)
        GPUs one unit of a member's time takes.
    n : ndarray (k,)
        GPUs of each type.
    """
    G: np.ndarray
    q: np.ndarray
    w: np.ndarray
    n: np.ndarray

    @property
    def m(self) -> int:
        """Number of job classes (rows of ``G``)."""
        return len(self.q)

    @property
    def k(self) -> int:
        """Number of GPU types (capacity rows)."""
        return len(self.n)


@dataclass(frozen=True, eq=False)
class LPResult:
    """The result of every share LP solve (the structured core solvers here
    and the full LP of `alloc.shares.lp`).

    Attributes
    ----------
    status : Status
        ``OPTIMAL`` when the certificate closed the gap; ``FEASIBLE`` with
        shares but no proof; ``UNKNOWN`` without shares (time ran out).
    X : ndarray (m, k) or None
        Shares (fraction of time on each type).
    Y : ndarray or None
        Shares of the space-sharing pair columns (the full LP; None in the
        structured solvers, which have no pair columns).
    objective : float or None
        ``lambda`` (requirement form) or the sum (sum form) of ``X``.
    bound : float or None
        Dual objective of a checked dual solution (an upper bound).
    u, v, p : ndarray or None
        The dual solution (requirement rows, time rows, capacity rows), as
        multipliers ``>= 0``.
    stats : dict
        Iterations, master sizes, seconds.
    """
    status: Status
    X: np.ndarray | None = None
    Y: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    u: np.ndarray | None = None
    v: np.ndarray | None = None
    p: np.ndarray | None = None
    stats: dict = field(default_factory=dict)


#: The former name of `LPResult` in this module.
CoreResult = LPResult


# ------------------------------------------------------- local bases (vector)
def _candidates(k: int) -> list[tuple]:
    """Bases of one job's two-row LP: ``("S", j)`` type j alone with time to
    spare, ``("D", j, l)`` types j and l filling its time, ``("Z", j)`` all its
    time on j with value to spare, ``("0",)`` nothing."""
    return ([("S", j) for j in range(k)] + [("D", j, l) for j, l in itertools.combinations(range(k), 2)]
            + [("Z", j) for j in range(k)] + [("0",)])


@dataclass(frozen=True, eq=False)
class LocalBases:
    """Each job's basis at given ``(lambda, p)``.

    ``cand[i]`` indexes `_candidates` (``-1``: no optimal basis, i.e.
    the job cannot meet its requirement); ``alpha + beta*lambda`` are its
    shares; ``u, v`` its duals; ``pm`` and ``dm`` the primal margin (time)
    and the relative dual margin; ``ok`` whether the basis is optimal.
    """
    cand: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    u: np.ndarray
    v: np.ndarray
    pm: np.ndarray
    dm: np.ndarray
    ok: np.ndarray


def _one_candidate(cand, A, C, b, c, rho, cscale, tol):
    """Shares (affine in lambda), duals, margins and optimality of one basis
    for every job (see `local_bases`)."""
    m, k = A.shape
    al = np.zeros((m, k))
    be = np.zeros((m, k))
    u = np.zeros(m)
    v = np.zeros(m)
    basic: list[int] = []
    with np.errstate(divide="ignore", invalid="ignore"):
        if cand[0] == "S":                      # {X_j, time slack}
            j = cand[1]
            aj = A[:, j]
            x = rho / aj
            ok_p = (aj > 0) & (x <= 1 + tol) & (rho > 0)
            pm = 1 - x
            u = C[:, j] / aj
            al[:, j], be[:, j] = c / aj, b / aj
            basic = [j]
        elif cand[0] == "D":                    # {X_j, X_l}: time full
            j, l = cand[1], cand[2]
            aj, alv = A[:, j], A[:, l]
            d = aj - alv
            xj = (rho - alv) / d
            ok_p = (aj > 0) & (alv > 0) & (d != 0) & (xj >= -tol) & (xj <= 1 + tol) & (rho > 0)
            pm = np.minimum(xj, 1 - xj)
            u = (C[:, j] - C[:, l]) / d
            v = aj * u - C[:, j]
            al[:, j], be[:, j] = (c - alv) / d, b / d
            al[:, l], be[:, l] = (aj - c) / d, -b / d
            basic = [j, l]
        elif cand[0] == "Z":                    # {X_j = 1, value surplus}
            j = cand[1]
            aj = A[:, j]
            ok_p = (aj > 0) & (rho > 0) & (aj >= rho - tol * np.maximum(1, aj))
            pm = (aj - rho) / np.where(aj > 0, aj, 1)
            v = -C[:, j]
            al[:, j] = 1.0
            basic = [j]
        else:                                   # nothing
            ok_p = rho <= tol
            pm = np.ones(m)
        rc = C + v[:, None] - A * u[:, None]
        rc[:, basic] = np.inf
        rc[A <= 0] = np.inf                     # columns without value are never used
        dm = rc.min(axis=1) / cscale
        if cand[0] in ("S", "D"):
            dm = np.minimum(dm, u * A.max(axis=1) / cscale)
        if cand[0] in ("D", "Z"):
            dm = np.minimum(dm, v / cscale)
    ok = ok_p & (dm >= -1e-7) & np.isfinite(pm) & np.isfinite(dm)
    return al, be, u, v, np.where(np.isfinite(pm), pm, -np.inf), dm, ok


def local_bases(A: np.ndarray, w: np.ndarray, b: np.ndarray, c: np.ndarray, lam: float,
                p: np.ndarray, given: np.ndarray | None = None, tol: float = TOL) -> LocalBases:
    r"""Optimal basis of every job's own LP at ``(lambda, p)``.

    Job ``i`` solves $\min \sum_j w_i p_j X_j$ s.t.
    $\sum_j a_{ij} X_j \ge \rho_i = b_i\lambda + c_i$,
    $\sum_j X_j \le 1$, $X \ge 0$, with duals ``u_i`` (value)
    and ``v_i`` (time); dual feasibility is $a_{il}u_i - v_i \le w_i p_l$.
    Every basis is tried (``O(k^2)``, vectorised over jobs); among the primal-
    and dual-feasible ones the one with the largest margin is kept.

    Parameters
    ----------
    A : ndarray (m, k)
        Value per unit of time.
    w, b, c : ndarray (m,)
    lam : float
    p : ndarray (k,)
        Prices, ``>= 0``.
    given : ndarray of int (m,), optional
        Evaluate these bases (indices into `_candidates`) instead of
        choosing; ``ok`` then says whether each is still optimal.

    Returns
    -------
    LocalBases
    """
    m, k = A.shape
    rho = b * lam + c
    C = w[:, None] * p[None, :]
    cscale = w * max(float(p.max(initial=0.0)), 1e-12) + 1e-300
    out = LocalBases(np.full(m, -1), np.zeros((m, k)), np.zeros((m, k)), np.zeros(m), np.zeros(m),
                     np.full(m, -np.inf), np.full(m, -np.inf), np.zeros(m, dtype=bool))
    best = np.full(m, -np.inf)
    for ci, cand in enumerate(_candidates(k)):
        if given is not None:
            sel = given == ci
            if not sel.any():
                continue
        al, be, u, v, pm, dm, ok = _one_candidate(cand, A, C, b, c, rho, cscale, tol)
        if given is not None:
            take = sel
        else:
            score = np.minimum(pm, dm)
            take = ok & (score > best)
            best[take] = score[take]
        out.cand[take] = ci
        out.alpha[take] = al[take]
        out.beta[take] = be[take]
        out.u[take] = u[take]
        out.v[take] = v[take]
        out.pm[take] = pm[take]
        out.dm[take] = dm[take]
        out.ok[take] = ok[take]
    return out


# ------------------------------------------------------------ master (R form)
@dataclass(frozen=True, eq=False)
class _Plan:
    """Which jobs are explicit, fixed (with their basis) or in a group."""
    explicit: np.ndarray          # job indices
    fixed: np.ndarray             # job indices
    fixed_bases: LocalBases       # bases of the fixed jobs (in ``fixed`` order)
    groups: list                  # [(profile, member indices, uniform time cap?)]


def _groupable(lp: RequirementLP) -> np.ndarray:
    """Jobs whose requirement is purely proportional (``c = 0``) or purely a
    floor (``b = 0``): only those can share a group."""
    return ((lp.c == 0) & (lp.b > 0)) | ((lp.b == 0) & (lp.c > 0))


def _theta(lp: RequirementLP, idx: np.ndarray) -> np.ndarray:
    """Value per unit of requirement, ``kappa / (b + c)``: a group member with
    a smaller one runs out of time first."""
    return lp.kappa[idx] / (lp.b[idx] + lp.c[idx])


def _plan(lp: RequirementLP, lam: float, p: np.ndarray, explicit: np.ndarray,
          margin: float = FIX_MARGIN, all_groups: bool = False) -> _Plan:
    """Classify the jobs that are not explicit at ``(lambda, p)``: fixed when
    their basis is optimal with ``margin`` to spare, grouped when they sit on
    their cheapest type(s) with time to spare, else explicit
    (``all_groups``: every groupable job in its group, no prices needed)."""
    need = (lp.b > 0) | (lp.c > 0)
    rest = np.flatnonzero(need & ~explicit)
    k = lp.k
    if all_groups:
        grp = rest[_groupable(lp)[rest]]
        fixed = np.zeros(0, dtype=int)
        lb = LocalBases(fixed, np.zeros((0, k)), np.zeros((0, k)), *(np.zeros(0),) * 4,
                        np.zeros(0, dtype=bool))
        new_exp = np.setdiff1d(rest, grp)
    else:
        lb = local_bases(lp.A(rest), lp.w[rest], lp.b[rest], lp.c[rest], lam, p)
        safe = lb.ok & (lb.pm >= margin) & (lb.dm >= margin)
        single = (lb.cand >= 0) & (lb.cand < k)           # "S" bases
        grp_ok = ~safe & single & (lb.pm >= margin) & _groupable(lp)[rest]
        fixed = rest[safe]
        grp = rest[grp_ok]
        new_exp = rest[~safe & ~grp_ok]
        lb = LocalBases(*(getattr(lb, f)[safe] for f in LocalBases.__dataclass_fields__))
    groups = []
    if len(grp):
        # same profile, same kind, and theta within a factor THETA_BAND: the
        # neediest member's time cap then costs the others little
        band = np.floor(np.log(_theta(lp, grp)) / np.log(THETA_BAND)).astype(np.int64)
        band -= band.min()
        key = (lp.prof[grp].astype(np.int64) * 2 + (lp.b[grp] == 0)) * (int(band.max()) + 1) + band
        order = np.argsort(key, kind="stable")
        cuts = np.flatnonzero(np.diff(key[order])) + 1
        for part in np.split(order, cuts):
            members = grp[part]
            if len(members) == 1:
                new_exp = np.append(new_exp, members)
                continue
            th = _theta(lp, members)
            groups.append((int(lp.prof[members[0]]), members, bool(th.max() <= th.min() * (1 + 1e-12))))
    exp = np.union1d(np.flatnonzero(explicit), new_exp).astype(int)
    return _Plan(exp, fixed, lb, groups)


def _build_master(lp: RequirementLP, plan: _Plan, lam_ub: float):
    r"""The master LP of a plan.

    Columns: ``lambda``; ``X_ij`` of the explicit jobs (``a_ij > 0``);
    ``Phi_gj`` of each group (value bought on type ``j``, in profile units).
    Rows: each explicit job's requirement and time; each group's demand
    $\sum_j \Phi_{gj} - B_g\lambda = R_g$ and the time cap of its neediest
    member, $\sum_j \Phi_{gj}/D_{gj} \le \min_i\theta_i\,(B_g + R_g)$
    (exact when all members share ``theta``; otherwise a binding cap sends
    the neediest members out of the group); the capacity of each
    type, with the fixed jobs' affine use $C_0 + C_1\lambda$ moved to
    the bound.
    """
    k = lp.k
    E = plan.explicit
    AE = lp.A(E)
    ei, ej = np.nonzero(AE > 0)
    g_prof = np.array([g[0] for g in plan.groups], dtype=int)
    gi, gj = np.nonzero(lp.D[g_prof] > 0) if len(g_prof) else (np.zeros(0, int), np.zeros(0, int))
    ng, nE = len(plan.groups), len(E)
    B, R0, cap = np.zeros(ng), np.zeros(ng), np.zeros(ng)
    for t, (_, mem, uniform) in enumerate(plan.groups):
        if lp.b[mem[0]] > 0:
            B[t] = float(np.sum(lp.w[mem] * lp.b[mem] / lp.kappa[mem]))
        else:
            R0[t] = float(np.sum(lp.w[mem] * lp.c[mem] / lp.kappa[mem]))
        cap[t] = float(_theta(lp, mem).min()) * (B[t] + R0[t])
    fb, wf = plan.fixed_bases, lp.w[plan.fixed]
    C0 = wf @ fb.alpha if len(wf) else np.zeros(k)
    C1 = wf @ fb.beta if len(wf) else np.zeros(k)

    model = LinearModel("shares-master", maximize=True)
    lam_col = model.add_var(-INF, lam_ub, obj=1.0)
    xcols = model.add_vars(len(ei), 0.0, INF)
    fcols = model.add_vars(len(gi), 0.0, INF)
    Dg = lp.D[g_prof[gi], gj] if len(gi) else np.zeros(0)
    r0, rc = 2 * nE, 2 * nE + 2 * ng
    rows = [ei, np.arange(nE), nE + ei,                                 # explicit jobs
            r0 + gi, r0 + np.arange(ng), r0 + ng + gi,                  # groups
            rc + ej, rc + gj, rc + np.arange(k)]                        # capacity
    cols = [xcols, np.full(nE, lam_col), xcols,
            fcols, np.full(ng, lam_col), fcols,
            xcols, fcols, np.full(k, lam_col)]
    ns = np.maximum(lp.n, 1e-300)                   # capacity rows scaled to O(1)
    vals = [AE[ei, ej], -lp.b[E], np.ones(len(ei)),
            np.ones(len(gi)), -B, 1.0 / Dg,
            lp.w[E][ei] / ns[ej], 1.0 / Dg / ns[gj], C1 / ns]
    from scipy import sparse
    M = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(rc + k, model.n))
    lo = np.concatenate([lp.c[E], np.full(nE, -INF), R0, np.full(ng, -INF), np.full(k, -INF)])
    hi = np.concatenate([np.full(nE, INF), np.ones(nE), R0, cap, (lp.n - C0) / ns])
    model.add_rows(M, lo, hi)
    maps = dict(lam=lam_col, ei=ei, ej=ej, x=xcols, gi=gi, gj=gj, f=fcols, nE=nE, ng=ng, rc=rc)
    return model, maps


def _recover(lp: RequirementLP, plan: _Plan, sol, maps) -> tuple:
    """Full shares and duals from a master solution, and the group members
    whose share of their group's split would overrun their time."""
    m, k = lp.m, lp.k
    x, duals = sol.x, sol.duals
    lam = float(x[maps["lam"]])
    X, u, v = np.zeros((m, k)), np.zeros(m), np.zeros(m)
    nE, ng, rc = maps["nE"], maps["ng"], maps["rc"]
    p = np.maximum(duals[rc:rc + k], 0.0) / np.maximum(lp.n, 1e-300)
    E = plan.explicit
    XE = np.zeros((nE, k))
    XE[maps["ei"], maps["ej"]] = x[maps["x"]]
    X[E] = XE
    u[E] = np.maximum(-duals[:nE], 0.0)
    v[E] = np.maximum(duals[nE:2 * nE], 0.0)
    if len(plan.fixed):
        X[plan.fixed] = plan.fixed_bases.alpha + plan.fixed_bases.beta * lam
    phi = np.zeros((ng, k))
    phi[maps["gi"], maps["gj"]] = x[maps["f"]]
    pi = -duals[2 * nE:2 * nE + ng]
    tau = np.maximum(duals[2 * nE + ng:2 * nE + 2 * ng], 0.0)
    overrun = np.zeros(m, dtype=bool)
    for t, (prof, mem, uniform) in enumerate(plan.groups):
        tot = phi[t].sum()
        if tot > 0:
            d = lp.D[prof]
            per = np.divide(phi[t] / tot, d, out=np.zeros(k), where=d > 0)
            X[mem] = ((lp.b[mem] * lam + lp.c[mem]) / lp.kappa[mem])[:, None] * per[None, :]
            overrun[mem] = X[mem].sum(axis=1) > 1 + TOL
        u[mem] = lp.w[mem] * max(pi[t], 0.0) / lp.kappa[mem]
        if tau[t] > 1e-9 * max(1.0, abs(pi[t])):
            if uniform:                 # every member out of time together: exact
                v[mem] = lp.w[mem] * tau[t]
            else:                       # the cap of the neediest members binds
                th = _theta(lp, mem)
                overrun[mem[th <= th.min() * (1 + 1e-9)]] = True
    return lam, X, u, v, p, overrun


def _certify(lp: RequirementLP, lam: float, X: np.ndarray, u: np.ndarray, v: np.ndarray,
             p: np.ndarray) -> tuple[float | None, bool]:
    """Dual objective of ``(u, v, p)`` when it is dual feasible (else None), and
    whether ``(lambda, X)`` is primal feasible; both within `TOL`."""
    A = lp.A()
    rho = lp.b * lam + lp.c
    cap = lp.w @ X
    primal = bool((X >= -TOL).all() and (X.sum(axis=1) <= 1 + TOL).all()
                  and ((A * X).sum(axis=1) >= rho - TOL * np.maximum(1, np.abs(rho))).all()
                  and (cap <= lp.n + TOL * np.maximum(1, lp.n)).all())
    scale = lp.w * max(float(p.max(initial=0.0)), 1e-12)
    rc = A * u[:, None] - v[:, None] - lp.w[:, None] * p[None, :]
    dual_ok = bool((u >= -TOL).all() and (v >= -TOL).all()
                   and (rc <= 1e-7 * scale[:, None] + TOL).all()
                   and abs(float(lp.b @ u) - 1.0) <= 1e-6)
    if not dual_ok:
        return None, primal
    return float(v.sum() + lp.n @ p - lp.c @ u), primal


def _lam_upper(lp: RequirementLP) -> tuple[float, np.ndarray]:
    """The largest lambda each job could reach alone (its best type, all its
    time), ``(max_j a_ij - c_i) / b_i``, and their minimum slightly relaxed (a
    bound that keeps the master bounded without ever binding at its optimum)."""
    amax = lp.kappa * lp.D[lp.prof].max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        each = np.where(lp.b > 0, (amax - lp.c) / lp.b, np.inf)
    ub = float(each.min(initial=np.inf))
    return ub + 1e-6 * max(1.0, abs(ub)), each


def _failures(lp, plan, lam, p, lam_ub, each_ub, overrun, u, v) -> np.ndarray:
    """Jobs whose place in the plan is wrong at the master's ``(lambda, p)``
    (fills the duals of the fixed jobs at the new prices)."""
    fail = overrun.copy()
    if lam >= lam_ub - 1e-12 * max(1.0, abs(lam_ub)):
        fail |= each_ub <= lam * (1 + 1e-9) + 1e-12
    if len(plan.fixed):
        f = plan.fixed
        chk = local_bases(lp.A(f), lp.w[f], lp.b[f], lp.c[f], lam, p, given=plan.fixed_bases.cand)
        fail[f[~chk.ok]] = True
        u[f], v[f] = chk.u, chk.v
    return fail


def _finish(lp, lam, X, u, v, p, stats) -> LPResult:
    """Certify a converged master: primal feasibility and the duality gap."""
    X = np.maximum(X, 0.0)
    bound, primal = _certify(lp, lam, X, u, v, p)
    if not primal:
        return LPResult(Status.UNKNOWN, stats=stats | {"certificate": "primal"})
    gap_ok = bound is not None and bound - lam <= GAP_TOL * max(1.0, abs(lam))
    return LPResult(Status.OPTIMAL if gap_ok else Status.FEASIBLE, X, None, lam,
                    max(bound, lam) if bound is not None else None, u, v, p, stats)


def solve_requirement(lp: RequirementLP, deadline: Deadline,
                      start: tuple[float, np.ndarray] | None = None) -> LPResult:
    r"""Solve the requirement-form LP exactly (see the module notes).

    $$
    \max \lambda\ \text{s.t.}\ a_i \cdot X_i \ge b_i\lambda + c_i,\
    \textstyle\sum_j X_{ij} \le 1,\ \sum_i w_i X_{ij} \le n_j,\ X \ge 0.
    $$

    The first master classifies the jobs at reference prices: ``start``, or
    with few profiles every job in its profile's group, or else the prices
    of `price_start`.  After a master whose plan fails the check, the
    failures stay explicit and the margin around the reference grows, so a
    wrong guess costs master size, never correctness.

    Parameters
    ----------
    lp : RequirementLP
        At least one job needs ``b_i > 0``.
    deadline : Deadline
        Every master solve gets the time left on it.
    start : (float, ndarray), optional
        A guess of ``(lambda, p)`` (e.g. the previous round's).

    Returns
    -------
    LPResult
        ``objective`` is ``lambda``; ``u, v, p`` the certified duals.
    """
    need = (lp.b > 0) | (lp.c > 0)
    if not (lp.b > 0).any():
        raise ValueError("requirement LP: no job has b > 0 (lambda is unbounded)")
    lam_ub, each_ub = _lam_upper(lp)
    explicit = np.zeros(lp.m, dtype=bool)          # explicit for good
    strikes = np.zeros(lp.m, dtype=int)
    stats = {"iterations": 0, "explicit": 0, "groups": 0, "fixed": 0}
    ref, margin = start, FIX_MARGIN
    if len(np.unique(lp.prof[need] * 2 + (lp.b[need] == 0))) <= DIRECT_MAX:
        # few profiles (or few jobs): every job in its group, no prices needed
        plan = _plan(lp, 0.0, np.zeros(lp.k), explicit, all_groups=True)
    else:
        if ref is None:
            ref = price_start(lp, deadline)
        plan = _plan(lp, float(ref[0]), np.asarray(ref[1], dtype=float), explicit, margin)
    while True:
        stats["iterations"] += 1
        stats.update(explicit=len(plan.explicit), groups=len(plan.groups), fixed=len(plan.fixed))
        model, maps = _build_master(lp, plan, lam_ub)
        params = dict(MASTER_OPTIONS)
        if len(plan.explicit) >= IPM_MIN:
            params["solver"] = "ipm"
        sol = solve(model, "highs", deadline=deadline, relax=True, **params)
        fail = np.zeros(lp.m, dtype=bool)
        if sol.status is Status.OPTIMAL and sol.duals is not None:
            lam, X, u, v, p, overrun = _recover(lp, plan, sol, maps)
            fail = _failures(lp, plan, lam, p, lam_ub, each_ub, overrun, u, v)
            fail[plan.explicit] = False
            if not fail.any():
                return _finish(lp, lam, X, u, v, p, stats)
            # a job that fails twice stays explicit: the loop ends
            strikes[fail] += 1
            explicit |= strikes >= 2
            if ref is None or fail.sum() <= max(HEALTHY_MIN, HEALTHY * (lp.m - len(plan.explicit))):
                ref, margin = (lam, p), FIX_MARGIN  # few failures: these prices are close
            else:
                margin *= MARGIN_GROWTH
        elif sol.status is Status.INFEASIBLE and len(plan.explicit) < int(need.sum()):
            margin *= MARGIN_GROWTH                 # fixed jobs took too much: widen
        else:
            status = Status.UNKNOWN if sol.status is Status.FEASIBLE else sol.status
            return LPResult(status, stats=stats | {"master": sol.status.value})
        if deadline.expired():
            return LPResult(Status.UNKNOWN, stats=stats | {"stopped": "time limit"})
        if margin > 1.0 or explicit.sum() > need.sum() // 2 or ref is None:
            explicit |= need                        # the band is everything: the whole LP
            ref = ref if ref is not None else (0.0, np.zeros(lp.k))
        plan = _plan(lp, float(ref[0]), np.asarray(ref[1], dtype=float), explicit | fail, margin)


def price_start(lp: RequirementLP, deadline: Deadline) -> tuple[float, np.ndarray]:
    r"""Reference ``(lambda, p)`` from the LP without time rows, by stabilised
    column generation (Dantzig-Wolfe over whole-cluster responses).

    Without time rows every job buys its requirement on its cheapest type
    per unit of value.  A *response* to prices ``p`` is the GPUs every job
    then takes per unit of ``lambda`` (``D``, proportional jobs) and for its
    floor (``F``, jobs with ``b = 0``); the master mixes responses,

    $$
    \max \sum_t \eta_t\ \text{s.t.}\ \sum_t \eta_t D^t + \sum_s \nu_s F^s
    \le n,\ \sum_s \nu_s = 1,
    $$

    with ``lambda = sum(eta)``, and its duals price the next response (taken
    at a point between them and the best prices so far, which damps the
    oscillation of plain column generation).  The result is a guess for
    `solve_requirement`, not a certificate.

    Parameters
    ----------
    lp : RequirementLP
    deadline : Deadline

    Returns
    -------
    (float, ndarray)
        ``lambda`` of the last master and the prices with the best bound.
    """
    A = lp.A()
    m, k = A.shape
    act, flo = lp.b > 0, (lp.b == 0) & (lp.c > 0)
    with np.errstate(divide="ignore"):
        inv = np.where(A > 0, lp.w[:, None] / A, np.inf)
    rows = np.arange(m)

    def respond(pi):
        cost = inv * pi[None, :]
        j = np.argmin(np.where(np.isfinite(inv), cost, np.inf), axis=1)
        per = inv[rows, j]
        Dv = np.bincount(j[act], weights=(per * lp.b)[act], minlength=k)
        Fv = np.bincount(j[flo], weights=(per * lp.c)[flo], minlength=k)
        return Dv, Fv, float(pi @ Dv), float(pi @ Fv)

    pi = lp.n / max(lp.n.sum(), 1e-300)
    center, best, lam = pi, np.inf, 0.0
    Dcols, Fcols = [], []
    for _ in range(PRICE_ITERS):
        Dv, Fv, psi, phi = respond(pi)
        if psi > 0:
            bnd = (lp.n @ pi - phi) / psi              # Lagrangian bound on lambda
            if bnd < best:
                best, center = bnd, pi
        Dcols.append(Dv)
        Fcols.append(Fv)
        model = LinearModel("shares-prices", maximize=True)
        model.add_vars(len(Dcols), 0.0, INF, obj=1.0)
        model.add_vars(len(Fcols), 0.0, INF)
        model.add_rows(np.hstack([np.array(Dcols).T, np.array(Fcols).T]), -INF, lp.n)
        model.add_rows(np.hstack([np.zeros((1, len(Dcols))), np.ones((1, len(Fcols)))]), 1.0, 1.0)
        sol = solve(model, "highs", deadline=deadline, relax=True)
        if sol.status is not Status.OPTIMAL or sol.objective is None or sol.duals is None:
            break
        lam, pm = float(sol.objective), np.maximum(sol.duals[:k], 0.0)
        if best - lam <= PRICE_GAP * max(1.0, abs(lam)) or lp.n @ pm <= 0:
            center = pm if best - lam <= PRICE_GAP * max(1.0, abs(lam)) else center
            break
        pi = 0.5 * center / (lp.n @ center) + 0.5 * pm / (lp.n @ pm)
    return lam, center


# ------------------------------------------------------------------- sum form
def _sum_options(lp: SumLP, p: np.ndarray):
    """Each class's best type at prices ``p`` (``-1``: idle), its margin over
    the next option (relative to its largest value) and its dual ``v``."""
    r = lp.G - lp.w[:, None] * p[None, :]
    r = np.where(lp.G > 0, r, -np.inf)
    full = np.hstack([r, np.zeros((lp.m, 1))])         # last column: idle
    order = np.argsort(-full, axis=1)
    rows = np.arange(lp.m)
    best, second = full[rows, order[:, 0]], full[rows, order[:, 1]]
    choice = np.where(order[:, 0] == lp.k, -1, order[:, 0])
    scale = np.maximum(lp.G.max(axis=1), 1e-300)
    return choice, (best - second) / scale, np.maximum(best, 0.0)


def _sum_master(lp: SumLP, E: np.ndarray, choice: np.ndarray, fixed: np.ndarray, deadline):
    """Master of the sum form: explicit classes ``E`` with their own columns,
    fixed classes on their chosen type (all their time) moved to the bounds."""
    k = lp.k
    ei, ej = np.nonzero(lp.G[E] > 0)
    use = np.zeros(k)
    fc = choice[fixed]
    run = fixed[fc >= 0]
    np.add.at(use, choice[run], lp.q[run] * lp.w[run])
    const = float((lp.q[run] * lp.G[run, choice[run]]).sum())
    model = LinearModel("shares-sum-master", maximize=True)
    model.obj_const = const
    cols = model.add_vars(len(ei), 0.0, INF, obj=(lp.q[E] * lp.G[E].T).T[ei, ej])
    ns = np.maximum(lp.n, 1e-300)
    from scipy import sparse
    M = sparse.coo_matrix((np.concatenate([np.ones(len(ei)), (lp.q[E] * lp.w[E])[ei] / ns[ej]]),
                           (np.concatenate([ei, len(E) + ej]), np.concatenate([cols, cols]))),
                          shape=(len(E) + k, model.n))
    model.add_rows(M, -INF, np.concatenate([np.ones(len(E)), (lp.n - use) / ns]))
    params = dict(MASTER_OPTIONS)
    if len(E) >= IPM_MIN:
        params["solver"] = "ipm"
    sol = solve(model, "highs", deadline=deadline, relax=True, **params)
    return sol, ei, ej, cols


def solve_sum(lp: SumLP, deadline: Deadline,
              start: np.ndarray | None = None) -> LPResult:
    r"""Solve the sum-form LP exactly.

    At prices ``p`` a class either idles or spends all its time on the type
    maximising $G_{cj} - w_c p_j$ (its dual
    $v_c = \max(0, \max_j q_c(G_{cj} - w_c p_j))$).  Classes whose
    choice wins by a margin at the reference prices are fixed; the rest are
    explicit in the master; failures at the master's prices become explicit
    and the margin grows.  The certificate is the dual objective
    $\sum_c v_c + n \cdot p$ against the primal one.

    Parameters
    ----------
    lp : SumLP
    deadline : Deadline
    start : ndarray (k,), optional
        Reference prices (default: `sum_price_start`).

    Returns
    -------
    LPResult
        ``objective`` is the sum; ``v, p`` the duals.
    """
    m = lp.m
    explicit = np.zeros(m, dtype=bool)
    if m <= DIRECT_MAX:
        explicit[:] = True
        ref = np.zeros(lp.k)
    else:
        ref = start if start is not None else sum_price_start(lp, deadline)
    margin = FIX_MARGIN
    stats = {"iterations": 0}
    while True:
        stats["iterations"] += 1
        choice, marg, _ = _sum_options(lp, ref)
        E = np.flatnonzero(explicit | (marg < margin))
        fixed = np.setdiff1d(np.arange(m), E)
        stats.update(explicit=len(E), fixed=len(fixed))
        sol, ei, ej, cols = _sum_master(lp, E, choice, fixed, deadline)
        if sol.status is not Status.OPTIMAL or sol.duals is None:
            if sol.status is Status.INFEASIBLE and len(E) < m:
                margin *= MARGIN_GROWTH
                continue
            status = Status.UNKNOWN if sol.status is Status.FEASIBLE else sol.status
            return LPResult(status, stats=stats | {"master": sol.status.value})
        p = np.maximum(sol.duals[len(E):], 0.0) / np.maximum(lp.n, 1e-300)
        X = np.zeros((m, lp.k))
        XE = np.zeros((len(E), lp.k))
        XE[ei, ej] = sol.x[cols]
        X[E] = XE
        run = fixed[choice[fixed] >= 0]
        X[run, choice[run]] = 1.0
        now, marg_now, v = _sum_options(lp, p)
        fail = np.zeros(m, dtype=bool)
        fail[fixed] = (now[fixed] != choice[fixed]) & (marg_now[fixed] > 1e-9)
        if not fail.any():
            return _sum_finish(lp, X, v * lp.q, p, stats)
        explicit |= fail
        explicit[E] |= margin > 1.0
        if fail.sum() <= max(HEALTHY_MIN, HEALTHY * len(fixed)):
            ref, margin = p, FIX_MARGIN
        else:
            margin *= MARGIN_GROWTH
        if margin > 1.0 or explicit.sum() > m // 2:
            explicit[:] = True
        if deadline.expired():
            return LPResult(Status.UNKNOWN, stats=stats | {"stopped": "time limit"})


def _sum_finish(lp: SumLP, X, v, p, stats) -> LPResult:
    """Certificate of the sum form: primal feasibility and the duality gap."""
    X = np.maximum(X, 0.0)
    obj = float(np.sum(lp.q * (lp.G * X).sum(axis=1)))
    primal = bool((X.sum(axis=1) <= 1 + TOL).all()
                  and ((lp.q * lp.w) @ X <= lp.n + TOL * np.maximum(1, lp.n)).all())
    if not primal:
        return LPResult(Status.UNKNOWN, stats=stats | {"certificate": "primal"})
    bound = float(v.sum() + lp.n @ p)
    ok = bound - obj <= GAP_TOL * max(1.0, abs(obj))
    return LPResult(Status.OPTIMAL if ok else Status.FEASIBLE, X, None, obj, max(bound, obj),
                    None, v, p, stats)


def sum_price_start(lp: SumLP, deadline: Deadline) -> np.ndarray:
    r"""Reference prices for `solve_sum` by stabilised column generation
    over whole-cluster responses (every class on its best type at prices
    ``pi``, or idle):

    $$
    \max \sum_t \mu_t V^t\ \text{s.t.}\ \sum_t \mu_t U^t \le n,\
    \sum_t \mu_t = 1,
    $$

    ``V^t`` a response's value and ``U^t`` its GPUs of each type; the
    Lagrangian bound $n\cdot\pi + \sum_c \max(0, \max_j q_c(G_{cj} -
    w_c\pi_j))$ measures the gap.  A guess, not a certificate.

    Parameters
    ----------
    lp : SumLP
    deadline : Deadline

    Returns
    -------
    ndarray (k,)
        Prices per GPU of each type.
    """
    k = lp.k
    qG = lp.q[:, None] * lp.G

    def respond(pi):
        choice, _, v = _sum_options(lp, pi)
        run = choice >= 0
        U = np.bincount(choice[run], weights=(lp.q * lp.w)[run], minlength=k)
        V = float(qG[np.flatnonzero(run), choice[run]].sum())
        return V, U, float((v * lp.q).sum() + lp.n @ pi)

    pi = np.full(k, float(np.median(lp.G[lp.G > 0] / np.repeat(lp.w, k)[lp.G.ravel() > 0]))
                 if (lp.G > 0).any() else 0.0)
    center, best = pi, np.inf
    cols = [(0.0, np.zeros(k))]
    for _ in range(PRICE_ITERS):
        V, U, bnd = respond(pi)
        if bnd < best:
            best, center = bnd, pi
        cols.append((V, U))
        model = LinearModel("shares-sum-prices", maximize=True)
        model.add_vars(len(cols), 0.0, INF, obj=np.array([c[0] for c in cols]))
        model.add_rows(np.vstack([np.array([c[1] for c in cols]).T, np.ones((1, len(cols)))]),
                       -INF, np.concatenate([lp.n, [1.0]]))
        sol = solve(model, "highs", deadline=deadline, relax=True)
        if sol.status is not Status.OPTIMAL or sol.objective is None or sol.duals is None:
            break
        pm = np.maximum(sol.duals[:k], 0.0)
        if best - sol.objective <= PRICE_GAP * max(1.0, abs(sol.objective)):
            return pm
        pi = 0.5 * center + 0.5 * pm
    return center
