r"""Safety properties of a simulated run (`alloc.sim.SimResult`), for any
stack of policies.

`run_problems` reads a run's per-job timeline and summary and returns one
line per breach (empty when every property holds).  With ``a_j`` the
arrival, ``s_j`` the start, ``e_j`` the end, ``d_j`` the run time alone
(``duration_s``) and ``R_j = [(b_k, f_k, g_k)]`` the runs (from, to, GPUs)
of a job ``j`` that finished:

* **every job once**: each workload job has one timeline row; none is left
  unfinished when the run had no time limit;
* **time goes forward**: ``a_j <= s_j <= e_j``; the runs are ordered and
  disjoint, ``b_1 = s_j``, ``f_last = e_j``, ``b_{k+1} >= f_k``;
* **no job beats its time alone** (``alone=True``: a progress model under
  which a job runs at most at its speed alone): ``e_j - a_j >= d_j`` and
  ``sum_k (f_k - b_k) >= d_j`` (work lost to a stop is run again, never
  skipped);
* **the GPUs it asked for**: ``g_k = gpus_j`` for every run (``sized=False``);
* **capacity** (``exclusive=True``: no mechanism packs jobs onto shared
  GPUs and no shares policy pairs them, so each job holds its GPUs at the
  share its row states): at every instant ``sum_j g_j * milli_j / 1000 <= G``,
  ``G`` the cluster's GPUs;
* **closed servers** (given the run's ``events``): no job starts on, or
  moves onto, a server at an instant ``t`` when it is drained or failed
  (the state after every server event at or before ``t``); a job running
  there at the drain runs on (``servers`` of the timeline: the servers at
  each start and each move);
* **the summary agrees with the timeline**: the preemptions add up, the
  average JCT is the rows' mean, the makespan spans the first arrival to
  the last end, utilisation lies in [0, 1].

Dropped jobs (a mechanism's ``drop``) are held to the first property only.

Examples
--------
>>> from alloc import Cluster, Server
>>> from alloc.sim import WorkloadJob, simulate
>>> from alloc.testing import run_problems
>>> cl = Cluster((Server("s0", cpu=32000, mem=256000, gpus=4),))
>>> w = [WorkloadJob("a", 0.0, 4, duration_s=100.0), WorkloadJob("b", 5.0, 2, duration_s=10.0)]
>>> run_problems(cl, w, simulate(cl, w, order="srtf"))
[]
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import InputError
from ..model import Cluster
from ..validate import short_repr

#: relative tolerance of the time comparisons (float sums of run lengths)
TOL = 1e-6


def run_problems(cluster: Cluster, workload: Sequence[Any], result: Any, *,
                 alone: bool = True, exclusive: bool = True, sized: bool = False,
                 bounded: bool = False, events: Sequence[Any] = ()) -> list[str]:
    """One line per breach of the run's safety properties (module notes).

    Parameters
    ----------
    cluster : Cluster
        The run's cluster (its GPUs bound the capacity check).
    workload : sequence of WorkloadJob
        The run's jobs (every one arrived).
    result : SimResult
        What `alloc.sim.simulate` returned.
    alone : bool
        No job runs faster than alone (the ``alone`` progress model).
    exclusive : bool
        No mechanism packs jobs onto shared GPUs and no shares policy pairs
        them (capacity checked; a run's rows do not say at which share each
        run held its GPUs).
    sized : bool
        A sizing policy may change jobs' GPU counts (the GPUs-asked check off).
    bounded : bool
        The run had a time limit (jobs may be left unfinished).
    events : sequence of ServerEvent
        The run's server events (fail, drain, undrain, restore).

    Returns
    -------
    list of str

    Raises
    ------
    InputError
        An item of ``events`` that is not a server event.
    """
    for e in events:
        if not all(hasattr(e, a) for a in ("at_s", "kind", "server")):
            raise InputError(f"events: expected ServerEvent items (at_s, kind, server), "
                             f"got {short_repr(e)}")
    rows = {x["id"]: x for x in result.timeline()}
    out: list[str] = []
    for j in workload:
        x = rows.get(j.id)
        if x is None:
            out.append(f"job {j.id!r}: no timeline row")
        elif x["end_s"] is None and not x["dropped"] and not bounded:
            out.append(f"job {j.id!r}: never finished")
    if len(rows) != len(workload):
        out.append(f"{len(rows)} timeline rows for {len(workload)} jobs")
    done = [(j, rows[j.id]) for j in workload
            if j.id in rows and rows[j.id]["end_s"] is not None and not rows[j.id]["dropped"]]
    for j, x in done:
        out += _job_problems(j, x, alone, sized)
    if exclusive:
        out += _capacity_problems(cluster, [x for _, x in done])
    if events:
        out += _closed_problems(list(rows.values()), events)
    return out + _summary_problems(result.summary(), rows, done)


def _job_problems(j: Any, x: dict, alone: bool, sized: bool) -> list[str]:
    out = []
    a, s, e, runs = x["arrival_s"], x["start_s"], x["end_s"], x["runs"]
    slack = TOL * max(1.0, e)
    if not (a - slack <= s <= e + slack):
        out.append(f"job {j.id!r}: arrival {a}, start {s}, end {e} out of order")
    if not runs or abs(runs[0][0] - s) > slack or abs(runs[-1][1] - e) > slack:
        out.append(f"job {j.id!r}: runs {runs} do not span its start {s} and end {e}")
    last, ran = s, 0.0
    for b, f, g in runs:
        if b < last - slack or f < b - slack:
            out.append(f"job {j.id!r}: runs {runs} overlap or go back in time")
            break
        last, ran = f, ran + (f - b)
        if not sized and g != j.gpus:
            out.append(f"job {j.id!r}: a run on {g} GPUs, asked for {j.gpus}")
    d = j.duration_s
    if alone and d is not None:
        need = d - TOL * max(1.0, d)
        if e - a < need:
            out.append(f"job {j.id!r}: JCT {e - a} below its time alone {d}")
        if ran < need:
            out.append(f"job {j.id!r}: ran {ran} s, less than its time alone {d}")
    return out


def _capacity_problems(cluster: Cluster, rows: list[dict]) -> list[str]:
    total = sum(s.gpus for s in cluster.servers)
    edges = []
    for x in rows:
        share = x.get("gpu_milli", 1000) / 1000
        for b, f, g in x["runs"]:
            if f > b:
                edges += [(b, 1, g * share), (f, 0, -g * share)]
    held = 0.0
    for t, _, dg in sorted(edges):
        held += dg
        if held > total + TOL:
            return [f"{held:g} GPUs held at {t} s, the cluster has {total}"]
    return []


def _closed_problems(rows: list[dict], events: Sequence[Any]) -> list[str]:
    """Starts and moves onto a server while it is closed."""
    changes: dict[str, list[tuple[float, str]]] = {}
    for e in sorted(events, key=lambda e: e.at_s):
        changes.setdefault(e.server, []).append((e.at_s, e.kind))

    def state(sid: str, t: float) -> str | None:
        kinds = [k for at, k in changes.get(sid, ()) if at <= t]
        last = kinds[-1] if kinds else None
        return {"drain": "drained", "fail": "failed"}.get(last or "")

    out = []
    for x in rows:
        starts = {b for b, _, _ in x["runs"]}
        before: set[str] = set()
        for t, servers in x.get("servers", ()):
            new = set(servers) if t in starts else set(servers) - before
            for sid in sorted(new):
                why = state(sid, t)
                if why:
                    out.append(f"job {x['id']!r}: onto server {sid!r} at {t} s while it "
                               f"was {why}")
            before = set(servers)
    return out


def _summary_problems(s: dict, rows: dict, done: list) -> list[str]:
    out = []
    pre = sum(x["preemptions"] for x in rows.values())
    if pre != s["preemptions"]:
        out.append(f"summary: {s['preemptions']} preemptions, the rows add up to {pre}")
    if not -TOL <= s["utilisation"] <= 1 + TOL:
        out.append(f"summary: utilisation {s['utilisation']} outside [0, 1]")
    if done and len(done) == len(rows) and all(x["measured"] for x in rows.values()):
        jct = [x["end_s"] - x["arrival_s"] for _, x in done]
        mean = sum(jct) / len(jct)
        if abs(s["avg_jct_s"] - mean) > TOL * max(1.0, mean):
            out.append(f"summary: average JCT {s['avg_jct_s']}, the rows' mean is {mean}")
        span = max(x["end_s"] for _, x in done) - min(x["arrival_s"] for _, x in done)
        if abs(s["makespan_s"] - span) > TOL * max(1.0, span):
            out.append(f"summary: makespan {s['makespan_s']}, the rows span {span}")
    return out


__all__ = ["TOL", "run_problems"]
