r"""Salus on alloc's simulator: one GPU, jobs admitted into lanes, GPU time
shared at iteration granularity by one of four policies.

**Residency** (`SalusMechanism`).  Every job is held out of the rounds at
arrival and admitted by the mechanism into a lane (`alloc.sched.salus.lanes`)
when its memory fits, in arrival order, a job that does not fit letting the
ones behind it try (Salus's lane manager); an admitted job is placed on the
GPU (through ``Control.place``, checked by the session) with a small
*residency token* of ``1000 // max_resident`` milli-GPU -- its share of
*memory and presence*, not of time -- and leaves its lane when it finishes.
``fifo`` admits one job at a time (no sharing: the GPU as schedulers hand
it out today).

**Time** (`SalusProgress`).  Switching between jobs happens at iteration
boundaries and costs nothing (the persistent memory stays resident; only the
ephemeral memory is given back), so a resident job's speed, as a fraction of
its speed alone (``duration_s`` is its JCT alone), is a function of who is
resident:

``fifo``
    1 (it is alone).
``srtf``
    1 for the resident with the shortest remaining time alone (ties: the
    earlier arrival), 0 for the others (preempted at their next iteration,
    their memory kept).
``fair``
    $1/n$ for each of the ``n`` residents (iterations interleaved so that
    progress is equal).
``pack``
    $1/(L\,n_\ell)$: the ``L`` lanes with residents run side by side and
    share the GPU's compute equally; the $n_\ell$ jobs of one lane take
    turns.

The compute model of ``pack`` is the one fixed assumption beyond the
profiles: a training job alone keeps the GPU busy, so jobs running side by
side split its throughput (no job speeds up from packing).  The profiles
give no per-job GPU utilisation to do better; what packing can win with
under-utilising jobs (Salus's hyper-parameter and inference experiments) is
outside this model.

Units: seconds, MB.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ...errors import InputError
from ...gpukey import server_of
from ...model import Cluster, Server
from ...sim.jobs import WorkloadJob
from ...sim.progress import ProgressModel, Run
from ..kinds import BaseMechanism
from .lanes import LaneManager
from .profiles import Profile

#: Salus's policies.
POLICIES = ("fifo", "srtf", "pack", "fair")
#: GPU memory (MB) of the GPU the profiles were measured on: a 16 GB card
#: (the largest profile peaks at 12.7 GB).
GPU_MEMORY_MB = 16384.0


def salus_cluster(memory_mb: float = GPU_MEMORY_MB) -> Cluster:
    """One server with one GPU (type ``"gpu"``, ``memory_mb`` of memory).

    Examples
    --------
    >>> from alloc.sched.salus.sim import salus_cluster
    >>> salus_cluster().servers[0].gpus
    1
    """
    return Cluster((Server("gpu-server", cpu=32000, mem=262144, gpus=1, gpu_type="gpu",
                           gpu_mem=int(memory_mb)),))


def workload(profiles: Sequence[Profile], arrivals: Sequence[float],
             ids: Sequence[str] | None = None) -> list[WorkloadJob]:
    """One job per profile, arriving at ``arrivals`` (s): its run time alone
    is the profile's JCT, its memory split in ``extra``.

    Examples
    --------
    >>> from alloc.sched.salus.profiles import Profile
    >>> from alloc.sched.salus.sim import workload
    >>> p = Profile("m_25_1min", "m", 25, 60.0, 1000.0, 100, 200.0, 800.0)
    >>> w = workload([p], [5.0])[0]
    >>> w.duration_s, w.extra["ephemeral_mb"]
    (60.0, 800.0)
    """
    if len(profiles) != len(arrivals):
        raise InputError(f"salus workload: {len(profiles)} profiles but {len(arrivals)} arrivals")
    ids = list(ids) if ids is not None else [f"j{i}" for i in range(len(profiles))]
    out = [WorkloadJob(jid, float(t), 1, duration_s=p.jct_s, model=p.name,
                       extra={"persistent_mb": p.persistent_mb, "ephemeral_mb": p.ephemeral_mb,
                              "iterations": p.iterations})
           for jid, p, t in zip(ids, profiles, arrivals)]
    return sorted(out, key=lambda w: (w.arrival_s, w.id))


class SalusProgress(ProgressModel):
    """A resident job's speed under a policy (see the module notes).

    Parameters
    ----------
    policy : {"fifo", "srtf", "pack", "fair"}
    lanes : LaneManager, optional
        The lanes (``pack`` reads each job's lane).
    """
    name = "salus"
    gives = frozenset({"duration", "gpu-memory"})

    def __init__(self, policy: str, lanes: LaneManager | None = None) -> None:
        super().__init__()
        if policy not in POLICIES:
            raise InputError(f"salus: policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
        self.policy = policy
        self.lanes = lanes

    def rate(self, job: Any, run: Run) -> float:
        """The job's speed as a fraction of its speed alone."""
        if run.gpus == 0:
            return 0.0
        others = [job.peer(j) for j in run.colocated] if hasattr(job, "peer") else []
        res = [job] + [o for o in others if o is not None]
        pol = self.policy
        if pol == "fifo" or len(res) == 1:
            return 1.0
        if pol == "fair":
            return 1.0 / len(res)
        if pol == "srtf":
            first = min(res, key=lambda r: (r.remaining_s if r.remaining_s is not None else 0.0,
                                            r.arrival_s, r.id))
            return 1.0 if first.id == job.id else 0.0
        lanes = self.lanes.lane_of if self.lanes is not None else {}
        mine = lanes.get(job.id)
        used = {lanes.get(r.id) for r in res}
        same = sum(1 for r in res if lanes.get(r.id) == mine)
        return 1.0 / (len(used) * max(same, 1))


class SalusMechanism(BaseMechanism):
    """Salus's admission into lanes (see the module notes); its ``progress``
    is the matching `SalusProgress`.

    Parameters
    ----------
    policy : {"fifo", "srtf", "pack", "fair"}
    memory_mb : float
        GPU memory (default `GPU_MEMORY_MB`).
    max_resident : int
        Jobs resident at once, at most (sets the residency token).
    """

    def __init__(self, policy: str = "srtf", memory_mb: float = GPU_MEMORY_MB,
                 max_resident: int = 40) -> None:
        if policy not in POLICIES:
            raise InputError(f"salus: policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
        if not (isinstance(max_resident, int) and 1 <= max_resident <= 1000):
            raise InputError(f"salus: max_resident: expected an integer in 1..1000, got "
                             f"{max_resident!r}")
        self.policy = policy
        self.lanes = LaneManager(memory_mb)
        self.progress = SalusProgress(policy, self.lanes)
        self.max_resident = max_resident
        self.token = 1000 // max_resident
        self.waiting: list[Any] = []
        self.resident: set[str] = set()
        self.gpu = ""
        self.peak_resident = 0
        self.peak_lanes = 0

    def start(self, ctl: Any) -> None:
        """Find the GPU; bind the run's progress model to these lanes."""
        prog = getattr(ctl.ctx, "progress", None)
        if not isinstance(prog, SalusProgress) or prog.policy != self.policy:
            raise InputError(f"salus-{self.policy}: the run's progress model must be "
                             f"SalusProgress({self.policy!r}) (the mechanism's .progress)")
        prog.lanes = self.lanes
        for s in ctl.cluster.servers:
            if s.gpus:
                self.gpu = f"{s.id}/gpu0"
                return
        raise InputError("salus: the cluster has no GPU")

    def on_event(self, event: Any, ctl: Any) -> None:
        """Hold arrivals; free the lane of a finished job."""
        if event.kind == "arrival":
            rec = ctl.jobs[event.job]
            ctl.suspend(rec.id, hold=True)
            e = rec.extra
            if "persistent_mb" not in e or "ephemeral_mb" not in e:
                raise InputError(f"salus: job {rec.id!r}: extra: expected persistent_mb and "
                                 f"ephemeral_mb (a Salus workload)")
            self.waiting.append(rec)
        elif event.kind == "finish" and event.job in self.resident:
            self.resident.discard(event.job)
            self.lanes.release(event.job)

    def before_step(self, ctl: Any) -> None:
        """Admit waiting jobs that fit, in arrival order (none while the
        GPU's server is drained: its residents run on)."""
        if server_of(self.gpu) in ctl.closed:
            return
        keep = []
        for rec in self.waiting:
            if self.policy == "fifo" and self.resident or len(self.resident) >= self.max_resident:
                keep.append(rec)
                continue
            e = rec.extra
            lane = self.lanes.admit(rec.id, float(e["persistent_mb"]), float(e["ephemeral_mb"]))
            if lane is None:
                keep.append(rec)
                continue
            self.resident.add(rec.id)
            ctl.place(rec.id, [self.gpu], milli=self.token)
        self.waiting = keep
        self.peak_resident = max(self.peak_resident, len(self.resident))
        self.peak_lanes = max(self.peak_lanes, len(self.lanes.lanes))


def mean(values: Iterable[float]) -> float:
    """The mean of ``values`` (NaN when empty)."""
    v = list(values)
    return sum(v) / len(v) if v else float("nan")


def salus(policy: str = "srtf", memory_mb: float = GPU_MEMORY_MB,
          max_resident: int = 40) -> SalusMechanism:
    """A `SalusMechanism` (the registered factory)."""
    return SalusMechanism(policy, memory_mb, max_resident)


__all__ = ["GPU_MEMORY_MB", "POLICIES", "SalusMechanism", "SalusProgress", "fair", "fifo", "mean",
           "pack", "salus", "salus_cluster", "srtf", "workload"]


def fifo(memory_mb: float = GPU_MEMORY_MB, max_resident: int = 40) -> SalusMechanism:
    """Salus's FIFO: one job on the GPU at a time (no sharing)."""
    return SalusMechanism("fifo", memory_mb, max_resident)


def srtf(memory_mb: float = GPU_MEMORY_MB, max_resident: int = 40) -> SalusMechanism:
    """Salus's SRTF: the resident job with the shortest remaining time runs."""
    return SalusMechanism("srtf", memory_mb, max_resident)


def pack(memory_mb: float = GPU_MEMORY_MB, max_resident: int = 40) -> SalusMechanism:
    """Salus's PACK: lanes side by side, the jobs of a lane in turn."""
    return SalusMechanism("pack", memory_mb, max_resident)


def fair(memory_mb: float = GPU_MEMORY_MB, max_resident: int = 40) -> SalusMechanism:
    """Salus's FAIR: every resident job an equal share of GPU time."""
    return SalusMechanism("fair", memory_mb, max_resident)
