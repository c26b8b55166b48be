r"""POP: partitioned optimisation (Narayanan et al., SOSP'21).

A granular allocation problem -- many jobs, each asking for a small share of
a large pool -- is split into ``k`` sub-problems, each with ``1/k`` of the
jobs and ``1/k`` of the resources, solved independently (in parallel) and
the sub-allocations put together:

1. **Partition** the jobs: ``round-robin`` (job ``i`` to part ``i mod k``,
   the POP artifact's cluster harness) or ``random`` (each job to a part
   drawn uniformly and independently, seeded: POP's default, so parts differ
   in size by chance).
2. **Resources**: each part gets $\lfloor n_j / k \rfloor$ GPUs of each
   type ``j`` (the remainder is left idle, as in POP).
3. **Solve** each part with the inner policy (`alloc.sched.pop.classes`:
   Gavel's max-min fairness with space sharing; pairs only within a part),
   in worker processes (``parallel="process"``), in Ray tasks (``"ray"``,
   when Ray is installed) or one after the other (``"serial"``).
4. **Coalesce**: a job's shares are its part's shares; pairs across parts
   get nothing.  The whole is feasible because the parts' GPUs add up to at
   most the cluster's.

POP's runtime is the partitioning plus the *slowest* part
(``setup_s + max(part_s)``, the parts solved side by side); ``wall_s`` is the
time the call took on this machine with its pool.  POP is a heuristic: its
result is ``feasible`` (``k = 1`` is the exact problem).

Units: seconds, GPUs, fractions of wall-clock time.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
import numpy as np

from ...deadline import Deadline
from ...errors import InputError
from ...model import Status
from .classes import INNER, PairedShares, solve_classes
from .problem import PairedProblem

#: How jobs are split into parts.
PARTITIONS = ("round-robin", "random")
#: Where the parts are solved.
PARALLEL = ("process", "ray", "serial")


def partition(m: int, k: int, how: str = "round-robin", seed: int = 0) -> np.ndarray:
    """Each job's part, ``0 .. k-1`` (see the module notes).

    Parameters
    ----------
    m : int
        Number of jobs.
    k : int
        Number of parts (>= 1).
    how : {"round-robin", "random"}
    seed : int
        Seed of ``random``.

    Returns
    -------
    ndarray of int (m,)

    Examples
    --------
    >>> from alloc.sched.pop.partition import partition
    >>> partition(5, 2).tolist()
    [0, 1, 0, 1, 0]
    >>> len(partition(5, 2, "random", seed=3))
    5
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"k: expected an integer >= 1, got {k!r}")
    if how == "round-robin":
        return np.arange(m) % k
    if how == "random":
        return np.random.default_rng(seed).integers(0, k, size=m)
    raise InputError(f"partition: expected one of {', '.join(PARTITIONS)}, got {how!r}")


@dataclass(frozen=True, eq=False)
class PopShares:
    """POP's coalesced shares and its timings.

    Attributes
    ----------
    shares : PairedShares
        Job-level shares of the whole problem (checked).
    parts : ndarray of int (m,)
        Each job's part.
    setup_s : float
        Partitioning and building the parts (s).
    part_s : tuple of float
        Each part's solve time, measured where it ran (s).
    wall_s : float
        The whole call on this machine (s).
    part_levels : tuple of float or None
        Each part's max-min level.
    stats : dict
    """
    shares: PairedShares
    parts: np.ndarray
    setup_s: float
    part_s: tuple
    wall_s: float
    part_levels: tuple = ()
    stats: dict = field(default_factory=dict)

    @property
    def runtime_s(self) -> float:
        """POP's runtime: partitioning plus the slowest part (s)."""
        return self.setup_s + max(self.part_s, default=0.0)


def _solve_part(args: tuple) -> tuple:
    """Solve one part (a worker's entry point): plain arrays back."""
    sub, inner, seconds = args
    t0 = time.perf_counter()
    r = solve_classes(sub, inner, Deadline.after(max(seconds, 1e-3)))
    return (r.X, r.pa, r.pb, r.Y, r.status.value, r.objective, time.perf_counter() - t0)


def _map(tasks: list, parallel: str, workers: int | None) -> list:
    if parallel == "serial" or len(tasks) <= 1:
        return [_solve_part(t) for t in tasks]
    if parallel == "process":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        n = workers or min(len(tasks), os.cpu_count() or 1)
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            return list(pool.map(_solve_part, tasks))
    if parallel == "ray":
        try:
            import ray
        except ImportError:
            raise InputError("parallel: 'ray' needs the ray package (pip install ray)") from None
        if not ray.is_initialized():
            ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False,
                     log_to_driver=False, ignore_reinit_error=True)
        remote = ray.remote(_solve_part)
        return ray.get([remote.remote(t) for t in tasks])
    raise InputError(f"parallel: expected one of {', '.join(PARALLEL)}, got {parallel!r}")


def pop_solve(p: PairedProblem, k: int, *, how: str = "round-robin", inner: str = "water-filling",
              seed: int = 0, parallel: str = "process", workers: int | None = None,
              deadline: Deadline | None = None) -> PopShares:
    """POP-``k`` on ``p`` (see the module notes).

    Parameters
    ----------
    p : PairedProblem
    k : int
        Number of parts (1: the exact problem, solved in this process).
    how : {"round-robin", "random"}
    inner : {"water-filling", "max-min"}
        The policy each part solves (`alloc.sched.pop.classes.solve_classes`).
    seed : int
        Seed of the random partition.
    parallel : {"process", "ray", "serial"}
    workers : int, optional
        Worker processes (default: one per part, at most the CPUs).
    deadline : Deadline, optional
        Each part gets the time left on it (default 60 s).

    Returns
    -------
    PopShares
        ``shares.status`` is ``feasible`` for ``k > 1`` (POP proves nothing
        about the whole), the exact status for ``k = 1``.

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.partition import pop_solve
    >>> p = PairedProblem.build(("v100",), [4], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 1, 0, 1, 0, 1])
    >>> r = pop_solve(p, 2, parallel="serial")
    >>> r.parts.tolist(), r.shares.status.value, r.shares.violations()
    ([0, 1, 0, 1, 0, 1], 'feasible', [])
    """
    t0 = time.perf_counter()
    if inner not in INNER:
        raise InputError(f"inner: expected one of {', '.join(INNER)}, got {inner!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise InputError(f"workers: expected an integer >= 1, got {workers!r}")
    deadline = deadline or Deadline.after(None)
    parts = partition(p.m, k, how, seed)
    if k == 1:
        r = solve_classes(p, inner, deadline)
        return PopShares(r, parts, 0.0, (r.wall_time_s,), time.perf_counter() - t0,
                         (r.objective,), {"k": 1})
    cap = np.floor(p.capacity / k)
    members = [np.flatnonzero(parts == i) for i in range(k)]
    subs = [p.subset(idx, cap) for idx in members]
    setup = time.perf_counter() - t0
    left = deadline.left()
    tasks = [(s, inner, left) for s, idx in zip(subs, members) if len(idx)]
    out = _map(tasks, parallel, workers)
    X = np.zeros((p.m, p.k))
    pa: list[np.ndarray] = []
    pb: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    times, levels, statuses = [], [], []
    for idx, (Xs, a, b, Ys, st, level, secs) in zip([m for m in members if len(m)], out):
        X[idx] = Xs
        pa.append(idx[a])
        pb.append(idx[b])
        Y.append(Ys)
        times.append(secs)
        levels.append(level)
        statuses.append(st)
    status = Status.FEASIBLE if all(s in ("optimal", "feasible") for s in statuses) else Status.UNKNOWN
    shares = PairedShares(p, X, np.concatenate(pa), np.concatenate(pb),
                          np.concatenate(Y) if Y else np.zeros((0, p.k)), status, None,
                          time.perf_counter() - t0,
                          {"k": k, "partition": how, "part_status": statuses})
    bad = shares.violations()
    if bad:
        from ...errors import SolverError
        raise SolverError(f"POP's coalesced shares break a rule: {bad[0]}")
    return PopShares(shares, parts, setup, tuple(times), time.perf_counter() - t0, tuple(levels),
                     {"k": k, "partition": how, "parallel": parallel,
                      "part_sizes": [int(len(m)) for m in members]})


def _solve_shares_part(args: tuple) -> tuple:
    """Solve one part of an ``alloc.shares/1`` problem (a worker's entry point)."""
    from ...shares.policies import solve_shares
    sub, policy, seconds, seed, options = args
    t0 = time.perf_counter()
    r = solve_shares(sub, policy, time_limit=max(seconds, 1e-3), seed=seed, **options)
    Y = r.Y if r.Y is not None else np.zeros((0, sub.k))
    return r.X, Y, r.status.value, r.objective, time.perf_counter() - t0


def pop_shares(problem, k: int, policy: str = "max-min", *, how: str = "round-robin",
               seed: int = 0, parallel: str = "process", workers: int | None = None,
               time_limit: float | None = None, **options) -> tuple:
    """POP-``k`` of any share policy of [`alloc.shares`][alloc.shares] on an
    ``alloc.shares/1`` problem with its pairs written out: each part is the
    jobs of the part, the pairs within it and $\\lfloor n_j/k \\rfloor$
    GPUs of each type, solved by
    [`solve_shares`][alloc.shares.policies.solve_shares] (checked).

    Parameters
    ----------
    problem : SharesProblem
    k : int
    policy : str
        A name of `alloc.shares.POLICIES`.
    how, seed, parallel, workers
        As `pop_solve`.
    time_limit : float, optional
        Seconds for each part (default 60).
    **options
        The policy's options.

    Returns
    -------
    X : ndarray (m, k)
    Y : ndarray (P, k)
        Shares of the problem's pairs (0 across parts).
    info : dict
        ``parts`` (each job's part), ``setup_s``, ``part_s``, ``wall_s``,
        ``runtime_s`` (setup plus the slowest part), ``part_status``.

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.partition import pop_shares
    >>> p = PairedProblem.build(("v100",), [4], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 1, 0, 1]).to_shares()
    >>> X, Y, info = pop_shares(p, 2, parallel="serial")
    >>> X.shape, Y.shape, info["part_status"]
    ((4, 1), (4, 1), ['optimal', 'optimal'])
    """
    from ...shares.check import pair_arrays
    from ...shares.io import Pair, SharesProblem
    t0 = time.perf_counter()
    p: SharesProblem = problem
    parts = partition(p.m, k, how, seed)
    a, b, _ = pair_arrays(p, runnable=False)
    cap = np.floor(p.capacity / k)
    subs, members, pair_idx = [], [], []
    for i in range(k):
        idx = np.flatnonzero(parts == i)
        if not len(idx):
            continue
        local = np.full(p.m, -1)
        local[idx] = np.arange(len(idx))
        qs = np.flatnonzero((parts[a] == i) & (parts[b] == i)) if len(a) else np.zeros(0, dtype=int)
        pairs = tuple(Pair(int(local[a[q]]), int(local[b[q]]), p.pairs[q].throughput) for q in qs)
        sub = SharesProblem(p.gpu_types, cap, tuple(p.job_ids[j] for j in idx),
                            p.scale_factor[idx], p.weight[idx], p.throughput[idx],
                            p.steps_remaining[idx], p.elapsed_s[idx], p.isolated_time_s[idx],
                            tuple(p.tenant[j] for j in idx) if p.tenant else (), pairs,
                            p.tenants, p.name)
        subs.append(sub)
        members.append(idx)
        pair_idx.append(qs)
    setup = time.perf_counter() - t0
    seconds = 60.0 if time_limit is None else float(time_limit)
    tasks = [(s, policy, seconds, seed, options) for s in subs]
    if parallel == "serial" or len(tasks) <= 1:
        out = [_solve_shares_part(t) for t in tasks]
    elif parallel == "process":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        n = workers or min(len(tasks), os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("fork")) as pool:
            out = list(pool.map(_solve_shares_part, tasks))
    else:
        raise InputError(f"parallel: expected 'process' or 'serial', got {parallel!r}")
    X = np.zeros((p.m, p.k))
    Y = np.zeros((len(p.pairs), p.k))
    times, statuses = [], []
    for idx, qs, (Xs, Ys, st, _obj, secs) in zip(members, pair_idx, out):
        X[idx] = Xs
        if len(qs):
            Y[qs] = Ys
        times.append(secs)
        statuses.append(st)
    return X, Y, {"parts": parts, "setup_s": setup, "part_s": times,
                  "wall_s": time.perf_counter() - t0, "runtime_s": setup + max(times, default=0.0),
                  "part_status": statuses}


def ratio_stats(num: np.ndarray, den: np.ndarray, mask: np.ndarray | None = None
                ) -> tuple[float, float]:
    """Mean and standard deviation of ``num / den`` over the jobs of
    ``mask`` with ``den > 0`` (POP's quality measure: each job's effective
    throughput over its throughput in the unpartitioned optimum).

    Examples
    --------
    >>> import numpy as np
    >>> from alloc.sched.pop.partition import ratio_stats
    >>> ratio_stats(np.array([1.0, 0.5]), np.array([1.0, 1.0]))
    (0.75, 0.25)
    """
    keep = den > 0 if mask is None else mask & (den > 0)
    r = num[keep] / den[keep]
    return (float(r.mean()), float(r.std())) if len(r) else (float("nan"), float("nan"))


__all__ = ["PARALLEL", "PARTITIONS", "PopShares", "partition", "pop_shares", "pop_solve", "ratio_stats"]
