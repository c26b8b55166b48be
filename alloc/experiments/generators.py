"""Seeded instance generators at cluster scale (10k-100k GPUs).

Each generator is a plain function ``f(seed, **params) -> Instance``,
deterministic for a seed (Python's ``random.Random(seed)``), chosen by name
from `GENERATORS` ([`get_generator`][alloc.experiments.generators.get_generator],
[`generate`][alloc.experiments.generators.generate]):

* ``synergy`` — Synergy's servers (8 V100, 24 cores = 24000 milli-CPU, 500 GB
  = 512000 MiB each) with ``jobs_per_server`` jobs per server of the 12
  models in ``models/``, 1/2/4/8 GPUs with probability 0.70/0.10/0.15/0.05,
  requests at the GPU-proportional share (3000 milli-CPU and 64000 MiB per
  GPU), multi-GPU jobs on one server.  The draws are those of
  ``bench/generate.py`` (same RNG calls in the same order), so ``synergy(16,
  servers=16)`` has the jobs of ``instances/synergy-16x8.json``.
* ``hetero`` — the same jobs on V100, P100 and K80 servers (equal thirds),
  ``restricted`` (20 %) of the jobs restricted to one GPU type.
* ``live`` — the Synergy instance where running jobs (``Job.current``) hold
  ``running`` (half) of the GPUs and the other jobs are pending.
* ``openb`` — an Alibaba-openb-shaped cluster and pod mix (GPU sharing,
  CPU-heavy and CPU-only pods, mixed node shapes), modelled on the openb
  traces' statistics (tables below); no trace file is read.

Units: CPU milli-cores, memory MiB, GPU share milli-GPU (1000 = one GPU).
A bad generator name or parameter raises [`InputError`][alloc.errors.InputError]
(a ``ValueError``) naming it and listing the valid ones.
"""
from __future__ import annotations

import inspect
import random
from itertools import accumulate
from typing import Callable, Mapping

from ..gpukey import gpu_key
from ..errors import InputError
from ..model import MILLI, Cluster, GpuShare, Instance, Job, Placement, Server, frozen_map

# ------------------------------------------------------------------ Synergy
SERVER_CPU, SERVER_MEM, SERVER_GPUS = 24000, 512000, 8   # milli-CPU, MiB, GPUs
CPU_PER_GPU, MEM_PER_GPU = 3000, 64000                   # the GPU-proportional share
GPU_SIZES = (1, 2, 4, 8)
GPU_CUM = tuple(accumulate((0.70, 0.10, 0.15, 0.05)))
HETERO_TYPES = ("V100", "P100", "K80")

# ------------------------------------------------------------------ openb statistics
# Node shapes of openb_node_list_gpu_node.csv: (milli-CPU, MiB, GPUs, model, nodes).
OPENB_GPU_NODES = (
    (96000, 393216, 8, "G2", 549), (104000, 524288, 2, "T4", 387),
    (16000, 122880, 2, "P100", 107), (128000, 786432, 8, "G3", 39),
    (32000, 131072, 4, "V100M16", 28), (64000, 262144, 2, "P100", 22),
    (96000, 786432, 8, "V100M32", 21), (8000, 32768, 1, "V100M16", 19),
    (96000, 393216, 4, "T4", 17), (48000, 376832, 4, "V100M32", 9),
    (64000, 262144, 8, "V100M16", 7), (8000, 61440, 1, "P100", 3),
    (8000, 61440, 2, "P100", 2), (128000, 1048576, 1, "A10", 2),
    (82000, 344064, 8, "V100M16", 1))
OPENB_TRACE_GPUS, OPENB_TRACE_NODES, OPENB_TRACE_PODS = 6212, 1213, 8152
# CPU-only node shapes of openb_node_list_all_node.csv: (milli-CPU, MiB, nodes).
OPENB_CPU_NODES = (
    (32000, 262144, 129), (96000, 524288, 59), (96000, 393216, 30), (32000, 131072, 23),
    (64000, 524288, 22), (104000, 524288, 20), (32000, 65536, 10), (64000, 262144, 8),
    (64000, 131072, 4), (104000, 786432, 3), (96000, 786432, 1), (104000, 196608, 1))
# Pod classes of openb_pod_list_default.csv (the most common request shapes,
# about 90 % of each class, with their pod counts).
# CPU-only: (milli-CPU, MiB, pods)
OPENB_CPU_PODS = (
    (12500, 57344, 364), (32000, 49152, 284), (8000, 30517, 163), (15400, 51200, 120),
    (16500, 51200, 95), (11400, 57344, 11), (8000, 15625, 11), (16000, 31250, 8))
# Shared single-GPU: (milli-CPU, milli-GPU, MiB, pods)
OPENB_SHARED_PODS = (
    (3152, 810, 5600, 1047), (11908, 470, 47104, 388), (8000, 470, 30517, 360),
    (11908, 650, 47104, 237), (4000, 320, 22888, 111), (4000, 230, 30517, 84),
    (4000, 320, 15258, 78), (3152, 590, 5600, 75), (4152, 550, 10600, 72),
    (8000, 320, 30517, 72), (4000, 160, 15258, 53), (6000, 460, 6144, 51),
    (4152, 370, 10600, 45), (4000, 320, 30517, 43), (4152, 810, 10600, 31),
    (6000, 460, 12288, 29))
# Whole single GPU: (milli-CPU, MiB, pods)
OPENB_WHOLE_PODS = (
    (11300, 49152, 857), (11400, 48128, 534), (3152, 5600, 470), (18708, 64512, 255),
    (9810, 41560, 195), (15700, 58368, 158), (12000, 24576, 158), (11908, 47104, 153),
    (16000, 32768, 108), (4000, 24576, 104), (8000, 16384, 104), (12000, 16384, 99),
    (14200, 58368, 93), (24200, 93184, 84), (11400, 77824, 65), (8000, 32768, 55))
# Multi-GPU: (GPUs, milli-CPU, MiB, pods)
OPENB_MULTI_PODS = (
    (8, 88000, 327680, 18), (8, 64200, 263168, 18), (4, 32200, 132096, 9),
    (2, 16200, 66560, 7), (2, 6000, 65536, 3), (8, 64000, 262144, 3),
    (4, 60200, 320512, 3), (2, 30200, 160768, 3), (4, 32000, 131072, 3),
    (8, 120000, 737280, 3))
# Pod class shares in the default trace: CPU-only 1088, shared 3078, multi-GPU 75 of 8152.
OPENB_CPU_ONLY, OPENB_SHARED, OPENB_MULTI = 0.133, 0.378, 0.009

#: Parameter checks: name -> (accepted types, minimum, maximum); None = open.
LIMITS: dict[str, tuple[tuple[type, ...], float | None, float | None]] = {
    "servers": ((int,), 1, None), "jobs_per_server": ((int, float), 0, None),
    "jobs": ((int, type(None)), 0, None), "restricted": ((int, float), 0, 1),
    "running": ((int, float), 0, 1), "gpus": ((int,), 1, None),
    "pods_per_gpu": ((int, float), 0, None), "cpu_only": ((int, float), 0, 1),
    "shared": ((int, float), 0, 1), "multi": ((int, float), 0, 1),
    "gpu_spec": ((int, float), 0, 1), "cpu_nodes": ((int, float), 0, 0.95),
    "name": ((str, type(None)), None, None),
}


# ------------------------------------------------------------------ registry helpers
def check_params(kind: str, params: Mapping) -> None:
    """Check a generator name and its parameters.

    Parameters
    ----------
    kind : str
        A generator name (`GENERATORS`).
    params : mapping
        Parameters for it (without the seed).

    Raises
    ------
    InputError
        (a ``ValueError``) naming the unknown generator or parameter, or the
        parameter whose type or range is wrong, with what was expected.
    """
    name = kind
    fn = get_generator(kind)
    sig = inspect.signature(fn)
    valid = [p for p in sig.parameters if p != "seed"]
    for k, v in params.items():
        if k not in valid:
            raise InputError(f"generator {name!r}: unknown parameter {k!r}; expected some of "
                             f"{valid}")
        types, lo, hi = LIMITS[k]
        if isinstance(v, bool) or not isinstance(v, types):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise InputError(f"generator {name!r}: parameter {k!r}: expected {want}, got {v!r}")
        if isinstance(v, (int, float)) and ((lo is not None and v < lo)
                                            or (hi is not None and v > hi)):
            rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise InputError(f"generator {name!r}: parameter {k!r}: expected a value in "
                             f"{rng}, got {v!r}")


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"generator seed: expected an integer >= 0, got {seed!r}")


def _width(n: int, least: int) -> int:
    return max(least, len(str(max(n - 1, 0))))


def _meta(kind: str, seed: int, params: dict, description: str) -> Mapping:
    return frozen_map({"description": description,
                       "generator": {"function": f"alloc.experiments.generators.{kind}",
                                     "seed": seed, **params}})


def _profiles():
    from ..profiles import available_models, load_profile
    names = available_models()
    if not names:
        raise InputError("generators: no model profiles found (models/ folder or "
                         "$ALLOC_MODELS)")
    return names, {n: load_profile(n) for n in names}


def synergy_jobs(rng: random.Random, n: int, prefix: str = "j") -> list[Job]:
    """Jobs of the Synergy mix, drawn as ``bench/generate.py`` draws them.

    Parameters
    ----------
    rng : random.Random
        The source of the draws: per job the GPU count (0.70/0.10/0.15/0.05
        over 1/2/4/8), then the model (uniform over ``models/``).
    n : int
        Number of jobs.
    prefix : str
        Job id prefix (ids ``j000``, ``j001``, ...).

    Returns
    -------
    list of Job
        Requests at 3000 milli-CPU and 64000 MiB per GPU, profiles attached,
        multi-GPU jobs with ``locality="server"``.
    """
    names, profs = _profiles()
    w = _width(n, 3)
    out = []
    for i in range(n):
        g = rng.choices(GPU_SIZES, cum_weights=GPU_CUM)[0]
        m = names[rng.randrange(len(names))]
        out.append(Job(f"{prefix}{i:0{w}d}", gpus=g, cpu=CPU_PER_GPU * g, mem=MEM_PER_GPU * g,
                       model=m, profile=profs[m], locality="server" if g > 1 else None))
    return out


def _job_count(servers: int, jobs_per_server: float, jobs: int | None) -> int:
    return int(jobs) if jobs is not None else int(round(jobs_per_server * servers))


# ------------------------------------------------------------------ generators
def synergy(seed: int, servers: int = 16, jobs_per_server: float = 8,
            jobs: int | None = None, name: str | None = None) -> Instance:
    """Synergy's cluster and job mix at any size.

    Parameters
    ----------
    seed : int
        Seed of the job draws (``random.Random(seed)``).
    servers : int
        Servers of 8 V100 GPUs, 24000 milli-CPU and 512000 MiB each.
    jobs_per_server : float
        Jobs per server (8: 1,024 servers give 8,192 jobs, about 1.9 GPUs each).
    jobs : int, optional
        The job count, overriding ``jobs_per_server``.
    name : str, optional
        Instance name (default ``synergy-<servers>x8-s<seed>``).

    Returns
    -------
    Instance
        Jobs ``j000...`` with model profiles attached; servers ``s00...``.
    """
    _check_seed(seed)
    params = {"servers": servers, "jobs_per_server": jobs_per_server, "jobs": jobs}
    check_params("synergy", dict(params, name=name))
    rng = random.Random(seed)
    w = _width(servers, 2)
    cluster = Cluster(tuple(Server(f"s{i:0{w}d}", SERVER_CPU, SERVER_MEM, SERVER_GPUS, "V100")
                            for i in range(servers)))
    n = _job_count(servers, jobs_per_server, jobs)
    js = synergy_jobs(rng, n)
    desc = (f"{servers} servers x 8 V100 (24 cores, 500 GB each), {n} jobs of the Synergy "
            "model mix, 1/2/4/8 GPUs 70/10/15/5 %, requests at the GPU-proportional share")
    return Instance(name or f"synergy-{servers}x8-s{seed}", cluster, tuple(js),
                    meta=_meta("synergy", seed, params, desc))


def hetero(seed: int, servers: int = 48, jobs_per_server: float = 8,
           jobs: int | None = None, restricted: float = 0.2,
           name: str | None = None) -> Instance:
    """Synergy jobs on a heterogeneous cluster: V100, P100 and K80 servers.

    Parameters
    ----------
    seed : int
        Seed of the job draws and restrictions.
    servers : int
        Servers of 8 GPUs, 24000 milli-CPU, 512000 MiB; equal thirds of V100,
        P100 and K80 (the first types get the remainder), one rack per type.
    jobs_per_server, jobs : float, int
        As in [`synergy`][alloc.experiments.generators.synergy] (the same draws for the same seed).
    restricted : float
        Fraction of jobs (rounded) restricted to one GPU type (``gpu_types``),
        the type uniform over the three.
    name : str, optional
        Instance name (default ``hetero-<servers>x8-s<seed>``).

    Returns
    -------
    Instance
    """
    _check_seed(seed)
    params = {"servers": servers, "jobs_per_server": jobs_per_server, "jobs": jobs,
              "restricted": restricted}
    check_params("hetero", dict(params, name=name))
    rng = random.Random(seed)
    srv = []
    w = _width(servers, 2)
    for r, t in enumerate(HETERO_TYPES):
        count = servers // 3 + (1 if r < servers % 3 else 0)
        srv += [Server(f"{t.lower()}-{i:0{w}d}", SERVER_CPU, SERVER_MEM, SERVER_GPUS, t,
                       f"r{r}") for i in range(count)]
    types = tuple(t for t in HETERO_TYPES if any(s.gpu_type == t for s in srv))
    n = _job_count(servers, jobs_per_server, jobs)
    js = synergy_jobs(rng, n)
    for i in sorted(rng.sample(range(n), int(round(restricted * n)))):
        t = types[rng.randrange(len(types))]
        js[i] = Job(js[i].id, gpus=js[i].gpus, cpu=js[i].cpu, mem=js[i].mem, model=js[i].model,
                    profile=js[i].profile, locality=js[i].locality, gpu_types=(t,))
    desc = (f"{servers} servers x 8 GPUs (V100, P100, K80 in equal thirds), {n} jobs of the "
            f"Synergy mix, {100 * restricted:g} % restricted to one GPU type")
    return Instance(name or f"hetero-{servers}x8-s{seed}", Cluster(tuple(srv)), tuple(js),
                    meta=_meta("hetero", seed, params, desc))


def _pick_server(rng: random.Random, free: list[int], g: int) -> int | None:
    """A random server with at least ``g`` free GPUs (a few random tries, then
    a scan from a random start); None when there is none."""
    n = len(free)
    for _ in range(16):
        s = rng.randrange(n)
        if free[s] >= g:
            return s
    start = rng.randrange(n)
    for k in range(n):
        s = (start + k) % n
        if free[s] >= g:
            return s
    return None


def live(seed: int, servers: int = 16, jobs_per_server: float = 8, jobs: int | None = None,
         running: float = 0.5, name: str | None = None) -> Instance:
    """The Synergy instance with running jobs holding a share of the GPUs.

    Jobs are taken in a random order and started on a random server with room
    (all GPUs on one server, CPU and memory at the request) until the running
    jobs hold ``round(running * GPUs)`` GPUs; they get ``current`` placements,
    the other jobs are pending.

    Parameters
    ----------
    seed : int
        Seed of the job draws and of the running set and its placement.
    servers, jobs_per_server, jobs : int, float, int
        As in [`synergy`][alloc.experiments.generators.synergy] (the same jobs for the same seed).
    running : float
        Fraction of the cluster's GPUs held by running jobs (0..1).
    name : str, optional
        Instance name (default ``live-<servers>x8-s<seed>``).

    Returns
    -------
    Instance
        Running jobs' ``current`` has whole GPUs, CPU and memory on one server
        and the throughput of that placement.
    """
    from ..objectives import throughput
    _check_seed(seed)
    params = {"servers": servers, "jobs_per_server": jobs_per_server, "jobs": jobs,
              "running": running}
    check_params("live", dict(params, name=name))
    base = synergy(seed, servers=servers, jobs_per_server=jobs_per_server, jobs=jobs)
    cluster, js = base.cluster, list(base.jobs)
    rng = random.Random(f"live-{seed}")
    free = [s.gpus for s in cluster.servers]
    target = int(round(running * sum(free)))
    held = 0
    order = list(range(len(js)))
    rng.shuffle(order)
    for i in order:
        j = js[i]
        if held >= target:
            break
        if held + j.gpus > target:
            continue
        s = _pick_server(rng, free, j.gpus)
        if s is None:
            continue
        srv = cluster.servers[s]
        first = srv.gpus - free[s]
        gids = [gpu_key(srv.id, k) for k in range(first, first + j.gpus)]
        free[s] -= j.gpus
        held += j.gpus
        cur = Placement(j.id, tuple(GpuShare(g, MILLI) for g in gids), {srv.id: j.cpu},
                        {srv.id: j.mem}, throughput(cluster, j, gids, j.cpu, j.mem))
        js[i] = Job(j.id, gpus=j.gpus, cpu=j.cpu, mem=j.mem, model=j.model, profile=j.profile,
                    locality=j.locality, current=cur)
    desc = (f"{servers} servers x 8 V100, {len(js)} Synergy jobs; running jobs hold {held} of "
            f"{cluster.total_gpus} GPUs, the others are pending")
    return Instance(name or f"live-{servers}x8-s{seed}", cluster, tuple(js),
                    meta=_meta("live", seed, params, desc))


def apportion(weights, total: int) -> list[int]:
    """Integers proportional to ``weights`` that sum to ``total``.

    Parameters
    ----------
    weights : sequence of float
        Non-negative weights, not all zero.
    total : int
        The sum wanted.

    Returns
    -------
    list of int
        The floors of the exact shares, plus one for the largest remainders
        (ties to the lower index).
    """
    s = float(sum(weights))
    raw = [w * total / s for w in weights]
    out = [int(x) for x in raw]
    rest = sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))
    for i in rest[:total - sum(out)]:
        out[i] += 1
    return out


def openb_servers(rng: random.Random, gpus: int, cpu_nodes: float) -> list[Server]:
    """The openb node shapes scaled to about ``gpus`` GPUs.

    Parameters
    ----------
    rng : random.Random
        Shuffles the node order.
    gpus : int
        About this many GPUs: the trace's 1213 GPU nodes scaled by
        ``gpus / 6212``, shape counts by [`apportion`][alloc.experiments.generators.apportion] (the
        trace's mix).
    cpu_nodes : float
        Fraction of all nodes that are CPU-only (shapes of the full node list).

    Returns
    -------
    list of Server
        Ids ``node-0000...`` in shuffled order; CPU milli-cores, memory MiB.
    """
    n_gpu_nodes = max(1, int(round(OPENB_TRACE_NODES * gpus / OPENB_TRACE_GPUS)))
    shapes: list[tuple[int, int, int, str | None]] = [(c, m, g, t)
                                                      for c, m, g, t, _ in OPENB_GPU_NODES]
    counts = apportion([w for *_, w in OPENB_GPU_NODES], n_gpu_nodes)
    n_cpu = int(round(cpu_nodes / (1.0 - cpu_nodes) * n_gpu_nodes))
    shapes += [(c, m, 0, None) for c, m, _ in OPENB_CPU_NODES]
    counts += apportion([w for *_, w in OPENB_CPU_NODES], n_cpu)
    nodes = [sh for sh, k in zip(shapes, counts) for _ in range(k)]
    rng.shuffle(nodes)
    w = _width(len(nodes), 4)
    return [Server(f"node-{i:0{w}d}", c, m, g, t) for i, (c, m, g, t) in enumerate(nodes)]


def _pod_tables(servers: list[Server]) -> dict[str, tuple[list, list]]:
    """Per pod class, the table entries (gpus, milli, cpu, mem, count) that fit
    some node of the cluster, and their cumulative weights."""
    shapes = {(s.cpu, s.mem, s.gpus) for s in servers}
    raw = {"cpu": [(0, MILLI, c, m, w) for c, m, w in OPENB_CPU_PODS],
           "shared": [(1, x, c, m, w) for c, x, m, w in OPENB_SHARED_PODS],
           "whole": [(1, MILLI, c, m, w) for c, m, w in OPENB_WHOLE_PODS],
           "multi": [(k, MILLI, c, m, w) for k, c, m, w in OPENB_MULTI_PODS]}
    out = {}
    for cls, rows in raw.items():
        ok = [r for r in rows if any(sc >= r[2] and sm >= r[3] and sg >= r[0] and
                                     (sg > 0 or r[0] == 0) for sc, sm, sg in shapes)]
        if ok:
            out[cls] = (ok, list(accumulate(r[4] for r in ok)))
    return out


def _pod_type(rng: random.Random, servers_by_type: dict, pod: tuple) -> tuple[str, ...]:
    """One GPU type for a restricted pod: among the types with a node that fits
    it, weighted by the type's GPUs; () when none fits."""
    k, _, c, m, _ = pod
    cands = [(t, sum(s.gpus for s in ss)) for t, ss in servers_by_type.items()
             if any(s.gpus >= k and s.cpu >= c and s.mem >= m for s in ss)]
    if not cands:
        return ()
    return (rng.choices([t for t, _ in cands], [g for _, g in cands])[0],)


def openb(seed: int, gpus: int = 6000, pods_per_gpu: float = OPENB_TRACE_PODS / OPENB_TRACE_GPUS,
          cpu_only: float = OPENB_CPU_ONLY, shared: float = OPENB_SHARED,
          multi: float = OPENB_MULTI, gpu_spec: float = 0.0, cpu_nodes: float = 0.0,
          name: str | None = None) -> Instance:
    """An openb-shaped GPU-sharing instance (Alibaba cluster-trace-gpu-v2023).

    Nodes follow the shape mix of the trace's GPU nodes (2-8 GPUs of P100, T4,
    V100M16/M32, G2, G3, A10; 8-128 cores), pods its request mix: CPU-only pods,
    single-GPU pods sharing a GPU (``gpu_milli`` < 1000), whole-GPU pods (some
    CPU-heavy: up to 24 cores per GPU) and multi-GPU pods on one node; each pod
    class drawn from its most common request shapes with the trace's
    frequencies.  Every pod fits some node.

    Parameters
    ----------
    seed : int
        Seed of the node order and the pod draws.
    gpus : int
        About this many GPUs (6000 and 60000 for the 6k and 60k variants; the
        trace has 6212 on 1213 nodes).
    pods_per_gpu : float
        Pods per GPU (trace: 8152 / 6212, a GPU demand of about 98 % of
        capacity).
    cpu_only, shared, multi : float
        Fractions of pods that are CPU-only, share one GPU, and take several
        whole GPUs (trace: 0.133, 0.378, 0.009); the rest take one whole GPU.
    gpu_spec : float
        Fraction of GPU pods restricted to one GPU type (the trace's gpuspec
        variants: 0.05-0.33; default 0).
    cpu_nodes : float
        Fraction of nodes that are CPU-only (the full openb node list: about
        0.2; default 0, the GPU nodes as in the FGD experiment).
    name : str, optional
        Instance name (default ``openb-<GPUs>g-s<seed>``).

    Returns
    -------
    Instance
        Servers ``node-...`` and jobs ``pod-...``; no models.
    """
    _check_seed(seed)
    params = {"gpus": gpus, "pods_per_gpu": pods_per_gpu, "cpu_only": cpu_only,
              "shared": shared, "multi": multi, "gpu_spec": gpu_spec, "cpu_nodes": cpu_nodes}
    check_params("openb", dict(params, name=name))
    if cpu_only + shared + multi > 1.0 + 1e-9:
        raise InputError(f"generator 'openb': cpu_only + shared + multi: expected at most 1, "
                         f"got {cpu_only + shared + multi:g}")
    rng = random.Random(seed)
    servers = openb_servers(rng, gpus, cpu_nodes)
    total = sum(s.gpus for s in servers)
    tables = _pod_tables(servers)
    by_type: dict[str | None, list[Server]] = {}
    for s in servers:
        if s.gpus:
            by_type.setdefault(s.gpu_type, []).append(s)
    shares = {"cpu": cpu_only, "shared": shared, "multi": multi,
              "whole": max(0.0, 1.0 - cpu_only - shared - multi)}
    classes = [c for c in shares if c in tables and shares[c] > 0]
    cum = list(accumulate(shares[c] for c in classes))
    n = int(round(pods_per_gpu * total))
    w = _width(n, 5)
    jobs = []
    for i in range(n):
        cls = rng.choices(classes, cum_weights=cum)[0]
        rows, rcum = tables[cls]
        pod = rng.choices(rows, cum_weights=rcum)[0]
        k, milli, c, m, _ = pod
        types = _pod_type(rng, by_type, pod) if k and gpu_spec and rng.random() < gpu_spec \
            else ()
        jobs.append(Job(f"pod-{i:0{w}d}", gpus=k, gpu_milli=milli, cpu=c, mem=m,
                        gpu_types=types, locality="server" if k > 1 else None))
    desc = (f"openb-shaped: {len(servers)} nodes, {total} GPUs, {n} pods (CPU-only, shared, "
            f"whole and multi-GPU pods with the trace's frequencies)")
    return Instance(name or f"openb-{total}g-s{seed}", Cluster(tuple(servers)), tuple(jobs),
                    meta=_meta("openb", seed, params, desc))


#: Generators by name.
GENERATORS: dict[str, Callable[..., Instance]] = {
    "synergy": synergy, "hetero": hetero, "live": live, "openb": openb}


def get_generator(name: str) -> Callable[..., Instance]:
    """The generator called ``name``.

    Parameters
    ----------
    name : str
        One of `GENERATORS`.

    Returns
    -------
    callable
        ``f(seed, **params) -> Instance``.

    Raises
    ------
    InputError
        (a ``ValueError``) listing the valid names.
    """
    try:
        return GENERATORS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown generator {name!r}; valid generators: "
                         f"{', '.join(GENERATORS)}") from None


def generate(kind: str, seed: int, **params) -> Instance:
    """``get_generator(kind)(seed, **params)`` with the parameters checked first.

    Parameters
    ----------
    kind : str
        One of `GENERATORS`.
    seed : int
        The generator's seed (>= 0).
    **params
        The generator's parameters (``name`` sets the instance name).

    Returns
    -------
    Instance
    """
    check_params(kind, params)
    return get_generator(kind)(seed, **params)
