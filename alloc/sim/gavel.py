r"""A Gavel-style simulator of a heterogeneous cluster (Narayanan et al.,
OSDI'20): continuous arrivals, share policies re-solved every round, rounds
of Gavel's mechanism ([`alloc.shares.rounds`][alloc.shares.rounds]).

* Cluster: GPUs per type, by default Gavel's 36 V100 + 36 P100 + 36 K80.
* Jobs: Poisson arrivals at ``jobs_per_hour``; each a single-GPU model
  configuration of Gavel's measured throughputs
  (``gavel_throughputs.json``, drawn uniformly); its work is Gavel's
  Philly-derived duration (`alloc.sim.workload.gavel_work_s`: 80 %
  ``10^U(1.5,3)`` minutes, 20 % ``10^U(3,4)`` minutes) at its throughput on
  the reference type (V100), in steps.
* Every round (`ROUND_S`, 360 s) the policy's
  shares are computed for the active jobs; [`plan_round`][alloc.shares.rounds.plan_round]
  picks the runners by share over time received and gives the GPUs left
  free to idle jobs (for the heterogeneity-agnostic policies, blind to
  which type is faster); a runner advances at its
  measured steps/s on its type (a pair at its co-located rates) and a job
  finishes at the exact second its steps run out (its GPUs idle until the
  next round).
* Policies (`SIM_POLICIES`): ``gavel-las`` is Gavel's LAS, which the
  paper (section 4.1) writes as max-min fairness over the jobs' normalised
  throughputs with per-job priority weights $w_m$ (1 here, as in the
  paper's simulations); the least-attained-service behaviour comes from the
  round mechanism, which runs first the jobs furthest below their share.
  ``gavel-las-agnostic`` is the same over the heterogeneity-agnostic
  throughputs; ``gavel-las-ss`` aware with space sharing (every pair of
  active jobs with measured co-located throughputs).  ``gavel-max-min``
  is another name of ``gavel-las``; ``gavel-las-attained`` weighs each job
  by the inverse of its attained service (GPU-seconds, at least one round's
  worth), Tiresias' notion of LAS folded into the weights.  Also
  ``gavel-ftf`` (finish-time fairness), ``gavel-max-sum``,
  ``gavel-makespan``, ``gavel-fifo``, ``gavel-isolated``, ``gavel-gandiva``,
  ``gavel-allox`` and ``gavel-water-filling``.

Finish-time fairness needs each job's isolated time so far: the seconds its
steps done would have taken at its isolated-share rate (accumulated per
round), so ``C_i + s_i/iso_i`` is its whole run on its isolated share.
"""
from __future__ import annotations

import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError, SolverError
from ..kernel import LinearModel, solve
from ..model import Status
from ..shares.check import agnostic_throughputs, isolated_shares, pair_arrays
from ..shares.io import Pair, SharesProblem
from ..shares.policies import solve_shares
from ..shares.rounds import ROUND_S, plan_round
from .workload import gavel_mean_work_s, gavel_work_s

#: Gavel's heterogeneous cluster.
GAVEL_CLUSTER: Mapping[str, int] = {"v100": 36, "p100": 36, "k80": 36}
#: GPU type on which a job's duration is measured.
REFERENCE_TYPE = "v100"


def shared_dir() -> Path:
    """``$ALLOC_SHARED`` or the ``shared`` folder next to the repository."""
    env = os.environ.get("ALLOC_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared"


def throughputs_path() -> Path:
    """Where Gavel's measured throughputs are read from."""
    return shared_dir() / "data" / "reference" / "gavel_throughputs.json"


@dataclass(frozen=True, eq=False)
class ThroughputTable:
    """Measured steps/s of model configurations (Gavel's throughputs).

    Attributes
    ----------
    types : tuple of str
    models : tuple of str
        Configuration names, e.g. ``"('ResNet-18 (batch size 16)', 1)"``.
    scale : ndarray of int (M,)
        GPUs of each configuration.
    alone : ndarray (M, k)
        Steps/s alone on ``scale`` GPUs of each type.
    pair : ndarray (M, M, k, 2)
        Steps/s of (row model, column model) sharing the same GPUs (0:
        unmeasured, or different scale factors).
    """
    types: tuple
    models: tuple
    alone: np.ndarray
    pair: np.ndarray
    scale: np.ndarray | None = None

    @classmethod
    def load(cls, path=None, types: Sequence[str] = tuple(GAVEL_CLUSTER),
             scale_factors: Sequence[int] = (1,)) -> "ThroughputTable":
        """Read ``gavel_throughputs.json``.

        Parameters
        ----------
        path : str or Path, optional
            Default `throughputs_path`.
        types : sequence of str
            GPU types to read (each configuration must have them all).
        scale_factors : sequence of int
            Which configurations: single-GPU only by default.

        Returns
        -------
        ThroughputTable

        Raises
        ------
        InputError
            The file is missing, unreadable or lacks a type.
        """
        path = Path(path) if path else throughputs_path()
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read Gavel's throughputs ({type(exc).__name__})") from None
        missing = [t for t in types if t not in raw]
        if missing:
            raise InputError(f"{path}: no throughputs for GPU type {missing[0]!r}")
        wanted = tuple(f", {int(s)})" for s in scale_factors)
        models = tuple(k for k in raw[types[0]] if k.endswith(wanted) and all(k in raw[t] for t in types))
        scale = np.array([int(k.rsplit(",", 1)[1].strip(" )")) for k in models])
        M, k = len(models), len(types)
        alone = np.array([[float(raw[t][mdl]["null"]) for t in types] for mdl in models])
        pair = np.zeros((M, M, k, 2))
        for c, t in enumerate(types):
            for a, ma in enumerate(models):
                row = raw[t][ma]
                for b, mb in enumerate(models):
                    v = row.get(mb)
                    if v and scale[a] == scale[b]:
                        pair[a, b, c] = (float(v[0]), float(v[1]))
        return cls(tuple(types), models, alone, pair, scale)


@dataclass(frozen=True)
class GavelJob:
    """A job of the simulation: its model (row of the table), arrival (s) and
    steps."""
    id: int
    model: int
    arrival_s: float
    steps: float


def gavel_workload(table: ThroughputTable, jobs_per_hour: float, count: int,
                   seed: int = 0) -> list[GavelJob]:
    """``count`` jobs arriving as a Poisson process at ``jobs_per_hour``, models
    drawn uniformly, work from Gavel's duration law at the reference type.

    Parameters
    ----------
    table : ThroughputTable
    jobs_per_hour : float
    count : int
    seed : int

    Returns
    -------
    list of GavelJob
        Sorted by arrival; ``steps`` = seconds of work x steps/s on V100.
    """
    if not jobs_per_hour > 0:
        raise ValueError("jobs_per_hour must be > 0")
    rng = random.Random(seed)
    ref = table.types.index(REFERENCE_TYPE) if REFERENCE_TYPE in table.types else 0
    t, out = 0.0, []
    for i in range(count):
        t += -math.log(1.0 - rng.random()) / (jobs_per_hour / 3600.0)
        model = rng.randrange(len(table.models))
        out.append(GavelJob(i, model, t, gavel_work_s(rng) * table.alone[model, ref]))
    return out


def saturation_rates(table: ThroughputTable, cluster: Mapping[str, int] = GAVEL_CLUSTER
                     ) -> dict[str, float]:
    r"""Arrival rates (jobs/hour) beyond which the queue of
    [`gavel_workload`][alloc.sim.gavel.gavel_workload] grows without bound.

    With $r_{mj}$ model ``m``'s rate on type ``j`` relative to the
    reference type, $E[W]$ the mean work in reference-type seconds
    (`gavel_mean_work_s`), $M$ models drawn
    uniformly and $n_j$ GPUs of type ``j`` ($N$ in all):

    * ``agnostic``: every job spreads its time over the types in proportion
      to their GPUs (the heterogeneity-agnostic shares), so it needs
      $E[W]/\bar r_m$ GPU-seconds, $\bar r_m = \sum_j n_j
      r_{mj}/N$; the rate is $N / (E[W]\,\mathrm{mean}_m 1/\bar r_m)$.
    * ``any``: the most any policy sustains, the LP
      $\max\lambda$ s.t. $\sum_j g_{mj} r_{mj} \ge \lambda
      E[W]/M$ for every model and $\sum_m g_{mj} \le n_j$
      ($g_{mj} \ge 0$ GPUs of type ``j`` given to model ``m``).

    Parameters
    ----------
    table : ThroughputTable
    cluster : mapping
        GPUs of each type.

    Returns
    -------
    dict
        ``{"agnostic": float, "any": float}`` in jobs per hour.

    Raises
    ------
    InputError
        The cluster lacks a type of the table.
    """
    ref = table.types.index(REFERENCE_TYPE) if REFERENCE_TYPE in table.types else 0
    r = table.alone / table.alone[:, [ref]]
    missing = [t for t in table.types if t not in cluster]
    if missing:
        raise InputError(f"cluster: no GPU count for type {missing[0]!r} (expected one per type of "
                         f"the table: {', '.join(table.types)})")
    n = np.array([float(cluster[t]) for t in table.types])
    work = gavel_mean_work_s()
    agnostic = n.sum() / (work * np.mean(n.sum() / (r @ n))) * 3600.0
    M, k = r.shape
    lp = LinearModel("saturation")
    lam = lp.add_var(obj=1.0)
    g = [[lp.add_var() for _ in range(k)] for _ in range(M)]
    for m in range(M):
        lp.add_row({lam: work / M, **{g[m][j]: -r[m, j] for j in range(k)}}, hi=0.0)
    for j in range(k):
        lp.add_row({g[m][j]: 1.0 for m in range(M)}, hi=n[j])
    res = solve(lp, "highs", time_limit=60.0)
    if res.status is not Status.OPTIMAL or res.objective is None:
        raise SolverError(f"saturation LP ended {res.status.value}")
    return {"agnostic": float(agnostic), "any": float(res.objective * 3600.0)}


@dataclass(frozen=True)
class SimPolicy:
    """A simulator policy: the share policy, weights by attained service,
    space sharing."""
    share: str
    attained: bool = False
    pairs: bool = False


SIM_POLICIES: dict[str, SimPolicy] = {
    "gavel-las": SimPolicy("max-min"),
    "gavel-las-agnostic": SimPolicy("max-min-agnostic"),
    "gavel-las-ss": SimPolicy("max-min", pairs=True),
    "gavel-las-attained": SimPolicy("max-min", attained=True),
    "gavel-max-min": SimPolicy("max-min"),
    "gavel-max-min-agnostic": SimPolicy("max-min-agnostic"),
    "gavel-ftf": SimPolicy("finish-time-fairness"),
    "gavel-max-sum": SimPolicy("max-sum"),
    "gavel-makespan": SimPolicy("makespan"),
    "gavel-water-filling": SimPolicy("water-filling"),
    "gavel-fifo": SimPolicy("fifo"),
    "gavel-isolated": SimPolicy("isolated"),
    "gavel-gandiva": SimPolicy("gandiva", pairs=True),
    "gavel-allox": SimPolicy("allox"),
}


@dataclass
class GavelResult:
    """Outcome of `simulate_gavel`.

    Attributes
    ----------
    policy : str
    jct : dict of int to float
        Job completion time (s) of every finished job.
    measured : tuple of int
        The jobs whose JCT is averaged (the window).
    rounds : int
    end_time_s : float
    wall_time_s, solve_s : float
        Seconds of the whole run and of the policy solves.
    peak_active : int
        Most jobs active (arrived, unfinished) at once.
    statuses : dict
        How many rounds ended with each solve status.
    """
    policy: str
    jct: dict = field(default_factory=dict)
    measured: tuple = ()
    rounds: int = 0
    end_time_s: float = 0.0
    wall_time_s: float = 0.0
    solve_s: float = 0.0
    peak_active: int = 0
    statuses: dict = field(default_factory=dict)

    @property
    def mean_jct_h(self) -> float:
        """Mean JCT of the measured jobs that finished, in hours."""
        vals = [self.jct[i] for i in self.measured if i in self.jct]
        return float(np.mean(vals)) / 3600.0 if vals else float("nan")

    @property
    def unfinished(self) -> int:
        """Number of measured jobs that had not finished when the run stopped."""
        return sum(1 for i in self.measured if i not in self.jct)


def _problem(table, cluster, jobs, state, t, pol: SimPolicy) -> SharesProblem:
    """The shares problem of the active jobs at time ``t``."""
    ids = list(state)
    mod = np.array([jobs[i].model for i in ids])
    m = len(ids)
    T = table.alone[mod]
    left = np.array([state[i]["left"] for i in ids])
    elapsed = np.array([t - jobs[i].arrival_s for i in ids])
    iso_time = np.array([state[i]["iso_time"] for i in ids])
    if pol.attained:
        attained = np.array([state[i]["attained"] for i in ids])
        weight = 1.0 / np.maximum(attained, ROUND_S)
        weight = weight / weight.max()
    else:
        weight = np.ones(m)
    pairs: tuple[Pair, ...] = ()
    if pol.pairs and m > 1:
        a, b = np.triu_indices(m, 1)
        PT = table.pair[mod[a], mod[b]]
        ok = ((PT[..., 0] > 0) & (PT[..., 1] > 0)).any(axis=1)
        pairs = tuple(Pair(int(x), int(y), P) for x, y, P in zip(a[ok], b[ok], PT[ok]))
    return SharesProblem(table.types, np.array([float(cluster[t_]) for t_ in table.types]),
                         tuple(str(i) for i in ids), np.ones(m), weight, T, left, elapsed,
                         iso_time, tuple([None] * m), pairs, {}, "gavel-sim")


def _pair_rows(problem):
    """Each job id's index, and the dense ``(m, m)`` lookup from the two job
    indices of a pair to its row (``-1``: no such pair)."""
    a, b, _ = pair_arrays(problem, runnable=False)
    rows = np.full((problem.m, problem.m), -1, dtype=np.int64)
    rows[a, b] = np.arange(len(a))
    return {int(x): i for i, x in enumerate(problem.job_ids)}, rows


def _advance(problem, plan, state, pair_recv, lookup, jobs, table, t, round_s, jct):
    """Run one round: progress, completions, time received, attained service."""
    col = {x: c for c, x in enumerate(table.types)}
    runners = [((jid,), typ) for jid, typ in plan.jobs.items()]
    runners += [(tuple(key.split("+")), typ) for key, typ in plan.pairs.items()]
    if plan.pairs:
        (index, rows), PT = lookup, pair_arrays(problem, runnable=False)[2]
    for members, typ in runners:
        c = col[typ]
        if len(members) == 1:
            rates = [table.alone[jobs[int(members[0])].model, c]]
        else:
            key = (int(members[0]), int(members[1]))
            rates = list(PT[rows[index[key[0]], index[key[1]]], c])
        for jid, rate in zip(members, rates):
            s = state[int(jid)]
            run = min(round_s, s["left"] / rate) if rate > 0 else round_s
            s["left"] = max(0.0, s["left"] - rate * run)
            if len(members) == 1:
                s["recv"][c] += run
            elif jid == members[0]:
                pair_recv.setdefault(key, np.zeros(len(table.types)))[c] += run
            s["attained"] += run
            s["iso_time"] += rate * run / max(s["iso_rate"], 1e-300)
            if s["left"] <= 1e-9 * jobs[int(jid)].steps:
                jct[int(jid)] = t + run - jobs[int(jid)].arrival_s


def simulate_gavel(policy: str, jobs: Sequence[GavelJob], table: ThroughputTable, *,
                   cluster: Mapping[str, int] = GAVEL_CLUSTER, round_s: float = ROUND_S,
                   window: tuple[int, int] | None = None, max_time_s: float | None = None,
                   time_limit: float = 30.0, seed: int = 0) -> GavelResult:
    """Simulate ``jobs`` under a policy of `SIM_POLICIES`.

    Parameters
    ----------
    policy : str
    jobs : sequence of GavelJob
        Sorted by arrival.
    table : ThroughputTable
    cluster : mapping
        GPUs of each type (default `GAVEL_CLUSTER`).
    round_s : float
        Seconds per round.
    window : (int, int), optional
        Job ids ``[a, b)`` whose JCT is averaged (default: all); the run
        ends when they have all finished.
    max_time_s : float, optional
        Simulated seconds after which the run stops.
    time_limit : float
        Seconds each policy solve may take.
    seed : int
        Seed of randomised policies.

    Returns
    -------
    GavelResult
    """
    pol = SIM_POLICIES.get(policy)
    if pol is None:
        raise InputError(f"unknown simulator policy {policy!r}; valid: {', '.join(SIM_POLICIES)}")
    lo, hi = window or (0, len(jobs))
    res = GavelResult(policy, measured=tuple(range(lo, min(hi, len(jobs)))))
    byid = {j.id: j for j in jobs}
    state: dict[int, dict] = {}
    pair_recv: dict[tuple, np.ndarray] = {}     # (job a, job b) -> seconds together per type
    nxt, t, t0 = 0, 0.0, time.perf_counter()
    waiting = len(res.measured)
    while waiting:
        while nxt < len(jobs) and jobs[nxt].arrival_s <= t:
            j = jobs[nxt]
            state[j.id] = {"left": j.steps, "recv": np.zeros(len(table.types)),
                           "attained": 0.0, "iso_time": 0.0, "iso_rate": 0.0}
            nxt += 1
        if not state:
            if nxt >= len(jobs):
                break
            t = math.ceil(jobs[nxt].arrival_s / round_s) * round_s
            continue
        if max_time_s is not None and t >= max_time_s:
            break
        res.peak_active = max(res.peak_active, len(state))
        problem = _problem(table, cluster, byid, state, t, pol)
        iso = (problem.throughput * isolated_shares(problem)).sum(axis=1)
        for jid, rate in zip(problem.job_ids, iso):
            state[int(jid)]["iso_rate"] = rate
        s0 = time.perf_counter()
        result = solve_shares(problem, pol.share, time_limit=time_limit, seed=seed + res.rounds)
        res.solve_s += time.perf_counter() - s0
        res.statuses[result.status.value] = res.statuses.get(result.status.value, 0) + 1
        fill = agnostic_throughputs(problem)[0] if pol.share.endswith("-agnostic") else None
        lookup = _pair_rows(problem) if problem.pairs else None
        plan = plan_round(problem, result, *_received(problem, state, pair_recv, lookup, byid, t),
                          fill_rates=fill)
        _advance(problem, plan, state, pair_recv, lookup, byid, table, t, round_s, res.jct)
        done = [i for i in state if i in res.jct]
        for jid in done:
            del state[jid]
        waiting -= sum(1 for i in done if lo <= i < hi)
        if done and pair_recv:
            pair_recv = {key: v for key, v in pair_recv.items() if key[0] in state and key[1] in state}
        t += round_s
        res.rounds += 1
    res.end_time_s = t
    res.wall_time_s = time.perf_counter() - t0
    return res


def _received(problem, state, pair_recv, lookup, jobs, t):
    """Fractions of time since arrival each job (and pair) ran on each type."""
    ids = [int(x) for x in problem.job_ids]
    span = np.array([max(t - jobs[i].arrival_s, 1e-9) for i in ids])
    R = np.array([state[i]["recv"] for i in ids]) / span[:, None]
    RP = np.zeros((len(problem.pairs), problem.k))
    if pair_recv and problem.pairs:
        index, rows = lookup
        for (x, y), got in pair_recv.items():
            r = rows[index[x], index[y]]
            if r >= 0:
                RP[r] = got / span[index[x]]
    return R, RP


__all__ = ["GAVEL_CLUSTER", "GavelJob", "GavelResult", "REFERENCE_TYPE", "SIM_POLICIES", "SimPolicy",
           "ThroughputTable", "gavel_workload", "saturation_rates", "shared_dir", "simulate_gavel",
           "throughputs_path"]
