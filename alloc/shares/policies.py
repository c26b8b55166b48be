r"""Heterogeneity-aware share policies (Gavel, OSDI'20; Themis, NSDI'20;
AlloX, EuroSys'20; Gandiva, OSDI'18) behind one call,
[`solve_shares`][alloc.shares.policies.solve_shares].

Every policy returns shares ``X_ij`` (fraction of wall-clock time job ``i``
runs on ``sf_i`` GPUs of type ``j``) and, with ``pairs``, ``Y_qj`` for the
pairs; `alloc.shares.check` verifies them and recomputes the objective
before the result is returned.  Constraints of every LP policy:
$X \ge 0$, $\sum_j X_{ij} (+\text{pairs}) \le 1$,
$\sum_i sf_i X_{ij} (+\text{pairs, counted once}) \le n_j$.
With $eff_i = \sum_j T_{ij}X_{ij}$ (+ pair rates) and
$P_i = \sum_j T_{ij}n_j/N$:

``max-min``
    $\max \min_i sf_i\,eff_i/(w_i P_i)$.
``max-min-agnostic``
    The same with every runnable ``T_ij = 1`` (heterogeneity-agnostic); a
    job's time is spread over the types in proportion to their sizes when
    every job can run everywhere (type-blind).
``max-sum``
    $\max \sum_i eff_i$.
``makespan``
    $\min \max_i s_i/eff_i$, exactly: with $\lambda = 1/M$ it is
    the LP $\max\lambda$ s.t. $eff_i \ge \lambda s_i$.
``finish-time-fairness``
    Themis' $\min\max_i \rho_i$, $\rho_i = (t_i + s_i/eff_i) /
    (C_i + s_i/iso_i)$; not an LP (``eff_i(\rho D_i - t_i) \ge s_i`` is a
    hyperbolic constraint), solved by a parametric search in ``rho`` whose
    every step is an exact LP with a dual certificate (see
    [`finish_time_fairness`][alloc.shares.policies.finish_time_fairness]).
``water-filling``, ``water-filling-agnostic``
    The leximin vector of the max-min values: raise the minimum, freeze the
    jobs whose requirement row has a positive dual (complementary slackness:
    they are at the level in every optimal solution), repeat.  One LP per
    round, no MILP.
``hierarchical``
    Tenants with weights ``W``: water-filling in which a tenant's weight is
    split over its active jobs (``"fairness"``: in proportion to job
    weights) or given to its earliest active job (``"fifo"``), so backlogged
    tenants' aggregate normalised shares are proportional to ``W``.
``isolated``, ``proportional``, ``fifo``, ``gandiva``, ``allox``
    Heuristics (`alloc.shares.heuristics`).

Policies are plain functions chosen from `POLICIES` by name.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..deadline import Deadline
from ..errors import InputError, SolverError
from ..model import Status
from ..options import Option, parse_value, validate_options
from . import check, heuristics
from .core import LPResult, RequirementLP, SumLP, solve_requirement, solve_sum
from .io import SharesProblem, SharesResult, pair_key, problem_from_dict
from .lp import FullLP, FullSolver, solve_full

#: Relative agreement between an LP's objective and the one recomputed from
#: its shares below which ``optimal`` is kept.
AGREE = 1e-6
#: Relative gap at which the finish-time-fairness search stops.
FTF_GAP = 1e-9
FTF_ITERS = 60
#: Water-filling keeps a frozen job at its round's level less this share of
#: it, so that later rounds stay feasible under the LP's tolerances.
FREEZE_MARGIN = 1e-9


@dataclass(frozen=True, eq=False)
class Outcome:
    """What a policy function hands to `solve_shares` for checking."""
    X: np.ndarray
    Y: np.ndarray | None = None
    status: Status = Status.FEASIBLE
    bound: float | None = None
    lp_objective: float | None = None
    stats: dict = field(default_factory=dict)


# ------------------------------------------------------------------ setup
@dataclass(frozen=True, eq=False)
class _Rates:
    """Throughputs a policy works with (aware or agnostic) and their
    profiles; pairs are included when ``pairs`` is True."""
    p: SharesProblem
    T: np.ndarray
    PT: np.ndarray
    rows: np.ndarray
    prof: np.ndarray
    pairs: bool

    @property
    def P(self) -> np.ndarray:
        return check.proportional_throughput(self.p, self.T)


def _kappa(p: SharesProblem, r: "_Rates", weighted: bool = True) -> np.ndarray:
    """``sf_i / (w_i P_i)`` (``sf_i / P_i`` unweighted); 1 for jobs that cannot run."""
    P = r.P * (p.weight if weighted else 1.0)
    return np.divide(p.scale_factor, P, out=np.ones(p.m), where=P > 0)


def _rates(p: SharesProblem, agnostic: bool, space_sharing: bool) -> _Rates:
    if agnostic:
        T, PT = check.agnostic_throughputs(p)
        rows, prof = np.unique(T, axis=0, return_inverse=True)
        prof = prof.reshape(-1)
    else:
        T, PT = p.runnable_throughput, check.pair_arrays(p)[2]
        rows, prof = p.profiles
    return _Rates(p, T, PT, rows, prof, bool(space_sharing and len(p.pairs)))


def _requirement(r: _Rates, kappa: np.ndarray, b: np.ndarray, c: np.ndarray,
                 deadline: Deadline, start=None, keep: dict | None = None) -> LPResult:
    """Solve $\\max\\lambda$ s.t. $\\kappa_i\\,eff_i \\ge b_i\\lambda + c_i$
    exactly: the structured solver without pairs, the full LP with pair
    columns priced in otherwise (kept in ``keep`` between calls with the same
    ``kappa``, e.g. water-filling rounds, so priced columns carry over)."""
    p = r.p
    kappa = np.where(np.isfinite(kappa) & (kappa > 0), kappa, 1.0)
    if r.pairs:
        solver = keep.get("full") if keep is not None else None
        if solver is None:
            a, bb = check.pair_arrays(p)[:2]
            PA = r.PT * np.stack([kappa[a], kappa[bb]], axis=1)[:, None, :]
            solver = FullSolver(FullLP(kappa[:, None] * r.T, p.scale_factor, p.capacity, b, c, a, bb, PA))
            if keep is not None:
                keep["full"] = solver
        else:
            solver.set_requirements(b, c)
        sol = solver.solve(deadline)
        return sol
    lp = RequirementLP(r.rows, r.prof, kappa, b, c, p.scale_factor, p.capacity)
    return solve_requirement(lp, deadline, start)


def _nothing(p: SharesProblem, stats=None) -> Outcome:
    """No shares found in time: zero shares (feasible), status unknown."""
    return Outcome(np.zeros((p.m, p.k)), None, Status.UNKNOWN, stats=dict(stats or {}))


def _outcome(p: SharesProblem, req: LPResult, lp_objective=None, bound=None) -> Outcome:
    if req.X is None and req.status is Status.UNKNOWN:
        return _nothing(p, req.stats)
    if req.X is None:
        raise SolverError(f"LP solve ended {req.status.value} without shares "
                          f"({', '.join(f'{k}={v}' for k, v in req.stats.items())})")
    return Outcome(req.X, req.Y, req.status, req.bound if bound is None else bound,
                   req.objective if lp_objective is None else lp_objective, dict(req.stats))


# --------------------------------------------------------------- LP policies
def _spread(p: SharesProblem, r: _Rates, out: Outcome) -> Outcome:
    """Heterogeneity-agnostic shares, type-blind: a job's agnostic value
    depends only on its total time, so when every job can run on every type
    (and no pair runs) its time is spread over the types in proportion to
    their GPUs -- the same objective, and no type left idle by an arbitrary
    choice among equal optima (a type-blind scheduler's average)."""
    runnable = (r.T > 0) | ~p.served[:, None]
    if out.X is None or not runnable.all() or (out.Y is not None and out.Y.any()):
        return out
    tau = out.X.sum(axis=1, keepdims=True)
    X = tau * (p.capacity / max(float(p.capacity.sum()), 1e-300))[None, :]
    return Outcome(X, out.Y, out.status, out.bound, out.lp_objective, out.stats)


def max_min(p: SharesProblem, deadline: Deadline, *, agnostic: bool = False,
            space_sharing: bool = True) -> Outcome:
    r"""Weighted max-min fairness over normalised shares:
    $\max \min_i sf_i\,eff_i/(w_i P_i)$ (``kappa_i = sf_i/(w_i P_i)``,
    ``b_i = 1``).

    Of the optimal solutions it returns one in which every job left at the
    minimum is a bottleneck (it cannot rise without lowering another job at
    the minimum): water-filling rounds run until the level rises above the
    first one, which usually costs one more LP.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    r = _rates(p, agnostic, space_sharing)
    kappa = _kappa(p, r)
    out = _water_fill(r, kappa, lambda active: np.ones(p.m), deadline, until_rise=True)
    return _spread(p, r, out) if agnostic else out


def max_sum(p: SharesProblem, deadline: Deadline, *, space_sharing: bool = True) -> Outcome:
    r"""Total throughput $\max\sum_i eff_i$.  Without pairs, identical
    jobs (same throughputs and scale factor) form one class of the
    structured sum-form LP; with pairs, the full LP prices pair columns in.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    r = _rates(p, False, space_sharing)
    if r.pairs:
        a, b, _ = check.pair_arrays(p)
        sol = solve_full(FullLP(r.T, p.scale_factor, p.capacity, pa=a, pb=b, PA=r.PT), deadline)
        if sol.X is None:
            if sol.status is Status.UNKNOWN:
                return _nothing(p, sol.stats)
            raise SolverError(f"max-sum LP ended {sol.status.value}")
        return Outcome(sol.X, sol.Y, sol.status, sol.bound, sol.objective, sol.stats)
    served = np.flatnonzero(p.served)
    if not len(served):                  # nothing can run: no share is the optimum
        return Outcome(np.zeros((p.m, p.k)), None, Status.OPTIMAL, 0.0, 0.0)
    key = r.prof[served] * (int(p.scale_factor.max()) + 1) + p.scale_factor[served].astype(int)
    _, first, cls, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    rep = served[first]
    res = solve_sum(SumLP(r.T[rep], counts.astype(float), p.scale_factor[rep], p.capacity), deadline)
    if res.X is None:
        if res.status is Status.UNKNOWN:
            return _nothing(p, res.stats)
        raise SolverError(f"max-sum LP ended {res.status.value}")
    X = np.zeros((p.m, p.k))
    X[served] = res.X[cls.reshape(-1)]
    return Outcome(X, None, res.status, res.bound, res.objective, res.stats | {"classes": len(rep)})


def makespan(p: SharesProblem, deadline: Deadline, *, space_sharing: bool = True) -> Outcome:
    r"""Minimum makespan $\min\max_i s_i/eff_i$, exactly: the LP
    $\max\lambda$ s.t. $L\,eff_i/s_i \ge \lambda$, makespan
    ``L/lambda`` (its bound ``L/bound``), with $L = \max_i s_i/\max_j
    T_{ij}$ (every job alone on its fastest type: a lower bound on the
    makespan), so that ``lambda`` lies in (0, 1] whatever the units -- read
    unscaled, a makespan of 1e9 s is a ``lambda`` of 1e-9, below the LP's
    tolerances, and the shares came out 0.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    r = _rates(p, False, space_sharing)
    live = p.served & (p.steps_remaining > 0)
    if not live.any():
        return Outcome(np.zeros((p.m, p.k)), status=Status.OPTIMAL)
    s = p.steps_remaining
    L = float(np.max(s[live] / r.T[live].max(axis=1)))
    kappa = np.where(live, L / np.where(live, s, 1.0), 1.0)
    req = _requirement(r, kappa, live.astype(float), np.zeros(p.m), deadline)

    def inv(x: float | None) -> float | None:
        return L / x if x else None
    return _outcome(p, req, inv(req.objective), inv(req.bound))


def _ftf_cut_root(y, s, D, t, target, rho):
    r"""Smallest $\rho' \ge \rho$ with $\phi(\rho') = \sum_i y_i s_i /
    (\rho' D_i - t_i) \le$ ``target``: Newton's method from the left on the
    convex decreasing $\phi$, every iterate a lower bound of the root."""
    live = y > 0
    y, s, D, t = y[live], s[live], D[live], t[live]
    for _ in range(200):
        den = rho * D - t
        phi = float(np.sum(y * s / den))
        if phi <= target * (1 + 1e-15):
            return rho
        dphi = -float(np.sum(y * s * D / den ** 2))
        step = (phi - target) / -dphi
        if step <= 1e-16 * max(1.0, abs(rho)):
            return rho
        rho += step
    return rho


def finish_time_fairness(p: SharesProblem, deadline: Deadline, *,
                         space_sharing: bool = True) -> Outcome:
    r"""Themis' finish-time fairness: $\min \max_i \rho_i$ over the jobs
    with steps left, $\rho_i = (t_i + s_i/eff_i)/D_i$,
    $D_i = C_i + s_i/iso_i$.

    $\rho_i \le \rho \iff eff_i \ge r_i(\rho) = s_i/(\rho D_i - t_i)$.
    At a trial $\rho_k$ the LP $\max\lambda$ s.t.
    $eff_i \ge \lambda r_i(\rho_k)$ gives shares (an upper bound
    $\max_i\rho_i(X)$) and certified duals; with
    $y_i = u_i/r_i(\rho_k)$ every feasible ``X`` has
    $\sum_i y_i\,eff_i \le \lambda_k$, so any feasible ``rho`` has
    $\phi(\rho) = \sum_i y_i r_i(\rho) \le \lambda_k$ -- a cut whose
    root is a lower bound (``phi`` is convex and decreasing).  The next trial
    is that root; the search stops when the bounds meet (`FTF_GAP`).
    It starts from the lower bound of every job alone on its best type.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    r = _rates(p, False, space_sharing)
    live = p.served & (p.steps_remaining > 0)
    X0 = np.zeros((p.m, p.k))
    if not live.any():
        return Outcome(X0, status=Status.OPTIMAL)
    iso = (p.throughput * check.isolated_shares(p)).sum(axis=1)
    s, t = p.steps_remaining, p.elapsed_s
    D = np.where(live, p.isolated_time_s + s / np.where(iso > 0, iso, 1.0), 1.0)
    best_rate = r.T.max(axis=1)
    lb = float(np.max(((t + s / np.where(best_rate > 0, best_rate, 1.0)) / D)[live]))
    rho, ub, best, start, all_opt, it = lb, np.inf, None, None, True, 0
    for it in range(1, FTF_ITERS + 1):
        req_r = np.where(live, s / np.maximum(rho * D - t, 1e-300), 0.0)
        kappa = np.where(live, 1.0 / np.where(req_r > 0, req_r, 1.0), 1.0)
        req = _requirement(r, kappa, live.astype(float), np.zeros(p.m), deadline, start)
        if req.X is None:
            break
        all_opt &= req.status is Status.OPTIMAL
        eff = check.effective(p, req.X, req.Y)
        here = float(np.nanmax(check.ftf_rho(p, eff)))
        if here < ub:
            ub, best = here, req
        if req.u is None or req.objective is None or req.status is not Status.OPTIMAL:
            break
        y = np.where(live, req.u * kappa, 0.0)
        lb = max(lb, _ftf_cut_root(y, s, D, t, float(req.objective), rho))
        start = (req.objective, req.p)
        if ub - lb <= FTF_GAP * max(1.0, ub) or deadline.expired():
            break
        rho = lb
    if best is None or best.X is None:
        return _nothing(p, {"iterations": it})
    closed = all_opt and ub - lb <= FTF_GAP * max(1.0, ub) * 10
    return Outcome(best.X, best.Y, Status.OPTIMAL if closed else Status.FEASIBLE, min(lb, ub), ub,
                   {"iterations": it})


# ------------------------------------------------------------ water-filling
def _water_fill(r: _Rates, kappa: np.ndarray, weights: Callable[[np.ndarray], np.ndarray],
                deadline: Deadline, until_rise: bool = False) -> Outcome:
    r"""Leximin by rounds.  Round ``t`` solves $\max\lambda$ s.t.
    $\kappa_i eff_i \ge b_i\lambda$ for the active jobs (``b`` from
    ``weights(active)``) and $\kappa_i eff_i \ge z_i$ for the frozen
    ones; an active job whose requirement row has a positive dual is frozen
    at $z_i = b_i\lambda^*$ -- by complementary slackness it has exactly
    that value in every optimal solution, so it cannot rise.  At least one
    job freezes per round (the duals of the active rows sum to 1).  With
    pairs the rounds share one LP kept in HiGHS (priced columns carry over).
    ``until_rise``: stop after the first round whose level exceeds the
    first one (the max-min policy)."""
    p = r.p
    active = p.served.copy()
    floor = np.zeros(p.m)
    first: LPResult | None = None
    last: LPResult | None = None
    start, rounds, exact = None, 0, True
    keep: dict = {}
    while active.any():
        b = np.where(active, weights(active), 0.0)
        if not (b > 0).any():
            break
        c = np.where(~active & p.served, floor * (1 - FREEZE_MARGIN), 0.0)
        req = _requirement(r, kappa, b, c, deadline, start, keep)
        if req.X is None or req.u is None or req.objective is None:
            exact = False
            break
        if until_rise and first is not None and first.objective is not None and \
                req.objective > first.objective * (1 + 1e-9) + 1e-12:
            last = req
            break
        rounds += 1
        exact &= req.status is Status.OPTIMAL
        first = first or req
        last = req
        cand = active & (b > 0)
        umax = float(req.u[cand].max(initial=0.0))
        freeze = cand & (req.u > 1e-9 * umax) if umax > 0 else cand
        floor[freeze] = b[freeze] * req.objective
        active &= ~freeze
        start = (req.objective, req.p)
        if deadline.expired() and active.any():
            exact = False
            break
    if last is None or first is None or last.X is None:
        return _nothing(p, {"rounds": 0})
    return Outcome(last.X, last.Y, Status.OPTIMAL if exact else Status.FEASIBLE, first.bound,
                   first.objective, {"rounds": rounds})


def water_filling(p: SharesProblem, deadline: Deadline, *, agnostic: bool = False,
                  space_sharing: bool = True) -> Outcome:
    r"""Leximin of $sf_i\,eff_i/(w_i P_i)$ (see `_water_fill`).

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    r = _rates(p, agnostic, space_sharing)
    kappa = _kappa(p, r)
    out = _water_fill(r, kappa, lambda active: np.ones(p.m), deadline)
    return _spread(p, r, out) if agnostic else out


def hierarchical(p: SharesProblem, deadline: Deadline, *, within: str = "fairness",
                 space_sharing: bool = True) -> Outcome:
    r"""Weighted fairness across tenants, then ``within`` (``"fairness"`` or
    ``"fifo"``, or the tenant's own ``policy``) inside each.

    Water-filling on normalised shares $sf_i\,eff_i/P_i$ in which each
    round gives tenant ``tau`` the weight $W_\tau$: split over its
    active jobs in proportion to their weights (fairness), or all to its
    earliest active job (fifo).  While every tenant is backlogged, its
    aggregate normalised share is $W_\tau \lambda$.  A job without a
    tenant is a tenant of its own, weighing its job weight.

    Parameters
    ----------
    p : SharesProblem
    deadline : Deadline
        Every LP (and round) gets the time left on it.
    space_sharing : bool
        Use the problem's pairs (default True).

    Returns
    -------
    Outcome
        Shares, status, the LP's bound and objective (unchecked: see
        [`solve_shares`][alloc.shares.policies.solve_shares]).
    """
    if within not in ("fairness", "fifo"):
        raise InputError(f"option within: expected 'fairness' or 'fifo', got {within!r}")
    r = _rates(p, False, space_sharing)
    kappa = _kappa(p, r, weighted=False)
    tidx, W = check.tenant_table(p)
    names = list(p.tenants)
    fifo_t = np.array([(p.tenants[names[t]].policy or within) == "fifo" if t < len(names) else False
                       for t in range(len(W))])
    order = heuristics.arrival_order(p)
    rank = np.empty(p.m, dtype=int)
    rank[order] = np.arange(p.m)

    def weights(active):
        b = np.zeros(p.m)
        wsum = np.zeros(len(W))
        np.add.at(wsum, tidx[active], p.weight[active])
        fair = active & ~fifo_t[tidx]
        b[fair] = W[tidx[fair]] * p.weight[fair] / wsum[tidx[fair]]
        for t in np.flatnonzero(fifo_t):
            members = np.flatnonzero(active & (tidx == t))
            if len(members):
                b[members[np.argmin(rank[members])]] = W[t]
        return b
    out = _water_fill(r, kappa, weights, deadline)
    return Outcome(out.X, out.Y, out.status, None, None, out.stats)


# ---------------------------------------------------------------- registry
@dataclass(frozen=True)
class PolicySpec:
    """A registered policy: its function ``fn(problem, deadline, seed, **options)``,
    the objective kind its result reports (`alloc.shares.check.objective`),
    its declared options (`alloc.options.Option`), one line of description, and whether it needs
    every job's ``steps_remaining``."""
    fn: Callable[..., Outcome]
    objective: str
    options: tuple[Option, ...]
    description: str
    needs_steps: bool = False


def _heur(fn):
    def run(p, deadline, seed, **kw):
        out = fn(p, deadline, seed)
        if isinstance(out, Outcome):
            return out
        X, Y = out if isinstance(out, tuple) else (out, None)
        return Outcome(X, Y, Status.FEASIBLE)
    return run


def _allox(p, deadline, seed):
    X, st, stats = heuristics.allox(p, deadline)
    return Outcome(X, None, st, stats=stats)


_SS = (Option("space_sharing", "bool", True, "use the problem's space-sharing pairs"),)
POLICIES: dict[str, PolicySpec] = {
    "max-min": PolicySpec(lambda p, d, s, **o: max_min(p, d, **o), "min-share", _SS,
                          "heterogeneity-aware weighted max-min fairness (Gavel)"),
    "max-min-agnostic": PolicySpec(lambda p, d, s, **o: max_min(p, d, agnostic=True, **o),
                                   "min-share-agnostic", _SS, "max-min with every throughput 1"),
    "max-sum": PolicySpec(lambda p, d, s, **o: max_sum(p, d, **o), "sum", _SS, "total throughput"),
    "makespan": PolicySpec(lambda p, d, s, **o: makespan(p, d, **o), "makespan", _SS,
                           "minimum makespan, exact (LP in 1/makespan)", True),
    "finish-time-fairness": PolicySpec(lambda p, d, s, **o: finish_time_fairness(p, d, **o), "ftf",
                                       _SS, "Themis finish-time fairness, exact parametric LP",
                                       True),
    "water-filling": PolicySpec(lambda p, d, s, **o: water_filling(p, d, **o), "min-share", _SS,
                                "leximin of the max-min values"),
    "water-filling-agnostic": PolicySpec(lambda p, d, s, **o: water_filling(p, d, agnostic=True, **o),
                                         "min-share-agnostic", _SS, "leximin, throughputs 1"),
    "hierarchical": PolicySpec(lambda p, d, s, **o: hierarchical(p, d, **o), "tenant-share",
                               (Option("within", "str", "fairness",
                                       "the policy inside a tenant that names none",
                                       choices=("fairness", "fifo")), *_SS),
                               "weighted fairness across tenants, fairness or fifo within"),
    "isolated": PolicySpec(_heur(lambda p, d, s: heuristics.isolated(p)), "min-share", (),
                           "1/m of every type each (divided by the scale factor)"),
    "proportional": PolicySpec(_heur(lambda p, d, s: heuristics.proportional(p)), "min-share", (),
                               "time split in proportion to type sizes"),
    "fifo": PolicySpec(_heur(lambda p, d, s: heuristics.fifo(p)), "sum", (),
                       "arrival order, fastest type with free GPUs, whole GPUs"),
    "gandiva": PolicySpec(_heur(lambda p, d, s: heuristics.gandiva(p, s)), "sum", (),
                          "time slicing with random packing of pairs (seeded)"),
    "allox": PolicySpec(_heur(_allox), "sum", (), "min-cost matching to (type, position) slots", True),
}


def _options(name: str, spec: PolicySpec, options: Mapping[str, Any]) -> dict:
    """The policy's options checked by the one option validator (texts, as
    from the command line, read in the declared kind); InputError on one line."""
    specs = {o.name: o for o in spec.options}
    given = {k: parse_value(specs[k], v) if k in specs and isinstance(v, str) else v
             for k, v in options.items()}
    try:
        return validate_options(f"policy {name}", spec.options, given)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def solve_shares(problem: SharesProblem | Mapping, policy: str, *, time_limit: float | None = None,
                 seed: int = 0, **options) -> SharesResult:
    """Compute a share policy, check it, and report it.

    Parameters
    ----------
    problem : SharesProblem or dict
        A problem, or an ``alloc.shares/1`` document (validated here).
    policy : str
        A name from `POLICIES`.
    time_limit : float, optional
        Seconds (default `alloc.deadline.DEFAULT_TIME_LIMIT`); every LP
        and every round gets the time left.
    seed : int
        Seed of the randomised policies (``gandiva``).
    **options
        Policy options (``space_sharing=False`` ignores pairs;
        ``within="fifo"`` for ``hierarchical``).

    Returns
    -------
    SharesResult
        ``objective`` and ``effective`` recomputed from the shares.

    Raises
    ------
    InputError
        Bad problem, unknown policy or option.
    SolverError
        A solver failure, or shares that break a rule (never returned).
    """
    t0 = time.perf_counter()
    if not isinstance(problem, SharesProblem):
        problem = problem_from_dict(problem)
    spec = POLICIES.get(policy)
    if spec is None:
        raise InputError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")
    opts = _options(policy, spec, options)
    if spec.needs_steps:
        _check_steps(problem, policy)
    try:
        deadline = Deadline.after(time_limit)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    out = spec.fn(problem, deadline, seed, **opts)
    return _finish(problem, policy, spec, out, t0)


def _check_steps(p: SharesProblem, policy: str) -> None:
    """A policy that needs ``steps_remaining`` has it for every job, and some
    job that can run has steps left (one-line InputError naming the field)."""
    if p.steps_given is not None and not p.steps_given.all():
        i = int(np.flatnonzero(~p.steps_given)[0])
        raise InputError(f"jobs[{i}].steps_remaining: policy {policy} needs the steps each "
                         f"job has left; expected a number > 0 for job {p.job_ids[i]!r}")
    if not (p.served & (p.steps_remaining > 0)).any():
        raise InputError(f"jobs: policy {policy} needs a job with steps_remaining > 0 that "
                         f"can run on this cluster; none has")


def _finish(p: SharesProblem, policy: str, spec: PolicySpec, out: Outcome, t0: float) -> SharesResult:
    """Check the shares and build the result (objective recomputed)."""
    X = np.clip(out.X, 0.0, None)
    Y = None if out.Y is None else np.clip(out.Y, 0.0, None)
    bad = check.violations(p, X, Y)
    if bad:
        raise SolverError(f"policy {policy} returned infeasible shares: {bad[0]}"
                          + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    eff = check.effective(p, X, Y)
    obj = check.objective(p, spec.objective, X, Y, eff)
    status = out.status
    stats = dict(out.stats)
    if status is Status.OPTIMAL and out.lp_objective is not None and obj is not None:
        if abs(obj - out.lp_objective) > AGREE * max(1.0, abs(obj)):
            status = Status.FEASIBLE
            stats["disagreement"] = f"LP {out.lp_objective:.12g} vs shares {obj:.12g}"
    keys = tuple(pair_key(p, q) for q in p.pairs)
    return SharesResult(policy, status, obj, out.bound, time.perf_counter() - t0, p.job_ids,
                        p.gpu_types, X, keys, Y if Y is not None else (np.zeros((len(keys), p.k)) if keys else None),
                        eff, p.unserved_reasons(), stats)


__all__ = ["Outcome", "POLICIES", "PolicySpec", "finish_time_fairness", "hierarchical", "makespan",
           "max_min", "max_sum", "solve_shares", "water_filling"]
