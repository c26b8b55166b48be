r"""AntMan's local coordinators over time (Xiao et al., OSDI'20, §3.3), the
mechanism ``antman`` on the simulator.

The global scheduler is the placement solver ``antman`` (one round: the
guaranteed gangs in quota, the opportunistic jobs riding the least-loaded
GPUs with memory and compute caps; its reservations kept from round to round
by the session).  After each round the mechanism runs one coordinator per GPU
(`alloc.sched.antman.coordinator`) on the GPUs with riders, and applies the
caps it sets through ``Control.reshare`` (checked by the session):

* a GPU where a guaranteed job has just started: the riders are capped at
  once (``admit``: compute to 0, memory shrunk to make room);
* a GPU with a guaranteed job: the caps grow window by window while the
  guaranteed job's slowdown $s = 1/\mathrm{speed}_G - 1$ stays within the
  tolerance $\tau$, the last raise undone past it (``tick``, ``observe``);
  the slowdown is the performance model's
  (`alloc.sched.antman.model.coordinated_speeds`);
* a GPU of riders alone: they share it (``share``).

With ``window_s`` the windows are the simulator's timers, every
``window_s`` seconds (Table 2: AntMan's 10 s windows); without it (the trace
experiment) each GPU's caps are settled at once after every round, the
windows run until the caps stop changing (at most 60).

``gpu_util`` is the utilisation the mechanism measures, GPU name ->
$\min(1, \sum_j u_j\,\mathrm{speed}_j)$ over the jobs on the GPU; the
mechanism gives it to the placement as its ``gpu_util`` option
(``placement_options``), so that opportunistic jobs go to GPUs below the
threshold of what runs there now.  Every waiting job is a candidate of
each round (``candidates = "all"``): an opportunistic job rides GPUs that
other jobs hold.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Iterator

from ...errors import InputError
from ...model import GpuShare
from ..kinds import BaseMechanism
from .coordinator import Coordinator, Gpu, Rider
from .model import AntManProgress, Share, coordinated_speeds, curve, mem_factor

#: The riders' least memory when a job does not give ``gpu_mem_min``: 10 %
#: of its demand (the lowest limit Fig. 10 measures).
RIDER_FLOOR = 0.10


class MeasuredUtil(Mapping):
    """GPU name -> utilisation now (module notes), read from the run the
    mechanism is bound to; empty before the run starts."""

    def __init__(self) -> None:
        self._ctl: Any = None

    def _now(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self._ctl is None:
            return out
        for r in self._ctl.jobs.values():
            if r.running and r.run is not None and r.run.placement is not None:
                for g in r.run.placement.gpus:
                    out[g.gpu] = out.get(g.gpu, 0.0) + float(r.extra["u"]) * r.rate
        return {g: min(1.0, v) for g, v in out.items()}

    def __getitem__(self, key: str) -> float:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())

    def items(self):  # type: ignore[override]
        """One reading of every GPU's utilisation."""
        return self._now().items()


def _holders(ctl: Any) -> dict[str, list[Any]]:
    """GPU name -> the running jobs on it."""
    out: dict[str, list[Any]] = {}
    for r in ctl.jobs.values():
        if r.running and r.run is not None and r.run.placement is not None:
            for g in r.run.placement.gpus:
                out.setdefault(g.gpu, []).append(r)
    return out


def _share(r: Any, gpu: str) -> GpuShare:
    return next(g for g in r.run.placement.gpus if g.gpu == gpu)


class AntMan(BaseMechanism):
    """AntMan's local coordinators (module notes).

    Parameters
    ----------
    tau : float, optional
        The tolerance (default §5.1's, 0.035).
    step : int
        The largest compute raise per window (milli).
    window_s : float, optional
        Seconds per window (None: caps settled at once after each round).

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> get_policy("mechanism", "antman").build(window_s=10.0).window_s
    10.0
    """

    #: the progress model's mode it needs (`alloc.sched.antman.model.AntManProgress`)
    mode = "coordinated"
    #: every waiting job is offered to each round (riders need no free GPU)
    candidates = "all"

    def __init__(self, tau: float | None = None, step: int = 50,
                 window_s: float | None = None) -> None:
        if window_s is not None and not (isinstance(window_s, (int, float)) and window_s > 0):
            raise InputError(f"antman: window_s: expected a number > 0, got {window_s!r}")
        self.tau, self.step, self.window_s = tau, step, window_s
        self.gpu_util = MeasuredUtil()
        #: the placement solver's ``gpu_util``: the utilisation measured now
        self.placement_options = {"gpu_util": self.gpu_util}
        self.kappa = 0.0
        self.co = Coordinator()
        self.caps: dict[str, int] = {}
        self.state: dict[str, tuple[Gpu, float]] = {}
        self._timer = False

    def start(self, ctl: Any) -> None:
        """Bind the measured utilisation; read kappa and tau off the progress model."""
        prog = ctl.ctx.progress
        if not isinstance(prog, AntManProgress) or prog.mode != "coordinated":
            raise InputError("antman: the run's progress model must be "
                             "AntManProgress('coordinated')")
        self.kappa = prog.kappa
        self.co = Coordinator(tau=prog.tau if self.tau is None else self.tau, step=self.step)
        self.caps = {f"{s.id}/gpu{k}": int(s.gpu_mem or 0) for s in ctl.cluster.servers
                     for k in range(s.gpus)}
        self.gpu_util._ctl = ctl

    # ------------------------------------------------------------- hooks
    def after_step(self, result: Any, ctl: Any) -> None:
        """Cap the riders of the GPUs where a guaranteed job started; settle
        every GPU's caps (no windows) or start the windows."""
        fresh = {g.gpu for p in result.start if p.gpus and p.gpus[0].milli > 0 for g in p.gpus}
        on = _holders(ctl)
        new: dict[str, dict[str, tuple[int, int]]] = {}
        for gname in sorted(on):
            gpu, holder = self._gpu(on[gname], gname)
            if gpu is None:
                continue
            if holder is None:
                gpu = self.co.share(gpu)
                self.state.pop(gname, None)
            else:
                if gname in fresh or (self.window_s is not None and gname not in self.state):
                    gpu = self.co.admit(gpu, int(holder.extra["mem_mib"]), gpu.guaranteed_comp)
                if self.window_s is None:
                    gpu = self._settle(gpu, holder)
                else:
                    if gname in fresh or gname not in self.state:
                        self.state[gname] = (gpu, 0.0)
            for rd in gpu.riders:
                new.setdefault(rd.id, {})[gname] = (rd.mem, rd.comp)
        self._apply(ctl, new)
        if self.window_s is not None and self.state and not self._timer:
            ctl.timer(ctl.now_s + self.window_s, tag="antman")
            self._timer = True

    def on_event(self, event: Any, ctl: Any) -> None:
        """A window ends: each coordinator observes, then grows or backs off."""
        if event.kind != "timer" or event.tag != "antman":
            return
        self._timer = False
        on = _holders(ctl)
        new: dict[str, dict[str, tuple[int, int]]] = {}
        for gname in sorted(self.state):
            kept, slow = self.state[gname]
            gpu, holder = self._gpu(on.get(gname, []), gname)
            if gpu is None or holder is None:
                del self.state[gname]
                continue
            gpu = Gpu(gpu.capacity, gpu.guaranteed_mem, gpu.guaranteed_comp, gpu.riders,
                      kept.slopes, kept.last_raise)
            now = self._slowdown(gpu, holder)
            gpu = self.co.observe(gpu, slow, now)
            gpu = self.co.tick(gpu, now)
            self.state[gname] = (gpu, now)
            for rd in gpu.riders:
                new.setdefault(rd.id, {})[gname] = (rd.mem, rd.comp)
        self._apply(ctl, new)
        if self.state:
            ctl.timer(event.at_s + float(self.window_s or 0.0), tag="antman")
            self._timer = True

    # ----------------------------------------------------------- helpers
    def _gpu(self, jobs: list[Any], gname: str) -> tuple[Gpu | None, Any]:
        """The GPU as its coordinator sees it (None: no riders), and its holder."""
        riders = sorted((r for r in jobs if _share(r, gname).milli == 0), key=lambda r: r.id)
        if not riders:
            return None, None
        holder = next((r for r in sorted(jobs, key=lambda r: r.id)
                       if _share(r, gname).milli > 0), None)
        rs = []
        for r in riders:
            sh = _share(r, gname)
            demand = int(r.extra["mem_mib"])
            floor = r.spec.fields.get("gpu_mem_min")
            rs.append(Rider(r.id, demand, int(floor) if floor is not None else
                            int(math.ceil(RIDER_FLOOR * demand)),
                            max(1, min(1000, round(float(r.extra["u"]) * 1000))),
                            int(sh.mem if sh.mem is not None else demand),
                            int(sh.compute if sh.compute is not None else 0)))
        if holder is None:
            return Gpu(self.caps[gname], None, 0, tuple(rs)), None
        return Gpu(self.caps[gname], int(holder.extra["mem_mib"]),
                   round(float(holder.extra["u"]) * 1000),
                   tuple(rs)), holder

    def _slowdown(self, gpu: Gpu, holder: Any) -> float:
        """The guaranteed job's slowdown with the riders at their caps."""
        shares = [Share(float(holder.extra["u"]), 1.0, guaranteed=True)]
        for rd in gpu.riders:
            rec = self._rec[rd.id]
            shares.append(Share(float(rec.extra["u"]),
                                mem_factor(curve(rec.extra["curve"]), rd.mem / rd.mem_demand),
                                rd.comp / 1000))
        return 1 / coordinated_speeds(shares, self.kappa)[0] - 1

    def _settle(self, gpu: Gpu, holder: Any) -> Gpu:
        slow = None
        for _ in range(60):
            now = self._slowdown(gpu, holder)
            if slow is not None:
                gpu = self.co.observe(gpu, slow, now)
            slow = now
            nxt = self.co.tick(gpu, slow)
            if nxt.riders == gpu.riders:
                return nxt
            gpu = nxt
        return gpu

    @property
    def _rec(self) -> Mapping[str, Any]:
        return self.gpu_util._ctl.jobs

    def _apply(self, ctl: Any, new: dict[str, dict[str, tuple[int, int]]]) -> None:
        """Give the riders their new caps: every cut first, then every raise
        (so that each step fits what the others hold)."""
        low: list[tuple[str, tuple]] = []
        high: list[tuple[str, tuple]] = []
        for jid in sorted(new):
            r = ctl.jobs[jid]
            old = r.run.placement.gpus
            want = tuple(GpuShare(g.gpu, 0, *new[jid][g.gpu]) if g.gpu in new[jid] else g
                         for g in old)
            if want == old:
                continue
            cut = tuple(GpuShare(g.gpu, 0, min(g.mem, w.mem), min(g.compute, w.compute))
                        if g.mem is not None and w.mem is not None and g.compute is not None
                        and w.compute is not None else w for g, w in zip(old, want))
            if cut != old:
                low.append((jid, cut))
            if cut != want:
                high.append((jid, want))
        for jid, shares in low + high:
            ctl.reshare(jid, shares)


def antman(tau: float | None = None, step: int = 50, window_s: float | None = None) -> AntMan:
    """An `AntMan` mechanism (the registered factory)."""
    return AntMan(tau, step, window_s)


__all__ = ["AntMan", "MeasuredUtil", "RIDER_FLOOR", "antman"]
