r"""From a shares policy's fractions to a round's placements: Gavel's round
mechanism ([`plan_round`][alloc.shares.rounds.plan_round]) inside the
simulator.

Each round the shares policy gives every active job ``i`` (and every pair
``q`` of jobs sharing GPUs) a fraction of time $X_{ij}$ on each GPU type
``j``.  The runners of the round are picked by the priority
$X_{ij}/R_{ij}$, $R_{ij}$ the fraction of time since its arrival that it
(or the pair) has run on type ``j`` (the simulator credits each runner the
seconds it held its GPUs in the round); GPUs left free go to idle jobs,
least time received first (work conservation, with the agnostic rates for a
heterogeneity-agnostic policy).  Each solo runner becomes a candidate of
the session's round with ``gpu_types`` set to its type; a pair's first job
is placed by the round on whole GPUs of its type, then both jobs of the pair
are put on those GPUs with 500 milli-GPU each (the session's ``reconcile``,
checked).  The round re-places every job (``repack``): a runner placed where
it ran keeps running, one not picked stops.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from ..sched.kinds import Context
from ..sched.timeshare import shares_problem

#: Milli-GPU of each job of a pair sharing its GPUs.
PAIR_MILLI = 500


def _credit(sim: Any) -> None:
    """Credit last round's runners the seconds they held their GPUs."""
    now = sim.now
    for key, typ, t0, members in getattr(sim, "_share_prev", ()):
        r = sim.records.get(members[0])
        if r is None:
            r = sim._finished_by_id.get(members[0])
            end = r.finish_s if r is not None and r.finish_s is not None else now
        else:
            end = now if r.running else (r.stopped_s or now)
        got = sim._received.setdefault(key, {})
        got[typ] = got.get(typ, 0.0) + max(0.0, min(end, now) - t0)
    sim._share_prev = []


def _rows(X: Mapping[str, Mapping[str, float]], keys: Any, types: Any) -> np.ndarray:
    """``X[key][type]`` for each key (a row) and GPU type (a column); 0 where
    the policy gives none."""
    empty: Mapping[str, float] = {}
    return np.array([[(X.get(key) or empty).get(t, 0.0) for t in types] for key in keys],
                    dtype=float).reshape(len(keys), len(types))


def _set(sim: Any, r: Any, typ: str, milli: int) -> None:
    if r.gpu_type != typ or r.milli != milli:
        r.gpu_type, r.milli = typ, milli
        sim._remove(r)


def share_round(sim: Any, pool: list, ctx: Context) -> tuple[list, dict]:
    """The round's candidates (in the plan's order) and its pairs
    (``"a+b"`` -> GPU type)."""
    from ..shares.check import agnostic_throughputs
    from ..shares.io import pair_key
    from ..shares.rounds import plan_round
    _credit(sim)
    slot = sim.shares
    X = sim._call(slot, slot.obj.shares, pool, ctx) or {}
    ids = tuple(r.id for r in pool)
    p = getattr(slot.obj, "last_problem", None)
    if p is None or tuple(p.job_ids) != ids:
        p = shares_problem(pool, ctx, pairs=any("+" in k for k in X))
    m = p.m
    if m == 0:
        return [], {}
    types = p.gpu_types
    Xa = _rows(X, p.job_ids, types)
    keys = [pair_key(p, q) for q in p.pairs]
    Y = _rows(X, keys, types) if p.pairs else None
    now = sim.now
    span = np.array([max(now - r.arrival_s, 1e-9) for r in pool])
    R = np.array([[sim._received.get(jid, {}).get(t, 0.0) for t in p.gpu_types]
                  for jid in p.job_ids]) / span[:, None]
    RP = None
    if keys:
        first = {jid: i for i, jid in enumerate(p.job_ids)}
        RP = np.array([[sim._received.get(key, {}).get(t, 0.0) for t in p.gpu_types]
                       for key in keys]) / np.array([span[first[key.split("+")[0]]]
                                                     for key in keys])[:, None]
    fill = agnostic_throughputs(p)[0] if getattr(slot.obj, "agnostic", False) else None
    plan = plan_round(p, Xa, R, RP, Y, fill_rates=fill)
    recs = sim.records
    cands: list = []
    pairs: dict[str, str] = {}
    units: list[tuple[str, str, tuple[str, ...]]] = []
    for jid, typ in plan.jobs.items():
        r = recs[jid]
        _set(sim, r, typ, 1000)
        cands.append(r)
        units.append((jid, typ, (jid,)))
    for key, typ in plan.pairs.items():
        a, b = key.split("+")
        ra, rb = recs[a], recs[b]
        _set(sim, ra, typ, 1000)
        _set(sim, rb, typ, PAIR_MILLI)
        cands.append(ra)
        pairs[key] = typ
        units.append((key, typ, (a, b)))
    sim._share_units = units
    return cands, pairs


def place_pairs(sim: Any, res: Any, pairs: Mapping[str, str]) -> Any:
    """Put each pair on the GPUs its first job got this round, 500 milli-GPU
    each (the session's ``stop``, ``submit`` and ``reconcile``); the round's
    result with the pairs' placements in ``start``."""
    sess = sim.session
    started = {p.job: p for p in res.start}
    want: dict[str, list[str]] = {}
    for key in pairs:
        a, b = key.split("+")
        p = started.get(a)
        if p is None:
            continue
        gpus = [g.gpu for g in p.gpus]
        ra, rb = sim.records[a], sim.records[b]
        sess.stop(a)
        ra.in_session = False
        ra.milli = PAIR_MILLI
        sim._submit(ra)
        if not rb.in_session:
            sim._submit(rb)
        want[a] = want[b] = gpus
    if not want:
        return res
    sess.reconcile({**{j: None for j in sess.running}, **want}, where="pairs")
    new = {j: sess.jobs[j].current for j in want}
    start = tuple(new.get(p.job, p) for p in res.start) + \
        tuple(new[j] for j in want if j not in started)
    return replace(res, start=start)


def note_runners(sim: Any) -> None:
    """Remember this round's runners that hold GPUs (credited next round)."""
    now = sim.now
    sim._share_prev = [(key, typ, now, members) for key, typ, members in
                       getattr(sim, "_share_units", ())
                       if all(sim.records[m].running for m in members if m in sim.records)]


__all__ = ["PAIR_MILLI", "note_runners", "place_pairs", "share_round"]
