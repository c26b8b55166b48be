"""Kubernetes objects (as the API server's JSON) into alloc's servers and jobs.

Pure functions over plain dicts (the API's JSON, camelCase keys): no client,
no I/O.  What is read (every name is a constant below):

Nodes
    ``status.allocatable``: ``cpu`` (milli-cores, rounded up), ``memory``
    (MiB, rounded down), ``nvidia.com/gpu`` (GPUs); label
    ``nvidia.com/gpu.product`` (the GPU type); the topology labels of the
    levels above ``server``, outermost first (`Levels`).  A node that is
    cordoned (``spec.unschedulable``) or whose ``Ready`` condition is not
    ``True`` is *closed* (drained: nothing new starts there).

Pods
    Requests per container (a limit stands for a missing request), the
    largest init container's when larger, plus ``spec.overhead``:
    ``cpu``, ``memory``, ``nvidia.com/gpu``.  GPU sharing: annotation
    ``alloc.io/gpu-milli`` (1..1000) on a pod asking at most one
    ``nvidia.com/gpu``: one GPU's share.  GPU type: ``nodeSelector`` or
    required node affinity (``In`` over ``nvidia.com/gpu.product``).
    Priority: ``spec.priority`` (filled in from ``priorityClassName`` by the
    API server).  Topology: annotations ``kueue.x-k8s.io/podset-required-topology``
    and ``kueue.x-k8s.io/podset-preferred-topology``, whose value is a
    level's node label (Kueue's form) or the level's name.  Gangs: label
    ``scheduling.x-k8s.io/pod-group`` names the group; its size is the
    ``spec.minMember`` of the ``PodGroup`` object of that name
    (scheduler-plugins' CRD) or, without one, the pods' annotation
    ``alloc.io/min-member``.

A pod's problems (bad input) are one line each (`PodView.problem`); such a
pod waits with that line as its reason and changes nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...gpukey import GpuKey
from ...model import MILLI, Job, Placement, Server
from .quantity import MIB, count, mib, milli_cpu, scaled

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
HOSTNAME = "kubernetes.io/hostname"
MILLI_ANNOTATION = "alloc.io/gpu-milli"
MIN_MEMBER_ANNOTATION = "alloc.io/min-member"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
#: Set through the Binding on every pod alloc binds: the node's GPU indices it holds.
GPUS_ANNOTATION = "alloc.io/gpus"
#: Set through the Binding on a gang's pods: ``<gang id>`` and its pod count.
GANG_ANNOTATION = "alloc.io/gang"
GANG_SIZE_ANNOTATION = "alloc.io/gang-size"
#: nodeSelector keys that every node satisfies here (ignored).
IGNORED_SELECTORS = ("kubernetes.io/os", "kubernetes.io/arch")
#: Kueue's example levels: zone, block, rack (outermost first).
DEFAULT_LEVELS = (("zone", "topology.kubernetes.io/zone"),
                  ("block", "cloud.provider.com/topology-block"),
                  ("rack", "cloud.provider.com/topology-rack"))
ENDED = ("Succeeded", "Failed")


def has_domains() -> bool:
    """True when this alloc's `Server` takes ``domains`` (the ordered-label
    topology: any levels above ``server``); else only ``rack`` exists."""
    return "domains" in getattr(Server, "__dataclass_fields__", {})


def has_preferred() -> bool:
    """True when this alloc's `Job` takes ``preferred`` (soft topology)."""
    return "preferred" in getattr(Job, "__dataclass_fields__", {})


@dataclass(frozen=True)
class Levels:
    """Topology levels above ``server``, outermost first: ``(name, node label)``.

    Without the ordered-label topology in the core (`has_domains`) only a
    level named ``rack`` is used (as `Server.rack`).

    Examples
    --------
    >>> lv = Levels((("zone", "topology.kubernetes.io/zone"), ("rack", "example.com/rack")))
    >>> lv.level_of("example.com/rack"), lv.level_of("zone"), lv.level_of(HOSTNAME)
    ('rack', 'zone', 'server')
    """
    above: tuple[tuple[str, str], ...] = DEFAULT_LEVELS

    @property
    def used(self) -> tuple[tuple[str, str], ...]:
        """The levels this alloc can express."""
        return self.above if has_domains() else tuple(x for x in self.above if x[0] == "rack")

    @property
    def names(self) -> tuple[str, ...]:
        """The cluster's levels: the used ones, then ``server`` and ``gpu``."""
        return tuple(n for n, _ in self.used) + ("server", "gpu")

    def level_of(self, value: str) -> str | None:
        """The level a topology annotation names (a node label or a level
        name; ``kubernetes.io/hostname`` is ``server``), or None."""
        if value in (HOSTNAME, "server"):
            return "server"
        for name, label in self.above:
            if value in (name, label):
                return name
        return None


def parse_levels(specs: list[str] | tuple[str, ...]) -> Levels:
    """``NAME=LABEL`` strings, outermost first, into `Levels`.

    Raises
    ------
    ValueError
        A spec without ``=``, an empty part, or a repeated name.

    Examples
    --------
    >>> parse_levels(["zone=topology.kubernetes.io/zone", "rack=example.com/rack"]).above[1]
    ('rack', 'example.com/rack')
    """
    out: list[tuple[str, str]] = []
    for k, s in enumerate(specs):
        name, eq, label = str(s).partition("=")
        if not eq or not name or not label or name in ("server", "gpu"):
            raise ValueError(f"level[{k}]: expected NAME=LABEL (NAME not server or gpu), got {s!r}")
        if name in dict(out):
            raise ValueError(f"level[{k}]: level {name!r} given twice")
        out.append((name, label))
    return Levels(tuple(out))


# ------------------------------------------------------------------- nodes

def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def node_closed(node: Mapping[str, Any]) -> str | None:
    """Why nothing new may start on the node (``"cordoned"``, ``"NotReady"``), or None."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "cordoned"
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return None if c.get("status") == "True" else "NotReady"
    return "NotReady"


def node_server(node: Mapping[str, Any], levels: Levels) -> Server:
    """The node as a `Server` (its name is the server id).

    Raises
    ------
    ValueError
        One line naming the node and the field: an unreadable quantity.

    Examples
    --------
    >>> n = {"metadata": {"name": "n1", "labels": {GPU_PRODUCT: "A100"}},
    ...      "status": {"allocatable": {"cpu": "32", "memory": "256Gi", GPU_RESOURCE: "8"}}}
    >>> s = node_server(n, Levels(()))
    >>> (s.id, s.cpu, s.mem, s.gpus, s.gpu_type)
    ('n1', 32000, 262144, 8, 'A100')
    """
    name = _meta(node)["name"]
    labels = _meta(node).get("labels") or {}
    alloc = (node.get("status") or {}).get("allocatable") or {}
    where = f"node {name}: status.allocatable"
    cpu = milli_cpu(alloc.get("cpu", 0), f"{where}.cpu")
    mem = mib(alloc.get("memory", 0), f"{where}.memory", capacity=True)
    gpus = count(alloc.get(GPU_RESOURCE, 0), f"{where}[{GPU_RESOURCE}]")
    gtype = (labels.get(GPU_PRODUCT) or "gpu") if gpus else None
    kw: dict[str, Any] = {}
    used = levels.used
    if has_domains():
        kw["domains"] = {lv: labels.get(label) or f"~{name}" for lv, label in used}
    elif used:
        kw["rack"] = labels.get(used[0][1]) or f"~{name}"
    return Server(name, max(cpu, 0), max(mem, 0), max(gpus, 0), gtype, **kw)


# -------------------------------------------------------------------- pods

@dataclass(frozen=True)
class PodView:
    """What alloc reads of one pod (units: milli-cores, MiB, GPUs, milli-GPU)."""
    key: str                      # namespace/name
    namespace: str
    name: str
    uid: str
    scheduler: str
    node: str | None              # spec.nodeName
    phase: str
    deleting: bool
    priority: int
    created: str
    group: str | None             # the pod group's name (label)
    min_member: int | None        # from the pod's annotation
    gpus: int = 0
    gpu_milli: int = MILLI
    cpu: int = 0
    mem: int = 0
    gpu_types: tuple[str, ...] = ()
    required: str | None = None   # level name
    preferred: str | None = None
    bound_gpus: tuple[int, ...] | None = None   # alloc.io/gpus
    gang: str | None = None       # alloc.io/gang
    gang_size: int | None = None
    problem: str | None = None

    @property
    def ended(self) -> bool:
        """The pod has finished (it holds nothing)."""
        return self.phase in ENDED

    @property
    def active(self) -> bool:
        """Bound and holding its resources (terminating ones included)."""
        return self.node is not None and not self.ended


#: The resources alloc reads, each in integer units: milli-cores, bytes, GPUs.
_SCALE = {"cpu": 1000, "memory": 1, GPU_RESOURCE: 1}


def _requests(spec: Mapping[str, Any], where: str) -> dict[str, int]:
    """Effective requests of ``cpu`` (milli-cores), ``memory`` (bytes) and GPUs:
    containers summed (each rounded up, as the API server's accounting
    does), the largest init container's when larger, plus overhead.  A GPU
    count must be whole."""
    def read(r: str, q: Any, w: str) -> int:
        if r == GPU_RESOURCE:
            return count(q, w)
        return scaled(q, _SCALE[r], w)

    def asked(c: Mapping[str, Any]) -> dict[str, Any]:
        res = c.get("resources") or {}
        req = res.get("requests") or {}
        lim = res.get("limits") or {}
        return {r: req[r] if r in req else lim[r] for r in _SCALE if r in req or r in lim}
    total: dict[str, int] = {}
    for k, c in enumerate(spec.get("containers") or ()):
        for r, q in asked(c).items():
            total[r] = total.get(r, 0) + read(r, q, f"{where}.containers[{k}].resources[{r}]")
    for k, c in enumerate(spec.get("initContainers") or ()):
        for r, q in asked(c).items():
            v = read(r, q, f"{where}.initContainers[{k}].resources[{r}]")
            total[r] = max(total.get(r, 0), v)
    for r, q in (spec.get("overhead") or {}).items():
        if r in _SCALE:
            total[r] = total.get(r, 0) + read(r, q, f"{where}.overhead[{r}]")
    return total


def _gpu_types(spec: Mapping[str, Any], where: str) -> tuple[tuple[str, ...], str | None]:
    """Allowed GPU types from the node selector and the required node
    affinity, and a problem line (a node constraint alloc cannot honour)."""
    sel = dict(spec.get("nodeSelector") or {})
    types: set[str] | None = None
    if GPU_PRODUCT in sel:
        types = {sel.pop(GPU_PRODUCT)}
    other = sorted(k for k in sel if k not in IGNORED_SELECTORS)
    if other:
        return (), f"{where}.nodeSelector: alloc reads only {GPU_PRODUCT}, not {other[0]}"
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = req.get("nodeSelectorTerms") or ()
    if terms:
        union: set[str] = set()
        anywhere = False
        for t, term in enumerate(terms):
            got = None
            for e, ex in enumerate(term.get("matchExpressions") or ()):
                if ex.get("key") in IGNORED_SELECTORS:
                    continue
                if ex.get("key") != GPU_PRODUCT or ex.get("operator") != "In":
                    return (), (f"{where}.affinity.nodeAffinity: term {t} expression {e}: alloc "
                                f"reads only `{GPU_PRODUCT} In [...]`")
                got = set(ex.get("values") or ())
            if term.get("matchFields"):
                return (), f"{where}.affinity.nodeAffinity: term {t}: matchFields is not read"
            if got is None:
                anywhere = True
            else:
                union |= got
        if not anywhere:
            types = union if types is None else types & union
            if not types:
                return (), f"{where}: the node selector and affinity allow no GPU type"
    return tuple(sorted(types or ())), None


def pod_view(pod: Mapping[str, Any], levels: Levels) -> PodView:
    """What alloc reads of a pod; bad input becomes `PodView.problem`.

    Examples
    --------
    >>> p = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
    ...      "spec": {"schedulerName": "alloc", "containers": [{"resources": {
    ...          "requests": {"cpu": "2", "memory": "1Gi"}, "limits": {GPU_RESOURCE: "1"}}}]}}
    >>> v = pod_view(p, Levels(()))
    >>> (v.key, v.gpus, v.cpu, v.mem, v.problem)
    ('ns/p', 1, 2000, 1024, None)
    """
    meta = _meta(pod)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ann = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    ns, name = meta.get("namespace", "default"), meta.get("name", "")
    where = f"pod {ns}/{name}"
    base = dict(key=f"{ns}/{name}", namespace=ns, name=name, uid=meta.get("uid", ""),
                scheduler=spec.get("schedulerName") or "default-scheduler",
                node=spec.get("nodeName") or None, phase=status.get("phase") or "Pending",
                deleting=bool(meta.get("deletionTimestamp")),
                priority=int(spec.get("priority") or 0),
                created=meta.get("creationTimestamp") or "",
                group=labels.get(GROUP_LABEL) or None, min_member=None)
    problems: list[str] = []
    mm = ann.get(MIN_MEMBER_ANNOTATION)
    if mm is not None:
        try:
            base["min_member"] = int(mm)
            if base["min_member"] < 1:
                raise ValueError
        except ValueError:
            problems.append(f"{where}: annotation {MIN_MEMBER_ANNOTATION}: expected a positive "
                            f"integer, got {mm!r}")
            base["min_member"] = None
    bound = ann.get(GPUS_ANNOTATION)
    if bound is not None:
        try:
            base["bound_gpus"] = tuple(int(x) for x in bound.split(",") if x != "")
        except ValueError:
            base["bound_gpus"] = None
    if ann.get(GANG_ANNOTATION):
        base["gang"] = ann[GANG_ANNOTATION]
        try:
            base["gang_size"] = int(ann.get(GANG_SIZE_ANNOTATION, "0")) or None
        except ValueError:
            base["gang_size"] = None
    try:
        req = _requests(spec, f"{where}.spec")
        neg = sorted(r for r, v in req.items() if v < 0)
        if neg:
            raise ValueError(f"{where}: negative request of {neg[0]}")
        gpus, cpu = req.get(GPU_RESOURCE, 0), req.get("cpu", 0)
        mem = -(-req.get("memory", 0) // MIB)
    except ValueError as exc:
        problems.append(str(exc))
        gpus, cpu, mem = 0, 0, 0
    milli = MILLI
    raw = ann.get(MILLI_ANNOTATION)
    if raw is not None:
        try:
            milli = int(raw)
        except ValueError:
            milli = -1
        if milli < 0:
            problems.append(f"{where}: annotation {MILLI_ANNOTATION}: negative or unreadable "
                            f"request {raw!r} (expected 1..{MILLI})")
        elif not 1 <= milli <= MILLI:
            problems.append(f"{where}: annotation {MILLI_ANNOTATION}: expected 1..{MILLI}, "
                            f"got {raw!r}")
        elif gpus > 1:
            problems.append(f"{where}: annotation {MILLI_ANNOTATION} is a share of one GPU; the "
                            f"pod asks {gpus} {GPU_RESOURCE}")
        else:
            gpus = 1
        if problems:
            milli = MILLI
    types, bad = _gpu_types(spec, where + ".spec")
    if bad:
        problems.append(bad)
    topo: dict[str, str | None] = {"required": None, "preferred": None}
    for key, ann_name in (("required", REQUIRED_TOPOLOGY), ("preferred", PREFERRED_TOPOLOGY)):
        v = ann.get(ann_name)
        if v is None:
            continue
        lv = levels.level_of(v) if isinstance(v, str) else None
        if lv is None:
            names = ", ".join([label for _, label in levels.above] + [HOSTNAME])
            problems.append(f"{where}: annotation {ann_name}: expected a level's node label "
                            f"({names}), got {v!r}")
        elif lv != "server" and lv not in levels.names:
            problems.append(f"{where}: annotation {ann_name}: level {lv!r} needs the ordered-label "
                            f"topology, which this alloc lacks")
        else:
            topo[key] = lv
    return PodView(**base, gpus=gpus, gpu_milli=milli, cpu=cpu, mem=mem, gpu_types=types,
                   required=topo["required"], preferred=topo["preferred"],
                   problem=problems[0] if problems else None)


def job_for(jid: str, pods: list[PodView], priority: int | None = None) -> Job:
    """One alloc job for a pod, or for a gang's pods (one job: all or nothing).

    A gang's job asks the sum of its pods' GPUs, CPU and memory, with the GPU
    types and topology levels its pods name (the same for every pod:
    `gang_problem` checks that first).  One pod asking several GPUs needs
    them on its node (``locality="server"``), whatever wider level it names.

    Examples
    --------
    >>> a = pod_view({"metadata": {"name": "a"}, "spec": {"containers": [{"resources": {
    ...     "limits": {GPU_RESOURCE: "2", "cpu": "4", "memory": "8Gi"}}}]}}, Levels(()))
    >>> j = job_for("g", [a, a])
    >>> (j.gpus, j.cpu, j.mem)
    (4, 8000, 16384)
    """
    p0 = pods[0]
    gpus = sum(p.gpus for p in pods)
    milli = p0.gpu_milli if len(pods) == 1 else MILLI
    prio = max(p.priority for p in pods) if priority is None else priority
    kw: dict[str, Any] = {}
    # one pod's GPUs are on its one node, whatever wider level it names
    locality = "server" if len(pods) == 1 else p0.required
    if p0.preferred and has_preferred():
        kw["preferred"] = p0.preferred
    return Job(jid, gpus, milli if gpus else MILLI, sum(p.cpu for p in pods),
               sum(p.mem for p in pods), p0.gpu_types if gpus else (),
               locality if gpus > 1 else None, priority=max(-1000, min(1000, prio)), **kw)


def gang_problem(pods: list[PodView], where: str) -> str | None:
    """Why a gang's pods cannot be one job (one line), or None."""
    p0 = pods[0]
    for p in pods[1:]:
        if p.gpu_types != p0.gpu_types:
            return f"{where}: its pods allow different GPU types ({p0.key}, {p.key})"
        if (p.required, p.preferred) != (p0.required, p0.preferred):
            return f"{where}: its pods name different topology levels ({p0.key}, {p.key})"
    if any(p.gpu_milli != MILLI for p in pods) and len(pods) > 1:
        return f"{where}: a gang's pods take whole GPUs ({MILLI_ANNOTATION} is for single pods)"
    return None


def split_gang(placement: Placement, pods: list[PodView], free: Mapping[str, tuple[int, int]]
               ) -> dict[str, tuple[str, tuple[int, ...], int, int]] | None:
    """The gang's placement split into whole pods, or None when it does not split.

    ``placement`` gives the gang's GPUs per node; each pod goes to one node
    and takes exactly its GPUs there, and the pods of a node must fit in
    ``free[node]`` (milli-CPU, MiB left by the other jobs).  Pods are placed
    largest first on the node with the most GPUs still to fill that fits.

    Returns ``{pod key: (node, GPU indices, cpu, mem)}``.
    """
    left: dict[str, list[int]] = {}
    for g in placement.gpus:
        node, k = GpuKey.parse(g.gpu)
        left.setdefault(node, []).append(k)
    nodes = sorted(set(left) | set(placement.cpu))
    room = {n: list(free.get(n, (0, 0))) for n in nodes}
    out: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
    for p in sorted(pods, key=lambda p: (-p.gpus, -p.cpu, -p.mem, p.key)):
        fits = [n for n in nodes if len(left.get(n, ())) >= p.gpus
                and room[n][0] >= p.cpu and room[n][1] >= p.mem]
        if p.gpus:
            exact = [n for n in fits if len(left[n]) == p.gpus]
            fits = exact or sorted(fits, key=lambda n: -len(left[n]))
        if not fits:
            return None
        n = fits[0]
        take, left[n] = tuple(left.get(n, [])[:p.gpus]), left.get(n, [])[p.gpus:]
        room[n][0] -= p.cpu
        room[n][1] -= p.mem
        out[p.key] = (n, take, p.cpu, p.mem)
    if any(left.values()):
        return None
    return out


__all__ = ["DEFAULT_LEVELS", "ENDED", "GANG_ANNOTATION", "GANG_SIZE_ANNOTATION", "GPUS_ANNOTATION",
           "GPU_PRODUCT", "GPU_RESOURCE", "GROUP_LABEL", "HOSTNAME", "Levels",
           "MILLI_ANNOTATION", "MIN_MEMBER_ANNOTATION", "PREFERRED_TOPOLOGY", "PodView",
           "REQUIRED_TOPOLOGY", "gang_problem", "has_domains", "has_preferred", "job_for",
           "node_closed", "node_server", "parse_levels", "pod_view", "split_gang"]
