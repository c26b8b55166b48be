"""Frozen data model: cluster, servers, jobs, profiles, placements, allocations.

Units (see the design notes): CPU in milli-cores, memory in MiB, GPU share in
milli-GPU (1000 = one whole GPU), times in seconds.  Every object here is an
immutable value; derived views (the hierarchy graph, GPU ids) are computed on
demand and cached.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

MILLI = 1000  # milli-GPU in one whole GPU

#: Hierarchy levels alloc knows, outermost first.  An instance uses a subset
#: that contains "server" and ends with "gpu".
KNOWN_LEVELS = ("rack", "server", "socket", "switch", "gpu")
#: Pseudo level above every declared one: a job spread over several racks.
CLUSTER = "cluster"


class FrozenMap(Mapping):
    """A read-only mapping (picklable, deep-copyable, hashable when its values are)."""
    __slots__ = ("_d",)

    def __init__(self, d: Mapping | None = None):
        self._d = dict(d or {})

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __repr__(self):
        return repr(self._d)

    def __hash__(self):
        return hash(frozenset(self._d.items()))

    def __reduce__(self):
        return (FrozenMap, (self._d,))


def frozen_map(d: Mapping | None = None) -> Mapping:
    return d if isinstance(d, FrozenMap) else FrozenMap(d)


@dataclass(frozen=True)
class Server:
    id: str
    cpu: int
    mem: int
    gpus: int = 0
    gpu_type: str | None = None
    rack: str | None = None
    sockets: int = 1
    switches_per_socket: int = 1

    def gpu_ids(self) -> tuple[str, ...]:
        return tuple(f"{self.id}/gpu{k}" for k in range(self.gpus))

    def gpu_domain(self, k: int, level: str) -> str:
        """Name of the node at ``level`` that holds this server's GPU ``k``."""
        if level == "gpu":
            return f"{self.id}/gpu{k}"
        if level == "server":
            return self.id
        if level == "rack":
            return self.rack or ""
        per_socket = max(1, self.gpus // max(1, self.sockets))
        sock = min(k // per_socket, self.sockets - 1)
        if level == "socket":
            return f"{self.id}/socket{sock}"
        if level == "switch":
            per_switch = max(1, per_socket // max(1, self.switches_per_socket))
            sw = min((k - sock * per_socket) // per_switch, self.switches_per_socket - 1)
            return f"{self.id}/socket{sock}/switch{sw}"
        raise ValueError(f"unknown level {level!r}")


@dataclass(frozen=True)
class Cell:
    """A tenant's guaranteed cell: ``count`` cells at ``level`` of ``gpu_type``."""
    level: str
    count: int
    gpu_type: str | None = None


@dataclass(frozen=True)
class Tenant:
    id: str
    cells: tuple[Cell, ...] = ()


@dataclass(frozen=True)
class Cluster:
    servers: tuple[Server, ...]
    levels: tuple[str, ...] = ("server", "gpu")
    tenants: Mapping[str, Tenant] = field(default_factory=frozen_map)

    @cached_property
    def server_index(self) -> Mapping[str, int]:
        return {s.id: i for i, s in enumerate(self.servers)}

    @cached_property
    def gpu_ids(self) -> tuple[str, ...]:
        return tuple(g for s in self.servers for g in s.gpu_ids())

    @cached_property
    def gpu_index(self) -> Mapping[str, int]:
        return {g: i for i, g in enumerate(self.gpu_ids)}

    @cached_property
    def gpu_server(self) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.servers) for _ in range(s.gpus))

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(sorted({s.gpu_type for s in self.servers if s.gpus and s.gpu_type}))

    @property
    def total_gpus(self) -> int:
        return sum(s.gpus for s in self.servers)

    def server(self, sid: str) -> Server:
        return self.servers[self.server_index[sid]]

    def graph(self):
        """The hierarchy as a networkx DiGraph (see :mod:`alloc.topology`)."""
        from .topology import hierarchy_graph
        return hierarchy_graph(self)


@dataclass(frozen=True)
class Profile:
    """Throughput sensitivity of a DNN model.

    ``tput[i][k]`` is the job's speed (1.0 = speed at the GPU-proportional share
    on the reference GPU type) with ``cpu_per_gpu[i]`` milli-cores and
    ``mem_per_gpu[k]`` MiB per GPU; ``None`` marks an infeasible cell.
    ``gpu_speed`` is the relative speed per GPU type (missing type = 1.0),
    ``span`` the factor by the hierarchy level a multi-GPU job's GPUs span
    (missing level = 1.0), ``scaling`` the speed-up with n GPUs relative to one GPU
    (elastic jobs; missing = linear).
    """
    name: str
    cpu_per_gpu: tuple[int, ...] = ()
    mem_per_gpu: tuple[int, ...] = ()
    tput: tuple[tuple[float | None, ...], ...] = ()
    gpu_speed: Mapping[str, float] = field(default_factory=frozen_map)
    span: Mapping[str, float] = field(default_factory=frozen_map)
    scaling: Mapping[int, float] = field(default_factory=frozen_map)
    reference_gpu: str | None = None
    meta: Mapping[str, object] = field(default_factory=frozen_map, compare=False)

    @property
    def has_grid(self) -> bool:
        return bool(self.tput)

    def grid_value(self, cpu_per_gpu: float, mem_per_gpu: float) -> float:
        """Speed at a CPU/memory-per-GPU point: the best grid cell at or below it
        in both dimensions (0.0 when below every feasible cell)."""
        if not self.tput:
            return 1.0
        best = 0.0
        for i, c in enumerate(self.cpu_per_gpu):
            if c > cpu_per_gpu + 1e-9:
                break
            for k, m in enumerate(self.mem_per_gpu):
                if m > mem_per_gpu + 1e-9:
                    break
                v = self.tput[i][k]
                if v is not None and v > best:
                    best = v
        return best

    def speed(self, gpu_type: str | None) -> float:
        return float(self.gpu_speed.get(gpu_type, 1.0)) if gpu_type else 1.0

    def span_factor(self, level: str | None) -> float:
        return float(self.span.get(level, 1.0)) if level else 1.0


@dataclass(frozen=True)
class GpuShare:
    gpu: str
    milli: int


@dataclass(frozen=True)
class Placement:
    job: str
    gpus: tuple[GpuShare, ...] = ()
    cpu: Mapping[str, int] = field(default_factory=frozen_map)
    mem: Mapping[str, int] = field(default_factory=frozen_map)
    throughput: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "cpu", frozen_map(self.cpu))
        object.__setattr__(self, "mem", frozen_map(self.mem))
        object.__setattr__(self, "gpus", tuple(self.gpus))

    @property
    def total_cpu(self) -> int:
        return sum(self.cpu.values())

    @property
    def total_mem(self) -> int:
        return sum(self.mem.values())

    def same_as(self, other: "Placement | None") -> bool:
        """Same GPUs (with shares) and same servers: no migration needed."""
        if other is None:
            return False
        return (sorted((g.gpu, g.milli) for g in self.gpus)
                == sorted((g.gpu, g.milli) for g in other.gpus)
                and set(self.cpu) == set(other.cpu))

    def __hash__(self):
        return hash((self.job, self.gpus, tuple(sorted(self.cpu.items())),
                     tuple(sorted(self.mem.items())), self.throughput))

    def __eq__(self, other):
        return (isinstance(other, Placement) and self.job == other.job
                and self.gpus == other.gpus and dict(self.cpu) == dict(other.cpu)
                and dict(self.mem) == dict(other.mem)
                and self.throughput == other.throughput)


@dataclass(frozen=True)
class Job:
    id: str
    gpus: int = 0
    gpu_milli: int = MILLI
    cpu: int = 0
    mem: int = 0
    gpu_types: tuple[str, ...] = ()
    locality: str | None = None
    model: str | None = None
    profile: Profile | None = field(default=None, compare=False, repr=False)
    tenant: str | None = None
    guaranteed: bool = False
    priority: int = 0
    weight: float = 1.0
    current: Placement | None = None
    min_gpus: int | None = None
    max_gpus: int | None = None
    gpu_mem: int | None = None  # GPU memory the job needs per GPU (MiB), co-location

    @property
    def milli_total(self) -> int:
        return self.gpus * self.gpu_milli

    @property
    def elastic(self) -> bool:
        return self.min_gpus is not None or self.max_gpus is not None

    def allows(self, gpu_type: str | None) -> bool:
        return not self.gpu_types or gpu_type in self.gpu_types


class Status(str, enum.Enum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Allocation:
    placements: tuple[Placement, ...] = ()
    unplaced: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    status: Status = Status.UNKNOWN
    value: float = 0.0
    bound: float | None = None
    wall_time_s: float = 0.0
    solver: str = ""
    objective: str = ""
    instance: str = ""
    stats: Mapping[str, object] = field(default_factory=frozen_map, compare=False)

    def placement(self, job_id: str) -> Placement | None:
        for p in self.placements:
            if p.job == job_id:
                return p
        return None

    @property
    def gap(self) -> float | None:
        """Relative gap between value and bound (None without a bound)."""
        if self.bound is None:
            return None
        denom = max(abs(self.bound), 1e-9)
        return max(0.0, (self.bound - self.value) / denom)


@dataclass(frozen=True)
class Instance:
    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    models: Mapping[str, Profile] = field(default_factory=frozen_map)
    meta: Mapping[str, object] = field(default_factory=frozen_map, compare=False)
