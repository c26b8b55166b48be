r"""AntMan's local coordinator (Xiao et al., OSDI'20, §3.3 "Local coordinator").

One coordinator per GPU moves the memory and compute caps of the
opportunistic jobs riding it (`alloc.resources`: opportunistic shares) so that
the resource-guaranteed job on the GPU keeps its speed:

* **arrival** ([`Coordinator.admit`][alloc.sched.antman.coordinator.Coordinator.admit]): when a
  guaranteed job arrives the
  riders are capped *at once*: compute to 0 and memory shrunk (largest first,
  down to each rider's least memory) until the guaranteed job's memory fits;
* **growth** ([`Coordinator.tick`][alloc.sched.antman.coordinator.Coordinator.tick], once per
  window): while the
  guaranteed job's observed slowdown ``s = t_minibatch / t_alone - 1`` stays
  within the tolerance ``tau``, the riders first get the GPU memory left over
  (up to their demand), then one rider a window (the least capped) has its
  compute cap raised by at most ``step`` milli and by what its own slope --
  the slowdown per milli seen on its earlier raises -- says keeps
  ``s <= tau`` (``(tau - s) / slope``; a rider's first raise is a probe of
  ``step / 5``, made only with half the tolerance left); when ``s > tau`` the last raise is undone (pessimistic
  back-off, §3.3);
* **surge** ([`Coordinator.surge`][alloc.sched.antman.coordinator.Coordinator.surge]): when the
  guaranteed job's memory grows,
  the riders' memory is shrunk at once to make room.

Without a guaranteed job the riders share the GPU: each gets its memory and
compute demand when they fit, else the compute in proportion to demand and
the memory to the riders of smallest demand first (a simplification of the
paper's trial-and-error search for the allocation of best aggregate speed).

Defaults: ``tau = 0.035`` -- the guaranteed job's slowdown AntMan reaches in
§5.1 (ESPnet 20.1 -> 20.8 min beside a capped ResNet-50); ``step = 50`` milli
(5 % of the GPU per window).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...model import MILLI


@dataclass(frozen=True)
class Rider:
    """An opportunistic job on the GPU: memory (MiB) and compute (milli)
    demands, its least memory, and its caps now."""
    id: str
    mem_demand: int
    mem_floor: int
    comp_demand: int
    mem: int
    comp: int


@dataclass(frozen=True)
class Gpu:
    """One GPU as its coordinator sees it: memory capacity (MiB), the
    guaranteed job's memory and compute (None: none), the riders, and each
    rider's slope (the guaranteed job's slowdown per milli of its cap, the
    largest seen on its raises)."""
    capacity: int
    guaranteed_mem: int | None = None
    guaranteed_comp: int = 0
    riders: tuple[Rider, ...] = ()
    slopes: tuple[tuple[str, float], ...] = ()
    last_raise: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    @property
    def free_mem(self) -> int:
        """GPU memory no job holds (MiB)."""
        return self.capacity - (self.guaranteed_mem or 0) - sum(r.mem for r in self.riders)

    @property
    def free_comp(self) -> int:
        """Compute no cap holds (milli)."""
        return MILLI - self.guaranteed_comp - sum(r.comp for r in self.riders)


@dataclass(frozen=True)
class Coordinator:
    """The coordinator's rules (module notes) with tolerance ``tau`` and
    compute ``step`` (milli)."""
    tau: float = 0.035
    step: int = 50

    def admit(self, gpu: Gpu, mem: int, comp: int) -> Gpu:
        """A guaranteed job of ``mem`` MiB and ``comp`` milli arrives: riders'
        compute to 0, memory shrunk until ``mem`` fits (never below a
        rider's floor; what still does not fit is the caller's to preempt)."""
        riders = [replace(r, comp=0) for r in gpu.riders]
        g = replace(gpu, guaranteed_mem=mem, guaranteed_comp=comp, riders=tuple(riders),
                    slopes=(), last_raise=())
        return self._shrink(g)

    def surge(self, gpu: Gpu, mem: int) -> Gpu:
        """The guaranteed job's memory grows to ``mem`` MiB: shrink riders at once."""
        return self._shrink(replace(gpu, guaranteed_mem=mem))

    def leave(self, gpu: Gpu) -> Gpu:
        """The guaranteed job leaves: riders share the GPU (module notes)."""
        return self.share(replace(gpu, guaranteed_mem=None, guaranteed_comp=0, slopes=(),
                                  last_raise=()))

    def _shrink(self, gpu: Gpu) -> Gpu:
        over = -gpu.free_mem
        riders = list(gpu.riders)
        for k in sorted(range(len(riders)), key=lambda k: (-riders[k].mem, riders[k].id)):
            if over <= 0:
                break
            r = riders[k]
            cut = min(over, r.mem - r.mem_floor)
            if cut > 0:
                riders[k] = replace(r, mem=r.mem - cut)
                over -= cut
        return replace(gpu, riders=tuple(riders))

    def tick(self, gpu: Gpu, slowdown: float) -> Gpu:
        """One window: grow within the tolerance, back off past it."""
        if gpu.guaranteed_mem is None:
            return self.share(gpu)
        if slowdown > self.tau:
            back = dict(gpu.last_raise)
            riders = tuple(replace(r, comp=max(0, r.comp - back.get(r.id, self.step)))
                           for r in gpu.riders)
            return replace(gpu, riders=riders, last_raise=())
        g = self._grow_memory(gpu)
        if g is not gpu:
            return g
        want = [r for r in gpu.riders if r.comp < r.comp_demand]
        if not want or gpu.free_comp <= 0:
            return replace(gpu, last_raise=())
        r = min(want, key=lambda r: (r.comp, r.id))      # one rider a window, least first
        slope = dict(gpu.slopes).get(r.id)
        if slope is None:                                # a probe, with half the tolerance left
            budget = max(1, self.step // 5) if slowdown <= self.tau / 2 else 0
        elif slope > 0:
            budget = int((self.tau - slowdown) / slope)
        else:
            budget = self.step
        up = max(0, min(self.step, budget, r.comp_demand - r.comp, gpu.free_comp))
        if not up:
            return replace(gpu, last_raise=())
        riders = tuple(replace(x, comp=x.comp + up) if x.id == r.id else x for x in gpu.riders)
        return replace(gpu, riders=riders, last_raise=((r.id, up),))

    def observe(self, gpu: Gpu, before: float, after: float) -> Gpu:
        """Record the slope of the last raise (slowdown change per milli of
        the raised rider's cap)."""
        if not gpu.last_raise:
            return gpu
        rid, up = gpu.last_raise[0]
        slopes = dict(gpu.slopes)
        slopes[rid] = max(slopes.get(rid, 0.0), max(0.0, (after - before) / up))
        return replace(gpu, slopes=tuple(sorted(slopes.items())))

    def _grow_memory(self, gpu: Gpu) -> Gpu:
        free = gpu.free_mem
        if free <= 0 or all(r.mem >= r.mem_demand for r in gpu.riders):
            return gpu
        riders = []
        for r in gpu.riders:
            up = max(0, min(r.mem_demand - r.mem, free))
            free -= up
            riders.append(replace(r, mem=r.mem + up))
        return replace(gpu, riders=tuple(riders))

    def share(self, gpu: Gpu) -> Gpu:
        """Riders alone on a GPU: demands when they fit, else compute in
        proportion to demand and memory riders first by smallest demand."""
        riders = sorted(gpu.riders, key=lambda r: (r.mem_demand, r.id))
        comp = sum(r.comp_demand for r in riders)
        mem_left = gpu.capacity
        out = []
        for r in riders:
            m = max(r.mem_floor, min(r.mem_demand, mem_left))
            mem_left -= m
            c = r.comp_demand if comp <= MILLI else r.comp_demand * MILLI // comp
            out.append(replace(r, mem=m, comp=c))
        order = {r.id: k for k, r in enumerate(gpu.riders)}
        return replace(gpu, riders=tuple(sorted(out, key=lambda r: order[r.id])), slopes=(),
                       last_raise=())


__all__ = ["Coordinator", "Gpu", "Rider"]
