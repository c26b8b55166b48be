r"""PipeSwitch's switching over time (Bai et al., OSDI'20): GPUs shared by a
training job and inference services, the mechanism ``switching`` on the
simulator.

The mechanism runs a [`ShareDecision`][alloc.pipeswitch.decide.ShareDecision]
(which services share which GPU with which training job, the cycle $T$, the
switch costs of the decision's mechanism).  Every inference request (a job of
one GPU whose duration is one batch, ``extra["service"]`` naming its
service) is held at its arrival and queued on its service's GPU; the
mechanism places it through ``Control.place`` (checked by the session):

* a GPU of its own (no training job, one service) serves each request as
  soon as the GPU is free, in arrival order, without a switch;
* a shared GPU runs in cycles.  At the start $t_0$ of a cycle (boundary
  $t_0 + T$) it visits its services in the decision's order: a service with
  a waiting request is switched to (the request pays the switch $s_i$ as
  its start delay; the training job, if any, is suspended, keeping its
  progress), then served until its queue is empty, requests arriving
  meanwhile included; the next service is visited if one of its requests
  has arrived by then.  After a visit that served anything the GPU switches
  back to its training job (its resume delay $s_\mathrm{train}$), which runs
  until the boundary; the next cycle starts at the boundary, or when the
  switch back ends if that is later.  Cycles start while $t_0$ is below the
  horizon; idle cycles cost no event (the next cycle with a waiting request
  is found by counting whole cycles).

A drained server's GPUs (`Control.closed`) serve no request and switch to
no service: what runs there runs on (a request being served finishes; the
training job keeps running).  A training job that was switched out, or
arrives, while its GPU's server is drained waits for the server to be
undrained, and its time is not counted as training; requests queue.

The progress model is `SwitchProgress` (the mechanism's ``progress``): rate 1
(a request's work is its batch time, a training job's its run time), a
start delay equal to the switch the mechanism charged.  The mechanism
accounts each GPU's time: switching, inference and training within the
cycles that start before the horizon.
"""
from __future__ import annotations

import math
from typing import Any

from ...errors import InputError
from ...gpukey import server_of
from ...sim.progress import ProgressModel, Run
from ..kinds import BaseMechanism


class SwitchProgress(ProgressModel):
    """Rate 1; a start pays the switch its mechanism charged (seconds).

    Examples
    --------
    >>> from alloc.sched.pipeswitch.switching import SwitchProgress
    >>> from types import SimpleNamespace
    >>> p = SwitchProgress()
    >>> p.charge("r1", 0.006)
    >>> p.delay_s(SimpleNamespace(id="r1"), None, "start"), p.pending
    (0.006, {})
    """
    name = "switching"
    gives = frozenset({"duration"})

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, float] = {}

    def charge(self, job_id: str, seconds: float) -> None:
        """The next start of ``job_id`` pays ``seconds`` of switching."""
        self.pending[job_id] = float(seconds)

    def rate(self, job: Any, run: Run) -> float:
        """1 on its GPU."""
        return 1.0 if run.gpus else 0.0

    def delay_s(self, job: Any, run: Any, cause: str) -> float:
        """The switch charged to this start (0 when none)."""
        return self.pending.pop(job.id, 0.0)


class _Gpu:
    """One GPU's state under the mechanism."""

    def __init__(self, plan: Any, services: dict) -> None:
        self.plan = plan
        self.queue: dict[str, list[Any]] = {s: [] for s in plan.services}
        self.own = plan.training is None and len(plan.services) == 1
        self.busy: str | None = None          # the request on the GPU
        self.visit = -1                       # the service visited (index), -1: none
        self.boundary = 0.0
        self.timer = False
        self.services = services
        self.away = False                     # the training job waits out a drain


class Switching(BaseMechanism):
    """PipeSwitch's switching (module notes).

    Parameters
    ----------
    decision : ShareDecision
        What shares which GPU (`alloc.pipeswitch.share_gpus`).
    horizon_s : float
        Cycles start while their start is below this (s).

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> get_policy("mechanism", "switching").kind
    'mechanism'
    """

    def __init__(self, decision: Any = None, horizon_s: float = 600.0) -> None:
        if decision is None or not hasattr(decision, "gpus"):
            raise InputError("switching: decision: expected a ShareDecision "
                             "(alloc.pipeswitch.share_gpus)")
        if isinstance(horizon_s, bool) or not isinstance(horizon_s, (int, float)) \
                or not math.isfinite(horizon_s) or horizon_s <= 0:
            raise InputError(f"horizon_s: expected a number > 0, got {horizon_s!r}")
        self.decision, self.horizon = decision, float(horizon_s)
        self.progress = SwitchProgress()
        self.gpus = {p.gpu: _Gpu(p, decision.services) for p in decision.gpus}
        self.of_service = {s: decision.services[s].gpu for s in decision.services}
        self.of_training = {p.training: p.gpu for p in decision.gpus if p.training}
        self.switch = self.inference = self.training = 0.0

    def start(self, ctl: Any) -> None:
        """Check the progress model."""
        if ctl.ctx.progress is not self.progress:
            raise InputError("switching: the run's progress model must be the mechanism's "
                             "(Switching.progress)")

    # ------------------------------------------------------------- events
    def on_event(self, event: Any, ctl: Any) -> None:
        """Arrivals, finished requests, cycle starts."""
        if event.kind == "arrival":
            self._arrive(ctl.jobs[event.job], ctl)
        elif event.kind == "finish" and event.job is not None:
            g = next((g for g in self.gpus.values() if g.busy == event.job), None)
            if g is not None:
                g.busy = None
                self._next(g, ctl)
        elif event.kind == "timer" and isinstance(event.tag, tuple) and event.tag[0] == "cycle":
            g = self.gpus[event.tag[1]]
            g.timer = False
            self._cycle(g, ctl)
        elif event.kind == "undrain":
            for g in self.gpus.values():
                if server_of(g.plan.gpu) == event.server:
                    self._reopen(g, ctl)

    @staticmethod
    def _open(g: _Gpu, ctl: Any) -> bool:
        """The GPU's server takes new placements (it is not drained)."""
        return server_of(g.plan.gpu) not in ctl.closed

    def _reopen(self, g: _Gpu, ctl: Any) -> None:
        """The GPU's server is undrained: its training job back, its queue served."""
        if g.busy is not None:                  # its request's end goes on from there
            return
        if g.own:
            q = g.queue[g.plan.services[0]]
            if q:
                self._serve(g, g.plan.services[0], 0.0, ctl)
            return
        if g.away and g.visit < 0:
            g.away = False
            train = g.plan.training
            if ctl.jobs[train].start_s is None:     # it arrived during the drain
                ctl.resume(train)
                ctl.place(train, [g.plan.gpu])
                g.boundary = ctl.now_s
            else:
                self._back(g, ctl, ctl.now_s)
        if any(g.queue.values()) and not g.timer:
            self._wake(g, ctl)

    def _arrive(self, rec: Any, ctl: Any) -> None:
        gname = self.of_training.get(rec.id)
        if gname is not None:                       # a training job: it runs on its GPU
            g = self.gpus[gname]
            if not self._open(g, ctl):
                ctl.suspend(rec.id, hold=True)
                g.away = True
                return
            ctl.place(rec.id, [gname])
            g.boundary = ctl.now_s
            return
        sid = rec.extra.get("service")
        if sid not in self.of_service:
            raise InputError(f"switching: job {rec.id!r}: extra: expected the service of a "
                             f"request (one of {', '.join(self.of_service)})")
        ctl.suspend(rec.id, hold=True)
        g = self.gpus[self.of_service[sid]]
        g.queue[sid].append(rec)
        if g.own:
            if g.busy is None and self._open(g, ctl):
                self._serve(g, sid, 0.0, ctl)
        elif g.busy is None and g.visit < 0 and not g.timer:
            self._wake(g, ctl)

    def _wake(self, g: _Gpu, ctl: Any) -> None:
        """Idle cycles since the last boundary, counted; the next cycle's start."""
        T = self.decision.cycle_s
        now = ctl.now_s
        k = max(0, math.ceil((now - g.boundary) / T - 1e-12))
        start = g.boundary + k * T
        if start >= self.horizon:
            idle = max(0, math.ceil((self.horizon - g.boundary) / T - 1e-12))
        else:
            idle = k
        if g.plan.training is not None:
            self.training += idle * T
        g.boundary = start
        if start < self.horizon:
            g.timer = True
            ctl.timer(start, tag=("cycle", g.plan.gpu))

    def _cycle(self, g: _Gpu, ctl: Any) -> None:
        """A cycle starts now (``g.boundary``)."""
        t0 = ctl.now_s
        g.boundary = t0 + self.decision.cycle_s
        g.visit = -1
        if not self._visit_next(g, ctl, t0):
            if g.plan.training is not None and not g.away:
                self.training += self.decision.cycle_s
            if any(g.queue.values()):
                self._wake(g, ctl)

    def _visit_next(self, g: _Gpu, ctl: Any, now: float) -> bool:
        """Switch to the next service (after ``g.visit``) with a request
        arrived by ``now``; False when none (or the server is drained)."""
        if not self._open(g, ctl):
            return False
        for k in range(g.visit + 1, len(g.plan.services)):
            sid = g.plan.services[k]
            q = g.queue[sid]
            if q and q[0].arrival_s <= now:
                if g.visit < 0 and g.plan.training is not None:
                    ctl.suspend(g.plan.training, hold=True)
                g.visit = k
                self._serve(g, sid, self.decision.services[sid].switch_s, ctl)
                return True
        return False

    def _serve(self, g: _Gpu, sid: str, switch_s: float, ctl: Any) -> None:
        rec = g.queue[sid].pop(0)
        self.switch += switch_s
        self.inference += self.decision.services[sid].batch_s
        if switch_s:
            self.progress.charge(rec.id, switch_s)
        ctl.resume(rec.id)
        ctl.place(rec.id, [g.plan.gpu])
        g.busy = rec.id

    def _next(self, g: _Gpu, ctl: Any) -> None:
        """A request finished: the same service's next, the next service's,
        or back to training."""
        now = ctl.now_s
        if g.own:
            q = g.queue[g.plan.services[0]]
            if q and self._open(g, ctl):
                self._serve(g, g.plan.services[0], 0.0, ctl)
            return
        if not self._open(g, ctl):              # drained: no more requests here
            g.visit = -1
            g.away = g.plan.training is not None
            return
        sid = g.plan.services[g.visit]
        q = g.queue[sid]
        if q and q[0].arrival_s <= now:
            self._serve(g, sid, 0.0, ctl)
            return
        if self._visit_next(g, ctl, now):
            return
        g.visit = -1
        self._back(g, ctl, now)
        if any(g.queue.values()):
            self._wake(g, ctl)

    def _back(self, g: _Gpu, ctl: Any, now: float) -> None:
        """Switch back to the training job, if any, at ``now``."""
        back = now
        if g.plan.training is not None:
            s = g.plan.train_switch_s
            self.switch += s
            back = now + s
            self.progress.charge(g.plan.training, s)
            ctl.resume(g.plan.training)
            ctl.place(g.plan.training, [g.plan.gpu])
            self.training += max(0.0, g.boundary - back)
        g.boundary = max(g.boundary, back)

    def shares(self) -> tuple[float, float, float]:
        """(switch, inference, training) over the GPUs' time in the horizon
        (after the run: the idle cycles left before the horizon counted)."""
        T, H = self.decision.cycle_s, self.horizon
        training = self.training
        for g in self.gpus.values():
            if g.plan.training is None:
                continue
            if not g.plan.services:
                training += H
            elif not g.own and g.busy is None and g.visit < 0 and not g.timer \
                    and g.boundary < H:
                training += math.ceil((H - g.boundary) / T - 1e-12) * T
        gpu_time = H * max(1, len(self.decision.gpus))
        return self.switch / gpu_time, self.inference / gpu_time, training / gpu_time


def switching(decision: Any = None, horizon_s: float = 600.0) -> Switching:
    """A `Switching` mechanism (the registered factory)."""
    return Switching(decision, horizon_s)


__all__ = ["SwitchProgress", "Switching", "switching"]
