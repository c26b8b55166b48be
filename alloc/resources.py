r"""GPU memory and compute as resources of a GPU (AntMan, Xiao et al., OSDI'20).

Every GPU ``g`` has three capacities:

* **milli** -- 1000 milli-GPU of allocation (``sum milli <= 1000``, the rule
  every solver keeps);
* **memory** -- ``cap_g`` MiB: its server's ``gpu_mem`` when declared, else the
  table of its GPU type (`GPU_MEM_MIB`, overridden per type by an
  allocation's ``stats["gpu_mem_capacity"]``);
* **compute** -- 1000 milli of its streaming multiprocessors (SMs).

A job ``j`` holding a share ``s`` of ``g`` uses

    mem(j, s)  = s.mem      if given, else gpu_mem_j      if declared, else cap_g * s.milli // 1000
    comp(j, s) = s.compute  if given, else gpu_compute_j  if declared, else s.milli

and on every GPU

    sum_j mem(j, s_jg)  <= cap_g,        sum_j comp(j, s_jg) <= 1000.

Without declarations both reduce to the milli share, so a file that declares
neither means what it always meant (the milli rule already keeps them).

**Share rules.**  With ``D_mem = gpu_mem_j`` (else the milli share of
``cap_g``), ``F_mem = gpu_mem_min_j`` (else ``D_mem``) and ``D_comp =
gpu_compute_j`` (else ``gpu_milli_j``):

* a guaranteed job is never capped: ``mem = D_mem`` and ``comp = D_comp``;
* any other job may be capped: ``F_mem <= mem <= D_mem`` (the rest lives in
  host memory: AntMan's universal memory) and ``0 <= comp <= D_comp``;
* an *opportunistic share* (``milli == 0``) holds none of the GPU's allocation
  and runs on its spare memory and compute: only for a job that is not
  guaranteed and declares ``gpu_mem`` and ``gpu_compute``, and then on every
  GPU of the job (a gang is opportunistic as a whole).

**Where a job may run.**  A job is never placed on a GPU type whose GPUs
cannot hold the least memory it runs with ([`fits_type`][alloc.resources.fits_type]; validation
narrows such a job's ``gpu_types``, [`restrict_types`][alloc.resources.restrict_types]), and a job
that fits no GPU of
the cluster at all is bad input.

**What a solver must honour.**  [`needs`][alloc.resources.needs] names the capabilities an input
calls for: ``gpu-memory`` when memory can bind (some job's ``gpu_mem`` is above
its milli share of a GPU it may use, or a running share holds more than that),
``gpu-compute`` when a job declares ``gpu_compute`` or a running share carries
a compute cap or is opportunistic.  A solver without them is refused for such
input (``alloc.allocate``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from .model import MILLI, Cluster, GpuShare, Job, Placement

#: GPU memory per GPU (MiB) by type, when a server does not declare its own.
GPU_MEM_MIB = {
    "K80": 12288, "P100": 16384, "P4": 8192, "P40": 24576, "T4": 16384, "V100": 32768, "V100M16": 16384,
    "V100M32": 32768, "A10": 24576, "A100": 40960, "A100-80G": 81920, "H100": 81920,
    "G1": 16384, "G2": 32768, "G3": 24576,
}
#: GPU memory (MiB) of a type the table does not know.
DEFAULT_GPU_MEM = 16384


def gpu_mem_capacity(gpu_type: str | None, overrides: Mapping | None = None) -> int:
    """Memory of one GPU of a type (MiB).

    Parameters
    ----------
    gpu_type : str or None
        GPU type name (e.g. ``"V100"``); None or an unknown type gets
        `DEFAULT_GPU_MEM`.
    overrides : Mapping, optional
        ``{gpu_type: MiB}`` taking precedence over `GPU_MEM_MIB` (an
        allocation's ``stats["gpu_mem_capacity"]``).

    Returns
    -------
    int
        ``overrides[gpu_type]`` if given, else ``GPU_MEM_MIB[gpu_type]``, else
        ``DEFAULT_GPU_MEM`` (16384 MiB).
    """
    if overrides and gpu_type in overrides:
        return int(overrides[gpu_type])
    return GPU_MEM_MIB.get(gpu_type or "", DEFAULT_GPU_MEM)


def server_gpu_mem(server, overrides: Mapping | None = None) -> int:
    """Memory of each GPU of ``server`` (MiB): its ``gpu_mem``, else by type."""
    if server.gpu_mem is not None:
        return int(server.gpu_mem)
    return gpu_mem_capacity(server.gpu_type, overrides)


def gpu_mem_caps(cluster: Cluster, overrides: Mapping | None = None) -> tuple[int, ...]:
    """Memory capacity (MiB) of every GPU, by global GPU index (cached on the
    cluster when there are no overrides)."""
    if not overrides:
        hit = cluster.__dict__.get("_gpu_mem_caps")
        if hit is not None:
            return hit
    caps = tuple(server_gpu_mem(s, overrides) for s in cluster.servers for _ in range(s.gpus))
    if not overrides:
        cluster.__dict__["_gpu_mem_caps"] = caps
    return caps


def type_mem_caps(cluster: Cluster) -> dict[str | None, int]:
    """The largest GPU memory (MiB) of each GPU type present (cached)."""
    hit = cluster.__dict__.get("_type_mem_caps")
    if hit is None:
        hit = {t: max(sizes) for t, sizes in _type_mem_sets(cluster).items()}
        cluster.__dict__["_type_mem_caps"] = hit
    return hit


def _type_mem_sets(cluster: Cluster) -> dict[str | None, frozenset[int]]:
    """Every GPU memory size (MiB) of each GPU type present (cached on the
    cluster: a session's `needs` per submitted job then costs no walk over
    the servers)."""
    hit = cluster.__dict__.get("_type_mem_sets")
    if hit is None:
        sets: dict[str | None, set[int]] = defaultdict(set)
        for s in cluster.servers:
            if s.gpus:
                sets[s.gpu_type].add(server_gpu_mem(s))
        hit = {t: frozenset(c) for t, c in sets.items()}
        cluster.__dict__["_type_mem_sets"] = hit
    return hit


def fits_type(cluster: Cluster, job: Job, gpu_type: str | None) -> bool:
    """True when the least memory the job runs with fits a GPU of ``gpu_type``
    alone (a job is never placed on a type whose GPUs are too small for it)."""
    if job.gpu_mem is None:
        return True
    cap = type_mem_caps(cluster).get(gpu_type)
    return cap is None or _least(job) <= cap


def restrict_types(cluster: Cluster, jobs: tuple) -> tuple:
    """The jobs, each that declares GPU memory limited to the GPU types present
    whose GPUs can hold it alone (``gpu_types`` set to them; jobs that fit
    every type are returned as they are)."""
    types = cluster.gpu_types
    out, changed = [], False
    for j in jobs:
        if j.gpu_mem is not None and j.gpus:
            ok = tuple(t for t in types if j.allows(t) and fits_type(cluster, j, t))
            if len(ok) < sum(1 for t in types if j.allows(t)):
                from dataclasses import replace
                j, changed = replace(j, gpu_types=ok), True
        out.append(j)
    return tuple(out) if changed else jobs


def _least(job: Job) -> int:
    mem = job.gpu_mem
    assert mem is not None, "a job that declares GPU memory"
    return mem if job.guaranteed or job.gpu_mem_min is None else job.gpu_mem_min


# ------------------------------------------------------------------ demands
def mem_demand(job: Job, cap: int) -> int:
    """GPU memory (MiB) job wants on one GPU of capacity ``cap``: its
    ``gpu_mem``, else its milli share of ``cap``."""
    if job.gpu_mem is not None:
        return int(job.gpu_mem)
    return cap * job.gpu_milli // MILLI


def mem_floor(job: Job, cap: int) -> int:
    """The least GPU memory (MiB) a share of the job may hold: its demand for
    a guaranteed job, else ``gpu_mem_min`` when declared."""
    if job.guaranteed or job.gpu_mem_min is None:
        return mem_demand(job, cap)
    return int(job.gpu_mem_min)


def compute_demand(job: Job) -> int:
    """Compute (milli-SM) the job wants on each GPU: ``gpu_compute``, else ``gpu_milli``."""
    return int(job.gpu_compute) if job.gpu_compute is not None else job.gpu_milli


def can_ride(job: Job) -> bool:
    """True when the job may hold opportunistic shares (milli 0): not
    guaranteed, with declared ``gpu_mem`` and ``gpu_compute``."""
    return not job.guaranteed and job.gpu_mem is not None and job.gpu_compute is not None


def share_mem(job: Job, share: GpuShare, cap: int) -> int:
    """GPU memory (MiB) a share uses (see the module notes)."""
    if share.mem is not None:
        return int(share.mem)
    if job.gpu_mem is not None:
        return int(job.gpu_mem)
    return cap * share.milli // MILLI


def share_compute(job: Job, share: GpuShare) -> int:
    """Compute (milli-SM) a share uses (see the module notes)."""
    if share.compute is not None:
        return int(share.compute)
    if job.gpu_compute is not None:
        return int(job.gpu_compute)
    return share.milli


# ------------------------------------------------------------------- checks
def share_problems(cluster: Cluster, job: Job, p: Placement, where: str, *,
                   gpu_index: Mapping[str, int] | None = None,
                   caps: Sequence[int] | None = None) -> list[str]:
    """What is wrong with the memory and compute of one placement's shares
    (the share rules of the module notes; unknown GPUs are left to the caller).
    ``gpu_index`` and ``caps`` (GPU name -> global index, memory per GPU)
    default to the cluster's; the final check passes its own reading."""
    out: list[str] = []
    gidx = cluster.gpu_index if gpu_index is None else gpu_index
    if caps is None:
        caps = gpu_mem_caps(cluster)
    kinds = {g.milli == 0 for g in p.gpus}
    if True in kinds and not can_ride(job):
        out.append(f"{where}: opportunistic share (milli 0) for a job that "
                   + ("is guaranteed" if job.guaranteed else
                      "does not declare gpu_mem and gpu_compute"))
    elif len(kinds) > 1:
        out.append(f"{where}: mixes opportunistic shares (milli 0) and held ones")
    for g in p.gpus:
        k = gidx.get(g.gpu)
        if k is None:
            continue
        cap = caps[k]
        bad = _share_line(job, g, cap)
        if bad:
            out.append(f"{where}: {g.gpu} {bad}")
            break
    return out


def _share_line(job: Job, g: GpuShare, cap: int) -> str | None:
    if g.mem is None and g.compute is None:
        return None
    dm, fm, dc = mem_demand(job, cap), mem_floor(job, cap), compute_demand(job)
    if g.mem is not None:
        if job.guaranteed and g.mem != dm:
            return f"memory {g.mem} MiB, a guaranteed job gets its {dm} MiB"
        if not fm <= g.mem <= dm:
            return f"memory {g.mem} MiB, expected {fm}..{dm} MiB"
    if g.compute is not None:
        if job.guaranteed and g.compute != dc:
            return f"compute {g.compute} milli, a guaranteed job gets its {dc}"
        if not 0 <= g.compute <= dc:
            return f"compute {g.compute} milli, expected 0..{dc}"
    return None


def usage(cluster: Cluster, by_id: Mapping[str, Job], placements: Sequence[Placement],
          overrides: Mapping | None = None, *, gpu_index: Mapping[str, int] | None = None,
          caps: Sequence[int] | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """Memory (MiB) and compute (milli) in use per global GPU index."""
    gidx = cluster.gpu_index if gpu_index is None else gpu_index
    if caps is None:
        caps = gpu_mem_caps(cluster, overrides)
    mem: dict[int, int] = defaultdict(int)
    comp: dict[int, int] = defaultdict(int)
    for p in placements:
        job = by_id.get(p.job)
        if job is None:
            continue
        for g in p.gpus:
            k = gidx.get(g.gpu)
            if k is None:
                continue
            mem[k] += share_mem(job, g, caps[k])
            comp[k] += share_compute(job, g)
    return mem, comp


def capacity_problems(cluster: Cluster, jobs: Sequence[Job], placements: Sequence[Placement],
                      overrides: Mapping | None = None, *,
                      gpu_index: Mapping[str, int] | None = None) -> list[str]:
    """GPUs whose memory or compute the placements over-commit.  With
    ``gpu_index`` (GPU name -> global index: the final check's own reading)
    nothing kept on the cluster is used."""
    by_id = {j.id: j for j in jobs}
    if not _declares(cluster, jobs, placements):
        return []
    caps: Sequence[int]
    if gpu_index is None:
        caps = gpu_mem_caps(cluster, overrides)
        ids = list(cluster.gpu_ids)
    else:
        caps = [server_gpu_mem(s, overrides) for s in cluster.servers for _ in range(s.gpus)]
        ids = [""] * len(gpu_index)
        for g, k in gpu_index.items():
            ids[k] = g
    mem, comp = usage(cluster, by_id, placements, overrides, gpu_index=gpu_index, caps=caps)
    out = [f"GPU {ids[k]}: jobs need {v} MiB of GPU memory, capacity {caps[k]}"
           for k, v in sorted(mem.items()) if v > caps[k]]
    out += [f"GPU {ids[k]}: compute {v} milli allocated, capacity {MILLI}"
            for k, v in sorted(comp.items()) if v > MILLI]
    return out


def _declares(cluster: Cluster, jobs: Sequence[Job], placements) -> bool:
    """True when anything declares memory or compute (else the milli rule covers both)."""
    if any(j.gpu_mem is not None or j.gpu_compute is not None for j in jobs):
        return True
    return any(g.mem is not None or g.compute is not None or g.milli == 0
               for p in placements for g in p.gpus)


# ------------------------------------------------------------------- needs
def needs(cluster: Cluster, jobs: Sequence[Job]) -> set[str]:
    """The capabilities this input calls for (see the module notes)."""
    out: set[str] = set()
    caps_by_type = _type_mem_sets(cluster)
    for j in jobs:
        if j.gpu_compute is not None:
            out.add("gpu-compute")
        if j.gpu_mem is not None and j.gpus and "gpu-memory" not in out:
            # types too small for the job alone are never used (fits_type)
            caps = [c for t, cs in caps_by_type.items() if j.allows(t) and fits_type(cluster, j, t)
                    for c in cs]
            if any(j.gpu_mem > c * j.gpu_milli // MILLI for c in caps):
                out.add("gpu-memory")
        cur = j.current
        if cur is not None:
            for g in cur.gpus:
                if g.compute is not None or g.milli == 0:
                    out.add("gpu-compute")
                if g.mem is not None:
                    out.add("gpu-memory")
    if "gpu-compute" in out:
        out.add("gpu-memory")
    return out


__all__ = ["DEFAULT_GPU_MEM", "GPU_MEM_MIB", "can_ride", "capacity_problems", "compute_demand",
           "fits_type", "restrict_types", "type_mem_caps",
           "gpu_mem_capacity", "gpu_mem_caps", "mem_demand", "mem_floor", "needs",
           "server_gpu_mem", "share_compute", "share_mem", "share_problems", "usage"]
