"""Frozen data model: cluster, servers, jobs, profiles, placements, allocations.

Units (see the design notes): CPU in milli-cores, memory in MiB, GPU share in
milli-GPU (1000 = one whole GPU), times in seconds.  Every object here is an
immutable value; derived views (GPU ids, indexes) are computed on demand and
cached on the object.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView

from .gpukey import gpu_key

MILLI = 1000  # milli-GPU in one whole GPU
#: Longest name accepted (ids, models, tenants, GPU types).
MAX_NAME = 256
#: A relative gap below this is floating-point rounding of the value's sum,
#: reported as 0.
GAP_ZERO = 1e-12

#: The five level names of the first instance files, outermost first: a
#: special case of the general form (any names above ``server``, see
#: `alloc.topology`).
KNOWN_LEVELS = ("rack", "server", "socket", "switch", "gpu")
#: Levels whose meaning alloc fixes, outermost first: a server, and inside it
#: the CPU sockets, the PCIe switches and the GPUs.  Every other name is an
#: operator's level above the server.
SERVER_LEVELS = ("server", "socket", "switch", "gpu")
#: Pseudo level above every declared one: a job spread over several racks.
CLUSTER = "cluster"
#: GPU type of a server that has GPUs but declares none (the API only; files
#: must name it).
DEFAULT_GPU_TYPE = "gpu"


class FrozenMap(Mapping[Any, Any]):
    """A read-only mapping (picklable, deep-copyable, hashable when its values are)."""
    __slots__ = ("_d",)

    def __init__(self, d: Mapping[Any, Any] | None = None) -> None:
        self._d = dict(d or {})

    def __getitem__(self, k: Any) -> Any:
        return self._d[k]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return repr(self._d)

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return (FrozenMap, (self._d,))

    # the mixin methods of Mapping are written in Python; delegate to the dict
    def __contains__(self, k: object) -> bool:
        return k in self._d

    def get(self, k: Any, default: Any = None) -> Any:
        """The value of ``k``, or ``default``."""
        return self._d.get(k, default)

    def keys(self) -> KeysView[Any]:
        """The keys."""
        return self._d.keys()

    def values(self) -> ValuesView[Any]:
        """The values."""
        return self._d.values()

    def items(self) -> ItemsView[Any, Any]:
        """The (key, value) pairs."""
        return self._d.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._d == other._d
        return isinstance(other, Mapping) and self._d == dict(other.items())

    @classmethod
    def wrap(cls, d: dict[Any, Any]) -> "FrozenMap":
        """A FrozenMap over ``d`` itself (no copy: ``d`` must not change afterwards)."""
        out = cls.__new__(cls)
        out._d = d
        return out


def frozen_map(d: Mapping[Any, Any] | None = None) -> Mapping[Any, Any]:
    """``d`` as a [`FrozenMap`][alloc.model.FrozenMap] (unchanged when it already is one)."""
    return d if isinstance(d, FrozenMap) else FrozenMap(d)


@dataclass(frozen=True)
class Server:
    """One server.

    Parameters
    ----------
    id : str
        Unique name (no ``/``); its GPUs are ``"<id>/gpu<k>"``, ``k = 0..gpus-1``.
    cpu : int
        CPU capacity in milli-cores (``24000`` = 24 cores).
    mem : int
        Memory capacity in MiB.
    gpus : int
        Number of GPUs (0 = a CPU-only server).
    gpu_type : str or None
        GPU model (``"V100"``); needed when ``gpus > 0``.
    rack : str or None
        Rack name: the short form of ``domains["rack"]`` (both given and
        different is an error).
    sockets, switches_per_socket : int
        How the GPUs split evenly over CPU sockets and PCIe switches.
    gpu_mem : int or None
        Memory of each of its GPUs in MiB (None: the table of its GPU type,
        `alloc.resources.gpu_mem_capacity`).
    domains : mapping of str to str
        Its domain at each level of the cluster above ``server`` (level name
        -> domain id, e.g. ``{"block": "b3", "rack": "r12"}``).  A domain is
        named by its id together with the ids of the domains above it, as
        Kubernetes' topology-aware schedulers do: two racks called ``r1`` in
        different blocks are two racks.

    Examples
    --------
    >>> from alloc import Server
    >>> s = Server("s0", cpu=24000, mem=512000, gpus=8, gpu_type="V100", sockets=2)
    >>> s.gpus, s.gpu_type, s.cpu // 1000
    (8, 'V100', 24)
    >>> Server("s1", 24000, 512000, 8, "V100", rack="r1").domains["rack"]
    'r1'
    """
    id: str
    cpu: int
    mem: int
    gpus: int = 0
    gpu_type: str | None = None
    rack: str | None = None
    sockets: int = 1
    switches_per_socket: int = 1
    gpu_mem: int | None = None
    domains: Mapping[str, str] = field(default_factory=frozen_map)

    def __post_init__(self) -> None:
        # ``rack`` and ``domains["rack"]`` say the same: each fills in the other
        d, rack = self.domains, self.rack
        if type(d) is not FrozenMap:
            if not isinstance(d, (dict, Mapping)):
                return                               # validation names it
            d = FrozenMap(d)
            object.__setattr__(self, "domains", d)
        r = d._d.get("rack")
        if r == rack:
            return
        if rack is None:
            if isinstance(r, str):
                object.__setattr__(self, "rack", r)
        elif r is None:
            object.__setattr__(self, "domains", FrozenMap.wrap({**d._d, "rack": rack}))

    def gpu_ids(self) -> tuple[str, ...]:
        """The names of this server's GPUs, in index order."""
        return tuple(gpu_key(self.id, k) for k in range(self.gpus))

    def gpu_domain(self, k: int, level: str) -> str:
        """Name of the node at ``level`` that holds this server's GPU ``k``
        (at a level above the server: its domain id there, ``""`` when it
        has none)."""
        if level == "gpu":
            return gpu_key(self.id, k)
        if level == "server":
            return self.id
        if level not in SERVER_LEVELS:
            return self.domains.get(level) or ""
        per_socket = max(1, self.gpus // max(1, self.sockets))
        sock = min(k // per_socket, self.sockets - 1)
        if level == "socket":
            return f"{self.id}/socket{sock}"
        per_switch = max(1, per_socket // max(1, self.switches_per_socket))
        sw = min((k - sock * per_socket) // per_switch, self.switches_per_socket - 1)
        return f"{self.id}/socket{sock}/switch{sw}"


@dataclass(frozen=True)
class Cell:
    """A tenant's guaranteed cells: ``count`` cells at hierarchy ``level`` of
    GPU type ``gpu_type`` (None: the cluster's only type).

    Examples
    --------
    >>> from alloc import Cell, Cluster, Server, Tenant
    >>> servers = (Server("s0", cpu=24000, mem=512000, gpus=8, gpu_type="V100"),)
    >>> research = Tenant("research", (Cell("server", 1, "V100"),))
    >>> Cluster(servers, tenants={"research": research}).tenants["research"].cells[0].count
    1
    """
    level: str
    count: int
    gpu_type: str | None = None


@dataclass(frozen=True)
class Tenant:
    """A tenant (virtual cluster) and the cells guaranteed to it (HiveD).

    Examples
    --------
    >>> from alloc import Cell, Tenant
    >>> t = Tenant("research", (Cell("server", 1, "V100"), Cell("gpu", 2)))
    >>> [(c.level, c.count) for c in t.cells]
    [('server', 1), ('gpu', 2)]
    """
    id: str
    cells: tuple[Cell, ...] = ()


@dataclass(frozen=True)
class Cluster:
    """The servers, the declared hierarchy levels and the tenants.

    Parameters
    ----------
    servers : tuple of Server
    levels : tuple of str
        Hierarchy levels outermost first (default ``("server", "gpu")``):
        any names of the operator's own above ``"server"`` (each server
        gives its domain there in `Server.domains`), then ``"server"``,
        then those of ``"socket"``, ``"switch"`` and ``"gpu"`` that apply,
        in that order.  ``Cluster(servers, levels=("zone", "block", "rack",
        "server", "gpu"))`` with each server's ``domains`` is the form of
        Kubernetes' topology labels.
    tenants : mapping of str to Tenant
        Tenants and their guaranteed cells (empty: no tenancy).

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> c = Cluster(tuple(Server(f"s{i}", cpu=24000, mem=512000, gpus=8, gpu_type="V100")
    ...                   for i in range(2)))
    >>> c.total_gpus, c.gpu_ids[:2], c.levels
    (16, ('s0/gpu0', 's0/gpu1'), ('server', 'gpu'))
    """
    servers: tuple[Server, ...]
    levels: tuple[str, ...] = ("server", "gpu")
    tenants: Mapping[str, Tenant] = field(default_factory=frozen_map)

    @cached_property
    def server_index(self) -> Mapping[str, int]:
        """Server id to position."""
        return {s.id: i for i, s in enumerate(self.servers)}

    @cached_property
    def gpu_ids(self) -> tuple[str, ...]:
        """Every GPU name, servers in order (the global GPU index)."""
        return tuple(g for s in self.servers for g in s.gpu_ids())

    @cached_property
    def gpu_index(self) -> Mapping[str, int]:
        """GPU name to global index."""
        return {g: i for i, g in enumerate(self.gpu_ids)}

    @cached_property
    def gpu_server(self) -> tuple[int, ...]:
        """Server position of each global GPU index."""
        return tuple(i for i, s in enumerate(self.servers) for _ in range(s.gpus))

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        """The GPU types present, sorted."""
        return tuple(sorted({s.gpu_type for s in self.servers if s.gpus and s.gpu_type}))

    @property
    def total_gpus(self) -> int:
        """Number of GPUs in the cluster."""
        return sum(s.gpus for s in self.servers)

    def server(self, sid: str) -> Server:
        """The server called ``sid`` (``KeyError`` when unknown)."""
        return self.servers[self.server_index[sid]]

    @classmethod
    def from_graph(cls, graph: Any, tenants: Mapping[str, Tenant] | None = None) -> "Cluster":
        """The cluster of a hierarchy graph: a ``networkx.DiGraph`` tree whose
        root is the cluster, whose inner nodes carry a ``level`` attribute
        (any name above the servers) and whose server nodes carry the
        `Server` fields (`alloc.topology.hierarchy_graph` gives it back).

        Raises
        ------
        InputError
            One line naming the node: not a tree, a leaf that is not a
            server or a GPU, a server in two domains of one level, a level
            name twice on one path, a missing or bad field.

        Examples
        --------
        >>> import networkx as nx
        >>> from alloc import Cluster
        >>> g = nx.DiGraph()
        >>> g.add_node("cluster", level="cluster")
        >>> g.add_node("nvl0", level="nvlink")
        >>> g.add_edge("cluster", "nvl0")
        >>> for i in range(2):
        ...     g.add_node(f"t{i}", level="server", cpu=72000, mem=480000, gpus=4,
        ...                gpu_type="GB200")
        ...     g.add_edge("nvl0", f"t{i}")
        >>> c = Cluster.from_graph(g)
        >>> c.levels, c.servers[1].domains["nvlink"]
        (('nvlink', 'server'), 'nvl0')
        """
        from .graph_tree import read_tree
        levels, rows = read_tree(graph)
        servers = tuple(Server(r["id"], r["cpu"], r["mem"], r["gpus"], r["gpu_type"], None,
                               r["sockets"], r["switches_per_socket"], r["gpu_mem"],
                               FrozenMap.wrap(r["domains"])) for r in rows)
        return cls(servers, levels, frozen_map(tenants or {}))

    @cached_property
    def gpu_first(self) -> tuple[int, ...]:
        """Global index of each server's first GPU (servers in order)."""
        out, n = [], 0
        for s in self.servers:
            out.append(n)
            n += s.gpus
        return tuple(out)


@dataclass(frozen=True)
class GoodputType:
    """A job's goodput model on one GPU type (`alloc.goodput`).

    Parameters
    ----------
    local_bsz : (int, int)
        The per-GPU batch range ``(bLo, bHi)``.
    params : tuple of float or None
        The seven fitted throughput parameters ``(alpha_c, beta_c, alpha_n,
        beta_n, alpha_r, beta_r, gamma)`` (seconds; None: not run on this
        type yet).
    rate : float or None
        Its samples per second on one GPU of this type (projects a model
        from another type onto this one; None: unknown).

    Examples
    --------
    >>> from alloc import GoodputType
    >>> GoodputType((32, 1024)).params is None
    True
    """
    local_bsz: tuple[int, int]
    params: tuple[float, ...] | None = None
    rate: float | None = None


@dataclass(frozen=True)
class Goodput:
    """A job's goodput profile: its batch limits, gradient statistics and a
    throughput model per GPU type (Pollux's model; the formulas are in
    `alloc.goodput.model`).

    Parameters
    ----------
    init_batch, max_batch : int
        ``M0`` (the batch it was validated at) and ``Mmax``.
    types : mapping of str to GoodputType
        The GPU types it may run on, each with its model.
    grad : (float, float) or None
        Gradient squared norm and variance now (None: not measured yet).
    restart_factor : float
        In (0, 1]: the share of its value a running job keeps when its
        placement changes (a restart; 1: free).

    Examples
    --------
    >>> from alloc import Goodput, GoodputType
    >>> g = Goodput(128, 4096, {"T4": GoodputType((32, 1024))})
    >>> g.fitted
    False
    """
    init_batch: int
    max_batch: int
    types: Mapping[str, GoodputType] = field(default_factory=frozen_map)
    grad: tuple[float, float] | None = None
    restart_factor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", frozen_map(self.types))

    @property
    def fitted(self) -> bool:
        """True when some type has a model and the gradient is measured."""
        return self.grad is not None and any(t.params is not None for t in self.types.values())


@dataclass(frozen=True)
class Profile:
    """Throughput sensitivity of a DNN model.

    ``tput[i][k]`` is the job's speed (1.0 = speed at the GPU-proportional share
    on the reference GPU type) with ``cpu_per_gpu[i]`` milli-cores and
    ``mem_per_gpu[k]`` MiB per GPU; ``None`` marks an infeasible cell.
    ``gpu_speed`` is the relative speed per GPU type (missing type = 1.0),
    ``span`` the factor by the hierarchy level a multi-GPU job's GPUs span
    (any level name; a missing level: `span_factor`), ``scaling`` the speed-up with n GPUs relative to one GPU
    (elastic jobs; missing = linear).  ``goodput`` (a `Goodput`), when set,
    makes the job's speed its goodput: the solver picks its GPU count, nodes
    and batch (`alloc.goodput.value`).

    Examples
    --------
    >>> from alloc import load_profile
    >>> p = load_profile("res18")
    >>> p.has_grid, p.reference_gpu, p.speed("K80") < p.speed("V100")
    (True, 'V100', True)
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
    goodput: Goodput | None = None

    @property
    def has_grid(self) -> bool:
        """True when the profile has a CPU x memory grid."""
        return bool(self.tput)

    def grid_value(self, cpu_per_gpu: float, mem_per_gpu: float) -> float:
        """Speed at a CPU/memory-per-GPU point: the best grid cell at or below it
        in both dimensions (0.0 when below every feasible cell; 1.0 without a grid)."""
        if not self.tput:
            return 1.0
        memo = self.__dict__.get("_grid_memo")
        if memo is None:
            memo = self.__dict__["_grid_memo"] = {}
        key = (cpu_per_gpu, mem_per_gpu)
        v = memo.get(key)
        if v is None:
            if len(memo) > 4096:
                memo.clear()
            v = memo[key] = self._grid_value(cpu_per_gpu, mem_per_gpu)
        return v

    def _grid_value(self, cpu_per_gpu: float, mem_per_gpu: float) -> float:
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
        """Relative speed on ``gpu_type`` (1.0 when not given)."""
        return float(self.gpu_speed.get(gpu_type, 1.0)) if gpu_type else 1.0

    def span_factor(self, level: str | None) -> float:
        """Factor for a multi-GPU job whose GPUs span ``level``: the profile's;
        1.0 for one of the first five names or ``cluster`` it does not give;
        for a level of the operator's it does not give, the lowest factor it
        gives above the servers (a job crossing servers runs at least that
        slowly), 1.0 when it gives none.

        Examples
        --------
        >>> from alloc.model import Profile, frozen_map
        >>> p = Profile("p", span=frozen_map({"server": 1.0, "rack": 0.5, "cluster": 0.4}))
        >>> p.span_factor("rack"), p.span_factor("socket"), p.span_factor("nvl72")
        (0.5, 1.0, 0.4)
        """
        if not level:
            return 1.0
        v = self.span.get(level)
        if v is not None:
            return float(v)
        if level in KNOWN_LEVELS or level == CLUSTER:
            return 1.0
        outer = [float(x) for k, x in self.span.items() if k not in SERVER_LEVELS]
        return min(outer) if outer else 1.0


@dataclass(frozen=True)
class GpuShare:
    """What a job holds of one GPU.

    Parameters
    ----------
    gpu : str
        The GPU's name.
    milli : int
        Milli-GPU held (the allocation, at most 1000 per GPU).  0 marks an
        *opportunistic share*: the job holds none of the GPU and runs on its
        spare memory and compute under the caps below (AntMan).
    mem : int or None
        GPU memory granted in MiB (None: the job's ``gpu_mem``, else its
        ``milli`` share of the GPU's memory).  Below the job's ``gpu_mem`` the
        rest lives in host memory.
    compute : int or None
        Cap on the GPU's compute (streaming multiprocessors) in milli of the
        GPU (None: the job's ``gpu_compute``, else ``milli``); the rules are
        in `alloc.resources`.

    Examples
    --------
    >>> from alloc import GpuShare
    >>> GpuShare("s0/gpu3", 250)
    GpuShare(gpu='s0/gpu3', milli=250, mem=None, compute=None)
    """
    gpu: str
    milli: int
    mem: int | None = None
    compute: int | None = None


@dataclass(frozen=True)
class Placement:
    """Where a job runs.

    Parameters
    ----------
    job : str
        The job's id.
    gpus : tuple of GpuShare
        Its GPUs with their shares (empty for a CPU-only job).
    cpu, mem : mapping of server id to int
        Milli-cores and MiB on each server (the servers holding its GPUs; one
        server for a CPU-only job).
    throughput : float
        The job's throughput there (recomputed by [`alloc.allocate`][alloc.solve.allocate]).
    batch : int or None
        Goodput jobs: the per-GPU batch ``b`` chosen for this placement
        (recomputed by `allocate`; None for other jobs).
    accum : int
        Goodput jobs: gradient-accumulation steps ``s`` per update (the
        total batch is ``gpus * batch * (accum + 1)``).

    Examples
    --------
    >>> from alloc import GpuShare, Placement
    >>> p = Placement("train", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
    ...               {"s0": 6000}, {"s0": 128000})
    >>> [g.gpu for g in p.gpus], dict(p.cpu)
    (['s0/gpu0', 's0/gpu1'], {'s0': 6000})
    """
    job: str
    gpus: tuple[GpuShare, ...] = ()
    cpu: Mapping[str, int] = field(default_factory=frozen_map)
    mem: Mapping[str, int] = field(default_factory=frozen_map)
    throughput: float = 0.0
    batch: int | None = None
    accum: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "cpu", frozen_map(self.cpu))
        object.__setattr__(self, "mem", frozen_map(self.mem))
        object.__setattr__(self, "gpus", tuple(self.gpus))

    @classmethod
    def make(cls, job: str, gpus: tuple[GpuShare, ...], cpu: dict[str, int], mem: dict[str, int],
             throughput: float, batch: int | None = None, accum: int = 0) -> "Placement":
        """A placement from fresh values (no copies; the dicts must not change)."""
        p = cls.__new__(cls)
        object.__setattr__(p, "job", job)
        object.__setattr__(p, "gpus", gpus)
        object.__setattr__(p, "cpu", FrozenMap.wrap(cpu))
        object.__setattr__(p, "mem", FrozenMap.wrap(mem))
        object.__setattr__(p, "throughput", throughput)
        object.__setattr__(p, "batch", batch)
        object.__setattr__(p, "accum", accum)
        return p

    @property
    def total_cpu(self) -> int:
        """Milli-cores over all servers."""
        return sum(self.cpu.values())

    @property
    def total_mem(self) -> int:
        """MiB over all servers."""
        return sum(self.mem.values())

    @property
    def servers(self) -> frozenset[str]:
        """The servers the placement uses."""
        return frozenset(self.cpu) | frozenset(self.mem)

    def same_as(self, other: "Placement | None") -> bool:
        """Same GPUs with the same shares and the same CPU and memory on the
        same servers: the job need not restart."""
        if other is None:
            return False
        if other is self:
            return True
        return (sorted((g.gpu, g.milli) for g in self.gpus)
                == sorted((g.gpu, g.milli) for g in other.gpus)
                and {k: v for k, v in self.cpu.items() if v} == {k: v for k, v in other.cpu.items() if v}
                and {k: v for k, v in self.mem.items() if v} == {k: v for k, v in other.mem.items() if v})

    def __hash__(self) -> int:
        return hash((self.job, self.gpus, tuple(sorted(self.cpu.items())),
                     tuple(sorted(self.mem.items())), self.throughput, self.batch, self.accum))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Placement) and self.job == other.job
                and self.gpus == other.gpus and dict(self.cpu) == dict(other.cpu)
                and dict(self.mem) == dict(other.mem)
                and self.throughput == other.throughput
                and self.batch == other.batch and self.accum == other.accum)


@dataclass(frozen=True)
class Job:
    """A job to place, or a running one (``current`` set).

    Parameters
    ----------
    id : str
        Unique name (1 to 256 characters).
    gpus : int
        Whole GPUs wanted, >= 0 (0: a CPU-only job).
    gpu_milli : int
        Share of each GPU in milli-GPU, 1..1000 (default 1000, whole GPUs;
        below 1000 only with ``gpus == 1``: GPU sharing).
    cpu : int
        Total CPU request in milli-cores, >= 0.
    mem : int
        Total memory request in MiB, >= 0.
    gpu_types : tuple of str
        Allowed GPU types (empty: any).
    locality : str or None
        A level name of the cluster (``"server"``, ``"socket"``, ``"rack"``,
        an operator's ``"block"``, ...): all the job's GPUs under one node of
        that level (None: anywhere).  Required placement.
    model : str or None
        Name of its throughput profile: a shipped model (`alloc/data/models/`,
        or `$ALLOC_MODELS`) or an instance's inline model.
    profile : Profile or None
        The resolved profile (filled in from ``model`` when None).
    tenant : str or None
        The tenant (virtual cluster) the job belongs to (None: no tenant).
    guaranteed : bool
        True: the job runs inside its tenant's guaranteed cells and may
        preempt opportunistic jobs; False (default): opportunistic, it uses
        free GPUs and may be preempted.
    priority : int
        -1000..1000 (default 0), higher first; among a tenant's guaranteed
        jobs, a higher priority may preempt a lower one.
    weight : float
        Weight in the ``throughput`` objective, 0 to 1e9 (default 1).
    current : Placement or None
        Where the job runs now (None: pending).
    min_gpus : int or None
        Elastic jobs: the fewest GPUs it accepts (None: ``gpus``).
    max_gpus : int or None
        Elastic jobs: the most GPUs it accepts (None: ``gpus``).
    gpu_mem : int or None
        GPU memory per GPU in MiB (what it needs on each of its GPUs).
    gpu_compute : int or None
        Compute share per GPU in milli of the GPU's streaming multiprocessors
        (1..1000; its utilisation when alone).  A guaranteed job keeps it; a
        job that is not guaranteed may be capped below it and may run on
        opportunistic shares (milli 0) of GPUs others hold (AntMan).
    gpu_mem_min : int or None
        The least GPU memory per GPU in MiB it runs with (a job that is not
        guaranteed; the rest spills to host memory).  Default ``gpu_mem``.
    gpus_per_server : int or None
        An even spread: exactly this many GPUs on each of
        ``gpus // gpus_per_server`` distinct servers, its CPU and memory split
        evenly over them (Slurm's ``-N n --gres=gpu:k``); a divisor of
        ``gpus``, whole GPUs, no elastic sizes, no tenant, no locality or
        preferred level.  Equal
        to ``gpus``: all on one server (read as ``locality="server"``).
        None (default): as the job's locality says.
    preferred : str or None
        A level name of the cluster: the job prefers its GPUs under one node
        of that level (preferred placement).  A soft rule after the
        objective: among answers of equal value, the fewest levels climbed
        above it (`alloc.topology.climb`).

    Examples
    --------
    >>> from alloc import Job
    >>> j = Job("train", gpus=4, cpu=12000, mem=256000, model="res18", locality="server")
    >>> j.gpu_milli, j.milli_total, j.elastic
    (1000, 4000, False)
    >>> Job("notebook", gpus=1, gpu_milli=250, cpu=2000, mem=16384).milli_total
    250
    >>> Job("gang", gpus=8, cpu=8000, mem=64000, gpus_per_server=4).even_servers
    2
    """
    id: str
    gpus: int = 0
    gpu_milli: int = 1000  # MILLI: whole GPUs
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
    gpu_mem: int | None = None
    gpu_compute: int | None = None
    gpu_mem_min: int | None = None
    gpus_per_server: int | None = None
    preferred: str | None = None

    @property
    def milli_total(self) -> int:
        """Milli-GPU the job asks for in total."""
        return self.gpus * self.gpu_milli

    @property
    def elastic(self) -> bool:
        """True when the job accepts a range of GPU counts."""
        return self.min_gpus is not None or self.max_gpus is not None

    @property
    def running(self) -> bool:
        """True when the job has a current placement."""
        return self.current is not None

    @property
    def even_servers(self) -> int:
        """The servers its even spread takes, ``gpus // gpus_per_server``
        when that is two or more (``gpus_per_server`` on each); 0 otherwise."""
        k = self.gpus_per_server
        if k is None or not isinstance(k, int) or k <= 0 or self.gpus <= k:
            return 0
        return self.gpus // k

    def allows(self, gpu_type: str | None) -> bool:
        """True when the job may run on GPUs of ``gpu_type``."""
        return not self.gpu_types or gpu_type in self.gpu_types


class Status(str, enum.Enum):
    """How good an answer is: ``OPTIMAL`` (proven), ``FEASIBLE`` (a solution,
    optimality not proven), ``INFEASIBLE`` (proven impossible under the hard
    constraints), ``UNKNOWN`` (no solution, no proof).

    Examples
    --------
    >>> from alloc import Status
    >>> Status("optimal") is Status.OPTIMAL, str(Status.FEASIBLE)
    (True, 'feasible')
    """
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Diff:
    """What changes between two allocations: jobs to start, stop and move.

    Attributes
    ----------
    start : tuple of Placement
        Jobs placed now that were not placed before.
    stop : tuple of str
        Jobs placed before and not now.
    move : tuple of Placement
        Jobs placed in both whose placement changed (their new placement).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, allocate
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=4),))
    >>> first = allocate(cluster, [Job("a", 2, cpu=1000, mem=1000)])
    >>> now = allocate(cluster, [Job("b", 1, cpu=1000, mem=1000)])
    >>> d = now.diff(first)
    >>> [p.job for p in d.start], d.stop, d.move
    (['b'], ('a',), ())
    """
    start: tuple[Placement, ...] = ()
    stop: tuple[str, ...] = ()
    move: tuple[Placement, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.start or self.stop or self.move)


@dataclass(frozen=True)
class Allocation:
    """A solver's answer (the ``alloc.allocation/1`` file format).

    Attributes
    ----------
    placements : tuple of Placement
        The placed jobs (running jobs kept in place included).
    unplaced : tuple of str
        Every other job of the input.
    preempted : tuple of str
        Running jobs stopped (a subset of ``unplaced``).
    moved : tuple of str
        Running jobs placed elsewhere than ``current`` (a subset of the placed).
    reasons : mapping of str to str
        For every unplaced job: why (`alloc.waiting`) -- it cannot be placed
        on this cluster now, it waits for room, its tenant's cells are full,
        or it was stopped for another job.
    status : Status
        How good the answer is: ``optimal`` (the value is proven to meet the
        bound for this input), ``feasible`` (a valid answer, optimality not
        proven; every heuristic's status), ``infeasible`` or ``unknown``.
    value : float
        The objective recomputed from the placements (minus move costs).
    bound : float or None
        A proven upper bound of the optimum (exact solvers; None otherwise).
    wall_time_s : float
        Seconds the whole call took, validation and final check included.
    solver : str
        The solver that answered.
    objective : str
        The objective maximised (``throughput``, ``gpus`` or ``jobs``).
    instance : str
        The name given to `allocate` (an instance file's name).
    stats : mapping
        Solver statistics (not part of the comparison).

    Examples
    --------
    >>> from alloc import allocate, load_instance
    >>> inst = load_instance("tiny-grid")
    >>> a = allocate(inst.cluster, inst.jobs, solver="best-fit", instance=inst.name)
    >>> a.status.value, a.bound, len(a.placements) + len(a.unplaced) == len(inst.jobs)
    ('feasible', None, True)
    >>> a.placement(a.placements[0].job) is a.placements[0]
    True
    """
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
    moved: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=frozen_map)

    @cached_property
    def _by_job(self) -> Mapping[str, Placement]:
        return {p.job: p for p in self.placements}

    def placement(self, job_id: str) -> Placement | None:
        """The placement of ``job_id`` (None when unplaced)."""
        return self._by_job.get(job_id)

    def advance(self, jobs: Sequence[Job], drop: Iterable[str] = ()) -> tuple[Job, ...]:
        """The jobs after this allocation is carried out, for the next call.

        A job this allocation places runs there (its `current` is the
        placement, `throughput` cleared: the next call recomputes it); a job it
        leaves unplaced (preempted ones included) is pending (`current`
        None); a job it does not name is unchanged.  Jobs whose ids are in
        `drop` (finished ones) are left out.

        Parameters
        ----------
        jobs : sequence of Job
            The jobs of the call (or more).
        drop : iterable of str
            Ids of jobs to leave out.

        Returns
        -------
        tuple of Job

        Examples
        --------
        >>> from alloc import Cluster, Job, Server, allocate
        >>> c = Cluster([Server("s0", cpu=8000, mem=16000, gpus=1)])
        >>> jobs = [Job("a", 1, cpu=1000, mem=1000), Job("b", 1, cpu=1000, mem=1000)]
        >>> a = allocate(c, jobs, solver="best-fit")
        >>> [(j.id, j.current is not None) for j in a.advance(jobs)]
        [('a', True), ('b', False)]
        >>> [j.id for j in a.advance(jobs, drop=["a"])]
        ['b']
        """
        gone = set(drop)
        unplaced = set(self.unplaced)
        out = []
        for j in jobs:
            if j.id in gone:
                continue
            p = self._by_job.get(j.id)
            if p is not None:
                j = replace(j, current=replace(p, throughput=0.0))
            elif j.id in unplaced:
                j = replace(j, current=None)
            out.append(j)
        return tuple(out)

    @property
    def gap(self) -> float | None:
        """Relative gap between value and bound, ``(bound - value) / |bound|``
        (None without a bound; 0 when the two differ only by floating-point
        rounding, below `GAP_ZERO`)."""
        if self.bound is None:
            return None
        denom = max(abs(self.bound), 1e-9)
        gap = (self.bound - self.value) / denom
        return gap if gap >= GAP_ZERO else 0.0

    def diff(self, previous: "Allocation | None") -> Diff:
        """Start / stop / move lists that turn ``previous`` into this allocation."""
        before = {} if previous is None else {p.job: p for p in previous.placements}
        start, move = [], []
        for p in self.placements:
            old = before.get(p.job)
            if old is None:
                start.append(p)
            elif not p.same_as(old):
                move.append(p)
        now = self._by_job
        stop = tuple(j for j in before if j not in now)
        return Diff(tuple(start), stop, tuple(move))


@dataclass(frozen=True)
class Instance:
    """An instance file: a name, the cluster, the jobs and inline models.

    Examples
    --------
    >>> from alloc import load_instance
    >>> inst = load_instance("tiny-grid")
    >>> inst.name, len(inst.cluster.servers), len(inst.jobs), inst.meta["known_optimum"]["jobs"]
    ('tiny-grid', 2, 6, 6.0)
    """
    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    models: Mapping[str, Profile] = field(default_factory=frozen_map)
    meta: Mapping[str, object] = field(default_factory=frozen_map, compare=False)
