"""Job orders (each round the runnable jobs are sorted by ``key``, smallest
first).  ``job`` is the engine's :class:`~alloc.sim.engine.JobState`.

* ``fifo`` — arrival time.
* ``srtf`` — shortest remaining work (seconds at proportional share).
* ``las`` — least attained service, in GPU-seconds (Tiresias' 2D-LAS).
* ``ftf`` — finish-time fairness (Themis): largest
  ``rho = (now - arrival + remaining) / work`` first, i.e. the job whose
  finish time is most stretched against running alone at its share.
* ``drf`` — smallest dominant share of the job's best-case demand,
  ``max(n/G, c/C, m/M)`` over the cluster totals.
* ``tetris`` — smallest remaining work weighted by the job's normalised
  best-case demand ``remaining * (n/G + c/C + m/M)`` (Tetris' SRTF-weighted
  packing score, as Synergy's Tetris baseline orders jobs).

Ties go to the earlier arrival, then the lower id.  A job that has not run
for ``STARVATION_S`` (1000 h) is put first, as in Synergy's schedulers.
"""
from __future__ import annotations

STARVATION_S = 1000 * 3600.0


def _fifo(j, now, tot):
    return (j.arrival, j.id)


def _srtf(j, now, tot):
    return (j.work - j.done, j.arrival, j.id)


def _las(j, now, tot):
    return (j.attained, j.arrival, j.id)


def _ftf(j, now, tot):
    rho = (now - j.arrival + (j.work - j.done)) / max(j.work, 1e-9)
    return (-rho, j.arrival, j.id)


def _drf(j, now, tot):
    G, C, M = tot
    return (max(j.gpus / G, j.ideal_cpu / C, j.ideal_mem / M), j.arrival, j.id)


def _tetris(j, now, tot):
    G, C, M = tot
    return ((j.work - j.done) * (j.gpus / G + j.ideal_cpu / C + j.ideal_mem / M),
            j.arrival, j.id)


ORDERS = {"fifo": _fifo, "srtf": _srtf, "las": _las, "ftf": _ftf, "drf": _drf,
          "tetris": _tetris}


def order_jobs(jobs, name: str, now: float, totals) -> list:
    key = ORDERS[name]
    starving = [j for j in jobs if now - j.last_run > STARVATION_S]
    if not starving:
        return sorted(jobs, key=lambda j: key(j, now, totals))
    return sorted(jobs, key=lambda j: (now - j.last_run <= STARVATION_S, key(j, now, totals)))
