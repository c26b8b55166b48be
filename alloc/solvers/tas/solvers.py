r"""Kueue's and Slurm's topology-aware placement on alloc's hierarchy.

Both run the descent of `alloc.engines.greedy.descent` (Kueue's algorithm,
kubernetes-sigs/kueue ``pkg/cache/tas_flavor_snapshot.go``, with one pod per
GPU: a server's count is its usable GPUs, as many whole free GPUs of an
allowed type as its free CPU and memory cover at the job's per-GPU share),
job by job in rank order (priority, then input order, or the caller's
order) on the capacity the running jobs leave:

``kueue-tas``
    * ``locality = L`` (Kueue's ``podset-required-topology``): the best-fit
      domain of ``L`` (the fewest usable GPUs that hold the job), else the
      job waits;
    * ``preferred = P`` (``podset-preferred-topology``): the best-fit domain
      of ``P``; if none holds it, of the level above, and so on; at the
      outermost level several domains, most usable first;
    * neither (an *unconstrained* pod set): the servers, most usable first,
      the last one the best fit for what is left.

``slurm-topology``
    Slurm's ``topology/tree`` ("identify the lowest level switch in the
    hierarchy that can satisfy a job's request and then allocate resources
    on its underlying leaf switches using a best-fit algorithm", Slurm's
    topology guide) and ``topology/block`` (jobs kept in the smallest block
    that holds them): every job starts at the server level -- one node,
    best fit -- and climbs until one domain holds it; a locality is a
    required level (``--switches=1``, or one segment).

Below the chosen domain both take, level by level, the fewest child domains
(most usable first, the last one the best fit).  A level below the server
(``socket``, ``switch``) is not one of theirs: a job that requires or
prefers one gets one server (best fit) whose GPUs are taken inside one such
node when one holds them (alloc's greedy rule).  Jobs without GPUs go to the
best-fit server.
"""
from __future__ import annotations

from ...deadline import Deadline
from ...model import MILLI
from ...problem import Assign, Problem, Solution
from ...topology import climb, is_outer
from ...engines.greedy.state import State
from ...engines.greedy.rules import best_fit, leftover_score, rank_order
from ...engines.greedy.index import Shape
from ...engines.greedy.descent import domain_tree, tas_assign

INSIDE = ("socket", "switch", "gpu")


def _place(st: State, j: int, level: str | None, required: bool) -> Assign | None:
    p = st.p
    job = p.jobs[j]
    if job.gpus == 0 or job.gpu_milli < MILLI:
        return best_fit(st, j, 0)
    if level in INSIDE:
        return _inside(st, j, level) or (None if required else best_fit(st, j, 0))
    return tas_assign(st, j, 0, level, required)


def _inside(st: State, j: int, level: str) -> Assign | None:
    """Job j on the best-fit server (least normalised leftover, then index)
    with one node of ``level`` (socket, switch) that holds its GPUs."""
    p = st.p
    if level not in st.lay.levels:
        return None
    sh = st.shape(j, 0)
    inner = Shape(sh.k, sh.q, sh.c, sh.m, level, sh.ok, sh.key + ("inside", level))
    best, key = None, None
    for s in range(p.S):
        if not st.passes(inner, s):
            continue
        a = st.assign_on(j, s, inner)
        k = (leftover_score(st, s, a), s)
        if key is None or k < key:
            best, key = a, k
    return best


def _inside_first(st: State, j: int) -> Assign | None:
    """A job preferring a level inside the server (inside its locality
    level, if any): one node of it on the best-fit server, when one holds it."""
    job = st.p.jobs[j]
    if job.preferred in INSIDE and job.gpus > 1 and job.gpu_milli >= MILLI and \
            (job.locality is None or climb(st.p.cluster, job.locality, job.preferred) == 0):
        return _inside(st, j, job.preferred)   # one such node lies in one of its locality
    return None


def kueue_pick(st: State, j: int) -> Assign | None:
    """Job j placed as Kueue's topology-aware scheduling does (module notes)."""
    job = st.p.jobs[j]
    inside = _inside_first(st, j)
    if inside is not None:
        return inside
    if job.locality is not None:
        return _place(st, j, job.locality, required=True)
    if job.preferred is not None:
        return _place(st, j, job.preferred, required=False)
    return _place(st, j, None, required=False)


def slurm_pick(st: State, j: int) -> Assign | None:
    """Job j placed as Slurm's topology plugins do (module notes)."""
    job = st.p.jobs[j]
    inside = _inside_first(st, j)
    if inside is not None:
        return inside
    if job.locality is not None and job.locality != "server":
        if is_outer(job.locality):
            # the lowest level first, but never beyond one domain of the locality
            tree = domain_tree(st.p)
            return tas_assign(st, j, 0, "server", required=False,
                              top=tree.index(job.locality)) \
                if job.gpus and job.gpu_milli >= MILLI else best_fit(st, j, 0)
        return _place(st, j, job.locality, required=True)
    if job.locality == "server":
        return _place(st, j, "server", required=True)
    return _place(st, j, "server", required=False)


def _solve(problem: Problem, pick, deadline: Deadline) -> Solution:
    st = State(problem)
    for k, j in enumerate(rank_order(problem)):
        if k % 32 == 0 and deadline.expired():
            return st.solution(stopped="time limit")
        a = pick(st, j)
        if a is not None:
            st.place(j, a, 0)
    return st.solution()


def solve_kueue(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``kueue-tas`` (see the module notes)."""
    return _solve(problem, kueue_pick, deadline)


def solve_slurm(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``slurm-topology`` (see the module notes)."""
    return _solve(problem, slurm_pick, deadline)


__all__ = ["kueue_pick", "slurm_pick", "solve_kueue", "solve_slurm"]
