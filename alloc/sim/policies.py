"""Job orders (each round the runnable jobs are sorted by ``key``, smallest
first).  ``job`` is the engine's `JobState`.

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
* ``tiresias`` — Tiresias' discretised 2D-LAS (Gu et al., NSDI'19): queue
  index of the job's 2D attained service, FIFO within a queue, starving jobs
  promoted to the first queue (`tiresias_key`).

Ties go to the earlier arrival, then the lower id.  A job that has not run
for ``STARVATION_S`` (1000 h) is put first, as in Synergy's schedulers.

``STATIC`` lists the orders whose key of a job does not change while the job
waits (it depends only on the job's own progress); the engine keeps the
waiting jobs of those orders sorted incrementally (`IncrementalOrder`).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heappop, heappush

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


#: Tiresias' queue thresholds on 2D attained service, in GPU-seconds: two
#: queues, the first for jobs below 3,250 GPU-s -- the default of the
#: GPU-time-based discretised LAS in the authors' simulator
#: (SymbioticLab/Tiresias, ``simulator/jobs.py``, ``queue_limit[0]``).
TIRESIAS_THRESHOLDS = (3250.0,)
#: Tiresias' PROMOTEKNOB: a job waiting longer than this many times its
#: executed time goes back to the first queue.  The paper leaves it a knob
#: (its sensitivity study varies it; infinity disables promotion); 8 is this
#: library's default.
TIRESIAS_PROMOTE_KNOB = 8.0


def tiresias_queue(attained: float, thresholds=TIRESIAS_THRESHOLDS) -> int:
    r"""The queue of a job with 2D attained service ``attained`` (GPU-seconds):
    $q = |\{k : T_k \le a\}|$ for ascending thresholds
    $T_1 < \dots < T_{K-1}$, i.e. queue 0 holds $a < T_1$, queue
    k holds $T_k \le a < T_{k+1}$."""
    return bisect_right(thresholds, attained)


def tiresias_key(thresholds=TIRESIAS_THRESHOLDS, promote_knob: float = TIRESIAS_PROMOTE_KNOB):
    r"""The ``tiresias`` order: discretised 2D-LAS with starvation promotion
    (Gu et al., NSDI'19, §3.2).

    Parameters
    ----------
    thresholds : sequence of float
        Ascending queue thresholds $T_k$ on 2D attained service in
        GPU-seconds (K - 1 of them for K queues).
    promote_knob : float
        PROMOTEKNOB $P$ (``math.inf``: never promote).

    Returns
    -------
    callable
        ``key(job, now, totals) -> (queue, arrival, id)`` for
        `order_jobs`, smallest first.

    Notes
    -----
    A job's 2D attained service is $a = \sum$ GPUs x seconds executed
    (``JobState.attained``, GPU-seconds); its queue is
    `tiresias_queue` of $a$.  Jobs are ordered by queue, then by
    arrival (FIFO within a queue), then by id.  Starvation: a job in a lower
    queue whose waiting time since it last ran, $w = t - t_{last}$,
    exceeds $P \cdot e$ is put in queue 0, where the paper's
    $e$ is the job's last execution time.  ``JobState`` records no
    run lengths, so $e$ is derived as the executed seconds so far,
    $e = a / n$ (n = the job's GPUs), an upper bound of the last run:
    a job is promoted no earlier than in the paper.  The paper also resets a
    promoted job's attained service; here the key is a pure function of the
    job's state, so the promotion lasts while the job waits -- once it runs,
    its waiting time restarts and it goes back to the queue of its attained
    service.  The key changes while a job waits (promotion), so the order is
    not in `STATIC`.

    Placement is the allocator's: the simulator's allocators place a job
    on one server when it fits and spread it only otherwise, and the
    profile's span factor slows a spread job down, which is how Tiresias'
    consolidation preference for skewed models shows here; no per-job
    locality requirement is set by the order.
    """
    thresholds = tuple(float(t) for t in thresholds)
    if any(b <= a for a, b in zip(thresholds, thresholds[1:])) or any(t < 0 for t in thresholds):
        raise ValueError(f"thresholds: expected ascending numbers >= 0, got {thresholds}")
    if not promote_knob > 0:
        raise ValueError(f"promote_knob: expected a number > 0, got {promote_knob!r}")

    def key(j, now, tot):
        q = tiresias_queue(j.attained, thresholds)
        if q and now - j.last_run > promote_knob * (j.attained / max(j.gpus, 1)):
            q = 0
        return (q, j.arrival, j.id)
    return key


ORDERS = {"fifo": _fifo, "srtf": _srtf, "las": _las, "ftf": _ftf, "drf": _drf,
          "tetris": _tetris, "tiresias": tiresias_key()}


STATIC = frozenset({"fifo", "srtf", "las", "drf", "tetris"})


def order_key(name: str):
    """The full sort key of ``order_jobs``: starving jobs first, then the
    order's key."""
    key = ORDERS[name]

    def ck(j, now, tot):
        return (now - j.last_run <= STARVATION_S, key(j, now, tot))
    return ck


def order_jobs(jobs, name: str, now: float, totals) -> list:
    """Runnable jobs sorted by the named policy at time ``now``."""
    key = ORDERS[name]
    starving = [j for j in jobs if now - j.last_run > STARVATION_S]
    if not starving:
        return sorted(jobs, key=lambda j: key(j, now, totals))
    return sorted(jobs, key=lambda j: (now - j.last_run <= STARVATION_S, key(j, now, totals)))


class IncrementalOrder:
    """The prefix of ``order_jobs(jobs, name, now, totals)`` that the GPU-only
    admission examines, maintained from round to round for a ``STATIC`` order.

    ``head`` is the examined prefix at the last evaluation (every job that can
    run is in it); the other jobs wait in ``rest``, a list sorted by their full
    key, which does not change while they wait except when they cross the
    starvation threshold (tracked by a heap of their last run times).  Each
    round the keys of the head are recomputed; if the head is still sorted
    and, when its admission exhausted the GPUs, still before ``rest[0]``, the
    examined prefix (hence the admitted jobs, in order) is the same as last
    round and `step` reports it unchanged.  Otherwise the head is
    re-sorted and merged with ``rest`` to find the new prefix.  The result is
    the prefix a full sort would give: keys are unique (they end with the job
    id), so the order is total.
    """

    def __init__(self, name: str, totals, capacity: int, need):
        if name not in STATIC:
            raise ValueError(f"order {name!r} has keys that change while jobs wait")
        self.ck = order_key(name)
        self.tot, self.cap, self.need = totals, capacity, need
        self.head: list = []
        self.full = False          # admission over head used up the capacity
        self.rest: list = []       # sorted (key, id)
        self.rkey: dict = {}       # id -> key of the jobs in rest
        self.rjob: dict = {}
        self.heap: list = []       # (last_run, id) of non-starving jobs in rest

    def __len__(self) -> int:
        return len(self.head) + len(self.rest)

    def _to_rest(self, j, now) -> None:
        k = self.ck(j, now, self.tot)
        insort(self.rest, (k, j.id))
        self.rkey[j.id] = k
        self.rjob[j.id] = j
        if k[0]:
            heappush(self.heap, (j.last_run, j.id))

    def add(self, j, now) -> None:
        """A new job (it waits until the next evaluation)."""
        self._to_rest(j, now)

    def remove_finished(self) -> None:
        """Drop finished jobs from the head (they are never in rest)."""
        self.head = [j for j in self.head if j.finish is None]
        self.full = False

    def _starve(self, now) -> None:
        h = self.heap
        while h and now - h[0][0] > STARVATION_S:
            lr, jid = heappop(h)
            k = self.rkey.get(jid)
            if k is None or not k[0] or self.rjob[jid].last_run != lr:
                continue  # stale entry
            del self.rest[bisect_left(self.rest, (k, jid))]
            j = self.rjob[jid]
            k = self.ck(j, now, self.tot)
            insort(self.rest, (k, jid))
            self.rkey[jid] = k

    def step(self, now) -> tuple[list, bool]:
        """(examined prefix in order, whether it is the same as last round)."""
        self._starve(now)
        ck, tot = self.ck, self.tot
        head = self.head
        hk = [ck(j, now, tot) for j in head]
        rest = self.rest
        same = all(a < b for a, b in zip(hk, hk[1:])) and (
            not rest or (self.full and bool(hk) and hk[-1] < rest[0][0]))
        if same:
            return head, True
        order = sorted(zip(hk, range(len(head))))
        free, out, full = self.cap, [], False
        i = r = 0
        H, Rn = len(order), len(rest)
        need = self.need
        while i < H or r < Rn:
            if r >= Rn or (i < H and order[i][0] < rest[r][0]):
                j = head[order[i][1]]
                i += 1
            else:
                j = self.rjob[rest[r][1]]
                r += 1
            out.append(j)
            nd = need(j)
            if nd <= free:
                free -= nd
                if free <= 0:
                    full = True
                    break
        for _, jid in rest[:r]:
            del self.rkey[jid]
            del self.rjob[jid]
        del rest[:r]
        for _, x in order[i:]:
            self._to_rest(head[x], now)
        self.head, self.full = out, full
        return out, False
