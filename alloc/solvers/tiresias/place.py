r"""Consolidated and profile-based placement (Tiresias, Gu et al., NSDI'19).

Jobs are taken in the caller's order (`rank_order`: rank, then index); the
running jobs stay where they are.  For a job of $n$ whole GPUs, with $G$
the most GPUs of a server the job may use:

* **consolidated** (YARN-CS, and Tiresias for skewed models): if $n \le G$,
  the first server (index order) with $n$ whole free GPUs; else
  $\lfloor n/G \rfloor$ *idle* servers of $G$ GPUs (all free, index order)
  and, when $r = n \bmod G > 0$, the first other server with $r$ free GPUs
  -- the fewest servers that can hold the job, as YARN's
  ``ms_yarn_placement`` allocates (the artifact's ``switch.py``).  No such
  servers: the job cannot be placed now, even when $n$ GPUs are free
  elsewhere (the cost of consolidation the paper measures).
* **least fragmentation** (Tiresias for the other models, §3.3.2): the
  server with the fewest whole free GPUs that holds the job alone (ties: the
  lowest index); if none, GPUs from the servers with the fewest whole free
  GPUs first (filling partly used servers, keeping idle ones whole).
* a job with a ``locality`` level, a GPU share or no GPU: the shared first
  fit (`alloc.engines.greedy.rules.first_fit`).

CPU and memory follow the GPUs (split in proportion over the servers);
a server that cannot give them is passed over.

``yarn`` stops at the first job it cannot place unless ``skip`` is true
(YARN-CS's head-of-line blocking versus Best-effort).  ``tiresias``
consolidates a job when its model's skew $S_J$ (Table 6's largest tensor
ratio, `alloc.sched.tiresias.models`) exceeds ``packlimit`` -- or when
the caller names the job in ``skewed`` (the profiler's verdict, for jobs
whose model alloc has no profile of) -- and skips a job
that does not fit (the scheduler's ranking already decided who may run).
"""
from __future__ import annotations

import numpy as np

from ...deadline import Deadline
from ...model import MILLI
from ...problem import Assign, Problem, Solution
from ...engines.greedy.state import State
from ...engines.greedy.rules import first_fit, rank_order


def _plain(st: State, j: int) -> bool:
    job = st.p.jobs[j]
    return job.gpus > 0 and job.gpu_milli == MILLI and job.locality is None


def _usable(st: State, j: int) -> list[int]:
    """The servers job j may use, ascending."""
    return st.p.allowed_servers(j).tolist()


def consolidated(st: State, j: int) -> Assign | None:
    """Job j on the fewest servers (see the module notes), or None."""
    if not _plain(st, j):
        return first_fit(st, j, 0)
    n = st.p.jobs[j].gpus
    servers = _usable(st, j)
    if not servers:
        return None
    size = st.lay.ngpu
    g = max(size[s] for s in servers)
    if n <= g:
        for s in servers:
            if st.whole[s] >= n:
                a = st.try_server(j, s, 0)
                if a is not None:
                    return a
        return None
    k, r = divmod(n, g)
    idle = [s for s in servers if size[s] == g and st.whole[s] == g][:k]
    if len(idle) < k:
        return None
    ordered = [(s, g) for s in idle]
    if r:
        rest = next((s for s in servers if s not in idle and st.whole[s] >= r), None)
        if rest is None:
            return None
        ordered.append((rest, r))
    return st.take(j, 0, ordered)


def least_fragmenting(st: State, j: int) -> Assign | None:
    """Job j where it leaves the least fragmentation (module notes), or None."""
    if not _plain(st, j):
        return first_fit(st, j, 0)
    n = st.p.jobs[j].gpus
    idx = st.p.allowed_servers(j)
    whole = st.arrays()["whole"][idx]
    idx, whole = idx[whole > 0], whole[whole > 0]
    by = np.lexsort((idx, whole))                 # fewest whole free GPUs, then index
    servers = list(zip(whole[by].tolist(), idx[by].tolist()))
    for w, s in servers:
        if w >= n:
            a = st.try_server(j, s, 0)
            if a is not None:
                return a
    if n < 2:
        return None
    return st.take(j, 0, [(s, w) for w, s in servers])


def _run(problem: Problem, deadline: Deadline, pick, stop: bool) -> Solution:
    st = State(problem)
    stats: dict = {}
    for k, j in enumerate(rank_order(problem)):
        if k % 64 == 0 and deadline.expired():
            stats["stopped"] = "time limit"
            break
        a = pick(st, j)
        if a is not None:
            st.place(j, a, 0)
        elif stop:
            stats["blocked_by"] = problem.jobs[j].id
            break
    return st.solution(**stats)


def solve_yarn(problem: Problem, *, deadline: Deadline, seed: int = 0,
               skip: bool = False) -> Solution:
    """YARN-CS's consolidated placement in the caller's order.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> c = Cluster(tuple(Server(f"s{i}", 8000, 8000, 4) for i in range(2)))
    >>> busy = allocate(c, [Job("r", 2)], solver="yarn").placements[0]
    >>> from dataclasses import replace
    >>> jobs = [replace(Job("r", 2), current=busy), Job("wide", 8), Job("small", 1)]
    >>> res = allocate(c, jobs, solver="yarn")      # wide needs 2 idle servers: all wait
    >>> sorted(p.job for p in res.placements), res.unplaced
    (['r'], ('wide', 'small'))
    >>> res = allocate(c, jobs, solver="yarn", skip=True)   # Best-effort: small jumps
    >>> sorted(p.job for p in res.placements), res.unplaced
    (['r', 'small'], ('wide',))
    """
    return _run(problem, deadline, consolidated, stop=not skip)


def solve_tiresias(problem: Problem, *, deadline: Deadline, seed: int = 0,
                   packlimit: float = 0.5, skewed=None) -> Solution:
    """Tiresias' profile-based placement in the caller's order.

    A job is consolidated when its id is in ``skewed`` or its ``model`` has
    a skew above ``packlimit`` (Table 6).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> c = Cluster(tuple(Server(f"s{i}", 8000, 8000, 4) for i in range(2)))
    >>> r = allocate(c, [Job("a", 3), Job("b", 3), Job("vgg", 2), Job("res", 2)],
    ...              solver="tiresias", skewed=["vgg"])
    >>> {p.job: sorted({g.gpu.split("/")[0] for g in p.gpus}) for p in r.placements}
    {'a': ['s0'], 'b': ['s1'], 'res': ['s0', 's1']}
    >>> r.unplaced                                      # the skewed model waits
    ('vgg',)
    """
    from ...sched.tiresias.models import consolidate
    marked = set(skewed or ())

    def pick(st: State, j: int) -> Assign | None:
        job = st.p.jobs[j]
        if job.id in marked or consolidate(job.model, packlimit):
            return consolidated(st, j)
        return least_fragmenting(st, j)
    return _run(problem, deadline, pick, stop=False)


__all__ = ["consolidated", "least_fragmenting", "solve_tiresias", "solve_yarn"]
