r"""Gavel's experiments (Narayanan et al., OSDI'20) on the one simulator: a
heterogeneous cluster, continuous arrivals, a share policy re-solved every
round, rounds of Gavel's mechanism.

* Cluster: GPUs per type, by default Gavel's 36 V100 + 36 P100 + 36 K80
  (servers of 4 GPUs; every job here is a single-GPU configuration, so any
  placement on the round's type is Gavel's).
* Jobs: Poisson arrivals at ``jobs_per_hour``; each a model configuration of
  Gavel's measured throughputs (``gavel_throughputs.json``, drawn uniformly);
  its work is Gavel's Philly-derived duration (`alloc.sim.workload.gavel_work_s`:
  80 % ``10^U(1.5,3)`` minutes, 20 % ``10^U(3,4)`` minutes) at its throughput
  on the reference type (V100), in steps.
* Every round (`ROUND_S`, 360 s) the policy's shares are computed for the
  active jobs (a ``shares`` policy of the registry,
  `alloc.sched.timeshare.GavelShares`); the simulator's round mechanism
  (`alloc.sim.sharing`: [`plan_round`][alloc.shares.rounds.plan_round])
  picks the runners by share over time received and gives the GPUs left free
  to idle jobs (for the heterogeneity-agnostic policies, blind to which type
  is faster); each runner is placed on its type by the session's round
  (``Session.step``, every job re-placed: ``repack``); a runner advances at
  its measured steps/s on its type (a pair at its co-located rates,
  `alloc.sim.progress.GavelTable`) and finishes at the exact second its
  steps run out (its GPUs idle until the next round).
* Policies (registered shares policies, `alloc.sched.gavel`): ``gavel-las``
  is Gavel's LAS, which the paper
  (section 4.1) writes as max-min fairness over the jobs' normalised
  throughputs with per-job priority weights $w_m$ (1 here, as in the paper's
  simulations); the least-attained-service behaviour comes from the round
  mechanism, which runs first the jobs furthest below their share.
  ``gavel-las-agnostic`` is the same over the heterogeneity-agnostic
  throughputs; ``gavel-las-ss`` aware with space sharing (every pair of
  active jobs with measured co-located throughputs).  ``gavel-max-min`` is
  another name of ``gavel-las``; ``gavel-las-attained`` weighs each job by the
  inverse of its attained service (GPU-seconds, at least one round's worth),
  Tiresias' notion of LAS folded into the weights.  Also ``gavel-ftf``
  (finish-time fairness), ``gavel-max-sum``, ``gavel-makespan``,
  ``gavel-fifo``, ``gavel-isolated``, ``gavel-gandiva``, ``gavel-allox`` and
  ``gavel-water-filling``.

Finish-time fairness needs each job's isolated time so far: the seconds its
steps done would have taken at its isolated-share rate (accumulated per
round, `alloc.sched.timeshare`), so ``C_i + s_i/iso_i`` is its whole run on
its isolated share.
"""
from __future__ import annotations

import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError, SolverError
from ..kernel import LinearModel, solve
from ..model import Cluster, Server, Status
from ..shares.rounds import ROUND_S
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
    result : SimResult
        The simulator's result (timeline, summary).
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
    result: Any = None

    @property
    def mean_jct_h(self) -> float:
        """Mean JCT of the measured jobs that finished, in hours."""
        vals = [self.jct[i] for i in self.measured if i in self.jct]
        return float(np.mean(vals)) / 3600.0 if vals else float("nan")

    @property
    def unfinished(self) -> int:
        """Number of measured jobs that had not finished when the run stopped."""
        return sum(1 for i in self.measured if i not in self.jct)


def gavel_cluster(cluster: Mapping[str, int] = GAVEL_CLUSTER, per_server: int = 4) -> Cluster:
    """Servers of ``per_server`` GPUs (the last of a type takes the rest),
    ``cluster[type]`` GPUs of each type, 4000 milli-cores and 64000 MiB per GPU.

    Examples
    --------
    >>> from alloc.sim.gavel import gavel_cluster
    >>> c = gavel_cluster({"v100": 5, "k80": 2})
    >>> [(s.id, s.gpus, s.gpu_type) for s in c.servers]
    [('v100-0', 4, 'v100'), ('v100-1', 1, 'v100'), ('k80-0', 2, 'k80')]
    """
    servers = []
    for t, n in cluster.items():
        k, left = 0, int(n)
        while left > 0:
            g = min(per_server, left)
            servers.append(Server(f"{t}-{k}", cpu=4000 * g, mem=64000 * g, gpus=g, gpu_type=t))
            left -= g
            k += 1
    return Cluster(tuple(servers))


def simulate_gavel(policy: str, jobs: Sequence[GavelJob], table: ThroughputTable, *,
                   cluster: Mapping[str, int] = GAVEL_CLUSTER, round_s: float = ROUND_S,
                   window: tuple[int, int] | None = None, max_time_s: float | None = None,
                   time_limit: float = 30.0, seed: int = 0) -> GavelResult:
    """Simulate ``jobs`` under a shares policy of the registry (module notes).

    Parameters
    ----------
    policy : str
        A registered shares policy: Gavel's (``gavel-las``, ...,
        `alloc.sched.gavel`) or any other, with its defaults.
    jobs : sequence of GavelJob
        Sorted by arrival; ids are their positions.
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
    from ..sched import get_policy
    info = get_policy("shares", policy)
    from .core import simulate
    from .jobs import WorkloadJob
    from .progress import GavelTable
    lo, hi = window or (0, len(jobs))
    res = GavelResult(policy, measured=tuple(range(lo, min(hi, len(jobs)))))
    if not res.measured:
        return res
    shares = info.build(time_limit=time_limit, seed=seed)
    scale = table.scale if table.scale is not None else np.ones(len(table.models), dtype=int)
    work = [WorkloadJob(str(j.id), float(j.arrival_s), int(scale[j.model]), model=str(j.model),
                        work=float(j.steps)) for j in jobs]
    t0 = time.perf_counter()
    out = simulate(gavel_cluster(cluster), work, shares=shares, placement="proportional",
                   progress=GavelTable(table, reference=REFERENCE_TYPE), round_s=round_s,
                   window=(res.measured[0], res.measured[-1]), max_time_s=max_time_s,
                   seed=seed, name=f"gavel-{policy}")
    res.wall_time_s = time.perf_counter() - t0
    res.jct = {int(k): v for k, v in out.jct().items()}
    res.rounds = out.summary()["rounds"]
    res.end_time_s = out.end_time_s
    res.solve_s = out.summary()["time"]["policies_s"]
    res.peak_active = max((q + r for _, _, q, r in out.samples), default=0)
    res.statuses = dict(getattr(shares, "statuses", {}))
    res.result = out
    return res


__all__ = ["GAVEL_CLUSTER", "GavelJob", "GavelResult", "REFERENCE_TYPE", "ThroughputTable",
           "gavel_cluster", "gavel_workload", "saturation_rates", "shared_dir", "simulate_gavel",
           "throughputs_path"]
